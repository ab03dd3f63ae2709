// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_sanitizers.c - proof that a sanitizer report fails a test, where
 * the tests run (make check on the host, the VM guests).
 *
 * In a --enable-sanitizers build every test program runs with the options
 * of tests/sanitize.sh (halt_on_error=1, exitcode=86, leak detection on).
 * A clean sanitized run proves nothing if those options never reached the
 * program, or if a report does not change its exit status (a guest does
 * not see the host's environment, LeakSanitizer needs ptrace, ...).  So
 * this program runs itself once per kind of bug its sanitizers catch: a
 * leak, a heap overflow, a use after free, undefined behaviour (ASan
 * build), a data race (TSan build), and asserts that each child exits with
 * status 86.  Skipped (77) in a build without sanitizers.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "rc_test.h"

#if defined(__SANITIZE_ADDRESS__)
#define RC_SAN_ADDRESS	1
#elif defined(__SANITIZE_THREAD__)
#define RC_SAN_THREAD	1
#endif

#define SAN_EXIT	86	/* exitcode= in tests/sanitize.sh */

#if defined(RC_SAN_ADDRESS) || defined(RC_SAN_THREAD)
static const char *self;
#endif

/* ------------------------------------------------- the bugs (children) */

static void *volatile sink;

static int bug_leak(void)
{
	sink = malloc(4096);
	memset(sink, 1, 4096);
	sink = NULL;		/* the only pointer is gone */
	return 0;
}

/* volatile indices and pointers: the bugs are for the sanitizer to find
 * at run time, not for the compiler's warnings */
static int bug_overflow(void)
{
	char *p = malloc(16);
	volatile size_t i = 16;

	p[i] = 1;
	free(p);
	return 0;
}

static int bug_use_after_free(void)
{
	char *p = malloc(16);

	sink = p;
	free(p);
	return *(volatile char *)sink;
}

static int bug_ub(int argc)
{
	volatile int big = 0x7fffffff;

	return big + argc;	/* signed overflow */
}

static int shared;

static void *racer(void *arg)
{
	shared++;		/* unsynchronised, on purpose */
	return arg;
}

static int bug_race(void)
{
	pthread_t t[2];
	int i;

	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, racer, NULL);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return shared > 2;
}

/* ------------------------------------------------------ the tests */
#if defined(RC_SAN_ADDRESS) || defined(RC_SAN_THREAD)

/* Run this program with one bug, its stderr into report; returns its exit
 * status (or 1000 + the signal that killed it). */
static int run_bug(const char *bug, char *report, size_t cap)
{
	char path[] = "/tmp/rc-sanitizers.XXXXXX";
	int fd = mkstemp(path), st;
	ssize_t n;
	pid_t pid;

	if (fd < 0)
		return -errno;
	unlink(path);
	pid = fork();
	if (pid < 0) {
		close(fd);
		return -errno;
	}
	if (!pid) {
		dup2(fd, 2);
		execl(self, self, "--bug", bug, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid)
		st = -errno;
	else
		st = WIFSIGNALED(st) ? 1000 + WTERMSIG(st) : WEXITSTATUS(st);
	n = pread(fd, report, cap - 1, 0);
	report[n > 0 ? n : 0] = 0;
	close(fd);
	return st;
}

static void expect_report(const char *bug)
{
	char report[8192], *eol;
	int st = run_bug(bug, report, sizeof(report));
	char *line = strstr(report, "Sanitizer");

	if (!line)
		line = strstr(report, "runtime error");
	if (line && (eol = strchr(line, '\n')))
		*eol = 0;
	rc_diag("%s: exit status %d, %s", bug, st, line ? line : "no report");
	CU_ASSERT_EQUAL(st, SAN_EXIT);
	CU_ASSERT_PTR_NOT_NULL(line);
}

static void test_options(void)
{
#ifdef RC_SAN_ADDRESS
	const char *opt = getenv("ASAN_OPTIONS");
#else
	const char *opt = getenv("TSAN_OPTIONS");
#endif
	/* the options of tests/sanitize.sh reached this program */
	CU_ASSERT_PTR_NOT_NULL_FATAL(opt);
	CU_ASSERT_PTR_NOT_NULL(strstr(opt, "halt_on_error=1"));
	CU_ASSERT_PTR_NOT_NULL(strstr(opt, "exitcode=86"));
}

#ifdef RC_SAN_ADDRESS
static void test_leak(void)
{
	expect_report("leak");
}

static void test_overflow(void)
{
	expect_report("overflow");
}

static void test_use_after_free(void)
{
	expect_report("use-after-free");
}

static void test_ub(void)
{
	expect_report("ub");
}

static const struct rc_test_case cases[] = {
	{ "options", test_options },
	{ "leak", test_leak },
	{ "heap_overflow", test_overflow },
	{ "use_after_free", test_use_after_free },
	{ "undefined_behaviour", test_ub },
	{ NULL, NULL },
};
#endif

#ifdef RC_SAN_THREAD
static void test_race(void)
{
	expect_report("race");
}

static const struct rc_test_case cases[] = {
	{ "options", test_options },
	{ "data_race", test_race },
	{ NULL, NULL },
};
#endif
#endif /* RC_SAN_ADDRESS || RC_SAN_THREAD */

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--bug")) {
		if (!strcmp(argv[2], "leak"))
			return bug_leak();
		if (!strcmp(argv[2], "overflow"))
			return bug_overflow();
		if (!strcmp(argv[2], "use-after-free"))
			return bug_use_after_free();
		if (!strcmp(argv[2], "ub"))
			return bug_ub(argc);
		if (!strcmp(argv[2], "race"))
			return bug_race();
		return 2;
	}
#if defined(RC_SAN_ADDRESS) || defined(RC_SAN_THREAD)
	self = "/proc/self/exe";
	rc_add_suite("sanitizers", NULL, NULL, cases);
	return rc_test_main(argc, argv);
#else
	rc_skip_all("not a --enable-sanitizers build");
#endif
}
