// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer.c - librdmaxfer on a real RDMA device (rxe in the VM).
 *
 * A server agent (progress thread) and client agents (caller-driven
 * progress) live in one process and talk over loopback RoCE to $RXE_ADDR;
 * the killed-peer case runs a second server in a child process started
 * from this same binary ("--child-server ADDR") and SIGKILLs it.  Every
 * transfer is checked byte for byte; errors must fail the request within
 * a bound and leave the agent usable.  Skips (77) without $RXE_ADDR or an
 * RDMA device.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define WAIT_MS		20000

#include "rdmaxfer_test_util.h"

static const char *addr;
static struct rdmaxfer_agent *srv, *cli;
static struct rdmaxfer_peer *srv_peer;	/* server's view of cli */
static struct rdmaxfer_peer *cli_peer;	/* cli's view of srv */
static uint16_t srv_port;
static uint8_t *srv_buf, *cli_buf;
static struct rdmaxfer_mem *srv_mem;

static int connect_to(struct rdmaxfer_agent *a, struct rdmaxfer_peer **pp)
{
	return rdmaxfer_connect(a, addr, srv_port, 10000, pp);
}

static int suite_init(void)
{
	int ret;

	ret = new_agent(RDMAXFER_PROGRESS_THREAD, 1, &srv);
	if (ret)
		return 1;
	ret = new_agent(RDMAXFER_PROGRESS_CALLER, 2, &cli);
	if (ret)
		return 1;
	if (rdmaxfer_listen(srv, addr, 0) || rdmaxfer_listen_port(srv, &srv_port))
		return 1;
	srv_buf = aligned_alloc(4096, SRV_LEN);
	cli_buf = aligned_alloc(4096, CLI_LEN);
	if (!srv_buf || !cli_buf)
		return 1;
	memset(srv_buf, 0, SRV_LEN);
	memset(cli_buf, 0, CLI_LEN);
	if (rdmaxfer_mem_register(srv, srv_buf, SRV_LEN, RDMAXFER_MEM_HOST,
				  &srv_mem))
		return 1;
	ret = connect_to(cli, &cli_peer);
	if (ret) {
		fprintf(stderr, "connect: %s\n", rdmaxfer_strerror(ret));
		return 1;
	}
	return rdmaxfer_accept(srv, 10000, &srv_peer) ? 1 : 0;
}

static int suite_cleanup(void)
{
	rdmaxfer_agent_destroy(cli);
	rdmaxfer_agent_destroy(srv);
	free(srv_buf);
	free(cli_buf);
	return 0;
}

static void test_agent_info(void)
{
	struct rdmaxfer_agent_info info;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_agent_attr attr;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_query(cli, &info), 0);
	rc_diag("device %s port %u gid_index %d max_msg %u inline %u cache %s",
		info.device, info.port, info.gid_index, info.max_msg_size,
		info.max_inline, info.cache_monitor);
	CU_ASSERT(info.port >= 1);
	CU_ASSERT(info.max_msg_size > 0);
	CU_ASSERT_EQUAL(info.qps_per_peer, 2);
	/* the auto GID is the RoCE v2 IPv4 one the harness looked up */
	if (getenv("RXE_GID_INDEX"))
		CU_ASSERT_EQUAL(info.gid_index, atoi(getenv("RXE_GID_INDEX")));
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(cli_peer), RDMAXFER_PEER_CONNECTED);
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(srv_peer), RDMAXFER_PEER_CONNECTED);
	CU_ASSERT_EQUAL(rdmaxfer_agent_query(srv, &info), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_id(cli_peer), info.agent_id);

	rdmaxfer_agent_attr_init(&attr);
	attr.device = "no-such-device";
	CU_ASSERT_EQUAL(rdmaxfer_agent_create(&attr, &a), -ENODEV);
	rdmaxfer_agent_attr_init(&attr);
	attr.qps_per_peer = 1000;
	CU_ASSERT_EQUAL(rdmaxfer_agent_create(&attr, &a), -EINVAL);
}

/* Mixed sizes 1 B .. 8 MiB, unaligned on both sides, remote order reversed. */
static const size_t sizes[] = { 1, 3, 64, 100, 4095, 4099, 65537,
				MiB + 5, 8 * MiB };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void build_lists(struct rdmaxfer_iov *iov, struct rdmaxfer_desc *d)
{
	size_t i, loff = 3, roff = SRV_LEN;

	for (i = 0; i < NSIZES; i++) {
		iov[i].addr = cli_buf + loff;
		iov[i].len = sizes[i];
		loff += sizes[i] + 17;
		roff -= sizes[i] + 29;
		CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, roff, sizes[i], &d[i]),
				0);
	}
}

static void test_write_list(void)
{
	struct rdmaxfer_iov iov[NSIZES];
	struct rdmaxfer_desc d[NSIZES];
	size_t i;

	build_lists(iov, d);
	fill(cli_buf, CLI_LEN, 1);
	memset(srv_buf, 0, SRV_LEN);
	CU_ASSERT_EQUAL_FATAL(xfer_sync(cli_peer, RDMAXFER_OP_WRITE, iov, d,
					NSIZES, NULL), 0);
	for (i = 0; i < NSIZES; i++) {
		uint8_t *r = (uint8_t *)(uintptr_t)d[i].addr;

		CU_ASSERT(!memcmp(r, iov[i].addr, sizes[i]));
		/* nothing written around the target */
		CU_ASSERT_EQUAL(r[-1], 0);
		CU_ASSERT_EQUAL(r[sizes[i]], 0);
	}
}

static void test_read_list(void)
{
	struct rdmaxfer_iov iov[NSIZES];
	struct rdmaxfer_desc d[NSIZES];
	size_t i;

	build_lists(iov, d);
	fill(srv_buf, SRV_LEN, 2);
	memset(cli_buf, 0, CLI_LEN);
	CU_ASSERT_EQUAL_FATAL(xfer_sync(cli_peer, RDMAXFER_OP_READ, iov, d,
					NSIZES, NULL), 0);
	for (i = 0; i < NSIZES; i++) {
		uint8_t *l = iov[i].addr;

		CU_ASSERT(!memcmp(l, (void *)(uintptr_t)d[i].addr, sizes[i]));
		CU_ASSERT_EQUAL(l[-1], 0);
		CU_ASSERT_EQUAL(l[sizes[i]], 0);
	}
}

/* One pair larger than the port's max message size (8 MiB on rxe 6.1) on
 * a single-QP peer: split into several work requests on one QP. */
static void test_split_max_msg(void)
{
	struct rdmaxfer_agent_info info;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct rdmaxfer_iov iov = { cli_buf + 1, 17 * MiB + 3 };
	struct rdmaxfer_desc d;

	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &a), 0);
	CU_ASSERT_EQUAL_FATAL(connect_to(a, &p), 0);
	rdmaxfer_agent_query(a, &info);
	rc_diag("max message size %u: %llu pieces", info.max_msg_size,
		(unsigned long long)((iov.len + info.max_msg_size - 1) /
				     info.max_msg_size));
	fill(cli_buf, CLI_LEN, 4);
	memset(srv_buf, 0, SRV_LEN);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 5, iov.len, &d), 0);
	CU_ASSERT_EQUAL(xfer_sync(p, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL), 0);
	CU_ASSERT(!memcmp(srv_buf + 5, iov.addr, iov.len));
	CU_ASSERT_EQUAL(srv_buf[4], 0);
	CU_ASSERT_EQUAL(srv_buf[5 + iov.len], 0);
	memset(iov.addr, 0, iov.len);
	CU_ASSERT_EQUAL(xfer_sync(p, RDMAXFER_OP_READ, &iov, &d, 1, NULL), 0);
	CU_ASSERT(!memcmp(srv_buf + 5, iov.addr, iov.len));
	rdmaxfer_agent_destroy(a);
}

/* Many small WRs in one request: more than the SQ holds, so the backlog
 * and periodic signalling are exercised. */
