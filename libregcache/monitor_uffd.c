// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * monitor_uffd.c - the userfaultfd monitor, for when regcache.ko is absent.
 *
 * One monitor per process, shared by every cache that uses it (as
 * libfabric's monitors are): one userfaultfd opened with
 * UFFD_FEATURE_EVENT_UNMAP (munmap, mremap shrink, MAP_FIXED over it),
 * EVENT_REMOVE (MADV_DONTNEED / MADV_REMOVE) and EVENT_REMAP (mremap
 * move), one thread reading it, a reference per cache.  A range can be
 * registered with only one userfaultfd: with a descriptor per cache the
 * second cache's UFFDIO_REGISTER failed with EBUSY on every range the
 * first one watched and it cached nothing.  Pages carry a watch count
 * (the 'watches' index: disjoint runs of pages with the number of
 * entries, of any cache, watching them); a run is unregistered when its
 * count drops to zero, so one cache dropping an entry never stops the
 * events another cache's entry needs.  Every event is applied to every
 * cache.
 *
 * Why write-protect mode: any registration mode delivers the events, but
 * a missing-mode range turns every fault on a page that is not present
 * into a userfault.  The pin inside ibv_reg_mr() faults never-touched
 * pages in; on Linux 6.1 a FOLL_LONGTERM pin faults without
 * FAULT_FLAG_ALLOW_RETRY, so handle_userfault() fails it (EFAULT) where
 * a plain registration succeeds; on later kernels each page costs a round
 * trip to the monitor thread (measured on 7.3 in the VM: 2.1 s for a
 * never-touched 4 MiB, against 50 ms for a plain ibv_reg_mr).  Registered in
 * write-protect mode (anonymous memory: Linux 5.7) and never
 * write-protected, a range raises no fault at all.  Where the kernel does
 * not offer it, missing mode is used, the range is populated
 * (MADV_POPULATE_WRITE/READ, else a read of each page) before it is
 * registered for caches whose registrations pin, and missing faults are
 * served with UFFDIO_ZEROPAGE, which is what the kernel would have done.
 *
 * What can be cached: private anonymous memory only.  A MAP_SHARED
 * mapping of a memfd or tmpfs file also changes through its file
 * (fallocate(PUNCH_HOLE), ftruncate) and userfaultfd raises no event
 * for that: the cached registration would keep the old pages while the
 * process sees new ones.  Such ranges, file and hugetlb mappings, and
 * ranges another userfaultfd owns (UFFDIO_REGISTER: EBUSY, the
 * application's own) are refused here and registered uncached by the
 * core; the mapping is checked after UFFDIO_REGISTER succeeded, so a
 * mapping replaced between the check and the registration raises an
 * unmap event that marks the entry stale.  One exception: an exact entry
 * (REGCACHE_GET_EXACT, a key a peer holds) on shared memory is watched
 * and cached while it is held, so that unmapping or remapping it revokes
 * the key (the events come for any registered mapping); it is dropped at
 * its last put, so a file change the events miss never outlives it.
 *
 * Why a thread and not "drain on the next get": the kernel makes the
 * thread that unmaps wait inside munmap()/madvise()/mremap() until the
 * event has been read from the userfaultfd.  A single-threaded program
 * that drains on its next get would hang in its own munmap().
 *
 * Why the 'pending' flag: the kernel releases the unmapping thread as soon
 * as the event is read, before this thread has dropped the entries.  The
 * thread therefore raises 'pending' before each read(); a get that sees
 * it waits until the thread has applied everything it read to every
 * cache.  The wake-up inside the kernel orders the flag before the
 * unmapper's return, so a get issued after munmap() returned can never
 * see the old entry.
 *
 * What the thread must not do: call the dereg callback or free() memory
 * that may be watched, because a munmap() in this thread would wait for
 * this very thread to read the event.  Entries it drops are handed to the
 * application's threads (rc_defer_list), which release them on their next
 * call.  For the same reason it never blocks on a cache lock while events
 * may be unread: it trylocks and keeps reading (and serving faults) in
 * between.
 *
 * Locks: a cache's lock, then watch_lock (subscribe, unsubscribe; the
 * thread while applying).  mon->lock (the client list) is taken by the
 * thread around its applies and by start/stop, never under a cache lock.
 * Nothing that can fault on a watched page runs under watch_lock.
 *
 * fork: the child has no monitor thread and its copies of the caches
 * are unusable (rc_forked()).  A cache the child creates gets a monitor
 * of its own; the parent's is left to the stale copies, which only drop
 * their references to it.
 *
 * Limits (see libregcache(7)): needs vm.unprivileged_userfaultfd=1,
 * CAP_SYS_PTRACE or UFFD_USER_MODE_ONLY (used automatically when the plain
 * call is refused; then, in missing mode, a fault from inside the kernel
 * on a watched page that was dropped fails with EFAULT instead of being
 * served); changes that do not pass through these hooks (COW after fork,
 * page migration, KSM, mprotect) are not seen.
 */
#include "config.h"

#include <dirent.h>
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
#include "vma.h"

#define UFFD_RANGES	512	/* invalidations buffered while waiting for locks */
#define UFFD_FAULTS	64	/* faults waiting for a retry */

#define UFFD_EVENTS	(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | \
			 UFFD_FEATURE_EVENT_REMAP)

