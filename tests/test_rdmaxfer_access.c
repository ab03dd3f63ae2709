// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_access.c - a peer reaches exactly what was exported.
 *
 * Two server agents, one in the default mode (an rkey dies with the last
 * handle of its range) and one with RDMAXFER_AGENT_CACHE_RKEYS, export
 * ranges of a pattern-filled arena to one client agent over loopback
 * RoCE.  For every way a cache entry can come to be (exact; next to and
 * overlapping other exports; inside a local-only merged and grown entry;
 * registered again after munmap + mmap at the same address) the client
 * WRITEs, READs and fetch-and-adds one byte (atomics: one 8-byte word)
 * before and one after each descriptor with its rkey: each must fail with
 * a remote access error (-EACCES) and leave every byte of the arena as it
 * was (checked by the CPU against a shadow copy), while the same
 * operations inside succeed where the right was granted.  After the last
 * deregister an old rkey fails in the default mode and still works when
 * rkeys are cached; read-only, write-only and atomic-only exports refuse
 * the other operations.  Descriptors are forged by hand on a peer made
 * with rdmaxfer_connect(), so they reach the wire.  A refused operation
 * moves the peer to ERROR: each is followed by rdmaxfer_peer_reconnect().
 * A key dies with its memory even while its handle is held: 4 pages
 * registered and kept, then unmapped and replaced at the same address
 * (anonymous memory, and a memfd A replaced by a memfd B): after the
 * bound rdmaxfer_mem_register(3) states, the old key is refused, the new
 * memory and file A are unchanged, and the handle reports -ESTALE.
 * ACCESS_RKEY_MODE=window in the environment makes the default side a
 * RDMAXFER_RKEY_WINDOW agent, so that every case above runs through
 * memory windows; then two registrations of one range get two keys, the
 * MR's own rkey (and its lkey) under a window reach nothing, and every
 * register binds a window and every deregister unbinds it (the agent's
 * stats).  The mode's choice and RDMAXFER_RKEY_MODE are checked in both.
 * Skips (77) without $RXE_ADDR or an RDMA device.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <time.h>

#define WAIT_MS		20000

#include "rdmaxfer_test_util.h"
/* the MR under a window: the handle's cache entry (window case) */
#include "../librdmaxfer/core/core.h"

#define ARENA_PAGES	16
#define LBUF_LEN	(64 * 1024)

struct side {
	const char *name;
	struct rdmaxfer_agent *srv;
	uint16_t port;
	struct rdmaxfer_peer *cp;	/* the client's peer for this server */
	struct rdmaxfer_peer *sp;	/* the server's view of the client */
};

static const char *addr;
static struct rdmaxfer_agent *cli;
static struct side sides[2] = { { .name = "default" },
				{ .name = "cache-rkeys" } };
#define DEF	(&sides[0])
#define KEEP	(&sides[1])
static uint8_t *lbuf;
static uint64_t *res;
static uint8_t *arena, *shadow;
static size_t psz, arena_len;
static int refusals;
static bool window;		/* ACCESS_RKEY_MODE=window: DEF is a window agent */

static int side_init(struct side *s, uint32_t flags)
{
	struct rdmaxfer_agent_attr attr;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_THREAD;
	attr.flags = RDMAXFER_AGENT_NO_ENV | flags;
	if (window && s == DEF) {
		attr.rkey_mode = RDMAXFER_RKEY_WINDOW;
		s->name = "window";
	}
	if (rdmaxfer_agent_create(&attr, &s->srv) ||
	    rdmaxfer_listen(s->srv, addr, 0) ||
	    rdmaxfer_listen_port(s->srv, &s->port))
		return 1;
	if (rdmaxfer_connect(cli, addr, s->port, 10000, &s->cp))
		return 1;
	return rdmaxfer_accept(s->srv, 10000, &s->sp) ? 1 : 0;
}

static int suite_init(void)
{
	struct rdmaxfer_agent_attr attr;

	psz = (size_t)sysconf(_SC_PAGESIZE);
	arena_len = ARENA_PAGES * psz;
	rdmaxfer_agent_attr_init(&attr);
	attr.flags = RDMAXFER_AGENT_NO_ENV;
	if (rdmaxfer_agent_create(&attr, &cli))
		return 1;
	lbuf = aligned_alloc(4096, LBUF_LEN);
	res = aligned_alloc(4096, 4096);
	shadow = malloc(arena_len);
	if (!lbuf || !res || !shadow)
		return 1;
	if (side_init(DEF, 0) || side_init(KEEP, RDMAXFER_AGENT_CACHE_RKEYS))
		return 1;
	return 0;
}

static int suite_cleanup(void)
{
	rdmaxfer_agent_destroy(cli);
	rdmaxfer_agent_destroy(DEF->srv);
	rdmaxfer_agent_destroy(KEEP->srv);
	free(lbuf);
	free(res);
	free(shadow);
	return 0;
}

/* A fresh arena (at 'at' if not NULL) filled with a pattern, and its
 * shadow: what the CPU must find there after every operation. */
static uint8_t *arena_map(void *at)
{
	uint8_t *p = mmap(at, arena_len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0),
			  -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	fill(p, arena_len, 77);
	memcpy(shadow, p, arena_len);
	return p;
}

