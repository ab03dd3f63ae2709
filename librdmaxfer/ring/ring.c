// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ring.c - the grain ring: MXL's fabrics model (a target registers a ring
 * of N slots; an initiator writes grain i into slot i % N with RDMA WRITE
 * with immediate, the immediate carrying the index) on the public
 * librdmaxfer calls.  This file is the target's ring; what arrives at it
 * is ring_recv.c's, the initiator's writer ring_writer.c's.
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

#include "ring.h"

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
	rx_list_add_tail(&ring_agent_of(agent)->rings, &ring->node);
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
		__atomic_store_n(&agent->ext_cbs,
				 on ? agent->ext_cbs + 1 : agent->ext_cbs - 1,
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

		if (rx_peer_ring(peer) != ring)
			continue;
		peer->owner_ext = NULL;
		peer->owner = NULL;
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
bool rx_ring_q_pop(struct rdmaxfer_ring *ring, uint32_t *imm)
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
void rx_ring_cb(struct rdmaxfer_ring *ring, uint32_t imm)
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
		if (rx_ring_q_pop(ring, imm)) {
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
 * lock; one that names no write (which ring_notif() let through only
 * if it did not come from the network) is dropped. */
void rx_ring_samples_cb(struct rdmaxfer_ring *ring, uint32_t imm)
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
