# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# kmod: regcache.ko on this kernel.  Loads the module once per parameter
# set a test needs (defaults; strict=1; ring_entries=16; small per-user
# limits for the limits program and regcachectl as a user), runs the ABI,
# semantics (FLUSH, status mapping, exec), huge page (THP, hugetlb),
# invalidation, isolation, overflow, fuzz and stress programs (and most of
# them again under notifier=context, the per-context design), checks
# regcachectl against the live module, that unload is refused while a
# context exists and clean after, and runs the benchmark (results in
# $RC_RESULTS/bench_kmod-$RC_KERNEL.txt).  Knobs on the kernel command line
# (VM_APPEND): kmod.stress=SECONDS (30), kmod.fuzz=ITERATIONS (100000).
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

T=$RC_BUILDDIR/tests
CTL=$RC_BUILDDIR/utils/regcachectl

knob()
{
	v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^kmod\.$1=//p" | tail -n 1)
	echo "${v:-$2}"
}
STRESS_S=$(knob stress 30)
FUZZ_N=$(knob fuzz 100000)

load()
{
	rc_kmod_load "$@"
}

unloaded()
{
	! grep -q '^regcache ' /proc/modules && [ ! -e /dev/regcache ]
}

# unload NAME: rmmod, then prove nothing is left behind.
unload()
{
	if rmmod regcache && unloaded; then
		rc_ok "$1"
	else
		rc_fail "$1" "rmmod failed or module/device still present"
	fi
}

if [ ! -f "$RC_KMOD" ]; then
	rc_fail "insmod regcache.ko" "$RC_KMOD not built"
	exit 1
fi

# --- defaults ---------------------------------------------------------
rc_check "insmod regcache.ko ($RC_KVER)" load || exit 1
rc_run "abi" "$T/test_kmod_abi"
rc_run "sem" "$T/test_kmod_sem"
rc_run "mm" "$T/test_kmod_mm"
rc_run "inval" "$T/test_kmod_inval"
rc_run "isolation" "$T/test_kmod_isolation"
rc_run "overflow" "$T/test_kmod_overflow"
rc_run "fuzz" env KMOD_FUZZ_ITERS="$FUZZ_N" "$T/test_kmod_fuzz"

# --- regcachectl against the live module ------------------------------
rc_check "regcachectl status" "$CTL"
# balanced braces and brackets on one line, and the values we loaded with
json_ok()
{
	out=$("$CTL" --json) || return 1
	echo "$out"
	[ "$(echo "$out" | wc -l)" = 1 ] || return 1
	echo "$out" | awk '{ n = split($0, c, ""); for (i = 1; i <= n; i++) {
		if (c[i] == "{") b++; if (c[i] == "}") b--; if (c[i] == "[") s++; if (c[i] == "]") s--;
		if (b < 0 || s < 0) exit 1 } exit (b || s) }' || return 1
	echo "$out" | grep -q '^{"loaded": true, "parameters": {"max_watches": 65536,' &&
		echo "$out" | grep -q '"contexts": \['
}
rc_check "regcachectl --json is one JSON object" json_ok
rc_check "regcachectl set ring_entries=64" sh -c \
	"'$CTL' set ring_entries=64 && [ \"\$(cat /sys/module/regcache/parameters/ring_entries)\" = 64 ]"
rc_check "regcachectl set rejects a bad value (exit 1)" sh -c \
	"'$CTL' set ring_entries=0; [ \$? = 1 ] && [ \"\$(cat /sys/module/regcache/parameters/ring_entries)\" = 64 ]"
rc_check "regcachectl set rejects an unknown parameter (exit 2)" sh -c \
	"'$CTL' set nosuch=1; [ \$? = 2 ]"
"$CTL" set ring_entries=1024 >/dev/null

# --- unload refused while a context exists ----------------------------
exec 3</dev/regcache
if grep -q "^regcache-pid:	$$\$" /proc/$$/fdinfo/3; then
	rc_ok "fdinfo names the opener (pid $$)"
else
	rc_fail "fdinfo names the opener (pid $$)" "$(cat /proc/$$/fdinfo/3)"
fi
rc_check "no multi-value contexts file in sysfs" test ! -e /sys/class/misc/regcache/contexts
rc_check "regcachectl lists the context" sh -c "'$CTL' contexts | grep -q '^ *$$ *$$ *3 '"
if rmmod regcache 2>/dev/null; then
	rc_fail "rmmod refused while a context exists" "rmmod succeeded"
	load
else
	rc_ok "rmmod refused while a context exists"
fi
exec 3<&-
unload "rmmod clean after the last context closed"

# --- strict=1: protection changes invalidate too ----------------------
if rc_check "insmod strict=1" load strict=1; then
	# the whole battery: mprotect and the fork cases flip their expectation
	rc_run "inval strict=1" "$T/test_kmod_inval"
	unload "rmmod after strict=1"
fi

# --- ring_entries=16: the module parameter path of the overflow test ---
if rc_check "insmod ring_entries=16" load ring_entries=16; then
	rc_run "overflow ring_entries=16" "$T/test_kmod_overflow"
	unload "rmmod after ring_entries=16"
fi

# --- per-user limits, the status area sized at CONFIGURE, root-only counters
# As uid 60001 with a context of its own: regcachectl lists it (fdinfo) and
# says the global counters need root instead of failing.
user_ctl()
{
	out=$(setpriv --reuid=60001 --regid=60001 --clear-groups sh -c \
		"exec 3</dev/regcache; '$CTL'; echo rc=\$?; '$CTL' --json" 2>&1)
	echo "$out"
	echo "$out" | grep -q '^rc=0$' &&
		echo "$out" | grep -q 'global counters are readable by root only' &&
		echo "$out" | grep -q '^ *[0-9][0-9]* *[0-9][0-9]* *3 ' &&
		echo "$out" | grep -q '"counters": {"abi_version": 2}, "counters_need_root": true'
}
if rc_check "insmod max_user_contexts=4 max_user_watches=64" \
	load max_user_contexts=4 max_user_watches=64; then
	rc_run "limits" "$T/test_kmod_limits"
	rc_check "regcachectl as a user: own context, counters need root" user_ctl
	# module exit WARNs (dmesg) if any user's entry were left behind
	unload "rmmod after limits"
fi

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
