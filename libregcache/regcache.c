// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * regcache.c - the libregcache API: lookup, miss handling with coalescing,
 * CLOCK eviction, reference counting, flush, fork detection.
 *
 * Locking.  The index (interval tree + CLOCK list + counters) is protected
 * by a brlock.  A hit takes only its read side, bumps the entry's atomic
 * reference count and returns; a per-thread hint remembers the last entry
 * hit so a repeated lookup skips the tree walk (the hint is trusted only
 * while the tree's change counter is unchanged).  Registration callbacks
 * always run with no lock held, as in libfabric's cache: an entry being
 * registered waits on the 'pending' list, where invalidations can mark it
 * stale, and is only indexed if it is still valid afterwards.
 *
 * Eviction is CLOCK (second chance) rather than a strict LRU list because
 * a strict list would have to be relinked under a lock on every hit.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "regcache_int.h"

#define RC_GET_RETRIES	8

_Atomic unsigned int rc_fork_gen;
static _Atomic uint64_t rc_next_cache_id = 1;
static pthread_once_t rc_atfork_once = PTHREAD_ONCE_INIT;

static void rc_atfork_child(void)
{
	atomic_fetch_add(&rc_fork_gen, 1);
}

static void rc_atfork_setup(void)
{
	pthread_atfork(NULL, NULL, rc_atfork_child);
}

/* The last entry this thread hit, valid while tree_seq is unchanged. */
struct rc_hint {
	uint64_t cache_id;
	uint64_t seq;
	struct regcache_entry *e;
};
static __thread struct rc_hint rc_hint __attribute__((tls_model("initial-exec")));

static size_t rc_page_size;

/* ------------------------------------------------------------ allocator */

static int rc_chunk_add(struct regcache *cache)
{
	struct regcache_entry *base;
	struct rc_chunk *c;
	size_t i, pos;

	if (cache->nchunks == cache->chunks_cap) {
		size_t cap = cache->chunks_cap ? cache->chunks_cap * 2 : 8;

		c = realloc(cache->chunks, cap * sizeof(*c));
		if (!c)
			return -ENOMEM;
		cache->chunks = c;
		cache->chunks_cap = cap;
	}
	base = calloc(RC_ENTRIES_PER_CHUNK, sizeof(*base));
	if (!base)
		return -ENOMEM;
	/* Keep chunks sorted by address for the binary search in put. */
	for (pos = cache->nchunks; pos > 0; pos--) {
		if (cache->chunks[pos - 1].base < base)
			break;
		cache->chunks[pos] = cache->chunks[pos - 1];
	}
	cache->chunks[pos].base = base;
	cache->nchunks++;
	for (i = 0; i < RC_ENTRIES_PER_CHUNK; i++) {
		atomic_init(&base[i].refs, 0);
		base[i].magic = RC_MAGIC_FREE;
		rc_list_add_tail(&cache->free_list, &base[i].link);
	}
	return 0;
}

/*
 * The chunk array only grows under the write lock (put reads it under the
 * read side); 'locked' says the caller holds it.  Otherwise the write lock
 * is taken only when a new chunk is needed, so the uncached path of the
 * "none" monitor does not serialise on it.
 */
static struct regcache_entry *rc_entry_alloc(struct regcache *cache, bool locked)
{
	struct regcache_entry *e = NULL;

	pthread_mutex_lock(&cache->alloc_lock);
	if (rc_list_empty(&cache->free_list)) {
		int ret;

		if (!locked) {
			pthread_mutex_unlock(&cache->alloc_lock);
			rc_brlock_write_lock(&cache->lock);
			pthread_mutex_lock(&cache->alloc_lock);
		}
		ret = rc_list_empty(&cache->free_list) ? rc_chunk_add(cache) : 0;
		if (!locked)
			rc_brlock_write_unlock(&cache->lock);
		if (ret)
			goto out;
	}
	e = rc_list_entry(cache->free_list.next, link);
	rc_list_del(&e->link);
	memset(&e->node, 0, sizeof(e->node));
	atomic_store(&e->refs, RC_REF_USER);
	atomic_store(&e->hits, 0);
	atomic_store(&e->accessed, 0);
	atomic_store(&e->stale, 0);
	e->in_tree = e->cached = e->dead = e->subscribed = false;
	e->access = 0;
	e->handle = NULL;
	e->cache = cache;
	rc_list_init(&e->lru);
	e->slot = 0;
	e->slot_word = 0;
	e->cookie = 0;
	__atomic_store_n(&e->magic, RC_MAGIC_LIVE, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&cache->alloc_lock);
	return e;
}

static void rc_entry_free(struct regcache *cache, struct regcache_entry *e)
{
	pthread_mutex_lock(&cache->alloc_lock);
	__atomic_store_n(&e->magic, RC_MAGIC_FREE, __ATOMIC_RELEASE);
	e->handle = NULL;
	rc_list_add_tail(&cache->free_list, &e->link);
	pthread_mutex_unlock(&cache->alloc_lock);
}

/* Is e one of this cache's entry slots?  Read or write lock held. */
static bool rc_entry_known(const struct regcache *cache,
			   const struct regcache_entry *e)
{
	size_t lo = 0, hi = cache->nchunks;
	uintptr_t p = (uintptr_t)e;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		uintptr_t b = (uintptr_t)cache->chunks[mid].base;

		if (p < b) {
			hi = mid;
		} else if (p >= b + RC_ENTRIES_PER_CHUNK * sizeof(*e)) {
			lo = mid + 1;
		} else {
			return (p - b) % sizeof(*e) == 0;
		}
	}
	return false;
}

