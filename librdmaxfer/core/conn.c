// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * conn.c - connections: rdma_cm listen/accept/connect and reconnect (a
 * peer's QPs and its failure are peer.c's).
 *
 * A peer is N RC QPs, each its own rdma_cm connection.  The connecting
 * side sends a hello in the private data (magic, version, its agent id, a
 * random token naming this peer connection, the QP index and N); the
 * accepting side groups the N requests by (agent id, token) and the peer
 * becomes ready when all N are ESTABLISHED.  A connect runs its handshake
 * on a private event channel, so it can block without holding the agent
 * lock, then migrates the ids to the agent's channel, where the progress
 * engine watches for DISCONNECTED.  A failed peer's connecting side can
 * reconnect.
 *
 * With a key (auth.c; rdmaxfer(7) Security) each QP takes two connect
 * requests: the first, from an id without a QP, carries the active
 * side's nonce and is rejected with the passive side's nonce and proof
 * (a challenge the passive side keeps, bounded, answered once); the
 * second carries the active side's proof, and only once it checks out
 * does the passive side create the QP and accept.  A peer that cannot prove the key so never has a QP on
 * the passive side, and the active side's QP reaches RTS only on the
 * REP of a passive side that proved itself.  There is no room for the
 * active side's proof in one REQ (56 bytes) with a nonce of the passive
 * side to prove it over, hence the round trip.
 *
 * Bounds: on the passive side at most max_half_open peers may wait to be
 * handed out by rdmaxfer_accept(), one that is not CONNECTED within
 * cm_timeout_ms of its first connect request is freed, and one that fails
 * before it is handed out is freed at once.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/random.h>

#include "auth.h"
#include "internal.h"

static struct rdmaxfer_peer *find_accepting(struct rdmaxfer_agent *agent,
					    const struct rx_hello *h)
{
	struct rx_list *l;

	for (l = agent->peers.next; l != &agent->peers; l = l->next) {
		struct rdmaxfer_peer *peer =
			rx_container_of(l, struct rdmaxfer_peer, node);

		if (!peer->initiator && peer->remote_id == h->agent_id &&
		    peer->token == h->token &&
		    peer->state == RDMAXFER_PEER_CONNECTING)
			return peer;
	}
	return NULL;
}

/* Lock held: passive peers not handed out yet (handshaking or queued);
 * a ring's writers are the ring's (bounded there). */
static unsigned int half_open(struct rdmaxfer_agent *agent)
{
	struct rx_list *l;
	unsigned int n = 0;

	for (l = agent->peers.next; l != &agent->peers; l = l->next) {
		struct rdmaxfer_peer *peer =
			rx_container_of(l, struct rdmaxfer_peer, node);

		if (!peer->initiator && !peer->handed_out && !peer->owner_ext)
			n++;
	}
	return n;
}

/* Lock held: a passive peer whose only connect request was refused. */
static void forget_if_empty(struct rdmaxfer_peer *peer)
{
	unsigned int i;

	for (i = 0; i < peer->nqps; i++)
		if (peer->qps[i].id)
			return;
	rx_peer_free(peer);
}

/*
 * Lock held: the authentication step of a connect request (see the top
 * of this file).  0: go on (both sides without a key, or a proof that
 * answers our challenge); else the length of the REJ's private data put
 * in w: our challenge, or a refusal (counted).
 */
