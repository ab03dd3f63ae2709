// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * budget_probe.c - one operation of libregcache, N times, between two
 * markers, for counting what it costs (tests/test_budget.sh).
 *
 *   budget_probe [--monitor uffd|none|kmod|auto] [--size BYTES]
 *                [--entries E] [--time] OP N
 *
 * The N operations run in bp_loop_OP(), after a warm-up of the same
 * operation; under budget_count (BUDGET_TRACE=1 in the environment) an
 * int3 before and after that loop marks the stretch it counts, so none
 * of the set-up is counted.  The loop is kept out of line, so
 * `valgrind --tool=callgrind --toggle-collect=bp_loop_OP` counts the same
 * stretch (the test checks that the two counters agree).  --time prints
 * the wall-clock nanoseconds per operation (never asserted).
 *
 * Operations, on a null backend (register and deregister callbacks that
 * do nothing), so that only the cache counts:
 *   hit         regcache_get + regcache_put of one range (the hinted hit)
 *   hit_exact   the same for an exact kept entry (REGCACHE_GET_EXACT)
 *   miss        an exact NOKEEP get + put: registered, watched, unwatched
 *               and dropped every time (what librdmaxfer does for memory
 *               a peer may access)
 *   miss_fresh  a plain get + put of a fresh mapping and its munmap (the
 *               mmap, the invalidation and the munmap included)
 *   lookup      get + put of a random one of E entries (the index walk)
 * Exit status 0, 1 on failure (said on stderr), 77 when the monitor asked
 * for is absent.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "regcache.h"

/*
 * Out of line, and never folded with its twin: the warm-up and the
 * measured loop of an operation are the same code, which gcc's identical
 * code folding would otherwise merge into one symbol.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define BP_LOOP	__attribute__((noipa, used))
#else
#define BP_LOOP	__attribute__((noinline, used))
#endif

#define BP_WARM	16

struct bp {
	enum regcache_monitor_type mon;
	size_t size, entries;
	long n;
	struct regcache *cache;
	char *buf;
	size_t psz;
	size_t *idx;			/* lookup: entry per iteration */
	long fresh_i;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "budget_probe: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void skip(const char *why)
{
	fprintf(stderr, "budget_probe: %s\n", why);
	exit(77);
}

/* ----------------------------------------------------------- backends */

static int null_reg(void *u, void *a, size_t l, uint32_t acc, void **h)
{
	(void)u;
	(void)l;
	(void)acc;
	*h = a;
	return 0;
}

static int null_dereg(void *u, void *h)
{
	(void)u;
	(void)h;
	return 0;
}

/* what librdmaxfer asks for memory a peer may read and write */
#define BP_ACCESS	7

/* ---------------------------------------------------------- operations */

static inline void op_hit(struct bp *b)
{
	struct regcache_entry *e;
	int ret = regcache_get(b->cache, b->buf + 64, 256, 1, &e);

	if (ret)
		die("regcache_get", ret);
	regcache_put(b->cache, e);
}

static inline void op_hit_exact(struct bp *b)
{
	struct regcache_entry *e;
	int ret = regcache_get_flags(b->cache, b->buf + 64, 256, 1,
				     REGCACHE_GET_EXACT, &e);

	if (ret)
		die("regcache_get_flags", ret);
	regcache_put(b->cache, e);
}

static inline void op_miss(struct bp *b)
{
	struct regcache_entry *e;
	int ret = regcache_get_flags(b->cache, b->buf, b->size, BP_ACCESS,
				     REGCACHE_GET_EXACT | REGCACHE_GET_NOKEEP,
				     &e);

	if (ret)
		die("regcache_get_flags", ret);
	regcache_put(b->cache, e);
}

