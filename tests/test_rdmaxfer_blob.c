// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_blob.c - the metadata blob parser on the host.
 *
 * Blobs come from other machines, so the parser must turn every malformed
 * input into -EINVAL (or -EPROTO for another version) without reading out
 * of bounds: round trip, truncation at every length, every single-byte
 * corruption, version mismatch, random garbage, and a replay of the
 * fuzzing corpus (tests/corpus/blob/, grown by the libFuzzer harness
 * fuzz_blob.c), whose files must parse or fail cleanly.  Built with the
 * library's own blob.c; runs under any sanitizer the build adds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rc_test.h"

#ifndef CORPUS_DIR
#define CORPUS_DIR "corpus/blob"
#endif

static const struct rdmaxfer_desc descs[3] = {
	{ 0x7f0012345678ULL, 4096, 0x1234, RDMAXFER_MEM_HOST },
	{ 0x1000, 1, 0xffffffffU, RDMAXFER_MEM_HOST },
	{ 0xffffffff00000000ULL, 0xffffffffULL, 7, RDMAXFER_MEM_DMABUF },
};

static void sample(struct rdmaxfer_md *md, bool listening, size_t ndescs)
{
	memset(md, 0, sizeof(*md));
	md->agent_id = 0x0123456789abcdefULL;
	strcpy(md->name, "agent-0123456789012345678901234");	/* 31 chars */
	strcpy(md->device, "rxe0");
	md->port = 1;
	md->gid_index = 1;
	memset(md->gid, 0xab, 16);
	md->max_msg_size = 1U << 31;
	md->qps_per_peer = 4;
	md->listening = listening;
	if (listening) {
		strcpy(md->host, "10.0.2.15");
		md->listen_port = 18515;
	}
	md->ndescs = ndescs;
	md->descs = (struct rdmaxfer_desc *)descs;
}

static size_t encode(const struct rdmaxfer_md *md, uint8_t *buf, size_t cap)
{
	size_t len = 0;

	CU_ASSERT_EQUAL_FATAL(rx_md_encode(md, buf, cap, &len), 0);
	return len;
}

static void test_round_trip(void)
{
	struct rdmaxfer_md in, *out;
	uint8_t buf[512];
	size_t len, need;

	sample(&in, true, 3);
	CU_ASSERT_EQUAL(rx_md_encode(&in, NULL, 0, &need), -ENOSPC);
	CU_ASSERT_EQUAL(need, RX_MD_HDR_LEN + 3 * RX_MD_DESC_LEN);
	CU_ASSERT_EQUAL(rx_md_encode(&in, buf, need - 1, &len), -ENOSPC);
	len = encode(&in, buf, sizeof(buf));
	CU_ASSERT_EQUAL(len, need);
	/* fixed little-endian layout, whatever the host */
	CU_ASSERT(buf[0] == 'R' && buf[1] == 'D' && buf[2] == 'X' && buf[3] == 'M');
	CU_ASSERT(buf[16] == 0xef && buf[23] == 0x01);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_md_parse(buf, len, &out), 0);
	CU_ASSERT_EQUAL(out->version, RDMAXFER_MD_VERSION);
	CU_ASSERT_EQUAL(out->agent_id, in.agent_id);
	CU_ASSERT(!strcmp(out->name, in.name));
	CU_ASSERT(!strcmp(out->device, "rxe0"));
	CU_ASSERT(!memcmp(out->gid, in.gid, 16));
	CU_ASSERT_EQUAL(out->max_msg_size, in.max_msg_size);
	CU_ASSERT_EQUAL(out->qps_per_peer, 4);
	CU_ASSERT(out->listening);
	CU_ASSERT(!strcmp(out->host, "10.0.2.15"));
	CU_ASSERT_EQUAL(out->listen_port, 18515);
	CU_ASSERT_EQUAL_FATAL(out->ndescs, 3);
	CU_ASSERT(!memcmp(out->descs, descs, sizeof(descs)));
	rdmaxfer_md_free(out);

	/* IPv6 listener, no descriptors */
	sample(&in, true, 0);
	strcpy(in.host, "fe80::1");
	len = encode(&in, buf, sizeof(buf));
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_md_parse(buf, len, &out), 0);
	CU_ASSERT(!strcmp(out->host, "fe80::1"));
	CU_ASSERT_EQUAL(out->ndescs, 0);
	CU_ASSERT_PTR_NULL(out->descs);
	rdmaxfer_md_free(out);

	/* not listening */
	sample(&in, false, 1);
	len = encode(&in, buf, sizeof(buf));
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_md_parse(buf, len, &out), 0);
	CU_ASSERT(!out->listening);
	CU_ASSERT_EQUAL(out->host[0], 0);
	rdmaxfer_md_free(out);

	/* the encoder refuses what the parser would */
	sample(&in, true, 0);
	strcpy(in.host, "not-an-address");
	CU_ASSERT_EQUAL(rx_md_encode(&in, buf, sizeof(buf), &len), -EINVAL);
}

