// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * kt_harness.c - run the selftests' suites and report each case as a TAP
 * test point (kt_harness.h).  libc only.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kt_harness.h"

#define KT_MAX_SUITES	16

struct kt_suite {
	const char *name;
	int (*init)(void);
	int (*cleanup)(void);
	const struct kt_case *cases;
};

static struct kt_suite kt_suites[KT_MAX_SUITES];
static int kt_nsuites;

/* The running case. */
static pthread_t kt_runner;
static jmp_buf kt_jmp;
static int kt_failed;		/* atomic: KT_EXPECT may fail in any thread */
static int kt_skipping;
static char kt_skip_reason[256];

void kt_add_suite(const char *name, int (*init)(void), int (*cleanup)(void),
		  const struct kt_case *cases)
{
	if (kt_nsuites == KT_MAX_SUITES) {
		printf("Bail out! more than %d suites\n", KT_MAX_SUITES);
		exit(KT_EXIT_ERROR);
	}
	kt_suites[kt_nsuites++] = (struct kt_suite){ name, init, cleanup, cases };
}

void kt__check(int ok, const char *cond, const char *file, int line, int fatal)
{
	if (ok)
		return;
	__atomic_store_n(&kt_failed, 1, __ATOMIC_RELAXED);
	printf("# %s:%d: %s\n", file, line, cond);
	fflush(stdout);
	if (!fatal)
		return;
	if (pthread_equal(pthread_self(), kt_runner))
		longjmp(kt_jmp, 1);
	/* Another thread cannot unwind the case: it ends itself. */
	pthread_exit(NULL);
}

void kt_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(kt_skip_reason, sizeof(kt_skip_reason), fmt, ap);
	va_end(ap);
	kt_skipping = 1;
}

void kt_skip_all(const char *fmt, ...)
{
	va_list ap;

	printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(KT_EXIT_SKIP);
}

void kt_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

long kt_env_long(const char *name, long def, long min, long max)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return def;
	errno = 0;
	n = strtol(v, &end, 0);
	if (errno || *end || n < min || n > max) {
		printf("Bail out! %s=%s: not a whole number from %ld to %ld\n",
		       name, v, min, max);
		fflush(stdout);
		exit(KT_EXIT_ERROR);
	}
	return n;
}

int kt_selected(const char *suite, const char *name, int argc, char **argv)
{
	size_t sl = strlen(suite);
	int i;

	if (argc <= 1)
		return 1;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], suite))
			return 1;
		if (!strncmp(argv[i], suite, sl) && argv[i][sl] == '/' &&
		    !strcmp(argv[i] + sl + 1, name))
			return 1;
	}
	return 0;
}

static double kt_seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* One case, one point.  Returns 1 if it failed. */
static int kt_run_case(const struct kt_suite *s, const struct kt_case *c, unsigned int num)
{
	struct timespec t0;
	double secs;
	int failed;

	kt_skipping = 0;
	kt_skip_reason[0] = '\0';
	__atomic_store_n(&kt_failed, 0, __ATOMIC_RELAXED);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!setjmp(kt_jmp))
		c->fn();
	failed = __atomic_load_n(&kt_failed, __ATOMIC_RELAXED);
	/* where a suite's time goes on a slow guest (the debug kernel) */
	secs = kt_seconds_since(&t0);
	if (secs >= 1.0)
		printf("# %s/%s: %.1f s\n", s->name, c->name, secs);
	if (failed)
		printf("not ok %u - %s/%s\n", num, s->name, c->name);
	else if (kt_skipping)
		printf("ok %u - %s/%s # SKIP %s\n", num, s->name, c->name, kt_skip_reason);
	else
		printf("ok %u - %s/%s\n", num, s->name, c->name);
	fflush(stdout);
	return failed;
}

int kt_main(int argc, char **argv)
{
	unsigned int planned = 0, num = 0, failures = 0;
	const struct kt_case *c;
	int i, n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	kt_runner = pthread_self();
	for (i = 0; i < kt_nsuites; i++)
		for (c = kt_suites[i].cases; c->name; c++)
			planned += kt_selected(kt_suites[i].name, c->name, argc, argv);
	printf("1..%u\n", planned);

	for (i = 0; i < kt_nsuites; i++) {
		const struct kt_suite *s = &kt_suites[i];

		for (n = 0, c = s->cases; c->name; c++)
			n += kt_selected(s->name, c->name, argc, argv);
		if (!n)
			continue;
		if (s->init && s->init()) {
			for (c = s->cases; c->name; c++) {
				if (!kt_selected(s->name, c->name, argc, argv))
					continue;
				printf("not ok %u - %s/%s # suite setup failed\n", ++num,
				       s->name, c->name);
				failures++;
			}
			continue;
		}
		for (c = s->cases; c->name; c++)
			if (kt_selected(s->name, c->name, argc, argv))
				failures += kt_run_case(s, c, ++num);
		if (s->cleanup && s->cleanup()) {
			printf("# %s: suite cleanup failed\n", s->name);
			failures++;
		}
	}
	fflush(stdout);
	return failures ? KT_EXIT_FAIL : KT_EXIT_PASS;
}
