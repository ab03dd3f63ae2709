// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_limits.c - regcache.ko bounded by user (regcache(4) LIMITS).
 *
 * Needs the module loaded with small per-user limits (the kmod suite
 * loads it with max_user_contexts=4 max_user_watches=64); larger ones
 * skip.  The program runs as root and forks children that become test
 * uids (setresuid), since the limits are per effective uid:
 *
 *   - open() past max_user_contexts is EMFILE, another uid (and root) is
 *     unaffected, and a close or the exit of the process gives the
 *     context back;
 *   - WATCH and WATCH_BATCH past max_user_watches are ENOSPC, counted over
 *     all of a user's contexts, given back by UNWATCH, close and exit;
 *   - root is limited as well (no exemption);
 *   - the activity counters in sysfs are root-only, abi_version is not;
 *   - the status area is there from open(), sized again by CONFIGURE (kept
 *     when its page count stays), and GET_INFO's status_size is right
 *     before and after.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* setresuid, setresgid */
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt_harness.h"
#include "test_kmod_util.h"

#define UID_A	60001
#define UID_B	60002
#define SYSFS_DIR "/sys/class/misc/regcache/"
#define CHILD_TIMEOUT_S 60

static long pg;
static unsigned int max_ctx, max_watch;

static int open_dev(void)
{
	int fd = open(REGCACHE_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int say(int fd)
{
	return write(fd, "r", 1) == 1 ? 0 : -1;
}

/* Open n contexts into fds[]: 0, or the first -errno (those opened stay open). */
static int open_n(int *fds, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		fds[i] = open_dev();
		if (fds[i] < 0)
			return fds[i];
	}
	return 0;
}

static void close_n(int *fds, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/*
 * uid A: the limit of contexts, then (told to go on by the parent) one
 * closed gives one back; exits holding all of them.
 * io[0]: read end (go), io[1]: write end (ready).
 */
static int contexts_at_limit(int *io)
{
	int fds[64];
	int fd;

	if (max_ctx > 64 || open_n(fds, max_ctx))
		return 1;
	fd = open_dev();
	if (fd != -EMFILE)
		return 2;
	if (say(io[1]) || kt_wait_byte(io[0], CHILD_TIMEOUT_S))
		return 3;
	close(fds[0]);
	fds[0] = open_dev();
	if (fds[0] < 0)
		return 4;
	if (open_dev() != -EMFILE)
		return 5;
	return 0;	/* exit closes them all */
}

/* Any uid: max_ctx contexts open, one more is EMFILE; closes them again. */
static int contexts_full_quota(int *unused)
{
	int fds[64];
	int fd, ret = 0;

	(void)unused;
	if (max_ctx > 64)
		return 1;
	memset(fds, -1, sizeof(fds));
	if (open_n(fds, max_ctx)) {
		ret = 1;
	} else {
		fd = open_dev();
		if (fd != -EMFILE)
			ret = 2;
		if (fd >= 0)
			close(fd);
	}
	close_n(fds, max_ctx);
	return ret;
}

/*
 * uid A runs hold() up to its limit and waits; meanwhile uid B and root
 * (this process) each get their whole quota (limits are per user); then A finishes and exits holding
 * everything, and a new process of uid A gets the whole quota again (the
 * exit gave it all back).
 */
static void held_then_freed(int (*hold)(int *), int (*quota)(int *), const char *what)
{
	int go[2], ready[2], io[2], ret;
	pid_t a;

	KT_ASSERT(pipe(go) == 0 && pipe(ready) == 0);
	io[0] = go[0];
	io[1] = ready[1];
	a = kt_spawn_as(UID_A, CHILD_TIMEOUT_S, hold, io);
	KT_ASSERT(a > 0);
	KT_EXPECT(kt_wait_byte(ready[0], CHILD_TIMEOUT_S) == 0);
	KT_EXPECT(kt_reap(kt_spawn_as(UID_B, CHILD_TIMEOUT_S, quota, NULL)) == 0);
	KT_EXPECT(quota(NULL) == 0);
	KT_EXPECT(say(go[1]) == 0);
	ret = kt_reap(a);
	if (ret)
		kt_diag("uid %d %s: step %d failed", UID_A, what, ret);
	KT_EXPECT(ret == 0);
	KT_EXPECT(kt_reap(kt_spawn_as(UID_A, CHILD_TIMEOUT_S, quota, NULL)) == 0);
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
}

static void test_contexts(void)
{
	held_then_freed(contexts_at_limit, contexts_full_quota, "contexts");
}

/* Root is limited too (regcache(4): no exemption; root raises the limit). */
static void test_root_limited(void)
{
	KT_EXPECT(contexts_full_quota(NULL) == 0);
	/* the closes gave them back */
	KT_EXPECT(contexts_full_quota(NULL) == 0);
}

static int batch(struct kt_ctx *c, char *p, unsigned int n, uint32_t *done)
{
	struct regcache_watch w[8];
	struct regcache_watch_batch b = { .watches = (uintptr_t)w, .count = n };
	unsigned int i;
	int ret;

	memset(w, 0, sizeof(w));
	for (i = 0; i < n && i < 8; i++) {
		w[i].addr = (uintptr_t)(p + i * pg);
		w[i].len = pg;
		w[i].cookie = 0x900 + i;
	}
	ret = kt_ioctl(c->fd, REGCACHE_IOC_WATCH_BATCH, &b);
	*done = b.done;
	return ret;
}

/* Watch pages [from, to) of p in c with cookies = page index: 0 or -errno. */
static int watch_range(struct kt_ctx *c, char *p, unsigned int from, unsigned int to,
		       uint32_t *slots)
{
	unsigned int i;
	int ret;

	for (i = from; i < to; i++) {
		ret = kt_watch(c, p + i * pg, pg, i, 0, &slots[i], NULL);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * uid A: max_watch watches split over two contexts, ENOSPC for one more
 * (WATCH and WATCH_BATCH), UNWATCH and close give them back; then exits
 * holding max_watch watches.
 */
static int watches_at_limit(int *io)
{
	unsigned int half = max_watch / 2, i;
	uint32_t slots[4096], done;
	struct kt_ctx c1, c2;
	char *p;

	p = kt_map_pages(max_watch + 8);
	if (!p || max_watch > 4096 || max_watch < 4)
		return 1;
	if (kt_open(&c1, 0, false) || kt_open(&c2, 0, false))
		return 2;
	if (watch_range(&c1, p, 0, half, slots) || watch_range(&c2, p, half, max_watch, slots))
		return 3;
	/* the user's limit, though each context has room */
	if (kt_watch(&c2, p + max_watch * pg, pg, 999, 0, NULL, NULL) != -ENOSPC)
		return 4;
	if (batch(&c1, p + max_watch * pg, 2, &done) != -ENOSPC || done != 0)
		return 5;
	/* UNWATCH gives one back */
	if (kt_unwatch(&c2, slots[half], half) ||
	    kt_watch(&c2, p + half * pg, pg, half, 0, &slots[half], NULL) ||
	    kt_watch(&c1, p + max_watch * pg, pg, 999, 0, NULL, NULL) != -ENOSPC)
		return 6;
	/* a batch stops at the limit and says how far it got */
	for (i = half; i < half + 2; i++)
		if (kt_unwatch(&c2, slots[i], i))
			return 7;
	if (batch(&c2, p + max_watch * pg, 3, &done) != -ENOSPC || done != 2)
		return 8;
	/* close gives back every watch of the context */
	kt_close(&c1);
	if (kt_open(&c1, 0, false) || watch_range(&c1, p, 0, half, slots))
		return 9;
	if (kt_watch(&c1, p + max_watch * pg, pg, 999, 0, NULL, NULL) != -ENOSPC)
		return 10;
	if (say(io[1]) || kt_wait_byte(io[0], CHILD_TIMEOUT_S))
		return 11;
	return 0;	/* exit with max_watch watches held */
}

/* Any uid: max_watch watches in one context, then ENOSPC; released again. */
static int watches_full_quota(int *unused)
{
	uint32_t slots[4096];
	struct kt_ctx c;
	int ret = 0;
	char *p;

	(void)unused;
	if (max_watch > 4096)
		return 1;
	p = kt_map_pages(max_watch + 1);
	if (!p)
		return 1;
	if (kt_open(&c, 0, true)) {
		ret = 2;
	} else {
		if (watch_range(&c, p, 0, max_watch, slots))
			ret = 3;
		else if (kt_watch(&c, p + max_watch * pg, pg, 999, 0, NULL, NULL) != -ENOSPC)
			ret = 4;
		kt_close(&c);
	}
	munmap(p, (max_watch + 1) * pg);
	return ret;
}

static void test_watches(void)
{
	held_then_freed(watches_at_limit, watches_full_quota, "watches");
}

static const char *const counters[] = {
	"nr_contexts", "watches", "pinned_bytes", "events_total", "overflows",
	"foreign_mm",
};

/* As a user: abi_version readable, every activity counter EACCES. */
static int sysfs_as_user(int *unused)
{
	char path[128];
	size_t i;
	int fd;

	(void)unused;
	fd = open(SYSFS_DIR "abi_version", O_RDONLY);
	if (fd < 0)
		return 1;
	close(fd);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		snprintf(path, sizeof(path), SYSFS_DIR "%s", counters[i]);
		fd = open(path, O_RDONLY);
		if (fd >= 0 || errno != EACCES)
			return 2 + (int)i;
	}
	return 0;
}

static void test_sysfs_root_only(void)
{
	char path[128];
	struct stat st;
	size_t i;

	KT_EXPECT(stat(SYSFS_DIR "abi_version", &st) == 0 && (st.st_mode & 0777) == 0444);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		snprintf(path, sizeof(path), SYSFS_DIR "%s", counters[i]);
		KT_EXPECT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0400);
		KT_EXPECT(kt_sysfs(counters[i]) >= 0);	/* root reads them */
	}
	KT_EXPECT(kt_reap(kt_spawn_as(UID_A, CHILD_TIMEOUT_S, sysfs_as_user, NULL)) == 0);
}

static uint64_t status_size_of(uint32_t watches)
{
	uint64_t b = sizeof(struct regcache_status) + (uint64_t)watches * 8;

	return (b + pg - 1) / pg * pg;
}

static long long fdinfo(int fd, const char *key)
{
	long long v;

	return kt_fdinfo(fd, key, &v) ? -1 : v;
}

static int configure_watches(int fd, uint32_t watches)
{
	struct regcache_config cfg = { .max_watches = watches };

	return kt_ioctl(fd, REGCACHE_IOC_CONFIGURE, &cfg);
}

/* Allocated at open, sized again by CONFIGURE; GET_INFO right throughout. */
static void test_status_configured(void)
{
	uint32_t def = (uint32_t)kt_param("max_watches");
	struct regcache_info info = { 0 };
	struct kt_ctx c = { .fd = -1 };
	char *p = kt_map_pages(9);
	void *m;
	int i;

	KT_ASSERT(p != NULL);
	c.fd = open_dev();
	KT_ASSERT(c.fd >= 0);
	/* there from open, at the parameter's size */
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &info) == 0);
	KT_EXPECT(info.max_watches == def && info.status_size == status_size_of(def));
	KT_EXPECT(fdinfo(c.fd, "status-bytes") == (long long)status_size_of(def));

	KT_EXPECT(configure_watches(c.fd, 8) == 0);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &info) == 0);
	KT_EXPECT(info.max_watches == 8 && info.status_size == (uint64_t)pg);
	KT_EXPECT(fdinfo(c.fd, "max-watches") == 8);
	KT_EXPECT(fdinfo(c.fd, "status-bytes") == pg);
	/* a mapping of the wrong length fails and freezes nothing */
	m = mmap(NULL, status_size_of(def), PROT_READ, MAP_SHARED, c.fd, 0);
	KT_EXPECT(m == MAP_FAILED && errno == EINVAL);
	/* the last CONFIGURE wins: 600 slots need two pages of 4 KiB */
	KT_EXPECT(configure_watches(c.fd, 600) == 0);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &info) == 0);
	KT_EXPECT(info.max_watches == 600 && info.status_size == status_size_of(600));
	KT_EXPECT(fdinfo(c.fd, "status-bytes") == (long long)status_size_of(600));
	KT_EXPECT(configure_watches(c.fd, 8) == 0);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &c.info) == 0);
	m = mmap(NULL, c.info.status_size, PROT_READ, MAP_SHARED, c.fd, 0);
	KT_ASSERT(m != MAP_FAILED);
	c.st = m;
	KT_EXPECT(c.st->max_watches == 8 && c.st->abi_version == REGCACHE_ABI_VERSION);
	KT_EXPECT(c.st->ring_entries == c.info.ring_entries);
	KT_EXPECT(fdinfo(c.fd, "status-bytes") == pg);
	KT_EXPECT(configure_watches(c.fd, 16) == -EBUSY);
	/* eight slots, the ninth watch has none (the user's limit is larger) */
	for (i = 0; i < 8; i++)
		KT_EXPECT(kt_watch(&c, p + i * pg, pg, i, 0, NULL, NULL) == 0);
	KT_EXPECT(kt_watch(&c, p + 8 * pg, pg, 8, 0, NULL, NULL) == -ENOSPC);
	/* above the module parameter: refused */
	kt_close(&c);
	c.fd = open_dev();
	KT_ASSERT(c.fd >= 0);
	KT_EXPECT(configure_watches(c.fd, def + 1) == -EINVAL);
	kt_close(&c);
	munmap(p, 9 * pg);
}

