# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# hostile: what a peer sends an agent is bounded (issue 32).
# test_rdmaxfer_trust: what an agent takes a peer's word for, between two
# agents.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

export RXE_ADDR RXE_GID_INDEX
rc_run "rdmaxfer trust" timeout 200 env REGCACHE_MONITOR=uffd \
	"$RC_BUILDDIR/tests/test_rdmaxfer_trust"
