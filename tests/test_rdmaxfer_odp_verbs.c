// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_odp_verbs.c - what an explicit ODP MR does on this device,
 * in raw verbs (no librdmaxfer), with a loopback RC QP pair at MTU 1024.
 *
 * The question (issue 12): on the 7.3 guest an RDMA WRITE of 4 KiB into an
 * explicit ODP MR left bytes 1024 onward invisible to the CPU, while an
 * RDMA READ through the same MR "returned the written data".  Every case
 * here fills with a position-dependent pattern (a constant fill cannot
 * tell which packet landed where) and checks every byte, and the cases
 * separate the candidate causes:
 *   - 1 packet at page offset 0, 1 packet at page offset 1024: a packet
 *     that does not start at a page boundary;
 *   - 4 packets (4 KiB), and 2 KiB crossing a page boundary;
 *   - the same as READ responder, and the ODP MR as the local (lkey) side;
 *   - the same into a pinned MR (the control).
 * A mismatch prints where the bytes went (rc_diag): with rxe's
 * __rxe_odp_mr_copy() ignoring the in-page offset, every packet lands at
 * offset 0 of its first page and the rest of the page keeps old bytes.
 *
 * Each ODP case asserts the correct result unless librdmaxfer's agent
 * self-test on the same device flagged that operation (then the auto
 * policy does not use ODP for it, and the wrong bytes are reported as a
 * diagnostic); the last case asserts the converse, that the self-test
 * flags nothing the raw cases found correct.  So on a correct device
 * every byte must be right, and on a broken one the library must know
 * exactly which operations are broken.  Exit 77 where explicit ODP
 * registration is refused (6.1's rxe: EINVAL).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rdmaxfer.h"
#include "rc_test.h"
#include "rc_verbs.h"

#define ACC	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define BUF_LEN	(4 * 4096)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp[2];
static size_t psz;
/* one pinned and one ODP buffer, each BUF_LEN, page aligned */
static uint8_t *pin_buf, *odp_buf;
static struct ibv_mr *pin_mr, *odp_mr;
/* RDMAXFER_ODP_OP_* the raw cases saw wrong bytes for */
static uint32_t odp_bad;
static struct rdmaxfer_odp_caps caps;	/* librdmaxfer's verdict */

static uint8_t pat(size_t i, unsigned int seed)
{
	return (uint8_t)((i * 131 + seed * 7 + (i >> 9)) ^ seed);
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pat(i, seed);
}

static uint8_t *map_buf(void)
{
	void *p = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void setup_or_skip(void)
{
	const char *want = getenv("RXE_DEV"), *gi = getenv("RXE_GID_INDEX");
	struct ibv_device **list;
	struct ibv_qp_init_attr qa;
	union ibv_gid gid;
	int i, n, gid_index = gi ? atoi(gi) : 1;

	psz = (size_t)sysconf(_SC_PAGESIZE);
	list = ibv_get_device_list(&n);
	if (!list || !n)
		rc_skip_all("no RDMA device");
	for (i = 0; i < n; i++)
		if (!want || !strcmp(ibv_get_device_name(list[i]), want))
			break;
	if (i == n)
		rc_skip_all("RDMA device %s not found", want);
	ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		rc_skip_all("cannot open the RDMA device");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!pd || !cq || ibv_query_gid(ctx, 1, gid_index, &gid))
		rc_skip_all("PD/CQ/GID setup failed");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp[0] = ibv_create_qp(pd, &qa);
	qp[1] = ibv_create_qp(pd, &qa);
	if (!qp[0] || !qp[1] ||
	    rc_qp_connect(qp[0], 1, qp[1]->qp_num, &gid, gid_index, ACC) ||
	    rc_qp_connect(qp[1], 1, qp[0]->qp_num, &gid, gid_index, ACC))
		rc_skip_all("loopback QP setup failed");
	pin_buf = map_buf();
	odp_buf = map_buf();
	if (!pin_buf || !odp_buf)
		rc_skip_all("mmap failed");
	memset(pin_buf, 0, BUF_LEN);
	pin_mr = ibv_reg_mr(pd, pin_buf, BUF_LEN, ACC);
	if (!pin_mr)
		rc_skip_all("pinned ibv_reg_mr failed: %s", strerror(errno));
	odp_mr = ibv_reg_mr(pd, odp_buf, BUF_LEN, ACC | IBV_ACCESS_ON_DEMAND);
	if (!odp_mr)
		rc_skip_all("explicit ODP registration refused by %s: %s",
			    ibv_get_device_name(ctx->device), strerror(errno));
}

/* One signaled RDMA op from (laddr, lkey) to (raddr, rkey); 0 or -1. */
static int rdma_op(enum ibv_wr_opcode op, void *laddr, uint32_t lkey,
		   void *raddr, uint32_t rkey, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)laddr, .length = (uint32_t)len, .lkey = lkey,
	};
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	time_t t0 = time(NULL);
	int n;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp[0], &wr, &bad))
		return -1;
	do {
		n = ibv_poll_cq(cq, 1, &wc);
	} while (n == 0 && time(NULL) - t0 < 20);
	if (n != 1 || wc.status != IBV_WC_SUCCESS) {
		rc_diag("completion: n=%d status=%s", n,
			n == 1 ? ibv_wc_status_str(wc.status) : "timeout");
		return -1;
	}
	return 0;
}

