/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmaxfer_file_test.h - what the file endpoint tests share
 * (test_rdmaxfer_file.c on the host, test_rdmaxfer_file_remote.c on rxe).
 */
#ifndef RDMAXFER_FILE_TEST_H
#define RDMAXFER_FILE_TEST_H

#include <stdio.h>
#include <unistd.h>

/* Open descriptors of this process (a failed transfer must leak none). */
static inline int open_fds(void)
{
	char p[64];
	int n = 0;

	for (int i = 0; i < 1024; i++) {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", i);
		n += access(p, F_OK) == 0;
	}
	return n;
}

#endif /* RDMAXFER_FILE_TEST_H */
