/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench_reg.h - rdmaxfer-bench's registration-access test ("reg_access"),
 * in a file of its own (see bench_reg.c).
 */
#ifndef RDMAXFER_BENCH_REG_H
#define RDMAXFER_BENCH_REG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmaxfer.h>

struct ibv_pd;

/* What a raw registration of the benchmark grants (reg, nixl and
 * reg_access's raw column): every remote right, as the remote-access
 * memory it is compared with (<infiniband/verbs.h> where used). */
#define BENCH_RAW_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

struct bench_reg_cfg {
	const uint64_t *sizes;
	size_t nsizes;
	int batches;			/* timed batches per size and mode */
	int batch;			/* register + deregister pairs per batch */
	bool csv;
	/* an agent with the benchmark's options and these extra flags */
	int (*make_agent)(uint32_t flags, struct rdmaxfer_agent **agentp);
	/* a protection domain of its own on the named device (raw column) */
	int (*open_pd)(const char *device, struct ibv_pd **pdp);
	void (*close_pd)(struct ibv_pd *pd);
};

/* One batch of n ibv_reg_mr (BENCH_RAW_ACCESS | extra) + ibv_dereg_mr of
 * one range, no cache: usec per pair.  Returns 0 or -errno. */
int bench_raw_batch(struct ibv_pd *pd, void *buf, uint64_t len, int extra,
		    int n, double *usec);

/* Print the register + deregister cost of one range, repeated, for local
 * access, remote access (default), remote access with cached rkeys, the
 * bare cache and raw verbs, and the process's first registration, cached
 * and raw.  Returns 0 or -errno. */
int bench_reg_access(const struct bench_reg_cfg *cfg);

#endif /* RDMAXFER_BENCH_REG_H */
