// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_regcache.c - libregcache benchmarks (numbers, not pass/fail).
 *
 *   bench_regcache [--monitor kmod|uffd] [--vm --dev rxe0] [--quick] [--hits]
 *
 * Host part (null backend, so only the cache is measured):
 *   hit latency of get+put, p50/p99, with 1, 10^3 and 10^5 live entries,
 *   for a repeated entry (per-thread hint) and random entries (tree walk);
 *   the repost check of k held entries (k valid calls vs one generation);
 *   two-thread scaling; miss overhead over the raw register call; mmap/
 *   munmap churn of unrelated memory with 10^4 cached entries per monitor
 *   vs none; coalescing of 2048 adjacent chunks with and without merging.
 * --vm adds an ibv_reg_mr backend: raw ibv_reg_mr+dereg vs a cache hit for
 *   4 KiB .. 64 MiB, and the coalescing run with real registrations.
 * Ratios are only meaningful within one run (the VM runs under TCG).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "regcache.h"

static size_t psz;
static enum regcache_monitor_type mon = REGCACHE_MONITOR_AUTO;
static bool quick;
static bool hits_only;	/* --hits: hit latency and scaling only */
static bool vm;		/* under TCG: fewer samples, the same measurements */
static struct ibv_pd *pd;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------- backends */

static int null_reg(void *u, void *a, size_t l, uint32_t acc, void **h)
{
	*h = a;
	return 0;
}

static int null_dereg(void *u, void *h)
{
	return 0;
}

/* A register call with a real kernel round trip over the range. */
static int sys_reg(void *u, void *a, size_t l, uint32_t acc, void **h)
{
	*h = a;
	return msync(a, l, MS_ASYNC) ? -errno : 0;
}

static _Atomic long verbs_regs;

static int verbs_reg(void *u, void *a, size_t l, uint32_t acc, void **h)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, a, l, (int)acc);

	if (!mr)
		return errno ? -errno : -EIO;
	verbs_regs++;
	*h = mr;
	return 0;
}

static int verbs_dereg(void *u, void *h)
{
	return -ibv_dereg_mr(h);
}

static struct regcache *make(regcache_reg_fn r, regcache_dereg_fn d,
			     enum regcache_monitor_type m, size_t max_entries,
			     size_t merge_max)
{
	struct regcache_attr a = {
		.reg = r, .dereg = d, .monitor = m, .max_entries = max_entries,
		.merge_max = merge_max, .flags = REGCACHE_ATTR_NO_ENV,
	};
	struct regcache *c;
	int ret = regcache_create(&a, &c);

	if (ret) {
		fprintf(stderr, "regcache_create: %s\n", strerror(-ret));
		exit(1);
	}
	return c;
}

