# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvtier.llama: prefix-KV reuse is bit-identical to full prefill, KV blocks
round-trip through bytes, block_keys chains, GQA shapes, bad configs.

Host only (CPU); skips without PyTorch.
"""

from __future__ import annotations

import math
import random
import unittest
from collections.abc import Sequence
from typing import Any

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - depends on the host
    raise unittest.SkipTest(f"PyTorch is not importable: {e}")

from kvtier import llama

PROMPTS = (0, 15, 16, 37, 64)
DECODE = 8


def tokens(seed: int, n: int, vocab: int) -> list[int]:
    """``n`` seeded random token ids below ``vocab``."""
    rng = random.Random(seed)
    return [rng.randrange(vocab) for _ in range(n)]


def full_path(model: llama.Llama, prompt: list[int], suffix: list[int]
              ) -> tuple[torch.Tensor, list[int], torch.Tensor]:
    """(a): prefill prompt + suffix from scratch, then decode."""
    cache = model.new_cache()
    logits = model.prefill(prompt + suffix, cache)
    toks, dec = model.decode(cache, DECODE, int(torch.argmax(logits[-1])))
    return logits[len(prompt):], toks, dec


def reuse_path(model: llama.Llama, prompt: list[int], suffix: list[int]
               ) -> tuple[torch.Tensor, list[int], torch.Tensor]:
    """(b): prefill the prompt, export its full blocks, import them into a
    new cache, prefill the rest of the prompt and the suffix, decode."""
    first = model.new_cache()
    model.prefill(prompt, first)
    blobs = [bytes(first.export_block(i).numpy())
             for i in range(first.full_blocks)]
    cache = model.new_cache()
    for blob in blobs:
        cache.import_block(blob)
    done = cache.length
    logits = model.prefill(prompt[done:] + suffix, cache)
    toks, dec = model.decode(cache, DECODE, int(torch.argmax(logits[-1])))
    return logits[len(prompt) - done:], toks, dec


def reference(model: llama.Llama, ids: list[int]) -> torch.Tensor:
    """Whole-sequence logits the textbook way (K/V repeated per query head),
    to check the chunked model's maths (close, not equal)."""
    c = model.config
    n = len(ids)
    pos = torch.arange(n)
    x = model.embed[torch.tensor(ids)]
    causal = torch.ones(n, n, dtype=torch.bool).triu(1)
    for layer in model.layers:
        h = model._rms(x, layer.attn_norm)
        q = F.linear(h, layer.wq).view(n, c.heads, c.hd).transpose(0, 1)
        k = F.linear(h, layer.wk).view(n, c.kv_heads, c.hd).transpose(0, 1)
        v = F.linear(h, layer.wv).view(n, c.kv_heads, c.hd).transpose(0, 1)
        q, k = model._rope(q, pos), model._rope(k, pos)
        group = c.heads // c.kv_heads
        k, v = k.repeat_interleave(group, 0), v.repeat_interleave(group, 0)
        s = q @ k.transpose(1, 2) / math.sqrt(c.hd)
        s = s.masked_fill(causal, -math.inf)
        o = (torch.softmax(s, -1) @ v).transpose(0, 1).reshape(n, -1)
        x = x + F.linear(o, layer.wo)
        h = model._rms(x, layer.mlp_norm)
        gate = F.silu(F.linear(h, layer.w_gate))
        x = x + F.linear(gate * F.linear(h, layer.w_up), layer.w_down)
    return F.linear(model._rms(x, model.norm), model.lm_head)