/* ------------------------------------------------------------- release */

static void rc_entry_release(struct regcache *cache, struct regcache_entry *e)
{
	uint64_t t0, h;
	int ret;

	/* A forked child must never undo the parent's registrations. */
	if (!rc_forked(cache)) {
		t0 = rc_now_ns();
		ret = cache->dereg(cache->user, e->handle);
		atomic_fetch_add_explicit(&cache->dereg_ns, rc_now_ns() - t0,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&cache->deregistrations, 1,
					  memory_order_relaxed);
		if (ret)
			rc_log("dereg callback failed: %s", strerror(-ret));
	}
	h = atomic_exchange(&e->hits, 0);
	atomic_fetch_add_explicit(&cache->retired_hits, h, memory_order_relaxed);
	rc_entry_free(cache, e);
}

void rc_release_list(struct regcache *cache, struct rc_list *release)
{
	while (!rc_list_empty(release)) {
		struct regcache_entry *e = rc_list_entry(release->next, link);

		rc_list_del(&e->link);
		rc_entry_release(cache, e);
	}
}

/* For the uffd thread, which must not call dereg or free(): see there. */
void rc_defer_list(struct regcache *cache, struct rc_list *release)
{
	int n = 0;

	pthread_mutex_lock(&cache->defer_lock);
	while (!rc_list_empty(release)) {
		struct regcache_entry *e = rc_list_entry(release->next, link);

		rc_list_del(&e->link);
		rc_list_add_tail(&cache->deferred, &e->link);
		n++;
	}
	pthread_mutex_unlock(&cache->defer_lock);
	atomic_fetch_add(&cache->ndeferred, n);
}

static void rc_run_deferred(struct regcache *cache)
{
	struct rc_list list;

	if (!atomic_load_explicit(&cache->ndeferred, memory_order_relaxed))
		return;
	rc_list_init(&list);
	pthread_mutex_lock(&cache->defer_lock);
	while (!rc_list_empty(&cache->deferred)) {
		struct regcache_entry *e = rc_list_entry(cache->deferred.next, link);

		rc_list_del(&e->link);
		rc_list_add_tail(&list, &e->link);
	}
	atomic_store(&cache->ndeferred, 0);
	pthread_mutex_unlock(&cache->defer_lock);
	rc_release_list(cache, &list);
}

/* Drop one reference of 'bias'; queue the entry if it was the last. */
static void rc_entry_unref(struct regcache_entry *e, uint64_t bias,
			   struct rc_list *release)
{
	if (atomic_fetch_sub(&e->refs, bias) == bias)
		rc_list_add_tail(release, &e->link);
}

/* ---------------------------------------------------------- index ops */

/* Take e out of the index.  Write lock held. */
static void rc_remove_locked(struct regcache *cache, struct regcache_entry *e,
			     struct rc_list *release)
{
	rc_itree_remove(&cache->tree, &e->node);
	rc_list_del(&e->lru);
	cache->entries--;
	cache->bytes -= e->node.end - e->node.start;
	RC_WRITE_ONCE(e->in_tree, false);
	atomic_fetch_add_explicit(&cache->tree_seq, 1, memory_order_release);
	if (e->subscribed) {
		cache->mon->unsubscribe(cache, e);
		e->subscribed = false;
	}
	rc_entry_unref(e, RC_REF_TREE, release);
}

static void rc_insert_locked(struct regcache *cache, struct regcache_entry *e)
{
	atomic_fetch_add(&e->refs, RC_REF_TREE);
	rc_itree_insert(&cache->tree, &e->node);
	rc_list_add(&cache->lru, &e->lru);
	cache->entries++;
	cache->bytes += e->node.end - e->node.start;
	RC_WRITE_ONCE(e->in_tree, true);
	atomic_fetch_add_explicit(&cache->tree_seq, 1, memory_order_release);
}

bool rc_evict_one(struct regcache *cache, struct rc_list *release)
{
	size_t budget = 2 * cache->entries + 1;

	while (budget-- && !rc_list_empty(&cache->lru)) {
		struct regcache_entry *e = rc_list_entry(cache->lru.prev, lru);

		if (atomic_load(&e->refs) == RC_REF_TREE &&
		    !atomic_load_explicit(&e->accessed, memory_order_relaxed)) {
			rc_remove_locked(cache, e, release);
			atomic_fetch_add_explicit(&cache->evictions, 1,
						  memory_order_relaxed);
			return true;
		}
		/* Second chance: clear the bit and move to the head. */
		atomic_store_explicit(&e->accessed, 0, memory_order_relaxed);
		rc_list_del(&e->lru);
		rc_list_add(&cache->lru, &e->lru);
	}
	return false;
}

struct rc_collect {
	struct rc_list list;
	const struct regcache *cache;
	bool only_stale;
};

static int rc_collect_fn(struct rc_itree_node *n, void *arg)
{
	struct rc_collect *c = arg;
	struct regcache_entry *e = rc_node_entry(n);

	if (!c->only_stale || !c->cache->mon->valid(c->cache, e))
		rc_list_add_tail(&c->list, &e->link);
	return 0;
}

static int rc_drop_collected(struct regcache *cache, struct rc_collect *c,
			     struct rc_list *release)
{
	int n = 0;

