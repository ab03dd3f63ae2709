// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_opts.c - rdmaxfer-bench's command line: the usage text and the
 * checks of options that go together.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

void usage(FILE *f)
{
	fprintf(f,
"usage: %s [options] TEST            (server)\n"
"       %s [options] TEST SERVER     (client)\n"
"       %s [options] reg|reg_access  (local, no server)\n"
"tests: write_bw read_bw write_lat read_lat fadd_lat cswap_lat reg nixl\n"
"       reg_access ring file (ring, file ADDR: loopback on ADDR; file in\n"
"       $TMPDIR)\n"
"       dm_atomic ADDR: fadd/cswap latency on device memory vs host memory,\n"
"       loopback on ADDR (where the device has none: the host fallback, said)\n"
"  -s, --size SIZE        message size (K/M/G suffixes; default 65536 bw, 2 lat)\n"
"  -a, --all              all powers of two (2 B .. 8 MiB; reg: 4 KiB .. 64 MiB)\n"
"  -n, --iters N          iterations (default 5000 bw, 1000 lat, 100 reg, 10 nixl)\n"
"  -w, --window N         outstanding requests for bw tests (default 128)\n"
"  -l, --post-list N      messages per request: one doorbell each (default 1)\n"
"      --batch N          bw tests: reposts per doorbell (default 16; 1: one\n"
"                         doorbell per request); ring: grains (and plain\n"
"                         WRITEs) per doorbell (default 1)\n"
"  -q, --qps N            RC QPs per peer (default 1)\n"
"  -d, --device NAME      RDMA device (default: first ACTIVE port)\n"
"  -i, --ib-port N        device port (default: first ACTIVE)\n"
"  -x, --gid-index N      GID index (default: RoCE v2 IPv4)\n"
"  -p, --port N           rdma_cm port (default %u)\n"
"  -c, --cpu N            pin to CPU N\n"
"  -I, --inline SIZE      max inline data (default 64)\n"
"      --signal N         signal every N work requests (default library's)\n"
"      --thread-mode single|multi  caller-mode agents: single (default) takes\n"
"                         no lock on post and test; multi: the locked agent\n"
"      --total SIZE       nixl: bytes per iteration (default 512M)\n"
"      --chunks K         nixl: chunks (default 128)\n"
"      --cache on|off|both  nixl: registration cache (default both)\n"
"      --timeout MS       connect timeout (default 5000)\n"
"  -D, --duration SEC     server: give up if no client comes within SEC\n"
"      --validate         check the data pattern at the end\n"
"      --warmup           bw tests: one untimed window first\n"
"      --json, --csv      machine-readable output\n"
"      --compare          client: run TEST and perftest's matching test on\n"
"                         the same device (SERVER: its own address), both\n"
"                         sides here, interleaved; print both and the ratio\n"
"      --reps N           --compare: repetitions per tool (default 3)\n"
"      --plot FILE.png    client: draw the results against size (gnuplot)\n"
"      --target           ring ADDR: only the target, listening on ADDR (-p\n"
"                         for control, -p + 1 for the rings; -D: give up\n"
"                         if no initiator comes), for one initiator\n"
"      --remote           ring ADDR: only the initiator, against a --target\n"
"                         on ADDR (same -p)\n"
"      --floor            ring: also WRITEs with immediate, N in flight,\n"
"                         into a target without a ring (no credits: the\n"
"                         ring's cost apart from them); not remote\n"
"  -h, --help\n", prog, prog, prog, DEF_PORT);
}

/*
 * --compare, --reps and --plot: every misuse is refused here, before a
 * device is opened or a benchmark runs, with a message saying why.
 */
int check_compare_plot(bool reps_set)
{
	char path[PATH_MAX];

	if (reps_set && !o.compare) {
		fprintf(stderr, "%s: --reps applies to --compare only\n", prog);
		return 2;
	}
	if (o.compare) {
		if (!bench_compare_peer(test_names[o.test])) {
			fprintf(stderr, "%s: --compare: perftest has no test matching '%s' (write_bw, read_bw, write_lat and read_lat have one): %s (%d)\n",
				prog, test_names[o.test], strerror(EINVAL),
				-EINVAL);
			return 2;
		}
		if (!o.server) {
			fprintf(stderr, "%s: --compare needs SERVER: the IPv4 address of the device's own port (both sides run on this machine)\n",
				prog);
			return 2;
		}
		if (o.json || o.csv) {
			fprintf(stderr, "%s: --compare prints its own table: --json and --csv do not apply\n",
				prog);
			return 2;
		}
		if (o.post_list > 1 || o.validate || o.warmup ||
		    o.signal_interval) {
			fprintf(stderr, "%s: --compare: -l, --validate, --warmup and --signal have no perftest counterpart; the sides must match (use --batch)\n",
				prog);
			return 2;
		}
		if (bench_find_program(bench_compare_peer(test_names[o.test]),
				       path, sizeof(path))) {
			fprintf(stderr, "%s: --compare needs perftest's %s (apt-get install perftest): %s (%d)\n",
				prog, bench_compare_peer(test_names[o.test]),
				strerror(ENOENT), -ENOENT);
			return 2;
		}
		if (o.port > 65535 - 2 * o.reps) {
			fprintf(stderr, "%s: --compare uses ports PORT .. PORT+%d: -p %u is too high\n",
				prog, 2 * o.reps, o.port);
			return 2;
		}
	}
	if (o.plot) {
		if (!o.server || (o.test != T_WRITE_BW && o.test != T_READ_BW &&
				  o.test != T_WRITE_LAT &&
				  o.test != T_READ_LAT)) {
			fprintf(stderr, "%s: --plot draws a client's bandwidth or latency against size: it needs SERVER and one of write_bw, read_bw, write_lat, read_lat\n",
				prog);
			return 2;
		}
		if (bench_plot_check(prog, o.plot))
			return 2;
	}
	return 0;
}
