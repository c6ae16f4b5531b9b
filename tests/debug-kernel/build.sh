#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/debug-kernel/build.sh - build, once and cached outside the tree, a
# 6.12 kernel from Debian's linux-source-6.12 with the kernel's own bug
# finders on (KASAN, lockdep, KFENCE, DEBUG_LIST, DEBUG_VM, kmemleak, fault
# injection) and everything the VM rig and the test suite use built in, for
# `make check-debug` (tests/debug-kernel/check.sh).
#
# usage: tests/debug-kernel/build.sh            build (or resume) in the foreground
#        tests/debug-kernel/build.sh --background  the same under nohup, log in CACHE/build.log
#        tests/debug-kernel/build.sh --status   not started / configuring / building (how far) / done
#        tests/debug-kernel/build.sh --kver     the kernel release (only when built)
#        tests/debug-kernel/build.sh --root     the root tree the rig boots (only when built)
#
# CACHE is ${KVTIER_DEBUG_KERNEL_CACHE:-/var/cache/kvtier/debug-kernel}:
#   CACHE/src/linux-source-6.12/  the unpacked source (/usr/src/linux-source-6.12.tar.xz)
#   CACHE/obj/                    the O= output tree; also the KDIR modules build against
#   CACHE/root/boot/vmlinuz-<kver>, CACHE/root/lib/modules/<kver>/ (modules_install:
#                                 modules.builtin for the guest's modprobe; build -> obj)
#   CACHE/kernelrelease           the release string, e.g. 6.12.117-kvtier-debug
#   CACHE/build.log               the log of a --background build
#   CACHE/.stamp-*                one per finished step
#
# Resumable: every step leaves a stamp when it finishes, and the O= tree is
# kept, so a build that was interrupted (^C, reboot, kill) continues where
# make stopped when the script runs again. The configuration is redone only
# when the config fragment below (its sha256) or the source tarball changed;
# that also redoes the build (make rebuilds only what the new config
# touches). Builds run at nice 19 with make -j${KVTIER_DEBUG_KERNEL_JOBS:-2}.
#
# Packages: installs linux-source-6.12, flex, bison, bc, libelf-dev,
# libssl-dev when missing (as root; otherwise prints the apt-get command).
# `make check` never needs them and does not install them.
set -euo pipefail

