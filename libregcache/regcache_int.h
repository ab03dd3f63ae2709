/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * regcache_int.h - libregcache internals shared by the core and monitors.
 *
 * Lifetime of an entry: 'refs' counts two per holder plus one while the
 * entry is in the index.  Whoever drops it to zero releases it (dereg
 * callback, then back to the free list), always outside the cache lock.
 * The index is protected by a brlock: the hit path takes the read side,
 * everything that changes the index the write side.
 */
#ifndef RC_REGCACHE_INT_H
#define RC_REGCACHE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The library builds with -fvisibility=hidden: export exactly the API. */
#pragma GCC visibility push(default)
#include "regcache.h"
#pragma GCC visibility pop
#include "brlock.h"
#include "itree.h"
#include "regcache_uapi.h"

#define RC_REF_TREE		1ULL	/* the index's reference */
#define RC_REF_USER		2ULL	/* one holder's reference */

#define RC_MAGIC_LIVE		0x72636c76U	/* "rclv" */
#define RC_MAGIC_FREE		0x72636672U	/* "rcfr" */

#define RC_ENTRIES_PER_CHUNK	1024
/*
 * From this many chunks on (4096 entries), a new chunk is one 2 MiB
 * mapping on a transparent huge page where the kernel gives one: a random
 * lookup over many entries touches one entry per get, and on 4 KiB pages
 * nearly every touch is a TLB miss as well as a cache miss.  Small caches
 * keep small chunks (a huge page each would be 2 MiB of memory).
 */
#define RC_SMALL_CHUNKS		4
#define RC_HUGE_CHUNK		(2UL << 20)

struct rc_list {
	struct rc_list *prev, *next;
};

/*
 * in_tree and dead are written under the cache's write lock and read
 * without it by regcache_entry_valid(): one untorn access each, as the
 * kernel's READ_ONCE/WRITE_ONCE, and no data race in the C11 sense, so
 * ThreadSanitizer (--enable-sanitizers=thread) has nothing to report.
 */
#define RC_READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define RC_WRITE_ONCE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/*
 * The first cache line holds all a hit and a put touch (the serve test,
 * the monitor's check, refs, the statistics, the put's checks): with
 * many entries a random hit then costs one miss on the entry.
 */
struct regcache_entry {
	uint32_t magic;
	uint32_t access;
	_Atomic uint64_t refs;
	_Atomic uint64_t hits;
	_Atomic uint8_t accessed;	/* CLOCK reference bit */
	_Atomic uint8_t stale;		/* invalidated while being registered */
	bool in_tree;
	bool cached;			/* false: released at its last put */
	bool dead;			/* invalidated while referenced */
	bool subscribed;		/* the monitor watches it */
	/* REGCACHE_GET_EXACT: in cache->xtree, registered as [xaddr,
	 * xaddr + xlen) byte for byte; node is that range page-rounded, for
	 * the monitor and invalidations only */
	bool exact;
	bool nokeep;			/* REGCACHE_GET_NOKEEP: drop at last put */
	/* drop at the last put: nokeep, or an exact entry on memory whose
	 * unmap the monitor sees but not all its changes (uffd: shared) */
	bool droplast;
	/*
	 * An exact entry invalidated while held: its registration is
	 * deregistered now, not at the last put (a peer's key must not
	 * outlive the memory).  revoke: queued for that, with a reference
	 * of its own (RC_REF_USER) so no put frees it first; revoked: done,
	 * the last put only frees the slot.
	 */
	bool revoke;
	bool revoked;
	/* queued for release by an invalidation: counted in
	 * cache->inval_releasing until its dereg returned */
	bool inval_queued;
	/*
	 * kmod: the entry's word in the status area, so the hit path checks
	 * validity with one load and no call (rc_mon_valid); NULL otherwise.
	 */
	const volatile uint64_t *slot_ptr;
	uint64_t slot_word;		/* monitor data */
	struct rc_itree_node node;	/* [start, end) page aligned: first */
	void *handle;
	uintptr_t xaddr;		/* exact entries: the registered bytes */
	size_t xlen;
	struct regcache *cache;
	struct rc_list lru;		/* in_tree entries, CLOCK order */
	struct rc_list link;		/* pending / release / free lists */
	/* monitor data */
	uint32_t slot;
	uint64_t cookie;
} __attribute__((aligned(RC_CACHELINE)));