struct uffd_range {
	uintptr_t start, end;
	bool gone;		/* unmapped: no VMA of ours left there */
};

/* A run of pages watched by 'count' entries (of any cache). */
struct uffd_watch {
	struct rc_itree_node node;
	unsigned long count;
};

struct uffd_mon;

/* One cache using the monitor. */
struct uffd_client {
	struct regcache *cache;
	struct uffd_mon *mon;
	int notify_fd;		/* eventfd: readable after entries were dropped */
	_Atomic uint64_t dropped;
	struct uffd_client *next;	/* mon->clients */
	/* the thread's, under mon->lock */
	unsigned int applied;	/* ranges[0, applied) applied to this cache */
	uint64_t applied_gen;	/* caught up when equal to mon->gen */
	struct rc_list release;
};

struct uffd_mon {
	int uffd;
	int stop_fd;		/* eventfd: ask the thread to exit */
	bool user_mode_only;
	bool wp;		/* register in write-protect mode */
	pid_t pid;		/* of the process that created it */
	_Atomic long refs;	/* clients */
	pthread_t thread;
	pthread_mutex_t lock;	/* clients */
	struct uffd_client *clients;
	_Atomic int pending;	/* the thread read, or is about to read, events */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_mutex_t watch_lock;
	struct rc_itree watches;	/* struct uffd_watch, disjoint */
	size_t psz;
	/* bumped by the thread when ranges/overflow change; a new client
	 * reads it under 'lock' */
	_Atomic uint64_t gen;
	/* thread-private */
	struct uffd_range ranges[UFFD_RANGES];
	unsigned int nranges;
	bool overflow;		/* lost ranges: drop every entry */
	uintptr_t faults[UFFD_FAULTS];	/* unresolved, retried */
	unsigned int nfaults;
};

/* The process's monitor; registry_lock guards the pointer and refs. */
static pthread_mutex_t uffd_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uffd_mon *uffd_current;
static pthread_once_t uffd_atfork_once = PTHREAD_ONCE_INIT;
static _Atomic int uffd_foreign_said, uffd_missing_said;

static void uffd_registry_prepare(void)
{
	pthread_mutex_lock(&uffd_registry_lock);
}

static void uffd_registry_release(void)
{
	pthread_mutex_unlock(&uffd_registry_lock);
}

/* A child must not find the registry locked by a thread it did not get. */
static void uffd_atfork_setup(void)
{
	pthread_atfork(uffd_registry_prepare, uffd_registry_release,
		       uffd_registry_release);
}

static struct uffd_client *uc(const struct regcache *cache)
{
	return cache->mon_priv;
}

/*
 * Created by our parent: no thread here, the descriptor is the parent's.
 * getpid() sees children of fork and of a raw clone alike; it is a system
 * call, but this is asked only when a cache is created or destroyed.
 * (A CLONE_VM child without CLONE_THREAD shares the parent's memory and
 * would make a monitor of its own: such children make no caches.)
 */
static bool uffd_mon_forked(const struct uffd_mon *m)
{
	return m->pid != getpid();
}

static int uffd_ioctl_range(int fd, unsigned long req, uintptr_t start,
			    uintptr_t end)
{
	struct uffdio_range r = { .start = start, .len = end - start };

	return ioctl(fd, req, &r) ? -errno : 0;
}

/* ----------------------------------------------------------- watches */

/*
 * Set by the thread while it applies an unmap event: the VMAs there are
 * gone, and what the application mapped at the address since may belong
 * to its own userfaultfd.  Linux 6.1's UFFDIO_UNREGISTER clears any
 * context, not only the caller's, so never unregister there.  After an
 * overflow nothing is known: leave every range registered (costs events,
 * never correctness).
 */
static __thread uintptr_t uffd_gone_s, uffd_gone_e;
static __thread bool uffd_gone_all;

static void uffd_unregister(struct uffd_mon *m, uintptr_t s, uintptr_t e)
{
	if (uffd_gone_all || e <= s)
		return;
	if (uffd_gone_e > s && uffd_gone_s < e) {
		if (s < uffd_gone_s)
			uffd_ioctl_range(m->uffd, UFFDIO_UNREGISTER, s,
					 uffd_gone_s);
		if (uffd_gone_e < e)
			uffd_ioctl_range(m->uffd, UFFDIO_UNREGISTER,
					 uffd_gone_e, e);
		return;
	}
	/* Errors (the range is already unmapped) are of no consequence. */
	uffd_ioctl_range(m->uffd, UFFDIO_UNREGISTER, s, e);
}