/*
 * Compare got with the pattern (seed) over len bytes; on a mismatch say
 * where the first wrong byte is and whether the page's first bytes hold
 * a later part of the pattern (the "packet landed at page offset 0" mark).
 */
static bool check(const char *what, const uint8_t *got, size_t len,
		  unsigned int seed)
{
	size_t i, bad = 0, first = len;

	for (i = 0; i < len; i++)
		if (got[i] != pat(i, seed)) {
			if (first == len)
				first = i;
			bad++;
		}
	if (!bad)
		return true;
	rc_diag("%s: %zu of %zu bytes wrong, first at %zu", what, bad, len,
		first);
	return false;
}

/*
 * The RDMA WRITE cases: len bytes from a pinned source to dst + off,
 * where dst is the ODP or the pinned buffer.
 */
static bool write_case(bool odp, size_t off, size_t len, unsigned int seed)
{
	uint8_t *dst = odp ? odp_buf : pin_buf;
	uint32_t rkey = odp ? odp_mr->rkey : pin_mr->rkey;
	uint8_t *src = pin_buf + BUF_LEN / 2;
	char what[64];

	/* pinned source in the pinned buffer's upper half, target low half */
	if (!odp)
		dst = pin_buf;
	memset(dst, 0, BUF_LEN / 2);
	fill(src, len, seed);
	if (rdma_op(IBV_WR_RDMA_WRITE, src, pin_mr->lkey, dst + off, rkey,
		    len))
		return false;
	snprintf(what, sizeof(what), "%s WRITE %zu B at +%zu",
		 odp ? "ODP" : "pinned", len, off);
	return check(what, dst + off, len, seed);
}

/* RDMA READ out of the ODP (or pinned) buffer, CPU-filled, into pinned. */
static bool read_case(bool odp, size_t off, size_t len, unsigned int seed)
{
	uint8_t *srcb = odp ? odp_buf : pin_buf;
	uint32_t rkey = odp ? odp_mr->rkey : pin_mr->rkey;
	uint8_t *dst = pin_buf + BUF_LEN / 2;
	char what[64];

	fill(srcb + off, len, seed);
	memset(dst, 0, len);
	if (rdma_op(IBV_WR_RDMA_READ, dst, pin_mr->lkey, srcb + off, rkey,
		    len))
		return false;
	snprintf(what, sizeof(what), "%s READ %zu B at +%zu",
		 odp ? "ODP" : "pinned", len, off);
	return check(what, dst, len, seed);
}

/* The ODP buffer as the local side: WRITE from it (requester reads it). */
static bool odp_source_case(size_t off, size_t len, unsigned int seed)
{
	uint8_t *dst = pin_buf;
	char what[64];

	fill(odp_buf + off, len, seed);
	memset(dst, 0, len);
	if (rdma_op(IBV_WR_RDMA_WRITE, odp_buf + off, odp_mr->lkey, dst,
		    pin_mr->rkey, len))
		return false;
	snprintf(what, sizeof(what), "WRITE from ODP lkey %zu B at +%zu", len,
		 off);
	return check(what, dst, len, seed);
}

/* An ODP case of operation op: correct, or flagged by the self-test. */
static void odp_result(uint32_t op, bool ok)
{
	if (ok)
		return;
	odp_bad |= op;
	if (caps.bad_ops & op)
		rc_diag("wrong bytes, and the self-test flagged %s: auto does not use ODP for it",
			rdmaxfer_odp_op_name(op));
	CU_ASSERT(caps.bad_ops & op);
}

