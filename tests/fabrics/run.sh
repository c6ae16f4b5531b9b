#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/fabrics/run.sh - the data-path tests with the tier on an NVMe over
# Fabrics namespace (make check-fabrics). For each supported kernel, one
# boot with two NVMe namespaces; in the guest tests/run-suite.sh runs with
# KVTIER_FABRICS=<transport>: tests/fabrics/nvmet.sh exports the namespace
# kvt0 on 127.0.0.1 through the kernel's nvmet target, the guest connects
# with nvme-cli and KVTIER_NS0 is the fabrics namespace (KVTIER_NS1 stays
# local). kvtier_fabrics_test (kvtierctl on fabrics, path loss and return;
# built into BUILD/tests/fabrics/, outside make check's suite) runs in the
# same boot.
#
# usage: tests/fabrics/run.sh BUILD [TEST...]
#   TEST  test programs (default: kvtier_region_test kvtier_names_test
#         kvtier_persist_test kvtier_tier_test kvtier_fabrics_test; names
#         are looked up in BUILD/tests/fabrics/, then BUILD/tests/)
# Environment:
#   KVTIER_FABRICS            transports, one boot each (default "tcp";
#                             "tcp loop": loop too, where the kernel has
#                             nvme-loop; skipped with a note where not)
#   KVTIER_FABRICS_KERNELS    short names of kernels (default: all of
#                             tests/vm/kernels.sh list)
#
# Needs what make check builds (the modules, make -C tests, make lib tools).
# Results in BUILD/fabrics-<transport>-<kver>/ (tap.log, one .tap per
# program, console.log); prints each kernel's tally and ends with one line
# "N passed, N failed, N skipped". Exit status 1 on any failure.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: run.sh BUILD [TEST...]}" && pwd) || exit 2
shift
cache=$build/cache
if [[ $# -eq 0 ]]; then
	set -- kvtier_region_test kvtier_names_test kvtier_persist_test \
		kvtier_tier_test kvtier_fabrics_test
fi
tests=()
for t in "$@"; do
	if [[ $t != */* ]]; then
		# Fabrics-only programs are built into BUILD/tests/fabrics/.
		if [[ -x $build/tests/fabrics/$t ]]; then
			t=$build/tests/fabrics/$t
		else
			t=$build/tests/$t
		fi
	fi
	[[ -x $t ]] || { echo "run.sh: no test program $t (make -C tests)" >&2; exit 2; }
	tests+=("$t")
done

pass=0 fail=0 skip=0 rc=0 summary=()
# count_tap
. "$top/tests/tap-lib.sh"

while read -r short kver; do
	if [[ -n ${KVTIER_FABRICS_KERNELS:-} && " $KVTIER_FABRICS_KERNELS " != *" $short "* ]]; then
		continue
	fi
	for tr in ${KVTIER_FABRICS:-tcp}; do
		out=$build/fabrics-$tr-$kver
		rm -rf "$out"
		mkdir -p "$out"
		start=$SECONDS
		echo "# fabrics ($tr) on $kver"
		"$top/tests/vm/prepare.sh" "$kver" "$cache" >/dev/null || { rc=1; continue; }
		if [[ $tr == loop && -z $(find "$cache/$kver/root/lib/modules/$kver" \
			-name 'nvme-loop.ko*' 2>/dev/null) ]]; then
			echo "# $kver has no nvme-loop: skipped"
			summary+=("$(printf '%-34s %4s     %s' "fabrics ($tr) on $short" - "no nvme-loop, skipped")")
			continue
		fi
		"$top/tests/vm/run.sh" --kver "$kver" --cache "$cache" --out "$out" \
			--nvme-count 2 --nvme-size 512M --timeout 1200 -- \
			env KVTIER_FABRICS="$tr" "$top/tests/run-suite.sh" "$build" "$out" "${tests[@]}"
		st=$?
		if [[ -s $out/tap.log ]]; then
			count_tap "$out/tap.log"
		else
			tally="no TAP output"
		fi
		if ((st)); then
			rc=1 fail=$((fail + 1))
			tally+="; guest run failed ($st)"
		fi
		summary+=("$(printf '%-34s %4d s   %s' "fabrics ($tr) on $short" $((SECONDS - start)) "$tally")")
	done
done < <("$top/tests/vm/kernels.sh" list)

printf '%s\n' "${summary[@]}"
echo "$pass passed, $fail failed, $skip skipped"
((fail)) && rc=1
exit $rc
