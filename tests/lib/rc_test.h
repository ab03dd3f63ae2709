/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rc_test.h - the glue between CUnit and the test harness.
 *
 * Every test program registers CUnit suites and calls rc_test_main().  Each
 * CUnit test becomes one TAP test point ("ok 3 - suite/test"), so the
 * harness counts test cases, not programs, on the host and in the guests.
 * Exit codes: 0 all passed, 1 a test failed, 77 skipped (with a one-line
 * reason), 99 hard error.
 */
#ifndef RC_TEST_H
#define RC_TEST_H

#include <CUnit/CUnit.h>

#define RC_EXIT_PASS	0
#define RC_EXIT_FAIL	1
#define RC_EXIT_SKIP	77
#define RC_EXIT_ERROR	99

/*
 * Skip the whole program ("1..0 # SKIP reason", exit 77), a TAP
 * diagnostic line, a size knob from the environment: the libc-only
 * versions of the module's selftest harness (tests/kmod/kt_harness.c,
 * linked into librctest too), so that both kinds of program say these
 * things the same way.
 */
#include "../kmod/kt_harness.h"
#define rc_skip_all	kt_skip_all
#define rc_diag		kt_diag
#define rc_env_long	kt_env_long

/* Mark the running test as skipped (call, then return from the test). */
void rc_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * ThreadSanitizer does not follow fork() of a threaded process: in the
 * child it reports what the parent's threads (which the child does not
 * have) did before the fork as racing with the child.  A test that forks
 * a threaded process skips itself there (it runs in the plain and ASan
 * builds): "if (rc_skip_fork_under_tsan()) return;".
 */
static inline int rc_skip_fork_under_tsan(void)
{
#ifdef __SANITIZE_THREAD__
	rc_skip("ThreadSanitizer does not model fork() of a threaded process");
	return 1;
#else
	return 0;
#endif
}


/*
 * Replay a fuzzing corpus: fn(user, name, path, data, len) for each file
 * of folder dir (dot files left out), its data in a buffer of exactly its
 * length, so that a sanitizer sees a read past it.  A folder that cannot
 * be opened or a file that cannot be read is a failed assertion of the
 * running test.  Returns the files handed to fn.
 */
typedef void (*rc_corpus_fn)(void *user, const char *name, const char *path,
			     const unsigned char *data, size_t len);
int rc_corpus_each(const char *dir, rc_corpus_fn fn, void *user);

/*
 * Run every registered suite.  If argv names tests ("suite/test" or
 * "suite"), run only those.  Returns the process exit code.
 */
int rc_test_main(int argc, char **argv);

/* Add a suite of NULL-terminated tests; aborts the program with 99 on failure. */
struct rc_test_case {
	const char *name;
	CU_TestFunc fn;
};
void rc_add_suite(const char *name, CU_InitializeFunc init,
		  CU_CleanupFunc cleanup, const struct rc_test_case *cases);

#endif /* RC_TEST_H */
