// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * lookup.c - the hit path: regcache_get() and its exact variant,
 * regcache_put(), and the validity checks (regcache_entry_valid(),
 * regcache_generation()).
 *
 * A hit takes only the read side of the index's brlock, bumps the entry's
 * atomic reference count and returns; a per-thread hint remembers the
 * last entry hit so a repeated lookup skips the tree walk (the hint is
 * trusted only while the tree's change counter is unchanged).  What is not
 * a hit goes to miss.c.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>

#include "lookup.h"

__thread struct rc_hint rc_hint __attribute__((tls_model("initial-exec")));

/* The last exact entry this thread hit, valid while xtree_seq is unchanged. */
__thread struct rc_hint rc_xhint __attribute__((tls_model("initial-exec")));

static int rc_find_fn(struct rc_itree_node *n, void *arg)
{
	struct rc_find *f = arg;
	struct regcache_entry *e = rc_node_entry(n);

	if (!rc_entry_serves(f->cache, e, f->start, f->end, f->access))
		return 0;
	if (!rc_mon_valid(f->cache, e)) {
		f->saw_stale = true;
		return 0;
	}
	f->found = e;
	return 1;
}

/*
 * The index walk of a lookup whose hint did not serve; records the entry
 * found as this thread's hint.  Read or write lock held.
 */
struct regcache_entry *
rc_lookup_walk(struct regcache *cache, uintptr_t start, uintptr_t end,
	       uint32_t access, uint64_t seq, bool *saw_stale)
{
	struct rc_find f = {
		.cache = cache, .start = start, .end = end, .access = access,
	};
	struct rc_hint *h = &rc_hint;
	struct rc_itree_node *n;

	n = rc_itree_floor(&cache->tree, start);
	if (n && rc_entry_serves(cache, rc_node_entry(n), start, end, access) &&
	    rc_mon_valid(cache, rc_node_entry(n))) {
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

static int rc_xfind_fn(struct rc_itree_node *n, void *arg)
{
	struct rc_xfind *f = arg;
	struct regcache_entry *e = rc_node_entry(n);

	if (!rc_xmatch(e, f))
		return 0;
	if (!rc_mon_valid(f->cache, e)) {
		f->saw_stale = true;
		return 0;
	}
	f->found = e;
	return 1;
}

/* Read or write lock held.  A find becomes this thread's exact hint. */
struct regcache_entry *rc_xlookup(struct regcache *cache,
				  struct rc_xfind *f)
{
	uintptr_t start = f->addr & ~(rc_page_size - 1);
	uint64_t seq = atomic_load_explicit(&cache->xtree_seq,
					    memory_order_acquire);

	f->found = NULL;
	f->saw_stale = false;
	/* identical ranges share their first page */
	rc_itree_visit(&cache->xtree, start, start + 1, rc_xfind_fn, f);
	if (f->found) {
		rc_xhint.cache_id = cache->id;
		rc_xhint.seq = seq;
		rc_xhint.e = f->found;
	}
	return f->found;
}

/*
 * The last holder of a NOKEEP entry let go; drop it unless a get took it
 * again meanwhile (a hit needs the read side, so the write lock settles
 * the race: whoever puts last finds refs at the index's alone).
 */
static void __attribute__((noinline))
rc_put_nokeep(struct regcache *cache, struct regcache_entry *e)
{
	struct rc_list release;

	rc_list_init(&release);
	rc_brlock_write_lock(&cache->lock);
	if (__atomic_load_n(&e->magic, __ATOMIC_ACQUIRE) == RC_MAGIC_LIVE &&
	    e->droplast && e->in_tree && atomic_load(&e->refs) == RC_REF_TREE)
		rc_remove_locked(cache, e, &release);
	rc_brlock_write_unlock(&cache->lock);
	rc_release_list(cache, &release);
}

/*
 * The gate of the hinted hits (regcache_get(), the exact get): the read
 * side's fast path, taken only when the monitor has nothing to apply and
 * no deferred release waits; NULL sends the caller the long way.
 */
static inline struct rc_reader *rc_fast_read_lock(struct regcache *cache)
{
	if (__builtin_expect(!rc_mon_idle(cache), 0) ||
	    atomic_load_explicit(&cache->ndeferred, memory_order_relaxed))
		return NULL;
	return rc_brlock_read_trylock(&cache->lock);
}

/* Exact get: everything the fast path of regcache_get() does not need. */
static int rc_get_exact(struct regcache *cache, uintptr_t a, size_t len,
			uint32_t access, unsigned int flags,
			struct regcache_entry **entryp)
{
	struct rc_xfind f = {
		.cache = cache, .addr = a, .len = len, .access = access,
		.nokeep = !!(flags & REGCACHE_GET_NOKEEP),
	};
	struct regcache_entry *e;
	struct rc_reader *s;
	size_t span;

	span = ((a + len + rc_page_size - 1) & ~(rc_page_size - 1)) -
	       (a & ~(rc_page_size - 1));
	if (cache->mon->type == REGCACHE_MONITOR_NONE ||
	    span > cache->max_bytes || !cache->max_entries) {
		return rc_get_exact_uncached(cache, &f, entryp);
	}
	/* the hinted hit: what regcache_get()'s fast path does */
	if ((s = rc_fast_read_lock(cache))) {
		e = rc_xhint_get(cache, &f);
		if (__builtin_expect(!!e, 1)) {
			rc_hit(e);
			rc_brlock_read_unlock(&cache->lock, s);
			*entryp = e;
			return 0;
		}
		rc_brlock_read_unlock(&cache->lock, s);
	}
	rc_mon_sync(cache);
	rc_run_deferred(cache);

	s = rc_brlock_read_lock(&cache->lock);
	e = rc_xlookup(cache, &f);
	if (e) {
		rc_hit(e);
		rc_brlock_read_unlock(&cache->lock, s);
		*entryp = e;
		return 0;
	}
	rc_brlock_read_unlock(&cache->lock, s);
	return rc_get_exact_slow(cache, &f, entryp);
}

/* regcache_get() past its fast path: everything but the hinted hit. */
static int __attribute__((noinline))
rc_get_lookup(struct regcache *cache, uintptr_t start, uintptr_t end,
	      uint32_t access, struct regcache_entry **entryp)
{
	struct regcache_entry *e;
	struct rc_reader *s;

	/* fast_max is 0 for the "none" monitor and a cache of no entries */
	if (end - start > cache->fast_max)
		return rc_get_uncached(cache, start, end, access, entryp);

	rc_mon_sync(cache);
	rc_run_deferred(cache);

	s = rc_brlock_read_lock(&cache->lock);
	e = rc_lookup(cache, start, end, access, NULL);
	if (__builtin_expect(!!e, 1)) {
		rc_hit(e);
		rc_brlock_read_unlock(&cache->lock, s);
		*entryp = e;
		return 0;
	}
	rc_brlock_read_unlock(&cache->lock, s);
	return rc_get_slow(cache, start, end, access, entryp);
}

/* regcache_get() when the hint did not serve: the index walk, read-locked. */
static int __attribute__((noinline))
rc_get_walk(struct regcache *cache, struct rc_reader *s, uintptr_t start,
	    uintptr_t end, uint32_t access, struct regcache_entry **entryp)
{
	uint64_t seq = atomic_load_explicit(&cache->tree_seq,
					    memory_order_acquire);
	struct regcache_entry *e;

	e = rc_lookup_walk(cache, start, end, access, seq, NULL);
	if (e) {
		rc_hit(e);
		rc_brlock_read_unlock(&cache->lock, s);
		*entryp = e;
		return 0;
	}
	rc_brlock_read_unlock(&cache->lock, s);
	return rc_get_slow(cache, start, end, access, entryp);
}

/*
 * The hit on this thread's hinted entry, with nothing to wait for, is
 * inlined here: no call, no register spills.  A range the hint does not
 * serve goes on to the index walk (rc_get_walk); a monitor that has work,
 * deferred releases or a writer to rc_get_lookup(), the long way.
 */
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

	if (__builtin_expect(end - start <= cache->fast_max, 1) &&
	    (s = rc_fast_read_lock(cache))) {
		e = rc_hint_get(cache, start, end, access);
		if (__builtin_expect(!!e, 1)) {
			rc_hit(e);
			rc_brlock_read_unlock(&cache->lock, s);
			*entryp = e;
			return 0;
		}
		return rc_get_walk(cache, s, start, end, access, entryp);
	}
	return rc_get_lookup(cache, start, end, access, entryp);
}

int regcache_get_flags(struct regcache *cache, void *addr, size_t len,
		       uint32_t access, unsigned int flags,
		       struct regcache_entry **entryp)
{
	uintptr_t a = (uintptr_t)addr;

	if (!flags)
		return regcache_get(cache, addr, len, access, entryp);
	if ((flags & ~(REGCACHE_GET_EXACT | REGCACHE_GET_NOKEEP)) ||
	    !(flags & REGCACHE_GET_EXACT))
		return -EINVAL;
	if (!cache || !entryp || !len || a + len < a ||
	    a + len > UINTPTR_MAX - rc_page_size)
		return -EINVAL;
	if (rc_forked(cache))
		return -ESTALE;
	return rc_get_exact(cache, a, len, access, flags, entryp);
}

/*
 * A put needs no lock.  Entries are type-stable: their slots live in
 * chunks that are only freed by regcache_destroy(), so once 'entry' is
 * known to be a slot of this cache, reading it cannot fault, and the
 * caller's reference keeps the slot from being freed and reused while we
 * read nokeep and drop that reference.  The magic (acquire, paired with
 * the release store of rc_entry_alloc/rc_entry_free) turns away freed
 * slots (a slot only ever serves the cache whose chunk holds it, so a
 * live one has entry->cache == cache); the CAS on refs
 * is the only step that must be atomic, and it serialises with the
 * writer's own RMWs on refs (rc_remove_locked's drop of the index's
 * reference), so exactly one side sees the count reach zero and releases.
 * Knowing the slot costs a binary search over the chunks under the read
 * side (the chunk array grows under the write lock), except for the
 * entry this thread's last lookup found in either index (its hints): that
 * pointer came out of this cache's index, and cache ids are never reused,
 * so it is a slot of this cache for the cache's whole life.
 */
int regcache_put(struct regcache *cache, struct regcache_entry *entry)
{
	const struct rc_hint *h = &rc_hint, *x = &rc_xhint;
	uint64_t v;
	bool nokeep;

	if (!cache || !entry)
		return -EINVAL;
	if (rc_forked(cache))
		return -ESTALE;
	/* a live slot of this cache's chunks has entry->cache == cache */
	if (__builtin_expect(entry != h->e || h->cache_id != cache->id, 0) &&
	    (entry != x->e || x->cache_id != cache->id) &&
	    !rc_entry_known_slow(cache, entry))
		return -EINVAL;
	if (__atomic_load_n(&entry->magic, __ATOMIC_ACQUIRE) != RC_MAGIC_LIVE)
		return -EINVAL;
	/* read while our reference keeps the slot ours */
	nokeep = entry->droplast;
	v = atomic_load_explicit(&entry->refs, memory_order_relaxed);
	do {
		if (v < RC_REF_USER)
			return -EINVAL;	/* already put */
	} while (!atomic_compare_exchange_weak(&entry->refs, &v, v - RC_REF_USER));
	if (v == RC_REF_USER)
		rc_entry_release(cache, entry);
	else if (nokeep && v == RC_REF_USER + RC_REF_TREE)
		rc_put_nokeep(cache, entry);
	rc_run_deferred(cache);
	return 0;
}

bool regcache_entry_valid(struct regcache *cache,
			  const struct regcache_entry *entry)
{
	if (!cache || !entry || entry->cache != cache || !entry->cached ||
	    rc_forked(cache))
		return false;
	rc_mon_sync(cache);
	/* the same test a hit on this entry would pass */
	return RC_READ_ONCE(entry->in_tree) &&
	       !RC_READ_ONCE(entry->dead) &&
	       !atomic_load_explicit(&entry->stale, memory_order_relaxed) &&
	       rc_mon_valid(cache, entry);
}

/*
 * Why an unchanged generation proves the entries checked after the
 * earlier call still valid.  An entry stops being valid in two ways.
 * (1) It leaves the index (flush, an invalidation the library applies,
 * uffd's thread included): rc_remove_locked() clears in_tree, then bumps
 * inval_seq with release.  A generation whose acquire load saw that bump
 * makes the later check see in_tree clear, so the entry was not kept;
 * one that did not see it differs from any taken after the bump.  (2) The
 * module changes its slot word (kmod): the notifier writes the word and
 * then events_total (smp_wmb, regcache_status_sync) before the unmapping
 * call returns; the same pairing with our acquire load of events_total
 * applies.  uffd's window between the event's read and its application
 * is closed by rc_mon_sync(), as for regcache_entry_valid().  Both counts
 * only grow, so their sum is unchanged only if neither changed.
 */
uint64_t regcache_generation(struct regcache *cache)
{
	const volatile struct regcache_status *st;
	uint64_t g;

	if (!cache || rc_forked(cache) || !cache->fast_max)
		return 0;
	rc_mon_sync(cache);
	st = cache->mon_status;
	g = atomic_load_explicit(&cache->inval_seq, memory_order_acquire);
	if (st)
		g += __atomic_load_n(&st->events_total, __ATOMIC_ACQUIRE);
	else if (cache->mon->type != REGCACHE_MONITOR_UFFD)
		return 0;	/* a monitor whose changes we cannot count */
	return g;
}
