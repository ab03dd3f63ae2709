// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_regcache_monitor.c - the monitor battery: for every way a process
 * can change the memory under a cached registration, put different memory
 * at the same address and check that the next get does not return the old
 * registration.
 *
 * The registration id from the counting backend says whether the old
 * registration came back; as root, the backend also records the physical
 * frame of the first page at registration time (/proc/self/pagemap) and
 * the test checks that the entry it gets covers the frame that is mapped
 * now.  Scenarios where the memory does not change (mremap grow in place,
 * mprotect, fork with the child gone) check that the entry still matches
 * the mapped frame, and report whether it was kept.
 *
 * One program for every monitor: RC_TEST_MONITOR=uffd (default) or kmod.
 * A kmod miss is a failure.  A uffd miss is a skip with the reason when
 * it is a documented limit of userfaultfd (EXPECTED_UFFD_MISS), a failure
 * otherwise.  Each case prints "# table SCENARIO MONITOR RESULT", and
 * RC_BATTERY_OUT=FILE appends the same lines to FILE.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "regcache.h"
#include "rc_test.h"
#include "test_regcache_backend.h"

static size_t psz;
static enum regcache_monitor_type mon_type = REGCACHE_MONITOR_UFFD;
static const char *mon_name = "uffd";
static struct tb_backend be;
static struct regcache *cache;
static int pagemap_fd = -1;
static bool have_pfn;

/* ------------------------------------------------------------- pagemap */

static uint64_t pfn_of(const void *addr)
{
	uint64_t v;
	off_t off = (off_t)((uintptr_t)addr / psz) * 8;

	if (pagemap_fd < 0 || pread(pagemap_fd, &v, sizeof(v), off) != sizeof(v))
		return 0;
	if (!(v & (1ULL << 63)))
		return 0;		/* not present */
	return v & ((1ULL << 55) - 1);
}

/* The registration's frame, recorded at registration time. */
struct reg_pfn {
	void *handle;
	uint64_t pfn;
};
static struct reg_pfn pfns[4096];
static unsigned int npfns;

static int bat_reg(void *user, void *addr, size_t len, uint32_t access,
		   void **handle)
{
	int ret = tb_reg(user, addr, len, access, handle);

	if (!ret && npfns < 4096) {
		pfns[npfns].handle = *handle;
		pfns[npfns].pfn = pfn_of(addr);
		npfns++;
	}
	return ret;
}

static uint64_t reg_pfn(const struct regcache_entry *e)
{
	unsigned int i;

	for (i = 0; i < npfns; i++)
		if (pfns[i].handle == regcache_entry_handle(e))
			return pfns[i].pfn;
	return 0;
}

/* ---------------------------------------------------------------- setup */

static int make_cache(void)
{
	struct regcache_attr a = {
		.reg = bat_reg, .dereg = tb_dereg, .user = &be,
		.monitor = mon_type, .merge_max = 1,
		.flags = REGCACHE_ATTR_NO_ENV | REGCACHE_ATTR_NO_PIN,
	};

	memset(&be, 0, sizeof(be));
	npfns = 0;
	return regcache_create(&a, &cache);
}

static int suite_init(void)
{
	return 0;
}

static char *map_at(void *addr, size_t len, int extra)
{
	char *p = mmap(addr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | extra, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void table(const char *scenario, const char *result)
{
	const char *out = getenv("RC_BATTERY_OUT");
	FILE *f;

	rc_diag("table %s %s %s", scenario, mon_name, result);
	if (out && (f = fopen(out, "a"))) {
		fprintf(f, "%s %s %s\n", scenario, mon_name, result);
		fclose(f);
	}
}

/* Scenarios userfaultfd cannot see, by design of its events. */
static const char *expected_uffd_miss(const char *scenario)
{
	if (!strcmp(scenario, "fork_cow_write"))
		return "uffd has no event for a COW break after fork";
	/* The write may still copy: the page can stay referenced (LRU batch). */
	if (!strcmp(scenario, "fork_child_exits"))
		return "uffd has no event for a COW break after fork (page still referenced)";
	return NULL;
}

struct before {
	uint64_t id;
	uint64_t pfn;
	bool cached;
};

/* get + remember + put, leaving the entry cached and unreferenced. */
static bool prime(char *addr, size_t len, struct before *b)
{
	struct regcache_entry *e;

	if (regcache_get(cache, addr, len, 1, &e))
		return false;
	b->id = tb_id(e);
	b->pfn = reg_pfn(e);
	/* e.g. uffd cannot watch SysV shm or regular files: not cached. */
	b->cached = regcache_entry_cached(e);
	regcache_put(cache, e);
	return true;
}

/*
 * The memory at addr was replaced: the next get must register anew and,
 * as root, cover the frame now mapped.
 */
static void expect_new(const char *scenario, char *addr, size_t len,
		       const struct before *b)
{
	struct regcache_entry *e;
	const char *why;
	uint64_t now;

	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, addr, len, 1, &e), 0);
	now = pfn_of(addr);
	if (tb_id(e) == b->id) {
		why = mon_type == REGCACHE_MONITOR_UFFD ? expected_uffd_miss(scenario) : NULL;
		table(scenario, "missed");
		if (why) {
			rc_skip("%s", why);
		} else {
			CU_FAIL("the old registration was returned for new memory");
		}
	} else {
		if (have_pfn)
			CU_ASSERT_EQUAL(reg_pfn(e), now);
		table(scenario, b->cached ? "caught" : "uncached");
	}
	regcache_put(cache, e);
}

