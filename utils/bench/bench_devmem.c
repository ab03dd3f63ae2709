// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_devmem.c - rdmaxfer-bench "dm_atomic": remote atomics on NIC
 * device memory against the same atomics on host memory, in one run.
 *
 * A target agent allocates a word of device memory
 * (rdmaxfer_mem_alloc_device(), policy from $RDMAXFER_DM) and registers a
 * word of host memory; an initiator agent of the same process connects
 * to it and times fetch-and-add (fadd_lat) and compare-and-swap
 * (cswap_lat), one in flight, alternating device and host in rounds so
 * both sides see the same machine state.  The rows give perftest's
 * latency columns over all rounds and the ratio of the medians.  Where
 * the device has no device memory (rxe) the "device" word is the host
 * fallback and the header says so: the ratio is then ~1 by construction.
 * Every fetched value is checked: FADD counts up, CSWAP (compare and swap
 * the value the word holds) always finds it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_devmem.h"

#define ROUNDS		5
#define WAIT_MS		30000
#define DEF_ITERS	1000

struct accept_arg {
	struct rdmaxfer_agent *tgt;
	struct rdmaxfer_peer *peer;
	int ret;
};

static void *accept_one(void *p)
{
	struct accept_arg *a = p;

	a->ret = rdmaxfer_accept(a->tgt, WAIT_MS, &a->peer);
	return NULL;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);

	return v[i < n ? i : n - 1];
}

/* iters atomics of op on word, each timed into v; FADD adds 1 and
 * checks the fetched value against the count so far (from *base). */
static int round_one(struct rdmaxfer_peer *peer, enum rdmaxfer_op op,
		     const struct rdmaxfer_desc *word, uint64_t *res,
		     uint32_t iters, uint64_t *base, double *v)
{
	struct rdmaxfer_req *req;
	uint32_t i;
	int ret;

	ret = rdmaxfer_atomic_prepare(peer, op, word, 0, op ==
				      RDMAXFER_OP_FADD ? 1 : *base, *base,
				      res, &req);
	for (i = 0; !ret && i < iters; i++) {
		double t0 = now_us();

		ret = rdmaxfer_req_post(req);
		if (!ret)
			ret = rdmaxfer_req_wait(req, WAIT_MS);
		v[i] = now_us() - t0;
		if (!ret && *res != *base + (op == RDMAXFER_OP_FADD ? i : 0))
			ret = -EIO;	/* not what the word held */
	}
	if (!ret && op == RDMAXFER_OP_FADD)
		*base += iters;
	if (req)
		rdmaxfer_req_free(req);
	return ret;
}

static void print_row(const struct bench_devmem_cfg *cfg, const char *test,
		      const char *mem, const char *path, double *v, size_t n,
		      double ratio)
{
	double sum = 0;
	size_t i;

	qsort(v, n, sizeof(*v), cmp_d);
	for (i = 0; i < n; i++)
		sum += v[i];
	if (cfg->csv)
		printf("%s,%s,%s,%zu,%.2f,%.2f,%.2f,%.2f,%.2f,%.3f\n", test,
		       mem, path, n, v[0], v[n - 1], pct(v, n, 0.5), sum / n,
		       pct(v, n, 0.99), ratio);
	else
		printf("%-10s %-7s %-11s %8zu %8.2f %8.2f %10.2f %8.2f %8.2f %7.3f\n",
		       test, mem, path, n, v[0], v[n - 1], pct(v, n, 0.5),
		       sum / n, pct(v, n, 0.99), ratio);
}

