#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-compare.sh: rdmaxfer-bench against perftest and ucx_perftest on
# one RDMA device, server and client on this machine (loopback through the
# device), like for like, plus the registration tables.  Runs inside the
# QEMU guest (through tests/vm/suites/bench-compare.sh, started by
# scripts/bench-compare-host.sh) or directly on a machine with an RDMA
# device.
#
# Like for like.  rdmaxfer-bench's default reposts up to 16 requests per
# doorbell; perftest's default posts one WR per doorbell.  Comparing the
# two defaults measures batching, which perftest offers too (--post_list).
# So every row pairs two configurations that post and signal alike:
#
#   ours --batch 16   vs  ib_*_bw -l 16   16 WRs per doorbell, one CQE per
#                                         doorbell (perftest sets cq_mod to
#                                         the post list)
#   ours --batch 1    vs  ib_*_bw -Q 1    one WR per doorbell, one CQE per WR
#   ours --batch 1    vs  ib_*_bw         perftest's default: one WR per
#                                         doorbell, one CQE per 100 WRs
#                                         (cq_mod 100); librdmaxfer signals
#                                         the last WR of every doorbell, so
#                                         this pair differs in signalling
#                                         and the -Q 1 row is the matched one
#   ours (default)    vs  ucx_perftest    UCX's own defaults (ucp_put_bw,
#                                         ucp_get, ucp_put_lat) on rc_v
#   ours write_lat    vs  ib_write_lat    ping-pong, t_typical (median)
#
# Under QEMU TCG single runs are noisy (one in 5-8 is 20-65 % off), so all
# sides of a row run in the same boot, interleaved (the order rotates per
# repetition), client and server pinned to different CPUs.  The table
# gives each side's median with its range, the median of the per-
# repetition ratios (the two runs of one repetition are adjacent in time)
# with their quartiles, and a verdict: "parity" when the median ratio is
# within +-10 % of 1.0, "ahead"/"behind" only when it is outside that band
# AND the quartiles of the ratios lie on the same side of 1.0, otherwise
# "unresolved".  "stable@" is the number of repetitions after which the
# verdict no longer changed: how many this row needed.
#
#   bench-compare.sh --bench PATH --device DEV --addr IPV4 --out DIR
#                    [--gid N] [--scale quick|standard|full] [--reps N]
#                    [--extras yes|no] [--kernel NAME] [--rows LIST]
#   bench-compare.sh --table DIR      (re-render DIR/raw.csv, no runs)
#
# Scales: quick (one repetition and small NIXL runs: to see that every
# part runs, its verdicts not worth reading), standard (the default: 4
# repetitions) and full (7, and the plot's curves from 3).
#
# Writes DIR/raw.csv (every run), DIR/commands.txt (the exact command
# lines), DIR/reg.txt, DIR/nixl*.txt, DIR/compare.txt (the tables) and
# DIR/write_bw.png (rdmaxfer-bench --compare --plot: ours and perftest's
# write bandwidth against the message size, 2 B to 8 MiB), and prints
# compare.txt at the end.  Progress goes to stdout as it runs, one line
# per row and repetition and per extra step, each starting with
# "bench-compare: [K/N]": the step, the time elapsed and an estimate of
# the time left.  --rows TEST:BYTES[,TEST:BYTES...]
# (for example read_bw:4096,read_bw:64) runs only those rows of the
# like-for-like table, every side of each: to give a row in doubt more
# repetitions without the hour the whole table would take.
set -u

bench=
dev=
addr=
gid=
out=
scale=standard
reps=
extras=yes
rows=
table_only=
kernel=$(uname -r)
here=$(cd "$(dirname "$0")" && pwd)
while [ $# -gt 0 ]; do
	case $1 in
	--bench) bench=$2; shift 2 ;;
	--device) dev=$2; shift 2 ;;
	--addr) addr=$2; shift 2 ;;
	--gid) gid=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--extras) extras=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--rows) rows=$2; shift 2 ;;
	--table) table_only=1; out=$2; shift 2 ;;
	*) echo "bench-compare: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [ -n "$table_only" ]; then
	[ -s "$out/raw.csv" ] || {
		echo "bench-compare: no $out/raw.csv to render" >&2
		exit 2
	}
	exec python3 "$here/bench-compare-table.py" "$out"
fi
if [ -z "$bench" ] || [ -z "$dev" ] || [ -z "$addr" ] || [ -z "$out" ]; then
	echo "usage: bench-compare.sh --bench PATH --device DEV --addr IPV4 --out DIR [--gid N] [--scale quick|standard|full] [--reps N] [--extras yes|no] [--rows TEST:BYTES,...]" >&2
	exit 2
