// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * window.c - remote keys as memory windows (RDMAXFER_RKEY_WINDOW), and
 * the choice of the agent's remote-key mode.
 *
 * In window mode a remote-access handle holds a kept exact cache entry
 * registered with IBV_ACCESS_MW_BIND and only the local rights a window
 * over it needs (local write under remote write or atomic), no remote
 * rights: the MR's own rkey reaches nothing.  What the peer gets is the
 * rkey of a type-1 window bound to exactly the handle's range and
 * rights; ibv_bind_mw() moves the key byte on at every bind (the
 * providers call ibv_inc_rkey()), so a replayed or guessed old key
 * fails.  rdmaxfer_mem_deregister() unbinds the window (a zero-length
 * bind, waited for) before it returns; the registration stays in the
 * cache, so registering the range again is a hit and one bind.
 *
 * Why type 1 per handle and not type 2 per peer QP: a descriptor
 * (rdmaxfer_mem_desc()) names no peer, and a type-2 bind is a work
 * request on the peer's own QP, whose completions the progress engine
 * owns.  Per-peer scope needs a per-peer export call and that engine's
 * help; see rdmaxfer_mem_register(3), "REMOTE KEYS".
 *
 * Why the registration under a window is still exact and not merged like
 * local memory: rxe (Linux 6.1 and 7.3) checks a window's access rights
 * and its state, but the range of an access only against the MR under
 * it, so a window over a merged MR would reach the whole MR.  The
 * agent's self-test (win_bounds_test()) WRITEs one byte past a window at
 * create; RDMAXFER_RKEY_AUTO picks windows only on a device that refuses
 * it, and the exact MR keeps forced window mode exact on one that does
 * not.
 *
 * Binds are posted on a self-connected RC QP of the agent's own, with
 * its own CQ, under win->lock: the peers' QPs and the agent's CQ are the
 * progress engine's.  A window whose memory is unmapped or remapped
 * dies first: libregcache revokes the exact entry and the agent's
 * dereg callback calls rx_win_revoke_mr(), which unbinds every window
 * over that MR before ibv_dereg_mr() (which a bound window would make
 * fail).  If an unbind fails (the QP in error), the window is freed
 * instead (ibv_dealloc_mw() unbinds it in the kernel before it returns),
 * counted in window_fallbacks, and the QP is made again.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "window.h"

/* rkey_mode and rkey_flags took the eight bytes of the info's
 * reserved[0]: its size and every other field stay */
_Static_assert(offsetof(struct rdmaxfer_agent_info, rkey_mode) ==
	       ((offsetof(struct rdmaxfer_agent_info, env_flags) + 4 + 7) &
		~(size_t)7) &&
	       sizeof(struct rdmaxfer_agent_info) ==
	       offsetof(struct rdmaxfer_agent_info, rkey_mode) + 8,
	       "rdmaxfer_agent_info layout");

#define WIN_QP_DEPTH	16
#define WIN_SPARES	64	/* unbound windows kept for the next bind */

struct rx_win {
	struct ibv_mw *mw;		/* NULL: revoked (its memory went) */
	struct ibv_mr *mr;
	struct rx_list node;		/* win_state.live */
};

struct win_state {
	pthread_mutex_t lock;
	bool on;			/* window mode in effect */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct rx_list live;
	struct ibv_mw *spare[WIN_SPARES];
	unsigned int nspare;
	uint64_t bound, unbound, revoked, fallbacks;
};

static const struct rx_ext win_ext;

static struct win_state *win_of(struct rdmaxfer_agent *agent)
{
	struct win_state *w = rx_agent_ext(agent, &win_ext);

	return w && w->on ? w : NULL;
}

bool rx_win_enabled(struct rdmaxfer_agent *agent)
{
	return win_of(agent) != NULL;
}

/* The verbs access of the MR under a window of these rights. */
uint32_t rx_win_mr_access(uint32_t access)
{
	uint32_t a = IBV_ACCESS_MW_BIND;

	if (access & (RDMAXFER_ACCESS_REMOTE_WRITE |
		      RDMAXFER_ACCESS_REMOTE_ATOMIC))
		a |= IBV_ACCESS_LOCAL_WRITE;
	return a;
}

static void win_qp_close(struct win_state *w)
{
	if (w->qp)
		ibv_destroy_qp(w->qp);
	w->qp = NULL;
}

