// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_regcache_uffd.c - the userfaultfd monitor's own guarantees, on the
 * host (userfaultfd works there) with the counting backend.
 *
 * - Shared file memory (memfd MAP_SHARED, shared anonymous) changes
 *   through its file without any userfaultfd event: it must never be
 *   cached, so a get after a hole punch or a truncation registers anew,
 *   and each such get is counted in uffd_shared.  Geometric growth must
 *   stop short of a shared neighbour instead of giving up caching.
 * - Two caches in one process share the monitor: both cache, both see
 *   every munmap, a range one of them stops watching stays watched for
 *   the other, destroying one leaves the other working.
 * - A range the application registered with its own userfaultfd is
 *   served uncached, counted in uffd_foreign, and said once on stderr;
 *   also where its pages are not there yet, with a backend that fails
 *   a fault as Linux 6.1's long-term pin does (-EFAULT: it cannot wait
 *   for the application's handler): the cache faults the range in
 *   through that handler first.
 * - A child that creates a cache after fork gets a working monitor.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/falloc.h>
#include <linux/userfaultfd.h>

#include "regcache.h"
#include "rc_test.h"
#include "rc_app_uffd.h"
#include "test_regcache_backend.h"

static size_t psz;

/* REGCACHE_UFFD_MODE=missing (the suite's second run) needs the env. */
static uint32_t env_flags(void)
{
	return getenv("REGCACHE_UFFD_MODE") ? 0 : REGCACHE_ATTR_NO_ENV;
}

static struct regcache *make_cache(struct tb_backend *be, size_t merge_max)
{
	struct regcache_attr a = {
		.reg = tb_reg, .dereg = tb_dereg, .user = be,
		.monitor = REGCACHE_MONITOR_UFFD, .merge_max = merge_max,
		.flags = env_flags(),
	};
	struct regcache *c = NULL;

	memset(be, 0, sizeof(*be));
	CU_ASSERT_EQUAL_FATAL(regcache_create(&a, &c), 0);
	return c;
}

static void destroy(struct regcache *c, struct tb_backend *be)
{
	regcache_destroy(c);
	CU_ASSERT_EQUAL(be->live, 0);
	CU_ASSERT_EQUAL(be->bad_deregs, 0);
}

static struct regcache_stats stats(struct regcache *c)
{
	struct regcache_stats st;

	CU_ASSERT_EQUAL(regcache_get_stats(c, &st), 0);
	return st;
}

static char *anon(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CU_ASSERT_FATAL(p != MAP_FAILED);
	return p;
}

/* get + put; returns the registration id, *cached what the entry said. */
static uint64_t get_id(struct regcache *c, void *a, size_t len, bool *cached)
{
	struct regcache_entry *e;
	uint64_t id;

	CU_ASSERT_EQUAL_FATAL(regcache_get(c, a, len, 1, &e), 0);
	id = tb_id(e);
	if (cached)
		*cached = regcache_entry_cached(e);
	CU_ASSERT_EQUAL(regcache_put(c, e), 0);
	return id;
}

/* ------------------------------------------------------ shared memory */

/*
 * The file changes under the mapping: punch, or truncate and re-extend.
 * Every get must be a registration of its own, never the first one.
 */
static void shared_file_case(bool punch)
{
	struct tb_backend be;
	struct regcache *c = make_cache(&be, 1);
	size_t len = 16 * psz;
	uint64_t id1, id2;
	bool cached;
	char *a;
	int fd;

	fd = memfd_create("rc-uffd", MFD_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, (off_t)len) == 0);
	a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CU_ASSERT_FATAL(a != MAP_FAILED);
	memset(a, 'a', len);
	id1 = get_id(c, a, len, &cached);
	CU_ASSERT_FALSE(cached);
	if (punch) {
		CU_ASSERT_EQUAL_FATAL(fallocate(fd, FALLOC_FL_PUNCH_HOLE |
						FALLOC_FL_KEEP_SIZE, 0,
						(off_t)len), 0);
	} else {
		CU_ASSERT_EQUAL_FATAL(ftruncate(fd, 0), 0);
		CU_ASSERT_EQUAL_FATAL(ftruncate(fd, (off_t)len), 0);
	}
	/* The process sees new (zero) pages now. */
	CU_ASSERT_EQUAL(a[0], 0);
	memset(a, 'b', len);
	id2 = get_id(c, a, len, &cached);
	CU_ASSERT_NOT_EQUAL(id2, id1);
	CU_ASSERT_FALSE(cached);
	CU_ASSERT_EQUAL(stats(c).uffd_shared, 2);
	CU_ASSERT_EQUAL(stats(c).entries, 0);
	/* Served as plain registrations: each released at its put. */
	CU_ASSERT_EQUAL(be.live, 0);
	destroy(c, &be);
	munmap(a, len);
	close(fd);
}

