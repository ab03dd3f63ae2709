// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * odp.c - the on-demand-paging memory kind: policy, capabilities, the
 * agent's self-test, the ODP registration cache, implicit ODP, prefetch.
 *
 * An explicit ODP MR pins nothing: the device faults pages in through the
 * kernel's own MMU notifier, and after munmap + mmap at the same address
 * it reaches the new pages.  So an RDMAXFER_MEM_ODP region needs no watch
 * for correctness.  It still goes through a cache (a second libregcache
 * instance, REGCACHE_ATTR_NO_PIN, not charged to RLIMIT_MEMLOCK) so that
 * registering the same range again is a hit.  libregcache has no "cache
 * but never watch" monitor, so that cache watches like the pinned one: an
 * unmap then only costs a re-registration at the next register, never
 * correctness.
 *
 * Whether ODP is used (RDMAXFER_ODP / attr.odp):
 * - off: never; an ODP region is pinned like HOST memory.
 * - auto (default): only for the operations (RDMAXFER_ODP_OP_*) that the
 *   device's RC ODP caps cover AND that the agent's self-test found
 *   correct; a region needing anything else is pinned, and
 *   rdmaxfer_agent_odp_caps() says why.
 * - on: ODP or an error naming the device and the missing capability.
 *
 * The self-test exists because of a measured fact: the Debian 7.3 kernel's
 * rxe (drivers/infiniband/sw/rxe/rxe_odp.c, __rxe_odp_mr_copy()) copies
 * each packet to or from the START of the page instead of at the in-page
 * offset, and does not advance the source across pages.  Any RDMA WRITE
 * or READ packet that does not begin on a page boundary (every packet
 * after the first at MTU 1024), and the requester's copy out of an ODP
 * lkey, move the wrong bytes while the completion says success.  Atomics
 * use the offset correctly.  A runtime must never corrupt silently, so the
 * agent checks each operation once, with a loopback RC QP pair at MTU
 * 1024 and transfers that start mid-page and cross a page boundary, and
 * auto leaves out what failed.  It costs two QPs, two small MRs and four
 * operations (about 10 ms under TCG), only when explicit ODP is offered
 * and the policy is not off.
 *
 * Security property: an explicit ODP MR is registered like a pinned one,
 * exactly the range and rights of the region (mem.c), and its rkey dies
 * with the region's last handle, also under RDMAXFER_AGENT_CACHE_RKEYS
 * (mem.c).  Unlike a pinned MR it follows the address: memory unmapped
 * and mapped again at the same address is reachable through a live rkey,
 * so a region must be deregistered before its addresses are reused for
 * anything a peer must not see (as for any remote-access registration
 * here); a kept one would stay reachable until the next call into the ODP
 * cache applied the unmap.  The implicit ODP MR covers the whole
 * address space: it is registered with local access only, so its key is
 * never an rkey and no peer can reach through it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

#define ST_WAIT_NS	(2LL * 1000 * 1000 * 1000)
#define RX_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define ST_LEN		2048	/* two packets at MTU 1024 */

RX_EXPORT
const char *rdmaxfer_odp_op_name(uint32_t op)
{
	switch (op) {
	case RDMAXFER_ODP_OP_LOCAL:
		return "local buffer";
	case RDMAXFER_ODP_OP_REMOTE_WRITE:
		return "remote write";
	case RDMAXFER_ODP_OP_REMOTE_READ:
		return "remote read";
	case RDMAXFER_ODP_OP_REMOTE_ATOMIC:
		return "remote atomic";
	default:
		return "?";
	}
}

/* The verbs RC capability each operation needs. */
static const struct {
	uint32_t op;
	uint32_t cap;
	const char *cap_name;
} op_caps[] = {
	{ RDMAXFER_ODP_OP_LOCAL, IBV_ODP_SUPPORT_SEND, "IBV_ODP_SUPPORT_SEND" },
	{ RDMAXFER_ODP_OP_REMOTE_WRITE, IBV_ODP_SUPPORT_WRITE,
	  "IBV_ODP_SUPPORT_WRITE" },
	{ RDMAXFER_ODP_OP_REMOTE_READ, IBV_ODP_SUPPORT_READ,
	  "IBV_ODP_SUPPORT_READ" },
	{ RDMAXFER_ODP_OP_REMOTE_ATOMIC, IBV_ODP_SUPPORT_ATOMIC,
	  "IBV_ODP_SUPPORT_ATOMIC" },
};

