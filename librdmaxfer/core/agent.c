// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * agent.c - agent life cycle: attributes, create, destroy, query, stats.
 *
 * An agent binds one device port: it opens the device through librdmacm
 * (so the QPs rdma_cm creates share our PD), picks the RoCE v2 IPv4 GID
 * (device.c), and owns the CQ, its completion channel, the shared receive
 * queue for notifications (notif.c) and the registration cache.  Its
 * progress engine is progress.c; the device's async events, shared by
 * the agents of a device, async.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "auth.h"
#include "internal.h"
#include "window.h"

#define DEF_SQ_DEPTH		256
#define DEF_SRQ_DEPTH		256
#define DEF_CQ_DEPTH		4096
#define DEF_STRIPE		(64U * 1024)
#define DEF_CM_TIMEOUT_MS	5000
/* max_notifs and max_notifs_peer took the eight bytes of reserved[0],
 * rkey_mode and reserved32 the next eight, auth_key_file the last
 * eight (reserved[1]): no other field of the attributes moved, nor their
 * size */
_Static_assert(offsetof(struct rdmaxfer_agent_attr, max_notifs) % 8 == 0 &&
	       offsetof(struct rdmaxfer_agent_attr, rkey_mode) ==
	       offsetof(struct rdmaxfer_agent_attr, max_notifs) + 8 &&
	       offsetof(struct rdmaxfer_agent_attr, auth_key_file) ==
	       offsetof(struct rdmaxfer_agent_attr, rkey_mode) + 8 &&
	       sizeof(struct rdmaxfer_agent_attr) ==
	       offsetof(struct rdmaxfer_agent_attr, auth_key_file) + 8,
	       "rdmaxfer_agent_attr layout");

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
	/*
	 * The answer is the kernel's (ib_umem_get() serves every device),
	 * so it is asked once per process: the refused registration is a
	 * system call, and rxe on 7.x logs each one as an error
	 * ("rxe_reg_user_mr: returned err = -14").  0: not asked yet,
	 * 1: no, 2: yes.  Two agents made at once may both ask.
	 */
	static int known;
	long psz = sysconf(_SC_PAGESIZE);
	struct ibv_mr *mr;
	int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
	void *p;

	if (k)
		return k == 2;
	p = mmap(NULL, (size_t)psz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return true;		/* not known: check */
	mr = ibv_reg_mr(agent->pd, p, (size_t)psz, 0);
	if (mr)
		ibv_dereg_mr(mr);
	munmap(p, (size_t)psz);
	__atomic_store_n(&known, mr ? 2 : 1, __ATOMIC_RELAXED);
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
	int ret;

	rx_win_revoke_mr(user, handle);	/* a bound window fails the dereg */
	rx_mem_grace(user);
	ret = ibv_dereg_mr(handle);

	return ret > 0 ? -ret : ret;
}

