// SPDX-License-Identifier: GPL-2.0-only
/*
 * regcache_ctxnotif.c - the per-context notifier design (notifier=context).
 *
 * One mmu_notifier per context, registered at the context's first WATCH,
 * and a private interval tree of its ranges under ctx->lock, instead of
 * one mmu_interval_notifier per WATCH in the mm-wide tree.  What changes
 * is what WATCH and UNWATCH wait for:
 *
 *  - UNWATCH takes the node out of the tree under ctx->lock and is done:
 *    callbacks only touch a range under that lock.  The interval design's
 *    mmu_interval_notifier_remove() waits until no invalidation is running
 *    anywhere in the mm, which unrelated munmaps in other threads can
 *    hold off for a long time.
 *  - WATCH waits only for invalidations in progress that overlap the new
 *    range (the interval design waits for all of them), so that when it
 *    returns, an unmap or zap that started before the range was in the
 *    tree has finished and the mapping check sees its result.
 *
 * The callback runs before the page tables change (invalidate_range_start),
 * bumps the slot word and queues the event under the spinlock before it
 * returns - regcache_range_fire(), shared with the interval design - so
 * the slot word says "changed" by the time munmap() returns: no deferred
 * work, no trylock.  It never sleeps, so it does the same work whether or
 * not mmu_notifier_range_blockable(range) and never fails.
 *
 * In-progress invalidations are tracked in a small fixed table keyed by
 * the range pointer the kernel passes to both start and end (no
 * allocation in a callback).  When the table is full the excess is only
 * counted, and a WATCH then waits for that count to drop to zero.  An end
 * without a start (the kernel calls every end when another notifier's
 * non-blockable start fails, only on the OOM reaper's path) finds no entry
 * and takes one from that count if it has any: a dying process's WATCH
 * may then stop waiting early, never wait forever.
 *
 * Teardown, in order: release() disarms every range (UNWATCH_ALL), then
 * mmu_notifier_unregister() removes the notifier and waits (SRCU) for
 * running callbacks, then the tree's owner is freed.  If the mm exits
 * first, ->release fires every active range with REGCACHE_REASON_RELEASE,
 * as the kernel does for interval notifiers, and unregister later only
 * synchronises.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/interval_tree.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include "regcache_internal.h"

#define REGCACHE_INFLIGHT_SLOTS	16

struct regcache_inflight {
	const struct mmu_notifier_range *key;	/* NULL: free */
	unsigned long start;
	unsigned long end;
};

struct regcache_ctxnotif {
	struct mmu_notifier mn;
	struct regcache_ctx *ctx;
	/* Under ctx->lock: */
	struct rb_root_cached tree;	/* struct regcache_range.node */
	struct regcache_inflight inflight[REGCACHE_INFLIGHT_SLOTS];
	unsigned int untracked;		/* in progress, not in inflight[] */
	wait_queue_head_t settle;	/* WATCH waiting for inflight[] to drain */
};

static void regcache_inflight_add(struct regcache_ctxnotif *cn,
				  const struct mmu_notifier_range *range)
{
	int i;

	for (i = 0; i < REGCACHE_INFLIGHT_SLOTS; i++) {
		if (!cn->inflight[i].key) {
			cn->inflight[i].key = range;
			cn->inflight[i].start = range->start;
			cn->inflight[i].end = range->end;
			return;
		}
	}
	cn->untracked++;
}

static void regcache_inflight_del(struct regcache_ctxnotif *cn,
				  const struct mmu_notifier_range *range)
{
	int i;

	for (i = 0; i < REGCACHE_INFLIGHT_SLOTS; i++) {
		if (cn->inflight[i].key == range) {
			cn->inflight[i].key = NULL;
			return;
		}
	}
	if (cn->untracked)
		cn->untracked--;
}

/* Does an invalidation in progress overlap [start, end)? */
static bool regcache_inflight_overlaps(struct regcache_ctxnotif *cn,
				       unsigned long start, unsigned long end)
{
	int i;

	if (cn->untracked)
		return true;
	for (i = 0; i < REGCACHE_INFLIGHT_SLOTS; i++)
		if (cn->inflight[i].key && cn->inflight[i].start < end &&
		    start < cn->inflight[i].end)
			return true;
	return false;
}

/* Fire every range of the tree over [range->start, range->end).  ctx->lock held. */
static bool regcache_ctxnotif_fire(struct regcache_ctxnotif *cn,
				   const struct mmu_notifier_range *range, u32 reason)
{
	struct interval_tree_node *node;
	bool queued = false;

	for (node = interval_tree_iter_first(&cn->tree, range->start, range->end - 1);
	     node; node = interval_tree_iter_next(node, range->start, range->end - 1))
		queued |= regcache_range_fire(container_of(node, struct regcache_range, node),
					      range, reason);
	return queued;
}

/*
 * Every invalidation of the mm comes here, whatever it covers: an empty or
 * far-away tree costs one spinlock and one tree descent.  Ignored events
 * (protection changes of a non-strict context) are tracked in flight like
 * the others, so that start and end always agree on what they counted.
 */
static int regcache_ctxnotif_start(struct mmu_notifier *mn,
				   const struct mmu_notifier_range *range)
{
	struct regcache_ctxnotif *cn = container_of(mn, struct regcache_ctxnotif, mn);
	struct regcache_ctx *ctx = cn->ctx;
	u32 reason = regcache_reason_of(range->event);
	bool queued = false;

	spin_lock(&ctx->lock);
	regcache_inflight_add(cn, range);
	if (!regcache_ctx_ignores(ctx, reason))
		queued = regcache_ctxnotif_fire(cn, range, reason);
	spin_unlock(&ctx->lock);

	if (queued)
		wake_up_interruptible_poll(&ctx->wait, EPOLLIN | EPOLLRDNORM);
	return 0;
}

