// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ring.c - the grain ring: MXL's fabrics model (a target registers a ring
 * of N slots; an initiator writes grain i into slot i % N with RDMA WRITE
 * with immediate, the immediate carrying the index) on the public
 * librdmaxfer calls.
 *
 * Nothing here talks to verbs: the slots are registered through the cache
 * with exactly the remote rights they need (mem.c), a grain is a prepared
 * WRITE with a notification (prepare.c splits a grain over the port's max
 * message size and puts the immediate on its last piece only), grains
 * arrive as the target agent's immediate notifications (notif.c), and the
 * target info is the metadata blob (blob.c, ring_info.c).
 *
 * Lapping is prevented with credits: the target keeps the count of grains
 * released in order in an 8-byte word the initiator may only READ; an
 * initiator about to write grain i >= released + N reads the word again
 * and either waits for it (bounded) or returns -EAGAIN.  The target never
 * sees a slot overwritten under it, and no message is spent per release.
 *
 * The overrun mode (RDMAXFER_RING_OVERRUN) keeps the word but never waits
 * for it: a grain whose slot still holds an unreleased grain is dropped
 * at the initiator after one READ of the word, never written over the
 * slot (the target may be reading it in place), and the target learns of
 * the loss from the gap in the indices: an explicit -EOVERFLOW with the
 * exact count.  Grains never written count as released.
 *
 * The continuous flavour (MXL's samples) is the same ring with a sample
 * as the slot: channels planes of n samples; a write of count samples
 * ending at head is one WRITE per plane, two where it crosses the end,
 * the immediate (head's low 16 bits, count) on the last, and the credit
 * word counts samples released.
 *
 * An immediate is four bytes any connected peer can send (a zero-length
 * WRITE with immediate needs no rkey).  So a writer first names the ring
 * it attaches to (an attach message, ring_info.c), and a ring takes
 * immediates only from its attached peers, into a queue of its own
 * under the agent lock: the application's notifications and other rings'
 * stay theirs.  What arrives is checked as it arrives, against what a
 * conforming writer can send: the next index (credits), an index ahead
 * (overrun: the gap is lost grains), the next sample write, and never
 * more grains than slots waiting to be taken.  Anything else is a
 * protocol error of that peer: counted (rdmaxfer_agent_stats()), the
 * peer failed, the ring untouched.
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
#define MAX_WRITERS		8	/* peers attached to one ring */
#define SAMPLE_REQS		16	/* sample writes in flight */
#define NO_GRAIN		UINT64_MAX

struct rdmaxfer_ring {
	struct rdmaxfer_agent *agent;
	pthread_mutex_t lock;
	uint32_t n_slots;		/* continuous: samples per channel */
	uint32_t channels;		/* continuous: planes; discrete: 0 */
	uint32_t flags;			/* RDMAXFER_RING_OVERRUN */
	size_t slot_size;		/* continuous: bytes per sample */
	size_t len;
	uint8_t *slots;
	uint64_t *credit;		/* grains released in order */
	struct rdmaxfer_mem *slots_mem, *credit_mem;
	uint64_t next;			/* index of the next grain to arrive */
	uint64_t released;		/* every grain below it is released */
	uint8_t *done;			/* per slot: released out of order */
	uint64_t *held;			/* per slot: the grain delivered */
	uint64_t lost;			/* grains that never came */
	uint32_t pending;		/* immediate behind an overrun record */
	bool has_pending;
	rdmaxfer_ring_fn fn;
	rdmaxfer_ring_samples_fn sfn;	/* continuous: the callback */
	void *user;
	struct rx_dep dep;		/* agent NULL once the agent is gone */

	/* under the agent lock (rx_ring_recv()) */
	struct rx_list node;		/* agent->rings */
	uint32_t *q;			/* immediates not taken yet, n_slots */
	uint32_t q_head, q_count;
	uint64_t recv_next;		/* the next index (or head) to come */
	uint32_t nwriters;		/* peers attached */
	bool has_cb;			/* fn or sfn: delivered by progress */
	bool linked;			/* on agent->rings */
	uint64_t slots_addr;		/* what an attach names */
	uint32_t slots_rkey;
};

/* The local buffers a slot's prepared write reads (1 or 2 are kept, so
 * that a put from the same buffers only re-posts it). */
struct ring_iov {
	void *addr[2];
	size_t len[2];
	size_t n;
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
	uint64_t released;		/* the credit word as last read */
	uint64_t *written;		/* overrun: per slot, the last grain */
	struct ring_iov *req_iov;	/* per slot: what reqs[] was made for */
	uint32_t nreqs;			/* reqs[]: n_slots, or SAMPLE_REQS */
	uint64_t nput;			/* sample writes so far */
	struct rx_dep dep;		/* on the peer's agent */
	bool orphan;			/* that agent is gone */
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

/*
 * The agent is being destroyed with the ring alive: its handles are freed
 * with the agent's, its callback was the agent's.  The slots stay mapped
 * (grains held may still be read) until rdmaxfer_ring_destroy().
 */
static void ring_agent_gone(struct rx_dep *dep)
{
	struct rdmaxfer_ring *ring = rx_container_of(dep, struct rdmaxfer_ring,
						     dep);

	ring->slots_mem = NULL;
	ring->credit_mem = NULL;
	/* the agent's rings list and callback count go with the agent; its
	 * peers, the ring's writers among them, were freed first */
	ring->linked = false;
	ring->has_cb = false;
	ring->nwriters = 0;
	ring->agent = NULL;
}

/* The ring of either flavour: planes * n * slot_size bytes. */
static int ring_alloc(struct rdmaxfer_agent *agent, uint32_t n,
		      size_t slot_size, uint32_t channels, uint32_t flags,
		      struct rdmaxfer_ring **ringp)
{
	size_t planes = channels ? channels : 1;
	struct rdmaxfer_ring *ring;
	struct rdmaxfer_desc slots;
	uint32_t i;
	int ret;

	if (slot_size > SIZE_MAX / n / planes)
		return -ERANGE;
	ring = calloc(1, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	ring->agent = agent;
	ring->n_slots = n;
	ring->channels = channels;
	ring->flags = flags;
	ring->slot_size = slot_size;
	ring->len = slot_size * n * planes;
	rx_list_init(&ring->dep.node);
	pthread_mutex_init(&ring->lock, NULL);
	rx_list_init(&ring->node);
	ring->done = calloc(n, 1);
	ring->held = calloc(n, sizeof(*ring->held));
	ring->q = calloc(n, sizeof(*ring->q));
	ring->credit = aligned_alloc(64, 64);
	ring->slots = mmap(NULL, ring->len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ring->slots == MAP_FAILED) {
		ring->slots = NULL;
		ret = -ENOMEM;
		goto err;
	}
	if (!ring->done || !ring->held || !ring->credit || !ring->q) {
		ret = -ENOMEM;
		goto err;
	}
	for (i = 0; i < n; i++)
		ring->held[i] = NO_GRAIN;
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
	ret = rdmaxfer_mem_desc(ring->slots_mem, 0, 0, &slots);
	if (ret)
		goto err;
	ring->slots_addr = slots.addr;
	ring->slots_rkey = slots.rkey;
	/* from here on its writers' immediates come to it */
	pthread_mutex_lock(&agent->lock);
	rx_list_add_tail(&agent->rings, &ring->node);
	ring->linked = true;
	pthread_mutex_unlock(&agent->lock);
	rx_dep_add(agent, &ring->dep, ring_agent_gone);
	*ringp = ring;
	return 0;
err:
	rdmaxfer_ring_destroy(ring);
	return ret;
}

RX_EXPORT
int rdmaxfer_ring_create(struct rdmaxfer_agent *agent, uint32_t n_slots,
			 size_t slot_size, uint32_t flags,
			 struct rdmaxfer_ring **ringp)
{
	if (!agent || !ringp || (flags & ~RDMAXFER_RING_OVERRUN) ||
	    !n_slots || n_slots > RDMAXFER_RING_MAX_SLOTS || !slot_size)
		return -EINVAL;
	return ring_alloc(agent, n_slots, slot_size, 0, flags, ringp);
}

RX_EXPORT
int rdmaxfer_ring_create_samples(struct rdmaxfer_agent *agent,
				 uint32_t channels, uint32_t length,
				 uint32_t sample_size, uint32_t flags,
				 struct rdmaxfer_ring **ringp)
{
	if (!agent || !ringp || !channels ||
	    channels > RDMAXFER_RING_MAX_CHANNELS || !length ||
	    length > RDMAXFER_RING_MAX_SLOTS || !sample_size)
		return -EINVAL;
	/* a writer that never waits would have to skip samples, which the
	 * 16 bits of head in the immediate cannot tell apart from a fault */
	if (flags)
		return flags & RDMAXFER_RING_OVERRUN ? -EOPNOTSUPP : -EINVAL;
	return ring_alloc(agent, length, sample_size, channels, 0, ringp);
}

/* Agent lock held: the ring has a callback, or no more. */
static void ring_has_cb(struct rdmaxfer_ring *ring, bool on)
{
	struct rdmaxfer_agent *agent = ring->agent;

	if (ring->has_cb != on)
		__atomic_store_n(&agent->ring_cbs,
				 on ? agent->ring_cbs + 1 : agent->ring_cbs - 1,
				 __ATOMIC_RELAXED);
	ring->has_cb = on;
}

/*
 * Agent lock held: the ring stops taking immediates.  Its writers are
 * failed (disconnected: their puts end with the connection's error) and,
 * as peers the application never accepted, freed; a callback of the
 * ring's running in another thread has returned when this returns.
 */
static void ring_unlink(struct rdmaxfer_ring *ring)
{
	struct rdmaxfer_agent *agent = ring->agent;
	struct rx_list *l;

	if (ring->linked) {
		rx_list_del(&ring->node);
		ring->linked = false;
	}
	ring_has_cb(ring, false);
	for (l = agent->peers.next; l != &agent->peers; l = l->next) {
		struct rdmaxfer_peer *peer =
			rx_container_of(l, struct rdmaxfer_peer, node);

		if (peer->ring != ring)
			continue;
		peer->ring = NULL;
		rx_peer_fail(peer, -ESHUTDOWN);
	}
	ring->nwriters = 0;
	while (agent->delivering &&
	       !pthread_equal(agent->deliverer, pthread_self()))
		pthread_cond_wait(&agent->cond, &agent->lock);
}

RX_EXPORT
int rdmaxfer_ring_destroy(struct rdmaxfer_ring *ring)
{
	int ret = 0;

	if (!ring)
		return -EINVAL;
	if (!ring->agent) {
		ret = -ENODEV;		/* the agent went first */
	} else {
		rx_dep_del(ring->agent, &ring->dep);
		pthread_mutex_lock(&ring->agent->lock);
		ring_unlink(ring);
		pthread_mutex_unlock(&ring->agent->lock);
	}
	if (ring->slots_mem)
		rdmaxfer_mem_deregister(ring->slots_mem);
	if (ring->credit_mem)
		rdmaxfer_mem_deregister(ring->credit_mem);
	if (ring->slots)
		munmap(ring->slots, ring->len);
	free(ring->credit);
	free(ring->done);
	free(ring->held);
	free(ring->q);
	pthread_mutex_destroy(&ring->lock);
	free(ring);
	return ret;
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
	if (!ring->agent)
		return -ENODEV;
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
	out.version = ring->channels || ring->flags ?
		      RDMAXFER_RING_VERSION_EXT : RDMAXFER_RING_VERSION;
	out.flavour = ring->channels ? RDMAXFER_RING_CONTINUOUS :
				       RDMAXFER_RING_DISCRETE;
	out.channels = (uint16_t)ring->channels;
	out.flags = (uint16_t)ring->flags;
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

/* Under ring->lock: the first grain at or after index still held in a
 * slot, or ring->next: one pass over the slots. */
static uint64_t ring_first_held(const struct rdmaxfer_ring *ring,
				uint64_t index)
{
	uint64_t first = ring->next;
	uint32_t s;

	for (s = 0; s < ring->n_slots; s++)
		if (ring->held[s] != NO_GRAIN && ring->held[s] >= index &&
		    ring->held[s] < first)
			first = ring->held[s];
	return first;
}

/*
 * Under ring->lock: move the credit word past every grain released or
 * never delivered (lost to overrun), stopping at the first held one.
 * Index by index within the last n_slots indices; a gap wider than the
 * ring (overrun: that many grains lost) is crossed in one pass over the
 * slots, not one step per lost index (2^31 of them took minutes).
 */
static void ring_advance(struct rdmaxfer_ring *ring)
{
	while (ring->released < ring->next) {
		uint32_t s = (uint32_t)(ring->released % ring->n_slots);

		if (ring->next - ring->released > ring->n_slots &&
		    ring->held[s] != ring->released) {
			ring->released = ring_first_held(ring, ring->released);
			continue;
		}
		if (ring->held[s] == ring->released) {
			if (!ring->done[s])
				break;
			ring->done[s] = 0;
			ring->held[s] = NO_GRAIN;
		}
		ring->released++;
	}
	/* the initiator READs the word: store it whole, after the reads of
	 * the released slots */
	__atomic_store_n(ring->credit, ring->released, __ATOMIC_RELEASE);
}

/*
 * A grain's immediate (the index's low 32 bits) to its 64-bit index,
 * under ring->lock: 0 and the grain; -EOVERFLOW and an overrun record
 * (the first lost index, g->lost, no data) when grains before it never
 * came, the grain itself kept for the next call; -EPROTO for an index
 * already seen.
 */
static int ring_take(struct rdmaxfer_ring *ring, uint32_t imm,
		     struct rdmaxfer_grain *g)
{
	uint64_t index = ring->next + (uint64_t)(int64_t)(int32_t)
			 (imm - (uint32_t)ring->next);
	uint32_t slot = (uint32_t)(index % ring->n_slots);

	memset(g, 0, sizeof(*g));
	if (index < ring->next)
		return -EPROTO;
	if (index > ring->next) {
		uint64_t gap = index - ring->next;

		g->index = ring->next;
		g->slot = (uint32_t)(ring->next % ring->n_slots);
		g->lost = gap > UINT32_MAX ? UINT32_MAX : (uint32_t)gap;
		ring->lost += gap;
		ring->next = index;
		ring->pending = imm;
		ring->has_pending = true;
		ring_advance(ring);
		return -EOVERFLOW;
	}
	ring->next = index + 1;
	ring->held[slot] = index;
	g->index = index;
	g->slot = slot;
	g->data = ring->slots + (size_t)slot * ring->slot_size;
	g->slot_size = ring->slot_size;
	return 0;
}

/* Agent lock held: the oldest immediate of the ring's queue. */
static bool ring_q_pop(struct rdmaxfer_ring *ring, uint32_t *imm)
{
	if (!ring->q_count)
		return false;
	*imm = ring->q[ring->q_head];
	ring->q_head = (ring->q_head + 1) % ring->n_slots;
	ring->q_count--;
	return true;
}

/* Agent lock held: an immediate popped for a callback that was taken
 * away before it ran goes back to the front, for rdmaxfer_ring_wait(). */
static void ring_q_unpop(struct rdmaxfer_ring *ring, uint32_t imm)
{
	ring->q_head = (ring->q_head + ring->n_slots - 1) % ring->n_slots;
	ring->q[ring->q_head] = imm;
	ring->q_count++;
}

static void ring_unpop(struct rdmaxfer_ring *ring, uint32_t imm)
{
	pthread_mutex_lock(&ring->agent->lock);
	ring_q_unpop(ring, imm);
	pthread_mutex_unlock(&ring->agent->lock);
}

/* A grain's immediate to the ring's callback, outside the agent lock. */
static void ring_cb(struct rdmaxfer_ring *ring, uint32_t imm)
{
	struct rdmaxfer_grain g;
	rdmaxfer_ring_fn fn;
	void *fn_user;
	int ret;

	/* the pair as one (ring_set_fn()): this call uses it throughout,
	 * though the user's callback may take itself away or replace itself
	 * while the record it was given is followed by a grain already
	 * taken */
	pthread_mutex_lock(&ring->lock);
	fn = ring->fn;
	fn_user = ring->user;
	ret = fn ? ring_take(ring, imm, &g) : -ENOENT;
	pthread_mutex_unlock(&ring->lock);
	if (ret == -ENOENT) {
		ring_unpop(ring, imm);
		return;
	}
	if (ret == -EOVERFLOW) {
		/* the record (data NULL), then the grain after the gap */
		fn(fn_user, &g);
		pthread_mutex_lock(&ring->lock);
		ring->has_pending = false;
		ret = ring_take(ring, ring->pending, &g);
		pthread_mutex_unlock(&ring->lock);
	}
	if (!ret)
		fn(fn_user, &g);
}

/* The next immediate for the ring: 0, -EAGAIN (timeout_ms 0),
 * -ETIMEDOUT.  The ring's own queue: the agent's other notifications are
 * not grains, and are left to the application. */
static int ring_next_imm(struct rdmaxfer_ring *ring, int timeout_ms,
			 uint32_t *imm)
{
	struct rdmaxfer_agent *agent = ring->agent;
	int64_t deadline = rx_deadline(timeout_ms);
	int ret;

	pthread_mutex_lock(&agent->lock);
	for (;;) {
		if (rx_self_progress(agent))
			rx_progress_locked(agent);
		if (ring_q_pop(ring, imm)) {
			ret = 0;
			break;
		}
		if (timeout_ms == 0) {
			ret = -EAGAIN;
			break;
		}
		ret = rx_block(agent, deadline);
		if (ret)
			break;
	}
	pthread_mutex_unlock(&agent->lock);
	/* what the progress above queued for the application's callback */
	rx_deliver_notifs(agent);
	return ret;
}

RX_EXPORT
int rdmaxfer_ring_wait(struct rdmaxfer_ring *ring, int timeout_ms,
		       struct rdmaxfer_grain *grain)
{
	uint32_t imm;
	int ret;

	if (!ring || !grain || ring->channels)
		return -EINVAL;
	if (!ring->agent)
		return -ENODEV;
	pthread_mutex_lock(&ring->lock);
	if (ring->fn) {
		pthread_mutex_unlock(&ring->lock);
		return -EINVAL;
	}
	if (ring->has_pending) {
		ring->has_pending = false;
		ret = ring_take(ring, ring->pending, grain);
		pthread_mutex_unlock(&ring->lock);
		return ret;
	}
	pthread_mutex_unlock(&ring->lock);
	ret = ring_next_imm(ring, timeout_ms, &imm);
	if (ret)
		return ret;
	pthread_mutex_lock(&ring->lock);
	ret = ring_take(ring, imm, grain);
	pthread_mutex_unlock(&ring->lock);
	return ret;
}

/*
 * A sample write's immediate to its delivery: the head and count it
 * names (head past the last one delivered, the range inside the ring)
 * and where its samples lie.  0, or -EPROTO for an immediate that names
 * no such write.
 */
static int samples_take(struct rdmaxfer_ring *ring, uint32_t imm,
			struct rdmaxfer_samples *s)
{
	uint32_t count, start, first;
	uint64_t head;
	int ret;

	pthread_mutex_lock(&ring->lock);
	ret = rx_ring_samples_head(imm, ring->next, ring->n_slots, &head,
				   &count);
	if (!ret)
		ring->next = head;
	pthread_mutex_unlock(&ring->lock);
	if (ret)
		return ret;
	rx_ring_span(head, count, ring->n_slots, &start, &first);
	memset(s, 0, sizeof(*s));
	s->head = head;
	s->count = count;
	s->channels = ring->channels;
	s->stride = (uint64_t)ring->n_slots * ring->slot_size;
	s->frag[0] = ring->slots + (size_t)start * ring->slot_size;
	s->frag_len[0] = (uint64_t)first * ring->slot_size;
	if (count > first) {
		s->frag[1] = ring->slots;
		s->frag_len[1] = (uint64_t)(count - first) * ring->slot_size;
	}
	return 0;
}

RX_EXPORT
int rdmaxfer_ring_wait_samples(struct rdmaxfer_ring *ring, int timeout_ms,
			       struct rdmaxfer_samples *s)
{
	uint32_t imm;
	int ret;

	if (!ring || !s || !ring->channels)
		return -EINVAL;
	if (!ring->agent)
		return -ENODEV;
	pthread_mutex_lock(&ring->lock);
	ret = ring->sfn ? -EINVAL : 0;
	pthread_mutex_unlock(&ring->lock);
	if (ret)
		return ret;
	ret = ring_next_imm(ring, timeout_ms, &imm);
	if (ret)
		return ret;
	return samples_take(ring, imm, s);
}

/* A sample write's immediate to the ring's callback, outside the agent
 * lock; one that names no write (which rx_ring_recv() let through only
 * if it did not come from the network) is dropped. */
static void ring_samples_cb(struct rdmaxfer_ring *ring, uint32_t imm)
{
	struct rdmaxfer_samples s;
	rdmaxfer_ring_samples_fn sfn;
	void *sfn_user;

	/* the pair as one (ring_set_fn()) */
	pthread_mutex_lock(&ring->lock);
	sfn = ring->sfn;
	sfn_user = ring->user;
	pthread_mutex_unlock(&ring->lock);
	if (!sfn)
		ring_unpop(ring, imm);
	else if (!samples_take(ring, imm, &s))
		sfn(sfn_user, &s);
}

/* Lock not held: the ring's callback and its user, as one. */
static void ring_store_fn(struct rdmaxfer_ring *ring, rdmaxfer_ring_fn fn,
			  rdmaxfer_ring_samples_fn sfn, void *user)
{
	pthread_mutex_lock(&ring->lock);
	ring->fn = fn;
	ring->sfn = sfn;
	ring->user = user;
	pthread_mutex_unlock(&ring->lock);
}

/*
 * The ring's callback, fn for grains or sfn for samples, both NULL to
 * take it away.  The pair is stored with its user under the ring's lock,
 * where the callbacks read it, so no call pairs one callback with the
 * other's user; then a call of the ring's that started with the old pair
 * in another thread is waited for (the agent's one deliverer), so none
 * runs once this returns (unless this is that call) and the old user may
 * go.  The ring's callback is its own: the application's
 * (rdmaxfer_set_notif_cb()) and other rings' are not touched.
 */
static int ring_set_fn(struct rdmaxfer_ring *ring, rdmaxfer_ring_fn fn,
		       rdmaxfer_ring_samples_fn sfn, void *user)
{
	struct rdmaxfer_agent *agent = ring->agent;

	if (!agent)
		return -ENODEV;
	ring_store_fn(ring, fn, sfn, user);
	pthread_mutex_lock(&agent->lock);
	ring_has_cb(ring, fn || sfn);
	while (agent->delivering &&
	       !pthread_equal(agent->deliverer, pthread_self()))
		pthread_cond_wait(&agent->cond, &agent->lock);
	pthread_mutex_unlock(&agent->lock);
	/* what waited in the queue goes to the new callback now */
	if (fn || sfn)
		rx_deliver_notifs(agent);
	return 0;
}

RX_EXPORT
int rdmaxfer_ring_set_cb(struct rdmaxfer_ring *ring, rdmaxfer_ring_fn fn,
			 void *user)
{
	if (!ring)
		return -EINVAL;
	if (ring->channels)
		return -EOPNOTSUPP;
	return ring_set_fn(ring, fn, NULL, user);
}

RX_EXPORT
int rdmaxfer_ring_set_samples_cb(struct rdmaxfer_ring *ring,
				 rdmaxfer_ring_samples_fn fn, void *user)
{
	if (!ring)
		return -EINVAL;
	if (!ring->channels)
		return -EOPNOTSUPP;
	return ring_set_fn(ring, NULL, fn, user);
}

RX_EXPORT
int rdmaxfer_ring_release(struct rdmaxfer_ring *ring, uint64_t index)
{
	uint32_t slot;
	int ret = 0;

	if (!ring)
		return -EINVAL;
	pthread_mutex_lock(&ring->lock);
	if (ring->channels) {
		/* samples: every one below head (index) */
		if (index <= ring->released || index > ring->next) {
			ret = -EINVAL;
			goto out;
		}
		ring->released = index;
		__atomic_store_n(ring->credit, ring->released,
				 __ATOMIC_RELEASE);
		goto out;
	}
	slot = (uint32_t)(index % ring->n_slots);
	if (index < ring->released || index >= ring->next ||
	    ring->held[slot] != index || ring->done[slot]) {
		ret = -EINVAL;
		goto out;
	}
	ring->done[slot] = 1;
	ring_advance(ring);
out:
	pthread_mutex_unlock(&ring->lock);
	return ret;
}

RX_EXPORT
int rdmaxfer_ring_lost(struct rdmaxfer_ring *ring, uint64_t *lost)
{
	if (!ring || !lost)
		return -EINVAL;
	pthread_mutex_lock(&ring->lock);
	*lost = ring->lost;
	pthread_mutex_unlock(&ring->lock);
	return 0;
}

/* ------------------------------------------ the rings' share of progress */

/* Agent lock held: a peer's immediate or attach was refused. */
static void ring_proto_error(struct rdmaxfer_agent *agent,
			     struct rdmaxfer_peer *peer)
{
	agent->stats.ring_proto_errors++;
	if (peer->state == RDMAXFER_PEER_CONNECTED ||
	    peer->state == RDMAXFER_PEER_CONNECTING) {
		agent->stats.peers_failed_proto++;
		rx_peer_fail(peer, -EPROTO);
	}
}

/* Agent lock held: the peer attaches to the ring of these slots. */
static void ring_attach_peer(struct rdmaxfer_agent *agent,
			     struct rdmaxfer_peer *peer, uint64_t addr,
			     uint32_t rkey)
{
	struct rdmaxfer_ring *ring = NULL;
	struct rx_list *l;

	for (l = agent->rings.next; l != &agent->rings; l = l->next) {
		ring = rx_container_of(l, struct rdmaxfer_ring, node);
		if (ring->slots_addr == addr && ring->slots_rkey == rkey)
			break;
		ring = NULL;
	}
	if (peer->ring == ring && ring)
		return;			/* again: nothing changes */
	if (!ring || peer->ring || ring->nwriters >= MAX_WRITERS) {
		ring_proto_error(agent, peer);
		return;
	}
	peer->ring = ring;
	ring->nwriters++;
	/* the ring's now, not the application's to accept */
	rx_list_del(&peer->accept_node);
}

/*
 * Agent lock held: n came from peer.  An attach (a message of
 * RX_RING_ATTACH_VALUE in the attach layout) and every immediate of an
 * attached peer are the rings': checked here, as they arrive, against
 * what the ring's writer can send, and queued for the ring (true).
 * Anything else is the application's (false).
 */
bool rx_ring_recv(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		  const struct rdmaxfer_notif *n)
{
	struct rdmaxfer_ring *ring = peer->ring;
	uint64_t addr, head;
	uint32_t rkey, count;
	int32_t ahead;

	if (n->type == RDMAXFER_NOTIF_MSG) {
		if (n->value != RX_RING_ATTACH_VALUE ||
		    rx_ring_attach_decode(n->data, n->len, &addr, &rkey))
			return false;
		ring_attach_peer(agent, peer, addr, rkey);
		return true;
	}
	if (!ring)
		return false;
	/* a failed writer's last immediates: it is out */
	if (peer->state != RDMAXFER_PEER_CONNECTED &&
	    peer->state != RDMAXFER_PEER_CONNECTING)
		return true;
	if (ring->q_count >= ring->n_slots) {
		/* more grains waiting than slots: no writer has that credit,
		 * and an overrun writer never writes an unreleased slot */
		ring_proto_error(agent, peer);
		return true;
	}
	if (ring->channels) {
		if (rx_ring_samples_head(n->value, ring->recv_next,
					 ring->n_slots, &head, &count)) {
			ring_proto_error(agent, peer);
			return true;
		}
		ring->recv_next = head;
	} else {
		/* the index from its low 32 bits: behind is a replay; ahead
		 * is a gap, which only an overrun writer makes (the grains
		 * it dropped): with credits every index comes in turn */
		ahead = (int32_t)(n->value - (uint32_t)ring->recv_next);
		if (ahead < 0 ||
		    (ahead && !(ring->flags & RDMAXFER_RING_OVERRUN))) {
			ring_proto_error(agent, peer);
			return true;
		}
		ring->recv_next += (uint64_t)ahead + 1;
	}
	ring->q[(ring->q_head + ring->q_count) % ring->n_slots] = n->value;
	ring->q_count++;
	agent->stats.ring_grains++;
	return true;
}

/* Agent lock held: a ring with a callback has immediates waiting. */
bool rx_rings_pending(struct rdmaxfer_agent *agent)
{
	struct rx_list *l;

	for (l = agent->rings.next; l != &agent->rings; l = l->next) {
		struct rdmaxfer_ring *ring =
			rx_container_of(l, struct rdmaxfer_ring, node);

		if (ring->has_cb && ring->q_count)
			return true;
	}
	return false;
}

/*
 * Agent lock held, by its one deliverer (rx_deliver_notifs()): each
 * waiting immediate of a ring with a callback, in order, to that
 * callback, the lock dropped around each call.  The list is searched
 * again after every call, which may have destroyed a ring.
 */
void rx_rings_deliver(struct rdmaxfer_agent *agent)
{
	for (;;) {
		struct rdmaxfer_ring *ring = NULL;
		struct rx_list *l;
		uint32_t imm;

		for (l = agent->rings.next; l != &agent->rings; l = l->next) {
			ring = rx_container_of(l, struct rdmaxfer_ring, node);
			if (ring->has_cb && ring->q_count)
				break;
			ring = NULL;
		}
		if (!ring || !ring_q_pop(ring, &imm))
			return;
		pthread_mutex_unlock(&agent->lock);
		if (ring->channels)
			ring_samples_cb(ring, imm);
		else
			ring_cb(ring, imm);
		pthread_mutex_lock(&agent->lock);
	}
}

/* Agent lock held: the peer is freed. */
void rx_ring_peer_gone(struct rdmaxfer_peer *peer)
{
	if (!peer->ring)
		return;
	peer->ring->nwriters--;
	peer->ring = NULL;
}

/* ------------------------------------------------------------- initiator */

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
