// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_exports.c - the exports-list lookup on the host.
 *
 * rx_check_remote() answers "does [addr, addr + len) lie inside one
 * exported descriptor of this rkey" with one binary search over a list
 * sorted by (rkey, addr) and a running maximum of the ends.  Overlapping,
 * nested and adjacent entries are where such a search goes wrong, so it is
 * compared with a brute-force scan over many random lists and queries,
 * and the edges are checked one by one: adjacent entries are not one,
 * ends at the top of the address space, wrapping queries, a failed
 * replace keeping the old list.  Built with the library's own exports.c
 * (no device needed).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rc_test.h"

static struct rdmaxfer_agent agent;
static struct rdmaxfer_peer peer;

static int suite_init(void)
{
	pthread_mutex_init(&agent.lock, NULL);
	peer.agent = &agent;
	return 0;
}

static int suite_cleanup(void)
{
	rx_exports_free(&peer);
	pthread_mutex_destroy(&agent.lock);
	return 0;
}

static int check(uint64_t addr, uint64_t len, uint32_t rkey)
{
	int ret;

	pthread_mutex_lock(&agent.lock);
	ret = rx_check_remote(&peer, addr, len, rkey);
	pthread_mutex_unlock(&agent.lock);
	return ret;
}

static struct rdmaxfer_desc desc(uint64_t addr, uint64_t len, uint32_t rkey)
{
	struct rdmaxfer_desc d = { addr, len, rkey, RDMAXFER_MEM_HOST };

	return d;
}

/* The list as given, scanned: the answer rx_check_remote() must give. */
static bool oracle(const struct rdmaxfer_desc *d, size_t n, uint64_t addr,
		   uint64_t len, uint32_t rkey)
{
	size_t i;

	if (!n)
		return true;
	for (i = 0; i < n; i++)
		if (d[i].rkey == rkey && d[i].addr <= addr &&
		    addr + len <= d[i].addr + d[i].len)
			return true;
	return false;
}

static void test_random_lists(void)
{
	struct rdmaxfer_desc d[24];
	unsigned long queries = 0, inside = 0, bad = 0;
	int round, q;
	size_t n, i;

	srand48(9);
	for (round = 0; round < 3000; round++) {
		n = (size_t)(lrand48() % 25);
		for (i = 0; i < n; i++)
			d[i] = desc((uint64_t)(lrand48() % 2000),
				    1 + (uint64_t)(lrand48() % (round % 3 ?
								300 : 1500)),
				    1 + (uint32_t)(lrand48() % 3));
		CU_ASSERT_EQUAL_FATAL(rx_set_exports(&peer, d, n), 0);
		for (q = 0; q < 200; q++) {
			uint64_t a = (uint64_t)(lrand48() % 2400);
			uint64_t l = 1 + (uint64_t)(lrand48() % 400);
			uint32_t k = (uint32_t)(lrand48() % 4);
			bool want = oracle(d, n, a, l, k);
			int got = check(a, l, k);

			queries++;
			inside += want;
			if ((got == 0) != want || (got && got != -ERANGE)) {
				if (!bad++)
					rc_diag("round %d: [%llu, +%llu) key %u: "
						"%d, expected %s", round,
						(unsigned long long)a,
						(unsigned long long)l, k, got,
						want ? "inside" : "-ERANGE");
			}
		}
	}
	rc_diag("%lu queries, %lu inside an export", queries, inside);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(inside > queries / 10 && inside < queries - queries / 10);
}

