#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the reuse benchmark VM (tests/bench/run.sh --reuse boots it): KV
# that outlives the process and the module. On one NVMe namespace (serial
# kvt0), in one boot:
#
#   persist        kvbench creates a persistent named region of R MiB
#                  (KV-shaped: Llama-3.1-8B tokens), writes a pattern
#                  through mmap and fsyncs it
#   drop           detach, rmmod, insmod, attach again (the region comes
#                  back by name, from the namespace, nothing resident):
#                  "reload". If that cannot be done, POSIX_FADV_DONTNEED
#                  with 0 resident bytes checked in KVTIER_IOC_REGION_LIST:
#                  "dontneed" (KVTIER_REUSE_DROP=dontneed: only that). The
#                  note column says which ran.
#   restore-mmap   WILLNEED over the region, then touch every page; verify
#   restore-pread  pread in 1 MiB chunks into a user buffer; verify
#   restore-fault  touch every page, no fadvise (the fault path); verify
#                  each of the three after its own drop, in KVTIER_REUSE_ROUNDS
#                  rounds (2)
#   fio            in every other reload window, with the module unloaded: fio
#                  --direct=1 --rw=read --bs=1M --ioengine=libaio
#                  --iodepth=16 (and 1, first window only) over the same
#                  number of bytes of the raw namespace, from the region's
#                  first data slot (read from the on-namespace superblock
#                  and checkpoint)
#   unlink, detach, rmmod
#
# Knobs (tests/bench/run.sh passes them in): KVTIER_REUSE_BUDGET_MB (512),
# KVTIER_REUSE_MB (half the budget), KVTIER_REUSE_ROUNDS (2),
# KVTIER_REUSE_DROP (reload; dontneed: the fallback only),
# KVTIER_REUSE_CHECKSUM (0 or 1; unset: the module's default).
#
# usage: tests/bench/reuse-guest.sh BUILD OUT KO
#   writes OUT/bench.csv (header + rows); progress on stderr
set -uo pipefail

build=${1:?usage: reuse-guest.sh BUILD OUT KO}
out=${2:?}
ko=${3:?}
top=$(cd "$(dirname "$0")/../.." && pwd)
kvb=$build/bench/kvbench
csv=$out/bench.csv
# Sizes: the region is half the budget, as 1 GiB of KV (8192 tokens of
# Llama-3.1-8B) would be in a 2 GiB pool; scaled down 4x for the TCG guest.
budget=${KVTIER_REUSE_BUDGET_MB:-512}
region=${KVTIER_REUSE_MB:-}
[[ -n $region ]] || region=$((budget / 2))
rounds=${KVTIER_REUSE_ROUNDS:-2}
# KVTIER_REUSE_CHECKSUM=0|1: the checksum knob after every attach (unset:
# the module's default, on).
checksum=${KVTIER_REUSE_CHECKSUM:-}
name=kvbench-reuse
seed=$(($(date +%s) % 100000 + 1))
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
py=/usr/bin/python3
sys=/sys/class/kvtier/kvtier0
dbg=/sys/kernel/debug/kvtier/kvtier0

log() { echo "bench: $*" >&2; }
secs() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(secs)" 'BEGIN { printf "%.1f", b - a }'; }
# KVTIER_REUSE_DROP=dontneed skips the reload (to measure the fallback).
drop_want=${KVTIER_REUSE_DROP:-reload}
fail=0
drop_how=none
fio_state=

ns=$("$(dirname "$0")/nslayout.py" --find kvt0)
[[ -n $ns ]] || { log "no NVMe namespace with serial kvt0"; exit 1; }
log "reuse: namespace $ns, $(($(cat /sys/class/block/"${ns##*/}"/size) / 2048)) MiB;" \
	"budget $budget MiB, region $region MiB ($((region * 8)) tokens of Llama-3.1-8B), seed $seed"

"$kvb" --header >"$csv"

# kvbench STEP ARGS...: one reuse step; its row to the CSV and the console.
# Every step but drop and unlink must print a row.
kvbench() {
	local rows st
	rows=$("$kvb" --target kvtier:/dev/kvtier0 --system kvtier-reuse \
		--budget-mb "$budget" --restore-mb "$region" --name $name \
		--seed "$seed" --dev "$ns" --cdf "$out/cdf.txt" "$@")
	st=$?
	if [[ -n $rows ]]; then
		printf '%s\n' "$rows" >>"$csv"
		printf '%s\n' "$rows" | cut -d, -f2,8,9,12-13,25-26,28,33 | sed 's/^/  /'
	fi
	if ((st != 0)) || [[ -z $rows && $1 != drop && $1 != unlink ]]; then
		log "FAILED: kvbench $* (status $st)"
		fail=1
		return 1
	fi
}

attach() {
	echo "$ns" >$sys/backing_dev && echo "$budget" >$sys/host_budget_mb || return 1
	[[ -z $checksum ]] || echo "$checksum" >$sys/checksum
}

load() {
	insmod "$ko" num_tiers=1 || return 1
	attach || return 1
}

unload() {
	echo none >$sys/backing_dev || return 1
	rmmod kvtier || return 1
}

# fio_rows TAG QD...: the raw-device baseline, while nothing holds the
# namespace: the same number of bytes as the region, from its first data
# slot on, at each iodepth QD.
fio_off=
fio_json=()
fio_rows() {
	local tag=$1 qd t0 js jobs=()
	if [[ -z $fio_off ]]; then
		t0=$(secs)
		fio_where
		log "fio: found the region's slots in $(since "$t0") s"
	fi
	# One fio process, the depths one after another: under TCG starting
	# fio takes longer than reading the region.
	for qd in "${@:2}"; do
		jobs+=(--name="fio-reuse-read-1M-qd$qd" --iodepth="$qd" --stonewall)
	done
	t0=$(secs)
	js=$out/fio-$tag.json
	if fio --filename="$ns" --direct=1 --rw=read --bs=1M --ioengine=libaio \
		--offset="$fio_off" --size="${region}M" --output-format=json \
		"${jobs[@]}" >"$js" 2>"${js%.json}.err"; then
		fio_json+=("$js" "$tag; $fio_state")
		log "fio: $tag iodepth ${*:2}: $(grep -o '"bw_bytes" : [0-9]*' "$js" |
			awk '$3 > 0 { printf "%.4f GB/s ", $3 / 1e9 }')in $(since "$t0") s with startup"
	else
		log "FAILED: fio (see ${js%.json}.err)"
		fail=1
	fi
}

