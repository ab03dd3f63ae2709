// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * peer.c - peers and their QPs: creation, failure, abort and the flush
 * deadlines, destroy and flush; the QP generations.
 *
 * A QP error or a disconnect fails the peer: its QPs go to the error
 * state so outstanding work flushes, and requests fail instead of
 * hanging.  A failed peer whose requests are not all flushed within
 * RX_FLUSH_TIMEOUT_MS has them failed without their completions
 * (rx_peer_abort()).  How a peer connects, and reconnects, is conn.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void qp_init_attr(struct rdmaxfer_agent *agent,
			 struct ibv_qp_init_attr *init)
{
	memset(init, 0, sizeof(*init));
	init->send_cq = agent->cq;
	init->recv_cq = agent->cq;
	init->srq = agent->srq;
	/* routes the QP's async events to this agent (async.c) */
	init->qp_context = agent;
	init->qp_type = IBV_QPT_RC;
	init->cap.max_send_wr = agent->attr.sq_depth;
	init->cap.max_send_sge = 1;
	init->cap.max_inline_data = agent->attr.max_inline;
	init->sq_sig_all = 0;
}

/*
 * QP generations.  A work request's wr_id carries the generation of its
 * QP (12 bits) beside a pointer into a request or a terminator, and a
 * completion is looked at only if its QP number and generation are a
 * live QP's (send_wc_current()).  The generations are the agent's, not
 * the peer slot's: every new QP and every abort (rx_peer_abort()) takes
 * the next, 1..RX_GEN_SPAN in turn.  Per slot, each peer's first QP had
 * generation 1, so a provider that gave a new peer's QP the number of a
 * destroyed one whose completions were still in the CQ would have had
 * them taken for the new QP's, pointing into freed requests.
 *
 * Why the wrap is safe.  A stale completion (number n, generation g) is
 * mistaken only by a live QP numbered n with generation g.  Such a QP
 * is either the same verbs QP after an abort, or a new QP that reused n.
 * The first cannot come back to g: a QP is aborted once per failure, and
 * nothing is posted to it again (a reconnect replaces it).  The second
 * needs a completion of a destroyed QP still in the CQ, where it stays
 * only until the CQ is next seen empty (the provider makes none for a
 * QP after destroying it); gen_stale_min is the oldest generation count
 * of a QP destroyed since then.  Before a generation would repeat one of
 * those (RX_GEN_SPAN counts after it), the CQ is drained first, so no
 * generation in use can match a stale completion.  Lock held.
 */
static void gen_reserve(struct rdmaxfer_agent *agent, unsigned int n)
{
	if (agent->gen_stale_min != UINT64_MAX &&
	    agent->qp_gens + n - agent->gen_stale_min >= RX_GEN_SPAN)
		rx_poll_cq_locked(agent);	/* seen empty: none stale */
}

/* Lock held, after gen_reserve(): the next generation. */
static uint16_t gen_take(struct rdmaxfer_agent *agent)
{
	agent->qp_gens++;
	return (uint16_t)(agent->qp_gens % RX_GEN_SPAN + 1);
}

/* Create the QP on a cm id and install it into peer->qps[index]. */
int rx_qp_install(struct rdmaxfer_peer *peer, unsigned int index,
		  struct rdma_cm_id *id)
{
	struct rdmaxfer_agent *agent = peer->agent;
	struct ibv_qp_init_attr init;
	struct rx_qp *q = &peer->qps[index];
	int ret;

