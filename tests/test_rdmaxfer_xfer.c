// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_xfer.c - the bounds of a prepared transfer on the host:
 * xfer_plan.c's checks, counts and work requests, the descriptor bounds
 * of the metadata parser (blob.c) and the exports list (exports.c).
 *
 * A descriptor of 2^62 bytes, or descriptors adding up to 2^32 pieces,
 * once wrapped the 32-bit count of work requests, and the request was
 * allocated for none and filled past its end.  Here every such length is
 * refused before anything is counted or allocated (-ERANGE, -EOVERFLOW,
 * -E2BIG, exactly at the bounds), striping is counted in closed form and
 * agrees with the one-piece-at-a-time count it replaced, and random
 * requests are built into arrays of exactly the size the plan asked for
 * (ASan sees an overrun) and checked work request by work request.  Then
 * a replay of the fuzzing corpus in corpus/xfer/ (grown by fuzz_xfer.c)
 * with the fuzzer's own checks (fuzz_xfer.h).  No device needed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_xfer.h"
#include "rc_test.h"

#ifndef CORPUS_DIR
#define CORPUS_DIR "corpus"
#endif

#define GiB	(1ULL << 30)

static uint8_t buf[4096];

static struct rdmaxfer_desc desc(uint64_t addr, uint64_t len)
{
	struct rdmaxfer_desc d = { addr, len, 7, RDMAXFER_MEM_HOST };

	return d;
}

/* check + count of n pairs of len bytes each (descriptors side by side)
 * on nqps QPs; the plan in *p */
static int plan_n(struct rx_xfer_plan *p, size_t n, uint64_t len,
		  unsigned int nqps, uint64_t maxmsg, bool notif,
		  enum rdmaxfer_op op)
{
	struct rdmaxfer_iov *l = calloc(n, sizeof(*l));
	struct rdmaxfer_desc *d = calloc(n, sizeof(*d));
	size_t i;
	int ret;

	CU_ASSERT_FATAL(l && d);
	for (i = 0; i < n; i++) {
		l[i].addr = buf;
		l[i].len = len;
		d[i] = desc(0x10000 + (uint64_t)(i % 64) * len, len);
	}
	ret = rx_xfer_plan_check(p, op, l, n, d, n, nqps, maxmsg, 64 * 1024,
				 notif);
	if (!ret)
		ret = rx_xfer_plan_count(p, l, n);
	free(l);
	free(d);
	return ret;
}

/* The reproduction: 2^62 bytes in one descriptor, 2^32 pieces
 * over many; each refused before a count exists. */
static void test_huge_lengths(void)
{
	struct rx_xfer_plan p;

	CU_ASSERT_EQUAL(plan_n(&p, 1, 1ULL << 62, 1, 0, false,
			       RDMAXFER_OP_WRITE), -ERANGE);
	CU_ASSERT_EQUAL(plan_n(&p, 4, 1ULL << 60, 1, 0, false,
			       RDMAXFER_OP_WRITE), -ERANGE);
	CU_ASSERT_EQUAL(plan_n(&p, 1, RDMAXFER_DESC_MAX_LEN + 1, 1, 0, false,
			       RDMAXFER_OP_READ), -ERANGE);
	/* the longest descriptor is fine, its 2^27 pieces are not */
	CU_ASSERT_EQUAL(plan_n(&p, 1, RDMAXFER_DESC_MAX_LEN, 1, 0, false,
			       RDMAXFER_OP_READ), -E2BIG);
	/* 32 x 2^57 bytes: 2^32 pieces of 1 GiB, on one QP and on 16 */
	CU_ASSERT_EQUAL(plan_n(&p, 32, RDMAXFER_DESC_MAX_LEN, 1, GiB, false,
			       RDMAXFER_OP_WRITE), -E2BIG);
	CU_ASSERT_EQUAL(plan_n(&p, 32, RDMAXFER_DESC_MAX_LEN, 16, GiB, true,
			       RDMAXFER_OP_WRITE), -E2BIG);
	/* 128 x 2^57 = 2^64: the sum itself does not fit */
	CU_ASSERT_EQUAL(plan_n(&p, 128, RDMAXFER_DESC_MAX_LEN, 1, 0, false,
			       RDMAXFER_OP_WRITE), -EOVERFLOW);
	/* more pairs than work requests allowed: refused on the count
	 * alone, before a pair is read */
	CU_ASSERT_EQUAL(rx_xfer_plan_check(&p, RDMAXFER_OP_READ,
					   (struct rdmaxfer_iov *)buf,
					   RDMAXFER_XFER_MAX_WRS + 1,
					   (struct rdmaxfer_desc *)buf,
					   RDMAXFER_XFER_MAX_WRS + 1, 1, 0, 0,
					   false), -E2BIG);
}