static uint64_t aaddr(size_t off)
{
	return (uint64_t)(uintptr_t)(arena + off);
}

static bool arena_intact(void)
{
	size_t i;

	for (i = 0; i < arena_len; i++) {
		if (arena[i] != shadow[i]) {
			rc_diag("arena byte %zu changed: %#x, expected %#x", i,
				arena[i], shadow[i]);
			return false;
		}
	}
	return true;
}

/* One operation of 'len' bytes (FADD: one word, adds 1) at d. */
static int do_op(struct side *s, enum rdmaxfer_op op,
		 const struct rdmaxfer_desc *d)
{
	struct rdmaxfer_iov iov = { lbuf, d->len };
	struct rdmaxfer_req *req;
	int ret;

	if (op != RDMAXFER_OP_FADD)
		return xfer_sync(s->cp, op, &iov, d, 1, NULL);
	ret = rdmaxfer_atomic_prepare(s->cp, op, d, 0, 1, 0, res, &req);
	if (ret)
		return ret;
	ret = rdmaxfer_req_post(req);
	if (!ret)
		ret = rdmaxfer_req_wait(req, WAIT_MS);
	rdmaxfer_req_free(req);
	return ret;
}

static const char *op_name(enum rdmaxfer_op op)
{
	return op == RDMAXFER_OP_WRITE ? "WRITE" :
	       op == RDMAXFER_OP_READ ? "READ" : "FADD";
}

/* The failed peer back to CONNECTED, the server's new view taken. */
static void recover(struct side *s)
{
	struct rdmaxfer_peer *np;

	CU_ASSERT_NOT_EQUAL(rdmaxfer_peer_state(s->cp),
			    RDMAXFER_PEER_CONNECTED);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_peer_reconnect(s->cp, 10000), 0);
	if (rdmaxfer_accept(s->srv, 10000, &np) == 0) {
		rdmaxfer_peer_destroy(s->sp);
		s->sp = np;
	}
}

/* op at d must fail with a remote access error and change nothing. */
static void expect_refused(struct side *s, enum rdmaxfer_op op,
			   const struct rdmaxfer_desc *d, const char *what)
{
	int ret;

	memset(lbuf, 0xee, LBUF_LEN);
	*res = 0xdeadbeefULL;
	ret = do_op(s, op, d);
	refusals++;
	if (ret != -EACCES)
		rc_diag("%s %s %s at %#llx+%llu: %d (%s), expected -EACCES",
			s->name, op_name(op), what, (unsigned long long)d->addr,
			(unsigned long long)d->len, ret, rdmaxfer_strerror(ret));
	CU_ASSERT_EQUAL(ret, -EACCES);
	if (ret)
		recover(s);
	CU_ASSERT(arena_intact());
	/* nothing came back either */
	if (op == RDMAXFER_OP_READ)
		CU_ASSERT(lbuf[0] == 0xee && lbuf[d->len - 1] == 0xee);
	if (op == RDMAXFER_OP_FADD)
		CU_ASSERT_EQUAL(*res, 0xdeadbeefULL);
}

/* op at d must work: the data lands, or comes back, byte for byte. */
static void expect_ok(struct side *s, enum rdmaxfer_op op,
		      const struct rdmaxfer_desc *d)
{
	size_t off = (size_t)(d->addr - aaddr(0));
	uint64_t old;
	int ret;

	fill(lbuf, d->len, (uint32_t)(d->addr & 0xff) + op);
	old = *(uint64_t *)(shadow + (off & ~7UL));
	ret = do_op(s, op, d);
	if (ret)
		rc_diag("%s %s at %#llx+%llu: %d (%s)", s->name, op_name(op),
			(unsigned long long)d->addr, (unsigned long long)d->len,
			ret, rdmaxfer_strerror(ret));
	CU_ASSERT_EQUAL(ret, 0);
	if (ret) {
		recover(s);
		return;
	}
	switch (op) {
	case RDMAXFER_OP_WRITE:
		memcpy(shadow + off, lbuf, d->len);
		break;
	case RDMAXFER_OP_READ:
		CU_ASSERT(!memcmp(lbuf, shadow + off, d->len));
		break;
	default:
		CU_ASSERT_EQUAL(*res, old);
		*(uint64_t *)(shadow + off) = old + 1;
		break;
	}
	CU_ASSERT(arena_intact());
}

static struct rdmaxfer_desc at(const struct rdmaxfer_desc *d, uint64_t a,
			       uint64_t len)
{
	struct rdmaxfer_desc x = *d;

	x.addr = a;
	x.len = len;
	return x;
}

/*
 * The whole probe of one exported descriptor d (8-byte aligned start and
 * length) granted 'access': one byte (a word for atomics) on either side
 * refused for every operation; inside, the first and last byte (word)
 * work for a granted right and are refused for the others.
 */