struct uffd_collect {
	struct uffd_watch **w;
	size_t n, cap;
	bool nomem;
};

static int uffd_collect_fn(struct rc_itree_node *n, void *arg)
{
	struct uffd_collect *c = arg;

	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		struct uffd_watch **w = realloc(c->w, cap * sizeof(*w));

		if (!w) {
			c->nomem = true;
			return 1;
		}
		c->w = w;
		c->cap = cap;
	}
	c->w[c->n++] = (struct uffd_watch *)n;
	return 0;
}

/* The watches overlapping [s, t), ascending (they are disjoint). */
static int uffd_watch_collect(struct uffd_mon *m, uintptr_t s, uintptr_t t,
			      struct uffd_collect *c)
{
	c->n = 0;
	rc_itree_visit(&m->watches, s, t, uffd_collect_fn, c);
	return c->nomem ? -ENOMEM : 0;
}

static struct uffd_watch *uffd_watch_new(uintptr_t s, uintptr_t t,
					 unsigned long count)
{
	struct uffd_watch *w = calloc(1, sizeof(*w));

	if (w) {
		w->node.start = s;
		w->node.end = t;
		w->count = count;
	}
	return w;
}

static void uffd_watch_move(struct uffd_mon *m, struct uffd_watch *w,
			    uintptr_t s, uintptr_t t)
{
	rc_itree_remove(&m->watches, &w->node);
	w->node.start = s;
	w->node.end = t;
	rc_itree_insert(&m->watches, &w->node);
}

/* Split w at addr (inside it) using the spare node n: n gets [addr, end). */
static void uffd_watch_split(struct uffd_mon *m, struct uffd_watch *w,
			     uintptr_t addr, struct uffd_watch *n)
{
	n->node.start = addr;
	n->node.end = w->node.end;
	n->count = w->count;
	uffd_watch_move(m, w, w->node.start, addr);
	rc_itree_insert(&m->watches, &n->node);
}

/* Join adjacent runs of equal count around [s, t): keeps the index small. */
static void uffd_watch_merge(struct uffd_mon *m, uintptr_t s, uintptr_t t,
			     struct uffd_collect *c)
{
	size_t i;

	if (uffd_watch_collect(m, s ? s - 1 : 0, t + 1, c))
		return;		/* only costs index size */
	for (i = 1; i < c->n; i++) {
		struct uffd_watch *a = c->w[i - 1], *b = c->w[i];

		if (a->node.end == b->node.start && a->count == b->count) {
			uintptr_t end = b->node.end;

			rc_itree_remove(&m->watches, &b->node);
			free(b);
			uffd_watch_move(m, a, a->node.start, end);
			c->w[i] = a;
		}
	}
}

/*
 * Watch [s, t): UFFDIO_REGISTER the pages nobody watches yet, count one
 * more watcher on all of them.  Nothing changes on failure.  watch_lock
 * held.
 */
static int uffd_watch_add(struct uffd_mon *m, uintptr_t s, uintptr_t t)
{
	struct uffd_collect c = { 0 };
	struct uffd_watch **gap = NULL, *spare[2] = { NULL, NULL };
	struct uffdio_register r;
	size_t i, ngap = 0, nreg = 0;
	uintptr_t cur;
	int ret;

	ret = uffd_watch_collect(m, s, t, &c);
	if (ret)
		goto out;
	/* Everything that can fail before the first ioctl: allocations. */
	gap = calloc(c.n + 1, sizeof(*gap));
	spare[0] = uffd_watch_new(0, 0, 0);
	spare[1] = uffd_watch_new(0, 0, 0);
	ret = -ENOMEM;
	if (!gap || !spare[0] || !spare[1])
		goto out;
	cur = s;
	for (i = 0; i <= c.n; i++) {
		uintptr_t next = i < c.n ? c.w[i]->node.start : t;

		if (next > cur) {
			gap[ngap] = uffd_watch_new(cur, next, 1);
			if (!gap[ngap])
				goto out;
			ngap++;
		}
		if (i < c.n && c.w[i]->node.end > cur)
			cur = c.w[i]->node.end;
	}
	/*
	 * The whole range, not only the pages nobody watches: a count says
	 * which addresses are watched, not which mapping.  After an munmap
	 * whose event some cache has not applied yet, the old entry still
	 * counts while a new, unregistered mapping sits at its address.
	 * Registering pages already registered with this descriptor costs
	 * the kernel a walk of the VMAs and changes nothing.
	 */
	memset(&r, 0, sizeof(r));
	r.range.start = s;
	r.range.len = t - s;
	r.mode = m->wp ? UFFDIO_REGISTER_MODE_WP : UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(m->uffd, UFFDIO_REGISTER, &r)) {
		/*
		 * EBUSY: another userfaultfd owns a page; EINVAL: a hole, or
		 * memory userfaultfd cannot watch.  The kernel checks every
		 * VMA before it changes any (so there is nothing to undo, and
		 * undoing could take the other userfaultfd's pages away from
		 * it), but may fail splitting one: then undo what nobody
		 * else watches.
		 */
		ret = -errno;
		nreg = ret == -ENOMEM ? ngap : 0;
		goto unregister;
	}
	/* Committed: split the runs straddling s and t, count, insert. */
	if (c.n && c.w[0]->node.start < s) {
		uffd_watch_split(m, c.w[0], s, spare[0]);
		c.w[0] = spare[0];
		spare[0] = NULL;
	}
	if (c.n && c.w[c.n - 1]->node.end > t) {
		struct uffd_watch *last = c.w[c.n - 1];

		uffd_watch_split(m, last, t, spare[1]);
		spare[1] = NULL;	/* [t, end) keeps its count */
	}
	for (i = 0; i < c.n; i++)
		c.w[i]->count++;
	for (i = 0; i < ngap; i++) {
		rc_itree_insert(&m->watches, &gap[i]->node);
		gap[i] = NULL;
	}
	ngap = 0;
	uffd_watch_merge(m, s, t, &c);
	ret = 0;
	goto out;