	while (!rc_list_empty(&c->list)) {
		struct regcache_entry *e = rc_list_entry(c->list.next, link);

		rc_list_del(&e->link);
		/* Holders keep it until their put; lookups never see it again. */
		if (atomic_load(&e->refs) != RC_REF_TREE)
			RC_WRITE_ONCE(e->dead, true);
		rc_remove_locked(cache, e, release);
		n++;
	}
	atomic_fetch_add_explicit(&cache->invalidations, n, memory_order_relaxed);
	return n;
}

int rc_invalidate_range(struct regcache *cache, uintptr_t start, uintptr_t end,
			struct rc_list *release)
{
	struct rc_collect c = { .cache = cache, .only_stale = false };
	struct rc_list *p;

	if (end <= start)
		return 0;
	for (p = cache->pending.next; p != &cache->pending; p = p->next) {
		struct regcache_entry *e = rc_list_entry(p, link);

		if (e->node.start < end && e->node.end > start)
			atomic_store(&e->stale, 1);
	}
	rc_list_init(&c.list);
	rc_itree_visit(&cache->tree, start, end, rc_collect_fn, &c);
	return rc_drop_collected(cache, &c, release);
}

int rc_invalidate_entry(struct regcache *cache, struct regcache_entry *e,
			struct rc_list *release)
{
	struct rc_collect c = { .cache = cache, .only_stale = false };

	if (!e->in_tree)
		return 0;
	rc_list_init(&c.list);
	rc_list_add_tail(&c.list, &e->link);
	return rc_drop_collected(cache, &c, release);
}

int rc_invalidate_stale(struct regcache *cache, struct rc_list *release)
{
	struct rc_collect c = { .cache = cache, .only_stale = true };
	struct rc_list *p;

	for (p = cache->pending.next; p != &cache->pending; p = p->next) {
		struct regcache_entry *e = rc_list_entry(p, link);

		if (e->subscribed && !cache->mon->valid(cache, e))
			atomic_store(&e->stale, 1);
	}
	rc_list_init(&c.list);
	rc_itree_visit_all(&cache->tree, rc_collect_fn, &c);
	return rc_drop_collected(cache, &c, release);
}

/* ---------------------------------------------------------------- lookup */

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

static int rc_find_fn(struct rc_itree_node *n, void *arg)
{
	struct rc_find *f = arg;
	struct regcache_entry *e = rc_node_entry(n);

	if (!rc_entry_serves(f->cache, e, f->start, f->end, f->access))
		return 0;
	if (!f->cache->mon->valid(f->cache, e)) {
		f->saw_stale = true;
		return 0;
	}
	f->found = e;
	return 1;
}

/* Read or write lock held. */
static struct regcache_entry *rc_lookup(struct regcache *cache, uintptr_t start,
					uintptr_t end, uint32_t access,
					bool *saw_stale)
{
	struct rc_find f = {
		.cache = cache, .start = start, .end = end, .access = access,
	};
	struct rc_hint *h = &rc_hint;
	struct rc_itree_node *n;
	uint64_t seq = atomic_load_explicit(&cache->tree_seq, memory_order_acquire);

	if (h->cache_id == cache->id && h->seq == seq &&
	    rc_entry_serves(cache, h->e, start, end, access) &&
	    cache->mon->valid(cache, h->e))
		return h->e;
	n = rc_itree_floor(&cache->tree, start);
	if (n && rc_entry_serves(cache, rc_node_entry(n), start, end, access) &&
	    cache->mon->valid(cache, rc_node_entry(n))) {
		f.found = rc_node_entry(n);
	} else {
		/* Overlapping entries: any one starting before may cover it. */
		rc_itree_visit(&cache->tree, start, start + 1, rc_find_fn, &f);
	}
	if (f.found) {
		h->cache_id = cache->id;
		h->seq = seq;
		h->e = f.found;
	}
	if (saw_stale)
		*saw_stale = f.saw_stale;
	return f.found;
}

static void rc_hit(struct regcache_entry *e)
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

/* ----------------------------------------------------------------- miss */

/*
 * The covered entries are kept in an array, not linked through ->link:
 * while this thread registers unlocked, another may collect the same
 * entries for its own merge or an invalidation.
 */
struct rc_merge {
	const struct regcache *cache;
	uintptr_t start, end;		/* the union */
	uint32_t access;
	uintptr_t gstart, gend;		/* the union grown geometrically */
	uintptr_t rstart, rend;		/* the request */
	uint32_t raccess;
	struct regcache_entry **covered;
	size_t ncovered, cap;
	bool grew, nomem;
};

/*
 * What a miss tries to register, widest first.  Each step falls back to
 * the next when the monitor cannot watch the range or the register
 * callback refuses it.
 */
enum rc_try {
	RC_TRY_GROWN,		/* the union plus its geometric extension */
	RC_TRY_UNION,		/* the union with the covered entries */
	RC_TRY_EXACT,		/* the request alone */
};

static bool rc_merge_has(const struct rc_merge *m, const struct regcache_entry *e)
{
	size_t i;

	for (i = 0; i < m->ncovered; i++)
		if (m->covered[i] == e)
			return true;
	return false;
}

