// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_efd.c - progress and waiting on a real RDMA device (rxe
 * in the VM, suite "progress"): the agent's event fd with
 * rdmaxfer_agent_arm() in an application's own epoll loop, a thread that
 * posts while another sleeps on the fd, no lost wakeup over many
 * arm/sleep cycles, an idle agent's wakeups counted from /proc, request
 * completion callbacks, rdmaxfer_req_wait_any(), and the atomics (the
 * ones the device has give the right values, the others -EOPNOTSUPP).
 *
 * The server agent has a progress thread; the clients are caller-mode
 * agents, whose fd carries the channels themselves.  Every epoll_wait()
 * that waits for the agent is bounded by SLEEP_MS: one that times out is
 * a lost wakeup and fails the test.  Skips (77) without $RXE_ADDR or an
 * RDMA device.  RDMAXFER_TEST_CYCLES: the arm/sleep cycles (100000).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define WAIT_MS		20000
#define SLEEP_MS	5000	/* an epoll_wait() past this lost a wakeup */

#include "rdmaxfer_test_util.h"

static const char *addr;
static struct rdmaxfer_agent *srv;
static struct rdmaxfer_mem *srv_mem;
static uint8_t *srv_buf;
static uint16_t srv_port;
/* the clients' small buffers (heap: the tests' stacks are not theirs to
 * register), one slice per test */
static uint8_t *cli_buf;
#define CLI_SMALL	65536

static int suite_init(void)
{
	if (new_agent(RDMAXFER_PROGRESS_THREAD, 1, &srv) ||
	    rdmaxfer_listen(srv, addr, 0) ||
	    rdmaxfer_listen_port(srv, &srv_port))
		return 1;
	srv_buf = aligned_alloc(4096, SRV_LEN);
	if (!srv_buf)
		return 1;
	memset(srv_buf, 0, SRV_LEN);
	cli_buf = aligned_alloc(4096, CLI_SMALL);
	if (!cli_buf)
		return 1;
	memset(cli_buf, 0, CLI_SMALL);
	return rdmaxfer_mem_register(srv, srv_buf, SRV_LEN, RDMAXFER_MEM_HOST,
				     &srv_mem) ? 1 : 0;
}

static int suite_cleanup(void)
{
	rdmaxfer_agent_destroy(srv);
	free(srv_buf);
	free(cli_buf);
	return 0;
}

/* A caller-mode client connected to srv; *sp: srv's side of it. */
static int client(struct rdmaxfer_agent **a, struct rdmaxfer_peer **p,
		  struct rdmaxfer_peer **sp)
{
	int ret = new_agent(RDMAXFER_PROGRESS_CALLER, 1, a);

	if (ret)
		return ret;
	ret = rdmaxfer_connect(*a, addr, srv_port, 10000, p);
	if (!ret)
		ret = rdmaxfer_accept(srv, 10000, sp);
	if (ret)
		rdmaxfer_agent_destroy(*a);
	return ret;
}

static struct rdmaxfer_req *prep(struct rdmaxfer_peer *p, enum rdmaxfer_op op,
				 void *buf, size_t len, size_t srv_off)
{
	struct rdmaxfer_iov iov = { buf, len };
	struct rdmaxfer_req *req = NULL;
	struct rdmaxfer_desc d;

	if (rdmaxfer_mem_desc(srv_mem, srv_off, len, &d) ||
	    rdmaxfer_xfer_prepare(p, op, &iov, 1, &d, 1, NULL, &req))
		return NULL;
	return req;
}

/* An epoll set over the agent's fd (tag 0) and fd (tag 1, if >= 0). */
static int app_epoll(struct rdmaxfer_agent *a, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(0);

	if (ep < 0)
		return -1;
	ev.data.u32 = 0;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, rdmaxfer_agent_fd(a), &ev))
		return -1;
	ev.data.u32 = 1;
	if (fd >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		return -1;
	return ep;
}

/* ------------------------------------------ an application's event loop */

#define LOOP_N		200

static void count_cb(void *user, struct rdmaxfer_req *req, int status)
{
	int *done = user;

	(void)req;
	if (status == 0)
		(*done)++;
	else
		*done = -1000000;
}

struct kicker {
	int sock;
	struct rdmaxfer_peer *sp;	/* srv's side: sends the notifications */
	int ret;
	unsigned int eagain;		/* sends that had to wait for a slot */
};