unregister:
	while (nreg--)
		uffd_unregister(m, gap[nreg]->node.start, gap[nreg]->node.end);
out:
	for (i = 0; i < ngap; i++)
		free(gap[i]);
	free(gap);
	free(spare[0]);
	free(spare[1]);
	free(c.w);
	return ret;
}

/*
 * One watcher less on [s, t); unregister the pages nobody watches any
 * more.  watch_lock held.  Without memory for a split the run stays
 * registered: that costs events, never correctness.
 */
static void uffd_watch_del(struct uffd_mon *m, uintptr_t s, uintptr_t t)
{
	struct uffd_collect c = { 0 };
	struct uffd_watch *spare[2];
	uintptr_t zs = 0, ze = 0;
	size_t i;

	spare[0] = uffd_watch_new(0, 0, 0);
	spare[1] = uffd_watch_new(0, 0, 0);
	if (!spare[0] || !spare[1] || uffd_watch_collect(m, s, t, &c))
		goto out;
	if (c.n && c.w[0]->node.start < s) {
		uffd_watch_split(m, c.w[0], s, spare[0]);
		c.w[0] = spare[0];
		spare[0] = NULL;
	}
	if (c.n && c.w[c.n - 1]->node.end > t) {
		uffd_watch_split(m, c.w[c.n - 1], t, spare[1]);
		spare[1] = NULL;
	}
	for (i = 0; i < c.n; i++) {
		struct uffd_watch *w = c.w[i];

		if (--w->count)
			continue;
		/* Unregister runs of unwatched pages with one call each. */
		if (ze != w->node.start) {
			uffd_unregister(m, zs, ze);
			zs = w->node.start;
		}
		ze = w->node.end;
		rc_itree_remove(&m->watches, &w->node);
		free(w);
	}
	uffd_unregister(m, zs, ze);
	uffd_watch_merge(m, s, t, &c);
out:
	free(spare[0]);
	free(spare[1]);
	free(c.w);
}

/* ------------------------------------------------------------ thread */

static void uffd_add_range(struct uffd_mon *m, uintptr_t start, uintptr_t end,
			   bool gone)
{
	if (end <= start)
		return;
	m->gen++;
	if (m->nranges == UFFD_RANGES) {
		m->overflow = true;	/* drop everything when we get the locks */
		return;
	}
	m->ranges[m->nranges].start = start;
	m->ranges[m->nranges].end = end;
	m->ranges[m->nranges].gone = gone;
	m->nranges++;
}

/* Resolve a fault as the kernel would have.  false: retry later. */
static bool uffd_serve_fault(struct uffd_mon *m, uintptr_t addr, bool wp)
{
	uintptr_t page = addr & ~(uintptr_t)(m->psz - 1);
	struct uffdio_writeprotect w;
	struct uffdio_zeropage z;

	if (wp) {
		/* Never requested: lift the protection and wake the writer. */
		memset(&w, 0, sizeof(w));
		w.range.start = page;
		w.range.len = m->psz;
		return !ioctl(m->uffd, UFFDIO_WRITEPROTECT, &w) ||
		       errno != EAGAIN;
	}
	memset(&z, 0, sizeof(z));
	z.range.start = page;
	z.range.len = m->psz;
	if (!ioctl(m->uffd, UFFDIO_ZEROPAGE, &z))
		return true;
	if (errno == EEXIST) {
		/* Someone populated it meanwhile: just let the faulter retry. */
		uffd_ioctl_range(m->uffd, UFFDIO_WAKE, page, page + m->psz);
		return true;
	}
	if (errno == EAGAIN)
		return false;	/* the mm is changing under a queued event */
	/* Cannot serve it (e.g. the range went away): wake, let it refault. */
	uffd_ioctl_range(m->uffd, UFFDIO_WAKE, page, page + m->psz);
	return true;
}

