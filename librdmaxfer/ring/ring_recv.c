// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ring_recv.c - what arrives at a ring's target, under the agent lock:
 * the attach messages of its writers and their immediates, each checked
 * as it arrives against what a conforming writer can send (ring.c's top
 * comment), then queued for the ring; and the rings' callbacks, run
 * where the application's notifications are delivered.
 */
#include <errno.h>
#include <pthread.h>

#include "ring.h"

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
	struct rx_ring_agent *ra = ring_agent_of(agent);
	struct rdmaxfer_ring *ring = NULL;
	struct rx_list *l;

	for (l = ra->rings.next; l != &ra->rings; l = l->next) {
		ring = rx_container_of(l, struct rdmaxfer_ring, node);
		if (ring->slots_addr == addr && ring->slots_rkey == rkey)
			break;
		ring = NULL;
	}
	if (rx_peer_ring(peer) == ring && ring)
		return;			/* again: nothing changes */
	if (!ring || peer->owner_ext || ring->nwriters >= MAX_WRITERS) {
		ring_proto_error(agent, peer);
		return;
	}
	peer->owner_ext = &rx_ext_ring;
	peer->owner = ring;
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
static bool ring_notif(struct rdmaxfer_agent *agent, void *state,
		       struct rdmaxfer_peer *peer, const struct rdmaxfer_notif *n)
{
	struct rdmaxfer_ring *ring = rx_peer_ring(peer);
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
static bool ring_pending(struct rdmaxfer_agent *agent, void *state)
{
	struct rx_ring_agent *ra = state;
	struct rx_list *l;

	for (l = ra->rings.next; l != &ra->rings; l = l->next) {
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
static void ring_deliver(struct rdmaxfer_agent *agent, void *state)
{
	struct rx_ring_agent *ra = state;

	for (;;) {
		struct rdmaxfer_ring *ring = NULL;
		struct rx_list *l;
		uint32_t imm;

		for (l = ra->rings.next; l != &ra->rings; l = l->next) {
			ring = rx_container_of(l, struct rdmaxfer_ring, node);
			if (ring->has_cb && ring->q_count)
				break;
			ring = NULL;
		}
		if (!ring || !rx_ring_q_pop(ring, &imm))
			return;
		pthread_mutex_unlock(&agent->lock);
		if (ring->channels)
			rx_ring_samples_cb(ring, imm);
		else
			rx_ring_cb(ring, imm);
		pthread_mutex_lock(&agent->lock);
	}
}

/* Agent lock held: the peer is freed. */
static void ring_peer_gone(struct rdmaxfer_peer *peer)
{
	struct rdmaxfer_ring *ring = rx_peer_ring(peer);

	if (!ring)
		return;
	ring->nwriters--;
	peer->owner_ext = NULL;
	peer->owner = NULL;
}

static int ring_agent_init(struct rdmaxfer_agent *agent, void *state)
{
	struct rx_ring_agent *ra = state;

	rx_list_init(&ra->rings);
	return 0;
}

/* The ring room: its rings on each agent, the immediates and attaches of
 * their writers, their callbacks, their writers' peers. */
const struct rx_ext rx_ext_ring = {
	.name = "ring",
	.state_size = sizeof(struct rx_ring_agent),
	.init = ring_agent_init,
	.notif = ring_notif,
	.pending = ring_pending,
	.deliver = ring_deliver,
	.peer_gone = ring_peer_gone,
};
RX_EXT_REGISTER(rx_ext_ring);
