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

#include "bench_compare.h"
#include "bench_reg.h"
#include "bench_file.h"
#include "bench_ring.h"
#include "bench_devmem.h"

#define BENCH_MAGIC		0x48434e42U	/* "BNCH" */
#define DEF_PORT		18520
#define MAX_SIZE		(1ULL << 30)	/* largest -s we accept */
#define MAX_WINDOW		4096
#define A_MIN_SIZE		2
#define A_MAX_SIZE		(1ULL << 23)	/* -a: 2 B .. 8 MiB, like perftest */
#define REG_A_MIN		4096
#define REG_A_MAX		(64ULL << 20)
#define HIT_BATCHES		15		/* reg: cache hits, median batch */
#define HIT_BATCH		100
#define PROGRESS_NS		2000000000LL	/* a progress line after 2 s */
#define CTL_TIMEOUT_MS		30000
#define MiB			1048576.0

enum test {
	T_WRITE_BW, T_READ_BW, T_WRITE_LAT, T_READ_LAT, T_FADD_LAT,
	T_CSWAP_LAT, T_REG, T_NIXL, T_REG_ACCESS,
	T_FILE,			/* bench_file.c */
	T_RING,			/* bench_ring.c */
	T_DM_ATOMIC,		/* bench_devmem.c */
	T_COUNT
};

static const char *const test_names[T_COUNT] = {
	"write_bw", "read_bw", "write_lat", "read_lat", "fadd_lat",
	"cswap_lat", "reg", "nixl", "reg_access",
	"file", "ring", "dm_atomic",
};

/* control messages (notification values) */
enum ctl {
	CTL_PARAMS = 1,		/* client -> server: struct ctl_params */
	CTL_READY = 2,		/* server -> client: struct ctl_ready */
	CTL_DONE = 3,		/* client -> server: struct ctl_done */
	CTL_RESULT = 4,		/* server -> client: struct ctl_result */
	CTL_RING_POINT = 5,	/* ring --remote: bench_ring.c's messages */
	CTL_RING_INFO = 6,
	CTL_RING_END = 7,
};

enum cache_mode { CACHE_OFF = 1, CACHE_ON = 2, CACHE_BOTH = 3 };

struct ctl_params {
	uint32_t magic;
	uint32_t test;
	uint64_t buf_len;		/* server buffer */
	uint32_t iters;
	uint32_t nsizes;
	uint64_t sizes[32];		/* write_lat ping-pong plan */
	struct rdmaxfer_desc client;	/* write_lat: the client's buffer */
};

struct ctl_ready {
	uint32_t magic;
	int32_t status;
	struct rdmaxfer_desc server;
};

struct ctl_done {
	uint32_t magic;
	uint32_t check;			/* 1: check the pattern */
	uint64_t check_len;
	uint64_t expect_word;		/* atomics: final value of word 0 */
};

struct ctl_result {
	uint32_t magic;
	int32_t status;
	uint64_t mismatches;
};

struct opts {
	enum test test;
	const char *server;
	const char *device;
	int ib_port;
	int gid_index;
	uint16_t port;
	uint64_t size;
	bool all;
	long iters;
	unsigned int window;
	unsigned int qps;
	unsigned int post_list;
	unsigned int batch;
	int cpu;
	bool json;
	bool csv;
	bool validate;
	double duration;
	int timeout_ms;
	uint64_t total;
	unsigned int chunks;
	enum cache_mode cache;
	unsigned int inline_size;
	unsigned int signal_interval;
	bool warmup;
	bool compare;
	int reps;
	const char *plot;
	int ring_role;			/* ring: enum bench_ring_role */
	bool ring_floor;		/* ring: --floor */
	bool batch_set;
	/* --thread-mode: one thread drives each caller-mode agent, so
	 * single (no lock on post and test), as ucx_perftest's default
	 * UCS_THREAD_MODE_SINGLE; multi measures the locked agent */
	bool single;
};

static struct opts o = {
	.gid_index = -1,
	.port = DEF_PORT,
	.iters = -1,
	.window = 128,
	.qps = 1,
	.post_list = 1,
	.batch = 16,
	.single = true,
	.cpu = -1,
	.timeout_ms = 5000,
	.total = 512ULL << 20,
	.chunks = 128,
	.cache = CACHE_BOTH,
	.inline_size = 64,
	.reps = 3,
};

static const char *prog = "rdmaxfer-bench";
static bool rows_started;
static struct bench_series plot_series;	/* --plot: the rows printed */

static void plot_add(uint64_t bytes, double value)
{
	if (plot_series.n < BENCH_MAX_POINTS) {
		plot_series.bytes[plot_series.n] = bytes;
		plot_series.value[plot_series.n++] = value;
	}
}

/* ------------------------------------------------------------ helpers */

static void err_msg(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s (%d)\n", prog, what,
		rdmaxfer_strerror(err), err);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 131 + 7 + (i >> 8));
}

static void fill_pattern(uint8_t *p, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern(i);
}

static uint64_t check_pattern(const uint8_t *p, uint64_t len)
{
	uint64_t i, bad = 0;

	for (i = 0; i < len; i++)
		if (p[i] != pattern(i))
			bad++;
	return bad;
}

static void *alloc_buf(uint64_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0, len);	/* touch: registration cost, not faults */
	return p;
}

static bool is_lat(enum test t)
{
	return t == T_WRITE_LAT || t == T_READ_LAT || t == T_FADD_LAT ||
	       t == T_CSWAP_LAT;
}

static bool is_atomic(enum test t)
{
	return t == T_FADD_LAT || t == T_CSWAP_LAT;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 0:
		break;
	case 'K':
		mul = 1ULL << 10;
		end++;
		break;
	case 'M':
		mul = 1ULL << 20;
		end++;
		break;
	case 'G':
		mul = 1ULL << 30;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || (v && mul > UINT64_MAX / v))
		return -EINVAL;
	*out = v * mul;
	return 0;
}

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* p in [0,1] of sorted v[n] */
static double pct(const double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)ceil(p * (double)n);
	if (i)
		i--;
	if (i >= n)
		i = n - 1;
	return v[i];
}

/* ------------------------------------------------------------- output */

