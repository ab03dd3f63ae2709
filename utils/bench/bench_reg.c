// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_reg.c - rdmaxfer-bench "reg_access": what the access a range is
 * registered with costs on the register + deregister cycle.
 *
 * The same buffer is registered and deregistered over and over (what an
 * application doing per-transfer registration does), three ways, batch by
 * batch interleaved so that machine noise hits all three alike:
 *  local      rdmaxfer_mem_register_access(access 0): cached, a hit;
 *  remote     RDMAXFER_ACCESS_REMOTE, default agent: the rkey must die at
 *             the deregister, so every cycle is a real registration
 *             (exact mode), or a bind and an unbind of a memory window
 *             over a kept registration (RDMAXFER_RKEY_MODE=window);
 *  cached     RDMAXFER_ACCESS_REMOTE, RDMAXFER_AGENT_CACHE_RKEYS agent:
 *             an exact entry kept after the deregister, a hit;
 *  regcache   regcache_get() + regcache_put() of a cache of the
 *             benchmark's own (same monitor kind, a backend that never
 *             runs on a hit): the floor under the two hit columns, so
 *             local/regcache is what librdmaxfer's handle costs on top;
 *  raw        ibv_reg_mr() + ibv_dereg_mr() with the remote column's
 *             access on the agent's device, no cache: remote/raw is what
 *             a cache miss whose registration is dropped again costs
 *             against a stack without a cache.
 * Each column is the median batch, per cycle, in microseconds.  The
 * cached agent and the bare cache register buffers of their own: two
 * caches of one process cannot both watch the same pages with
 * userfaultfd (libregcache(7)).
 *
 * Before anything else registers, the first registration of the process
 * through the cache (local, a miss) and the first raw one are timed once
 * each, in an order the process id's parity picks (so that repeated runs
 * alternate which one finds the device and the kernel cold).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>
#include <regcache.h>

#include "bench.h"
#include "bench_reg.h"

enum { M_LOCAL, M_REMOTE, M_CACHED, M_CACHE, M_RAW, M_COUNT };

static int64_t br_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int br_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One batch of n register + deregister cycles; usec per cycle. */
static int br_batch(struct rdmaxfer_agent *agent, void *buf, uint64_t len,
		    uint32_t access, int n, double *usec)
{
	struct rdmaxfer_mem *mem;
	int64_t t0 = br_now_ns();
	int i, ret;

	for (i = 0; i < n; i++) {
		ret = rdmaxfer_mem_register_access(agent, buf, len,
						   RDMAXFER_MEM_HOST, access,
						   &mem);
		if (ret)
			return ret;
		rdmaxfer_mem_deregister(mem);
	}
	*usec = (double)(br_now_ns() - t0) / 1e3 / n;
	return 0;
}

/* The bare cache's backend: a hit never calls it; a miss "registers"
 * nothing (the handle is the address). */
static int br_null_reg(void *user, void *addr, size_t len, uint32_t access,
		       void **handle)
{
	(void)user;
	(void)len;
	(void)access;
	*handle = addr;
	return 0;
}

static int br_null_dereg(void *user, void *handle)
{
	(void)user;
	(void)handle;
	return 0;
}

/* One batch of n regcache_get + regcache_put of one range. */
static int br_cache_batch(struct regcache *cache, void *buf, uint64_t len,
			  int n, double *usec)
{
	struct regcache_entry *e;
	int64_t t0 = br_now_ns();
	int i, ret;

	for (i = 0; i < n; i++) {
		ret = regcache_get(cache, buf, len, 0, &e);
		if (ret)
			return ret;
		regcache_put(cache, e);
	}
	*usec = (double)(br_now_ns() - t0) / 1e3 / n;
	return 0;
}

