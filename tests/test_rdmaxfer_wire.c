// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_wire.c - the parsers of what a peer sends, on the host.
 *
 * The connection hello and welcome (rdma_cm private data, hello.c) and the
 * notification messages (a receive completion and its buffer,
 * notif_msg.c) come from the network before anything is known about the
 * sender.  Every malformed input must be refused with -EBADMSG/-EPROTO
 * (hello, welcome) or -EPROTO/-EMSGSIZE (notifications) without reading
 * out of bounds: the exact wire layout, round trips, every truncation,
 * every bad field, every single-bit corruption, and a replay of the
 * fuzzing corpora (tests/corpus/hello/, tests/corpus/notif/, grown by
 * fuzz_hello.c and fuzz_notif.c) with the fuzzers' own checks
 * (fuzz_wire.h).  Built with the library's own hello.c and notif_msg.c;
 * runs under any sanitizer the build adds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_wire.h"
#include "rc_test.h"

#ifndef CORPUS_DIR
#define CORPUS_DIR "corpus"
#endif

static const struct rx_hello sample_hello = {
	.qp_index = 2,
	.nqps = 3,
	.agent_id = 0x0123456789abcdefULL,
	.token = 0xfedcba9876543210ULL,
};

/* The wire layout, written out byte by byte (little-endian). */
static const uint8_t sample_hello_wire[RX_HELLO_LEN] = {
	'R', 'D', 'X', 'H', 1, 0, 2, 0, 3, 0, 0, 0,
	0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01,
	0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe,
	0, 0, 0, 0,
};

static const uint8_t sample_welcome_wire[RX_WELCOME_LEN] = {
	'R', 'D', 'X', 'H', 1, 0, 0, 0,
	0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01,
};

static void test_hello_layout(void)
{
	uint8_t buf[RX_HELLO_LEN];
	struct rx_hello h;

	CU_ASSERT_EQUAL_FATAL(rx_hello_encode(&sample_hello, buf, sizeof(buf)), 0);
	CU_ASSERT(!memcmp(buf, sample_hello_wire, sizeof(buf)));
	CU_ASSERT_EQUAL_FATAL(rx_hello_decode(sample_hello_wire,
					      sizeof(sample_hello_wire), &h), 0);
	CU_ASSERT_EQUAL(h.magic, RX_HELLO_MAGIC);
	CU_ASSERT_EQUAL(h.version, RX_PROTO_VERSION);
	CU_ASSERT_EQUAL(h.qp_index, 2);
	CU_ASSERT_EQUAL(h.nqps, 3);
	CU_ASSERT_EQUAL(h.agent_id, sample_hello.agent_id);
	CU_ASSERT_EQUAL(h.token, sample_hello.token);
}

static void test_hello_round_trip(void)
{
	/* rdma_cm hands over the whole private data area: padding follows */
	uint8_t buf[56];
	struct rx_hello in = { 0 }, out;
	unsigned int nqps, i;

	for (nqps = 1; nqps <= RX_MAX_QPS; nqps++) {
		for (i = 0; i < nqps; i++) {
			in.nqps = (uint16_t)nqps;
			in.qp_index = (uint16_t)i;
			in.agent_id = ~0ULL - i;
			in.token = (uint64_t)nqps << 40 | i;
			memset(buf, 0xa5, sizeof(buf));
			CU_ASSERT_EQUAL(rx_hello_encode(&in, buf, sizeof(buf)), 0);
			CU_ASSERT_EQUAL_FATAL(rx_hello_decode(buf, sizeof(buf),
							      &out), 0);
			CU_ASSERT_EQUAL(out.nqps, nqps);
			CU_ASSERT_EQUAL(out.qp_index, i);
			CU_ASSERT_EQUAL(out.agent_id, in.agent_id);
			CU_ASSERT_EQUAL(out.token, in.token);
		}
	}
}

static void test_hello_encode_refuses(void)
{
	uint8_t buf[RX_HELLO_LEN];
	struct rx_hello h = sample_hello;

	CU_ASSERT_EQUAL(rx_hello_encode(&h, buf, sizeof(buf) - 1), -EINVAL);
	CU_ASSERT_EQUAL(rx_hello_encode(NULL, buf, sizeof(buf)), -EINVAL);
	CU_ASSERT_EQUAL(rx_hello_encode(&h, NULL, sizeof(buf)), -EINVAL);
	h.nqps = 0;
	h.qp_index = 0;
	CU_ASSERT_EQUAL(rx_hello_encode(&h, buf, sizeof(buf)), -EINVAL);
	h.nqps = RX_MAX_QPS + 1;
	CU_ASSERT_EQUAL(rx_hello_encode(&h, buf, sizeof(buf)), -EINVAL);
	h.nqps = 4;
	h.qp_index = 4;
	CU_ASSERT_EQUAL(rx_hello_encode(&h, buf, sizeof(buf)), -EINVAL);
}

