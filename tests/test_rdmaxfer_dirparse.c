// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_dirparse.c - the etcd directory's parsing and table on
 * the host, without etcd: names and keys, strict base64, etcd's decimal
 * strings and JSON, the events a sequence of watch lines yields (arrive,
 * update, leave, a new agent under a name, coalescing), which exports
 * count, the bounds, the grace after a store reset, and a replay of the
 * fuzzing corpus (tests/corpus/directory/, grown by fuzz_directory.c)
 * with the fuzzer's own checks.  Built with the library's dir_codec.c,
 * dir_state.c and blob.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "fuzz_directory.h"
#include "rc_test.h"

#ifndef CORPUS_DIR
#define CORPUS_DIR "corpus/directory"
#endif

static size_t blob_of(uint64_t id, size_t ndescs, uint64_t base, uint8_t *buf,
		      size_t cap)
{
	struct rdmaxfer_desc d[2] = {
		{ base, 4096, 0x11, RDMAXFER_MEM_HOST },
		{ base + 8192, 4096, 0x12, RDMAXFER_MEM_HOST },
	};
	struct rdmaxfer_md md;
	size_t len = 0;

	memset(&md, 0, sizeof(md));
	md.agent_id = id;
	strcpy(md.name, "a");
	md.listening = true;
	strcpy(md.host, "10.0.0.1");
	md.listen_port = 1;
	md.ndescs = ndescs;
	md.descs = ndescs ? d : NULL;
	CU_ASSERT_EQUAL_FATAL(rx_md_encode(&md, buf, cap, &len), 0);
	return len;
}

/* One watch line with one event (value NULL: a DELETE). */
static void line(struct dir_state *st, const char *key, const void *val,
		 size_t len, int64_t rev)
{
	json_object *r = json_object_new_object(), *res = json_object_new_object();
	json_object *h = json_object_new_object(), *evs = json_object_new_array();
	json_object *ev = json_object_new_object(), *kv = json_object_new_object();
	struct dir_watch_line out;
	const char *s;
	char revs[24];

	snprintf(revs, sizeof(revs), "%lld", (long long)rev);
	json_object_object_add(h, "revision", json_object_new_string(revs));
	json_object_object_add(kv, "key", dir_json_b64(key, strlen(key)));
	json_object_object_add(kv, "mod_revision", json_object_new_string(revs));
	if (val)
		json_object_object_add(kv, "value", dir_json_b64(val, len));
	else
		json_object_object_add(ev, "type", json_object_new_string("DELETE"));
	json_object_object_add(ev, "kv", kv);
	json_object_array_add(evs, ev);
	json_object_object_add(res, "header", h);
	json_object_object_add(res, "events", evs);
	json_object_object_add(r, "result", res);
	s = json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN);
	CU_ASSERT_EQUAL(dir_state_watch_line(st, s, strlen(s), &out), 0);
	CU_ASSERT_EQUAL(out.events, 1);
	json_object_put(r);
}

/* The next event: its type (0: none), agent id and export count. */
static uint32_t next(struct dir_state *st, uint64_t *id, uint32_t *nexp)
{
	struct rdmaxfer_dir_event ev;

	if (dir_state_next_event(st, &ev))
		return 0;
	if (id)
		*id = ev.agent_id;
	if (nexp)
		*nexp = ev.nexports;
	return ev.type;
}

