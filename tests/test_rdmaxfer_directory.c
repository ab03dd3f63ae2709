// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_directory.c - the etcd directory against a real etcd on
 * loopback that the test starts itself (skipped, saying why, without
 * etcd-server).  No RDMA device is needed: the agents are metadata blobs
 * made by the library's own encoder (blob.c is built in), published with
 * rdmaxfer_directory_publish_md().
 *
 * It covers: etcd down at start (a clear error after a bounded retry, and
 * success when etcd comes up within it); publish, look up, a name held by
 * another lease; partial updates (exports added and withdrawn, each a
 * watch event); 1000 agents published by another process and watched by
 * this one without missing an arrival or a departure; a publisher killed
 * with SIGKILL seen leaving within TTL + 1 s; etcd restarted mid-run (its
 * data kept: the lease and the watch survive; its data lost: the
 * publisher re-publishes and the watcher does not report the agent gone);
 * bad payloads in the namespace rejected while the rest keep working;
 * TLS with a client certificate, and etcd's user/password authentication.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "internal.h"
#include "directory/directory.h"
#include "rc_test.h"
#include "rdmaxfer_etcd_test.h"

static struct test_etcd etcd;
static int n_agents = 1000;

/* ------------------------------------------------------------ blobs */

/* A listening agent's blob: agent id id, ndescs descriptors at base. */
static size_t make_blob(uint64_t id, size_t ndescs, uint64_t base,
			uint8_t *buf, size_t cap)
{
	struct rdmaxfer_desc d[4];
	struct rdmaxfer_md md;
	size_t len = 0, i;

	memset(&md, 0, sizeof(md));
	md.agent_id = id;
	snprintf(md.name, sizeof(md.name), "agent-%llx", (unsigned long long)id);
	strcpy(md.device, "rxe0");
	md.port = 1;
	md.max_msg_size = 1U << 30;
	md.qps_per_peer = 1;
	md.listening = true;
	strcpy(md.host, "10.0.2.15");
	md.listen_port = 18515;
	for (i = 0; i < ndescs && i < 4; i++) {
		d[i].addr = base + i * 4096;
		d[i].len = 4096;
		d[i].rkey = 0x100 + (uint32_t)i;
		d[i].kind = RDMAXFER_MEM_HOST;
	}
	md.ndescs = ndescs;
	md.descs = ndescs ? d : NULL;
	if (rx_md_encode(&md, buf, cap, &len))
		return 0;
	return len;
}

static struct rdmaxfer_desc desc_at(uint64_t addr, uint32_t rkey)
{
	struct rdmaxfer_desc d = { addr, 8192, rkey, RDMAXFER_MEM_HOST };

	return d;
}

static size_t make_export(uint64_t id, struct rdmaxfer_desc d, uint8_t *buf,
			  size_t cap)
{
	struct rdmaxfer_md md;
	size_t len = 0;

	memset(&md, 0, sizeof(md));
	md.agent_id = id;
	strcpy(md.name, "x");
	md.listening = true;
	strcpy(md.host, "10.0.2.15");
	md.listen_port = 18515;
	md.ndescs = 1;
	md.descs = &d;
	if (rx_md_encode(&md, buf, cap, &len))
		return 0;
	return len;
}

static struct rdmaxfer_directory *open_dir(const char *ns, uint32_t ttl)
{
	struct rdmaxfer_directory_attr a;
	struct rdmaxfer_directory *dir = NULL;
	int ret;

	rdmaxfer_directory_attr_init(&a);
	a.endpoints = etcd.url;
	a.ns = ns;
	a.ttl_s = ttl;
	a.flags = RDMAXFER_DIR_NO_ENV;
	ret = rdmaxfer_directory_open(&a, &dir);
	if (ret)
		fprintf(stderr, "open %s: %d\n", etcd.url, ret);
	CU_ASSERT_EQUAL(ret, 0);
	return dir;
}

/* Events until one of type for name (others are kept count of). */
static int wait_event(struct rdmaxfer_directory *dir, uint32_t type,
		      const char *name, int timeout_ms,
		      struct rdmaxfer_dir_event *out)
{
	int64_t end = te_now_ms() + timeout_ms;
	struct rdmaxfer_dir_event ev;

	while (te_now_ms() < end) {
		int n = rdmaxfer_directory_events(dir, &ev, 1, 100);

		if (n == 1 && ev.type == type && !strcmp(ev.name, name)) {
			if (out)
				*out = ev;
			return 0;
		}
	}
	return -ETIMEDOUT;
}

/* ------------------------------------------------------------- tests */

static int relaunch_ret;

static void *relaunch(void *arg)
{
	(void)arg;
	usleep(1000000);
	relaunch_ret = te_launch(&etcd, 20000);
	return NULL;
}

/* Nothing listens: the error names the cause after retry_ms, not sooner
 * and not much later; an etcd that comes up within the window is found. */
