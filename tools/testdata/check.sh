#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvtierctl against fixture files: the debugfs parsers, the rates and
# percentiles, the JSON, `set` validation and the usage errors, without the
# module. kvtierctl and libkvtier read the real paths: the script re-runs
# itself in a private mount namespace (as root, or in a user namespace) and
# mounts empty tmpfs over /sys/class, /sys/module, /sys/kernel/debug and
# /etc/kvtier, then copies sysroot/ there; nothing outside the namespace
# sees it. For the rates, the files in later/ replace the debugfs files
# during an interval.
#
# `persist` talks to /dev/kvtierN by ioctl: fakedev.so (LD_PRELOAD, built by
# make -C tools check) answers those from the regions file.
#
# usage: tools/testdata/check.sh [KVTIERCTL]   (default: tools/kvtierctl)
# Prints TAP; exits 1 on any failure. Needs python3 (JSON checks).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ctl=${1:-$here/../kvtierctl}
export LD_LIBRARY_PATH=$here/../../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# The re-run must be in a mount namespace of its own before it mounts
# anything (unshare execs it: its parent is our caller, in the old one).
if [[ -n ${KVT_FIXTURE_NS:-} && $(readlink /proc/self/ns/mnt) == "$(readlink /proc/$PPID/ns/mnt 2>/dev/null)" ]]; then
	echo "Bail out! KVT_FIXTURE_NS is set but this is its caller's mount namespace: not mounting over the real paths"
	exit 1
fi
if [[ -z ${KVT_FIXTURE_NS:-} ]]; then
	ns=(unshare --mount --propagation private)
	[[ $(id -u) -eq 0 ]] || ns=(unshare --map-root-user --mount --propagation private)
	if ! "${ns[@]}" true 2>/dev/null; then
		echo "Bail out! cannot make a private mount namespace (${ns[*]}): run as root, or enable unprivileged user namespaces"
		exit 1
	fi
	KVT_FIXTURE_NS=1 exec "${ns[@]}" "$0" "$@"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in /sys/class /sys/module /sys/kernel/debug; do
	mount -t tmpfs kvtier-fixture "$d" || { echo "Bail out! mount tmpfs on $d"; exit 1; }
done
if [[ -d /etc/kvtier ]]; then
	mount -t tmpfs kvtier-fixture /etc/kvtier
else
	# /etc/kvtier does not exist and /etc is not ours to write: an overlay.
	mkdir "$tmp/etc-upper" "$tmp/etc-work"
	mount -t overlay kvtier-fixture -o "lowerdir=/etc,upperdir=$tmp/etc-upper,workdir=$tmp/etc-work" /etc &&
		mkdir /etc/kvtier
fi || { echo "Bail out! cannot give /etc/kvtier a fixture"; exit 1; }
# kvtierctl gpu reads the kernel's configuration and the NVIDIA driver's
# files: empty stand-ins for them too (the gpu checks need all three).
gpu_fixture=1
mount -t tmpfs kvtier-fixture /boot && touch /boot/.kvtier-fixture || gpu_fixture=
mount -t tmpfs kvtier-fixture /proc/driver || gpu_fixture=
if [[ -e /proc/config.gz ]]; then
	mount --bind /dev/null /proc/config.gz || gpu_fixture=
fi
dbg=/sys/kernel/debug/kvtier/kvtier0
cls=/sys/class/kvtier/kvtier0

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
fresh() {
	rm -rf /sys/class/kvtier /sys/module/kvtier /sys/kernel/debug/kvtier
	cp -r "$here/sysroot/sys/." /sys/
}

# expect RC GREP-PATTERN NAME -- ARGS...: exit status and output (both streams).
expect() {
	local rc=$1 pat=$2 name=$3 out st
	shift 4
	out=$("$ctl" "$@" </dev/null 2>&1)
	st=$?
	if [[ $st -eq $rc ]] && grep -qE -- "$pat" <<<"$out"; then
		ok "$name"
	else
		notok "$name (exit $st, want $rc; output: ${out//$'\n'/ | })"
	fi
}

# pycheck NAME PYTHON-EXPR -- ARGS...: kvtierctl's stdout as JSON is `d`.
pycheck() {
	local name=$1 expr=$2
	shift 3
	if "$ctl" "$@" | python3 -c "import json,sys; d=json.load(sys.stdin); assert $expr, d" \
		2>"$tmp/py.err"; then
		ok "$name"
	else
		notok "$name: $(tail -1 "$tmp/py.err")"
	fi
}

