// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * dir_state.c - the names of a namespace as a watch (or a list) sees
 * them, and the events the application is owed.
 *
 * One entry per name: the agent key's blob (kept only when
 * rdmaxfer_md_parse() accepts it) and the export keys under the name
 * (each a blob of exactly one descriptor; it counts for the agent only
 * while its agent id is the agent key's).  Anything else, a key with a
 * bad name, a value that is not a blob, an export of two descriptors, is
 * counted as rejected and changes nothing, except that a bad value under
 * an agent key means that name lists no valid agent any more.
 *
 * Events are derived, not queued: each entry remembers what the
 * application was last told (seen, seen_id, seen_gen) and sits on a dirty
 * list until it is told again, so a burst of changes costs one list node
 * per name and the table's size bounds everything (max_agents names,
 * max_exports exports each).  A second list names the entries whose
 * peers (connected by name) the watch must look at.
 *
 * A list after etcd lost its store (a restart from an empty data dir)
 * does not make the agents missing from it leave at once: they
 * re-publish within their keep-alive, so each such entry keeps what it
 * had until a deadline and only what is still missing then is dropped.
 *
 * No locking here: the caller holds the directory's lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "directory.h"

#define DIR_MIN_BUCKETS	256

static size_t hash_name(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	while (*s) {
		h ^= (uint8_t)*s++;
		h *= 1099511628211ULL;
	}
	return (size_t)h;
}

int dir_state_init(struct dir_state *st, const char *ns,
		   uint32_t max_agents, uint32_t max_exports)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->ns, sizeof(st->ns), "%s", ns);
	st->max_agents = max_agents;
	st->max_exports = max_exports;
	st->nbuckets = DIR_MIN_BUCKETS;
	st->buckets = calloc(st->nbuckets, sizeof(*st->buckets));
	return st->buckets ? 0 : -ENOMEM;
}

static void agent_drop(struct dir_agent *a)
{
	free(a->blob);
	rdmaxfer_md_free(a->md);
	a->blob = NULL;
	a->blob_len = 0;
	a->md = NULL;
	a->rev = 0;
}

static void agent_free(struct dir_agent *a)
{
	agent_drop(a);
	free(a->exports);
	free(a);
}

void dir_state_fini(struct dir_state *st)
{
	size_t i;

	for (i = 0; i < st->nbuckets && st->buckets; i++) {
		struct dir_agent *a = st->buckets[i], *n;

		for (; a; a = n) {
			n = a->hnext;
			agent_free(a);
		}
	}
	free(st->buckets);
	st->buckets = NULL;
	st->count = 0;
}

struct dir_agent *dir_state_find(struct dir_state *st, const char *name)
{
	struct dir_agent *a = st->buckets[hash_name(name) & (st->nbuckets - 1)];

	while (a && strcmp(a->name, name))
		a = a->hnext;
	return a;
}

/* Twice the buckets when the chains average two; failing to grow only
 * makes them longer. */
static void grow(struct dir_state *st)
{
	size_t n = st->nbuckets * 2, i;
	struct dir_agent **b = calloc(n, sizeof(*b));

	if (!b)
		return;
	for (i = 0; i < st->nbuckets; i++) {
		struct dir_agent *a = st->buckets[i], *next;

		for (; a; a = next) {
			size_t h = hash_name(a->name) & (n - 1);

			next = a->hnext;
			a->hnext = b[h];
			b[h] = a;
		}
	}
	free(st->buckets);
	st->buckets = b;
	st->nbuckets = n;
}

static struct dir_agent *get_or_add(struct dir_state *st, const char *name)
{
	struct dir_agent *a = dir_state_find(st, name);
	size_t h;

	if (a)
		return a;
	if (st->count >= st->max_agents)
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	snprintf(a->name, sizeof(a->name), "%s", name);
	a->stamp = st->stamp;
	if (st->count >= st->nbuckets * 2)
		grow(st);
	h = hash_name(name) & (st->nbuckets - 1);
	a->hnext = st->buckets[h];
	st->buckets[h] = a;
	st->count++;
	return a;
}

bool dir_agent_present(const struct dir_agent *a)
{
	return a && a->md;
}

/* The effective state changed: events to derive, peers to look at. */
static void mark(struct dir_state *st, struct dir_agent *a, uint64_t rev)
{
	a->gen++;
	if (rev)
		a->change_rev = rev;
	if (!a->dirty) {
		a->dirty = true;
		a->dnext = NULL;
		if (st->dtail)
			st->dtail->dnext = a;
		else
			st->dhead = a;
		st->dtail = a;
	}
	if (!a->follow) {
		a->follow = true;
		a->fnext = NULL;
		if (st->ftail)
			st->ftail->fnext = a;
		else
			st->fhead = a;
		st->ftail = a;
	}
}

