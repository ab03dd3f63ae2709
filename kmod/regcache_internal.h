/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * regcache_internal.h - shared declarations of regcache.ko.
 *
 * One struct regcache_ctx per open() of /dev/regcache, bound to the
 * opener's mm and charged to the opener's user (regcache_user.c).  A
 * context owns a vmap'd status area (the page-aligned struct
 * regcache_status and its slot words, which the process maps read-only),
 * at the size CONFIGURE chose, an xarray of watched ranges indexed by
 * slot, and a preallocated event ring.
 *
 * Locking, outermost first:
 *   ctx->mutex      WATCH / UNWATCH / CONFIGURE / teardown; may sleep,
 *                   taken before mmap_lock (never the other way round:
 *                   ->mmap runs under mmap_lock and so never takes it)
 *   ctx->read_mutex one reader at a time (read(), FLUSH)
 *   ctx->lock       spinlock: slot words, range state, the ring and the
 *                   status header, which status area is installed and
 *                   its size.  The only lock the MMU notifier takes,
 *                   so an invalidation never sleeps and never waits for
 *                   anything that could sleep.
 *   regcache_users_lock  spinlock, innermost, never nested with ctx->lock
 *                   (regcache_user.c)
 */
#ifndef REGCACHE_INTERNAL_H
#define REGCACHE_INTERNAL_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/rbtree.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include "regcache_uapi.h"

/* configure refuses such a kernel already; a build without it says why */
#ifndef CONFIG_MMU_NOTIFIER
#error "regcache.ko needs a kernel built with CONFIG_MMU_NOTIFIER"
#endif

/* What GET_INFO reports in features. */
#define REGCACHE_FEATURES	(REGCACHE_FEATURE_UNWATCH_WORD | REGCACHE_FEATURE_WATCH_SAME)

/* Hard bounds of the module parameters and of CONFIGURE. */
#define REGCACHE_WATCHES_LIMIT	BIT(20)
#define REGCACHE_RING_LIMIT	BIT(20)
#define REGCACHE_USER_CONTEXTS_LIMIT	BIT(20)
#define REGCACHE_USER_WATCHES_LIMIT	BIT(30)

/* Module parameters (regcache_main.c); read with READ_ONCE. */
extern unsigned int regcache_max_watches;
extern unsigned int regcache_ring_entries;
extern unsigned long long regcache_max_pinned_bytes;
extern bool regcache_strict;
extern unsigned int regcache_max_user_contexts;
extern unsigned int regcache_max_user_watches;
extern unsigned long long regcache_max_user_bytes;

/*
 * What the per-user byte budget (max_user_bytes, regcache_user.c) is
 * charged: what each allocation really holds, rounded as the allocator
 * rounds it (kvmalloc: to a kmalloc bucket, or to pages when it fell
 * back to vmalloc).  The kernel's own bookkeeping of a vmap or vmalloc
 * mapping (a few hundred bytes and its page tables) is not counted.
 */
static inline u64 regcache_kv_bytes(const void *p, size_t size)
{
	return is_vmalloc_addr(p) ? PAGE_ALIGN(size) : kmalloc_size_roundup(size);
}

/* Module-wide counters, shown in sysfs. */
struct regcache_global_stats {
	atomic_t contexts;
	atomic64_t watches;
	atomic64_t events_total;
	atomic64_t overflows;
	atomic64_t foreign_mm;	/* calls refused with -EIO */
};

extern struct regcache_global_stats regcache_stats;

/* A fixed-capacity ring of events; every field under ctx->lock. */
struct regcache_ring {
	struct regcache_event *ev;
	u32 entries;
	u32 head;		/* oldest queued record */
	u32 count;		/* records queued; seq grows from head on */
};

int regcache_ring_alloc(struct regcache_ring *ring, u32 entries);
u64 regcache_ring_bytes(const struct regcache_ring *ring);
void regcache_ring_free(struct regcache_ring *ring);
bool regcache_ring_push(struct regcache_ring *ring, const struct regcache_event *ev);
bool regcache_ring_peek(const struct regcache_ring *ring, struct regcache_event *ev);
void regcache_ring_pop(struct regcache_ring *ring);

enum regcache_range_state {
	REGCACHE_RANGE_ACTIVE = 1,	/* the slot word has REGCACHE_SLOT_ACTIVE */
	REGCACHE_RANGE_INVALIDATED,	/* event sent; waits for UNWATCH */
};

