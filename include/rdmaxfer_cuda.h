/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmaxfer_cuda.h - optional helper: CUDA device memory registered with
 * librdmaxfer as a dma-buf region (see rdmaxfer_dmabuf(3)).
 *
 * Built only where configure found cuda.h and libcuda (--with-cuda, default
 * auto), as a library of its own (librdmaxfer-cuda), so librdmaxfer's
 * exported symbols and dependencies are the same with and without CUDA.
 * COMPILE- AND LINK-TESTED ONLY: never run against a GPU, so it is not
 * installed; link the build tree's librdmaxfer/librdmaxfer-cuda.la.
 */
#ifndef RDMAXFER_CUDA_H
#define RDMAXFER_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <rdmaxfer.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Register [dptr, dptr + len) of CUDA device memory (a CUdeviceptr of the
 * calling thread's current context): cuMemGetHandleForAddressRange()
 * exports the host pages around it as a dma-buf fd
 * (CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD), rdmaxfer_mem_register_dmabuf()
 * registers the range with iova dptr under the default policy, and the fd
 * is closed (the region keeps its own dup).  Returns 0, -EINVAL (NULL
 * agent or memp, dptr 0, len 0, range wraps),
 * -ENODEV (no CUDA driver, device or context), -EOPNOTSUPP (the driver
 * or the device cannot export or take the dma-buf), -ENOMEM, -EIO (other
 * CUDA errors), or what rdmaxfer_mem_register_dmabuf() returns.
 */
int rdmaxfer_mem_register_cuda(struct rdmaxfer_agent *agent, uint64_t dptr,
			       size_t len, uint32_t access,
			       struct rdmaxfer_mem **memp);

#ifdef __cplusplus
}
#endif

#endif /* RDMAXFER_CUDA_H */