struct rc_monitor_ops {
	const char *name;
	enum regcache_monitor_type type;
	/* Open the monitor; 0, or -errno with *why saying why (for the log). */
	int (*start)(struct regcache *cache, const char **why);
	void (*stop)(struct regcache *cache);
	/*
	 * Watch an entry's range.  Write lock held.  -ENOSPC: evict and
	 * retry.  Any error leaves the request uncached; -EBUSY (another
	 * owner) and -EMEDIUMTYPE (memory whose changes the monitor cannot
	 * see) are counted as uffd_foreign and uffd_shared.
	 */
	int (*subscribe)(struct regcache *cache, struct regcache_entry *e);
	/* Stop watching.  Write lock held; e is already out of the index. */
	void (*unsubscribe)(struct regcache *cache, struct regcache_entry *e);
	/* Hit path: is the entry's memory unchanged?  Read lock held. */
	bool (*valid)(const struct regcache *cache, const struct regcache_entry *e);
	/* Something to do before a lookup may be trusted (may take the write lock). */
	void (*sync)(struct regcache *cache);
	int (*fd)(struct regcache *cache);
	/* Apply queued invalidations; returns entries dropped or -errno. */
	int (*process)(struct regcache *cache);
};

extern const struct rc_monitor_ops rc_monitor_kmod_ops;
extern const struct rc_monitor_ops rc_monitor_uffd_ops;
extern const struct rc_monitor_ops rc_monitor_none_ops;

struct rc_chunk {
	struct regcache_entry *base;
	size_t n;			/* entries at base */
	bool mapped;			/* an RC_HUGE_CHUNK mapping, else malloc */
};

struct regcache {
	struct rc_brlock lock;
	uint64_t id;			/* for per-thread hints */
	_Atomic uint64_t tree_seq;	/* bumped on every index change */
	_Atomic uint64_t xtree_seq;	/* the same for the exact index */
	/* bumped (release) after every removal from either index, from 1 */
	_Atomic uint64_t inval_seq;
	struct rc_itree tree;
	/*
	 * Exact entries (REGCACHE_GET_EXACT) live in a tree of their own: the
	 * hit path, merging and growth of ordinary gets never see them, so
	 * they can neither serve nor widen anything but their own range.
	 */
	struct rc_itree xtree;
	struct rc_list lru;		/* head: most recently (re)considered */
	struct rc_list pending;		/* being registered, not in the index yet */
	size_t entries;			/* in the index */
	size_t bytes;			/* in the index */

	/* entry allocator: chunks sorted by address so a put can validate */
	pthread_mutex_t alloc_lock;
	struct rc_chunk *chunks;
	size_t nchunks, chunks_cap;
	struct rc_list free_list;	/* FIFO so a stale pointer stays FREE long */

	/* releases the monitor thread may not do itself (see monitor_uffd.c) */
	pthread_mutex_t defer_lock;
	struct rc_list deferred;
	_Atomic int ndeferred;
	/*
	 * Entries an invalidation queued whose dereg has not returned yet,
	 * whichever thread applied it (a get's drain, the uffd thread, a
	 * progress thread): regcache_process_events() waits for them, so a
	 * caller that saw a key die knows its registration is gone.
	 */
	_Atomic unsigned int inval_releasing;
	_Atomic unsigned int inval_waiters;	/* in rc_inval_wait() */
	pthread_mutex_t inval_lock;
	pthread_cond_t inval_cond;

	regcache_reg_fn reg;
	regcache_dereg_fn dereg;
	void *user;
	size_t max_entries, max_bytes, merge_max;
	uint32_t flags;
	bool print_stats;
	/* fork detection: *proc_gen == fork_gen in the creating process */
	const _Atomic uint64_t *proc_gen;
	uint64_t fork_gen;

	const struct rc_monitor_ops *mon;
	void *mon_priv;
	/*
	 * Hit-path shortcuts set by the monitor's start, so that a hit makes
	 * no call into the monitor: where ->sync may have work (uffd: its
	 * 'pending' word; kmod: the status header's event count and flags;
	 * neither: ->sync is always called), and whether every indexed entry
	 * is valid (uffd drops entries from the index itself).
	 */
	const _Atomic int *mon_sync_word;
	const volatile struct regcache_status *mon_status;
	bool mon_valid_always;
	/* the largest range a get may look up (0: every get is uncached) */
	size_t fast_max;

