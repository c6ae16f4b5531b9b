# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by the benchmark guests: the raw-namespace baseline, fio with
# O_DIRECT, one job per shape in one fio process (under TCG starting fio
# costs more than a job's 2 s), each job bracketed by tests/bench/snap.sh
# so its row has the same cpu_s and dev_* columns as kvbench's rows.
#
# fio_raw NS OUT CSV SHAPE...
#   SHAPE is RW:BS:QD[:ENGINE[:fsync]], e.g. read:1M:32 or
#   write:4M:1:io_uring:fsync (ENGINE libaio by default; fsync: an fsync at
#   the job's end, timed, as kvbench's pwrite row has). The job is named
#   fio-RW-BS-qdQD, with -uring after it for io_uring. Writes the JSON to
#   OUT/fio.json, the snapshots under OUT/snaps, appends the rows to CSV
#   (tests/bench/fio2csv.py) and prints them on stderr. Returns 1 if fio
#   failed.
fio_raw() {
	local ns=$1 out=$2 csv=$3 shape rw bs qd eng sync name snaps jobs=()
	local here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	shift 3
	snaps=$out/snaps
	mkdir -p "$snaps"
	for shape in "$@"; do
		IFS=: read -r rw bs qd eng sync <<<"$shape"
		eng=${eng:-libaio}
		name=fio-$rw-$bs-qd$qd
		[[ $eng == io_uring ]] && name+=-uring
		jobs+=(--name="$name" --rw="$rw" --bs="$bs" --iodepth="$qd"
			--ioengine="$eng" --stonewall
			--exec_prerun="$here/snap.sh ${ns##*/} $snaps/$name.pre"
			--exec_postrun="$here/snap.sh ${ns##*/} $snaps/$name.post")
		[[ $sync == fsync ]] && jobs+=(--end_fsync=1)
	done
	# fio saves each exec_*run's output in its working directory.
	if ! (cd "$snaps" && fio --filename="$ns" --direct=1 --size=512M \
		--runtime=2 --time_based --output-format=json \
		--output="$out/fio.json" "${jobs[@]}" >"$out/fio.err" 2>&1); then
		echo "bench: FAILED: fio (see $out/fio.err)" >&2
		return 1
	fi
	/usr/bin/python3 "$here/fio2csv.py" --snaps "$snaps" "$csv" \
		"$out/fio.json" ""
}
