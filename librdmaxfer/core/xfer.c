// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * xfer.c - the data path: posting prepared requests (prepare.c,
 * atomic.c), their doorbells and backlogs, their completions, and
 * test/wait/free.
 *
 * Posting re-takes the local registrations from the cache (a hit unless
 * the memory changed, which is what makes munmap + mmap between posts
 * safe), then posts each QP's list with one ibv_post_send.  Only the last
 * WR of a doorbell is signalled, plus one every signal_interval WRs so a
 * long list retires SQ slots as it goes; when the send queue is full the
 * rest waits in the QP's backlog and the progress engine posts it as
 * slots retire, so posting never fails for lack of room.
 * RDMAXFER_POST_MORE holds the doorbell back, so several requests go out
 * as one chain: the earlier ones carry no signalled WR and complete with
 * the chain's last ("riders" of its slot).  A doorbell refused partway is
 * xfer_fail.c's.
 *
 * Ordering: WRs of one QP execute in order; a request striped over QPs has
 * no order between its pieces; its notification is sent only after all
 * its data completed (one QP: appended to the list, fenced after READs).
 *
 * Why post, doorbell, poll and completion stay in this one file (about
 * 900 lines): within one unit the compiler inlines test ->
 * rx_poll_cq_locked() -> send_completion() -> req_check_done() and post
 * -> post_alone(), so a request costs one call into the poll (60d6329,
 * where the same chain across three files measured 0.92 of perftest's
 * READ rate against 0.99 inlined); split, every operation would pay the
 * calls again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "xfer.h"

/* RDMAXFER_POST_MORE: the QP's doorbell waits for the next post without
 * MORE, or for the next progress call (rx_flush_deferred()). */
static inline void qp_defer(struct rdmaxfer_agent *agent, struct rx_qp *q)
{
	if (!q->deferred) {
		q->deferred = true;
		rx_list_add_tail(&agent->deferred, &q->defer_node);
	}
}

/* Lock held: ring the doorbells that RDMAXFER_POST_MORE held back. */
void rx_flush_deferred(struct rdmaxfer_agent *agent)
{
	while (!rx_list_empty(&agent->deferred))
		rx_flush_backlog(rx_container_of(agent->deferred.next,
						 struct rx_qp, defer_node));
}

/* WR i of a part: its flags before signalling, inline only within what
 * the QP it goes out on was granted. */
static inline int piece_flags(const struct rx_qp *q,
			      const struct rx_part *part, uint32_t i)
{
	const struct ibv_send_wr *wr = &part->wrs[i];
	int flags = part->base_flags[i];

	if ((flags & IBV_SEND_INLINE) &&
	    (wr->num_sge != 1 || wr->sg_list->length > q->max_inline))
		flags &= ~IBV_SEND_INLINE;
	return flags;
}

/*
 * The signalling of a doorbell chain being built: WRs since the last
 * signalled one, and the parts whose last WR in the chain is unsignalled
 * and so ride on the next signalled one.
 */
struct chain_sig {
	uint32_t since;
	struct rx_part *riders, *last;	/* no pointer into itself: it can
					 * live in registers */
};

static inline void chain_sig_init(struct chain_sig *c)
{
	c->since = 0;
	c->riders = NULL;
	c->last = NULL;
}

/* WR wr (slot slot, flags before signalling) joins the chain on QP q;
 * signalled, it carries the riders gathered since the last one. */
static inline void chain_wr(struct rx_qp *q, struct chain_sig *c,
			    struct ibv_send_wr *wr, struct rx_slot *slot,
			    int flags, bool signal)
{
	slot->qp = q->index;
	if (signal) {
		flags |= IBV_SEND_SIGNALED;
		slot->retire = c->since;
		c->since = 0;
		slot->riders = c->riders;
		c->riders = NULL;
		c->last = NULL;
		wr->wr_id = rx_wr_id(slot, RX_TAG_SIGNALED, q->gen);
	} else {
		slot->riders = NULL;
		wr->wr_id = rx_wr_id(slot, RX_TAG_UNSIGNALED, q->gen);
	}
	wr->send_flags = (unsigned int)flags;
}

/* A part whose last WR in the chain went unsignalled rides on the next. */
static inline void chain_rider(struct chain_sig *c, struct rx_part *part)
{
	part->rider_next = NULL;
	if (c->last)
		c->last->rider_next = part;
	else
		c->riders = part;
	c->last = part;
}

/*
 * Lock held: the batch doorbell, rx_flush_backlog() for a backlog of
 * parts of one WR each that all fit the send queue, which is what
 * requests of one small message posted with RDMAXFER_POST_MORE leave.
 * The same chain as the general path builds (same signalling, riders,
 * slots and wr_ids; test_rdmaxfer_checks holds both to one rule), in one
 * pass instead of per-part pieces, and accounted for in one pass after
 * the doorbell: every part's WR is signalled or rides on the chain's next
 * signalled WR, so each part's request waits for exactly one completion.
 * Returns 0 when it posted the chain, a negative errno when the provider
 * refused part of it (handed to rx_chain_failed() with the state the general
 * path leaves), or 1, with nothing done, where it does not apply.
 */
