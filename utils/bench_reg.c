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
 *             the deregister, so every cycle is a real registration;
 *  cached     RDMAXFER_ACCESS_REMOTE, RDMAXFER_AGENT_CACHE_RKEYS agent:
 *             an exact entry kept after the deregister, a hit;
 *  regcache   regcache_get() + regcache_put() of a cache of the
 *             benchmark's own (same monitor kind, a backend that never
 *             runs on a hit): the floor under the two hit columns, so
 *             local/regcache is what librdmaxfer's handle costs on top.
 * Each column is the median batch, per cycle, in microseconds.  The
 * cached agent and the bare cache register buffers of their own: two
 * caches of one process cannot both watch the same pages with
 * userfaultfd (libregcache(7)).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include <regcache.h>

#include "bench_reg.h"

enum { M_LOCAL, M_REMOTE, M_CACHED, M_CACHE, M_COUNT };

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

/* One batch of mode m. */
static int br_mode_batch(int m, struct rdmaxfer_agent *def,
			 struct rdmaxfer_agent *keep, struct regcache *cache,
			 uint8_t *buf, uint64_t maxs, uint64_t sz, int n,
			 double *usec)
{
	switch (m) {
	case M_LOCAL:
		return br_batch(def, buf, sz, 0, n, usec);
	case M_REMOTE:
		return br_batch(def, buf, sz, RDMAXFER_ACCESS_REMOTE, n, usec);
	case M_CACHED:
		return br_batch(keep, buf + maxs, sz, RDMAXFER_ACCESS_REMOTE,
				n, usec);
	default:
		return br_cache_batch(cache, buf + 2 * maxs, sz, n, usec);
	}
}

int bench_reg_access(const struct bench_reg_cfg *cfg)
{
	static const char *const names[M_COUNT] = { "local", "remote",
						    "cached", "regcache" };
	struct rdmaxfer_agent *def = NULL, *keep = NULL;
	struct regcache_attr attr = {
		.reg = br_null_reg,
		.dereg = br_null_dereg,
		.monitor = REGCACHE_MONITOR_AUTO,
	};
	struct regcache *cache = NULL;
	struct rdmaxfer_agent_info info;
	double *v[M_COUNT] = { NULL }, med[M_COUNT];
	uint64_t maxs = 0;
	size_t k;
	uint8_t *buf = MAP_FAILED;
	int ret, m = 0, b;

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
	/* the agents' range, the caching agent's, the bare cache's */
	buf = mmap(NULL, 3 * maxs, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		ret = -ENOMEM;
		goto out;
	}
	memset(buf, 0x5a, 3 * maxs);
	if (cfg->csv)
		printf("bytes,batches,batch,local_usec,remote_usec,cached_usec,regcache_usec\n");
	else
		printf("# reg_access: %s, cache monitor %s (regcache: %s); register + deregister of one range, usec per cycle, median of %d batches of %d\n"
		       " #bytes      local[usec]  remote[usec]  cached-rkeys[usec]  regcache[usec]  remote/local  local/regcache  cached/regcache\n",
		       info.device, info.cache_monitor,
		       regcache_monitor_name(cache), cfg->batches, cfg->batch);
	for (k = 0; k < cfg->nsizes && !ret; k++) {
		uint64_t sz = cfg->sizes[k];

		/* warm: the first (missing) registration of each kind */
		for (m = 0; m < M_COUNT && !ret; m++)
			ret = br_mode_batch(m, def, keep, cache, buf, maxs, sz,
					    1, &med[m]);
		for (b = 0; b < cfg->batches && !ret; b++)
			for (m = 0; m < M_COUNT && !ret; m++)
				ret = br_mode_batch(m, def, keep, cache, buf,
						    maxs, sz, cfg->batch,
						    &v[m][b]);
		if (ret) {
			fprintf(stderr, "reg_access: %s register of %" PRIu64
				" B: %s (%d)\n", names[m > 0 ? m - 1 : 0], sz,
				rdmaxfer_strerror(ret), ret);
			break;
		}
		for (m = 0; m < M_COUNT; m++) {
			qsort(v[m], (size_t)cfg->batches, sizeof(double),
			      br_cmp);
			med[m] = v[m][cfg->batches / 2];
		}
		if (cfg->csv)
			printf("%" PRIu64 ",%d,%d,%.3f,%.3f,%.3f,%.3f\n", sz,
			       cfg->batches, cfg->batch, med[M_LOCAL],
			       med[M_REMOTE], med[M_CACHED], med[M_CACHE]);
		else
			printf(" %-11" PRIu64 " %-12.3f %-13.3f %-19.3f %-15.3f %-13.1f %-15.2f %.2f\n",
			       sz, med[M_LOCAL], med[M_REMOTE], med[M_CACHED],
			       med[M_CACHE], med[M_REMOTE] / med[M_LOCAL],
			       med[M_LOCAL] / med[M_CACHE],
			       med[M_CACHED] / med[M_CACHE]);
		fflush(stdout);
	}
out:
	if (buf != MAP_FAILED)
		munmap(buf, 3 * maxs);
	for (m = 0; m < M_COUNT; m++)
		free(v[m]);
	regcache_destroy(cache);
	rdmaxfer_agent_destroy(keep);
	rdmaxfer_agent_destroy(def);
	return ret;
}
