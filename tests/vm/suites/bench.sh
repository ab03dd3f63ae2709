# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench: functional smoke of rdmaxfer-bench and rdmaxfer-info on rxe.
# Every bench test runs once, small and short, server and client in this
# guest on $RXE_ADDR, with --validate (the data pattern, or the exact
# sequence of atomic results, is checked at the end) and --json output that
# must parse.  rdmaxfer-info must list the device, report ODP as the
# running kernel's rxe offers it (7.3: yes, 6.1: no), and emit valid JSON.
# Bad input must fail with a message, never hang or crash.  No speed is
# asserted here: numbers under TCG mean nothing outside one run's ratios.
. "$RC_SRCDIR/tests/vm/guest-lib.sh"

BENCH=$RC_BUILDDIR/utils/rdmaxfer-bench
INFO=$RC_BUILDDIR/utils/rdmaxfer-info
OUT=/tmp/bench
mkdir -p "$OUT"
port=18600
t_start=$(date +%s)

json_ok()
{
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1"
}

# wait_listening FILE: wait (at most 60 s) until the server whose output
# goes to FILE says it listens; a loaded host can take seconds to get there,
# and a client started earlier is refused.
wait_listening()
{
	n=0
	while ! grep -q 'waiting for a client' "$1" 2>/dev/null; do
		n=$((n + 1))
		[ $n -gt 300 ] && return 1
		sleep 0.2
	done
	return 0
}

# bench_pair NAME TEST [CLIENT OPTIONS...]: server in the background (with
# $SRV_OPTS, unquoted), the client in the foreground, both bounded; passes
# when both exit 0 and the client's JSON output parses.
bench_pair()
{
	name=$1
	test=$2
	shift 2
	echo "### bench $name: $test $* (t=$(($(date +%s) - t_start)) s)"
	port=$((port + 1))
	# SRV_OPTS: server options, split into words on purpose
	# shellcheck disable=SC2086
	timeout 120 "$BENCH" -p "$port" -d "$RXE_DEV" ${SRV_OPTS:-} "$test" \
		>"$OUT/$name.srv" 2>&1 &
	spid=$!
	wait_listening "$OUT/$name.srv"
	timeout 120 "$BENCH" -p "$port" -d "$RXE_DEV" --validate --json \
		"$@" "$test" "$RXE_ADDR" >"$OUT/$name.json" 2>"$OUT/$name.err"
	crc=$?
	wait "$spid"
	src=$?
	cat "$OUT/$name.json" "$OUT/$name.err"
	sed 's/^/server: /' "$OUT/$name.srv"
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		rc_fail "bench $name" "client exit $crc, server exit $src: $(tail -n 2 "$OUT/$name.err")"
		return 1
	fi
	if ! json_ok "$OUT/$name.json"; then
		rc_fail "bench $name" "--json output does not parse"
		return 1
	fi
	if ! grep -q '"validate": "passed"' "$OUT/$name.json"; then
		rc_fail "bench $name" "validation did not pass"
		return 1
	fi
	rc_ok "bench $name"
}

# --- every test, small --------------------------------------------------
bench_pair write_bw write_bw -s 4096 -n 200 -w 16
bench_pair write_bw-all write_bw -a -n 20 -w 8
bench_pair write_bw-postlist write_bw -s 64 -n 256 -w 8 -l 4 -q 2
bench_pair read_bw read_bw -s 65536 -n 100 -w 8
bench_pair write_lat write_lat -s 2 -n 200
bench_pair write_lat-4k write_lat -s 4096 -n 100
bench_pair read_lat read_lat -s 4096 -n 100
bench_pair fadd_lat fadd_lat -n 200
bench_pair cswap_lat cswap_lat -n 200
bench_pair nixl nixl --total 8M --chunks 16 -n 3 --cache both

# The result rows carry what they claim: one row per size, by name.
rows=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["results"]))' "$OUT/write_bw-all.json" 2>/dev/null)
if [ "$rows" = 23 ]; then
	rc_ok "bench write_bw -a: 23 sizes (2 B .. 8 MiB)"
else
	rc_fail "bench write_bw -a: 23 sizes (2 B .. 8 MiB)" "got '$rows' rows"
fi
if python3 - "$OUT/nixl.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
modes = sorted({(x["cache"], x["phase"]) for x in r})
assert modes == [("off", "first"), ("off", "steady"), ("on", "first"), ("on", "steady")], modes
for x in r:
    assert x["reg_ms"] >= 0 and x["xfer_ms"] > 0 and 0 <= x["reg_share_pct"] <= 100, x
