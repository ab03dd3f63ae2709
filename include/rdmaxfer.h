/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmaxfer.h - librdmaxfer, an RDMA transfer runtime on rdma-core.
 *
 * The model follows NIXL's transfer API: an agent owns one RDMA device
 * port (protection domain, completion queue, completion channel, shared
 * receive queue and a libregcache instance); it connects to many peers
 * (several RC queue pairs each); memory is registered through the cache
 * and exported as compact remote descriptors; transfers are prepared once
 * (READ or WRITE between a local buffer list and a remote descriptor list,
 * with an optional notification) and posted, tested and waited on as many
 * times as needed.  Atomics and notifications complete the set.
 *
 * Conventions (as liburing): every action returns 0 or a negative errno and
 * never relies on errno; counters return a non-negative count or -errno;
 * constructors hand the object out through their last argument; accessors
 * that cannot fail return the value.  The overview, the ordering rules and
 * the thread-safety model are in rdmaxfer(7).
 *
 * ABI: additive changes only.  Attribute structures carry reserved fields
 * that must be zero (rdmaxfer_agent_attr_init() does that).
 */
#ifndef RDMAXFER_H
#define RDMAXFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <regcache.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmaxfer_agent;
struct rdmaxfer_peer;
struct rdmaxfer_mem;
struct rdmaxfer_req;
struct rdmaxfer_desc;		/* memory, below */

/* ---------------------------------------------------------------- agent */

enum rdmaxfer_progress_mode {
	/* test/wait/progress calls drive the CQ and the CM events */
	RDMAXFER_PROGRESS_CALLER = 0,
	/* a progress thread owned by the agent drives them */
	RDMAXFER_PROGRESS_THREAD = 1,
};

#define RDMAXFER_NAME_MAX	32	/* agent name, NUL included */
#define RDMAXFER_DEVNAME_MAX	64	/* device name, NUL included */

/* struct rdmaxfer_agent_attr.flags */
#define RDMAXFER_AGENT_NO_ENV	(1U << 0)	/* ignore RDMAXFER_* variables */
/*
 * Keep remote-access registrations cached after their last
 * rdmaxfer_mem_deregister() (as UCX and libfabric do): a later register of
 * the same range is a hit, and an rkey handed out earlier keeps working
 * until the cache evicts or invalidates the registration.  Off by default:
 * then an rkey dies with the last handle of its range.  Also set by
 * RDMAXFER_CACHE_RKEYS=1 unless RDMAXFER_AGENT_NO_ENV.  See rdmaxfer(7).
 */
#define RDMAXFER_AGENT_CACHE_RKEYS (1U << 1)
/*
 * The application promises to call into this agent, and into every peer,
 * request, memory handle, ring and file of it, from one thread at a time
 * (UCX's UCS_THREAD_MODE_SINGLE, libfabric's FI_THREAD_DOMAIN).  The data
 * path (rdmaxfer_req_post(), rdmaxfer_req_post_flags(),
 * rdmaxfer_req_post_list(), rdmaxfer_req_test()) then takes no lock.
 * Needs RDMAXFER_PROGRESS_CALLER: with RDMAXFER_PROGRESS_THREAD,
 * rdmaxfer_agent_create() fails with -EINVAL.
 * A library that predates the flag ignores it and locks: safe, only
 * slower.  See rdmaxfer(7).
 */
#define RDMAXFER_AGENT_SINGLE_THREAD (1U << 2)

/*
 * Agent attributes.  Initialise with rdmaxfer_agent_attr_init(), then set
 * what matters; zero means "default" for every number.
 */
struct rdmaxfer_agent_attr {
	/* device name; NULL: $RDMAXFER_DEVICE, else the first ACTIVE port */
	const char *device;
	/* port number; 0: the first ACTIVE port of the device */
	uint8_t port;
	/* GID index; -1: auto (the RoCE v2 IPv4 GID, else the RoCE v2, else 0) */
	int gid_index;
	uint32_t sq_depth;		/* send WRs per QP (default 256) */
	uint32_t srq_depth;		/* receive buffers of the agent (default 256) */
	/* initial CQ entries (default 4096); the CQ grows as QPs are added
	 * so that every QP's send queue and the SRQ always fit */
	uint32_t cq_depth;
	uint32_t qps_per_peer;		/* RC QPs per peer (default 1, max 16) */
	/* signal at least every N work requests of a QP (default sq_depth / 4) */
	uint32_t signal_interval;
	/* requested max_inline_data (default 64); 0 after init: no inline */
	uint32_t max_inline;
	/* requests at or above this size are striped over the peer's QPs
	 * (default 64 KiB) */
	uint32_t stripe_threshold;
	int cm_timeout_ms;		/* rdma_cm steps (default 5000) */
	enum rdmaxfer_progress_mode progress;
	/* registration cache: REGCACHE_MONITOR_AUTO (default), _KMOD, _UFFD,
	 * or _NONE (no caching: every registration is a real ibv_reg_mr) */
	enum regcache_monitor_type cache_monitor;
	size_t cache_max_entries;	/* 0: libregcache default */
	size_t cache_max_bytes;		/* 0: libregcache default */
	const char *name;		/* shown in metadata; NULL: "rdmaxfer" */
	uint32_t flags;			/* RDMAXFER_AGENT_* */
	/* passive peers not yet handed out by rdmaxfer_accept() (handshaking
	 * or waiting in the accept queue) beyond which new connection
	 * attempts are refused (default RDMAXFER_DEF_MAX_HALF_OPEN) */
	uint32_t max_half_open;
	/* enum rdmaxfer_odp_policy: whether RDMAXFER_MEM_ODP registrations
	 * use on-demand paging (0: $RDMAXFER_ODP, else auto; LIBRDMAXFER_1.2,
	 * was a reserved zero field) */
	uint32_t odp;
	/* notifications queued for the application: at most max_notifs
	 * (default RDMAXFER_DEF_MAX_NOTIFS), beyond which the agent holds
	 * its receive buffers back and senders wait (RNR), and at most
	 * max_notifs_peer of one peer (default RDMAXFER_DEF_MAX_NOTIFS_PEER,
	 * at most max_notifs), beyond which that peer is failed; see
	 * rdmaxfer_notif(3) (LIBRDMAXFER_1.12, were reserved[0], whose
	 * eight-byte alignment keeps them where it was) */
	uint32_t max_notifs __attribute__((aligned(8)));
	uint32_t max_notifs_peer;
	/* enum rdmaxfer_rkey_mode: how remote keys are made (0: auto, or
	 * $RDMAXFER_RKEY_MODE; LIBRDMAXFER_1.14, was reserved[0], whose
	 * eight-byte alignment keeps it where it was) */
	uint32_t rkey_mode __attribute__((aligned(8)));
	uint32_t reserved32;		/* must be zero */
	/*
	 * Connection authentication: a file holding the key this agent
	 * shares with its peers (16 to 1024 bytes, read once at creation;
	 * refused with -EACCES when group or others may access it).  Every
	 * connection, both ways, then proves the key with HMAC-SHA256
	 * challenges before any QP is set up, and a peer without it is
	 * refused with -EKEYREJECTED.  NULL: $RDMAXFER_AUTH_KEY_FILE, else
	 * none.  See rdmaxfer(7), Security.  It was reserved[1] (eight-byte
	 * aligned to keep the layout): a library before it refuses a key
	 * with -EINVAL, never connects without one.
	 */
	const char *auth_key_file __attribute__((aligned(8)));
};

/*
 * struct rdmaxfer_agent_attr.rkey_mode: what a remote key
 * (rdmaxfer_mem_desc()'s rkey) is.  See rdmaxfer_mem_register(3).
 */
enum rdmaxfer_rkey_mode {
	/* window where the device has memory windows that enforce their
	 * own bounds (checked at create), else exact */
	RDMAXFER_RKEY_AUTO = 0,
	/* an exact registration per range and rights, deregistered with
	 * the range's last handle */
	RDMAXFER_RKEY_EXACT = 1,
	/* a memory window per handle, bound to exactly its range and
	 * rights over a kept registration without remote rights, and
	 * invalidated at its deregister; -EOPNOTSUPP at create where the
	 * device has no working windows */
	RDMAXFER_RKEY_WINDOW = 2,
	/* an exact registration kept after its last deregister (the same
	 * as RDMAXFER_AGENT_CACHE_RKEYS): the opt-in that trades safety
	 * for speed */
	RDMAXFER_RKEY_CACHED = 3,
};

#define RDMAXFER_DEF_MAX_HALF_OPEN	64
#define RDMAXFER_DEF_MAX_NOTIFS		4096
#define RDMAXFER_DEF_MAX_NOTIFS_PEER	1024

/* Fill attr with defaults (gid_index -1, max_inline 64, the rest 0). */
void rdmaxfer_agent_attr_init(struct rdmaxfer_agent_attr *attr);