static void test_long_list(void)
{
	enum { N = 1500, SZ = 41 };
	struct rdmaxfer_iov *iov = calloc(N, sizeof(*iov));
	struct rdmaxfer_desc *d = calloc(N, sizeof(*d));
	size_t i;

	CU_ASSERT_FATAL(iov && d);
	fill(cli_buf, CLI_LEN, 3);
	memset(srv_buf, 0, SRV_LEN);
	for (i = 0; i < N; i++) {
		iov[i].addr = cli_buf + i * 41;
		iov[i].len = SZ;
		CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, i * 37 + 1, SZ, &d[i]), 0);
	}
	/* later pieces overwrite the 4-byte overlap: order within a QP */
	CU_ASSERT_EQUAL(xfer_sync(cli_peer, RDMAXFER_OP_WRITE, iov, d, N, NULL), 0);
	for (i = 0; i < N; i++) {
		uint8_t *r = srv_buf + i * 37 + 1;
		/* piece i+1 overwrote the last 4 bytes of piece i */
		size_t cmp = i + 1 < N ? 37 : SZ;

		if (memcmp(r, iov[i].addr, cmp)) {
			CU_FAIL("long list data");
			break;
		}
	}
	free(iov);
	free(d);
}

static void test_repost(void)
{
	struct rdmaxfer_iov iov = { cli_buf + 5, 3 * MiB + 11 };
	struct rdmaxfer_desc d;
	struct rdmaxfer_req *req;
	int i;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 7, iov.len, &d), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(cli_peer, RDMAXFER_OP_WRITE,
						    &iov, 1, &d, 1, NULL, &req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_test(req), -EALREADY);
	for (i = 0; i < 12; i++) {
		memset(iov.addr, 0x30 + i, iov.len);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post(req), 0);
		/* a request in flight cannot be posted again */
		if (rdmaxfer_req_test(req) == -EINPROGRESS)
			CU_ASSERT_EQUAL(rdmaxfer_req_post(req), -EBUSY);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_test(req), 0);
		CU_ASSERT(srv_buf[7] == 0x30 + i && srv_buf[7 + iov.len - 1] == 0x30 + i);
		CU_ASSERT(!memcmp(srv_buf + 7, iov.addr, iov.len));
	}
	CU_ASSERT_EQUAL(rdmaxfer_req_bytes(req), iov.len);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
}

static void test_notif_order(void)
{
	enum { N = 60 };
	struct rdmaxfer_notif *n = calloc(N + 8, sizeof(*n));
	struct rdmaxfer_iov iov = { cli_buf, 256 };
	struct rdmaxfer_desc d;
	struct rdmaxfer_xfer_notif xn;
	int i, got = 0, ret;
	char msg[64];

	CU_ASSERT_FATAL(n != NULL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 256, &d), 0);
	for (i = 0; i < N; i++) {
		if (i % 3 == 2) {
			snprintf(msg, sizeof(msg), "message %d", i);
			do {
				ret = rdmaxfer_notif_send(cli_peer, 1000 + i,
							  msg, strlen(msg) + 1);
				if (ret == -EAGAIN)
					rdmaxfer_progress(cli);
			} while (ret == -EAGAIN);
			CU_ASSERT_EQUAL(ret, 0);
		} else {
			/* the value tells the receiver where the data went */
			memset(cli_buf, i, 256);
			xn.value = 1000 + i;
			CU_ASSERT_EQUAL(xfer_sync(cli_peer, RDMAXFER_OP_WRITE,
						  &iov, &d, 1, &xn), 0);
		}
	}
	while (got < N) {
		ret = rdmaxfer_wait_notifs(srv, n + got, N + 8 - got, WAIT_MS);
		if (ret <= 0)
			break;
		got += ret;
	}
	CU_ASSERT_EQUAL(got, N);
	for (i = 0; i < got && i < N; i++) {
		if (n[i].value != (uint32_t)(1000 + i) || n[i].peer != srv_peer) {
			CU_FAIL("notification order or origin");
			rc_diag("notif %d: value %u", i, n[i].value);
			break;
		}
		if (i % 3 == 2) {
			snprintf(msg, sizeof(msg), "message %d", i);
			CU_ASSERT_EQUAL(n[i].type, RDMAXFER_NOTIF_MSG);
			CU_ASSERT_EQUAL(n[i].len, strlen(msg) + 1);
			CU_ASSERT(!strcmp((char *)n[i].data, msg));
		} else {
			CU_ASSERT_EQUAL(n[i].type, RDMAXFER_NOTIF_IMM);
		}
	}
	/* nothing extra */
	CU_ASSERT_EQUAL(rdmaxfer_get_notifs(srv, n, N), 0);
	CU_ASSERT_EQUAL(rdmaxfer_notif_send(cli_peer, 1, msg,
					    RDMAXFER_NOTIF_MSG_MAX + 1), -EMSGSIZE);
	free(n);
}

/* The notification of a striped READ/WRITE arrives after all its data. */
static volatile int cb_count;
static volatile int cb_bad;
static size_t cb_len;

static void notif_cb(void *user, const struct rdmaxfer_notif *n)
{
	uint8_t want = (uint8_t)n->value;
	size_t i;

	(void)user;
	for (i = 0; i < cb_len; i += 4093)
		if (srv_buf[i] != want)
			cb_bad++;
	if (srv_buf[cb_len - 1] != want)
		cb_bad++;
	__atomic_add_fetch(&cb_count, 1, __ATOMIC_SEQ_CST);
}

static void test_notif_callback_after_data(void)
{
	struct rdmaxfer_iov iov = { cli_buf, 6 * MiB };
	struct rdmaxfer_desc d;
	struct rdmaxfer_xfer_notif xn;
	struct rdmaxfer_req *req;
	double end;
	int i;

	cb_len = iov.len;
	cb_count = 0;
	cb_bad = 0;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_set_notif_cb(srv, notif_cb, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, iov.len, &d), 0);
	xn.value = 0;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(cli_peer, RDMAXFER_OP_WRITE,
						    &iov, 1, &d, 1, &xn, &req), 0);
	for (i = 1; i <= 5; i++) {
		memset(cli_buf, 0x40 + i, iov.len);
		CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
		xn.value = 0x40 + i;
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(cli_peer,
				RDMAXFER_OP_WRITE, &iov, 1, &d, 1, &xn, &req), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
		end = now_s() + 10;
		/* atomic: the callback runs in the progress thread (TSan) */
		while (__atomic_load_n(&cb_count, __ATOMIC_ACQUIRE) < i &&
		       now_s() < end)
			usleep(1000);
	}
	rdmaxfer_req_free(req);
	CU_ASSERT_EQUAL(__atomic_load_n(&cb_count, __ATOMIC_ACQUIRE), 5);
	CU_ASSERT_EQUAL(cb_bad, 0);
	CU_ASSERT_EQUAL(rdmaxfer_set_notif_cb(srv, NULL, NULL), 0);
}

/* Several threads share one agent (progress thread, 2 QPs) and one peer,
 * each posting its own requests: the locking model under load. */
struct poster_arg {
	struct rdmaxfer_peer *peer;
	int index;
	int ret;
};

#define POSTERS		4
#define POSTER_LEN	(64 * 1024 + 13)
#define POSTER_ROUNDS	40

static void *poster_thread(void *p)
{
	struct poster_arg *a = p;
	uint8_t *src = cli_buf + (size_t)a->index * MiB;
	size_t off = (size_t)a->index * MiB;
	struct rdmaxfer_iov iov = { src, POSTER_LEN };
	struct rdmaxfer_desc d;
	struct rdmaxfer_req *req;
	int r;

	a->ret = rdmaxfer_mem_desc(srv_mem, off, POSTER_LEN, &d);
	if (!a->ret)
		a->ret = rdmaxfer_xfer_prepare(a->peer, RDMAXFER_OP_WRITE, &iov,
					       1, &d, 1, NULL, &req);
	if (a->ret)
		return NULL;
	for (r = 0; r < POSTER_ROUNDS && !a->ret; r++) {
		memset(src, (a->index << 6) | r, POSTER_LEN);
		a->ret = rdmaxfer_req_post(req);
		if (!a->ret)
			a->ret = rdmaxfer_req_wait(req, WAIT_MS);
		if (!a->ret && memcmp(srv_buf + off, src, POSTER_LEN))
			a->ret = -EBADMSG;
	}
	rdmaxfer_req_free(req);
	return NULL;
}