static int rc_merge_fn(struct rc_itree_node *n, void *arg)
{
	struct rc_merge *m = arg;
	struct regcache_entry *e = rc_node_entry(n);
	uintptr_t ns = e->node.start < m->start ? e->node.start : m->start;
	uintptr_t ne = e->node.end > m->end ? e->node.end : m->end;

	if (!m->cache->mon->valid(m->cache, e) || rc_merge_has(m, e))
		return 0;
	/*
	 * Leave out a neighbour the union cannot take in within merge_max
	 * (the union only grows, so it never fits later): a buffer registered
	 * chunk by chunk past merge_max then starts a new union beside the
	 * full one instead of registering every further chunk alone.
	 */
	if (ne - ns > m->cache->merge_max || ne - ns > m->cache->max_bytes)
		return 0;
	if (m->ncovered == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 8;
		struct regcache_entry **c = realloc(m->covered, cap * sizeof(*c));

		if (!c) {
			m->nomem = true;
			return 1;
		}
		m->covered = c;
		m->cap = cap;
	}
	m->covered[m->ncovered++] = e;
	if (e->node.start < m->start)
		m->start = e->node.start;
	if (e->node.end > m->end)
		m->end = e->node.end;
	m->access |= e->access;
	m->grew = true;
	return 0;
}

/*
 * The union of the request with the valid entries overlapping or adjacent
 * to it, transitively, taking in only those that keep it within merge_max.
 * Write lock held.
 */
static bool rc_merge_plan(struct regcache *cache, struct rc_merge *m)
{
	unsigned int rounds = 0;

	do {
		m->grew = false;
		rc_itree_visit(&cache->tree, m->start ? m->start - 1 : 0,
			       m->end + 1, rc_merge_fn, m);
		if (m->nomem || m->end - m->start > cache->merge_max ||
		    m->end - m->start > cache->max_bytes)
			return false;
	} while (m->grew && ++rounds < 64);
	return m->ncovered > 0;
}

static void rc_merge_reset(struct rc_merge *m)
{
	m->ncovered = 0;
}

/*
 * Is every page of [start, end) mapped?  msync(MS_ASYNC) does no I/O
 * (a no-op since Linux 2.6.19) and fails with ENOMEM as soon as a page of
 * the range is unmapped: one walk over the VMAs, and unlike mincore() no
 * vector of one byte per page.
 */
static bool rc_range_mapped(uintptr_t start, uintptr_t end)
{
	return !msync((void *)start, end - start, MS_ASYNC);
}

static bool rc_run_mapped(uintptr_t edge, size_t pages, bool down)
{
	size_t len = pages * rc_page_size;

	return down ? rc_range_mapped(edge - len, edge) :
		      rc_range_mapped(edge, edge + len);
}

/*
 * The longest run of mapped pages, at most 'want' bytes, that starts at
 * 'edge' going up or ends there going down.  A bisection: at most
 * log2(want / page size) probes, and one when the whole run is mapped.
 */
static size_t rc_mapped_run(uintptr_t edge, size_t want, bool down)
{
	size_t lo = 0, hi = want / rc_page_size, mid;

	if (!hi || rc_run_mapped(edge, hi, down))
		return hi * rc_page_size;
	if (!rc_run_mapped(edge, 1, down))
		return 0;
	lo = 1;
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (rc_run_mapped(edge, mid, down))
			lo = mid;
		else
			hi = mid;
	}
	return lo * rc_page_size;
}

struct rc_edge {
	uintptr_t lo, hi;	/* the free room around the union */
	bool down;
};

static int rc_edge_fn(struct rc_itree_node *n, void *arg)
{
	struct rc_edge *g = arg;

	if (g->down && n->end > g->lo)
		g->lo = n->end;
	if (!g->down && n->start < g->hi)
		g->hi = n->start;
	return 0;
}

/*
 * Geometric growth.  Registering a big buffer chunk by chunk (NIXL does
 * this) makes every chunk a miss adjacent to the union of the previous
 * ones; re-registering just that union would cost n registrations and
 * O(n^2) bytes.  So a miss that grows the union on one side registers,
 * on that side, as much again as the union's length: n adjacent chunks
 * then cost O(log n) registrations and O(n) bytes.  The extension stops
 * at merge_max, at the first unmapped page (never register a hole on
 * purpose: a refused registration costs a syscall), at the next indexed
 * entry, and is dropped if the cache would need more than max_bytes for
 * it.  Write lock held; fills m->gstart/m->gend.
 */
static void rc_grow_plan(struct regcache *cache, struct rc_merge *m)
{
	uintptr_t cs = UINTPTR_MAX, ce = 0;
	size_t ulen = m->end - m->start, want, covered_bytes = 0, i;
	struct rc_edge g;

	m->gstart = m->start;
	m->gend = m->end;
	for (i = 0; i < m->ncovered; i++) {
		const struct regcache_entry *c = m->covered[i];

		if (c->node.start < cs)
			cs = c->node.start;
		if (c->node.end > ce)
			ce = c->node.end;
		if (c->in_tree)
			covered_bytes += c->node.end - c->node.start;
	}
	if (!m->ncovered || ulen >= cache->merge_max)
		return;
	want = ulen;
	if (want > cache->merge_max - ulen)
		want = (cache->merge_max - ulen) & ~(rc_page_size - 1);
	if (!want)
		return;
	/* The cache after the union replaced the covered entries. */
	if (cache->bytes - covered_bytes + ulen + want > cache->max_bytes)
		return;
	memset(&g, 0, sizeof(g));
	if (m->rend > ce) {
		/* Growing up: stay below the address space end and the next entry. */
		if (want > UINTPTR_MAX - rc_page_size - m->end)
			want = (UINTPTR_MAX - rc_page_size - m->end) &
			       ~(rc_page_size - 1);
		g.hi = m->end + want;
		rc_itree_visit(&cache->tree, m->end, g.hi, rc_edge_fn, &g);
		if (g.hi <= m->end)
			return;
		m->gend = m->end + rc_mapped_run(m->end, g.hi - m->end, false);
	} else if (m->rstart < cs) {
		/* Growing down: stay above page 0 and the previous entry. */
		if (m->start <= rc_page_size)
			return;
		if (want > m->start - rc_page_size)
			want = m->start - rc_page_size;
		g.down = true;
		g.lo = m->start - want;
		rc_itree_visit(&cache->tree, g.lo, m->start, rc_edge_fn, &g);
		if (g.lo >= m->start)
			return;
		m->gstart = m->start - rc_mapped_run(m->start, m->start - g.lo, true);
	}
}