/*
 * Open the device, allocate PD, CQ, completion channel, SRQ and the
 * registration cache, and start the progress thread if asked for.
 * attr may be NULL (all defaults).  Errors: -EINVAL (bad attribute),
 * -ENODEV (no such device, no ACTIVE port), -ENOMEM, verbs errors.
 */
int rdmaxfer_agent_create(const struct rdmaxfer_agent_attr *attr,
			  struct rdmaxfer_agent **agentp);

/* Disconnect every peer, stop the thread, free everything.  Requests (in
 * any state, in flight included) and memory handles still alive are freed
 * with it (do not use them after).  Rings, writers and file engines may
 * outlive it: their destroy calls then free what is left (the ring's and
 * the writer's return -ENODEV; rdmaxfer_agent_create(3)).  Refused from a
 * callback on the agent's own progress thread. */
void rdmaxfer_agent_destroy(struct rdmaxfer_agent *agent);

/* What the agent runs on (values resolved from the attributes). */
struct rdmaxfer_agent_info {
	char device[RDMAXFER_DEVNAME_MAX];
	char name[RDMAXFER_NAME_MAX];
	uint64_t agent_id;		/* random, identifies the agent to peers */
	uint8_t port;
	uint8_t gid[16];
	int gid_index;
	uint32_t max_msg_size;		/* port max message size: split unit */
	uint32_t max_inline;		/* what the QPs got */
	uint32_t qps_per_peer;
	uint32_t sq_depth;
	uint32_t srq_depth;
	uint32_t signal_interval;
	uint32_t stripe_threshold;
	enum rdmaxfer_progress_mode progress;
	const char *cache_monitor;	/* "kmod", "uffd" or "none" */
	/* RDMAXFER_AGENT_* in effect, variables applied (so
	 * RDMAXFER_AGENT_CACHE_RKEYS says how remote keys live) */
	uint32_t flags;
	/* counters, read at the time of the query */
	uint32_t cq_entries;		/* current CQ capacity */
	uint32_t npeers;		/* peers alive, any state */
	uint32_t npeers_half_open;	/* passive, not handed out yet */
	uint32_t max_half_open;
	/*
	 * Of flags, the bits an environment variable set (today only
	 * RDMAXFER_AGENT_CACHE_RKEYS, from RDMAXFER_CACHE_RKEYS=1): a mode
	 * that trades safety for speed which the program did not ask for.
	 * Was reserved32, always 0, so an older library reports 0.
	 */
	uint32_t env_flags;
	/* enum rdmaxfer_rkey_mode in effect (never AUTO; LIBRDMAXFER_1.14,
	 * was reserved[0]: an older library reports 0) */
	uint32_t rkey_mode __attribute__((aligned(8)));
	uint32_t rkey_flags;		/* RDMAXFER_RKEY_F_* */
};

/* struct rdmaxfer_agent_info.rkey_flags */
#define RDMAXFER_RKEY_F_DEVICE_MW	(1U << 0)	/* the device reports type-1 windows */
#define RDMAXFER_RKEY_F_MW_BOUNDS	(1U << 1)	/* ... and refused a WRITE one byte past one */
#define RDMAXFER_RKEY_F_ENV		(1U << 2)	/* rkey_mode from $RDMAXFER_RKEY_MODE */
int rdmaxfer_agent_query(struct rdmaxfer_agent *agent,
			 struct rdmaxfer_agent_info *info);

/* Statistics of the agent's registration cache (libregcache's). */
int rdmaxfer_agent_cache_stats(struct rdmaxfer_agent *agent,
			       struct regcache_stats *stats);

/*
 * What peers sent that the agent refused, dropped or held back, since it
 * was created (rdmaxfer_agent_stats(3), LIBRDMAXFER_1.12).  The struct
 * grows at its end: rdmaxfer_agent_stats() fills the first size bytes
 * and zeroes what it does not know.
 */
struct rdmaxfer_agent_stats {
	uint32_t max_notifs;		/* the bounds in effect */
	uint32_t max_notifs_peer;
	uint64_t notifs;		/* queued for the application */
	uint64_t notifs_queued;		/* ... in the queue now */
	uint64_t notifs_peak;		/* ... the most at once */
	uint64_t notifs_held;		/* receive buffers held back now */
	uint64_t notifs_backpressured;	/* ... receives held back in all */
	uint64_t notifs_dropped;	/* of a peer over max_notifs_peer */
	uint64_t notifs_malformed;	/* no immediate, bad opcode, too long,
					 * a failed receive: dropped */
	uint64_t peers_failed_flood;	/* failed over max_notifs_peer */
	uint64_t peers_failed_proto;	/* failed for a protocol error */
	uint64_t peers_remote_errors;	/* their RDMA refused on our side */
	uint64_t hellos_bad;		/* connect requests refused: bad or
					 * foreign hello, another version */
	uint64_t half_open_refused;	/* refused at max_half_open */
	uint64_t half_open_freed;	/* passive peers never accepted, freed
					 * when they failed or timed out */
	uint64_t ring_grains;		/* immediates queued for rings */
	uint64_t ring_proto_errors;	/* refused by a ring: out of order, a
					 * jump, more than its slots, an
					 * attach naming no ring */
	/* RDMAXFER_RKEY_WINDOW (LIBRDMAXFER_1.14): windows bound, unbound
	 * at a deregister, unbound because their memory went, and unbinds
	 * that failed (the bind QP in error) and were done by freeing the
	 * window instead */
	uint64_t windows_bound;
	uint64_t windows_unbound;
	uint64_t windows_revoked;
	uint64_t window_fallbacks;
	uint64_t peers_auth_refused;	/* connections refused by
					 * authentication, either side: no
					 * key against a key, a wrong or
					 * replayed proof; zero from a
					 * library before it (size) */
};
int rdmaxfer_agent_stats(struct rdmaxfer_agent *agent,
			 struct rdmaxfer_agent_stats *stats, size_t size);

/*
 * Drive completions and connection events once, without blocking.
 * Returns the number of completions processed, or -errno.  Needed only in
 * RDMAXFER_PROGRESS_CALLER mode when not calling test/wait (for example on
 * a passive side that only accepts peers and receives notifications).
 */
int rdmaxfer_progress(struct rdmaxfer_agent *agent);

/*
 * The agent's event fd, for an application's own epoll/poll loop: it
 * becomes readable when the agent may have work (a completion, a
 * notification, a connection or async event, a deadline, a file or ring
 * request).  Do not read it; call rdmaxfer_agent_arm() before sleeping
 * and rdmaxfer_progress() (or test/wait) when it says so or the fd woke
 * you.  Returns the fd (the agent's: never close it), or -EINVAL.
 * (LIBRDMAXFER_1.14)
 */
int rdmaxfer_agent_fd(struct rdmaxfer_agent *agent);

/*
 * Prepare to sleep on rdmaxfer_agent_fd(): 0 when nothing is pending and
 * the fd will become readable on the next event; -EAGAIN when work is
 * already pending (progress, take notifications, test requests, then
 * arm again), so no wakeup is lost (the contract of UCX's
 * ucp_worker_arm()).  Other errors: -EINVAL, the agent's fatal error.
 * (LIBRDMAXFER_1.14)
 */
int rdmaxfer_agent_arm(struct rdmaxfer_agent *agent);

/* ---------------------------------------------------------- connections */

enum rdmaxfer_peer_state {
	RDMAXFER_PEER_CONNECTING = 0,
	RDMAXFER_PEER_CONNECTED = 1,
	/* a QP failed (WC error): requests fail with -ENOTCONN until
	 * rdmaxfer_peer_reconnect() */
	RDMAXFER_PEER_ERROR = 2,
	/* the remote side disconnected or died */
	RDMAXFER_PEER_DISCONNECTED = 3,
};

/*
 * Listen for peers on host:port (host NULL: the device's first IPv4
 * address; port 0: an ephemeral port, see rdmaxfer_listen_port()).
 * Incoming connections are accepted by the progress engine (the thread,
 * rdmaxfer_progress(), or rdmaxfer_accept()) as they arrive.
 * Errors: -EALREADY (already listening), -EADDRINUSE, -EADDRNOTAVAIL,
 * -EINVAL.
 */
int rdmaxfer_listen(struct rdmaxfer_agent *agent, const char *host,
		    uint16_t port);
int rdmaxfer_listen_port(struct rdmaxfer_agent *agent, uint16_t *portp);

/*
 * Hand out the next peer that connected to us and is ready (all its QPs
 * established), waiting up to timeout_ms (-1: forever, 0: poll).
 * Errors: -ETIMEDOUT, -ENOTCONN (not listening).
 */
int rdmaxfer_accept(struct rdmaxfer_agent *agent, int timeout_ms,
		    struct rdmaxfer_peer **peerp);

/*
 * Connect to an agent listening on host:port: qps_per_peer RC QPs through
 * rdma_cm, each carrying a hello (magic, version, agent id, connection
 * token, QP index) in its private data.  timeout_ms <= 0: the agent's
 * cm_timeout_ms.  Errors: -ETIMEDOUT, -ECONNREFUSED, -EHOSTUNREACH,
 * -EPROTO (peer speaks another protocol version), -EINVAL.
 */