static void test_concurrent_posters(void)
{
	struct poster_arg args[POSTERS];
	pthread_t th[POSTERS];
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	int i;

	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_THREAD, 2, &a), 0);
	CU_ASSERT_EQUAL_FATAL(connect_to(a, &p), 0);
	for (i = 0; i < POSTERS; i++) {
		args[i].peer = p;
		args[i].index = i;
		args[i].ret = -1;
		pthread_create(&th[i], NULL, poster_thread, &args[i]);
	}
	for (i = 0; i < POSTERS; i++) {
		pthread_join(th[i], NULL);
		if (args[i].ret)
			rc_diag("poster %d: %s", i, rdmaxfer_strerror(args[i].ret));
		CU_ASSERT_EQUAL(args[i].ret, 0);
	}
	rdmaxfer_agent_destroy(a);
}

struct fadd_arg {
	int m;
	uint64_t *olds;
	int ret;
};

static struct rdmaxfer_desc word_desc;

static void *fadd_thread(void *p)
{
	struct fadd_arg *a = p;
	struct rdmaxfer_agent *ag;
	struct rdmaxfer_peer *peer;
	struct rdmaxfer_req *req;
	uint64_t *res = aligned_alloc(64, 64);

	a->ret = new_agent(RDMAXFER_PROGRESS_CALLER, 1, &ag);
	if (a->ret)
		return NULL;
	a->ret = connect_to(ag, &peer);
	if (a->ret)
		goto destroy;
	a->ret = rdmaxfer_atomic_prepare(peer, RDMAXFER_OP_FADD, &word_desc, 0,
					 1, 0, res, &req);
	if (a->ret)
		goto destroy;
	a->ret = fadd_run(req, res, a->olds, a->m);
destroy:
	rdmaxfer_agent_destroy(ag);
	free(res);
	return NULL;
}

static void test_fadd_contention(void)
{
	enum { N = 4, M = 150 };
	struct fadd_arg args[N];
	pthread_t th[N];
	uint64_t *all = calloc(N * M, sizeof(*all));
	volatile uint64_t *word = (uint64_t *)(srv_buf + 4096);
	int i;

	CU_ASSERT_FATAL(all != NULL);
	*word = 0;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 4096, 8, &word_desc), 0);
	for (i = 0; i < N; i++) {
		args[i].m = M;
		args[i].olds = all + i * M;
		args[i].ret = -1;
		pthread_create(&th[i], NULL, fadd_thread, &args[i]);
	}
	for (i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		if (args[i].ret)
			rc_diag("client %d: %s", i, rdmaxfer_strerror(args[i].ret));
		CU_ASSERT_EQUAL(args[i].ret, 0);
	}
	CU_ASSERT_EQUAL(*word, (uint64_t)N * M);
	check_permutation(all, N * M);
	free(all);
}

static void test_cswap(void)
{
	volatile uint64_t *word = (uint64_t *)(srv_buf + 8192);
	uint64_t *res = aligned_alloc(64, 64);
	struct rdmaxfer_desc d;
	struct rdmaxfer_req *req;

	*word = 5;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 8192, 8, &d), 0);
	/* mismatch: the word stays, the old value comes back */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_atomic_prepare(cli_peer, RDMAXFER_OP_CSWAP,
						      &d, 0, 4, 9, res, &req), 0);
	*res = 77;
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(*res, 5);
	CU_ASSERT_EQUAL(*word, 5);
	/* match: swapped */
	CU_ASSERT_EQUAL(rdmaxfer_atomic_set(req, 5, 9), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(*res, 5);
	CU_ASSERT_EQUAL(*word, 9);
	/* again with the same compare: no longer matches */
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(*res, 9);
	CU_ASSERT_EQUAL(*word, 9);
	rdmaxfer_req_free(req);
	/* bad arguments are refused before the wire */
	CU_ASSERT_EQUAL(rdmaxfer_atomic_prepare(cli_peer, RDMAXFER_OP_CSWAP, &d,
						4, 0, 0, res, &req), -ERANGE);
	CU_ASSERT_EQUAL(rdmaxfer_atomic_prepare(cli_peer, RDMAXFER_OP_READ, &d,
						0, 0, 0, res, &req), -EINVAL);
	free(res);
}

/* A request on a peer the error put into ERROR state, then recovery. */
static void expect_remote_error(struct rdmaxfer_desc *bad)
{
	struct rdmaxfer_iov iov = { cli_buf, bad->len };
	struct rdmaxfer_desc good;
	struct rdmaxfer_req *req;
	int ret;

	ret = post_refused_write(cli_peer, &iov, bad, &req);
	CU_ASSERT(ret != 0 && ret != -ETIMEDOUT && ret != -EINPROGRESS);
	CU_ASSERT(ret == -EACCES || ret == -EREMOTEIO);
	CU_ASSERT(strstr(rdmaxfer_req_strerror(req), "error") != NULL);
	check_refused_then_recover(cli_peer, req);

	/* the agent and the same peer handle work again */
	memset(cli_buf, 0x5a, 4096);
	memset(srv_buf, 0, 4096);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 4096, &good), 0);
	iov.len = 4096;
	CU_ASSERT_EQUAL(xfer_sync(cli_peer, RDMAXFER_OP_WRITE, &iov, &good, 1,
				  NULL), 0);
	CU_ASSERT(!memcmp(srv_buf, cli_buf, 4096));
	/* the server re-accepted: take its new peer */
	rdmaxfer_accept(srv, 5000, &srv_peer);
}

static void test_bad_rkey(void)
{
	struct rdmaxfer_desc d;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 4096, &d), 0);
	d.rkey ^= 0x5a5a00;
	expect_remote_error(&d);
}

static void test_out_of_bounds(void)
{
	struct rdmaxfer_desc d, sub;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 0, &d), 0);
	CU_ASSERT_EQUAL(d.len, SRV_LEN);
	/* caught locally when the descriptor is derived */
	CU_ASSERT_EQUAL(rdmaxfer_desc_sub(&d, SRV_LEN - 8, 4096, &sub), -ERANGE);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, SRV_LEN, 1, &sub), -ERANGE);
	/* a forged descriptor reaching past the region: caught remotely.
	 * The cache may have registered a larger area; go well past it. */
	d.addr += SRV_LEN + 64 * MiB;
	d.len = 4096;
	expect_remote_error(&d);
}

static void test_reserved_kinds(void)
{
	struct rdmaxfer_mem *m;
	struct rdmaxfer_desc d;
	struct rdmaxfer_iov iov = { cli_buf, 8 };
	struct rdmaxfer_req *req;

	/* ODP is a kind of its own now (test_rdmaxfer_odp): auto serves it,
	 * with ODP or pinned */
	CU_ASSERT_EQUAL(rdmaxfer_mem_register(cli, cli_buf, 4096,
					      RDMAXFER_MEM_ODP, &m), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register(cli, cli_buf, 4096,
					      RDMAXFER_MEM_DEVICE, &m), -EOPNOTSUPP);
	/* dma-buf regions come from an fd (test_rdmaxfer_dmabuf), not an
	 * address; their descriptors are targeted like any other */
	CU_ASSERT_EQUAL(rdmaxfer_mem_register(cli, cli_buf, 4096,
					      RDMAXFER_MEM_DMABUF, &m), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register(cli, cli_buf, 4096, 99, &m), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 8, &d), 0);
	/* device memory is targeted like any other (test_rdmaxfer_devmem);
	 * unknown kind bits, and the zero-based bit off DEVICE, are not */
	d.kind = RDMAXFER_MEM_DEVICE;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(cli_peer, RDMAXFER_OP_WRITE,
						    &iov, 1, &d, 1, NULL, &req),
			      0);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	d.kind = RDMAXFER_MEM_HOST | RDMAXFER_DESC_ZERO_BASED;
	CU_ASSERT_EQUAL(rdmaxfer_xfer_prepare(cli_peer, RDMAXFER_OP_WRITE, &iov,
					      1, &d, 1, NULL, &req), -EINVAL);
	d.kind = RDMAXFER_MEM_DEVICE | (1U << 17);
	CU_ASSERT_EQUAL(rdmaxfer_xfer_prepare(cli_peer, RDMAXFER_OP_WRITE, &iov,
					      1, &d, 1, NULL, &req), -EINVAL);
	d.kind = RDMAXFER_MEM_HOST;
	d.len = 9;
	CU_ASSERT_EQUAL(rdmaxfer_xfer_prepare(cli_peer, RDMAXFER_OP_WRITE, &iov,
					      1, &d, 1, NULL, &req), -EINVAL);
}

