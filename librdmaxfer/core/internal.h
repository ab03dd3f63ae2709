/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * internal.h - the core's own declarations, shared by the files of core/:
 * the wire's work-request ids and connection data, and every call from
 * one core file to another.  What an extension may use is in core.h,
 * which this header includes; nothing here names an extension.
 */
#ifndef RDMAXFER_INTERNAL_H
#define RDMAXFER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <endian.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "core.h"

#define RX_HELLO_MAGIC		0x48584452U	/* "RDXH" */
#define RX_PROTO_VERSION	1
/* transport retries of a QP: the most that is finite on every device
 * (conn.c, connect_qps()) */
#define RX_RETRY_COUNT		6
/* one scatter entry is 32 bits long; keep pieces well under it */
#define RX_MAX_PIECE		(1U << 30)

/*
 * wr_id encoding: a pointer (or an index shifted by 3) in the low bits, a
 * 3-bit tag, and the QP generation in the top 12 bits, so completions of a
 * QP destroyed by a reconnect are recognised and dropped.
 */
enum rx_tag {
	RX_TAG_SIGNALED = 0,	/* struct rx_slot *, signalled WR of a request */
	RX_TAG_UNSIGNALED = 1,	/* struct rx_slot *, only seen on errors */
	RX_TAG_SEND = 2,	/* notification send slot index */
	RX_TAG_RECV = 3,	/* receive buffer index */
	RX_TAG_TERM = 4,	/* struct rx_qp *: a chain's terminator WR */
};
#define RX_TAG_MASK		7ULL
#define RX_GEN_SHIFT		52
#define RX_PTR_MASK		((1ULL << RX_GEN_SHIFT) - 1)
/* generations are 1..RX_GEN_SPAN, handed out per agent (conn.c) */
#define RX_GEN_SPAN		4095U

/* rdma_cm private data of a connect request (32 bytes, little-endian;
 * encoded and checked by hello.c). */
struct rx_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t qp_index;
	uint16_t nqps;
	uint16_t reserved;
	uint64_t agent_id;
	uint64_t token;
	uint32_t reserved2;
} __attribute__((packed));

/* rdma_cm private data of an accept. */
struct rx_welcome {
	uint32_t magic;
	uint16_t version;
	uint16_t reserved;
	uint64_t agent_id;
} __attribute__((packed));

/* A signalled zero-length WRITE posted after a doorbell that failed
 * partway, so the WRs that did go out still get a completion (xfer_fail.c).
 * Listed on its QP until its completion is handled; a completion the
 * generation check drops (abort, reconnect, teardown) would leave it
 * unfreed, so those free the list (rx_qp_drop_terms()). */
struct rx_term {
	struct ibv_send_wr wr;
	struct rx_qp *q;
	struct rx_part *riders;
	uint32_t retire;
	struct rx_list node;
};

void rx_dep_del(struct rdmaxfer_agent *agent, struct rx_dep *dep);
void rx_deps_gone(struct rdmaxfer_agent *agent);

/* ext.c: every registered extension's state allocated and its init run,
 * in registry order (0, or -errno with nothing left); the fini of those
 * whose init ran, in reverse, and the states freed (idempotent) */
int rx_exts_init(struct rdmaxfer_agent *agent);
void rx_exts_fini(struct rdmaxfer_agent *agent);
/* no lock held: the progress hook of each extension whose bit is in busy
 * (agent->ext_busy, read under the lock) */
void rx_exts_progress(struct rdmaxfer_agent *agent, uint32_t busy);
/* agent lock held: the notif hooks in registry order until one takes n;
 * does any extension have deliveries waiting; run them */
bool rx_exts_notif(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		   const struct rdmaxfer_notif *n);
bool rx_exts_pending(struct rdmaxfer_agent *agent);
/* the extensions' own registration caches, up to max; how many */
unsigned int rx_exts_caches(const struct rdmaxfer_agent *agent,
			    struct regcache **caches, unsigned int max);
void rx_exts_deliver(struct rdmaxfer_agent *agent);
/* the table of memory kind 'kind' and *statep its extension's state on
 * the agent, or NULL: no extension is that kind */
const struct rx_mem_ops *rx_mem_kind(const struct rdmaxfer_agent *agent,
				     enum rdmaxfer_mem_kind kind,
				     void **statep);

