// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_api.c - the API's own traps (issue 32, part 2), on rxe in
 * the VM (suite rdmaxfer, both kernels):
 *
 *  - an agent destroyed with requests in flight: held by
 *    RDMAXFER_POST_MORE, queued past the send queue's depth, posted and
 *    not polled; destroy frees them all without touching freed memory;
 *  - rings, ring writers and file engines destroyed after their agent:
 *    the calls that need the agent return -ENODEV, the destroy calls
 *    free what is left (-ENODEV for the ring and the writer), a file
 *    engine keeps its local I/O and binds to another agent; and the
 *    other order, objects first;
 *  - blocking calls from a notification callback on the progress thread
 *    (rdmaxfer_req_wait(), rdmaxfer_peer_flush(), rdmaxfer_ring_put() and
 *    rdmaxfer_ring_flush() with no timeout) progress the agent in that
 *    thread instead of waiting for it; rdmaxfer_agent_destroy() there is
 *    refused;
 *  - READ-only exports of PROT_READ memory and of a read-only MAP_SHARED
 *    file mapping, and WRITEs from them, wherever a plain registration
 *    with that access works (6.1 refuses the file mapping to any MR); a
 *    private file mapping's pages kept wherever a plain read-only pin
 *    keeps them (/proc/self/pagemap; neither kernel does: both break its
 *    copy-on-write for any long-term pin); a READ into a buffer that was
 *    a WRITE's source (not handed the read-only registration);
 *  - an ODP export under RDMAXFER_AGENT_CACHE_RKEYS: after its last
 *    deregister and an munmap, a new mapping at the address is not
 *    reachable through the old rkey (7.3: rxe has explicit ODP there);
 *  - a completion of a destroyed peer's QP delivered after a new peer's
 *    QP took its number: dropped, not taken for the new QP's.  rxe
 *    numbers QPs cyclically (300000 creations in the guest, 0.5 ms each,
 *    reused none), so a poll_cq hook on the shared context gives the
 *    stale completion the new QP's number, as a provider that reuses
 *    numbers at once (mlx5) may.
 *
 * A use-after-free in these paths does not always crash: run with
 * glibc's perturb and no tcache (the suite does), or under ASan.
 * Skips (77) without $RXE_ADDR or a device.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define WAIT_MS		20000

#include "rdmaxfer_test_util.h"

#define SBUF_LEN	(1 * MiB)

static const char *addr;
static long psz;
static struct rdmaxfer_agent *srv;
static uint16_t srv_port;
static uint8_t *srv_buf;
static struct rdmaxfer_mem *srv_mem;

/*
 * The agents' device context is librdmacm's, shared in the process:
 * hooks on it reach the library's ibv_poll_cq() and ibv_post_send().
 * They are installed before any agent's thread runs and stay until the
 * last is gone, passing everything through unless a case arms them.
 * The post hook records the QP of the last post.  The poll hook, while
 * capturing, keeps every completion of QP cap_qpn from the library (the
 * first is stashed, with the CQ it came from); armed to inject, it hands
 * the stashed completion to the next poll of that CQ first, with the QP
 * number inj_qpn: a completion of a destroyed QP delivered after a new QP
 * took its number.
 */
static struct ibv_context *hook_ctx;
static int (*real_poll_cq)(struct ibv_cq *, int, struct ibv_wc *);
static int (*real_post_send)(struct ibv_qp *, struct ibv_send_wr *,
			     struct ibv_send_wr **);
/* other agents' progress threads poll through the hooks too */
static _Atomic uint32_t seen_qpn, cap_qpn, inj_qpn;
static struct ibv_cq *_Atomic cap_cq;
static struct ibv_wc stash;		/* the capturing thread's */
static _Atomic int stashed, captured, injected, inject;

static int hook_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	seen_qpn = qp->qp_num;
	return real_post_send(qp, wr, bad);
}

static int hook_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int got, i, k;

	if (inject && cq == cap_cq && n > 0) {
		inject = 0;
		wc[0] = stash;
		wc[0].qp_num = inj_qpn;
		injected++;
		return 1;
	}
	got = real_poll_cq(cq, n, wc);
	if (got <= 0 || !cap_qpn)
		return got;
	for (i = k = 0; i < got; i++) {
		if (wc[i].qp_num != cap_qpn) {
			wc[k++] = wc[i];
			continue;
		}
		if (!stashed) {
			stash = wc[i];
			cap_cq = cq;
			stashed = 1;
		}
		captured++;
	}
	return k;
}

static int hooks_install(void)
{
	struct ibv_context **list;
	int n;

	list = rdma_get_devices(&n);
	if (!list || n <= 0)
		return -1;
	hook_ctx = list[0];
	rdma_free_devices(list);
	real_poll_cq = hook_ctx->ops.poll_cq;
	real_post_send = hook_ctx->ops.post_send;
	hook_ctx->ops.post_send = hook_post_send;
	hook_ctx->ops.poll_cq = hook_poll_cq;
	return 0;
}

