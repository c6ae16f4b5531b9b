#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest half of tests/persist/run.sh: the steps of one boot, inside the
# test VM (tests/vm/run.sh), with build/tests/kvt_persist_tool. Checks are
# printed as "ok - ..."/"not ok - ..." and appended to OUT/checks.log, which
# the host turns into TAP.
#
# usage: tests/persist/guest.sh BUILD OUT STEP [ARGS...]
#
# Steps (the host runs them in this order on the same disks):
#   reboot-1               attach the blank kvt0 (formats it), write the
#                          256 MiB persistent region "big", fsync; process 1
#                          of prefix KV reuse (python/tests/reuse_tool.py
#                          store: a kvtier.llama prompt's KV blocks into a
#                          kvstore); power off without detaching
#   reboot-2               attach kvt0, verify "big" through a mapping;
#                          process 2 of prefix KV reuse (reuse_tool.py
#                          restore: bit-identical to a recompute); then
#                          the module-reload variant: write "reload", fsync,
#                          rmmod (still attached), insmod, attach, verify it
#   corrupt-1              on kvt2: twice a region and a detach (both
#                          checkpoint areas hold records); on kvt0:
#                          write the 4 MiB region "mark", fsync; power off
#   corrupt-2 PAGE         (after the host flipped bytes of page PAGE of
#                          "mark" in the image) attach kvt0, expect EIO and
#                          SIGBUS for that page only, checksum_errors and
#                          error -74
#   corrupt-3              (after the host damaged both superblock copies of
#                          kvt0, wrote a foreign signature to kvt1 and
#                          damaged both checkpoint areas of kvt2) attach
#                          each: EUCLEAN, EMEDIUMTYPE, EUCLEAN
#   apply-1                (two namespaces, the module not loaded) the boot
#                          kvtier.service would run: kvtier.conf and a
#                          fragment name kvt0 by its NQN and kvt1 by a
#                          by-id link; the unit's ExecStart loads the module
#                          and attaches both with the knobs as written; a
#                          second apply changes nothing; bad files change
#                          nothing (an unknown key, a missing device, the
#                          wrong device, a detached-only knob, a tier past
#                          num_tiers); the persistent region "conf" is
#                          written on kvtier0; the unit's ExecStop detaches
#   apply-2                the next boot's ExecStart, then "conf" by name
#   scale-1                (kvt0 a blank 8 TiB namespace, kvt1 15 TiB) on
#                          each: attach within the time and memory bounds,
#                          write SCALE_N persistent regions, detach (one
#                          commit)
#   scale-2                on each: attach within the bounds, every region
#                          listed and every byte read back, commits timed
#                          (scale-commit), detach
#   compat-make VERSION    (kvt0 blank) format it with format_version
#                          VERSION, write and fsync COMPAT_REGIONS, power
#                          off attached: the image run.sh's compat-make
#                          keeps in tests/persist/images
#   compat VERSION         (kvt0 a kept image of that version, made by an
#                          earlier module) attach, every byte of every
#                          COMPAT_REGIONS region, write one more, detach;
#                          attach, all of them again, detach; the namespace
#                          keeps VERSION. Version 1 is then upgraded
#                          (kvtierctl upgrade, attached), read, written,
#                          detached (version 2 now), attached and read
#                          again
#   crash BOOT SEED [POINT] verify what boot BOOT-1 left, then run the
#                          crash workload until the host kills the VM; with
#                          POINT, commits stop at that crash point (debugfs
#                          freeze_at) and the host kills the VM there
#   crash-final BOOT SEED  verify only, detach, attach, verify again
#   kvstore BOOT SEED      the same for a kvtier.kvstore (Python,
#                          python/tests/kvstore_tool.py): check what the
#                          journals of boots before BOOT say is there, then
#                          put and delete blocks until the host kills the VM
#   kvstore-final BOOT     check, detach, attach, check again
set -uo pipefail

