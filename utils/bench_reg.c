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
 *             an exact entry kept after the deregister, a hit.
 * Each column is the median batch, per cycle, in microseconds.  The
 * cached agent registers a buffer of its own: two caches of one process
 * cannot both watch the same pages with userfaultfd (libregcache(7)).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include "bench_reg.h"

enum { M_LOCAL, M_REMOTE, M_CACHED, M_COUNT };

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

int bench_reg_access(const struct bench_reg_cfg *cfg)
{
	static const char *const names[M_COUNT] = { "local", "remote",
						    "cached" };
	struct rdmaxfer_agent *def = NULL, *keep = NULL;
	struct rdmaxfer_agent_info info;
	double *v[M_COUNT] = { NULL }, med[M_COUNT];
	uint64_t maxs = 0;
	size_t k;
	uint8_t *buf = MAP_FAILED, *kbuf;
	int ret, m, b;

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
	for (m = 0; m < M_COUNT; m++) {
		v[m] = calloc((size_t)cfg->batches, sizeof(double));
		if (!v[m]) {
			ret = -ENOMEM;
			goto out;
		}
	}
	buf = mmap(NULL, 2 * maxs, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		ret = -ENOMEM;
		goto out;
	}
	memset(buf, 0x5a, 2 * maxs);
	kbuf = buf + maxs;
	if (cfg->csv)
		printf("bytes,batches,batch,local_usec,remote_usec,cached_usec\n");
	else
		printf("# reg_access: %s, cache monitor %s; register + deregister of one range, usec per cycle, median of %d batches of %d\n"
		       " #bytes      local[usec]  remote[usec]  cached-rkeys[usec]  remote/local\n",
		       info.device, info.cache_monitor, cfg->batches,
		       cfg->batch);
	for (k = 0; k < cfg->nsizes && !ret; k++) {
		uint64_t sz = cfg->sizes[k];

		/* warm: the first (missing) registration of each kind */
		for (m = 0; m < M_COUNT && !ret; m++)
			ret = br_batch(m == M_CACHED ? keep : def,
				       m == M_CACHED ? kbuf : buf, sz,
				       m == M_LOCAL ? 0 : RDMAXFER_ACCESS_REMOTE,
				       1, &med[m]);
		for (b = 0; b < cfg->batches && !ret; b++)
			for (m = 0; m < M_COUNT && !ret; m++)
				ret = br_batch(m == M_CACHED ? keep : def,
					       m == M_CACHED ? kbuf : buf,
					       sz, m == M_LOCAL ? 0 :
					       RDMAXFER_ACCESS_REMOTE,
					       cfg->batch, &v[m][b]);
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
			printf("%" PRIu64 ",%d,%d,%.3f,%.3f,%.3f\n", sz,
			       cfg->batches, cfg->batch, med[M_LOCAL],
			       med[M_REMOTE], med[M_CACHED]);
		else
			printf(" %-11" PRIu64 " %-12.3f %-13.3f %-19.3f %.1f\n",
			       sz, med[M_LOCAL], med[M_REMOTE], med[M_CACHED],
			       med[M_REMOTE] / med[M_LOCAL]);
		fflush(stdout);
	}
out:
	if (buf != MAP_FAILED)
		munmap(buf, 2 * maxs);
	for (m = 0; m < M_COUNT; m++)
		free(v[m]);
	rdmaxfer_agent_destroy(keep);
	rdmaxfer_agent_destroy(def);
	return ret;
}
