// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_ring.c - the grain ring between agents over rxe (VM suite
 * "ring"): targets are progress-thread agents listening on $RXE_ADDR, the
 * initiator a caller-mode agent in the same process.  Every grain is
 * checked byte for byte (a pattern seeded by its index) at the target,
 * in order, over many laps; credits hold a writer back from a slow target
 * (-EAGAIN, -ETIMEDOUT, then blocking until released) with the unreleased
 * slot intact; completions by blocking wait, non-blocking poll and
 * callback, and a callback replaced while it runs; a grain over the port's max message size (split by the
 * library, immediate on the last piece); a doorbell batch; fan-out to two
 * targets; bad input; and a target killed mid-stream (an error within a
 * bound).  1.7: the continuous flavour (two channel planes, writes of
 * varying counts crossing the ring's end as two WRITEs per plane, every
 * sample checked at the target, credits counted in samples) and the
 * overrun mode (a consumer that takes nothing for a while: the writer
 * drops instead of overwriting, the target reports exactly the grains
 * dropped).  Skips (77) without $RXE_ADDR or a device.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <sys/wait.h>

#define WAIT_MS		20000

#include "rdmaxfer_test_util.h"
#include "rdmaxfer_ring_test.h"

static const char *addr;

struct target {
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_ring *ring;
	struct rdmaxfer_ring_info info;
};

static int target_open(uint32_t n, size_t slot, struct target *t)
{
	int ret;

	memset(t, 0, sizeof(*t));
	ret = new_agent(RDMAXFER_PROGRESS_THREAD, 1, &t->agent);
	if (!ret)
		ret = rdmaxfer_listen(t->agent, addr, 0);
	if (!ret)
		ret = rdmaxfer_ring_create(t->agent, n, slot, 0, &t->ring);
	if (!ret)
		ret = rdmaxfer_ring_get_info(t->ring, &t->info);
	if (ret)
		rc_diag("target: %s", rdmaxfer_strerror(ret));
	return ret;
}

static void target_close(struct target *t)
{
	if (t->ring)
		CU_ASSERT_EQUAL(rdmaxfer_ring_destroy(t->ring), 0);
	if (t->agent)
		rdmaxfer_agent_destroy(t->agent);
}

/* Wait up to WAIT_MS for a count that callbacks raise under lock to
 * reach want; its last value. */
static uint64_t wait_count(pthread_mutex_t *lock, const uint64_t *count,
			   uint64_t want)
{
	double t0 = now_s();
	uint64_t v;

	for (;;) {
		pthread_mutex_lock(lock);
		v = *count;
		pthread_mutex_unlock(lock);
		if (v == want || now_s() - t0 >= WAIT_MS / 1000.0)
			return v;
		usleep(1000);
	}
}

static bool grain_ok(const uint8_t *p, size_t len, uint64_t index)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pat(i, (uint32_t)index))
			return false;
	return true;
}

/* Wait for the next grain at t, check it is 'index' with len bytes of
 * its pattern, release it. */
static int take(struct target *t, uint64_t index, size_t len, int timeout)
{
	struct rdmaxfer_grain g;
	int ret;

	ret = rdmaxfer_ring_wait(t->ring, timeout, &g);
	if (ret)
		return ret;
	if (g.index != index || g.slot != index % t->info.n_slots ||
	    !grain_ok(g.data, len, index)) {
		rc_diag("grain %llu (slot %u): expected %llu",
			(unsigned long long)g.index, g.slot,
			(unsigned long long)index);
		return -EBADMSG;
	}
	return rdmaxfer_ring_release(t->ring, g.index);
}

static struct rdmaxfer_agent *initiator(void)
{
	struct rdmaxfer_agent *a = NULL;

	CU_ASSERT_EQUAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &a), 0);
	return a;
}

/* Put grains [from, to) of len bytes from src, blocking, each written
 * before src is refilled for the next. */
static void put_seq(struct rdmaxfer_ring_writer *w, uint64_t from,
		    uint64_t to, uint8_t *src, size_t len)
{
	struct rdmaxfer_iov iov = { src, len };
	uint64_t i;

	for (i = from; i < to; i++) {
		fill(src, len, (uint32_t)i);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_put(w, i, &iov, 1, 0,
							WAIT_MS), 0);
		CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
	}
}

/* Many laps of a 4-slot ring, each grain from two local buffers; the
 * writer never blocks: on -EAGAIN (no credit) the target takes one. */
