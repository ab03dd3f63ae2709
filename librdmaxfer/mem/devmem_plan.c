// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * devmem_plan.c - NIC device memory without the device: which path an
 * allocation takes, and the order in which a region is made and unmade.
 *
 * Paths, best first (each only if the device offers it and the agent's
 * start-up check of it did not fail):
 * 1. KSM: ibv_alloc_dm, a zero-based MR over it (ibv_reg_dm_mr with
 *    IBV_ACCESS_ZERO_BASED), a PROT_NONE reservation of the same (page
 *    rounded) length, and a DEVX CREATE_MKEY of access mode KSM whose
 *    entries map the reservation page by page onto the MR: peers address
 *    device memory with ordinary virtual addresses that no other mapping
 *    of the process can take.  mlx5 only (UCX's MEMIC does the same).
 * 2. DMABUF: the DM exported as a dma-buf and registered at the reserved
 *    range, where rdma-core has ibv_dm_export_dmabuf_fd() (44 has not).
 * 3. ZERO_BASED: the zero-based MR alone; descriptors carry
 *    RDMAXFER_DESC_ZERO_BASED and address the region from 0.
 * 4. HOST: no usable device memory: host memory (devmem.c).
 * Policy off takes 4; on fails where auto would take 4.
 *
 * Everything here goes through struct rx_dm_ops, so the host tests make
 * every step fail in turn and count what is left behind.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "devmem_prm.h"

#ifndef RX_EXPORT
#define RX_EXPORT	__attribute__((visibility("default")))
#endif

RX_EXPORT
const char *rdmaxfer_dm_path_name(uint32_t path)
{
	switch (path) {
	case RDMAXFER_DM_PATH_KSM:
		return "ksm";
	case RDMAXFER_DM_PATH_DMABUF:
		return "dmabuf";
	case RDMAXFER_DM_PATH_ZERO_BASED:
		return "zero-based";
	case RDMAXFER_DM_PATH_HOST:
		return "host";
	default:
		return "?";
	}
}

int rx_dm_policy_parse(const char *s)
{
	if (!s || !*s || !strcmp(s, "auto"))
		return RDMAXFER_DM_AUTO;
	if (!strcmp(s, "on"))
		return RDMAXFER_DM_ON;
	if (!strcmp(s, "off"))
		return RDMAXFER_DM_OFF;
	return -EINVAL;
}

int rx_dm_call_policy(int agent_policy, uint32_t flags)
{
	if (flags & ~(RDMAXFER_DM_REQUIRE | RDMAXFER_DM_HOST) ||
	    (flags & RDMAXFER_DM_REQUIRE && flags & RDMAXFER_DM_HOST))
		return -EINVAL;
	if (flags & RDMAXFER_DM_REQUIRE)
		return RDMAXFER_DM_ON;
	if (flags & RDMAXFER_DM_HOST)
		return RDMAXFER_DM_OFF;
	return agent_policy;
}

static void add_why(char *why, size_t wlen, const char *fmt, const char *a,
		    int err)
{
	size_t used = strlen(why);

	if (used + 3 >= wlen)
		return;
	if (used) {
		strcat(why, "; ");
		used += 2;
	}
	snprintf(why + used, wlen - used, fmt, a, strerror(-err));
}

uint32_t rx_dm_best_path(const struct rx_dm_hw *hw, char *why, size_t wlen)
{
	static const uint32_t order[] = { RDMAXFER_DM_PATH_KSM,
					  RDMAXFER_DM_PATH_DMABUF,
					  RDMAXFER_DM_PATH_ZERO_BASED };
	size_t i;

	why[0] = '\0';
	if (!hw->max_dm_size) {
		snprintf(why, wlen, "no device memory (max_dm_size 0)");
		return RDMAXFER_DM_PATH_HOST;
	}
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		uint32_t p = order[i];

		if (p == RDMAXFER_DM_PATH_KSM && !hw->devx)
			continue;
		if (p == RDMAXFER_DM_PATH_DMABUF && !hw->dmabuf_export)
			continue;
		if (hw->check[p] < 0) {
			add_why(why, wlen,
				"%s: start-up atomic check failed (%s)",
				rdmaxfer_dm_path_name(p), hw->check[p]);
			continue;
		}
		return p;
	}
	return RDMAXFER_DM_PATH_HOST;
}

int rx_dm_pick(const struct rx_dm_hw *hw, int policy, size_t len,
	       uint32_t *pathp, char *why, size_t wlen)
{
	uint32_t p;

	why[0] = '\0';
	if (!len || len % 8) {
		snprintf(why, wlen,
			 "length %zu is not a positive multiple of 8", len);
		return -EINVAL;
	}
	if (policy == RDMAXFER_DM_OFF) {
		snprintf(why, wlen, "policy off");
		*pathp = RDMAXFER_DM_PATH_HOST;
		return 0;
	}
	if (hw->max_dm_size && len > hw->max_dm_size) {
		snprintf(why, wlen, "length %zu over max_dm_size %llu", len,
			 (unsigned long long)hw->max_dm_size);
		if (policy == RDMAXFER_DM_ON)
			return -ENOSPC;
		*pathp = RDMAXFER_DM_PATH_HOST;
		return 0;
	}
	p = rx_dm_best_path(hw, why, wlen);
	if (p == RDMAXFER_DM_PATH_HOST && policy == RDMAXFER_DM_ON) {
		if (!why[0])
			snprintf(why, wlen, "no path to device memory works");
		return -EOPNOTSUPP;
	}
	if (p != RDMAXFER_DM_PATH_HOST)
		why[0] = '\0';
	*pathp = p;
	return 0;
}

