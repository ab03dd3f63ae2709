// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_ring_info.c - the grain ring's target info parsers on the
 * host (ring_info.c with blob.c): the binary blob and the one-line JSON
 * form round-trip; a truncated blob at every length, every single-byte
 * corruption, another version, and bad geometry (slot size over the
 * registered ring, zero or too many slots) each fail with -errno; the JSON
 * parser refuses unknown, missing and repeated keys, escapes, trailing
 * bytes, overflowing numbers and bad hex, and survives random mutations.
 * Version 2 (1.7): a sample ring's channels and the overrun flag round
 * trip in both forms and are checked; the sample ring's arithmetic (where
 * a range of samples lies in each plane, split at the ring's end) against
 * a sample-by-sample count, and its immediate (head's low 16 bits and the
 * count) across the 16-bit wrap, with heads that do not follow on refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rc_test.h"

static void sample(struct rdmaxfer_ring_info *info)
{
	memset(info, 0, sizeof(*info));
	info->version = RDMAXFER_RING_VERSION;
	info->flavour = RDMAXFER_RING_DISCRETE;
	info->n_slots = 16;
	info->slot_size = 4 << 20;
	info->agent_id = 0xfedcba9876543210ULL;
	strcpy(info->device, "rxe0");
	strcpy(info->host, "10.0.2.15");
	info->port = 18515;
	info->slots.addr = 0x7f0000000000ULL;
	info->slots.len = 64ULL << 20;
	info->slots.rkey = 0x1234;
	info->slots.kind = RDMAXFER_MEM_HOST;
	info->credit.addr = 0x7f1000000040ULL;
	info->credit.len = 8;
	info->credit.rkey = 0xffffffffU;
	info->credit.kind = RDMAXFER_MEM_HOST;
}

static bool same(const struct rdmaxfer_ring_info *a,
		 const struct rdmaxfer_ring_info *b)
{
	return a->version == b->version && a->flavour == b->flavour &&
	       a->n_slots == b->n_slots && a->slot_size == b->slot_size &&
	       a->agent_id == b->agent_id && !strcmp(a->device, b->device) &&
	       !strcmp(a->host, b->host) && a->port == b->port &&
	       !memcmp(&a->slots, &b->slots, sizeof(a->slots)) &&
	       !memcmp(&a->credit, &b->credit, sizeof(a->credit));
}

static size_t pack(const struct rdmaxfer_ring_info *info, uint8_t *buf,
		   size_t cap)
{
	size_t len = 0;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_info_pack(info, buf, cap, &len),
			      0);
	return len;
}

static void test_blob_round_trip(void)
{
	struct rdmaxfer_ring_info in, out;
	uint8_t buf[512];
	size_t len = 0;

	sample(&in);
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_pack(&in, NULL, 0, &len), -ENOSPC);
	CU_ASSERT(len > 24 && len <= sizeof(buf));
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_pack(&in, buf, len - 1, &len),
			-ENOSPC);
	len = pack(&in, buf, sizeof(buf));
	memset(&out, 0, sizeof(out));
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(buf, len, &out), 0);
	CU_ASSERT(same(&in, &out));
	/* a longer buffer than the blob says is refused too */
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(buf, len + 1, &out), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(NULL, len, &out), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(buf, len, NULL), -EINVAL);
}

/* Every truncation of the blob in buf fails with -EINVAL, writing
 * nothing. */
static void truncations_fail(const uint8_t *buf, size_t len)
{
	struct rdmaxfer_ring_info out, keep;
	uint8_t *copy;
	size_t i;

	memset(&keep, 0x5a, sizeof(keep));
	for (i = 0; i < len; i++) {
		/* an exact-size copy: ASan sees any read past the end */
		copy = malloc(i ? i : 1);
		CU_ASSERT_FATAL(copy != NULL);
		memcpy(copy, buf, i);
		out = keep;
		CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(copy, i, &out),
				-EINVAL);
		/* a failed parse writes nothing */
		CU_ASSERT(!memcmp(&out, &keep, sizeof(out)));
		free(copy);
	}
}

