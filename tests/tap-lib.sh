# SPDX-License-Identifier: GPL-2.0
#
# Sourced by tests/check.sh and tests/debug-kernel/check.sh: TAP counting
# for a run made of phases and guest TAP logs. The caller declares
# pass=0 fail=0 skip=0 and an array summary; tally is set by count_tap.

# ok|not-ok NAME: count a host-side check.
result() {
	if [[ $1 == ok ]]; then
		pass=$((pass + 1))
		echo "ok - $2"
	else
		fail=$((fail + 1))
		echo "not ok - $2"
	fi
}

# phase NAME CMD...: run CMD, time it, count it as one check.
phase() {
	local name=$1 start=$SECONDS
	shift
	echo "# phase: $name"
	if "$@"; then
		result ok "$name"
	else
		result not-ok "$name"
	fi
	summary+=("$(printf '%-40s %5d s' "$name" $((SECONDS - start)))")
}

# count_tap FILE: add a guest TAP log's results; sets $tally for the kernel.
count_tap() {
	local p f s
	p=$(grep -cE '^ok [0-9]+ ' "$1" || true)
	s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$1" || true)
	f=$(grep -cE '^not ok ' "$1" || true)
	pass=$((pass + p - s))
	skip=$((skip + s))
	fail=$((fail + f))
	tally="$((p - s)) passed, $f failed, $s skipped"
}
