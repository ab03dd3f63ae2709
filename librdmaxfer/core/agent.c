// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * agent.c - agent life cycle and the progress engine.
 *
 * An agent binds one device port: it opens the device through librdmacm
 * (so the QPs rdma_cm creates share our PD), picks the RoCE v2 IPv4 GID,
 * and owns the CQ, its completion channel, the shared receive queue for
 * notifications and the registration cache.  Progress (polling the CQ and
 * reading CM events) runs either in the caller's test/wait/progress calls
 * or in one thread of the agent's own; both take the agent mutex.
 *
 * Nothing may hang: the CQ is sized (and grown) for every QP's send queue
 * plus the SRQ, so it cannot overflow; the device's async events (QP and
 * CQ errors, port down, device fatal) fail the peers they concern; and a
 * failed peer whose requests do not flush within RX_FLUSH_TIMEOUT_MS has
 * them failed without their completions (conn.c, rx_check_deadlines()).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "internal.h"

#define DEF_SQ_DEPTH		256
#define DEF_SRQ_DEPTH		256
#define DEF_CQ_DEPTH		4096
#define DEF_STRIPE		(64U * 1024)
#define DEF_CM_TIMEOUT_MS	5000
/* what a CQ grows by at least, so adding peers one by one does not
 * resize it every time */
#define CQ_GROW_MIN		256
/* a blocked waiter re-checks at least this often (another thread may have
 * consumed the channel event that concerned it) */
#define BLOCK_SLICE_MS		20

/* max_notifs and max_notifs_peer took the eight bytes of reserved[0]:
 * no other field of the attributes moved, nor their size */
_Static_assert(offsetof(struct rdmaxfer_agent_attr, max_notifs) % 8 == 0 &&
	       offsetof(struct rdmaxfer_agent_attr, reserved) ==
	       offsetof(struct rdmaxfer_agent_attr, max_notifs) + 8 &&
	       sizeof(struct rdmaxfer_agent_attr) ==
	       offsetof(struct rdmaxfer_agent_attr, reserved) + 16,
	       "rdmaxfer_agent_attr layout");

int64_t rx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t rx_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return INT64_MAX;
	return rx_now_ns() + (int64_t)timeout_ms * 1000000LL;
}

RX_EXPORT
void rdmaxfer_agent_attr_init(struct rdmaxfer_agent_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->gid_index = -1;
	attr->max_inline = 64;
}

/*
 * Does a registration without local write pin memory the process may not
 * read?  Linux 6.1's ib_umem_get() pins a read-only MR with FOLL_FORCE,
 * which takes a PROT_NONE page; later kernels refuse it.  Where it does,
 * cache_reg() checks such a range first, so a bad pointer as a WRITE's
 * source or in a READ-only export still fails with -EFAULT (and is not
 * sent, nor copied by the provider for an inline WRITE: SIGSEGV).
 */
static bool ro_pin_forced(struct rdmaxfer_agent *agent)
{
	long psz = sysconf(_SC_PAGESIZE);
	struct ibv_mr *mr;
	void *p;

	p = mmap(NULL, (size_t)psz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return true;		/* not known: check */
	mr = ibv_reg_mr(agent->pd, p, (size_t)psz, 0);
	if (mr)
		ibv_dereg_mr(mr);
	munmap(p, (size_t)psz);
	return mr != NULL;
}

/* libregcache callbacks: the access mask is IBV_ACCESS_* bits.  Called on
 * a miss only: a hit costs nothing of this. */
static int cache_reg(void *user, void *addr, size_t len, uint32_t access,
		     void **handle)
{
	struct rdmaxfer_agent *agent = user;
	struct ibv_mr *mr;

	if (agent->ro_pin_forced && !(access & IBV_ACCESS_LOCAL_WRITE) &&
	    !rx_range_accessible(addr, len, false))
		return -EFAULT;
	mr = ibv_reg_mr(agent->pd, addr, len, (int)access);
	if (!mr)
		return errno ? -errno : -ENOMEM;
	*handle = mr;
	return 0;
}

static int cache_dereg(void *user, void *handle)
{
	int ret = ibv_dereg_mr(handle);

	return ret > 0 ? -ret : ret;
}

static bool gid_is_ipv4(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0,
					    0, 0, 0xff, 0xff };

	return !memcmp(gid->raw, prefix, sizeof(prefix));
}

