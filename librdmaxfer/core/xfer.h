/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * xfer.h - what the data path (xfer.c) and its failure paths
 * (xfer_fail.c) share of a request's bookkeeping: static inline, so the
 * data path compiles exactly as when they were one file.
 */
#ifndef RDMAXFER_XFER_H
#define RDMAXFER_XFER_H

#include "internal.h"

static inline void req_set_error(struct rdmaxfer_req *req, int err,
				 int wc_status)
{
	/* keep the first cause; a flush is only collateral */
	if (req->err && req->wc_status != IBV_WC_WR_FLUSH_ERR)
		return;
	if (req->err && wc_status == IBV_WC_WR_FLUSH_ERR)
		return;
	req->err = err;
	req->wc_status = wc_status;
}

static inline void enqueue_part(struct rx_part *part)
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
	if (req->cb)
		rx_req_cb_due(req);
}

static inline void part_dequeue(struct rx_part *part)
{
	rx_list_del(&part->node);
	part->req->unposted--;
}

static inline void qp_undefer(struct rx_qp *q)
{
	q->deferred = false;
	rx_list_del(&q->defer_node);
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

#endif /* RDMAXFER_XFER_H */
