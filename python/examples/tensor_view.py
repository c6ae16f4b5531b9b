#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""A torch tensor (and a numpy array) over a region's pages, no copy.

usage: tensor_view.py [TIER]

Writes through a float16 tensor view of an unnamed region and reads the
bytes back with pread, then the other way round. Without PyTorch it says
so and exits 0 (numpy is used where it is installed).
"""

from __future__ import annotations

import importlib.util
import os
import sys

import kvtier

LAYERS, TOKENS, WIDTH = 4, 256, 1024     # a small KV block: 2 MiB fp16


def main(argv: list[str]) -> int:
    try:
        import torch
    except ImportError:
        print("tensor_view: PyTorch is not installed; nothing to show "
              "(Region.as_tensor needs it)")
        return 0
    tier_id = int(argv[0]) if argv else 0
    with kvtier.Tier(tier_id) as tier, \
            tier.create(LAYERS * TOKENS * WIDTH * 2) as region:
        kv = region.as_tensor(torch.float16, (LAYERS, TOKENS, WIDTH))
        kv[2, 7, :4] = torch.tensor([1.0, 2.0, 3.0, 4.0])
        off = ((2 * TOKENS) + 7) * WIDTH * 2
        back = torch.frombuffer(bytearray(region.pread(8, off)),
                                dtype=torch.float16)
        print(f"written through the tensor, read with pread: {back.tolist()}")
        region.pwrite(torch.full((WIDTH,), 0.5, dtype=torch.float16)
                      .numpy().tobytes(), 0)
        print(f"written with pwrite, seen by the tensor: "
              f"{kv[0, 0, :3].tolist()}")
        if importlib.util.find_spec("numpy"):
            arr = region.as_array("float16", (LAYERS, TOKENS, WIDTH))
            print(f"the same bytes as a numpy array: {arr[2, 7, :4]}")
            del arr
        del kv          # the tensor keeps its mapping until it is gone
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except kvtier.KvtierError as e:
        print(f"{os.path.basename(sys.argv[0])}: {e}", file=sys.stderr)
        sys.exit(1)