static void test_down_at_start(void)
{
	struct rdmaxfer_directory_attr a;
	struct rdmaxfer_directory *dir = NULL;
	char url[64];
	uint16_t port = te_free_port("127.0.0.1");
	int64_t t0, dt;
	int ret;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	rdmaxfer_directory_attr_init(&a);
	a.endpoints = url;
	a.retry_ms = 1000;
	a.flags = RDMAXFER_DIR_NO_ENV;
	t0 = te_now_ms();
	ret = rdmaxfer_directory_open(&a, &dir);
	dt = te_now_ms() - t0;
	rc_diag("down at start: %d (%s) after %lld ms", ret, strerror(-ret),
		(long long)dt);
	CU_ASSERT_EQUAL(ret, -ECONNREFUSED);
	CU_ASSERT(dt >= 700 && dt < 3000);
	/* one try only */
	a.retry_ms = -1;
	t0 = te_now_ms();
	CU_ASSERT_EQUAL(rdmaxfer_directory_open(&a, &dir), -ECONNREFUSED);
	CU_ASSERT(te_now_ms() - t0 < 500);
	/* bad arguments are refused before any network */
	a.endpoints = "ftp://127.0.0.1:1";
	CU_ASSERT_EQUAL(rdmaxfer_directory_open(&a, &dir), -EINVAL);
	a.endpoints = url;
	a.ns = "/bad/";
	CU_ASSERT_EQUAL(rdmaxfer_directory_open(&a, &dir), -EINVAL);
	a.ns = NULL;
	a.endpoints = NULL;
	CU_ASSERT_EQUAL(rdmaxfer_directory_open(&a, &dir), -EINVAL);

	/* etcd down now, up a second later: open, retrying, gets through */
	te_halt(&etcd, 1);
	{
		pthread_t th;

		rdmaxfer_directory_attr_init(&a);
		a.endpoints = etcd.url;
		a.retry_ms = 20000;
		a.flags = RDMAXFER_DIR_NO_ENV;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, relaunch, NULL), 0);
		ret = rdmaxfer_directory_open(&a, &dir);
		pthread_join(th, NULL);
		CU_ASSERT_EQUAL(ret, 0);
		CU_ASSERT_EQUAL(relaunch_ret, 0);
		if (!ret)
			rdmaxfer_directory_close(dir);
	}
}

static void test_publish_lookup(void)
{
	struct rdmaxfer_directory *a = open_dir("t-pub", 5), *b = open_dir("t-pub", 5);
	struct rdmaxfer_directory_info info;
	struct rdmaxfer_dir_list *list;
	struct rdmaxfer_md *md = NULL;
	uint8_t blob[512], other[512];
	size_t len = make_blob(0x1111, 2, 0x10000, blob, sizeof(blob));
	size_t olen = make_blob(0x2222, 0, 0, other, sizeof(other));

	CU_ASSERT_FATAL(a && b && len && olen);
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(a, "w1", blob, len), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(a, "w1", blob, len),
			-EALREADY);
	/* another lease may not take the name */
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(b, "w1", other, olen),
			-EEXIST);
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(a, "bad name", blob, len),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(a, "w2", blob, len - 1),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(b, "w1", 0, &md), 0);
	if (md) {
		CU_ASSERT_EQUAL(md->agent_id, 0x1111);
		CU_ASSERT_EQUAL(md->ndescs, 2);
		CU_ASSERT(md->listening && md->listen_port == 18515);
		CU_ASSERT(!strcmp(md->host, "10.0.2.15"));
		rdmaxfer_md_free(md);
		md = NULL;
	}
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(b, "nobody", 0, &md), -ENOENT);
	CU_ASSERT_EQUAL(rdmaxfer_directory_list(b, &list), 0);
	if (list) {
		CU_ASSERT_EQUAL(list->n, 1);
		CU_ASSERT(list->n && !strcmp(list->agents[0].name, "w1"));
		rdmaxfer_directory_list_free(list);
	}
	CU_ASSERT_EQUAL(rdmaxfer_directory_query(a, &info), 0);
	CU_ASSERT(info.lease_id && info.publications == 1 && info.ttl_s >= 5);
	/* unpublished: gone for the others, and the name free again */
	CU_ASSERT_EQUAL(rdmaxfer_directory_unpublish(a, "w1"), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_unpublish(a, "w1"), -ENOENT);
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(b, "w1", 0, &md), -ENOENT);
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(b, "w1", other, olen), 0);
	/* a look-up that waits sees a name published meanwhile */
	if (fork() == 0) {
		struct rdmaxfer_directory *c = open_dir("t-pub", 5);

		usleep(300000);
		if (!c || rdmaxfer_directory_publish_md(c, "late", blob, len))
			_exit(1);
		usleep(1500000);
		_exit(0);
	}
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(b, "late", 5000, &md), 0);
	rdmaxfer_md_free(md);
	wait(NULL);
	rdmaxfer_directory_close(a);
	rdmaxfer_directory_close(b);
}