int rdmaxfer_connect(struct rdmaxfer_agent *agent, const char *host,
		     uint16_t port, int timeout_ms,
		     struct rdmaxfer_peer **peerp);

/*
 * Out-of-band path (as NIXL's getLocalMD/loadRemoteMD): connect to the
 * agent described by a metadata blob (rdmaxfer_md_pack()).  The blob
 * carries the remote agent's rdma_cm listen address; the QP exchange then
 * runs over rdma_cm, so one blob per side is enough and no second
 * exchange step is needed.  The remote agent must be listening.  The
 * descriptors in the blob become the peer's exports list (see
 * rdmaxfer_peer_set_exports()).
 * Errors: those of rdmaxfer_md_parse() and rdmaxfer_connect(), and
 * -EDESTADDRREQ (the blob's agent is not listening).
 */
int rdmaxfer_connect_md(struct rdmaxfer_agent *agent, const void *blob,
			size_t len, int timeout_ms,
			struct rdmaxfer_peer **peerp);

/*
 * Re-establish a peer in state ERROR or DISCONNECTED that we connected to
 * (new QPs, same handle).  Requests prepared on the peer stay valid.
 * -EOPNOTSUPP for an accepted peer: the remote side reconnects.
 */
int rdmaxfer_peer_reconnect(struct rdmaxfer_peer *peer, int timeout_ms);

/* Disconnect and free a peer.  Requests prepared on it must be freed first
 * (-EBUSY otherwise).  What is still in flight is dropped: flush first. */
int rdmaxfer_peer_destroy(struct rdmaxfer_peer *peer);

/*
 * Wait until everything posted to the peer (messages, requests) has
 * completed, up to timeout_ms (-1: no limit): 0, the peer's error if it
 * failed, -ENOTCONN if it is not connected, -ETIMEDOUT.
 */
int rdmaxfer_peer_flush(struct rdmaxfer_peer *peer, int timeout_ms);

enum rdmaxfer_peer_state rdmaxfer_peer_state(const struct rdmaxfer_peer *peer);
/* The remote agent's id (rdmaxfer_agent_info.agent_id on its side). */
uint64_t rdmaxfer_peer_id(const struct rdmaxfer_peer *peer);
/* The last error that moved the peer out of CONNECTED (0 if none). */
int rdmaxfer_peer_error(const struct rdmaxfer_peer *peer);

/*
 * Tell the library which descriptors the peer exported (replaces the
 * list; n 0 clears it).  From then on every remote range of a transfer or
 * atomic prepared on the peer must lie inside one of them, with the same
 * rkey, or the prepare fails with -ERANGE before anything is posted (a
 * range the peer refuses would otherwise fail remotely and take the QP and
 * its other requests down).  Without a list only the bounds are checked.
 * Errors: -EINVAL (NULL, n over RDMAXFER_MD_MAX_DESCS, unknown kind),
 * -ERANGE (a descriptor of length 0 or wrapping), -ENOMEM.
 * Since LIBRDMAXFER_1.1.
 */
int rdmaxfer_peer_set_exports(struct rdmaxfer_peer *peer,
			      const struct rdmaxfer_desc *descs, size_t n);

/* --------------------------------------------------- metadata (blobs) */

#define RDMAXFER_MD_MAGIC	0x4d584452U	/* "RDXM" little-endian */
#define RDMAXFER_MD_VERSION	1
#define RDMAXFER_MD_MAX_DESCS	65536

/*
 * Serialise the agent's metadata (identity, device, GID, listen address)
 * and an optional list of descriptors into buf: fixed-width little-endian
 * fields after a header with magic, version and total length.  *lenp gets
 * the size; with buf NULL or cap too small, -ENOSPC and *lenp the size
 * needed.
 */
int rdmaxfer_md_pack(struct rdmaxfer_agent *agent,
		     const struct rdmaxfer_desc *descs, size_t ndescs,
		     void *buf, size_t cap, size_t *lenp);

/* Parsed metadata (one allocation; free with rdmaxfer_md_free()). */
struct rdmaxfer_md {
	uint16_t version;
	uint64_t agent_id;
	char name[RDMAXFER_NAME_MAX];
	char device[RDMAXFER_DEVNAME_MAX];
	uint8_t port;
	uint8_t gid_index;
	uint8_t gid[16];
	uint32_t max_msg_size;
	uint32_t qps_per_peer;
	bool listening;
	char host[48];			/* numeric IPv4/IPv6 listen address */
	uint16_t listen_port;
	size_t ndescs;
	struct rdmaxfer_desc *descs;	/* inside the same allocation */
};

/*
 * Parse and validate a blob: every length is checked against len before it
 * is read.  Errors: -EINVAL (NULL, truncated, bad magic, inconsistent
 * lengths, unterminated strings, unknown memory kind, non-zero reserved
 * bits), -EPROTO (another metadata version), -ENOMEM.
 */
int rdmaxfer_md_parse(const void *blob, size_t len, struct rdmaxfer_md **mdp);
void rdmaxfer_md_free(struct rdmaxfer_md *md);

/* --------------------------------------------------------------- memory */

/* Memory kinds.  HOST, ODP and DMABUF (rdmaxfer_mem_register_dmabuf())
 * are registered; DEVICE is allocated by rdmaxfer_mem_alloc_device()
 * (LIBRDMAXFER_1.6), and rdmaxfer_mem_register() refuses it with
 * -EOPNOTSUPP. */
enum rdmaxfer_mem_kind {
	RDMAXFER_MEM_HOST = 1,		/* pinned host memory (ibv_reg_mr) */
	/* on-demand paging where the agent's ODP policy and the device allow
	 * it, else pinned (see rdmaxfer_odp(3)); LIBRDMAXFER_1.2 */
	RDMAXFER_MEM_ODP = 2,
	/* NIC device memory, MEMIC (rdmaxfer_mem_alloc_device()) */
	RDMAXFER_MEM_DEVICE = 3,
	/* dma-buf, by rdmaxfer_mem_register_dmabuf() only; LIBRDMAXFER_1.3 */
	RDMAXFER_MEM_DMABUF = 4,
};

/*
 * A remote descriptor: enough to target memory with one-sided operations.
 * Plain data, 24 bytes, copyable; it travels to peers in metadata blobs or
 * notification messages.  kind is an enum rdmaxfer_mem_kind.
 */
struct rdmaxfer_desc {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t kind;
};

/* A local buffer of a transfer (registered through the cache when used). */
struct rdmaxfer_iov {
	void *addr;
	size_t len;
};

/* Access a peer is granted (rdmaxfer_mem_register_access()), as
 * fi_mr_regattr's access: local access is always implied. */
#define RDMAXFER_ACCESS_REMOTE_READ	(1U << 0)
#define RDMAXFER_ACCESS_REMOTE_WRITE	(1U << 1)
#define RDMAXFER_ACCESS_REMOTE_ATOMIC	(1U << 2)
#define RDMAXFER_ACCESS_REMOTE		(RDMAXFER_ACCESS_REMOTE_READ | \
					 RDMAXFER_ACCESS_REMOTE_WRITE | \
					 RDMAXFER_ACCESS_REMOTE_ATOMIC)

/*
 * Register [addr, addr + len) through the agent's registration cache,
 * granting peers 'access' (RDMAXFER_ACCESS_*) on exactly these bytes.
 * Remote-access memory gets a registration of its own covering exactly
 * the range and rights named (shared only with handles of the identical
 * range and access); its rkey stops working at the last
 * rdmaxfer_mem_deregister() of that range, unless the agent caches rkeys
 * (RDMAXFER_AGENT_CACHE_RKEYS).  access 0 registers local-only memory
 * (the buffers of this side's own requests): cached and merged like
 * transfer buffers, and rdmaxfer_mem_desc() on it fails with -EACCES.
 * Errors: -EINVAL (NULL addr, len 0, unknown access bits, kind DMABUF:
 * see rdmaxfer_mem_register_dmabuf()), -EOPNOTSUPP (kind DEVICE),
 * registration errors (-ENOMEM, -EFAULT, ...).
 * (LIBRDMAXFER_1.1)
 */
int rdmaxfer_mem_register_access(struct rdmaxfer_agent *agent, void *addr,
				 size_t len, enum rdmaxfer_mem_kind kind,
				 uint32_t access, struct rdmaxfer_mem **memp);

/* rdmaxfer_mem_register_access(..., RDMAXFER_ACCESS_REMOTE, memp): remote
 * read, write and atomic on exactly [addr, addr + len). */
int rdmaxfer_mem_register(struct rdmaxfer_agent *agent, void *addr,
			  size_t len, enum rdmaxfer_mem_kind kind,
			  struct rdmaxfer_mem **memp);

/* Drop the handle.  The last handle of a remote-access range takes its
 * rkey with it (unless the agent caches rkeys); local-only registrations
 * stay cached for later hits. */