static void probe(struct side *s, const struct rdmaxfer_desc *d,
		  uint32_t access)
{
	static const enum rdmaxfer_op ops[] = {
		RDMAXFER_OP_WRITE, RDMAXFER_OP_READ, RDMAXFER_OP_FADD,
	};
	static const uint32_t right[] = {
		RDMAXFER_ACCESS_REMOTE_WRITE, RDMAXFER_ACCESS_REMOTE_READ,
		RDMAXFER_ACCESS_REMOTE_ATOMIC,
	};
	struct rdmaxfer_desc x;
	unsigned int i;

	CU_ASSERT_FATAL(d->addr % 8 == 0 && d->len % 8 == 0 && d->len >= 16);
	for (i = 0; i < 3; i++) {
		uint64_t w = ops[i] == RDMAXFER_OP_FADD ? 8 : 1;

		x = at(d, d->addr - w, w);
		expect_refused(s, ops[i], &x, "one before");
		x = at(d, d->addr + d->len, w);
		expect_refused(s, ops[i], &x, "one after");
		/* straddling the end: the bytes inside must not land either */
		if (ops[i] == RDMAXFER_OP_WRITE) {
			x = at(d, d->addr + d->len - 4, 8);
			expect_refused(s, ops[i], &x, "across the end");
		}
		if (access & right[i]) {
			x = at(d, d->addr, w);
			expect_ok(s, ops[i], &x);
			x = at(d, d->addr + d->len - w, w);
			expect_ok(s, ops[i], &x);
		} else {
			x = at(d, d->addr, w);
			expect_refused(s, ops[i], &x, "without the right");
		}
	}
}

static struct rdmaxfer_mem *reg(struct side *s, size_t off, size_t len,
				uint32_t access, struct rdmaxfer_desc *d)
{
	struct rdmaxfer_mem *m = NULL;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_register_access(s->srv, arena + off,
							   len,
							   RDMAXFER_MEM_HOST,
							   access, &m), 0);
	if (d)
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(m, 0, 0, d), 0);
	return m;
}

static void arena_start(void)
{
	arena = arena_map(NULL);
	CU_ASSERT_FATAL(arena != NULL);
}

static void arena_end(void)
{
	munmap(arena, arena_len);
	arena = NULL;
}

/* A lone exact registration, in both modes. */
static void test_exact(void)
{
	struct rdmaxfer_desc d;
	struct rdmaxfer_mem *m;
	unsigned int i;

	for (i = 0; i < 2; i++) {
		arena_start();
		m = reg(&sides[i], psz + 104, 1000, RDMAXFER_ACCESS_REMOTE, &d);
		CU_ASSERT_EQUAL(d.addr, aaddr(psz + 104));
		CU_ASSERT_EQUAL(d.len, 1000);
		probe(&sides[i], &d, RDMAXFER_ACCESS_REMOTE);
		CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
		arena_end();
	}
}

/*
 * Exports next to each other and overlapping: each rkey reaches its own
 * range only, though the byte after one is inside another export.  The
 * same range and rights registered twice share one rkey; other rights on
 * the same range get a key of their own.
 */
static void test_neighbours(void)
{
	const uint32_t RW = RDMAXFER_ACCESS_REMOTE_READ |
			    RDMAXFER_ACCESS_REMOTE_WRITE;
	struct rdmaxfer_desc d1, d2, d3, d1b, d4;
	struct rdmaxfer_mem *m1, *m2, *m3, *m1b, *m4;

	arena_start();
	m1 = reg(DEF, psz + 104, 1000, RDMAXFER_ACCESS_REMOTE, &d1);
	m2 = reg(DEF, psz + 1104, 512, RDMAXFER_ACCESS_REMOTE, &d2);
	m3 = reg(DEF, psz + 504, 1000, RW, &d3);
	m1b = reg(DEF, psz + 104, 1000, RDMAXFER_ACCESS_REMOTE, &d1b);
	m4 = reg(DEF, psz + 104, 1000, RDMAXFER_ACCESS_REMOTE_READ, &d4);
	CU_ASSERT(d1.rkey != d2.rkey && d1.rkey != d3.rkey &&
		  d2.rkey != d3.rkey);
	/* a window per handle: two handles, two keys */
	if (window)
		CU_ASSERT_NOT_EQUAL(d1.rkey, d1b.rkey);
	if (!window)
		CU_ASSERT_EQUAL(d1.rkey, d1b.rkey);
	CU_ASSERT(d4.rkey != d1.rkey);
	probe(DEF, &d1, RDMAXFER_ACCESS_REMOTE);
	probe(DEF, &d2, RDMAXFER_ACCESS_REMOTE);
	probe(DEF, &d3, RW);
	probe(DEF, &d4, RDMAXFER_ACCESS_REMOTE_READ);
	/* one handle of two gone: the shared key still works (a window:
	 * the other handle's works, the gone one's is refused) */
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m1b), 0);
	expect_ok(DEF, RDMAXFER_OP_WRITE, &d1);
	if (window)
		expect_refused(DEF, RDMAXFER_OP_WRITE, &d1b,
			       "the other handle's window, deregistered");
	rdmaxfer_mem_deregister(m4);
	rdmaxfer_mem_deregister(m3);
	rdmaxfer_mem_deregister(m2);
	rdmaxfer_mem_deregister(m1);
	arena_end();
}

/*
 * Local-only registrations over the arena, merged and grown by the cache
 * into one entry: an export inside still reaches its own bytes only, and
 * local-only memory has no descriptor at all.
 */
