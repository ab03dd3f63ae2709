// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_inval.c - the invalidation battery of regcache.ko.
 *
 * Every case watches a target range and, in a separate mapping, an
 * unrelated range, then changes the target's memory in one particular way.
 * It asserts, right after the syscall returns (no sleep, no read first):
 * the target's slot word is inactive with generation + 1; exactly one
 * event with the target's cookie, range and reason; the unrelated slot is
 * unchanged and no event names it.  Cases that must NOT invalidate assert
 * the slot word is still the one WATCH returned.
 *
 * Ranges are "pinned" by touching them (populated, as a registration
 * would leave them); the fork_pinned_* cases use a real long-term pin, an
 * io_uring fixed buffer (FOLL_LONGTERM, the pin ibv_reg_mr makes), and skip
 * where io_uring is not available.  The mprotect
 * and fork cases check the opposite outcome when the module runs strict=1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* mremap */
#endif
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>


#include "kt_harness.h"
#include "test_kmod_util.h"

#define COOKIE_TARGET	0x7a7a000000000001ULL
#define COOKIE_OTHER	0x7a7a000000000002ULL
#define COOKIE_UNREL	0xdeadbeef00000000ULL

static long pg;
static struct kt_ctx c;
static char *unrel;
static uint32_t unrel_slot;
static uint64_t unrel_word;
/* strict=1: fork write-protects every COW mapping, the unrelated one too */
static bool unrel_may_change;

static int battery_init(void)
{
	if (kt_open(&c, 0, true))
		return -1;
	unrel = kt_map_pages(2);
	if (!unrel)
		return -1;
	return kt_watch(&c, unrel, 2 * pg, COOKIE_UNREL, 2 * pg, &unrel_slot, &unrel_word);
}

static int battery_cleanup(void)
{
	kt_close(&c);
	munmap(unrel, 2 * pg);
	return 0;
}

static struct regcache_event evs[64];
static int nev;

/* Drain the ring; the unrelated watch must never show up. */
static void drain(void)
{
	int n;

	nev = 0;
	while ((n = kt_read_events(&c, evs + nev, 64 - nev)) > 0)
		nev += n;
	KT_EXPECT(n == -EAGAIN || nev == 64);
	if (unrel_may_change)
		return;
	KT_EXPECT(kt_find_event(evs, nev, COOKIE_UNREL) < 0);
	KT_EXPECT(kt_slot(&c, unrel_slot) == unrel_word);
}

static void about_to_fork(void)
{
	unrel_may_change = c.info.strict;
}

struct target {
	char *addr;
	size_t len;
	uint64_t cookie;
	uint32_t slot;
	uint64_t word;
};

static int watch_target(struct target *t, void *addr, size_t len, uint64_t cookie)
{
	t->addr = addr;
	t->len = len;
	t->cookie = cookie;
	return kt_watch(&c, addr, len, cookie, len, &t->slot, &t->word);
}

/* The slot changed by the time the syscall returned. */
static void assert_slot_changed(const struct target *t)
{
	uint64_t now = kt_slot(&c, t->slot);

	KT_EXPECT(!(now & REGCACHE_SLOT_ACTIVE));
	KT_EXPECT((now & REGCACHE_SLOT_GEN_MASK) == (t->word & REGCACHE_SLOT_GEN_MASK) + 1);
}

/* One event for t, covering [ia, ia + il), with the given reason. */
static void assert_event(const struct target *t, uint32_t reason, const char *ia, size_t il)
{
	const struct regcache_event *e;
	int i = kt_find_event(evs, nev, t->cookie);

	KT_ASSERT(i >= 0);
	e = &evs[i];
	KT_EXPECT(kt_find_event(evs + i + 1, nev - i - 1, t->cookie) < 0);
	KT_EXPECT(e->addr == (uintptr_t)t->addr);
	KT_EXPECT(e->len == t->len);
	KT_EXPECT(e->slot == t->slot);
	KT_EXPECT(e->slot_word == kt_slot(&c, t->slot));
	if (reason)
		KT_EXPECT(e->reason == reason);
	if (ia) {
		KT_EXPECT(e->inval_addr == (uintptr_t)ia);
		KT_EXPECT(e->inval_len == il);
	}
	if (e->reason != reason && reason)
		kt_diag("cookie %llx: reason %u, expected %u", (unsigned long long)t->cookie,
			e->reason, reason);
}

