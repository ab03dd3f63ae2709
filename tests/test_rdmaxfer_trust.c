// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_trust.c - what an agent takes a peer's word for, between
 * two agents over rxe (VM suite "hostile"):
 *
 *  - a transfer over descriptors of 2^62 bytes, or of 2^32 pieces, or
 *    whose lengths add up past 64 bits, is refused before anything is
 *    allocated (-ERANGE, -E2BIG, -EOVERFLOW); once its 32-bit count of
 *    work requests wrapped, the request was allocated for none and filled
 *    past its end;
 *  - two rings and the application's own notification callback on one
 *    agent each get their own notifications, and a plain peer's
 *    immediate is not a grain (a ring's callback once replaced the
 *    application's, and a ring took every immediate of the agent);
 *  - a ring's callback on a caller-driven agent runs from the
 *    application's progress calls;
 *  - an overrun ring's gap of 2^30 grains costs one pass over its slots
 *    (its credit word once walked it index by index);
 *  - a reconnect that reaches another agent at the same address (a
 *    restarted target) fails with -ESTALE, the peer kept in its old
 *    identity, nothing left at the new agent.
 *
 * Skips (77) without $RXE_ADDR or a device.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WAIT_MS		20000

#include "rdmaxfer_test_util.h"

static const char *addr;

static void server_attr(struct rdmaxfer_agent_attr *a)
{
	rdmaxfer_agent_attr_init(a);
	a->progress = RDMAXFER_PROGRESS_THREAD;
}

/* A transfer of 2^62 bytes, or of 2^32 pieces, is refused before
 * anything is allocated; once it was allocated for no work request and
 * filled past its end. */
static void test_prepare_huge(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent *srv, *cli;
	struct rdmaxfer_peer *cp, *sp;
	struct rdmaxfer_req *req = NULL;
	struct rdmaxfer_iov iov[128];
	struct rdmaxfer_desc d[128];
	static uint8_t buf[4096];
	int i, ret;

	server_attr(&attr);
	CU_ASSERT_EQUAL_FATAL(new_agent_pair(&attr, addr, &srv, &cli, &cp,
					     &sp), 0);
	for (i = 0; i < 128; i++) {
		iov[i].addr = buf;
		d[i].addr = 0x10000 + ((uint64_t)(i % 64) << 57);
		d[i].rkey = 1;
		d[i].kind = RDMAXFER_MEM_HOST;
	}
	iov[0].len = d[0].len = 1ULL << 62;
	ret = rdmaxfer_xfer_prepare(cp, RDMAXFER_OP_WRITE, iov, 1, d, 1, NULL,
				    &req);
	rc_diag("2^62 bytes: %s", rdmaxfer_strerror(ret));
	CU_ASSERT_EQUAL(ret, -ERANGE);
	for (i = 0; i < 128; i++)
		iov[i].len = d[i].len = RDMAXFER_DESC_MAX_LEN;
	ret = rdmaxfer_xfer_prepare(cp, RDMAXFER_OP_READ, iov, 32, d, 32, NULL,
				    &req);
	rc_diag("32 x 2^57 bytes (2^32 pieces): %s", rdmaxfer_strerror(ret));
	CU_ASSERT_EQUAL(ret, -E2BIG);
	ret = rdmaxfer_xfer_prepare(cp, RDMAXFER_OP_READ, iov, 128, d, 128,
				    NULL, &req);
	rc_diag("128 x 2^57 bytes (2^64 in all): %s", rdmaxfer_strerror(ret));
	CU_ASSERT_EQUAL(ret, -EOVERFLOW);
	/* the peer lives: a small one still goes */
	iov[0].len = d[0].len = 64;
	CU_ASSERT_EQUAL(rdmaxfer_xfer_prepare(cp, RDMAXFER_OP_WRITE, iov, 1, d,
					      1, NULL, &req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	rdmaxfer_agent_destroy(cli);
	rdmaxfer_agent_destroy(srv);
}

struct iso {
	pthread_mutex_t lock;
	uint64_t grains, grain_bad, app, app_bad, samples;
	struct rdmaxfer_ring *ring;
};

static void iso_grain(void *user, const struct rdmaxfer_grain *g)
{
	struct iso *s = user;

	pthread_mutex_lock(&s->lock);
	/* data NULL: an overrun record, which a ring with credits never
	 * gives (grains missing, or an index from elsewhere) */
	if (g->data && g->index == s->grains &&
	    ((uint8_t *)g->data)[0] == 0xa0 + g->index)
		s->grains++;
	else
		s->grain_bad++;
	pthread_mutex_unlock(&s->lock);
	if (g->data)
		rdmaxfer_ring_release(s->ring, g->index);
}

static void iso_app(void *user, const struct rdmaxfer_notif *n)
{
	struct iso *s = user;

	pthread_mutex_lock(&s->lock);
	if (n->value >= 9000 && n->value < 9100)
		s->app++;
	else
		s->app_bad++;
	pthread_mutex_unlock(&s->lock);
}

static uint64_t iso_get(struct iso *s, const uint64_t *v, uint64_t want)
{
	double t0 = now_s();
	uint64_t got;

	do {
		pthread_mutex_lock(&s->lock);
		got = *v;
		pthread_mutex_unlock(&s->lock);
		if (got >= want)
			break;
		usleep(10000);
	} while (now_s() - t0 < 20);
	return got;
}

/*
 * Two rings and the application's own callback on one agent: each gets
 * its own notifications.  A ring's callback once replaced the agent's
 * (the application's went silent), and a ring took every immediate of
 * the agent, whichever peer sent it.
 */
static void test_ring_isolation(void)
{
	enum { G1 = 20, G2 = 20, APP = 10 };
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_ring_info i1, i2;
	struct rdmaxfer_ring_writer *w1, *w2;
	struct rdmaxfer_agent *tgt, *ini;
	struct rdmaxfer_ring *r1, *r2;
	struct rdmaxfer_peer *p;
	struct rdmaxfer_mem *mem;
	struct rdmaxfer_desc d;
	struct rdmaxfer_xfer_notif xn;
	static uint8_t g[256], region[4096];
	struct rdmaxfer_iov iov = { g, sizeof(g) };
	struct rdmaxfer_grain gr;
	struct iso s1 = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct iso app = { .lock = PTHREAD_MUTEX_INITIALIZER };
	uint16_t port;
	unsigned int k, in_order = 0;

	server_attr(&attr);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, &tgt), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen(tgt, addr, 0), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen_port(tgt, &port), 0);
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &ini), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_register(tgt, region,
						    sizeof(region),
						    RDMAXFER_MEM_HOST, &mem),
			      0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(mem, 0, sizeof(g), &d), 0);
	/* the application's callback first, then the rings */
	CU_ASSERT_EQUAL(rdmaxfer_set_notif_cb(tgt, iso_app, &app), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_create(tgt, 8, sizeof(g), 0, &r1),
			      0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_create(tgt, 8, sizeof(g), 0, &r2),
			      0);
	s1.ring = r1;
	CU_ASSERT_EQUAL(rdmaxfer_ring_set_cb(r1, iso_grain, &s1), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_get_info(r1, &i1), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_get_info(r2, &i2), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(ini, &i1, WAIT_MS, &w1), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(ini, &i2, WAIT_MS, &w2), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_connect(ini, addr, port, WAIT_MS, &p),
			      0);
	for (k = 0; k < G1 || k < APP; k++) {
		if (k < G1) {
			memset(g, 0xa0 + k, sizeof(g));
			CU_ASSERT_EQUAL(rdmaxfer_ring_put(w1, k, &iov, 1, 0,
							  WAIT_MS), 0);
			CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w1, WAIT_MS), 0);
			memset(g, 0xb0 + k, sizeof(g));
			CU_ASSERT_EQUAL(rdmaxfer_ring_put(w2, k, &iov, 1, 0,
							  WAIT_MS), 0);
			CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w2, WAIT_MS), 0);
		}
		if (k < APP) {
			/* a message, and an immediate of a plain transfer
			 * (the next index of ring 2, which it must not
			 * take) */
			CU_ASSERT_EQUAL(rdmaxfer_notif_send(p, 9000 + k, "m",
							    2), 0);
			xn.value = 9050 + k;
			CU_ASSERT_EQUAL(xfer_sync(p, RDMAXFER_OP_WRITE, &iov, &d,
						  1, &xn), 0);
		}
		/* ring 2 by waiting, in step */
		if (k < G2 && !rdmaxfer_ring_wait(r2, WAIT_MS, &gr)) {
			in_order += gr.index == k &&
				    ((uint8_t *)gr.data)[0] == 0xb0 + k;
			rdmaxfer_ring_release(r2, gr.index);
		}
	}
	CU_ASSERT_EQUAL(iso_get(&s1, &s1.grains, G1), G1);
	CU_ASSERT_EQUAL(iso_get(&app, &app.app, 2 * APP), 2 * APP);
	/* nothing more for ring 2 */
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait(r2, 200, &gr), -ETIMEDOUT);
	rc_diag("ring 1 (callback) %llu grains, %llu wrong; ring 2 (wait) "
		"%u in order; application %llu notifications, %llu not its own",
		(unsigned long long)s1.grains,
		(unsigned long long)s1.grain_bad, in_order,
		(unsigned long long)app.app, (unsigned long long)app.app_bad);
	CU_ASSERT_EQUAL(in_order, G2);
	CU_ASSERT_EQUAL(s1.grain_bad, 0);
	CU_ASSERT_EQUAL(app.app_bad, 0);
	/* ring 1's callback taken away: the application's stays */
	CU_ASSERT_EQUAL(rdmaxfer_ring_set_cb(r1, NULL, NULL), 0);
	CU_ASSERT_EQUAL(rdmaxfer_notif_send(p, 9099, NULL, 0), 0);
	CU_ASSERT_EQUAL(iso_get(&app, &app.app, 2 * APP + 1), 2 * APP + 1);
	/* ring 1 by waiting now */
	memset(g, 0xa0 + G1, sizeof(g));
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w1, G1, &iov, 1, 0, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait(r1, WAIT_MS, &gr), 0);
	CU_ASSERT_EQUAL(gr.index, G1);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w1), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w2), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_destroy(p), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_destroy(r1), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_destroy(r2), 0);
	CU_ASSERT_EQUAL(rdmaxfer_set_notif_cb(tgt, NULL, NULL), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(mem), 0);
	rdmaxfer_agent_destroy(ini);
	rdmaxfer_agent_destroy(tgt);
}