static void test_order_wrap_nonblocking(void)
{
	const size_t slot = 64 * 1024, len = slot - 100;
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_iov iov[2];
	struct rdmaxfer_grain g;
	struct target t;
	uint8_t *src;
	uint64_t i, taken = 0, eagain = 0, spins = 0;
	int ret;

	CU_ASSERT_FATAL(target_open(4, slot, &t) == 0);
	a = initiator();
	src = malloc(len);
	CU_ASSERT_FATAL(a && src);
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait(t.ring, 0, &g), -EAGAIN);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &t.info, WAIT_MS, &w),
			      0);
	for (i = 0; i < 40; i++) {
		fill(src, len, (uint32_t)i);
		iov[0].addr = src;
		iov[0].len = 1000;
		iov[1].addr = src + 1000;
		iov[1].len = len - 1000;
		/* -EAGAIN: no credit, or the slot's previous write not yet
		 * completed here (the target may have it already) */
		while ((ret = rdmaxfer_ring_put(w, i, iov, 2, 0, 0)) ==
		       -EAGAIN) {
			eagain++;
			if (taken == i) {
				CU_ASSERT_FATAL(++spins < 200000);
				continue;
			}
			ret = take(&t, taken, len, WAIT_MS);
			CU_ASSERT_EQUAL_FATAL(ret, 0);
			taken++;
		}
		CU_ASSERT_EQUAL_FATAL(ret, 0);
		/* the source buffer is reused for the next grain */
		CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
	}
	while (taken < 40) {
		CU_ASSERT_EQUAL_FATAL(take(&t, taken, len, WAIT_MS), 0);
		taken++;
	}
	rc_diag("40 grains over 10 laps; %llu puts found no credit",
		(unsigned long long)eagain);
	CU_ASSERT(eagain >= 32);
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait(t.ring, 0, &g), -EAGAIN);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	rdmaxfer_agent_destroy(a);
	target_close(&t);
	free(src);
}

struct slow {
	struct target *t;
	size_t len;
	int n, ret;
};

static void *slow_consumer(void *p)
{
	struct slow *s = p;
	int i;

	usleep(300 * 1000);
	for (i = 0; i < s->n && !s->ret; i++)
		s->ret = take(s->t, (uint64_t)i, s->len, WAIT_MS);
	return NULL;
}

/* A target that does not release: the 5th grain of a 4-slot ring gets
 * -EAGAIN, then -ETIMEDOUT; a consumer that starts 300 ms late finds grain
 * 0 intact in slot 0 (nothing lapped it) and lets the blocked puts
 * through, every grain in order. */
static void test_slow_consumer_credits(void)
{
	const size_t slot = 4096;
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_iov iov;
	struct target t;
	struct slow s;
	pthread_t th;
	uint8_t src[4096];
	double t0, blocked;

	CU_ASSERT_FATAL(target_open(4, slot, &t) == 0);
	a = initiator();
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &t.info, WAIT_MS, &w),
			      0);
	put_seq(w, 0, 4, src, slot);
	iov.addr = src;
	iov.len = slot;
	fill(src, slot, 4);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 4, &iov, 1, 0, 0), -EAGAIN);
	t0 = now_s();
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 4, &iov, 1, 0, 300), -ETIMEDOUT);
	CU_ASSERT(now_s() - t0 < 10);
	s.t = &t;
	s.len = slot;
	s.n = 12;
	s.ret = 0;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, slow_consumer, &s), 0);
	t0 = now_s();
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 4, &iov, 1, 0, WAIT_MS), 0);
	blocked = now_s() - t0;
	CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
	put_seq(w, 5, 12, src, slot);
	pthread_join(th, NULL);
	rc_diag("put of grain 4 blocked %.3f s for the slow consumer",
		blocked);
	CU_ASSERT(blocked > 0.2);
	CU_ASSERT_EQUAL(s.ret, 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	rdmaxfer_agent_destroy(a);
	target_close(&t);
}

struct cb_state {
	struct rdmaxfer_ring *ring;
	size_t len;
	pthread_mutex_t lock;
	uint64_t seen, bad;
};

/* Called from the target's progress thread: check, release in place. */
static void on_grain(void *user, const struct rdmaxfer_grain *g)
{
	struct cb_state *s = user;

	pthread_mutex_lock(&s->lock);
	if (g->index != s->seen || !grain_ok(g->data, s->len, g->index) ||
	    rdmaxfer_ring_release(s->ring, g->index))
		s->bad++;
	s->seen++;
	pthread_mutex_unlock(&s->lock);
}

/* Completions by callback; blocking puts over 6 laps of a 2-slot ring. */
static void test_callback(void)
{
	const size_t slot = 8192;
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_grain g;
	struct cb_state s;
	struct target t;
	uint8_t src[8192];
	uint64_t seen = 0;

	CU_ASSERT_FATAL(target_open(2, slot, &t) == 0);
	memset(&s, 0, sizeof(s));
	s.ring = t.ring;
	s.len = slot;
	pthread_mutex_init(&s.lock, NULL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_set_samples_cb(t.ring, NULL, NULL),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_set_cb(t.ring, on_grain, &s), 0);
	/* with a callback set the queue is not the ring's */
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait(t.ring, 0, &g), -EINVAL);
	a = initiator();
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &t.info, WAIT_MS, &w),
			      0);
	put_seq(w, 0, 12, src, slot);
	seen = wait_count(&s.lock, &s.seen, 12);
	CU_ASSERT_EQUAL(seen, 12);
	CU_ASSERT_EQUAL(s.bad, 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_set_cb(t.ring, NULL, NULL), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	rdmaxfer_agent_destroy(a);
	target_close(&t);
	pthread_mutex_destroy(&s.lock);
}

/*
 * A grain callback replaced by another, with a user of its own, while
 * the first is running: rdmaxfer_ring_set_cb() must not return before
 * that call has, and every grain after it must reach the new callback
 * with the new user.  Callback A holds grain 0 until the main thread has
 * called set_cb(B), then 200 ms more; then it checks that set_cb() has
 * not returned yet.  (The pair is stored and read under the ring's lock,
 * so no call can mix one callback with the other's user; that interleaving
 * is too narrow to provoke here.)
 */
