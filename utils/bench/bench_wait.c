// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_wait.c - write_lat --wait notif|fd, both ends.  Each end's WRITE
 * carries an immediate, and the other end learns of it from the
 * notification: busy-polling rdmaxfer_get_notifs() (notif), or asleep in
 * epoll on rdmaxfer_agent_fd(), armed with rdmaxfer_agent_arm() as
 * rdmaxfer_agent_fd(3) shows (fd).  The bytes and the marker in the last
 * one are those of the polled ping-pong (bench_lat.c), so the modes
 * differ only in how an end waits: fd over notif is the cost of sleeping,
 * notif over poll that of the immediate.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "bench.h"

const char *const wait_names[3] = { "poll", "notif", "fd" };

struct waiter {
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_peer *peer;
	enum bench_wait mode;
	int ep;				/* fd: an epoll set over the agent's fd */
	long sleeps;			/* fd: epoll_wait() calls, armed */
	unsigned int spins;		/* notif: polls since the last check */
	struct rdmaxfer_notif n;
};

static void waiter_close(struct waiter *w)
{
	if (!w)
		return;
	if (w->ep >= 0)
		close(w->ep);
	free(w);
}

static int waiter_open(struct rdmaxfer_agent *agent,
		       struct rdmaxfer_peer *peer, enum bench_wait mode,
		       struct waiter **wp)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct waiter *w = calloc(1, sizeof(*w));
	int fd, ret;

	if (!w)
		return -ENOMEM;
	w->agent = agent;
	w->peer = peer;
	w->mode = mode;
	w->ep = -1;
	if (mode == WAIT_FD) {
		fd = rdmaxfer_agent_fd(agent);
		if (fd < 0) {
			ret = fd;
			goto fail;
		}
		w->ep = epoll_create1(EPOLL_CLOEXEC);
		if (w->ep < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev)) {
			ret = -errno;
			goto fail;
		}
	}
	*wp = w;
	return 0;
fail:
	waiter_close(w);
	return ret;
}

/*
 * Nothing has come yet: fd sleeps unless the arm says work is pending;
 * notif goes round again, looking at the peer and the clock only every
 * 4096 polls.  0, or -errno (the peer gone, the deadline passed).
 */
static int waiter_idle(struct waiter *w, int64_t deadline)
{
	struct epoll_event ev;
	int ret;

	if (w->mode != WAIT_FD) {
		if (++w->spins & 4095)
			return 0;
	} else {
		ret = rdmaxfer_agent_arm(w->agent);
		if (ret == -EAGAIN)
			return 0;
		if (ret)
			return ret;
		w->sleeps++;
		if (epoll_wait(w->ep, &ev, 1, 1000) < 0 && errno != EINTR)
			return -errno;
	}
	if (rdmaxfer_peer_state(w->peer) != RDMAXFER_PEER_CONNECTED)
		return -ECONNRESET;
	return now_ns() > deadline ? -ETIMEDOUT : 0;
}

/* Take the peer's next notification, which must be its immediate value. */
static int waiter_notif(struct waiter *w, uint32_t value, int64_t deadline)
{
	int ret;

	for (;;) {
		ret = rdmaxfer_get_notifs(w->agent, &w->n, 1);
		if (ret < 0)
			return ret;
		if (ret == 1)
			return w->n.type == RDMAXFER_NOTIF_IMM &&
			       w->n.value == value &&
			       w->n.peer == w->peer ? 0 : -EPROTO;
		ret = waiter_idle(w, deadline);
		if (ret)
			return ret;
	}
}

/* Wait the same way for our own request's completion. */
static int waiter_req(struct waiter *w, struct rdmaxfer_req *req,
		      int64_t deadline)
{
	int ret;

	for (;;) {
		ret = rdmaxfer_req_test(req);
		if (ret != -EINPROGRESS)
			return ret;
		ret = waiter_idle(w, deadline);
		if (ret)
			return ret;
	}
}

