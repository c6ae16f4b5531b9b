#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: kvtier against raw NVMe (fio), Linux swap and the page
# cache, on the same emulated namespace, in one boot of the 6.12 kernel.
#
# usage: tests/bench/run.sh BUILD            the whole comparison
#        tests/bench/run.sh --tiny BUILD     one tiny kvtier row (make check)
#        tests/bench/run.sh --reuse BUILD    KV reuse across a module reload
#                                            (make bench-reuse)
#        tests/bench/run.sh --ab BUILD       two module builds in one boot
#                                            (make bench-ab)
#        tests/bench/run.sh --ttft BUILD     time to first token, recompute
#                                            vs restore (make bench-ttft)
#
# Full run: builds kvbench (tools/bench) and kvtier.ko for 6.12 in a private
# copy (BUILD/bench/mod/), boots the VM with 2 GiB of RAM and one 1 GiB NVMe
# namespace (serial kvt0) and runs tests/bench/guest.sh in it. Results:
#   BUILD/bench/results.csv   every row (fio, kvbench; header first)
#   BUILD/bench/table.txt     the side-by-side table with ratios to kvtier
#   BUILD/bench/*.png         plots (gnuplot)
#   BUILD/bench/vm/           console, kernel log, fio JSON, module stats
# Tiny run: uses BUILD/<kver>/kvtier.ko (make check built it), 256 MiB
# namespace, one kvbench decode row; fails only when it crashes or prints
# no row. Numbers are never judged.
# Reuse run: builds like the full run (BUILD/bench-reuse/mod/), boots the
# VM with 3 GiB and one 1 GiB namespace and runs tests/bench/reuse-guest.sh:
# a persistent region written, dropped by a module reload and restored by
# mmap+WILLNEED, pread and the fault path, with fio on the same namespace.
# Results: BUILD/bench-reuse/{results.csv,table.txt,vm/}. A restore that
# reads back wrong bytes fails the run.
# A/B run: module A from the commit KVTIER_AB_BASE (default: main), B from
# the working tree (or HEAD with KVTIER_BENCH_SRC=head); boots the VM with
# 2 GiB and one 1 GiB namespace and runs tests/bench/ab-guest.sh: fio
# sequential 1 MiB read/write, then restore and write-back rows of A and B
# alternating (KVTIER_AB_PARAMS_A/B: module parameters of each). Results:
# BUILD/bench-ab/{results.csv,table.txt,vm/}.
# TTFT run: builds like the full run (BUILD/bench-ttft/mod/), boots the VM
# with 3 GiB and one 1 GiB namespace and runs tests/bench/ttft-guest.sh:
# kvtier.llama prompts prefilled and their KV blocks stored in a kvstore
# by one process, a module reload, restore + suffix prefill against a full
# recompute in another, fio reading the blocks' slots. Results:
# BUILD/bench-ttft/{ttft.csv,fio.csv,table.txt,ttft.png,vm/}. A restore
# that is not bit-identical to the recompute fails the run.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
tiny=0 reuse=0 ab=0 ttft=0
if [[ ${1:-} == --tiny ]]; then
	tiny=1
	shift
elif [[ ${1:-} == --ab ]]; then
	ab=1
	shift
elif [[ ${1:-} == --reuse ]]; then
	reuse=1
	shift
elif [[ ${1:-} == --ttft ]]; then
	ttft=1
	shift
fi
build=$(mkdir -p "${1:?usage: run.sh [--tiny|--reuse|--ab|--ttft] BUILD}" && cd "$1" && pwd)
cache=$build/cache
t0=$SECONDS

make -s -C "$top/tools/bench" BUILD="$build"
read -r short kver < <("$top/tests/vm/kernels.sh" list | awk '$1 == "6.12"')
[[ -n ${kver:-} ]] || { echo "bench: no 6.12 kernel headers installed" >&2; exit 1; }