static void print_header(void)
{
	if (o.json || rows_started)
		return;
	rows_started = true;
	if (o.csv) {
		if (o.test == T_REG)
			printf("bytes,iterations,raw_reg_usec,cache_hit_usec,cache_miss_usec,speedup,odp_reg_usec\n");
		else if (o.test == T_NIXL)
			printf("cache,phase,iterations,total_bytes,chunks,reg_ms,xfer_ms,reg_share_pct,xfer_mbs\n");
		else if (is_lat(o.test))
			printf("bytes,iterations,t_min_usec,t_max_usec,t_typical_usec,t_avg_usec,t_stdev_usec,p99_usec,p999_usec\n");
		else
			printf("bytes,iterations,bw_peak_mbs,bw_avg_mbs,msg_rate_mpps\n");
		return;
	}
	puts("---------------------------------------------------------------------------------------");
	if (o.test == T_REG)
		printf(" #bytes     #iterations    raw reg+dereg[usec]  cache hit[usec]  cache miss[usec]  speedup   ODP reg+dereg[usec]\n");
	else if (o.test == T_NIXL)
		printf(" cache  phase    #iterations  total[bytes]  #chunks  reg[ms]     xfer[ms]    reg share[%%]  xfer BW[MB/sec]\n");
	else if (is_lat(o.test))
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
	else
		printf(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n");
}

static bool json_first = true;

static void json_sep(void)
{
	if (!json_first)
		printf(",\n");
	json_first = false;
}

static void out_bw(uint64_t bytes, long iters, double peak, double avg,
		   double mpps)
{
	print_header();
	plot_add(bytes, avg);
	if (o.json) {
		json_sep();
		printf("    {\"bytes\": %" PRIu64 ", \"iterations\": %ld, \"bw_peak_mbs\": %.2f, \"bw_avg_mbs\": %.2f, \"msg_rate_mpps\": %.6f}",
		       bytes, iters, peak, avg, mpps);
	} else if (o.csv) {
		printf("%" PRIu64 ",%ld,%.2f,%.2f,%.6f\n", bytes, iters, peak,
		       avg, mpps);
	} else {
		printf(" %-10" PRIu64 " %-10ld     %-18.2f %-20.2f %-.6f\n",
		       bytes, iters, peak, avg, mpps);
	}
	fflush(stdout);
}

static void out_lat(uint64_t bytes, long iters, double *v, size_t n)
{
	double sum = 0, var = 0, avg, sd;
	size_t i;

	qsort(v, n, sizeof(*v), cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	avg = n ? sum / (double)n : 0;
	for (i = 0; i < n; i++)
		var += (v[i] - avg) * (v[i] - avg);
	sd = n > 1 ? sqrt(var / (double)(n - 1)) : 0;
	print_header();
	plot_add(bytes, pct(v, n, 0.5));
	if (o.json) {
		json_sep();
		printf("    {\"bytes\": %" PRIu64 ", \"iterations\": %ld, \"t_min_usec\": %.3f, \"t_max_usec\": %.3f, \"t_typical_usec\": %.3f, \"t_avg_usec\": %.3f, \"t_stdev_usec\": %.3f, \"p99_usec\": %.3f, \"p999_usec\": %.3f}",
		       bytes, iters, v[0], v[n - 1], pct(v, n, 0.5), avg, sd,
		       pct(v, n, 0.99), pct(v, n, 0.999));
	} else if (o.csv) {
		printf("%" PRIu64 ",%ld,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
		       bytes, iters, v[0], v[n - 1], pct(v, n, 0.5), avg, sd,
		       pct(v, n, 0.99), pct(v, n, 0.999));
	} else {
		printf(" %-7" PRIu64 " %-10ld     %-10.2f     %-10.2f     %-10.2f       %-10.2f     %-10.2f       %-10.2f              %-10.2f\n",
		       bytes, iters, v[0], v[n - 1], pct(v, n, 0.5), avg, sd,
		       pct(v, n, 0.99), pct(v, n, 0.999));
	}
	fflush(stdout);
}

static void json_open(const struct rdmaxfer_agent_info *info)
{
	if (!o.json)
		return;
	printf("{\n  \"tool\": \"rdmaxfer-bench\",\n  \"test\": \"%s\",\n",
	       test_names[o.test]);
	if (info)
		printf("  \"device\": \"%s\",\n  \"port\": %u,\n  \"gid_index\": %d,\n  \"cache_monitor\": \"%s\",\n  \"max_inline\": %u,\n",
		       info->device, info->port, info->gid_index,
		       info->cache_monitor ? info->cache_monitor : "",
		       info->max_inline);
	printf("  \"window\": %u,\n  \"qps\": %u,\n  \"post_list\": %u,\n  \"batch\": %u,\n  \"results\": [\n",
	       o.window, o.qps, o.post_list, o.batch);
}

static void json_close(int validate_status)
{
	if (!o.json)
		return;
	printf("\n  ],\n  \"validate\": \"%s\"\n}\n",
	       !o.validate ? "off" : validate_status ? "failed" : "passed");
}

/* A progress line on stderr once a run passes 2 s, then every 2 s. */
struct progress {
	int64_t start;
	int64_t next;
	const char *what;
};

static void progress_start(struct progress *p, const char *what)
{
	p->start = now_ns();
	p->next = p->start + PROGRESS_NS;
	p->what = what;
}

static void progress_tick(struct progress *p, int64_t now, long done,
			  long total)
{
	if (now < p->next)
		return;
	p->next = now + PROGRESS_NS;
	fprintf(stderr, "# %s %s: %ld/%ld iterations, %.1f s\n",
		test_names[o.test], p->what, done, total,
		(double)(now - p->start) / 1e9);
}

/* --------------------------------------------------- agent and control */

static void agent_err(int err)
{
	char what[128];

	if (o.device)
		snprintf(what, sizeof(what), "cannot open RDMA device '%s'",
			 o.device);
	else
		snprintf(what, sizeof(what),
			 "cannot open an RDMA device (none with an ACTIVE port?)");
	err_msg(what, err);
}

static uint32_t make_agent_flags;
static enum rdmaxfer_progress_mode make_agent_progress;

static int make_agent(enum regcache_monitor_type mon,
		      struct rdmaxfer_agent **agentp)
{
	struct rdmaxfer_agent_attr attr;

	rdmaxfer_agent_attr_init(&attr);
	attr.device = o.device;
	attr.port = (uint8_t)o.ib_port;
	attr.gid_index = o.gid_index;
	attr.qps_per_peer = o.qps;
	attr.cm_timeout_ms = o.timeout_ms;
	attr.cache_monitor = mon;
	attr.max_inline = o.inline_size;
	attr.name = "rdmaxfer-bench";
	/* room for the window (each request is post_list WRs) */
	if ((uint64_t)o.window * o.post_list > 256)
		attr.sq_depth = (uint32_t)((uint64_t)o.window * o.post_list);
	if (attr.sq_depth > 16384)
		attr.sq_depth = 16384;
	if (attr.sq_depth && attr.cq_depth < attr.sq_depth * o.qps + 256)
		attr.cq_depth = attr.sq_depth * o.qps + 256;
	attr.signal_interval = o.signal_interval;
	attr.flags |= make_agent_flags;
	attr.progress = make_agent_progress;
	/* one thread calls the agent; a progress thread would be another */
	if (o.single && attr.progress == RDMAXFER_PROGRESS_CALLER)
		attr.flags |= RDMAXFER_AGENT_SINGLE_THREAD;
	return rdmaxfer_agent_create(&attr, agentp);
}

/* reg_access (bench_reg.c): an agent with extra RDMAXFER_AGENT_* flags */
static int make_agent_with(uint32_t flags, struct rdmaxfer_agent **agentp)
{
	int ret;

	make_agent_flags = flags;
	ret = make_agent(REGCACHE_MONITOR_AUTO, agentp);
	make_agent_flags = 0;
	return ret;
}

static int send_ctl(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		    enum ctl type, const void *msg, size_t len)
{
	int64_t deadline = now_ns() + (int64_t)CTL_TIMEOUT_MS * 1000000;
	int ret;

	for (;;) {
		ret = rdmaxfer_notif_send(peer, type, msg, len);
		if (ret != -EAGAIN)
			return ret;
		if (now_ns() > deadline)
			return -ETIMEDOUT;
		rdmaxfer_progress(agent);
	}
}

/*
 * Wait for a control message of 'type', checking the peer's health every
 * second (a dead peer ends the wait); timeout_ms < 0: as long as the peer
 * lives.
 */
static int recv_ctl(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		    enum ctl type, void *msg, size_t len, int timeout_ms)
{
	static struct rdmaxfer_notif n;
	int64_t deadline = timeout_ms < 0 ? INT64_MAX :
			   now_ns() + (int64_t)timeout_ms * 1000000;
	int ret;

	for (;;) {
		ret = rdmaxfer_wait_notifs(agent, &n, 1, 1000);
		if (ret == 1)
			break;
		if (ret < 0 && ret != -ETIMEDOUT)
			return ret;
		if (rdmaxfer_peer_state(peer) != RDMAXFER_PEER_CONNECTED)
			return rdmaxfer_peer_error(peer) ?
			       rdmaxfer_peer_error(peer) : -ECONNRESET;
		if (now_ns() > deadline)
			return -ETIMEDOUT;
	}
	if (n.value != (uint32_t)type || n.len != len ||
	    ((const uint32_t *)n.data)[0] != BENCH_MAGIC)
		return -EPROTO;
	memcpy(msg, n.data, len);
	return 0;
}

static int connect_retry(struct rdmaxfer_agent *agent,
			 struct rdmaxfer_peer **peerp)
{
	int64_t deadline = now_ns() + (int64_t)o.timeout_ms * 1000000;
	int ret;

	/* a server that is still starting refuses: retry until the timeout */
	for (;;) {
		ret = rdmaxfer_connect(agent, o.server, o.port, o.timeout_ms,
				       peerp);
		if (ret != -ECONNREFUSED || now_ns() > deadline)
			return ret;
		usleep(100000);
	}
}

/* ------------------------------------------------------ size planning */

static size_t plan_sizes(uint64_t *sizes, size_t max)
{
	size_t n = 0;
	uint64_t s;

	if (!o.all) {
		sizes[0] = o.size;
		return 1;
	}
	if (o.test == T_REG || o.test == T_REG_ACCESS) {
		for (s = REG_A_MIN; s <= REG_A_MAX && n < max; s <<= 1)
			sizes[n++] = s;
		return n;
	}
	for (s = A_MIN_SIZE; s <= A_MAX_SIZE && n < max; s <<= 1)
		sizes[n++] = s;
	return n;
}

/* ------------------------------------------------------------- server */

/* Test a posted request until it is no longer in progress. */
static int spin(struct rdmaxfer_req *req)
{
	int ret;

	while ((ret = rdmaxfer_req_test(req)) == -EINPROGRESS)
		;
	return ret;
}


static int run_server(void)
{
	struct rdmaxfer_agent *agent = NULL;
	struct rdmaxfer_peer *peer = NULL;
	struct rdmaxfer_mem *mem = NULL;
	struct rdmaxfer_req *req = NULL;
	struct ctl_params par;
	struct ctl_ready rdy = { .magic = BENCH_MAGIC };
	struct ctl_done done;
	struct ctl_result res = { .magic = BENCH_MAGIC };
	uint8_t *buf = NULL;
	uint64_t buf_len = 0;
	int ret;

	ret = make_agent(REGCACHE_MONITOR_AUTO, &agent);
	if (ret) {
		agent_err(ret);
		return ret;
	}
	ret = rdmaxfer_listen(agent, NULL, o.port);
	if (ret) {
		char what[64];

		snprintf(what, sizeof(what), "cannot listen on port %u", o.port);
		err_msg(what, ret);
		goto out_agent;
	}
	if (!o.json)
		fprintf(stderr, "# %s: waiting for a client on port %u\n",
			prog, o.port);
	ret = rdmaxfer_accept(agent, o.duration > 0 ?
			      (int)(o.duration * 1000) : -1, &peer);
	if (ret) {
		err_msg("accept", ret);
		goto out_agent;
	}
	ret = recv_ctl(agent, peer, CTL_PARAMS, &par, sizeof(par),
		       CTL_TIMEOUT_MS);
	if (ret) {
		err_msg("no test parameters from the client", ret);
		goto out_peer;
	}
	buf_len = par.buf_len;
	if (!buf_len || buf_len > 4 * MAX_SIZE || par.nsizes > 32) {
		rdy.status = -EINVAL;
		send_ctl(agent, peer, CTL_READY, &rdy, sizeof(rdy));
		ret = -EINVAL;
		err_msg("bad parameters from the client", ret);
		goto out_peer;
	}
	buf = alloc_buf(buf_len);
	if (!buf) {
		rdy.status = -ENOMEM;
		send_ctl(agent, peer, CTL_READY, &rdy, sizeof(rdy));
		ret = -ENOMEM;
		err_msg("server buffer", ret);
		goto out_peer;
	}
	/* what a READ or the write_lat ping-pong carries back */
	if (par.test == T_READ_BW || par.test == T_READ_LAT ||
	    par.test == T_WRITE_LAT)
		fill_pattern(buf, buf_len);
	ret = rdmaxfer_mem_register(agent, buf, buf_len, RDMAXFER_MEM_HOST,
				    &mem);
	if (!ret)
		ret = rdmaxfer_mem_desc(mem, 0, 0, &rdy.server);
	rdy.status = ret;
	if (send_ctl(agent, peer, CTL_READY, &rdy, sizeof(rdy)) || ret) {
		err_msg("server registration", ret ? ret : -ECONNRESET);
		ret = ret ? ret : -ECONNRESET;
		goto out_mem;
	}

	if (par.test == T_WRITE_LAT) {
		/* the passive half of the ping-pong: echo each message */
		struct rdmaxfer_iov iov;
		uint32_t c = 0, k;
		long it;

		for (k = 0; k < par.nsizes && !ret; k++) {
			uint64_t sz = par.sizes[k];
			volatile uint8_t *mark = buf + sz - 1;
			struct rdmaxfer_desc rd;

			iov.addr = buf;
			iov.len = sz;
			ret = rdmaxfer_desc_sub(&par.client, 0, sz, &rd);
			if (!ret)
				ret = rdmaxfer_xfer_prepare(peer, RDMAXFER_OP_WRITE,
							    &iov, 1, &rd, 1,
							    NULL, &req);
			if (ret)
				break;
			for (it = 0; it < par.iters; it++) {
				uint8_t m = (uint8_t)(c++ % 255 + 1);
				int64_t t = now_ns();
				long spins = 0;

				while (*mark != m) {
					if (!(++spins & 0xffff) &&
					    (rdmaxfer_peer_state(peer) !=
					     RDMAXFER_PEER_CONNECTED ||
					     now_ns() - t > (int64_t)CTL_TIMEOUT_MS * 1000000)) {
						ret = -ECONNRESET;
						break;
					}
				}
				if (ret)
					break;
				ret = rdmaxfer_req_post(req);
				if (!ret)
					ret = spin(req);
				if (ret)
					break;
			}
			rdmaxfer_req_free(req);
			req = NULL;
		}
		if (ret) {
			err_msg("write_lat echo", ret);
			goto out_mem;
		}
	}

	ret = recv_ctl(agent, peer, CTL_DONE, &done, sizeof(done), -1);
	if (ret) {
		err_msg("waiting for the end of the test", ret);
		goto out_mem;
	}
	if (done.check) {
		if (done.check_len > buf_len)
			res.status = -EINVAL;
		else if (is_atomic((enum test)par.test))
			res.mismatches = *(volatile uint64_t *)buf !=
					 done.expect_word;
		else
			res.mismatches = check_pattern(buf, done.check_len);
	}
	ret = send_ctl(agent, peer, CTL_RESULT, &res, sizeof(res));
	if (ret)
		err_msg("sending the result", ret);
	/* let the client read the result before the QPs go away */
	recv_ctl(agent, peer, CTL_DONE, &done, sizeof(done), 2000);
out_mem:
	if (mem)
		rdmaxfer_mem_deregister(mem);
	if (buf)
		munmap(buf, buf_len);
out_peer:
	rdmaxfer_peer_destroy(peer);
out_agent:
	rdmaxfer_agent_destroy(agent);
	return ret;
}

/* ------------------------------------------------------ client: tests */

struct client {
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_peer *peer;
	struct rdmaxfer_agent_info info;
	uint8_t *buf;
	uint64_t buf_len;
	struct rdmaxfer_mem *mem;
	struct rdmaxfer_desc remote;	/* the server's buffer */
	struct rdmaxfer_desc local;	/* ours */
};

static long iters_for(void)
{
	if (o.iters > 0)
		return o.iters;
	if (o.test == T_REG)
		return 100;
	if (o.test == T_NIXL)
		return 10;
	return is_lat(o.test) ? 1000 : 5000;
}

/* Post the requests ready for their repost with one doorbell; one alone
 * the direct way (--batch 1: one call fewer per message). */
static int post_ready(struct rdmaxfer_req **ready, unsigned int n)
{
	if (n == 1)
		return rdmaxfer_req_post_flags(ready[0], 0);
	return rdmaxfer_req_post_list(ready, n, 0, NULL);
}

/*
 * Bandwidth at one size: o.window requests of o.post_list messages each,
 * reposted as they complete, oldest first (they complete in order on one
 * QP).  Completed requests are reposted o.batch at a time by one
 * rdmaxfer_req_post_list() (one doorbell), as perftest posts whole post
 * lists; a partial batch goes only when fewer than o.batch requests are
 * still in flight, so a window smaller than a few batches never drains.
 * One timestamp per window's worth of completions gives the peak (the
 * best window that ends before the last post); the average covers first
 * post to last completion.
 */
static int bw_one(struct client *c, uint64_t size, long iters)
{
	enum rdmaxfer_op op = o.test == T_WRITE_BW ? RDMAXFER_OP_WRITE :
						     RDMAXFER_OP_READ;
	unsigned int w = o.window, l = o.post_list, i, nready = 0, nbatch;
	long posts = (iters + l - 1) / l, posted = 0, completed = 0, batch = 0;
	struct rdmaxfer_req **reqs, **ready;
	struct rdmaxfer_iov *iov;
	struct rdmaxfer_desc *rd;
	struct progress pg;
	char what[32];
	int64_t t0, t1, tb;
	double peak = 0;
	int ret = 0;

	if ((long)w > posts)
		w = (unsigned int)posts;
	/* a request waiting for its repost must not be tested again */
	nbatch = o.batch < w ? o.batch : w;
	reqs = calloc(w, sizeof(*reqs));
	ready = calloc(w, sizeof(*ready));
	iov = calloc(l, sizeof(*iov));
	rd = calloc(l, sizeof(*rd));
	if (!reqs || !ready || !iov || !rd) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < l; i++) {
		iov[i].addr = c->buf;
		iov[i].len = size;
		ret = rdmaxfer_desc_sub(&c->remote, 0, size, &rd[i]);
		if (ret)
			goto out;
	}
	for (i = 0; i < w; i++) {
		ret = rdmaxfer_xfer_prepare(c->peer, op, iov, l, rd, l, NULL,
					    &reqs[i]);
		if (ret) {
			err_msg("prepare", ret);
			goto out;
		}
	}
	/* --warmup: one window, not counted (perftest's bandwidth tools do
	 * none by default, so neither do we) */
	for (i = 0; o.warmup && i < w && !ret; i++)
		ret = rdmaxfer_req_post(reqs[i]);
	for (i = 0; o.warmup && i < w && !ret; i++)
		ret = rdmaxfer_req_wait(reqs[i], CTL_TIMEOUT_MS);
	if (ret) {
		err_msg("warm-up", ret);
		goto out;
	}

	snprintf(what, sizeof(what), "%" PRIu64 " B", size);
	progress_start(&pg, what);
	t0 = now_ns();
	tb = t0;
	for (i = 0; i < w && posted < posts; i++, posted++) {
		ready[nready++] = reqs[i];
		if (nready == nbatch || i + 1 == w) {
			ret = post_ready(ready, nready);
			nready = 0;
			if (ret)
				goto fail;
		}
	}
	i = 0;
	while (completed < posts) {
		ret = rdmaxfer_req_test(reqs[i]);
		if (ret == -EINPROGRESS) {
			/* a partial batch only when the device would
			 * otherwise run short: fewer than a batch in flight */
			if (nready &&
			    posted - (long)nready - completed < (long)nbatch) {
				ret = post_ready(ready, nready);
				nready = 0;
				if (ret)
					goto fail;
			}
			continue;
		}
		if (ret)
			goto fail;
		completed++;
		if (posted < posts) {
			ready[nready++] = reqs[i];
			posted++;
			if (nready == nbatch || posted == posts) {
				ret = post_ready(ready, nready);
				nready = 0;
				if (ret)
					goto fail;
			}
		}
		i = i + 1 == w ? 0 : i + 1;
		if (++batch == (long)w) {
			int64_t t = now_ns();
			double bw = (double)batch * l * size / MiB /
				    ((double)(t - tb) / 1e9);

			/* only windows that end while requests are still
			 * reposted: the drain after the last post collects
			 * requests that completed long before (at 64 B such
			 * a window read 100 times the average) */
			if (posted < posts && bw > peak)
				peak = bw;
			batch = 0;
			tb = t;
			progress_tick(&pg, t, completed * l, posts * l);
		}
	}
	t1 = now_ns();
	{
		double secs = (double)(t1 - t0) / 1e9;
		double avg = (double)posts * l * size / MiB / secs;

		if (peak < avg)
			peak = avg;
		out_bw(size, posts * l, peak, avg,
		       (double)posts * l / secs / 1e6);
	}
	ret = 0;
	goto out;
fail:
	err_msg(op == RDMAXFER_OP_WRITE ? "RDMA WRITE" : "RDMA READ", ret);
	/* drain what is still in flight before freeing */
	for (i = 0; i < w; i++)
		rdmaxfer_req_wait(reqs[i], CTL_TIMEOUT_MS);
out:
	if (reqs)
		for (i = 0; i < w; i++)
			if (reqs[i])
				rdmaxfer_req_free(reqs[i]);
	free(reqs);
	free(ready);
	free(iov);
	free(rd);
	return ret;
}

/* read_lat, fadd_lat, cswap_lat at one size: one op at a time */
static int lat_one(struct client *c, uint64_t size, long iters,
		   uint64_t *fetched, uint64_t *word_expect, long *bad)
{
	struct rdmaxfer_req *req = NULL;
	struct rdmaxfer_iov iov = { c->buf, size };
	struct rdmaxfer_desc rd;
	struct progress pg;
	char what[32];
	double *v;
	long it;
	int ret;

	v = calloc((size_t)iters, sizeof(*v));
	if (!v)
		return -ENOMEM;
	switch (o.test) {
	case T_READ_LAT:
		ret = rdmaxfer_desc_sub(&c->remote, 0, size, &rd);
		if (!ret)
			ret = rdmaxfer_xfer_prepare(c->peer, RDMAXFER_OP_READ,
						    &iov, 1, &rd, 1, NULL, &req);
		break;
	case T_FADD_LAT:
		ret = rdmaxfer_atomic_prepare(c->peer, RDMAXFER_OP_FADD,
					      &c->remote, 0, 1, 0, fetched,
					      &req);
		break;
	default:
		ret = rdmaxfer_atomic_prepare(c->peer, RDMAXFER_OP_CSWAP,
					      &c->remote, 0, *word_expect,
					      *word_expect + 1, fetched, &req);
		break;
	}
	if (ret) {
		err_msg("prepare", ret);
		free(v);
		return ret;
	}
	snprintf(what, sizeof(what), "%" PRIu64 " B", size);
	progress_start(&pg, what);
	for (it = 0; it < iters; it++) {
		int64_t t0, t1;

		if (o.test == T_CSWAP_LAT)
			rdmaxfer_atomic_set(req, *word_expect,
					    *word_expect + 1);
		t0 = now_ns();
		ret = rdmaxfer_req_post(req);
		if (!ret)
			ret = spin(req);
		t1 = now_ns();
		if (ret) {
			err_msg(test_names[o.test], ret);
			break;
		}
		v[it] = (double)(t1 - t0) / 1e3;
		if (is_atomic(o.test)) {
			/* a lone client sees every old value in sequence */
			if (*fetched != *word_expect)
				(*bad)++;
			(*word_expect)++;
		}
		if (!(it & 63))
			progress_tick(&pg, t1, it, iters);
	}
	rdmaxfer_req_free(req);
	if (!ret)
		out_lat(is_atomic(o.test) ? 8 : size, iters, v, (size_t)iters);
	free(v);
	return ret;
}

/* write_lat: ping-pong, half the round trip, as ib_write_lat reports */
static int write_lat(struct client *c, const uint64_t *sizes, size_t n,
		     long iters)
{
	uint32_t cnt = 0;
	size_t k;
	int ret = 0;

	for (k = 0; k < n && !ret; k++) {
		uint64_t sz = sizes[k];
		struct rdmaxfer_iov iov = { c->buf, sz };
		volatile uint8_t *mark = c->buf + sz - 1;
		uint8_t *out = c->buf + sz - 1;
		struct rdmaxfer_req *req = NULL;
		struct rdmaxfer_desc rd;
		struct progress pg;
		char what[32];
		double *v;
		long it;

		/* the client sends from the second half of its buffer */
		iov.addr = c->buf + c->buf_len / 2;
		out = (uint8_t *)iov.addr + sz - 1;
		v = calloc((size_t)iters, sizeof(*v));
		if (!v)
			return -ENOMEM;
		ret = rdmaxfer_desc_sub(&c->remote, 0, sz, &rd);
		if (!ret)
			ret = rdmaxfer_xfer_prepare(c->peer, RDMAXFER_OP_WRITE,
						    &iov, 1, &rd, 1, NULL, &req);
		if (ret) {
			err_msg("prepare", ret);
			free(v);
			return ret;
		}
		snprintf(what, sizeof(what), "%" PRIu64 " B", sz);
		progress_start(&pg, what);
		for (it = 0; it < iters; it++) {
			uint8_t m = (uint8_t)(cnt++ % 255 + 1);
			int64_t t0, t1, tw;
			long spins = 0;

			*out = m;
			t0 = now_ns();
			ret = rdmaxfer_req_post(req);
			if (ret)
				break;
			tw = t0;
			while (*mark != m) {
				if (!(++spins & 0xffff)) {
					tw = now_ns();
					if (tw - t0 > (int64_t)CTL_TIMEOUT_MS * 1000000 ||
					    rdmaxfer_peer_state(c->peer) !=
					    RDMAXFER_PEER_CONNECTED) {
						ret = -ETIMEDOUT;
						break;
					}
				}
			}
			t1 = now_ns();
			if (!ret)
				ret = spin(req);
			if (ret)
				break;
			v[it] = (double)(t1 - t0) / 2e3;
			if (!(it & 63))
				progress_tick(&pg, t1, it, iters);
		}
		if (ret)
			err_msg("write_lat", ret);
		else
			out_lat(sz, iters, v, (size_t)iters);
		if (ret)
			rdmaxfer_req_wait(req, CTL_TIMEOUT_MS);
		rdmaxfer_req_free(req);
		free(v);
	}
	return ret;
}

/* ---------------------------------------------------- reg (local only) */

struct raw_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	bool odp;
	char odp_why[160];
};

