#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build kvtier.ko for every supported kernel (tests/vm/kernels.sh list) at
# W=1, each in a private copy of the sources under BUILD/<kver>/src so the
# builds never share objects. Any compiler warning fails the build.
#
# usage: tests/build-modules.sh BUILD [KVER KDIR]
#   KVER KDIR  build for this one kernel only, e.g. the debug kernel of
#              tests/debug-kernel/build.sh (KDIR: its O= tree); `make
#              check-debug` uses this, `make check` never does
# result: BUILD/<kver>/kvtier.ko for each kernel
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: build-modules.sh BUILD [KVER KDIR]}

# "<short> <kver> <kdir>" per kernel to build for.
kernels() {
	if [[ $# -eq 2 ]]; then
		echo "$(grep -oE '^[0-9]+\.[0-9]+' <<<"$1") $1 $2"
		return
	fi
	"$top/tests/vm/kernels.sh" list | while read -r short kver; do
		echo "$short $kver $("$top/tests/vm/kernels.sh" kdir "$short")"
	done
}

shift
[[ $# -eq 0 || $# -eq 2 ]] || { echo "usage: build-modules.sh BUILD [KVER KDIR]" >&2; exit 2; }
kernels "$@" | while read -r short kver kdir; do
	src=$build/$kver/src
	start=$SECONDS
	mkdir -p "$src"
	# Copy only sources, with their mtimes, so make rebuilds just what changed.
	tar -C "$top" -cf - --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' \
		--exclude='*.mod*' --exclude=compat_generated.h \
		--exclude=.conftest-kdir Kbuild Makefile dkms.conf include kmod \
		| tar -C "$src" -xf -
	log=$build/$kver/build.log
	if ! make -C "$src" module KDIR="$kdir" W=1 >"$log" 2>&1; then
		cat "$log"
		echo "build-modules: $kver: build failed" >&2
		exit 1
	fi
	if grep -E 'warning:|error:' "$log"; then
		echo "build-modules: $kver: compiler warnings at W=1" >&2
		exit 1
	fi
	cp "$src/kmod/kvtier.ko" "$build/$kver/kvtier.ko"
	echo "build-modules: $kver ($short): ok, W=1 clean ($((SECONDS - start)) s)"
done