static void unlink_entry(struct dir_state *st, struct dir_agent *a)
{
	struct dir_agent **pp =
		&st->buckets[hash_name(a->name) & (st->nbuckets - 1)];

	while (*pp && *pp != a)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = a->hnext;
	st->count--;
}

void dir_state_gc(struct dir_state *st, struct dir_agent *a)
{
	if (!a || a->md || a->bad || a->nexports || a->seen || a->dirty ||
	    a->follow || a->leave_deadline_ns)
		return;
	unlink_entry(st, a);
	agent_free(a);
}

static bool export_counts(const struct dir_agent *a, const struct dir_export *x)
{
	return a->md && x->agent_id == a->md->agent_id;
}

static void put_agent(struct dir_state *st, const struct dir_key *k,
		      const struct dir_kv *kv)
{
	struct rdmaxfer_md *md = NULL;
	struct dir_agent *a = dir_state_find(st, k->name);
	uint8_t *blob;
	int ret;

	ret = rdmaxfer_md_parse(kv->value, kv->value_len, &md);
	if (ret) {
		st->rejected++;
		/* the name holds garbage now: no agent under it, and a
		 * look-up of it says why */
		if (!a)
			a = get_or_add(st, k->name);
		if (!a)
			return;
		a->bad = ret == -EPROTO ? -EPROTO : -EBADMSG;
		a->stamp = st->stamp;
		if (a->md) {
			st->valid--;
			agent_drop(a);
			mark(st, a, kv->mod_rev);
		}
		return;
	}
	if (!a)
		a = get_or_add(st, k->name);
	if (!a) {
		st->rejected++;		/* max_agents names already */
		rdmaxfer_md_free(md);
		return;
	}
	a->stamp = st->stamp;
	a->bad = 0;
	if (a->md && a->blob_len == kv->value_len &&
	    !memcmp(a->blob, kv->value, kv->value_len)) {
		a->rev = kv->mod_rev;	/* written again, same value */
		rdmaxfer_md_free(md);
		return;
	}
	blob = malloc(kv->value_len);
	if (!blob) {
		rdmaxfer_md_free(md);
		return;
	}
	memcpy(blob, kv->value, kv->value_len);
	if (!a->md)
		st->valid++;
	agent_drop(a);
	a->blob = blob;
	a->blob_len = kv->value_len;
	a->md = md;
	a->rev = kv->mod_rev;
	mark(st, a, kv->mod_rev);
}

static struct dir_export *find_export(struct dir_agent *a, const char *id)
{
	uint32_t i;

	for (i = 0; i < a->nexports; i++)
		if (!strcmp(a->exports[i].id, id))
			return &a->exports[i];
	return NULL;
}

static void remove_export(struct dir_state *st, struct dir_agent *a,
			  struct dir_export *x, uint64_t rev)
{
	bool counted = export_counts(a, x);

	*x = a->exports[--a->nexports];
	if (counted)
		mark(st, a, rev);
}

static void put_export(struct dir_state *st, const struct dir_key *k,
		       const struct dir_kv *kv)
{
	struct rdmaxfer_md *md = NULL;
	struct dir_agent *a;
	struct dir_export *x, nx = { 0 };
	bool counted;

	if (rdmaxfer_md_parse(kv->value, kv->value_len, &md) ||
	    md->ndescs != 1 || !md->descs[0].len) {
		st->rejected++;
		rdmaxfer_md_free(md);
		/* a key that held a good export holds garbage now */
		a = dir_state_find(st, k->name);
		x = a ? find_export(a, k->id) : NULL;
		if (x)
			remove_export(st, a, x, kv->mod_rev);
		return;
	}
	snprintf(nx.id, sizeof(nx.id), "%s", k->id);
	nx.agent_id = md->agent_id;
	nx.desc = md->descs[0];
	nx.stamp = st->stamp;
	rdmaxfer_md_free(md);
	a = get_or_add(st, k->name);
	if (!a) {
		st->rejected++;
		return;
	}
	x = find_export(a, k->id);
	if (x) {
		counted = export_counts(a, x);
		if (x->agent_id == nx.agent_id &&
		    !memcmp(&x->desc, &nx.desc, sizeof(nx.desc))) {
			x->stamp = st->stamp;
			return;
		}
		*x = nx;
	} else {
		if (a->nexports >= st->max_exports) {
			st->rejected++;
			dir_state_gc(st, a);
			return;
		}
		if (a->nexports == a->cap) {
			uint32_t cap = a->cap ? a->cap * 2 : 4;
			struct dir_export *n;

			if (cap > st->max_exports)
				cap = st->max_exports;
			n = realloc(a->exports, cap * sizeof(*n));
			if (!n) {
				dir_state_gc(st, a);
				return;
			}
			a->exports = n;
			a->cap = cap;
		}
		a->exports[a->nexports++] = nx;
		counted = false;
	}
	if (counted || export_counts(a, &nx))
		mark(st, a, kv->mod_rev);
}

