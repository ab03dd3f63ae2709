// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_robust.c - librdmaxfer never hangs, overflows or leaks
 * (rxe in the VM).
 *
 * - The CQ is sized for every QP's send queue plus the SRQ: many peers
 *   and many QPs per peer with every send queue full at batch 1, from an
 *   agent whose initial CQ is far too small, all complete.  A device
 *   whose max_cqe cannot hold them refuses the connection with -ENOSPC.
 * - A reconnect leaves no request behind: requests in flight, in the
 *   backlog and held by RDMAXFER_POST_MORE are all terminal when it
 *   returns, and can be reposted or freed.
 * - The passive side frees failed, partial and unknown connection
 *   attempts (raw librdmacm clients with truncated, foreign and partial
 *   hellos, abandoned), keeps at most max_half_open of them and still
 *   accepts a good peer afterwards.
 * - A mass failure moves every peer of every agent out of CONNECTED and
 *   every request to a terminal state within 10 s, and everything can be
 *   freed: with --port-down, the netdev under rxe going down (rxe's CM
 *   does not survive it: the suite re-creates the device afterwards);
 *   with --removal, the rxe device deleted under the agents (run last).
 *
 * Skips (77) without $RXE_ADDR or an RDMA device.  $RXE_DEV and
 * $RXE_NETDEV name the rxe device and its netdev (rxe0, eth0).
 */
#include <endian.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/wait.h>

#include <rdma/rdma_cma.h>

#define WAIT_MS		20000

#include "rdmaxfer_test_util.h"

/* what "within a bound" means for a mass failure */
#define FAIL_BOUND_S	10.0
/*
 * ... and for the device's removal, which on 7.3 under TCG is slow in the
 * kernel itself (rxe's unregistration disassociates every user context
 * before any error reaches user space): 4.9-5.7 s in CI's runs, 7.3-10.9 s
 * with three guests on the two cores.
 */
#define REMOVAL_BOUND_S	20.0

static const char *addr;

static const char *env_or(const char *name, const char *def)
{
	const char *s = getenv(name);

	return s && *s ? s : def;
}

struct server {
	struct rdmaxfer_agent *a;
	uint16_t port;
	uint8_t *buf;
	size_t len;
	struct rdmaxfer_mem *mem;
};

static int server_start(struct server *s, struct rdmaxfer_agent_attr *attr,
			size_t len)
{
	struct rdmaxfer_agent_attr def;
	int ret;

	memset(s, 0, sizeof(*s));
	if (!attr) {
		rdmaxfer_agent_attr_init(&def);
		def.progress = RDMAXFER_PROGRESS_THREAD;
		attr = &def;
	}
	ret = rdmaxfer_agent_create(attr, &s->a);
	if (ret)
		return ret;
	ret = rdmaxfer_listen(s->a, addr, 0);
	if (!ret)
		ret = rdmaxfer_listen_port(s->a, &s->port);
	s->len = len;
	s->buf = aligned_alloc(4096, len);
	if (!ret && !s->buf)
		ret = -ENOMEM;
	if (!ret) {
		memset(s->buf, 0, len);
		ret = rdmaxfer_mem_register(s->a, s->buf, len,
					    RDMAXFER_MEM_HOST, &s->mem);
	}
	if (ret) {
		rdmaxfer_agent_destroy(s->a);
		free(s->buf);
		s->a = NULL;
		s->buf = NULL;
	}
	return ret;
}

static void server_stop(struct server *s)
{
	rdmaxfer_agent_destroy(s->a);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

/* Connect n peers of a to s; the server's views go to spv (may be NULL:
 * then they stay in its accept queue). */
static int connect_peers(struct rdmaxfer_agent *a, struct server *s,
			 struct rdmaxfer_peer **pv, struct rdmaxfer_peer **spv,
			 unsigned int n)
{
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = rdmaxfer_connect(a, addr, s->port, 10000, &pv[i]);
		if (ret) {
			rc_diag("connect %u: %s", i, rdmaxfer_strerror(ret));
			return ret;
		}
		if (spv) {
			ret = rdmaxfer_accept(s->a, 10000, &spv[i]);
			if (ret) {
				rc_diag("accept %u: %s", i,
					rdmaxfer_strerror(ret));
				return ret;
			}
		}
	}
	return 0;
}

/*
 * Wait until every request is terminal or bound_s passes; returns how many
 * are still in progress.  Each request's result goes to res[i].
 */
