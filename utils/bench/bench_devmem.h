/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench_devmem.h - rdmaxfer-bench's device-memory atomics test
 * ("dm_atomic", bench_devmem.c).
 */
#ifndef RDMAXFER_BENCH_DEVMEM_H
#define RDMAXFER_BENCH_DEVMEM_H

#include <stdbool.h>
#include <stdint.h>

#include <rdmaxfer.h>

struct bench_devmem_cfg {
	const char *host;		/* the target's listen address */
	uint32_t iters;			/* atomics per round and side */
	bool csv;
	int (*make_agent)(uint32_t flags, struct rdmaxfer_agent **agentp);
};

/* fadd_lat and cswap_lat (one atomic in flight) on a word of device
 * memory (rdmaxfer_mem_alloc_device()) and on a word of registered host
 * memory, between two agents of this process, interleaved; prints the
 * path device memory took (the host fallback where the device has none).
 * 0 or -errno. */
int bench_devmem(const struct bench_devmem_cfg *cfg);

#endif /* RDMAXFER_BENCH_DEVMEM_H */
