// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * watch.c - following a namespace: the list, the watch stream, the events
 * and the peers connected by name.
 *
 * The watch thread lists the namespace (paged, at one revision), then
 * streams /v3/watch from the next revision, applying each line of the
 * stream to the state table as it arrives.  When the stream breaks
 * (etcd restarted, a network error) it reconnects from where it stopped;
 * when etcd says it compacted what we missed, or answers with a revision
 * or raft term below what we saw (it lost its store), it lists again, the
 * latter with a grace period for the agents missing from the new store.
 *
 * After every change it looks at the peers connected by name
 * (rdmaxfer_connect_name()) whose entry changed: a changed export list
 * replaces the peer's exports list, an entry that left or names another
 * agent fails the peer with -ESTALE.  Both go through the core's
 * peer_hook.h, which checks that the peer still exists.  Lock order:
 * dir->lock, then the agent's lock (inside the hook); the core never
 * calls back into the directory.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "directory.h"
#include "core/peer_hook.h"

#define DIR_MAX_FOLLOWS		65536
#define DIR_RETRY_NS		250000000LL	/* etcd unreachable: retry */

/* "nothing is exported": a list whose one range no transfer can name
 * (the last byte but one of the address space), so that a peer whose
 * exports were all withdrawn refuses every remote range locally */
static const struct rdmaxfer_desc nothing_exported = {
	.addr = UINT64_MAX - 1, .len = 1, .rkey = 0, .kind = RDMAXFER_MEM_HOST,
};

/* ------------------------------------------------ peers followed by name */

/*
 * lock held: make the peer of f agree with entry a (NULL: none under the
 * name); true when f is done with (the peer failed, or destroyed).
 */
static bool follow_one(struct rdmaxfer_directory *dir, struct dir_follow *f,
		       struct dir_agent *a)
{
	struct rdmaxfer_desc *descs = NULL;
	size_t n;
	int ret;

	if (!dir_agent_present(a) || a->md->agent_id != f->remote_id) {
		/* left, or another agent under the name now; a single-thread
		 * agent's peer cannot be failed from this thread: fenced
		 * instead, every prepare on it refused here */
		ret = rx_peer_hook_update(f->agent, f->peer, f->remote_id,
					  -ESTALE, true, &nothing_exported, 1);
		if (!ret || ret == -EOPNOTSUPP)
			dir->peers_failed++;
		return true;
	}
	if (f->gen == a->gen)
		return false;
	n = dir_agent_exports(a, NULL, 0);
	descs = n ? malloc(n * sizeof(*descs)) : NULL;
	if (n && !descs)
		return false;		/* the next change tries again */
	dir_agent_exports(a, descs, n);
	f->had_exports |= n > 0;
	if (!n && f->had_exports)
		ret = rx_peer_hook_update(f->agent, f->peer, f->remote_id, 0,
					  true, &nothing_exported, 1);
	else
		ret = rx_peer_hook_update(f->agent, f->peer, f->remote_id, 0,
					  true, descs, n);
	free(descs);
	if (ret == -ENOENT)		/* the application destroyed it */
		return true;
	if (!ret) {
		dir->peers_updated++;
		f->gen = a->gen;
	}
	return false;
}

/* lock held: the follows of entry a (NULL: every follow, each against
 * its own entry, as after a list) */
static void follow_entry(struct rdmaxfer_directory *dir, struct dir_agent *a)
{
	struct dir_follow **pp = &dir->follows, *f;

	while ((f = *pp)) {
		if (a && strcmp(f->name, a->name)) {
			pp = &f->next;
			continue;
		}
		if (follow_one(dir, f, a ? a : dir_state_find(&dir->st, f->name))) {
			*pp = f->next;
			dir->nfollows--;
			free(f);
			continue;
		}
		pp = &f->next;
	}
}

/* lock held */
static void follow_all(struct rdmaxfer_directory *dir)
{
	struct dir_agent *a;

	while ((a = dir_state_next_follow(&dir->st))) {
		if (dir->follows)
			follow_entry(dir, a);
		dir_state_gc(&dir->st, a);
	}
}

