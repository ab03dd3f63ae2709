// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_single.c - agents made with RDMAXFER_AGENT_SINGLE_THREAD,
 * on a real RDMA device (rxe in the VM).
 *
 * The flag's whole effect is a lock not taken, so this program counts the
 * locks: it defines pthread_mutex_lock() itself, which the library's calls
 * reach before libc's (the executable comes first in the lookup scope),
 * counts the main thread's calls on one agent's lock, and hands every
 * call on to the next definition (libc's, or a sanitizer's).  The agent
 * lock is the first member of struct rdmaxfer_agent (internal.h), so its
 * address is the agent's; a layout change shows as a locked agent
 * counting nothing, which fails.  A locked agent must take its lock on
 * every post and test, a single-thread one never (the process-wide lock
 * of the device's async events, taken every RX_CM_POLL_EVERY tests, is
 * another); and the single-thread data path must do everything the
 * locked one does.  Skips (77) without $RXE_ADDR or an
 * RDMA device.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#define WAIT_MS		20000

#include "rdmaxfer_test_util.h"

static const char *addr;
static struct rdmaxfer_agent *srv;
static struct rdmaxfer_mem *srv_mem;
static uint8_t *srv_buf;
static uint16_t srv_port;

/* ------------------------------------------------ counting the locks */

static int (*next_lock)(pthread_mutex_t *m);
static __thread const void *watched;	/* the agent whose lock counts */
static __thread unsigned long nlocks;

int pthread_mutex_lock(pthread_mutex_t *m)
{
	int (*fn)(pthread_mutex_t *m) = __atomic_load_n(&next_lock,
							__ATOMIC_ACQUIRE);

	if (!fn) {
		fn = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT,
						       "pthread_mutex_lock");
		if (!fn)
			abort();
		__atomic_store_n(&next_lock, fn, __ATOMIC_RELEASE);
	}
	if (watched && (const void *)m == watched)
		nlocks++;
	return fn(m);
}

/* ------------------------------------------------------------ set-up */

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
	return rdmaxfer_mem_register(srv, srv_buf, SRV_LEN, RDMAXFER_MEM_HOST,
				     &srv_mem) ? 1 : 0;
}

static int suite_cleanup(void)
{
	rdmaxfer_agent_destroy(srv);
	free(srv_buf);
	return 0;
}

/* A caller-mode client with flags, connected to srv; *sp: srv's side. */
static int client(uint32_t flags, struct rdmaxfer_agent **a,
		  struct rdmaxfer_peer **p, struct rdmaxfer_peer **sp)
{
	struct rdmaxfer_agent_attr attr;
	int ret;

	rdmaxfer_agent_attr_init(&attr);
	attr.flags = flags;
	ret = rdmaxfer_agent_create(&attr, a);
	if (ret)
		return ret;
	ret = rdmaxfer_connect(*a, addr, srv_port, 10000, p);
	if (!ret)
		ret = rdmaxfer_accept(srv, 10000, sp);
	if (ret)
		rdmaxfer_agent_destroy(*a);
	return ret;
}

/* Test until req leaves -EINPROGRESS, at most WAIT_MS; *tests: calls. */
static int spin_test(struct rdmaxfer_req *req, unsigned long *tests)
{
	double end = now_s() + WAIT_MS / 1000.0;
	int ret;

	do {
		ret = rdmaxfer_req_test(req);
		if (tests)
			(*tests)++;
	} while (ret == -EINPROGRESS && now_s() < end);
	return ret;
}

/*
 * n reposts of one prepared 64 B READ on peer p of agent a, each spun on
 * test; the main thread's locks of a's lock over the posts and tests, and
 * the tests made.
 */
static int count_reads(struct rdmaxfer_agent *a, struct rdmaxfer_peer *p,
		       uint8_t *buf, int n, unsigned long *locks,
		       unsigned long *tests)
{
	struct rdmaxfer_iov iov = { buf, 64 };
	struct rdmaxfer_req *req;
	struct rdmaxfer_desc d;
	int i, ret;

	ret = rdmaxfer_mem_desc(srv_mem, 0, 64, &d);
	if (!ret)
		ret = rdmaxfer_xfer_prepare(p, RDMAXFER_OP_READ, &iov, 1, &d, 1,
					    NULL, &req);
	if (ret)
		return ret;
	/* the first post takes the registration: not counted */
	ret = rdmaxfer_req_post(req);
	if (!ret)
		ret = spin_test(req, NULL);
	*tests = 0;
	nlocks = 0;
	for (i = 0; i < n && !ret; i++) {
		watched = a;
		ret = rdmaxfer_req_post(req);
		if (!ret)
			ret = spin_test(req, tests);
		watched = NULL;
	}
	*locks = nlocks;
	rdmaxfer_req_free(req);
	return ret;
}