static char *map(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

/* ----------------------------------------------------------- hit latency */

#define BATCH	64

/*
 * Entries are one page each, adjacent (merging is off in these caches):
 * adjacent ranges keep one VMA under the uffd monitor, where 10^5
 * separate ones would exceed vm.max_map_count.
 */
static void populate(struct regcache *c, char *base, size_t n)
{
	struct regcache_entry *e;
	size_t i;

	for (i = 0; i < n; i++) {
		if (regcache_get(c, base + i * psz, psz, 1, &e) ||
		    (!regcache_entry_cached(e) &&
		     strcmp(regcache_monitor_name(c), "none"))) {
			fprintf(stderr, "populate failed at %zu\n", i);
			exit(1);
		}
		regcache_put(c, e);
	}
}

enum pattern { SAME, ALTERNATE, RANDOM };

/* The get of the timed loops: flags 0 is regcache_get() itself. */
static inline int get_flags(struct regcache *c, void *addr, size_t len,
			    unsigned int flags, struct regcache_entry **e)
{
	return flags ? regcache_get_flags(c, addr, len, 1, flags, e) :
		       regcache_get(c, addr, len, 1, e);
}

/*
 * SAME hits one entry (the per-thread hint serves it), ALTERNATE two
 * entries in turn (the hint always misses: the index walk alone), RANDOM
 * any of the n entries (index walk plus cache misses).  With flags
 * REGCACHE_GET_EXACT (kept), the exact hit: an exported range registered
 * again, as librdmaxfer does for remote-access memory with cached rkeys;
 * the n entries are then the very ranges asked for (exact entries serve
 * only their own address and length), and SAME is the per-thread exact
 * hint.
 */
static void hit_latency(size_t n, enum pattern pat, unsigned int flags,
			double *p50, double *p99)
{
	size_t samples = quick || vm ? 2000 : 20000, s, j;
	double *lat = malloc(samples * sizeof(*lat));
	struct regcache_entry *e;
	unsigned int seed = 1;
	struct regcache *c;
	char *base = map(2 * n * psz);
	size_t idx[BATCH];
	uint64_t t0;

	c = make(null_reg, null_dereg, mon, n + 16, 1);
	if (!flags)
		populate(c, base, n);
	for (j = 0; flags && j < n; j++) {
		if (get_flags(c, base + j * psz + 64, 256, flags, &e)) {
			fprintf(stderr, "exact populate failed at %zu\n", j);
			exit(1);
		}
		regcache_put(c, e);
	}
	for (s = 0; s < samples; s++) {
		for (j = 0; j < BATCH; j++)
			idx[j] = pat == RANDOM ? (size_t)rand_r(&seed) % n :
				 pat == ALTERNATE ? (j & 1) * (n - 1) : n / 2;
		t0 = now_ns();
		for (j = 0; j < BATCH; j++) {
			get_flags(c, base + idx[j] * psz + 64, 256, flags, &e);
			regcache_put(c, e);
		}
		lat[s] = (double)(now_ns() - t0) / BATCH;
	}
	qsort(lat, samples, sizeof(*lat), cmp_double);
	*p50 = lat[samples / 2];
	*p99 = lat[samples * 99 / 100];
	regcache_destroy(c);
	munmap(base, 2 * n * psz);
	free(lat);
}

static void bench_hits(void)
{
	size_t ns[] = { 1, 1000, 100000 };
	double p50, p99, a50, a99, r50, r99;
	unsigned int i;

	printf("\n## hit latency (get+put pair, ns per pair; monitor %s)\n",
	       mon == REGCACHE_MONITOR_KMOD ? "kmod" :
	       mon == REGCACHE_MONITOR_UFFD ? "uffd" : "auto");
	printf("same = one entry (per-thread hint); alternate = two entries "
	       "(hint misses, index walk); random = any entry\n");
	printf("%-8s %9s %9s %9s %9s %9s %9s\n", "entries", "same p50",
	       "p99", "alt p50", "p99", "rand p50", "p99");
	for (i = 0; i < 3; i++) {
		if (quick && ns[i] > 1000)
			continue;
		hit_latency(ns[i], SAME, 0, &p50, &p99);
		hit_latency(ns[i], ALTERNATE, 0, &a50, &a99);
		hit_latency(ns[i], RANDOM, 0, &r50, &r99);
		printf("%-8zu %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", ns[i],
		       p50, p99, a50, a99, r50, r99);
	}
	printf("exact (REGCACHE_GET_EXACT, kept): the same entry of n, get+put\n");
	printf("%-8s %9s %9s\n", "entries", "p50", "p99");
	for (i = 0; i < 2; i++) {
		hit_latency(ns[i], SAME, REGCACHE_GET_EXACT, &p50, &p99);
		printf("%-8zu %9.1f %9.1f\n", ns[i], p50, p99);
	}
}

/* --------------------------------------------------------- repost check */

/*
 * What a repost of a prepared request with k iovs pays to know its held
 * entries are still valid: k regcache_entry_valid() calls, or one
 * regcache_generation() compared with the one taken at the last check.
 */
static void bench_repost(void)
{
	size_t ks[] = { 1, 16, 256 }, samples = quick || vm ? 2000 : 20000;
	unsigned int i;

	printf("\n## repost validity check, ns per check of k held entries (p50)\n");
	printf("%-6s %14s %14s\n", "k", "entry_valid*k", "generation");
	for (i = 0; i < 3; i++) {
		size_t k = ks[i], s, j, r;
		struct regcache *c = make(null_reg, null_dereg, mon, k + 16, 1);
		struct regcache_entry **e = calloc(k, sizeof(*e));
		double *lv = malloc(samples * sizeof(*lv));
		double *lg = malloc(samples * sizeof(*lg));
		char *base = map(2 * k * psz);
		uint64_t t0, g0 = 0;
		volatile long ok = 0;

		for (j = 0; j < k; j++)
			regcache_get(c, base + 2 * j * psz, psz, 1, &e[j]);
		for (s = 0; s < samples; s++) {
			t0 = now_ns();
			for (r = 0; r < BATCH; r++)
				for (j = 0; j < k; j++)
					ok += regcache_entry_valid(c, e[j]);
			lv[s] = (double)(now_ns() - t0) / BATCH;
			t0 = now_ns();
			for (r = 0; r < BATCH; r++)
				ok += regcache_generation(c) == g0;
			lg[s] = (double)(now_ns() - t0) / BATCH;
		}
		qsort(lv, samples, sizeof(*lv), cmp_double);
		qsort(lg, samples, sizeof(*lg), cmp_double);
		printf("%-6zu %14.1f %14.1f\n", k, lv[samples / 2],
		       lg[samples / 2]);
		for (j = 0; j < k; j++)
			regcache_put(c, e[j]);
		regcache_destroy(c);
		munmap(base, 2 * k * psz);
		free(e);
		free(lv);
		free(lg);
	}
}

/* -------------------------------------------------------------- scaling */

struct scale_arg {
	struct regcache *c;
	char *base;
	size_t first, n;
	long ops;
	double secs, cpu_secs;
};

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void *scale_thread(void *p)
{
	struct scale_arg *a = p;
	struct regcache_entry *e;
	unsigned int seed = (unsigned int)a->first + 1;
	uint64_t t0 = now_ns(), c0 = cpu_ns();
	long i;

	for (i = 0; i < a->ops; i++) {
		size_t k = a->first + (size_t)rand_r(&seed) % a->n;

		regcache_get(a->c, a->base + k * psz, 256, 1, &e);
		regcache_put(a->c, e);
	}
	a->secs = (double)(now_ns() - t0) / 1e9;
	a->cpu_secs = (double)(cpu_ns() - c0) / 1e9;
	return NULL;
}

/*
 * Total Mops/s by the wall clock; *cpu gets the same per CPU-second of
 * each thread, which a machine shared with other work does not skew: the
 * two-thread sum over the one-thread rate is the scaling the cache allows
 * (contention on shared lines shows there), the wall-clock ratio what the
 * machine gave.
 */
static double scale_run(int threads, size_t n, double *cpu)
{
	struct scale_arg a[2];
	pthread_t t[2];
	struct regcache *c = make(null_reg, null_dereg, mon, 2 * n + 16, 1);
	char *base = map(2 * 2 * n * psz);
	double mops = 0;
	int i;

	*cpu = 0;
	populate(c, base, 2 * n);
	for (i = 0; i < threads; i++) {
		a[i].c = c;
		a[i].base = base;
		a[i].first = (size_t)i * n;
		a[i].n = n;
		a[i].ops = quick || vm ? 200000 : 2000000;
		pthread_create(&t[i], NULL, scale_thread, &a[i]);
	}
	for (i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		mops += a[i].ops / a[i].secs / 1e6;
		*cpu += a[i].ops / a[i].cpu_secs / 1e6;
	}
	regcache_destroy(c);
	munmap(base, 2 * 2 * n * psz);
	return mops;
}

static void bench_scaling(void)
{
	double c1, c2, one = scale_run(1, 1000, &c1), two = scale_run(2, 1000, &c2);

	printf("\n## thread scaling (random hits over 1000 entries per thread)\n");
	printf("1 thread: %.2f Mops/s, 2 threads: %.2f Mops/s total (%.2fx)\n",
	       one, two, two / one);
	printf("per CPU-second: 1 thread %.2f Mops, 2 threads %.2f Mops (%.2fx)\n",
	       c1, c2, c2 / c1);
}

/* ---------------------------------------------------------------- misses */

static void bench_miss(void)
{
	size_t n = quick || vm ? 2000 : 20000, i;
	char *base = map(2 * n * psz);
	enum regcache_monitor_type ms[] = { REGCACHE_MONITOR_KMOD,
					    REGCACHE_MONITOR_UFFD,
					    REGCACHE_MONITOR_NONE };
	struct regcache_entry *e;
	double raw, t;
	uint64_t t0;
	void *h;
	unsigned int m;

	memset(base, 1, 2 * n * psz);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		sys_reg(NULL, base + 2 * i * psz, psz, 1, &h);
		null_dereg(NULL, h);
	}
	raw = (double)(now_ns() - t0) / (double)n;
	printf("\n## miss overhead (register = msync of the range; %zu distinct 1-page misses)\n", n);
	printf("raw register+deregister: %.0f ns\n", raw);
	for (m = 0; m < 3; m++) {
		struct regcache_attr a = {
			.reg = sys_reg, .dereg = null_dereg, .monitor = ms[m],
			.max_entries = n + 16, .merge_max = 1,
			.flags = REGCACHE_ATTR_NO_ENV,
		};
		struct regcache *c;

		if (regcache_create(&a, &c))
			continue;
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			regcache_get(c, base + 2 * i * psz, psz, 1, &e);
			regcache_put(c, e);
		}
		t = (double)(now_ns() - t0) / (double)n;
		regcache_flush(c);
		printf("%-5s miss (get+put): %.0f ns = %.2fx raw\n",
		       regcache_monitor_name(c), t, t / raw);
		regcache_destroy(c);
	}
	munmap(base, 2 * n * psz);
}