int rdmaxfer_mem_deregister(struct rdmaxfer_mem *mem);

/*
 * Export [offset, offset + len) of a registered region as a remote
 * descriptor (len 0: to the end).  -ERANGE when outside the region,
 * -EACCES for local-only memory (registered with access 0).
 */
int rdmaxfer_mem_desc(const struct rdmaxfer_mem *mem, size_t offset,
		      size_t len, struct rdmaxfer_desc *desc);

/* Sub-range of a descriptor (len 0: to the end); -ERANGE when outside. */
int rdmaxfer_desc_sub(const struct rdmaxfer_desc *desc, uint64_t offset,
		      uint64_t len, struct rdmaxfer_desc *out);

/* ------------------------------------------------------------ transfers */

enum rdmaxfer_op {
	RDMAXFER_OP_READ = 1,		/* remote -> local */
	RDMAXFER_OP_WRITE = 2,		/* local -> remote */
	RDMAXFER_OP_FADD = 3,		/* atomic fetch-and-add (prepared by
					 * rdmaxfer_atomic_prepare()) */
	RDMAXFER_OP_CSWAP = 4,		/* atomic compare-and-swap */
	/* 64-bit atomics of UCX's set that verbs has no operation for
	 * (rdmaxfer_atomic_supported(3)): -EOPNOTSUPP where the device
	 * cannot do them (LIBRDMAXFER_1.14) */
	RDMAXFER_OP_SWAP = 5,		/* store operand, fetch the old */
	RDMAXFER_OP_AND = 6,		/* fetch-and-and */
	RDMAXFER_OP_OR = 7,		/* fetch-and-or */
	RDMAXFER_OP_XOR = 8,		/* fetch-and-xor */
};

/*
 * Bounds of a prepared transfer (rdmaxfer_xfer_prepare(3)): a remote
 * descriptor longer than any registration can be (the 57-bit virtual
 * address space of five-level paging) is refused with -ERANGE, as by
 * rdmaxfer_md_parse() and rdmaxfer_peer_set_exports(); a request of more
 * work requests than this (pieces of at most the port's max message
 * size and 1 GiB, about 200 bytes of the request each) with -E2BIG.
 */
#define RDMAXFER_DESC_MAX_LEN	(1ULL << 57)
#define RDMAXFER_XFER_MAX_WRS	(1U << 20)

/* Optional notification of a transfer, delivered to the remote agent
 * after all the transfer's data is in place (see rdmaxfer(7)). */
struct rdmaxfer_xfer_notif {
	uint32_t value;			/* 32-bit immediate for the receiver */
};

/*
 * Prepare a transfer: pair i moves local[i].len bytes between local[i]
 * and remote[i] (same count, same lengths pairwise, else -EINVAL).
 * Lengths may be 1 B .. any size and addresses unaligned; pieces larger
 * than the port's max message size are split, and requests of at least
 * stripe_threshold bytes are striped over the peer's QPs.  The work
 * requests are built here, once; rdmaxfer_req_post() only re-validates the
 * local registrations through the cache and rings one doorbell per QP.
 * notif may be NULL.  Remote descriptors are checked here: -ERANGE for
 * length 0, a wrapping range, or (with the peer's exports list, see
 * rdmaxfer_peer_set_exports()) a range outside every exported descriptor
 * of its rkey.  Errors: -EINVAL (also an unknown kind or kind bit),
 * -ERANGE, -ENOMEM.
 */
int rdmaxfer_xfer_prepare(struct rdmaxfer_peer *peer, enum rdmaxfer_op op,
			  const struct rdmaxfer_iov *local, size_t nlocal,
			  const struct rdmaxfer_desc *remote, size_t nremote,
			  const struct rdmaxfer_xfer_notif *notif,
			  struct rdmaxfer_req **reqp);

/*
 * Prepare an atomic on the remote 8-byte word at remote->addr + offset
 * (8-byte aligned, inside the descriptor).  FADD adds 'operand'; CSWAP
 * stores 'swap' if the word equals 'operand'.  Either way the word's old
 * value lands in *result (8-byte aligned local memory, registered through
 * the cache).  Errors: -EINVAL (op, alignment), -ERANGE (outside desc,
 * or outside the peer's exports list).
 */
int rdmaxfer_atomic_prepare(struct rdmaxfer_peer *peer, enum rdmaxfer_op op,
			    const struct rdmaxfer_desc *remote,
			    uint64_t offset, uint64_t operand, uint64_t swap,
			    uint64_t *result, struct rdmaxfer_req **reqp);

/*
 * 0 when the agent's device performs atomic op (RDMAXFER_OP_FADD ..
 * RDMAXFER_OP_XOR) on 64-bit words, -EOPNOTSUPP when it does not (then
 * rdmaxfer_atomic_prepare() of op fails with -EOPNOTSUPP too), -EINVAL
 * for another op or a NULL agent.  (LIBRDMAXFER_1.14)
 */
int rdmaxfer_atomic_supported(struct rdmaxfer_agent *agent,
			      enum rdmaxfer_op op);

/* Change the operands of a prepared atomic before reposting it. */
int rdmaxfer_atomic_set(struct rdmaxfer_req *req, uint64_t operand,
			uint64_t swap);

/*
 * Post a prepared request (again).  Returns 0 once its work requests are
 * posted or queued behind earlier requests of the same QP (a full send
 * queue never fails a post).  Errors: -EBUSY (still in progress),
 * -ENOTCONN (peer not connected), -EFAULT (a local buffer is not mapped
 * or not accessible), other registration errors.
 */
int rdmaxfer_req_post(struct rdmaxfer_req *req);

/* Flags of rdmaxfer_req_post_flags(). */
enum {
	/*
	 * More posts follow at once: queue the work requests but hold the
	 * doorbell.  The next post without this flag (or the next test,
	 * wait or progress call of the agent) rings it, posting everything
	 * held for a QP as one chain with one doorbell; the requests of a
	 * chain share completions (one signalled WR at its end).  Like
	 * libfabric's FI_MORE.
	 */
	RDMAXFER_POST_MORE = 1u << 0,
};

/*
 * rdmaxfer_req_post() with flags (RDMAXFER_POST_MORE or 0).  Errors as
 * rdmaxfer_req_post(), and -EINVAL for an unknown flag.
 */
int rdmaxfer_req_post_flags(struct rdmaxfer_req *req, unsigned int flags);

/*
 * Post reqs[0..n-1] in order with one call: as rdmaxfer_req_post_flags()
 * with RDMAXFER_POST_MORE on each but the last (flags applies to the
 * last), one doorbell per QP.  All the requests belong to one agent.  The
 * first request that cannot be posted stops the list with its error; the
 * ones before it are posted, and *posted (when not NULL) is how many.
 * -EINVAL (nothing posted): reqs NULL with n > 0, a NULL request, requests
 * of two agents, or an unknown flag.
 */
int rdmaxfer_req_post_list(struct rdmaxfer_req *const *reqs, unsigned int n,
			   unsigned int flags, unsigned int *posted);

/*
 * Non-blocking state: 0 done, -EINPROGRESS in progress, -EALREADY never
 * posted, or the request's error (-EACCES remote access error, -ETIMEDOUT
 * transport retries exceeded, -ECONNRESET peer lost, ...; see
 * rdmaxfer_req_strerror()).  In caller progress mode, also polls the CQ.
 */
int rdmaxfer_req_test(struct rdmaxfer_req *req);

/*
 * Block until the request completes or timeout_ms passes (-1: forever),
 * sleeping on the completion channel.  Returns what rdmaxfer_req_test()
 * would, or -ETIMEDOUT (the request stays in progress).
 */
int rdmaxfer_req_wait(struct rdmaxfer_req *req, int timeout_ms);

/*
 * Block until one of reqs[0..n-1] (one agent's transfers or atomics) is
 * not in progress, or timeout_ms passes (-1: forever).  *index is the
 * lowest such index; returns what rdmaxfer_req_test() returns for it, or
 * -ETIMEDOUT (*index untouched).  -EINVAL: reqs or index NULL, n 0,
 * a NULL request, requests of two agents; -EOPNOTSUPP: a file request.
 * (LIBRDMAXFER_1.14)
 */
int rdmaxfer_req_wait_any(struct rdmaxfer_req *const *reqs, unsigned int n,
			  int timeout_ms, unsigned int *index);

/*
 * A completion callback: fn(user, req, status) once per post of req when
 * it completes (status: what rdmaxfer_req_test() then returns), called
 * from progress (the agent's thread, or the caller's test, wait or
 * progress call) without the agent's lock: it may post, test or free
 * req.  fn NULL: none.  -EBUSY while req is in progress; -EOPNOTSUPP for
 * a file request; -EINVAL for req NULL.  (LIBRDMAXFER_1.14)
 */
typedef void (*rdmaxfer_req_fn)(void *user, struct rdmaxfer_req *req,
				int status);
int rdmaxfer_req_set_cb(struct rdmaxfer_req *req, rdmaxfer_req_fn fn,
			void *user);