static int log2_exact(size_t v)
{
	int l = 0;

	if (!v || (v & (v - 1)))
		return -1;
	while (v > 1) {
		v >>= 1;
		l++;
	}
	return l;
}

/* The KSM key over the reservation: the PRM input, built and sent. */
static int make_ksm(const struct rx_dm_ops *ops, struct rx_dm_region *r,
		    uint32_t pdn, size_t page_size)
{
	struct rx_ksm_entry *e;
	struct rx_ksm_mkey m;
	int logp = log2_exact(page_size), n, ret;
	size_t inlen;
	void *in;

	if (logp < 0)
		return -EINVAL;
	n = rx_prm_ksm_layout((uintptr_t)r->rsv, r->len, (unsigned int)logp,
			      r->lkey, NULL, 0);
	if (n < 0)
		return n;
	e = calloc((size_t)n, sizeof(*e));
	inlen = rx_prm_ksm_in_len((uint32_t)n);
	in = malloc(inlen);
	if (!e || !in) {
		ret = -ENOMEM;
		goto out;
	}
	rx_prm_ksm_layout((uintptr_t)r->rsv, r->len, (unsigned int)logp,
			  r->lkey, e, (uint32_t)n);
	memset(&m, 0, sizeof(m));
	m.pdn = pdn;
	m.access = RX_PRM_ACCESS_ALL;
	m.tag = RX_DM_KSM_TAG;
	m.log_entity = (uint8_t)logp;
	m.start = (uintptr_t)r->rsv;
	m.len = r->len;
	m.entries = e;
	m.n = (uint32_t)n;
	ret = rx_prm_ksm_mkey_in(&m, in, inlen);
	if (!ret)
		ret = ops->create_ksm(ops->ctx, in, inlen, &r->ksm, &r->rkey);
out:
	free(in);
	free(e);
	return ret;
}

int rx_dm_build(const struct rx_dm_ops *ops, uint32_t path, size_t len,
		uint32_t pdn, size_t page_size, struct rx_dm_region *r)
{
	int ret;

	memset(r, 0, sizeof(*r));
	if (!len || !page_size || (path != RDMAXFER_DM_PATH_KSM &&
				   path != RDMAXFER_DM_PATH_DMABUF &&
				   path != RDMAXFER_DM_PATH_ZERO_BASED))
		return -EINVAL;
	r->path = path;
	r->len = len;
	ret = ops->alloc_dm(ops->ctx, len, &r->dm);
	if (ret)
		goto fail;
	ret = ops->reg_dm_mr(ops->ctx, r->dm, len, &r->mr, &r->lkey,
			     &r->mr_rkey);
	if (ret)
		goto free_dm;
	if (path == RDMAXFER_DM_PATH_ZERO_BASED) {
		r->addr = 0;
		r->rkey = r->mr_rkey;
		r->zero_based = true;
		return 0;
	}
	r->rsv_len = (len + page_size - 1) / page_size * page_size;
	ret = ops->reserve(ops->ctx, r->rsv_len, &r->rsv);
	if (ret)
		goto dereg_mr;
	if (path == RDMAXFER_DM_PATH_KSM)
		ret = make_ksm(ops, r, pdn, page_size);
	else
		ret = ops->reg_dmabuf(ops->ctx, r->dm, len, (uintptr_t)r->rsv,
				      &r->dbuf_mr, &r->rkey);
	if (ret)
		goto unreserve;
	r->addr = (uintptr_t)r->rsv;
	return 0;

unreserve:
	ops->unreserve(ops->ctx, r->rsv, r->rsv_len);
dereg_mr:
	ops->dereg_mr(ops->ctx, r->mr);
free_dm:
	ops->free_dm(ops->ctx, r->dm);
fail:
	memset(r, 0, sizeof(*r));
	return ret;
}

void rx_dm_teardown(const struct rx_dm_ops *ops, struct rx_dm_region *r)
{
	/* the KSM key and the dma-buf MR name the range and the MR: first */
	if (r->ksm)
		ops->destroy_ksm(ops->ctx, r->ksm);
	if (r->dbuf_mr)
		ops->dereg_mr(ops->ctx, r->dbuf_mr);
	if (r->rsv)
		ops->unreserve(ops->ctx, r->rsv, r->rsv_len);
	if (r->mr)
		ops->dereg_mr(ops->ctx, r->mr);
	if (r->dm)
		ops->free_dm(ops->ctx, r->dm);
	memset(r, 0, sizeof(*r));
}

int rx_dm_desc(const struct rx_dm_region *r, uint64_t offset, uint64_t len,
	       struct rdmaxfer_desc *d)
{
	if (offset >= r->len)
		return -ERANGE;
	if (!len)
		len = r->len - offset;
	if (len > r->len - offset)
		return -ERANGE;
	d->addr = r->addr + offset;
	d->len = len;
	d->rkey = r->rkey;
	d->kind = RDMAXFER_MEM_DEVICE |
		  (r->zero_based ? RDMAXFER_DESC_ZERO_BASED : 0);
	return 0;
}