/* ----------------------------------------------------------------- churn */

static double churn_once(size_t iters, size_t len)
{
	uint64_t t0 = now_ns();
	size_t i;

	for (i = 0; i < iters; i++) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		p[0] = 1;
		p[len - 1] = 1;
		munmap(p, len);
	}
	return (double)(now_ns() - t0) / (double)iters;
}

/* Registered memory: get it, then munmap it (an invalidation each time). */
static double churn_registered(struct regcache *c, size_t iters, size_t len)
{
	struct regcache_entry *e;
	uint64_t t0 = now_ns();
	size_t i;

	for (i = 0; i < iters; i++) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		p[0] = 1;
		regcache_get(c, p, len, 1, &e);
		regcache_put(c, e);
		munmap(p, len);
	}
	return (double)(now_ns() - t0) / (double)iters;
}

/*
 * The monitored runs are bracketed by unmonitored ones (before and after)
 * and the ratio taken against their mean, three times; the median is
 * printed, because under TCG single runs wander by tens of percent.
 */
static void bench_churn(void)
{
	size_t n = quick ? 1000 : 10000, iters = quick || vm ? 1000 : 5000;
	enum regcache_monitor_type ms[] = { REGCACHE_MONITOR_KMOD,
					    REGCACHE_MONITOR_UFFD,
					    REGCACHE_MONITOR_NONE };
	char *base = map(n * psz);
	unsigned int m, r;

	memset(base, 1, n * psz);
	printf("\n## mmap/munmap churn, 64 KiB, %zu iterations, ns per cycle "
	       "(median of 3 bracketed runs)\n", iters);
	printf("%-5s %12s %12s %8s %22s\n", "mon", "no cache", "with cache",
	       "ratio", "registered+invalidated");
	for (m = 0; m < 3; m++) {
		double ratio[3], base_ns[3], with_ns[3], reg = 0, tmp;
		struct regcache *c;
		struct regcache_attr a = {
			.reg = null_reg, .dereg = null_dereg, .monitor = ms[m],
			.max_entries = n + 64, .merge_max = 1,
			.flags = REGCACHE_ATTR_NO_ENV,
		};
		unsigned int i, j;

		for (r = 0; r < 3; r++) {
			double b1 = churn_once(iters, 64 * 1024), b2, w;

			if (regcache_create(&a, &c))
				break;
			populate(c, base, n);
			w = churn_once(iters, 64 * 1024);
			if (r == 0)
				reg = churn_registered(c, iters / 4, 64 * 1024);
			regcache_destroy(c);
			b2 = churn_once(iters, 64 * 1024);
			base_ns[r] = (b1 + b2) / 2;
			with_ns[r] = w;
			ratio[r] = w / base_ns[r];
		}
		if (r < 3)
			continue;
		for (i = 0; i < 3; i++)
			for (j = i + 1; j < 3; j++)
				if (ratio[j] < ratio[i]) {
					tmp = ratio[i]; ratio[i] = ratio[j]; ratio[j] = tmp;
					tmp = base_ns[i]; base_ns[i] = base_ns[j]; base_ns[j] = tmp;
					tmp = with_ns[i]; with_ns[i] = with_ns[j]; with_ns[j] = tmp;
				}
		printf("%-5s %12.0f %12.0f %7.2fx %22.0f\n",
		       m == 0 ? "kmod" : m == 1 ? "uffd" : "none", base_ns[1],
		       with_ns[1], ratio[1], reg);
	}
	printf("(with cache = %zu cached entries on other memory)\n", n);
	munmap(base, n * psz);
}