static void test_metadata(void)
{
	struct rdmaxfer_agent_info info;
	struct rdmaxfer_desc d;
	struct rdmaxfer_md *md;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	uint8_t blob[512], junk[300];
	size_t len, i;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 100, 200, &d), 0);
	CU_ASSERT_EQUAL(rdmaxfer_md_pack(srv, &d, 1, NULL, 0, &len), -ENOSPC);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_md_pack(srv, &d, 1, blob, sizeof(blob),
					       &len), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_md_parse(blob, len, &md), 0);
	rdmaxfer_agent_query(srv, &info);
	CU_ASSERT_EQUAL(md->agent_id, info.agent_id);
	CU_ASSERT(md->listening);
	CU_ASSERT_EQUAL(md->listen_port, srv_port);
	CU_ASSERT(!strcmp(md->host, addr));
	CU_ASSERT_EQUAL(md->ndescs, 1);
	CU_ASSERT(!memcmp(&md->descs[0], &d, sizeof(d)));
	rdmaxfer_md_free(md);

	/* out-of-band connect from the blob */
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &a), 0);
	CU_ASSERT_EQUAL(rdmaxfer_connect_md(a, blob, len, 10000, &p), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_id(p), info.agent_id);
	/* garbage, truncation, another version: clean errors, no connection */
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 7 + 3);
	CU_ASSERT_EQUAL(rdmaxfer_connect_md(a, junk, sizeof(junk), 1000, &p), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_connect_md(a, blob, len - 1, 1000, &p), -EINVAL);
	blob[4]++;
	CU_ASSERT_EQUAL(rdmaxfer_connect_md(a, blob, len, 1000, &p), -EPROTO);
	blob[4]--;
	/* a blob of an agent that does not listen */
	{
		uint8_t b2[512];
		size_t l2;

		CU_ASSERT_EQUAL(rdmaxfer_md_pack(a, NULL, 0, b2, sizeof(b2), &l2), 0);
		CU_ASSERT_EQUAL(rdmaxfer_connect_md(cli, b2, l2, 1000, &p),
				-EDESTADDRREQ);
	}
	rdmaxfer_agent_destroy(a);
}

static void test_connect_errors(void)
{
	struct rdmaxfer_peer *p;
	double t0 = now_s();
	int ret;

	/* nobody listens on this port */
	ret = rdmaxfer_connect(cli, addr, (uint16_t)(srv_port + 1), 5000, &p);
	rc_diag("connect to a closed port: %s after %.3f s",
		rdmaxfer_strerror(ret), now_s() - t0);
	CU_ASSERT(ret == -ECONNREFUSED || ret == -EHOSTUNREACH || ret == -ETIMEDOUT);
	CU_ASSERT(now_s() - t0 < 8);
	/* listening twice, and on a port another agent holds */
	CU_ASSERT_EQUAL(rdmaxfer_listen(srv, addr, 0), -EALREADY);
	ret = rdmaxfer_listen(cli, addr, srv_port);
	rc_diag("listen on a busy port: %s", rdmaxfer_strerror(ret));
	CU_ASSERT_EQUAL(ret, -EADDRINUSE);
	/* an address that is not ours */
	CU_ASSERT(rdmaxfer_connect(cli, "no.such.host.invalid", 1, 1000, &p) < 0);
}

/* Child server in its own process, so it can be killed. */
static int child_server(const char *a)
{
	struct rdmaxfer_agent *ag;
	struct rdmaxfer_mem *m;
	struct rdmaxfer_desc d;
	void *buf = aligned_alloc(4096, MiB);
	uint16_t port;

	int ret;

	alarm(120);	/* never outlive the test */
	if (!buf)
		return 1;
	ret = new_agent(RDMAXFER_PROGRESS_THREAD, 1, &ag);
	if (!ret)
		ret = rdmaxfer_listen(ag, a, 0);
	if (!ret)
		ret = rdmaxfer_listen_port(ag, &port);
	if (!ret)
		ret = rdmaxfer_mem_register(ag, buf, MiB, RDMAXFER_MEM_HOST, &m);
	if (!ret)
		ret = rdmaxfer_mem_desc(m, 0, 0, &d);
	if (ret) {
		fprintf(stderr, "child server: %s\n", rdmaxfer_strerror(ret));
		return 1;
	}
	printf("%u %llu %llu %u\n", port, (unsigned long long)d.addr,
	       (unsigned long long)d.len, d.rkey);
	fflush(stdout);
	for (;;)
		pause();
}

static void test_killed_peer(void)
{
	struct rdmaxfer_iov iov = { cli_buf, 64 * 1024 };
	struct rdmaxfer_desc d = { .kind = RDMAXFER_MEM_HOST };
	struct rdmaxfer_peer *p;
	struct rdmaxfer_req *req;
	unsigned int port, rkey;
	unsigned long long a, l;
	int fds[2], ret, status, i;
	double t0;
	FILE *f;
	pid_t pid;

	CU_ASSERT_FATAL(pipe(fds) == 0);
	pid = fork();
	if (!pid) {
		dup2(fds[1], 1);
		close(fds[0]);
		execl("/proc/self/exe", "test_rdmaxfer", "--child-server", addr,
		      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	if (!f || fscanf(f, "%u %llu %llu %u", &port, &a, &l, &rkey) != 4) {
		CU_FAIL("child server did not start");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	d.addr = a;
	d.len = iov.len;
	d.rkey = rkey;
	ret = rdmaxfer_connect(cli, addr, (uint16_t)port, 10000, &p);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL(xfer_sync(p, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL), 0);

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	t0 = now_s();
	/* keep posting until the loss shows: through a CM event (-ENOTCONN
	 * at post) or a failed request (flush or transport retries) */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p, RDMAXFER_OP_WRITE, &iov, 1,
						    &d, 1, NULL, &req), 0);
	ret = 0;
	for (i = 0; i < 1000 && !ret && now_s() - t0 < 30; i++) {
		ret = rdmaxfer_req_post(req);
		if (!ret)
			ret = rdmaxfer_req_wait(req, 30000);
	}
	rc_diag("dead peer reported after %.3f s: %s (%s)", now_s() - t0,
		rdmaxfer_strerror(ret), rdmaxfer_req_strerror(req));
	CU_ASSERT(ret == -ENOTCONN || ret == -ECONNRESET || ret == -ETIMEDOUT ||
		  ret == -ECANCELED);
	CU_ASSERT(now_s() - t0 < 30);
	CU_ASSERT_NOT_EQUAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_CONNECTED);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_destroy(p), 0);

	/* the agent still works with its other peer */
	{
		struct rdmaxfer_desc good;

		memset(cli_buf, 0x6b, 8192);
		memset(srv_buf, 0, 8192);
		CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, 0, 8192, &good), 0);
		iov.len = 8192;
		CU_ASSERT_EQUAL(xfer_sync(cli_peer, RDMAXFER_OP_WRITE, &iov,
					  &good, 1, NULL), 0);
		CU_ASSERT(!memcmp(srv_buf, cli_buf, 8192));
	}
}