fi
case $scale in
quick|standard|full) ;;
*) echo "bench-compare: --scale is quick, standard or full, not '$scale'" >&2; exit 2 ;;
esac
for r in $(echo "$rows" | tr ',' ' '); do
	case $r in
	write_bw:64|write_bw:4096|write_bw:65536|write_bw:1048576) ;;
	read_bw:64|read_bw:4096|read_bw:65536|read_bw:1048576) ;;
	write_lat:2|write_lat:4096) ;;
	*) echo "bench-compare: --rows: '$r' is not a row of the table (write_bw or read_bw:64|4096|65536|1048576, write_lat:2|4096)" >&2; exit 2 ;;
	esac
done
# want TEST SIZE: is the row in --rows (or --rows not given)?
want()
{
	[ -z "$rows" ] && return 0
	case ",$rows," in
	*",$1:$2,"*) return 0 ;;
	esac
	return 1
}
case ${reps:-5} in
''|*[!0-9]*|0) echo "bench-compare: --reps needs a positive number, not '$reps'" >&2; exit 2 ;;
esac
for t in ib_write_bw ib_read_bw ib_write_lat python3 taskset timeout; do
	command -v $t >/dev/null 2>&1 || {
		echo "bench-compare: $t not found (apt-get install perftest python3 util-linux coreutils)" >&2
		exit 2
	}
done
# UCX is optional: Debian 12 packages it (ucx-utils), but a machine
# without it still gets the perftest rows.
have_ucx=
if command -v ucx_perftest >/dev/null 2>&1; then
	have_ucx=1
else
	echo "bench-compare: ucx_perftest not found (apt-get install ucx-utils): no UCX rows"
fi
mkdir -p "$out" || exit 1
raw=$out/raw.csv
log=$out/runs.log
cmds=$out/commands.txt
: >"$log"
: >"$cmds"
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

# Repetitions: every side of every row runs this many times.  VM-FACTS.md
# measured 8-23 per side for a +-5 % ratio at 64 B-4 KiB under TCG; the
# parity band here is +-10 %, and stable@ in the table says how many each
# row needed.  plot_reps: the --compare repetitions behind the plot.
case $scale in
quick) : "${reps:=1}"; nixl_iters=3; plot_reps=1 ;;
standard) : "${reps:=4}"; nixl_iters=4; plot_reps=1 ;;
*) : "${reps:=7}"; nixl_iters=4; plot_reps=3 ;;
esac
bw_sizes="64 4096 65536 1048576"
lat_sizes="2 4096"
# Iterations per run: a multiple of 16 (perftest -l 16 requires it), about
# a second of data at rxe-under-TCG speed.
bw_iters()
{
	case $1 in
	64) echo 4096 ;;
	4096) echo 2048 ;;
	65536) echo 256 ;;
	*) echo 32 ;;
	esac
}
lat_iters=1000

port=19000
t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0)); }

# UCX on soft-RoCE: the rxe device, RC over verbs, and no DGID check (rxe's
# loopback GID is not what UCX's UD check expects).
ucx_env="UCX_NET_DEVICES=$dev:1 UCX_TLS=rc_v UCX_UD_VERBS_ETH_DGID_CHECK=n"

# side_cmd TOOL TEST SIZE N: the server command line of one side (the
# client's is the same plus the address, or "ADDR" first for UCX).
side_cmd()
{
	tool=$1 test=$2 size=$3 n=$4
	case $tool in
	pt_l16) echo "ib_$test -d $dev -i 1 $gidopt -s $size -n $n -F -l 16" ;;
	pt_q1) echo "ib_$test -d $dev -i 1 $gidopt -s $size -n $n -F -Q 1" ;;
	pt) echo "ib_$test -d $dev -i 1 $gidopt -s $size -n $n -F" ;;
	ours16) echo "$bench -d $dev $gidopt -s $size -n $n --csv --batch 16 $test" ;;
	ours1) echo "$bench -d $dev $gidopt -s $size -n $n --csv --batch 1 $test" ;;
	ours) echo "$bench -d $dev $gidopt -s $size -n $n --csv $test" ;;
	ucx)
		case $test in
		write_bw) t=ucp_put_bw ;;
		read_bw) t=ucp_get ;;
		*) t=ucp_put_lat ;;
		esac
		# warm-up: a tenth of the run (UCX's default, 10000
		# iterations, is minutes of 1 MiB transfers under TCG)
		case $n in
		*[!0-9]*) w="$n/10" ;;
		*) w=$((n / 10)) ;;
		esac
		echo "ucx_perftest -t $t -s $size -n $n -w $w" ;;
	esac
}

