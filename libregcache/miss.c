// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * miss.c - a miss and its admission: the plan (plan.c), the registration
 * with no lock held, and the entry indexed only if its memory did not
 * change meanwhile; the exact (REGCACHE_GET_EXACT) misses likewise.
 *
 * Registration callbacks always run with no lock held, as in libfabric's
 * cache: an entry being registered waits on the 'pending' list, where
 * invalidations can mark it stale, and is only indexed if it is still
 * valid afterwards.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lookup.h"
#include "plan.h"
#include "vma.h"

#define RC_GET_RETRIES	8

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

static int rc_register_once(struct regcache *cache, struct regcache_entry *e)
{
	uint64_t t0 = rc_now_ns();
	int ret;

	ret = cache->reg(cache->user, regcache_entry_addr(e),
			 regcache_entry_len(e), e->access, &e->handle);
	atomic_fetch_add_explicit(&cache->reg_ns, rc_now_ns() - t0,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&cache->registrations, 1, memory_order_relaxed);
	if (ret > 0)
		ret = -ret;	/* be lenient with callbacks returning errno */
	return ret;
}

/* The callback's way of saying that no more memory can be pinned. */
static inline bool rc_reg_nomem(int ret)
{
	return ret == -ENOMEM || ret == -EAGAIN;
}

/*
 * Register e's range; no lock held.  A callback failing with -ENOMEM or
 * -EAGAIN has usually hit RLIMIT_MEMLOCK (ib_umem_get's ENOMEM) or the
 * device's table size, to which the idle registrations this cache keeps
 * count: as libfabric's cache does, evict idle entries worth at least
 * the range (what the kernel must pin for it) and retry once, counted in
 * reg_retries.  Nothing evicted: no retry, the error goes back.  'evict'
 * false: fail at once (a speculative extension is not worth the idle
 * entries it would cost; the caller drops it instead).
 */
static int rc_register_evict(struct regcache *cache, struct regcache_entry *e,
			     bool evict)
{
	int ret = rc_register_once(cache, e);

	if (evict && rc_reg_nomem(ret) &&
	    rc_evict_bytes(cache, e->node.end - e->node.start)) {
		atomic_fetch_add_explicit(&cache->reg_retries, 1,
					  memory_order_relaxed);
		ret = rc_register_once(cache, e);
	}
	return ret;
}

/*
 * -EFAULT from the callback for the range a caller named.  On Linux 6.1
 * a long-term pin cannot wait for a userfault: a page not present in a
 * range another userfaultfd watches in missing mode (the application's
 * own), or write-protected by it, fails the pin, where 7.3 waits for
 * that userfaultfd's handler.  madvise() waits for it on every kernel:
 * fault the range in as the pin would, read first, then write where the
 * mapping is writable, and register again after each.  Only the named
 * range: never a union or an extension, whose pages nobody asked for.
 * Memory that is not there (a hole, PROT_NONE) fails the populate and
 * keeps its -EFAULT.  Not for NO_PIN caches: their registrations fault
 * nothing in.
 */
static int rc_register_faulted(struct regcache *cache, struct regcache_entry *e)
{
	uintptr_t s = e->node.start, t = e->node.end;
	int ret = -EFAULT;

	if (cache->flags & REGCACHE_ATTR_NO_PIN)
		return ret;
	if (!rc_vma_populate(s, t, false))
		ret = rc_register_once(cache, e);
	if (ret == -EFAULT && !rc_vma_populate(s, t, true))
		ret = rc_register_once(cache, e);
	return ret;
}

/* Register the range a caller named (not a union or an extension). */
static int rc_register(struct regcache *cache, struct regcache_entry *e)
{
	int ret = rc_register_evict(cache, e, true);

	return ret == -EFAULT ? rc_register_faulted(cache, e) : ret;
}