/* Every length short of the structure is refused; the heap copy of
 * exactly that length lets a sanitizer catch a read past it. */
static void test_truncation(void)
{
	struct rx_hello h;
	struct rx_welcome w;
	size_t len;

	CU_ASSERT_EQUAL(rx_hello_decode(NULL, 0, &h), -EBADMSG);
	CU_ASSERT_EQUAL(rx_hello_decode(NULL, RX_HELLO_LEN, &h), -EBADMSG);
	CU_ASSERT_EQUAL(rx_welcome_decode(NULL, 0, &w), -EBADMSG);
	for (len = 0; len < RX_HELLO_LEN; len++) {
		uint8_t *p = malloc(len ? len : 1);

		CU_ASSERT_FATAL(p != NULL);
		memcpy(p, sample_hello_wire, len);
		CU_ASSERT_EQUAL(rx_hello_decode(p, len, &h), -EBADMSG);
		free(p);
	}
	for (len = 0; len < RX_WELCOME_LEN; len++) {
		uint8_t *p = malloc(len ? len : 1);

		CU_ASSERT_FATAL(p != NULL);
		memcpy(p, sample_welcome_wire, len);
		CU_ASSERT_EQUAL(rx_welcome_decode(p, len, &w), -EBADMSG);
		free(p);
	}
}

static int hello_with(size_t off, uint8_t val)
{
	uint8_t buf[RX_HELLO_LEN];
	struct rx_hello h;

	memcpy(buf, sample_hello_wire, sizeof(buf));
	buf[off] = val;
	return rx_hello_decode(buf, sizeof(buf), &h);
}

static void test_hello_bad_fields(void)
{
	size_t off;

	CU_ASSERT_EQUAL(hello_with(0, 'r'), -EBADMSG);		/* magic */
	CU_ASSERT_EQUAL(hello_with(3, 'h'), -EBADMSG);
	CU_ASSERT_EQUAL(hello_with(4, 2), -EPROTO);		/* version */
	CU_ASSERT_EQUAL(hello_with(4, 0), -EPROTO);
	CU_ASSERT_EQUAL(hello_with(5, 1), -EPROTO);		/* 0x0101 */
	CU_ASSERT_EQUAL(hello_with(6, 3), -EBADMSG);		/* index == nqps */
	CU_ASSERT_EQUAL(hello_with(7, 1), -EBADMSG);		/* index 258 */
	CU_ASSERT_EQUAL(hello_with(8, 0), -EBADMSG);		/* nqps 0 */
	CU_ASSERT_EQUAL(hello_with(8, RX_MAX_QPS + 1), -EBADMSG);
	CU_ASSERT_EQUAL(hello_with(9, 1), -EBADMSG);		/* nqps 259 */
	CU_ASSERT_EQUAL(hello_with(8, RX_MAX_QPS), 0);
	CU_ASSERT_EQUAL(hello_with(6, 0), 0);
	/* reserved fields must be zero */
	for (off = 10; off < 12; off++)
		CU_ASSERT_EQUAL(hello_with(off, 0x80), -EBADMSG);
	for (off = 28; off < 32; off++)
		CU_ASSERT_EQUAL(hello_with(off, 1), -EBADMSG);
	/* agent id and token are opaque: any value */
	for (off = 12; off < 28; off++)
		CU_ASSERT_EQUAL(hello_with(off, 0xff), 0);
}

/* A refusal of another version may carry no more than the header. */
static void test_version_mismatch(void)
{
	static const uint8_t v2[6] = { 'R', 'D', 'X', 'H', 2, 0 };
	struct rx_hello h;
	struct rx_welcome w;
	uint8_t buf[RX_WELCOME_LEN];

	CU_ASSERT_EQUAL(rx_hello_decode(v2, sizeof(v2), &h), -EPROTO);
	CU_ASSERT_EQUAL(rx_welcome_decode(v2, sizeof(v2), &w), -EPROTO);
	memcpy(buf, sample_welcome_wire, sizeof(buf));
	buf[4] = 7;
	CU_ASSERT_EQUAL(rx_welcome_decode(buf, sizeof(buf), &w), -EPROTO);
	buf[0] = 0;
	CU_ASSERT_EQUAL(rx_welcome_decode(buf, sizeof(buf), &w), -EBADMSG);
}