static void test_inside_local_grown(void)
{
	struct regcache_stats s0, s1;
	struct rdmaxfer_mem *l[4], *m;
	struct rdmaxfer_desc d;
	unsigned int i;

	arena_start();
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_cache_stats(DEF->srv, &s0), 0);
	for (i = 0; i < 4; i++)
		l[i] = reg(DEF, i * psz, psz, 0, NULL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_cache_stats(DEF->srv, &s1), 0);
	/* the case this test is about: the cache did merge them */
	CU_ASSERT(s1.merges > s0.merges);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(l[0], 0, 0, &d), -EACCES);
	m = reg(DEF, psz + 104, 1000, RDMAXFER_ACCESS_REMOTE, &d);
	probe(DEF, &d, RDMAXFER_ACCESS_REMOTE);
	rdmaxfer_mem_deregister(m);
	for (i = 0; i < 4; i++)
		rdmaxfer_mem_deregister(l[i]);
	arena_end();
}

/*
 * Registered again after munmap + mmap at the same address (rkeys cached,
 * the mode that keeps entries): the invalidation took the old key with it,
 * the new one is another key and reaches its own range only.
 */
static void test_after_invalidation(void)
{
	struct rdmaxfer_desc d_old, d_new;
	struct regcache_stats s0, s1;
	struct rdmaxfer_mem *m;
	uint8_t *old;

	arena_start();
	m = reg(KEEP, psz + 104, 1000, RDMAXFER_ACCESS_REMOTE, &d_old);
	expect_ok(KEEP, RDMAXFER_OP_WRITE, &d_old);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	/* kept: the old key still works */
	expect_ok(KEEP, RDMAXFER_OP_WRITE, &d_old);
	/* before the munmap: the agent's progress thread may apply the
	 * invalidation before the register does */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_cache_stats(KEEP->srv, &s0), 0);
	old = arena;
	munmap(arena, arena_len);
	arena = arena_map(old);
	CU_ASSERT_FATAL(arena == old);
	m = reg(KEEP, psz + 104, 1000, RDMAXFER_ACCESS_REMOTE, &d_new);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_cache_stats(KEEP->srv, &s1), 0);
	CU_ASSERT_EQUAL(s1.registrations, s0.registrations + 1);
	CU_ASSERT(s1.invalidations > s0.invalidations ||
		  s1.deregistrations > s0.deregistrations);
	CU_ASSERT(d_new.rkey != d_old.rkey);
	expect_refused(KEEP, RDMAXFER_OP_WRITE, &d_old, "old key after remap");
	probe(KEEP, &d_new, RDMAXFER_ACCESS_REMOTE);
	rdmaxfer_mem_deregister(m);
	arena_end();
}

/* Default mode: the last deregister kills the key. */
static void test_dereg_default(void)
{
	struct rdmaxfer_desc d, w;
	struct rdmaxfer_mem *m;

	arena_start();
	m = reg(DEF, psz + 104, 1000, RDMAXFER_ACCESS_REMOTE, &d);
	w = at(&d, d.addr + 8, 64);
	expect_ok(DEF, RDMAXFER_OP_WRITE, &w);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	expect_refused(DEF, RDMAXFER_OP_WRITE, &w, "after deregister");
	expect_refused(DEF, RDMAXFER_OP_READ, &w, "after deregister");
	w.len = 8;
	expect_refused(DEF, RDMAXFER_OP_FADD, &w, "after deregister");
	arena_end();
}

/* Opt-in mode: the key outlives the handle (until eviction/invalidation). */
static void test_dereg_cached(void)
{
	struct rdmaxfer_desc d, w;
	struct rdmaxfer_mem *m;

	arena_start();
	m = reg(KEEP, psz + 104, 1000, RDMAXFER_ACCESS_REMOTE, &d);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	w = at(&d, d.addr + 8, 64);
	expect_ok(KEEP, RDMAXFER_OP_WRITE, &w);
	expect_ok(KEEP, RDMAXFER_OP_READ, &w);
	w.len = 8;
	expect_ok(KEEP, RDMAXFER_OP_FADD, &w);
	/* still exact: the byte after is refused */
	w = at(&d, d.addr + d.len, 1);
	expect_refused(KEEP, RDMAXFER_OP_WRITE, &w, "after deregister, past end");
	arena_end();
}

/* Read-only, write-only and atomic-only exports; bad access bits. */
static void test_rights(void)
{
	static const uint32_t acc[] = {
		RDMAXFER_ACCESS_REMOTE_READ, RDMAXFER_ACCESS_REMOTE_WRITE,
		RDMAXFER_ACCESS_REMOTE_ATOMIC,
	};
	struct rdmaxfer_desc d;
	struct rdmaxfer_mem *m;
	unsigned int i;

	arena_start();
	for (i = 0; i < 3; i++) {
		m = reg(DEF, 2 * psz + 64 * i, 48, acc[i], &d);
		probe(DEF, &d, acc[i]);
		rdmaxfer_mem_deregister(m);
	}
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_access(DEF->srv, arena, 8,
						     RDMAXFER_MEM_HOST, 1U << 3,
						     &m), -EINVAL);
	arena_end();
}