static int flush_singles(struct rx_qp *q, uint32_t room, uint32_t interval)
{
	struct ibv_send_wr *head = NULL, **link = &head, *bad = NULL;
	struct rx_part *part = NULL;
	struct chain_sig c;
	uint32_t count = 0;
	struct rx_list *n;
	int ret;

	for (n = q->backlog.next; n != &q->backlog; n = n->next)
		if (backlog_part(n)->n != 1 || ++count > room)
			return 1;
	chain_sig_init(&c);
	for (n = q->backlog.next; n != &q->backlog; n = n->next) {
		struct ibv_send_wr *wr;
		bool signal;

		part = backlog_part(n);
		wr = part->wrs;
		part->seg_end = 1;
		part->seg_next = wr->next;
		signal = ++c.since >= interval || n->next == &q->backlog;
		chain_wr(q, &c, wr, part->slots, piece_flags(q, part, 0),
			 signal);
		if (!signal)
			chain_rider(&c, part);
		*link = wr;
		link = &wr->next;
	}
	*link = NULL;

	ret = ibv_post_send(q->qp, head, &bad);
	if (ret) {
		ret = ret > 0 ? -ret : ret;
		rx_chain_failed(q, part, bad, ret);
		return ret;
	}
	for (n = q->backlog.next; n != &q->backlog; n = n->next) {
		struct rdmaxfer_req *req;

		part = backlog_part(n);
		req = part->req;
		part->wrs[0].next = part->seg_next;
		part->cursor = 1;
		req->unposted--;
		req->signals++;
	}
	q->sq_used += count;
	rx_list_init(&q->backlog);
	return 0;
}

/*
 * Lock held: post what fits of the QP's backlog, oldest first, as one
 * chain of work requests and one doorbell.  A WR is signalled every
 * signal_interval WRs and at the end of the chain, so each doorbell ends
 * with a signalled WR; a part whose own last WR went unsignalled rides on
 * the next signalled one (WRs of one QP complete in order).
 */
void rx_flush_backlog(struct rx_qp *q)
{
	struct rdmaxfer_agent *agent = q->peer->agent;
	uint32_t interval = agent->attr.signal_interval;
	struct rx_part *part = NULL, *prev = NULL;
	struct ibv_send_wr *head = NULL, *bad = NULL;
	struct chain_sig c;
	struct rx_list *n, *next;
	uint32_t room;
	int ret;

	qp_undefer(q);
again:
	if (rx_list_empty(&q->backlog))
		return;
	if (!q->qp || q->peer->state != RDMAXFER_PEER_CONNECTED) {
		rx_fail_backlog(q, q->peer->error ? q->peer->error :
						    -ENOTCONN);
		return;
	}
	if (q->sq_used >= agent->attr.sq_depth)
		return;
	room = agent->attr.sq_depth - q->sq_used;
	ret = flush_singles(q, room, interval);
	if (ret <= 0) {
		/* a refused WR took its part out of the backlog: try the
		 * rest, as below */
		if (ret && q->peer->state == RDMAXFER_PEER_CONNECTED)
			goto again;
		return;
	}
	head = NULL;
	prev = NULL;
	chain_sig_init(&c);

	/* build the chain: link each part's piece to the next one's */
	for (n = q->backlog.next; n != &q->backlog && room; n = n->next) {
		uint32_t k, i;
		bool last_piece;

		part = backlog_part(n);
		k = part->n - part->cursor;
		if (k > room)
			k = room;
		room -= k;
		part->seg_end = part->cursor + k;
		last_piece = !room || n->next == &q->backlog;
		for (i = part->cursor; i < part->seg_end; i++)
			chain_wr(q, &c, &part->wrs[i], &part->slots[i],
				 piece_flags(q, part, i),
				 ++c.since >= interval ||
				 (last_piece && i == part->seg_end - 1));
		if (!(part->wrs[part->seg_end - 1].send_flags &
		      IBV_SEND_SIGNALED))
			chain_rider(&c, part);
		part->seg_next = part->wrs[part->seg_end - 1].next;
		if (prev)
			prev->wrs[prev->seg_end - 1].next =
				&part->wrs[part->cursor];
		else
			head = &part->wrs[part->cursor];
		prev = part;
	}
	part->wrs[part->seg_end - 1].next = NULL;

	bad = NULL;
	ret = ibv_post_send(q->qp, head, &bad);
	if (ret) {
		rx_chain_failed(q, part, bad, ret > 0 ? -ret : ret);
		/* each failure takes one part out of the backlog: this ends */
		if (q->peer->state == RDMAXFER_PEER_CONNECTED)
			goto again;
		return;
	}

	/* unlink the chain and account for it */
	for (n = q->backlog.next; n != &q->backlog; n = next) {
		struct rx_part *p = backlog_part(n);
		uint32_t i;

		next = n->next;
		p->wrs[p->seg_end - 1].next = p->seg_next;
		for (i = p->cursor; i < p->seg_end; i++)
			chain_posted(p, i);
		q->sq_used += p->seg_end - p->cursor;
		p->cursor = p->seg_end;
		if (p->cursor == p->n)
			part_dequeue(p);
		if (p == part)
			break;
	}
}