static void hooks_remove(void)
{
	if (hook_ctx) {
		hook_ctx->ops.poll_cq = real_poll_cq;
		hook_ctx->ops.post_send = real_post_send;
	}
}

static int suite_init(void)
{
	psz = sysconf(_SC_PAGESIZE);
	if (hooks_install() ||
	    new_agent(RDMAXFER_PROGRESS_THREAD, 1, &srv) ||
	    rdmaxfer_listen(srv, addr, 0) ||
	    rdmaxfer_listen_port(srv, &srv_port))
		return 1;
	srv_buf = aligned_alloc(4096, SBUF_LEN);
	if (!srv_buf)
		return 1;
	memset(srv_buf, 0, SBUF_LEN);
	return rdmaxfer_mem_register(srv, srv_buf, SBUF_LEN, RDMAXFER_MEM_HOST,
				     &srv_mem);
}

static int suite_cleanup(void)
{
	if (srv_mem)
		rdmaxfer_mem_deregister(srv_mem);
	rdmaxfer_agent_destroy(srv);
	hooks_remove();
	free(srv_buf);
	return 0;
}

/* A client agent made with attr (NULL: defaults) connected to srv; the
 * server's end accepted into *sp. */
static int connect_srv(const struct rdmaxfer_agent_attr *attr,
		       struct rdmaxfer_agent **ap, struct rdmaxfer_peer **cp,
		       struct rdmaxfer_peer **sp)
{
	int ret = rdmaxfer_agent_create(attr, ap);

	if (!ret)
		ret = rdmaxfer_connect(*ap, addr, srv_port, 10000, cp);
	if (!ret)
		ret = rdmaxfer_accept(srv, 10000, sp);
	if (ret)
		rc_diag("client: %s", rdmaxfer_strerror(ret));
	return ret;
}

/* srv still serves a new client after what a case did to its own. */
static void check_srv_alive(void)
{
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *cp, *sp;
	struct rdmaxfer_desc d;
	uint8_t buf[64];
	struct rdmaxfer_iov iov = { buf, sizeof(buf) };

	CU_ASSERT_EQUAL_FATAL(connect_srv(NULL, &a, &cp, &sp), 0);
	memset(buf, 0x3c, sizeof(buf));
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, SBUF_LEN - 64, 64, &d), 0);
	CU_ASSERT_EQUAL(xfer_sync(cp, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL), 0);
	CU_ASSERT(srv_buf[SBUF_LEN - 1] == 0x3c);
	rdmaxfer_agent_destroy(a);
	rdmaxfer_peer_destroy(sp);
}

/* ------------------------------------------- destroy with requests alive */

#define NREQ		64
#define REQ_LEN		4096

/*
 * A caller-mode client with a send queue of 16 and NREQ prepared WRITEs,
 * posted per round: 0 all held by RDMAXFER_POST_MORE (every part in its
 * QP's backlog, the QP on the agent's deferred list); 1 all rung, 16 on
 * the send queue and the rest in the backlog, nothing polled; 2 a mix,
 * with a READ and an atomic rung among them.  Then the agent goes without
 * a progress call: destroy frees the requests while their parts are still
 * linked on its QPs.
 */
static void t_destroy_inflight(void)
{
	struct rdmaxfer_agent_attr attr;
	int round;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_CALLER;
	attr.sq_depth = 16;
	for (round = 0; round < 3; round++) {
		struct rdmaxfer_req *reqs[NREQ + 2];
		struct rdmaxfer_agent *a;
		struct rdmaxfer_peer *cp, *sp;
		struct rdmaxfer_desc d;
		struct rdmaxfer_iov iov;
		uint64_t *result = aligned_alloc(8, 8);
		uint8_t *buf = aligned_alloc(4096, NREQ * REQ_LEN);
		int i, n = 0, posted = 0;

		CU_ASSERT_FATAL(buf && result);
		memset(buf, round + 1, NREQ * REQ_LEN);
		CU_ASSERT_EQUAL_FATAL(connect_srv(&attr, &a, &cp, &sp), 0);
		for (i = 0; i < NREQ; i++) {
			iov.addr = buf + i * REQ_LEN;
			iov.len = REQ_LEN;
			CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem,
					      i * REQ_LEN, REQ_LEN, &d), 0);
			CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(cp,
					      RDMAXFER_OP_WRITE, &iov, 1, &d,
					      1, NULL, &reqs[n++]), 0);
		}
		if (round == 2) {
			iov.addr = buf;
			CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(cp,
					      RDMAXFER_OP_READ, &iov, 1, &d, 1,
					      NULL, &reqs[n++]), 0);
			CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 8,
								&d), 0);
			CU_ASSERT_EQUAL_FATAL(rdmaxfer_atomic_prepare(cp,
					      RDMAXFER_OP_FADD, &d, 0, 1, 0,
					      result, &reqs[n++]), 0);
		}
		for (i = 0; i < n; i++) {
			unsigned int fl = 0;

			if (round == 0 || (round == 2 && i % 3))
				fl = RDMAXFER_POST_MORE;
			if (round == 2 && i == NREQ)
				fl = 0;		/* the READ rings them */
			posted += !rdmaxfer_req_post_flags(reqs[i], fl);
		}
		CU_ASSERT_EQUAL(posted, n);
		rdmaxfer_agent_destroy(a);
		rdmaxfer_peer_destroy(sp);
		free(buf);
		free(result);
	}
	check_srv_alive();
}

