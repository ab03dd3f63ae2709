# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# kmod2: regcache.ko on this kernel, second half (the first is kmod.sh):
# the invalidation, semantics, huge page, isolation and teardown programs
# again under notifier=context (the per-context design), the stress under
# the default design, and the benchmark (results in
# $RC_RESULTS/bench_kmod-$RC_KERNEL.txt; not on the debug kernel).
# Knobs: tests/vm/kmod-lib.sh.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"
. "$RC_SRCDIR/tests/vm/kmod-lib.sh"

# --- notifier=context: the per-context notifier design -----------------
# The same invalidation, semantics, huge page, isolation and teardown
# programs against the other design (regcache_ctxnotif.c; abi's argument
# checks are shared code and not repeated), a short stress (UNWATCH racing
# munmap in 16 threads: the path lockdep watches on the debug kernel),
# then a clean unload.
rc_check "insmod rejects notifier=bogus" sh -c \
	"! insmod '$RC_KMOD' notifier=bogus 2>/dev/null && ! grep -q '^regcache ' /proc/modules"
if rc_check "insmod notifier=context" load notifier=context; then
	rc_check "notifier parameter reads context" \
		grep -qx context /sys/module/regcache/parameters/notifier
	exec 3</dev/regcache
	rc_check "fdinfo names the design" grep -q "^regcache-notifier:	context\$" /proc/$$/fdinfo/3
	exec 3<&-
	rc_run "sem notifier=context" "$T/test_kmod_sem"
	rc_run "mm notifier=context" "$T/test_kmod_mm"
	rc_run "inval notifier=context" "$T/test_kmod_inval"
	rc_run "isolation notifier=context" "$T/test_kmod_isolation"
	rc_run "stress 5s notifier=context" env KMOD_STRESS_SECONDS=5 "$T/test_kmod_stress"
	unload "rmmod after notifier=context"
fi
if rc_check "insmod notifier=context strict=1" load notifier=context strict=1; then
	rc_run "inval notifier=context strict=1" "$T/test_kmod_inval"
	unload "rmmod after notifier=context strict=1"
fi

# --- stress and benchmark ---------------------------------------------
if rc_check "insmod for stress" load; then
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
