/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * lookup.h - the index lookups, shared by the hit path (lookup.c) and the
 * miss path's lookups under the write lock (miss.c): this thread's hints,
 * and the checks a hit makes, static inline so both inline them.  Private
 * to libregcache.
 */
#ifndef RC_LOOKUP_H
#define RC_LOOKUP_H

#include "regcache_int.h"

/* The last entry this thread hit, valid while tree_seq is unchanged. */
struct rc_hint {
	uint64_t cache_id;
	uint64_t seq;
	struct regcache_entry *e;
};
/* lookup.c: initial-exec, as when they were static: one load of the
 * thread pointer's offset; hidden: never looked up through the GOT */
extern __thread struct rc_hint rc_hint
	__attribute__((tls_model("initial-exec"), visibility("hidden")));
extern __thread struct rc_hint rc_xhint
	__attribute__((tls_model("initial-exec"), visibility("hidden")));

struct rc_find {
	const struct regcache *cache;
	uintptr_t start, end;
	uint32_t access;
	struct regcache_entry *found;
	bool saw_stale;
};

static inline bool rc_entry_serves(const struct regcache *cache,
				   const struct regcache_entry *e,
				   uintptr_t start, uintptr_t end, uint32_t access)
{
	return e->node.start <= start && e->node.end >= end &&
	       (e->access & access) == access;
}

/* lookup.c: the index walk of a lookup whose hint did not serve */
struct regcache_entry *
rc_lookup_walk(struct regcache *cache, uintptr_t start, uintptr_t end,
	       uint32_t access, uint64_t seq, bool *saw_stale);

/*
 * Read or write lock held.  The hint is trusted only while tree_seq is
 * the one it was taken at: every insertion into and removal from the
 * index bumps tree_seq under the write lock, and the read side excludes
 * the writer, so an unchanged tree_seq means the hinted entry is still
 * indexed and holds the index's reference.
 */
static inline struct regcache_entry *rc_lookup(struct regcache *cache,
					       uintptr_t start, uintptr_t end,
					       uint32_t access, bool *saw_stale)
{
	const struct rc_hint *h = &rc_hint;
	uint64_t seq = atomic_load_explicit(&cache->tree_seq,
					    memory_order_acquire);

	if (__builtin_expect(h->cache_id == cache->id && h->seq == seq, 1) &&
	    rc_entry_serves(cache, h->e, start, end, access) &&
	    rc_mon_valid(cache, h->e)) {
		if (saw_stale)
			*saw_stale = false;
		return h->e;
	}
	return rc_lookup_walk(cache, start, end, access, seq, saw_stale);
}

/* The hinted entry, if it serves the request; lock held as for rc_lookup. */
static inline struct regcache_entry *rc_hint_get(struct regcache *cache,
						 uintptr_t start, uintptr_t end,
						 uint32_t access)
{
	const struct rc_hint *h = &rc_hint;

	if (h->cache_id == cache->id &&
	    h->seq == atomic_load_explicit(&cache->tree_seq,
					   memory_order_acquire) &&
	    rc_entry_serves(cache, h->e, start, end, access) &&
	    rc_mon_valid_nocall(cache, h->e))
		return h->e;
	return NULL;
}

static inline void rc_hit(struct regcache_entry *e)
{
	atomic_fetch_add(&e->refs, RC_REF_USER);
	/*
	 * Not a locked add: the hit counter may lose increments when threads
	 * hit one entry at the same instant, which a statistic can afford
	 * and the hit path's latency cannot.
	 */
	atomic_store_explicit(&e->hits, atomic_load_explicit(&e->hits,
			      memory_order_relaxed) + 1, memory_order_relaxed);
	if (!atomic_load_explicit(&e->accessed, memory_order_relaxed))
		atomic_store_explicit(&e->accessed, 1, memory_order_relaxed);
}

/*
 * Exact entries (REGCACHE_GET_EXACT), for memory a remote peer may reach.
 *
 * Security property.  An ordinary entry may be a merged union or grown
 * geometrically into neighbouring memory, with the union of the access
 * bits of what it took in, and it stays registered after its last put:
 * its key reaches memory nobody named, for as long as the cache keeps it.
 * That is fine for a local key, which only this process can use, and not
 * for a key handed to a peer.  An exact entry is registered with the very
 * bytes and access its caller named and lives in an index of its own
 * (cache->xtree) that the hit path, merging and growth never consult: it
 * serves nothing but a later exact get of the identical range, access and
 * NOKEEP flag, so its key reaches exactly what every holder named.
 * Invalidation (the monitor's events, munmap) drops it as any other entry.
 * With REGCACHE_GET_NOKEEP it is deregistered when the last holder puts
 * it, so the key dies with the last handle; without, it is kept until
 * evicted or invalidated and the key outlives the handles (UCX/libfabric
 * behaviour, the caller's explicit choice).
 */

struct rc_xfind {
	const struct regcache *cache;
	uintptr_t addr;
	size_t len;
	uint32_t access;
	bool nokeep;
	struct regcache_entry *found;
	bool saw_stale;
};

/* Does exact entry e serve f: the identical range, access and NOKEEP? */
static inline bool rc_xmatch(const struct regcache_entry *e,
			     const struct rc_xfind *f)
{
	return e->xaddr == f->addr && e->xlen == f->len &&
	       e->access == f->access && e->nokeep == f->nokeep;
}

/*
 * The hinted exact entry, if it is the one asked for; lock held as for
 * rc_xlookup.  The argument is rc_lookup's: every insertion into and
 * removal from the exact index bumps xtree_seq under the write lock and
 * the read side excludes the writer, so an unchanged xtree_seq means the
 * hinted entry is still indexed (the index's reference keeps it), and it
 * serves only what rc_xfind_fn would serve (rc_xmatch).
 */
static inline struct regcache_entry *rc_xhint_get(struct regcache *cache,
						  const struct rc_xfind *f)
{
	const struct rc_hint *h = &rc_xhint;
	const struct regcache_entry *e = h->e;

	if (h->cache_id == cache->id &&
	    h->seq == atomic_load_explicit(&cache->xtree_seq,
					   memory_order_acquire) &&
	    rc_xmatch(e, f) && rc_mon_valid_nocall(cache, e))
		return h->e;
	return NULL;
}

/* lookup.c: the exact index's walk */
struct regcache_entry *rc_xlookup(struct regcache *cache,
				  struct rc_xfind *f);

/* miss.c: what is not a hit (no lock held) */
int rc_get_uncached(struct regcache *cache, uintptr_t start, uintptr_t end,
		    uint32_t access, struct regcache_entry **entryp);
int rc_get_slow(struct regcache *cache, uintptr_t start, uintptr_t end,
		uint32_t access, struct regcache_entry **entryp);
int rc_get_exact_uncached(struct regcache *cache, const struct rc_xfind *f,
			  struct regcache_entry **entryp);
int rc_get_exact_slow(struct regcache *cache, struct rc_xfind *f,
		      struct regcache_entry **entryp);

#endif /* RC_LOOKUP_H */
