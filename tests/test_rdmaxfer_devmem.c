// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_devmem.c - NIC device memory (rdmaxfer_mem_alloc_device())
 * on the device at hand, over loopback RoCE ($RXE_ADDR): VM suite devmem.
 *
 * On rxe (no device memory: max_dm_size 0, ibv_alloc_dm EOPNOTSUPP) the
 * capability probe must say so and pick the host fallback; the fallback
 * then runs end to end: zeroed words the owner reaches directly and
 * through the copy helpers, peers' WRITE/READ, fetch-and-add from several
 * agents at once (every fetched value exactly once, the exact final
 * value), compare-and-swap (single and as a contended increment loop);
 * policy on (RDMAXFER_DM=on, RDMAXFER_DM_REQUIRE) fails with -EOPNOTSUPP
 * and says why; bad input is refused.  On a device with device memory
 * the same data checks run on the device path (never run here).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#define WAIT_MS 20000
#include "rdmaxfer_test_util.h"

#define NAGENTS		4		/* contending clients */
#define NFADD		64		/* fetch-and-adds per client */
#define NCAS		16		/* CAS increments per client */
#define REGION		4096

static const char *addr;
static struct rdmaxfer_agent *srv;
static struct rdmaxfer_agent *cli[NAGENTS];
static struct rdmaxfer_peer *cp[NAGENTS];
static struct rdmaxfer_devmem_caps caps;	/* the server's */
static uint16_t port;

static int suite_init(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_peer *sp;
	int i;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_THREAD;
	attr.flags = RDMAXFER_AGENT_NO_ENV;
	if (rdmaxfer_agent_create(&attr, &srv) ||
	    rdmaxfer_listen(srv, addr, 0) ||
	    rdmaxfer_listen_port(srv, &port))
		return 1;
	for (i = 0; i < NAGENTS; i++)
		if (rdmaxfer_agent_create(&attr, &cli[i]) ||
		    rdmaxfer_connect(cli[i], addr, port, 10000, &cp[i]) ||
		    rdmaxfer_accept(srv, 10000, &sp))
			return 1;
	return rdmaxfer_agent_devmem_caps(srv, &caps) ? 1 : 0;
}

static int suite_clean(void)
{
	int i;

	for (i = 0; i < NAGENTS; i++)
		if (cli[i])
			rdmaxfer_agent_destroy(cli[i]);
	if (srv)
		rdmaxfer_agent_destroy(srv);
	return 0;
}

static bool is_rxe(void)
{
	struct rdmaxfer_agent_info info;

	return !rdmaxfer_agent_query(srv, &info) &&
	       !strncmp(info.device, "rxe", 3);
}

