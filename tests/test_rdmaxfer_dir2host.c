// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_dir2host.c - two agents in two guests that find each
 * other by name through an etcd in guest A (the 2host pair, started by
 * tests/vm/suites/2host-server.sh): neither is told the other's address.
 *
 *   test_rdmaxfer_dir2host --a URL    guest A: publishes "host-a" with an
 *                                      exported buffer, connects by name
 *                                      to "host-b", writes its pattern
 *                                      there, checks B's pattern in its
 *                                      own buffer; exit status
 *   test_rdmaxfer_dir2host URL        guest B (TAP): the same from the
 *                                      other side, then the time to the
 *                                      first transfer by address and by
 *                                      name across the link
 *
 * Each side's buffer is written by the other one WRITE with a
 * notification, checked where it lands.  Every wait is bounded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmaxfer_directory.h"
#include "rc_test.h"

#define WAIT_MS 60000
#include "rdmaxfer_test_util.h"

#define LEN		(256 * 1024)
#define NOTIF_DONE	0x2d1e

static const char *url, *addr;

struct side {
	const char *me, *other;
	uint32_t seed_mine, seed_theirs;
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_directory *dir;
	struct rdmaxfer_peer *peer;		/* to the other, by name */
	uint8_t *buf, *src;
	struct rdmaxfer_desc mine;
};

static int side_open(struct side *s)
{
	struct rdmaxfer_directory_attr a;
	int ret;

	rdmaxfer_directory_attr_init(&a);
	a.endpoints = url;
	a.retry_ms = 120000;		/* guest A's etcd may still start */
	a.timeout_ms = 10000;
	a.flags = RDMAXFER_DIR_NO_ENV;
	s->buf = aligned_alloc(4096, LEN);
	s->src = aligned_alloc(4096, LEN);
	if (!s->buf || !s->src)
		return -ENOMEM;
	memset(s->buf, 0, LEN);
	ret = new_agent(RDMAXFER_PROGRESS_THREAD, 1, &s->agent);
	if (!ret)
		ret = rdmaxfer_listen(s->agent, addr, 0);
	if (!ret)
		ret = rdmaxfer_directory_open(&a, &s->dir);
	if (!ret)
		ret = rdmaxfer_directory_publish(s->dir, s->agent, s->me);
	if (!ret)
		ret = rdmaxfer_directory_export_mem(s->dir, s->me, s->buf, LEN,
						    RDMAXFER_ACCESS_REMOTE_WRITE,
						    &s->mine);
	return ret;
}

/* The other side by name, its one export from the directory, our pattern
 * written into it with a notification. */
static int side_write(struct side *s)
{
	struct rdmaxfer_xfer_notif n = { NOTIF_DONE };
	struct rdmaxfer_iov iov = { s->src, LEN };
	struct rdmaxfer_md *md = NULL;
	int ret;

	ret = rdmaxfer_connect_name(s->dir, s->agent, s->other, 2 * WAIT_MS,
				    &s->peer);
	if (ret) {
		fprintf(stderr, "connect by name to %s: %s\n", s->other,
			strerror(-ret));
		return ret;
	}
	/* its export, as the directory lists it (the export may follow the
	 * agent's own entry by a moment) */
	ret = rdmaxfer_directory_lookup(s->dir, s->other, 0, &md);
	while (!ret && md->ndescs == 0) {
		rdmaxfer_md_free(md);
		usleep(100000);
		ret = rdmaxfer_directory_lookup(s->dir, s->other, 0, &md);
	}
	if (ret)
		return ret;
	fill(s->src, LEN, s->seed_theirs);
	ret = md->descs[0].len == LEN ?
	      xfer_sync(s->peer, RDMAXFER_OP_WRITE, &iov, &md->descs[0], 1, &n) :
	      -ERANGE;
	rdmaxfer_md_free(md);
	return ret;
}

/* The other side's WRITE in our buffer, announced by its notification. */
static int side_check(struct side *s)
{
	struct rdmaxfer_notif nt;
	int ret;

	do {
		ret = rdmaxfer_wait_notifs(s->agent, &nt, 1, 2 * WAIT_MS);
	} while (ret == 1 && nt.value != NOTIF_DONE);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	if (first_bad(s->buf, LEN, s->seed_mine) != LEN)
		return -EIO;
	return 0;
}

static void side_close(struct side *s)
{
	if (s->peer)
		rdmaxfer_peer_destroy(s->peer);
	rdmaxfer_directory_close(s->dir);
	rdmaxfer_agent_destroy(s->agent);
	free(s->buf);
	free(s->src);
}