/* Device memory's zero-based descriptors travel; the bit elsewhere, or
 * an unknown kind bit, is refused on both sides (issue 13). */
static void test_zero_based(void)
{
	struct rdmaxfer_desc d[1] = {
		{ 64, 8, 0x4242, RDMAXFER_MEM_DEVICE | RDMAXFER_DESC_ZERO_BASED },
	};
	struct rdmaxfer_md in, *out;
	uint8_t buf[512];
	size_t len;

	sample(&in, true, 1);
	in.descs = d;
	len = encode(&in, buf, sizeof(buf));
	/* kind: u32 little-endian at byte 20 of the descriptor */
	CU_ASSERT_EQUAL(buf[RX_MD_HDR_LEN + 20], RDMAXFER_MEM_DEVICE);
	CU_ASSERT_EQUAL(buf[RX_MD_HDR_LEN + 22], 1);	/* bit 16 */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_md_parse(buf, len, &out), 0);
	CU_ASSERT_EQUAL(out->descs[0].kind,
			RDMAXFER_MEM_DEVICE | RDMAXFER_DESC_ZERO_BASED);
	CU_ASSERT_EQUAL(out->descs[0].addr, 64);
	rdmaxfer_md_free(out);
	buf[RX_MD_HDR_LEN + 20] = RDMAXFER_MEM_HOST;
	CU_ASSERT_EQUAL(rdmaxfer_md_parse(buf, len, &out), -EINVAL);
	buf[RX_MD_HDR_LEN + 20] = RDMAXFER_MEM_DEVICE;
	buf[RX_MD_HDR_LEN + 22] = 2;			/* bit 17 */
	CU_ASSERT_EQUAL(rdmaxfer_md_parse(buf, len, &out), -EINVAL);
	d[0].kind = RDMAXFER_MEM_HOST | RDMAXFER_DESC_ZERO_BASED;
	CU_ASSERT_EQUAL(rx_md_encode(&in, buf, sizeof(buf), &len), -EINVAL);
}

static void test_truncation(void)
{
	struct rdmaxfer_md in, *out;
	uint8_t buf[512];
	size_t len, l;

	sample(&in, true, 3);
	len = encode(&in, buf, sizeof(buf));
	for (l = 0; l < len; l++) {
		/* a private copy of exactly l bytes: ASan sees any overread */
		uint8_t *copy = malloc(l ? l : 1);
		int ret;

		memcpy(copy, buf, l);
		out = NULL;
		ret = rdmaxfer_md_parse(copy, l, &out);
		if (ret != -EINVAL) {
			CU_FAIL("truncated blob not refused with -EINVAL");
			fprintf(stderr, "length %zu: %d\n", l, ret);
		}
		CU_ASSERT_PTR_NULL(out);
		free(copy);
	}
	/* and a blob with trailing bytes */
	CU_ASSERT_EQUAL(rdmaxfer_md_parse(buf, len + 1, &out), -EINVAL);
}