/* Another process's worth of input: a byte on the socket and a
 * notification from the server, LOOP_N times, paced by the loop's reply. */
static void *kicker_main(void *arg)
{
	struct kicker *k = arg;
	uint32_t i;
	char c;

	for (i = 0; i < LOOP_N && !k->ret; i++) {
		unsigned int tries = 0;
		int ret;

		c = (char)i;
		if (write(k->sock, &c, 1) != 1) {
			k->ret = -errno;
			break;
		}
		/* -EAGAIN is the send slots' backpressure (rdmaxfer_notif(3)):
		 * on a loaded guest the loop's bytes can run ahead of the
		 * notifications still in flight (one CI run: 122 bytes, 58
		 * notifications, when a send found all 64 slots taken);
		 * retry for up to 10 s */
		while ((ret = rdmaxfer_notif_send(k->sp, 1000 + i, NULL,
						  0)) == -EAGAIN &&
		       ++tries < 10000)
			usleep(1000);
		if (ret) {
			printf("# kicker: notification %u: %s\n", i,
			       rdmaxfer_strerror(ret));
			k->ret = ret;
			break;
		}
		if (tries)
			k->eagain++;
		if (read(k->sock, &c, 1) != 1)	/* paced */
			k->ret = -EIO;
	}
	return NULL;
}

/*
 * One loop over epoll: the socket's bytes start WRITEs (with a completion
 * callback), the agent's fd brings their completions and the server's
 * notifications.  Ends when LOOP_N of each came; every byte checked.
 */
static void test_epoll_loop(void)
{
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p, *sp;
	struct rdmaxfer_req *req[LOOP_N];
	struct rdmaxfer_notif n[8];
	struct epoll_event ev[2];
	struct kicker k = { 0 };
	int sv[2], ep, i, got, nbytes = 0, nnotif = 0, done = 0, posted = 0;
	unsigned int sleeps = 0, timeouts = 0;
	uint32_t expect = 1000;
	uint8_t *buf;
	pthread_t t;
	char c;

	CU_ASSERT_EQUAL_FATAL(client(&a, &p, &sp), 0);
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ep = app_epoll(a, sv[0]);
	CU_ASSERT_FATAL(ep >= 0);
	buf = aligned_alloc(4096, LOOP_N * 256);
	CU_ASSERT_FATAL(buf != NULL);
	for (i = 0; i < LOOP_N; i++) {
		fill(buf + i * 256, 256, i);
		req[i] = prep(p, RDMAXFER_OP_WRITE, buf + i * 256, 256,
			      1 * MiB + i * 256);
		CU_ASSERT_FATAL(req[i] != NULL);
		CU_ASSERT_EQUAL(rdmaxfer_req_set_cb(req[i], count_cb, &done),
				0);
	}
	k.sock = sv[1];
	k.sp = sp;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, kicker_main, &k), 0);
	while ((nbytes < LOOP_N || nnotif < LOOP_N || done < LOOP_N) &&
	       done >= 0 && timeouts == 0 && !k.ret) {
		while (rdmaxfer_agent_arm(a) == -EAGAIN) {
			CU_ASSERT(rdmaxfer_progress(a) >= 0);
			while ((got = rdmaxfer_get_notifs(a, n, 8)) > 0)
				for (i = 0; i < got; i++) {
					CU_ASSERT_EQUAL(n[i].value, expect);
					expect++;
					nnotif++;
				}
		}
		if (nbytes == LOOP_N && nnotif == LOOP_N && done == LOOP_N)
			break;
		got = epoll_wait(ep, ev, 2, SLEEP_MS);
		sleeps++;
		if (got == 0)
			timeouts++;
		for (i = 0; i < got; i++) {
			if (ev[i].data.u32 != 1)
				continue;
			if (read(sv[0], &c, 1) != 1)
				continue;
			CU_ASSERT_EQUAL((uint8_t)c, (uint8_t)nbytes);
			CU_ASSERT_EQUAL(rdmaxfer_req_post(req[posted]), 0);
			posted++;
			nbytes++;
			/* the kicker's next round */
			CU_ASSERT_EQUAL(write(sv[0], &c, 1), 1);
		}
	}
	pthread_join(t, NULL);
	printf("# epoll loop: %d bytes, %d notifications, %d callbacks, %u sleeps, %u timed out, %u sends waited for a slot\n",
	       nbytes, nnotif, done, sleeps, timeouts, k.eagain);
	CU_ASSERT_EQUAL(k.ret, 0);
	CU_ASSERT_EQUAL(timeouts, 0);
	CU_ASSERT_EQUAL(nbytes, LOOP_N);
	CU_ASSERT_EQUAL(nnotif, LOOP_N);
	CU_ASSERT_EQUAL(done, LOOP_N);
	for (i = 0; i < LOOP_N; i++) {
		CU_ASSERT_EQUAL(first_bad(srv_buf + 1 * MiB + i * 256, 256, i),
				256);
		CU_ASSERT_EQUAL(rdmaxfer_req_free(req[i]), 0);
	}
	close(ep);
	close(sv[0]);
	close(sv[1]);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(a);
	free(buf);
}