/* ------------------------------------------- rings, writers, files, order */

struct held {
	pthread_mutex_t lock;
	uint64_t n, last;
	bool release;
	struct rdmaxfer_ring *ring;
};

static void held_cb(void *user, const struct rdmaxfer_grain *g)
{
	struct held *h = user;

	pthread_mutex_lock(&h->lock);
	if (g->data) {
		h->n++;
		h->last = g->index;
		if (h->release)
			rdmaxfer_ring_release(h->ring, g->index);
	}
	pthread_mutex_unlock(&h->lock);
}

static uint64_t held_count(struct held *h)
{
	uint64_t n;

	pthread_mutex_lock(&h->lock);
	n = h->n;
	pthread_mutex_unlock(&h->lock);
	return n;
}

static bool wait_held(struct held *h, uint64_t want)
{
	double t0 = now_s();

	while (held_count(h) < want)
		if (now_s() - t0 > WAIT_MS / 1000.0)
			return false;
		else
			usleep(1000);
	return true;
}

/* A temporary file of len bytes of pattern seed, opened read-write. */
static int tmp_file(size_t len, uint32_t seed)
{
	char path[] = "/tmp/rx-api-XXXXXX";
	uint8_t *p = malloc(len);
	int fd = mkstemp(path);

	CU_ASSERT_FATAL(fd >= 0 && p);
	unlink(path);
	fill(p, len, seed);
	CU_ASSERT_FATAL(pwrite(fd, p, len, 0) == (ssize_t)len);
	free(p);
	return fd;
}

struct order_setup {
	struct rdmaxfer_agent *t, *w;	/* the ring's target; the writer's */
	struct rdmaxfer_ring *ring;
	struct rdmaxfer_ring_writer *wr;
	struct rdmaxfer_file *file;
	struct held h;
	int fd;
	uint8_t grain[256];
};

/* Target t with a 4-slot ring holding what arrives; writer agent w with
 * a writer on it (2 grains put) and a file engine bound to w (a file
 * range written to srv). */
static void order_open(struct order_setup *o)
{
	struct rdmaxfer_ring_info info;
	struct rdmaxfer_peer *cp, *sp;
	struct rdmaxfer_file_desc fd;
	struct rdmaxfer_desc d;
	struct rdmaxfer_iov iov = { o->grain, sizeof(o->grain) };
	int i;

	memset(o, 0, sizeof(*o));
	pthread_mutex_init(&o->h.lock, NULL);
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_THREAD, 1, &o->t), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen(o->t, addr, 0), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_create(o->t, 4, sizeof(o->grain),
						   0, &o->ring), 0);
	o->h.ring = o->ring;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_set_cb(o->ring, held_cb, &o->h), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_get_info(o->ring, &info), 0);
	CU_ASSERT_EQUAL_FATAL(connect_srv(NULL, &o->w, &cp, &sp), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(o->w, &info, 10000, &o->wr),
			      0);
	for (i = 0; i < 2; i++) {
		fill(o->grain, sizeof(o->grain), i);
		CU_ASSERT_EQUAL(rdmaxfer_ring_put(o->wr, i, &iov, 1, 0,
						  WAIT_MS), 0);
	}
	CU_ASSERT_EQUAL(rdmaxfer_ring_flush(o->wr, WAIT_MS), 0);
	CU_ASSERT(wait_held(&o->h, 2));
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_create(NULL, &o->file), 0);
	o->fd = tmp_file(64 * 1024, 7);
	fd = (struct rdmaxfer_file_desc){ o->fd, 0, 64 * 1024 };
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, 0, 64 * 1024, &d), 0);
	CU_ASSERT_EQUAL(rdmaxfer_file_to_peer(o->file, cp, &fd, &d, WAIT_MS),
			0);
	CU_ASSERT_EQUAL(first_bad(srv_buf, 64 * 1024, 7), 64 * 1024);
	/* srv's end: cp goes with w, this one with the case */
	rdmaxfer_peer_destroy(sp);
}