int bench_raw_batch(struct ibv_pd *pd, void *buf, uint64_t len, int extra,
		    int n, double *usec)
{
	struct ibv_mr *mr;
	int64_t t0 = br_now_ns();
	int i;

	for (i = 0; i < n; i++) {
		mr = ibv_reg_mr(pd, buf, len, BENCH_RAW_ACCESS | extra);
		if (!mr)
			return errno ? -errno : -EIO;
		ibv_dereg_mr(mr);
	}
	*usec = (double)(br_now_ns() - t0) / 1e3 / n;
	return 0;
}

/* One batch of mode m. */
static int br_mode_batch(int m, struct rdmaxfer_agent *def,
			 struct rdmaxfer_agent *keep, struct regcache *cache,
			 struct ibv_pd *pd, uint8_t *buf, uint64_t maxs,
			 uint64_t sz, int n, double *usec)
{
	switch (m) {
	case M_LOCAL:
		return br_batch(def, buf, sz, 0, n, usec);
	case M_REMOTE:
		return br_batch(def, buf, sz, RDMAXFER_ACCESS_REMOTE, n, usec);
	case M_CACHED:
		return br_batch(keep, buf + maxs, sz, RDMAXFER_ACCESS_REMOTE,
				n, usec);
	case M_CACHE:
		return br_cache_batch(cache, buf + 2 * maxs, sz, n, usec);
	default:
		return bench_raw_batch(pd, buf + 3 * maxs, sz, 0, n, usec);
	}
}

/* One local register + deregister (a miss); usec, and usec in reg. */
static int br_first_one(struct rdmaxfer_agent *agent, uint8_t *buf,
			uint64_t sz, double *usec, double *reg_usec)
{
	struct regcache_stats st0, st1;
	int ret;

	memset(&st0, 0, sizeof(st0));
	memset(&st1, 0, sizeof(st1));
	rdmaxfer_agent_cache_stats(agent, &st0);
	ret = br_batch(agent, buf, sz, 0, 1, usec);
	rdmaxfer_agent_cache_stats(agent, &st1);
	*reg_usec = (double)(st1.reg_ns - st0.reg_ns) / 1e3;
	return ret;
}

/*
 * The first registration of the process: a local miss through the
 * default agent (the cache's ordinary path) and a raw ibv_reg_mr, once
 * each, nothing registered before; "in reg" is the part of the cached one
 * spent in the registration callback (the cache's reg_ns), the rest is
 * the cache, its monitor and the handle.  Then the first registration of
 * the second agent's cache: a miss as well, but with the code paths and
 * the process warm, so first - second is what the process pays once.
 */
static int br_first(struct rdmaxfer_agent *def, struct rdmaxfer_agent *keep,
		    struct ibv_pd *pd, uint8_t *buf, uint64_t maxs, uint64_t sz)
{
	double cached = 0, cached_reg = 0, second = 0, second_reg = 0, raw = 0;
	bool raw_first = getpid() & 1;
	int k, ret = 0;

	for (k = 0; k < 2 && !ret; k++) {
		if ((k == 0) == raw_first)
			ret = bench_raw_batch(pd, buf + 3 * maxs, sz, 0, 1, &raw);
		else
			ret = br_first_one(def, buf, sz, &cached, &cached_reg);
	}
	if (!ret)
		ret = br_first_one(keep, buf + maxs, sz, &second, &second_reg);
	if (ret)
		return ret;
	printf("# first registration of the process, %" PRIu64 " B (%s first): cache %.1f usec (in reg %.1f), raw %.1f usec, cache - raw %.1f usec; first of a second cache %.1f usec (in reg %.1f)\n",
	       sz, raw_first ? "raw" : "cache", cached, cached_reg, raw,
	       cached - raw, second, second_reg);
	return 0;
}

/* One size: the first (missing) registration of each kind, then the
 * batches of every mode interleaved; med: each mode's median batch. */
