# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# 2host-server: guest A of the two-host pair (tests/vm/run-2host.sh).  It
# serves test_rdmaxfer_2host's client in guest B (rdmaxfer_listen on
# $RXE_ADDR:$RC_2HOST_PORT; every write the client makes is checked here,
# on the host holding the memory; it also offers an ODP region and a
# dma-buf region), then two rdmaxfer-bench write_bw
# servers: the client's warm-up run and its measured run.  Every server is
# bounded by timeout and by its own accept timeout.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

export RXE_ADDR RXE_GID_INDEX
prog=$RC_BUILDDIR/tests/test_rdmaxfer_2host
BENCH=$RC_BUILDDIR/utils/rdmaxfer-bench

# dma-buf exporters for the server's dma-buf region (udmabuf, else vgem);
# either may be missing: the client's dmabuf_region point then skips
rc_dmabuf_exporters

rc_check "rdmaxfer server role (commands, data checks)" \
	timeout 600 env REGCACHE_MONITOR=uffd "$prog" --server "$RXE_ADDR" "$RC_2HOST_PORT"

# The same order as the client: warm-up, then measured.
for run in warmup measured; do
	port=$((RC_2HOST_PORT + 1))
	[ $run = measured ] && port=$((RC_2HOST_PORT + 2))
	rc_check "rdmaxfer-bench write_bw server ($run)" \
		timeout 240 "$BENCH" -p "$port" -d "$RXE_DEV" -D 180 write_bw
done

# Reference, not a test point: perftest's ib_write_bw server for the
# client's same-size run, so the log holds a same-run ratio.
timeout 90 ib_write_bw -d "$RXE_DEV" -x "$RXE_GID_INDEX" -p $((RC_2HOST_PORT + 3)) -F \
	-s 65536 -n 1000 >/tmp/ib_write_bw.srv 2>&1
st=$?
echo "ib_write_bw server exited with status $st"
[ "$st" = 0 ] || cat /tmp/ib_write_bw.srv

# ---- grain ring between the two hosts (issue 14): the target; every
# grain, then every sample of a sample ring taken by callback, is checked
# here, on the host that holds the ring
rc_check "rdmaxfer ring target (per-grain and per-sample checks)" \
	timeout 300 env REGCACHE_MONITOR=uffd "$prog" --ring-server "$RXE_ADDR" \
	$((RC_2HOST_PORT + 9))
# ---- end of grain ring

# ---- the etcd directory (issue 38): etcd in this guest, on the link's
# address; this guest's agent and the client's find each other by name
if command -v etcd >/dev/null 2>&1; then
	edir=$(mktemp -d /tmp/etcd.XXXXXX)
	eurl=http://$RXE_ADDR:$((RC_2HOST_PORT + 20))
	timeout 700 etcd --name=a --data-dir "$edir/data" \
		--listen-client-urls "$eurl" --advertise-client-urls "$eurl" \
		--listen-peer-urls http://127.0.0.1:$((RC_2HOST_PORT + 21)) \
		--initial-advertise-peer-urls http://127.0.0.1:$((RC_2HOST_PORT + 21)) \
		--initial-cluster a=http://127.0.0.1:$((RC_2HOST_PORT + 21)) \
		--log-level=warn --logger=zap >"$edir/log" 2>&1 &
	etcd_pid=$!
	rc_check "rdmaxfer directory: guest A's agent finds guest B's by name" \
		timeout 600 env REGCACHE_MONITOR=uffd \
		"$RC_BUILDDIR/tests/test_rdmaxfer_dir2host" --a "$eurl" ||
		tail -n 20 "$edir/log"
	kill $etcd_pid 2>/dev/null
	wait $etcd_pid 2>/dev/null
	rm -rf "$edir"
else
	rc_skip "rdmaxfer directory: guest A" "no etcd (apt-get install etcd-server on the host)"
fi
# ---- end of the etcd directory
