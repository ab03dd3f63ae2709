#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_budget.sh: the work per operation of libregcache's paths stays
# within its recorded budget (issue 36).  Each line of budget/host.txt
# names an operation of budget_probe, a monitor and a count N; the
# operation runs N times under budget_count, which single-steps it and
# counts user-space instructions, locked instructions and system calls;
# a count per operation more than 10 % over its budget fails.  One under
# 90 % of it passes with a note: lower the budget to keep the gain.  A
# line over its budget runs once more and is judged on that run.
# BUDGET_FILE names another file: budget/kmod.txt, which the regcache
# guest suite runs with regcache.ko loaded.
#
# Why counts and why a single-stepper: counts do not depend on the
# machine or the emulator, and valgrind 3.19 (Debian 12) does not know
# the userfaultfd system call ("unhandled amd64-linux syscall: 323"), so
# the uffd monitor, the one this machine has, cannot run under it.  Where
# valgrind is present, callgrind's count of global bus events (locked
# instructions) over the same stretch is checked against the stepper's.
#
# Counts belong to the build they were taken on (Debian 12's gcc, -O2):
# a build with sanitizers, without optimisation, or on another
# architecture skips.  TAP output.
srcdir=${srcdir:-.}
budgets=${BUDGET_FILE:-$srcdir/budget/host.txt}
probe=./budget_probe
count=./budget_count
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_budget.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

skip_all()
{
	echo "1..0 # SKIP $1"
	exit 0
}

[ "$(uname -m)" = x86_64 ] || skip_all "the counter decodes x86-64 only"
[ "${RC_SANITIZERS:-no}" = no ] || skip_all "a build with sanitizers ($RC_SANITIZERS) counts other code"
case " ${RC_CFLAGS--O2} " in
*" -O2 "*) ;;
*) skip_all "budgets are for -O2 builds (CFLAGS: $RC_CFLAGS)" ;;
esac
if [ ! -x $probe ] || [ ! -x $count ]; then
	skip_all "budget_probe or budget_count not built"
fi
# Can we trace at all (a container may refuse ptrace)?
$count $probe --monitor none hit 1 >"$tmp/probe" 2>&1
case $? in
0) ;;
77) skip_all "$(tail -n 1 "$tmp/probe")" ;;
*) cat "$tmp/probe"; echo "Bail out! budget_count cannot count"; exit 1 ;;
esac

# PROCMAP_QUERY came with Linux 6.11
procmap=$(uname -r | awk -F. '{ print ($1 > 6 || ($1 == 6 && $2 >= 11)) ? "yes" : "no" }')

n=0
fails=0
lines=$(grep -cv '^[[:space:]]*\(#\|$\)' "$budgets")
echo "1..$((lines + 2))"

ok()
{
	n=$((n + 1))
	echo "ok $n - $*"
}

not_ok()
{
	n=$((n + 1))
	fails=$((fails + 1))
	echo "not ok $n - $*"
}

# judge NAME COUNTS-LINE N BUDGET-INSNS BUDGET-LOCKED BUDGET-SYSCALLS:
# prints "over WHAT" for each count more than 10 % over its budget and
# "under WHAT" for each under 90 % of it; nothing when within.
judge()
{
	echo "$2" | awk -v n="$3" -v bi="$4" -v bl="$5" -v bs="$6" '
	function one(what, got, budget) {
		if (budget == "-")
			return		# not judged (budget/kmod.txt)
		per = got / n
		if (per > budget * 1.1)
			printf "over %s %.1f/op (budget %s)\n", what, per, budget
		else if (per < budget * 0.9)
			printf "under %s %.1f/op (budget %s)\n", what, per, budget
	}
	{ one("insns", $2, bi); one("locked", $4, bl); one("syscalls", $6, bs) }'
}