static void assert_unchanged(const struct target *t)
{
	KT_EXPECT(kt_slot(&c, t->slot) == t->word);
	KT_EXPECT(kt_find_event(evs, nev, t->cookie) < 0);
}

static void finish(void)
{
	unrel_may_change = false;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_UNWATCH_ALL, NULL) == 0);
	KT_EXPECT(kt_watch(&c, unrel, 2 * pg, COOKIE_UNREL, 2 * pg, &unrel_slot, &unrel_word) == 0);
	KT_EXPECT(kt_flush(&c) == 0);
}

static void test_munmap_whole(void)
{
	struct target t;
	char *p = kt_map_pages(4);

	KT_ASSERT(p && watch_target(&t, p, 4 * pg, COOKIE_TARGET) == 0);
	KT_EXPECT(munmap(p, 4 * pg) == 0);
	assert_slot_changed(&t);
	drain();
	KT_EXPECT(nev == 1);
	assert_event(&t, REGCACHE_REASON_UNMAP, p, 4 * pg);
	finish();
}

static void test_munmap_middle(void)
{
	struct target t;
	char *p = kt_map_pages(3);

	KT_ASSERT(p && watch_target(&t, p, 3 * pg, COOKIE_TARGET) == 0);
	KT_EXPECT(munmap(p + pg, pg) == 0);
	assert_slot_changed(&t);
	drain();
	assert_event(&t, REGCACHE_REASON_UNMAP, p + pg, pg);
	/* one event per watch: unmapping the rest adds nothing */
	KT_EXPECT(munmap(p, 3 * pg) == 0);
	drain();
	KT_EXPECT(nev == 0);
	finish();
}

static void test_munmap_spanning(void)
{
	struct target a, b;
	char *p = kt_map_pages(4);

	KT_ASSERT(p && watch_target(&a, p, 2 * pg, COOKIE_TARGET) == 0);
	KT_ASSERT(watch_target(&b, p + 2 * pg, 2 * pg, COOKIE_OTHER) == 0);
	KT_EXPECT(munmap(p + pg, 2 * pg) == 0);
	assert_slot_changed(&a);
	assert_slot_changed(&b);
	drain();
	KT_EXPECT(nev == 2);
	assert_event(&a, REGCACHE_REASON_UNMAP, p + pg, pg);
	assert_event(&b, REGCACHE_REASON_UNMAP, p + 2 * pg, pg);
	munmap(p, 4 * pg);
	finish();
}