/*
 * The memory should not have changed: whatever we get must match the
 * frame mapped now.  If the kernel did move the page after all (a write
 * after fork may still copy it), the case becomes a "memory replaced" one.
 */
static void expect_same_memory(const char *scenario, char *addr, size_t len,
			       const struct before *b)
{
	struct regcache_entry *e;

	if (have_pfn && pfn_of(addr) != b->pfn) {
		rc_diag("%s: the page moved (pfn %#llx -> %#llx)", scenario,
			(unsigned long long)b->pfn,
			(unsigned long long)pfn_of(addr));
		expect_new(scenario, addr, len, b);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, addr, len, 1, &e), 0);
	if (have_pfn)
		CU_ASSERT_EQUAL(reg_pfn(e), pfn_of(addr));
	table(scenario, tb_id(e) == b->id ? "kept" : "invalidated");
	regcache_put(cache, e);
}

static void done(void)
{
	regcache_destroy(cache);
	cache = NULL;
	CU_ASSERT_EQUAL(be.live, 0);
	CU_ASSERT_EQUAL(be.bad_deregs, 0);
}

/*
 * A scenario unmapped want and maps it again (MAP_FIXED_NOREPLACE).
 * Another thread can take the hole in between: in a --enable-sanitizers
 * build the runtime's own mmap from the monitor thread, which handles the
 * unmap event, did.  The scenario cannot run then: a skip, not a failure.
 */
static bool remapped(const void *got, const void *want)
{
	if (got == want)
		return true;
	if ((!got || got == MAP_FAILED) && errno == EEXIST)
		rc_skip("%p was mapped by another thread before the test could map it again",
			want);
	else
		CU_FAIL("mapping the address again failed");
	done();
	return false;
}

/* ------------------------------------------------------------ scenarios */

static void t_munmap_whole(void)
{
	struct before b;
	char *a = map_at(NULL, 4 * psz, 0);

	CU_ASSERT_FATAL(a && make_cache() == 0);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	CU_ASSERT_EQUAL_FATAL(munmap(a, 4 * psz), 0);
	if (!remapped(map_at(a, 4 * psz, MAP_FIXED_NOREPLACE), a))
		return;
	memset(a, 2, 4 * psz);
	expect_new("munmap_whole", a, 4 * psz, &b);
	done();
	munmap(a, 4 * psz);
}

static void t_munmap_partial(void)
{
	struct before b;
	char *a = map_at(NULL, 4 * psz, 0);

	CU_ASSERT_FATAL(a && make_cache() == 0);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	CU_ASSERT_EQUAL_FATAL(munmap(a + psz, psz), 0);
	if (!remapped(map_at(a + psz, psz, MAP_FIXED_NOREPLACE), a + psz))
		return;
	memset(a + psz, 2, psz);
	/* The old registration covered the freed middle page. */
	expect_new("munmap_partial", a, 4 * psz, &b);
	done();
	munmap(a, 4 * psz);
}

static void t_munmap_spanning(void)
{
	struct before b1, b2;
	char *a = map_at(NULL, 4 * psz, 0);

	CU_ASSERT_FATAL(a && make_cache() == 0);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 2 * psz, &b1));
	CU_ASSERT_FATAL(prime(a + 2 * psz, 2 * psz, &b2));
	CU_ASSERT_EQUAL_FATAL(munmap(a + psz, 2 * psz), 0);
	if (!remapped(map_at(a + psz, 2 * psz, MAP_FIXED_NOREPLACE), a + psz))
		return;
	memset(a + psz, 2, 2 * psz);
	expect_new("munmap_spanning", a, 2 * psz, &b1);
	expect_new("munmap_spanning", a + 2 * psz, 2 * psz, &b2);
	done();
	munmap(a, 4 * psz);
}

