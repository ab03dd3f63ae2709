/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * directory.h - the directory's private structures (rdmaxfer_directory.h
 * is its public face).
 *
 * The directory is an extension on top of librdmaxfer: it calls the
 * library's public API (rdmaxfer_md_pack/_parse, rdmaxfer_connect_md,
 * rdmaxfer_mem_register_access, ...) and one narrow hook of the core
 * (core/peer_hook.h); the core knows nothing of it.  Its files:
 *   dir_codec.c   names and keys, base64, what etcd's JSON answers hold
 *   dir_state.c   the table of names a watch or list builds, and events
 *   etcd.c        requests to etcd through libcurl: endpoints, TLS, auth
 *   publish.c     publications, exports, the lease and its keep-alive
 *   watch.c       the watch thread, events, peers followed by name
 *   directory.c   open/close/query, look-up, list, connect by name
 * dir_codec.c and dir_state.c need json-c and the blob parser only, so
 * the host tests and the fuzzer build them alone.
 */
#ifndef RDMAXFER_DIRECTORY_PRIV_H
#define RDMAXFER_DIRECTORY_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "rdmaxfer.h"
#include "rdmaxfer_directory.h"

#define DIR_EXPORT	__attribute__((visibility("default")))

/* what etcd may send us, bounded before anything is kept */
#define DIR_KEY_MAX		512		/* bytes of a key we look at */
#define DIR_VALUE_MAX		(2U << 20)	/* a value (etcd's own 1.5 MiB) */
#define DIR_RESPONSE_MAX	(64U << 20)	/* one answer or watch line */
#define DIR_JSON_DEPTH		16
#define DIR_ID_MAX		65		/* export id, NUL included */
#define DIR_PAGE_KEYS		512		/* range page, halved on -E2BIG */

/* ------------------------------------------------------- dir_codec.c */

bool dir_name_valid(const char *name);
bool dir_ns_valid(const char *ns);

enum dir_key_kind {
	DIR_KEY_OTHER = 0,	/* outside agents/ and exports/: ignored */
	DIR_KEY_BAD,		/* under them, but not a valid name or id */
	DIR_KEY_AGENT,		/* NS/agents/NAME */
	DIR_KEY_EXPORT,		/* NS/exports/NAME/ID */
};

struct dir_key {
	enum dir_key_kind kind;
	char name[RDMAXFER_NAME_MAX];
	char id[DIR_ID_MAX];
};

void dir_key_classify(const char *ns, const uint8_t *key, size_t len,
		      struct dir_key *out);
/* NS/agents/NAME, NS/exports/NAME/, NS/exports/NAME/ID of a descriptor */
int dir_key_agent(const char *ns, const char *name, char *buf, size_t cap);
int dir_key_exports(const char *ns, const char *name, char *buf, size_t cap);
int dir_key_export(const char *ns, const char *name,
		   const struct rdmaxfer_desc *d, char *buf, size_t cap);

size_t dir_b64_len(size_t n);
void dir_b64_encode(const uint8_t *in, size_t n, char *out);
/* strict: padding required, nothing else than the alphabet; -EBADMSG */
int dir_b64_decode(const char *in, size_t n, uint8_t *out, size_t cap,
		   size_t *lenp);
/* a new JSON string holding base64 of [p, p + n) */
json_object *dir_json_b64(const void *p, size_t n);

/* An int64 member (etcd sends them as strings): 0, -ENOENT, -EBADMSG. */
int dir_json_i64(json_object *obj, const char *key, int64_t *out);
/* Parse at most DIR_RESPONSE_MAX bytes of one JSON text: 0, -EBADMSG. */
int dir_json_parse(const char *text, size_t len, json_object **objp);

/* One key-value of an answer, decoded (key and value point into buf). */
struct dir_kv {
	uint8_t *key;
	size_t key_len;
	uint8_t *value;
	size_t value_len;
	int64_t mod_rev;
	int64_t lease;
	uint8_t *buf;
};
/* 0, -EBADMSG (not a kv, bad base64, too long), -ENOMEM; free with
 * dir_kv_free(). */
int dir_kv_decode(json_object *kv, struct dir_kv *out);
void dir_kv_free(struct dir_kv *kv);

/* ------------------------------------------------------- dir_state.c */

struct dir_export {
	char id[DIR_ID_MAX];
	uint64_t agent_id;		/* the blob's: counts for that agent only */
	struct rdmaxfer_desc desc;
	uint64_t stamp;			/* list generation that saw it */
};

/* One name of the namespace, as etcd has it and as it was delivered. */
struct dir_agent {
	char name[RDMAXFER_NAME_MAX];
	struct dir_agent *hnext;	/* hash chain */
	/* the agent key: the raw blob and what the parser made of it */
	uint8_t *blob;
	size_t blob_len;
	struct rdmaxfer_md *md;		/* NULL: no valid agent listed */
	int bad;			/* the parser's error for its value */
	uint64_t rev;			/* mod revision of the agent key */
	uint64_t change_rev;		/* revision of the last change */
	uint64_t stamp;
	struct dir_export *exports;	/* export keys under the name */
	uint32_t nexports, cap;
	uint64_t gen;			/* bumped when the effective state changes */
	/* store reset: absent from the new list, kept until then (ns) */
	int64_t leave_deadline_ns;
	/* delivered: what the application was last told */
	bool seen;
	uint64_t seen_id;
	uint64_t seen_gen;
	/* pending work: events to derive, peers to follow */
	bool dirty, follow;
	struct dir_agent *dnext, *fnext;
};