/* device.c */
int rx_pick_gid(struct rdmaxfer_agent *agent);
int rx_open_device(struct rdmaxfer_agent *agent, const char *want);
int rx_set_nonblock(int fd);
int rx_cq_reserve(struct rdmaxfer_agent *agent, uint32_t entries);
void rx_cq_release(struct rdmaxfer_agent *agent, uint32_t entries);

/* async.c */
int rx_async_register(struct rdmaxfer_agent *agent);
void rx_async_unregister(struct rdmaxfer_agent *agent);
void rx_async_poll_locked(struct rdmaxfer_agent *agent);

/* progress.c */
void rx_set_deadline(struct rdmaxfer_agent *agent, int64_t when);
/* test() spins: the CQ every call, the CM channel every RX_CM_POLL_EVERY */
#define RX_CM_POLL_EVERY	64
void rx_drain_comp_channel(struct rdmaxfer_agent *agent);
int rx_progress_some_locked(struct rdmaxfer_agent *agent, bool cm,
			    bool async);

/* wait.c: the event fd; what ep_inner's members are tagged with */
enum {
	RX_EV_COMP = 0,
	RX_EV_CM,
	RX_EV_ASYNC,
	RX_EV_WAKE,
	RX_EV_TIMER,
	RX_EV_CACHE,
	RX_EV_APP,		/* ep_fd's own */
	RX_EV_INNER,
};
#define RX_EP_CACHES	4
int rx_wait_init(struct rdmaxfer_agent *agent);
void rx_wait_fini(struct rdmaxfer_agent *agent);
void rx_timer_sync(struct rdmaxfer_agent *agent);
void rx_work_locked(struct rdmaxfer_agent *agent);
unsigned int rx_wait_inner(struct rdmaxfer_agent *agent, int timeout_ms,
			   bool unlock);

/* xfer.c: lock held, req (with a callback) completed: queue its call;
 * rx_req_cbs_run_locked() makes the calls due, dropping the lock around
 * each (by rx_deliver_notifs()'s one deliverer) */
void rx_req_cb_due(struct rdmaxfer_req *req);
void rx_req_cbs_run_locked(struct rdmaxfer_agent *agent);
void *rx_progress_thread(void *arg);

/* conn.c */
int rx_cm_event_locked(struct rdmaxfer_agent *agent, struct rdma_cm_event *ev);

/* peer.c */
int rx_qp_install(struct rdmaxfer_peer *peer, unsigned int index,
		  struct rdma_cm_id *id);
void rx_qp_uninstall(struct rx_qp *q);
void rx_qp_destroy(struct rx_qp *q);
struct rdmaxfer_peer *rx_peer_new(struct rdmaxfer_agent *agent,
				  unsigned int nqps);
void rx_peer_cm_done(struct rx_qp *q);
void rx_qp_established(struct rx_qp *q);
void rx_peer_free(struct rdmaxfer_peer *peer);
void rx_peer_abort(struct rdmaxfer_peer *peer, int err);
void rx_peer_fail_quiet(struct rdmaxfer_peer *peer, int err);
void rx_fail_all(struct rdmaxfer_agent *agent, int err, bool abort);
void rx_check_deadlines(struct rdmaxfer_agent *agent);
void rx_qp_comm_est(struct rx_qp *q);
struct rdmaxfer_peer *rx_peer_by_qpn_slow(struct rdmaxfer_agent *agent,
					  uint32_t qpn, unsigned int *qp_index);

/* The peer and QP index of a QP number; completions come in runs from one
 * QP, so the last one found is tried first, without a call. */
static inline struct rdmaxfer_peer *
rx_peer_by_qpn(struct rdmaxfer_agent *agent, uint32_t qpn,
	       unsigned int *qp_index)
{
	struct rx_qp *c = agent->qpn_cache;

	if (c && c->qp && c->qpn == qpn) {
		if (qp_index)
			*qp_index = c->index;
		return c->peer;
	}
	return rx_peer_by_qpn_slow(agent, qpn, qp_index);
}

/* xfer.c */
int rx_poll_cq_locked(struct rdmaxfer_agent *agent);
void rx_flush_backlog(struct rx_qp *qp);
void rx_flush_deferred(struct rdmaxfer_agent *agent);

/* xfer_fail.c */
void rx_qp_drop_terms(struct rx_qp *q);
void rx_fail_backlog(struct rx_qp *qp, int err);
void rx_chain_failed(struct rx_qp *q, struct rx_part *last,
		     struct ibv_send_wr *bad, int err);