/* lock held: peers the application destroyed are dropped */
static void prune_follows(struct rdmaxfer_directory *dir)
{
	struct dir_follow **pp = &dir->follows, *f;

	while ((f = *pp)) {
		if (rx_peer_hook_update(f->agent, f->peer, f->remote_id, 0,
					false, NULL, 0) == -ENOENT) {
			*pp = f->next;
			dir->nfollows--;
			free(f);
		} else {
			pp = &f->next;
		}
	}
}

int dir_follow_add(struct rdmaxfer_directory *dir, const char *name,
		   struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		   uint64_t remote_id, uint64_t gen, bool had_exports)
{
	struct dir_follow *f;

	/* amortised: a look at every follow each time their count doubles */
	if (dir->nfollows >= 64 && !(dir->nfollows & (dir->nfollows - 1)))
		prune_follows(dir);
	if (dir->nfollows >= DIR_MAX_FOLLOWS)
		return -ENOSPC;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->agent = agent;
	f->peer = peer;
	f->remote_id = remote_id;
	f->gen = gen;
	f->had_exports = had_exports;
	f->next = dir->follows;
	dir->follows = f;
	dir->nfollows++;
	return 0;
}

/* ------------------------------------------------------------ events */

/* Callbacks, from the watch thread, without the lock; or a wake-up of
 * the application's rdmaxfer_directory_events(). */
static void deliver(struct rdmaxfer_directory *dir)
{
	struct rdmaxfer_dir_event ev;

	pthread_mutex_lock(&dir->lock);
	while (dir->cb && !dir_state_next_event(&dir->st, &ev)) {
		rdmaxfer_dir_event_fn fn = dir->cb;
		void *user = dir->cb_user;

		dir->cb_running = true;
		dir->cb_thread = pthread_self();
		dir->events++;
		pthread_mutex_unlock(&dir->lock);
		fn(user, &ev);
		pthread_mutex_lock(&dir->lock);
		dir->cb_running = false;
		pthread_cond_broadcast(&dir->cond);
	}
	pthread_cond_broadcast(&dir->cond);
	pthread_mutex_unlock(&dir->lock);
}

/* ------------------------------------------------------------- list */

static json_object *range_req(const uint8_t *key, size_t klen,
			      const char *end, int64_t rev, int limit)
{
	json_object *r = json_object_new_object();

	if (!r)
		return NULL;
	json_object_object_add(r, "key", dir_json_b64(key, klen));
	json_object_object_add(r, "range_end", dir_json_b64(end, strlen(end)));
	json_object_object_add(r, "limit", json_object_new_int(limit));
	if (rev)
		json_object_object_add(r, "revision",
				       json_object_new_int64(rev));
	return r;
}

/*
 * Every key in [key, end) into st, in pages, at one revision (*revp: 0 the
 * current one, else that one; set to the revision read).  lock, when not
 * NULL, is held while a page is applied.
 */
int dir_read_range(struct dir_conn *c, struct dir_state *st,
		      pthread_mutex_t *lock, const char *key, const char *end,
		      int64_t *revp)
{
	uint8_t *from = (uint8_t *)strdup(key), *last = NULL;
	size_t from_len = strlen(key), last_len = 0;
	int limit = DIR_PAGE_KEYS, ret;
	int64_t rev = *revp, r;
	bool more = true;

	if (!from)
		return -ENOMEM;
	while (more) {
		json_object *resp = NULL;

		ret = dir_etcd_call(c, "/v3/kv/range",
				    range_req(from, from_len, end, rev, limit),
				    &resp);
		if (ret == -E2BIG && limit > 1) {
			limit /= 2;	/* big values: smaller pages */
			continue;
		}
		if (ret)
			break;
		if (lock)
			pthread_mutex_lock(lock);
		ret = dir_state_range_page(st, resp, &more, &r, &last,
					   &last_len);
		if (lock)
			pthread_mutex_unlock(lock);
		json_object_put(resp);
		if (ret)
			break;
		if (!rev)
			rev = r;
		if (more) {
			/* the next page starts right after the last key */
			uint8_t *n = realloc(last, last_len + 1);

			if (!n) {
				ret = -ENOMEM;
				break;
			}
			n[last_len] = 0;
			free(from);
			from = n;
			from_len = last_len + 1;
			last = NULL;
		}
	}
	free(from);
	free(last);
	if (!ret)
		*revp = rev;
	return ret;
}