struct swap_state;

struct swap_user {
	int tag;
	struct swap_state *st;
};

struct swap_state {
	struct rdmaxfer_ring *ring;
	struct swap_user users[2];
	size_t len;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool inside, swapping, returned;
	uint64_t seen, bad, mixed, early, calls[2];
};

static void on_swap(int me, void *user, const struct rdmaxfer_grain *g)
{
	struct swap_user *u = user;
	struct swap_state *s = u->st;
	struct timespec ts;

	pthread_mutex_lock(&s->lock);
	if (u->tag != me)
		s->mixed++;
	if (g->index != s->seen || !grain_ok(g->data, s->len, g->index) ||
	    rdmaxfer_ring_release(s->ring, g->index))
		s->bad++;
	s->seen++;
	s->calls[me]++;
	if (me == 0 && g->index == 0) {
		s->inside = true;
		pthread_cond_broadcast(&s->cond);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += WAIT_MS / 1000;
		while (!s->swapping &&
		       !pthread_cond_timedwait(&s->cond, &s->lock, &ts))
			;
		pthread_mutex_unlock(&s->lock);
		usleep(200000);
		pthread_mutex_lock(&s->lock);
		if (s->returned)
			s->early++;
	}
	pthread_mutex_unlock(&s->lock);
}

static void on_swap_a(void *user, const struct rdmaxfer_grain *g)
{
	on_swap(0, user, g);
}

static void on_swap_b(void *user, const struct rdmaxfer_grain *g)
{
	on_swap(1, user, g);
}

static void test_callback_replace(void)
{
	const size_t slot = 256;
	const uint64_t n = 40;
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_agent *a;
	struct swap_state s;
	struct timespec ts;
	struct target t;
	uint8_t src[256];
	double t0;
	int ret;

	CU_ASSERT_FATAL(target_open(4, slot, &t) == 0);
	memset(&s, 0, sizeof(s));
	s.ring = t.ring;
	s.len = slot;
	s.users[0].tag = 0;
	s.users[0].st = &s;
	s.users[1].tag = 1;
	s.users[1].st = &s;
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_set_cb(t.ring, on_swap_a,
						   &s.users[0]), 0);
	a = initiator();
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &t.info, WAIT_MS, &w),
			      0);
	put_seq(w, 0, 1, src, slot);
	/* A holds grain 0: replace it now */
	pthread_mutex_lock(&s.lock);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_MS / 1000;
	while (!s.inside && !pthread_cond_timedwait(&s.cond, &s.lock, &ts))
		;
	CU_ASSERT_FATAL(s.inside);
	s.swapping = true;
	pthread_cond_broadcast(&s.cond);
	pthread_mutex_unlock(&s.lock);
	t0 = now_s();
	ret = rdmaxfer_ring_set_cb(t.ring, on_swap_b, &s.users[1]);
	rc_diag("set_cb took %.3f s", now_s() - t0);
	pthread_mutex_lock(&s.lock);
	s.returned = true;
	pthread_mutex_unlock(&s.lock);
	CU_ASSERT_EQUAL(ret, 0);
	put_seq(w, 1, n, src, slot);
	wait_count(&s.lock, &s.seen, n);
	CU_ASSERT_EQUAL(rdmaxfer_ring_set_cb(t.ring, NULL, NULL), 0);
	pthread_mutex_lock(&s.lock);
	rc_diag("%llu grains: %llu to A, %llu to B; %llu seen after set_cb() returned, %llu with the other's user",
		(unsigned long long)s.seen, (unsigned long long)s.calls[0],
		(unsigned long long)s.calls[1], (unsigned long long)s.early,
		(unsigned long long)s.mixed);
	CU_ASSERT_EQUAL(s.seen, n);
	CU_ASSERT_EQUAL(s.bad, 0);
	CU_ASSERT_EQUAL(s.mixed, 0);
	CU_ASSERT_EQUAL(s.early, 0);
	CU_ASSERT_EQUAL(s.calls[0], 1);
	CU_ASSERT_EQUAL(s.calls[1], n - 1);
	pthread_mutex_unlock(&s.lock);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	rdmaxfer_agent_destroy(a);
	target_close(&t);
	pthread_cond_destroy(&s.cond);
	pthread_mutex_destroy(&s.lock);
}

/* A grain one page over the port's max message size: the library splits
 * the write and the immediate comes with the last piece, after all the
 * data (the target checks every byte when it sees it). */
static void test_split_grain(void)
{
	struct rdmaxfer_agent_info ai;
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_agent *a;
	struct target t;
	uint8_t *src;
	size_t len;
	uint64_t i;

	a = initiator();
	CU_ASSERT_FATAL(a != NULL);
	rdmaxfer_agent_query(a, &ai);
	if (ai.max_msg_size > 16 * MiB) {
		rc_skip("port max message %u B: a split grain needs more "
			"memory than this test takes", ai.max_msg_size);
		rdmaxfer_agent_destroy(a);
		return;
	}
	len = (size_t)ai.max_msg_size + 4096;
	src = malloc(len);
	CU_ASSERT_FATAL(src != NULL);
	CU_ASSERT_FATAL(target_open(2, len, &t) == 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &t.info, WAIT_MS, &w),
			      0);
	for (i = 0; i < 3; i++) {
		put_seq(w, i, i + 1, src, len);
		CU_ASSERT_EQUAL(take(&t, i, len, WAIT_MS), 0);
	}
	rc_diag("3 grains of %zu B (max message %u B)", len, ai.max_msg_size);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	rdmaxfer_agent_destroy(a);
	target_close(&t);
	free(src);
}