static int raw_open(const char *name, struct raw_dev *r)
{
	struct ibv_device **list;
	struct ibv_device_attr_ex ax;
	int n, i, ret = -ENODEV;

	memset(r, 0, sizeof(*r));
	list = ibv_get_device_list(&n);
	if (!list)
		return -ENODEV;
	for (i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name))
			continue;
		r->ctx = ibv_open_device(list[i]);
		ret = r->ctx ? 0 : -ENODEV;
		break;
	}
	ibv_free_device_list(list);
	if (ret)
		return ret;
	r->pd = ibv_alloc_pd(r->ctx);
	if (!r->pd) {
		ibv_close_device(r->ctx);
		return -ENOMEM;
	}
	memset(&ax, 0, sizeof(ax));
	ret = ibv_query_device_ex(r->ctx, NULL, &ax);
	if (ret) {
		snprintf(r->odp_why, sizeof(r->odp_why),
			 "ibv_query_device_ex failed (%d)", -ret);
	} else if (!(ax.odp_caps.general_caps & IBV_ODP_SUPPORT)) {
		snprintf(r->odp_why, sizeof(r->odp_why),
			 "%s reports no IBV_ODP_SUPPORT in odp_caps.general_caps",
			 name);
	} else if (!(ax.odp_caps.per_transport_caps.rc_odp_caps &
		     IBV_ODP_SUPPORT_WRITE)) {
		snprintf(r->odp_why, sizeof(r->odp_why),
			 "%s has ODP but not for RC RDMA WRITE", name);
	} else {
		r->odp = true;
	}
	return 0;
}

