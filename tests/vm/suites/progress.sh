# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# progress: the agent's event fd and rdmaxfer_agent_arm() in an epoll
# loop with a socket of its own, a thread posting while another sleeps on
# the fd, no lost wakeup over many arm/sleep cycles, an idle agent's
# wakeups (context switches of the whole process over 2 s), completion
# callbacks, rdmaxfer_req_wait_any(), and the atomics rxe has (fetch-add,
# compare-swap) and has not (swap, and, or, xor: -EOPNOTSUPP), on rxe0
# over loopback RoCE.  Then rdmaxfer-bench's 2 B WRITE latency, busy
# polling against sleeping on the fd, as one ratio of one run.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

export RXE_ADDR RXE_GID_INDEX
# arm/sleep cycles: 10^5, or as many as fit in the time bound (the
# program prints how many; at least 1000 must); CI keeps to its budget
cycles=100000 bound=90
[ "${RC_CI:-0}" = 1 ] && cycles=20000 bound=10
rc_run "rdmaxfer event fd and completions" timeout 240 \
	env REGCACHE_MONITOR=uffd RDMAXFER_TEST_CYCLES=$cycles \
	RDMAXFER_TEST_CYCLES_S=$bound \
	"$RC_BUILDDIR/tests/test_rdmaxfer_efd"
