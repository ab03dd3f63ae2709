// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_mm.c - what the kernel's mm does to watched huge pages, as
 * regcache(4) documents it for a non-strict context:
 *   - a hugetlb COW mapping is copied at fork under CLEAR: invalidated;
 *   - a 2 MiB THP that is pinned long-term (an io_uring fixed buffer, the
 *     FOLL_LONGTERM pin ibv_reg_mr makes too) is split at fork (CLEAR):
 *     invalidated, though the parent keeps its pages; unpinned, it is
 *     only write-protected (PROTECTION): valid;
 *   - mprotect of part of a THP splits it (CLEAR): invalidated; of the
 *     whole THP, or of small pages, mprotect(PROT_READ) keeps it valid.
 * Needs root and regcache.ko; hugetlb pages are reserved here and given
 * back; the pinned case needs io_uring (else it skips).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt_harness.h"
#include "test_kmod_util.h"

#define HPAGE	(2UL << 20)

static long pg;
static struct kt_ctx c;

static int suite_init(void)
{
	struct regcache_config cfg;

	memset(&c, 0, sizeof(c));
	c.fd = open(REGCACHE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (c.fd < 0)
		return -1;
	/* These are the non-strict rules, whatever the module's default. */
	memset(&cfg, 0, sizeof(cfg));
	cfg.strict = REGCACHE_STRICT_OFF;
	if (kt_ioctl(c.fd, REGCACHE_IOC_CONFIGURE, &cfg) ||
	    kt_ioctl(c.fd, REGCACHE_IOC_GET_INFO, &c.info))
		return -1;
	c.st = mmap(NULL, c.info.status_size, PROT_READ, MAP_SHARED, c.fd, 0);
	return c.st == MAP_FAILED ? -1 : 0;
}

static int suite_cleanup(void)
{
	kt_close(&c);
	return 0;
}

/* Read events until empty; the reason of the one for cookie, or 0. */
static uint32_t event_reason(uint64_t cookie)
{
	struct regcache_event ev[16];
	uint32_t reason = 0;
	int i, n;

	while ((n = kt_read_events(&c, ev, 16)) > 0)
		for (i = 0; i < n; i++)
			if (ev[i].cookie == cookie)
				reason = ev[i].reason;
	return reason;
}

static void fork_and_reap(void)
{
	pid_t pid = fork();
	int st;

	KT_ASSERT(pid >= 0);
	if (!pid)
		_exit(0);
	KT_EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
}

/* A 2 MiB-aligned, populated THP, or NULL (reason in *why). */
static char *map_thp(void **base, const char **why)
{
	char *p, *a;
	FILE *f;
	char line[256];
	long kb = -1;
	unsigned long lo, hi;

	p = mmap(NULL, 2 * HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		*why = "mmap failed";
		return NULL;
	}
	*base = p;
	a = (char *)(((unsigned long)p + HPAGE - 1) & ~(HPAGE - 1));
	if (madvise(a, HPAGE, MADV_HUGEPAGE)) {
		*why = "MADV_HUGEPAGE refused (no THP in this kernel)";
		goto fail;
	}
	memset(a, 1, HPAGE);
	/* smaps: AnonHugePages of the VMA holding a */
	f = fopen("/proc/self/smaps", "r");
	if (!f) {
		*why = "no /proc/self/smaps";
		goto fail;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			kb = (lo <= (unsigned long)a && (unsigned long)a < hi) ? 0 : -1;
			continue;
		}
		if (kb == 0 && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	if (kb < (long)(HPAGE >> 10)) {
		*why = "the kernel gave small pages, not a 2 MiB THP (transparent_hugepage=never?)";
		goto fail;
	}
	return a;

fail:
	munmap(p, 2 * HPAGE);
	return NULL;
}

static void thp_fork(bool pinned)
{
	const char *why = NULL;
	void *base;
	char *a = map_thp(&base, &why);
	uint32_t slot;
	uint64_t word;
	int pin = -1;

	if (!a) {
		kt_skip("%s", why);
		return;
	}
	KT_ASSERT(kt_watch(&c, a, HPAGE, 0x7f, pinned ? HPAGE : 0, &slot, &word) == 0);
	if (pinned) {
		pin = kt_pin(a, HPAGE);
		if (pin < 0) {
			kt_skip("no long-term pin (io_uring fixed buffer): %s", strerror(-pin));
			KT_EXPECT(kt_unwatch(&c, slot, 0x7f) == 0);
			munmap(base, 2 * HPAGE);
			return;
		}
	}
	fork_and_reap();
	if (pinned) {
		KT_EXPECT(kt_slot(&c, slot) != word);
		KT_EXPECT(event_reason(0x7f) == REGCACHE_REASON_CLEAR);
		kt_unpin(pin);
	} else {
		KT_EXPECT(kt_slot(&c, slot) == word);
		KT_EXPECT(event_reason(0x7f) == 0);
	}
	KT_EXPECT(kt_unwatch(&c, slot, 0x7f) == 0);
	munmap(base, 2 * HPAGE);
	KT_EXPECT(kt_flush(&c) == 0);
}

static void test_thp_fork_unpinned(void)
{
	thp_fork(false);
}

static void test_thp_fork_pinned(void)
{
	thp_fork(true);
}

static void thp_mprotect(bool partial)
{
	const char *why = NULL;
	void *base;
	char *a = map_thp(&base, &why);
	uint32_t slot;
	uint64_t word;

	if (!a) {
		kt_skip("%s", why);
		return;
	}
	KT_ASSERT(kt_watch(&c, a, HPAGE, 0x7e, 0, &slot, &word) == 0);
	KT_EXPECT(mprotect(a, partial ? (size_t)pg : HPAGE, PROT_READ) == 0);
	if (partial) {
		KT_EXPECT(kt_slot(&c, slot) != word);
		KT_EXPECT(event_reason(0x7e) == REGCACHE_REASON_CLEAR);
	} else {
		KT_EXPECT(kt_slot(&c, slot) == word);
		KT_EXPECT(event_reason(0x7e) == 0);
	}
	KT_EXPECT(kt_unwatch(&c, slot, 0x7e) == 0);
	munmap(base, 2 * HPAGE);
	KT_EXPECT(kt_flush(&c) == 0);
}

static void test_thp_mprotect_partial(void)
{
	thp_mprotect(true);
}

static void test_thp_mprotect_whole(void)
{
	thp_mprotect(false);
}

/* Small pages: mprotect(PROT_READ) leaves a writable registration valid. */
static void test_mprotect_read_small(void)
{
	char *p = kt_map_pages(4);
	uint32_t slot;
	uint64_t word;

	KT_ASSERT(p != NULL);
	KT_ASSERT(kt_watch(&c, p, 4 * pg, 0x7d, 4 * pg, &slot, &word) == 0);
	KT_EXPECT(mprotect(p + pg, pg, PROT_READ) == 0);
	KT_EXPECT(mprotect(p, 4 * pg, PROT_READ) == 0);
	KT_EXPECT(kt_slot(&c, slot) == word);
	KT_EXPECT(event_reason(0x7d) == 0);
	KT_EXPECT(kt_unwatch(&c, slot, 0x7d) == 0);
	munmap(p, 4 * pg);
}

static long hugetlb_pages(void)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

static int set_hugetlb_pages(long n)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "w");
	int ret;

	if (!f)
		return -errno;
	ret = fprintf(f, "%ld\n", n) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/*
 * hugetlb: fork copies a private (COW) hugetlb mapping under CLEAR,
 * pinned or not; munmap is UNMAP.  4 huge pages are reserved for the
 * test and the old count restored.
 */
static void test_hugetlb(void)
{
	long old = hugetlb_pages();
	uint32_t s1, s2;
	uint64_t w1, w2;
	char *h;

	if (old < 0) {
		kt_skip("no /proc/sys/vm/nr_hugepages (hugetlb not built in)");
		return;
	}
	if (set_hugetlb_pages(old + 4) || hugetlb_pages() < old + 4) {
		set_hugetlb_pages(old);
		kt_skip("could not reserve 4 huge pages");
		return;
	}
	h = mmap(NULL, 2 * HPAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	KT_ASSERT(h != MAP_FAILED);
	memset(h, 2, 2 * HPAGE);
	KT_ASSERT(kt_watch(&c, h, HPAGE, 0x71, HPAGE, &s1, &w1) == 0);
	KT_ASSERT(kt_watch(&c, h + HPAGE, HPAGE, 0x72, HPAGE, &s2, &w2) == 0);
	fork_and_reap();
	KT_EXPECT(kt_slot(&c, s1) != w1);
	KT_EXPECT(event_reason(0x71) == REGCACHE_REASON_CLEAR);
	KT_EXPECT(kt_unwatch(&c, s1, 0x71) == 0);
	KT_EXPECT(kt_unwatch(&c, s2, 0x72) == 0);
	KT_EXPECT(kt_flush(&c) == 0);
	/* a fresh watch after the fork; munmap is UNMAP */
	KT_ASSERT(kt_watch(&c, h, 2 * HPAGE, 0x73, 0, &s1, &w1) == 0);
	KT_EXPECT(munmap(h, 2 * HPAGE) == 0);
	KT_EXPECT(kt_slot(&c, s1) != w1);
	KT_EXPECT(event_reason(0x73) == REGCACHE_REASON_UNMAP);
	KT_EXPECT(kt_unwatch(&c, s1, 0x73) == 0);
	KT_EXPECT(set_hugetlb_pages(old) == 0);
	KT_EXPECT(kt_flush(&c) == 0);
	(void)w2;
}

int main(int argc, char **argv)
{
	static const struct kt_case cases[] = {
		{ "thp_fork_unpinned_valid", test_thp_fork_unpinned },
		{ "thp_fork_pinned_clear", test_thp_fork_pinned },
		{ "thp_mprotect_partial_clear", test_thp_mprotect_partial },
		{ "thp_mprotect_whole_valid", test_thp_mprotect_whole },
		{ "mprotect_read_small_valid", test_mprotect_read_small },
		{ "hugetlb_fork_clear_munmap_unmap", test_hugetlb },
		{ NULL, NULL },
	};

	pg = sysconf(_SC_PAGESIZE);
	kt_require_device();
	kt_add_suite("kmod_mm", suite_init, suite_cleanup, cases);
	return kt_main(argc, argv);
}
