// SPDX-License-Identifier: GPL-2.0-only
/*
 * regcache_watch.c - watched ranges: slots, filtering, and their interval
 * notifiers.
 *
 * Each WATCH gets a slot (the lowest free index of the context's xarray)
 * and an mmu_interval_notifier over the page-aligned range.  Its
 * invalidate callback is the heart of the module: it decides
 * from the event type whether the pages under the range can have changed,
 * and if so it rewrites the slot word (inactive, generation + 1) under a
 * spinlock before returning.  The kernel calls it before it changes the
 * page tables, so by the time munmap() or madvise() returns to userspace
 * the slot word already says "changed": there is no deferred work and no
 * trylock, hence no window in which a cache would trust a stale
 * registration.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/poll.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include "regcache_internal.h"

/* Map a notifier event to the reason reported to userspace. */
u32 regcache_reason_of(int event)
{
	switch (event) {
	case MMU_NOTIFY_UNMAP:
		return REGCACHE_REASON_UNMAP;
	case MMU_NOTIFY_CLEAR:
		return REGCACHE_REASON_CLEAR;
	case MMU_NOTIFY_MIGRATE:
		return REGCACHE_REASON_MIGRATE;
#ifdef HAVE_MMU_NOTIFY_EXCLUSIVE
	case MMU_NOTIFY_EXCLUSIVE:
		return REGCACHE_REASON_EXCLUSIVE;
#endif
	case MMU_NOTIFY_RELEASE:
		return REGCACHE_REASON_RELEASE;
	case MMU_NOTIFY_PROTECTION_VMA:
	case MMU_NOTIFY_PROTECTION_PAGE:
		return REGCACHE_REASON_PROTECTION;
	case MMU_NOTIFY_SOFT_DIRTY:
		return REGCACHE_REASON_SOFT_DIRTY;
	default:
		return REGCACHE_REASON_OTHER;
	}
}

/*
 * The filter of a non-strict context.  Protection changes (mprotect,
 * fork's write-protect of COW mappings, userfaultfd-wp, NUMA hinting) and
 * soft-dirty clears keep the same pages mapped at the same addresses: a
 * pinned registration stays correct, also a writable MR after
 * mprotect(PROT_READ) (the pinned pages still back the range; the device
 * is not bound by the CPU's page protection).  If a write later breaks
 * COW, the kernel replaces the page under a CLEAR event, which does
 * invalidate; so do the paths that look like protection changes but
 * change page tables: a partial mprotect of a PMD THP splits it (CLEAR),
 * and fork splits a pinned PMD THP and copies hugetlb COW mappings under
 * CLEAR.
 *
 * Any event this switch does not name - one a newer kernel adds - maps to
 * REGCACHE_REASON_OTHER in regcache_reason_of() and so invalidates: being
 * wrong in that direction costs a re-registration, not corruption.
 */
bool regcache_reason_invalidates(u32 reason)
{
	switch (reason) {
	case REGCACHE_REASON_PROTECTION:
	case REGCACHE_REASON_SOFT_DIRTY:
		return false;
	default:
		return true;
	}
}

/* ctx->strict is fixed while any range exists (CONFIGURE -EBUSY). */
static bool regcache_ctx_ignores(struct regcache_ctx *ctx, u32 reason)
{
	return !READ_ONCE(ctx->strict) && !regcache_reason_invalidates(reason);
}

/*
 * An invalidation over r that the context does not ignore: the slot word
 * goes inactive with the next generation, and an event is queued.  Only
 * the spinlock and no allocation: this runs unchanged whether or not
 * mmu_notifier_range_blockable(range), including from the OOM reaper, so
 * the callback never has to fail.
 */
static bool regcache_range_invalidate(struct mmu_interval_notifier *mni,
				      const struct mmu_notifier_range *range,
				      unsigned long cur_seq)
{
	struct regcache_range *r = container_of(mni, struct regcache_range, notifier);
	struct regcache_ctx *ctx = r->ctx;
	u32 reason = regcache_reason_of(range->event);
	struct regcache_event ev;
	bool queued = false;
	u64 word;

	if (regcache_ctx_ignores(ctx, reason))
		return true;

	spin_lock(&ctx->lock);
	mmu_interval_set_seq(mni, cur_seq);
	if (r->state == REGCACHE_RANGE_ACTIVE) {
		word = READ_ONCE(ctx->slots[r->slot]);
		word = ((word & REGCACHE_SLOT_GEN_MASK) + 1) & REGCACHE_SLOT_GEN_MASK;
		WRITE_ONCE(ctx->slots[r->slot], word);
		r->state = REGCACHE_RANGE_INVALIDATED;

		ev.cookie = r->cookie;
		ev.addr = r->addr;
		ev.len = r->len;
		ev.inval_addr = max_t(u64, range->start, r->start);
		ev.inval_len = min_t(u64, range->end, r->end) - ev.inval_addr;
		ev.slot_word = word;
		ev.slot = r->slot;
		ev.reason = reason;
		regcache_ctx_queue_event(ctx, &ev);
		queued = true;
	}
	spin_unlock(&ctx->lock);

	if (queued)
		wake_up_interruptible_poll(&ctx->wait, EPOLLIN | EPOLLRDNORM);
	return true;
}