static void t_memfd_punch(void)
{
	shared_file_case(true);
}

static void t_memfd_truncate(void)
{
	shared_file_case(false);
}

static void t_shared_anon(void)
{
	struct tb_backend be;
	struct regcache *c = make_cache(&be, 1);
	size_t len = 4 * psz;
	bool cached;
	char *a;

	/* shmem too: MADV_REMOVE in a forked child would go unseen. */
	a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		 -1, 0);
	CU_ASSERT_FATAL(a != MAP_FAILED);
	memset(a, 1, len);
	get_id(c, a, len, &cached);
	CU_ASSERT_FALSE(cached);
	CU_ASSERT_EQUAL(stats(c).uffd_shared, 1);
	destroy(c, &be);
	munmap(a, len);
}

/* A range spanning a private and a shared VMA is not cached either. */
static void t_spanning_shared(void)
{
	struct tb_backend be;
	struct regcache *c = make_cache(&be, 1);
	size_t len = 8 * psz;
	bool cached;
	char *a, *s;
	int fd;

	a = anon(len);
	fd = memfd_create("rc-uffd", MFD_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0 && ftruncate(fd, (off_t)(4 * psz)) == 0);
	s = mmap(a + 4 * psz, 4 * psz, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, fd, 0);
	CU_ASSERT_FATAL(s == a + 4 * psz);
	memset(a, 1, len);
	get_id(c, a, len, &cached);
	CU_ASSERT_FALSE(cached);
	CU_ASSERT_EQUAL(stats(c).uffd_shared, 1);
	/* The private half alone is cached, and not counted. */
	get_id(c, a, 4 * psz, &cached);
	CU_ASSERT_TRUE(cached);
	CU_ASSERT_EQUAL(stats(c).uffd_shared, 1);
	destroy(c, &be);
	munmap(a, len);
	close(fd);
}

/*
 * Growth toward a shared neighbour: the extension is refused by the
 * monitor, the request stays cached and never covers the shared pages.
 */
static void t_growth_stops_at_shared(void)
{
	struct tb_backend be;
	struct regcache *c = make_cache(&be, 0);
	size_t len = 64 * psz;
	struct regcache_entry *e;
	char *a, *s;
	int fd, i;

	a = anon(len);
	fd = memfd_create("rc-uffd", MFD_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0 && ftruncate(fd, (off_t)(32 * psz)) == 0);
	s = mmap(a + 32 * psz, 32 * psz, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, fd, 0);
	CU_ASSERT_FATAL(s == a + 32 * psz);
	memset(a, 1, len);
	/* Chunk by chunk up to the shared mapping: growth wants to pass it. */
	for (i = 24; i < 32; i++) {
		CU_ASSERT_EQUAL_FATAL(regcache_get(c, a + i * psz, psz, 1, &e), 0);
		CU_ASSERT_TRUE(regcache_entry_cached(e));
		CU_ASSERT((char *)regcache_entry_addr(e) +
			  regcache_entry_len(e) <= s);
		regcache_put(c, e);
	}
	CU_ASSERT_EQUAL(stats(c).uffd_shared, 0);
	destroy(c, &be);
	munmap(a, len);
	close(fd);
}

/* --------------------------------------------------------- two caches */