/* ------------------------------ a thread posts, another sleeps in epoll */

#define XTHREAD_N	500

struct sleeper {
	struct rdmaxfer_agent *a;
	struct rdmaxfer_req *req;
	pthread_mutex_t m;
	pthread_cond_t c;
	int posted, completed;	/* under m */
	bool stop;
	unsigned int timeouts, sleeps;
};

/* Sleeps on the agent's fd; progresses when it wakes; tells the poster. */
static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	struct epoll_event ev;
	int ep = app_epoll(s->a, -1);
	bool stop = false;

	while (!stop && ep >= 0) {
		while (rdmaxfer_agent_arm(s->a) == -EAGAIN) {
			rdmaxfer_progress(s->a);
			pthread_mutex_lock(&s->m);
			if (s->completed < s->posted &&
			    rdmaxfer_req_test(s->req) != -EINPROGRESS) {
				s->completed++;
				pthread_cond_signal(&s->c);
			}
			pthread_mutex_unlock(&s->m);
		}
		pthread_mutex_lock(&s->m);
		stop = s->stop;
		pthread_mutex_unlock(&s->m);
		if (stop)
			break;
		s->sleeps++;
		if (epoll_wait(ep, &ev, 1, SLEEP_MS) == 0) {
			pthread_mutex_lock(&s->m);
			/* woken for nothing in SLEEP_MS while a post waits */
			if (s->completed < s->posted) {
				s->timeouts++;
				pthread_cond_signal(&s->c);
			}
			pthread_mutex_unlock(&s->m);
		}
	}
	if (ep >= 0)
		close(ep);
	return NULL;
}

static void test_post_while_sleeping(void)
{
	struct sleeper s = { .m = PTHREAD_MUTEX_INITIALIZER,
			     .c = PTHREAD_COND_INITIALIZER };
	struct rdmaxfer_peer *p, *sp;
	uint64_t *word = (uint64_t *)cli_buf;
	pthread_t t;
	int i;

	CU_ASSERT_EQUAL_FATAL(client(&s.a, &p, &sp), 0);
	s.req = prep(p, RDMAXFER_OP_READ, word, 8, 2 * MiB);
	CU_ASSERT_FATAL(s.req != NULL);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, sleeper_main, &s), 0);
	for (i = 0; i < XTHREAD_N; i++) {
		/* let the sleeper get to epoll_wait() now and then */
		if (i % 16 == 0)
			usleep(2000);
		memcpy(srv_buf + 2 * MiB, &i, sizeof(i));
		pthread_mutex_lock(&s.m);
		CU_ASSERT_EQUAL(rdmaxfer_req_post(s.req), 0);
		s.posted++;
		while (s.completed < s.posted && s.timeouts == 0)
			pthread_cond_wait(&s.c, &s.m);
		pthread_mutex_unlock(&s.m);
		if (s.timeouts)
			break;
		CU_ASSERT_EQUAL(rdmaxfer_req_test(s.req), 0);
		CU_ASSERT_EQUAL((int)*word, i);
	}
	pthread_mutex_lock(&s.m);
	s.stop = true;
	pthread_mutex_unlock(&s.m);
	/* wake the sleeper: one more post */
	CU_ASSERT_EQUAL(rdmaxfer_req_post(s.req), 0);
	pthread_join(t, NULL);
	printf("# post while sleeping: %d posts, %u sleeps, %u lost\n",
	       s.posted, s.sleeps, s.timeouts);
	CU_ASSERT_EQUAL(s.timeouts, 0);
	CU_ASSERT(s.sleeps > 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(s.req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(s.req), 0);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(s.a);
}

