# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench-read2-plan: what both guests of the pair bench-read2 run, in the
# same order (sourced by bench-read2-server.sh and bench-read2-client.sh).
# READ at 64 B, 16 per doorbell: perftest "-l 16" (pt16) and
# rdmaxfer-bench "--batch 16" (s16), 4096 READs per run, one warm-up
# round (discarded), then rc.reps rounds with the order alternating.  A
# fresh port per run.  Two-host guests get no regcache.ko
# (tests/vm/run-2host.sh), so rdmaxfer-bench's cache runs on the uffd
# monitor, which costs about 1.6 % at this row in one guest against the
# kmod monitor of the one-guest tables: a handicap for ours, not a help.
# The variables are set for the scripts that source this file:
# shellcheck disable=SC2034

read2_reps=$(sed -n 's/.*rc\.reps=\([0-9]*\).*/\1/p' /proc/cmdline)
read2_reps=${read2_reps:-20}
read2_iters=4096
# read2_rounds FN: FN TOOL ROUND PORT for every run, in the order both
# guests follow (round 0 is the warm-up; the order alternates per round)
read2_rounds()
{
	read2__run=0
	read2__r=0
	while [ $read2__r -le "$read2_reps" ]; do
		if [ $((read2__r % 2)) = 0 ]; then
			read2__tools="pt16 s16"
		else
			read2__tools="s16 pt16"
		fi
		for read2__t in $read2__tools; do
			read2__run=$((read2__run + 1))
			"$1" "$read2__t" "$read2__r" $((RC_2HOST_PORT + 100 + read2__run))
		done
		read2__r=$((read2__r + 1))
	done
}
BENCH=$RC_BUILDDIR/utils/rdmaxfer-bench
# read2_ready POINT: false, with POINT skipped, where perftest is missing
read2_ready()
{
	command -v ib_read_bw >/dev/null && return 0
	rc_skip "$1" "perftest (ib_read_bw) not installed"
	return 1
}