# build_module DIR [REV]: kvtier.ko for $kver in a private copy of the
# sources (others may be editing or building the tree's own build/<kver>/).
# The copy is of the working tree, or of the committed HEAD with
# KVTIER_BENCH_SRC=head (a tree whose kmod/ is mid-edit), or of REV.
build_module() {
	local src=$1/src kdir rev=${2:-}
	kdir=$("$top/tests/vm/kernels.sh" kdir "$short")
	[[ -z $rev && ${KVTIER_BENCH_SRC:-tree} == head ]] && rev=HEAD
	if [[ -n $rev ]]; then
		rm -rf "$src"
		mkdir -p "$src"
		git -C "$top" archive "$rev" Kbuild Makefile dkms.conf include kmod |
			tar -C "$src" -xf -
	else
		mkdir -p "$src"
		rm -f "$src/modules.order" "$src/kmod/modules.order" \
			"$src/Module.symvers" "$src/kmod/compat_generated.h"
		tar -C "$top" -cf - --exclude='*.o' --exclude='*.ko' \
			--exclude='.*.cmd' --exclude='*.mod*' \
			--exclude=compat_generated.h --exclude=modules.order \
			--exclude=Module.symvers --exclude='*.a' \
			--exclude=.conftest-kdir Kbuild Makefile dkms.conf include kmod |
			tar -C "$src" -xf -
	fi
	make -C "$src" module KDIR="$kdir" >"$1/build.log" 2>&1 ||
		{ cat "$1/build.log"; echo "bench: module build failed" >&2; return 1; }
	cp "$src/kmod/kvtier.ko" "$1/kvtier.ko"
	echo "bench: kvtier.ko from ${rev:-${KVTIER_BENCH_SRC:-tree}}" \
		"(HEAD $(git -C "$top" rev-parse --short HEAD))"
}

if ((tiny)); then
	ko=$build/$kver/kvtier.ko
	if [[ ! -f $ko ]]; then
		build_module "$build/bench/mod/$kver"
		ko=$build/bench/mod/$kver/kvtier.ko
	fi
	out=$build/bench/vm-tiny
	size=256M timeout=240 mode=tiny mem=2G
elif ((ab)); then
	build_module "$build/bench-ab/mod-a/$kver" "${KVTIER_AB_BASE:-main}"
	build_module "$build/bench-ab/mod-b/$kver"
	ko=$build/bench-ab/mod-b/$kver/kvtier.ko
	out=$build/bench-ab/vm
	size=1G timeout=900 mode=ab mem=2G
elif ((ttft)); then
	build_module "$build/bench-ttft/mod/$kver"
	make -s -C "$top/lib"
	ko=$build/bench-ttft/mod/$kver/kvtier.ko
	out=$build/bench-ttft/vm
	size=1G timeout=3600 mode=ttft mem=3G
elif ((reuse)); then
	build_module "$build/bench-reuse/mod/$kver"
	ko=$build/bench-reuse/mod/$kver/kvtier.ko
	out=$build/bench-reuse/vm
	size=1G timeout=600 mode=reuse mem=3G
else
	build_module "$build/bench/mod/$kver"
	ko=$build/bench/mod/$kver/kvtier.ko
	out=$build/bench/vm
	size=1G timeout=1500 mode=full mem=6G
fi
"$top/tests/vm/prepare.sh" "$kver" "$cache" >/dev/null
rm -rf "$out"
mkdir -p "$out"
echo "bench: $mode run on $kver, log in $out/console.log"
# Other VMs on the host distort every number: say how busy it was.
echo "bench: host load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
# The host CPU's CRC32C rates, against the guest's (ab-guest.sh).
((ab)) && "$build/bench/crcspeed" 256 | sed 's/^/bench: crcspeed host: /'
rc=0
guest=("$top/tests/bench/guest.sh" $mode "$build" "$out" "$ko")
# The reuse knobs (tests/bench/reuse-guest.sh) travel into the guest.
((reuse)) && guest=(env KVTIER_REUSE_DROP="${KVTIER_REUSE_DROP:-reload}"
	KVTIER_REUSE_BUDGET_MB="${KVTIER_REUSE_BUDGET_MB:-512}"
	KVTIER_REUSE_MB="${KVTIER_REUSE_MB:-}"
	KVTIER_REUSE_ROUNDS="${KVTIER_REUSE_ROUNDS:-2}"
	KVTIER_REUSE_CHECKSUM="${KVTIER_REUSE_CHECKSUM:-}"
	"$top/tests/bench/reuse-guest.sh" "$build" "$out" "$ko")
