#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-compare-host.sh BUILD [KERNEL...]: the benchmark of the project's
# main command on a machine without an RDMA device.  Boots one QEMU guest
# per kernel (default 6.1) through the tests/vm harness, with 3 GiB of
# memory, runs scripts/bench-compare.sh in it (rdmaxfer-bench vs perftest,
# interleaved, medians; the registration table; the NIXL scenario with the
# cache off and on; a plot of both tools' write bandwidth against the
# size) and prints the tables, which it also keeps in
# BUILD/bench-results/compare-KERNEL.txt (the plot: write_bw-KERNEL.png).
#
# Environment: RC_BENCH_SCALE=quick|standard|full (default standard: 4
# repetitions, 10-15 minutes per kernel on the 2-core machine, quiet to
# loaded; quick: 1 repetition, about 3 minutes, to see that every part
# runs; full: 7 repetitions), RC_BENCH_REPS=N (repetitions per side,
# overrides the scale's), RC_BENCH_EXTRAS=no (only the like-for-like
# table), RC_BENCH_ROWS=TEST:BYTES,... (only those rows of it, e.g.
# read_bw:4096,read_bw:64), VM_CACHE (the harness's kernel cache).
#
# While a guest runs, its progress lines (bench-compare.sh's
# "bench-compare: [K/N] ..." lines: the row, the repetition, the time
# elapsed and an estimate of what is left) are relayed to stdout from its
# serial console, which QEMU writes on this host as the guest prints.
set -u

build=${1:?usage: bench-compare-host.sh BUILD [KERNEL...]}
shift
kernels=${*:-6.1}
scale=${RC_BENCH_SCALE:-standard}
build=$(cd "$build" && pwd) || exit 1
mkdir -p "$build/bench-results"
# the guest's time limit (VM_TIMEOUT overrides): about four times what
# the scale takes on a quiet machine, since a loaded one (load 10, other
# guests beside it) took three times as long
case $scale in
quick) tmo=1800 ;;
standard) tmo=3600 ;;
*) tmo=7200 ;;
esac

# follow PID FILE: until PID ends, print the progress lines that appear
# in the console log FILE (complete lines only; a console that shrinks
# is a new boot, read from its start).
follow()
{
	f_n=0
	while :; do
		f_alive=
		kill -0 "$1" 2>/dev/null && f_alive=1
		if [ -f "$2" ]; then
			f_m=$(wc -l <"$2")
			[ "$f_m" -lt "$f_n" ] && f_n=0
			if [ "$f_m" -gt "$f_n" ]; then
				sed -n "$((f_n + 1)),${f_m}p" "$2" | tr -d '\r' | sed -n \
					-e '/^bench-compare: /p' \
					-e 's/^rc-guest: \([^ ]*\) up after \([0-9.]*\)s.*/bench-compare-host: guest (\1) up after \2 s/p' \
					-e 's/^rc-guest: SETUP FAILED: /bench-compare-host: guest setup failed: /p'
				f_n=$f_m
			fi
		fi
		[ -n "$f_alive" ] || break
		sleep 2
	done
}

rc=0
for k in $kernels; do
	t0=$(date +%s)
	echo "bench-compare-host: kernel $k, scale $scale: preparing the guest (its kernel, downloaded once into the kernel cache, and regcache.ko built for it)"
	console=$build/tests/vm/run/bench-compare@$k/console.log
	# not a previous run's console, before this run's boot replaces it
	rm -f "$console"
	make -C "$build/tests" check-vm VM_KERNELS="$k" VM_SUITES=bench-compare \
		VM_MEM=3G VM_TIMEOUT="${VM_TIMEOUT:-$tmo}" \
		VM_APPEND="rc.scale=$scale${RC_BENCH_REPS:+ rc.reps=$RC_BENCH_REPS}${RC_BENCH_EXTRAS:+ rc.extras=$RC_BENCH_EXTRAS}${RC_BENCH_ROWS:+ rc.rows=$RC_BENCH_ROWS}" \
		${VM_CACHE:+VM_CACHE="$VM_CACHE"} >"$build/bench-results/make-$k.log" 2>&1 &
	mpid=$!
	follow "$mpid" "$console"
	wait "$mpid" || rc=1
	res=$build/tests/vm/results/bench-compare@$k
	rm -f "$build/bench-results/write_bw-$k.png"
	if [ -s "$res/compare.txt" ]; then
		cp "$res/compare.txt" "$build/bench-results/compare-$k.txt"
		cp "$res/raw.csv" "$build/bench-results/raw-$k.csv" 2>/dev/null
		cp "$res/write_bw.png" "$build/bench-results/write_bw-$k.png" 2>/dev/null
		echo "bench-compare-host: kernel $k done in $(($(date +%s) - t0)) s"
		echo
		cat "$res/compare.txt"
		echo
	else
		echo "bench-compare-host: no results for $k; see $build/tests/vm/bench-compare@$k.log" >&2
		tail -n 20 "$build/tests/vm/bench-compare@$k.log" >&2 2>/dev/null
		rc=1
	fi
done
echo "bench-compare-host: tables in $build/bench-results/"
exit $rc