/* Free a request that is not in progress (-EBUSY otherwise). */
int rdmaxfer_req_free(struct rdmaxfer_req *req);

/* Bytes moved by one post of the request. */
uint64_t rdmaxfer_req_bytes(const struct rdmaxfer_req *req);

/* The verbs status text of the request's failed work completion
 * (ibv_wc_status_str), or of its errno when it failed before the wire. */
const char *rdmaxfer_req_strerror(const struct rdmaxfer_req *req);

/*
 * Stop a request in progress: a file request starts no more chunks and
 * ends with -ECANCELED once what is in flight is back (bounded: see
 * rdmaxfer_file(3)).  -EALREADY when not in progress, -EOPNOTSUPP for
 * transfers and atomics (work requests on the wire cannot be recalled).
 */
int rdmaxfer_req_cancel(struct rdmaxfer_req *req);

/* --------------------------------------------------------- notifications */

#define RDMAXFER_NOTIF_MSG_MAX	1024

enum rdmaxfer_notif_type {
	RDMAXFER_NOTIF_IMM = 1,		/* RDMA WRITE with immediate (value only) */
	RDMAXFER_NOTIF_MSG = 2,		/* SEND with immediate and a payload */
};

struct rdmaxfer_notif {
	/* the peer it came from, if the application owns it (connected to
	 * it, or took it from rdmaxfer_accept()); else NULL */
	struct rdmaxfer_peer *peer;
	uint64_t peer_id;		/* its agent id */
	enum rdmaxfer_notif_type type;
	uint32_t value;
	uint32_t len;			/* payload bytes (MSG only) */
	uint8_t data[RDMAXFER_NOTIF_MSG_MAX];
};

/*
 * Send a notification to a peer without a transfer: a 32-bit value and, if
 * len > 0, a payload of up to RDMAXFER_NOTIF_MSG_MAX bytes (copied; the
 * buffer may be reused at return).  Notifications of one peer arrive in
 * the order they were sent (they all travel on the peer's first QP).
 * Errors: -EMSGSIZE, -ENOTCONN, -EFAULT (msg not readable), -EAGAIN (this
 * peer's send slots exhausted: progress and retry; slots are per peer, so
 * a peer that stops receiving does not block the others), -ENOMEM.
 */
int rdmaxfer_notif_send(struct rdmaxfer_peer *peer, uint32_t value,
			const void *msg, size_t len);

/*
 * Take up to max received notifications, oldest first, without blocking
 * (progresses the agent in caller mode).  Returns the number taken, or
 * -errno.  Not used when a callback is set.
 */
int rdmaxfer_get_notifs(struct rdmaxfer_agent *agent,
			struct rdmaxfer_notif *notifs, size_t max);

/* As rdmaxfer_get_notifs(), but wait up to timeout_ms (-1: forever) for
 * at least one; -ETIMEDOUT if none came. */
int rdmaxfer_wait_notifs(struct rdmaxfer_agent *agent,
			 struct rdmaxfer_notif *notifs, size_t max,
			 int timeout_ms);

/*
 * Deliver notifications through a callback instead, called from the
 * progress context (the progress thread, or the caller's progress/test/
 * wait call) without agent locks held: it may call into the library;
 * a blocking call there progresses the agent itself (rdmaxfer_notif(3)),
 * and callbacks are not re-entered meanwhile.  fn NULL: back to the
 * queue.  A callback running in another thread has returned when this
 * returns (not waited for from within it), so the old user may then be
 * freed.
 */
typedef void (*rdmaxfer_notif_fn)(void *user, const struct rdmaxfer_notif *n);
int rdmaxfer_set_notif_cb(struct rdmaxfer_agent *agent, rdmaxfer_notif_fn fn,
			  void *user);

/* --------------------------------------------------------------- errors */

/* Text for a negative errno from this library (strerror-like). */
const char *rdmaxfer_strerror(int err);

/* The -errno librdmaxfer maps a verbs work-completion status to. */
int rdmaxfer_wc_status_errno(int ibv_wc_status);

/* ------------------------------------------ on-demand paging (ODP), 1.2 */

/* struct rdmaxfer_agent_attr.odp, and $RDMAXFER_ODP (auto, on, off) */
enum rdmaxfer_odp_policy {
	RDMAXFER_ODP_DEFAULT = 0,	/* $RDMAXFER_ODP, else auto */
	/* ODP for an RDMAXFER_MEM_ODP region only where the device's RC
	 * ODP caps cover every operation it needs and the agent's self-test
	 * found them correct; else the region is pinned */
	RDMAXFER_ODP_AUTO = 1,
	/* ODP or fail: the agent is not created (-EOPNOTSUPP) on a device
	 * without explicit ODP, a region whose operations are not covered
	 * (or failed the self-test) is refused with -EOPNOTSUPP */
	RDMAXFER_ODP_ON = 2,
	RDMAXFER_ODP_OFF = 3,		/* never: ODP regions are pinned */
};

/* Operations a region may serve (struct rdmaxfer_odp_caps masks). */
#define RDMAXFER_ODP_OP_LOCAL		(1U << 0) /* as a request's buffer */
#define RDMAXFER_ODP_OP_REMOTE_WRITE	(1U << 1) /* a peer's RDMA WRITE */
#define RDMAXFER_ODP_OP_REMOTE_READ	(1U << 2) /* a peer's RDMA READ */
#define RDMAXFER_ODP_OP_REMOTE_ATOMIC	(1U << 3) /* a peer's atomic */
#define RDMAXFER_ODP_OPS		0xfU

/* struct rdmaxfer_odp_caps.prefetch */
enum rdmaxfer_odp_prefetch {
	RDMAXFER_PREFETCH_MADVISE = 1,	/* madvise(MADV_POPULATE_*) */
	RDMAXFER_PREFETCH_ADVISE_MR = 2,	/* ibv_advise_mr() */
};

/* rdmaxfer_prefetch() flags */
#define RDMAXFER_PREFETCH_WRITE		(1U << 0) /* will be written */
#define RDMAXFER_PREFETCH_NO_FAULT	(1U << 1) /* map present pages only */

#define RDMAXFER_ODP_MSG_MAX	256

/* What the agent's device can do with ODP and what the agent uses. */
struct rdmaxfer_odp_caps {
	uint32_t policy;		/* enum rdmaxfer_odp_policy in effect */
	uint32_t general;		/* ibv odp_caps.general_caps */
	uint32_t rc;			/* IBV_ODP_SUPPORT_* for RC */
	uint32_t uc;
	uint32_t ud;
	uint32_t device_ops;		/* RDMAXFER_ODP_OP_*: the RC caps cover */
	uint32_t bad_ops;		/* ...: the self-test saw corrupt data */
	uint32_t auto_ops;		/* ...: what an ODP region uses ODP for */
	uint32_t implicit;		/* 1: an implicit ODP MR is registered */
	uint32_t prefetch;		/* enum rdmaxfer_odp_prefetch */
	/* 0 not run (policy off, or no explicit ODP), 1 passed, 2 corrupt */
	int32_t selftest;
	uint32_t reserved;
	/* one line each: the device, the self-test's finding, and why auto
	 * does not use ODP for an operation ("" when it does) */
	char selftest_msg[RDMAXFER_ODP_MSG_MAX];
	char reason[RDMAXFER_ODP_MSG_MAX];
};
#define RDMAXFER_ODP_SELFTEST_NONE	0
#define RDMAXFER_ODP_SELFTEST_PASSED	1
#define RDMAXFER_ODP_SELFTEST_CORRUPT	2

/* Fill caps for the agent's device (query, no I/O).  -EINVAL on NULL. */
int rdmaxfer_agent_odp_caps(struct rdmaxfer_agent *agent,
			    struct rdmaxfer_odp_caps *caps);

/*
 * Whether a registered region really uses ODP (1), is pinned (0: HOST
 * kind, or an ODP region that fell back), or -EINVAL.
 */
int rdmaxfer_mem_is_odp(const struct rdmaxfer_mem *mem);

/*
 * Fault in the pages of n local buffers before a transfer touches them:
 * ibv_advise_mr() (PREFETCH, PREFETCH_WRITE, PREFETCH_NO_FAULT) for a
 * buffer inside an ODP region of the agent where the device supports it,
 * else madvise(MADV_POPULATE_WRITE or _READ); RDMAXFER_PREFETCH_NO_FAULT
 * with madvise does nothing (there is nothing to map without faulting).
 * Returns 0, -EINVAL (NULL, len 0, unknown flags), -EFAULT (a buffer not
 * mapped with the access asked for), or another -errno.
 */
int rdmaxfer_prefetch(struct rdmaxfer_agent *agent,
		      const struct rdmaxfer_iov *iov, size_t n, uint32_t flags);

/* Name of an RDMAXFER_ODP_OP_* bit ("remote write", ...), "?" if none. */
const char *rdmaxfer_odp_op_name(uint32_t op);

/* ------------------------------------------------ dma-buf memory, 1.3 */