	/* at most sq_depth WRs of a QP are ever posted and not yet polled
	 * (sq_used), flushes included: that is what its CQ share is */
	ret = rx_cq_reserve(agent, agent->attr.sq_depth);
	if (ret)
		return ret;
	qp_init_attr(agent, &init);
	if (rdma_create_qp(id, agent->pd, &init)) {
		/* a device without inline support refuses the request */
		init.cap.max_inline_data = 0;
		if (rdma_create_qp(id, agent->pd, &init)) {
			ret = -errno;
			rx_cq_release(agent, agent->attr.sq_depth);
			return ret;
		}
	}
	q->cq_share = agent->attr.sq_depth;
	q->peer = peer;
	q->id = id;
	q->qp = id->qp;
	q->qpn = id->qp->qp_num;
	q->index = (uint16_t)index;
	gen_reserve(agent, 1);
	q->gen = gen_take(agent);
	q->gen_first = agent->qp_gens;
	q->established = false;
	q->disconnecting = false;
	q->disconnected = false;
	q->cm_est = false;
	q->dreq_deferred = false;
	q->sq_used = 0;
	q->max_inline = init.cap.max_inline_data;
	if (q->max_inline < agent->info.max_inline || !index)
		agent->info.max_inline = q->max_inline;
	id->context = q;
	return 0;
}

/* Lock held: destroy the verbs QP of a slot (its id stays). */
void rx_qp_uninstall(struct rx_qp *q)
{
	if (q->peer && q->peer->agent->qpn_cache == q)
		q->peer->agent->qpn_cache = NULL;
	if (q->qp) {
		struct rdmaxfer_agent *agent = q->peer->agent;

		rdma_destroy_qp(q->id);
		rx_cq_release(agent, q->cq_share);
		/* its completions may still be in the CQ (gen_reserve()) */
		if (q->gen_first < agent->gen_stale_min)
			agent->gen_stale_min = q->gen_first;
	}
	q->cq_share = 0;
	q->qp = NULL;
	q->qpn = 0;
	q->sq_used = 0;
	rx_qp_drop_terms(q);
}

void rx_qp_destroy(struct rx_qp *q)
{
	if (!q->id)
		return;
	rx_fail_backlog(q, -ECONNRESET);
	rx_qp_uninstall(q);
	rdma_destroy_id(q->id);
	q->id = NULL;
	q->established = false;
}

struct rdmaxfer_peer *rx_peer_new(struct rdmaxfer_agent *agent,
				  unsigned int nqps)
{
	struct rdmaxfer_peer *peer = calloc(1, sizeof(*peer));
	unsigned int i;

	if (!peer)
		return NULL;
	peer->agent = agent;
	peer->nqps = nqps;
	peer->state = RDMAXFER_PEER_CONNECTING;
	peer->initiator = true;		/* on_connect_request() says otherwise */
	rx_list_init(&peer->accept_node);
	for (i = 0; i < RX_MAX_QPS; i++) {
		rx_list_init(&peer->qps[i].backlog);
		rx_list_init(&peer->qps[i].defer_node);
		rx_list_init(&peer->qps[i].terms);
	}
	rx_list_add_tail(&agent->peers, &peer->node);
	return peer;
}

/* Lock held: queued notifications must not name a peer that is gone. */
static void scrub_notifs(struct rdmaxfer_peer *peer)
{
	struct rdmaxfer_agent *agent = peer->agent;
	struct rx_notif_q *q = &agent->notifs;
	size_t i;

	for (i = 0; i < q->count; i++) {
		struct rdmaxfer_notif *n = &q->ring[(q->head + i) % q->cap];

		if (n->peer == peer)
			n->peer = NULL;
	}
	for (i = 0; i < agent->nheld; i++) {
		struct rx_notif_held *h = &agent->held[(agent->held_head + i) %
						       agent->attr.srq_depth];

		if (h->peer == peer)
			h->peer = NULL;
	}
}

/* Lock held.  Frees a peer and its QPs (the caller made sure no request
 * needs it any more). */