static int auth_request(struct rdmaxfer_agent *agent, const struct rx_hello *h,
			const struct rx_hello_auth *ha, uint8_t *w)
{
	struct rx_welcome_auth wa = { 0 };
	struct rx_auth_ctx c = { 0 };
	int64_t now = rx_now_ns();

	if (!agent->auth && !ha->flags)
		return 0;
	if (agent->auth && ha->flags == RX_HELLO_AUTH) {
		memcpy(c.nonce_a, ha->data, RX_AUTH_NONCE_LEN);
		c.id_a = h->agent_id;
		c.id_p = agent->info.agent_id;
		c.token = h->token;
		c.qp_index = h->qp_index;
		c.nqps = h->nqps;
		if (!rx_auth_nonce(c.nonce_p) &&
		    !rx_auth_mac(agent->auth, RX_AUTH_PASSIVE, &c, wa.mac)) {
			rx_auth_put(agent->auth, &c,
				    rx_deadline(agent->attr.cm_timeout_ms), now);
			memcpy(wa.nonce, c.nonce_p, RX_AUTH_NONCE_LEN);
			wa.flags = RX_WELCOME_CHALLENGE;
			return rx_welcome_encode_auth(agent->info.agent_id,
						      &wa, w,
						      RX_WELCOME_AUTH_LEN);
		}
	} else if (agent->auth && ha->flags == RX_HELLO_PROOF) {
		/* once: a replayed proof finds its challenge gone */
		if (!rx_auth_take(agent->auth, h->agent_id, h->token,
				  h->qp_index, now, &c) &&
		    c.nqps == h->nqps &&
		    !rx_auth_check(agent->auth, RX_AUTH_ACTIVE, &c, ha->data,
				   RX_AUTH_PROOF_LEN))
			return 0;
	}
	/* no key against a key, a wrong proof, or none to a challenge */
	agent->stats.peers_auth_refused++;
	wa.flags = RX_WELCOME_AUTH_REFUSED;
	return rx_welcome_encode_auth(agent->info.agent_id, &wa, w,
				      RX_WELCOME_AUTH_LEN);
}

/* Returns true when the id must be destroyed after the event is acked. */
static bool on_connect_request(struct rdmaxfer_agent *agent,
			       struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *cp = &ev->param.conn;
	struct rdma_conn_param ap = { 0 };
	uint8_t w[RX_WELCOME_AUTH_LEN];
	struct rdmaxfer_peer *peer;
	struct rx_hello_auth ha;
	struct rx_hello h;
	int ret;

	/* every field checked (hello.c): the sender is not known yet */
	if (rx_hello_decode_auth(cp->private_data, cp->private_data_len, &h,
				 &ha)) {
		agent->stats.hellos_bad++;
		goto reject;
	}
	if (agent->fatal)
		goto reject;
	/* before any peer, QP or half-open slot is spent on it */
	ret = auth_request(agent, &h, &ha, w);
	if (ret > 0) {
		rdma_reject(ev->id, w, (uint8_t)ret);
		return true;
	}
	peer = find_accepting(agent, &h);
	if (!peer) {
		/* a token we do not know: a new peer, if there is room */
		if (half_open(agent) >= agent->attr.max_half_open) {
			agent->stats.half_open_refused++;
			goto reject;
		}
		peer = rx_peer_new(agent, h.nqps);
		if (!peer)
			goto reject;
		peer->initiator = false;
		peer->remote_id = h.agent_id;
		peer->token = h.token;
		/* the whole handshake must be done by then */
		peer->deadline_ns = rx_deadline(agent->attr.cm_timeout_ms);
		rx_set_deadline(agent, peer->deadline_ns);
	}
	/* the same token with another QP count, or a QP again */
	if (peer->nqps != h.nqps || peer->qps[h.qp_index].id) {
		agent->stats.hellos_bad++;
		goto reject_peer;
	}
	ret = rx_qp_install(peer, h.qp_index, ev->id);
	if (ret)
		goto reject_peer;
	rx_welcome_encode(agent->info.agent_id, w, RX_WELCOME_LEN);
	ap.private_data = w;
	ap.private_data_len = RX_WELCOME_LEN;
	ap.responder_resources = cp->initiator_depth < agent->rd_atom ?
				 cp->initiator_depth : agent->rd_atom;
	ap.initiator_depth = cp->responder_resources < agent->rd_atom ?
			     cp->responder_resources : agent->rd_atom;
	ap.rnr_retry_count = 7;
	if (rdma_accept(ev->id, &ap)) {
		rx_qp_uninstall(&peer->qps[h.qp_index]);
		peer->qps[h.qp_index].id = NULL;
		forget_if_empty(peer);
		return true;
	}
	return false;

reject_peer:
	forget_if_empty(peer);
reject:
	/* a version mismatch is refused with our own hello so the connecting
	 * side can tell -EPROTO from -ECONNREFUSED */
	rx_welcome_encode(agent->info.agent_id, w, RX_WELCOME_LEN);
	rdma_reject(ev->id, w, RX_WELCOME_LEN);
	return true;
}