static void t_mremap_move(void)
{
	struct before b;
	char *a = map_at(NULL, 4 * psz, 0), *dst = map_at(NULL, 4 * psz, 0), *r;

	CU_ASSERT_FATAL(a && dst && make_cache() == 0);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	r = mremap(a, 4 * psz, 4 * psz, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	CU_ASSERT_FATAL(r == dst);
	if (!remapped(map_at(a, 4 * psz, MAP_FIXED_NOREPLACE), a))
		return;
	memset(a, 2, 4 * psz);
	expect_new("mremap_move", a, 4 * psz, &b);
	done();
	munmap(a, 4 * psz);
	munmap(dst, 4 * psz);
}

static void t_mremap_shrink(void)
{
	struct before b;
	char *a = map_at(NULL, 4 * psz, 0);

	CU_ASSERT_FATAL(a && make_cache() == 0);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	CU_ASSERT_FATAL(mremap(a, 4 * psz, 2 * psz, 0) == a);
	if (!remapped(map_at(a + 2 * psz, 2 * psz, MAP_FIXED_NOREPLACE), a + 2 * psz))
		return;
	memset(a + 2 * psz, 2, 2 * psz);
	expect_new("mremap_shrink", a, 4 * psz, &b);
	done();
	munmap(a, 4 * psz);
}

static void t_mremap_grow(void)
{
	struct before b;
	char *a = map_at(NULL, 4 * psz, 0);

	CU_ASSERT_FATAL(a && make_cache() == 0);
	CU_ASSERT_EQUAL_FATAL(munmap(a + 2 * psz, 2 * psz), 0);
	memset(a, 1, 2 * psz);
	CU_ASSERT_FATAL(prime(a, 2 * psz, &b));
	/* Grow in place: the existing pages stay where they are. */
	CU_ASSERT_FATAL(mremap(a, 2 * psz, 4 * psz, 0) == a);
	expect_same_memory("mremap_grow", a, 2 * psz, &b);
	done();
	munmap(a, 4 * psz);
}

static void t_map_fixed(void)
{
	struct before b;
	char *a = map_at(NULL, 4 * psz, 0);

	CU_ASSERT_FATAL(a && make_cache() == 0);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	CU_ASSERT_FATAL(map_at(a, 4 * psz, MAP_FIXED) == a);
	memset(a, 2, 4 * psz);
	expect_new("map_fixed", a, 4 * psz, &b);
	done();
	munmap(a, 4 * psz);
}

static void t_madv_dontneed(void)
{
	struct before b;
	char *a = map_at(NULL, 4 * psz, 0);

	CU_ASSERT_FATAL(a && make_cache() == 0);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	CU_ASSERT_EQUAL_FATAL(madvise(a, 4 * psz, MADV_DONTNEED), 0);
	memset(a, 2, 4 * psz);
	expect_new("madv_dontneed", a, 4 * psz, &b);
	done();
	munmap(a, 4 * psz);
}

static void t_free_malloc(void)
{
	size_t len = 8 << 20;	/* above the mmap threshold */
	struct before b;
	char *p, *q;

	CU_ASSERT_FATAL(make_cache() == 0);
	/* A fixed threshold: glibc would otherwise raise it after the free. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	p = malloc(len);
	CU_ASSERT_FATAL(p != NULL);
	memset(p, 1, len);
	CU_ASSERT_FATAL(prime(p, len, &b));
	free(p);
	q = malloc(len);
	CU_ASSERT_FATAL(q != NULL);
	if (q != p) {
		free(q);
		done();
		table("free_malloc", "n/a");
		rc_skip("malloc did not reuse the address");
		return;
	}
	memset(q, 2, len);
	expect_new("free_malloc", q, len, &b);
	done();
	free(q);
}

static void t_brk_shrink(void)
{
	struct regcache_entry *warm;
	struct before b;
	char *cur, *a, *again;
	intptr_t pad;

	CU_ASSERT_FATAL(make_cache() == 0);
	/* Let the cache allocate its bookkeeping before we move brk. */
	a = map_at(NULL, psz, 0);
	CU_ASSERT_FATAL(a && regcache_get(cache, a, psz, 1, &warm) == 0);
	regcache_put(cache, warm);
	munmap(a, psz);
	cur = sbrk(0);
	pad = (intptr_t)((psz - (uintptr_t)cur % psz) % psz);
	CU_ASSERT_FATAL(sbrk(pad) != (void *)-1);
	a = sbrk(4 * psz);
	CU_ASSERT_FATAL(a != (void *)-1);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	CU_ASSERT_FATAL(sbrk(-(intptr_t)(4 * psz)) != (void *)-1);
	again = sbrk(4 * psz);
	CU_ASSERT_FATAL(again == a);
	memset(a, 2, 4 * psz);
	expect_new("brk_shrink", a, 4 * psz, &b);
	done();
	sbrk(-(intptr_t)(4 * psz) - pad);
}

static void t_shmdt(void)
{
	struct before b;
	int id1, id2;
	char *a, *again;

	CU_ASSERT_FATAL(make_cache() == 0);
	id1 = shmget(IPC_PRIVATE, 4 * psz, IPC_CREAT | 0600);
	id2 = shmget(IPC_PRIVATE, 4 * psz, IPC_CREAT | 0600);
	if (id1 < 0 || id2 < 0) {
		done();
		table("shmdt", "n/a");
		rc_skip("SysV shm unavailable: %s", strerror(errno));
		return;
	}
	a = shmat(id1, NULL, 0);
	CU_ASSERT_FATAL(a != (void *)-1);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	CU_ASSERT_EQUAL_FATAL(shmdt(a), 0);
	again = shmat(id2, a, 0);
	CU_ASSERT_FATAL(again == a);
	memset(a, 2, 4 * psz);
	expect_new("shmdt", a, 4 * psz, &b);
	done();
	shmdt(a);
	shmctl(id1, IPC_RMID, NULL);
	shmctl(id2, IPC_RMID, NULL);
}

static void t_file_shared(void)
{
	char path1[] = "/tmp/rc-battery-XXXXXX", path2[] = "/tmp/rc-battery-XXXXXX";
	struct before b;
	int f1 = mkstemp(path1), f2 = mkstemp(path2);
	char *a;

	CU_ASSERT_FATAL(f1 >= 0 && f2 >= 0);
	unlink(path1);
	unlink(path2);
	CU_ASSERT_FATAL(ftruncate(f1, 4 * psz) == 0 && ftruncate(f2, 4 * psz) == 0);
	CU_ASSERT_FATAL(make_cache() == 0);
	a = mmap(NULL, 4 * psz, PROT_READ | PROT_WRITE, MAP_SHARED, f1, 0);
	CU_ASSERT_FATAL(a != MAP_FAILED);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	CU_ASSERT_EQUAL_FATAL(munmap(a, 4 * psz), 0);
	if (!remapped(mmap(a, 4 * psz, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_FIXED_NOREPLACE, f2, 0), a)) {
		close(f1);
		close(f2);
		return;
	}
	memset(a, 2, 4 * psz);
	expect_new("file_shared_munmap", a, 4 * psz, &b);
	done();
	munmap(a, 4 * psz);
	close(f1);
	close(f2);
}

static void t_fork_child_exits(void)
{
	struct before b;
	char *a = map_at(NULL, 4 * psz, 0);
	int st;
	pid_t pid;

	CU_ASSERT_FATAL(a && make_cache() == 0);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0)
		_exit(0);
	waitpid(pid, &st, 0);
	/* The child is gone: writing reuses the page, nothing changes. */
	memset(a, 2, 4 * psz);
	expect_same_memory("fork_child_exits", a, 4 * psz, &b);
	done();
	munmap(a, 4 * psz);
}