struct dir_state {
	char ns[RDMAXFER_DIR_NS_MAX];
	uint32_t max_agents, max_exports;
	struct dir_agent **buckets;
	size_t nbuckets, count;
	uint32_t valid;			/* entries with a valid agent */
	struct dir_agent *dhead, *dtail;	/* dirty: events to derive */
	struct dir_agent *fhead, *ftail;	/* peers of these to follow */
	uint64_t rejected;
	uint64_t revision;		/* highest revision applied */
	uint64_t stamp;			/* list generation */
};

int dir_state_init(struct dir_state *st, const char *ns,
		   uint32_t max_agents, uint32_t max_exports);
void dir_state_fini(struct dir_state *st);
struct dir_agent *dir_state_find(struct dir_state *st, const char *name);
/* Apply a put or a delete of one key (kv->value unused for a delete). */
void dir_state_put(struct dir_state *st, const struct dir_kv *kv);
void dir_state_del(struct dir_state *st, const uint8_t *key, size_t len,
		   uint64_t rev);
/* A list: begin, put every kv, end.  reset: etcd lost its store, so an
 * agent missing from the list stays until deadline_ns (it re-publishes). */
void dir_state_list_begin(struct dir_state *st);
void dir_state_list_end(struct dir_state *st, bool reset, int64_t deadline_ns);
/* Agents kept past a store reset whose time is up leave; returns the
 * earliest deadline still pending (0: none). */
int64_t dir_state_expire(struct dir_state *st, int64_t now_ns);

/*
 * One line of a watch stream ({"result": ...} or {"error": ...}): its
 * events applied.  out: what the line said about the watch itself.
 */
struct dir_watch_line {
	bool created;
	bool canceled;
	int64_t header_rev;		/* 0: none */
	int64_t raft_term;		/* 0: none */
	int64_t compact_rev;		/* canceled: compacted up to */
	uint32_t events;
	int error;			/* {"error": ...}: -EIO */
};
int dir_state_watch_line(struct dir_state *st, const char *line, size_t len,
			 struct dir_watch_line *out);
/* The kvs of one range answer put into st; *more, *rev, *last (the last
 * key, for the next page; malloc'd). */
int dir_state_range_page(struct dir_state *st, json_object *resp, bool *more,
			 int64_t *rev, uint8_t **last, size_t *last_len);

/* The agent's exports: its blob's descriptors, then the export keys of
 * the same agent id; *n the count (NULL descs: count only). */
size_t dir_agent_exports(const struct dir_agent *a,
			 struct rdmaxfer_desc *descs, size_t max);
/* A copy of its metadata with the exports merged, one allocation, as
 * rdmaxfer_md_parse() makes them (rdmaxfer_md_free() frees it). */
int dir_agent_md(const struct dir_agent *a, struct rdmaxfer_md **mdp);
bool dir_agent_present(const struct dir_agent *a);

/* The next event to deliver, if any (0 / -ENOENT). */
int dir_state_next_event(struct dir_state *st, struct rdmaxfer_dir_event *ev);
/* The next entry whose peers must be looked at, or NULL. */
struct dir_agent *dir_state_next_follow(struct dir_state *st);
/* Free entries nothing refers to any more. */
void dir_state_gc(struct dir_state *st, struct dir_agent *a);
int dir_state_snapshot(struct dir_state *st, struct rdmaxfer_dir_list **listp);
void dir_list_free(struct rdmaxfer_dir_list *l);

/* ----------------------------------------------------------- etcd.c */

struct dir_etcd {
	char *urls[RDMAXFER_DIR_MAX_ENDPOINTS];
	unsigned int nurls;
	unsigned int cur;		/* the endpoint that answered last */
	char *ca_file, *cert_file, *key_file, *user, *password;
	int timeout_ms;
	pthread_mutex_t lock;		/* cur, token */
	char *token;			/* auth token, NULL without a user */
};

/* One connection of one thread (a curl easy handle and its buffers). */
struct dir_conn {
	struct dir_etcd *etcd;
	void *curl;
	char *buf;
	size_t len, cap;
};

int dir_etcd_init(struct dir_etcd *e, const struct rdmaxfer_directory_attr *a,
		  const char *endpoints);
void dir_etcd_fini(struct dir_etcd *e);
int dir_conn_init(struct dir_conn *c, struct dir_etcd *e);
void dir_conn_fini(struct dir_conn *c);
/* Authenticate when a user is set (a no-op otherwise). */
int dir_etcd_auth(struct dir_conn *c);
/* POST req (taken) to path; *resp the parsed answer (NULL allowed). */
int dir_etcd_call(struct dir_conn *c, const char *path, json_object *req,
		  json_object **resp);
