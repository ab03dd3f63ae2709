// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * loopback.c - a loopback RC QP on the agent's port and one work request
 * posted on it and waited for: what the start-up self-tests of the memory
 * kinds (mem/odp_selftest.c, mem/devmem.c) check a device with, before
 * the agent trusts it with a peer's data.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define LOOPBACK_WAIT_NS	(2LL * 1000 * 1000 * 1000)

/* q connected to dqpn on the agent's own port (both on its PD). */
int rx_loopback_connect(struct rdmaxfer_agent *agent, struct ibv_qp *q,
			uint32_t dqpn)
{
	struct ibv_qp_attr a;
	enum ibv_mtu mtu = agent->port_attr.active_mtu;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = agent->info.port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	/* at most 1024: the self-tests' transfers are then several packets */
	a.path_mtu = mtu < IBV_MTU_1024 ? mtu : IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = agent->info.port;
	if (agent->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET) {
		a.ah_attr.is_global = 1;
		memcpy(&a.ah_attr.grh.dgid, agent->info.gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)agent->info.gid_index;
		a.ah_attr.grh.hop_limit = 1;
	} else {
		a.ah_attr.dlid = agent->port_attr.lid;
	}
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 12;
	a.retry_cnt = 3;
	a.rnr_retry = 3;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return -errno;
	return 0;
}

/* Post one signaled work request on qp and wait for it: 0 or -errno. */
int rx_loopback_post(struct ibv_qp *qp, struct ibv_cq *cq,
		     struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int ret;

	wr->send_flags = IBV_SEND_SIGNALED;
	ret = ibv_post_send(qp, wr, &bad);
	if (ret)
		return -ret;
	return rx_loopback_wait(cq);
}

/* The one completion the caller's request will give on cq, waited for
 * (LOOPBACK_WAIT_NS at most): its status as 0 or -errno. */
int rx_loopback_wait(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int64_t t0 = rx_now_ns();
	int n;

	do {
		n = ibv_poll_cq(cq, 1, &wc);
	} while (n == 0 && rx_now_ns() - t0 < LOOPBACK_WAIT_NS);
	if (n < 0)
		return -EIO;
	if (n == 0)
		return -ETIMEDOUT;
	return rx_wc_errno(wc.status);
}
