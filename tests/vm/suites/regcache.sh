# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# regcache: libregcache in the guest.  With regcache.ko loaded: the unit
# tests and the monitor battery with the kmod monitor (a kmod miss is a
# failure), the battery again with uffd for the scenario x monitor table,
# the end-to-end verbs test on rxe (an RDMA WRITE through a cached key
# must land in the new memory after munmap/mmap and brk reuse), and the
# benchmarks, whose output goes to $RC_RESULTS.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

# A --enable-sanitizers build tree: first prove that a sanitizer report
# fails a program in this guest (the options of tests/sanitize.sh reached it)
[ "${RC_SANITIZERS:-no}" = no ] ||
	rc_run "sanitizers" "$RC_BUILDDIR/tests/test_sanitizers"

T=$RC_BUILDDIR/tests
R=${RC_RESULTS:-/tmp}

if [ ! -f "$RC_KMOD" ]; then
	rc_fail "insmod regcache.ko" "$RC_KMOD not built"
	exit 1
fi
rc_check "insmod regcache.ko ($RC_KVER)" insmod "$RC_KMOD" || exit 1
i=0
while [ ! -c /dev/regcache ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done

rc_run "unit kmod" env RC_TEST_MONITOR=kmod "$T/test_regcache"
rc_run "battery kmod" env RC_TEST_MONITOR=kmod \
	RC_BATTERY_OUT="$R/battery.txt" "$T/test_regcache_monitor"
rc_run "battery uffd" env RC_TEST_MONITOR=uffd \
	RC_BATTERY_OUT="$R/battery.txt" "$T/test_regcache_monitor"
rc_run "verbs e2e" env RXE_DEV="$RXE_DEV" RXE_GID_INDEX="$RXE_GID_INDEX" \
	timeout 300 "$T/test_regcache_verbs"

# Benchmarks: not pass/fail; a point only says that they ran.
if [ -x "$T/bench_regcache" ]; then
	rc_check "bench (rxe, monitors)" sh -c "timeout 400 '$T/bench_regcache' --vm \
		--dev '$RXE_DEV' >'$R/bench.txt' 2>&1; st=\$?; cat '$R/bench.txt'; exit \$st"
fi

rc_check "rmmod regcache" rmmod regcache