/*
 * CONFIGURE keeps the area when the page count stays: the generation a
 * failed WATCH gave slot 0 is still there, so the next watch of slot 0
 * gets the next one.  A new page count is a new, zeroed area.
 */
static void test_status_kept(void)
{
	uint32_t def = (uint32_t)kt_param("max_watches"), slot;
	struct kt_ctx c = { .fd = -1 };
	char *p = kt_map_pages(1);
	uint64_t word;
	void *m;

	KT_ASSERT(p != NULL);
	KT_ASSERT(def > 1 && status_size_of(def - 1) == status_size_of(def));
	c.fd = open_dev();
	KT_ASSERT(c.fd >= 0);
	/* page 1 of the address space is never mapped: ENOMEM, slot 0 gen 1 */
	KT_EXPECT(kt_watch(&c, (void *)(uintptr_t)pg, pg, 1, 0, NULL, NULL) == -ENOMEM);
	KT_EXPECT(configure_watches(c.fd, def - 1) == 0);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &c.info) == 0);
	KT_EXPECT(c.info.max_watches == def - 1 && c.info.status_size == status_size_of(def));
	m = mmap(NULL, c.info.status_size, PROT_READ, MAP_SHARED, c.fd, 0);
	KT_ASSERT(m != MAP_FAILED);
	c.st = m;
	KT_EXPECT(c.st->max_watches == def - 1);
	KT_EXPECT(kt_watch(&c, p, pg, 2, 0, &slot, &word) == 0);
	KT_EXPECT(slot == 0 && word == (REGCACHE_SLOT_ACTIVE | 1));
	kt_close(&c);

	/* the same after a resize: a fresh area, generation 0 */
	c.fd = open_dev();
	KT_ASSERT(c.fd >= 0);
	KT_EXPECT(kt_watch(&c, (void *)(uintptr_t)pg, pg, 1, 0, NULL, NULL) == -ENOMEM);
	KT_EXPECT(configure_watches(c.fd, 8) == 0);
	KT_EXPECT(fdinfo(c.fd, "status-bytes") == pg);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &c.info) == 0);
	m = mmap(NULL, c.info.status_size, PROT_READ, MAP_SHARED, c.fd, 0);
	KT_ASSERT(m != MAP_FAILED);
	c.st = m;
	KT_EXPECT(c.st->max_watches == 8);
	KT_EXPECT(kt_watch(&c, p, pg, 2, 0, &slot, &word) == 0);
	KT_EXPECT(slot == 0 && word == REGCACHE_SLOT_ACTIVE);
	kt_close(&c);
	munmap(p, pg);
}

