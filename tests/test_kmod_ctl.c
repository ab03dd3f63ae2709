// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_ctl.c - regcachectl(8) against a fake sysfs tree (host test).
 *
 * regcachectl only reads and writes sysfs, so REGCACHECTL_SYSFS pointed at
 * a temporary tree checks its output formats, its JSON, its exit codes
 * (0 / 1 refused / 2 usage / 3 not loaded) and its parameter writes
 * without the module.  The guest suite runs it against the real module.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rc_test.h"

#ifndef REGCACHECTL_PATH
#error "REGCACHECTL_PATH must name the regcachectl binary"
#endif

static char root[] = "/tmp/kmod_ctl_XXXXXX";
static char out[8192];

static void put(const char *rel, const char *val)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f)
		exit(RC_EXIT_ERROR);
	fputs(val, f);
	fclose(f);
}

static void get(const char *rel, char *buf, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	buf[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
}

/* Run regcachectl ARGS with the fake root; stdout+stderr in out[]; exit status returned. */
static int ctl(const char *args)
{
	char cmd[1024];
	size_t n;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "REGCACHECTL_SYSFS=%s %s %s 2>&1", root, REGCACHECTL_PATH, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int make_tree(void)
{
	char path[512];
	const char *dirs[] = { "module", "module/regcache", "module/regcache/parameters",
			       "class", "class/misc", "class/misc/regcache" };
	size_t i;

	if (!mkdtemp(root))
		return -1;
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		if (mkdir(path, 0755))
			return -1;
	}
	put("module/regcache/parameters/max_watches", "65536\n");
	put("module/regcache/parameters/ring_entries", "1024\n");
	put("module/regcache/parameters/max_pinned_bytes", "0\n");
	put("module/regcache/parameters/strict", "N\n");
	put("class/misc/regcache/abi_version", "1\n");
	put("class/misc/regcache/nr_contexts", "2\n");
	put("class/misc/regcache/watches", "7\n");
	put("class/misc/regcache/pinned_bytes", "8192\n");
	put("class/misc/regcache/events_total", "3\n");
	put("class/misc/regcache/overflows", "0\n");
	put("class/misc/regcache/foreign_mm", "1\n");
	put("class/misc/regcache/contexts", "101 4 4096 2 0 app\"one\n202 3 4096 1 0 other\n");
	return 0;
}

static int cleanup_tree(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_status(void)
{
	CU_ASSERT(ctl("") == 0);
	CU_ASSERT(strstr(out, "regcache.ko loaded") != NULL);
	CU_ASSERT(strstr(out, "max_watches") != NULL);
	CU_ASSERT(strstr(out, "strict             0") != NULL);
	CU_ASSERT(strstr(out, "watches            7") != NULL);
	if (geteuid() == 0)
		CU_ASSERT(strstr(out, "other") != NULL);
}

static void test_json(void)
{
	CU_ASSERT(ctl("--json") == 0);
	CU_ASSERT(strstr(out, "{\"loaded\": true, \"parameters\": {\"max_watches\": 65536, "
			 "\"ring_entries\": 1024, \"max_pinned_bytes\": 0, \"strict\": 0}") == out);
	CU_ASSERT(strstr(out, "\"pinned_bytes\": 8192") != NULL);
	if (geteuid() == 0)
		CU_ASSERT(strstr(out, "{\"pid\": 101, \"watches\": 4, \"pinned_bytes\": 4096, "
				 "\"events\": 2, \"overflows\": 0, \"comm\": \"app\\\"one\"}") != NULL);
	CU_ASSERT(ctl("--json params") == 0);
	CU_ASSERT(strcmp(out, "{\"max_watches\": 65536, \"ring_entries\": 1024, "
			 "\"max_pinned_bytes\": 0, \"strict\": 0}\n") == 0);
}

static void test_contexts(void)
{
	CU_ASSERT(ctl("contexts") == 0);
	CU_ASSERT(strstr(out, "     101        4           4096          2         0  app\"one") != NULL);
	CU_ASSERT(ctl("--json contexts") == 0);
	CU_ASSERT(strstr(out, "{\"contexts\": [{\"pid\": 101") == out);
}

static void test_set(void)
{
	char v[64];

	CU_ASSERT(ctl("set ring_entries=64 strict=1") == 0);
	get("module/regcache/parameters/ring_entries", v, sizeof(v));
	CU_ASSERT(strcmp(v, "64") == 0);
	get("module/regcache/parameters/strict", v, sizeof(v));
	CU_ASSERT(strcmp(v, "1") == 0);
	CU_ASSERT(ctl("set nosuch=1") == 2);
	CU_ASSERT(strstr(out, "unknown parameter 'nosuch'") != NULL);
	CU_ASSERT(ctl("set ring_entries") == 2);
	CU_ASSERT(ctl("set ring_entries=") == 2);
	CU_ASSERT(ctl("set") == 2);
	CU_ASSERT(ctl("frobnicate") == 2);
	CU_ASSERT(ctl("--bogus") == 2);
	/* a parameter file that cannot be opened for writing: refused, errno shown */
	put("module/regcache/parameters/max_watches", "65536\n");
	{
		char path[512];

		snprintf(path, sizeof(path), "%s/module/regcache/parameters/max_watches", root);
		CU_ASSERT_FATAL(unlink(path) == 0);
		CU_ASSERT_FATAL(mkdir(path, 0755) == 0);	/* fopen "w" on a directory: EISDIR */
		CU_ASSERT(ctl("set max_watches=8") == 1);
		CU_ASSERT(strstr(out, "set max_watches=8: -21 (Is a directory)") != NULL);
		rmdir(path);
		put("module/regcache/parameters/max_watches", "65536\n");
	}
}

static void test_not_loaded(void)
{
	char a[512], b[512];

	snprintf(a, sizeof(a), "%s/module/regcache", root);
	snprintf(b, sizeof(b), "%s/module/regcache.off", root);
	CU_ASSERT_FATAL(rename(a, b) == 0);
	CU_ASSERT(ctl("") == 3);
	CU_ASSERT(strstr(out, "not loaded") != NULL);
	CU_ASSERT(ctl("--json") == 3);
	CU_ASSERT(strcmp(out, "{\"loaded\": false}\n") == 0);
	CU_ASSERT(ctl("params") == 3);
	CU_ASSERT(rename(b, a) == 0);
}

int main(int argc, char **argv)
{
	static const struct rc_test_case cases[] = {
		{ "status", test_status },
		{ "json", test_json },
		{ "contexts", test_contexts },
		{ "set", test_set },
		{ "not_loaded", test_not_loaded },
		{ NULL, NULL },
	};

	if (access(REGCACHECTL_PATH, X_OK))
		rc_skip_all("%s not built", REGCACHECTL_PATH);
	if (make_tree())
		return RC_EXIT_ERROR;
	rc_add_suite("regcachectl", NULL, NULL, cases);
	{
		int ret = rc_test_main(argc, argv);

		cleanup_tree();
		return ret;
	}
}
