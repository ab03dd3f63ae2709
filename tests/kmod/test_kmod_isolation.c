// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_isolation.c - a context belongs to the mm that opened it.
 *
 * A forked child and a process that received the fd over SCM_RIGHTS get
 * -EIO from every ioctl, mmap and read (POLLERR from poll) and change
 * nothing; a child unmapping the *same virtual addresses* in its own mm
 * does not invalidate the parent's watch; two processes watching ranges
 * see only their own events.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt_harness.h"
#include "test_kmod_util.h"

static long pg;

/* Everything a foreign process may try; returns a bitmask of what did not fail with EIO. */
static int foreign_attempts(int fd, size_t status_size, void *mine)
{
	struct regcache_watch w = { .addr = (uintptr_t)mine, .len = pg, .cookie = 1 };
	struct regcache_info info = { 0 };
	struct regcache_ctx_stats s = { 0 };
	struct regcache_unwatch u = { 0 };
	struct regcache_config cfg = { 0 };
	struct regcache_flush f = { 0 };
	struct regcache_event ev;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int bad = 0;
	void *m;

	if (ioctl(fd, REGCACHE_IOC_GET_INFO, &info) != -1 || errno != EIO)
		bad |= 1;
	if (ioctl(fd, REGCACHE_IOC_WATCH, &w) != -1 || errno != EIO)
		bad |= 2;
	if (ioctl(fd, REGCACHE_IOC_UNWATCH, &u) != -1 || errno != EIO)
		bad |= 4;
	if (ioctl(fd, REGCACHE_IOC_UNWATCH_ALL) != -1 || errno != EIO)
		bad |= 8;
	if (ioctl(fd, REGCACHE_IOC_FLUSH, &f) != -1 || errno != EIO)
		bad |= 16;
	if (ioctl(fd, REGCACHE_IOC_GET_STATS, &s) != -1 || errno != EIO)
		bad |= 32;
	if (ioctl(fd, REGCACHE_IOC_CONFIGURE, &cfg) != -1 || errno != EIO)
		bad |= 64;
	m = mmap(NULL, status_size, PROT_READ, MAP_SHARED, fd, 0);
	if (m != MAP_FAILED || errno != EIO)
		bad |= 128;
	if (read(fd, &ev, sizeof(ev)) != -1 || errno != EIO)
		bad |= 256;
	if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLERR))
		bad |= 512;
	if (ioctl(fd, 0x1234) != -1 || errno != EIO)
		bad |= 1024;
	return bad;
}

static void assert_untouched(struct kt_ctx *c, uint32_t slot, uint64_t word)
{
	struct regcache_ctx_stats s;
	struct regcache_event ev[4];

	KT_EXPECT(kt_slot(c, slot) == word);
	KT_EXPECT(kt_stats(c, &s) == 0);
	KT_EXPECT(s.watches == 1);
	KT_EXPECT(s.watch_calls == 1);
	KT_EXPECT(s.unwatch_calls == 0);
	KT_EXPECT(kt_read_events(c, ev, 4) == -EAGAIN);
}

static void test_forked_child(void)
{
	struct kt_ctx c;
	char *p = kt_map_pages(2);
	uint32_t slot;
	uint64_t word;
	pid_t pid;
	int st;

	KT_ASSERT(p && kt_open(&c, 0, true) == 0);
	KT_ASSERT(kt_watch(&c, p, 2 * pg, 11, 0, &slot, &word) == 0);
	pid = fork();
	KT_ASSERT(pid >= 0);
	if (!pid) {
		int bad = foreign_attempts(c.fd, c.info.status_size, p);

		/* the status mapping is VM_DONTCOPY: not inherited */
		if (!bad && mincore((void *)c.st, pg, (unsigned char[1]){ 0 }) != -1)
			bad = 4096;
		_exit(bad ? 1 : 0);
	}
	KT_EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	KT_EXPECT(WEXITSTATUS(st) == 0);
	if (WEXITSTATUS(st))
		kt_diag("child: attempts that did not get EIO: exit %d", WEXITSTATUS(st));
	assert_untouched(&c, slot, word);
	kt_close(&c);
	munmap(p, 2 * pg);
}

