// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * file_req.c - file requests: a file range to or from a remote peer as a
 * struct rdmaxfer_req (LIBRDMAXFER_1.8), through the engine's staging pool
 * (file.c), pipelined; and the blocking calls of LIBRDMAXFER_1.5 on top.
 *
 * A file request is a state machine stepped by the caller's test, wait and
 * progress calls (never by the agent's progress thread): each step reaps
 * io_uring completions and the RDMA legs' requests, starts chunks in idle
 * pool slots and submits.  to_peer: file read into a slot, then RDMA
 * WRITE from it; from_peer: RDMA READ into a slot, then file write.
 * While one slot's chunk is on the network, others are on the disk.  The
 * engine's io_uring signals the agent's wake eventfd, so a wait sleeps on
 * the completion channel and the disk alike.  Locks: the engine's own
 * (file->lock) before the agent's.
 *
 * A cancel starts nothing more and lets what is in flight come back; RDMA
 * legs not back RX_FLUSH_TIMEOUT_MS after it fail the peer, which flushes
 * them (or aborts them at the flush deadline): the end is bounded, and
 * the pool is never freed or reused under a leg still on the wire.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"

static const struct rx_req_ops file_req_ops;
static const struct rx_ext rx_ext_file;

struct rx_file_req {
	struct rdmaxfer_req *req;	/* the public handle */
	struct rdmaxfer_file *file;
	struct rx_list node;		/* file->reqs */
	bool to_peer;
	struct rdmaxfer_file_desc d;
	struct rdmaxfer_desc remote;
	enum rx_req_state state;
	/* one post */
	int fd;				/* d.fd, or own_fd */
	int own_fd;			/* the buffered fd of a misaligned
					 * O_DIRECT range, else -1 */
	uint64_t next;			/* first byte not started */
	uint64_t fail_pos;		/* first byte a failed chunk left */
	unsigned int inflight;		/* slots not idle */
	bool submit_dead;		/* a submit failed: drain, reset */
	bool cancel;
	bool peer_failed;		/* the cancel escalated */
	int64_t cancel_deadline;
	struct rdmaxfer_file_result res;
	char msg[RDMAXFER_FILE_MSG_MAX];
};

/* The request's first error wins; its message goes to both places. */
static void __attribute__((format(printf, 4, 5)))
fr_fail(struct rx_file_req *fr, int err, enum rdmaxfer_file_stage stage,
	const char *fmt, ...)
{
	va_list ap;

	if (fr->res.err)
		return;
	fr->res.err = err;
	fr->res.stage = stage;
	va_start(ap, fmt);
	vsnprintf(fr->msg, sizeof(fr->msg), fmt, ap);
	va_end(ap);
	memcpy(fr->file->msg, fr->msg, sizeof(fr->msg));
}

RX_EXPORT
int rdmaxfer_file_prepare(struct rdmaxfer_file *file,
			  struct rdmaxfer_peer *peer, enum rdmaxfer_op op,
			  const struct rdmaxfer_file_desc *range,
			  const struct rdmaxfer_desc *remote,
			  struct rdmaxfer_req **reqp)
{
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_req *req;
	struct rx_file_req *fr;
	int ret;

	if (!file)
		return -EINVAL;
	pthread_mutex_lock(&file->lock);
	file->msg[0] = '\0';
	if (!peer || !remote || !range || !reqp) {
		ret = rx_file_fail(file, -EINVAL,
				"NULL peer, range, remote descriptor or request");
		goto out;
	}
	*reqp = NULL;
	if (op != RDMAXFER_OP_READ && op != RDMAXFER_OP_WRITE) {
		ret = rx_file_fail(file, -EINVAL,
				"op %d: RDMAXFER_OP_WRITE (file to remote) or RDMAXFER_OP_READ only",
				(int)op);
		goto out;
	}
	if (!range->len) {
		ret = rx_file_fail(file, -EINVAL, "empty range");
		goto out;
	}
	if (remote->len < range->len) {
		ret = rx_file_fail(file, -ERANGE,
				"remote descriptor of %llu bytes is smaller than the file range of %llu",
				(unsigned long long)remote->len,
				(unsigned long long)range->len);
		goto out;
	}
	agent = peer->agent;
	if (file->agent && file->agent != agent) {
		ret = rx_file_fail(file, -EINVAL,
				"the staging pool belongs to another agent");
		goto out;
	}
	pthread_mutex_lock(&agent->lock);
	ret = rx_check_remote(peer, remote->addr, range->len, remote->rkey);
	pthread_mutex_unlock(&agent->lock);
	if (ret) {
		rx_file_fail(file, ret, "remote range outside the peer's exports");
		goto out;
	}
	fr = calloc(1, sizeof(*fr));
	if (!fr || rx_req_new(peer, op, range->len, &file_req_ops, fr, &req)) {
		free(fr);
		ret = rx_file_fail(file, -ENOMEM, "out of memory");
		goto out;
	}
	fr->req = req;
	fr->file = file;
	fr->to_peer = op == RDMAXFER_OP_WRITE;
	fr->d = *range;
	fr->remote = *remote;
	fr->state = RX_REQ_IDLE;
	fr->own_fd = -1;
	rx_list_add_tail(&file->reqs, &fr->node);
	rx_req_link(req);
	*reqp = req;
out:
	pthread_mutex_unlock(&file->lock);
	return ret;
}

static uint64_t fr_prefix(const struct rx_file_req *fr)
{
	const struct rdmaxfer_file *file = fr->file;
	uint64_t p = fr->next < fr->fail_pos ? fr->next : fr->fail_pos;
	uint32_t i;

	for (i = 0; i < file->qdepth; i++)
		if (file->slots[i].state != SLOT_IDLE &&
		    file->slots[i].pos < p)
			p = file->slots[i].pos;
	return p;
}

/* A slot's chunk ended (ok: all of it reached the destination). */
static void slot_end(struct rx_file_req *fr, struct file_slot *sl, bool ok)
{
	if (ok)
		fr->res.done += sl->io.len;
	else
		rx_file_fail_at(&fr->fail_pos, sl->pos + (fr->to_peer ? 0 :
						  sl->io.done));
	sl->state = SLOT_IDLE;
	sl->io.busy = false;
	fr->inflight--;
}

static void slot_file_io(struct rx_file_req *fr, struct file_slot *sl)
{
	struct rdmaxfer_file *file = fr->file;
	struct file_io *io = &sl->io;
	bool write = !fr->to_peer;
	struct io_uring_sqe *sqe;

	sl->state = SLOT_FILE;
	if (!file->pool_fixed) {
		rx_file_queue(file, fr->fd, io, write);
		return;
	}
	sqe = io_uring_get_sqe(&file->ring);
	if (write)
		io_uring_prep_write_fixed(sqe, fr->fd, io->buf + io->done,
					  io->len - io->done,
					  io->off + io->done,
					  (int)(sl - file->slots));
	else
		io_uring_prep_read_fixed(sqe, fr->fd, io->buf + io->done,
					 io->len - io->done,
					 io->off + io->done,
					 (int)(sl - file->slots));
	io_uring_sqe_set_data(sqe, io);
	io->busy = true;
}

/* The network leg of a slot failed (to start, or on the wire). */
static void slot_net_fail(struct rx_file_req *fr, struct file_slot *sl,
			  int err)
{
	fr_fail(fr, err, RDMAXFER_FILE_STAGE_NET, "RDMA %s at offset %llu: %s",
		fr->to_peer ? "WRITE" : "READ", (unsigned long long)sl->pos,
		strerror(-err));
	slot_end(fr, sl, false);
}

/* Start the network leg of a slot whose chunk is in (or due to) the pool. */
static void slot_net(struct rx_file_req *fr, struct file_slot *sl)
{
	enum rdmaxfer_op op = fr->to_peer ? RDMAXFER_OP_WRITE :
					    RDMAXFER_OP_READ;
	struct rdmaxfer_iov iov = { sl->io.buf, sl->io.len };
	struct rdmaxfer_peer *peer = fr->req->peer;
	struct rdmaxfer_desc rd;
	int ret;

	ret = rdmaxfer_desc_sub(&fr->remote, sl->pos, sl->io.len, &rd);
	if (!ret)
		ret = rdmaxfer_xfer_prepare(peer, op, &iov, 1, &rd, 1, NULL,
					    &sl->req);
	if (!ret) {
		ret = rdmaxfer_req_post(sl->req);
		if (ret) {
			rdmaxfer_req_free(sl->req);
			sl->req = NULL;
		}
	}
	if (ret) {
		slot_net_fail(fr, sl, ret);
		return;
	}
	sl->state = SLOT_NET;
}

/* The file part of a slot is done, or failed. */
static void slot_file_done(struct rx_file_req *fr, struct file_slot *sl)
{
	if (fr->to_peer && !fr->res.err)
		slot_net(fr, sl);
	else
		slot_end(fr, sl, !fr->to_peer && sl->io.done == sl->io.len);
}

/* Synchronous file I/O of one slot for the pread/pwrite backend. */
static void slot_pio(struct rx_file_req *fr, struct file_slot *sl)
{
	struct rdmaxfer_file_desc d = { fr->fd, sl->io.off, sl->io.len };
	uint64_t done = 0;
	int ret;

	sl->state = SLOT_FILE;
	ret = rx_file_pio(fr->file, fr->fd, &d, sl->io.buf, !fr->to_peer,
			  &done);
	sl->io.done = (uint32_t)done;
	if (ret)
		fr_fail(fr, ret, RDMAXFER_FILE_STAGE_IO, "%s", fr->file->msg);
	slot_file_done(fr, sl);
}

/* Reap one io_uring completion into its slot. */
static void slot_reap(struct rx_file_req *fr, struct io_uring_cqe *cqe)
{
	struct rdmaxfer_file *file = fr->file;
	struct file_io *io = io_uring_cqe_get_data(cqe);
	struct file_slot *sl = rx_container_of(io, struct file_slot, io);
	bool write = !fr->to_peer;
	int res;

	res = rx_file_res(file, write, cqe->res, io->len - io->done);
	io_uring_cqe_seen(&file->ring, cqe);
	io->busy = false;
	if (sl->state != SLOT_FILE)
		return;	/* not ours: a request that was torn down */
	if (rx_file_res_err(write, res)) {
		res = rx_file_res_err(write, res);
		fr_fail(fr, res, RDMAXFER_FILE_STAGE_IO,
			"%s at offset %llu: %s", write ? "write" : "read",
			(unsigned long long)(io->off + io->done),
			res == -ENODATA ? "EOF" : res == -EIO && !cqe->res ?
			"wrote nothing" : strerror(-res));
		slot_end(fr, sl, false);
		return;
	}
	io->done += res;
	if (io->done < io->len && !fr->res.err) {
		slot_file_io(fr, sl);	/* short: the rest again */
		return;
	}
	slot_file_done(fr, sl);
}

/* Start the chunks of idle slots (not after an error or a cancel). */
static bool fr_start(struct rx_file_req *fr)
{
	struct rdmaxfer_file *file = fr->file;
	struct file_slot *sl;
	bool busy = false;
	uint32_t i;

	for (i = 0; i < file->qdepth && fr->next < fr->d.len; i++) {
		sl = &file->slots[i];
		if (fr->res.err)
			break;
		if (sl->state != SLOT_IDLE)
			continue;
		sl->pos = fr->next;
		sl->io = (struct file_io){
			.off = fr->d.offset + fr->next,
			.buf = file->pool + (size_t)i * file->chunk,
			.len = fr->d.len - fr->next < file->chunk ?
			       fr->d.len - fr->next : file->chunk,
		};
		sl->req = NULL;
		fr->next += sl->io.len;
		fr->inflight++;
		busy = true;
		if (!fr->to_peer)
			slot_net(fr, sl);
		else if (!file->uring)
			slot_pio(fr, sl);
		else
			slot_file_io(fr, sl);
	}
	return busy;
}

/* Lock held: the RDMA legs of the request and whether one has ended. */
static bool fr_net_ended_locked(const struct rx_file_req *fr, bool *any)
{
	const struct rdmaxfer_file *file = fr->file;
	uint32_t i;

	*any = false;
	for (i = 0; i < file->qdepth; i++) {
		if (file->slots[i].state != SLOT_NET)
			continue;
		*any = true;
		if (file->slots[i].req->state != RX_REQ_ACTIVE)
			return true;
	}
	return false;
}

static void fr_finish(struct rx_file_req *fr)
{
	struct rdmaxfer_file *file = fr->file;
	struct rdmaxfer_agent *agent = fr->req->peer->agent;
	struct rx_file_agent *fa;

	if (fr->own_fd >= 0)
		close(fr->own_fd);
	fr->own_fd = -1;
	fr->res.prefix = fr_prefix(fr);
	fr->state = fr->res.err ? RX_REQ_FAILED : RX_REQ_DONE;
	file->active = NULL;
	pthread_mutex_lock(&agent->lock);
	rx_list_del(&file->active_node);
	fa = rx_agent_ext(agent, &rx_ext_file);
	if (rx_list_empty(&fa->active))
		rx_ext_busy(agent, &rx_ext_file, false);
	pthread_mutex_unlock(&agent->lock);
	rx_file_account(file, &fr->res);
}

/*
 * One non-blocking turn of an active request (engine lock held): reap the
 * disk and the network, start chunks, submit, end when nothing is left in
 * flight.  Returns whether anything moved.
 */
static bool fr_step(struct rx_file_req *fr)
{
	struct rdmaxfer_file *file = fr->file;
	struct rdmaxfer_agent *agent = fr->req->peer->agent;
	struct io_uring_cqe *cqe;
	struct file_slot *sl;
	bool busy = false, any;
	uint32_t i;
	int ret;

	while (file->uring && io_uring_peek_cqe(&file->ring, &cqe) == 0) {
		busy = true;
		slot_reap(fr, cqe);
	}
	for (i = 0; i < file->qdepth; i++) {
		sl = &file->slots[i];
		if (sl->state != SLOT_NET)
			continue;
		ret = rdmaxfer_req_test(sl->req);
		if (ret == -EINPROGRESS)
			continue;
		busy = true;
		rdmaxfer_req_free(sl->req);
		sl->req = NULL;
		if (ret)
			slot_net_fail(fr, sl, ret);
		else if (fr->to_peer || fr->res.err)
			slot_end(fr, sl, fr->to_peer);
		else if (!file->uring)
			slot_pio(fr, sl);
		else
			slot_file_io(fr, sl);
	}
	/* a cancelled request whose legs do not come back in time: the
	 * peer is not answering; failing it flushes them */
	if (fr->cancel && !fr->peer_failed &&
	    rx_now_ns() >= fr->cancel_deadline) {
		pthread_mutex_lock(&agent->lock);
		fr_net_ended_locked(fr, &any);
		if (any) {
			rx_peer_fail(fr->req->peer, -ECANCELED);
			fr->peer_failed = true;
		}
		pthread_mutex_unlock(&agent->lock);
	}
	if (!fr->submit_dead && !fr->cancel)
		busy |= fr_start(fr);
	if (file->uring && !fr->submit_dead) {
		ret = rx_file_submit(file);
		if (ret < 0) {
			fr_fail(fr, ret, RDMAXFER_FILE_STAGE_SUBMIT,
				"io_uring_submit: %s", strerror(-ret));
			fr->submit_dead = true;
			busy = true;
		}
	}
	if (fr->submit_dead) {
		unsigned int nfile = 0;

		for (i = 0; i < file->qdepth; i++)
			nfile += file->slots[i].state == SLOT_FILE;
		/* only the unsubmitted are left on the disk side */
		if (nfile && io_uring_sq_ready(&file->ring) >= nfile) {
			rx_file_ring_reset(file);
			for (i = 0; i < file->qdepth; i++)
				if (file->slots[i].state == SLOT_FILE)
					slot_end(fr, &file->slots[i], false);
			fr->submit_dead = false;
			busy = true;
		}
	}
	if (!fr->inflight && (fr->res.err || fr->next >= fr->d.len))
		fr_finish(fr);
	return busy;
}

static int file_req_post(struct rdmaxfer_req *req)
{
	struct rx_file_req *fr = req->priv;
	struct rdmaxfer_file *file = fr->file;
	struct rdmaxfer_peer *peer = req->peer;
	struct rdmaxfer_agent *agent = peer->agent;
	struct rx_file_agent *fa;
	uint32_t flags;
	int ret, fd, own;

	pthread_mutex_lock(&file->lock);
	file->msg[0] = '\0';
	if (fr->state == RX_REQ_ACTIVE || file->active) {
		ret = rx_file_fail(file, -EBUSY, "%s",
				fr->state == RX_REQ_ACTIVE ?
				"the request is in progress" :
				"another request of this engine is in progress");
		goto out;
	}
	pthread_mutex_lock(&agent->lock);
	ret = peer->state == RDMAXFER_PEER_CONNECTED ? 0 : -ENOTCONN;
	pthread_mutex_unlock(&agent->lock);
	if (ret) {
		rx_file_fail(file, ret, "the peer is not connected");
		goto out;
	}
	/* the buffers are pool chunks: page-aligned, chunk_size apart */
	ret = rx_file_check(file, &fr->d, (const void *)(uintptr_t)4096,
			 !fr->to_peer, &fd, &own, &flags);
	if (!ret)
		ret = rx_file_pool(file, agent);
	if (ret) {
		if (own >= 0)
			close(own);
		goto out;
	}
	fr->fd = fd;
	fr->own_fd = own;
	fr->next = 0;
	fr->fail_pos = UINT64_MAX;
	fr->inflight = 0;
	fr->submit_dead = false;
	fr->cancel = false;
	fr->peer_failed = false;
	fr->msg[0] = '\0';
	fr->res = (struct rdmaxfer_file_result){
		.len = fr->d.len, .flags = flags,
	};
	fr->state = RX_REQ_ACTIVE;
	file->active = fr;
	pthread_mutex_lock(&agent->lock);
	fa = rx_agent_ext(agent, &rx_ext_file);
	rx_list_add_tail(&fa->active, &file->active_node);
	rx_ext_busy(agent, &rx_ext_file, true);
	pthread_mutex_unlock(&agent->lock);
	fr_step(fr);
out:
	pthread_mutex_unlock(&file->lock);
	return ret;
}

static int fr_result(const struct rx_file_req *fr)
{
	return rx_state_result(fr->state, fr->res.err);
}

static int file_req_test(struct rdmaxfer_req *req)
{
	struct rx_file_req *fr = req->priv;
	int ret;

	pthread_mutex_lock(&fr->file->lock);
	if (fr->state == RX_REQ_ACTIVE)
		fr_step(fr);
	ret = fr_result(fr);
	pthread_mutex_unlock(&fr->file->lock);
	return ret;
}

/*
 * Step until the request ends; between steps sleep on the agent (its
 * completion channel, and its wake eventfd that the engine's io_uring
 * signals) unless something is ready already.
 */
static int file_req_wait(struct rdmaxfer_req *req, int timeout_ms)
{
	struct rx_file_req *fr = req->priv;
	struct rdmaxfer_file *file = fr->file;
	struct rdmaxfer_agent *agent = req->peer->agent;
	int64_t deadline = rx_deadline(timeout_ms), until;
	bool ready, any;
	int ret;

	for (;;) {
		pthread_mutex_lock(&file->lock);
		if (fr->state != RX_REQ_ACTIVE) {
			ret = fr_result(fr);
			pthread_mutex_unlock(&file->lock);
			return ret;
		}
		if (fr_step(fr)) {
			ret = fr->state == RX_REQ_ACTIVE &&
			      rx_now_ns() >= deadline;
			pthread_mutex_unlock(&file->lock);
			if (ret)
				return -ETIMEDOUT;
			continue;
		}
		pthread_mutex_lock(&agent->lock);
		if (rx_self_progress(agent))
			rx_progress_locked(agent);
		ready = fr_net_ended_locked(fr, &any) ||
			(file->uring && (io_uring_cq_ready(&file->ring) ||
					 (!fr->submit_dead &&
					  io_uring_sq_ready(&file->ring))));
		until = deadline;
		if (fr->cancel && !fr->peer_failed && any &&
		    fr->cancel_deadline < until)
			until = fr->cancel_deadline;
		pthread_mutex_unlock(&file->lock);
		ret = 0;
		if (!ready) {
			ret = rx_block(agent, until);
			if (ret == -ETIMEDOUT && until != deadline)
				ret = 0;	/* the cancel's escalation */
		}
		pthread_mutex_unlock(&agent->lock);
		if (ret)
			return ret;
	}
}

/* the engine's half of rdmaxfer_req_free(); the core unlinks req */
static int file_req_free(struct rdmaxfer_req *req)
{
	struct rx_file_req *fr = req->priv;
	struct rdmaxfer_file *file = fr->file;

	pthread_mutex_lock(&file->lock);
	if (fr->state == RX_REQ_ACTIVE) {
		pthread_mutex_unlock(&file->lock);
		return -EBUSY;
	}
	rx_list_del(&fr->node);
	pthread_mutex_unlock(&file->lock);
	free(fr);
	req->priv = NULL;
	return 0;
}

/*
 * The agent is being destroyed with the request alive (rx_req_release()):
 * its RDMA legs are freed by the agent too, so the engine forgets them;
 * what is on its ring is dropped with the ring.
 */
static void file_req_release(struct rdmaxfer_req *req)
{
	struct rx_file_req *fr = req->priv;
	struct rdmaxfer_file *file = fr->file;
	uint32_t i;

	pthread_mutex_lock(&file->lock);
	if (file->active == fr) {
		for (i = 0; i < file->qdepth; i++) {
			file->slots[i].state = SLOT_IDLE;
			file->slots[i].req = NULL;
		}
		if (file->uring)
			rx_file_ring_reset(file);
		if (fr->own_fd >= 0)
			close(fr->own_fd);
		file->active = NULL;
		rx_list_del(&file->active_node);
	}
	rx_list_del(&fr->node);
	pthread_mutex_unlock(&file->lock);
	free(fr);
	req->priv = NULL;
}

static const char *file_req_strerror(const struct rdmaxfer_req *req)
{
	const struct rx_file_req *fr = req->priv;

	if (fr->state == RX_REQ_FAILED && fr->msg[0])
		return fr->msg;
	return rdmaxfer_strerror(fr_result(fr));
}

RX_EXPORT
int rdmaxfer_file_req_result(struct rdmaxfer_req *req,
			     struct rdmaxfer_file_result *res)
{
	struct rx_file_req *fr;

	if (!req || !res || req->ops != &file_req_ops)
		return -EINVAL;
	fr = req->priv;
	pthread_mutex_lock(&fr->file->lock);
	*res = fr->res;
	res->err = fr_result(fr);
	if (fr->state == RX_REQ_ACTIVE)
		res->prefix = fr_prefix(fr);
	pthread_mutex_unlock(&fr->file->lock);
	return 0;
}

/* rdmaxfer_req_cancel() of a file request */
static int file_req_cancel(struct rdmaxfer_req *req)
{
	struct rx_file_req *fr = req->priv;

	pthread_mutex_lock(&fr->file->lock);
	if (fr->state != RX_REQ_ACTIVE) {
		pthread_mutex_unlock(&fr->file->lock);
		return -EALREADY;
	}
	if (!fr->cancel) {
		fr->cancel = true;
		fr->cancel_deadline = rx_deadline(RX_FLUSH_TIMEOUT_MS);
		fr_fail(fr, -ECANCELED, RDMAXFER_FILE_STAGE_CANCEL,
			"cancelled");
	}
	fr_step(fr);
	pthread_mutex_unlock(&fr->file->lock);
	return 0;
}

static const struct rx_req_ops file_req_ops = {
	.post = file_req_post,
	.test = file_req_test,
	.wait = file_req_wait,
	.cancel = file_req_cancel,
	.free = file_req_free,
	.release = file_req_release,
	.strerror = file_req_strerror,
};

/*
 * rdmaxfer_progress(): one step of each engine with a request in
 * progress on the agent.  An engine another thread is stepping is skipped
 * (trylock: the agent lock is held while looking, and the order is the
 * engine's lock first); one whose lock is taken cannot leave the list.
 */
static void file_progress(struct rdmaxfer_agent *agent, void *state)
{
	struct rx_file_agent *fa = state;
	struct rdmaxfer_file *file;
	struct rx_list *l;
	uint64_t round;

	pthread_mutex_lock(&agent->lock);
	round = ++fa->round;
	for (;;) {
		file = NULL;
		for (l = fa->active.next; l != &fa->active;
		     l = l->next) {
			struct rdmaxfer_file *f =
				rx_container_of(l, struct rdmaxfer_file,
						active_node);

			if (f->round == round)
				continue;
			f->round = round;
			if (!pthread_mutex_trylock(&f->lock)) {
				file = f;
				break;
			}
		}
		pthread_mutex_unlock(&agent->lock);
		if (!file)
			return;
		if (file->active)
			fr_step(file->active);
		pthread_mutex_unlock(&file->lock);
		pthread_mutex_lock(&agent->lock);
	}
}

static int file_agent_init(struct rdmaxfer_agent *agent, void *state)
{
	struct rx_file_agent *fa = state;

	rx_list_init(&fa->active);
	return 0;
}

static const struct rx_ext rx_ext_file = {
	.name = "file",
	.state_size = sizeof(struct rx_file_agent),
	.init = file_agent_init,
	.progress = file_progress,
};
RX_EXT_REGISTER(rx_ext_file);

/* ---------------------------------- the blocking calls (LIBRDMAXFER_1.5) */

/*
 * A request, waited for up to timeout_ms; on a timeout it is cancelled
 * and waited for (bounded by the cancel: see rdmaxfer_req_cancel()), so
 * nothing is left in flight and nothing leaks.
 */
static int file_remote(struct rdmaxfer_file *file, struct rdmaxfer_peer *peer,
		       enum rdmaxfer_op op, const struct rdmaxfer_file_desc *d,
		       const struct rdmaxfer_desc *remote, int timeout_ms)
{
	struct rdmaxfer_file_result res;
	struct rdmaxfer_req *req;
	int ret;

	ret = rdmaxfer_file_prepare(file, peer, op, d, remote, &req);
	if (ret)
		return ret;
	ret = rdmaxfer_req_post(req);
	if (!ret) {
		ret = rdmaxfer_req_wait(req, timeout_ms);
		if (ret == -ETIMEDOUT &&
		    rdmaxfer_req_test(req) == -EINPROGRESS) {
			rdmaxfer_req_cancel(req);
			rdmaxfer_req_wait(req, -1);
			rdmaxfer_file_req_result(req, &res);
			rx_file_fail(file, -ETIMEDOUT,
				  "timed out after %d ms with %llu of %llu bytes done",
				  timeout_ms, (unsigned long long)res.done,
				  (unsigned long long)res.len);
		}
	}
	rdmaxfer_req_free(req);
	return ret;
}

RX_EXPORT
int rdmaxfer_file_to_peer(struct rdmaxfer_file *file,
			  struct rdmaxfer_peer *peer,
			  const struct rdmaxfer_file_desc *src,
			  const struct rdmaxfer_desc *remote, int timeout_ms)
{
	return file_remote(file, peer, RDMAXFER_OP_WRITE, src, remote,
			   timeout_ms);
}

RX_EXPORT
int rdmaxfer_file_from_peer(struct rdmaxfer_file *file,
			    struct rdmaxfer_peer *peer,
			    const struct rdmaxfer_desc *remote,
			    const struct rdmaxfer_file_desc *dst, int timeout_ms)
{
	return file_remote(file, peer, RDMAXFER_OP_READ, dst, remote,
			   timeout_ms);
}

void rx_file_reqs_free(struct rdmaxfer_file *file)
{
	struct rx_file_req *fr;

	/* the one in progress cancelled and waited for (bounded) */
	pthread_mutex_lock(&file->lock);
	while (!rx_list_empty(&file->reqs)) {
		fr = rx_container_of(file->reqs.next, struct rx_file_req, node);
		pthread_mutex_unlock(&file->lock);
		if (rdmaxfer_req_cancel(fr->req) == 0)
			rdmaxfer_req_wait(fr->req, -1);
		rdmaxfer_req_free(fr->req);
		pthread_mutex_lock(&file->lock);
	}
	pthread_mutex_unlock(&file->lock);
}
