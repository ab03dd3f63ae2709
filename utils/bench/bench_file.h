/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench_file.h - rdmaxfer-bench's "file" test: file -> remote through
 * rdmaxfer_file_to_peer() against the plain loop (see bench_file.c).
 */
#ifndef RDMAXFER_BENCH_FILE_H
#define RDMAXFER_BENCH_FILE_H

#include <stdbool.h>
#include <stdint.h>

#include <rdmaxfer.h>

struct bench_file_cfg {
	const char *addr;		/* loopback address of the device */
	uint64_t total;			/* file size */
	const char *dir;		/* where the file goes */
	bool csv;
};

/* Print MiB/s of the raw disk read, the plain network write, the pread +
 * blocking WRITE loop and rdmaxfer_file_to_peer() at 64 KiB, 1 MiB and
 * 8 MiB chunks.  Returns 0 or -errno. */
int bench_file(const struct bench_file_cfg *cfg);

#endif /* RDMAXFER_BENCH_FILE_H */