void rx_peer_free(struct rdmaxfer_peer *peer)
{
	unsigned int i;

	scrub_notifs(peer);
	if (peer->owner_ext && peer->owner_ext->peer_gone)
		peer->owner_ext->peer_gone(peer);
	for (i = 0; i < peer->nqps; i++) {
		if (peer->qps[i].id && peer->qps[i].established &&
		    !peer->qps[i].disconnecting && !peer->agent->port_down)
			rdma_disconnect(peer->qps[i].id);
		rx_qp_destroy(&peer->qps[i]);
	}
	rx_list_del(&peer->accept_node);
	rx_list_del(&peer->node);
	rx_notif_slots_free(peer);
	rx_exports_free(peer);
	free(peer);
}

/* rx_peer_by_qpn() where the last QP found is not the one */
struct rdmaxfer_peer *rx_peer_by_qpn_slow(struct rdmaxfer_agent *agent,
					  uint32_t qpn, unsigned int *qp_index)
{
	struct rx_list *l;
	unsigned int i;

	for (l = agent->peers.next; l != &agent->peers; l = l->next) {
		struct rdmaxfer_peer *peer =
			rx_container_of(l, struct rdmaxfer_peer, node);

		for (i = 0; i < peer->nqps; i++) {
			if (peer->qps[i].qp && peer->qps[i].qpn == qpn) {
				if (qp_index)
					*qp_index = i;
				agent->qpn_cache = &peer->qps[i];
				return peer;
			}
		}
	}
	return NULL;
}

/* Lock held: every QP of the peer to the error state, so that what is
 * outstanding on it flushes. */
static void peer_qps_to_error(struct rdmaxfer_peer *peer)
{
	struct ibv_qp_attr qattr = { .qp_state = IBV_QPS_ERR };
	unsigned int i;

	peer->qps_err_deferred = false;
	for (i = 0; i < peer->nqps; i++)
		if (peer->qps[i].qp)
			ibv_modify_qp(peer->qps[i].qp, &qattr, IBV_QP_STATE);
}

/*
 * Lock held.  Move the peer out of CONNECTED: every QP to the error state
 * (outstanding WRs flush, so every request completes) unless to_error is
 * false (rx_peer_fail_quiet()), the remote side is told through a DREQ
 * unless its QPs are marked disconnecting, and queued work fails at once.
 */
static void peer_fail(struct rdmaxfer_peer *peer, int err, bool to_error)
{
	struct rdmaxfer_agent *agent = peer->agent;
	struct ibv_port_attr pa;
	bool dreq = false;
	unsigned int i;

	if (peer->state == RDMAXFER_PEER_ERROR ||
	    peer->state == RDMAXFER_PEER_DISCONNECTED) {
		if (err == -ECONNRESET)
			peer->state = RDMAXFER_PEER_DISCONNECTED;
		return;
	}
	peer->state = err == -ECONNRESET ? RDMAXFER_PEER_DISCONNECTED :
					   RDMAXFER_PEER_ERROR;
	peer->error = err;
	/* a passive peer nobody was handed is freed at the end of this
	 * progress round; any other gets RX_FLUSH_TIMEOUT_MS to flush */
	if (!peer->initiator && !peer->handed_out)
		peer->deadline_ns = rx_now_ns();
	else
		peer->deadline_ns = rx_deadline(RX_FLUSH_TIMEOUT_MS);
	rx_set_deadline(agent, peer->deadline_ns);
	/* a failed send may come before the PORT_ERR event that explains
	 * it: look, rather than send a DREQ to a port that is down */
	if (!agent->port_down && err != -ECONNRESET &&
	    !ibv_query_port(agent->ctx, agent->info.port, &pa) &&
	    pa.state != IBV_PORT_ACTIVE)
		agent->port_down = true;
	for (i = 0; i < peer->nqps; i++) {
		struct rx_qp *q = &peer->qps[i];

		if (!q->id)
			continue;
		if (!q->disconnecting && !agent->port_down) {
			q->disconnecting = true;
			/* not before the CM's own ESTABLISHED: see below */
			if (q->established && !q->cm_est)
				q->dreq_deferred = true;
			else
				rdma_disconnect(q->id);
			dreq |= q->established;
		}
		rx_fail_backlog(q, err);
	}
	/*
	 * ... but one we sent a DREQ is kept until its answer
	 * (rx_peer_cm_done()) or the flush deadline.  A QP that data proved
	 * established before its RTU came (rx_qp_comm_est()) gets its DREQ
	 * only with the CM's ESTABLISHED event: the 6.1 kernel cancels the
	 * REP's retries in the work behind that event, which does nothing
	 * once a DREQ moved the id on, so the REP went on retrying and a
	 * destroy of the id waited for those retries, over a minute, under
	 * the agent lock (seen in the hostile suite: a peer failed for what
	 * its first messages were).  It still counts against max_half_open.
	 */
	if (dreq && !peer->initiator && !peer->handed_out)
		peer->deadline_ns = rx_deadline(RX_FLUSH_TIMEOUT_MS);
	if (to_error)
		peer_qps_to_error(peer);
	else
		peer->qps_err_deferred = true;
}

