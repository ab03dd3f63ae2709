// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * async.c - the device's async events (QP and CQ errors, port down, device
 * fatal), shared by the agents of one device: each event fails the peers
 * it concerns, so nothing waits for a completion that cannot come.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/*
 * Async events.  They are read from the device context's async fd, which
 * belongs to librdmacm's context of the device and so is shared by every
 * agent of the process on that device: whichever agent reads an event
 * hands a copy to each agent it concerns (QP events to the agent whose
 * QP it is, named by the QP's qp_context, set at creation; CQ and SRQ
 * events to their owner; port events to the agents of that port), wakes
 * them and acks it at once (ibv_destroy_qp() waits for the acks of its
 * events, so qp_context may be read before the ack).  A QP event goes to
 * its owner alone: copied to every agent, the events of a busy agent
 * would fill the rings of idle ones, and an overflow must then be
 * recovered by asking the device (see rx_async_recover()).
 * The global lock nests inside agent locks and never the other way.
 */
struct rx_async_dev {
	struct ibv_context *ctx;
	struct rx_list agents;
	struct rx_async_dev *next;
};

static pthread_mutex_t async_lock = PTHREAD_MUTEX_INITIALIZER;

static struct rx_async_dev *async_devs;

static struct rx_async_dev *async_dev_find(struct ibv_context *ctx)
{
	struct rx_async_dev *d;

	for (d = async_devs; d; d = d->next)
		if (d->ctx == ctx)
			return d;
	return NULL;
}

int rx_async_register(struct rdmaxfer_agent *agent)
{
	struct rx_async_dev *d;
	int ret = 0;

	pthread_mutex_lock(&async_lock);
	d = async_dev_find(agent->ctx);
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d) {
			ret = -ENOMEM;
			goto unlock;
		}
		ret = rx_set_nonblock(agent->ctx->async_fd);
		if (ret) {
			free(d);
			goto unlock;
		}
		d->ctx = agent->ctx;
		rx_list_init(&d->agents);
		d->next = async_devs;
		async_devs = d;
	}
	rx_list_add_tail(&d->agents, &agent->async_node);
unlock:
	pthread_mutex_unlock(&async_lock);
	return ret;
}

void rx_async_unregister(struct rdmaxfer_agent *agent)
{
	pthread_mutex_lock(&async_lock);
	rx_list_del(&agent->async_node);
	/* the rx_async_dev stays: the context outlives agents (librdmacm
	 * keeps it open), and another agent may come */
	pthread_mutex_unlock(&async_lock);
}

