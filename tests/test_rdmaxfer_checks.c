// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_checks.c - librdmaxfer's local checks and failure
 * isolation on a real RDMA device (rxe in the VM):
 *
 *  - notification send slots are per peer: a peer whose agent stops
 *    progressing cannot starve notifications to another peer;
 *  - remote descriptors are checked before posting (bounds always, the
 *    peer's exports when the application gave them): -ERANGE locally,
 *    the QP and its other requests live on;
 *  - bad local pointers (PROT_NONE, unmapped) give -EFAULT, not SIGSEGV;
 *  - inline WRITEs stay within what each QP was granted;
 *  - a doorbell chain is signalled every signal_interval WRs and at its
 *    end, whether its requests are of one WR each (xfer.c's
 *    flush_singles()) or not (the general path), and every request of
 *    it completes;
 *  - a doorbell chain that the provider refuses partway (a fault injected
 *    into the context's post_send) fails only the refused request, every
 *    request reaches a terminal state and can be freed at once, in any
 *    order (run it under ASan to see no use-after-free), and the
 *    terminator that retires the WRs that went out is freed even when
 *    its agent goes before its completion is polled (ASan's leak check);
 *  - requests that never reached the send queue when their peer failed
 *    report -ECANCELED.
 *
 * A server agent (progress thread) listens on $RXE_ADDR; each case makes
 * its own client agents.  Skips (77) without $RXE_ADDR or a device.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define WAIT_MS		20000

#include "rdmaxfer_test_util.h"

#define SBUF_LEN	(8 * MiB)
#define CBUF_LEN	(8 * MiB)

static const char *addr;
static struct rdmaxfer_agent *srv;
static uint16_t srv_port;
static uint8_t *srv_buf, *cli_buf;
static struct rdmaxfer_mem *srv_mem;
static long page;

static int suite_init(void)
{
	page = sysconf(_SC_PAGESIZE);
	if (new_agent(RDMAXFER_PROGRESS_THREAD, 1, &srv))
		return 1;
	if (rdmaxfer_listen(srv, addr, 0) || rdmaxfer_listen_port(srv, &srv_port))
		return 1;
	srv_buf = aligned_alloc(4096, SBUF_LEN);
	cli_buf = aligned_alloc(4096, CBUF_LEN);
	if (!srv_buf || !cli_buf)
		return 1;
	memset(srv_buf, 0, SBUF_LEN);
	memset(cli_buf, 0, CBUF_LEN);
	return rdmaxfer_mem_register(srv, srv_buf, SBUF_LEN, RDMAXFER_MEM_HOST,
				     &srv_mem) ? 1 : 0;
}

static int suite_cleanup(void)
{
	rdmaxfer_agent_destroy(srv);
	free(srv_buf);
	free(cli_buf);
	return 0;
}

/* A caller-mode client agent of qps QPs (sq_depth 0: the default)
 * connected to srv; the server's side of it is accepted and returned in
 * *speer if speer is given. */
static int client(uint32_t qps, uint32_t sq_depth, uint32_t max_inline,
		  struct rdmaxfer_agent **ap, struct rdmaxfer_peer **pp)
{
	struct rdmaxfer_agent_attr attr;
	int ret;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_CALLER;
	attr.qps_per_peer = qps;
	attr.sq_depth = sq_depth;
	if (max_inline != UINT32_MAX)
		attr.max_inline = max_inline;
	ret = rdmaxfer_agent_create(&attr, ap);
	if (ret)
		return ret;
	ret = rdmaxfer_connect(*ap, addr, srv_port, 10000, pp);
	if (ret)
		rdmaxfer_agent_destroy(*ap);
	return ret;
}

/* Drain the server's notification queue (earlier cases' leftovers). */
static void drain_srv(void)
{
	struct rdmaxfer_notif n[8];

	while (rdmaxfer_get_notifs(srv, n, 8) > 0)
		;
}

/* ------------------------------------------------ per-peer send slots */

struct accept_arg {
	struct rdmaxfer_agent *agent;
	uint16_t port;
	struct rdmaxfer_peer *peer;
	int ret;
};

static void *connect_thread(void *p)
{
	struct accept_arg *c = p;

	c->ret = rdmaxfer_connect(c->agent, addr, c->port, 10000, &c->peer);
	return NULL;
}

/*
 * Agent s sends notifications to two peers: stuck (an agent of 8 receive
 * buffers that, once connected, is never progressed: its buffers run out,
 * the sends to it wait in RNR retry for ever) and srv (a progress
 * thread).  The sends to stuck end in -EAGAIN; those to srv must not:
 * each peer has its own send slots.  Then stuck drains and gets every
 * notification it was sent, in order.
 */
static void test_notif_slots_per_peer(void)
{
	enum { TO_SRV = 300 };
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent *s, *stuck;
	struct rdmaxfer_peer *to_srv, *stuck_side = NULL;
	struct rdmaxfer_notif *nb = calloc(512, sizeof(*nb));
	struct accept_arg c;
	pthread_t th;
	int i, ret, sent_stuck = 0, got, eagain = 0, k;
	double end;
	char msg[32];

	CU_ASSERT_FATAL(nb != NULL);
	drain_srv();
	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_CALLER;
	attr.srq_depth = 8;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, &stuck), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen(stuck, addr, 0), 0);
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &s), 0);
	c.agent = s;
	c.ret = -1;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen_port(stuck, &c.port), 0);
	pthread_create(&th, NULL, connect_thread, &c);
	CU_ASSERT_EQUAL(rdmaxfer_accept(stuck, 15000, &stuck_side), 0);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL_FATAL(c.ret, 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_connect(s, addr, srv_port, 10000,
					       &to_srv), 0);

	/* from here on, stuck is never called until it drains below */
	for (i = 0; i < 2000; i++) {
		snprintf(msg, sizeof(msg), "stuck %d", sent_stuck);
		ret = rdmaxfer_notif_send(c.peer, (uint32_t)sent_stuck, msg,
					  strlen(msg) + 1);
		if (ret == -EAGAIN && ++eagain >= 20)
			break;
		if (ret == -EAGAIN) {
			usleep(2000);
			continue;
		}
		CU_ASSERT_EQUAL_FATAL(ret, 0);
		sent_stuck++;
	}
	rc_diag("stuck peer: %d sent, then -EAGAIN", sent_stuck);
	CU_ASSERT(eagain >= 20);
	CU_ASSERT(sent_stuck >= 8);

	/* the other peer is not starved */
	end = now_s() + 10;
	for (i = 0; i < TO_SRV; i++) {
		do {
			ret = rdmaxfer_notif_send(to_srv, 5000 + i, "x", 2);
			if (ret == -EAGAIN)
				rdmaxfer_progress(s);
		} while (ret == -EAGAIN && now_s() < end);
		if (ret) {
			rc_diag("send %d to the live peer: %s", i,
				rdmaxfer_strerror(ret));
			break;
		}
	}
	CU_ASSERT_EQUAL(i, TO_SRV);
	for (got = 0; got < i; got += ret) {
		ret = rdmaxfer_wait_notifs(srv, nb, 512, 5000);
		if (ret <= 0)
			break;
		for (k = 0; k < ret; k++)
			if (nb[k].value != (uint32_t)(5000 + got + k)) {
				CU_FAIL("live peer: order");
				break;
			}
	}
	CU_ASSERT_EQUAL(got, i);
	/* still stuck: no slot came back to it from the other peer */
	CU_ASSERT_EQUAL(rdmaxfer_notif_send(c.peer, 1, "y", 2), -EAGAIN);

	/* the stuck agent wakes up: it gets everything, in order */
	for (got = 0; got < sent_stuck; got += ret) {
		rdmaxfer_progress(s);
		ret = rdmaxfer_wait_notifs(stuck, nb, 64, 5000);
		if (ret <= 0)
			break;
		for (k = 0; k < ret; k++) {
			snprintf(msg, sizeof(msg), "stuck %d", got + k);
			if (nb[k].value != (uint32_t)(got + k) ||
			    strcmp((char *)nb[k].data, msg)) {
				CU_FAIL("stuck peer: order or payload");
				break;
			}
		}
	}
	rc_diag("stuck peer drained: %d of %d", got, sent_stuck);
	CU_ASSERT_EQUAL(got, sent_stuck);
	/* and its slots come back */
	end = now_s() + 10;
	do {
		rdmaxfer_progress(s);
		ret = rdmaxfer_notif_send(c.peer, 77, NULL, 0);
	} while (ret == -EAGAIN && now_s() < end);
	CU_ASSERT_EQUAL(ret, 0);
	CU_ASSERT_EQUAL(rdmaxfer_wait_notifs(stuck, nb, 4, 5000), 1);
	CU_ASSERT_EQUAL(nb[0].value, 77);

	rdmaxfer_agent_destroy(s);
	rdmaxfer_agent_destroy(stuck);
	free(nb);
}