cache=${KVTIER_DEBUG_KERNEL_CACHE:-/var/cache/kvtier/debug-kernel}
tarball=${KVTIER_DEBUG_KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
jobs=${KVTIER_DEBUG_KERNEL_JOBS:-2}
srcname=$(basename "$tarball" .tar.xz)
src=$cache/src/$srcname
obj=$cache/obj
root=$cache/root
localversion=-kvtier-debug

# The config fragment, applied with scripts/config on top of
# `make x86_64_defconfig` + `make kvm_guest.config`, then olddefconfig.
# NAME=y / NAME=n / NAME=<number> / NAME="string". After olddefconfig every
# line is checked; a line marked "?" may be absent from this kernel's
# Kconfig (it is then only reported).
fragment() {
	cat <<'FRAG'
# identity: a release string no Debian kernel uses
CONFIG_LOCALVERSION="-kvtier-debug"
CONFIG_LOCALVERSION_AUTO=n
# the bug finders
CONFIG_DEBUG_KERNEL=y
CONFIG_KASAN=y
CONFIG_KASAN_GENERIC=y
CONFIG_KASAN_INLINE=y
CONFIG_PROVE_LOCKING=y
CONFIG_DEBUG_LOCKDEP=n
CONFIG_DEBUG_ATOMIC_SLEEP=y
CONFIG_KFENCE=y
CONFIG_DEBUG_LIST=y
CONFIG_DEBUG_VM=y
CONFIG_DEBUG_KMEMLEAK=y
CONFIG_DEBUG_KMEMLEAK_DEFAULT_OFF=n
CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN=n
CONFIG_FAULT_INJECTION=y
CONFIG_FAULT_INJECTION_DEBUG_FS=y
CONFIG_FAILSLAB=y
CONFIG_FAIL_PAGE_ALLOC=y
CONFIG_FAIL_MAKE_REQUEST=y
CONFIG_STACKTRACE=y
CONFIG_KALLSYMS=y
CONFIG_KALLSYMS_ALL=y
CONFIG_PRINTK_TIME=y
# no DWARF: halves the build; reports carry symbol+offset (kallsyms)
CONFIG_DEBUG_INFO_NONE=y
# modules: only kvtier.ko is ever loaded
CONFIG_MODULES=y
CONFIG_MODULE_UNLOAD=y
CONFIG_MODVERSIONS=n
CONFIG_MODULE_SIG=n
# the rig: virtio PCI, 9p root, serial console, initramfs
CONFIG_PCI=y
CONFIG_VIRTIO=y
CONFIG_VIRTIO_PCI=y
CONFIG_NET_9P=y
CONFIG_NET_9P_VIRTIO=y
CONFIG_9P_FS=y
CONFIG_9P_FS_POSIX_ACL=y
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y
CONFIG_BLK_DEV_INITRD=y
CONFIG_RD_GZIP=y
CONFIG_DEVTMPFS=y
CONFIG_TMPFS=y
CONFIG_TMPFS_POSIX_ACL=y
CONFIG_DEBUG_FS=y
CONFIG_CONFIGFS_FS=y
CONFIG_OVERLAY_FS=y
CONFIG_UNIX=y
CONFIG_INET=y
# storage the tests stack
CONFIG_BLK_DEV=y
CONFIG_BLK_DEV_NVME=y
CONFIG_NVME_MULTIPATH=y
CONFIG_NVME_FABRICS=y
CONFIG_NVME_TCP=y
CONFIG_NVME_TARGET=y
CONFIG_NVME_TARGET_LOOP=y
CONFIG_NVME_TARGET_TCP=y
CONFIG_BLK_DEV_LOOP=y
CONFIG_EXT4_FS=y
CONFIG_MD=y
CONFIG_BLK_DEV_DM=y
CONFIG_DM_DELAY=y
CONFIG_DM_FLAKEY=y
?CONFIG_DM_LOG_WRITES=y
# memory: swap, cgroup v2 memory.max (benchmarks), what Debian's kernel has
CONFIG_SWAP=y
CONFIG_CGROUPS=y
CONFIG_MEMCG=y
CONFIG_TRANSPARENT_HUGEPAGE=y
# tracing: tracefs, trace events (the module's tracepoints)
CONFIG_FTRACE=y
CONFIG_FUNCTION_TRACER=y
CONFIG_TRACING=y
CONFIG_EVENT_TRACING=y
CONFIG_TRACEPOINTS=y
# trimmed: large parts of x86_64_defconfig the guest never uses (an hour
# less of building on two cores)
CONFIG_DRM=n
CONFIG_SOUND=n
CONFIG_USB_SUPPORT=n
CONFIG_WLAN=n
CONFIG_WIRELESS=n
CONFIG_NETFILTER=n
CONFIG_ETHERNET=n
CONFIG_AGP=n
FRAG
}

log() { echo "debug-kernel: $*"; }
die() { echo "debug-kernel: $*" >&2; exit 1; }

frag_hash() {
	{ fragment; echo "$srcname"; stat -c '%s %Y' "$tarball" 2>/dev/null; } |
		sha256sum | cut -c1-16
}

kver_file=$cache/kernelrelease

status() {
	if [[ -e $cache/.stamp-install && -s $kver_file ]]; then
		echo "done: $(<"$kver_file") (kernel $root/boot/vmlinuz-$(<"$kver_file"), KDIR $obj)"
		if [[ $(cat "$cache/.stamp-config" 2>/dev/null) != "$(frag_hash)" ]]; then
			echo "note: the config fragment changed since; the next run reconfigures and rebuilds"
		fi
		return 0
	fi
	local running=''
	if [[ -s $cache/build.pid ]] && kill -0 "$(<"$cache/build.pid")" 2>/dev/null; then
		running=" (running, pid $(<"$cache/build.pid"))"
	else
		running=" (not running: run build.sh to resume)"
	fi
	if [[ ! -d $cache ]] || [[ ! -e $cache/.stamp-extract ]]; then
		if [[ -d $cache/src ]]; then
			echo "unpacking the source$running"
		else
			echo "not started (cache $cache)"
		fi
		return 0
	fi
	if [[ ! -e $cache/.stamp-config ]]; then
		echo "configuring$running"
		return 0
	fi
	local n total
	n=$(find "$obj" -name '*.o' 2>/dev/null | wc -l)
	# (about 2500 in a full build on the development machine; after one
	# build, .objcount holds this machine's own count)
	total=2500
	[[ -s $cache/.objcount ]] && total=$(<"$cache/.objcount")
	echo "building: $n of about $total objects built$running"
	[[ -s $cache/build.log ]] && echo "last log line: $(tail -n 1 "$cache/build.log")"
	return 0
}

case "${1:-}" in
--status) status; exit 0 ;;
--kver)
	[[ -e $cache/.stamp-install && -s $kver_file ]] || die "not built yet ($cache)"
	cat "$kver_file"; exit 0 ;;
--root)
	[[ -e $cache/.stamp-install ]] || die "not built yet ($cache)"
	echo "$root"; exit 0 ;;
--background)
	mkdir -p "$cache"
	nohup setsid "$0" >>"$cache/build.log" 2>&1 </dev/null &
	log "building in the background (pid $!), log $cache/build.log; $0 --status"
	exit 0 ;;
'') ;;
-h | --help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
*) die "unknown option $1 (see --help)" ;;
esac

mkdir -p "$cache"
exec 9>"$cache/.lock"
if ! flock -n 9; then
	log "another build holds $cache/.lock; waiting for it"
	flock 9
fi
echo $$ >"$cache/build.pid"
trap 'rm -f "$cache/build.pid"' EXIT
t0=$SECONDS

# --- packages ------------------------------------------------------------
need=()
[[ -f $tarball ]] || need+=(linux-source-6.12)
for p in flex bison bc libelf-dev libssl-dev make gcc; do
	dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || need+=("$p")