/* Objects first, then their agents: the order that always worked. */
static void t_order_objects_first(void)
{
	struct order_setup o;

	order_open(&o);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(o.wr), 0);
	rdmaxfer_file_destroy(o.file);
	CU_ASSERT_EQUAL(rdmaxfer_ring_destroy(o.ring), 0);
	rdmaxfer_agent_destroy(o.w);
	rdmaxfer_agent_destroy(o.t);
	close(o.fd);
}

/*
 * Agents first.  The target's agent goes with the ring alive and two
 * grains held: the ring's calls that need the agent return -ENODEV, the
 * grains stay readable and releasable, rdmaxfer_ring_destroy() frees the
 * rest and returns -ENODEV.  The writer's agent goes with the writer and
 * the file engine alive: put and flush return -ENODEV, detach frees the
 * writer and returns -ENODEV; the engine still reads the file locally,
 * binds to a new agent on its next remote transfer, and is destroyed
 * after that agent too.
 */
static void t_order_agents_first(void)
{
	struct rdmaxfer_iov iov;
	struct rdmaxfer_ring_info info;
	struct rdmaxfer_grain g;
	struct rdmaxfer_agent *w2;
	struct rdmaxfer_peer *cp, *sp;
	struct rdmaxfer_file_desc fd;
	struct rdmaxfer_desc d;
	struct order_setup o;
	uint8_t *buf;

	order_open(&o);
	rdmaxfer_agent_destroy(o.t);
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait(o.ring, 0, &g), -ENODEV);
	CU_ASSERT_EQUAL(rdmaxfer_ring_get_info(o.ring, &info), -ENODEV);
	CU_ASSERT_EQUAL(rdmaxfer_ring_set_cb(o.ring, NULL, NULL), -ENODEV);
	CU_ASSERT_EQUAL(rdmaxfer_ring_release(o.ring, 0), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_release(o.ring, 1), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_destroy(o.ring), -ENODEV);

	rdmaxfer_agent_destroy(o.w);
	iov.addr = o.grain;
	iov.len = sizeof(o.grain);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(o.wr, 2, &iov, 1, 0, 0), -ENODEV);
	CU_ASSERT_EQUAL(rdmaxfer_ring_flush(o.wr, 0), -ENODEV);
	CU_ASSERT_PTR_NULL(rdmaxfer_ring_writer_peer(o.wr));
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(o.wr), -ENODEV);

	buf = malloc(64 * 1024);
	CU_ASSERT_FATAL(buf != NULL);
	fd = (struct rdmaxfer_file_desc){ o.fd, 0, 64 * 1024 };
	CU_ASSERT_EQUAL(rdmaxfer_file_read(o.file, &fd, buf), 0);
	CU_ASSERT_EQUAL(first_bad(buf, 64 * 1024, 7), 64 * 1024);
	free(buf);
	memset(srv_buf, 0, 64 * 1024);
	CU_ASSERT_EQUAL_FATAL(connect_srv(NULL, &w2, &cp, &sp), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, 0, 64 * 1024, &d), 0);
	CU_ASSERT_EQUAL(rdmaxfer_file_to_peer(o.file, cp, &fd, &d, WAIT_MS),
			0);
	CU_ASSERT_EQUAL(first_bad(srv_buf, 64 * 1024, 7), 64 * 1024);
	rdmaxfer_agent_destroy(w2);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_file_destroy(o.file);
	close(o.fd);
	check_srv_alive();
}

/* ------------------------------------------ blocking calls in a callback */

#define CB_SLOTS	4

struct cb_case {
	struct rdmaxfer_agent *a;	/* progress thread; the callback's */
	struct rdmaxfer_peer *cp;	/* a -> srv */
	struct rdmaxfer_ring_writer *wr;	/* a -> the ring's target */
	pthread_t main;
	_Atomic int done;
	bool on_thread;
	int wait_ret, flush_ret, put_ret, ring_flush_ret, after_ret;
	uint8_t buf[4096];
};

