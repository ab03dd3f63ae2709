// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_opts.c - rdmaxfer-bench's command line: the usage text, the
 * options into o, and the checks of options that go together.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_ring.h"

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
"      --rereg            nixl: the server re-registers its exports (the\n"
"                         chunks) every iteration, in its remote-key mode;\n"
"                         the client's chunks go through the cache\n"
"      --wait poll|notif|fd  write_lat: see the peer's WRITE by polling its\n"
"                         last byte (poll, default), or by its immediate,\n"
"                         busy-polled (notif) or asleep in epoll on the\n"
"                         agent's fd (fd)\n"
"      --rkey-mode auto|exact|window|cached  the agent's remote keys\n"
"                         (default $RDMAXFER_RKEY_MODE, else auto); the\n"
"                         server's are the ones a test uses\n"
"      --timeout MS       connect timeout (default 5000)\n"
"      --directory URL    the etcd directory (rdmaxfer_directory(3)): URL[,URL]\n"
"      --publish NAME     server: publish itself in it as NAME\n"
"      --name NAME        client: the server published as NAME, in place of\n"
"                         SERVER (write_bw read_bw write_lat read_lat\n"
"                         fadd_lat cswap_lat nixl)\n"
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

enum { OPT_TOTAL = 256, OPT_CHUNKS, OPT_CACHE, OPT_JSON, OPT_CSV,
	OPT_VALIDATE, OPT_TIMEOUT, OPT_SIGNAL, OPT_WARMUP, OPT_BATCH,
	OPT_COMPARE, OPT_REPS, OPT_PLOT, OPT_TARGET, OPT_REMOTE,
	OPT_FLOOR, OPT_THREAD_MODE, OPT_DIRECTORY, OPT_PUBLISH, OPT_NAME,
	OPT_WAIT, OPT_RKEY_MODE, OPT_REREG };

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
	{ "directory", required_argument, NULL, OPT_DIRECTORY },
	{ "publish", required_argument, NULL, OPT_PUBLISH },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "wait", required_argument, NULL, OPT_WAIT },
	{ "rkey-mode", required_argument, NULL, OPT_RKEY_MODE },
	{ "rereg", no_argument, NULL, OPT_REREG },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int bad_opt(const char *opt, const char *val)
{
	fprintf(stderr, "%s: invalid %s '%s': %s (%d)\n", prog, opt,
		val ? val : "", strerror(EINVAL), -EINVAL);
	return 2;
}

/* The perftest-compatible letters (and -h): -1, or the exit status. */
static int perftest_opt(int ch, bool *size_set)
{
	long v;

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
		*size_set = true;
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
	case 'h':
		usage(stdout);
		return 0;
	default:
		usage(stderr);
		return 2;
	}
	return -1;
}

/* --wait, --rkey-mode, --rereg: -1, or the exit status. */
static int mode_opt(int ch)
{
	uint32_t m;

	switch (ch) {
	case OPT_WAIT:
		for (m = 0; m < 3; m++)
			if (!strcmp(optarg, wait_names[m]))
				break;
		if (m == 3)
			return bad_opt("--wait (poll, notif or fd)", optarg);
		o.wait = (enum bench_wait)m;
		break;
	case OPT_RKEY_MODE:
		for (m = RDMAXFER_RKEY_AUTO; m <= RDMAXFER_RKEY_CACHED; m++)
			if (!strcmp(optarg, rkey_mode_name(m)))
				break;
		if (m > RDMAXFER_RKEY_CACHED)
			return bad_opt("--rkey-mode (auto, exact, window or cached)",
				       optarg);
		o.rkey_mode = m;
		break;
	case OPT_REREG:
		o.rereg = true;
		break;
	}
	return -1;
}

