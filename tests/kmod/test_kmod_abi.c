// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_abi.c - every ioctl of /dev/regcache and every bad input, with
 * its exact errno (regcache(4) ERRORS).  Needs root and regcache.ko.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* mremap */
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kt_harness.h"
#include "test_kmod_util.h"

#define KADDR	0xffff888000000000ULL	/* the direct map on x86-64 */

static long pg;

static int write_param(const char *name, long long v)
{
	char path[256];
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "/sys/module/regcache/parameters/%s", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fprintf(f, "%lld\n", v) < 0)
		ret = -EIO;
	if (fclose(f))
		ret = -errno;
	return ret;
}

static void test_get_info(void)
{
	struct regcache_info info;
	struct kt_ctx c;

	KT_ASSERT(kt_open(&c, 0, false) == 0);
	memset(&info, 0, sizeof(info));
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &info) == 0);
	KT_EXPECT(info.abi_version == REGCACHE_ABI_VERSION);
	KT_EXPECT(info.max_watches == kt_param("max_watches"));
	KT_EXPECT(info.ring_entries == kt_param("ring_entries"));
	KT_EXPECT(info.status_size >= sizeof(struct regcache_status) + info.max_watches * 8ULL);
	KT_EXPECT(info.status_size % pg == 0);
	KT_EXPECT(info.strict == kt_param("strict"));
	KT_EXPECT(info.event_size == sizeof(struct regcache_event));
	KT_EXPECT(info.features == (REGCACHE_FEATURE_UNWATCH_WORD | REGCACHE_FEATURE_WATCH_SAME));

	info.flags = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &info) == -EINVAL);
	info.flags = 0;
	/* outputs are ignored on input: a filled struct can be passed again */
	info.event_size = 1;
	info.features = ~0ULL;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &info) == 0);
	KT_EXPECT(info.event_size == sizeof(struct regcache_event));
	KT_EXPECT(info.features == (REGCACHE_FEATURE_UNWATCH_WORD | REGCACHE_FEATURE_WATCH_SAME));
	info.reserved[2] = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &info) == -EINVAL);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, NULL) == -EFAULT);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, (void *)KADDR) == -EFAULT);
	kt_close(&c);
}

static void test_configure(void)
{
	struct regcache_config cfg = { .ring_entries = 16 };
	struct kt_ctx c;
	char *p = kt_map_pages(1);
	void *m;

	KT_ASSERT(p != NULL);
	KT_ASSERT(kt_open(&c, 0, false) == 0);
	cfg.flags = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) == -EINVAL);
	cfg.flags = 0;
	cfg.reserved[1] = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) == -EINVAL);
	cfg.reserved[1] = 0;
	/* max_watches (was reserved0): the module parameter is the cap */
	cfg.max_watches = (uint32_t)kt_param("max_watches") + 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) == -EINVAL);
	cfg.max_watches = 0;
	cfg.strict = 3;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) == -EINVAL);
	cfg.strict = 0;
	cfg.ring_entries = (1U << 20) + 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) == -EINVAL);
	/* ring_entries: the module parameter is the cap as well */
	cfg.ring_entries = (uint32_t)kt_param("ring_entries") + 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) == -EINVAL);
	cfg.ring_entries = 16;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) == 0);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &c.info) == 0);
	KT_EXPECT(c.info.ring_entries == 16);
	/* may be repeated until frozen */
	cfg.ring_entries = 32;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) == 0);
	KT_EXPECT(kt_watch(&c, p, pg, 1, 0, NULL, NULL) == 0);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) == -EBUSY);
	/* frozen even after the watch is gone */
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_UNWATCH_ALL, NULL) == 0);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) == -EBUSY);
	kt_close(&c);

	/* mmap freezes too */
	KT_ASSERT(kt_open(&c, 0, false) == 0);
	m = mmap(NULL, c.info.status_size, PROT_READ, MAP_SHARED, c.fd, 0);
	KT_ASSERT(m != MAP_FAILED);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) == -EBUSY);
	KT_EXPECT(((struct regcache_status *)m)->ring_entries == c.info.ring_entries);
	munmap(m, c.info.status_size);
	kt_close(&c);
	munmap(p, pg);
}