EOF
then
	rc_ok "bench nixl: off and on rows with sane shares"
else
	rc_fail "bench nixl: off and on rows with sane shares"
fi

# --- the modes of issues 35 and 37: each runs and reports what it claims
# write_lat --wait notif|fd: the mode is in the output, the row's latencies
# are positive, and fd slept in epoll_wait() (notif never does)
for w in notif fd; do
	bench_pair "write_lat-$w" write_lat -s 2 -n 100 --wait "$w" || continue
	if python3 - "$OUT/write_lat-$w.json" "$w" <<'EOF'
import json, sys
j, w = json.load(open(sys.argv[1])), sys.argv[2]
assert j["wait"] == w, j["wait"]
r = j["results"]
assert len(r) == 1 and r[0]["bytes"] == 2 and r[0]["iterations"] == 100, r
assert 0 < r[0]["t_min_usec"] <= r[0]["t_typical_usec"] <= r[0]["t_max_usec"], r
s = j["wait_sleeps_2"]
assert (s > 0) if w == "fd" else (s == 0), s
EOF
	then
		rc_ok "bench write_lat --wait $w: reports its mode, latencies, sleeps"
	else
		rc_fail "bench write_lat --wait $w: reports its mode, latencies, sleeps"
	fi
done
# --rkey-mode on the server (rxe's auto is exact), and RDMAXFER_RKEY_MODE
# honoured by the server: the client reports the keys it was given,
# positive bandwidths, the data checked
rkey_rows()
{
	python3 - "$OUT/$1.json" "$2" "$3" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["target_rkey_mode"] == sys.argv[2], j.get("target_rkey_mode")
r = j["results"]
assert len(r) == 1 and r[0]["bytes"] == int(sys.argv[3]), r
assert r[0]["bw_avg_mbs"] > 0 and r[0]["bw_peak_mbs"] >= r[0]["bw_avg_mbs"], r
EOF
}
SRV_OPTS="--rkey-mode window"
if bench_pair write_bw-window write_bw -s 64 -n 200 -w 16 &&
   bench_pair read_bw-window read_bw -s 1M -n 8 -w 4 &&
   rkey_rows write_bw-window window 64 &&
   rkey_rows read_bw-window window 1048576; then
	rc_ok "bench --rkey-mode window: write_bw and read_bw through window keys"
else
	rc_fail "bench --rkey-mode window: write_bw and read_bw through window keys"
fi
SRV_OPTS="--rkey-mode exact"
if bench_pair write_bw-exact write_bw -s 64 -n 200 -w 16 &&
   rkey_rows write_bw-exact exact 64; then
	rc_ok "bench --rkey-mode exact: write_bw through MR keys"
else
	rc_fail "bench --rkey-mode exact: write_bw through MR keys"
fi
SRV_OPTS=
export RDMAXFER_RKEY_MODE=window
if bench_pair write_bw-envwindow write_bw -s 64 -n 100 -w 8 &&
   rkey_rows write_bw-envwindow window 64; then
	rc_ok "bench: the server honours RDMAXFER_RKEY_MODE=window"
else
	rc_fail "bench: the server honours RDMAXFER_RKEY_MODE=window"
fi
unset RDMAXFER_RKEY_MODE
# nixl --rereg: the server re-registers its exports every iteration, in
# each mode; the rows are named after it and carry its registration time
for m in window exact; do
	SRV_OPTS="--rkey-mode $m"
	bench_pair "nixl-rereg-$m" nixl --rereg --total 1M --chunks 16 -n 3 ||
		continue
	if python3 - "$OUT/nixl-rereg-$m.json" "$m" <<'EOF'
import json, sys
j, m = json.load(open(sys.argv[1])), sys.argv[2]
assert j["target_rkey_mode"] == m, j["target_rkey_mode"]
r = j["results"]
assert sorted((x["cache"], x["phase"]) for x in r) == \
    [("rereg-" + m, "first"), ("rereg-" + m, "steady")], r
for x in r:
    assert x["chunks"] == 16 and x["total_bytes"] == 1 << 20, x
    assert 0 < x["target_reg_ms"] <= x["reg_ms"] and x["xfer_ms"] > 0, x
    assert 0 < x["reg_share_pct"] < 100, x
