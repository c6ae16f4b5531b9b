#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the fabrics benchmark VM (tests/fabrics/bench.sh boots it): what
# the fabric costs a tier. One NVMe namespace (serial kvt0), reached three
# ways in one boot:
#
#   local   the emulated PCIe namespace itself
#   tcp     the same namespace exported by the kernel's nvmet target on
#           127.0.0.1 and connected with nvme-tcp (tests/fabrics/nvmet.sh)
#   loop    the same through nvme-loop, where the kernel has it (6.12):
#           the NVMe over Fabrics code without a network stack
#
# kvbench persist writes a persistent region of R MiB (KV-shaped) on the
# local namespace and fsyncs it; the tier is detached, and for each way
# (local, tcp, loop) it is attached again and, per round, restore-mmap,
# restore-pread and restore-fault each read the region back after
# POSIX_FADV_DONTNEED dropped it (nothing resident), verifying every byte.
# The region written locally is the region read over the fabric. fio
# (--direct=1, 1 MiB reads, iodepth 16 and 1) reads the same number of
# bytes from the start of each device while no tier holds it, after the
# region was written: the raw cost.
#
# Knobs: KVTIER_FAB_BUDGET_MB (256), KVTIER_FAB_MB (half the budget),
# KVTIER_FAB_ROUNDS (3).
#
# usage: tests/fabrics/bench-guest.sh BUILD OUT KO
#   writes OUT/bench.csv (kvbench's header + rows, system column
#   kvtier-local, kvtier-tcp, kvtier-loop, raw-local, ...); progress on
#   stderr
set -uo pipefail

build=${1:?usage: bench-guest.sh BUILD OUT KO}
out=${2:?}
ko=${3:?}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
nvmet=$here/nvmet.sh
kvb=$build/bench/kvbench
csv=$out/bench.csv
budget=${KVTIER_FAB_BUDGET_MB:-256}
region=${KVTIER_FAB_MB:-$((budget / 2))}
rounds=${KVTIER_FAB_ROUNDS:-3}
name=kvbench-fabrics
seed=$(($(date +%s) % 100000 + 1))
sys=/sys/class/kvtier/kvtier0
export KVT_NVMET_STATE=/run/kvtier-nvmet-bench
fail=0

log() { echo "bench: $*" >&2; }

ns=
for ctrl in /sys/class/nvme/nvme*; do
	[[ -e $ctrl/serial && $(tr -d ' ' <"$ctrl/serial") == kvt0 ]] || continue
	for n in "$ctrl"/nvme*n1; do
		[[ -e $n ]] && ns=/dev/${n##*/}
	done
done
[[ -n $ns ]] || { log "no NVMe namespace with serial kvt0"; exit 1; }
log "namespace $ns; budget $budget MiB, region $region MiB, $rounds rounds, seed $seed"

"$kvb" --header >"$csv"

# kvbench SYSTEM STEP ARGS...: one reuse step, its row to the CSV.
kvbench() {
	local system=$1 rows st
	shift
	rows=$("$kvb" --target kvtier:/dev/kvtier0 --system "$system" \
		--budget-mb "$budget" --restore-mb "$region" --name $name \
		--seed "$seed" "$@")
	st=$?
	if [[ -n $rows ]]; then
		printf '%s\n' "$rows" >>"$csv"
		printf '%s\n' "$rows" | cut -d, -f1,2,8,9,12,13,19-21 | sed 's/^/  /' >&2
	fi
	if ((st != 0)) || [[ -z $rows && $1 != drop && $1 != unlink ]]; then
		log "FAILED: kvbench $system $* (status $st)"
		fail=1
		return 1
	fi
}

# fio_rows SYSTEM DEV: raw 1 MiB reads of the region's size, iodepth 16
# and 1, as CSV rows (gbps, p50, p99, mean in kvbench's columns).
fio_rows() {
	local system=$1 dev=$2 js=$out/fio-$1.json
	if ! fio --filename="$dev" --direct=1 --rw=read --bs=1M --ioengine=libaio \
		--size="${region}M" --output-format=json \
		--name=fio-read-1M-qd16 --iodepth=16 --stonewall \
		--name=fio-read-1M-qd1 --iodepth=1 --stonewall >"$js" 2>"${js%.json}.err"; then
		log "FAILED: fio on $dev (${js%.json}.err)"
		fail=1
		return 1
	fi
	python3 "$here/../bench/fio2csv.py" --system "$system" "$csv" "$js" "" \
		2>/dev/null
	grep "^$system," "$csv" | cut -d, -f1,2,9,12,13 | sed 's/^/  /' >&2
}

attach() {
	echo "$1" >$sys/backing_dev && echo "$budget" >$sys/host_budget_mb
}

# restores SYSTEM: every round's three restores, each after a drop.
restores() {
	local r how
	for ((r = 1; r <= rounds; r++)); do
		for how in restore-mmap restore-pread restore-fault; do
			kvbench "$1" drop || return 1
			kvbench "$1" $how --note "round $r" || return 1
		done
	done
}

insmod "$ko" num_tiers=1 || { log "FAILED: insmod $ko"; exit 1; }
if ! echo "$ns" >$sys/format || ! echo "$budget" >$sys/host_budget_mb; then
	log "FAILED: format $ns"
	exit 1
fi
kvbench kvtier-local persist --note "written on the local namespace" || exit 1
restores kvtier-local || fail=1
echo none >$sys/backing_dev || fail=1
# Raw reads once the region is written: before, the emulated namespace's
# image is a sparse file whose holes read faster than data.
fio_rows raw-local "$ns"

for tr in tcp loop; do
	if ! "$nvmet" check --transport $tr 2>/dev/null; then
		log "$tr: no such transport in $(uname -r): skipped"
		continue
	fi
	if ! dev=$("$nvmet" setup --transport $tr --backing "$ns" --ctrl-loss-tmo 60); then
		log "FAILED: nvmet.sh setup --transport $tr"
		fail=1
		continue
	fi
	log "$tr: $ns exported, connected as $dev"
	fio_rows raw-$tr "$dev"
	if attach "$dev"; then
		restores kvtier-$tr || fail=1
		echo none >$sys/backing_dev || fail=1
	else
		log "FAILED: attach $dev"
		fail=1
	fi
	"$nvmet" teardown || fail=1
done
attach "$ns" && kvbench kvtier-local unlink
echo none >$sys/backing_dev
rmmod kvtier || fail=1
exit $fail
