#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Extract the few files kvtier takes from Debian's kernel source package
# (kselftest_harness.h and kselftest.h for the tests, checkpatch.pl and its
# data files for style checks, tools/include and tools/lib/rbtree.c, the
# kernel's rbtree for user space, for tests/unit/) into BUILD/ksrc. They are not committed: the
# package is their source. Prints the extracted tree's path.
#
# usage: tests/get-ksrc.sh BUILD
set -euo pipefail

build=${1:?usage: get-ksrc.sh BUILD}
files=(
	tools/testing/selftests/kselftest.h
	tools/testing/selftests/kselftest_harness.h
	scripts/checkpatch.pl
	scripts/spelling.txt
	scripts/const_structs.checkpatch
	tools/include
	tools/arch/x86/include
	tools/lib/rbtree.c
)

tarball=$(ls /usr/src/linux-source-6.12.tar.xz /usr/src/linux-source-6.1.tar.xz 2>/dev/null | head -n 1 || true)
if [[ -z $tarball ]]; then
	echo "get-ksrc: no /usr/src/linux-source-6.{12,1}.tar.xz: apt-get install linux-source-6.12" >&2
	exit 1
fi
top=$(basename "$tarball" .tar.xz)
dest=$build/ksrc
tree=$dest/$top

missing=0
for f in "${files[@]}"; do
	[[ -e $tree/$f && $tree/$f -nt $tarball ]] || missing=1
done
if ((missing)); then
	mkdir -p "$dest"
	tar -C "$dest" -xJf "$tarball" "${files[@]/#/$top/}"
	touch "${files[@]/#/$tree/}"
fi
echo "$tree"
