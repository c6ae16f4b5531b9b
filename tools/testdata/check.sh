#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvtierctl against fixture files: the debugfs parsers, the rates and
# percentiles, the JSON, `set` validation and the usage errors, without the
# module. KVTIERCTL_SYSROOT points kvtierctl at a copy of sysroot/; for the
# rates, the files in later/ replace the debugfs files during an interval.
#
# usage: tools/testdata/check.sh [KVTIERCTL]   (default: tools/kvtierctl)
# Prints TAP; exits 1 on any failure. Needs python3 (JSON checks).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ctl=${1:-$here/../kvtierctl}
export LD_LIBRARY_PATH=$here/../../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KVTIERCTL_SYSROOT=$tmp/root
dbg=$KVTIERCTL_SYSROOT/sys/kernel/debug/kvtier/kvtier0
cls=$KVTIERCTL_SYSROOT/sys/class/kvtier/kvtier0

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
fresh() { rm -rf "$KVTIERCTL_SYSROOT"; cp -r "$here/sysroot" "$KVTIERCTL_SYSROOT"; }

# expect RC GREP-PATTERN NAME -- ARGS...: exit status and output (both streams).
expect() {
	local rc=$1 pat=$2 name=$3 out st
	shift 4
	out=$("$ctl" "$@" 2>&1)
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
expect 1 'no tier 5' "status of a missing tier: exit 1" -- status 5
expect 2 'bad TIER' "status of a bad TIER: exit 2" -- status x

expect 0 '^ +2 prefix-llama +[^ ]+ +16.0M +8.0M +0B +16.0M +2.0M +500 +30 +25000' \
	"regions table (unknown column skipped)" -- regions 0
pycheck "regions --json" \
	'[r["id"] for r in d] == [1, 2] and d[1]["name"] == "prefix-llama" and d[0]["namespace_bytes"] == 58720256 and d[1]["owner"] == 1000' \
	-- regions --json

later
expect 0 '^ +(19[0-9][0-9]|2000) +25.0 +(9.[0-9]|10.0) +(4.[89]|5.0) +(19[0-9].[0-9]|200.0) +8 +1024$' \
	"stat: rates and p50/p99 of the interval" -- stat -i 1 -c 1
fresh
later
pycheck "stat --json" \
	'abs(d["faults_per_s"] - 2000) < 20 and d["major_pct"] == 25 and d["fault_p50_us"] == 8 and d["fault_p99_us"] == 1024 and abs(d["refaults_per_s"] - 200) < 2' \
	-- stat --json -i 1 -c 1 0
fresh
expect 0 '^ +[0-9]+ +0.0 +0.0 +0.0 +0.0 +- +-$' "stat: an idle interval" -- stat -i 0.1 -c 1

fresh
later
"$ctl" top -i 1 -c 1 >"$tmp/top" 2>&1
for pat in 'WARNING: refaulting: host budget too small' \
	'median bio  read 64.0K  write-back 1.0M' \
	'WARNING: namespace nearly full' 'FAULTS/s +ID NAME' \
	'^ +0 +1 - '; do
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

# set: validated before writing.
fresh
for bad in "host_budget_mb 0" "host_budget_mb -1" "host_budget_mb abc" \
	"host_budget_mb 12x" "host_budget_mb 99999999999" "host_budget_mb ''" \
	"watermark_low 80" "watermark_high 60" "watermark_high 101" \
	"readahead_kb 6" "readahead_kb 2048" "writeback_batch_kb 0" \
	"max_inflight_kb 2097152" "discard 2" "pin_budget_mb x" "bogus_knob 1"; do
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
[[ $(cat "$cls/readahead_kb") == 64 ]] && ok "readahead_kb written" || notok "readahead_kb written"
expect 2 'need TIER' "set with a missing VALUE: exit 2" -- set 0 discard

# Usage and refusals.
expect 2 'bad interval' "stat -i 0: exit 2" -- stat -i 0
expect 2 'bad count' "stat -c x: exit 2" -- stat -c x
expect 2 'bad option' "stat --bogus: exit 2" -- stat --bogus
expect 2 'unknown command' "unknown command: exit 2" -- frobnicate
expect 0 'usage: kvtierctl stat' "stat --help" -- stat --help
expect 1 'not implemented by this module yet' "persist ls: exit 1" -- persist ls
expect 2 'unknown verb' "persist bogus: exit 2" -- persist bogus
expect 1 'no on-namespace format' "attach --format: exit 1" -- attach --format 0 /dev/null
expect 1 'not a block device' "attach of a character device: exit 1" -- attach 0 /dev/null
expect 1 'No such file' "attach of a missing path: exit 1" -- attach 0 /nonexistent/dev
expect 2 'need TIER' "attach without DEVICE: exit 2" -- attach 0

echo "1..$n"
((failed == 0))
