// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * wait.c - the agent's event fd: one epoll set (ep_inner) over every fd
 * progress reads, where a blocked caller (rx_block()) or the progress
 * thread sleeps, and the application's fd (rdmaxfer_agent_fd()) with
 * rdmaxfer_agent_arm(), so that an application can fold the agent into
 * its own event loop and sleep with no lost wakeup.
 *
 * Lost wakeups are closed in three places.  The CQ is armed
 * (ibv_req_notify_cq) before its last poll, so a completion after that
 * poll raises a channel event.  Whatever another thread's progress does
 * while the application is armed (a blocked caller's, the progress
 * thread's) writes app_fd, since that progress read the channel events
 * the application's epoll would have woken on (rx_work_locked()).  And
 * such work between two arms is counted (app_gen), so arm answers
 * -EAGAIN for it.  Deadlines (a peer's flush, an unclaimed passive peer)
 * are a timerfd in the set, so no one sleeps in slices to meet them.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "internal.h"

static int ep_add(int ep, int fd, uint32_t tag)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.u32 = tag;
	/* EEXIST: two caches of one monitor that share its fd */
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * The caches' fds (the agent's and the extensions', which exist from
 * agent create on): a cache whose monitor has none (and is not "none",
 * which sees no invalidation at all) leaves the progress thread its
 * sweep period.
 */
static int wait_add_caches(struct rdmaxfer_agent *agent)
{
	struct regcache *c[RX_EP_CACHES];
	unsigned int i, n = 0;
	int fd, ret;

	c[n++] = agent->cache;
	n += rx_exts_caches(agent, c + n, RX_EP_CACHES - n);
	for (i = 0; i < n; i++) {
		fd = regcache_fd(c[i]);
		if (fd < 0) {
			if (strcmp(regcache_monitor_name(c[i]), "none"))
				agent->sweep_period = true;
			continue;
		}
		ret = ep_add(agent->ep_inner, fd, RX_EV_CACHE);
		if (ret)
			return ret;
	}
	return 0;
}

/* Agent create, after the caches and wake_fd: 0 or -errno (then
 * rx_wait_fini() closes what was made). */
int rx_wait_init(struct rdmaxfer_agent *agent)
{
	int ret;

	agent->ep_inner = epoll_create1(EPOLL_CLOEXEC);
	agent->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	agent->app_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	agent->timer_fd = timerfd_create(CLOCK_MONOTONIC,
					 TFD_NONBLOCK | TFD_CLOEXEC);
	if (agent->ep_inner < 0 || agent->ep_fd < 0 || agent->app_fd < 0 ||
	    agent->timer_fd < 0)
		return -errno;
	ret = ep_add(agent->ep_inner, agent->comp_ch->fd, RX_EV_COMP);
	if (!ret)
		ret = ep_add(agent->ep_inner, agent->cm_ch->fd, RX_EV_CM);
	if (!ret)
		ret = ep_add(agent->ep_inner, agent->ctx->async_fd,
			     RX_EV_ASYNC);
	if (!ret)
		ret = ep_add(agent->ep_inner, agent->wake_fd, RX_EV_WAKE);
	if (!ret)
		ret = ep_add(agent->ep_inner, agent->timer_fd, RX_EV_TIMER);
	if (!ret)
		ret = wait_add_caches(agent);
	if (!ret)
		ret = ep_add(agent->ep_fd, agent->app_fd, RX_EV_APP);
	/* with a progress thread the channels are the thread's: the
	 * application hears of its work through app_fd alone */
	if (!ret && agent->attr.progress != RDMAXFER_PROGRESS_THREAD)
		ret = ep_add(agent->ep_fd, agent->ep_inner, RX_EV_INNER);
	return ret;
}

void rx_wait_fini(struct rdmaxfer_agent *agent)
{
	int *fds[] = { &agent->ep_fd, &agent->ep_inner, &agent->app_fd,
		       &agent->timer_fd };
	unsigned int i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* Lock held: timer_fd fires at next_deadline_ns (none: disarmed). */
void rx_timer_sync(struct rdmaxfer_agent *agent)
{
	struct itimerspec its;
	int64_t when = agent->next_deadline_ns;

	if (when == agent->timer_ns || agent->timer_fd < 0)
		return;
	memset(&its, 0, sizeof(its));
	if (when) {
		its.it_value.tv_sec = when / 1000000000LL;
		its.it_value.tv_nsec = when % 1000000000LL;
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1;
	}
	if (!timerfd_settime(agent->timer_fd, TFD_TIMER_ABSTIME, &its, NULL))
		agent->timer_ns = when;
}

static void eventfd_clear(int fd)
{
	uint64_t cnt;

	if (read(fd, &cnt, sizeof(cnt)) < 0) {
		/* EAGAIN: another reader took it */
	}
}

/*
 * Lock held: progress did work the application may be waiting for.  Done
 * by the thread that armed (its own test or progress after it woke): it
 * is awake, nothing to tell.  Done by another (the progress thread, a
 * caller blocked in a wait): counted for the next arm, and an armed
 * application is woken, since the channel events its epoll would have
 * seen may be read already.
 */
void rx_work_locked(struct rdmaxfer_agent *agent)
{
	uint64_t one = 1;

	/* a caller asleep in rx_block() may wait for what was just done
	 * (another thread's test, or an arm, read its events): kick it,
	 * once per sleep, so that it looks again */
	if (agent->poller && !agent->poller_kicked) {
		agent->poller_kicked = true;
		if (write(agent->wake_fd, &one, sizeof(one)) < 0) {
			/* saturated: readable anyway */
		}
	}
	if (pthread_equal(agent->armer, pthread_self())) {
		agent->armed = false;
		return;
	}
	agent->app_gen++;
	if (!agent->armed)
		return;
	agent->armed = false;
	agent->app_hot = true;
	if (write(agent->app_fd, &one, sizeof(one)) < 0) {
		/* saturated: readable anyway */
	}
}

/* Lock held: what of ep_inner is readable now, read (the tags seen are
 * returned as bits 1 << RX_EV_*); timeout_ms as epoll_wait's. */
unsigned int rx_wait_inner(struct rdmaxfer_agent *agent, int timeout_ms,
			   bool unlock)
{
	struct epoll_event ev[8];
	unsigned int seen = 0;
	int i, n;

	if (unlock)
		pthread_mutex_unlock(&agent->lock);
	n = epoll_wait(agent->ep_inner, ev, 8, timeout_ms);
	if (unlock)
		pthread_mutex_lock(&agent->lock);
	if (n < 0)	/* interrupted: a full round */
		return 1U << RX_EV_CM | 1U << RX_EV_ASYNC;
	for (i = 0; i < n; i++)
		seen |= 1U << ev[i].data.u32;
	if (seen & (1U << RX_EV_COMP))
		rx_drain_comp_channel(agent);
	if (seen & (1U << RX_EV_WAKE))
		eventfd_clear(agent->wake_fd);
	if (seen & (1U << RX_EV_TIMER))
		eventfd_clear(agent->timer_fd);	/* the expiry count */
	return seen;
}

RX_EXPORT
int rdmaxfer_agent_fd(struct rdmaxfer_agent *agent)
{
	if (!agent || agent->ep_fd < 0)
		return -EINVAL;
	return agent->ep_fd;
}

/* Lock held: has the application something to take or run? */
static bool app_pending_locked(struct rdmaxfer_agent *agent)
{
	return agent->notifs.count || !rx_list_empty(&agent->cb_q) ||
	       rx_exts_pending(agent);
}

RX_EXPORT
int rdmaxfer_agent_arm(struct rdmaxfer_agent *agent)
{
	unsigned int seen = 0;
	bool pending = false;
	int ret = 0;

	if (!agent)
		return -EINVAL;
	pthread_mutex_lock(&agent->lock);
	if (agent->fatal) {
		ret = agent->fatal;
		goto unlock;
	}
	if (agent->app_hot) {
		agent->app_hot = false;
		eventfd_clear(agent->app_fd);
	}
	if (!agent->thread_running) {
		/* caller mode: the channels are the application's to read
		 * (one epoll_wait() says which are readable) */
		seen = rx_wait_inner(agent, 0, false);
		if (seen & (1U << RX_EV_WAKE))
			pending = true;	/* a file request, an async event */
		if (rx_progress_some_locked(agent, seen & (1U << RX_EV_CM),
					    seen & (1U << RX_EV_ASYNC)) > 0)
			pending = true;
		if (!agent->cq_armed) {
			if (ibv_req_notify_cq(agent->cq, 0)) {
				ret = -EIO;
				goto unlock;
			}
			agent->cq_armed = true;
			/* what came before the arming raised no event */
			if (rx_poll_cq_locked(agent) > 0)
				pending = true;
		}
		rx_timer_sync(agent);
	}
	if (agent->app_gen != agent->app_seen || app_pending_locked(agent))
		pending = true;
	agent->app_seen = agent->app_gen;
	agent->armed = !pending;
	agent->armer = pthread_self();
unlock:
	pthread_mutex_unlock(&agent->lock);
	if (seen & (1U << RX_EV_CACHE))
		rx_mem_sweep(agent, true);
	if (ret)
		return ret;
	return pending ? -EAGAIN : 0;
}
