// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_lat.c - rdmaxfer-bench's latency tests: read_lat, fadd_lat and
 * cswap_lat post one operation at a time and time each; write_lat is a
 * ping-pong of RDMA WRITEs polled in memory, as ib_write_lat does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* read_lat, fadd_lat, cswap_lat at one size: one op at a time */
int lat_one(struct client *c, uint64_t size, long iters,
	    uint64_t *fetched, uint64_t *word_expect, long *bad)
{
	struct rdmaxfer_req *req = NULL;
	struct rdmaxfer_iov iov = { c->buf, size };
	struct rdmaxfer_desc rd;
	struct progress pg;
	char what[32];
	double *v;
	long it;
	int ret;

	v = calloc((size_t)iters, sizeof(*v));
	if (!v)
		return -ENOMEM;
	switch (o.test) {
	case T_READ_LAT:
		ret = rdmaxfer_desc_sub(&c->remote, 0, size, &rd);
		if (!ret)
			ret = rdmaxfer_xfer_prepare(c->peer, RDMAXFER_OP_READ,
						    &iov, 1, &rd, 1, NULL, &req);
		break;
	case T_FADD_LAT:
		ret = rdmaxfer_atomic_prepare(c->peer, RDMAXFER_OP_FADD,
					      &c->remote, 0, 1, 0, fetched,
					      &req);
		break;
	default:
		ret = rdmaxfer_atomic_prepare(c->peer, RDMAXFER_OP_CSWAP,
					      &c->remote, 0, *word_expect,
					      *word_expect + 1, fetched, &req);
		break;
	}
	if (ret) {
		err_msg("prepare", ret);
		free(v);
		return ret;
	}
	snprintf(what, sizeof(what), "%" PRIu64 " B", size);
	progress_start(&pg, what);
	for (it = 0; it < iters; it++) {
		int64_t t0, t1;

		if (o.test == T_CSWAP_LAT)
			rdmaxfer_atomic_set(req, *word_expect,
					    *word_expect + 1);
		t0 = now_ns();
		ret = rdmaxfer_req_post(req);
		if (!ret)
			ret = spin(req);
		t1 = now_ns();
		if (ret) {
			err_msg(test_names[o.test], ret);
			break;
		}
		v[it] = (double)(t1 - t0) / 1e3;
		if (is_atomic(o.test)) {
			/* a lone client sees every old value in sequence */
			if (*fetched != *word_expect)
				(*bad)++;
			(*word_expect)++;
		}
		if (!(it & 63))
			progress_tick(&pg, t1, it, iters);
	}
	rdmaxfer_req_free(req);
	if (!ret)
		out_lat(is_atomic(o.test) ? 8 : size, iters, v, (size_t)iters);
	free(v);
	return ret;
}

/* write_lat --wait notif|fd at one size (bench_wait.c): its row, and
 * how often the fd mode slept */
static int write_lat_ev_out(struct client *c, uint64_t sz, uint32_t value,
			    long iters, double *v)
{
	long sleeps = 0;
	int ret;

	ret = write_lat_ev(c, sz, value, iters, v, &sleeps);
	if (ret)
		return ret;
	out_lat(sz, iters, v, (size_t)iters);
	if (o.json)
		json_tail_add(",\n  \"wait_sleeps_%" PRIu64 "\": %ld", sz,
			      sleeps);
	else if (!o.csv)
		printf("# wait %s: %ld sleep(s) in epoll_wait() over %ld iterations\n",
		       wait_names[o.wait], sleeps, iters);
	return 0;
}

/* write_lat: ping-pong, half the round trip, as ib_write_lat reports */
int write_lat(struct client *c, const uint64_t *sizes, size_t n,
	      long iters)
{
	uint32_t cnt = 0;
	size_t k;
	int ret = 0;

	for (k = 0; k < n && !ret; k++) {
		uint64_t sz = sizes[k];
		struct rdmaxfer_iov iov = { c->buf, sz };
		volatile uint8_t *mark = c->buf + sz - 1;
		uint8_t *out = c->buf + sz - 1;
		struct rdmaxfer_req *req = NULL;
		struct rdmaxfer_desc rd;
		struct progress pg;
		char what[32];
		double *v;
		long it;

		/* the client sends from the second half of its buffer */
		iov.addr = c->buf + c->buf_len / 2;
		out = (uint8_t *)iov.addr + sz - 1;
		v = calloc((size_t)iters, sizeof(*v));
		if (!v)
			return -ENOMEM;
		if (o.wait != WAIT_POLL) {
			ret = write_lat_ev_out(c, sz, WAIT_IMM(k), iters, v);
			free(v);
			continue;
		}
		ret = rdmaxfer_desc_sub(&c->remote, 0, sz, &rd);
		if (!ret)
			ret = rdmaxfer_xfer_prepare(c->peer, RDMAXFER_OP_WRITE,
						    &iov, 1, &rd, 1, NULL, &req);
		if (ret) {
			err_msg("prepare", ret);
			free(v);
			return ret;
		}
		snprintf(what, sizeof(what), "%" PRIu64 " B", sz);
		progress_start(&pg, what);
		for (it = 0; it < iters; it++) {
			uint8_t m = (uint8_t)(cnt++ % 255 + 1);
			int64_t t0, t1, tw;
			long spins = 0;

			*out = m;
			t0 = now_ns();
			ret = rdmaxfer_req_post(req);
			if (ret)
				break;
			tw = t0;
			while (*mark != m) {
				if (!(++spins & 0xffff)) {
					tw = now_ns();
					if (tw - t0 > (int64_t)CTL_TIMEOUT_MS * 1000000 ||
					    rdmaxfer_peer_state(c->peer) !=
					    RDMAXFER_PEER_CONNECTED) {
						ret = -ETIMEDOUT;
						break;
					}
				}
			}
			t1 = now_ns();
			if (!ret)
				ret = spin(req);
			if (ret)
				break;
			v[it] = (double)(t1 - t0) / 2e3;
			if (!(it & 63))
				progress_tick(&pg, t1, it, iters);
		}
		if (ret)
			err_msg("write_lat", ret);
		else
			out_lat(sz, iters, v, (size_t)iters);
		if (ret)
			rdmaxfer_req_wait(req, CTL_TIMEOUT_MS);
		rdmaxfer_req_free(req);
		free(v);
	}
	return ret;
}