void dir_state_put(struct dir_state *st, const struct dir_kv *kv)
{
	struct dir_key k;

	if ((uint64_t)kv->mod_rev > st->revision)
		st->revision = kv->mod_rev;
	dir_key_classify(st->ns, kv->key, kv->key_len, &k);
	switch (k.kind) {
	case DIR_KEY_AGENT:
		put_agent(st, &k, kv);
		break;
	case DIR_KEY_EXPORT:
		put_export(st, &k, kv);
		break;
	case DIR_KEY_BAD:
		st->rejected++;
		break;
	case DIR_KEY_OTHER:
		break;
	}
}

void dir_state_del(struct dir_state *st, const uint8_t *key, size_t len,
		   uint64_t rev)
{
	struct dir_agent *a;
	struct dir_export *x;
	struct dir_key k;

	if (rev > st->revision)
		st->revision = rev;
	dir_key_classify(st->ns, key, len, &k);
	if (k.kind != DIR_KEY_AGENT && k.kind != DIR_KEY_EXPORT)
		return;
	a = dir_state_find(st, k.name);
	if (!a)
		return;
	if (k.kind == DIR_KEY_AGENT)
		a->bad = 0;
	if (k.kind == DIR_KEY_AGENT && a->md) {
		st->valid--;
		agent_drop(a);
		/* exports of the agent that left no longer count either */
		mark(st, a, rev);
	} else if (k.kind == DIR_KEY_EXPORT) {
		x = find_export(a, k.id);
		if (x)
			remove_export(st, a, x, rev);
	}
	dir_state_gc(st, a);
}

void dir_state_list_begin(struct dir_state *st)
{
	st->stamp++;
}

/* What a list (or the end of a store reset's grace) did not see goes. */
static void sweep(struct dir_state *st, struct dir_agent *a)
{
	uint32_t i = 0;

	while (i < a->nexports) {
		if (a->exports[i].stamp != st->stamp)
			remove_export(st, a, &a->exports[i], 0);
		else
			i++;
	}
	if (a->stamp != st->stamp)
		a->bad = 0;
	if (a->md && a->stamp != st->stamp) {
		st->valid--;
		agent_drop(a);
		mark(st, a, 0);
	}
}

void dir_state_list_end(struct dir_state *st, bool reset, int64_t deadline_ns)
{
	size_t i;

	for (i = 0; i < st->nbuckets; i++) {
		struct dir_agent *a = st->buckets[i], *next;

		for (; a; a = next) {
			bool missing = a->stamp != st->stamp;
			uint32_t k;

			next = a->hnext;
			for (k = 0; k < a->nexports && !missing; k++)
				missing = a->exports[k].stamp != st->stamp;
			if (!missing)
				continue;
			if (reset && (a->md || a->nexports)) {
				if (!a->leave_deadline_ns)
					a->leave_deadline_ns = deadline_ns;
				continue;
			}
			sweep(st, a);
			dir_state_gc(st, a);
		}
	}
}

int64_t dir_state_expire(struct dir_state *st, int64_t now_ns)
{
	int64_t next = 0;
	size_t i;

	for (i = 0; i < st->nbuckets; i++) {
		struct dir_agent *a = st->buckets[i], *n;

		for (; a; a = n) {
			n = a->hnext;
			if (!a->leave_deadline_ns)
				continue;
			if (a->leave_deadline_ns > now_ns) {
				if (!next || a->leave_deadline_ns < next)
					next = a->leave_deadline_ns;
				continue;
			}
			a->leave_deadline_ns = 0;
			sweep(st, a);
			dir_state_gc(st, a);
		}
	}
	return next;
}

/* -------------------------------------------------------- the answers */

