// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mem.c - memory registration through the cache, remote descriptors.
 *
 * A memory handle is a held cache entry: registering the same buffer again,
 * or a transfer touching it, is a cache hit.  Descriptors are plain data
 * (address, length, rkey, kind) so they can be sent to peers as they are.
 * Memory kinds other than HOST are part of the ABI already but are refused
 * until their registration paths exist.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

static int check_kind(enum rdmaxfer_mem_kind kind)
{
	switch (kind) {
	case RDMAXFER_MEM_HOST:
		return 0;
	case RDMAXFER_MEM_ODP:
	case RDMAXFER_MEM_DEVICE:
	case RDMAXFER_MEM_DMABUF:
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
}

/*
 * A cache get that survives never-touched memory.  With the userfaultfd
 * monitor the range is watched for missing pages, and the pinning fault
 * ibv_reg_mr takes inside the kernel on a page that was never touched can
 * fail with -EFAULT (see libregcache(7), uffd limits).  Reading each page
 * once maps the zero page, after which pinning only needs a copy-on-write
 * fault, which userfaultfd does not intercept; then retry.
 */
int rx_cache_get(struct regcache *cache, void *addr, size_t len,
		 struct regcache_entry **entryp)
{
	const volatile uint8_t *p;
	uintptr_t page = 4096, a, end;
	int ret;

	ret = regcache_get(cache, addr, len, RX_ACCESS, entryp);
	if (ret != -EFAULT)
		return ret;
	/* bad memory (unmapped, PROT_NONE): the probe would crash */
	if (!rx_range_accessible(addr, len, false))
		return -EFAULT;
	end = (uintptr_t)addr + len;
	for (a = (uintptr_t)addr & ~(page - 1); a < end; a += page) {
		p = (const volatile uint8_t *)(a < (uintptr_t)addr ?
					       (uintptr_t)addr : a);
		(void)*p;
	}
	return regcache_get(cache, addr, len, RX_ACCESS, entryp);
}

RX_EXPORT
int rdmaxfer_mem_register(struct rdmaxfer_agent *agent, void *addr,
			  size_t len, enum rdmaxfer_mem_kind kind,
			  struct rdmaxfer_mem **memp)
{
	struct rdmaxfer_mem *mem;
	struct ibv_mr *mr;
	int ret;

	if (!agent || !addr || !len || !memp)
		return -EINVAL;
	ret = check_kind(kind);
	if (ret)
		return ret;
	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return -ENOMEM;
	ret = rx_cache_get(agent->cache, addr, len, &mem->entry);
	if (ret) {
		free(mem);
		return ret;
	}
	mr = regcache_entry_handle(mem->entry);
	mem->agent = agent;
	mem->addr = addr;
	mem->len = len;
	mem->kind = kind;
	mem->rkey = mr->rkey;
	pthread_mutex_lock(&agent->lock);
	rx_list_add_tail(&agent->mems, &mem->node);
	pthread_mutex_unlock(&agent->lock);
	*memp = mem;
	return 0;
}

void rx_mem_release(struct rdmaxfer_mem *mem)
{
	rx_list_del(&mem->node);
	regcache_put(mem->agent->cache, mem->entry);
	free(mem);
}

RX_EXPORT
int rdmaxfer_mem_deregister(struct rdmaxfer_mem *mem)
{
	struct rdmaxfer_agent *agent;

	if (!mem)
		return -EINVAL;
	agent = mem->agent;
	pthread_mutex_lock(&agent->lock);
	rx_list_del(&mem->node);
	pthread_mutex_unlock(&agent->lock);
	regcache_put(agent->cache, mem->entry);
	free(mem);
	return 0;
}

static int sub_range(uint64_t base, uint64_t size, uint64_t offset,
		     uint64_t len, uint64_t *addr, uint64_t *lenp)
{
	if (offset >= size)
		return -ERANGE;
	if (!len)
		len = size - offset;
	if (len > size - offset)
		return -ERANGE;
	*addr = base + offset;
	*lenp = len;
	return 0;
}

RX_EXPORT
int rdmaxfer_mem_desc(const struct rdmaxfer_mem *mem, size_t offset,
		      size_t len, struct rdmaxfer_desc *desc)
{
	uint64_t a, l;
	int ret;

	if (!mem || !desc)
		return -EINVAL;
	ret = sub_range((uintptr_t)mem->addr, mem->len, offset, len, &a, &l);
	if (ret)
		return ret;
	desc->addr = a;
	desc->len = l;
	desc->rkey = mem->rkey;
	desc->kind = mem->kind;
	return 0;
}

RX_EXPORT
int rdmaxfer_desc_sub(const struct rdmaxfer_desc *desc, uint64_t offset,
		      uint64_t len, struct rdmaxfer_desc *out)
{
	uint64_t a, l;
	int ret;

	if (!desc || !out)
		return -EINVAL;
	ret = sub_range(desc->addr, desc->len, offset, len, &a, &l);
	if (ret)
		return ret;
	out->addr = a;
	out->len = l;
	out->rkey = desc->rkey;
	out->kind = desc->kind;
	return 0;
}