/* ----------------------------------------------- remote descriptors */

static int prep(struct rdmaxfer_peer *p, enum rdmaxfer_op op, void *l,
		const struct rdmaxfer_desc *d, struct rdmaxfer_req **reqp)
{
	struct rdmaxfer_iov iov = { l, d->len };

	return rdmaxfer_xfer_prepare(p, op, &iov, 1, d, 1, NULL, reqp);
}

/* Bounds are checked with or without an exports list. */
static void test_remote_bounds(void)
{
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct rdmaxfer_desc d;
	struct rdmaxfer_req *req;
	uint64_t *res = aligned_alloc(8, 8);
	struct rdmaxfer_iov iov = { cli_buf, 16 };

	CU_ASSERT_FATAL(res != NULL);
	CU_ASSERT_EQUAL_FATAL(client(1, 0, UINT32_MAX, &a, &p), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 4096, &d), 0);
	/* wraps past the end of the address space */
	d.addr = UINT64_MAX - 7;
	d.len = 16;
	CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_WRITE, cli_buf, &d, &req), -ERANGE);
	CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_READ, cli_buf, &d, &req), -ERANGE);
	/* length 0 */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 4096, &d), 0);
	d.len = 0;
	iov.len = 0;
	CU_ASSERT_EQUAL(rdmaxfer_xfer_prepare(p, RDMAXFER_OP_WRITE, &iov, 1,
					      &d, 1, NULL, &req), -ERANGE);
	CU_ASSERT_EQUAL(rdmaxfer_atomic_prepare(p, RDMAXFER_OP_FADD, &d, 0, 1,
						0, res, &req), -ERANGE);
	/* unknown kind */
	d.len = 4096;
	d.kind = 77;
	CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_WRITE, cli_buf, &d, &req), -EINVAL);
	/* without a list, an in-bounds forged range is the peer's business
	 * (test_rdmaxfer's error_out_of_bounds posts one on purpose) */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 4096, &d), 0);
	d.addr += SBUF_LEN + 64 * MiB;
	CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_WRITE, cli_buf, &d, &req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_CONNECTED);
	rdmaxfer_agent_destroy(a);
	free(res);
}

/*
 * With an exports list: ranges outside every exported descriptor, or
 * under another rkey, fail at prepare with -ERANGE while a chain of good
 * requests on the same QP is in flight; all of them complete and the
 * peer stays connected.  Clearing the list lifts the check.
 */
static void test_exports_list(void)
{
	enum { N = 6 };
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct rdmaxfer_desc ex[3], d, good[N];
	struct rdmaxfer_req *req, *reqs[N];
	uint64_t *res = aligned_alloc(8, 8);
	int i;

	CU_ASSERT_FATAL(res != NULL);
	CU_ASSERT_EQUAL_FATAL(client(1, 0, UINT32_MAX, &a, &p), 0);
	/* [0, 4 KiB), [64 KiB, 1 MiB) and [4 KiB, 8 KiB): overlapping and
	 * adjacent entries of one rkey */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 4096, &ex[0]), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 65536, MiB - 65536,
						&ex[1]), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 4096, 4096, &ex[2]),
			      0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(NULL, ex, 3), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(p, NULL, 3), -EINVAL);
	d = ex[0];
	d.len = 0;
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(p, &d, 1), -ERANGE);
	d.len = 16;
	d.kind = 99;
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(p, &d, 1), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_peer_set_exports(p, ex, 3), 0);

	/* good requests, held in one chain on the QP */
	fill(cli_buf, N * 8192, 31);
	memset(srv_buf, 0, MiB);
	for (i = 0; i < N; i++) {
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem,
				65536 + (size_t)i * 8192 + 3, 5000, &good[i]), 0);
		CU_ASSERT_EQUAL_FATAL(prep(p, RDMAXFER_OP_WRITE,
					   cli_buf + (size_t)i * 8192, &good[i],
					   &reqs[i]), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(reqs[i],
				i + 1 < N ? RDMAXFER_POST_MORE : 0), 0);
		if (i != 2)
			continue;
		/* while the chain is held: bad descriptors, refused here */
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, MiB - 100, 200,
							&d), 0);
		CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_WRITE, cli_buf, &d, &req),
				-ERANGE);	/* runs past ex[1] */
		CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_READ, cli_buf, &d, &req),
				-ERANGE);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 9000, 100,
							&d), 0);
		CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_WRITE, cli_buf, &d, &req),
				-ERANGE);	/* in the hole 8 K .. 64 K */
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 4000, 200,
							&d), 0);
		CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_WRITE, cli_buf, &d, &req),
				-ERANGE);	/* across two entries */
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 70000, 100,
							&d), 0);
		d.rkey ^= 0x100;
		CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_WRITE, cli_buf, &d, &req),
				-ERANGE);	/* another key */
		CU_ASSERT_EQUAL(rdmaxfer_atomic_prepare(p, RDMAXFER_OP_FADD,
				&d, 0, 1, 0, res, &req), -ERANGE);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 4096, &d),
				      0);
		CU_ASSERT_EQUAL(rdmaxfer_atomic_prepare(p, RDMAXFER_OP_FADD,
				&d, 4096 - 8, 1, 0, res, &req), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
		d.len = 8192;	/* ends in ex[2]; the word is past 4 K in ex[2] */
		CU_ASSERT_EQUAL(rdmaxfer_atomic_prepare(p, RDMAXFER_OP_FADD,
				&d, 4096 + 8, 1, 0, res, &req), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
		d.len = 16384;
		CU_ASSERT_EQUAL(rdmaxfer_atomic_prepare(p, RDMAXFER_OP_FADD,
				&d, 8192, 1, 0, res, &req), -ERANGE);
		/* inside: in ex[0], and in ex[1] past the small entries */
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 10, 4000, &d), 0);
		CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_WRITE, cli_buf, &d, &req), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	}
	for (i = 0; i < N; i++) {
		CU_ASSERT_EQUAL(rdmaxfer_req_wait(reqs[i], WAIT_MS), 0);
		CU_ASSERT(!memcmp(srv_buf + good[i].addr - (uintptr_t)srv_buf,
				  cli_buf + (size_t)i * 8192, 5000));
		CU_ASSERT_EQUAL(rdmaxfer_req_free(reqs[i]), 0);
	}
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_CONNECTED);

	/* cleared: only bounds again */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, MiB - 100, 200, &d), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(p, NULL, 0), 0);
	CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_WRITE, cli_buf, &d, &req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	rdmaxfer_agent_destroy(a);
	free(res);
}

