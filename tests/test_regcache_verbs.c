// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_regcache_verbs.c - end to end with real verbs (rxe in the VM).
 *
 * libregcache with an ibv_reg_mr backend and a loopback RC QP pair.  The
 * fabtests mr_cache_evict idea: get a registration, free the memory, put
 * new memory with new content at the same address (mmap, then brk), get
 * again, and RDMA WRITE through the key the cache returns.  The data must
 * land in the new memory; were the old registration returned, it would go
 * to the freed pages and the new memory would not change.
 *
 * Needs an RDMA device ($RXE_DEV, else the first one; $RXE_GID_INDEX for
 * RoCE) and a caching monitor (RC_TEST_MONITOR, default auto).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "regcache.h"
#include "rc_test.h"
#include "rc_verbs.h"

#define ACC	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_READ)
#define LEN	(64 * 1024)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp[2];
static char *src;
static struct ibv_mr *src_mr;
static struct regcache *cache;
static long nreg, ndereg;
static size_t psz;

static int v_reg(void *user, void *addr, size_t len, uint32_t access, void **h)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, (int)access);

	if (!mr)
		return errno ? -errno : -EIO;
	nreg++;
	*h = mr;
	return 0;
}

static int v_dereg(void *user, void *h)
{
	ndereg++;
	return -ibv_dereg_mr(h);
}

static int setup(void)
{
	const char *want = getenv("RXE_DEV"), *gi = getenv("RXE_GID_INDEX");
	struct ibv_device **list;
	struct ibv_qp_init_attr qa;
	union ibv_gid gid;
	int i, n, gid_index = gi ? atoi(gi) : 1;

	list = ibv_get_device_list(&n);
	if (!list || !n)
		return -ENODEV;
	for (i = 0; i < n; i++)
		if (!want || !strcmp(ibv_get_device_name(list[i]), want))
			break;
	if (i == n)
		return -ENODEV;
	ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		return -ENODEV;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!pd || !cq || ibv_query_gid(ctx, 1, gid_index, &gid))
		return -EIO;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp[0] = ibv_create_qp(pd, &qa);
	qp[1] = ibv_create_qp(pd, &qa);
	if (!qp[0] || !qp[1])
		return -EIO;
	if (rc_qp_connect(qp[0], 1, qp[1]->qp_num, &gid, gid_index, ACC) ||
	    rc_qp_connect(qp[1], 1, qp[0]->qp_num, &gid, gid_index, ACC))
		return -EIO;
	src = aligned_alloc(psz, LEN);
	src_mr = src ? ibv_reg_mr(pd, src, LEN, ACC) : NULL;
	return src_mr ? 0 : -EIO;
}

/* RDMA WRITE 'len' bytes of src (filled with c) to raddr/rkey; 0 on success. */
static int rdma_write(void *raddr, uint32_t rkey, size_t len, char c)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)src, .length = (uint32_t)len, .lkey = src_mr->lkey,
	};
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	time_t t0 = time(NULL);
	int n;

	memset(src, c, len);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp[0], &wr, &bad))
		return -1;
	do {
		n = ibv_poll_cq(cq, 1, &wc);
	} while (n == 0 && time(NULL) - t0 < 20);
	if (n != 1 || wc.status != IBV_WC_SUCCESS) {
		rc_diag("write completion: n=%d status=%s", n,
			n == 1 ? ibv_wc_status_str(wc.status) : "timeout");
		return -1;
	}
	return 0;
}

static bool all(const char *p, size_t len, char c)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != c)
			return false;
	return true;
}

/* get, RDMA WRITE through the cached key, check it landed; returns the mr. */
static struct ibv_mr *write_through_cache(char *addr, size_t len, char c)
{
	struct regcache_entry *e;
	struct ibv_mr *mr;

	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, addr, len, ACC, &e), 0);
	mr = regcache_entry_handle(e);
	CU_ASSERT_EQUAL(rdma_write(addr, mr->rkey, len, c), 0);
	CU_ASSERT(all(addr, len, c));
	regcache_put(cache, e);
	return mr;
}

