#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The knob table (kmod/sysfs.c, kvtier_knobs[]) is the one definition of the
# tier's knobs. This holds what describes them to it, on the host, without a
# module: for every row,
#   - Documentation/ABI/testing/sysfs-class-kvtier has its entry, with the
#     row's default ("Default N") and unit, and, for a knob that changes only
#     while detached, says so (EBUSY);
#   - the admin guide's knob table, the man 7 page of its group
#     (tools/man/kvtier-pool.7 or kvtier-io.7) and `kvtierctl --help`
#     (tools/kvtierctl.c) name it;
#   - `kvtierctl set` (tools/cmd_set.c) checks the same range and
#     granularity before it writes, and knows the detached-only ones
#     (`kvtierctl apply` sets them before it attaches);
# and no knob is documented in the ABI file that the table does not have.
# TAP output; exit 1 on any mismatch.
#
# usage: tests/knobs-check.sh
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
abi=$top/Documentation/ABI/testing/sysfs-class-kvtier
guide=$top/Documentation/admin-guide/kvtier.rst
n=0 bad=0

# check (numbered TAP)
. "$top/tests/tap-lib.sh"

# name def unit detached min max align, one line per row of the table
# (KB_ALIGN and INT_MAX as on x86_64).
rows() {
	awk '
	function num(v) { return v == "KB_ALIGN" ? 4 : v == "INT_MAX" ? 2147483647 : v }
	/^static struct kvtier_knob kvtier_knobs\[\] = \{/ { in_table = 1; next }
	in_table && /^\};/ { in_table = 0 }
	!in_table { next }
	{ row = row $0 }
	/\},[ \t]*$/ {
		if (match(row, /KNOB_ATTR\([a-z_]+\)/))
			name = substr(row, RSTART + 10, RLENGTH - 11)
		def = row; sub(/.*\.def = /, "", def); sub(/[^0-9].*/, "", def)
		unit = row; sub(/.*\.unit = "/, "", unit); sub(/".*/, "", unit)
		det = row ~ /\.detached = true/ ? 1 : 0
		min = row; sub(/.*\.min = /, "", min); sub(/,.*/, "", min)
		max = row; sub(/.*\.max = /, "", max); sub(/,.*/, "", max)
		align = row; sub(/.*\.align = /, "", align); sub(/,.*/, "", align)
		print name, def, unit, det, num(min), num(max), num(align)
		row = ""
	}' "$top/kmod/sysfs.c"
}

# The ABI entry of knob $1 as one line.
entry() {
	awk -v k="/$1" '$1 == "What:" { p = (substr($2, length($2) - length(k) + 1) == k) }
		p' "$abi" | tr -s ' \t\n' ' '
}

declare -A unit_words=(
	[MiB]='MiB'
	[KiB]='KiB'
	[percent]='percent'
	[boolean]='1 or 0|0 or 1|1:|1 \(default\)'
	[regions]='a count|regions'
	[ms]='[Mm]illiseconds'
	[version]='format version'
)

mapfile -t table < <(rows)
((${#table[@]} >= 10)) || { echo "not ok 1 knob table parsed (${#table[@]} rows)"; exit 1; }
declare -A in_table
for row in "${table[@]}"; do
	read -r name def unit det min max align <<<"$row"
	in_table[$name]=1
	e=$(entry "$name")
	if [[ -z $e ]]; then
		check not-ok "$name: no entry in the ABI file"
		continue
	fi
	if grep -qE "Default $def\b|$def \(default\)" <<<"$e"; then
		check ok "$name: ABI default $def"
	else
		check not-ok "$name: the ABI entry does not say 'Default $def'"
	fi
	words=${unit_words[$unit]:-}
	if [[ -n $words ]] && grep -qE "$words" <<<"$e"; then
		check ok "$name: ABI unit $unit"
	else
		check not-ok "$name: the ABI entry does not give the unit ($unit)"
	fi
	if ((det)); then
		if grep -q "EBUSY" <<<"$e"; then
			check ok "$name: ABI says it changes only while detached"
		else
			check not-ok "$name: detached-only, but the ABI entry has no EBUSY"
		fi
	fi
	# kvtierctl set checks the same ranges before it writes.
	# kvtierctl apply orders the detached-only ones first (column 5).
	if grep -qF "{ \"$name\", $min, $max, $align, $det }," "$top/tools/cmd_set.c"; then
		check ok "$name: kvtierctl set has the range $min..$max/$align, detached $det"
	else
		check not-ok "$name: tools/cmd_set.c lacks { \"$name\", $min, $max, $align, $det }"
	fi
	for f in "$guide" "$top/tools/kvtierctl.c"; do
		if grep -qw "$name" "$f"; then
			check ok "$name: named in ${f#"$top"/}"
		else
			check not-ok "$name: not named in ${f#"$top"/}"
		fi
	done
	if grep -qw "$name" "$top/tools/man/kvtier-pool.7" "$top/tools/man/kvtier-io.7"; then
		check ok "$name: in a man 7 page"
	else
		check not-ok "$name: in neither kvtier-pool.7 nor kvtier-io.7"
	fi
done

# Every RW attribute of the ABI file that looks like a knob is in the table.
while read -r name; do
	[[ -n ${in_table[$name]:-} ]] && continue
	case $name in
	backing_dev | format) continue ;;
	esac
	check not-ok "$name: documented as RW in the ABI file, not in the knob table"
done < <(awk '$1 == "What:" { n = $2; sub(/.*\//, "", n) }
	/\(RW\)/ && n { print n; n = "" }' "$abi")

echo "1..$n"
exit "$bad"