static void uffd_fault(struct uffd_mon *m, uintptr_t addr, bool wp)
{
	if (uffd_serve_fault(m, addr, wp))
		return;
	if (m->nfaults < UFFD_FAULTS) {
		m->faults[m->nfaults++] = addr | (wp ? 1 : 0);
		return;
	}
	/* Out of room: wake it; it faults again and we see it again. */
	uffd_ioctl_range(m->uffd, UFFDIO_WAKE, addr & ~(uintptr_t)(m->psz - 1),
			 (addr & ~(uintptr_t)(m->psz - 1)) + m->psz);
}

/* Retry the faults that met a changing mm; events were read since. */
static void uffd_retry_faults(struct uffd_mon *m)
{
	unsigned int i, nf = m->nfaults;
	uintptr_t f[UFFD_FAULTS];

	memcpy(f, m->faults, nf * sizeof(f[0]));
	m->nfaults = 0;
	for (i = 0; i < nf; i++)
		uffd_fault(m, f[i] & ~(uintptr_t)1, f[i] & 1);
}

/* Read every queued message.  Returns how many were read. */
static int uffd_read_all(struct uffd_mon *m)
{
	struct uffd_msg msg[32];
	int total = 0;
	ssize_t n;
	int i;

	for (;;) {
		n = read(m->uffd, msg, sizeof(msg));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (i = 0; i < n / (ssize_t)sizeof(msg[0]); i++) {
			struct uffd_msg *g = &msg[i];

			switch (g->event) {
			case UFFD_EVENT_PAGEFAULT:
				uffd_fault(m, g->arg.pagefault.address,
					   g->arg.pagefault.flags &
					   UFFD_PAGEFAULT_FLAG_WP);
				break;
			case UFFD_EVENT_UNMAP:
			case UFFD_EVENT_REMOVE:
				uffd_add_range(m, g->arg.remove.start,
					       g->arg.remove.end,
					       g->event == UFFD_EVENT_UNMAP);
				break;
			case UFFD_EVENT_REMAP:
				/* the VMA moved: ours at 'to', none at 'from' */
				uffd_add_range(m, g->arg.remap.from,
					       g->arg.remap.from + g->arg.remap.len,
					       true);
				uffd_add_range(m, g->arg.remap.to,
					       g->arg.remap.to + g->arg.remap.len,
					       false);
				break;
			default:
				break;
			}
			total++;
		}
	}
	return total;
}

/* The client's cache write lock held. */
static int uffd_apply_locked(struct uffd_mon *m, struct uffd_client *c)
{
	struct regcache *cache = c->cache;
	unsigned int i;
	int n = 0;

	if (m->overflow) {
		uffd_gone_all = true;
		n += rc_invalidate_range(cache, 0, UINTPTR_MAX, &c->release);
		uffd_gone_all = false;
	} else {
		for (i = c->applied; i < m->nranges; i++) {
			struct uffd_range *r = &m->ranges[i];

			if (r->gone) {
				uffd_gone_s = r->start;
				uffd_gone_e = r->end;
			}
			/* REMOVE (MADV_DONTNEED, MADV_REMOVE) leaves the
			 * mapping: a held exact entry is not revoked */
			cache->inval_soft = !r->gone;
			n += rc_invalidate_range(cache, r->start, r->end,
						 &c->release);
			cache->inval_soft = false;
			uffd_gone_s = uffd_gone_e = 0;
		}
	}
	c->applied = m->nranges;
	c->applied_gen = m->gen;
	return n;
}

static void uffd_client_done(struct uffd_client *c, int n)
{
	uint64_t one = 1;

	if (!rc_list_empty(&c->release))
		rc_defer_list(c->cache, &c->release);
	if (!n)
		return;
	atomic_fetch_add(&c->dropped, n);
	if (write(c->notify_fd, &one, sizeof(one)) < 0)
		rc_log("uffd notify: %s", strerror(errno));
}

/*
 * Apply what was read to every cache.  A cache's lock may be held by a
 * thread waiting in munmap() for us to read its event: trylock, and keep
 * reading and serving faults until every cache has taken everything.
 * Returns how many messages were read meanwhile.
 */
static int uffd_apply_all(struct uffd_mon *m)
{
	struct pollfd pfd = { .fd = m->uffd, .events = POLLIN };
	struct uffd_client *c;
	bool behind;
	int got = 0;

	pthread_mutex_lock(&m->lock);
	for (;;) {
		behind = false;
		for (c = m->clients; c; c = c->next) {
			int n;

			if (c->applied_gen == m->gen)
				continue;
			if (!rc_brlock_write_trylock(&c->cache->lock)) {
				behind = true;
				continue;
			}
			n = uffd_apply_locked(m, c);
			rc_brlock_write_unlock(&c->cache->lock);
			uffd_client_done(c, n);
		}
		if (!behind)
			break;
		poll(&pfd, 1, 1);
		got += uffd_read_all(m);
		uffd_retry_faults(m);
	}
	m->nranges = 0;
	m->overflow = false;
	for (c = m->clients; c; c = c->next)
		c->applied = 0;
	pthread_mutex_unlock(&m->lock);
	return got;
}