bool dir_err_transport(int err);
/* Set up c->curl for a watch stream on the current endpoint. */
int dir_etcd_stream_setup(struct dir_conn *c, const char *path,
			  const char *body, void *write_fn, void *user);
void dir_etcd_endpoint(struct dir_etcd *e, char *buf, size_t cap);
void dir_etcd_next_endpoint(struct dir_etcd *e);

/* ---------------------------------------------------- the directory */

struct dir_pub_export {
	struct dir_pub_export *next;
	struct rdmaxfer_desc desc;
	uint8_t *blob;			/* the value of its key */
	size_t blob_len;
	struct rdmaxfer_mem *mem;	/* export_mem(): ours to deregister */
};

struct dir_pub {
	struct dir_pub *next;
	char name[RDMAXFER_NAME_MAX];
	struct rdmaxfer_agent *agent;	/* NULL: publish_md() */
	uint8_t *blob;
	size_t blob_len;
	uint64_t agent_id;
	struct dir_pub_export *exports;
	uint32_t nexports;
};

/* A key whose deletion etcd did not take yet (withdraw while it was down). */
struct dir_orphan {
	struct dir_orphan *next;
	char key[DIR_KEY_MAX];
	bool prefix;			/* every key under it */
};

/* the generation of a peer connected from a direct read (no table entry
 * yet): never an entry's, so the watch's first list compares */
#define DIR_GEN_DIRECT	UINT64_MAX

/* A peer connected by name, followed by the watch. */
struct dir_follow {
	struct dir_follow *next;
	char name[RDMAXFER_NAME_MAX];
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_peer *peer;
	uint64_t remote_id;
	uint64_t gen;			/* entry generation it was given */
	bool had_exports;
};

struct rdmaxfer_directory {
	struct rdmaxfer_directory_attr attr;
	char ns[RDMAXFER_DIR_NS_MAX];
	struct dir_etcd etcd;
	/* changes of the publications, the application's and the
	 * keep-alive thread's (taken before call_lock and lock) */
	pthread_mutex_t pub_lock;
	/* calls of the application (one at a time on this connection) */
	pthread_mutex_t call_lock;
	struct dir_conn conn;

	/* everything below: under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* state changed, events, sync */
	bool closing;

	/* publications (publish.c) */
	struct dir_pub *pubs;
	uint32_t npubs;
	int64_t lease_id;
	uint32_t lease_ttl;
	bool ka_running;
	pthread_t ka_thread;
	pthread_cond_t ka_cond;
	struct dir_orphan *orphans;

	/* the watch (watch.c) */
	struct dir_state st;
	bool watch_running;
	bool synced;			/* first list applied */
	pthread_t watch_thread;
	void *multi;			/* curl multi handle, for wakeup */
	struct dir_follow *follows;
	uint32_t nfollows;
	rdmaxfer_dir_event_fn cb;
	void *cb_user;
	bool cb_running;
	pthread_t cb_thread;

	/* counters and last errors (rdmaxfer_directory_info) */
	uint64_t revision;
	uint64_t events, republished, resyncs, peers_failed, peers_updated;
	int publish_err, watch_err;
};

/* closing is set under lock and read, without it, by the threads' loops */
static inline bool dir_closing(struct rdmaxfer_directory *dir)
{
	return __atomic_load_n(&dir->closing, __ATOMIC_ACQUIRE);
}

int64_t dir_now_ns(void);
/* lock held: wait on cond until deadline_ns (0: forever); -ETIMEDOUT */
int dir_cond_wait(pthread_cond_t *cond, pthread_mutex_t *lock,
		  int64_t deadline_ns);
int64_t dir_deadline(int timeout_ms);

int dir_publish_fini(struct rdmaxfer_directory *dir);
int dir_watch_start(struct rdmaxfer_directory *dir);
void dir_watch_stop(struct rdmaxfer_directory *dir);
/* lock held: wait until the first list is in (deadline 0: forever) */
int dir_watch_wait_sync(struct rdmaxfer_directory *dir, int64_t deadline_ns);
/* a peer to follow (connect by name); lock held */
int dir_follow_add(struct rdmaxfer_directory *dir, const char *name,
		   struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		   uint64_t remote_id, uint64_t gen, bool had_exports);
/* a list read from etcd (no watch), one snapshot; into st */
int dir_read_all(struct rdmaxfer_directory *dir, struct dir_conn *c,
		 struct dir_state *st, int64_t *revp);
/* the keys [key, end) into st at one revision (*revp 0: the current);
 * lock (may be NULL) held while a page is applied */
int dir_read_range(struct dir_conn *c, struct dir_state *st,
		   pthread_mutex_t *lock, const char *key, const char *end,
		   int64_t *revp);
/* wake the watch thread (a callback was set) */
void dir_watch_kick(struct rdmaxfer_directory *dir);

#endif /* RDMAXFER_DIRECTORY_PRIV_H */
