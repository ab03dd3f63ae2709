// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_regcache_growth.c - what a miss may register, and what it does
 * when the registration fails or the memory keeps changing.
 *
 * growth: geometric growth never leaves the VMA holding the union's edge
 * and only grows in private anonymous memory, so PROT_NONE guard pages,
 * a memfd mapping or anonymous memory of another protection placed right
 * next to a buffer, and holes, are never covered by any registration
 * (every call to the register callback is checked, refused ones too),
 * while a buffer registered chunk by chunk still costs O(log n)
 * registrations.
 *
 * memlock: a backend that fails with -ENOMEM past a byte budget (what
 * RLIMIT_MEMLOCK does to ibv_reg_mr): the cache evicts idle entries and
 * retries, so a workload cycling through more memory than the budget
 * keeps working; and the default max_bytes follows RLIMIT_MEMLOCK unless
 * the process has CAP_IPC_LOCK.
 *
 * churn: a neighbour that another thread keeps unmapping and remapping
 * invalidates every union or extension reaching it; a get falls back to
 * the exact range, and if even that keeps changing registers it uncached,
 * never failing with -EAGAIN.
 *
 * uffd monitor on the host; the VM suite runs it with RC_TEST_MONITOR=kmod.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include "regcache.h"
#include "rc_test.h"
#include "test_regcache_backend.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif

static size_t psz;
static enum regcache_monitor_type mon_type = REGCACHE_MONITOR_UFFD;
static struct tb_backend be;
static struct regcache *cache;

/* ------------------------------------------------- recording backend */

/*
 * Every call of the register callback, refused or not, is checked
 * against up to RB_FORBID forbidden ranges; rb_hook (if set) runs first.
 */
#define RB_FORBID	4

static struct {
	uintptr_t lo, hi;
} rb_forbid[RB_FORBID];
static _Atomic long rb_calls, rb_bad;
static _Atomic size_t rb_bytes;
static void (*rb_hook)(void *addr, size_t len);

static void rb_reset(void)
{
	memset(rb_forbid, 0, sizeof(rb_forbid));
	rb_calls = rb_bad = 0;
	rb_bytes = 0;
	rb_hook = NULL;
}

static void rb_forbid_range(int i, const void *p, size_t len)
{
	rb_forbid[i].lo = (uintptr_t)p;
	rb_forbid[i].hi = (uintptr_t)p + len;
}

static int rb_reg(void *user, void *addr, size_t len, uint32_t access,
		  void **handle)
{
	uintptr_t a = (uintptr_t)addr;
	int i, ret;

	rb_calls++;
	for (i = 0; i < RB_FORBID; i++) {
		if (rb_forbid[i].hi && a < rb_forbid[i].hi &&
		    a + len > rb_forbid[i].lo) {
			rb_bad++;
			printf("# registration [%p, +%zu) covers forbidden [%#lx, %#lx)\n",
			       addr, len, (unsigned long)rb_forbid[i].lo,
			       (unsigned long)rb_forbid[i].hi);
		}
	}
	if (rb_hook)
		rb_hook(addr, len);
	ret = tb_reg(user, addr, len, access, handle);
	if (!ret)
		rb_bytes += len;
	return ret;
}

static int make_cache_flags(regcache_reg_fn reg, regcache_dereg_fn dereg,
			    size_t max_bytes, uint32_t flags)
{
	struct regcache_attr a = {
		.reg = reg, .dereg = dereg, .user = &be,
		.monitor = mon_type, .max_bytes = max_bytes,
		.flags = REGCACHE_ATTR_NO_ENV | flags,
	};

	memset(&be, 0, sizeof(be));
	return regcache_create(&a, &cache);
}

static int make_cache(regcache_reg_fn reg, regcache_dereg_fn dereg,
		      size_t max_bytes)
{
	return make_cache_flags(reg, dereg, max_bytes, 0);
}

static void drop_cache(void)
{
	regcache_destroy(cache);
	cache = NULL;
	CU_ASSERT_EQUAL(be.live, 0);
	CU_ASSERT_EQUAL(be.bad_deregs, 0);
}

static struct regcache_stats stats(void)
{
	struct regcache_stats st;

	CU_ASSERT_EQUAL(regcache_get_stats(cache, &st), 0);
	return st;
}