struct progress {
	struct rdmaxfer_agent *agent;
	int stop;
};

static void *progress_thread(void *arg)
{
	struct progress *p = arg;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		rdmaxfer_progress(p->agent);
		usleep(1000);
	}
	return NULL;
}

/*
 * A ring's callback on a caller-driven agent runs from the application's
 * own progress calls, here rdmaxfer_get_notifs() with nothing of its own
 * to take: the ring's callback is not the agent's, so those calls must
 * deliver to it too.
 */
static void test_ring_cb_caller(void)
{
	enum { N = 5 };
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_agent *tgt, *ini;
	struct rdmaxfer_ring_info info;
	struct rdmaxfer_ring *ring;
	struct iso s = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct progress pr;
	static uint8_t g[256];
	struct rdmaxfer_iov iov = { g, sizeof(g) };
	pthread_t t;
	double t0;
	unsigned int k;

	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &tgt), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen(tgt, addr, 0), 0);
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &ini), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_create(tgt, 8, sizeof(g), 0, &ring),
			      0);
	s.ring = ring;
	CU_ASSERT_EQUAL(rdmaxfer_ring_set_cb(ring, iso_grain, &s), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_get_info(ring, &info), 0);
	/* the target answers the attach from a thread of the test's */
	pr.agent = tgt;
	pr.stop = 0;
	pthread_create(&t, NULL, progress_thread, &pr);
	CU_ASSERT_EQUAL(rdmaxfer_ring_attach(ini, &info, WAIT_MS, &w), 0);
	__atomic_store_n(&pr.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	for (k = 0; k < N; k++) {
		/* one buffer: each grain written before it is refilled */
		memset(g, 0xa0 + k, sizeof(g));
		CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, k, &iov, 1, 0, WAIT_MS), 0);
		CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
	}
	t0 = now_s();
	while (iso_get(&s, &s.grains, 0) < N && now_s() - t0 < 10) {
		CU_ASSERT(rdmaxfer_get_notifs(tgt, NULL, 0) >= 0);
		usleep(1000);
	}
	rc_diag("caller-driven target: %llu grains by callback, %llu wrong",
		(unsigned long long)s.grains, (unsigned long long)s.grain_bad);
	CU_ASSERT_EQUAL(s.grains, N);
	CU_ASSERT_EQUAL(s.grain_bad, 0);
	pr.stop = 0;
	pthread_create(&t, NULL, progress_thread, &pr);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	__atomic_store_n(&pr.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_destroy(ring), 0);
	rdmaxfer_agent_destroy(ini);
	rdmaxfer_agent_destroy(tgt);
}