/* The descriptors of a metadata blob become the peer's exports. */
static void test_exports_from_blob(void)
{
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct rdmaxfer_desc ex, d;
	struct rdmaxfer_req *req;
	uint8_t blob[512];
	size_t len;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 100, 200, &ex), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_md_pack(srv, &ex, 1, blob, sizeof(blob),
					       &len), 0);
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &a), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_connect_md(a, blob, len, 10000, &p), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_desc_sub(&ex, 50, 150, &d), 0);
	memset(srv_buf, 0, 400);
	fill(cli_buf, 150, 5);
	CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_WRITE, cli_buf, &d, &req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT(!memcmp(srv_buf + 150, cli_buf, 150));
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	d.addr += 1;	/* one byte past the exported 200 */
	CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_WRITE, cli_buf, &d, &req), -ERANGE);
	CU_ASSERT_EQUAL(srv_buf[300], 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_CONNECTED);
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(p, NULL, 0), 0);
	CU_ASSERT_EQUAL(prep(p, RDMAXFER_OP_WRITE, cli_buf, &d, &req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	rdmaxfer_agent_destroy(a);
}

/* ------------------------------------------------------ bad pointers */

/* Three pages: readable, PROT_NONE, unmapped (in that order). */
static uint8_t *bad_area(void)
{
	uint8_t *m = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CU_ASSERT_FATAL(m != MAP_FAILED);
	memset(m, 0x11, page);
	CU_ASSERT_FATAL(!mprotect(m + page, page, PROT_NONE));
	CU_ASSERT_FATAL(!munmap(m + 2 * page, page));
	return m;
}

/* Post a transfer of len bytes at l and expect -EFAULT, then the request
 * is idle and freeable. */
static void expect_efault(struct rdmaxfer_peer *p, enum rdmaxfer_op op,
			  void *l, size_t len, const char *what)
{
	struct rdmaxfer_desc d;
	struct rdmaxfer_req *req;
	int ret;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 4096, len, &d), 0);
	ret = prep(p, op, l, &d, &req);
	if (!ret)
		ret = rdmaxfer_req_post(req);
	else
		req = NULL;
	if (ret != -EFAULT)
		rc_diag("%s %s of %zu B: %s", what, op == RDMAXFER_OP_WRITE ?
			"WRITE" : "READ", len, rdmaxfer_strerror(ret));
	CU_ASSERT_EQUAL(ret, -EFAULT);
	if (req) {
		CU_ASSERT_EQUAL(rdmaxfer_req_test(req), -EALREADY);
		CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	}
}

/*
 * PROT_NONE and unmapped local memory: WRITE (inline-sized and large),
 * READ, an atomic's result word and a notification's message fail with
 * -EFAULT; the peer is untouched and works on.
 */
static void test_bad_pointers(void)
{
	struct rdmaxfer_agent_info info;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct rdmaxfer_desc d;
	struct rdmaxfer_req *req;
	uint8_t *m, *areas[4];
	const char *names[4] = { "PROT_NONE", "unmapped", "straddling",
				 "below mmap_min_addr" };
	size_t small, k;
	int ret;

	CU_ASSERT_EQUAL_FATAL(client(1, 0, UINT32_MAX, &a, &p), 0);
	m = bad_area();
	rdmaxfer_agent_query(a, &info);
	small = info.max_inline ? info.max_inline : 16;
	if (small > 32)
		small = 32;
	areas[0] = m + page;
	areas[1] = m + 2 * page;
	areas[2] = m + page - 8;	/* 8 good bytes, then PROT_NONE */
	areas[3] = (uint8_t *)(uintptr_t)page;
	for (k = 0; k < 4; k++) {
		/* nothing was mapped into the hole meanwhile */
		CU_ASSERT_FATAL(msync(m + 2 * page, page, MS_ASYNC) == -1 &&
				errno == ENOMEM);
		expect_efault(p, RDMAXFER_OP_WRITE, areas[k], small, names[k]);
		expect_efault(p, RDMAXFER_OP_WRITE, areas[k], 4096, names[k]);
		expect_efault(p, RDMAXFER_OP_READ, areas[k], small, names[k]);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 64, &d), 0);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_atomic_prepare(p,
				RDMAXFER_OP_FADD, &d, 0, 1, 0,
				(uint64_t *)(void *)(k == 2 ? areas[0] :
						     areas[k]), &req), 0);
		ret = rdmaxfer_req_post(req);
		if (ret != -EFAULT)
			rc_diag("%s atomic result: %s", names[k],
				rdmaxfer_strerror(ret));
		CU_ASSERT_EQUAL(ret, -EFAULT);
		CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
		ret = rdmaxfer_notif_send(p, 1, areas[k], 64);
		if (ret != -EFAULT)
			rc_diag("%s message: %s", names[k],
				rdmaxfer_strerror(ret));
		CU_ASSERT_EQUAL(ret, -EFAULT);
	}
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_CONNECTED);
	/* good memory still works, on the same peer */
	fill(cli_buf, 8192, 8);
	memset(srv_buf, 0, 8192);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 8192, &d), 0);
	{
		struct rdmaxfer_iov iov = { cli_buf, 8192 };

		CU_ASSERT_EQUAL(xfer_sync(p, RDMAXFER_OP_WRITE, &iov, &d, 1,
					  NULL), 0);
	}
	CU_ASSERT(!memcmp(srv_buf, cli_buf, 8192));
	CU_ASSERT_EQUAL(rdmaxfer_notif_send(p, 2, cli_buf, 64), 0);
	munmap(m, 2 * page);
	rdmaxfer_agent_destroy(a);
}

/*
 * A request that worked, whose buffer is then unmapped: the repost fails
 * with -EFAULT (the cache monitor saw the unmap, the registration is
 * retried and refused).  Without a monitor the cache cannot know: skipped.
 */
