// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_nixl.c - rdmaxfer-bench "nixl": the project's seed scenario.
 * Every iteration registers K chunks, WRITEs them and deregisters them,
 * as NIXL users do, with the cache off (a raw registration per chunk) or
 * on.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_reg.h"

static int cmp_row(const void *a, const void *b)
{
	const struct nixl_row *x = a, *y = b;
	double sx = x->reg_ms / (x->reg_ms + x->xfer_ms);
	double sy = y->reg_ms / (y->reg_ms + y->xfer_ms);

	return sx < sy ? -1 : sx > sy;
}

void nixl_out(const char *mode, const char *phase, long iters,
	      const struct nixl_row *row)
{
	double share = 100.0 * row->reg_ms / (row->reg_ms + row->xfer_ms);
	double bw = (double)o.total / MiB / (row->xfer_ms / 1e3);

	print_header();
	if (o.json) {
		json_sep();
		printf("    {\"cache\": \"%s\", \"phase\": \"%s\", \"iterations\": %ld, \"total_bytes\": %" PRIu64 ", \"chunks\": %u, \"reg_ms\": %.3f, \"xfer_ms\": %.3f, \"reg_share_pct\": %.2f, \"xfer_mbs\": %.2f",
		       mode, phase, iters, o.total, o.chunks, row->reg_ms,
		       row->xfer_ms, share, bw);
		if (o.rereg)	/* bench_rereg.c: the target's part of reg_ms */
			printf(", \"target_reg_ms\": %.3f", row->target_ms);
		printf("}");
	} else if (o.csv) {
		printf("%s,%s,%ld,%" PRIu64 ",%u,%.3f,%.3f,%.2f,%.2f\n", mode,
		       phase, iters, o.total, o.chunks, row->reg_ms,
		       row->xfer_ms, share, bw);
	} else {
		printf(" %-6s %-8s %-12ld %-13" PRIu64 " %-8u %-11.3f %-11.3f %-13.2f %.2f\n",
		       mode, phase, iters, o.total, o.chunks, row->reg_ms,
		       row->xfer_ms, share, bw);
	}
	fflush(stdout);
}

/*
 * The first iteration's row, then the steady state: the median iteration
 * (by registration share) after the first.  Sorts rows[1..iters).
 */
void nixl_rows_out(const char *mode, struct nixl_row *rows, long iters)
{
	nixl_out(mode, "first", 1, &rows[0]);
	if (iters > 1) {
		qsort(rows + 1, (size_t)iters - 1, sizeof(*rows), cmp_row);
		nixl_out(mode, "steady", iters - 1,
			 &rows[1 + (iters - 1) / 2]);
	}
}

/*
 * One WRITE of the K chunk pairs, start to end: prepare, post, wait, free.
 * Both the untimed warm-up and every timed iteration of nixl_mode() move
 * their data through here.
 */
int nixl_xfer(struct client *c, const struct rdmaxfer_iov *iov,
	      const struct rdmaxfer_desc *rd)
{
	struct rdmaxfer_req *req = NULL;
	int ret;

	ret = rdmaxfer_xfer_prepare(c->peer, RDMAXFER_OP_WRITE, iov,
				    o.chunks, rd, o.chunks, NULL, &req);
	if (!ret)
		ret = rdmaxfer_req_post(req);
	if (!ret)
		ret = rdmaxfer_req_wait(req, CTL_TIMEOUT_MS * 4);
	if (req)
		rdmaxfer_req_free(req);
	return ret;
}

/*
 * One mode of the seed scenario.  Every iteration: register the K chunks,
 * prepare one WRITE request of K pairs, post it, wait, free it, deregister
 * the chunks.  Cache on: registration is rdmaxfer_mem_register_access
 * with access 0 (the initiator's chunks are local buffers) and
 * rdmaxfer_mem_deregister (misses on the first iteration, hits after).  Cache off: what a stack
 * without a cache pays, ibv_reg_mr + ibv_dereg_mr of every chunk on the
 * same device; the transfer then uses the library's path, warmed once
 * untimed so both modes move data the same way.
 */
int nixl_mode(struct client *c, struct raw_dev *r, bool cached,
	      long iters)
{
	uint64_t chunk = o.total / o.chunks;
	struct rdmaxfer_iov *iov = calloc(o.chunks, sizeof(*iov));
	struct rdmaxfer_desc *rd = calloc(o.chunks, sizeof(*rd));
	struct rdmaxfer_mem **mems = calloc(o.chunks, sizeof(*mems));
	struct ibv_mr **mrs = calloc(o.chunks, sizeof(*mrs));
	struct nixl_row *rows = calloc((size_t)iters, sizeof(*rows));
	struct progress pg;
	const char *mode = cached ? "on" : "off";
	unsigned int k;
	long it;
	int ret = 0;

	if (!iov || !rd || !mems || !mrs || !rows) {
		ret = -ENOMEM;
		goto out;
	}
	for (k = 0; k < o.chunks; k++) {
		iov[k].addr = c->buf + k * chunk;
		iov[k].len = chunk;
		ret = rdmaxfer_desc_sub(&c->remote, k * chunk, chunk, &rd[k]);
		if (ret)
			goto out;
	}
	if (!cached) {
		ret = nixl_xfer(c, iov, rd);
		if (ret) {
			err_msg("nixl warm-up transfer", ret);
			goto out;
		}
	}
	progress_start(&pg, mode);
	for (it = 0; it < iters; it++) {
		int64_t t0, t1 = 0, t2 = 0, t3;

		t0 = now_ns();
		for (k = 0; k < o.chunks; k++) {
			if (cached) {
				/* the initiator's chunks are local buffers:
				 * nothing of them is exported to the peer */
				ret = rdmaxfer_mem_register_access(
					c->agent, iov[k].addr, chunk,
					RDMAXFER_MEM_HOST, 0, &mems[k]);
			} else {
				mrs[k] = ibv_reg_mr(r->pd, iov[k].addr, chunk,
						    BENCH_RAW_ACCESS);
				ret = mrs[k] ? 0 : (errno ? -errno : -EIO);
			}
			if (ret) {
				err_msg("registration", ret);
				goto unwind;
			}
		}
		t1 = now_ns();
		ret = nixl_xfer(c, iov, rd);
		t2 = now_ns();
		if (ret) {
			err_msg("nixl transfer", ret);
			goto unwind;
		}
unwind:
		for (k = 0; k < o.chunks; k++) {
			if (cached && mems[k])
				rdmaxfer_mem_deregister(mems[k]);
			else if (!cached && mrs[k])
				ibv_dereg_mr(mrs[k]);
			mems[k] = NULL;
			mrs[k] = NULL;
		}
		t3 = now_ns();
		if (ret)
			goto out;
		rows[it].reg_ms = (double)(t1 - t0 + t3 - t2) / 1e6;
		rows[it].xfer_ms = (double)(t2 - t1) / 1e6;
		progress_tick(&pg, t3, it + 1, iters);
	}
	nixl_rows_out(mode, rows, iters);
out:
	free(iov);
	free(rd);
	free(mems);
	free(mrs);
	free(rows);
	return ret;
}
