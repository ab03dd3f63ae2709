// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_kmod.c - what regcache.ko costs (a benchmark, not a test).
 *
 *  churn     mmap + touch + munmap of one page, in a process that watches
 *            10^4 unrelated ranges vs one that has never opened the device
 *            (so its mm has no notifier at all: the same as no module);
 *            two long-lived workers run alternating blocks, median of the
 *            per-block ratios reported.
 *  watch     WATCH + UNWATCH per call, single ioctls vs WATCH_BATCH.
 *  latency   WATCH+UNWATCH of one page, timed pair by pair, while 0, 1
 *            and 3 other threads of the same process mmap + touch +
 *            munmap pages of their own (unrelated to the watch) in a loop:
 *            p50 / p99 / p99.9 of the pairs, and the spread of the
 *            per-round p99.  UNWATCH and WATCH wait for the mm's
 *            invalidate sequence (interval notifiers), which those
 *            munmaps keep busy.
 *  inval     munmap of a watched page vs an unwatched one, and how many
 *            loads after munmap returned it took to see the slot change
 *            (always 0: the callback ran before munmap returned; the
 *            battery asserts it).
 *
 * Output: "key value" lines on stdout and, when RC_RESULTS is set, in
 * $RC_RESULTS/bench_kmod-$RC_KERNEL[-$BENCH_TAG].txt.  Knobs: BENCH_ROUNDS (21
 * churn blocks per side), BENCH_CHURN (2000 iterations a block), BENCH_REPS
 * (5, for watch, inval and latency rounds), BENCH_WATCHES (10000),
 * BENCH_LAT (1000 WATCH+UNWATCH pairs per latency round), BENCH_LAT_PAGES
 * (1: pages each latency churner maps, touches and unmaps at a time; more
 * makes each of its invalidations last longer), BENCH_ONLY=latency (skip
 * the other three).  BENCH_ROUNDS is at most 64.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* RUSAGE_THREAD */
#endif
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kt_harness.h"
#include "test_kmod_util.h"

static long pg;
static FILE *out;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void report(const char *key, double v)
{
	printf("%s %.1f\n", key, v);
	if (out)
		fprintf(out, "%s %.1f\n", key, v);
}

static void report3(const char *key, double v)
{
	printf("%s %.3f\n", key, v);
	if (out)
		fprintf(out, "%s %.3f\n", key, v);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * A churn worker: a child process that maps the same nkeep pages on both
 * sides (so the churned page lands next to them and page-table
 * allocation is the same), watches them only if asked, then waits for
 * "run N" commands and answers with ns per mmap+touch+munmap.  Two
 * long-lived workers run alternating blocks, so host noise (TCG, other
 * guests) hits both sides alike and per-block ratios stay meaningful.
 */
struct churn_worker {
	pid_t pid;
	int cmd;	/* write: iterations to run, 0 = exit */
	int res;	/* read: double ns per iteration */
};

static void churn_worker_main(int cmd, int res, long nkeep, long nwatch)
{
	struct kt_ctx c;
	char *keep, *p;
	double t0, ns;
	long i, n;

	keep = kt_map_pages(nkeep);
	if (!keep)
		_exit(1);
	if (nwatch) {
		struct regcache_watch_batch b = { 0 };
		struct regcache_watch *w;
		long done = 0, k;

		w = calloc(REGCACHE_BATCH_MAX, sizeof(*w));
		if (!w || kt_open(&c, 0, true))
			_exit(1);
		while (done < nwatch) {
			k = nwatch - done < REGCACHE_BATCH_MAX ? nwatch - done : REGCACHE_BATCH_MAX;
			for (i = 0; i < k; i++) {
				memset(&w[i], 0, sizeof(w[i]));
				w[i].addr = (uintptr_t)(keep + (done + i) * pg);
				w[i].len = pg;
				w[i].cookie = done + i;
			}
			b.watches = (uintptr_t)w;
			b.count = k;
			if (kt_ioctl(c.fd, REGCACHE_IOC_WATCH_BATCH, &b))
				_exit(2);
			done += k;
		}
	}
	while (read(cmd, &n, sizeof(n)) == sizeof(n) && n > 0) {
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				_exit(3);
			p[0] = 1;
			munmap(p, pg);
		}
		ns = (now_ns() - t0) / n;
		if (write(res, &ns, sizeof(ns)) != sizeof(ns))
			_exit(4);
	}
	_exit(0);
}

static int churn_worker_start(struct churn_worker *w, long nkeep, long nwatch)
{
	int cmd[2], res[2];

	if (pipe(cmd) || pipe(res))
		return -errno;
	w->pid = fork();
	if (w->pid < 0)
		return -errno;
	if (!w->pid) {
		close(cmd[1]);
		close(res[0]);
		churn_worker_main(cmd[0], res[1], nkeep, nwatch);
	}
	close(cmd[0]);
	close(res[1]);
	w->cmd = cmd[1];
	w->res = res[0];
	return 0;
}

