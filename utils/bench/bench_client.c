// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_client.c - rdmaxfer-bench's driving end: the agent and buffer,
 * the server's parameters, the test (bench_bw.c, bench_lat.c,
 * bench_nixl.c) at each size, the validation and the plot.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "bench.h"

/* Our parameters to the server, and its buffer back (c->remote). */
static int client_params(struct client *c, const uint64_t *sizes, size_t n,
			 long iters, uint64_t maxs)
{
	struct ctl_params par = { .magic = BENCH_MAGIC };
	struct ctl_ready rdy;
	int ret;

	par.test = o.test;
	par.buf_len = o.test == T_WRITE_LAT ? maxs : c->buf_len;
	par.iters = (uint32_t)iters;
	par.nsizes = (uint32_t)n;
	memcpy(par.sizes, sizes, n * sizeof(sizes[0]));
	par.client = c->local;
	par.wait = o.wait;
	par.flags = o.rereg ? BENCH_F_REREG : 0;
	par.chunks = o.chunks;
	ret = send_ctl(c->agent, c->peer, CTL_PARAMS, &par, sizeof(par));
	if (!ret)
		ret = recv_ctl(c->agent, c->peer, CTL_READY, &rdy, sizeof(rdy),
			       CTL_TIMEOUT_MS);
	if (!ret && rdy.status)
		ret = rdy.status;
	if (!ret) {
		c->remote = rdy.server;
		bench_target_rkey_mode = rdy.rkey_mode;
	}
	return ret;
}

/* The test at each size. */
static int client_test(struct client *c, struct raw_dev *raw,
		       const uint64_t *sizes, size_t n, long iters,
		       uint64_t *fetched, long *bad)
{
	uint64_t word = 0;
	size_t k;
	int ret = 0;

	switch (o.test) {
	case T_WRITE_BW:
	case T_READ_BW:
		for (k = 0; k < n && !ret; k++)
			ret = bw_one(c, sizes[k], iters);
		break;
	case T_WRITE_LAT:
		ret = write_lat(c, sizes, n, iters);
		break;
	case T_READ_LAT:
		for (k = 0; k < n && !ret; k++)
			ret = lat_one(c, sizes[k], iters, NULL, NULL, bad);
		break;
	case T_FADD_LAT:
	case T_CSWAP_LAT:
		/* fetched must be registered: it is inside our buffer */
		ret = lat_one(c, 8, iters, (uint64_t *)c->buf, &word, bad);
		*fetched = word;
		break;
	case T_NIXL:
		if (o.rereg) {
			ret = nixl_rereg(c, iters);
			break;
		}
		/* cache on first: its first iteration is then cold (misses) */
		if (o.cache & CACHE_ON)
			ret = nixl_mode(c, raw, true, iters);
		if (!ret && (o.cache & CACHE_OFF))
			ret = nixl_mode(c, raw, false, iters);
		break;
	default:
		ret = -EINVAL;
	}
	return ret;
}

/*
 * The end: the server checks what it holds, we check what we read (ret:
 * the test's result, nothing is checked after a failure).  0, or -EIO.
 */
static int client_validate(struct client *c, int ret, uint64_t maxs,
			   uint64_t fetched, long bad)
{
	struct ctl_done done = { .magic = BENCH_MAGIC };
	struct ctl_result res;
	int vret = 0;

	done.check = o.validate && !ret &&
		     (o.test == T_WRITE_BW || o.test == T_NIXL ||
		      is_atomic(o.test));
	done.check_len = o.test == T_NIXL ? o.total / o.chunks * o.chunks :
			 maxs;
	done.expect_word = fetched;
	if (send_ctl(c->agent, c->peer, CTL_DONE, &done, sizeof(done)) == 0 &&
	    recv_ctl(c->agent, c->peer, CTL_RESULT, &res, sizeof(res),
		     CTL_TIMEOUT_MS) == 0) {
		if (done.check && (res.status || res.mismatches)) {
			fprintf(stderr, "%s: validate: the server found %" PRIu64 " bad byte(s)/word(s) (status %d)\n",
				prog, res.mismatches, res.status);
			vret = -EIO;
		}
	} else if (done.check) {
		fprintf(stderr, "%s: validate: no answer from the server\n",
			prog);
		vret = -EIO;
	}
	send_ctl(c->agent, c->peer, CTL_DONE, &done, sizeof(done));
	if (o.validate && !ret) {
		uint64_t badb = 0;

		if (o.test == T_READ_BW || o.test == T_READ_LAT)
			badb = check_pattern(c->buf, maxs);
		else if (o.test == T_WRITE_LAT)
			/* the echo carries the server's pattern, last byte
			 * excepted (the ping-pong marker) */
			badb = maxs > 1 ? check_pattern(c->buf, maxs - 1) : 0;
		if (badb || bad) {
			fprintf(stderr, "%s: validate: %" PRIu64 " bad byte(s), %ld unexpected atomic result(s)\n",
				prog, badb, bad);
			vret = -EIO;
		}
	}
	return vret;
}

