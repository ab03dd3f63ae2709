#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run-main.sh: the project's main job in one command, on a fresh Debian 12
# machine: install the dependencies, build everything, and run the
# benchmark on a real RDMA device if there is one, else inside a QEMU guest
# on soft-RoCE (rxe).
#
# The benchmark is scripts/bench-compare.sh: rdmaxfer-bench against
# perftest at the same sizes, interleaved, medians; raw registration vs a
# cache hit; and the NIXL scenario (register + transfer every iteration)
# with the cache off and on, which shows the problem and the cure in one
# table.  On a real device it runs on this host over the device's own
# address (loopback); otherwise scripts/bench-compare-host.sh boots a QEMU
# guest per kernel with soft-RoCE and runs it there.
#
# Run it as root, or with sudo (apt-get needs root; without root it skips
# the install).  It reports on the terminal as it goes: each build step
# with its time, then one line per benchmark step (the row, repetition K
# of N, the time elapsed and an estimate of what is left).  It ends with
# the result tables (one per kernel under QEMU), the path of the plot
# (rdmaxfer-bench --compare --plot: write bandwidth against the size, ours
# and perftest's) and a list of where the details are: the raw runs, the
# full output, the guest's console.  Build and benchmark output go to log
# files in BUILD (named as it goes).
#
# Environment: BUILD (build directory, default ./build-main),
# RC_NO_INSTALL=1 (skip apt-get), VM_KERNELS (default "6.1": Debian 12's
# kernel; "6.1 7.3" adds the newest Debian kernel), RC_BENCH_SCALE
# (quick|standard|full, default standard: 4 repetitions, 10-15 minutes
# per kernel under QEMU on the 2-core machine, quiet to loaded; quick: 1,
# about 3 minutes; full: 7), RC_BENCH_REPS, RC_BENCH_EXTRAS and RC_BENCH_ROWS
# (see scripts/bench-compare-host.sh), VM_CACHE (the QEMU harness's
# kernel cache, default BUILD/tests/vm/cache; point it at a shared folder
# to download each kernel once).  The clone and BUILD may live anywhere
# without white space in their paths (/root, /tmp included); Autoconf,
# libtool and Kbuild reject spaces.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build-main}
kernels=${VM_KERNELS:-6.1}
scale=${RC_BENCH_SCALE:-standard}
jobs=$(nproc 2>/dev/null || echo 2)
t_start=$(date +%s)

say() { echo "run-main: $*"; }
# since: the seconds since T (default: the start)
since() { echo $(($(date +%s) - ${1:-$t_start})); }

case $scale in
quick|standard|full) ;;
*) say "RC_BENCH_SCALE is quick, standard or full, not '$scale'" >&2; exit 2 ;;
esac

if [ "${RC_NO_INSTALL:-0}" != 1 ]; then
	if [ "$(id -u)" = 0 ]; then
		say "installing dependencies (scripts/install-deps.sh)"
		"$top/scripts/install-deps.sh"
		say "dependencies installed ($(since) s)"
	else
		say "not root: skipping apt-get (run as root or with sudo to install; RC_NO_INSTALL=1 silences this)"
	fi
fi

# step LOG CMD...: run CMD with its output in LOG; on failure show the
# end of LOG and stop.
step()
{
	step_log=$1
	step_t0=$(date +%s)
	shift
	if ! "$@" >"$step_log" 2>&1; then
		tail -n 30 "$step_log" >&2
		say "FAILED: $* (whole output: $step_log)"
		exit 1
	fi
	say "  done in $(since "$step_t0") s"
}

mkdir -p "$build"
build=$(cd "$build" && pwd)
if [ ! -x "$top/configure" ]; then
	say "autoreconf -fi (output: $build/autoreconf.log)"
	# shellcheck disable=SC2016 # $1 is the inner shell's
	step "$build/autoreconf.log" sh -c 'cd "$1" && autoreconf -fi' sh "$top"
fi
if [ ! -f "$build/config.status" ]; then
	say "configuring in $build (output: $build/configure.log)"
	# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
	step "$build/configure.log" sh -c 'cd "$1" && "$2/configure"' sh "$build" "$top"
fi
say "building (make -j$jobs; output: $build/make.log)"
step "$build/make.log" make -C "$build" -j"$jobs"

results=$build/bench-results
mkdir -p "$results"
log=$results/run-main.log

# A device that is not a software one (rxe, siw) counts as real hardware.
real_dev=
if command -v ibv_devices >/dev/null 2>&1; then
	real_dev=$(ibv_devices 2>/dev/null | awk 'NR > 2 && $1 !~ /^(rxe|siw)/ { print $1; exit }')
fi

