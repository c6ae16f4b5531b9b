#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Multi-boot tests of kvtier's persistent regions, on the host: each test
# boots one kernel several times in QEMU (tests/vm/run.sh --keep-nvme) on
# the same NVMe images, and works on the images between boots. The guest
# half is tests/persist/guest.sh with build/tests/kvt_persist_tool.
#
#   reboot   boot 1 writes a 256 MiB persistent region and fsyncs it, and
#            stores a kvtier.llama prompt's KV blocks in a kvstore, then
#            powers off without detaching; boot 2 attaches and verifies
#            every byte through a mapping, restores the prompt's prefix
#            and checks the logits against a recompute, then the
#            module-reload variant (write, fsync, rmmod, insmod, attach,
#            verify) in the same boot
#   corrupt  boot 1 writes a region (and two on a third namespace, with a
#            detach after each, so both its checkpoints hold records);
#            the host finds one of its pages in the raw image and flips
#            bytes in it; boot 2 gets EIO (pread) and
#            SIGBUS (mapping) for that page only, checksum_errors and
#            error -74; the host damages both superblock copies of that
#            image, writes a foreign signature on a second and damages both
#            checkpoint areas of a third; boot 3 gets EUCLEAN, EMEDIUMTYPE
#            and EUCLEAN, and the images are byte-identical afterwards
#   apply    kvtier.conf at boot (tests/persist/guest.sh apply-1, apply-2):
#            boot 1 runs kvtier.service's ExecStart on a configuration of
#            two tiers, checks what it did, that a second run changes
#            nothing and that bad files change nothing, writes a
#            persistent region, runs ExecStop; boot 2 runs ExecStart and
#            reads the region back by name
#   scale    the drives users own: sparse images of 8 TiB (kvt0) and 15 TiB
#            (kvt1; the host keeps only what is written). Boot 1 attaches
#            each blank one (formatting it) and writes 1,000 persistent
#            regions of 4 KiB to 256 MiB, detaches; boot 2 attaches each,
#            verifies every byte, detaches. Every attach is timed and its
#            kernel memory measured against #17's bounds (5 s, 256 MiB;
#            tests/persist/guest.sh scale-1, scale-2).
#            KVTIER_SCALE_FORMAT=V formats them as version V instead of
#            the module's default (a baseline for the checkpoint numbers)
#   compat   the namespaces an earlier module left: the kept images of
#            tests/persist/images (format versions 1 to 4, a few regions
#            each; see its README) are unpacked and attached, every byte
#            of every region read back, a region written, detached and
#            attached again: every version stays read-write, and stays
#            what it is
#   compat-make  (not run by default) make the images of the format
#            versions KVTIER_COMPAT_VERSIONS ("1 2 3 4") that tests/persist/images
#            lacks, with this module: when a format version is added; the
#            images kept there are never made again
#   crash    KVTIER_CRASH_CUTS (20) boots each verify what the previous boot
#            left, start a write/fsync/unlink workload on persistent regions
#            and are cut by kill -9 of QEMU after a random delay; a last
#            boot verifies, detaches, attaches and verifies again. Cuts 4
#            and 7 of every ten are instead made where a checkpoint that
#            compacts the journal stopped (debugfs freeze_at): its area
#            written but not its superblock (ckpt-area), or its
#            superblock but not what follows (ckpt-super). The
#            delays and workloads come from a seeded random source: the
#            crash line of tests/fuzz-seeds.txt (seed and cuts), a fresh
#            seed with KVTIER_FUZZ_RANDOM=1; the seed is printed,
#            KVTIER_CRASH_SEED sets it. KVTIER_CRASH_PART=K/N boots only
#            the cuts whose number modulo N is K (make check gives each
#            kernel its share of the kept cuts, so each cut runs once)
#   kvstore  the same cuts for a kvtier.kvstore (Python): each boot checks
#            that every key reads back its own block or nothing and that
#            every put and delete the journals of earlier boots saw finish
#            holds, then puts and deletes blocks until it is cut; the
#            kvstore line of tests/fuzz-seeds.txt, KVTIER_KVSTORE_SEED and
#            KVTIER_KVSTORE_CUTS; KVTIER_CRASH_PART shares them out too
#
# usage: tests/persist/run.sh BUILD KVER OUT [TEST...]
#   BUILD  the build directory (BUILD/<kver>/kvtier.ko, BUILD/tests/,
#          BUILD/cache)
#   KVER   the kernel to boot (tests/vm/kernels.sh list)
#   OUT    results: OUT/<test>/ (images, console and checks of every boot),
#          OUT/tap.log
#   TEST   reboot, corrupt, apply, scale, compat, crash, kvstore (default:
#          all), compat-make
#
# Prints TAP (also to OUT/tap.log); exits 0 when every check passed.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# klog_problems; result and the TAP file are this script's own (below).
. "$top/tests/tap-lib.sh"