build=${1:?usage: guest.sh BUILD OUT STEP [ARGS...]}
out=${2:?usage: guest.sh BUILD OUT STEP [ARGS...]}
step=${3:?usage: guest.sh BUILD OUT STEP [ARGS...]}
shift 3

# Region seeds: arbitrary, but the host looks for "mark" by its seed.
SEED_BIG=0x5eed0001
SEED_RELOAD=0x5eed0002
SEED_MARK=0x5eed0003
SEED_CKPT=0x5eed0004
SEED_CONF=0x5eed0005
SEED_SCALE=0x5eed0100

# The scale test (#17's bounds): regions per namespace, the first one's
# size, attach time (s) and kernel memory (MiB) an attach may take.
SCALE_N=1000 SCALE_BIG=256M SCALE_ATTACH_S=5 SCALE_ATTACH_MIB=256
# MiB scale-2 writes with an fsync after each to time commits.
SCALE_COMMIT_MIB=64

# The regions of the kept images (NAME SIZE SEED ...): what compat-make
# wrote, with the module of the commit that added each image.
COMPAT_REGIONS="compat-a 4K 0x5eed0200 compat-b 12K 0x5eed0201 compat-c 64K 0x5eed0202"
SEED_COMPAT_NEW=0x5eed0203
SEED_COMPAT_UP=0x5eed0204
# Version 3 on: written after a checkpoint of the others, in the journal.
SEED_COMPAT_LATE=0x5eed0205

KVTIER_KO=$build/$(uname -r)/kvtier.ko
export KVTIER_KO
export KVT_CHECKS=$out/checks.log
tool=$build/tests/kvt_persist_tool

# Kernel warnings must reach the serial console (console.log), which is all
# that is left of a boot the host cuts off: "quiet" shows only errors.
dmesg -n 5

# The namespaces by the serial the rig gave them (kvt0, kvt1, kvt2).
for ctrl in /sys/class/nvme/nvme*; do
	[[ -e $ctrl/serial ]] || continue
	serial=$(tr -d ' ' <"$ctrl/serial")
	for ns in "$ctrl"/nvme*n1; do
		[[ -e $ns && $serial =~ ^kvt([0-9])$ ]] || continue
		export "KVTIER_NS${BASH_REMATCH[1]}=/dev/${ns##*/}"
	done
done
ns0=${KVTIER_NS0:-} ns1=${KVTIER_NS1:-} ns2=${KVTIER_NS2:-}

fail() {
	echo "not ok - $*" | tee -a "$KVT_CHECKS"
	exit 1
}

[[ -x $tool ]] || fail "$tool is built"
[[ -f $KVTIER_KO ]] || fail "kvtier.ko for $(uname -r) at $KVTIER_KO"
[[ -n $ns0 ]] || fail "an NVMe namespace with serial kvt0"

t() {
	"$tool" "$@"
}

# The newest format version: what kvtierctl upgrade takes the images to.
NEWEST=5

# compat_file write|verify: compat-file, 5,100 bytes ("k" x 5,000 then
# 100 x "5"), made on a kvtierfs mount of tier 0 (format version 5), and
# synced; or its size and bytes read back there.
compat_file() {
	local mnt=/tmp/kvtierfs-compat want got
	want=$( (head -c 5000 /dev/zero | tr '\0' k; head -c 100 /dev/zero | tr '\0' 5) | md5sum)
	mkdir -p "$mnt" && mount -t kvtierfs kvtier0 "$mnt" || {
		check not-ok "compat-file: mount kvtierfs"
		return 1
	}
	local rc=0
	if [[ $1 == write ]]; then
		{ head -c 5000 /dev/zero | tr '\0' k; head -c 100 /dev/zero | tr '\0' 5; } \
			>"$mnt/compat-file" && sync -f "$mnt/compat-file" || rc=$?
		if ((rc == 0)); then
			check ok "compat-file: made on the mount, 5100 bytes, synced"
		else
			check not-ok "compat-file: made on the mount (exit $rc)"
		fi
	else
		got="$(stat -c %s "$mnt/compat-file" 2>&1) $(md5sum <"$mnt/compat-file" 2>&1)"
		if [[ $got == "5100 $want" ]]; then
			check ok "compat-file: 5100 bytes, every one"
		else
			check not-ok "compat-file: 5100 bytes, every one (got $got)"
			rc=1
		fi
	fi
	umount "$mnt" || rc=1
	return $rc
}

