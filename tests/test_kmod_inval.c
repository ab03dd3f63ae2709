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
 * would leave them); the fork_pinned_* cases use a real pin, ibv_reg_mr on
 * the guest's rxe device, and skip without an RDMA device.  The mprotect
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

#include <infiniband/verbs.h>
#include <liburing.h>

#include "rc_test.h"
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
	CU_ASSERT(n == -EAGAIN || nev == 64);
	if (unrel_may_change)
		return;
	CU_ASSERT(kt_find_event(evs, nev, COOKIE_UNREL) < 0);
	CU_ASSERT(kt_slot(&c, unrel_slot) == unrel_word);
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

	CU_ASSERT(!(now & REGCACHE_SLOT_ACTIVE));
	CU_ASSERT((now & REGCACHE_SLOT_GEN_MASK) == (t->word & REGCACHE_SLOT_GEN_MASK) + 1);
}

/* One event for t, covering [ia, ia + il), with the given reason. */
static void assert_event(const struct target *t, uint32_t reason, const char *ia, size_t il)
{
	const struct regcache_event *e;
	int i = kt_find_event(evs, nev, t->cookie);

	CU_ASSERT_FATAL(i >= 0);
	e = &evs[i];
	CU_ASSERT(kt_find_event(evs + i + 1, nev - i - 1, t->cookie) < 0);
	CU_ASSERT(e->addr == (uintptr_t)t->addr);
	CU_ASSERT(e->len == t->len);
	CU_ASSERT(e->slot == t->slot);
	CU_ASSERT(e->slot_word == kt_slot(&c, t->slot));
	if (reason)
		CU_ASSERT(e->reason == reason);
	if (ia) {
		CU_ASSERT(e->inval_addr == (uintptr_t)ia);
		CU_ASSERT(e->inval_len == il);
	}
	if (e->reason != reason && reason)
		rc_diag("cookie %llx: reason %u, expected %u", (unsigned long long)t->cookie,
			e->reason, reason);
}

static void assert_unchanged(const struct target *t)
{
	CU_ASSERT(kt_slot(&c, t->slot) == t->word);
	CU_ASSERT(kt_find_event(evs, nev, t->cookie) < 0);
}

static void finish(void)
{
	unrel_may_change = false;
	CU_ASSERT(kt_ioctl(c.fd, REGCACHE_IOC_UNWATCH_ALL, NULL) == 0);
	CU_ASSERT(kt_watch(&c, unrel, 2 * pg, COOKIE_UNREL, 2 * pg, &unrel_slot, &unrel_word) == 0);
	CU_ASSERT(kt_flush(&c) == 0);
}

static void test_munmap_whole(void)
{
	struct target t;
	char *p = kt_map_pages(4);

	CU_ASSERT_FATAL(p && watch_target(&t, p, 4 * pg, COOKIE_TARGET) == 0);
	CU_ASSERT(munmap(p, 4 * pg) == 0);
	assert_slot_changed(&t);
	drain();
	CU_ASSERT(nev == 1);
	assert_event(&t, REGCACHE_REASON_UNMAP, p, 4 * pg);
	finish();
}

static void test_munmap_middle(void)
{
	struct target t;
	char *p = kt_map_pages(3);

	CU_ASSERT_FATAL(p && watch_target(&t, p, 3 * pg, COOKIE_TARGET) == 0);
	CU_ASSERT(munmap(p + pg, pg) == 0);
	assert_slot_changed(&t);
	drain();
	assert_event(&t, REGCACHE_REASON_UNMAP, p + pg, pg);
	/* one event per watch: unmapping the rest adds nothing */
	CU_ASSERT(munmap(p, 3 * pg) == 0);
	drain();
	CU_ASSERT(nev == 0);
	finish();
}

static void test_munmap_spanning(void)
{
	struct target a, b;
	char *p = kt_map_pages(4);

	CU_ASSERT_FATAL(p && watch_target(&a, p, 2 * pg, COOKIE_TARGET) == 0);
	CU_ASSERT_FATAL(watch_target(&b, p + 2 * pg, 2 * pg, COOKIE_OTHER) == 0);
	CU_ASSERT(munmap(p + pg, 2 * pg) == 0);
	assert_slot_changed(&a);
	assert_slot_changed(&b);
	drain();
	CU_ASSERT(nev == 2);
	assert_event(&a, REGCACHE_REASON_UNMAP, p + pg, pg);
	assert_event(&b, REGCACHE_REASON_UNMAP, p + 2 * pg, pg);
	munmap(p, 4 * pg);
	finish();
}