/* Exports come and go one at a time, each an UPDATE of the name. */
static void test_partial_updates(void)
{
	struct rdmaxfer_directory *pub = open_dir("t-part", 5);
	struct rdmaxfer_directory *w = open_dir("t-part", 5);
	struct rdmaxfer_directory_attr a;
	struct rdmaxfer_dir_event ev;
	struct rdmaxfer_md *md = NULL;
	uint8_t blob[512], x[512];
	size_t len = make_blob(0x3333, 1, 0x20000, blob, sizeof(blob)), xl;
	int i;

	CU_ASSERT_FATAL(pub && w && len);
	CU_ASSERT_EQUAL(rdmaxfer_directory_watch(w, 5000), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(pub, "p", blob, len), 0);
	CU_ASSERT_EQUAL(wait_event(w, RDMAXFER_DIR_ARRIVE, "p", 5000, &ev), 0);
	CU_ASSERT_EQUAL(ev.agent_id, 0x3333);
	CU_ASSERT_EQUAL(ev.nexports, 1);
	for (i = 0; i < 3; i++) {
		xl = make_export(0x3333, desc_at(0x40000 + i * 0x10000, 7),
				 x, sizeof(x));
		CU_ASSERT_EQUAL(rdmaxfer_directory_export_md(pub, "p", x, xl), 0);
		CU_ASSERT_EQUAL(wait_event(w, RDMAXFER_DIR_UPDATE, "p", 5000,
					   &ev), 0);
		CU_ASSERT_EQUAL(ev.nexports, 2 + i);
	}
	CU_ASSERT_EQUAL(rdmaxfer_directory_export_md(pub, "p", x, xl), -EEXIST);
	xl = make_export(0x4444, desc_at(0x90000, 7), x, sizeof(x));
	CU_ASSERT_EQUAL(rdmaxfer_directory_export_md(pub, "p", x, xl), -ESTALE);
	xl = make_blob(0x3333, 2, 0x60000, x, sizeof(x));
	CU_ASSERT_EQUAL(rdmaxfer_directory_export_md(pub, "p", x, xl), -EINVAL);
	xl = make_export(0x4444, desc_at(0x90000, 7), x, sizeof(x));
	CU_ASSERT_EQUAL(rdmaxfer_directory_export_md(pub, "q", x, xl), -ENOENT);
	{
		/* a publish_md publication has no agent to pack with */
		struct rdmaxfer_desc d = desc_at(0x50000, 7);

		CU_ASSERT_EQUAL(rdmaxfer_directory_export(pub, "p", &d),
				-EOPNOTSUPP);
	}
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(w, "p", 0, &md), 0);
	CU_ASSERT(md && md->ndescs == 4);
	rdmaxfer_md_free(md);
	md = NULL;
	/* withdraw the middle one: gone from the look-up and the list */
	{
		struct rdmaxfer_desc d = desc_at(0x50000, 7);
		size_t k;

		CU_ASSERT_EQUAL(rdmaxfer_directory_withdraw(pub, "p", &d), 0);
		CU_ASSERT_EQUAL(rdmaxfer_directory_withdraw(pub, "p", &d), -ENOENT);
		CU_ASSERT_EQUAL(wait_event(w, RDMAXFER_DIR_UPDATE, "p", 5000,
					   &ev), 0);
		CU_ASSERT_EQUAL(ev.nexports, 3);
		CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(w, "p", 0, &md), 0);
		CU_ASSERT_FATAL(md != NULL);
		CU_ASSERT_EQUAL(md->ndescs, 3);
		for (k = 0; k < md->ndescs; k++)
			CU_ASSERT(md->descs[k].addr != d.addr);
		rdmaxfer_md_free(md);
	}
	/* max_exports per name, enforced on the publishing side */
	rdmaxfer_directory_attr_init(&a);
	a.endpoints = etcd.url;
	a.ns = "t-part";
	a.max_exports = 2;
	a.flags = RDMAXFER_DIR_NO_ENV;
	{
		struct rdmaxfer_directory *small = NULL;

		CU_ASSERT_EQUAL_FATAL(rdmaxfer_directory_open(&a, &small), 0);
		len = make_blob(0x5555, 0, 0, blob, sizeof(blob));
		CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(small, "s", blob, len), 0);
		for (i = 0; i < 3; i++) {
			xl = make_export(0x5555, desc_at(0x1000000 + i * 0x10000, 9),
					 x, sizeof(x));
			CU_ASSERT_EQUAL(rdmaxfer_directory_export_md(small, "s", x, xl),
					i < 2 ? 0 : -ENOSPC);
		}
		rdmaxfer_directory_close(small);
	}
	rdmaxfer_directory_close(pub);
	rdmaxfer_directory_close(w);
}

/* The lease revoked under the publisher, before its keep-alive sees it:
 * the next change writes every publication back on a new lease. */
