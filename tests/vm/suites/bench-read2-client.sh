# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-read2-client: guest B of the opt-in pair bench-read2 (see
# bench-read2-server.sh): perftest's ib_read_bw -l 16 and rdmaxfer-bench
# read_bw --batch 16 against guest A, 64 B, interleaved.  CSV
# tool,round,MB/s in $RC_RESULTS/read2.csv (round 0: the warm-up), and
# the median of the per-round ratios ours / perftest in its test point.
# Numbers only as ratios of one run.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"
# shellcheck source=tests/vm/suites/bench-read2-plan.sh
. "$RC_SRCDIR/tests/vm/suites/bench-read2-plan.sh"

read2_ready "bench-read2" || exit 0
# The link first: guest A may still be booting.
rc_peer_link

csv=$RC_RESULTS/read2.csv
: >"$csv"
fail=0
# $1 tool, $2 round, $3 port: one client run, its rate appended to the CSV
read2_run()
{
	p=$3
	v=
	case $1 in
	pt16)
		# perftest does not retry: wait for its server to listen
		i=0
		while [ $i -lt 100 ]; do
			timeout 120 taskset -c 1 ib_read_bw -d "$RXE_DEV" -i 1 \
				-s 64 -n $read2_iters -F -l 16 -p "$p" \
				"$RC_PEER_ADDR" >/tmp/cli.out 2>&1 && break
			grep -q "Couldn't connect" /tmp/cli.out || break
			sleep 0.3
			i=$((i + 1))
		done
		v=$(awk '$1 == 64 && NF >= 5 { print $4; exit }' /tmp/cli.out) ;;
	s16)
		timeout 150 taskset -c 1 "$BENCH" -d "$RXE_DEV" -s 64 \
			-n $read2_iters --csv --batch 16 --timeout 60000 \
			read_bw -p "$p" "$RC_PEER_ADDR" >/tmp/cli.out 2>&1
		v=$(awk -F, '$1 == 64 { print $4; exit }' /tmp/cli.out) ;;
	esac
	if [ -z "$v" ]; then
		fail=1
		echo "client $1 round $2: no result:"
		cat /tmp/cli.out
	fi
	echo "$1,$2,$v" >>"$csv"
}

read2_rounds read2_run
cat "$csv"
# the median of ours / perftest per round, the warm-up left out
med=$(awk -F, '$2 > 0 && $3 != "" { v[$2, $1] = $3; r[$2] = 1 }
	END { for (k in r) if (v[k, "pt16"] > 0 && v[k, "s16"] != "")
		printf "%.4f\n", v[k, "s16"] / v[k, "pt16"] }' "$csv" |
	sort -n | awk '{ a[NR] = $1 } END { if (NR) printf "%.3f over %d rounds",
		NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, NR }')
if [ $fail = 0 ]; then
	rc_ok "bench-read2: ours / perftest -l 16, median $med"
else
	rc_fail "bench-read2: ours / perftest -l 16" "a run failed (above)"
fi