/*
 * Lock held: the small-message doorbell.  A part of one WR, with nothing
 * queued before it on its QP and room in its send queue, goes out alone
 * and signalled: what rx_flush_backlog() does with a backlog of that one
 * part (the WR ends its chain, so it is signalled and carries no riders),
 * without queueing the part or building a chain.  A refused WR fails its
 * request as there (rx_chain_failed(); one WR: none went out).  Returns
 * false, with nothing done, where this does not apply.
 */
static bool post_alone(struct rx_qp *q, struct rx_part *part)
{
	struct ibv_send_wr *wr = &part->wrs[0], *next, *bad = NULL;
	struct rx_slot *slot = &part->slots[0];
	int ret;

	if (part->n != 1 || !q->qp || !rx_list_empty(&q->backlog) ||
	    q->sq_used >= q->peer->agent->attr.sq_depth)
		return false;
	slot->qp = q->index;
	slot->riders = NULL;
	slot->retire = 1;
	wr->wr_id = rx_wr_id(slot, RX_TAG_SIGNALED, q->gen);
	wr->send_flags = (unsigned int)(piece_flags(q, part, 0) |
					IBV_SEND_SIGNALED);
	next = wr->next;
	wr->next = NULL;
	ret = ibv_post_send(q->qp, wr, &bad);
	if (ret) {
		/* as the general path leaves a refused chain */
		enqueue_part(part);
		part->seg_end = 1;
		part->seg_next = next;
		rx_chain_failed(q, part, bad, ret > 0 ? -ret : ret);
		return true;
	}
	wr->next = next;
	part->cursor = 1;
	q->sq_used++;
	part->req->signals++;
	return true;
}

/* Lock held: the riders of a signalled completion are done with it. */
static void riders_done(struct rx_part *r)
{
	while (r) {
		struct rx_part *next = r->rider_next;
		struct rdmaxfer_req *rq = r->req;

		rq->signals--;
		req_check_done(rq);
		r = next;
	}
}

/* Lock held: a terminator's completion (post_terminator()). */
static void term_completion(struct ibv_wc *wc)
{
	struct rx_term *t = (struct rx_term *)(uintptr_t)
			    (wc->wr_id & RX_PTR_MASK & ~RX_TAG_MASK);
	uint16_t gen = (uint16_t)(wc->wr_id >> RX_GEN_SHIFT);
	struct rx_qp *q = t->q;
	uint32_t retire = t->retire;
	bool live = (q->gen & 0xfff) == gen && q->qpn == wc->qp_num;

	/* its riders are in flight until now, whatever the QP became */
	riders_done(t->riders);
	rx_list_del(&t->node);
	free(t);
	if (!live)
		return;
	q->sq_used -= retire <= q->sq_used ? retire : q->sq_used;
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			rx_peer_fail(q->peer, rx_wc_errno(wc->status));
	} else if (!rx_list_empty(&q->backlog)) {
		rx_flush_backlog(q);
	}
}

/* Lock held: a completion of a request's WR. */
static void send_completion(struct rdmaxfer_agent *agent, struct ibv_wc *wc)
{
	uint64_t id = wc->wr_id;
	struct rx_slot *slot = (struct rx_slot *)(uintptr_t)
			       (id & RX_PTR_MASK & ~RX_TAG_MASK);
	uint16_t gen = (uint16_t)(id >> RX_GEN_SHIFT);
	struct rdmaxfer_req *req;
	struct rdmaxfer_peer *peer;
	struct rx_qp *q;

	(void)agent;
	if ((id & RX_TAG_MASK) == RX_TAG_TERM) {
		term_completion(wc);
		return;
	}
	req = slot->req;
	peer = req->peer;
	q = &peer->qps[slot->qp];
	/* a completion of a QP a reconnect destroyed: its request is gone */
	if ((q->gen & 0xfff) != gen || q->qpn != wc->qp_num)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		int err = rx_wc_errno(wc->status);

		/* a flush is -ECANCELED unless the peer went away: not
		 * -ECONNRESET because our own disconnect (after another
		 * request failed) was answered */
		if (wc->status == IBV_WC_WR_FLUSH_ERR &&
		    peer->error == -ECONNRESET)
			err = -ECONNRESET;
		req_set_error(req, err, wc->status);
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			rx_peer_fail(peer, err);
	}
	if ((id & RX_TAG_MASK) == RX_TAG_SIGNALED) {
		struct rx_part *r = slot->riders;

		/* the riders' WRs came before this one: they are done (an
		 * error among them came with its own completion) */
		slot->riders = NULL;
		riders_done(r);
		q->sq_used -= slot->retire <= q->sq_used ? slot->retire :
							   q->sq_used;
		req->signals--;
	}
	req_check_done(req);
	if (wc->status == IBV_WC_SUCCESS && !rx_list_empty(&q->backlog))
		rx_flush_backlog(q);
}