static void t_two_caches(void)
{
	struct tb_backend b1, b2;
	struct regcache *c1 = make_cache(&b1, 1), *c2 = make_cache(&b2, 1);
	size_t len = 8 * psz;
	uint64_t i1, i2;
	bool k1, k2;
	char *a = anon(len);

	memset(a, 1, len);
	i1 = get_id(c1, a, len, &k1);
	i2 = get_id(c2, a, len, &k2);
	/* The second cache's watch used to fail with EBUSY: uncached. */
	CU_ASSERT_TRUE(k1);
	CU_ASSERT_TRUE(k2);
	CU_ASSERT_EQUAL(get_id(c1, a, len, NULL), i1);
	CU_ASSERT_EQUAL(get_id(c2, a, len, NULL), i2);
	CU_ASSERT_EQUAL(stats(c1).hits, 1);
	CU_ASSERT_EQUAL(stats(c2).hits, 1);
	CU_ASSERT_EQUAL(stats(c1).uffd_foreign + stats(c2).uffd_foreign, 0);
	/*
	 * One unmap invalidates both: a MAP_FIXED mapping over the range
	 * unmaps it (UNMAP event) and maps new memory in one step, so no
	 * other thread (a sanitizer runtime's) can take the hole between.
	 */
	CU_ASSERT_FATAL(mmap(a, len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			     -1, 0) == a);
	memset(a, 2, len);
	CU_ASSERT_NOT_EQUAL(get_id(c1, a, len, &k1), i1);
	CU_ASSERT_NOT_EQUAL(get_id(c2, a, len, &k2), i2);
	CU_ASSERT_TRUE(k1 && k2);
	CU_ASSERT_EQUAL(stats(c1).invalidations, 1);
	CU_ASSERT_EQUAL(stats(c2).invalidations, 1);
	/* Destroying one leaves the other caching and watching. */
	destroy(c1, &b1);
	i2 = get_id(c2, a, len, NULL);
	CU_ASSERT_EQUAL(get_id(c2, a, len, NULL), i2);
	CU_ASSERT_EQUAL(madvise(a, len, MADV_DONTNEED), 0);
	CU_ASSERT_NOT_EQUAL(get_id(c2, a, len, NULL), i2);
	destroy(c2, &b2);
	munmap(a, len);
}

/* Pages are unregistered only when no cache watches them any more. */
static void t_two_caches_overlap(void)
{
	struct tb_backend b1, b2;
	struct regcache *c1 = make_cache(&b1, 1), *c2 = make_cache(&b2, 1);
	size_t len = 8 * psz;
	uint64_t i2;
	bool k;
	char *a = anon(len);

	memset(a, 1, len);
	get_id(c1, a, len, &k);
	CU_ASSERT_TRUE(k);
	i2 = get_id(c2, a + 2 * psz, 4 * psz, &k);
	CU_ASSERT_TRUE(k);
	/* c1 drops its entry: [a, a + 8 pages) loses one watcher. */
	CU_ASSERT_EQUAL(regcache_flush(c1), 0);
	CU_ASSERT_EQUAL(stats(c1).entries, 0);
	/* c2's pages must still be watched. */
	CU_ASSERT_EQUAL(madvise(a + 3 * psz, psz, MADV_DONTNEED), 0);
	CU_ASSERT_NOT_EQUAL(get_id(c2, a + 2 * psz, 4 * psz, NULL), i2);
	CU_ASSERT_EQUAL(stats(c2).invalidations, 1);
	destroy(c1, &b1);
	destroy(c2, &b2);
	munmap(a, len);
}

/* Caches come and go while another one keeps its entries. */
static void t_cache_churn(void)
{
	struct tb_backend b0, b;
	struct regcache *keep = make_cache(&b0, 1), *c;
	size_t len = 4 * psz;
	uint64_t id;
	char *a = anon(len);
	int i;

	memset(a, 1, len);
	id = get_id(keep, a, len, NULL);
	for (i = 0; i < 50; i++) {
		bool k;

		c = make_cache(&b, 1);
		get_id(c, a, len, &k);
		CU_ASSERT_TRUE(k);
		destroy(c, &b);
	}
	CU_ASSERT_EQUAL(get_id(keep, a, len, NULL), id);
	CU_ASSERT_EQUAL(munmap(a, 2 * psz), 0);
	CU_ASSERT(regcache_process_events(keep) >= 0);
	CU_ASSERT_EQUAL(stats(keep).entries, 0);
	destroy(keep, &b0);
	munmap(a + 2 * psz, 2 * psz);
}

/*
 * Two caches hammered by four threads while a fifth unmaps and remaps
 * their buffers: no deadlock, no stale entry returned after a remap, no
 * leaked or doubly released registration.
 */
#define NBUF	8
#define BUFPG	8

struct stress {
	struct regcache *c[2];
	struct tb_backend be[2];
	char *buf[NBUF];
	_Atomic int stop;
	_Atomic long gets, stale, errors;
	/* the first failure, for the log */
	char why[160];
	_Atomic int said;
};