/* --------------------------------------------- no lost wakeup, N cycles */

static void test_arm_cycles(void)
{
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p, *sp;
	struct rdmaxfer_req *req;
	struct epoll_event ev;
	const char *env = getenv("RDMAXFER_TEST_CYCLES");
	const char *envs = getenv("RDMAXFER_TEST_CYCLES_S");
	long cycles = env ? atol(env) : 100000, i, sleeps = 0, lost = 0;
	long again = 0, early = 0;
	/* a time bound too: a slow guest proves fewer cycles, and says so */
	double limit = envs ? atof(envs) : 60, t0, tw, worst = 0;
	uint64_t *word = (uint64_t *)(cli_buf + 64);
	int ep, ret;

	CU_ASSERT_EQUAL_FATAL(client(&a, &p, &sp), 0);
	req = prep(p, RDMAXFER_OP_WRITE, word, 8, 3 * MiB);
	CU_ASSERT_FATAL(req != NULL);
	ep = app_epoll(a, -1);
	CU_ASSERT_FATAL(ep >= 0);
	t0 = now_s();
	for (i = 0; i < cycles && !lost; i++) {
		if (!(i & 1023) && now_s() - t0 > limit)
			break;
		*word = (uint64_t)i;
		/* arm first, then post: the completion comes after the
		 * arm and must wake the epoll_wait() */
		while ((ret = rdmaxfer_agent_arm(a)) == -EAGAIN) {
			again++;
			rdmaxfer_progress(a);
		}
		CU_ASSERT_EQUAL_FATAL(ret, 0);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post(req), 0);
		for (;;) {
			sleeps++;
			tw = now_s();
			if (epoll_wait(ep, &ev, 1, SLEEP_MS) == 0) {
				lost++;
				break;
			}
			tw = now_s() - tw;
			if (tw > worst)
				worst = tw;
			if (rdmaxfer_req_test(req) != -EINPROGRESS)
				break;
			early++;
			/* woken early (the completion's event came before
			 * its entry could be polled): arm again */
			while ((ret = rdmaxfer_agent_arm(a)) == -EAGAIN) {
				again++;
				if (rdmaxfer_req_test(req) != -EINPROGRESS)
					break;
			}
			if (rdmaxfer_req_test(req) != -EINPROGRESS)
				break;
		}
	}
	printf("# arm/sleep: %ld of %ld cycles in %.1f s (bound %.0f s), %ld sleeps (%ld woken before the completion), %ld -EAGAIN, %ld lost, longest sleep %.1f ms\n",
	       i, cycles, now_s() - t0, limit, sleeps, early, again, lost,
	       worst * 1e3);
	CU_ASSERT_EQUAL(lost, 0);
	CU_ASSERT(sleeps >= i);
	CU_ASSERT(i >= 1000 || i == cycles);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(memcmp(srv_buf + 3 * MiB, word, 8), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	close(ep);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(a);
}

/* --------------------------------------------------- an idle agent */

/* The context switches of every thread of this process so far. */
static long ctx_switches(void)
{
	char path[300], line[128];
	struct dirent *de;
	long sum = 0, v;
	DIR *d = opendir("/proc/self/task");
	FILE *f;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) ==
				    1 ||
			    sscanf(line, "nonvoluntary_ctxt_switches: %ld",
				   &v) == 1)
				sum += v;
		fclose(f);
	}
	closedir(d);
	return sum;
}

#define IDLE_MS		2000
/* wakeups per second allowed, whole process (was about 50 + 10) */
#define IDLE_MAX_PER_S	2
/* CPU time per second of idling allowed (a spin that never sleeps makes
 * few switches but all of one CPU) */
#define IDLE_MAX_CPU	0.05

/* The process's CPU time so far, user and system, s. */
static double cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return -1;
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

struct idle_mark {
	long ctx;
	double cpu, t;
};

static void idle_begin(struct idle_mark *m)
{
	m->ctx = ctx_switches();
	m->cpu = cpu_s();
	m->t = now_s();
}

