// SPDX-License-Identifier: GPL-2.0-only
/*
 * regcache_events.c - the per-context event ring.
 *
 * The ring is allocated before the first WATCH, so the invalidate callback
 * never allocates: it copies one record into a free entry or, when the
 * ring is full, drops the record, counts it and raises
 * REGCACHE_STATUS_OVERFLOW.  Dropping is safe because the slot word is
 * updated before the event is queued; the ring is only a hint of which
 * slots to look at.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>
#include "regcache_internal.h"

int regcache_ring_alloc(struct regcache_ring *ring, u32 entries)
{
	ring->ev = kvcalloc(entries, sizeof(*ring->ev), GFP_KERNEL_ACCOUNT);
	if (!ring->ev)
		return -ENOMEM;
	ring->entries = entries;
	ring->head = 0;
	ring->count = 0;
	return 0;
}

/* What the ring holds, as the user's budget is charged (regcache_kv_bytes). */
u64 regcache_ring_bytes(const struct regcache_ring *ring)
{
	return regcache_kv_bytes(ring->ev, (size_t)ring->entries * sizeof(*ring->ev));
}

void regcache_ring_free(struct regcache_ring *ring)
{
	kvfree(ring->ev);
	ring->ev = NULL;
	ring->entries = 0;
	ring->count = 0;
}

bool regcache_ring_push(struct regcache_ring *ring, const struct regcache_event *ev)
{
	u32 tail;

	if (ring->count == ring->entries)
		return false;
	tail = ring->head + ring->count;
	if (tail >= ring->entries)
		tail -= ring->entries;
	ring->ev[tail] = *ev;
	ring->count++;
	return true;
}

bool regcache_ring_peek(const struct regcache_ring *ring, struct regcache_event *ev)
{
	if (!ring->count)
		return false;
	*ev = ring->ev[ring->head];
	return true;
}

void regcache_ring_pop(struct regcache_ring *ring)
{
	if (!ring->count)
		return;
	ring->count--;
	if (++ring->head == ring->entries)
		ring->head = 0;
}

/*
 * Mirror the counters into the mapped header.  Caller holds ctx->lock.
 * The barrier orders any slot word the caller wrote before the new
 * events_total (regcache_uapi.h: a reader that sees a count sees the
 * slot words of those events; FLUSH relies on it).
 */
void regcache_status_sync(struct regcache_ctx *ctx)
{
	struct regcache_status *st = ctx->status;

	/* slot words before the counts: pairs with the reader's acquire load of events_total */
	smp_wmb();
	WRITE_ONCE(st->flags, ctx->status_flags);
	WRITE_ONCE(st->ring_entries, ctx->ring.entries);
	WRITE_ONCE(st->events_total, ctx->events_total);
	WRITE_ONCE(st->events_pending, ctx->ring.count);
	WRITE_ONCE(st->overflows, ctx->overflows);
}

/*
 * Queue one record and give it the next sequence number.  Caller holds
 * ctx->lock and has already written the slot word; the wake-up is the
 * caller's, after unlocking.
 */
void regcache_ctx_queue_event(struct regcache_ctx *ctx, struct regcache_event *ev)
{
	ev->size = sizeof(*ev);
	ev->flags = 0;
	ev->seq = ++ctx->events_total;
	atomic64_inc(&regcache_stats.events_total);
	if (!regcache_ring_push(&ctx->ring, ev)) {
		ctx->overflows++;
		ctx->overflow_seq = ev->seq;
		ctx->status_flags |= REGCACHE_STATUS_OVERFLOW;
		atomic64_inc(&regcache_stats.overflows);
	}
	regcache_status_sync(ctx);
}

/* Records at the head of the ring with seq <= seen: a binary search, they are in seq order. */
static u32 regcache_ring_count_upto(const struct regcache_ring *ring, u64 seen)
{
	u32 lo = 0, hi = ring->count, mid, idx;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		idx = ring->head + mid;
		if (idx >= ring->entries)
			idx -= ring->entries;
		if (ring->ev[idx].seq <= seen)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * FLUSH: drop the records the caller has accounted for (seq <= seen) and
 * clear OVERFLOW unless a record newer than that was dropped.  An event
 * that arrives while the caller rescans after reading events_total has a
 * larger seq, so it survives the FLUSH: nothing is lost in that window
 * (an argument-less FLUSH, ABI 1, dropped it silently).  The spinlock,
 * which the notifier takes, is held for a search, not a walk of up to
 * ring_entries records.
 */
int regcache_ctx_flush_events(struct regcache_ctx *ctx, u64 seen)
{
	struct regcache_ring *ring = &ctx->ring;
	u32 n;

	spin_lock(&ctx->lock);
	if (seen > ctx->events_total) {
		spin_unlock(&ctx->lock);
		return -EINVAL;
	}
	n = regcache_ring_count_upto(ring, seen);
	ring->count -= n;
	ring->head += n;
	if (ring->head >= ring->entries)
		ring->head -= ring->entries;
	if (ctx->overflow_seq <= seen)
		ctx->status_flags &= ~REGCACHE_STATUS_OVERFLOW;
	regcache_status_sync(ctx);
	spin_unlock(&ctx->lock);
	return 0;
}
