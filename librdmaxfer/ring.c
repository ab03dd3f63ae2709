// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ring.c - the grain ring: MXL's fabrics model (a target registers a ring
 * of N slots; an initiator writes grain i into slot i % N with RDMA WRITE
 * with immediate, the immediate carrying the index) on the public
 * librdmaxfer calls.
 *
 * Nothing here talks to verbs: the slots are registered through the cache
 * with exactly the remote rights they need (mem.c), a grain is a prepared
 * WRITE with a notification (xfer.c splits a grain over the port's max
 * message size and puts the immediate on its last piece only), grains
 * arrive as the target agent's immediate notifications (notif.c), and the
 * target info is the metadata blob (blob.c, ring_info.c).
 *
 * Lapping is prevented with credits: the target keeps the count of grains
 * released in order in an 8-byte word the initiator may only READ; an
 * initiator about to write grain i >= released + N reads the word again
 * and either waits for it (bounded) or returns -EAGAIN.  The target never
 * sees a slot overwritten under it, and no message is spent per release.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "internal.h"

#define CREDIT_LEN		8
#define DETACH_WAIT_MS		10000

struct rdmaxfer_ring {
	struct rdmaxfer_agent *agent;
	pthread_mutex_t lock;
	uint32_t n_slots;
	size_t slot_size;
	size_t len;
	uint8_t *slots;
	uint64_t *credit;		/* grains released in order */
	struct rdmaxfer_mem *slots_mem, *credit_mem;
	uint64_t next;			/* index of the next grain to arrive */
	uint64_t released;		/* every grain below it is released */
	uint8_t *done;			/* per slot: released out of order */
	rdmaxfer_ring_fn fn;
	void *user;
};

struct rdmaxfer_ring_writer {
	struct rdmaxfer_peer *peer;
	struct rdmaxfer_ring_info info;
	struct rdmaxfer_req **reqs;	/* per slot: the last grain's write */
	struct rdmaxfer_req *credit_req;
	uint64_t *credit_buf;
	bool credit_posted;
	uint64_t next;			/* index of the next grain to put */
	uint64_t limit;			/* grains below it may be put */
};

/* Milliseconds left before deadline (rx_deadline(); INT64_MAX: none, -1
 * then), for a wait call. */
static int left_ms(int64_t deadline)
{
	int64_t left;

	if (deadline == INT64_MAX)
		return -1;
	left = (deadline - rx_now_ns()) / 1000000;
	return left > 0 ? (int)left : 0;
}

/* ---------------------------------------------------------------- target */

RX_EXPORT
int rdmaxfer_ring_create(struct rdmaxfer_agent *agent, uint32_t n_slots,
			 size_t slot_size, uint32_t flags,
			 struct rdmaxfer_ring **ringp)
{
	struct rdmaxfer_ring *ring;
	int ret;

	if (!agent || !ringp || flags || !n_slots ||
	    n_slots > RDMAXFER_RING_MAX_SLOTS || !slot_size)
		return -EINVAL;
	if (slot_size > SIZE_MAX / n_slots)
		return -ERANGE;
	ring = calloc(1, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	ring->agent = agent;
	ring->n_slots = n_slots;
	ring->slot_size = slot_size;
	ring->len = slot_size * n_slots;
	pthread_mutex_init(&ring->lock, NULL);
	ring->done = calloc(n_slots, 1);
	ring->credit = aligned_alloc(64, 64);
	ring->slots = mmap(NULL, ring->len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ring->slots == MAP_FAILED) {
		ring->slots = NULL;
		ret = -ENOMEM;
		goto err;
	}
	if (!ring->done || !ring->credit) {
		ret = -ENOMEM;
		goto err;
	}
	*ring->credit = 0;
	ret = rdmaxfer_mem_register_access(agent, ring->slots, ring->len,
					   RDMAXFER_MEM_HOST,
					   RDMAXFER_ACCESS_REMOTE_WRITE,
					   &ring->slots_mem);
	if (ret)
		goto err;
	ret = rdmaxfer_mem_register_access(agent, ring->credit, CREDIT_LEN,
					   RDMAXFER_MEM_HOST,
					   RDMAXFER_ACCESS_REMOTE_READ,
					   &ring->credit_mem);
	if (ret)
		goto err;
	*ringp = ring;
	return 0;
err:
	rdmaxfer_ring_destroy(ring);
	return ret;
}

RX_EXPORT
int rdmaxfer_ring_destroy(struct rdmaxfer_ring *ring)
{
	if (!ring)
		return -EINVAL;
	if (ring->fn)
		rdmaxfer_set_notif_cb(ring->agent, NULL, NULL);
	if (ring->slots_mem)
		rdmaxfer_mem_deregister(ring->slots_mem);
	if (ring->credit_mem)
		rdmaxfer_mem_deregister(ring->credit_mem);
	if (ring->slots)
		munmap(ring->slots, ring->len);
	free(ring->credit);
	free(ring->done);
	pthread_mutex_destroy(&ring->lock);
	free(ring);
	return 0;
}

RX_EXPORT
int rdmaxfer_ring_get_info(struct rdmaxfer_ring *ring,
			   struct rdmaxfer_ring_info *info)
{
	struct rdmaxfer_ring_info out;
	struct rdmaxfer_md *md;
	uint8_t *blob;
	size_t len = 0;
	int ret;