/* prepare.c */
int rx_req_alloc(struct rdmaxfer_req **reqp, size_t nlocal, uint32_t nwr,
		 unsigned int nparts);
void rx_req_register(struct rdmaxfer_req *req);

/*
 * The agent lock on the data path: rdmaxfer_req_post_flags() and
 * rdmaxfer_req_test().  An RDMAXFER_AGENT_SINGLE_THREAD agent has no
 * progress thread and a caller that never enters it from two threads at
 * once, and no thread of this library touches what the lock guards (the
 * uffd monitor's thread stays inside libregcache), so there is nothing to
 * exclude.  Only for code that does not wait on agent->cond nor unlock
 * inside: every other path takes agent->lock as before.
 */
static inline void rx_data_lock(struct rdmaxfer_agent *agent)
{
	if (!(agent->attr.flags & RDMAXFER_AGENT_SINGLE_THREAD))
		pthread_mutex_lock(&agent->lock);
}

static inline void rx_data_unlock(struct rdmaxfer_agent *agent)
{
	if (!(agent->attr.flags & RDMAXFER_AGENT_SINGLE_THREAD))
		pthread_mutex_unlock(&agent->lock);
}

/*
 * Lock held: the peer can take work (notifications, rdmaxfer_peer_flush()).
 * Notifications use QP 0 only, so QP 0 being up is enough: a reply to a
 * peer's first message may come before the ESTABLISHED events of its
 * other QPs (see rx_qp_comm_est()).
 */
static inline bool rx_peer_sendable(const struct rdmaxfer_peer *peer)
{
	return peer->qps[0].qp &&
	       (peer->state == RDMAXFER_PEER_CONNECTED ||
		(peer->state == RDMAXFER_PEER_CONNECTING &&
		 peer->qps[0].established));
}

/* Lock not needed: has the agent a callback to deliver to, the
 * application's or a ring's (a hint: rx_deliver_notifs() looks again
 * under the lock). */
static inline bool rx_has_callbacks(const struct rdmaxfer_agent *agent)
{
	return agent->notif_fn ||
	       __atomic_load_n(&agent->ext_cbs, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&agent->ncbs, __ATOMIC_RELAXED);
}

/* Lock held: ring held doorbells, if any (test, wait and progress). */
static inline void rx_ring_deferred(struct rdmaxfer_agent *agent)
{
	if (!rx_list_empty(&agent->deferred))
		rx_flush_deferred(agent);
}

/* mem.c */
void rx_mem_release(struct rdmaxfer_mem *mem);
void rx_mem_free_spares(struct rdmaxfer_agent *agent);

/* notif.c */
int rx_recv_bufs_alloc(struct rdmaxfer_agent *agent);
int rx_recv_bufs_post(struct rdmaxfer_agent *agent);
/* receive buffers reposted per ibv_post_srq_recv() call at most */
#define RX_RECV_BATCH	32
int rx_post_recvs(struct rdmaxfer_agent *agent, const uint32_t *index,
		  unsigned int n);
/* rx_recv_completion(): the buffer is held (queue full), not to repost */
#define RX_RECV_HELD	UINT32_MAX
uint32_t rx_recv_completion(struct rdmaxfer_agent *agent, struct ibv_wc *wc);
bool rx_notif_pop(struct rdmaxfer_agent *agent, struct rdmaxfer_notif *out);
void rx_send_slot_done(struct rdmaxfer_agent *agent, struct ibv_wc *wc);
void rx_notif_slots_free(struct rdmaxfer_peer *peer);

/* exports.c */
int rx_exports_build(const struct rdmaxfer_desc *descs, size_t n,
		     struct rx_exports *x);
int rx_set_exports(struct rdmaxfer_peer *peer,
		   const struct rdmaxfer_desc *descs, size_t n);
void rx_exports_free(struct rdmaxfer_peer *peer);

/* probe.c */
bool rx_range_accessible(const void *addr, size_t len, bool write);
int rx_copy_from_user(void *dst, const void *src, size_t len);

/*
 * xfer_plan.c (no verbs calls: also built into the host tests and the
 * fuzzer): a transfer's bytes, its work requests per QP, and the work
 * requests themselves.  rx_xfer_plan_check() validates the pairs and
 * picks striping and the piece size (-EINVAL, -ERANGE, -EOVERFLOW,
 * -E2BIG); the caller then sets fixed_qp (unstriped requests) and
 * rx_xfer_plan_count() counts (-E2BIG past RDMAXFER_XFER_MAX_WRS);
 * rx_xfer_plan_build() fills arrays of nwr entries.
 */