	/*
	 * Write lock: the invalidation a monitor is applying left the
	 * memory mapped (a zap, COW or THP split, migration; uffd: REMOVE):
	 * held exact entries then keep their registrations until their
	 * puts, as other entries do.  false (the default, and whenever the
	 * monitor cannot tell): the memory was unmapped or remapped, and a
	 * held exact entry is revoked (rc_drop_collected()).
	 */
	bool inval_soft;

	/* counters (relaxed atomics; hits live in the entries) */
	_Atomic uint64_t retired_hits;
	_Atomic uint64_t misses, merges, evictions, invalidations, uncached;
	_Atomic uint64_t registrations, deregistrations, reg_ns, dereg_ns;
	_Atomic uint64_t reg_retries, exact, uffd_foreign, uffd_shared;
};

/*
 * Is this cache from another process?  *proc_gen is the generation of the
 * process, a word on a MADV_WIPEONFORK page: any child that does not share
 * the address space (fork, vfork-less clone, a raw clone syscall that runs
 * no pthread_atfork handler) reads 0 there, and the child's first
 * regcache_create sets a new non-zero value.  One load from a line that is
 * written once per process, next to the cache fields the hit path reads.
 */
static inline bool rc_forked(const struct regcache *cache)
{
	return atomic_load_explicit(cache->proc_gen, memory_order_relaxed) !=
	       cache->fork_gen;
}

/*
 * The monitor's validity check of an indexed entry, inlined for the hit
 * path: for kmod one acquire load of the entry's status word (the module
 * changes it before the unmapping call returns), for uffd nothing.
 */
static inline bool rc_mon_valid(const struct regcache *cache,
				const struct regcache_entry *e)
{
	if (e->slot_ptr)
		return __atomic_load_n(e->slot_ptr, __ATOMIC_ACQUIRE) ==
		       e->slot_word;
	if (cache->mon_valid_always)
		return true;
	return cache->mon->valid(cache, e);
}

/* The same where it needs no call; false (ask the long way) otherwise. */
static inline bool rc_mon_valid_nocall(const struct regcache *cache,
				       const struct regcache_entry *e)
{
	if (e->slot_ptr)
		return __atomic_load_n(e->slot_ptr, __ATOMIC_ACQUIRE) ==
		       e->slot_word;
	return cache->mon_valid_always;
}

/*
 * Has the monitor nothing to do before a lookup may be trusted?  The very
 * tests uffd_sync() and kmod_sync() start with, with the same orderings.
 */
static inline bool rc_mon_idle(const struct regcache *cache)
{
	const volatile struct regcache_status *st = cache->mon_status;

	if (cache->mon_sync_word)
		return !atomic_load(cache->mon_sync_word);
	if (st)
		return !__atomic_load_n(&st->events_pending, __ATOMIC_RELAXED) &&
		       !(__atomic_load_n(&st->flags, __ATOMIC_RELAXED) &
			 REGCACHE_STATUS_OVERFLOW);
	return !cache->mon->sync;
}

/* Before a lookup: let the monitor catch up, if it may have to. */
static inline void rc_mon_sync(struct regcache *cache)
{
	if (__builtin_expect(!rc_mon_idle(cache), 0))
		cache->mon->sync(cache);
}

/* The index an entry lives in. */
static inline struct rc_itree *rc_entry_tree(struct regcache *cache,
					     const struct regcache_entry *e)
{
	return e->exact ? &cache->xtree : &cache->tree;
}

static inline struct regcache_entry *rc_node_entry(struct rc_itree_node *n)
{
	return (struct regcache_entry *)((char *)n -
					 offsetof(struct regcache_entry, node));
}

/* List helpers. */
static inline void rc_list_init(struct rc_list *h)
{
	h->prev = h->next = h;
}

static inline bool rc_list_empty(const struct rc_list *h)
{
	return h->next == h;
}

static inline void rc_list_add(struct rc_list *h, struct rc_list *n)
{
	n->next = h->next;
	n->prev = h;
	h->next->prev = n;
	h->next = n;
}

static inline void rc_list_add_tail(struct rc_list *h, struct rc_list *n)
{
	rc_list_add(h->prev, n);
}