static char *map_at(void *where, size_t len, int prot, int flags, int fd)
{
	char *p = mmap(where, len, prot, flags | (where ? MAP_FIXED_NOREPLACE : 0),
		       fd, 0);

	if (p == MAP_FAILED || (where && p != where)) {
		if (p != MAP_FAILED)
			munmap(p, len);
		return NULL;
	}
	return p;
}

static char *map_anon(void *where, size_t len, int prot)
{
	return map_at(where, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1);
}

/*
 * Free address space of 'pages' pages to place mappings in side by
 * side, between two PROT_NONE guard pages that keep whatever the kernel
 * maps around it out of the VMAs the test builds (unreserve() frees it).
 */
static char *reserve(size_t pages)
{
	char *r = map_anon(NULL, (pages + 2) * psz, PROT_NONE);

	if (!r || munmap(r + psz, pages * psz))
		return NULL;
	return r + psz;
}

static void unreserve(char *p, size_t pages)
{
	munmap(p - psz, (pages + 2) * psz);
}

/* Get and put page i of buf; false if the get failed. */
static bool get_put(char *buf, size_t i, uint32_t access)
{
	struct regcache_entry *e;
	int ret = regcache_get(cache, buf + i * psz, psz, access, &e);

	if (ret) {
		printf("# get of page %zu: %s\n", i, strerror(-ret));
		return false;
	}
	regcache_put(cache, e);
	return true;
}

static void all_hit(char *buf, size_t n)
{
	long regs = be.regs;
	size_t i;

	for (i = 0; i < n; i++)
		CU_ASSERT_FATAL(get_put(buf, i, 1));
	CU_ASSERT_EQUAL(be.regs, regs);
}

/* ------------------------------------------------------------ growth */

#define N	1024		/* pages of the chunked buffers */
#define LOG2N	10

/*
 * PROT_NONE guard pages right before and right after the buffer (one
 * mapping, mprotect()ed: three VMAs).  Chunk by chunk upward, then a
 * second buffer downward: no call covers a guard byte, O(log n) calls.
 */
static void chunked_between_guards(bool down)
{
	char *mem = map_anon(NULL, (N + 2) * psz, PROT_READ | PROT_WRITE);
	char *buf = mem + psz;
	size_t i;

	CU_ASSERT_FATAL(mem != NULL);
	CU_ASSERT_FATAL(!mprotect(mem, psz, PROT_NONE));
	CU_ASSERT_FATAL(!mprotect(buf + N * psz, psz, PROT_NONE));
	memset(buf, 1, N * psz);
	rb_reset();
	rb_forbid_range(0, mem, psz);
	rb_forbid_range(1, buf + N * psz, psz);
	CU_ASSERT_FATAL(make_cache(rb_reg, tb_dereg, 0) == 0);
	for (i = 0; i < N; i++)
		CU_ASSERT_FATAL(get_put(buf, down ? N - 1 - i : i, 1));
	rc_diag("%s between guards: %ld calls, %ld registrations, %zu bytes for %zu",
		down ? "downward" : "upward", (long)rb_calls, (long)be.regs,
		(size_t)rb_bytes, (size_t)N * psz);
	CU_ASSERT_EQUAL(rb_bad, 0);
	CU_ASSERT(be.regs <= 2 * LOG2N + 4);
	CU_ASSERT(rb_calls <= 2 * LOG2N + 4);	/* nothing refused either */
	all_hit(buf, N);
	drop_cache();
	munmap(mem, (N + 2) * psz);
}

static void test_guard_up(void)
{
	chunked_between_guards(false);
}

static void test_guard_down(void)
{
	chunked_between_guards(true);
}

/*
 * Mappings the kernel keeps apart from the buffer, placed right next to
 * it: a memfd MAP_SHARED mapping after it and a read-only anonymous
 * mapping before it.  Growth toward either never covers them.
 */