hit_counts=
while read -r op mon num extra insns locked sys; do
	case $op in '#'*|'') continue ;; esac
	[ "$extra" = - ] && extra=
	name="$op ($mon monitor, N=$num${extra:+, $extra})"
	case " $extra " in
	*" procmap=$procmap "*)
		extra=$(echo "$extra" | sed 's/procmap=[a-z]*//') ;;
	*" procmap="*)
		ok "$name # SKIP for the other kind of kernel (PROCMAP_QUERY here: $procmap)"
		continue ;;
	esac
	# shellcheck disable=SC2086 # extra: options, split on purpose
	$count $probe --monitor "$mon" $extra "$op" "$num" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc = 77 ]; then
		ok "$name # SKIP $(tail -n 1 "$tmp/err")"
		continue
	fi
	counts=$(grep '^insns ' "$tmp/out" | tail -n 1)
	if [ $rc != 0 ] || [ -z "$counts" ]; then
		sed 's/^/# /' "$tmp/err"
		not_ok "$name: the probe failed (exit status $rc)"
		continue
	fi
	[ "$op" = hit ] && [ -z "$hit_counts" ] &&
		hit_counts="$counts $num $insns $locked $sys"
	verdict=$(judge "$name" "$counts" "$num" "$insns" "$locked" "$sys")
	# Up to twice more while over: noise only adds work (a miss on the
	# none monitor was seen 11 % over once in five runs), a real growth
	# stays over every time.
	tries=1
	while [ $tries -lt 3 ] && echo "$verdict" | grep -q '^over'; do
		tries=$((tries + 1))
		# shellcheck disable=SC2086 # as above
		$count $probe --monitor "$mon" $extra "$op" "$num" >"$tmp/out" 2>"$tmp/err"
		again=$(grep '^insns ' "$tmp/out" | tail -n 1)
		echo "# $name, run $((tries - 1)): $counts"
		[ -n "$again" ] && counts=$again
		verdict=$(judge "$name" "$counts" "$num" "$insns" "$locked" "$sys")
	done
	echo "# $name: $counts"
	if echo "$verdict" | grep -q '^over'; then
		echo "$verdict" | sed 's/^/# /'
		not_ok "$name: over budget"
	else
		[ -n "$verdict" ] && echo "$verdict" | sed 's/^/# lower the budget: /'
		judged="$insns insns, "
		[ "$insns" = - ] && judged="instructions not judged, "
		ok "$name: within budget ($judged$locked locked, $sys syscalls per op)"
	fi
done <"$budgets"

# The judge can fail: the hit's own counts against budgets 15 % lower
# (its instructions', or its locked instructions' where those are the
# first count judged).
if [ -n "$hit_counts" ]; then
	# shellcheck disable=SC2086 # the counts and budgets, one word each
	set -- $hit_counts
	bi=${10} bl=${11} what=insns
	if [ "$bi" != - ]; then
		bi=$(awk -v v="$bi" 'BEGIN { print v * 0.85 }')
	else
		bl=$(awk -v v="$bl" 'BEGIN { print v * 0.85 }')
		what=locked
	fi
	tight=$(judge hit "$1 $2 $3 $4 $5 $6" "$9" "$bi" "$bl" "${12}")
	if echo "$tight" | grep -q "^over $what"; then
		ok "a count 15 % over its budget is judged over it"
	else
		not_ok "a count 15 % over its budget was not judged over it ($tight)"
	fi
else
	ok "the judge's own check # SKIP no hit line ran"
fi

# The stepper's locked instructions against callgrind's bus events, on
# the monitor-none miss (valgrind cannot run the uffd monitor).
if [ "${BUDGET_CALLGRIND:-yes}" = no ]; then
	ok "locked instructions agree with callgrind # SKIP BUDGET_CALLGRIND=no (the host's run checks it)"
elif ! command -v valgrind >/dev/null 2>&1; then
	ok "locked instructions agree with callgrind # SKIP valgrind not installed"
else
	libs=../libregcache/.libs
	$count $probe --monitor none miss 20 >"$tmp/step" 2>/dev/null
	LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
		valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
		--toggle-collect=bp_loop_miss --collect-bus=yes \
		.libs/budget_probe --monitor none miss 20 >/dev/null 2>&1
	ge=$(awk '/^events:/ { for (i = 2; i <= NF; i++) if ($i == "Ge") f = i - 1 }
		  /^totals:/ { print $(f + 1) }' "$tmp/cg" 2>/dev/null)
	st=$(awk '/^insns / { print $4 }' "$tmp/step")
	if [ -n "$ge" ] && [ "$ge" = "$st" ]; then
		ok "locked instructions agree with callgrind ($st in 20 misses)"
	else
		not_ok "locked instructions: stepper ${st:-?}, callgrind ${ge:-?} (20 misses)"
	fi
fi
[ $fails = 0 ]
