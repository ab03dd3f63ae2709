// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * directory.c - the directory's life and its read side: open (reach etcd,
 * with a bounded retry), close, query, look-up, list, events, and
 * connecting to an agent by name.
 *
 * Look-up and list read the watch's table when the watch runs and is in
 * sync (no request at all), else read etcd directly into a table of their
 * own.  rdmaxfer_connect_name() connects with the library's own
 * rdmaxfer_connect_md() on the blob etcd holds, so the blob parser checks
 * it and the rdma_cm handshake proves the agent id, then checks that the
 * entry did not change meanwhile before it hands the peer to the watch to
 * follow.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "directory.h"

int64_t dir_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* timeout_ms < 0: 0 (no deadline) */
int64_t dir_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return 0;
	return dir_now_ns() + (int64_t)timeout_ms * 1000000;
}

int dir_cond_wait(pthread_cond_t *cond, pthread_mutex_t *lock,
		  int64_t deadline_ns)
{
	struct timespec ts;

	if (!deadline_ns) {
		pthread_cond_wait(cond, lock);
		return 0;
	}
	if (dir_now_ns() >= deadline_ns)
		return -ETIMEDOUT;
	ts.tv_sec = deadline_ns / 1000000000;
	ts.tv_nsec = deadline_ns % 1000000000;
	return pthread_cond_timedwait(cond, lock, &ts) == ETIMEDOUT ?
	       -ETIMEDOUT : 0;
}

static void cond_init(pthread_cond_t *c)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

static void from_env(const char **field, bool env, const char *var)
{
	if (!*field && env)
		*field = getenv(var);
}

/* Zeros become defaults, NULLs the environment's; -EINVAL for what is
 * out of range. */
static int attr_resolve(const struct rdmaxfer_directory_attr *in,
			struct rdmaxfer_directory_attr *a)
{
	bool env;
	int i;

	if (in)
		*a = *in;
	else
		rdmaxfer_directory_attr_init(a);
	for (i = 0; i < 4; i++)
		if (a->reserved[i])
			return -EINVAL;
	if (a->flags & ~RDMAXFER_DIR_NO_ENV)
		return -EINVAL;
	env = !(a->flags & RDMAXFER_DIR_NO_ENV);
	if (!a->ttl_s)
		a->ttl_s = RDMAXFER_DIR_DEF_TTL_S;
	if (!a->timeout_ms)
		a->timeout_ms = RDMAXFER_DIR_DEF_TIMEOUT_MS;
	if (!a->retry_ms)
		a->retry_ms = RDMAXFER_DIR_DEF_RETRY_MS;
	if (!a->max_agents)
		a->max_agents = RDMAXFER_DIR_DEF_MAX_AGENTS;
	if (!a->max_exports)
		a->max_exports = RDMAXFER_DIR_DEF_MAX_EXPORTS;
	if (a->ttl_s > 86400 || a->timeout_ms < 0 ||
	    a->timeout_ms > 3600000 || a->retry_ms < -1 ||
	    a->max_agents > (1U << 24) ||
	    a->max_exports > RDMAXFER_MD_MAX_DESCS)
		return -EINVAL;
	from_env(&a->endpoints, env, "RDMAXFER_DIRECTORY");
	from_env(&a->ns, env, "RDMAXFER_DIRECTORY_NAMESPACE");
	from_env(&a->ca_file, env, "RDMAXFER_DIRECTORY_CA");
	from_env(&a->cert_file, env, "RDMAXFER_DIRECTORY_CERT");
	from_env(&a->key_file, env, "RDMAXFER_DIRECTORY_KEY");
	from_env(&a->user, env, "RDMAXFER_DIRECTORY_USER");
	from_env(&a->password, env, "RDMAXFER_DIRECTORY_PASSWORD");
	if (!a->ns)
		a->ns = RDMAXFER_DIR_DEF_NAMESPACE;
	if (!a->endpoints || !dir_ns_valid(a->ns))
		return -EINVAL;
	return 0;
}

