# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""A sketch of an SGLang HiCache storage backend on a kvtier.kvstore.

UNTESTED AGAINST SGLANG: SGLang cannot be installed where kvtier is
tested. The class follows the method names and return conventions of
sglang.srt.mem_cache.hicache_storage.HiCacheStorage (get, set, batch_get,
batch_set, exists, batch_exists returning the number of leading keys
found); it does not subclass it, so this file imports without SGLang.
Plug it in with SGLang's dynamic backend loader, subclassing
HiCacheStorage there.

SGLang names a page by a hex SHA-256 of its token prefix chain; the hex
string's bytes are the kvstore key. Pages are torch tensors of one size.
"""

from __future__ import annotations

from typing import Any

import torch

from kvtier.kvstore import KVStore


class KvtierHiCache:
    """HiCacheStorage's methods over one KVStore of page-sized blocks."""

    def __init__(self, tier: int, page_bytes: int, prefix: str = "sgl.") -> None:
        self.store = KVStore(tier, page_bytes, prefix=prefix)

    def get(self, key: str, target_location: torch.Tensor | None = None,
            target_sizes: Any = None) -> torch.Tensor | None:
        """The page into target_location (a CPU tensor), or None."""
        if target_location is None:
            target_location = torch.empty(self.store.block_bytes, dtype=torch.uint8)
        view = target_location.view(torch.uint8).numpy()
        return target_location if self.store.get(key.encode(), view) else None

    def batch_get(self, keys: list[str], target_locations: list[torch.Tensor],
                  target_sizes: Any = None) -> list[torch.Tensor | None]:
        return [self.get(k, t) for k, t in zip(keys, target_locations)]

    def set(self, key: str, value: torch.Tensor | None = None,
            target_location: Any = None, target_sizes: Any = None) -> bool:
        """Store the page; True also when it was stored already."""
        assert value is not None
        self.store.put(key.encode(), value.contiguous().view(torch.uint8).numpy())
        return True

    def batch_set(self, keys: list[str], values: list[torch.Tensor],
                  target_locations: Any = None, target_sizes: Any = None) -> bool:
        self.store.batch_put([k.encode() for k in keys],
                             [v.contiguous().view(torch.uint8).numpy() for v in values])
        return True

    def exists(self, key: str) -> bool:
        return self.store.exists(key.encode())

    def batch_exists(self, keys: list[str], extra_info: Any = None) -> int:
        """The number of consecutive stored keys from the start."""
        return self.store.prefix_hits(k.encode() for k in keys)