static void test_edges(void)
{
	const uint64_t top = UINT64_MAX - 4095;
	struct rdmaxfer_desc d[4];

	/* adjacent entries of one key are two, not one */
	d[0] = desc(0x1000, 0x1000, 5);
	d[1] = desc(0x2000, 0x1000, 5);
	/* nested: a small entry inside a large one, which must still be
	 * found past the small one's end */
	d[2] = desc(0x10000, 0x10000, 6);
	d[3] = desc(0x10100, 0x10, 6);
	CU_ASSERT_EQUAL_FATAL(rx_set_exports(&peer, d, 4), 0);
	CU_ASSERT_EQUAL(check(0x1000, 0x1000, 5), 0);
	CU_ASSERT_EQUAL(check(0x2fff, 1, 5), 0);
	CU_ASSERT_EQUAL(check(0x1f00, 0x200, 5), -ERANGE);
	CU_ASSERT_EQUAL(check(0x0fff, 2, 5), -ERANGE);
	CU_ASSERT_EQUAL(check(0x3000, 1, 5), -ERANGE);
	CU_ASSERT_EQUAL(check(0x1000, 0x10, 6), -ERANGE);	/* other key */
	CU_ASSERT_EQUAL(check(0x10200, 0x8000, 6), 0);
	CU_ASSERT_EQUAL(check(0x10100, 0x10, 6), 0);
	CU_ASSERT_EQUAL(check(0x1fff0, 0x20, 6), -ERANGE);
	CU_ASSERT_EQUAL(check(0x1000, 0x10, 0), -ERANGE);	/* below all */
	CU_ASSERT_EQUAL(check(0x1000, 0x10, 7), -ERANGE);	/* above all */

	/* the top of the address space, and queries that wrap */
	d[0] = desc(top, 4095, 1);	/* ends at UINT64_MAX */
	CU_ASSERT_EQUAL_FATAL(rx_set_exports(&peer, d, 1), 0);
	CU_ASSERT_EQUAL(check(top, 4095, 1), 0);
	CU_ASSERT_EQUAL(check(UINT64_MAX - 8, 8, 1), 0);
	CU_ASSERT_EQUAL(check(UINT64_MAX - 8, 16, 1), -ERANGE);
	CU_ASSERT_EQUAL(check(top + 8, UINT64_MAX, 1), -ERANGE);
}

static void test_replace_and_errors(void)
{
	struct rdmaxfer_desc d[2] = { desc(4096, 4096, 1), desc(0, 10, 2) };
	struct rdmaxfer_desc bad;

	CU_ASSERT_EQUAL_FATAL(rx_set_exports(&peer, d, 1), 0);
	CU_ASSERT_EQUAL(check(4096, 8, 1), 0);
	CU_ASSERT_EQUAL(check(0, 8, 2), -ERANGE);
	/* refused replacements keep the list */
	bad = desc(0, 0, 1);
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(&peer, &bad, 1), -ERANGE);
	bad = desc(UINT64_MAX - 10, 20, 1);
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(&peer, &bad, 1), -ERANGE);
	bad = desc(0, 10, 1);
	bad.kind = 1000;
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(&peer, &bad, 1), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(&peer, NULL, 1), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(NULL, d, 1), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(&peer, d,
				RDMAXFER_MD_MAX_DESCS + 1), -EINVAL);
	CU_ASSERT_EQUAL(check(4096, 8, 1), 0);
	CU_ASSERT_EQUAL(check(0, 8, 2), -ERANGE);
	/* a replacement replaces */
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(&peer, d, 2), 0);
	CU_ASSERT_EQUAL(check(0, 8, 2), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(&peer, d + 1, 1), 0);
	CU_ASSERT_EQUAL(check(4096, 8, 1), -ERANGE);
	/* cleared: no list, everything passes this check */
	CU_ASSERT_EQUAL(rdmaxfer_peer_set_exports(&peer, NULL, 0), 0);
	CU_ASSERT_EQUAL(peer.exports.n, 0);
	CU_ASSERT_EQUAL(check(1ULL << 40, 8, 99), 0);
}

static const struct rc_test_case cases[] = {
	{ "random_lists_vs_scan", test_random_lists },
	{ "edges", test_edges },
	{ "replace_and_errors", test_replace_and_errors },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	rc_add_suite("exports", suite_init, suite_cleanup, cases);
	return rc_test_main(argc, argv);
}