#define POLL_BATCH		32

/*
 * A completion of a request's WR whose QP is gone (a reconnect or an
 * abort replaced it: the generation in wr_id is old) must not be looked
 * at: its request may have been freed since.  The QP number and the
 * generation are checked against the live QPs before the slot is touched.
 */
static bool send_wc_current(struct rdmaxfer_agent *agent,
			    const struct ibv_wc *wc)
{
	uint16_t gen = (uint16_t)(wc->wr_id >> RX_GEN_SHIFT);
	struct rdmaxfer_peer *peer;
	unsigned int qi;

	peer = rx_peer_by_qpn(agent, wc->qp_num, &qi);
	return peer && (peer->qps[qi].gen & 0xfff) == gen;
}

/*
 * Drain the CQ; lock held.  Returns the work completions handled.  Here,
 * beside the send completions it hands out, so that the data path
 * (rdmaxfer_req_test() -> this -> send_completion()) is one unit the
 * compiler can flatten: under emulation a call and its return cost more
 * than their instructions say (doc/BENCHMARKS.md).
 */
int rx_poll_cq_locked(struct rdmaxfer_agent *agent)
{
	struct ibv_wc wc[POLL_BATCH];
	uint32_t recvs[POLL_BATCH];
	int n, i, total = 0;
	unsigned int nrecv;

	rx_ring_deferred(agent);
	for (;;) {
		n = ibv_poll_cq(agent->cq, POLL_BATCH, wc);
		if (n < 0)
			return -EIO;
		nrecv = 0;
		for (i = 0; i < n; i++) {
			switch (wc[i].wr_id & RX_TAG_MASK) {
			case RX_TAG_RECV:
				recvs[nrecv] = rx_recv_completion(agent,
								  &wc[i]);
				/* a held buffer is reposted when its
				 * notification is taken (notif.c) */
				if (recvs[nrecv] != RX_RECV_HELD)
					nrecv++;
				break;
			case RX_TAG_SEND:
				rx_send_slot_done(agent, &wc[i]);
				break;
			default:
				if (send_wc_current(agent, &wc[i]))
					send_completion(agent, &wc[i]);
				break;
			}
		}
		/* the consumed receive buffers back, one post for all */
		if (nrecv)
			rx_post_recvs(agent, recvs, nrecv);
		total += n;
		if (n < POLL_BATCH)
			break;
	}
	/* seen empty: completions of destroyed QPs are all gone */
	agent->cq_stale = 0;
	agent->gen_stale_min = UINT64_MAX;
	if (total)
		rx_work_locked(agent);	/* an armed application's wakeup */
	return total;
}

/*
 * The data path's progress (rdmaxfer_req_test(), which callers spin on):
 * the CQ every time, the CM channel every RX_CM_POLL_EVERY calls only.
 * rdma_get_cm_event() is a read() system call even when nothing is
 * pending; paying it on every turn of a test() loop cost a syscall per
 * poll that ibv_poll_cq() (no syscall on rxe or mlx5) does not, and
 * measurably slowed small-message bandwidth against perftest.  CM events
 * (disconnects) are rare and still seen within RX_CM_POLL_EVERY turns;
 * every other progress path drains them each time.
 */
static int progress_data_locked(struct rdmaxfer_agent *agent)
{
	if (++agent->cm_tick >= RX_CM_POLL_EVERY) {
		agent->cm_tick = 0;
		return rx_progress_locked(agent);
	}
	return rx_poll_cq_locked(agent);
}

/*
 * The common repost checks one or two words, not every iov: the cache's
 * generation, taken before the entries were last checked (req->regs_gen,
 * see req_take_regs()), is unchanged, so none of them can have stopped
 * being valid since (the ordering argument is at regcache_generation()).
 */
static inline bool req_regs_current(const struct rdmaxfer_req *req)
{
	uint64_t gen = regcache_generation(req->peer->agent->cache);

	return gen && gen == req->regs_gen;
}

/*
 * Take the local registrations for this post, where req_regs_current()
 * said they may have changed.  Entries held from the last post that are
 * still valid (regcache_entry_valid(): no lock, no atomic) are kept as
 * they are.  Otherwise a new reference is taken before the old one is
 * dropped, so an unchanged buffer stays a hit; a buffer whose memory was
 * unmapped and mapped again gets a fresh registration with a fresh lkey.
 * The generation is taken before the checks below, so an invalidation
 * racing with them changes it and the next post checks again.
 */
