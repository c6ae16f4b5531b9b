# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""A sketch of an LMCache storage backend on a kvtier.kvstore.

UNTESTED AGAINST LMCACHE: LMCache cannot be installed where kvtier is
tested. The methods are those of LMCache's storage backend interface
(contains, submit_put_task / batched_submit_put_task, get_blocking, pin,
unpin, remove, close) with LMCache's memory objects replaced by torch
uint8 tensors of one chunk size; an adapter inside LMCache would convert
its CacheEngineKey to bytes (its to_string()) and its MemoryObj to the
tensor behind it.
"""

from __future__ import annotations

import torch

from kvtier.kvstore import KVStore


class KvtierBackend:
    """LMCache-style backend: chunks keyed by CacheEngineKey strings."""

    def __init__(self, tier: int, chunk_bytes: int, prefix: str = "lmc.") -> None:
        self.store = KVStore(tier, chunk_bytes, prefix=prefix)

    def contains(self, key: str, pin: bool = False) -> bool:
        found = self.store.exists(key.encode())
        if found and pin:
            self.store.pin(key.encode())
        return found

    def submit_put_task(self, key: str, obj: torch.Tensor) -> None:
        self.store.put(key.encode(), obj.contiguous().view(torch.uint8).numpy())

    def batched_submit_put_task(self, keys: list[str], objs: list[torch.Tensor]) -> None:
        self.store.batch_put([k.encode() for k in keys],
                             [o.contiguous().view(torch.uint8).numpy() for o in objs])

    def get_blocking(self, key: str) -> torch.Tensor | None:
        out = torch.empty(self.store.block_bytes, dtype=torch.uint8)
        return out if self.store.get(key.encode(), out.numpy()) else None

    def pin(self, key: str) -> bool:
        return self.store.pin(key.encode())

    def unpin(self, key: str) -> bool:
        return self.store.unpin(key.encode())

    def remove(self, key: str, force: bool = True) -> bool:
        return self.store.delete(key.encode())

    def close(self) -> None:
        self.store.close()
