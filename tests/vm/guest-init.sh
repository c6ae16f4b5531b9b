#!/bin/sh
# shellcheck shell=sh
# tests/vm/guest-init.sh - /init of the test rig's initramfs (busybox sh).
# prepare.sh copies it into the initramfs; it is not run on the host.
#
# What it does (virtme-ng style): load just enough modules to reach the
# host's root filesystem over virtio-9p, mount it read-only at /host, lay
# fresh proc/sys/dev/tmpfs/debugfs/configfs mounts and the writable "out"
# share on top, then chroot into it and run <outdir>/guest-cmd.sh with bash.
# The command's exit status goes to <outdir>/guest-rc and the kernel log to
# <outdir>/dmesg.log; run.sh on the host judges both.  We then power off
# (never just exit: PID 1 exiting panics the kernel, and that panic would
# pollute the console log that run.sh scans).
#
# Parameters arrive on the kernel command line (read from /proc/cmdline so
# that the kernel's own parsing of unknown options does not matter):
#   kvt_out=<abs path>   host dir shared as mount_tag "out" (writable)
#   kvt_mods=<abs path>  host path of the full module tree for `uname -r`
#                        (optional; bound over /lib/modules/<kver> in the chroot)
#   kvt_src=<abs path>   host dir shared as mount_tag "src" (read-only): the
#                        caller's tree; mounted at the same path if one of our
#                        own mounts (/tmp, /run, /var/tmp, /dev) covers it

PATH=/sbin:/bin:/usr/sbin:/usr/bin
export PATH

log() { echo "kvt-init: $*"; }

# Last resort: power off so qemu exits instead of waiting for the timeout.
die() {
	log "FATAL: $*"
	sync
	poweroff -f
	echo o >/proc/sysrq-trigger
	sleep 5
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

kver=$(uname -r)
out=
mods=
tree=
# Word splitting is intended: the command line is one space-separated line.
read -r cmdline </proc/cmdline
for arg in $cmdline; do
	case "$arg" in
	kvt_out=*) out=${arg#kvt_out=} ;;
	kvt_mods=*) mods=${arg#kvt_mods=} ;;
	kvt_src=*) tree=${arg#kvt_src=} ;;
	esac
done
[ -n "$out" ] || die "kvt_out= missing from kernel command line"

# load <mod>...: modprobe each unless built in.  busybox modprobe does not
# know about modules.builtin, so check that list ourselves.
load() {
	for m in "$@"; do
		if grep -q "/$(echo "$m" | sed 's/[-_]/[-_]/g')\.ko" "/lib/modules/$kver/modules.builtin" 2>/dev/null; then
			continue
		fi
		modprobe "$m" || log "warning: modprobe $m failed"
	done
}

# virtio transport + 9p to reach the host, nvme for the test disks, configfs
# because nvmet needs /sys/kernel/config.
load virtio_pci 9pnet_virtio 9p nvme configfs

# cache=loose on the read-only shares: the host changes nothing in them
# while the guest runs, and without a cache every exec and stat is a
# round trip through TCG (python3's start took 8 to 11 s). <outdir>, which
# both sides write, stays uncached.
mkdir -p /host
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose host /host ||
	die "cannot mount host root over 9p"

# Kernel-interface filesystems inside the chroot.  Mounting over
# directories of a read-only fs is fine; it is only their contents that
# are read-only.
mount -t proc proc /host/proc
mount -t sysfs sysfs /host/sys
mount -t devtmpfs devtmpfs /host/dev
mkdir -p /host/dev/pts /host/dev/shm 2>/dev/null
mount -t devpts devpts /host/dev/pts 2>/dev/null
mount -t tmpfs tmpfs /host/dev/shm
mount -t debugfs debugfs /host/sys/kernel/debug || log "warning: no debugfs"
mount -t tracefs tracefs /host/sys/kernel/tracing 2>/dev/null ||
	mount -t tracefs tracefs /host/sys/kernel/debug/tracing 2>/dev/null ||
	log "warning: no tracefs"
mount -t configfs configfs /host/sys/kernel/config || log "warning: no configfs"

# Scratch space: the host root is read-only here, so everything that wants
# to write (TMPDIR, lock files, python caches) gets a tmpfs.
mount -t tmpfs -o mode=1777 tmpfs /host/tmp
mount -t tmpfs -o mode=755 tmpfs /host/run
mount -t tmpfs -o mode=1777 tmpfs /host/var/tmp

# Real modules for the chroot's kmod: the host's /lib/modules/<kver> only
# has headers symlinks.  Prefer the full tree of the extracted kernel image
# (so any module can be modprobe'd), fall back to the initramfs subset.
src=/lib/modules/$kver
if [ -n "$mods" ] && [ -f "/host$mods/modules.dep" ]; then
	src=/host$mods
fi
if [ ! -d "/host/lib/modules/$kver" ]; then
	# No mountpoint on the read-only host fs: cover /lib/modules instead.
	mount -t tmpfs tmpfs /host/lib/modules
	mkdir -p "/host/lib/modules/$kver"
fi
mount -o bind "$src" "/host/lib/modules/$kver" ||
	log "warning: cannot bind $src over /lib/modules/$kver"

# The caller's tree, read-only at the same path, where our own mounts above
# hid it (elsewhere the host root share shows it already).  Before <outdir>,
# so a writable <outdir> inside the tree (e.g. <repo>/build/vm-x) goes on top.
case "$tree" in
/tmp/* | /run/* | /var/tmp/* | /dev/*)
	mkdir -p "/host$tree" 2>/dev/null
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose src "/host$tree" ||
		log "warning: cannot mount src share at $tree"
	;;
esac

# The writable share at the same absolute path as on the host, so paths
# in the test command mean the same thing on both sides.
# If <outdir> lies under a path we just covered (/tmp, /run, /var/tmp,
# /dev), its mountpoint is missing; those are writable here, so create it.
mkdir -p "/host$out" 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,rw,msize=512000 out "/host$out" ||
	die "cannot mount out share at $out"

# nvme-tcp / nvmet-tcp tests talk over loopback.
ip link set lo up 2>/dev/null

rm -f "/host$out/guest-rc"
# Tells run.sh the kernel booted and the command began (see its retry).
: >"/host$out/guest-started"
chroot /host /usr/bin/env -i \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/tmp TMPDIR=/tmp TERM=dumb LANG=C.UTF-8 \
	DM_DISABLE_UDEV=1 KVT_GUEST=1 \
	/bin/bash "$out/guest-cmd.sh" </dev/console >/dev/console 2>&1
rc=$?
echo "$rc" >"/host$out/guest-rc"
# A kernel with kmemleak (tests/debug-kernel): two scans (an object is
# reported only when a second scan still finds it unreferenced and
# unchanged), then the report for run.sh to judge.
kml=/host/sys/kernel/debug/kmemleak
if [ -e "$kml" ]; then
	log "kmemleak: scanning"
	echo scan >"$kml" 2>/dev/null
	echo scan >"$kml" 2>/dev/null
	cat "$kml" >"/host$out/kmemleak.log" 2>/dev/null ||
		log "warning: cannot read $kml"
fi
dmesg >"/host$out/dmesg.log"
sync
poweroff -f
# poweroff -f should not return; if it does, make sure qemu still exits.
echo o >/proc/sysrq-trigger
sleep 10
