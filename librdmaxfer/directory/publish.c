// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * publish.c - publications: an agent's blob under NS/agents/NAME and one
 * key per export under NS/exports/NAME/, all bound to the directory's
 * lease, and the thread that keeps the lease alive.
 *
 * A name is taken with a transaction (create the key only if it does not
 * exist, else update it only if it is on our lease), so two agents never
 * silently overwrite each other's entry.  The directory keeps its own copy
 * of everything it published: when etcd answers that the lease is gone
 * (it expired while etcd was unreachable, or etcd restarted from an empty
 * store), the keep-alive thread grants a new one and writes every
 * publication and export back.  A withdrawal deregisters the memory it
 * owns before it looks at etcd, so the target refuses the range even when
 * etcd is down; a deletion etcd did not take is retried by that thread.
 *
 * Locks: pub_lock serialises every change of the publications (the
 * application's calls and the thread's re-publish) and is taken first;
 * call_lock guards the application's etcd connection; lock the state.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "directory.h"

static json_object *id_str(int64_t id)
{
	char s[24];

	snprintf(s, sizeof(s), "%lld", (long long)id);
	return json_object_new_string(s);
}

static json_object *put_req(const char *key, const void *val, size_t len,
			    int64_t lease)
{
	json_object *r = json_object_new_object();

	if (!r)
		return NULL;
	json_object_object_add(r, "key", dir_json_b64(key, strlen(key)));
	json_object_object_add(r, "value", dir_json_b64(val, len));
	if (lease)
		json_object_object_add(r, "lease", id_str(lease));
	return r;
}

static int etcd_put(struct dir_conn *c, const char *key, const void *val,
		    size_t len, int64_t lease)
{
	return dir_etcd_call(c, "/v3/kv/put", put_req(key, val, len, lease),
			     NULL);
}

/* key, or with prefix every key that starts with it */
static int etcd_delete(struct dir_conn *c, const char *key, bool prefix)
{
	json_object *r = json_object_new_object();
	size_t n = strlen(key);

	if (!r)
		return -ENOMEM;
	json_object_object_add(r, "key", dir_json_b64(key, n));
	if (prefix) {
		char end[DIR_KEY_MAX];

		/* keys end in '/' here: the range end is the next byte */
		memcpy(end, key, n);
		end[n - 1]++;
		json_object_object_add(r, "range_end", dir_json_b64(end, n));
	}
	return dir_etcd_call(c, "/v3/kv/deleterange", r, NULL);
}

/*
 * Take NS/agents/NAME for our lease: created if absent, updated if it is
 * ours already (written again after a lost answer), -EEXIST if another
 * lease holds it.
 */