	if (!ring || !info)
		return -EINVAL;
	/* the agent's identity and listen address, as its blob has them */
	ret = rdmaxfer_md_pack(ring->agent, NULL, 0, NULL, 0, &len);
	if (ret != -ENOSPC)
		return ret ? ret : -EINVAL;
	blob = malloc(len);
	if (!blob)
		return -ENOMEM;
	ret = rdmaxfer_md_pack(ring->agent, NULL, 0, blob, len, &len);
	if (!ret)
		ret = rdmaxfer_md_parse(blob, len, &md);
	free(blob);
	if (ret)
		return ret;
	if (!md->listening) {
		rdmaxfer_md_free(md);
		return -EDESTADDRREQ;
	}
	memset(&out, 0, sizeof(out));
	out.version = RDMAXFER_RING_VERSION;
	out.flavour = RDMAXFER_RING_DISCRETE;
	out.n_slots = ring->n_slots;
	out.slot_size = ring->slot_size;
	out.agent_id = md->agent_id;
	memcpy(out.device, md->device, sizeof(out.device));
	memcpy(out.host, md->host, sizeof(out.host));
	out.port = md->listen_port;
	rdmaxfer_md_free(md);
	ret = rdmaxfer_mem_desc(ring->slots_mem, 0, 0, &out.slots);
	if (!ret)
		ret = rdmaxfer_mem_desc(ring->credit_mem, 0, 0, &out.credit);
	if (!ret)
		*info = out;
	return ret;
}

/* A grain's immediate (the index's low 32 bits) to its 64-bit index,
 * under ring->lock. */
static void ring_deliver(struct rdmaxfer_ring *ring, uint32_t imm,
			 struct rdmaxfer_grain *g)
{
	uint64_t index = ring->next + (uint64_t)(int64_t)(int32_t)
			 (imm - (uint32_t)ring->next);

	if (index >= ring->next)
		ring->next = index + 1;
	memset(g, 0, sizeof(*g));
	g->index = index;
	g->slot = (uint32_t)(index % ring->n_slots);
	g->data = ring->slots + (size_t)g->slot * ring->slot_size;
	g->slot_size = ring->slot_size;
}

static void ring_cb(void *user, const struct rdmaxfer_notif *n)
{
	struct rdmaxfer_ring *ring = user;
	struct rdmaxfer_grain g;

	if (n->type != RDMAXFER_NOTIF_IMM)
		return;
	pthread_mutex_lock(&ring->lock);
	ring_deliver(ring, n->value, &g);
	pthread_mutex_unlock(&ring->lock);
	ring->fn(ring->user, &g);
}

RX_EXPORT
int rdmaxfer_ring_set_cb(struct rdmaxfer_ring *ring, rdmaxfer_ring_fn fn,
			 void *user)
{
	int ret;

	if (!ring)
		return -EINVAL;
	ring->fn = fn;
	ring->user = user;
	ret = rdmaxfer_set_notif_cb(ring->agent, fn ? ring_cb : NULL,
				    fn ? ring : NULL);
	if (ret)
		ring->fn = NULL;
	return ret;
}

RX_EXPORT
int rdmaxfer_ring_wait(struct rdmaxfer_ring *ring, int timeout_ms,
		       struct rdmaxfer_grain *grain)
{
	struct rdmaxfer_notif *n;
	int64_t deadline = rx_deadline(timeout_ms);
	int ret;