/* Lock held: one event of the agent's CM channel (acked here). */
int rx_cm_event_locked(struct rdmaxfer_agent *agent, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *destroy = NULL;
	struct rx_qp *q = NULL;

	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST && ev->id &&
	    ev->id != agent->listen_id)
		q = ev->id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (on_connect_request(agent, ev))
			destroy = ev->id;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (q) {
			q->cm_est = true;
			rx_qp_established(q);
			if (q->dreq_deferred) {
				q->dreq_deferred = false;
				if (!agent->port_down)
					rdma_disconnect(q->id);
			}
		}
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (q) {
			q->disconnecting = true;
			q->dreq_deferred = false;
			rx_peer_fail(q->peer, -ECONNRESET);
			rx_peer_cm_done(q);
		}
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		if (q)
			rx_peer_fail(q->peer, -ECONNREFUSED);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* the device is going: nothing will complete any more */
		agent->fatal = -ENODEV;
		rx_fail_all(agent, -ENODEV, true);
		break;
	default:
		break;
	}
	rdma_ack_cm_event(ev);
	if (destroy)
		rdma_destroy_id(destroy);
	return 0;
}

static int resolve(const char *host, uint16_t port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { 0 }, *res;
	char serv[8];
	int ret;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(serv, sizeof(serv), "%u", port);
	ret = getaddrinfo(host, serv, &hints, &res);
	if (ret)
		return ret == EAI_MEMORY ? -ENOMEM : -EHOSTUNREACH;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

RX_EXPORT
int rdmaxfer_listen(struct rdmaxfer_agent *agent, const char *host,
		    uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct rdma_cm_id *id;
	const uint8_t *gid;
	int ret;

	if (!agent)
		return -EINVAL;
	if (host) {
		ret = resolve(host, port, &ss);
		if (ret)
			return ret == -EHOSTUNREACH ? -EADDRNOTAVAIL : ret;
	} else {
		gid = agent->info.gid;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		/* the RoCE v2 IPv4 GID is the device's IPv4 address */
		if (!memcmp(gid, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
			memcpy(&sin->sin_addr, gid + 12, 4);
		else
			sin->sin_addr.s_addr = htonl(INADDR_ANY);
	}
	pthread_mutex_lock(&agent->lock);
	if (agent->listen_id) {
		ret = -EALREADY;
		goto unlock;
	}
	if (rdma_create_id(agent->cm_ch, &id, NULL, RDMA_PS_TCP)) {
		ret = -errno;
		goto unlock;
	}
	if (rdma_bind_addr(id, (struct sockaddr *)&ss)) {
		ret = -errno;
		goto destroy_id;
	}
	if (id->verbs && id->verbs != agent->ctx) {
		ret = -EADDRNOTAVAIL;	/* the address is on another device */
		goto destroy_id;
	}
	if (rdma_listen(id, 64)) {
		ret = -errno;
		goto destroy_id;
	}
	agent->listen_id = id;
	agent->listen_port = ntohs(rdma_get_src_port(id));
	agent->listen_family = ss.ss_family;
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr,
			  agent->listen_host, sizeof(agent->listen_host));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr,
			  agent->listen_host, sizeof(agent->listen_host));
	pthread_mutex_unlock(&agent->lock);
	return 0;

destroy_id:
	rdma_destroy_id(id);
unlock:
	pthread_mutex_unlock(&agent->lock);
	return ret;
}

RX_EXPORT
int rdmaxfer_listen_port(struct rdmaxfer_agent *agent, uint16_t *portp)
{
	if (!agent || !portp)
		return -EINVAL;
	if (!agent->listen_id)
		return -ENOTCONN;
	*portp = agent->listen_port;
	return 0;
}

RX_EXPORT
int rdmaxfer_accept(struct rdmaxfer_agent *agent, int timeout_ms,
		    struct rdmaxfer_peer **peerp)
{
	int64_t deadline = rx_deadline(timeout_ms);
	int ret;

	if (!agent || !peerp)
		return -EINVAL;
	pthread_mutex_lock(&agent->lock);
	if (!agent->listen_id) {
		ret = -ENOTCONN;
		goto unlock;
	}
	for (;;) {
		if (rx_self_progress(agent))
			rx_progress_locked(agent);
		if (agent->fatal) {
			ret = agent->fatal;
			break;
		}
		if (!rx_list_empty(&agent->accept_q)) {
			struct rdmaxfer_peer *peer =
				rx_container_of(agent->accept_q.next,
						struct rdmaxfer_peer,
						accept_node);

			rx_list_del(&peer->accept_node);
			peer->handed_out = true;
			*peerp = peer;
			ret = 0;
			break;
		}
		ret = rx_block(agent, deadline);
		if (ret)
			break;
	}
unlock:
	pthread_mutex_unlock(&agent->lock);
	rx_deliver_notifs(agent);
	return ret;
}

/* Wait for one event on a private channel, progressing the agent meanwhile
 * (it may be connecting to itself). */
static int wait_event(struct rdmaxfer_agent *agent,
		      struct rdma_event_channel *ch,
		      enum rdma_cm_event_type want, int64_t deadline,
		      struct rx_welcome *w, struct rx_welcome_auth *wa)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rx_welcome_auth rwa;
	struct rx_welcome rej;
	int ret;

	for (;;) {
		int64_t left = deadline - rx_now_ns();

		if (left <= 0)
			return -ETIMEDOUT;
		if (rx_self_progress(agent))
			rdmaxfer_progress(agent);
		ret = poll(&pfd, 1, left > 10000000 ? 10 : 1);
		if (ret > 0)
			break;
	}
	if (rdma_get_cm_event(ch, &ev))
		return -errno;
	if (wa)
		memset(wa, 0, sizeof(*wa));
	if (ev->event == want) {
		ret = 0;
		/* not a welcome of our version, or one with flags (they
		 * belong in a REJ): -EPROTO */
		if (w && (rx_welcome_decode_auth(ev->param.conn.private_data,
						 ev->param.conn.private_data_len,
						 w, &rwa) || rwa.flags))
			ret = -EPROTO;
	} else {
		switch (ev->event) {
		case RDMA_CM_EVENT_ADDR_ERROR:
		case RDMA_CM_EVENT_ROUTE_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
			ret = -EHOSTUNREACH;
			break;
		case RDMA_CM_EVENT_REJECTED:
			/* refused with a welcome of another version, or by
			 * authentication; a challenge is the caller's */
			ret = rx_welcome_decode_auth(ev->param.conn.private_data,
						     ev->param.conn.private_data_len,
						     &rej, &rwa);
			if (ret == -EPROTO)
				break;
			ret = -ECONNREFUSED;
			if (!w || !wa)
				break;
			*w = rej;
			*wa = rwa;
			break;
		default:
			ret = -ECONNREFUSED;
			break;
		}
	}
	rdma_ack_cm_event(ev);
	return ret;
}