static const struct mmu_interval_notifier_ops regcache_range_ops = {
	.invalidate = regcache_range_invalidate,
};

/*
 * An insert racing an invalidation already in progress is deferred and
 * does not see that invalidation's callback.  read_begin waits for it to
 * finish; regcache_watch()'s mapping check then fails if it was an unmap.
 * (A zap of pages the caller pinned *before* WATCH cannot be seen by
 * anyone: WATCH first, then register, is the documented order.)
 *
 * Why no mmu_interval_read_retry() loop, unlike the HMM pattern: the
 * sequence only says "an invalidation overlapped", and we establish
 * nothing that such an invalidation could make stale.  The slot was armed
 * before the insert, so every invalidation that starts after the insert
 * runs our callback and flips the word itself; the one that was in
 * progress is waited for here.  A retry could only repeat the same checks.
 *
 * The cost: read_begin (and mmu_interval_notifier_remove) wait for the
 * mm-wide invalidate sequence, which any munmap anywhere in the process
 * holds open.  (A design with one mmu_notifier per context and a private
 * interval tree, which waits only for overlapping invalidations, was
 * measured against this one and removed: it cost every munmap of the
 * process more and won nothing beyond the noise; doc/BENCHMARKS.md.)
 */
static int regcache_range_arm(struct regcache_ctx *ctx, struct regcache_range *r)
{
	int ret;

	ret = mmu_interval_notifier_insert(&r->notifier, ctx->mm, r->start,
					   r->end - r->start, &regcache_range_ops);
	if (ret)
		return ret;
	(void)mmu_interval_read_begin(&r->notifier);
	return 0;
}

/* Is every byte of [start, end) inside some VMA?  Caller holds mmap_lock. */
static bool regcache_range_mapped(struct mm_struct *mm, unsigned long start,
				  unsigned long end)
{
	unsigned long addr = start;
	struct vm_area_struct *vma;

	while (addr < end) {
		vma = find_vma(mm, addr);
		if (!vma || vma->vm_start > addr)
			return false;
		addr = vma->vm_end;
	}
	return true;
}

/* Give a slot back: the generation grows so old words never match again. */
static void regcache_slot_release(struct regcache_ctx *ctx, u32 slot)
{
	u64 word;

	spin_lock(&ctx->lock);
	word = READ_ONCE(ctx->slots[slot]);
	word = ((word & REGCACHE_SLOT_GEN_MASK) + 1) & REGCACHE_SLOT_GEN_MASK;
	WRITE_ONCE(ctx->slots[slot], word);
	spin_unlock(&ctx->lock);
	xa_erase(&ctx->ranges, slot);
}

static int regcache_watch_check(const struct regcache_watch *w, unsigned long addr)
{
	if (w->flags || w->reserved[0] || w->reserved[1])
		return -EINVAL;
	if (!w->len || w->pinned_bytes > w->len)
		return -EINVAL;
	/* Rejects kernel addresses and addr + len wrapping in one go. */
	if (w->len > TASK_SIZE || addr > TASK_SIZE - w->len)
		return -EINVAL;
	return 0;
}

/*
 * The context's live watches by what WATCH was given, so that an
 * identical WATCH finds the existing watch (kdreg2 does the same).  The
 * order is any total order of (addr, len, cookie, pinned_bytes); a watch
 * stays in the tree until it is released, also once invalidated, so
 * equal keys may repeat (one invalidated, a newer one active).  Under
 * ctx->mutex.
 */
static int regcache_key_cmp(const struct regcache_watch *w, const struct regcache_range *r)
{
	if (w->addr != r->addr)
		return w->addr < r->addr ? -1 : 1;
	if (w->len != r->len)
		return w->len < r->len ? -1 : 1;
	if (w->cookie != r->cookie)
		return w->cookie < r->cookie ? -1 : 1;
	if (w->pinned_bytes != r->pinned_bytes)
		return w->pinned_bytes < r->pinned_bytes ? -1 : 1;
	return 0;
}