static void test_lease_lost(void)
{
	struct rdmaxfer_directory *pub = open_dir("t-lost", 30);
	struct rdmaxfer_directory_info info;
	struct rdmaxfer_md *md = NULL;
	json_object *r;
	uint8_t blob[512], x[512];
	size_t len = make_blob(0x4242, 0, 0, blob, sizeof(blob)), xl;
	char id[24];

	CU_ASSERT_FATAL(pub && len);
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(pub, "l1", blob, len), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_query(pub, &info), 0);
	snprintf(id, sizeof(id), "%llu", (unsigned long long)info.lease_id);
	r = json_object_new_object();
	json_object_object_add(r, "ID", json_object_new_string(id));
	CU_ASSERT_EQUAL_FATAL(te_post(&etcd, "/v3/lease/revoke", r), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(pub, "l1", 0, &md), -ENOENT);
	/* TTL 30: its keep-alive (every 10 s) has not run; the export does */
	xl = make_export(0x4242, desc_at(0x7000, 5), x, sizeof(x));
	CU_ASSERT_EQUAL(rdmaxfer_directory_export_md(pub, "l1", x, xl), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(pub, "l1", 0, &md), 0);
	CU_ASSERT(md && md->ndescs == 1);
	rdmaxfer_md_free(md);
	md = NULL;
	CU_ASSERT_EQUAL(rdmaxfer_directory_query(pub, &info), 0);
	CU_ASSERT_EQUAL(info.republished, 1);
	/* and a publication made right after a revocation */
	snprintf(id, sizeof(id), "%llu", (unsigned long long)info.lease_id);
	r = json_object_new_object();
	json_object_object_add(r, "ID", json_object_new_string(id));
	CU_ASSERT_EQUAL_FATAL(te_post(&etcd, "/v3/lease/revoke", r), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(pub, "l2", blob, len), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(pub, "l1", 0, &md), 0);
	rdmaxfer_md_free(md);
	md = NULL;
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(pub, "l2", 0, &md), 0);
	rdmaxfer_md_free(md);
	rdmaxfer_directory_close(pub);
}

/* The other process of test_thousand: publish n names, then close on
 * the parent's word (every name leaves with the lease). */
static void thousand_child(int go_fd, int done_fd)
{
	struct rdmaxfer_directory *d = open_dir("t-1000", 10);
	uint8_t blob[512];
	char name[32], c = 0;
	int i;

	if (!d)
		_exit(2);
	for (i = 0; i < n_agents; i++) {
		size_t len = make_blob(0x100000 + i, 0, 0, blob, sizeof(blob));

		snprintf(name, sizeof(name), "n%05d", i);
		if (rdmaxfer_directory_publish_md(d, name, blob, len))
			_exit(3);
	}
	if (write(done_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1)
		_exit(4);
	rdmaxfer_directory_close(d);
	_exit(0);
}

static int take_all(struct rdmaxfer_directory *w, uint32_t type,
		    unsigned char *seen, int n, int timeout_ms)
{
	struct rdmaxfer_dir_event ev[256];
	int64_t end = te_now_ms() + timeout_ms;
	int got = 0, dup = 0, k, i;

	while (got < n && te_now_ms() < end) {
		k = rdmaxfer_directory_events(w, ev, 256, 200);
		for (i = 0; i < k; i++) {
			int idx;

			if (ev[i].type != type ||
			    sscanf(ev[i].name, "n%05d", &idx) != 1 ||
			    idx < 0 || idx >= n) {
				dup++;
				continue;
			}
			if (seen[idx] & (1U << type)) {
				dup++;
				continue;
			}
			seen[idx] |= 1U << type;
			got++;
		}
	}
	if (dup)
		rc_diag("%d unexpected events", dup);
	return dup ? -EPROTO : got;
}

static void test_thousand(void)
{
	struct rdmaxfer_directory *w = open_dir("t-1000", 10);
	struct rdmaxfer_directory_info info;
	int go[2], done[2], st;
	unsigned char *seen = calloc(n_agents, 1);
	int64_t t0, t_pub, t_seen, t_left;
	pid_t pid;
	char c = 0;

	CU_ASSERT_FATAL(w && seen && !pipe(go) && !pipe(done));
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_directory_watch(w, 5000), 0);
	t0 = te_now_ms();
	pid = fork();
	if (!pid)
		thousand_child(go[0], done[1]);
	CU_ASSERT_EQUAL(take_all(w, RDMAXFER_DIR_ARRIVE, seen, n_agents,
				 60000), n_agents);
	t_seen = te_now_ms();
	CU_ASSERT_EQUAL(read(done[0], &c, 1), 1);
	t_pub = te_now_ms();
	CU_ASSERT_EQUAL(rdmaxfer_directory_query(w, &info), 0);
	CU_ASSERT_EQUAL(info.agents, (uint32_t)n_agents);
	CU_ASSERT_EQUAL(write(go[1], &c, 1), 1);
	CU_ASSERT_EQUAL(take_all(w, RDMAXFER_DIR_LEAVE, seen, n_agents, 60000),
			n_agents);
	t_left = te_now_ms();
	waitpid(pid, &st, 0);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	rc_diag("%d agents: published in %lld ms, all arrivals seen at %lld ms, all gone %lld ms after the close",
		n_agents, (long long)(t_pub - t0), (long long)(t_seen - t0),
		(long long)(t_left - t_pub));
	CU_ASSERT_EQUAL(rdmaxfer_directory_query(w, &info), 0);
	CU_ASSERT_EQUAL(info.agents, 0);
	free(seen);
	rdmaxfer_directory_close(w);
}

