/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmaxfer_dmabuf_test.h - what the two dma-buf tests share: counting
 * the open fds, so a call that fails (or a region deregistered) is seen
 * to leave none behind.
 */
#ifndef RDMAXFER_DMABUF_TEST_H
#define RDMAXFER_DMABUF_TEST_H

#include <dirent.h>

/* Entries of /proc/self/fd (the directory's own fd included), or -1. */
static inline int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

#endif /* RDMAXFER_DMABUF_TEST_H */