usage() {
	sed -n '2,/^set -uo/{/^#/s/^# \{0,1\}//p}' "$0" >&2
	exit 2
}
[[ $# -ge 3 ]] || usage
build=$(cd "$1" && pwd) || usage
kver=$2
mkdir -p "$3" || exit 2
outdir=$(cd "$3" && pwd)
shift 3
tests=("$@")
((${#tests[@]})) || tests=(reboot corrupt apply scale compat crash kvstore)
for t in "${tests[@]}"; do
	case $t in reboot | corrupt | apply | scale | compat | compat-make | crash | kvstore) ;;
	*) usage ;;
	esac
done

short=$(grep -oE '^[0-9]+\.[0-9]+' <<<"$kver")
tool=$build/tests/kvt_persist_tool
guest=$top/tests/persist/guest.sh
tap=$outdir/tap.log
: >"$tap"
n=0 failed=0

# ok|not-ok DESC: one TAP result.
result() {
	n=$((n + 1))
	if [[ $1 == ok ]]; then
		echo "ok $n - $short $test: $2" | tee -a "$tap"
	else
		failed=$((failed + 1))
		echo "not ok $n - $short $test: $2" | tee -a "$tap"
	fi
}

note() {
	echo "# $*" | tee -a "$tap"
}

# import FILE PREFIX: the guest's checks (ok/not ok lines) as TAP results.
import() {
	local line
	[[ -f $1 ]] || return 0
	while IFS= read -r line; do
		case $line in
		"ok - "*) result ok "$2${line#ok - }" ;;
		"not ok - "*) result not-ok "$2${line#not ok - }" ;;
		"# "*) echo "$line" | tee -a "$tap" ;;
		esac
	done <"$1"
}

# The kernel-log gate (klog_problems, sourced above) judges boots cut by a
# kill here: run.sh stops at the kill status before its own gate, and no
# dmesg.log exists.

# vm NAME NVME_COUNT NVME_SIZE TIMEOUT STEP [ARGS...]: one boot of the
# current test in $o on the kept images; its run.sh output goes to
# $o/boot-NAME.log, its console to $o/console-NAME.log, its checks to
# $o/checks-NAME.log. Sets vm_rc (run.sh's status).
vm() {
	local name=$1 count=$2 size=$3 timeout=$4
	shift 4
	rm -f "$o/checks.log"
	"$top/tests/vm/run.sh" --keep-nvme --kver "$kver" --cache "$build/cache" \
		--out "$o" --nvme-count "$count" --nvme-size "$size" \
		--timeout "$timeout" -- "$guest" "$build" "$o" "$@" \
		</dev/null >"$o/boot-$name.log" 2>&1
	vm_rc=$?
	((vm_rc == 75)) && stalled=1
	vm_done "$name"
}

# vm_done NAME: keep the boot's console and checks under its name.
vm_done() {
	[[ -f $o/console.log ]] && cp "$o/console.log" "$o/console-$1.log"
	[[ -f $o/checks.log ]] && mv "$o/checks.log" "$o/checks-$1.log"
}

# vm_result NAME DESC: the guest exited 0 and its kernel log is clean.
vm_result() {
	if ((vm_rc == 0)); then
		result ok "boot $1: $2 (guest exited 0, kernel log clean)"
	else
		result not-ok "boot $1: $2 (run.sh status $vm_rc; see $o/boot-$1.log)"
		sed -n '/^run.sh: /p' "$o/boot-$1.log" | sed 's/^/# /' | tail -n 20
		# A hung boot's console, for a log (CI's) that keeps nothing else.
		if ((vm_rc == 124 || vm_rc == 75)) && [[ -f $o/console-$1.log ]]; then
			echo "# the last 40 lines of its console:"
			tr -d '\r' <"$o/console-$1.log" | tail -n 40 | sed 's/^/#   /'
		fi
	fi
}