static inline void rc_list_del(struct rc_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

#define rc_list_entry(ptr, member) \
	((struct regcache_entry *)((char *)(ptr) - offsetof(struct regcache_entry, member)))

/* entry.c: the releases the uffd thread deferred, run by the next call
 * of an application thread */
void rc_run_deferred_slow(struct regcache *cache) __attribute__((cold));

static inline void rc_run_deferred(struct regcache *cache)
{
	if (__builtin_expect(atomic_load_explicit(&cache->ndeferred,
						  memory_order_relaxed), 0))
		rc_run_deferred_slow(cache);
}

/* Drop one reference of 'bias'; queue the entry if it was the last. */
static inline void rc_entry_unref(struct regcache_entry *e, uint64_t bias,
				  struct rc_list *release)
{
	if (atomic_fetch_sub(&e->refs, bias) == bias)
		rc_list_add_tail(release, &e->link);
}

/*
 * Core services for monitors, called with the write lock held.
 * rc_invalidate_range drops every indexed entry overlapping [start, end)
 * and marks overlapping pending ones stale; entries whose last reference
 * goes are queued on 'release' (released by the caller after unlocking).
 * Returns how many entries were dropped.
 */
int rc_invalidate_range(struct regcache *cache, uintptr_t start, uintptr_t end,
			struct rc_list *release);
/* Drop one indexed entry (the kmod event names exactly one). */
int rc_invalidate_entry(struct regcache *cache, struct regcache_entry *e,
			struct rc_list *release);
/* Drop the entries whose monitor->valid() is false (overflow recovery). */
int rc_invalidate_stale(struct regcache *cache, struct rc_list *release);
/* Release a list of entries (no lock held), or defer them to an app thread. */
void rc_release_list(struct regcache *cache, struct rc_list *release);
/* Wait until no release an invalidation queued is in flight (entry.c). */
void rc_inval_wait(struct regcache *cache);
void rc_defer_list(struct regcache *cache, struct rc_list *release);
/* Evict one unreferenced entry by CLOCK; false if none. */
bool rc_evict_one(struct regcache *cache, struct rc_list *release);

/* the page size, set by the first regcache_create() (regcache.c);
 * hidden, so the hit path reads it as it did a static */
extern size_t rc_page_size __attribute__((visibility("hidden")));

/* entry.c */
int rc_chunk_add(struct regcache *cache);
void rc_chunk_free(const struct rc_chunk *c);
/* a free slot, reset; locked: the caller holds the write lock */
struct regcache_entry *rc_entry_alloc(struct regcache *cache, bool locked);
void rc_entry_free(struct regcache *cache, struct regcache_entry *e);
/* the dereg callback of an entry no one holds any more, and its slot */
void rc_entry_release(struct regcache *cache, struct regcache_entry *e);
/* is e one of this cache's entry slots (the search under the read side) */
bool rc_entry_known_slow(struct regcache *cache,
			 const struct regcache_entry *e);

/* evict.c: the index's ins and outs, write lock held */
void rc_unsubscribe_locked(struct regcache *cache, struct regcache_entry *e);
void rc_remove_locked(struct regcache *cache, struct regcache_entry *e,
		      struct rc_list *release);
void rc_insert_locked(struct regcache *cache, struct regcache_entry *e);
/* entries of the index gathered by an rc_itree visit (rc_collect_fn),
 * then dropped (rc_drop_collected(): the count) */
struct rc_collect {
	struct rc_list list;
	const struct regcache *cache;
	bool only_stale;
};
int rc_collect_fn(struct rc_itree_node *n, void *arg);
int rc_drop_collected(struct regcache *cache, struct rc_collect *c,
		      struct rc_list *release);
/* no lock held: evict idle entries until need bytes are gone */
size_t rc_evict_bytes(struct regcache *cache, size_t need);

/* stats.c: what REGCACHE_STATS prints at destroy */
void rc_print_stats(struct regcache *cache);

/* Log one line to stderr, once per process for a given message. */
void rc_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

uint64_t rc_now_ns(void);

/* env.c */
struct rc_env {
	enum regcache_monitor_type monitor;
	bool monitor_set;
	size_t max_entries, max_bytes, merge_max;
	bool max_entries_set, max_bytes_set, merge_set;
	bool stats;
};
int rc_env_read(struct rc_env *env);
int rc_parse_size(const char *s, size_t *out);

#define RC_DEFAULT_MAX_ENTRIES	16384
#define RC_DEFAULT_MERGE_MAX	(256UL << 20)
size_t rc_default_max_bytes(bool pin);

#endif /* RC_REGCACHE_INT_H */