/* Eight grains behind one doorbell (RDMAXFER_POST_MORE on all but the
 * last), each from its own buffer; then one target fed by two writers of
 * one agent is not allowed, but two targets each fed by its own attach
 * with the same buffer (fan-out) are. */
static void test_batch_and_fanout(void)
{
	const size_t slot = 16384;
	struct rdmaxfer_ring_writer *w, *w2;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_iov iov;
	struct target t, t2;
	uint8_t *src;
	uint64_t i;

	CU_ASSERT_FATAL(target_open(8, slot, &t) == 0);
	CU_ASSERT_FATAL(target_open(4, slot, &t2) == 0);
	a = initiator();
	src = malloc(8 * slot);
	CU_ASSERT_FATAL(a && src);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &t.info, WAIT_MS, &w),
			      0);
	for (i = 0; i < 8; i++) {
		fill(src + i * slot, slot, (uint32_t)i);
		iov.addr = src + i * slot;
		iov.len = slot;
		CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, i, &iov, 1,
						  i < 7 ? RDMAXFER_POST_MORE :
						  0, 0), 0);
	}
	CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
	for (i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(take(&t, i, slot, WAIT_MS), 0);

	/* fan-out: grain 8 of t and grain 0 of t2 from one buffer */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &t2.info, WAIT_MS, &w2),
			      0);
	for (i = 0; i < 6; i++) {
		struct rdmaxfer_grain g, g2;

		fill(src, slot, (uint32_t)(100 + i));
		iov.addr = src;
		iov.len = slot;
		CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 8 + i, &iov, 1, 0,
						  WAIT_MS), 0);
		CU_ASSERT_EQUAL(rdmaxfer_ring_put(w2, i, &iov, 1, 0, WAIT_MS),
				0);
		CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
		CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w2, WAIT_MS), 0);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_wait(t.ring, WAIT_MS, &g),
				      0);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_wait(t2.ring, WAIT_MS,
							 &g2), 0);
		CU_ASSERT_EQUAL(g.index, 8 + i);
		CU_ASSERT_EQUAL(g2.index, i);
		CU_ASSERT(grain_ok(g.data, slot, 100 + i));
		CU_ASSERT(grain_ok(g2.data, slot, 100 + i));
		CU_ASSERT_EQUAL(rdmaxfer_ring_release(t.ring, g.index), 0);
		CU_ASSERT_EQUAL(rdmaxfer_ring_release(t2.ring, g2.index), 0);
	}
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w2), 0);
	rdmaxfer_agent_destroy(a);
	target_close(&t);
	target_close(&t2);
	free(src);
}

