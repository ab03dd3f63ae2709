// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_rereg.c - rdmaxfer-bench nixl --rereg: the seed scenario with the
 * target re-registering its exports every iteration, as a NIXL target
 * that registers its buffers per transfer does.  Each iteration the
 * server registers its K chunks (remote access, in its remote-key mode:
 * an exact MR each, or a window each over a kept MR), sends their
 * descriptors, waits for the client's WRITE to end, deregisters them and
 * sends the time it spent; the client registers its own chunks through
 * the cache, WRITEs them, and adds both sides' registration times.  The
 * server holds no registration of its buffer between iterations, so
 * nothing it keeps makes a registration cheaper than it would be.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define DESCS_PER_MSG	32	/* 792 bytes: one notification message */

struct ctl_descs {
	uint32_t magic;
	uint32_t first;			/* chunk index of descs[0] */
	uint32_t n;			/* descs in this message */
	uint32_t pad;
	struct rdmaxfer_desc descs[DESCS_PER_MSG];
};

struct ctl_next {			/* client -> server: WRITE done */
	uint32_t magic;
	int32_t status;
};

struct ctl_reg {			/* server -> client: its reg time */
	uint32_t magic;
	int32_t status;
	uint64_t reg_ns;
};

/* Register the K chunk exports and take their descriptors. */
static int rereg_register(struct rdmaxfer_agent *agent, uint8_t *buf,
			  uint64_t chunk, uint32_t chunks,
			  struct rdmaxfer_mem **mems, struct rdmaxfer_desc *d)
{
	uint32_t k;
	int ret;

	for (k = 0; k < chunks; k++) {
		ret = rdmaxfer_mem_register(agent, buf + k * chunk, chunk,
					    RDMAXFER_MEM_HOST, &mems[k]);
		if (!ret)
			ret = rdmaxfer_mem_desc(mems[k], 0, 0, &d[k]);
		if (ret)
			return ret;
	}
	return 0;
}

static void rereg_deregister(struct rdmaxfer_mem **mems, uint32_t chunks)
{
	uint32_t k;

	for (k = 0; k < chunks; k++) {
		if (mems[k])
			rdmaxfer_mem_deregister(mems[k]);
		mems[k] = NULL;
	}
}

static int send_descs(struct rdmaxfer_agent *agent,
		      struct rdmaxfer_peer *peer,
		      const struct rdmaxfer_desc *d, uint32_t chunks)
{
	struct ctl_descs m = { .magic = BENCH_MAGIC };
	uint32_t k;
	int ret;

	for (k = 0; k < chunks; k += m.n) {
		m.first = k;
		m.n = chunks - k < DESCS_PER_MSG ? chunks - k : DESCS_PER_MSG;
		memcpy(m.descs, d + k, m.n * sizeof(*d));
		ret = send_ctl(agent, peer, CTL_NIXL_DESCS, &m, sizeof(m));
		if (ret)
			return ret;
	}
	return 0;
}

/* The client's side: the K descriptors, in order, each covering a chunk. */
static int recv_descs(struct client *c, struct rdmaxfer_desc *d,
		      uint64_t chunk)
{
	struct ctl_descs m;
	uint32_t k = 0, i;
	int ret;

	while (k < o.chunks) {
		ret = recv_ctl(c->agent, c->peer, CTL_NIXL_DESCS, &m, sizeof(m),
			       CTL_TIMEOUT_MS);
		if (ret)
			return ret;
		if (m.first != k || !m.n || m.n > DESCS_PER_MSG ||
		    m.n > o.chunks - k)
			return -EPROTO;
		for (i = 0; i < m.n; i++) {
			if (m.descs[i].len < chunk)
				return -EPROTO;
			d[k + i] = m.descs[i];
			d[k + i].len = chunk;
		}
		k += m.n;
	}
	return 0;
}

/*
 * The server's iterations (par->iters of par->chunks exports of its
 * par->buf_len bytes).  Its registration time is the registers with
 * their descriptors, and the deregisters.
 */