static void test_watch_ok(void)
{
	struct regcache_ctx_stats s;
	struct kt_ctx c;
	char *p = kt_map_pages(4);
	uint32_t slot, slot2;
	uint64_t word, word2;

	KT_ASSERT(p != NULL);
	KT_ASSERT(kt_open(&c, 0, true) == 0);
	KT_EXPECT(c.st->abi_version == REGCACHE_ABI_VERSION);
	KT_EXPECT(c.st->max_watches == c.info.max_watches);
	/* unaligned start and length are rounded out to pages */
	KT_EXPECT(kt_watch(&c, p + 10, 100, 42, 100, &slot, &word) == 0);
	KT_EXPECT((word & REGCACHE_SLOT_ACTIVE) != 0);
	KT_EXPECT(kt_slot(&c, slot) == word);
	KT_EXPECT(kt_watch(&c, p, 4 * pg, 43, 0, &slot2, &word2) == 0);
	KT_EXPECT(slot2 != slot);
	KT_EXPECT(kt_stats(&c, &s) == 0);
	KT_EXPECT(s.watches == 2);
	KT_EXPECT(s.pinned_bytes == 100);
	KT_EXPECT(s.watch_calls == 2);
	/* unwatch bumps the generation and clears the active bit */
	KT_EXPECT(kt_unwatch(&c, slot, 42) == 0);
	KT_EXPECT(!(kt_slot(&c, slot) & REGCACHE_SLOT_ACTIVE));
	KT_EXPECT((kt_slot(&c, slot) & REGCACHE_SLOT_GEN_MASK) ==
		  (word & REGCACHE_SLOT_GEN_MASK) + 1);
	/* the reused slot never hands out the old word again */
	KT_EXPECT(kt_watch(&c, p, pg, 44, 0, &slot2, &word2) == 0);
	KT_EXPECT(slot2 == slot);
	KT_EXPECT(word2 != word);
	KT_EXPECT((word2 & REGCACHE_SLOT_ACTIVE) != 0);
	KT_EXPECT(kt_stats(&c, &s) == 0);
	KT_EXPECT(s.watches == 2);
	KT_EXPECT(s.pinned_bytes == 0);
	kt_close(&c);
	munmap(p, 4 * pg);
}

static void test_watch_bad(void)
{
	struct regcache_watch w;
	struct kt_ctx c;
	char *p = kt_map_pages(2);
	char *hole;

	KT_ASSERT(p != NULL);
	KT_ASSERT(kt_open(&c, 0, false) == 0);
	KT_EXPECT(kt_watch(&c, p, 0, 1, 0, NULL, NULL) == -EINVAL);		/* len 0 */
	KT_EXPECT(kt_watch(&c, (void *)-4096L, 8192, 1, 0, NULL, NULL) == -EINVAL); /* wraps */
	KT_EXPECT(kt_watch(&c, (void *)KADDR, pg, 1, 0, NULL, NULL) == -EINVAL);	/* kernel */
	KT_EXPECT(kt_watch(&c, (void *)0x7ffffffff000UL, 2 * pg, 1, 0, NULL, NULL) == -EINVAL);
	KT_EXPECT(kt_watch(&c, p, pg, 1, pg + 1, NULL, NULL) == -EINVAL);	/* pinned > len */

	memset(&w, 0, sizeof(w));
	w.addr = (uintptr_t)p;
	w.len = pg;
	w.flags = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_WATCH, &w) == -EINVAL);
	w.flags = 0;
	w.reserved[1] = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_WATCH, &w) == -EINVAL);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_WATCH, NULL) == -EFAULT);

	/*
	 * An unmapped range, and one that runs off the end of a mapping:
	 * -ENOMEM as mlock(2) and madvise(2) say it (-EFAULT is for a bad
	 * pointer to the argument).
	 */
	hole = kt_map_pages(1);
	KT_ASSERT(hole != NULL);
	munmap(hole, pg);
	KT_EXPECT(kt_watch(&c, hole, pg, 1, 0, NULL, NULL) == -ENOMEM);
	munmap(p + pg, pg);
	KT_EXPECT(kt_watch(&c, p, 2 * pg, 1, 0, NULL, NULL) == -ENOMEM);

	/* nothing leaked by the failures */
	{
		struct regcache_ctx_stats s;

		KT_EXPECT(kt_stats(&c, &s) == 0);
		KT_EXPECT(s.watches == 0);
		KT_EXPECT(s.pinned_bytes == 0);
	}
	kt_close(&c);
	munmap(p, pg);
}