/* struct rdmaxfer_dmabuf_attr.policy, and $RDMAXFER_DMABUF (auto, on, off) */
enum rdmaxfer_dmabuf_policy {
	RDMAXFER_DMABUF_DEFAULT = 0,	/* $RDMAXFER_DMABUF, else auto */
	/* a dma-buf MR where the device takes one, else the CPU mapping */
	RDMAXFER_DMABUF_AUTO = 1,
	/* a dma-buf MR or -EOPNOTSUPP (the device refuses them) */
	RDMAXFER_DMABUF_ON = 2,
	RDMAXFER_DMABUF_OFF = 3,	/* always the CPU mapping */
};

/* struct rdmaxfer_dmabuf_attr.flags */
#define RDMAXFER_DMABUF_BACKING	(1U << 0)	/* backing_fd is set */
/* when no mapping can be registered: a host copy of the region, made
 * coherent with the dma-buf by rdmaxfer_dmabuf_sync() (not zero-copy) */
#define RDMAXFER_DMABUF_STAGE	(1U << 1)

/* What to register (all fields not named are zero). */
struct rdmaxfer_dmabuf_attr {
	int fd;				/* the dma-buf (stays the caller's) */
	uint32_t access;		/* RDMAXFER_ACCESS_* */
	uint64_t offset;		/* first byte of the region in it */
	uint64_t len;
	/* the region's address on the device path (in descriptors); 0:
	 * offset.  The CPU mapping has its own (rdmaxfer_mem_dmabuf_query) */
	uint64_t iova;
	uint32_t policy;		/* enum rdmaxfer_dmabuf_policy */
	uint32_t flags;			/* RDMAXFER_DMABUF_* */
	/* RDMAXFER_DMABUF_BACKING: a file whose bytes from backing_offset
	 * are the dma-buf's bytes from 0 (the memfd of a udmabuf), mapped
	 * when the dma-buf's own mapping cannot be registered */
	int backing_fd;
	uint32_t reserved32;		/* must be zero */
	uint64_t backing_offset;
	uint64_t reserved[2];		/* must be zero */
};

/* How a dma-buf region is registered (struct rdmaxfer_dmabuf_info.path) */
enum rdmaxfer_dmabuf_path {
	RDMAXFER_DMABUF_PATH_DEVICE = 1,	/* ibv_reg_dmabuf_mr() */
	RDMAXFER_DMABUF_PATH_MAP = 2,	/* the dma-buf's CPU mapping, pinned */
	RDMAXFER_DMABUF_PATH_BACKING = 3,	/* the backing file's, pinned */
	RDMAXFER_DMABUF_PATH_STAGED = 4,	/* a host copy (_STAGE) */
};

#define RDMAXFER_DMABUF_MSG_MAX	256

struct rdmaxfer_dmabuf_info {
	uint32_t path;			/* enum rdmaxfer_dmabuf_path */
	/* 0 or the -errno of each path tried before the one taken (0: not
	 * tried or taken) */
	int32_t device_err;
	int32_t map_err;
	uint32_t reserved32;
	uint64_t addr;			/* the region's address: descriptors */
	uint64_t len;
	/* the CPU's view of the region (also a local buffer of transfers);
	 * NULL on the device path */
	void *cpu;
	/* one line: the device, and why a fallback was taken ("" if not) */
	char msg[RDMAXFER_DMABUF_MSG_MAX];
};

/* Whether the agent's device takes dma-buf MRs (probed once, cached). */
struct rdmaxfer_dmabuf_caps {
	uint32_t policy;		/* the default policy in effect */
	int32_t device;			/* 1: ibv_reg_dmabuf_mr() accepted */
	int32_t device_err;		/* the probe's -errno when refused */
	uint32_t reserved;
	char msg[RDMAXFER_DMABUF_MSG_MAX];
};

/*
 * Register [offset, offset + len) of a dma-buf (kind RDMAXFER_MEM_DMABUF):
 * a dma-buf MR where the device and the policy allow, else the CPU
 * mapping of the dma-buf (or of its backing file, or a staged copy)
 * registered exactly like host memory.  See rdmaxfer_dmabuf(3).  Errors: -EINVAL (NULL, len 0,
 * unknown access/flags/policy bits, reserved set, fd not a dma-buf),
 * -EBADF (fd not open), -ERANGE (outside the dma-buf or the backing
 * file), -EOPNOTSUPP (policy on and the device refuses; no path works),
 * registration errors.
 */
int rdmaxfer_mem_register_dmabuf(struct rdmaxfer_agent *agent,
				 const struct rdmaxfer_dmabuf_attr *attr,
				 struct rdmaxfer_mem **memp);

/* How a dma-buf region was registered; -EINVAL for another kind. */
int rdmaxfer_mem_dmabuf_query(const struct rdmaxfer_mem *mem,
			      struct rdmaxfer_dmabuf_info *info);

int rdmaxfer_agent_dmabuf_caps(struct rdmaxfer_agent *agent,
			       struct rdmaxfer_dmabuf_caps *caps);

/* rdmaxfer_dmabuf_sync() flags: the values of DMA_BUF_SYNC_* */
#define RDMAXFER_DMABUF_SYNC_READ	(1U << 0)
#define RDMAXFER_DMABUF_SYNC_WRITE	(1U << 1)
#define RDMAXFER_DMABUF_SYNC_END	(1U << 2)

/* DMA_BUF_IOCTL_SYNC on the region's dma-buf: begin (no _END) or end CPU
 * access with READ and/or WRITE.  On the staged path a begin with READ
 * first copies the host copy into the dma-buf, an end with WRITE then
 * copies the dma-buf into the host copy.  -EINVAL (not dma-buf, bad
 * flags). */
int rdmaxfer_dmabuf_sync(const struct rdmaxfer_mem *mem, uint32_t flags);

/* ---------------------------------- NIC device memory (MEMIC), 1.6 */

/*
 * struct rdmaxfer_desc.kind of a region addressed from 0 (its first byte
 * is address 0, not a virtual address): device memory where the device
 * has no indirect key to place it at one (see rdmaxfer_devmem(3)).  Only
 * with RDMAXFER_MEM_DEVICE; a peer that does not know the bit refuses the
 * descriptor (-EINVAL) instead of aiming at the wrong address.
 */
#define RDMAXFER_DESC_ZERO_BASED	(1U << 16)
#define RDMAXFER_DESC_KIND_MASK		0xffffU

/* $RDMAXFER_DM (auto, on, off), overridden per call by the flags below */
enum rdmaxfer_dm_policy {
	RDMAXFER_DM_AUTO = 1,	/* device memory where it works, else host */
	RDMAXFER_DM_ON = 2,	/* device memory or -EOPNOTSUPP */
	RDMAXFER_DM_OFF = 3,	/* host memory always */
};

/* rdmaxfer_mem_alloc_device() flags */
#define RDMAXFER_DM_REQUIRE	(1U << 0)	/* this call: policy on */
#define RDMAXFER_DM_HOST	(1U << 1)	/* this call: policy off */

/* How device memory is reached (info.path, caps.path) */
enum rdmaxfer_dm_path {
	/* ibv_alloc_dm, a zero-based MR, and a KSM indirect key (mlx5 DEVX)
	 * placing it at a reserved PROT_NONE range: ordinary addresses */
	RDMAXFER_DM_PATH_KSM = 1,
	/* ibv_alloc_dm exported as a dma-buf (ibv_dm_export_dmabuf_fd)
	 * and registered at the reserved range (where rdma-core has it) */
	RDMAXFER_DM_PATH_DMABUF = 2,
	/* ibv_alloc_dm and a zero-based MR: RDMAXFER_DESC_ZERO_BASED */
	RDMAXFER_DM_PATH_ZERO_BASED = 3,
	/* no usable device memory: host memory through the cache */
	RDMAXFER_DM_PATH_HOST = 4,
};

#define RDMAXFER_DM_MSG_MAX	256

/* What the agent's device offers (probed once, on first use). */
struct rdmaxfer_devmem_caps {
	uint32_t policy;		/* enum rdmaxfer_dm_policy in effect */
	uint32_t path;			/* what a fitting allocation takes */
	uint64_t max_dm_size;		/* 0: no device memory */
	uint32_t mlx5;			/* 1: mlx5dv_is_supported() */
	uint32_t devx;			/* 1: a DEVX context opened */
	uint32_t dmabuf_export;		/* 1: built with ibv_dm_export_dmabuf_fd */
	/* start-up check (an atomic through the key, loopback) of the
	 * path taken: 0 not run, 1 passed, else its -errno */
	int32_t check;
	char msg[RDMAXFER_DM_MSG_MAX];	/* the path, and why */
};

/* How one region was allocated (rdmaxfer_mem_devmem_query()). */
struct rdmaxfer_devmem_info {
	uint32_t path;			/* enum rdmaxfer_dm_path */
	uint32_t reserved32;
	uint64_t len;
	uint64_t addr;			/* what its descriptors name */
	void *cpu;			/* PATH_HOST: the words; else NULL */
	char msg[RDMAXFER_DM_MSG_MAX];	/* the path, and why */
};