# compat_regions write|verify: each of COMPAT_REGIONS.
compat_regions() {
	local op=$1
	set -- $COMPAT_REGIONS
	while (($# >= 3)); do
		t "$op" "$1" "$2" "$3" || return 1
		shift 3
	done
}

# sb_versions VERSION WHEN: both superblock copies of kvt0 (blocks 0 and 1,
# read past the page cache) are of format VERSION, or zero (a copy not
# written yet).
sb_versions() {
	local got
	got=$(dd if="$ns0" bs=4096 count=2 iflag=direct status=none |
		od -An -tu4 -w4 -v | sed -n '3p;1027p' | tr -d ' ' | tr '\n' ' ')
	if [[ $got =~ ^(0|$1)\ (0|$1)\ $ && $got != "0 0 " ]]; then
		check ok "$2: the namespace is format version $1 (superblock copies: $got)"
	else
		check not-ok "$2: the namespace is format version $1 (superblock copies: '$got')"
	fi
}

# Bytes of page CRCs tier 0's checkpoints wrote since the module loaded.
crc_bytes() {
	awk '$1 == "checkpoint_crc_bytes" { print $2 }' \
		/sys/kernel/debug/kvtier/kvtier0/stats 2>/dev/null | grep . || echo 0
}

# --- apply: the boot kvtier.service runs ------------------------------------

# ok|not-ok DESC, as the tool's checks are; false for not-ok.
check() {
	if [[ $1 == ok ]]; then
		echo "ok - $2" | tee -a "$KVT_CHECKS"
	else
		echo "not ok - $2" | tee -a "$KVT_CHECKS"
		apply_rc=1
		return 1
	fi
}

# expect_out DESC RC PATTERN OUTPUT-RC OUTPUT
expect_out() {
	if [[ $4 -eq $2 ]] && grep -qE -- "$3" <<<"$5"; then
		check ok "$1"
	else
		check not-ok "$1 (exit $4, want $2; output: ${5//$'\n'/ | })"
	fi
}

src=$(cd "$(dirname "$0")/../.." && pwd)

# pytool SCRIPT ARGS...: python/tests/SCRIPT with this tree's package and
# library; its ok/not ok lines and notes go to the checks.
pytool() {
	[[ -x /usr/bin/python3 ]] || fail "/usr/bin/python3 for $1"
	PYTHONPATH=$src/python KVTIER_LIBRARY=$src/lib/libkvtier.so.0 \
		PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$src/python/tests/$1" "${@:2}" 2>&1 |
		tee -a "$KVT_CHECKS"
	return "${PIPESTATUS[0]}"
}

unit=$src/tools/systemd/kvtier.service
ctl() {
	LD_LIBRARY_PATH=$src/lib "$src/tools/kvtierctl" "$@" 2>&1
}
# The unit's own ExecStart= and ExecStop= lines, with this tree's kvtierctl.
unit_run() {
	local line
	line=$(sed -n "s|^$1=/usr/sbin/kvtierctl ||p" "$unit")
	[[ -n $line ]] || { echo "no $1=/usr/sbin/kvtierctl line in $unit"; return 2; }
	# shellcheck disable=SC2086 # the line's words
	ctl $line
}

# What a booted host has that this rig does not: a writable /etc, the
# module where modprobe finds it (DKMS puts it in updates/), and the
# /dev/disk/by-id link udev makes for kvt1.
apply_setup() {
	local mods d
	mods=/lib/modules/$(uname -r)
	for d in etc mods; do
		mkdir -p "/tmp/ov-$d/u" "/tmp/ov-$d/w"
	done
	if ! { mount -t overlay overlay -o lowerdir=/etc,upperdir=/tmp/ov-etc/u,workdir=/tmp/ov-etc/w /etc &&
		mount -t overlay overlay -o "lowerdir=$mods,upperdir=/tmp/ov-mods/u,workdir=/tmp/ov-mods/w" "$mods" &&
		install -D -m 0644 "$KVTIER_KO" "$mods/updates/kvtier.ko" &&
		cp "$out"/moddep/modules.* "$mods/"; }; then
		fail "a writable /etc and $mods/updates/kvtier.ko (overlayfs, the host's depmod)"
	fi
	if ! { mkdir -p /dev/disk/by-id && ln -sf "../../${ns1#/dev/}" /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_kvt1; }; then
		fail "the by-id link of kvt1"
	fi
	mkdir -p /etc/kvtier/kvtier.conf.d
	cat >/etc/kvtier/kvtier.conf <<-EOF
	# kvt0 by its subsystem, kvt1 by the link udev makes
	[kvtier0]
	nqn = nqn.2019-08.org.qemu:kvt0
	host_budget_mb = 48

	[kvtier1]
	device = /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_kvt1
	EOF
	cat >/etc/kvtier/kvtier.conf.d/50-tune.conf <<-EOF
	[kvtier0]
	watermark_high = 80
	watermark_low = 50
	readahead_kb = 128
	[kvtier1]
	lease_interval_ms = 500
	host_budget_mb = 32
	EOF
}

# Every knob and backing_dev of both tiers, one line each.
tier_state() {
	local t f
	for t in 0 1; do
		for f in /sys/class/kvtier/kvtier$t/{backing_dev,host_budget_mb,watermark_high,watermark_low,readahead_kb,lease_interval_ms,read_only}; do
			echo "$f $(cat "$f")"
		done
	done
}

apply_attached() {
	local t0=/sys/class/kvtier/kvtier0 t1=/sys/class/kvtier/kvtier1
	[[ $(cat /sys/module/kvtier/parameters/num_tiers) == 2 ]] &&
		[[ $(cat $t0/backing_dev) == "$ns0" && $(cat $t0/host_budget_mb) == 48 &&
			$(cat $t0/watermark_high) == 80 && $(cat $t0/watermark_low) == 50 &&
			$(cat $t0/readahead_kb) == 128 ]] &&
		[[ $(cat $t1/backing_dev) == /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_kvt1 &&
			$(cat $t1/lease_interval_ms) == 500 && $(cat $t1/host_budget_mb) == 32 ]]
}

apply_boot() {
	local out rc
	[[ ! -e /sys/module/kvtier ]] || fail "the module is not loaded at boot"
	out=$(unit_run ExecStart)
	rc=$?
	sed 's/^/# /' <<<"$out"
	expect_out "ExecStart loads the module with num_tiers=2" 0 "^modprobe kvtier num_tiers=2$" $rc "$out"
	expect_out "ExecStart attaches kvtier0 by its NQN" 0 "^kvtier0: attach $ns0 \(subsystem nqn.2019-08.org.qemu:kvt0\)$" $rc "$out"
	expect_out "ExecStart sets a knob from the fragment" 0 "^kvtier0: watermark_low 75 -> 50$" $rc "$out"
	expect_out "ExecStart sets the detached-only knob" 0 "^kvtier1: lease_interval_ms 1000 -> 500$" $rc "$out"
	if apply_attached; then
		check ok "both tiers attached, every knob as written"
	else
		check not-ok "both tiers attached, every knob as written: $(tier_state | tr '\n' ' ')"
	fi
}

apply_bad() {	# apply_bad DESC PATTERN FILE-CONTENT
	local out rc before
	printf '%b' "$3" >/tmp/bad.conf
	before=$(tier_state)
	out=$(ctl apply --config /tmp/bad.conf)
	rc=$?
	expect_out "a bad file: $1" 1 "$2" $rc "$out"
	if [[ $(tier_state) == "$before" ]]; then
		check ok "a bad file: $1: nothing changed"
	else
		check not-ok "a bad file: $1: the tiers changed"
	fi
}

case $step in
apply-1 | apply-2)
	[[ -n $ns1 ]] || fail "an NVMe namespace with serial kvt1"
	apply_rc=0
	apply_setup
	apply_boot
	((apply_rc == 0)) || exit 1
	if [[ $step == apply-1 ]]; then
		out=$(unit_run ExecStart)
		rc=$?
		expect_out "a second apply changes nothing" 0 "^kvtier1: as configured" $rc "$out"
		if ! grep -qE -- "->|attach|modprobe" <<<"$out"; then
			check ok "a second apply reports no change"
		else
			check not-ok "a second apply reported: ${out//$'\n'/ | }"
		fi
		t write conf 8M $SEED_CONF || apply_rc=1
		apply_bad "an unknown key" "/tmp/bad.conf:3: unknown key 'budget_mb'" \
			"[kvtier0]\nnqn = nqn.2019-08.org.qemu:kvt0\nbudget_mb = 64\n"
		apply_bad "a missing device, the other tier's change not made" \
			"/tmp/bad.conf:5: kvtier1: device /dev/disk/by-id/nvme-gone: No such file or directory" \
			"[kvtier0]\nnqn = nqn.2019-08.org.qemu:kvt0\nhost_budget_mb = 64\n[kvtier1]\ndevice = /dev/disk/by-id/nvme-gone\n"
		apply_bad "a subsystem that is not there" \
			"/tmp/bad.conf:2: kvtier0: no NVMe subsystem nqn.2019-08.org.qemu:kvt9 is connected" \
			"[kvtier0]\nnqn = nqn.2019-08.org.qemu:kvt9\n"
		apply_bad "a tier attached to another device" \
			"/tmp/bad.conf:2: kvtier0: attached to $ns0, not $ns1: detach it first" \
			"[kvtier0]\ndevice = $ns1\n"
		apply_bad "a detached-only knob on an attached tier" \
			"/tmp/bad.conf:3: kvtier1: read_only is 0, the file says 1: it changes only while detached" \
			"[kvtier1]\ndevice = $ns1\nread_only = 1\n"
		apply_bad "a tier past num_tiers" \
			"loaded with num_tiers=2; the configuration names kvtier5" \
			"[kvtier5]\ndevice = $ns1\n"
		out=$(unit_run ExecStop)
		rc=$?
		expect_out "ExecStop detaches kvtier0" 0 "^kvtier0: detach $ns0$" $rc "$out"
		expect_out "ExecStop detaches kvtier1" 0 "^kvtier1: detach /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_kvt1$" $rc "$out"
		if [[ $(cat /sys/class/kvtier/kvtier0/backing_dev) == none &&
			$(cat /sys/class/kvtier/kvtier1/backing_dev) == none ]]; then
			check ok "after ExecStop both tiers are detached"
		else
			check not-ok "after ExecStop: $(tier_state | tr '\n' ' ')"
		fi
	else
		t verify conf 8M $SEED_CONF --pread || apply_rc=1
		out=$(unit_run ExecStop)
		expect_out "ExecStop detaches" 0 "^kvtier0: detach" $? "$out"
		t unload || apply_rc=1
	fi
	exit $apply_rc
	;;
reboot-1)
	t load && t attach "$ns0" && t write big 256M $SEED_BIG &&
		pytool reuse_tool.py --tokens 256 store
	;;