static void test_welcome(void)
{
	uint8_t buf[196];	/* a REP's whole private data area */
	struct rx_welcome w;

	memset(buf, 0x5a, sizeof(buf));
	CU_ASSERT_EQUAL(rx_welcome_encode(0x0123456789abcdefULL, buf, 15),
			-EINVAL);
	CU_ASSERT_EQUAL(rx_welcome_encode(0x0123456789abcdefULL, buf,
					  sizeof(buf)), 0);
	CU_ASSERT(!memcmp(buf, sample_welcome_wire, RX_WELCOME_LEN));
	CU_ASSERT_EQUAL(buf[RX_WELCOME_LEN], 0x5a);	/* wrote 16 bytes only */
	CU_ASSERT_EQUAL_FATAL(rx_welcome_decode(buf, sizeof(buf), &w), 0);
	CU_ASSERT_EQUAL(w.agent_id, 0x0123456789abcdefULL);
	buf[6] = 1;					/* reserved */
	CU_ASSERT_EQUAL(rx_welcome_decode(buf, sizeof(buf), &w), -EBADMSG);
}

/* Flip every bit of a valid hello and welcome: the result must be a
 * clean refusal, or a message that is still in range and re-encodes. */
static void test_single_bit(void)
{
	uint8_t buf[RX_HELLO_LEN];
	unsigned int bit, accepted = 0;
	int hr, wr;

	for (bit = 0; bit < RX_HELLO_LEN * 8; bit++) {
		memcpy(buf, sample_hello_wire, sizeof(buf));
		buf[bit / 8] ^= (uint8_t)(1 << (bit % 8));
		CU_ASSERT_EQUAL(fw_check_hello(buf, sizeof(buf), &hr, &wr), 0);
		accepted += !hr;
	}
	/* the 128 bits of agent id and token, and some of index/nqps */
	CU_ASSERT(accepted >= 128 && accepted < 160);
	for (bit = 0; bit < RX_WELCOME_LEN * 8; bit++) {
		memcpy(buf, sample_welcome_wire, RX_WELCOME_LEN);
		buf[bit / 8] ^= (uint8_t)(1 << (bit % 8));
		CU_ASSERT_EQUAL(fw_check_hello(buf, RX_WELCOME_LEN, &hr, &wr), 0);
		CU_ASSERT_EQUAL(wr == 0, bit >= 64);
	}
}

/* ---------------------------------------------------------------- notif */

static int decode(enum rx_notif_wc_opcode op, bool imm, uint32_t value,
		  uint32_t byte_len, const void *buf, size_t buf_len,
		  struct rdmaxfer_notif *n)
{
	struct rx_notif_wc wc = {
		.opcode = op, .has_imm = imm, .imm_be = htonl(value),
		.byte_len = byte_len,
	};

	return rx_notif_decode(&wc, buf, buf_len, n);
}

static void test_notif_msg(void)
{
	static uint8_t buf[RDMAXFER_NOTIF_MSG_MAX];
	struct rdmaxfer_notif *n = malloc(sizeof(*n));
	uint32_t len;

	CU_ASSERT_FATAL(n != NULL);
	for (len = 0; len < sizeof(buf); len++)
		buf[len] = (uint8_t)(len * 7 + 1);
	for (len = 0; len <= RDMAXFER_NOTIF_MSG_MAX; len += 511) {
		memset(n, 0xcc, sizeof(*n));
		CU_ASSERT_EQUAL_FATAL(decode(RX_NOTIF_WC_RECV, true, 0xdeadbeef,
					     len, buf, sizeof(buf), n), 0);
		CU_ASSERT_EQUAL(n->type, RDMAXFER_NOTIF_MSG);
		CU_ASSERT_EQUAL(n->value, 0xdeadbeef);
		CU_ASSERT_EQUAL(n->len, len);
		CU_ASSERT(!memcmp(n->data, buf, len));
		/* what the caller fills in is left cleared */
		CU_ASSERT_PTR_NULL(n->peer);
		CU_ASSERT_EQUAL(n->peer_id, 0);
	}
	CU_ASSERT_EQUAL(decode(RX_NOTIF_WC_RECV, true, 1, RDMAXFER_NOTIF_MSG_MAX,
			       buf, sizeof(buf), n), 0);
	free(n);
}

static void test_notif_imm(void)
{
	struct rdmaxfer_notif *n = malloc(sizeof(*n));

	CU_ASSERT_FATAL(n != NULL);
	/* byte_len is the RDMA WRITE's length: anything, nothing copied */
	CU_ASSERT_EQUAL_FATAL(decode(RX_NOTIF_WC_WRITE_IMM, true, 42,
				     1U << 30, NULL, 0, n), 0);
	CU_ASSERT_EQUAL(n->type, RDMAXFER_NOTIF_IMM);
	CU_ASSERT_EQUAL(n->value, 42);
	CU_ASSERT_EQUAL(n->len, 0);
	free(n);
}