static void raw_close(struct raw_dev *r)
{
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->ctx)
		ibv_close_device(r->ctx);
}

/* median cost of ibv_reg_mr + ibv_dereg_mr in usec, or -errno */
static double raw_reg_cost(struct raw_dev *r, void *buf, uint64_t len,
			   long iters, int extra, int *errp)
{
	double *v = calloc((size_t)iters, sizeof(*v)), med;
	long i;

	*errp = 0;
	if (!v) {
		*errp = -ENOMEM;
		return 0;
	}
	for (i = 0; i < iters; i++) {
		*errp = bench_raw_batch(r->pd, buf, len, extra, 1, &v[i]);
		if (*errp) {
			free(v);
			return 0;
		}
	}
	qsort(v, (size_t)iters, sizeof(*v), cmp_double);
	med = pct(v, (size_t)iters, 0.5);
	free(v);
	return med;
}

/* reg_access's raw column: a context and PD of its own, as run_reg's */
static struct raw_dev reg_access_raw;

static int reg_access_open_pd(const char *device, struct ibv_pd **pdp)
{
	int ret = raw_open(device, &reg_access_raw);

	if (!ret)
		*pdp = reg_access_raw.pd;
	return ret;
}

static void reg_access_close_pd(struct ibv_pd *pd)
{
	(void)pd;
	raw_close(&reg_access_raw);
}