/* The probe: rxe has no device memory, and the verb itself says so. */
static void test_caps(void)
{
	struct ibv_device **list;
	struct rdmaxfer_agent_info info;
	int n = 0, i;

	rc_diag("%s", caps.msg);
	CU_ASSERT_EQUAL(caps.policy, RDMAXFER_DM_AUTO);
	if (!is_rxe()) {
		CU_ASSERT(caps.path >= RDMAXFER_DM_PATH_KSM &&
			  caps.path <= RDMAXFER_DM_PATH_HOST);
		return;
	}
	CU_ASSERT_EQUAL(caps.max_dm_size, 0);
	CU_ASSERT_EQUAL(caps.path, RDMAXFER_DM_PATH_HOST);
	CU_ASSERT_EQUAL(caps.mlx5, 0);
	CU_ASSERT_EQUAL(caps.devx, 0);
	CU_ASSERT_EQUAL(caps.check, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(caps.msg, "no device memory"));
	/* ibv_alloc_dm on the same device: refused, as the caps said */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_query(srv, &info), 0);
	list = ibv_get_device_list(&n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(list);
	for (i = 0; i < n; i++) {
		struct ibv_alloc_dm_attr a = { .length = 4096 };
		struct ibv_context *ctx;
		struct ibv_dm *dm;

		if (strcmp(ibv_get_device_name(list[i]), info.device))
			continue;
		ctx = ibv_open_device(list[i]);
		CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
		errno = 0;
		dm = ibv_alloc_dm(ctx, &a);
		CU_ASSERT_PTR_NULL(dm);
		CU_ASSERT(errno == EOPNOTSUPP || errno == ENOSYS);
		if (dm)
			ibv_free_dm(dm);
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
}

/* A zeroed region; what it is, and the owner's access to its words. */
static struct rdmaxfer_mem *region(struct rdmaxfer_devmem_info *info)
{
	struct rdmaxfer_mem *m = NULL;
	int ret = rdmaxfer_mem_alloc_device(srv, REGION, 0, &m);

	CU_ASSERT_EQUAL(ret, 0);
	if (ret)
		return NULL;
	CU_ASSERT_EQUAL(rdmaxfer_mem_devmem_query(m, info), 0);
	CU_ASSERT_EQUAL(info->len, REGION);
	CU_ASSERT_EQUAL(info->path, caps.path);
	return m;
}

static void test_alloc(void)
{
	struct rdmaxfer_devmem_info info;
	struct rdmaxfer_desc d;
	uint32_t w[REGION / 4], i;
	struct rdmaxfer_mem *m = region(&info);

	if (!m)
		return;
	rc_diag("%s", info.msg);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m, 0, 0, &d), 0);
	CU_ASSERT_EQUAL(d.len, REGION);
	CU_ASSERT_EQUAL(d.addr, info.addr);
	if (info.path == RDMAXFER_DM_PATH_HOST) {
		CU_ASSERT_EQUAL(d.kind, RDMAXFER_MEM_HOST);
		CU_ASSERT_PTR_NOT_NULL_FATAL(info.cpu);
		CU_ASSERT_EQUAL((uintptr_t)info.cpu, info.addr);
		CU_ASSERT_PTR_NOT_NULL(strstr(info.msg, "host memory"));
	} else {
		CU_ASSERT_EQUAL(d.kind & RDMAXFER_DESC_KIND_MASK,
				RDMAXFER_MEM_DEVICE);
		CU_ASSERT_PTR_NULL(info.cpu);
	}
	/* zeroed; then a pattern through the helpers, read back */
	CU_ASSERT_EQUAL(rdmaxfer_devmem_read(m, 0, w, sizeof(w)), 0);
	for (i = 0; i < REGION / 4; i++)
		if (w[i]) {
			CU_FAIL("a new region is not zeroed");
			break;
		}
	for (i = 0; i < REGION / 4; i++)
		w[i] = i * 2654435761U;
	CU_ASSERT_EQUAL(rdmaxfer_devmem_write(m, 0, w, sizeof(w)), 0);
	memset(w, 0, sizeof(w));
	CU_ASSERT_EQUAL(rdmaxfer_devmem_read(m, 8, w, 16), 0);
	CU_ASSERT_EQUAL(w[0], 2U * 2654435761U);
	CU_ASSERT_EQUAL(w[3], 5U * 2654435761U);
	if (info.cpu)
		CU_ASSERT_EQUAL(((uint32_t *)info.cpu)[7], 7U * 2654435761U);
	/* the helpers' bad input */
	CU_ASSERT_EQUAL(rdmaxfer_devmem_read(m, 2, w, 8), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_devmem_read(m, 0, w, 6), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_devmem_read(m, 0, (char *)w + 1, 8), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_devmem_read(m, REGION - 4, w, 8), -ERANGE);
	CU_ASSERT_EQUAL(rdmaxfer_devmem_write(m, REGION, w, 4), -ERANGE);
	CU_ASSERT_EQUAL(rdmaxfer_devmem_write(NULL, 0, w, 4), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m, REGION, 0, &d), -ERANGE);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
}

/* A peer's WRITE lands where the owner reads it; its READ gets it back. */
static void test_write_read(void)
{
	struct rdmaxfer_devmem_info info;
	struct rdmaxfer_desc d;
	uint8_t *buf = aligned_alloc(64, 2 * 256);
	struct rdmaxfer_iov iov = { buf, 256 };
	struct rdmaxfer_mem *m = region(&info);
	uint8_t got[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	if (!m) {
		free(buf);
		return;
	}
	fill(buf, 256, 11);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m, 1024, 256, &d), 0);
	CU_ASSERT_EQUAL(xfer_sync(cp[0], RDMAXFER_OP_WRITE, &iov, &d, 1,
				  NULL), 0);
	CU_ASSERT_EQUAL(rdmaxfer_devmem_read(m, 1024, got, 256), 0);
	CU_ASSERT_EQUAL(first_bad(got, 256, 11), 256);
	memset(buf, 0, 256);
	CU_ASSERT_EQUAL(xfer_sync(cp[1], RDMAXFER_OP_READ, &iov, &d, 1,
				  NULL), 0);
	CU_ASSERT_EQUAL(first_bad(buf, 256, 11), 256);
	rdmaxfer_mem_deregister(m);
	free(buf);
}