/* A publisher that dies without a word: gone when its lease expires. */
static void test_sigkill(void)
{
	struct rdmaxfer_directory *w = open_dir("t-kill", 2);
	struct rdmaxfer_dir_event ev;
	int ready[2], st;
	uint32_t ttl = 0;
	int64_t t_kill, dt;
	pid_t pid;

	CU_ASSERT_FATAL(w && !pipe(ready));
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_directory_watch(w, 5000), 0);
	pid = fork();
	if (!pid) {
		struct rdmaxfer_directory *d = open_dir("t-kill", 2);
		struct rdmaxfer_directory_info info;
		uint8_t blob[512];
		size_t len = make_blob(0x7777, 0, 0, blob, sizeof(blob));

		if (!d || rdmaxfer_directory_publish_md(d, "victim", blob, len) ||
		    rdmaxfer_directory_query(d, &info) ||
		    write(ready[1], &info.ttl_s, sizeof(info.ttl_s)) !=
		    sizeof(info.ttl_s))
			_exit(1);
		for (;;)
			pause();
	}
	CU_ASSERT_EQUAL(read(ready[0], &ttl, sizeof(ttl)), sizeof(ttl));
	CU_ASSERT_EQUAL(wait_event(w, RDMAXFER_DIR_ARRIVE, "victim", 5000, NULL), 0);
	/* let a keep-alive or two go by first */
	usleep(1500000);
	t_kill = te_now_ms();
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CU_ASSERT_EQUAL(wait_event(w, RDMAXFER_DIR_LEAVE, "victim",
				   (int)(ttl + 5) * 1000, &ev), 0);
	dt = te_now_ms() - t_kill;
	rc_diag("SIGKILL to leave event: %lld ms (TTL %u s)", (long long)dt, ttl);
	CU_ASSERT(ttl >= 2 && ttl <= 3);
	CU_ASSERT(dt <= (int64_t)(ttl + 1) * 1000);
	CU_ASSERT_EQUAL(ev.agent_id, 0x7777);
	rdmaxfer_directory_close(w);
}

/*
 * Events taken as they come for ms milliseconds (none left to coalesce):
 * the number of departures among them.
 */
static int leaves_during(struct rdmaxfer_directory *w, int ms)
{
	int64_t end = te_now_ms() + ms;
	struct rdmaxfer_dir_event ev;
	int leaves = 0;

	while (te_now_ms() < end) {
		if (rdmaxfer_directory_events(w, &ev, 1, 50) != 1)
			continue;
		if (ev.type == RDMAXFER_DIR_LEAVE) {
			rc_diag("%s left at revision %llu", ev.name,
				(unsigned long long)ev.revision);
			leaves++;
		}
	}
	return leaves;
}

/*
 * etcd goes away and comes back, with its data and then without it.  The
 * publisher keeps its lease alive every 2 s (TTL 6), so after a lost
 * store it writes itself back up to 2 s late; the watcher (TTL 2: a
 * grace of 4 s) must not report it gone meanwhile.  Its events are taken
 * as they come, so a departure and the return cannot cancel out.
 */
