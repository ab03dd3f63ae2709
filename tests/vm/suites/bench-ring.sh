# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-ring (opt-in, not in the default list): what the grain ring costs
# against plain WRITEs of the same size and depth on the same connection
# (rdmaxfer-bench ring), and against rdmaxfer-bench write_bw, for the
# table in doc/BENCHMARKS.md.  Each repetition runs every size once, the
# ring, its plain WRITEs and (--floor) WRITEs with immediate into a
# ring-less target interleaved inside each point; the CSV goes to
# $RC_RESULTS for the medians.  Knob: rc.reps=N on the kernel command
# line (VM_APPEND), default 3.  Numbers only as ratios of one run.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

BENCH=$RC_BUILDDIR/utils/rdmaxfer-bench
reps=$(sed -n 's/.*rc\.reps=\([0-9]*\).*/\1/p' /proc/cmdline)
reps=${reps:-3}
out=$RC_RESULTS/ring.csv
wout=$RC_RESULTS/write_bw.csv
: >"$out"
: >"$wout"
fail=0
r=0
while [ $r -lt "$reps" ]; do
	r=$((r + 1))
	# SIZE GRAINS: 2-50 MB per point and side (TCG moves ~10 MB/s)
	# (1K:60: fewer grains than N = 64 slots, so no credit is waited
	# for at N = 64: the ring's cost without the target's pace)
	for sn in 1K:1000 1K:60 64K:160 1M:16 4M:8 8M:4; do
		s=${sn%:*}
		n=${sn#*:}
		echo "### rep $r ring -s $s -n $n"
		timeout 300 "$BENCH" -d "$RXE_DEV" --csv --floor -s "$s" -n "$n" ring \
			"$RXE_ADDR" >/tmp/ring.csv 2>/tmp/ring.err || fail=1
		cat /tmp/ring.err
		sed "1d; s/^/$r,/" /tmp/ring.csv >>"$out"
		# the same size through write_bw (window 64, its own process
		# pair), for reference, in the first repetition
		[ $r = 1 ] || continue
		port=$((18700 + r))
		timeout 120 "$BENCH" -p "$port" -d "$RXE_DEV" write_bw \
			>/tmp/srv.out 2>&1 &
		spid=$!
		i=0
		while ! grep -q 'waiting for a client' /tmp/srv.out; do
			i=$((i + 1))
			[ $i -gt 300 ] && break
			sleep 0.2
		done
		timeout 120 "$BENCH" -p "$port" -d "$RXE_DEV" --csv -s "$s" \
			-n "$n" -w 64 write_bw "$RXE_ADDR" \
			>/tmp/wbw.csv 2>&1 || fail=1
		wait "$spid" || fail=1
		sed "1d; s/^/$r,/" /tmp/wbw.csv >>"$wout"
	done
done
cat "$out" "$wout"
if [ $fail = 0 ]; then
	rc_ok "rdmaxfer-bench ring and write_bw, $reps repetitions"
else
	rc_fail "rdmaxfer-bench ring and write_bw" "a run failed (above)"
fi
