#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# checkpatch.pl --strict (from Debian's linux-source) over every kernel-side
# file: the module, its compile probes and the uapi header.
#
# usage: tests/checkpatch.sh BUILD
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: checkpatch.sh BUILD}
ksrc=$("$top/tests/get-ksrc.sh" "$build")

cd "$top"
files=()
for f in kmod/*.c kmod/*.h kmod/conftest/*.c include/uapi/linux/*.h; do
	case $f in
	*.mod.c | kmod/compat_generated.h) ;; # kbuild's and conftest.sh's output
	*) files+=("$f") ;;
	esac
done
rc=0
for f in "${files[@]}"; do
	# TRACE_EVENT() bodies are macro arguments laid out the way every
	# header in include/trace/events/ lays them out; checkpatch's
	# alignment checks do not understand them (the kernel's own trace
	# headers get the same two CHECKs).
	ignore=()
	case $f in
	*_trace.h) ignore=(--ignore OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT) ;;
	esac
	if ! out=$(perl "$ksrc/scripts/checkpatch.pl" --strict --no-tree \
		--quiet --show-types "${ignore[@]}" -f "$f" 2>&1); then
		echo "$out"
		rc=1
	fi
done
if ((rc == 0)); then
	echo "checkpatch: ${#files[@]} files clean (--strict)"
fi
exit $rc
