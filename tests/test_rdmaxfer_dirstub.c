// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_dirstub.c - the directory's calls in a library built
 * without etcd support (librdmaxfer/directory/stub.c, built here on its
 * own whatever configure found): every call answers -EOPNOTSUPP or does
 * nothing, the attributes still get their defaults, and the stub defines
 * every directory symbol the version script exports, so a program links
 * against either build.  CI builds with etcd; without this program the
 * stub would never run anywhere.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rdmaxfer_directory.h"
#include "rc_test.h"

#ifndef LIBRDMAXFER_MAP
#define LIBRDMAXFER_MAP "../librdmaxfer/librdmaxfer.map"
#endif

/* the directory's entries in the version script: the calls below */
static const char *const dir_syms[] = {
	"rdmaxfer_connect_name", "rdmaxfer_directory_attr_init",
	"rdmaxfer_directory_close", "rdmaxfer_directory_events",
	"rdmaxfer_directory_export", "rdmaxfer_directory_export_md",
	"rdmaxfer_directory_export_mem", "rdmaxfer_directory_list",
	"rdmaxfer_directory_list_free", "rdmaxfer_directory_lookup",
	"rdmaxfer_directory_open", "rdmaxfer_directory_publish",
	"rdmaxfer_directory_publish_md", "rdmaxfer_directory_query",
	"rdmaxfer_directory_set_event_cb", "rdmaxfer_directory_unpublish",
	"rdmaxfer_directory_watch", "rdmaxfer_directory_withdraw",
};

#define NSYMS	(sizeof(dir_syms) / sizeof(dir_syms[0]))

static void event_cb(void *user, const struct rdmaxfer_dir_event *ev)
{
}

static void test_calls(void)
{
	struct rdmaxfer_directory_attr attr;
	struct rdmaxfer_directory *dir = (void *)&attr;	/* never used */
	struct rdmaxfer_directory_info info;
	struct rdmaxfer_dir_list *list = NULL;
	struct rdmaxfer_dir_event ev;
	struct rdmaxfer_desc desc;
	struct rdmaxfer_peer *peer = NULL;
	struct rdmaxfer_md *md = NULL;
	char buf[64];

	memset(&attr, 0x5a, sizeof(attr));
	rdmaxfer_directory_attr_init(&attr);
	CU_ASSERT_EQUAL(attr.ttl_s, RDMAXFER_DIR_DEF_TTL_S);
	CU_ASSERT_EQUAL(attr.timeout_ms, RDMAXFER_DIR_DEF_TIMEOUT_MS);
	CU_ASSERT_EQUAL(attr.max_agents, RDMAXFER_DIR_DEF_MAX_AGENTS);
	rdmaxfer_directory_attr_init(NULL);

	dir = NULL;
	CU_ASSERT_EQUAL(rdmaxfer_directory_open(&attr, &dir), -EOPNOTSUPP);
	CU_ASSERT_PTR_NULL(dir);
	memset(&desc, 0, sizeof(desc));
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish(dir, NULL, "a"),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(dir, "a", buf,
						      sizeof(buf)),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_directory_unpublish(dir, "a"), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_directory_export(dir, "a", &desc),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_directory_export_md(dir, "a", buf,
						     sizeof(buf)),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_directory_export_mem(dir, "a", buf,
						      sizeof(buf), 0, &desc),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_directory_withdraw(dir, "a", &desc),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(dir, "a", 0, &md),
			-EOPNOTSUPP);
	CU_ASSERT_PTR_NULL(md);
	CU_ASSERT_EQUAL(rdmaxfer_directory_list(dir, &list), -EOPNOTSUPP);
	CU_ASSERT_PTR_NULL(list);
	rdmaxfer_directory_list_free(NULL);
	CU_ASSERT_EQUAL(rdmaxfer_connect_name(dir, NULL, "a", 0, &peer),
			-EOPNOTSUPP);
	CU_ASSERT_PTR_NULL(peer);
	CU_ASSERT_EQUAL(rdmaxfer_directory_watch(dir, 0), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_directory_events(dir, &ev, 1, 0),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_directory_set_event_cb(dir, event_cb, NULL),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_directory_query(dir, &info), -EOPNOTSUPP);
	rdmaxfer_directory_close(NULL);
}

/* every directory symbol of the version script is one of dir_syms (and
 * so defined by the stub, or this program would not link), and each of
 * dir_syms is in the script */
static void test_symbols(void)
{
	unsigned int seen[NSYMS] = { 0 };
	char line[256], name[128];
	unsigned int i, found = 0, unknown = 0;
	FILE *f = fopen(LIBRDMAXFER_MAP, "r");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " %127[a-z_0-9];", name) != 1 ||
		    (strncmp(name, "rdmaxfer_directory_", 19) &&
		     strcmp(name, "rdmaxfer_connect_name")))
			continue;
		for (i = 0; i < NSYMS; i++)
			if (!strcmp(name, dir_syms[i]))
				break;
		if (i == NSYMS) {
			rc_diag("%s is exported but not in the stub's list",
				name);
			unknown++;
		} else if (!seen[i]++) {
			found++;
		}
	}
	fclose(f);
	rc_diag("%u directory symbols in the version script, %u in the stub",
		found + unknown, (unsigned int)NSYMS);
	CU_ASSERT_EQUAL(unknown, 0);
	CU_ASSERT_EQUAL(found, NSYMS);
}

static const struct rc_test_case cases[] = {
	{ "calls_eopnotsupp", test_calls },
	{ "symbols_match_map", test_symbols },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	rc_add_suite("rdmaxfer_dirstub", NULL, NULL, cases);
	return rc_test_main(argc, argv);
}
