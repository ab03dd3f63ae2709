// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_sem.c - the semantics of regcache.ko's ABI 2 that a
 * maintainer asked for: FLUSH with the count of events seen (the race an
 * argument-less FLUSH lost), event records that carry their size and
 * sequence, a failed WATCH that leaves CONFIGURE open, strictness chosen
 * per context, a stream fd, the status mapping (re-faulted after
 * MADV_DONTNEED, never inherited even after MADV_DOFORK, never
 * executable, never pinned by GUP), fdinfo (its pid as the reader's pid
 * namespace names it), an fd inherited across exec, and a FLUSH that a
 * signal frees while read() is stuck in a userfaultfd fault.  Needs root
 * and regcache.ko.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* process_vm_readv */
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt_harness.h"
#include "test_kmod_util.h"

static long pg;

/* Open a context with a ring of 'ring' entries and strictness 'strict'. */
static int open_cfg(struct kt_ctx *c, uint32_t ring, uint32_t strict)
{
	struct regcache_config cfg;
	void *m;
	int ret;

	memset(c, 0, sizeof(*c));
	c->fd = open(REGCACHE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	memset(&cfg, 0, sizeof(cfg));
	cfg.ring_entries = ring;
	cfg.strict = strict;
	ret = kt_ioctl(c->fd, REGCACHE_IOC_CONFIGURE, &cfg);
	if (!ret)
		ret = kt_ioctl(c->fd, REGCACHE_IOC_GET_INFO, &c->info);
	if (ret) {
		close(c->fd);
		return ret;
	}
	m = mmap(NULL, c->info.status_size, PROT_READ, MAP_SHARED, c->fd, 0);
	if (m == MAP_FAILED) {
		ret = -errno;
		close(c->fd);
		return ret;
	}
	c->st = m;
	return 0;
}

static uint64_t events_total(const struct kt_ctx *c)
{
	return __atomic_load_n(&c->st->events_total, __ATOMIC_ACQUIRE);
}

/*
 * An event that arrives between "read events_total" and FLUSH survives
 * the FLUSH.  With ABI 1's FLUSH (drop everything) the event of B was
 * lost and nothing told the caller to look again.
 */
static void test_flush_keeps_later_event(void)
{
	struct regcache_event ev[4];
	struct kt_ctx c;
	char *p = kt_map_pages(2);
	uint64_t seen;
	int n;

	KT_ASSERT(p != NULL);
	KT_ASSERT(open_cfg(&c, 4, REGCACHE_STRICT_OFF) == 0);
	KT_ASSERT(kt_watch(&c, p, pg, 0xa, 0, NULL, NULL) == 0);
	KT_ASSERT(kt_watch(&c, p + pg, pg, 0xb, 0, NULL, NULL) == 0);
	KT_EXPECT(madvise(p, pg, MADV_DONTNEED) == 0);
	seen = events_total(&c);
	KT_EXPECT(seen == 1);
	/* ... the caller rescans its slot words here; meanwhile: */
	KT_EXPECT(madvise(p + pg, pg, MADV_DONTNEED) == 0);
	KT_EXPECT(kt_flush_upto(&c, seen) == 0);
	KT_EXPECT(c.st->events_pending == 1);
	n = kt_read_events(&c, ev, 4);
	KT_EXPECT(n == 1);
	if (n == 1) {
		KT_EXPECT(ev[0].cookie == 0xb);
		KT_EXPECT(ev[0].seq == 2);
		KT_EXPECT(ev[0].size == sizeof(ev[0]));
		KT_EXPECT(ev[0].flags == 0);
		KT_EXPECT(ev[0].reason == REGCACHE_REASON_CLEAR);
	}
	/* flushing what was seen is idempotent; the future cannot be flushed */
	KT_EXPECT(kt_flush_upto(&c, seen) == 0);
	KT_EXPECT(kt_flush_upto(&c, events_total(&c) + 1) == -EINVAL);
	kt_close(&c);
	munmap(p, 2 * pg);
}

/* An overflow after the count seen keeps OVERFLOW set through FLUSH. */
static void test_flush_keeps_later_overflow(void)
{
	struct regcache_event ev[2];
	struct kt_ctx c;
	char *p = kt_map_pages(3);
	uint64_t seen;

	KT_ASSERT(p != NULL);
	KT_ASSERT(open_cfg(&c, 1, REGCACHE_STRICT_OFF) == 0);
	KT_ASSERT(kt_watch(&c, p, pg, 1, 0, NULL, NULL) == 0);
	KT_ASSERT(kt_watch(&c, p + pg, pg, 2, 0, NULL, NULL) == 0);
	KT_ASSERT(kt_watch(&c, p + 2 * pg, pg, 3, 0, NULL, NULL) == 0);
	KT_EXPECT(madvise(p, pg, MADV_DONTNEED) == 0);		/* queued */
	KT_EXPECT(madvise(p + pg, pg, MADV_DONTNEED) == 0);	/* dropped */
	KT_EXPECT(c.st->flags & REGCACHE_STATUS_OVERFLOW);
	seen = events_total(&c);
	KT_EXPECT(seen == 2);
	/* during the rescan, one more is dropped */
	KT_EXPECT(madvise(p + 2 * pg, pg, MADV_DONTNEED) == 0);
	KT_EXPECT(kt_flush_upto(&c, seen) == 0);
	KT_EXPECT(c.st->flags & REGCACHE_STATUS_OVERFLOW);
	KT_EXPECT(c.st->events_pending == 0);
	KT_EXPECT(kt_read_events(&c, ev, 2) == -ENOSPC);
	KT_EXPECT(kt_flush_upto(&c, events_total(&c)) == 0);
	KT_EXPECT(!(c.st->flags & REGCACHE_STATUS_OVERFLOW));
	KT_EXPECT(kt_read_events(&c, ev, 2) == -EAGAIN);
	kt_close(&c);
	munmap(p, 3 * pg);
}

static void test_flush_bad_input(void)
{
	struct regcache_flush f;
	struct kt_ctx c;

	KT_ASSERT(kt_open(&c, 0, false) == 0);
	memset(&f, 0, sizeof(f));
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_FLUSH, &f) == 0);
	f.flags = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_FLUSH, &f) == -EINVAL);
	f.flags = 0;
	f.reserved0 = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_FLUSH, &f) == -EINVAL);
	f.reserved0 = 0;
	f.reserved[1] = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_FLUSH, &f) == -EINVAL);
	f.reserved[1] = 0;
	f.events_seen = 1;	/* nothing has happened yet */
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_FLUSH, &f) == -EINVAL);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_FLUSH, NULL) == -EFAULT);
	kt_close(&c);
}