class Reuse(unittest.TestCase):
    """(a) full prefill vs (b) imported prefix blocks + the rest: same bits."""

    def check(self, model: llama.Llama, plen: int, slen: int,
              seed: int) -> None:
        """(a) and (b) of a ``plen``-token prompt and ``slen``-token suffix."""
        vocab = model.config.vocab
        prompt = tokens(seed, plen, vocab)
        suffix = tokens(seed + 1000, slen, vocab)
        la, ta, da = full_path(model, prompt, suffix)
        lb, tb, db = reuse_path(model, prompt, suffix)
        self.assertEqual(la.shape, (slen, vocab))
        self.assertTrue(torch.equal(la, lb),
                        f"suffix logits differ ({plen}+{slen})")
        self.assertEqual(ta, tb)
        self.assertTrue(torch.equal(da, db),
                        f"decode logits differ ({plen}+{slen})")
        self.assertEqual(len(ta), DECODE)

    def test_prompts(self) -> None:
        model = llama.Llama(llama.tiny(), seed=7)
        for i, plen in enumerate(PROMPTS):
            for slen in (5, 13, 20):
                with self.subTest(prompt=plen, suffix=slen):
                    self.check(model, plen, slen, seed=i * 31 + slen)

    def test_tied_bf16(self) -> None:
        cfg = llama.tiny(tie_embeddings=True, dtype=torch.bfloat16)
        model = llama.Llama(cfg, seed=3)
        self.assertIs(model.lm_head, model.embed)
        for plen in (16, 37):
            with self.subTest(prompt=plen):
                self.check(model, plen, 11, seed=plen)

    def test_gqa_extremes(self) -> None:
        for kv in (4, 1):
            model = llama.Llama(llama.tiny(kv_heads=kv), seed=kv)
            with self.subTest(kv_heads=kv):
                self.check(model, 37, 9, seed=kv)
                ids = tokens(kv, 45, model.config.vocab)
                got = model.prefill(ids, model.new_cache())
                self.assertTrue(torch.allclose(got, reference(model, ids),
                                               atol=1e-4))

    def test_matches_reference(self) -> None:
        # heads * head_dim (32) != hidden (64)
        model = llama.Llama(llama.tiny(head_dim=8), seed=5)
        ids = tokens(5, 50, model.config.vocab)
        want = reference(model, ids)
        got = model.prefill(ids, model.new_cache())
        self.assertTrue(torch.allclose(got, want, atol=1e-4))
        last = model.prefill(ids, model.new_cache(), last_only=True)
        self.assertTrue(torch.allclose(last, want[-1], atol=1e-4))

    def test_chunk_tokens(self) -> None:
        # Engine-style chunks (across block boundaries, a partial last
        # chunk, one chunk for all) fill the same cache and match the
        # reference; the cache they leave decodes on.
        model = llama.Llama(llama.tiny(), seed=9)
        ids = tokens(9, 70, model.config.vocab)
        want = reference(model, ids)
        by_block = model.new_cache()
        model.prefill(ids, by_block)
        for chunk in (1, 24, 64, 70, 500):
            with self.subTest(chunk=chunk):
                cache = model.new_cache()
                got = model.prefill(ids, cache, chunk_tokens=chunk)
                self.assertEqual(got.shape, want.shape)
                self.assertTrue(torch.allclose(got, want, atol=1e-4))
                self.assertEqual(cache.length, 70)
                self.assertEqual(cache.full_blocks, 4)
                for i in range(4):
                    self.assertTrue(torch.allclose(
                        cache.export_block(i).view(model.config.dtype),
                        by_block.export_block(i).view(model.config.dtype),
                        atol=1e-5))
                last = model.prefill(ids, model.new_cache(), last_only=True,
                                     chunk_tokens=chunk)
                self.assertTrue(torch.allclose(last, want[-1], atol=1e-4))
        bads: tuple[Any, ...] = (0, -16, 2.5, True)
        for bad in bads:
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                model.prefill(ids, model.new_cache(), chunk_tokens=bad)

    def test_seeded(self) -> None:
        cfg = llama.tiny()
        a, b = llama.Llama(cfg, seed=1), llama.Llama(cfg, seed=1)
        c = llama.Llama(cfg, seed=2)
        self.assertTrue(torch.equal(a.layers[1].wq, b.layers[1].wq))
        self.assertFalse(torch.equal(a.layers[1].wq, c.layers[1].wq))


