#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/gpu/run.sh - the CUDA shim and block offload on a real NVIDIA GPU.
# CI has no GPU; run this on any machine that has one, and record its
# output in Documentation/admin-guide/kvtier-cuda.rst ("On a real GPU").
#
# Self-contained (no network, no downloads), under 5 minutes. It:
#   1. prints the GPU, the driver (open or proprietary kernel modules),
#      cudaDevAttrPageableMemoryAccess and whether a tier is present;
#   2. builds libkvtier and libkvtier-cuda against this machine's CUDA
#      (CUDA_HOME, default /usr/local/cuda) and two probe programs (nvcc);
#   3. runs the probe (cudaMalloc of 256 MiB, a GPU kernel writes it, the
#      CPU reads it back, the CPU writes, a GPU kernel checks) with no shim
#      and under LD_PRELOAD in each mode (off, auto, hmm, managed), and
#      prints which mode the shim chose and why, and the round trip;
#   4. times pinned staging (device <-> pinned host, 8 MiB chunks, lowest-
#      priority stream), the copy half of kvtier_xfer_* with
#      KVTIER_XFER_CUDA, and, where /dev/kvtier0 has a namespace attached,
#      the whole block offload and restore through it (GB/s);
#   5. where PyTorch is installed, runs an unmodified torch script under the
#      shim in each mode and checks a tensor's bytes;
#   6. prints `kvtierctl gpu`, the verdict on each mode and why (where
#      kvtierctl can be built);
#   7. where PyTorch has CUDA, times the first token of kvtier.llama's
#      decoder at Llama-3.1-8B's shape (fp16, random weights) for 8K and
#      16K-token prompts: a chunked prefill of the whole prompt against
#      restoring its KV blocks from pinned host memory into the GPU cache
#      and prefilling only a suffix (tests/gpu/ttft.py; bit identity of
#      the two paths' logits is checked).
# Where the kvtier module is not loaded (a machine that cannot load it),
# the shim's documented fallback applies (hmm passes through, managed is
# unregistered) and is reported as such, not as a failure.
#
# usage: tests/gpu/run.sh [OUTDIR]     (default build/gpu; output also in
#                                       OUTDIR/run.log)
# Exit: 0 all round trips right, 1 a wrong byte or a failed step, 4 no GPU.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:-$top/build/gpu}" && cd "${1:-$top/build/gpu}" && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PATH=$CUDA_HOME/bin:$PATH
shim=$top/cuda/libkvtier-cuda.so
fail=0

exec > >(tee "$out/run.log") 2>&1
step() { echo; echo "== $*"; }
# run SECONDS CMD...: bounded, so the whole script stays under 5 minutes.
run() { local t=$1; shift; timeout -k 5 "$t" "$@"; }

step "machine"
date -u
uname -r
if ! command -v nvidia-smi >/dev/null; then
	echo "no nvidia-smi: no NVIDIA GPU here; nothing to test"
	exit 4
fi
run 30 nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv,noheader
if [[ -r /proc/driver/nvidia/version ]]; then
	head -1 /proc/driver/nvidia/version
fi
# modinfo is missing in some GPU containers; the driver's version line
# names the open modules too.
lic=$(modinfo -F license nvidia 2>/dev/null || true)
kind="proprietary or unknown"
if [[ $lic == *GPL* ]] || grep -qs "Open Kernel Module" /proc/driver/nvidia/version; then
	kind=open
fi
echo "nvidia kernel modules: $kind (license: ${lic:-not readable})"
run 30 nvidia-smi -q | grep -i "addressing mode"
for p in /sys/module/nvidia_uvm/parameters/uvm_disable_hmm; do
	[[ -r $p ]] && echo "nvidia_uvm uvm_disable_hmm: $(cat "$p")"
done
tier=none
if [[ -c /dev/kvtier0 ]]; then
	tier="/dev/kvtier0 ($(cat /sys/class/kvtier/kvtier0/state 2>/dev/null || echo unknown))"