# boot N COUNT SIZE TIMEOUT STEP DESC [ARGS...]: boot N of the current test
# (vm; ARGS go to the guest's STEP), its checks as TAP results and its
# verdict; fails when the boot did.
boot() {
	vm "$1" "$2" "$3" "$4" "$5" "${@:7}"
	import "$o/checks-$1.log" "boot $1: "
	vm_result "$1" "$6"
	((vm_rc == 0))
}

sha() {
	sha256sum "$@" | awk '{ print $1 }'
}

# --- reboot ------------------------------------------------------------------

test_reboot() {
	boot 1 1 512M 900 reboot-1 "a 256 MiB persistent region and a prompt's KV blocks, power off attached" ||
		return
	boot 2 1 512M 900 reboot-2 "the region and the prompt's KV after a reboot; write, rmmod, insmod, verify"
}

# --- apply -------------------------------------------------------------------

# apply_moddep: the module index of the guest's kernel with kvtier.ko in
# updates/, made here by depmod -b on a hard-linked copy of its module tree
# (depmod writes new files and renames them over the old, so the cache's
# own index is left alone); guest.sh copies $o/moddep/modules.*
# over its overlay instead of running depmod -a, which reads every module
# of the kernel and takes a minute in TCG.
apply_moddep() {
	local mods=$build/cache/$kver/root/lib/modules/$kver root=$o/moddep-root f kroot rc=0
	# The kernel tests/vm/run.sh boots: the debug kernel's, or another root's.
	if [[ ${KVTIER_VM_DEBUG:-0} == 1 ]]; then
		kroot=$("$top/tests/debug-kernel/build.sh" --root) || return 1
		mods=$kroot/lib/modules/$kver
	elif [[ -n ${KVTIER_VM_KERNEL_ROOT:-} && -d $KVTIER_VM_KERNEL_ROOT/lib/modules/$kver ]]; then
		mods=$KVTIER_VM_KERNEL_ROOT/lib/modules/$kver
	fi
	rm -rf "$root" "$o/moddep"
	# A copy, not links, when the two are on different file systems.
	mkdir -p "$root/lib/modules" "$o/moddep" &&
		{ cp -al "$mods" "$root/lib/modules/$kver" 2>/dev/null ||
			{ rm -rf "$root/lib/modules/$kver" &&
				cp -a "$mods" "$root/lib/modules/$kver"; }; } &&
		install -D -m 0644 "$build/$kver/kvtier.ko" "$root/lib/modules/$kver/updates/kvtier.ko" &&
		depmod -b "$root" "$kver" || rc=1
	if ((rc == 0)); then
		for f in "$root/lib/modules/$kver"/modules.*; do
			cp "$f" "$o/moddep/" || rc=1
		done
	fi
	rm -rf "$root"
	return $rc
}

test_apply() {
	if apply_moddep; then
		result ok "host: depmod of the guest's module tree with kvtier.ko in updates/"
	else
		result not-ok "host: depmod of the guest's module tree with kvtier.ko in updates/"
		return
	fi
	boot 1 2 256M 600 apply-1 "kvtier.service's ExecStart and ExecStop on kvtier.conf" ||
		return
	boot 2 2 256M 600 apply-2 "the next boot's ExecStart, the region read back by name"
}

# --- corrupt -----------------------------------------------------------------