/*
 * Handle structs are reused (an agent keeps freed ones for the next
 * register): a reused handle carries nothing of its former range.  A
 * remote handle deregistered, then a local-only one registered in its
 * place: the local one exports nothing (-EACCES) and the old rkey is dead.
 * Then more handles than the agent keeps spare, registered, checked,
 * deregistered in an interleaved order and registered again, each
 * describing exactly its own range; some left for agent teardown.
 */
#define REUSE_N		150

static void test_handle_reuse(void)
{
	struct rdmaxfer_mem *m[REUSE_N], *l;
	struct rdmaxfer_desc d, w;
	unsigned int i, round;

	arena_start();
	m[0] = reg(DEF, psz + 64, 256, RDMAXFER_ACCESS_REMOTE, &d);
	w = at(&d, d.addr, 64);
	expect_ok(DEF, RDMAXFER_OP_WRITE, &w);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m[0]), 0);
	l = reg(DEF, 3 * psz, 128, 0, NULL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(l, 0, 0, &d), -EACCES);
	expect_refused(DEF, RDMAXFER_OP_WRITE, &w, "old key, handle reused");
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(l), 0);

	for (round = 0; round < 2; round++) {
		for (i = 0; i < REUSE_N; i++) {
			uint32_t acc = i % 3 ? RDMAXFER_ACCESS_REMOTE : 0;

			m[i] = reg(DEF, 8 * i, 8 + 8 * (i % 5), acc, NULL);
			if (acc) {
				CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m[i], 0, 0,
								  &d), 0);
				CU_ASSERT_EQUAL(d.addr, aaddr(8 * i));
				CU_ASSERT_EQUAL(d.len, 8 + 8 * (i % 5));
				CU_ASSERT_NOT_EQUAL(d.rkey, 0);
			} else {
				CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m[i], 0, 0,
								  &d),
						-EACCES);
			}
		}
		/* odd ones first, then the even ones (the last round keeps
		 * every fourth for rdmaxfer_agent_destroy) */
		for (i = 1; i < REUSE_N; i += 2)
			CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m[i]), 0);
		for (i = 0; i < REUSE_N; i += 2)
			if (!round || i % 4)
				CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m[i]),
						0);
	}
	/* a live handle of a reused struct still exports exactly its range */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(m[4], 0, 0, &d), 0);
	CU_ASSERT_EQUAL(d.addr, aaddr(32));
	CU_ASSERT_EQUAL(d.len, 8 + 8 * (4 % 5));
	expect_ok(DEF, RDMAXFER_OP_WRITE, &d);
	arena_end();
}

/* A fresh arena of the file fd (at 'at' if not NULL, replacing what is
 * mapped there), filled with a pattern, and its shadow. */
static uint8_t *arena_map_file(int fd, void *at, uint32_t seed)
{
	uint8_t *p = mmap(at, arena_len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | (at ? MAP_FIXED : 0), fd, 0);

	if (p == MAP_FAILED)
		return NULL;
	fill(p, arena_len, seed);
	memcpy(shadow, p, arena_len);
	return p;
}

/*
 * The progress thread's period is 100 ms (core/progress.c).  How long the
 * thread took to revoke the key is watched through the cache's counters
 * (a plain read, which applies no event itself), up to a generous limit
 * for a loaded TCG guest, and reported; what is asserted is that it did
 * without any call into the agent, and that the key is dead after.
 */
#define KEY_WAIT_MS	5000

/* The window agent's windows revoked so far (0 for the other agents). */
static uint64_t windows_revoked(struct side *s)
{
	struct rdmaxfer_agent_stats as;

	if (!window || s != DEF ||
	    rdmaxfer_agent_stats(s->srv, &as, sizeof(as)))
		return 0;
	return as.windows_revoked;
}

/*
 * In window mode the MRs under earlier cases' windows stay cached over
 * the same arena, so the remap deregisters several, and the first moves
 * the counter before the held key's own: there the wait is for a window
 * revoked too.
 */
static long revoked_after_ms(struct side *s, uint64_t deregs, uint64_t wrev)
{
	struct timespec t0, t;
	struct regcache_stats st;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = (t.tv_sec - t0.tv_sec) * 1000 +
		     (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (rdmaxfer_agent_cache_stats(s->srv, &st) == 0 &&
		    st.deregistrations > deregs &&
		    (!window || s != DEF || windows_revoked(s) > wrev))
			return ms;
		if (ms > KEY_WAIT_MS)
			return -1;
		usleep(2000);
	}
}

/*
 * The scenario: 4 pages registered for remote access, the handle
 * kept, a WRITE through its key works; the pages are unmapped and other
 * memory mapped at the same address (MAP_FIXED: the unmap and the map in
 * one call).  memfd: the arena is file A's mapping and is replaced by
 * file B's, else anonymous memory replaced by anonymous memory.  The
 * server's agent is not called before the peer's WRITE when 'by_thread'
 * (its progress thread's round must revoke the key within the bound);
 * otherwise rdmaxfer_mem_desc() on the held handle is the next library
 * call and must answer -ESTALE at once.  Either way the WRITE is refused,
 * the new mapping is unchanged (expect_refused), file A reads back as it
 * was, the handle reports -ESTALE and deregisters with 0.
 */