static void test_bad_pointer_after_unmap(void)
{
	struct rdmaxfer_agent_info info;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct rdmaxfer_desc d;
	struct rdmaxfer_req *req[2];
	uint8_t *m;
	size_t len[2] = { 16, 3 * 4096 };
	int k, ret;

	CU_ASSERT_EQUAL_FATAL(client(1, 0, UINT32_MAX, &a, &p), 0);
	rdmaxfer_agent_query(a, &info);
	if (!strcmp(info.cache_monitor, "none")) {
		rc_skip("cache monitor \"none\" cannot see an unmap");
		rdmaxfer_agent_destroy(a);
		return;
	}
	m = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(m != MAP_FAILED);
	memset(m, 0x22, 4 * page);
	for (k = 0; k < 2; k++) {
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, len[k], &d),
				      0);
		CU_ASSERT_EQUAL_FATAL(prep(p, RDMAXFER_OP_WRITE, m + 8, &d,
					   &req[k]), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_post(req[k]), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_wait(req[k], WAIT_MS), 0);
	}
	CU_ASSERT_FATAL(!munmap(m, 4 * page));
	for (k = 0; k < 2; k++) {
		ret = rdmaxfer_req_post(req[k]);
		if (ret != -EFAULT)
			rc_diag("repost of %zu B after munmap: %s", len[k],
				rdmaxfer_strerror(ret));
		CU_ASSERT_EQUAL(ret, -EFAULT);
		if (!ret)
			rdmaxfer_req_wait(req[k], WAIT_MS);
		CU_ASSERT_EQUAL(rdmaxfer_req_free(req[k]), 0);
	}
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_CONNECTED);
	rdmaxfer_agent_destroy(a);
}

/* ------------------------------------------------------------ inline */

/*
 * Agents asking for no inline data, the default, a little, and more
 * than rxe grants (its create fails, the library retries without): WRITEs
 * around each agent's granted size land byte for byte, and so do
 * notification messages around it.
 */
static void test_inline_granted(void)
{
	static const uint32_t ask[] = { 0, 24, 64, 4096 };
	struct rdmaxfer_notif *nb = calloc(4, sizeof(*nb));
	size_t k, j;

	CU_ASSERT_FATAL(nb != NULL);
	drain_srv();
	for (k = 0; k < sizeof(ask) / sizeof(ask[0]); k++) {
		struct rdmaxfer_agent_info info;
		struct rdmaxfer_agent *a;
		struct rdmaxfer_peer *p;
		size_t sizes[6];

		CU_ASSERT_EQUAL_FATAL(client(2, 0, ask[k], &a, &p), 0);
		rdmaxfer_agent_query(a, &info);
		rc_diag("asked inline %u, granted %u", ask[k], info.max_inline);
		CU_ASSERT(info.max_inline <= 4096);
		sizes[0] = 1;
		sizes[1] = info.max_inline > 1 ? info.max_inline - 1 : 2;
		sizes[2] = info.max_inline ? info.max_inline : 3;
		sizes[3] = info.max_inline + 1;
		sizes[4] = 200;
		sizes[5] = 1000;
		for (j = 0; j < 6; j++) {
			struct rdmaxfer_iov iov = { cli_buf + 5, sizes[j] };
			struct rdmaxfer_desc d;
			int ret, got;

			fill(iov.addr, iov.len, (uint32_t)(k * 10 + j + 1));
			memset(srv_buf, 0, 4096);
			CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 7,
							sizes[j], &d), 0);
			CU_ASSERT_EQUAL(xfer_sync(p, RDMAXFER_OP_WRITE, &iov,
						  &d, 1, NULL), 0);
			CU_ASSERT(!memcmp(srv_buf + 7, iov.addr, iov.len));
			CU_ASSERT_EQUAL(srv_buf[7 + iov.len], 0);
			do {
				ret = rdmaxfer_notif_send(p, (uint32_t)j,
							  iov.addr, iov.len);
				if (ret == -EAGAIN)
					rdmaxfer_progress(a);
			} while (ret == -EAGAIN);
			CU_ASSERT_EQUAL(ret, 0);
			got = rdmaxfer_wait_notifs(srv, nb, 4, WAIT_MS);
			CU_ASSERT_EQUAL(got, 1);
			if (got == 1) {
				CU_ASSERT_EQUAL(nb[0].len, iov.len);
				CU_ASSERT(!memcmp(nb[0].data, iov.addr,
						  iov.len));
			}
		}
		rdmaxfer_agent_destroy(a);
	}
	free(nb);
}

/* ------------------------------------- chains that fail partway, -ECANCELED */

/*
 * Fault injection: the agents' device context is librdmacm's, shared in
 * the process, so swapping its post_send hook reaches the library's
 * ibv_post_send().  When armed, the next post on QP fault_qpn with more
 * than fault_at WRs posts the first fault_at and refuses the next with
 * EINVAL, as a provider does with a WR it cannot take; the fault_then
 * posts on that QP after it are then refused outright.
 */
static int (*real_post_send)(struct ibv_qp *, struct ibv_send_wr *,
			     struct ibv_send_wr **);
static struct ibv_context *fault_ctx;
static uint32_t fault_qpn;
static int fault_at = -1;
static int fault_then, fault_more;
static int faults;

static int faulty_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			    struct ibv_send_wr **bad)
{
	struct ibv_send_wr *w = wr, *cut = NULL;
	int i, ret;

	if (qp->qp_num != fault_qpn)
		return real_post_send(qp, wr, bad);
	if (fault_more > 0) {
		fault_more--;
		faults++;
		*bad = wr;
		return EINVAL;
	}
	if (fault_at < 0)
		return real_post_send(qp, wr, bad);
	for (i = 0; w && i < fault_at; i++) {
		cut = w;
		w = w->next;
	}
	if (!w)
		return real_post_send(qp, wr, bad);
	fault_at = -1;
	fault_more = fault_then;
	fault_then = 0;
	faults++;
	ret = 0;
	if (cut) {
		cut->next = NULL;
		ret = real_post_send(qp, wr, bad);
		cut->next = w;
	}
	if (ret)
		return ret;
	*bad = w;
	return EINVAL;
}

/* Hook the context every agent of this process uses. */
static void fault_install(void)
{
	struct ibv_context **list;
	int n;

	list = rdma_get_devices(&n);
	CU_ASSERT_FATAL(list && n > 0);
	fault_ctx = list[0];
	rdma_free_devices(list);
	if (!real_post_send)
		real_post_send = fault_ctx->ops.post_send;
	fault_ctx->ops.post_send = faulty_post_send;
}

static void fault_remove(void)
{
	if (fault_ctx && real_post_send)
		fault_ctx->ops.post_send = real_post_send;
	fault_at = -1;
	fault_more = 0;
	fault_then = 0;
	fault_qpn = 0;
}

/* Learn the QP number of a one-QP client peer: a probe post through the
 * hook with fault_qpn 0 records the last QP seen. */
static uint32_t seen_qpn;

static int recording_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			       struct ibv_send_wr **bad)
{
	seen_qpn = qp->qp_num;
	return real_post_send(qp, wr, bad);
}

