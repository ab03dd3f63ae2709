# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-ring2-client: guest B of the opt-in pair bench-ring2 (see
# bench-ring2-server.sh): the grain ring between two guests.  The
# initiator of rdmaxfer-bench ring --remote against guest A's target, each
# run the ring and its plain WRITEs on the same connection interleaved
# (the ratio: what the ring costs), a warm-up run first (discarded), then
# rc.reps repetitions of every size; in the first repetition also
# rdmaxfer-bench write_bw to guest A at the same size and count.  CSV in
# $RC_RESULTS (ring.csv, write_bw.csv) for the medians; numbers only as
# ratios of one run.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

BENCH=$RC_BUILDDIR/utils/rdmaxfer-bench
# shellcheck source=tests/vm/suites/bench-ring2-plan.sh
. "$RC_SRCDIR/tests/vm/suites/bench-ring2-plan.sh"

# The link first: guest A may still be booting.
rc_peer_link

fail=0
out=$RC_RESULTS/ring.csv
wout=$RC_RESULTS/write_bw.csv
: >"$out"
: >"$wout"
# $1 port, $2 size, $3 grains; the CSV rows to stdout
ring_run()
{
	timeout 900 "$BENCH" -d "$RXE_DEV" -p "$1" --timeout 120000 --csv \
		-s "$2" -n "$3" --remote ring "$RC_PEER_ADDR" \
		>/tmp/ring.csv 2>/tmp/ring.err || fail=1
	cat /tmp/ring.err >&2
	sed 1d /tmp/ring.csv
}

echo "### warm-up (discarded)"
ring_run "$(ring2_port 0)" 64K 40
run=0
r=0
while [ $r -lt "$ring2_reps" ]; do
	r=$((r + 1))
	for sn in $ring2_plan; do
		s=${sn%:*}
		n=${sn#*:}
		run=$((run + 1))
		echo "### rep $r ring -s $s -n $n"
		ring_run "$(ring2_port $run)" "$s" "$n" | sed "s/^/$r,/" >>"$out"
		[ $r = 1 ] || continue
		# write_bw (window 64) to guest A at the same size and count;
		# its server starts after the target above has ended
		timeout 600 "$BENCH" -d "$RXE_DEV" -p "$(ring2_wport $run)" \
			--timeout 120000 --csv -s "$s" -n "$n" -w 64 write_bw \
			"$RC_PEER_ADDR" >/tmp/wbw.csv 2>&1 || fail=1
		sed "1d; s/^/$r,/" /tmp/wbw.csv >>"$wout"
	done
done
cat "$out" "$wout"
if [ $fail = 0 ]; then
	rc_ok "rdmaxfer-bench ring --remote and write_bw, $ring2_reps repetitions"
else
	rc_fail "rdmaxfer-bench ring --remote and write_bw" "a run failed (above)"
fi