# wait_ready TOOL FILE PORT: until the server can take a client (at most
# 20 s).  rdmaxfer-bench says so; perftest and UCX listen on a TCP port
# for their out-of-band exchange.
wait_ready()
{
	i=0
	while [ $i -lt 100 ]; do
		case $1 in
		ours*) grep -q 'waiting for a client' "$2" 2>/dev/null && return 0 ;;
		*) ss -Hltn "sport = :$3" 2>/dev/null | grep -q . && return 0 ;;
		esac
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

# run_pair TOOL TEST SIZE REP: one server + client run; appends the value
# (MiB/s average for bw, t_typical usec for lat) to raw.csv.
run_pair()
{
	tool=$1 test=$2 size=$3 rep=$4
	case $test in
	*_bw) n=$(bw_iters "$size") ;;
	*) n=$lat_iters ;;
	esac
	srv=$(side_cmd "$tool" "$test" "$size" "$n")
	# the command lines for the table, with SIZE, N and PORT as words
	if ! grep -q "^$tool $test " "$cmds"; then
		g=$(side_cmd "$tool" "$test" SIZE N)
		case $tool in
		ucx)
			printf '%s %s server: %s\n%s %s client: %s\n' \
				"$tool" "$test" "taskset -c $cpu_s env $ucx_env $g -p PORT" \
				"$tool" "$test" "taskset -c $cpu_c env $ucx_env ucx_perftest $addr ${g#ucx_perftest } -p PORT" ;;
		*)
			printf '%s %s server: %s\n%s %s client: %s\n' \
				"$tool" "$test" "taskset -c $cpu_s $g -p PORT" \
				"$tool" "$test" "taskset -c $cpu_c $g -p PORT $addr" ;;
		esac >>"$cmds"
	fi
	try=0
	while :; do
		port=$((port + 1))
		case $tool in
		ucx)
			s="env $ucx_env $srv -p $port"
			c="env $ucx_env ucx_perftest $addr ${srv#ucx_perftest } -p $port"
			;;
		*)
			s="$srv -p $port"
			c="$srv -p $port $addr"
			;;
		esac
		# $s and $c are command lines: split into words on purpose
		# shellcheck disable=SC2086
		timeout 120 taskset -c "$cpu_s" $s >"$out/srv.out" 2>&1 &
		spid=$!
		wait_ready "$tool" "$out/srv.out" "$port"
		# shellcheck disable=SC2086
		timeout 120 taskset -c "$cpu_c" $c >"$out/cli.out" 2>&1
		crc=$?
		[ "$crc" != 0 ] && kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		case $tool in
		pt*)
			# the row after the column header: bytes iterations ...
			row=$(awk -v s="$size" '$1 == s && NF >= 5 { print; exit }' "$out/cli.out")
			case $test in
			*_bw) val=$(echo "$row" | awk '{ print $4 }') ;;
			*) val=$(echo "$row" | awk '{ print $5 }') ;;
			esac
			;;
		ucx)
			# Final: iters, lat 50%ile, avg, overall; MB/s avg,
			# overall; msg/s avg, overall (MB = 2^20 in UCX)
			row=$(awk '$1 == "Final:" { print; exit }' "$out/cli.out")
			case $test in
			*_bw) val=$(echo "$row" | awk '{ print $7 }') ;;
			*) val=$(echo "$row" | awk '{ print $3 }') ;;
			esac
			;;
		*)
			row=$(awk -F, -v s="$size" '$1 == s { print; exit }' "$out/cli.out")
			case $test in
			*_bw) val=$(echo "$row" | awk -F, '{ print $4 }') ;;
			*) val=$(echo "$row" | awk -F, '{ print $5 }') ;;
			esac
			;;
		esac
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
	done
	echo "$tool $test $size rep $rep: ${val:-FAILED} (t=$(elapsed) s)" | tee -a "$log"
	[ -n "$val" ] && echo "$kernel,$tool,$test,$size,$rep,$val" >>"$raw"
	return 0
}

