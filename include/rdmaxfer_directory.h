/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmaxfer_directory.h - agents that find each other by name: agent
 * metadata in etcd, with leases, watches and partial updates
 * (LIBRDMAXFER_1.13, rdmaxfer_directory(3)).
 *
 * A directory is a connection to an etcd cluster (its v3 API through the
 * HTTP/JSON gateway, libcurl and json-c).  An agent publishes its metadata
 * blob (rdmaxfer_md_pack()) under NAMESPACE/agents/NAME, bound to a lease
 * the directory keeps alive, and each exported descriptor under
 * NAMESPACE/exports/NAME/ID (a blob of the same agent carrying that one
 * descriptor), so exports come and go without rewriting the rest.  A peer
 * looks an agent up or connects to it by name (rdmaxfer_connect_name());
 * a watch follows the namespace, turns its changes into arrive, update and
 * leave events, keeps the exports list of every peer connected by name
 * current, and fails such a peer (-ESTALE) when its entry leaves or names
 * another agent.  Every value read from etcd goes through
 * rdmaxfer_md_parse(); nothing else in it is trusted.
 *
 * The calls are in librdmaxfer itself; a library built without libcurl or
 * json-c (configure --without-etcd, or not found) has them all, and they
 * return -EOPNOTSUPP (rdmaxfer_directory_attr_init() still fills attr).
 * Conventions as rdmaxfer.h: 0 or -errno, constructors hand the object
 * out through their last argument.  Every call is thread-safe.
 */
#ifndef RDMAXFER_DIRECTORY_H
#define RDMAXFER_DIRECTORY_H

#include <stddef.h>
#include <stdint.h>

#include <rdmaxfer.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rdmaxfer_directory;

#define RDMAXFER_DIR_DEF_NAMESPACE	"rdmaxfer"
#define RDMAXFER_DIR_DEF_TTL_S		5	/* lease of the publications */
#define RDMAXFER_DIR_DEF_TIMEOUT_MS	2000	/* one request to etcd */
#define RDMAXFER_DIR_DEF_RETRY_MS	5000	/* open: etcd not answering */
#define RDMAXFER_DIR_DEF_MAX_AGENTS	65536	/* names a watch or list holds */
#define RDMAXFER_DIR_DEF_MAX_EXPORTS	4096	/* exports held per name */
#define RDMAXFER_DIR_NS_MAX		128	/* namespace, NUL included */
#define RDMAXFER_DIR_MAX_ENDPOINTS	16

/* struct rdmaxfer_directory_attr.flags */
#define RDMAXFER_DIR_NO_ENV	(1U << 0)	/* ignore RDMAXFER_DIRECTORY* */

/*
 * Directory attributes: rdmaxfer_directory_attr_init(), then set what
 * matters; zero or NULL means "default" for every field.  Names (the
 * NAME of a publication) are 1-31 characters of [A-Za-z0-9._-]; the
 * namespace is 1-127 characters of [A-Za-z0-9._-/], not starting or
 * ending with '/'.
 */
struct rdmaxfer_directory_attr {
	/* etcd client URLs, comma-separated ("http://10.0.0.1:2379,
	 * https://..."), tried in turn; NULL: $RDMAXFER_DIRECTORY */
	const char *endpoints;
	/* key prefix; NULL: $RDMAXFER_DIRECTORY_NAMESPACE, else "rdmaxfer" */
	const char *ns;
	uint32_t ttl_s;			/* lease TTL (etcd raises it to its
					 * minimum, 2 s by default) */
	int timeout_ms;			/* one request (connect included) */
	/* how long open keeps trying an etcd that does not answer before it
	 * fails; -1: one try */
	int retry_ms;
	uint32_t max_agents;		/* names a watch or a list holds */
	uint32_t max_exports;		/* exports held per name */
	uint32_t flags;			/* RDMAXFER_DIR_* */
	/* TLS (https:// endpoints): the CA bundle that verifies etcd
	 * (CURLOPT_CAINFO; NULL: the system's), and a client certificate
	 * and its key, PEM (CURLOPT_SSLCERT, CURLOPT_SSLKEY), for an etcd
	 * started with --client-cert-auth */
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
	/* etcd's own authentication: a token from /v3/auth/authenticate,
	 * sent on every request and renewed when etcd refuses it */
	const char *user;
	const char *password;
	uint64_t reserved[4];		/* must be zero */
};

void rdmaxfer_directory_attr_init(struct rdmaxfer_directory_attr *attr);

/*
 * Reach etcd (authenticating if a user is set), retrying for up to
 * retry_ms while it does not answer.  No thread runs until something is
 * published or watched.  Errors: -EINVAL (bad attribute, endpoint,
 * namespace), -ECONNREFUSED, -EHOSTUNREACH, -ETIMEDOUT (no endpoint
 * answered within retry_ms), -ECONNABORTED (TLS handshake or certificate
 * refused), -EACCES (etcd refused the user, password or certificate),
 * -EOPNOTSUPP (built without etcd support), -ENOMEM.
 */