static void *uffd_thread(void *arg)
{
	struct uffd_mon *m = arg;
	sigset_t all;
	int got;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = m->uffd, .events = POLLIN },
			{ .fd = m->stop_fd, .events = POLLIN },
		};

		if (poll(pfd, 2, m->nfaults ? 1 : -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		if (!(pfd[0].revents & POLLIN)) {
			if (pfd[0].revents & (POLLERR | POLLHUP | POLLNVAL))
				break;
			uffd_retry_faults(m);
			continue;
		}
		/* Before the read that lets the unmapper go: see the top. */
		atomic_store(&m->pending, 1);
		do {
			got = uffd_read_all(m);
			uffd_retry_faults(m);
			if (m->nranges || m->overflow)
				got += uffd_apply_all(m);
		} while (got);
		pthread_mutex_lock(&m->mu);
		atomic_store(&m->pending, 0);
		pthread_cond_broadcast(&m->cv);
		pthread_mutex_unlock(&m->mu);
	}
	return NULL;
}

/* ----------------------------------------------------- start and stop */

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

/* Open the process's monitor and start its thread. */
static int uffd_mon_create(struct uffd_mon **mp, bool missing,
			   const char **why)
{
	static __thread char buf[160];
	struct uffdio_api api;
	struct uffd_mon *m;
	int ret;

	m = calloc(1, sizeof(*m));
	if (!m) {
		*why = "out of memory";
		return -ENOMEM;
	}
	/* no block index: the thread edits it, and it is never a hit path */
	rc_itree_init_plain(&m->watches);
	m->psz = (size_t)sysconf(_SC_PAGESIZE);
	m->pid = getpid();
	ret = uffd_open(&m->user_mode_only);
	if (ret < 0) {
		snprintf(buf, sizeof(buf), "userfaultfd: %s%s", strerror(-ret),
			 ret == -EPERM ? " (vm.unprivileged_userfaultfd=0)" : "");
		*why = buf;
		goto free_mon;
	}
	m->uffd = ret;
	memset(&api, 0, sizeof(api));
	api.api = UFFD_API;
	api.features = UFFD_EVENTS;
	errno = 0;
	if (ioctl(m->uffd, UFFDIO_API, &api) ||
	    (api.features & UFFD_EVENTS) != UFFD_EVENTS) {
		ret = errno ? -errno : -EOPNOTSUPP;
		snprintf(buf, sizeof(buf),
			 "UFFDIO_API without UNMAP/REMOVE/REMAP events: %s",
			 strerror(-ret));
		*why = buf;
		goto close_uffd;
	}
	/* The kernel answers with every feature it has. */
	m->wp = !missing && (api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP);
	m->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->stop_fd < 0) {
		ret = -errno;
		*why = "eventfd";
		goto close_uffd;
	}
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
	pthread_mutex_init(&m->watch_lock, NULL);
	ret = -pthread_create(&m->thread, NULL, uffd_thread, m);
	if (ret) {
		*why = "cannot start the monitor thread";
		goto destroy_sync;
	}
	pthread_setname_np(m->thread, "regcache-uffd");
	*mp = m;
	return 0;

destroy_sync:
	pthread_mutex_destroy(&m->watch_lock);
	pthread_cond_destroy(&m->cv);
	pthread_mutex_destroy(&m->mu);
	pthread_mutex_destroy(&m->lock);
	close(m->stop_fd);
close_uffd:
	close(m->uffd);
free_mon:
	free(m);
	return ret;
}

/* Post-order: a visit would read a node after the callback freed it. */
static void uffd_free_watches(struct rc_itree_node *n)
{
	if (!n)
		return;
	uffd_free_watches(n->left);
	uffd_free_watches(n->right);
	free(n);
}

/* The last client left (or a child drops its parent's monitor). */
static void uffd_mon_free(struct uffd_mon *m, bool forked)
{
	uint64_t one = 1;

	if (!forked) {
		if (write(m->stop_fd, &one, sizeof(one)) < 0)
			rc_log("uffd stop: %s", strerror(errno));
		pthread_join(m->thread, NULL);
		pthread_mutex_destroy(&m->watch_lock);
		pthread_cond_destroy(&m->cv);
		pthread_mutex_destroy(&m->mu);
		pthread_mutex_destroy(&m->lock);
	}
	/*
	 * Closing the uffd unregisters every range and wakes any faulter.
	 * A child closes nothing: it may have closed the inherited numbers
	 * and reused them for files of its own (the copies are O_CLOEXEC).
	 * Its index is the parent's at fork time; its locks may be held:
	 * just free it.
	 */
	if (!forked) {
		close(m->uffd);
		close(m->stop_fd);
	}
	uffd_free_watches(m->watches.root);
	rc_itree_destroy(&m->watches);
	free(m);
}