static int br_size(const struct bench_reg_cfg *cfg,
		   struct rdmaxfer_agent *def, struct rdmaxfer_agent *keep,
		   struct regcache *cache, struct ibv_pd *pd, uint8_t *buf,
		   uint64_t maxs, uint64_t sz, double **v, double *med)
{
	static const char *const names[M_COUNT] = { "local", "remote",
						    "cached", "regcache", "raw" };
	int ret = 0, m, b;

	/* warm: the first (missing) registration of each kind */
	for (m = 0; m < M_COUNT && !ret; m++)
		ret = br_mode_batch(m, def, keep, cache, pd, buf,
				    maxs, sz, 1, &med[m]);
	for (b = 0; b < cfg->batches && !ret; b++)
		for (m = 0; m < M_COUNT && !ret; m++)
			ret = br_mode_batch(m, def, keep, cache, pd,
					    buf, maxs, sz, cfg->batch,
					    &v[m][b]);
	if (ret) {
		fprintf(stderr, "reg_access: %s register of %" PRIu64
			" B: %s (%d)\n", names[m > 0 ? m - 1 : 0], sz,
			rdmaxfer_strerror(ret), ret);
		return ret;
	}
	for (m = 0; m < M_COUNT; m++) {
		qsort(v[m], (size_t)cfg->batches, sizeof(double),
		      br_cmp);
		med[m] = v[m][cfg->batches / 2];
	}
	return 0;
}

/* One size's row. */
static void br_row(const struct bench_reg_cfg *cfg, uint64_t sz,
		   const double *med)
{
	if (cfg->csv)
		printf("%" PRIu64 ",%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f\n",
		       sz, cfg->batches, cfg->batch, med[M_LOCAL],
		       med[M_REMOTE], med[M_CACHED], med[M_CACHE],
		       med[M_RAW]);
	else
		printf(" %-11" PRIu64 " %-12.3f %-13.3f %-19.3f %-15.3f %-10.3f %-13.1f %-15.2f %-16.2f %.3f\n",
		       sz, med[M_LOCAL], med[M_REMOTE], med[M_CACHED],
		       med[M_CACHE], med[M_RAW],
		       med[M_REMOTE] / med[M_LOCAL],
		       med[M_LOCAL] / med[M_CACHE],
		       med[M_CACHED] / med[M_CACHE],
		       med[M_REMOTE] / med[M_RAW]);
}