/* Exactly at RDMAXFER_XFER_MAX_WRS, and one over (a byte, or the
 * notification's own WR after READs). */
static void test_bound_exact(void)
{
	struct rx_xfer_plan p;

	CU_ASSERT_EQUAL(plan_n(&p, 1, 4096ULL * RDMAXFER_XFER_MAX_WRS, 1,
			       4096, false, RDMAXFER_OP_READ), 0);
	CU_ASSERT_EQUAL(p.nwr, RDMAXFER_XFER_MAX_WRS);
	CU_ASSERT_EQUAL(plan_n(&p, 1, 4096ULL * RDMAXFER_XFER_MAX_WRS + 1, 1,
			       4096, false, RDMAXFER_OP_READ), -E2BIG);
	CU_ASSERT_EQUAL(plan_n(&p, 1, 4096ULL * RDMAXFER_XFER_MAX_WRS, 1,
			       4096, true, RDMAXFER_OP_READ), -E2BIG);
	/* a WRITE carries the immediate on its last piece: no extra WR */
	CU_ASSERT_EQUAL(plan_n(&p, 1, 4096ULL * RDMAXFER_XFER_MAX_WRS, 1,
			       4096, true, RDMAXFER_OP_WRITE), 0);
	CU_ASSERT_EQUAL(p.nwr, RDMAXFER_XFER_MAX_WRS);
	/* 2^20 pairs of one byte each */
	CU_ASSERT_EQUAL(plan_n(&p, RDMAXFER_XFER_MAX_WRS, 1, 1, 0, false,
			       RDMAXFER_OP_WRITE), 0);
	CU_ASSERT_EQUAL(plan_n(&p, RDMAXFER_XFER_MAX_WRS, 1, 1, 0, true,
			       RDMAXFER_OP_READ), -E2BIG);
}

/* What every pair must be: the errors of rdmaxfer_xfer_prepare(3). */
static void test_bad_pairs(void)
{
	struct rdmaxfer_iov l = { buf, 64 };
	struct rdmaxfer_desc d = desc(0x10000, 64);
	struct rx_xfer_plan p;

	CU_ASSERT_EQUAL(rx_xfer_plan_check(&p, RDMAXFER_OP_WRITE, &l, 1, &d, 1,
					   1, 0, 0, false), 0);
	CU_ASSERT_EQUAL(rx_xfer_plan_check(&p, RDMAXFER_OP_FADD, &l, 1, &d, 1,
					   1, 0, 0, false), -EINVAL);
	CU_ASSERT_EQUAL(rx_xfer_plan_check(&p, RDMAXFER_OP_WRITE, &l, 1, &d, 0,
					   1, 0, 0, false), -EINVAL);
	CU_ASSERT_EQUAL(rx_xfer_plan_check(&p, RDMAXFER_OP_WRITE, &l, 1, &d, 1,
					   0, 0, 0, false), -EINVAL);
	d.len = 0;
	l.len = 0;
	CU_ASSERT_EQUAL(rx_xfer_plan_check(&p, RDMAXFER_OP_WRITE, &l, 1, &d, 1,
					   1, 0, 0, false), -ERANGE);
	d = desc(UINT64_MAX - 10, 64);
	l.len = 64;
	CU_ASSERT_EQUAL(rx_xfer_plan_check(&p, RDMAXFER_OP_WRITE, &l, 1, &d, 1,
					   1, 0, 0, false), -ERANGE);
	d = desc(0x10000, 64);
	d.kind = 77;
	CU_ASSERT_EQUAL(rx_xfer_plan_check(&p, RDMAXFER_OP_WRITE, &l, 1, &d, 1,
					   1, 0, 0, false), -EINVAL);
	d = desc(0x10000, 64);
	l.len = 63;
	CU_ASSERT_EQUAL(rx_xfer_plan_check(&p, RDMAXFER_OP_WRITE, &l, 1, &d, 1,
					   1, 0, 0, false), -EINVAL);
	/* a local range that wraps the address space */
	l.addr = (void *)(UINTPTR_MAX - 10);
	l.len = 64;
	CU_ASSERT_EQUAL(rx_xfer_plan_check(&p, RDMAXFER_OP_WRITE, &l, 1, &d, 1,
					   1, 0, 0, false), -EINVAL);
	l.addr = NULL;
	CU_ASSERT_EQUAL(rx_xfer_plan_check(&p, RDMAXFER_OP_WRITE, &l, 1, &d, 1,
					   1, 0, 0, false), -EINVAL);
}