/* One request that proves etcd answers and lets us read the namespace. */
static int ping(struct rdmaxfer_directory *dir)
{
	char key[DIR_KEY_MAX];
	json_object *r;
	int ret;

	ret = dir_etcd_auth(&dir->conn);
	if (ret)
		return ret;
	r = json_object_new_object();
	if (!r)
		return -ENOMEM;
	snprintf(key, sizeof(key), "%s/", dir->ns);
	json_object_object_add(r, "key", dir_json_b64(key, strlen(key)));
	json_object_object_add(r, "limit", json_object_new_int(1));
	json_object_object_add(r, "count_only", json_object_new_boolean(1));
	return dir_etcd_call(&dir->conn, "/v3/kv/range", r, NULL);
}

static int reach(struct rdmaxfer_directory *dir)
{
	int64_t deadline = dir_now_ns() +
			   (int64_t)(dir->attr.retry_ms > 0 ?
				     dir->attr.retry_ms : 0) * 1000000;
	int ret;

	for (;;) {
		struct timespec ts = { 0, 200000000 };

		ret = ping(dir);
		if (!dir_err_transport(ret) || dir->attr.retry_ms < 0 ||
		    dir_now_ns() + 200000000 > deadline)
			return ret;
		nanosleep(&ts, NULL);
	}
}

static void dir_free(struct rdmaxfer_directory *dir)
{
	dir_state_fini(&dir->st);
	dir_conn_fini(&dir->conn);
	dir_etcd_fini(&dir->etcd);
	pthread_mutex_destroy(&dir->pub_lock);
	pthread_mutex_destroy(&dir->call_lock);
	pthread_mutex_destroy(&dir->lock);
	pthread_cond_destroy(&dir->cond);
	pthread_cond_destroy(&dir->ka_cond);
	free(dir);
}

DIR_EXPORT
int rdmaxfer_directory_open(const struct rdmaxfer_directory_attr *attr,
			    struct rdmaxfer_directory **dirp)
{
	struct rdmaxfer_directory_attr a;
	struct rdmaxfer_directory *dir;
	int ret;

	if (!dirp)
		return -EINVAL;
	dir = calloc(1, sizeof(*dir));
	if (!dir)
		return -ENOMEM;
	pthread_mutex_init(&dir->pub_lock, NULL);
	pthread_mutex_init(&dir->call_lock, NULL);
	pthread_mutex_init(&dir->lock, NULL);
	cond_init(&dir->cond);
	cond_init(&dir->ka_cond);
	ret = attr_resolve(attr, &a);
	if (ret) {
		dir_free(dir);
		return ret;
	}
	snprintf(dir->ns, sizeof(dir->ns), "%s", a.ns);
	/* the strings are copied (etcd.c); the numbers kept */
	dir->attr = a;
	dir->attr.endpoints = dir->attr.ns = NULL;
	dir->attr.ca_file = dir->attr.cert_file = dir->attr.key_file = NULL;
	dir->attr.user = dir->attr.password = NULL;
	ret = dir_etcd_init(&dir->etcd, &a, a.endpoints);
	if (!ret)
		ret = dir_conn_init(&dir->conn, &dir->etcd);
	if (!ret)
		ret = dir_state_init(&dir->st, dir->ns, dir->attr.max_agents,
				     dir->attr.max_exports);
	if (!ret)
		ret = reach(dir);
	if (ret) {
		dir_free(dir);
		return ret;
	}
	*dirp = dir;
	return 0;
}

DIR_EXPORT
void rdmaxfer_directory_close(struct rdmaxfer_directory *dir)
{
	if (!dir)
		return;
	pthread_mutex_lock(&dir->lock);
	__atomic_store_n(&dir->closing, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&dir->cond);
	pthread_cond_broadcast(&dir->ka_cond);
	pthread_mutex_unlock(&dir->lock);
	dir_watch_stop(dir);
	dir_publish_fini(dir);
	dir_free(dir);
}