static void t_fork_cow_write(void)
{
	struct before b;
	char *a = map_at(NULL, 4 * psz, 0);
	int pfd[2], st;
	pid_t pid;
	char c;

	CU_ASSERT_FATAL(a && make_cache() == 0 && pipe(pfd) == 0);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		close(pfd[1]);
		/* Hold the old pages until the parent is done. */
		if (read(pfd[0], &c, 1) < 0)
			_exit(1);
		_exit(a[0] == 1 ? 0 : 2);
	}
	close(pfd[0]);
	/* The parent writes while the child shares the pages: COW break. */
	memset(a, 2, 4 * psz);
	expect_new("fork_cow_write", a, 4 * psz, &b);
	close(pfd[1]);
	waitpid(pid, &st, 0);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	done();
	munmap(a, 4 * psz);
}

static void t_mprotect(void)
{
	struct before b;
	char *a = map_at(NULL, 4 * psz, 0);

	CU_ASSERT_FATAL(a && make_cache() == 0);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	CU_ASSERT_EQUAL(mprotect(a, 4 * psz, PROT_READ), 0);
	CU_ASSERT_EQUAL(mprotect(a, 4 * psz, PROT_READ | PROT_WRITE), 0);
	memset(a, 2, 4 * psz);
	expect_same_memory("mprotect", a, 4 * psz, &b);
	done();
	munmap(a, 4 * psz);
}

