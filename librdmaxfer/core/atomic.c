// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * atomic.c - prepared atomics: fetch-and-add and compare-and-swap on one
 * 8-byte word of a peer's memory, posted and completed as any request.
 *
 * UCX's other 64-bit atomics (swap, and, or, xor) have no verbs
 * operation: ibv_wr_opcode has FETCH_AND_ADD and CMP_AND_SWP only, and
 * neither ibv_query_device_ex() nor mlx5dv_query_device() (rdma-core 44)
 * reports masked atomics, which mlx5dv.h names only as raw WQE opcodes.
 * So no device reached through verbs has them: rdmaxfer_atomic_supported()
 * says -EOPNOTSUPP, and so does their prepare.  They are not emulated
 * with a compare-and-swap loop: that costs a round trip per retry, so a
 * prepared request would post several times and complete after an
 * unbounded number of them under contention.  32-bit atomics: verbs has
 * none.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

RX_EXPORT
int rdmaxfer_atomic_supported(struct rdmaxfer_agent *agent,
			      enum rdmaxfer_op op)
{
	if (!agent)
		return -EINVAL;
	switch (op) {
	case RDMAXFER_OP_FADD:
	case RDMAXFER_OP_CSWAP:
		return agent->dev_attr.atomic_cap == IBV_ATOMIC_NONE ?
		       -EOPNOTSUPP : 0;
	case RDMAXFER_OP_SWAP:
	case RDMAXFER_OP_AND:
	case RDMAXFER_OP_OR:
	case RDMAXFER_OP_XOR:
		return -EOPNOTSUPP;	/* no verbs operation (above) */
	default:
		return -EINVAL;
	}
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
	ret = rdmaxfer_atomic_supported(peer->agent, op);
	if (ret)
		return ret;
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
	ret = rx_req_alloc(&req, 1, 1, 1);
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
	rx_req_register(req);
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
