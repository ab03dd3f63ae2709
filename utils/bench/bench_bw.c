// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_bw.c - rdmaxfer-bench write_bw and read_bw: a window of prepared
 * requests in flight, each reposted as it completes (perftest's tx
 * depth).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Post the requests ready for their repost with one doorbell; one alone
 * the direct way (--batch 1: one call fewer per message). */
static int post_ready(struct rdmaxfer_req **ready, unsigned int n)
{
	if (n == 1)
		return rdmaxfer_req_post_flags(ready[0], 0);
	return rdmaxfer_req_post_list(ready, n, 0, NULL);
}

/* The window's w requests of l messages of size each (iov, rd: l). */
static int bw_prepare(struct client *c, enum rdmaxfer_op op, uint64_t size,
		      unsigned int w, unsigned int l,
		      struct rdmaxfer_req **reqs, struct rdmaxfer_iov *iov,
		      struct rdmaxfer_desc *rd)
{
	unsigned int i;
	int ret;

	for (i = 0; i < l; i++) {
		iov[i].addr = c->buf;
		iov[i].len = size;
		ret = rdmaxfer_desc_sub(&c->remote, 0, size, &rd[i]);
		if (ret)
			return ret;
	}
	for (i = 0; i < w; i++) {
		ret = rdmaxfer_xfer_prepare(c->peer, op, iov, l, rd, l, NULL,
					    &reqs[i]);
		if (ret) {
			err_msg("prepare", ret);
			return ret;
		}
	}
	return 0;
}

/* --warmup: one window, not counted (perftest's bandwidth tools do none
 * by default, so neither do we). */
static int bw_warmup(struct rdmaxfer_req **reqs, unsigned int w)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < w && !ret; i++)
		ret = rdmaxfer_req_post(reqs[i]);
	for (i = 0; i < w && !ret; i++)
		ret = rdmaxfer_req_wait(reqs[i], CTL_TIMEOUT_MS);
	return ret;
}

/* The row of msgs messages of size in ns: the peak window, at least
 * the average. */
static void bw_report(uint64_t size, long msgs, int64_t ns, double peak)
{
	double secs = (double)ns / 1e9;
	double avg = (double)msgs * size / MiB / secs;

	if (peak < avg)
		peak = avg;
	out_bw(size, msgs, peak, avg, (double)msgs / secs / 1e6);
}

/*
 * Bandwidth at one size: o.window requests of o.post_list messages each,
 * reposted as they complete, oldest first (they complete in order on one
 * QP).  Completed requests are reposted o.batch at a time by one
 * rdmaxfer_req_post_list() (one doorbell), as perftest posts whole post
 * lists; a partial batch goes only when fewer than o.batch requests are
 * still in flight, so a window smaller than a few batches never drains.
 * One timestamp per window's worth of completions gives the peak (the
 * best window that ends before the last post); the average covers first
 * post to last completion.
 */
int bw_one(struct client *c, uint64_t size, long iters)
{
	enum rdmaxfer_op op = o.test == T_WRITE_BW ? RDMAXFER_OP_WRITE :
						     RDMAXFER_OP_READ;
	unsigned int w = o.window, l = o.post_list, i, nready = 0, nbatch;
	long posts = (iters + l - 1) / l, posted = 0, completed = 0, batch = 0;
	struct rdmaxfer_req **reqs, **ready;
	struct rdmaxfer_iov *iov;
	struct rdmaxfer_desc *rd;
	struct progress pg;
	char what[32];
	int64_t t0, t1, tb;
	double peak = 0;
	int ret = 0;

	if ((long)w > posts)
		w = (unsigned int)posts;
	/* a request waiting for its repost must not be tested again */
	nbatch = o.batch < w ? o.batch : w;
	reqs = calloc(w, sizeof(*reqs));
	ready = calloc(w, sizeof(*ready));
	iov = calloc(l, sizeof(*iov));
	rd = calloc(l, sizeof(*rd));
	if (!reqs || !ready || !iov || !rd) {
		ret = -ENOMEM;
		goto out;
	}
	ret = bw_prepare(c, op, size, w, l, reqs, iov, rd);
	if (!ret && o.warmup) {
		ret = bw_warmup(reqs, w);
		if (ret)
			err_msg("warm-up", ret);
	}
	if (ret)
		goto out;

	snprintf(what, sizeof(what), "%" PRIu64 " B", size);
	progress_start(&pg, what);
	t0 = now_ns();
	tb = t0;
	for (i = 0; i < w && posted < posts; i++, posted++) {
		ready[nready++] = reqs[i];
		if (nready == nbatch || i + 1 == w) {
			ret = post_ready(ready, nready);
			nready = 0;
			if (ret)
				goto fail;
		}
	}
	i = 0;
	while (completed < posts) {
		ret = rdmaxfer_req_test(reqs[i]);
		if (ret == -EINPROGRESS) {
			/* a partial batch only when the device would
			 * otherwise run short: fewer than a batch in flight */
			if (nready &&
			    posted - (long)nready - completed < (long)nbatch) {
				ret = post_ready(ready, nready);
				nready = 0;
				if (ret)
					goto fail;
			}
			continue;
		}
		if (ret)
			goto fail;
		completed++;
		if (posted < posts) {
			ready[nready++] = reqs[i];
			posted++;
			if (nready == nbatch || posted == posts) {
				ret = post_ready(ready, nready);
				nready = 0;
				if (ret)
					goto fail;
			}
		}
		i = i + 1 == w ? 0 : i + 1;
		if (++batch == (long)w) {
			int64_t t = now_ns();
			double bw = (double)batch * l * size / MiB /
				    ((double)(t - tb) / 1e9);

			/* only windows that end while requests are still
			 * reposted: the drain after the last post collects
			 * requests that completed long before (at 64 B such
			 * a window read 100 times the average) */
			if (posted < posts && bw > peak)
				peak = bw;
			batch = 0;
			tb = t;
			progress_tick(&pg, t, completed * l, posts * l);
		}
	}
	t1 = now_ns();
	bw_report(size, posts * l, t1 - t0, peak);
	ret = 0;
	goto out;
fail:
	err_msg(op == RDMAXFER_OP_WRITE ? "RDMA WRITE" : "RDMA READ", ret);
	/* drain what is still in flight before freeing */
	for (i = 0; i < w; i++)
		rdmaxfer_req_wait(reqs[i], CTL_TIMEOUT_MS);
out:
	if (reqs)
		for (i = 0; i < w; i++)
			if (reqs[i])
				rdmaxfer_req_free(reqs[i]);
	free(reqs);
	free(ready);
	free(iov);
	free(rd);
	return ret;
}
