#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make demo`: show kvtier doing its job in a real kernel, in QEMU, on an
# emulated NVMe namespace. Nothing on this machine changes: the module runs
# in the guest only (tests/vm/run.sh).
#
# usage: tests/demo.sh BUILD           on the host: build, boot, run the guest part
#        tests/demo.sh --guest BUILD   inside the VM (run.sh calls it)
#
# Host part: builds kvtier.ko for the supported kernels (tests/build-modules.sh),
# picks the newest one tests/vm/kernels.sh lists (6.12 when its headers are
# installed), prepares its boot image (tests/vm/prepare.sh, cached under
# BUILD/cache) and boots it with one 1 GiB NVMe namespace (serial kvt0).
# Output of the guest part, its kernel log and the disk image go to
# BUILD/demo-<kver>/.
#
# Guest part: one section per step, each with a "=== ... ===" header. A step
# that fails ends the demo with a non-zero status; so does any kernel
# warning (run.sh's dmesg gate).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)

# --- guest ------------------------------------------------------------------

section() {
	echo
	echo "=== $* ==="
}

# show CMD...: print the command, then run it.
show() {
	echo "\$ $*"
	"$@"
}

guest() {
	local build=$1 kver ko ns ctrl serial n
	kver=$(uname -r)
	ko=$build/$kver/kvtier.ko
	export LD_LIBRARY_PATH=$top/lib
	kvtierctl=$top/tools/kvtierctl

	section "kernel"
	show uname -r

	section "namespace"
	# The rig names its disks by serial: kvt0 is the demo's namespace.
	ns=
	for ctrl in /sys/class/nvme/nvme*; do
		[[ -e $ctrl/serial ]] || continue
		serial=$(tr -d ' ' <"$ctrl/serial")
		for n in "$ctrl"/nvme*n1; do
			[[ -e $n && $serial == kvt0 ]] && ns=/dev/${n##*/}
		done
	done
	[[ -n $ns ]] || { echo "demo: no NVMe namespace with serial kvt0" >&2; return 1; }
	echo "emulated NVMe namespace (serial kvt0): $ns," \
		"$(($(cat /sys/class/block/"${ns##*/}"/size) * 512 / 1048576)) MiB"

	section "load kvtier.ko"
	show modinfo -F version "$ko"
	show insmod "$ko" num_tiers=1
	show cat /sys/module/kvtier/parameters/num_tiers
	show ls -l /dev/kvtier*

	section "attach $ns to tier 0"
	show "$kvtierctl" attach 0 "$ns"

	section "kvtierctl status"
	show "$kvtierctl" status
	show "$kvtierctl" --json status

	section "sysfs: /sys/class/kvtier/kvtier0/"
	for f in /sys/class/kvtier/kvtier0/*; do
		[[ -f $f ]] || continue
		case ${f##*/} in uevent | dev) continue ;; esac
		# Write-only knobs (format) cannot be read, not even by root.
		[[ $(stat -c %A "$f") == ?r* ]] || continue
		grep -H . "$f"
	done

	section "debugfs: /sys/kernel/debug/kvtier/"
	show ls -l /sys/kernel/debug/kvtier/

	section "data path"
	# A 64 MiB region through a 16 MiB host budget: three quarters of it
	# must be written back to the namespace and read back by page faults.
	# The python3 program below (the host's, reached over 9p) writes a
	# position-dependent pattern through the mapping, verifies every byte
	# through the mapping and again with pread(), samples `resident` while
	# it runs, and exits non-zero on any mismatch or broken expectation.
	sysfs=/sys/class/kvtier/kvtier0
	stats=/sys/kernel/debug/kvtier/kvtier0/stats
	echo "\$ echo 16 > $sysfs/host_budget_mb"
	echo 16 >"$sysfs/host_budget_mb"
	show grep -H . "$sysfs/host_budget_mb" "$sysfs/watermark_high" \
		"$sysfs/watermark_low" "$sysfs/resident" "$sysfs/used"
	show cat "$stats"
	echo "\$ python3 (mmap 64 MiB of /dev/kvtier0, write, verify, fsync, close)"
	python3 - /dev/kvtier0 "$sysfs" "$stats" 64 <<'EOF'
import mmap, os, struct, sys

dev, sysfs, stats_path, size_mb = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
PAGE = 4096
size = size_mb << 20
npages = size // PAGE
GOLDEN = 0x9e3779b97f4a7c15

def attr(name):
    with open(f"{sysfs}/{name}") as f:
        return int(f.read())

def stats():
    out = {}
    with open(stats_path) as f:
        lines = f.read().split("\n")
    if lines[0] != "kvtier-stats 1":
        sys.exit(f"demo: unexpected stats header {lines[0]!r}")
    for line in lines[1:]:
        if line:
            k, v = line.split()
            out[k] = int(v)
    return out

def page_bytes(i):
    # 512 copies of an 8-byte value that depends on the page index.
    return struct.pack("<Q", (i * GOLDEN) % 2**64) * (PAGE // 8)

def fail(msg):
    print("demo: FAILED: " + msg, flush=True)
    sys.exit(1)

budget = attr("host_budget_mb") << 20
peak = 0
def sample():
    global peak
    r = attr("resident")
    peak = max(peak, r)
    if r > budget:
        fail(f"resident {r} exceeds the budget {budget}")

before = stats()
fd = os.open(dev, os.O_RDWR)
m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)

for i in range(npages):
    m[i * PAGE:(i + 1) * PAGE] = page_bytes(i)
    if i % 64 == 0:
        sample()
sample()
print(f"wrote {size_mb} MiB through the mapping; resident {attr('resident')} B,"
      f" used {attr('used')} B", flush=True)

bad = 0
for i in range(npages):
    if m[i * PAGE:(i + 1) * PAGE] != page_bytes(i):
        bad += 1
        if bad <= 5:
            print(f"mismatch in page {i} (mapping)", flush=True)
    if i % 64 == 0:
        sample()
if bad:
    fail(f"{bad} of {npages} pages read back wrong through the mapping")
print(f"verified {npages} pages ({size_mb} MiB) through the mapping", flush=True)

for i in range(0, npages, 256):
    chunk = os.pread(fd, 256 * PAGE, i * PAGE)
    want = b"".join(page_bytes(j) for j in range(i, i + 256))
    if chunk != want:
        fail(f"pread of pages {i}..{i + 255} differs")
    sample()
if os.pread(fd, PAGE, size) != b"":
    fail("pread at the end of the region did not return 0 bytes")
print(f"verified {npages} pages again with pread()", flush=True)

os.fsync(fd)
after = stats()
print(f"fsync ok; resident {attr('resident')} B, used {attr('used')} B;"
      f" peak resident sampled {peak} B <= budget {budget} B", flush=True)

print("\ndebugfs stats, before -> after (counters that changed, and gauges):")
gauges = ("resident_pages", "dirty_pages", "budget_pages", "slots_used",
          "slots_total", "inflight_bytes")
for k, v in after.items():
    if v != before.get(k) or k in gauges:
        print(f"  {k:20} {before.get(k, 0):>12} -> {v:>12}")

# What a 4x-over-budget round trip must have done.
d = {k: after[k] - before.get(k, 0) for k in after}
checks = [
    ("faults_major > 0 (pages came back from the namespace)", d["faults_major"] > 0),
    ("read_bytes > 0", d["read_bytes"] > 0),
    ("writeback_bytes >= 64 MiB (every page written back once, by eviction or fsync)",
     d["writeback_bytes"] >= size),
    ("evictions_clean + evictions_dirty > 0",
     d["evictions_clean"] + d["evictions_dirty"] > 0),
    ("io_errors == 0", d["io_errors"] == 0),
    ("nospace_errors == 0", d["nospace_errors"] == 0),
    ("dirty_pages == 0 after fsync", after["dirty_pages"] == 0),
]
for what, ok in checks:
    print(f"  check: {what}: {'ok' if ok else 'FAILED'}")
if not all(ok for _, ok in checks):
    fail("a counter check failed")

m.close()
os.close(fd)
EOF
	echo "closed: the region is gone with its last mapping and fd"
	show grep -H . "$sysfs/resident" "$sysfs/used"
	[[ $(cat "$sysfs/resident") == 0 && $(cat "$sysfs/used") == 0 ]] ||
		{ echo "demo: pages or slots left after close" >&2; return 1; }
	show grep -E '^(resident_pages|dirty_pages|slots_used|discard_pages) ' "$stats"
	echo "\$ echo 256 > $sysfs/host_budget_mb"
	echo 256 >"$sysfs/host_budget_mb"

	section "detach and unload"
	show "$kvtierctl" detach 0
	show cat /sys/class/kvtier/kvtier0/state
	show rmmod kvtier
	[[ ! -e /sys/module/kvtier ]] || { echo "demo: kvtier still loaded" >&2; return 1; }

	section "kernel log (kvtier)"
	dmesg | grep -E 'kvtier' || true

	section "demo finished: ok"
}