int rdmaxfer_directory_open(const struct rdmaxfer_directory_attr *attr,
			    struct rdmaxfer_directory **dirp);

/*
 * Stop the threads, revoke the lease (every publication leaves at once),
 * deregister the memory of rdmaxfer_directory_export_mem() and free the
 * directory.  Peers connected by name stay (they are the agent's) but are
 * no longer followed.  Close a directory before destroying an agent it
 * publishes or connected.
 */
void rdmaxfer_directory_close(struct rdmaxfer_directory *dir);

/* ----------------------------------------------------------- publish */

/*
 * Publish the agent under NAMESPACE/agents/name: its metadata blob
 * (rdmaxfer_md_pack(), no descriptors) on the directory's lease, which
 * the directory keeps alive every ttl_s / 3 and grants again, writing
 * every publication and export back, when etcd lost it.  The agent must
 * listen.  A directory may publish several names (one lease for all).
 * Errors: -EINVAL, -EDESTADDRREQ (not listening), -EEXIST (the name is
 * held by another lease), -EALREADY (published here already), etcd
 * errors as rdmaxfer_directory_open().
 */
int rdmaxfer_directory_publish(struct rdmaxfer_directory *dir,
			       struct rdmaxfer_agent *agent, const char *name);

/* The same for a blob the caller made (checked by rdmaxfer_md_parse():
 * its errors), published as it is, descriptors included. */
int rdmaxfer_directory_publish_md(struct rdmaxfer_directory *dir,
				  const char *name, const void *blob,
				  size_t len);

/* Remove a publication and its exports from etcd (-ENOENT: not published
 * here); export_mem memory is deregistered. */
int rdmaxfer_directory_unpublish(struct rdmaxfer_directory *dir,
				 const char *name);

/*
 * Partial updates.  rdmaxfer_directory_export() adds one descriptor to
 * a publication of an agent (rdmaxfer_directory_publish()) without
 * rewriting the rest: peers connected by name may target it as soon as
 * their watch sees it.  rdmaxfer_directory_export_md() does the same for
 * a blob with exactly one descriptor of the published agent (same agent
 * id), for rdmaxfer_directory_publish_md() publications.
 * rdmaxfer_directory_export_mem() registers [addr, addr + len) with
 * 'access' (RDMAXFER_ACCESS_*, not 0) for the directory itself and
 * exports it; its descriptor goes to *desc.
 *
 * rdmaxfer_directory_withdraw() removes one: peers that see it refuse the
 * range locally (-ERANGE at prepare), and for export_mem memory the
 * target refuses it itself whatever peers do: the registration is gone
 * (its rkey dead) before the call returns, even when etcd cannot be
 * reached (the key is then deleted as soon as it can be).  That holds
 * unless the agent caches rkeys (export_mem refuses such an agent with
 * -EINVAL) or the application holds its own registration of exactly
 * that range with the same access (then the rkey lives until the last).
 * Errors: -EINVAL, -ENOENT (no such publication or export), -EEXIST
 * (exported already), -ENOSPC (max_exports reached), -EOPNOTSUPP
 * (export() or export_mem() on a publish_md() publication), -ESTALE
 * (export_md(): another agent's blob), registration and etcd errors.
 */
int rdmaxfer_directory_export(struct rdmaxfer_directory *dir,
			      const char *name,
			      const struct rdmaxfer_desc *desc);
int rdmaxfer_directory_export_md(struct rdmaxfer_directory *dir,
				 const char *name, const void *blob,
				 size_t len);
int rdmaxfer_directory_export_mem(struct rdmaxfer_directory *dir,
				  const char *name, void *addr, size_t len,
				  uint32_t access, struct rdmaxfer_desc *desc);
int rdmaxfer_directory_withdraw(struct rdmaxfer_directory *dir,
				const char *name,
				const struct rdmaxfer_desc *desc);

/* ------------------------------------------------------ look up, list */

/*
 * The metadata of NAME, its exports merged into md->descs (free with
 * rdmaxfer_md_free()).  Waits up to timeout_ms (-1: forever, 0: one
 * look) for the name to appear.  Errors: -EINVAL, -ENOENT (not listed
 * within timeout_ms), -EBADMSG (its entry is not a valid blob), -EPROTO
 * (another blob version), etcd errors.
 */
int rdmaxfer_directory_lookup(struct rdmaxfer_directory *dir,
			      const char *name, int timeout_ms,
			      struct rdmaxfer_md **mdp);

/* One agent of a list. */
struct rdmaxfer_dir_agent {
	char name[RDMAXFER_NAME_MAX];	/* its NAME in the namespace */
	uint64_t revision;		/* etcd mod revision of its entry */
	struct rdmaxfer_md *md;		/* exports merged into md->descs */
};

struct rdmaxfer_dir_list {
	size_t n;
	uint64_t revision;		/* etcd revision of the snapshot */
	uint64_t rejected;		/* entries refused (bad key or blob) */
	struct rdmaxfer_dir_agent *agents;	/* sorted by name */
};