/*
 * Allocate len bytes (a multiple of 8, at most the device's max_dm_size)
 * of the NIC's device memory, zeroed, with remote read, write and atomic
 * rights, as a handle of kind RDMAXFER_MEM_DEVICE: descriptors
 * (rdmaxfer_mem_desc()) address it for READ/WRITE and atomics; the copy
 * helpers below reach it locally.  Where the device has none (or policy
 * off), host memory registered through the cache is taken instead and
 * reported (rdmaxfer_mem_devmem_query()).  Free with
 * rdmaxfer_mem_deregister().  Errors: -EINVAL (NULL, len 0 or not a
 * multiple of 8, unknown flags, both policy flags, unknown $RDMAXFER_DM),
 * -ENOSPC (len over max_dm_size under policy on), -EOPNOTSUPP (policy on
 * and no usable device memory), -ENOMEM, verbs errors.
 */
int rdmaxfer_mem_alloc_device(struct rdmaxfer_agent *agent, size_t len,
			      uint32_t flags, struct rdmaxfer_mem **memp);
int rdmaxfer_mem_devmem_query(const struct rdmaxfer_mem *mem,
			      struct rdmaxfer_devmem_info *info);
int rdmaxfer_agent_devmem_caps(struct rdmaxfer_agent *agent,
			       struct rdmaxfer_devmem_caps *caps);
/* Copy between host memory and [offset, offset + len) of a device-memory
 * region (ibv_memcpy_to_dm / _from_dm; memcpy on the host path): offset,
 * len and buf 4-byte aligned.  -EINVAL, -ERANGE. */
int rdmaxfer_devmem_write(struct rdmaxfer_mem *mem, size_t offset,
			  const void *buf, size_t len);
int rdmaxfer_devmem_read(const struct rdmaxfer_mem *mem, size_t offset,
			 void *buf, size_t len);
/* "ksm", "dmabuf", "zero-based", "host", "?" */
const char *rdmaxfer_dm_path_name(uint32_t path);

/* --------------------------------------------------- files, 1.5 and 1.8 */

/*
 * Files as transfer endpoints (LIBRDMAXFER_1.5, rdmaxfer_file(3)): a file
 * range (fd, offset, len) read into or written from local memory through
 * io_uring (liburing), chunked and pipelined, or through pread/pwrite
 * where io_uring is unavailable; to and from a remote peer through a
 * registered staging pool, pipelined.
 */
struct rdmaxfer_file;

struct rdmaxfer_file_desc {
	int fd;
	uint64_t offset;
	uint64_t len;
};

#define RDMAXFER_FILE_DEF_CHUNK		(1U << 20)	/* bytes per I/O */
#define RDMAXFER_FILE_DEF_QDEPTH	8		/* I/Os in flight */
#define RDMAXFER_FILE_MAX_QDEPTH	4096
#define RDMAXFER_FILE_REQUIRE_URING	(1U << 0) /* no pread fallback */
#define RDMAXFER_FILE_NO_URING		(1U << 1) /* pread/pwrite only */
#define RDMAXFER_FILE_MSG_MAX		256

struct rdmaxfer_file_attr {
	uint32_t chunk_size;	/* 0: RDMAXFER_FILE_DEF_CHUNK */
	uint32_t queue_depth;	/* 0: RDMAXFER_FILE_DEF_QDEPTH */
	uint32_t flags;		/* RDMAXFER_FILE_* */
};

enum rdmaxfer_file_backend {
	RDMAXFER_FILE_IO_URING = 1,
	RDMAXFER_FILE_PREAD = 2,
};

int rdmaxfer_file_create(const struct rdmaxfer_file_attr *attr,
			 struct rdmaxfer_file **filep);
void rdmaxfer_file_destroy(struct rdmaxfer_file *file);
/* The backend in use (enum rdmaxfer_file_backend), -EINVAL on NULL. */
int rdmaxfer_file_backend(const struct rdmaxfer_file *file);
/* file range -> buf (len bytes) and buf -> file range; 0 or -errno. */
int rdmaxfer_file_read(struct rdmaxfer_file *file,
		       const struct rdmaxfer_file_desc *src, void *buf);
int rdmaxfer_file_write(struct rdmaxfer_file *file, const void *buf,
			const struct rdmaxfer_file_desc *dst);
/*
 * file range -> remote (RDMA WRITE) and remote (RDMA READ) -> file through
 * the engine's staging pool (queue_depth chunks, registered once with the
 * peer's agent, until that agent is destroyed: rdmaxfer_file(3)),
 * pipelined; blocking, at most timeout_ms (-1: no limit).  -ERANGE:
 * remote smaller than the range.
 */
int rdmaxfer_file_to_peer(struct rdmaxfer_file *file,
			  struct rdmaxfer_peer *peer,
			  const struct rdmaxfer_file_desc *src,
			  const struct rdmaxfer_desc *remote, int timeout_ms);
int rdmaxfer_file_from_peer(struct rdmaxfer_file *file,
			    struct rdmaxfer_peer *peer,
			    const struct rdmaxfer_desc *remote,
			    const struct rdmaxfer_file_desc *dst, int timeout_ms);
/* One line on the last failure or fallback ("" if none). */
const char *rdmaxfer_file_msg(const struct rdmaxfer_file *file);
/*
 * File requests (LIBRDMAXFER_1.8, rdmaxfer_file(3)): file <-> remote as a
 * struct rdmaxfer_req, posted, tested, waited on, cancelled and freed like
 * any other request; its disk side moves in the caller's test, wait and
 * progress calls.  op RDMAXFER_OP_WRITE: file range -> remote (RDMA
 * WRITE); RDMAXFER_OP_READ: remote -> file range (RDMA READ).
 */
enum rdmaxfer_file_stage {
	RDMAXFER_FILE_STAGE_NONE = 0,
	RDMAXFER_FILE_STAGE_CHECK = 1,		/* the range and its fd */
	RDMAXFER_FILE_STAGE_REGISTER = 2,	/* the staging pool */
	RDMAXFER_FILE_STAGE_SUBMIT = 3,		/* io_uring submission */
	RDMAXFER_FILE_STAGE_IO = 4,		/* a file read or write */
	RDMAXFER_FILE_STAGE_NET = 5,		/* an RDMA leg */
	RDMAXFER_FILE_STAGE_CANCEL = 6,		/* rdmaxfer_req_cancel() */
};

/* struct rdmaxfer_file_result.flags */
#define RDMAXFER_FILE_RES_DIRECT	(1U << 0)	/* O_DIRECT I/O */
/* the fd has O_DIRECT but the range, buffer or chunk size is misaligned
 * for it: buffered I/O through a second fd of the same file */
#define RDMAXFER_FILE_RES_BUFFERED	(1U << 1)

/* What one transfer (a blocking call or a request) did. */
struct rdmaxfer_file_result {
	uint64_t len;		/* the range */
	uint64_t done;		/* bytes that reached the destination */
	/* the destination's first prefix bytes are all written; past them
	 * done - prefix more bytes may be, in whole chunks */
	uint64_t prefix;
	int32_t err;		/* 0, -EINPROGRESS, -EALREADY or -errno */
	uint32_t stage;		/* enum rdmaxfer_file_stage of err */
	uint32_t flags;		/* RDMAXFER_FILE_RES_* */
	uint32_t reserved;
};

/* An engine's settings and counters (rdmaxfer_file_query()). */
struct rdmaxfer_file_info {
	uint32_t backend;	/* enum rdmaxfer_file_backend */
	uint32_t chunk_size;
	uint32_t queue_depth;
	uint32_t fixed;		/* 1: the pool is an io_uring fixed buffer */
	uint64_t transfers;	/* ended, calls and requests */
	uint64_t failures;	/* ... of them with an error */
	uint64_t cancels;	/* requests cancelled */
	uint64_t bytes;		/* bytes moved to or from files */
	uint64_t direct;	/* transfers with RDMAXFER_FILE_RES_DIRECT */
	uint64_t dio_fallbacks;	/* ... with RDMAXFER_FILE_RES_BUFFERED */
	uint64_t short_ios;	/* short reads or writes resubmitted */
	uint64_t reserved[3];
	struct rdmaxfer_file_result last;	/* the last transfer ended */
};

int rdmaxfer_file_prepare(struct rdmaxfer_file *file,
			  struct rdmaxfer_peer *peer, enum rdmaxfer_op op,
			  const struct rdmaxfer_file_desc *range,
			  const struct rdmaxfer_desc *remote,
			  struct rdmaxfer_req **reqp);
/* The result of a file request so far; -EINVAL for another request. */
int rdmaxfer_file_req_result(struct rdmaxfer_req *req,
			     struct rdmaxfer_file_result *res);
int rdmaxfer_file_query(struct rdmaxfer_file *file,
			struct rdmaxfer_file_info *info);