static void test_watch_limit(void)
{
	long long old = kt_param("max_watches");
	struct kt_ctx c;
	char *p = kt_map_pages(1);
	uint32_t slot;
	int i;

	KT_ASSERT(p != NULL && old > 0);
	KT_EXPECT(write_param("max_watches", 0) == -EINVAL);
	KT_ASSERT(write_param("max_watches", 8) == 0);
	KT_EXPECT(kt_open(&c, 0, true) == 0);
	KT_EXPECT(write_param("max_watches", old) == 0);
	KT_ASSERT(c.fd >= 0);
	KT_EXPECT(c.info.max_watches == 8);
	KT_EXPECT(c.info.status_size == (uint64_t)pg);
	for (i = 0; i < 8; i++)
		KT_EXPECT(kt_watch(&c, p, pg, i, 0, &slot, NULL) == 0);
	KT_EXPECT(kt_watch(&c, p, pg, 99, 0, NULL, NULL) == -ENOSPC);
	KT_EXPECT(kt_unwatch(&c, 3, 3) == 0);
	KT_EXPECT(kt_watch(&c, p, pg, 99, 0, &slot, NULL) == 0);
	KT_EXPECT(slot == 3);
	kt_close(&c);
	munmap(p, pg);
}

static void test_pin_cap(void)
{
	long long base = kt_sysfs("pinned_bytes");
	struct regcache_info info;
	struct kt_ctx c;
	char *p = kt_map_pages(16);
	uint32_t s1, s2;

	KT_ASSERT(p != NULL);
	KT_ASSERT(write_param("max_pinned_bytes", 8 * pg) == 0);
	KT_ASSERT(kt_open(&c, 0, false) == 0);
	memset(&info, 0, sizeof(info));
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &info) == 0);
	KT_EXPECT(info.max_pinned_bytes == (uint64_t)(8 * pg));
	KT_EXPECT(kt_watch(&c, p, 6 * pg, 1, 6 * pg, &s1, NULL) == 0);
	KT_EXPECT(kt_sysfs("pinned_bytes") == base + 6 * pg);
	KT_EXPECT(kt_watch(&c, p + 6 * pg, 4 * pg, 2, 4 * pg, NULL, NULL) == -ENOSPC);
	KT_EXPECT(kt_watch(&c, p + 6 * pg, 4 * pg, 2, 2 * pg, &s2, NULL) == 0);
	KT_EXPECT(kt_watch(&c, p + 6 * pg, 4 * pg, 3, 1, NULL, NULL) == -ENOSPC);
	/* unpinned (ODP-style) watches do not count */
	KT_EXPECT(kt_watch(&c, p + 6 * pg, 4 * pg, 3, 0, NULL, NULL) == 0);
	KT_EXPECT(kt_unwatch(&c, s1, 1) == 0);
	KT_EXPECT(kt_watch(&c, p, 6 * pg, 4, 6 * pg, NULL, NULL) == 0);
	KT_EXPECT(write_param("max_pinned_bytes", 0) == 0);
	KT_EXPECT(kt_watch(&c, p, 16 * pg, 5, 16 * pg, NULL, NULL) == 0);
	KT_EXPECT(kt_sysfs("pinned_bytes") == base + 24 * pg);
	kt_close(&c);
	KT_EXPECT(kt_sysfs("pinned_bytes") == base);
	(void)s2;
	munmap(p, 16 * pg);
}