class Cache(unittest.TestCase):
    """PagedKVCache: blocks through bytes, truncation, errors."""

    def test_round_trip(self) -> None:
        cfg = llama.tiny()
        model = llama.Llama(cfg, seed=2)
        cache = model.new_cache()
        model.prefill(tokens(2, 40, cfg.vocab), cache)
        self.assertEqual((cache.length, cache.full_blocks), (40, 2))
        size = llama.block_bytes(cfg)
        self.assertEqual(size, 2 * 2 * 2 * 16 * 16 * 4)
        other = model.new_cache()
        for i in range(2):
            blob = cache.export_block(i)
            self.assertEqual((blob.dtype, blob.numel(), blob.device.type),
                             (torch.uint8, size, "cpu"))
            other.import_block(bytes(blob.numpy()) if i else blob)
            self.assertEqual(bytes(other.export_block(i).numpy()),
                             bytes(blob.numpy()))
            self.assertTrue(torch.equal(other.blocks[i], cache.blocks[i]))
        with self.assertRaises(IndexError):
            cache.export_block(2)                      # partial
        with self.assertRaises(ValueError):
            other.import_block(b"\0" * (size - 1))
        ka, va = cache.kv(1, 32)
        kb, vb = other.kv(1, 32)
        self.assertTrue(torch.equal(ka, kb) and torch.equal(va, vb))

    def test_truncate_append(self) -> None:
        cfg = llama.tiny()
        model = llama.Llama(cfg, seed=4)
        ids = tokens(4, 40, cfg.vocab)
        whole = model.prefill(ids, model.new_cache())
        cache = model.new_cache()
        model.prefill(ids[:35], cache)
        cache.truncate(20)
        self.assertEqual((cache.length, len(cache.blocks)), (20, 2))
        rest = model.prefill(ids[20:], cache)
        self.assertTrue(torch.equal(rest, whole[20:]))
        with self.assertRaises(ValueError):              # 40: inside block 2
            cache.import_block(cache.export_block(0))
        cache.truncate(32)
        cache.import_block(cache.export_block(0))         # onto the boundary
        self.assertEqual((cache.length, len(cache.blocks)), (48, 3))
        self.assertTrue(torch.equal(cache.blocks[2], cache.blocks[0]))
        cache.truncate(0)
        self.assertEqual((cache.length, cache.blocks), (0, []))
        k = torch.randn(cfg.layers, cfg.kv_heads, 3, cfg.hd)
        fresh = llama.PagedKVCache(cfg)
        fresh.append(k, -k)
        self.assertEqual(fresh.length, 3)
        self.assertTrue(torch.equal(fresh.kv(1, 3)[1], -k[1]))


class Keys(unittest.TestCase):
    """block_keys: a hash chain over full blocks."""

    def test_chain(self) -> None:
        ids = tokens(9, 16 * 5 + 7, 1000)
        keys = llama.block_keys(ids, 16)
        self.assertEqual(len(keys), 5)
        self.assertEqual(keys, llama.block_keys(torch.tensor(ids), 16))
        self.assertEqual(keys[:2], llama.block_keys(ids[:40], 16))
        for j in range(5):
            changed = list(ids)
            changed[16 * j + 3] += 1
            other = llama.block_keys(changed, 16)
            self.assertEqual(other[:j], keys[:j])
            self.assertTrue(all(a != b for a, b in zip(other[j:], keys[j:])))
        tail = list(ids)
        tail[-1] += 1                             # partial block: no key
        self.assertEqual(llama.block_keys(tail, 16), keys)
        self.assertNotEqual(llama.block_keys(ids, 16, salt=b"m")[0], keys[0])
        self.assertEqual(llama.block_keys(ids[:15], 16), [])

    def test_definition(self) -> None:
        import hashlib
        import struct
        ids = list(range(32))
        k0 = hashlib.sha256(b"s" + struct.pack("<16i", *ids[:16])).digest()
        packed = struct.pack("<16i", *ids[16:])
        k1 = hashlib.sha256(k0 + b"s" + packed).digest()
        self.assertEqual(llama.block_keys(ids, 16, salt=b"s"), [k0, k1])


class MemStore:
    """A block store in a dict, with the methods llama.BlockStore names."""

    def __init__(self, block_bytes: int, lose: frozenset[int] = frozenset()
                 ) -> None:
        self.block_bytes = block_bytes
        self.blocks: dict[bytes, bytes] = {}
        self.order: list[bytes] = []
        self.lose = lose          # get() misses these key indexes (gone)
        self.gets = 0

    def prefix_hits(self, keys: Sequence[bytes]) -> int:
        n = 0
        while n < len(keys) and keys[n] in self.blocks:
            n += 1
        return n

    def get(self, key: bytes, out: object) -> bool:
        self.gets += 1
        if key not in self.blocks or self.order.index(key) in self.lose:
            return False
        memoryview(out).cast("B")[:] = self.blocks[key]  # type: ignore
        return True

    def batch_put(self, keys: Sequence[bytes], blocks: Sequence[Any]
                  ) -> list[bool]:
        for k, b in zip(keys, blocks):
            if k not in self.blocks:
                self.blocks[k] = bytes(memoryview(b).cast("B"))
                self.order.append(k)
        return [True] * len(keys)