static uint64_t rnd_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/*
 * Random small requests: the closed-form striped count against the
 * piece-by-piece round robin it replaced, and every request built into
 * arrays of exactly its size and checked (fuzz_xfer.h).
 */
static void test_random_builds(void)
{
	enum { ROUNDS = 3000, MAXN = 24 };
	struct rdmaxfer_xfer_notif xn = { .value = 99 };
	struct rdmaxfer_iov l[MAXN];
	struct rdmaxfer_desc d[MAXN];
	unsigned int round, bad = 0, striped = 0, big = 0;
	int ret;

	for (round = 0; round < ROUNDS && !bad; round++) {
		unsigned int nqps = 1 + rnd() % 16, q, rr = 0;
		uint64_t maxmsg = rnd() % 3 ? 1ULL << (rnd() % 20) : 0;
		uint64_t stripe = 1ULL << (rnd() % 20);
		size_t n = 1 + rnd() % MAXN, i;
		bool notif = rnd() & 1;
		enum rdmaxfer_op op = rnd() & 1 ? RDMAXFER_OP_WRITE :
					      RDMAXFER_OP_READ;
		uint32_t count[RX_MAX_QPS] = { 0 };
		struct rx_xfer_arrays a;
		struct rx_xfer_plan p;

		for (i = 0; i < n; i++) {
			l[i].addr = buf + rnd() % 64;
			l[i].len = 1 + rnd() % (rnd() & 1 ? 200000 : 5000);
			d[i] = desc(0x100000 + rnd() % 0x100000, l[i].len);
		}
		if (rx_xfer_plan_check(&p, op, l, n, d, n, nqps, maxmsg, stripe,
				       notif)) {
			bad++;
			break;
		}
		p.fixed_qp = (unsigned int)(rnd() % nqps);
		ret = rx_xfer_plan_count(&p, l, n);
		if (ret == -E2BIG) {
			/* 1-byte pieces of up to 24 x 200000 bytes */
			big++;
			continue;
		}
		if (ret) {
			bad++;
			break;
		}
		/* the old count: one piece at a time */
		for (i = 0; i < n; i++) {
			uint64_t k = (l[i].len + p.piece - 1) / p.piece;

			while (k--) {
				count[p.striped ? rr : p.fixed_qp]++;
				rr = (rr + 1) % nqps;
			}
		}
		if (p.chained && !p.merged)
			count[p.fixed_qp]++;
		for (q = 0; q < nqps; q++)
			if (count[q] != p.count[q])
				bad++;
		if (bad)
			rc_diag("count differs: %u QPs, striped %d", nqps,
				p.striped);
		striped += p.striped;
		if (p.nwr > FX_BUILD_MAX)
			continue;
		a.wrs = calloc(p.nwr, sizeof(*a.wrs));
		a.sges = calloc(p.nwr, sizeof(*a.sges));
		a.base_flags = calloc(p.nwr, sizeof(*a.base_flags));
		a.wr_local = calloc(p.nwr, sizeof(*a.wr_local));
		CU_ASSERT_FATAL(a.wrs && a.sges && a.base_flags && a.wr_local);
		rx_xfer_plan_build(&p, op, l, d, n, notif ? &xn : NULL, &a);
		if (fx_check_built(&p, op, l, d, n, notif, &a)) {
			rc_diag("round %u: built wrong (%u QPs, %zu pairs, "
				"piece %llu, striped %d, notif %d)", round,
				nqps, n, (unsigned long long)p.piece,
				p.striped, notif);
			bad++;
		}
		free(a.wrs);
		free(a.sges);
		free(a.base_flags);
		free(a.wr_local);
	}
	rc_diag("%u random requests, %u striped, %u over the bound, %u wrong",
		round, striped, big, bad);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(striped > ROUNDS / 10);
}

