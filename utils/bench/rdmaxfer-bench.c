// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * rdmaxfer-bench - perftest-style benchmark of librdmaxfer.
 *
 * One binary is both ends: "rdmaxfer-bench [opts] TEST" serves, and
 * "rdmaxfer-bench [opts] TEST SERVER" drives the test against a server,
 * over rdma_cm, as perftest's tools do.  Bandwidth tests keep a window of
 * prepared requests in flight and repost each one as it completes
 * (perftest's tx depth); latency tests post one operation at a time and
 * time each; write_lat is a ping-pong of RDMA WRITEs polled in memory, as
 * ib_write_lat does, so the two can be read side by side.  The output uses
 * perftest's columns.
 *
 * Two tests are about registration rather than the wire: "reg" compares a
 * raw ibv_reg_mr + ibv_dereg_mr with a registration-cache hit (locally, no
 * server needed), and "nixl" replays the seed scenario of the project: every
 * iteration registers K chunks, WRITEs them and deregisters them, as NIXL
 * users do, with the cache off (a raw registration per chunk) or on.
 *
 * The two ends talk through librdmaxfer's notifications (small messages on
 * the peer's first QP): the client sends the test parameters and its
 * buffer's descriptor, the server answers with its own, and at the end the
 * client asks the server to check the data pattern (--validate).
 *
 * --compare (bench_compare.c) runs a test and perftest's matching test on
 * the same device, interleaved, and prints both with the ratio; --plot
 * draws a client's results against size with gnuplot.
 *
 * This file is main and the glue from the options to each family's
 * parameters; the ends are bench_server.c and bench_client.c, the
 * families bench_bw.c, bench_lat.c, bench_nixl.c, bench_reg.c,
 * bench_file.c, bench_ring.c and bench_devmem.c, the helpers
 * bench_common.c, the command line bench_opts.c.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>

#include <rdmaxfer.h>

#include "bench.h"
#include "bench_reg.h"
#include "bench_file.h"
#include "bench_ring.h"
#include "bench_devmem.h"

const char *const test_names[T_COUNT] = {
	"write_bw", "read_bw", "write_lat", "read_lat", "fadd_lat",
	"cswap_lat", "reg", "nixl", "reg_access",
	"file", "ring", "dm_atomic",
};

/* file (bench_file.c): loopback on the address given, file in $TMPDIR */
static int run_file(void)
{
	struct bench_file_cfg cfg = {
		.addr = o.server,
		.total = o.size,
		.dir = getenv("TMPDIR"),
		.csv = o.csv,
	};

	return bench_file(&cfg);
}

/* ring: the target, with a progress thread (its callback releases) */
static int make_ring_target(struct rdmaxfer_agent **agentp)
{
	int ret;

	make_agent_progress = RDMAXFER_PROGRESS_THREAD;
	ret = make_agent(REGCACHE_MONITOR_AUTO, agentp);
	make_agent_progress = RDMAXFER_PROGRESS_CALLER;
	return ret;
}

static int ring_send(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		     uint32_t type, const void *msg, size_t len)
{
	return send_ctl(agent, peer, (enum ctl)type, msg, len);
}

static int ring_recv(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		     uint32_t type, void *msg, size_t len, int timeout_ms)
{
	return recv_ctl(agent, peer, (enum ctl)type, msg, len, timeout_ms);
}

/* ring (bench_ring.c) ADDR: -s one size, -a all, else 1 KiB, 64 KiB,
 * 1 MiB, 4 MiB (a 1080p frame), 8 MiB; --target: only the target, on
 * ADDR; --remote: only the initiator, the target on ADDR */
static int run_ring(void)
{
	static const uint64_t defaults[] = { 1024, 65536, 1 << 20, 4 << 20,
					     8 << 20 };
	struct bench_ring_cfg cfg = {
		.role = (enum bench_ring_role)o.ring_role,
		.ctl = {
			.send = ring_send,
			.recv = ring_recv,
			.connect = connect_retry,
			.magic = BENCH_MAGIC,
			.type_point = CTL_RING_POINT,
			.type_info = CTL_RING_INFO,
			.type_end = CTL_RING_END,
			.port = o.port,
			.accept_ms = o.duration > 0 ?
				     (int)(o.duration * 1000) : -1,
		},
		.iters = o.iters > 0 ? (uint32_t)o.iters : 0,
		.host = o.server,
		.batch = o.batch_set ? o.batch : 1,
		.floor = o.ring_floor,
		.csv = o.csv,
		.make_agent = make_agent_with,
		.make_target = make_ring_target,
	};
	uint64_t sizes[32];

	if (!o.server) {
		fprintf(stderr, "%s: ring ADDR: the target listens on ADDR "
			"(this host's RDMA address; --remote: the target's)\n",
			prog);
		return -EINVAL;
	}
	cfg.sizes = sizes;
	if (o.all || o.size) {
		cfg.nsizes = plan_sizes(sizes, 32);
	} else {
		cfg.sizes = defaults;
		cfg.nsizes = sizeof(defaults) / sizeof(defaults[0]);
	}
	return bench_ring(&cfg);
}

/* dm_atomic (bench_devmem.c): loopback on the address given */
static int run_dm_atomic(void)
{
	struct bench_devmem_cfg cfg = {
		.host = o.server,
		.iters = o.iters > 0 ? (uint32_t)o.iters : 0,
		.csv = o.csv,
		.make_agent = make_agent_with,
	};

	return bench_devmem(&cfg);
}

/* ------------------------------------------------------------- main */

static int run_compare(const char *self)
{
	struct bench_compare_cfg c = {
		.self = self,
		.test = test_names[o.test],
		.lat = is_lat(o.test),
		.addr = o.server,
		.device = o.device,
		.ib_port = o.ib_port,
		.gid_index = o.gid_index,
		.port = o.port,
		.size = o.size,
		.all = o.all,
		.iters = o.iters,
		.window = o.window,
		.batch = o.batch,
		.single = o.single,
		.qps = o.qps,
		.reps = o.reps,
		.timeout_ms = o.timeout_ms,
		.plot = o.plot,
	};
	char path[PATH_MAX];
	ssize_t n;

	/* our side is this very program, also when run through a libtool
	 * wrapper or from $PATH */
	n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (n > 0) {
		path[n] = 0;
		c.self = path;
	}
	return bench_compare(prog, &c);
}

/* -c: pin this process to one CPU; 0, or 1 (the exit status) */
static int pin_cpu(int cpu)
{
	cpu_set_t set;
	int ret;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		ret = -errno;
		err_msg("sched_setaffinity", ret);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	bool size_set = false, reps_set = false;
	int ret;

	ret = parse_opts(argc, argv, &size_set, &reps_set);
	if (ret >= 0)
		return ret;
	ret = check_opts(argc, argv, size_set, reps_set);
	if (ret >= 0)
		return ret;
	if (o.cpu >= 0 && pin_cpu(o.cpu))
		return 1;
	if (o.compare)
		ret = run_compare(argv[0]);
	else if (o.test == T_REG)
		ret = run_reg();
	else if (o.test == T_REG_ACCESS)
		ret = run_reg_access();
	else if (o.test == T_FILE)
		ret = run_file();
	else if (o.test == T_RING)
		ret = run_ring();
	else if (o.test == T_DM_ATOMIC)
		ret = run_dm_atomic();
	else if (o.server)
		ret = run_client();
	else
		ret = run_server();
	return ret ? 1 : 0;
}