DIR_EXPORT
int rdmaxfer_directory_query(struct rdmaxfer_directory *dir,
			     struct rdmaxfer_directory_info *info)
{
	if (!dir || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	dir_etcd_endpoint(&dir->etcd, info->endpoint, sizeof(info->endpoint));
	pthread_mutex_lock(&dir->lock);
	snprintf(info->ns, sizeof(info->ns), "%s", dir->ns);
	info->lease_id = (uint64_t)dir->lease_id;
	info->ttl_s = dir->lease_ttl;
	info->publications = dir->npubs;
	info->agents = dir->synced ? dir->st.valid : 0;
	info->watching = dir->synced && !dir->watch_err;
	info->revision = dir->revision;
	info->events = dir->events;
	info->rejected = dir->st.rejected;
	info->republished = dir->republished;
	info->resyncs = dir->resyncs;
	info->peers_failed = dir->peers_failed;
	info->peers_updated = dir->peers_updated;
	info->publish_err = dir->publish_err;
	info->watch_err = dir->watch_err;
	pthread_mutex_unlock(&dir->lock);
	return 0;
}

/* --------------------------------------------------- look-up and list */

static json_object *range_op(const char *key, const char *end)
{
	json_object *op = json_object_new_object(), *r = json_object_new_object();

	if (!op || !r) {
		json_object_put(op);
		json_object_put(r);
		return NULL;
	}
	json_object_object_add(r, "key", dir_json_b64(key, strlen(key)));
	if (end)
		json_object_object_add(r, "range_end",
				       dir_json_b64(end, strlen(end)));
	json_object_object_add(op, "request_range", r);
	return op;
}

/*
 * NAME's keys from etcd into st (no watch): its agent key and its export
 * keys, two ranges of one transaction, so one request and one revision.
 */
static int read_name(struct rdmaxfer_directory *dir, const char *name,
		     struct dir_state *st)
{
	char key[DIR_KEY_MAX], pre[DIR_KEY_MAX], end[DIR_KEY_MAX];
	json_object *r, *ops, *resp = NULL, *arr, *rr;
	uint8_t *last = NULL;
	size_t i, last_len;
	int64_t rev;
	bool more;
	int ret;

	if (dir_key_agent(dir->ns, name, key, sizeof(key)) ||
	    dir_key_exports(dir->ns, name, pre, sizeof(pre)))
		return -EINVAL;
	/* NS/exports/NAME/ .. NS/exports/NAME0 */
	snprintf(end, sizeof(end), "%s", pre);
	end[strlen(end) - 1]++;
	r = json_object_new_object();
	ops = json_object_new_array();
	if (!r || !ops) {
		json_object_put(r);
		json_object_put(ops);
		return -ENOMEM;
	}
	json_object_array_add(ops, range_op(key, NULL));
	json_object_array_add(ops, range_op(pre, end));
	json_object_object_add(r, "success", ops);
	pthread_mutex_lock(&dir->call_lock);
	ret = dir_etcd_call(&dir->conn, "/v3/kv/txn", r, &resp);
	pthread_mutex_unlock(&dir->call_lock);
	if (ret)
		return ret;
	dir_state_list_begin(st);
	if (!json_object_object_get_ex(resp, "responses", &arr) ||
	    !json_object_is_type(arr, json_type_array) ||
	    json_object_array_length(arr) != 2)
		ret = -EBADMSG;
	for (i = 0; !ret && i < 2; i++) {
		if (!json_object_object_get_ex(json_object_array_get_idx(arr, i),
					       "response_range", &rr)) {
			ret = -EBADMSG;
			break;
		}
		ret = dir_state_range_page(st, rr, &more, &rev, &last,
					   &last_len);
		free(last);
		last = NULL;
	}
	json_object_put(resp);
	return ret;
}

/* lock held (watch in sync) or st private: NAME's metadata, or why not */
static int md_of(struct dir_state *st, const char *name,
		 struct rdmaxfer_md **mdp)
{
	struct dir_agent *a = dir_state_find(st, name);