static void key_dies(struct side *s, bool memfd, bool by_thread)
{
	struct regcache_stats st0, st1;
	struct rdmaxfer_desc d, w, x;
	struct rdmaxfer_mem *m;
	uint8_t *old, *saved = NULL;
	uint64_t wrev;
	int fa = -1, fb = -1;

	if (memfd) {
		fa = memfd_create("rdmaxfer-key-a", 0);
		fb = memfd_create("rdmaxfer-key-b", 0);
		CU_ASSERT_FATAL(fa >= 0 && fb >= 0);
		CU_ASSERT_FATAL(ftruncate(fa, (off_t)arena_len) == 0 &&
				ftruncate(fb, (off_t)arena_len) == 0);
		arena = arena_map_file(fa, NULL, 31);
		saved = malloc(arena_len);
		CU_ASSERT_FATAL(saved != NULL);
	} else {
		arena = arena_map(NULL);
	}
	CU_ASSERT_FATAL(arena != NULL);
	m = reg(s, psz, 4 * psz, RDMAXFER_ACCESS_REMOTE, &d);
	w = at(&d, d.addr + 8, 64);
	expect_ok(s, RDMAXFER_OP_WRITE, &w);
	if (memfd)
		memcpy(saved, shadow, arena_len);	/* file A as it must stay */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_cache_stats(s->srv, &st0), 0);
	wrev = windows_revoked(s);
	old = arena;
	arena = memfd ? arena_map_file(fb, old, 57) : arena_map(old);
	CU_ASSERT_FATAL(arena == old);
	if (by_thread) {
		long ms = revoked_after_ms(s, st0.deregistrations, wrev);

		rc_diag("%s%s: key revoked by the progress thread %ld ms after the remap",
			s->name, memfd ? " memfd" : "", ms);
		CU_ASSERT(ms >= 0);
	} else {
		CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m, 0, 0, &x), -ESTALE);
	}
	expect_refused(s, RDMAXFER_OP_WRITE, &w, memfd ?
		       "old key, memfd A replaced by B" :
		       "old key, memory replaced");
	expect_refused(s, RDMAXFER_OP_READ, &w, "old key, memory replaced");
	/* the registration went under the held handle, not at its put */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_cache_stats(s->srv, &st1), 0);
	CU_ASSERT(st1.deregistrations > st0.deregistrations);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m, 0, 0, &x), -ESTALE);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m, 8, 64, &x), -ESTALE);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	if (memfd) {
		uint8_t *back = malloc(arena_len);

		CU_ASSERT_FATAL(back != NULL);
		CU_ASSERT_EQUAL(pread(fa, back, arena_len, 0),
				(ssize_t)arena_len);
		if (memcmp(back, saved, arena_len))
			rc_diag("%s: file A changed after its mapping went",
				s->name);
		CU_ASSERT(!memcmp(back, saved, arena_len));
		free(back);
		free(saved);
	}
	/* the same range registered again: a new key that works */
	m = reg(s, psz, 4 * psz, RDMAXFER_ACCESS_REMOTE, &d);
	CU_ASSERT(d.rkey != w.rkey);
	w = at(&d, d.addr + 8, 64);
	expect_ok(s, RDMAXFER_OP_WRITE, &w);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	arena_end();
	if (memfd) {
		close(fa);
		close(fb);
	}
}

static void test_key_dies_anon(void)
{
	key_dies(DEF, false, true);
	key_dies(KEEP, false, true);
	key_dies(DEF, false, false);
}

static void test_key_dies_memfd(void)
{
	key_dies(DEF, true, true);
	key_dies(KEEP, true, false);
	key_dies(DEF, true, false);
}

#define CACHED_NOTICE	"librdmaxfer: remote keys cached (forced by RDMAXFER_CACHE_RKEYS=1)"

/*
 * An agent made with attr (NULL: defaults), its query, and how many
 * times it printed the cached-rkeys notice on standard error (fd 2
 * pointed at a file for the create and the destroy).
 */
static int create_counting(const struct rdmaxfer_agent_attr *attr,
			   struct rdmaxfer_agent_info *info)
{
	char path[] = "/tmp/rdmaxfer-access-XXXXXX", line[512];
	struct rdmaxfer_agent *a;
	int fd, saved, n = 0;
	FILE *f;

	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	unlink(path);
	fflush(stderr);
	saved = dup(2);
	CU_ASSERT_FATAL(saved >= 0 && dup2(fd, 2) == 2);
	CU_ASSERT_EQUAL(rdmaxfer_agent_create(attr, &a), 0);
	CU_ASSERT_EQUAL(rdmaxfer_agent_query(a, info), 0);
	rdmaxfer_agent_destroy(a);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fdopen(fd, "r");
	CU_ASSERT_FATAL(f != NULL);
	rewind(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, CACHED_NOTICE, strlen(CACHED_NOTICE)))
			n++;
	fclose(f);
	return n;
}