static void test_names_keys(void)
{
	struct dir_key k;
	struct rdmaxfer_desc d = { 0x1000, 64, 0xabc, 1 };
	char buf[256];

	CU_ASSERT(dir_name_valid("a"));
	CU_ASSERT(dir_name_valid("worker-3.rack_1"));
	CU_ASSERT(dir_name_valid("0123456789012345678901234567890"));	/* 31 */
	CU_ASSERT(!dir_name_valid("01234567890123456789012345678901"));	/* 32 */
	CU_ASSERT(!dir_name_valid(""));
	CU_ASSERT(!dir_name_valid("a b"));
	CU_ASSERT(!dir_name_valid("a/b"));
	CU_ASSERT(!dir_name_valid("."));
	CU_ASSERT(!dir_name_valid(".."));
	CU_ASSERT(!dir_name_valid(NULL));
	CU_ASSERT(dir_ns_valid("rdmaxfer"));
	CU_ASSERT(dir_ns_valid("prod/job-7"));
	CU_ASSERT(!dir_ns_valid("/a"));
	CU_ASSERT(!dir_ns_valid("a/"));
	CU_ASSERT(!dir_ns_valid("a//b"));
	CU_ASSERT(!dir_ns_valid("a/../b"));
	CU_ASSERT(!dir_ns_valid(""));

#define CLASSIFY(s) dir_key_classify("ns", (const uint8_t *)(s), strlen(s), &k)
	CLASSIFY("ns/agents/w1");
	CU_ASSERT(k.kind == DIR_KEY_AGENT && !strcmp(k.name, "w1"));
	CLASSIFY("ns/exports/w1/x-1");
	CU_ASSERT(k.kind == DIR_KEY_EXPORT && !strcmp(k.name, "w1") &&
		  !strcmp(k.id, "x-1"));
	CLASSIFY("ns/agents/");
	CU_ASSERT_EQUAL(k.kind, DIR_KEY_BAD);
	CLASSIFY("ns/agents/a b");
	CU_ASSERT_EQUAL(k.kind, DIR_KEY_BAD);
	CLASSIFY("ns/agents/w1/x");
	CU_ASSERT_EQUAL(k.kind, DIR_KEY_BAD);
	CLASSIFY("ns/exports/w1");
	CU_ASSERT_EQUAL(k.kind, DIR_KEY_BAD);
	CLASSIFY("ns/exports/w1/");
	CU_ASSERT_EQUAL(k.kind, DIR_KEY_BAD);
	CLASSIFY("ns/exports/w1/a/b");
	CU_ASSERT_EQUAL(k.kind, DIR_KEY_BAD);
	CLASSIFY("ns/agents");
	CU_ASSERT_EQUAL(k.kind, DIR_KEY_BAD);
	CLASSIFY("ns/other/w1");
	CU_ASSERT_EQUAL(k.kind, DIR_KEY_OTHER);
	CLASSIFY("ns2/agents/w1");
	CU_ASSERT_EQUAL(k.kind, DIR_KEY_OTHER);
	dir_key_classify("ns", (const uint8_t *)"ns/agents/w\0", 12, &k);
	CU_ASSERT_EQUAL(k.kind, DIR_KEY_BAD);	/* a NUL in a key */
#undef CLASSIFY
	/* the keys the directory writes read back as what they are */
	CU_ASSERT_EQUAL(dir_key_export("ns", "w1", &d, buf, sizeof(buf)), 0);
	dir_key_classify("ns", (const uint8_t *)buf, strlen(buf), &k);
	CU_ASSERT(k.kind == DIR_KEY_EXPORT && !strcmp(k.name, "w1"));
	CU_ASSERT_EQUAL(dir_key_agent("ns", "w1", buf, sizeof(buf)), 0);
	CU_ASSERT(!strcmp(buf, "ns/agents/w1"));
	CU_ASSERT_EQUAL(dir_key_agent("ns", "w1", buf, 8), -ENAMETOOLONG);
}

static void test_base64(void)
{
	uint8_t in[64], out[64];
	char enc[100];
	size_t n, len, i;

	for (n = 0; n <= sizeof(in); n++) {
		for (i = 0; i < n; i++)
			in[i] = (uint8_t)(rand() & 0xff);
		dir_b64_encode(in, n, enc);
		CU_ASSERT_EQUAL(strlen(enc), dir_b64_len(n));
		CU_ASSERT_EQUAL(dir_b64_decode(enc, strlen(enc), out, sizeof(out),
					       &len), 0);
		CU_ASSERT(len == n && !memcmp(in, out, n));
	}
	CU_ASSERT_EQUAL(dir_b64_decode("QQ==", 4, out, 64, &len), 0);
	CU_ASSERT(len == 1 && out[0] == 'A');
	CU_ASSERT_EQUAL(dir_b64_decode("QR==", 4, out, 64, &len), -EBADMSG);
	CU_ASSERT_EQUAL(dir_b64_decode("QQ=", 3, out, 64, &len), -EBADMSG);
	CU_ASSERT_EQUAL(dir_b64_decode("Q===", 4, out, 64, &len), -EBADMSG);
	CU_ASSERT_EQUAL(dir_b64_decode("QQ==QQ==", 8, out, 64, &len), -EBADMSG);
	CU_ASSERT_EQUAL(dir_b64_decode("QU!D", 4, out, 64, &len), -EBADMSG);
	CU_ASSERT_EQUAL(dir_b64_decode("QUJD", 4, out, 2, &len), -EBADMSG);
	CU_ASSERT_EQUAL(dir_b64_decode("", 0, out, 64, &len), 0);
	CU_ASSERT_EQUAL(len, 0);
}

