#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Workloads on a kvtier.kvstore for the VM tests.

  fill     store COUNT seeded blocks
  verify   read them back: every hit must be its own bytes; --all: every
           key must hit
  crash    a random put/delete workload on a key universe, journalled to
           a file that survives the VM (tests/persist/run.sh kvstore
           kills the VM under it)
  recover  after a cut: every key's block is its own bytes or absent, and
           what the journals say was durable is there
  measure  the layout's costs: put, get, exists per block, kernel memory
           per region (the reasons for one region per block)

Blocks are seeded: key i is sha256("SEED:i"), its bytes shake_256(key).
Prints "ok - ..." / "not ok - ..." lines and "# ..." notes; exits 1 when
a check failed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import kvtier  # noqa: E402
from kvtier.kvstore import KVStore  # noqa: E402

failed = 0


def check(ok: bool, what: str) -> bool:
    """One TAP-style line; counts failures."""
    global failed
    print(("ok - " if ok else "not ok - ") + what, flush=True)
    failed += not ok
    return ok


def key_of(seed: int, i: int) -> bytes:
    return hashlib.sha256(f"{seed}:{i}".encode()).digest()


def block_of(key: bytes, n: int) -> bytes:
    return hashlib.shake_256(key).digest(n)


def store(args: argparse.Namespace) -> KVStore:
    return KVStore(args.tier, args.block, prefix=args.prefix)


def cmd_fill(args: argparse.Namespace) -> None:
    with store(args) as kv:
        keys = [key_of(args.seed, i) for i in range(args.count)]
        t = time.monotonic()
        done = kv.batch_put(keys, [block_of(k, args.block) for k in keys])
        dt = time.monotonic() - t
        check(all(done), f"fill: {args.count} blocks of {args.block} B stored "
              f"in {dt:.2f} s")


def cmd_verify(args: argparse.Namespace) -> None:
    with store(args) as kv:
        out = bytearray(args.block)
        hits = wrong = 0
        for i in range(args.count):
            k = key_of(args.seed, i)
            if kv.get(k, out):
                hits += 1
                wrong += out != block_of(k, args.block)
        check(not wrong, f"verify: {hits} of {args.count} keys hit, "
              f"{wrong} with wrong bytes")
        if args.all:
            check(hits == args.count, f"verify: every key of {args.count} hits")


def journal_lines(d: Path) -> list[list[str]]:
    """Every journal of every boot, in boot order."""
    out = []
    for f in sorted(d.glob("kvstore-journal-*"),
                    key=lambda p: int(p.name.rsplit("-", 1)[1])):
        out += [line.split() for line in f.read_text().splitlines() if line]
    return out


def cmd_recover(args: argparse.Namespace) -> None:
    """Check the store against the journals the cut boots left.

    A key's last finished operation decides what must be there: after a
    finished put (and no delete started since) the block is durable; after
    a finished delete (and no put started since) it is gone. Any other key
    may be either, but a hit is always its own bytes."""
    want: dict[int, bool | None] = {}
    for op, i in ((w[0], int(w[1])) for w in journal_lines(Path(args.state))):
        if op in ("put", "del"):
            want[i] = None
        elif op == "put-done":
            want[i] = True
        elif op == "del-done":
            want[i] = False
    with store(args) as kv:
        out = bytearray(args.block)
        wrong = lost = back = hits = 0
        for i in range(args.keys):
            k = key_of(args.seed, i)
            hit = kv.get(k, out)
            hits += hit
            if hit and out != block_of(k, args.block):
                wrong += 1
                print(f"# key {i}: another key's or torn bytes")
            if want.get(i) is True and not hit:
                lost += 1
                print(f"# key {i}: put finished, block missing")
            if want.get(i) is False and hit:
                back += 1
                print(f"# key {i}: delete finished, block back")
        durable = sum(1 for v in want.values() if v)
        check(not wrong, f"recover: {hits} of {args.keys} keys hit, none with "
              f"another key's or torn bytes ({wrong})")
        check(not lost, f"recover: every finished put is there ({durable} "
              f"expected, {lost} missing)")
        check(not back, f"recover: no finished delete came back ({back})")
        # The store goes on working after the cut: a full round.
        k = key_of(args.seed, args.keys + 1)
        kv.delete(k)
        kv.put(k, block_of(k, args.block))
        check(kv.get(k, out) and out == block_of(k, args.block),
              "recover: put and get work after the cut")
        kv.delete(k)