static int uffd_start(struct regcache *cache, const char **why)
{
	struct uffd_client *c;
	struct uffd_mon *m;
	int ret;

	pthread_once(&uffd_atfork_once, uffd_atfork_setup);
	c = calloc(1, sizeof(*c));
	if (!c) {
		*why = "out of memory";
		return -ENOMEM;
	}
	rc_list_init(&c->release);
	c->cache = cache;
	c->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->notify_fd < 0) {
		ret = -errno;
		*why = "eventfd";
		goto free_client;
	}
	pthread_mutex_lock(&uffd_registry_lock);
	m = uffd_current;
	if (m && uffd_mon_forked(m))
		m = NULL;	/* the parent's: its clients here drop it */
	if (!m) {
		const char *mode = (cache->flags & REGCACHE_ATTR_NO_ENV) ?
				   NULL : getenv("REGCACHE_UFFD_MODE");

		/* missing: the fallback of older kernels, for testing it */
		ret = uffd_mon_create(&m, mode && !strcmp(mode, "missing"),
				      why);
		if (ret) {
			pthread_mutex_unlock(&uffd_registry_lock);
			goto close_notify;
		}
		uffd_current = m;
	}
	atomic_fetch_add(&m->refs, 1);
	c->mon = m;
	pthread_mutex_lock(&m->lock);
	/* Ranges read before we came are no-ops on an empty cache. */
	c->applied_gen = atomic_load(&m->gen) - 1;
	c->next = m->clients;
	m->clients = c;
	pthread_mutex_unlock(&m->lock);
	pthread_mutex_unlock(&uffd_registry_lock);
	cache->mon_priv = c;
	/* the hit path's inline uffd_sync test and uffd_valid */
	cache->mon_sync_word = &m->pending;
	cache->mon_valid_always = true;
	*why = m->user_mode_only ? "UFFD_USER_MODE_ONLY" : "";
	if (!m->wp && !atomic_exchange(&uffd_missing_said, 1))
		rc_log("uffd: missing mode (registered ranges are populated first)");
	return 0;

close_notify:
	close(c->notify_fd);
free_client:
	free(c);
	return ret;
}

