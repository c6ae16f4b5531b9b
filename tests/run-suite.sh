#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the test VM (tests/vm/run.sh): every kselftest program of the
# suite against the kvtier.ko built for the running kernel. Output is TAP,
# also written to OUT/tap.log for tests/check.sh to count.
# KVTIER_FABRICS=tcp|loop runs them with KVTIER_NS0 on an NVMe over
# Fabrics namespace (see below and tests/fabrics/run.sh).
#
# usage: tests/run-suite.sh BUILD OUT [TEST...]
#   BUILD  the build directory (BUILD/<kver>/kvtier.ko, BUILD/tests/*)
#   OUT    writable directory for results
#   TEST   test programs to run (default: all of BUILD/tests/*_test)
set -uo pipefail

build=${1:?usage: run-suite.sh BUILD OUT [TEST...]}
out=${2:?usage: run-suite.sh BUILD OUT [TEST...]}
shift 2

kver=$(uname -r)
export KVTIER_KO=$build/$kver/kvtier.ko
if [[ ! -f $KVTIER_KO ]]; then
	echo "run-suite: no module for $kver at $KVTIER_KO" >&2
	exit 1
fi

# Name the namespaces by the serial the rig gave them (kvt0, kvt1), not by
# probe order.
for ctrl in /sys/class/nvme/nvme*; do
	[[ -e $ctrl/serial ]] || continue
	serial=$(tr -d ' ' <"$ctrl/serial")
	for ns in "$ctrl"/nvme*n1; do
		[[ -e $ns ]] || continue
		case $serial in
		kvt0) export KVTIER_NS0=/dev/${ns##*/} ;;
		kvt1) export KVTIER_NS1=/dev/${ns##*/} ;;
		esac
	done
done

# KVTIER_FABRICS=tcp|loop: the same tests over NVMe over Fabrics. The
# nvmet target (tests/fabrics/nvmet.sh) exports the local KVTIER_NS0 on
# 127.0.0.1, the guest connects to it and KVTIER_NS0 becomes the fabrics
# namespace; KVTIER_NS1 stays local. Torn down on exit.
if [[ -n ${KVTIER_FABRICS:-} ]]; then
	nvmet=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fabrics/nvmet.sh
	export KVT_NVMET_STATE=/run/kvtier-nvmet-suite
	if ! fab=$("$nvmet" setup --transport "$KVTIER_FABRICS" --backing "${KVTIER_NS0:-}" \
		--nqn nqn.2024-11.io.kvtier:suite --ctrl-loss-tmo 60); then
		echo "not ok fabrics setup ($KVTIER_FABRICS over ${KVTIER_NS0:-no namespace})" |
			tee "$out/tap.log"
		exit 1
	fi
	echo "# KVTIER_FABRICS=$KVTIER_FABRICS: KVTIER_NS0=$fab (nvmet over $KVTIER_NS0)"
	export KVTIER_NS0=$fab
	trap '"$nvmet" teardown' EXIT
fi

# Tests that mount need the filesystem registered; the rig's modprobe works.
modprobe -q ext4 || true

# make check fuzzes with the seeds the tree keeps (kvtier_fuzz_test.c).
export KVTIER_FUZZ_SEEDS=${KVTIER_FUZZ_SEEDS:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fuzz-seeds.txt}

# Every program starts from the same tier state, whatever the one before
# did or how it failed: no kvtier module loaded (its tiers detached first),
# no loop or device-mapper device, and blank namespaces (the kvtier
# superblocks, blocks 0-16, and the lease block at the end zeroed: the
# next attach formats them). What had to be undone after a program is
# said on a "# cleanup" line; a state that cannot be reset fails the run.
wipe_ns() {
	local dev=$1 blocks
	[[ -b $dev ]] || return 0
	blocks=$(($(blockdev --getsize64 "$dev") / 4096))
	dd if=/dev/zero of="$dev" bs=4096 count=17 oflag=direct status=none &&
		dd if=/dev/zero of="$dev" bs=4096 seek=$((blocks - 1)) count=1 \
			oflag=direct status=none
}
reset_state() {
	local prev=$1 left=() t n
	if [[ -d /sys/module/kvtier ]]; then
		left+=("kvtier still loaded")
		for t in /sys/class/kvtier/kvtier*/backing_dev; do
			[[ -e $t ]] && echo none >"$t" 2>/dev/null
		done
		for n in 1 2 3 4 5 6 7 8 9 10; do
			rmmod kvtier 2>/dev/null && break
			sleep 1
		done
	fi
	if n=$(dmsetup ls 2>/dev/null | grep -vc '^No devices found') && ((n > 0)); then
		left+=("$n device-mapper devices")
		dmsetup remove_all --force >/dev/null 2>&1
	fi
	n=$(losetup -n -l 2>/dev/null | wc -l)
	if ((n > 0)); then
		left+=("$n loop devices")
		losetup -D
	fi
	if ((${#left[@]})); then
		echo "# cleanup after $prev: ${left[*]}: undone" | tee -a "$out/tap.log"
	fi
	if [[ -d /sys/module/kvtier ]]; then
		echo "not ok reset after $prev # kvtier cannot be unloaded" | tee -a "$out/tap.log"
		return 1
	fi
	if ! wipe_ns "${KVTIER_NS0:-}" || ! wipe_ns "${KVTIER_NS1:-}"; then
		echo "not ok reset after $prev # cannot wipe the namespaces" | tee -a "$out/tap.log"
		return 1
	fi
}

# Copies a program's TAP stream and writes how long each of its tests ran
# (from its "#  RUN" line to its "ok"/"not ok" line) to OUT/times.log, so
# the suite's time can be read test by test (the slowest are listed at the
# end). usage: ... | time_tests PROGRAM
usec() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }
time_tests() {
	local prog=$1 line start now
	start=$(usec)
	while IFS= read -r line; do
		printf '%s\n' "$line"
		case $line in
		"#  RUN "*) start=$(usec) ;;
		"ok "* | "not ok "*)
			now=$(usec)
			printf '%d.%d s\t%s %s\n' $(((now - start) / 1000000)) \
				$(((now - start) / 100000 % 10)) "$prog" \
				"$(sed -E 's/^(not )?ok [0-9]+ //' <<<"$line")" >>"$out/times.log"
			start=$now
			;;
		esac
	done
}

if [[ $# -eq 0 ]]; then
	set -- "$build"/tests/*_test
fi

# OUT/suite-done lists the programs that have finished. A boot that
# tests/vm/run.sh --resume-after-stall makes after a guest timer stall
# creates OUT/resume-suite: the programs listed are not run again, and the
# one that was running when the guest stalled is run again from its start.
rc=0
if [[ -e $out/resume-suite && -f $out/suite-done ]]; then
	echo "# resumed after a guest timer stall (run.sh --resume-after-stall): $(wc -l <"$out/suite-done") programs had finished" |
		tee -a "$out/tap.log"
	grep -q '^rc ' "$out/suite-done" && rc=1
else
	: >"$out/tap.log"
	: >"$out/times.log"
	: >"$out/suite-done"
fi
prev=start
suite_start=$SECONDS
for t in "$@"; do
	name=${t##*/}
	if grep -qx -e "$name" -e "rc $name" "$out/suite-done"; then
		continue
	fi
	reset_state "$prev" || { rc=1; break; }
	prev=$name
	echo "# running $name" | tee -a "$out/tap.log"
	t0=$SECONDS
	"$t" 2>&1 | time_tests "$name" | tee "$out/$name.tap"
	st=${PIPESTATUS[0]}
	echo "# $name: $((SECONDS - t0)) s" | tee -a "$out/$name.tap"
	cat "$out/$name.tap" >>"$out/tap.log"
	# kselftest: 0 pass, 4 skip; anything else is a failure of the program.
	if [[ $st -ne 0 && $st -ne 4 ]]; then
		rc=1
	fi
	if ! grep -q '^# Totals:' "$out/$name.tap"; then
		echo "not ok $name # exited $st without a TAP summary" | tee -a "$out/tap.log"
		rc=1
	fi
	if ((rc)); then
		echo "rc $name" >>"$out/suite-done"
	else
		echo "$name" >>"$out/suite-done"
	fi
done
{
	echo "# suite: $((SECONDS - suite_start)) s; the slowest tests:"
	sort -rn "$out/times.log" | head -n 12 | sed 's/^/#   /'
} | tee -a "$out/tap.log"
exit $rc