/* ------------------------------------------------ grain ring (MXL), 1.4 */

struct rdmaxfer_ring;		/* target side: the ring of slots */
struct rdmaxfer_ring_writer;	/* initiator side: one per target */

#define RDMAXFER_RING_MAGIC	0x52584452U	/* "RDXR" little-endian */
#define RDMAXFER_RING_VERSION	1
#define RDMAXFER_RING_MAX_SLOTS	65536
#define RDMAXFER_RING_MAX_IOV	16	/* local buffers of one grain */
#define RDMAXFER_RING_JSON_MAX	768	/* one-line form, NUL included */

enum rdmaxfer_ring_flavour {
	RDMAXFER_RING_DISCRETE = 1,	/* grains; the immediate: the index */
	RDMAXFER_RING_CONTINUOUS = 2,	/* samples: head and count (1.7) */
};

/* What an initiator needs to write into a ring (see rdmaxfer_ring(3)). */
struct rdmaxfer_ring_info {
	uint32_t version;
	uint32_t flavour;		/* enum rdmaxfer_ring_flavour */
	uint32_t n_slots;		/* continuous: samples per channel */
	uint16_t channels;		/* continuous: planes; else 0 (1.7) */
	uint16_t flags;			/* RDMAXFER_RING_OVERRUN (1.7) */
	uint64_t slot_size;		/* continuous: bytes per sample */
	uint64_t agent_id;		/* the target agent */
	char device[RDMAXFER_DEVNAME_MAX];
	char host[48];			/* its rdma_cm listen address */
	uint16_t port;
	struct rdmaxfer_desc slots;	/* n_slots * slot_size, remote write */
	struct rdmaxfer_desc credit;	/* released-grain counter, remote read */
};

/* A grain delivered to the target, read in place until released. */
struct rdmaxfer_grain {
	uint64_t index;			/* grain index (64-bit, reconstructed) */
	uint32_t slot;			/* index % n_slots */
	uint32_t lost;			/* overrun record: grains lost (1.7) */
	void *data;			/* the slot, slot_size bytes */
	uint64_t slot_size;
};

/*
 * The grain ring (rdmaxfer_ring(3)): MXL's fabrics model.  A target
 * registers n_slots slots of slot_size bytes (remote write only) and a
 * credit word (remote read only) and exports a target info; an initiator
 * attaches with it and puts grain i into slot i % n_slots as a WRITE with
 * immediate (the index); the target takes grains (wait, poll or callback),
 * reads them in place and releases them.  Credits: a put that would
 * overwrite an unreleased slot blocks (bounded) or returns -EAGAIN, never
 * laps.  The target's agent must listen; a ring takes the immediates of
 * the writers attached to it only (the agent's other notifications stay
 * the application's), and a writer that breaks the protocol is failed.
 * flags 0, or RDMAXFER_RING_OVERRUN (1.7): a put never waits for
 * the target; a grain whose slot is not released is dropped (-ENOBUFS)
 * and the target's wait reports the loss (-EOVERFLOW, grain->lost).
 */
int rdmaxfer_ring_create(struct rdmaxfer_agent *agent, uint32_t n_slots,
			 size_t slot_size, uint32_t flags,
			 struct rdmaxfer_ring **ringp);
int rdmaxfer_ring_destroy(struct rdmaxfer_ring *ring);
int rdmaxfer_ring_get_info(struct rdmaxfer_ring *ring,
			   struct rdmaxfer_ring_info *info);
/* Binary target info (a header around the metadata blob); -ENOSPC with
 * *lenp the size needed.  Parsers: -EINVAL, -EPROTO (version), -ERANGE
 * (geometry), -EOPNOTSUPP (flavour); *info untouched on error. */
int rdmaxfer_ring_info_pack(const struct rdmaxfer_ring_info *info, void *buf,
			    size_t cap, size_t *lenp);
int rdmaxfer_ring_info_parse(const void *blob, size_t len,
			     struct rdmaxfer_ring_info *info);
/* One-line JSON form; returns its length, or -ENOSPC. */
int rdmaxfer_ring_info_json(const struct rdmaxfer_ring_info *info, char *buf,
			    size_t cap);
int rdmaxfer_ring_info_parse_json(const char *text,
				  struct rdmaxfer_ring_info *info);
/* Next grain: timeout_ms 0 polls (-EAGAIN), -1 forever, else -ETIMEDOUT. */
int rdmaxfer_ring_wait(struct rdmaxfer_ring *ring, int timeout_ms,
		       struct rdmaxfer_grain *grain);
typedef void (*rdmaxfer_ring_fn)(void *user, const struct rdmaxfer_grain *g);
int rdmaxfer_ring_set_cb(struct rdmaxfer_ring *ring, rdmaxfer_ring_fn fn,
			 void *user);
int rdmaxfer_ring_release(struct rdmaxfer_ring *ring, uint64_t index);

/* Connect to the target and check the info (-ESTALE: another agent). */
int rdmaxfer_ring_attach(struct rdmaxfer_agent *agent,
			 const struct rdmaxfer_ring_info *info, int timeout_ms,
			 struct rdmaxfer_ring_writer **wp);
/* Put grain index (in order) from n local buffers; flags 0 or
 * RDMAXFER_POST_MORE; timeout_ms 0: -EAGAIN without credit. */
int rdmaxfer_ring_put(struct rdmaxfer_ring_writer *w, uint64_t index,
		      const struct rdmaxfer_iov *iov, size_t n,
		      unsigned int flags, int timeout_ms);
int rdmaxfer_ring_flush(struct rdmaxfer_ring_writer *w, int timeout_ms);
/* The writer's connection to the target (owned by the writer). */
struct rdmaxfer_peer *
rdmaxfer_ring_writer_peer(struct rdmaxfer_ring_writer *w);
int rdmaxfer_ring_detach(struct rdmaxfer_ring_writer *w);

/* -------------------------- grain ring: samples and overrun mode, 1.7 */

#define RDMAXFER_RING_VERSION_EXT	2	/* target info with channels
						 * or flags */
#define RDMAXFER_RING_OVERRUN	(1U << 0)	/* create flag: no credits */
#define RDMAXFER_RING_MAX_CHANNELS	64
#define RDMAXFER_RING_MAX_COUNT	65535	/* samples per write (16 bits) */

/*
 * A sample write delivered to the target: samples [head - count, head) of
 * every channel, read in place until released.  Channel c's samples are
 * frag[0] + c * stride (frag_len[0] bytes), then, when the range crossed
 * the ring's end, frag[1] + c * stride (frag_len[1] bytes, else 0).
 */
struct rdmaxfer_samples {
	uint64_t head;			/* one past the last sample */
	uint32_t count;
	uint32_t channels;
	uint64_t stride;		/* bytes from one plane to the next */
	void *frag[2];
	uint64_t frag_len[2];
};

/*
 * The continuous flavour (rdmaxfer_ring(3)): channels planes of length
 * samples of sample_size bytes.  A write of count samples ending at head
 * is one WRITE per channel, two where it crosses the ring's end, the
 * immediate (head's low 16 bits, count) on the last; writes follow on
 * (head = previous head + count) from 0.  Credits count samples.  flags 0.
 */
int rdmaxfer_ring_create_samples(struct rdmaxfer_agent *agent,
				 uint32_t channels, uint32_t length,
				 uint32_t sample_size, uint32_t flags,
				 struct rdmaxfer_ring **ringp);
/* Next write: timeout_ms as rdmaxfer_ring_wait(); release with
 * rdmaxfer_ring_release(ring, head) (every sample below head). */
int rdmaxfer_ring_wait_samples(struct rdmaxfer_ring *ring, int timeout_ms,
			       struct rdmaxfer_samples *s);
/* chans[c]: count * sample_size bytes of channel c (n == channels). */
int rdmaxfer_ring_put_samples(struct rdmaxfer_ring_writer *w, uint64_t head,
			      uint32_t count, const struct rdmaxfer_iov *chans,
			      size_t n, unsigned int flags, int timeout_ms);
/* RDMAXFER_RING_OVERRUN rings: grains lost to a slow target so far. */
int rdmaxfer_ring_lost(struct rdmaxfer_ring *ring, uint64_t *lost);

/* ------------------------------------- sample rings by callback, 1.9 */

/*
 * Each sample write, in order, to fn(user, s) instead of
 * rdmaxfer_ring_wait_samples(); called where the agent's notifications
 * are delivered (its progress thread, or the caller's progress and wait
 * calls).  The samples are read in place there or later, and released
 * with rdmaxfer_ring_release(ring, s->head).  fn NULL takes it away,
 * after a call that is running returns.
 */
typedef void (*rdmaxfer_ring_samples_fn)(void *user,
					 const struct rdmaxfer_samples *s);
int rdmaxfer_ring_set_samples_cb(struct rdmaxfer_ring *ring,
				 rdmaxfer_ring_samples_fn fn, void *user);

#ifdef __cplusplus
}
#endif

#endif /* RDMAXFER_H */