static void test_cache_register_once(void)
{
	struct rdmaxfer_agent_info info;
	uint8_t *buf = cache_check_buf(cli, &info);
	struct rdmaxfer_iov iov[2] = { { buf + 1, 5000 }, { buf + MiB, MiB } };
	struct rdmaxfer_desc d[2];

	if (!buf)
		return;
	memset(buf, 0x11, 2 * MiB);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, 0, 5000, &d[0]), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, 2 * MiB, MiB, &d[1]), 0);
	check_cache_register_once(cli, cli_peer, info.cache_monitor, iov, d);
	CU_ASSERT(!memcmp(srv_buf + 2 * MiB, buf + MiB, MiB));
	free(buf);
}

static void test_cache_remap(void)
{
	const size_t len = 2 * MiB;
	struct rdmaxfer_iov iov;
	struct rdmaxfer_desc d;
	struct rdmaxfer_req *req;
	uint8_t *p, *q;
	int round;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	CU_ASSERT_FATAL(p != MAP_FAILED);
	memset(p, 0xa1, len);
	iov.addr = p + 100;
	iov.len = len - 200;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, iov.len, &d), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(cli_peer, RDMAXFER_OP_WRITE,
						    &iov, 1, &d, 1, NULL, &req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT(srv_buf[0] == 0xa1 && srv_buf[iov.len - 1] == 0xa1);
	for (round = 0; round < 3; round++) {
		uint8_t v = (uint8_t)(0xb2 + round);

		/* same virtual addresses, new pages */
		CU_ASSERT_FATAL(munmap(p, len) == 0);
		q = mmap(p, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		CU_ASSERT_FATAL(q == p);
		memset(p, v, len);
		CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
		CU_ASSERT_EQUAL(srv_buf[0], v);
		CU_ASSERT_EQUAL(srv_buf[iov.len / 2], v);
		CU_ASSERT_EQUAL(srv_buf[iov.len - 1], v);
	}
	rdmaxfer_req_free(req);
	munmap(p, len);
}

struct conn_arg {
	struct rdmaxfer_agent *agent;
	uint16_t port;
	struct rdmaxfer_peer *peer;
	int ret;
};

static void *connect_thread(void *p)
{
	struct conn_arg *c = p;

	c->ret = rdmaxfer_connect(c->agent, addr, c->port, 10000, &c->peer);
	return NULL;
}

/* Two caller-mode agents, a listening and b connected to it with
 * b_qps QPs: *pa is a's peer, c->peer b's.  Fatal on failure. */
static void caller_pair(uint32_t b_qps, struct rdmaxfer_agent **a,
			struct rdmaxfer_agent **b, struct rdmaxfer_peer **pa,
			struct conn_arg *c)
{
	pthread_t th;

	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, a), 0);
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, b_qps, b),
			      0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen(*a, addr, 0), 0);
	c->agent = *b;
	c->ret = -1;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen_port(*a, &c->port), 0);
	pthread_create(&th, NULL, connect_thread, c);
	CU_ASSERT_EQUAL(rdmaxfer_accept(*a, 15000, pa), 0);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL_FATAL(c->ret, 0);
	CU_ASSERT_FATAL(*pa != NULL);
}

/* Both sides caller-driven: accept and wait_notifs drive the acceptor,
 * the striped WRITE (3 QPs) carries a deferred notification. */
static void test_caller_mode_both(void)
{
	struct rdmaxfer_agent *a, *b;
	struct rdmaxfer_peer *pa = NULL;
	struct rdmaxfer_mem *m;
	struct rdmaxfer_desc d;
	struct rdmaxfer_iov iov = { cli_buf + 1, 300001 };
	struct rdmaxfer_xfer_notif xn = { .value = 0xabcdef12 };
	struct rdmaxfer_notif *n = calloc(4, sizeof(*n));
	uint8_t *buf = calloc(1, 300001);
	struct conn_arg c;
	int ret;

	CU_ASSERT_FATAL(n && buf);
	caller_pair(3, &a, &b, &pa, &c);
	CU_ASSERT_EQUAL(rdmaxfer_accept(a, 0, &pa), -ETIMEDOUT);
	ret = rdmaxfer_mem_register(a, buf, 300001, RDMAXFER_MEM_HOST, &m);
	if (ret)
		rc_diag("register: %s", rdmaxfer_strerror(ret));
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(m, 0, 0, &d), 0);
	fill(iov.addr, iov.len, 9);
	CU_ASSERT_EQUAL(xfer_sync(c.peer, RDMAXFER_OP_WRITE, &iov, &d, 1, &xn), 0);
	CU_ASSERT_EQUAL(rdmaxfer_wait_notifs(a, n, 4, WAIT_MS), 1);
	CU_ASSERT_EQUAL(n[0].value, 0xabcdef12);
	CU_ASSERT_EQUAL(n[0].type, RDMAXFER_NOTIF_IMM);
	CU_ASSERT(!memcmp(buf, iov.addr, iov.len));
	/* and back: READ striped over the 3 QPs */
	memset(iov.addr, 0, iov.len);
	CU_ASSERT_EQUAL(xfer_sync(c.peer, RDMAXFER_OP_READ, &iov, &d, 1, NULL), 0);
	CU_ASSERT(!memcmp(buf, iov.addr, iov.len));
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	rdmaxfer_agent_destroy(b);
	rdmaxfer_agent_destroy(a);
	free(buf);
	free(n);
}

/*
 * rdmaxfer_peer_flush(): a burst of messages, then a flush, then the
 * sender's peer destroyed at once; every message must still arrive, in
 * order and whole (destroy alone may drop the last ones: rdmaxfer_notif(3)
 * BUGS).  A WRITE held by RDMAXFER_POST_MORE is rung by the flush and
 * complete when it returns.  Then the bad cases: NULL, and the accepting
 * side's peer once the connector is gone (not connected, or failed).
 */
