# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# 2host-client: guest B of the two-host pair (tests/vm/run-2host.sh).  Runs
# test_rdmaxfer_2host against the server in guest A ($RC_PEER_ADDR), then
# rdmaxfer-bench write_bw from here to there: a short warm-up run that is
# discarded, then the measured run (functional: it must finish and pass
# --validate; its bandwidth goes to $RC_RESULTS/write_bw.txt and the log,
# nothing is asserted about it).  Everything is bounded by timeout.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

export RXE_ADDR RXE_GID_INDEX RC_PEER_ADDR
export RC_PEER_PORT="$RC_2HOST_PORT"
prog=$RC_BUILDDIR/tests/test_rdmaxfer_2host
BENCH=$RC_BUILDDIR/utils/rdmaxfer-bench
OUT=/tmp/2host
mkdir -p "$OUT"

# The link first: guest A may still be booting.
rc_peer_link

rc_run "rdmaxfer 2host (uffd monitor)" timeout 600 env REGCACHE_MONITOR=uffd "$prog"

# write_bw 64 KiB: warm-up (discarded), then measured.
size=65536
for run in warmup measured; do
	port=$((RC_2HOST_PORT + 1))
	iters=200
	if [ $run = measured ]; then
		port=$((RC_2HOST_PORT + 2))
		iters=1000
	fi
	timeout 240 "$BENCH" -p "$port" -d "$RXE_DEV" --timeout 60000 \
		--validate --json -s "$size" -n "$iters" write_bw "$RC_PEER_ADDR" \
		>"$OUT/$run.json" 2>"$OUT/$run.err"
	rc=$?
	cat "$OUT/$run.json" "$OUT/$run.err"
	cp "$OUT/$run.json" "$RC_RESULTS/write_bw-$run.json" 2>/dev/null
	if [ $rc != 0 ]; then
		rc_fail "rdmaxfer-bench write_bw to $RC_PEER_ADDR ($run)" \
			"exit $rc: $(tail -n 2 "$OUT/$run.err")"
	elif ! grep -q '"validate": "passed"' "$OUT/$run.json"; then
		rc_fail "rdmaxfer-bench write_bw to $RC_PEER_ADDR ($run)" "validation did not pass"
	else
		rc_ok "rdmaxfer-bench write_bw to $RC_PEER_ADDR ($run)"
	fi
done
bw=$(sed -n 's/.*"bw_avg_mbs": *\([0-9.]*\).*/\1/p' "$OUT/measured.json" | head -n 1)
echo "write_bw $size B between two guests ($RC_KERNEL): ${bw:-?} MB/s average (measured run, $iters iterations; warm-up discarded)" |
	tee "$RC_RESULTS/write_bw.txt"

# Reference, not a test point: perftest ib_write_bw, same size and count,
# right after (its server may need a moment to start: a few tries).
ib=
t0=$(date +%s)
for _try in 1 2 3 4 5 6 7 8 9 10; do
	[ $(($(date +%s) - t0)) -gt 60 ] && break
	if timeout 90 ib_write_bw -d "$RXE_DEV" -x "$RXE_GID_INDEX" \
		-p $((RC_2HOST_PORT + 3)) -F -s 65536 -n 1000 "$RC_PEER_ADDR" \
		>"$OUT/ib_write_bw.out" 2>&1; then
		ib=$(awk '$1 == 65536 { print $4 }' "$OUT/ib_write_bw.out")
		break
	fi
	sleep 2
done
cat "$OUT/ib_write_bw.out"
echo "perftest ib_write_bw 65536 B between two guests ($RC_KERNEL): ${ib:-not measured} MB/s average (1000 iterations, same boot)" |
	tee -a "$RC_RESULTS/write_bw.txt"

# ---- grain ring between the two hosts (issue 14): the initiator; it
# waits (bounded) for guest A's target, started after the servers above
rc_run "rdmaxfer 2host ring" timeout 300 env REGCACHE_MONITOR=uffd "$prog" --ring
# ---- end of grain ring

# ---- the etcd directory (issue 38): guest A runs etcd on its link
# address; this guest's agent and guest A's find each other by name
if command -v etcd >/dev/null 2>&1; then
	rc_run "rdmaxfer 2host directory" timeout 600 env REGCACHE_MONITOR=uffd \
		"$RC_BUILDDIR/tests/test_rdmaxfer_dir2host" \
		"http://$RC_PEER_ADDR:$((RC_2HOST_PORT + 20))"
else
	rc_skip "rdmaxfer 2host directory" "no etcd (apt-get install etcd-server on the host)"
fi
# ---- end of the etcd directory
