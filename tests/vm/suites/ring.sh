# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# ring: the grain ring (librdmaxfer/ring/, issue 14) between agents of one
# guest over loopback RoCE to $RXE_ADDR: order and content over many laps,
# credits against a slow target, the three completion styles, a split
# grain, a doorbell batch, fan-out and bad input; then, on its own, a
# target process killed under a writer whose slots are all in use
# (test_rdmaxfer_ring --killed): its puts must fail with the connection's
# error within their timeout (they once spun forever re-posting the credit
# read) and the writer detach at once.  SIGABRT on timeout, for a core.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

export RXE_ADDR RXE_GID_INDEX
prog="$RC_BUILDDIR/tests/test_rdmaxfer_ring"
rc_run "rdmaxfer ring" timeout 200 env REGCACHE_MONITOR=uffd "$prog"
rc_run "rdmaxfer ring killed target" timeout -s ABRT 120 \
	env REGCACHE_MONITOR=uffd "$prog" --killed
