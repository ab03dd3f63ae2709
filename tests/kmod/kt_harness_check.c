// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * kt_harness_check.c - cases that exercise kt_harness.c itself: a pass,
 * a failing KT_EXPECT that goes on, a failing KT_ASSERT that ends the
 * case, a skip, failures in another thread, a suite whose setup fails,
 * an environment knob.  tests/test_kmod_selftests.sh runs it and checks
 * every line and the exit status: a harness that reported a failure as
 * a pass would let every selftest pass.  Not a selftest itself (run.sh
 * runs test_kmod_* only).
 */
#include <pthread.h>
#include <stddef.h>

#include "kt_harness.h"

static int reached;

static void pass(void)
{
	KT_EXPECT(1);
	KT_ASSERT(1);
}

static void expect_goes_on(void)
{
	KT_EXPECT(1 + 1 == 3);
	reached |= 1;
}

static void assert_stops(void)
{
	KT_ASSERT(2 + 2 == 5);
	reached |= 2;
}

static void skipped(void)
{
	kt_skip("why %d", 7);
}

static void *in_thread(void *arg)
{
	(void)arg;
	KT_EXPECT(3 + 3 == 7);
	KT_ASSERT(4 + 4 == 9);
	reached |= 4;
	return NULL;
}

static void thread_fails(void)
{
	pthread_t th;

	KT_ASSERT(pthread_create(&th, NULL, in_thread, NULL) == 0);
	pthread_join(th, NULL);
}

static void report(void)
{
	kt_diag("reached %d, knob %ld", reached, kt_env_long("KT_CHECK_KNOB", 1, 0, 10));
}

static void never(void)
{
	reached |= 8;
}

static int broken_init(void)
{
	return -1;
}

int main(int argc, char **argv)
{
	static const struct kt_case cases[] = {
		{ "pass", pass },
		{ "expect_goes_on", expect_goes_on },
		{ "assert_stops", assert_stops },
		{ "skipped", skipped },
		{ "thread_fails", thread_fails },
		{ "report", report },
		{ NULL, NULL },
	};
	static const struct kt_case broken[] = {
		{ "never", never },
		{ NULL, NULL },
	};

	kt_add_suite("check", NULL, NULL, cases);
	kt_add_suite("broken", broken_init, NULL, broken);
	return kt_main(argc, argv);
}
