// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * xfer.c - prepared requests: READ/WRITE lists and atomics.
 *
 * Preparing builds every work request once: pairs are split at the port's
 * max message size (and at 1 GiB, the reach of one scatter entry), large
 * requests are striped over the peer's QPs, and the WRs of each QP form
 * one linked list.  Posting re-takes the local registrations from the
 * cache (a hit unless the memory changed, which is what makes munmap +
 * mmap between posts safe), then posts each QP's list with one
 * ibv_post_send.  Only the last WR of a doorbell is signalled, plus one
 * every signal_interval WRs so a long list retires SQ slots as it goes;
 * when the send queue is full the rest waits in the QP's backlog and the
 * progress engine posts it as slots retire, so posting never fails for
 * lack of room.  RDMAXFER_POST_MORE holds the doorbell back, so several
 * requests go out as one chain: the earlier ones carry no signalled WR
 * and complete with the chain's last ("riders" of its slot).
 *
 * Ordering: WRs of one QP execute in order; a request striped over QPs has
 * no order between its pieces; its notification is sent only after all
 * its data completed (one QP: appended to the list, fenced after READs).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "internal.h"

static void req_set_error(struct rdmaxfer_req *req, int err, int wc_status)
{
	/* keep the first cause; a flush is only collateral */
	if (req->err && req->wc_status != IBV_WC_WR_FLUSH_ERR)
		return;
	if (req->err && wc_status == IBV_WC_WR_FLUSH_ERR)
		return;
	req->err = err;
	req->wc_status = wc_status;
}

static void enqueue_part(struct rx_part *part)
{
	struct rx_qp *q = &part->req->peer->qps[part->qp];

	part->cursor = 0;
	part->req->unposted++;
	rx_list_add_tail(&q->backlog, &part->node);
}

static inline void req_check_done(struct rdmaxfer_req *req)
{
	struct rdmaxfer_peer *peer = req->peer;

	if (req->state != RX_REQ_ACTIVE || req->unposted || req->signals)
		return;
	if (!req->err && req->notif_deferred && !req->notif_sent) {
		req->notif_sent = true;
		req->notif_part.qp = 0;
		enqueue_part(&req->notif_part);
		rx_flush_backlog(&peer->qps[0]);
		return;
	}
	req->state = req->err ? RX_REQ_FAILED : RX_REQ_DONE;
	peer->nreqs_active--;
}

static void part_dequeue(struct rx_part *part)
{
	rx_list_del(&part->node);
	part->req->unposted--;
}

/* RDMAXFER_POST_MORE: the QP's doorbell waits for the next post without
 * MORE, or for the next progress call (rx_flush_deferred()). */
static inline void qp_defer(struct rdmaxfer_agent *agent, struct rx_qp *q)
{
	if (!q->deferred) {
		q->deferred = true;
		rx_list_add_tail(&agent->deferred, &q->defer_node);
	}
}

static void qp_undefer(struct rx_qp *q)
{
	q->deferred = false;
	rx_list_del(&q->defer_node);
}

/*
 * Lock held: fail every part waiting for room on this QP.  None of them
 * reached the send queue (or only their first pieces did, which flush):
 * they are cancelled, -ECANCELED, not failed with the error of the request
 * that brought the peer down (err), which the application would otherwise
 * blame on requests that never ran.  A remote disconnect (err
 * -ECONNRESET) is reported as such.  It is recorded as a flush, so a
 * request's own error from a WR that did run still wins.
 */
void rx_fail_backlog(struct rx_qp *q, int err)
{
	int cerr = err == -ECONNRESET ? -ECONNRESET : -ECANCELED;

	qp_undefer(q);
	while (!rx_list_empty(&q->backlog)) {
		struct rx_part *part = rx_container_of(q->backlog.next,
						       struct rx_part, node);
		struct rdmaxfer_req *req = part->req;

		part_dequeue(part);
		req_set_error(req, cerr, IBV_WC_WR_FLUSH_ERR);
		req_check_done(req);
	}
}

