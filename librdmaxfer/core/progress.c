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
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

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
	if (!agent->next_deadline_ns || when < agent->next_deadline_ns) {
		agent->next_deadline_ns = when;
		/* whoever sleeps (the thread, a caller, the application's
		 * epoll) wakes for it through timer_fd */
		rx_timer_sync(agent);
	}
}

/*
 * The CQ, then the CM channel if cm and the async events if async (each
 * a system call even when nothing is pending), then the deadlines.  Lock
 * held; returns the work completions and CM events handled (and 1 for
 * deadlines or async events that came), telling the application of them
 * (rx_work_locked(), done for the CQ by rx_poll_cq_locked()).
 */
int rx_progress_some_locked(struct rdmaxfer_agent *agent, bool cm,
			    bool async)
{
	struct rdma_cm_event *ev;
	int total = rx_poll_cq_locked(agent), other = 0;

	if (total < 0)
		return total;
	while (cm && !rdma_get_cm_event(agent->cm_ch, &ev)) {
		rx_cm_event_locked(agent, ev);
		other++;
	}
	if (async) {
		rx_async_poll_locked(agent);
		other++;
	}
	if (agent->next_deadline_ns && rx_now_ns() >= agent->next_deadline_ns) {
		rx_check_deadlines(agent);
		other++;
	}
	if (agent->next_deadline_ns != agent->timer_ns)
		rx_timer_sync(agent);
	if (other)
		rx_work_locked(agent);
	return total + other;
}

/*
 * Poll the CQ and the CM channel once.  Called with the lock held;
 * returns the number of work completions handled.
 */
