// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_ctl.c - regcachectl(8) against fake sysfs and proc trees
 * (host test).
 *
 * regcachectl only reads and writes sysfs and reads /proc/PID/fdinfo, so
 * REGCACHECTL_SYSFS and REGCACHECTL_PROC pointed at a temporary tree
 * check its output formats, its JSON, its exit codes (0 / 1 refused /
 * 2 usage / 3 not loaded), its parameter writes, that a context seen
 * through several fds (fork, SCM_RIGHTS) is listed once, and that a user
 * who may not read the root-only counters (mode 0400 in the fake tree
 * too) gets their own contexts and a note instead, without the module.  The guest suite runs it against the real module.
 */
#include <errno.h>
#include <stdbool.h>
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

/*
 * Run regcachectl ARGS with the fake root, as a user who may not read the
 * root-only counters if as_user (root reads any file: then setpriv to
 * nobody); stdout+stderr in out[]; exit status returned.
 */
static int ctl_as(bool as_user, const char *args)
{
	const char *prefix = "";
	char cmd[1024];
	size_t n;
	FILE *p;
	int st;

	if (as_user && geteuid() == 0)
		prefix = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
	snprintf(cmd, sizeof(cmd), "REGCACHECTL_SYSFS=%s REGCACHECTL_PROC=%s/proc %s%s %s 2>&1",
		 root, root, prefix, REGCACHECTL_PATH, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int ctl(const char *args)
{
	return ctl_as(false, args);
}

static int make_tree(void)
{
	char path[512];
	const char *dirs[] = { "module", "module/regcache", "module/regcache/parameters",
			       "class", "class/misc", "class/misc/regcache", "proc",
			       "proc/101", "proc/101/fdinfo", "proc/202", "proc/202/fdinfo",
			       "proc/303", "proc/303/fdinfo", "proc/self", "proc/self/fdinfo" };
	size_t i;

	if (!mkdtemp(root) || chmod(root, 0755))
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
	put("module/regcache/parameters/max_user_contexts", "128\n");
	put("module/regcache/parameters/max_user_watches", "1048576\n");
	put("module/regcache/parameters/max_user_bytes", "33554432\n");
	/* 101 owns a context on fd 3 and has a pipe on fd 0 */
	put("proc/101/fdinfo/0", "pos:\t0\nflags:\t02\nmnt_id:\t13\nino:\t55\n");
	put("proc/101/fdinfo/3", "pos:\t0\nflags:\t02000002\nmnt_id:\t5\nino:\t9\n"
	    "regcache-id:\t7\nregcache-pid:\t101\nregcache-comm:\tapp\"one\n"
	    "regcache-watches:\t4\nregcache-max-watches:\t65536\n"
	    "regcache-declared-pinned-bytes:\t4096\nregcache-mm-pinned-bytes:\t8192\n"
	    "regcache-events:\t2\nregcache-pending:\t0\nregcache-overflows:\t0\n"
	    "regcache-ring-entries:\t1024\nregcache-strict:\t0\n"
	    "regcache-bytes:\t622592\nregcache-user:\t1000\n"
	    "regcache-user-bytes:\t1245184\nregcache-user-max-bytes:\t33554432\n");
	put("proc/101/status", "Name:\tapp\nVmPin:\t       8 kB\n");
	/* 202's context is also open in its child 303 (same id): listed once */
	put("proc/202/fdinfo/5", "pos:\t0\nregcache-id:\t9\nregcache-pid:\t202\n"
	    "regcache-comm:\tother\nregcache-watches:\t3\n"
	    "regcache-declared-pinned-bytes:\t4096\nregcache-mm-pinned-bytes:\t0\n"
	    "regcache-events:\t1\nregcache-overflows:\t0\n"
	    "regcache-bytes:\t622592\nregcache-user:\t1000\n"
	    "regcache-user-bytes:\t1245184\nregcache-user-max-bytes:\t33554432\n");
	put("proc/303/fdinfo/5", "pos:\t0\nregcache-id:\t9\nregcache-pid:\t202\n"
	    "regcache-comm:\tother\nregcache-watches:\t3\n");
	/* "self" is not a pid directory */
	put("proc/self/fdinfo/3", "regcache-id:\t7\nregcache-pid:\t101\n");
	return 0;
}

static int cleanup_tree(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* The activity counters as the module makes them: root only. */
static void restrict_counters(void)
{
	static const char *const c[] = { "nr_contexts", "watches", "pinned_bytes",
					 "events_total", "overflows", "foreign_mm" };
	char path[512];
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		snprintf(path, sizeof(path), "%s/class/misc/regcache/%s", root, c[i]);
		CU_ASSERT(chmod(path, 0400) == 0);
	}
}

static void test_user(void)
{
	if (geteuid() == 0 && access("/usr/bin/setpriv", X_OK)) {
		rc_skip("runs as root and setpriv(1) is absent: cannot become a user");
		return;
	}
	restrict_counters();
	CU_ASSERT(ctl_as(true, "") == 0);
	CU_ASSERT(strstr(out, "abi_version        1") != NULL);
	CU_ASSERT(strstr(out, "watches            7") == NULL);
	CU_ASSERT(strstr(out, "the global counters are readable by root only") != NULL);
	CU_ASSERT(strstr(out, "     101      101      3        4") != NULL);
	CU_ASSERT(ctl_as(true, "--json") == 0);
	CU_ASSERT(strstr(out, "\"counters\": {\"abi_version\": 1}, \"counters_need_root\": true, "
			 "\"contexts\": [{\"pid\": 101") != NULL);
	/* root still reads them all */
	CU_ASSERT(ctl("--json") == 0);
	CU_ASSERT(strstr(out, "\"watches\": 7") != NULL && strstr(out, "need_root") == NULL);
}

static void test_status(void)
{
	CU_ASSERT(ctl("") == 0);
	CU_ASSERT(strstr(out, "regcache.ko loaded") != NULL);
	CU_ASSERT(strstr(out, "max_watches") != NULL);
	CU_ASSERT(strstr(out, "strict             0") != NULL);
	CU_ASSERT(strstr(out, "watches            7") != NULL);
	CU_ASSERT(strstr(out, "other") != NULL);
}

static void test_json(void)
{
	CU_ASSERT(ctl("--json") == 0);
	CU_ASSERT(strstr(out, "{\"loaded\": true, \"parameters\": {\"max_watches\": 65536, "
			 "\"ring_entries\": 1024, \"max_pinned_bytes\": 0, \"strict\": 0, \"max_user_contexts\": 128, "
			 "\"max_user_watches\": 1048576, \"max_user_bytes\": 33554432}") == out);
	CU_ASSERT(strstr(out, "\"pinned_bytes\": 8192") != NULL);
	CU_ASSERT(strstr(out, "{\"pid\": 101, \"holder\": 101, \"fd\": 3, \"watches\": 4, "
			 "\"declared_pinned_bytes\": 4096, \"mm_pinned_bytes\": 8192, "
			 "\"vm_pin_bytes\": 8192, \"events\": 2, \"overflows\": 0, "
			 "\"kernel_bytes\": 622592, \"comm\": \"app\\\"one\"}") != NULL);
	/* one user, both contexts, the budget as fdinfo says it */
	CU_ASSERT(strstr(out, "\"users\": [{\"uid\": 1000, \"kernel_bytes\": 1245184, "
			 "\"max_kernel_bytes\": 33554432, \"contexts\": 2}]}\n") != NULL);
	CU_ASSERT(ctl("--json params") == 0);
	CU_ASSERT(strcmp(out, "{\"max_watches\": 65536, \"ring_entries\": 1024, "
			 "\"max_pinned_bytes\": 0, \"strict\": 0, \"max_user_contexts\": 128, "
			 "\"max_user_watches\": 1048576, \"max_user_bytes\": 33554432}\n") == 0);
}

static void test_contexts(void)
{
	const char *a, *b;

	CU_ASSERT(ctl("contexts") == 0);
	CU_ASSERT(strstr(out, "     101      101      3        4           4096           8192"
			 "           8192          2         0       622592  app\"one") != NULL);
	CU_ASSERT(strstr(out, "users:\n       uid   kernel_bytes      max_bytes contexts\n"
			 "      1000        1245184       33554432        2\n") != NULL);
	/* the shared context once, under its first holder; no VmPin: -1 */
	a = strstr(out, "     202      202      5        3");
	CU_ASSERT(a != NULL);
	CU_ASSERT(a && strstr(a, "-1") != NULL);
	CU_ASSERT(strstr(out, "     303") == NULL);
	CU_ASSERT(ctl("--json contexts") == 0);
	CU_ASSERT(strstr(out, "{\"contexts\": [{\"pid\": 101") == out);
	b = strstr(out, "\"pid\": 202");
	CU_ASSERT(b != NULL && strstr(b + 1, "\"pid\": 202") == NULL);
	CU_ASSERT(strstr(out, "\"vm_pin_bytes\": -1") != NULL);
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
		{ "user_counters_need_root", test_user },
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