/* Register what attempt 'level' of a miss asks for (rc_get_slow()). */
static int rc_register_level(struct regcache *cache, struct regcache_entry *e,
			     enum rc_try level)
{
	if (level == RC_TRY_EXACT)
		return rc_register(cache, e);
	return rc_register_evict(cache, e, level != RC_TRY_GROWN);
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
int __attribute__((noinline))
rc_get_uncached(struct regcache *cache, uintptr_t start, uintptr_t end,
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

/*
 * Put a freshly registered, subscribed entry into the index, evicting
 * idle entries to stay within the limits; if they cannot make room it is
 * served uncached (released at its put).  Write lock held.
 */
static void rc_admit_locked(struct regcache *cache, struct regcache_entry *e,
			    struct rc_list *release)
{
	size_t len = e->node.end - e->node.start;

	while (cache->entries + 1 > cache->max_entries ||
	       cache->bytes + len > cache->max_bytes)
		if (!rc_evict_one(cache, release))
			break;
	if (cache->entries + 1 > cache->max_entries ||
	    cache->bytes + len > cache->max_bytes) {
		rc_unsubscribe_locked(cache, e);
		e->cached = false;
		return;
	}
	rc_insert_locked(cache, e);
}

/*
 * A get served uncached because the monitor refused to watch the request:
 * -EBUSY, another userfaultfd owns it; -EMEDIUMTYPE, a shared or file
 * mapping whose changes the monitor cannot see (see monitor_uffd.c).
 */
static void rc_count_unwatched(struct regcache *cache, int err)
{
	if (err == -EBUSY)
		atomic_fetch_add_explicit(&cache->uffd_foreign, 1,
					  memory_order_relaxed);
	else if (err == -EMEDIUMTYPE)
		atomic_fetch_add_explicit(&cache->uffd_shared, 1,
					  memory_order_relaxed);
}

/*
 * A miss in progress (rc_get_slow()): the request, what its plan covers
 * (m), the entry being registered (e), the attempt (level), and what the
 * retries learnt: without growth (grow false), without the union (merge
 * false), the memory changed under the last registration (lost).
 */
struct rc_miss {
	struct regcache *cache;
	uintptr_t start, end;
	uint32_t access;
	struct rc_merge m;
	struct rc_list release;
	struct regcache_entry *e;
	enum rc_try level;
	bool merged, grow, merge, lost;
	int unwatched;		/* why the monitor refused the request */
};

/* Write lock held: the lookup again, dropping the stale entries it ran
 * into; the entry found, or NULL. */
static struct regcache_entry *rc_miss_lookup_locked(struct rc_miss *x)
{
	struct regcache *cache = x->cache;
	struct regcache_entry *e;
	bool stale;

	/* Drop the stale entries the lookup ran into. */
	e = rc_lookup(cache, x->start, x->end, x->access, &stale);
	if (stale) {
		struct rc_collect c = { .cache = cache, .only_stale = true };

		rc_list_init(&c.list);
		rc_itree_visit(&cache->tree, x->start, x->end, rc_collect_fn,
			       &c);
		rc_drop_collected(cache, &c, &x->release);
	}
	return e;
}

/*
 * Write lock held: the entry (x->e), the plan of what it registers (the
 * union with the entries it touches, its growth: x->m, x->level), the
 * covered entries pinned, the entry subscribed and put on the pending
 * list.  -ENOMEM without an entry slot.
 */
static int rc_miss_plan_locked(struct rc_miss *x)
{
	struct regcache *cache = x->cache;
	struct rc_merge *m = &x->m;
	struct regcache_entry *e;
	size_t i;
	int ret;

	e = rc_entry_alloc(cache, true);
	if (!e)
		return -ENOMEM;
	x->e = e;
	m->cache = cache;
	m->start = m->rstart = x->start;
	m->end = m->rend = x->end;
	m->access = m->raccess = x->access;
	m->ncovered = 0;
	m->grew = m->nomem = false;
	x->merged = x->merge && cache->merge_max >= rc_page_size &&
		    rc_merge_plan(cache, m);
	if (!x->merged) {
		rc_merge_reset(m);
		m->start = x->start;
		m->end = x->end;
		m->access = x->access;
	}
	x->level = RC_TRY_EXACT;
	if (x->merged) {
		m->gstart = m->start;
		m->gend = m->end;
		if (x->grow)
			rc_grow_plan(cache, m);
		x->level = m->gstart != m->start || m->gend != m->end ?
			   RC_TRY_GROWN : RC_TRY_UNION;
	}
	e->cached = true;
	/* Pin the covered entries: they may not vanish while unlocked. */
	for (i = 0; i < m->ncovered; i++)
		atomic_fetch_add(&m->covered[i]->refs, RC_REF_USER);
	ret = rc_subscribe_try(cache, e, m, &x->level, &x->release);
	x->unwatched = ret;
	if (ret)
		e->cached = false;	/* cannot watch it: do not keep it */
	rc_list_add_tail(&cache->pending, &e->link);
	return 0;
}

/* No lock held: register x->e for its attempt, narrowing it while the
 * backend refuses; 0 or the last attempt's error. */
static int rc_miss_register(struct rc_miss *x)
{
	struct regcache *cache = x->cache;
	struct regcache_entry *e = x->e;
	int ret;

	ret = rc_register_level(cache, e, x->level);
	while (ret && x->level != RC_TRY_EXACT) {
		/*
		 * An extension the backend refuses, or a union with
		 * unmapped holes: try the next narrower range.  An
		 * extension refused for lack of pinnable memory is
		 * dropped at once rather than halved.
		 */
		rc_brlock_write_lock(&cache->lock);
		rc_unsubscribe_locked(cache, e);
		if (x->level != RC_TRY_GROWN || rc_reg_nomem(ret) ||
		    !rc_grow_shrink(&x->m))
			rc_try_next(&x->m, &x->level, &x->release);
		atomic_store(&e->stale, 0);
		x->unwatched = rc_subscribe_try(cache, e, &x->m, &x->level,
						&x->release);
		e->cached = !x->unwatched;
		rc_brlock_write_unlock(&cache->lock);
		rc_release_list(cache, &x->release);
		ret = rc_register_level(cache, e, x->level);
	}
	return ret;
}

/*
 * Write lock held, and dropped: the memory changed while we registered
 * it, so the entry goes and the next try is one step narrower.  What
 * changed may be a busy neighbour the request has nothing to do with: the
 * extension reaches into it, or a covered entry of the union is its
 * memory, and a thread that keeps unmapping and remapping it would make
 * us lose every time.  So without the extension first, then without the
 * union: the exact request, which only a change of the requested memory
 * itself can spoil.
 */
static void rc_miss_lost(struct rc_miss *x)
{
	struct regcache *cache = x->cache;

	if (x->level == RC_TRY_GROWN)
		x->grow = false;
	else if (x->level == RC_TRY_UNION)
		x->merge = false;
	x->lost = true;
	rc_unsubscribe_locked(cache, x->e);
	rc_merge_unref(&x->m, &x->release);
	rc_brlock_write_unlock(&cache->lock);
	rc_release_list(cache, &x->release);
	rc_deregister_now(cache, x->e);
	rc_entry_free(cache, x->e);
}

/* Write lock held: index x->e, retiring what the union replaces. */
static void rc_miss_admit_locked(struct rc_miss *x)
{
	struct regcache *cache = x->cache;
	size_t i;

	/* Retire what the union replaces. */
	for (i = 0; i < x->m.ncovered; i++) {
		struct regcache_entry *c = x->m.covered[i];

		if (c->in_tree) {
			rc_itree_remove(&cache->tree, &c->node);
			rc_list_del(&c->lru);
			cache->entries--;
			cache->bytes -= c->node.end - c->node.start;
			RC_WRITE_ONCE(c->in_tree, false);
			rc_unsubscribe_locked(cache, c);
			atomic_fetch_sub(&c->refs, RC_REF_TREE);
			atomic_fetch_add_explicit(&cache->tree_seq, 1,
						  memory_order_release);
		}
	}
	if (x->merged)
		atomic_fetch_add_explicit(&cache->merges, 1,
					  memory_order_relaxed);
	rc_admit_locked(cache, x->e, &x->release);
}

/*
 * A miss: look again under the write lock, plan, register unlocked, and
 * index the entry only if its memory did not change meanwhile, else try
 * again narrower (RC_GET_RETRIES times).
 */
int __attribute__((noinline))
rc_get_slow(struct regcache *cache, uintptr_t start, uintptr_t end,
		       uint32_t access, struct regcache_entry **entryp)
{
	struct rc_miss x = {
		.cache = cache, .start = start, .end = end, .access = access,
		.grow = true, .merge = true,
	};
	struct regcache_entry *e;
	unsigned int tries;
	int ret = 0;

	rc_list_init(&x.release);
	for (tries = 0; tries < RC_GET_RETRIES; tries++) {
		x.lost = false;
		rc_brlock_write_lock(&cache->lock);
		e = rc_miss_lookup_locked(&x);
		if (e) {
			rc_hit(e);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &x.release);
			free(x.m.covered);
			*entryp = e;
			return 0;
		}
		if (tries == 0)
			atomic_fetch_add_explicit(&cache->misses, 1,
						  memory_order_relaxed);
		ret = rc_miss_plan_locked(&x);
		rc_brlock_write_unlock(&cache->lock);
		rc_release_list(cache, &x.release);
		if (ret)
			break;			/* no entry slot */

		ret = rc_miss_register(&x);
		e = x.e;
		x.merged = x.level != RC_TRY_EXACT;
		/*
		 * Let the monitor apply what it learnt while we registered
		 * (the uffd thread may have read an unmap of this range and
		 * not yet marked e stale) before judging e below.
		 */
		if (!ret && cache->mon->sync)
			cache->mon->sync(cache);

		rc_brlock_write_lock(&cache->lock);
		rc_list_del(&e->link);	/* off the pending list */
		if (ret) {
			/* The cache is left as it was. */
			rc_unsubscribe_locked(cache, e);
			rc_merge_unref(&x.m, &x.release);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &x.release);
			rc_entry_free(cache, e);
			free(x.m.covered);
			return ret;
		}
		if (atomic_load(&e->stale) ||
		    (e->subscribed && !rc_mon_valid(cache, e))) {
			rc_miss_lost(&x);
			ret = -EAGAIN;
			continue;
		}
		if (e->cached)
			rc_miss_admit_locked(&x);
		rc_merge_unref(&x.m, &x.release);
		rc_brlock_write_unlock(&cache->lock);
		rc_release_list(cache, &x.release);
		if (!e->cached) {
			atomic_fetch_add_explicit(&cache->uncached, 1,
						  memory_order_relaxed);
			rc_count_unwatched(cache, x.unwatched);
		}
		free(x.m.covered);
		*entryp = e;
		return 0;
	}
	free(x.m.covered);
	if (!x.lost)
		return ret;
	/*
	 * Even the exact request changed under every registration: another
	 * thread keeps unmapping and remapping the very memory it asked for.
	 * Register it once more and do not keep it, rather than fail with
	 * -EAGAIN.  This is safe: the cache's danger is serving a stale
	 * registration to a later get, and this one is never indexed, so it
	 * serves only this caller and is released at its put.  What it
	 * covers is what a plain ibv_reg_mr() racing with the same munmap()
	 * and mmap() would: the pages mapped when the kernel pinned them
	 * (or -EFAULT if none were), a race that is the caller's own.
	 */
	return rc_get_uncached(cache, start, end, access, entryp);
}

