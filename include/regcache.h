/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * regcache.h - libregcache, a userspace registration cache.
 *
 * Registering memory with an RDMA device (or anything else that pins pages)
 * is slow; reusing a registration is only safe if the cache learns at once
 * when the memory under it is unmapped, remapped or freed.  libregcache
 * keeps registrations made through caller-supplied callbacks, finds one
 * that covers a request, merges neighbours, evicts by LRU, and drops
 * entries whose memory changed, as reported by a monitor: regcache.ko
 * (validity is one load of a slot word), userfaultfd, or none.
 *
 * Every call returns 0 or a negative errno and never sets errno, except the
 * accessors, which cannot fail.  See libregcache(7) and the section 3 pages.
 */
#ifndef REGCACHE_H
#define REGCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct regcache;
struct regcache_entry;

/*
 * Registration callbacks.  reg registers [addr, addr + len) with 'access'
 * (an opaque bit mask; a registration with a superset of the bits serves a
 * request) and hands back a handle; it returns 0 or -errno.  dereg undoes
 * it.  Both are called without cache locks held and may block.
 */
typedef int (*regcache_reg_fn)(void *user, void *addr, size_t len,
			       uint32_t access, void **handle);
typedef int (*regcache_dereg_fn)(void *user, void *handle);

enum regcache_monitor_type {
	REGCACHE_MONITOR_AUTO = 0,	/* kmod, else uffd, else none */
	REGCACHE_MONITOR_KMOD = 1,	/* regcache.ko */
	REGCACHE_MONITOR_UFFD = 2,	/* userfaultfd */
	REGCACHE_MONITOR_NONE = 3,	/* no caching: every get registers */
};

/* struct regcache_attr.flags */
#define REGCACHE_ATTR_NO_PIN	(1U << 0)	/* registrations do not pin (ODP) */
#define REGCACHE_ATTR_NO_ENV	(1U << 1)	/* ignore REGCACHE_* variables */

struct regcache_attr {
	regcache_reg_fn reg;		/* required */
	regcache_dereg_fn dereg;	/* required */
	void *user;			/* passed to the callbacks */
	enum regcache_monitor_type monitor;
	size_t max_entries;		/* 0: default (REGCACHE_MAX_ENTRIES) */
	size_t max_bytes;		/* 0: default (REGCACHE_MAX_BYTES) */
	size_t merge_max;		/* largest merged entry; 0: default */
	uint32_t flags;			/* REGCACHE_ATTR_* */
};

struct regcache_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t merges;		/* misses served by registering a union */
	uint64_t evictions;
	uint64_t invalidations;		/* entries dropped because memory changed */
	uint64_t uncached;		/* registrations too large to keep */
	uint64_t registrations;		/* calls to reg */
	uint64_t deregistrations;	/* calls to dereg */
	uint64_t entries;		/* entries now in the cache */
	uint64_t registered_bytes;	/* bytes now registered by the cache */
	uint64_t reg_ns;		/* time spent in reg */
	uint64_t dereg_ns;		/* time spent in dereg */
	/* LIBREGCACHE_1.2: a program built against 1.0/1.1 gets the fields
	 * above only (regcache_get_stats@LIBREGCACHE_1.0 fills no more) */
	/* registrations retried after reg failed with -ENOMEM/-EAGAIN
	 * (RLIMIT_MEMLOCK) and idle entries were evicted */
	uint64_t reg_retries;
	uint64_t exact;			/* exact-range entries registered */
	/* gets served uncached because the application's own userfaultfd
	 * watches the range (uffd monitor) */
	uint64_t uffd_foreign;
	/* gets served uncached because the range is a shared or file
	 * mapping whose changes userfaultfd cannot see (uffd monitor) */
	uint64_t uffd_shared;
};

/* Create a cache; *cachep is set on success. */
int regcache_create(const struct regcache_attr *attr, struct regcache **cachep);

/* Deregister everything and free the cache.  Entries still held are leaked
 * to their holders' registrations: put them first. */
void regcache_destroy(struct regcache *cache);

/*
 * Find or make a registration covering [addr, addr + len) with at least
 * 'access'.  The entry is referenced until regcache_put().  Returns 0, or
 * -EINVAL (bad arguments), -ESTALE (cache unusable after fork), or the
 * reg callback's error.
 */