static int run_reg_access(void)
{
	struct bench_reg_cfg cfg = {
		.batches = HIT_BATCHES,
		.batch = o.iters > 0 ? (int)o.iters : HIT_BATCH,
		.csv = o.csv,
		.make_agent = make_agent_with,
		.open_pd = reg_access_open_pd,
		.close_pd = reg_access_close_pd,
	};
	uint64_t sizes[32];

	cfg.sizes = sizes;
	cfg.nsizes = plan_sizes(sizes, 32);
	return bench_reg_access(&cfg);
}

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

static int run_reg(void)
{
	struct rdmaxfer_agent *agent = NULL;
	struct rdmaxfer_agent_info info;
	struct raw_dev r;
	uint64_t sizes[32];
	size_t n = plan_sizes(sizes, 32), k;
	long iters = iters_for();
	uint8_t *buf;
	uint64_t maxs = 0;
	int ret;

	for (k = 0; k < n; k++)
		if (sizes[k] > maxs)
			maxs = sizes[k];
	ret = make_agent(REGCACHE_MONITOR_AUTO, &agent);
	if (ret) {
		agent_err(ret);
		return ret;
	}
	rdmaxfer_agent_query(agent, &info);
	ret = raw_open(info.device, &r);
	if (ret) {
		err_msg("raw verbs context", ret);
		goto out_agent;
	}
	buf = alloc_buf(maxs);
	if (!buf) {
		ret = -ENOMEM;
		err_msg("buffer", ret);
		goto out_raw;
	}
	json_open(&info);
	if (!o.json && !o.csv)
		printf("# reg: %s, cache monitor %s; raw: median of %ld per size; cache hit = rdmaxfer_mem_register_access (local-only, access 0) + rdmaxfer_mem_deregister of a cached range (remote-access memory: see reg_access), median of %d batches of %d\n",
		       info.device, info.cache_monitor, iters, HIT_BATCHES,
		       HIT_BATCH);
	for (k = 0; k < n && !ret; k++) {
		uint64_t sz = sizes[k];
		double raw, odp = -1, miss, hit, hits[HIT_BATCHES];
		struct rdmaxfer_mem *mem;
		int64_t t0;
		long i, b;
		int err;

		raw = raw_reg_cost(&r, buf, sz, iters, 0, &err);
		if (err) {
			ret = err;
			err_msg("ibv_reg_mr", err);
			break;
		}
		if (r.odp) {
			odp = raw_reg_cost(&r, buf, sz, iters,
					   IBV_ACCESS_ON_DEMAND, &err);
			if (err) {
				snprintf(r.odp_why, sizeof(r.odp_why),
					 "ibv_reg_mr(IBV_ACCESS_ON_DEMAND) failed: %s (%d)",
					 strerror(-err), err);
				r.odp = false;
				odp = -1;
			}
		}
		/* the first registration through the cache: a miss */
		t0 = now_ns();
		ret = rdmaxfer_mem_register_access(agent, buf, sz,
						   RDMAXFER_MEM_HOST, 0, &mem);
		miss = (double)(now_ns() - t0) / 1e3;
		if (ret) {
			err_msg("rdmaxfer_mem_register", ret);
			break;
		}
		rdmaxfer_mem_deregister(mem);
		/*
		 * Hits are a few microseconds, close to a timer read in the
		 * 6.1 guest: time them in batches of HIT_BATCH and take the
		 * median batch, so one preemption does not make the number.
		 */
		for (b = 0; b < HIT_BATCHES && !ret; b++) {
			t0 = now_ns();
			for (i = 0; i < HIT_BATCH && !ret; i++) {
				ret = rdmaxfer_mem_register_access(
					agent, buf, sz, RDMAXFER_MEM_HOST, 0,
					&mem);
				if (!ret)
					rdmaxfer_mem_deregister(mem);
			}
			hits[b] = (double)(now_ns() - t0) / 1e3 / HIT_BATCH;
		}
		qsort(hits, HIT_BATCHES, sizeof(hits[0]), cmp_double);
		hit = hits[HIT_BATCHES / 2];
		if (ret) {
			err_msg("rdmaxfer_mem_register", ret);
			break;
		}
		print_header();
		if (o.json) {
			json_sep();
			printf("    {\"bytes\": %" PRIu64 ", \"iterations\": %ld, \"raw_reg_usec\": %.3f, \"cache_hit_usec\": %.3f, \"cache_miss_usec\": %.3f, \"speedup\": %.1f, \"odp_reg_usec\": ",
			       sz, iters, raw, hit, miss, raw / hit);
			if (odp >= 0)
				printf("%.3f}", odp);
			else
				printf("null}");
		} else if (o.csv) {
			printf("%" PRIu64 ",%ld,%.3f,%.3f,%.3f,%.1f,", sz, iters,
			       raw, hit, miss, raw / hit);
			if (odp >= 0)
				printf("%.3f\n", odp);
			else
				printf("\n");
		} else {
			printf(" %-10" PRIu64 " %-10ld     %-20.2f %-16.3f %-17.2f %-9.0f ",
			       sz, iters, raw, hit, miss, raw / hit);
			if (odp >= 0)
				printf("%.2f\n", odp);
			else
				printf("n/a\n");
		}
		fflush(stdout);
	}
	if (o.json) {
		printf("\n  ],\n  \"odp\": %s,\n  \"odp_reason\": \"%s\"\n}\n",
		       r.odp ? "true" : "false", r.odp ? "" : r.odp_why);
	} else if (!o.csv && !r.odp) {
		printf("# ODP: not measured: %s\n", r.odp_why);
	}
	munmap(buf, maxs);
out_raw:
	raw_close(&r);
out_agent:
	rdmaxfer_agent_destroy(agent);
	return ret;
}

