#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `dkms add . && dkms build kvtier/VER -k KVER && dkms install` for every
# supported kernel, in private DKMS trees under BUILD/dkms so the check
# changes nothing on the machine. The source is a clean export of the files
# the module needs, as `make install` gives DKMS; `dkms add .` of the
# working tree itself must be refused (dkms.conf).
#
# usage: tests/dkms-check.sh BUILD
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "${1:?usage: dkms-check.sh BUILD}" && cd "$1" && pwd)
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/dkms.conf")
base=$build/dkms
trees=(--sourcetree "$base/src" --dkmstree "$base/tree" --installtree "$base/install")

rm -rf "$base"
mkdir -p "$base/export" "$base/src" "$base/tree" "$base/install"
tar -C "$top" -cf - --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' \
	--exclude='*.mod*' --exclude=compat_generated.h --exclude=.conftest-kdir \
	Kbuild Makefile dkms.conf include kmod | tar -C "$base/export" -xf -

(cd "$base/export" && dkms add . "${trees[@]}") >"$base/add.log" 2>&1 ||
	{ cat "$base/add.log"; exit 1; }

rc=0
# `dkms add .` of a working tree (.git, build/) is refused by dkms.conf
# before DKMS copies anything: it would copy build/ into the source tree.
mkdir -p "$base/refused"
if (cd "$top" && dkms add . --sourcetree "$base/refused" --dkmstree "$base/tree") \
	>"$base/refused.log" 2>&1; then
	echo "not ok dkms add . of the working tree was accepted (see $base/refused.log)"
	rc=1
elif ! grep -q "is a working tree" "$base/refused.log" || [[ -n $(ls -A "$base/refused") ]]; then
	echo "not ok dkms add . of the working tree: refused without the reason, or copied files"
	rc=1
else
	echo "ok dkms add . of the working tree is refused, nothing copied"
fi
while read -r short kver; do
	log=$base/$kver.log
	mkdir -p "$base/install/$kver/kernel"
	if dkms build "kvtier/$ver" -k "$kver" "${trees[@]}" >"$log" 2>&1 &&
		dkms install "kvtier/$ver" -k "$kver" "${trees[@]}" --force >>"$log" 2>&1 &&
		ko=$(find "$base/install/$kver" -name 'kvtier.ko*' | head -n 1) && [[ -n $ko ]]; then
		echo "ok dkms build+install $kver ($short): ${ko#"$base"/}"
	else
		cat "$log"
		echo "not ok dkms build+install $kver ($short)"
		rc=1
	fi
done < <("$top/tests/vm/kernels.sh" list)
exit $rc
