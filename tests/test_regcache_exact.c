// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_regcache_exact.c - REGCACHE_GET_EXACT and REGCACHE_GET_NOKEEP.
 *
 * Exact entries carry the keys librdmaxfer hands to peers, so what they
 * register is a security property: the reg callback sees exactly the
 * bytes and access named, an exact entry serves only the identical
 * request, ordinary gets never merge or grow into it, and NOKEEP entries
 * are deregistered at their last put.  A fake backend records every
 * (addr, len, access) it is asked to register.  Runs with the uffd
 * monitor on the host (RC_TEST_MONITOR=kmod in the VM).
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "regcache.h"
#include "rc_test.h"

#define XR_MAX		64
#define ACC_LOCAL	0x1U
#define ACC_RREAD	0x2U
#define ACC_RWRITE	0x4U

struct xr_rec {
	uintptr_t addr;
	size_t len;
	uint32_t access;
	bool live;
};

static struct xr_rec recs[XR_MAX];
static int nrecs;
static size_t psz;
static enum regcache_monitor_type mon_type = REGCACHE_MONITOR_UFFD;
static struct regcache *cache;

static int xr_reg(void *user, void *addr, size_t len, uint32_t access,
		  void **handle)
{
	struct xr_rec *r;

	(void)user;
	if (nrecs == XR_MAX)
		return -ENOMEM;
	r = &recs[nrecs++];
	r->addr = (uintptr_t)addr;
	r->len = len;
	r->access = access;
	r->live = true;
	*handle = r;
	return 0;
}

static int xr_dereg(void *user, void *handle)
{
	struct xr_rec *r = handle;

	(void)user;
	if (!r->live)
		return -EINVAL;
	r->live = false;
	return 0;
}

static int live_count(void)
{
	int i, n = 0;

	for (i = 0; i < nrecs; i++)
		n += recs[i].live;
	return n;
}

static int make(enum regcache_monitor_type type)
{
	struct regcache_attr a = {
		.reg = xr_reg, .dereg = xr_dereg, .monitor = type,
		.flags = REGCACHE_ATTR_NO_ENV,
	};

	memset(recs, 0, sizeof(recs));
	nrecs = 0;
	return regcache_create(&a, &cache);
}

static void drop(void)
{
	regcache_destroy(cache);
	cache = NULL;
}

static char *map_pages(size_t n)
{
	char *p = mmap(NULL, n * psz, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 1, n * psz);
	return p;
}

static struct xr_rec *rec_of(const struct regcache_entry *e)
{
	return regcache_entry_handle(e);
}

static const unsigned int XN = REGCACHE_GET_EXACT | REGCACHE_GET_NOKEEP;

/* The callback gets the byte range, the accessors return it. */
static void test_exact_range(void)
{
	struct regcache_entry *e, *e2;
	struct regcache_stats st;
	char *p = map_pages(4);

	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_FATAL(make(mon_type) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 100, 200, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e) == 0);
	CU_ASSERT_EQUAL(nrecs, 1);
	CU_ASSERT_EQUAL(recs[0].addr, (uintptr_t)p + 100);
	CU_ASSERT_EQUAL(recs[0].len, 200);
	CU_ASSERT_EQUAL(recs[0].access, ACC_RWRITE);
	CU_ASSERT_PTR_EQUAL(regcache_entry_addr(e), p + 100);
	CU_ASSERT_EQUAL(regcache_entry_len(e), 200);
	CU_ASSERT(regcache_entry_cached(e));
	/* the identical request is a hit */
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 100, 200, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e2) == 0);
	CU_ASSERT_PTR_EQUAL(e, e2);
	CU_ASSERT_EQUAL(nrecs, 1);
	CU_ASSERT(regcache_get_stats(cache, &st) == 0);
	CU_ASSERT_EQUAL(st.exact, 1);
	CU_ASSERT_EQUAL(st.entries, 1);	/* counts in the limits */
	CU_ASSERT(regcache_put(cache, e2) == 0);
	CU_ASSERT(regcache_put(cache, e) == 0);
	drop();
	munmap(p, 4 * psz);
}