static int req_take_regs(struct rdmaxfer_req *req)
{
	struct regcache *cache = req->peer->agent->cache;
	uint64_t gen = regcache_generation(cache);
	bool changed = false, cached = true;
	/* the device writes a READ's target and an atomic's result, and
	 * only reads a WRITE's source (mem.c: exactly that access) */
	uint32_t access = req->op == RDMAXFER_OP_WRITE ? 0 : RX_LOCAL_ACCESS;
	size_t i;
	int ret;

	/* the common repost: every held entry still valid, lkeys unchanged */
	for (i = 0; i < req->nlocal; i++)
		if (!req->ents[i] || !regcache_entry_valid(cache, req->ents[i]))
			break;
	if (i == req->nlocal) {
		req->regs_gen = gen;
		return 0;
	}
	req->regs_gen = 0;
	for (i = 0; i < req->nlocal; i++) {
		struct regcache_entry *e;

		ret = rx_cache_get(cache, req->local[i].addr,
				   req->local[i].len, access, 0, &e);
		if (ret)
			return ret;
		if (req->ents[i]) {
			if (regcache_entry_handle(req->ents[i]) !=
			    regcache_entry_handle(e))
				changed = true;
			regcache_put(cache, req->ents[i]);
		} else {
			changed = true;
		}
		req->ents[i] = e;
		cached &= regcache_entry_cached(e);
	}
	/* an uncached entry is never valid: take it again at every post */
	req->regs_gen = cached ? gen : 0;
	if (!changed)
		return 0;
	for (i = 0; i < req->nwr; i++) {
		uint32_t l = req->wr_local[i];

		if (l == UINT32_MAX || !req->wrs[i].num_sge)
			continue;
		req->sges[i].lkey = ((struct ibv_mr *)
				     regcache_entry_handle(req->ents[l]))->lkey;
	}
	return 0;
}

/*
 * req_start_locked(), lock held (and held again on return): make req
 * ACTIVE for a post, taking its registrations first unless regs_current
 * (the caller's req_regs_current(): one generation load may serve a whole
 * list).
 *
 * The progress thread writes req->state and peer->state under the agent
 * lock: they are read under it here.  Only it may change them until this
 * post makes the request ACTIVE again, and only from ACTIVE to a final
 * state, so the registrations may be taken unlocked (they can take
 * milliseconds: req_retake_regs_locked()) and the peer checked again
 * afterwards.  A repost whose registrations are current (a load and a
 * compare) takes the lock once (none: RDMAXFER_AGENT_SINGLE_THREAD).
 */
static int req_retake_regs_locked(struct rdmaxfer_req *req)
{
	struct rdmaxfer_agent *agent = req->peer->agent;
	int ret;

	rx_data_unlock(agent);
	ret = req_take_regs(req);
	rx_data_lock(agent);
	if (!ret && req->peer->state != RDMAXFER_PEER_CONNECTED)
		ret = -ENOTCONN;
	return ret;
}

static inline int req_start_locked(struct rdmaxfer_req *req,
				   bool regs_current)
{
	struct rdmaxfer_peer *peer = req->peer;
	int ret;

	/* a completion whose callback is not called yet: in progress for
	 * the application, whose callback would miss it otherwise */
	if (req->state == RX_REQ_ACTIVE || req->cb_due)
		return -EBUSY;
	if (peer->state != RDMAXFER_PEER_CONNECTED)
		return -ENOTCONN;
	if (!regs_current) {
		ret = req_retake_regs_locked(req);
		if (ret)
			return ret;
	}
	req->err = 0;
	req->wc_status = -1;
	req->signals = 0;
	req->unposted = 0;
	req->notif_sent = false;
	req->state = RX_REQ_ACTIVE;
	peer->nreqs_active++;
	return 0;
}

/* Lock held: queue every part of a started request, its QPs' doorbells
 * held (rx_flush_deferred() rings them). */
static inline void req_queue_deferred(struct rdmaxfer_req *req)
{
	struct rdmaxfer_agent *agent = req->peer->agent;
	unsigned int i;

	for (i = 0; i < req->nparts; i++) {
		enqueue_part(&req->parts[i]);
		qp_defer(agent, &req->peer->qps[req->parts[i].qp]);
	}
}