test_corrupt() {
	local page=37 offs off i h0 h1 k=0 img
	local seed_mark=0x5eed0003	# guest.sh's SEED_MARK

	vm 1 3 256M 600 corrupt-1
	import "$o/checks-1.log" "boot 1: "
	vm_result 1 "write and fsync regions on kvt2 and kvt0"
	((vm_rc == 0)) || return

	# The region was written once: one block holds page $page. Flip 16
	# bytes in its body (all copies, should the module have written more).
	offs=$("$tool" find "$o/nvme0.img" "$seed_mark" "$page")
	for off in $offs; do
		"$tool" flip "$o/nvme0.img" $((off + 1000)) 16 && k=$((k + 1))
	done
	if [[ -n $offs ]] && ((k == $(wc -w <<<"$offs"))); then
		result ok "host: page $page of \"mark\" found in the image at byte ${offs//$'\n'/ }, 16 bytes flipped"
	else
		result not-ok "host: page $page of \"mark\" found in the image and flipped ('$offs')"
		return
	fi
	vm 2 3 256M 600 corrupt-2 "$page"
	import "$o/checks-2.log" "boot 2: "
	vm_result 2 "EIO and SIGBUS for the flipped page only"

	# Both superblock copies of kvt0; a foreign signature on the blank
	# kvt1; both checkpoint areas of kvt2.
	k=0
	for i in 0 1; do
		"$tool" flip "$o/nvme0.img" $((i * 4096 + 200)) 4 && k=$((k + 1))
	done
	printf 'NOT-KVTIER foreign signature\n' |
		dd of="$o/nvme1.img" bs=4096 conv=notrunc status=none && k=$((k + 1))
	"$tool" ckpt-flip "$o/nvme2.img" 64 >/dev/null && k=$((k + 1))
	if ((k == 4)); then
		result ok "host: flipped bytes 200..203 of blocks 0 and 1 (kvt0), foreign block 0 (kvt1), both checkpoint areas (kvt2)"
	else
		result not-ok "host: damage the images ($k of 4 steps)"
		return
	fi
	h0=()
	for img in "$o"/nvme{0,1,2}.img; do
		h0+=("$(sha "$img")")
	done
	vm 3 3 256M 600 corrupt-3
	import "$o/checks-3.log" "boot 3: "
	vm_result 3 "attach refuses damaged and foreign namespaces"
	i=0
	for img in "$o"/nvme{0,1,2}.img; do
		h1=$(sha "$img")
		if [[ $h1 == "${h0[i]}" ]]; then
			result ok "host: ${img##*/} is byte-identical after boot 3 (sha256 ${h1:0:16}...)"
		else
			result not-ok "host: ${img##*/} changed during boot 3 (sha256 ${h0[i]:0:16}... -> ${h1:0:16}...)"
		fi
		i=$((i + 1))
	done
}

# --- scale -------------------------------------------------------------------

test_scale() {
	local img sizes=(8T 15T) i
	for i in 0 1; do
		img=$o/nvme$i.img
		rm -f "$img"
		if ! truncate -s "${sizes[i]}" "$img"; then
			result not-ok "host: a sparse ${sizes[i]} image at $img (truncate failed: file system limit?)"
			return
		fi
	done
	boot 1 2 8T 900 scale-1 "attach blank 8 TiB and 15 TiB namespaces, write 1,000 regions on each" \
		${KVTIER_SCALE_FORMAT:-} || return
	boot 2 2 8T 900 scale-2 "attach both again, every byte of every region read back"
	for i in 0 1; do
		note "host: nvme$i.img: $(du -h --apparent-size "$o/nvme$i.img" | cut -f1) apparent, $(du -h "$o/nvme$i.img" | cut -f1) on disk"
	done
	# The images are sparse but not small once written: free the space.
	rm -f "$o"/nvme*.img
}

# --- compat ------------------------------------------------------------------

images=$top/tests/persist/images

test_compat() {
	local v img
	for img in "$images"/v*.img.xz; do
		v=${img##*/v}
		v=${v%.img.xz}
		rm -f "$o/nvme0.img"
		if ! xz -dc "$img" >"$o/nvme0.img"; then
			result not-ok "host: $img unpacks"
			continue
		fi
		vm "v$v" 1 16M 600 compat "$v"
		import "$o/checks-v$v.log" "version $v: "
		vm_result "v$v" "a version-$v namespace an earlier module wrote: every byte, a write, a detach and an attach"
	done
	rm -f "$o/nvme0.img"
}

test_compat-make() {
	local v img
	for v in ${KVTIER_COMPAT_VERSIONS:-1 2 3 4 5}; do
		img=$images/v$v.img.xz
		if [[ -e $img ]]; then
			note "host: $img is kept, not made again"
			continue
		fi
		rm -f "$o/nvme0.img"
		vm "v$v" 1 16M 600 compat-make "$v"
		import "$o/checks-v$v.log" "version $v: "
		vm_result "v$v" "format version $v, its regions written and fsynced, power off attached"
		((vm_rc == 0)) || return
		if xz -9e -c "$o/nvme0.img" >"$img"; then
			result ok "host: $img, $(stat -c %s "$img") bytes"
		else
			result not-ok "host: write $img"
		fi
	done
	rm -f "$o/nvme0.img"
}

# --- crash -------------------------------------------------------------------

test_crash() {
	cut_boots crash crash-final journal- '^synced ' "${KVTIER_CRASH_SEED:-}" \
		"${KVTIER_CRASH_CUTS:-}" "${KVTIER_CRASH_PART:-0/1}"
}

# The kvstore's blocks (Python, python/tests/kvstore_tool.py) through the
# same cuts, with their own kept seed; KVTIER_CRASH_PART shares them out
# as it does crash's.
test_kvstore() {
	cut_boots kvstore kvstore-final kvstore-journal- '^put-done ' \
		"${KVTIER_KVSTORE_SEED:-}" "${KVTIER_KVSTORE_CUTS:-}" "${KVTIER_CRASH_PART:-0/1}"
}

# crash_point CUT: the crash point (debugfs freeze_at) cut CUT of the crash
# test stops a checkpoint at instead of a random delay, or nothing. Cuts
# 4 and 7 of every ten, alternating, so that with the kept 20 cuts shared
# out by parity each kernel cuts once at each point.
crash_point() {
	local c=$1
	case $((c % 10)) in
	4) (((c / 10) % 2)) && echo ckpt-super || echo ckpt-area ;;
	7) (((c / 10) % 2)) && echo ckpt-area || echo ckpt-super ;;
	esac
}

