// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * monitor_uffd.c - the userfaultfd monitor, for when regcache.ko is absent.
 *
 * Each cached range is registered with UFFDIO_REGISTER_MODE_MISSING (the
 * only way to receive the non-cooperative events for a range) on a
 * userfaultfd opened with UFFD_FEATURE_EVENT_UNMAP (munmap, mremap shrink,
 * MAP_FIXED over it), EVENT_REMOVE (MADV_DONTNEED / MADV_REMOVE) and
 * EVENT_REMAP (mremap move).
 *
 * Why a thread and not "drain on the next get": the kernel makes the
 * thread that unmaps wait inside munmap()/madvise()/mremap() until the
 * event has been read from the userfaultfd.  A single-threaded program
 * that drains on its next get would hang in its own munmap().  So a
 * monitor thread reads events as they come.
 *
 * Why the 'pending' flag: the kernel releases the unmapping thread as soon
 * as the event is read, before this thread has dropped the entries.  The
 * thread therefore raises 'pending' before each read(); a get that sees
 * it waits until the thread has applied everything it read.  The wake-up
 * inside the kernel orders the flag before the unmapper's return, so a
 * get issued after munmap() returned can never see the old entry.
 *
 * Why MISSING faults are served: a registered range may have pages that
 * were never populated (registrations that do not pin, or memory whose
 * pages the kernel dropped); touching them raises a missing fault that
 * this thread resolves with UFFDIO_ZEROPAGE, which is what the kernel
 * would have done (anonymous and shmem memory read as zero when not
 * present).  (libfabric's uffd monitor treats such a fault as fatal and
 * aborts: it relies on every registration pinning populated pages, which
 * does not hold for ODP or for a MADV_DONTNEED racing with the event.)  Where that is impossible (hugetlb) the covering entries are
 * dropped and their ranges unregistered, and the faulting thread is woken
 * to retry without userfaultfd.
 *
 * What the thread must not do: call the dereg callback or free() memory
 * that may be watched, because a munmap() in this thread would wait for
 * this very thread to read the event.  Entries it drops are handed to the
 * application's threads (rc_defer_list), which release them on their next
 * call.  For the same reason it never blocks on the cache lock while
 * events may be unread: it trylocks and keeps reading in between.
 *
 * Limits (see libregcache(7)): needs vm.unprivileged_userfaultfd=1,
 * CAP_SYS_PTRACE or UFFD_USER_MODE_ONLY (used automatically when the plain
 * call is refused; then a fault from inside the kernel on a watched page
 * that was dropped fails with EFAULT instead of being served); works on
 * anonymous, shmem and hugetlb memory only (other ranges are registered
 * uncached); a range already registered with another userfaultfd (another
 * library, a checkpointer) gets EBUSY and is registered uncached; events
 * that do not pass through these hooks (COW after fork, page migration,
 * mprotect) are not seen.  Without UFFD_FEATURE_EVENT_FORK a forked child
 * inherits no registration, so the child's unmaps are not reported here.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

#include "regcache_int.h"

#define UFFD_RANGES	512	/* invalidations buffered while waiting for the lock */
#define UFFD_FAULTS	64	/* faults waiting for a retry */
#define UFFD_GAPS	64	/* neighbours considered when unregistering */

#define UFFD_EVENTS	(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | \
			 UFFD_FEATURE_EVENT_REMAP)

struct uffd_range {
	uintptr_t start, end;
};

struct uffd_priv {
	int uffd;
	int stop_fd;		/* eventfd: ask the thread to exit */
	int notify_fd;		/* eventfd: readable after entries were dropped */
	bool user_mode_only;
	pthread_t thread;
	_Atomic int pending;	/* the thread read, or is about to read, events */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	_Atomic uint64_t dropped;
	size_t psz;
	/* thread-private */
	struct uffd_range ranges[UFFD_RANGES];
	unsigned int nranges;
	bool overflow;
	uintptr_t faults[UFFD_FAULTS];	/* unresolved, retried after apply */
	unsigned int nfaults;
	uintptr_t wake[UFFD_FAULTS];	/* woken after their entries went */
	unsigned int nwake;
};

static struct uffd_priv *up(const struct regcache *cache)
{
	return cache->mon_priv;
}

static int uffd_ioctl_range(int fd, unsigned long req, uintptr_t start,
			    uintptr_t end)
{
	struct uffdio_range r = { .start = start, .len = end - start };

	return ioctl(fd, req, &r) ? -errno : 0;
}

