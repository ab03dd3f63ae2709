// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * evict.c - the index's ins and outs, write lock held: insert, remove,
 * CLOCK eviction, the monitors' invalidations, and regcache_flush().
 *
 * Eviction is CLOCK (second chance) rather than a strict LRU list because
 * a strict list would have to be relinked under a lock on every hit.
 */
#include "config.h"

#include <errno.h>

#include "regcache_int.h"

/* Take e out of the index.  Write lock held. */
/* Stop the monitor watching e, if it does.  Write lock held. */
void rc_unsubscribe_locked(struct regcache *cache,
			   struct regcache_entry *e)
{
	if (e->subscribed) {
		cache->mon->unsubscribe(cache, e);
		e->subscribed = false;
	}
}

void rc_remove_locked(struct regcache *cache, struct regcache_entry *e,
		      struct rc_list *release)
{
	rc_itree_remove(rc_entry_tree(cache, e), &e->node);
	rc_list_del(&e->lru);
	cache->entries--;
	cache->bytes -= e->node.end - e->node.start;
	RC_WRITE_ONCE(e->in_tree, false);
	/* after in_tree: see regcache_generation() */
	atomic_fetch_add_explicit(&cache->inval_seq, 1, memory_order_release);
	/* each index has its own hint, so churn in one leaves the other's */
	atomic_fetch_add_explicit(e->exact ? &cache->xtree_seq :
				  &cache->tree_seq, 1, memory_order_release);
	rc_unsubscribe_locked(cache, e);
	rc_entry_unref(e, RC_REF_TREE, release);
}

void rc_insert_locked(struct regcache *cache, struct regcache_entry *e)
{
	atomic_fetch_add(&e->refs, RC_REF_TREE);
	rc_itree_insert(rc_entry_tree(cache, e), &e->node);
	rc_list_add(&cache->lru, &e->lru);
	cache->entries++;
	cache->bytes += e->node.end - e->node.start;
	RC_WRITE_ONCE(e->in_tree, true);
	atomic_fetch_add_explicit(e->exact ? &cache->xtree_seq :
				  &cache->tree_seq, 1, memory_order_release);
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

int rc_collect_fn(struct rc_itree_node *n, void *arg)
{
	struct rc_collect *c = arg;
	struct regcache_entry *e = rc_node_entry(n);

	if (!c->only_stale || !rc_mon_valid(c->cache, e))
		rc_list_add_tail(&c->list, &e->link);
	return 0;
}

int rc_drop_collected(struct regcache *cache, struct rc_collect *c,
		      struct rc_list *release)
{
	struct rc_list mine;
	unsigned int queued = 0;
	int n = 0;

	rc_list_init(&mine);

	while (!rc_list_empty(&c->list)) {
		struct regcache_entry *e = rc_list_entry(c->list.next, link);

		rc_list_del(&e->link);
		/* Holders keep it until their put; lookups never see it again. */
		if (atomic_load(&e->refs) != RC_REF_TREE) {
			RC_WRITE_ONCE(e->dead, true);
			/* an exact registration (a peer's key) whose
			 * memory went goes now, under its holders:
			 * rc_entry_revoke() */
			if (e->exact && !e->revoke && !cache->inval_soft) {
				atomic_fetch_add(&e->refs, RC_REF_USER);
				e->revoke = true;
				rc_list_add_tail(&mine, &e->link);
			}
		}
		rc_remove_locked(cache, e, &mine);
		n++;
	}
	/* what goes now is counted until its dereg returned (under the
	 * write lock, so a later writer's rc_inval_wait() sees it) */
	while (!rc_list_empty(&mine)) {
		struct regcache_entry *e = rc_list_entry(mine.next, link);

		rc_list_del(&e->link);
		e->inval_queued = true;
		rc_list_add_tail(release, &e->link);
		queued++;
	}
	if (queued)
		atomic_fetch_add(&cache->inval_releasing, queued);
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
	rc_itree_visit(&cache->xtree, start, end, rc_collect_fn, &c);
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

		if (e->subscribed && !rc_mon_valid(cache, e))
			atomic_store(&e->stale, 1);
	}
	rc_list_init(&c.list);
	rc_itree_visit_all(&cache->tree, rc_collect_fn, &c);
	rc_itree_visit_all(&cache->xtree, rc_collect_fn, &c);
	return rc_drop_collected(cache, &c, release);
}

/*
 * Evict idle entries, least recently used first (CLOCK), until 'need'
 * bytes of registrations are gone or nothing idle is left, and release
 * them (the dereg callbacks unpin before this returns), with what the
 * uffd thread deferred.  Returns the bytes evicted.  No lock held.
 */
size_t rc_evict_bytes(struct regcache *cache, size_t need)
{
	struct rc_list release;
	size_t before, freed;

	rc_list_init(&release);
	rc_brlock_write_lock(&cache->lock);
	before = cache->bytes;
	while (before - cache->bytes < need)
		if (!rc_evict_one(cache, &release))
			break;
	freed = before - cache->bytes;
	rc_brlock_write_unlock(&cache->lock);
	rc_release_list(cache, &release);
	rc_run_deferred(cache);
	return freed;
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
	rc_itree_visit_all(&cache->xtree, rc_collect_fn, &c);
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
