/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmaxfer_test_util.h - helpers shared by the rdmaxfer transfer tests
 * (test_rdmaxfer.c, one guest; test_rdmaxfer_2host.c, two guests): the
 * clock, the data pattern, the buffer sizes, agent creation, a synchronous
 * transfer, and the checks both programs run alike (cache integration,
 * concurrent fetch-and-add, a refused WRITE and the peer's recovery).
 * The includer defines WAIT_MS, the bound of every wait.
 */
#ifndef RDMAXFER_TEST_UTIL_H
#define RDMAXFER_TEST_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdmaxfer.h"
#include "rc_test.h"

/* Both programs: the server's registered buffer and the client's. */
#define MiB		(1024UL * 1024)
#define SRV_LEN		(24 * MiB)
#define CLI_LEN		(24 * MiB)

#ifndef WAIT_MS
#error "define WAIT_MS before including rdmaxfer_test_util.h"
#endif

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The guest's RoCE address ($RXE_ADDR, set by the VM harness).  Skips
 * the whole program, saying why, where it is not set or where no agent
 * can be made on the device.
 */
static inline const char *rxe_addr_or_skip(void)
{
	const char *a = getenv("RXE_ADDR");
	struct rdmaxfer_agent *probe;
	int ret;

	if (!a || !*a)
		rc_skip_all("RXE_ADDR not set: needs the VM harness (rxe)");
	ret = rdmaxfer_agent_create(NULL, &probe);
	if (ret)
		rc_skip_all("no usable RDMA device: %s", rdmaxfer_strerror(ret));
	rdmaxfer_agent_destroy(probe);
	return a;
}

/* Byte i of a range filled with seed: position-dependent, so shifted or
 * truncated copies show. */
static inline uint8_t pat(size_t i, uint32_t seed)
{
	return (uint8_t)((i * 131 + seed * 7 + (i >> 9)) ^ seed);
}

static inline void fill(uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pat(i, seed);
}

/* Index of the first byte of p that is not pattern seed's, or len. */
static inline size_t first_bad(const uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pat(i, seed))
			return i;
	return len;
}

static inline int new_agent(enum rdmaxfer_progress_mode mode, uint32_t qps,
			    struct rdmaxfer_agent **ap)
{
	struct rdmaxfer_agent_attr attr;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = mode;
	attr.qps_per_peer = qps;
	return rdmaxfer_agent_create(&attr, ap);
}

/*
 * Two agents made with attr: *srv listening on addr, *cli connected to
 * it; the connection's two ends in *cp (client) and *sp (server).
 */
static inline int new_agent_pair(const struct rdmaxfer_agent_attr *attr,
				 const char *addr, struct rdmaxfer_agent **srv,
				 struct rdmaxfer_agent **cli,
				 struct rdmaxfer_peer **cp,
				 struct rdmaxfer_peer **sp)
{
	uint16_t port;

	if (rdmaxfer_agent_create(attr, srv) ||
	    rdmaxfer_agent_create(attr, cli) ||
	    rdmaxfer_listen(*srv, addr, 0) ||
	    rdmaxfer_listen_port(*srv, &port) ||
	    rdmaxfer_connect(*cli, addr, port, 10000, cp) ||
	    rdmaxfer_accept(*srv, 10000, sp))
		return -1;
	return 0;
}

/* Prepare, post and wait for one transfer (n pairs), then free it. */
static inline int xfer_sync(struct rdmaxfer_peer *peer, enum rdmaxfer_op op,
			    const struct rdmaxfer_iov *iov,
			    const struct rdmaxfer_desc *d, size_t n,
			    const struct rdmaxfer_xfer_notif *notif)
{
	struct rdmaxfer_req *req;
	int ret;

	ret = rdmaxfer_xfer_prepare(peer, op, iov, n, d, n, notif, &req);
	if (ret)
		return ret;
	ret = rdmaxfer_req_post(req);
	if (!ret)
		ret = rdmaxfer_req_wait(req, WAIT_MS);
	if (ret)
		rc_diag("transfer: %d (%s)", ret, rdmaxfer_req_strerror(req));
	rdmaxfer_req_free(req);
	return ret;
}

/*
 * The cache-integration check, on agent a over peer: a WRITE of the two
 * pairs iov -> d registers each pair at most once; 30 reposts of the same
 * request register nothing more (a repost keeps the entries it holds while
 * regcache_entry_valid() says they are, without a lookup); a second
 * request over the same buffers registers nothing either: its first post
 * finds both in the cache.  monitor names the agent's cache monitor in
 * the diagnostic.
 */
