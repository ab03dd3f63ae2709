# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# regcache: libregcache in the guest.  With regcache.ko loaded: the unit
# tests and the monitor battery with the kmod monitor (a kmod miss is a
# failure), the battery again with uffd for the scenario x monitor table,
# fork/raw clone/thread-exit/membarrier tests with both monitors,
# the end-to-end verbs test on rxe (an RDMA WRITE through a cached key
# must land in the new memory after munmap/mmap and brk reuse), what a
# miss registers and pins (growth, RLIMIT_MEMLOCK, churn), the uffd
# monitor's own tests (host program, then end to end on rxe, also in
# missing mode), and the benchmarks, whose output goes to $RC_RESULTS.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

# A --enable-sanitizers build tree: first prove that a sanitizer report
# fails a program in this guest (the options of tests/sanitize.sh reached it)
[ "${RC_SANITIZERS:-no}" = no ] ||
	rc_run "sanitizers" "$RC_BUILDDIR/tests/test_sanitizers"

T=$RC_BUILDDIR/tests
R=${RC_RESULTS:-/tmp}

# On the debug kernel (KASAN, lockdep, kmemleak; tests/vm/README.md) only
# the programs that drive regcache.ko run: the userfaultfd-monitor ones
# and the benchmarks run on 6.1 and 7.3, and add nothing there but time.
full() { [ "$RC_KERNEL" != debug ]; }
full || echo "# debug kernel: the kmod-monitor programs only"

if [ ! -f "$RC_KMOD" ]; then
	rc_fail "insmod regcache.ko" "$RC_KMOD not built"
	exit 1
fi
rc_check "insmod regcache.ko ($RC_KVER)" insmod "$RC_KMOD" || exit 1
i=0
while [ ! -c /dev/regcache ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done

# the 8-thread stress is userspace hits (the kernel sees a few thousand
# misses at most): on the debug kernel 4000 gets a thread, not the
# program's 20000 (55 s there)
stress=
full || stress=REGCACHE_STRESS_ITERS=4000
rc_run "unit kmod" env RC_TEST_MONITOR=kmod $stress "$T/test_regcache"
rc_run "exact kmod" env RC_TEST_MONITOR=kmod "$T/test_regcache_exact"
full && rc_run "exact uffd" env RC_TEST_MONITOR=uffd "$T/test_regcache_exact"
rc_run "battery kmod" env RC_TEST_MONITOR=kmod \
	RC_BATTERY_OUT="$R/battery.txt" "$T/test_regcache_monitor"
full && rc_run "battery uffd" env RC_TEST_MONITOR=uffd \
	RC_BATTERY_OUT="$R/battery.txt" "$T/test_regcache_monitor"
# fork, raw clone, thread exit, failing membarrier: kmod is the monitor
# whose status page a child does not have.
rc_run "fork kmod" env RC_TEST_MONITOR=kmod timeout 300 "$T/test_regcache_fork"
full && rc_run "fork uffd" env RC_TEST_MONITOR=uffd timeout 300 "$T/test_regcache_fork"
rc_run "verbs e2e" env RXE_DEV="$RXE_DEV" RXE_GID_INDEX="$RXE_GID_INDEX" \
	timeout 300 "$T/test_regcache_verbs"
# What a miss registers: growth inside the VMA (PROCMAP_QUERY on 7.3, the
# text of /proc/self/maps on 6.1), evict-and-retry, a churning neighbour.
rc_run "growth kmod" env RC_TEST_MONITOR=kmod timeout 300 "$T/test_regcache_growth"
full && rc_run "growth uffd" env RC_TEST_MONITOR=uffd timeout 300 "$T/test_regcache_growth"
# ibv_reg_mr next to guards and other mappings: nothing outside pinned.
rc_run "pin kmod" env RXE_DEV="$RXE_DEV" RC_TEST_MONITOR=kmod \
	timeout 300 "$T/test_regcache_pin" pin
# Under RLIMIT_MEMLOCK of 1 MiB: root's CAP_IPC_LOCK would bypass it, so
# drop it from the bounding set (the program checks that ibv_reg_mr of
# more than the limit fails, and skips saying why otherwise).
rc_run "memlock 1 MiB kmod" sh -c "ulimit -l 1024 && exec setpriv \
	--inh-caps=-ipc_lock --bounding-set=-ipc_lock env RXE_DEV='$RXE_DEV' \
	RC_TEST_MONITOR=kmod timeout 300 '$T/test_regcache_pin' memlock"

# The kmod monitor's system calls and locked instructions per hit, miss
# and lookup (tests/budget/kmod.txt, issue 36), single-stepped here, only
# with rc.budget=kmod on the kernel command line (VM_APPEND): on a loaded
# machine a single step in a TCG guest took 1.5 ms, and the five lines
# 121-287 s (most likely the vDSO's clock read retrying under the
# stepper, see kmod.txt), too slow and too variable for make check.
full && grep -q 'rc\.budget=kmod' /proc/cmdline &&
	rc_run "budget kmod" sh -c "cd '$T' && BUDGET_FILE='$RC_SRCDIR/tests/budget/kmod.txt' BUDGET_CALLGRIND=no \
	exec timeout 300 sh '$RC_SRCDIR/tests/test_budget.sh'"

if full; then
	# The uffd monitor: host unit tests on this kernel (6.1 has no
	# PROCMAP_QUERY), then end to end on rxe.
	rc_run "uffd" timeout 300 "$T/test_regcache_uffd"
	rc_run "uffd verbs" env RXE_DEV="$RXE_DEV" RXE_GID_INDEX="$RXE_GID_INDEX" \
		timeout 400 "$T/test_regcache_uffd_verbs"
	# The missing-mode fallback (kernels without write-protect mode): the
	# populate before the watch keeps never-touched memory registrable.
	rc_run "uffd verbs missing" env REGCACHE_UFFD_MODE=missing \
		RXE_DEV="$RXE_DEV" RXE_GID_INDEX="$RXE_GID_INDEX" \
		timeout 400 "$T/test_regcache_uffd_verbs" uffd-verbs/memfd_punch_write \
		uffd-verbs/untouched_pinned uffd-verbs/two_caches_write

	rc_run "uffd agents" env RXE_DEV="$RXE_DEV" \
		timeout 300 "$T/test_rdmaxfer_uffd_agents"

	# Benchmarks: not pass/fail; a point only says that they ran.  In
	# --quick form (fewer entries and rounds: make check's time), the
	# whole with rc.bench=full on the kernel command line (VM_APPEND).
	bq=--quick
	grep -q 'rc\.bench=full' /proc/cmdline && bq=
	if [ -x "$T/bench_regcache" ]; then
		rc_check "bench (rxe, monitors)" sh -c "timeout 400 '$T/bench_regcache' --vm $bq \
			--dev '$RXE_DEV' >'$R/bench.txt' 2>&1; st=\$?; cat '$R/bench.txt'; exit \$st"
	fi
fi

rc_check "rmmod regcache" rmmod regcache