/* Each blocking call with no timeout, from the progress thread. */
static void blocking_cb(void *user, const struct rdmaxfer_notif *n)
{
	struct cb_case *c = user;
	struct rdmaxfer_iov iov = { c->buf, sizeof(c->buf) };
	struct rdmaxfer_req *req;
	struct rdmaxfer_desc d;
	uint64_t i;

	(void)n;
	if (c->done)
		return;
	c->on_thread = !pthread_equal(pthread_self(), c->main);
	c->wait_ret = rdmaxfer_mem_desc(srv_mem, 0, sizeof(c->buf), &d);
	if (!c->wait_ret)
		c->wait_ret = rdmaxfer_xfer_prepare(c->cp, RDMAXFER_OP_WRITE,
						    &iov, 1, &d, 1, NULL, &req);
	if (!c->wait_ret) {
		c->wait_ret = rdmaxfer_req_post(req);
		if (!c->wait_ret)
			c->wait_ret = rdmaxfer_req_wait(req, -1);
		rdmaxfer_req_free(req);
	}
	c->flush_ret = rdmaxfer_notif_send(c->cp, 1, NULL, 0);
	if (!c->flush_ret)
		c->flush_ret = rdmaxfer_peer_flush(c->cp, -1);
	/* twice round the ring: credit waits and slot waits */
	iov.len = 256;
	c->put_ret = 0;
	for (i = 0; i < 2 * CB_SLOTS && !c->put_ret; i++) {
		c->buf[0] = (uint8_t)i;
		c->put_ret = rdmaxfer_ring_put(c->wr, i, &iov, 1, 0, -1);
	}
	c->ring_flush_ret = rdmaxfer_ring_flush(c->wr, -1);
	/* refused: the agent stays, and still transfers */
	rdmaxfer_agent_destroy(c->a);
	iov.len = sizeof(c->buf);
	c->after_ret = rdmaxfer_xfer_prepare(c->cp, RDMAXFER_OP_WRITE, &iov, 1,
					     &d, 1, NULL, &req);
	if (!c->after_ret) {
		c->after_ret = rdmaxfer_req_post(req);
		if (!c->after_ret)
			c->after_ret = rdmaxfer_req_wait(req, -1);
		rdmaxfer_req_free(req);
	}
	c->done = 1;
}

/*
 * The callback of a progress-thread agent, woken by a notification from
 * srv, makes each blocking call with no timeout: a WRITE waited for, a
 * peer flush, 2 * CB_SLOTS grains put into a ring of CB_SLOTS slots
 * (its target releases each grain at once, so puts wait for credit and
 * slots), a ring flush.  Waiting for the progress thread's next round
 * would wait for ever; the calls progress in that thread instead.  Main
 * only sleeps meanwhile, so no other thread progresses the agent.  If
 * the callback never ends, its thread is stuck for good and the agent
 * cannot be destroyed: the program exits at once.
 */
static void t_callback_blocking(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_ring_info info;
	struct rdmaxfer_agent *t;
	struct rdmaxfer_ring *ring;
	struct rdmaxfer_peer *sp;
	struct cb_case c;
	struct held h;
	double t0;

	memset(&c, 0, sizeof(c));
	memset(&h, 0, sizeof(h));
	pthread_mutex_init(&h.lock, NULL);
	h.release = true;
	c.main = pthread_self();
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_THREAD, 1, &t), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen(t, addr, 0), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_create(t, CB_SLOTS, 256, 0, &ring),
			      0);
	h.ring = ring;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_set_cb(ring, held_cb, &h), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_get_info(ring, &info), 0);
	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_THREAD;
	CU_ASSERT_EQUAL_FATAL(connect_srv(&attr, &c.a, &c.cp, &sp), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(c.a, &info, 10000, &c.wr),
			      0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_set_notif_cb(c.a, blocking_cb, &c), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_notif_send(sp, 7, NULL, 0), 0);
	t0 = now_s();
	while (!c.done && now_s() - t0 < 60)
		usleep(10000);
	if (!c.done) {
		printf("not ok - a blocking call in the callback never "
		       "returned (after %.0f s): the progress thread is "
		       "stuck, the agent cannot be destroyed\n",
		       now_s() - t0);
		fflush(stdout);
		_exit(1);
	}
	rc_diag("callback: wait %d flush %d put %d ring flush %d after a "
		"refused destroy %d, %.2f s, %llu grains at the target",
		c.wait_ret, c.flush_ret, c.put_ret, c.ring_flush_ret,
		c.after_ret, now_s() - t0,
		(unsigned long long)held_count(&h));
	CU_ASSERT(c.on_thread);
	CU_ASSERT_EQUAL(c.wait_ret, 0);
	CU_ASSERT_EQUAL(c.flush_ret, 0);
	CU_ASSERT_EQUAL(c.put_ret, 0);
	CU_ASSERT_EQUAL(c.ring_flush_ret, 0);
	CU_ASSERT_EQUAL(c.after_ret, 0);
	CU_ASSERT(wait_held(&h, 2 * CB_SLOTS));
	CU_ASSERT_EQUAL(rdmaxfer_set_notif_cb(c.a, NULL, NULL), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(c.wr), 0);
	rdmaxfer_agent_destroy(c.a);
	rdmaxfer_peer_destroy(sp);
	CU_ASSERT_EQUAL(rdmaxfer_ring_destroy(ring), 0);
	rdmaxfer_agent_destroy(t);
}

/* ------------------------------------------------------ read-only exports */

