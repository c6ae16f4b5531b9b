#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the benchmark VM (tests/bench/run.sh boots it): every system on
# the same NVMe namespace (serial kvt0), one after another, in one boot:
#
#   raw     fio --direct=1 on the namespace: read/write/randread/randwrite,
#           4 KiB and 1 MiB, iodepth 1 and 32 (the ceiling); io_uring at
#           1 MiB; and each kvtier row's own shape (tests/bench/fio-raw.sh)
#   kvtier  kvtier.ko, the namespace attached, host_budget_mb = B; then
#           restore, pread, pwrite and writeback with checksum 1 and 0
#   swap    mkswap + swapon on the namespace, kvbench --target anon
#   pagecache  mkfs.ext4 + mount, kvbench --target file:<mnt>/kv.bin
#
# kvbench runs in a memory cgroup v2 with memory.max = B + SLACK for every
# system (for kvtier the pool is not charged to it: there the limit only
# bounds the process's own memory, as for the others the slack does).
#
# usage: tests/bench/guest.sh full|tiny BUILD OUT KO
#   writes OUT/bench.csv (header + rows) and OUT/guest.log lines on stdout
set -uo pipefail

mode=${1:?usage: guest.sh full|tiny BUILD OUT KO}
build=${2:?}
out=${3:?}
ko=${4:?}
top=$(cd "$(dirname "$0")/../.." && pwd)
kvb=$build/bench/kvbench
csv=$out/bench.csv
budget=64
slack=8
[[ $mode == tiny ]] && budget=8
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
# shellcheck source=tests/bench/fio-raw.sh
. "$top/tests/bench/fio-raw.sh"

log() { echo "bench: $*" >&2; }
fail=0

