// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_stress.c - 2 processes x 8 threads watch, unwatch, munmap and
 * madvise concurrently on one context per process.
 *
 * Each thread owns its mappings and keeps its own books (live watches,
 * pinned bytes, invalidations it caused).  At the end the context's
 * counters must equal the sum of the books, every invalidated slot must
 * have been seen inactive the moment munmap/madvise returned, and after
 * both processes close their fds the module-wide counters are back where
 * they started.  KMOD_STRESS_SECONDS sets the duration (default 30).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kt_harness.h"
#include "test_kmod_util.h"

#define THREADS		8
#define PAGES		32	/* per thread mapping */

static long pg;
static struct kt_ctx ctx;
static atomic_bool stop;

struct book {
	unsigned int seed;
	long live;
	long long pinned;
	long watches;
	long unwatches;
	long invalidations;
	long late;		/* slot still active after munmap returned */
	long errors;
};

struct slotrec {
	uint32_t slot;
	uint64_t word;
	uint64_t cookie;
	uint64_t pinned;
	int live;
};

static void *worker(void *arg)
{
	struct book *b = arg;
	struct slotrec rec[PAGES];
	uint64_t cookie = (uint64_t)(uintptr_t)b << 20;
	char *p = NULL;
	int i, op;

	memset(rec, 0, sizeof(rec));
	while (!atomic_load(&stop)) {
		if (!p) {
			p = kt_map_pages(PAGES);
			if (!p) {
				b->errors++;
				break;
			}
		}
		i = rand_r(&b->seed) % PAGES;
		op = rand_r(&b->seed) % 10;
		if (op < 5 && !rec[i].live) {
			uint64_t pin = rand_r(&b->seed) % 2 ? pg : 0;

			rec[i].cookie = ++cookie;
			if (kt_watch(&ctx, p + i * pg, pg, rec[i].cookie, pin,
				     &rec[i].slot, &rec[i].word)) {
				b->errors++;
				continue;
			}
			rec[i].pinned = pin;
			rec[i].live = 1;
			b->live++;
			b->pinned += pin;
			b->watches++;
		} else if (op < 8 && rec[i].live) {
			if (kt_unwatch(&ctx, rec[i].slot, rec[i].cookie))
				b->errors++;
			rec[i].live = 0;
			b->live--;
			b->pinned -= rec[i].pinned;
			b->unwatches++;
		} else if (op == 8) {
			/* zap one page: its watch (if any) must flip now */
			madvise(p + i * pg, pg, MADV_DONTNEED);
			p[i * pg] = 1;
			if (rec[i].live == 1) {
				if (kt_slot(&ctx, rec[i].slot) & REGCACHE_SLOT_ACTIVE)
					b->late++;
				b->invalidations++;
				rec[i].live = 2;	/* still a watch, now invalidated */
			}
		} else if (op == 9 && rand_r(&b->seed) % 8 == 0) {
			/* drop the whole mapping */
			munmap(p, PAGES * pg);
			for (i = 0; i < PAGES; i++) {
				if (rec[i].live == 1) {
					if (kt_slot(&ctx, rec[i].slot) & REGCACHE_SLOT_ACTIVE)
						b->late++;
					b->invalidations++;
				}
				if (rec[i].live) {
					if (kt_unwatch(&ctx, rec[i].slot, rec[i].cookie))
						b->errors++;
					b->live--;
					b->pinned -= rec[i].pinned;
					b->unwatches++;
					rec[i].live = 0;
				}
			}
			p = NULL;
		}
	}
	return NULL;
}

/* One process: returns 0 when its books balance. */
static int run_process(int seconds, unsigned int seed)
{
	struct book books[THREADS];
	struct regcache_ctx_stats s;
	pthread_t th[THREADS];
	long live = 0, watches = 0, unwatches = 0, inval = 0, late = 0, errors = 0;
	long long pinned = 0;
	int i, bad = 0;

	if (kt_open(&ctx, 0, true))
		return 1;
	memset(books, 0, sizeof(books));
	for (i = 0; i < THREADS; i++) {
		books[i].seed = seed * 100 + i;
		if (pthread_create(&th[i], NULL, worker, &books[i]))
			return 2;
	}
	sleep(seconds);
	atomic_store(&stop, true);
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		live += books[i].live;
		pinned += books[i].pinned;
		watches += books[i].watches;
		unwatches += books[i].unwatches;
		inval += books[i].invalidations;
		late += books[i].late;
		errors += books[i].errors;
	}
	if (kt_stats(&ctx, &s))
		return 3;
	printf("# pid %d: %ld watches, %ld unwatches, %ld invalidations, %llu events, %ld live\n",
	       getpid(), watches, unwatches, inval, (unsigned long long)s.events_total, live);
	if (errors || late)
		bad |= 4;
	if (s.watches != (uint32_t)live || s.pinned_bytes != (uint64_t)pinned)
		bad |= 8;
	if (s.watch_calls != (uint64_t)watches || s.unwatch_calls != (uint64_t)unwatches)
		bad |= 16;
	/*
	 * munmap/madvise of a live watch each made one event; the kernel may
	 * add spurious ones (reclaim, compaction) but never fewer.
	 */
	if (s.events_total < (uint64_t)inval)
		bad |= 32;
	if (bad)
		printf("# pid %d: errors %ld late %ld; ctx watches %u pinned %llu calls %llu/%llu\n",
		       getpid(), errors, late, s.watches, (unsigned long long)s.pinned_bytes,
		       (unsigned long long)s.watch_calls, (unsigned long long)s.unwatch_calls);
	if (kt_ioctl(ctx.fd, REGCACHE_IOC_UNWATCH_ALL, NULL) || kt_stats(&ctx, &s) ||
	    s.watches || s.pinned_bytes)
		bad |= 64;
	kt_close(&ctx);
	return bad;
}

static void test_stress(void)
{
	int seconds = (int)kt_env_long("KMOD_STRESS_SECONDS", 30, 1, 3600);
	long long base_w = kt_sysfs("watches"), base_p = kt_sysfs("pinned_bytes");
	long long base_c = kt_sysfs("nr_contexts");
	pid_t pid[2];
	int i, st;

	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		KT_ASSERT(pid[i] >= 0);
		if (!pid[i]) {
			fflush(stdout);
			_exit(run_process(seconds, i + 1));
		}
	}
	for (i = 0; i < 2; i++) {
		KT_EXPECT(waitpid(pid[i], &st, 0) == pid[i]);
		KT_EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		if (WIFEXITED(st) && WEXITSTATUS(st))
			kt_diag("process %d: books did not balance (mask %d)", i, WEXITSTATUS(st));
	}
	KT_EXPECT(kt_sysfs("watches") == base_w);
	KT_EXPECT(kt_sysfs("pinned_bytes") == base_p);
	KT_EXPECT(kt_sysfs("nr_contexts") == base_c);
}

int main(int argc, char **argv)
{
	static const struct kt_case cases[] = {
		{ "threads8_procs2", test_stress },
		{ NULL, NULL },
	};

	pg = sysconf(_SC_PAGESIZE);
	kt_require_device();
	kt_add_suite("kmod_stress", NULL, NULL, cases);
	return kt_main(argc, argv);
}