run_real_device()
{
	say "RDMA device $real_dev found: benchmarking it on this host"
	ibv_devinfo -d "$real_dev" || true
	# The IPv4 address of the device's network interface: client and
	# server both run here, as perftest's loopback runs do.
	ndev=$(rdma link show 2>/dev/null |
		awk -v d="$real_dev" '$2 ~ "^" d "/" { for (i = 1; i < NF; i++) if ($i == "netdev") { print $(i + 1); exit } }')
	addr=
	[ -n "$ndev" ] && addr=$(ip -4 -o addr show dev "$ndev" 2>/dev/null |
		awk '{ sub("/.*", "", $4); print $4; exit }')
	if [ -z "$addr" ]; then
		say "$real_dev has no IPv4 address (netdev '${ndev:-none}'): cannot run the loopback benchmark"
		return 1
	fi
	rm -f "$results/compare.txt" "$results/write_bw.png"
	say "benchmark running (scale $scale; whole output: $log)"
	rm -f "$results/.status"
	{ sh "$top/scripts/bench-compare.sh" --bench "$build/utils/rdmaxfer-bench" \
		--device "$real_dev" --addr "$addr" --out "$results" \
		--scale "$scale" --extras "${RC_BENCH_EXTRAS:-yes}" \
		${RC_BENCH_REPS:+--reps "$RC_BENCH_REPS"} \
		${RC_BENCH_ROWS:+--rows "$RC_BENCH_ROWS"}; echo $? >"$results/.status"; } 2>&1 |
		tee "$log" | grep --line-buffered '^bench-compare: ' || true
	return "$(cat "$results/.status" 2>/dev/null || echo 1)"
}

run_vm()
{
	say "benchmark in a QEMU guest on soft-RoCE, kernels: $kernels (speeds under emulation are only meaningful as ratios)"
	say "benchmark running (scale $scale; whole output: $log)"
	for k in $kernels; do
		rm -f "$results/compare-$k.txt" "$results/write_bw-$k.png"
	done
	rm -f "$results/.status"
	# Only the progress lines reach the terminal; the tables come
	# once, at the end.
	# shellcheck disable=SC2086 # the list of kernels, one word each
	{ "$top/scripts/bench-compare-host.sh" "$build" $kernels; echo $? >"$results/.status"; } 2>&1 |
		tee "$log" | grep --line-buffered -E '^bench-compare(-host)?: ' || true
	return "$(cat "$results/.status" 2>/dev/null || echo 1)"
}

status=0
if [ -n "$real_dev" ]; then
	run_real_device || status=$?
	tables=$results/compare.txt
	plots=$results/write_bw.png
else
	say "no RDMA device on this machine: using a QEMU guest with soft-RoCE"
	run_vm || status=$?
	tables=
	plots=
	for k in $kernels; do
		tables="$tables $results/compare-$k.txt"
		plots="$plots $results/write_bw-$k.png"
	done
fi

# --- the result, on the terminal ------------------------------------------
echo
echo "==================== run-main: results ===================="
for t in $tables; do
	if [ -s "$t" ]; then
		# the table without its list of command lines (kept in the
		# file, named below)
		awk '/^Exact command lines/ { skip = 1; next }
		     skip && /^(PORT|  )/ { next }
		     { skip = 0; print }' "$t"
	else
		echo "$(basename "$t" .txt): no table, the run failed; the end of its output:"
		tail -n 15 "$log" | sed 's/^/  /'
		[ "$status" = 0 ] && status=1
	fi
	echo
done
# The plot comes with the extras (RC_BENCH_EXTRAS=no leaves them out).
for p in $plots; do
	if [ -s "$p" ]; then
		echo "Plot (write_bw, ours and perftest against the message size): $p"
	elif [ "${RC_BENCH_EXTRAS:-yes}" != no ]; then
		echo "Plot: none: rdmaxfer-bench --plot failed (its output: plot.txt among the run's results)"
		[ "$status" = 0 ] && status=1
	fi
done
echo
echo "Details:"
if [ -n "$real_dev" ]; then
	echo "  table + commands:   $results/compare.txt"
	echo "  every repetition:   $results/raw.csv"
	echo "  full output:        $log"
else
	echo "  full output:        $log"
	for k in $kernels; do
		echo "  kernel $k:"
		echo "    table + commands: $results/compare-$k.txt"
		echo "    every repetition: $results/raw-$k.csv"
		echo "    guest's log:      $build/tests/vm/bench-compare@$k.log"
		echo "    guest's console:  $build/tests/vm/run/bench-compare@$k/console.log"
	done
fi
echo "  build logs:         $build/configure.log, $build/make.log"
echo "  how to read it:     $top/doc/BENCHMARKS.md"
if [ "$status" = 0 ]; then
	say "done in $(since) s"
else
	say "FAILED (status $status) after $(since) s: see the details above"
fi
exit "$status"