/* A fresh self-connected RC QP on w->cq: 0 or -errno. */
static int win_qp_open(struct rdmaxfer_agent *agent, struct win_state *w)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_wc wc;
	int ret;

	win_qp_close(w);
	while (ibv_poll_cq(w->cq, 1, &wc) > 0)
		;			/* the old QP's flushed completions */
	qa.send_cq = w->cq;
	qa.recv_cq = w->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = WIN_QP_DEPTH;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	w->qp = ibv_create_qp(agent->pd, &qa);
	if (!w->qp)
		return errno ? -errno : -ENOMEM;
	ret = rx_loopback_connect(agent, w->qp, w->qp->qp_num);
	if (ret)
		win_qp_close(w);
	return ret;
}

/* Lock held: bind mw to [addr, addr + len) of mr with ibv_access's
 * remote rights (len 0: unbind), waited for. */
static int win_post_bind(struct win_state *w, struct ibv_mw *mw,
			 struct ibv_mr *mr, void *addr, size_t len,
			 uint32_t ibv_access)
{
	struct ibv_mw_bind b = { 0 };
	int ret;

	if (!w->qp)
		return -ENOTCONN;
	b.wr_id = (uintptr_t)mw;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info.mr = mr;
	b.bind_info.addr = len ? (uintptr_t)addr : 0;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = ibv_access &
				      (IBV_ACCESS_REMOTE_READ |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_ATOMIC);
	ret = ibv_bind_mw(w->qp, mw, &b);
	if (ret)
		return ret > 0 ? -ret : ret;
	return rx_loopback_wait(w->cq);
}

/* Lock held: an unbound window, a spare if there is one. */
static struct ibv_mw *win_mw_get(struct rdmaxfer_agent *agent,
				 struct win_state *w)
{
	if (w->nspare)
		return w->spare[--w->nspare];
	return ibv_alloc_mw(agent->pd, IBV_MW_TYPE_1);
}

/*
 * Lock held: no peer reaches anything through win's key once this
 * returns.  An unbind that fails is a QP in error: free the window
 * instead (the kernel unbinds it first) and make the QP again.
 */
static void win_kill(struct rdmaxfer_agent *agent, struct win_state *w,
		     struct rx_win *win)
{
	struct ibv_mw *mw = win->mw;

	win->mw = NULL;
	rx_list_del(&win->node);
	if (!win_post_bind(w, mw, win->mr, NULL, 0, 0)) {
		if (w->nspare < WIN_SPARES)
			w->spare[w->nspare++] = mw;
		else
			ibv_dealloc_mw(mw);
		return;
	}
	w->fallbacks++;
	ibv_dealloc_mw(mw);
	(void)win_qp_open(agent, w);
}

int rx_win_bind(struct rdmaxfer_agent *agent, struct regcache_entry *entry,
		void *addr, size_t len, uint32_t access,
		struct rx_win **winp, uint32_t *rkeyp)
{
	struct win_state *w = win_of(agent);
	struct rx_win *win;
	struct ibv_mr *mr;
	int ret;

	if (!w)
		return -EOPNOTSUPP;
	win = malloc(sizeof(*win));
	if (!win)
		return -ENOMEM;
	pthread_mutex_lock(&w->lock);
	/*
	 * Under the lock: an entry revoked from here on has its dereg
	 * callback wait here and unbind this window (rx_win_revoke_mr());
	 * one revoked before has no MR to bind to.
	 */
	mr = regcache_entry_handle(entry);
	ret = -ESTALE;
	if (!mr)
		goto fail;
	win->mr = mr;
	win->mw = win_mw_get(agent, w);
	if (!win->mw) {
		ret = errno ? -errno : -ENOMEM;
		goto fail;
	}
	ret = win_post_bind(w, win->mw, mr, addr, len, rx_ibv_access(access));
	if (ret) {
		/* a failed bind leaves the QP in error, whatever failed:
		 * once more on a fresh one, which also serves the next */
		ibv_dealloc_mw(win->mw);
		win->mw = NULL;
		if (!win_qp_open(agent, w))
			win->mw = win_mw_get(agent, w);
		ret = win->mw ? win_post_bind(w, win->mw, mr, addr, len,
					      rx_ibv_access(access)) : -EIO;
		if (ret) {
			if (win->mw)
				ibv_dealloc_mw(win->mw);
			(void)win_qp_open(agent, w);
			goto fail;
		}
	}
	w->bound++;
	rx_list_add_tail(&w->live, &win->node);
	*rkeyp = win->mw->rkey;
	pthread_mutex_unlock(&w->lock);
	*winp = win;
	return 0;

fail:
	pthread_mutex_unlock(&w->lock);
	free(win);
	return ret;
}