static void test_neighbours(void)
{
	char *r = reserve(N + 64), *ro, *buf, *shm;
	size_t i;
	int fd;

	CU_ASSERT_FATAL(r != NULL);
	fd = memfd_create("rc-neighbour", MFD_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(!ftruncate(fd, 32 * psz));
	ro = map_anon(r, 32 * psz, PROT_READ);
	buf = map_anon(r + 32 * psz, N * psz, PROT_READ | PROT_WRITE);
	shm = map_at(r + (32 + N) * psz, 32 * psz, PROT_READ | PROT_WRITE,
		     MAP_SHARED, fd);
	CU_ASSERT_FATAL(ro && buf && shm);
	memset(buf, 1, N * psz);
	memset(shm, 2, 32 * psz);
	rb_reset();
	rb_forbid_range(0, ro, 32 * psz);
	rb_forbid_range(1, shm, 32 * psz);
	CU_ASSERT_FATAL(make_cache(rb_reg, tb_dereg, 0) == 0);
	/* Upward toward the memfd mapping. */
	for (i = N / 2; i < N; i++)
		CU_ASSERT_FATAL(get_put(buf, i, 1));
	/* Downward toward the read-only mapping. */
	for (i = N / 2; i > 0; i--)
		CU_ASSERT_FATAL(get_put(buf, i - 1, 1));
	rc_diag("neighbours: %ld calls, %ld registrations", (long)rb_calls,
		(long)be.regs);
	CU_ASSERT_EQUAL(rb_bad, 0);
	CU_ASSERT(be.regs <= 4 * LOG2N + 8);
	all_hit(buf, N);
	drop_cache();
	unreserve(r, N + 64);
	close(fd);
}

/*
 * A hole 8 pages above a 4-page union: doubling would reach across it;
 * the extension stops in front of it, and no call ever names it.
 */
static void test_hole(void)
{
	char *r = reserve(40), *buf, *above;
	size_t i;

	CU_ASSERT_FATAL(r != NULL);
	buf = map_anon(r, 10 * psz, PROT_READ | PROT_WRITE);
	above = map_anon(r + 12 * psz, 28 * psz, PROT_READ | PROT_WRITE);
	CU_ASSERT_FATAL(buf && above);
	rb_reset();
	rb_forbid_range(0, r + 10 * psz, 2 * psz);
	CU_ASSERT_FATAL(make_cache(rb_reg, tb_dereg, 0) == 0);
	for (i = 0; i < 10; i++)
		CU_ASSERT_FATAL(get_put(buf, i, 1));
	CU_ASSERT_EQUAL(rb_bad, 0);
	CU_ASSERT_EQUAL(rb_calls, be.regs);	/* none refused */
	all_hit(buf, 10);
	/* Past the hole, downward toward it: stops above it. */
	for (i = 28; i > 0; i--)
		CU_ASSERT_FATAL(get_put(above, i - 1, 1));
	CU_ASSERT_EQUAL(rb_bad, 0);
	CU_ASSERT_EQUAL(rb_calls, be.regs);
	CU_ASSERT_EQUAL(stats().entries, 2);
	drop_cache();
	unreserve(r, 40);
}

/*
 * A buffer in a MAP_SHARED memfd mapping is merged with its cached
 * neighbours but never extended: no registration reaches past the pages
 * requested so far.
 */
static void test_shared_not_grown(void)
{
	size_t n = 64, i;
	char *buf;
	int fd = memfd_create("rc-shared", MFD_CLOEXEC);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(!ftruncate(fd, (off_t)(n * psz)));
	buf = map_at(NULL, n * psz, PROT_READ | PROT_WRITE, MAP_SHARED, fd);
	CU_ASSERT_FATAL(buf != NULL);
	memset(buf, 3, n * psz);
	rb_reset();
	CU_ASSERT_FATAL(make_cache(rb_reg, tb_dereg, 0) == 0);
	for (i = 0; i < n; i++) {
		/* nothing above the pages named so far */
		rb_forbid_range(0, buf + (i + 1) * psz, (n - i - 1) * psz);
		CU_ASSERT_FATAL(get_put(buf, i, 1));
	}
	CU_ASSERT_EQUAL(rb_bad, 0);
	drop_cache();
	munmap(buf, n * psz);
	close(fd);
}

/*
 * What the property does not promise: two anonymous mmap() calls with
 * the same protection side by side are one VMA, and growth may cover the
 * second.  Unmapping it then invalidates the grown entry.
 */
static void test_merged_vma_neighbour(void)
{
	char *r = reserve(16), *buf, *nb;
	struct regcache_entry *e;
	size_t i;

	CU_ASSERT_FATAL(r != NULL);
	buf = map_anon(r, 8 * psz, PROT_READ | PROT_WRITE);
	nb = map_anon(r + 8 * psz, 8 * psz, PROT_READ | PROT_WRITE);
	CU_ASSERT_FATAL(buf && nb);
	memset(r, 1, 16 * psz);
	rb_reset();
	CU_ASSERT_FATAL(make_cache(rb_reg, tb_dereg, 0) == 0);
	for (i = 0; i < 8; i++)
		CU_ASSERT_FATAL(get_put(buf, i, 1));
	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, buf, 8 * psz, 1, &e), 0);
	rc_diag("union of 8 pages registered as %zu pages",
		regcache_entry_len(e) / psz);
	CU_ASSERT(regcache_entry_len(e) <= 16 * psz);
	if (regcache_entry_len(e) > 8 * psz) {
		regcache_put(cache, e);
		CU_ASSERT_EQUAL_FATAL(munmap(nb, 8 * psz), 0);
		nb = NULL;
		CU_ASSERT_EQUAL_FATAL(regcache_get(cache, buf, 8 * psz, 1, &e), 0);
		/* a new registration, inside what is still mapped */
		CU_ASSERT(tb_live(e));
		CU_ASSERT(regcache_entry_len(e) <= 8 * psz);
	}
	regcache_put(cache, e);
	drop_cache();
	unreserve(r, 16);
}

