# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# directory: librdmaxfer's etcd directory on rxe0 in one guest.  The test
# program starts its own etcd (the host's etcd-server, through the shared
# root) on the guest's loopback, then connects by name and transfers over
# loopback RoCE to $RXE_ADDR; rdmaxfer-bench and rdmaxfer-info then find
# each other through a second etcd the suite starts.  Every run is
# bounded by timeout.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

export RXE_ADDR RXE_GID_INDEX
if ! command -v etcd >/dev/null 2>&1; then
	rc_skip "rdmaxfer directory" "no etcd in the guest (apt-get install etcd-server on the host)"
	exit 0
fi
rc_run "rdmaxfer directory" timeout 400 env REGCACHE_MONITOR=uffd \
	"$RC_BUILDDIR/tests/test_rdmaxfer_dirconn"

# the tools, by name: an etcd of the suite's own, a bench server that
# publishes itself, a client and rdmaxfer-info that find it
BENCH=$RC_BUILDDIR/utils/rdmaxfer-bench
INFO=$RC_BUILDDIR/utils/rdmaxfer-info
ETCD_DIR=$(mktemp -d /tmp/etcd.XXXXXX)
URL=http://127.0.0.1:23790
timeout 300 etcd --name=s --data-dir "$ETCD_DIR/data" \
	--listen-client-urls $URL --advertise-client-urls $URL \
	--listen-peer-urls http://127.0.0.1:23800 \
	--initial-advertise-peer-urls http://127.0.0.1:23800 \
	--initial-cluster s=http://127.0.0.1:23800 --log-level=warn \
	--logger=zap >"$ETCD_DIR/log" 2>&1 &
etcd_pid=$!
timeout 240 "$BENCH" -d "$RXE_DEV" -D 180 --directory $URL \
	--publish bench-srv write_bw >/tmp/bench-srv.out 2>&1 &
srv_pid=$!

tools_by_name()
{
	t0=$(date +%s)
	until "$INFO" --directory $URL --name bench-srv >/tmp/info-one.out 2>&1; do
		if [ $(($(date +%s) - t0)) -gt 120 ]; then
			cat /tmp/info-one.out /tmp/bench-srv.out "$ETCD_DIR/log"
			return 1
		fi
		sleep 0.5
	done
	cat /tmp/info-one.out
	"$INFO" --directory $URL >/tmp/info-all.out 2>&1
	st=$?
	cat /tmp/info-all.out
	[ $st = 0 ] && grep -q "bench-srv" /tmp/info-all.out || return 1
	timeout 120 "$BENCH" -d "$RXE_DEV" --timeout 60000 --validate -n 50 -s 16384 \
		--directory $URL --name bench-srv write_bw ||
		{ cat /tmp/bench-srv.out; return 1; }
	wait $srv_pid || { cat /tmp/bench-srv.out; return 1; }
}
rc_check "rdmaxfer-bench and rdmaxfer-info by name (--directory, --name)" \
	tools_by_name
kill $srv_pid $etcd_pid 2>/dev/null
wait $etcd_pid 2>/dev/null
rm -rf "$ETCD_DIR"
