/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ring.h - the grain ring's own structures, shared by its files: the
 * target's ring (ring.c), what arrives at it (ring_recv.c) and the
 * initiator's writer (ring_writer.c).  Private to the ring.
 */
#ifndef RX_RING_H
#define RX_RING_H

#include "core/core.h"

#define CREDIT_LEN		8

#define DETACH_WAIT_MS		10000

#define MAX_WRITERS		8	/* peers attached to one ring */

#define SAMPLE_REQS		16	/* sample writes in flight */

#define NO_GRAIN		UINT64_MAX

/* The ring room's state on an agent (ring_recv.c's rx_ext_ring). */
struct rx_ring_agent {
	struct rx_list rings;		/* struct rdmaxfer_ring, agent lock */
};

extern const struct rx_ext rx_ext_ring;

static inline struct rx_ring_agent *
ring_agent_of(struct rdmaxfer_agent *agent)
{
	return rx_agent_ext(agent, &rx_ext_ring);
}

/* the ring a peer writes grains into (its writer is the ring's), or NULL */
static inline struct rdmaxfer_ring *
rx_peer_ring(const struct rdmaxfer_peer *peer)
{
	return peer->owner_ext == &rx_ext_ring ? peer->owner : NULL;
}

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

	/* under the agent lock (ring_recv.c) */
	struct rx_list node;		/* rx_ring_agent.rings */
	uint32_t *q;			/* immediates not taken yet, n_slots */
	uint32_t q_head, q_count;
	uint64_t recv_next;		/* the next index (or head) to come */
	uint32_t nwriters;		/* peers attached */
	bool has_cb;			/* fn or sfn: delivered by progress */
	bool linked;			/* on rx_ring_agent.rings */
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
static inline int left_ms(int64_t deadline)
{
	int64_t left;

	if (deadline == INT64_MAX)
		return -1;
	left = (deadline - rx_now_ns()) / 1000000;
	return left > 0 ? (int)left : 0;
}

/* ring.c, for ring_recv.c (agent lock held): the next immediate queued
 * for the ring; the ring's callback of either flavour for one of them */
bool rx_ring_q_pop(struct rdmaxfer_ring *ring, uint32_t *imm);
void rx_ring_cb(struct rdmaxfer_ring *ring, uint32_t imm);
void rx_ring_samples_cb(struct rdmaxfer_ring *ring, uint32_t imm);

#endif /* RX_RING_H */