/* --plot: the rows printed, drawn. */
static int client_plot(const struct client *c)
{
	char title[128];

	snprintf(title, sizeof(title), "rdmaxfer-bench %s on %s",
		 test_names[o.test], c->info.device);
	plot_series.label = "rdmaxfer-bench";
	return bench_plot(prog, o.plot, title, is_lat(o.test),
			  &plot_series, 1);
}

int run_client(void)
{
	struct client c = { 0 };
	struct raw_dev raw = { 0 };
	uint64_t sizes[32], maxs = 0;
	size_t n = plan_sizes(sizes, 32), k;
	long iters = iters_for(), bad = 0;
	uint64_t fetched = 0;
	int ret, vret;

	for (k = 0; k < n; k++)
		if (sizes[k] > maxs)
			maxs = sizes[k];
	if (is_atomic(o.test))
		maxs = 8;
	if (o.test == T_NIXL)
		maxs = o.total;
	c.buf_len = o.test == T_WRITE_LAT ? 2 * maxs : maxs;
	if (c.buf_len < 64)
		c.buf_len = 64;

	ret = make_agent(REGCACHE_MONITOR_AUTO, &c.agent);
	if (ret) {
		agent_err(ret);
		return ret;
	}
	rdmaxfer_agent_query(c.agent, &c.info);
	c.buf = alloc_buf(c.buf_len);
	if (!c.buf) {
		ret = -ENOMEM;
		err_msg("client buffer", ret);
		goto out_agent;
	}
	if (o.test == T_WRITE_BW || o.test == T_NIXL)
		fill_pattern(c.buf, c.buf_len);
	if (o.test == T_WRITE_LAT)	/* the half write_lat sends from */
		fill_pattern(c.buf + c.buf_len / 2, c.buf_len / 2);
	/* nixl registers its chunks per iteration: a first registration of
	 * the whole buffer here would make its first iteration a hit */
	if (o.test != T_NIXL) {
		ret = rdmaxfer_mem_register(c.agent, c.buf, c.buf_len,
					    RDMAXFER_MEM_HOST, &c.mem);
		if (!ret)
			ret = rdmaxfer_mem_desc(c.mem, 0, 0, &c.local);
		if (ret) {
			err_msg("client registration", ret);
			goto out_buf;
		}
	}
	if (o.test == T_NIXL) {
		ret = raw_open(c.info.device, &raw);
		if (ret) {
			err_msg("raw verbs context", ret);
			goto out_buf;
		}
	}

	ret = connect_retry(c.agent, &c.peer);
	if (ret) {
		char what[128];

		snprintf(what, sizeof(what), "cannot connect to %s port %u",
			 o.server, o.port);
		err_msg(what, ret);
		goto out_mem;
	}
	ret = client_params(&c, sizes, n, iters, maxs);
	if (ret) {
		err_msg("server setup", ret);
		goto out_peer;
	}

	json_open(&c.info);
	if (!o.json && !o.csv)
		printf("# %s: %s port %u gid %d -> %s:%u, %u QP(s), window %u, post list %u, batch %u, inline <= %u B, cache %s\n",
		       test_names[o.test], c.info.device, c.info.port,
		       c.info.gid_index, o.server, o.port, o.qps, o.window,
		       o.post_list, o.batch, c.info.max_inline,
		       c.info.cache_monitor);
	if (!o.json && !o.csv)
		printf("# server's remote keys: %s%s%s\n",
		       rkey_mode_name(bench_target_rkey_mode),
		       o.test == T_WRITE_LAT ? ", wait " : "",
		       o.test == T_WRITE_LAT ? wait_names[o.wait] : "");
	ret = client_test(&c, &raw, sizes, n, iters, &fetched, &bad);
	vret = client_validate(&c, ret, maxs, fetched, bad);
	json_close(vret);
	if (!ret && vret)
		ret = vret;
	if (!ret && o.validate && !o.json && !o.csv)
		printf("# validate: passed\n");
	if (!ret && o.plot)
		ret = client_plot(&c);
out_peer:
	rdmaxfer_peer_destroy(c.peer);
out_mem:
	if (c.mem)
		rdmaxfer_mem_deregister(c.mem);
	raw_close(&raw);
out_buf:
	munmap(c.buf, c.buf_len);
out_agent:
	dir_done();
	rdmaxfer_agent_destroy(c.agent);
	return ret;
}
