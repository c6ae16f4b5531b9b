#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check-debug`: the whole kselftest suite, and then the persistence
# tests, under the debug kernel of tests/debug-kernel/build.sh (KASAN,
# lockdep, KFENCE, DEBUG_LIST, DEBUG_VM, kmemleak, fault injection). Not run
# by `make check` or CI: the kernel build alone takes about an hour on two
# cores, the suite several times longer than under Debian's kernels.
#
#   1. builds the debug kernel if needed (resumes an interrupted build;
#      waits for one running in the background)
#   2. test programs, built against a copy of kselftest_harness.h whose
#      per-test time limits are multiplied by KVTIER_VM_TIMEOUT_SCALE (the
#      suite runs several times slower here); kvtier.ko for the debug
#      kernel at W=1. All of it in BUILD/debug/ (<kver>/, cache/,
#      vm-<kver>/, persist-<kver>/, tests/ -> BUILD/debug-tests/), apart
#      from what make check builds.
#   3. boots it (tests/vm/run.sh --debug) and runs tests/run-suite.sh; the
#      kernel-log gate and the kmemleak check of run.sh judge the guest
#   4. tests/persist/run.sh on the same kernel (KVTIER_PERSIST_TESTS)
#
# Prints TAP per phase, the time each took, and ends with one line
# "N passed, N failed, N skipped". Exits non-zero on any failure.
#
# usage: tests/debug-kernel/check.sh BUILD [TEST...]   (TEST: test programs)
#   KVTIER_DEBUG_KERNEL_CACHE  the kernel cache (build.sh)
#   KVTIER_VM_TIMEOUT_SCALE    VM time limits are multiplied by this (default 4)
#   KVTIER_VM_MEM              guest memory (default 3G: KASAN's shadow,
#                              lockdep and kmemleak take their share)
#   KVTIER_PERSIST_TESTS       persistence tests (default "reboot corrupt
#                              crash"; "none" skips them)
#   KVTIER_CRASH_CUTS          crash cuts (default 4 here, 20 in make check)
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
mainbuild=$(mkdir -p "${1:?usage: check.sh BUILD}" && cd "$1" && pwd)
shift
build=$mainbuild/debug
mkdir -p "$build"
cache=$build/cache
export KVTIER_VM_TIMEOUT_SCALE=${KVTIER_VM_TIMEOUT_SCALE:-4}
export KVTIER_VM_MEM=${KVTIER_VM_MEM:-3G}
export KVTIER_CRASH_CUTS=${KVTIER_CRASH_CUTS:-4}

pass=0 fail=0 skip=0
declare -a summary

# result, phase, count_tap
. "$top/tests/tap-lib.sh"

finish() {
	echo "#"
	echo "# phase times and results (debug kernel ${kver:-not built}):"
	for line in "${summary[@]}"; do
		echo "#   $line"
	done
	echo "#   total $((SECONDS - t0)) s"
	echo "$pass passed, $fail failed, $skip skipped"
	((fail == 0))
	exit
}

t0=$SECONDS
dk=$top/tests/debug-kernel/build.sh
phase "debug kernel (build or resume)" "$dk"
if ! kver=$("$dk" --kver); then
	kver=''
	finish
fi
kdir=$(readlink -f "$("$dk" --root)/lib/modules/$kver/build")
# slow_harness: BUILD/debug/ksrc-slow, kselftest headers whose alarm() per
# test is KVTIER_VM_TIMEOUT_SCALE times the test's own limit.
slow_harness() {
	local ksrc dst=$build/ksrc-slow/tools/testing/selftests
	ksrc=$("$top/tests/get-ksrc.sh" "$mainbuild") || return 1
	mkdir -p "$dst"
	cp "$ksrc/tools/testing/selftests/kselftest.h" "$dst/"
	sed "s/alarm(t->timeout);/alarm(t->timeout * $KVTIER_VM_TIMEOUT_SCALE);/" \
		"$ksrc/tools/testing/selftests/kselftest_harness.h" >"$dst/kselftest_harness.h.new"
	grep -q "alarm(t->timeout \* $KVTIER_VM_TIMEOUT_SCALE);" "$dst/kselftest_harness.h.new" || {
		echo "check-debug: kselftest_harness.h has no alarm(t->timeout); to scale" >&2
		return 1
	}
	# Only a changed header makes make rebuild the programs.
	if ! cmp -s "$dst/kselftest_harness.h.new" "$dst/kselftest_harness.h"; then
		mv "$dst/kselftest_harness.h.new" "$dst/kselftest_harness.h"
		rm -rf "$mainbuild/debug-tests"
	else
		rm -f "$dst/kselftest_harness.h.new"
	fi
}
phase "kselftest headers, time limits x$KVTIER_VM_TIMEOUT_SCALE" slow_harness
# The programs find the tree's tools (kvtierctl, ...) three path components
# above their own executable (kvt_repo_root() in tests/kvtier_util.h), so
# they go to BUILD/debug-tests; BUILD/debug/tests links there.
debug_tests() {
	make -s -C "$top/tests" BUILD="$build" OUT="$mainbuild/debug-tests" \
		KSRC="$build/ksrc-slow" || return 1
	if [[ ! -L $build/tests ]]; then
		rm -rf "$build/tests"
		ln -s ../debug-tests "$build/tests"
	fi
}
phase "test programs" debug_tests
phase "module build, W=1, $kver" "$top/tests/build-modules.sh" "$build" "$kver" "$kdir"

out=$build/vm-$kver
rm -rf "$out"
vm_phase "suite on debug" "$out" "$kver: suite (and kmemleak)" \
	"$top/tests/vm/run.sh" --debug --kver "$kver" --cache "$cache" --out "$out" \
	--mem "$KVTIER_VM_MEM" --nvme-count 2 --nvme-size 512M --timeout 1800 -- \
	env KVTIER_TIME_SCALE="$KVTIER_VM_TIMEOUT_SCALE" \
	"$top/tests/run-suite.sh" "$build" "$out" "$@"

persist=${KVTIER_PERSIST_TESTS-reboot corrupt crash}
if [[ $persist != none ]]; then
	# run.sh boots the debug kernel as --debug does (its root, and its
	# command line: no5lvl, or KASAN reports a wild access in early boot).
	# shellcheck disable=SC2086 # a list of test names
	vm_phase "persistence on debug" "$build/persist-$kver" \
		"$kver: persistence tests" \
		env KVTIER_VM_DEBUG=1 \
		"$top/tests/persist/run.sh" "$build" "$kver" "$build/persist-$kver" \
		$persist </dev/null
fi
finish