/* ----------------------------------------------------------- memlock */

/*
 * A backend with RLIMIT_MEMLOCK's behaviour: a registration fails with
 * -ENOMEM when the bytes of all live registrations (overlaps counted
 * twice, as the kernel charges them) would exceed the budget.
 */
static size_t bud_limit;
static _Atomic size_t bud_live, bud_peak;
static _Atomic long bud_refused;

static int bud_reg(void *user, void *addr, size_t len, uint32_t access,
		   void **handle)
{
	int ret;

	if (bud_live + len > bud_limit) {
		bud_refused++;
		return -ENOMEM;
	}
	ret = tb_reg(user, addr, len, access, handle);
	if (!ret) {
		bud_live += len;
		if (bud_live > bud_peak)
			bud_peak = bud_live;
	}
	return ret;
}

static int bud_dereg(void *user, void *handle)
{
	size_t len = ((struct tb_reg *)handle)->len;
	int ret = tb_dereg(user, handle);

	if (!ret)
		bud_live -= len;
	return ret;
}

#define BUFS	16
#define BUFPAGES 16

/*
 * 16 buffers of 16 pages, separated by holes so that nothing merges,
 * cycled through 4 times with a budget of 4 buffers: the cache (whose
 * own max_bytes would keep all 16) must evict idle entries when the
 * backend refuses.  Holds up to 2 buffers at a time, as a pipeline does.
 */
static void test_memlock_cycle(void)
{
	size_t stride = (BUFPAGES + 1) * psz, len = BUFPAGES * psz;
	char *r = reserve(BUFS * (BUFPAGES + 1));
	struct regcache_entry *held[2] = { NULL, NULL };
	struct regcache_stats st;
	int i, round, fails = 0;

	CU_ASSERT_FATAL(r != NULL);
	for (i = 0; i < BUFS; i++) {
		CU_ASSERT_FATAL(map_anon(r + i * stride, len,
					 PROT_READ | PROT_WRITE) != NULL);
		memset(r + i * stride, i, len);
	}
	bud_limit = 4 * len;
	bud_live = bud_peak = 0;
	bud_refused = 0;
	CU_ASSERT_FATAL(make_cache(bud_reg, bud_dereg, 0) == 0);
	for (round = 0; round < 4; round++) {
		for (i = 0; i < BUFS; i++) {
			struct regcache_entry *e;
			int ret = regcache_get(cache, r + i * stride, len, 1, &e);

			if (ret) {
				fails++;
				continue;
			}
			CU_ASSERT(tb_live(e));
			if (held[i % 2])
				regcache_put(cache, held[i % 2]);
			held[i % 2] = e;
		}
	}
	for (i = 0; i < 2; i++)
		if (held[i])
			regcache_put(cache, held[i]);
	st = stats();
	rc_diag("memlock budget %zu pages, %d x %zu pages x 4 rounds: %d failed gets, %ld refused, %" PRIu64 " retries, %" PRIu64 " evictions, peak %zu pages",
		bud_limit / psz, BUFS, len / psz, fails, (long)bud_refused,
		st.reg_retries, st.evictions, (size_t)bud_peak / psz);
	CU_ASSERT_EQUAL(fails, 0);
	CU_ASSERT(st.reg_retries > 0);
	CU_ASSERT(st.reg_retries <= (uint64_t)bud_refused);
	CU_ASSERT(bud_peak <= bud_limit);
	drop_cache();
	unreserve(r, BUFS * (BUFPAGES + 1));
}