static void test_blob_truncated(void)
{
	struct rdmaxfer_ring_info in;
	uint8_t buf[512];

	sample(&in);
	truncations_fail(buf, pack(&in, buf, sizeof(buf)));
}

static void test_blob_version_geometry(void)
{
	struct rdmaxfer_ring_info in, out;
	uint8_t buf[512];
	size_t len;

	sample(&in);
	len = pack(&in, buf, sizeof(buf));
	buf[4] = 3;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(buf, len, &out), -EPROTO);
	/* version 2's header is longer: this blob is not one */
	buf[4] = 2;
	CU_ASSERT(rdmaxfer_ring_info_parse(buf, len, &out) < 0);
	buf[4] = 1;
	/* slot count * slot size over the registered ring */
	buf[12] = 17;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(buf, len, &out), -ERANGE);
	buf[12] = 0;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(buf, len, &out), -EINVAL);
	buf[12] = 16;
	buf[6] = RDMAXFER_RING_CONTINUOUS;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(buf, len, &out),
			-EOPNOTSUPP);
	buf[6] = 9;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(buf, len, &out), -EINVAL);
	buf[6] = RDMAXFER_RING_DISCRETE;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(buf, len, &out), 0);

	/* the encoder refuses what the parser would */
	in.slot_size = (64 << 20) / 16 + 1;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_pack(&in, buf, sizeof(buf), &len),
			-ERANGE);
	sample(&in);
	in.slot_size = UINT64_MAX / 2;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_pack(&in, buf, sizeof(buf), &len),
			-ERANGE);
	sample(&in);
	in.n_slots = RDMAXFER_RING_MAX_SLOTS + 1;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_pack(&in, buf, sizeof(buf), &len),
			-EINVAL);
	sample(&in);
	in.credit.len = 4;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_pack(&in, buf, sizeof(buf), &len),
			-ERANGE);
	sample(&in);
	in.port = 0;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_pack(&in, buf, sizeof(buf), &len),
			-EINVAL);
}

/* Every byte changed to three other values: parses to a valid info or
 * fails with -errno, never a crash (ASan/UBSan builds see reads). */
static void test_blob_corruption(void)
{
	static const uint8_t vals[] = { 0x00, 0xff, 0x80 };
	struct rdmaxfer_ring_info in, out;
	uint8_t buf[512];
	size_t len, i, v;
	int ret, ok = 0, bad = 0;

	sample(&in);
	len = pack(&in, buf, sizeof(buf));
	for (i = 0; i < len; i++) {
		uint8_t old = buf[i];

		for (v = 0; v < sizeof(vals); v++) {
			if (vals[v] == old)
				continue;
			buf[i] = vals[v];
			ret = rdmaxfer_ring_info_parse(buf, len, &out);
			CU_ASSERT(ret == 0 || ret == -EINVAL ||
				  ret == -EPROTO || ret == -ERANGE ||
				  ret == -EOPNOTSUPP);
			if (ret == 0)
				ok++;
			else
				bad++;
		}
		buf[i] = old;
	}
	rc_diag("single-byte corruptions: %d parse, %d refused", ok, bad);
	CU_ASSERT(bad > 0);
}