/* ------------------------------------------------------------- tests */

/*
 * The flag is refused with a progress thread (and a flag the library
 * does not know, always), reported where it is in effect, and takes the
 * agent lock out of post and test: a locked caller-mode agent takes it
 * at least once per post and once per test call, a single-thread one
 * not once.
 */
static void test_no_lock(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent_info info;
	struct rdmaxfer_agent *a, *b;
	struct rdmaxfer_peer *pa, *pb, *sa, *sb;
	unsigned long locks, tests;
	uint8_t *buf = aligned_alloc(4096, 4096);

	CU_ASSERT_FATAL(buf != NULL);
	rdmaxfer_agent_attr_init(&attr);
	attr.flags = RDMAXFER_AGENT_SINGLE_THREAD;
	attr.progress = RDMAXFER_PROGRESS_THREAD;
	CU_ASSERT_EQUAL(rdmaxfer_agent_create(&attr, &a), -EINVAL);
	/* a flag this library does not know is refused, not ignored */
	attr.progress = RDMAXFER_PROGRESS_CALLER;
	attr.flags = RDMAXFER_AGENT_SINGLE_THREAD | 1U << 31;
	CU_ASSERT_EQUAL(rdmaxfer_agent_create(&attr, &a), -EINVAL);
	attr.flags = 1U << 3;
	CU_ASSERT_EQUAL(rdmaxfer_agent_create(&attr, &a), -EINVAL);

	CU_ASSERT_EQUAL_FATAL(client(0, &a, &pa, &sa), 0);
	CU_ASSERT_EQUAL(rdmaxfer_agent_query(a, &info), 0);
	CU_ASSERT_FALSE(info.flags & RDMAXFER_AGENT_SINGLE_THREAD);
	CU_ASSERT_EQUAL(count_reads(a, pa, buf, 200, &locks, &tests), 0);
	rc_diag("locked agent: %lu locks for 200 posts and %lu tests", locks,
		tests);
	CU_ASSERT(locks >= 200 + tests);

	CU_ASSERT_EQUAL_FATAL(client(RDMAXFER_AGENT_SINGLE_THREAD, &b, &pb,
				     &sb), 0);
	CU_ASSERT_EQUAL(rdmaxfer_agent_query(b, &info), 0);
	CU_ASSERT(info.flags & RDMAXFER_AGENT_SINGLE_THREAD);
	CU_ASSERT_EQUAL(info.progress, RDMAXFER_PROGRESS_CALLER);
	CU_ASSERT_EQUAL(count_reads(b, pb, buf, 200, &locks, &tests), 0);
	rc_diag("single-thread agent: %lu locks for 200 posts and %lu tests",
		locks, tests);
	CU_ASSERT_EQUAL(locks, 0);

	rdmaxfer_agent_destroy(a);
	rdmaxfer_agent_destroy(b);
	rdmaxfer_peer_destroy(sa);
	rdmaxfer_peer_destroy(sb);
	free(buf);
}

/*
 * Without the lock, post and test must do all the locked ones do.  Every
 * repost of a 64 B READ brings the server's current bytes; a local buffer
 * unmapped and mapped again between posts gets a fresh registration (the
 * bytes land in the new pages); a request posted again before a test has
 * seen it complete is -EBUSY, every time; POST_MORE chains go out on the
 * next post; a refused rkey fails its request, seen by test, and the
 * peer, which refuses posts until it is reconnected.
 */
