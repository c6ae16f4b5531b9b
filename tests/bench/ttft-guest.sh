#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside the TTFT benchmark VM (tests/bench/run.sh --ttft boots it): time
# to first token of a kvtier.llama model, recompute against restoring the
# prompt's KV blocks from a kvtier.kvstore, in one boot, on one NVMe
# namespace (serial kvt0). For each model M and prompt length N:
#
#   store    process 1 (python/tests/reuse_tool.py store): prefill an
#            N-token prompt (seed N), put its KV blocks in the kvstore
#   drop     detach + rmmod: nothing of the blocks stays in host memory
#   fio      with the module unloaded, fio reads the blocks' slots from
#            the raw namespace (tests/bench/nslayout.py finds them in the
#            checkpoint): --bs of one region at iodepth 1 (what the
#            store's synchronous reads issue) and 128 KiB at iodepth 16
#            (the device's speed); --direct=1, libaio
#   load     insmod + attach
#   restore  process 2 (reuse_tool.py restore): the prompt plus a
#            KVTIER_TTFT_SUFFIX-token suffix; restore the longest stored
#            prefix, prefill the rest, decode; then a full recompute in
#            the same process; bit identity and the control are checked
#            (a failed check fails the run); one CSV row of times
#            (--clear: then the blocks are deleted)
#
# Knobs (tests/bench/run.sh passes them in): KVTIER_TTFT_RUNS, models and
# their prompt lengths ("tiny:512,1024,2048,4096 small:512,1024": torch
# under TCG runs some 25 times slower than on the host, so the small
# model stops early), KVTIER_TTFT_SUFFIX (32), KVTIER_TTFT_DECODE (8),
# KVTIER_TTFT_BUDGET_MB (256).
#
# usage: tests/bench/ttft-guest.sh BUILD OUT KO
#   writes OUT/ttft.csv (reuse_tool.py's rows) and OUT/fio.csv
#   (model,tokens,bytes,job,bs,iodepth,seconds,gbps); progress on stderr
set -uo pipefail

build=${1:?usage: ttft-guest.sh BUILD OUT KO}
out=${2:?}
ko=${3:?}
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${KVTIER_TTFT_RUNS:-tiny:512,1024,2048,4096 small:512,1024}
suffix=${KVTIER_TTFT_SUFFIX:-32}
decode=${KVTIER_TTFT_DECODE:-8}
budget=${KVTIER_TTFT_BUDGET_MB:-256}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
py=/usr/bin/python3
sys=/sys/class/kvtier/kvtier0
csv=$out/ttft.csv
fcsv=$out/fio.csv
fail=0

log() { echo "bench: $*" >&2; }

ns=$("$top/tests/bench/nslayout.py" --find kvt0) ||
	{ log "no NVMe namespace with serial kvt0"; exit 1; }
log "ttft: namespace $ns; runs $runs; suffix $suffix, decode $decode;" \
	"budget $budget MiB"

load() {
	insmod "$ko" num_tiers=1 && echo "$ns" >$sys/backing_dev &&
		echo "$budget" >$sys/host_budget_mb
}

unload() {
	echo none >$sys/backing_dev && rmmod kvtier
}

# tool ARGS...: reuse_tool.py with this tree's package and library.
tool() {
	PYTHONPATH=$top/python KVTIER_LIBRARY=$top/lib/libkvtier.so.0 \
		PYTHONDONTWRITEBYTECODE=1 $py "$top/python/tests/reuse_tool.py" "$@"
}

# fio_rows MODEL N PREFIX BS: the raw-namespace baseline: as many bytes as
# the regions named PREFIX* have pages, from their lowest slot on (their
# slots are one run on this fresh namespace; the log says when not).
fio_rows() {
	local js=$out/fio-$1-$2.json off npg lo hi what
	read -r off npg lo hi what <<<"$("$top/tests/bench/nslayout.py" --prefix "$ns" "$3")"
	log "fio: $3*: ${npg:-0} pages, slots ${lo:--}..${hi:--} (${what:-failed})"
	if [[ ${hi:--} == - ]]; then
		log "FAILED: no slots of $3* on $ns"
		fail=1
		return 1
	fi
	((hi - lo + 1 == npg)) || log "fio: the slots are not one run: fio reads from the lowest"
	if ! fio --filename="$ns" --direct=1 --rw=read --ioengine=libaio \
		--offset="$off" --size="$((npg * 4096))" --output-format=json \
		--name="fio-bs$4-qd1" --bs="$4" --iodepth=1 --stonewall \
		--name=fio-bs128k-qd16 --bs=128k --iodepth=16 --stonewall \
		>"$js" 2>"${js%.json}.err"; then
		log "FAILED: fio (see ${js%.json}.err)"
		fail=1
		return 1
	fi
	$py - "$js" "$1" "$2" >>"$fcsv" <<'EOF'
import json, sys
js, model, n = sys.argv[1:]
for job in json.load(open(js))["jobs"]:
    r, o = job["read"], job["job options"]
    secs = r["runtime"] / 1000
    gbps = r["io_bytes"] / secs / 1e9 if secs else 0
    print(",".join([model, n, str(r["io_bytes"]), job["jobname"], o["bs"],
                    o["iodepth"], "%.4f" % secs, "%.4f" % gbps]))
EOF
}

echo "model,tokens,bytes,job,bs,iodepth,seconds,gbps" >"$fcsv"
rm -f "$csv"
t0=$SECONDS
load || { log "FAILED: insmod $ko / attach $ns"; exit 1; }
for run in $runs; do
	model=${run%%:*}
	IFS=, read -ra lens <<<"${run#*:}"
	for n in "${lens[@]}"; do
		pfx=${model:0:1}$n.
		args=(--model "$model" --seed "$n" --tokens "$n" --prefix "$pfx")
		log "$model N=$n: store"
		tool "${args[@]}" store --csv "$out/store-s" >&2 || { fail=1; break 2; }
		# The bytes a block's region takes: header page + block.
		read -r _ rbytes <"$out/store-s"
		unload || { log "FAILED: unload"; fail=1; break 2; }
		fio_rows "$model" "$n" "$pfx" "$rbytes"
		load || { log "FAILED: reload"; fail=1; break 2; }
		log "$model N=$n: restore"
		tool "${args[@]}" restore --suffix "$suffix" --decode "$decode" \
			--csv "$csv" --store-time "$out/store-s" --clear >&2 || fail=1
	done
done
unload || fail=1
log "ttft: $((SECONDS - t0)) s, status $fail"
exit $fail