static void test_json_round_trip(void)
{
	struct rdmaxfer_ring_info in, out;
	char text[RDMAXFER_RING_JSON_MAX];
	int n;

	sample(&in);
	n = rdmaxfer_ring_info_json(&in, text, sizeof(text));
	CU_ASSERT_FATAL(n > 0 && (size_t)n == strlen(text));
	CU_ASSERT(!strchr(text, '\n'));
	rc_diag("%s", text);
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse_json(text, &out), 0);
	CU_ASSERT(same(&in, &out));
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_json(&in, text, 10), -ENOSPC);
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_json(&in, NULL, 0), -ENOSPC);
	/* whitespace around tokens and a trailing newline are fine */
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse_json(
		" { \"rdmaxfer_ring\" : 1 , \"flavour\":\"discrete\","
		"\"n_slots\":4,\"slot_size\":1024,\"agent_id\":\"0x1\","
		"\"device\":\"rxe0\",\"host\":\"::1\",\"port\":7,"
		"\"addr\":\"0x1000\",\"len\":4096,\"rkey\":3,"
		"\"credit_addr\":\"0x2000\",\"credit_len\":8,"
		"\"credit_rkey\":4}\n", &out), 0);
	CU_ASSERT_EQUAL(out.n_slots, 4);
	CU_ASSERT_EQUAL(out.slots.addr, 0x1000);
	CU_ASSERT_STRING_EQUAL(out.host, "::1");
}

/* Replace the first occurrence of from by to in text (into out). */
static void edit(const char *text, const char *from, const char *to,
		 char *out, size_t cap)
{
	const char *p = strstr(text, from);

	CU_ASSERT_FATAL(p != NULL);
	snprintf(out, cap, "%.*s%s%s", (int)(p - text), text, to,
		 p + strlen(from));
}

static void test_json_bad(void)
{
	static const struct {
		const char *from, *to;
		int err;
	} cases[] = {
		{ "\"rdmaxfer_ring\":1", "\"rdmaxfer_ring\":3", -EPROTO },
		/* version 2 needs its two keys, version 1 refuses them */
		{ "\"rdmaxfer_ring\":1", "\"rdmaxfer_ring\":2", -EINVAL },
		{ "\"n_slots\":16,", "\"channels\":0,\"n_slots\":16,",
		  -EINVAL },
		{ "\"rdmaxfer_ring\":1", "\"rdmaxfer_ring\":01", -EINVAL },
		{ "\"n_slots\":16", "\"n_slots\":17", -ERANGE },
		{ "\"n_slots\":16", "\"n_slots\":0", -EINVAL },
		{ "\"n_slots\":16", "\"n_slots\":99999999999", -EINVAL },
		{ "\"n_slots\":16", "\"n_slots\":-1", -EINVAL },
		{ "\"n_slots\":16", "\"n_slots\":16.0", -EINVAL },
		{ "\"slot_size\":4194304",
		  "\"slot_size\":184467440737095516160", -EINVAL },
		{ "\"n_slots\":16,", "", -EINVAL },		/* missing */
		{ "\"n_slots\":16,", "\"n_slots\":16,\"n_slots\":16,",
		  -EINVAL },					/* repeated */
		{ "\"n_slots\":16,", "\"n_slot\":16,", -EINVAL },
		{ "\"n_slots\":16,", "\"extra\":1,\"n_slots\":16,", -EINVAL },
		{ "\"discrete\"", "\"disc\\u0072ete\"", -EINVAL },
		{ "\"discrete\"", "\"video\"", -EINVAL },
		{ "\"discrete\"", "\"continuous\"", -EOPNOTSUPP },
		{ "\"agent_id\":\"0x", "\"agent_id\":\"0y", -EINVAL },
		{ "\"agent_id\":\"0xfedcba9876543210\"",
		  "\"agent_id\":\"0x1fedcba9876543210\"", -EINVAL },
		{ "\"agent_id\":\"0xfedcba9876543210\"",
		  "\"agent_id\":\"0x\"", -EINVAL },
		{ "\"agent_id\":\"0xfedcba9876543210\"",
		  "\"agent_id\":18364758544493064720", -EINVAL },
		{ "\"port\":18515", "\"port\":65536", -EINVAL },
		{ "\"port\":18515", "\"port\":0", -EINVAL },
		{ "\"host\":\"10.0.2.15\"", "\"host\":\"\"", -EINVAL },
		{ "\"credit_len\":8", "\"credit_len\":7", -ERANGE },
		{ "}", "}x", -EINVAL },
		{ "}", "},", -EINVAL },
		{ "}", "", -EINVAL },
		{ "{", "[", -EINVAL },
	};
	struct rdmaxfer_ring_info in, out, keep;
	char text[RDMAXFER_RING_JSON_MAX], bad[RDMAXFER_RING_JSON_MAX + 64];
	size_t i;
	int ret;

	sample(&in);
	CU_ASSERT_FATAL(rdmaxfer_ring_info_json(&in, text, sizeof(text)) > 0);
	memset(&keep, 0x5a, sizeof(keep));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		edit(text, cases[i].from, cases[i].to, bad, sizeof(bad));
		out = keep;
		ret = rdmaxfer_ring_info_parse_json(bad, &out);
		if (ret != cases[i].err)
			rc_diag("case %zu (%s -> %s): %d, expected %d", i,
				cases[i].from, cases[i].to, ret, cases[i].err);
		CU_ASSERT_EQUAL(ret, cases[i].err);
		CU_ASSERT(!memcmp(&out, &keep, sizeof(out)));
	}
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse_json(NULL, &out), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse_json("", &out), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse_json("{}", &out), -EINVAL);
	/* a host with a quote cannot be written as JSON */
	strcpy(in.host, "a\"b");
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_json(&in, text, sizeof(text)),
			-EINVAL);
	/* longer than the one-line form may be: refused unread */
	memset(bad, ' ', sizeof(bad) - 1);
	bad[sizeof(bad) - 1] = 0;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse_json(bad, &out), -EINVAL);
}