/* A peer's blob: descriptors longer than any registration, or empty, are
 * refused by the parser, as by the exports list. */
static void test_blob_and_exports_bounds(void)
{
	static const uint64_t lens[] = { 0, RDMAXFER_DESC_MAX_LEN + 1,
					 1ULL << 62, UINT64_MAX };
	struct rdmaxfer_md md = { 0 }, *out;
	struct rdmaxfer_desc d;
	uint8_t blob[RX_MD_HDR_LEN + RX_MD_DESC_LEN];
	size_t len, i;

	md.version = RDMAXFER_MD_VERSION;
	snprintf(md.name, sizeof(md.name), "x");
	snprintf(md.device, sizeof(md.device), "rxe0");
	md.ndescs = 1;
	md.descs = &d;
	d = desc(0, RDMAXFER_DESC_MAX_LEN);
	CU_ASSERT_EQUAL_FATAL(rx_md_encode(&md, blob, sizeof(blob), &len), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_md_parse(blob, len, &out), 0);
	CU_ASSERT_EQUAL(out->descs[0].len, RDMAXFER_DESC_MAX_LEN);
	rdmaxfer_md_free(out);
	CU_ASSERT_EQUAL(rx_set_exports(&fx_peer, &d, 1), 0);
	rx_exports_free(&fx_peer);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		d = desc(0, lens[i]);
		/* the encoder refuses what the parser would */
		CU_ASSERT_EQUAL(rx_md_encode(&md, blob, sizeof(blob), &len),
				-EINVAL);
		/* written by hand: the parser refuses it */
		memcpy(blob + RX_MD_HDR_LEN + 8, &lens[i], 8);
		CU_ASSERT_EQUAL(rdmaxfer_md_parse(blob, len, &out), -EINVAL);
		CU_ASSERT_EQUAL(rx_set_exports(&fx_peer, &d, 1), -ERANGE);
	}
}

/* corpus/xfer/: the name's prefix says what the plan must answer */
static void corpus_one(void *user, const char *name, const char *path,
		       const unsigned char *data, size_t len)
{
	static const struct { const char *prefix; int ret; } want[] = {
		{ "ok-", 0 }, { "e2big-", -E2BIG }, { "eoverflow-", -EOVERFLOW },
	};
	int *named = user, ret;
	size_t k;

	if (fx_check_xfer(data, len, &ret)) {
		CU_FAIL("corpus file broke the contract");
		rc_diag("%s", path);
	}
	for (k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		if (strncmp(name, want[k].prefix, strlen(want[k].prefix)))
			continue;
		(*named)++;
		if (ret != want[k].ret) {
			CU_FAIL("corpus file: unexpected answer");
			rc_diag("%s: %d", path, ret);
		}
	}
	if (!strncmp(name, "bad-", 4)) {
		(*named)++;
		if (!ret || ret == -E2BIG || ret == -EOVERFLOW) {
			CU_FAIL("bad corpus file accepted");
			rc_diag("%s: %d", path, ret);
		}
	}
}

static void test_corpus(void)
{
	int files, named = 0;

	files = rc_corpus_each(CORPUS_DIR "/xfer", corpus_one, &named);
	rc_diag("corpus xfer: %d files, %d with an expected answer", files,
		named);
	CU_ASSERT(files >= 10);
	CU_ASSERT(named >= 10);
}

static const struct rc_test_case cases[] = {
	{ "huge_lengths", test_huge_lengths },
	{ "bound_exact", test_bound_exact },
	{ "bad_pairs", test_bad_pairs },
	{ "random_builds", test_random_builds },
	{ "blob_and_exports_bounds", test_blob_and_exports_bounds },
	{ "corpus", test_corpus },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	fx_init();
	rc_add_suite("rdmaxfer_xfer", NULL, NULL, cases);
	return rc_test_main(argc, argv);
}