static void test_json(void)
{
	json_object *o;
	int64_t x;
	char deep[64];
	int i;

	CU_ASSERT_EQUAL_FATAL(dir_json_parse("{\"a\":\"123\",\"b\":7,\"c\":\"1x\",\"d\":\"\",\"e\":\"123456789012345678901\",\"f\":[]}",
					     96, &o), -EBADMSG);	/* length past the text */
	CU_ASSERT_EQUAL_FATAL(dir_json_parse("{\"a\":\"123\",\"b\":7,\"c\":\"1x\",\"d\":\"\",\"e\":\"123456789012345678901\",\"f\":[]}",
					     strlen("{\"a\":\"123\",\"b\":7,\"c\":\"1x\",\"d\":\"\",\"e\":\"123456789012345678901\",\"f\":[]}"),
					     &o), 0);
	CU_ASSERT(!dir_json_i64(o, "a", &x) && x == 123);
	CU_ASSERT(!dir_json_i64(o, "b", &x) && x == 7);
	CU_ASSERT_EQUAL(dir_json_i64(o, "c", &x), -EBADMSG);
	CU_ASSERT_EQUAL(dir_json_i64(o, "d", &x), -EBADMSG);
	CU_ASSERT_EQUAL(dir_json_i64(o, "e", &x), -EBADMSG);
	CU_ASSERT_EQUAL(dir_json_i64(o, "f", &x), -EBADMSG);
	CU_ASSERT_EQUAL(dir_json_i64(o, "g", &x), -ENOENT);
	json_object_put(o);
	CU_ASSERT_EQUAL(dir_json_parse("{} x", 4, &o), -EBADMSG);
	CU_ASSERT_EQUAL(dir_json_parse("{}\n", 3, &o), 0);
	json_object_put(o);
	for (i = 0; i < 20; i++)
		deep[i] = '[';
	for (i = 20; i < 40; i++)
		deep[i] = ']';
	CU_ASSERT_EQUAL(dir_json_parse(deep, 40, &o), -EBADMSG);	/* depth */
}

/* What a sequence of changes yields, one name. */
static void test_events(void)
{
	struct dir_state st;
	uint8_t b1[512], b2[512], x1[512], xo[512];
	size_t l1 = blob_of(1, 0, 0, b1, sizeof(b1));
	size_t l2 = blob_of(2, 1, 0x9000, b2, sizeof(b2));
	size_t lx1 = blob_of(1, 1, 0x4000, x1, sizeof(x1));
	size_t lxo = blob_of(7, 1, 0x6000, xo, sizeof(xo));
	uint64_t id;
	uint32_t n;

	CU_ASSERT_EQUAL_FATAL(dir_state_init(&st, "ns", 8, 4), 0);
	line(&st, "ns/agents/w", b1, l1, 2);
	CU_ASSERT_EQUAL(next(&st, &id, &n), RDMAXFER_DIR_ARRIVE);
	CU_ASSERT(id == 1 && n == 0);
	CU_ASSERT_EQUAL(next(&st, NULL, NULL), 0);
	/* the same value again: nothing */
	line(&st, "ns/agents/w", b1, l1, 3);
	CU_ASSERT_EQUAL(next(&st, NULL, NULL), 0);
	/* an export of the agent: an update; another agent's: nothing */
	line(&st, "ns/exports/w/e1", x1, lx1, 4);
	CU_ASSERT_EQUAL(next(&st, &id, &n), RDMAXFER_DIR_UPDATE);
	CU_ASSERT(id == 1 && n == 1);
	line(&st, "ns/exports/w/e2", xo, lxo, 5);
	CU_ASSERT_EQUAL(next(&st, NULL, NULL), 0);
	/* another agent under the name: LEAVE of the old, ARRIVE of the
	 * new with its own descriptor (agent 1's export counts no more) */
	line(&st, "ns/agents/w", b2, l2, 6);
	CU_ASSERT_EQUAL(next(&st, &id, NULL), RDMAXFER_DIR_LEAVE);
	CU_ASSERT_EQUAL(id, 1);
	CU_ASSERT_EQUAL(next(&st, &id, &n), RDMAXFER_DIR_ARRIVE);
	CU_ASSERT(id == 2 && n == 1);
	/* garbage over a good entry: it leaves, a look-up would say why */
	line(&st, "ns/agents/w", "junk", 4, 7);
	CU_ASSERT_EQUAL(next(&st, &id, NULL), RDMAXFER_DIR_LEAVE);
	CU_ASSERT(dir_state_find(&st, "w") && dir_state_find(&st, "w")->bad == -EBADMSG);
	CU_ASSERT_EQUAL(st.rejected, 1);
	/* changes that cancel out before they are taken: nothing */
	line(&st, "ns/agents/v", b1, l1, 8);
	line(&st, "ns/agents/v", NULL, 0, 9);
	CU_ASSERT_EQUAL(next(&st, NULL, NULL), 0);
	/* a name that arrives and leaves while taken apart: both */
	line(&st, "ns/agents/u", b1, l1, 10);
	CU_ASSERT_EQUAL(next(&st, NULL, NULL), RDMAXFER_DIR_ARRIVE);
	line(&st, "ns/agents/u", NULL, 0, 11);
	CU_ASSERT_EQUAL(next(&st, &id, NULL), RDMAXFER_DIR_LEAVE);
	CU_ASSERT_EQUAL(st.revision, 11);
	dir_state_fini(&st);
}