/*
 * The mode shows in rdmaxfer_agent_query(); the variable turns it on,
 * and then each agent says so in env_flags and the process once on
 * standard error (two agents: one line; the agents made before in this
 * program set RDMAXFER_AGENT_NO_ENV).  Set by the attribute, the mode is
 * the program's choice: not in env_flags, no notice.
 */
static void test_mode_info(void)
{
	struct rdmaxfer_agent_info info;
	struct rdmaxfer_agent_attr attr;

	CU_ASSERT_EQUAL(rdmaxfer_agent_query(DEF->srv, &info), 0);
	CU_ASSERT_FALSE(info.flags & RDMAXFER_AGENT_CACHE_RKEYS);
	CU_ASSERT_EQUAL(info.env_flags, 0);
	CU_ASSERT_EQUAL(rdmaxfer_agent_query(KEEP->srv, &info), 0);
	CU_ASSERT(info.flags & RDMAXFER_AGENT_CACHE_RKEYS);
	CU_ASSERT_EQUAL(info.env_flags, 0);
	setenv("RDMAXFER_CACHE_RKEYS", "1", 1);
	rdmaxfer_agent_attr_init(&attr);
	attr.flags = RDMAXFER_AGENT_CACHE_RKEYS;
	CU_ASSERT_EQUAL(create_counting(&attr, &info), 0);
	CU_ASSERT_EQUAL(info.env_flags, 0);
	CU_ASSERT_EQUAL(create_counting(NULL, &info), 1);
	CU_ASSERT(info.flags & RDMAXFER_AGENT_CACHE_RKEYS);
	CU_ASSERT(info.env_flags & RDMAXFER_AGENT_CACHE_RKEYS);
	CU_ASSERT_EQUAL(create_counting(NULL, &info), 0);
	CU_ASSERT(info.env_flags & RDMAXFER_AGENT_CACHE_RKEYS);
	rdmaxfer_agent_attr_init(&attr);
	attr.flags = RDMAXFER_AGENT_CACHE_RKEYS;
	CU_ASSERT_EQUAL(create_counting(&attr, &info), 0);
	CU_ASSERT(info.flags & RDMAXFER_AGENT_CACHE_RKEYS);
	CU_ASSERT_EQUAL(info.env_flags, 0);
	unsetenv("RDMAXFER_CACHE_RKEYS");
	CU_ASSERT_EQUAL(create_counting(NULL, &info), 0);
	CU_ASSERT_FALSE(info.flags & RDMAXFER_AGENT_CACHE_RKEYS);
	CU_ASSERT_EQUAL(info.env_flags, 0);
	rc_diag("%d refused operations checked so far", refusals);
}

/*
 * Window mode only: under a window the registration has no remote
 * rights, so the MR's own rkey (and its lkey, which rxe's rkeys share)
 * reach nothing; the same range registered again gets another key, the
 * old one refused; every register bound a window and every deregister
 * unbound it, none through the fallback.
 */
static void test_window(void)
{
	struct rdmaxfer_agent_stats st0, st1;
	struct rdmaxfer_desc d, d2, x;
	struct rdmaxfer_mem *m, *m2;
	struct ibv_mr *mr;

	if (!window) {
		rc_diag("default mode: no window to check");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_stats(DEF->srv, &st0,
						   sizeof(st0)), 0);
	arena_start();
	m = reg(DEF, psz + 104, 1000, RDMAXFER_ACCESS_REMOTE, &d);
	expect_ok(DEF, RDMAXFER_OP_WRITE, &d);
	mr = regcache_entry_handle(m->entry);
	CU_ASSERT_FATAL(mr != NULL);
	CU_ASSERT(mr->rkey != d.rkey && mr->lkey != d.rkey);
	x = at(&d, d.addr, 8);
	x.rkey = mr->rkey;
	expect_refused(DEF, RDMAXFER_OP_WRITE, &x, "the MR's own rkey");
	x.rkey = mr->lkey;
	expect_refused(DEF, RDMAXFER_OP_WRITE, &x, "the MR's lkey as rkey");
	expect_refused(DEF, RDMAXFER_OP_READ, &x, "the MR's lkey as rkey");
	/* the registration is kept: the range again is a hit, a new key */
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	m2 = reg(DEF, psz + 104, 1000, RDMAXFER_ACCESS_REMOTE, &d2);
	CU_ASSERT_NOT_EQUAL(d2.rkey, d.rkey);
	expect_refused(DEF, RDMAXFER_OP_WRITE, &d, "the last window's key");
	expect_ok(DEF, RDMAXFER_OP_WRITE, &d2);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m2), 0);
	expect_refused(DEF, RDMAXFER_OP_WRITE, &d2, "after deregister");
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_stats(DEF->srv, &st1,
						   sizeof(st1)), 0);
	CU_ASSERT_EQUAL(st1.windows_bound - st0.windows_bound, 2);
	CU_ASSERT_EQUAL(st1.windows_unbound - st0.windows_unbound, 2);
	CU_ASSERT_EQUAL(st1.window_fallbacks, 0);
	rc_diag("windows: %llu bound, %llu unbound, %llu revoked",
		(unsigned long long)st1.windows_bound,
		(unsigned long long)st1.windows_unbound,
		(unsigned long long)st1.windows_revoked);
	arena_end();
}