	if (dir_agent_present(a))
		return dir_agent_md(a, mdp);
	return a && a->bad ? a->bad : -ENOENT;
}

static bool watching(struct rdmaxfer_directory *dir)
{
	bool w;

	pthread_mutex_lock(&dir->lock);
	w = dir->watch_running && dir->synced;
	pthread_mutex_unlock(&dir->lock);
	return w;
}

DIR_EXPORT
int rdmaxfer_directory_lookup(struct rdmaxfer_directory *dir,
			      const char *name, int timeout_ms,
			      struct rdmaxfer_md **mdp)
{
	int64_t deadline = dir_deadline(timeout_ms);
	int ret;

	if (!dir || !mdp || !dir_name_valid(name))
		return -EINVAL;
	if (watching(dir)) {
		pthread_mutex_lock(&dir->lock);
		for (;;) {
			ret = md_of(&dir->st, name, mdp);
			if (ret != -ENOENT || !timeout_ms || dir->closing ||
			    dir_cond_wait(&dir->cond, &dir->lock, deadline))
				break;
		}
		/* the wait may have ended just as it appeared */
		if (ret == -ENOENT)
			ret = md_of(&dir->st, name, mdp);
		pthread_mutex_unlock(&dir->lock);
		return ret;
	}
	/* no watch: look, and look again every 100 ms until the deadline */
	for (;;) {
		struct timespec ts = { 0, 100000000 };
		struct dir_state st;

		ret = dir_state_init(&st, dir->ns, 1, dir->attr.max_exports);
		if (!ret)
			ret = read_name(dir, name, &st);
		if (!ret)
			ret = md_of(&st, name, mdp);
		dir_state_fini(&st);
		if (ret != -ENOENT || !timeout_ms ||
		    (deadline && dir_now_ns() + 100000000 > deadline))
			return ret;
		nanosleep(&ts, NULL);
	}
}

DIR_EXPORT
int rdmaxfer_directory_list(struct rdmaxfer_directory *dir,
			    struct rdmaxfer_dir_list **listp)
{
	struct dir_state st;
	int64_t rev;
	int ret;

	if (!dir || !listp)
		return -EINVAL;
	if (watching(dir)) {
		pthread_mutex_lock(&dir->lock);
		ret = dir_state_snapshot(&dir->st, listp);
		pthread_mutex_unlock(&dir->lock);
		return ret;
	}
	ret = dir_state_init(&st, dir->ns, dir->attr.max_agents,
			     dir->attr.max_exports);
	if (ret)
		return ret;
	pthread_mutex_lock(&dir->call_lock);
	ret = dir_read_all(dir, &dir->conn, &st, &rev);
	pthread_mutex_unlock(&dir->call_lock);
	if (!ret) {
		st.revision = (uint64_t)rev;
		ret = dir_state_snapshot(&st, listp);
	}
	dir_state_fini(&st);
	return ret;
}

DIR_EXPORT
void rdmaxfer_directory_list_free(struct rdmaxfer_dir_list *list)
{
	dir_list_free(list);
}

/* ---------------------------------------------------- connect by name */

/* What a connection to NAME needs, copied out of the table. */
struct target {
	uint8_t *blob;
	size_t blob_len;
	size_t blob_descs;		/* the blob's own descriptors */
	struct rdmaxfer_desc *descs;	/* its exports, merged */
	size_t n;
	uint64_t id;
	uint64_t gen;
};

static void target_free(struct target *t)
{
	free(t->blob);
	free(t->descs);
	memset(t, 0, sizeof(*t));
}

/* lock held */
static int target_copy(struct dir_agent *a, struct target *t, bool blob)
{
	size_t n = dir_agent_exports(a, NULL, 0);

	free(t->descs);
	t->descs = n ? malloc(n * sizeof(*t->descs)) : NULL;
	if (n && !t->descs)
		return -ENOMEM;
	t->n = dir_agent_exports(a, t->descs, n);
	t->id = a->md->agent_id;
	t->gen = a->gen;
	if (!blob)
		return 0;
	t->blob = malloc(a->blob_len);
	if (!t->blob)
		return -ENOMEM;
	memcpy(t->blob, a->blob, a->blob_len);
	t->blob_len = a->blob_len;
	t->blob_descs = a->md->ndescs;
	return 0;
}

/* lock held: wait until NAME lists an agent */
static int wait_target(struct rdmaxfer_directory *dir, const char *name,
		       int timeout_ms, int64_t deadline, struct target *t)
{
	struct dir_agent *a;
	int ret;

	ret = dir_watch_wait_sync(dir, deadline);
	if (ret)
		return ret;
	for (;;) {
		a = dir_state_find(&dir->st, name);
		if (dir_agent_present(a))
			return target_copy(a, t, true);
		if (a && a->bad)
			return a->bad;
		if (!timeout_ms || dir->closing ||
		    dir_cond_wait(&dir->cond, &dir->lock, deadline)) {
			a = dir_state_find(&dir->st, name);
			if (dir_agent_present(a))
				return target_copy(a, t, true);
			return -ENOENT;
		}
	}
}

/*
 * The watch not in sync yet (a directory just opened): NAME read from
 * etcd directly, so the first connection does not wait for the whole
 * namespace.  t->gen is DIR_GEN_DIRECT: the watch compares the peer with
 * its own entry once its first list is in.
 */
static int direct_target(struct rdmaxfer_directory *dir, const char *name,
			 struct target *t)
{
	struct dir_state st;
	struct dir_agent *a;
	int ret;

