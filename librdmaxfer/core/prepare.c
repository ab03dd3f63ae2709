// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * prepare.c - READ/WRITE lists into one prepared request.
 *
 * Preparing builds every work request once: pairs are split at the port's
 * max message size (and at 1 GiB, the reach of one scatter entry), large
 * requests are striped over the peer's QPs, and the WRs of each QP form
 * one linked list (the arithmetic, bounded, is xfer_plan.c's).  A request
 * is one block (rx_req_alloc()), linked on its agent until freed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
int rx_req_alloc(struct rdmaxfer_req **reqp, size_t nlocal, uint32_t nwr,
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

void rx_req_register(struct rdmaxfer_req *req)
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
	ret = rx_req_alloc(&req, nlocal, plan.nwr, plan.nparts);
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
	rx_req_register(req);
	*reqp = req;
	return 0;
}
