// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ring_writer.c - the initiator's side of a grain ring: attach to a
 * target's ring, write grains or samples into its slots with WRITE with
 * immediate, and keep to the credits the target's word grants (or, in
 * the overrun mode, drop what would overwrite an unreleased slot).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring.h"

/* The agent is being destroyed with the writer attached: it freed the
 * writer's peer and requests. */
static void writer_agent_gone(struct rx_dep *dep)
{
	struct rdmaxfer_ring_writer *w =
		rx_container_of(dep, struct rdmaxfer_ring_writer, dep);
	uint32_t i;

	for (i = 0; i < w->nreqs; i++)
		w->reqs[i] = NULL;
	w->credit_req = NULL;
	w->peer = NULL;
	w->orphan = true;
}

RX_EXPORT
int rdmaxfer_ring_attach(struct rdmaxfer_agent *agent,
			 const struct rdmaxfer_ring_info *info, int timeout_ms,
			 struct rdmaxfer_ring_writer **wp)
{
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_desc exports[2];
	uint8_t hello[RX_RING_ATTACH_LEN];
	struct rdmaxfer_iov iov;
	uint32_t i;
	int ret;

	if (!agent || !wp)
		return -EINVAL;
	ret = rx_ring_info_check(info);
	if (ret)
		return ret;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	rx_list_init(&w->dep.node);
	w->info = *info;
	w->nreqs = info->n_slots;
	if (info->flavour == RDMAXFER_RING_CONTINUOUS &&
	    w->nreqs > SAMPLE_REQS)
		w->nreqs = SAMPLE_REQS;
	w->reqs = calloc(w->nreqs, sizeof(*w->reqs));
	w->req_iov = calloc(w->nreqs, sizeof(*w->req_iov));
	w->credit_buf = aligned_alloc(64, 64);
	if (info->flags & RDMAXFER_RING_OVERRUN)
		w->written = malloc(info->n_slots * sizeof(*w->written));
	if (!w->reqs || !w->req_iov || !w->credit_buf ||
	    (info->flags & RDMAXFER_RING_OVERRUN && !w->written)) {
		ret = -ENOMEM;
		goto err;
	}
	for (i = 0; w->written && i < info->n_slots; i++)
		w->written[i] = NO_GRAIN;
	ret = rdmaxfer_connect(agent, info->host, info->port, timeout_ms,
			       &w->peer);
	if (ret)
		goto err;
	rx_dep_add(agent, &w->dep, writer_agent_gone);
	/* a target info of another agent (another device, a restarted
	 * target): its rkeys mean nothing there */
	if (rdmaxfer_peer_id(w->peer) != info->agent_id) {
		ret = -ESTALE;
		goto err;
	}
	exports[0] = info->slots;
	exports[1] = info->credit;
	ret = rdmaxfer_peer_set_exports(w->peer, exports, 2);
	if (ret)
		goto err;
	/* name the ring first: the target takes grains only from peers
	 * attached to it (this message comes before them on QP 0) */
	ret = rx_ring_attach_encode(info->slots.addr, info->slots.rkey, hello,
				    sizeof(hello));
	if (!ret)
		ret = rdmaxfer_notif_send(w->peer, RX_RING_ATTACH_VALUE, hello,
					  sizeof(hello));
	if (ret)
		goto err;
	iov.addr = w->credit_buf;
	iov.len = CREDIT_LEN;
	exports[1].len = CREDIT_LEN;
	ret = rdmaxfer_xfer_prepare(w->peer, RDMAXFER_OP_READ, &iov, 1,
				    &exports[1], 1, NULL, &w->credit_req);
	if (ret)
		goto err;
	/* one credit read now: a bad rkey fails the attach, not a put */
	ret = rdmaxfer_req_post(w->credit_req);
	if (!ret)
		ret = rdmaxfer_req_wait(w->credit_req,
					timeout_ms > 0 ? timeout_ms :
					DETACH_WAIT_MS);
	if (ret)
		goto err;
	w->next = *w->credit_buf;
	w->released = w->next;
	w->limit = w->next + info->n_slots;
	*wp = w;
	return 0;
err:
	rdmaxfer_ring_detach(w);
	return ret;
}

/*
 * A post refused with -ENOTCONN: the connection is down, and the peer's
 * error says why (-ECONNRESET: the target disconnected or died,
 * -ETIMEDOUT: it stopped answering); else the error as it is.
 */