/* The retry happens once: with nothing idle to evict, the error returns. */
static void test_memlock_nothing_idle(void)
{
	char *buf = map_anon(NULL, 8 * psz, PROT_READ | PROT_WRITE);
	struct regcache_entry *a, *b;

	CU_ASSERT_FATAL(buf != NULL);
	memset(buf, 1, 8 * psz);
	bud_limit = 2 * psz;
	bud_live = bud_peak = 0;
	bud_refused = 0;
	CU_ASSERT_FATAL(make_cache(bud_reg, bud_dereg, 0) == 0);
	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, buf, 2 * psz, 1, &a), 0);
	/* held: not idle, nothing to evict, no retry */
	CU_ASSERT_EQUAL(regcache_get(cache, buf + 4 * psz, psz, 1, &b), -ENOMEM);
	CU_ASSERT_EQUAL(stats().reg_retries, 0);
	CU_ASSERT(tb_live(a));
	regcache_put(cache, a);
	/* idle now: evicted, and the retry succeeds */
	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, buf + 4 * psz, psz, 1, &b), 0);
	CU_ASSERT_EQUAL(stats().reg_retries, 1);
	CU_ASSERT_EQUAL(stats().evictions, 1);
	regcache_put(cache, b);
	drop_cache();
	munmap(buf, 8 * psz);
}

/*
 * A grown registration refused for lack of pinnable memory is not paid
 * for with idle entries: the extension is dropped and the union
 * registered, the idle entry stays.
 */
static void test_memlock_extension_dropped(void)
{
	char *r = reserve(16), *buf = r, *other = r + 12 * psz;
	struct regcache_entry *x, *a;
	struct regcache_stats st;
	struct tb_reg *xr;

	CU_ASSERT_FATAL(r != NULL);
	CU_ASSERT_FATAL(map_anon(buf, 8 * psz, PROT_READ | PROT_WRITE) &&
			map_anon(other, 3 * psz, PROT_READ | PROT_WRITE));
	memset(buf, 1, 8 * psz);
	memset(other, 2, 3 * psz);
	bud_limit = 7 * psz;
	bud_live = bud_peak = 0;
	bud_refused = 0;
	CU_ASSERT_FATAL(make_cache(bud_reg, bud_dereg, 0) == 0);
	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, other, 3 * psz, 1, &x), 0);
	xr = regcache_entry_handle(x);	/* records outlive their dereg */
	regcache_put(cache, x);				/* idle, 3 pages */
	CU_ASSERT_FATAL(get_put(buf, 0, 1));		/* 1 page */
	/* union [0, 2) grown to [0, 4): 4 + 4 > 7 refused; union: 6 */
	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, buf + psz, psz, 1, &a), 0);
	st = stats();
	CU_ASSERT_EQUAL(regcache_entry_len(a), 2 * psz);
	CU_ASSERT_EQUAL(bud_refused, 1);
	CU_ASSERT_EQUAL(st.evictions, 0);
	CU_ASSERT_EQUAL(st.reg_retries, 0);
	CU_ASSERT_EQUAL(xr->magic, TB_MAGIC_LIVE);	/* not evicted */
	regcache_put(cache, a);
	drop_cache();
	unreserve(r, 16);
}

static int drop_cap_ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[CAP_IPC_LOCK / 32].effective &= ~(1U << (CAP_IPC_LOCK % 32));
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

static bool has_cap_ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_IPC_LOCK / 32].effective & (1U << (CAP_IPC_LOCK % 32));
}