# run_rotated TEST SIZE REP TOOL...: each tool once, the order rotated by
# REP so no side always runs first (or right after another one).
run_rotated()
{
	test=$1 size=$2 r=$3
	shift 3
	k=$(((r - 1) % $#))
	while [ "$k" -gt 0 ]; do
		first=$1
		shift
		set -- "$@" "$first"
		k=$((k - 1))
	done
	for tool in "$@"; do
		run_pair "$tool" "$test" "$size" "$r"
	done
}

echo "bench-compare: $dev $addr, kernel $kernel, scale $scale, $reps repetition(s), $ncpu CPUs${have_ucx:+, with UCX}${rows:+, rows $rows}"
ibv_devinfo -d "$dev" >"$out/devinfo.txt" 2>&1
{
	echo "perftest: $(dpkg-query -W -f '${Version}' perftest 2>/dev/null || echo unknown)"
	[ -n "$have_ucx" ] && ucx_perftest -h >/dev/null 2>&1 &&
		echo "ucx: $(dpkg-query -W -f '${Version}' ucx-utils 2>/dev/null || echo unknown), env $ucx_env"
} >"$out/versions.txt"

# The NIXL scenario's size.  The requested 512 MiB in 128 chunks moves
# ~13 s per iteration at rxe-under-TCG speed, so the guest runs 256 MiB
# (3 GiB guest) or 128 MiB; MemAvailable decides (source and target
# buffer both live in this machine).
avail_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
if [ "${avail_kb:-0}" -gt 3000000 ]; then total=512M
elif [ "${avail_kb:-0}" -gt 1500000 ]; then total=256M
else total=128M; fi
[ "$scale" = quick ] && total=64M

# --- progress -----------------------------------------------------------
# Each step (one row at one repetition, every side of it; each extra) has
# a cost: its seconds on the 2-core machine, in tenths, measured with a
# 6.1 guest at load 2 (a like-for-like run 21 on average, a registration
# table 20, the two NIXL runs at quick scale 110 and 40, the plot 330).
# The estimate of what is left is the cost of the steps left, scaled by
# the elapsed time over the cost of the steps done: on a loaded machine
# it grows with the slowness seen so far.
RUN_COST=21
REG_COST=20
# the seed NIXL run: 11 s at 64M and 3 iterations, both caches
seed_cost=$((110 * ${total%M} * (nixl_iters + 1) / (64 * 4)))
small_cost=$((40 * (nixl_iters + 1) / 4))
# the plot: 2 B to 8 MiB, 32 writes each, both tools, per repetition
PLOT_COST=330
steps_total=0 cost_total=0 steps_done=0 cost_done=0

# fmt_secs S: "45s", "3m05s"
fmt_secs()
{
	if [ "$1" -lt 60 ]; then
		echo "${1}s"
	else
		printf '%dm%02ds\n' $(($1 / 60)) $(($1 % 60))
	fi
}

# step_done COST WHAT: one step of the plan is done; print the line.
step_done()
{
	steps_done=$((steps_done + 1))
	cost_done=$((cost_done + $1))
	e=$(elapsed)
	left=$(((cost_total - cost_done) * e / (cost_done > 0 ? cost_done : 1)))
	echo "bench-compare: [$steps_done/$steps_total] $2 | $(fmt_secs "$e") elapsed, about $(fmt_secs "$left") left"
}

# row_ratio TEST SIZE REP: ours over its matched peer in that repetition
# (--batch 16 vs perftest -l 16; latency: perftest over ours), or "-"
row_ratio()
{
	awk -F, -v t="$1" -v s="$2" -v r="$3" '
		$3 == t && $4 == s && $5 == r { v[$2] = $6 }
		END {
			if (t ~ /_bw$/) { a = v["ours16"]; b = v["pt_l16"] }
			else { a = v["pt"]; b = v["ours"] }
			if (a > 0 && b > 0) printf "%.2f", a / b
			else printf "-"
		}' "$raw"
}

# each_row FN REP: FN TEST SIZE REP TOOL... for every row of the table
# (those of --rows), in the table's order.
each_row()
{
	for test in write_bw read_bw; do
		for size in $bw_sizes; do
			want "$test" "$size" || continue
			# -Q 1 matters where messages are small; above 4 KiB
			# a CQE per message is noise against the data
			q1=
			[ "$size" -le 4096 ] && q1=1
			"$1" "$test" "$size" "$2" ours16 pt_l16 ours1 pt \
				${q1:+pt_q1} ${have_ucx:+ucx}
		done
	done
	for size in $lat_sizes; do
		want write_lat "$size" || continue
		"$1" write_lat "$size" "$2" ours pt ${have_ucx:+ucx}
	done
}
plan_row()
{
	shift 3
	steps_total=$((steps_total + 1))
	cost_total=$((cost_total + $# * RUN_COST))
}
run_row()
{
	run_rotated "$@"
	case $1 in
	*_bw) what="ours/perftest -l 16" ;;
	*) what="ours/perftest" ;;
	esac
	step_done $((($# - 3) * RUN_COST)) "$1 $2 B, repetition $3 of $reps ($(($# - 3)) sides): $what $(row_ratio "$1" "$2" "$3")"
}
rep=1
while [ $rep -le "$reps" ]; do
	each_row plan_row $rep
	rep=$((rep + 1))
done
if [ "$extras" = yes ]; then
	steps_total=$((steps_total + 4))
	cost_total=$((cost_total + REG_COST + seed_cost + small_cost + plot_reps * PLOT_COST))
fi
echo "bench-compare: $steps_total steps; the estimate of what is left is first a guess, then follows the speed seen"

# --- like for like, interleaved --------------------------------------
rep=1
while [ $rep -le "$reps" ]; do
	each_row run_row $rep
	rep=$((rep + 1))
done

if [ "$extras" != yes ]; then
	python3 "$here/bench-compare-table.py" "$out" | tee "$out/compare.txt"
	echo "bench-compare: done in $(fmt_secs "$(elapsed)"); results in $out"
	exit 0
fi

# --- registration: raw vs cache hit ------------------------------------
echo "reg table (t=$(elapsed) s)"
timeout 300 taskset -c "$cpu_c" "$bench" -d "$dev" -a -n 20 reg >"$out/reg.txt" 2>&1 ||
	echo "reg failed: $(tail -n 1 "$out/reg.txt")"
timeout 300 taskset -c "$cpu_c" "$bench" -d "$dev" -a -n 20 --csv reg >"$out/reg.csv" 2>/dev/null
step_done $REG_COST "registration table (raw ibv_reg_mr vs cache hit)"

# --- the nixl scenario: registration share, cache off vs on ------------
nixl_run()
{
	name=$1
	shift
	port=$((port + 1))
	echo "nixl $name: $* (t=$(elapsed) s)"
	timeout 900 taskset -c "$cpu_s" "$bench" -d "$dev" ${gid:+-x "$gid"} -p $port nixl >"$out/nixl-$name.srv" 2>&1 &
	spid=$!
	# the client is refused if it comes before the server listens
	i=0
	while ! grep -q 'waiting for a client' "$out/nixl-$name.srv" 2>/dev/null &&
	      [ $i -lt 300 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	timeout 900 taskset -c "$cpu_c" "$bench" -d "$dev" ${gid:+-x "$gid"} -p $port --validate "$@" nixl "$addr" >"$out/nixl-$name.txt" 2>&1 ||
		echo "nixl $name failed: $(tail -n 2 "$out/nixl-$name.txt")"
	wait "$spid" 2>/dev/null
	# csv copy of the rows for the table
	awk '$1 == "off" || $1 == "on" { OFS=","; print $1,$2,$3,$4,$5,$6,$7,$8,$9 }' \
		"$out/nixl-$name.txt" >"$out/nixl-$name.csv"
}
nixl_run seed --total "$total" --chunks 128 -n "$nixl_iters" --cache both
step_done "$seed_cost" "NIXL scenario, $total in 128 chunks, cache off and on"
# many small chunks (4 KiB, paged KV-cache blocks): registration dominates
nixl_run small --total 8M --chunks 2048 -n "$nixl_iters" --cache both
step_done "$small_cost" "NIXL scenario, 8M in 2048 chunks of 4 KiB, cache off and on"

# --- the plot: rdmaxfer-bench --compare --plot ---------------------------
# Ours (--batch 16) and perftest (-l 16) interleaved, every size from 2 B
# to 8 MiB, 32 writes each (a curve, not a table: the table above is the
# measurement), drawn by gnuplot into write_bw.png.  Its output, with
# the command lines and a table of its own, is in plot.txt.
port=$((port + 2))
echo "plot: --compare --reps $plot_reps -a -n 32 --plot (t=$(elapsed) s)"
rm -f "$out/write_bw.png"
timeout 1800 "$bench" -d "$dev" ${gid:+-x "$gid"} -p $port --compare \
	--reps "$plot_reps" --batch 16 -a -n 32 --plot "$out/write_bw.png" \
	write_bw "$addr" >"$out/plot.txt" 2>&1 ||
	echo "plot failed: $(tail -n 2 "$out/plot.txt")"
port=$((port + 2 * plot_reps))
if [ -s "$out/write_bw.png" ]; then
	step_done $((plot_reps * PLOT_COST)) "plot of write_bw against the size: $out/write_bw.png"
else
	step_done $((plot_reps * PLOT_COST)) "plot of write_bw: FAILED (see $out/plot.txt)"
fi

# --- tables -----------------------------------------------------------
RC_NIXL_TOTAL=$total python3 "$here/bench-compare-table.py" "$out" | tee "$out/compare.txt"
echo "bench-compare: done in $(fmt_secs "$(elapsed)"); results in $out"
