#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian packages, the way an operator uses them, on this machine:
# `make deb` (debhelper, dh-dkms, lintian with no error or warning), then
# `apt-get install ./*.deb`; DKMS must have built kvtier.ko for every
# supported kernel (tests/vm/kernels.sh); the installed kvtierctl runs, a
# program builds against the installed libkvtier-dev with pkg-config and
# links the installed libkvtier0; the group and the udev rule are there;
# kvtier.service and kvtier-metrics.timer pass systemd-analyze verify and
# are enabled; each kernel boots once in the VM and round-trips a region
# with the DKMS-built module, the installed kvtierctl and libkvtier.
# Then `apt-get purge`: DKMS has no kvtier left, none of the packages'
# files remain, the units are no longer enabled, and the kvtier group
# stays (Debian does not remove system groups on purge: files may still
# belong to it).
#
# The DKMS-built modules are kept, decompressed, in BUILD/deb-check/<kver>/
# kvtier.ko for a VM boot (tests/check.sh).
#
# usage: tests/deb-check.sh BUILD
# TAP output. Needs root (it installs packages); SKIP (exit 4) otherwise.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "${1:?usage: deb-check.sh BUILD}" && cd "$1" && pwd)
out=$build/deb-check
n=0 bad=0

# check (numbered TAP)
. "$top/tests/tap-lib.sh"

# ok_if DESC CMD...: one check, ok when CMD exits 0.
ok_if() {
	local desc=$1
	shift
	if "$@"; then check ok "$desc"; else check not-ok "$desc"; fi
}

if ((EUID != 0)); then
	echo "1..0 # SKIP deb-check installs packages: run it as root"
	exit 4
fi
pkgs=(kvtier-dkms libkvtier0 libkvtier-dev kvtier-tools libkvtier-cuda0 python3-kvtier)
for p in "${pkgs[@]}"; do
	if dpkg -s "$p" >/dev/null 2>&1; then
		echo "1..0 # SKIP $p is installed on this machine already: not touching it"
		exit 4
	fi
done

rm -rf "$out"
mkdir -p "$out"
ok_if "make deb: packages built, lintian reports no error or warning" \
	make -s -C "$top" deb BUILD="$build"
debs=()
for p in "${pkgs[@]}"; do
	f=$(ls "$build"/deb/"$p"_*.deb 2>/dev/null | head -n 1)
	[[ -n $f ]] && debs+=("$f")
done
ok_if "the packages are there (${#debs[@]} of ${#pkgs[@]}, or 5 without CUDA headers)" \
	test "${#debs[@]}" -ge 5

# quiet LOG CMD...: CMD with its output in LOG.
quiet() {
	local log=$1
	shift
	"$@" >"$log" 2>&1
}

ok_if "apt-get install ./*.deb" \
	quiet "$out/install.log" apt-get install -y --no-install-recommends "${debs[@]}"

# DKMS built and installed the module for every supported kernel.
while read -r short kver; do
	ko=/lib/modules/$kver/updates/dkms/kvtier.ko
	[[ -f $ko ]] || ko=$ko.xz
	if dkms status kvtier -k "$kver" 2>/dev/null | grep -q ': installed' && [[ -f $ko ]]; then
		mkdir -p "$out/$kver"
		if [[ $ko == *.xz ]]; then
			xz -dc "$ko" >"$out/$kver/kvtier.ko"
		else
			cp "$ko" "$out/$kver/kvtier.ko"
		fi
		ok_if "dkms: kvtier built for $short ($kver), vermagic $kver" \
			bash -c "modinfo -F vermagic '$out/$kver/kvtier.ko' | grep -q '^$kver '"
	else
		check not-ok "dkms: kvtier built for $short ($kver) (see $out/install.log)"
	fi
done < <("$top/tests/vm/kernels.sh" list)

ok_if "installed kvtierctl runs (/usr/sbin/kvtierctl --help)" \
	bash -c '/usr/sbin/kvtierctl --help >/dev/null'
ok_if "the bpftrace tools are installed executable (/usr/sbin/kvtier-*.bt)" \
	bash -c 'for t in faultlat wbsize stalls topregions; do test -x /usr/sbin/kvtier-$t.bt || exit 1; done'
# kvtier.service: valid to systemd (its commands and man pages exist),
# enabled for the next boot, not started by the install.
unit=/lib/systemd/system/kvtier.service
ok_if "systemd-analyze verify $unit" \
	quiet "$out/verify.log" systemd-analyze verify "$unit"
ok_if "kvtier.service is enabled (multi-user.target.wants)" \
	test -L /etc/systemd/system/multi-user.target.wants/kvtier.service
ok_if "systemd-analyze verify kvtier-metrics.timer and .service" \
	quiet "$out/verify-metrics.log" systemd-analyze verify \
	/lib/systemd/system/kvtier-metrics.timer /lib/systemd/system/kvtier-metrics.service