class Store(unittest.TestCase):
    """store_blocks and restore_prefix over a block store."""

    def setUp(self) -> None:
        self.cfg = llama.tiny()
        self.model = llama.Llama(self.cfg, seed=5)
        self.prompt = tokens(5, 64 + 7, self.cfg.vocab)   # 4 full blocks
        self.suffix = tokens(6, 9, self.cfg.vocab)
        self.keys = llama.block_keys(self.prompt + self.suffix, 16)

    def stored(self, **kw: object) -> MemStore:
        st = MemStore(llama.block_bytes(self.cfg), **kw)  # type: ignore
        cache = self.model.new_cache()
        self.model.prefill(self.prompt, cache)
        keys = llama.block_keys(self.prompt, 16)
        self.assertEqual(llama.store_blocks(st, cache, keys), 4)
        self.assertEqual(llama.store_blocks(st, cache, keys), 4)  # again
        return st

    def test_round_trip(self) -> None:
        st = self.stored()
        self.assertEqual(len(st.blocks), 4)
        cache = self.model.new_cache()
        self.assertEqual(llama.restore_prefix(st, cache, self.keys), 4)
        self.assertEqual(cache.length, 64)
        rest = self.prompt[64:] + self.suffix
        got = self.model.prefill(rest, cache)
        want, _, _ = full_path(self.model, self.prompt[:64], rest)
        self.assertTrue(torch.equal(got, want))

    def test_partial_and_vanished(self) -> None:
        st = self.stored(lose=frozenset({2}))
        cache = self.model.new_cache()
        self.assertEqual(llama.restore_prefix(st, cache, self.keys), 2)
        self.assertEqual((cache.length, st.gets), (32, 3))
        st = self.stored()
        del st.blocks[st.order[1]]
        cache = self.model.new_cache()
        self.assertEqual(llama.restore_prefix(st, cache, self.keys), 1)
        empty = MemStore(llama.block_bytes(self.cfg))
        cache = self.model.new_cache()
        self.assertEqual(llama.restore_prefix(empty, cache, self.keys), 0)
        self.assertEqual(cache.length, 0)

    def test_errors(self) -> None:
        st = self.stored()
        cache = self.model.new_cache()
        self.model.prefill(self.prompt[:3], cache)
        with self.assertRaises(ValueError):
            llama.restore_prefix(st, cache, self.keys)   # not empty
        wrong = MemStore(llama.block_bytes(self.cfg) // 2)
        with self.assertRaises(ValueError):
            llama.restore_prefix(wrong, self.model.new_cache(), self.keys)
        with self.assertRaises(ValueError):
            llama.store_blocks(wrong, cache, self.keys)
        self.assertEqual(wrong.blocks, {})


class Config(unittest.TestCase):
    """LlamaConfig's checks and presets."""

    def test_bad_shapes(self) -> None:
        bad: list[dict[str, Any]] = [dict(heads=4, kv_heads=3), dict(hidden=66, heads=4),
               dict(head_dim=7), dict(layers=0), dict(kv_heads=8),
               dict(dtype=torch.int32), dict(block_tokens=0), dict(vocab=-1)]
        for kw in bad:
            with self.subTest(**{k: str(v) for k, v in kw.items()}):
                with self.assertRaises(ValueError):
                    llama.tiny(**kw)

    def test_presets(self) -> None:
        t = llama.tiny()
        self.assertEqual((t.layers, t.hidden, t.heads, t.kv_heads, t.hd,
                          t.ffn), (2, 64, 4, 2, 16, 128))
        b = llama.llama31_8b()
        got = (b.layers, b.hidden, b.heads, b.kv_heads, b.hd, b.ffn,
               b.vocab, b.dtype)
        self.assertEqual(got, (32, 4096, 32, 8, 128, 14336, 128256,
                               torch.float16))
        self.assertEqual(llama.block_bytes(b), 32 * 2 * 8 * 16 * 128 * 2)
        self.assertEqual(llama.small().hd, 32)


if __name__ == "__main__":
    unittest.main()