static void regcache_key_insert(struct regcache_ctx *ctx, struct regcache_range *r)
{
	struct rb_node **link = &ctx->watch_keys.rb_node, *parent = NULL;
	const struct regcache_watch key = {
		.addr = r->addr, .len = r->len, .cookie = r->cookie,
		.pinned_bytes = r->pinned_bytes,
	};

	while (*link) {
		parent = *link;
		/* equal keys go right: the newest is found last */
		if (regcache_key_cmp(&key, rb_entry(parent, struct regcache_range, key_node)) < 0)
			link = &parent->rb_left;
		else
			link = &parent->rb_right;
	}
	rb_link_node(&r->key_node, parent, link);
	rb_insert_color(&r->key_node, &ctx->watch_keys);
}

/* A live, not invalidated watch with exactly w's inputs, or NULL. */
static struct regcache_range *regcache_key_find_active(struct regcache_ctx *ctx,
						       const struct regcache_watch *w)
{
	struct rb_node *n = ctx->watch_keys.rb_node, *first = NULL;
	struct regcache_range *r;
	bool active;
	int c;

	/* the leftmost equal key */
	while (n) {
		c = regcache_key_cmp(w, rb_entry(n, struct regcache_range, key_node));
		if (c <= 0) {
			if (!c)
				first = n;
			n = n->rb_left;
		} else {
			n = n->rb_right;
		}
	}
	for (n = first; n; n = rb_next(n)) {
		r = rb_entry(n, struct regcache_range, key_node);
		if (regcache_key_cmp(w, r))
			break;
		spin_lock(&ctx->lock);
		active = r->state == REGCACHE_RANGE_ACTIVE;
		spin_unlock(&ctx->lock);
		if (active)
			return r;
	}
	return NULL;
}

/*
 * What a watch holds, as its user's byte budget is charged: the range and
 * its interval notifier, and its share of the xarray's nodes (slots are
 * taken lowest first, so the leaves are full: one node per XA_CHUNK_SIZE
 * slots).
 */
#define REGCACHE_WATCH_BYTES \
	(kmalloc_size_roundup(sizeof(struct regcache_range)) + \
	 DIV_ROUND_UP(sizeof(struct xa_node), XA_CHUNK_SIZE))

/*
 * WATCH one range; *fresh says whether it made a new watch or returned
 * an identical live one.  Caller holds ctx->mutex and runs in ctx->mm
 * (regcache_ioctl checked it): the mm has users for as long as the
 * caller runs, so its mmap_lock is taken without mmget(), which would
 * only pin what the caller pins already (the context's mmgrab() keeps
 * the struct, not the address space).  The first interval notifier of
 * an mm subscribes it (mmu_notifier_register, mmap_lock for writing,
 * not killable: the kernel's API).
 *
 * User addresses may carry a tag (arm64 TBI, x86 LAM): the notifier
 * interval and the mapping check use the untagged address; events and
 * the identical-WATCH match report and compare what the caller gave.
 */