static void t_io_uring_madvise(void)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct before b;
	char *a = map_at(NULL, 4 * psz, 0);
	int ret;

	CU_ASSERT_FATAL(a != NULL);
	ret = io_uring_queue_init(4, &ring, 0);
	if (ret) {
		table("io_uring_madvise", "n/a");
		rc_skip("io_uring_queue_init: %s", strerror(-ret));
		munmap(a, 4 * psz);
		return;
	}
	CU_ASSERT_FATAL(make_cache() == 0);
	memset(a, 1, 4 * psz);
	CU_ASSERT_FATAL(prime(a, 4 * psz, &b));
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_madvise(sqe, a, 4 * psz, MADV_DONTNEED);
	CU_ASSERT_EQUAL_FATAL(io_uring_submit(&ring), 1);
	CU_ASSERT_EQUAL_FATAL(io_uring_wait_cqe(&ring, &cqe), 0);
	ret = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	if (ret == -EINVAL || ret == -EOPNOTSUPP) {
		done();
		table("io_uring_madvise", "n/a");
		rc_skip("IORING_OP_MADVISE unsupported: %s", strerror(-ret));
		munmap(a, 4 * psz);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	memset(a, 2, 4 * psz);
	expect_new("io_uring_madvise", a, 4 * psz, &b);
	done();
	munmap(a, 4 * psz);
}

static void t_exit_live(void)
{
	int st;
	pid_t pid;

	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct regcache_entry *e;
		char *a = map_at(NULL, 64 * psz, 0);
		int i;

		alarm(20);
		if (!a || make_cache())
			_exit(2);
		memset(a, 1, 64 * psz);
		for (i = 0; i < 16; i++)
			if (regcache_get(cache, a + 4 * i * psz, psz, 1, &e))
				_exit(3);
		/* Exit with live, referenced entries and no destroy. */
		_exit(0);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	table("exit_live", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "clean" : "FAILED");
}

static const struct rc_test_case battery[] = {
	{ "munmap_whole", t_munmap_whole },
	{ "munmap_partial", t_munmap_partial },
	{ "munmap_spanning", t_munmap_spanning },
	{ "mremap_move", t_mremap_move },
	{ "mremap_shrink", t_mremap_shrink },
	{ "mremap_grow", t_mremap_grow },
	{ "map_fixed", t_map_fixed },
	{ "madv_dontneed", t_madv_dontneed },
	{ "free_malloc", t_free_malloc },
	{ "brk_shrink", t_brk_shrink },
	{ "shmdt", t_shmdt },
	{ "file_shared_munmap", t_file_shared },
	{ "fork_child_exits", t_fork_child_exits },
	{ "fork_cow_write", t_fork_cow_write },
	{ "mprotect", t_mprotect },
	{ "io_uring_madvise", t_io_uring_madvise },
	{ "exit_live", t_exit_live },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	const char *m = getenv("RC_TEST_MONITOR");
	int ret;

	psz = (size_t)sysconf(_SC_PAGESIZE);
	if (m && !strcmp(m, "kmod")) {
		mon_type = REGCACHE_MONITOR_KMOD;
		mon_name = "kmod";
	}
	ret = make_cache();
	if (ret)
		rc_skip_all("monitor %s unavailable: %s", mon_name, strerror(-ret));
	regcache_destroy(cache);
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pagemap_fd >= 0) {
		int probe = 1;

		have_pfn = pfn_of(&probe) != 0;
	}
	if (!have_pfn)
		rc_diag("no PFNs in /proc/self/pagemap (not root): checking ids only");
	rc_add_suite(mon_type == REGCACHE_MONITOR_KMOD ? "battery-kmod" :
		     "battery-uffd", suite_init, NULL, battery);
	return rc_test_main(argc, argv);
}
