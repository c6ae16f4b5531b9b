#!/bin/bash
# tests/vm/run.sh - boot one Debian kernel under qemu (TCG, no KVM needed)
# with the host's userspace shared read-only over 9p, and run a command in it.
#
# Usage:
#   tests/vm/run.sh --kver <kver> --cache <cachedir> --out <outdir>
#                   [--nvme-size 512M] [--nvme-count 1|2] [--mem 2G]
#                   [--smp 2] [--timeout 600] [--keep-nvme]
#                   [--kernel-root <dir>] [--append <kernel args>]
#                   [--blkdebug <N>:<conf>] [--resume-after-stall]
#                   -- <command> [args...]
#   tests/vm/run.sh --debug --cache <cachedir> --out <outdir> [...] -- <command>
#
#   e.g. tests/vm/run.sh --kver 6.1.0-57-amd64 --cache build/cache \
#            --out build/vm-6.1 -- make -C tests check
#
# Inside the guest the command runs as root, via bash, in the directory
# run.sh was started from (its tree, the git toplevel or the directory
# itself, is visible read-only even under /tmp), with the host's / read-only,
# /tmp a tmpfs
# (TMPDIR=/tmp, HOME=/tmp), DM_DISABLE_UDEV=1 and KVT_GUEST=1 exported,
# <outdir> writable at the same path as on the host, the full module tree
# of <kver> under /lib/modules/<kver>, and NVMe disks with serials kvt0
# (kvt1, ...) backed by fresh sparse <outdir>/nvme<N>.img files.
#
# --keep-nvme: reuse <outdir>/nvme<N>.img files that exist (any size; only
# missing ones are created), so consecutive runs with the same <outdir>
# boot on the same disks (tests/persist/). Never recreated while kept, not
# even when a boot is retried.
#
# --kernel-root <dir>: boot a kernel built here rather than a Debian
# package: <dir>/boot/vmlinuz-<kver> with its module tree (modules.builtin,
# depmod'ed) in <dir>/lib/modules/<kver>; tests/debug-kernel/build.sh makes
# one. $KVTIER_VM_KERNEL_ROOT is the default when it holds <kver>, so
# scripts that call run.sh (tests/persist/run.sh) boot it unchanged.
# --debug: the debug kernel of tests/debug-kernel/build.sh (its root and
# release; --kver not needed), with kasan_multi_shot loglevel=5 no5lvl on
# the kernel command line. $KVTIER_VM_DEBUG=1 is --debug, so scripts that
# call run.sh (tests/persist/run.sh) boot the debug kernel the same way.
# --blkdebug N:CONF: NVMe drive N (serial kvtN) goes through QEMU's
# blkdebug driver with the rules of the file CONF (blkdebug's config
# format: [inject-error] sections with event, iotype, sector, errno,
# once), e.g. tests/vm/blkdebug-ioerr.conf. CONF is copied to
# <outdir>/blkdebugN.conf, and the guest command gets
# KVTIER_BLKDEBUG_CONF (that copy) and KVTIER_BLKDEBUG_NVME=N exported
# (tests/kvtier_blkdebug_test.c reads the sectors from it). blkdebug
# activates an [inject-error] rule when its event fires; the raw format
# driver over it fires read_aio on every read, so give every rule
# event "read_aio" (active from the first read of the boot on, for
# every request type its iotype names) rather than "write_aio", which
# would deactivate the read rules at each write.
# --append: more kernel command line ($KVTIER_VM_APPEND is added too).
# The guest always gets watchdog_thresh=60 (a soft lockup is reported after
# 120 s, not 20 s): under TCG the guest runs some 30-50 times slower than
# on hardware, and a stretch of page clearing in the guest's allocator or
# compaction (init_on_alloc) under memory pressure, a fraction of a second
# on hardware, was reported as a 21-52 s soft lockup in kcompactd and in
# the memory_pressure hog, failing runs that kvtier had no part in.
# $KVTIER_VM_TIMEOUT_SCALE (a whole number, default 1) multiplies --timeout,
# and $KVTIER_VM_MEM is the default of --mem: `make check-debug` sets both
# for the slow debug kernel. A guest that has not started the command
# $KVTIER_VM_BOOT_HANG_S seconds after qemu started (default 150 times the
# scale) is taken for a boot hang and booted again, as a boot crash is.
#
# Timer stalls: a guest that started the command and then reports an RCU
# stall whose cause is a vCPU that takes no timer interrupt ("timer wakeup
# didn't happen" + "Possible timer handling issue", and no CPU listed as
# stalled by another: QEMU 7.2's TCG left an idle vCPU unwoken; see
# Documentation/admin-guide/kvtier-testing.rst) is killed at once rather
# than at --timeout, and run.sh exits 75, so a caller whose boot can be
# repeated (tests/persist/run.sh) runs it again.
# --resume-after-stall: for a command that can resume (tests/run-suite.sh):
# after such a stall the console is kept as console-stall.log and the
# guest booted once more with <outdir>/resume-suite created, so the command
# goes on after what had finished. A second stall fails the run (124).
#
# When the kernel has kmemleak (the debug kernel), the guest scans for
# leaks after the command (two scans) and writes <outdir>/kmemleak.log; a
# leak whose backtrace names kvtier, or has a frame that no longer resolves
# to a symbol (an unloaded module: only kvtier.ko is ever loaded there),
# fails the run; other leaks are printed and do not.
#
# Outputs in <outdir>: console.log (all serial output), dmesg.log, guest-rc,
# guest-cmd.sh, nvme*.img, qemu.pid (qemu's pid while it runs: a test may
# kill -9 it to cut power; run.sh then exits 124 as for a timeout).
#
# Exit status: the guest command's status; 1 if the guest recorded no status
# or the kernel log shows a BUG/WARNING/Oops/lockdep report/...; 124 if the
# VM hit --timeout; 75 if the guest hit the timer stall above (without
# --resume-after-stall).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# klog_problems: the kernel-log gate
. "$here/../tap-lib.sh"