/* max_switches < 0: the rate bound IDLE_MAX_PER_S; else a total */
static void idle_check(const char *what, const struct idle_mark *m,
		       long max_switches)
{
	long after = ctx_switches();
	double cpu = cpu_s() - m->cpu;
	double s = now_s() - m->t;
	double rate = (after - m->ctx) / s;

	printf("# idle, %s: %ld context switches in %.2f s (%.1f/s), CPU %.3f s\n",
	       what, after - m->ctx, s, rate, cpu);
	CU_ASSERT(m->ctx >= 0 && after >= 0);
	if (max_switches < 0)
		CU_ASSERT(rate <= IDLE_MAX_PER_S);
	if (max_switches >= 0)
		CU_ASSERT(after - m->ctx <= max_switches);
	CU_ASSERT(cpu <= IDLE_MAX_CPU * s);
}

/*
 * Idle: connected agents (the server with its thread, a caller-mode
 * client), memory registered, a caller blocked for IDLE_MS in
 * rdmaxfer_wait_notifs() on each kind, then in epoll on the fd.  The
 * whole process's context switches are counted, every thread.
 */
static void test_idle(void)
{
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p, *sp;
	struct rdmaxfer_req *req;
	struct rdmaxfer_notif n;
	struct epoll_event ev;
	uint8_t *buf = cli_buf + 128;
	struct idle_mark m;
	int ep;

	CU_ASSERT_EQUAL_FATAL(client(&a, &p, &sp), 0);
	/* one transfer, so the cache has an entry and the CQ was used */
	req = prep(p, RDMAXFER_OP_READ, buf, 64, 0);
	CU_ASSERT_FATAL(req != NULL);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	usleep(200000);		/* what the connection left settles */

	idle_begin(&m);
	CU_ASSERT_EQUAL(rdmaxfer_wait_notifs(a, &n, 1, IDLE_MS), -ETIMEDOUT);
	idle_check("caller mode, wait_notifs", &m, -1);

	idle_begin(&m);
	CU_ASSERT_EQUAL(rdmaxfer_wait_notifs(srv, &n, 1, IDLE_MS), -ETIMEDOUT);
	idle_check("thread mode, wait_notifs", &m, -1);

	ep = app_epoll(a, -1);
	CU_ASSERT_FATAL(ep >= 0);
	while (rdmaxfer_agent_arm(a) == -EAGAIN)
		rdmaxfer_progress(a);
	idle_begin(&m);
	CU_ASSERT_EQUAL(epoll_wait(ep, &ev, 1, IDLE_MS), 0);
	idle_check("epoll on the fd", &m, -1);
	close(ep);

	/* the server's fd (thread mode) after arm: also quiet */
	ep = app_epoll(srv, -1);
	CU_ASSERT_FATAL(ep >= 0);
	while (rdmaxfer_agent_arm(srv) == -EAGAIN)
		rdmaxfer_progress(srv);
	CU_ASSERT_EQUAL(epoll_wait(ep, &ev, 1, 300), 0);
	close(ep);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(a);
}

/*
 * An invalidation while a caller is blocked: memory the cache holds
 * (a transfer's) is unmapped by another thread during a 2 s wait.  The
 * cache's fd wakes the sleeper, which must apply it and sleep on, not
 * find the fd readable again and spin: a handful of switches, not
 * thousands.
 */
static void *unmap_later(void *arg)
{
	usleep(300000);
	munmap(arg, 65536);
	return NULL;
}

static void test_invalidate_while_blocked(void)
{
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p, *sp;
	struct rdmaxfer_req *req;
	struct rdmaxfer_notif n;
	struct regcache_stats st;
	struct idle_mark m;
	uint8_t *mem;
	pthread_t t;

	CU_ASSERT_EQUAL_FATAL(client(&a, &p, &sp), 0);
	mem = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(mem != MAP_FAILED);
	req = prep(p, RDMAXFER_OP_READ, mem, 65536, 0);
	CU_ASSERT_FATAL(req != NULL);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	/* the request holds its entry until freed: now only the cache */
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	usleep(100000);
	CU_ASSERT_EQUAL(pthread_create(&t, NULL, unmap_later, mem), 0);
	idle_begin(&m);
	CU_ASSERT_EQUAL(rdmaxfer_wait_notifs(a, &n, 1, IDLE_MS), -ETIMEDOUT);
	pthread_join(t, NULL);
	/* the unmapping thread's own life, the monitor's thread, the
	 * waiter's wake: a handful */
	idle_check("caller mode, wait_notifs, one munmap", &m, 20);
	CU_ASSERT_EQUAL(rdmaxfer_agent_cache_stats(a, &st), 0);
	printf("# cache: %llu invalidations\n",
	       (unsigned long long)st.invalidations);
	/* the munmap was seen: the wake above was for it */
	CU_ASSERT(st.invalidations >= 1);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(a);
}