static void test_batch(void)
{
	struct regcache_watch_batch b;
	struct regcache_watch w[100];
	struct regcache_ctx_stats s;
	struct kt_ctx c;
	char *p = kt_map_pages(100);
	int i;

	KT_ASSERT(p != NULL);
	KT_ASSERT(kt_open(&c, 0, true) == 0);
	memset(w, 0, sizeof(w));
	for (i = 0; i < 100; i++) {
		w[i].addr = (uintptr_t)(p + i * pg);
		w[i].len = pg;
		w[i].cookie = 1000 + i;
	}
	memset(&b, 0, sizeof(b));
	b.watches = (uintptr_t)w;
	b.count = 100;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_WATCH_BATCH, &b) == 0);
	KT_EXPECT(b.done == 100);
	for (i = 0; i < 100; i++) {
		KT_EXPECT((w[i].slot_word & REGCACHE_SLOT_ACTIVE) != 0);
		KT_EXPECT(kt_slot(&c, w[i].slot) == w[i].slot_word);
	}
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_UNWATCH_ALL, NULL) == 0);
	KT_EXPECT(kt_stats(&c, &s) == 0);
	KT_EXPECT(s.watches == 0);
	for (i = 0; i < 100; i++)
		KT_EXPECT(!(kt_slot(&c, w[i].slot) & REGCACHE_SLOT_ACTIVE));

	/* stops at the first bad element; the earlier ones are live */
	w[37].len = 0;
	b.done = 0;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_WATCH_BATCH, &b) == -EINVAL);
	KT_EXPECT(b.done == 37);
	KT_EXPECT(kt_stats(&c, &s) == 0);
	KT_EXPECT(s.watches == 37);
	KT_EXPECT(kt_slot(&c, w[36].slot) == w[36].slot_word);
	w[37].len = pg;

	b.count = 0;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_WATCH_BATCH, &b) == -EINVAL);
	b.count = REGCACHE_BATCH_MAX + 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_WATCH_BATCH, &b) == -EINVAL);
	b.count = 1;
	b.flags = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_WATCH_BATCH, &b) == -EINVAL);
	b.flags = 0;
	b.reserved0 = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_WATCH_BATCH, &b) == -EINVAL);
	b.reserved0 = 0;
	b.reserved[1] = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_WATCH_BATCH, &b) == -EINVAL);
	b.reserved[1] = 0;
	b.watches = 8;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_WATCH_BATCH, &b) == -EFAULT);
	KT_EXPECT(b.done == 0);
	b.watches = KADDR;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_WATCH_BATCH, &b) == -EFAULT);
	KT_EXPECT(kt_stats(&c, &s) == 0);
	KT_EXPECT(s.watches == 37);
	kt_close(&c);
	munmap(p, 100 * pg);
}