/* Keep the first thing that went wrong, to say it at the end. */
static void stress_say(struct stress *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void stress_say(struct stress *st, const char *fmt, ...)
{
	va_list ap;

	if (atomic_exchange(&st->said, 1))
		return;
	va_start(ap, fmt);
	vsnprintf(st->why, sizeof(st->why), fmt, ap);
	va_end(ap);
}

static void *stress_getter(void *arg)
{
	struct stress *st = *(struct stress **)arg;
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	while (!atomic_load(&st->stop)) {
		int k = rand_r(&seed) & 1, j = rand_r(&seed) % NBUF;
		size_t off = (size_t)(rand_r(&seed) % BUFPG) * psz;
		size_t len = (size_t)(1 + rand_r(&seed) % (BUFPG - off / psz)) * psz;
		struct regcache_entry *e;
		int ret = regcache_get(st->c[k], st->buf[j] + off, len, 1, &e);

		if (ret) {
			/* the buffer was being remapped: a hole */
			if (ret != -EFAULT) {
				atomic_fetch_add(&st->errors, 1);
				stress_say(st, "getter: cache %d buf %d +%zu len %zu: %s",
					   k, j, off, len, strerror(-ret));
			}
			continue;
		}
		if (!tb_live(e)) {
			atomic_fetch_add(&st->errors, 1);
			stress_say(st, "getter: cache %d buf %d +%zu len %zu: handed a deregistered entry (id %llu)",
				   k, j, off, len, (unsigned long long)tb_id(e));
		}
		atomic_fetch_add(&st->gets, 1);
		regcache_put(st->c[k], e);
	}
	return NULL;
}

static void t_two_caches_threads(void)
{
	static struct stress st;
	struct stress *sp = &st;
	struct stress *args[4] = { sp, sp, sp, sp };
	pthread_t th[4];
	double t_end;
	struct timespec ts;
	unsigned int seed = 1;
	int i, k, remaps = 0, lost = -1;

	memset(&st, 0, sizeof(st));
	for (k = 0; k < 2; k++)
		st.c[k] = make_cache(&st.be[k], 0);
	for (i = 0; i < NBUF; i++) {
		st.buf[i] = anon(BUFPG * psz);
		memset(st.buf[i], 1, BUFPG * psz);
	}
	for (i = 0; i < 4; i++)
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, stress_getter,
					       &args[i]) == 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t_end = ts.tv_sec + ts.tv_nsec / 1e9 + 1.5;
	do {
		int j = rand_r(&seed) % NBUF;
		uint64_t before[2];
		char *a = st.buf[j];

		for (k = 0; k < 2; k++)
			before[k] = atomic_load(&st.be[k].next_id);
		CU_ASSERT_EQUAL_FATAL(munmap(a, BUFPG * psz), 0);
			if (mmap(a, BUFPG * psz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			 -1, 0) != a) {
			/*
			 * Another thread's mapping took the hole (TSan's
			 * runtime did, in CI): the address is no longer ours.
			 * End the stress here and judge what ran; the getters
			 * take the foreign range like any other (or EFAULT).
			 */
			rc_diag("remap of buf %d at %p: %s: stress ended early",
				j, a, strerror(errno));
			lost = j;
			break;
		}
		memset(a, 2, BUFPG * psz);
		remaps++;
		/* Whatever either cache returns now was registered after. */
		for (k = 0; k < 2; k++) {
			struct regcache_entry *e;

			int ret = regcache_get(st.c[k], a, BUFPG * psz, 1, &e);

			if (ret) {
				atomic_fetch_add(&st.errors, 1);
				stress_say(&st, "remapper: cache %d buf %d: %s",
					   k, j, strerror(-ret));
				continue;
			}
			if (tb_id(e) <= before[k]) {
				atomic_fetch_add(&st.stale, 1);
				stress_say(&st, "remapper: cache %d buf %d: stale entry [%p, +%zu) id %llu <= %llu",
					   k, j, regcache_entry_addr(e),
					   regcache_entry_len(e),
					   (unsigned long long)tb_id(e),
					   (unsigned long long)before[k]);
			}
			regcache_put(st.c[k], e);
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < t_end);
	atomic_store(&st.stop, 1);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	rc_diag("stress: %ld gets, %d remaps, %ld stale, %ld errors",
		atomic_load(&st.gets), remaps, atomic_load(&st.stale),
		atomic_load(&st.errors));
	if (atomic_load(&st.said))
		rc_diag("stress: first failure: %s", st.why);
	CU_ASSERT_EQUAL(atomic_load(&st.stale), 0);
	CU_ASSERT_EQUAL(atomic_load(&st.errors), 0);
	CU_ASSERT(atomic_load(&st.gets) > 0);
	for (k = 0; k < 2; k++)
		destroy(st.c[k], &st.be[k]);
	for (i = 0; i < NBUF; i++)
		if (i != lost)
			munmap(st.buf[i], BUFPG * psz);
	if (!remaps)
		rc_skip("the first remap's hole was taken by another mapping: nothing remapped");
}

/* ------------------------------------------------- foreign userfaultfd */

/* Does the VMA at addr carry VmFlags token flag ("um": uffd missing)? */
static bool vma_flag(const void *addr, const char *flag)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long lo, hi;
	bool in = false, found = false;
	char line[512];

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = lo <= (uintptr_t)addr && (uintptr_t)addr < hi;
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8)) {
			char *tok = strtok(line + 8, " \n");

			for (; tok; tok = strtok(NULL, " \n"))
				found |= !strcmp(tok, flag);
			break;
		}
	}
	fclose(f);
	return found;
}