/* ------------------------------------------------------------ coalescing */

/* Counts the bytes the coalescing run registers, then calls the backend. */
static regcache_reg_fn co_inner;
static size_t co_bytes;

static int co_reg(void *u, void *a, size_t l, uint32_t acc, void **h)
{
	int ret = co_inner(u, a, l, acc, h);

	if (!ret)
		co_bytes += l;
	return ret;
}

/*
 * The buffer has an unmapped page on either side (then a mapped sentinel
 * page, so that no later mmap() fills the hole): the extension of the
 * union stops at the buffer's ends.  A buffer directly next to another
 * mapping would see the extension reach into it.
 */
static void coalesce(regcache_reg_fn r, regcache_dereg_fn d, const char *what)
{
	size_t chunks = 2048, chunk = 4096, i;
	char *mem = map((chunks + 4) * chunk), *base = mem + 2 * chunk;
	size_t merges[] = { 1, 0, 0 };
	const char *names[] = { "off", "on", "on-desc" };
	unsigned int k;

	munmap(mem + chunk, chunk);
	munmap(base + chunks * chunk, chunk);
	memset(base, 1, chunks * chunk);
	co_inner = r;
	printf("\n## coalescing: %zu adjacent %zu-byte chunks, one get each (%s)\n",
	       chunks, chunk, what);
	printf("%-8s %14s %10s %12s %12s %16s\n", "merge", "registrations",
	       "entries", "reg MiB", "total ms", "whole-range get");
	for (k = 0; k < 3; k++) {
		struct regcache *c = make(co_reg, d, mon, 100000, merges[k]);
		struct regcache_stats st;
		struct regcache_entry *e;
		uint64_t t0 = now_ns();
		uint64_t before;
		size_t bytes;

		co_bytes = 0;
		for (i = 0; i < chunks; i++) {
			size_t j = k == 2 ? chunks - 1 - i : i;

			regcache_get(c, base + j * chunk, chunk, 1, &e);
			regcache_put(c, e);
		}
		t0 = now_ns() - t0;
		bytes = co_bytes;
		regcache_get_stats(c, &st);
		before = st.registrations;
		regcache_get(c, base, chunks * chunk, 1, &e);
		regcache_put(c, e);
		regcache_get_stats(c, &st);
		printf("%-8s %14llu %10llu %12.1f %12.1f %16s\n", names[k],
		       (unsigned long long)before, (unsigned long long)st.entries,
		       bytes / 1048576.0, t0 / 1e6,
		       st.registrations == before ? "hit" : "miss");
		regcache_destroy(c);
	}
	munmap(mem, (chunks + 4) * chunk);
}