struct rx_xfer_plan {
	uint64_t total;			/* bytes */
	uint64_t piece;			/* the largest piece */
	unsigned int nqps;
	unsigned int fixed_qp;		/* unstriped: every piece's QP */
	bool striped;
	bool chained;			/* the notification ends the list */
	bool merged;			/* ... as the last WRITE's immediate */
	uint32_t count[RX_MAX_QPS];	/* WRs per QP */
	uint32_t off[RX_MAX_QPS];	/* each QP's first WR */
	uint32_t fill[RX_MAX_QPS];	/* each QP's next WR (build) */
	uint32_t nwr;
	unsigned int nparts;		/* QPs with WRs */
};
struct rx_xfer_arrays {
	struct ibv_send_wr *wrs;
	struct ibv_sge *sges;
	int *base_flags;
	uint32_t *wr_local;
};
int rx_check_remote_desc(const struct rdmaxfer_desc *d);
int rx_xfer_plan_check(struct rx_xfer_plan *p, enum rdmaxfer_op op,
		       const struct rdmaxfer_iov *local, size_t nlocal,
		       const struct rdmaxfer_desc *remote, size_t nremote,
		       unsigned int nqps, uint64_t max_msg_size,
		       uint64_t stripe_threshold, bool notif);
int rx_xfer_plan_count(struct rx_xfer_plan *p, const struct rdmaxfer_iov *local,
		       size_t nlocal);
void rx_xfer_plan_build(struct rx_xfer_plan *p, enum rdmaxfer_op op,
			const struct rdmaxfer_iov *local,
			const struct rdmaxfer_desc *remote, size_t nlocal,
			const struct rdmaxfer_xfer_notif *notif,
			const struct rx_xfer_arrays *a);
void rx_xfer_notif_wr(struct ibv_send_wr *wr, uint32_t value,
		      const struct rdmaxfer_desc *remote);

/* ring_info.c */
/*
 * hello.c (no verbs): the rdma_cm private data of a connect (hello) and of
 * an accept or reject (welcome).  struct rx_hello / rx_welcome hold the
 * decoded values in host order.  Decoders return 0, -EBADMSG (short, not
 * our magic, a reserved field set, qp_index/nqps out of range) or -EPROTO
 * (our magic, another version); encoders -EINVAL for a bad argument.
 */
#define RX_HELLO_LEN		32
#define RX_WELCOME_LEN		16
int rx_hello_encode(const struct rx_hello *h, void *buf, size_t cap);
int rx_hello_decode(const void *buf, size_t len, struct rx_hello *h);
int rx_welcome_encode(uint64_t agent_id, void *buf, size_t cap);
int rx_welcome_decode(const void *buf, size_t len, struct rx_welcome *w);

/* notif_msg.c (no verbs): a receive completion of the notification SRQ,
 * as far as the decoder needs it. */
enum rx_notif_wc_opcode {
	RX_NOTIF_WC_RECV,		/* IBV_WC_RECV: SEND with immediate */
	RX_NOTIF_WC_WRITE_IMM,		/* IBV_WC_RECV_RDMA_WITH_IMM */
	RX_NOTIF_WC_OTHER,
};
struct rx_notif_wc {
	enum rx_notif_wc_opcode opcode;
	bool has_imm;			/* IBV_WC_WITH_IMM */
	uint32_t imm_be;		/* wc->imm_data, network byte order */
	uint32_t byte_len;		/* wc->byte_len */
};
/* Fill n (all but peer and peer_id) from a completion and its receive
 * buffer of buf_len bytes: 0, -EPROTO (bad opcode, no immediate) or
 * -EMSGSIZE (more bytes than the buffer or RDMAXFER_NOTIF_MSG_MAX). */
int rx_notif_decode(const struct rx_notif_wc *wc, const void *buf,
		    size_t buf_len, struct rdmaxfer_notif *n);

/* error.c */
int rx_wc_errno(enum ibv_wc_status status);

static inline uint64_t rx_wr_id(const void *ptr, enum rx_tag tag, uint16_t gen)
{
	return ((uint64_t)(uintptr_t)ptr & RX_PTR_MASK & ~RX_TAG_MASK) |
	       (uint64_t)tag | ((uint64_t)(gen & 0xfff) << RX_GEN_SHIFT);
}

#endif /* RDMAXFER_INTERNAL_H */