/* A cm id on ch with its address and route to dst resolved, on the
 * agent's device: 0 and *idp, or -errno with no id left. */
static int connect_route(struct rdmaxfer_agent *agent,
			 struct rdma_event_channel *ch,
			 struct sockaddr_storage *dst, int timeout_ms,
			 int64_t deadline, struct rdma_cm_id **idp)
{
	struct rdma_cm_id *id;
	int ret;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return -errno;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)dst,
			      timeout_ms)) {
		ret = -errno;
		goto destroy_id;
	}
	ret = wait_event(agent, ch, RDMA_CM_EVENT_ADDR_RESOLVED,
			 deadline, NULL, NULL);
	if (ret)
		goto destroy_id;
	if (id->verbs != agent->ctx) {
		ret = -ENETUNREACH;	/* routed through another device */
		goto destroy_id;
	}
	if (rdma_resolve_route(id, timeout_ms)) {
		ret = -errno;
		goto destroy_id;
	}
	ret = wait_event(agent, ch, RDMA_CM_EVENT_ROUTE_RESOLVED,
			 deadline, NULL, NULL);
	if (ret)
		goto destroy_id;
	*idp = id;
	return 0;

destroy_id:
	rdma_destroy_id(id);
	return ret;
}

/* The QP of slot i gone, its id left to the caller (lock not held). */
static void qp_drop(struct rdmaxfer_peer *peer, unsigned int i)
{
	pthread_mutex_lock(&peer->agent->lock);
	rx_qp_uninstall(&peer->qps[i]);
	peer->qps[i].id = NULL;
	pthread_mutex_unlock(&peer->agent->lock);
}