static unsigned int wait_terminal(struct rdmaxfer_req **reqs, int *res,
				  unsigned int n, double bound_s)
{
	double t0 = now_s();
	unsigned int i, left;

	do {
		left = 0;
		for (i = 0; i < n; i++) {
			int ms = (int)((bound_s - (now_s() - t0)) * 1000);

			res[i] = rdmaxfer_req_wait(reqs[i], ms > 0 ? ms : 0);
			if (res[i] == -ETIMEDOUT || res[i] == -EINPROGRESS)
				left++;
		}
	} while (left && now_s() - t0 < bound_s);
	return left;
}

/* Lines of `rdma resource show qp` that belong to this process (-1: the
 * tool is missing): what the kernel holds for us, whatever the library
 * thinks it holds.  The kernel records the creating task, which for a
 * progress thread's QPs is the thread: match the command name, which
 * threads share with the process. */
static int count_my_qps(void)
{
	char line[512], pid[64], comm[32] = "";
	FILE *f;
	int n = 0;

	f = fopen("/proc/self/comm", "r");
	if (!f || !fgets(comm, sizeof(comm), f)) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	snprintf(pid, sizeof(pid), " comm %s ", comm);
	f = popen("rdma resource show qp 2>/dev/null", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);

		if (l && line[l - 1] == '\n')
			line[l - 1] = ' ';
		if (strstr(line, pid))
			n++;
	}
	if (pclose(f))
		return -1;
	return n;
}

/* ------------------------------------------------------------ CQ sizing */

/*
 * nqps QPs per peer, npeers peers, every send queue filled with single-WR
 * WRITEs posted one by one (batch 1: each is signalled), rounds times,
 * from a client whose initial CQ holds cq_depth entries.  Without CQ
 * growth the completions overflow the CQ and are lost: the waits time out.
 */
static void cq_fill_run(enum rdmaxfer_progress_mode mode, unsigned int npeers,
			unsigned int nqps, uint32_t sq_depth, uint32_t cq_depth,
			int rounds)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent *cli;
	struct rdmaxfer_peer *pv[16];
	struct rdmaxfer_req **reqs;
	struct server s;
	unsigned int nreq = npeers * nqps * sq_depth, i, left;
	size_t msg = 64;
	uint8_t *buf;
	int *res, r, bad = 0;
	double t0;

	CU_ASSERT_FATAL(npeers <= 16);
	CU_ASSERT_EQUAL_FATAL(server_start(&s, NULL, nreq * msg), 0);
	rdmaxfer_agent_attr_init(&attr);
	attr.progress = mode;
	attr.qps_per_peer = nqps;
	attr.sq_depth = sq_depth;
	attr.cq_depth = cq_depth;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, &cli), 0);
	CU_ASSERT_EQUAL_FATAL(connect_peers(cli, &s, pv, NULL, npeers), 0);
#ifdef RDMAXFER_DEF_MAX_HALF_OPEN
	{
		struct rdmaxfer_agent_info info;

		CU_ASSERT_EQUAL(rdmaxfer_agent_query(cli, &info), 0);
		rc_diag("%u peers x %u QPs x sq %u: CQ %u -> %u entries",
			npeers, nqps, sq_depth, cq_depth, info.cq_entries);
		CU_ASSERT(info.cq_entries >= npeers * nqps * sq_depth);
		CU_ASSERT_EQUAL(info.npeers, npeers);
	}
#endif
	buf = aligned_alloc(4096, nreq * msg);
	reqs = calloc(nreq, sizeof(*reqs));
	res = calloc(nreq, sizeof(*res));
	CU_ASSERT_FATAL(buf && reqs && res);
	fill(buf, nreq * msg, 5);
	for (i = 0; i < nreq; i++) {
		struct rdmaxfer_iov iov = { buf + i * msg, msg };
		struct rdmaxfer_desc d;

		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(s.mem, i * msg, msg,
							&d), 0);
		/* unstriped requests go round-robin over the peer's QPs */
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(pv[i % npeers],
				RDMAXFER_OP_WRITE, &iov, 1, &d, 1, NULL,
				&reqs[i]), 0);
	}
	for (r = 0; r < rounds; r++) {
		memset(s.buf, 0, nreq * msg);
		t0 = now_s();
		for (i = 0; i < nreq; i++)
			if (rdmaxfer_req_post(reqs[i]))
				bad++;
		left = wait_terminal(reqs, res, nreq, 20.0);
		for (i = 0; i < nreq; i++)
			if (res[i])
				bad++;
		rc_diag("round %d: %u requests in %.3f s, %u still in progress, "
			"%d errors", r, nreq, now_s() - t0, left, bad);
		CU_ASSERT_EQUAL(left, 0);
		CU_ASSERT_EQUAL(bad, 0);
		CU_ASSERT(!memcmp(s.buf, buf, nreq * msg));
		if (left || bad)
			break;
	}
	for (i = 0; i < npeers; i++)
		CU_ASSERT_EQUAL(rdmaxfer_peer_state(pv[i]),
				RDMAXFER_PEER_CONNECTED);
	for (i = 0; i < nreq; i++)
		rdmaxfer_req_free(reqs[i]);
	rdmaxfer_agent_destroy(cli);
	server_stop(&s);
	free(buf);
	free(reqs);
	free(res);
}