static void apply_event(struct dir_state *st, json_object *ev,
			struct dir_watch_line *out)
{
	json_object *kvo, *type;
	struct dir_kv kv;
	bool del = false;

	if (!json_object_is_type(ev, json_type_object) ||
	    !json_object_object_get_ex(ev, "kv", &kvo)) {
		st->rejected++;
		return;
	}
	if (json_object_object_get_ex(ev, "type", &type)) {
		const char *t = json_object_get_string(type);

		if (t && !strcmp(t, "DELETE"))
			del = true;
		else if (!t || strcmp(t, "PUT")) {
			st->rejected++;
			return;
		}
	}
	if (dir_kv_decode(kvo, &kv)) {
		st->rejected++;
		return;
	}
	if (del)
		dir_state_del(st, kv.key, kv.key_len, kv.mod_rev);
	else
		dir_state_put(st, &kv);
	dir_kv_free(&kv);
	out->events++;
}

int dir_state_watch_line(struct dir_state *st, const char *line, size_t len,
			 struct dir_watch_line *out)
{
	json_object *obj, *res, *v, *evs;
	int64_t x;
	size_t i, n;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = dir_json_parse(line, len, &obj);
	if (ret)
		return ret;
	if (json_object_object_get_ex(obj, "error", &v)) {
		out->error = -EIO;
		json_object_put(obj);
		return 0;
	}
	if (!json_object_object_get_ex(obj, "result", &res) ||
	    !json_object_is_type(res, json_type_object)) {
		json_object_put(obj);
		return -EBADMSG;
	}
	if (json_object_object_get_ex(res, "header", &v)) {
		if (!dir_json_i64(v, "revision", &x) && x > 0)
			out->header_rev = x;
		if (!dir_json_i64(v, "raft_term", &x) && x > 0)
			out->raft_term = x;
	}
	if (json_object_object_get_ex(res, "created", &v))
		out->created = json_object_get_boolean(v);
	if (json_object_object_get_ex(res, "canceled", &v))
		out->canceled = json_object_get_boolean(v);
	if (!dir_json_i64(res, "compact_revision", &x) && x > 0)
		out->compact_rev = x;
	if (json_object_object_get_ex(res, "events", &evs)) {
		if (!json_object_is_type(evs, json_type_array)) {
			json_object_put(obj);
			return -EBADMSG;
		}
		n = json_object_array_length(evs);
		for (i = 0; i < n; i++)
			apply_event(st, json_object_array_get_idx(evs, i), out);
	}
	json_object_put(obj);
	return 0;
}

int dir_state_range_page(struct dir_state *st, json_object *resp, bool *more,
			 int64_t *rev, uint8_t **last, size_t *last_len)
{
	json_object *kvs, *v;
	size_t i, n;
	int64_t x;

	*more = false;
	*last = NULL;
	*last_len = 0;
	if (!json_object_is_type(resp, json_type_object))
		return -EBADMSG;
	if (!json_object_object_get_ex(resp, "header", &v) ||
	    dir_json_i64(v, "revision", &x) || x <= 0)
		return -EBADMSG;
	*rev = x;
	if (json_object_object_get_ex(resp, "more", &v))
		*more = json_object_get_boolean(v);
	if (!json_object_object_get_ex(resp, "kvs", &kvs))
		return 0;
	if (!json_object_is_type(kvs, json_type_array))
		return -EBADMSG;
	n = json_object_array_length(kvs);
	for (i = 0; i < n; i++) {
		struct dir_kv kv;

		if (dir_kv_decode(json_object_array_get_idx(kvs, i), &kv)) {
			st->rejected++;
			continue;
		}
		dir_state_put(st, &kv);
		if (i == n - 1) {
			free(*last);
			*last = malloc(kv.key_len + 1);
			if (*last) {
				memcpy(*last, kv.key, kv.key_len);
				*last_len = kv.key_len;
			}
		}
		dir_kv_free(&kv);
	}
	/* a page that says there is more must say where it ended */
	if (*more && !*last)
		return -EBADMSG;
	return 0;
}

/* ------------------------------------------------------ what we hand out */

size_t dir_agent_exports(const struct dir_agent *a,
			 struct rdmaxfer_desc *descs, size_t max)
{
	size_t n = 0, i;

	if (!a->md)
		return 0;
	for (i = 0; i < a->md->ndescs; i++, n++)
		if (descs && n < max)
			descs[n] = a->md->descs[i];
	for (i = 0; i < a->nexports; i++) {
		if (!export_counts(a, &a->exports[i]))
			continue;
		if (descs && n < max)
			descs[n] = a->exports[i].desc;
		n++;
	}
	return n;
}

