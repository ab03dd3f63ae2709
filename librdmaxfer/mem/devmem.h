/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * devmem.h - NIC device memory (MEMIC), private: the choice of a path
 * from what the device offers, and the build and teardown sequence of a
 * device-memory region through a table of operations (devmem_plan.c, no
 * verbs: the host tests fake the operations and the capabilities);
 * devmem.c supplies the real operations and the public calls.
 */
#ifndef RX_DEVMEM_H
#define RX_DEVMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaxfer.h"
#include "core/wire.h"

#define RX_DM_NPATHS		(RDMAXFER_DM_PATH_HOST + 1)
/* mkey_7_0 of our KSM keys: any byte; a fixed one names them in dumps */
#define RX_DM_KSM_TAG		0x6d

/* What the device offers: the input of the path choice. */
struct rx_dm_hw {
	uint64_t max_dm_size;		/* ibv_query_device_ex; 0: none */
	bool mlx5;			/* mlx5dv_is_supported() */
	bool devx;			/* a DEVX context, the PD's number */
	bool dmabuf_export;		/* ibv_dm_export_dmabuf_fd built in */
	/* start-up check per path: 0 not run, 1 passed, else -errno */
	int check[RX_DM_NPATHS];
};

/* $RDMAXFER_DM: NULL or "" or "auto", "on", "off"; else -EINVAL. */
int rx_dm_policy_parse(const char *s);
/* The policy of one call: flags (RDMAXFER_DM_REQUIRE/_HOST) over the
 * agent's; -EINVAL for unknown or both flags. */
int rx_dm_call_policy(int agent_policy, uint32_t flags);

/* The best device path the hardware offers whose check did not fail
 * (KSM, then DMABUF, then ZERO_BASED), or PATH_HOST; why says why the
 * better ones were passed over ("" if none was). */
uint32_t rx_dm_best_path(const struct rx_dm_hw *hw, char *why, size_t wlen);

/*
 * The path of an allocation of len bytes under policy: 0 and *pathp
 * (why: why not a device path, "" when one), or -EINVAL (len 0 or not a
 * multiple of 8), -ENOSPC (policy on, len over max_dm_size),
 * -EOPNOTSUPP (policy on, no usable device memory); why says it.
 */
int rx_dm_pick(const struct rx_dm_hw *hw, int policy, size_t len,
	       uint32_t *pathp, char *why, size_t wlen);

/* The verbs (and mmap) a device-memory region is made of; 0 or -errno. */
struct rx_dm_ops {
	void *ctx;
	int (*alloc_dm)(void *ctx, size_t len, void **dm);
	int (*free_dm)(void *ctx, void *dm);
	/* zero-based MR over the whole DM */
	int (*reg_dm_mr)(void *ctx, void *dm, size_t len, void **mr,
			 uint32_t *lkey, uint32_t *rkey);
	int (*dereg_mr)(void *ctx, void *mr);
	/* an inaccessible range of len bytes, page-aligned */
	int (*reserve)(void *ctx, size_t len, void **va);
	int (*unreserve)(void *ctx, void *va, size_t len);
	/* the CREATE_MKEY input (devmem_prm.c) to a DEVX object + key */
	int (*create_ksm)(void *ctx, const void *in, size_t inlen, void **obj,
			  uint32_t *key);
	int (*destroy_ksm)(void *ctx, void *obj);
	/* the DM as a dma-buf, registered at iova */
	int (*reg_dmabuf)(void *ctx, void *dm, size_t len, uint64_t iova,
			  void **mr, uint32_t *rkey);
};

/* One device-memory region, and what its descriptors say. */
struct rx_dm_region {
	uint32_t path;
	size_t len;
	void *dm;
	void *mr;			/* zero-based MR over dm */
	uint32_t lkey, mr_rkey;
	void *rsv;			/* reserved range (KSM, DMABUF) */
	size_t rsv_len;
	void *ksm;			/* KSM: the DEVX mkey object */
	void *dbuf_mr;			/* DMABUF: the MR at rsv */
	uint64_t addr;			/* descriptors: byte 0's address */
	uint32_t rkey;
	bool zero_based;
};

/*
 * Build a region of len bytes along path (KSM, DMABUF or ZERO_BASED;
 * pdn: the PD's number for the KSM key; page_size: the reservation's
 * unit and the KSM entity).  On error everything made so far is undone
 * in reverse and *r is zeroed.
 */
int rx_dm_build(const struct rx_dm_ops *ops, uint32_t path, size_t len,
		uint32_t pdn, size_t page_size, struct rx_dm_region *r);
/* Undo a built region: the key over the range, the range, the MR, the
 * DM (each user before what it uses). */
void rx_dm_teardown(const struct rx_dm_ops *ops, struct rx_dm_region *r);
/* A descriptor of [offset, offset + len) of the region (len 0: to the
 * end); -ERANGE outside it. */
int rx_dm_desc(const struct rx_dm_region *r, uint64_t offset, uint64_t len,
	       struct rdmaxfer_desc *d);

#endif /* RX_DEVMEM_H */
