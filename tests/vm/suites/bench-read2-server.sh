# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-read2-server: guest A of the opt-in two-host pair bench-read2
# (tests/vm/run-2host.sh; not in VM_2HOST_PAIRS by default):
#   make -C BUILD/tests check-2host VM_2HOST_PAIRS=bench-read2 \
#	VM_KERNELS=6.1 VM_APPEND=rc.reps=60 VM_TIMEOUT=2400
# READ at 64 B with the responder in this guest and the client in the
# other, as with a NIC (doc/BENCHMARKS.md, "Like for like": READ at 64 B):
# one server per run of guest B's client, in the same order.  Every
# server is bounded by timeout (and ours by its accept timeout, -D).
. "$RC_SRCDIR/tests/vm/guest-lib.sh"
# shellcheck source=tests/vm/suites/bench-read2-plan.sh
. "$RC_SRCDIR/tests/vm/suites/bench-read2-plan.sh"

read2_ready "bench-read2 servers" || exit 0
fail=0
# $1 tool, $2 round, $3 port: the server of one run of guest B's client
read2_serve()
{
	case $1 in
	pt16) timeout 180 taskset -c 0 ib_read_bw -d "$RXE_DEV" -i 1 \
		-s 64 -n $read2_iters -F -l 16 -p "$3" >/tmp/srv.out 2>&1 ;;
	s16) timeout 180 taskset -c 0 "$BENCH" -d "$RXE_DEV" -s 64 \
		-n $read2_iters --batch 16 -D 150 read_bw -p "$3" \
		>/tmp/srv.out 2>&1 ;;
	esac || { fail=1; echo "server $1 round $2 failed:"; cat /tmp/srv.out; }
}

read2_rounds read2_serve
if [ $fail = 0 ]; then
	rc_ok "bench-read2 servers, $read2_reps rounds"
else
	rc_fail "bench-read2 servers" "a server failed (above)"
fi