/* rdmaxfer_agent_create() with $RDMAXFER_RKEY_MODE=value: its result,
 * and the agent's info when it made one. */
static int env_mode(const char *value, struct rdmaxfer_agent_info *info)
{
	struct rdmaxfer_agent *a;
	int ret;

	setenv("RDMAXFER_RKEY_MODE", value, 1);
	ret = rdmaxfer_agent_create(NULL, &a);
	unsetenv("RDMAXFER_RKEY_MODE");
	if (!ret) {
		CU_ASSERT_EQUAL(rdmaxfer_agent_query(a, info), 0);
		rdmaxfer_agent_destroy(a);
	}
	return ret;
}

/*
 * The remote-key mode: auto is window exactly where the device's
 * windows refused the self-test's access past their end; the variable
 * forces each mode (and says so in rkey_flags; cached also in
 * env_flags); a value it does not know, a mode out of range and a
 * cached flag beside another mode fail the create.
 */
static void test_rkey_mode(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent_info info;
	struct rdmaxfer_agent *a;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_query(DEF->srv, &info), 0);
	CU_ASSERT_EQUAL(info.rkey_mode, window ? RDMAXFER_RKEY_WINDOW :
			(info.rkey_flags & RDMAXFER_RKEY_F_MW_BOUNDS) ?
			RDMAXFER_RKEY_WINDOW : RDMAXFER_RKEY_EXACT);
	CU_ASSERT_FALSE(info.rkey_flags & RDMAXFER_RKEY_F_ENV);
	rc_diag("device windows: %s, bounds %s",
		info.rkey_flags & RDMAXFER_RKEY_F_DEVICE_MW ? "yes" : "no",
		info.rkey_flags & RDMAXFER_RKEY_F_MW_BOUNDS ?
		"enforced" : "not enforced");
	CU_ASSERT_EQUAL(rdmaxfer_agent_query(KEEP->srv, &info), 0);
	CU_ASSERT_EQUAL(info.rkey_mode, RDMAXFER_RKEY_CACHED);
	if (window) {
		CU_ASSERT_EQUAL(env_mode("window", &info), 0);
		CU_ASSERT_EQUAL(info.rkey_mode, RDMAXFER_RKEY_WINDOW);
		CU_ASSERT(info.rkey_flags & RDMAXFER_RKEY_F_ENV);
	}
	CU_ASSERT_EQUAL(env_mode("exact", &info), 0);
	CU_ASSERT_EQUAL(info.rkey_mode, RDMAXFER_RKEY_EXACT);
	CU_ASSERT(info.rkey_flags & RDMAXFER_RKEY_F_ENV);
	CU_ASSERT_EQUAL(info.env_flags, 0);
	CU_ASSERT_EQUAL(env_mode("cached", &info), 0);
	CU_ASSERT_EQUAL(info.rkey_mode, RDMAXFER_RKEY_CACHED);
	CU_ASSERT(info.flags & RDMAXFER_AGENT_CACHE_RKEYS);
	CU_ASSERT(info.env_flags & RDMAXFER_AGENT_CACHE_RKEYS);
	CU_ASSERT_EQUAL(env_mode("windows", &info), -EINVAL);
	rdmaxfer_agent_attr_init(&attr);
	attr.rkey_mode = RDMAXFER_RKEY_CACHED + 1;
	CU_ASSERT_EQUAL(rdmaxfer_agent_create(&attr, &a), -EINVAL);
	attr.rkey_mode = RDMAXFER_RKEY_EXACT;
	attr.flags = RDMAXFER_AGENT_CACHE_RKEYS;
	CU_ASSERT_EQUAL(rdmaxfer_agent_create(&attr, &a), -EINVAL);
	attr.rkey_mode = RDMAXFER_RKEY_CACHED;
	attr.flags = RDMAXFER_AGENT_NO_ENV;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, &a), 0);
	CU_ASSERT_EQUAL(rdmaxfer_agent_query(a, &info), 0);
	CU_ASSERT(info.flags & RDMAXFER_AGENT_CACHE_RKEYS);
	CU_ASSERT_EQUAL(info.rkey_mode, RDMAXFER_RKEY_CACHED);
	rdmaxfer_agent_destroy(a);
}

static const struct rc_test_case cases[] = {
	{ "exact", test_exact },
	{ "neighbours", test_neighbours },
	{ "inside_local_grown", test_inside_local_grown },
	{ "after_invalidation", test_after_invalidation },
	{ "dereg_default", test_dereg_default },
	{ "dereg_cached", test_dereg_cached },
	{ "rights", test_rights },
	{ "handle_reuse", test_handle_reuse },
	{ "key_dies_anon", test_key_dies_anon },
	{ "key_dies_memfd", test_key_dies_memfd },
	{ "mode_info", test_mode_info },
	{ "window", test_window },
	{ "rkey_mode", test_rkey_mode },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	const char *mode = getenv("ACCESS_RKEY_MODE");

	addr = rxe_addr_or_skip();
	window = mode && !strcmp(mode, "window");
	signal(SIGPIPE, SIG_IGN);
	rc_add_suite("access", suite_init, suite_cleanup, cases);
	return rc_test_main(argc, argv);
}