static void test_restart(void)
{
	struct rdmaxfer_directory *pub = open_dir("t-rst", 6);
	struct rdmaxfer_directory *w = open_dir("t-rst", 2);
	struct rdmaxfer_directory_info ip, iw;
	struct rdmaxfer_md *md = NULL;
	uint8_t blob[512], x[512];
	size_t len = make_blob(0x8888, 0, 0, blob, sizeof(blob)), xl;

	CU_ASSERT_FATAL(pub && w && len);
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(pub, "r1", blob, len), 0);
	xl = make_export(0x8888, desc_at(0x70000, 3), x, sizeof(x));
	CU_ASSERT_EQUAL(rdmaxfer_directory_export_md(pub, "r1", x, xl), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_watch(w, 5000), 0);
	CU_ASSERT_EQUAL(wait_event(w, RDMAXFER_DIR_ARRIVE, "r1", 5000, NULL), 0);

	/* a restart with the data kept: lease, entry and watch survive */
	CU_ASSERT_EQUAL_FATAL(te_restart(&etcd, 0, 20000), 0);
	CU_ASSERT_EQUAL(leaves_during(w, 1000), 0);
	len = make_blob(0x9999, 0, 0, blob, sizeof(blob));
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(pub, "r2", blob, len), 0);
	CU_ASSERT_EQUAL(wait_event(w, RDMAXFER_DIR_ARRIVE, "r2", 10000, NULL), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_query(pub, &ip), 0);
	CU_ASSERT_EQUAL(ip.republished, 0);

	/* the data lost: the publisher writes everything back on a new
	 * lease; the watcher lists again and reports nobody gone */
	CU_ASSERT_EQUAL_FATAL(te_restart(&etcd, 1, 20000), 0);
	CU_ASSERT_EQUAL(leaves_during(w, 6000), 0);
	rdmaxfer_directory_query(pub, &ip);
	rdmaxfer_directory_query(w, &iw);
	rc_diag("after the lost store: republished %llu, resyncs %llu",
		(unsigned long long)ip.republished,
		(unsigned long long)iw.resyncs);
	CU_ASSERT(ip.republished >= 1);
	CU_ASSERT(iw.resyncs >= 1 && iw.watching);
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(w, "r1", 0, &md), 0);
	CU_ASSERT(md && md->ndescs == 1);
	rdmaxfer_md_free(md);
	md = NULL;
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(w, "r2", 0, &md), 0);
	rdmaxfer_md_free(md);
	rdmaxfer_directory_close(pub);
	CU_ASSERT_EQUAL(wait_event(w, RDMAXFER_DIR_LEAVE, "r1", 5000, NULL), 0);
	rdmaxfer_directory_close(w);
}

/* Garbage in the namespace: refused, counted; the good entries work. */
static void test_bad_payloads(void)
{
	struct rdmaxfer_directory *pub = open_dir("t-bad", 5);
	struct rdmaxfer_directory *w = open_dir("t-bad", 5);
	struct rdmaxfer_directory_info info;
	struct rdmaxfer_dir_list *list = NULL;
	struct rdmaxfer_dir_event ev;
	struct rdmaxfer_md *md = NULL;
	uint8_t blob[512], x[1024];
	size_t len, xl;
	int n, arrivals = 0;

	CU_ASSERT_FATAL(pub && w);
	len = make_blob(0xaaaa, 0, 0, blob, sizeof(blob));
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(pub, "good", blob, len), 0);
	/* before the watch: the first list meets them */
	CU_ASSERT_EQUAL(te_put(&etcd, "t-bad/agents/text", "not a blob", 10), 0);
	CU_ASSERT_EQUAL(te_put(&etcd, "t-bad/agents/trunc", blob, len - 1), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_watch(w, 5000), 0);
	/* then on the watch stream */
	memcpy(x, blob, len);
	x[4] = 2;		/* another blob version */
	CU_ASSERT_EQUAL(te_put(&etcd, "t-bad/agents/v2", x, len), 0);
	memcpy(x, blob, len);
	x[123] = 1;		/* a reserved byte set */
	CU_ASSERT_EQUAL(te_put(&etcd, "t-bad/agents/resv", x, len), 0);
	CU_ASSERT_EQUAL(te_put(&etcd, "t-bad/agents/bad name", blob, len), 0);
	CU_ASSERT_EQUAL(te_put(&etcd, "t-bad/agents/", blob, len), 0);
	CU_ASSERT_EQUAL(te_put(&etcd, "t-bad/agents/0123456789012345678901234567890123",
				blob, len), 0);
	/* exports: two descriptors in one, another agent's, a bad id */
	xl = make_blob(0xaaaa, 2, 0x1000, x, sizeof(x));
	CU_ASSERT_EQUAL(te_put(&etcd, "t-bad/exports/good/two", x, xl), 0);
	xl = make_export(0xbbbb, desc_at(0x8000, 1), x, sizeof(x));
	CU_ASSERT_EQUAL(te_put(&etcd, "t-bad/exports/good/foreign", x, xl), 0);
	xl = make_export(0xaaaa, desc_at(0x9000, 1), x, sizeof(x));
	CU_ASSERT_EQUAL(te_put(&etcd, "t-bad/exports/good/a/b", x, xl), 0);
	/* and one good export through the same door */
	CU_ASSERT_EQUAL(te_put(&etcd, "t-bad/exports/good/ok", x, xl), 0);
	/* a good agent after all of it */
	len = make_blob(0xcccc, 1, 0x5000, blob, sizeof(blob));
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(pub, "good2", blob, len), 0);
	CU_ASSERT_EQUAL(wait_event(w, RDMAXFER_DIR_ARRIVE, "good2", 5000, NULL), 0);

	CU_ASSERT_EQUAL(rdmaxfer_directory_list(w, &list), 0);
	if (list) {
		CU_ASSERT_EQUAL(list->n, 2);
		CU_ASSERT(list->n == 2 && !strcmp(list->agents[0].name, "good") &&
			  !strcmp(list->agents[1].name, "good2"));
		/* good: the one export with its agent id and a valid key */
		CU_ASSERT(list->n == 2 && list->agents[0].md->ndescs == 1 &&
			  list->agents[0].md->descs[0].addr == 0x9000);
		rc_diag("rejected: %llu", (unsigned long long)list->rejected);
		rdmaxfer_directory_list_free(list);
	}
	CU_ASSERT_EQUAL(rdmaxfer_directory_query(w, &info), 0);
	CU_ASSERT(info.rejected >= 9);	/* the nine bad keys and values */
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(w, "text", 0, &md), -EBADMSG);
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(w, "trunc", 0, &md), -EBADMSG);
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(w, "v2", 0, &md), -EPROTO);
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(w, "good2", 0, &md), 0);
	rdmaxfer_md_free(md);
	/* the same without a watch (a list read from etcd) */
	{
		struct rdmaxfer_directory *r = open_dir("t-bad", 5);

		CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(r, "v2", 0, &md), -EPROTO);
		CU_ASSERT_EQUAL(rdmaxfer_directory_list(r, &list), 0);
		CU_ASSERT(list && list->n == 2 && list->rejected >= 9);
		rdmaxfer_directory_list_free(list);
		rdmaxfer_directory_close(r);
	}
	/* only the good ones ever arrived */
	while ((n = rdmaxfer_directory_events(w, &ev, 1, 0)) == 1) {
		CU_ASSERT(!strcmp(ev.name, "good") || !strcmp(ev.name, "good2"));
		arrivals++;
	}
	rc_diag("%d more events of the good entries", arrivals);
	/* a good entry that turns bad leaves */
	CU_ASSERT_EQUAL(te_put(&etcd, "t-bad/agents/good", "junk", 4), 0);
	CU_ASSERT_EQUAL(wait_event(w, RDMAXFER_DIR_LEAVE, "good", 5000, NULL), 0);
	rdmaxfer_directory_close(pub);
	rdmaxfer_directory_close(w);
}