/*
 * The callback refused the grown range: the extension probably reaches
 * memory it cannot register though it is mapped (a PROT_NONE guard, a
 * device mapping).  Halve the extension rather than fall back to the bare
 * union at once, which would bring back one registration of the whole
 * union per chunk for a buffer next to such memory.  At most
 * log2(extension / page size) refused calls; false when nothing is left.
 */
static bool rc_grow_shrink(struct rc_merge *m)
{
	size_t ext = (m->gend - m->end) + (m->start - m->gstart);

	ext = (ext / 2) & ~(rc_page_size - 1);
	if (!ext)
		return false;
	if (m->gend > m->end)
		m->gend = m->end + ext;
	else
		m->gstart = m->start - ext;
	return true;
}

/* Point e at what attempt 'level' registers. */
static void rc_try_apply(struct regcache_entry *e, const struct rc_merge *m,
			 enum rc_try level)
{
	switch (level) {
	case RC_TRY_GROWN:
		e->node.start = m->gstart;
		e->node.end = m->gend;
		e->access = m->access;
		break;
	case RC_TRY_UNION:
		e->node.start = m->start;
		e->node.end = m->end;
		e->access = m->access;
		break;
	case RC_TRY_EXACT:
		e->node.start = m->rstart;
		e->node.end = m->rend;
		e->access = m->raccess;
		break;
	}
}

/* Drop the references taken on the covered entries.  Write lock held. */
static void rc_merge_unref(struct rc_merge *m, struct rc_list *release)
{
	size_t i;

	for (i = 0; i < m->ncovered; i++)
		rc_entry_unref(m->covered[i], RC_REF_USER, release);
	m->ncovered = 0;
}

/* Subscribe e, evicting on -ENOSPC.  Write lock held. */
static int rc_subscribe_locked(struct regcache *cache, struct regcache_entry *e,
			       struct rc_list *release)
{
	int ret;

	for (;;) {
		ret = cache->mon->subscribe(cache, e);
		if (ret != -ENOSPC)
			break;
		if (!rc_evict_one(cache, release))
			break;
	}
	e->subscribed = !ret;
	return ret;
}

/* Move to the next, narrower attempt.  Write lock held. */
static void rc_try_next(struct rc_merge *m, enum rc_try *level,
			struct rc_list *release)
{
	if (*level == RC_TRY_UNION)
		rc_merge_unref(m, release);	/* the exact request covers none */
	if (*level != RC_TRY_EXACT)
		(*level)++;
}

/*
 * Subscribe e for the widest attempt the monitor accepts, from *level on.
 * The extension may reach memory the monitor cannot watch (kmod: unmapped;
 * uffd: not anon/shmem/hugetlb, or another userfaultfd's), or push the
 * module's pinned cap: then it is dropped, never paid for by an eviction.
 * Only the exact request may end unsubscribed (then it is not cached).
 * Write lock held.
 */
static int rc_subscribe_try(struct regcache *cache, struct regcache_entry *e,
			    struct rc_merge *m, enum rc_try *level,
			    struct rc_list *release)
{
	int ret;

	for (;;) {
		rc_try_apply(e, m, *level);
		if (*level == RC_TRY_GROWN) {
			ret = cache->mon->subscribe(cache, e);
			e->subscribed = !ret;
		} else {
			ret = rc_subscribe_locked(cache, e, release);
		}
		if (!ret || *level == RC_TRY_EXACT)
			return ret;
		rc_try_next(m, level, release);
	}
}

static int rc_register(struct regcache *cache, struct regcache_entry *e)
{
	uint64_t t0 = rc_now_ns();
	int ret;

	ret = cache->reg(cache->user, (void *)e->node.start,
			 e->node.end - e->node.start, e->access, &e->handle);
	atomic_fetch_add_explicit(&cache->reg_ns, rc_now_ns() - t0,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&cache->registrations, 1, memory_order_relaxed);
	if (ret > 0)
		ret = -ret;	/* be lenient with callbacks returning errno */
	return ret;
}

static void rc_deregister_now(struct regcache *cache, struct regcache_entry *e)
{
	uint64_t t0 = rc_now_ns();

	cache->dereg(cache->user, e->handle);
	atomic_fetch_add_explicit(&cache->dereg_ns, rc_now_ns() - t0,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&cache->deregistrations, 1, memory_order_relaxed);
}

/* A registration the cache does not keep: released at its put. */
static int rc_get_uncached(struct regcache *cache, uintptr_t start, uintptr_t end,
			   uint32_t access, struct regcache_entry **entryp)
{
	struct regcache_entry *e;
	int ret;

	e = rc_entry_alloc(cache, false);
	if (!e)
		return -ENOMEM;
	e->node.start = start;
	e->node.end = end;
	e->access = access;
	ret = rc_register(cache, e);
	if (ret) {
		rc_entry_free(cache, e);
		return ret;
	}
	atomic_fetch_add_explicit(&cache->uncached, 1, memory_order_relaxed);
	*entryp = e;
	return 0;
}