/* Not served to a sub-range, another access, or an ordinary get. */
static void test_exact_not_shared(void)
{
	struct regcache_entry *x, *e[4];
	char *p = map_pages(2);

	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_FATAL(make(mon_type) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p, 2 * psz,
					   ACC_RREAD | ACC_RWRITE,
					   REGCACHE_GET_EXACT, &x) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 64,
					   ACC_RREAD | ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e[0]) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p, 2 * psz, ACC_RREAD,
					   REGCACHE_GET_EXACT, &e[1]) == 0);
	CU_ASSERT_FATAL(regcache_get(cache, p, psz, ACC_RREAD, &e[2]) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p, 2 * psz,
					   ACC_RREAD | ACC_RWRITE, XN,
					   &e[3]) == 0);
	/* four more registrations, none of them x's */
	CU_ASSERT_EQUAL(nrecs, 5);
	CU_ASSERT(e[0] != x && e[1] != x && e[2] != x && e[3] != x);
	CU_ASSERT_EQUAL(rec_of(e[0])->addr, (uintptr_t)p + 8);
	CU_ASSERT_EQUAL(rec_of(e[0])->len, 64);
	CU_ASSERT_EQUAL(rec_of(e[1])->access, ACC_RREAD);
	CU_ASSERT_EQUAL(rec_of(e[2])->access, ACC_RREAD);
	CU_ASSERT(regcache_put(cache, x) == 0);
	CU_ASSERT(regcache_put(cache, e[0]) == 0);
	CU_ASSERT(regcache_put(cache, e[1]) == 0);
	CU_ASSERT(regcache_put(cache, e[2]) == 0);
	CU_ASSERT(regcache_put(cache, e[3]) == 0);
	drop();
	munmap(p, 2 * psz);
}

/*
 * Ordinary gets around and over an exact entry never take it into a
 * union: no ordinary registration carries the exact entry's access bits,
 * the exact one stays registered and is still what an exact get returns.
 * Nor does an exact get next to ordinary entries register their union.
 */
static void test_exact_never_merged(void)
{
	struct regcache_entry *x, *a, *b, *c, *x2, *y;
	char *p = map_pages(8);
	int i;

	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_FATAL(make(mon_type) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 2 * psz + 16, psz,
					   ACC_RWRITE, REGCACHE_GET_EXACT,
					   &x) == 0);
	/* neighbours on both sides, then one over it: coalescing territory */
	CU_ASSERT_FATAL(regcache_get(cache, p + psz, psz, ACC_LOCAL, &a) == 0);
	CU_ASSERT_FATAL(regcache_get(cache, p + 4 * psz, psz, ACC_LOCAL,
				     &b) == 0);
	CU_ASSERT_FATAL(regcache_get(cache, p + 2 * psz, 2 * psz, ACC_LOCAL,
				     &c) == 0);
	for (i = 1; i < nrecs; i++)
		CU_ASSERT_EQUAL(recs[i].access, ACC_LOCAL);
	CU_ASSERT(recs[0].live);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 2 * psz + 16, psz,
					   ACC_RWRITE, REGCACHE_GET_EXACT,
					   &x2) == 0);
	CU_ASSERT_PTR_EQUAL(x, x2);
	/* an exact get inside the ordinary union registers just itself */
	i = nrecs;
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + psz + 1, 3 * psz,
					   ACC_RWRITE, XN, &y) == 0);
	CU_ASSERT_EQUAL(nrecs, i + 1);
	CU_ASSERT_EQUAL(rec_of(y)->addr, (uintptr_t)p + psz + 1);
	CU_ASSERT_EQUAL(rec_of(y)->len, 3 * psz);
	CU_ASSERT_EQUAL(rec_of(y)->access, ACC_RWRITE);
	regcache_put(cache, y);
	regcache_put(cache, x2);
	regcache_put(cache, c);
	regcache_put(cache, b);
	regcache_put(cache, a);
	regcache_put(cache, x);
	drop();
	munmap(p, 8 * psz);
}

