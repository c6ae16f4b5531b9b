# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""A sketch of a vLLM KV offloading tier on a kvtier.kvstore.

UNTESTED AGAINST VLLM: vLLM cannot be installed where kvtier is tested.
vLLM's offloading manager asks a tier to lookup(block_hashes) (how many
leading blocks it holds), to store blocks and to load them; the transfer
itself is a worker-side handler copying between GPU blocks and the tier.
This sketch gives the tier's half: lookup, store and load of CPU tensors
by block hash, which such a handler calls after (or before) its own
GPU<->CPU copy.
"""

from __future__ import annotations

import torch

from kvtier.kvstore import KVStore


class KvtierOffloadTier:
    """Blocks of one size keyed by vLLM block hashes (bytes)."""

    def __init__(self, tier: int, block_bytes: int, prefix: str = "vllm.") -> None:
        self.store = KVStore(tier, block_bytes, prefix=prefix)

    def lookup(self, block_hashes: list[bytes]) -> int:
        """The number of leading blocks stored (a prefix hit)."""
        return self.store.prefix_hits(block_hashes)

    def store_blocks(self, block_hashes: list[bytes], blocks: list[torch.Tensor]) -> list[bool]:
        return self.store.batch_put(block_hashes,
                                    [b.contiguous().view(torch.uint8).numpy() for b in blocks])

    def load_blocks(self, block_hashes: list[bytes], into: list[torch.Tensor]) -> list[bool]:
        return self.store.batch_get(block_hashes, [t.view(torch.uint8).numpy() for t in into])

    def touch(self, block_hashes: list[bytes]) -> None:
        """Mark as recently used (the module's LRU counts reads)."""
        for h in block_hashes:
            self.store.exists(h)