/* Free req (may be NULL); after a failure it may still be in flight,
 * and rdmaxfer_req_free() refuses an active request: wait for it first. */
static void req_end(struct rdmaxfer_req *req, int ret)
{
	if (!req)
		return;
	if (ret)
		rdmaxfer_req_wait(req, CTL_TIMEOUT_MS);
	rdmaxfer_req_free(req);
}

static int64_t deadline_from(int64_t t)
{
	return t + (int64_t)CTL_TIMEOUT_MS * 1000000;
}

/*
 * The client's ping-pong at one size: post, wait for the echo's
 * immediate (whose data must be there: the marker), then for our own
 * completion; v[] gets half of each round trip.  *sleeps: the fd mode's
 * epoll_wait() calls (0 in notif mode).
 */
int write_lat_ev(struct client *c, uint64_t sz, uint32_t value, long iters,
		 double *v, long *sleeps)
{
	static uint32_t cnt;
	struct rdmaxfer_xfer_notif nt = { .value = value };
	struct rdmaxfer_iov iov = { c->buf + c->buf_len / 2, sz };
	volatile uint8_t *mark = c->buf + sz - 1;
	uint8_t *out = (uint8_t *)iov.addr + sz - 1;
	struct rdmaxfer_req *req = NULL;
	struct rdmaxfer_desc rd;
	struct waiter *w = NULL;
	struct progress pg;
	char what[32];
	long it;
	int ret;

	ret = rdmaxfer_desc_sub(&c->remote, 0, sz, &rd);
	if (!ret)
		ret = rdmaxfer_xfer_prepare(c->peer, RDMAXFER_OP_WRITE, &iov,
					    1, &rd, 1, &nt, &req);
	if (!ret)
		ret = waiter_open(c->agent, c->peer, o.wait, &w);
	if (ret) {
		err_msg("prepare", ret);
		goto out;
	}
	snprintf(what, sizeof(what), "%" PRIu64 " B, %s", sz,
		 wait_names[o.wait]);
	progress_start(&pg, what);
	for (it = 0; it < iters; it++) {
		uint8_t m = (uint8_t)(cnt++ % 255 + 1);
		int64_t t0, t1;

		*out = m;
		t0 = now_ns();
		ret = rdmaxfer_req_post(req);
		if (!ret)
			ret = waiter_notif(w, value, deadline_from(t0));
		t1 = now_ns();
		/* a notification arrives after its transfer's data */
		if (!ret && *mark != m)
			ret = -EPROTO;
		if (!ret)
			ret = waiter_req(w, req, deadline_from(t0));
		if (ret)
			break;
		v[it] = (double)(t1 - t0) / 2e3;
		if (!(it & 63))
			progress_tick(&pg, t1, it, iters);
	}
	if (ret)
		err_msg("write_lat", ret);
	*sleeps = w->sleeps;
out:
	req_end(req, ret);
	waiter_close(w);
	return ret;
}

/* The server's half at one size: each immediate in, the echo out. */
int echo_ev(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
	    enum bench_wait mode, uint64_t sz, const struct rdmaxfer_desc *rd,
	    uint8_t *buf, uint32_t value, long iters)
{
	struct rdmaxfer_xfer_notif nt = { .value = value };
	struct rdmaxfer_iov iov = { buf, sz };
	struct rdmaxfer_req *req = NULL;
	struct waiter *w = NULL;
	long it;
	int ret;

	ret = rdmaxfer_xfer_prepare(peer, RDMAXFER_OP_WRITE, &iov, 1, rd, 1,
				    &nt, &req);
	if (!ret)
		ret = waiter_open(agent, peer, mode, &w);
	for (it = 0; it < iters && !ret; it++) {
		int64_t t = now_ns();

		ret = waiter_notif(w, value, deadline_from(t));
		if (!ret)
			ret = rdmaxfer_req_post(req);
		if (!ret)
			ret = waiter_req(w, req, deadline_from(t));
	}
	req_end(req, ret);
	waiter_close(w);
	return ret;
}