static uint32_t peer_qpn(struct rdmaxfer_peer *p)
{
	struct rdmaxfer_desc d;
	struct rdmaxfer_iov iov = { cli_buf, 8 };

	fault_ctx->ops.post_send = recording_post_send;
	seen_qpn = 0;
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, 0, 8, &d), 0);
	CU_ASSERT_EQUAL(xfer_sync(p, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL), 0);
	fault_ctx->ops.post_send = faulty_post_send;
	return seen_qpn;
}

/* The hook, armed for the one QP of peer p. */
static void fault_install_on(struct rdmaxfer_peer *p)
{
	fault_install();
	fault_qpn = peer_qpn(p);
	CU_ASSERT_FATAL(fault_qpn != 0);
}

struct xreq {
	struct rdmaxfer_req *req;
	struct rdmaxfer_iov iov[2];
	struct rdmaxfer_desc d[2];
	unsigned int np;
	int ret;
};

/*
 * The shape of the chains xreqs_prepare() makes: requests of 1 or 2 pairs
 * (the general chain building of xfer.c's rx_flush_backlog()), or of one
 * pair each (its flush_singles(), the batch doorbell of small messages).
 */
static bool xreq_singles;

/* n requests of 1 or 2 pairs (small and a few KiB; one small pair each
 * with xreq_singles), WRITE, laid out at distinct offsets; req i's first
 * WR is WR first[i] of the chain. */
static void xreqs_prepare(struct xreq *x, int n, struct rdmaxfer_peer *p,
			  unsigned int *first)
{
	size_t off = 64;
	unsigned int w = 0;
	int i, j;

	for (i = 0; i < n; i++) {
		x[i].np = xreq_singles ? 1 : 1 + i % 2;
		first[i] = w;
		for (j = 0; j < (int)x[i].np; j++) {
			size_t len = j ? 3000 + i : 40 + i;

			x[i].iov[j].addr = cli_buf + off;
			x[i].iov[j].len = len;
			CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, off + 1,
								len, &x[i].d[j]),
					      0);
			off += len + 64;
			w++;
		}
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p, RDMAXFER_OP_WRITE,
				x[i].iov, x[i].np, x[i].d, x[i].np, NULL,
				&x[i].req), 0);
	}
	fill(cli_buf, off, 61);
	memset(srv_buf, 0, off + 64);
}

static bool xreq_landed(const struct xreq *x)
{
	unsigned int j;

	for (j = 0; j < x->np; j++)
		if (memcmp((void *)(uintptr_t)x->d[j].addr, x->iov[j].addr,
			   x->iov[j].len))
			return false;
	return true;
}

static void xreqs_post(struct xreq *x, int n)
{
	int i;

	for (i = 0; i < n; i++)
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post_flags(x[i].req,
				i + 1 < n ? RDMAXFER_POST_MORE : 0), 0);
}

/*
 * One doorbell of 12 requests (18 WRs, one signalled: the rest ride on
 * it) that the provider refuses at the first WR of request BAD, then at
 * a WR in the middle of it: the requests before it went out and complete
 * (their WRs are retired by a terminator), the refused one fails with
 * -EINVAL at once and is freed right away, the ones after it go out with
 * the next doorbell and complete.  The peer stays connected.  Then every
 * request is freed, in an order that differs per round.  With singles,
 * 12 requests of one WR each (flush_singles()), and round 1 refuses the
 * chain's last WR, the one that carries the others.
 */
static void chain_refused_partway(bool singles)
{
	enum { N = 12, BAD = 5 };
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct xreq x[N];
	unsigned int first[N];
	int round, i, ret;

	xreq_singles = singles;
	CU_ASSERT_EQUAL_FATAL(client(1, 0, UINT32_MAX, &a, &p), 0);
	fault_install_on(p);
	for (round = 0; round < 3; round++) {
		int victim = round == 2 ? 0 : round == 1 && singles ? N - 1 :
			     BAD;

		memset(x, 0, sizeof(x));
		xreqs_prepare(x, N, p, first);
		/* round 0: refuse BAD's first WR; 1: its second WR (singles:
		 * the last request's); 2: the very first WR of the chain */
		fault_at = round == 0 ? (int)first[BAD] :
			   round == 1 && singles ? (int)first[N - 1] :
			   round == 1 ? (int)first[BAD] + 1 : 0;
		faults = 0;
		xreqs_post(x, N);
		CU_ASSERT_EQUAL(faults, 1);
		/* free it as soon as it failed, before the rest */
		ret = rdmaxfer_req_wait(x[victim].req, 10000);
		if (ret != -EINVAL)
			rc_diag("round %d: refused request: %s", round,
				rdmaxfer_strerror(ret));
		CU_ASSERT_EQUAL(ret, -EINVAL);
		CU_ASSERT_EQUAL(rdmaxfer_req_free(x[victim].req), 0);
		x[victim].req = NULL;
		for (i = 0; i < N; i++) {
			if (!x[i].req)
				continue;
			x[i].ret = rdmaxfer_req_wait(x[i].req, 10000);
			if (x[i].ret)
				rc_diag("round %d: request %d: %s", round, i,
					rdmaxfer_strerror(x[i].ret));
			CU_ASSERT_EQUAL(x[i].ret, 0);
			CU_ASSERT(xreq_landed(&x[i]));
		}
		CU_ASSERT_EQUAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_CONNECTED);
		for (i = 0; i < N; i++) {
			int k = round == 1 ? N - 1 - i : (i * 5 + round) % N;

			if (x[k].req)
				CU_ASSERT_EQUAL(rdmaxfer_req_free(x[k].req), 0);
			x[k].req = NULL;
		}
	}
	fault_remove();
	rdmaxfer_agent_destroy(a);
	xreq_singles = false;
}

static void test_chain_refused_partway(void)
{
	chain_refused_partway(false);
}

static void test_chain_refused_partway_singles(void)
{
	chain_refused_partway(true);
}

/*
 * Like the above, but the terminator is refused too: the QP takes nothing,
 * so the peer fails, and the terminator goes to the QP in error, where it
 * is flushed after the WRs before it.  Every request reaches a terminal
 * state: those before the refused one completed (their data is there) or
 * were flushed, the refused one fails with -EINVAL, those after it never
 * reached the send queue and report -ECANCELED; each is freed as soon as
 * it is terminal.  Then the peer reconnects and works.
 */
static void test_chain_refused_terminator_too(void)
{
	enum { N = 8, BAD = 4 };
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct xreq x[N];
	unsigned int first[N];
	struct rdmaxfer_iov iov = { cli_buf, 100 };
	struct rdmaxfer_desc d;
	int i, ok = 0;

	CU_ASSERT_EQUAL_FATAL(client(1, 0, UINT32_MAX, &a, &p), 0);
	fault_install_on(p);
	memset(x, 0, sizeof(x));
	xreqs_prepare(x, N, p, first);
	fault_at = (int)first[BAD];
	fault_then = 1;		/* the terminator, once */
	faults = 0;
	xreqs_post(x, N);
	CU_ASSERT_EQUAL(faults, 2);
	CU_ASSERT_NOT_EQUAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_CONNECTED);
	for (i = N - 1; i >= 0; i--) {
		x[i].ret = rdmaxfer_req_wait(x[i].req, 10000);
		if (i > BAD) {
			CU_ASSERT_EQUAL(x[i].ret, -ECANCELED);
		} else if (i == BAD) {
			CU_ASSERT_EQUAL(x[i].ret, -EINVAL);
		} else if (!x[i].ret) {
			ok++;
			CU_ASSERT(xreq_landed(&x[i]));
		} else {
			CU_ASSERT_EQUAL(x[i].ret, -ECANCELED);
		}
		CU_ASSERT_EQUAL(rdmaxfer_req_free(x[i].req), 0);
	}
	rc_diag("of the %d requests before the refused one, %d completed, "
		"the others were flushed", BAD, ok);
	fault_remove();
	CU_ASSERT_EQUAL(rdmaxfer_peer_reconnect(p, 10000), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 100, &d), 0);
	CU_ASSERT_EQUAL(xfer_sync(p, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL), 0);
	rdmaxfer_agent_destroy(a);
}