/* ----------------------------------------------- the thread-mode fd */

/*
 * srv has a progress thread, which reads the channels: its fd must still
 * wake an armed application for a notification the thread queued.
 */
static void test_thread_fd(void)
{
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p, *sp;
	struct rdmaxfer_notif n;
	struct epoll_event ev;
	int ep, i, got = 0;
	unsigned int lost = 0;

	CU_ASSERT_EQUAL_FATAL(client(&a, &p, &sp), 0);
	ep = app_epoll(srv, -1);
	CU_ASSERT_FATAL(ep >= 0);
	for (i = 0; i < 50; i++) {
		while (rdmaxfer_agent_arm(srv) == -EAGAIN)
			got += rdmaxfer_get_notifs(srv, &n, 1) > 0;
		CU_ASSERT_EQUAL(rdmaxfer_notif_send(p, 7, NULL, 0), 0);
		/* the client's send completes on its own CQ */
		rdmaxfer_progress(a);
		if (epoll_wait(ep, &ev, 1, SLEEP_MS) == 0)
			lost++;
		while (rdmaxfer_get_notifs(srv, &n, 1) > 0)
			got++;
		rdmaxfer_progress(a);
	}
	while (got < 50 && rdmaxfer_wait_notifs(srv, &n, 1, 2000) > 0)
		got++;
	CU_ASSERT_EQUAL(lost, 0);
	CU_ASSERT_EQUAL(got, 50);
	close(ep);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(a);
}

/* ------------------------------------------- the fd's cost, measured */

#define LAT_N		1000

/*
 * 2 B WRITE, post to completion, LAT_N times: spinning on test() against
 * arming and sleeping in epoll on the fd.  Printed as one ratio of one
 * run (a measure, not a pass/fail bound: TCG timing); it asserts only
 * that both ways complete every WRITE.
 */
static void test_lat_ratio(void)
{
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p, *sp;
	struct rdmaxfer_req *req;
	struct epoll_event ev;
	double t0, busy, fd;
	uint8_t *two = cli_buf + 256;
	int i, ret, ep, bad = 0;

	CU_ASSERT_EQUAL_FATAL(client(&a, &p, &sp), 0);
	two[0] = 1;
	two[1] = 2;
	req = prep(p, RDMAXFER_OP_WRITE, two, 2, 5 * MiB);
	CU_ASSERT_FATAL(req != NULL);
	ep = app_epoll(a, -1);
	CU_ASSERT_FATAL(ep >= 0);
	/* warm: the registration, the first completion */
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	t0 = now_s();
	for (i = 0; i < LAT_N; i++) {
		if (rdmaxfer_req_post(req))
			bad++;
		while ((ret = rdmaxfer_req_test(req)) == -EINPROGRESS)
			;
		bad += ret != 0;
	}
	busy = (now_s() - t0) / LAT_N * 1e6;
	t0 = now_s();
	for (i = 0; i < LAT_N; i++) {
		while (rdmaxfer_agent_arm(a) == -EAGAIN)
			rdmaxfer_progress(a);
		if (rdmaxfer_req_post(req))
			bad++;
		while ((ret = rdmaxfer_req_test(req)) == -EINPROGRESS) {
			if (rdmaxfer_agent_arm(a) == -EAGAIN)
				continue;
			if (epoll_wait(ep, &ev, 1, SLEEP_MS) == 0) {
				bad++;
				break;
			}
		}
		bad += ret != 0;
	}
	fd = (now_s() - t0) / LAT_N * 1e6;
	printf("# write 2 B post to completion: busy %.1f us, epoll on the fd %.1f us, ratio %.2f\n",
	       busy, fd, fd / busy);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(srv_buf[5 * MiB + 1], 2);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	close(ep);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(a);
}

/* --------------------------------------------------------- callbacks */

struct chain {
	int calls, status, reposts;
	pthread_t thread;
};