/* The connect parameters of QP i, its hello (with ha) in hb: 0 or
 * -EINVAL. */
static int hello_param(struct rdmaxfer_peer *peer, unsigned int i,
		       const struct rx_hello_auth *ha, uint8_t *hb,
		       struct rdma_conn_param *cp)
{
	struct rdmaxfer_agent *agent = peer->agent;
	struct rx_hello h = { 0 };
	int ret;

	h.qp_index = (uint16_t)i;
	h.nqps = (uint16_t)peer->nqps;
	h.agent_id = agent->info.agent_id;
	h.token = peer->token;
	ret = rx_hello_encode_auth(&h, ha, hb, RX_HELLO_AUTH_LEN);
	if (ret < 0)
		return ret;
	memset(cp, 0, sizeof(*cp));
	cp->private_data = hb;
	cp->private_data_len = (uint8_t)ret;
	cp->responder_resources = agent->rd_atom;
	cp->initiator_depth = agent->rd_atom;
	/* the REQ's retry count is both sides' (IB CM): 6, not 7,
	 * which rxe takes as "retry forever" (rxe_comp.c), so a
	 * request to a responder that went silent, a peer that
	 * vanished without a DREQ or a NAK that was lost, would never
	 * complete.  With 6 it fails with IBV_WC_RETRY_EXC_ERR
	 * (-ETIMEDOUT) after 7 local ACK timeouts, on every device.
	 * RNR retries stay infinite: a receiver that is alive but
	 * slow is waited for (rdmaxfer_notif(3)). */
	cp->retry_count = RX_RETRY_COUNT;
	cp->rnr_retry_count = 7;
	return 0;
}

/*
 * One connect of QP i on the resolved id with the hello's authentication
 * part ha: 0 when ESTABLISHED (the QP installed, its welcome in *w), or
 * -errno with the QP gone (the id is the caller's); a REJ's welcome is
 * in *w and *wa.  Without with_qp it connects an id that has no QP, for
 * a request that is meant to be rejected (the challenge round, a proof
 * we know is refused): whatever the answer, no QP of ours reaches RTS,
 * since librdmacm reports the REP of a QP-less id as CONNECT_RESPONSE
 * (-ECONNREFUSED here) and moves no QP, and never returns 0.
 */
static int hello_round(struct rdmaxfer_peer *peer, unsigned int i,
		       struct rdma_cm_id *id, struct rdma_event_channel *ch,
		       int64_t deadline, const struct rx_hello_auth *ha,
		       bool with_qp, struct rx_welcome *w,
		       struct rx_welcome_auth *wa)
{
	struct rdmaxfer_agent *agent = peer->agent;
	struct rdma_conn_param cp = { 0 };
	uint8_t hb[RX_HELLO_AUTH_LEN];
	int ret;

	memset(w, 0, sizeof(*w));
	memset(wa, 0, sizeof(*wa));
	if (with_qp) {
		pthread_mutex_lock(&agent->lock);
		ret = rx_qp_install(peer, i, id);
		pthread_mutex_unlock(&agent->lock);
		if (ret)
			return ret;
	}
	ret = hello_param(peer, i, ha, hb, &cp);
	if (ret)
		goto destroy_qp;
	/* a QP number that is no QP of ours */
	if (!with_qp)
		cp.qp_num = 0xffffff;
	if (rdma_connect(id, &cp)) {
		ret = -errno;
		goto destroy_qp;
	}
	ret = wait_event(agent, ch, RDMA_CM_EVENT_ESTABLISHED,
			 deadline, w, wa);
	if (!ret && with_qp)
		return 0;
	if (!ret)
		ret = -ECONNREFUSED;

destroy_qp:
	if (with_qp)
		qp_drop(peer, i);
	return ret;
}