static void uffd_add_range(struct uffd_priv *p, uintptr_t start, uintptr_t end)
{
	if (end <= start)
		return;
	if (p->nranges == UFFD_RANGES) {
		p->overflow = true;	/* drop everything when we get the lock */
		return;
	}
	p->ranges[p->nranges].start = start;
	p->ranges[p->nranges].end = end;
	p->nranges++;
}

/* Resolve a missing fault as the kernel would have.  false: cannot. */
static bool uffd_serve_fault(struct uffd_priv *p, uintptr_t addr, bool *again)
{
	struct uffdio_zeropage z;

	memset(&z, 0, sizeof(z));
	z.range.start = addr & ~(uintptr_t)(p->psz - 1);
	z.range.len = p->psz;
	*again = false;
	if (!ioctl(p->uffd, UFFDIO_ZEROPAGE, &z))
		return true;
	if (errno == EEXIST) {
		/* Someone populated it meanwhile: just let the faulter retry. */
		uffd_ioctl_range(p->uffd, UFFDIO_WAKE, z.range.start,
				 z.range.start + p->psz);
		return true;
	}
	if (errno == EAGAIN) {
		/* The mm is changing under a queued event: retry after it. */
		*again = true;
		return false;
	}
	return false;
}

static void uffd_fault(struct uffd_priv *p, uintptr_t addr)
{
	bool again;

	if (uffd_serve_fault(p, addr, &again))
		return;
	if (again && p->nfaults < UFFD_FAULTS) {
		p->faults[p->nfaults++] = addr;
		return;
	}
	/* e.g. hugetlb: stop watching there, then wake the faulter. */
	uffd_add_range(p, addr & ~(uintptr_t)(p->psz - 1),
		       (addr & ~(uintptr_t)(p->psz - 1)) + p->psz);
	if (p->nwake < UFFD_FAULTS)
		p->wake[p->nwake++] = addr & ~(uintptr_t)(p->psz - 1);
}

/* Read every queued message.  Returns how many were read. */
static int uffd_read_all(struct uffd_priv *p)
{
	struct uffd_msg msg[32];
	int total = 0;
	ssize_t n;
	int i;

	for (;;) {
		n = read(p->uffd, msg, sizeof(msg));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (i = 0; i < n / (ssize_t)sizeof(msg[0]); i++) {
			struct uffd_msg *m = &msg[i];

			switch (m->event) {
			case UFFD_EVENT_PAGEFAULT:
				uffd_fault(p, m->arg.pagefault.address);
				break;
			case UFFD_EVENT_UNMAP:
			case UFFD_EVENT_REMOVE:
				uffd_add_range(p, m->arg.remove.start,
					       m->arg.remove.end);
				break;
			case UFFD_EVENT_REMAP:
				uffd_add_range(p, m->arg.remap.from,
					       m->arg.remap.from + m->arg.remap.len);
				uffd_add_range(p, m->arg.remap.to,
					       m->arg.remap.to + m->arg.remap.len);
				break;
			default:
				break;
			}
			total++;
		}
	}
	return total;
}

/* Write lock held. */
static int uffd_apply_locked(struct regcache *cache, struct rc_list *release)
{
	struct uffd_priv *p = up(cache);
	unsigned int i;
	int n = 0;

	if (p->overflow)
		n += rc_invalidate_range(cache, 0, UINTPTR_MAX, release);
	for (i = 0; i < p->nranges && !p->overflow; i++)
		n += rc_invalidate_range(cache, p->ranges[i].start,
					 p->ranges[i].end, release);
	p->nranges = 0;
	p->overflow = false;
	return n;
}

static void uffd_finish_faults(struct uffd_priv *p)
{
	unsigned int i, nf = p->nfaults;
	uintptr_t f[UFFD_FAULTS];

	for (i = 0; i < p->nwake; i++)
		uffd_ioctl_range(p->uffd, UFFDIO_WAKE, p->wake[i],
				 p->wake[i] + p->psz);
	p->nwake = 0;
	memcpy(f, p->faults, nf * sizeof(f[0]));
	p->nfaults = 0;
	for (i = 0; i < nf; i++)
		uffd_fault(p, f[i]);
}