static int rc_get_slow(struct regcache *cache, uintptr_t start, uintptr_t end,
		       uint32_t access, struct regcache_entry **entryp)
{
	struct rc_merge m;
	struct rc_list release;
	struct regcache_entry *e;
	bool merged, stale, grow = true;
	enum rc_try level;
	unsigned int tries;
	size_t i;
	int ret = 0;

	memset(&m, 0, sizeof(m));
	rc_list_init(&release);
	for (tries = 0; tries < RC_GET_RETRIES; tries++) {
		rc_brlock_write_lock(&cache->lock);
		/* Drop the stale entries the lookup ran into. */
		e = rc_lookup(cache, start, end, access, &stale);
		if (stale) {
			struct rc_collect c = { .cache = cache, .only_stale = true };

			rc_list_init(&c.list);
			rc_itree_visit(&cache->tree, start, end, rc_collect_fn, &c);
			rc_drop_collected(cache, &c, &release);
		}
		if (e) {
			rc_hit(e);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			free(m.covered);
			*entryp = e;
			return 0;
		}
		if (tries == 0)
			atomic_fetch_add_explicit(&cache->misses, 1,
						  memory_order_relaxed);

		e = rc_entry_alloc(cache, true);
		if (!e) {
			rc_brlock_write_unlock(&cache->lock);
			ret = -ENOMEM;
			break;
		}
		m.cache = cache;
		m.start = m.rstart = start;
		m.end = m.rend = end;
		m.access = m.raccess = access;
		m.ncovered = 0;
		m.grew = m.nomem = false;
		merged = cache->merge_max >= rc_page_size && rc_merge_plan(cache, &m);
		if (!merged) {
			rc_merge_reset(&m);
			m.start = start;
			m.end = end;
			m.access = access;
		}
		level = RC_TRY_EXACT;
		if (merged) {
			m.gstart = m.start;
			m.gend = m.end;
			if (grow)
				rc_grow_plan(cache, &m);
			level = m.gstart != m.start || m.gend != m.end ?
				RC_TRY_GROWN : RC_TRY_UNION;
		}
		e->cached = true;
		/* Pin the covered entries: they may not vanish while unlocked. */
		for (i = 0; i < m.ncovered; i++)
			atomic_fetch_add(&m.covered[i]->refs, RC_REF_USER);
		ret = rc_subscribe_try(cache, e, &m, &level, &release);
		if (ret)
			e->cached = false;	/* cannot watch it: do not keep it */
		rc_list_add_tail(&cache->pending, &e->link);
		rc_brlock_write_unlock(&cache->lock);
		rc_release_list(cache, &release);

		ret = rc_register(cache, e);
		while (ret && level != RC_TRY_EXACT) {
			/*
			 * An extension into memory the backend refuses, or a
			 * union with unmapped holes: try the next narrower range.
			 */
			rc_brlock_write_lock(&cache->lock);
			if (e->subscribed) {
				cache->mon->unsubscribe(cache, e);
				e->subscribed = false;
			}
			if (level != RC_TRY_GROWN || !rc_grow_shrink(&m))
				rc_try_next(&m, &level, &release);
			atomic_store(&e->stale, 0);
			e->cached = !rc_subscribe_try(cache, e, &m, &level, &release);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			ret = rc_register(cache, e);
		}
		merged = level != RC_TRY_EXACT;

		rc_brlock_write_lock(&cache->lock);
		rc_list_del(&e->link);	/* off the pending list */
		if (ret) {
			/* The cache is left as it was. */
			if (e->subscribed) {
				cache->mon->unsubscribe(cache, e);
				e->subscribed = false;
			}
			rc_merge_unref(&m, &release);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			rc_entry_free(cache, e);
			free(m.covered);
			return ret;
		}
		if (atomic_load(&e->stale) ||
		    (e->subscribed && !cache->mon->valid(cache, e))) {
			/*
			 * The memory changed while we registered it: again.
			 * Without the extension, which may cover a busy
			 * neighbouring mapping the request has nothing to do
			 * with.
			 */
			if (level == RC_TRY_GROWN)
				grow = false;
			if (e->subscribed) {
				cache->mon->unsubscribe(cache, e);
				e->subscribed = false;
			}
			rc_merge_unref(&m, &release);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			rc_deregister_now(cache, e);
			rc_entry_free(cache, e);
			ret = -EAGAIN;
			continue;
		}
		if (e->cached) {
			/* Retire what the union replaces. */
			for (i = 0; i < m.ncovered; i++) {
				struct regcache_entry *c = m.covered[i];

				if (c->in_tree) {
					rc_itree_remove(&cache->tree, &c->node);
					rc_list_del(&c->lru);
					cache->entries--;
					cache->bytes -= c->node.end - c->node.start;
					RC_WRITE_ONCE(c->in_tree, false);
					if (c->subscribed) {
						cache->mon->unsubscribe(cache, c);
						c->subscribed = false;
					}
					atomic_fetch_sub(&c->refs, RC_REF_TREE);
					atomic_fetch_add_explicit(&cache->tree_seq, 1,
								  memory_order_release);
				}
			}
			if (merged)
				atomic_fetch_add_explicit(&cache->merges, 1,
							  memory_order_relaxed);
			while (cache->entries + 1 > cache->max_entries ||
			       cache->bytes + (e->node.end - e->node.start) >
					cache->max_bytes)
				if (!rc_evict_one(cache, &release))
					break;
			if (cache->entries + 1 > cache->max_entries ||
			    cache->bytes + (e->node.end - e->node.start) >
					cache->max_bytes) {
				if (e->subscribed)
					cache->mon->unsubscribe(cache, e);
				e->subscribed = false;
				e->cached = false;
			} else {
				rc_insert_locked(cache, e);
			}
		}
		rc_merge_unref(&m, &release);
		rc_brlock_write_unlock(&cache->lock);
		rc_release_list(cache, &release);
		if (!e->cached)
			atomic_fetch_add_explicit(&cache->uncached, 1,
						  memory_order_relaxed);
		free(m.covered);
		*entryp = e;
		return 0;
	}
	free(m.covered);
	return ret;
}