usage() {
	sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

kver='' cache='' out='' nvme_size=512M nvme_count=1 mem=${KVTIER_VM_MEM:-2G} smp=2 timeout_s=600
keep_nvme=0 kroot='' debug=${KVTIER_VM_DEBUG:-0} append=${KVTIER_VM_APPEND:-} blkdebug=''
resume_after_stall=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--kver) kver=$2; shift 2 ;;
	--cache) cache=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--nvme-size) nvme_size=$2; shift 2 ;;
	--nvme-count) nvme_count=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--keep-nvme) keep_nvme=1; shift ;;
	--kernel-root) kroot=$2; shift 2 ;;
	--debug) debug=1; shift ;;
	--append) append+=" $2"; shift 2 ;;
	--resume-after-stall) resume_after_stall=1; shift ;;
	--blkdebug) blkdebug=$2; shift 2 ;;
	--) shift; break ;;
	-h | --help) usage ;;
	*) echo "run.sh: unknown option $1" >&2; usage ;;
	esac
done
[[ $debug =~ ^[01]$ ]] || { echo "run.sh: KVTIER_VM_DEBUG must be 0 or 1" >&2; exit 2; }
if ((debug)); then
	dk=$here/../debug-kernel/build.sh
	kroot=$("$dk" --root) && dkver=$("$dk" --kver) || {
		echo "run.sh: --debug: no debug kernel built (tests/debug-kernel/build.sh)" >&2
		exit 2
	}
	[[ -z $kver ]] && kver=$dkver
	# Every KASAN report, not only the first; warnings (lockdep, WARN)
	# on the console too, in case the guest never writes dmesg.log.
	# no5lvl: TCG's -cpu max offers LA57, and KASAN under 5-level paging
	# reports a wild access in the first interrupt of boot (identify_cpu).
	append+=" kasan_multi_shot loglevel=5 no5lvl"