static inline void check_cache_register_once(struct rdmaxfer_agent *a,
					     struct rdmaxfer_peer *peer,
					     const char *monitor,
					     const struct rdmaxfer_iov *iov,
					     const struct rdmaxfer_desc *d)
{
	struct regcache_stats s0, s1, sr, s2;
	struct rdmaxfer_req *req;
	int i;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_cache_stats(a, &s0), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(peer, RDMAXFER_OP_WRITE,
						    iov, 2, d, 2, NULL, &req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(rdmaxfer_agent_cache_stats(a, &s1), 0);
	CU_ASSERT(s1.registrations - s0.registrations >= 1);
	CU_ASSERT(s1.registrations - s0.registrations <= 2);
	for (i = 0; i < 30; i++) {
		CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	}
	rdmaxfer_req_free(req);
	CU_ASSERT_EQUAL(rdmaxfer_agent_cache_stats(a, &sr), 0);
	/* a second request over the same buffers: still no registration */
	CU_ASSERT_EQUAL(xfer_sync(peer, RDMAXFER_OP_WRITE, iov, d, 2, NULL), 0);
	CU_ASSERT_EQUAL(rdmaxfer_agent_cache_stats(a, &s2), 0);
	rc_diag("monitor %s: registrations %llu -> %llu -> %llu -> %llu, "
		"hits +%llu over 30 reposts, +%llu for a new request", monitor,
		(unsigned long long)s0.registrations,
		(unsigned long long)s1.registrations,
		(unsigned long long)sr.registrations,
		(unsigned long long)s2.registrations,
		(unsigned long long)(sr.hits - s1.hits),
		(unsigned long long)(s2.hits - sr.hits));
	CU_ASSERT_EQUAL(sr.registrations, s1.registrations);
	CU_ASSERT_EQUAL(s2.registrations, s1.registrations);
	CU_ASSERT(s2.hits - sr.hits >= 2);
}

/* The 2 MiB source buffer of the cache check, or NULL when agent a runs
 * without a cache monitor: every use registers, the case is skipped.
 * info receives the agent's description. */
static inline uint8_t *cache_check_buf(struct rdmaxfer_agent *a,
				       struct rdmaxfer_agent_info *info)
{
	uint8_t *buf = aligned_alloc(4096, 2 * MiB);

	CU_ASSERT_FATAL(buf != NULL);
	rdmaxfer_agent_query(a, info);
	if (!strcmp(info->cache_monitor, "none")) {
		rc_skip("cache monitor is \"none\": every use registers");
		free(buf);
		return NULL;
	}
	return buf;
}

/* m fetch-and-adds with the prepared request req (result word res), each
 * old value into olds, then free req.  Stops at the first error. */
static inline int fadd_run(struct rdmaxfer_req *req, const uint64_t *res,
			   uint64_t *olds, int m)
{
	int ret = 0, i;

	for (i = 0; i < m; i++) {
		ret = rdmaxfer_req_post(req);
		if (!ret)
			ret = rdmaxfer_req_wait(req, WAIT_MS);
		if (ret)
			break;
		olds[i] = *res;
	}
	rdmaxfer_req_free(req);
	return ret;
}

/* Prepare and post one WRITE (iov -> bad) the other side must refuse and
 * wait for it; the request goes to *reqp, its status is returned. */
static inline int post_refused_write(struct rdmaxfer_peer *peer,
				     const struct rdmaxfer_iov *iov,
				     const struct rdmaxfer_desc *bad,
				     struct rdmaxfer_req **reqp)
{
	double t0 = now_s();
	int ret;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(peer, RDMAXFER_OP_WRITE,
						    iov, 1, bad, 1, NULL, reqp), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post(*reqp), 0);
	ret = rdmaxfer_req_wait(*reqp, WAIT_MS);
	rc_diag("bad request: %d %s (%s) after %.3f s", ret,
		rdmaxfer_strerror(ret), rdmaxfer_req_strerror(*reqp),
		now_s() - t0);
	return ret;
}

/* After a refused request: the failed peer is out of CONNECTED and
 * refuses work until reconnected; reconnect it, then free req. */
static inline void check_refused_then_recover(struct rdmaxfer_peer *peer,
					      struct rdmaxfer_req *req)
{
	CU_ASSERT_NOT_EQUAL(rdmaxfer_peer_state(peer), RDMAXFER_PEER_CONNECTED);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), -ENOTCONN);
	CU_ASSERT_EQUAL(rdmaxfer_peer_reconnect(peer, 10000), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_peer_state(peer), RDMAXFER_PEER_CONNECTED);
	rdmaxfer_req_free(req);
}

static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The n old values the fetch-and-adds returned (sorted in place) are
 * 0 .. n-1, each exactly once: every add was atomic. */
static inline void check_permutation(uint64_t *all, size_t n)
{
	size_t j;

	qsort(all, n, sizeof(*all), cmp_u64);
	for (j = 0; j < n; j++) {
		if (all[j] != (uint64_t)j) {
			CU_FAIL("fetched values are not a permutation");
			break;
		}
	}
}

#endif /* RDMAXFER_TEST_UTIL_H */