/* NS/ .. NS0: every key of the namespace ('0' follows '/') */
static void ns_range(const char *ns, char *key, char *end, size_t cap)
{
	snprintf(key, cap, "%s/", ns);
	snprintf(end, cap, "%s0", ns);
}

int dir_read_all(struct rdmaxfer_directory *dir, struct dir_conn *c,
		 struct dir_state *st, int64_t *revp)
{
	char key[DIR_KEY_MAX], end[DIR_KEY_MAX];
	int ret;

	ns_range(dir->ns, key, end, sizeof(key));
	*revp = 0;
	dir_state_list_begin(st);
	ret = dir_read_range(c, st, NULL, key, end, revp);
	if (!ret)
		dir_state_list_end(st, false, 0);
	return ret;
}

/* --------------------------------------------------------- the stream */

struct stream {
	struct rdmaxfer_directory *dir;
	char *buf;
	size_t len, cap;
	bool created;
	int64_t next_rev;		/* where a new stream resumes */
	int64_t term;			/* highest raft term seen */
	bool relist, reset;		/* list again; etcd lost its store */
	int err;
};

/* One whole line of the stream; false: end this stream. */
static bool stream_line(struct stream *s, const char *line, size_t len)
{
	struct rdmaxfer_directory *dir = s->dir;
	struct dir_watch_line out;
	int64_t term;
	int ret;

	pthread_mutex_lock(&dir->lock);
	ret = dir_state_watch_line(&dir->st, line, len, &out);
	if (ret || out.error) {
		s->err = ret ? ret : out.error;
		s->relist = true;
		pthread_mutex_unlock(&dir->lock);
		return false;
	}
	term = out.raft_term;
	if (!s->created && out.created) {
		s->created = true;
		/* etcd behind what we saw: a new store, not a restart */
		if ((out.header_rev && out.header_rev < s->next_rev - 1) ||
		    (term && term < s->term)) {
			s->relist = s->reset = true;
			pthread_mutex_unlock(&dir->lock);
			return false;
		}
	}
	if (term > s->term)
		s->term = term;
	if (out.canceled) {
		/* compacted past us (or refused): list again */
		s->relist = true;
		pthread_mutex_unlock(&dir->lock);
		return false;
	}
	if (dir->st.revision >= (uint64_t)s->next_rev)
		s->next_rev = (int64_t)dir->st.revision + 1;
	if (s->next_rev - 1 > (int64_t)dir->revision)
		dir->revision = s->next_rev - 1;
	dir->watch_err = 0;
	follow_all(dir);
	pthread_mutex_unlock(&dir->lock);
	if (out.events)
		deliver(dir);
	return true;
}

static size_t on_stream(char *p, size_t size, size_t nmemb, void *user)
{
	struct stream *s = user;
	size_t n = size * nmemb, start = 0, i;

	if (dir_closing(s->dir))
		return 0;
	if (n > DIR_RESPONSE_MAX - s->len) {
		s->err = -E2BIG;
		s->relist = true;
		return 0;
	}
	if (s->len + n > s->cap) {
		size_t cap = s->cap ? s->cap : 65536;
		char *b;

		while (cap < s->len + n)
			cap *= 2;
		b = realloc(s->buf, cap);
		if (!b) {
			s->err = -ENOMEM;
			return 0;
		}
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	for (i = 0; i < s->len; i++) {
		if (s->buf[i] != '\n')
			continue;
		if (i > start && !stream_line(s, s->buf + start, i - start))
			return 0;
		start = i + 1;
	}
	memmove(s->buf, s->buf + start, s->len - start);
	s->len -= start;
	return n;
}

static char *watch_body(const char *ns, int64_t from)
{
	char key[DIR_KEY_MAX], end[DIR_KEY_MAX];
	json_object *r = json_object_new_object(), *c = json_object_new_object();
	char *body = NULL;

	if (!r || !c) {
		json_object_put(r);
		json_object_put(c);
		return NULL;
	}
	ns_range(ns, key, end, sizeof(key));
	json_object_object_add(c, "key", dir_json_b64(key, strlen(key)));
	json_object_object_add(c, "range_end", dir_json_b64(end, strlen(end)));
	json_object_object_add(c, "start_revision", json_object_new_int64(from));
	/* big transactions arrive in pieces, each applied as it comes */
	json_object_object_add(c, "fragment", json_object_new_boolean(1));
	json_object_object_add(r, "create_request", c);
	body = strdup(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN));
	json_object_put(r);
	return body;
}

