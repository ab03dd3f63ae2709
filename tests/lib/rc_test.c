// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * rc_test.c - run CUnit suites and report every test as a TAP test point.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <CUnit/Basic.h>

#include "rc_test.h"

static unsigned int rc_num;
static unsigned int rc_failed;
static char rc_skip_reason[256];
static int rc_skipping;
static struct timespec rc_t0;

void rc_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rc_skip_reason, sizeof(rc_skip_reason), fmt, ap);
	va_end(ap);
	rc_skipping = 1;
}

/* The whole file in a buffer of exactly its length, or NULL. */
static unsigned char *read_file(const char *path, size_t *lenp)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (len = ftell(f)) >= 0 &&
	    !fseek(f, 0, SEEK_SET)) {
		buf = malloc(len > 0 ? (size_t)len : 1);
		if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
			free(buf);
			buf = NULL;
		}
		*lenp = (size_t)len;
	}
	fclose(f);
	return buf;
}

int rc_corpus_each(const char *dir, rc_corpus_fn fn, void *user)
{
	char path[8192];
	struct dirent *de;
	int files = 0;
	DIR *d = opendir(dir);

	if (!d) {
		CU_FAIL("corpus directory missing");
		rc_diag("%s: %s", dir, strerror(errno));
		return 0;
	}
	while ((de = readdir(d))) {
		unsigned char *buf;
		size_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		buf = read_file(path, &len);
		if (!buf) {
			CU_FAIL("unreadable corpus file");
			rc_diag("%s", path);
			continue;
		}
		fn(user, de->d_name, path, buf, len);
		free(buf);
		files++;
	}
	closedir(d);
	return files;
}

static void rc_test_start(const CU_pTest test, const CU_pSuite suite)
{
	rc_skipping = 0;
	rc_skip_reason[0] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &rc_t0);
}

/*
 * A test that took a second or more says so on a diagnostic line: where a
 * suite's time goes on a slow guest (the debug kernel) and in CI.
 */
static void rc_test_time(const CU_pTest test, const CU_pSuite suite)
{
	struct timespec t1;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (t1.tv_sec - rc_t0.tv_sec) + (t1.tv_nsec - rc_t0.tv_nsec) / 1e9;
	if (s >= 1.0)
		printf("# %s/%s: %.1f s\n", suite->pName, test->pName, s);
}

static void rc_test_complete(const CU_pTest test, const CU_pSuite suite,
			     const CU_pFailureRecord failure)
{
	const CU_FailureRecord *f;

	rc_test_time(test, suite);
	rc_num++;
	if (failure) {
		rc_failed++;
		printf("not ok %u - %s/%s\n", rc_num, suite->pName, test->pName);
		for (f = failure; f; f = f->pNext)
			printf("# %s:%u: %s\n", f->strFileName ? f->strFileName : "?",
			       f->uiLineNumber,
			       f->strCondition ? f->strCondition : "?");
	} else if (rc_skipping) {
		printf("ok %u - %s/%s # SKIP %s\n", rc_num, suite->pName,
		       test->pName, rc_skip_reason);
	} else {
		printf("ok %u - %s/%s\n", rc_num, suite->pName, test->pName);
	}
	fflush(stdout);
}

static void rc_suite_init_failure(const CU_pSuite suite)
{
	CU_pTest t;

	for (t = suite->pTest; t; t = t->pNext) {
		rc_num++;
		rc_failed++;
		printf("not ok %u - %s/%s # suite setup failed\n", rc_num,
		       suite->pName, t->pName);
	}
	fflush(stdout);
}

void rc_add_suite(const char *name, CU_InitializeFunc init,
		  CU_CleanupFunc cleanup, const struct rc_test_case *cases)
{
	CU_pSuite s;

	if (!CU_get_registry() && CU_initialize_registry() != CUE_SUCCESS)
		exit(RC_EXIT_ERROR);
	s = CU_add_suite(name, init, cleanup);
	if (!s)
		exit(RC_EXIT_ERROR);
	for (; cases->name; cases++)
		if (!CU_add_test(s, cases->name, cases->fn))
			exit(RC_EXIT_ERROR);
}

int rc_test_main(int argc, char **argv)
{
	CU_pTestRegistry reg;
	CU_pSuite s;
	CU_pTest t;
	unsigned int planned = 0;
	CU_ErrorCode err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!CU_get_registry() && CU_initialize_registry() != CUE_SUCCESS)
		return RC_EXIT_ERROR;
	reg = CU_get_registry();
	for (s = reg->pSuite; s; s = s->pNext)
		for (t = s->pTest; t; t = t->pNext) {
			t->fActive = kt_selected(s->pName, t->pName, argc, argv);
			planned += t->fActive ? 1 : 0;
		}
	printf("1..%u\n", planned);
	CU_set_test_start_handler(rc_test_start);
	CU_set_test_complete_handler(rc_test_complete);
	CU_set_suite_init_failure_handler(rc_suite_init_failure);
	CU_set_error_action(CUEA_IGNORE);
	CU_basic_set_mode(CU_BRM_SILENT);
	/* Tests left out by name are inactive: CUnit reports that as an error. */
	err = CU_run_all_tests();
	if (err != CUE_SUCCESS && err != CUE_TEST_INACTIVE &&
	    err != CUE_SUITE_INACTIVE && !rc_failed) {
		fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
		CU_cleanup_registry();
		return RC_EXIT_ERROR;
	}
	CU_cleanup_registry();
	return rc_failed ? RC_EXIT_FAIL : RC_EXIT_PASS;
}
