// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_race.c - the threaded fuzzer: every entry point of
 * /dev/regcache at once, from several threads, on a few shared contexts.
 *
 * THREADS threads share NFDS descriptor slots.  Each thread loops for
 * KMOD_RACE_SECONDS (default 5) over random operations on a random slot:
 * open, close (the slot's context may be in use by another thread; its
 * fd number may come back as another context), CONFIGURE (sizes that
 * keep the status area's page count and sizes that do not), GET_INFO +
 * mmap (sometimes of a wrong length) and a read of the mapped header and
 * slots, munmap, WATCH, WATCH_BATCH and UNWATCH of pages of the thread's
 * own memory (identical watches on purpose), FLUSH, read(), madvise and
 * mmap over its memory (invalidations).  The context that an op
 * used may have been closed and replaced meanwhile: that is the point.
 *
 * A second case races the first mmap of fresh contexts with CONFIGUREs
 * that keep the area's page count, the race of issue 33 alone.
 *
 * Pass: no mapping that mmap() returned faults (SIGBUS/SIGSEGV on the
 * status area was the mmap/CONFIGURE race of issue 33), every status
 * header mapped reads abi_version 2 and a slot count that fits the
 * mapping, every call returns 0 or an errno the call documents, no
 * thread is stuck at the end (a watchdog), and once everything is closed
 * and unmapped the module's global counters and this user's charged
 * bytes are back where they started.  The kernel side (KASAN, lockdep,
 * kmemleak, DEBUG_ATOMIC_SLEEP on the debug kernel) is the harness's
 * dmesg check.  Needs root and regcache.ko.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kt_harness.h"
#include "test_kmod_util.h"

#define THREADS		6
#define NFDS		4
#define MAPS		2	/* status mappings a thread keeps */
#define PAGES		16	/* a thread's own memory */
#define WATCHES		32	/* watches a thread remembers */

static long pg;
static int fds[NFDS];			/* atomic: -1 when closed */
static uint32_t param_watches, param_ring;
static time_t deadline;

/*
 * Errors a call may give here, a list ending in 0; anything else is a
 * failure.  Every call may meet a closed slot (EBADF) or a number that
 * another thread reused.
 */
#define ERRS(...)	((const int[]){ EBADF, ENOTTY, EIO, ENODEV, EINTR, __VA_ARGS__, 0 })

struct status_map {
	void *addr;
	size_t len;
};

struct recorded {
	int fd;
	uint32_t slot;
	uint64_t cookie;
	uint64_t word;
};

struct worker {
	unsigned int seed;
	pthread_t th;
	char *mem;
	struct status_map maps[MAPS];
	struct recorded w[WATCHES];
	unsigned int nw;
	long ops, faults, bad_errno, bad_header, mapped;
	double slowest;		/* seconds, and which op */
	int slowest_op;
	char why[160];		/* the first unexpected errno */
	sigjmp_buf jmp;
	volatile sig_atomic_t in_probe;
};

static __thread struct worker *self;

static void on_fault(int sig)
{
	if (self && self->in_probe)
		siglongjmp(self->jmp, sig);
	signal(sig, SIG_DFL);
	raise(sig);
}

static unsigned int rnd(struct worker *w, unsigned int n)
{
	return (unsigned int)rand_r(&w->seed) % n;
}

/* ret 0/-errno of op: record an errno outside allowed. */
static void check(struct worker *w, const char *op, int ret, const int *allowed)
{
	if (!ret)
		return;
	for (; ret < 0 && *allowed; allowed++)
		if (-ret == *allowed)
			return;
	if (!w->bad_errno++)
		snprintf(w->why, sizeof(w->why), "%s: %d (%s)", op, ret,
			 ret < 0 ? strerror(-ret) : "positive");
}

static int slot_fd(struct worker *w)
{
	return __atomic_load_n(&fds[rnd(w, NFDS)], __ATOMIC_ACQUIRE);
}

static void op_open(struct worker *w)
{
	int i = rnd(w, NFDS), fd, expect = -1;

	if (__atomic_load_n(&fds[i], __ATOMIC_ACQUIRE) >= 0)
		return;
	/* O_RDONLY sometimes: it maps and watches the same */
	fd = open(REGCACHE_DEVICE_PATH, (rnd(w, 4) ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		check(w, "open", -errno, ERRS(EDQUOT, EMFILE, ENOMEM));
		return;
	}
	if (!__atomic_compare_exchange_n(&fds[i], &expect, fd, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		close(fd);
}

static void op_close(struct worker *w)
{
	int fd = __atomic_exchange_n(&fds[rnd(w, NFDS)], -1, __ATOMIC_ACQ_REL);

	if (fd >= 0)
		close(fd);
}

static void op_configure(struct worker *w)
{
	/* the default, one page, two pages, the default's page count less one slot */
	const uint32_t sizes[] = { 0, 8, 600, param_watches - 1, param_watches };
	struct regcache_config cfg = {
		.ring_entries = rnd(w, 2) ? 0 : 1 + rnd(w, param_ring),
		.strict = rnd(w, 3),
		.max_watches = sizes[rnd(w, 5)],
	};

	check(w, "CONFIGURE", kt_ioctl(slot_fd(w), REGCACHE_IOC_CONFIGURE, &cfg),
	      ERRS(EBUSY, EDQUOT, ENOMEM));
}

/* Loads from a mapping mmap() returned: a fault is a failure. */
static void probe(struct worker *w, const volatile struct regcache_status *st, size_t len)
{
	uint32_t n;

	w->in_probe = 1;
	if (sigsetjmp(w->jmp, 1)) {
		w->in_probe = 0;
		w->faults++;
		return;
	}
	n = st->max_watches;
	if (st->abi_version != REGCACHE_ABI_VERSION || !n ||
	    REGCACHE_STATUS_SLOT_OFFSET(n) > len)
		w->bad_header++;
	else
		(void)*(const volatile uint64_t *)((const volatile char *)st +
						   REGCACHE_STATUS_SLOT_OFFSET(rnd(w, n)));
	w->in_probe = 0;
}

static void op_mmap(struct worker *w)
{
	struct regcache_info info = { 0 };
	int fd = slot_fd(w), i = rnd(w, MAPS), ret;
	size_t len;
	void *m;

	ret = kt_ioctl(fd, REGCACHE_IOC_GET_INFO, &info);
	check(w, "GET_INFO", ret, ERRS(0));
	if (ret)
		return;
	len = info.status_size;
	if (!rnd(w, 8))
		len += pg;	/* wrong: EINVAL, and freezes nothing */
	if (w->maps[i].addr) {
		munmap(w->maps[i].addr, w->maps[i].len);
		w->maps[i].addr = NULL;
	}
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		/* EINVAL: wrong length, or CONFIGURE resized it since GET_INFO */
		check(w, "mmap", -errno, ERRS(EINVAL, ENOMEM, EACCES));
		return;
	}
	w->mapped++;
	w->maps[i].addr = m;
	w->maps[i].len = len;
	probe(w, m, len);
}

static void op_probe(struct worker *w)
{
	int i = rnd(w, MAPS);

	if (w->maps[i].addr)
		probe(w, w->maps[i].addr, w->maps[i].len);
}

static void op_munmap_status(struct worker *w)
{
	int i = rnd(w, MAPS);

	if (w->maps[i].addr) {
		munmap(w->maps[i].addr, w->maps[i].len);
		w->maps[i].addr = NULL;
	}
}

static void record(struct worker *w, int fd, const struct regcache_watch *wa)
{
	struct recorded *r = &w->w[w->nw++ % WATCHES];

	r->fd = fd;
	r->slot = wa->slot;
	r->cookie = wa->cookie;
	r->word = wa->slot_word;
}

static void fill_watch(struct worker *w, struct regcache_watch *wa)
{
	unsigned int first = rnd(w, PAGES), n = 1 + rnd(w, PAGES - first);

	memset(wa, 0, sizeof(*wa));
	wa->addr = (uintptr_t)(w->mem + (size_t)first * pg);
	wa->len = (uint64_t)n * pg;
	wa->cookie = rnd(w, 4);	/* few cookies: identical WATCHes happen */
	wa->pinned_bytes = rnd(w, 2) ? wa->len : 0;
}

#define OK_WATCH ERRS(ENOMEM, ENOSPC, EDQUOT, EFAULT)

static void op_watch(struct worker *w)
{
	struct regcache_watch wa;
	int fd = slot_fd(w), ret;

	fill_watch(w, &wa);
	ret = kt_ioctl(fd, REGCACHE_IOC_WATCH, &wa);
	check(w, "WATCH", ret, OK_WATCH);
	if (!ret)
		record(w, fd, &wa);
}

static void op_batch(struct worker *w)
{
	struct regcache_watch wa[4];
	struct regcache_watch_batch b = { .count = 1 + rnd(w, 4) };
	int fd = slot_fd(w), ret;
	uint32_t i;

	for (i = 0; i < b.count; i++)
		fill_watch(w, &wa[i]);
	b.watches = (uintptr_t)wa;
	ret = kt_ioctl(fd, REGCACHE_IOC_WATCH_BATCH, &b);
	check(w, "WATCH_BATCH", ret, OK_WATCH);
	for (i = 0; i < b.done && i < b.count; i++)
		record(w, fd, &wa[i]);
}

static void op_unwatch(struct worker *w)
{
	struct recorded *r;
	struct regcache_unwatch u = { 0 };

	if (!w->nw)
		return;
	r = &w->w[rnd(w, w->nw < WATCHES ? w->nw : WATCHES)];
	u.slot = r->slot;
	u.cookie = r->cookie;
	u.slot_word = rnd(w, 4) ? r->word : 0;
	/* ENOENT: released already, through another path or context */
	check(w, "UNWATCH", kt_ioctl(r->fd, REGCACHE_IOC_UNWATCH, &u), ERRS(ENOENT));
}

static void op_flush(struct worker *w)
{
	struct regcache_ctx_stats s = { 0 };
	struct regcache_flush f = { 0 };
	int fd = slot_fd(w), ret;

	ret = kt_ioctl(fd, REGCACHE_IOC_GET_STATS, &s);
	check(w, "GET_STATS", ret, ERRS(0));
	f.events_seen = ret ? 0 : s.events_total;
	/* EINVAL: closed and reopened in between, a new context has fewer events */
	check(w, "FLUSH", kt_ioctl(fd, REGCACHE_IOC_FLUSH, &f), ERRS(EINVAL));
}

static void op_read(struct worker *w)
{
	struct regcache_event ev[8];
	size_t len = rnd(w, 4) ? (1 + rnd(w, 8)) * sizeof(ev[0]) : rnd(w, sizeof(ev[0]));
	ssize_t n = read(slot_fd(w), ev, len);

	if (n < 0)
		check(w, "read", -errno, ERRS(EAGAIN, ENOSPC, EINVAL));
	else if (n % sizeof(ev[0]))
		check(w, "read", (int)n, ERRS(0));
}

static void op_mem(struct worker *w)
{
	unsigned int first = rnd(w, PAGES), n = 1 + rnd(w, PAGES - first);
	char *p = w->mem + (size_t)first * pg;

	if (rnd(w, 2)) {
		madvise(p, (size_t)n * pg, MADV_DONTNEED);
	} else if (mmap(p, (size_t)n * pg, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		/*
		 * MAP_FIXED over the old pages replaces them in one call (an
		 * unmap for the notifier): a munmap first would leave a hole
		 * another thread's mmap could take.
		 */
		check(w, "mmap MAP_FIXED", -errno, ERRS(0));
		return;
	}
	p[0] = 1;
}

/* The mix of operations (some twice: more often), and their names. */
static void (*const op_fns[])(struct worker *) = {
	op_open, op_close, op_configure, op_configure, op_mmap, op_mmap, op_probe,
	op_munmap_status, op_watch, op_watch, op_watch, op_batch, op_unwatch,
	op_unwatch, op_flush, op_read, op_mem,
};
static const char *const op_names[] = {
	"open", "close", "CONFIGURE", "CONFIGURE", "mmap", "mmap", "probe",
	"munmap", "WATCH", "WATCH", "WATCH", "WATCH_BATCH", "UNWATCH",
	"UNWATCH", "FLUSH", "read", "madvise/mmap",
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int i;

	self = w;
	while (time(NULL) < deadline) {
		struct timespec t0, t1;
		int op = rnd(w, sizeof(op_fns) / sizeof(op_fns[0]));
		double d;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		op_fns[op](w);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		d = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (d > w->slowest) {
			w->slowest = d;
			w->slowest_op = op;
		}
		w->ops++;
	}
	for (i = 0; i < MAPS; i++)
		if (w->maps[i].addr)
			munmap(w->maps[i].addr, w->maps[i].len);
	return NULL;
}

/* this user's charged bytes besides a fresh context of its own */
static long long user_bytes_besides_one(void)
{
	long long all, mine;
	int fd = open(REGCACHE_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (kt_fdinfo(fd, "user-bytes", &all) || kt_fdinfo(fd, "bytes", &mine))
		all = mine = -1;
	close(fd);
	return all < 0 ? -1 : all - mine;
}

static void test_race(void)
{
	long long base_c = kt_sysfs("nr_contexts"), base_w = kt_sysfs("watches");
	long long base_p = kt_sysfs("pinned_bytes"), base_u = user_bytes_besides_one();
	long secs = kt_env_long("KMOD_RACE_SECONDS", 5, 1, 3600);
	struct worker w[THREADS];
	struct sigaction sa = { .sa_handler = on_fault, .sa_flags = SA_NODEFER };
	long ops = 0, mapped = 0;
	int i, j, stuck = 0;

	KT_ASSERT(sigaction(SIGBUS, &sa, NULL) == 0 && sigaction(SIGSEGV, &sa, NULL) == 0);
	for (i = 0; i < NFDS; i++)
		fds[i] = -1;
	memset(w, 0, sizeof(w));
	deadline = time(NULL) + secs;
	for (i = 0; i < THREADS; i++) {
		w[i].seed = 0x5eed + i;
		w[i].mem = kt_map_pages(PAGES);
		KT_ASSERT(w[i].mem != NULL);
		KT_ASSERT(pthread_create(&w[i].th, NULL, worker_main, &w[i]) == 0);
	}
	for (i = 0; i < THREADS; i++) {
		struct timespec until = { .tv_sec = deadline + 60 };

		/* every call returns: a thread still busy a minute later is stuck */
		if (pthread_timedjoin_np(w[i].th, NULL, &until)) {
			stuck++;
			continue;
		}
		ops += w[i].ops;
		mapped += w[i].mapped;
		KT_EXPECT(w[i].faults == 0);
		KT_EXPECT(w[i].bad_header == 0);
		KT_EXPECT(w[i].bad_errno == 0);
		if (w[i].bad_errno)
			kt_diag("thread %d: %ld unexpected errors, first %s", i, w[i].bad_errno,
				w[i].why);
		munmap(w[i].mem, PAGES * pg);
	}
	KT_ASSERT(stuck == 0);
	for (i = 1, j = 0; i < THREADS; i++)
		if (w[i].slowest > w[j].slowest)
			j = i;
	kt_diag("slowest call: %s, %.3f s", op_names[w[j].slowest_op], w[j].slowest);
	for (i = 0; i < NFDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	kt_diag("%ld operations in %ld s by %d threads, %ld status mappings", ops, secs,
		THREADS, mapped);
	KT_EXPECT(kt_sysfs("nr_contexts") == base_c);
	KT_EXPECT(kt_sysfs("watches") == base_w);
	KT_EXPECT(kt_sysfs("pinned_bytes") == base_p);
	KT_EXPECT(user_bytes_besides_one() == base_u);
}

struct configurer {
	int fd;
	long calls;
};

/* Until the context freezes: CONFIGURE sizes of the same page count. */
static void *configure_loop(void *arg)
{
	struct configurer *cf = arg;
	struct regcache_config cfg = { 0 };
	int ret;

	do {
		cfg.max_watches = cf->calls++ % 2 ? param_watches - 1 : param_watches;
		ret = kt_ioctl(cf->fd, REGCACHE_IOC_CONFIGURE, &cfg);
	} while (!ret && cf->calls < 1000000);
	return NULL;
}

/*
 * The race of issue 33 on its own: a CONFIGURE that keeps the status
 * area's page count, racing the first mmap.  The module used to rebuild
 * the area for any change of max_watches, and mmap to fetch the pages
 * after dropping the lock, so the mapping could come out empty (SIGBUS
 * at the first load) or torn.  KMOD_RACE_ROUNDS fresh contexts (1000;
 * against the module before the fix, 2000 rounds faulted in 3 runs of 4
 * on 6.1 under TCG), or as many as 15 s allow (a round took 4 ms on a
 * quiet host, 40 ms beside another guest).
 */
static void test_mmap_vs_configure(void)
{
	long rounds = kt_env_long("KMOD_RACE_ROUNDS", 1000, 1, 1000000), i, mapped = 0;
	/* on a loaded host a round takes 10x longer: at most 15 s of them */
	time_t until = time(NULL) + 15;
	struct sigaction sa = { .sa_handler = on_fault, .sa_flags = SA_NODEFER };
	struct regcache_info info;
	struct configurer cf;
	struct worker w;
	pthread_t th;
	void *m;

	KT_ASSERT(sigaction(SIGBUS, &sa, NULL) == 0 && sigaction(SIGSEGV, &sa, NULL) == 0);
	memset(&w, 0, sizeof(w));
	w.seed = 1;
	self = &w;
	for (i = 0; i < rounds && time(NULL) < until; i++) {
		cf.fd = open(REGCACHE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
		KT_ASSERT(cf.fd >= 0);
		cf.calls = 0;
		memset(&info, 0, sizeof(info));
		KT_ASSERT(kt_ioctl(cf.fd, REGCACHE_IOC_GET_INFO, &info) == 0);
		KT_ASSERT(pthread_create(&th, NULL, configure_loop, &cf) == 0);
		m = mmap(NULL, info.status_size, PROT_READ, MAP_SHARED, cf.fd, 0);
		if (m != MAP_FAILED) {
			mapped++;
			probe(&w, m, info.status_size);
			munmap(m, info.status_size);
		} else {
			KT_EXPECT(errno == EINVAL);	/* only a resize could: none here */
		}
		pthread_join(th, NULL);
		close(cf.fd);
	}
	self = NULL;
	kt_diag("%ld rounds of %ld, %ld mapped", i, rounds, mapped);
	KT_EXPECT(mapped == i);
	KT_EXPECT(w.faults == 0);
	KT_EXPECT(w.bad_header == 0);
}

int main(int argc, char **argv)
{
	static const struct kt_case cases[] = {
		{ "threads", test_race },
		{ "mmap_vs_configure", test_mmap_vs_configure },
		{ NULL, NULL },
	};

	pg = sysconf(_SC_PAGESIZE);
	kt_require_device();
	param_watches = (uint32_t)kt_param("max_watches");
	param_ring = (uint32_t)kt_param("ring_entries");
	if (param_watches < 601 || !param_ring)
		kt_skip_all("needs max_watches > 600 (the default)");
	kt_add_suite("kmod_race", NULL, NULL, cases);
	return kt_main(argc, argv);
}
