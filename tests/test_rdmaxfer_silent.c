// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_silent.c - a request to a responder that never answers
 * ends with a transport error; a refused READ is always NAKed.
 *
 * The silent suite: an rdmaxfer peer connected to a raw librdmacm server in this
 * process (a thread that speaks the connect hello and welcome), whose QP
 * is then moved to the error state without a disconnect: a responder that
 * went silent, as a host that vanished or a responder that dropped its
 * NAK looks to the requester.  A READ, then after a reconnect a WRITE,
 * must end with -ETIMEDOUT (IBV_WC_RETRY_EXC_ERR) within a bound, the
 * request terminal (it can be freed) and the peer out of CONNECTED.  With
 * a retry count of 7, which rxe takes as "retry forever", the request
 * stayed in flight and the peer CONNECTED for good.
 *
 * refused/read_storm: many RDMA READs past the end of an exported range
 * of an rdmaxfer server agent (progress thread), each followed by a
 * reconnect: every one must fail with -EACCES within a bound.  On 7.3's
 * rxe the responder raises IBV_EVENT_QP_ACCESS_ERR before it sends its
 * NAK and drops the NAK if the QP is in the error state by then; a server
 * that moved its QP there on that event stalled the requester (about one
 * refused READ in a hundred under TCG).
 *
 * Skips (77) without $RXE_ADDR or an RDMA device.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define WAIT_MS		20000

#include "rdmaxfer_test_util.h"

/* a request to a silent responder must end within this: 7 local ACK
 * timeouts (rdma_cm's default for RoCE is about 0.5 s each) and margin */
#define SILENT_BOUND_MS	30000
#define BUF_LEN		4096
#define STORM_DEFAULT	150

static const char *addr;

/* ------------------------------------------------------- the raw server */

/*
 * A passive side of librdmaxfer's wire protocol written against
 * librdmacm directly, so the test can do to its QP what no rdmaxfer agent
 * does: move it to the error state and say nothing.  It accepts every
 * connect request with a welcome (RX_WELCOME_LEN bytes: magic "RDXH",
 * version 1, reserved, agent id; little-endian), and keeps the latest
 * connection's id.
 */
struct raw_srv {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint16_t port;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rdma_cm_id *conn;	/* latest established connection */
	unsigned int nestablished;
	bool stop;
	int error;
};

static struct raw_srv srv;

static void welcome(uint8_t *w)
{
	uint32_t magic = htole32(0x48584452U);
	uint16_t version = htole16(1);
	uint64_t id = htole64(0x5eedULL);

	memset(w, 0, 16);
	memcpy(w, &magic, 4);
	memcpy(w + 4, &version, 2);
	memcpy(w + 8, &id, 8);
}

static int raw_accept(struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *cp = &ev->param.conn;
	struct rdma_conn_param ap = { 0 };
	struct ibv_qp_init_attr qa = { 0 };
	uint8_t w[16];

	if (!srv.pd) {
		srv.pd = ibv_alloc_pd(ev->id->verbs);
		if (!srv.pd)
			return -errno;
		srv.mr = ibv_reg_mr(srv.pd, srv.buf, BUF_LEN,
				    IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_WRITE);
		if (!srv.mr)
			return -errno;
	}
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(ev->id, srv.pd, &qa))
		return -errno;
	welcome(w);
	ap.private_data = w;
	ap.private_data_len = sizeof(w);
	ap.responder_resources = cp->initiator_depth ? cp->initiator_depth : 1;
	ap.initiator_depth = cp->responder_resources ? 1 : 0;
	ap.rnr_retry_count = 7;
	if (rdma_accept(ev->id, &ap)) {
		int ret = -errno;

		rdma_destroy_qp(ev->id);
		return ret;
	}
	return 0;
}

static void raw_drop(struct rdma_cm_id *id)
{
	pthread_mutex_lock(&srv.lock);
	if (srv.conn == id)
		srv.conn = NULL;
	pthread_mutex_unlock(&srv.lock);
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static void *raw_thread(void *arg)
{
	struct pollfd pfd = { .fd = srv.ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&srv.lock);
		if (srv.stop) {
			pthread_mutex_unlock(&srv.lock);
			break;
		}
		pthread_mutex_unlock(&srv.lock);
		if (poll(&pfd, 1, 50) <= 0)
			continue;
		if (rdma_get_cm_event(srv.ch, &ev))
			continue;
		id = ev->id;
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if (raw_accept(ev)) {
				rdma_reject(id, NULL, 0);
				rdma_ack_cm_event(ev);
				rdma_destroy_id(id);
				continue;
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			pthread_mutex_lock(&srv.lock);
			srv.conn = id;
			srv.nestablished++;
			pthread_cond_broadcast(&srv.cond);
			pthread_mutex_unlock(&srv.lock);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_REJECTED:
			rdma_ack_cm_event(ev);
			raw_drop(id);
			continue;
		default:
			break;
		}
		rdma_ack_cm_event(ev);
	}
	return NULL;
}