fi
echo "kvtier tier: $tier"
"$CUDA_HOME/bin/nvcc" --version | tail -1

step "build (CUDA_HOME=$CUDA_HOME)"
if ! make -s -C "$top/lib" || ! make -s -C "$top/cuda" CUDA_HOME="$CUDA_HOME" ||
	[[ ! -f $shim ]]; then
	echo "build failed"
	exit 1
fi
nvcc_flags=(-O2 -std=c++14)
if ! run 120 "$CUDA_HOME/bin/nvcc" "${nvcc_flags[@]}" -o "$out/probe" "$top/tests/gpu/probe.cu" ||
	! run 120 "$CUDA_HOME/bin/nvcc" "${nvcc_flags[@]}" -o "$out/staging" "$top/tests/gpu/staging.cu"; then
	echo "nvcc failed"
	exit 1
fi
echo "built: $shim, $out/probe, $out/staging"

# kvtierctl gpu: the host's verdict on each mode and why (kvtier-cuda.rst,
# "Which modes a host allows"). kvtierctl needs libnvme and libblkid.
step "kvtierctl gpu"
if make -s -C "$top/tools" kvtierctl >/dev/null 2>&1; then
	LD_LIBRARY_PATH=$top/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} run 60 "$top/tools/kvtierctl" gpu ||
		{ echo "kvtierctl gpu failed"; fail=1; }
else
	echo "kvtierctl not built here (libnvme-dev, libblkid-dev missing): no report"
fi

step "probe without the shim"
run 60 "$out/probe" 256
rc=$?
if [[ $rc -eq 4 ]]; then
	echo "the CUDA runtime sees no GPU"
	exit 4
fi
[[ $rc -eq 0 ]] || fail=1

for mode in off auto hmm managed; do
	step "probe under the shim, KVTIER_MODE=$mode"
	env LD_PRELOAD="$shim" KVTIER_MODE=$mode KVTIER_MIN_BYTES=64M \
		KVTIER_LOG=info KVTIER_TENANT=gpu-run "LD_LIBRARY_PATH=$top/lib:${LD_LIBRARY_PATH:-}" \
		timeout -k 5 60 "$out/probe" 256
	rc=$?
	echo "exit $rc"
	[[ $rc -eq 0 ]] || fail=1
done

step "pinned staging bandwidth (the copy half of KVTIER_XFER_CUDA)"
run 60 "$out/staging" 2048 || fail=1

step "block offload and restore through a tier"
if [[ $tier == none ]] || ! grep -q attached /sys/class/kvtier/kvtier0/state 2>/dev/null; then
	echo "skipped: no tier with an attached namespace here (the module is not loaded, or cannot be)"
else
	cc -O2 -std=c11 -I"$top/lib" -I"$top/include/uapi" -o "$out/offload" \
		"$top/tests/gpu/offload.c" -L"$top/lib" -Wl,-rpath,"$top/lib" -lkvtier &&
		run 120 "$out/offload" 1024 || fail=1
fi

step "PyTorch"
if ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	echo "skipped: no PyTorch with CUDA here"
else
	for mode in off auto hmm managed; do
		echo "-- KVTIER_MODE=$mode"
		env LD_PRELOAD="$shim" KVTIER_MODE=$mode KVTIER_MIN_BYTES=64M KVTIER_LOG=info \
			"LD_LIBRARY_PATH=$top/lib:${LD_LIBRARY_PATH:-}" \
			timeout -k 5 90 python3 "$top/tests/gpu/torch_probe.py" || fail=1
	done
fi

step "time to first token at Llama-3.1-8B's shape: recompute vs restore"
if ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	echo "skipped: no PyTorch with CUDA here"
else
	env PYTHONUNBUFFERED=1 KVTIER_LIBRARY="$top/lib/libkvtier.so.0" \
		timeout -k 5 240 python3 "$top/tests/gpu/ttft.py" || fail=1
fi

step "result"
if [[ $fail -eq 0 ]]; then
	echo "all round trips right"
else
	echo "FAILED: see above"
fi
exit $fail