static void test_bounds(void)
{
	struct dir_state st;
	uint8_t b[512], x[512], two[512];
	size_t l = blob_of(1, 0, 0, b, sizeof(b)), lt = blob_of(1, 2, 0, two, sizeof(two));
	char key[64];
	int i;

	CU_ASSERT_EQUAL_FATAL(dir_state_init(&st, "ns", 8, 4), 0);
	for (i = 0; i < 9; i++) {
		snprintf(key, sizeof(key), "ns/agents/n%d", i);
		line(&st, key, b, l, i + 1);
	}
	CU_ASSERT_EQUAL(st.valid, 8);
	CU_ASSERT_EQUAL(st.rejected, 1);
	for (i = 0; i < 5; i++) {
		size_t lx = blob_of(1, 1, 0x10000 * (i + 1), x, sizeof(x));

		snprintf(key, sizeof(key), "ns/exports/n0/e%d", i);
		line(&st, key, x, lx, 20 + i);
	}
	CU_ASSERT_EQUAL(dir_state_find(&st, "n0")->nexports, 4);
	CU_ASSERT_EQUAL(st.rejected, 2);
	/* an export blob of two descriptors is not an export */
	line(&st, "ns/exports/n1/e", two, lt, 30);
	CU_ASSERT_EQUAL(dir_state_find(&st, "n1")->nexports, 0);
	CU_ASSERT_EQUAL(st.rejected, 3);
	dir_state_fini(&st);
}

/* After a store reset the agents missing from the new list stay until
 * the deadline; the ones that came back stay after it. */
static void test_reset_grace(void)
{
	struct dir_state st;
	uint8_t b[512], x[512];
	size_t l = blob_of(1, 0, 0, b, sizeof(b)), lx = blob_of(1, 1, 0x4000, x, sizeof(x));
	uint32_t t;

	CU_ASSERT_EQUAL_FATAL(dir_state_init(&st, "ns", 8, 4), 0);
	line(&st, "ns/agents/back", b, l, 10);
	line(&st, "ns/exports/back/e", x, lx, 11);
	line(&st, "ns/agents/gone", b, l, 12);
	while (next(&st, NULL, NULL))
		;
	/* the new store's list holds neither */
	dir_state_list_begin(&st);
	dir_state_list_end(&st, true, 1000);
	CU_ASSERT_EQUAL(st.valid, 2);
	CU_ASSERT_EQUAL(dir_state_expire(&st, 500), 1000);
	CU_ASSERT_EQUAL(next(&st, NULL, NULL), 0);
	/* one re-publishes, its export too */
	line(&st, "ns/agents/back", b, l, 2);
	line(&st, "ns/exports/back/e", x, lx, 3);
	CU_ASSERT_EQUAL(next(&st, NULL, NULL), 0);	/* nothing changed */
	CU_ASSERT_EQUAL(dir_state_expire(&st, 1001), 0);
	CU_ASSERT_EQUAL(st.valid, 1);
	CU_ASSERT_EQUAL(next(&st, NULL, NULL), RDMAXFER_DIR_LEAVE);
	t = next(&st, NULL, NULL);
	CU_ASSERT_EQUAL(t, 0);
	CU_ASSERT(dir_agent_present(dir_state_find(&st, "back")));
	CU_ASSERT_EQUAL(dir_agent_exports(dir_state_find(&st, "back"), NULL, 0), 1);
	/* without a reset, a list drops what it does not hold at once */
	dir_state_list_begin(&st);
	dir_state_list_end(&st, false, 0);
	CU_ASSERT_EQUAL(st.valid, 0);
	dir_state_fini(&st);
}

static void corpus_one(void *user, const char *name, const char *path,
		       const unsigned char *data, size_t len)
{
	(void)user;
	(void)path;
	if (fd_check(data, len)) {
		CU_FAIL("corpus file broke the contract");
		fprintf(stderr, "%s\n", name);
	}
}

static void test_corpus(void)
{
	int files = rc_corpus_each(CORPUS_DIR, corpus_one, NULL);

	rc_diag("corpus: %d files", files);
	CU_ASSERT(files >= 8);
}

static const struct rc_test_case cases[] = {
	{ "names_and_keys", test_names_keys },
	{ "base64_strict", test_base64 },
	{ "json_numbers_and_bounds", test_json },
	{ "events", test_events },
	{ "bounds", test_bounds },
	{ "store_reset_grace", test_reset_grace },
	{ "corpus_replay", test_corpus },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	rc_add_suite("rdmaxfer_dirparse", NULL, NULL, cases);
	return rc_test_main(argc, argv);
}