static void test_cq_many_peers(void)
{
	/* 8 peers x 4 QPs x 32 = 1024 completions into a 64-entry CQ */
	cq_fill_run(RDMAXFER_PROGRESS_CALLER, 8, 4, 32, 64, 3);
}

static void test_cq_many_qps(void)
{
	/* 16 QPs x 256 (the default SQ) + the SRQ into a CQ asked for 1024
	 * entries (rxe makes that 2047); caller progress, so nothing polls
	 * while the send queues fill (a progress thread would keep up) */
	cq_fill_run(RDMAXFER_PROGRESS_CALLER, 1, 16, 256, 1024, 2);
}

/* A CQ the device cannot make big enough: -ENOSPC, and nothing is left
 * behind on either side. */
static void test_cq_max_cqe(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent *cli;
	struct rdmaxfer_peer *p;
	struct server s;
	double t0;
	int ret, before;

	CU_ASSERT_EQUAL_FATAL(server_start(&s, NULL, 4096), 0);
	rdmaxfer_agent_attr_init(&attr);
	attr.qps_per_peer = 16;
	attr.sq_depth = 8192;	/* x 16 QPs: more than rxe's max_cqe */
	ret = rdmaxfer_agent_create(&attr, &cli);
	if (ret)
		rc_diag("agent with sq_depth 8192: %s", rdmaxfer_strerror(ret));
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	before = count_my_qps();
	ret = rdmaxfer_connect(cli, addr, s.port, 10000, &p);
	rc_diag("16 QPs of the device's largest send queue: %s",
		rdmaxfer_strerror(ret));
	CU_ASSERT_EQUAL(ret, -ENOSPC);
	if (!ret)
		rdmaxfer_peer_destroy(p);
	/* the server frees the half-open peer the refused QPs left */
	t0 = now_s();
	while (now_s() - t0 < 10) {
		rdmaxfer_progress(cli);
		if (count_my_qps() <= before)
			break;
		usleep(50000);
	}
	rc_diag("QPs of this process: %d before, %d after %.3f s", before,
		count_my_qps(), now_s() - t0);
	if (before >= 0)
		CU_ASSERT(count_my_qps() <= before);
#ifdef RDMAXFER_DEF_MAX_HALF_OPEN
	{
		struct rdmaxfer_agent_info info;

		CU_ASSERT_EQUAL(rdmaxfer_agent_query(s.a, &info), 0);
		CU_ASSERT_EQUAL(info.npeers, 0);
		CU_ASSERT_EQUAL(rdmaxfer_agent_query(cli, &info), 0);
		CU_ASSERT_EQUAL(info.npeers, 0);
	}
#endif
	rdmaxfer_agent_destroy(cli);
	server_stop(&s);
}

/* ------------------------------------------------------------ reconnect */

/*
 * A peer fails (a WRITE to a bad key) while requests are in flight on
 * both QPs, queued in the backlog behind full send queues, and held by
 * RDMAXFER_POST_MORE.  When rdmaxfer_peer_reconnect() returns, every one
 * of them is terminal; each can be reposted on the new QPs and freed.
 * The client's CQ starts at 16 entries: its flushes must fit as well.
 */