static inline void op_miss_fresh(struct bp *b)
{
	struct regcache_entry *e;
	char *p = mmap(NULL, b->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ret;

	if (p == MAP_FAILED)
		die("mmap", errno);
	p[0] = 1;
	ret = regcache_get(b->cache, p, b->size, 1, &e);
	if (ret)
		die("regcache_get", ret);
	regcache_put(b->cache, e);
	munmap(p, b->size);
}

static inline void op_lookup(struct bp *b)
{
	struct regcache_entry *e;
	size_t k = b->idx[b->fresh_i++ % (b->n + BP_WARM)];
	int ret = regcache_get(b->cache, b->buf + 2 * k * b->psz + 64, 256, 1,
			       &e);

	if (ret)
		die("regcache_get", ret);
	regcache_put(b->cache, e);
}

#define BP_DEFINE(name)							\
	static void BP_WARM_ATTR bp_warm_##name(struct bp *b, long n)	\
	{								\
		for (long i = 0; i < n; i++)				\
			op_##name(b);					\
	}								\
	static void BP_LOOP bp_loop_##name(struct bp *b, long n)	\
	{								\
		for (long i = 0; i < n; i++)				\
			op_##name(b);					\
	}
#define BP_WARM_ATTR	BP_LOOP

BP_DEFINE(hit)
BP_DEFINE(hit_exact)
BP_DEFINE(miss)
BP_DEFINE(miss_fresh)
BP_DEFINE(lookup)

/* -------------------------------------------------------------- set-up */

static void make_cache(struct bp *b, size_t max_entries)
{
	struct regcache_attr attr = {
		.reg = null_reg,
		.dereg = null_dereg,
		.monitor = b->mon,
		.max_entries = max_entries,
		.merge_max = 1,		/* lookup: one entry per range */
		.flags = REGCACHE_ATTR_NO_ENV,
	};
	int ret = regcache_create(&attr, &b->cache);

	if (ret == -ENOENT || ret == -ENODEV || ret == -EPERM ||
	    ret == -EOPNOTSUPP || ret == -ENOSYS)
		skip("the monitor asked for is not available");
	if (ret)
		die("regcache_create", ret);
	if (b->mon != REGCACHE_MONITOR_NONE &&
	    b->mon != REGCACHE_MONITOR_AUTO &&
	    strcmp(regcache_monitor_name(b->cache),
		   b->mon == REGCACHE_MONITOR_KMOD ? "kmod" : "uffd"))
		skip("the monitor asked for is not the one running");
}

static char *map_touched(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap", errno);
	memset(p, 0x5a, len);
	return p;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static enum regcache_monitor_type parse_monitor(const char *s)
{
	if (!strcmp(s, "kmod"))
		return REGCACHE_MONITOR_KMOD;
	if (!strcmp(s, "uffd"))
		return REGCACHE_MONITOR_UFFD;
	if (!strcmp(s, "none"))
		return REGCACHE_MONITOR_NONE;
	if (!strcmp(s, "auto"))
		return REGCACHE_MONITOR_AUTO;
	fprintf(stderr, "budget_probe: --monitor kmod|uffd|none|auto\n");
	exit(2);
}

static void usage(void)
{
	fprintf(stderr, "usage: budget_probe [--monitor kmod|uffd|none|auto] [--size BYTES]\n"
		"                    [--entries E] [--time] OP N\n"
		"ops: hit hit_exact miss miss_fresh lookup\n");
	exit(2);
}

/*
 * The markers of budget_count: an int3 before and after the counted
 * stretch, only when it traces us (a stray SIGTRAP would kill us).
 */
static bool bp_traced;

static inline void bp_mark(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (bp_traced)
		__asm__ volatile("int3" ::: "memory");
#endif
}

#define BP_RUN(name)							\
	do {								\
		bp_warm_##name(&b, warm);				\
		t0 = now_ns();						\
		bp_mark();						\
		bp_loop_##name(&b, b.n);				\
		bp_mark();						\
		t1 = now_ns();						\
	} while (0)

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "monitor", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 's' },
		{ "entries", required_argument, NULL, 'e' },
		{ "time", no_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	struct bp b = {
		.mon = REGCACHE_MONITOR_AUTO, .size = 4096, .entries = 100000,
	};
	bool timed = false;
	uint64_t t0 = 0, t1 = 0;
	const char *op;
	long warm = BP_WARM;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			b.mon = parse_monitor(optarg);
			break;
		case 's':
			b.size = strtoul(optarg, NULL, 0);
			break;
		case 'e':
			b.entries = strtoul(optarg, NULL, 0);
			break;
		case 't':
			timed = true;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	op = argv[optind];
	b.n = strtol(argv[optind + 1], NULL, 0);
	b.psz = (size_t)sysconf(_SC_PAGESIZE);
	bp_traced = getenv("BUDGET_TRACE") != NULL;
	if (b.n < 1 || !b.size || !b.entries)
		usage();

	if (!strcmp(op, "hit") || !strcmp(op, "hit_exact") ||
	    !strcmp(op, "miss") || !strcmp(op, "miss_fresh")) {
		b.buf = map_touched(b.size + b.psz);
		make_cache(&b, 0);
		if (!strcmp(op, "hit"))
			BP_RUN(hit);
		else if (!strcmp(op, "hit_exact"))
			BP_RUN(hit_exact);
		else if (!strcmp(op, "miss"))
			BP_RUN(miss);
		else
			BP_RUN(miss_fresh);
	} else if (!strcmp(op, "lookup")) {
		unsigned int seed = 1;
		size_t j;

		b.buf = map_touched(2 * b.entries * b.psz);
		make_cache(&b, b.entries + 16);
		b.idx = malloc((size_t)(b.n + warm) * sizeof(*b.idx));
		if (!b.idx)
			die("malloc", ENOMEM);
		for (j = 0; j < b.entries; j++) {
			struct regcache_entry *e;
			int ret = regcache_get(b.cache, b.buf + 2 * j * b.psz,
					       b.psz, 1, &e);

			if (ret)
				die("regcache_get (populate)", ret);
			regcache_put(b.cache, e);
		}
		for (j = 0; j < (size_t)(b.n + warm); j++)
			b.idx[j] = (size_t)rand_r(&seed) % b.entries;
		BP_RUN(lookup);
	} else {
		usage();
	}
	if (timed)
		printf("%s %.1f ns/op\n", op, (double)(t1 - t0) / (double)b.n);
	/* the cache and the mappings go with the process */
	return 0;
}