/* ------------------------------------------------------------------ API */

int regcache_get(struct regcache *cache, void *addr, size_t len,
		 uint32_t access, struct regcache_entry **entryp)
{
	uintptr_t a = (uintptr_t)addr, start, end;
	struct regcache_entry *e;
	struct rc_reader *s;

	if (!cache || !entryp || !len || a + len < a ||
	    a + len > UINTPTR_MAX - rc_page_size)
		return -EINVAL;
	if (rc_forked(cache))
		return -ESTALE;
	start = a & ~(rc_page_size - 1);
	end = (a + len + rc_page_size - 1) & ~(rc_page_size - 1);

	if (cache->mon->type == REGCACHE_MONITOR_NONE ||
	    end - start > cache->max_bytes || !cache->max_entries)
		return rc_get_uncached(cache, start, end, access, entryp);

	if (cache->mon->sync)
		cache->mon->sync(cache);
	rc_run_deferred(cache);

	s = rc_brlock_read_lock(&cache->lock);
	e = rc_lookup(cache, start, end, access, NULL);
	if (e) {
		rc_hit(e);
		rc_brlock_read_unlock(&cache->lock, s);
		*entryp = e;
		return 0;
	}
	rc_brlock_read_unlock(&cache->lock, s);
	return rc_get_slow(cache, start, end, access, entryp);
}

int regcache_put(struct regcache *cache, struct regcache_entry *entry)
{
	uint64_t v;
	struct rc_reader *s;

	if (!cache || !entry)
		return -EINVAL;
	if (rc_forked(cache))
		return -ESTALE;
	s = rc_brlock_read_lock(&cache->lock);
	if (!rc_entry_known(cache, entry) ||
	    __atomic_load_n(&entry->magic, __ATOMIC_ACQUIRE) != RC_MAGIC_LIVE ||
	    entry->cache != cache) {
		rc_brlock_read_unlock(&cache->lock, s);
		return -EINVAL;
	}
	v = atomic_load(&entry->refs);
	do {
		if (v < RC_REF_USER) {
			rc_brlock_read_unlock(&cache->lock, s);
			return -EINVAL;	/* already put */
		}
	} while (!atomic_compare_exchange_weak(&entry->refs, &v, v - RC_REF_USER));
	rc_brlock_read_unlock(&cache->lock, s);
	if (v == RC_REF_USER)
		rc_entry_release(cache, entry);
	rc_run_deferred(cache);
	return 0;
}

int regcache_flush(struct regcache *cache)
{
	struct rc_collect c = { .only_stale = false };
	struct rc_list release;

	if (!cache)
		return -EINVAL;
	if (rc_forked(cache))
		return -ESTALE;
	c.cache = cache;
	rc_list_init(&release);
	rc_list_init(&c.list);
	rc_brlock_write_lock(&cache->lock);
	rc_itree_visit_all(&cache->tree, rc_collect_fn, &c);
	while (!rc_list_empty(&c.list)) {
		struct regcache_entry *e = rc_list_entry(c.list.next, link);

		rc_list_del(&e->link);
		rc_remove_locked(cache, e, &release);
	}
	rc_brlock_write_unlock(&cache->lock);
	rc_release_list(cache, &release);
	rc_run_deferred(cache);
	return 0;
}