static void reconnect_run(enum rdmaxfer_progress_mode mode)
{
	enum { SQ = 16, NQ = 2, INFLIGHT = SQ * NQ, BACKLOG = 8, HELD = 4,
	       N = INFLIGHT + BACKLOG + HELD };
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent *cli;
	struct rdmaxfer_req *reqs[N], *badreq;
	struct rdmaxfer_peer *p;
	struct rdmaxfer_desc bad;
	struct server s;
	size_t msg = 4096;
	int res[N], ret, i, nactive = 0, nfailed = 0, ndone = 0, refused = 0;
	uint8_t *buf;
	double t0;

	CU_ASSERT_EQUAL_FATAL(server_start(&s, NULL, N * msg), 0);
	rdmaxfer_agent_attr_init(&attr);
	attr.progress = mode;
	attr.qps_per_peer = NQ;
	attr.sq_depth = SQ;
	attr.srq_depth = 16;
	attr.cq_depth = 16;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, &cli), 0);
	CU_ASSERT_EQUAL_FATAL(connect_peers(cli, &s, &p, NULL, 1), 0);
	buf = aligned_alloc(4096, N * msg);
	CU_ASSERT_FATAL(buf != NULL);
	fill(buf, N * msg, 9);
	for (i = 0; i < N; i++) {
		struct rdmaxfer_iov iov = { buf + i * msg, msg };
		struct rdmaxfer_desc d;

		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(s.mem, i * msg, msg,
							&d), 0);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p,
				RDMAXFER_OP_WRITE, &iov, 1, &d, 1, NULL,
				&reqs[i]), 0);
	}
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(s.mem, 0, msg, &bad), 0);
	bad.rkey ^= 0x5a5a00;
	{
		struct rdmaxfer_iov iov = { buf, msg };

		CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p,
				RDMAXFER_OP_WRITE, &iov, 1, &bad, 1, NULL,
				&badreq), 0);
	}
	/* the bad one first, so everything behind it on its QP flushes; a
	 * progress thread may see the failure before the last posts, which
	 * are then refused (-ENOTCONN) */
	CU_ASSERT_EQUAL(rdmaxfer_req_post(badreq), 0);
	for (i = 0; i < N; i++) {
		ret = rdmaxfer_req_post_flags(reqs[i], i < INFLIGHT + BACKLOG ?
					      0 : RDMAXFER_POST_MORE);
		if (ret)
			refused++;
		CU_ASSERT(ret == 0 || (ret == -ENOTCONN &&
				       mode == RDMAXFER_PROGRESS_THREAD));
	}
	ret = rdmaxfer_req_wait(badreq, WAIT_MS);
	rc_diag("bad request: %s", rdmaxfer_strerror(ret));
	CU_ASSERT(ret != 0 && ret != -ETIMEDOUT);

	t0 = now_s();
	ret = rdmaxfer_peer_reconnect(p, 10000);
	rc_diag("reconnect: %s after %.3f s", rdmaxfer_strerror(ret),
		now_s() - t0);
	CU_ASSERT_EQUAL(ret, 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_CONNECTED);
	/* terminal already: no progress needed to learn it */
	for (i = 0; i < N; i++) {
		res[i] = rdmaxfer_req_test(reqs[i]);
		if (res[i] == -EINPROGRESS)
			nactive++;
		else if (res[i])
			nfailed++;
		else
			ndone++;
	}
	rc_diag("after reconnect: %d done, %d failed, %d in progress (%d "
		"posts refused)", ndone, nfailed, nactive, refused);
	CU_ASSERT_EQUAL(nactive, 0);
	CU_ASSERT(nfailed > 0);
	/* every one reposts on the new QPs and completes */
	memset(s.buf, 0, N * msg);
	for (i = 0; i < N; i++)
		CU_ASSERT_EQUAL(rdmaxfer_req_post(reqs[i]), 0);
	CU_ASSERT_EQUAL(wait_terminal(reqs, res, N, 20.0), 0);
	for (i = 0; i < N; i++)
		CU_ASSERT_EQUAL(res[i], 0);
	CU_ASSERT(!memcmp(s.buf, buf, N * msg));
	for (i = 0; i < N; i++)
		CU_ASSERT_EQUAL(rdmaxfer_req_free(reqs[i]), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(badreq), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_destroy(p), 0);
	rdmaxfer_agent_destroy(cli);
	server_stop(&s);
	free(buf);
}

static void test_reconnect_caller(void)
{
	reconnect_run(RDMAXFER_PROGRESS_CALLER);
}

static void test_reconnect_thread(void)
{
	reconnect_run(RDMAXFER_PROGRESS_THREAD);
}

/* --------------------------------------------------------- passive side */

/* The connect hello of librdmaxfer's wire protocol (rdma_cm private data,
 * 28 bytes, little-endian), built by hand like a foreign client would. */
static void hello(uint8_t *h, uint32_t magic, uint16_t qp_index,
		  uint16_t nqps, uint64_t token)
{
	uint32_t m = htole32(magic);
	uint16_t v = htole16(1), qi = htole16(qp_index), nq = htole16(nqps);
	uint64_t id = htole64(0x1234abcdULL), t = htole64(token);

	memset(h, 0, 28);
	memcpy(h, &m, 4);
	memcpy(h + 4, &v, 2);
	memcpy(h + 6, &qi, 2);
	memcpy(h + 8, &nq, 2);
	memcpy(h + 12, &id, 8);
	memcpy(h + 20, &t, 8);
}