/* One watched range: a slot and the interval notifier over its pages. */
struct regcache_range {
	struct mmu_interval_notifier notifier;
	struct rb_node key_node;	/* ctx->watch_keys, under ctx->mutex */
	struct regcache_ctx *ctx;
	u64 addr;		/* as the caller gave it (maybe tagged) */
	u64 len;
	unsigned long start;	/* page-aligned notifier interval, untagged */
	unsigned long end;
	u64 cookie;
	u64 pinned_bytes;
	u64 word;		/* the slot word WATCH returned: UNWATCH checks it */
	u32 slot;
	u32 state;		/* enum regcache_range_state, under ctx->lock */
};

struct regcache_user;

struct regcache_ctx {
	struct mm_struct *mm;		/* mmgrab'd: identity, never used after exit */
	struct regcache_user *user;	/* at open: charged for it and its watches */
	u64 charged;			/* bytes charged to user; ctx->mutex, or open/release */
	u64 id;				/* unique per module load, for fdinfo */
	struct pid *pid;		/* the opener's thread group, for fdinfo */
	pid_t tgid;			/* the same, in the initial namespace: log lines */
	char comm[TASK_COMM_LEN];

	struct mutex mutex;		/* see "Locking" above */
	struct mutex read_mutex;	/* one reader */
	spinlock_t lock;		/* the notifier's lock */
	wait_queue_head_t wait;

	struct xarray ranges;		/* slot -> struct regcache_range */
	struct rb_root watch_keys;	/* ranges by WATCH's inputs, under ctx->mutex */
	/*
	 * The status area: allocated at open(), replaced only by a CONFIGURE
	 * that changes its page count (under ctx->mutex and ctx->lock), never
	 * once frozen.  Readers outside ctx->mutex (mmap, the fault handler,
	 * GET_INFO, fdinfo) take these fields under ctx->lock.
	 */
	struct regcache_status *status;	/* vmap of status_pages, status_size bytes */
	u64 *slots;			/* the slot words, right after *status */
	struct page **status_pages;
	unsigned int status_npages;
	size_t status_size;
	u32 max_watches;		/* slots[] entries */
	struct regcache_ring ring;
	bool frozen;			/* a WATCH succeeded or mmap happened: no CONFIGURE */
	bool strict;			/* every notifier event invalidates; fixed once frozen */
	bool warned_foreign;		/* logged a foreign-mm access already */

	/* Counters: updated under ctx->lock, read locklessly for sysfs. */
	u32 nr_watches;
	u32 status_flags;
	u64 pinned_bytes;
	u64 events_total;		/* also the seq of the newest event */
	u64 overflow_seq;		/* seq of the newest dropped event */
	u64 overflows;
	u64 watch_calls;
	u64 unwatch_calls;
};

/* regcache_ctx.c */
extern const struct file_operations regcache_fops;
int regcache_ctx_charge(struct regcache_ctx *ctx, u64 bytes);
void regcache_ctx_uncharge(struct regcache_ctx *ctx, u64 bytes);

/* regcache_user.c */
struct regcache_user *regcache_user_get(void);
void regcache_user_put(struct regcache_user *u);
int regcache_user_charge_watch(struct regcache_user *u);
void regcache_user_uncharge_watch(struct regcache_user *u);
int regcache_user_charge_bytes(struct regcache_user *u, u64 bytes);
void regcache_user_uncharge_bytes(struct regcache_user *u, u64 bytes);
int regcache_user_charge_pinned(struct regcache_user *u, u64 bytes);
void regcache_user_uncharge_pinned(struct regcache_user *u, u64 bytes);
void regcache_user_show(struct seq_file *m, struct regcache_user *u);
u64 regcache_users_pinned_bytes(void);
void regcache_users_exit(void);

/* regcache_watch.c */
int regcache_watch(struct regcache_ctx *ctx, struct regcache_watch *w, bool *fresh);
int regcache_unwatch(struct regcache_ctx *ctx, u32 slot, u64 cookie, u64 word);
void regcache_unwatch_all(struct regcache_ctx *ctx);
u32 regcache_reason_of(int event);
bool regcache_reason_invalidates(u32 reason);

/* regcache_events.c */
void regcache_ctx_queue_event(struct regcache_ctx *ctx, struct regcache_event *ev);
int regcache_ctx_flush_events(struct regcache_ctx *ctx, u64 events_seen);
void regcache_status_sync(struct regcache_ctx *ctx);

/* regcache_main.c */
extern const struct attribute_group *regcache_attr_groups[];

#endif /* REGCACHE_INTERNAL_H */
