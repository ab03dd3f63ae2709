// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_cuda.c - the optional CUDA helper (librdmaxfer-cuda),
 * built only where configure found cuda.h and libcuda.  Not in make
 * check: linked against the toolkit's stub libcuda where there is no
 * driver, it cannot even load there.  Run by hand with a libcuda.so.1 on
 * the library path (the stub's calls all return CUDA_ERROR_STUB_LIBRARY):
 * bad input gets -EINVAL before CUDA is called; without a driver, device
 * or context the export fails with -ENODEV, leaking no fd.  Where cuInit()
 * finds a GPU, the export itself runs (cuMemAlloc, then the dma-buf fd)
 * and, where an RDMA device is present too, the registration.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include <cuda.h>

#include "rc_test.h"
#include "rdmaxfer.h"
#include "rdmaxfer_cuda.h"
#include "rdmaxfer_dmabuf_test.h"

static void test_bad_input(void)
{
	struct rdmaxfer_agent *a = (struct rdmaxfer_agent *)&a; /* not used */
	struct rdmaxfer_mem *m = NULL;
	int fds = count_fds();

	CU_ASSERT_EQUAL(rdmaxfer_mem_register_cuda(NULL, 4096, 4096, 0, &m),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_cuda(a, 4096, 4096, 0, NULL),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_cuda(a, 0, 4096, 0, &m),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_cuda(a, 4096, 0, 0, &m),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_cuda(a, UINT64_MAX - 100, 4096,
						   0, &m), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_cuda(a, 4096, SIZE_MAX, 0, &m),
			-EINVAL);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_EQUAL(count_fds(), fds);
}

/* No context on this thread: the export fails before the agent is used. */
static void test_no_context(void)
{
	struct rdmaxfer_agent *a = (struct rdmaxfer_agent *)&a; /* not used */
	struct rdmaxfer_mem *m = NULL;
	int fds = count_fds(), ret;

	ret = rdmaxfer_mem_register_cuda(a, 1ULL << 40, 65536, 0, &m);
	rc_diag("export without a context: %d (%s)", ret,
		rdmaxfer_strerror(ret));
	CU_ASSERT(ret == -ENODEV || ret == -EINVAL);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_EQUAL(count_fds(), fds);
}

/* A GPU: the export for real, and the registration where it can be. */
static void test_gpu(void)
{
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_mem *m = NULL;
	const char *name = NULL;
	CUdeviceptr p;
	CUcontext ctx;
	CUdevice dev;
	CUresult r;
	int fd = -1, fds, ret;

	r = cuInit(0);
	if (r == CUDA_SUCCESS)
		r = cuDeviceGet(&dev, 0);
	if (r != CUDA_SUCCESS) {
		cuGetErrorName(r, &name);
		rc_skip("no GPU: cuInit/cuDeviceGet: %s (%d)",
			name ? name : "?", (int)r);
		return;
	}
	/* the primary context: cuCtxCreate's signature changed in CUDA 13 */
	CU_ASSERT_EQUAL_FATAL(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(cuMemAlloc(&p, 2 << 20), CUDA_SUCCESS);
	fds = count_fds();
	r = cuMemGetHandleForAddressRange(&fd, p, 2 << 20,
					  CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	cuGetErrorName(r, &name);
	rc_diag("cuMemGetHandleForAddressRange: %s, fd %d", name, fd);
	CU_ASSERT_EQUAL(r, CUDA_SUCCESS);
	if (fd >= 0)
		close(fd);
	if (!rdmaxfer_agent_create(NULL, &agent)) {
		ret = rdmaxfer_mem_register_cuda(agent, p + 4096, 65536 + 3,
						 RDMAXFER_ACCESS_REMOTE, &m);
		rc_diag("rdmaxfer_mem_register_cuda: %s",
			rdmaxfer_strerror(ret));
		CU_ASSERT(ret == 0 || ret == -EOPNOTSUPP);
		if (!ret)
			CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
		rdmaxfer_agent_destroy(agent);
	}
	CU_ASSERT_EQUAL(count_fds(), fds);
	cuMemFree(p);
	cuDevicePrimaryCtxRelease(dev);
}

int main(int argc, char **argv)
{
	static const struct rc_test_case cases[] = {
		{ "bad_input", test_bad_input },
		{ "no_context", test_no_context },
		{ "gpu", test_gpu },
		{ NULL, NULL },
	};

	rc_add_suite("cuda", NULL, NULL, cases);
	return rc_test_main(argc, argv);
}
