# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# kmod-bench: bench_kmod in rounds, in one guest boot (not part of make
# check: not in VM_SUITES, and it asserts no speed).  Each round loads the
# module, runs bench_kmod and unloads it, so that host noise (TCG, other
# guests on the machine) shows as the spread between rounds.  Results:
# one file per run, $RC_RESULTS/bench_kmod-$RC_KERNEL-rN.txt ("key value"
# lines), and a summary (median, min, max over the rounds) at the end.
# Knobs on the guest command line (VM_APPEND): kmodbench.rounds=N (4),
# kmodbench.reps=N (BENCH_REPS, 5), kmodbench.churn=N (BENCH_ROUNDS, 63
# blocks per side), kmodbench.iters=N (BENCH_CHURN, 500 mmap+munmap a
# block: short blocks pair better on a busy host), kmodbench.lat=N
# (BENCH_LAT, 1000), kmodbench.bigpages=N (256: the second latency run's
# churners map and unmap N pages at a time, so each invalidation lasts
# longer; results tagged big-rN).  doc/BENCHMARKS.md has the command.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

knob()
{
	v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^kmodbench\.$1=//p" | tail -n 1)
	echo "${v:-$2}"
}
ROUNDS=$(knob rounds 4)
REPS=$(knob reps 5)
CHURN=$(knob churn 63)
ITERS=$(knob iters 500)
LAT=$(knob lat 1000)
BIG=$(knob bigpages 256)

r=1
while [ "$r" -le "$ROUNDS" ]; do
	rc_check "round $r: insmod" rc_kmod_load || { r=$((r + 1)); continue; }
	echo "--- bench_kmod round $r ($RC_KERNEL)"
	if timeout 600 env BENCH_TAG="r$r" BENCH_REPS="$REPS" \
		BENCH_ROUNDS="$CHURN" BENCH_CHURN="$ITERS" BENCH_LAT="$LAT" "$RC_BUILDDIR/tests/bench_kmod"; then
		rc_ok "round $r: bench_kmod"
	else
		rc_fail "round $r: bench_kmod" "exit status $?"
	fi
	# the latency part again, churners unmapping BIG pages at a time
	if timeout 600 env BENCH_TAG="big-r$r" BENCH_REPS="$REPS" BENCH_ONLY=latency \
		BENCH_LAT_PAGES="$BIG" BENCH_LAT="$LAT" "$RC_BUILDDIR/tests/bench_kmod"; then
		rc_ok "round $r: bench_kmod latency, $BIG-page churn"
	else
		rc_fail "round $r: bench_kmod latency, $BIG-page churn" "exit status $?"
	fi
	if rmmod regcache && ! grep -q '^regcache ' /proc/modules; then
		rc_ok "round $r: rmmod"
	else
		rc_fail "round $r: rmmod" "module still loaded"
	fi
	r=$((r + 1))
done

# Each key's median over the rounds and its range (min..max).
summary()
{
	for d in r big-r; do
		echo "--- summary $d* ($ROUNDS rounds): key median min max"
		cat "$RC_RESULTS"/bench_kmod-"$RC_KERNEL"-"$d"[0-9]*.txt 2>/dev/null |
			grep -v '^#' | sort -k1,1 -k2,2g | awk '
			function flush() {
				if (k == "") return
				m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
				printf "%s %g %g %g\n", k, m, v[1], v[n]
			}
			$1 != k { flush(); k = $1; n = 0 }
			{ v[++n] = $2 }
			END { flush() }'
	done
}
summary
