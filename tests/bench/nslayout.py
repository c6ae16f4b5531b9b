#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Where things are on a kvtier namespace, for the benchmarks' fio rows.

  nslayout.py --find SERIAL
      the namespace (/dev/nvmeXnY) of the NVMe controller with that
      serial (the rig names them kvt0, kvt1, ...)
  nslayout.py --region DEV NAME
  nslayout.py --prefix DEV PREFIX
      the data slots of region NAME, or of every region whose name starts
      with PREFIX, from the newest valid superblock copy and the
      checkpoint it names (include/uapi/linux/kvtier_format.h, format
      versions 1 to 5): "OFFSET NR_PAGES LO HI WHAT", OFFSET the byte offset of
      the lowest slot, LO..HI the slot range, WHAT genG (or no-superblock,
      no-region with OFFSET the data area's start and NR_PAGES 0)

Reads the namespace with O_DIRECT (dd iflag=direct): run it while the
module is unloaded, or after a commit, to see what is on the medium.
"""

from __future__ import annotations

import glob
import os
import struct
import subprocess
import sys
from collections.abc import Callable

SB_MAGIC = 0x3152454954564b00
BLOCK = 4096
REGION_REC, PAGE_REC, CKPT_HDR = 128, 16, 64


def find(serial: str) -> str | None:
    for ctrl in sorted(glob.glob("/sys/class/nvme/nvme*")):
        try:
            with open(os.path.join(ctrl, "serial")) as f:
                if f.read().strip() != serial:
                    continue
        except OSError:
            continue
        for ns in sorted(glob.glob(os.path.join(ctrl, "nvme*n1"))):
            return "/dev/" + os.path.basename(ns)
    return None


def read_blocks(dev: str, block: int, count: int) -> bytes:
    return subprocess.run(["dd", "if=" + dev, "iflag=direct", f"bs={BLOCK}",
                           f"skip={block}", f"count={count}", "status=none"],
                          check=True, capture_output=True).stdout


def slots(dev: str, match: Callable[[bytes], bool]) -> str:
    best: tuple[int, int, int, int, int, int, int] | None = None
    for b in (0, 1):
        s = read_blocks(dev, b, 1)
        if struct.unpack_from("<Q", s, 0)[0] != SB_MAGIC:
            continue
        version, = struct.unpack_from("<I", s, 8)
        meta_start, meta_blocks, data_start = struct.unpack_from("<QQQ", s, 80)
        gen, = struct.unpack_from("<Q", s, 120)
        ckpt_bytes, = struct.unpack_from("<Q", s, 136)
        if best is None or gen > best[0]:
            best = (gen, meta_start, meta_blocks, data_start, ckpt_bytes, b,
                    version)
    if best is None:
        return "0 0 - - no-superblock"
    # Checkpoint area b goes with superblock copy b (format v1 to v4); the
    # tier is detached, so a journal is empty. Version 3 has extent
    # records (slot, index, len) where the others have page records;
    # version 4 a region's CRC run records after them (skipped here).
    gen, meta_start, meta_blocks, data_start, ckpt_bytes, copy, version = best
    c = read_blocks(dev, meta_start + copy * meta_blocks,
                    (ckpt_bytes + BLOCK - 1) // BLOCK)
    nr_regions, _ = struct.unpack_from("<QQ", c, 16)
    pos, found = CKPT_HDR + REGION_REC * nr_regions, list[int]()
    for i in range(nr_regions):
        r = c[CKPT_HDR + REGION_REC * i:CKPT_HDR + REGION_REC * (i + 1)]
        n, = struct.unpack_from("<Q", r, 112 if version >= 3 else 72)
        runs, = struct.unpack_from("<I", r, 124) if version >= 4 else (0,)
        if match(r[:64].rstrip(b"\0")):
            for slot, _, length in struct.iter_unpack(
                    "<QII", c[pos:pos + PAGE_REC * n]):
                found += range(slot, slot + length) if version >= 3 else [slot]
        pos += PAGE_REC * (n + runs)
    if not found:
        return f"{data_start * BLOCK} 0 - - no-region"
    lo, hi = min(found), max(found)
    return f"{(data_start + lo) * BLOCK} {len(found)} {lo} {hi} gen{gen}"


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--find":
        dev = find(argv[1])
        if dev:
            print(dev)
        return 0 if dev else 1
    if len(argv) == 3 and argv[0] in ("--region", "--prefix"):
        want = argv[2].encode()
        if argv[0] == "--region":
            print(slots(argv[1], lambda name: name == want))
        else:
            print(slots(argv[1], lambda name: name.startswith(want)))
        return 0
    sys.stderr.write(__doc__ or "")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