/* A raw client: resolve, a QP, connect with private data pd (len bytes).
 * Synchronous rdma_cm (no channel).  Returns 0 when accepted, else the
 * connect's -errno; *idp is the id either way (NULL on setup failure). */
static int raw_connect(uint16_t port, const void *pd, uint8_t len,
		       struct rdma_cm_id **idp)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_conn_param cp = { 0 };
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_cm_id *id;
	int ret;

	*idp = NULL;
	sin.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return -EINVAL;
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP))
		return -errno;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000) ||
	    rdma_resolve_route(id, 2000)) {
		ret = -errno;
		rdma_destroy_id(id);
		return ret;
	}
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, NULL, &qa)) {
		ret = -errno;
		rdma_destroy_id(id);
		return ret;
	}
	*idp = id;
	cp.private_data = pd;
	cp.private_data_len = len;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	return rdma_connect(id, &cp) ? -errno : 0;
}

static void raw_destroy(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

/*
 * A REQ whose id is destroyed at once: the passive side accepts, its REP
 * finds nobody, and the attempt fails there.
 */
static int raw_connect_abandon(uint16_t port, const void *pd, uint8_t len)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { 0 };
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int ret = -EIO, step;

	if (!ch)
		return -errno;
	sin.sin_port = htons(port);
	inet_pton(AF_INET, addr, &sin.sin_addr);
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		rdma_destroy_event_channel(ch);
		return -errno;
	}
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000))
		goto out;
	for (step = 0; step < 2; step++) {
		if (rdma_get_cm_event(ch, &ev))
			goto out;
		ret = ev->event == (step ? RDMA_CM_EVENT_ROUTE_RESOLVED :
				    RDMA_CM_EVENT_ADDR_RESOLVED) ? 0 : -EIO;
		rdma_ack_cm_event(ev);
		if (ret)
			goto out;
		if (!step && rdma_resolve_route(id, 2000)) {
			ret = -errno;
			goto out;
		}
	}
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	ret = -EIO;
	if (rdma_create_qp(id, NULL, &qa))
		goto out;
	cp.private_data = pd;
	cp.private_data_len = len;
	ret = rdma_connect(id, &cp) ? -errno : 0;
out:
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return ret;
}

static void half_open_info(struct rdmaxfer_agent *a, unsigned int *npeers,
			   unsigned int *nhalf)
{
#ifdef RDMAXFER_DEF_MAX_HALF_OPEN
	struct rdmaxfer_agent_info info;

	rdmaxfer_agent_query(a, &info);
	*npeers = info.npeers;
	*nhalf = info.npeers_half_open;
#else
	(void)a;
	*npeers = *nhalf = 0;
#endif
}