static void test_peer_flush(void)
{
	enum { N = 40 };
	struct rdmaxfer_agent *a, *b;
	struct rdmaxfer_peer *pa = NULL;
	struct rdmaxfer_notif *n = calloc(N + 4, sizeof(*n));
	uint8_t *buf = calloc(1, 8192);
	struct rdmaxfer_iov iov = { cli_buf, 8192 };
	struct rdmaxfer_req *req = NULL;
	struct rdmaxfer_mem *m;
	struct rdmaxfer_desc d;
	struct conn_arg c;
	char msg[RDMAXFER_NOTIF_MSG_MAX];
	int i, got = 0, ret;
	double t0;

	CU_ASSERT_FATAL(n && buf);
	CU_ASSERT_EQUAL(rdmaxfer_peer_flush(NULL, 0), -EINVAL);
	caller_pair(1, &a, &b, &pa, &c);
	/* nothing posted yet: flushed at once */
	CU_ASSERT_EQUAL(rdmaxfer_peer_flush(c.peer, 0), 0);

	/* a WRITE whose doorbell is held: the flush rings and waits */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_register(a, buf, 8192,
						    RDMAXFER_MEM_HOST, &m), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(m, 0, 0, &d), 0);
	fill(cli_buf, 8192, 77);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(c.peer, RDMAXFER_OP_WRITE,
						    &iov, 1, &d, 1, NULL, &req),
			      0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(req, RDMAXFER_POST_MORE), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_flush(c.peer, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_test(req), 0);
	CU_ASSERT_EQUAL(first_bad(buf, 8192, 77), 8192);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);

	/* messages, a flush, and the peer gone at once */
	for (i = 0; i < N; i++) {
		memset(msg, 'a' + i % 26, sizeof(msg));
		do {
			ret = rdmaxfer_notif_send(c.peer, 5000 + i, msg,
						  sizeof(msg));
			if (ret == -EAGAIN)
				rdmaxfer_progress(b);
		} while (ret == -EAGAIN);
		CU_ASSERT_EQUAL(ret, 0);
	}
	CU_ASSERT_EQUAL(rdmaxfer_peer_flush(c.peer, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_destroy(c.peer), 0);
	while (got < N) {
		ret = rdmaxfer_wait_notifs(a, n + got, N + 4 - got, WAIT_MS);
		if (ret <= 0)
			break;
		got += ret;
	}
	rc_diag("%d of %d messages after flush and destroy", got, N);
	CU_ASSERT_EQUAL(got, N);
	for (i = 0; i < got && i < N; i++) {
		memset(msg, 'a' + i % 26, sizeof(msg));
		if (n[i].value != (uint32_t)(5000 + i) ||
		    n[i].type != RDMAXFER_NOTIF_MSG || n[i].len != sizeof(msg) ||
		    memcmp(n[i].data, msg, sizeof(msg))) {
			CU_FAIL("message order or content");
			rc_diag("message %d: value %u", i, n[i].value);
			break;
		}
	}

	/* the connector is gone: the acceptor's peer leaves CONNECTED, and
	 * a flush says so instead of waiting */
	t0 = now_s();
	while (rdmaxfer_peer_state(pa) == RDMAXFER_PEER_CONNECTED &&
	       now_s() - t0 < WAIT_MS / 1000.0) {
		rdmaxfer_progress(a);
		usleep(1000);
	}
	CU_ASSERT_NOT_EQUAL(rdmaxfer_peer_state(pa), RDMAXFER_PEER_CONNECTED);
	ret = rdmaxfer_peer_flush(pa, WAIT_MS);
	rc_diag("flush of a peer whose remote left: %s", rdmaxfer_strerror(ret));
	CU_ASSERT(ret < 0 && ret != -ETIMEDOUT && ret != -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	rdmaxfer_agent_destroy(b);
	rdmaxfer_agent_destroy(a);
	free(buf);
	free(n);
}

/*
 * RDMAXFER_POST_MORE: requests posted with the flag queue their work
 * requests and hold the doorbell; the next post without it (or the next
 * test, wait or progress call of the agent) posts everything held for a
 * QP as one chain.  A chain's earlier requests carry no signalled work
 * request of their own and complete with a later one, so every case
 * checks each request's own result and every byte of its data.
 *
 * A chain is a list of requests, each of 1 .. CHAIN_MAXP pairs laid out
 * at unaligned offsets with gaps on both sides: the local ranges from
 * cli_buf + 1, the remote ones from srv_buf + 5.
 */
#define CHAIN_MAXP	3

struct chain_req {
	struct rdmaxfer_req *req;
	unsigned int np;
	struct rdmaxfer_iov iov[CHAIN_MAXP];
	struct rdmaxfer_desc d[CHAIN_MAXP];
	int ret;
};

struct chain {
	unsigned int n;
	struct chain_req *r;
	size_t lspan, rspan;	/* bytes of cli_buf / srv_buf in use */
};

static const size_t chain_sizes[] = { 1, 2, 7, 64, 100, 255, 511, 1000,
				      4095, 4096, 4097, 8191, 12345, 33333,
				      65535, 65536 };
#define NCHAIN_SIZES (sizeof(chain_sizes) / sizeof(chain_sizes[0]))

/*
 * Lay out n requests of up to maxp pairs of mixed sizes (1 B .. 64 KiB);
 * with big_every, every big_every-th request is one pair of a little
 * more than 1 MiB instead (striped on a peer of several QPs).
 */
static void chain_layout(struct chain *c, unsigned int n, unsigned int maxp,
			 unsigned int big_every)
{
	size_t loff = 1, roff = 5;
	unsigned int i, j;

	c->n = n;
	c->r = calloc(n, sizeof(*c->r));
	CU_ASSERT_FATAL(c->r != NULL);
	for (i = 0; i < n; i++) {
		struct chain_req *r = &c->r[i];
		bool big = big_every && i % big_every == 0;

		r->np = big ? 1 : 1 + i % maxp;
		for (j = 0; j < r->np; j++) {
			size_t k = (i * 5 + j * 3) % NCHAIN_SIZES;
			size_t len = big ? MiB + 3 * i + 1 : chain_sizes[k];

			r->iov[j].addr = cli_buf + loff;
			r->iov[j].len = len;
			CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, roff,
								len, &r->d[j]),
					      0);
			loff += len + 13 + i % 7;
			roff += len + 11 + j;
		}
	}
	c->lspan = loff;
	c->rspan = roff;
	CU_ASSERT_FATAL(c->lspan < CLI_LEN && c->rspan < SRV_LEN);
}

static void chain_prepare(struct chain *c, struct rdmaxfer_peer *peer,
			  enum rdmaxfer_op op)
{
	unsigned int i;

	for (i = 0; i < c->n; i++)
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(peer, op,
				c->r[i].iov, c->r[i].np, c->r[i].d, c->r[i].np,
				NULL, &c->r[i].req), 0);
}

static void chain_free(struct chain *c)
{
	unsigned int i;

	for (i = 0; i < c->n; i++)
		if (c->r[i].req)
			CU_ASSERT_EQUAL(rdmaxfer_req_free(c->r[i].req), 0);
	free(c->r);
	c->r = NULL;
}

/* A seed whose pattern starts with a non-zero byte: even a 1-byte pair
 * shows on a zeroed destination. */
static uint32_t chain_seed(unsigned int round, unsigned int i, unsigned int j)
{
	uint32_t seed = round * 7919 + i * 31 + j * 7 + 1;

	while (!pat(0, seed))
		seed++;
	return seed;
}

/* Zero the destination side of op and fill every source range with its
 * own pattern for this round. */
static void chain_fill(struct chain *c, enum rdmaxfer_op op,
		       unsigned int round)
{
	unsigned int i, j;

	memset(op == RDMAXFER_OP_WRITE ? srv_buf : cli_buf, 0,
	       op == RDMAXFER_OP_WRITE ? c->rspan + 64 : c->lspan + 64);
	for (i = 0; i < c->n; i++) {
		for (j = 0; j < c->r[i].np; j++) {
			uint8_t *src = op == RDMAXFER_OP_WRITE ?
				c->r[i].iov[j].addr :
				(uint8_t *)(uintptr_t)c->r[i].d[j].addr;

			fill(src, c->r[i].iov[j].len, chain_seed(round, i, j));
		}
	}
}

/*
 * Post requests [0, c->n) in order, or reversed: each with
 * RDMAXFER_POST_MORE but every group-th and the last (group 0: only the
 * last rings the doorbell).
 */
static void chain_post(struct chain *c, unsigned int group, bool reverse)
{
	unsigned int i;

	for (i = 0; i < c->n; i++) {
		unsigned int k = reverse ? c->n - 1 - i : i;
		bool ring = i + 1 == c->n || (group && (i + 1) % group == 0);
		int ret;

		ret = rdmaxfer_req_post_flags(c->r[k].req,
					      ring ? 0 : RDMAXFER_POST_MORE);
		if (ret)
			rc_diag("post %u: %s", k, rdmaxfer_strerror(ret));
		CU_ASSERT_EQUAL_FATAL(ret, 0);
	}
}

/* Wait for every request of the chain; each result goes to r[i].ret. */
static void chain_wait(struct chain *c, int timeout_ms)
{
	unsigned int i;

	for (i = 0; i < c->n; i++)
		c->r[i].ret = rdmaxfer_req_wait(c->r[i].req, timeout_ms);
}

/* Every request of [first, last) completed without error. */
static void chain_check_ok(struct chain *c, unsigned int first,
			   unsigned int last)
{
	unsigned int i, bad = 0;

	for (i = first; i < last; i++) {
		if (!c->r[i].ret)
			continue;
		if (!bad++)
			rc_diag("request %u of %u: %d %s (%s)", i, c->n,
				c->r[i].ret, rdmaxfer_strerror(c->r[i].ret),
				rdmaxfer_req_strerror(c->r[i].req));
	}
	if (bad)
		rc_diag("%u requests failed", bad);
	CU_ASSERT_EQUAL(bad, 0);
}

/* The data of requests [first, last) is in place, byte for byte, and the
 * byte on each side of every destination range is untouched. */