/* Lock held: ring the doorbells that RDMAXFER_POST_MORE held back. */
void rx_flush_deferred(struct rdmaxfer_agent *agent)
{
	while (!rx_list_empty(&agent->deferred))
		rx_flush_backlog(rx_container_of(agent->deferred.next,
						 struct rx_qp, defer_node));
}

static inline struct rx_part *backlog_part(struct rx_list *n)
{
	return rx_container_of(n, struct rx_part, node);
}

/*
 * WR i of a chained part was posted: if it is signalled, its request and
 * the parts riding on it wait for its completion.
 */
static inline void chain_posted(struct rx_part *part, uint32_t i)
{
	struct rx_part *r;

	if (!(part->wrs[i].send_flags & IBV_SEND_SIGNALED))
		return;
	part->req->signals++;
	for (r = part->slots[i].riders; r; r = r->rider_next)
		r->req->signals++;
}

/*
 * Lock held: the WRs of one doorbell that went out after its last posted
 * signalled WR (the chain failed partway) need a completion of their own,
 * or their requests would be reported done while those WRs may still run,
 * and a flush completion could then name a request already freed.  A
 * signalled zero-length WRITE (no memory is touched, the rkey is not
 * checked) retires them: the parts in riders ride on it.  Returns 0 or
 * the post error.
 */
static int post_terminator(struct rx_qp *q, struct rx_part *riders,
			   uint32_t retire)
{
	struct rx_term *t = calloc(1, sizeof(*t));
	struct ibv_send_wr *bad;
	struct rx_part *r;
	int ret;

	if (!t)
		return -ENOMEM;
	t->q = q;
	t->riders = riders;
	t->retire = retire + 1;
	t->wr.wr_id = rx_wr_id(t, RX_TAG_TERM, q->gen);
	t->wr.opcode = IBV_WR_RDMA_WRITE;
	t->wr.send_flags = IBV_SEND_SIGNALED;
	ret = ibv_post_send(q->qp, &t->wr, &bad);
	if (ret) {
		free(t);
		return ret > 0 ? -ret : ret;
	}
	q->sq_used++;
	rx_list_add_tail(&q->terms, &t->node);
	for (r = riders; r; r = r->rider_next)
		r->req->signals++;
	return 0;
}

/*
 * Lock held: forget the terminators of a QP whose completions will no
 * longer be looked at (its generation moved on or its QP is gone, so
 * send_wc_current() drops them).  Their riders are not touched: the
 * requests were failed by the abort, or are the agent's teardown's.
 */
void rx_qp_drop_terms(struct rx_qp *q)
{
	while (!rx_list_empty(&q->terms)) {
		struct rx_term *t = rx_container_of(q->terms.next,
						    struct rx_term, node);

		rx_list_del(&t->node);
		free(t);
	}
}

/*
 * Lock held: the doorbell took the chain only up to bad (the provider
 * refused that WR; NULL: none was taken).  What went out is accounted for
 * as if posted alone, and terminated (post_terminator()) so every WR that
 * went out completes; the request whose WR was refused fails with err; the
 * parts after it never reached the send queue and stay in the backlog,
 * posted by the next flush.  The QP and the other requests live on.  Only
 * if the terminator cannot be posted either is the QP unusable: the peer
 * fails and the terminator is posted to the QP in error, where it is
 * flushed after everything before it; should even that be refused, the
 * requests whose WRs went out unterminated stay in flight (until the
 * agent is destroyed) rather than be reported done while a flush may
 * still name them.
 */
static void chain_failed(struct rx_qp *q, struct rx_part *last,
			 struct ibv_send_wr *bad, int err)
{
	struct rx_part *pending = NULL, **ptail = &pending;
	struct rx_part *victim = NULL;
	struct rx_list *n, *next;
	uint32_t tail = 0;
	bool posting = bad != NULL;

