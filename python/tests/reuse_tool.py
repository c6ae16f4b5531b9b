#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Prefix KV reuse through a kvtier.kvstore, for the VM tests and bench.

  store    process 1: prefill a seeded N-token prompt with kvtier.llama,
           put its full KV blocks into the store under the prompt's
           prefix hash chain (block_keys), exit
  restore  process 2 (after a module reload or a reboot): the same prompt
           plus a seeded suffix; find the longest stored prefix, restore
           those blocks, prefill only the rest, decode M tokens; then the
           full recompute of prompt + suffix in the same process. Checks
           that the restored path's logits (last prefill row and every
           decode step) and tokens are equal bit for bit (torch.equal) to
           the recompute's, that every full block of the prompt was hit,
           and, as the control that shows the comparison can fail, that
           one changed value in a restored block changes the logits.
           Prints the times to first token; --csv appends them as a row;
           --clear deletes the blocks afterwards.

The model, its weights (seeded), the prompt (seeded) and the hash chain's
salt (the model's name and seed) are the same in both processes, so the
keys match. Prints "ok - ..." / "not ok - ..." lines and "# ..." notes;
exits 1 when a check failed, 4 when PyTorch cannot be imported.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

try:
    import torch  # noqa: E402
except ImportError as e:
    # The VM test skips on this status (kselftest's KSFT_SKIP) instead of
    # spending a separate interpreter and import on the question.
    print(f"# SKIP: PyTorch is not importable (python3-torch): {e}")
    sys.exit(4)

import kvtier  # noqa: E402
from kvtier import llama  # noqa: E402
from kvtier.kvstore import KVStore  # noqa: E402

MODELS = {"tiny": llama.tiny, "small": llama.small}
CSV_HEADER = ("model,tokens,suffix,decode,blocks,kv_bytes,read_bytes,"
              "restore_s,suffix_prefill_s,ttft_restore_s,ttft_recompute_s,"
              "speedup,prefill_tokens_per_s,store_s")

failed = 0


def check(ok: bool, what: str) -> bool:
    """One TAP-style line; counts failures."""
    global failed
    print(("ok - " if ok else "not ok - ") + what, flush=True)
    failed += not ok
    return ok


def note(what: str) -> None:
    print(f"# {what}", flush=True)


def seeded_tokens(seed: int, n: int, vocab: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(vocab) for _ in range(n)]


def setup(args: argparse.Namespace) -> tuple[llama.Llama, list[int], bytes]:
    """The model, the prompt and the hash chain's salt of these flags."""
    model = llama.Llama(MODELS[args.model](), seed=args.seed)
    prompt = seeded_tokens(args.seed, args.tokens, model.config.vocab)
    return model, prompt, f"{args.model}:{args.seed}".encode()


def store(args: argparse.Namespace, model: llama.Llama) -> KVStore:
    return KVStore(args.tier, llama.block_bytes(model.config),
                   prefix=args.prefix)


def read_bytes(tier: int) -> int:
    return kvtier.stats(tier)["read_bytes"]


def cmd_store(args: argparse.Namespace) -> None:
    model, prompt, salt = setup(args)
    bt = model.config.block_tokens
    cache = model.new_cache()
    t = time.monotonic()
    model.prefill(prompt, cache, last_only=True)
    prefill_s = time.monotonic() - t
    keys = llama.block_keys(prompt, bt, salt)
    with store(args, model) as kv:
        t = time.monotonic()
        n = llama.store_blocks(kv, cache, keys)
        store_s = time.monotonic() - t
        region_bytes = kv.region_bytes
    check(n == len(keys) == args.tokens // bt,
          f"store: {args.model} prompt of {args.tokens} tokens prefilled in "
          f"{prefill_s:.2f} s; {n} of {len(keys)} blocks of "
          f"{llama.block_bytes(model.config)} B stored in {store_s:.2f} s")
    if args.csv:
        Path(args.csv).write_text(f"{store_s:.4f} {region_bytes}\n")


def cmd_restore(args: argparse.Namespace) -> None:
    model, prompt, salt = setup(args)
    c = model.config
    suffix = seeded_tokens(args.seed + 1, args.suffix, c.vocab)
    full = prompt + suffix
    keys = llama.block_keys(full, c.block_tokens, salt)
    want = args.tokens // c.block_tokens

    with store(args, model) as kv:
        # Restore: lookup + read + import, then the rest; the first token
        # is the argmax of the last prefill row.
        before = read_bytes(args.tier)
        t0 = time.monotonic()
        cache = model.new_cache()
        hits = llama.restore_prefix(kv, cache, keys)
        restore_s = time.monotonic() - t0
        moved = read_bytes(args.tier) - before
        last = model.prefill(full[cache.length:], cache, last_only=True)
        first = int(torch.argmax(last).item())
        ttft_restore = time.monotonic() - t0
        suffix_s = ttft_restore - restore_s
        toks, dec = model.decode(cache, args.decode, first)
        # The control: the same restore with one K value of the last
        # restored block changed must not give the same logits.
        bad = model.new_cache()
        llama.restore_prefix(kv, bad, keys)
        if args.clear:
            gone = sum(kv.delete(k) for k in keys)
            note(f"clear: {gone} blocks deleted")
    bad_last = last
    if bad.full_blocks:
        bad.blocks[-1].view(-1)[0] += 1
        bad_last = model.prefill(full[bad.length:], bad, last_only=True)

    # The full recompute, in the same process.
    t0 = time.monotonic()
    ref = model.new_cache()
    ref_last = model.prefill(full, ref, last_only=True)
    ttft_recompute = time.monotonic() - t0
    ref_toks, ref_dec = model.decode(ref, args.decode,
                                     int(torch.argmax(ref_last).item()))

    kv_bytes = hits * llama.block_bytes(c)
    check(hits == want, f"restore: {hits} of {want} prompt blocks found "
          f"({len(keys)} keys of prompt + suffix), {kv_bytes} B of KV, "
          f"{moved} B read from the namespace")
    check(torch.equal(last, ref_last),
          f"restore: the first token's logits equal the recompute's "
          f"({hits * c.block_tokens} restored + "
          f"{len(full) - hits * c.block_tokens} prefilled tokens)")
    check(toks == ref_toks and torch.equal(dec, ref_dec),
          f"restore: {args.decode} decoded tokens and their logits equal "
          f"the recompute's")
    check(bool(bad.full_blocks) and not torch.equal(bad_last, ref_last),
          "control: one changed value in a restored block changes the "
          "logits")
    speedup = ttft_recompute / ttft_restore if ttft_restore else 0.0
    note(f"ttft: restore {ttft_restore:.3f} s (lookup and read "
         f"{restore_s:.3f} s, {len(full) - hits * c.block_tokens} + "
         f"{args.decode} tokens computed) vs recompute {ttft_recompute:.3f} s: "
         f"{speedup:.2f}x")
    if args.csv:
        store_s = ""
        if args.store_time and os.path.exists(args.store_time):
            store_s = Path(args.store_time).read_text().split()[0]
        row = [args.model, args.tokens, args.suffix, args.decode, hits,
               kv_bytes, moved, f"{restore_s:.4f}", f"{suffix_s:.4f}",
               f"{ttft_restore:.4f}", f"{ttft_recompute:.4f}",
               f"{speedup:.2f}", f"{len(full) / ttft_recompute:.1f}",
               store_s]
        new = not os.path.exists(args.csv)
        with open(args.csv, "a") as f:
            if new:
                f.write(CSV_HEADER + "\n")
            f.write(",".join(map(str, row)) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tier", type=int, default=0)
    ap.add_argument("--model", choices=sorted(MODELS), default="tiny")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prefix", default="reuse.")
    ap.add_argument("--tokens", type=int, default=256,
                    help="prompt tokens (a multiple of 16 is restored whole)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("store")
    s.add_argument("--csv", help="write the store time (s) and the bytes "
                   "a block takes of the namespace to this file")
    r = sub.add_parser("restore")
    r.add_argument("--suffix", type=int, default=20)
    r.add_argument("--decode", type=int, default=8)
    r.add_argument("--csv", help="append a row (header first) to this file")
    r.add_argument("--store-time", help="the file store --csv wrote")
    r.add_argument("--clear", action="store_true",
                   help="delete the prompt's blocks afterwards")

    args = ap.parse_args()
    if args.tokens <= 0 or args.tokens % 16:
        ap.error("--tokens must be a positive multiple of 16")
    {"store": cmd_store, "restore": cmd_restore}[args.cmd](args)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