/* reposts its request from the callback until reposts run out */
static void chain_cb(void *user, struct rdmaxfer_req *req, int status)
{
	struct chain *c = user;

	c->calls++;
	c->thread = pthread_self();
	if (status)
		c->status = status;
	if (c->reposts > 0) {
		c->reposts--;
		if (rdmaxfer_req_post(req))
			c->status = -999;
	}
}

static void test_callbacks(void)
{
	struct rdmaxfer_agent *a, *ta;
	struct rdmaxfer_peer *p, *sp, *tp;
	struct rdmaxfer_req *req;
	struct chain c = { .reposts = 9 };
	uint8_t *buf = cli_buf + 512;
	double end;

	CU_ASSERT_EQUAL_FATAL(client(&a, &p, &sp), 0);
	req = prep(p, RDMAXFER_OP_READ, buf, 64, 0);
	CU_ASSERT_FATAL(req != NULL);
	CU_ASSERT_EQUAL(rdmaxfer_req_set_cb(NULL, chain_cb, &c), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_req_set_cb(req, chain_cb, &c), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_set_cb(req, chain_cb, &c), -EBUSY);
	/* ten completions, each reposted from its callback but the last */
	end = now_s() + WAIT_MS / 1000.0;
	while (c.calls < 10 && now_s() < end)
		rdmaxfer_progress(a);
	CU_ASSERT_EQUAL(c.calls, 10);
	CU_ASSERT_EQUAL(c.status, 0);
	CU_ASSERT(pthread_equal(c.thread, pthread_self()));
	/* wait() also runs it, once per completion */
	c.reposts = 0;
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(c.calls, 11);
	/* none after it is taken away */
	CU_ASSERT_EQUAL(rdmaxfer_req_set_cb(req, NULL, NULL), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(c.calls, 11);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);

	/* thread mode: the progress thread calls it, unasked */
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_THREAD, 1, &ta), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_connect(ta, addr, srv_port, 10000,
					       &tp), 0);
	rdmaxfer_peer_destroy(sp);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_accept(srv, 10000, &sp), 0);
	req = prep(tp, RDMAXFER_OP_READ, buf, 64, 0);
	CU_ASSERT_FATAL(req != NULL);
	memset(&c, 0, sizeof(c));
	c.reposts = 4;
	CU_ASSERT_EQUAL(rdmaxfer_req_set_cb(req, chain_cb, &c), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	end = now_s() + WAIT_MS / 1000.0;
	while (__atomic_load_n(&c.calls, __ATOMIC_ACQUIRE) < 5 &&
	       now_s() < end)
		usleep(1000);
	CU_ASSERT_EQUAL(__atomic_load_n(&c.calls, __ATOMIC_ACQUIRE), 5);
	CU_ASSERT_EQUAL(c.status, 0);
	CU_ASSERT(!pthread_equal(c.thread, pthread_self()));
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	rdmaxfer_agent_destroy(ta);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(a);
}

/* -------------------------------------------------------- wait_any */