static void rc_exact_init(struct regcache_entry *e, const struct rc_xfind *f)
{
	e->exact = true;
	e->nokeep = e->droplast = f->nokeep;
	e->xaddr = f->addr;
	e->xlen = f->len;
	e->access = f->access;
	e->node.start = f->addr & ~(rc_page_size - 1);
	e->node.end = (f->addr + f->len + rc_page_size - 1) &
		      ~(rc_page_size - 1);
}

/* An exact registration not kept: for this holder alone, gone at its put. */
int rc_get_exact_uncached(struct regcache *cache,
			  const struct rc_xfind *f,
			  struct regcache_entry **entryp)
{
	struct regcache_entry *e;
	int ret;

	e = rc_entry_alloc(cache, false);
	if (!e)
		return -ENOMEM;
	rc_exact_init(e, f);
	ret = rc_register(cache, e);
	if (ret) {
		rc_entry_free(cache, e);
		return ret;
	}
	atomic_fetch_add_explicit(&cache->exact, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&cache->uncached, 1, memory_order_relaxed);
	*entryp = e;
	return 0;
}

int rc_get_exact_slow(struct regcache *cache, struct rc_xfind *f,
		      struct regcache_entry **entryp)
{
	struct rc_list release;
	struct regcache_entry *e;
	unsigned int tries;
	int ret, unwatched = 0;