/* Target info through both text and binary forms; then bad input. */
static void test_info_and_bad_input(void)
{
	struct rdmaxfer_ring_info info, other;
	struct rdmaxfer_ring_writer *w = NULL;
	struct rdmaxfer_ring *r;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_iov iov[RDMAXFER_RING_MAX_IOV + 1];
	char text[RDMAXFER_RING_JSON_MAX];
	uint8_t blob[512], src[4096];
	struct target t;
	size_t len;
	int i;

	CU_ASSERT_FATAL(target_open(4, 4096, &t) == 0);
	a = initiator();
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_create(t.agent, 0, 4096, 0, &r),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_create(t.agent, 4, 0, 0, &r), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_create(t.agent, 4, 4096, 4, &r),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_create(t.agent,
					     RDMAXFER_RING_MAX_SLOTS + 1,
					     4096, 0, &r), -EINVAL);
	CU_ASSERT_FATAL(rdmaxfer_ring_info_json(&t.info, text,
						sizeof(text)) > 0);
	rc_diag("target info: %s", text);
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse_json(text, &info), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_pack(&info, blob, sizeof(blob),
						&len), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(blob, len, &info), 0);
	/* the info of another agent: refused at attach, nothing leaked */
	other = info;
	other.agent_id ^= 1;
	CU_ASSERT_EQUAL(rdmaxfer_ring_attach(a, &other, WAIT_MS, &w),
			-ESTALE);
	/* slot size over the registered ring */
	other = info;
	other.slot_size = 8192;
	CU_ASSERT_EQUAL(rdmaxfer_ring_attach(a, &other, WAIT_MS, &w),
			-ERANGE);
	/* a wrong rkey: the first credit read fails the attach */
	other = info;
	other.credit.rkey ^= 0x5a5a00;
	CU_ASSERT(rdmaxfer_ring_attach(a, &other, WAIT_MS, &w) < 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &info, WAIT_MS, &w), 0);
	for (i = 0; i <= RDMAXFER_RING_MAX_IOV; i++) {
		iov[i].addr = src;
		iov[i].len = 1;
	}
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 0, iov, 0, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 0, iov,
					  RDMAXFER_RING_MAX_IOV + 1, 0, 0),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 1, iov, 1, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 0, iov, 1, 1U << 7, 0), -EINVAL);
	iov[0].len = 4097;
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 0, iov, 1, 0, 0), -EMSGSIZE);
	iov[0].len = 0;
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 0, iov, 1, 0, 0), -EMSGSIZE);
	iov[0].len = 4096;
	iov[1].len = 1;
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 0, iov, 2, 0, 0), -EMSGSIZE);
	/* nothing was consumed by the refusals: grain 0 goes through */
	fill(src, 4096, 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 0, iov, 1, 0, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_release(t.ring, 0), -EINVAL);
	CU_ASSERT_EQUAL(take(&t, 0, 4096, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_release(t.ring, 0), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_release(t.ring, 5), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	rdmaxfer_agent_destroy(a);
	target_close(&t);
}

/* The target is a child process, killed (SIGKILL) with the writer
 * attached: the writer's next puts fail within a bound, never hang, and
 * the writer detaches cleanly. */
static void test_killed_target(void)
{
	struct rdmaxfer_ring_info info;
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_iov iov;
	struct pollfd pfd;
	uint8_t src[4096];
	int fds[2], ret = 0;
	uint64_t i;
	double t0, t1;
	pid_t pid;

	CU_ASSERT_FATAL(pipe(fds) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		char fd[16];

		/* a fresh process: nothing of this one's verbs state */
		close(fds[0]);
		snprintf(fd, sizeof(fd), "%d", fds[1]);
		execl("/proc/self/exe", "test_rdmaxfer_ring", "--target-child",
		      fd, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, WAIT_MS) != 1 ||
	    read(fds[0], &info, sizeof(info)) != sizeof(info)) {
		CU_FAIL("the target child sent no target info");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(fds[0]);
		return;
	}
	close(fds[0]);
	a = initiator();
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_attach(a, &info, WAIT_MS, &w), 0);
	iov.addr = src;
	iov.len = sizeof(src);
	fill(src, sizeof(src), 0);
	/* both slots written and never released: every later put needs a
	 * credit read first (where a dead target once made it spin) */
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 0, &iov, 1, 0, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 1, &iov, 1, 0, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
	/* not reaped until the writer is done: the dying target's rdma_cm
	 * teardown waits for this side's answer to its disconnect */
	kill(pid, SIGKILL);
	t0 = now_s();
	/* grain 2 needs credit the dead target never gives: its credit
	 * read (or the post of it) fails, or the put times out */
	for (i = 2; i < 4; i++) {
		ret = rdmaxfer_ring_put(w, i, &iov, 1, 0, 5000);
		if (ret)
			break;
	}
	if (!ret)
		ret = rdmaxfer_ring_flush(w, 5000);
	t1 = now_s() - t0;
	rc_diag("after the target died: %s in %.2f s", rdmaxfer_strerror(ret),
		t1);
	CU_ASSERT(ret == -ECONNRESET || ret == -ETIMEDOUT ||
		  ret == -ENOTCONN || ret == -ECANCELED || ret == -EIO);
	CU_ASSERT(t1 < 3 * 5 + 5);
	/* once the connection is down, the next put is refused at once
	 * with why, never spins or waits for credit */
	while (rdmaxfer_peer_state(rdmaxfer_ring_writer_peer(w)) ==
	       RDMAXFER_PEER_CONNECTED && now_s() - t0 < 60)
		usleep(10000);
	CU_ASSERT_NOT_EQUAL(rdmaxfer_peer_state(rdmaxfer_ring_writer_peer(w)),
			    RDMAXFER_PEER_CONNECTED);
	t1 = now_s();
	ret = rdmaxfer_ring_put(w, i, &iov, 1, 0, 5000);
	rc_diag("a put on the dead connection: %s in %.2f s",
		rdmaxfer_strerror(ret), now_s() - t1);
	CU_ASSERT(ret == -ECONNRESET || ret == -ETIMEDOUT ||
		  ret == -ENOTCONN || ret == -ECANCELED || ret == -EIO);
	CU_ASSERT(now_s() - t1 < 2);
	t1 = now_s();
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	rc_diag("detached in %.2f s", now_s() - t1);
	CU_ASSERT(now_s() - t1 < 11);
	rdmaxfer_agent_destroy(a);
	rc_diag("initiator gone after %.2f s", now_s() - t0);
	while (waitpid(pid, NULL, WNOHANG) == 0 && now_s() - t0 < 60)
		usleep(10000);
}

/* --target-child FD: a target for test_killed_target, until killed. */
static int target_child(int fd)
{
	struct target t;
	int i;

	if (target_open(2, 4096, &t) ||
	    write(fd, &t.info, sizeof(t.info)) != sizeof(t.info))
		return 1;
	for (i = 0; i < 600; i++)
		usleep(100 * 1000);
	return 1;
}


/* ---------------------------------------------- samples, overrun (1.7) */

/* Check one delivered write (rdmaxfer_ring_test.h), saying where it is
 * wrong. */