/* The pagemap entry of the page holding p (PFN visible to root only). */
static uint64_t pagemap(const void *p)
{
	uint64_t v = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd >= 0) {
		if (pread(fd, &v, sizeof(v),
			  (off_t)((uintptr_t)p / psz) * 8) != sizeof(v))
			v = 0;
		close(fd);
	}
	return v;
}

#define PM_FILE		(1ULL << 61)	/* file page or shared anonymous */

/* READ all of region [p, p + len) exported by srv with REMOTE_READ only
 * into cli_buf through peer cp; true if it came out as pattern seed. */
static bool read_export(struct rdmaxfer_peer *cp, void *p, size_t len,
			uint32_t seed, uint8_t *cli_buf)
{
	struct rdmaxfer_iov iov = { cli_buf, len };
	struct rdmaxfer_mem *m;
	struct rdmaxfer_desc d;
	int ret;

	ret = rdmaxfer_mem_register_access(srv, p, len, RDMAXFER_MEM_HOST,
					   RDMAXFER_ACCESS_REMOTE_READ, &m);
	if (ret) {
		rc_diag("READ-only export: %s", rdmaxfer_strerror(ret));
		return false;
	}
	memset(cli_buf, 0, len);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m, 0, 0, &d), 0);
	ret = xfer_sync(cp, RDMAXFER_OP_READ, &iov, &d, 1, NULL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	return !ret && first_bad(cli_buf, len, seed) == len;
}

/*
 * What a plain registration of [p, p + len) with access acc does on this
 * kernel: 0 or -errno; *file gets whether page 3 is still a file page
 * afterwards.  The baseline the library is held to: Linux itself refuses
 * some read-only memory and breaks some copy-on-write for any pin (6.1's
 * ib_umem_get() forces a write for a read-only MR; 7.3 unshares a
 * long-term pin of a private file mapping's page, whatever the access).
 */
static int plain_reg(void *p, size_t len, int acc, bool *file)
{
	static struct ibv_pd *pd;
	struct ibv_mr *mr;
	int ret = 0;

	if (!pd)
		pd = ibv_alloc_pd(hook_ctx);
	CU_ASSERT_FATAL(pd != NULL);
	mr = ibv_reg_mr(pd, p, len, acc);
	if (!mr)
		ret = errno ? -errno : -ENOMEM;
	if (file)
		*file = (pagemap((uint8_t *)p + 3 * psz) & PM_FILE) != 0;
	if (mr)
		ibv_dereg_mr(mr);
	return ret;
}

/* A WRITE of [p, p + len) to srv's export; true if it came out as seed. */
static bool write_from(struct rdmaxfer_peer *cp, void *p, size_t len,
		       uint32_t seed)
{
	struct rdmaxfer_iov iov = { p, len };
	struct rdmaxfer_desc d;

	memset(srv_buf, 0, len);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, 0, len, &d), 0);
	return !xfer_sync(cp, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL) &&
	       first_bad(srv_buf, len, seed) == len;
}

/*
 * Memory the process may only read, exported for READ and used as a
 * WRITE's source: PROT_READ anonymous memory, and a read-only MAP_SHARED
 * mapping of a file opened O_RDONLY (model weights).  Both must work
 * wherever a plain registration with exactly that access does (local
 * write used to be added to every registration: both failed with
 * -EFAULT).  A writable MAP_PRIVATE mapping of the file exported for
 * READ keeps its pages the file's wherever a plain read-only pin does
 * (pagemap).  A local-only handle of read-only memory, and a READ into a
 * buffer that was first a WRITE's source (not handed that read-only
 * registration).
 */
