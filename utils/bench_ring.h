/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench_ring.h - rdmaxfer-bench's grain ring test ("ring", bench_ring.c).
 */
#ifndef RDMAXFER_BENCH_RING_H
#define RDMAXFER_BENCH_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmaxfer.h>

struct bench_ring_cfg {
	const uint64_t *sizes;
	size_t nsizes;
	uint32_t iters;			/* grains per point (0: by size) */
	const char *host;		/* the target's listen address */
	bool csv;
	int (*make_agent)(uint32_t flags, struct rdmaxfer_agent **agentp);
	/* the target: an agent with a progress thread */
	int (*make_target)(struct rdmaxfer_agent **agentp);
};

/* Grains per second and bandwidth of the ring for each size and N in
 * {4, 16, 64} between two agents of this process, against plain WRITEs
 * of the same size and depth on the same connection.  0 or -errno. */
int bench_ring(const struct bench_ring_cfg *cfg);

#endif /* RDMAXFER_BENCH_RING_H */