/* FETCH_AND_ADD on the ODP buffer at off: old value and sum right. */
static bool atomic_case(size_t off)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)pin_buf, .length = 8, .lkey = pin_mr->lkey,
	};
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	uint64_t *word = (uint64_t *)(odp_buf + off);
	time_t t0 = time(NULL);
	int n;

	*word = 1000;
	memset(pin_buf, 0, 8);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = (uintptr_t)word;
	wr.wr.atomic.rkey = odp_mr->rkey;
	wr.wr.atomic.compare_add = 24;
	if (ibv_post_send(qp[0], &wr, &bad))
		return false;
	do {
		n = ibv_poll_cq(cq, 1, &wc);
	} while (n == 0 && time(NULL) - t0 < 20);
	if (n != 1 || wc.status != IBV_WC_SUCCESS)
		return false;
	if (*word != 1024 || *(uint64_t *)pin_buf != 1000) {
		rc_diag("ODP atomic at +%zu: word %llu old %llu", off,
			(unsigned long long)*word,
			(unsigned long long)*(uint64_t *)pin_buf);
		return false;
	}
	return true;
}

static void test_pinned_control(void)
{
	CU_ASSERT(write_case(false, 0, 4096, 1));
	CU_ASSERT(write_case(false, 1024, 512, 2));
	CU_ASSERT(write_case(false, 3072, 2048, 3));
	CU_ASSERT(read_case(false, 0, 4096, 4));
}

static void test_odp_write_1pkt(void)
{
	odp_result(RDMAXFER_ODP_OP_REMOTE_WRITE, write_case(true, 0, 512, 5));
}

static void test_odp_write_1pkt_offset(void)
{
	odp_result(RDMAXFER_ODP_OP_REMOTE_WRITE, write_case(true, 1024, 512, 6));
}

static void test_odp_write_4pkt(void)
{
	odp_result(RDMAXFER_ODP_OP_REMOTE_WRITE, write_case(true, 0, 4096, 7));
}

static void test_odp_write_cross_page(void)
{
	odp_result(RDMAXFER_ODP_OP_REMOTE_WRITE, write_case(true, 3072, 2048, 8));
}

static void test_odp_read_4pkt(void)
{
	odp_result(RDMAXFER_ODP_OP_REMOTE_READ, read_case(true, 0, 4096, 9));
}

static void test_odp_read_1pkt_offset(void)
{
	odp_result(RDMAXFER_ODP_OP_REMOTE_READ, read_case(true, 1024, 512, 10));
}

static void test_odp_atomic(void)
{
	odp_result(RDMAXFER_ODP_OP_REMOTE_ATOMIC, atomic_case(8));
	odp_result(RDMAXFER_ODP_OP_REMOTE_ATOMIC, atomic_case(4096 + 2048));
}

static void test_odp_source(void)
{
	odp_result(RDMAXFER_ODP_OP_LOCAL, odp_source_case(1024, 2048, 11));
}

/* The self-test flags nothing that the raw cases found correct (it
 * would otherwise keep auto from using a working device). */
static void test_selftest_agrees(void)
{
	rc_diag("%s", caps.selftest_msg);
	rc_diag("raw cases wrong: 0x%x, self-test flagged: 0x%x", odp_bad,
		caps.bad_ops);
	CU_ASSERT_EQUAL(caps.bad_ops & ~odp_bad, 0);
	CU_ASSERT_EQUAL(caps.selftest == RDMAXFER_ODP_SELFTEST_CORRUPT,
			odp_bad != 0);
}

static const struct rc_test_case cases[] = {
	{ "pinned_control", test_pinned_control },
	{ "write_1pkt", test_odp_write_1pkt },
	{ "write_1pkt_offset", test_odp_write_1pkt_offset },
	{ "write_4pkt", test_odp_write_4pkt },
	{ "write_cross_page", test_odp_write_cross_page },
	{ "read_4pkt", test_odp_read_4pkt },
	{ "read_1pkt_offset", test_odp_read_1pkt_offset },
	{ "atomic", test_odp_atomic },
	{ "odp_source", test_odp_source },
	{ "selftest_agrees", test_selftest_agrees },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent *agent;
	int ret;

	setup_or_skip();
	/* the library's self-test runs at agent creation (policy auto) */
	rdmaxfer_agent_attr_init(&attr);
	attr.odp = RDMAXFER_ODP_AUTO;
	attr.flags = RDMAXFER_AGENT_NO_ENV;
	ret = rdmaxfer_agent_create(&attr, &agent);
	if (ret)
		rc_skip_all("rdmaxfer_agent_create: %s", strerror(-ret));
	rdmaxfer_agent_odp_caps(agent, &caps);
	rdmaxfer_agent_destroy(agent);
	rc_add_suite("odp_verbs", NULL, NULL, cases);
	return rc_test_main(argc, argv);
}