static void test_notif_bad(void)
{
	static uint8_t buf[RDMAXFER_NOTIF_MSG_MAX + 1];
	struct rdmaxfer_notif *n = malloc(sizeof(*n));

	CU_ASSERT_FATAL(n != NULL);
	/* every sender of the protocol sets an immediate */
	CU_ASSERT_EQUAL(decode(RX_NOTIF_WC_RECV, false, 0, 4, buf, 64, n),
			-EPROTO);
	CU_ASSERT_EQUAL(decode(RX_NOTIF_WC_WRITE_IMM, false, 0, 0, buf, 64, n),
			-EPROTO);
	CU_ASSERT_EQUAL(decode(RX_NOTIF_WC_OTHER, true, 0, 4, buf, 64, n),
			-EPROTO);
	/* more bytes than the buffer, or than a notification may carry */
	CU_ASSERT_EQUAL(decode(RX_NOTIF_WC_RECV, true, 0, 65, buf, 64, n),
			-EMSGSIZE);
	CU_ASSERT_EQUAL(decode(RX_NOTIF_WC_RECV, true, 0,
			       RDMAXFER_NOTIF_MSG_MAX + 1, buf, sizeof(buf), n),
			-EMSGSIZE);
	CU_ASSERT_EQUAL(decode(RX_NOTIF_WC_RECV, true, 0, 0xffffffffU, buf,
			       sizeof(buf), n), -EMSGSIZE);
	CU_ASSERT_EQUAL(rx_notif_decode(NULL, buf, 64, n), -EINVAL);
	free(n);
}

/* ------------------------------------------------------------- corpora */

struct replay {
	const char *kind;
	int accepted;
};

static void replay_one(void *user, const char *name, const char *path,
		       const unsigned char *buf, size_t len)
{
	struct replay *rp = user;
	int r1, r2 = -EBADMSG, bad;
	bool ok;

	if (!strcmp(rp->kind, "hello"))
		bad = fw_check_hello(buf, len, &r1, &r2);
	else
		bad = fw_check_notif(buf, len, &r1);
	/* hello corpus: *-hello-* and *-welcome-* name the decoder judged
	 * (a bad hello can be a fine welcome) */
	if (strstr(name, "-hello-") == strchr(name, '-'))
		ok = !r1;
	else if (strstr(name, "-welcome") == strchr(name, '-'))
		ok = !r2;
	else
		ok = !r1 || !r2;
	if (bad) {
		CU_FAIL("corpus file broke the decoder's contract");
		rc_diag("%s", path);
	}
	if (!strncmp(name, "valid-", 6) && !ok) {
		CU_FAIL("valid corpus file refused");
		rc_diag("%s: %d %d", path, r1, r2);
	}
	if (!strncmp(name, "bad-", 4) && ok) {
		CU_FAIL("bad corpus file accepted");
		rc_diag("%s", path);
	}
	rp->accepted += ok;
}

static void replay(const char *kind)
{
	struct replay rp = { kind, 0 };
	char dirpath[4096];
	int files;

	snprintf(dirpath, sizeof(dirpath), "%s/%s", CORPUS_DIR, kind);
	files = rc_corpus_each(dirpath, replay_one, &rp);
	rc_diag("corpus %s: %d files, %d accepted", kind, files, rp.accepted);
	CU_ASSERT(files >= 8);
	CU_ASSERT(rp.accepted >= 2);
}

static void test_corpus_hello(void)
{
	replay("hello");
}

static void test_corpus_notif(void)
{
	replay("notif");
}

static const struct rc_test_case hello_cases[] = {
	{ "wire_layout", test_hello_layout },
	{ "round_trip", test_hello_round_trip },
	{ "encode_refuses", test_hello_encode_refuses },
	{ "truncation_every_length", test_truncation },
	{ "bad_fields", test_hello_bad_fields },
	{ "version_mismatch", test_version_mismatch },
	{ "welcome", test_welcome },
	{ "single_bit_corruption", test_single_bit },
	{ "corpus_replay", test_corpus_hello },
	{ NULL, NULL },
};

static const struct rc_test_case notif_cases[] = {
	{ "send_with_imm", test_notif_msg },
	{ "write_with_imm", test_notif_imm },
	{ "refused", test_notif_bad },
	{ "corpus_replay", test_corpus_notif },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	rc_add_suite("hello", NULL, NULL, hello_cases);
	rc_add_suite("notif", NULL, NULL, notif_cases);
	return rc_test_main(argc, argv);
}