	if (!ring || !grain || ring->fn)
		return -EINVAL;
	n = malloc(sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (;;) {
		if (timeout_ms == 0)
			ret = rdmaxfer_get_notifs(ring->agent, n, 1);
		else
			ret = rdmaxfer_wait_notifs(ring->agent, n, 1,
						   left_ms(deadline));
		if (ret == 0)
			ret = -EAGAIN;
		if (ret < 0)
			break;
		/* other notifications of the agent are not grains */
		if (n->type != RDMAXFER_NOTIF_IMM)
			continue;
		pthread_mutex_lock(&ring->lock);
		ring_deliver(ring, n->value, grain);
		pthread_mutex_unlock(&ring->lock);
		ret = 0;
		break;
	}
	free(n);
	return ret;
}

RX_EXPORT
int rdmaxfer_ring_release(struct rdmaxfer_ring *ring, uint64_t index)
{
	uint32_t slot;
	int ret = 0;

	if (!ring)
		return -EINVAL;
	pthread_mutex_lock(&ring->lock);
	slot = (uint32_t)(index % ring->n_slots);
	if (index < ring->released || index >= ring->next ||
	    ring->done[slot]) {
		ret = -EINVAL;
		goto out;
	}
	ring->done[slot] = 1;
	while (ring->released < ring->next &&
	       ring->done[ring->released % ring->n_slots]) {
		ring->done[ring->released % ring->n_slots] = 0;
		ring->released++;
	}
	/* the initiator READs the word: store it whole, after the reads of
	 * the released slots */
	__atomic_store_n(ring->credit, ring->released, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&ring->lock);
	return ret;
}

/* ------------------------------------------------------------- initiator */

RX_EXPORT
int rdmaxfer_ring_attach(struct rdmaxfer_agent *agent,
			 const struct rdmaxfer_ring_info *info, int timeout_ms,
			 struct rdmaxfer_ring_writer **wp)
{
	struct rdmaxfer_ring_writer *w;
	struct rdmaxfer_desc exports[2];
	struct rdmaxfer_iov iov;
	int ret;

	if (!agent || !wp)
		return -EINVAL;
	ret = rx_ring_info_check(info);
	if (ret)
		return ret;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->info = *info;
	w->reqs = calloc(info->n_slots, sizeof(*w->reqs));
	w->credit_buf = aligned_alloc(64, 64);
	if (!w->reqs || !w->credit_buf) {
		ret = -ENOMEM;
		goto err;
	}
	ret = rdmaxfer_connect(agent, info->host, info->port, timeout_ms,
			       &w->peer);
	if (ret)
		goto err;
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

RX_EXPORT
int rdmaxfer_ring_put(struct rdmaxfer_ring_writer *w, uint64_t index,
		      const struct rdmaxfer_iov *iov, size_t n,
		      unsigned int flags, int timeout_ms)
{
	struct rdmaxfer_desc remote[RDMAXFER_RING_MAX_IOV];
	struct rdmaxfer_xfer_notif notif = { .value = (uint32_t)index };
	int64_t deadline = rx_deadline(timeout_ms);
	struct rdmaxfer_req *req;
	uint64_t off, total = 0;
	uint32_t slot;
	size_t i;
	int ret;

	if (!w || !iov || !n || n > RDMAXFER_RING_MAX_IOV ||
	    (flags & ~(unsigned int)RDMAXFER_POST_MORE))
		return -EINVAL;
	/* grains go in order: the credit count is of grains released in
	 * order, and the target rebuilds indices from 32 bits */
	if (index != w->next)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!iov[i].len || iov[i].len > w->info.slot_size - total)
			return -EMSGSIZE;
		total += iov[i].len;
	}
	ret = wait_credit(w, index, timeout_ms, deadline);
	if (ret)
		return ret;
	slot = (uint32_t)(index % w->info.n_slots);
	if (w->reqs[slot]) {
		if (timeout_ms == 0)
			ret = rdmaxfer_req_test(w->reqs[slot]);
		else
			ret = rdmaxfer_req_wait(w->reqs[slot],
						left_ms(deadline));
		if (ret == -EINPROGRESS)
			return -EAGAIN;
		if (ret)
			return ret;
		rdmaxfer_req_free(w->reqs[slot]);
		w->reqs[slot] = NULL;
	}
	off = w->info.slots.addr + slot * w->info.slot_size;
	for (i = 0; i < n; i++) {
		remote[i] = w->info.slots;
		remote[i].addr = off;
		remote[i].len = iov[i].len;
		off += iov[i].len;
	}
	ret = rdmaxfer_xfer_prepare(w->peer, RDMAXFER_OP_WRITE, iov, n,
				    remote, n, &notif, &req);
	if (ret)
		return ret;
	ret = rdmaxfer_req_post_flags(req, flags);
	if (ret) {
		rdmaxfer_req_free(req);
		return writer_error(w, ret);
	}
	w->reqs[slot] = req;
	w->next++;
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
	for (i = 0; i < w->info.n_slots; i++) {
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
	for (i = 0; w->reqs && i < w->info.n_slots; i++) {
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
	if (w->peer)
		rdmaxfer_peer_destroy(w->peer);
	free(w->credit_buf);
	free(w->reqs);
	free(w);
	return 0;
}