static void test_mremap_move(void)
{
	struct target t;
	char *p = kt_map_pages(2), *dst = kt_map_pages(2), *q;

	CU_ASSERT_FATAL(p && dst && watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	q = mremap(p, 2 * pg, 2 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	CU_ASSERT_FATAL(q == dst);
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

	CU_ASSERT_FATAL(p && watch_target(&head, p, 2 * pg, COOKIE_OTHER) == 0);
	CU_ASSERT_FATAL(watch_target(&tail, p + 2 * pg, 2 * pg, COOKIE_TARGET) == 0);
	CU_ASSERT_FATAL(mremap(p, 4 * pg, 2 * pg, 0) == p);
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
	CU_ASSERT_FATAL(p && munmap(p + 2 * pg, 2 * pg) == 0);
	CU_ASSERT_FATAL(watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	CU_ASSERT_FATAL(mremap(p, 2 * pg, 4 * pg, 0) == p);
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

	CU_ASSERT_FATAL(p && watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	q = mmap(p, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CU_ASSERT_FATAL(q == p);
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

	CU_ASSERT_FATAL(p && watch_target(&t, p, 4 * pg, COOKIE_TARGET) == 0);
	CU_ASSERT(madvise(p + pg, pg, MADV_DONTNEED) == 0);
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
	CU_ASSERT_FATAL(p != NULL);
	memset(p, 1, len);
	CU_ASSERT_FATAL(watch_target(&t, p, len, COOKIE_TARGET) == 0);
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

	CU_ASSERT_FATAL(sbrk(pad + 4 * pg) != (void *)-1);
	r = base + pad;
	memset(r, 1, 4 * pg);
	CU_ASSERT_FATAL(watch_target(&keep, r, pg, COOKIE_OTHER) == 0);
	CU_ASSERT_FATAL(watch_target(&gone, r + 2 * pg, 2 * pg, COOKIE_TARGET) == 0);
	CU_ASSERT_FATAL(sbrk(-2 * pg) != (void *)-1);
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

	CU_ASSERT_FATAL(id >= 0);
	p = shmat(id, NULL, 0);
	shmctl(id, IPC_RMID, NULL);
	CU_ASSERT_FATAL(p != (void *)-1);
	memset(p, 1, 2 * pg);
	CU_ASSERT_FATAL(watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	CU_ASSERT(shmdt(p) == 0);
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

	CU_ASSERT_FATAL(fd >= 0);
	unlink(path);
	CU_ASSERT_FATAL(ftruncate(fd, 2 * pg) == 0);
	p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	CU_ASSERT_FATAL(p != MAP_FAILED);
	memset(p, 1, 2 * pg);
	CU_ASSERT_FATAL(watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	CU_ASSERT(munmap(p, 2 * pg) == 0);
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

	CU_ASSERT_FATAL(p && watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	about_to_fork();
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid)
		_exit(p[0] == 1 ? 0 : 1);
	CU_ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
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
		 * it copies the page (seen once on 7.3 under TCG, in the
		 * notifier=context pass of a CI run), or a migration may move
		 * it, and the watch must then say exactly that: one event
		 * naming this page (CLEAR for the copy).
		 */
		p[0] = 2;
		drain();
		if (kt_slot(&c, t.slot) == t.word) {
			assert_unchanged(&t);
		} else {
			int i = kt_find_event(evs, nev, t.cookie);

			rc_diag("the page changed under the write (another reference at the fault): event reason %d",
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

	CU_ASSERT_FATAL(p && pipe(pfd) == 0);
	CU_ASSERT_FATAL(watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	about_to_fork();
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
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
	CU_ASSERT(write(pfd[1], "x", 1) == 1);
	close(pfd[1]);
	CU_ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	munmap(p, 2 * pg);
	finish();
}

static struct ibv_context *ibctx;
static struct ibv_pd *ibpd;

static bool have_rdma(void)
{
	struct ibv_device **list;
	int n;

	if (ibpd)
		return true;
	list = ibv_get_device_list(&n);
	if (!list)
		return false;
	if (n > 0)
		ibctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (ibctx)
		ibpd = ibv_alloc_pd(ibctx);
	return ibpd != NULL;
}

/*
 * A range pinned by ibv_reg_mr (FOLL_LONGTERM): at fork the kernel copies
 * pinned anonymous pages into the child instead of write-protecting the
 * parent's, so neither the child's exit nor a parent write changes the
 * parent's pages - and the module must not say they changed.
 */
static void fork_pinned(bool write_while_child_lives)
{
	struct ibv_mr *mr;
	struct target t;
	char *p = kt_map_pages(4);
	int pfd[2];
	pid_t pid;
	char ch;
	int st;

	if (!have_rdma()) {
		rc_skip("no RDMA device for a real pin (ibv_reg_mr)");
		munmap(p, 4 * pg);
		return;
	}
	CU_ASSERT_FATAL(p && pipe(pfd) == 0);
	CU_ASSERT_FATAL(watch_target(&t, p, 4 * pg, COOKIE_TARGET) == 0);
	mr = ibv_reg_mr(ibpd, p, 4 * pg, IBV_ACCESS_LOCAL_WRITE);
	CU_ASSERT_FATAL(mr != NULL);
	about_to_fork();
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid) {
		close(pfd[1]);
		if (read(pfd[0], &ch, 1) < 0)
			_exit(2);
		_exit(0);
	}
	close(pfd[0]);
	if (write_while_child_lives)
		p[pg] = 7;
	CU_ASSERT(write(pfd[1], "x", 1) == 1);
	close(pfd[1]);
	CU_ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	p[2 * pg] = 8;
	drain();
	if (c.info.strict) {
		assert_slot_changed(&t);
	} else {
		assert_unchanged(&t);
	}
	CU_ASSERT(ibv_dereg_mr(mr) == 0);
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

	CU_ASSERT_FATAL(p && watch_target(&t, p, 4 * pg, COOKIE_TARGET) == 0);
	CU_ASSERT(mprotect(p, 4 * pg, PROT_READ) == 0);
	CU_ASSERT(mprotect(p, 4 * pg, PROT_READ | PROT_WRITE) == 0);
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
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	struct target t;
	char *p = kt_map_pages(2);
	int ret;

	CU_ASSERT_FATAL(p != NULL);
	ret = io_uring_queue_init(4, &ring, 0);
	if (ret) {
		rc_skip("io_uring_queue_init: %s", strerror(-ret));
		munmap(p, 2 * pg);
		return;
	}
	CU_ASSERT_FATAL(watch_target(&t, p, 2 * pg, COOKIE_TARGET) == 0);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_madvise(sqe, p, 2 * pg, MADV_DONTNEED);
	CU_ASSERT(io_uring_submit(&ring) == 1);
	CU_ASSERT_FATAL(io_uring_wait_cqe(&ring, &cqe) == 0);
	ret = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	if (ret == -EINVAL || ret == -EOPNOTSUPP) {
		rc_skip("IORING_OP_MADVISE unsupported: %s", strerror(-ret));
	} else {
		CU_ASSERT(ret == 0);
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
	long i, rounds = rc_env_long("KMOD_INVAL_ROUNDS", 2000, 1, 10000000);
	int late = 0;
	struct target t;
	char *p;

	for (i = 0; i < rounds; i++) {
		p = kt_map_pages(1);
		CU_ASSERT_FATAL(p && watch_target(&t, p, pg, i) == 0);
		munmap(p, pg);
		if (kt_slot(&c, t.slot) & REGCACHE_SLOT_ACTIVE)
			late++;
		CU_ASSERT(kt_unwatch(&c, t.slot, i) == 0);
	}
	CU_ASSERT(late == 0);
	CU_ASSERT(kt_flush(&c) == 0);
	CU_ASSERT(kt_slot(&c, unrel_slot) == unrel_word);
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
		CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		pid = fork();
		CU_ASSERT_FATAL(pid >= 0);
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
		CU_ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
		close(sv[0]);
		if (i == 1) {
			CU_ASSERT_FATAL(fd >= 0);
			CU_ASSERT(kt_fdinfo(fd, "pid", &owner) == 0);
			CU_ASSERT(owner == pid);
			CU_ASSERT(kt_fdinfo(fd, "watches", &w) == 0);
			CU_ASSERT(kt_fdinfo(fd, "events", &ev) == 0);
			CU_ASSERT(w == 64);
			CU_ASSERT(ev == 64);	/* one RELEASE per watch */
			CU_ASSERT(kt_sysfs("watches") == base_w + 64);
			CU_ASSERT(ioctl(fd, REGCACHE_IOC_UNWATCH_ALL) == -1 && errno == EIO);
			close(fd);
		}
		CU_ASSERT(kt_sysfs("nr_contexts") == base_ctx);
		CU_ASSERT(kt_sysfs("watches") == base_w);
		CU_ASSERT(kt_sysfs("pinned_bytes") == base_pin);
	}
	drain();
	finish();
}

int main(int argc, char **argv)
{
	static const struct rc_test_case cases[] = {
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
	rc_add_suite("kmod_inval", battery_init, battery_cleanup, cases);
	return rc_test_main(argc, argv);
}
