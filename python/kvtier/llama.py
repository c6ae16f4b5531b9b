# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""A Llama-architecture decoder in plain PyTorch, for prefix-KV reuse tests.

No weights can be downloaded, so the weights are seeded random (a
``torch.Generator``): the model is a stand-in with the shapes and the data
flow of Llama (RMSNorm, rotary embeddings, grouped-query attention with a
causal mask, SwiGLU MLP, tied or untied lm head), not a language model.
Its KV lives in a :class:`PagedKVCache` of fixed-size blocks, each one
contiguous tensor that exports to and imports from bytes
(:func:`block_bytes` of them), keyed by a prefix hash chain
(:func:`block_keys`, as vLLM and SGLang key theirs).

Bit identity of reuse. Prefilling ``prompt + suffix`` from scratch and
prefilling only the tokens past the prompt's last full block, into a new
cache that imported the prompt's full blocks from bytes, give *equal*
(``torch.equal``) logits and greedy tokens. That holds by construction:
every forward pass (prefill and decode) runs in **block-aligned chunks**:
tokens ``[s, e)`` with ``e - s <= block_tokens`` that never cross a
multiple of ``block_tokens`` (a prefill from length ``L`` first finishes
L's block, then goes block by block; decode is a one-token chunk). A
chunk's result depends only on its tokens, its positions and the cached
K/V before it, and both paths run the same chunks, with the same shapes,
over the same values: the imported blocks hold the exact bytes the first
path computed (their chunks saw only earlier blocks), and reuse resumes at
a block boundary, which is a chunk boundary of the full path too. So each
op sees the same operands with the same shapes, and deterministic kernels
return the same bits. Nothing relies on a kernel giving a row the same
result whatever the other rows, nor on whole and chunked prefill rounding
alike: in general they need not (GEMM blocking and reduction splits depend
on the shapes; the CPU build this was tested on happened to agree). The
lm head always runs over whole chunks too (``last_only`` keeps fewer rows).

This module sets no global torch state (threads, determinism flags). On
CPU, identical ops over identical shapes are deterministic whatever the
thread count (fixed within a process). On CUDA, call
``torch.use_deterministic_algorithms(True)`` and set
``CUBLAS_WORKSPACE_CONFIG=:4096:8`` before any CUDA work. Seeded weights
differ between CPU and CUDA (their generators differ), not between runs.
float16 needs CUDA (PyTorch 1.13 has no CPU half GEMM); on CPU use bfloat16.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.nn.functional as F

_DTYPES = (torch.float32, torch.bfloat16, torch.float16)

Buffer = bytes | bytearray | memoryview
"""What :meth:`PagedKVCache.import_block` takes besides a uint8 tensor."""


@dataclass(frozen=True)
class LlamaConfig:
    """The shapes of a Llama model and of its KV blocks.

    ``head_dim`` of ``None`` means ``hidden // heads``. ``kv_heads`` divides
    ``heads`` (grouped-query attention: query head ``h`` reads KV head
    ``h // (heads // kv_heads)``). Bad shapes raise ValueError.
    """

    vocab: int = 512
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    head_dim: int | None = None
    ffn: int = 128
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    dtype: torch.dtype = torch.float32
    block_tokens: int = 16
    tie_embeddings: bool = False

    def __post_init__(self) -> None:
        for name in ("vocab", "layers", "hidden", "heads", "kv_heads",
                     "ffn", "block_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, "
                                 f"not {value!r}")
        if self.head_dim is None:
            if self.hidden % self.heads:
                raise ValueError(f"hidden {self.hidden} is not a multiple of "
                                 f"heads {self.heads}: give head_dim")
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        hd = self.head_dim
        if not isinstance(hd, int) or hd <= 0 or hd % 2:
            raise ValueError("head_dim must be a positive even int, "
                             f"not {hd!r}")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads {self.heads} is not a multiple of "
                             f"kv_heads {self.kv_heads}")
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {_DTYPES}, "
                             f"not {self.dtype}")
        if not self.rope_theta > 0 or not self.norm_eps > 0:
            raise ValueError("rope_theta and norm_eps must be positive")

    @property
    def hd(self) -> int:
        """``head_dim``, resolved (an int)."""
        assert self.head_dim is not None
        return self.head_dim


def tiny(**changes: Any) -> LlamaConfig:
    """The test preset: 2 layers, hidden 64, 4 heads, 2 KV heads, ffn 128."""
    return LlamaConfig(**changes)