static void chain_check_data(struct chain *c, enum rdmaxfer_op op,
			     unsigned int first, unsigned int last)
{
	unsigned int i, j, bad = 0;

	for (i = first; i < last; i++) {
		for (j = 0; j < c->r[i].np; j++) {
			uint8_t *l = c->r[i].iov[j].addr;
			uint8_t *r = (uint8_t *)(uintptr_t)c->r[i].d[j].addr;
			uint8_t *dst = op == RDMAXFER_OP_WRITE ? r : l;
			size_t len = c->r[i].iov[j].len;

			if (!memcmp(l, r, len) && !dst[-1] && !dst[len])
				continue;
			if (!bad++)
				rc_diag("request %u pair %u (%zu B): %s", i, j,
					len, memcmp(l, r, len) ?
					"data differs" : "a neighbour changed");
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/* Rounds of one chain: all held but the last, reversed, in groups of 5,
 * all held again. */
static void chain_rounds(struct chain *c, enum rdmaxfer_op op)
{
	static const struct {
		unsigned int group;
		bool reverse;
	} rounds[] = { { 0, false }, { 0, true }, { 5, false }, { 0, false } };
	unsigned int k;

	for (k = 0; k < sizeof(rounds) / sizeof(rounds[0]); k++) {
		chain_fill(c, op, k + (op == RDMAXFER_OP_READ ? 10 : 0));
		chain_post(c, rounds[k].group, rounds[k].reverse);
		chain_wait(c, WAIT_MS);
		chain_check_ok(c, 0, c->n);
		chain_check_data(c, op, 0, c->n);
	}
}

/* 32 requests of mixed sizes on cli_peer (2 QPs: requests alternate
 * between them, the larger ones are striped), WRITE then READ. */
static void test_post_more_chain(void)
{
	static const enum rdmaxfer_op ops[] = { RDMAXFER_OP_WRITE,
						RDMAXFER_OP_READ };
	struct chain c;
	unsigned int k;

	for (k = 0; k < 2; k++) {
		chain_layout(&c, 32, CHAIN_MAXP, 0);
		chain_prepare(&c, cli_peer, ops[k]);
		chain_rounds(&c, ops[k]);
		chain_free(&c);
	}
}

/* A chain four times longer than a 16-entry send queue on one QP: it goes
 * out in several doorbells as completions free slots, with a signalled
 * WR every 4 in the middle of requests, so requests ride on slots of
 * later doorbells. */
static void test_post_more_chain_small_sq(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent_info info;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct chain c;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_CALLER;
	attr.qps_per_peer = 1;
	attr.sq_depth = 16;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, &a), 0);
	CU_ASSERT_EQUAL_FATAL(connect_to(a, &p), 0);
	CU_ASSERT_EQUAL(rdmaxfer_agent_query(a, &info), 0);
	CU_ASSERT_EQUAL(info.sq_depth, 16);
	CU_ASSERT_EQUAL(info.signal_interval, 4);
	chain_layout(&c, 40, CHAIN_MAXP, 0);	/* 80 work requests */
	chain_prepare(&c, p, RDMAXFER_OP_WRITE);
	chain_rounds(&c, RDMAXFER_OP_WRITE);
	chain_free(&c);
	chain_layout(&c, 40, CHAIN_MAXP, 0);
	chain_prepare(&c, p, RDMAXFER_OP_READ);
	chain_rounds(&c, RDMAXFER_OP_READ);
	chain_free(&c);
	rdmaxfer_agent_destroy(a);
}

static bool all_zero(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* Poll (without calling into the client agent) until len bytes at r
 * equal l, for up to 5 s. */
static bool lands_within_5s(const uint8_t *r, const uint8_t *l, size_t len)
{
	double end = now_s() + 5;

	while (memcmp(r, l, len)) {
		if (now_s() > end)
			return false;
		usleep(1000);
	}
	return true;
}

/*
 * One request posted with RDMAXFER_POST_MORE and nothing after it: in
 * caller progress mode nothing moves until the agent is called, and then
 * the held doorbell is rung by wait, by test, by rdmaxfer_progress(), or
 * by a post without the flag on another peer of the same agent.
 */
static void test_post_more_flushed_by_test(void)
{
	const size_t off = 4096 + 3, len = 4099;
	struct rdmaxfer_iov iov = { cli_buf + 7, len };
	struct rdmaxfer_iov iov2 = { cli_buf + 65536, 100 };
	struct rdmaxfer_desc d, d2;
	struct rdmaxfer_req *req, *req2;
	struct rdmaxfer_peer *p2;
	uint8_t *r = srv_buf + off;
	double end;
	int ret, round;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, off, len, &d), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(cli_peer, RDMAXFER_OP_WRITE,
						    &iov, 1, &d, 1, NULL, &req), 0);
	for (round = 0; round < 3; round++) {
		fill(iov.addr, len, chain_seed(round, 0, 0));
		memset(r - 1, 0, len + 2);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post_flags(req,
						RDMAXFER_POST_MORE), 0);
		/* the doorbell is held: nothing reaches the server */
		usleep(20000);
		CU_ASSERT(all_zero(r - 1, len + 2));
		switch (round) {
		case 0:
			ret = rdmaxfer_req_wait(req, 5000);
			break;
		case 1:
			end = now_s() + 5;
			while ((ret = rdmaxfer_req_test(req)) == -EINPROGRESS &&
			       now_s() < end)
				usleep(100);
			break;
		default:
			CU_ASSERT(rdmaxfer_progress(cli) >= 0);
			CU_ASSERT(lands_within_5s(r, iov.addr, len));
			ret = rdmaxfer_req_wait(req, 5000);
			break;
		}
		if (ret)
			rc_diag("round %d: %s", round, rdmaxfer_strerror(ret));
		CU_ASSERT_EQUAL(ret, 0);
		CU_ASSERT(!memcmp(r, iov.addr, len));
		CU_ASSERT(r[-1] == 0 && r[len] == 0);
	}

	/* held on cli_peer, rung by a plain post on another peer of cli */
	CU_ASSERT_EQUAL_FATAL(connect_to(cli, &p2), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 2 * MiB, 100, &d2), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p2, RDMAXFER_OP_WRITE,
						    &iov2, 1, &d2, 1, NULL,
						    &req2), 0);
	fill(iov.addr, len, chain_seed(3, 0, 0));
	fill(iov2.addr, iov2.len, chain_seed(3, 1, 0));
	memset(r - 1, 0, len + 2);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(req, RDMAXFER_POST_MORE), 0);
	usleep(20000);
	CU_ASSERT(all_zero(r - 1, len + 2));
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(req2, 0), 0);
	CU_ASSERT(lands_within_5s(r, iov.addr, len));
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, 5000), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req2, 5000), 0);
	CU_ASSERT(!memcmp(srv_buf + 2 * MiB, iov2.addr, iov2.len));
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req2), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_destroy(p2), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
}

/* Unknown flags and a busy request are refused without side effects. */
static void test_post_more_bad_flag(void)
{
	struct rdmaxfer_iov iov = { cli_buf + 1, 777 };
	struct rdmaxfer_desc d;
	struct rdmaxfer_req *req;

	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(NULL, 0), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(NULL, RDMAXFER_POST_MORE),
			-EINVAL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 3, iov.len, &d), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(cli_peer, RDMAXFER_OP_WRITE,
						    &iov, 1, &d, 1, NULL, &req), 0);
	fill(iov.addr, iov.len, 21);
	memset(srv_buf, 0, 4096);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(req, 0x80), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(req, 0x80 | RDMAXFER_POST_MORE),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(req, ~0u), -EINVAL);
	/* nothing was posted */
	CU_ASSERT_EQUAL(rdmaxfer_req_test(req), -EALREADY);
	CU_ASSERT(all_zero(srv_buf, 4096));

	/* still postable; while it is held or in flight it is busy */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post_flags(req, RDMAXFER_POST_MORE),
			      0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(req, RDMAXFER_POST_MORE),
			-EBUSY);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(req, 0), -EBUSY);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), -EBUSY);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(req, 0x80), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), -EBUSY);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT(!memcmp(srv_buf + 3, iov.addr, iov.len));
	/* and again, plainly */
	fill(iov.addr, iov.len, 22);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(req, 0), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT(!memcmp(srv_buf + 3, iov.addr, iov.len));
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
}