fi
[[ -n $kver && -n $cache && -n $out && $# -gt 0 ]] || usage
[[ $nvme_count =~ ^[0-9]+$ ]] || { echo "run.sh: bad --nvme-count" >&2; exit 2; }
[[ $timeout_s =~ ^[0-9]+$ ]] || { echo "run.sh: bad --timeout" >&2; exit 2; }
scale=${KVTIER_VM_TIMEOUT_SCALE:-1}
[[ $scale =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: bad KVTIER_VM_TIMEOUT_SCALE" >&2; exit 2; }
timeout_s=$((timeout_s * scale))
# A guest that has not started the command this long after qemu started
# hung while booting (see the retry below). Boots take 10-20 s here.
boot_hang_s=${KVTIER_VM_BOOT_HANG_S:-$((150 * scale))}
[[ $boot_hang_s =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: bad KVTIER_VM_BOOT_HANG_S" >&2; exit 2; }
if [[ -z $kroot && -n ${KVTIER_VM_KERNEL_ROOT:-} && -d $KVTIER_VM_KERNEL_ROOT/lib/modules/$kver ]]; then
	kroot=$KVTIER_VM_KERNEL_ROOT
fi
if [[ -n $kroot ]]; then
	kroot=$(cd "$kroot" && pwd -P) || exit 2
	[[ -f $kroot/boot/vmlinuz-$kver && -d $kroot/lib/modules/$kver ]] || {
		echo "run.sh: $kroot has no boot/vmlinuz-$kver with lib/modules/$kver" >&2
		exit 2
	}
	if [[ $kroot =~ [[:space:],] ]]; then
		echo "run.sh: --kernel-root path must not contain spaces or commas: $kroot" >&2
		exit 2
	fi
fi

bd_index='' bd_conf=''
if [[ -n $blkdebug ]]; then
	bd_index=${blkdebug%%:*} bd_conf=${blkdebug#*:}
	if ! [[ $bd_index =~ ^[0-9]+$ ]] || ((bd_index >= nvme_count)) || [[ ! -f $bd_conf ]]; then
		echo "run.sh: --blkdebug N:CONF needs N < --nvme-count and a config file" >&2
		exit 2
	fi
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
# Paths travel on the kernel command line (space separated) and into a
# 9p mountpoint; keep them simple rather than quote them there.
if [[ $out =~ [[:space:],] ]]; then
	echo "run.sh: --out path must not contain spaces or commas: $out" >&2
	exit 2
fi

# The caller's tree (git toplevel of the cwd, else the cwd) travels as a
# read-only share "src" too: the guest covers /tmp, /run, /var/tmp and /dev
# with fresh mounts, so a checkout (and its build/) under one of those
# would otherwise be invisible there.  The guest mounts it at the same path
# (only where such a mount covers it), before <outdir>, so a writable
# <outdir> inside the tree still wins.  Physical path: a symlink under /tmp
# would not survive into the guest either.
src=$(pwd -P)
if top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null) && [[ -d $top ]]; then
	src=$(cd "$top" && pwd -P)
fi
src_args=() src_cmdline=''
if [[ $src == / ]]; then
	: # the host root share already is the whole tree
elif [[ $src =~ [[:space:],] ]]; then
	echo "run.sh: warning: not sharing $src separately (spaces or commas in path)" >&2
else
	src_args=(-virtfs "local,path=$src,mount_tag=src,security_model=none,readonly=on,multidevs=remap")
	src_cmdline=" kvt_src=$src"
fi

# Kernel + initramfs (cached; cheap when up to date).
"$here/prepare.sh" "$kver" "$cache" ${kroot:+"$kroot"} >/dev/null
cache=$(cd "$cache" && pwd)
kernel=$cache/$kver/vmlinuz
initrd=$cache/$kver/initrd.gz
mods=$cache/$kver/root/lib/modules/$kver
[[ -n $kroot ]] && mods=$kroot/lib/modules/$kver

# The guest runs this with bash inside the chroot: cd to where we were
# started (same path in the guest), then the command, quoted exactly as
# given so arguments with spaces survive.
{
	echo '# generated by tests/vm/run.sh'
	# $PWD as the caller sees it; its physical path if that is a symlink
	# the guest lacks (e.g. one under /tmp).
	printf 'cd %q 2>/dev/null || cd %q || exit 1\n' "$PWD" "$(pwd -P)"
	if [[ -n $bd_index ]]; then
		printf 'export KVTIER_BLKDEBUG_CONF=%q KVTIER_BLKDEBUG_NVME=%q\n' \
			"$out/blkdebug$bd_index.conf" "$bd_index"
	fi
	printf '%q ' "$@"
	echo
} >"$out/guest-cmd.sh"
rm -f "$out/guest-rc" "$out/dmesg.log" "$out/console.log" "$out/guest-started" \
	"$out"/console-bootfail-*.log "$out/qemu.pid" "$out/kmemleak.log" "$out"/blkdebug*.conf
[[ -n $bd_index ]] && cp "$bd_conf" "$out/blkdebug$bd_index.conf"

# Fresh sparse NVMe backing files every run: tests must not see leftovers
# (unless --keep-nvme asks for the previous run's disks).
# cache=none + aio=native is closest to real hardware (no host page cache),
# but needs O_DIRECT, which e.g. tmpfs refuses; probe and fall back.
drive_opts=cache=none,aio=native
if ! dd if=/dev/zero of="$out/.odirect-probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null; then
	drive_opts=cache=writeback,aio=threads
fi
rm -f "$out/.odirect-probe"
# make_nvme: (re)create the backing files and the matching qemu args. With
# --keep-nvme an existing file is never touched, on retries neither.
make_nvme() {
	local i img
	nvme_args=()
	for ((i = 0; i < nvme_count; i++)); do
		img=$out/nvme$i.img
		if ((!keep_nvme)) || [[ ! -f $img ]]; then
			rm -f "$img"
			truncate -s "$nvme_size" "$img"
		fi
		if [[ $i == "$bd_index" ]]; then
			nvme_args+=(-drive "if=none,id=nv$i,format=raw,$drive_opts,file.driver=blkdebug,file.config=$out/blkdebug$i.conf,file.image.driver=file,file.image.filename=$img")
		else
			nvme_args+=(-drive "file=$img,if=none,id=nv$i,format=raw,$drive_opts")
		fi
		nvme_args+=(-device "nvme,serial=kvt$i,drive=nv$i")
	done
}
make_nvme

qemu_cmd=(qemu-system-x86_64
	-machine q35 -cpu max -m "$mem" -smp "$smp"
	-nographic -vga none -no-reboot -nic none
	# SeaBIOS would otherwise drive the serial port too and send a terminal
	# reset (ESC c) + clear screen to the caller's terminal.  (qemu warns
	# that the name lacks an "opt/" prefix; SeaBIOS reads exactly this one.)
	-fw_cfg "name=etc/sercon-port,string=0"
	-kernel "$kernel" -initrd "$initrd"
	-pidfile "$out/qemu.pid"
	-append "console=ttyS0 quiet panic=-1 watchdog_thresh=60 kvt_out=$out kvt_mods=$mods$src_cmdline$append"
	# virtme-ng style: the host's / read-only, <outdir> writable.
	# multidevs=remap avoids inode collisions across host filesystems.
	-virtfs "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$out,mount_tag=out,security_model=none,multidevs=remap"
	# The caller's tree, read-only (see above).
	"${src_args[@]}")

# kill_qemu MARKER: SIGKILL our qemu (never another process: the pid file
# may be stale) and leave <outdir>/MARKER for the caller of boot_vm.
kill_qemu() {
	local pid
	pid=$(cat "$out/qemu.pid" 2>/dev/null)
	[[ $pid =~ ^[0-9]+$ && $(cat "/proc/$pid/comm" 2>/dev/null) == qemu-system-* ]] ||
		return 0
	: >"$out/$1"
	kill -9 "$pid"
}

# boot_watchdog: kill our qemu if the guest has not started the command
# (guest-init.sh writes guest-started just before it) boot_hang_s after
# the boot began, and leave .boot-hung for the retry below. Nothing of
# what is tested runs before that file exists.
boot_watchdog() {
	local waited=0
	while ((waited < boot_hang_s * 10)); do
		[[ -e $out/guest-started ]] && return 0
		sleep 0.1
		waited=$((waited + 1))
	done
	kill_qemu .boot-hung
}

# stall_watchdog: kill our qemu when the guest, after starting the
# command, reports the timer stall --resume-after-stall describes, and
# leave .guest-stalled (exit 75 below, or the resumed boot). Any other
# stall is left to the kernel-log gate.
stall_watchdog() {
	local log=$out/console.log
	while sleep 2; do
		[[ -e $out/guest-started && -f $log ]] || continue
		if ! grep -q "timer wakeup didn't happen" "$log" ||
			! grep -q 'Possible timer handling issue' "$log" ||
			grep -q 'detected stalls on CPUs' "$log"; then
			continue
		fi
		kill_qemu .guest-stalled
		return 0
	done
}

# boot_vm: run qemu once, console to the terminal and console.log.
# Sets qemu_rc, and boot_hung when the watchdog ended a boot that never
# started the command.  stdin from /dev/null: qemu's -nographic stdio mux
# must not grab the caller's terminal (or CI's pipe).  -k: SIGKILL if
# SIGTERM is ignored.
boot_vm() {
	local kept='' wpid='' spid=''
	((keep_nvme)) && kept=' kept'
	echo "run.sh: booting $kver (timeout ${timeout_s}s, ${nvme_count}x${kept} nvme $nvme_size, $drive_opts${bd_index:+, blkdebug on nvme$bd_index})" >&2
	local st
	rm -f "$out/guest-started" "$out/.boot-hung" "$out/.guest-stalled" "$out/qemu.pid"
	set +e
	if ((boot_hang_s < timeout_s)); then
		boot_watchdog &
		wpid=$!
	fi
	stall_watchdog &
	spid=$!
	timeout -k 10 "$timeout_s" "${qemu_cmd[@]}" "${nvme_args[@]}" </dev/null 2>&1 |
		tee "$out/console.log"
	st=("${PIPESTATUS[@]}")
	if [[ -n $wpid ]]; then
		kill "$wpid" 2>/dev/null
		wait "$wpid" 2>/dev/null
	fi
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	set -e
	qemu_rc=${st[0]}
	boot_hung=0
	[[ -e $out/.boot-hung ]] && boot_hung=1
	rm -f "$out/.boot-hung"
	guest_stalled=0
	[[ -e $out/.guest-stalled ]] && guest_stalled=1
	rm -f "$out/.guest-stalled"
}

start=$(date +%s.%N)
boot_vm
# qemu refuses aio=native/O_DIRECT on some filesystems (and some builds)
# even when the probe above passed: retry once with page-cache I/O.
if [[ $qemu_rc -ne 0 && $qemu_rc -ne 124 && $qemu_rc -ne 137 && $drive_opts == cache=none* ]] &&
	grep -qiE 'aio|O_DIRECT|cache\.direct|Invalid argument' "$out/console.log"; then
	echo "run.sh: qemu refused $drive_opts, retrying with cache=writeback,aio=threads" >&2
	drive_opts=cache=writeback,aio=threads
	make_nvme
	boot_vm
fi
# Debian's 6.12 occasionally takes an int3 Oops while patching kernel text
# during early boot under multi-threaded TCG (no KVM here), before /init
# runs; and a guest kernel on a loaded 2-core host has hung before /init
# with RCU stalls ("timer wakeup didn't happen", PID 1 still swapper).
# Neither has anything to do with what is tested. A guest that crashed or
# hung before starting the command is booted again, at most twice, and
# the failed boot's console is kept. Anything after the command started
# is judged by the gate below.
for attempt in 1 2; do
	if ((boot_hung)); then
		why="hung while booting (the command had not started after ${boot_hang_s}s)"
	elif [[ -e $out/guest-started || $qemu_rc -eq 124 || $qemu_rc -eq 137 ]] ||
		! grep -qE 'Oops|Kernel panic' "$out/console.log"; then
		break
	else
		why="crashed while booting, before the command started"
	fi
	mv "$out/console.log" "$out/console-bootfail-$attempt.log"
	echo "run.sh: $kver $why (kept in console-bootfail-$attempt.log); booting again" >&2
	make_nvme
	boot_vm
done
if ((guest_stalled && !resume_after_stall)); then
	echo "run.sh: $kver: a vCPU took no timer interrupt (RCU: timer wakeup didn't happen); the boot was ended at once, not at the timeout; see $out/console.log" >&2
	exit 75
fi
if ((guest_stalled)); then
	mv "$out/console.log" "$out/console-stall.log"
	echo "run.sh: $kver: a vCPU took no timer interrupt (RCU: timer wakeup didn't happen; kept in console-stall.log); booting again to resume the command" >&2
	: >"$out/resume-suite"
	make_nvme
	boot_vm
	rm -f "$out/resume-suite"
	if ((guest_stalled)); then
		echo "run.sh: $kver: the timer stall came back after resuming; see $out/console.log" >&2
		exit 124
	fi
fi
if ((boot_hung)); then
	echo "run.sh: $kver hung while booting three times; see $out/console-bootfail-*.log" >&2
fi
end=$(date +%s.%N)
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
echo "run.sh: $kver boot+run took ${elapsed}s" >&2

if [[ $qemu_rc -eq 124 || $qemu_rc -eq 137 ]]; then
	if [[ $qemu_rc -eq 137 ]]; then
		echo "run.sh: qemu was killed (SIGKILL; by a test, or ${timeout_s}s timeout) ($kver); see $out/console.log" >&2
	else
		echo "run.sh: VM timed out after ${timeout_s}s ($kver); see $out/console.log" >&2
	fi
	exit 124
fi
if [[ $qemu_rc -ne 0 ]]; then
	echo "run.sh: qemu exited with status $qemu_rc" >&2
fi

# Kernel-log gate (tests/tap-lib.sh): dmesg.log, and console.log, which
# also covers a guest that died before writing dmesg.log.
bad=0
for f in "$out/dmesg.log" "$out/console.log"; do
	[[ -f $f ]] || continue
	if hits=$(klog_problems "$f"); then
		echo "run.sh: kernel problem reported in $f:" >&2
		printf '%s\n' "$hits" | head -n 40 >&2
		bad=1
	fi
done
# kmemleak (debug kernel): the guest's report after two scans. One record
# is "unreferenced object 0x... (size N):" up to the next. A record fails
# the run when its backtrace names kvtier or has a bare-address frame
# ("[<ffff...>] 0xffff...": a module unloaded since; only kvtier.ko is
# loaded in the debug kernel, everything else is built in).
if [[ -s $out/kmemleak.log ]]; then
	leaks=$(grep -c '^unreferenced object' "$out/kmemleak.log" || true)
	ours=$(awk '
		function flush() { if (rec != "" && mine) { printf "%s", rec; n++ } rec = ""; mine = 0 }
		/^unreferenced object/ { flush() }
		{ rec = rec $0 "\n" }
		/^ *\[<[0-9a-f]+>\] / && (/kvtier/ || /\] 0x[0-9a-f]+$/) { mine = 1 }
		END { flush() }' "$out/kmemleak.log")
	if [[ -n $ours ]]; then
		echo "run.sh: kmemleak: leaks from kvtier ($leaks suspected in all; $out/kmemleak.log):" >&2
		printf '%s\n' "$ours" | head -n 200 >&2
		bad=1
	else
		echo "run.sh: kmemleak: $leaks suspected leaks, none from kvtier (not judged; $out/kmemleak.log):" >&2
		grep -A12 '^unreferenced object' "$out/kmemleak.log" | head -n 60 >&2
	fi
elif [[ -e $out/kmemleak.log ]]; then
	echo "run.sh: kmemleak: no leaks" >&2
fi
if ((bad)); then
	exit 1
fi

if [[ ! -s $out/guest-rc ]]; then
	echo "run.sh: guest recorded no exit status (crashed or did not finish); see $out/console.log" >&2
	exit 1
fi
rc=$(<"$out/guest-rc")
[[ $rc =~ ^[0-9]+$ ]] || { echo "run.sh: garbage in guest-rc: $rc" >&2; exit 1; }
if [[ ! -f $out/dmesg.log ]]; then
	echo "run.sh: guest did not write dmesg.log" >&2
	exit 1
fi
echo "run.sh: guest command exited with $rc" >&2
exit "$rc"