static int wait_leave(struct side *s, const char *name, int timeout_ms)
{
	double end = now_s() + timeout_ms / 1e3;
	struct rdmaxfer_dir_event ev;

	while (now_s() < end)
		if (rdmaxfer_directory_events(s->dir, &ev, 1, 1000) == 1 &&
		    ev.type == RDMAXFER_DIR_LEAVE && !strcmp(ev.name, name))
			return 0;
	return -ETIMEDOUT;
}

/* ---------------------------------------------------------- guest B */

static struct side b = {
	.me = "host-b", .other = "host-a", .seed_mine = 0xa, .seed_theirs = 0xb,
};

static void test_find_by_name(void)
{
	CU_ASSERT_EQUAL_FATAL(side_open(&b), 0);
	CU_ASSERT_EQUAL(side_write(&b), 0);
	CU_ASSERT_EQUAL(side_check(&b), 0);
}

static void test_list(void)
{
	struct rdmaxfer_dir_list *l = NULL;
	size_t i, found = 0;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_directory_list(b.dir, &l), 0);
	for (i = 0; i < l->n; i++)
		if (!strcmp(l->agents[i].name, "host-a") ||
		    !strcmp(l->agents[i].name, "host-b"))
			found += l->agents[i].md->ndescs == 1;
	CU_ASSERT_EQUAL(found, 2);
	rdmaxfer_directory_list_free(l);
}

static int cmp_d(const void *x, const void *y)
{
	double p = *(const double *)x, q = *(const double *)y;

	return p < q ? -1 : p > q;
}

/* From nothing to the first 4 KiB WRITE by address and by name, across
 * the link, interleaved; medians (reported, not asserted). */
static void test_time_to_first_transfer(void)
{
	int reps = (int)rc_env_long("RDMAXFER_TEST_DIR_REPS", 5, 1, 100), r;
	double *ta = calloc(reps, sizeof(double)), *tn = calloc(reps, sizeof(double));
	struct rdmaxfer_iov iov = { b.src, 4096 };
	struct rdmaxfer_md *md = NULL;
	struct rdmaxfer_desc d;

	CU_ASSERT_FATAL(ta && tn);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_directory_lookup(b.dir, "host-a", 0, &md), 0);
	CU_ASSERT_FATAL(md->ndescs == 1 && md->listening);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_desc_sub(&md->descs[0], 0, 4096, &d), 0);
	/* the two in turn, each first every other round */
	for (r = 0; r < 2 * reps; r++) {
		struct rdmaxfer_peer *p = NULL;
		bool by_name = (r + r / 2) % 2;
		double t0 = now_s();

		if (by_name) {
			CU_ASSERT_EQUAL_FATAL(rdmaxfer_connect_name(b.dir, b.agent,
					"host-a", WAIT_MS, &p), 0);
		} else {
			CU_ASSERT_EQUAL_FATAL(rdmaxfer_connect(b.agent, md->host,
					md->listen_port, WAIT_MS, &p), 0);
		}
		CU_ASSERT_EQUAL(xfer_sync(p, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL), 0);
		(by_name ? tn : ta)[r / 2] = now_s() - t0;
		rdmaxfer_peer_destroy(p);
	}
	qsort(ta, reps, sizeof(double), cmp_d);
	qsort(tn, reps, sizeof(double), cmp_d);
	rc_diag("two guests, time to first transfer, median of %d: by address %.2f ms, by name %.2f ms (%.2fx; directory open already)",
		reps, ta[reps / 2] * 1e3, tn[reps / 2] * 1e3,
		tn[reps / 2] / ta[reps / 2]);
	rdmaxfer_md_free(md);
	free(ta);
	free(tn);
}

static int b_fini(void)
{
	side_close(&b);
	return 0;
}

static const struct rc_test_case cases[] = {
	{ "find_each_other_by_name", test_find_by_name },
	{ "list_both", test_list },
	{ "time_to_first_transfer", test_time_to_first_transfer },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	struct side a = {
		.me = "host-a", .other = "host-b", .seed_mine = 0xb,
		.seed_theirs = 0xa,
	};
	int ret;

	addr = getenv("RXE_ADDR");
	if (argc == 3 && !strcmp(argv[1], "--a")) {
		if (!addr)
			return 2;
		url = argv[2];
		ret = side_open(&a);
		if (!ret)
			ret = side_write(&a);
		if (!ret)
			ret = side_check(&a);
		/* B measures against us after its checks: stay until it
		 * leaves the directory (bounded) */
		if (!ret)
			ret = wait_leave(&a, "host-b", 10 * WAIT_MS);
		if (ret)
			fprintf(stderr, "guest A: %s\n", strerror(-ret));
		side_close(&a);
		return ret ? 1 : 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s [--a] URL\n", argv[0]);
		return 2;
	}
	url = argv[1];
	rxe_addr_or_skip();
	rc_add_suite("rdmaxfer_dir2host", NULL, b_fini, cases);
	return rc_test_main(argc - 1, argv + 1);
}