/* Records are info.event_size long, numbered from 1 without gaps. */
static void test_event_records(void)
{
	struct regcache_event ev[8];
	struct kt_ctx c;
	char *p = kt_map_pages(5);
	int i, n;

	KT_ASSERT(p != NULL);
	KT_ASSERT(open_cfg(&c, 8, REGCACHE_STRICT_OFF) == 0);
	KT_EXPECT(c.info.event_size == sizeof(struct regcache_event));
	for (i = 0; i < 5; i++)
		KT_ASSERT(kt_watch(&c, p + i * pg, pg, 100 + i, 0, NULL, NULL) == 0);
	for (i = 0; i < 5; i++)
		KT_EXPECT(madvise(p + i * pg, pg, MADV_DONTNEED) == 0);
	/* a buffer for one and a half records returns one */
	KT_EXPECT(read(c.fd, ev, sizeof(ev[0]) + sizeof(ev[0]) / 2) ==
		  (ssize_t)sizeof(ev[0]));
	KT_EXPECT(ev[0].seq == 1 && ev[0].cookie == 100);
	n = kt_read_events(&c, ev, 8);
	KT_EXPECT(n == 4);
	for (i = 0; i < n; i++) {
		KT_EXPECT(ev[i].size == sizeof(ev[i]));
		KT_EXPECT(ev[i].flags == 0);
		KT_EXPECT(ev[i].seq == (uint64_t)i + 2);
		KT_EXPECT(ev[i].cookie == 101ULL + i);
	}
	kt_close(&c);
	munmap(p, 5 * pg);
}