static void test_data_path(void)
{
	const size_t len = 2 * MiB;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p, *sp;
	struct rdmaxfer_req *req, *chain[4];
	struct rdmaxfer_desc d, bad;
	struct rdmaxfer_iov iov;
	int i, k, ret, busy = 0;
	uint8_t *buf;

	CU_ASSERT_EQUAL_FATAL(client(RDMAXFER_AGENT_SINGLE_THREAD, &a, &p,
				     &sp), 0);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(buf != MAP_FAILED);

	iov.addr = buf + 64;
	iov.len = 64;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 8192, 64, &d), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p, RDMAXFER_OP_READ, &iov,
						    1, &d, 1, NULL, &req), 0);
	for (i = 0; i < 300; i++) {
		memset(srv_buf + 8192, (uint8_t)i, 64);
		if (i % 100 == 50) {
			/* same addresses, new pages */
			CU_ASSERT_FATAL(munmap(buf, len) == 0);
			CU_ASSERT_FATAL(mmap(buf, len, PROT_READ | PROT_WRITE,
					     MAP_PRIVATE | MAP_ANONYMOUS |
					     MAP_FIXED, -1, 0) == buf);
		}
		memset(buf + 64, 0xee, 64);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post(req), 0);
		/* caller-mode progress: only test() can end it, so it is
		 * still in flight here */
		if (rdmaxfer_req_post(req) == -EBUSY)
			busy++;
		CU_ASSERT_EQUAL_FATAL(spin_test(req, NULL), 0);
		for (k = 0; k < 64; k++)
			if (buf[64 + k] != (uint8_t)i)
				break;
		if (k < 64) {
			CU_FAIL("READ did not bring the server's bytes");
			rc_diag("round %d byte %d: %#x", i, k, buf[64 + k]);
			break;
		}
	}
	rc_diag("%d READs, %d second posts refused", i, busy);
	CU_ASSERT_EQUAL(busy, i);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);

	/* four WRITEs, one doorbell: the last post rings it */
	for (k = 0; k < 4; k++) {
		iov.addr = buf + 4096 * k;
		iov.len = 4096;
		fill(iov.addr, 4096, 77 + k);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem,
							65536 + 4096 * k,
							4096, &d), 0);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p,
							    RDMAXFER_OP_WRITE,
							    &iov, 1, &d, 1,
							    NULL, &chain[k]),
				      0);
	}
	for (k = 0; k < 4; k++)
		CU_ASSERT_EQUAL(rdmaxfer_req_post_flags(chain[k], k < 3 ?
					RDMAXFER_POST_MORE : 0), 0);
	for (k = 0; k < 4; k++) {
		CU_ASSERT_EQUAL(spin_test(chain[k], NULL), 0);
		CU_ASSERT_EQUAL(first_bad(srv_buf + 65536 + 4096 * k, 4096,
					  77 + k), 4096);
		CU_ASSERT_EQUAL(rdmaxfer_req_free(chain[k]), 0);
	}

	/* a refused rkey, seen through test() */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 0, 4096, &bad), 0);
	bad.rkey ^= 0x5a5a00;
	iov.addr = buf;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(p, RDMAXFER_OP_READ, &iov,
						    1, &bad, 1, NULL, &req), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post(req), 0);
	ret = spin_test(req, NULL);
	CU_ASSERT(ret == -EACCES || ret == -EREMOTEIO);
	check_refused_then_recover(p, req);
	/* the server's side of the reconnected peer */
	rdmaxfer_peer_destroy(sp);
	sp = NULL;
	CU_ASSERT_EQUAL(rdmaxfer_accept(srv, 10000, &sp), 0);
	memset(srv_buf + 8192, 0x42, 64);
	iov.addr = buf + 64;
	iov.len = 64;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(srv_mem, 8192, 64, &d), 0);
	CU_ASSERT_EQUAL(xfer_sync(p, RDMAXFER_OP_READ, &iov, &d, 1, NULL), 0);
	CU_ASSERT(buf[64] == 0x42 && buf[127] == 0x42);

	rdmaxfer_agent_destroy(a);
	if (sp)
		rdmaxfer_peer_destroy(sp);
	munmap(buf, len);
}

static const struct rc_test_case cases[] = {
	{ "no_lock_on_post_and_test", test_no_lock },
	{ "data_path", test_data_path },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	addr = rxe_addr_or_skip();
	rc_add_suite("rdmaxfer_single", suite_init, suite_cleanup, cases);
	return rc_test_main(argc, argv);
}
