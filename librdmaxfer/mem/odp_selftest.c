// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * odp_selftest.c - the agent's ODP self-test: each operation the device
 * offers for explicit ODP, once, on a loopback RC QP pair at MTU 1024,
 * with transfers that start mid-page and cross a page boundary, the data
 * checked byte by byte.  Why it exists, and what auto leaves out when an
 * operation fails it, is at the top of odp.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/core.h"
#include "odp.h"

#define ST_LEN		2048	/* two packets at MTU 1024 */

struct selftest {
	struct rdmaxfer_agent *agent;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	uint8_t *pin, *odp;		/* 2 pages each */
	struct ibv_mr *pin_mr, *odp_mr;
	size_t psz;
};

static uint8_t st_pat(size_t i, unsigned int seed)
{
	return (uint8_t)((i * 131 + seed * 7 + (i >> 9)) ^ seed);
}

static int st_rdma(struct selftest *t, enum ibv_wr_opcode op, void *laddr,
		   uint32_t lkey, void *raddr, uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)laddr, len, lkey };
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = rkey;
	return rx_loopback_post(t->qp[0], t->cq, &wr);
}

/* First wrong byte of got against the pattern, or -1. */
static long st_first_bad(const uint8_t *got, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (got[i] != st_pat(i, seed))
			return (long)i;
	return -1;
}

static void st_fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = st_pat(i, seed);
}

/*
 * One operation: 1 if its data came out right, 0 if the data was wrong,
 * -1 if it did not complete (the QPs are then in error).  Each starts
 * mid-page (a packet at a non-zero page offset) and the WRITE crosses into
 * the second page.  why gets the finding.
 */
static int st_case(struct selftest *t, uint32_t op, char *why, size_t wlen)
{
	size_t off;
	long bad;
	int ret;

	switch (op) {
	case RDMAXFER_ODP_OP_REMOTE_WRITE:
		off = t->psz - ST_LEN / 2;	/* crosses the page boundary */
		st_fill(t->pin, ST_LEN, 1);
		memset(t->odp, 0, 2 * t->psz);
		ret = st_rdma(t, IBV_WR_RDMA_WRITE, t->pin, t->pin_mr->lkey,
			      t->odp + off, t->odp_mr->rkey, ST_LEN);
		bad = ret ? 0 : st_first_bad(t->odp + off, ST_LEN, 1);
		break;
	case RDMAXFER_ODP_OP_REMOTE_READ:
		off = 1024;
		st_fill(t->odp + off, ST_LEN, 2);
		memset(t->pin, 0, ST_LEN);
		ret = st_rdma(t, IBV_WR_RDMA_READ, t->pin, t->pin_mr->lkey,
			      t->odp + off, t->odp_mr->rkey, ST_LEN);
		bad = ret ? 0 : st_first_bad(t->pin, ST_LEN, 2);
		break;
	case RDMAXFER_ODP_OP_LOCAL:
		off = 512;
		st_fill(t->odp + off, ST_LEN, 3);
		memset(t->pin, 0, ST_LEN);
		ret = st_rdma(t, IBV_WR_RDMA_WRITE, t->odp + off,
			      t->odp_mr->lkey, t->pin, t->pin_mr->rkey,
			      ST_LEN);
		bad = ret ? 0 : st_first_bad(t->pin, ST_LEN, 3);
		break;
	case RDMAXFER_ODP_OP_REMOTE_ATOMIC: {
		struct ibv_sge sge = { (uintptr_t)t->pin, 8, t->pin_mr->lkey };
		struct ibv_send_wr wr;
		uint64_t *word = (uint64_t *)(t->odp + t->psz + 8);

		off = t->psz + 8;
		*word = 5;
		memset(t->pin, 0, 8);
		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = (uintptr_t)word;
		wr.wr.atomic.rkey = t->odp_mr->rkey;
		wr.wr.atomic.compare_add = 7;
		ret = rx_loopback_post(t->qp[0], t->cq, &wr);
		bad = ret ? 0 : (*word == 12 && *(uint64_t *)t->pin == 5) ?
				-1 : 0;
		break;
	}
	default:
		return -1;
	}
	if (ret) {
		snprintf(why, wlen, "%s: %s", rdmaxfer_odp_op_name(op),
			 strerror(-ret));
		return -1;
	}
	if (bad >= 0) {
		snprintf(why, wlen,
			 "%s: byte %ld of %d wrong (page offset %zu)",
			 rdmaxfer_odp_op_name(op), bad,
			 op == RDMAXFER_ODP_OP_REMOTE_ATOMIC ? 8 : ST_LEN,
			 off % t->psz);
		return 0;
	}
	return 1;
}