/* ----------------------------------------------------------- verbs (VM) */

static double median3(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/*
 * Raw registration and cache hits are measured in turns, five rounds, and
 * the medians compared: single runs under TCG wander by tens of percent.
 */
static void bench_verbs_hit(void)
{
	size_t sizes[] = { 4096, 65536, 1 << 20, 16 << 20, 64 << 20 };
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ;
	struct regcache *c = make(verbs_reg, verbs_dereg, mon, 1000, 1);
	unsigned int i;

	printf("\n## ibv_reg_mr+dereg vs cache hit (monitor %s; medians of 5 interleaved rounds)\n",
	       regcache_monitor_name(c));
	printf("%-10s %14s %14s %10s\n", "size", "raw reg us", "hit ns", "ratio");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];
		char *buf = map(len);
		int reps = len >= (16 << 20) ? 2 : 10, r, hits = 5000, round;
		struct regcache_entry *e;
		double raw[5], hit[5], mr, mh;
		uint64_t t0;

		memset(buf, 1, len);
		/* Warm: the first registration of fresh memory costs more. */
		ibv_dereg_mr(ibv_reg_mr(pd, buf, len, acc));
		regcache_get(c, buf, len, (uint32_t)acc, &e);
		regcache_put(c, e);
		for (round = 0; round < 5; round++) {
			t0 = now_ns();
			for (r = 0; r < reps; r++) {
				struct ibv_mr *mr_ = ibv_reg_mr(pd, buf, len, acc);

				if (!mr_) {
					perror("ibv_reg_mr");
					exit(1);
				}
				ibv_dereg_mr(mr_);
			}
			raw[round] = (double)(now_ns() - t0) / reps;
			t0 = now_ns();
			for (r = 0; r < hits; r++) {
				regcache_get(c, buf, len, (uint32_t)acc, &e);
				regcache_put(c, e);
			}
			hit[round] = (double)(now_ns() - t0) / hits;
		}
		mr = median3(raw, 5);
		mh = median3(hit, 5);
		printf("%-10zu %14.1f %14.1f %10.0fx\n", len, mr / 1e3, mh, mr / mh);
		regcache_flush(c);
		munmap(buf, len);
	}
	regcache_destroy(c);
}