RX_EXPORT
int rdmaxfer_req_post_flags(struct rdmaxfer_req *req, unsigned int flags)
{
	struct rdmaxfer_peer *peer;
	struct rdmaxfer_agent *agent;
	bool regs_current;
	int ret;

	if (!req || (flags & ~RDMAXFER_POST_MORE))
		return -EINVAL;
	if (req->ops)
		return req->ops->post(req);
	peer = req->peer;
	agent = peer->agent;
	regs_current = req_regs_current(req);
	if (!regs_current)
		rx_mem_sweep(agent, false);	/* a key whose memory went */
	rx_data_lock(agent);
	ret = req_start_locked(req, regs_current);
	if (ret) {
		rx_data_unlock(agent);
		return ret;
	}
	/* one part (one QP), the common case, as the general path below
	 * does it: a part with no doorbell held back (RDMAXFER_POST_MORE) would be a
	 * chain of its own, so it may go out alone */
	if (req->nparts == 1) {
		struct rx_part *part = &req->parts[0];
		struct rx_qp *q = &peer->qps[part->qp];

		if (flags & RDMAXFER_POST_MORE) {
			enqueue_part(part);
			qp_defer(agent, q);
		} else if (!rx_list_empty(&agent->deferred) ||
			   !post_alone(q, part)) {
			enqueue_part(part);
			rx_flush_deferred(agent);
			rx_flush_backlog(q);
		}
		rx_data_unlock(agent);
		return 0;
	}
	/* every QP of the request is deferred: one flush rings them all,
	 * after the doorbells held before */
	req_queue_deferred(req);
	if (!(flags & RDMAXFER_POST_MORE))
		rx_flush_deferred(agent);
	rx_data_unlock(agent);
	return 0;
}

/*
 * Post reqs[0..n-1] in order, as n calls of rdmaxfer_req_post_flags()
 * with RDMAXFER_POST_MORE on all but the last would, for the cost of one
 * call: one lock, one load of the cache's generation for all of them
 * (again after a request whose registrations had to be taken afresh), and
 * one doorbell per QP at the end (none with RDMAXFER_POST_MORE in flags).
 * The first request that cannot be posted stops the list: those before it
 * are posted (their doorbells rung, unless RDMAXFER_POST_MORE) and
 * *posted says how many.  A list naming requests of two agents, or NULL,
 * posts nothing (-EINVAL).
 */
RX_EXPORT
int rdmaxfer_req_post_list(struct rdmaxfer_req *const *reqs, unsigned int n,
			   unsigned int flags, unsigned int *posted)
{
	struct rdmaxfer_agent *agent = NULL;
	struct rdmaxfer_req *req;
	bool current;
	uint64_t gen;
	unsigned int k;
	int ret = 0;

	if (posted)
		*posted = 0;
	if ((n && !reqs) || (flags & ~RDMAXFER_POST_MORE))
		return -EINVAL;
	for (k = 0; k < n; k++) {
		if (!reqs[k] || (agent && reqs[k]->peer->agent != agent))
			return -EINVAL;
		agent = reqs[k]->peer->agent;
	}
	if (!n)
		return 0;
	if (n == 1) {
		/* its fast paths (a lone small WR goes out at once) */
		ret = rdmaxfer_req_post_flags(reqs[0], flags);
		if (posted)
			*posted = !ret;
		return ret;
	}
	gen = regcache_generation(agent->cache);
	rx_data_lock(agent);
	for (k = 0; k < n && !ret; k++) {
		req = reqs[k];
		if (req->ops) {
			/* its own engine and doorbell (io_uring) */
			rx_data_unlock(agent);
			ret = req->ops->post(req);
			rx_data_lock(agent);
			gen = regcache_generation(agent->cache);
			continue;
		}
		current = gen && gen == req->regs_gen;
		ret = req_start_locked(req, current);
		if (!ret)
			req_queue_deferred(req);
		/* after registrations taken unlocked (maybe for
		 * milliseconds), the next requests are checked against the
		 * generation of now, as posts of their own would be */
		if (!current)
			gen = regcache_generation(agent->cache);
	}
	if (ret)
		k--;
	if (!(flags & RDMAXFER_POST_MORE))
		rx_flush_deferred(agent);
	rx_data_unlock(agent);
	if (posted)
		*posted = k;
	return ret;
}

/* ring_writer.c: a prepared write's immediate, changed before it is posted
 * again (never while it is in flight). */
int rx_req_set_imm(struct rdmaxfer_req *req, uint32_t value)
{
	struct rdmaxfer_agent *agent = req->peer->agent;
	int ret = -EINVAL;
	uint32_t i;

	pthread_mutex_lock(&agent->lock);
	if (req->state == RX_REQ_ACTIVE) {
		ret = -EBUSY;
	} else if (req->notif_deferred) {
		req->notif_wr.imm_data = htonl(value);
		ret = 0;
	} else {
		for (i = 0; i < req->nwr && ret; i++)
			if (req->wrs[i].opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
				req->wrs[i].imm_data = htonl(value);
				ret = 0;
			}
	}
	pthread_mutex_unlock(&agent->lock);
	return ret;
}

RX_EXPORT
int rdmaxfer_req_post(struct rdmaxfer_req *req)
{
	return rdmaxfer_req_post_flags(req, 0);
}

