// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_common.c - rdmaxfer-bench's shared helpers: the options, data
 * patterns and buffers, size and number parsing, perftest-style rows and
 * their JSON, progress lines, agents with the benchmark's options, and
 * the control messages between the two ends.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include "bench.h"

struct opts o = {
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

const char *prog = "rdmaxfer-bench";
struct rdmaxfer_directory *bench_dir;	/* --directory */

static bool rows_started;

struct bench_series plot_series;	/* --plot: the rows printed */

static void plot_add(uint64_t bytes, double value)
{
	if (plot_series.n < BENCH_MAX_POINTS) {
		plot_series.bytes[plot_series.n] = bytes;
		plot_series.value[plot_series.n++] = value;
	}
}

void err_msg(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s (%d)\n", prog, what,
		rdmaxfer_strerror(err), err);
}

uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 131 + 7 + (i >> 8));
}

void fill_pattern(uint8_t *p, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern(i);
}

uint64_t check_pattern(const uint8_t *p, uint64_t len)
{
	uint64_t i, bad = 0;

	for (i = 0; i < len; i++)
		if (p[i] != pattern(i))
			bad++;
	return bad;
}

void *alloc_buf(uint64_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0, len);	/* touch: registration cost, not faults */
	return p;
}

int parse_size(const char *s, uint64_t *out)
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

int parse_long(const char *s, long min, long max, long *out)
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

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* p in [0,1] of sorted v[n] */
double pct(const double *v, size_t n, double p)
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

void print_header(void)
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

void json_sep(void)
{
	if (!json_first)
		printf(",\n");
	json_first = false;
}

void out_bw(uint64_t bytes, long iters, double peak, double avg,
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

void out_lat(uint64_t bytes, long iters, double *v, size_t n)
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

void json_open(const struct rdmaxfer_agent_info *info)
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
	if (bench_target_rkey_mode)
		printf("  \"target_rkey_mode\": \"%s\",\n",
		       rkey_mode_name(bench_target_rkey_mode));
	if (o.test == T_WRITE_LAT)
		printf("  \"wait\": \"%s\",\n", wait_names[o.wait]);
	printf("  \"window\": %u,\n  \"qps\": %u,\n  \"post_list\": %u,\n  \"batch\": %u,\n  \"results\": [\n",
	       o.window, o.qps, o.post_list, o.batch);
}

/* Fields after the rows (what a family learns only once it ran): each
 * ",\n  \"name\": value"; bounded, the rest is dropped. */
static char json_tail[1024];

void json_tail_add(const char *fmt, ...)
{
	size_t used = strlen(json_tail);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(json_tail + used, sizeof(json_tail) - used, fmt, ap);
	va_end(ap);
}

void json_close(int validate_status)
{
	if (!o.json)
		return;
	printf("\n  ]%s,\n  \"validate\": \"%s\"\n}\n", json_tail,
	       !o.validate ? "off" : validate_status ? "failed" : "passed");
}

uint32_t bench_target_rkey_mode;

const char *rkey_mode_name(uint32_t mode)
{
	switch (mode) {
	case RDMAXFER_RKEY_AUTO:
		return "auto";
	case RDMAXFER_RKEY_EXACT:
		return "exact";
	case RDMAXFER_RKEY_WINDOW:
		return "window";
	case RDMAXFER_RKEY_CACHED:
		return "cached";
	}
	return "unknown";
}

void progress_start(struct progress *p, const char *what)
{
	p->start = now_ns();
	p->next = p->start + PROGRESS_NS;
	p->what = what;
}

void agent_err(int err)
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

enum rdmaxfer_progress_mode make_agent_progress;

int make_agent(enum regcache_monitor_type mon,
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
	attr.rkey_mode = o.rkey_mode;	/* 0: $RDMAXFER_RKEY_MODE, else auto */
	attr.flags |= make_agent_flags;
	attr.progress = make_agent_progress;
	/* one thread calls the agent; a progress thread would be another */
	if (o.single && attr.progress == RDMAXFER_PROGRESS_CALLER)
		attr.flags |= RDMAXFER_AGENT_SINGLE_THREAD;
	return rdmaxfer_agent_create(&attr, agentp);
}

/* reg_access (bench_reg.c): an agent with extra RDMAXFER_AGENT_* flags */
int make_agent_with(uint32_t flags, struct rdmaxfer_agent **agentp)
{
	int ret;

	make_agent_flags = flags;
	ret = make_agent(REGCACHE_MONITOR_AUTO, agentp);
	make_agent_flags = 0;
	return ret;
}

int send_ctl(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
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
int recv_ctl(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
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

int connect_retry(struct rdmaxfer_agent *agent,
		  struct rdmaxfer_peer **peerp)
{
	int64_t deadline = now_ns() + (int64_t)o.timeout_ms * 1000000;
	int ret;

	/* by name: the directory waits for the name up to the timeout */
	if (o.name)
		return rdmaxfer_connect_name(bench_dir, agent, o.name,
					     o.timeout_ms, peerp);
	/* a server that is still starting refuses: retry until the timeout */
	for (;;) {
		ret = rdmaxfer_connect(agent, o.server, o.port, o.timeout_ms,
				       peerp);
		if (ret != -ECONNREFUSED || now_ns() > deadline)
			return ret;
		usleep(100000);
	}
}

/* The directory is closed before the agent it published or connected
 * goes (rdmaxfer_directory_close(3)). */
void dir_done(void)
{
	rdmaxfer_directory_close(bench_dir);
	bench_dir = NULL;
}

size_t plan_sizes(uint64_t *sizes, size_t max)
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

long iters_for(void)
{
	if (o.iters > 0)
		return o.iters;
	if (o.test == T_REG)
		return 100;
	if (o.test == T_NIXL)
		return 10;
	return is_lat(o.test) ? 1000 : 5000;
}