static void test_mmap_reuse(void)
{
	struct ibv_mr *mr1, *mr2;
	uint32_t rkey1;
	char *a, *b;

	a = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	CU_ASSERT_FATAL(a != MAP_FAILED);
	memset(a, 'a', LEN);
	mr1 = write_through_cache(a, LEN, 'X');
	rkey1 = mr1->rkey;
	/* Hit: the same key again. */
	CU_ASSERT_PTR_EQUAL(write_through_cache(a, LEN, 'Z'), mr1);
	CU_ASSERT_EQUAL_FATAL(munmap(a, LEN), 0);
	b = mmap(a, LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CU_ASSERT_FATAL(b == a);
	memset(b, 'b', LEN);
	mr2 = write_through_cache(b, LEN, 'Y');
	/* A new registration (the old mr was deregistered: compare keys). */
	CU_ASSERT_NOT_EQUAL(mr2->rkey, rkey1);
	CU_ASSERT(all(b, LEN, 'Y'));
	munmap(b, LEN);
}

static void test_brk_reuse(void)
{
	struct regcache_entry *warm;
	struct ibv_mr *mr1, *mr2;
	uint32_t rkey1;
	char *cur, *a, *b;
	intptr_t pad;

	/* Let the cache and verbs allocate before brk moves. */
	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, src, psz, ACC, &warm), 0);
	regcache_put(cache, warm);
	cur = sbrk(0);
	pad = (intptr_t)((psz - (uintptr_t)cur % psz) % psz);
	CU_ASSERT_FATAL(sbrk(pad) != (void *)-1);
	a = sbrk(LEN);
	CU_ASSERT_FATAL(a != (void *)-1);
	memset(a, 'a', LEN);
	mr1 = write_through_cache(a, LEN, 'X');
	rkey1 = mr1->rkey;
	CU_ASSERT_FATAL(sbrk(-LEN) != (void *)-1);
	b = sbrk(LEN);
	CU_ASSERT_FATAL(b == a);
	memset(b, 'b', LEN);
	mr2 = write_through_cache(b, LEN, 'Y');
	CU_ASSERT_NOT_EQUAL(mr2->rkey, rkey1);
	CU_ASSERT(all(b, LEN, 'Y'));
	sbrk(-LEN - pad);
}

static void test_in_use(void)
{
	struct regcache_entry *e1, *e2;
	struct ibv_mr *mr1, *mr2;
	long before;
	char *a, *b;

	a = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	CU_ASSERT_FATAL(a != MAP_FAILED);
	memset(a, 'a', LEN);
	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, a, LEN, ACC, &e1), 0);
	mr1 = regcache_entry_handle(e1);
	CU_ASSERT_EQUAL_FATAL(munmap(a, LEN), 0);
	b = mmap(a, LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CU_ASSERT_FATAL(b == a);
	memset(b, 'b', LEN);
	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, b, LEN, ACC, &e2), 0);
	mr2 = regcache_entry_handle(e2);
	CU_ASSERT_PTR_NOT_EQUAL(mr1, mr2);
	CU_ASSERT_EQUAL(rdma_write(b, mr2->rkey, LEN, 'Y'), 0);
	CU_ASSERT(all(b, LEN, 'Y'));
	/* The dead entry is deregistered at its last put, not before. */
	before = ndereg;
	CU_ASSERT_EQUAL(regcache_put(cache, e1), 0);
	CU_ASSERT_EQUAL(ndereg, before + 1);
	regcache_put(cache, e2);
	munmap(b, LEN);
}

static const struct rc_test_case cases[] = {
	{ "mmap_reuse_write", test_mmap_reuse },
	{ "brk_reuse_write", test_brk_reuse },
	{ "invalidated_in_use", test_in_use },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	const char *m = getenv("RC_TEST_MONITOR");
	struct regcache_attr at = {
		.reg = v_reg, .dereg = v_dereg, .merge_max = 1,
		.flags = REGCACHE_ATTR_NO_ENV,
	};
	int ret, rc;

	psz = (size_t)sysconf(_SC_PAGESIZE);
	ret = setup();
	if (ret)
		rc_skip_all("no usable RDMA device: %s", strerror(-ret));
	if (m && !strcmp(m, "uffd"))
		at.monitor = REGCACHE_MONITOR_UFFD;
	else if (m && !strcmp(m, "kmod"))
		at.monitor = REGCACHE_MONITOR_KMOD;
	ret = regcache_create(&at, &cache);
	if (ret)
		rc_skip_all("regcache_create: %s", strerror(-ret));
	if (!strcmp(regcache_monitor_name(cache), "none"))
		rc_skip_all("no caching monitor (kmod or uffd) available");
	rc_diag("monitor %s", regcache_monitor_name(cache));
	rc_add_suite("verbs", NULL, NULL, cases);
	rc = rc_test_main(argc, argv);
	regcache_destroy(cache);
	if (nreg != ndereg) {
		printf("# %ld registrations, %ld deregistrations\n", nreg, ndereg);
		rc = RC_EXIT_FAIL;
	}
	ibv_dereg_mr(src_mr);
	ibv_destroy_qp(qp[0]);
	ibv_destroy_qp(qp[1]);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return rc;
}