/* What test reports for a request in state with error err (file.c too). */
int rx_state_result(enum rx_req_state state, int err)
{
	switch (state) {
	case RX_REQ_IDLE:
		return -EALREADY;
	case RX_REQ_ACTIVE:
		return -EINPROGRESS;
	case RX_REQ_DONE:
		return 0;
	default:
		return err ? err : -EIO;
	}
}

static int req_result(const struct rdmaxfer_req *req)
{
	return rx_state_result(req->state, req->err);
}

RX_EXPORT
int rdmaxfer_req_test(struct rdmaxfer_req *req)
{
	struct rdmaxfer_agent *agent;
	int ret;

	if (!req)
		return -EINVAL;
	if (req->ops)
		return req->ops->test(req);
	agent = req->peer->agent;
	rx_data_lock(agent);
	rx_ring_deferred(agent);
	if (req->state == RX_REQ_ACTIVE && rx_self_progress(agent))
		progress_data_locked(agent);
	ret = req_result(req);
	rx_data_unlock(agent);
	if ((agent->notifs.count && agent->notif_fn) ||
	    __atomic_load_n(&agent->ext_cbs, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&agent->ncbs, __ATOMIC_RELAXED))
		rx_deliver_notifs(agent);
	return ret;
}

/* Lock held: the lowest index of reqs not in progress, or -1. */
static int any_done(struct rdmaxfer_req *const *reqs, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (reqs[i]->state != RX_REQ_ACTIVE)
			return (int)i;
	return -1;
}

/*
 * rdmaxfer_req_wait() (n = 1) and rdmaxfer_req_wait_any(): progress (or
 * sleep on the agent's set) until one of reqs is no longer in progress,
 * then its index and result; the callbacks due are run after the lock.
 */
static int reqs_wait(struct rdmaxfer_agent *agent,
		     struct rdmaxfer_req *const *reqs, unsigned int n,
		     int64_t deadline, unsigned int *index)
{
	int ret, k;

	pthread_mutex_lock(&agent->lock);
	rx_ring_deferred(agent);
	for (;;) {
		k = any_done(reqs, n);
		if (k < 0 && rx_self_progress(agent)) {
			rx_progress_locked(agent);
			k = any_done(reqs, n);
		}
		if (k >= 0) {
			*index = (unsigned int)k;
			ret = req_result(reqs[k]);
			break;
		}
		ret = rx_block(agent, deadline);
		if (ret)
			break;
	}
	pthread_mutex_unlock(&agent->lock);
	if (rx_has_callbacks(agent))
		rx_deliver_notifs(agent);
	return ret;
}

RX_EXPORT
int rdmaxfer_req_wait(struct rdmaxfer_req *req, int timeout_ms)
{
	int64_t deadline = rx_deadline(timeout_ms);
	unsigned int index;

	if (!req)
		return -EINVAL;
	if (req->ops)
		return req->ops->wait(req, timeout_ms);
	return reqs_wait(req->peer->agent, &req, 1, deadline, &index);
}

/* Lock held: req completed and has a callback: its call is due (xfer.h,
 * req_check_done(), and peer.c's failure of a peer's requests). */
void rx_req_cb_due(struct rdmaxfer_req *req)
{
	struct rdmaxfer_agent *agent = req->peer->agent;

	if (req->cb_due)
		return;
	req->cb_due = true;
	req->cb_status = req_result(req);
	rx_list_add_tail(&agent->cb_q, &req->cb_node);
	__atomic_fetch_add(&agent->ncbs, 1, __ATOMIC_RELAXED);
	/* a callback to run is work for an armed application */
	rx_work_locked(agent);
}

/*
 * Lock held, by the one deliverer (rx_deliver_notifs()): call the due
 * callbacks in completion order, the lock dropped around each, so that
 * one may post, test or free its request (the request is off the queue
 * and not due before its call).
 */
void rx_req_cbs_run_locked(struct rdmaxfer_agent *agent)
{
	struct rdmaxfer_req *req;
	rdmaxfer_req_fn fn;
	void *user;
	int status;

	while (!rx_list_empty(&agent->cb_q)) {
		req = rx_container_of(agent->cb_q.next, struct rdmaxfer_req,
				      cb_node);
		rx_list_del(&req->cb_node);
		req->cb_due = false;
		__atomic_fetch_sub(&agent->ncbs, 1, __ATOMIC_RELAXED);
		fn = req->cb;
		user = req->cb_user;
		status = req->cb_status;
		if (!fn)
			continue;
		pthread_mutex_unlock(&agent->lock);
		fn(user, req, status);
		pthread_mutex_lock(&agent->lock);
	}
}