/* Misses with real registrations: the cache's share of a miss. */
static void bench_verbs_miss(void)
{
	size_t n = quick ? 100 : 500, i, len = 4096;
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	enum regcache_monitor_type ms[] = { REGCACHE_MONITOR_KMOD,
					    REGCACHE_MONITOR_UFFD,
					    REGCACHE_MONITOR_NONE };
	char *base = map(2 * n * psz);
	double raw[2], t;
	struct regcache_entry *e;
	unsigned int m, rep;
	uint64_t t0;

	memset(base, 1, 2 * n * psz);
	printf("\n## miss overhead with ibv_reg_mr (%zu distinct 4 KiB misses, then flush)\n", n);
	for (rep = 0; rep < 2; rep++) {
		t0 = now_ns();
		for (i = 0; i < n; i++)
			ibv_dereg_mr(ibv_reg_mr(pd, base + 2 * i * psz, len, acc));
		raw[rep] = (double)(now_ns() - t0) / (double)n;
	}
	printf("raw ibv_reg_mr+dereg: %.1f us (runs: %.1f, %.1f)\n",
	       (raw[0] + raw[1]) / 2e3, raw[0] / 1e3, raw[1] / 1e3);
	for (m = 0; m < 3; m++) {
		struct regcache_attr a = {
			.reg = verbs_reg, .dereg = verbs_dereg, .monitor = ms[m],
			.max_entries = n + 16, .merge_max = 1,
			.flags = REGCACHE_ATTR_NO_ENV,
		};
		struct regcache *c;

		if (regcache_create(&a, &c))
			continue;
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			regcache_get(c, base + 2 * i * psz, len, (uint32_t)acc, &e);
			regcache_put(c, e);
		}
		regcache_flush(c);
		t = (double)(now_ns() - t0) / (double)n;
		printf("%-5s miss+flush: %.1f us = %.3fx raw\n",
		       regcache_monitor_name(c), t / 1e3, t / ((raw[0] + raw[1]) / 2));
		regcache_destroy(c);
	}
	munmap(base, 2 * n * psz);
}

static int open_pd(const char *dev)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list || !n)
		return -ENODEV;
	for (i = 0; i < n; i++)
		if (!dev || !strcmp(ibv_get_device_name(list[i]), dev))
			break;
	if (i == n)
		return -ENODEV;
	ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	return pd ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int i;

	psz = (size_t)sysconf(_SC_PAGESIZE);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--vm"))
			vm = true;
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--hits"))
			hits_only = true;
		else if (!strcmp(argv[i], "--dev") && i + 1 < argc)
			dev = argv[++i];
		else if (!strcmp(argv[i], "--monitor") && i + 1 < argc) {
			i++;
			mon = !strcmp(argv[i], "kmod") ? REGCACHE_MONITOR_KMOD :
			      !strcmp(argv[i], "uffd") ? REGCACHE_MONITOR_UFFD :
			      REGCACHE_MONITOR_NONE;
		} else {
			fprintf(stderr, "usage: %s [--monitor kmod|uffd] [--vm [--dev DEV]] [--quick] [--hits]\n",
				argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	bench_hits();
	bench_repost();
	bench_scaling();
	if (hits_only)
		return 0;
	bench_miss();
	bench_churn();
	coalesce(null_reg, null_dereg, "null backend");
	if (vm) {
		if (open_pd(dev)) {
			fprintf(stderr, "no RDMA device\n");
			return 77;
		}
		bench_verbs_hit();
		bench_verbs_miss();
		coalesce(verbs_reg, verbs_dereg, "ibv_reg_mr");
	}
	return 0;
}