# After 0.3 s of a 1 s interval, the counters move by a known amount.
later() { (sleep 0.3; cp "$here"/later/sys/kernel/debug/kvtier/kvtier0/* "$dbg/") & }

fresh
expect 0 'kvtier0: attached' "status text" -- status
expect 0 'used 480.0M \(93.8%\)' "status: used and percentage" -- status 0
expect 0 'pinned +2.0M' "status: pinned summed from regions" -- status
pycheck "status --json keys" \
	'd[0]["tier"] == 0 and d[0]["used_bytes"] == 503316480 and d[0]["host_budget_mb"] == 16 and d[0]["error"] == 0 and d[0]["pinned_bytes"] == 2097152 and "serial" in d[0]' \
	-- --json status
echo "held-here host=gpu1 tier=0 seq=42 interval_ms=1000 acquired=1 renewed=2" >"$cls/lease"
expect 0 'lease     held-here host=gpu1 tier=0 seq=42' "status: the ownership lease line" -- status 0
pycheck "status --json: lease" \
	'd[0]["lease"].startswith("held-here host=gpu1")' \
	-- --json status
rm -f "$cls/lease"
# The metadata line: each column in its place; a module without the
# attribute, or a malformed one, shows none (JSON null).
echo "9437184 1048576 2097152 3145728 65536 4096" >"$cls/metadata"
expect 0 'metadata  9.0M +regions 1.0M, page maps 2.0M, CRCs 3.0M, allocator 64.0K, buffer 4.0K' \
	"status: the metadata line" -- status 0
pycheck "status --json: metadata_bytes" \
	'd[0]["metadata_bytes"] == {"total": 9437184, "regions": 1048576, "page_maps": 2097152, "crcs": 3145728, "allocator": 65536, "buffer": 4096}' \
	-- --json status
echo "1 2 3" >"$cls/metadata"
if "$ctl" status 0 2>&1 | grep -q metadata; then
	notok "status: a short metadata line is not shown"
else
	ok "status: a short metadata line is not shown"
fi
pycheck "status --json: no metadata_bytes from a short line" 'd[0]["metadata_bytes"] is None' \
	-- --json status
rm -f "$cls/metadata"
pycheck "status --json: no metadata attribute" 'd[0]["metadata_bytes"] is None' -- --json status
# The format line: the namespace's version, from sysfs upgrade.
pycheck "status --json: no upgrade attribute, no format_version" 'd[0]["format_version"] is None' -- --json status
echo 1 >"$cls/upgrade"
expect 0 '^  format    version 1: a checkpoint per commit \(kvtierctl upgrade 0 gives it the journal of version 2\)$' \
	"status: a version-1 namespace and the way to upgrade it" -- status 0
echo 2 >"$cls/upgrade"
expect 0 '^  format    version 2: commits go to a journal$' "status: a version-2 namespace" -- status 0
pycheck "status --json: format_version" 'd[0]["format_version"] == 2' -- --json status
echo 3 >"$cls/upgrade"
expect 0 '^  format    version 3: commits go to a journal, pages mapped by extents$' \
	"status: a version-3 namespace" -- status 0
pycheck "status --json: format_version 3" 'd[0]["format_version"] == 3' -- --json status
echo 4 >"$cls/upgrade"
expect 0 '^  format    version 4: commits go to a journal, pages mapped by extents, CRCs in runs of their own \(kvtierctl upgrade 0 gives it version 5.s files that grow\)$' \
	"status: a version-4 namespace and the way to upgrade it" -- status 0
pycheck "status --json: format_version 4" 'd[0]["format_version"] == 4' -- --json status
echo 5 >"$cls/upgrade"
expect 0 '^  format    version 5: commits go to a journal, pages mapped by extents, CRCs in runs of their own, sizes in bytes$' \
	"status: a version-5 namespace" -- status 0
pycheck "status --json: format_version 5" 'd[0]["format_version"] == 5' -- --json status
echo none >"$cls/upgrade"
if "$ctl" status 0 2>&1 | grep -q "format  "; then
	notok "status: no format line while detached"
else
	ok "status: no format line while detached"
fi
pycheck "status --json: format_version null while detached" 'd[0]["format_version"] is None' -- --json status
rm -f "$cls/upgrade"
expect 1 'no tier 5' "status of a missing tier: exit 1" -- status 5
expect 2 'bad TIER' "status of a bad TIER: exit 2" -- status x
# A tier as 0, kvtier0 or /dev/kvtier0 (lsblk and nvme-cli habits).
for t in kvtier0 /dev/kvtier0; do
	expect 0 'kvtier0' "status $t: the same tier as 0" -- status "$t"
done
expect 2 'bad TIER' "status kvtier: no number: exit 2" -- status kvtier
# A usage error is one line and a hint, not the whole usage.
out=$("$ctl" status x 2>&1)
if [[ $(wc -l <<<"$out") -eq 2 && $out == *"Try 'kvtierctl status --help'."* ]]; then
	ok "a usage error: one line and a hint"
else
	notok "a usage error: one line and a hint (got: ${out//$'\n'/ | })"
fi

expect 0 '^ +2 prefix-llama +[^ ]+ +16.0M +8.0M +0B +16.0M +2.0M +8.0M +500 +30 +25000$' \
	"regions table (unknown column skipped, GPU column)" -- regions 0
expect 0 '^ +ID NAME +OWNER +SIZE +RESIDENT +DIRTY +NS +PINNED +GPU +FAULTS +REFAULTS +IDLE_MS$' \
	"regions header with GPU" -- regions 0
pycheck "regions --json" \
	'[r["id"] for r in d if r["kind"] == "region"] == [1, 2] and d[1]["name"] == "prefix-llama" and d[0]["namespace_bytes"] == 58720256 and d[1]["owner"] == 1000 and d[0]["gpu_bytes"] == 0 and d[1]["gpu_bytes"] == 8388608' \
	-- regions --json
# lsblk's habits: -o columns in order, -b bytes, -n no header.
expect 0 '^prefix-llama +16777216 +16777216 +8388608$' "regions -o NAME,SIZE,NS,GPU -b" \
	-- regions -o NAME,SIZE,NS,GPU -b 0
expect 0 '^ +1 +1500$' "regions -n -o id,faults (any case)" -- regions -n -o id,faults
out=$("$ctl" regions -n -o ID 2>&1)
[[ $out == $'     1\n     2' ]] && ok "regions -n -o ID: no header, no GPU table" ||
	notok "regions -n -o ID: no header, no GPU table (got: ${out//$'\n'/ | })"
expect 0 '^ +GPU NAME +GPU$' "regions --output: the column list order" -- regions --output GPU,NAME,GPU
expect 0 ' 8388608 hmm ' "regions -b: GPU range lengths in bytes" -- regions -b
expect 2 "unknown column 'bogus' \\(columns: ID,NAME,OWNER," "regions -o bogus: exit 2" -- regions -o bogus
expect 2 'names no column' "regions -o ,: exit 2" -- regions -o ,

# GPU ranges: a second table (unknown column numa_node skipped), and
# objects of kind "gpu" after the regions in JSON.
"$ctl" regions 0 >"$tmp/reg" 2>&1
for pat in '^GPU ranges$' \
	'^ +ID +PID +VA +LENGTH +MODE +GPU +TENANT +REGION$' \
	'^ +3 +1234 +0x7f3a00000000 +8.0M +hmm +GPU-5e0c1a2b-3c4d-5e6f-7081-92a3b4c5d6e7 +team-a +2$' \
	'^ +4 +1234 +0x7f3b00000000 +2.0M +managed +GPU-5e0c1a2b-3c4d-5e6f-7081-92a3b4c5d6e7 +- +-$'; do
	if grep -qE -- "$pat" "$tmp/reg"; then ok "regions: $pat"; else notok "regions: $pat"; fi
done
if [[ $(grep -c . "$tmp/reg") == 7 ]]; then ok "regions: 3 region lines, title, 3 GPU lines"; else notok "regions: line count ($(cat "$tmp/reg"))"; fi
pycheck "regions --json: GPU ranges" \
	'[r["kind"] for r in d] == ["region", "region", "gpu", "gpu"] and d[2] == {"kind": "gpu", "id": 3, "pid": 1234, "va": 0x7f3a00000000, "length_bytes": 8388608, "mode": "hmm", "gpu": "GPU-5e0c1a2b-3c4d-5e6f-7081-92a3b4c5d6e7", "tenant": "team-a", "region": 2} and d[3]["mode"] == "managed" and d[3]["region"] is None and d[3]["tenant"] == "" and d[3]["va"] == 0x7f3b00000000' \
	-- --json regions 0

# An older module: no gpu_ranges file, no gpu_bytes column.
fresh
rm "$dbg/gpu_ranges"
"$ctl" regions 0 >"$tmp/reg" 2>&1
st=$?
if [[ $st == 0 ]] && ! grep -q 'GPU ranges' "$tmp/reg" && [[ $(grep -c . "$tmp/reg") == 3 ]]; then
	ok "no gpu_ranges file: no GPU table, no error"
else
	notok "no gpu_ranges file: no GPU table, no error (exit $st: $(cat "$tmp/reg"))"
fi
pycheck "no gpu_ranges file: --json has regions only" \
	'[r["kind"] for r in d] == ["region", "region"]' -- --json regions
sed -i 's/ gpu_bytes//; 3,$s/ [0-9]* \([xy]\)$/ \1/' "$dbg/regions"
expect 0 '^ +2 prefix-llama +[^ ]+ +16.0M +8.0M +0B +16.0M +2.0M +- +500 +30 +25000$' \
	"no gpu_bytes column: GPU is -" -- regions 0
pycheck "no gpu_bytes column: gpu_bytes null" \
	'd[0]["gpu_bytes"] is None and d[1]["gpu_bytes"] is None and d[1]["refaults"] == 30' -- --json regions

# No ranges registered: no GPU table; JSON objects of regions only.
fresh
head -2 "$dbg/gpu_ranges" >"$tmp/g" && cp "$tmp/g" "$dbg/gpu_ranges"
"$ctl" regions 0 >"$tmp/reg" 2>&1
if [[ $? == 0 ]] && ! grep -q 'GPU' <(tail -n +2 "$tmp/reg"); then
	ok "empty gpu_ranges: no GPU table"
else
	notok "empty gpu_ranges: no GPU table ($(cat "$tmp/reg"))"
fi

# A gpu_ranges file kvtierctl cannot read: exit 1, a clear error, and no
# partial output on stdout.
# gpu_bad NAME RC PATTERN SED-SCRIPT: edit a fresh gpu_ranges, run regions.
gpu_bad() {
	local name=$1 rc=$2 pat=$3 out err st
	fresh
	sed -i "$4" "$dbg/gpu_ranges"
	for args in "regions 0" "--json regions 0"; do
		out=$("$ctl" $args 2>"$tmp/err" </dev/null)
		st=$? err=$(cat "$tmp/err")
		if [[ $st == "$rc" && -z $out ]] && grep -qE -- "$pat" <<<"$err"; then
			ok "$name ($args)"
		else
			notok "$name ($args): exit $st, want $rc; stdout '${out//$'\n'/ | }'; stderr '$err'"
		fi
	done
}
gpu_bad "gpu_ranges version 2 refused" 1 'kvtier0: gpu_ranges: format version not supported' '1s/ 1$/ 2/'
gpu_bad "gpu_ranges wrong magic" 1 'kvtier0: gpu_ranges: malformed line' '1s/kvtier-gpu/kvtier-regions/'
gpu_bad "gpu_ranges without id column" 1 'gpu_ranges: malformed line' '2s/^id /ident /'
gpu_bad "gpu_ranges short row" 1 'gpu_ranges: malformed line' '3s/ 2$//'
gpu_bad "gpu_ranges va not hex" 1 'gpu_ranges: malformed line' '3s/0x7f3a00000000/7f3a00000000/'
gpu_bad "gpu_ranges va too long" 1 'gpu_ranges: malformed line' '3s/0x7f3a00000000/0x117f3a00000000000/'
gpu_bad "gpu_ranges bad length" 1 'gpu_ranges: malformed line' '3s/ 8388608 / 8M /'
gpu_bad "gpu_ranges bad region" 1 'gpu_ranges: malformed line' '3s/ 2$/ two/'
gpu_bad "gpu_ranges empty file" 1 'gpu_ranges: malformed line' 'd'
fresh
chmod 000 "$dbg/gpu_ranges"
if [[ $(id -u) != 0 ]]; then
	expect 1 'gpu_ranges: Permission denied \(debugfs needs root\)' "gpu_ranges unreadable" -- regions 0
else
	ok "gpu_ranges unreadable # SKIP root reads mode 000 files"
fi

later
expect 0 '^ +(19[0-9][0-9]|2000) +25.0 +(9.[0-9]|10.0) +(4.[89]|5.0) +(19[0-9].[0-9]|200.0) +8 +1024$' \
	"stat: rates and p50/p99 of the interval" -- stat -i 1 -c 1
fresh
later
pycheck "stat --json" \
	'1900 <= d["faults_per_s"] <= 2000 and d["major_pct"] == 25 and d["fault_p50_us"] == 8 and d["fault_p99_us"] == 1024 and 190 <= d["refaults_per_s"] <= 200' \
	-- stat --json -i 1 -c 1 0
fresh
expect 0 '^ +[0-9]+ +0.0 +0.0 +0.0 +0.0 +- +-$' "stat: an idle interval" -- stat -i 0.1 -c 1
# vmstat's operands: [TIER] [INTERVAL [COUNT]], the tier written kvtierN.
expect 0 '^ +[0-9]+ +0.0 +0.0 +0.0 +0.0 +- +-$' "stat INTERVAL COUNT" -- stat 0.1 1
expect 0 '^ +[0-9]+ +0.0 +0.0 +0.0 +0.0 +- +-$' "stat kvtier0 INTERVAL COUNT" -- stat kvtier0 0.1 1
expect 0 '^ +[0-9]+ +0.0 +0.0 +0.0 +0.0 +- +-$' "stat /dev/kvtier0 INTERVAL COUNT" -- stat /dev/kvtier0 0.1 1
[[ $("$ctl" stat 0.1 3 | grep -c '^ *[0-9]') == 3 ]] && ok "stat 0.1 3: three lines" ||
	notok "stat 0.1 3: three lines"
pycheck "stat --json: a wall-clock time per line" \
	'abs(d["time"] - __import__("time").time()) < 60 and d["tier"] == 0' \
	-- stat --json 0.1 1
expect 2 "bad interval '0' \\(seconds, 0.01..3600; a tier is written kvtierN\\)" \
	"stat 0: a bare number is the interval" -- stat 0
expect 2 'too many arguments' "stat INTERVAL COUNT EXTRA: exit 2" -- stat 0.1 1 1
expect 2 "bad count '0'" "stat INTERVAL 0: exit 2" -- stat 0.1 0
expect 2 "bad TIER 'kvtier99'" "stat kvtier99: exit 2" -- stat kvtier99 1
expect 2 'too many arguments' "stat -i with INTERVAL too: exit 2" -- stat -i 1 0 1

fresh
later
"$ctl" top -i 1 -c 1 >"$tmp/top" 2>&1
for pat in 'WARNING: refaulting: host budget too small' \
	'median bio  read 64.0K  write-back 1.0M' \
	'WARNING: namespace nearly full' 'FAULTS/s +ID NAME .* PINNED +GPU +FAULTS' \
	'^ +0 +1 - ' '^ +0 +2 prefix-llama .* 2.0M +8.0M +500 '; do
	if grep -qE -- "$pat" "$tmp/top"; then ok "top: $pat"; else notok "top: $pat"; fi
done
if grep -q 'p99 fault latency rising' "$tmp/top"; then
	notok "top: no p99 warning without a previous interval"
else
	ok "top: no p99 warning without a previous interval"
fi

# Versions and malformed files.
fresh
sed -i '1s/ 1$/ 2/' "$dbg/stats"
expect 1 'format version not supported' "stats version 2 refused" -- stat -i 0.1 -c 1
fresh
echo "faults_minor" >>"$dbg/stats"
expect 1 'malformed' "malformed stats line" -- stat -i 0.1 -c 1
fresh
sed -i '3s/ 0$//' "$dbg/latency"
expect 0 '- +-$' "short latency row: no percentiles, stat goes on" -- stat -i 0.1 -c 1
fresh
rm "$dbg/regions"
expect 1 'no debugfs regions file' "regions file missing" -- regions
# latency and io version 2 (a sum after the counts, kvtier.rst): the same
# rates and percentiles; a version 2 row without its sum is malformed.
fresh
mkdir -p "$tmp/later2" && cp -r "$here/later/." "$tmp/later2/"
for f in "$dbg/latency" "$dbg/io" "$tmp"/later2/sys/kernel/debug/kvtier/kvtier0/{latency,io}; do
	sed -i -e '1s/ 1$/ 2/' -e '3,$s/$/ 12345/' "$f"
done
(sleep 0.3; cp "$tmp"/later2/sys/kernel/debug/kvtier/kvtier0/* "$dbg/") &
expect 0 '^ +(19[0-9][0-9]|2000) +25.0 +(9.[0-9]|10.0) +(4.[89]|5.0) +(19[0-9].[0-9]|200.0) +8 +1024$' \
	"stat on latency/io version 2: the same rates and p50/p99" -- stat -i 1 -c 1
wait
fresh
sed -i '1s/ 1$/ 2/' "$dbg/latency"
expect 0 '- +-$' "latency version 2 without sums: rows malformed, no percentiles" -- stat -i 0.1 -c 1
fresh
sed -i '1s/ 1$/ 3/' "$dbg/latency"
expect 0 '- +-$' "latency version 3: refused, no percentiles" -- stat -i 0.1 -c 1

# set: validated before writing.
fresh
for bad in "host_budget_mb 0" "host_budget_mb -1" "host_budget_mb abc" \
	"host_budget_mb 12x" "host_budget_mb 99999999999" "host_budget_mb ''" \
	"watermark_low 80" "watermark_high 60" "watermark_high 101" \
	"readahead_kb 6" "readahead_kb 2048" "writeback_batch_kb 0" \
	"max_inflight_kb 2097152" "discard 2" "pin_budget_mb x" "bogus_knob 1" \
	"lease_interval_ms 99" "lease_interval_ms 60001"; do
	eval "set -- $bad"
	expect 2 'set:' "set $bad: exit 2" -- set 0 "$@"
done
if [[ $(cat "$cls/host_budget_mb" "$cls/watermark_low" "$cls/readahead_kb") == $'16\n60\n128' ]]; then
	ok "rejected values wrote nothing"
else
	notok "rejected values wrote nothing"
fi
: >"$cls/readahead_kb"
expect 0 '' "set readahead_kb 64" -- set 0 readahead_kb 64
# get: knobs read back, all of them (those the module has) or the named.
cat "$cls/readahead_kb" >/dev/null || notok "fixture has readahead_kb"
expect 0 "^readahead_kb $(cat "$cls/readahead_kb")\$" "get 0 readahead_kb" -- get 0 readahead_kb
expect 0 '^host_budget_mb [0-9]+' "get 0: every knob the module has" -- get kvtier0
expect 2 "unknown knob 'bogus'" "get 0 bogus: exit 2" -- get 0 bogus
expect 1 'no knob checksum' "get a knob the module lacks: exit 1" -- get 0 checksum
pycheck "get --json: numbers" "d['watermark_low'] < d['watermark_high']" -- --json get 0
# One version, dkms.conf's, for the tool and the library it runs with.
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$here/../../dkms.conf")
expect 0 "^kvtierctl $ver, libkvtier $ver\$" "--version: dkms.conf's $ver for both" -- --version
[[ $(cat "$cls/readahead_kb") == 64 ]] && ok "readahead_kb written" || notok "readahead_kb written"
expect 2 'need TIER' "set with a missing VALUE: exit 2" -- set 0 discard

# Usage and refusals.
expect 2 'bad interval' "stat -i 0: exit 2" -- stat -i 0
expect 2 'bad count' "stat -c x: exit 2" -- stat -c x
expect 2 'bad option' "stat --bogus: exit 2" -- stat --bogus
expect 2 'unknown command' "unknown command: exit 2" -- frobnicate
expect 0 'usage: kvtierctl stat' "stat --help" -- stat --help
expect 1 'not a block device' "attach --format of a character device: exit 1" -- attach --format --yes 0 /dev/null
expect 2 'pass --yes \(nothing written\)' "attach --format without a terminal or --yes: exit 2" -- attach --format 0 /dev/null
expect 2 '--yes only goes with --format' "attach --yes without --format: exit 2" -- attach --yes 0 /dev/null
expect 1 'not a block device' "attach of a character device: exit 1" -- attach 0 /dev/null
expect 1 'No such file' "attach of a missing path: exit 1" -- attach 0 /nonexistent/dev
expect 2 'need TIER' "attach without DEVICE: exit 2" -- attach 0

fresh
rm "$cls/format"
expect 1 'no format attribute.*nothing written' "attach --format, module without format: exit 1" \
	-- attach --format --yes 0 /dev/null

# persist: arguments and names are checked before any ioctl.
fresh
for bad in "" "bogus" "ls 1 2" "ls -t 1 1" "ls -t 64" "rm" "rm a b" "pin" \
	"rm --json x" "unpin -t x y"; do
	eval "set -- $bad"
	expect 2 'persist' "persist $bad: exit 2" -- persist "$@"
done
long=$(printf 'n%.0s' {1..64})
for bad in "a/b" "a b" $'a\tb' $'caf\xc3\xa9' "$long"; do
	expect 2 'bad region name' "persist rm: bad name ${bad@Q}" -- persist rm "$bad"
done
expect 2 "contains '/'" "bad name: the reason" -- persist pin a/b
expect 2 'longer than 63 bytes' "bad name: too long" -- persist unpin "$long"
expect 2 'bad region name .a\\x09b.' "bad name: control bytes escaped" -- persist rm $'a\tb'
expect 1 'no tier 1' "persist rm --tier 1: no such tier" -- persist rm --tier 1 x
expect 1 'no tier 3' "persist ls 3: no such tier" -- persist ls 3

fake=$here/fakedev.so
if [[ -f $fake ]]; then
	export KVT_FAKE_REGIONS=$here/regions KVT_FAKE_LOG=$tmp/ioctl.log
	# pexpect: expect with the shim loaded and times in UTC.
	pexpect() { LD_PRELOAD=$fake TZ=UTC expect "$@"; }
	pycheck_fake() { LD_PRELOAD=$fake pycheck "$@"; }
	calls() { cat "$tmp/ioctl.log" 2>/dev/null; rm -f "$tmp/ioctl.log"; }
	errno() { python3 -c "import errno; print(errno.$1)"; }

	pexpect 0 '^NAME +SIZE +NS +RESIDENT +OWNER +MODE +CREATED +LAST_USED +USERS +PINNED +SEALED$' \
		"persist ls: header" -- persist ls
	pexpect 0 '^aaa-first +4\.0K +4\.0K +0B +root +0600 +2026-09-21 14:13 +- +2 +no +no$' \
		"persist ls: unpinned row, never used" -- persist ls
	pexpect 0 '^prefix-llama +16\.0M +16\.0M +8\.0M +4242 +0640 +2026-09-21 14:13 +2026-09-21 15:13 +0 +yes +yes$' \
		"persist ls: pinned row" -- persist ls 0
	pexpect 0 '^prefix-llama +16777216 yes$' "persist ls -o NAME,SIZE,SEALED -b -n" \
		-- persist ls -o NAME,SIZE,SEALED -b -n
	out=$(LD_PRELOAD=$fake "$ctl" persist ls -n -o name 2>&1)
	[[ $out == $'aaa-first\nprefix-llama' ]] && ok "persist ls -n -o name: names only" ||
		notok "persist ls -n -o name: names only (got: ${out//$'\n'/ | })"
	pexpect 2 "unknown column 'x'" "persist ls -o x: exit 2" -- persist ls -o x
	pexpect 2 '-o, -b and -n are options of ls' "persist rm -b: exit 2" -- persist rm -b x
	out=$(LD_PRELOAD=$fake "$ctl" persist ls 2>&1)
	if grep -q in-memory <<<"$out"; then
		notok "persist ls: only persistent regions"
	else
		ok "persist ls: only persistent regions"
	fi
	if [[ $(awk 'NR > 1 { print $1 }' <<<"$out" | tr '\n' ' ') == "aaa-first prefix-llama " ]]; then
		ok "persist ls: sorted by name"
	else
		notok "persist ls: sorted by name (${out//$'\n'/ | })"
	fi
	pycheck_fake "persist ls --json" \
		'[r["name"] for r in d] == ["aaa-first", "prefix-llama"] and d[1] == {"name": "prefix-llama", "size_bytes": 16777216, "namespace_bytes": 16777216, "resident_bytes": 8388608, "owner": 4242, "mode": 0o640, "created": 1790000000, "last_used": 1790003600, "users": 0, "pinned": True, "sealed": True} and d[0]["pinned"] is False and d[0]["sealed"] is False and d[0]["last_used"] == 0' \
		-- persist ls --json
	pycheck_fake "--json persist ls -t 0" 'len(d) == 2' -- --json persist ls -t 0

	# More regions than libkvtier's first guess (16): it asks again.
	for i in $(seq -w 1 40); do
		echo "r$i 4096 0 4096 1790000000 1790000000 0 0600 0 0x4"
	done >"$tmp/many"
	KVT_FAKE_REGIONS=$tmp/many pycheck_fake "persist ls: 40 regions" \
		'len(d) == 40 and d[0]["name"] == "r01" and d[39]["name"] == "r40"' -- persist ls --json
	: >"$tmp/none"
	KVT_FAKE_REGIONS=$tmp/none pycheck_fake "persist ls: none is []" 'd == []' -- persist ls --json

	calls >/dev/null
	pexpect 0 '' "persist pin" -- persist pin prefix-llama
	[[ $(calls) == "setflags prefix-llama 0x100 0" ]] && ok "pin sets PINNED" || notok "pin sets PINNED"
	pexpect 0 '' "persist unpin --tier 0" -- persist unpin --tier 0 prefix-llama
	[[ $(calls) == "setflags prefix-llama 0 0x100" ]] && ok "unpin clears PINNED" || notok "unpin clears PINNED"
	pexpect 0 '' "persist seal" -- persist seal prefix-llama
	[[ $(calls) == "setflags prefix-llama 0x200 0" ]] && ok "seal sets SEALED" || notok "seal sets SEALED"
	KVT_FAKE_ERRNO=$(errno EBUSY) pexpect 1 "cannot seal 'prefix-llama' on kvtier0: files still have it open" \
		"seal: EBUSY" -- persist seal prefix-llama
	KVT_FAKE_ERRNO=$(errno EROFS) pexpect 1 "kvtier0 is attached read-only" \
		"seal: EROFS" -- persist seal prefix-llama
	calls >/dev/null
	pexpect 0 '' "persist rm" -- persist rm prefix-llama
	[[ $(calls) == "unlink prefix-llama" ]] && ok "rm unlinks" || notok "rm unlinks"
	pexpect 0 "'aaa-first' is still open \(2 files\)" "persist rm of a region in use: a note" \
		-- persist rm aaa-first
	calls >/dev/null
	pexpect 1 "region 'in-memory' on kvtier0 is not persistent" "persist rm of a non-persistent region" \
		-- persist rm in-memory
	pexpect 1 "no region 'nope' on kvtier0" "persist rm of a missing region" -- persist rm nope
	[[ -z $(calls) ]] && ok "refused rm: no unlink" || notok "refused rm: no unlink"
	pexpect 2 'bad region name' "bad name: no ioctl" -- persist pin 'x y'
	[[ -z $(calls) ]] && ok "bad name: nothing called" || notok "bad name: nothing called"

	# The kernel's errors, in words.
	KVT_FAKE_ERRNO=$(errno EPERM) pexpect 1 \
		"not the owner of region 'prefix-llama' on kvtier0: only its owner or root \(CAP_FOWNER\) may remove it" \
		"rm: EPERM" -- persist rm prefix-llama
	KVT_FAKE_ERRNO=$(errno EPERM) pexpect 1 "cannot pin region 'prefix-llama' on kvtier0: only root \(CAP_SYS_RESOURCE\) may pin" \
		"pin: EPERM" -- persist pin prefix-llama
	KVT_FAKE_ERRNO=$(errno EPERM) pexpect 1 "not the owner of region 'prefix-llama'.* may unpin it" \
		"unpin: EPERM" -- persist unpin prefix-llama
	KVT_FAKE_ERRNO=$(errno ENOENT) pexpect 1 "no region 'gone' on kvtier0" "pin: ENOENT" \
		-- persist pin gone
	KVT_FAKE_ERRNO=$(errno EINVAL) pexpect 1 "'in-memory' on kvtier0 is not persistent" \
		"pin: EINVAL of a non-persistent region" -- persist pin in-memory
	KVT_FAKE_ERRNO=$(errno EIO) pexpect 1 'committing the change .* failed: I/O error \(see dmesg\)' \
		"unpin: EIO" -- persist unpin prefix-llama
	KVT_FAKE_ERRNO=$(errno ENODEV) pexpect 1 'kvtier0 has no namespace attached' \
		"pin: ENODEV" -- persist pin prefix-llama
	KVT_FAKE_ERRNO=$(errno ENOTTY) pexpect 1 'module has no persistent regions' \
		"pin: ENOTTY (older module)" -- persist pin prefix-llama
	KVT_FAKE_LIST_ERRNO=$(errno ENOTTY) pexpect 1 'cannot list regions' \
		"ls: ENOTTY (older module)" -- persist ls
	KVT_FAKE_OPEN_ERRNO=$(errno EACCES) pexpect 1 'cannot open /dev/kvtier0: Permission denied \(needs root or the kvtier group\)' \
		"ls: EACCES" -- persist ls
	echo none >"$cls/backing_dev"
	KVT_FAKE_REGIONS=$tmp/none pexpect 0 'kvtier0 has no namespace attached' \
		"persist ls of a detached tier: a note" -- persist ls
	unset KVT_FAKE_REGIONS KVT_FAKE_LOG
else
	ok "persist with fakedev.so # SKIP not built (make -C tools check builds it)"
fi

# apply: kvtier.conf(5). Every bad file is refused whole, naming FILE:LINE.
fresh
conf=$tmp/kvtier.conf
bad() {	# bad NAME PATTERN: apply --config $conf refuses it
	expect 1 "$2" "apply: $1" -- apply --dry-run --config "$conf"
}
printf '[kvtier0]\ndevice = /dev/disk/by-id/x\nbudget = 5\n' >"$conf"
bad "unknown key, FILE:LINE" "$conf:3: unknown key 'budget'"
printf '[kvtier0]\ndevice = /dev/x\nhost_budget_mb = 12x\n' >"$conf"
bad "a bad number" "$conf:3: host_budget_mb: '12x' is not a decimal number"
printf '[kvtier0]\ndevice = /dev/x\nwriteback_batch_kb = 6\n' >"$conf"
bad "a value off the knob's grain" "$conf:3: writeback_batch_kb: 6 is not a multiple of 4"
printf '[kvtier0]\ndevice = /dev/x\nread_only = 2\n' >"$conf"
bad "read_only out of range" "$conf:3: read_only: 2 is out of range 0..1"
printf 'device = /dev/x\n[kvtier0]\ndevice = /dev/x\n' >"$conf"
bad "a key before any section" "$conf:1: 'device' before any \[kvtierN\] section"
printf '[tier0]\ndevice = /dev/x\n' >"$conf"
bad "a section that is not a tier" "$conf:1: section \[tier0\] is not a tier"
printf '[kvtier64]\ndevice = /dev/x\n' >"$conf"
bad "a tier past the last" "$conf:1: section \[kvtier64\] is not a tier"
printf '[kvtier0\ndevice = /dev/x\n' >"$conf"
bad "a section without ]" "$conf:1: section '\[kvtier0' lacks its '\]'"
printf '[kvtier0]\nhost_budget_mb = 64\n' >"$conf"
bad "a tier without a device" "$conf:1: kvtier0 names no device"
printf '[kvtier0]\ndevice = /dev/x\nnqn = nqn.2019-08.org.qemu:kvt0\n' >"$conf"
bad "device and nqn both" "$conf:3: kvtier0 names both a device \($conf:2\) and an nqn"
printf '[kvtier0]\nnqn = iqn.x\n' >"$conf"
bad "an nqn that is not one" "$conf:2: nqn 'iqn.x' is not an NVMe qualified name"
printf '[kvtier0]\ndevice = /dev/x\nnsid = 1\n' >"$conf"
bad "nsid without nqn" "$conf:3: nsid goes with nqn"
printf '[kvtier0]\ndevice = dev/x\n' >"$conf"
bad "a relative device" "$conf:2: device 'dev/x' is not an absolute path"
printf '[kvtier0]\ndevice = /dev/x\nhost_budget_mb =\n' >"$conf"
bad "a key without a value" "$conf:3: host_budget_mb has no value"
printf '[kvtier0]\ndevice = /dev/x\nwatermark_high = 50\nwatermark_low = 60\n' >"$conf"
bad "watermark_low above watermark_high" "$conf:4: watermark_low 60 must be below watermark_high 50 \($conf:3\)"
printf '[tier0]\ndevice = /dev/x\nhost_budget_mb = 1\n' >"$conf"
out=$("$ctl" apply --config "$conf" 2>&1)
if [[ $out != *"before any"* && $(grep -c "$conf:[0-9]" <<<"$out") -eq 1 ]]; then ok "apply: a bad section's keys are not reported again"; else notok "apply: a bad section: $out"; fi
printf '[kvtier0]\ndevice = /dev/x\x00\n' >"$conf"
bad "a NUL byte" "$conf:2: a NUL byte in the line"
printf '[kvtier0]\ndevice = /dev/x\nwatermark_high = abc\nwatermark_low = 50\n' >"$conf"
out=$("$ctl" apply --config "$conf" 2>&1)
if [[ $out == *"'abc' is not a decimal number"* && $out != *"must be below"* ]]; then ok "apply: a bad value is one error, not two"; else notok "apply: a bad watermark: $out"; fi
printf '[kvtier0]\ndevice = /dev/x\nnot a line\n' >"$conf"
bad "a line that is no assignment" "$conf:3: 'not a line' is not KEY = VALUE"
printf '[kvtier0]\ndevice = %s/no-such-device\n' "$tmp" >"$conf"
bad "a missing device" "$conf:2: kvtier0: device $tmp/no-such-device: No such file or directory"
bad "a missing device: nothing changed" "$conf: nothing changed"
printf '[kvtier0]\ndevice = %s\n' "$conf" >"$conf"
bad "a device that is a file" "$conf:2: kvtier0: $conf is not a block device"
expect 1 "$tmp/none.conf: No such file or directory" "apply: no configuration file" \
	-- apply --config "$tmp/none.conf"
printf '# nothing yet\n\n' >"$conf"
expect 0 "configures no tier: nothing to do" "apply: a file of comments" -- apply --config "$conf"
expect 2 "no operands" "apply: an operand: exit 2" -- apply 0
expect 2 "--wait 'x' is not seconds" "apply: a bad --wait: exit 2" -- apply --wait x
printf '[kvtier0]\ndevice = %s/late\n' "$tmp" >"$conf"
start=$SECONDS
expect 1 "device $tmp/late: No such file or directory" "apply --wait 0: no waiting" \
	-- apply --wait 0 --config "$conf"
expect 1 "device $tmp/late: No such file or directory" "apply --wait 1: then refused" \
	-- apply --wait 1 --config "$conf"
if ((SECONDS - start >= 1 && SECONDS - start < 10)); then ok "apply --wait 1 waited about a second"; else notok "apply --wait 1 took $((SECONDS - start)) s"; fi
# A fragment directory that is a file is an error that says so.
printf '[kvtier0]\ndevice = /dev/x\n' >"$conf"
: >"$conf.d"
bad "a fragment directory that is a file" "$conf.d: Not a directory"
rm -f "$conf.d"
# A fragment's error names the fragment.
mkdir -p "$conf.d"
printf '[kvtier0]\ndevice = /dev/x\n' >"$conf"
printf '[kvtier0]\nchecksum = yes\n' >"$conf.d/10-bad.conf"
bad "an error in a fragment names it" "$conf.d/10-bad.conf:2: checksum: 'yes' is not a decimal number"
rm -rf "$conf.d"

# The plan against the fixture's tier: a device node stands in for the
# namespace (root only: mknod).
if mknod "$tmp/nvme-a" b 7 250 2>/dev/null && mknod "$tmp/nvme-b" b 7 251 2>/dev/null; then
	echo "$tmp/nvme-a" >"$cls/backing_dev"
	echo 0 >"$cls/read_only"
	echo 1 >"$cls/checksum"
	# The default file is /etc/kvtier/kvtier.conf (the fixture's, in this
	# namespace), then kvtier.conf.d/*.conf in name order: the last one wins.
	etc=/etc/kvtier
	mkdir -p "$etc/kvtier.conf.d"
	printf '# tier 0 on the fixture\n[kvtier0]\ndevice = %s\nhost_budget_mb = 100\n' "$tmp/nvme-a" >"$etc/kvtier.conf"
	printf '[kvtier0]\nhost_budget_mb = 300\n' >"$etc/kvtier.conf.d/20-b.conf"
	printf '[kvtier0]\nhost_budget_mb = 200\nwatermark_high = 95\n' >"$etc/kvtier.conf.d/10-a.conf"
	printf '[kvtier0]\nhost_budget_mb = 1\n' >"$etc/kvtier.conf.d/30-c.conf.off"
	expect 0 "^\(dry run\) kvtier0: host_budget_mb 16 -> 300$" "apply: fragments in name order, the last wins" \
		-- apply --dry-run
	expect 0 "^\(dry run\) kvtier0: watermark_high 80 -> 95$" "apply: a knob from an earlier fragment stays" \
		-- apply --dry-run
	expect 0 "^\(dry run\) 2 changes, nothing changed$" "apply --dry-run: counts, changes nothing" \
		-- apply --dry-run
	if [[ $(cat "$cls/host_budget_mb") == 16 ]]; then ok "apply --dry-run wrote nothing"; else notok "apply --dry-run wrote host_budget_mb"; fi
	expect 0 "^kvtier0: host_budget_mb 16 -> 300$" "apply: sets the knob" -- apply
	if [[ $(cat "$cls/host_budget_mb") == 300 ]]; then ok "apply wrote host_budget_mb"; else notok "apply: host_budget_mb is $(cat "$cls/host_budget_mb")"; fi
	expect 0 "^kvtier0: as configured \($tmp/nvme-a\)$" "apply twice: nothing to change" -- apply
	out=$("$ctl" apply 2>&1)
	if [[ $out != *"->"* ]]; then ok "apply twice: no change reported"; else notok "apply twice reported: $out"; fi
	rm -rf "$etc"
	# What needs a detach is refused, and refusing changes nothing.
	printf '[kvtier0]\ndevice = %s\nhost_budget_mb = 64\n' "$tmp/nvme-b" >"$conf"
	bad "attached elsewhere" "$conf:2: kvtier0: attached to $tmp/nvme-a, not $tmp/nvme-b: detach it first"
	printf '[kvtier0]\ndevice = %s\nhost_budget_mb = 64\nread_only = 1\n' "$tmp/nvme-a" >"$conf"
	bad "a detached-only knob on an attached tier" "$conf:4: kvtier0: read_only is 0, the file says 1: it changes only while detached"
	printf '[kvtier0]\ndevice = %s\nwatermark_low = 96\n' "$tmp/nvme-a" >"$conf"
	bad "one watermark against the running other" "$conf:3: kvtier0: watermark_low 96 must be below the running watermark_high 95"
	if [[ $(cat "$cls/host_budget_mb") == 300 ]]; then ok "apply refused: nothing written"; else notok "a refused apply wrote host_budget_mb"; fi
	# Both watermarks moving past each other: written in an order the
	# kernel accepts (low < high after each write).
	printf '[kvtier0]\ndevice = %s\nwatermark_high = 30\nwatermark_low = 20\n' "$tmp/nvme-a" >"$conf"
	out=$("$ctl" apply --config "$conf" 2>&1)
	if [[ $out == *"watermark_low 60 -> 20"*"watermark_high 95 -> 30"* ]]; then ok "apply: lowering both watermarks writes low first"; else notok "apply: watermark order: $out"; fi
	printf '[kvtier0]\ndevice = %s\nwatermark_high = 99\nwatermark_low = 98\n' "$tmp/nvme-a" >"$conf"
	out=$("$ctl" apply --config "$conf" 2>&1)
	if [[ $out == *"watermark_high 30 -> 99"*"watermark_low 20 -> 98"* ]]; then ok "apply: raising both watermarks writes high first"; else notok "apply: watermark order: $out"; fi
	printf '[kvtier0]\ndevice = %s\n[kvtier3]\ndevice = %s\n' "$tmp/nvme-a" "$tmp/nvme-b" >"$conf"
	bad "more tiers than the module has" "loaded with num_tiers=1; the configuration names kvtier3"
	printf '[kvtier0]\ndevice = %s\n' "$tmp/nvme-a" >"$conf"
	expect 0 "^\(dry run\) kvtier0: detach $tmp/nvme-a$" "apply --detach --dry-run" \
		-- apply --detach --dry-run --config "$conf"
	# A typo made since the boot must not keep the tiers attached.
	printf '[kvtier0]\ndevice = %s\nbudget = 1\n' "$tmp/nvme-a" >"$conf"
	expect 0 "^\(dry run\) kvtier0: detach $tmp/nvme-a$" "apply --detach of a broken file: every attached tier" \
		-- apply --detach --dry-run --config "$conf"
	# One namespace under two names (a link, as udev's by-id ones).
	ln -s nvme-a "$tmp/by-id-a"
	printf '[kvtier0]\ndevice = %s\n[kvtier1]\ndevice = %s\n' "$tmp/nvme-a" "$tmp/by-id-a" >"$conf"
	bad "one namespace for two tiers" "$conf:4: kvtier1: $tmp/by-id-a is kvtier0's namespace too \($conf:2\)"
	# A knob the running module does not have: refused before any write.
	printf '[kvtier0]\ndevice = %s\nhost_budget_mb = 64\nuser_quota_mb = 10\n' "$tmp/nvme-a" >"$conf"
	bad "a knob the module lacks" "$conf:4: kvtier0: this module has no knob user_quota_mb"
	if [[ $(cat "$cls/host_budget_mb") == 300 ]]; then ok "apply refused a missing knob: nothing written"; else notok "a refused apply wrote host_budget_mb"; fi
	# Fragments alone are a configuration.
	rm -f "$conf"
	mkdir -p "$conf.d"
	printf '[kvtier0]\ndevice = %s\nhost_budget_mb = 300\n' "$tmp/nvme-a" >"$conf.d/a.conf"
	expect 0 "^kvtier0: as configured" "apply: fragments without the main file" -- apply --config "$conf"
	rm -rf "$conf.d"
else
	ok "apply against the fixture's tier # SKIP mknod needs root"
fi

# The Grafana dashboard: valid JSON whose every query names only series
# kvtierctl metrics prints (its table in cmd_metrics.c; _bucket, _sum and
# _count of its histograms), so a renamed metric fails here.
if out=$(python3 - "$here/../grafana/kvtier-dashboard.json" "$here/../cmd_metrics.c" 2>&1 <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
src = open(sys.argv[2]).read()
known = set(re.findall(r'"(kvtier_[a-z_]+)"', src))
bad = []
n = 0
for p in d["panels"]:
    assert p["targets"], p["title"]
    for t in p["targets"]:
        for m in re.findall(r"kvtier_[a-z_]+", t["expr"]):
            n += 1
            base = re.sub(r"_(bucket|sum|count)$", "", m)
            if m not in known and base not in known:
                bad.append(m)
assert n >= 20, n
assert not bad, "unknown series: %s" % sorted(set(bad))
print(n)
PY
); then
	ok "grafana dashboard: JSON, $out queries of known series"
else
	notok "grafana dashboard: $out"
fi

# metrics: the fixture's tier as libkvtier reads it (every stat column has
# its own value, so a column read into the wrong family shows), the usage
# errors, and a machine without the module.
fresh
# A module with the pinned attribute (the fixture's is older: status sums
# the regions' pins there).
echo 8388608 >"$cls/pinned"
metrics_has() {
	if grep -qxF -- "$2" "$tmp/metrics.out"; then ok "metrics: $1"; else notok "metrics: $1: no line '$2'"; fi
}
if "$ctl" metrics >"$tmp/metrics.out" 2>"$tmp/metrics.err"; then
	metrics_has "module loaded" 'kvtier_module_loaded 1'
	metrics_has "device label" 'kvtier_tier_info{tier="0",device="/dev/nvme0n1"} 1'
	metrics_has "first stat column" 'kvtier_faults_total{tier="0",kind="minor"} 101'
	metrics_has "a middle stat column" 'kvtier_written_bytes_total{tier="0"} 438272'
	metrics_has "last stat column" 'kvtier_inflight_bytes{tier="0"} 65536'
	metrics_has "pinned gauge" 'kvtier_pinned_bytes{tier="0"} 8388608'
	metrics_has "budget in bytes" 'kvtier_budget_bytes{tier="0"} 16777216'
else
	notok "metrics of the fixture tier: $(cat "$tmp/metrics.err")"
fi
echo "1 2 3" >"$cls/stat"
expect 1 "kvtier0" "metrics: a short stat line is an error" -- metrics
fresh
expect 2 "metrics has no --json output" "metrics --json: exit 2" -- --json metrics
expect 2 "too many arguments" "metrics 0 1: exit 2" -- metrics 0 1
expect 2 "--textfile" "metrics --textfile without DIR: exit 2" -- metrics --textfile
rm -rf /sys/module/kvtier
expect 0 "^kvtier_module_loaded 0$" "metrics without the module: kvtier_module_loaded 0" -- metrics
mkdir -p "$tmp/tf"
expect 0 "" "metrics --textfile without the module" -- metrics --textfile "$tmp/tf"
if [[ $(ls -A "$tmp/tf") == kvtier.prom ]] && grep -q '^kvtier_module_loaded 0$' "$tmp/tf/kvtier.prom"; then
	ok "metrics --textfile: kvtier.prom alone, no temporary file left"
else
	notok "metrics --textfile: $(ls -A "$tmp/tf")"
fi
if command -v promtool >/dev/null; then
	if out=$(promtool check metrics <"$tmp/tf/kvtier.prom" 2>&1); then ok "promtool check metrics: clean"; else notok "promtool: $out"; fi
else
	ok "promtool check metrics # SKIP promtool not installed (tests/deps.sh)"
fi
expect 1 "--textfile: $tmp/none/kvtier.prom|--textfile: $tmp/none/.kvtier.prom" "metrics --textfile into a missing directory: exit 1" \
	-- metrics --textfile "$tmp/none"

# gpu: the evidence from the kernel's configuration and the NVIDIA driver,
# and the verdicts of the host alone ("modes": no CUDA device asked).
# gpu_host CONFIG VERSION UVM: CONFIG and VERSION are files or none; UVM is
# 0 (not loaded), N (loaded) or Y (loaded with uvm_disable_hmm=1).
rel=$(uname -r)
gdata=$here/gpu
gpu_host() {
	[[ -e /boot/.kvtier-fixture ]] || exit 1	# never the real /boot
	rm -f "/boot/config-$rel"
	rm -rf /proc/driver/nvidia /sys/module/nvidia /sys/module/nvidia_uvm
	[[ $1 == none ]] || cp "$1" "/boot/config-$rel"
	if [[ $2 != none ]]; then
		mkdir -p /proc/driver/nvidia /sys/module/nvidia
		cp "$2" /proc/driver/nvidia/version
	fi
	if [[ $3 != 0 ]]; then
		mkdir -p /sys/module/nvidia_uvm/parameters
		echo "$3" >/sys/module/nvidia_uvm/parameters/uvm_disable_hmm
	fi
}
# gpu_mode NAME MODE VERDICT TEXT [TIER]: the host's verdict on MODE, and
# TEXT in its reason.
gpu_mode() {
	local out
	out=$("$ctl" --json gpu ${5:-} 2>&1)
	if KVT_WANT=$4 python3 -c "import json,os,sys
m = json.loads(sys.argv[1])['modes']['$2']
assert m['verdict'] == '$3' and os.environ['KVT_WANT'] in m['why'], m" "$out" 2>"$tmp/py.err"; then
		ok "gpu: $1"
	else
		notok "gpu: $1: $(tail -1 "$tmp/py.err")"
	fi
}
if [[ -n $gpu_fixture ]]; then
	fresh
	for k in 6.1.0-57-amd64 6.12.117+deb12-amd64; do
		conf=/usr/src/linux-headers-$k/.config
		if [[ ! -f $conf ]]; then
			ok "gpu: Debian $k's configuration # SKIP no $conf (tests/deps.sh installs it)"
			continue
		fi
		gpu_host "$conf" none 0
		pycheck "gpu: Debian $k: HMM_MIRROR=y, DEVICE_PRIVATE unset, read from /boot" \
			"d['kernel']['hmm_mirror'] is True and d['kernel']['device_private'] is False and d['kernel']['config'] == '/boot/config-$rel'" -- --json gpu
		gpu_mode "Debian $k: hmm no, for DEVICE_PRIVATE" hmm no "built without CONFIG_DEVICE_PRIVATE (/boot/config-$rel), which UVM's HMM needs; use an engine-driven offload through libkvtier"
		gpu_mode "Debian $k without a driver: managed no" managed no "no NVIDIA kernel module is loaded"
		gpu_mode "Debian $k: offload yes on the attached tier" offload yes "on tier 0 through libkvtier"
		gpu_host "$conf" "$gdata/version-open-550" N
		gpu_mode "Debian $k with the open 550 driver: hmm still no" hmm no "CONFIG_DEVICE_PRIVATE"
		gpu_mode "Debian $k with the driver: managed yes, host copy UVM's" managed yes "host copy is UVM's own memory, not kvtier's: tier 0 only accounts it"
	done
	expect 0 "^kernel    $rel \(.*\): CONFIG_HMM_MIRROR=y, CONFIG_DEVICE_PRIVATE is not set \(/boot/config-$rel\)$" \
		"gpu text: the kernel line" -- gpu
	expect 0 "^nvidia    open kernel module 550.54.15, nvidia_uvm loaded$" "gpu text: the driver line" -- gpu
	expect 0 "^tier 0    attached: /dev/nvme0n1$" "gpu text: the tier line" -- gpu
	expect 0 "^hmm unavailable: kernel $rel built without CONFIG_DEVICE_PRIVATE" "gpu text: the hmm verdict" -- gpu

	gpu_host "$gdata/config-device-private" "$gdata/version-open-550" N
	pycheck "gpu: the open module's flavour and version" \
		"d['nvidia'] == {'loaded': True, 'open': True, 'version': '550.54.15', 'uvm': True, 'uvm_disable_hmm': False}" -- --json gpu
	gpu_mode "DEVICE_PRIVATE=y, open 550, uvm: hmm possible, the device decides" hmm maybe "the kernel and the NVIDIA driver allow HMM; the device's pageable memory access attribute decides"
	gpu_mode "DEVICE_PRIVATE=y: managed yes" managed yes "not kvtier's"
	gpu_host "$gdata/config-device-private" "$gdata/version-proprietary-550" N
	pycheck "gpu: the proprietary module" "d['nvidia']['open'] is False and d['nvidia']['version'] == '550.54.15'" -- --json gpu
	gpu_mode "proprietary module: hmm no" hmm no "the NVIDIA kernel module is the proprietary one (550.54.15), and UVM has HMM only in the open kernel modules"
	gpu_host "$gdata/config-device-private" "$gdata/version-open-525" N
	gpu_mode "open 525: hmm no, older than 535" hmm no "NVIDIA driver 525.147.05 is older than 535"
	gpu_host "$gdata/config-device-private" "$gdata/version-open-550" 0
	gpu_mode "nvidia_uvm not loaded: hmm no" hmm no "nvidia_uvm is not loaded; load it (modprobe nvidia-uvm)"
	gpu_mode "nvidia_uvm not loaded: managed no" managed no "nvidia_uvm, which managed memory needs, is not loaded"
	gpu_host "$gdata/config-device-private" "$gdata/version-open-550" Y
	gpu_mode "uvm_disable_hmm=1: hmm no" hmm no "nvidia_uvm was loaded with uvm_disable_hmm=1"
	gpu_host "$gdata/config-no-hmm-mirror" "$gdata/version-open-550" N
	gpu_mode "HMM_MIRROR unset: hmm no" hmm no "built without CONFIG_HMM_MIRROR"
	# Only /sys/module/nvidia/version: the version, flavour unknown.
	gpu_host "$gdata/config-device-private" none N
	mkdir -p /sys/module/nvidia && echo 560.35.03 >/sys/module/nvidia/version
	pycheck "gpu: version from /sys/module/nvidia" "d['nvidia']['version'] == '560.35.03' and d['nvidia']['open'] is None" -- --json gpu
	gpu_mode "flavour unknown, 560: hmm possible" hmm maybe "allow HMM"
	# A gzip'd configuration (as /proc/config.gz is), told by its magic.
	gpu_host none "$gdata/version-open-550" N
	gzip -c "$gdata/config-device-private" >"/boot/config-$rel"
	pycheck "gpu: a gzip'd configuration is read" "d['kernel']['device_private'] is True and d['kernel']['hmm_mirror'] is True" -- --json gpu
	# No configuration anywhere (/proc/config.gz is empty here): not known.
	gpu_host none "$gdata/version-open-550" N
	pycheck "gpu: no configuration: null, not false" "d['kernel']['config'] is None and d['kernel']['hmm_mirror'] is None and d['kernel']['device_private'] is None" -- --json gpu
	gpu_mode "no configuration: hmm possible, says so" hmm maybe "the kernel's configuration was not found"
	expect 0 "^kernel    $rel \(.*\): configuration not found" "gpu text: no configuration" -- gpu
	echo "# not a kernel configuration" >"/boot/config-$rel"
	pycheck "gpu: a file without config lines is not a configuration" "d['kernel']['config'] is None" -- --json gpu
	# The tier.
	gpu_host "$gdata/config-device-private" "$gdata/version-open-550" N
	echo none >"$cls/backing_dev"
	gpu_mode "a detached tier: offload no" offload no "tier 0 has no namespace attached; attach one (kvtierctl attach 0 DEVICE)"
	gpu_mode "a detached tier: hmm no" hmm no "tier 0 has no namespace attached"
	gpu_mode "a detached tier: managed yes, unaccounted" managed yes "no tier accounts it either"
	gpu_mode "gpu 3: no such tier" offload no "there is no tier 3" 3
	pycheck "gpu 3: the tier object" "d['tier'] == {'id': 3, 'state': 'absent', 'device': None}" -- --json gpu 3
	expect 2 "too many arguments" "gpu 0 1: exit 2" -- gpu 0 1
	expect 2 "bad TIER 'x'" "gpu x: exit 2" -- gpu x
	gpu_host none none 0
	fresh
else
	ok "gpu: fixtures # SKIP cannot mount over /boot, /proc/driver or /proc/config.gz here"
fi

# upgrade: what the module's upgrade attribute says, and what is written.
fresh
expect 2 "upgrade: need TIER" "upgrade without a tier: exit 2" -- upgrade
expect 2 "no --json output" "upgrade --json: exit 2" -- --json upgrade 0
expect 1 "cannot upgrade a namespace \(no upgrade attribute\)" "upgrade with an older module: says so" -- upgrade 0
echo none >"$cls/upgrade"
expect 1 "upgrade kvtier0: no namespace attached" "upgrade of a detached tier" -- upgrade 0
echo 5 >"$cls/upgrade"
expect 0 "^kvtier0: the namespace is format version 5 already$" "upgrade of a version-5 namespace: nothing to do" -- upgrade 0
echo 4 >"$cls/upgrade"
expect 0 "^kvtier0: upgraded the namespace from format version 4 to 5 \(commits go to a journal, pages mapped by extents, CRCs in runs of their own, sizes in bytes: kvtierfs files are made and grow\)$" \
	"upgrade of a version-4 namespace" -- upgrade 0
if [[ $(cat "$cls/upgrade") == 5 ]]; then
	ok "upgrade writes 5 to the attribute"
else
	notok "upgrade writes 5 to the attribute (it holds '$(cat "$cls/upgrade")')"
fi
echo 3 >"$cls/upgrade"
expect 0 "^kvtier0: upgraded the namespace from format version 3 to 5 " "upgrade of a version-3 namespace" -- upgrade 0
echo 2 >"$cls/upgrade"
expect 0 "^kvtier0: upgraded the namespace from format version 2 to 5 " "upgrade of a version-2 namespace" -- upgrade 0
echo 1 >"$cls/upgrade"
expect 0 "^kvtier0: upgraded the namespace from format version 1 to 5 " "upgrade of a version-1 namespace" -- upgrade 0
fresh

echo "1..$n"
((failed == 0))