/* A WATCH that fails does not freeze the context. */
static void test_failed_watch_configure(void)
{
	struct regcache_config cfg;
	struct kt_ctx c;
	char *p = kt_map_pages(1);

	KT_ASSERT(p != NULL);
	KT_ASSERT(kt_open(&c, 0, false) == 0);
	KT_EXPECT(munmap(p, pg) == 0);
	KT_EXPECT(kt_watch(&c, p, pg, 1, 0, NULL, NULL) == -ENOMEM);
	memset(&cfg, 0, sizeof(cfg));
	cfg.ring_entries = 8;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) == 0);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &c.info) == 0);
	KT_EXPECT(c.info.ring_entries == 8);
	kt_close(&c);
}

/* mprotect of a watched range, in contexts of each strictness. */
static void test_strict_per_context(void)
{
	struct kt_ctx on, off, def;
	struct regcache_event ev[2];
	char *p = kt_map_pages(1);
	uint32_t s_on, s_off, s_def;
	uint64_t w_on, w_off, w_def;
	long long param = kt_param("strict");

	KT_ASSERT(p != NULL && param >= 0);
	KT_ASSERT(open_cfg(&on, 0, REGCACHE_STRICT_ON) == 0);
	KT_ASSERT(open_cfg(&off, 0, REGCACHE_STRICT_OFF) == 0);
	KT_ASSERT(open_cfg(&def, 0, REGCACHE_STRICT_DEFAULT) == 0);
	KT_EXPECT(on.info.strict == 1);
	KT_EXPECT(off.info.strict == 0);
	KT_EXPECT(def.info.strict == (uint32_t)param);
	KT_EXPECT(kt_watch(&on, p, pg, 1, pg, &s_on, &w_on) == 0);
	KT_EXPECT(kt_watch(&off, p, pg, 2, pg, &s_off, &w_off) == 0);
	KT_EXPECT(kt_watch(&def, p, pg, 3, pg, &s_def, &w_def) == 0);
	KT_EXPECT(mprotect(p, pg, PROT_READ) == 0);
	KT_EXPECT(kt_slot(&on, s_on) != w_on);
	KT_EXPECT(kt_read_events(&on, ev, 2) == 1 &&
		  ev[0].reason == REGCACHE_REASON_PROTECTION);
	KT_EXPECT(kt_slot(&off, s_off) == w_off);
	KT_EXPECT(kt_read_events(&off, ev, 2) == -EAGAIN);
	KT_EXPECT((kt_slot(&def, s_def) != w_def) == (param == 1));
	/* frozen by the WATCH: strictness cannot change under a live range */
	{
		struct regcache_config cfg;

		memset(&cfg, 0, sizeof(cfg));
		cfg.strict = REGCACHE_STRICT_ON;
		KT_EXPECT(kt_ioctl(off.fd, REGCACHE_IOC_CONFIGURE, &cfg) == -EBUSY);
	}
	kt_close(&on);
	kt_close(&off);
	kt_close(&def);
	munmap(p, pg);
}