EOF
	then
		rc_ok "bench nixl --rereg ($m keys): the target's registration in the rows"
	else
		rc_fail "bench nixl --rereg ($m keys): the target's registration in the rows"
	fi
done
SRV_OPTS=

# reg: local only; ODP row present exactly when rxe offers it (7.3)
if timeout 120 "$BENCH" -d "$RXE_DEV" --json -n 5 -s 1M reg >"$OUT/reg.json" 2>"$OUT/reg.err" &&
   json_ok "$OUT/reg.json"; then
	cat "$OUT/reg.json"
	odp=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["odp"])' "$OUT/reg.json")
	case $RC_KERNEL:$odp in
	7.3:True|6.1:False) rc_ok "bench reg (ODP measured: $odp on $RC_KERNEL)" ;;
	*) rc_fail "bench reg" "ODP measured '$odp' on $RC_KERNEL" ;;
	esac
else
	cat "$OUT/reg.err"
	rc_fail "bench reg" "$(tail -n 1 "$OUT/reg.err")"
fi
rc_check "bench reg text output (4 KiB .. 64 KiB)" \
	timeout 120 "$BENCH" -d "$RXE_DEV" -n 3 -s 64K reg
# reg_access: local, remote (rkey dies with the handle) and cached-rkey
# columns, regcache_get + put on a bare cache and raw verbs; the remote one
# registers every cycle, so it must cost more than the local hit (a ratio
# within one run, not a speed), and the bare cache's and the raw column
# must have run
if timeout 120 "$BENCH" -d "$RXE_DEV" --csv -n 20 -s 64K reg_access \
	>"$OUT/reg_access.csv" 2>"$OUT/reg_access.err"; then
	cat "$OUT/reg_access.csv"
	if awk -F, '/^[0-9]/ { ok = $5 > 2 * $4 && $5 > 2 * $6 && $7 > 0 && $8 > 0 } END { exit !ok }' \
		"$OUT/reg_access.csv"; then
		rc_ok "bench reg_access (remote registers, local and cached hit)"
	else
		rc_fail "bench reg_access" "remote column not above the hits"
	fi
else
	cat "$OUT/reg_access.err"
	rc_fail "bench reg_access" "$(tail -n 1 "$OUT/reg_access.err")"
fi
# ring --floor: per N (4, 16, 64), the ring, its plain WRITEs and the
# WRITEs with immediate into a ring-less target, one small size; the run
# fails unless the target released every grain and took every immediate,
# and each row must have the floor's three columns and positive rates
if timeout 120 "$BENCH" -d "$RXE_DEV" --csv --floor -s 1K -n 64 ring \
	"$RXE_ADDR" >"$OUT/ring.csv" 2>"$OUT/ring.err"; then
	cat "$OUT/ring.csv"
	if awk -F, '$1 == "ring" { n++; if (NF != 12 || !($5 > 0 && $7 > 0 && $10 > 0)) bad = 1 } END { exit !(n == 3 && !bad) }' \
		"$OUT/ring.csv"; then
		rc_ok "bench ring --floor (ring, WRITEs, WRITEs with immediate)"
	else
		rc_fail "bench ring --floor" "not three rows of 12 columns"
	fi
else
	cat "$OUT/ring.err"
	rc_fail "bench ring --floor" "$(tail -n 1 "$OUT/ring.err")"
fi

# --- bad input ---------------------------------------------------------
# expect_fail NAME SECONDS PATTERN CMD...: non-zero exit within SECONDS (not
# killed by timeout), and PATTERN in its stderr.
expect_fail()
{
	name=$1
	secs=$2
	pat=$3
	shift 3
	echo "### $name (t=$(($(date +%s) - t_start)) s)"
	timeout "$secs" "$@" >"$OUT/bad.out" 2>"$OUT/bad.err"
	st=$?
	cat "$OUT/bad.err"
	if [ "$st" = 0 ]; then
		rc_fail "$name" "exit status 0"
	elif [ "$st" = 124 ] || [ "$st" -ge 128 ]; then
		rc_fail "$name" "status $st: killed or crashed"
	elif ! grep -q -- "$pat" "$OUT/bad.err"; then
		rc_fail "$name" "no '$pat' in: $(tail -n 1 "$OUT/bad.err")"
	else
		rc_ok "$name"
	fi
}
expect_fail "bench: unknown device" 30 "cannot open RDMA device 'nosuchdev'" \
	"$BENCH" -d nosuchdev write_bw "$RXE_ADDR"
