# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# kmod2: regcache.ko on this kernel, second half (the first is kmod.sh):
# the per-user byte budget, the threaded fuzzer (every entry point from 6
# threads on shared contexts, 5 s by default), the stress, and the benchmark
# (results in $RC_RESULTS/bench_kmod-$RC_KERNEL.txt; not on the debug
# kernel).
# Knobs: tests/vm/kmod-lib.sh.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"
. "$RC_SRCDIR/tests/vm/kmod-lib.sh"

# --- the per-user byte budget, stress and benchmark ---------------------
if rc_check "insmod for budget and stress" load; then
	# lowers max_user_bytes at runtime and restores it; its 131071-watch
	# wrap case is for 6.1 and 7.3 (minutes under KASAN and lockdep)
	wrap=1
	[ "$RC_KERNEL" = debug ] && wrap=0
	rc_run "budget" env KMOD_BUDGET_WRAP=$wrap "$T/test_kmod_budget"
	rc_run "race ${RACE_S}s" env KMOD_RACE_SECONDS="$RACE_S" timeout $((RACE_S + 120)) \
		"$T/test_kmod_race"
	rc_run "stress ${STRESS_S}s" env KMOD_STRESS_SECONDS="$STRESS_S" "$T/test_kmod_stress"
	if [ "$RC_KERNEL" = debug ]; then
		# KASAN and lockdep set every cost: the figures would mean nothing
		echo "# debug kernel: bench_kmod not run"
	else
		echo "--- bench_kmod ($RC_KERNEL)"
		if timeout 300 env BENCH_REPS=3 BENCH_ROUNDS=15 "$T/bench_kmod"; then
			rc_ok "bench_kmod ran (results in bench_kmod-$RC_KERNEL.txt)"
		else
			rc_fail "bench_kmod ran" "exit status $?"
		fi
	fi
	unload "rmmod after stress"
fi