/* ------------------------------------------------- TLS and passwords */

static int sh(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_tls(void)
{
	struct test_etcd t;
	struct rdmaxfer_directory_attr a;
	struct rdmaxfer_directory *d = NULL;
	char cmd[4096], ca[PATH_MAX], crt[PATH_MAX], key[PATH_MAX];
	char ccrt[PATH_MAX], ckey[PATH_MAX], msg[160], tmpl[] = "/tmp/rdmaxfer-tls.XXXXXX";
	struct rdmaxfer_md *md = NULL;
	uint8_t blob[512];
	size_t len = make_blob(0xdddd, 0, 0, blob, sizeof(blob));
	int ret;

	if (access("/usr/bin/openssl", X_OK)) {
		rc_skip("no /usr/bin/openssl to make certificates with");
		return;
	}
	CU_ASSERT_FATAL(mkdtemp(tmpl) != NULL);
	snprintf(ca, sizeof(ca), "%s/ca.pem", tmpl);
	snprintf(crt, sizeof(crt), "%s/server.pem", tmpl);
	snprintf(key, sizeof(key), "%s/server.key", tmpl);
	snprintf(ccrt, sizeof(ccrt), "%s/client.pem", tmpl);
	snprintf(ckey, sizeof(ckey), "%s/client.key", tmpl);
	/* a CA, a server certificate for 127.0.0.1, a client certificate */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && "
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out ca.pem && "
		 "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr && "
		 "printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n' > ext && "
		 "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile ext -out server.pem && "
		 "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=client -keyout client.key -out client.csr && "
		 "printf 'extendedKeyUsage=clientAuth\\n' > cext && "
		 "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile cext -out client.pem",
		 tmpl);
	if (sh(cmd ) != 0) {
		rc_skip("openssl could not make the test certificates");
		goto out;
	}
	CU_ASSERT_EQUAL_FATAL(te_find(&t, msg, sizeof(msg)), 0);
	t.cert = crt;
	t.key = key;
	t.ca = ca;
	t.client_cert_auth = 1;
	/* the health probe presents the client certificate too */
	ret = te_start(&t, NULL, 20000);
	CU_ASSERT_EQUAL(ret, 0);
	if (ret) {
		te_stop(&t, 1);
		goto out;
	}
	rdmaxfer_directory_attr_init(&a);
	a.endpoints = t.url;
	a.flags = RDMAXFER_DIR_NO_ENV;
	a.retry_ms = -1;
	/* not trusting its CA: refused */
	CU_ASSERT_EQUAL(rdmaxfer_directory_open(&a, &d), -ECONNABORTED);
	/* trusting it but without a client certificate: refused */
	a.ca_file = ca;
	ret = rdmaxfer_directory_open(&a, &d);
	CU_ASSERT(ret == -ECONNABORTED || ret == -ECONNRESET);
	a.cert_file = ccrt;
	a.key_file = ckey;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_directory_open(&a, &d), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(d, "tls", blob, len), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_watch(d, 5000), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(d, "tls", 0, &md), 0);
	rdmaxfer_md_free(md);
	rdmaxfer_directory_close(d);
	te_stop(&t, 0);
out:
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpl);
	sh(cmd);
}