static int samples_ok(const struct rdmaxfer_samples *s)
{
	uint64_t idx;
	uint32_t c;
	int ret = ring_s_check(s, &idx, &c);

	if (ret == -EBADMSG && idx == UINT64_MAX)
		rc_diag("head %llu: write of the wrong shape",
			(unsigned long long)s->head);
	else if (ret)
		rc_diag("head %llu channel %u sample %llu wrong",
			(unsigned long long)s->head, c,
			(unsigned long long)idx);
	return ret;
}

/* Writes of 1..999 samples, in two planes, over ~12 laps of a 1000-sample
 * ring: those that cross the end are two WRITEs per plane.  The target
 * takes each write (blocking and polling alternately), checks every
 * sample and releases it; a non-blocking put never laps. */
static void test_samples_wrap(void)
{
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_samples smp;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_iov ch[RING_S_CHANNELS];
	struct rdmaxfer_grain g;
	struct rdmaxfer_ring *r;
	struct target t;
	uint32_t *buf[RING_S_CHANNELS], c;
	uint64_t head = 0, taken = 0;
	int i, ret, wraps = 0, eagain = 0, spins = 0;

	memset(&t, 0, sizeof(t));
	CU_ASSERT_FATAL(new_agent(RDMAXFER_PROGRESS_THREAD, 1, &t.agent) == 0);
	CU_ASSERT_FATAL(rdmaxfer_listen(t.agent, addr, 0) == 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_create_samples(t.agent, 0, RING_S_LEN,
						     4, 0, &r), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_create_samples(t.agent, 2, RING_S_LEN,
						     4, RDMAXFER_RING_OVERRUN,
						     &r), -EOPNOTSUPP);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_create_samples(t.agent,
							   RING_S_CHANNELS,
							   RING_S_LEN, 4, 0,
							   &t.ring), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_get_info(t.ring, &t.info), 0);
	CU_ASSERT_EQUAL(t.info.flavour, RDMAXFER_RING_CONTINUOUS);
	CU_ASSERT_EQUAL(t.info.version, RDMAXFER_RING_VERSION_EXT);
	CU_ASSERT_EQUAL(t.info.channels, RING_S_CHANNELS);
	/* the discrete calls refuse a sample ring */
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait(t.ring, 0, &g), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_set_cb(t.ring, NULL, NULL), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait_samples(t.ring, 0, &smp), -EAGAIN);
	a = initiator();
	for (c = 0; c < RING_S_CHANNELS; c++) {
		buf[c] = malloc(RING_S_LEN * 4);
		CU_ASSERT_FATAL(buf[c] != NULL);
	}
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &t.info, WAIT_MS, &w),
			      0);
	/* bad input, nothing consumed */
	for (c = 0; c < RING_S_CHANNELS; c++) {
		ch[c].addr = buf[c];
		ch[c].len = 100 * 4;
	}
	CU_ASSERT_EQUAL(rdmaxfer_ring_put(w, 0, ch, 1, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put_samples(w, 100, 100, ch, 1, 0, 0),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put_samples(w, 101, 100, ch, 2, 0, 0),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put_samples(w, 99, 99, ch, 2, 0, 0),
			-EMSGSIZE);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put_samples(w, 1001, 1001, ch, 2, 0, 0),
			-EMSGSIZE);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put_samples(w, 0, 0, ch, 2, 0, 0),
			-EMSGSIZE);
	for (i = 0; i < 35; i++) {
		uint32_t n = ring_s_count(i);

		ring_s_fill(buf, ch, head, n);
		while ((ret = rdmaxfer_ring_put_samples(w, head + n, n, ch,
							RING_S_CHANNELS, 0,
							0)) == -EAGAIN) {
			/* no credit (or its READ still in flight: call
			 * again): the target takes the oldest write */
			eagain++;
			if (taken == head) {
				CU_ASSERT_FATAL(++spins < 200000);
				continue;
			}
			CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_wait_samples(
					      t.ring, WAIT_MS, &smp), 0);
			CU_ASSERT_EQUAL_FATAL(samples_ok(&smp), 0);
			wraps += smp.frag_len[1] != 0;
			CU_ASSERT_EQUAL(rdmaxfer_ring_release(t.ring,
							      smp.head), 0);
			taken = smp.head;
		}
		CU_ASSERT_EQUAL_FATAL(ret, 0);
		CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
		head += n;
	}
	while (taken < head) {
		ret = rdmaxfer_ring_wait_samples(t.ring, taken & 1 ? 0 :
						 WAIT_MS, &smp);
		if (ret == -EAGAIN)
			continue;
		CU_ASSERT_EQUAL_FATAL(ret, 0);
		CU_ASSERT_EQUAL_FATAL(samples_ok(&smp), 0);
		wraps += smp.frag_len[1] != 0;
		/* a release of what was not delivered, or again */
		CU_ASSERT_EQUAL(rdmaxfer_ring_release(t.ring, smp.head + 1),
				-EINVAL);
		CU_ASSERT_EQUAL(rdmaxfer_ring_release(t.ring, smp.head), 0);
		CU_ASSERT_EQUAL(rdmaxfer_ring_release(t.ring, smp.head),
				-EINVAL);
		taken = smp.head;
	}
	rc_diag("%llu samples x %d channels in 35 writes, %d crossed the "
		"ring's end; %d puts found no credit",
		(unsigned long long)head, RING_S_CHANNELS, wraps, eagain);
	CU_ASSERT(wraps >= 8);
	CU_ASSERT(eagain > 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	rdmaxfer_agent_destroy(a);
	target_close(&t);
	for (c = 0; c < RING_S_CHANNELS; c++)
		free(buf[c]);
}