static int check_attr(struct rdmaxfer_agent_attr *a)
{
	if (a->reserved32 || a->odp > RDMAXFER_ODP_OFF ||
	    rx_rkey_attr(a))
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

/* Returns the flags a variable turned on that the attributes had not. */
static uint32_t env_attr(struct rdmaxfer_agent_attr *a)
{
	uint32_t before = a->flags;
	const char *s;

	if (a->flags & RDMAXFER_AGENT_NO_ENV)
		return 0;
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
	s = getenv("RDMAXFER_AUTH_KEY_FILE");
	if (!a->auth_key_file && s && *s)
		a->auth_key_file = s;
	return a->flags & ~before;
}

/*
 * A weakening mode the environment chose is said on one line when the
 * first such agent is created, as libregcache says a forced monitor
 * once: the program did not ask for it, so whoever runs it must be able
 * to see it (and rdmaxfer_agent_query()'s env_flags says it per agent).
 */
static void env_say(uint32_t env_flags)
{
	static int said;

	if ((env_flags & RDMAXFER_AGENT_CACHE_RKEYS) &&
	    !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "librdmaxfer: remote keys cached (forced by RDMAXFER_CACHE_RKEYS=1): a key stays valid after its last deregister until eviction or unmap\n");
}

/* The agent's struct with its attributes checked and its lists empty:
 * 0, or -errno with nothing left. */
static int agent_new(const struct rdmaxfer_agent_attr *attr,
		     struct rdmaxfer_agent **agentp)
{
	struct rdmaxfer_agent *agent;
	int ret;

	agent = calloc(1, sizeof(*agent));
	if (!agent)
		return -ENOMEM;
	if (attr)
		agent->attr = *attr;
	else
		rdmaxfer_agent_attr_init(&agent->attr);
	agent->info.env_flags = env_attr(&agent->attr) | rx_rkey_env(agent);
	ret = check_attr(&agent->attr);
	if (!ret && agent->attr.auth_key_file)
		ret = rx_auth_load(agent->attr.auth_key_file, &agent->auth);
	if (ret) {
		free(agent);
		return ret;
	}
	pthread_mutex_init(&agent->lock, NULL);
	pthread_cond_init(&agent->cond, NULL);
	rx_list_init(&agent->peers);
	rx_list_init(&agent->accept_q);
	rx_list_init(&agent->reqs);
	rx_list_init(&agent->deferred);
	rx_list_init(&agent->mems);
	rx_list_init(&agent->mem_spares);
	rx_list_init(&agent->async_node);
	rx_list_init(&agent->deps);
	agent->gen_stale_min = UINT64_MAX;
	rx_list_init(&agent->cb_q);
	agent->wake_fd = -1;
	agent->ep_inner = agent->ep_fd = agent->app_fd = -1;
	agent->timer_fd = -1;
	*agentp = agent;
	return 0;
}

/* Once the device is open: its GID, the agent's id and name. */
static int agent_identity(struct rdmaxfer_agent *agent)
{
	if (agent->attr.gid_index >= 0) {
		if (agent->attr.gid_index >= agent->port_attr.gid_tbl_len)
			return -EINVAL;
		agent->info.gid_index = agent->attr.gid_index;
	} else {
		agent->info.gid_index = rx_pick_gid(agent);
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
	return 0;
}

/* The queue depths and the RDMA READ/atomic depth, within the device's. */
static void agent_limits(struct rdmaxfer_agent *agent)
{
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
}

/* Undo agent_queues(), whatever part of it was done. */
static void agent_queues_free(struct rdmaxfer_agent *agent)
{
	if (agent->recv_mr)
		ibv_dereg_mr(agent->recv_mr);
	free(agent->recv_buf);
	free(agent->held);
	if (agent->cm_ch)
		rdma_destroy_event_channel(agent->cm_ch);
	if (agent->srq)
		ibv_destroy_srq(agent->srq);
	if (agent->cq)
		ibv_destroy_cq(agent->cq);
	if (agent->comp_ch)
		ibv_destroy_comp_channel(agent->comp_ch);
	if (agent->pd)
		ibv_dealloc_pd(agent->pd);
}

/*
 * The PD, the completion channel and the CQ, the SRQ (its CQ entries
 * reserved), the CM channel, and the SRQ's receive buffers posted: 0, or
 * an error with none of them left.
 */
static int agent_queues(struct rdmaxfer_agent *agent)
{
	struct ibv_srq_init_attr srq_attr = { 0 };
	int ret;

	ret = -ENOMEM;
	agent->pd = ibv_alloc_pd(agent->ctx);
	if (!agent->pd)
		goto fail;
	agent->ro_pin_forced = ro_pin_forced(agent);
	agent->comp_ch = ibv_create_comp_channel(agent->ctx);
	if (!agent->comp_ch)
		goto fail;
	ret = rx_set_nonblock(agent->comp_ch->fd);
	if (ret)
		goto fail;
	agent->cq = ibv_create_cq(agent->ctx, (int)agent->attr.cq_depth, agent,
				  agent->comp_ch, 0);
	if (!agent->cq) {
		ret = -errno;
		goto fail;
	}
	agent->cq_size = (uint32_t)agent->cq->cqe;
	agent->info.cq_entries = agent->cq_size;
	srq_attr.attr.max_wr = agent->attr.srq_depth;
	srq_attr.attr.max_sge = 1;
	agent->srq = ibv_create_srq(agent->pd, &srq_attr);
	if (!agent->srq) {
		ret = -errno;
		goto fail;
	}
	/* what the SRQ got may be more than asked: reserve that */
	ret = rx_cq_reserve(agent, srq_attr.attr.max_wr > agent->attr.srq_depth ?
				   srq_attr.attr.max_wr : agent->attr.srq_depth);
	if (ret)
		goto fail;
	agent->cm_ch = rdma_create_event_channel();
	if (!agent->cm_ch) {
		ret = -errno;
		goto fail;
	}
	ret = rx_set_nonblock(agent->cm_ch->fd);
	if (!ret)
		ret = rx_recv_bufs_alloc(agent);
	if (!ret)
		ret = rx_recv_bufs_post(agent);
	if (!ret)
		return 0;
fail:
	agent_queues_free(agent);
	return ret;
}

/* What rdmaxfer_agent_query() reports of the attributes. */
static void agent_info_fill(struct rdmaxfer_agent *agent)
{
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
}

RX_EXPORT
int rdmaxfer_agent_create(const struct rdmaxfer_agent_attr *attr,
			  struct rdmaxfer_agent **agentp)
{
	struct rdmaxfer_agent *agent;
	struct regcache_attr cattr = { 0 };
	int ret;

	if (!agentp)
		return -EINVAL;
	ret = agent_new(attr, &agent);
	if (ret)
		return ret;
	ret = rx_open_device(agent, agent->attr.device);
	if (!ret)
		ret = agent_identity(agent);
	if (ret)
		goto free_agent;
	agent_limits(agent);
	ret = agent_queues(agent);
	if (ret)
		goto free_agent;

	cattr.reg = cache_reg;
	cattr.dereg = cache_dereg;
	cattr.user = agent;
	cattr.monitor = agent->attr.cache_monitor;
	cattr.max_entries = agent->attr.cache_max_entries;
	cattr.max_bytes = agent->attr.cache_max_bytes;
	ret = regcache_create(&cattr, &agent->cache);
	if (ret)
		goto free_queues;
	ret = rx_exts_init(agent);
	if (ret)
		goto destroy_cache;
	agent_info_fill(agent);

	agent->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (agent->wake_fd < 0) {
		ret = -errno;
		goto destroy_cache;
	}
	ret = rx_wait_init(agent);
	if (ret)
		goto close_wake;
	ret = rx_async_register(agent);
	if (ret)
		goto close_wake;
	if (agent->attr.progress == RDMAXFER_PROGRESS_THREAD) {
		ret = -pthread_create(&agent->thread, NULL, rx_progress_thread,
				      agent);
		if (ret)
			goto unregister;
		agent->thread_running = true;
	}
	env_say(agent->info.env_flags);
	*agentp = agent;
	return 0;

unregister:
	rx_async_unregister(agent);
close_wake:
	rx_wait_fini(agent);
	close(agent->wake_fd);
destroy_cache:
	rx_exts_fini(agent);
	regcache_destroy(agent->cache);
free_queues:
	agent_queues_free(agent);
free_agent:
	rx_auth_free(agent->auth);
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
	rx_async_unregister(agent);
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
	rx_wait_fini(agent);
	close(agent->wake_fd);

	rx_exts_fini(agent);
	regcache_destroy(agent->cache);
	ibv_dereg_mr(agent->recv_mr);
	free(agent->recv_buf);
	rdma_destroy_event_channel(agent->cm_ch);
	ibv_destroy_srq(agent->srq);
	rx_drain_comp_channel(agent);
	ibv_destroy_cq(agent->cq);
	ibv_destroy_comp_channel(agent->comp_ch);
	ibv_dealloc_pd(agent->pd);
	free(agent->notifs.ring);
	free(agent->held);
	pthread_cond_destroy(&agent->cond);
	pthread_mutex_destroy(&agent->lock);
	rx_auth_free(agent->auth);
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
		if (!peer->initiator && !peer->handed_out && !peer->owner_ext)
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
	rx_win_stats(agent, &s);
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