static void t_foreign(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register r;
	struct tb_backend be;
	struct regcache *c;
	size_t len = 4 * psz;
	char path[] = "/tmp/rc-uffd-log-XXXXXX", buf[4096], *p;
	int ufd, logfd, saved, n, said = 0;
	bool k;
	char *a = anon(len);

	memset(a, 1, len);		/* populated: no fault reaches ufd */
	ufd = (int)syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (ufd < 0) {
		munmap(a, len);
		rc_skip("userfaultfd: %s", strerror(errno));
		return;
	}
	CU_ASSERT_FATAL(ioctl(ufd, UFFDIO_API, &api) == 0);
	memset(&r, 0, sizeof(r));
	r.range.start = (uintptr_t)a;
	r.range.len = len;
	r.mode = UFFDIO_REGISTER_MODE_MISSING;
	CU_ASSERT_FATAL(ioctl(ufd, UFFDIO_REGISTER, &r) == 0);

	logfd = mkstemp(path);
	CU_ASSERT_FATAL(logfd >= 0);
	unlink(path);
	fflush(stderr);
	saved = dup(2);
	dup2(logfd, 2);
	c = make_cache(&be, 1);
	get_id(c, a, len, &k);
	CU_ASSERT_FALSE(k);
	get_id(c, a + psz, psz, &k);
	CU_ASSERT_FALSE(k);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	/* The application's registration is still its own. */
	CU_ASSERT_TRUE(vma_flag(a, "um"));
	CU_ASSERT_TRUE(vma_flag(a + psz, "um"));
	CU_ASSERT_EQUAL(stats(c).uffd_foreign, 2);
	CU_ASSERT_EQUAL(stats(c).uffd_shared, 0);
	CU_ASSERT_EQUAL(stats(c).uncached, 2);
	n = (int)pread(logfd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	for (p = buf; (p = strstr(p, "another userfaultfd")); p++)
		said++;
	CU_ASSERT_EQUAL(said, 1);
	if (said != 1)
		rc_diag("stderr was: %s", buf);
	close(logfd);
	/* Once the application lets go, the range is cached. */
	close(ufd);
	get_id(c, a, len, &k);
	CU_ASSERT_TRUE(k);
	destroy(c, &be);
	munmap(a, len);
}

/*
 * A pin as Linux 6.1's FOLL_LONGTERM pin behaves in a range another
 * userfaultfd watches: a page that is not there needs a userfault, which
 * it cannot wait for, so the registration fails with -EFAULT.
 */
static int pin61_reg(void *user, void *addr, size_t len, uint32_t access,
		     void **handle)
{
	uintptr_t s = (uintptr_t)addr & ~(uintptr_t)(psz - 1);
	size_t n = ((uintptr_t)addr + len - s + psz - 1) / psz, i;
	unsigned char *vec = malloc(n);
	int ret = 0;

	if (!vec || mincore((void *)s, n * psz, vec))
		ret = -EFAULT;
	for (i = 0; !ret && i < n; i++)
		if (!(vec[i] & 1))
			ret = -EFAULT;
	free(vec);
	return ret ? ret : tb_reg(user, addr, len, access, handle);
}

static void t_foreign_untouched(void)
{
	struct tb_backend be;
	struct regcache_attr a = {
		.reg = pin61_reg, .dereg = tb_dereg, .user = &be,
		.monitor = REGCACHE_MONITOR_UFFD, .merge_max = 1,
		.flags = env_flags(),
	};
	struct regcache_entry *e;
	struct app_uffd u;
	struct regcache *c;
	size_t len = 8 * psz, i;
	char *p = anon(len);
	int ret;

	ret = app_uffd_open(&u, 'L');
	if (ret) {
		munmap(p, len);
		rc_skip("userfaultfd: %s", strerror(-ret));
		return;
	}
	CU_ASSERT_EQUAL_FATAL(app_uffd_watch(&u, p, len,
					     UFFDIO_REGISTER_MODE_MISSING), 0);
	memset(&be, 0, sizeof(be));
	CU_ASSERT_EQUAL_FATAL(regcache_create(&a, &c), 0);
	ret = regcache_get(c, p, len, 1, &e);
	if (ret)
		rc_diag("get of never-touched memory the application "
			"watches: %s", strerror(-ret));
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_FALSE(regcache_entry_cached(e));
	CU_ASSERT_EQUAL(regcache_put(c, e), 0);
	/* through the application's handler: its pages, every one */
	CU_ASSERT_EQUAL(u.missing, (long)(len / psz));
	for (i = 0; i < len; i += psz)
		CU_ASSERT_EQUAL(p[i], 'L');
	CU_ASSERT_EQUAL(stats(c).uffd_foreign, 1);
	destroy(c, &be);
	app_uffd_close(&u);
	munmap(p, len);
}

/* ------------------------------------------- releases in other threads */

/*
 * regcache_process_events() returns only when the registrations of the
 * memory that went are gone, also those another thread is deregistering
 * at that moment.  Thread A applies the unmap's release (the uffd
 * thread deferred it to an application thread) in a dereg that takes
 * 300 ms; the main thread's call meanwhile finds nothing left to drain
 * and must still not return before A's dereg did: the case of an agent
 * whose progress thread revokes a key while the application asks after
 * it (a peer's WRITE through the key must already fail).
 */
struct slow_be {
	struct tb_backend be;
	_Atomic int slow, in_dereg, dereg_done;
};

static int slow_dereg(void *user, void *handle)
{
	struct slow_be *s = user;
	int ret;

	if (atomic_load(&s->slow)) {
		atomic_store(&s->in_dereg, 1);
		usleep(300 * 1000);
	}
	ret = tb_dereg(&s->be, handle);
	if (atomic_load(&s->slow))
		atomic_store(&s->dereg_done, 1);
	return ret;
}

static void *process_thread(void *arg)
{
	(void)regcache_process_events(arg);
	return NULL;
}

static void t_process_waits_for_release(void)
{
	static struct slow_be s;
	struct regcache_attr a = {
		.reg = tb_reg, .dereg = slow_dereg, .user = &s,
		.monitor = REGCACHE_MONITOR_UFFD, .merge_max = 1,
		.flags = env_flags(),
	};
	struct regcache_entry *e;
	struct regcache *c = NULL;
	size_t len = 4 * psz;
	char *p = anon(len);
	pthread_t t;
	int i;

	memset(&s, 0, sizeof(s));
	CU_ASSERT_EQUAL_FATAL(regcache_create(&a, &c), 0);
	memset(p, 1, len);
	CU_ASSERT_EQUAL_FATAL(regcache_get(c, p, len, 1, &e), 0);
	CU_ASSERT_TRUE(regcache_entry_cached(e));
	CU_ASSERT_EQUAL(regcache_put(c, e), 0);
	atomic_store(&s.slow, 1);
	CU_ASSERT_EQUAL_FATAL(munmap(p, len), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, process_thread, c), 0);
	for (i = 0; i < 5000 && !atomic_load(&s.in_dereg); i++)
		usleep(1000);
	CU_ASSERT_FATAL(atomic_load(&s.in_dereg));
	CU_ASSERT(regcache_process_events(c) >= 0);
	if (!atomic_load(&s.dereg_done))
		rc_diag("regcache_process_events() returned while another thread's dereg ran");
	CU_ASSERT(atomic_load(&s.dereg_done));
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(s.be.live, 0);
	atomic_store(&s.slow, 0);
	regcache_destroy(c);
	CU_ASSERT_EQUAL(s.be.bad_deregs, 0);
}