/* Run the self-test on the agent's device; fills caps->bad_ops etc. */
void rx_odp_selftest(struct rdmaxfer_agent *agent)
{
	struct rdmaxfer_odp_caps *caps = &rx_odp_of(agent)->caps;
	struct ibv_qp_init_attr qa;
	struct selftest t;
	char why[RDMAXFER_ODP_MSG_MAX] = "";
	const char *dev = agent->info.device;
	size_t i;
	int ret;

	memset(&t, 0, sizeof(t));
	t.agent = agent;
	t.psz = (size_t)sysconf(_SC_PAGESIZE);
	t.pin = mmap(NULL, 4 * t.psz, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t.pin == MAP_FAILED) {
		t.pin = NULL;
		ret = -errno;
		goto fail;
	}
	t.odp = t.pin + 2 * t.psz;
	ret = -ENOMEM;
	t.cq = ibv_create_cq(agent->ctx, 4, NULL, NULL, 0);
	if (!t.cq)
		goto fail;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = t.cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	t.qp[0] = ibv_create_qp(agent->pd, &qa);
	t.qp[1] = ibv_create_qp(agent->pd, &qa);
	if (!t.qp[0] || !t.qp[1])
		goto fail;
	ret = rx_loopback_connect(agent, t.qp[0], t.qp[1]->qp_num);
	if (!ret)
		ret = rx_loopback_connect(agent, t.qp[1], t.qp[0]->qp_num);
	if (ret)
		goto fail;
	t.pin_mr = ibv_reg_mr(agent->pd, t.pin, 2 * t.psz,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ);
	t.odp_mr = ibv_reg_mr(agent->pd, t.odp, 2 * t.psz,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_ATOMIC |
			      IBV_ACCESS_ON_DEMAND);
	if (!t.pin_mr || !t.odp_mr) {
		ret = errno ? -errno : -ENOMEM;
		goto fail;
	}
	/* prefetch support, probed on a real ODP MR */
	{
		struct ibv_sge sge = { (uintptr_t)t.odp, (uint32_t)t.psz,
				       t.odp_mr->lkey };

		caps->prefetch = ibv_advise_mr(agent->pd,
					       IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
					       IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) ?
				 RDMAXFER_PREFETCH_MADVISE :
				 RDMAXFER_PREFETCH_ADVISE_MR;
	}
	for (i = 0; i < RX_ARRAY_SIZE(rx_odp_op_caps); i++) {
		uint32_t op = rx_odp_op_caps[i].op;
		size_t used = strlen(why);

		if (!(caps->device_ops & op))
			continue;
		if (used && used + 3 < sizeof(why)) {
			strcat(why, "; ");
			used += 2;
		}
		ret = st_case(&t, op, why + used, sizeof(why) - used);
		if (ret > 0) {
			if (used)
				why[used - 2] = '\0';
			continue;
		}
		caps->bad_ops |= op;
		if (ret < 0) {
			/* the QPs are in error: nothing later is verified,
			 * and auto does not trust what it could not test */
			for (i++; i < RX_ARRAY_SIZE(rx_odp_op_caps); i++)
				caps->bad_ops |= caps->device_ops &
						 rx_odp_op_caps[i].op;
			break;
		}
	}
	caps->selftest = caps->bad_ops ? RDMAXFER_ODP_SELFTEST_CORRUPT :
					 RDMAXFER_ODP_SELFTEST_PASSED;
	if (caps->bad_ops)
		snprintf(caps->selftest_msg, sizeof(caps->selftest_msg),
			 "%s: ODP self-test failed: %s", dev, why);
	else
		snprintf(caps->selftest_msg, sizeof(caps->selftest_msg),
			 "%s: ODP self-test passed", dev);
	goto out;
fail:
	/* nothing verified: auto does not trust what it could not test */
	caps->bad_ops = caps->device_ops;
	caps->selftest = RDMAXFER_ODP_SELFTEST_CORRUPT;
	snprintf(caps->selftest_msg, sizeof(caps->selftest_msg),
		 "%s: ODP self-test could not run: %s", dev, strerror(-ret));
out:
	if (t.odp_mr)
		ibv_dereg_mr(t.odp_mr);
	if (t.pin_mr)
		ibv_dereg_mr(t.pin_mr);
	for (i = 0; i < 2; i++)
		if (t.qp[i])
			ibv_destroy_qp(t.qp[i]);
	if (t.cq)
		ibv_destroy_cq(t.cq);
	if (t.pin)
		munmap(t.pin, 4 * t.psz);
}