static void test_passive_half_open(void)
{
	enum { MAXH = 4, NPARTIAL = 7, NBAD = 6 };
	struct rdmaxfer_agent_attr attr;
	struct rdma_cm_id *ids[NPARTIAL];
	struct rdmaxfer_agent *cli;
	struct rdmaxfer_peer *p, *sp;
	struct server s;
	uint8_t h[28], big[56];
	unsigned int i, npeers, nhalf, maxhalf = 0, accepted = 0;
	int ret, qps0, qps_peak = 0, qps1;
	double t0;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_THREAD;
	/* long enough for all the partial peers below to be alive at once
	 * (a raw connect takes up to 2 s in the guest) */
	attr.cm_timeout_ms = 25000;
#ifdef RDMAXFER_DEF_MAX_HALF_OPEN
	attr.max_half_open = MAXH;
#endif
	CU_ASSERT_EQUAL_FATAL(server_start(&s, &attr, MiB), 0);
	qps0 = count_my_qps();

	/* truncated hellos and foreign magics: refused, nothing kept (the
	 * CM pads private data with zeros: a hello cut before its QP count
	 * reads as a count of 0) */
	for (i = 0; i < NBAD; i++) {
		struct rdma_cm_id *id;

		hello(h, i & 1 ? 0xdeadbeef : 0x48584452U, 0, 1, 1000 + i);
		ret = raw_connect(s.port, h, i & 1 ? 28 : 8, &id);
		CU_ASSERT_NOT_EQUAL(ret, 0);
		raw_destroy(id);
	}
	/* a hello claiming more QPs than exist */
	hello(h, 0x48584452U, 0, 200, 77);
	ret = raw_connect(s.port, h, 28, &ids[0]);
	CU_ASSERT_NOT_EQUAL(ret, 0);
	raw_destroy(ids[0]);
	half_open_info(s.a, &npeers, &nhalf);
	CU_ASSERT_EQUAL(npeers, 0);

	/* first QP of 4-QP peers whose other QPs never come, new token each:
	 * only max_half_open of them are taken in */
	for (i = 0; i < NPARTIAL; i++) {
		memcpy(big, h, 28);
		hello(big, 0x48584452U, 0, 4, 5000 + i);
		ret = raw_connect(s.port, big, 28, &ids[i]);
		if (!ret)
			accepted++;
		half_open_info(s.a, &npeers, &nhalf);
		if (nhalf > maxhalf)
			maxhalf = nhalf;
		if (count_my_qps() > qps_peak)
			qps_peak = count_my_qps();
	}
	rc_diag("%u partial peers: %u accepted, at most %u half-open, "
		"%d QPs of this process (%d at start)", NPARTIAL, accepted,
		maxhalf, qps_peak, qps0);
#ifdef RDMAXFER_DEF_MAX_HALF_OPEN
	CU_ASSERT_EQUAL(accepted, MAXH);
	CU_ASSERT(maxhalf <= MAXH);
#endif
	/* abandon half of them: their DISCONNECTED frees them at once */
	for (i = 0; i < NPARTIAL / 2; i++) {
		raw_destroy(ids[i]);
		ids[i] = NULL;
	}
	/* REQs abandoned before the REP */
	for (i = 0; i < 4; i++) {
		hello(h, 0x48584452U, 0, 1, 9000 + i);
		raw_connect_abandon(s.port, h, 28);
	}
	/* the rest expire cm_timeout_ms after their connect request; the
	 * clients' own QPs (NPARTIAL - NPARTIAL / 2 still alive) count in
	 * the QPs of this process */
	t0 = now_s();
	do {
		usleep(200000);
		half_open_info(s.a, &npeers, &nhalf);
		qps1 = count_my_qps();
	} while ((npeers || (qps0 >= 0 &&
			     qps1 > qps0 + NPARTIAL - NPARTIAL / 2)) &&
		 now_s() - t0 < attr.cm_timeout_ms / 1000 + 10);
	rc_diag("after %.3f s: %u peers, %u half-open, %d QPs of this "
		"process", now_s() - t0, npeers, nhalf, qps1);
	CU_ASSERT_EQUAL(npeers, 0);
	CU_ASSERT_EQUAL(nhalf, 0);
	if (qps0 >= 0)
		CU_ASSERT(qps1 <= qps0 + NPARTIAL - NPARTIAL / 2);
	for (i = NPARTIAL / 2; i < NPARTIAL; i++)
		raw_destroy(ids[i]);

	/* a good peer still gets in, and works */
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 2, &cli), 0);
	CU_ASSERT_EQUAL_FATAL(connect_peers(cli, &s, &p, &sp, 1), 0);
	{
		uint8_t src[8192];
		struct rdmaxfer_iov iov = { src, sizeof(src) };
		struct rdmaxfer_desc d;

		fill(src, sizeof(src), 3);
		CU_ASSERT_EQUAL(rdmaxfer_mem_desc(s.mem, 0, sizeof(src), &d), 0);
		CU_ASSERT_EQUAL(xfer_sync(p, RDMAXFER_OP_WRITE, &iov, &d, 1,
					  NULL), 0);
		CU_ASSERT(!memcmp(s.buf, src, sizeof(src)));
	}
	half_open_info(s.a, &npeers, &nhalf);
#ifdef RDMAXFER_DEF_MAX_HALF_OPEN
	CU_ASSERT_EQUAL(npeers, 1);
	CU_ASSERT_EQUAL(nhalf, 0);
#endif
	rdmaxfer_agent_destroy(cli);
	server_stop(&s);
}

/* --------------------------------------------------------- mass failure */

/*
 * Two client agents (caller and thread progress) with NP peers each to one
 * server, requests in flight and queued on every peer, plus idle peers.
 * After fail() every peer of every agent (the server's too) is out of
 * CONNECTED and every request terminal within FAIL_BOUND_S; all can be
 * freed and the agents destroyed without hanging.
 */
enum { NP = 3, NIDLE = 2, PER = 24 };

struct mass {
	struct server s;
	struct rdmaxfer_agent *cli[2];
	struct rdmaxfer_peer *pv[2][NP + NIDLE], *spv[2 * (NP + NIDLE)];
	struct rdmaxfer_req *reqs[2 * NP * PER];
	int res[2 * NP * PER];
	uint8_t *buf;
	size_t msg;
};

