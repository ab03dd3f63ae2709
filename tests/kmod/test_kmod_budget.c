// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_budget.c - a user's kernel memory is bounded (regcache(4)
 * LIMITS, max_user_bytes).
 *
 * Root measures what a context and a watch are charged (fdinfo's
 * regcache-bytes), lowers max_user_bytes at runtime to a few of them and
 * restores it at the end.  Children that become test uids then check:
 *   - open() succeeds while whole contexts fit and then fails with
 *     EDQUOT; fdinfo's user lines give the usage and the budget; a close
 *     gives the bytes back;
 *   - WATCH succeeds while watches fit, then EDQUOT; UNWATCH gives back;
 *   - a CONFIGURE that would grow a context past the budget is EDQUOT and
 *     changes nothing, one that shrinks it gives bytes back;
 *   - in a user namespace of its own, under uids mapped from another
 *     range and in a namespace nested in it, a user gets no budget more:
 *     every such process is charged to the outermost namespace's owner,
 *     which fdinfo names; another user keeps a budget of its own;
 *   - declared pinned bytes cannot wrap: past 2^63 - 1 per user, EOVERFLOW.
 * Needs root and regcache.ko; the namespace case skips without
 * unprivileged user namespaces.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* unshare, setresuid */
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt_harness.h"
#include "test_kmod_util.h"

#define UID_OPEN	60011
#define UID_WATCH	60012
#define UID_NS		60013
#define UID_OTHER	60014
#define NS_BASE		400000	/* kuids the namespace's uids 0..9 map to */
#define TIMEOUT_S	60

static long pg;
static long long orig_budget = -1;
/* charges measured by root: a default context, one of 8 slots, a watch */
static long long ctx_bytes, small_ctx_bytes, watch_bytes;
/* what the children compare with, set before each fork */
static long long budget;