struct samples_state {
	struct rdmaxfer_ring *ring;
	pthread_mutex_t lock;
	uint64_t taken;			/* head of the last write in */
	uint64_t bad;
	int calls, wraps;
};

/* Called from the target's progress thread: each write in order, every
 * sample checked, then released in place. */
static void on_samples(void *user, const struct rdmaxfer_samples *s)
{
	struct samples_state *st = user;

	pthread_mutex_lock(&st->lock);
	if (s->count == 0 || s->head - s->count != st->taken ||
	    samples_ok(s) || rdmaxfer_ring_release(st->ring, s->head))
		st->bad++;
	st->taken = s->head;
	st->wraps += s->frag_len[1] != 0;
	st->calls++;
	pthread_mutex_unlock(&st->lock);
}

/* Sample writes taken by callback (the third completion style), with
 * blocking puts over ~12 laps of the ring: the callback's releases are
 * the writer's credits.  Then the callback is taken away and the next
 * write is waited for. */
static void test_samples_callback(void)
{
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_samples smp;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_iov ch[RING_S_CHANNELS];
	struct samples_state st;
	struct target t;
	uint32_t *buf[RING_S_CHANNELS], c, n;
	uint64_t head = 0, taken = 0;
	int i;

	memset(&t, 0, sizeof(t));
	memset(&st, 0, sizeof(st));
	pthread_mutex_init(&st.lock, NULL);
	CU_ASSERT_FATAL(new_agent(RDMAXFER_PROGRESS_THREAD, 1, &t.agent) == 0);
	CU_ASSERT_FATAL(rdmaxfer_listen(t.agent, addr, 0) == 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_create_samples(t.agent,
							   RING_S_CHANNELS,
							   RING_S_LEN, 4, 0,
							   &t.ring), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_get_info(t.ring, &t.info), 0);
	st.ring = t.ring;
	CU_ASSERT_EQUAL(rdmaxfer_ring_set_samples_cb(NULL, on_samples, &st),
			-EINVAL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_set_samples_cb(t.ring, on_samples,
							   &st), 0);
	/* with a callback set the queue is not the ring's */
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait_samples(t.ring, 0, &smp), -EINVAL);
	a = initiator();
	CU_ASSERT_FATAL(a != NULL);
	for (c = 0; c < RING_S_CHANNELS; c++) {
		buf[c] = malloc(RING_S_LEN * 4);
		CU_ASSERT_FATAL(buf[c] != NULL);
	}
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &t.info, WAIT_MS, &w),
			      0);
	for (i = 0; i < 36; i++) {
		n = ring_s_count(i);
		ring_s_fill(buf, ch, head, n);
		/* blocking: only the callback's releases let it go on */
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_put_samples(w, head + n, n,
								ch,
								RING_S_CHANNELS,
								0, WAIT_MS),
				      0);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
		head += n;
	}
	taken = wait_count(&st.lock, &st.taken, head);
	rc_diag("%llu samples x %d channels in %d writes by callback, %d "
		"crossed the ring's end", (unsigned long long)head,
		RING_S_CHANNELS, st.calls, st.wraps);
	CU_ASSERT_EQUAL(taken, head);
	CU_ASSERT_EQUAL(st.calls, 36);
	CU_ASSERT_EQUAL(st.bad, 0);
	CU_ASSERT(st.wraps >= 8);
	/* back to waiting: nothing pending, then the next write */
	CU_ASSERT_EQUAL(rdmaxfer_ring_set_samples_cb(t.ring, NULL, NULL), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait_samples(t.ring, 0, &smp), -EAGAIN);
	n = 100;
	ring_s_fill(buf, ch, head, n);
	CU_ASSERT_EQUAL(rdmaxfer_ring_put_samples(w, head + n, n, ch,
						  RING_S_CHANNELS, 0,
						  WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_wait_samples(t.ring, WAIT_MS,
							 &smp), 0);
	CU_ASSERT_EQUAL(smp.head, head + n);
	CU_ASSERT_EQUAL(samples_ok(&smp), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_release(t.ring, smp.head), 0);
	pthread_mutex_lock(&st.lock);
	CU_ASSERT_EQUAL(st.calls, 36);
	pthread_mutex_unlock(&st.lock);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	rdmaxfer_agent_destroy(a);
	target_close(&t);
	for (c = 0; c < RING_S_CHANNELS; c++)
		free(buf[c]);
	pthread_mutex_destroy(&st.lock);
}

/* Put grain i (pattern i); 0 or the put's error. */
static int put_one(struct rdmaxfer_ring_writer *w, uint64_t i, uint8_t *src,
		   size_t len)
{
	struct rdmaxfer_iov iov = { src, len };
	int ret;

	fill(src, len, (uint32_t)i);
	ret = rdmaxfer_ring_put(w, i, &iov, 1, 0, WAIT_MS);
	if (!ret)
		ret = rdmaxfer_ring_flush(w, WAIT_MS);
	return ret;
}

