#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-compare.sh: rdmaxfer-bench against perftest on one RDMA device,
# server and client on this machine (loopback through the device), plus
# the registration tables.  Runs inside the QEMU guest (through
# tests/vm/suites/bench-compare.sh, started by scripts/bench-compare-host.sh)
# or directly on a machine with an RDMA device.
#
# Under QEMU TCG single runs are noisy (one in 5-8 is 20-65 % off), so
# both tools run the same sizes interleaved (the order alternates per
# repetition), client and server pinned to different CPUs, and the table
# compares medians of the repetitions.  Only the ratios mean something.
#
#   bench-compare.sh --bench PATH --device DEV --addr IPV4 --out DIR
#                    [--gid N] [--scale quick|full] [--kernel NAME]
#
# Writes DIR/raw.csv (every run), DIR/reg.txt, DIR/nixl*.txt and
# DIR/compare.txt (the tables), and prints compare.txt at the end.
set -u

bench=
dev=
addr=
gid=
out=
scale=full
kernel=$(uname -r)
while [ $# -gt 0 ]; do
	case $1 in
	--bench) bench=$2; shift 2 ;;
	--device) dev=$2; shift 2 ;;
	--addr) addr=$2; shift 2 ;;
	--gid) gid=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	*) echo "bench-compare: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [ -z "$bench" ] || [ -z "$dev" ] || [ -z "$addr" ] || [ -z "$out" ]; then
	echo "usage: bench-compare.sh --bench PATH --device DEV --addr IPV4 --out DIR [--gid N] [--scale quick|full]" >&2
	exit 2
fi
for t in ib_write_bw ib_read_bw ib_write_lat python3 taskset timeout; do
	command -v $t >/dev/null 2>&1 || {
		echo "bench-compare: $t not found (apt-get install perftest python3 util-linux coreutils)" >&2
		exit 2
	}
done
mkdir -p "$out" || exit 1
raw=$out/raw.csv
log=$out/runs.log
: >"$log"
echo "kernel,tool,test,bytes,rep,value" >"$raw"
gidopt=${gid:+-x $gid}
ncpu=$(nproc 2>/dev/null || echo 1)
if [ "$ncpu" -ge 2 ]; then
	cpu_s=0
	cpu_c=1
else
	cpu_s=0
	cpu_c=0
fi

# repetitions (medians) per size: small sizes are noisier (VM-FACTS.md)
case $scale in
quick) rep_small=3 rep_large=2 rep_lat=2 nixl_iters=3 ;;
*) rep_small=5 rep_large=3 rep_lat=3 nixl_iters=4 ;;
esac
bw_sizes="64 4096 65536 1048576"
lat_sizes="2 4096"
# iterations per run: about half a second of data at rxe-under-TCG speed
bw_iters()
{
	case $1 in
	64) echo 5000 ;;
	4096) echo 5000 ;;
	65536) echo 500 ;;
	*) echo 50 ;;
	esac
}
reps_for()
{
	if [ "$1" -le 4096 ]; then echo "$rep_small"; else echo "$rep_large"; fi
}

port=19000
t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0)); }

# run_pair TOOL TEST SIZE REP: one server + client run; appends the value
# (MiB/s average for bw, t_typical usec for lat) to raw.csv.
run_pair()
{
	tool=$1 test=$2 size=$3 rep=$4
	port=$((port + 1))
	case $test in
	*_bw) n=$(bw_iters "$size") ;;
	*) n=1000 ;;
	esac
	if [ "$tool" = perftest ]; then
		srv="ib_$test -d $dev -i 1 $gidopt -s $size -n $n -F -p $port"
		cli="$srv $addr"
	else
		# ours1: one doorbell per request (no RDMAXFER_POST_MORE batching)
		batch=
		[ "$tool" = ours1 ] && batch="--batch 1"
		srv="$bench -d $dev $gidopt -s $size -n $n -p $port --csv $batch $test"
		cli="$srv $addr"
	fi
	try=0
	while :; do
		timeout 120 taskset -c "$cpu_s" $srv >"$out/srv.out" 2>&1 &
		spid=$!
		sleep 1
		timeout 120 taskset -c "$cpu_c" $cli >"$out/cli.out" 2>&1
		crc=$?
		[ "$crc" != 0 ] && kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		if [ "$tool" = perftest ]; then
			# the row after the column header: bytes iterations ...
			row=$(awk -v s="$size" '$1 == s && NF >= 5 { print; exit }' "$out/cli.out")
			case $test in
			*_bw) val=$(echo "$row" | awk '{ print $4 }') ;;
			*) val=$(echo "$row" | awk '{ print $5 }') ;;
			esac
		else
			row=$(awk -F, -v s="$size" '$1 == s { print; exit }' "$out/cli.out")
			case $test in
			*_bw) val=$(echo "$row" | awk -F, '{ print $4 }') ;;
			*) val=$(echo "$row" | awk -F, '{ print $5 }') ;;
			esac
		fi
		# a zero (perftest prints 0.00 when its timing failed) is a failure
		if [ "$crc" = 0 ] && [ -n "$val" ] &&
		   awk -v v="$val" 'BEGIN { exit !(v + 0 > 0) }'; then
			break
		fi
		try=$((try + 1))
		{ echo "!! $tool $test $size rep $rep failed (exit $crc), try $try"; cat "$out/cli.out" "$out/srv.out"; } >>"$log"
		if [ $try -ge 3 ]; then
			val=
			break
		fi
		port=$((port + 1))
	done
	echo "$tool $test $size rep $rep: ${val:-FAILED} (t=$(elapsed) s)" | tee -a "$log"
	[ -n "$val" ] && echo "$kernel,$tool,$test,$size,$rep,$val" >>"$raw"
	return 0
}