/* RDMAXFER_ACCESS_* of a region -> the operations it must serve. */
static uint32_t needed_ops(uint32_t access)
{
	uint32_t ops = 0;

	if (!access)
		return RDMAXFER_ODP_OP_LOCAL;
	if (access & RDMAXFER_ACCESS_REMOTE_WRITE)
		ops |= RDMAXFER_ODP_OP_REMOTE_WRITE;
	if (access & RDMAXFER_ACCESS_REMOTE_READ)
		ops |= RDMAXFER_ODP_OP_REMOTE_READ;
	if (access & RDMAXFER_ACCESS_REMOTE_ATOMIC)
		ops |= RDMAXFER_ODP_OP_REMOTE_ATOMIC;
	return ops;
}

static enum rdmaxfer_odp_policy parse_policy(const char *s)
{
	if (!strcmp(s, "on"))
		return RDMAXFER_ODP_ON;
	if (!strcmp(s, "off"))
		return RDMAXFER_ODP_OFF;
	if (!strcmp(s, "auto"))
		return RDMAXFER_ODP_AUTO;
	return RDMAXFER_ODP_DEFAULT;
}

/* ------------------------------------------------------------ self-test */

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

/* Also the start-up check of device memory (devmem.c). */
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
	/* at most 1024: transfers of ST_LEN are then several packets */
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
	struct ibv_wc wc;
	int64_t t0 = rx_now_ns();
	int n, ret;

	wr->send_flags = IBV_SEND_SIGNALED;
	ret = ibv_post_send(qp, wr, &bad);
	if (ret)
		return -ret;
	do {
		n = ibv_poll_cq(cq, 1, &wc);
	} while (n == 0 && rx_now_ns() - t0 < ST_WAIT_NS);
	if (n < 0)
		return -EIO;
	if (n == 0)
		return -ETIMEDOUT;
	return rx_wc_errno(wc.status);
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
static void selftest(struct rdmaxfer_agent *agent)
{
	struct rdmaxfer_odp_caps *caps = &agent->odp.caps;
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
	for (i = 0; i < RX_ARRAY_SIZE(op_caps); i++) {
		uint32_t op = op_caps[i].op;
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
			for (i++; i < RX_ARRAY_SIZE(op_caps); i++)
				caps->bad_ops |= caps->device_ops &
						 op_caps[i].op;
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

/* ---------------------------------------------------------- agent state */

static int odp_reg(void *user, void *addr, size_t len, uint32_t access,
		   void **handle)
{
	struct rdmaxfer_agent *agent = user;
	struct ibv_mr *mr;

	mr = ibv_reg_mr(agent->pd, addr, len,
			(int)(access | IBV_ACCESS_ON_DEMAND));
	if (!mr)
		return errno ? -errno : -ENOMEM;
	*handle = mr;
	return 0;
}

static int odp_dereg(void *user, void *handle)
{
	return -ibv_dereg_mr(handle);
}

/* Why auto leaves op out: "" if it does not. */
static void op_reason(struct rdmaxfer_agent *agent, uint32_t ops, char *buf,
		      size_t len)
{
	struct rdmaxfer_odp_caps *c = &agent->odp.caps;
	size_t i;

	buf[0] = '\0';
	if (c->policy == RDMAXFER_ODP_OFF) {
		snprintf(buf, len, "ODP policy is off");
		return;
	}
	if (!(c->general & IBV_ODP_SUPPORT)) {
		snprintf(buf, len,
			 "device %s has no explicit ODP (IBV_ODP_SUPPORT not in general_caps)",
			 agent->info.device);
		return;
	}
	for (i = 0; i < RX_ARRAY_SIZE(op_caps); i++) {
		if (!(ops & op_caps[i].op))
			continue;
		if (!(c->rc & op_caps[i].cap)) {
			snprintf(buf, len, "device %s: no %s in rc_odp_caps (%s)",
				 agent->info.device, op_caps[i].cap_name,
				 rdmaxfer_odp_op_name(op_caps[i].op));
			return;
		}
		if (c->bad_ops & op_caps[i].op) {
			snprintf(buf, len,
				 "device %s: %s into ODP memory failed the self-test",
				 agent->info.device,
				 rdmaxfer_odp_op_name(op_caps[i].op));
			return;
		}
	}
}

int rx_odp_init(struct rdmaxfer_agent *agent)
{
	struct rdmaxfer_odp_caps *c = &agent->odp.caps;
	struct ibv_device_attr_ex ax;
	struct regcache_attr cattr = { 0 };
	uint32_t policy = agent->attr.odp;
	const char *s;
	size_t i;
	int ret;

	if (policy > RDMAXFER_ODP_OFF)
		return -EINVAL;
	s = getenv("RDMAXFER_ODP");
	if (policy == RDMAXFER_ODP_DEFAULT &&
	    !(agent->attr.flags & RDMAXFER_AGENT_NO_ENV) && s && *s) {
		policy = parse_policy(s);
		if (policy == RDMAXFER_ODP_DEFAULT) {
			fprintf(stderr,
				"librdmaxfer: RDMAXFER_ODP=%s: not auto, on or off\n",
				s);
			return -EINVAL;
		}
	}
	if (policy == RDMAXFER_ODP_DEFAULT)
		policy = RDMAXFER_ODP_AUTO;
	memset(c, 0, sizeof(*c));
	c->policy = policy;
	c->prefetch = RDMAXFER_PREFETCH_MADVISE;
	memset(&ax, 0, sizeof(ax));
	if (!ibv_query_device_ex(agent->ctx, NULL, &ax)) {
		c->general = ax.odp_caps.general_caps;
		c->rc = ax.odp_caps.per_transport_caps.rc_odp_caps;
		c->uc = ax.odp_caps.per_transport_caps.uc_odp_caps;
		c->ud = ax.odp_caps.per_transport_caps.ud_odp_caps;
	}
	if (c->general & IBV_ODP_SUPPORT)
		for (i = 0; i < RX_ARRAY_SIZE(op_caps); i++)
			if (c->rc & op_caps[i].cap)
				c->device_ops |= op_caps[i].op;
	if (policy == RDMAXFER_ODP_ON && !c->device_ops) {
		fprintf(stderr,
			"librdmaxfer: RDMAXFER_ODP=on: device %s has no explicit RC ODP (general_caps 0x%x: %s, rc_odp_caps 0x%x)\n",
			agent->info.device, c->general,
			c->general & IBV_ODP_SUPPORT ? "IBV_ODP_SUPPORT" :
			"no IBV_ODP_SUPPORT", c->rc);
		return -EOPNOTSUPP;
	}
	if (policy == RDMAXFER_ODP_OFF || !c->device_ops) {
		op_reason(agent, RDMAXFER_ODP_OPS, c->reason,
			  sizeof(c->reason));
		snprintf(c->selftest_msg, sizeof(c->selftest_msg),
			 "%s: ODP self-test not run (%s)", agent->info.device,
			 policy == RDMAXFER_ODP_OFF ? "policy off" :
			 "no explicit ODP");
		return 0;
	}
	selftest(agent);
	c->auto_ops = c->device_ops & ~c->bad_ops;
	if (c->auto_ops != RDMAXFER_ODP_OPS)
		op_reason(agent, RDMAXFER_ODP_OPS & ~c->auto_ops, c->reason,
			  sizeof(c->reason));
	if (!c->auto_ops)
		return 0;

	cattr.reg = odp_reg;
	cattr.dereg = odp_dereg;
	cattr.user = agent;
	cattr.monitor = agent->attr.cache_monitor;
	cattr.max_entries = agent->attr.cache_max_entries;
	cattr.max_bytes = agent->attr.cache_max_bytes;
	cattr.flags = REGCACHE_ATTR_NO_PIN;
	ret = regcache_create(&cattr, &agent->odp.cache);
	if (ret)
		return ret;

	/* implicit ODP: local access only (see the security note above) */
	if ((c->general & IBV_ODP_SUPPORT_IMPLICIT) &&
	    (c->auto_ops & RDMAXFER_ODP_OP_LOCAL)) {
		agent->odp.implicit_mr = ibv_reg_mr(agent->pd, NULL, SIZE_MAX,
						    IBV_ACCESS_LOCAL_WRITE |
						    IBV_ACCESS_ON_DEMAND);
		c->implicit = agent->odp.implicit_mr != NULL;
	}
	return 0;
}

void rx_odp_fini(struct rdmaxfer_agent *agent)
{
	if (agent->odp.implicit_mr)
		ibv_dereg_mr(agent->odp.implicit_mr);
	agent->odp.implicit_mr = NULL;
	if (agent->odp.cache)
		regcache_destroy(agent->odp.cache);
	agent->odp.cache = NULL;
}

int rx_odp_pick_cache(struct rdmaxfer_agent *agent, uint32_t access,
		      struct regcache **cachep)
{
	struct rdmaxfer_odp_caps *c = &agent->odp.caps;
	uint32_t need = needed_ops(access);
	char why[RDMAXFER_ODP_MSG_MAX];

	if (agent->odp.cache && (need & ~c->auto_ops) == 0) {
		*cachep = agent->odp.cache;
		return 0;
	}
	if (c->policy == RDMAXFER_ODP_ON) {
		op_reason(agent, need, why, sizeof(why));
		fprintf(stderr, "librdmaxfer: RDMAXFER_ODP=on: %s\n", why);
		return -EOPNOTSUPP;
	}
	*cachep = agent->cache;
	return 0;
}

RX_EXPORT
int rdmaxfer_agent_odp_caps(struct rdmaxfer_agent *agent,
			    struct rdmaxfer_odp_caps *caps)
{
	if (!agent || !caps)
		return -EINVAL;
	*caps = agent->odp.caps;
	return 0;
}

RX_EXPORT
int rdmaxfer_mem_is_odp(const struct rdmaxfer_mem *mem)
{
	if (!mem)
		return -EINVAL;
	return mem->cache && mem->cache == mem->agent->odp.cache;
}

/* ------------------------------------------------------------- prefetch */

/* The lkey of an ODP MR covering [a, a + len) of this agent, or false. */
static bool odp_lkey(struct rdmaxfer_agent *agent, uintptr_t a, size_t len,
		     uint32_t *lkey)
{
	struct rx_list *n;
	bool found = false;

	rx_spin_lock(&agent->mem_lock);
	for (n = agent->mems.next; n != &agent->mems; n = n->next) {
		struct rdmaxfer_mem *m = rx_container_of(n, struct rdmaxfer_mem,
							 node);
		struct ibv_mr *mr;

		if (!rdmaxfer_mem_is_odp(m))
			continue;
		mr = regcache_entry_handle(m->entry);
		if (a >= (uintptr_t)mr->addr &&
		    a + len <= (uintptr_t)mr->addr + mr->length) {
			*lkey = mr->lkey;
			found = true;
			break;
		}
	}
	rx_spin_unlock(&agent->mem_lock);
	if (!found && agent->odp.implicit_mr) {
		*lkey = agent->odp.implicit_mr->lkey;
		found = true;
	}
	return found;
}

static int advise(struct rdmaxfer_agent *agent, uintptr_t a, size_t len,
		  uint32_t lkey, uint32_t flags)
{
	enum ibv_advise_mr_advice adv =
		(flags & RDMAXFER_PREFETCH_NO_FAULT) ?
			IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT :
		(flags & RDMAXFER_PREFETCH_WRITE) ?
			IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE :
			IBV_ADVISE_MR_ADVICE_PREFETCH;

	/* an SGE carries 32 bits of length */
	while (len) {
		uint32_t chunk = len > (1U << 30) ? 1U << 30 : (uint32_t)len;
		struct ibv_sge sge = { a, chunk, lkey };
		int ret = ibv_advise_mr(agent->pd, adv,
					IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);

		if (ret)
			return -ret;
		a += chunk;
		len -= chunk;
	}
	return 0;
}

static int populate(uintptr_t a, size_t len, uint32_t flags)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = a & ~(psz - 1);
	uintptr_t end = (a + len + psz - 1) & ~(psz - 1);

	if (flags & RDMAXFER_PREFETCH_NO_FAULT)
		return 0;
	if (madvise((void *)start, end - start,
		    (flags & RDMAXFER_PREFETCH_WRITE) ? MADV_POPULATE_WRITE :
							MADV_POPULATE_READ))
		return errno == ENOMEM ? -EFAULT : -errno;
	return 0;
}

RX_EXPORT
int rdmaxfer_prefetch(struct rdmaxfer_agent *agent,
		      const struct rdmaxfer_iov *iov, size_t n, uint32_t flags)
{
	size_t i;
	int ret;

	if (!agent || (!iov && n) ||
	    (flags & ~(RDMAXFER_PREFETCH_WRITE | RDMAXFER_PREFETCH_NO_FAULT)))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)iov[i].addr;

		if (!iov[i].addr || !iov[i].len || a + iov[i].len < a)
			return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)iov[i].addr;
		size_t len = iov[i].len;
		uint32_t lkey;

		if (agent->odp.caps.prefetch == RDMAXFER_PREFETCH_ADVISE_MR &&
		    odp_lkey(agent, a, len, &lkey)) {
			ret = advise(agent, a, len, lkey, flags);
			if (ret != -EOPNOTSUPP && ret != -ENOSYS)
				goto done;
		}
		ret = populate(a, len, flags);
done:
		if (ret)
			return ret;
	}
	return 0;
}