static void t_read_only(void)
{
	size_t len = 16 * psz;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *cp, *sp;
	struct rdmaxfer_mem *m;
	struct rdmaxfer_desc d;
	struct rdmaxfer_iov iov;
	uint8_t *anon, *shr, *prv, *prv2, *cli;
	bool plain_file, lib_file;
	int fd, rfd, plain;
	char path[64];

	CU_ASSERT_EQUAL_FATAL(connect_srv(NULL, &a, &cp, &sp), 0);
	cli = aligned_alloc(4096, len);
	CU_ASSERT_FATAL(cli != NULL);

	anon = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(anon != MAP_FAILED);
	fill(anon, len, 11);
	CU_ASSERT_EQUAL_FATAL(mprotect(anon, len, PROT_READ), 0);
	CU_ASSERT_EQUAL(plain_reg(anon, len, IBV_ACCESS_REMOTE_READ, NULL), 0);
	CU_ASSERT(read_export(cp, anon, len, 11, cli));
	CU_ASSERT(write_from(cp, anon, len, 11));
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_access(a, anon, len,
			RDMAXFER_MEM_HOST, 0, &m), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);

	fd = tmp_file(len, 12);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rfd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(rfd >= 0);
	shr = mmap(NULL, len, PROT_READ, MAP_SHARED, rfd, 0);
	CU_ASSERT_FATAL(shr != MAP_FAILED);
	plain = plain_reg(shr, len, IBV_ACCESS_REMOTE_READ, NULL);
	rc_diag("read-only shared file mapping: a plain read-only MR %s",
		plain ? strerror(-plain) : "works");
	if (!plain) {
		CU_ASSERT(read_export(cp, shr, len, 12, cli));
		CU_ASSERT(write_from(cp, shr, len, 12));
	}

	prv = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	prv2 = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CU_ASSERT_FATAL(prv != MAP_FAILED && prv2 != MAP_FAILED);
	CU_ASSERT_EQUAL(first_bad(prv, len, 12), len);	/* faulted in */
	CU_ASSERT_EQUAL(first_bad(prv2, len, 12), len);
	CU_ASSERT_EQUAL(plain_reg(prv, len, IBV_ACCESS_REMOTE_READ,
				  &plain_file), 0);
	CU_ASSERT(read_export(cp, prv2, len, 12, cli));
	lib_file = (pagemap(prv2 + 3 * psz) & PM_FILE) != 0;
	rc_diag("private file mapping after a read-only pin: plain MR %s, "
		"the library's export %s", plain_file ? "file page" :
		"copied (the kernel broke COW)", lib_file ? "file page" :
		"copied");
	if (plain_file)
		CU_ASSERT(lib_file);

	/* a WRITE's source, then a READ's target: the READ must not be
	 * handed the WRITE's registration without local write */
	fill(cli, len, 13);
	CU_ASSERT(write_from(cp, cli, len, 13));
	fill(srv_buf, len, 14);
	iov.addr = cli;
	iov.len = len;
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, 0, len, &d), 0);
	CU_ASSERT_EQUAL(xfer_sync(cp, RDMAXFER_OP_READ, &iov, &d, 1, NULL), 0);
	CU_ASSERT_EQUAL(first_bad(cli, len, 14), len);

	munmap(prv2, len);
	munmap(prv, len);
	munmap(shr, len);
	munmap(anon, len);
	close(rfd);
	close(fd);
	free(cli);
	rdmaxfer_agent_destroy(a);
	rdmaxfer_peer_destroy(sp);
}

/* ----------------------------------------------- ODP under cached rkeys */

/*
 * An ODP export (remote atomics: the operation the 7.3 self-test lets
 * ODP serve) on an agent with RDMAXFER_AGENT_CACHE_RKEYS, deregistered
 * and unmapped; new memory mapped at its address.  Nothing calls into
 * that agent's ODP cache in between.  A peer's fetch-and-add through the
 * old rkey must fail and leave the new memory alone: an ODP MR follows
 * the address, so one kept registered reaches the new mapping.
 */
static void t_odp_cached_rkey(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent *o, *a;
	struct rdmaxfer_peer *cp, *sp;
	struct rdmaxfer_req *req;
	struct rdmaxfer_mem *m;
	struct rdmaxfer_desc d;
	uint64_t *result = aligned_alloc(8, 8);
	volatile uint64_t *word;
	uint16_t port;
	uint8_t *p, *q;
	int ret;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_THREAD;
	attr.flags = RDMAXFER_AGENT_CACHE_RKEYS;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, &o), 0);
	p = mmap(NULL, psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(p != MAP_FAILED && result);
	memset(p, 0, psz);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_register_access(o, p, psz,
			      RDMAXFER_MEM_ODP, RDMAXFER_ACCESS_REMOTE_ATOMIC,
			      &m), 0);
	if (rdmaxfer_mem_is_odp(m) != 1) {
		rc_skip("the agent pinned the ODP region (no explicit ODP for "
			"remote atomics on this device)");
		rdmaxfer_mem_deregister(m);
		goto out;
	}
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m, 0, 0, &d), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	q = mmap(p, psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CU_ASSERT_FATAL(q == p);
	word = (volatile uint64_t *)q;
	*word = 1000;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen(o, addr, 0), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen_port(o, &port), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(NULL, &a), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_connect(a, addr, port, 10000, &cp), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_accept(o, 10000, &sp), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_atomic_prepare(cp, RDMAXFER_OP_FADD,
			      &d, 0, 5, 0, result, &req), 0);
	ret = rdmaxfer_req_post(req);
	if (!ret)
		ret = rdmaxfer_req_wait(req, WAIT_MS);
	rc_diag("fetch-and-add through the old rkey: %d (%s), the new "
		"mapping's word %llu", ret, rdmaxfer_req_strerror(req),
		(unsigned long long)*word);
	CU_ASSERT(ret == -EACCES || ret == -EREMOTEIO);
	CU_ASSERT_EQUAL(*word, 1000);
	rdmaxfer_req_free(req);
	rdmaxfer_agent_destroy(a);
	rdmaxfer_peer_destroy(sp);