void rx_win_unbind(struct rdmaxfer_agent *agent, struct rx_win *win)
{
	struct win_state *w = rx_agent_ext(agent, &win_ext);

	if (!win)
		return;
	pthread_mutex_lock(&w->lock);
	if (win->mw) {
		win_kill(agent, w, win);
		w->unbound++;
	}
	pthread_mutex_unlock(&w->lock);
	free(win);
}

/* The cache's dereg callback, before ibv_dereg_mr(handle). */
void rx_win_revoke_mr(struct rdmaxfer_agent *agent, void *handle)
{
	struct win_state *w = win_of(agent);
	struct rx_list *l, *next;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	for (l = w->live.next; l != &w->live; l = next) {
		struct rx_win *win = rx_container_of(l, struct rx_win, node);

		next = l->next;
		if (win->mr != handle)
			continue;
		win_kill(agent, w, win);
		w->revoked++;
	}
	pthread_mutex_unlock(&w->lock);
}

void rx_win_stats(struct rdmaxfer_agent *agent,
		  struct rdmaxfer_agent_stats *s)
{
	struct win_state *w = rx_agent_ext(agent, &win_ext);

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	s->windows_bound = w->bound;
	s->windows_unbound = w->unbound;
	s->windows_revoked = w->revoked;
	s->window_fallbacks = w->fallbacks;
	pthread_mutex_unlock(&w->lock);
}

/*
 * Does the device refuse an access one byte past a window?  A window
 * over the first page of a two-page MR, then a WRITE through it inside
 * (must work, or windows do not work at all: -EOPNOTSUPP) and one
 * reaching one byte past it.  1: refused, 0: not, or -errno.  The
 * refused WRITE leaves the QP in error: it is made again.
 */
static int win_bounds_test(struct rdmaxfer_agent *agent, struct win_state *w)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	struct ibv_send_wr wr = { 0 };
	struct ibv_sge sge;
	struct ibv_mr *mr = NULL;
	struct ibv_mw *mw = NULL;
	uint8_t *buf;
	int ret;

	buf = aligned_alloc(psz, 3 * psz);
	if (!buf)
		return -ENOMEM;
	memset(buf, 0, 3 * psz);
	ret = -EOPNOTSUPP;
	mr = ibv_reg_mr(agent->pd, buf, 3 * psz,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	mw = mr ? ibv_alloc_mw(agent->pd, IBV_MW_TYPE_1) : NULL;
	if (!mw || win_post_bind(w, mw, mr, buf, psz,
				 IBV_ACCESS_REMOTE_WRITE))
		goto out;
	/* the source: the MR's third page */
	sge.addr = (uintptr_t)(buf + 2 * psz);
	sge.length = 8;
	sge.lkey = mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.rkey = mw->rkey;
	wr.wr.rdma.remote_addr = (uintptr_t)buf;
	if (rx_loopback_post(w->qp, w->cq, &wr))
		goto out;
	wr.wr.rdma.remote_addr = (uintptr_t)(buf + psz - 7);
	ret = rx_loopback_post(w->qp, w->cq, &wr) ? 1 : 0;
	if (ret && win_qp_open(agent, w))
		ret = -EIO;
out:
	if (mw)
		ibv_dealloc_mw(mw);
	if (mr)
		ibv_dereg_mr(mr);
	free(buf);
	return ret;
}

/* The spare windows, the bind QP and its CQ: window mode off. */
static void win_close(struct win_state *w)
{
	while (w->nspare)
		ibv_dealloc_mw(w->spare[--w->nspare]);
	win_qp_close(w);
	if (w->cq)
		ibv_destroy_cq(w->cq);
	w->cq = NULL;
	w->on = false;
}

static void win_fini(struct rdmaxfer_agent *agent, void *state)
{
	struct win_state *w = state;

	(void)agent;
	win_close(w);
	pthread_mutex_destroy(&w->lock);
}

/*
 * The agent's remote-key mode, once: what the attributes (and the
 * environment) asked for, what the device has, what its windows
 * enforce.  Forced window mode on a device without working windows
 * fails the create (-EOPNOTSUPP): the program asked for a protection
 * this device cannot give.
 */
