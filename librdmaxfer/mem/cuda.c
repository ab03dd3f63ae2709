// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cuda.c - librdmaxfer-cuda: CUDA device memory -> dma-buf fd -> a
 * RDMAXFER_MEM_DMABUF region.  Built only when configure finds cuda.h and
 * libcuda; a library of its own so librdmaxfer's ABI stays the same
 * without CUDA.  Compile- and link-tested only: no GPU was available.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "rdmaxfer.h"
#include "rdmaxfer_cuda.h"

static int cu_errno(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
		return 0;
	case CUDA_ERROR_INVALID_VALUE:
		return -EINVAL;
	case CUDA_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUDA_ERROR_NOT_INITIALIZED:
	case CUDA_ERROR_DEINITIALIZED:
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_CONTEXT:
	case CUDA_ERROR_STUB_LIBRARY:
		return -ENODEV;
	default:
		return -EIO;
	}
}

__attribute__((visibility("default")))
int rdmaxfer_mem_register_cuda(struct rdmaxfer_agent *agent, uint64_t dptr,
			       size_t len, uint32_t access,
			       struct rdmaxfer_mem **memp)
{
	struct rdmaxfer_dmabuf_attr a;
	uint64_t page, base, end;
	long ps = sysconf(_SC_PAGESIZE);
	int fd = -1, ret;
	CUresult r;

	if (!agent || !memp || !dptr || !len || ps <= 0)
		return -EINVAL;
	page = (uint64_t)ps;
	if (dptr > UINT64_MAX - page || len > UINT64_MAX - page - dptr)
		return -EINVAL;
	/* the export takes host-page-aligned ranges only */
	base = dptr & ~(page - 1);
	end = (dptr + len + page - 1) & ~(page - 1);
	r = cuMemGetHandleForAddressRange(&fd, (CUdeviceptr)base,
					  (size_t)(end - base),
					  CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
					  0);
	if (r != CUDA_SUCCESS)
		return cu_errno(r);
	if (fd < 0)
		return -EIO;
	memset(&a, 0, sizeof(a));
	a.fd = fd;
	a.access = access;
	a.offset = dptr - base;
	a.len = len;
	a.iova = dptr;
	ret = rdmaxfer_mem_register_dmabuf(agent, &a, memp);
	close(fd);	/* a region holds its own dup of the dma-buf */
	return ret;
}
