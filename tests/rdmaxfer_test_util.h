/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmaxfer_test_util.h - helpers shared by the rdmaxfer transfer tests
 * (test_rdmaxfer.c, one guest; test_rdmaxfer_2host.c, two guests): the
 * clock, the data pattern, agent creation and a synchronous transfer.
 * The includer defines WAIT_MS, the bound of every wait.
 */
#ifndef RDMAXFER_TEST_UTIL_H
#define RDMAXFER_TEST_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "rdmaxfer.h"
#include "rc_test.h"

#ifndef WAIT_MS
#error "define WAIT_MS before including rdmaxfer_test_util.h"
#endif

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
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

static inline int new_agent(enum rdmaxfer_progress_mode mode, uint32_t qps,
			    struct rdmaxfer_agent **ap)
{
	struct rdmaxfer_agent_attr attr;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = mode;
	attr.qps_per_peer = qps;
	return rdmaxfer_agent_create(&attr, ap);
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

static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#endif /* RDMAXFER_TEST_UTIL_H */
