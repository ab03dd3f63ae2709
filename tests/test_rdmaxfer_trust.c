// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_trust.c - what an agent takes a peer's word for, between
 * two agents over rxe (VM suite "hostile"):
 *
 *  - a transfer over descriptors of 2^62 bytes, or of 2^32 pieces, or
 *    whose lengths add up past 64 bits, is refused before anything is
 *    allocated (-ERANGE, -E2BIG, -EOVERFLOW); once its 32-bit count of
 *    work requests wrapped, the request was allocated for none and filled
 *    past its end.
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

static const struct rc_test_case cases[] = {
	{ "prepare_huge", test_prepare_huge },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	addr = rxe_addr_or_skip();
	signal(SIGPIPE, SIG_IGN);
	rc_add_suite("trust", NULL, NULL, cases);
	return rc_test_main(argc, argv);
}