done
if ((${#need[@]})); then
	if ((EUID != 0)); then
		die "missing packages; as root: apt-get install -y --no-install-recommends ${need[*]}"
	fi
	log "installing ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" ||
		{ apt-get update && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends "${need[@]}"; }
fi
[[ -f $tarball ]] || die "$tarball missing after installing linux-source-6.12"

# --- 1. unpack -------------------------------------------------------------
want_src="$tarball $(stat -c '%s %Y' "$tarball")"
if [[ $(cat "$cache/.stamp-extract" 2>/dev/null) != "$want_src" ]]; then
	log "unpacking $tarball"
	rm -f "$cache"/.stamp-*
	rm -rf "$cache/src"
	mkdir -p "$cache/src.tmp"
	nice -n 19 tar -C "$cache/src.tmp" -xJf "$tarball"
	mv "$cache/src.tmp" "$cache/src"
	[[ -f $src/Makefile ]] || die "no $src/Makefile in $tarball"
	echo "$want_src" >"$cache/.stamp-extract"
fi

# --- 2. configure ----------------------------------------------------------
mk() { nice -n 19 make -C "$src" O="$obj" "$@"; }
hash=$(frag_hash)
if [[ $(cat "$cache/.stamp-config" 2>/dev/null) != "$hash" || ! -f $obj/.config ]]; then
	log "configuring (fragment $hash)"
	rm -f "$cache/.stamp-config" "$cache/.stamp-build" "$cache/.stamp-install"
	mkdir -p "$obj"
	mk -s x86_64_defconfig
	mk -s kvm_guest.config
	args=()
	while IFS= read -r line; do
		line=${line#\?}
		name=${line%%=*} val=${line#*=}
		name=${name#CONFIG_}
		case "$val" in
		y) args+=(--enable "$name") ;;
		n) args+=(--disable "$name") ;;
		m) args+=(--module "$name") ;;
		\"*\") val=${val#\"}; args+=(--set-str "$name" "${val%\"}") ;;
		*) args+=(--set-val "$name" "$val") ;;
		esac
	done < <(fragment | grep -v '^#' | grep .)
	"$src/scripts/config" --file "$obj/.config" "${args[@]}"
	mk -s olddefconfig
	# olddefconfig silently drops what lacks a dependency: check every line.
	missing=() absent=()
	while IFS= read -r line; do
		opt=0
		[[ $line == \?* ]] && opt=1 && line=${line#\?}
		name=${line%%=*} val=${line#*=}
		case "$val" in
		n) grep -qx "$name=[ym]" "$obj/.config" || continue ;;
		*) grep -qxF "$line" "$obj/.config" && continue ;;
		esac
		if ((opt)); then absent+=("$line"); else missing+=("$line"); fi
	done < <(fragment | grep -v '^#' | grep .)
	for line in "${absent[@]}"; do
		log "note: optional $line not set (not in this kernel's Kconfig?)"
	done
	if ((${#missing[@]})); then
		echo "debug-kernel: after olddefconfig these options are not as required:" >&2
		for line in "${missing[@]}"; do
			echo "  want $line, have: $(grep -E "(^|# )${line%%=*}[= ]" "$obj/.config" || echo absent)" >&2
		done
		exit 1
	fi
	echo "$hash" >"$cache/.stamp-config"
	log "configuration checked: every required option is set"
fi
# Before the first build, kernelrelease lacks CONFIG_LOCALVERSION (no
# auto.conf yet): ask once the tree is configured for the build.
mk -s syncconfig >/dev/null
kver=$(mk -s kernelrelease)

# --- 3. build --------------------------------------------------------------
if [[ ! -e $cache/.stamp-build ]]; then
	log "building $kver: make -j$jobs bzImage modules modules_prepare (nice 19; resumes where it stopped)"
	b0=$SECONDS
	mk -j"$jobs" bzImage modules modules_prepare
	find "$obj" -name '*.o' | wc -l >"$cache/.objcount"
	echo "$kver $((SECONDS - b0))s $(date -Is)" >"$cache/.stamp-build"
	log "built in $((SECONDS - b0)) s"
fi

# --- 4. install into the rig's root ------------------------------------------
if [[ ! -e $cache/.stamp-install ]]; then
	rm -rf "$root"
	mkdir -p "$root/boot"
	cp "$obj/arch/x86/boot/bzImage" "$root/boot/vmlinuz-$kver"
	cp "$obj/System.map" "$root/boot/System.map-$kver"
	cp "$obj/.config" "$root/boot/config-$kver"
	# modules.builtin* (the guest's modprobe answers "builtin") and depmod.
	mk -s INSTALL_MOD_PATH="$root" modules_install >/dev/null
	ln -sfn "$obj" "$root/lib/modules/$kver/build"
	rm -f "$root/lib/modules/$kver/source"
	echo "$kver" >"$kver_file"
	date -Is >"$cache/.stamp-install"
fi
log "done: $kver in $((SECONDS - t0)) s this run"
log "kernel $root/boot/vmlinuz-$kver, modules $root/lib/modules/$kver, KDIR $obj"
echo "$kver"
