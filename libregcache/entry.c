// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * entry.c - entry slots: the chunks they live in, their allocation,
 * whether a pointer is one of a cache's slots, and their release (the
 * dereg callback), which the uffd thread defers to an application thread.
 *
 * Entries are type-stable: their slots live in chunks that only
 * regcache_destroy() frees, so a put may read a slot without a lock once
 * it knows the slot is this cache's (regcache_put(), lookup.c).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "regcache_int.h"

/*
 * An RC_HUGE_CHUNK-aligned mapping of RC_HUGE_CHUNK bytes, which the
 * kernel may back with one transparent huge page (MADV_HUGEPAGE: it does
 * so in the "madvise" and "always" modes); NULL if it cannot be mapped.
 * Without a huge page it is ordinary memory, as a malloc'd chunk is.
 */
static struct regcache_entry *rc_chunk_map(void)
{
	size_t len = 2 * RC_HUGE_CHUNK;
	char *p, *a;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + RC_HUGE_CHUNK - 1) &
		     ~(uintptr_t)(RC_HUGE_CHUNK - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + len > a + RC_HUGE_CHUNK)
		munmap(a + RC_HUGE_CHUNK, (size_t)(p + len - a - RC_HUGE_CHUNK));
#ifdef MADV_HUGEPAGE
	madvise(a, RC_HUGE_CHUNK, MADV_HUGEPAGE);
#endif
	return (struct regcache_entry *)a;
}

void rc_chunk_free(const struct rc_chunk *c)
{
	if (c->mapped)
		munmap(c->base, RC_HUGE_CHUNK);
	else
		free(c->base);
}

int rc_chunk_add(struct regcache *cache)
{
	struct regcache_entry *base = NULL;
	struct rc_chunk *c;
	size_t i, pos, n = RC_ENTRIES_PER_CHUNK;
	bool mapped = false;

	if (cache->nchunks == cache->chunks_cap) {
		size_t cap = cache->chunks_cap ? cache->chunks_cap * 2 : 8;

		c = realloc(cache->chunks, cap * sizeof(*c));
		if (!c)
			return -ENOMEM;
		cache->chunks = c;
		cache->chunks_cap = cap;
	}
	if (cache->nchunks >= RC_SMALL_CHUNKS) {
		base = rc_chunk_map();
		if (base) {
			n = RC_HUGE_CHUNK / sizeof(*base);
			mapped = true;
		}
	}
	/* aligned: an entry's hot fields share one cache line */
	if (!base && posix_memalign((void **)&base, RC_CACHELINE,
				    n * sizeof(*base)))
		return -ENOMEM;
	memset(base, 0, n * sizeof(*base));
	/* Keep chunks sorted by address for the binary search in put. */
	for (pos = cache->nchunks; pos > 0; pos--) {
		if (cache->chunks[pos - 1].base < base)
			break;
		cache->chunks[pos] = cache->chunks[pos - 1];
	}
	cache->chunks[pos].base = base;
	cache->chunks[pos].n = n;
	cache->chunks[pos].mapped = mapped;
	cache->nchunks++;
	for (i = 0; i < n; i++) {
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
struct regcache_entry *rc_entry_alloc(struct regcache *cache, bool locked)
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
	e->exact = e->nokeep = e->droplast = false;
	e->revoke = e->revoked = false;
	e->inval_queued = false;
	e->access = 0;
	e->handle = NULL;
	e->xaddr = 0;
	e->xlen = 0;
	e->cache = cache;
	rc_list_init(&e->lru);
	e->slot = 0;
	e->slot_word = 0;
	e->cookie = 0;
	e->slot_ptr = NULL;
	__atomic_store_n(&e->magic, RC_MAGIC_LIVE, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&cache->alloc_lock);
	return e;
}

void rc_entry_free(struct regcache *cache, struct regcache_entry *e)
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
		} else if (p >= b + cache->chunks[mid].n * sizeof(*e)) {
			lo = mid + 1;
		} else {
			return (p - b) % sizeof(*e) == 0;
		}
	}
	return false;
}

/* Inside a dereg callback: rc_inval_wait() must not wait for itself. */
static __thread unsigned int rc_in_dereg;

static void rc_entry_dereg(struct regcache *cache, void *handle)
{
	uint64_t t0;
	int ret;

	/* A forked child must never undo the parent's registrations. */
	if (rc_forked(cache))
		return;
	t0 = rc_now_ns();
	rc_in_dereg++;
	ret = cache->dereg(cache->user, handle);
	rc_in_dereg--;
	atomic_fetch_add_explicit(&cache->dereg_ns, rc_now_ns() - t0,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&cache->deregistrations, 1,
				  memory_order_relaxed);
	if (ret)
		rc_log("dereg callback failed: %s", strerror(-ret));
}