/* Every valid agent of the namespace, one snapshot (the watch's when it
 * runs, else read from etcd).  Free with rdmaxfer_directory_list_free(). */
int rdmaxfer_directory_list(struct rdmaxfer_directory *dir,
			    struct rdmaxfer_dir_list **listp);
void rdmaxfer_directory_list_free(struct rdmaxfer_dir_list *list);

/*
 * Look NAME up (waiting for it as rdmaxfer_directory_lookup()) and
 * connect to it with rdmaxfer_connect_md() on its published blob, all
 * within timeout_ms (-1: the agent's cm_timeout_ms for the connection,
 * no limit on the wait): the exports list of the peer is the directory's.
 * Starts the watch, which from then on follows the entry: a changed
 * export list replaces the peer's exports list (all withdrawn: nothing
 * passes the local check any more), and an entry that leaves or names
 * another agent id fails the peer with -ESTALE (rdmaxfer_peer_error());
 * destroy it and connect by name again.  Errors: those of
 * rdmaxfer_directory_lookup() and rdmaxfer_connect_md(), and -ESTALE
 * (the entry changed while connecting).
 */
int rdmaxfer_connect_name(struct rdmaxfer_directory *dir,
			  struct rdmaxfer_agent *agent, const char *name,
			  int timeout_ms, struct rdmaxfer_peer **peerp);

/* ------------------------------------------------------------- watch */

enum rdmaxfer_dir_event_type {
	RDMAXFER_DIR_ARRIVE = 1,	/* a name now lists a valid agent */
	RDMAXFER_DIR_UPDATE = 2,	/* same agent, its exports changed */
	RDMAXFER_DIR_LEAVE = 3,		/* the name lists no agent any more */
};

struct rdmaxfer_dir_event {
	uint32_t type;			/* enum rdmaxfer_dir_event_type */
	uint32_t nexports;		/* exports now (0 on LEAVE) */
	uint64_t agent_id;		/* LEAVE: the agent that left */
	uint64_t revision;		/* etcd revision of the change */
	char name[RDMAXFER_NAME_MAX];
};

/*
 * Start following the namespace (a no-op when it runs): list it, then
 * watch from that revision on, resuming where it stopped when etcd
 * restarts and listing again when etcd compacted what it missed or lost
 * its store.  Waits up to timeout_ms for the first list (-ETIMEDOUT:
 * the watch keeps trying).  Events are per name and coalesced until
 * taken: each name yields what changed since it was last taken (ARRIVE
 * for every agent of the first list; a new agent id under a name: LEAVE,
 * then ARRIVE), so no change is lost and nothing queues without bound.
 */
int rdmaxfer_directory_watch(struct rdmaxfer_directory *dir, int timeout_ms);

/* Take up to max events, oldest first, waiting up to timeout_ms (-1:
 * forever) for one: the number taken, 0 (timeout_ms 0, none), or
 * -ETIMEDOUT; -EINVAL, or -EBUSY while a callback is set. */
int rdmaxfer_directory_events(struct rdmaxfer_directory *dir,
			      struct rdmaxfer_dir_event *ev, size_t max,
			      int timeout_ms);

/*
 * Deliver events to fn(user, ev) from the watch's thread instead (fn may
 * call the directory, except to close it).  fn NULL: back to
 * rdmaxfer_directory_events(); a call running in another thread has
 * returned when this returns.
 */
typedef void (*rdmaxfer_dir_event_fn)(void *user,
				      const struct rdmaxfer_dir_event *ev);
int rdmaxfer_directory_set_event_cb(struct rdmaxfer_directory *dir,
				    rdmaxfer_dir_event_fn fn, void *user);

/* ------------------------------------------------------------- state */

struct rdmaxfer_directory_info {
	char endpoint[256];		/* the endpoint in use */
	char ns[RDMAXFER_DIR_NS_MAX];
	uint64_t lease_id;		/* 0: nothing published */
	uint32_t ttl_s;			/* granted */
	uint32_t publications;
	uint32_t agents;		/* valid agents the watch lists */
	uint32_t watching;		/* 1: watch in sync with etcd */
	uint64_t revision;		/* last etcd revision seen */
	uint64_t events;		/* events delivered */
	uint64_t rejected;		/* entries refused (bad key or blob) */
	uint64_t republished;		/* lease or store lost: written back */
	uint64_t resyncs;		/* watch listed again */
	uint64_t peers_failed;		/* peers failed with -ESTALE */
	uint64_t peers_updated;		/* exports lists replaced */
	int32_t publish_err;		/* last keep-alive/re-publish error */
	int32_t watch_err;		/* last watch error (0: healthy) */
	uint64_t reserved[4];
};

int rdmaxfer_directory_query(struct rdmaxfer_directory *dir,
			     struct rdmaxfer_directory_info *info);

#ifdef __cplusplus
}
#endif

#endif /* RDMAXFER_DIRECTORY_H */
