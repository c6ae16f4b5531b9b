#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian 12 packages that kvtier's build, `make check` and
# `make demo` need, but only those that are missing: with everything in
# place this is a few dpkg-query calls and changes nothing.
#
# usage: tests/deps.sh           install what is missing (root), else say how
#        tests/deps.sh --check   exit 1 and list what is missing; install nothing
#        tests/deps.sh --list    print the package list, one per line
#
# What needs what:
#   make gcc libc6-dev perl git   build lib/, tools/, tests/; checkpatch.pl
#   linux-headers-amd64           the 6.1 header set (kernel builds, DKMS)
#   linux-headers-6.12-amd64      the 6.12 header set
#   linux-source-6.12             kselftest_harness.h, checkpatch.pl (get-ksrc.sh)
#   dkms                          tests/dkms-check.sh, make install
#   qemu-system-x86 busybox-static kmod cpio xz-utils zstd gzip
#                                 the VM rig (tests/vm/prepare.sh, run.sh)
#   coreutils                     timeout, truncate (run.sh)
#   libnvme-dev nvme-cli fio python3 e2fsprogs dmsetup
#                                 user space the guest runs from this machine
#                                 (tools, tests that mount or stack dm targets)
#   liburing-dev                  libkvtier's block offload (io_uring)
#   python3-venv python3-pip      make -C python check: the Python package's
#                                 offline pip install into a throwaway venv
#   python3-torch                 the Llama decoder of prefix-KV reuse
#                                 (python/kvtier/llama.py, its tests)
#   libblkid-dev                  kvtierctl attach: filesystem/partition signatures
#   passwd                        groupadd for the kvtier group (make install)
#   util-linux mount gnuplot-nox  make bench: mkswap, swapon/swapoff, plots
#   systemd man-db                systemd-analyze verify of kvtier.service
#                                 (and the man pages it names; deb-check.sh)
#   prometheus prometheus-node-exporter
#                                 promtool and a real node_exporter for
#                                 kvtierctl metrics (kvtierctl_test)
#   bpftrace                      runs tools/bpftrace/*.bt in the guest
#                                 (kvtier_trace_test)
#
# Not here: flex bison bc libelf-dev libssl-dev, which only the debug
# kernel of `make check-debug` needs; tests/debug-kernel/build.sh installs
# them itself, so `make check` never pulls in a kernel build toolchain.
#
# The kernel images the VM boots are not installed: tests/vm/prepare.sh
# fetches them with `apt-get download`, which needs current package lists;
# so the lists are refreshed here too when there are none.
set -euo pipefail

PKGS=(make gcc libc6-dev perl git
	linux-headers-amd64 linux-headers-6.12-amd64 linux-source-6.12
	dkms debhelper dh-dkms lintian pkg-config
	qemu-system-x86 busybox-static kmod cpio xz-utils zstd gzip coreutils
	libnvme-dev nvme-cli fio python3 e2fsprogs dmsetup
	python3-venv python3-pip python3-torch
	libblkid-dev liburing-dev
	passwd
	util-linux mount gnuplot-nox
	systemd man-db prometheus prometheus-node-exporter
	bpftrace)

mode=install
case "${1:-}" in
'') ;;
--check) mode=check ;;
--list) printf '%s\n' "${PKGS[@]}"; exit 0 ;;
-h | --help) sed -n '4,10s/^# \{0,1\}//p' "$0"; exit 0 ;;
*) echo "usage: $0 [--check | --list]" >&2; exit 2 ;;
esac

# One dpkg-query for all (it names the installed ones; unknown ones only
# make it complain on stderr).
declare -A have=()
while read -r p st; do
	[[ $st == ii* ]] && have[$p]=1
done < <(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PKGS[@]}" 2>/dev/null || true)
missing=()
for p in "${PKGS[@]}"; do
	[[ -n ${have[$p]:-} ]] || missing+=("$p")
done

# No package lists at all (a freshly cleaned image): apt-get download of
# the kernel images would fail later with a confusing message.
no_lists=0
if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
	no_lists=1
fi

if ((${#missing[@]} == 0 && no_lists == 0)); then
	exit 0
fi

cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if ((${#missing[@]} == 0)); then
	cmd="apt-get update"
fi
if [[ $mode == check ]]; then
	((${#missing[@]})) && echo "deps: missing packages: ${missing[*]}" >&2
	((no_lists)) && echo "deps: no apt package lists (apt-get update)" >&2
	exit 1
fi
if ((EUID != 0)); then
	((${#missing[@]})) && echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: not root; as root run:" >&2
	echo "  $cmd" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "deps: $cmd"
apt-get update
if ((${#missing[@]})); then
	apt-get install -y --no-install-recommends "${missing[@]}"
fi