def cmd_crash(args: argparse.Namespace) -> None:
    """Random puts and deletes until killed (or --seconds pass)."""
    rng = random.Random(args.wseed)
    jpath = Path(args.state) / f"kvstore-journal-{args.boot}"
    with store(args) as kv, open(jpath, "a", buffering=1) as j:
        Path(args.state, f"started-{args.boot}").touch()
        end = time.monotonic() + args.seconds
        n = 0
        while time.monotonic() < end:
            batch = [rng.randrange(args.keys) for _ in range(rng.randint(1, 4))]
            batch = list(dict.fromkeys(batch))
            if rng.random() < 0.7:
                for i in batch:
                    j.write(f"put {i}\n")
                    os.fsync(j.fileno())
                keys = [key_of(args.seed, i) for i in batch]
                kv.batch_put(keys, [block_of(k, args.block) for k in keys])
                for i in batch:
                    j.write(f"put-done {i}\n")
            else:
                for i in batch:
                    j.write(f"del {i}\n")
                    os.fsync(j.fileno())
                    kv.delete(key_of(args.seed, i))
                    j.write(f"del-done {i}\n")
            os.fsync(j.fileno())
            n += 1
        print(f"# crash: {n} operations, not cut within {args.seconds} s")


def slab_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Slab:"):
            return int(line.split()[1])
    return 0


def cmd_measure(args: argparse.Namespace) -> None:
    """Per-block costs of the one-region-per-block layout."""
    with store(args) as kv:
        keys = [key_of(args.seed, i) for i in range(args.count)]
        blocks = [block_of(k, args.block) for k in keys]
        s0 = slab_kib()
        t = time.monotonic()
        for k, b in zip(keys, blocks):
            kv.put(k, b)
        t_put = time.monotonic() - t
        s1 = slab_kib()
        out = bytearray(args.block)
        t = time.monotonic()
        for k in keys:
            kv.get(k, out)
        t_get = time.monotonic() - t
        t = time.monotonic()
        for k in keys:
            kv.exists(k)
        t_exists = time.monotonic() - t
        t = time.monotonic()
        kv.batch_put([key_of(args.seed + 1, i) for i in range(args.count)],
                     blocks)
        t_batch = time.monotonic() - t
        n = args.count
        mib = n * args.block / 2**20
        print(f"# measure: {n} blocks of {args.block} B ({mib:.1f} MiB)")
        print(f"#   put        {1e3 * t_put / n:8.2f} ms/block "
              f"({mib / t_put:.1f} MiB/s, two fsyncs each)")
        print(f"#   batch_put  {1e3 * t_batch / n:8.2f} ms/block "
              f"({mib / t_batch:.1f} MiB/s)")
        print(f"#   get        {1e3 * t_get / n:8.2f} ms/block "
              f"({mib / t_get:.1f} MiB/s)")
        print(f"#   exists     {1e3 * t_exists / n:8.2f} ms/block")
        print(f"#   slab       {(s1 - s0) * 1024 / n:8.0f} B/region "
              f"(Slab: before {s0} KiB, after {s1} KiB)")
        for i in range(args.count):
            kv.delete(key_of(args.seed, i))
            kv.delete(key_of(args.seed + 1, i))
        check(not any(kv.exists(key_of(args.seed + j, i)) for i in range(args.count)
                      for j in (0, 1)), "measure: every block deleted")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tier", type=int, default=0)
    p.add_argument("--block", type=int, default=64 * 1024, help="bytes per block")
    p.add_argument("--prefix", default="kvs.")
    p.add_argument("--seed", type=int, default=1)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("fill", "verify", "measure"):
        s = sub.add_parser(name)
        s.add_argument("--count", type=int, default=64)
        if name == "verify":
            s.add_argument("--all", action="store_true")
    for name in ("crash", "recover"):
        s = sub.add_parser(name)
        s.add_argument("--state", required=True, help="directory of the journals")
        s.add_argument("--keys", type=int, default=48, help="the key universe")
        if name == "crash":
            s.add_argument("--boot", type=int, required=True)
            s.add_argument("--wseed", type=int, required=True)
            s.add_argument("--seconds", type=float, default=60)
    args = p.parse_args()
    {"fill": cmd_fill, "verify": cmd_verify, "crash": cmd_crash,
     "recover": cmd_recover, "measure": cmd_measure}[args.cmd](args)
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except kvtier.KvtierError as e:
        print(f"not ok - kvstore_tool: {e}", flush=True)
        sys.exit(1)
