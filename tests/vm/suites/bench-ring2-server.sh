# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-ring2-server: guest A of the opt-in two-host pair bench-ring2
# (tests/vm/run-2host.sh; not in VM_2HOST_PAIRS by default):
#   make -C BUILD/tests check-2host VM_2HOST_PAIRS=bench-ring2 \
#	VM_KERNELS=7.3 VM_TIMEOUT=1800
# The ring targets of rdmaxfer-bench ring --target (one process per run of
# guest B's initiator, in the same order as bench-ring2-client.sh) and,
# in the first repetition, a write_bw server after each size.  Knob:
# rc.reps=N on the kernel command line (VM_APPEND), default 3; both
# guests read it.  Every server is bounded by timeout and its accept
# timeout (-D).
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

BENCH=$RC_BUILDDIR/utils/rdmaxfer-bench
# shellcheck source=tests/vm/suites/bench-ring2-plan.sh
. "$RC_SRCDIR/tests/vm/suites/bench-ring2-plan.sh"

fail=0
serve_ring()
{
	timeout 900 "$BENCH" -d "$RXE_DEV" -p "$1" -D 300 --target ring \
		"$RXE_ADDR" || fail=1
}

serve_ring "$(ring2_port 0)"	# guest B's warm-up
run=0
r=0
while [ $r -lt "$ring2_reps" ]; do
	r=$((r + 1))
	for _sn in $ring2_plan; do
		run=$((run + 1))
		serve_ring "$(ring2_port $run)"
		[ $r = 1 ] || continue
		timeout 600 "$BENCH" -d "$RXE_DEV" -p "$(ring2_wport $run)" \
			-D 300 write_bw || fail=1
	done
done
if [ $fail = 0 ]; then
	rc_ok "rdmaxfer-bench ring targets and write_bw servers"
else
	rc_fail "rdmaxfer-bench ring targets and write_bw servers" \
		"a server failed (above)"
fi