int rx_progress_locked(struct rdmaxfer_agent *agent)
{
	return rx_progress_some_locked(agent, true, true);
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

/* Lock held: wait on the condition for progress_gen to move, until
 * deadline_ns at the latest (INT64_MAX: no limit). */
static void wait_gen(struct rdmaxfer_agent *agent, int64_t deadline_ns,
		     bool while_poller)
{
	uint64_t gen = agent->progress_gen;
	struct timespec ts;
	int64_t left;

	if (deadline_ns != INT64_MAX) {
		left = deadline_ns - rx_now_ns();
		if (left < 0)
			left = 0;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += left / 1000000000LL;
		ts.tv_nsec += left % 1000000000LL;
		ts.tv_sec += ts.tv_nsec / 1000000000LL;
		ts.tv_nsec %= 1000000000LL;
	}
	while (gen == agent->progress_gen &&
	       (!while_poller || agent->poller)) {
		if (deadline_ns == INT64_MAX)
			pthread_cond_wait(&agent->cond, &agent->lock);
		else if (pthread_cond_timedwait(&agent->cond, &agent->lock,
						&ts))
			break;
	}
}

/*
 * Sleep until something may have progressed, or the deadline.  Called with
 * the lock held (and returns with it held).  Thread mode waits for the
 * thread's next round, which comes as soon as an event does (the thread
 * sleeps on ep_inner with no timeout, wait.c).  Caller mode: one caller
 * at a time, the poller, sleeps on ep_inner after arming the CQ; the
 * others wait for its wake on the condition (it drains the channels
 * their events share, so they cannot sleep on them too: what used to be
 * a 20 ms slice).  The progress thread itself (a callback that waits:
 * rx_self_progress()) sleeps as a caller does, after telling other
 * waiters what its own progress did.
 */
int rx_block(struct rdmaxfer_agent *agent, int64_t deadline_ns)
{
	int64_t now = rx_now_ns(), left_ms;
	unsigned int seen;

	if (now >= deadline_ns)
		return -ETIMEDOUT;
	if (!rx_self_progress(agent)) {
		wait_gen(agent, deadline_ns, false);
		return 0;
	}
	if (agent->thread_running) {
		agent->progress_gen++;
		pthread_cond_broadcast(&agent->cond);
	}
	if (agent->poller) {
		wait_gen(agent, deadline_ns, true);
		return 0;
	}
	if (!agent->cq_armed) {
		if (ibv_req_notify_cq(agent->cq, 0))
			return -EIO;
		agent->cq_armed = true;
		/* completions that raced with the arming are polled by the
		 * caller's next round: report progress possible (only the
		 * CQ can race with its arming; the CM and async channels
		 * are in ep_inner, level-triggered) */
		if (rx_poll_cq_locked(agent) > 0)
			return 0;
	}
	rx_timer_sync(agent);
	left_ms = deadline_ns == INT64_MAX ? -1 :
		  (deadline_ns - now + 999999) / 1000000;
	if (left_ms > INT32_MAX)
		left_ms = INT32_MAX;
	agent->poller = true;
	agent->poller_kicked = false;
	seen = rx_wait_inner(agent, (int)left_ms, true);
	agent->poller = false;
	/* a wake (a file request's io_uring, another agent's async event
	 * for this one) is work for an armed application too, unless it
	 * was another thread's kick for this sleep */
	if ((seen & (1U << RX_EV_WAKE)) && !agent->poller_kicked)
		rx_work_locked(agent);
	agent->progress_gen++;
	pthread_cond_broadcast(&agent->cond);
	if (seen & (1U << RX_EV_CACHE)) {
		/* invalidations pending: applied now (without the lock, as
		 * the caches' dereg callbacks need), or the cache's fd
		 * would stay readable and the next sleep return at once */
		pthread_mutex_unlock(&agent->lock);
		rx_mem_sweep(agent, true);
		pthread_mutex_lock(&agent->lock);
	}
	return 0;
}

/* The period of the thread's full sweep where a cache has no fd to
 * wake it (a key whose memory went dies within one period). */
#define SWEEP_PERIOD_NS	(100 * 1000000LL)

void *rx_progress_thread(void *arg)
{
	struct rdmaxfer_agent *agent = arg;
	unsigned int seen = 1U << RX_EV_CM | 1U << RX_EV_ASYNC;
	int64_t now, swept = 0;
	bool sweep;

	pthread_mutex_lock(&agent->lock);
	while (!agent->stop) {
		/* the CM channel and the async events only when epoll saw
		 * them readable or the thread was woken (the first round:
		 * always): a stream of grains wakes the thread once per
		 * completion or so, and each empty read is a system call.
		 * A wake (another thread's request, another agent that read
		 * this one's async events off the shared context, a file
		 * request's io_uring) gets a full round. */
		if (seen & (1U << RX_EV_WAKE)) {
			seen |= 1U << RX_EV_CM | 1U << RX_EV_ASYNC;
			rx_work_locked(agent);
		}
		rx_progress_some_locked(agent, seen & (1U << RX_EV_CM),
					seen & (1U << RX_EV_ASYNC));
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
		 * A key whose memory went dies at once: the generations (a
		 * few loads) every round, the full apply (the cache's write
		 * lock, and what the uffd thread deferred) when a cache's
		 * fd said so, or once per period for a cache without one.
		 */
		now = rx_now_ns();
		sweep = (seen & (1U << RX_EV_CACHE)) ||
			(agent->sweep_period && now - swept >= SWEEP_PERIOD_NS);
		rx_mem_sweep(agent, sweep);
		if (sweep)
			swept = now;
		pthread_mutex_lock(&agent->lock);
		if (agent->stop)
			break;
		/* no timeout but the sweep's: deadlines are timer_fd's */
		seen = rx_wait_inner(agent, agent->sweep_period ?
				     (int)(SWEEP_PERIOD_NS / 1000000) : -1,
				     true);
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
	/* the thread that arms is awake here: what was done so far it sees
	 * now (another thread's progress still wakes it, wait.c) */
	if (pthread_equal(agent->armer, pthread_self()))
		agent->app_seen = agent->app_gen;
	busy = agent->ext_busy;
	pthread_mutex_unlock(&agent->lock);
	rx_deliver_notifs(agent);
	if (ret >= 0 && busy)
		rx_exts_progress(agent, busy);	/* file requests, for one */
	return ret;
}
