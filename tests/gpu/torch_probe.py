# SPDX-License-Identifier: GPL-2.0
"""An unmodified PyTorch program, as tests/gpu/run.sh runs it under the
kvtier CUDA shim: allocate a KV-cache-sized tensor on the GPU, write it on
the GPU, check it on the CPU and back. Knows nothing about kvtier."""
import sys

import torch

n = 256 * 1024 * 1024 // 8  # 256 MiB of int64, above KVTIER_MIN_BYTES=64M
kv = torch.empty(n, dtype=torch.int64, device="cuda")
idx = torch.arange(n, dtype=torch.int64, device="cuda")
kv.copy_(idx * 3 + 7)
torch.cuda.synchronize()
ok_gpu_to_cpu = bool(torch.equal(kv.cpu(), torch.arange(n, dtype=torch.int64) * 3 + 7))
kv.add_(1)
ok_gpu = bool((kv == idx * 3 + 8).all().item())
free, total = torch.cuda.mem_get_info()
print(f"torch {torch.__version__}: gpu->cpu {'ok' if ok_gpu_to_cpu else 'WRONG'}, "
      f"gpu update {'ok' if ok_gpu else 'WRONG'}, mem_get_info free {free >> 20} MiB "
      f"of {total >> 20} MiB")
sys.exit(0 if ok_gpu_to_cpu and ok_gpu else 1)