static int take_name(struct dir_conn *c, const char *key, const void *blob,
		     size_t len, int64_t lease)
{
	json_object *r, *cmp, *cmps, *succ, *fail, *op, *rng, *resp = NULL;
	json_object *v, *arr, *kvs;
	int64_t owner = -1;
	int ret;

	r = json_object_new_object();
	cmp = json_object_new_object();
	cmps = json_object_new_array();
	succ = json_object_new_array();
	fail = json_object_new_array();
	op = json_object_new_object();
	rng = json_object_new_object();
	if (!r || !cmp || !cmps || !succ || !fail || !op || !rng) {
		json_object_put(r);
		json_object_put(cmp);
		json_object_put(cmps);
		json_object_put(succ);
		json_object_put(fail);
		json_object_put(op);
		json_object_put(rng);
		return -ENOMEM;
	}
	json_object_object_add(cmp, "key", dir_json_b64(key, strlen(key)));
	json_object_object_add(cmp, "target", json_object_new_string("CREATE"));
	json_object_object_add(cmp, "result", json_object_new_string("EQUAL"));
	json_object_object_add(cmp, "create_revision", id_str(0));
	json_object_array_add(cmps, cmp);
	json_object_object_add(op, "request_put",
			       put_req(key, blob, len, lease));
	json_object_array_add(succ, op);
	json_object_object_add(rng, "key", dir_json_b64(key, strlen(key)));
	op = json_object_new_object();
	if (op) {
		json_object_object_add(op, "request_range", rng);
		json_object_array_add(fail, op);
	} else {
		json_object_put(rng);
	}
	json_object_object_add(r, "compare", cmps);
	json_object_object_add(r, "success", succ);
	json_object_object_add(r, "failure", fail);
	ret = dir_etcd_call(c, "/v3/kv/txn", r, &resp);
	if (ret)
		return ret;
	if (json_object_object_get_ex(resp, "succeeded", &v) &&
	    json_object_get_boolean(v)) {
		json_object_put(resp);
		return 0;
	}
	/* responses[0].response_range.kvs[0].lease */
	if (json_object_object_get_ex(resp, "responses", &arr) &&
	    json_object_is_type(arr, json_type_array) &&
	    json_object_array_length(arr) == 1 &&
	    json_object_object_get_ex(json_object_array_get_idx(arr, 0),
				      "response_range", &v) &&
	    json_object_object_get_ex(v, "kvs", &kvs) &&
	    json_object_is_type(kvs, json_type_array) &&
	    json_object_array_length(kvs) == 1 &&
	    dir_json_i64(json_object_array_get_idx(kvs, 0), "lease", &owner))
		owner = 0;		/* a key without a lease is nobody's */
	json_object_put(resp);
	if (owner != lease)
		return -EEXIST;
	return etcd_put(c, key, blob, len, lease);
}

/* POST {name: "v"} to path: the lease calls */
static int call_num(struct dir_conn *c, const char *path, const char *name,
		    int64_t v, json_object **resp)
{
	json_object *r = json_object_new_object();

	if (!r)
		return -ENOMEM;
	json_object_object_add(r, name, id_str(v));
	return dir_etcd_call(c, path, r, resp);
}

static int grant(struct dir_conn *c, uint32_t ttl, int64_t *id,
		 uint32_t *granted)
{
	json_object *resp = NULL;
	int64_t x, t;
	int ret;

	ret = call_num(c, "/v3/lease/grant", "TTL", ttl, &resp);
	if (ret)
		return ret;
	if (dir_json_i64(resp, "ID", &x) || !x ||
	    dir_json_i64(resp, "TTL", &t) || t <= 0 || t > 1000000) {
		json_object_put(resp);
		return -EBADMSG;
	}
	json_object_put(resp);
	*id = x;
	*granted = (uint32_t)t;
	return 0;
}

/* 0 and the TTL left (0: etcd no longer has the lease), or -errno. */
static int keepalive(struct dir_conn *c, int64_t id, int64_t *ttl)
{
	json_object *resp = NULL, *res;
	int ret;

	ret = call_num(c, "/v3/lease/keepalive", "ID", id, &resp);
	if (ret)
		return ret;
	*ttl = 0;
	if (json_object_object_get_ex(resp, "result", &res) &&
	    dir_json_i64(res, "TTL", ttl))
		*ttl = 0;
	json_object_put(resp);
	return 0;
}

static int revoke(struct dir_conn *c, int64_t id)
{
	return call_num(c, "/v3/lease/revoke", "ID", id, NULL);
}

/* ----------------------------------------------------- publications */