/* NOKEEP: deregistered at the last put, not before; a later get registers
 * again.  Without NOKEEP the registration stays for the next hit. */
static void test_nokeep(void)
{
	struct regcache_entry *e1, *e2, *e3;
	struct regcache_stats st;
	char *p = map_pages(2);

	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_FATAL(make(mon_type) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 1, 10, ACC_RWRITE, XN,
					   &e1) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 1, 10, ACC_RWRITE, XN,
					   &e2) == 0);
	CU_ASSERT_PTR_EQUAL(e1, e2);	/* shared while held */
	CU_ASSERT(regcache_put(cache, e1) == 0);
	CU_ASSERT_EQUAL(live_count(), 1);
	CU_ASSERT(regcache_put(cache, e2) == 0);
	CU_ASSERT_EQUAL(live_count(), 0);
	CU_ASSERT(regcache_get_stats(cache, &st) == 0);
	CU_ASSERT_EQUAL(st.entries, 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 1, 10, ACC_RWRITE, XN,
					   &e3) == 0);
	CU_ASSERT_EQUAL(nrecs, 2);
	CU_ASSERT(regcache_put(cache, e3) == 0);
	CU_ASSERT_EQUAL(live_count(), 0);

	/* kept */
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 1, 10, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e1) == 0);
	CU_ASSERT(regcache_put(cache, e1) == 0);
	CU_ASSERT_EQUAL(live_count(), 1);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 1, 10, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e2) == 0);
	CU_ASSERT_PTR_EQUAL(e1, e2);
	CU_ASSERT_EQUAL(nrecs, 3);
	CU_ASSERT(regcache_put(cache, e2) == 0);
	/* flush drops the kept one */
	CU_ASSERT(regcache_flush(cache) == 0);
	CU_ASSERT_EQUAL(live_count(), 0);
	drop();
	munmap(p, 2 * psz);
}

/* munmap drops an exact entry; the same address mapped again registers
 * anew.  A held one stays registered until its put. */
static void test_exact_invalidated(void)
{
	struct regcache_entry *e, *held, *e2;
	struct regcache_stats st;
	char *p = map_pages(2), *q;

	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_FATAL(make(mon_type) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 5, 100, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e) == 0);
	CU_ASSERT(regcache_put(cache, e) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + psz, 100, ACC_RWRITE,
					   XN, &held) == 0);
	CU_ASSERT_EQUAL(live_count(), 2);
	/* unmap and map again in one step: MAP_FIXED over the live
	 * range (an UNMAP event), so no other thread can take the hole */
	q = mmap(p, 2 * psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CU_ASSERT_FATAL(q == p);
	memset(q, 2, 2 * psz);
	regcache_process_events(cache);
	CU_ASSERT(regcache_get_stats(cache, &st) == 0);
	CU_ASSERT_EQUAL(st.invalidations, 2);
	CU_ASSERT_EQUAL(st.entries, 0);
	/* the held one too: a peer's key dies with its memory, not at the
	 * holder's put; the holder keeps an entry with no handle */
	CU_ASSERT_EQUAL(live_count(), 0);
	CU_ASSERT_EQUAL(st.deregistrations, 2);
	CU_ASSERT_PTR_NULL(regcache_entry_handle(held));
	CU_ASSERT_FALSE(regcache_entry_valid(cache, held));
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 5, 100, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e2) == 0);
	CU_ASSERT_EQUAL(nrecs, 3);
	CU_ASSERT(regcache_put(cache, e2) == 0);
	/* the put frees the slot and deregisters nothing twice */
	CU_ASSERT(regcache_put(cache, held) == 0);
	CU_ASSERT(regcache_put(cache, held) == -EINVAL);
	CU_ASSERT_EQUAL(live_count(), 1);	/* e2, kept */
	CU_ASSERT(regcache_get_stats(cache, &st) == 0);
	CU_ASSERT_EQUAL(st.deregistrations, 2);
	drop();
	CU_ASSERT_EQUAL(live_count(), 0);
	munmap(p, 2 * psz);
}