struct worker {
	int idx;
	struct rdmaxfer_desc word;
	enum rdmaxfer_op op;
	uint64_t olds[NFADD];
	int ret;
};

/* NFADD fetch-and-adds of 1, or NCAS increments by compare-and-swap
 * (read, swap old + 1 in, retry when another agent got there first). */
static void *worker(void *arg)
{
	struct worker *w = arg;
	struct rdmaxfer_req *req = NULL;
	uint64_t *res = aligned_alloc(64, 64);
	uint64_t seen = 0;
	int i, ret;

	if (!res) {
		w->ret = -ENOMEM;
		return NULL;
	}
	ret = rdmaxfer_atomic_prepare(cp[w->idx], w->op, &w->word, 0,
				      w->op == RDMAXFER_OP_FADD ? 1 : 0, 1,
				      res, &req);
	if (!ret && w->op == RDMAXFER_OP_FADD) {
		ret = fadd_run(req, res, w->olds, NFADD);
		req = NULL;
	}
	for (i = 0; !ret && req && i < NCAS;) {
		ret = rdmaxfer_atomic_set(req, seen, seen + 1);
		if (!ret)
			ret = rdmaxfer_req_post(req);
		if (!ret)
			ret = rdmaxfer_req_wait(req, WAIT_MS);
		if (ret)
			break;
		if (*res == seen)
			i++;		/* ours: seen -> seen + 1 */
		seen = *res == seen ? seen + 1 : *res;
	}
	if (req)
		rdmaxfer_req_free(req);
	free(res);
	w->ret = ret;
	return NULL;
}

static uint64_t run_workers(enum rdmaxfer_op op, struct rdmaxfer_mem *m,
			    uint64_t *all)
{
	struct worker ws[NAGENTS];
	pthread_t th[NAGENTS];
	uint64_t v = 0;
	int i, j;

	for (i = 0; i < NAGENTS; i++) {
		memset(&ws[i], 0, sizeof(ws[i]));
		ws[i].idx = i;
		ws[i].op = op;
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(m, 64, 8, &ws[i].word),
				      0);
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, worker,
						     &ws[i]), 0);
	}
	for (i = 0; i < NAGENTS; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(ws[i].ret, 0);
		for (j = 0; all && j < NFADD; j++)
			all[i * NFADD + j] = ws[i].olds[j];
	}
	CU_ASSERT_EQUAL(rdmaxfer_devmem_read(m, 64, &v, 8), 0);
	return v;
}

static void test_fadd_contended(void)
{
	struct rdmaxfer_devmem_info info;
	struct rdmaxfer_mem *m = region(&info);
	uint64_t all[NAGENTS * NFADD], v;

	if (!m)
		return;
	v = run_workers(RDMAXFER_OP_FADD, m, all);
	CU_ASSERT_EQUAL(v, (uint64_t)NAGENTS * NFADD);
	check_permutation(all, NAGENTS * NFADD);
	if (info.cpu)	/* the owner sees the same word directly */
		CU_ASSERT_EQUAL(__atomic_load_n((uint64_t *)info.cpu + 8,
						__ATOMIC_SEQ_CST), v);
	rc_diag("%d agents x %d fetch-and-adds on the %s path: final %llu",
		NAGENTS, NFADD, rdmaxfer_dm_path_name(info.path),
		(unsigned long long)v);
	rdmaxfer_mem_deregister(m);
}