if [[ ${1:-} == --guest ]]; then
	guest "${2:?usage: demo.sh --guest BUILD}"
	exit
fi

# --- host -------------------------------------------------------------------

build=$(mkdir -p "${1:?usage: demo.sh BUILD}" && cd "$1" && pwd)
cache=$build/cache
t0=$SECONDS

read -r short kver < <("$top/tests/vm/kernels.sh" list | tail -n 1)
echo "demo: kernel $kver ($short)"
"$top/tests/build-modules.sh" "$build"
"$top/tests/vm/prepare.sh" "$kver" "$cache"
out=$build/demo-$kver
rm -rf "$out"
# Status 75: QEMU's timer stall (tests/vm/run.sh), not the demo; the
# demo starts from a fresh namespace, so it runs once more.
for attempt in 1 2; do
	rc=0
	"$top/tests/vm/run.sh" --kver "$kver" --cache "$cache" --out "$out" \
		--nvme-count 1 --nvme-size 1G --timeout 600 -- \
		"$top/tests/demo.sh" --guest "$build" || rc=$?
	((rc == 75 && attempt == 1)) || break
	echo "demo: QEMU's timer stall (see $out/console.log); booting again"
	mv "$out/console.log" "$out/console-stall.log"
done
echo "demo: $( ((rc == 0)) && echo ok || echo "FAILED (status $rc)"), $((SECONDS - t0)) s; console log and kernel log in $out/"
exit $rc