/* Global lock held: queue ev for agent a and wake it if it is not self. */
static void async_push(struct rdmaxfer_agent *a, struct rdmaxfer_agent *self,
		       const struct rx_async_ev *ev)
{
	uint64_t one = 1;

	if (a->async_count == RX_ASYNC_RING) {
		a->async_lost = true;
	} else {
		a->async_ring[(a->async_head + a->async_count) %
			      RX_ASYNC_RING] = *ev;
		a->async_count++;
	}
	if (a != self && write(a->wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: a wakeup is pending anyway */
	}
}

/* Global lock held: read every pending event of the device, dispatch. */
static void async_read(struct rdmaxfer_agent *self, struct rx_async_dev *d)
{
	struct ibv_async_event ae;
	struct rx_list *l;

	while (!ibv_get_async_event(d->ctx, &ae)) {
		struct rx_async_ev ev = { .type = ae.event_type };

		switch (ae.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_PATH_MIG_ERR:
		case IBV_EVENT_COMM_EST:
			ev.qpn = ae.element.qp->qp_num;
			break;
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_PORT_ACTIVE:
			ev.port = (uint8_t)ae.element.port_num;
			break;
		default:
			break;
		}
		for (l = d->agents.next; l != &d->agents; l = l->next) {
			struct rdmaxfer_agent *a =
				rx_container_of(l, struct rdmaxfer_agent,
						async_node);

			switch (ae.event_type) {
			case IBV_EVENT_CQ_ERR:
				if (ae.element.cq == a->cq)
					async_push(a, self, &ev);
				break;
			case IBV_EVENT_SRQ_ERR:
				if (ae.element.srq == a->srq)
					async_push(a, self, &ev);
				break;
			case IBV_EVENT_PORT_ERR:
			case IBV_EVENT_PORT_ACTIVE:
				if (ev.port == a->info.port)
					async_push(a, self, &ev);
				break;
			case IBV_EVENT_QP_FATAL:
			case IBV_EVENT_QP_REQ_ERR:
			case IBV_EVENT_QP_ACCESS_ERR:
			case IBV_EVENT_PATH_MIG_ERR:
			case IBV_EVENT_COMM_EST:
				if (ae.element.qp->qp_context == a)
					async_push(a, self, &ev);
				break;
			case IBV_EVENT_DEVICE_FATAL:
				async_push(a, self, &ev);
				break;
			default:
				break;
			}
		}
		ibv_ack_async_event(&ae);
	}
}

/* Lock held: one async event of this agent. */
static void async_handle(struct rdmaxfer_agent *agent,
			 const struct rx_async_ev *ev)
{
	struct rdmaxfer_peer *peer;
	unsigned int qi;

	switch (ev->type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_PATH_MIG_ERR:
		peer = rx_peer_by_qpn(agent, ev->qpn, &qi);
		if (peer)
			rx_peer_fail(peer, -EIO);
		break;
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		/* our QP responded with a NAK: the remote requester learns
		 * the precise error from it (see rx_peer_fail_quiet()) */
		peer = rx_peer_by_qpn(agent, ev->qpn, &qi);
		if (peer)
			agent->stats.peers_remote_errors++;
		if (peer)
			rx_peer_fail_quiet(peer,
					   ev->type == IBV_EVENT_QP_ACCESS_ERR ?
					   -EACCES : -EREMOTEIO);
		break;
	case IBV_EVENT_COMM_EST:
		/* data before the RTU on a passive QP: tell the CM */
		peer = rx_peer_by_qpn(agent, ev->qpn, &qi);
		if (peer)
			rx_qp_comm_est(&peer->qps[qi]);
		break;
	case IBV_EVENT_PORT_ERR:
		/* the link is down: every connection of the port is lost;
		 * failing them now (flushing their QPs) beats waiting for
		 * each transport retry to run out */
		agent->port_down = true;
		rx_fail_all(agent, -ENETDOWN, false);
		break;
	case IBV_EVENT_PORT_ACTIVE:
		agent->port_down = false;
		break;
	case IBV_EVENT_CQ_ERR:
	case IBV_EVENT_SRQ_ERR:
		/* completions are lost: nothing can finish by itself */
		agent->fatal = -EIO;
		rx_fail_all(agent, -EIO, true);
		break;
	case IBV_EVENT_DEVICE_FATAL:
		agent->fatal = -ENODEV;
		rx_fail_all(agent, -ENODEV, true);
		break;
	default:
		break;
	}
}

/*
 * Lock held: events of this agent were lost (its ring overflowed while it
 * did not progress).  Ask the device what they would have said: a peer
 * with a QP in the error state fails, and a port that is not ACTIVE is
 * down.  Nothing else is failed: an overflow says the agent was slow, not
 * that its peers broke.
 */
static void rx_async_recover(struct rdmaxfer_agent *agent)
{
	struct ibv_qp_init_attr init;
	struct ibv_port_attr pa;
	struct ibv_qp_attr qa;
	struct rx_list *l, *next;
	unsigned int i;

	if (!ibv_query_port(agent->ctx, agent->info.port, &pa) &&
	    pa.state != IBV_PORT_ACTIVE) {
		agent->port_down = true;
		rx_fail_all(agent, -ENETDOWN, false);
		return;
	}
	for (l = agent->peers.next; l != &agent->peers; l = next) {
		struct rdmaxfer_peer *peer =
			rx_container_of(l, struct rdmaxfer_peer, node);

		next = l->next;
		if (peer->state != RDMAXFER_PEER_CONNECTED &&
		    peer->state != RDMAXFER_PEER_CONNECTING)
			continue;
		for (i = 0; i < peer->nqps; i++) {
			struct ibv_qp *qp = peer->qps[i].qp;

			if (qp && !ibv_query_qp(qp, &qa, IBV_QP_STATE, &init) &&
			    qa.qp_state == IBV_QPS_ERR) {
				rx_peer_fail(peer, -EIO);
				break;
			}
		}
	}
}

/* Lock held: read the device's async events and handle ours. */
void rx_async_poll_locked(struct rdmaxfer_agent *agent)
{
	struct rx_async_ev evs[RX_ASYNC_RING];
	unsigned int n = 0, i;
	struct rx_async_dev *d;
	bool lost;

	pthread_mutex_lock(&async_lock);
	d = async_dev_find(agent->ctx);
	if (d)
		async_read(agent, d);
	while (agent->async_count) {
		evs[n++] = agent->async_ring[agent->async_head];
		agent->async_head = (agent->async_head + 1) % RX_ASYNC_RING;
		agent->async_count--;
	}
	lost = agent->async_lost;
	agent->async_lost = false;
	pthread_mutex_unlock(&async_lock);
	if (lost)
		rx_async_recover(agent);
	for (i = 0; i < n; i++)
		async_handle(agent, &evs[i]);
}