/* The receiver exists before the context does: it never shared our mm. */
static void test_scm_rights(void)
{
	struct kt_ctx c;
	char *p = kt_map_pages(2);
	int sv[2], st;
	uint32_t slot;
	uint64_t word;
	pid_t pid;

	KT_ASSERT(p && socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	KT_ASSERT(pid >= 0);
	if (!pid) {
		char *mine = kt_map_pages(1);
		int fd, bad;

		close(sv[0]);
		fd = kt_recv_fd(sv[1]);
		if (fd < 0 || !mine)
			_exit(100);
		bad = foreign_attempts(fd, 1 << 20, mine);
		if (write(sv[1], "d", 1) != 1)
			bad |= 8192;
		_exit(bad ? 1 : 0);
	}
	close(sv[1]);
	KT_ASSERT(kt_open(&c, 0, true) == 0);
	KT_ASSERT(kt_watch(&c, p, 2 * pg, 12, 0, &slot, &word) == 0);
	KT_EXPECT(kt_send_fd(sv[0], c.fd) == 0);
	KT_EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	KT_EXPECT(WEXITSTATUS(st) == 0);
	close(sv[0]);
	assert_untouched(&c, slot, word);
	kt_close(&c);
	munmap(p, 2 * pg);
}

/* A child unmaps the same addresses in its own copy of the address space. */
static void test_child_same_va(void)
{
	struct kt_ctx c;
	char *p = kt_map_pages(4);
	uint32_t slot;
	uint64_t word;
	pid_t pid;
	int st;

	KT_ASSERT(p && kt_open(&c, 0, true) == 0);
	KT_ASSERT(kt_watch(&c, p, 4 * pg, 13, 0, &slot, &word) == 0);
	pid = fork();
	KT_ASSERT(pid >= 0);
	if (!pid) {
		madvise(p, 4 * pg, MADV_DONTNEED);
		munmap(p, 4 * pg);
		_exit(0);
	}
	KT_EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	assert_untouched(&c, slot, word);
	kt_close(&c);
	munmap(p, 4 * pg);
}

/* Two processes, own contexts, distinct cookies: each sees only its own. */
static void test_events_own_memory(void)
{
	int pfd[2], st, i, n, bad = 0;
	struct regcache_event ev[64];
	struct kt_ctx c;
	char *p;
	pid_t pid;

	KT_ASSERT(pipe(pfd) == 0);
	pid = fork();
	KT_ASSERT(pid >= 0);
	/* both sides run the same code with different cookie bases */
	{
		uint64_t base = pid ? 0x1000 : 0x2000, other = pid ? 0x2000 : 0x1000;
		char ch = 0;

		p = kt_map_pages(16);
		if (!p || kt_open(&c, 0, true))
			bad |= 1;
		for (i = 0; !bad && i < 16; i++)
			if (kt_watch(&c, p + i * pg, pg, base + i, 0, NULL, NULL))
				bad |= 2;
		if (pid) {
			if (read(pfd[0], &ch, 1) != 1)	/* the child has watched and unmapped */
				bad |= 4;
		}
		munmap(p, 16 * pg);
		if (!pid && write(pfd[1], "r", 1) != 1)
			bad |= 4;
		n = kt_read_events(&c, ev, 64);
		if (n != 16)
			bad |= 8;
		for (i = 0; i < n; i++)
			if (ev[i].cookie - base >= 16 || ev[i].cookie - other < 16 ||
			    ev[i].addr < (uintptr_t)p || ev[i].addr >= (uintptr_t)p + 16 * pg)
				bad |= 16;
		kt_close(&c);
		if (!pid)
			_exit(bad);
	}
	KT_EXPECT(bad == 0);
	KT_EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	KT_EXPECT(WEXITSTATUS(st) == 0);
	close(pfd[0]);
	close(pfd[1]);
}

int main(int argc, char **argv)
{
	static const struct kt_case cases[] = {
		{ "forked_child_eio", test_forked_child },
		{ "scm_rights_eio", test_scm_rights },
		{ "child_same_va_no_event", test_child_same_va },
		{ "events_name_own_memory", test_events_own_memory },
		{ NULL, NULL },
	};

	pg = sysconf(_SC_PAGESIZE);
	kt_require_device();
	kt_add_suite("kmod_isolation", NULL, NULL, cases);
	return kt_main(argc, argv);
}
