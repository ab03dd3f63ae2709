// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * hostile_raw.c - the hostile peer of test_rdmaxfer_hostile in raw verbs
 * and librdmacm: an RC QP of its own connected with whatever private data
 * the test builds (hostile.h), work requests posted as the test says
 * (SENDs with or without immediate, zero-length WRITEs with immediate,
 * RDMA WRITE, READ and atomics at any address and key), completions and
 * CM events seen as they come.  Nothing of librdmaxfer runs on this side.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#define WAIT_MS		20000

#include "rdmaxfer_test_util.h"
#include "hostile.h"

/* One CM event of r's channel within ms: its type (0 on timeout); a
 * REJECTED's private data is kept, DISCONNECTED noted. */
int raw_event(struct raw *r, int ms)
{
	struct pollfd pfd = { .fd = r->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int type;

	if (poll(&pfd, 1, ms) != 1 || rdma_get_cm_event(r->ch, &ev))
		return 0;
	type = ev->event;
	if (type == RDMA_CM_EVENT_REJECTED) {
		r->rej_len = ev->param.conn.private_data_len < sizeof(r->rej) ?
			     ev->param.conn.private_data_len : sizeof(r->rej);
		if (ev->param.conn.private_data)
			memcpy(r->rej, ev->param.conn.private_data, r->rej_len);
	}
	if (type == RDMA_CM_EVENT_DISCONNECTED)
		r->disconnected = true;
	rdma_ack_cm_event(ev);
	return type;
}

void raw_close(struct raw *r)
{
	if (r->id && r->id->qp)
		rdma_destroy_qp(r->id);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->id)
		rdma_destroy_id(r->id);
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/*
 * Connect a raw RC QP to port with private data pd (len bytes): 0 when
 * established, -ECONNREFUSED when rejected (the REJ's data in r->rej),
 * else -errno.  Finite transport retries: a responder that went away
 * ends our sends; infinite RNR retries: a receiver out of buffers makes
 * them wait.
 */
int raw_open(struct raw *r, const char *addr, uint16_t port, const void *pd,
	     uint8_t len)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_conn_param cp = { 0 };
	struct ibv_qp_init_attr qa = { 0 };
	int ev;

	memset(r, 0, sizeof(*r));
	sin.sin_port = htons(port);
	inet_pton(AF_INET, addr, &sin.sin_addr);
	r->ch = rdma_create_event_channel();
	if (!r->ch || rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP))
		goto fail;
	if (rdma_resolve_addr(r->id, NULL, (struct sockaddr *)&sin, 2000) ||
	    raw_event(r, 5000) != RDMA_CM_EVENT_ADDR_RESOLVED ||
	    rdma_resolve_route(r->id, 2000) ||
	    raw_event(r, 5000) != RDMA_CM_EVENT_ROUTE_RESOLVED)
		goto fail;
	r->cq = ibv_create_cq(r->id->verbs, 2 * RAW_SQ, NULL, NULL, 0);
	if (!r->cq)
		goto fail;
	qa.send_cq = r->cq;
	qa.recv_cq = r->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = RAW_SQ;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	if (rdma_create_qp(r->id, NULL, &qa))
		goto fail;
	r->buf = aligned_alloc(4096, RAW_BUF);
	if (!r->buf)
		goto fail;
	memset(r->buf, 0x33, RAW_BUF);
	r->mr = ibv_reg_mr(r->id->pd, r->buf, RAW_BUF,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!r->mr)
		goto fail;
	cp.private_data = pd;
	cp.private_data_len = len;
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 6;
	cp.rnr_retry_count = 7;
	if (rdma_connect(r->id, &cp))
		goto fail;
	ev = raw_event(r, 10000);
	if (ev == RDMA_CM_EVENT_ESTABLISHED)
		return 0;
	return ev == RDMA_CM_EVENT_REJECTED ? -ECONNREFUSED :
	       ev ? -ECONNABORTED : -ETIMEDOUT;
fail:
	return errno ? -errno : -EIO;
}

/* Post one WR from r's buffer; n completions then come back. */
int raw_post(struct raw *r, enum ibv_wr_opcode op, uint32_t imm,
		    uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)r->buf, len, r->mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	int ret;

	wr.opcode = op;
	wr.sg_list = len ? &sge : NULL;
	wr.num_sge = len ? 1 : 0;
	wr.imm_data = htonl(imm);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	ret = ibv_post_send(r->id->qp, &wr, &bad);
	if (!ret)
		r->outstanding++;
	return ret ? -ret : 0;
}

/* Wait up to ms for r's completions down to keep outstanding: 0, or
 * the first failed completion's status (positive), or -ETIMEDOUT. */
int raw_reap(struct raw *r, unsigned int keep, int ms)
{
	struct ibv_wc wc[16];
	double t0 = now_s();
	int n, i, status = 0;

	while (r->outstanding > keep) {
		n = ibv_poll_cq(r->cq, 16, wc);
		if (n < 0)
			return -EIO;
		for (i = 0; i < n; i++) {
			r->outstanding--;
			if (wc[i].status && !status)
				status = wc[i].status;
		}
		if (status)
			return status;
		if (!n) {
			if ((now_s() - t0) * 1000 > ms)
				return -ETIMEDOUT;
			usleep(500);
		}
	}
	return 0;
}

/* Wait up to ms for the target to disconnect r (a DREQ): true if it did. */
bool raw_wait_disconnect(struct raw *r, int ms)
{
	double t0 = now_s();

	while (!r->disconnected && (now_s() - t0) * 1000 < ms)
		raw_event(r, 100);
	return r->disconnected;
}