	rc_list_init(&release);
	for (tries = 0; tries < RC_GET_RETRIES; tries++) {
		rc_brlock_write_lock(&cache->lock);
		e = rc_xlookup(cache, f);
		if (f->saw_stale) {
			struct rc_collect c = { .cache = cache, .only_stale = true };
			uintptr_t s = f->addr & ~(rc_page_size - 1);

			rc_list_init(&c.list);
			rc_itree_visit(&cache->xtree, s, s + 1, rc_collect_fn, &c);
			rc_drop_collected(cache, &c, &release);
		}
		if (e) {
			rc_hit(e);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			*entryp = e;
			return 0;
		}
		if (tries == 0)
			atomic_fetch_add_explicit(&cache->misses, 1,
						  memory_order_relaxed);
		e = rc_entry_alloc(cache, true);
		if (!e) {
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			return -ENOMEM;
		}
		rc_exact_init(e, f);
		/* cannot watch it: register it all the same, uncached */
		unwatched = rc_subscribe_locked(cache, e, &release);
		e->cached = !unwatched;
		rc_list_add_tail(&cache->pending, &e->link);
		rc_brlock_write_unlock(&cache->lock);
		rc_release_list(cache, &release);

		ret = rc_register(cache, e);

		rc_brlock_write_lock(&cache->lock);
		rc_list_del(&e->link);
		if (!ret && (atomic_load(&e->stale) ||
			     (e->subscribed && !rc_mon_valid(cache, e)))) {
			/* the memory changed while we registered it: again */
			ret = -EAGAIN;
			rc_unsubscribe_locked(cache, e);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			rc_deregister_now(cache, e);
			rc_entry_free(cache, e);
			continue;
		}
		if (ret) {
			rc_unsubscribe_locked(cache, e);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			rc_entry_free(cache, e);
			return ret;
		}
		atomic_fetch_add_explicit(&cache->exact, 1, memory_order_relaxed);
		if (e->cached)
			rc_admit_locked(cache, e, &release);
		rc_brlock_write_unlock(&cache->lock);
		rc_release_list(cache, &release);
		if (!e->cached) {
			atomic_fetch_add_explicit(&cache->uncached, 1,
						  memory_order_relaxed);
			rc_count_unwatched(cache, unwatched);
		}
		*entryp = e;
		return 0;
	}
	/*
	 * The memory kept changing under every try: register it uncached,
	 * as a plain registration racing the same munmap would be.  Never
	 * indexed, so no later get is handed it; gone at its put.
	 */
	return rc_get_exact_uncached(cache, f, entryp);
}