# fio_csv: the fio runs' rows, in the CSV's columns (one python start for
# all: under TCG it takes seconds).
fio_csv() {
	((${#fio_json[@]})) || return 0
	local i args=()
	for ((i = 0; i < ${#fio_json[@]}; i += 2)); do
		args+=("${fio_json[i]}" "${fio_json[i + 1]}; raw namespace from byte $fio_off")
	done
	$py "$top/tests/bench/fio2csv.py" "$csv" "${args[@]}" 2>/dev/null
}

# fio_where: sets fio_off, the byte offset of the region's first data slot,
# from the newest superblock copy and its checkpoint (0 if not found).
fio_where() {
	local where off npg lo hi what
	where=$("$(dirname "$0")/nslayout.py" --region "$ns" $name) || where="0 0 - - parse-failed"
	read -r off npg lo hi what <<<"$where"
	log "fio: region $name: $npg page records, slots $lo..$hi ($what); reading $region MiB at byte $off"
	if [[ $hi == - ]] || ((npg != region * 256 || hi - lo + 1 != npg)); then
		log "fio: the region's slots are not one contiguous run of $((region * 256)):" \
			"fio reads $region MiB from byte $off anyway"
	fi
	fio_off=$off
}

# drop TAG [QD...]: the region out of host memory, the module's way. Sets
# drop_how to reload (unload + load + attach), or dontneed (fallback).
# Runs fio at the given depths while the module is unloaded.
drop() {
	local tag=$1 t0 tu
	shift
	t0=$(secs)
	if [[ $drop_want == reload ]] && unload; then
		tu=$(since "$t0")
		fio_state="module unloaded"
		(($#)) && fio_rows "$tag" "$@"
		t0=$(secs)
		if load; then
			drop_how=reload
			log "drop: reload: detach + rmmod $tu s, insmod + attach $(since "$t0") s"
			return 0
		fi
		log "FAILED: reload: the module did not come back"
		fail=1
		return 1
	fi
	[[ $drop_want == reload ]] && log "drop: reload failed; falling back to POSIX_FADV_DONTNEED"
	[[ -d $sys ]] && [[ $(cat $sys/backing_dev 2>/dev/null) != none ]] || attach ||
		{ log "FAILED: cannot re-attach"; fail=1; return 1; }
	fio_state="tier attached"
	(($#)) && fio_rows "$tag" "$@"
	kvbench drop || return 1
	drop_how=dontneed
}

t0=$(secs)
if ! load; then
	log "FAILED: insmod $ko / attach $ns"
	exit 1
fi
grep -H . $sys/host_budget_mb $sys/readahead_kb $sys/max_inflight_kb $sys/checksum 2>/dev/null |
	sed 's|.*/||; s/^/  /' >&2

kvbench persist --note "fresh namespace" || exit 1
cat $dbg/stats >"$out/stats-persist.txt" 2>/dev/null

# Each restore method once per round, each after its own drop, with fio
# while the module is unloaded in every other window (iodepth 16; also 1
# in the first window).
w=0
for ((round = 1; round <= rounds; round++)); do
	for how in restore-mmap restore-pread restore-fault; do
		w=$((w + 1))
		qds=()
		((w % 2)) && qds=(16)
		((w == 1)) && qds=(16 1)
		drop window$w "${qds[@]}" || break 2
		kvbench $how --note "drop: $drop_how; round $round; checksum $(cat $sys/checksum)" ||
			break 2
	done
done
cat $dbg/stats >"$out/kvtier-stats.txt" 2>/dev/null
cat $dbg/latency >"$out/kvtier-latency.txt" 2>/dev/null
cat $dbg/io >"$out/kvtier-io.txt" 2>/dev/null
kvbench unlink
unload || fail=1
fio_csv || fail=1
grep '^raw,' "$csv" | cut -d, -f2,7-9,12-13 | sed 's/^/  /' >&2
log "reuse: $(since "$t0") s, drop: $drop_how"
exit $fail