ok_if "kvtier-metrics.timer is enabled (timers.target.wants)" \
	test -L /etc/systemd/system/timers.target.wants/kvtier-metrics.timer
ok_if "kvtier.conf(5) is installed" test -f /usr/share/man/man5/kvtier.conf.5.gz
ok_if "kvtierfs(5) is installed" test -f /usr/share/man/man5/kvtierfs.5.gz
cat >"$out/use.c" <<'EOF'
#include <kvtier.h>
#include <linux/kvtier.h>
#include <stdio.h>

int main(void)
{
	struct kvtier_tier *t;

	/* No module on this machine: the call must fail cleanly. */
	return kvtier_tier_open(0, &t) < 0 && KVTIER_ABI_VERSION > 0 ? 0 : 1;
}
EOF
ok_if "a program builds with pkg-config kvtier and runs against libkvtier0" \
	bash -c "cc -std=c11 -Wall -Werror \$(pkg-config --cflags kvtier) -o '$out/use' '$out/use.c' \$(pkg-config --libs kvtier) && '$out/use' && ldd '$out/use' | grep -Eq 'libkvtier.so.0 => (/usr)?/lib/[^ ]*-linux-gnu/libkvtier.so.0'"
# The Python package from dist-packages, over the installed libkvtier0.
ok_if "python3-kvtier imports from dist-packages; its version is libkvtier0's" \
	bash -c "cd / && /usr/bin/python3 -c 'import kvtier, sys; sys.exit(kvtier.__file__ != \"/usr/lib/python3/dist-packages/kvtier/__init__.py\" or kvtier.__version__ != kvtier.version())'"
ok_if "the kvtier group exists" quiet /dev/null getent group kvtier
ok_if "the udev rule gives /dev/kvtierN to the group" \
	grep -qs 'GROUP="kvtier"' /lib/udev/rules.d/60-kvtier.rules

# One boot per kernel, with the packages installed (the guest sees the
# host's root): the DKMS-built module, the installed kvtierctl and a
# program built against the installed libkvtier-dev (tests/deb/).
ksrc=$("$top/tests/get-ksrc.sh" "$build") || ksrc=
# shellcheck disable=SC2046 # pkg-config's words
if [[ -n $ksrc ]] && cc -O0 -g -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE \
	-isystem "$ksrc/tools/testing/selftests" $(pkg-config --cflags kvtier) \
	-o "$out/kvtier_deb_test" "$top/tests/deb/kvtier_deb_test.c" \
	"$top/tests/kvtier_util.c" $(pkg-config --libs kvtier) 2>"$out/cc.log"; then
	check ok "tests/deb/kvtier_deb_test builds against the installed libkvtier-dev"
	while read -r short kver; do
		vout=$out/vm-$kver
		"$top/tests/vm/prepare.sh" "$kver" "$build/cache" >/dev/null 2>&1
		quiet "$out/vm-$kver.log" "$top/tests/vm/run.sh" --kver "$kver" \
			--cache "$build/cache" --out "$vout" --nvme-count 1 \
			--nvme-size 256M --timeout 300 --resume-after-stall -- \
			"$top/tests/run-suite.sh" "$out" "$vout" "$out/kvtier_deb_test"
		rc=$?
		if ((rc == 0)) && grep -q '^ok 1 global.installed_packages_round_trip$' "$vout/tap.log"; then
			check ok "$short: the DKMS-built module, installed kvtierctl and libkvtier round-trip 8 MiB (guest log clean)"
		else
			check not-ok "$short: the installed packages in a VM (rc $rc; see $vout and $out/vm-$kver.log)"
		fi
	done < <("$top/tests/vm/kernels.sh" list)
else
	check not-ok "tests/deb/kvtier_deb_test builds against the installed libkvtier-dev (see $out/cc.log)"
fi

files=$(dpkg -L "${pkgs[@]}" 2>/dev/null | sort -u)
ok_if "apt-get purge" quiet "$out/purge.log" apt-get purge -y "${pkgs[@]}"
ok_if "dkms has no kvtier left" bash -c '! dkms status kvtier 2>/dev/null | grep -q .'
left=()
while read -r f; do
	[[ -n $f && -f $f ]] && left+=("$f")
done <<<"$files"
ok_if "no file of the packages remains (${left[*]:-none})" test "${#left[@]}" -eq 0
ok_if "no module left under /lib/modules/*/updates/dkms" \
	bash -c '! ls /lib/modules/*/updates/dkms/kvtier.ko* 2>/dev/null | grep -q .'
ok_if "kvtier.service and kvtier-metrics.timer are no longer enabled" \
	bash -c '! test -e /etc/systemd/system/multi-user.target.wants/kvtier.service &&
		! test -e /etc/systemd/system/timers.target.wants/kvtier-metrics.timer'
ok_if "the kvtier group stays after purge (Debian policy)" quiet /dev/null getent group kvtier

echo "1..$n"
exit "$bad"