static int win_init(struct rdmaxfer_agent *agent, void *state)
{
	struct win_state *w = state;
	uint32_t mode = agent->attr.rkey_mode;
	int ret;

	pthread_mutex_init(&w->lock, NULL);
	rx_list_init(&w->live);
	if (agent->dev_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW)
		agent->info.rkey_flags |= RDMAXFER_RKEY_F_DEVICE_MW;
	if (agent->attr.flags & RDMAXFER_AGENT_CACHE_RKEYS)
		mode = RDMAXFER_RKEY_CACHED;
	agent->info.rkey_mode = mode == RDMAXFER_RKEY_AUTO ?
				RDMAXFER_RKEY_EXACT : mode;
	if (mode != RDMAXFER_RKEY_AUTO && mode != RDMAXFER_RKEY_WINDOW)
		return 0;
	ret = -EOPNOTSUPP;
	if (!(agent->info.rkey_flags & RDMAXFER_RKEY_F_DEVICE_MW))
		goto none;
	ret = -ENOMEM;
	w->cq = ibv_create_cq(agent->ctx, WIN_QP_DEPTH, NULL, NULL, 0);
	if (!w->cq)
		goto none;
	ret = win_qp_open(agent, w);
	if (!ret)
		ret = win_bounds_test(agent, w);
	if (ret < 0)
		goto none;
	if (ret)
		agent->info.rkey_flags |= RDMAXFER_RKEY_F_MW_BOUNDS;
	if (mode == RDMAXFER_RKEY_AUTO && !ret) {
		ret = 0;
		goto none;		/* exact, as without windows */
	}
	w->on = true;
	agent->info.rkey_mode = RDMAXFER_RKEY_WINDOW;
	return 0;

none:
	win_close(w);
	return mode == RDMAXFER_RKEY_WINDOW ? ret : 0;
}

static const struct rx_ext win_ext = {
	.name = "window",
	.state_size = sizeof(struct win_state),
	.init = win_init,
	.fini = win_fini,
};
RX_EXT_REGISTER(win_ext);

/*
 * $RDMAXFER_RKEY_MODE for an agent whose attributes left the mode to it:
 * the RDMAXFER_AGENT_* flags it turned on (RDMAXFER_AGENT_CACHE_RKEYS for
 * "cached", said once per process on stderr as agent.c says
 * RDMAXFER_CACHE_RKEYS=1).  A value it
 * does not know makes the create fail (-EINVAL), said on stderr: it may
 * have asked for a protection.
 */
uint32_t rx_rkey_env(struct rdmaxfer_agent *agent)
{
	struct rdmaxfer_agent_attr *a = &agent->attr;
	static const char *const names[] = {
		[RDMAXFER_RKEY_AUTO] = "auto",
		[RDMAXFER_RKEY_EXACT] = "exact",
		[RDMAXFER_RKEY_WINDOW] = "window",
		[RDMAXFER_RKEY_CACHED] = "cached",
	};
	const char *s = getenv("RDMAXFER_RKEY_MODE");
	static int said;
	uint32_t i;

	if ((a->flags & (RDMAXFER_AGENT_NO_ENV | RDMAXFER_AGENT_CACHE_RKEYS)) ||
	    a->rkey_mode || !s || !*s)
		return 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i]))
			break;
	if (i == sizeof(names) / sizeof(names[0])) {
		fprintf(stderr, "librdmaxfer: RDMAXFER_RKEY_MODE=%s: not auto, exact, window or cached\n",
			s);
		a->rkey_mode = UINT32_MAX;	/* check_attr() refuses it */
		return 0;
	}
	a->rkey_mode = i;
	agent->info.rkey_flags |= RDMAXFER_RKEY_F_ENV;
	if (i != RDMAXFER_RKEY_CACHED)
		return 0;
	a->flags |= RDMAXFER_AGENT_CACHE_RKEYS;
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "librdmaxfer: remote keys cached (forced by RDMAXFER_RKEY_MODE=cached): a key stays valid after its last deregister until eviction or unmap\n");
	return RDMAXFER_AGENT_CACHE_RKEYS;
}

/* check_attr(): the mode is one of the enum's, and the cached-rkeys flag
 * and the mode agree (the flag is the mode's older name). */
int rx_rkey_attr(struct rdmaxfer_agent_attr *a)
{
	if (a->rkey_mode > RDMAXFER_RKEY_CACHED)
		return -EINVAL;
	if (a->rkey_mode == RDMAXFER_RKEY_CACHED)
		a->flags |= RDMAXFER_AGENT_CACHE_RKEYS;
	else if (a->rkey_mode && (a->flags & RDMAXFER_AGENT_CACHE_RKEYS))
		return -EINVAL;
	return 0;
}