# 10.0.2.99 is on eth0's subnet but nobody answers ARP
expect_fail "bench: unreachable peer fails within the timeout" 40 "cannot connect" \
	"$BENCH" -d "$RXE_DEV" --timeout 3000 write_bw 10.0.2.99
expect_fail "bench: no server (connection refused)" 40 "cannot connect" \
	"$BENCH" -d "$RXE_DEV" --timeout 2000 -p 18599 write_bw "$RXE_ADDR"
expect_fail "bench: oversized request" 10 "(-90)" \
	"$BENCH" -d "$RXE_DEV" -s 2G write_bw "$RXE_ADDR"
expect_fail "bench: bad option" 10 "invalid window" \
	"$BENCH" -w 0 write_bw "$RXE_ADDR"
expect_fail "bench: ring --floor with --remote" 10 "not with --target or --remote" \
	"$BENCH" --floor --remote ring "$RXE_ADDR"
expect_fail "bench: unknown test" 10 "unknown test" "$BENCH" frobnicate
# busy port: a second server on the same port
timeout 30 "$BENCH" -d "$RXE_DEV" -p 18650 -D 20 write_bw >"$OUT/busy.srv" 2>&1 &
bpid=$!
wait_listening "$OUT/busy.srv"
expect_fail "bench: busy port" 20 "cannot listen on port 18650" \
	"$BENCH" -d "$RXE_DEV" -p 18650 write_bw
kill "$bpid" 2>/dev/null
wait "$bpid" 2>/dev/null

# --- --compare and --plot ---------------------------------------------
# compare_smoke NAME TEST SIZE ITERS: rdmaxfer-bench --compare against
# perftest on rxe0, one repetition, with --plot; passes when both tools
# produced a number, the ratio is printed, both command lines are named
# and the plot is a PNG.  No speed is asserted.
compare_smoke()
{
	name=$1
	echo "### $name (t=$(($(date +%s) - t_start)) s)"
	port=$((port + 10))
	rm -f "$OUT/$name.png"
	timeout 300 "$BENCH" -d "$RXE_DEV" -p "$port" --compare --reps 1 \
		-s "$3" -n "$4" --plot "$OUT/$name.png" "$2" "$RXE_ADDR" \
		>"$OUT/$name.txt" 2>"$OUT/$name.err"
	st=$?
	cat "$OUT/$name.txt" "$OUT/$name.err"
	if [ "$st" != 0 ]; then
		rc_fail "$name" "exit status $st: $(tail -n 1 "$OUT/$name.err")"
	elif ! grep -q "^# ours: .*rdmaxfer-bench .* $2 $RXE_ADDR\$" "$OUT/$name.txt" ||
	     ! grep -q "^# perftest: .*ib_$2 .* $RXE_ADDR\$" "$OUT/$name.txt"; then
		rc_fail "$name" "the two command lines are not named"
	elif ! awk -v s="$3" '$1 == s && $2 > 0 && $3 > 0 && $4 > 0 { f = 1 } END { exit !f }' \
		"$OUT/$name.txt"; then
		rc_fail "$name" "no row with both numbers and the ratio"
	elif command -v gnuplot >/dev/null 2>&1 &&
	     [ "$(head -c 4 "$OUT/$name.png" 2>/dev/null | od -An -c | tr -d ' ')" != '211PNG' ]; then
		rc_fail "$name" "--plot wrote no PNG"
	else
		rc_ok "$name"
	fi
}
compare_smoke "bench --compare write_bw (perftest -l 16) --plot" write_bw 4096 512
compare_smoke "bench --compare write_lat --plot" write_lat 2 200

# --- rdmaxfer-info -----------------------------------------------------
if timeout 60 "$INFO" >"$OUT/info.txt" 2>&1; then
	cat "$OUT/info.txt"
	if grep -q "^device $RXE_DEV " "$OUT/info.txt"; then
		rc_ok "rdmaxfer-info lists $RXE_DEV"
	else
		rc_fail "rdmaxfer-info lists $RXE_DEV"
	fi
else
	cat "$OUT/info.txt"
	rc_fail "rdmaxfer-info lists $RXE_DEV" "exit status non-zero"
fi
if timeout 60 "$INFO" --json >"$OUT/info.json" 2>"$OUT/info.err" && json_ok "$OUT/info.json"; then
	rc_ok "rdmaxfer-info --json parses"
	if python3 - "$OUT/info.json" "$RXE_DEV" "$RC_KERNEL" "$RXE_GID_INDEX" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
