// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_server.c - rdmaxfer-bench's serving end: one client at a time,
 * its parameters, a buffer for it, write_lat's echo, and the check of the
 * data pattern it asks for.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "bench.h"

/* write_lat: the passive half of the ping-pong, echo each message. */
static int server_echo(struct rdmaxfer_agent *agent,
		       struct rdmaxfer_peer *peer,
		       const struct ctl_params *par, uint8_t *buf)
{
	struct rdmaxfer_req *req = NULL;
	struct rdmaxfer_iov iov;
	uint32_t c = 0, k;
	long it;
	int ret = 0;

	for (k = 0; k < par->nsizes && !ret; k++) {
		uint64_t sz = par->sizes[k];
		volatile uint8_t *mark = buf + sz - 1;
		struct rdmaxfer_desc rd;

		iov.addr = buf;
		iov.len = sz;
		ret = rdmaxfer_desc_sub(&par->client, 0, sz, &rd);
		if (!ret && par->wait != WAIT_POLL) {
			ret = echo_ev(agent, peer, (enum bench_wait)par->wait, sz,
				      &rd, buf, WAIT_IMM(k), par->iters);
			continue;
		}
		if (!ret)
			ret = rdmaxfer_xfer_prepare(peer, RDMAXFER_OP_WRITE,
						    &iov, 1, &rd, 1,
						    NULL, &req);
		if (ret)
			break;
		for (it = 0; it < par->iters; it++) {
			uint8_t m = (uint8_t)(c++ % 255 + 1);
			int64_t t = now_ns();
			long spins = 0;

			while (*mark != m) {
				if (!(++spins & 0xffff) &&
				    (rdmaxfer_peer_state(peer) !=
				     RDMAXFER_PEER_CONNECTED ||
				     now_ns() - t > (int64_t)CTL_TIMEOUT_MS * 1000000)) {
					ret = -ECONNRESET;
					break;
				}
			}
			if (ret)
				break;
			ret = rdmaxfer_req_post(req);
			if (!ret)
				ret = spin(req);
			if (ret)
				break;
		}
		rdmaxfer_req_free(req);
		req = NULL;
	}
	if (ret)
		err_msg("write_lat echo", ret);
	return ret;
}

/* What our remote keys are, for the client to report. */
static uint32_t server_rkey_mode(struct rdmaxfer_agent *agent)
{
	struct rdmaxfer_agent_info info;

	if (rdmaxfer_agent_query(agent, &info))
		return 0;
	return info.rkey_mode;
}

/* The end of the test: the check the client asks for, its result. */
static int server_finish(struct rdmaxfer_agent *agent,
			 struct rdmaxfer_peer *peer,
			 const struct ctl_params *par, uint8_t *buf,
			 uint64_t buf_len)
{
	struct ctl_result res = { .magic = BENCH_MAGIC };
	struct ctl_done done;
	int ret;

	ret = recv_ctl(agent, peer, CTL_DONE, &done, sizeof(done), -1);
	if (ret) {
		err_msg("waiting for the end of the test", ret);
		return ret;
	}
	if (done.check) {
		if (done.check_len > buf_len)
			res.status = -EINVAL;
		else if (is_atomic((enum test)par->test))
			res.mismatches = *(volatile uint64_t *)buf !=
					 done.expect_word;
		else
			res.mismatches = check_pattern(buf, done.check_len);
	}
	ret = send_ctl(agent, peer, CTL_RESULT, &res, sizeof(res));
	if (ret)
		err_msg("sending the result", ret);
	/* let the client read the result before the QPs go away */
	recv_ctl(agent, peer, CTL_DONE, &done, sizeof(done), 2000);
	return ret;
}