static int raw_start(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	pthread_mutex_init(&srv.lock, NULL);
	pthread_cond_init(&srv.cond, NULL);
	srv.buf = aligned_alloc(4096, BUF_LEN);
	if (!srv.buf)
		return -ENOMEM;
	fill(srv.buf, BUF_LEN, 5);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return -EINVAL;
	srv.ch = rdma_create_event_channel();
	if (!srv.ch)
		return -errno;
	if (rdma_create_id(srv.ch, &srv.listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(srv.listen, (struct sockaddr *)&sin) ||
	    rdma_listen(srv.listen, 8))
		return -errno;
	srv.port = ntohs(rdma_get_src_port(srv.listen));
	return -pthread_create(&srv.thread, NULL, raw_thread, NULL);
}

static void raw_stop(void)
{
	pthread_mutex_lock(&srv.lock);
	srv.stop = true;
	pthread_mutex_unlock(&srv.lock);
	pthread_join(srv.thread, NULL);
	if (srv.conn)
		raw_drop(srv.conn);
	rdma_destroy_id(srv.listen);
	rdma_destroy_event_channel(srv.ch);
	if (srv.mr)
		ibv_dereg_mr(srv.mr);
	if (srv.pd)
		ibv_dealloc_pd(srv.pd);
	free(srv.buf);
}

/* Wait until the server saw connection number n established. */
static int raw_wait_established(unsigned int n)
{
	struct timespec ts;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&srv.lock);
	while (srv.nestablished < n && !ret)
		ret = pthread_cond_timedwait(&srv.cond, &srv.lock, &ts);
	pthread_mutex_unlock(&srv.lock);
	return ret ? -ETIMEDOUT : 0;
}

/* The server's current QP to the error state, without a word to the
 * peer: from now on it drops every request (no ACK, no NAK). */
static int raw_go_silent(void)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	int ret = -ENOTCONN;

	pthread_mutex_lock(&srv.lock);
	if (srv.conn && srv.conn->qp)
		ret = -ibv_modify_qp(srv.conn->qp, &qa, IBV_QP_STATE);
	pthread_mutex_unlock(&srv.lock);
	return ret;
}

/* ------------------------------------------------------------- silent */

static struct rdmaxfer_agent *cli;
static struct rdmaxfer_peer *peer;
static uint8_t *lbuf;

static int silent_init(void)
{
	struct rdmaxfer_agent_attr attr;

	if (raw_start())
		return 1;
	rdmaxfer_agent_attr_init(&attr);
	attr.flags = RDMAXFER_AGENT_NO_ENV;
	if (rdmaxfer_agent_create(&attr, &cli))
		return 1;
	if (rdmaxfer_connect(cli, addr, srv.port, 10000, &peer))
		return 1;
	return raw_wait_established(1) ? 1 : 0;
}

static int silent_cleanup(void)
{
	/* the agent first: its DREQ reaches the raw server before it stops */
	rdmaxfer_agent_destroy(cli);
	raw_stop();
	return 0;
}

static struct rdmaxfer_desc srv_desc(void)
{
	struct rdmaxfer_desc d = { 0 };

	d.addr = (uint64_t)(uintptr_t)srv.buf + 64;
	d.len = 64;
	d.rkey = srv.mr->rkey;
	d.kind = RDMAXFER_MEM_HOST;
	return d;
}

/*
 * op through the peer works; then the server goes silent, and the same
 * op must end with a transport retry error within SILENT_BOUND_MS: the
 * request terminal, the peer out of CONNECTED with -ETIMEDOUT.
 */
static void silent_run(enum rdmaxfer_op op)
{
	struct rdmaxfer_desc d = srv_desc();
	struct rdmaxfer_iov iov = { lbuf, d.len };
	struct rdmaxfer_req *req;
	double t0;
	int ret;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_peer_state(peer),
			      RDMAXFER_PEER_CONNECTED);
	memset(lbuf, 0, BUF_LEN);
	CU_ASSERT_EQUAL(xfer_sync(peer, op, &iov, &d, 1, NULL), 0);
	if (op == RDMAXFER_OP_READ)
		CU_ASSERT(!memcmp(lbuf, srv.buf + 64, d.len));
	CU_ASSERT_EQUAL_FATAL(raw_go_silent(), 0);

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(peer, op, &iov, 1, &d, 1,
						    NULL, &req), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post(req), 0);
	t0 = now_s();
	ret = rdmaxfer_req_wait(req, SILENT_BOUND_MS);
	rc_diag("%s to a silent responder: %d (%s) after %.2f s, peer state %d",
		op == RDMAXFER_OP_READ ? "READ" : "WRITE", ret,
		rdmaxfer_req_strerror(req), now_s() - t0,
		(int)rdmaxfer_peer_state(peer));
	CU_ASSERT_EQUAL(ret, -ETIMEDOUT);
	/* terminal, not a wait that gave up on a request still in flight */
	CU_ASSERT_EQUAL(rdmaxfer_req_test(req), -ETIMEDOUT);
	CU_ASSERT_STRING_EQUAL(rdmaxfer_req_strerror(req),
			       ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
	CU_ASSERT_NOT_EQUAL(rdmaxfer_peer_state(peer), RDMAXFER_PEER_CONNECTED);
	CU_ASSERT_EQUAL(rdmaxfer_peer_error(peer), -ETIMEDOUT);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), -ENOTCONN);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
}