/*
 * A held exact entry whose memory went (see 'revoke'): the handle reads
 * NULL from here on, the registration goes, and the holders keep only
 * the slot until their puts.  The reference the invalidation took is
 * dropped last; if the holders have put meanwhile, that frees the slot.
 */
static void rc_entry_revoke(struct regcache *cache, struct regcache_entry *e)
{
	void *handle = e->handle;

	e->revoke = false;
	__atomic_store_n(&e->handle, NULL, __ATOMIC_RELEASE);
	rc_entry_dereg(cache, handle);
	e->revoked = true;
	if (atomic_fetch_sub(&e->refs, RC_REF_USER) == RC_REF_USER)
		rc_entry_release(cache, e);
}

/* An invalidation's release is over: wake rc_inval_wait() at the last. */
static void rc_inval_done(struct regcache *cache)
{
	/* seq_cst both: a waiter counts itself in before it reads the
	 * count, this reads the waiters after its decrement, so one of the
	 * two sees the other (no mutex when nobody waits) */
	if (atomic_fetch_sub(&cache->inval_releasing, 1) != 1 ||
	    !atomic_load(&cache->inval_waiters))
		return;
	pthread_mutex_lock(&cache->inval_lock);
	pthread_cond_broadcast(&cache->inval_cond);
	pthread_mutex_unlock(&cache->inval_lock);
}

void __attribute__((noinline))
rc_entry_release(struct regcache *cache, struct regcache_entry *e)
{
	bool inval = e->inval_queued;	/* e may be free below */
	uint64_t h;

	e->inval_queued = false;
	if (e->revoke) {
		rc_entry_revoke(cache, e);
		goto out;
	}
	if (!e->revoked)
		rc_entry_dereg(cache, e->handle);
	h = atomic_exchange(&e->hits, 0);
	atomic_fetch_add_explicit(&cache->retired_hits, h, memory_order_relaxed);
	rc_entry_free(cache, e);
out:
	if (inval)
		rc_inval_done(cache);
}

/*
 * Wait until the releases that invalidations queued, in any thread,
 * have returned from their dereg: regcache_process_events() promises
 * that the registrations of the memory that went before the call are
 * gone when it returns, also those another thread drained first (a
 * progress thread woken by the monitor's fd, a get's trylock drain) and
 * is still deregistering.  The count goes up under the write lock, so a
 * caller that took the lock after the drain sees it.  Deferred releases
 * (the uffd thread's) are run here too, since only an application
 * thread may run them; a dereg callback that calls in does not wait for
 * itself.
 */
void rc_inval_wait(struct regcache *cache)
{
	struct timespec ts;

	if (__builtin_expect(!atomic_load(&cache->inval_releasing), 1) ||
	    rc_in_dereg)
		return;
	pthread_mutex_lock(&cache->inval_lock);
	atomic_fetch_add(&cache->inval_waiters, 1);
	while (atomic_load(&cache->inval_releasing)) {
		pthread_mutex_unlock(&cache->inval_lock);
		rc_run_deferred(cache);
		pthread_mutex_lock(&cache->inval_lock);
		if (!atomic_load(&cache->inval_releasing))
			break;
		/* a timeout as well: a release deferred meanwhile is ours */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&cache->inval_cond, &cache->inval_lock,
				       &ts);
	}
	atomic_fetch_sub(&cache->inval_waiters, 1);
	pthread_mutex_unlock(&cache->inval_lock);
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

void __attribute__((noinline, cold))
rc_run_deferred_slow(struct regcache *cache)
{
	struct rc_list list;

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

/* Is e one of this cache's entry slots?  The search under the read side. */
bool __attribute__((noinline))
rc_entry_known_slow(struct regcache *cache, const struct regcache_entry *e)
{
	struct rc_reader *s = rc_brlock_read_lock(&cache->lock);
	bool known = rc_entry_known(cache, e);

	rc_brlock_read_unlock(&cache->lock, s);
	return known;
}

void *regcache_entry_handle(const struct regcache_entry *entry)
{
	/* NULL once an exact entry's registration was revoked */
	return __atomic_load_n(&entry->handle, __ATOMIC_ACQUIRE);
}

void *regcache_entry_addr(const struct regcache_entry *entry)
{
	return (void *)(entry->exact ? entry->xaddr : entry->node.start);
}

size_t regcache_entry_len(const struct regcache_entry *entry)
{
	return entry->exact ? entry->xlen : entry->node.end - entry->node.start;
}

uint32_t regcache_entry_access(const struct regcache_entry *entry)
{
	return entry->access;
}

bool regcache_entry_cached(const struct regcache_entry *entry)
{
	return entry->cached;
}
