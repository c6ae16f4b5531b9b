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
#                          256 MiB persistent region "big", fsync; power off
#                          without detaching
#   reboot-2               attach kvt0, verify "big" through a mapping; then
#                          the module-reload variant: write "reload", fsync,
#                          rmmod (still attached), insmod, attach, verify it
#   corrupt-1              on kvt2: a region, detach; on kvt0: write the
#                          4 MiB region "mark", fsync; power off
#   corrupt-2 PAGE         (after the host flipped bytes of page PAGE of
#                          "mark" in the image) attach kvt0, expect EIO and
#                          SIGBUS for that page only, checksum_errors and
#                          error -74
#   corrupt-3              (after the host damaged both superblock copies of
#                          kvt0, wrote a foreign signature to kvt1 and
#                          damaged both checkpoint areas of kvt2) attach
#                          each: EUCLEAN, EMEDIUMTYPE, EUCLEAN
#   crash BOOT SEED        verify what boot BOOT-1 left, then run the crash
#                          workload until the host kills the VM
#   crash-final BOOT SEED  verify only, detach, attach, verify again
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

case $step in
reboot-1)
	t load && t attach "$ns0" && t write big 256M $SEED_BIG
	;;
reboot-2)
	t load && t attach "$ns0" || exit 1
	rc=0
	t verify big 256M $SEED_BIG --mmap || rc=1
	t write reload 16M $SEED_RELOAD --mmap &&
		t unload && t load && t attach "$ns0" &&
		t verify reload 16M $SEED_RELOAD --pread || rc=1
	t detach && t unload || rc=1
	exit $rc
	;;
corrupt-1)
	[[ -n $ns2 ]] || fail "an NVMe namespace with serial kvt2"
	t load && t attach "$ns2" && t write ckpt 1M $SEED_CKPT && t detach &&
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
crash)
	t crash "$out/state" "${1:?crash BOOT SEED}" "${2:?crash BOOT SEED}"
	;;
crash-final)
	t crash "$out/state" "${1:?crash-final BOOT SEED}" "${2:?crash-final BOOT SEED}" --final
	;;
*)
	echo "guest.sh: unknown step $step" >&2
	exit 2
	;;
esac