/* One watch stream, until it ends, fails or the directory closes. */
static int run_stream(struct rdmaxfer_directory *dir, struct dir_conn *c,
		      CURLM *multi, struct stream *s)
{
	char *body = watch_body(dir->ns, s->next_rev);
	struct curl_slist *hdrs = NULL;
	int running = 1, ret = 0;
	CURLMsg *msg;
	int left;

	if (!body)
		return -ENOMEM;
	s->created = false;
	s->len = 0;
	s->err = 0;
	ret = dir_etcd_stream_setup(c, "/v3/watch", body, (void *)on_stream, s);
	free(body);
	if (ret)
		return ret;
	curl_easy_getinfo(c->curl, CURLINFO_PRIVATE, (char **)&hdrs);
	curl_multi_add_handle(multi, c->curl);
	while (running && !dir_closing(dir)) {
		int64_t now = dir_now_ns(), next;
		int wait_ms = 1000;

		if (curl_multi_perform(multi, &running) != CURLM_OK)
			break;
		if (!running)
			break;
		/* agents kept past a store reset whose time is up */
		pthread_mutex_lock(&dir->lock);
		next = dir_state_expire(&dir->st, now);
		follow_all(dir);
		pthread_mutex_unlock(&dir->lock);
		deliver(dir);
		if (next && (next - now) / 1000000 < wait_ms)
			wait_ms = (int)((next - now) / 1000000) + 1;
		curl_multi_poll(multi, NULL, 0, wait_ms, NULL);
	}
	ret = -ECONNRESET;
	while ((msg = curl_multi_info_read(multi, &left)))
		if (msg->msg == CURLMSG_DONE && msg->data.result ==
		    CURLE_COULDNT_CONNECT)
			ret = -ECONNREFUSED;
	curl_multi_remove_handle(multi, c->curl);
	curl_slist_free_all(hdrs);
	if (s->err)
		ret = s->err;
	return ret;
}

/* lock held: sleep until deadline or close */
static void nap(struct rdmaxfer_directory *dir, int64_t ns)
{
	int64_t deadline = dir_now_ns() + ns;

	while (!dir->closing &&
	       dir_cond_wait(&dir->cond, &dir->lock, deadline) != -ETIMEDOUT)
		;
}

/* The whole namespace into dir->st (a list, then the stream resumes). */
static int relist(struct rdmaxfer_directory *dir, struct dir_conn *c,
		  struct stream *s)
{
	char key[DIR_KEY_MAX], end[DIR_KEY_MAX];
	int64_t rev = 0, grace;
	bool reset = s->reset;
	int ret;

	ns_range(dir->ns, key, end, sizeof(key));
	pthread_mutex_lock(&dir->lock);
	dir_state_list_begin(&dir->st);
	pthread_mutex_unlock(&dir->lock);
	ret = dir_read_range(c, &dir->st, &dir->lock, key, end, &rev);
	if (ret)
		return ret;
	pthread_mutex_lock(&dir->lock);
	if (dir->synced && (uint64_t)rev < dir->revision)
		reset = true;
	/* publishers re-publish within a keep-alive period of theirs:
	 * twice ours, and never less than two seconds */
	grace = (int64_t)(dir->attr.ttl_s > 1 ? dir->attr.ttl_s : 1) *
		2000000000LL;
	dir_state_list_end(&dir->st, reset, dir_now_ns() + grace);
	dir->st.revision = (uint64_t)rev;
	dir->revision = (uint64_t)rev;
	s->next_rev = rev + 1;
	if (reset)
		s->term = 0;	/* the new store's term starts again */
	s->relist = s->reset = false;
	if (dir->synced)
		dir->resyncs++;
	dir->synced = true;
	dir->watch_err = 0;
	follow_all(dir);
	/* and the peers connected before this list, from a direct read,
	 * whose name it does not hold or holds as it was then */
	follow_entry(dir, NULL);
	pthread_mutex_unlock(&dir->lock);
	deliver(dir);
	return 0;
}