/*
 * The same for a held exact entry on a MAP_SHARED memfd mapping replaced
 * by another memfd at the same address (the uffd monitor watches such an
 * entry for its unmap although it caches no shared memory otherwise): its
 * registration goes when the event is applied, before the holder's put,
 * and the holder's put deregisters nothing twice.
 */
static void test_exact_memfd_revoked(void)
{
	struct regcache_entry *held;
	struct regcache_stats st;
	int fa, fb;
	char *p, *q;

	fa = memfd_create("rc-exact-a", 0);
	fb = memfd_create("rc-exact-b", 0);
	CU_ASSERT_FATAL(fa >= 0 && fb >= 0);
	CU_ASSERT_FATAL(ftruncate(fa, 2 * psz) == 0 &&
			ftruncate(fb, 2 * psz) == 0);
	p = mmap(NULL, 2 * psz, PROT_READ | PROT_WRITE, MAP_SHARED, fa, 0);
	CU_ASSERT_FATAL(p != MAP_FAILED);
	memset(p, 1, 2 * psz);
	CU_ASSERT_FATAL(make(mon_type) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 3 * psz / 2,
					   ACC_RWRITE, XN, &held) == 0);
	CU_ASSERT(regcache_entry_cached(held));
	CU_ASSERT(regcache_entry_valid(cache, held));
	CU_ASSERT_EQUAL(live_count(), 1);
	q = mmap(p, 2 * psz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 fb, 0);
	CU_ASSERT_FATAL(q == p);
	regcache_process_events(cache);
	CU_ASSERT_EQUAL(live_count(), 0);
	CU_ASSERT_PTR_NULL(regcache_entry_handle(held));
	CU_ASSERT_FALSE(regcache_entry_valid(cache, held));
	CU_ASSERT(regcache_put(cache, held) == 0);
	CU_ASSERT(regcache_get_stats(cache, &st) == 0);
	CU_ASSERT_EQUAL(st.deregistrations, 1);
	CU_ASSERT_EQUAL(st.entries, 0);
	drop();
	munmap(q, 2 * psz);
	close(fa);
	close(fb);
}

/*
 * MADV_DONTNEED leaves the mapping (uffd: a REMOVE event): the held exact
 * entry is invalidated, as any, but keeps its registration until its put
 * (its pinned pages reach nothing else); only an unmap or remap revokes.
 */
static void test_exact_soft_kept(void)
{
	struct regcache_entry *held;
	struct regcache_stats st;
	char *p = map_pages(2);

	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_FATAL(make(mon_type) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 100, ACC_RWRITE, XN,
					   &held) == 0);
	CU_ASSERT_FATAL(madvise(p, 2 * psz, MADV_DONTNEED) == 0);
	regcache_process_events(cache);
	CU_ASSERT(regcache_get_stats(cache, &st) == 0);
	CU_ASSERT_EQUAL(st.invalidations, 1);
	CU_ASSERT_FALSE(regcache_entry_valid(cache, held));
	CU_ASSERT_EQUAL(live_count(), 1);
	CU_ASSERT_PTR_NOT_NULL(regcache_entry_handle(held));
	CU_ASSERT(regcache_put(cache, held) == 0);
	CU_ASSERT_EQUAL(live_count(), 0);
	drop();
	munmap(p, 2 * psz);
}

/* e is live and registers exactly (addr, len, access). */
static bool serves(struct regcache_entry *e, const char *addr, size_t len,
		   uint32_t access)
{
	struct xr_rec *r = rec_of(e);

	return r->live && r->addr == (uintptr_t)addr && r->len == len &&
	       r->access == access;
}

/*
 * A thread's repeated exact get is served from its per-thread hint (no
 * index search).  The hint must serve only the identical request and
 * only while its entry is indexed and valid: another access, length or
 * NOKEEP flag at the same address; the range unmapped and mapped again
 * with no explicit event processing (the get itself must notice); the
 * entry flushed and its slot reused for another range.
 */