def small(**changes: Any) -> LlamaConfig:
    """A small benchmark preset: 4 layers, hidden 256, 8 heads, 2 KV heads."""
    base: dict[str, Any] = {"layers": 4, "hidden": 256, "heads": 8,
                            "kv_heads": 2, "ffn": 768}
    return LlamaConfig(**(base | changes))


def llama31_8b(**changes: Any) -> LlamaConfig:
    """Llama 3.1 8B's shapes (fp16; no llama3 RoPE scaling: random weights)."""
    base: dict[str, Any] = {"vocab": 128256, "layers": 32, "hidden": 4096,
                            "heads": 32, "kv_heads": 8, "head_dim": 128,
                            "ffn": 14336, "rope_theta": 500000.0,
                            "dtype": torch.float16}
    return LlamaConfig(**(base | changes))


def block_bytes(config: LlamaConfig) -> int:
    """The size in bytes of one KV block: [layers, 2, kv_heads, block_tokens,
    head_dim] elements of ``config.dtype``."""
    elem = torch.empty((), dtype=config.dtype).element_size()
    return (config.layers * 2 * config.kv_heads * config.block_tokens
            * config.hd * elem)


def block_keys(tokens: Sequence[int] | torch.Tensor, block_tokens: int,
               salt: bytes = b"") -> list[bytes]:
    """The prefix hash chain of the full blocks of ``tokens``.

    Key ``i`` is ``sha256(key[i-1] || salt || ids)`` (``key[-1]`` is empty)
    where ``ids`` are block ``i``'s token ids as little-endian int32, so a
    key names the whole prefix up to its block; a partial last block has
    no key.
    """
    ids = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
    keys: list[bytes] = []
    prev = b""
    for i in range(len(ids) // block_tokens):
        chunk = ids[i * block_tokens:(i + 1) * block_tokens]
        packed = struct.pack(f"<{block_tokens}i", *chunk)
        prev = hashlib.sha256(prev + salt + packed).digest()
        keys.append(prev)
    return keys


class PagedKVCache:
    """The K and V of one sequence, in blocks of ``block_tokens`` tokens.

    Each block is one contiguous tensor [layers, 2 (K, V), kv_heads,
    block_tokens, head_dim], so a block is ``block_bytes(config)`` bytes.
    ``length`` tokens are valid; full blocks (``full_blocks``) are final and
    may be exported, and blocks are imported only onto a block boundary.
    """

    def __init__(self, config: LlamaConfig,
                 device: torch.device | str = "cpu") -> None:
        """An empty cache for ``config``'s shapes on ``device``."""
        self.config = config
        self.device = torch.device(device)
        self.blocks: list[torch.Tensor] = []
        self.length = 0

    @property
    def full_blocks(self) -> int:
        """How many blocks are full (all their tokens valid)."""
        return self.length // self.config.block_tokens

    def _shape(self) -> tuple[int, ...]:
        c = self.config
        return (c.layers, 2, c.kv_heads, c.block_tokens, c.hd)

    def _reserve(self, end: int) -> None:
        """Allocate blocks so that positions ``[0, end)`` have room."""
        while len(self.blocks) * self.config.block_tokens < end:
            self.blocks.append(torch.zeros(self._shape(),
                                           dtype=self.config.dtype,
                                           device=self.device))

    def put(self, layer: int, start: int, k: torch.Tensor,
            v: torch.Tensor) -> None:
        """Store ``layer``'s K and V [kv_heads, n, head_dim] of positions
        ``start..start+n`` (``start <= length``; ``length`` moves on only by
        :meth:`commit`)."""
        if start > self.length:
            raise ValueError(f"put at {start} leaves a gap past {self.length}")
        bt, n = self.config.block_tokens, k.shape[1]
        self._reserve(start + n)
        pos = start
        while pos < start + n:
            b, off = divmod(pos, bt)
            m = min(bt - off, start + n - pos)
            src = slice(pos - start, pos - start + m)
            self.blocks[b][layer, 0, :, off:off + m] = k[:, src]
            self.blocks[b][layer, 1, :, off:off + m] = v[:, src]
            pos += m

    def commit(self, end: int) -> None:
        """Mark positions before ``end`` valid (after each layer's put)."""
        if end > len(self.blocks) * self.config.block_tokens:
            raise ValueError(f"commit past the allocated blocks: {end}")
        self.length = max(self.length, end)

    def append(self, k: torch.Tensor, v: torch.Tensor) -> None:
        """Append K and V [layers, kv_heads, n, head_dim] of ``n`` tokens."""
        for layer in range(self.config.layers):
            self.put(layer, self.length, k[layer], v[layer])
        self.commit(self.length + k.shape[2])

    def kv(self, layer: int, end: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``layer``'s K and V of positions ``[0, end)``, each a new
        contiguous [kv_heads, end, head_dim] tensor."""
        bt = self.config.block_tokens
        nb = -(-end // bt)
        parts = [self.blocks[b][layer, :, :, :min(bt, end - b * bt)]
                 for b in range(nb)]
        kv = torch.cat(parts, dim=2)                  # [2, kv_heads, end, hd]
        return kv[0].contiguous(), kv[1].contiguous()

    def export_block(self, i: int) -> torch.Tensor:
        """Full block ``i`` as a new CPU uint8 tensor, ``block_bytes`` long."""
        if not 0 <= i < self.full_blocks:
            raise IndexError(f"block {i} is not full ({self.full_blocks} are)")
        flat = self.blocks[i].detach().to("cpu", copy=True).reshape(-1)
        return flat.view(torch.uint8)

    def import_block(self, data: Buffer | torch.Tensor) -> None:
        """Append a full block from ``block_bytes`` bytes (or a uint8 tensor)
        as block ``full_blocks``; the cache must end on a block boundary."""
        bt, size = self.config.block_tokens, block_bytes(self.config)
        if self.length % bt:
            raise ValueError("import onto a partial block "
                             f"(length {self.length})")
        if isinstance(data, torch.Tensor):
            raw = data.detach().reshape(-1)
            if raw.dtype != torch.uint8:
                raw = raw.contiguous().view(torch.uint8)
        else:
            raw = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        if raw.numel() != size:
            raise ValueError(f"a block is {size} bytes, not {raw.numel()}")
        block = raw.to(self.device).view(self.config.dtype)
        block = block.reshape(self._shape())
        del self.blocks[self.full_blocks:]
        self.blocks.append(block.clone())
        self.length += bt

    def truncate(self, length: int) -> None:
        """Keep only the first ``length`` tokens (drop blocks past them)."""
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot truncate {self.length} tokens "
                             f"to {length}")
        self.length = length
        del self.blocks[-(-length // self.config.block_tokens):]


class BlockStore(Protocol):
    """What :func:`store_blocks` and :func:`restore_prefix` need of a block
    store: :class:`kvtier.kvstore.KVStore` has it (so would an engine's)."""

    block_bytes: int

    def prefix_hits(self, keys: Sequence[bytes]) -> int: ...

    def get(self, key: bytes, out: Any) -> bool: ...

    def batch_put(self, keys: Sequence[bytes],
                  blocks: Sequence[Any]) -> list[bool]: ...


def _check_store(store: BlockStore, config: LlamaConfig) -> None:
    if store.block_bytes != block_bytes(config):
        raise ValueError(f"the store's blocks are {store.block_bytes} bytes, "
                         f"this model's {block_bytes(config)}")


def store_blocks(store: BlockStore, cache: PagedKVCache,
                 keys: Sequence[bytes]) -> int:
    """Put the full blocks of ``cache`` into ``store``, block ``i`` under
    ``keys[i]`` (the :func:`block_keys` of the tokens the cache holds).

    Keys past the cache's full blocks are ignored. Returns how many
    blocks the store holds for those keys afterwards (ones stored before
    count: a block's bytes depend only on its prefix). Raises ValueError
    when the store's block size is not this model's; the store's errors
    (OSError) pass through.
    """
    _check_store(store, cache.config)
    n = min(len(keys), cache.full_blocks)
    blocks = [cache.export_block(i).numpy() for i in range(n)]
    return sum(store.batch_put(list(keys[:n]), blocks))


def restore_prefix(store: BlockStore, cache: PagedKVCache,
                   keys: Sequence[bytes]) -> int:
    """Import into an empty ``cache`` the longest prefix of ``keys``
    whose blocks ``store`` holds; returns the number of blocks restored.
    Each block is read into one staging tensor (no copy on the way) and
    imported from it (one copy, onto the cache's device).

    A block that goes missing between the lookup and its read (another
    process deleted it, or the store reclaimed it) ends the prefix there:
    the cache then holds the blocks read before it, and the caller
    prefills from ``cache.length``. Raises ValueError for a cache that is
    not empty or a store of another block size; the store's errors
    (OSError: EIO for a block that failed its checksum) pass through.
    """
    if cache.length:
        raise ValueError(f"restore into a cache of {cache.length} tokens")
    _check_store(store, cache.config)
    want = store.prefix_hits(keys)
    buf = torch.empty(store.block_bytes, dtype=torch.uint8)
    view = buf.numpy()
    for key in keys[:want]:
        if not store.get(key, view):
            break
        cache.import_block(buf)
    return cache.full_blocks


def _weight(*shape: int, **kw: Any) -> torch.nn.Parameter:
    """An uninitialised, frozen parameter (the model's init fills it)."""
    return torch.nn.Parameter(torch.empty(shape, **kw), requires_grad=False)


class _Layer(torch.nn.Module):
    """One decoder layer's weights (no biases, as in Llama)."""

    def __init__(self, c: LlamaConfig, **kw: Any) -> None:
        super().__init__()
        self.attn_norm = _weight(c.hidden, **kw)
        self.wq = _weight(c.heads * c.hd, c.hidden, **kw)
        self.wk = _weight(c.kv_heads * c.hd, c.hidden, **kw)
        self.wv = _weight(c.kv_heads * c.hd, c.hidden, **kw)
        self.wo = _weight(c.hidden, c.heads * c.hd, **kw)
        self.mlp_norm = _weight(c.hidden, **kw)
        self.w_gate = _weight(c.ffn, c.hidden, **kw)
        self.w_up = _weight(c.ffn, c.hidden, **kw)
        self.w_down = _weight(c.hidden, c.ffn, **kw)


class Llama(torch.nn.Module):
    """A Llama decoder with seeded random weights (see the module's notes)."""

    def __init__(self, config: LlamaConfig, seed: int = 0,
                 device: torch.device | str = "cpu") -> None:
        """Build ``config``'s model on ``device``; ``seed`` fixes the weights.

        Weights are drawn in float32 from a ``torch.Generator`` on
        ``device`` (norms are 1 + N(0, 0.1²), matrices N(0, 1/fan_in),
        embeddings N(0, 1)), then cast to ``config.dtype``.
        """
        super().__init__()
        c = self.config = config
        self.device = torch.device(device)
        kw: dict[str, Any] = {"dtype": c.dtype, "device": self.device}
        self.embed = _weight(c.vocab, c.hidden, **kw)
        self.layers = torch.nn.ModuleList(_Layer(c, **kw)
                                          for _ in range(c.layers))
        self.norm = _weight(c.hidden, **kw)
        self.lm_head = (self.embed if c.tie_embeddings
                        else _weight(c.vocab, c.hidden, **kw))
        gen = torch.Generator(device=self.device)
        gen.manual_seed(seed)
        with torch.no_grad():
            for name, param in self.named_parameters():
                r = torch.randn(param.shape, generator=gen, device=self.device)
                if param.dim() == 1:
                    r = 1 + 0.1 * r
                elif name != "embed":
                    r = r / math.sqrt(param.shape[1])
                param.copy_(r)
        inv = torch.arange(0, c.hd, 2, dtype=torch.float32, device=self.device)
        self.register_buffer("inv_freq", 1.0 / (c.rope_theta ** (inv / c.hd)),
                             persistent=False)

    def new_cache(self) -> PagedKVCache:
        """An empty cache for this model, on its device."""
        return PagedKVCache(self.config, self.device)

    def _rms(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        ms = xf.pow(2).mean(-1, keepdim=True)
        xf = xf * torch.rsqrt(ms + self.config.norm_eps)
        return xf.to(x.dtype) * weight

    def _rope(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Rotate ``x`` [heads, n, head_dim] to its ``positions`` [n]."""
        inv_freq: torch.Tensor = self.inv_freq  # type: ignore[assignment]
        freqs = positions.float()[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        xf = x.float()
        half = xf.shape[-1] // 2
        rot = torch.cat((-xf[..., half:], xf[..., :half]), dim=-1)
        return (xf * emb.cos() + rot * emb.sin()).to(x.dtype)

    def _chunk(self, tokens: torch.Tensor, start: int,
               cache: PagedKVCache) -> torch.Tensor:
        """Run tokens at ``start..`` over the cache; store their K/V, commit
        them, return the final hidden states [n, hidden]."""
        c, n = self.config, tokens.shape[0]
        pos = torch.arange(start, start + n, device=self.device)
        end = start + n
        mask = torch.arange(end, device=self.device)[None, :] > pos[:, None]
        group = c.heads // c.kv_heads
        x = self.embed[tokens]
        for i, layer in enumerate(self.layers):
            h = self._rms(x, layer.attn_norm)
            q = F.linear(h, layer.wq).view(n, c.heads, c.hd).transpose(0, 1)
            k = F.linear(h, layer.wk).view(n, c.kv_heads, c.hd).transpose(0, 1)
            v = F.linear(h, layer.wv).view(n, c.kv_heads, c.hd).transpose(0, 1)
            q, k = self._rope(q, pos), self._rope(k, pos)
            cache.put(i, start, k, v)
            ks, vs = cache.kv(i, end)             # [kv_heads, end, hd]
            q = q.contiguous().view(c.kv_heads, group * n, c.hd)
            s = torch.matmul(q, ks.transpose(1, 2)) * (1.0 / math.sqrt(c.hd))
            s = s.view(c.kv_heads, group, n, end)
            s = s.masked_fill(mask, float("-inf"))
            a = torch.softmax(s, dim=-1, dtype=torch.float32).to(c.dtype)
            o = torch.matmul(a.view(c.kv_heads, group * n, end), vs)
            o = o.view(c.heads, n, c.hd).transpose(0, 1)
            o = o.reshape(n, c.heads * c.hd)
            x = x + F.linear(o, layer.wo)
            h = self._rms(x, layer.mlp_norm)
            x = x + F.linear(F.silu(F.linear(h, layer.w_gate))
                             * F.linear(h, layer.w_up), layer.w_down)
        cache.commit(end)
        return self._rms(x, self.norm)

    @torch.no_grad()
    def prefill(self, tokens: Sequence[int] | torch.Tensor,
                cache: PagedKVCache, last_only: bool = False,
                chunk_tokens: int | None = None) -> torch.Tensor:
        """Run ``tokens`` from position ``cache.length`` on, filling the cache.

        Works on an empty cache and after imported prefix blocks alike.
        Returns float32 logits [n, vocab] of every token, or [vocab] of the
        last with ``last_only`` (which still runs the lm head over whole
        chunks, so its bits are those of the full result's last row).

        By default the tokens run one KV block at a time (chunks end on
        block boundaries), so a prompt prefilled whole and one prefilled
        after restored blocks do the same arithmetic on every row: that is
        what makes their logits equal bit for bit. ``chunk_tokens`` runs
        chunks of that many tokens instead, as an engine's (chunked)
        prefill does: faster, but its bits may differ from the default's
        in the last places (matrix kernels may pick another reduction
        order for another number of rows), so it is for timing a
        recompute, not for the bit-identity checks.
        """
        if chunk_tokens is not None and (
                isinstance(chunk_tokens, bool)
                or not isinstance(chunk_tokens, int) or chunk_tokens <= 0):
            raise ValueError("chunk_tokens must be a positive int, "
                             f"not {chunk_tokens!r}")
        ids = torch.as_tensor(tokens, dtype=torch.long).reshape(-1)
        ids = ids.to(self.device)
        bt, n = self.config.block_tokens, ids.shape[0]
        if n == 0:
            if last_only:
                raise ValueError("last_only logits of no tokens")
            return torch.empty(0, self.config.vocab, device=self.device)
        start0, out = cache.length, []
        done = 0
        while done < n:
            start = start0 + done
            if chunk_tokens is None:
                m = min(bt - start % bt, n - done)
            else:
                m = min(chunk_tokens, n - done)
            h = self._chunk(ids[done:done + m], start, cache)
            if not last_only or done + m == n:
                out.append(F.linear(h, self.lm_head).float())
            done += m
        return out[-1][-1] if last_only else torch.cat(out)

    @torch.no_grad()
    def decode(self, cache: PagedKVCache, n: int,
               first_token: int) -> tuple[list[int], torch.Tensor]:
        """Greedy decoding: feed ``first_token`` (usually the argmax of the
        prefill's last logits), then each argmax, one token a step.

        Returns the ``n`` generated tokens and their float32 logits
        [n, vocab] (row ``j`` picked token ``j``); the cache grows by ``n``.
        """
        tokens: list[int] = []
        rows: list[torch.Tensor] = []
        tok = first_token
        for _ in range(n):
            logits = self.prefill([tok], cache)[0]
            tok = int(torch.argmax(logits).item())
            tokens.append(tok)
            rows.append(logits)
        if not rows:
            return tokens, torch.empty(0, self.config.vocab,
                                       device=self.device)
        return tokens, torch.stack(rows)
