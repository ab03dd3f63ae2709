// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * hostile_target.c - the target of test_rdmaxfer_hostile: a librdmaxfer
 * agent in a process of its own, as an application deploys it next to
 * peers it does not control.  A progress thread, listening, the bounds of
 * hostile.h, one region exported (remote read and write) between guard
 * bytes no peer may reach, a grain ring with credits; an application
 * thread that takes the notifications (unless paused) and checks that
 * each names only a peer it owns, and one that takes the ring's grains,
 * checks their order and releases them.  It answers the test's commands
 * (hostile.h) on a socketpair with its counters (rdmaxfer_agent_stats()),
 * peers, RSS and what its application saw, and on T_EXIT tears down and
 * exits, so that a leak shows under ASan.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "hostile.h"

static const char *addr;

static struct {
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_ring *ring;
	struct rdmaxfer_mem *mem;
	uint8_t *region;		/* guard, export, guard */
	struct rdmaxfer_peer *owned[4];
	unsigned int nowned;
	pthread_mutex_t lock;
	bool paused, stop;
	uint64_t app_msgs, app_imms, app_named_bad;
	uint64_t grains, grain_errors, rss_peak_kb;
} T = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t rss_kb(void)
{
	char line[256];
	uint64_t kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static uint8_t guard_byte(size_t i)
{
	return (uint8_t)(i * 7 + 0x5a);
}

/* The target's application: take notifications (unless paused), check
 * that a named peer is one it owns, sample the RSS. */
static void *tgt_notif_thread(void *arg)
{
	static struct rdmaxfer_notif n[16];
	int k, i, j;

	(void)arg;
	for (;;) {
		uint64_t kb = rss_kb();
		bool paused;

		pthread_mutex_lock(&T.lock);
		if (kb > T.rss_peak_kb)
			T.rss_peak_kb = kb;
		paused = T.paused;
		if (T.stop) {
			pthread_mutex_unlock(&T.lock);
			return NULL;
		}
		pthread_mutex_unlock(&T.lock);
		if (paused) {
			usleep(20000);
			continue;
		}
		k = rdmaxfer_wait_notifs(T.agent, n, 16, 50);
		pthread_mutex_lock(&T.lock);
		for (i = 0; i < k; i++) {
			bool owned = !n[i].peer;

			for (j = 0; j < (int)T.nowned; j++)
				owned |= n[i].peer == T.owned[j];
			T.app_named_bad += !owned;
			if (n[i].type == RDMAXFER_NOTIF_MSG)
				T.app_msgs++;
			else
				T.app_imms++;
		}
		pthread_mutex_unlock(&T.lock);
	}
}

/* The target's ring: grains of the good writer, in order, each released. */
static void *tgt_ring_thread(void *arg)
{
	struct rdmaxfer_grain g;
	uint64_t expect = 0;
	int ret;

	(void)arg;
	for (;;) {
		if (flag_get(&T.lock, &T.stop))
			return NULL;
		ret = rdmaxfer_ring_wait(T.ring, 50, &g);
		if (ret == -ETIMEDOUT)
			continue;
		pthread_mutex_lock(&T.lock);
		if (ret || g.index != expect ||
		    ((uint8_t *)g.data)[0] != (uint8_t)g.index)
			T.grain_errors++;
		else
			T.grains++;
		pthread_mutex_unlock(&T.lock);
		if (!ret) {
			expect = g.index + 1;
			rdmaxfer_ring_release(T.ring, g.index);
		}
	}
}

static void tgt_fill_reply(struct tgt_reply *r)
{
	struct rdmaxfer_agent_info info;
	size_t i;

	rdmaxfer_agent_stats(T.agent, &r->stats, sizeof(r->stats));
	rdmaxfer_agent_query(T.agent, &info);
	r->npeers = info.npeers;
	r->half_open = info.npeers_half_open;
	r->rss_kb = rss_kb();
	pthread_mutex_lock(&T.lock);
	if (r->rss_kb > T.rss_peak_kb)
		T.rss_peak_kb = r->rss_kb;
	r->rss_peak_kb = T.rss_peak_kb;
	r->app_msgs = T.app_msgs;
	r->app_imms = T.app_imms;
	r->app_named_bad = T.app_named_bad;
	r->grains = T.grains;
	r->grain_errors = T.grain_errors;
	pthread_mutex_unlock(&T.lock);
	for (i = 0; i < GUARD_LEN; i++) {
		r->guard_bad += T.region[i] != guard_byte(i);
		r->guard_bad += T.region[GUARD_LEN + EXPORT_LEN + i] !=
				guard_byte(i);
	}
}

/* A metadata blob from a peer: connect with it, then prepare a READ of
 * each descriptor and one over all of them (nothing is posted). */
static void tgt_connect_md(const struct tgt_cmd *c, struct tgt_reply *r)
{
	struct rdmaxfer_iov *iov = NULL;
	struct rdmaxfer_peer *p;
	struct rdmaxfer_req *req;
	struct rdmaxfer_md *md;
	size_t i;

	r->ret = rdmaxfer_connect_md(T.agent, c->data, c->len, 5000, &p);
	if (r->ret)
		return;
	if (rdmaxfer_md_parse(c->data, c->len, &md)) {
		r->ret = -EBADMSG;	/* connect_md took what parse refuses */
		rdmaxfer_peer_destroy(p);
		return;
	}
	iov = calloc(md->ndescs, sizeof(*iov));
	for (i = 0; iov && i < md->ndescs && r->nret < 63; i++) {
		iov[i].addr = T.region;
		iov[i].len = md->descs[i].len;
		r->rets[r->nret] = rdmaxfer_xfer_prepare(p, RDMAXFER_OP_READ,
							 &iov[i], 1,
							 &md->descs[i], 1,
							 NULL, &req);
		if (!r->rets[r->nret++])
			rdmaxfer_req_free(req);
	}
	if (iov && md->ndescs > 1) {
		r->rets[r->nret] = rdmaxfer_xfer_prepare(p, RDMAXFER_OP_READ,
							 iov, md->ndescs,
							 md->descs, md->ndescs,
							 NULL, &req);
		if (!r->rets[r->nret++])
			rdmaxfer_req_free(req);
	}
	free(iov);
	rdmaxfer_md_free(md);
	rdmaxfer_peer_destroy(p);
}

static void tgt_serve(int fd, struct tgt_cmd *c, struct tgt_reply *r)
{
	struct rdmaxfer_ring_info info;
	struct rdmaxfer_peer *p;
	size_t len;

	memset(r, 0, sizeof(*r));
	switch (c->op) {
	case T_INFO:
		r->ret = rdmaxfer_listen_port(T.agent, &r->port);
		if (!r->ret)
			r->ret = rdmaxfer_mem_desc(T.mem, 0, 0, &r->export);
		if (!r->ret)
			r->ret = rdmaxfer_ring_get_info(T.ring, &info);
		if (!r->ret)
			r->ret = rdmaxfer_ring_info_pack(&info, r->data,
							 sizeof(r->data), &len);
		r->len = (uint32_t)len;
		r->agent_id = info.agent_id;
		break;
	case T_STATS:
		break;
	case T_PAUSE:
	case T_RESUME:
		pthread_mutex_lock(&T.lock);
		T.paused = c->op == T_PAUSE;
		pthread_mutex_unlock(&T.lock);
		break;
	case T_ACCEPT:
		r->ret = rdmaxfer_accept(T.agent, c->arg, &p);
		if (!r->ret && T.nowned < 4) {
			pthread_mutex_lock(&T.lock);
			T.owned[T.nowned++] = p;
			pthread_mutex_unlock(&T.lock);
		}
		break;
	case T_CONNECT:
		r->ret = rdmaxfer_connect(T.agent, addr, (uint16_t)c->a,
					  c->arg, &p);
		if (!r->ret)
			rdmaxfer_peer_destroy(p);
		break;
	case T_CONNECT_MD:
		tgt_connect_md(c, r);
		break;
	}
	tgt_fill_reply(r);
	if (send(fd, r, sizeof(*r), 0) != (ssize_t)sizeof(*r))
		exit(3);
}

/* The child: build the target, serve until T_EXIT, tear it all down. */
int hostile_target_main(int fd, const char *addr_)
{
	static struct tgt_cmd c;
	static struct tgt_reply r;
	struct rdmaxfer_agent_attr attr;
	pthread_t nt, rt;
	size_t i;
	int ret;

	addr = addr_;
	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_THREAD;
	attr.max_notifs = MAX_NOTIFS;
	attr.max_notifs_peer = MAX_PEER;
	attr.max_half_open = MAX_HALF_OPEN;
	attr.cm_timeout_ms = CM_TIMEOUT_MS;
	attr.srq_depth = SRQ_DEPTH;
	ret = rdmaxfer_agent_create(&attr, &T.agent);
	if (!ret)
		ret = rdmaxfer_listen(T.agent, addr, 0);
	T.region = aligned_alloc(4096, EXPORT_LEN + 2 * GUARD_LEN);
	if (!ret && !T.region)
		ret = -ENOMEM;
	if (!ret) {
		for (i = 0; i < GUARD_LEN; i++) {
			T.region[i] = guard_byte(i);
			T.region[GUARD_LEN + EXPORT_LEN + i] = guard_byte(i);
		}
		memset(T.region + GUARD_LEN, 0, EXPORT_LEN);
		ret = rdmaxfer_mem_register_access(T.agent,
						   T.region + GUARD_LEN,
						   EXPORT_LEN, RDMAXFER_MEM_HOST,
						   RDMAXFER_ACCESS_REMOTE_READ |
						   RDMAXFER_ACCESS_REMOTE_WRITE,
						   &T.mem);
	}
	if (!ret)
		ret = rdmaxfer_ring_create(T.agent, RING_SLOTS, RING_SLOT, 0,
					   &T.ring);
	if (ret) {
		fprintf(stderr, "target: %s\n", rdmaxfer_strerror(ret));
		return 2;
	}
	pthread_create(&nt, NULL, tgt_notif_thread, NULL);
	pthread_create(&rt, NULL, tgt_ring_thread, NULL);
	for (;;) {
		ssize_t n = recv(fd, &c, sizeof(c), 0);

		if (n <= 0 || c.op == T_EXIT)
			break;
		tgt_serve(fd, &c, &r);
	}
	pthread_mutex_lock(&T.lock);
	T.stop = true;
	pthread_mutex_unlock(&T.lock);
	pthread_join(nt, NULL);
	pthread_join(rt, NULL);
	ret = rdmaxfer_ring_destroy(T.ring);
	for (i = 0; i < T.nowned; i++)
		rdmaxfer_peer_destroy(T.owned[i]);
	rdmaxfer_mem_deregister(T.mem);
	rdmaxfer_agent_destroy(T.agent);
	free(T.region);
	return ret ? 4 : 0;
}