static void test_exact_hint(void)
{
	struct regcache_entry *e, *e2, *o;
	char *p = map_pages(2), *q;
	int n;

	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_FATAL(make(mon_type) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 64, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e) == 0);
	CU_ASSERT(regcache_put(cache, e) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 64, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e2) == 0);
	CU_ASSERT_PTR_EQUAL(e, e2);
	CU_ASSERT(regcache_put(cache, e2) == 0);
	CU_ASSERT_EQUAL(nrecs, 1);

	/* same address, anything else different: never the hinted entry */
	n = nrecs;
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 64, ACC_RREAD,
					   REGCACHE_GET_EXACT, &o) == 0);
	CU_ASSERT(o != e && serves(o, p + 8, 64, ACC_RREAD));
	CU_ASSERT(regcache_put(cache, o) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 64, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e2) == 0);
	CU_ASSERT_PTR_EQUAL(e, e2);
	CU_ASSERT(regcache_put(cache, e2) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 56, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &o) == 0);
	CU_ASSERT(o != e && serves(o, p + 8, 56, ACC_RWRITE));
	CU_ASSERT(regcache_put(cache, o) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 64, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e2) == 0);
	CU_ASSERT(regcache_put(cache, e2) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 64, ACC_RWRITE, XN,
					   &o) == 0);
	CU_ASSERT(o != e && serves(o, p + 8, 64, ACC_RWRITE));
	CU_ASSERT(regcache_put(cache, o) == 0);
	CU_ASSERT_EQUAL(nrecs, n + 3);

	/* remapped under the hint, no regcache_process_events() */
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 64, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e2) == 0);
	CU_ASSERT_PTR_EQUAL(e, e2);
	CU_ASSERT(regcache_put(cache, e2) == 0);
	n = nrecs;
	q = mmap(p, 2 * psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CU_ASSERT_FATAL(q == p);
	memset(q, 3, 2 * psz);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 64, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e2) == 0);
	CU_ASSERT_EQUAL(nrecs, n + 1);		/* registered anew */
	CU_ASSERT(serves(e2, p + 8, 64, ACC_RWRITE));
	CU_ASSERT_EQUAL(live_count(), 1);	/* the old ones are gone */
	CU_ASSERT(regcache_put(cache, e2) == 0);

	/* flushed, its slot reused by another range: the hint serves no one */
	CU_ASSERT(regcache_flush(cache) == 0);
	CU_ASSERT_EQUAL(live_count(), 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + psz, 32, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &o) == 0);
	CU_ASSERT(serves(o, p + psz, 32, ACC_RWRITE));
	n = nrecs;
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 64, ACC_RWRITE,
					   REGCACHE_GET_EXACT, &e2) == 0);
	CU_ASSERT(e2 != o && serves(e2, p + 8, 64, ACC_RWRITE));
	CU_ASSERT_EQUAL(nrecs, n + 1);
	CU_ASSERT(regcache_put(cache, e2) == 0);
	CU_ASSERT(regcache_put(cache, o) == 0);
	drop();
	munmap(p, 2 * psz);
}

/* Exact entries count in max_entries and are evicted like the others. */
static void test_exact_limits(void)
{
	struct regcache_attr a = {
		.reg = xr_reg, .dereg = xr_dereg, .monitor = mon_type,
		.max_entries = 2, .flags = REGCACHE_ATTR_NO_ENV,
	};
	struct regcache_entry *e;
	struct regcache_stats st;
	char *p = map_pages(4);
	int i;

	CU_ASSERT_FATAL(p != NULL);
	memset(recs, 0, sizeof(recs));
	nrecs = 0;
	CU_ASSERT_FATAL(regcache_create(&a, &cache) == 0);
	for (i = 0; i < 4; i++) {
		CU_ASSERT_FATAL(regcache_get_flags(cache, p + i * psz + 3, 7,
						   ACC_RWRITE,
						   REGCACHE_GET_EXACT, &e) == 0);
		CU_ASSERT(regcache_put(cache, e) == 0);
	}
	CU_ASSERT(regcache_get_stats(cache, &st) == 0);
	CU_ASSERT(st.entries <= 2);
	CU_ASSERT(st.evictions >= 2);
	CU_ASSERT_EQUAL(live_count(), (int)st.entries);
	drop();
	munmap(p, 4 * psz);
}