static void test_version(void)
{
	struct rdmaxfer_md in, *out;
	uint8_t buf[512];
	size_t len;

	sample(&in, true, 1);
	len = encode(&in, buf, sizeof(buf));
	buf[4] = RDMAXFER_MD_VERSION + 1;
	CU_ASSERT_EQUAL(rdmaxfer_md_parse(buf, len, &out), -EPROTO);
	/* a newer version is recognised even if its header grew */
	CU_ASSERT_EQUAL(rdmaxfer_md_parse(buf, 8, &out), -EPROTO);
	buf[4] = 0;
	CU_ASSERT_EQUAL(rdmaxfer_md_parse(buf, len, &out), -EPROTO);
	buf[4] = RDMAXFER_MD_VERSION;
	buf[0] ^= 1;
	CU_ASSERT_EQUAL(rdmaxfer_md_parse(buf, len, &out), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_md_parse(NULL, len, &out), -EINVAL);
}

/* Every single-byte corruption parses or fails cleanly; corruptions of
 * the structural fields must fail. */
static void test_corruption(void)
{
	static const size_t must_fail[] = { 0, 6, 8, 12, 55, 119, 123,
					     126, 168, 172, 197 };
	struct rdmaxfer_md in, *out;
	uint8_t buf[512], copy[512];
	size_t len, i, k;
	int bit, ret;

	sample(&in, true, 1);
	len = encode(&in, buf, sizeof(buf));
	for (i = 0; i < len; i++) {
		for (bit = 0; bit < 8; bit++) {
			memcpy(copy, buf, len);
			copy[i] ^= (uint8_t)(1 << bit);
			out = NULL;
			ret = rdmaxfer_md_parse(copy, len, &out);
			if (!ret) {
				CU_ASSERT_PTR_NOT_NULL(out);
				rdmaxfer_md_free(out);
			} else if (ret != -EINVAL && ret != -EPROTO) {
				CU_FAIL("unexpected error code");
			}
			for (k = 0; k < sizeof(must_fail) / sizeof(must_fail[0]); k++)
				if (i == must_fail[k] && !ret) {
					CU_FAIL("structural corruption accepted");
					fprintf(stderr, "byte %zu bit %d\n", i, bit);
				}
		}
	}
}

static void test_garbage(void)
{
	uint8_t buf[4096];
	struct rdmaxfer_md *out;
	unsigned int seed = 12345;
	int round, ret;
	size_t i, len;

	for (round = 0; round < 20000; round++) {
		len = (size_t)(rand_r(&seed) % sizeof(buf));
		for (i = 0; i < len; i++)
			buf[i] = (uint8_t)rand_r(&seed);
		/* half the time with a valid magic and version, to get past
		 * the first checks */
		if (round & 1 && len >= 8) {
			memcpy(buf, "RDXM", 4);
			buf[4] = RDMAXFER_MD_VERSION;
			buf[5] = 0;
		}
		ret = rdmaxfer_md_parse(buf, len, &out);
		if (!ret)
			rdmaxfer_md_free(out);
		else if (ret != -EINVAL && ret != -EPROTO)
			CU_FAIL("garbage: unexpected error code");
	}
}

/* Replay every corpus file; files named valid-* must parse. */
static void corpus_one(void *user, const char *name, const char *path,
		       const unsigned char *data, size_t len)
{
	struct rdmaxfer_md *out;
	int *valid = user, ret;

	(void)path;
	ret = rdmaxfer_md_parse(data, len, &out);
	if (!ret) {
		(*valid)++;
		rdmaxfer_md_free(out);
	} else if (ret != -EINVAL && ret != -EPROTO) {
		CU_FAIL("corpus file: unexpected error code");
	}
	if (!strncmp(name, "valid-", 6) && ret) {
		CU_FAIL("valid corpus file refused");
		fprintf(stderr, "%s: %d\n", name, ret);
	}
}

static void test_corpus(void)
{
	int valid = 0;
	int files = rc_corpus_each(CORPUS_DIR, corpus_one, &valid);

	rc_diag("corpus: %d files, %d parse", files, valid);
	CU_ASSERT(files >= 4);
}

static const struct rc_test_case cases[] = {
	{ "round_trip", test_round_trip },
	{ "zero_based_descs", test_zero_based },
	{ "truncation_every_length", test_truncation },
	{ "version_mismatch", test_version },
	{ "single_bit_corruption", test_corruption },
	{ "random_garbage", test_garbage },
	{ "corpus_replay", test_corpus },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	rc_add_suite("rdmaxfer_blob", NULL, NULL, cases);
	return rc_test_main(argc, argv);
}