/*
 * A chain refused partway whose agent goes away before anyone polls: the
 * terminator is on the send queue and its completion is never looked at
 * (the QP is destroyed, the generation check drops whatever is still in
 * the CQ).  The terminator must be freed by the teardown all the same:
 * under ASan's leak check (the sanitizer VM run) a terminator freed only
 * by its completion is a reported leak.  The same for a peer that fails
 * and is aborted: the abort frees it (conn.c, rx_peer_abort()).  One
 * fault, at a WR in the middle of the chain, means a terminator went out
 * for the WRs before it.
 */
static void test_chain_refused_then_gone(void)
{
	enum { N = 12, BAD = 5 };
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct xreq x[N];
	unsigned int first[N];

	CU_ASSERT_EQUAL_FATAL(client(1, 0, UINT32_MAX, &a, &p), 0);
	fault_install_on(p);
	memset(x, 0, sizeof(x));
	xreqs_prepare(x, N, p, first);
	fault_at = (int)first[BAD];
	faults = 0;
	xreqs_post(x, N);
	CU_ASSERT_EQUAL(faults, 1);
	fault_remove();
	/* caller progress, and no call since the post: nothing was polled
	 * (a test or wait would progress), so the terminator's completion
	 * is still unseen; the requests go with the agent */
	rdmaxfer_agent_destroy(a);
}

/*
 * A remote error in the middle of a chain longer than the send queue
 * (16 entries, 40 requests of 1-2 WRs): the requests before the bad one
 * complete, the bad one fails with the remote error, and every request
 * after it, whether flushed from the send queue or still waiting for
 * room in the backlog, reports -ECANCELED, not the bad one's error.  The
 * requests are freed as soon as each is terminal, in a scrambled order.
 */
static void never_posted_cancelled(bool singles)
{
	enum { N = 40, BAD = 2 };
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct xreq x[N];
	unsigned int first[N];
	int i, left, cancelled = 0;
	double end;

	xreq_singles = singles;
	CU_ASSERT_EQUAL_FATAL(client(1, 16, UINT32_MAX, &a, &p), 0);
	memset(x, 0, sizeof(x));
	xreqs_prepare(x, N, p, first);
	/* rebuild BAD with a key the server does not know */
	CU_ASSERT_EQUAL(rdmaxfer_req_free(x[BAD].req), 0);
	x[BAD].d[0].rkey ^= 0x5a5a00;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p, RDMAXFER_OP_WRITE,
			x[BAD].iov, x[BAD].np, x[BAD].d, x[BAD].np, NULL,
			&x[BAD].req), 0);
	xreqs_post(x, N);
	for (i = 0; i < N; i++)
		x[i].ret = -EINPROGRESS;
	end = now_s() + 15;
	for (left = N; left && now_s() < end;) {
		for (i = 0; i < N; i++) {
			int k = (i * 7 + 3) % N, ret;

			if (!x[k].req)
				continue;
			ret = rdmaxfer_req_test(x[k].req);
			if (ret == -EINPROGRESS)
				continue;
			x[k].ret = ret;
			CU_ASSERT_EQUAL(rdmaxfer_req_free(x[k].req), 0);
			x[k].req = NULL;
			left--;
		}
		usleep(200);
	}
	CU_ASSERT_EQUAL(left, 0);
	for (i = 0; i < N; i++) {
		if (i < BAD) {
			CU_ASSERT_EQUAL(x[i].ret, 0);
		} else if (i == BAD) {
			CU_ASSERT(x[i].ret == -EACCES || x[i].ret == -EREMOTEIO);
		} else {
			if (x[i].ret != -ECANCELED && cancelled++ < 3)
				rc_diag("request %d after the bad one: %s", i,
					rdmaxfer_strerror(x[i].ret));
			CU_ASSERT_EQUAL(x[i].ret, -ECANCELED);
		}
	}
	rdmaxfer_agent_destroy(a);
	xreq_singles = false;
}

static void test_never_posted_cancelled(void)
{
	never_posted_cancelled(false);
}

/* The same with 40 requests of one WR each: the first doorbell takes 16
 * (more than fit: the general path), the rest wait in the backlog. */
static void test_never_posted_cancelled_singles(void)
{
	never_posted_cancelled(true);
}

/*
 * What each doorbell of the hooked QP carried: its WRs and which of them
 * were signalled (bit i: WR i), for chains of up to 64.
 */
static int chain_posts;
static int chain_wrs[8];
static uint64_t chain_signalled[8];

static int chain_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad)
{
	const struct ibv_send_wr *w;
	int i = 0;

	if (qp->qp_num == fault_qpn && chain_posts < 8) {
		chain_signalled[chain_posts] = 0;
		for (w = wr; w; w = w->next, i++)
			if (i < 64 && (w->send_flags & IBV_SEND_SIGNALED))
				chain_signalled[chain_posts] |= 1ULL << i;
		chain_wrs[chain_posts++] = i;
	}
	return real_post_send(qp, wr, bad);
}

/* The signalling rule of xfer.c: WR i (from 0) of a chain of n is
 * signalled if it is every interval-th one or the last. */
static uint64_t chain_rule(int n, uint32_t interval)
{
	uint64_t m = 1ULL << (n - 1);
	int i;

	for (i = (int)interval - 1; i < n; i += (int)interval)
		m |= 1ULL << i;
	return m;
}

/* A caller-mode client of one QP with this signal interval, its QP
 * hooked (fault_install_on()). */
static void hooked_client(uint32_t interval, struct rdmaxfer_agent **ap,
			  struct rdmaxfer_peer **pp)
{
	struct rdmaxfer_agent_attr attr;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_CALLER;
	attr.signal_interval = interval;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, ap), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_connect(*ap, addr, srv_port, 10000, pp),
			      0);
	fault_install_on(*pp);
}

/*
 * One doorbell of N requests with a signal interval of 4: the chain has
 * one WR per pair, signalled every 4th and at its end, and every request
 * completes with its data in place, for requests of one WR each
 * (flush_singles()) and for a mix of one and two (the general path): the
 * two build the same chains.  Then 40 requests of one WR on a send queue
 * of 16: the first doorbell takes what fits, the rest follow as slots
 * retire (a backlog longer than the room is the general path's, the
 * rest of it flush_singles()'s), and all complete.
 */