dev, kernel, gidx = sys.argv[2], sys.argv[3], sys.argv[4]
d = [x for x in j["devices"] if x["name"] == dev][0]
odp = d["caps"]["odp"]
print("odp:", odp, "dmabuf:", d["caps"]["dmabuf"], "dm:", d["caps"]["max_dm_size"])
if kernel == "7.3":
    assert odp["explicit"] and "write" in odp["rc"] and "read" in odp["rc"], odp
else:
    assert not odp["explicit"] and odp["rc"] == "none", odp
# rxe: no device memory, no dma-buf path
assert d["caps"]["max_dm_size"] == 0
assert d["caps"]["dmabuf"] == "no", d["caps"]["dmabuf"]
p = d["ports"][0]
assert p["state"] == "ACTIVE" and p["link_layer"] == "Ethernet", p
if gidx:
    assert p["roce_v2_ipv4_gid_index"] == int(gidx), (p["roce_v2_ipv4_gid_index"], gidx)
assert j["regcache"]["monitor"] in ("kmod", "uffd", "none")
# rxe has windows, which do not enforce their bounds: auto is exact
assert d["caps"]["remote_keys"] == {"mode": "exact", "from_environment": False, "device_windows": "bounds not enforced"}, d["caps"]["remote_keys"]
EOF
	then
		rc_ok "rdmaxfer-info: ODP per kernel ($RC_KERNEL), no DM, no dma-buf, RoCE v2 IPv4 GID"
	else
		rc_fail "rdmaxfer-info: ODP per kernel ($RC_KERNEL), no DM, no dma-buf, RoCE v2 IPv4 GID"
	fi
else
	cat "$OUT/info.err"
	rc_fail "rdmaxfer-info --json parses"
fi
# with regcache.ko loaded the cache would use it
if [ -n "${RC_KMOD:-}" ] && [ -f "$RC_KMOD" ] && insmod "$RC_KMOD" 2>/dev/null; then
	m=$(timeout 60 "$INFO" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["regcache"]["monitor"])')
	rmmod regcache 2>/dev/null
	if [ "$m" = kmod ]; then
		rc_ok "rdmaxfer-info: monitor kmod with regcache.ko loaded"
	else
		rc_fail "rdmaxfer-info: monitor kmod with regcache.ko loaded" "got '$m'"
	fi
else
	rc_skip "rdmaxfer-info: monitor kmod with regcache.ko loaded" "regcache.ko did not load"
fi
# the weakening mode, chosen by the environment, is visible: the line,
# and librdmaxfer's notice once on standard error
if RDMAXFER_CACHE_RKEYS=1 timeout 60 "$INFO" -d "$RXE_DEV" >"$OUT/info-ck.txt" 2>"$OUT/info-ck.err" &&
	grep -q "remote keys: *cached (forced by RDMAXFER_CACHE_RKEYS=1)" "$OUT/info-ck.txt" &&
	[ "$(grep -c '^librdmaxfer: remote keys cached (forced by RDMAXFER_CACHE_RKEYS=1)' "$OUT/info-ck.err")" = 1 ]; then
	rc_ok "rdmaxfer-info: RDMAXFER_CACHE_RKEYS=1 shown and said once"
else
	cat "$OUT/info-ck.txt" "$OUT/info-ck.err"
	rc_fail "rdmaxfer-info: RDMAXFER_CACHE_RKEYS=1 shown and said once"
fi
# a mode forced by RDMAXFER_RKEY_MODE is shown as such
if RDMAXFER_RKEY_MODE=window timeout 60 "$INFO" -d "$RXE_DEV" >"$OUT/info-mw.txt" 2>&1 &&
	grep -q "remote keys: *window (RDMAXFER_RKEY_MODE=window)" "$OUT/info-mw.txt"; then
	rc_ok "rdmaxfer-info: RDMAXFER_RKEY_MODE=window shown"
else
	cat "$OUT/info-mw.txt"
	rc_fail "rdmaxfer-info: RDMAXFER_RKEY_MODE=window shown"
fi
expect_fail "rdmaxfer-info: unknown device" 30 "no RDMA device named" "$INFO" -d nosuchdev
expect_fail "rdmaxfer-info: bad option" 10 "unrecognized" "$INFO" --frob