/* Random truncations and byte mutations of the JSON text. */
static void test_json_mutations(void)
{
	struct rdmaxfer_ring_info in, out;
	char text[RDMAXFER_RING_JSON_MAX], m[RDMAXFER_RING_JSON_MAX];
	unsigned int seed = 14;
	size_t len, i;
	int ret, ok = 0;

	sample(&in);
	CU_ASSERT_FATAL(rdmaxfer_ring_info_json(&in, text, sizeof(text)) > 0);
	len = strlen(text);
	for (i = 0; i < len; i++) {
		snprintf(m, sizeof(m), "%.*s", (int)i, text);
		CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse_json(m, &out),
				-EINVAL);
	}
	for (i = 0; i < 20000; i++) {
		strcpy(m, text);
		m[rand_r(&seed) % len] = (char)(rand_r(&seed) % 255 + 1);
		ret = rdmaxfer_ring_info_parse_json(m, &out);
		CU_ASSERT(ret == 0 || ret == -EINVAL || ret == -EPROTO ||
			  ret == -ERANGE || ret == -EOPNOTSUPP);
		ok += !ret;
	}
	rc_diag("20000 JSON mutations: %d still parse", ok);
}


/* ------------------------------------------------ version 2 (1.7) */

static void sample_ext(struct rdmaxfer_ring_info *info)
{
	sample(info);
	info->version = RDMAXFER_RING_VERSION_EXT;
	info->flavour = RDMAXFER_RING_CONTINUOUS;
	info->channels = 8;
	info->n_slots = 4800;
	info->slot_size = 4;
	info->slots.len = 8 * 4800 * 4;
}

static bool same_ext(const struct rdmaxfer_ring_info *a,
		     const struct rdmaxfer_ring_info *b)
{
	return same(a, b) && a->channels == b->channels &&
	       a->flags == b->flags;
}