/* Records have no file position. */
static void test_stream(void)
{
	struct regcache_event ev;
	struct kt_ctx c;

	KT_ASSERT(kt_open(&c, 0, false) == 0);
	KT_EXPECT(lseek(c.fd, 0, SEEK_SET) == -1 && errno == ESPIPE);
	KT_EXPECT(pread(c.fd, &ev, sizeof(ev), 0) == -1 && errno == ESPIPE);
	kt_close(&c);
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* After MADV_DONTNEED the status area faults back in: no SIGBUS. */
static void test_status_dontneed(void)
{
	struct sigaction sa, old;
	struct kt_ctx c;
	char *p = kt_map_pages(1);
	uint32_t slot;
	uint64_t word;
	volatile uint32_t abi = 0;
	volatile uint64_t now = 0;

	KT_ASSERT(p != NULL);
	KT_ASSERT(kt_open(&c, 0, true) == 0);
	KT_ASSERT(kt_watch(&c, p, pg, 1, 0, &slot, &word) == 0);
	KT_EXPECT(madvise((void *)c.st, c.info.status_size, MADV_DONTNEED) == 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigaction(SIGBUS, &sa, &old);
	if (!sigsetjmp(bus_jmp, 1)) {
		abi = c.st->abi_version;
		now = kt_slot(&c, slot);
	}
	sigaction(SIGBUS, &old, NULL);
	KT_EXPECT(abi == REGCACHE_ABI_VERSION);
	KT_EXPECT(now == word);
	/* the re-faulted page is the live one */
	KT_EXPECT(munmap(p, pg) == 0);
	KT_EXPECT(kt_slot(&c, slot) != word);
	kt_close(&c);
}

/* MADV_DOFORK cannot undo VM_DONTCOPY: a child never has the area. */
static void test_status_dofork(void)
{
	struct kt_ctx c;
	pid_t pid;
	int st;

	KT_ASSERT(kt_open(&c, 0, true) == 0);
	KT_EXPECT(madvise((void *)c.st, c.info.status_size, MADV_DOFORK) == -1 &&
		  errno == EINVAL);
	pid = fork();
	KT_ASSERT(pid >= 0);
	if (!pid) {
		/* msync of an unmapped range is ENOMEM */
		_exit(msync((void *)c.st, c.info.status_size, MS_ASYNC) == -1 &&
		      errno == ENOMEM ? 0 : 1);
	}
	KT_EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	kt_close(&c);
}

/* Never executable, and GUP (here process_vm_readv) cannot reach it. */
static void test_status_noexec_nogup(void)
{
	struct iovec local, remote;
	struct kt_ctx c;
	char buf[64];
	void *m;

	KT_ASSERT(kt_open(&c, 0, false) == 0);
	m = mmap(NULL, c.info.status_size, PROT_READ | PROT_EXEC, MAP_SHARED, c.fd, 0);
	KT_EXPECT(m == MAP_FAILED && errno == EPERM);
	if (m != MAP_FAILED)
		munmap(m, c.info.status_size);
	m = mmap(NULL, c.info.status_size, PROT_READ, MAP_SHARED, c.fd, 0);
	KT_ASSERT(m != MAP_FAILED);
	KT_EXPECT(mprotect(m, c.info.status_size, PROT_READ | PROT_EXEC) == -1 &&
		  errno == EACCES);
	local.iov_base = buf;
	local.iov_len = sizeof(buf);
	remote.iov_base = m;
	remote.iov_len = sizeof(buf);
	KT_EXPECT(process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == -1 &&
		  errno == EFAULT);
	KT_EXPECT(((struct regcache_status *)m)->abi_version == REGCACHE_ABI_VERSION);
	munmap(m, c.info.status_size);
	kt_close(&c);
}

/* fdinfo describes the context: one "regcache-KEY:\tvalue" per line. */
static void test_fdinfo(void)
{
	long long v;
	struct kt_ctx c;
	char *p = kt_map_pages(2);

	KT_ASSERT(p != NULL);
	KT_ASSERT(open_cfg(&c, 16, REGCACHE_STRICT_ON) == 0);
	KT_EXPECT(kt_watch(&c, p, pg, 1, pg, NULL, NULL) == 0);
	KT_EXPECT(kt_watch(&c, p + pg, pg, 2, 0, NULL, NULL) == 0);
	KT_EXPECT(kt_fdinfo(c.fd, "pid", &v) == 0 && v == getpid());
	KT_EXPECT(kt_fdinfo(c.fd, "watches", &v) == 0 && v == 2);
	KT_EXPECT(kt_fdinfo(c.fd, "max-watches", &v) == 0 && v == c.info.max_watches);
	KT_EXPECT(kt_fdinfo(c.fd, "declared-pinned-bytes", &v) == 0 && v == pg);
	KT_EXPECT(kt_fdinfo(c.fd, "mm-pinned-bytes", &v) == 0 && v >= 0);
	KT_EXPECT(kt_fdinfo(c.fd, "ring-entries", &v) == 0 && v == 16);
	KT_EXPECT(kt_fdinfo(c.fd, "strict", &v) == 0 && v == 1);
	KT_EXPECT(kt_fdinfo(c.fd, "events", &v) == 0 && v == 0);
	KT_EXPECT(munmap(p, 2 * pg) == 0);
	KT_EXPECT(kt_fdinfo(c.fd, "events", &v) == 0 && v == 2);
	KT_EXPECT(kt_fdinfo(c.fd, "pending", &v) == 0 && v == 2);
	KT_EXPECT(kt_fdinfo(c.fd, "overflows", &v) == 0 && v == 0);
	KT_EXPECT(kt_fdinfo(c.fd, "id", &v) == 0 && v > 0);
	/* kernel memory: at least the status area; the user's total is no less */
	KT_EXPECT(kt_fdinfo(c.fd, "bytes", &v) == 0 && v > (long long)c.info.status_size);
	KT_EXPECT(kt_fdinfo(c.fd, "user", &v) == 0 && v == (long long)geteuid());
	KT_EXPECT(kt_fdinfo(c.fd, "user-max-bytes", &v) == 0 && v == kt_param("max_user_bytes"));
	kt_close(&c);
}

/*
 * In a child pid namespace (pid 1 there), with a procfs of that
 * namespace: its own context's regcache-pid is 1 there and its global
 * number in the initial /proc; a context opened by a process outside the
 * namespace (inherited across fork) shows pid 0 there.  Exit status 0,
 * or the number of the check that failed.
 */
static int pidns_grandchild(int outside_fd)
{
	char dir[] = "/tmp/kt-pidns-XXXXXX", path[128], self[32];
	long long v;
	ssize_t n;
	int fd, ret = 0;

	if (getpid() != 1)
		return 2;
	if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return 3;
	if (!mkdtemp(dir))
		return 4;
	if (mount("proc", dir, "proc", 0, NULL)) {
		rmdir(dir);
		return 5;
	}
	fd = open(REGCACHE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ret = 6;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/self/fdinfo/%d", dir, fd);
	if (kt_fdinfo_path(path, "pid", &v) || v != 1)
		ret = 7;
	/* the initial namespace's /proc names our global pid */
	n = readlink("/proc/self", self, sizeof(self) - 1);
	if (n <= 0)
		ret = 8;
	else
		self[n] = '\0';
	if (!ret && (kt_fdinfo(fd, "pid", &v) || v != atoll(self) || v == 1))
		ret = 9;
	snprintf(path, sizeof(path), "%s/self/fdinfo/%d", dir, outside_fd);
	if (!ret && (kt_fdinfo_path(path, "pid", &v) || v != 0))
		ret = 10;
	close(fd);
out:
	umount(dir);
	rmdir(dir);
	return ret;
}

static void test_fdinfo_pid_namespace(void)
{
	struct kt_ctx c;
	pid_t pid;
	int st;

	/* not O_CLOEXEC: the grandchild inherits it */
	memset(&c, 0, sizeof(c));
	c.fd = open(REGCACHE_DEVICE_PATH, O_RDWR);
	KT_ASSERT(c.fd >= 0);
	pid = fork();
	KT_ASSERT(pid >= 0);
	if (!pid) {
		pid_t g;

		alarm(60);
		if (unshare(CLONE_NEWPID | CLONE_NEWNS))
			_exit(errno == EPERM || errno == EINVAL ? 77 : 1);
		g = fork();
		if (g < 0)
			_exit(1);
		if (!g)
			_exit(pidns_grandchild(c.fd));
		_exit(kt_reap(g));
	}
	st = kt_reap(pid);
	if (st == 77)
		kt_skip("no pid namespaces here (CONFIG_PID_NS)");
	else
		KT_EXPECT(st == 0);
	if (st && st != 77)
		kt_diag("pid namespace check %d failed", st);
	kt_close(&c);
}

/*
 * The fd survives exec (no O_CLOEXEC), the address space it watched does
 * not.  The new image (this program again, "--exec-child FD") gets -EIO
 * from everything, sees through fdinfo that the old mm's exit invalidated
 * the watch (RELEASE), and closes the fd; nothing is left behind.
 */
static int exec_child(int fd)
{
	struct regcache_info info;
	struct regcache_event ev;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	long long v;
	int bad = 0;

	memset(&info, 0, sizeof(info));
	if (ioctl(fd, REGCACHE_IOC_GET_INFO, &info) != -1 || errno != EIO)
		bad |= 1;
	if (mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, fd, 0) != MAP_FAILED ||
	    errno != EIO)
		bad |= 2;
	if (read(fd, &ev, sizeof(ev)) != -1 || errno != EIO)
		bad |= 4;
	if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLERR))
		bad |= 8;
	if (kt_fdinfo(fd, "pid", &v) || v != getpid())	/* exec keeps the pid */
		bad |= 16;
	if (kt_fdinfo(fd, "watches", &v) || v != 1)
		bad |= 32;
	if (kt_fdinfo(fd, "events", &v) || v != 1)	/* RELEASE of the old mm */
		bad |= 64;
	if (close(fd))
		bad |= 128;
	if (bad)
		fprintf(stderr, "exec child: failed checks 0x%x\n", bad);
	return bad ? 1 : 0;
}

