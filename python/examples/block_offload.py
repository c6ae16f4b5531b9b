#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Offload KV blocks to a persistent region and restore them (kvtier.Xfer).

usage: block_offload.py [TIER]

Stores 32 blocks of 256 KiB from host buffers asynchronously, syncs, then
restores them into fresh buffers from a second handle of the region, as
another process (or the same one after a reboot) would.
"""

from __future__ import annotations

import os
import random
import sys
import time

import kvtier

NAME = "example:blocks"
BLOCK = 256 << 10
N = 32


def main(argv: list[str]) -> int:
    tier_id = int(argv[0]) if argv else 0
    rng = random.Random(20)
    blocks = [rng.randbytes(BLOCK) for _ in range(N)]
    offsets = [i * BLOCK for i in range(N)]
    with kvtier.Tier(tier_id) as tier:
        with tier.open(NAME, N * BLOCK, create=True, persistent=True) as r, \
                kvtier.Xfer(r, BLOCK) as xfer:
            t0 = time.monotonic()
            ticket = xfer.store(blocks, offsets)    # returns at once
            xfer.wait(ticket)
            r.fsync()
            dt = time.monotonic() - t0
            print(f"stored {N} blocks ({N * BLOCK >> 20} MiB) in "
                  f"{dt * 1000:.1f} ms, synced")
        with tier.open(NAME, persistent=True, readonly=True) as r, \
                kvtier.Xfer(r, BLOCK) as xfer:
            r.cold()
            back = [bytearray(BLOCK) for _ in range(N)]
            ticket = xfer.restore(back, offsets)
            while not xfer.poll(ticket):            # or xfer.wait(ticket)
                time.sleep(0.0005)
            same = all(b == d for b, d in zip(back, blocks))
            print(f"restored {N} blocks from the namespace: "
                  f"{'identical' if same else 'DIFFERENT'}")
        tier.unlink(NAME)
    return 0 if same else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except kvtier.KvtierError as e:
        print(f"{os.path.basename(sys.argv[0])}: {e}", file=sys.stderr)
        sys.exit(1)