/* ------------------------------------------------------------- nixl */

struct nixl_row {
	double reg_ms;
	double xfer_ms;
};

static int cmp_row(const void *a, const void *b)
{
	const struct nixl_row *x = a, *y = b;
	double sx = x->reg_ms / (x->reg_ms + x->xfer_ms);
	double sy = y->reg_ms / (y->reg_ms + y->xfer_ms);

	return sx < sy ? -1 : sx > sy;
}

static void nixl_out(const char *mode, const char *phase, long iters,
		     const struct nixl_row *row)
{
	double share = 100.0 * row->reg_ms / (row->reg_ms + row->xfer_ms);
	double bw = (double)o.total / MiB / (row->xfer_ms / 1e3);

	print_header();
	if (o.json) {
		json_sep();
		printf("    {\"cache\": \"%s\", \"phase\": \"%s\", \"iterations\": %ld, \"total_bytes\": %" PRIu64 ", \"chunks\": %u, \"reg_ms\": %.3f, \"xfer_ms\": %.3f, \"reg_share_pct\": %.2f, \"xfer_mbs\": %.2f}",
		       mode, phase, iters, o.total, o.chunks, row->reg_ms,
		       row->xfer_ms, share, bw);
	} else if (o.csv) {
		printf("%s,%s,%ld,%" PRIu64 ",%u,%.3f,%.3f,%.2f,%.2f\n", mode,
		       phase, iters, o.total, o.chunks, row->reg_ms,
		       row->xfer_ms, share, bw);
	} else {
		printf(" %-6s %-8s %-12ld %-13" PRIu64 " %-8u %-11.3f %-11.3f %-13.2f %.2f\n",
		       mode, phase, iters, o.total, o.chunks, row->reg_ms,
		       row->xfer_ms, share, bw);
	}
	fflush(stdout);
}