/* The options of our own (OPT_*): -1, or the exit status. */
static int long_opt(int ch, bool *reps_set)
{
	long v;

	if (ch >= OPT_WAIT)
		return mode_opt(ch);
	switch (ch) {
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
		*reps_set = true;
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
	case OPT_DIRECTORY:
		o.directory = optarg;
		break;
	case OPT_PUBLISH:
		o.publish = optarg;
		break;
	case OPT_NAME:
		o.name = optarg;
		break;
	}
	return -1;
}

/* The options into o: -1, or the exit status (-h: 0, a bad one: 2). */
int parse_opts(int argc, char **argv, bool *size_set, bool *reps_set)
{
	int ch, ret;

	while ((ch = getopt_long(argc, argv, "s:an:w:l:q:d:i:x:p:c:I:D:h",
				 longopts, NULL)) != -1) {
		ret = ch < OPT_TOTAL ? perftest_opt(ch, size_set) :
				       long_opt(ch, reps_set);
		if (ret >= 0)
			return ret;
	}
	return -1;
}

/*
 * --directory, --publish, --name: misuse refused before anything runs;
 * the directory opened (etcd reached, or a clear error).  A client by
 * name runs as a client with SERVER the name (in its messages).
 */
static int open_directory(void)
{
	struct rdmaxfer_directory_attr a;
	int ret;

	if ((o.publish || o.name) && !o.directory) {
		fprintf(stderr, "%s: --publish and --name need --directory URL\n",
			prog);
		return 2;
	}
	if (!o.directory)
		return 0;
	if ((o.name && (o.server || o.publish)) || (o.publish && o.server)) {
		fprintf(stderr, "%s: --name (client) is in place of SERVER, --publish is for the server: one of them, without SERVER\n",
			prog);
		return 2;
	}
	if (!o.name && !o.publish) {
		fprintf(stderr, "%s: --directory needs --publish NAME (server) or --name NAME (client)\n",
			prog);
		return 2;
	}
	if ((o.name || o.publish) &&
	    (o.compare || o.test == T_REG || o.test == T_REG_ACCESS ||
	     o.test == T_FILE || o.test == T_RING || o.test == T_DM_ATOMIC)) {
		fprintf(stderr, "%s: --directory applies to the client/server tests only (not %s%s)\n",
			prog, test_names[o.test], o.compare ? ", --compare" : "");
		return 2;
	}
	rdmaxfer_directory_attr_init(&a);
	a.endpoints = o.directory;
	a.timeout_ms = o.timeout_ms;
	ret = rdmaxfer_directory_open(&a, &bench_dir);
	if (ret) {
		if (ret == -EOPNOTSUPP)
			fprintf(stderr, "%s: this librdmaxfer was built without etcd support (configure --with-etcd, libcurl and json-c): %s (%d)\n",
				prog, strerror(-ret), ret);
		else
			fprintf(stderr, "%s: cannot reach the directory at %s: %s (%d)\n",
				prog, o.directory, strerror(-ret), ret);
		return 1;
	}
	if (o.name)
		o.server = o.name;
	return 0;
}

/*
 * The test and its server, the options that go together, and the
 * defaults that depend on the test: -1, or the exit status.
 */
int check_opts(int argc, char **argv, bool size_set, bool reps_set)
{
	int ret, t;

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
	if (o.wait != WAIT_POLL && (o.test != T_WRITE_LAT || o.compare)) {
		fprintf(stderr, "%s: --wait applies to write_lat only (not with --compare): %s (%d)\n",
			prog, strerror(EINVAL), -EINVAL);
		return 2;
	}
	if (o.rereg && o.test != T_NIXL) {
		fprintf(stderr, "%s: --rereg applies to nixl only: %s (%d)\n",
			prog, strerror(EINVAL), -EINVAL);
		return 2;
	}
	if (o.test == T_NIXL && o.total / o.chunks == 0)
		return bad_opt("--total/--chunks (chunks larger than 0 B)",
			       "");
	ret = check_compare_plot(reps_set);
	if (!ret)
		ret = open_directory();
	return ret ? ret : -1;
}