static void test_silent_read(void)
{
	silent_run(RDMAXFER_OP_READ);
}

/* after a reconnect to the same server: it works again, then a WRITE */
static void test_silent_write(void)
{
	unsigned int n;

	pthread_mutex_lock(&srv.lock);
	n = srv.nestablished;
	pthread_mutex_unlock(&srv.lock);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_peer_reconnect(peer, 10000), 0);
	CU_ASSERT_EQUAL_FATAL(raw_wait_established(n + 1), 0);
	silent_run(RDMAXFER_OP_WRITE);
}

/* ------------------------------------------------------------ refused */

static struct rdmaxfer_agent *scli, *ssrv;
static struct rdmaxfer_peer *scp, *ssp;
static uint8_t *sarena;

static int refused_init(void)
{
	struct rdmaxfer_agent_attr attr;
	uint16_t port;

	rdmaxfer_agent_attr_init(&attr);
	attr.flags = RDMAXFER_AGENT_NO_ENV;
	if (rdmaxfer_agent_create(&attr, &scli))
		return 1;
	/* the server reacts to its QP's async events at once, as the
	 * access test's servers do */
	attr.progress = RDMAXFER_PROGRESS_THREAD;
	if (rdmaxfer_agent_create(&attr, &ssrv) ||
	    rdmaxfer_listen(ssrv, addr, 0) ||
	    rdmaxfer_listen_port(ssrv, &port))
		return 1;
	if (rdmaxfer_connect(scli, addr, port, 10000, &scp) ||
	    rdmaxfer_accept(ssrv, 10000, &ssp))
		return 1;
	sarena = aligned_alloc(4096, 2 * BUF_LEN);
	if (!sarena)
		return 1;
	fill(sarena, 2 * BUF_LEN, 9);
	return 0;
}

static int refused_cleanup(void)
{
	rdmaxfer_agent_destroy(scli);
	rdmaxfer_agent_destroy(ssrv);
	free(sarena);
	return 0;
}

static void test_read_storm(void)
{
	const char *s = getenv("RDMAXFER_TEST_STORM");
	int n = s && *s ? atoi(s) : STORM_DEFAULT;
	struct rdmaxfer_desc d, past;
	struct rdmaxfer_iov iov = { lbuf, 1 };
	struct rdmaxfer_mem *m;
	int i, refused = 0, other = 0, ret;
	double t0 = now_s(), worst = 0;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_register_access(ssrv, sarena + 512,
						BUF_LEN, RDMAXFER_MEM_HOST,
						RDMAXFER_ACCESS_REMOTE_READ,
						&m), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(m, 0, 0, &d), 0);
	past = d;
	past.addr = d.addr + d.len;
	past.len = 1;
	for (i = 0; i < n; i++) {
		struct rdmaxfer_peer *np;
		double t = now_s();

		ret = xfer_sync(scp, RDMAXFER_OP_READ, &iov, &past, 1, NULL);
		t = now_s() - t;
		if (t > worst)
			worst = t;
		if (ret == -EACCES) {
			refused++;
		} else {
			other++;
			rc_diag("refused READ %d: %d (%s) after %.2f s", i, ret,
				rdmaxfer_strerror(ret), t);
			if (ret == -ETIMEDOUT && rdmaxfer_peer_state(scp) ==
						 RDMAXFER_PEER_CONNECTED)
				break;	/* stalled: reconnect would not help */
		}
		if (rdmaxfer_peer_reconnect(scp, 10000))
			break;
		if (rdmaxfer_accept(ssrv, 10000, &np) == 0) {
			rdmaxfer_peer_destroy(ssp);
			ssp = np;
		}
	}
	rc_diag("%d refused READs: %d -EACCES, %d otherwise, in %.1f s, "
		"slowest %.3f s", n, refused, other, now_s() - t0, worst);
	CU_ASSERT_EQUAL(refused, n);
	/* and the READ inside the export still works */
	iov.len = 8;
	d.len = 8;
	CU_ASSERT_EQUAL(xfer_sync(scp, RDMAXFER_OP_READ, &iov, &d, 1, NULL), 0);
	CU_ASSERT(!memcmp(lbuf, sarena + 512, 8));
	rdmaxfer_mem_deregister(m);
}

static const struct rc_test_case silent_cases[] = {
	{ "read", test_silent_read },
	{ "write", test_silent_write },
	{ NULL, NULL }
};

static const struct rc_test_case refused_cases[] = {
	{ "read_storm", test_read_storm },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	int ret;

	addr = rxe_addr_or_skip();
	signal(SIGPIPE, SIG_IGN);
	lbuf = aligned_alloc(4096, BUF_LEN);
	if (!lbuf)
		return RC_EXIT_ERROR;
	rc_add_suite("silent", silent_init, silent_cleanup, silent_cases);
	rc_add_suite("refused", refused_init, refused_cleanup, refused_cases);
	ret = rc_test_main(argc, argv);
	free(lbuf);
	return ret;
}