/*
 * An overrun ring's writer skips 2^30 indices (a source that lost
 * frames; allowed there): the target reports the gap once and goes on,
 * in one pass over its slots.  Its credit word once walked the gap one
 * index at a time under the ring's lock, minutes for a forged jump.
 */
static void test_overrun_jump(void)
{
	const uint64_t jump = 1ULL << 30;
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_agent *tgt, *ini;
	struct rdmaxfer_ring_info info;
	struct rdmaxfer_ring *ring;
	struct rdmaxfer_grain g;
	static uint8_t buf[256];
	struct rdmaxfer_iov iov = { buf, sizeof(buf) };
	uint64_t lost = 0;
	double t0, took;
	int ret;

	server_attr(&attr);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, &tgt), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen(tgt, addr, 0), 0);
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &ini), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_create(tgt, 8, sizeof(buf),
						   RDMAXFER_RING_OVERRUN,
						   &ring), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_get_info(ring, &info), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(ini, &info, WAIT_MS, &w),
			      0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 0, &iov, 1, 0, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait(ring, WAIT_MS, &g), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_release(ring, 0), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, jump, &iov, 1, 0, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
	t0 = now_s();
	ret = rdmaxfer_ring_wait(ring, WAIT_MS, &g);
	CU_ASSERT_EQUAL(ret, -EOVERFLOW);
	CU_ASSERT_EQUAL(g.index, 1);
	CU_ASSERT_EQUAL(g.lost, jump - 1);
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait(ring, WAIT_MS, &g), 0);
	CU_ASSERT_EQUAL(g.index, jump);
	CU_ASSERT_EQUAL(rdmaxfer_ring_release(ring, jump), 0);
	took = now_s() - t0;
	CU_ASSERT_EQUAL(rdmaxfer_ring_lost(ring, &lost), 0);
	rc_diag("a gap of 2^30 - 1 grains: reported and crossed in %.3f s, "
		"%llu lost", took, (unsigned long long)lost);
	CU_ASSERT_EQUAL(lost, jump - 1);
	CU_ASSERT(took < 2.0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_destroy(ring), 0);
	rdmaxfer_agent_destroy(ini);
	rdmaxfer_agent_destroy(tgt);
}

