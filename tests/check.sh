#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: everything that proves kvtier works, in one run.
#
#   host:  checkpatch --strict, W=1 builds for each supported kernel,
#          DKMS add/build/install for each (private trees)
#   guest: for each kernel (side by side), boot it in QEMU with emulated
#          NVMe namespaces and run the kselftest suite (tests/run-suite.sh); the guest's
#          kernel log must be clean (tests/vm/run.sh gates it); then the
#          multi-boot persistence tests (tests/persist/run.sh: reboot,
#          host-side corruption, kvtier.conf at boot, 8 and 15 TiB
#          namespaces, crash cuts by killing QEMU, the same for the
#          Python kvstore)
#
# Prints TAP per phase and kernel, the time each phase took, and ends with
# one line "N passed, N failed, N skipped". Exits non-zero on any failure.
#
# usage: tests/check.sh BUILD [TEST...]   (TEST: test programs to run)
#   KVTIER_PERSIST_TESTS  persistence tests per kernel (default "reboot
#                         corrupt apply scale crash kvstore"; "none" skips
#                         them)
#   KVTIER_CRASH_SEED, KVTIER_CRASH_CUTS, KVTIER_CRASH_PART  see
#                         tests/persist/run.sh; unless CUTS or PART is
#                         set, the kernels share the kept cuts (each cut
#                         boots once, on one kernel)
#   KVTIER_GUEST_ENV      VAR=VALUE words exported to the suite in the
#                         guest (make check-full: longer fuzzing)
#   KVTIER_CHECK_SERIAL   1: the kernels' boots one kernel after the other
#                         (default: side by side)
#   KVTIER_SUITE_TIMEOUT  seconds a kernel's suite may take (2700)
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "${1:?usage: check.sh BUILD}" && cd "$1" && pwd)
shift
cache=$build/cache

pass=0 fail=0 skip=0
declare -a summary

# result, phase, count_tap
. "$top/tests/tap-lib.sh"

t0=$SECONDS
phase "kselftest headers (linux-source)" "$top/tests/get-ksrc.sh" "$build"
phase "checkpatch --strict" "$top/tests/checkpatch.sh" "$build"
phase "module builds, W=1, all kernels" "$top/tests/build-modules.sh" "$build"
phase "test programs" make -s -C "$top/tests" BUILD="$build"
phase "knob table against its documentation (host)" "$top/tests/knobs-check.sh"
phase "slot allocator against a model, GPU verdicts (host unit tests)" make -s -C "$top/tests" BUILD="$build" unit
phase "kvtierctl on fixture files (host)" make -s -C "$top/tools" check
phase "Python package, offline pip (host)" make -s -C "$top/python" check
phase "CUDA shim on the test double (host)" make -s -C "$top/tests/cuda-double" \
	BUILD="$build" KSRC="$("$top/tests/get-ksrc.sh" "$build")" check
phase "dkms add/build/install, all kernels" "$top/tests/dkms-check.sh" "$build"

kernels=$("$top/tests/vm/kernels.sh" list)
nkernels=$(wc -l <<<"$kernels")

# The boot images first, one at a time (prepare.sh may apt-get download a
# kernel into the shared cache).
while read -r short kver; do
	phase "boot image $short ($kver)" "$top/tests/vm/prepare.sh" "$kver" "$cache"
done <<<"$kernels"

# kernel_phases K SHORT KVER: every boot of one kernel (the suite, the
# blkdebug boot, the persistence tests), counted in this shell's pass, fail,
# skip and summary.
kernel_phases() {
	local k=$1 short=$2 kver=$3 out bout persist part
	out=$build/vm-$kver
	rm -rf "$out"
	# shellcheck disable=SC2086 # VAR=VALUE words
	vm_phase "suite on $short" "$out" "$kver: suite" \
		"$top/tests/vm/run.sh" --kver "$kver" --cache "$cache" --out "$out" \
		--nvme-count 2 --nvme-size 512M --timeout "${KVTIER_SUITE_TIMEOUT:-2700}" \
		--resume-after-stall -- \
		env ${KVTIER_GUEST_ENV-} "$top/tests/run-suite.sh" "$build" "$out" "${tests[@]}"
	# I/O errors at chosen sectors: QEMU blkdebug rules on the second
	# NVMe drive (tests/vm/blkdebug-ioerr.conf), one short boot that runs
	# kvtier_blkdebug_test alone (in the suite above it skips).
	bout=$build/vm-blkdebug-$kver
	rm -rf "$bout"
	vm_phase "blkdebug errors on $short" "$bout" "$kver: blkdebug error injection" \
		"$top/tests/vm/run.sh" --kver "$kver" --cache "$cache" --out "$bout" \
		--nvme-count 2 --nvme-size 512M --timeout 600 --resume-after-stall \
		--blkdebug 1:"$top/tests/vm/blkdebug-ioerr.conf" -- \
		"$top/tests/run-suite.sh" "$build" "$bout" "$build/tests/kvtier_blkdebug_test"

	# Persistent regions across boots on kept NVMe images: reboot,
	# host-side corruption, kvtier.conf at boot, QEMU kills
	# (tests/persist/run.sh). Every TAP
	# result counts, plus one check for its exit status. make check shares
	# the kept crash cuts between the kernels (KVTIER_CRASH_PART).
	# KVTIER_PERSIST_TESTS picks tests ("none": skip).
	persist=${KVTIER_PERSIST_TESTS-reboot corrupt apply scale compat crash kvstore}
	if [[ $persist != none ]]; then
		part=
		[[ -z ${KVTIER_CRASH_CUTS:-}${KVTIER_CRASH_PART:-} ]] && part=$k/$nkernels
		# shellcheck disable=SC2086 # a list of test names
		vm_phase "persistence on $short" "$build/persist-$kver" \
			"$kver: persistence tests" \
			env ${part:+KVTIER_CRASH_PART=$part} \
			"$top/tests/persist/run.sh" "$build" "$kver" "$build/persist-$kver" \
			$persist </dev/null
	fi
}

