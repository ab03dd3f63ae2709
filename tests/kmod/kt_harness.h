/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * kt_harness.h - the TAP harness of regcache.ko's selftests.
 *
 * The module's behaviour tests (tests/kmod/) are meant to be run the way
 * a kernel developer runs selftests: built with nothing but libc (the
 * plain tests/kmod/Makefile) and run as root against an insmod'ed module,
 * one program per area, each speaking TAP.  The same sources are built by
 * automake for make check, where the VM suites relay their TAP.  So this
 * harness replaces CUnit for them; it keeps the shape of tests/lib/
 * rc_test.h that the other programs use:
 *
 *   - a program registers suites of cases (kt_add_suite) and calls
 *     kt_main(); every case is one test point, "ok 3 - suite/case";
 *   - KT_EXPECT(cond) records a failure and goes on, KT_ASSERT(cond)
 *     records it and ends the case (longjmp back to the runner, as
 *     CUnit's _FATAL asserts do); each failure prints "# file:line: cond";
 *   - kt_skip() marks the running case skipped (the caller then returns),
 *     kt_skip_all() skips the whole program ("1..0 # SKIP why", exit 77);
 *   - arguments "suite" or "suite/case" run only those;
 *   - exit 0 all passed, 1 a case failed, 77 skipped, 99 hard error.
 *
 * Cases run in the main thread.  KT_EXPECT is safe from any thread;
 * KT_ASSERT outside the main thread records the failure and ends that
 * thread, not the case.  A child process (fork) has its own copy of the
 * books: it reports to its parent through its exit status.
 */
#ifndef KT_HARNESS_H
#define KT_HARNESS_H

#define KT_EXIT_PASS	0
#define KT_EXIT_FAIL	1
#define KT_EXIT_SKIP	77
#define KT_EXIT_ERROR	99

struct kt_case {
	const char *name;
	void (*fn)(void);
};

/*
 * Add a suite: cases ends with { NULL, NULL }.  init (may be NULL) runs
 * before the first selected case and returning non-zero fails every case
 * of the suite; cleanup (may be NULL) runs after the last.
 */
void kt_add_suite(const char *name, int (*init)(void), int (*cleanup)(void),
		  const struct kt_case *cases);

/* Run the selected cases; returns the exit status for main(). */
int kt_main(int argc, char **argv);

/*
 * Does the command line select suite/name?  No arguments select all;
 * an argument "suite" selects its every case, "suite/name" one case.
 * (tests/lib/rc_test.c selects CUnit tests with it too.)
 */
int kt_selected(const char *suite, const char *name, int argc, char **argv);

/* Not for direct use: what the two assertion macros expand to. */
void kt__check(int ok, const char *cond, const char *file, int line, int fatal);

#define KT_EXPECT(cond)	kt__check(!!(cond), #cond, __FILE__, __LINE__, 0)
#define KT_ASSERT(cond)	kt__check(!!(cond), #cond, __FILE__, __LINE__, 1)

void kt_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void kt_skip_all(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* A TAP diagnostic line ("# ..."). */
void kt_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A size knob from the environment (KMOD_STRESS_SECONDS, ...): def when
 * unset or empty, else a whole number (decimal or 0x hex) from min to
 * max; anything else ends the program with 99 ("Bail out!"), so that a
 * typo never runs a test of 0 iterations that passes.
 */
long kt_env_long(const char *name, long def, long min, long max);

#endif /* KT_HARNESS_H */
