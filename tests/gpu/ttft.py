#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Time to first token on a GPU: recompute a prompt, or restore its KV.

tests/gpu/run.sh runs this on a machine with an NVIDIA GPU (issue #20,
part 4): kvtier.llama's decoder at Llama-3.1-8B's shape (32 layers, 32
heads, 8 KV heads, head dim 128, hidden 4096, ffn 14336, fp16; seeded
random weights: no weights can be downloaded), for prompts of 8K and 16K
tokens. For each prompt length N:

  recompute  prefill the prompt plus a 32-token suffix from scratch, in
             chunks of --chunk tokens (2048, as an engine's chunked
             prefill), to the first token (argmax of the last row); the
             best of --repeat runs after a warm-up
  restore    the prompt's KV blocks (16 tokens each, 128 KiB at this
             shape) wait in pinned host memory, where an offload tier
             leaves them; copy them into an empty GPU cache one block per
             copy on a low-priority stream (what libkvtier's
             KVTIER_XFER_CUDA restore does after its pread), then prefill
             only the suffix; best of --repeat
  check      the restored path's first-token logits and the recompute's
             are equal bit for bit (the suffix chunk starts at N in both,
             N is a multiple of --chunk, so both do the same arithmetic on
             the same KV bytes; deterministic algorithms are on), and one
             changed KV value changes them (the control)

Where a tier with an attached namespace is present (/dev/kvtier0; the
module cannot load on the lent GPU machines), the blocks are also stored
in a region and restored through kvtier.Xfer(cuda=True), the whole
offload path, and that time is printed too.

Prints one line per measurement and a table; exit 0 when every check
passed, 1 when one failed, 4 without a CUDA device (--device cpu runs the
same steps on the CPU at --shape tiny/small, to test this script where
there is no GPU).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

# Deterministic cuBLAS: set before torch initialises CUDA.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import torch  # noqa: E402

from kvtier import llama  # noqa: E402

SHAPES: dict[str, Callable[..., llama.LlamaConfig]] = {
    "llama31_8b": llama.llama31_8b, "small": llama.small, "tiny": llama.tiny}
SUFFIX = 32


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def best(repeat: int, dev: torch.device,
         fn: Callable[[], torch.Tensor]) -> tuple[float, torch.Tensor]:
    """The shortest of ``repeat`` timed runs of ``fn`` and its last result."""
    times, out = [], torch.empty(0)
    for _ in range(repeat):
        sync(dev)
        t0 = time.perf_counter()
        out = fn()
        sync(dev)
        times.append(time.perf_counter() - t0)
    return min(times), out


def pinned_blocks(cache: llama.PagedKVCache, n: int,
                  pin: bool) -> list[torch.Tensor]:
    """Copies of the cache's first ``n`` blocks in (pinned) host memory."""
    out = []
    for i in range(n):
        host = torch.empty(cache.blocks[i].shape, dtype=cache.blocks[i].dtype,
                           pin_memory=pin)
        host.copy_(cache.blocks[i])
        out.append(host)
    return out


def restore_copy(model: llama.Llama, blocks: list[torch.Tensor],
                 stream: torch.cuda.Stream | None) -> llama.PagedKVCache:
    """An empty cache with ``blocks`` copied in, one copy per block."""
    cache = model.new_cache()
    cache._reserve(len(blocks) * model.config.block_tokens)
    if stream is None:
        for dst, src in zip(cache.blocks, blocks):
            dst.copy_(src)
    else:
        with torch.cuda.stream(stream):
            for dst, src in zip(cache.blocks, blocks):
                dst.copy_(src, non_blocking=True)
        stream.synchronize()  # type: ignore[no-untyped-call]
    cache.commit(len(blocks) * model.config.block_tokens)
    return cache


def restore_xfer(model: llama.Llama, cache: llama.PagedKVCache,
                 nblocks: int) -> float | None:
    """Store the blocks in a region of /dev/kvtier0 and time their restore
    into a new GPU cache through kvtier.Xfer(cuda=True); None without an
    attached tier or off a GPU."""
    state = Path("/sys/class/kvtier/kvtier0/state")
    if model.device.type != "cuda" or not state.exists() or "attached" not in state.read_text():
        return None
    import kvtier

    bb = llama.block_bytes(model.config)
    with kvtier.Tier(0) as tier, \
            tier.create(nblocks * bb) as region, \
            kvtier.Xfer(region, bb, cuda=True) as xfer:
        xfer.wait(xfer.store([b.data_ptr() for b in cache.blocks[:nblocks]],
                             [i * bb for i in range(nblocks)]))
        region.fsync()
        dst = model.new_cache()
        dst._reserve(nblocks * model.config.block_tokens)
        sync(model.device)
        t0 = time.perf_counter()
        xfer.wait(xfer.restore([b.data_ptr() for b in dst.blocks],
                               [i * bb for i in range(nblocks)]))
        sync(model.device)
        return time.perf_counter() - t0