static void test_chain_signals(void)
{
	enum { N = 11, LONG = 40 };
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct xreq x[LONG];
	unsigned int first[LONG];
	int shape, i, wrs;

	hooked_client(4, &a, &p);
	for (shape = 0; shape < 2; shape++) {
		xreq_singles = shape == 0;
		memset(x, 0, sizeof(x));
		xreqs_prepare(x, N, p, first);
		wrs = (int)(first[N - 1] + x[N - 1].np);
		fault_ctx->ops.post_send = chain_post_send;
		chain_posts = 0;
		xreqs_post(x, N);
		fault_ctx->ops.post_send = faulty_post_send;
		CU_ASSERT_EQUAL(chain_posts, 1);
		CU_ASSERT_EQUAL(chain_wrs[0], wrs);
		if (chain_signalled[0] != chain_rule(wrs, 4))
			rc_diag("%s: signalled %#llx, the rule says %#llx",
				shape ? "mixed" : "singles",
				(unsigned long long)chain_signalled[0],
				(unsigned long long)chain_rule(wrs, 4));
		CU_ASSERT_EQUAL(chain_signalled[0], chain_rule(wrs, 4));
		for (i = 0; i < N; i++) {
			CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[i].req, 10000), 0);
			CU_ASSERT(xreq_landed(&x[i]));
			CU_ASSERT_EQUAL(rdmaxfer_req_free(x[i].req), 0);
		}
	}
	fault_remove();
	rdmaxfer_agent_destroy(a);

	CU_ASSERT_EQUAL_FATAL(client(1, 16, UINT32_MAX, &a, &p), 0);
	xreq_singles = true;
	memset(x, 0, sizeof(x));
	xreqs_prepare(x, LONG, p, first);
	xreqs_post(x, LONG);
	for (i = LONG - 1; i >= 0; i--) {
		CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[i].req, 10000), 0);
		CU_ASSERT(xreq_landed(&x[i]));
	}
	/* and again, reposted as they are: the backlog starts empty */
	xreqs_post(x, LONG);
	for (i = 0; i < LONG; i++) {
		CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[i].req, 10000), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_free(x[i].req), 0);
	}
	xreq_singles = false;
	rdmaxfer_agent_destroy(a);
}

/* Count the doorbells of the hooked QP. */
static int posts_seen;

static int counting_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			      struct ibv_send_wr **bad)
{
	if (qp->qp_num == fault_qpn)
		posts_seen++;
	return real_post_send(qp, wr, bad);
}

/*
 * The small-message doorbell (xfer.c, post_alone()): a request of one WR
 * posted alone rings one doorbell and lands; two such requests posted as
 * a batch (RDMAXFER_POST_MORE, then the last without) still ring one
 * doorbell between them.  A lone WR the provider refuses fails its
 * request with -EINVAL after exactly one attempt, nothing lands, the
 * peer stays connected, and the same request posted again goes out and
 * lands.
 */
static void test_lone_post(void)
{
	enum { N = 6 };
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct xreq x[N];
	unsigned int first[N];
	int i;

	CU_ASSERT_EQUAL_FATAL(client(1, 0, UINT32_MAX, &a, &p), 0);
	fault_install_on(p);
	memset(x, 0, sizeof(x));
	/* requests 0, 2 and 4 are of one WR */
	xreqs_prepare(x, N, p, first);
	fault_ctx->ops.post_send = counting_post_send;

	posts_seen = 0;
	CU_ASSERT_EQUAL(rdmaxfer_req_post(x[0].req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[0].req, 10000), 0);
	CU_ASSERT(xreq_landed(&x[0]));
	CU_ASSERT_EQUAL(posts_seen, 1);

	posts_seen = 0;
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(x[2].req, RDMAXFER_POST_MORE),
			0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(x[4].req, 0), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[2].req, 10000), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[4].req, 10000), 0);
	CU_ASSERT(xreq_landed(&x[2]) && xreq_landed(&x[4]));
	CU_ASSERT_EQUAL(posts_seen, 1);

	fault_ctx->ops.post_send = faulty_post_send;
	memset((void *)(uintptr_t)x[0].d[0].addr, 0, x[0].iov[0].len);
	fault_more = 1;
	faults = 0;
	CU_ASSERT_EQUAL(rdmaxfer_req_post(x[0].req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[0].req, 10000), -EINVAL);
	CU_ASSERT_EQUAL(faults, 1);
	CU_ASSERT(!xreq_landed(&x[0]));
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_CONNECTED);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(x[0].req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[0].req, 10000), 0);
	CU_ASSERT(xreq_landed(&x[0]));
	CU_ASSERT_EQUAL(faults, 1);

	for (i = 0; i < N; i++)
		CU_ASSERT_EQUAL(rdmaxfer_req_free(x[i].req), 0);
	fault_remove();
	rdmaxfer_agent_destroy(a);
}

/*
 * rdmaxfer_req_post_list() (xfer.c): N requests of one and two WRs in one
 * call ring one doorbell whose chain is the one N posts with
 * RDMAXFER_POST_MORE build (the same WRs, the same signals), and all
 * land.  With RDMAXFER_POST_MORE in flags nothing reaches the device
 * before the next test.  Bad arguments post nothing (-EINVAL): a NULL
 * list, a NULL request, an unknown flag, requests of two agents.  A list
 * whose third request is already in flight stops there with -EBUSY:
 * *posted is 2, the two before it land, the one after it is not posted.
 * A list of one rings one doorbell, or none with RDMAXFER_POST_MORE.
 */