static uint64_t rc_sum_hits(struct regcache *cache)
{
	uint64_t h = atomic_load(&cache->retired_hits);
	size_t i, j;

	for (i = 0; i < cache->nchunks; i++)
		for (j = 0; j < RC_ENTRIES_PER_CHUNK; j++)
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

int regcache_fd(struct regcache *cache)
{
	if (!cache)
		return -EINVAL;
	if (rc_forked(cache))
		return -ESTALE;
	if (!cache->mon->fd)
		return -ENOTSUP;
	return cache->mon->fd(cache);
}

int regcache_process_events(struct regcache *cache)
{
	int n = 0;

	if (!cache)
		return -EINVAL;
	if (rc_forked(cache))
		return -ESTALE;
	if (cache->mon->process)
		n = cache->mon->process(cache);
	rc_run_deferred(cache);
	return n;
}

const char *regcache_monitor_name(const struct regcache *cache)
{
	return cache ? cache->mon->name : NULL;
}

void *regcache_entry_handle(const struct regcache_entry *entry)
{
	return entry->handle;
}

void *regcache_entry_addr(const struct regcache_entry *entry)
{
	return (void *)entry->node.start;
}

size_t regcache_entry_len(const struct regcache_entry *entry)
{
	return entry->node.end - entry->node.start;
}

uint32_t regcache_entry_access(const struct regcache_entry *entry)
{
	return entry->access;
}

bool regcache_entry_cached(const struct regcache_entry *entry)
{
	return entry->cached;
}

bool regcache_entry_valid(struct regcache *cache,
			  const struct regcache_entry *entry)
{
	if (!cache || !entry || entry->cache != cache || !entry->cached ||
	    rc_forked(cache))
		return false;
	if (cache->mon->sync)
		cache->mon->sync(cache);
	/* the same test a hit on this entry would pass */
	return RC_READ_ONCE(entry->in_tree) &&
	       !RC_READ_ONCE(entry->dead) &&
	       !atomic_load_explicit(&entry->stale, memory_order_relaxed) &&
	       cache->mon->valid(cache, entry);
}

/* -------------------------------------------------------- create/destroy */

static const struct rc_monitor_ops *rc_monitors[] = {
	[REGCACHE_MONITOR_KMOD] = &rc_monitor_kmod_ops,
	[REGCACHE_MONITOR_UFFD] = &rc_monitor_uffd_ops,
	[REGCACHE_MONITOR_NONE] = &rc_monitor_none_ops,
};

static int rc_start_monitor(struct regcache *cache,
			    enum regcache_monitor_type type, bool from_env)
{
	const char *why = "", *why_kmod = "";
	int ret;

	if (type != REGCACHE_MONITOR_AUTO) {
		cache->mon = rc_monitors[type];
		ret = cache->mon->start(cache, &why);
		if (ret)
			return ret;
		rc_log("monitor %s (%s%s%s)", cache->mon->name,
		       from_env ? "forced by REGCACHE_MONITOR" : "requested",
		       *why ? ", " : "", why);
		return 0;
	}
	cache->mon = &rc_monitor_kmod_ops;
	ret = cache->mon->start(cache, &why_kmod);
	if (!ret) {
		rc_log("monitor kmod (%s)", why_kmod);
		return 0;
	}
	cache->mon = &rc_monitor_uffd_ops;
	ret = cache->mon->start(cache, &why);
	if (!ret) {
		rc_log("monitor uffd (kmod unavailable: %s%s%s)", why_kmod,
		       *why ? "; " : "", why);
		return 0;
	}
	cache->mon = &rc_monitor_none_ops;
	rc_log("monitor none, registrations are not cached (kmod: %s; uffd: %s)",
	       why_kmod, why);
	return cache->mon->start(cache, &why);
}

int regcache_create(const struct regcache_attr *attr, struct regcache **cachep)
{
	enum regcache_monitor_type type;
	struct regcache *cache;
	struct rc_env env;
	int ret;

	if (!attr || !cachep || !attr->reg || !attr->dereg ||
	    (unsigned int)attr->monitor > REGCACHE_MONITOR_NONE ||
	    (attr->flags & ~(REGCACHE_ATTR_NO_PIN | REGCACHE_ATTR_NO_ENV)))
		return -EINVAL;
	if (attr->flags & REGCACHE_ATTR_NO_ENV)
		memset(&env, 0, sizeof(env));
	else if (rc_env_read(&env))
		return -EINVAL;
	pthread_once(&rc_atfork_once, rc_atfork_setup);
	if (!rc_page_size)
		rc_page_size = (size_t)sysconf(_SC_PAGESIZE);

	if (posix_memalign((void **)&cache, RC_CACHELINE, sizeof(*cache)))
		return -ENOMEM;
	memset(cache, 0, sizeof(*cache));
	ret = rc_brlock_init(&cache->lock);
	if (ret)
		goto free_cache;
	pthread_mutex_init(&cache->alloc_lock, NULL);
	pthread_mutex_init(&cache->defer_lock, NULL);
	rc_list_init(&cache->lru);
	rc_list_init(&cache->pending);
	rc_list_init(&cache->free_list);
	rc_list_init(&cache->deferred);
	cache->id = atomic_fetch_add(&rc_next_cache_id, 1);
	cache->reg = attr->reg;
	cache->dereg = attr->dereg;
	cache->user = attr->user;
	cache->flags = attr->flags;
	cache->fork_gen = atomic_load(&rc_fork_gen);
	cache->max_entries = env.max_entries_set ? env.max_entries :
			     attr->max_entries ? attr->max_entries :
			     RC_DEFAULT_MAX_ENTRIES;
	cache->max_bytes = env.max_bytes_set ? env.max_bytes :
			   attr->max_bytes ? attr->max_bytes :
			   rc_default_max_bytes();
	cache->merge_max = env.merge_set ? env.merge_max :
			   attr->merge_max ? attr->merge_max :
			   RC_DEFAULT_MERGE_MAX;
	cache->print_stats = env.stats;

	type = env.monitor_set ? env.monitor : attr->monitor;
	ret = rc_start_monitor(cache, type, env.monitor_set);
	if (ret)
		goto destroy_locks;
	*cachep = cache;
	return 0;

destroy_locks:
	pthread_mutex_destroy(&cache->defer_lock);
	pthread_mutex_destroy(&cache->alloc_lock);
	rc_brlock_destroy(&cache->lock);
free_cache:
	free(cache);
	return ret;
}

static void rc_print_stats(struct regcache *cache)
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

void regcache_destroy(struct regcache *cache)
{
	size_t i;

	if (!cache)
		return;
	if (cache->print_stats)
		rc_print_stats(cache);
	if (!rc_forked(cache)) {
		regcache_flush(cache);
		cache->mon->stop(cache);
		rc_run_deferred(cache);
	} else {
		/* The parent owns the registrations; only free memory. */
		cache->mon->stop(cache);
	}
	for (i = 0; i < cache->nchunks; i++)
		free(cache->chunks[i].base);
	free(cache->chunks);
	pthread_mutex_destroy(&cache->defer_lock);
	pthread_mutex_destroy(&cache->alloc_lock);
	rc_brlock_destroy(&cache->lock);
	free(cache);
}
