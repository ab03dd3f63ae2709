// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * notif.c - notifications: receive buffers, queue, callback, sends.
 *
 * The agent keeps one shared receive queue for all its QPs.  A
 * notification is either an RDMA WRITE with immediate (value only, after a
 * transfer's data) or a SEND with immediate carrying a payload of up to
 * RDMAXFER_NOTIF_MSG_MAX bytes; each consumes one receive buffer, which is
 * copied out and reposted with the others of the same poll of the CQ
 * (one post of a chain).  Everything a peer notifies travels on
 * its first QP, so a peer's notifications arrive in the order sent.  QPs
 * are connected with infinite RNR retry: a receiver that runs out of
 * buffers slows its senders down instead of failing them.
 *
 * Peers may be hostile, so the queue is bounded twice: max_notifs for the
 * agent, past which buffers are held back with their notifications in
 * them (backpressure: the SRQ runs dry, every sender waits, nothing is
 * lost), and max_notifs_peer for one peer, past which that peer is failed
 * (the SRQ is shared: holding buffers back for one peer would hold back
 * all of them).  A ring's immediates go to the ring (ring/ring_recv.c).
 *
 * A sent message stays in a send slot until its completion, which a
 * receiver that stops progressing may hold back for ever.  Slots are
 * therefore per peer (struct rx_notif_slots): a stuck peer exhausts its
 * own, gets -EAGAIN, and every other peer keeps sending.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "internal.h"

/*
 * Post the receive buffers of n indices as one chain: one call (and on a
 * device with a doorbell, one doorbell) for all the receives a poll of
 * the CQ consumed.
 */
int rx_post_recvs(struct rdmaxfer_agent *agent, const uint32_t *index,
		  unsigned int n)
{
	struct ibv_sge sge[RX_RECV_BATCH];
	struct ibv_recv_wr wr[RX_RECV_BATCH], *bad;
	unsigned int i;
	int ret;

	while (n) {
		unsigned int k = n < RX_RECV_BATCH ? n : RX_RECV_BATCH;

		for (i = 0; i < k; i++) {
			sge[i].addr = (uintptr_t)agent->recv_buf +
				      (size_t)index[i] * RDMAXFER_NOTIF_MSG_MAX;
			sge[i].length = RDMAXFER_NOTIF_MSG_MAX;
			sge[i].lkey = agent->recv_mr->lkey;
			wr[i].wr_id = ((uint64_t)index[i] << 3) | RX_TAG_RECV;
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
		}
		ret = ibv_post_srq_recv(agent->srq, wr, &bad);
		if (ret)
			return ret > 0 ? -ret : ret;
		index += k;
		n -= k;
	}
	return 0;
}

/* Lock held: queue n; -ENOMEM when the queue cannot grow (the caller
 * holds the notification back instead, as when it is full). */
static int notif_push(struct rdmaxfer_agent *agent,
		      const struct rdmaxfer_notif *n)
{
	struct rx_notif_q *q = &agent->notifs;

	if (q->count == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 64, i;
		struct rdmaxfer_notif *ring;

		if (cap > agent->attr.max_notifs)
			cap = agent->attr.max_notifs;
		ring = malloc(cap * sizeof(*ring));
		if (!ring)
			return -ENOMEM;
		for (i = 0; i < q->count; i++)
			ring[i] = q->ring[(q->head + i) % q->cap];
		free(q->ring);
		q->ring = ring;
		q->cap = cap;
		q->head = 0;
	}
	q->ring[(q->head + q->count) % q->cap] = *n;
	q->count++;
	if (n->peer)
		n->peer->nnotifs++;
	agent->stats.notifs++;
	if (q->count > agent->stats.notifs_peak)
		agent->stats.notifs_peak = q->count;
	return 0;
}

/* Lock held: is the queue full (a held notification waits first)? */
static bool notif_q_full(const struct rdmaxfer_agent *agent)
{
	return agent->nheld || agent->notifs.count >= agent->attr.max_notifs;
}

/*
 * Lock held: n arrived in receive buffer index while the queue is full.
 * The buffer is not reposted, so the SRQ runs dry and senders wait
 * (infinite RNR retries) until the application takes from the queue:
 * backpressure, with nothing lost.  The SRQ is the agent's, shared by
 * every peer, so this holds back every peer alike; it is the agent's
 * bound.  One peer's share of the queue is bounded apart
 * (max_notifs_peer, rx_recv_completion()), so no single peer brings it
 * about.
 */
static void notif_hold(struct rdmaxfer_agent *agent, uint32_t index,
		       const struct rdmaxfer_notif *n)
{
	struct rx_notif_held *h;

	h = &agent->held[(agent->held_head + agent->nheld) %
			 agent->attr.srq_depth];
	h->peer = n->peer;
	h->index = index;
	h->type = n->type;
	h->value = n->value;
	h->len = n->len;
	agent->nheld++;
	if (n->peer)
		n->peer->nnotifs++;
	agent->stats.notifs_backpressured++;
}

/* Lock held: move held notifications into the queue while it has room,
 * and repost their receive buffers. */
static void notif_unhold(struct rdmaxfer_agent *agent)
{
	uint32_t idx[RX_RECV_BATCH];
	struct rdmaxfer_notif *n;
	unsigned int k = 0;

	if (!agent->nheld)
		return;
	n = malloc(sizeof(*n));
	while (n && agent->nheld &&
	       agent->notifs.count < agent->attr.max_notifs) {
		struct rx_notif_held *h = &agent->held[agent->held_head];

		memset(n, 0, offsetof(struct rdmaxfer_notif, data));
		n->peer = h->peer;
		n->peer_id = h->peer ? h->peer->remote_id : 0;
		n->type = h->type;
		n->value = h->value;
		n->len = h->len;
		memcpy(n->data, agent->recv_buf +
		       (size_t)h->index * RDMAXFER_NOTIF_MSG_MAX, n->len);
		if (h->peer)
			h->peer->nnotifs--;	/* notif_push() counts it again */
		if (notif_push(agent, n)) {
			if (h->peer)
				h->peer->nnotifs++;
			break;
		}
		idx[k++] = h->index;
		agent->held_head = (agent->held_head + 1) % agent->attr.srq_depth;
		agent->nheld--;
		if (k == RX_RECV_BATCH) {
			rx_post_recvs(agent, idx, k);
			k = 0;
		}
	}
	if (k)
		rx_post_recvs(agent, idx, k);
	free(n);
}

/*
 * Lock held: take the oldest notification for the application.  Its
 * peer is named only if the application owns it (it connected to it, or
 * took it from rdmaxfer_accept()): a passive peer it never accepted is
 * freed by the library when it fails, whatever it sent, so no pointer to
 * it may be handed out (n->peer NULL, n->peer_id still set).
 */
bool rx_notif_pop(struct rdmaxfer_agent *agent, struct rdmaxfer_notif *out)
{
	struct rx_notif_q *q = &agent->notifs;
	struct rdmaxfer_peer *peer;

	if (!q->count)
		return false;
	*out = q->ring[q->head];
	q->head = (q->head + 1) % q->cap;
	q->count--;
	peer = out->peer;
	if (peer) {
		if (peer->nnotifs)
			peer->nnotifs--;
		if (!peer->initiator && !peer->handed_out)
			out->peer = NULL;
	}
	notif_unhold(agent);
	return true;
}

/*
 * Lock held: a peer sent something that is not a notification, or a
 * receive of its failed (more bytes than a buffer, ...): drop it and
 * fail the peer, whose QP is in the error state now anyway.
 */
static void recv_bad(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		     int err)
{
	agent->stats.notifs_malformed++;
	if (peer && (peer->state == RDMAXFER_PEER_CONNECTED ||
		     peer->state == RDMAXFER_PEER_CONNECTING)) {
		agent->stats.peers_failed_proto++;
		rx_peer_fail(peer, err);
	}
}

/*
 * Lock held: a receive completed; its buffer's index is returned for
 * the caller to post again (rx_post_recvs(), with the others of its
 * poll), or RX_RECV_HELD when the notification waits in it for room in
 * the queue (notif_hold()).
 */
uint32_t rx_recv_completion(struct rdmaxfer_agent *agent, struct ibv_wc *wc)
{
	uint32_t index = (uint32_t)((wc->wr_id & RX_PTR_MASK) >> 3);
	struct rx_notif_wc nw;
	struct rdmaxfer_notif *n;
	struct rdmaxfer_peer *peer;
	unsigned int qi;

	peer = rx_peer_by_qpn(agent, wc->qp_num, &qi);
	if (wc->status != IBV_WC_SUCCESS) {
		/* a flush is our own QP going down; anything else (a SEND
		 * longer than the buffer) is the peer's doing */
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			recv_bad(agent, peer, rx_wc_errno(wc->status));
		return index;
	}
	if (peer)
		rx_qp_comm_est(&peer->qps[qi]);
	n = malloc(sizeof(*n));
	if (!n)
		return index;
	nw.opcode = wc->opcode == IBV_WC_RECV ? RX_NOTIF_WC_RECV :
		    wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM ?
		    RX_NOTIF_WC_WRITE_IMM : RX_NOTIF_WC_OTHER;
	nw.has_imm = wc->wc_flags & IBV_WC_WITH_IMM;
	nw.imm_be = wc->imm_data;
	nw.byte_len = wc->byte_len;
	/* what the peer sent is checked in notif_msg.c; a malformed
	 * notification is dropped and counted */
	if (rx_notif_decode(&nw, agent->recv_buf +
			    (size_t)index * RDMAXFER_NOTIF_MSG_MAX,
			    RDMAXFER_NOTIF_MSG_MAX, n)) {
		agent->stats.notifs_malformed++;
		goto out;
	}
	n->peer = peer;
	n->peer_id = peer ? peer->remote_id : 0;
	/* an extension's own (a ring's grains and attaches) */
	if (peer && rx_exts_notif(agent, peer, n))
		goto out;
	if (peer && peer->nnotifs >= agent->attr.max_notifs_peer) {
		/* one peer's share of the queue is bounded: it is failed,
		 * not the agent, and not the other peers by backpressure */
		agent->stats.notifs_dropped++;
		if (peer->state == RDMAXFER_PEER_CONNECTED ||
		    peer->state == RDMAXFER_PEER_CONNECTING) {
			agent->stats.peers_failed_flood++;
			rx_peer_fail(peer, -ENOBUFS);
		}
		goto out;
	}
	if (notif_q_full(agent) || notif_push(agent, n)) {
		notif_hold(agent, index, n);
		index = RX_RECV_HELD;
	}
out:
	free(n);
	return index;
}

/* Lock held: the slots of a peer for QP 0 of the current generation,
 * allocated at the first send (most peers never send a message). */
static int notif_slots_get(struct rdmaxfer_peer *peer,
			   struct rx_notif_slots **sp)
{
	struct rdmaxfer_agent *agent = peer->agent;
	struct rx_notif_slots *s = &peer->notif;
	uint32_t i;

	if (!s->buf) {
		uint32_t n = agent->attr.sq_depth < RX_NOTIF_PEER_SLOTS ?
			     agent->attr.sq_depth : RX_NOTIF_PEER_SLOTS;
		size_t bytes = (size_t)n * RDMAXFER_NOTIF_MSG_MAX;

		s->buf = aligned_alloc(4096, bytes);
		s->free = calloc(n, sizeof(*s->free));
		if (s->buf && s->free)
			s->mr = ibv_reg_mr(agent->pd, s->buf, bytes, 0);
		if (!s->mr) {
			rx_notif_slots_free(peer);
			return -ENOMEM;
		}
		s->n = n;
		s->gen = (uint16_t)(peer->qps[0].gen - 1);
	}
	if (s->gen != peer->qps[0].gen) {
		/* a new QP: the old one, and what it held, is gone */
		for (i = 0; i < s->n; i++)
			s->free[i] = s->n - 1 - i;
		s->nfree = s->n;
		s->gen = peer->qps[0].gen;
	}
	*sp = s;
	return 0;
}

/* Lock held, or the peer is being freed (its QPs are destroyed). */
void rx_notif_slots_free(struct rdmaxfer_peer *peer)
{
	struct rx_notif_slots *s = &peer->notif;

	if (s->mr)
		ibv_dereg_mr(s->mr);
	free(s->buf);
	free(s->free);
	memset(s, 0, sizeof(*s));
}

/* Lock held: a notification send completed; its slot is free again. */
void rx_send_slot_done(struct rdmaxfer_agent *agent, struct ibv_wc *wc)
{
	uint32_t index = (uint32_t)((wc->wr_id & RX_PTR_MASK) >> 3);
	uint16_t gen = (uint16_t)(wc->wr_id >> RX_GEN_SHIFT);
	unsigned int qi;
	struct rdmaxfer_peer *peer;
	struct rx_notif_slots *s;

	peer = rx_peer_by_qpn(agent, wc->qp_num, &qi);
	if (!peer || (peer->qps[qi].gen & 0xfff) != gen)
		return;		/* its QP (and the slot stack) is gone */
	s = &peer->notif;
	if (s->buf && (s->gen & 0xfff) == gen && index < s->n &&
	    s->nfree < s->n)
		s->free[s->nfree++] = index;
	if (peer->qps[qi].sq_used)
		peer->qps[qi].sq_used--;
	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			rx_peer_fail(peer, rx_wc_errno(wc->status));
	} else if (!rx_list_empty(&peer->qps[qi].backlog)) {
		rx_flush_backlog(&peer->qps[qi]);
	}
}