static void test_exec_inherited_fd(void)
{
	long long base_c = kt_sysfs("nr_contexts"), base_w = kt_sysfs("watches");
	pid_t pid;
	int st;

	pid = fork();
	KT_ASSERT(pid >= 0);
	if (!pid) {
		char *p = kt_map_pages(1), arg[16];
		struct kt_ctx c;

		if (!p || kt_open(&c, 0, true))
			_exit(10);
		/* kt_open set O_CLOEXEC; this test is about an fd without it */
		if (fcntl(c.fd, F_SETFD, 0) || kt_watch(&c, p, pg, 1, pg, NULL, NULL))
			_exit(11);
		snprintf(arg, sizeof(arg), "%d", c.fd);
		execl("/proc/self/exe", "test_kmod_sem", "--exec-child", arg, (char *)NULL);
		_exit(12);
	}
	KT_EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	KT_EXPECT(WEXITSTATUS(st) == 0);
	if (WEXITSTATUS(st))
		kt_diag("exec child exit status %d", WEXITSTATUS(st));
	KT_EXPECT(kt_sysfs("nr_contexts") == base_c);
	KT_EXPECT(kt_sysfs("watches") == base_w);
}

struct stuck_call {
	int fd;
	void *buf;
	pthread_t th;
	int ret;		/* 0 or -errno; written before done */
	int done;		/* atomic */
};