# wait_for FILE PID TENTHS: wait until FILE exists, PID has ended or TENTHS
# tenths of a second have passed; sets waited (tenths). True if FILE exists.
wait_for() {
	waited=0
	while [[ ! -e $1 ]] && kill -0 "$2" 2>/dev/null && ((waited < $3)); do
		sleep 0.1
		waited=$((waited + 1))
	done
	[[ -e $1 ]]
}

# cut_boots STEP FINAL JOURNAL DONE SEED CUTS PART: boots of guest.sh STEP
# cut by kill -9 of QEMU (see "crash" above), then one of FINAL. JOURNAL
# names the guest's journal files in OUT/state, DONE the grep pattern of
# their lines that count as finished operations.
cut_boots() {
	local step=$1 final=$2 journal=$3 done_re=$4 seed=$5 cuts=$6 part=$7
	local b=0 cut delay wseed
	local pid rpid t0 waited ran frozen point synced st hits kept
	# The kept seed (tests/fuzz-seeds.txt), unless one is given or
	# KVTIER_FUZZ_RANDOM asks for a fresh one (make fuzz).
	kept=$(awk -v t="$step" '$1 == t { print $2, $3; exit }' "$top/tests/fuzz-seeds.txt")
	if [[ -z $seed && -n ${KVTIER_FUZZ_RANDOM:-} ]]; then
		seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
	fi
	[[ -n $seed ]] || seed=${kept% *}
	[[ -n $cuts ]] || cuts=${kept#* }
	[[ $seed =~ ^[0-9]+$ && $cuts =~ ^[0-9]+$ ]] || {
		result not-ok "the $step seed and number of cuts are numbers"
		return
	}
	[[ $part =~ ^([0-9]+)/([1-9][0-9]*)$ ]] && ((${BASH_REMATCH[1]} < ${BASH_REMATCH[2]})) || {
		result not-ok "KVTIER_CRASH_PART is K/N with 0 <= K < N (got '$part')"
		return
	}
	local var=KVTIER_${step^^}
	note "$step: seed $seed, cuts $part of $cuts (rerun: ${var}_SEED=$seed" \
		"${var}_CUTS=$cuts KVTIER_CRASH_PART=$part" \
		"tests/persist/run.sh $build $kver $outdir $step)"
	RANDOM=$seed
	mkdir -p "$o/state"
	for ((cut = 0; cut < cuts; cut++)); do
		# Cut 0.0 .. 6.0 s after the workload started. Every cut draws
		# its numbers, so a part's cuts are those of the whole run.
		delay=$((RANDOM % 61))
		wseed=$((RANDOM << 15 | RANDOM))
		delay=$((delay / 10)).$((delay % 10))
		((cut % ${part#*/} == ${part%/*})) || continue
		point=
		[[ $step == crash ]] && point=$(crash_point "$cut")
		rm -f "$o/checks.log" "$o/qemu.pid"
		t0=$SECONDS
		"$top/tests/vm/run.sh" --keep-nvme --kver "$kver" --cache "$build/cache" \
			--out "$o" --nvme-size 256M --timeout 300 -- \
			"$guest" "$build" "$o" "$step" "$b" "$wseed" ${point:+"$point"} \
			</dev/null >"$o/boot-$b.log" 2>&1 &
		rpid=$!
		# Wait until the workload runs (or the boot ends without it):
		# longer than run.sh's boot-hang watchdog and a second boot.
		wait_for "$o/state/started-$b" "$rpid" 6000
		ran=0 frozen=0
		if [[ -e $o/state/started-$b ]]; then
			ran=1
			if [[ -n $point ]]; then
				# The guest gives up after its CRASH_CAP_S (90 s).
				wait_for "$o/state/frozen-$b" "$rpid" 1000 && frozen=1
				delay=$((waited / 10)).$((waited % 10))
			else
				sleep "$delay"
			fi
			pid=$(cat "$o/qemu.pid" 2>/dev/null)
			# Only ever our own qemu.
			if [[ $pid =~ ^[0-9]+$ && $(cat "/proc/$pid/comm" 2>/dev/null) == qemu-system-* ]]; then
				kill -9 "$pid"
			else
				ran=0
			fi
		fi
		# Not cut: the guest ends by itself (a failure, or the workload's
		# own time limit), or run.sh's timeout ends it.
		wait "$rpid"
		st=$?
		((st == 75)) && stalled=1
		vm_done "$b"
		import "$o/checks-$b.log" ""
		synced=$(cat "$o/state/$journal$b"* 2>/dev/null | grep -c "$done_re")
		note "cut $cut (boot $b): ${point:+at crash point $point, }delay ${delay}s after" \
			"the workload started, workload seed $wseed, $synced fsyncs completed," \
			"boot took $((SECONDS - t0)) s"
		if [[ -n $point ]] && ((ran && !frozen)); then
			result not-ok "boot $b: no journal-compacting checkpoint reached crash point $point (see $o/boot-$b.log)"
			sed -n '/^run.sh: \|kvt-crash: /p' "$o/boot-$b.log" | sed 's/^/# /' | tail -n 20
			return
		fi
		if ((!ran)); then
			result not-ok "boot $b: the workload never started (run.sh status $st; see $o/boot-$b.log)"
			sed -n '/^run.sh: \|kvt-crash: /p' "$o/boot-$b.log" | sed 's/^/# /' | tail -n 20
			return
		fi
		if ((st != 124)); then
			result not-ok "boot $b: cut after ${delay}s: the VM ended before the kill (run.sh status $st)"
			sed -n '/^run.sh: \|kvt-crash: /p' "$o/boot-$b.log" | sed 's/^/# /' | tail -n 20
			return
		fi
		if hits=$(klog_problems "$o/console-$b.log"); then
			result not-ok "boot $b: cut after ${delay}s: kernel problem on the console"
			printf '%s\n' "$hits" | head -n 40 | sed 's/^/# /'
		elif [[ -n $point ]]; then
			result ok "boot $b: cut $cut by kill -9 of qemu with a checkpoint stopped at $point, kernel log clean"
		else
			result ok "boot $b: cut $cut by kill -9 of qemu ${delay}s into the workload, kernel log clean"
		fi
		b=$((b + 1))
	done
	vm "$b" 1 256M 300 "$final" "$b" 0
	import "$o/checks-$b.log" ""
	vm_result "$b" "verify after the last cut, detach, attach, verify"
}

# A boot that hit QEMU's timer stall (run.sh status 75: a vCPU left
# unwoken, nothing kvtier did) sets stalled; the test then runs once more
# from fresh images, and its results so far are dropped from the TAP file
# (the stalled run stays in OUT/TEST.stalled/). A second stall counts.
t_all=$SECONDS
for test in "${tests[@]}"; do
	o=$outdir/$test
	rm -rf "$o" "$o.stalled"
	for attempt in 1 2; do
		mkdir -p "$o"
		start=$SECONDS n0=$n failed0=$failed
		tap_bytes=$(stat -c %s "$tap")
		stalled=0
		note "$short $test: start"
		"test_$test"
		note "$short $test: $((SECONDS - start)) s"
		((stalled && attempt == 1)) || break
		truncate -s "$tap_bytes" "$tap"
		n=$n0 failed=$failed0
		mv "$o" "$o.stalled"
		note "$short $test: a boot hit QEMU's timer stall (run.sh status 75; see $o.stalled): running the test again"
	done
done
echo "1..$n" | tee -a "$tap"
note "$short: $((n - failed)) passed, $failed failed in $((SECONDS - t_all)) s"
((failed == 0))
