/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core.h - what an extension of librdmaxfer (mem/, ring/, file/) may use
 * of the core: the types whose layout it reads, the tables it fills
 * (struct rx_ext, rx_mem_ops, rx_req_ops) and the core's calls it makes.
 * The core calls an extension only through its tables and names none.
 * An extension includes this header, the public headers and its own
 * room's; never core/internal.h, never another extension's
 * (tests/check-layers.sh).  core/internal.h includes it for the core.
 *
 * One mutex per agent serialises everything that touches verbs state
 * (posting, polling, CM events, peer lists); registration-cache calls are
 * made outside it because a miss registers memory and may take
 * milliseconds.  See rdmaxfer(7), "THREAD SAFETY".
 */
#ifndef RDMAXFER_CORE_H
#define RDMAXFER_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <endian.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rdmaxfer.h"
#include "wire.h"

struct rx_ext;
struct rx_win;
struct rx_auth;

#define RX_EXT_MAX	8	/* extensions a build may register */

#define RX_EXPORT	__attribute__((visibility("default")))

#define RX_MAX_QPS		16
/*
 * Local buffers the device writes (READ targets, atomic result words):
 * local access only, so the cache may merge and grow them freely (their
 * lkey never leaves this process); a WRITE's source is registered with
 * no right at all (mem.c).  Remote rights are granted per registration.
 */
#define RX_LOCAL_ACCESS	IBV_ACCESS_LOCAL_WRITE

struct rx_list {
	struct rx_list *next, *prev;
};

static inline void rx_list_init(struct rx_list *l)
{
	l->next = l->prev = l;
}

static inline bool rx_list_empty(const struct rx_list *l)
{
	return l->next == l;
}

static inline void rx_list_add_tail(struct rx_list *l, struct rx_list *n)
{
	n->prev = l->prev;
	n->next = l;
	l->prev->next = n;
	l->prev = n;
}