static struct dir_pub *find_pub(struct rdmaxfer_directory *dir,
				const char *name)
{
	struct dir_pub *p;

	for (p = dir->pubs; p; p = p->next)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

static bool same_desc(const struct rdmaxfer_desc *a,
		      const struct rdmaxfer_desc *b)
{
	return a->rkey == b->rkey && a->addr == b->addr && a->len == b->len;
}

static struct dir_pub_export **find_export(struct dir_pub *p,
					   const struct rdmaxfer_desc *d)
{
	struct dir_pub_export **pp;

	for (pp = &p->exports; *pp; pp = &(*pp)->next)
		if (same_desc(&(*pp)->desc, d))
			return pp;
	return NULL;
}

/* Forget an export: the memory we registered for it first. */
static void export_free(struct dir_pub_export *x)
{
	if (x->mem)
		rdmaxfer_mem_deregister(x->mem);
	free(x->blob);
	free(x);
}

static void pub_free(struct dir_pub *p)
{
	while (p->exports) {
		struct dir_pub_export *x = p->exports;

		p->exports = x->next;
		export_free(x);
	}
	free(p->blob);
	free(p);
}

/* A deletion etcd did not take: retried by the keep-alive thread. */
static void orphan(struct rdmaxfer_directory *dir, const char *key,
		   bool prefix)
{
	struct dir_orphan *o = calloc(1, sizeof(*o));

	if (!o)
		return;		/* the lease's end removes it anyway */
	snprintf(o->key, sizeof(o->key), "%s", key);
	o->prefix = prefix;
	pthread_mutex_lock(&dir->lock);
	o->next = dir->orphans;
	dir->orphans = o;
	pthread_mutex_unlock(&dir->lock);
}

/* pub_lock held: a new lease for the directory */
static int new_lease(struct rdmaxfer_directory *dir, struct dir_conn *c)
{
	int64_t id;
	uint32_t ttl;
	int ret;

	ret = grant(c, dir->attr.ttl_s, &id, &ttl);
	if (ret)
		return ret;
	pthread_mutex_lock(&dir->lock);
	dir->lease_id = id;
	dir->lease_ttl = ttl;
	pthread_mutex_unlock(&dir->lock);
	return 0;
}

/* pub_lock held: the lease, granted if there is none yet */
static int ensure_lease(struct rdmaxfer_directory *dir, struct dir_conn *c)
{
	return dir->lease_id ? 0 : new_lease(dir, c);
}

static void *ka_main(void *arg);
static int republish(struct rdmaxfer_directory *dir, struct dir_conn *c);

static int start_keepalive(struct rdmaxfer_directory *dir)
{
	int ret = 0;

	pthread_mutex_lock(&dir->lock);
	if (!dir->ka_running) {
		ret = -pthread_create(&dir->ka_thread, NULL, ka_main, dir);
		dir->ka_running = !ret;
	}
	pthread_mutex_unlock(&dir->lock);
	return ret;
}

static int publish_blob(struct rdmaxfer_directory *dir, const char *name,
			struct rdmaxfer_agent *agent, const void *blob,
			size_t len)
{
	struct rdmaxfer_md *md;
	char key[DIR_KEY_MAX];
	struct dir_pub *p;
	int ret;

	if (!dir_name_valid(name))
		return -EINVAL;
	ret = rdmaxfer_md_parse(blob, len, &md);
	if (ret)
		return ret;
	ret = dir_key_agent(dir->ns, name, key, sizeof(key));
	p = calloc(1, sizeof(*p));
	if (ret || !p) {
		rdmaxfer_md_free(md);
		free(p);
		return ret ? ret : -ENOMEM;
	}
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->agent = agent;
	p->agent_id = md->agent_id;
	rdmaxfer_md_free(md);
	p->blob = malloc(len);
	if (!p->blob) {
		free(p);
		return -ENOMEM;
	}
	memcpy(p->blob, blob, len);
	p->blob_len = len;

	pthread_mutex_lock(&dir->pub_lock);
	if (find_pub(dir, name)) {
		ret = -EALREADY;
		goto out;
	}
	pthread_mutex_lock(&dir->call_lock);
	ret = ensure_lease(dir, &dir->conn);
	if (!ret)
		ret = take_name(&dir->conn, key, blob, len, dir->lease_id);
	/* the lease expired before the keep-alive thread noticed (a
	 * process stalled past its TTL): every publication back on a new
	 * one, then this */
	if (ret == -ENOENT) {
		/* (a name of another publication lost meanwhile is the
		 * keep-alive's to report, not this call's) */
		ret = republish(dir, &dir->conn);
		if (!dir_err_transport(ret))
			ret = take_name(&dir->conn, key, blob, len,
					dir->lease_id);
	}
	pthread_mutex_unlock(&dir->call_lock);
	if (!ret)
		ret = start_keepalive(dir);
	if (!ret) {
		pthread_mutex_lock(&dir->lock);
		p->next = dir->pubs;
		dir->pubs = p;
		dir->npubs++;
		pthread_mutex_unlock(&dir->lock);
		p = NULL;
	}
out:
	pthread_mutex_unlock(&dir->pub_lock);
	if (p)
		pub_free(p);
	return ret;
}

DIR_EXPORT
int rdmaxfer_directory_publish_md(struct rdmaxfer_directory *dir,
				  const char *name, const void *blob,
				  size_t len)
{
	if (!dir || !blob)
		return -EINVAL;
	return publish_blob(dir, name, NULL, blob, len);
}

DIR_EXPORT
int rdmaxfer_directory_publish(struct rdmaxfer_directory *dir,
			       struct rdmaxfer_agent *agent, const char *name)
{
	struct rdmaxfer_md *md;
	size_t len = 0;
	void *blob;
	int ret;

	if (!dir || !agent)
		return -EINVAL;
	ret = rdmaxfer_md_pack(agent, NULL, 0, NULL, 0, &len);
	if (ret != -ENOSPC)
		return ret ? ret : -EIO;
	blob = malloc(len);
	if (!blob)
		return -ENOMEM;
	ret = rdmaxfer_md_pack(agent, NULL, 0, blob, len, &len);
	/* a blob peers cannot connect with is not worth publishing */
	if (!ret)
		ret = rdmaxfer_md_parse(blob, len, &md);
	if (!ret) {
		if (!md->listening)
			ret = -EDESTADDRREQ;
		rdmaxfer_md_free(md);
	}
	if (!ret)
		ret = publish_blob(dir, name, agent, blob, len);
	free(blob);
	return ret;
}

DIR_EXPORT
int rdmaxfer_directory_unpublish(struct rdmaxfer_directory *dir,
				 const char *name)
{
	char key[DIR_KEY_MAX], prefix[DIR_KEY_MAX];
	struct dir_pub *p, **pp;
	int ret;

	if (!dir || !dir_name_valid(name))
		return -EINVAL;
	if (dir_key_agent(dir->ns, name, key, sizeof(key)) ||
	    dir_key_exports(dir->ns, name, prefix, sizeof(prefix)))
		return -EINVAL;
	pthread_mutex_lock(&dir->pub_lock);
	pthread_mutex_lock(&dir->lock);
	for (pp = &dir->pubs; *pp && strcmp((*pp)->name, name);
	     pp = &(*pp)->next)
		;
	p = *pp;
	if (p) {
		*pp = p->next;
		dir->npubs--;
	}
	pthread_mutex_unlock(&dir->lock);
	if (!p) {
		pthread_mutex_unlock(&dir->pub_lock);
		return -ENOENT;
	}
	pthread_mutex_lock(&dir->call_lock);
	ret = etcd_delete(&dir->conn, key, false);
	if (ret)
		orphan(dir, key, false);
	if (etcd_delete(&dir->conn, prefix, true))
		orphan(dir, prefix, true);
	pthread_mutex_unlock(&dir->call_lock);
	pthread_mutex_unlock(&dir->pub_lock);
	pub_free(p);
	return 0;
}

/* ---------------------------------------------------------- exports */

static int desc_check(const struct rdmaxfer_desc *d)
{
	if (!d->len || d->addr + d->len < d->addr)
		return -EINVAL;
	return 0;
}

/* pub_lock held: a new export of p, the value of its key in blob (which
 * it takes, freed on failure) */
static int export_add(struct rdmaxfer_directory *dir, struct dir_pub *p,
		      const struct rdmaxfer_desc *d, uint8_t *blob,
		      size_t len, struct rdmaxfer_mem *mem)
{
	struct dir_pub_export *x = NULL;
	char key[DIR_KEY_MAX];
	int ret;

	if (find_export(p, d))
		ret = -EEXIST;
	else if (p->nexports >= dir->attr.max_exports)
		ret = -ENOSPC;
	else
		ret = dir_key_export(dir->ns, p->name, d, key, sizeof(key));
	if (!ret) {
		x = calloc(1, sizeof(*x));
		ret = x ? 0 : -ENOMEM;
	}
	if (!ret) {
		pthread_mutex_lock(&dir->call_lock);
		ret = etcd_put(&dir->conn, key, blob, len, dir->lease_id);
		if (ret == -ENOENT) {	/* the lease is gone: as publish */
			ret = republish(dir, &dir->conn);
			if (!dir_err_transport(ret))
				ret = etcd_put(&dir->conn, key, blob, len,
					       dir->lease_id);
		}
		pthread_mutex_unlock(&dir->call_lock);
	}
	if (ret) {
		free(x);
		free(blob);
		return ret;
	}
	x->desc = *d;
	x->blob = blob;
	x->blob_len = len;
	x->mem = mem;
	pthread_mutex_lock(&dir->lock);
	x->next = p->exports;
	p->exports = x;
	p->nexports++;
	pthread_mutex_unlock(&dir->lock);
	return 0;
}

/* pub_lock held: the value of an export key, packed by the agent */
static int pack_export(struct dir_pub *p, const struct rdmaxfer_desc *d,
		       uint8_t **blobp, size_t *lenp)
{
	size_t len = 0;
	uint8_t *blob;
	int ret;

	ret = rdmaxfer_md_pack(p->agent, d, 1, NULL, 0, &len);
	if (ret != -ENOSPC)
		return ret ? ret : -EIO;
	blob = malloc(len);
	if (!blob)
		return -ENOMEM;
	ret = rdmaxfer_md_pack(p->agent, d, 1, blob, len, &len);
	if (ret) {
		free(blob);
		return ret;
	}
	*blobp = blob;
	*lenp = len;
	return 0;
}

/* pub_lock held: the publication of name, made by an agent */
static int agent_pub(struct rdmaxfer_directory *dir, const char *name,
		     struct dir_pub **pp)
{
	*pp = find_pub(dir, name);
	if (!*pp)
		return -ENOENT;
	return (*pp)->agent ? 0 : -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_export(struct rdmaxfer_directory *dir,
			      const char *name,
			      const struct rdmaxfer_desc *desc)
{
	struct dir_pub *p;
	uint8_t *blob = NULL;
	size_t len;
	int ret;

	if (!dir || !desc || !dir_name_valid(name) || desc_check(desc))
		return -EINVAL;
	pthread_mutex_lock(&dir->pub_lock);
	ret = agent_pub(dir, name, &p);
	if (!ret)
		ret = pack_export(p, desc, &blob, &len);
	if (!ret)
		ret = export_add(dir, p, desc, blob, len, NULL);
	pthread_mutex_unlock(&dir->pub_lock);
	return ret;
}

DIR_EXPORT
int rdmaxfer_directory_export_md(struct rdmaxfer_directory *dir,
				 const char *name, const void *blob,
				 size_t len)
{
	struct rdmaxfer_desc d;
	struct rdmaxfer_md *md;
	struct dir_pub *p;
	uint8_t *copy;
	int ret;

	if (!dir || !blob || !dir_name_valid(name))
		return -EINVAL;
	ret = rdmaxfer_md_parse(blob, len, &md);
	if (ret)
		return ret;
	if (md->ndescs != 1 || desc_check(&md->descs[0])) {
		rdmaxfer_md_free(md);
		return -EINVAL;
	}
	d = md->descs[0];
	pthread_mutex_lock(&dir->pub_lock);
	p = find_pub(dir, name);
	if (!p)
		ret = -ENOENT;
	else if (p->agent_id != md->agent_id)
		ret = -ESTALE;
	rdmaxfer_md_free(md);
	copy = ret ? NULL : malloc(len);
	if (!ret && !copy)
		ret = -ENOMEM;
	if (!ret) {
		memcpy(copy, blob, len);
		ret = export_add(dir, p, &d, copy, len, NULL);
	}
	pthread_mutex_unlock(&dir->pub_lock);
	return ret;
}

DIR_EXPORT
int rdmaxfer_directory_export_mem(struct rdmaxfer_directory *dir,
				  const char *name, void *addr, size_t len,
				  uint32_t access, struct rdmaxfer_desc *desc)
{
	struct rdmaxfer_agent_info info;
	struct rdmaxfer_mem *mem = NULL;
	struct rdmaxfer_desc d;
	struct dir_pub *p;
	uint8_t *blob = NULL;
	size_t blen;
	int ret;

	if (!dir || !desc || !addr || !len || !dir_name_valid(name) ||
	    !access || (access & ~RDMAXFER_ACCESS_REMOTE))
		return -EINVAL;
	pthread_mutex_lock(&dir->pub_lock);
	ret = agent_pub(dir, name, &p);
	if (ret)
		goto out;
	/* a cached rkey outlives its deregistration: a withdrawal could
	 * not make the target refuse it */
	ret = rdmaxfer_agent_query(p->agent, &info);
	if (!ret && (info.flags & RDMAXFER_AGENT_CACHE_RKEYS))
		ret = -EINVAL;
	if (!ret)
		ret = rdmaxfer_mem_register_access(p->agent, addr, len,
						   RDMAXFER_MEM_HOST, access,
						   &mem);
	if (!ret)
		ret = rdmaxfer_mem_desc(mem, 0, 0, &d);
	if (!ret)
		ret = pack_export(p, &d, &blob, &blen);
	if (!ret) {
		ret = export_add(dir, p, &d, blob, blen, mem);
		blob = NULL;		/* export_add's now */
	}
	if (ret) {
		free(blob);
		if (mem)
			rdmaxfer_mem_deregister(mem);
	} else {
		*desc = d;
	}
out:
	pthread_mutex_unlock(&dir->pub_lock);
	return ret;
}

DIR_EXPORT
int rdmaxfer_directory_withdraw(struct rdmaxfer_directory *dir,
				const char *name,
				const struct rdmaxfer_desc *desc)
{
	struct dir_pub_export **pp, *x = NULL;
	char key[DIR_KEY_MAX];
	struct dir_pub *p;
	int ret;

	if (!dir || !desc || !dir_name_valid(name))
		return -EINVAL;
	pthread_mutex_lock(&dir->pub_lock);
	p = find_pub(dir, name);
	pp = p ? find_export(p, desc) : NULL;
	if (!pp) {
		pthread_mutex_unlock(&dir->pub_lock);
		return -ENOENT;
	}
	pthread_mutex_lock(&dir->lock);
	x = *pp;
	*pp = x->next;
	p->nexports--;
	pthread_mutex_unlock(&dir->lock);
	/* the target refuses it from now on, whatever etcd and peers do */
	if (x->mem)
		rdmaxfer_mem_deregister(x->mem);
	x->mem = NULL;
	ret = dir_key_export(dir->ns, name, &x->desc, key, sizeof(key));
	if (!ret) {
		pthread_mutex_lock(&dir->call_lock);
		if (etcd_delete(&dir->conn, key, false))
			orphan(dir, key, false);
		pthread_mutex_unlock(&dir->call_lock);
	}
	pthread_mutex_unlock(&dir->pub_lock);
	export_free(x);
	return 0;
}

/* ---------------------------------------------- the keep-alive thread */

/*
 * pub_lock held: a new lease, and every publication and export written
 * back on it.  A name another lease took meanwhile is not ours any more:
 * -EEXIST in publish_err, tried again at the next round.
 */
static int republish(struct rdmaxfer_directory *dir, struct dir_conn *c)
{
	char key[DIR_KEY_MAX];
	struct dir_pub *p;
	struct dir_pub_export *x;
	int64_t id;
	int ret, err = 0;

	ret = new_lease(dir, c);
	if (ret)
		return ret;
	id = dir->lease_id;
	for (p = dir->pubs; p; p = p->next) {
		if (dir_key_agent(dir->ns, p->name, key, sizeof(key)))
			continue;
		ret = take_name(c, key, p->blob, p->blob_len, id);
		if (dir_err_transport(ret))
			return ret;
		if (ret) {
			err = ret;
			continue;
		}
		for (x = p->exports; x; x = x->next) {
			if (dir_key_export(dir->ns, p->name, &x->desc, key,
					   sizeof(key)))
				continue;
			ret = etcd_put(c, key, x->blob, x->blob_len, id);
			if (dir_err_transport(ret))
				return ret;
			if (ret)
				err = ret;
		}
	}
	pthread_mutex_lock(&dir->lock);
	dir->republished++;
	pthread_mutex_unlock(&dir->lock);
	return err;
}

/* pub_lock held: the deletions that failed, tried again */
static void retry_orphans(struct rdmaxfer_directory *dir, struct dir_conn *c)
{
	struct dir_orphan *o, *keep = NULL, *next;

	pthread_mutex_lock(&dir->lock);
	o = dir->orphans;
	dir->orphans = NULL;
	pthread_mutex_unlock(&dir->lock);
	for (; o; o = next) {
		next = o->next;
		if (etcd_delete(c, o->key, o->prefix)) {
			o->next = keep;
			keep = o;
		} else {
			free(o);
		}
	}
	pthread_mutex_lock(&dir->lock);
	while (keep) {
		next = keep->next;
		keep->next = dir->orphans;
		dir->orphans = keep;
		keep = next;
	}
	pthread_mutex_unlock(&dir->lock);
}

/*
 * Keep the lease alive three times per TTL; on a transport error retry
 * every 250 ms until etcd answers (a restart), then either the lease is
 * still there (nothing to do) or it is gone (re-publish).
 */
static void *ka_main(void *arg)
{
	struct rdmaxfer_directory *dir = arg;
	struct dir_conn c;
	int64_t next, ttl;
	int ret;

	if (dir_conn_init(&c, &dir->etcd)) {
		pthread_mutex_lock(&dir->lock);
		dir->publish_err = -ENOMEM;
		pthread_mutex_unlock(&dir->lock);
		return NULL;
	}
	pthread_mutex_lock(&dir->lock);
	next = dir_now_ns() + (int64_t)dir->lease_ttl * 1000000000 / 3;
	while (!dir->closing) {
		if (dir_cond_wait(&dir->ka_cond, &dir->lock, next) !=
		    -ETIMEDOUT)
			continue;
		pthread_mutex_unlock(&dir->lock);

		pthread_mutex_lock(&dir->pub_lock);
		ret = keepalive(&c, dir->lease_id, &ttl);
		if (!ret && ttl <= 0)
			ret = republish(dir, &c);
		if (!ret)
			retry_orphans(dir, &c);
		pthread_mutex_unlock(&dir->pub_lock);

		pthread_mutex_lock(&dir->lock);
		dir->publish_err = ret;
		next = dir_now_ns() + (dir_err_transport(ret) ? 250000000LL :
			(int64_t)dir->lease_ttl * 1000000000 / 3);
	}
	pthread_mutex_unlock(&dir->lock);
	dir_conn_fini(&c);
	return NULL;
}

/* Close: the thread stopped, the lease revoked, everything freed. */
int dir_publish_fini(struct rdmaxfer_directory *dir)
{
	bool running;
	int ret = 0;

	pthread_mutex_lock(&dir->lock);
	running = dir->ka_running;
	dir->ka_running = false;
	pthread_cond_broadcast(&dir->ka_cond);
	pthread_mutex_unlock(&dir->lock);
	if (running)
		pthread_join(dir->ka_thread, NULL);
	if (dir->lease_id) {
		pthread_mutex_lock(&dir->call_lock);
		ret = revoke(&dir->conn, dir->lease_id);
		pthread_mutex_unlock(&dir->call_lock);
		dir->lease_id = 0;
	}
	while (dir->pubs) {
		struct dir_pub *p = dir->pubs;

		dir->pubs = p->next;
		pub_free(p);
	}
	dir->npubs = 0;
	while (dir->orphans) {
		struct dir_orphan *o = dir->orphans;

		dir->orphans = o->next;
		free(o);
	}
	return ret;
}