/* In a child: is a default-sized cache's 'pages'-page request cached? */
static int child_cached(size_t pages, rlim_t limit, bool drop_cap,
			uint32_t flags)
{
	struct regcache_entry *e;
	struct rlimit rl;
	char *buf;
	pid_t pid;
	int st;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		if (drop_cap && drop_cap_ipc_lock())
			_exit(3);
		getrlimit(RLIMIT_MEMLOCK, &rl);
		rl.rlim_cur = limit;
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < limit)
			_exit(3);
		if (setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(3);
		buf = map_anon(NULL, pages * psz, PROT_READ | PROT_WRITE);
		if (!buf || make_cache_flags(tb_reg, tb_dereg, 0, flags) ||
		    regcache_get(cache, buf, pages * psz, 1, &e))
			_exit(4);
		st = regcache_entry_cached(e);
		regcache_put(cache, e);
		regcache_destroy(cache);
		_exit(st);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -ECHILD;
	return WEXITSTATUS(st);
}

/*
 * max_bytes defaults to half the RLIMIT_MEMLOCK soft limit without
 * CAP_IPC_LOCK: with a 64-page limit a 48-page request is registered
 * uncached (> 32), a 16-page one cached; registrations that do not pin
 * (REGCACHE_ATTR_NO_PIN) are not bound by it; with CAP_IPC_LOCK the
 * limit does not bind and 48 pages are cached.
 */
static void test_memlock_default(void)
{
	rlim_t limit = 64 * psz;

	CU_ASSERT_EQUAL(child_cached(48, limit, true, 0), 0);
	CU_ASSERT_EQUAL(child_cached(16, limit, true, 0), 1);
	CU_ASSERT_EQUAL(child_cached(48, limit, true, REGCACHE_ATTR_NO_PIN), 1);
	if (!has_cap_ipc_lock()) {
		rc_diag("no CAP_IPC_LOCK: its case is not checked");
		return;
	}
	CU_ASSERT_EQUAL(child_cached(48, limit, false, 0), 1);
}

/* ------------------------------------------------------------- churn */

/*
 * The churner thread replaces a mapping (munmap, mmap at the same place,
 * fill) and optionally gets and puts it, so that it is cached again;
 * 'lockstep' runs one cycle per request from the register callback.
 */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *addr;
	size_t len;
	bool get;		/* get/put the new mapping: cache it */
	int requested, done;
	bool stop, running;
	pthread_t main;
	_Atomic long cycles, failures;
} ch = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void churn_once(void)
{
	struct regcache_entry *e;

	/* MAP_FIXED over the live mapping: unmapped (an UNMAP event) and
	 * mapped anew in one step, so no other thread (a sanitizer
	 * runtime's) can take the hole in between */
	if (mmap(ch.addr, ch.len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != ch.addr) {
		ch.failures++;
		return;
	}
	memset(ch.addr, 7, ch.len);
	if (ch.get) {
		if (regcache_get(cache, ch.addr, ch.len, 1, &e))
			ch.failures++;
		else
			regcache_put(cache, e);
	}
	ch.cycles++;
}

static void *churn_lockstep(void *arg)
{
	pthread_mutex_lock(&ch.mu);
	while (!ch.stop) {
		if (ch.requested > ch.done) {
			pthread_mutex_unlock(&ch.mu);
			churn_once();
			pthread_mutex_lock(&ch.mu);
			ch.done++;
			pthread_cond_broadcast(&ch.cv);
			continue;
		}
		pthread_cond_wait(&ch.cv, &ch.mu);
	}
	pthread_mutex_unlock(&ch.mu);
	return NULL;
}

/* Register hook: the main thread's registration reaching the churned
 * mapping loses to one churn cycle, every time. */
static void churn_hook(void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;

	if (!pthread_equal(pthread_self(), ch.main) ||
	    a >= (uintptr_t)ch.addr + ch.len || a + len <= (uintptr_t)ch.addr)
		return;
	pthread_mutex_lock(&ch.mu);
	ch.requested++;
	pthread_cond_broadcast(&ch.cv);
	while (ch.done < ch.requested)
		pthread_cond_wait(&ch.cv, &ch.mu);
	pthread_mutex_unlock(&ch.mu);
}

static pthread_t churn_start(char *addr, size_t len, bool get,
			     void *(*fn)(void *))
{
	pthread_t t;

	ch.addr = addr;
	ch.len = len;
	ch.get = get;
	ch.requested = ch.done = 0;
	ch.stop = false;
	ch.cycles = ch.failures = 0;
	ch.main = pthread_self();
	CU_ASSERT_FATAL(pthread_create(&t, NULL, fn, NULL) == 0);
	return t;
}

static void churn_stop(pthread_t t)
{
	pthread_mutex_lock(&ch.mu);
	ch.stop = true;
	pthread_cond_broadcast(&ch.cv);
	pthread_mutex_unlock(&ch.mu);
	pthread_join(t, NULL);
}

/*
 * Buffer B (4 pages, a guard below) and neighbour N (4 pages) right
 * above it, one VMA.  N is cached, so a get of B merges with it; every
 * registration reaching N loses to the churner, which replaces N and
 * caches the new N.  Before the fix each retry merged with the new N
 * and lost again until -EAGAIN.  Now: union, then the exact range.
 */
static void test_churn_neighbour_lockstep(void)
{
	char *r = reserve(8), *b, *n;
	struct regcache_entry *e;
	pthread_t t;
	int ret;

	CU_ASSERT_FATAL(r != NULL);
	b = map_anon(r, 4 * psz, PROT_READ | PROT_WRITE);
	n = map_anon(r + 4 * psz, 4 * psz, PROT_READ | PROT_WRITE);
	CU_ASSERT_FATAL(b && n);
	memset(b, 1, 8 * psz);
	rb_reset();
	CU_ASSERT_FATAL(make_cache(rb_reg, tb_dereg, 0) == 0);
	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, n, 4 * psz, 1, &e), 0);
	regcache_put(cache, e);
	t = churn_start(n, 4 * psz, true, churn_lockstep);
	rb_hook = churn_hook;
	ret = regcache_get(cache, b, 4 * psz, 1, &e);
	rb_hook = NULL;
	churn_stop(t);
	rc_diag("lockstep neighbour: get %d after %ld churns", ret,
		(long)ch.cycles);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT(ch.cycles >= 1);
	CU_ASSERT_EQUAL(ch.failures, 0);
	CU_ASSERT_PTR_EQUAL(regcache_entry_addr(e), b);
	CU_ASSERT_EQUAL(regcache_entry_len(e), 4 * psz);
	CU_ASSERT(regcache_entry_cached(e));
	CU_ASSERT(regcache_entry_valid(cache, e));
	CU_ASSERT(tb_live(e));
	regcache_put(cache, e);
	drop_cache();
	unreserve(r, 8);
}

