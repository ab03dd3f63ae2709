// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * xfer_fail.c - a doorbell the provider refused partway, and a QP's
 * backlog failed: cold paths of the data path (xfer.c), which run only
 * when ibv_post_send() refuses something or a peer fails.  A terminator
 * (a signalled zero-length WRITE) makes every WR that did go out
 * complete; its completion is handled in xfer.c, with the others.
 */
#include <errno.h>
#include <stdlib.h>

#include "xfer.h"

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
void rx_chain_failed(struct rx_qp *q, struct rx_part *last,
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
