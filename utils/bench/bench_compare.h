/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench_compare.h - rdmaxfer-bench --compare (our test and the matching
 * perftest test on one device, interleaved, with the ratio) and --plot
 * (bandwidth or latency against size, drawn by gnuplot).
 */
#ifndef RDMAXFER_BENCH_COMPARE_H
#define RDMAXFER_BENCH_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_POINTS	32

/* one curve: value (MiB/s or usec) per message size */
struct bench_series {
	const char *label;
	size_t n;
	uint64_t bytes[BENCH_MAX_POINTS];
	double value[BENCH_MAX_POINTS];
};

struct bench_compare_cfg {
	const char *self;		/* this program, re-run for our side */
	const char *test;		/* write_bw, read_bw, write_lat, read_lat */
	bool lat;
	const char *addr;		/* the device's own address (loopback) */
	const char *device;		/* NULL: first ACTIVE */
	int ib_port;			/* 0: first ACTIVE */
	int gid_index;			/* < 0: RoCE v2 IPv4 */
	uint16_t port;			/* ours on port, perftest on port + 1 */
	uint64_t size;
	bool all;
	long iters;			/* < 0: the tools' default */
	unsigned int window;
	unsigned int batch;
	bool single;			/* ours: --thread-mode single */
	unsigned int qps;
	int reps;
	int timeout_ms;
	const char *plot;		/* NULL: no plot */
};

/* perftest's program for one of our tests, NULL if it has none */
const char *bench_compare_peer(const char *test);

/* the full path of PROGRAM found in $PATH into buf; 0 or -ENOENT */
int bench_find_program(const char *program, char *buf, size_t len);

/*
 * --plot's checks before anything runs: FILE ends in .png, its folder can
 * be written and gnuplot is installed.  Prints why not; 0 or -errno.
 */
int bench_plot_check(const char *prog, const char *file);

/* draw the series (log-log) into file; 0 or -errno, with a message */
int bench_plot(const char *prog, const char *file, const char *title,
	       bool lat, const struct bench_series *s, size_t ns);

/* run the comparison and print its table; 0 or -errno */
int bench_compare(const char *prog, const struct bench_compare_cfg *c);

#endif
