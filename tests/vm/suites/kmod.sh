# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# kmod: regcache.ko on this kernel, first half (the second is kmod2.sh;
# split so that the two halves boot side by side, which matters on the
# debug kernel, where the whole suite took 450 s in one guest).  Loads
# the module once per parameter set a test needs (defaults; strict=1;
# ring_entries=16; small per-user limits for the limits program and
# regcachectl as a user), runs the ABI, semantics (FLUSH, status mapping,
# exec), huge page (THP, hugetlb), invalidation, isolation, overflow and
# fuzz programs, checks regcachectl against the live module, and that
# unload is refused while a context exists and clean after.  Knobs:
# tests/vm/kmod-lib.sh.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"
. "$RC_SRCDIR/tests/vm/kmod-lib.sh"

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
	# no parameters: the module's defaults again
	# shellcheck disable=SC2119
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
	# only the case that reads the parameter: configure_ring16 ran above
	# and does not depend on it (15 s of the debug kernel's time)
	rc_run "overflow ring_entries=16" "$T/test_kmod_overflow" \
		kmod_overflow/param_ring16
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