/* --------------------------------------------------------------- fork */

static void t_fork_new_cache(void)
{
	struct tb_backend be;
	struct regcache *c = make_cache(&be, 1);
	size_t len = 4 * psz;
	char *a = anon(len);
	int st;
	pid_t pid;

	if (rc_skip_fork_under_tsan()) {
		regcache_destroy(c);
		munmap(a, len);
		return;
	}
	memset(a, 1, len);
	get_id(c, a, len, NULL);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct tb_backend cb;
		struct regcache_attr at = {
			.reg = tb_reg, .dereg = tb_dereg, .user = &cb,
			.monitor = REGCACHE_MONITOR_UFFD, .merge_max = 1,
			.flags = env_flags(),
		};
		struct regcache *cc;
		struct regcache_entry *e;
		struct regcache_stats cst;
		uint64_t id;
		char *sh;

		alarm(20);
		memset(&cb, 0, sizeof(cb));
		/* The parent's cache is unusable here... */
		if (regcache_get(c, a, len, 1, &e) != -ESTALE)
			_exit(2);
		/* ...a new one has a monitor of its own. */
		if (regcache_create(&at, &cc))
			_exit(3);
		if (regcache_get(cc, a, len, 1, &e) || !regcache_entry_cached(e))
			_exit(4);
		id = tb_id(e);
		regcache_put(cc, e);
		/* unmap and map again in one step (see two_caches) */
		if (mmap(a, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
			 MAP_ANONYMOUS | MAP_FIXED, -1, 0) != a)
			_exit(5);
		if (regcache_get(cc, a, len, 1, &e) || tb_id(e) == id)
			_exit(6);
		regcache_put(cc, e);
		/* memory only the child has, shared: the child's cache asks
		 * the child's mm (not the parent's /proc/self/maps, which
		 * has nothing there), so it is not cached */
		sh = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (sh == MAP_FAILED)
			_exit(8);
		memset(sh, 1, len);
		if (regcache_get(cc, sh, len, 1, &e) ||
		    regcache_entry_cached(e))
			_exit(9);
		regcache_put(cc, e);
		if (regcache_get_stats(cc, &cst) || cst.uffd_shared != 1)
			_exit(10);
		munmap(sh, len);
		regcache_destroy(cc);
		regcache_destroy(c);	/* drops the parent's monitor copy */
		_exit(cb.live ? 7 : 0);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		rc_diag("child status %#x", st);
	/* The parent's cache and monitor are untouched. */
	CU_ASSERT_EQUAL(munmap(a, len), 0);
	CU_ASSERT(regcache_process_events(c) >= 0);
	CU_ASSERT_EQUAL(stats(c).entries, 0);
	destroy(c, &be);
}