static void *watch_main(void *arg)
{
	struct rdmaxfer_directory *dir = arg;
	struct stream s = { .dir = dir, .relist = true };
	struct dir_conn c;
	CURLM *multi;
	int ret;

	multi = curl_multi_init();
	if (!multi || dir_conn_init(&c, &dir->etcd)) {
		if (multi)
			curl_multi_cleanup(multi);
		pthread_mutex_lock(&dir->lock);
		dir->watch_err = -ENOMEM;
		dir->watch_running = false;
		pthread_cond_broadcast(&dir->cond);
		pthread_mutex_unlock(&dir->lock);
		return NULL;
	}
	pthread_mutex_lock(&dir->lock);
	dir->multi = multi;
	pthread_mutex_unlock(&dir->lock);
	while (!dir_closing(dir)) {
		if (s.relist) {
			ret = relist(dir, &c, &s);
			if (ret) {
				pthread_mutex_lock(&dir->lock);
				dir->watch_err = ret;
				nap(dir, DIR_RETRY_NS);
				pthread_mutex_unlock(&dir->lock);
				continue;
			}
		}
		ret = run_stream(dir, &c, multi, &s);
		if (dir_closing(dir))
			break;
		pthread_mutex_lock(&dir->lock);
		dir->watch_err = ret;
		/* a stream that ended on its own (etcd went away): again */
		if (!s.relist)
			nap(dir, DIR_RETRY_NS);
		pthread_mutex_unlock(&dir->lock);
		if (dir_err_transport(ret))
			dir_etcd_next_endpoint(&dir->etcd);
	}
	pthread_mutex_lock(&dir->lock);
	dir->multi = NULL;
	pthread_mutex_unlock(&dir->lock);
	dir_conn_fini(&c);
	curl_multi_cleanup(multi);
	free(s.buf);
	return NULL;
}

int dir_watch_start(struct rdmaxfer_directory *dir)
{
	int ret = 0;

	pthread_mutex_lock(&dir->lock);
	if (!dir->watch_running && !dir->closing) {
		ret = -pthread_create(&dir->watch_thread, NULL, watch_main, dir);
		dir->watch_running = !ret;
	}
	pthread_mutex_unlock(&dir->lock);
	return ret;
}

int dir_watch_wait_sync(struct rdmaxfer_directory *dir, int64_t deadline_ns)
{
	while (!dir->synced) {
		if (!dir->watch_running)
			return dir->watch_err ? dir->watch_err : -EIO;
		/* not in sync by then: why, when the watch knows */
		if (dir_cond_wait(&dir->cond, &dir->lock, deadline_ns) &&
		    !dir->synced)
			return dir->watch_err ? dir->watch_err : -ETIMEDOUT;
	}
	return 0;
}

void dir_watch_kick(struct rdmaxfer_directory *dir)
{
	pthread_mutex_lock(&dir->lock);
	if (dir->multi)
		curl_multi_wakeup(dir->multi);
	pthread_mutex_unlock(&dir->lock);
}

/* Close: the thread stopped (woken from its poll), the follows freed. */
void dir_watch_stop(struct rdmaxfer_directory *dir)
{
	bool running;

	pthread_mutex_lock(&dir->lock);
	running = dir->watch_running;
	if (dir->multi)
		curl_multi_wakeup(dir->multi);
	pthread_cond_broadcast(&dir->cond);
	pthread_mutex_unlock(&dir->lock);
	if (running)
		pthread_join(dir->watch_thread, NULL);
	dir->watch_running = false;
	while (dir->follows) {
		struct dir_follow *f = dir->follows;

		dir->follows = f->next;
		free(f);
	}
	dir->nfollows = 0;
}