static void test_post_list(void)
{
	enum { N = 11 };
	struct rdmaxfer_agent *a, *a2;
	struct rdmaxfer_peer *p, *p2;
	struct rdmaxfer_req *list[N], *other;
	struct xreq x[N];
	unsigned int first[N], posted;
	int i, wrs;

	hooked_client(4, &a, &p);
	memset(x, 0, sizeof(x));
	xreqs_prepare(x, N, p, first);
	wrs = (int)(first[N - 1] + x[N - 1].np);
	for (i = 0; i < N; i++)
		list[i] = x[i].req;

	/* bad arguments: nothing posted, nothing rung */
	fault_ctx->ops.post_send = chain_post_send;
	chain_posts = 0;
	posted = 7;
	CU_ASSERT_EQUAL(rdmaxfer_req_post_list(NULL, 1, 0, &posted), -EINVAL);
	CU_ASSERT_EQUAL(posted, 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_list(list, N, 2, NULL), -EINVAL);
	list[5] = NULL;
	CU_ASSERT_EQUAL(rdmaxfer_req_post_list(list, N, 0, &posted), -EINVAL);
	list[5] = x[5].req;
	CU_ASSERT_EQUAL_FATAL(client(1, 0, UINT32_MAX, &a2, &p2), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p2, RDMAXFER_OP_WRITE,
			x[0].iov, 1, x[0].d, 1, NULL, &other), 0);
	list[N - 1] = other;
	CU_ASSERT_EQUAL(rdmaxfer_req_post_list(list, N, 0, &posted), -EINVAL);
	CU_ASSERT_EQUAL(posted, 0);
	list[N - 1] = x[N - 1].req;
	CU_ASSERT_EQUAL(rdmaxfer_req_post_list(list, 0, 0, &posted), 0);
	CU_ASSERT_EQUAL(posted, 0);
	for (i = 0; i < N; i++)
		CU_ASSERT_EQUAL(rdmaxfer_req_test(x[i].req), -EALREADY);
	CU_ASSERT_EQUAL(rdmaxfer_req_test(other), -EALREADY);
	CU_ASSERT_EQUAL(chain_posts, 0);

	/* the whole list: one doorbell, the chain of N posts */
	CU_ASSERT_EQUAL(rdmaxfer_req_post_list(list, N, 0, &posted), 0);
	CU_ASSERT_EQUAL(posted, N);
	CU_ASSERT_EQUAL(chain_posts, 1);
	CU_ASSERT_EQUAL(chain_wrs[0], wrs);
	CU_ASSERT_EQUAL(chain_signalled[0], chain_rule(wrs, 4));
	for (i = 0; i < N; i++) {
		CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[i].req, 10000), 0);
		CU_ASSERT(xreq_landed(&x[i]));
	}

	/* held: the doorbell waits for the next test */
	memset(srv_buf, 0, 64 * 1024);
	chain_posts = 0;
	CU_ASSERT_EQUAL(rdmaxfer_req_post_list(list, N, RDMAXFER_POST_MORE,
					       &posted), 0);
	CU_ASSERT_EQUAL(posted, N);
	CU_ASSERT_EQUAL(chain_posts, 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(x[0].req), -EBUSY);
	for (i = 0; i < N; i++) {
		CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[i].req, 10000), 0);
		CU_ASSERT(xreq_landed(&x[i]));
	}
	CU_ASSERT_EQUAL(chain_posts, 1);
	CU_ASSERT_EQUAL(chain_wrs[0], wrs);

	/* stopped by a request in flight: a prefix goes out */
	memset(srv_buf, 0, 64 * 1024);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(x[2].req, RDMAXFER_POST_MORE),
			0);
	chain_posts = 0;
	CU_ASSERT_EQUAL(rdmaxfer_req_post_list(list, 4, 0, &posted), -EBUSY);
	CU_ASSERT_EQUAL(posted, 2);
	CU_ASSERT_EQUAL(chain_posts, 1);
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[i].req, 10000), 0);
		CU_ASSERT(xreq_landed(&x[i]));
	}
	/* x[3]: done in the round before, not posted again */
	CU_ASSERT_EQUAL(rdmaxfer_req_test(x[3].req), 0);
	CU_ASSERT(!xreq_landed(&x[3]));

	/* a list of one: one doorbell; then -EBUSY while it is held */
	chain_posts = 0;
	CU_ASSERT_EQUAL(rdmaxfer_req_post_list(&list[3], 1, 0, &posted), 0);
	CU_ASSERT_EQUAL(posted, 1);
	CU_ASSERT_EQUAL(chain_posts, 1);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[3].req, 10000), 0);
	CU_ASSERT(xreq_landed(&x[3]));
	CU_ASSERT_EQUAL(rdmaxfer_req_post_list(&list[4], 1, RDMAXFER_POST_MORE,
					       &posted), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_list(&list[4], 1, 0, &posted),
			-EBUSY);
	CU_ASSERT_EQUAL(posted, 0);
	CU_ASSERT_EQUAL(chain_posts, 1);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(x[4].req, 10000), 0);
	CU_ASSERT_EQUAL(chain_posts, 2);
	fault_ctx->ops.post_send = faulty_post_send;

	for (i = 0; i < N; i++)
		CU_ASSERT_EQUAL(rdmaxfer_req_free(x[i].req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(other), 0);
	fault_remove();
	rdmaxfer_agent_destroy(a2);
	rdmaxfer_agent_destroy(a);
}

/*
 * A list checks each request's registrations against the cache's
 * generation as a post does: a request whose buffer was unmapped and
 * mapped again since its last post is registered afresh, so a WRITE
 * sends the new mapping's bytes, not those of the pages the old
 * registration still pins.  Three rounds: the first registers, the next
 * two follow a remap each.
 */
static void test_post_list_remapped(void)
{
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct rdmaxfer_req *list[2];
	struct rdmaxfer_iov iov[2];
	struct rdmaxfer_desc d[2];
	uint8_t *b, *b2;
	int i, round;

	CU_ASSERT_EQUAL_FATAL(client(1, 0, UINT32_MAX, &a, &p), 0);
	b = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(b != MAP_FAILED);
	iov[0].addr = cli_buf;
	iov[0].len = 256;
	iov[1].addr = b + 100;
	iov[1].len = 256;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 256, &d[0]), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 4096, 256, &d[1]), 0);
	for (i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p,
				RDMAXFER_OP_WRITE, &iov[i], 1, &d[i], 1, NULL,
				&list[i]), 0);
	for (round = 0; round < 3; round++) {
		fill(cli_buf, 256, 70 + round);
		fill(b + 100, 256, 80 + round);
		memset(srv_buf, 0, 8192);
		CU_ASSERT_EQUAL(rdmaxfer_req_post_list(list, 2, 0, NULL), 0);
		for (i = 0; i < 2; i++)
			CU_ASSERT_EQUAL(rdmaxfer_req_wait(list[i], 10000), 0);
		CU_ASSERT(!memcmp(srv_buf, cli_buf, 256));
		CU_ASSERT(!memcmp(srv_buf + 4096, b + 100, 256));
		/* new pages at the same address for the next round */
		CU_ASSERT_FATAL(munmap(b, 2 * (size_t)page) == 0);
		b2 = mmap(b, 2 * (size_t)page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		CU_ASSERT_FATAL(b2 == b);
	}
	for (i = 0; i < 2; i++)
		CU_ASSERT_EQUAL(rdmaxfer_req_free(list[i]), 0);
	munmap(b, 2 * (size_t)page);
	rdmaxfer_agent_destroy(a);
}

static const struct rc_test_case cases[] = {
	{ "notif_slots_per_peer", test_notif_slots_per_peer },
	{ "remote_bounds", test_remote_bounds },
	{ "exports_list", test_exports_list },
	{ "exports_from_blob", test_exports_from_blob },
	{ "bad_pointers", test_bad_pointers },
	{ "bad_pointer_after_unmap", test_bad_pointer_after_unmap },
	{ "inline_granted", test_inline_granted },
	{ "chain_refused_partway", test_chain_refused_partway },
	{ "chain_refused_terminator_too", test_chain_refused_terminator_too },
	{ "chain_refused_then_gone", test_chain_refused_then_gone },
	{ "chain_refused_partway_singles", test_chain_refused_partway_singles },
	{ "never_posted_cancelled", test_never_posted_cancelled },
	{ "never_posted_cancelled_singles", test_never_posted_cancelled_singles },
	{ "chain_signals", test_chain_signals },
	{ "lone_post", test_lone_post },
	{ "post_list", test_post_list },
	{ "post_list_remapped", test_post_list_remapped },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	addr = rxe_addr_or_skip();
	signal(SIGPIPE, SIG_IGN);
	rc_add_suite("rdmaxfer_checks", suite_init, suite_cleanup, cases);
	return rc_test_main(argc, argv);
}