/* The none monitor registers the exact bytes and drops them at put. */
static void test_exact_none(void)
{
	struct regcache_entry *e;
	char *p = map_pages(1);

	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_FATAL(make(REGCACHE_MONITOR_NONE) == 0);
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 9, 9, ACC_RREAD,
					   REGCACHE_GET_EXACT, &e) == 0);
	CU_ASSERT_EQUAL(recs[0].addr, (uintptr_t)p + 9);
	CU_ASSERT_EQUAL(recs[0].len, 9);
	CU_ASSERT_FALSE(regcache_entry_cached(e));
	CU_ASSERT(regcache_put(cache, e) == 0);
	CU_ASSERT_EQUAL(live_count(), 0);
	drop();
	munmap(p, psz);
}

static void test_flags_bad(void)
{
	struct regcache_entry *e;
	char *p = map_pages(1);

	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_FATAL(make(mon_type) == 0);
	CU_ASSERT_EQUAL(regcache_get_flags(cache, p, 8, 1, REGCACHE_GET_NOKEEP,
					   &e), -EINVAL);
	CU_ASSERT_EQUAL(regcache_get_flags(cache, p, 8, 1, 1U << 7, &e),
			-EINVAL);
	CU_ASSERT_EQUAL(regcache_get_flags(cache, p, 0, 1, REGCACHE_GET_EXACT,
					   &e), -EINVAL);
	CU_ASSERT_EQUAL(regcache_get_flags(NULL, p, 8, 1, REGCACHE_GET_EXACT,
					   &e), -EINVAL);
	/* flags 0 is regcache_get() */
	CU_ASSERT_FATAL(regcache_get_flags(cache, p + 8, 8, 1, 0, &e) == 0);
	CU_ASSERT_EQUAL(recs[0].addr, (uintptr_t)p);
	CU_ASSERT_EQUAL(recs[0].len, psz);
	CU_ASSERT(regcache_put(cache, e) == 0);
	CU_ASSERT_EQUAL(nrecs, 1);
	drop();
	munmap(p, psz);
}

static const struct rc_test_case cases[] = {
	{ "exact_range", test_exact_range },
	{ "exact_not_shared", test_exact_not_shared },
	{ "exact_never_merged", test_exact_never_merged },
	{ "nokeep", test_nokeep },
	{ "exact_invalidated", test_exact_invalidated },
	{ "exact_memfd_revoked", test_exact_memfd_revoked },
	{ "exact_soft_kept", test_exact_soft_kept },
	{ "exact_hint", test_exact_hint },
	{ "exact_limits", test_exact_limits },
	{ "exact_none_monitor", test_exact_none },
	{ "flags_bad", test_flags_bad },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	const char *m = getenv("RC_TEST_MONITOR");
	struct regcache *probe;
	struct regcache_attr at = {
		.reg = xr_reg, .dereg = xr_dereg,
		.flags = REGCACHE_ATTR_NO_ENV,
	};
	int ret;

	psz = (size_t)sysconf(_SC_PAGESIZE);
	if (m && !strcmp(m, "kmod"))
		mon_type = REGCACHE_MONITOR_KMOD;
	at.monitor = mon_type;
	ret = regcache_create(&at, &probe);
	if (ret)
		rc_skip_all("monitor %s unavailable: %s", m ? m : "uffd",
			    strerror(-ret));
	regcache_destroy(probe);
	rc_add_suite(mon_type == REGCACHE_MONITOR_KMOD ? "exact-kmod" :
		     "exact-uffd", NULL, NULL, cases);
	return rc_test_main(argc, argv);
}
