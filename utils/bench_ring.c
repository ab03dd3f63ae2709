// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_ring.c - rdmaxfer-bench "ring": the grain ring's cost against a
 * plain WRITE stream in the same run.
 *
 * Both sides live in this process: a target agent (progress thread) with
 * a ring whose callback releases each grain as it arrives, and an
 * initiator agent.  For each grain size and N in {4, 16, 64} the
 * initiator puts a number of grains (blocking on credits) and, on the
 * same connection, posts the same number of plain WRITEs of the same size
 * into the same slots, N in flight, in ROUNDS alternating rounds each, so
 * that a slow phase of the machine hits both sides alike.  The ratio is
 * what the ring costs (the immediate, the target's completion and release
 * per grain, credits); absolute numbers under an emulator mean nothing,
 * the ratio does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_ring.h"

#define RING_MAX_BYTES	(64ULL << 20)
#define WAIT_MS		30000
#define ROUNDS		4

static const uint32_t ring_slots[] = { 4, 16, 64 };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void release_cb(void *user, const struct rdmaxfer_grain *g)
{
	rdmaxfer_ring_release(user, g->index);
}

/* Plain WRITEs of len bytes into the ring's slots, n_slots in flight. */
static int plain_writes(struct rdmaxfer_peer *peer,
			const struct rdmaxfer_ring_info *info, void *src,
			size_t len, uint32_t iters, double *secs)
{
	struct rdmaxfer_req **reqs;
	struct rdmaxfer_iov iov = { src, len };
	uint32_t i, n = info->n_slots;
	double t0;
	int ret = 0;

	reqs = calloc(n, sizeof(*reqs));
	if (!reqs)
		return -ENOMEM;
	for (i = 0; i < n && !ret; i++) {
		struct rdmaxfer_desc d = info->slots;

		d.addr += (uint64_t)i * info->slot_size;
		d.len = len;
		ret = rdmaxfer_xfer_prepare(peer, RDMAXFER_OP_WRITE, &iov, 1,
					    &d, 1, NULL, &reqs[i]);
	}
	t0 = now_s();
	for (i = 0; i < iters && !ret; i++) {
		if (i >= n)
			ret = rdmaxfer_req_wait(reqs[i % n], WAIT_MS);
		if (!ret)
			ret = rdmaxfer_req_post(reqs[i % n]);
	}
	for (i = 0; i < n && i < iters; i++) {
		int r = rdmaxfer_req_wait(reqs[i], WAIT_MS);

		if (!ret && r)
			ret = r;
	}
	*secs = now_s() - t0;
	for (i = 0; i < n; i++)
		if (reqs[i])
			rdmaxfer_req_free(reqs[i]);
	free(reqs);
	return ret;
}

static int ring_point(const struct bench_ring_cfg *cfg,
		      struct rdmaxfer_agent *tgt, struct rdmaxfer_agent *ini,
		      uint32_t n, uint64_t size, void *src)
{
	struct rdmaxfer_ring_writer *w = NULL;
	struct rdmaxfer_ring_info info;
	struct rdmaxfer_ring *ring;
	struct rdmaxfer_iov iov = { src, size };
	uint32_t i, r, iters = cfg->iters, chunk;
	uint64_t next = 0;
	double t0, sec = 0, rsec = 0, psec = 0;
	int ret;

	if (!iters) {
		iters = (uint32_t)((256ULL << 20) / size);
		iters = iters < 64 ? 64 : iters > 4000 ? 4000 : iters;
	}
	ret = rdmaxfer_ring_create(tgt, n, size, 0, &ring);
	if (ret)
		return ret;
	ret = rdmaxfer_ring_set_cb(ring, release_cb, ring);
	if (!ret)
		ret = rdmaxfer_ring_get_info(ring, &info);
	if (!ret)
		ret = rdmaxfer_ring_attach(ini, &info, WAIT_MS, &w);
	chunk = (iters + ROUNDS - 1) / ROUNDS;
	iters = chunk * ROUNDS;
	for (r = 0; r < ROUNDS && !ret; r++) {
		t0 = now_s();
		for (i = 0; i < chunk && !ret; i++)
			ret = rdmaxfer_ring_put(w, next++, &iov, 1, 0, WAIT_MS);
		if (!ret)
			ret = rdmaxfer_ring_flush(w, WAIT_MS);
		rsec += now_s() - t0;
		/* the plain WRITEs on the writer's own connection: same
		 * path */
		if (!ret)
			ret = plain_writes(rdmaxfer_ring_writer_peer(w), &info,
					   src, size, chunk, &sec);
		psec += sec;
	}
	if (w)
		rdmaxfer_ring_detach(w);
	rdmaxfer_ring_set_cb(ring, NULL, NULL);
	rdmaxfer_ring_destroy(ring);
	if (ret)
		return ret;
	if (cfg->csv)
		printf("ring,%u,%llu,%u,%.1f,%.2f,%.1f,%.2f,%.3f\n", n,
		       (unsigned long long)size, iters, iters / rsec,
		       iters * (double)size / rsec / 1048576.0, iters / psec,
		       iters * (double)size / psec / 1048576.0, rsec / psec);
	else
		printf("%4u %10llu %6u %12.1f %10.2f %12.1f %10.2f %8.3f\n", n,
		       (unsigned long long)size, iters, iters / rsec,
		       iters * (double)size / rsec / 1048576.0, iters / psec,
		       iters * (double)size / psec / 1048576.0, rsec / psec);
	fflush(stdout);
	return 0;
}

int bench_ring(const struct bench_ring_cfg *cfg)
{
	struct rdmaxfer_agent *tgt = NULL, *ini = NULL;
	uint64_t maxsz = 0;
	void *src = NULL;
	size_t s, k;
	int ret;

	for (s = 0; s < cfg->nsizes; s++)
		if (cfg->sizes[s] > maxsz)
			maxsz = cfg->sizes[s];
	ret = cfg->make_target(&tgt);
	if (!ret)
		ret = cfg->make_agent(0, &ini);
	if (!ret)
		ret = rdmaxfer_listen(tgt, cfg->host, 0);
	if (!ret && !(src = malloc(maxsz)))
		ret = -ENOMEM;
	if (ret)
		goto out;
	memset(src, 0xa5, maxsz);
	if (cfg->csv)
		printf("test,n_slots,size,grains,ring_grains_s,ring_mib_s,"
		       "write_s,write_mib_s,ring_time_ratio\n");
	else
		printf("# ring: grains put (credits, one WRITE with immediate "
		       "each) vs plain WRITEs of the same size, N in flight, "
		       "same connection\n%4s %10s %6s %12s %10s %12s %10s "
		       "%8s\n", "N", "size", "grains", "ring/s", "ring MiB/s",
		       "write/s", "write MiB/s", "t ratio");
	for (s = 0; s < cfg->nsizes && !ret; s++)
		for (k = 0; k < sizeof(ring_slots) / sizeof(*ring_slots) &&
		     !ret; k++) {
			if (cfg->sizes[s] * ring_slots[k] > RING_MAX_BYTES)
				continue;
			ret = ring_point(cfg, tgt, ini, ring_slots[k],
					 cfg->sizes[s], src);
		}
out:
	if (ret)
		fprintf(stderr, "ring: %s\n", rdmaxfer_strerror(ret));
	free(src);
	if (ini)
		rdmaxfer_agent_destroy(ini);
	if (tgt)
		rdmaxfer_agent_destroy(tgt);
	return ret;
}