static int writer_error(struct rdmaxfer_ring_writer *w, int ret)
{
	int err;

	if (ret != -ENOTCONN)
		return ret;
	err = rdmaxfer_peer_error(w->peer);
	return err < 0 ? err : ret;
}

/* Read the target's released count again: 0 with more credit, -EAGAIN
 * (timeout_ms 0, or nothing new yet), or the read's error. */
static int refresh_credit(struct rdmaxfer_ring_writer *w, int timeout_ms)
{
	uint64_t released;
	int ret;

	if (!w->credit_posted) {
		ret = rdmaxfer_req_post(w->credit_req);
		if (ret)
			return writer_error(w, ret);
		w->credit_posted = true;
	}
	if (timeout_ms == 0)
		ret = rdmaxfer_req_test(w->credit_req);
	else
		ret = rdmaxfer_req_wait(w->credit_req, timeout_ms);
	if (ret == -EINPROGRESS || ret == -ETIMEDOUT)
		return -EAGAIN;
	w->credit_posted = false;
	if (ret)
		return ret;
	released = *w->credit_buf;
	/* the target cannot have released what was never written */
	if (released > w->next)
		return -EPROTO;
	w->released = released;
	if (released + w->info.n_slots <= w->limit)
		return -EAGAIN;
	w->limit = released + w->info.n_slots;
	return 0;
}

static int wait_credit(struct rdmaxfer_ring_writer *w, uint64_t index,
		       int timeout_ms, int64_t deadline)
{
	int ret;

	while (index >= w->limit) {
		ret = refresh_credit(w, left_ms(deadline));
		if (!ret)
			continue;
		/* a failed read or post (a dead target: the post is
		 * refused at once) is the answer, not a reason to read
		 * again: that spun here forever */
		if (ret != -EAGAIN)
			return ret;
		if (timeout_ms == 0)
			return -EAGAIN;
		if (timeout_ms > 0 && rx_now_ns() >= deadline)
			return -ETIMEDOUT;
		/* the target has not released yet: do not flood it */
		if (!w->credit_posted)
			usleep(100);
	}
	return 0;
}

/*
 * Overrun mode: may grain index go into slot, whose last grain the target
 * must have released?  0; or, after one READ of the credit word (bounded
 * by the put's timeout) found it still held, -ENOBUFS: the grain is
 * dropped, never written over a slot the target may be reading.
 */
static int overrun_credit(struct rdmaxfer_ring_writer *w, uint64_t index,
			  uint32_t slot, int timeout_ms, int64_t deadline)
{
	int ret;

	if (w->written[slot] == NO_GRAIN || w->written[slot] < w->released)
		return 0;
	ret = refresh_credit(w, timeout_ms == 0 ? 0 : left_ms(deadline));
	if (ret && ret != -EAGAIN)
		return ret;
	if (w->written[slot] < w->released)
		return 0;
	/* the index is spent: the target sees the gap and counts it */
	w->next = index + 1;
	return -ENOBUFS;
}

/* The write that last used request slot i completed here (its local
 * buffers are free): 0, -EAGAIN (timeout_ms 0), or its error. */
static int req_slot_wait(struct rdmaxfer_ring_writer *w, uint32_t i,
			 int timeout_ms, int64_t deadline)
{
	int ret;

	if (!w->reqs[i])
		return 0;
	if (timeout_ms == 0)
		ret = rdmaxfer_req_test(w->reqs[i]);
	else
		ret = rdmaxfer_req_wait(w->reqs[i], left_ms(deadline));
	return ret == -EINPROGRESS ? -EAGAIN : ret;
}

/* req_slot_wait(), then the request freed. */
static int req_slot_free(struct rdmaxfer_ring_writer *w, uint32_t i,
			 int timeout_ms, int64_t deadline)
{
	int ret = req_slot_wait(w, i, timeout_ms, deadline);

	if (ret || !w->reqs[i])
		return ret;
	rdmaxfer_req_free(w->reqs[i]);
	w->reqs[i] = NULL;
	return 0;
}

/* Is slot i's prepared write one of these very buffers? */
static bool req_slot_same(const struct rdmaxfer_ring_writer *w, uint32_t i,
			  const struct rdmaxfer_iov *iov, size_t n)
{
	const struct ring_iov *r = &w->req_iov[i];
	size_t k;

	if (!w->reqs[i] || r->n != n)
		return false;
	for (k = 0; k < n; k++)
		if (r->addr[k] != iov[k].addr || r->len[k] != iov[k].len)
			return false;
	return true;
}

