#!/bin/bash
# tests/vm/kernels.sh - which kernels the VM test rig supports, resolved at
# run time from the installed Debian header packages.
#
# Usage (run):
#   tests/vm/kernels.sh list            -> one "<short> <kver>" line per kernel,
#                                          e.g. "6.1 6.1.0-57-amd64"
#   tests/vm/kernels.sh kver <short>    -> the full kernel release for <short>
#   tests/vm/kernels.sh kdir <short>    -> its kbuild dir (/lib/modules/<kver>/build
#                                          if present, else /usr/src/linux-headers-<kver>)
# Usage (sourced):
#   . tests/vm/kernels.sh; kvt_list; kvt_kver 6.12; kvt_kdir 6.1
#
# Why resolve at run time: Debian bumps the ABI number (6.1.0-<N>) and the
# 6.12 point release on every security update, and CI installs whatever the
# mirror carries that day.  Hard-coding them would break the rig on the next
# upload.  We pick the newest flavour-less "-amd64" header dir per series and
# ignore -cloud-amd64 / -rt-amd64 / -common trees (different configs, or not a
# buildable tree on its own).

# Root of the header dirs; overridable for testing the resolver itself.
KVT_SRC_DIR=${KVT_SRC_DIR:-/usr/src}

# Short names we support, in the order `list` prints them.
KVT_SHORTS=(6.1 6.12)

# kvt__regex <short>: ERE matching the header dir basename of that series.
# The anchored numeric patterns are what exclude -cloud/-rt/-common.
kvt__regex() {
	case "$1" in
	6.1) printf '%s\n' '^linux-headers-6\.1\.0-[0-9]+-amd64$' ;;
	6.12) printf '%s\n' '^linux-headers-6\.12\.[0-9]+\+deb12-amd64$' ;;
	*) return 1 ;;
	esac
}

# kvt_kver <short>: newest installed kver of that series (sort -V so that
# ABI 100 beats ABI 99).
kvt_kver() {
	local short=$1 re dir kver
	if ! re=$(kvt__regex "$short"); then
		echo "kernels.sh: unknown kernel short name '$short' (known: ${KVT_SHORTS[*]})" >&2
		return 1
	fi
	kver=$(
		for dir in "$KVT_SRC_DIR"/linux-headers-*; do
			[[ -d $dir ]] || continue
			dir=${dir##*/}
			# (an if, not &&: a trailing non-match must not become the
			# loop's status under set -e/pipefail)
			if [[ $dir =~ $re ]]; then
				printf '%s\n' "${dir#linux-headers-}"
			fi
		done | sort -V | tail -n 1
	)
	if [[ -z $kver ]]; then
		echo "kernels.sh: no headers installed for $short under $KVT_SRC_DIR" >&2
		return 1
	fi
	printf '%s\n' "$kver"
}

# kvt_kdir <short>: the kbuild dir.  /lib/modules/<kver>/build is what a
# normal out-of-tree build uses; fall back to /usr/src in case the symlink
# is missing (headers unpacked without the image's /lib/modules dir).
kvt_kdir() {
	local kver
	kver=$(kvt_kver "$1") || return 1
	if [[ -e /lib/modules/$kver/build/Makefile ]]; then
		printf '%s\n' "/lib/modules/$kver/build"
	else
		printf '%s\n' "$KVT_SRC_DIR/linux-headers-$kver"
	fi
}

# kvt_list: "<short> <kver>" for every series that has headers installed.
# A series without headers is skipped (with a note on stderr) rather than
# failing, so a host with only one series can still test that one.
kvt_list() {
	local short kver n=0
	for short in "${KVT_SHORTS[@]}"; do
		if kver=$(kvt_kver "$short" 2>/dev/null); then
			printf '%s %s\n' "$short" "$kver"
			n=$((n + 1))
		else
			echo "kernels.sh: skipping $short (no headers installed)" >&2
		fi
	done
	((n > 0))
}

# Only act as a command when executed; when sourced, just define functions
# (and leave the caller's shell options alone).
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	case "${1:-}" in
	list) kvt_list ;;
	kver) kvt_kver "${2:?usage: kernels.sh kver <short>}" ;;
	kdir) kvt_kdir "${2:?usage: kernels.sh kdir <short>}" ;;
	*)
		echo "usage: $0 list | kver <short> | kdir <short>" >&2
		exit 2
		;;
	esac
fi
