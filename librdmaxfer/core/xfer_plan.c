// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * xfer_plan.c - the arithmetic of a prepared transfer: how many bytes,
 * how many work requests on which QP, and the work requests themselves.
 *
 * Everything here is computed from lengths the caller passed and, through
 * the descriptors of a metadata blob, lengths a peer sent: a descriptor
 * of 2^62 bytes is 2^32 pieces of 1 GiB, which once wrapped a 32-bit
 * count to 0, so the request was allocated for no work request and filled
 * past its end.  So every count and size is bounded before it is used and
 * before anything is allocated: a descriptor longer than any registration
 * can be (RDMAXFER_DESC_MAX_LEN) is refused with -ERANGE, lengths whose
 * sum does not fit 64 bits with -EOVERFLOW, and a request of more than
 * RDMAXFER_XFER_MAX_WRS work requests with -E2BIG; striping is counted in
 * closed form, not one piece at a time.
 *
 * No verbs calls (only the work request layout of the verbs header): the
 * host tests and the fuzzer (tests/fuzz_xfer.c) build this file on its
 * own; prepare.c allocates what the plan says, xfer.c posts what it built.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#include "internal.h"

/* a striped request's pieces are not cut smaller than this */
#define STRIPE_MIN_PIECE	4096

/* ceil(a / b) without the overflow of (a + b - 1) / b */
static inline uint64_t div_up(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/*
 * What every remote descriptor must be, checked before anything is
 * posted: a kind we serve, a length no registration exceeds, and a range
 * that does not wrap.  A range the peer refuses would fail at the
 * responder and take the QP, and every request on it, down with it.
 */
int rx_check_remote_desc(const struct rdmaxfer_desc *d)
{
	/* every kind is targeted like pinned memory, by rkey and address;
	 * a zero-based device region's addresses start at 0 */
	if (!rx_desc_kind_valid(d->kind))
		return -EINVAL;
	if (!d->len || d->len > RDMAXFER_DESC_MAX_LEN ||
	    d->addr + d->len < d->addr)
		return -ERANGE;
	return 0;
}

int rx_xfer_plan_check(struct rx_xfer_plan *p, enum rdmaxfer_op op,
		       const struct rdmaxfer_iov *local, size_t nlocal,
		       const struct rdmaxfer_desc *remote, size_t nremote,
		       unsigned int nqps, uint64_t max_msg_size,
		       uint64_t stripe_threshold, bool notif)
{
	uint64_t maxp;
	size_t i;
	int ret;

	memset(p, 0, sizeof(*p));
	if (!local || !remote || !nlocal || nlocal != nremote || !nqps ||
	    nqps > RX_MAX_QPS)
		return -EINVAL;
	if (op != RDMAXFER_OP_READ && op != RDMAXFER_OP_WRITE)
		return -EINVAL;
	/* every pair is one work request at least: no loop below runs
	 * more often than the bound allows */
	if (nlocal > RDMAXFER_XFER_MAX_WRS)
		return -E2BIG;
	for (i = 0; i < nlocal; i++) {
		ret = rx_check_remote_desc(&remote[i]);
		if (ret)
			return ret;
		if (!local[i].addr || local[i].len != remote[i].len ||
		    (uintptr_t)local[i].addr + local[i].len <
		    (uintptr_t)local[i].addr)
			return -EINVAL;
		if (__builtin_add_overflow(p->total, local[i].len, &p->total))
			return -EOVERFLOW;
	}
	p->nqps = nqps;
	p->striped = nqps > 1 && p->total >= stripe_threshold;
	maxp = max_msg_size ? max_msg_size : RX_MAX_PIECE;
	if (maxp > RX_MAX_PIECE)
		maxp = RX_MAX_PIECE;
	p->piece = maxp;
	if (p->striped) {
		uint64_t share = div_up(p->total, nqps);

		if (share < STRIPE_MIN_PIECE)
			share = STRIPE_MIN_PIECE;
		if (share < p->piece)
			p->piece = share;
	}
	p->chained = notif && !p->striped;
	/* a WRITE on one QP: its last piece carries the immediate (one
	 * packet and one WR less per notified transfer than a zero-length
	 * WRITE with immediate after it) */
	p->merged = p->chained && op == RDMAXFER_OP_WRITE;
	return 0;
}

int rx_xfer_plan_count(struct rx_xfer_plan *p, const struct rdmaxfer_iov *local,
		       size_t nlocal)
{
	uint64_t count[RX_MAX_QPS] = { 0 }, pieces = 0, nwr = 0;
	unsigned int q;
	size_t i;

	if (p->fixed_qp >= p->nqps)
		return -EINVAL;
	for (i = 0; i < nlocal; i++) {
		pieces += div_up(local[i].len, p->piece);
		/* each term is at most 2^57 (RDMAXFER_DESC_MAX_LEN): the sum
		 * cannot wrap before it passes the bound */
		if (pieces > RDMAXFER_XFER_MAX_WRS)
			return -E2BIG;
	}
	if (p->striped) {
		/* piece j of the request goes to QP j % nqps */
		for (q = 0; q < p->nqps; q++)
			count[q] = pieces / p->nqps + (q < pieces % p->nqps);
	} else {
		count[p->fixed_qp] = pieces;
	}
	if (p->chained && !p->merged)
		count[p->fixed_qp]++;
	for (q = 0; q < p->nqps; q++)
		nwr += count[q];
	if (nwr > RDMAXFER_XFER_MAX_WRS)
		return -E2BIG;
	p->nwr = 0;
	p->nparts = 0;
	for (q = 0; q < p->nqps; q++) {
		p->count[q] = (uint32_t)count[q];
		p->off[q] = p->nwr;
		p->fill[q] = p->nwr;
		p->nwr += p->count[q];
		p->nparts += p->count[q] != 0;
	}
	return 0;
}

void rx_xfer_plan_build(struct rx_xfer_plan *p, enum rdmaxfer_op op,
			const struct rdmaxfer_iov *local,
			const struct rdmaxfer_desc *remote, size_t nlocal,
			const struct rdmaxfer_xfer_notif *notif,
			const struct rx_xfer_arrays *a)
{
	unsigned int q, rr = 0;
	size_t i;

	for (i = 0; i < nlocal; i++) {
		uint64_t done = 0;

		while (done < local[i].len) {
			uint64_t len = local[i].len - done;
			struct ibv_send_wr *wr;
			uint32_t w;

			if (len > p->piece)
				len = p->piece;
			q = p->striped ? rr : p->fixed_qp;
			rr = rr + 1 == p->nqps ? 0 : rr + 1;
			w = p->fill[q]++;
			wr = &a->wrs[w];
			a->sges[w].addr = (uintptr_t)local[i].addr + done;
			a->sges[w].length = (uint32_t)len;
			wr->sg_list = &a->sges[w];
			wr->num_sge = 1;
			wr->opcode = op == RDMAXFER_OP_WRITE ?
				     IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
			wr->wr.rdma.remote_addr = remote[i].addr + done;
			wr->wr.rdma.rkey = remote[i].rkey;
			/* a candidate: rx_flush_backlog() inlines it if the
			 * QP it goes out on was granted that much */
			if (op == RDMAXFER_OP_WRITE)
				a->base_flags[w] = IBV_SEND_INLINE;
			a->wr_local[w] = (uint32_t)i;
			done += len;
		}
	}
	if (p->merged) {
		struct ibv_send_wr *wr = &a->wrs[p->fill[p->fixed_qp] - 1];

		wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr->imm_data = htonl(notif->value);
	} else if (p->chained) {
		uint32_t w = p->fill[p->fixed_qp]++;
		struct ibv_send_wr *wr = &a->wrs[w];

		/* READs first: the immediate must not overtake their data */
		a->base_flags[w] = op == RDMAXFER_OP_READ ? IBV_SEND_FENCE : 0;
		a->wr_local[w] = UINT32_MAX;
		rx_xfer_notif_wr(wr, notif->value, &remote[0]);
	}
}

/* The zero-length WRITE with immediate of a notification after the data:
 * the address and key are not checked by the responder. */
void rx_xfer_notif_wr(struct ibv_send_wr *wr, uint32_t value,
		      const struct rdmaxfer_desc *remote)
{
	wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr->num_sge = 0;
	wr->imm_data = htonl(value);
	wr->wr.rdma.remote_addr = remote->addr;
	wr->wr.rdma.rkey = remote->rkey;
}
