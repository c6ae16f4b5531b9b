#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make fuzz`: kvtier_fuzz_test with fresh random seeds, for as long as
# asked, in every kernel (one boot each). `make check` fuzzes only with the
# seeds tests/fuzz-seeds.txt keeps, so that it gives the same answer on
# every machine; this finds new ones. Each round is one run of the program
# with KVTIER_FUZZ_RANDOM=1 (every test draws its own seed and prints it);
# a failed round's replay lines are printed at the end. Add each seed that
# found a bug to tests/fuzz-seeds.txt, with the bug, once it is fixed.
#
# usage: tests/fuzz.sh BUILD
#   KVTIER_FUZZ_SECONDS   how long to fuzz in each kernel (default 600)
#   KVTIER_FUZZ_ITERS, KVTIER_FUZZ_SYSFS_ITERS, KVTIER_FUZZ_FLIPS,
#   KVTIER_FUZZ_HOSTILE_ITERS
#                         the size of each round (kvtier_fuzz_test.c)
#
# Ends with "N passed, N failed" (rounds); exits 1 if any round failed or
# a guest kernel log was not clean.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "${1:?usage: fuzz.sh BUILD}" && cd "$1" && pwd)
secs=${KVTIER_FUZZ_SECONDS:-600}
[[ $secs =~ ^[0-9]+$ ]] || { echo "fuzz: KVTIER_FUZZ_SECONDS is not a number: $secs" >&2; exit 2; }

"$top/tests/get-ksrc.sh" "$build" >/dev/null || exit 1
"$top/tests/build-modules.sh" "$build" || exit 1
make -s -C "$top/tests" BUILD="$build" "$build/tests/kvtier_fuzz_test" || exit 1

env_words=(KVTIER_FUZZ_RANDOM=1)
for v in KVTIER_FUZZ_ITERS KVTIER_FUZZ_SYSFS_ITERS KVTIER_FUZZ_FLIPS \
	 KVTIER_FUZZ_HOSTILE_ITERS; do
	[[ -n ${!v:-} ]] && env_words+=("$v=${!v}")
done

pass=0 fail=0 rc=0
while read -r short kver; do
	out=$build/fuzz-$kver
	rm -rf "$out"
	mkdir -p "$out"
	"$top/tests/vm/prepare.sh" "$kver" "$build/cache" >/dev/null || exit 1
	echo "# fuzz: $kver for $secs s"
	# One boot; rounds until the time is up (a round that starts always
	# ends: the VM's limit leaves room for the longest one).
	"$top/tests/vm/run.sh" --kver "$kver" --cache "$build/cache" --out "$out" \
		--nvme-count 2 --nvme-size 512M --timeout $((secs + 1800)) -- \
		bash -c 'suite=$0 build=$1 out=$2 end=$((SECONDS + $3)) n=0
			shift 3
			while ((SECONDS < end)); do
				n=$((n + 1))
				env "$@" "$suite" "$build" "$out" "$build/tests/kvtier_fuzz_test" \
					>"$out/round-$n.log" 2>&1
				echo "round $n $?" >>"$out/rounds"
			done' "$top/tests/run-suite.sh" "$build" "$out" "$secs" "${env_words[@]}" \
		>"$out/vm.log" 2>&1
	st=$?
	# run.sh's status: 1 for a report in the guest's kernel log.
	if ((st != 0)); then
		echo "not ok - $kver: the fuzz boot failed (rc $st, see $out)"
		rc=1
	fi
	while read -r _ n st; do
		if ((st == 0)); then
			pass=$((pass + 1))
			continue
		fi
		fail=$((fail + 1))
		rc=1
		echo "not ok - $kver round $n; replay in the suite with:"
		grep -ohE 'replay: [^)]*' "$out/round-$n.log" | sed 's/^/#   /'
		grep -E '^not ok' "$out/round-$n.log" | sed 's/^/#   /'
	done < <(cat "$out/rounds" 2>/dev/null)
done < <("$top/tests/vm/kernels.sh" list)
echo "$pass passed, $fail failed"
exit $rc