	for (n = q->backlog.next; n != &q->backlog; n = next) {
		struct rx_part *part = backlog_part(n);
		uint32_t i, end = part->cursor;
		bool done = part == last;

		next = n->next;
		part->wrs[part->seg_end - 1].next = part->seg_next;
		if (posting) {
			for (i = part->cursor; i < part->seg_end; i++) {
				if (&part->wrs[i] == bad) {
					posting = false;
					victim = part;
					break;
				}
				q->sq_used++;
				chain_posted(part, i);
				if (part->wrs[i].send_flags & IBV_SEND_SIGNALED) {
					/* it carries what came before */
					pending = NULL;
					ptail = &pending;
					tail = 0;
				} else {
					tail++;
				}
			}
			end = i;
		} else if (!victim) {
			victim = part;	/* nothing went out: blame the head */
		}
		/* the riders of slots that did not go out are not counted */
		for (i = end; i < part->seg_end; i++)
			part->slots[i].riders = NULL;
		if (end > part->cursor &&
		    !(part->wrs[end - 1].send_flags & IBV_SEND_SIGNALED)) {
			part->rider_next = NULL;
			*ptail = part;
			ptail = &part->rider_next;
		}
		part->cursor = end;
		if (part == victim) {
			part_dequeue(part);
			req_set_error(part->req, err, -1);
		} else if (part->cursor == part->n) {
			part_dequeue(part);
		}
		if (done)
			break;
	}
	if (pending && post_terminator(q, pending, tail)) {
		/*
		 * The QP takes nothing: fail the peer, which moves it to the
		 * error state, where a WR posted after the others completes
		 * (flushed) after all of them.  If even that is refused, keep
		 * the requests in flight: see above.
		 */
		rx_peer_fail(q->peer, err);
		if (post_terminator(q, pending, tail)) {
			struct rx_part *r;

			for (r = pending; r; r = r->rider_next)
				r->req->signals++;
		}
	}
	if (victim)
		req_check_done(victim->req);
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
 * refused part of it (handed to chain_failed() with the state the general
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
		chain_failed(q, part, bad, ret);
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
		chain_failed(q, part, bad, ret > 0 ? -ret : ret);
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
 * request as there (chain_failed(); one WR: none went out).  Returns
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
		chain_failed(q, part, bad, ret > 0 ? -ret : ret);
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

/* The next array of a request's block at *off, 16-byte aligned; *ok
 * turns false if the size overflows. */
static size_t req_take(size_t *off, size_t n, size_t size, bool *ok)
{
	size_t at = (*off + 15) & ~(size_t)15, bytes;

	if (at < *off || __builtin_mul_overflow(n, size, &bytes) ||
	    __builtin_add_overflow(at, bytes, off))
		*ok = false;
	return at;
}

/*
 * A request is one block: the struct with nparts parts, then its arrays,
 * the 8-byte ones first.  A READ of one piece takes about 740 bytes where
 * a struct with room for 16 parts and seven arrays of their own took 2.2
 * KB in eight allocations: a window of 128 such requests, all of it
 * touched as they are reposted, spans about 23 pages instead of 69.
 */
static int req_alloc(struct rdmaxfer_req **reqp, size_t nlocal, uint32_t nwr,
		     unsigned int nparts)
{
	size_t off = sizeof(struct rdmaxfer_req) +
		     nparts * sizeof(struct rx_part);
	size_t o_wrs, o_sges, o_slots, o_local, o_ents, o_wr_local, o_flags;
	struct rdmaxfer_req *req;
	bool ok = nparts <= RX_MAX_QPS;
	uint8_t *b;

	o_wrs = req_take(&off, nwr, sizeof(struct ibv_send_wr), &ok);
	o_sges = req_take(&off, nwr, sizeof(struct ibv_sge), &ok);
	o_slots = req_take(&off, nwr, sizeof(struct rx_slot), &ok);
	o_local = req_take(&off, nlocal, sizeof(struct rdmaxfer_iov), &ok);
	o_ents = req_take(&off, nlocal, sizeof(struct regcache_entry *), &ok);
	o_wr_local = req_take(&off, nwr, sizeof(uint32_t), &ok);
	o_flags = req_take(&off, nwr, sizeof(int), &ok);
	if (!ok)
		return -ENOMEM;
	b = calloc(1, off);
	if (!b)
		return -ENOMEM;
	req = (struct rdmaxfer_req *)b;
	req->wrs = (struct ibv_send_wr *)(b + o_wrs);
	req->sges = (struct ibv_sge *)(b + o_sges);
	req->slots = (struct rx_slot *)(b + o_slots);
	req->local = (struct rdmaxfer_iov *)(b + o_local);
	req->ents = (struct regcache_entry **)(b + o_ents);
	req->wr_local = (uint32_t *)(b + o_wr_local);
	req->base_flags = (int *)(b + o_flags);
	req->nlocal = nlocal;
	req->nwr = nwr;
	req->wc_status = -1;
	rx_list_init(&req->node);
	*reqp = req;
	return 0;
}

static void req_register(struct rdmaxfer_req *req)
{
	struct rdmaxfer_agent *agent = req->peer->agent;
	unsigned int i;

	for (i = 0; i < req->nparts; i++) {
		struct rx_part *p = &req->parts[i];
		uint32_t k;

		for (k = 0; k < p->n; k++) {
			p->slots[k].req = req;
			p->slots[k].qp = (uint16_t)p->qp;
			p->wrs[k].next = k + 1 < p->n ? &p->wrs[k + 1] : NULL;
		}
	}
	req->notif_slot.req = req;
	req->notif_part.req = req;
	req->notif_part.n = 1;
	req->notif_part.wrs = &req->notif_wr;
	req->notif_part.slots = &req->notif_slot;
	req->notif_part.base_flags = &req->notif_flags;
	rx_list_init(&req->notif_part.node);
	pthread_mutex_lock(&agent->lock);
	req->peer->nreqs++;
	rx_list_add_tail(&agent->reqs, &req->node);
	pthread_mutex_unlock(&agent->lock);
}

/* Each remote range [addr, addr + len) of a request against the peer's
 * exports (a no-op without a list). */
static int check_exports(struct rdmaxfer_peer *peer,
			 const struct rdmaxfer_desc *remote, size_t n)
{
	struct rdmaxfer_agent *agent = peer->agent;
	size_t i;
	int ret = 0;

	pthread_mutex_lock(&agent->lock);
	for (i = 0; i < n && !ret; i++)
		ret = rx_check_remote(peer, remote[i].addr, remote[i].len,
				      remote[i].rkey);
	pthread_mutex_unlock(&agent->lock);
	return ret;
}

RX_EXPORT
int rdmaxfer_xfer_prepare(struct rdmaxfer_peer *peer, enum rdmaxfer_op op,
			  const struct rdmaxfer_iov *local, size_t nlocal,
			  const struct rdmaxfer_desc *remote, size_t nremote,
			  const struct rdmaxfer_xfer_notif *notif,
			  struct rdmaxfer_req **reqp)
{
	struct rdmaxfer_agent *agent;
	struct rx_xfer_arrays arrays;
	struct rx_xfer_plan plan;
	struct rdmaxfer_req *req;
	unsigned int q;
	int ret;

	if (!peer || !reqp)
		return -EINVAL;
	agent = peer->agent;
	/* every length is bounded and every count checked here, before
	 * anything is allocated (xfer_plan.c) */
	ret = rx_xfer_plan_check(&plan, op, local, nlocal, remote, nremote,
				 peer->nqps, agent->info.max_msg_size,
				 agent->attr.stripe_threshold, notif != NULL);
	if (ret)
		return ret;
	ret = check_exports(peer, remote, nremote);
	if (ret)
		return ret;
	if (!plan.striped && !notif) {
		pthread_mutex_lock(&agent->lock);
		plan.fixed_qp = peer->rr++ % plan.nqps;
		pthread_mutex_unlock(&agent->lock);
	}
	ret = rx_xfer_plan_count(&plan, local, nlocal);
	if (ret)
		return ret;
	ret = req_alloc(&req, nlocal, plan.nwr, plan.nparts);
	if (ret)
		return ret;
	req->peer = peer;
	req->op = op;
	req->bytes = plan.total;
	memcpy(req->local, local, nlocal * sizeof(*local));

	arrays.wrs = req->wrs;
	arrays.sges = req->sges;
	arrays.base_flags = req->base_flags;
	arrays.wr_local = req->wr_local;
	rx_xfer_plan_build(&plan, op, local, remote, nlocal, notif, &arrays);
	if (notif && !plan.chained) {
		/* striped: sent after all the data, on QP 0 */
		req->notif_flags = 0;
		req->notif_deferred = true;
		rx_xfer_notif_wr(&req->notif_wr, notif->value, &remote[0]);
	}
	for (q = 0; q < plan.nqps; q++) {
		struct rx_part *p;

		if (!plan.count[q])
			continue;
		p = &req->parts[req->nparts++];
		p->req = req;
		p->qp = q;
		p->wrs = &req->wrs[plan.off[q]];
		p->slots = &req->slots[plan.off[q]];
		p->base_flags = &req->base_flags[plan.off[q]];
		p->n = plan.count[q];
		rx_list_init(&p->node);
	}
	req_register(req);
	*reqp = req;
	return 0;
}

RX_EXPORT
int rdmaxfer_atomic_prepare(struct rdmaxfer_peer *peer, enum rdmaxfer_op op,
			    const struct rdmaxfer_desc *remote,
			    uint64_t offset, uint64_t operand, uint64_t swap,
			    uint64_t *result, struct rdmaxfer_req **reqp)
{
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_req *req;
	struct ibv_send_wr *wr;
	uint64_t addr;
	int ret;

	if (!peer || !remote || !result || !reqp)
		return -EINVAL;
	if (op != RDMAXFER_OP_FADD && op != RDMAXFER_OP_CSWAP)
		return -EINVAL;
	ret = rx_check_remote_desc(remote);
	if (ret)
		return ret;
	if (offset > remote->len || remote->len - offset < 8)
		return -ERANGE;
	addr = remote->addr + offset;
	if ((addr & 7) || ((uintptr_t)result & 7))
		return -EINVAL;
	agent = peer->agent;
	pthread_mutex_lock(&agent->lock);
	ret = rx_check_remote(peer, addr, 8, remote->rkey);
	pthread_mutex_unlock(&agent->lock);
	if (ret)
		return ret;
	ret = req_alloc(&req, 1, 1, 1);
	if (ret)
		return ret;
	req->peer = peer;
	req->op = op;
	req->bytes = 8;
	req->result = result;
	req->local[0].addr = result;
	req->local[0].len = 8;
	wr = &req->wrs[0];
	req->sges[0].addr = (uintptr_t)result;
	req->sges[0].length = 8;
	wr->sg_list = &req->sges[0];
	wr->num_sge = 1;
	wr->opcode = op == RDMAXFER_OP_FADD ? IBV_WR_ATOMIC_FETCH_AND_ADD :
					      IBV_WR_ATOMIC_CMP_AND_SWP;
	wr->wr.atomic.remote_addr = addr;
	wr->wr.atomic.rkey = remote->rkey;
	wr->wr.atomic.compare_add = operand;
	wr->wr.atomic.swap = swap;
	pthread_mutex_lock(&agent->lock);
	req->parts[0].qp = peer->rr++ % peer->nqps;
	pthread_mutex_unlock(&agent->lock);
	req->parts[0].req = req;
	req->parts[0].wrs = req->wrs;
	req->parts[0].slots = req->slots;
	req->parts[0].base_flags = req->base_flags;
	req->parts[0].n = 1;
	rx_list_init(&req->parts[0].node);
	req->nparts = 1;
	req_register(req);
	*reqp = req;
	return 0;
}

RX_EXPORT
int rdmaxfer_atomic_set(struct rdmaxfer_req *req, uint64_t operand,
			uint64_t swap)
{
	if (!req || (req->op != RDMAXFER_OP_FADD &&
		     req->op != RDMAXFER_OP_CSWAP))
		return -EINVAL;
	if (req->state == RX_REQ_ACTIVE)
		return -EBUSY;
	req->wrs[0].wr.atomic.compare_add = operand;
	req->wrs[0].wr.atomic.swap = swap;
	return 0;
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

	if (req->state == RX_REQ_ACTIVE)
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
	if (req->file)
		return rx_file_req_post(req);
	peer = req->peer;
	agent = peer->agent;
	regs_current = req_regs_current(req);
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
		if (req->file) {
			/* its own engine and doorbell (io_uring) */
			rx_data_unlock(agent);
			ret = rx_file_req_post(req);
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

/* ring.c: a prepared write's immediate, changed before it is posted
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
	if (req->file)
		return rx_file_req_test(req);
	agent = req->peer->agent;
	rx_data_lock(agent);
	rx_ring_deferred(agent);
	if (req->state == RX_REQ_ACTIVE && rx_self_progress(agent))
		progress_data_locked(agent);
	ret = req_result(req);
	rx_data_unlock(agent);
	if ((agent->notifs.count && agent->notif_fn) ||
	    __atomic_load_n(&agent->ring_cbs, __ATOMIC_RELAXED))
		rx_deliver_notifs(agent);
	return ret;
}

RX_EXPORT
int rdmaxfer_req_wait(struct rdmaxfer_req *req, int timeout_ms)
{
	struct rdmaxfer_agent *agent;
	int64_t deadline = rx_deadline(timeout_ms);
	int ret;

	if (!req)
		return -EINVAL;
	if (req->file)
		return rx_file_req_wait(req, timeout_ms);
	agent = req->peer->agent;
	pthread_mutex_lock(&agent->lock);
	rx_ring_deferred(agent);
	for (;;) {
		if (req->state == RX_REQ_ACTIVE && rx_self_progress(agent))
			rx_progress_locked(agent);
		if (req->state != RX_REQ_ACTIVE) {
			ret = req_result(req);
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

/* Free a request's memory (lock not needed: the agent is going away, or
 * the request was unlinked).  Not through req->peer: agent teardown
 * frees the peers first. */
void rx_req_release(struct rdmaxfer_agent *agent, struct rdmaxfer_req *req)
{
	struct regcache *cache = agent->cache;
	size_t i;

	rx_list_del(&req->node);
	if (req->file)
		rx_file_req_release(req);
	for (i = 0; i < req->nlocal; i++)
		if (req->ents[i])
			regcache_put(cache, req->ents[i]);
	/* one block (req_alloc()), or a file request's struct alone */
	free(req);
}

RX_EXPORT
int rdmaxfer_req_free(struct rdmaxfer_req *req)
{
	struct rdmaxfer_agent *agent;

	if (!req)
		return -EINVAL;
	if (req->file)
		return rx_file_req_free(req);
	agent = req->peer->agent;
	pthread_mutex_lock(&agent->lock);
	if (req->state == RX_REQ_ACTIVE) {
		pthread_mutex_unlock(&agent->lock);
		return -EBUSY;
	}
	req->peer->nreqs--;
	rx_list_del(&req->node);
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
	if (req->file)
		return rx_file_req_strerror(req);
	if (req->wc_status > 0)
		return ibv_wc_status_str((enum ibv_wc_status)req->wc_status);
	return rdmaxfer_strerror(req_result(req));
}