/*
 * A chain of 8 WRITEs on one QP whose 5th has a bad rkey: that WR is not
 * signalled, yet its request fails with the remote access error; the
 * requests before it were executed and complete; the ones after it are
 * flushed.  None is left hanging, the peer refuses posts until it is
 * reconnected, then the same chain goes through.
 */
static void test_post_more_error_in_chain(void)
{
	enum { N = 8, BAD = 4 };
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct chain c;
	uint32_t rkey;
	unsigned int i;
	double t0;

	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &a), 0);
	CU_ASSERT_EQUAL_FATAL(connect_to(a, &p), 0);
	chain_layout(&c, N, 2, 0);
	rkey = c.r[BAD].d[0].rkey;
	c.r[BAD].d[0].rkey ^= 0x5a5a00;
	chain_prepare(&c, p, RDMAXFER_OP_WRITE);
	chain_fill(&c, RDMAXFER_OP_WRITE, 0);

	t0 = now_s();
	chain_post(&c, 0, false);
	chain_wait(&c, 10000);
	rc_diag("chain with a bad rkey finished after %.3f s", now_s() - t0);
	for (i = 0; i < N; i++) {
		int ret = c.r[i].ret;

		if (i >= BAD)
			rc_diag("request %u: %d %s (%s)", i, ret,
				rdmaxfer_strerror(ret),
				rdmaxfer_req_strerror(c.r[i].req));
		CU_ASSERT(ret != -ETIMEDOUT && ret != -EINPROGRESS);
		if (i > BAD)
			CU_ASSERT(ret != 0);
	}
	CU_ASSERT(c.r[BAD].ret == -EACCES || c.r[BAD].ret == -EREMOTEIO);
	CU_ASSERT(strstr(rdmaxfer_req_strerror(c.r[BAD].req), "error") != NULL);
	chain_check_ok(&c, 0, BAD);
	chain_check_data(&c, RDMAXFER_OP_WRITE, 0, BAD);

	/* failed peer: posts refused, with or without the flag */
	CU_ASSERT_NOT_EQUAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_CONNECTED);
	CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(c.r[0].req, RDMAXFER_POST_MORE),
			-ENOTCONN);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(c.r[0].req), -ENOTCONN);
	CU_ASSERT_EQUAL(rdmaxfer_peer_reconnect(p, 10000), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_CONNECTED);

	/* the same chain, the bad request rebuilt with the right key */
	CU_ASSERT_EQUAL(rdmaxfer_req_free(c.r[BAD].req), 0);
	c.r[BAD].d[0].rkey = rkey;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p, RDMAXFER_OP_WRITE,
			c.r[BAD].iov, c.r[BAD].np, c.r[BAD].d, c.r[BAD].np,
			NULL, &c.r[BAD].req), 0);
	chain_fill(&c, RDMAXFER_OP_WRITE, 1);
	chain_post(&c, 0, false);
	chain_wait(&c, WAIT_MS);
	chain_check_ok(&c, 0, N);
	chain_check_data(&c, RDMAXFER_OP_WRITE, 0, N);
	chain_free(&c);
	rdmaxfer_agent_destroy(a);
}

/*
 * A peer of 4 QPs: a chain of 24 requests where every third is a 1 MiB
 * pair striped over all QPs and the others go to one QP each; two carry
 * notifications (one striped: sent after its pieces completed; one on a
 * single QP: appended to its list).  WRITE, then READ.
 */
static void test_post_more_chain_striped(void)
{
	enum { N = 24, NOTIF_STRIPED = 9, NOTIF_SMALL = 13 };
	struct rdmaxfer_notif *nb = calloc(8, sizeof(*nb));
	struct rdmaxfer_xfer_notif xn;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct chain c;
	unsigned int i, round;
	int got, ret, seen;

	CU_ASSERT_FATAL(nb != NULL);
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 4, &a), 0);
	CU_ASSERT_EQUAL_FATAL(connect_to(a, &p), 0);
	while (rdmaxfer_get_notifs(srv, nb, 8) > 0)
		;	/* nothing of earlier cases left over */

	chain_layout(&c, N, CHAIN_MAXP, 3);
	for (i = 0; i < N; i++) {
		bool notif = i == NOTIF_STRIPED || i == NOTIF_SMALL;

		xn.value = 0x7000 + i;
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p, RDMAXFER_OP_WRITE,
				c.r[i].iov, c.r[i].np, c.r[i].d, c.r[i].np,
				notif ? &xn : NULL, &c.r[i].req), 0);
	}
	for (round = 0; round < 3; round++) {
		chain_fill(&c, RDMAXFER_OP_WRITE, round);
		chain_post(&c, 0, round == 1);
		chain_wait(&c, WAIT_MS);
		chain_check_ok(&c, 0, N);
		chain_check_data(&c, RDMAXFER_OP_WRITE, 0, N);
		/* both notifications, each once */
		seen = 0;
		for (got = 0; got < 2; got += ret) {
			ret = rdmaxfer_wait_notifs(srv, nb + got, 8 - got,
						   WAIT_MS);
			if (ret <= 0)
				break;
		}
		CU_ASSERT_EQUAL(got, 2);
		for (i = 0; i < (unsigned int)got && i < 8; i++) {
			if (nb[i].value == 0x7000 + NOTIF_STRIPED)
				seen |= 1;
			else if (nb[i].value == 0x7000 + NOTIF_SMALL)
				seen |= 2;
			else
				rc_diag("unexpected notification %#x",
					nb[i].value);
		}
		CU_ASSERT_EQUAL(seen, 3);
		CU_ASSERT_EQUAL(rdmaxfer_get_notifs(srv, nb, 8), 0);
	}
	chain_free(&c);

	chain_layout(&c, N, CHAIN_MAXP, 3);
	chain_prepare(&c, p, RDMAXFER_OP_READ);
	chain_rounds(&c, RDMAXFER_OP_READ);
	chain_free(&c);
	rdmaxfer_agent_destroy(a);
	free(nb);
}

static const struct rc_test_case cases[] = {
	{ "agent_info", test_agent_info },
	{ "write_list_mixed_sizes", test_write_list },
	{ "read_list_mixed_sizes", test_read_list },
	{ "split_at_max_msg_size", test_split_max_msg },
	{ "long_list_backlog", test_long_list },
	{ "repost_prepared", test_repost },
	{ "post_more_chain", test_post_more_chain },
	{ "post_more_chain_small_sq", test_post_more_chain_small_sq },
	{ "post_more_flushed_by_test", test_post_more_flushed_by_test },
	{ "post_more_bad_flag", test_post_more_bad_flag },
	{ "post_more_chain_striped", test_post_more_chain_striped },
	{ "notif_count_order", test_notif_order },
	{ "notif_callback_after_data", test_notif_callback_after_data },
	{ "concurrent_posters_thread_mode", test_concurrent_posters },
	{ "fadd_contention", test_fadd_contention },
	{ "cswap_semantics", test_cswap },
	{ "reserved_mem_kinds", test_reserved_kinds },
	{ "metadata_blob", test_metadata },
	{ "connect_errors", test_connect_errors },
	{ "cache_register_once", test_cache_register_once },
	{ "cache_munmap_mmap", test_cache_remap },
	{ "error_bad_rkey", test_bad_rkey },
	{ "error_out_of_bounds", test_out_of_bounds },
	{ "post_more_error_in_chain", test_post_more_error_in_chain },
	{ "error_killed_peer", test_killed_peer },
	{ "caller_mode_both_sides", test_caller_mode_both },
	{ "peer_flush", test_peer_flush },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--child-server"))
		return child_server(argv[2]);
	addr = rxe_addr_or_skip();
	signal(SIGPIPE, SIG_IGN);
	rc_add_suite("rdmaxfer", suite_init, suite_cleanup, cases);
	return rc_test_main(argc, argv);
}