echo "bench-compare: $dev $addr, kernel $kernel, scale $scale, $ncpu CPUs"
ibv_devinfo -d "$dev" >"$out/devinfo.txt" 2>&1

# --- bandwidth, interleaved ----------------------------------------------
maxrep=$rep_small
[ "$rep_large" -gt "$maxrep" ] && maxrep=$rep_large
rep=1
while [ $rep -le "$maxrep" ]; do
	for test in write_bw read_bw; do
		for size in $bw_sizes; do
			[ $rep -le "$(reps_for "$size")" ] || continue
			if [ $((rep % 2)) = 1 ]; then
				run_pair ours $test "$size" $rep
				run_pair perftest $test "$size" $rep
			else
				run_pair perftest $test "$size" $rep
				run_pair ours $test "$size" $rep
			fi
			# what doorbell batching buys, where it matters
			[ "$size" -le 4096 ] && run_pair ours1 $test "$size" $rep
		done
	done
	rep=$((rep + 1))
done

# --- latency ---------------------------------------------------------
rep=1
while [ $rep -le "$rep_lat" ]; do
	for size in $lat_sizes; do
		if [ $((rep % 2)) = 1 ]; then
			run_pair ours write_lat "$size" $rep
			run_pair perftest write_lat "$size" $rep
		else
			run_pair perftest write_lat "$size" $rep
			run_pair ours write_lat "$size" $rep
		fi
	done
	rep=$((rep + 1))
done

# --- registration: raw vs cache hit ------------------------------------
echo "reg table (t=$(elapsed) s)"
timeout 300 taskset -c "$cpu_c" "$bench" -d "$dev" -a -n 20 reg >"$out/reg.txt" 2>&1 ||
	echo "reg failed: $(tail -n 1 "$out/reg.txt")"
timeout 300 taskset -c "$cpu_c" "$bench" -d "$dev" -a -n 20 --csv reg >"$out/reg.csv" 2>/dev/null