reboot-2)
	t load && t attach "$ns0" || exit 1
	rc=0
	t verify big 256M $SEED_BIG --mmap || rc=1
	pytool reuse_tool.py --tokens 256 restore --suffix 20 --decode 8 || rc=1
	t write reload 16M $SEED_RELOAD --mmap &&
		t unload && t load && t attach "$ns0" &&
		t verify reload 16M $SEED_RELOAD --pread || rc=1
	t detach && t unload || rc=1
	exit $rc
	;;
corrupt-1)
	[[ -n $ns2 ]] || fail "an NVMe namespace with serial kvt2"
	# Two attaches, each with a region written and a detach: on a
	# version-2 namespace a detach writes a checkpoint only when the
	# journal holds something, and both checkpoint areas must hold
	# records for corrupt-3 to damage them.
	t load && t attach "$ns2" && t write ckpt 1M $SEED_CKPT && t detach &&
		t attach "$ns2" && t write ckpt2 1M $SEED_CKPT && t detach &&
		t attach "$ns0" && t write mark 4M $SEED_MARK
	;;
corrupt-2)
	page=${1:?corrupt-2 PAGE}
	t load && t attach "$ns0" || exit 1
	rc=0
	t verify mark 4M $SEED_MARK --both --bad "$page" || rc=1
	t detach && t unload || rc=1
	exit $rc
	;;