static void test_auth(void)
{
	struct rdmaxfer_directory_attr a;
	struct rdmaxfer_directory *d = NULL, *w = NULL;
	struct rdmaxfer_md *md = NULL;
	char cmd[PATH_MAX * 2 + 1024], ctl[PATH_MAX];
	uint8_t blob[512];
	size_t len = make_blob(0xeeee, 0, 0, blob, sizeof(blob));

	snprintf(ctl, sizeof(ctl), "%s", etcd.bin);
	*strrchr(ctl, '/') = 0;
	snprintf(cmd, sizeof(cmd), "%s/etcdctl", ctl);
	if (access(cmd, X_OK)) {
		rc_skip("no etcdctl next to etcd (apt-get install etcd-client)");
		return;
	}
	snprintf(cmd, sizeof(cmd),
		 "export ETCDCTL_API=3 E='--endpoints=%s'; C=%s/etcdctl; "
		 "$C $E user add root:rootpw >/dev/null && "
		 "$C $E user grant-role root root >/dev/null && "
		 "$C $E user add dir:dirpw >/dev/null && "
		 "$C $E role add dir >/dev/null && "
		 "$C $E role grant-permission dir --prefix=true readwrite t-auth/ >/dev/null && "
		 "$C $E user grant-role dir dir >/dev/null && "
		 "$C $E auth enable >/dev/null", etcd.url, ctl);
	CU_ASSERT_EQUAL_FATAL(sh(cmd), 0);
	rdmaxfer_directory_attr_init(&a);
	a.endpoints = etcd.url;
	a.ns = "t-auth";
	a.flags = RDMAXFER_DIR_NO_ENV;
	a.retry_ms = -1;
	CU_ASSERT_EQUAL(rdmaxfer_directory_open(&a, &d), -EACCES);
	a.user = "dir";
	a.password = "wrong";
	CU_ASSERT_EQUAL(rdmaxfer_directory_open(&a, &d), -EACCES);
	a.password = "dirpw";
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_directory_open(&a, &d), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_directory_open(&a, &w), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_watch(w, 5000), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_publish_md(d, "auth", blob, len), 0);
	CU_ASSERT_EQUAL(wait_event(w, RDMAXFER_DIR_ARRIVE, "auth", 5000, NULL), 0);
	CU_ASSERT_EQUAL(rdmaxfer_directory_lookup(w, "auth", 0, &md), 0);
	rdmaxfer_md_free(md);
	/* outside its role's prefix: refused by etcd */
	a.ns = "t-other";
	rdmaxfer_directory_close(w);
	w = NULL;
	CU_ASSERT_EQUAL(rdmaxfer_directory_open(&a, &w), -EACCES);
	rdmaxfer_directory_close(d);
	/* auth off again for whatever runs next */
	snprintf(cmd, sizeof(cmd),
		 "ETCDCTL_API=3 %s/etcdctl --endpoints=%s --user root:rootpw auth disable >/dev/null",
		 ctl, etcd.url);
	CU_ASSERT_EQUAL(sh(cmd), 0);
}

static int suite_init(void)
{
	char msg[200];
	int ret;

	ret = te_find(&etcd, msg, sizeof(msg));
	if (ret)
		rc_skip_all("%s", msg);
	ret = te_start(&etcd, NULL, 20000);
	if (ret) {
		te_stop(&etcd, 1);
		rc_skip_all("etcd (%s) did not start on loopback: %s", etcd.bin,
			    strerror(-ret));
	}
	return 0;
}

static int suite_fini(void)
{
	te_stop(&etcd, 0);
	return 0;
}

/*
 * The cases that fork while the directory's threads run (a child that
 * publishes, an etcd started again): ThreadSanitizer does not model that,
 * so they run in the plain and ASan builds only.
 */
#define FORKS(fn)						\
static void fn##_forks(void)					\
{								\
	if (rc_skip_fork_under_tsan())				\
		return;						\
	fn();							\
}
FORKS(test_down_at_start)
FORKS(test_publish_lookup)
FORKS(test_thousand)
FORKS(test_sigkill)
FORKS(test_restart)

static const struct rc_test_case cases[] = {
	{ "down_at_start", test_down_at_start_forks },
	{ "publish_lookup", test_publish_lookup_forks },
	{ "partial_updates", test_partial_updates },
	{ "lease_lost_under_publisher", test_lease_lost },
	{ "thousand_agents", test_thousand_forks },
	{ "sigkill_leaves", test_sigkill_forks },
	{ "etcd_restart", test_restart_forks },
	{ "bad_payloads", test_bad_payloads },
	{ "tls_client_cert", test_tls },
	{ "user_password", test_auth },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	n_agents = (int)rc_env_long("RDMAXFER_TEST_DIR_AGENTS", 1000, 1, 100000);
	signal(SIGPIPE, SIG_IGN);
	rc_add_suite("rdmaxfer_directory", suite_init, suite_fini, cases);
	return rc_test_main(argc, argv);
}