static void test_mremap_move(void)
{
	struct target t;
	char *p = kt_map_pages(2), *dst = kt_map_pages(2), *q;

	KT_ASSERT(p && dst && watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	q = mremap(p, 2 * pg, 2 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	KT_ASSERT(q == dst);
	assert_slot_changed(&t);
	drain();
	assert_event(&t, REGCACHE_REASON_UNMAP, NULL, 0);
	munmap(q, 2 * pg);
	finish();
}

static void test_mremap_shrink(void)
{
	struct target head, tail;
	char *p = kt_map_pages(4);

	KT_ASSERT(p && watch_target(&head, p, 2 * pg, COOKIE_OTHER) == 0);
	KT_ASSERT(watch_target(&tail, p + 2 * pg, 2 * pg, COOKIE_TARGET) == 0);
	KT_ASSERT(mremap(p, 4 * pg, 2 * pg, 0) == p);
	assert_slot_changed(&tail);
	drain();
	assert_event(&tail, REGCACHE_REASON_UNMAP, p + 2 * pg, 2 * pg);
	assert_unchanged(&head);
	munmap(p, 2 * pg);
	finish();
}

static void test_mremap_grow(void)
{
	struct target t;
	char *p = kt_map_pages(4);

	/* free the two pages after the range so it can grow in place */
	KT_ASSERT(p && munmap(p + 2 * pg, 2 * pg) == 0);
	KT_ASSERT(watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	KT_ASSERT(mremap(p, 2 * pg, 4 * pg, 0) == p);
	p[3 * pg] = 1;
	drain();
	assert_unchanged(&t);
	munmap(p, 4 * pg);
	finish();
}

static void test_map_fixed_over(void)
{
	struct target t;
	char *p = kt_map_pages(2), *q;

	KT_ASSERT(p && watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	q = mmap(p, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	KT_ASSERT(q == p);
	assert_slot_changed(&t);
	drain();
	assert_event(&t, REGCACHE_REASON_UNMAP, p, 2 * pg);
	munmap(p, 2 * pg);
	finish();
}

static void test_madv_dontneed(void)
{
	struct target t;
	char *p = kt_map_pages(4);

	KT_ASSERT(p && watch_target(&t, p, 4 * pg, COOKIE_TARGET) == 0);
	KT_EXPECT(madvise(p + pg, pg, MADV_DONTNEED) == 0);
	assert_slot_changed(&t);
	drain();
	assert_event(&t, REGCACHE_REASON_CLEAR, p + pg, pg);
	munmap(p, 4 * pg);
	finish();
}

static void test_free_malloc(void)
{
	size_t len = 1 << 20;
	struct target t;
	char *p;

	/* fixed threshold: a freed mmap'd chunk would otherwise raise it */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	p = malloc(len);
	KT_ASSERT(p != NULL);
	memset(p, 1, len);
	KT_ASSERT(watch_target(&t, p, len, COOKIE_TARGET) == 0);
	free(p);
	assert_slot_changed(&t);
	drain();
	assert_event(&t, REGCACHE_REASON_UNMAP, NULL, 0);
	finish();
}

static void test_brk_shrink(void)
{
	struct target keep, gone;
	char *base = sbrk(0), *r;
	size_t pad = (pg - ((uintptr_t)base % pg)) % pg;

	KT_ASSERT(sbrk(pad + 4 * pg) != (void *)-1);
	r = base + pad;
	memset(r, 1, 4 * pg);
	KT_ASSERT(watch_target(&keep, r, pg, COOKIE_OTHER) == 0);
	KT_ASSERT(watch_target(&gone, r + 2 * pg, 2 * pg, COOKIE_TARGET) == 0);
	KT_ASSERT(sbrk(-2 * pg) != (void *)-1);
	assert_slot_changed(&gone);
	drain();
	assert_event(&gone, REGCACHE_REASON_UNMAP, r + 2 * pg, 2 * pg);
	assert_unchanged(&keep);
	finish();
	sbrk(-(intptr_t)(pad + 2 * pg));
}

static void test_shmdt(void)
{
	struct target t;
	int id = shmget(IPC_PRIVATE, 2 * pg, IPC_CREAT | 0600);
	char *p;

	KT_ASSERT(id >= 0);
	p = shmat(id, NULL, 0);
	shmctl(id, IPC_RMID, NULL);
	KT_ASSERT(p != (void *)-1);
	memset(p, 1, 2 * pg);
	KT_ASSERT(watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	KT_EXPECT(shmdt(p) == 0);
	assert_slot_changed(&t);
	drain();
	assert_event(&t, REGCACHE_REASON_UNMAP, p, 2 * pg);
	finish();
}

static void test_file_shared(void)
{
	char path[] = "/tmp/kmod_inval_XXXXXX";
	struct target t;
	int fd = mkstemp(path);
	char *p;

	KT_ASSERT(fd >= 0);
	unlink(path);
	KT_ASSERT(ftruncate(fd, 2 * pg) == 0);
	p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	KT_ASSERT(p != MAP_FAILED);
	memset(p, 1, 2 * pg);
	KT_ASSERT(watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	KT_EXPECT(munmap(p, 2 * pg) == 0);
	assert_slot_changed(&t);
	drain();
	assert_event(&t, REGCACHE_REASON_UNMAP, p, 2 * pg);
	finish();
}

/* fork, let the child exit; with strict=0 fork's write-protect is ignored. */
static void test_fork_child_exits(void)
{
	struct target t;
	char *p = kt_map_pages(2);
	pid_t pid;
	int st;

	KT_ASSERT(p && watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	about_to_fork();
	pid = fork();
	KT_ASSERT(pid >= 0);
	if (!pid)
		_exit(p[0] == 1 ? 0 : 1);
	KT_EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	drain();
	if (c.info.strict) {
		assert_slot_changed(&t);
		assert_event(&t, REGCACHE_REASON_PROTECTION, NULL, 0);
	} else {
		assert_unchanged(&t);
		/*
		 * The child is gone, so the write normally reuses the page
		 * and nothing changes.  But the kernel reuses an anonymous
		 * page only if nothing else holds a reference to it at that
		 * instant (an LRU batch, a migration or compaction scan); else
		 * it copies the page (seen once on 7.3 under TCG, in a CI
		 * run), or a migration may move
		 * it, and the watch must then say exactly that: one event
		 * naming this page (CLEAR for the copy).
		 */
		p[0] = 2;
		drain();
		if (kt_slot(&c, t.slot) == t.word) {
			assert_unchanged(&t);
		} else {
			int i = kt_find_event(evs, nev, t.cookie);

			kt_diag("the page changed under the write (another reference at the fault): event reason %d",
				i >= 0 ? (int)evs[i].reason : -1);
			assert_slot_changed(&t);
			assert_event(&t, 0, p, pg);
		}
	}
	munmap(p, 2 * pg);
	finish();
}

/* fork; the parent writes to a COW page while the child lives: new page. */
static void test_fork_parent_writes(void)
{
	struct target t;
	char *p = kt_map_pages(2);
	int pfd[2];
	pid_t pid;
	char ch;
	int st;

	KT_ASSERT(p && pipe(pfd) == 0);
	KT_ASSERT(watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	about_to_fork();
	pid = fork();
	KT_ASSERT(pid >= 0);
	if (!pid) {
		close(pfd[1]);
		if (read(pfd[0], &ch, 1) < 0)
			_exit(2);
		_exit(p[pg] == 1 ? 0 : 1);	/* the child still sees the old data */
	}
	close(pfd[0]);
	if (!c.info.strict) {
		drain();
		assert_unchanged(&t);
	}
	p[pg] = 5;
	assert_slot_changed(&t);
	drain();
	assert_event(&t, c.info.strict ? REGCACHE_REASON_PROTECTION : REGCACHE_REASON_CLEAR,
		     c.info.strict ? NULL : p + pg, pg);
	KT_EXPECT(write(pfd[1], "x", 1) == 1);
	close(pfd[1]);
	KT_EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	munmap(p, 2 * pg);
	finish();
}

/*
 * A range pinned long-term (kt_pin: FOLL_LONGTERM, as ibv_reg_mr pins): at fork the kernel copies
 * pinned anonymous pages into the child instead of write-protecting the
 * parent's, so neither the child's exit nor a parent write changes the
 * parent's pages - and the module must not say they changed.
 */
static void fork_pinned(bool write_while_child_lives)
{
	struct target t;
	char *p = kt_map_pages(4);
	int pfd[2], pin;
	pid_t pid;
	char ch;
	int st;

	KT_ASSERT(p && pipe(pfd) == 0);
	KT_ASSERT(watch_target(&t, p, 4 * pg, COOKIE_TARGET) == 0);
	pin = kt_pin(p, 4 * pg);
	if (pin < 0) {
		kt_skip("no long-term pin (io_uring fixed buffer): %s", strerror(-pin));
		close(pfd[0]);
		close(pfd[1]);
		munmap(p, 4 * pg);
		finish();
		return;
	}
	about_to_fork();
	pid = fork();
	KT_ASSERT(pid >= 0);
	if (!pid) {
		close(pfd[1]);
		if (read(pfd[0], &ch, 1) < 0)
			_exit(2);
		_exit(0);
	}
	close(pfd[0]);
	if (write_while_child_lives)
		p[pg] = 7;
	KT_EXPECT(write(pfd[1], "x", 1) == 1);
	close(pfd[1]);
	KT_EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	p[2 * pg] = 8;
	drain();
	if (c.info.strict) {
		assert_slot_changed(&t);
	} else {
		assert_unchanged(&t);
	}
	kt_unpin(pin);
	munmap(p, 4 * pg);
	finish();
}

static void test_fork_pinned_child_exits(void)
{
	fork_pinned(false);
}

static void test_fork_pinned_parent_writes(void)
{
	fork_pinned(true);
}

static void test_mprotect(void)
{
	struct target t;
	char *p = kt_map_pages(4);

	KT_ASSERT(p && watch_target(&t, p, 4 * pg, COOKIE_TARGET) == 0);
	KT_EXPECT(mprotect(p, 4 * pg, PROT_READ) == 0);
	KT_EXPECT(mprotect(p, 4 * pg, PROT_READ | PROT_WRITE) == 0);
	drain();
	if (c.info.strict) {
		assert_slot_changed(&t);
		assert_event(&t, REGCACHE_REASON_PROTECTION, NULL, 0);
	} else {
		assert_unchanged(&t);
	}
	munmap(p, 4 * pg);
	finish();
}

static void test_io_uring_madvise(void)
{
	struct target t;
	char *p = kt_map_pages(2);
	int ret, res;

	KT_ASSERT(p != NULL);
	KT_ASSERT(watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	ret = kt_uring_madvise(p, 2 * pg, MADV_DONTNEED, &res);
	if (ret) {
		kt_skip("io_uring: %s", strerror(-ret));
		munmap(p, 2 * pg);
		finish();
		return;
	}
	ret = res;
	if (ret == -EINVAL || ret == -EOPNOTSUPP) {
		kt_skip("IORING_OP_MADVISE unsupported: %s", strerror(-ret));
	} else {
		KT_EXPECT(ret == 0);
		assert_slot_changed(&t);
		drain();
		assert_event(&t, REGCACHE_REASON_CLEAR, p, 2 * pg);
	}
	munmap(p, 2 * pg);
	finish();
}

/*
 * Many rounds: the change is visible the moment munmap returns.
 * KMOD_INVAL_ROUNDS (2000): the debug kernel's suites ask for fewer, each
 * round there costing 35 ms of KASAN and lockdep (70 s for the 2000).
 */
static void test_visible_on_return(void)
{
	long i, rounds = kt_env_long("KMOD_INVAL_ROUNDS", 2000, 1, 10000000);
	int late = 0;
	struct target t;
	char *p;

	for (i = 0; i < rounds; i++) {
		p = kt_map_pages(1);
		KT_ASSERT(p && watch_target(&t, p, pg, i) == 0);
		munmap(p, pg);
		if (kt_slot(&c, t.slot) & REGCACHE_SLOT_ACTIVE)
			late++;
		KT_EXPECT(kt_unwatch(&c, t.slot, i) == 0);
	}
	KT_EXPECT(late == 0);
	KT_EXPECT(kt_flush(&c) == 0);
	KT_EXPECT(kt_slot(&c, unrel_slot) == unrel_word);
}

/*
 * A process exits with live watches.  (a) It keeps the fd to itself: the
 * exit tears everything down.  (b) It handed the fd to us first: the fd
 * outlives the mm, every watch got its RELEASE invalidation, and closing
 * the fd frees the rest.
 */
static void test_exit_with_watches(void)
{
	long long base_ctx = kt_sysfs("nr_contexts"), base_w = kt_sysfs("watches");
	long long base_pin = kt_sysfs("pinned_bytes");
	long long w = -1, ev = -1, owner = -1;
	int sv[2], fd, st, i;
	pid_t pid;

	about_to_fork();
	for (i = 0; i < 2; i++) {
		KT_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		pid = fork();
		KT_ASSERT(pid >= 0);
		if (!pid) {
			struct kt_ctx cc;
			char *p = kt_map_pages(64);
			int k;

			if (!p || kt_open(&cc, 0, true))
				_exit(1);
			for (k = 0; k < 64; k++)
				if (kt_watch(&cc, p + k * pg, pg, k, pg, NULL, NULL))
					_exit(2);
			if (i == 1 && kt_send_fd(sv[1], cc.fd))
				_exit(3);
			_exit(0);	/* no close, no unwatch */
		}
		close(sv[1]);
		fd = i == 1 ? kt_recv_fd(sv[0]) : -1;
		KT_EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
		close(sv[0]);
		if (i == 1) {
			KT_ASSERT(fd >= 0);
			/* the opener is gone: 0, not a number another process may have now */
			KT_EXPECT(kt_fdinfo(fd, "pid", &owner) == 0);
			KT_EXPECT(owner == 0);
			KT_EXPECT(kt_fdinfo(fd, "watches", &w) == 0);
			KT_EXPECT(kt_fdinfo(fd, "events", &ev) == 0);
			KT_EXPECT(w == 64);
			KT_EXPECT(ev == 64);	/* one RELEASE per watch */
			KT_EXPECT(kt_sysfs("watches") == base_w + 64);
			KT_EXPECT(ioctl(fd, REGCACHE_IOC_UNWATCH_ALL) == -1 && errno == EIO);
			close(fd);
		}
		KT_EXPECT(kt_sysfs("nr_contexts") == base_ctx);
		KT_EXPECT(kt_sysfs("watches") == base_w);
		KT_EXPECT(kt_sysfs("pinned_bytes") == base_pin);
	}
	drain();
	finish();
}

int main(int argc, char **argv)
{
	static const struct kt_case cases[] = {
		{ "munmap_whole", test_munmap_whole },
		{ "munmap_middle_page", test_munmap_middle },
		{ "munmap_spanning_two", test_munmap_spanning },
		{ "mremap_move", test_mremap_move },
		{ "mremap_shrink", test_mremap_shrink },
		{ "mremap_grow_in_place", test_mremap_grow },
		{ "map_fixed_over", test_map_fixed_over },
		{ "madv_dontneed", test_madv_dontneed },
		{ "free_large_malloc", test_free_malloc },
		{ "brk_shrink", test_brk_shrink },
		{ "shmdt", test_shmdt },
		{ "file_shared_munmap", test_file_shared },
		{ "fork_child_exits", test_fork_child_exits },
		{ "fork_parent_writes_cow", test_fork_parent_writes },
		{ "fork_pinned_child_exits", test_fork_pinned_child_exits },
		{ "fork_pinned_parent_writes", test_fork_pinned_parent_writes },
		{ "mprotect", test_mprotect },
		{ "io_uring_madvise", test_io_uring_madvise },
		{ "visible_on_munmap_return", test_visible_on_return },
		{ "exit_with_live_watches", test_exit_with_watches },
		{ NULL, NULL },
	};

	pg = sysconf(_SC_PAGESIZE);
	kt_require_device();
	kt_add_suite("kmod_inval", battery_init, battery_cleanup, cases);
	return kt_main(argc, argv);
}