/* Overrun mode with a consumer that takes nothing for a while: the
 * writer never waits and never overwrites a held slot (-ENOBUFS, the
 * grain dropped); the target finds grain 0 intact, then an explicit
 * -EOVERFLOW naming exactly the grains dropped, then the grains after
 * them; a writer that skips an index is reported the same way. */
static void test_overrun_slow_consumer(void)
{
	const size_t slot = 4096;
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_grain g;
	struct target t;
	uint8_t src[4096];
	uint64_t i, lost = 99, dropped = 0;
	double t0;
	int ret;

	memset(&t, 0, sizeof(t));
	CU_ASSERT_FATAL(new_agent(RDMAXFER_PROGRESS_THREAD, 1, &t.agent) == 0);
	CU_ASSERT_FATAL(rdmaxfer_listen(t.agent, addr, 0) == 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_create(t.agent, 4, slot, 2, &t.ring),
			-EINVAL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_create(t.agent, 4, slot,
						   RDMAXFER_RING_OVERRUN,
						   &t.ring), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_get_info(t.ring, &t.info), 0);
	CU_ASSERT_EQUAL(t.info.flags, RDMAXFER_RING_OVERRUN);
	a = initiator();
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &t.info, WAIT_MS, &w),
			      0);
	/* the consumer sleeps: 4 grains fill the ring, 6 are dropped, and
	 * none of the puts waits for the target */
	t0 = now_s();
	for (i = 0; i < 10; i++) {
		ret = put_one(w, i, src, slot);
		CU_ASSERT_EQUAL(ret, i < 4 ? 0 : -ENOBUFS);
		dropped += ret == -ENOBUFS;
	}
	rc_diag("10 puts to a sleeping target: %llu dropped in %.3f s",
		(unsigned long long)dropped, now_s() - t0);
	/* a put behind the writer */
	CU_ASSERT_EQUAL(put_one(w, 9, src, slot), -EINVAL);
	/* nothing was lapped: the four grains are whole */
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL_FATAL(take(&t, i, slot, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait(t.ring, 0, &g), -EAGAIN);
	/* released: the writer's next puts read the credit and go through */
	for (i = 10; i < 14; i++)
		CU_ASSERT_EQUAL(put_one(w, i, src, slot), 0);
	/* a source that skips grain 14 itself; 15 goes to slot 3, which
	 * holds grain 11, not yet taken: dropped */
	CU_ASSERT_EQUAL(put_one(w, 15, src, slot), -ENOBUFS);
	dropped++;
	/* the target: the loss first, exactly, then the grains after it */
	memset(&g, 0x5a, sizeof(g));
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait(t.ring, WAIT_MS, &g), -EOVERFLOW);
	CU_ASSERT_EQUAL(g.index, 4);
	CU_ASSERT_EQUAL(g.lost, 6);
	CU_ASSERT(g.data == NULL);
	for (i = 10; i < 14; i++)
		CU_ASSERT_EQUAL(take(&t, i, slot, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_lost(t.ring, &lost), 0);
	CU_ASSERT_EQUAL(lost, 6);
	/* skip 16, write 17: slot 1 (grain 13) was released */
	CU_ASSERT_EQUAL(put_one(w, 17, src, slot), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_wait(t.ring, WAIT_MS, &g), -EOVERFLOW);
	CU_ASSERT_EQUAL(g.index, 14);
	CU_ASSERT_EQUAL(g.lost, 3);
	CU_ASSERT_EQUAL(take(&t, 17, slot, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_ring_lost(t.ring, &lost), 0);
	rc_diag("target lost %llu grains; writer dropped %llu, skipped 2",
		(unsigned long long)lost, (unsigned long long)dropped);
	CU_ASSERT_EQUAL(lost, dropped + 2);
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	rdmaxfer_agent_destroy(a);
	target_close(&t);
}

static const struct rc_test_case cases[] = {
	{ "order_wrap_nonblocking", test_order_wrap_nonblocking },
	{ "slow_consumer_credits", test_slow_consumer_credits },
	{ "callback", test_callback },
	{ "callback_replace", test_callback_replace },
	{ "split_grain", test_split_grain },
	{ "batch_and_fanout", test_batch_and_fanout },
	{ "info_and_bad_input", test_info_and_bad_input },
	{ "samples_wrap", test_samples_wrap },
	{ "samples_callback", test_samples_callback },
	{ "overrun_slow_consumer", test_overrun_slow_consumer },
	{ NULL, NULL },
};

/* --killed: run on its own, under its own time limit */
static const struct rc_test_case killed_cases[] = {
	{ "killed_target", test_killed_target },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	bool killed = argc > 1 && !strcmp(argv[1], "--killed");

	addr = getenv("RXE_ADDR");
	if (argc > 2 && !strcmp(argv[1], "--target-child") && addr)
		return target_child(atoi(argv[2]));
	addr = rxe_addr_or_skip();
	signal(SIGPIPE, SIG_IGN);
	if (killed) {
		argc--;
		argv++;
	}
	rc_add_suite("rdmaxfer_ring", NULL, NULL,
		     killed ? killed_cases : cases);
	return rc_test_main(argc, argv);
}