/* Lock held: a DISCONNECTED came for q.  A failed passive peer nobody
 * was handed is freed once every established QP of it has seen its own
 * (its DREQ answered), at the end of this progress round. */
void rx_peer_cm_done(struct rx_qp *q)
{
	struct rdmaxfer_peer *peer = q->peer;
	unsigned int i;

	q->disconnected = true;
	if (peer->initiator || peer->handed_out ||
	    (peer->state != RDMAXFER_PEER_ERROR &&
	     peer->state != RDMAXFER_PEER_DISCONNECTED))
		return;
	for (i = 0; i < peer->nqps; i++)
		if (peer->qps[i].id && peer->qps[i].established &&
		    !peer->qps[i].disconnected)
			return;
	peer->deadline_ns = rx_now_ns();
	rx_set_deadline(peer->agent, peer->deadline_ns);
}

void rx_peer_fail(struct rdmaxfer_peer *peer, int err)
{
	peer_fail(peer, err, true);
}

/*
 * Lock held.  Fail every request of a failed peer that is still in flight
 * without waiting for its completions, which will not come (the CQ or the
 * device is dead) or did not come in time.  Each QP's generation moves on,
 * so completions that still arrive for the old work requests are dropped
 * before their requests are looked at (xfer.c, send_wc_current()); the
 * QPs are in the error state and are replaced before anything is posted
 * again.  Requests without an error of their own report err.
 */
void rx_peer_abort(struct rdmaxfer_peer *peer, int err)
{
	struct rdmaxfer_agent *agent = peer->agent;
	struct rx_list *l;
	unsigned int i;

	gen_reserve(agent, peer->nqps);
	for (i = 0; i < peer->nqps; i++) {
		struct rx_qp *q = &peer->qps[i];

		rx_fail_backlog(q, err);
		q->gen = gen_take(agent);
		q->sq_used = 0;
		rx_qp_drop_terms(q);
	}
	for (l = agent->reqs.next; l != &agent->reqs && peer->nreqs_active;
	     l = l->next) {
		struct rdmaxfer_req *req =
			rx_container_of(l, struct rdmaxfer_req, node);

		if (req->peer != peer || req->state != RX_REQ_ACTIVE)
			continue;
		if (!req->err) {
			req->err = err;
			req->wc_status = -1;
		}
		req->signals = 0;
		req->unposted = 0;
		req->state = RX_REQ_FAILED;
		peer->nreqs_active--;
		if (req->cb)
			rx_req_cb_due(req);
	}
}

