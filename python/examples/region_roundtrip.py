#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Write a persistent region, close it, open it again and read it back.

usage: region_roundtrip.py [TIER] [--keep]

Needs the kvtier module with a namespace attached to TIER (default 0),
and the right to open /dev/kvtierTIER (root or the kvtier group). With
--keep the region stays (kvtierctl persist ls shows it; run again to read
it back after a reboot); otherwise it is unlinked at the end.
"""

from __future__ import annotations

import hashlib
import os
import sys

import kvtier

NAME = "example:roundtrip"
SIZE = 8 << 20


def main(argv: list[str]) -> int:
    keep = "--keep" in argv
    args = [a for a in argv if a != "--keep"]
    tier_id = int(args[0]) if args else 0
    data = hashlib.shake_256(b"kvtier example").digest(SIZE)

    with kvtier.Tier(tier_id) as tier:
        try:
            region = tier.open(NAME, SIZE, create=True, exclusive=True,
                               persistent=True)
        except FileExistsError:
            print(f"{NAME} exists already: reading it back")
        else:
            with region:
                region.pwrite(data, 0)      # straight from `data`: no copy
                region.fsync()              # durable on the namespace
                print(f"wrote {SIZE} bytes to {NAME} and synced them")

        with tier.open(NAME, persistent=True, readonly=True) as region:
            region.cold()       # drop it from host memory: the read below
            buf = bytearray(SIZE)           # comes from the namespace
            n = region.readinto(buf, 0)
            info = region.info()
            print(f"read back {n} bytes: "
                  f"{'identical' if buf == data else 'DIFFERENT'}; "
                  f"{info.resident} resident, {info.namespace} on the "
                  f"namespace, persistent={info.is_persistent}")
            with region.map() as m:         # read-only, as the region
                print(f"first bytes through a mapping: {m[:8].hex()}")
        if not keep:
            tier.unlink(NAME)
    return 0 if buf == data else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except kvtier.KvtierError as e:
        print(f"{os.path.basename(sys.argv[0])}: {e}", file=sys.stderr)
        sys.exit(1)