((ttft)) && guest=(env KVTIER_TTFT_RUNS="${KVTIER_TTFT_RUNS:-}"
	KVTIER_TTFT_SUFFIX="${KVTIER_TTFT_SUFFIX:-}"
	KVTIER_TTFT_DECODE="${KVTIER_TTFT_DECODE:-}"
	KVTIER_TTFT_BUDGET_MB="${KVTIER_TTFT_BUDGET_MB:-}"
	"$top/tests/bench/ttft-guest.sh" "$build" "$out" "$ko")
((ab)) && guest=(env KVTIER_AB_ROUNDS="${KVTIER_AB_ROUNDS:-2}"
	KVTIER_AB_WORKLOADS="${KVTIER_AB_WORKLOADS:-restore writeback}"
	KVTIER_AB_CHECKSUM="${KVTIER_AB_CHECKSUM:-}"
	KVTIER_AB_RESTORE_MB="${KVTIER_AB_RESTORE_MB:-32}"
	KVTIER_AB_PARAMS_A="${KVTIER_AB_PARAMS_A:-}"
	KVTIER_AB_PARAMS_B="${KVTIER_AB_PARAMS_B:-}"
	KVTIER_AB_WARMUP="${KVTIER_AB_WARMUP:-1}"
	"$top/tests/bench/ab-guest.sh" "$build" "$out"
	"$build/bench-ab/mod-a/$kver/kvtier.ko" "$ko")
"$top/tests/vm/run.sh" --kver "$kver" --cache "$cache" --out "$out" \
	--mem $mem --nvme-count 1 --nvme-size $size --timeout $timeout -- \
	"${guest[@]}" >"$out/run.log" 2>&1 || rc=$?
echo "bench: host load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# The guest's progress lines (its stderr) and rows, without boot noise.
grep -E '^(bench:|  )' "$out/console.log" | tr -d '\r' || true
rm -f "$out"/nvme*.img

rows=0
[[ -f $out/bench.csv ]] && rows=$(($(wc -l <"$out/bench.csv") - 1))
if ((tiny)); then
	echo "bench: tiny run: $rows row(s), status $rc, $((SECONDS - t0)) s"
	((rc == 0 && rows > 0))
	exit
fi
if ((ttft)); then
	rows=0
	[[ -f $out/ttft.csv ]] && rows=$(($(wc -l <"$out/ttft.csv") - 1))
	if ((rows > 0)); then
		cp "$out/ttft.csv" "$out/fio.csv" "$build/bench-ttft/"
		/usr/bin/python3 "$top/tests/bench/ttft-report.py" \
			"$build/bench-ttft" | tee "$build/bench-ttft/table.txt"
	fi
	echo "bench: ttft: $rows rows in $build/bench-ttft/ttft.csv, status $rc, $((SECONDS - t0)) s"
	((rc == 0 && rows > 0))
	exit
fi
if ((ab)); then
	if ((rows > 0)); then
		cp "$out/bench.csv" "$build/bench-ab/results.csv"
		/usr/bin/python3 "$top/tests/bench/report.py" --ab \
			"$build/bench-ab/results.csv" | tee "$build/bench-ab/table.txt"
	fi
	echo "bench: ab: $rows rows in $build/bench-ab/results.csv, status $rc, $((SECONDS - t0)) s"
	((rc == 0 && rows > 0))
	exit
fi
if ((reuse)); then
	if ((rows > 0)); then
		cp "$out/bench.csv" "$build/bench-reuse/results.csv"
		/usr/bin/python3 "$top/tests/bench/report.py" --reuse \
			"$build/bench-reuse/results.csv" | tee "$build/bench-reuse/table.txt"
	fi
	echo "bench: reuse: $rows rows in $build/bench-reuse/results.csv, status $rc, $((SECONDS - t0)) s"
	((rc == 0 && rows > 0))
	exit
fi
if ((rows > 0)); then
	cp "$out/bench.csv" "$build/bench/results.csv"
	/usr/bin/python3 "$top/tests/bench/report.py" "$build/bench/results.csv" \
		"$build/bench" | tee "$build/bench/table.txt"
fi
echo "bench: $rows rows in $build/bench/results.csv, status $rc, $((SECONDS - t0)) s"
((rc == 0 && rows > 0))
