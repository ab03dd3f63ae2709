// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * stats.c - a cache's counters: regcache_get_stats() in both of its
 * versions, and the summary REGCACHE_STATS prints at destroy.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "regcache_int.h"

static uint64_t rc_sum_hits(struct regcache *cache)
{
	uint64_t h = atomic_load(&cache->retired_hits);
	size_t i, j;

	for (i = 0; i < cache->nchunks; i++)
		for (j = 0; j < cache->chunks[i].n; j++)
			h += atomic_load_explicit(&cache->chunks[i].base[j].hits,
						  memory_order_relaxed);
	return h;
}

static void rc_stats_fill(struct regcache *cache, struct regcache_stats *st)
{
	struct rc_reader *s;

	memset(st, 0, sizeof(*st));
	s = rc_brlock_read_lock(&cache->lock);
	st->hits = rc_sum_hits(cache);
	st->entries = cache->entries;
	st->registered_bytes = cache->bytes;
	rc_brlock_read_unlock(&cache->lock, s);
	st->misses = atomic_load(&cache->misses);
	st->merges = atomic_load(&cache->merges);
	st->evictions = atomic_load(&cache->evictions);
	st->invalidations = atomic_load(&cache->invalidations);
	st->uncached = atomic_load(&cache->uncached);
	st->registrations = atomic_load(&cache->registrations);
	st->deregistrations = atomic_load(&cache->deregistrations);
	st->reg_ns = atomic_load(&cache->reg_ns);
	st->dereg_ns = atomic_load(&cache->dereg_ns);
	st->reg_retries = atomic_load(&cache->reg_retries);
	st->exact = atomic_load(&cache->exact);
	st->uffd_foreign = atomic_load(&cache->uffd_foreign);
	st->uffd_shared = atomic_load(&cache->uffd_shared);
}

/*
 * struct regcache_stats grew in LIBREGCACHE_1.2.  Programs linked against
 * 1.0 bind to regcache_get_stats@LIBREGCACHE_1.0, which writes only the
 * fields their structure has; new programs get the whole structure.
 */
__asm__(".symver rc_get_stats_1_0,regcache_get_stats@LIBREGCACHE_1.0");
__attribute__((visibility("default"), used))
int rc_get_stats_1_0(struct regcache *cache, struct regcache_stats *st);
int rc_get_stats_1_0(struct regcache *cache, struct regcache_stats *st)
{
	struct regcache_stats full;

	if (!cache || !st)
		return -EINVAL;
	rc_stats_fill(cache, &full);
	memcpy(st, &full, offsetof(struct regcache_stats, reg_retries));
	return 0;
}

__asm__(".symver rc_get_stats_1_2,regcache_get_stats@@LIBREGCACHE_1.2");
__attribute__((visibility("default"), used))
int rc_get_stats_1_2(struct regcache *cache, struct regcache_stats *st);
int rc_get_stats_1_2(struct regcache *cache, struct regcache_stats *st)
{
	if (!cache || !st)
		return -EINVAL;
	rc_stats_fill(cache, st);
	return 0;
}

void rc_print_stats(struct regcache *cache)
{
	struct regcache_stats st;

	rc_stats_fill(cache, &st);
	fprintf(stderr,
		"libregcache: stats monitor=%s hits=%" PRIu64 " misses=%" PRIu64
		" merges=%" PRIu64 " evictions=%" PRIu64 " invalidations=%" PRIu64
		" uncached=%" PRIu64 " registrations=%" PRIu64
		" deregistrations=%" PRIu64 " entries=%" PRIu64
		" registered_bytes=%" PRIu64 " reg_ms=%.3f dereg_ms=%.3f\n",
		cache->mon->name, st.hits, st.misses, st.merges, st.evictions,
		st.invalidations, st.uncached, st.registrations,
		st.deregistrations, st.entries, st.registered_bytes,
		st.reg_ns / 1e6, st.dereg_ns / 1e6);
}