static void test_ext_round_trip(void)
{
	struct rdmaxfer_ring_info in, out;
	char text[RDMAXFER_RING_JSON_MAX];
	uint8_t buf[512];
	size_t len;

	sample_ext(&in);
	len = pack(&in, buf, sizeof(buf));
	CU_ASSERT_EQUAL(buf[4], 2);
	memset(&out, 0, sizeof(out));
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(buf, len, &out), 0);
	CU_ASSERT(same_ext(&in, &out));
	CU_ASSERT_FATAL(rdmaxfer_ring_info_json(&in, text, sizeof(text)) > 0);
	rc_diag("%s", text);
	CU_ASSERT(strstr(text, "\"flavour\":\"continuous\"") != NULL);
	memset(&out, 0, sizeof(out));
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse_json(text, &out), 0);
	CU_ASSERT(same_ext(&in, &out));
	/* every truncation of the longer header fails, writing nothing */
	truncations_fail(buf, len);
	/* the header's zero word */
	buf[30] = 1;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(buf, len, &out), -EINVAL);
	buf[30] = 0;

	/* a discrete ring in overrun mode */
	sample(&in);
	in.version = RDMAXFER_RING_VERSION_EXT;
	in.flags = RDMAXFER_RING_OVERRUN;
	len = pack(&in, buf, sizeof(buf));
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse(buf, len, &out), 0);
	CU_ASSERT(same_ext(&in, &out));
	CU_ASSERT_FATAL(rdmaxfer_ring_info_json(&in, text, sizeof(text)) > 0);
	CU_ASSERT(strstr(text, "\"flags\":1") != NULL);
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_parse_json(text, &out), 0);
	CU_ASSERT(same_ext(&in, &out));
}

/* One bad edit of a good info per case: what the encoder says. */
static void test_ext_bad(void)
{
	enum edit { VERSION, CHANNELS, FLAGS, SLOTS_LEN, SLOT_SIZE };
	static const struct {
		bool ext;	/* edit the sample ring, else the plain one */
		enum edit what;
		uint64_t value;
		int err;
		const char *why;
	} cases[] = {
		{ false, FLAGS, RDMAXFER_RING_OVERRUN, -EINVAL,
		  "version 1 cannot carry flags" },
		{ true, VERSION, RDMAXFER_RING_VERSION, -EOPNOTSUPP,
		  "version 1 cannot carry channels" },
		{ true, CHANNELS, 0, -EINVAL, "no channel" },
		{ true, CHANNELS, RDMAXFER_RING_MAX_CHANNELS + 1, -EINVAL,
		  "too many channels" },
		{ true, SLOTS_LEN, 8 * 4800 * 4 - 1, -ERANGE,
		  "planes over the registered ring" },
		{ true, SLOT_SIZE, UINT64_MAX / 4800, -ERANGE,
		  "a ring size that overflows" },
		{ true, FLAGS, RDMAXFER_RING_OVERRUN, -EOPNOTSUPP,
		  "no overrun mode for samples" },
		{ true, FLAGS, 2, -EINVAL, "an unknown flag" },
	};
	struct rdmaxfer_ring_info in;
	uint8_t buf[512];
	size_t len, k;
	int ret;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		if (cases[k].ext)
			sample_ext(&in);
		else
			sample(&in);
		switch (cases[k].what) {
		case VERSION:
			in.version = (uint32_t)cases[k].value;
			break;
		case CHANNELS:
			in.channels = (uint16_t)cases[k].value;
			break;
		case FLAGS:
			in.flags = (uint16_t)cases[k].value;
			break;
		case SLOTS_LEN:
			in.slots.len = cases[k].value;
			break;
		case SLOT_SIZE:
			in.slot_size = cases[k].value;
			break;
		}
		ret = rdmaxfer_ring_info_pack(&in, buf, sizeof(buf), &len);
		if (ret != cases[k].err)
			rc_diag("%s: %d, expected %d", cases[k].why, ret,
				cases[k].err);
		CU_ASSERT_EQUAL(ret, cases[k].err);
	}
	/* a discrete ring has no channels */
	sample(&in);
	in.version = RDMAXFER_RING_VERSION_EXT;
	in.channels = 2;
	CU_ASSERT_EQUAL(rdmaxfer_ring_info_pack(&in, buf, sizeof(buf), &len),
			-EINVAL);
}

/* rx_ring_span() against the samples' positions one by one: the range
 * [head - count, head) is start.. for first samples, then 0.. */