/*
 * Lock held.  A responder-side QP error (an access or request error the
 * remote requester is told of through its NAKed completion): fail the
 * peer without a DREQ, which could overtake that NAK and turn the
 * remote's precise error into a flush.  The remote's own failure
 * disconnects; if it does not, destroying the ids does (the kernel's CM
 * sends the DREQ of an id destroyed while established).
 *
 * Nor are the QPs moved to the error state here: the NAK may not have
 * left yet.  rxe (seen on 7.3) raises IBV_EVENT_QP_ACCESS_ERR *before*
 * its responder sends the NAK, and a responder that finds its QP in the
 * error state by then drops the NAK (rxe_resp.c, do_complete()).  The
 * requester is then never told: it retransmits into a QP in error until
 * its retry count runs out (forever on rxe with a retry count of 7).  A
 * responder QP moves itself to the error state after a class C error
 * (so does the IBA's responder; rxe: goto_error in rxe_resp.c), which
 * flushes our own work on it; only should it not, the QPs are moved
 * there when the flush deadline passes (rx_check_deadlines()), long after
 * the NAK went out.  Nothing is reachable meanwhile that was not before:
 * every remote request is still checked against its MR, whatever the
 * QP's state, and the requester sends nothing new past a NAK.
 */
void rx_peer_fail_quiet(struct rdmaxfer_peer *peer, int err)
{
	unsigned int i;

	if (peer->state == RDMAXFER_PEER_CONNECTED ||
	    peer->state == RDMAXFER_PEER_CONNECTING)
		for (i = 0; i < peer->nqps; i++)
			if (peer->qps[i].id)
				peer->qps[i].disconnecting = true;
	peer_fail(peer, err, false);
}

/* Lock held: fail every peer of the agent (port down, device lost). */
void rx_fail_all(struct rdmaxfer_agent *agent, int err, bool abort)
{
	struct rx_list *l;

	for (l = agent->peers.next; l != &agent->peers; l = l->next) {
		struct rdmaxfer_peer *peer =
			rx_container_of(l, struct rdmaxfer_peer, node);

		rx_peer_fail(peer, err);
		if (abort)
			rx_peer_abort(peer, err);
	}
}

/*
 * Lock held, from the progress engine once the earliest peer deadline has
 * passed: free passive peers that failed or did not finish their handshake
 * in cm_timeout_ms, and abort the requests of failed peers that did not
 * flush in RX_FLUSH_TIMEOUT_MS.
 */
void rx_check_deadlines(struct rdmaxfer_agent *agent)
{
	int64_t now = rx_now_ns(), next = 0;
	struct rx_list *l, *n;

	for (l = agent->peers.next; l != &agent->peers; l = n) {
		struct rdmaxfer_peer *peer =
			rx_container_of(l, struct rdmaxfer_peer, node);

		n = l->next;
		if (!peer->deadline_ns)
			continue;
		if (now < peer->deadline_ns) {
			if (!next || peer->deadline_ns < next)
				next = peer->deadline_ns;
			continue;
		}
		peer->deadline_ns = 0;
		if (!peer->initiator && !peer->handed_out) {
			if (peer->state != RDMAXFER_PEER_CONNECTED) {
				agent->stats.half_open_freed++;
				rx_peer_free(peer);
			}
			continue;
		}
		/* a quiet failure's NAK is long gone: flush what is left */
		if (peer->qps_err_deferred)
			peer_qps_to_error(peer);
		if (peer->nreqs_active &&
		    (peer->state == RDMAXFER_PEER_ERROR ||
		     peer->state == RDMAXFER_PEER_DISCONNECTED))
			rx_peer_abort(peer, peer->error ? peer->error : -EIO);
	}
	agent->next_deadline_ns = next;
}

void rx_qp_established(struct rx_qp *q)
{
	struct rdmaxfer_peer *peer = q->peer;
	struct rdmaxfer_agent *agent = peer->agent;

	if (q->established)
		return;
	q->established = true;
	if (++peer->nestablished == peer->nqps &&
	    peer->state == RDMAXFER_PEER_CONNECTING) {
		peer->state = RDMAXFER_PEER_CONNECTED;
		peer->deadline_ns = 0;
		/* a ring's writer is the ring's, not the application's */
		if (!peer->initiator && !peer->owner_ext)
			rx_list_add_tail(&agent->accept_q, &peer->accept_node);
	}
}