static double churn_worker_run(struct churn_worker *w, long n)
{
	double ns = -1;

	if (write(w->cmd, &n, sizeof(n)) != sizeof(n) || read(w->res, &ns, sizeof(ns)) != sizeof(ns))
		return -1;
	return ns;
}

static void churn_worker_stop(struct churn_worker *w)
{
	long zero = 0;

	if (write(w->cmd, &zero, sizeof(zero)) != sizeof(zero))
		kill(w->pid, SIGKILL);
	close(w->cmd);
	close(w->res);
	waitpid(w->pid, NULL, 0);
}

static double minimum(const double *v, int n)
{
	double m = v[0];
	int i;

	for (i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

/*
 * Three workers with the same 10^4 mapped pages: none watched (no
 * notifier on the mm at all, as without the module), one watched (the
 * kernel's fixed cost of having interval notifiers), all watched.
 * Reported: medians of per-round ratios, and ratios of the per-side
 * minima (the quietest block of each side, robust when the host is busy).
 */
static void bench_churn(int rounds, long iters, long watches)
{
	double t[3][64], r_all[64], r_one[64];
	struct churn_worker w[3];
	const long nwatch[3] = { 0, 1, watches };
	int i, k, j;

	for (k = 0; k < 3; k++)
		if (churn_worker_start(&w[k], watches, nwatch[k])) {
			fprintf(stderr, "bench_churn: cannot start workers\n");
			return;
		}
	for (k = 0; k < 3; k++)
		churn_worker_run(&w[k], iters / 4);	/* warm-up, discarded */
	/* rotate which side goes first */
	for (i = 0; i < rounds; i++) {
		for (j = 0; j < 3; j++) {
			k = (i + j) % 3;
			t[k][i] = churn_worker_run(&w[k], iters);
		}
		r_one[i] = t[1][i] / t[0][i];
		r_all[i] = t[2][i] / t[0][i];
	}
	for (k = 0; k < 3; k++)
		churn_worker_stop(&w[k]);
	for (i = 0; i < rounds; i++)
		printf("# churn round %d: ns none %.0f, 1 watch %.0f, %ld watches %.0f\n",
		       i, t[0][i], t[1][i], watches, t[2][i]);
	report("churn_ns_no_context_median", median(t[0], rounds));
	report("churn_ns_1_watch_median", median(t[1], rounds));
	report("churn_ns_10k_watches_median", median(t[2], rounds));
	report("churn_ns_no_context_min", minimum(t[0], rounds));
	report("churn_ns_1_watch_min", minimum(t[1], rounds));
	report("churn_ns_10k_watches_min", minimum(t[2], rounds));
	/* median() sorted r_all: its quartiles are the spread of the ratio */
	report3("churn_ratio_10k_median", median(r_all, rounds));
	report3("churn_ratio_10k_p25", r_all[rounds / 4]);
	report3("churn_ratio_10k_p75", r_all[(3 * rounds) / 4]);
	report3("churn_ratio_1_median", median(r_one, rounds));
	report3("churn_ratio_10k_of_minima", minimum(t[2], rounds) / minimum(t[0], rounds));
}

static void bench_watch(int reps, long n)
{
	struct regcache_watch *w = calloc(n, sizeof(*w));
	double single_w[64], single_u[64], batch_w[64];
	struct kt_ctx c;
	char *mem = kt_map_pages(n);
	long i, done, k;
	double t0;
	int r;

	if (!w || !mem || kt_open(&c, 0, true)) {
		fprintf(stderr, "bench_watch: setup failed\n");
		return;
	}
	for (r = 0; r < reps; r++) {
		t0 = now_ns();
		for (i = 0; i < n; i++)
			if (kt_watch(&c, mem + i * pg, pg, i, pg, &w[i].slot, NULL))
				break;
		single_w[r] = (now_ns() - t0) / n;
		t0 = now_ns();
		for (i = 0; i < n; i++)
			kt_unwatch(&c, w[i].slot, i);
		single_u[r] = (now_ns() - t0) / n;

		for (i = 0; i < n; i++) {
			memset(&w[i], 0, sizeof(w[i]));
			w[i].addr = (uintptr_t)(mem + i * pg);
			w[i].len = pg;
			w[i].cookie = i;
		}
		t0 = now_ns();
		for (done = 0; done < n; done += k) {
			struct regcache_watch_batch b = { 0 };

			k = n - done < REGCACHE_BATCH_MAX ? n - done : REGCACHE_BATCH_MAX;
			b.watches = (uintptr_t)(w + done);
			b.count = k;
			if (kt_ioctl(c.fd, REGCACHE_IOC_WATCH_BATCH, &b))
				break;
		}
		batch_w[r] = (now_ns() - t0) / n;
		kt_ioctl(c.fd, REGCACHE_IOC_UNWATCH_ALL, NULL);
	}
	report("watch_ns_per_call_single", median(single_w, reps));
	report("unwatch_ns_per_call_single", median(single_u, reps));
	report("watch_ns_per_range_batched", median(batch_w, reps));
	kt_close(&c);
	munmap(mem, n * pg);
	free(w);
}

/*
 * munmap of a watched page vs an unwatched one, paired in the same loop
 * (same process, same mm with notifiers) so noise hits both alike.
 */
static void bench_inval(int reps, long n)
{
	double watched[64], plain[64];
	long i, late = 0;
	struct kt_ctx c;
	uint32_t slot;
	double t0, tw, tp;
	char *p, *q;
	int r;

	if (kt_open(&c, 0, true))
		return;
	for (r = 0; r < reps; r++) {
		tw = tp = 0;
		for (i = 0; i < n; i++) {
			p = kt_map_pages(1);
			q = kt_map_pages(1);
			if (!p || !q || kt_watch(&c, p, pg, i, pg, &slot, NULL))
				break;
			t0 = now_ns();
			munmap(p, pg);
			tw += now_ns() - t0;
			if (kt_slot(&c, slot) & REGCACHE_SLOT_ACTIVE)
				late++;
			t0 = now_ns();
			munmap(q, pg);
			tp += now_ns() - t0;
			kt_unwatch(&c, slot, i);
		}
		kt_flush(&c);
		watched[r] = tw / n;
		plain[r] = tp / n;
	}
	report("munmap_ns_watched_page", median(watched, reps));
	report("munmap_ns_unwatched_page", median(plain, reps));
	report("slot_changes_seen_late", late);
	kt_close(&c);
}

/*
 * Threads that churn memory of their own in the bench's mm: each maps,
 * touches and unmaps one page until told to stop, so the mm always has
 * an invalidation starting or ending somewhere far from the watched page.
 * They run at nice 19, so that on a guest with fewer vCPUs than threads
 * the timed thread is not simply preempted by them (which costs the same
 * whatever the module does) and what remains is what the kernel makes it
 * wait for.
 */
struct lat_churn {
	pthread_t tid;
	volatile int *stop;
	long pages;	/* per mapping, each touched */
	long iters;
};

static void *lat_churn_main(void *arg)
{
	struct lat_churn *lc = arg;
	size_t len = lc->pages * pg;
	char *p;
	long i;

	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	while (!*lc->stop) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			break;
		for (i = 0; i < lc->pages; i++)
			p[i * pg] = 1;
		munmap(p, len);
		lc->iters++;
	}
	return NULL;
}

static double pct(const double *sorted, long n, double q)
{
	long i = (long)(q * (n - 1) + 0.5);

	return sorted[i < n ? i : n - 1];
}

/* Voluntary context switches of the calling thread: it slept. */
static long nvcsw(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_nvcsw;
}

/*
 * WATCH+UNWATCH pairs timed one by one on a page nobody unmaps, with
 * nthreads churners running.  Rounds rotate the thread counts so noise
 * spreads over all three; the samples of all rounds are pooled for the
 * percentiles, and the per-round p99s give the spread.  On two vCPUs the
 * churners also take the CPU away (preemption, the same for any design),
 * so the pairs that slept in the kernel - a voluntary context switch,
 * which is what waiting for the mm's invalidate sequence costs - are
 * counted apart, per thousand pairs.
 */
static void bench_latency(int reps, long n, long pages)
{
	static const int nthr[] = { 0, 1, 3 };
	double *all[3], p99[3][64], t0, t1;
	struct lat_churn lc[3];
	volatile int stop;
	long i, m, done[3] = { 0 }, churned[3] = { 0 }, slept[3] = { 0 }, fails = 0;
	long cs;
	struct kt_ctx c;
	uint32_t slot;
	char key[64], *mem;
	double *s;
	int r, j, k, t;

	mem = kt_map_pages(1);
	s = calloc(n, sizeof(*s));
	for (k = 0; k < 3; k++)
		all[k] = calloc((size_t)n * reps, sizeof(double));
	if (!mem || !s || !all[0] || !all[1] || !all[2] || kt_open(&c, 0, true)) {
		fprintf(stderr, "bench_latency: setup failed\n");
		return;
	}
	for (r = 0; r < reps; r++) {
		for (j = 0; j < 3; j++) {
			k = (r + j) % 3;
			stop = 0;
			for (t = 0; t < nthr[k]; t++) {
				lc[t].stop = &stop;
				lc[t].pages = pages;
				lc[t].iters = 0;
				if (pthread_create(&lc[t].tid, NULL, lat_churn_main, &lc[t]))
					break;
			}
			/* let the churners get going before timing */
			usleep(nthr[k] ? 20000 : 0);
			cs = nvcsw();
			for (i = 0, m = 0; i < n; i++) {
				t0 = now_ns();
				if (kt_watch(&c, mem, pg, i, 0, &slot, NULL)) {
					fails++;
					continue;
				}
				kt_unwatch(&c, slot, i);
				t1 = now_ns();
				s[m++] = t1 - t0;
				all[k][done[k]++] = t1 - t0;
				/* getrusage outside the timed window */
				if (nvcsw() != cs) {
					slept[k]++;
					cs = nvcsw();
				}
			}
			stop = 1;
			while (t--) {
				pthread_join(lc[t].tid, NULL);
				churned[k] += lc[t].iters;
			}
			qsort(s, m, sizeof(*s), cmp_double);
			p99[k][r] = m ? pct(s, m, 0.99) : 0;
		}
	}
	for (k = 0; k < 3 && done[k]; k++) {
		qsort(all[k], done[k], sizeof(double), cmp_double);
		qsort(p99[k], reps, sizeof(double), cmp_double);
		snprintf(key, sizeof(key), "watch_unwatch_ns_p50_mt%d", nthr[k]);
		report(key, pct(all[k], done[k], 0.50));
		snprintf(key, sizeof(key), "watch_unwatch_ns_p99_mt%d", nthr[k]);
		report(key, pct(all[k], done[k], 0.99));
		snprintf(key, sizeof(key), "watch_unwatch_ns_p999_mt%d", nthr[k]);
		report(key, pct(all[k], done[k], 0.999));
		snprintf(key, sizeof(key), "watch_unwatch_ns_max_mt%d", nthr[k]);
		report(key, all[k][done[k] - 1]);
		snprintf(key, sizeof(key), "watch_unwatch_ns_round_p99_min_mt%d", nthr[k]);
		report(key, p99[k][0]);
		snprintf(key, sizeof(key), "watch_unwatch_ns_round_p99_max_mt%d", nthr[k]);
		report(key, p99[k][reps - 1]);
		snprintf(key, sizeof(key), "watch_unwatch_slept_per_1000_mt%d", nthr[k]);
		report(key, 1000.0 * slept[k] / done[k]);
		snprintf(key, sizeof(key), "churn_iters_during_latency_mt%d", nthr[k]);
		report(key, churned[k]);
		free(all[k]);
	}
	report("watch_unwatch_failures", fails);
	kt_close(&c);
	munmap(mem, pg);
	free(s);
}

int main(void)
{
	/* out of range: the defaults below; not a number: an error */
	int reps = (int)kt_env_long("BENCH_REPS", 5, INT_MIN, INT_MAX);
	int rounds = (int)kt_env_long("BENCH_ROUNDS", 21, INT_MIN, INT_MAX);
	long churn = kt_env_long("BENCH_CHURN", 2000, LONG_MIN, LONG_MAX);
	long watches = kt_env_long("BENCH_WATCHES", 10000, LONG_MIN,
				   LONG_MAX);
	long lat = kt_env_long("BENCH_LAT", 1000, LONG_MIN, LONG_MAX);
	long lat_pages = kt_env_long("BENCH_LAT_PAGES", 1, LONG_MIN,
				     LONG_MAX);
	const char *only = getenv("BENCH_ONLY");
	const char *dir = getenv("RC_RESULTS");
	const char *tag = getenv("BENCH_TAG");
	char path[512];

	pg = sysconf(_SC_PAGESIZE);
	if (reps < 1 || reps > 64)
		reps = 5;
	if (geteuid() != 0 || access(REGCACHE_DEVICE_PATH, F_OK)) {
		printf("1..0 # SKIP needs root and %s\n", REGCACHE_DEVICE_PATH);
		return 77;
	}
	if (dir) {
		snprintf(path, sizeof(path), "%s/bench_kmod-%s%s%s.txt", dir,
			 getenv("RC_KERNEL") ? getenv("RC_KERNEL") : "unknown",
			 tag ? "-" : "", tag ? tag : "");
		out = fopen(path, "w");
	}
	if (lat_pages < 1 || lat_pages > 65536)
		lat_pages = 1;
	printf("# bench_kmod: reps %d, churn %ld, watches %ld, latency pairs %ld, latency churn pages %ld\n",
	       reps, churn, watches, lat, lat_pages);
	if (rounds < 1 || rounds > 64)
		rounds = 21;
	if (lat < 10)
		lat = 1000;
	if (!only || strcmp(only, "latency")) {
		bench_churn(rounds, churn, watches);
		bench_watch(reps, watches);
		bench_inval(reps, 2000);
	}
	bench_latency(reps, lat, lat_pages);
	if (out)
		fclose(out);
	return 0;
}