int bench_devmem(const struct bench_devmem_cfg *cfg)
{
	static const enum rdmaxfer_op ops[] = { RDMAXFER_OP_FADD,
						RDMAXFER_OP_CSWAP };
	static const char *const names[] = { "fadd_lat", "cswap_lat" };
	struct rdmaxfer_agent *tgt = NULL, *ini = NULL;
	struct rdmaxfer_mem *dm = NULL, *hm = NULL;
	struct rdmaxfer_devmem_info info;
	struct rdmaxfer_desc dword, hword;
	struct accept_arg acc = { 0 };
	struct rdmaxfer_peer *peer = NULL;
	uint32_t iters = cfg->iters ? cfg->iters : DEF_ITERS;
	size_t n = (size_t)iters * ROUNDS, o;
	double *v[2] = { NULL, NULL };
	uint64_t *res = NULL, *host = NULL;
	uint64_t dbase = 0, hbase = 0;		/* what the words hold */
	pthread_t th;
	uint16_t port;
	int ret, r;

	ret = cfg->make_agent(0, &tgt);
	if (!ret)
		ret = cfg->make_agent(0, &ini);
	if (!ret)
		ret = rdmaxfer_listen(tgt, cfg->host, 0);
	if (!ret)
		ret = rdmaxfer_listen_port(tgt, &port);
	if (ret)
		goto out;
	acc.tgt = tgt;
	if (pthread_create(&th, NULL, accept_one, &acc)) {
		ret = -EAGAIN;
		goto out;
	}
	ret = rdmaxfer_connect(ini, cfg->host, port, WAIT_MS, &peer);
	pthread_join(th, NULL);
	if (!ret)
		ret = acc.ret;
	if (!ret)
		ret = rdmaxfer_mem_alloc_device(tgt, 64, 0, &dm);
	if (!ret)
		ret = rdmaxfer_mem_devmem_query(dm, &info);
	res = aligned_alloc(64, 64);
	host = aligned_alloc(4096, 4096);
	v[0] = calloc(n, sizeof(double));
	v[1] = calloc(n, sizeof(double));
	if (!ret && (!res || !host || !v[0] || !v[1]))
		ret = -ENOMEM;
	if (ret)
		goto out;
	memset(host, 0, 4096);
	ret = rdmaxfer_mem_register(tgt, host, 4096, RDMAXFER_MEM_HOST, &hm);
	if (!ret)
		ret = rdmaxfer_mem_desc(dm, 0, 8, &dword);
	if (!ret)
		ret = rdmaxfer_mem_desc(hm, 0, 8, &hword);
	if (ret)
		goto out;
	printf("# dm_atomic: remote atomics, one in flight, on a word of "
	       "device memory vs a word of host memory, %d interleaved rounds "
	       "of %u\n",
	       ROUNDS, iters);
	if (info.path == RDMAXFER_DM_PATH_HOST)
		printf("# device memory: host fallback (%s): both rows measure "
		       "host memory, the ratio is ~1 by construction\n",
		       info.msg);
	else
		printf("# device memory: %s path (%s)\n",
		       rdmaxfer_dm_path_name(info.path), info.msg);
	if (cfg->csv)
		printf("test,memory,path,ops,t_min_us,t_max_us,t_typical_us,"
		       "t_avg_us,p99_us,median_ratio_dev_host\n");
	else
		printf("%-10s %-7s %-11s %8s %8s %8s %10s %8s %8s %7s\n",
		       "test", "memory", "path", "ops", "t_min", "t_max",
		       "t_typical", "t_avg", "99%", "dev/host");
	for (o = 0; o < 2 && !ret; o++) {
		double dmed, hmed;

		for (r = 0; r < ROUNDS && !ret; r++) {
			ret = round_one(peer, ops[o], &dword, res, iters,
					&dbase, v[0] + (size_t)r * iters);
			if (!ret)
				ret = round_one(peer, ops[o], &hword, res,
						iters, &hbase,
						v[1] + (size_t)r * iters);
		}
		if (ret)
			break;
		qsort(v[0], n, sizeof(double), cmp_d);
		qsort(v[1], n, sizeof(double), cmp_d);
		dmed = pct(v[0], n, 0.5);
		hmed = pct(v[1], n, 0.5);
		print_row(cfg, names[o], "device",
			  rdmaxfer_dm_path_name(info.path), v[0], n,
			  dmed / hmed);
		print_row(cfg, names[o], "host", "registered", v[1], n, 1.0);
	}
	fflush(stdout);
out:
	if (ret)
		fprintf(stderr, "dm_atomic: %s\n", rdmaxfer_strerror(ret));
	if (hm)
		rdmaxfer_mem_deregister(hm);
	if (dm)
		rdmaxfer_mem_deregister(dm);
	if (ini)
		rdmaxfer_agent_destroy(ini);
	if (tgt)
		rdmaxfer_agent_destroy(tgt);
	free(v[0]);
	free(v[1]);
	free(res);
	free(host);
	return ret;
}