static void test_unwatch(void)
{
	struct regcache_unwatch u;
	struct kt_ctx c;
	char *p = kt_map_pages(1);
	uint32_t slot;
	uint64_t word;

	KT_ASSERT(p != NULL);
	KT_ASSERT(kt_open(&c, 0, true) == 0);
	KT_EXPECT(kt_watch(&c, p, pg, 7, 0, &slot, &word) == 0);
	KT_EXPECT(kt_unwatch(&c, slot, 8) == -ENOENT);			/* foreign cookie */
	KT_EXPECT(kt_unwatch(&c, slot + 1, 7) == -ENOENT);		/* free slot */
	KT_EXPECT(kt_unwatch(&c, c.info.max_watches, 7) == -ENOENT);	/* out of range */
	KT_EXPECT(kt_unwatch(&c, 0xffffffffU, 7) == -ENOENT);
	memset(&u, 0, sizeof(u));
	u.slot = slot;
	u.cookie = 7;
	u.flags = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_UNWATCH, &u) == -EINVAL);
	u.flags = 0;
	u.reserved[0] = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_UNWATCH, &u) == -EINVAL);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_UNWATCH, NULL) == -EFAULT);
	KT_EXPECT(kt_slot(&c, slot) == word);
	KT_EXPECT(kt_unwatch(&c, slot, 7) == 0);
	KT_EXPECT(kt_unwatch(&c, slot, 7) == -ENOENT);			/* double */

	/*
	 * The slot is reused by a newer watch with the same cookie: an
	 * UNWATCH that names the old watch's word is stale and fails, the
	 * newer watch stays; its own word releases it.  (slot_word 0 matches
	 * by slot and cookie only, as ABI 2 first did.)
	 */
	{
		uint32_t slot2;
		uint64_t word2;

		KT_EXPECT(kt_watch(&c, p, pg, 7, 0, &slot2, &word2) == 0);
		KT_EXPECT(slot2 == slot && word2 != word);
		KT_EXPECT(kt_unwatch_word(&c, slot, 7, word) == -ENOENT);
		KT_EXPECT(kt_slot(&c, slot) == word2);
		KT_EXPECT(kt_unwatch_word(&c, slot, 7, word2) == 0);
		KT_EXPECT(kt_unwatch_word(&c, slot, 7, word2) == -ENOENT);
		KT_EXPECT(kt_watch(&c, p, pg, 7, 0, &slot2, &word2) == 0);
		KT_EXPECT(kt_unwatch_word(&c, slot2, 7, 0) == 0);
	}

	/* an invalidated slot is unwatched normally */
	KT_EXPECT(kt_watch(&c, p, pg, 9, 0, &slot, &word) == 0);
	KT_EXPECT(madvise(p, pg, MADV_DONTNEED) == 0);
	KT_EXPECT(!(kt_slot(&c, slot) & REGCACHE_SLOT_ACTIVE));
	KT_EXPECT(kt_unwatch(&c, slot, 9) == 0);
	KT_EXPECT((kt_slot(&c, slot) & REGCACHE_SLOT_GEN_MASK) ==
		  (word & REGCACHE_SLOT_GEN_MASK) + 2);
	kt_close(&c);
	munmap(p, pg);
}

/*
 * A tagged pointer (x86 LAM, arm64 TBI), once the process has enabled
 * them: WATCH takes it, the event names it as given, and the watch
 * covers the untagged pages.  Where the CPU or kernel has no tagged
 * addresses (x86 without LAM: 6.1, and QEMU's TCG) the case skips.
 */
static void test_watch_tagged(void)
{
	char *p = kt_map_pages(1);
	struct regcache_event ev;
	uint64_t tagged, word;
	struct kt_ctx c;
	uint32_t slot;
	int ret;

	KT_ASSERT(p != NULL);
#if defined(__x86_64__)
	/* ARCH_ENABLE_TAGGED_ADDR, 6 bits: LAM_U57, tag in bits 57..62 */
	ret = (int)syscall(SYS_arch_prctl, 0x4002, 6UL);
	tagged = (uintptr_t)p | (0x2aULL << 57);
#elif defined(__aarch64__)
	/* PR_SET_TAGGED_ADDR_CTRL, PR_TAGGED_ADDR_ENABLE: TBI, tag in the top byte */
	ret = prctl(55, 1UL, 0UL, 0UL, 0UL);
	tagged = (uintptr_t)p | (0x2aULL << 56);
#else
	ret = -1;
	errno = EOPNOTSUPP;
	tagged = 0;
#endif
	if (ret) {
		kt_skip("no tagged user addresses here: %s", strerror(errno));
		munmap(p, pg);
		return;
	}
	KT_ASSERT(kt_open(&c, 0, true) == 0);
	KT_EXPECT(kt_watch(&c, (void *)(uintptr_t)tagged, pg, 3, 0, &slot, &word) == 0);
	KT_EXPECT(munmap(p, pg) == 0);
	KT_EXPECT(kt_slot(&c, slot) != word);
	KT_EXPECT(kt_read_events(&c, &ev, 1) == 1);
	KT_EXPECT(ev.addr == tagged && ev.inval_addr == (uintptr_t)p);
	kt_close(&c);
}