/*
 * The first round of an authenticated connect (see the top of this
 * file): our nonce out, the accepting side's challenge back in a REJ.
 * 0 with the proof to send in *ha and whether the accepting side's own
 * proof failed in *bad (ours is sent all the same, so that side counts
 * the refusal too), or -errno with the id gone.
 */
static int auth_round(struct rdmaxfer_peer *peer, unsigned int i,
		      struct rdma_cm_id *id, struct rdma_event_channel *ch,
		      int64_t deadline, struct rx_auth_ctx *c,
		      struct rx_hello_auth *ha, bool *bad)
{
	struct rdmaxfer_agent *agent = peer->agent;
	uint8_t mac[RX_AUTH_MAC_LEN];
	struct rx_welcome_auth wa;
	struct rx_welcome w;
	int ret;

	memset(c, 0, sizeof(*c));
	ha->flags = RX_HELLO_AUTH;
	ret = rx_auth_nonce(ha->data);
	if (!ret)
		ret = hello_round(peer, i, id, ch, deadline, ha, false, &w,
				  &wa);
	if (ret == -ECONNREFUSED && (wa.flags & RX_WELCOME_CHALLENGE)) {
		ret = 0;
	} else if (ret == -ECONNREFUSED &&
		   (wa.flags & RX_WELCOME_AUTH_REFUSED)) {
		ret = -EKEYREJECTED;
	}
	rdma_destroy_id(id);
	if (ret)
		return ret;
	memcpy(c->nonce_a, ha->data, RX_AUTH_NONCE_LEN);
	memcpy(c->nonce_p, wa.nonce, RX_AUTH_NONCE_LEN);
	c->id_a = agent->info.agent_id;
	c->id_p = w.agent_id;
	c->token = peer->token;
	c->qp_index = (uint16_t)i;
	c->nqps = (uint16_t)peer->nqps;
	*bad = rx_auth_check(agent->auth, RX_AUTH_PASSIVE, c, wa.mac,
			     RX_AUTH_MAC_LEN) != 0;
	ret = rx_auth_mac(agent->auth, RX_AUTH_ACTIVE, c, mac);
	if (ret)
		return ret;
	ha->flags = RX_HELLO_PROOF;
	memcpy(ha->data, mac, RX_AUTH_PROOF_LEN);
	return 0;
}

/*
 * QP i of the peer to dst: its hello (after the challenge round where
 * the agent has a key), the connect, the welcome of the agent every QP
 * must reach (*id_seen; see connect_qps()), and the id moved to the
 * agent's channel.  0, or -errno with the QP and the id gone.
 */
static int connect_one(struct rdmaxfer_peer *peer, unsigned int i,
		       struct rdma_event_channel *ch,
		       struct sockaddr_storage *dst, int timeout_ms,
		       int64_t deadline, uint64_t expect_id,
		       uint64_t *id_seen)
{
	struct rdmaxfer_agent *agent = peer->agent;
	struct rx_hello_auth ha = { 0 };
	struct rx_welcome_auth wa;
	struct rx_auth_ctx c = { 0 };
	struct rdma_cm_id *id;
	struct rx_welcome w;
	bool bad = false;
	int ret;

	ret = connect_route(agent, ch, dst, timeout_ms, deadline, &id);
	if (ret)
		return ret;
	if (agent->auth) {
		ret = auth_round(peer, i, id, ch, deadline, &c, &ha, &bad);
		if (!ret)
			ret = connect_route(agent, ch, dst, timeout_ms,
					    deadline, &id);
		/* sent all the same, so that side counts the refusal too */
		if (!ret && bad) {
			(void)hello_round(peer, i, id, ch, deadline, &ha, false,
					  &w, &wa);
			rdma_destroy_id(id);
			ret = -EKEYREJECTED;
		}
		if (ret)
			goto refused;
	}
	ret = hello_round(peer, i, id, ch, deadline, &ha, true, &w, &wa);
	if (ret == -ECONNREFUSED && (wa.flags & RX_WELCOME_AUTH_REFUSED))
		ret = -EKEYREJECTED;
	/* the answer must come from the agent that proved itself */
	if (!ret && agent->auth && w.agent_id != c.id_p) {
		ret = -EKEYREJECTED;
		goto destroy_qp;
	}
	if (ret)
		goto destroy_id;
	/* someone else listens there now (a restarted target): the
	 * old rkeys must not be fired at it */
	if ((expect_id || i) && w.agent_id != *id_seen) {
		ret = -ESTALE;
		goto destroy_qp;
	}
	*id_seen = w.agent_id;
	pthread_mutex_lock(&agent->lock);
	peer->remote_id = w.agent_id;
	ret = rdma_migrate_id(id, agent->cm_ch) ? -errno : 0;
	peer->qps[i].cm_est = true;
	if (!ret)
		rx_qp_established(&peer->qps[i]);
	pthread_mutex_unlock(&agent->lock);
	if (ret)
		goto destroy_qp;
	return 0;

destroy_qp:
	qp_drop(peer, i);
destroy_id:
	rdma_destroy_id(id);
refused:
	if (ret == -EKEYREJECTED) {
		pthread_mutex_lock(&agent->lock);
		agent->stats.peers_auth_refused++;
		pthread_mutex_unlock(&agent->lock);
	}
	return ret;
}