static const struct rc_test_case cases[] = {
	{ "memfd_punch_hole", t_memfd_punch },
	{ "memfd_truncate", t_memfd_truncate },
	{ "shared_anon", t_shared_anon },
	{ "spanning_shared", t_spanning_shared },
	{ "growth_stops_at_shared", t_growth_stops_at_shared },
	{ "two_caches", t_two_caches },
	{ "two_caches_overlap", t_two_caches_overlap },
	{ "cache_churn", t_cache_churn },
	{ "two_caches_threads", t_two_caches_threads },
	{ "foreign_uffd", t_foreign },
	{ "foreign_uffd_untouched", t_foreign_untouched },
	{ "fork_new_cache", t_fork_new_cache },
	{ "process_waits_for_release", t_process_waits_for_release },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	struct regcache_attr a = {
		.reg = tb_reg, .dereg = tb_dereg,
		.monitor = REGCACHE_MONITOR_UFFD, .flags = env_flags(),
	};
	struct tb_backend be;
	struct regcache *c;
	int ret;

	psz = (size_t)sysconf(_SC_PAGESIZE);
	a.user = &be;
	ret = regcache_create(&a, &c);
	if (ret)
		rc_skip_all("uffd monitor unavailable: %s", strerror(-ret));
	regcache_destroy(c);
	rc_add_suite("uffd", NULL, NULL, cases);
	return rc_test_main(argc, argv);
}