/*
 * An identical WATCH (addr, len, cookie, pinned_bytes) of a live watch
 * returns that watch: same slot and word, no second watch, one UNWATCH
 * releases it.  Any input different, or the first watch invalidated: a
 * new watch.
 */
static void test_watch_same(void)
{
	struct regcache_ctx_stats s;
	uint32_t slot, slot2, slot3;
	uint64_t word, word2, word3;
	char *p = kt_map_pages(2);
	struct kt_ctx c;

	KT_ASSERT(p != NULL);
	KT_ASSERT(kt_open(&c, 0, true) == 0);
	KT_EXPECT(kt_watch(&c, p, pg, 5, pg, &slot, &word) == 0);
	KT_EXPECT(kt_watch(&c, p, pg, 5, pg, &slot2, &word2) == 0);
	KT_EXPECT(slot2 == slot && word2 == word);
	KT_EXPECT(kt_stats(&c, &s) == 0);
	KT_EXPECT(s.watches == 1 && s.watch_calls == 2 && s.pinned_bytes == (uint64_t)pg);
	/* a different cookie, length or pinned count is another watch */
	KT_EXPECT(kt_watch(&c, p, pg, 6, pg, &slot3, NULL) == 0 && slot3 != slot);
	KT_EXPECT(kt_watch(&c, p, 2 * pg, 5, pg, &slot3, NULL) == 0 && slot3 != slot);
	KT_EXPECT(kt_watch(&c, p, pg, 5, 0, &slot3, NULL) == 0 && slot3 != slot);
	KT_EXPECT(kt_stats(&c, &s) == 0 && s.watches == 4);
	/* one UNWATCH releases it */
	KT_EXPECT(kt_unwatch_word(&c, slot, 5, word) == 0);
	KT_EXPECT(kt_unwatch_word(&c, slot, 5, word) == -ENOENT);
	/* once invalidated, the same inputs make a new watch */
	KT_EXPECT(kt_watch(&c, p + pg, pg, 9, 0, &slot, &word) == 0);
	KT_EXPECT(madvise(p + pg, pg, MADV_DONTNEED) == 0);
	KT_EXPECT(kt_slot(&c, slot) != word);
	KT_EXPECT(kt_watch(&c, p + pg, pg, 9, 0, &slot3, &word3) == 0);
	KT_EXPECT(slot3 != slot && kt_slot(&c, slot3) == word3);
	/* and that one is found again, not the invalidated one */
	KT_EXPECT(kt_watch(&c, p + pg, pg, 9, 0, &slot2, &word2) == 0);
	KT_EXPECT(slot2 == slot3 && word2 == word3);
	kt_close(&c);
	munmap(p, 2 * pg);
}

static void test_stats_flush_read(void)
{
	struct regcache_ctx_stats s;
	struct regcache_event ev[4];
	struct pollfd pfd;
	struct kt_ctx c;
	char *p = kt_map_pages(2);
	uint32_t slot;

	KT_ASSERT(p != NULL);
	KT_ASSERT(kt_open(&c, 0, true) == 0);
	memset(&s, 0, sizeof(s));
	s.flags = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_STATS, &s) == -EINVAL);
	s.flags = 0;
	s.reserved[0] = 1;
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_STATS, &s) == -EINVAL);
	KT_EXPECT(kt_ioctl(c.fd, REGCACHE_IOC_GET_STATS, NULL) == -EFAULT);

	/* empty: EAGAIN, not readable; a short buffer is EINVAL */
	KT_EXPECT(kt_read_events(&c, ev, 4) == -EAGAIN);
	KT_EXPECT(read(c.fd, ev, sizeof(ev[0]) - 1) == -1 && errno == EINVAL);
	pfd.fd = c.fd;
	pfd.events = POLLIN;
	KT_EXPECT(poll(&pfd, 1, 0) == 0);

	KT_EXPECT(kt_watch(&c, p, 2 * pg, 5, 0, &slot, NULL) == 0);
	KT_EXPECT(munmap(p, 2 * pg) == 0);
	KT_EXPECT(poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN));
	KT_EXPECT(c.st->events_pending == 1);
	KT_EXPECT(c.st->events_total == 1);
	KT_EXPECT(kt_stats(&c, &s) == 0);
	KT_EXPECT(s.events_pending == 1);
	KT_EXPECT(s.events_total == 1);
	KT_EXPECT(s.watches == 1);		/* invalidated, not yet unwatched */
	KT_EXPECT(kt_flush(&c) == 0);
	KT_EXPECT(c.st->events_pending == 0);
	KT_EXPECT(kt_read_events(&c, ev, 4) == -EAGAIN);
	KT_EXPECT(poll(&pfd, 1, 0) == 0);
	KT_EXPECT(kt_unwatch(&c, slot, 5) == 0);
	KT_EXPECT(kt_stats(&c, &s) == 0);
	KT_EXPECT(s.unwatch_calls == 1);
	kt_close(&c);
}