/*
 * The RoCE v2 IPv4 entry is what rdma_cm uses for an IPv4 address; fall
 * back to any RoCE v2 entry, then to index 0 (InfiniBand).
 */
static int pick_gid(struct rdmaxfer_agent *agent)
{
	int best_v2 = -1, i;

	for (i = 0; i < agent->port_attr.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(agent->ctx, agent->info.port, i, &e, 0))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (gid_is_ipv4((union ibv_gid *)&e.gid))
			return i;
		if (best_v2 < 0)
			best_v2 = i;
	}
	return best_v2 >= 0 ? best_v2 : 0;
}

static int open_device(struct rdmaxfer_agent *agent, const char *want)
{
	struct ibv_context **list;
	int n, i, ret = -ENODEV;

	list = rdma_get_devices(&n);
	if (!list)
		return -ENODEV;
	for (i = 0; i < n; i++) {
		struct ibv_context *ctx = list[i];
		struct ibv_device_attr da;
		uint8_t p, first, last;

		if (want && strcmp(ibv_get_device_name(ctx->device), want))
			continue;
		if (ibv_query_device(ctx, &da))
			continue;
		first = agent->attr.port ? agent->attr.port : 1;
		last = agent->attr.port ? agent->attr.port : da.phys_port_cnt;
		for (p = first; p <= last && p <= da.phys_port_cnt; p++) {
			struct ibv_port_attr pa;

			if (ibv_query_port(ctx, p, &pa) ||
			    pa.state != IBV_PORT_ACTIVE)
				continue;
			agent->ctx = ctx;
			agent->dev_attr = da;
			agent->port_attr = pa;
			agent->info.port = p;
			snprintf(agent->info.device, sizeof(agent->info.device),
				 "%s", ibv_get_device_name(ctx->device));
			ret = 0;
			goto out;
		}
	}
out:
	rdma_free_devices(list);
	return ret;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/*
 * Lock held.  Reserve CQ entries for a new QP's send queue, growing the CQ
 * when it would not hold them all.  -ENOSPC only when the device's
 * max_cqe cannot hold every QP's send queue plus the SRQ.
 */
int rx_cq_reserve(struct rdmaxfer_agent *agent, uint32_t entries)
{
	uint64_t need = (uint64_t)agent->cq_need + agent->cq_stale + entries;
	uint64_t max = (uint64_t)agent->dev_attr.max_cqe, size;
	int ret;

	if (need > agent->cq_size) {
		if (need > max)
			return -ENOSPC;
		size = (uint64_t)agent->cq_size * 2;
		if (size < need + CQ_GROW_MIN)
			size = need + CQ_GROW_MIN;
		if (size > max)
			size = max;
		ret = ibv_resize_cq(agent->cq, (int)size);
		if (ret && size != need)
			ret = ibv_resize_cq(agent->cq, (int)need);
		if (ret)
			return ret > 0 ? -ret : -ENOSPC;
		agent->cq_size = (uint32_t)agent->cq->cqe;
		if (agent->cq_size < need)
			return -ENOSPC;
		agent->info.cq_entries = agent->cq_size;
		/* re-arm on the next sleep: a resize may drop the arming */
		agent->cq_armed = false;
	}
	agent->cq_need += entries;
	return 0;
}

/* Lock held.  A QP's send queue is gone; its completions may still sit in
 * the CQ until it is next seen empty (rx_poll_cq_locked()). */
void rx_cq_release(struct rdmaxfer_agent *agent, uint32_t entries)
{
	agent->cq_need -= entries <= agent->cq_need ? entries : agent->cq_need;
	agent->cq_stale += entries;
}

/* Lock held: note a peer deadline (see rx_check_deadlines()). */
void rx_set_deadline(struct rdmaxfer_agent *agent, int64_t when)
{
	if (!agent->next_deadline_ns || when < agent->next_deadline_ns)
		agent->next_deadline_ns = when;
}

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

static int async_register(struct rdmaxfer_agent *agent)
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
		ret = set_nonblock(agent->ctx->async_fd);
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

static void async_unregister(struct rdmaxfer_agent *agent)
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
static void rx_async_poll_locked(struct rdmaxfer_agent *agent)
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

/*
 * The CQ, then the CM channel if cm and the async events if async (each
 * a system call even when nothing is pending), then the deadlines.  Lock
 * held; returns the work completions handled.
 */
static int progress_some_locked(struct rdmaxfer_agent *agent, bool cm,
				bool async)
{
	struct rdma_cm_event *ev;
	int total = rx_poll_cq_locked(agent);

	if (total < 0)
		return total;
	while (cm && !rdma_get_cm_event(agent->cm_ch, &ev))
		rx_cm_event_locked(agent, ev);
	if (async)
		rx_async_poll_locked(agent);
	if (agent->next_deadline_ns && rx_now_ns() >= agent->next_deadline_ns)
		rx_check_deadlines(agent);
	return total;
}

/*
 * Poll the CQ and the CM channel once.  Called with the lock held;
 * returns the number of work completions handled.
 */
int rx_progress_locked(struct rdmaxfer_agent *agent)
{
	return progress_some_locked(agent, true, true);
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
	     !rx_rings_pending(agent))) {
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
	/* the rings' callbacks, with the same one-deliverer rule */
	rx_rings_deliver(agent);
	agent->delivering = false;
	/* rdmaxfer_set_notif_cb() may wait for this callback to return */
	pthread_cond_broadcast(&agent->cond);
	pthread_mutex_unlock(&agent->lock);
	free(n);
}

