# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-compare: the guest side of scripts/bench-compare-host.sh, the
# rdmaxfer-bench vs perftest comparison (not part of make check: it is not
# in VM_SUITES and asserts no speed).  Loads regcache.ko so the
# registration cache runs with the kmod monitor, runs
# scripts/bench-compare.sh on rxe0 and leaves its tables in $RC_RESULTS.
# Knobs on the guest command line (VM_APPEND): rc.scale=quick|standard|full,
# rc.reps=N (repetitions per side), rc.extras=no (only the like-for-like
# table, without the registration and NIXL tables), rc.rows=TEST:BYTES,...
# (only those rows of it).
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

scale=$(sed -n 's/.*rc\.scale=\([a-z]*\).*/\1/p' /proc/cmdline)
: "${scale:=standard}"
reps=$(sed -n 's/.*rc\.reps=\([0-9]*\).*/\1/p' /proc/cmdline)
extras=$(sed -n 's/.*rc\.extras=\([a-z]*\).*/\1/p' /proc/cmdline)
rows=$(sed -n 's/.*rc\.rows=\([a-z_:0-9,]*\).*/\1/p' /proc/cmdline)
if insmod "$RC_KMOD" 2>/dev/null; then
	echo "bench-compare: regcache.ko loaded (monitor kmod)"
else
	echo "bench-compare: regcache.ko did not load: the cache uses its fallback monitor"
fi
rc_check "bench-compare ($scale) on $RC_KERNEL" \
	sh "$RC_SRCDIR/scripts/bench-compare.sh" --bench "$RC_BUILDDIR/utils/rdmaxfer-bench" \
	--device "$RXE_DEV" --addr "$RXE_ADDR" ${RXE_GID_INDEX:+--gid "$RXE_GID_INDEX"} \
	--out "$RC_RESULTS" --scale "$scale" --kernel "$RC_KERNEL" \
	${reps:+--reps "$reps"} ${rows:+--rows "$rows"} --extras "${extras:-yes}"
rmmod regcache 2>/dev/null
if [ -s "$RC_RESULTS/compare.txt" ] && ! grep -q FAILED "$RC_RESULTS/compare.txt"; then
	rc_ok "bench-compare: every measurement produced a number"
else
	rc_fail "bench-compare: every measurement produced a number" "see $RC_RESULTS/runs.log"
fi