static void test_span(void)
{
	static const uint32_t lens[] = { 1, 2, 7, 9, 48, 4800, 65536 };
	unsigned int seed = 7;
	uint32_t start, first, n, count, j;
	uint64_t head;
	size_t k, i;
	int bad = 0, wraps = 0;

	/* MXL's own example: 9 samples, head 11, count 5: 6, 7, 8 | 0, 1 */
	rx_ring_span(11, 5, 9, &start, &first);
	CU_ASSERT_EQUAL(start, 6);
	CU_ASSERT_EQUAL(first, 3);
	for (k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		n = lens[k];
		for (i = 0; i < 2000; i++) {
			count = (uint32_t)(rand_r(&seed) % n) + 1;
			if (i < 3)
				count = i == 0 ? 1 : i == 1 || n == 1 ? n : n - 1;
			head = (uint64_t)rand_r(&seed) * 977 + count;
			if (i == 3)
				head = UINT64_MAX;
			rx_ring_span(head, count, n, &start, &first);
			if (first < 1 || first > count || start >= n ||
			    start + first > n)
				bad++;
			for (j = 0; j < count; j++) {
				uint64_t idx = head - count + j;
				uint32_t pos = j < first ? start + j :
							   j - first;

				if (idx % n != pos)
					bad++;
			}
			wraps += count > first;
		}
	}
	rc_diag("span: 14000 ranges, %d crossed the end", wraps);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(wraps > 1000);
}

/* The immediate of a sample write and its decoding at the target. */
static void test_samples_imm(void)
{
	uint64_t next, head;
	uint32_t count, imm;
	int i, bad = 0;

	/* a stream of writes across the 16-bit wrap of head, many times */
	next = 0;
	for (i = 0; i < 100000; i++) {
		uint32_t c = (uint32_t)(i % 4800) + 1;

		imm = rx_ring_samples_imm(next + c, c);
		if (rx_ring_samples_head(imm, next, 4800, &head, &count) ||
		    head != next + c || count != c)
			bad++;
		next += c;
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(next > (1ULL << 27));
	/* the largest count, at 2^32 + something */
	next = (1ULL << 32) + 65000;
	imm = rx_ring_samples_imm(next + 65535, 65535);
	CU_ASSERT_EQUAL(rx_ring_samples_head(imm, next, 65536, &head, &count),
			0);
	CU_ASSERT_EQUAL(head, next + 65535);
	CU_ASSERT_EQUAL(count, 65535);
	/* a count of 0, over the ring, a head that skips or repeats */
	CU_ASSERT_EQUAL(rx_ring_samples_head(rx_ring_samples_imm(100, 0), 100,
					     4800, &head, &count), -EPROTO);
	CU_ASSERT_EQUAL(rx_ring_samples_head(rx_ring_samples_imm(5000, 4801),
					     199, 4800, &head, &count),
			-EPROTO);
	CU_ASSERT_EQUAL(rx_ring_samples_head(rx_ring_samples_imm(160, 48), 100,
					     4800, &head, &count), -EPROTO);
	CU_ASSERT_EQUAL(rx_ring_samples_head(rx_ring_samples_imm(100, 48), 100,
					     4800, &head, &count), -EPROTO);
}

static const struct rc_test_case cases[] = {
	{ "blob_round_trip", test_blob_round_trip },
	{ "blob_truncated_every_length", test_blob_truncated },
	{ "blob_version_geometry", test_blob_version_geometry },
	{ "blob_single_byte_corruption", test_blob_corruption },
	{ "json_round_trip", test_json_round_trip },
	{ "json_bad_input", test_json_bad },
	{ "json_mutations", test_json_mutations },
	{ "ext_round_trip", test_ext_round_trip },
	{ "ext_bad_input", test_ext_bad },
	{ "sample_span", test_span },
	{ "sample_immediate", test_samples_imm },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	rc_add_suite("rdmaxfer_ring_info", NULL, NULL, cases);
	return rc_test_main(argc, argv);
}