int regcache_get(struct regcache *cache, void *addr, size_t len,
		 uint32_t access, struct regcache_entry **entryp);

/* regcache_get_flags() flags */
/*
 * The entry covers exactly the bytes [addr, addr + len) with exactly
 * 'access': reg is called with that range, not rounded to pages.  It
 * serves only a later exact get of the identical range, access and
 * REGCACHE_GET_NOKEEP flag; it is never merged, grown or used to serve
 * any other get, and ordinary gets never take it into a union.  For
 * memory a peer may reach: the registration (an rkey) grants nothing
 * beyond what the caller named.
 */
#define REGCACHE_GET_EXACT	(1U << 0)
/* With REGCACHE_GET_EXACT only: deregister at the last put instead of
 * keeping the registration for later hits. */
/*
 * An exact entry whose memory is unmapped or remapped while it is held is
 * deregistered when the invalidation is applied (a change that leaves the
 * mapping, as MADV_DONTNEED, only invalidates it) (by the next call into the
 * cache that applies the monitor's events: regcache_process_events(),
 * regcache_generation(), regcache_entry_valid(), a get or a put), not at
 * its last put: a peer's key must not outlive its memory.  Its holders keep
 * the entry until their puts; regcache_entry_handle() then returns NULL
 * and regcache_entry_valid() false.
 */
#define REGCACHE_GET_NOKEEP	(1U << 1)

/*
 * regcache_get() with flags (REGCACHE_GET_*; 0 is regcache_get()).
 * -EINVAL also for unknown flags and NOKEEP without EXACT.
 * (LIBREGCACHE_1.2)
 */
int regcache_get_flags(struct regcache *cache, void *addr, size_t len,
		       uint32_t access, unsigned int flags,
		       struct regcache_entry **entryp);

/* Drop a reference.  -EINVAL for an entry this cache does not hold. */
int regcache_put(struct regcache *cache, struct regcache_entry *entry);

/* Deregister every unreferenced entry; referenced ones go at their last put. */
int regcache_flush(struct regcache *cache);

int regcache_get_stats(struct regcache *cache, struct regcache_stats *stats);

/*
 * A file descriptor that becomes readable when invalidations are pending,
 * for event loops; then call regcache_process_events().  -ENOTSUP for a
 * monitor without one.
 */
int regcache_fd(struct regcache *cache);

/* Apply pending invalidations now; returns how many entries were dropped. */
int regcache_process_events(struct regcache *cache);

/* The monitor in use: "kmod", "uffd" or "none". */
const char *regcache_monitor_name(const struct regcache *cache);

/* Entry accessors.  addr/len: the range registered (for exact entries
 * the exact bytes asked for, else whole pages). */
void *regcache_entry_handle(const struct regcache_entry *entry);
void *regcache_entry_addr(const struct regcache_entry *entry);
size_t regcache_entry_len(const struct regcache_entry *entry);
uint32_t regcache_entry_access(const struct regcache_entry *entry);
/* false when the entry was registered uncached (over the limits, or the
 * "none" monitor); it is deregistered at its put. */
bool regcache_entry_cached(const struct regcache_entry *entry);
/*
 * Is a referenced entry still what a regcache_get() of its range would
 * return: cached, not invalidated since (the monitor's events applied
 * first)?  No reference is taken or dropped, no lock: a caller holding an
 * entry across reposts checks it with this instead of a put + get.  False
 * for uncached entries, a foreign or NULL entry, and after fork().
 */
bool regcache_entry_valid(struct regcache *cache,
			  const struct regcache_entry *entry);
/*
 * A number that changes whenever an entry of this cache may have stopped
 * being valid (the monitor's pending events applied first, as
 * regcache_entry_valid() does).  Taken before checking k held entries
 * with regcache_entry_valid(), an unchanged value later proves all k
 * still valid at once.  0 when it cannot tell (after fork(), no monitor):
 * then check each entry.  No lock, no atomic read-modify-write.
 */
uint64_t regcache_generation(struct regcache *cache);

#ifdef __cplusplus
}
#endif

#endif /* REGCACHE_H */