# --- the nixl scenario: registration share, cache off vs on ------------
# total / chunks: the requested 512 MiB in 128 chunks moves ~13 s per
# iteration at rxe-under-TCG speed, so the guest runs 256 MiB (3 GiB
# guest) or 128 MiB; MemAvailable decides (source and target buffer both
# live in this machine).
avail_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
if [ "${avail_kb:-0}" -gt 3000000 ]; then total=512M
elif [ "${avail_kb:-0}" -gt 1500000 ]; then total=256M
else total=128M; fi
[ "$scale" = quick ] && total=64M
nixl_run()
{
	name=$1
	shift
	port=$((port + 1))
	echo "nixl $name: $* (t=$(elapsed) s)"
	timeout 900 taskset -c "$cpu_s" "$bench" -d "$dev" $gidopt -p $port nixl >"$out/nixl-$name.srv" 2>&1 &
	spid=$!
	# the client is refused if it comes before the server listens
	i=0
	while ! grep -q 'waiting for a client' "$out/nixl-$name.srv" 2>/dev/null &&
	      [ $i -lt 300 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	timeout 900 taskset -c "$cpu_c" "$bench" -d "$dev" $gidopt -p $port --validate "$@" nixl "$addr" >"$out/nixl-$name.txt" 2>&1 ||
		echo "nixl $name failed: $(tail -n 2 "$out/nixl-$name.txt")"
	wait "$spid" 2>/dev/null
	# csv copy of the rows for the table
	awk '$1 == "off" || $1 == "on" { OFS=","; print $1,$2,$3,$4,$5,$6,$7,$8,$9 }' \
		"$out/nixl-$name.txt" >"$out/nixl-$name.csv"
}
nixl_run seed --total "$total" --chunks 128 -n "$nixl_iters" --cache both
# many small chunks (4 KiB, paged KV-cache blocks): registration dominates
nixl_run small --total 8M --chunks 2048 -n "$nixl_iters" --cache both

# --- tables -----------------------------------------------------------
python3 - "$out" "$kernel" "$total" <<'EOF' | tee "$out/compare.txt"
import csv, os, statistics, sys
out, kernel, total = sys.argv[1], sys.argv[2], sys.argv[3]
rows = list(csv.DictReader(open(os.path.join(out, "raw.csv"))))
def med(tool, test, size):
    v = [float(r["value"]) for r in rows
         if r["tool"] == tool and r["test"] == test and int(r["bytes"]) == size]
    return (statistics.median(v), len(v)) if v else (None, 0)
print(f"rdmaxfer-bench vs perftest on {kernel} (medians; same boot, interleaved)")
def paired(test, size):
    # ratio of the two runs of one repetition (adjacent in time, same load)
    d = {(r["tool"], int(r["rep"])): float(r["value"]) for r in rows
         if r["test"] == test and int(r["bytes"]) == size}
    v = [d[("ours", k)] / d[("perftest", k)] for k in range(1, 100)
         if ("ours", k) in d and ("perftest", k) in d and d[("perftest", k)] > 0]
    return statistics.median(v) if v else None
print(f"{'test':<10} {'bytes':>8} {'ours':>10} {'perftest':>10} {'ours/perftest':>14} {'paired':>7} {'runs':>5} {'batch1/pt':>9}  goal")
for test, sizes, unit, goal in (("write_bw", (64, 4096, 65536, 1048576), "MiB/s", ">= 1.00"),
                                ("read_bw", (64, 4096, 65536, 1048576), "MiB/s", ">= 1.00"),
                                ("write_lat", (2, 4096), "usec", "<= 1.05")):
    for s in sizes:
        a, na = med("ours", test, s)
        b, nb = med("perftest", test, s)
        r = f"{a / b:.3f}" if a and b else "n/a"
        fa = f"{a:.2f}" if a is not None else "FAILED"
        fb = f"{b:.2f}" if b is not None else "FAILED"
        p = paired(test, s)
        fp = f"{p:.3f}" if p else "n/a"
        c, nc = med("ours1", test, s)
        fc = f"{c / b:.3f}" if c and b else "-"
        print(f"{test:<10} {s:>8} {fa:>10} {fb:>10} {r:>14} {fp:>7} {min(na, nb):>5} {fc:>9}  {goal} ({unit}{', t_typical' if unit == 'usec' else ''})")
print("ours/perftest: ratio of the medians; paired: median of the per-repetition ratios")
print("batch1/pt: rdmaxfer-bench --batch 1 (one doorbell per request, as perftest posts) / perftest")
print()
print("registration: raw ibv_reg_mr+ibv_dereg_mr vs cache hit (median usec)")
try:
    reg = list(csv.DictReader(open(os.path.join(out, "reg.csv"))))
    print(f"{'bytes':>10} {'raw':>10} {'hit':>8} {'miss':>10} {'raw/hit':>8}  ODP")
    for r in reg:
        odp = r.get("odp_reg_usec") or "n/a"
        print(f"{int(r['bytes']):>10} {float(r['raw_reg_usec']):>10.1f} {float(r['cache_hit_usec']):>8.2f} "
              f"{float(r['cache_miss_usec']):>10.1f} {float(r['speedup']):>8.0f}  {odp}")
except Exception as e:
    print("  (no reg table:", e, ")")
for line in open(os.path.join(out, "reg.txt")):
    if line.startswith("# ODP"):
        print(line.rstrip())
print()
print("nixl scenario: registration share of each iteration, cache off (problem) vs on (cure)")
print(f"{'scenario':<28} {'cache':<6} {'phase':<7} {'reg ms':>9} {'xfer ms':>10} {'reg share %':>12}")
for name, label in (("seed", f"{total} in 128 chunks"), ("small", "8M in 2048 x 4 KiB")):
    p = os.path.join(out, f"nixl-{name}.csv")
    if not os.path.exists(p) or not os.path.getsize(p):
        print(f"{label:<28} FAILED")
        continue
    for r in csv.reader(open(p)):
        print(f"{label:<28} {r[0]:<6} {r[1]:<7} {float(r[5]):>9.2f} {float(r[6]):>10.2f} {float(r[7]):>12.2f}")
EOF
echo "bench-compare: done in $(elapsed) s; results in $out"