/*
 * Lock held.  A receive completed on a QP whose ESTABLISHED event has not
 * been seen.  On the passive side that event comes from the RTU, which
 * travels apart from the data and can arrive after the peer's first
 * message; replying to that message must not fail with -ENOTCONN.  Data
 * on the QP proves the connection: tell the CM (what rdma_notify() is
 * for) and count the QP as established.  The event, when it comes, finds
 * it so and changes nothing.
 */
void rx_qp_comm_est(struct rx_qp *q)
{
	if (q->established)
		return;
	if (q->id)
		(void)rdma_notify(q->id, IBV_EVENT_COMM_EST);
	rx_qp_established(q);
}

RX_EXPORT
int rdmaxfer_peer_destroy(struct rdmaxfer_peer *peer)
{
	struct rdmaxfer_agent *agent;

	if (!peer)
		return -EINVAL;
	agent = peer->agent;
	pthread_mutex_lock(&agent->lock);
	if (peer->nreqs) {
		pthread_mutex_unlock(&agent->lock);
		return -EBUSY;
	}
	rx_peer_free(peer);
	pthread_mutex_unlock(&agent->lock);
	return 0;
}

/* Lock held: nothing of the peer's is posted and not yet complete, and
 * nothing waits for send-queue room or for its doorbell. */
static bool peer_idle(const struct rdmaxfer_peer *peer)
{
	unsigned int i;

	for (i = 0; i < peer->nqps; i++) {
		const struct rx_qp *q = &peer->qps[i];

		if (q->qp && (q->sq_used || !rx_list_empty(&q->backlog)))
			return false;
	}
	return true;
}

/*
 * Wait until every work request posted to the peer (notification
 * messages, requests, their queued parts) has completed: 0, or the
 * peer's error when it failed (what was in flight may not have arrived),
 * -ENOTCONN when it never connected or was disconnected, -ETIMEDOUT.
 */
RX_EXPORT
int rdmaxfer_peer_flush(struct rdmaxfer_peer *peer, int timeout_ms)
{
	int64_t deadline = rx_deadline(timeout_ms);
	struct rdmaxfer_agent *agent;
	int ret;

	if (!peer)
		return -EINVAL;
	agent = peer->agent;
	pthread_mutex_lock(&agent->lock);
	/* held doorbells (RDMAXFER_POST_MORE) go out first */
	rx_ring_deferred(agent);
	for (;;) {
		if (rx_self_progress(agent))
			rx_progress_locked(agent);
		if (peer->state == RDMAXFER_PEER_ERROR) {
			ret = peer->error ? peer->error : -ECONNRESET;
			break;
		}
		if (!rx_peer_sendable(peer)) {
			ret = -ENOTCONN;
			break;
		}
		if (peer_idle(peer)) {
			ret = 0;
			break;
		}
		ret = rx_block(agent, deadline);
		if (ret)
			break;
	}
	pthread_mutex_unlock(&agent->lock);
	if (rx_has_callbacks(agent))
		rx_deliver_notifs(agent);
	return ret;
}

/* The progress thread changes a peer's state and error under the agent
 * lock: the accessors read them under it. */
RX_EXPORT
enum rdmaxfer_peer_state rdmaxfer_peer_state(const struct rdmaxfer_peer *peer)
{
	enum rdmaxfer_peer_state st;

	pthread_mutex_lock(&peer->agent->lock);
	st = peer->state;
	pthread_mutex_unlock(&peer->agent->lock);
	return st;
}

RX_EXPORT
uint64_t rdmaxfer_peer_id(const struct rdmaxfer_peer *peer)
{
	return peer->remote_id;
}

RX_EXPORT
int rdmaxfer_peer_error(const struct rdmaxfer_peer *peer)
{
	int err;

	pthread_mutex_lock(&peer->agent->lock);
	err = peer->error;
	pthread_mutex_unlock(&peer->agent->lock);
	return err;
}