int regcache_watch(struct regcache_ctx *ctx, struct regcache_watch *w, bool *fresh)
{
	unsigned long addr = untagged_addr(w->addr), start, end;
	unsigned long long cap;
	struct regcache_range *r;
	u32 slot;
	u64 word;
	int ret;

	ret = regcache_watch_check(w, addr);
	if (ret)
		return ret;
	start = addr & PAGE_MASK;
	end = PAGE_ALIGN(addr + w->len);

	/* An identical WATCH gets the existing watch: no second slot. */
	*fresh = false;
	r = regcache_key_find_active(ctx, w);
	if (r) {
		spin_lock(&ctx->lock);
		ctx->watch_calls++;
		spin_unlock(&ctx->lock);
		w->slot = r->slot;
		w->slot_word = r->word;
		return 0;
	}

	/* Both at most S64_MAX (regcache_user_charge_pinned): no wrap. */
	cap = READ_ONCE(regcache_max_pinned_bytes);
	if (cap && ctx->pinned_bytes + w->pinned_bytes > cap)
		return -ENOSPC;
	ret = regcache_user_charge_watch(ctx->user);
	if (ret)
		return ret;
	ret = regcache_user_charge_pinned(ctx->user, w->pinned_bytes);
	if (ret)
		goto uncharge_watch;
	ret = regcache_ctx_charge(ctx, REGCACHE_WATCH_BYTES);
	if (ret)
		goto uncharge_pinned;

	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r) {
		ret = -ENOMEM;
		goto uncharge_bytes;
	}
	r->ctx = ctx;
	r->addr = w->addr;
	r->len = w->len;
	r->start = start;
	r->end = end;
	r->cookie = w->cookie;
	r->pinned_bytes = w->pinned_bytes;

	ret = xa_alloc(&ctx->ranges, &slot, r, XA_LIMIT(0, ctx->max_watches - 1),
		       GFP_KERNEL_ACCOUNT);
	if (ret) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto free_range;
	}
	r->slot = slot;

	/*
	 * Active before the notifier exists: every callback finds it armed.
	 * The context freezes only when the WATCH succeeds, so a failed one
	 * leaves CONFIGURE open (no range exists to see a change of ring or
	 * strictness; ctx->mutex keeps CONFIGURE out meanwhile).
	 */
	spin_lock(&ctx->lock);
	word = READ_ONCE(ctx->slots[slot]);
	word = (word & REGCACHE_SLOT_GEN_MASK) | REGCACHE_SLOT_ACTIVE;
	WRITE_ONCE(ctx->slots[slot], word);
	r->word = word;
	r->state = REGCACHE_RANGE_ACTIVE;
	spin_unlock(&ctx->lock);

	ret = regcache_range_arm(ctx, r);
	if (ret)
		goto release_slot;

	/* Killable: a writer of mmap_lock may keep this waiting. */
	ret = mmap_read_lock_killable(ctx->mm);
	if (ret)
		goto disarm;
	/* As mlock(2) and madvise(2) say it; -EFAULT is for bad pointers. */
	ret = regcache_range_mapped(ctx->mm, start, end) ? 0 : -ENOMEM;
	mmap_read_unlock(ctx->mm);
	if (ret)
		goto disarm;

	regcache_key_insert(ctx, r);
	spin_lock(&ctx->lock);
	ctx->frozen = true;
	ctx->nr_watches++;
	ctx->pinned_bytes += w->pinned_bytes;
	ctx->watch_calls++;
	spin_unlock(&ctx->lock);
	atomic64_inc(&regcache_stats.watches);

	w->slot = slot;
	w->slot_word = word;
	*fresh = true;
	return 0;

disarm:
	/* Sleeps until a running callback for this range has returned. */
	mmu_interval_notifier_remove(&r->notifier);
release_slot:
	regcache_slot_release(ctx, slot);
free_range:
	kfree(r);
uncharge_bytes:
	regcache_ctx_uncharge(ctx, REGCACHE_WATCH_BYTES);
uncharge_pinned:
	regcache_user_uncharge_pinned(ctx->user, w->pinned_bytes);
uncharge_watch:
	regcache_user_uncharge_watch(ctx->user);
	return ret;
}

/* Tear one range down.  Caller holds ctx->mutex (or is the last user). */
static void regcache_range_destroy(struct regcache_ctx *ctx, struct regcache_range *r)
{
	/*
	 * Sleeps, uninterruptibly (the kernel's API), until no invalidation
	 * of the mm is running: then no callback can reach r.
	 */
	mmu_interval_notifier_remove(&r->notifier);
	rb_erase(&r->key_node, &ctx->watch_keys);

	spin_lock(&ctx->lock);
	ctx->nr_watches--;
	ctx->pinned_bytes -= r->pinned_bytes;
	ctx->unwatch_calls++;
	spin_unlock(&ctx->lock);
	atomic64_dec(&regcache_stats.watches);

	regcache_slot_release(ctx, r->slot);
	regcache_ctx_uncharge(ctx, REGCACHE_WATCH_BYTES);
	regcache_user_uncharge_pinned(ctx->user, r->pinned_bytes);
	regcache_user_uncharge_watch(ctx->user);
	kfree(r);
}

/*
 * UNWATCH.  slot and cookie must match; so must word, the slot word
 * WATCH returned, unless it is 0 (ABI 2 callers): a stale UNWATCH of a
 * watch already released then fails, even when its slot was reused by a
 * newer watch with the same cookie (each watch of a slot has its own
 * generation).
 */
int regcache_unwatch(struct regcache_ctx *ctx, u32 slot, u64 cookie, u64 word)
{
	struct regcache_range *r;

	if (slot >= ctx->max_watches)
		return -ENOENT;
	r = xa_load(&ctx->ranges, slot);
	if (!r || r->cookie != cookie || (word && word != r->word))
		return -ENOENT;
	regcache_range_destroy(ctx, r);
	return 0;
}

void regcache_unwatch_all(struct regcache_ctx *ctx)
{
	struct regcache_range *r;
	unsigned long index;

	xa_for_each(&ctx->ranges, index, r) {
		regcache_range_destroy(ctx, r);
		cond_resched();
	}
}