RX_EXPORT
int rdmaxfer_req_set_cb(struct rdmaxfer_req *req, rdmaxfer_req_fn fn,
			void *user)
{
	struct rdmaxfer_agent *agent;
	int ret = 0;

	if (!req)
		return -EINVAL;
	if (req->ops)
		return -EOPNOTSUPP;
	agent = req->peer->agent;
	pthread_mutex_lock(&agent->lock);
	if (req->state == RX_REQ_ACTIVE) {
		ret = -EBUSY;
	} else {
		req->cb = fn;
		req->cb_user = user;
	}
	pthread_mutex_unlock(&agent->lock);
	return ret;
}

RX_EXPORT
int rdmaxfer_req_wait_any(struct rdmaxfer_req *const *reqs, unsigned int n,
			  int timeout_ms, unsigned int *index)
{
	int64_t deadline = rx_deadline(timeout_ms);
	unsigned int i;

	if (!reqs || !n || !index || !reqs[0])
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!reqs[i] || (reqs[i]->peer && reqs[0]->peer &&
				 reqs[i]->peer->agent != reqs[0]->peer->agent))
			return -EINVAL;
		if (reqs[i]->ops)
			return -EOPNOTSUPP;
	}
	return reqs_wait(reqs[0]->peer->agent, reqs, n, deadline, index);
}

/* Free a request's memory (lock not needed: the agent is going away, or
 * the request was unlinked).  Not through req->peer: agent teardown
 * frees the peers first. */
void rx_req_release(struct rdmaxfer_agent *agent, struct rdmaxfer_req *req)
{
	struct regcache *cache = agent->cache;
	size_t i;

	rx_list_del(&req->node);
	if (req->cb_due)
		rx_list_del(&req->cb_node);
	if (req->ops)
		req->ops->release(req);
	for (i = 0; i < req->nlocal; i++)
		if (req->ents[i])
			regcache_put(cache, req->ents[i]);
	/* one block (rx_req_alloc()), or another kind's struct alone */
	free(req);
}

RX_EXPORT
int rdmaxfer_req_free(struct rdmaxfer_req *req)
{
	struct rdmaxfer_agent *agent;

	if (!req)
		return -EINVAL;
	if (req->ops) {
		int ret = req->ops->free(req);

		if (ret)
			return ret;
		rx_req_unlink(req);
		free(req);
		return 0;
	}
	agent = req->peer->agent;
	pthread_mutex_lock(&agent->lock);
	if (req->state == RX_REQ_ACTIVE) {
		pthread_mutex_unlock(&agent->lock);
		return -EBUSY;
	}
	req->peer->nreqs--;
	rx_list_del(&req->node);
	if (req->cb_due) {
		/* freed with its call due: the application gave it up */
		rx_list_del(&req->cb_node);
		req->cb_due = false;
		__atomic_fetch_sub(&agent->ncbs, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&agent->lock);
	rx_req_release(agent, req);
	return 0;
}

RX_EXPORT
uint64_t rdmaxfer_req_bytes(const struct rdmaxfer_req *req)
{
	return req ? req->bytes : 0;
}

RX_EXPORT
const char *rdmaxfer_req_strerror(const struct rdmaxfer_req *req)
{
	if (!req)
		return rdmaxfer_strerror(-EINVAL);
	if (req->ops)
		return req->ops->strerror(req);
	if (req->wc_status > 0)
		return ibv_wc_status_str((enum ibv_wc_status)req->wc_status);
	return rdmaxfer_strerror(req_result(req));
}

/* Which kinds cancel: only those whose table has cancel (a file request
 * starts no more chunks); a verbs request's work requests on the wire
 * cannot be recalled. */
RX_EXPORT
int rdmaxfer_req_cancel(struct rdmaxfer_req *req)
{
	if (!req)
		return -EINVAL;
	if (!req->ops || !req->ops->cancel)
		return -EOPNOTSUPP;
	return req->ops->cancel(req);
}

int rx_req_new(struct rdmaxfer_peer *peer, enum rdmaxfer_op op,
	       uint64_t bytes, const struct rx_req_ops *ops, void *priv,
	       struct rdmaxfer_req **reqp)
{
	struct rdmaxfer_req *req = calloc(1, sizeof(*req));

	if (!req)
		return -ENOMEM;
	req->peer = peer;
	req->op = op;
	req->state = RX_REQ_IDLE;
	req->wc_status = -1;
	req->bytes = bytes;
	req->ops = ops;
	req->priv = priv;
	*reqp = req;
	return 0;
}

void rx_req_link(struct rdmaxfer_req *req)
{
	struct rdmaxfer_agent *agent = req->peer->agent;

	pthread_mutex_lock(&agent->lock);
	req->peer->nreqs++;
	rx_list_add_tail(&agent->reqs, &req->node);
	pthread_mutex_unlock(&agent->lock);
}

void rx_req_unlink(struct rdmaxfer_req *req)
{
	struct rdmaxfer_agent *agent = req->peer->agent;

	pthread_mutex_lock(&agent->lock);
	req->peer->nreqs--;
	rx_list_del(&req->node);
	pthread_mutex_unlock(&agent->lock);
}