static void *stuck_read(void *arg)
{
	struct stuck_call *r = arg;
	ssize_t n = read(r->fd, r->buf, sizeof(struct regcache_event));

	r->ret = n == (ssize_t)sizeof(struct regcache_event) ? 0 : n < 0 ? -errno : -EIO;
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *stuck_flush(void *arg)
{
	struct stuck_call *f = arg;
	struct regcache_flush fl = { .events_seen = 0 };

	f->ret = kt_ioctl(f->fd, REGCACHE_IOC_FLUSH, &fl);
	__atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static bool finished_within(const struct stuck_call *c, int ms)
{
	for (; ms > 0; ms -= 10) {
		if (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE))
			return true;
		usleep(10 * 1000);
	}
	return __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
}

static void on_usr1(int sig)
{
	(void)sig;
}

/*
 * read() holds the read mutex while it copies a record out; a userfaultfd
 * that nobody serves keeps it there as long as it likes.  A FLUSH from
 * another thread waits for that mutex, and must be interruptible: a
 * signal (no SA_RESTART) ends it with EINTR.  Then the fault is served
 * and the read completes.
 */
static void test_flush_interruptible(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	struct uffdio_zeropage zero = { 0 };
	struct sigaction sa = { .sa_handler = on_usr1 }, old;
	struct stuck_call r = { 0 }, f = { 0 };
	struct pollfd pfd;
	struct kt_ctx c;
	char *p = kt_map_pages(1), *buf;
	int uffd;

	KT_ASSERT(p != NULL);
	uffd = (int)syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0) {
		kt_skip("userfaultfd: %s", strerror(errno));
		munmap(p, pg);
		return;
	}
	KT_ASSERT(ioctl(uffd, UFFDIO_API, &api) == 0);
	buf = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	KT_ASSERT(buf != MAP_FAILED);
	reg.range.start = (uintptr_t)buf;
	reg.range.len = pg;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	KT_ASSERT(ioctl(uffd, UFFDIO_REGISTER, &reg) == 0);

	KT_ASSERT(open_cfg(&c, 16, REGCACHE_STRICT_DEFAULT) == 0);
	KT_EXPECT(kt_watch(&c, p, pg, 1, 0, NULL, NULL) == 0);
	KT_EXPECT(munmap(p, pg) == 0);		/* one event to read */

	r.fd = f.fd = c.fd;
	r.buf = buf;
	KT_ASSERT(pthread_create(&r.th, NULL, stuck_read, &r) == 0);
	/* the reader is in the fault once the uffd has its message */
	pfd.fd = uffd;
	pfd.events = POLLIN;
	KT_EXPECT(poll(&pfd, 1, 10000) == 1);
	KT_EXPECT(sigaction(SIGUSR1, &sa, &old) == 0);	/* no SA_RESTART */
	KT_ASSERT(pthread_create(&f.th, NULL, stuck_flush, &f) == 0);
	KT_EXPECT(!finished_within(&f, 300));	/* it waits for the mutex */
	KT_EXPECT(pthread_kill(f.th, SIGUSR1) == 0);
	KT_EXPECT(finished_within(&f, 10000));
	KT_EXPECT(f.ret == -EINTR);
	KT_EXPECT(!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE));

	/* serve the fault: the read completes, a FLUSH gets the mutex again */
	zero.range.start = (uintptr_t)buf;
	zero.range.len = pg;
	KT_EXPECT(ioctl(uffd, UFFDIO_ZEROPAGE, &zero) == 0);
	pthread_join(r.th, NULL);
	pthread_join(f.th, NULL);
	KT_EXPECT(r.ret == 0);
	KT_EXPECT(((struct regcache_event *)buf)->cookie == 1);
	KT_EXPECT(kt_flush(&c) == 0);
	sigaction(SIGUSR1, &old, NULL);
	kt_close(&c);
	munmap(buf, pg);
	close(uffd);
}

