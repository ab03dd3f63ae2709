#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-compare-host.sh BUILD [KERNEL...]: the benchmark of the project's
# main command on a machine without an RDMA device.  Boots one QEMU guest
# per kernel (default 6.1) through the tests/vm harness, with 3 GiB of
# memory, runs scripts/bench-compare.sh in it (rdmaxfer-bench vs perftest,
# interleaved, medians; the registration table; the NIXL scenario with the
# cache off and on) and prints the tables, which it also keeps in
# BUILD/bench-results/compare-KERNEL.txt.
#
# Environment: RC_BENCH_SCALE=quick|full (default full: 7 repetitions,
# about 30 minutes per kernel on a quiet 2-core machine; quick: 3),
# RC_BENCH_REPS=N (repetitions per side, overrides the scale's),
# RC_BENCH_EXTRAS=no (only the like-for-like table), RC_BENCH_ROWS=
# TEST:BYTES,... (only those rows of it, e.g. read_bw:4096,read_bw:64),
# VM_CACHE (the harness's kernel cache).
set -u

build=${1:?usage: bench-compare-host.sh BUILD [KERNEL...]}
shift
kernels=${*:-6.1}
scale=${RC_BENCH_SCALE:-full}
build=$(cd "$build" && pwd) || exit 1
mkdir -p "$build/bench-results"
rc=0
for k in $kernels; do
	echo "bench-compare-host: kernel $k, scale $scale (a few minutes)"
	make -C "$build/tests" check-vm VM_KERNELS="$k" VM_SUITES=bench-compare \
		VM_MEM=3G VM_TIMEOUT="${VM_TIMEOUT:-3600}" \
		VM_APPEND="rc.scale=$scale${RC_BENCH_REPS:+ rc.reps=$RC_BENCH_REPS}${RC_BENCH_EXTRAS:+ rc.extras=$RC_BENCH_EXTRAS}${RC_BENCH_ROWS:+ rc.rows=$RC_BENCH_ROWS}" \
		${VM_CACHE:+VM_CACHE="$VM_CACHE"} >"$build/bench-results/make-$k.log" 2>&1 || rc=1
	res=$build/tests/vm/results/bench-compare@$k
	if [ -s "$res/compare.txt" ]; then
		cp "$res/compare.txt" "$build/bench-results/compare-$k.txt"
		cp "$res/raw.csv" "$build/bench-results/raw-$k.csv" 2>/dev/null
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