static void test_cswap(void)
{
	struct rdmaxfer_devmem_info info;
	struct rdmaxfer_mem *m = region(&info);
	struct rdmaxfer_req *req;
	struct rdmaxfer_desc d;
	uint64_t *res = aligned_alloc(64, 64), v = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(res);
	if (!m) {
		free(res);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(m, 0, 64, &d), 0);
	/* 0 -> 42 swaps; 0 -> 7 then finds 42 and leaves it */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_atomic_prepare(cp[2], RDMAXFER_OP_CSWAP,
						      &d, 16, 0, 42, res, &req),
			      0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(*res, 0);
	CU_ASSERT_EQUAL(rdmaxfer_atomic_set(req, 0, 7), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(*res, 42);
	CU_ASSERT_EQUAL(rdmaxfer_devmem_read(m, 16, &v, 8), 0);
	CU_ASSERT_EQUAL(v, 42);
	rdmaxfer_req_free(req);
	/* contended: NAGENTS agents each increment NCAS times by CAS */
	v = run_workers(RDMAXFER_OP_CSWAP, m, NULL);
	CU_ASSERT_EQUAL(v, (uint64_t)NAGENTS * NCAS);
	rdmaxfer_mem_deregister(m);
	free(res);
}

/* Policy on where there is no device memory fails, and says why. */
static void test_policy_on(void)
{
	struct rdmaxfer_devmem_caps c;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_mem *m = NULL;

	if (caps.path != RDMAXFER_DM_PATH_HOST) {
		rc_skip("%s: device memory is usable: on succeeds here",
			caps.msg);
		return;
	}
	CU_ASSERT_EQUAL(rdmaxfer_mem_alloc_device(srv, REGION,
						  RDMAXFER_DM_REQUIRE, &m),
			-EOPNOTSUPP);
	CU_ASSERT_PTR_NULL(m);
	setenv("RDMAXFER_DM", "on", 1);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(NULL, &a), 0);
	CU_ASSERT_EQUAL(rdmaxfer_agent_devmem_caps(a, &c), 0);
	CU_ASSERT_EQUAL(c.policy, RDMAXFER_DM_ON);
	CU_ASSERT_PTR_NOT_NULL(strstr(c.msg, "policy on"));
	rc_diag("%s", c.msg);
	CU_ASSERT_EQUAL(rdmaxfer_mem_alloc_device(a, REGION, 0, &m),
			-EOPNOTSUPP);
	/* the per-call flag still takes host memory */
	CU_ASSERT_EQUAL(rdmaxfer_mem_alloc_device(a, REGION, RDMAXFER_DM_HOST,
						  &m), 0);
	if (m)
		rdmaxfer_mem_deregister(m);
	rdmaxfer_agent_destroy(a);
	setenv("RDMAXFER_DM", "sometimes", 1);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(NULL, &a), 0);
	m = NULL;
	CU_ASSERT_EQUAL(rdmaxfer_mem_alloc_device(a, REGION, 0, &m), -EINVAL);
	CU_ASSERT_PTR_NULL(m);
	rdmaxfer_agent_destroy(a);
	unsetenv("RDMAXFER_DM");
}

static void test_bad_input(void)
{
	struct rdmaxfer_devmem_info info;
	struct rdmaxfer_mem *m = NULL;
	uint8_t *host = aligned_alloc(4096, 4096);

	CU_ASSERT_PTR_NOT_NULL_FATAL(host);
	CU_ASSERT_EQUAL(rdmaxfer_mem_alloc_device(NULL, 64, 0, &m), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_alloc_device(srv, 64, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_alloc_device(srv, 0, 0, &m), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_alloc_device(srv, 12, 0, &m), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_alloc_device(srv, 64, 1U << 7, &m),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_alloc_device(srv, 64,
						  RDMAXFER_DM_REQUIRE |
						  RDMAXFER_DM_HOST, &m),
			-EINVAL);
	CU_ASSERT_PTR_NULL(m);
	if (caps.max_dm_size)
		CU_ASSERT_EQUAL(rdmaxfer_mem_alloc_device(srv,
							  caps.max_dm_size + 8,
							  RDMAXFER_DM_REQUIRE,
							  &m), -ENOSPC);
	/* policy off for this call: host memory, and the reason */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_alloc_device(srv, 64,
							RDMAXFER_DM_HOST, &m),
			      0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_devmem_query(m, &info), 0);
	CU_ASSERT_EQUAL(info.path, RDMAXFER_DM_PATH_HOST);
	CU_ASSERT_PTR_NOT_NULL(strstr(info.msg, "policy off"));
	rdmaxfer_mem_deregister(m);
	/* DEVICE is allocated, never registered; query wants a DM region */
	CU_ASSERT_EQUAL(rdmaxfer_mem_register(srv, host, 4096,
					      RDMAXFER_MEM_DEVICE, &m),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register(srv, host, 4096,
					      RDMAXFER_MEM_HOST, &m), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_devmem_query(m, &info), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_devmem_read(m, 0, host, 8), -EINVAL);
	rdmaxfer_mem_deregister(m);
	CU_ASSERT_EQUAL(rdmaxfer_agent_devmem_caps(NULL, &caps), -EINVAL);
	free(host);
}

static const struct rc_test_case cases[] = {
	{ "caps", test_caps },
	{ "alloc", test_alloc },
	{ "write_read", test_write_read },
	{ "fadd_contended", test_fadd_contended },
	{ "cswap", test_cswap },
	{ "policy_on", test_policy_on },
	{ "bad_input", test_bad_input },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	addr = rxe_addr_or_skip();
	rc_add_suite("devmem", suite_init, suite_clean, cases);
	return rc_test_main(argc, argv);
}