/*
 * The requested memory itself is replaced during every registration:
 * after the retries the get registers it uncached instead of -EAGAIN.
 */
static void test_churn_self_lockstep(void)
{
	char *r = reserve(4), *b;
	struct regcache_entry *e;
	pthread_t t;
	int ret;

	CU_ASSERT_FATAL(r != NULL);
	b = map_anon(r, 4 * psz, PROT_READ | PROT_WRITE);
	CU_ASSERT_FATAL(b != NULL);
	memset(b, 1, 4 * psz);
	rb_reset();
	CU_ASSERT_FATAL(make_cache(rb_reg, tb_dereg, 0) == 0);
	t = churn_start(b, 4 * psz, false, churn_lockstep);
	rb_hook = churn_hook;
	ret = regcache_get(cache, b, 4 * psz, 1, &e);
	rb_hook = NULL;
	churn_stop(t);
	rc_diag("lockstep self: get %d after %ld churns", ret, (long)ch.cycles);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT(ch.cycles >= 2);
	CU_ASSERT_FALSE(regcache_entry_cached(e));
	CU_ASSERT_PTR_EQUAL(regcache_entry_addr(e), b);
	CU_ASSERT_EQUAL(regcache_entry_len(e), 4 * psz);
	CU_ASSERT(tb_live(e));
	CU_ASSERT_EQUAL(stats().uncached, 1);
	CU_ASSERT_EQUAL(stats().entries, 0);
	regcache_put(cache, e);
	CU_ASSERT_EQUAL(be.live, 0);
	drop_cache();
	unreserve(r, 4);
}