int main(int argc, char **argv)
{
	static const struct kt_case cases[] = {
		{ "flush_keeps_later_event", test_flush_keeps_later_event },
		{ "flush_keeps_later_overflow", test_flush_keeps_later_overflow },
		{ "flush_bad_input", test_flush_bad_input },
		{ "event_records", test_event_records },
		{ "failed_watch_leaves_configure_open", test_failed_watch_configure },
		{ "strict_per_context", test_strict_per_context },
		{ "stream_no_position", test_stream },
		{ "status_madv_dontneed_refaults", test_status_dontneed },
		{ "status_madv_dofork_refused", test_status_dofork },
		{ "status_noexec_nogup", test_status_noexec_nogup },
		{ "fdinfo", test_fdinfo },
		{ "fdinfo_pid_namespace", test_fdinfo_pid_namespace },
		{ "flush_interruptible", test_flush_interruptible },
		{ "exec_inherited_fd", test_exec_inherited_fd },
		{ NULL, NULL },
	};

	pg = sysconf(_SC_PAGESIZE);
	if (argc == 3 && !strcmp(argv[1], "--exec-child"))
		return exec_child(atoi(argv[2]));
	kt_require_device();
	kt_add_suite("kmod_sem", NULL, NULL, cases);
	return kt_main(argc, argv);
}