/*
 * One WRITE of the K chunk pairs, start to end: prepare, post, wait, free.
 * Both the untimed warm-up and every timed iteration of nixl_mode() move
 * their data through here.
 */
static int nixl_xfer(struct client *c, const struct rdmaxfer_iov *iov,
		     const struct rdmaxfer_desc *rd)
{
	struct rdmaxfer_req *req = NULL;
	int ret;

	ret = rdmaxfer_xfer_prepare(c->peer, RDMAXFER_OP_WRITE, iov,
				    o.chunks, rd, o.chunks, NULL, &req);
	if (!ret)
		ret = rdmaxfer_req_post(req);
	if (!ret)
		ret = rdmaxfer_req_wait(req, CTL_TIMEOUT_MS * 4);
	if (req)
		rdmaxfer_req_free(req);
	return ret;
}

/*
 * One mode of the seed scenario.  Every iteration: register the K chunks,
 * prepare one WRITE request of K pairs, post it, wait, free it, deregister
 * the chunks.  Cache on: registration is rdmaxfer_mem_register_access
 * with access 0 (the initiator's chunks are local buffers) and
 * rdmaxfer_mem_deregister (misses on the first iteration, hits after).  Cache off: what a stack
 * without a cache pays, ibv_reg_mr + ibv_dereg_mr of every chunk on the
 * same device; the transfer then uses the library's path, warmed once
 * untimed so both modes move data the same way.
 */
static int nixl_mode(struct client *c, struct raw_dev *r, bool cached,
		     long iters)
{
	uint64_t chunk = o.total / o.chunks;
	struct rdmaxfer_iov *iov = calloc(o.chunks, sizeof(*iov));
	struct rdmaxfer_desc *rd = calloc(o.chunks, sizeof(*rd));
	struct rdmaxfer_mem **mems = calloc(o.chunks, sizeof(*mems));
	struct ibv_mr **mrs = calloc(o.chunks, sizeof(*mrs));
	struct nixl_row *rows = calloc((size_t)iters, sizeof(*rows));
	struct nixl_row steady;
	struct progress pg;
	const char *mode = cached ? "on" : "off";
	unsigned int k;
	long it;
	int ret = 0;

	if (!iov || !rd || !mems || !mrs || !rows) {
		ret = -ENOMEM;
		goto out;
	}
	for (k = 0; k < o.chunks; k++) {
		iov[k].addr = c->buf + k * chunk;
		iov[k].len = chunk;
		ret = rdmaxfer_desc_sub(&c->remote, k * chunk, chunk, &rd[k]);
		if (ret)
			goto out;
	}
	if (!cached) {
		ret = nixl_xfer(c, iov, rd);
		if (ret) {
			err_msg("nixl warm-up transfer", ret);
			goto out;
		}
	}
	progress_start(&pg, mode);
	for (it = 0; it < iters; it++) {
		int64_t t0, t1 = 0, t2 = 0, t3;

		t0 = now_ns();
		for (k = 0; k < o.chunks; k++) {
			if (cached) {
				/* the initiator's chunks are local buffers:
				 * nothing of them is exported to the peer */
				ret = rdmaxfer_mem_register_access(
					c->agent, iov[k].addr, chunk,
					RDMAXFER_MEM_HOST, 0, &mems[k]);
			} else {
				mrs[k] = ibv_reg_mr(r->pd, iov[k].addr, chunk,
						    BENCH_RAW_ACCESS);
				ret = mrs[k] ? 0 : (errno ? -errno : -EIO);
			}
			if (ret) {
				err_msg("registration", ret);
				goto unwind;
			}
		}
		t1 = now_ns();
		ret = nixl_xfer(c, iov, rd);
		t2 = now_ns();
		if (ret) {
			err_msg("nixl transfer", ret);
			goto unwind;
		}
unwind:
		for (k = 0; k < o.chunks; k++) {
			if (cached && mems[k])
				rdmaxfer_mem_deregister(mems[k]);
			else if (!cached && mrs[k])
				ibv_dereg_mr(mrs[k]);
			mems[k] = NULL;
			mrs[k] = NULL;
		}
		t3 = now_ns();
		if (ret)
			goto out;
		rows[it].reg_ms = (double)(t1 - t0 + t3 - t2) / 1e6;
		rows[it].xfer_ms = (double)(t2 - t1) / 1e6;
		progress_tick(&pg, t3, it + 1, iters);
	}
	nixl_out(mode, "first", 1, &rows[0]);
	if (iters > 1) {
		/* steady state: the median iteration (by share) after the first */
		qsort(rows + 1, (size_t)iters - 1, sizeof(*rows), cmp_row);
		steady = rows[1 + (iters - 1) / 2];
		nixl_out(mode, "steady", iters - 1, &steady);
	}
out:
	free(iov);
	free(rd);
	free(mems);
	free(mrs);
	free(rows);
	return ret;
}

/* ------------------------------------------------------------- client */