static void regcache_ctxnotif_end(struct mmu_notifier *mn,
				  const struct mmu_notifier_range *range)
{
	struct regcache_ctxnotif *cn = container_of(mn, struct regcache_ctxnotif, mn);
	struct regcache_ctx *ctx = cn->ctx;

	spin_lock(&ctx->lock);
	regcache_inflight_del(cn, range);
	spin_unlock(&ctx->lock);
	/* pairs with the barrier in wait_event()'s prepare_to_wait */
	if (wq_has_sleeper(&cn->settle))
		wake_up_all(&cn->settle);
}

/*
 * The mm is going away (exit_mmap), or unregister() found it still alive
 * (then the tree is empty: release() disarmed everything first).  As
 * the kernel does for interval notifiers, every active range is
 * invalidated with MMU_NOTIFY_RELEASE over the whole address space.
 */
static void regcache_ctxnotif_release(struct mmu_notifier *mn, struct mm_struct *mm)
{
	struct regcache_ctxnotif *cn = container_of(mn, struct regcache_ctxnotif, mn);
	struct regcache_ctx *ctx = cn->ctx;
	struct mmu_notifier_range range = {
		.mm = mm,
		.start = 0,
		.end = ULONG_MAX,
		.event = MMU_NOTIFY_RELEASE,
	};
	bool queued;

	spin_lock(&ctx->lock);
	queued = regcache_ctxnotif_fire(cn, &range, REGCACHE_REASON_RELEASE);
	spin_unlock(&ctx->lock);
	if (queued)
		wake_up_interruptible_poll(&ctx->wait, EPOLLIN | EPOLLRDNORM);
}

static const struct mmu_notifier_ops regcache_ctxnotif_mn_ops = {
	.release		= regcache_ctxnotif_release,
	.invalidate_range_start	= regcache_ctxnotif_start,
	.invalidate_range_end	= regcache_ctxnotif_end,
};

/*
 * Register the context's notifier.  Caller holds ctx->mutex (taken before
 * mmap_lock, which mmu_notifier_register() takes for writing) and runs in
 * ctx->mm, so the mm has users.
 */
static int regcache_ctxnotif_register(struct regcache_ctx *ctx)
{
	struct regcache_ctxnotif *cn;
	int ret;

	cn = kzalloc(sizeof(*cn), GFP_KERNEL_ACCOUNT);
	if (!cn)
		return -ENOMEM;
	cn->ctx = ctx;
	cn->tree = RB_ROOT_CACHED;
	init_waitqueue_head(&cn->settle);
	cn->mn.ops = &regcache_ctxnotif_mn_ops;
	ret = mmu_notifier_register(&cn->mn, ctx->mm);
	if (ret) {
		kfree(cn);
		return ret;
	}
	ctx->cn = cn;
	return 0;
}

/* Has r been invalidated, or has every overlapping invalidation that was running ended? */
static bool regcache_ctxnotif_settled(struct regcache_ctxnotif *cn, struct regcache_range *r)
{
	struct regcache_ctx *ctx = cn->ctx;
	bool settled;

	spin_lock(&ctx->lock);
	settled = r->state != REGCACHE_RANGE_ACTIVE ||
		  !regcache_inflight_overlaps(cn, r->start, r->end);
	spin_unlock(&ctx->lock);
	return settled;
}

/* Out of the tree under the lock every callback holds: done, no waiting. */
static void regcache_ctxnotif_disarm(struct regcache_ctx *ctx, struct regcache_range *r)
{
	spin_lock(&ctx->lock);
	interval_tree_remove(&r->node, &ctx->cn->tree);
	spin_unlock(&ctx->lock);
}

static int regcache_ctxnotif_arm(struct regcache_ctx *ctx, struct regcache_range *r)
{
	struct regcache_ctxnotif *cn;
	int ret;

	if (!ctx->cn) {
		ret = regcache_ctxnotif_register(ctx);
		if (ret)
			return ret;
	}
	cn = ctx->cn;
	r->node.start = r->start;
	r->node.last = r->end - 1;

	/*
	 * From the insert on, every invalidation that starts finds r; one
	 * that started before is in inflight[] (start records it under the
	 * same lock it searches the tree under).  Wait for those, as the
	 * interval design's mmu_interval_read_begin() does, but only for
	 * those over r.
	 */
	spin_lock(&ctx->lock);
	interval_tree_insert(&r->node, &cn->tree);
	spin_unlock(&ctx->lock);
	if (wait_event_killable(cn->settle, regcache_ctxnotif_settled(cn, r))) {
		regcache_ctxnotif_disarm(ctx, r);
		return -EINTR;
	}
	return 0;
}

/* The fd's last close, every range disarmed: unregister, then free. */
static void regcache_ctxnotif_ctx_release(struct regcache_ctx *ctx)
{
	struct regcache_ctxnotif *cn = ctx->cn;

	if (!cn)
		return;
	WARN_ON_ONCE(!RB_EMPTY_ROOT(&cn->tree.rb_root));
	/* Waits for running callbacks; mm_count is held by ctx (mmgrab). */
	mmu_notifier_unregister(&cn->mn, ctx->mm);
	ctx->cn = NULL;
	kfree(cn);
}

const struct regcache_notif_ops regcache_ctxnotif_ops = {
	.name		= "context",
	.arm		= regcache_ctxnotif_arm,
	.disarm		= regcache_ctxnotif_disarm,
	.release	= regcache_ctxnotif_ctx_release,
};
