#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The file-tier pattern of the inference engines on a kvtierfs mount.

SGLang's HiCache file backend, LMCache's local disk backend and vLLM's
file tiers keep each KV block as a file named by a hash: written under a
temporary name, renamed over the final one, read back whole, listed and
deleted. Here two writer processes race to store the same blocks (each
its own bytes for a key), while a reader reads whatever final files
exist. Every file read must be one writer's whole block, never a mix,
never another key's bytes; at the end each key is a whole block of one of
the writers, nothing temporary is left, and deleting empties the
directory.

usage: kvtierfs_engine.py DIR COUNT
Exit status 0 when every check held; 1 with a line saying which did not.
"""

import hashlib
import multiprocessing
import os
import struct
import sys
from typing import List

MAGIC = b"KVBLK001"
HEADER = struct.Struct("<8sII")  # magic, writer, payload length


def keys(count: int) -> List[str]:
    """Hash names as the engines make them, cut to kvtierfs's 63 bytes."""
    return [hashlib.sha256(f"prefix-{i}".encode()).hexdigest()[:40]
            for i in range(count)]


def payload(key: str, writer: int) -> bytes:
    """A block's bytes: sizes from 1 to 17 pages plus an odd tail."""
    size = 4096 * (1 + int(key[:2], 16) % 17) + int(key[2:4], 16) * 3 + 1
    seed = hashlib.sha256(f"{key}/{writer}".encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def check(key: str, data: bytes) -> str:
    """'' if @data is one writer's whole block of @key, else what is wrong."""
    if len(data) < HEADER.size:
        return f"{key}: {len(data)} bytes, shorter than a header"
    magic, writer, length = HEADER.unpack_from(data)
    if magic != MAGIC or writer not in (0, 1):
        return f"{key}: not a block header"
    body = data[HEADER.size:]
    if len(body) != length or body != payload(key, writer):
        return f"{key}: {len(body)} bytes that are not writer {writer}'s block"
    return ""


def put(dirpath: str, key: str, writer: int) -> None:
    """Write @key's block under a temporary name, fsync, rename it over."""
    body = payload(key, writer)
    tmp = os.path.join(dirpath, f"{key}.{writer}.tmp")
    with open(tmp, "wb") as f:
        f.write(HEADER.pack(MAGIC, writer, len(body)) + body)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, os.path.join(dirpath, key))


def writer_main(dirpath: str, names: List[str], writer: int) -> None:
    order = names if writer == 0 else list(reversed(names))
    for key in order:
        put(dirpath, key, writer)


def reader_main(dirpath: str, names: List[str], stop, errors) -> None:
    """Read every final file that exists, again and again, until @stop."""
    while not stop.is_set():
        for key in names:
            try:
                with open(os.path.join(dirpath, key), "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            why = check(key, data)
            if why:
                errors.put("read while racing: " + why)
                return


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    dirpath, count = sys.argv[1], int(sys.argv[2])
    names = keys(count)
    stop = multiprocessing.Event()
    errors: "multiprocessing.Queue[str]" = multiprocessing.Queue()
    reader = multiprocessing.Process(target=reader_main,
                                     args=(dirpath, names, stop, errors))
    writers = [multiprocessing.Process(target=writer_main,
                                       args=(dirpath, names, w))
               for w in (0, 1)]
    reader.start()
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    stop.set()
    reader.join()
    failed = [w.exitcode for w in writers if w.exitcode]
    if failed:
        print(f"not ok: a writer exited with {failed}")
        return 1
    if not errors.empty():
        print("not ok: " + errors.get())
        return 1
    for key in names:
        with open(os.path.join(dirpath, key), "rb") as f:
            why = check(key, f.read())
        if why:
            print("not ok: after the race: " + why)
            return 1
    listed = sorted(os.listdir(dirpath))
    if listed != sorted(names):
        extra = sorted(set(listed) - set(names))[:3]
        print(f"not ok: listing has {len(listed)} names, want {count}: {extra}")
        return 1
    for key in names:
        os.unlink(os.path.join(dirpath, key))
    if os.listdir(dirpath):
        print("not ok: names left after deleting every block")
        return 1
    print(f"ok: {count} blocks, two writers racing, every read whole")
    return 0


if __name__ == "__main__":
    sys.exit(main())