static void *uffd_thread(void *arg)
{
	struct regcache *cache = arg;
	struct uffd_priv *p = up(cache);
	struct rc_list release;
	sigset_t all;
	int got, n;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	rc_list_init(&release);
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = p->uffd, .events = POLLIN },
			{ .fd = p->stop_fd, .events = POLLIN },
		};

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		if (!(pfd[0].revents & POLLIN)) {
			if (pfd[0].revents & (POLLERR | POLLHUP | POLLNVAL))
				break;
			continue;
		}
		/* Before the read that lets the unmapper go: see the top. */
		atomic_store(&p->pending, 1);
		n = 0;
		do {
			got = uffd_read_all(p);
			while (p->nranges || p->overflow) {
				if (rc_brlock_write_trylock(&cache->lock)) {
					n += uffd_apply_locked(cache, &release);
					rc_brlock_write_unlock(&cache->lock);
					break;
				}
				/* The lock holder may be waiting in munmap() for us. */
				poll(pfd, 1, 1);
				got += uffd_read_all(p);
			}
			uffd_finish_faults(p);
		} while (got || p->nfaults);
		if (!rc_list_empty(&release))
			rc_defer_list(cache, &release);
		if (n) {
			uint64_t one = 1;

			atomic_fetch_add(&p->dropped, n);
			if (write(p->notify_fd, &one, sizeof(one)) < 0)
				rc_log("uffd notify: %s", strerror(errno));
		}
		pthread_mutex_lock(&p->mu);
		atomic_store(&p->pending, 0);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

static int uffd_open(bool *user_mode_only)
{
	int fd;

	*user_mode_only = false;
	fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
#ifdef UFFD_USER_MODE_ONLY
	if (fd < 0 && errno == EPERM) {
		/* vm.unprivileged_userfaultfd=0: user-mode faults only. */
		fd = syscall(__NR_userfaultfd,
			     O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
		*user_mode_only = fd >= 0;
	}
#endif
	return fd < 0 ? -errno : fd;
}

static int uffd_start(struct regcache *cache, const char **why)
{
	static __thread char buf[160];
	struct uffdio_api api;
	struct uffd_priv *p;
	int ret;

	p = calloc(1, sizeof(*p));
	if (!p) {
		*why = "out of memory";
		return -ENOMEM;
	}
	p->psz = (size_t)sysconf(_SC_PAGESIZE);
	ret = uffd_open(&p->user_mode_only);
	if (ret < 0) {
		snprintf(buf, sizeof(buf), "userfaultfd: %s%s", strerror(-ret),
			 ret == -EPERM ? " (vm.unprivileged_userfaultfd=0)" : "");
		*why = buf;
		goto free_priv;
	}
	p->uffd = ret;
	memset(&api, 0, sizeof(api));
	api.api = UFFD_API;
	api.features = UFFD_EVENTS;
	if (ioctl(p->uffd, UFFDIO_API, &api) ||
	    (api.features & UFFD_EVENTS) != UFFD_EVENTS) {
		ret = errno ? -errno : -EOPNOTSUPP;
		snprintf(buf, sizeof(buf),
			 "UFFDIO_API without UNMAP/REMOVE/REMAP events: %s",
			 strerror(-ret));
		*why = buf;
		goto close_uffd;
	}
	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->stop_fd < 0) {
		ret = -errno;
		*why = "eventfd";
		goto close_uffd;
	}
	p->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->notify_fd < 0) {
		ret = -errno;
		*why = "eventfd";
		goto close_stop;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	cache->mon_priv = p;
	ret = -pthread_create(&p->thread, NULL, uffd_thread, cache);
	if (ret) {
		*why = "cannot start the monitor thread";
		goto destroy_sync;
	}
	pthread_setname_np(p->thread, "regcache-uffd");
	*why = p->user_mode_only ? "UFFD_USER_MODE_ONLY" : "";
	return 0;

destroy_sync:
	cache->mon_priv = NULL;
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	close(p->notify_fd);
close_stop:
	close(p->stop_fd);
close_uffd:
	close(p->uffd);
free_priv:
	free(p);
	return ret;
}

static void uffd_stop(struct regcache *cache)
{
	struct uffd_priv *p = up(cache);
	uint64_t one = 1;

	/* A forked child has no monitor thread: only the parent joins it. */
	if (!rc_forked(cache)) {
		if (write(p->stop_fd, &one, sizeof(one)) < 0)
			rc_log("uffd stop: %s", strerror(errno));
		pthread_join(p->thread, NULL);
	}
	/* Closing the uffd unregisters every range and wakes any faulter. */
	close(p->uffd);
	close(p->stop_fd);
	close(p->notify_fd);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
	cache->mon_priv = NULL;
}