int serve_rereg(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		const struct ctl_params *par, uint8_t *buf)
{
	uint64_t chunk = par->buf_len / par->chunks;
	struct rdmaxfer_mem **mems = calloc(par->chunks, sizeof(*mems));
	struct rdmaxfer_desc *d = calloc(par->chunks, sizeof(*d));
	struct ctl_reg reg = { .magic = BENCH_MAGIC };
	struct ctl_next next;
	uint32_t it;
	int ret = 0;

	if (!mems || !d) {
		ret = -ENOMEM;
		goto out;
	}
	for (it = 0; it < par->iters && !ret; it++) {
		int64_t t0, t1, t2, t3;

		t0 = now_ns();
		ret = rereg_register(agent, buf, chunk, par->chunks, mems, d);
		t1 = now_ns();
		if (ret) {
			/* the client waits for descriptors: tell it why */
			err_msg("target registration", ret);
			rereg_deregister(mems, par->chunks);
			reg.status = ret;
			send_ctl(agent, peer, CTL_NIXL_REG, &reg, sizeof(reg));
			break;
		}
		ret = send_descs(agent, peer, d, par->chunks);
		if (!ret)
			ret = recv_ctl(agent, peer, CTL_NIXL_NEXT, &next,
				       sizeof(next), CTL_TIMEOUT_MS * 4);
		t2 = now_ns();
		rereg_deregister(mems, par->chunks);
		t3 = now_ns();
		if (ret)
			break;
		reg.reg_ns = (uint64_t)(t1 - t0 + t3 - t2);
		reg.status = next.status;
		ret = send_ctl(agent, peer, CTL_NIXL_REG, &reg, sizeof(reg));
		if (!ret && next.status)
			ret = next.status;
	}
	if (ret)
		err_msg("nixl --rereg", ret);
out:
	free(mems);
	free(d);
	return ret;
}

/* The client's part of one iteration: the descriptors are in rd. */
static int rereg_iter(struct client *c, const struct rdmaxfer_iov *iov,
		      const struct rdmaxfer_desc *rd,
		      struct rdmaxfer_mem **mems, struct nixl_row *row)
{
	struct ctl_next next = { .magic = BENCH_MAGIC };
	struct ctl_reg reg;
	int64_t t0, t1, t2, t3;
	unsigned int k;
	int ret = 0;

	t0 = now_ns();
	for (k = 0; k < o.chunks && !ret; k++)
		ret = rdmaxfer_mem_register_access(c->agent, iov[k].addr,
						   iov[k].len,
						   RDMAXFER_MEM_HOST, 0,
						   &mems[k]);
	t1 = now_ns();
	if (!ret)
		ret = nixl_xfer(c, iov, rd);
	t2 = now_ns();
	next.status = ret;
	for (k = 0; k < o.chunks; k++) {
		if (mems[k])
			rdmaxfer_mem_deregister(mems[k]);
		mems[k] = NULL;
	}
	t3 = now_ns();
	if (send_ctl(c->agent, c->peer, CTL_NIXL_NEXT, &next, sizeof(next)))
		return ret ? ret : -ECONNRESET;
	if (ret)
		return ret;
	ret = recv_ctl(c->agent, c->peer, CTL_NIXL_REG, &reg, sizeof(reg),
		       CTL_TIMEOUT_MS);
	if (!ret && reg.status)
		ret = reg.status;
	if (ret)
		return ret;
	row->target_ms = (double)reg.reg_ns / 1e6;
	row->reg_ms = (double)(t1 - t0 + t3 - t2) / 1e6 + row->target_ms;
	row->xfer_ms = (double)(t2 - t1) / 1e6;
	return 0;
}

/* The client: iters iterations, then the first and the steady rows. */
int nixl_rereg(struct client *c, long iters)
{
	uint64_t chunk = o.total / o.chunks;
	struct rdmaxfer_iov *iov = calloc(o.chunks, sizeof(*iov));
	struct rdmaxfer_desc *rd = calloc(o.chunks, sizeof(*rd));
	struct rdmaxfer_mem **mems = calloc(o.chunks, sizeof(*mems));
	struct nixl_row *rows = calloc((size_t)iters, sizeof(*rows));
	struct progress pg;
	char mode[32];
	unsigned int k;
	long it;
	int ret = 0;

	if (!iov || !rd || !mems || !rows) {
		ret = -ENOMEM;
		goto out;
	}
	for (k = 0; k < o.chunks; k++) {
		iov[k].addr = c->buf + k * chunk;
		iov[k].len = chunk;
	}
	snprintf(mode, sizeof(mode), "rereg-%s",
		 rkey_mode_name(bench_target_rkey_mode));
	progress_start(&pg, mode);
	for (it = 0; it < iters; it++) {
		ret = recv_descs(c, rd, chunk);
		if (!ret)
			ret = rereg_iter(c, iov, rd, mems, &rows[it]);
		if (ret) {
			err_msg("nixl --rereg", ret);
			goto out;
		}
		progress_tick(&pg, now_ns(), it + 1, iters);
	}
	nixl_rows_out(mode, rows, iters);
out:
	free(iov);
	free(rd);
	free(mems);
	free(rows);
	return ret;
}