def run_one(model: llama.Llama, n: int, args: argparse.Namespace,
            stream: torch.cuda.Stream | None) -> tuple[bool, str]:
    """Measure and check one prompt length; returns (ok, table row)."""
    c, dev = model.config, model.device
    gen = torch.Generator().manual_seed(n)
    full = torch.randint(0, c.vocab, (n + SUFFIX,), generator=gen).tolist()
    nblocks = n // c.block_tokens

    kept: list[llama.PagedKVCache] = []

    def recompute() -> torch.Tensor:
        kept[:] = [model.new_cache()]
        return model.prefill(full, kept[0], last_only=True,
                             chunk_tokens=args.chunk)

    t_rec, ref = best(args.repeat, dev, recompute)
    ref_cache = kept.pop()
    blocks = pinned_blocks(ref_cache, nblocks, dev.type == "cuda")

    def copy_only() -> torch.Tensor:
        restore_copy(model, blocks, stream)
        return torch.empty(0)

    def restore() -> torch.Tensor:
        cache = restore_copy(model, blocks, stream)
        return model.prefill(full[n:], cache, last_only=True,
                             chunk_tokens=args.chunk)

    t_copy, _ = best(args.repeat, dev, copy_only)
    t_res, last = best(args.repeat, dev, restore)
    same = torch.equal(last, ref)
    bad = restore_copy(model, blocks, stream)
    bad.blocks[-1].view(-1)[0] += 1
    changed = not torch.equal(
        model.prefill(full[n:], bad, last_only=True, chunk_tokens=args.chunk),
        ref)
    kv = nblocks * llama.block_bytes(c)
    t_xfer = restore_xfer(model, ref_cache, nblocks)
    print(f"{'ok' if same else 'not ok'} - N={n}: restored first-token "
          f"logits equal the recompute's bit for bit"
          + ("" if same else f" (max diff "
             f"{(last - ref).abs().max().item():.3g}, first token "
             f"{int(last.argmax())} vs {int(ref.argmax())})"))
    print(f"{'ok' if changed else 'not ok'} - N={n}: control: one changed "
          f"KV value changes the logits")
    print(f"# N={n}: recompute {t_rec:.3f} s ({(n + SUFFIX) / t_rec:,.0f} "
          f"tokens/s); restore {t_res:.3f} s = copy {t_copy:.3f} s of "
          f"{kv / 2**20:.1f} MiB ({kv / t_copy / 1e9:.1f} GB/s) + "
          f"{SUFFIX}-token prefill; {t_rec / t_res:.1f}x"
          + ("" if t_xfer is None else
             f"; through a tier (kvtier.Xfer) {t_xfer:.3f} s "
             f"({kv / t_xfer / 1e9:.2f} GB/s)"), flush=True)
    row = (f"{n:>6} {kv / 2**20:>9.1f} {t_rec:>11.3f} {t_copy:>9.3f} "
           f"{kv / t_copy / 1e9:>7.1f} {t_res:>10.3f} {t_rec / t_res:>7.1f}x"
           f" {'-' if t_xfer is None else f'{t_xfer:.3f}':>10}")
    return same and changed, row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="llama31_8b")
    ap.add_argument("--tokens", default="8192,16384",
                    help="prompt lengths, multiples of --chunk")
    ap.add_argument("--chunk", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    lens = [int(x) for x in args.tokens.split(",")]
    if args.chunk <= 0 or args.repeat <= 0 or \
            any(n <= 0 or n % args.chunk for n in lens):
        ap.error("prompt lengths must be positive multiples of --chunk")
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("# no CUDA device: nothing to measure")
        return 4
    torch.use_deterministic_algorithms(True)  # type: ignore[no-untyped-call]
    cfg = SHAPES[args.shape]()
    if dev.type != "cuda" and cfg.dtype == torch.float16:
        cfg = SHAPES[args.shape](dtype=torch.bfloat16)
    t0 = time.perf_counter()
    model = llama.Llama(cfg, seed=0, device=dev)
    sync(dev)
    params = sum(p.numel() for p in model.parameters())
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    print(f"# {name}, torch {torch.__version__}: {args.shape} "
          f"({params / 1e9:.2f} G parameters, {cfg.dtype}, "
          f"{llama.block_bytes(cfg) >> 10} KiB per 16-token block) built in "
          f"{time.perf_counter() - t0:.1f} s; chunk {args.chunk}, best of "
          f"{args.repeat}", flush=True)
    stream = None
    if dev.type == "cuda":
        # The offload API's copies run on the lowest-priority stream;
        # CUDA's lowest priority is 0 (greater numbers are lower).
        stream = torch.cuda.Stream(  # type: ignore[no-untyped-call]
            dev, priority=0)
    # Warm-up: kernels, allocator and cuBLAS handles.
    model.prefill(list(range(args.chunk)), model.new_cache(),
                  last_only=True, chunk_tokens=args.chunk)
    sync(dev)
    rows, ok = [], True
    for n in lens:
        good, row = run_one(model, n, args, stream)
        ok &= good
        rows.append(row)
    print(f"{'tokens':>6} {'KV MiB':>9} {'recompute':>11} {'copy s':>9} "
          f"{'GB/s':>7} {'restore s':>10} {'ratio':>8} {'xfer s':>10}")
    print("\n".join(rows))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