static int uffd_subscribe(struct regcache *cache, struct regcache_entry *e)
{
	struct uffdio_register r;

	memset(&r, 0, sizeof(r));
	r.range.start = e->node.start;
	r.range.len = e->node.end - e->node.start;
	r.mode = UFFDIO_REGISTER_MODE_MISSING;
	/*
	 * EINVAL: a hole, or memory userfaultfd cannot watch (a regular file,
	 * device memory); EBUSY: another userfaultfd owns the range.  Either
	 * way the caller keeps the registration uncached.
	 */
	return ioctl(up(cache)->uffd, UFFDIO_REGISTER, &r) ? -errno : 0;
}

struct uffd_gaps {
	const struct regcache_entry *self;
	struct uffd_range iv[UFFD_GAPS];
	unsigned int n;
	bool full;
};

static void uffd_gap_add(struct uffd_gaps *g, const struct regcache_entry *e)
{
	unsigned int i;

	if (e == g->self || !e->subscribed)
		return;
	if (g->n == UFFD_GAPS) {
		g->full = true;
		return;
	}
	/* Insertion sort by start: n is small. */
	for (i = g->n; i > 0 && g->iv[i - 1].start > e->node.start; i--)
		g->iv[i] = g->iv[i - 1];
	g->iv[i].start = e->node.start;
	g->iv[i].end = e->node.end;
	g->n++;
}

static int uffd_gap_fn(struct rc_itree_node *n, void *arg)
{
	uffd_gap_add(arg, rc_node_entry(n));
	return 0;
}

/*
 * Unregister the parts of e's range no other watched entry still needs:
 * userfaultfd registrations are per page, not per entry, and overlapping
 * or merged-away entries share pages.  Write lock held.
 */
static void uffd_unsubscribe(struct regcache *cache, struct regcache_entry *e)
{
	struct uffd_priv *p = up(cache);
	uintptr_t s = e->node.start, t = e->node.end, cur;
	struct uffd_gaps g = { .self = e };
	struct rc_list *l;
	unsigned int i;

	rc_itree_visit(&cache->tree, s, t, uffd_gap_fn, &g);
	rc_itree_visit(&cache->xtree, s, t, uffd_gap_fn, &g);
	for (l = cache->pending.next; l != &cache->pending; l = l->next) {
		const struct regcache_entry *pe = rc_list_entry(l, link);

		if (pe->node.start < t && pe->node.end > s)
			uffd_gap_add(&g, pe);
	}
	if (g.full)
		return;	/* stay registered: costs events, never correctness */
	cur = s;
	for (i = 0; i < g.n; i++) {
		if (g.iv[i].start > cur)
			uffd_ioctl_range(p->uffd, UFFDIO_UNREGISTER, cur,
					 g.iv[i].start < t ? g.iv[i].start : t);
		if (g.iv[i].end > cur)
			cur = g.iv[i].end;
		if (cur >= t)
			return;
	}
	/* Errors (the range is already unmapped) are of no consequence. */
	uffd_ioctl_range(p->uffd, UFFDIO_UNREGISTER, cur, t);
}

static bool uffd_valid(const struct regcache *cache, const struct regcache_entry *e)
{
	/* Dropped entries leave the index at once: an indexed one is valid. */
	return true;
}

/* Before a lookup: wait until the thread has applied what it read. */
static void uffd_sync(struct regcache *cache)
{
	struct uffd_priv *p = up(cache);

	if (!atomic_load(&p->pending))
		return;
	pthread_mutex_lock(&p->mu);
	while (atomic_load(&p->pending))
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

static int uffd_fd(struct regcache *cache)
{
	return up(cache)->notify_fd;
}

static int uffd_process(struct regcache *cache)
{
	struct uffd_priv *p = up(cache);
	uint64_t v;

	uffd_sync(cache);
	if (read(p->notify_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	return (int)atomic_exchange(&p->dropped, 0);
}

const struct rc_monitor_ops rc_monitor_uffd_ops = {
	.name = "uffd",
	.type = REGCACHE_MONITOR_UFFD,
	.start = uffd_start,
	.stop = uffd_stop,
	.subscribe = uffd_subscribe,
	.unsubscribe = uffd_unsubscribe,
	.valid = uffd_valid,
	.sync = uffd_sync,
	.fd = uffd_fd,
	.process = uffd_process,
};
