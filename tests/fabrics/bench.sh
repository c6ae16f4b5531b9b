#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/fabrics/bench.sh - restore bandwidth and fault latency of a tier
# over nvme-tcp loopback (and nvme-loop) against the local emulated NVMe
# namespace, one 6.12 VM boot, one namespace reached each way
# (tests/fabrics/bench-guest.sh says how). make bench-fabrics; not part of
# make check. The guest runs under TCG: only ratios within one run mean
# something.
#
# usage: tests/fabrics/bench.sh BUILD
#   uses BUILD/<kver>/kvtier.ko (make modules-all) and builds kvbench
#   (tools/bench); KVTIER_FAB_BUDGET_MB, KVTIER_FAB_MB, KVTIER_FAB_ROUNDS
#   travel into the guest.
# Results: BUILD/bench-fabrics/{bench.csv,table.txt,vm/}.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: bench.sh BUILD}" && pwd) || exit 2
cache=$build/cache
res=$build/bench-fabrics
out=$res/vm

make -s -C "$top/tools/bench" BUILD="$build" || exit 1
kver=$("$top/tests/vm/kernels.sh" list | awk '$1 == "6.12" { print $2 }')
[[ -n $kver ]] || { echo "bench: no 6.12 kernel headers installed" >&2; exit 1; }
ko=$build/$kver/kvtier.ko
[[ -f $ko ]] || { echo "bench: no $ko (make modules-all)" >&2; exit 1; }
rm -rf "$res"
mkdir -p "$out"
echo "bench: fabrics run on $kver, module $ko (HEAD $(git -C "$top" rev-parse --short HEAD))"
echo "bench: host load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
rc=0
"$top/tests/vm/run.sh" --kver "$kver" --cache "$cache" --out "$out" \
	--mem 3G --nvme-count 1 --nvme-size 1G --timeout 1200 -- \
	env KVTIER_FAB_BUDGET_MB="${KVTIER_FAB_BUDGET_MB:-256}" \
	KVTIER_FAB_MB="${KVTIER_FAB_MB:-}" KVTIER_FAB_ROUNDS="${KVTIER_FAB_ROUNDS:-3}" \
	"$top/tests/fabrics/bench-guest.sh" "$build" "$out" "$ko" >"$out/run.log" 2>&1 || rc=$?
echo "bench: host load after: $(cut -d' ' -f1-3 /proc/loadavg)"
grep -E '^(bench:|  )' "$out/console.log" | tr -d '\r' || true
rm -f "$out"/nvme*.img
if [[ ! -s $out/bench.csv ]]; then
	echo "bench: no results (run.sh status $rc; see $out/console.log)" >&2
	exit 1
fi
cp "$out/bench.csv" "$res/bench.csv"
python3 "$top/tests/fabrics/report.py" "$res/bench.csv" | tee "$res/table.txt"
exit $rc