static int run_client(void)
{
	struct client c = { 0 };
	struct ctl_params par = { .magic = BENCH_MAGIC };
	struct ctl_ready rdy;
	struct ctl_done done = { .magic = BENCH_MAGIC };
	struct ctl_result res;
	struct raw_dev raw = { 0 };
	uint64_t sizes[32], maxs = 0;
	size_t n = plan_sizes(sizes, 32), k;
	long iters = iters_for(), bad = 0;
	uint64_t fetched = 0, word = 0;
	int ret, vret = 0;

	for (k = 0; k < n; k++)
		if (sizes[k] > maxs)
			maxs = sizes[k];
	if (is_atomic(o.test))
		maxs = 8;
	if (o.test == T_NIXL)
		maxs = o.total;
	c.buf_len = o.test == T_WRITE_LAT ? 2 * maxs : maxs;
	if (c.buf_len < 64)
		c.buf_len = 64;

	ret = make_agent(REGCACHE_MONITOR_AUTO, &c.agent);
	if (ret) {
		agent_err(ret);
		return ret;
	}
	rdmaxfer_agent_query(c.agent, &c.info);
	c.buf = alloc_buf(c.buf_len);
	if (!c.buf) {
		ret = -ENOMEM;
		err_msg("client buffer", ret);
		goto out_agent;
	}
	if (o.test == T_WRITE_BW || o.test == T_NIXL)
		fill_pattern(c.buf, c.buf_len);
	if (o.test == T_WRITE_LAT)	/* the half write_lat sends from */
		fill_pattern(c.buf + c.buf_len / 2, c.buf_len / 2);
	/* nixl registers its chunks per iteration: a first registration of
	 * the whole buffer here would make its first iteration a hit */
	if (o.test != T_NIXL) {
		ret = rdmaxfer_mem_register(c.agent, c.buf, c.buf_len,
					    RDMAXFER_MEM_HOST, &c.mem);
		if (!ret)
			ret = rdmaxfer_mem_desc(c.mem, 0, 0, &c.local);
		if (ret) {
			err_msg("client registration", ret);
			goto out_buf;
		}
	}
	if (o.test == T_NIXL) {
		ret = raw_open(c.info.device, &raw);
		if (ret) {
			err_msg("raw verbs context", ret);
			goto out_buf;
		}
	}

	ret = connect_retry(c.agent, &c.peer);
	if (ret) {
		char what[128];

		snprintf(what, sizeof(what), "cannot connect to %s port %u",
			 o.server, o.port);
		err_msg(what, ret);
		goto out_mem;
	}
	par.test = o.test;
	par.buf_len = o.test == T_WRITE_LAT ? maxs : c.buf_len;
	par.iters = (uint32_t)iters;
	par.nsizes = (uint32_t)n;
	memcpy(par.sizes, sizes, n * sizeof(sizes[0]));
	par.client = c.local;
	ret = send_ctl(c.agent, c.peer, CTL_PARAMS, &par, sizeof(par));
	if (!ret)
		ret = recv_ctl(c.agent, c.peer, CTL_READY, &rdy, sizeof(rdy),
			       CTL_TIMEOUT_MS);
	if (!ret && rdy.status)
		ret = rdy.status;
	if (ret) {
		err_msg("server setup", ret);
		goto out_peer;
	}
	c.remote = rdy.server;

	json_open(&c.info);
	if (!o.json && !o.csv)
		printf("# %s: %s port %u gid %d -> %s:%u, %u QP(s), window %u, post list %u, batch %u, inline <= %u B, cache %s\n",
		       test_names[o.test], c.info.device, c.info.port,
		       c.info.gid_index, o.server, o.port, o.qps, o.window,
		       o.post_list, o.batch, c.info.max_inline,
		       c.info.cache_monitor);
	switch (o.test) {
	case T_WRITE_BW:
	case T_READ_BW:
		for (k = 0; k < n && !ret; k++)
			ret = bw_one(&c, sizes[k], iters);
		break;
	case T_WRITE_LAT:
		ret = write_lat(&c, sizes, n, iters);
		break;
	case T_READ_LAT:
		for (k = 0; k < n && !ret; k++)
			ret = lat_one(&c, sizes[k], iters, NULL, NULL, &bad);
		break;
	case T_FADD_LAT:
	case T_CSWAP_LAT:
		/* fetched must be registered: it is inside our buffer */
		ret = lat_one(&c, 8, iters, (uint64_t *)c.buf, &word, &bad);
		fetched = word;
		break;
	case T_NIXL:
		/* cache on first: its first iteration is then cold (misses) */
		if (o.cache & CACHE_ON)
			ret = nixl_mode(&c, &raw, true, iters);
		if (!ret && (o.cache & CACHE_OFF))
			ret = nixl_mode(&c, &raw, false, iters);
		break;
	default:
		ret = -EINVAL;
	}

	/* the end: ask the server to check what it holds */
	done.check = o.validate && !ret &&
		     (o.test == T_WRITE_BW || o.test == T_NIXL ||
		      is_atomic(o.test));
	done.check_len = o.test == T_NIXL ? o.total / o.chunks * o.chunks :
			 maxs;
	done.expect_word = fetched;
	if (send_ctl(c.agent, c.peer, CTL_DONE, &done, sizeof(done)) == 0 &&
	    recv_ctl(c.agent, c.peer, CTL_RESULT, &res, sizeof(res),
		     CTL_TIMEOUT_MS) == 0) {
		if (done.check && (res.status || res.mismatches)) {
			fprintf(stderr, "%s: validate: the server found %" PRIu64 " bad byte(s)/word(s) (status %d)\n",
				prog, res.mismatches, res.status);
			vret = -EIO;
		}
	} else if (done.check) {
		fprintf(stderr, "%s: validate: no answer from the server\n",
			prog);
		vret = -EIO;
	}
	send_ctl(c.agent, c.peer, CTL_DONE, &done, sizeof(done));
	if (o.validate && !ret) {
		uint64_t badb = 0;

		if (o.test == T_READ_BW || o.test == T_READ_LAT)
			badb = check_pattern(c.buf, maxs);
		else if (o.test == T_WRITE_LAT)
			/* the echo carries the server's pattern, last byte
			 * excepted (the ping-pong marker) */
			badb = maxs > 1 ? check_pattern(c.buf, maxs - 1) : 0;
		if (badb || bad) {
			fprintf(stderr, "%s: validate: %" PRIu64 " bad byte(s), %ld unexpected atomic result(s)\n",
				prog, badb, bad);
			vret = -EIO;
		}
	}
	json_close(vret);
	if (!ret && vret)
		ret = vret;
	if (!ret && o.validate && !o.json && !o.csv)
		printf("# validate: passed\n");
	if (!ret && o.plot) {
		char title[128];

		snprintf(title, sizeof(title), "rdmaxfer-bench %s on %s",
			 test_names[o.test], c.info.device);
		plot_series.label = "rdmaxfer-bench";
		ret = bench_plot(prog, o.plot, title, is_lat(o.test),
				 &plot_series, 1);
	}
out_peer:
	rdmaxfer_peer_destroy(c.peer);
out_mem:
	if (c.mem)
		rdmaxfer_mem_deregister(c.mem);
	raw_close(&raw);
out_buf:
	munmap(c.buf, c.buf_len);
out_agent:
	rdmaxfer_agent_destroy(c.agent);
	return ret;
}

/* ------------------------------------------------------------- main */

static void usage(FILE *f)
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
static int check_compare_plot(bool reps_set)
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
