#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make vm-test T=TEST KVER=6.1|6.12`: one boot of one kernel that runs the
# named tests, as make check's suite would (tests/run-suite.sh: the same
# state reset between programs, the same kernel-log gate), without the rest
# of make check. Builds what it needs first: the module for that kernel
# (W=1) and the test programs.
#
# usage: tests/vm-test.sh BUILD KVER TEST...
#   KVER   6.1 or 6.12 (tests/vm/kernels.sh)
#   TEST   a program (kvtier_region_test), or PROGRAM:FIXTURE.NAME for one
#          test of it (kvtier_region_test:tier.mmap_round_trip; kselftest's
#          -r). Several may be given; they run in that order.
#   KVTIER_VM_TIMEOUT  the boot's limit in seconds (default 900)
# Output: TAP on stdout, and BUILD/vm-test-<kver>/ (tap.log, dmesg.log,
# console.log). Exit status: 0 when every test passed or skipped and the
# guest's kernel log is clean.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
usage() {
	sed -n '2,/^set -uo/{/^#/s/^# \{0,1\}//p}' "$0" >&2
	exit 2
}
[[ $# -ge 3 ]] || usage
build=$(mkdir -p "$1" && cd "$1" && pwd)
short=$2
shift 2
kver=$("$top/tests/vm/kernels.sh" kver "$short") || {
	echo "vm-test: no installed kernel headers for '$short' (6.1 or 6.12)" >&2
	exit 2
}
kdir=$("$top/tests/vm/kernels.sh" kdir "$short") || exit 2
cache=$build/cache
out=$build/vm-test-$kver

"$top/tests/build-modules.sh" "$build" "$kver" "$kdir" || exit 1
make -s -C "$top/tests" BUILD="$build" || exit 1
"$top/tests/vm/prepare.sh" "$kver" "$cache" >/dev/null || exit 1

# Wrappers live beside OUT, not in it: run.sh starts OUT afresh.
wrappers=$build/vm-test-wrappers
rm -rf "$out" "$wrappers"
mkdir -p "$wrappers"
progs=()
for t in "$@"; do
	prog=${t%%:*}
	[[ -x $build/tests/$prog ]] || { echo "vm-test: no test program $build/tests/$prog" >&2; exit 2; }
	if [[ $t == *:* ]]; then
		# One test: a wrapper named like a program, for run-suite.sh.
		w=${prog}_${t#*:}
		w=$wrappers/${w//./_}_test
		printf '#!/bin/sh\nexec %q -r %q\n' "$build/tests/$prog" "${t#*:}" >"$w"
		chmod +x "$w"
		progs+=("$w")
	else
		progs+=("$build/tests/$prog")
	fi
done

"$top/tests/vm/run.sh" --kver "$kver" --cache "$cache" --out "$out" \
	--nvme-count 2 --nvme-size 512M --timeout "${KVTIER_VM_TIMEOUT:-900}" -- \
	"$top/tests/run-suite.sh" "$build" "$out" "${progs[@]}"
rc=$?
if [[ -f $out/tap.log ]]; then
	echo "# vm-test on $kver: $(grep -cE '^ok [0-9]+ ' "$out/tap.log") ok" \
		"($(grep -cE '^ok [0-9]+ .*# SKIP' "$out/tap.log") skipped)," \
		"$(grep -cE '^not ok ' "$out/tap.log") not ok; run.sh status $rc; see $out"
fi
exit $rc