static void test_wait_any(void)
{
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p, *sp;
	struct rdmaxfer_req *r[3];
	unsigned int idx = 99, seen = 0;
	uint8_t *buf = aligned_alloc(4096, 4 * MiB);
	int i, k;

	CU_ASSERT_FATAL(buf != NULL);
	CU_ASSERT_EQUAL_FATAL(client(&a, &p, &sp), 0);
	fill(srv_buf + 4 * MiB, 4 * MiB, 5);
	r[0] = prep(p, RDMAXFER_OP_READ, buf, 2 * MiB, 4 * MiB);
	r[1] = prep(p, RDMAXFER_OP_READ, buf + 2 * MiB, 64, 6 * MiB);
	r[2] = prep(p, RDMAXFER_OP_READ, buf + 3 * MiB, 1 * MiB, 7 * MiB);
	CU_ASSERT_FATAL(r[0] && r[1] && r[2]);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait_any(NULL, 3, 0, &idx), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait_any(r, 0, 0, &idx), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait_any(r, 3, 0, NULL), -EINVAL);
	/* never posted: at once, as test() says */
	CU_ASSERT_EQUAL(rdmaxfer_req_wait_any(r, 3, 1000, &idx), -EALREADY);
	CU_ASSERT_EQUAL(idx, 0);
	for (i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(rdmaxfer_req_post(r[i]), 0);
	/* each completes once: wait for any, take it out, again */
	for (k = 0; k < 3; k++) {
		struct rdmaxfer_req *left[3];
		unsigned int map[3], nl = 0;

		for (i = 0; i < 3; i++)
			if (!(seen & (1U << i))) {
				map[nl] = i;
				left[nl++] = r[i];
			}
		idx = 99;
		CU_ASSERT_EQUAL(rdmaxfer_req_wait_any(left, nl, WAIT_MS, &idx),
				0);
		CU_ASSERT_FATAL(idx < nl);
		CU_ASSERT_NOT_EQUAL(rdmaxfer_req_test(left[idx]),
				    -EINPROGRESS);
		seen |= 1U << map[idx];
	}
	CU_ASSERT_EQUAL(seen, 7);
	CU_ASSERT_EQUAL(first_bad(buf, 2 * MiB, 5), 2 * MiB);
	for (i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(rdmaxfer_req_free(r[i]), 0);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(a);
	free(buf);
}

/* ---------------------------------------------------------- atomics */

static void test_atomics(void)
{
	static const enum rdmaxfer_op none[] = {
		RDMAXFER_OP_SWAP, RDMAXFER_OP_AND, RDMAXFER_OP_OR,
		RDMAXFER_OP_XOR,
	};
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p, *sp;
	struct rdmaxfer_req *req = NULL;
	struct rdmaxfer_desc d;
	uint64_t *word = (uint64_t *)(srv_buf + 8 * MiB);
	uint64_t *result = (uint64_t *)(cli_buf + 1024);
	unsigned int i;

	CU_ASSERT_EQUAL_FATAL(client(&a, &p, &sp), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 8 * MiB, 8, &d), 0);
	*word = 40;
	CU_ASSERT_EQUAL(rdmaxfer_atomic_supported(a, RDMAXFER_OP_FADD), 0);
	CU_ASSERT_EQUAL(rdmaxfer_atomic_supported(a, RDMAXFER_OP_CSWAP), 0);
	CU_ASSERT_EQUAL(rdmaxfer_atomic_supported(a, RDMAXFER_OP_WRITE),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_atomic_supported(NULL, RDMAXFER_OP_FADD),
			-EINVAL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_atomic_prepare(p, RDMAXFER_OP_FADD, &d,
						      0, 2, 0, result, &req),
			      0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(*result, 40);
	CU_ASSERT_EQUAL(*word, 42);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	/* a compare that fails leaves the word; one that matches swaps */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_atomic_prepare(p, RDMAXFER_OP_CSWAP, &d,
						      0, 41, 7, result, &req),
			      0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(*result, 42);
	CU_ASSERT_EQUAL(*word, 42);
	CU_ASSERT_EQUAL(rdmaxfer_atomic_set(req, 42, 7), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(*result, 42);
	CU_ASSERT_EQUAL(*word, 7);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	/* what verbs has no operation for: refused cleanly, word intact */
	for (i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		req = NULL;
		CU_ASSERT_EQUAL(rdmaxfer_atomic_supported(a, none[i]),
				-EOPNOTSUPP);
		CU_ASSERT_EQUAL(rdmaxfer_atomic_prepare(p, none[i], &d, 0,
							0xff, 0, result,
							&req),
				-EOPNOTSUPP);
		CU_ASSERT_PTR_NULL(req);
	}
	CU_ASSERT_EQUAL(rdmaxfer_atomic_prepare(p, (enum rdmaxfer_op)99, &d,
						0, 1, 0, result, &req),
			-EINVAL);
	CU_ASSERT_EQUAL(*word, 7);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(a);
}

static const struct rc_test_case cases[] = {
	{ "idle_wakeups", test_idle },
	{ "invalidate_while_blocked", test_invalidate_while_blocked },
	{ "epoll_loop", test_epoll_loop },
	{ "post_while_sleeping", test_post_while_sleeping },
	{ "thread_mode_fd", test_thread_fd },
	{ "arm_cycles", test_arm_cycles },
	{ "lat_ratio", test_lat_ratio },
	{ "callbacks", test_callbacks },
	{ "wait_any", test_wait_any },
	{ "atomics", test_atomics },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	addr = rxe_addr_or_skip();
	rc_add_suite("rdmaxfer_efd", suite_init, suite_cleanup, cases);
	return rc_test_main(argc, argv);
}