	ret = dir_state_init(&st, dir->ns, 1, dir->attr.max_exports);
	if (!ret)
		ret = read_name(dir, name, &st);
	if (!ret) {
		a = dir_state_find(&st, name);
		if (dir_agent_present(a))
			ret = target_copy(a, t, true);
		else
			ret = a && a->bad ? a->bad : -ENOENT;
	}
	t->gen = DIR_GEN_DIRECT;
	dir_state_fini(&st);
	return ret;
}

DIR_EXPORT
int rdmaxfer_connect_name(struct rdmaxfer_directory *dir,
			  struct rdmaxfer_agent *agent, const char *name,
			  int timeout_ms, struct rdmaxfer_peer **peerp)
{
	int64_t deadline = dir_deadline(timeout_ms), left;
	struct target t = { 0 };
	struct rdmaxfer_peer *peer = NULL;
	struct dir_agent *a;
	bool synced;
	int ret, tries;

	if (!dir || !agent || !peerp || !dir_name_valid(name))
		return -EINVAL;
	pthread_mutex_lock(&dir->lock);
	synced = dir->synced;
	pthread_mutex_unlock(&dir->lock);
	/* a watch starting now would compete with this connection for the
	 * CPU and for etcd: it starts once the peer is handed over */
	ret = synced ? -ENOENT : direct_target(dir, name, &t);
	/* not there (yet): wait for it as the watch sees it */
	if (ret == -ENOENT) {
		ret = dir_watch_start(dir);
		if (!ret) {
			pthread_mutex_lock(&dir->lock);
			ret = wait_target(dir, name, timeout_ms, deadline, &t);
			pthread_mutex_unlock(&dir->lock);
		}
		/* the watch not in sync by then: the read said absent */
		if (ret == -ETIMEDOUT && !synced)
			ret = -ENOENT;
	}
	if (ret)
		goto out;
	/* what is left of timeout_ms (at least 1 ms), or the agent's own */
	left = deadline ? (deadline - dir_now_ns()) / 1000000 : 0;
	ret = rdmaxfer_connect_md(agent, t.blob, t.blob_len,
				  deadline ? (int)(left > 0 ? left : 1) : 0,
				  &peer);
	if (ret)
		goto out;
	/* the export keys on top of the blob's own descriptors */
	if (t.n > t.blob_descs) {
		ret = rdmaxfer_peer_set_exports(peer, t.descs, t.n);
		if (ret)
			goto destroy;
	}
	/* the entry may have changed while we connected: catch up, then
	 * hand the peer to the watch under the same lock (before its first
	 * list, as read: the list's end compares) */
	for (tries = 0;; tries++) {
		pthread_mutex_lock(&dir->lock);
		if (!dir->synced) {
			ret = dir_follow_add(dir, name, agent, peer, t.id,
					     DIR_GEN_DIRECT, t.n > 0);
			pthread_mutex_unlock(&dir->lock);
			if (ret)
				goto destroy;
			break;
		}
		a = dir_state_find(&dir->st, name);
		if (!dir_agent_present(a) || a->md->agent_id != t.id ||
		    tries == 16) {
			pthread_mutex_unlock(&dir->lock);
			ret = -ESTALE;
			goto destroy;
		}
		if (a->gen == t.gen) {
			ret = dir_follow_add(dir, name, agent, peer, t.id,
					     t.gen, t.n > 0);
			pthread_mutex_unlock(&dir->lock);
			if (ret)
				goto destroy;
			break;
		}
		ret = target_copy(a, &t, false);
		pthread_mutex_unlock(&dir->lock);
		if (!ret)
			ret = rdmaxfer_peer_set_exports(peer, t.descs, t.n);
		if (ret)
			goto destroy;
	}
	/* the watch follows the peer from here (a no-op when it runs) */
	ret = dir_watch_start(dir);
	if (ret)
		goto destroy;
	*peerp = peer;
	target_free(&t);
	return 0;

destroy:
	rdmaxfer_peer_destroy(peer);
out:
	target_free(&t);
	return ret;
}

/* ------------------------------------------------------------- watch */

DIR_EXPORT
int rdmaxfer_directory_watch(struct rdmaxfer_directory *dir, int timeout_ms)
{
	int ret;

	if (!dir)
		return -EINVAL;
	ret = dir_watch_start(dir);
	if (ret)
		return ret;
	pthread_mutex_lock(&dir->lock);
	ret = dir_watch_wait_sync(dir, timeout_ms ? dir_deadline(timeout_ms) :
				  dir_now_ns());
	pthread_mutex_unlock(&dir->lock);
	return ret;
}

DIR_EXPORT
int rdmaxfer_directory_events(struct rdmaxfer_directory *dir,
			      struct rdmaxfer_dir_event *ev, size_t max,
			      int timeout_ms)
{
	int64_t deadline = dir_deadline(timeout_ms);
	size_t n = 0;
	int ret = 0;

	if (!dir || !ev || !max)
		return -EINVAL;
	if (max > INT32_MAX)
		max = INT32_MAX;
	pthread_mutex_lock(&dir->lock);
	for (;;) {
		if (dir->cb) {
			ret = -EBUSY;
			break;
		}
		if (!dir->watch_running) {
			ret = -ENOTCONN;
			break;
		}
		while (n < max && !dir_state_next_event(&dir->st, &ev[n]))
			n++;
		if (n || !timeout_ms)
			break;
		if (dir->closing ||
		    dir_cond_wait(&dir->cond, &dir->lock, deadline)) {
			while (n < max && !dir_state_next_event(&dir->st, &ev[n]))
				n++;
			if (!n)
				ret = -ETIMEDOUT;
			break;
		}
	}
	dir->events += n;
	pthread_mutex_unlock(&dir->lock);
	return n ? (int)n : ret;
}

DIR_EXPORT
int rdmaxfer_directory_set_event_cb(struct rdmaxfer_directory *dir,
				    rdmaxfer_dir_event_fn fn, void *user)
{
	if (!dir)
		return -EINVAL;
	pthread_mutex_lock(&dir->lock);
	dir->cb = fn;
	dir->cb_user = user;
	/* the old callback may be running in the watch thread */
	while (dir->cb_running && !pthread_equal(dir->cb_thread, pthread_self()))
		pthread_cond_wait(&dir->cond, &dir->lock);
	pthread_mutex_unlock(&dir->lock);
	if (fn)
		dir_watch_kick(dir);	/* what is pending goes out now */
	return 0;
}
