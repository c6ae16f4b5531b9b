#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the A/B benchmark VM (tests/bench/run.sh --ab boots it): two
# builds of kvtier.ko, A (the baseline) and B (the change), measured in the
# same boot on the same namespace (serial kvt0), alternating A B A B ...,
# with raw fio sequential 1 MiB read and write at iodepth 1 and 32 first,
# so every kvtier row has its ceiling from the same boot (and crcspeed's
# CRC32C rates of the guest CPU before that).
#
# Per module and round: insmod, attach, host_budget_mb = 64, then
#   restore    kvbench restore (B/2 = 32 MiB written, DONTNEED, read back)
#   writeback  kvbench --ratio 2 writeback (128 MiB through a 64 MiB pool)
#   decode     kvbench --ratio 2 --nseq 4 --steps 2 decode (make bench's row)
#   churn      kvbench --ratio 2 --nseq 8 --tokens 128 churn (likewise)
#   pwrite     kvbench pwrite: the restore's size written by pwrite in 4 MiB
#              calls, then fsync
#   pread      kvbench pread: the same written, dropped, read back by pread
#              in 4 MiB calls and checked
# then detach and rmmod. The module's stats, latency and io files after
# each run go to OUT/<label>-<round>-*.txt.
#
# Round 0 is a warm-up of A, every workload once, not recorded: the first
# run of a boot pays for what the rounds after it find ready (under TCG,
# the translation of the kernel's and kvbench's code; the page cache), and
# with the first recorded row always A's, it biased every B/A upwards.
#
# Knobs: KVTIER_AB_ROUNDS (2), KVTIER_AB_WORKLOADS ("restore writeback"),
# KVTIER_AB_WARMUP (1; 0 skips round 0),
# KVTIER_AB_CHECKSUM (0 or 1; unset: the module's default),
# KVTIER_AB_RESTORE_MB (32), KVTIER_AB_PARAMS_A and KVTIER_AB_PARAMS_B
# (module parameters for insmod of A and of B, e.g. crc32c=lib; with
# KVTIER_AB_BASE=HEAD that measures one build under two parameters).
#
# usage: tests/bench/ab-guest.sh BUILD OUT KO_A KO_B
#   writes OUT/bench.csv (header + rows); progress on stderr
set -uo pipefail

build=${1:?usage: ab-guest.sh BUILD OUT KO_A KO_B}
out=${2:?}
ko_a=${3:?}
ko_b=${4:?}
kvb=$build/bench/kvbench
csv=$out/bench.csv
budget=64
rounds=${KVTIER_AB_ROUNDS:-2}
workloads=${KVTIER_AB_WORKLOADS:-restore writeback}
checksum=${KVTIER_AB_CHECKSUM:-}
restore_mb=${KVTIER_AB_RESTORE_MB:-32}
params_a=${KVTIER_AB_PARAMS_A:-}
params_b=${KVTIER_AB_PARAMS_B:-}
warmup=${KVTIER_AB_WARMUP:-1}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/bench/fio-raw.sh
. "$top/tests/bench/fio-raw.sh"
sys=/sys/class/kvtier/kvtier0
dbg=/sys/kernel/debug/kvtier/kvtier0
fail=0

log() { echo "bench: $*" >&2; }

ns=
for ctrl in /sys/class/nvme/nvme*; do
	[[ -e $ctrl/serial ]] || continue
	[[ $(tr -d ' ' <"$ctrl/serial") == kvt0 ]] || continue
	for n in "$ctrl"/nvme*n1; do
		[[ -e $n ]] && ns=/dev/${n##*/}
	done
done
[[ -n $ns ]] || { log "no NVMe namespace with serial kvt0"; exit 1; }
log "ab: namespace $ns; budget $budget MiB; rounds $rounds; $workloads"

"$kvb" --header >"$csv"

# What a CRC32C costs here, by table and by the crc32 instruction: under
# TCG the instruction is the slower one (tools/bench/crcspeed.c).
"$build/bench/crcspeed" 64 | sed 's/^/crcspeed guest: /' >&2

# Raw ceiling first (writes before reads: sparse blocks read for free),
# libaio and io_uring: 1 MiB at iodepth 1 and 32, and each kvtier row's
# own shape: restore touches 64 KiB at a time, pread and pwrite (with its
# fsync) move 4 MiB per call.
shapes=()
for eng in libaio io_uring; do
	shapes+=("write:1M:1:$eng" "write:1M:32:$eng" "write:4M:1:$eng:fsync"
		"read:1M:1:$eng" "read:1M:32:$eng" "read:4M:1:$eng" "read:64k:1:$eng")
done
fio_raw "$ns" "$out" "$csv" "${shapes[@]}" || fail=1

# run LABEL ROUND KO: one module's workloads; round 0's rows are not kept.
run() {
	local label=$1 round=$2 ko=$3 w rows params
	params=$params_a
	[[ $label == B ]] && params=$params_b
	# shellcheck disable=SC2086 # the parameters are words
	if ! insmod "$ko" num_tiers=1 $params; then
		log "FAILED: insmod $ko $params"
		fail=1
		return
	fi
	# fio's data is not a kvtier namespace: format it at every attach.
	echo "$ns" >$sys/format && echo $budget >$sys/host_budget_mb || fail=1
	[[ -n $checksum ]] && { echo "$checksum" >$sys/checksum || fail=1; }
	for w in $workloads; do
		case $w in
		restore) set -- --restore-mb "$restore_mb" restore ;;
		writeback) set -- --ratio 2 writeback ;;
		decode) set -- --ratio 2 --nseq 4 --steps 2 decode ;;
		churn) set -- --ratio 2 --nseq 8 --tokens 128 churn ;;
		pwrite | pwrite-direct | pread)
			set -- --restore-mb "$restore_mb" --chunk-kb 4096 "$w" ;;
		pread-uring | pwrite-uring)
			# Four times pread's bytes: 32 requests in flight need
			# more than one batch to reach a steady state.
			set -- --restore-mb $((restore_mb * 4)) --chunk-kb 1024 --qd 32 "$w" ;;
		*) set -- "$w" ;;
		esac
		echo 0 >$dbg/latency 2>/dev/null
		rows=$("$kvb" --target kvtier:/dev/kvtier0 --system "kvtier-$label" \
			--budget-mb $budget --dev "$ns" "$@")
		if [[ -z $rows ]]; then
			log "FAILED: kvbench $label $*"
			fail=1
			continue
		fi
		printf '%s\n' "$rows" | cut -d, -f1,2,9,12-13,19-21 |
			sed "s/^/  r$round /" >&2
		((round)) || continue
		printf '%s\n' "$rows" >>"$csv"
		cat $dbg/stats >"$out/$label-$round-$w-stats.txt" 2>/dev/null
		cat $dbg/latency >"$out/$label-$round-$w-latency.txt" 2>/dev/null
		cat $dbg/io >"$out/$label-$round-$w-io.txt" 2>/dev/null
	done
	echo none >$sys/backing_dev || fail=1
	rmmod kvtier || fail=1
}

[[ $warmup == 0 ]] || { log "warm-up (round 0, not recorded)"; run A 0 "$ko_a"; }
for ((r = 1; r <= rounds; r++)); do
	run A $r "$ko_a"
	run B $r "$ko_b"
done
exit $fail