struct reader {
	int fd;
	ssize_t n;
	int err;
	struct regcache_event ev[4];
};

static void *blocking_reader(void *arg)
{
	struct reader *r = arg;
	struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

	/* poll first (must block, then wake), then a blocking read */
	if (poll(&pfd, 1, 10000) != 1) {
		r->err = -ETIMEDOUT;
		return NULL;
	}
	r->n = read(r->fd, r->ev, sizeof(r->ev));
	r->err = r->n < 0 ? -errno : 0;
	return NULL;
}

/* A waiter in poll()/read() wakes when another thread unmaps a watched range. */
static void test_blocking_wakeup(void)
{
	struct reader r = { 0 };
	struct kt_ctx c;
	char *p = kt_map_pages(2);
	pthread_t th;
	uint32_t slot;

	KT_ASSERT(p != NULL);
	KT_ASSERT(kt_open(&c, 0, true) == 0);
	KT_ASSERT(kt_watch(&c, p, 2 * pg, 77, 0, &slot, NULL) == 0);
	r.fd = c.fd;
	KT_ASSERT(pthread_create(&th, NULL, blocking_reader, &r) == 0);
	usleep(200 * 1000);
	KT_EXPECT(munmap(p, 2 * pg) == 0);
	pthread_join(th, NULL);
	KT_EXPECT(r.err == 0);
	KT_EXPECT(r.n == (ssize_t)sizeof(r.ev[0]));
	KT_EXPECT(r.ev[0].cookie == 77);
	KT_EXPECT(r.ev[0].slot == slot);
	KT_EXPECT(r.ev[0].reason == REGCACHE_REASON_UNMAP);
	KT_EXPECT(r.ev[0].addr == (uintptr_t)p && r.ev[0].len == (uint64_t)(2 * pg));
	kt_close(&c);
}

static void test_unknown_ioctl(void)
{
	char buf[256] = { 0 };
	struct kt_ctx c;

	KT_ASSERT(kt_open(&c, 0, false) == 0);
	KT_EXPECT(kt_ioctl(c.fd, _IO(REGCACHE_IOC_MAGIC, 99), NULL) == -ENOTTY);
	KT_EXPECT(kt_ioctl(c.fd, _IOWR(REGCACHE_IOC_MAGIC, 1, char[16]), buf) == -ENOTTY);
	KT_EXPECT(kt_ioctl(c.fd, _IOWR('T', 1, struct regcache_info), buf) == -ENOTTY);
	KT_EXPECT(kt_ioctl(c.fd, _IO(REGCACHE_IOC_MAGIC, 0), NULL) == -ENOTTY);
	/* ABI 1's argument-less FLUSH is retired, not reinterpreted */
	KT_EXPECT(kt_ioctl(c.fd, _IO(REGCACHE_IOC_MAGIC, 7), NULL) == -ENOTTY);
	kt_close(&c);
}