/* Lock held: a send slot is free and QP 0 can take a WR without
 * overtaking a queued request. */
static bool can_send(struct rdmaxfer_peer *peer, struct rx_notif_slots *s)
{
	struct rx_qp *q = &peer->qps[0];

	return s->nfree && q->sq_used < peer->agent->attr.sq_depth &&
	       rx_list_empty(&q->backlog);
}

RX_EXPORT
int rdmaxfer_notif_send(struct rdmaxfer_peer *peer, uint32_t value,
			const void *msg, size_t len)
{
	struct rdmaxfer_agent *agent;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct rx_notif_slots *s;
	struct ibv_sge sge;
	struct rx_qp *q;
	uint32_t index;
	uint8_t *slot;
	int ret;

	if (!peer || (len && !msg))
		return -EINVAL;
	if (len > RDMAXFER_NOTIF_MSG_MAX)
		return -EMSGSIZE;
	agent = peer->agent;
	pthread_mutex_lock(&agent->lock);
	if (!rx_peer_sendable(peer)) {
		ret = -ENOTCONN;
		goto unlock;
	}
	q = &peer->qps[0];
	ret = notif_slots_get(peer, &s);
	if (ret)
		goto unlock;
	if (!can_send(peer, s)) {
		if (rx_self_progress(agent))
			rx_progress_locked(agent);
		/* the progress call may have failed the peer */
		if (!rx_peer_sendable(peer)) {
			ret = -ENOTCONN;
			goto unlock;
		}
		ret = notif_slots_get(peer, &s);
		if (ret)
			goto unlock;
		/* a queued request on QP 0 must not be overtaken */
		if (!can_send(peer, s)) {
			ret = -EAGAIN;
			goto unlock;
		}
	}
	index = s->free[--s->nfree];
	slot = s->buf + (size_t)index * RDMAXFER_NOTIF_MSG_MAX;
	/* the message may be bad memory: -EFAULT, not a crash */
	if (len) {
		ret = rx_copy_from_user(slot, msg, len);
		if (ret) {
			s->free[s->nfree++] = index;
			goto unlock;
		}
	}
	sge.addr = (uintptr_t)slot;
	sge.length = (uint32_t)len;
	sge.lkey = s->mr->lkey;
	wr.wr_id = ((uint64_t)index << 3) | RX_TAG_SEND |
		   ((uint64_t)(q->gen & 0xfff) << RX_GEN_SHIFT);
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(value);
	wr.sg_list = len ? &sge : NULL;
	wr.num_sge = len ? 1 : 0;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (len && len <= q->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	ret = ibv_post_send(q->qp, &wr, &bad);
	if (ret) {
		s->free[s->nfree++] = index;
		ret = ret > 0 ? -ret : ret;
		goto unlock;
	}
	q->sq_used++;
unlock:
	pthread_mutex_unlock(&agent->lock);
	return ret;
}

static size_t take_notifs(struct rdmaxfer_agent *agent,
			  struct rdmaxfer_notif *out, size_t max)
{
	size_t n = 0;

	while (n < max && rx_notif_pop(agent, &out[n]))
		n++;
	return n;
}

RX_EXPORT
int rdmaxfer_get_notifs(struct rdmaxfer_agent *agent,
			struct rdmaxfer_notif *notifs, size_t max)
{
	size_t n;

	if (!agent || (max && !notifs))
		return -EINVAL;
	pthread_mutex_lock(&agent->lock);
	if (rx_self_progress(agent))
		rx_progress_locked(agent);
	n = agent->notif_fn ? 0 : take_notifs(agent, notifs, max);
	pthread_mutex_unlock(&agent->lock);
	if (rx_has_callbacks(agent))
		rx_deliver_notifs(agent);
	return (int)n;
}

RX_EXPORT
int rdmaxfer_wait_notifs(struct rdmaxfer_agent *agent,
			 struct rdmaxfer_notif *notifs, size_t max,
			 int timeout_ms)
{
	int64_t deadline = rx_deadline(timeout_ms);
	size_t n = 0;
	int ret = 0;

	if (!agent || !max || !notifs)
		return -EINVAL;
	pthread_mutex_lock(&agent->lock);
	for (;;) {
		if (rx_self_progress(agent))
			rx_progress_locked(agent);
		n = agent->notif_fn ? 0 : take_notifs(agent, notifs, max);
		if (n)
			break;
		ret = rx_block(agent, deadline);
		if (ret)
			break;
	}
	pthread_mutex_unlock(&agent->lock);
	return n ? (int)n : ret;
}

RX_EXPORT
int rdmaxfer_set_notif_cb(struct rdmaxfer_agent *agent, rdmaxfer_notif_fn fn,
			  void *user)
{
	if (!agent)
		return -EINVAL;
	pthread_mutex_lock(&agent->lock);
	agent->notif_fn = fn;
	agent->notif_user = user;
	/* a callback running in another thread (the progress thread) may
	 * still use the old user, which the caller may free next (a ring
	 * destroyed after its callback was taken away did): wait for it to
	 * return, unless this is that callback */
	while (agent->delivering &&
	       !pthread_equal(agent->deliverer, pthread_self()))
		pthread_cond_wait(&agent->cond, &agent->lock);
	pthread_mutex_unlock(&agent->lock);
	rx_deliver_notifs(agent);
	return 0;
}

/*
 * Hand queued notifications to the callback, outside the lock.  Every
 * wait and progress call comes here: with nothing queued (the common
 * case) it only takes the lock; the copy handed to the callback is
 * allocated once there is something to deliver.
 */
void rx_deliver_notifs(struct rdmaxfer_agent *agent)
{
	struct rdmaxfer_notif *n;
	rdmaxfer_notif_fn fn;
	void *user;

	pthread_mutex_lock(&agent->lock);
	/* one deliverer at a time keeps the callback order = arrival order */
	if (agent->delivering ||
	    ((!agent->notif_fn || !agent->notifs.count) &&
	     rx_list_empty(&agent->cb_q) && !rx_exts_pending(agent))) {
		pthread_mutex_unlock(&agent->lock);
		return;
	}
	agent->delivering = true;
	agent->deliverer = pthread_self();
	pthread_mutex_unlock(&agent->lock);
	/* the notification stays queued if this fails: a later call tries */
	n = malloc(sizeof(*n));
	pthread_mutex_lock(&agent->lock);
	while (n && agent->notif_fn && rx_notif_pop(agent, n)) {
		fn = agent->notif_fn;
		user = agent->notif_user;
		pthread_mutex_unlock(&agent->lock);
		fn(user, n);
		pthread_mutex_lock(&agent->lock);
	}
	/* requests' completion callbacks and the extensions' (rings'),
	 * with the same one-deliverer rule */
	rx_req_cbs_run_locked(agent);
	rx_exts_deliver(agent);
	agent->delivering = false;
	/* rdmaxfer_set_notif_cb() may wait for this callback to return */
	pthread_cond_broadcast(&agent->cond);
	pthread_mutex_unlock(&agent->lock);
	free(n);
}

/* Every receive buffer of the SRQ, posted at creation. */
int rx_recv_bufs_post(struct rdmaxfer_agent *agent)
{
	uint32_t idx[RX_RECV_BATCH], i, k, n;
	int ret = 0;

	for (i = 0; i < agent->attr.srq_depth && !ret; i += n) {
		n = agent->attr.srq_depth - i;
		if (n > RX_RECV_BATCH)
			n = RX_RECV_BATCH;
		for (k = 0; k < n; k++)
			idx[k] = i + k;
		ret = rx_post_recvs(agent, idx, n);
	}
	return ret;
}

int rx_recv_bufs_alloc(struct rdmaxfer_agent *agent)
{
	size_t rbytes = (size_t)agent->attr.srq_depth * RDMAXFER_NOTIF_MSG_MAX;

	/* send slots are per peer (notif.c) */
	agent->recv_buf = aligned_alloc(4096, rbytes);
	/* a notification held back keeps its buffer: at most all of them */
	agent->held = calloc(agent->attr.srq_depth, sizeof(*agent->held));
	if (!agent->recv_buf || !agent->held)
		return -ENOMEM;
	/* internal buffers live as long as the agent: registered directly,
	 * not through the cache that serves user memory */
	agent->recv_mr = ibv_reg_mr(agent->pd, agent->recv_buf, rbytes,
				    IBV_ACCESS_LOCAL_WRITE);
	if (!agent->recv_mr)
		return -errno;
	return 0;
}