/*
 * Establish every QP of an initiator peer.  Called without the lock.
 * Every QP must reach one agent: expect_id's (a reconnect: the agent the
 * peer's prepared requests, rkeys and exports belong to), or where
 * expect_id is 0 the first QP's; a welcome from another is -ESTALE.
 */
static int connect_qps(struct rdmaxfer_peer *peer, int timeout_ms,
		       uint64_t expect_id)
{
	struct rdmaxfer_agent *agent = peer->agent;
	int64_t deadline = rx_deadline(timeout_ms);
	struct rdma_event_channel *ch;
	struct sockaddr_storage dst;
	uint64_t id_seen = expect_id;
	unsigned int i;
	int ret;

	ret = resolve(peer->host, peer->port, &dst);
	if (ret)
		return ret;
	if (getrandom(&peer->token, sizeof(peer->token), 0) !=
	    sizeof(peer->token))
		peer->token = (uint64_t)rx_now_ns();
	ch = rdma_create_event_channel();
	if (!ch)
		return -errno;

	for (i = 0; i < peer->nqps; i++) {
		ret = connect_one(peer, i, ch, &dst, timeout_ms, deadline,
				  expect_id, &id_seen);
		if (ret)
			goto fail;
	}
	rdma_destroy_event_channel(ch);
	return 0;

fail:
	pthread_mutex_lock(&agent->lock);
	/* the QPs already connected live on the agent channel now */
	peer->state = RDMAXFER_PEER_ERROR;
	peer->error = ret;
	while (i--) {
		if (!peer->qps[i].disconnecting)
			rdma_disconnect(peer->qps[i].id);
		peer->qps[i].disconnecting = true;
		rx_qp_destroy(&peer->qps[i]);
	}
	pthread_mutex_unlock(&agent->lock);
	rdma_destroy_event_channel(ch);
	return ret;
}

RX_EXPORT
int rdmaxfer_connect(struct rdmaxfer_agent *agent, const char *host,
		     uint16_t port, int timeout_ms,
		     struct rdmaxfer_peer **peerp)
{
	struct rdmaxfer_peer *peer;
	int ret;

	if (!agent || !host || !peerp || !port)
		return -EINVAL;
	if (timeout_ms <= 0)
		timeout_ms = agent->attr.cm_timeout_ms;
	pthread_mutex_lock(&agent->lock);
	if (agent->fatal) {
		ret = agent->fatal;
		pthread_mutex_unlock(&agent->lock);
		return ret;
	}
	peer = rx_peer_new(agent, agent->attr.qps_per_peer);
	if (peer) {
		peer->initiator = true;
		peer->handed_out = true;
		snprintf(peer->host, sizeof(peer->host), "%s", host);
		peer->port = port;
	}
	pthread_mutex_unlock(&agent->lock);
	if (!peer)
		return -ENOMEM;
	ret = connect_qps(peer, timeout_ms, 0);
	pthread_mutex_lock(&agent->lock);
	/* a port or device event may have failed it while we connected */
	if (!ret && peer->state != RDMAXFER_PEER_CONNECTED)
		ret = peer->error ? peer->error : -ECONNRESET;
	if (ret) {
		rx_peer_free(peer);
		pthread_mutex_unlock(&agent->lock);
		return ret;
	}
	pthread_mutex_unlock(&agent->lock);
	*peerp = peer;
	return 0;
}