# The kernels' boots run side by side: a TCG guest keeps about one of the
# host's 2 CPUs busy, so two chains take about 0.8 of the time of the two
# in a row (KVTIER_CHECK_SERIAL=1: one after the other). The first kernel
# prints as it goes; each other one runs in its own process group (killed
# with this script), writes its output to BUILD/check-KVER.log and its
# counts to BUILD/check-KVER.counts, printed and added once it is done.
tests=("$@")
mapfile -t klist <<<"$kernels"
if [[ ${KVTIER_CHECK_SERIAL:-0} == 1 ]]; then
	for k in "${!klist[@]}"; do
		# shellcheck disable=SC2086 # "short kver"
		kernel_phases "$k" ${klist[$k]}
	done
else
	declare -a pids=()
	trap 'for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null; done' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	for ((k = 1; k < ${#klist[@]}; k++)); do
		kver=${klist[$k]#* }
		rm -f "$build/check-$kver.counts" "$build/check-$kver.counts.tmp"
		set -m
		# shellcheck disable=SC2030,SC2031 # the subshell's own counts
		(
			pass=0 fail=0 skip=0
			summary=()
			# shellcheck disable=SC2086 # "short kver"
			kernel_phases "$k" ${klist[$k]}
			{
				echo "$pass $fail $skip"
				printf '%s\n' "${summary[@]}"
			} >"$build/check-$kver.counts.tmp" &&
				mv "$build/check-$kver.counts.tmp" "$build/check-$kver.counts"
		) >"$build/check-$kver.log" 2>&1 </dev/null &
		pids[k]=$!
		set +m
	done
	# shellcheck disable=SC2086 # "short kver"
	kernel_phases 0 ${klist[0]}
	for ((k = 1; k < ${#klist[@]}; k++)); do
		wait "${pids[$k]}"
		rc=$?
		unset "pids[$k]"
		kver=${klist[$k]#* }
		echo "# the phases of $kver, run beside those above:"
		cat "$build/check-$kver.log"
		# shellcheck disable=SC2030,SC2031 # this shell's counts
		if ((rc == 0)) && [[ -f $build/check-$kver.counts ]] &&
			{ read -r p f s && [[ $p =~ ^[0-9]+$ && $f =~ ^[0-9]+$ && $s =~ ^[0-9]+$ ]]; } \
				<"$build/check-$kver.counts"; then
			pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
			while IFS= read -r line; do
				summary+=("$line")
			done < <(tail -n +2 "$build/check-$kver.counts")
		else
			result not-ok "$kver: its phases ended without their counts (status $rc; see $build/check-$kver.log)"
		fi
	done
fi

# The README's first command, as a new user runs it (tests/demo.sh, its
# own boot of the newest kernel): it must not break silently again.
phase "make demo (tests/demo.sh)" "$top/tests/demo.sh" "$build"

# The Debian packages as an operator installs them: make deb (lintian),
# apt-get install on this machine, DKMS builds for every kernel, one boot
# per kernel with the DKMS-built module and the installed tools and
# library, apt-get purge (tests/deb-check.sh).
phase "Debian packages: build, install, DKMS, boot, purge" \
	"$top/tests/deb-check.sh" "$build"

# A tiny benchmark in the 6.12 guest (tests/bench/run.sh --tiny): proves
# kvbench and its runner still work. It prints a row; its numbers are never
# judged, only a crash or a missing row fails it.
phase "tiny benchmark (6.12)" "$top/tests/bench/run.sh" --tiny "$build"

echo "#"
echo "# phase times and per-kernel results:"
for line in "${summary[@]}"; do
	echo "#   $line"
done
echo "#   total $((SECONDS - t0)) s"
echo "$pass passed, $fail failed, $skip skipped"
((fail == 0))