/*
 * Read the credit word ahead: take a read that has finished, and post
 * the next one once half the window is spent, so that a writer whose
 * target keeps up rarely waits a READ round trip for credit.
 */
static void credit_ahead(struct rdmaxfer_ring_writer *w)
{
	if (w->credit_posted && refresh_credit(w, 0) == -EAGAIN &&
	    w->credit_posted)
		return;
	if (w->credit_posted || w->limit - w->next > w->info.n_slots / 2)
		return;
	if (!rdmaxfer_req_post(w->credit_req))
		w->credit_posted = true;
}

/* Prepare and post n local -> remote pieces with the immediate after
 * them, kept in request slot i. */
static int ring_write(struct rdmaxfer_ring_writer *w, uint32_t i,
		      const struct rdmaxfer_iov *local,
		      const struct rdmaxfer_desc *remote, size_t n,
		      uint32_t imm, unsigned int flags)
{
	struct rdmaxfer_xfer_notif notif = { .value = imm };
	struct rdmaxfer_req *req;
	int ret;

	ret = rdmaxfer_xfer_prepare(w->peer, RDMAXFER_OP_WRITE, local, n,
				    remote, n, &notif, &req);
	if (ret)
		return ret;
	ret = rdmaxfer_req_post_flags(req, flags);
	if (ret) {
		rdmaxfer_req_free(req);
		return writer_error(w, ret);
	}
	w->reqs[i] = req;
	return 0;
}

RX_EXPORT
int rdmaxfer_ring_put(struct rdmaxfer_ring_writer *w, uint64_t index,
		      const struct rdmaxfer_iov *iov, size_t n,
		      unsigned int flags, int timeout_ms)
{
	struct rdmaxfer_desc remote[RDMAXFER_RING_MAX_IOV];
	int64_t deadline = rx_deadline(timeout_ms);
	uint64_t off, total = 0;
	bool overrun;
	uint32_t slot;
	size_t i;
	int ret;

	if (!w || !iov || !n || n > RDMAXFER_RING_MAX_IOV ||
	    (flags & ~(unsigned int)RDMAXFER_POST_MORE) ||
	    w->info.flavour != RDMAXFER_RING_DISCRETE)
		return -EINVAL;
	if (w->orphan)
		return -ENODEV;
	overrun = w->info.flags & RDMAXFER_RING_OVERRUN;
	/* grains go in order: the credit count is of grains released in
	 * order, and the target rebuilds indices from 32 bits; an overrun
	 * ring's writer may skip (the target counts the skipped as lost) */
	if (overrun ? index < w->next || index - w->next > INT32_MAX :
		      index != w->next)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!iov[i].len || iov[i].len > w->info.slot_size - total)
			return -EMSGSIZE;
		total += iov[i].len;
	}
	slot = (uint32_t)(index % w->info.n_slots);
	if (overrun)
		ret = overrun_credit(w, index, slot, timeout_ms, deadline);
	else
		ret = wait_credit(w, index, timeout_ms, deadline);
	if (ret)
		return ret;
	ret = req_slot_wait(w, slot, timeout_ms, deadline);
	if (ret)
		return ret;
	if (req_slot_same(w, slot, iov, n)) {
		/* the same buffers into the same slot: post it again */
		ret = rx_req_set_imm(w->reqs[slot], (uint32_t)index);
		if (!ret)
			ret = rdmaxfer_req_post_flags(w->reqs[slot], flags);
		if (ret)
			return writer_error(w, ret);
	} else {
		ret = req_slot_free(w, slot, 0, 0);
		if (ret)
			return ret;
		off = w->info.slots.addr + slot * w->info.slot_size;
		for (i = 0; i < n; i++) {
			remote[i] = w->info.slots;
			remote[i].addr = off;
			remote[i].len = iov[i].len;
			off += iov[i].len;
		}
		ret = ring_write(w, slot, iov, remote, n, (uint32_t)index,
				 flags);
		if (ret)
			return ret;
		w->req_iov[slot].n = n <= 2 ? n : 0;
		for (i = 0; i < n && i < 2; i++) {
			w->req_iov[slot].addr[i] = iov[i].addr;
			w->req_iov[slot].len[i] = iov[i].len;
		}
	}
	if (overrun)
		w->written[slot] = index;
	w->next = index + 1;
	if (!overrun)
		credit_ahead(w);
	return 0;
}