int run_server(void)
{
	struct rdmaxfer_agent *agent = NULL;
	struct rdmaxfer_peer *peer = NULL;
	struct rdmaxfer_mem *mem = NULL;
	struct ctl_params par;
	struct ctl_ready rdy = { .magic = BENCH_MAGIC };
	uint8_t *buf = NULL;
	uint64_t buf_len = 0;
	int ret;

	ret = make_agent(REGCACHE_MONITOR_AUTO, &agent);
	if (ret) {
		agent_err(ret);
		return ret;
	}
	ret = rdmaxfer_listen(agent, NULL, o.port);
	if (ret) {
		char what[64];

		snprintf(what, sizeof(what), "cannot listen on port %u", o.port);
		err_msg(what, ret);
		goto out_agent;
	}
	if (o.publish) {
		ret = rdmaxfer_directory_publish(bench_dir, agent, o.publish);
		if (ret) {
			err_msg("cannot publish the server in the directory", ret);
			goto out_agent;
		}
	}
	if (!o.json)
		fprintf(stderr, "# %s: waiting for a client on port %u%s%s\n",
			prog, o.port, o.publish ? ", published as " : "",
			o.publish ? o.publish : "");
	ret = rdmaxfer_accept(agent, o.duration > 0 ?
			      (int)(o.duration * 1000) : -1, &peer);
	if (ret) {
		err_msg("accept", ret);
		goto out_agent;
	}
	ret = recv_ctl(agent, peer, CTL_PARAMS, &par, sizeof(par),
		       CTL_TIMEOUT_MS);
	if (ret) {
		err_msg("no test parameters from the client", ret);
		goto out_peer;
	}
	buf_len = par.buf_len;
	if (!buf_len || buf_len > 4 * MAX_SIZE || par.nsizes > 32 ||
	    par.wait > WAIT_FD || par.flags & ~BENCH_F_REREG ||
	    ((par.flags & BENCH_F_REREG) &&
	     (par.test != T_NIXL || !par.chunks || par.chunks > 65536 ||
	      par.buf_len / par.chunks == 0))) {
		rdy.status = -EINVAL;
		send_ctl(agent, peer, CTL_READY, &rdy, sizeof(rdy));
		ret = -EINVAL;
		err_msg("bad parameters from the client", ret);
		goto out_peer;
	}
	buf = alloc_buf(buf_len);
	if (!buf) {
		rdy.status = -ENOMEM;
		send_ctl(agent, peer, CTL_READY, &rdy, sizeof(rdy));
		ret = -ENOMEM;
		err_msg("server buffer", ret);
		goto out_peer;
	}
	/* what a READ or the write_lat ping-pong carries back */
	if (par.test == T_READ_BW || par.test == T_READ_LAT ||
	    par.test == T_WRITE_LAT)
		fill_pattern(buf, buf_len);
	/* --rereg: the exports come and go every iteration (bench_rereg.c) */
	ret = 0;
	if (!(par.flags & BENCH_F_REREG))
		ret = rdmaxfer_mem_register(agent, buf, buf_len,
					    RDMAXFER_MEM_HOST, &mem);
	if (!ret && mem)
		ret = rdmaxfer_mem_desc(mem, 0, 0, &rdy.server);
	rdy.status = ret;
	rdy.rkey_mode = server_rkey_mode(agent);
	if (send_ctl(agent, peer, CTL_READY, &rdy, sizeof(rdy)) || ret) {
		err_msg("server registration", ret ? ret : -ECONNRESET);
		ret = ret ? ret : -ECONNRESET;
		goto out_mem;
	}

	if (par.test == T_WRITE_LAT) {
		ret = server_echo(agent, peer, &par, buf);
		if (ret)
			goto out_mem;
	}
	if (par.flags & BENCH_F_REREG) {
		ret = serve_rereg(agent, peer, &par, buf);
		if (ret)
			goto out_mem;
	}
	ret = server_finish(agent, peer, &par, buf, buf_len);
out_mem:
	if (mem)
		rdmaxfer_mem_deregister(mem);
	if (buf)
		munmap(buf, buf_len);
out_peer:
	rdmaxfer_peer_destroy(peer);
out_agent:
	dir_done();
	rdmaxfer_agent_destroy(agent);
	return ret;
}