int main(int argc, char **argv)
{
	static const struct kt_case user_cases[] = {
		{ "contexts_emfile_per_uid", test_contexts },
		{ "root_limited_too", test_root_limited },
		{ "watches_enospc_per_uid", test_watches },
		{ "sysfs_counters_root_only", test_sysfs_root_only },
		{ NULL, NULL },
	};
	static const struct kt_case size_cases[] = {
		{ "sized_by_configure", test_status_configured },
		{ "kept_at_same_size", test_status_kept },
		{ NULL, NULL },
	};
	long long c, w;

	pg = sysconf(_SC_PAGESIZE);
	kt_require_device();
	c = kt_param("max_user_contexts");
	w = kt_param("max_user_watches");
	if (c < 0 || w < 0)
		kt_skip_all("regcache.ko has no per-user limits");
	if (c > 64 || w < 4 || w > 4096)
		kt_skip_all("needs small limits (load with max_user_contexts=4 max_user_watches=64; have %lld and %lld)",
			    c, w);
	max_ctx = (unsigned int)c;
	max_watch = (unsigned int)w;
	kt_add_suite("kmod_limits", NULL, NULL, user_cases);
	kt_add_suite("kmod_status_size", NULL, NULL, size_cases);
	return kt_main(argc, argv);
}