static void uffd_stop(struct regcache *cache)
{
	struct uffd_client *c = uc(cache), **pp;
	struct uffd_mon *m = c->mon;
	bool last;

	cache->mon_sync_word = NULL;
	cache->mon_valid_always = false;
	if (rc_forked(cache) || uffd_mon_forked(m)) {
		/*
		 * The parent's monitor: no thread, no lock to take, and no
		 * descriptor to close here (see uffd_mon_free).
		 */
		free(c);
		cache->mon_priv = NULL;
		/* the registry must forget the copy it frees: the child's
		 * next cache would look at it (found by ASan) */
		pthread_mutex_lock(&uffd_registry_lock);
		last = atomic_fetch_sub(&m->refs, 1) == 1;
		if (last && uffd_current == m)
			uffd_current = NULL;
		pthread_mutex_unlock(&uffd_registry_lock);
		if (last)
			uffd_mon_free(m, true);
		return;
	}
	pthread_mutex_lock(&uffd_registry_lock);
	pthread_mutex_lock(&m->lock);
	for (pp = &m->clients; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	pthread_mutex_unlock(&m->lock);
	last = atomic_fetch_sub(&m->refs, 1) == 1;
	if (last && uffd_current == m)
		uffd_current = NULL;
	pthread_mutex_unlock(&uffd_registry_lock);
	if (last)
		uffd_mon_free(m, false);
	close(c->notify_fd);
	free(c);
	cache->mon_priv = NULL;
}

/* ------------------------------------------------------ subscriptions */

/*
 * Is every page of [s, t) private anonymous memory?  0; -EMEDIUMTYPE for
 * a shared or file (memfd, tmpfs, hugetlb) mapping; -EFAULT for a hole.
 */
static int uffd_private_anon(uintptr_t s, uintptr_t t)
{
	struct rc_vma v;
	int ret;

	while (s < t) {
		ret = rc_vma_query(s, &v);
		if (ret == -ENOENT)
			return -EFAULT;
		if (ret)
			return ret;
		if (!rc_vma_private_anon(&v))
			return -EMEDIUMTYPE;
		s = v.end;
	}
	return 0;
}

/*
 * The same for a range UFFDIO_REGISTER accepted, which holds no hole and
 * only anonymous, shmem and hugetlb memory: is any of it backed by a file
 * (memfd, tmpfs, SysV, shared anonymous and hugetlb memory all are)?
 * With PROCMAP_QUERY (Linux 6.11) one ioctl per VMA of the range answers
 * it (a hole, left by an munmap since, is -EFAULT).  Without it,
 * rc_vma_query() reads /proc/self/maps up to the address, and every
 * cached range is a VMA of its own, so a miss cost 2 ms with 1600
 * entries (host, 2000 misses); /proc/self/map_files lists exactly the
 * VMAs with a file, without formatting the others, and costs a walk of
 * the file mappings.  Falls back to rc_vma_query() where the directory
 * cannot be read.
 */
static int uffd_registered_private_anon(uintptr_t s, uintptr_t t)
{
	unsigned long long a, b;
	struct rc_vma v;
	struct dirent *d;
	DIR *dir;
	int ret;

	/* PROCMAP_QUERY (Linux 6.11): one ioctl per VMA, no walk */
	ret = rc_vma_query_ioctl(s, &v);
	if (ret != -ENOTTY) {
		while (!ret) {
			if (!rc_vma_private_anon(&v))
				return -EMEDIUMTYPE;
			if (v.end >= t)
				return 0;
			ret = rc_vma_query_ioctl(v.end, &v);
		}
		return ret == -ENOENT ? -EFAULT : ret;
	}
	ret = 0;
	dir = opendir("/proc/self/map_files");
	if (!dir)
		return uffd_private_anon(s, t);
	while ((d = readdir(dir))) {
		if (sscanf(d->d_name, "%llx-%llx", &a, &b) == 2 && a < t && b > s) {
			ret = -EMEDIUMTYPE;
			break;
		}
	}
	closedir(dir);
	return ret;
}

static int uffd_subscribe(struct regcache *cache, struct regcache_entry *e)
{
	struct uffd_mon *m = uc(cache)->mon;
	uintptr_t s = e->node.start, t = e->node.end;
	int ret, chk;

	/* missing mode: fault [s, t) in before it is watched, so that the
	 * pin inside the register callback takes no userfault (see the
	 * top); errors are left to the registration to report */
	if (!m->wp && !(cache->flags & REGCACHE_ATTR_NO_PIN))
		(void)rc_vma_populate(s, t, true);
	pthread_mutex_lock(&m->watch_lock);
	ret = uffd_watch_add(m, s, t);
	pthread_mutex_unlock(&m->watch_lock);
	if (ret == -EBUSY) {
		if (!atomic_exchange(&uffd_foreign_said, 1))
			rc_log("uffd: memory registered with another userfaultfd (the application's?) is registered uncached (stats: uffd_foreign)");
		return ret;
	}
	/*
	 * After the registration, so that a mapping replaced since raises
	 * an unmap event (see the top).  Under the cache lock: the thread
	 * cannot apply that event before the entry is on the pending list.
	 */
	if (ret) {
		/* EINVAL on a regular file: -EMEDIUMTYPE */
		chk = uffd_private_anon(s, t);
		return chk ? chk : ret;
	}
	chk = uffd_registered_private_anon(s, t);
	/*
	 * An exact entry (a peer's key) on shared memory is watched all the
	 * same: its unmap and remap raise events, so the key dies with the
	 * mapping.  What the events miss (a hole punched, the file cut) only
	 * stales it for its holders, as a plain registration would be: it
	 * is dropped at its last put and never serves a later get.
	 */
	if (chk == -EMEDIUMTYPE && e->exact) {
		e->droplast = true;
		chk = 0;
	}
	if (chk) {
		pthread_mutex_lock(&m->watch_lock);
		uffd_watch_del(m, s, t);
		pthread_mutex_unlock(&m->watch_lock);
		return chk;
	}
	/* What was registered, for unsubscribe (the core never moves it). */
	e->slot_word = s;
	e->cookie = t;
	return 0;
}

static void uffd_unsubscribe(struct regcache *cache, struct regcache_entry *e)
{
	struct uffd_mon *m = uc(cache)->mon;

	pthread_mutex_lock(&m->watch_lock);
	uffd_watch_del(m, e->slot_word, e->cookie);
	pthread_mutex_unlock(&m->watch_lock);
}

static bool uffd_valid(const struct regcache *cache, const struct regcache_entry *e)
{
	/* Dropped entries leave the index at once: an indexed one is valid. */
	return true;
}

/* Before a lookup: wait until the thread has applied what it read. */
static void uffd_sync(struct regcache *cache)
{
	struct uffd_mon *m = uc(cache)->mon;

	if (!atomic_load(&m->pending))
		return;
	pthread_mutex_lock(&m->mu);
	while (atomic_load(&m->pending))
		pthread_cond_wait(&m->cv, &m->mu);
	pthread_mutex_unlock(&m->mu);
}

static int uffd_fd(struct regcache *cache)
{
	return uc(cache)->notify_fd;
}

static int uffd_process(struct regcache *cache)
{
	struct uffd_client *c = uc(cache);
	uint64_t v;

	uffd_sync(cache);
	if (read(c->notify_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	return (int)atomic_exchange(&c->dropped, 0);
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