static inline void rx_list_del(struct rx_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define rx_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

struct rx_qp {
	struct rdmaxfer_peer *peer;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	uint32_t qpn;
	uint16_t index;
	uint16_t gen;		/* the agent's next, for every new QP and
				 * abort (conn.c, gen_take()) */
	uint64_t gen_first;	/* agent->qp_gens when this QP got its first */
	bool established;
	bool disconnecting;
	bool disconnected;	/* its DISCONNECTED came: the CM is done */
	/* its ESTABLISHED event came: until then the CM may still be
	 * retrying the REP of a QP that data proved established (see
	 * rx_qp_comm_est()), and a DREQ now would leave it retrying */
	bool cm_est;
	bool dreq_deferred;	/* a DREQ to send once cm_est */
	uint32_t sq_used;	/* WRs posted and not yet retired */
	uint32_t cq_share;	/* CQ entries reserved for this QP (its SQ) */
	uint32_t max_inline;	/* what this QP was granted, not asked for */
	struct rx_list backlog;	/* struct rx_part waiting for SQ room */
	/* backlog holds parts posted with RDMAXFER_POST_MORE whose doorbell
	 * is not rung yet: linked on agent->deferred */
	bool deferred;
	struct rx_list defer_node;
	struct rx_list terms;	/* struct rx_term posted, completion not seen */
};

/*
 * A peer's own notification send slots (notif.c), allocated at its first
 * rdmaxfer_notif_send(): a peer whose receiver stops progressing holds
 * its own slots and no other peer's.  The slots belong to one generation
 * of QP 0; a new QP (reconnect) finds them all free again.
 */
#define RX_NOTIF_PEER_SLOTS	64
struct rx_notif_slots {
	uint8_t *buf;
	struct ibv_mr *mr;
	uint32_t *free;		/* stack of free slot indexes */
	uint32_t nfree, n;
	uint16_t gen;		/* qps[0].gen the stack is valid for */
};

/*
 * The descriptors the application said the peer exported (exports.c),
 * sorted by (rkey, addr); maxend[i] is the largest addr + len of entries
 * 0..i of the same rkey, so one binary search finds a containing entry.
 */
struct rx_exports {
	struct rdmaxfer_desc *descs;
	uint64_t *maxend;
	size_t n;
};

struct rdmaxfer_peer {
	struct rdmaxfer_agent *agent;
	struct rx_list node;		/* agent->peers */
	struct rx_list accept_node;	/* agent->accept_q while not handed out */
	enum rdmaxfer_peer_state state;
	int error;
	bool initiator;
	bool handed_out;
	/* failed quietly (rx_peer_fail_quiet()): its QPs are left to the
	 * device until the flush deadline */
	bool qps_err_deferred;
	uint64_t remote_id;
	uint64_t token;
	char host[64];
	uint16_t port;
	unsigned int nqps;
	unsigned int nestablished;
	unsigned int rr;		/* next QP for unstriped requests */
	unsigned int nreqs;		/* prepared requests alive */
	unsigned int nreqs_active;	/* posted and not complete */
	struct rx_notif_slots notif;
	/* its notifications queued or held for the application (bounded
	 * by max_notifs_peer, notif.c) */
	uint32_t nnotifs;
	/* the extension that took this peer for its own (a ring's writer:
	 * its immediates go to the ring), and its object: not the
	 * application's, not half-open; NULL: the application's */
	const struct rx_ext *owner_ext;
	void *owner;
	struct rx_exports exports;
	/* passive peer not handed out yet: freed when not CONNECTED by then;
	 * a failed peer: its requests are aborted when not flushed by then */
	int64_t deadline_ns;
	struct rx_qp qps[RX_MAX_QPS];
};

/* Per-WR bookkeeping; wr_id points here. */
struct rx_slot {
	struct rdmaxfer_req *req;
	uint16_t qp;
	uint32_t retire;	/* WRs this signalled completion retires */
	/* parts posted before this WR in the same doorbell whose own last WR
	 * went unsignalled: this completion completes them too */
	struct rx_part *riders;
};

/* The part of a request that goes to one QP. */
struct rx_part {
	struct rdmaxfer_req *req;
	unsigned int qp;
	struct ibv_send_wr *wrs;
	struct rx_slot *slots;
	int *base_flags;
	uint32_t n;
	uint32_t cursor;	/* next WR to post */
	struct rx_list node;	/* qp->backlog */
	/* while a doorbell chain is built: where this part's piece ends and
	 * what its last WR pointed to before it was linked to the next */
	uint32_t seg_end;
	struct ibv_send_wr *seg_next;
	struct rx_part *rider_next;	/* slot->riders */
};

enum rx_req_state {
	RX_REQ_IDLE = 0,
	RX_REQ_ACTIVE,
	RX_REQ_DONE,
	RX_REQ_FAILED,
};

struct rdmaxfer_req {
	struct rdmaxfer_peer *peer;
	struct rx_list node;		/* agent->reqs */
	enum rdmaxfer_op op;
	enum rx_req_state state;
	int err;
	int wc_status;			/* -1: none */
	uint64_t bytes;

	size_t nlocal;
	struct rdmaxfer_iov *local;
	struct regcache_entry **ents;	/* held from post to post */
	uint64_t regs_gen;		/* regcache_generation() before their check */
	uint32_t *wr_local;		/* WR -> local index (-1: none) */

	uint32_t nwr;
	struct ibv_send_wr *wrs;
	struct ibv_sge *sges;
	struct rx_slot *slots;
	int *base_flags;
	unsigned int nparts;		/* parts[] used */
	unsigned int unposted;		/* parts with WRs still to post */
	uint32_t signals;		/* signalled WRs outstanding */

	/* a notification after all data when the data spans several QPs */
	bool notif_deferred;
	bool notif_sent;
	struct ibv_send_wr notif_wr;
	struct rx_slot notif_slot;
	int notif_flags;
	struct rx_part notif_part;

	/* atomics */
	uint64_t *result;
	struct ibv_sge atomic_sge;

	/* a request of another kind (a file request): its table and its
	 * own state, where its state is; req->state stays IDLE so the verbs
	 * paths never take it for one of theirs.  NULL: a verbs request */
	const struct rx_req_ops *ops;
	void *priv;

	/* the completion callback (rdmaxfer_req_set_cb()), and its place
	 * on agent->cb_q while it is due */
	rdmaxfer_req_fn cb;
	void *cb_user;
	bool cb_due;
	int cb_status;			/* rdmaxfer_req_test()'s, then */
	struct rx_list cb_node;

	/* one per QP the request uses (prepare.c's rx_req_alloc() makes
	 * room for nparts of them, and its arrays above follow them in the
	 * same block); none in a file request */
	struct rx_part parts[];
};

struct rdmaxfer_mem {
	struct rdmaxfer_agent *agent;
	struct rx_list node;		/* agent->mems or ->mem_spares */
	struct regcache_entry *entry;
	struct regcache *cache;		/* entry's: the agent's or its ODP one */
	uint8_t *addr;
	size_t len;
	enum rdmaxfer_mem_kind kind;
	uint32_t rkey;
	uint32_t access;		/* RDMAXFER_ACCESS_*; 0: local only */
	/* a handle of a memory kind with more than a cache entry (dma-buf,
	 * device memory): its table and its own state; NULL for plain cache
	 * handles (HOST, ODP) */
	const struct rx_mem_ops *ops;
	void *priv;
	struct rx_win *win;		/* RDMAXFER_RKEY_WINDOW: its window */
};

struct rx_notif_q {
	struct rdmaxfer_notif *ring;
	size_t cap, head, count;
};

/*
 * A notification for the application that arrived while the queue was
 * full: its receive buffer is held, not reposted, until the application
 * takes from the queue (notif.c).  A FIFO of at most srq_depth entries,
 * since each holds one of the SRQ's buffers.
 */
struct rx_notif_held {
	struct rdmaxfer_peer *peer;
	uint32_t index;			/* the receive buffer */
	uint32_t value;
	uint32_t len;			/* MSG payload, still in the buffer */
	enum rdmaxfer_notif_type type;
};

/* An affiliated or unaffiliated async event, as far as an agent needs it
 * (the ibv_async_event itself is acked at once: see async.c). */
struct rx_async_ev {
	enum ibv_event_type type;
	uint32_t qpn;			/* QP events */
	uint8_t port;			/* port events */
};

#define RX_ASYNC_RING		64

/* freed handle structs an agent keeps for reuse (mem.c) */
#define RX_MEM_SPARES		64

/*
 * A spinlock for sections of a few stores (the memory handles' list):
 * inline, because pthread_spin_lock() and _unlock() are two calls through
 * the PLT per section, which a profile of the handle hit in the 7.3 guest
 * put at about a sixth of rdmaxfer_mem_register() + _deregister().  The
 * exchange is the acquire, the store the release, as in glibc's.
 */
static inline void rx_spin_lock(int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#else
			;
#endif
}

static inline void rx_spin_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

struct rdmaxfer_agent {
	/* first: test_rdmaxfer_single.c counts the locks of this address */
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* progress thread -> waiters */
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent_info info;

	struct ibv_context *ctx;	/* librdmacm's context of the device */
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;
	struct ibv_pd *pd;
	/* a read-only MR pins PROT_NONE memory here (agent.c) */
	bool ro_pin_forced;
	struct ibv_comp_channel *comp_ch;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *listen_id;
	uint16_t listen_port;
	char listen_host[48];
	int listen_family;
	uint8_t listen_addr[16];

	struct regcache *cache;
	/* ext.c: the registered extensions, each with its state on this
	 * agent (rx_agent_ext()); ext[0..n_ext_init - 1] were initialised */
	struct {
		const struct rx_ext *ext;
		void *state;
	} ext[RX_EXT_MAX];
	unsigned int n_ext;
	unsigned int n_ext_init;
	/* bit i: ext[i] has work for rdmaxfer_progress() (rx_ext_busy()) */
	uint32_t ext_busy;

	uint8_t *recv_buf;
	struct ibv_mr *recv_mr;

	struct rx_list peers;
	struct rx_list reqs;
	/*
	 * Memory handles (mem.c): the live ones, and up to RX_MEM_SPARES
	 * freed handle structs kept for the next rdmaxfer_mem_register(), both
	 * under mem_lock (a spinlock held for a few stores, never across a
	 * call out of this library: rx_spin_lock()), so a cache hit takes no
	 * agent-wide lock and allocates nothing.
	 */
	int mem_lock;
	struct rx_list mems;
	struct rx_list mem_spares;
	unsigned int nspares;
	struct rx_list deferred;	/* struct rx_qp with doorbells to ring */
	struct rx_list accept_q;
	struct rx_notif_q notifs;
	struct rx_notif_held *held;	/* FIFO, attr.srq_depth entries */
	uint32_t held_head, nheld;
	/* hostile-input counters (rdmaxfer_agent_stats()), lock held */
	struct rdmaxfer_agent_stats stats;
	struct rx_auth *auth;		/* the shared key; NULL: none (auth.c) */
	/* extensions' objects with a callback of their own (rings): written
	 * under the lock, read without it as a hint, like notif_fn
	 * (rx_has_callbacks()) */
	uint32_t ext_cbs;
	rdmaxfer_notif_fn notif_fn;
	void *notif_user;
	bool delivering;		/* a thread is running the callback */
	pthread_t deliverer;		/* that thread, while delivering */

	uint32_t rd_atom;
	bool cq_armed;
	/*
	 * CQ sizing: every QP's send queue plus the SRQ must fit, so the CQ
	 * can never overflow (an overflowed CQ loses completions for good).
	 * cq_need counts the entries reserved by live QPs and the SRQ;
	 * cq_stale those of QPs destroyed since the CQ was last seen empty
	 * (their completions may still sit in it).  cq_size is the CQ's
	 * current capacity; it grows with ibv_resize_cq() as QPs come.
	 */
	uint32_t cq_size;
	uint32_t cq_need;
	uint32_t cq_stale;
	/* QP generations handed out (conn.c, gen_take()), and the oldest of
	 * a QP destroyed since the CQ was last seen empty (UINT64_MAX: none):
	 * its completions may still be in the CQ */
	uint64_t qp_gens;
	uint64_t gen_stale_min;
	/* set by a CQ/SRQ error, device removal or a fatal device event:
	 * nothing can complete any more, every call fails with it */
	int fatal;
	/* between IBV_EVENT_PORT_ERR and _PORT_ACTIVE: no DREQ is sent
	 * (it cannot arrive, and rxe's CM QP fails on a send to a port that
	 * is down, which breaks every later connection on the device) */
	bool port_down;

	/* async events for this agent (guarded by the global async lock) */
	struct rx_list async_node;	/* its device's agent list */
	struct rx_async_ev async_ring[RX_ASYNC_RING];
	unsigned int async_head, async_count;
	bool async_lost;		/* ring overflowed: ask the device */
	struct rx_qp *qpn_cache;	/* last rx_peer_by_qpn() hit */
	/* earliest deadline_ns of a peer that has one, 0: none */
	int64_t next_deadline_ns;

	pthread_t thread;
	bool thread_running;
	bool stop;
	int wake_fd;			/* eventfd: stop the thread, or an
					 * async event was queued for us */
	uint64_t progress_gen;		/* bumped after every thread round
					 * and every wake of a sleeping
					 * caller (rx_block()) */
	/*
	 * The event fd (wait.c, rdmaxfer(7) "PROGRESS AND WAITING").
	 * ep_inner: an epoll set over what progress reads (the completion
	 * and CM channels, the async fd, wake_fd, timer_fd, the caches'
	 * fds), where a blocked caller or the progress thread sleeps.
	 * ep_fd, rdmaxfer_agent_fd(): ep_inner and app_fd in caller mode,
	 * app_fd alone with a progress thread (which owns the channels).
	 * app_fd is written when work was done for the application while
	 * it was armed (rdmaxfer_agent_arm() returned 0), by anyone but
	 * the application's own rdmaxfer_progress(); app_gen counts such
	 * work and app_seen is its value at the last arm or progress.
	 */
	int ep_inner;
	int ep_fd;
	int app_fd;
	int timer_fd;			/* next_deadline_ns, CLOCK_MONOTONIC */
	int64_t timer_ns;		/* what timer_fd is set to, 0: none */
	bool sweep_period;		/* a cache without an fd: sweep per
					 * period (rx_progress_thread()) */
	bool armed;
	pthread_t armer;		/* the thread that armed last */
	bool app_hot;			/* app_fd written since last read */
	bool poller;			/* a caller sleeps in ep_inner */
	bool poller_kicked;		/* and wake_fd was written for it */
	uint64_t app_gen;
	uint64_t app_seen;
	/* requests whose completion callback is due (xfer.c), and their
	 * count, read without the lock as a hint (rx_has_callbacks()) */
	struct rx_list cb_q;
	uint32_t ncbs;
	/* the cache's generation at the last rx_mem_sweep() (atomic) */
	uint64_t sweep_gen;
	/* listed handles with remote rights: changed under mem_lock, read
	 * without it (atomic), so that a register skips the sweep while no
	 * key of the agent can outlive its memory (mem.c) */
	uint32_t remote_mems;
	uint32_t cm_tick;		/* progress_data_locked() turns (xfer.c) */
	/* struct rx_dep: rings, ring writers, bound file engines */
	struct rx_list deps;
};

/*
 * An object the application holds that lives on the agent's resources (a
 * ring, a ring writer, a file engine bound to the agent): when the agent
 * is destroyed first, gone() runs after its peers and requests are freed
 * and before its memory handles are; it forgets every pointer into the
 * agent, and the object's own destroy call then frees what is left
 * (rdmaxfer_agent_create(3), "Order of destruction").
 */
struct rx_dep {
	struct rx_list node;		/* agent->deps, under agent->lock */
	void (*gone)(struct rx_dep *dep);
};

/*
 * An extension of the core (mem/, ring/, file/): its per-agent state and
 * the hooks the core calls.  Registered at link time: RX_EXT_REGISTER puts
 * a pointer to the table in the section rx_ext, which the linker gathers
 * between __start_rx_ext and __stop_rx_ext in link order (the order of
 * librdmaxfer_la_SOURCES).  The core walks the section (core/ext.c) and
 * names no extension.  A static archive would drop the objects nothing
 * references, so the library is shared only (LT_INIT disable-static).
 */
/* How a registration by address is made (rx_mem_ops.reg). */
struct rx_mem_reg {
	struct regcache *cache;		/* the agent's pinned cache, or the kind's */
	enum rdmaxfer_mem_kind kind;	/* what its descriptors say */
};

/*
 * A memory kind other than HOST (the core's own).  A handle whose kind
 * holds more than its cache entry carries mem->ops = the table and
 * mem->priv; plain cache handles have mem->ops NULL.
 */
struct rx_mem_ops {
	enum rdmaxfer_mem_kind kind;
	/* rdmaxfer_mem_register_access() of an address of this kind, r
	 * filled with the pinned cache and the kind: 0 and *r as the
	 * registration goes, or -errno; NULL: not registered by address
	 * (-EINVAL) */
	int (*reg)(struct rdmaxfer_agent *agent, void *state, uint32_t access,
		   struct rx_mem_reg *r);
	/* what the handle holds besides its cache entry, after the entry's
	 * put (rdmaxfer_mem_deregister(), agent destroy); frees mem->priv */
	void (*dereg)(struct rdmaxfer_mem *mem);
	/* rdmaxfer_mem_desc(); NULL: the host form (address, rkey) */
	int (*describe)(const struct rdmaxfer_mem *mem, size_t offset,
			size_t len, struct rdmaxfer_desc *desc);
};

/*
 * A request kind other than the core's verbs requests (req->ops NULL),
 * called by the public request calls without the agent lock.
 */
struct rx_req_ops {
	int (*post)(struct rdmaxfer_req *req);
	int (*test)(struct rdmaxfer_req *req);
	int (*wait)(struct rdmaxfer_req *req, int timeout_ms);
	int (*cancel)(struct rdmaxfer_req *req);	/* NULL: -EOPNOTSUPP */
	/* rdmaxfer_req_free(): -EBUSY while in progress, else forget req
	 * and free req->priv; the core then unlinks and frees req */
	int (*free)(struct rdmaxfer_req *req);
	/* agent destroy with req alive: forget it, free req->priv */
	void (*release)(struct rdmaxfer_req *req);
	const char *(*strerror)(const struct rdmaxfer_req *req);
};

struct rx_ext {
	const char *name;
	size_t state_size;		/* per agent, zeroed, freed by the core */
	const struct rx_mem_ops *mem;	/* NULL: not a memory kind */
	/* rdmaxfer_agent_create(), after the registration cache, in
	 * registry order; -errno fails the create */
	int (*init)(struct rdmaxfer_agent *agent, void *state);
	/* rdmaxfer_agent_destroy() (after peers, requests, deps and
	 * handles, before the cache), or a create that failed after init:
	 * reverse order, only where init ran */
	void (*fini)(struct rdmaxfer_agent *agent, void *state);
	/* rdmaxfer_progress(), no lock held, while rx_ext_busy() said so */
	void (*progress)(struct rdmaxfer_agent *agent, void *state);
	/* agent lock held: a peer's notification, before the application's
	 * queue (true: the extension's, taken) */
	bool (*notif)(struct rdmaxfer_agent *agent, void *state,
		      struct rdmaxfer_peer *peer,
		      const struct rdmaxfer_notif *n);
	/* agent lock held: deliveries of its own waiting; run them (by the
	 * one deliverer, rx_deliver_notifs(), the lock dropped around each
	 * callback) */
	bool (*pending)(struct rdmaxfer_agent *agent, void *state);
	void (*deliver)(struct rdmaxfer_agent *agent, void *state);
	/* agent lock held: a peer it owns (peer->owner_ext) is freed */
	void (*peer_gone)(struct rdmaxfer_peer *peer);
	/* a registration cache of its own (NULL: none), whose invalidations
	 * rx_mem_sweep() applies with the agent's, so that a key whose
	 * memory went dies as soon there */
	struct regcache *(*cache)(void *state);
};

#define RX_EXT_REGISTER(ext)						\
	static const struct rx_ext *const rx_ext_entry_##ext		\
	__attribute__((used, section("rx_ext"),			\
		       aligned(sizeof(void *)))) = &(ext)

/* The state of ext on agent; NULL when ext is not registered there (inline:
 * the host tests that build one extension's file link no core/ext.c). */
static inline void *rx_agent_ext(const struct rdmaxfer_agent *agent,
				 const struct rx_ext *ext)
{
	unsigned int i;

	for (i = 0; i < agent->n_ext; i++)
		if (agent->ext[i].ext == ext)
			return agent->ext[i].state;
	return NULL;
}

/* ext.c, lock held: ext has (or no longer has) work for
 * rdmaxfer_progress() */
void rx_ext_busy(struct rdmaxfer_agent *agent, const struct rx_ext *ext,
		 bool busy);

/* agent.c */
void rx_dep_add(struct rdmaxfer_agent *agent, struct rx_dep *dep,
		void (*gone)(struct rx_dep *dep));
void rx_dep_del(struct rdmaxfer_agent *agent, struct rx_dep *dep);

/* progress.c */
int rx_progress_locked(struct rdmaxfer_agent *agent);
int rx_block(struct rdmaxfer_agent *agent, int64_t deadline_ns);
int64_t rx_now_ns(void);
int64_t rx_deadline(int timeout_ms);

/* peer.c */
void rx_peer_fail(struct rdmaxfer_peer *peer, int err);
/* How long a failed peer's QPs may take to flush before its requests are
 * failed without their completions (also what a reconnect waits). */
#define RX_FLUSH_TIMEOUT_MS	2000

/* xfer.c */
void rx_req_release(struct rdmaxfer_agent *agent, struct rdmaxfer_req *req);
int rx_state_result(enum rx_req_state state, int err);
int rx_req_set_imm(struct rdmaxfer_req *req, uint32_t value);
/* a request of kind ops on peer (0, or -ENOMEM): allocated, IDLE, not yet
 * the agent's; rx_req_link() lists it on the agent, rx_req_unlink()
 * takes it off (each takes the agent lock) */
int rx_req_new(struct rdmaxfer_peer *peer, enum rdmaxfer_op op,
	       uint64_t bytes, const struct rx_req_ops *ops, void *priv,
	       struct rdmaxfer_req **reqp);
void rx_req_link(struct rdmaxfer_req *req);
void rx_req_unlink(struct rdmaxfer_req *req);

/*
 * Must a waiting call progress the agent itself?  Without a progress
 * thread, always; with one, when the caller is that thread (a callback
 * it runs that blocks, in rdmaxfer_req_wait() for one): waiting for the
 * thread's next round would wait for ever.  Callbacks are not re-entered
 * meanwhile (rx_deliver_notifs()): notifications queue until it returns.
 */
static inline bool rx_self_progress(const struct rdmaxfer_agent *agent)
{
	return !agent->thread_running ||
	       pthread_equal(agent->thread, pthread_self());
}

/* mem.c */
int rx_mem_register(struct rdmaxfer_agent *agent, struct regcache *cache,
		    void *addr, size_t len, enum rdmaxfer_mem_kind kind,
		    uint32_t access, unsigned int flags,
		    struct rdmaxfer_mem **memp);
void rx_mem_add(struct rdmaxfer_mem *mem);
uint32_t rx_ibv_access(uint32_t access);	/* RDMAXFER_ACCESS_* -> IBV_ */
void rx_mem_sweep(struct rdmaxfer_agent *agent, bool always);
void rx_mem_grace(struct rdmaxfer_agent *agent);
int rx_cache_get(struct regcache *cache, void *addr, size_t len,
		 uint32_t access, unsigned int flags,
		 struct regcache_entry **entryp);

/* loopback.c: a loopback RC QP (connected to dqpn on the agent's port)
 * and a signalled work request on it, waited for (2 s): 0 or -errno */
int rx_loopback_connect(struct rdmaxfer_agent *agent, struct ibv_qp *q,
			uint32_t dqpn);
int rx_loopback_wait(struct ibv_cq *cq);
int rx_loopback_post(struct ibv_qp *qp, struct ibv_cq *cq,
		     struct ibv_send_wr *wr);

/* notif.c */
void rx_deliver_notifs(struct rdmaxfer_agent *agent);

/* exports.c */
int rx_check_remote(const struct rdmaxfer_peer *peer, uint64_t addr,
		    uint64_t len, uint32_t rkey);	/* lock held */

/* blob.c (no verbs: also built into the host tests and the fuzzer) */
#define RX_MD_HDR_LEN		176
#define RX_MD_DESC_LEN		24
size_t rx_md_size(size_t ndescs);
int rx_md_encode(const struct rdmaxfer_md *md, void *buf, size_t cap,
		 size_t *lenp);

/* ring/ring_info.c: the ring's wire formats (no verbs; built into the
 * host tests, which include internal.h) */
int rx_ring_info_check(const struct rdmaxfer_ring_info *info);
void rx_ring_span(uint64_t head, uint32_t count, uint32_t n,
		  uint32_t *start, uint32_t *first);
uint32_t rx_ring_samples_imm(uint64_t head, uint32_t count);
int rx_ring_samples_head(uint32_t imm, uint64_t next, uint32_t n,
			 uint64_t *head, uint32_t *count);
#define RX_RING_ATTACH_VALUE	0x41584452U	/* "RDXA" */
#define RX_RING_ATTACH_VERSION	1
#define RX_RING_ATTACH_LEN	24
int rx_ring_attach_encode(uint64_t addr, uint32_t rkey, void *buf,
			  size_t cap);
int rx_ring_attach_decode(const void *buf, size_t len, uint64_t *addr,
			  uint32_t *rkey);

#endif /* RDMAXFER_CORE_H */
