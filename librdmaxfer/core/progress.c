// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * progress.c - the progress engine: polling the CQ, reading CM and async
 * events, the peers' deadlines, and sleeping until one of them may have
 * something.  Progress runs either in the caller's test/wait/progress
 * calls or in one thread of the agent's own; both take the agent mutex.
 * A failed peer whose requests do not flush within RX_FLUSH_TIMEOUT_MS
 * has them failed without their completions (conn.c,
 * rx_check_deadlines()).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* a blocked waiter re-checks at least this often (another thread may have
 * consumed the channel event that concerned it) */
#define BLOCK_SLICE_MS		20

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

/* Lock held: note a peer deadline (see rx_check_deadlines()). */
void rx_set_deadline(struct rdmaxfer_agent *agent, int64_t when)
{
	if (!agent->next_deadline_ns || when < agent->next_deadline_ns)
		agent->next_deadline_ns = when;
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

void rx_drain_comp_channel(struct rdmaxfer_agent *agent)
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
	rx_drain_comp_channel(agent);
	if (pfd[3].revents && read(agent->wake_fd, &cnt, sizeof(cnt)) < 0) {
		/* nothing to read: another waiter took it */
	}
	return 0;
}

/* The thread's poll() timeout, and so the period of its full sweep. */
#define SWEEP_PERIOD_NS	(100 * 1000000LL)

void *rx_progress_thread(void *arg)
{
	struct rdmaxfer_agent *agent = arg;
	struct pollfd pfd[4];
	bool cm = true, async = true;
	int64_t now, swept = 0;
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
		/*
		 * A key whose memory went dies within one period: the
		 * generations (a few loads) every round, the full apply
		 * (the cache's write lock, and what the uffd thread
		 * deferred) once per period, not per completion.
		 */
		now = rx_now_ns();
		rx_mem_sweep(agent, now - swept >= SWEEP_PERIOD_NS);
		if (now - swept >= SWEEP_PERIOD_NS)
			swept = now;
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
		rx_drain_comp_channel(agent);
	}
	pthread_mutex_unlock(&agent->lock);
	return NULL;
}

RX_EXPORT
int rdmaxfer_progress(struct rdmaxfer_agent *agent)
{
	uint32_t busy;
	int ret;

	if (!agent)
		return -EINVAL;
	rx_mem_sweep(agent, false);
	pthread_mutex_lock(&agent->lock);
	ret = rx_progress_locked(agent);
	busy = agent->ext_busy;
	pthread_mutex_unlock(&agent->lock);
	rx_deliver_notifs(agent);
	if (ret >= 0 && busy)
		rx_exts_progress(agent, busy);	/* file requests, for one */
	return ret;
}
