# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# hostile: what a peer sends an agent is bounded (issue 32).
# test_rdmaxfer_hostile is a hostile peer in raw verbs against a live
# agent in another process: malformed hellos and welcomes, blobs with bad
# lengths, notification floods, forged immediates into a ring, handshake
# storms, RDMA outside the export; each class counted or answered, the
# target's RSS bounded, a good peer's traffic completing throughout, and
# a clean exit (no leak under ASan).  test_rdmaxfer_trust: a transfer too
# large to prepare, two rings and the application's callback on one
# agent, a reconnect reaching another agent.  test_rdmaxfer_auth:
# connection authentication (same key, wrong key, key against none, a raw
# peer without the key, a replayed proof).  rc.hostile=CASE on the
# kernel command line (VM_APPEND) runs one case of the first
# ("hostile/storms").
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

export RXE_ADDR RXE_GID_INDEX
cases=$(sed -n 's/.*rc\.hostile=\([^ ]*\).*/\1/p' /proc/cmdline)
# shellcheck disable=SC2086
rc_run "rdmaxfer hostile" timeout 400 env REGCACHE_MONITOR=uffd \
	"$RC_BUILDDIR/tests/test_rdmaxfer_hostile" $cases
[ -n "$cases" ] ||
	rc_run "rdmaxfer trust" timeout 200 env REGCACHE_MONITOR=uffd \
		"$RC_BUILDDIR/tests/test_rdmaxfer_trust"
[ -n "$cases" ] ||
	rc_run "rdmaxfer auth" timeout 120 env REGCACHE_MONITOR=uffd \
		"$RC_BUILDDIR/tests/test_rdmaxfer_auth"