int bench_reg_access(const struct bench_reg_cfg *cfg)
{
	struct rdmaxfer_agent *def = NULL, *keep = NULL;
	struct regcache_attr attr = {
		.reg = br_null_reg,
		.dereg = br_null_dereg,
		.monitor = REGCACHE_MONITOR_AUTO,
	};
	struct regcache *cache = NULL;
	struct ibv_pd *pd = NULL;
	struct rdmaxfer_agent_info info;
	double *v[M_COUNT] = { NULL }, med[M_COUNT];
	uint64_t maxs = 0;
	size_t k;
	uint8_t *buf = MAP_FAILED;
	int ret, m = 0;

	if (!cfg || !cfg->nsizes || cfg->batches < 1 || cfg->batch < 1)
		return -EINVAL;
	for (k = 0; k < cfg->nsizes; k++)
		if (cfg->sizes[k] > maxs)
			maxs = cfg->sizes[k];
	ret = cfg->make_agent(0, &def);
	if (!ret)
		ret = cfg->make_agent(RDMAXFER_AGENT_CACHE_RKEYS, &keep);
	if (ret) {
		fprintf(stderr, "reg_access: agent: %s (%d)\n",
			rdmaxfer_strerror(ret), ret);
		goto out;
	}
	/* the variable may have turned the default agent into a caching one */
	rdmaxfer_agent_query(def, &info);
	if (info.flags & RDMAXFER_AGENT_CACHE_RKEYS) {
		fprintf(stderr, "reg_access: unset RDMAXFER_CACHE_RKEYS: the default column would cache rkeys\n");
		ret = -EINVAL;
		goto out;
	}
	ret = cfg->open_pd(info.device, &pd);
	if (ret) {
		fprintf(stderr, "reg_access: %s: protection domain: %s (%d)\n",
			info.device, rdmaxfer_strerror(ret), ret);
		goto out;
	}
	ret = regcache_create(&attr, &cache);
	if (ret) {
		fprintf(stderr, "reg_access: regcache_create: %s (%d)\n",
			rdmaxfer_strerror(ret), ret);
		goto out;
	}
	for (m = 0; m < M_COUNT; m++) {
		v[m] = calloc((size_t)cfg->batches, sizeof(double));
		if (!v[m]) {
			ret = -ENOMEM;
			goto out;
		}
	}
	/* the agents' range, the caching agent's, the bare cache's, raw */
	buf = mmap(NULL, 4 * maxs, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		ret = -ENOMEM;
		goto out;
	}
	memset(buf, 0x5a, 4 * maxs);
	if (!cfg->csv) {
		printf("# reg_access: %s, cache monitor %s (regcache: %s), remote column's rkey mode %s; register + deregister of one range, usec per cycle, median of %d batches of %d\n",
		       info.device, info.cache_monitor,
		       regcache_monitor_name(cache),
		       rkey_mode_name(info.rkey_mode), cfg->batches,
		       cfg->batch);
		ret = br_first(def, keep, pd, buf, maxs, cfg->sizes[0]);
		if (ret) {
			fprintf(stderr, "reg_access: first registration: %s (%d)\n",
				rdmaxfer_strerror(ret), ret);
			goto out;
		}
	}
	if (cfg->csv)
		printf("bytes,batches,batch,local_usec,remote_usec,cached_usec,regcache_usec,raw_usec\n");
	else
		printf(" #bytes      local[usec]  remote[usec]  cached-rkeys[usec]  regcache[usec]  raw[usec]  remote/local  local/regcache  cached/regcache  remote/raw\n");
	for (k = 0; k < cfg->nsizes && !ret; k++) {
		uint64_t sz = cfg->sizes[k];

		ret = br_size(cfg, def, keep, cache, pd, buf, maxs, sz, v, med);
		if (ret)
			break;
		br_row(cfg, sz, med);
		fflush(stdout);
	}
out:
	if (buf != MAP_FAILED)
		munmap(buf, 4 * maxs);
	for (m = 0; m < M_COUNT; m++)
		free(v[m]);
	regcache_destroy(cache);
	if (pd)
		cfg->close_pd(pd);
	rdmaxfer_agent_destroy(keep);
	rdmaxfer_agent_destroy(def);
	return ret;
}

int raw_open(const char *name, struct raw_dev *r)
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

void raw_close(struct raw_dev *r)
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

int run_reg_access(void)
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

/* A cached range's first registration (a miss) and its hits (the
 * median batch), in usec. */
static int reg_cache_cost(struct rdmaxfer_agent *agent, uint8_t *buf,
			  uint64_t sz, double *miss, double *hit)
{
	double hits[HIT_BATCHES];
	struct rdmaxfer_mem *mem;
	int64_t t0;
	long i, b;
	int ret;

	/* the first registration through the cache: a miss */
	t0 = now_ns();
	ret = rdmaxfer_mem_register_access(agent, buf, sz,
					   RDMAXFER_MEM_HOST, 0, &mem);
	*miss = (double)(now_ns() - t0) / 1e3;
	if (ret) {
		err_msg("rdmaxfer_mem_register", ret);
		return ret;
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
	*hit = hits[HIT_BATCHES / 2];
	if (ret)
		err_msg("rdmaxfer_mem_register", ret);
	return ret;
}

/* One size's row (odp < 0: not measured). */
static void reg_row(uint64_t sz, long iters, double raw, double hit,
		    double miss, double odp)
{
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
}

int run_reg(void)
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
		double raw, odp = -1, miss, hit;
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
		ret = reg_cache_cost(agent, buf, sz, &miss, &hit);
		if (ret)
			break;
		reg_row(sz, iters, raw, hit, miss, odp);
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