RX_EXPORT
int rdmaxfer_ring_put_samples(struct rdmaxfer_ring_writer *w, uint64_t head,
			      uint32_t count, const struct rdmaxfer_iov *chans,
			      size_t n, unsigned int flags, int timeout_ms)
{
	struct rdmaxfer_desc remote[2 * RDMAXFER_RING_MAX_CHANNELS];
	struct rdmaxfer_iov local[2 * RDMAXFER_RING_MAX_CHANNELS];
	int64_t deadline = rx_deadline(timeout_ms);
	uint64_t size, plane, len;
	uint32_t start, first, i;
	size_t c, k = 0;
	int ret;

	if (!w || !chans || (flags & ~(unsigned int)RDMAXFER_POST_MORE) ||
	    w->info.flavour != RDMAXFER_RING_CONTINUOUS ||
	    n != w->info.channels)
		return -EINVAL;
	if (w->orphan)
		return -ENODEV;
	if (!count || count > w->info.n_slots ||
	    count > RDMAXFER_RING_MAX_COUNT)
		return -EMSGSIZE;
	/* writes follow on: the target rebuilds head from 16 bits */
	if (head < count || head - count != w->next)
		return -EINVAL;
	size = w->info.slot_size;
	for (c = 0; c < n; c++) {
		if (!chans[c].addr)
			return -EINVAL;
		if (chans[c].len != count * size)
			return -EMSGSIZE;
	}
	ret = wait_credit(w, head - 1, timeout_ms, deadline);
	if (ret)
		return ret;
	i = (uint32_t)(w->nput % w->nreqs);
	ret = req_slot_free(w, i, timeout_ms, deadline);
	if (ret)
		return ret;
	rx_ring_span(head, count, w->info.n_slots, &start, &first);
	plane = w->info.n_slots * size;
	for (c = 0; c < n; c++) {
		/* up to the ring's end, then the rest from its start */
		len = first * size;
		local[k].addr = chans[c].addr;
		local[k].len = len;
		remote[k] = w->info.slots;
		remote[k].addr += c * plane + start * size;
		remote[k++].len = len;
		if (count == first)
			continue;
		local[k].addr = (uint8_t *)chans[c].addr + len;
		local[k].len = chans[c].len - len;
		remote[k] = w->info.slots;
		remote[k].addr += c * plane;
		remote[k++].len = chans[c].len - len;
	}
	ret = ring_write(w, i, local, remote, k,
			 rx_ring_samples_imm(head, count), flags);
	if (ret)
		return ret;
	w->nput++;
	w->next = head;
	credit_ahead(w);
	return 0;
}

RX_EXPORT
int rdmaxfer_ring_flush(struct rdmaxfer_ring_writer *w, int timeout_ms)
{
	int64_t deadline = rx_deadline(timeout_ms);
	uint32_t i;
	int ret, first = 0;

	if (!w)
		return -EINVAL;
	if (w->orphan)
		return -ENODEV;
	for (i = 0; i < w->nreqs; i++) {
		if (!w->reqs[i])
			continue;
		ret = rdmaxfer_req_wait(w->reqs[i],
					left_ms(deadline));
		if (ret && ret != -EALREADY && !first)
			first = ret;
	}
	return first;
}

RX_EXPORT
struct rdmaxfer_peer *rdmaxfer_ring_writer_peer(struct rdmaxfer_ring_writer *w)
{
	return w ? w->peer : NULL;
}

RX_EXPORT
int rdmaxfer_ring_detach(struct rdmaxfer_ring_writer *w)
{
	uint32_t i;
	int ret = 0;

	if (!w)
		return -EINVAL;
	if (w->reqs && w->peer)
		rdmaxfer_ring_flush(w, DETACH_WAIT_MS);
	if (w->credit_req && w->credit_posted)
		rdmaxfer_req_wait(w->credit_req, DETACH_WAIT_MS);
	for (i = 0; w->reqs && i < w->nreqs; i++) {
		if (w->reqs[i] && rdmaxfer_req_free(w->reqs[i]))
			ret = -EBUSY;
		else if (w->reqs[i])
			w->reqs[i] = NULL;
	}
	if (w->credit_req && rdmaxfer_req_free(w->credit_req))
		ret = -EBUSY;
	else
		w->credit_req = NULL;
	if (ret)
		return ret;
	if (w->peer) {
		rx_dep_del(w->peer->agent, &w->dep);
		rdmaxfer_peer_destroy(w->peer);
	}
	ret = w->orphan ? -ENODEV : 0;
	free(w->credit_buf);
	free(w->reqs);
	free(w->req_iov);
	free(w->written);
	free(w);
	return ret;
}