int dir_agent_md(const struct dir_agent *a, struct rdmaxfer_md **mdp)
{
	size_t n = dir_agent_exports(a, NULL, 0);
	struct rdmaxfer_md *md;

	if (!a->md)
		return -ENOENT;
	/* laid out as rdmaxfer_md_parse() does (descriptors in the same
	 * allocation), so rdmaxfer_md_free() frees it */
	md = calloc(1, sizeof(*md) + n * sizeof(md->descs[0]));
	if (!md)
		return -ENOMEM;
	*md = *a->md;
	md->ndescs = n;
	md->descs = n ? (struct rdmaxfer_desc *)(md + 1) : NULL;
	dir_agent_exports(a, md->descs, n);
	*mdp = md;
	return 0;
}

static void push_front_dirty(struct dir_state *st, struct dir_agent *a)
{
	a->dirty = true;
	a->dnext = st->dhead;
	st->dhead = a;
	if (!st->dtail)
		st->dtail = a;
}

int dir_state_next_event(struct dir_state *st, struct rdmaxfer_dir_event *ev)
{
	struct dir_agent *a;

	while ((a = st->dhead)) {
		bool present = a->md != NULL;

		st->dhead = a->dnext;
		if (!st->dhead)
			st->dtail = NULL;
		a->dirty = false;
		memset(ev, 0, sizeof(*ev));
		snprintf(ev->name, sizeof(ev->name), "%s", a->name);
		ev->revision = a->change_rev;
		if (a->seen && (!present || a->md->agent_id != a->seen_id)) {
			ev->type = RDMAXFER_DIR_LEAVE;
			ev->agent_id = a->seen_id;
			a->seen = false;
			if (present)	/* the new agent's ARRIVE comes next */
				push_front_dirty(st, a);
			else
				dir_state_gc(st, a);
			return 0;
		}
		if (!present) {
			dir_state_gc(st, a);
			continue;
		}
		ev->agent_id = a->md->agent_id;
		ev->nexports = (uint32_t)dir_agent_exports(a, NULL, 0);
		if (!a->seen) {
			ev->type = RDMAXFER_DIR_ARRIVE;
		} else if (a->gen != a->seen_gen) {
			ev->type = RDMAXFER_DIR_UPDATE;
		} else {
			continue;	/* changed and changed back */
		}
		a->seen = true;
		a->seen_id = a->md->agent_id;
		a->seen_gen = a->gen;
		return 0;
	}
	return -ENOENT;
}

struct dir_agent *dir_state_next_follow(struct dir_state *st)
{
	struct dir_agent *a = st->fhead;

	if (!a)
		return NULL;
	st->fhead = a->fnext;
	if (!st->fhead)
		st->ftail = NULL;
	a->follow = false;
	return a;
}

void dir_list_free(struct rdmaxfer_dir_list *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		rdmaxfer_md_free(l->agents[i].md);
	free(l->agents);
	free(l);
}

static int by_name(const void *x, const void *y)
{
	const struct rdmaxfer_dir_agent *a = x, *b = y;

	return strcmp(a->name, b->name);
}

int dir_state_snapshot(struct dir_state *st, struct rdmaxfer_dir_list **listp)
{
	struct rdmaxfer_dir_list *l = calloc(1, sizeof(*l));
	size_t i, n = 0;
	int ret;

	if (!l)
		return -ENOMEM;
	l->revision = st->revision;
	l->rejected = st->rejected;
	if (st->valid) {
		l->agents = calloc(st->valid, sizeof(*l->agents));
		if (!l->agents) {
			free(l);
			return -ENOMEM;
		}
	}
	for (i = 0; i < st->nbuckets; i++) {
		struct dir_agent *a;

		for (a = st->buckets[i]; a; a = a->hnext) {
			if (!a->md || n >= st->valid)
				continue;
			ret = dir_agent_md(a, &l->agents[n].md);
			if (ret) {
				l->n = n;
				dir_list_free(l);
				return ret;
			}
			snprintf(l->agents[n].name, sizeof(l->agents[n].name),
				 "%s", a->name);
			l->agents[n].revision = a->rev;
			n++;
		}
	}
	l->n = n;
	if (n > 1)
		qsort(l->agents, n, sizeof(*l->agents), by_name);
	*listp = l;
	return 0;
}