static void drain_comp_channel(struct rdmaxfer_agent *agent)
{
	struct ibv_cq *cq;
	void *ctx;

	while (!ibv_get_cq_event(agent->comp_ch, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		agent->cq_armed = false;
	}
}

/*
 * Sleep until something may have progressed, or the deadline.  Called with
 * the lock held (and returns with it held).  Caller mode arms the CQ and
 * sleeps on the completion channel and the CM channel; thread mode waits
 * for the thread's next round, unless the caller is the thread (a
 * callback that waits: rx_self_progress()), which then sleeps as a caller
 * does, after telling other waiters what its own progress did.
 */
int rx_block(struct rdmaxfer_agent *agent, int64_t deadline_ns)
{
	int64_t now = rx_now_ns(), left_ms;
	struct pollfd pfd[4];
	uint64_t cnt;

	if (now >= deadline_ns)
		return -ETIMEDOUT;
	left_ms = (deadline_ns - now + 999999) / 1000000;
	if (left_ms > BLOCK_SLICE_MS)
		left_ms = BLOCK_SLICE_MS;

	if (!rx_self_progress(agent)) {
		struct timespec ts;
		uint64_t gen = agent->progress_gen;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += left_ms * 1000000LL;
		ts.tv_sec += ts.tv_nsec / 1000000000LL;
		ts.tv_nsec %= 1000000000LL;
		while (gen == agent->progress_gen)
			if (pthread_cond_timedwait(&agent->cond, &agent->lock,
						   &ts))
				break;
		return 0;
	}
	if (agent->thread_running) {
		agent->progress_gen++;
		pthread_cond_broadcast(&agent->cond);
	}

	if (!agent->cq_armed) {
		if (ibv_req_notify_cq(agent->cq, 0))
			return -EIO;
		agent->cq_armed = true;
		/* completions that raced with the arming are polled by the
		 * caller's next round: report progress possible (only the
		 * CQ can race with its arming; the CM and async channels
		 * are polled below and cost a system call each to read) */
		if (rx_poll_cq_locked(agent) > 0)
			return 0;
	}
	pfd[0].fd = agent->comp_ch->fd;
	pfd[0].events = POLLIN;
	pfd[1].fd = agent->cm_ch->fd;
	pfd[1].events = POLLIN;
	pfd[2].fd = agent->ctx->async_fd;
	pfd[2].events = POLLIN;
	pfd[3].fd = agent->wake_fd;
	pfd[3].events = POLLIN;
	pthread_mutex_unlock(&agent->lock);
	poll(pfd, 4, (int)left_ms);
	pthread_mutex_lock(&agent->lock);
	drain_comp_channel(agent);
	if (pfd[3].revents && read(agent->wake_fd, &cnt, sizeof(cnt)) < 0) {
		/* nothing to read: another waiter took it */
	}
	return 0;
}

static void *progress_thread(void *arg)
{
	struct rdmaxfer_agent *agent = arg;
	struct pollfd pfd[4];
	bool cm = true, async = true;
	uint64_t cnt;

	pfd[0].fd = agent->comp_ch->fd;
	pfd[0].events = POLLIN;
	pfd[1].fd = agent->cm_ch->fd;
	pfd[1].events = POLLIN;
	pfd[2].fd = agent->wake_fd;
	pfd[2].events = POLLIN;
	pfd[3].fd = agent->ctx->async_fd;
	pfd[3].events = POLLIN;
	pthread_mutex_lock(&agent->lock);
	while (!agent->stop) {
		/* the CM channel and the async events only when poll() saw
		 * them readable or the thread was woken (the first round:
		 * always): a stream of grains wakes the thread once per
		 * completion or so, and each empty read is a system call */
		progress_some_locked(agent, cm, async);
		if (!agent->cq_armed) {
			ibv_req_notify_cq(agent->cq, 0);
			agent->cq_armed = true;
			rx_poll_cq_locked(agent);
		}
		agent->progress_gen++;
		pthread_cond_broadcast(&agent->cond);
		pthread_mutex_unlock(&agent->lock);
		rx_deliver_notifs(agent);
		if (poll(pfd, 4, 100) < 0) {
			/* interrupted: a full round, no wake to clear */
			pfd[1].revents = POLLIN;
			pfd[2].revents = 0;
			pfd[3].revents = POLLIN;
		}
		if (pfd[2].revents &&
		    read(agent->wake_fd, &cnt, sizeof(cnt)) < 0) {
			/* spurious: nothing to clear */
		}
		/* a wake (another thread's request, or another agent that
		 * read this one's async events off the shared context) gets
		 * a full round */
		cm = pfd[1].revents || pfd[2].revents;
		async = pfd[3].revents || pfd[2].revents;
		pthread_mutex_lock(&agent->lock);
		drain_comp_channel(agent);
	}
	pthread_mutex_unlock(&agent->lock);
	return NULL;
}

/* Every receive buffer of the SRQ, posted at creation. */
static int post_all_recvs(struct rdmaxfer_agent *agent)
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

static int alloc_buffers(struct rdmaxfer_agent *agent)
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

static int check_attr(struct rdmaxfer_agent_attr *a)
{
	if (a->reserved[0] || a->reserved[1] || a->odp > RDMAXFER_ODP_OFF)
		return -EINVAL;
	/* a flag this library does not know is refused, not dropped: it
	 * may ask for a safety this library cannot give */
	if (a->flags & ~(RDMAXFER_AGENT_NO_ENV | RDMAXFER_AGENT_CACHE_RKEYS |
			 RDMAXFER_AGENT_SINGLE_THREAD))
		return -EINVAL;
	if (a->qps_per_peer > RX_MAX_QPS)
		return -EINVAL;
	if (a->progress != RDMAXFER_PROGRESS_CALLER &&
	    a->progress != RDMAXFER_PROGRESS_THREAD)
		return -EINVAL;
	/* a progress thread is a second thread in the agent */
	if ((a->flags & RDMAXFER_AGENT_SINGLE_THREAD) &&
	    a->progress == RDMAXFER_PROGRESS_THREAD)
		return -EINVAL;
	if (!a->sq_depth)
		a->sq_depth = DEF_SQ_DEPTH;
	if (!a->srq_depth)
		a->srq_depth = DEF_SRQ_DEPTH;
	if (!a->cq_depth)
		a->cq_depth = DEF_CQ_DEPTH;
	if (!a->qps_per_peer)
		a->qps_per_peer = 1;
	if (!a->signal_interval)
		a->signal_interval = a->sq_depth / 4 ? a->sq_depth / 4 : 1;
	if (a->signal_interval > a->sq_depth)
		a->signal_interval = a->sq_depth;
	if (!a->stripe_threshold)
		a->stripe_threshold = DEF_STRIPE;
	if (a->cm_timeout_ms <= 0)
		a->cm_timeout_ms = DEF_CM_TIMEOUT_MS;
	if (!a->name)
		a->name = "rdmaxfer";
	if (!a->max_half_open)
		a->max_half_open = RDMAXFER_DEF_MAX_HALF_OPEN;
	if (!a->max_notifs)
		a->max_notifs = RDMAXFER_DEF_MAX_NOTIFS;
	if (!a->max_notifs_peer)
		a->max_notifs_peer = a->max_notifs < RDMAXFER_DEF_MAX_NOTIFS_PEER ?
				     a->max_notifs : RDMAXFER_DEF_MAX_NOTIFS_PEER;
	/* one peer's share cannot be more than the whole */
	if (a->max_notifs_peer > a->max_notifs)
		return -EINVAL;
	return 0;
}

static void env_attr(struct rdmaxfer_agent_attr *a)
{
	const char *s;

	if (a->flags & RDMAXFER_AGENT_NO_ENV)
		return;
	s = getenv("RDMAXFER_DEVICE");
	if (!a->device && s && *s)
		a->device = s;
	s = getenv("RDMAXFER_GID_INDEX");
	if (a->gid_index < 0 && s && *s)
		a->gid_index = atoi(s);
	s = getenv("RDMAXFER_QPS");
	if (!a->qps_per_peer && s && *s)
		a->qps_per_peer = (uint32_t)atoi(s);
	/* only ever turns the opt-in on: the safe default needs no variable */
	s = getenv("RDMAXFER_CACHE_RKEYS");
	if (s && !strcmp(s, "1"))
		a->flags |= RDMAXFER_AGENT_CACHE_RKEYS;
}

RX_EXPORT
int rdmaxfer_agent_create(const struct rdmaxfer_agent_attr *attr,
			  struct rdmaxfer_agent **agentp)
{
	struct rdmaxfer_agent *agent;
	struct ibv_srq_init_attr srq_attr = { 0 };
	struct regcache_attr cattr = { 0 };
	int ret;

	if (!agentp)
		return -EINVAL;
	agent = calloc(1, sizeof(*agent));
	if (!agent)
		return -ENOMEM;
	if (attr)
		agent->attr = *attr;
	else
		rdmaxfer_agent_attr_init(&agent->attr);
	env_attr(&agent->attr);
	ret = check_attr(&agent->attr);
	if (ret)
		goto free_agent;
	pthread_mutex_init(&agent->lock, NULL);
	pthread_cond_init(&agent->cond, NULL);
	rx_list_init(&agent->peers);
	rx_list_init(&agent->accept_q);
	rx_list_init(&agent->reqs);
	rx_list_init(&agent->file_active);
	rx_list_init(&agent->deferred);
	rx_list_init(&agent->mems);
	rx_list_init(&agent->mem_spares);
	rx_list_init(&agent->async_node);
	rx_list_init(&agent->deps);
	agent->gen_stale_min = UINT64_MAX;
	rx_list_init(&agent->rings);
	agent->wake_fd = -1;

	ret = open_device(agent, agent->attr.device);
	if (ret)
		goto free_agent;
	if (agent->attr.gid_index >= 0) {
		if (agent->attr.gid_index >= agent->port_attr.gid_tbl_len) {
			ret = -EINVAL;
			goto free_agent;
		}
		agent->info.gid_index = agent->attr.gid_index;
	} else {
		agent->info.gid_index = pick_gid(agent);
	}
	ibv_query_gid(agent->ctx, agent->info.port, agent->info.gid_index,
		      (union ibv_gid *)agent->info.gid);
	if (getrandom(&agent->info.agent_id, sizeof(agent->info.agent_id),
		      0) != sizeof(agent->info.agent_id))
		agent->info.agent_id = (uint64_t)rx_now_ns() ^
				       ((uint64_t)getpid() << 32);
	snprintf(agent->info.name, sizeof(agent->info.name), "%s",
		 agent->attr.name);
	agent->info.max_msg_size = agent->port_attr.max_msg_sz;
	if (agent->attr.sq_depth > (uint32_t)agent->dev_attr.max_qp_wr)
		agent->attr.sq_depth = agent->dev_attr.max_qp_wr;
	if (agent->attr.srq_depth > (uint32_t)agent->dev_attr.max_srq_wr)
		agent->attr.srq_depth = agent->dev_attr.max_srq_wr;
	/* the CQ holds the SRQ's completions from the start */
	if (agent->attr.cq_depth < agent->attr.srq_depth)
		agent->attr.cq_depth = agent->attr.srq_depth;
	if (agent->attr.cq_depth > (uint32_t)agent->dev_attr.max_cqe)
		agent->attr.cq_depth = agent->dev_attr.max_cqe;
	agent->rd_atom = agent->dev_attr.max_qp_rd_atom;
	if ((uint32_t)agent->dev_attr.max_qp_init_rd_atom < agent->rd_atom)
		agent->rd_atom = agent->dev_attr.max_qp_init_rd_atom;
	/* rdma_cm carries the depths in 8 bits */
	if (agent->rd_atom > UINT8_MAX)
		agent->rd_atom = UINT8_MAX;

	ret = -ENOMEM;
	agent->pd = ibv_alloc_pd(agent->ctx);
	if (!agent->pd)
		goto free_agent;
	agent->ro_pin_forced = ro_pin_forced(agent);
	agent->comp_ch = ibv_create_comp_channel(agent->ctx);
	if (!agent->comp_ch)
		goto dealloc_pd;
	ret = set_nonblock(agent->comp_ch->fd);
	if (ret)
		goto destroy_comp_ch;
	agent->cq = ibv_create_cq(agent->ctx, (int)agent->attr.cq_depth, agent,
				  agent->comp_ch, 0);
	if (!agent->cq) {
		ret = -errno;
		goto destroy_comp_ch;
	}
	agent->cq_size = (uint32_t)agent->cq->cqe;
	agent->info.cq_entries = agent->cq_size;
	srq_attr.attr.max_wr = agent->attr.srq_depth;
	srq_attr.attr.max_sge = 1;
	agent->srq = ibv_create_srq(agent->pd, &srq_attr);
	if (!agent->srq) {
		ret = -errno;
		goto destroy_cq;
	}
	/* what the SRQ got may be more than asked: reserve that */
	ret = rx_cq_reserve(agent, srq_attr.attr.max_wr > agent->attr.srq_depth ?
				   srq_attr.attr.max_wr : agent->attr.srq_depth);
	if (ret)
		goto destroy_srq;
	agent->cm_ch = rdma_create_event_channel();
	if (!agent->cm_ch) {
		ret = -errno;
		goto destroy_srq;
	}
	ret = set_nonblock(agent->cm_ch->fd);
	if (ret)
		goto destroy_cm_ch;
	ret = alloc_buffers(agent);
	if (ret)
		goto free_buffers;
	ret = post_all_recvs(agent);
	if (ret)
		goto free_buffers;

	cattr.reg = cache_reg;
	cattr.dereg = cache_dereg;
	cattr.user = agent;
	cattr.monitor = agent->attr.cache_monitor;
	cattr.max_entries = agent->attr.cache_max_entries;
	cattr.max_bytes = agent->attr.cache_max_bytes;
	ret = regcache_create(&cattr, &agent->cache);
	if (ret)
		goto free_buffers;
	ret = rx_odp_init(agent);
	if (ret)
		goto destroy_cache;

	agent->info.qps_per_peer = agent->attr.qps_per_peer;
	agent->info.sq_depth = agent->attr.sq_depth;
	agent->info.srq_depth = agent->attr.srq_depth;
	agent->info.signal_interval = agent->attr.signal_interval;
	agent->info.stripe_threshold = agent->attr.stripe_threshold;
	agent->info.max_inline = agent->attr.max_inline;
	agent->info.progress = agent->attr.progress;
	agent->info.cache_monitor = regcache_monitor_name(agent->cache);
	agent->info.flags = agent->attr.flags;
	agent->info.max_half_open = agent->attr.max_half_open;
	/* attr strings belong to the caller */
	agent->attr.device = agent->info.device;
	agent->attr.name = agent->info.name;

	agent->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (agent->wake_fd < 0) {
		ret = -errno;
		goto destroy_cache;
	}
	ret = async_register(agent);
	if (ret)
		goto close_wake;
	if (agent->attr.progress == RDMAXFER_PROGRESS_THREAD) {
		ret = -pthread_create(&agent->thread, NULL, progress_thread,
				      agent);
		if (ret)
			goto unregister;
		agent->thread_running = true;
	}
	*agentp = agent;
	return 0;

unregister:
	async_unregister(agent);
close_wake:
	close(agent->wake_fd);
destroy_cache:
	rx_odp_fini(agent);
	regcache_destroy(agent->cache);
free_buffers:
	if (agent->recv_mr)
		ibv_dereg_mr(agent->recv_mr);
	free(agent->recv_buf);
	free(agent->held);
destroy_cm_ch:
	rdma_destroy_event_channel(agent->cm_ch);
destroy_srq:
	ibv_destroy_srq(agent->srq);
destroy_cq:
	ibv_destroy_cq(agent->cq);
destroy_comp_ch:
	ibv_destroy_comp_channel(agent->comp_ch);
dealloc_pd:
	ibv_dealloc_pd(agent->pd);
free_agent:
	free(agent);
	return ret > 0 ? -ret : ret;
}

RX_EXPORT
void rdmaxfer_agent_destroy(struct rdmaxfer_agent *agent)
{
	uint64_t one = 1;

	if (!agent)
		return;
	/* from a callback on the agent's own thread: joining itself would
	 * never return, and the callback would return into freed memory */
	if (agent->thread_running &&
	    pthread_equal(agent->thread, pthread_self())) {
		fprintf(stderr,
			"librdmaxfer: rdmaxfer_agent_destroy() called from the agent's own progress thread: refused, the agent stays\n");
		return;
	}
	if (agent->thread_running) {
		pthread_mutex_lock(&agent->lock);
		agent->stop = true;
		pthread_mutex_unlock(&agent->lock);
		if (write(agent->wake_fd, &one, sizeof(one)) < 0) {
			/* the thread still sees stop within its poll timeout */
		}
		pthread_join(agent->thread, NULL);
	}
	async_unregister(agent);
	/*
	 * Peers first: destroying their QPs fails what waits in their
	 * backlogs and in held doorbells (parts of live requests, which
	 * must still exist then) and ends the device's access to the
	 * requests' memory before their registrations go.
	 */
	pthread_mutex_lock(&agent->lock);
	while (!rx_list_empty(&agent->peers))
		rx_peer_free(rx_container_of(agent->peers.next,
					     struct rdmaxfer_peer, node));
	if (agent->listen_id)
		rdma_destroy_id(agent->listen_id);
	pthread_mutex_unlock(&agent->lock);
	/* then the requests: they hold cache entries */
	while (!rx_list_empty(&agent->reqs))
		rx_req_release(agent, rx_container_of(agent->reqs.next,
						      struct rdmaxfer_req, node));
	/* the rings, writers and file engines the application still holds
	 * let go of what is the agent's (their handles are freed below) */
	rx_deps_gone(agent);
	while (!rx_list_empty(&agent->mems))
		rx_mem_release(rx_container_of(agent->mems.next,
					       struct rdmaxfer_mem, node));
	rx_mem_free_spares(agent);
	close(agent->wake_fd);

	rx_odp_fini(agent);
	rx_devmem_fini(agent);
	regcache_destroy(agent->cache);
	ibv_dereg_mr(agent->recv_mr);
	free(agent->recv_buf);
	rdma_destroy_event_channel(agent->cm_ch);
	ibv_destroy_srq(agent->srq);
	drain_comp_channel(agent);
	ibv_destroy_cq(agent->cq);
	ibv_destroy_comp_channel(agent->comp_ch);
	ibv_dealloc_pd(agent->pd);
	free(agent->notifs.ring);
	free(agent->held);
	pthread_cond_destroy(&agent->cond);
	pthread_mutex_destroy(&agent->lock);
	free(agent);
}

/* The objects that depend on the agent (struct rx_dep). */
void rx_dep_add(struct rdmaxfer_agent *agent, struct rx_dep *dep,
		void (*gone)(struct rx_dep *dep))
{
	dep->gone = gone;
	pthread_mutex_lock(&agent->lock);
	rx_list_add_tail(&agent->deps, &dep->node);
	pthread_mutex_unlock(&agent->lock);
}

/* Safe on a dep never added (its node initialised to itself). */
void rx_dep_del(struct rdmaxfer_agent *agent, struct rx_dep *dep)
{
	pthread_mutex_lock(&agent->lock);
	rx_list_del(&dep->node);
	pthread_mutex_unlock(&agent->lock);
}

/* Agent teardown, nothing else running: every dep lets go. */
void rx_deps_gone(struct rdmaxfer_agent *agent)
{
	while (!rx_list_empty(&agent->deps)) {
		struct rx_dep *dep = rx_container_of(agent->deps.next,
						     struct rx_dep, node);

		rx_list_del(&dep->node);
		dep->gone(dep);
	}
}

RX_EXPORT
int rdmaxfer_agent_query(struct rdmaxfer_agent *agent,
			 struct rdmaxfer_agent_info *info)
{
	struct rx_list *l;

	if (!agent || !info)
		return -EINVAL;
	pthread_mutex_lock(&agent->lock);
	*info = agent->info;
	info->npeers = 0;
	info->npeers_half_open = 0;
	for (l = agent->peers.next; l != &agent->peers; l = l->next) {
		struct rdmaxfer_peer *peer =
			rx_container_of(l, struct rdmaxfer_peer, node);

		info->npeers++;
		/* as conn.c's half_open(): a ring's writers are the ring's */
		if (!peer->initiator && !peer->handed_out && !peer->ring)
			info->npeers_half_open++;
	}
	pthread_mutex_unlock(&agent->lock);
	return 0;
}

RX_EXPORT
int rdmaxfer_agent_stats(struct rdmaxfer_agent *agent,
			 struct rdmaxfer_agent_stats *stats, size_t size)
{
	struct rdmaxfer_agent_stats s;

	if (!agent || !stats || !size)
		return -EINVAL;
	pthread_mutex_lock(&agent->lock);
	s = agent->stats;
	s.max_notifs = agent->attr.max_notifs;
	s.max_notifs_peer = agent->attr.max_notifs_peer;
	s.notifs_queued = agent->notifs.count;
	s.notifs_held = agent->nheld;
	pthread_mutex_unlock(&agent->lock);
	/* a caller built with a longer struct gets zeros past ours */
	if (size > sizeof(s)) {
		memset((char *)stats + sizeof(s), 0, size - sizeof(s));
		size = sizeof(s);
	}
	memcpy(stats, &s, size);
	return 0;
}

RX_EXPORT
int rdmaxfer_agent_cache_stats(struct rdmaxfer_agent *agent,
			       struct regcache_stats *stats)
{
	if (!agent || !stats)
		return -EINVAL;
	return regcache_get_stats(agent->cache, stats);
}

RX_EXPORT
int rdmaxfer_progress(struct rdmaxfer_agent *agent)
{
	bool files;
	int ret;

	if (!agent)
		return -EINVAL;
	pthread_mutex_lock(&agent->lock);
	ret = rx_progress_locked(agent);
	files = !rx_list_empty(&agent->file_active);
	pthread_mutex_unlock(&agent->lock);
	rx_deliver_notifs(agent);
	if (ret >= 0 && files)
		rx_file_progress(agent);	/* file requests (file_req.c) */
	return ret;
}

RX_EXPORT
int rdmaxfer_md_pack(struct rdmaxfer_agent *agent,
		     const struct rdmaxfer_desc *descs, size_t ndescs,
		     void *buf, size_t cap, size_t *lenp)
{
	struct rdmaxfer_md md;

	if (!agent || !lenp || ndescs > RDMAXFER_MD_MAX_DESCS)
		return -EINVAL;
	memset(&md, 0, sizeof(md));
	md.version = RDMAXFER_MD_VERSION;
	md.agent_id = agent->info.agent_id;
	memcpy(md.name, agent->info.name, sizeof(md.name));
	memcpy(md.device, agent->info.device, sizeof(md.device));
	md.port = agent->info.port;
	md.gid_index = (uint8_t)agent->info.gid_index;
	memcpy(md.gid, agent->info.gid, sizeof(md.gid));
	md.max_msg_size = agent->info.max_msg_size;
	md.qps_per_peer = agent->info.qps_per_peer;
	pthread_mutex_lock(&agent->lock);
	md.listening = agent->listen_id != NULL;
	memcpy(md.host, agent->listen_host, sizeof(md.host));
	md.listen_port = agent->listen_port;
	pthread_mutex_unlock(&agent->lock);
	md.ndescs = ndescs;
	md.descs = (struct rdmaxfer_desc *)descs;
	return rx_md_encode(&md, buf, cap, lenp);
}