corrupt-3)
	[[ -n $ns1 && -n $ns2 ]] || fail "NVMe namespaces with serials kvt1 and kvt2"
	t load || exit 1
	rc=0
	t attach "$ns0" EUCLEAN || rc=1
	t attach "$ns1" EMEDIUMTYPE || rc=1
	t attach "$ns2" EUCLEAN || rc=1
	# Whatever happened, leave nothing attached before unloading.
	echo none >/sys/class/kvtier/kvtier0/backing_dev 2>/dev/null
	t unload || rc=1
	exit $rc
	;;
scale-1 | scale-2)
	[[ -n $ns1 ]] || fail "an NVMe namespace with serial kvt1"
	t load || exit 1
	rc=0
	# scale-1 VERSION: format as that version (KVTIER_SCALE_FORMAT).
	if [[ -n ${1:-} ]]; then
		echo "$1" >/sys/class/kvtier/kvtier0/format_version || fail "format_version $1"
	fi
	for ns in "$ns0" "$ns1"; do
		echo "# $ns: $(($(blockdev --getsize64 "$ns") >> 40)) TiB" | tee -a "$KVT_CHECKS"
		crc0=$(crc_bytes)
		t scale-attach "$ns" $SCALE_ATTACH_S $SCALE_ATTACH_MIB \
			"$([[ $step == scale-1 ]] && echo 0 || echo $SCALE_N)" || { rc=1; continue; }
		ver=$(cat /sys/class/kvtier/kvtier0/upgrade)
		if [[ $step == scale-1 ]]; then
			t scale-write $SCALE_N $SCALE_BIG $SEED_SCALE || rc=1
		else
			t scale-verify $SCALE_N $SCALE_BIG $SEED_SCALE || rc=1
			t scale-commit $SCALE_COMMIT_MIB || rc=1
		fi
		grep -E '^(slots_used|slot_extents|generation) ' \
			/sys/kernel/debug/kvtier/kvtier0/stats 2>/dev/null | sed 's/^/# /' |
			tee -a "$KVT_CHECKS"
		t detach || rc=1
		t latency-row commit_checkpoint "checkpoints since attach (the detach's included)" ||
			rc=1
		# Version 4: a checkpoint writes the CRCs of changed regions
		# only; boot 2 changes none but scale-commit (unlinked since),
		# where version 3 would write every page's CRC (a few MiB).
		crcs=$(($(crc_bytes) - crc0))
		if [[ $step == scale-1 ]] || ((ver < 4)); then
			echo "# format version $ver: checkpoints since attach wrote $crcs bytes of CRCs" |
				tee -a "$KVT_CHECKS"
		elif ((crcs <= SCALE_COMMIT_MIB * 1024)); then
			check ok "checkpoints since attach wrote $crcs bytes of CRCs: at most scale-commit's $((SCALE_COMMIT_MIB * 1024)), none of the $SCALE_N regions'"
		else
			check not-ok "checkpoints since attach wrote $crcs bytes of CRCs: more than scale-commit's $((SCALE_COMMIT_MIB * 1024))"
			rc=1
		fi
	done
	t unload || rc=1
	exit $rc
	;;