RX_EXPORT
int rdmaxfer_connect_md(struct rdmaxfer_agent *agent, const void *blob,
			size_t len, int timeout_ms,
			struct rdmaxfer_peer **peerp)
{
	struct rdmaxfer_md *md;
	int ret;

	if (!agent || !peerp)
		return -EINVAL;
	ret = rdmaxfer_md_parse(blob, len, &md);
	if (ret)
		return ret;
	if (!md->listening)
		ret = -EDESTADDRREQ;
	else
		ret = rdmaxfer_connect(agent, md->host, md->listen_port,
				       timeout_ms, peerp);
	if (!ret && (*peerp)->remote_id != md->agent_id) {
		/* someone else listens there now */
		rdmaxfer_peer_destroy(*peerp);
		ret = -ESTALE;
	}
	/* what the blob says the peer exported bounds what we target */
	if (!ret && md->ndescs) {
		ret = rx_set_exports(*peerp, md->descs, md->ndescs);
		if (ret)
			rdmaxfer_peer_destroy(*peerp);
	}
	rdmaxfer_md_free(md);
	return ret;
}

/*
 * Every request of the peer is terminal when this returns (whether it
 * reconnected or not): those in flight completed or were flushed within
 * RX_FLUSH_TIMEOUT_MS, or are failed with -ECANCELED then; those queued
 * or held by RDMAXFER_POST_MORE fail at once.  Their completions from the
 * old QPs can no longer reach them, so each can be reposted or freed.
 */
RX_EXPORT
int rdmaxfer_peer_reconnect(struct rdmaxfer_peer *peer, int timeout_ms)
{
	struct rdmaxfer_agent *agent;
	int64_t deadline = rx_deadline(RX_FLUSH_TIMEOUT_MS);
	unsigned int i;
	int ret;

	if (!peer)
		return -EINVAL;
	agent = peer->agent;
	if (!peer->initiator)
		return -EOPNOTSUPP;
	if (timeout_ms <= 0)
		timeout_ms = agent->attr.cm_timeout_ms;
	pthread_mutex_lock(&agent->lock);
	if (agent->fatal) {
		ret = agent->fatal;
		pthread_mutex_unlock(&agent->lock);
		return ret;
	}
	if (peer->state == RDMAXFER_PEER_CONNECTED) {
		pthread_mutex_unlock(&agent->lock);
		return 0;
	}
	if (peer->state == RDMAXFER_PEER_CONNECTING) {
		pthread_mutex_unlock(&agent->lock);
		return -EINPROGRESS;
	}
	/* let the old QPs flush so every request of the peer completes */
	rx_peer_fail(peer, peer->error ? peer->error : -ECONNRESET);
	while (peer->nreqs_active) {
		if (rx_self_progress(agent))
			rx_progress_locked(agent);
		if (!peer->nreqs_active || rx_block(agent, deadline))
			break;
	}
	/* what did not flush in time never will: its completions would
	 * come from QPs about to be destroyed */
	if (peer->nreqs_active)
		rx_peer_abort(peer, -ECANCELED);
	for (i = 0; i < peer->nqps; i++)
		rx_qp_destroy(&peer->qps[i]);
	peer->nestablished = 0;
	peer->state = RDMAXFER_PEER_CONNECTING;
	peer->error = 0;
	peer->deadline_ns = 0;
	peer->qps_err_deferred = false;
	pthread_mutex_unlock(&agent->lock);

	/* the agent it reached before, or -ESTALE (the peer then stays in
	 * state ERROR with that error, its old identity kept) */
	ret = connect_qps(peer, timeout_ms, peer->remote_id);
	pthread_mutex_lock(&agent->lock);
	if (!ret && peer->state != RDMAXFER_PEER_CONNECTED)
		ret = peer->error ? peer->error : -ECONNRESET;
	pthread_mutex_unlock(&agent->lock);
	return ret;
}
