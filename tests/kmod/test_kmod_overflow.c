// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_overflow.c - a 16-entry ring and 1000 invalidations.
 *
 * The ring keeps the first 16 events and drops the rest; the overflow
 * count and flag say so; every one of the 1000 slot words is nevertheless
 * right, because slots change before events are queued.  read() then
 * returns the 16 records, then -ENOSPC (poll stays readable) until FLUSH.
 * The suite loads the module with ring_entries=16 for the "param" case;
 * the "configure" case asks for 16 entries itself.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kt_harness.h"
#include "test_kmod_util.h"

#define N_WATCH	1000
#define RING	16

static long pg;

static void overflow_run(uint32_t configure)
{
	static uint32_t slot[N_WATCH];
	static uint64_t word[N_WATCH];
	struct regcache_event ev[RING + 4];
	struct regcache_ctx_stats s;
	struct pollfd pfd;
	struct kt_ctx c;
	char *p = kt_map_pages(N_WATCH);
	int i, bad = 0, n;

	KT_ASSERT(p != NULL);
	KT_ASSERT(kt_open(&c, configure, true) == 0);
	KT_ASSERT(c.info.ring_entries == RING);
	KT_EXPECT(c.st->ring_entries == RING);
	for (i = 0; i < N_WATCH; i++)
		KT_ASSERT(kt_watch(&c, p + i * pg, pg, 5000 + i, pg, &slot[i], &word[i]) == 0);
	/* odd pages by munmap, even pages by MADV_DONTNEED: 1000 invalidations */
	for (i = 0; i < N_WATCH; i++) {
		if (i & 1)
			munmap(p + i * pg, pg);
		else
			madvise(p + i * pg, pg, MADV_DONTNEED);
	}
	for (i = 0; i < N_WATCH; i++)
		if (kt_slot(&c, slot[i]) != ((word[i] & REGCACHE_SLOT_GEN_MASK) + 1))
			bad++;
	KT_EXPECT(bad == 0);
	KT_EXPECT(c.st->flags & REGCACHE_STATUS_OVERFLOW);
	KT_EXPECT(c.st->events_total == N_WATCH);
	KT_EXPECT(c.st->events_pending == RING);
	KT_EXPECT(c.st->overflows == N_WATCH - RING);
	KT_EXPECT(kt_stats(&c, &s) == 0);
	KT_EXPECT(s.overflows == N_WATCH - RING);

	/* the kept records are the first 16, in order */
	n = kt_read_events(&c, ev, RING + 4);
	KT_EXPECT(n == RING);
	for (i = 0; i < n; i++) {
		KT_EXPECT(ev[i].cookie == 5000ULL + i);
		KT_EXPECT(ev[i].slot == slot[i]);
	}
	/* empty but lossy: -ENOSPC, and poll says readable so a waiter notices */
	KT_EXPECT(kt_read_events(&c, ev, 1) == -ENOSPC);
	pfd.fd = c.fd;
	pfd.events = POLLIN;
	KT_EXPECT(poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN));
	KT_EXPECT(kt_flush(&c) == 0);
	KT_EXPECT(!(c.st->flags & REGCACHE_STATUS_OVERFLOW));
	KT_EXPECT(c.st->overflows == N_WATCH - RING);	/* a counter, not a flag */
	KT_EXPECT(kt_read_events(&c, ev, 1) == -EAGAIN);
	KT_EXPECT(poll(&pfd, 1, 0) == 0);

	/* resync as a cache would: unwatch every invalidated slot */
	for (i = 0; i < N_WATCH; i++)
		KT_EXPECT(kt_unwatch(&c, slot[i], 5000 + i) == 0);
	KT_EXPECT(kt_stats(&c, &s) == 0);
	KT_EXPECT(s.watches == 0 && s.pinned_bytes == 0);
	kt_close(&c);
	for (i = 0; i < N_WATCH; i += 2)
		munmap(p + i * pg, pg);
}

static void test_configure16(void)
{
	overflow_run(RING);
}

static void test_param16(void)
{
	if (kt_param("ring_entries") != RING) {
		kt_skip("module not loaded with ring_entries=%d", RING);
		return;
	}
	overflow_run(0);
}

int main(int argc, char **argv)
{
	static const struct kt_case cases[] = {
		{ "configure_ring16", test_configure16 },
		{ "param_ring16", test_param16 },
		{ NULL, NULL },
	};

	pg = sysconf(_SC_PAGESIZE);
	kt_require_device();
	kt_add_suite("kmod_overflow", NULL, NULL, cases);
	return kt_main(argc, argv);
}