compat-make)
	v=${1:?compat-make VERSION}
	t load || exit 1
	rc=0
	echo "$v" >/sys/class/kvtier/kvtier0/format_version || fail "format_version $v"
	# Each region is fsynced; the power goes off attached, so a
	# version-2 image holds them in its journal, to replay at attach.
	# From version 3 on a detach first puts them in a checkpoint (its
	# extent records and CRC section), and the journal holds only
	# compat-late.
	t attach "$ns0" && compat_regions write || exit 1
	if ((v >= 3)); then
		t detach && t attach "$ns0" && t write compat-late 64K $SEED_COMPAT_LATE
	fi
	# From version 5 on, a file made on a kvtierfs mount, of a size that
	# is not whole pages, in the journal too.
	if ((v >= 5)); then
		compat_file write || exit 1
	fi
	;;
compat)
	v=${1:?compat VERSION}
	t load || exit 1
	rc=0
	for pass in 1 2; do
		t attach "$ns0" || { rc=1; break; }
		compat_regions verify || rc=1
		if ((v >= 3)); then
			t verify compat-late 64K $SEED_COMPAT_LATE || rc=1
		fi
		if ((v >= 5)); then
			compat_file verify || rc=1
		fi
		if ((pass == 1)); then
			t write compat-new 64K $SEED_COMPAT_NEW || rc=1
		else
			t verify compat-new 64K $SEED_COMPAT_NEW || rc=1
		fi
		t detach || rc=1
		sb_versions "$v" "pass $pass" || rc=1
	done
	if ((v < NEWEST)) && t attach "$ns0"; then
		# What an operator runs: kvtierctl upgrade, in place, attached.
		out=$(ctl upgrade 0)
		expect_out "kvtierctl upgrade 0: version $v to $NEWEST" 0 \
			"^kvtier0: upgraded the namespace from format version $v to $NEWEST " $? "$out" || rc=1
		out=$(ctl upgrade 0)
		expect_out "kvtierctl upgrade 0 again: nothing to do" 0 \
			"^kvtier0: the namespace is format version $NEWEST already$" $? "$out" || rc=1
		compat_regions verify && t verify compat-new 64K $SEED_COMPAT_NEW || rc=1
		t write compat-up 64K $SEED_COMPAT_UP || rc=1
		# Upgraded to version 5: files are made and grow.
		compat_file write || rc=1
		t detach || rc=1
		sb_versions $NEWEST "after the upgrade" || rc=1
		t attach "$ns0" || rc=1
		compat_regions verify && t verify compat-new 64K $SEED_COMPAT_NEW &&
			t verify compat-up 64K $SEED_COMPAT_UP || rc=1
		compat_file verify || rc=1
		t detach || rc=1
	elif ((v < NEWEST)); then
		rc=1
	fi
	t unload || rc=1
	exit $rc
	;;
crash)
	t crash "$out/state" "${1:?crash BOOT SEED}" "${2:?crash BOOT SEED}" \
		${3:+--freeze "$3"}
	;;
crash-final)
	t crash "$out/state" "${1:?crash-final BOOT SEED}" "${2:?crash-final BOOT SEED}" --final
	;;
kvstore | kvstore-final)
	kvs() {
		pytool kvstore_tool.py --seed 77 "$@"
	}
	boot=${1:?kvstore BOOT [SEED]}
	t load || exit 1
	t attach "$ns0" || exit 1
	rc=0
	kvs recover --state "$out/state" || rc=1
	if [[ $step == kvstore ]]; then
		kvs crash --state "$out/state" --boot "$boot" --wseed "${2:?kvstore BOOT SEED}"
		exit 1	# the host was to cut this boot before the workload ended
	fi
	t detach || rc=1
	t attach "$ns0" || rc=1
	kvs recover --state "$out/state" || rc=1
	t detach || rc=1
	t unload || rc=1
	exit $rc
	;;
*)
	echo "guest.sh: unknown step $step" >&2
	exit 2
	;;
esac