/*
 * A reconnect that reaches another agent on the same address (a
 * restarted target) fails with -ESTALE: the peer's prepared requests,
 * rkeys and exports belong to the old one.
 */
static void test_reconnect_estale(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent *a, *b, *cli;
	struct rdmaxfer_agent_info info;
	struct rdmaxfer_peer *p;
	uint64_t old_id;
	uint16_t port;
	double t0;
	int ret;

	server_attr(&attr);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, &a), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen(a, addr, 0), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen_port(a, &port), 0);
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 2, &cli), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_connect(cli, addr, port, WAIT_MS, &p),
			      0);
	old_id = rdmaxfer_peer_id(p);
	/* the target restarts on the same port */
	rdmaxfer_agent_destroy(a);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, &b), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen(b, addr, port), 0);
	t0 = now_s();
	while (rdmaxfer_peer_state(p) == RDMAXFER_PEER_CONNECTED &&
	       now_s() - t0 < 10) {
		rdmaxfer_progress(cli);
		usleep(10000);
	}
	ret = rdmaxfer_peer_reconnect(p, WAIT_MS);
	rc_diag("reconnect to the restarted target: %s, peer error %s",
		rdmaxfer_strerror(ret),
		rdmaxfer_strerror(rdmaxfer_peer_error(p)));
	CU_ASSERT_EQUAL(ret, -ESTALE);
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(p), RDMAXFER_PEER_ERROR);
	CU_ASSERT_EQUAL(rdmaxfer_peer_error(p), -ESTALE);
	CU_ASSERT_EQUAL(rdmaxfer_peer_id(p), old_id);
	/* again: the same answer, nothing left behind at the new target */
	CU_ASSERT_EQUAL(rdmaxfer_peer_reconnect(p, WAIT_MS), -ESTALE);
	CU_ASSERT_EQUAL(rdmaxfer_peer_destroy(p), 0);
	t0 = now_s();
	do {
		rdmaxfer_agent_query(b, &info);
		if (!info.npeers)
			break;
		usleep(100000);
	} while (now_s() - t0 < 10);
	CU_ASSERT_EQUAL(info.npeers, 0);
	/* a fresh connection to it is fine */
	CU_ASSERT_EQUAL(rdmaxfer_connect(cli, addr, port, WAIT_MS, &p), 0);
	CU_ASSERT_NOT_EQUAL(rdmaxfer_peer_id(p), old_id);
	CU_ASSERT_EQUAL(rdmaxfer_peer_destroy(p), 0);
	rdmaxfer_agent_destroy(cli);
	rdmaxfer_agent_destroy(b);
}

static const struct rc_test_case cases[] = {
	{ "prepare_huge", test_prepare_huge },
	{ "ring_isolation", test_ring_isolation },
	{ "ring_cb_caller", test_ring_cb_caller },
	{ "overrun_jump", test_overrun_jump },
	{ "reconnect_estale", test_reconnect_estale },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	addr = rxe_addr_or_skip();
	signal(SIGPIPE, SIG_IGN);
	rc_add_suite("trust", NULL, NULL, cases);
	return rc_test_main(argc, argv);
}
