# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# The test runners' shell library, sourced by tests/check.sh,
# tests/debug-kernel/check.sh, tests/fabrics/run.sh, tests/persist/run.sh
# and tests/vm/run.sh: phases, TAP counting, booting one VM phase and
# counting it, and the kernel-log gate. A caller that counts declares
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

# vm_phase NAME OUT WHAT CMD...: run CMD, a tests/vm/run.sh boot whose
# guest writes OUT/tap.log; count every TAP result of that log, and CMD's
# status (the guest's command and its kernel log) as one more check; add a
# summary row with the time and the tally.
vm_phase() {
	local name=$1 out=$2 what=$3 start=$SECONDS rc
	shift 3
	echo "# phase: $name"
	"$@"
	rc=$?
	if [[ -f $out/tap.log ]]; then
		count_tap "$out/tap.log"
	else
		tally="no TAP output"
	fi
	if ((rc == 0)); then
		result ok "$what exited 0, guest kernel log clean"
	else
		result not-ok "$what failed (rc $rc, see $out)"
	fi
	summary+=("$(printf '%-40s %5d s   %s' "$name" $((SECONDS - start)) "$tally")")
}

# The kernel-log gate. Kernel messages carry a "[    1.234567] " timestamp
# (CONFIG_PRINTK_TIME=y on Debian) both in dmesg and on the serial console;
# requiring it right before the keyword keeps a test that merely prints
# "WARNING: ..." on stdout (mkfs, nvme-cli, fio do) from tripping the gate,
# while kmsg lines are caught even when interleaved mid-line with output.
# KFENCE/KASAN/UBSAN reports start with "BUG:"/"UBSAN:"; lockdep reports
# start with "WARNING: possible circular locking ..." etc.
kvt_gate_re='\[ *[0-9]+\.[0-9]+\] (\[ *[CT][0-9]+\] )?'
kvt_gate_re+='(BUG:|WARNING:|Oops|general protection|KFENCE|UBSAN:|kernel BUG at|'
kvt_gate_re+='Call Trace:|Kernel panic|INFO: (possible|inconsistent) .*lock|'
kvt_gate_re+='.*circular locking|.*turning off the locking correctness validator|'
kvt_gate_re+='INFO: task .* blocked for more than|INFO: rcu_.* stall)'

# klog_problems FILE: print FILE's lines (numbered) that trip the gate;
# status 0 if there is one.
klog_problems() {
	tr -d '\r' <"$1" | grep -nE "$kvt_gate_re"
}

# check ok|not-ok DESC: one numbered TAP result of a script that prints its
# own plan at the end (echo "1..$n"; exit "$bad"). The caller sets
# n=0 bad=0.
# shellcheck disable=SC2034 # bad is the caller's
check() {
	n=$((n + 1))
	if [[ $1 == ok ]]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		bad=1
	fi
}