static void *churn_free(void *arg)
{
	for (;;) {
		pthread_mutex_lock(&ch.mu);
		if (ch.stop) {
			pthread_mutex_unlock(&ch.mu);
			return NULL;
		}
		pthread_mutex_unlock(&ch.mu);
		churn_once();
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Free-running: a thread replaces and re-caches the 4 pages right above
 * a 64-page buffer as fast as it can, while this one gets every page of
 * the buffer (the top one first and most often) for a second: no get
 * fails, every entry covers its request with a live registration and
 * reads the buffer's own content.
 */
static void test_churn_neighbour_free(void)
{
	size_t n = 64;
	char *r = reserve(n + 4), *b, *nb;
	uint64_t gets = 0, fails = 0, eagain = 0, bad = 0;
	double t0;
	pthread_t t;
	unsigned int seed = 1;

	CU_ASSERT_FATAL(r != NULL);
	b = map_anon(r, n * psz, PROT_READ | PROT_WRITE);
	nb = map_anon(r + n * psz, 4 * psz, PROT_READ | PROT_WRITE);
	CU_ASSERT_FATAL(b && nb);
	memset(b, 1, n * psz);
	memset(nb, 7, 4 * psz);
	rb_reset();
	CU_ASSERT_FATAL(make_cache(rb_reg, tb_dereg, 0) == 0);
	t = churn_start(nb, 4 * psz, true, churn_free);
	t0 = now_s();
	while (now_s() - t0 < 1.0) {
		size_t i = rand_r(&seed) % 2 ? n - 1 : rand_r(&seed) % n;
		size_t len = (1 + rand_r(&seed) % 4) * psz;
		struct regcache_entry *e;
		uintptr_t a, s;
		int ret;

		if (i * psz + len > n * psz)
			len = (n - i) * psz;
		a = (uintptr_t)(b + i * psz);
		ret = regcache_get(cache, (void *)a, len, 1, &e);
		gets++;
		if (ret) {
			fails++;
			eagain += ret == -EAGAIN;
			continue;
		}
		s = (uintptr_t)regcache_entry_addr(e);
		if (s > a || s + regcache_entry_len(e) < a + len || !tb_live(e) ||
		    ((char *)a)[len - 1] != 1)
			bad++;
		regcache_put(cache, e);
	}
	churn_stop(t);
	rc_diag("free churn: %" PRIu64 " gets, %" PRIu64 " failed (%" PRIu64 " EAGAIN), %ld churns, %" PRIu64 " uncached",
		gets, fails, eagain, (long)ch.cycles, stats().uncached);
	CU_ASSERT_EQUAL(fails, 0);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(ch.failures, 0);
	drop_cache();
	unreserve(r, n + 4);
}

static const struct rc_test_case growth_cases[] = {
	{ "guard_pages_up", test_guard_up },
	{ "guard_pages_down", test_guard_down },
	{ "separate_vma_neighbours", test_neighbours },
	{ "hole", test_hole },
	{ "shared_mapping_not_grown", test_shared_not_grown },
	{ "merged_vma_neighbour", test_merged_vma_neighbour },
	{ NULL, NULL }
};

static const struct rc_test_case memlock_cases[] = {
	{ "evict_and_retry_cycle", test_memlock_cycle },
	{ "nothing_idle", test_memlock_nothing_idle },
	{ "extension_dropped_not_paid", test_memlock_extension_dropped },
	{ "default_max_bytes", test_memlock_default },
	{ NULL, NULL }
};

static const struct rc_test_case churn_cases[] = {
	{ "neighbour_lockstep", test_churn_neighbour_lockstep },
	{ "self_lockstep_uncached", test_churn_self_lockstep },
	{ "neighbour_free_running", test_churn_neighbour_free },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	const char *m = getenv("RC_TEST_MONITOR");
	struct regcache_attr a = {
		.reg = tb_reg, .dereg = tb_dereg, .user = &be,
		.flags = REGCACHE_ATTR_NO_ENV,
	};
	const char *name;

	psz = (size_t)sysconf(_SC_PAGESIZE);
	if (m && !strcmp(m, "kmod"))
		mon_type = REGCACHE_MONITOR_KMOD;
	else if (m && !strcmp(m, "uffd"))
		mon_type = REGCACHE_MONITOR_UFFD;
	a.monitor = mon_type;
	if (regcache_create(&a, &cache))
		rc_skip_all("monitor %s unavailable", m ? m : "uffd");
	name = regcache_monitor_name(cache);
	regcache_destroy(cache);
	cache = NULL;
	rc_diag("monitor %s", name);
	rc_add_suite("growth", NULL, NULL, growth_cases);
	rc_add_suite("memlock", NULL, NULL, memlock_cases);
	rc_add_suite("churn", NULL, NULL, churn_cases);
	return rc_test_main(argc, argv);
}