out:
	rdmaxfer_agent_destroy(o);
	munmap(p, psz);
	free(result);
}

/* --------------------------------------- a stale completion, QPN reused */

/* One WRITE of 64 bytes of v at srv offset off through p; the QP it
 * went out on in *qpn. */
static int write64(struct rdmaxfer_peer *p, uint8_t *buf, uint8_t v,
		   size_t off, uint32_t *qpn)
{
	struct rdmaxfer_iov iov = { buf, 64 };
	struct rdmaxfer_desc d;
	int ret;

	memset(buf, v, 64);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, off, 64, &d), 0);
	seen_qpn = 0;
	ret = xfer_sync(p, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL);
	if (qpn)
		*qpn = seen_qpn;
	return ret;
}

/*
 * A caller-mode client's peer P1 posts a WRITE whose completion the hook
 * keeps; srv drops its end, so P1 fails and, its completion never seen,
 * the request is aborted at the flush deadline, freed, and P1 destroyed.
 * A new peer P2 connects; the kept completion is then delivered as one of
 * P2's QP.  Each peer's first QP had generation 1, so it matched P2's QP
 * and was taken for a completion of P2's, through a slot of the freed
 * request.  P2's transfers must go on as if it never came.
 */
static void t_stale_completion(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p1, *p2, *sp;
	struct rdmaxfer_req *req;
	struct rdmaxfer_iov iov;
	struct rdmaxfer_desc d;
	uint8_t *buf = aligned_alloc(4096, 4096);
	uint32_t qpn1 = 0, qpn2 = 0;
	double t0;
	int ret;

	CU_ASSERT_FATAL(buf != NULL);
	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_CALLER;
	CU_ASSERT_EQUAL_FATAL(connect_srv(&attr, &a, &p1, &sp), 0);
	CU_ASSERT_EQUAL(write64(p1, buf, 1, 0, &qpn1), 0);
	CU_ASSERT_FATAL(qpn1 != 0);
	stashed = captured = injected = 0;
	cap_qpn = qpn1;

	iov.addr = buf;
	iov.len = 64;
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(srv_mem, 64, 64, &d), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p1, RDMAXFER_OP_WRITE,
			      &iov, 1, &d, 1, NULL, &req), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post(req), 0);
	t0 = now_s();
	while (!stashed && now_s() - t0 < 10)
		rdmaxfer_progress(a);
	CU_ASSERT_FATAL(stashed);
	rdmaxfer_peer_destroy(sp);
	ret = rdmaxfer_req_wait(req, WAIT_MS);
	rc_diag("request whose completion was kept: %d (%s) after %.1f s",
		ret, rdmaxfer_strerror(ret), now_s() - t0);
	CU_ASSERT(ret != 0 && ret != -ETIMEDOUT);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_destroy(p1), 0);
	cap_qpn = 0;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_connect(a, addr, srv_port, 10000, &p2),
			      0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_accept(srv, 10000, &sp), 0);
	CU_ASSERT_EQUAL(write64(p2, buf, 2, 128, &qpn2), 0);
	rc_diag("P1's QP %u, P2's QP %u; the kept completion (wr_id %#llx) "
		"delivered as P2's", (unsigned int)qpn1, (unsigned int)qpn2,
		(unsigned long long)stash.wr_id);
	inj_qpn = qpn2;
	inject = 1;
	/* the next poll of the client's CQ hands it out first */
	CU_ASSERT_EQUAL(write64(p2, buf, 3, 192, NULL), 0);
	CU_ASSERT_EQUAL(injected, 1);
	CU_ASSERT(srv_buf[192] == 3 && srv_buf[255] == 3);
	CU_ASSERT_EQUAL(write64(p2, buf, 4, 256, NULL), 0);
	CU_ASSERT(srv_buf[256] == 4);
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(p2), RDMAXFER_PEER_CONNECTED);
	rdmaxfer_agent_destroy(a);
	rdmaxfer_peer_destroy(sp);
	free(buf);
}

static const struct rc_test_case cases[] = {
	{ "destroy_inflight", t_destroy_inflight },
	{ "order_objects_first", t_order_objects_first },
	{ "order_agents_first", t_order_agents_first },
	{ "callback_blocking", t_callback_blocking },
	{ "read_only_exports", t_read_only },
	{ "odp_cached_rkey", t_odp_cached_rkey },
	{ "stale_completion", t_stale_completion },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	/* freed memory overwritten: a use-after-free reads garbage (glibc;
	 * the suite also turns the tcache off, whose frees skip this) */
	mallopt(M_PERTURB, 0xa5);
	addr = rxe_addr_or_skip();
	rc_add_suite("rdmaxfer_api", suite_init, suite_cleanup, cases);
	return rc_test_main(argc, argv);
}