ns=
for ctrl in /sys/class/nvme/nvme*; do
	[[ -e $ctrl/serial ]] || continue
	[[ $(tr -d ' ' <"$ctrl/serial") == kvt0 ]] || continue
	for n in "$ctrl"/nvme*n1; do
		[[ -e $n ]] && ns=/dev/${n##*/}
	done
done
[[ -n $ns ]] || { log "no NVMe namespace with serial kvt0"; exit 1; }
log "namespace $ns, $(($(cat /sys/class/block/"${ns##*/}"/size) / 2048)) MiB; budget $budget MiB"

"$kvb" --header >"$csv"

# --- memory cgroup ------------------------------------------------------------
cg=/sys/fs/cgroup
if ! grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts; then
	mount -t cgroup2 none $cg || { log "cannot mount cgroup2"; exit 1; }
fi
echo +memory >$cg/cgroup.subtree_control
mkdir -p $cg/kvbench
echo $(((budget + slack) << 20)) >$cg/kvbench/memory.max
[[ -e $cg/kvbench/memory.swap.max ]] && echo max >$cg/kvbench/memory.swap.max

# bench SYSTEM TARGET ARGS...: one kvbench run in the cgroup, rows to the CSV.
# A crash or a run that printed no row counts as a failure.
bench() {
	local sys=$1 target=$2 rows st
	shift 2
	rows=$(bash -c 'echo $$ >'"$cg"'/kvbench/cgroup.procs && exec "$@"' _ \
		"$kvb" --target "$target" --system "$sys" --budget-mb "$budget" \
		--dev "$ns" --cdf "$out/cdf.txt" "$@")
	st=$?
	if [[ -n $rows ]]; then
		printf '%s\n' "$rows" >>"$csv"
		printf '%s\n' "$rows" | cut -d, -f1-5,8-10,12-14,19-21 | sed 's/^/  /'
	fi
	if ((st != 0)) || [[ -z $rows ]]; then
		log "FAILED: kvbench $sys $* (status $st)"
		fail=1
	fi
}

# The workload list, the same for every system. The scaling runs (kvtier
# only) vary the restored region's size and the number of sequences.
workloads() {
	local sys=$1 t=$2
	if [[ $mode == tiny ]]; then
		bench "$sys" "$t" --tiny --ratio 2 decode
		return
	fi
	bench "$sys" "$t" hot
	bench "$sys" "$t" restore
	for r in 0.5 1 2 4; do
		bench "$sys" "$t" --ratio $r --nseq 4 --steps 2 decode
	done
	bench "$sys" "$t" --model llama-70b --ratio 2 --nseq 4 --steps 2 decode
	bench "$sys" "$t" --ratio 2 --nseq 8 --tokens 128 churn
	bench "$sys" "$t" --ratio 4 writeback
}

scaling() {
	local t=$1 mb n
	for mb in 64 128 256 512; do
		bench kvtier-scale "$t" --restore-mb $mb restore
	done
	for n in 1 4 16 64; do
		bench kvtier-scale "$t" --ratio 2 --nseq $n --steps 1 decode
	done
}

secs() { date +%s; }
# Host memory of the guest: a pool that keeps to its budget gives it back.
memavail() {
	awk '/^(MemFree|MemAvailable):/ { printf "%s %d MiB ", $1, $2 / 1024 }' /proc/meminfo
}

# --- raw device: fio ----------------------------------------------------------
if [[ $mode == full ]]; then
	t0=$(secs)
	log "raw: fio on $ns"
	# Writes first: reads of never-written (sparse) blocks would cost
	# the emulated device nothing. The 16 libaio shapes, then io_uring
	# at 1 MiB, and the restore row's own shape (64 KiB, one at a time).
	shapes=()
	for rw in write randwrite read randread; do
		for bs in 4k 1M; do
			for qd in 1 32; do
				shapes+=("$rw:$bs:$qd")
			done
		done
	done
	shapes+=(write:1M:1:io_uring write:1M:32:io_uring read:1M:1:io_uring
		read:1M:32:io_uring read:64k:1 read:64k:1:io_uring
		write:4M:1:libaio:fsync write:4M:1:io_uring:fsync read:4M:1
		read:4M:1:io_uring)
	fio_raw "$ns" "$out" "$csv" "${shapes[@]}" || fail=1
	log "raw: $(($(secs) - t0)) s"
fi

[[ $mode == tiny ]] || {
# --- Linux swap -------------------------------------------------------------------
t0=$(secs)
log "swap: mkswap + swapon $ns"
if mkswap -q "$ns" >/dev/null && swapon "$ns"; then
	workloads swap anon
	swapoff "$ns" || fail=1
else
	log "FAILED: swap setup"
	fail=1
fi
log "swap: $(($(secs) - t0)) s"

# --- ext4 file, page cache ----------------------------------------------------
t0=$(secs)
modprobe -q ext4 || true
mnt=/tmp/bench-ext4
mkdir -p $mnt
log "pagecache: mkfs.ext4 $ns, mount $mnt"
if mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$ns" &&
	mount -t ext4 "$ns" $mnt; then
	workloads pagecache file:$mnt/kv.bin
	umount $mnt || fail=1
else
	log "FAILED: ext4 setup"
	fail=1
fi
log "pagecache: $(($(secs) - t0)) s"

}

# --- kvtier ---------------------------------------------------------------------
t0=$(secs)
log "kvtier: $ko"
if insmod "$ko" num_tiers=1; then
	sys=/sys/class/kvtier/kvtier0
	# The page-cache phase left ext4 there, which a plain attach refuses
	# to overwrite: format it (formatting attaches).
	echo "$ns" >$sys/format && echo $budget >$sys/host_budget_mb || fail=1
	grep -H . $sys/host_budget_mb $sys/readahead_kb $sys/writeback_batch_kb \
		$sys/max_inflight_kb $sys/watermark_high $sys/watermark_low 2>/dev/null |
		sed 's|.*/||; s/^/  /' >&2
	log "kvtier: before: $(memavail)"
	workloads kvtier kvtier:/dev/kvtier0
	log "kvtier: after the workloads: $(memavail)"
	# The explicit path, and every moving row with the CRC on (the
	# default) and off: kvtier-crc1 and kvtier-crc0.
	[[ $mode == full ]] && for c in 1 0; do
		echo $c >$sys/checksum || fail=1
		for w in restore pread pwrite pwrite-direct; do
			bench kvtier-crc$c kvtier:/dev/kvtier0 --chunk-kb 4096 $w
		done
		bench kvtier-crc$c kvtier:/dev/kvtier0 --chunk-kb 1024 --qd 32 --restore-mb 128 pread-uring
		bench kvtier-crc$c kvtier:/dev/kvtier0 --ratio 4 writeback
	done
	echo 1 >$sys/checksum || fail=1
	[[ $mode == full ]] && scaling kvtier:/dev/kvtier0
	log "kvtier: after scaling: $(memavail)"
	cat /sys/kernel/debug/kvtier/kvtier0/stats >"$out/kvtier-stats.txt" 2>/dev/null
	cat /sys/kernel/debug/kvtier/kvtier0/latency >"$out/kvtier-latency.txt" 2>/dev/null
	cat /sys/kernel/debug/kvtier/kvtier0/io >"$out/kvtier-io.txt" 2>/dev/null
	echo none >$sys/backing_dev || fail=1
	rmmod kvtier || fail=1
	log "kvtier: after rmmod: $(memavail)"
else
	log "FAILED: insmod $ko"
	fail=1
fi
log "kvtier: $(($(secs) - t0)) s"

rmdir $cg/kvbench 2>/dev/null
exit $fail