static void test_mmap_rules(void)
{
	struct kt_ctx c;
	size_t sz;
	void *m;

	KT_ASSERT(kt_open(&c, 0, false) == 0);
	sz = c.info.status_size;
	m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, c.fd, 0);
	KT_EXPECT(m == MAP_FAILED && errno == EPERM);
	m = mmap(NULL, sz + pg, PROT_READ, MAP_SHARED, c.fd, 0);
	KT_EXPECT(m == MAP_FAILED && errno == EINVAL);
	if (sz > (size_t)pg) {
		m = mmap(NULL, sz - pg, PROT_READ, MAP_SHARED, c.fd, 0);
		KT_EXPECT(m == MAP_FAILED && errno == EINVAL);
	}
	m = mmap(NULL, sz, PROT_READ, MAP_SHARED, c.fd, pg);
	KT_EXPECT(m == MAP_FAILED && errno == EINVAL);
	m = mmap(NULL, sz, PROT_READ, MAP_PRIVATE, c.fd, 0);
	KT_EXPECT(m == MAP_FAILED && errno == EINVAL);
	m = mmap(NULL, sz, PROT_READ, MAP_SHARED, c.fd, 0);
	KT_ASSERT(m != MAP_FAILED);
	/* VM_MAYWRITE is gone: no upgrade later, and no growth */
	KT_EXPECT(mprotect(m, sz, PROT_READ | PROT_WRITE) == -1 && errno == EACCES);
	KT_EXPECT(mremap(m, sz, sz + pg, 0) == MAP_FAILED);
	KT_EXPECT(((struct regcache_status *)m)->abi_version == REGCACHE_ABI_VERSION);
	munmap(m, sz);
	kt_close(&c);
}

/*
 * A read-only open maps the area too: for MAP_SHARED of an O_RDONLY file
 * the kernel clears VM_SHARED and keeps VM_MAYSHARE, which is what the
 * module tests.  MAP_PRIVATE has neither and stays refused; a watch's
 * word shows through the mapping.
 */
static void test_mmap_rdonly(void)
{
	struct regcache_info info = { 0 };
	char *p = kt_map_pages(1);
	struct kt_ctx c;
	uint32_t slot;
	uint64_t word;
	void *m;

	KT_ASSERT(p != NULL);
	memset(&c, 0, sizeof(c));
	c.fd = open(REGCACHE_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	KT_ASSERT(c.fd >= 0);
	KT_ASSERT(kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &info) == 0);
	m = mmap(NULL, info.status_size, PROT_READ, MAP_PRIVATE, c.fd, 0);
	KT_EXPECT(m == MAP_FAILED && errno == EINVAL);
	m = mmap(NULL, info.status_size, PROT_READ, MAP_SHARED, c.fd, 0);
	KT_ASSERT(m != MAP_FAILED);
	c.info = info;
	c.st = m;
	KT_EXPECT(c.st->abi_version == REGCACHE_ABI_VERSION);
	KT_EXPECT(kt_watch(&c, p, pg, 5, 0, &slot, &word) == 0);
	KT_EXPECT(kt_slot(&c, slot) == word);
	KT_EXPECT(munmap(p, pg) == 0);
	KT_EXPECT(kt_slot(&c, slot) != word);
	kt_close(&c);
}

int main(int argc, char **argv)
{
	static const struct kt_case cases[] = {
		{ "get_info", test_get_info },
		{ "configure", test_configure },
		{ "watch_ok", test_watch_ok },
		{ "watch_bad_input", test_watch_bad },
		{ "watch_limit", test_watch_limit },
		{ "pin_cap", test_pin_cap },
		{ "watch_batch", test_batch },
		{ "unwatch", test_unwatch },
		{ "watch_same", test_watch_same },
		{ "watch_tagged", test_watch_tagged },
		{ "stats_flush_read", test_stats_flush_read },
		{ "blocking_wakeup", test_blocking_wakeup },
		{ "unknown_ioctl", test_unknown_ioctl },
		{ "mmap_rules", test_mmap_rules },
		{ "mmap_rdonly", test_mmap_rdonly },
		{ NULL, NULL },
	};

	pg = sysconf(_SC_PAGESIZE);
	kt_require_device();
	kt_add_suite("kmod_abi", NULL, NULL, cases);
	return kt_main(argc, argv);
}