static int set_budget(long long v)
{
	char path[] = "/sys/module/regcache/parameters/max_user_bytes";
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fprintf(f, "%lld", v) > 0 ? 0 : -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

static long long fdinfo(int fd, const char *key)
{
	long long v;

	return kt_fdinfo(fd, key, &v) ? -1 : v;
}

static int open_dev(void)
{
	int fd = open(REGCACHE_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int configure_watches(int fd, uint32_t watches)
{
	struct regcache_config cfg = { .max_watches = watches };

	return kt_ioctl(fd, REGCACHE_IOC_CONFIGURE, &cfg);
}

static int measure(void)
{
	struct kt_ctx c = { .fd = -1 };
	char *p = kt_map_pages(1);
	long long before;

	if (!p)
		return -1;
	c.fd = open_dev();
	if (c.fd < 0)
		return -1;
	ctx_bytes = fdinfo(c.fd, "bytes");
	before = ctx_bytes;
	if (kt_watch(&c, p, pg, 1, 0, NULL, NULL))
		return -1;
	watch_bytes = fdinfo(c.fd, "bytes") - before;
	kt_close(&c);
	c.fd = open_dev();
	if (c.fd < 0 || configure_watches(c.fd, 8))
		return -1;
	small_ctx_bytes = fdinfo(c.fd, "bytes");
	kt_close(&c);
	munmap(p, pg);
	kt_diag("charged: context %lld bytes (%lld with 8 slots), watch %lld bytes",
		ctx_bytes, small_ctx_bytes, watch_bytes);
	return ctx_bytes > 0 && watch_bytes > 0 && small_ctx_bytes < ctx_bytes ? 0 : -1;
}

static int suite_init(void)
{
	orig_budget = kt_param("max_user_bytes");
	return orig_budget > 0 ? measure() : -1;
}

static int suite_cleanup(void)
{
	return orig_budget > 0 ? set_budget(orig_budget) : 0;
}

/* Child: open until refused.  0 when exactly 3 fit and the 4th is EDQUOT. */
static int open_until_edquot(int *unused)
{
	int fd[8], n, ret = 0;

	(void)unused;
	for (n = 0; n < 8; n++) {
		fd[n] = open_dev();
		if (fd[n] < 0)
			break;
	}
	if (n != 3)
		return 1;
	if (fd[3] != -EDQUOT)
		return 2;
	if (fdinfo(fd[0], "bytes") != ctx_bytes)
		return 3;
	if (fdinfo(fd[0], "user-bytes") != 3 * ctx_bytes)
		return 4;
	if (fdinfo(fd[2], "user-max-bytes") != budget)
		return 5;
	if (fdinfo(fd[1], "user") != UID_OPEN)
		return 6;
	/* a close gives its bytes back, and another open fits */
	close(fd[2]);
	if (fdinfo(fd[0], "user-bytes") != 2 * ctx_bytes)
		ret = 7;
	fd[2] = open_dev();
	if (fd[2] < 0)
		ret = 8;
	for (n = 0; n < 3; n++)
		close(fd[n]);
	return ret;
}

static void test_contexts(void)
{
	budget = 3 * ctx_bytes + ctx_bytes / 2;
	KT_ASSERT(set_budget(budget) == 0);
	KT_EXPECT(kt_param("max_user_bytes") == budget);
	KT_EXPECT(kt_reap(kt_spawn_as(UID_OPEN, TIMEOUT_S, open_until_edquot, NULL)) == 0);
	KT_EXPECT(set_budget(orig_budget) == 0);
}

/* Child: 10 watches fit beside the context, the 11th is EDQUOT. */
static int watch_until_edquot(int *unused)
{
	char *p = kt_map_pages(16);
	struct kt_ctx c = { .fd = -1 };
	uint32_t slot[16];
	int i, ret;

	(void)unused;
	if (!p)
		return 1;
	c.fd = open_dev();
	if (c.fd < 0)
		return 2;
	for (i = 0; i < 16; i++) {
		ret = kt_watch(&c, p + i * pg, pg, i + 1, 0, &slot[i], NULL);
		if (ret)
			break;
	}
	if (i != 10)
		return 3;
	if (ret != -EDQUOT)
		return 4;
	if (fdinfo(c.fd, "bytes") != ctx_bytes + 10 * watch_bytes)
		return 5;
	if (kt_unwatch(&c, slot[0], 1))
		return 6;
	if (kt_watch(&c, p, pg, 1, 0, &slot[0], NULL))
		return 7;
	if (kt_watch(&c, p + 11 * pg, pg, 12, 0, NULL, NULL) != -EDQUOT)
		return 8;
	kt_close(&c);
	return 0;
}

static void test_watches(void)
{
	budget = ctx_bytes + 10 * watch_bytes + watch_bytes / 2;
	KT_ASSERT(set_budget(budget) == 0);
	KT_EXPECT(kt_reap(kt_spawn_as(UID_WATCH, TIMEOUT_S, watch_until_edquot, NULL)) == 0);
	KT_EXPECT(set_budget(orig_budget) == 0);
}

/*
 * Child: a context shrunk to 8 slots and a default one fill the budget;
 * growing the first back is EDQUOT and leaves it as it was; once the
 * second is closed it fits.
 */
static int configure_edquot(int *unused)
{
	int a, b;

	(void)unused;
	a = open_dev();
	if (a < 0 || configure_watches(a, 8))
		return 1;
	if (fdinfo(a, "bytes") != small_ctx_bytes)
		return 2;
	b = open_dev();
	if (b < 0)
		return 3;
	if (configure_watches(a, 0) != -EDQUOT)
		return 4;
	if (fdinfo(a, "max-watches") != 8 || fdinfo(a, "bytes") != small_ctx_bytes)
		return 5;
	close(b);
	if (configure_watches(a, 0))
		return 6;
	if (fdinfo(a, "bytes") != ctx_bytes || fdinfo(a, "user-bytes") != ctx_bytes)
		return 7;
	close(a);
	return 0;
}

static void test_configure(void)
{
	budget = small_ctx_bytes + ctx_bytes + (ctx_bytes - small_ctx_bytes) / 2;
	KT_ASSERT(set_budget(budget) == 0);
	KT_EXPECT(kt_reap(kt_spawn_as(UID_OPEN, TIMEOUT_S, configure_edquot, NULL)) == 0);
	KT_EXPECT(set_budget(orig_budget) == 0);
}

/* Is there something to read on fd within timeout_s? */
static bool poll_in(int fd, unsigned int timeout_s)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, (int)timeout_s * 1000) == 1;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

/* Grandchild: another mapped uid, then a nested namespace: no new budget. */
static int ns_other_uid(void)
{
	int fd;

	if (setresgid(1, 1, 1) || setresuid(1, 1, 1))
		return 30;
	fd = open_dev();
	if (fd != -EDQUOT)
		return fd < 0 ? 31 : 32;
	if (unshare(CLONE_NEWUSER))
		return 33;
	fd = open_dev();
	if (fd != -EDQUOT)
		return fd < 0 ? 34 : 35;
	return 0;
}

/*
 * Child, uid UID_NS: a user namespace of its own, whose uid_map and
 * gid_map the parent (root) writes, mapping 0..9 to NS_BASE..NS_BASE+9 as
 * newuidmap would from /etc/subuid.  As uid 0 there (kuid NS_BASE) it
 * fills the budget; io[0]/io[1] talk to the parent.
 */
static int ns_child(int *io)
{
	int fd[4], n, st;
	pid_t pid;
	char ch;

	if (unshare(CLONE_NEWUSER))
		return errno == EPERM || errno == EINVAL || errno == ENOSPC ? 77 : 10;
	if (write(io[1], "u", 1) != 1 || kt_wait_byte(io[0], TIMEOUT_S))
		return 11;
	if (setresgid(0, 0, 0) || setresuid(0, 0, 0))
		return 12;
	for (n = 0; n < 4; n++) {
		fd[n] = open_dev();
		if (fd[n] < 0)
			break;
	}
	if (n != 2 || fd[2] != -EDQUOT)
		return 13;
	pid = fork();
	if (pid < 0)
		return 14;
	if (!pid)
		_exit(ns_other_uid());
	st = kt_reap(pid);
	if (st)
		return st;
	/* the parent reads fdinfo of fd[0] now: its number is the byte */
	ch = (char)fd[0];
	if (write(io[1], &ch, 1) != 1 || kt_wait_byte(io[0], TIMEOUT_S))
		return 15;
	close(fd[0]);
	close(fd[1]);
	return 0;
}

static int other_user_opens(int *unused)
{
	int fd = open_dev();

	(void)unused;
	if (fd < 0)
		return 1;
	close(fd);
	return 0;
}

static void test_user_namespaces(void)
{
	int to_child[2], to_parent[2], io[2], st;
	char path[64], map[64];
	unsigned char fdno;
	long long v;
	pid_t pid;

	budget = 2 * ctx_bytes + ctx_bytes / 2;
	KT_ASSERT(set_budget(budget) == 0);
	KT_ASSERT(pipe(to_child) == 0 && pipe(to_parent) == 0);
	io[0] = to_child[0];
	io[1] = to_parent[1];
	pid = kt_spawn_as(UID_NS, TIMEOUT_S, ns_child, io);
	KT_ASSERT(pid > 0);
	/* our copies of the child's ends: a child that dies shows as EOF */
	close(to_child[0]);
	close(to_parent[1]);
	if (kt_wait_byte(to_parent[0], TIMEOUT_S) == 0) {
		/* uids and gids: a nested namespace needs both mapped */
		snprintf(map, sizeof(map), "0 %d 10\n", NS_BASE);
		snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
		KT_EXPECT(write_file(path, map) == 0);
		snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
		KT_EXPECT(write_file(path, map) == 0);
		KT_EXPECT(write(to_child[1], "m", 1) == 1);
		if (poll_in(to_parent[0], TIMEOUT_S) && read(to_parent[0], &fdno, 1) == 1) {
			/* seen from here, the owner is charged, not kuid NS_BASE */
			snprintf(path, sizeof(path), "/proc/%d/fdinfo/%u", (int)pid, fdno);
			KT_EXPECT(kt_fdinfo_path(path, "user", &v) == 0 && v == UID_NS);
			KT_EXPECT(kt_fdinfo_path(path, "user-bytes", &v) == 0 && v == 2 * ctx_bytes);
			/* another user is not affected */
			KT_EXPECT(kt_reap(kt_spawn_as(UID_OTHER, TIMEOUT_S, other_user_opens,
						      NULL)) == 0);
			KT_EXPECT(write(to_child[1], "d", 1) == 1);
		}
	}
	st = kt_reap(pid);
	if (st == 77)
		kt_skip("no user namespace for a user: no CONFIG_USER_NS, or unprivileged ones are off");
	else
		KT_EXPECT(st == 0);
	if (st && st != 77)
		kt_diag("namespace child: status %d", st);
	close(to_child[1]);
	close(to_parent[0]);
	KT_EXPECT(set_budget(orig_budget) == 0);
}

/*
 * Declared pinned bytes cannot wrap: WATCH takes pinned_bytes up to the
 * range's length, unchecked against a real pin, so a liar with 2^17
 * watches of 64 TiB (a PROT_NONE reservation costs nothing) reaches 2^63.
 * The watch that would take the user's total past S64_MAX is refused
 * with EOVERFLOW, the counters stay exact, and everything is given back.
 * Three contexts of 65536 slots, WATCH_BATCH 4096 at a time; the budget
 * is raised for the 26 MB of watches.  Under a second on 6.1 and 7.3;
 * more than two minutes on the debug kernel, whose suite sets
 * KMOD_BUDGET_WRAP=0.
 */
static void test_pinned_no_wrap(void)
{
	const uint64_t len = 1ULL << 46, limit = (1ULL << 63) - 1;
	long long base = kt_sysfs("pinned_bytes"), v;
	struct regcache_watch_batch b;
	struct regcache_watch *w;
	uint64_t total = 0, cookie = 0;
	int fd[3], k, ret = 0;
	uint32_t i, n;
	void *p;

	if (!kt_env_long("KMOD_BUDGET_WRAP", 1, 0, 1)) {
		/* the debug kernel's suite: 131071 watches took minutes under KASAN */
		kt_skip("KMOD_BUDGET_WRAP=0");
		return;
	}
	if (kt_param("max_watches") < 65536 || kt_param("max_user_watches") < 3 * 65536) {
		kt_skip("needs max_watches >= 65536 and max_user_watches >= 196608");
		return;
	}
	p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		kt_skip("no 64 TiB of address space to reserve: %s", strerror(errno));
		return;
	}
	w = calloc(4096, sizeof(*w));
	KT_ASSERT(w != NULL);
	KT_ASSERT(set_budget(64LL << 20) == 0);
	for (k = 0; k < 3; k++) {
		fd[k] = open_dev();
		KT_ASSERT(fd[k] >= 0);
	}
	for (k = 0; k < 3 && !ret; k++) {
		for (n = 0; n < 65536 && !ret; n += b.done) {
			memset(&b, 0, sizeof(b));
			b.count = 4096;
			for (i = 0; i < b.count; i++) {
				memset(&w[i], 0, sizeof(w[i]));
				w[i].addr = (uintptr_t)p;
				w[i].len = len;
				w[i].pinned_bytes = len;
				w[i].cookie = ++cookie;
			}
			b.watches = (uintptr_t)w;
			ret = kt_ioctl(fd[k], REGCACHE_IOC_WATCH_BATCH, &b);
			total += (uint64_t)b.done * len;
		}
	}
	KT_EXPECT(ret == -EOVERFLOW);
	KT_EXPECT(total == limit / len * len);	/* 131071 watches, the next refused */
	KT_EXPECT(kt_sysfs("pinned_bytes") == base + (long long)total);
	KT_EXPECT(kt_fdinfo(fd[0], "declared-pinned-bytes", &v) == 0 &&
		  (uint64_t)v == 65536 * len);
	for (k = 0; k < 3; k++)
		close(fd[k]);
	KT_EXPECT(kt_sysfs("pinned_bytes") == base);
	KT_EXPECT(set_budget(orig_budget) == 0);
	free(w);
	munmap(p, len);
}

int main(int argc, char **argv)
{
	static const struct kt_case cases[] = {
		{ "contexts_until_edquot", test_contexts },
		{ "watches_until_edquot", test_watches },
		{ "configure_within_budget", test_configure },
		{ "user_namespaces_share_the_owners_budget", test_user_namespaces },
		{ "pinned_bytes_never_wrap", test_pinned_no_wrap },
		{ NULL, NULL },
	};

	pg = sysconf(_SC_PAGESIZE);
	kt_require_device();
	if (kt_param("max_user_bytes") < 0)
		kt_skip_all("regcache.ko has no max_user_bytes");
	if (kt_param("max_user_contexts") < 8 || kt_param("max_user_watches") < 16)
		kt_skip_all("needs max_user_contexts >= 8 and max_user_watches >= 16 (the defaults)");
	kt_add_suite("kmod_budget", suite_init, suite_cleanup, cases);
	return kt_main(argc, argv);
}
