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

enum { OPT_TOTAL = 256, OPT_CHUNKS, OPT_CACHE, OPT_JSON, OPT_CSV,
	OPT_VALIDATE, OPT_TIMEOUT, OPT_SIGNAL, OPT_WARMUP, OPT_BATCH,
	OPT_COMPARE, OPT_REPS, OPT_PLOT, OPT_TARGET, OPT_REMOTE,
	OPT_FLOOR, OPT_THREAD_MODE };

static const struct option longopts[] = {
	{ "size", required_argument, NULL, 's' },
	{ "all", no_argument, NULL, 'a' },
	{ "iters", required_argument, NULL, 'n' },
	{ "window", required_argument, NULL, 'w' },
	{ "post-list", required_argument, NULL, 'l' },
	{ "qps", required_argument, NULL, 'q' },
	{ "device", required_argument, NULL, 'd' },
	{ "ib-port", required_argument, NULL, 'i' },
	{ "gid-index", required_argument, NULL, 'x' },
	{ "port", required_argument, NULL, 'p' },
	{ "cpu", required_argument, NULL, 'c' },
	{ "inline", required_argument, NULL, 'I' },
	{ "duration", required_argument, NULL, 'D' },
	{ "total", required_argument, NULL, OPT_TOTAL },
	{ "chunks", required_argument, NULL, OPT_CHUNKS },
	{ "cache", required_argument, NULL, OPT_CACHE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "csv", no_argument, NULL, OPT_CSV },
	{ "validate", no_argument, NULL, OPT_VALIDATE },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "signal", required_argument, NULL, OPT_SIGNAL },
	{ "warmup", no_argument, NULL, OPT_WARMUP },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "compare", no_argument, NULL, OPT_COMPARE },
	{ "reps", required_argument, NULL, OPT_REPS },
	{ "plot", required_argument, NULL, OPT_PLOT },
	{ "target", no_argument, NULL, OPT_TARGET },
	{ "remote", no_argument, NULL, OPT_REMOTE },
	{ "floor", no_argument, NULL, OPT_FLOOR },
	{ "thread-mode", required_argument, NULL, OPT_THREAD_MODE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int bad_opt(const char *opt, const char *val)
{
	fprintf(stderr, "%s: invalid %s '%s': %s (%d)\n", prog, opt,
		val ? val : "", strerror(EINVAL), -EINVAL);
	return 2;
}

int main(int argc, char **argv)
{
	bool size_set = false, reps_set = false;
	long v;
	int ch, ret, t;

	while ((ch = getopt_long(argc, argv, "s:an:w:l:q:d:i:x:p:c:I:D:h",
				 longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			if (parse_size(optarg, &o.size) || !o.size)
				return bad_opt("size", optarg);
			if (o.size > MAX_SIZE) {
				fprintf(stderr, "%s: size %s is larger than the largest request this benchmark makes (1 GiB): %s (%d)\n",
					prog, optarg, strerror(EMSGSIZE),
					-EMSGSIZE);
				return 2;
			}
			size_set = true;
			break;
		case 'a':
			o.all = true;
			break;
		case 'n':
			if (parse_long(optarg, 1, 100000000, &o.iters))
				return bad_opt("iteration count", optarg);
			break;
		case 'w':
			if (parse_long(optarg, 1, MAX_WINDOW, &v))
				return bad_opt("window", optarg);
			o.window = (unsigned int)v;
			break;
		case 'l':
			if (parse_long(optarg, 1, 1024, &v))
				return bad_opt("post list", optarg);
			o.post_list = (unsigned int)v;
			break;
		case 'q':
			if (parse_long(optarg, 1, 16, &v))
				return bad_opt("QP count", optarg);
			o.qps = (unsigned int)v;
			break;
		case 'd':
			o.device = optarg;
			break;
		case 'i':
			if (parse_long(optarg, 1, 255, &v))
				return bad_opt("IB port", optarg);
			o.ib_port = (int)v;
			break;
		case 'x':
			if (parse_long(optarg, 0, 255, &v))
				return bad_opt("GID index", optarg);
			o.gid_index = (int)v;
			break;
		case 'p':
			if (parse_long(optarg, 1, 65535, &v))
				return bad_opt("port", optarg);
			o.port = (uint16_t)v;
			break;
		case 'c':
			if (parse_long(optarg, 0, CPU_SETSIZE - 1, &v))
				return bad_opt("CPU", optarg);
			o.cpu = (int)v;
			break;
		case 'I':
			if (parse_long(optarg, 0, 4096, &v))
				return bad_opt("inline size", optarg);
			o.inline_size = (unsigned int)v;
			break;
		case 'D':
			o.duration = strtod(optarg, NULL);
			if (o.duration <= 0)
				return bad_opt("duration", optarg);
			break;
		case OPT_TOTAL:
			if (parse_size(optarg, &o.total) || !o.total ||
			    o.total > 4 * MAX_SIZE)
				return bad_opt("total", optarg);
			break;
		case OPT_CHUNKS:
			if (parse_long(optarg, 1, 65536, &v))
				return bad_opt("chunk count", optarg);
			o.chunks = (unsigned int)v;
			break;
		case OPT_CACHE:
			if (!strcmp(optarg, "on"))
				o.cache = CACHE_ON;
			else if (!strcmp(optarg, "off"))
				o.cache = CACHE_OFF;
			else if (!strcmp(optarg, "both"))
				o.cache = CACHE_BOTH;
			else
				return bad_opt("--cache (on, off or both)",
					       optarg);
			break;
		case OPT_JSON:
			o.json = true;
			break;
		case OPT_CSV:
			o.csv = true;
			break;
		case OPT_VALIDATE:
			o.validate = true;
			break;
		case OPT_WARMUP:
			o.warmup = true;
			break;
		case OPT_BATCH:
			if (parse_long(optarg, 1, MAX_WINDOW, &v))
				return bad_opt("batch", optarg);
			o.batch = (unsigned int)v;
			o.batch_set = true;
			break;
		case OPT_TIMEOUT:
			if (parse_long(optarg, 1, 3600000, &v))
				return bad_opt("timeout", optarg);
			o.timeout_ms = (int)v;
			break;
		case OPT_SIGNAL:
			if (parse_long(optarg, 1, 16384, &v))
				return bad_opt("signal interval", optarg);
			o.signal_interval = (unsigned int)v;
			break;
		case OPT_COMPARE:
			o.compare = true;
			break;
		case OPT_REPS:
			if (parse_long(optarg, 1, 100, &v))
				return bad_opt("repetition count (1-100)",
					       optarg);
			o.reps = (int)v;
			reps_set = true;
			break;
		case OPT_PLOT:
			o.plot = optarg;
			break;
		case OPT_TARGET:
			o.ring_role = BENCH_RING_TARGET;
			break;
		case OPT_REMOTE:
			o.ring_role = BENCH_RING_REMOTE;
			break;
		case OPT_FLOOR:
			o.ring_floor = true;
			break;
		case OPT_THREAD_MODE:
			if (!strcmp(optarg, "single"))
				o.single = true;
			else if (!strcmp(optarg, "multi"))
				o.single = false;
			else
				return bad_opt("thread mode (single or multi)",
					       optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc || argc - optind > 2) {
		fprintf(stderr, "%s: expected TEST [SERVER]\n", prog);
		usage(stderr);
		return 2;
	}
	for (t = 0; t < T_COUNT; t++)
		if (!strcmp(argv[optind], test_names[t]))
			break;
	if (t == T_COUNT) {
		fprintf(stderr, "%s: unknown test '%s': %s (%d)\n", prog,
			argv[optind], strerror(EINVAL), -EINVAL);
		return 2;
	}
	o.test = (enum test)t;
	if (optind + 1 < argc)
		o.server = argv[optind + 1];
	if ((o.ring_role != BENCH_RING_LOCAL || o.ring_floor) &&
	    o.test != T_RING) {
		fprintf(stderr, "%s: --target, --remote and --floor apply to "
			"ring only\n", prog);
		return 2;
	}
	if (o.ring_floor && o.ring_role != BENCH_RING_LOCAL) {
		fprintf(stderr, "%s: --floor: the ring-less target is in this "
			"process, so not with --target or --remote: %s (%d)\n",
			prog, strerror(EINVAL), -EINVAL);
		return 2;
	}
	if (o.json && o.csv) {
		fprintf(stderr, "%s: --json and --csv exclude each other\n",
			prog);
		return 2;
	}
	if (!size_set)
		o.size = o.test == T_RING ? 0 :
			 o.test == T_REG || o.test == T_REG_ACCESS ? 1 << 20 :
			 o.test == T_FILE ? 16 << 20 :
			 is_lat(o.test) ? 2 : 65536;
	if (is_atomic(o.test) && (size_set || o.all) && o.size != 8) {
		fprintf(stderr, "%s: atomics move 8 bytes: -s/-a do not apply\n",
			prog);
		o.all = false;
	}
	if (o.test == T_NIXL && o.total / o.chunks == 0)
		return bad_opt("--total/--chunks (chunks larger than 0 B)",
			       "");
	ret = check_compare_plot(reps_set);
	if (ret)
		return ret;
	if (o.cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			ret = -errno;
			err_msg("sched_setaffinity", ret);
			return 1;
		}
	}
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