static int mass_setup(struct mass *m)
{
	struct rdmaxfer_agent_attr attr;
	unsigned int c, i, k = 0;
	int ret;

	memset(m, 0, sizeof(*m));
	m->msg = 256 * 1024;
	ret = server_start(&m->s, NULL, 2 * NP * PER * m->msg);
	if (ret)
		return ret;
	m->buf = aligned_alloc(4096, 2 * NP * PER * m->msg);
	if (!m->buf)
		return -ENOMEM;
	fill(m->buf, 2 * NP * PER * m->msg, 1);
	for (c = 0; c < 2; c++) {
		rdmaxfer_agent_attr_init(&attr);
		attr.progress = c ? RDMAXFER_PROGRESS_THREAD :
				    RDMAXFER_PROGRESS_CALLER;
		attr.qps_per_peer = 2;
		attr.sq_depth = 8;	/* most requests wait in the backlog */
		ret = rdmaxfer_agent_create(&attr, &m->cli[c]);
		if (!ret)
			ret = connect_peers(m->cli[c], &m->s, m->pv[c],
					    &m->spv[c * (NP + NIDLE)],
					    NP + NIDLE);
		if (ret)
			return ret;
	}
	for (c = 0; c < 2; c++) {
		for (i = 0; i < NP * PER; i++, k++) {
			struct rdmaxfer_iov iov = { m->buf + k * m->msg,
						    m->msg };
			struct rdmaxfer_desc d;

			ret = rdmaxfer_mem_desc(m->s.mem, k * m->msg, m->msg,
						&d);
			if (!ret)
				ret = rdmaxfer_xfer_prepare(m->pv[c][i % NP],
						RDMAXFER_OP_WRITE, &iov, 1,
						&d, 1, NULL, &m->reqs[k]);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static void mass_post(struct mass *m)
{
	unsigned int k;

	for (k = 0; k < 2 * NP * PER; k++)
		CU_ASSERT_EQUAL(rdmaxfer_req_post(m->reqs[k]), 0);
}

/* Check the bound, run restore (may be NULL), then free everything. */
static void mass_check(struct mass *m, double t0, double bound,
		       const char *what, void (*restore)(void))
{
	unsigned int c, i, k, left, ok = 0, connected;
	double t;

	/* keep every request busy: one that completed is posted again,
	 * until the failure refuses the post or fails the request */
	do {
		left = 0;
		for (k = 0; k < 2 * NP * PER; k++) {
			int r = rdmaxfer_req_test(m->reqs[k]);

			if (r == -EINPROGRESS) {
				left++;
			} else if (r == 0) {
				ok++;
				if (!rdmaxfer_req_post(m->reqs[k]))
					left++;
				else
					m->res[k] = -ENOTCONN;
			} else {
				m->res[k] = r;
			}
		}
	} while (left && now_s() - t0 < bound);
	/* idle peers learn it from the progress engine alone */
	do {
		connected = 0;
		for (c = 0; c < 2; c++) {
			rdmaxfer_progress(m->cli[c]);
			for (i = 0; i < NP + NIDLE; i++)
				if (rdmaxfer_peer_state(m->pv[c][i]) ==
				    RDMAXFER_PEER_CONNECTED)
					connected++;
		}
		for (i = 0; i < 2 * (NP + NIDLE); i++)
			if (rdmaxfer_peer_state(m->spv[i]) ==
			    RDMAXFER_PEER_CONNECTED)
				connected++;
		if (connected)
			usleep(20000);
	} while (connected && now_s() - t0 < bound);
	t = now_s() - t0;
	rc_diag("%s: after %.3f s %u of %u requests in progress (%u "
		"completions before), %u peers still CONNECTED; peer error %s",
		what,
		t, left, 2 * NP * PER, ok, connected,
		rdmaxfer_strerror(rdmaxfer_peer_error(m->pv[0][0])));
	CU_ASSERT_EQUAL(left, 0);
	CU_ASSERT_EQUAL(connected, 0);
	CU_ASSERT(t < bound);
	/* rxe cannot send the CM's DREQs while the port is down, and the
	 * kernel's cm_destroy_id() waits for them: bring it back first */
	if (restore)
		restore();
	for (k = 0; k < 2 * NP * PER; k++)
		CU_ASSERT_EQUAL(rdmaxfer_req_free(m->reqs[k]), 0);
	for (c = 0; c < 2; c++)
		for (i = 0; i < NP + NIDLE; i++)
			CU_ASSERT_EQUAL(rdmaxfer_peer_destroy(m->pv[c][i]), 0);
	for (i = 0; i < 2 * (NP + NIDLE); i++)
		CU_ASSERT_EQUAL(rdmaxfer_peer_destroy(m->spv[i]), 0);
	t0 = now_s();
	rdmaxfer_agent_destroy(m->cli[0]);
	rdmaxfer_agent_destroy(m->cli[1]);
	server_stop(&m->s);
	rc_diag("%s: agents destroyed in %.3f s", what, now_s() - t0);
	CU_ASSERT(now_s() - t0 < bound);
	free(m->buf);
}

static int sh(const char *fmt, const char *arg)
{
	char cmd[256];
	int st;

	snprintf(cmd, sizeof(cmd), fmt, arg);
	rc_diag("+ %s", cmd);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void port_up(void)
{
	CU_ASSERT_EQUAL(sh("ip link set dev %s up", env_or("RXE_NETDEV",
							   "eth0")), 0);
}

/*
 * --port-down: the netdev under rxe goes down under busy agents, and up
 * again.  rxe cannot send on a port that is down and its CM QP (QP1)
 * fails with it, so no new connection works on the device afterwards
 * until it is re-created: run this as its own invocation, before the
 * suite deletes and re-adds the rxe device.
 */
static void test_port_down(void)
{
	struct rdmaxfer_agent *a = NULL;
	struct mass m;
	double t0;
	int ret = -1;

	if (mass_setup(&m)) {
		CU_FAIL("mass setup");
		return;
	}
	mass_post(&m);
	t0 = now_s();
	if (sh("ip link set dev %s down", env_or("RXE_NETDEV", "eth0"))) {
		CU_FAIL("ip link set down");
		return;
	}
	mass_check(&m, t0, FAIL_BOUND_S, "port down", port_up);
	/* the port is ACTIVE again: agents can be made on it */
	t0 = now_s();
	while (now_s() - t0 < 20) {
		ret = new_agent(RDMAXFER_PROGRESS_CALLER, 1, &a);
		if (!ret)
			break;
		usleep(200000);
	}
	rc_diag("port up again: agent created after %.3f s (%s)",
		now_s() - t0, rdmaxfer_strerror(ret));
	CU_ASSERT_EQUAL(ret, 0);
	if (!ret)
		rdmaxfer_agent_destroy(a);
}

/* --removal: the rxe device is deleted under busy agents. */
static void test_device_removal(void)
{
	const char *dev = env_or("RXE_DEV", "rxe0");
	struct mass m;
	char cmd[128];
	double t0;
	pid_t pid;

	if (mass_setup(&m)) {
		CU_FAIL("mass setup");
		return;
	}
	mass_post(&m);
	/* `rdma link delete` returns once every user of the device has
	 * closed it, which is this process: run it beside us */
	snprintf(cmd, sizeof(cmd), "rdma link delete %s", dev);
	rc_diag("+ %s &", cmd);
	t0 = now_s();
	pid = fork();
	if (!pid) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	CU_ASSERT_FATAL(pid > 0);
	mass_check(&m, t0, REMOVAL_BOUND_S, "device removal", NULL);
	/* the caller reaps the child after exit (the suite waits for it) */
}

static const struct rc_test_case cases[] = {
	{ "cq_many_peers_batch1", test_cq_many_peers },
	{ "cq_many_qps_batch1", test_cq_many_qps },
	{ "cq_max_cqe_refused", test_cq_max_cqe },
	{ "reconnect_terminal_caller", test_reconnect_caller },
	{ "reconnect_terminal_thread", test_reconnect_thread },
	{ "passive_half_open_bounded", test_passive_half_open },
	{ NULL, NULL },
};

static const struct rc_test_case port_down_cases[] = {
	{ "mass_failure_port_down", test_port_down },
	{ NULL, NULL },
};

static const struct rc_test_case removal_cases[] = {
	{ "mass_failure_device_removal", test_device_removal },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	const struct rc_test_case *last = NULL;

	addr = rxe_addr_or_skip();
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1 && !strcmp(argv[1], "--removal"))
		last = removal_cases;
	else if (argc > 1 && !strcmp(argv[1], "--port-down"))
		last = port_down_cases;
	if (last) {
		rc_add_suite("robust", NULL, NULL, last);
		argv[1] = argv[0];
		return rc_test_main(argc - 1, argv + 1);
	}
	rc_add_suite("robust", NULL, NULL, cases);
	return rc_test_main(argc, argv);
}
