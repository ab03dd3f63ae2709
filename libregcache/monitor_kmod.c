// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * monitor_kmod.c - the regcache.ko monitor.
 *
 * Every cached entry is WATCHed before it is registered; the module's
 * notifier changes the slot word in the read-only status area before the
 * unmapping call returns, so the hit path's validity check is one load
 * compared with the word WATCH handed out, with no window and no thread.
 * Events only serve eager deregistration: they are drained, without ever
 * blocking a hit, by the next get that finds events pending and wins a
 * trylock, by regcache_process_events(), and on every miss.  When the
 * module's ring overflowed, events are lost but the slot words are still
 * right, so a sweep of every entry's word resyncs: load events_total,
 * sweep, then FLUSH with that count (an event that arrives during the
 * sweep stays queued; regcache(4)).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "regcache_int.h"
#include "regcache_uapi.h"

struct kmod_priv {
	int fd;
	dev_t rdev;				/* of fd, for a forked child */
	volatile struct regcache_status *status;
	volatile uint64_t *slots;		/* follow the status header */
	size_t status_size;
	size_t event_size;			/* the module's record size */
	uint32_t max_watches;
	bool unwatch_word;			/* UNWATCH may name the watch's word */
	struct regcache_entry **slot_entry;	/* slot -> entry, for events */
	uint64_t next_cookie;
	_Atomic uint64_t dropped;		/* for regcache_process_events */
};

static struct kmod_priv *kp(const struct regcache *cache)
{
	return cache->mon_priv;
}

static int kmod_start(struct regcache *cache, const char **why)
{
	static __thread char buf[160];
	struct regcache_info info;
	struct kmod_priv *p;
	struct stat st;
	void *map;
	int ret;

	p = calloc(1, sizeof(*p));
	if (!p) {
		*why = "out of memory";
		return -ENOMEM;
	}
	p->fd = open(REGCACHE_DEVICE_PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (p->fd < 0) {
		ret = -errno;
		snprintf(buf, sizeof(buf), "%s: %s", REGCACHE_DEVICE_PATH,
			 strerror(errno));
		*why = buf;
		goto free_priv;
	}
	if (fstat(p->fd, &st) == 0)
		p->rdev = st.st_rdev;
	memset(&info, 0, sizeof(info));
	if (ioctl(p->fd, REGCACHE_IOC_GET_INFO, &info)) {
		ret = -errno;
		snprintf(buf, sizeof(buf), "GET_INFO: %s", strerror(errno));
		*why = buf;
		goto close_fd;
	}
	if (info.abi_version != REGCACHE_ABI_VERSION || !info.max_watches ||
	    info.event_size < sizeof(struct regcache_event)) {
		ret = -EPROTO;
		snprintf(buf, sizeof(buf), "module ABI %u, library ABI %u",
			 info.abi_version, REGCACHE_ABI_VERSION);
		*why = buf;
		goto close_fd;
	}
	map = mmap(NULL, info.status_size, PROT_READ, MAP_SHARED, p->fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		snprintf(buf, sizeof(buf), "mmap of the status area: %s",
			 strerror(errno));
		*why = buf;
		goto close_fd;
	}
	p->status = map;
	p->slots = (volatile uint64_t *)((char *)map + REGCACHE_STATUS_SLOT_OFFSET(0));
	p->status_size = info.status_size;
	p->event_size = info.event_size;
	p->max_watches = info.max_watches;
	p->unwatch_word = info.features & REGCACHE_FEATURE_UNWATCH_WORD;
	p->slot_entry = calloc(info.max_watches, sizeof(*p->slot_entry));
	if (!p->slot_entry) {
		ret = -ENOMEM;
		*why = "out of memory";
		goto unmap;
	}
	p->next_cookie = 1;
	cache->mon_priv = p;
	cache->mon_status = p->status;	/* kmod_sync's test, inlined */
	snprintf(buf, sizeof(buf), "%s ABI %u, %u watches, pin cap %llu%s",
		 REGCACHE_DEVICE_PATH, info.abi_version, info.max_watches,
		 (unsigned long long)info.max_pinned_bytes,
		 info.strict ? ", strict" : "");
	*why = buf;
	return 0;

unmap:
	munmap(map, info.status_size);
close_fd:
	close(p->fd);
free_priv:
	free(p);
	return ret;
}

/*
 * In a child: is p->fd still the parent's /dev/regcache file, and not a
 * number the child closed and reused?  The module reports EPOLLERR, with
 * no log line, to a poll from another address space.
 */
static bool kmod_fd_inherited(const struct kmod_priv *p)
{
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
	struct stat st;

	if (fstat(p->fd, &st) || !S_ISCHR(st.st_mode) || st.st_rdev != p->rdev)
		return false;
	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLERR);
}

static void kmod_stop(struct regcache *cache)
{
	struct kmod_priv *p = kp(cache);

	cache->mon_status = NULL;
	if (!rc_forked(cache)) {
		ioctl(p->fd, REGCACHE_IOC_UNWATCH_ALL);
		munmap((void *)p->status, p->status_size);
		close(p->fd);
	} else {
		/*
		 * The status page was not inherited (VM_DONTCOPY): whatever
		 * the child has mapped at that address since is its own, maybe
		 * the status page of a cache it made.  The module refuses the
		 * parent's fd here (-EIO); close the child's copy only if the
		 * number still names it.
		 */
		if (kmod_fd_inherited(p))
			close(p->fd);
	}
	free(p->slot_entry);
	free(p);
	cache->mon_priv = NULL;
}

static int kmod_subscribe(struct regcache *cache, struct regcache_entry *e)
{
	struct kmod_priv *p = kp(cache);
	struct regcache_watch w;

	memset(&w, 0, sizeof(w));
	w.addr = e->node.start;
	w.len = e->node.end - e->node.start;
	w.cookie = p->next_cookie++;
	w.pinned_bytes = (cache->flags & REGCACHE_ATTR_NO_PIN) ? 0 : w.len;
	if (ioctl(p->fd, REGCACHE_IOC_WATCH, &w))
		return -errno;
	if (w.slot >= p->max_watches) {
		/* Cannot happen with a sane module; do not index out of bounds. */
		struct regcache_unwatch u = {
			.slot = w.slot, .cookie = w.cookie,
			.slot_word = p->unwatch_word ? w.slot_word : 0,
		};

		ioctl(p->fd, REGCACHE_IOC_UNWATCH, &u);
		return -EPROTO;
	}
	e->slot = w.slot;
	e->slot_word = w.slot_word;
	e->cookie = w.cookie;
	e->slot_ptr = &p->slots[w.slot];
	p->slot_entry[w.slot] = e;
	return 0;
}

static void kmod_unsubscribe(struct regcache *cache, struct regcache_entry *e)
{
	struct kmod_priv *p = kp(cache);
	struct regcache_unwatch u;

	memset(&u, 0, sizeof(u));
	u.slot = e->slot;
	u.cookie = e->cookie;
	/* the watch itself, not only its slot (a module without it: 0) */
	if (p->unwatch_word)
		u.slot_word = e->slot_word;
	if (ioctl(p->fd, REGCACHE_IOC_UNWATCH, &u) && errno != EIO)
		rc_log("UNWATCH slot %u: %s", e->slot, strerror(errno));
	if (p->slot_entry[e->slot] == e)
		p->slot_entry[e->slot] = NULL;
}

/*
 * The status page is mapped VM_DONTCOPY by the module: a child made by
 * fork or by a raw clone has nothing at that address.  Every caller of
 * ->valid and ->sync checks rc_forked() first, which sees both kinds of
 * child (regcache_int.h), so a child never gets here.
 */
static bool kmod_valid(const struct regcache *cache, const struct regcache_entry *e)
{
	const struct kmod_priv *p = cache->mon_priv;

	return __atomic_load_n(&p->slots[e->slot], __ATOMIC_ACQUIRE) ==
	       e->slot_word;
}

/*
 * Events were lost: resync from the slot words, which never lie.  The
 * count is loaded before the sweep, so FLUSH drops only what the sweep
 * has covered.
 */
static int kmod_resync_locked(struct regcache *cache, struct rc_list *release)
{
	struct kmod_priv *p = kp(cache);
	struct regcache_flush f;
	int dropped;

	memset(&f, 0, sizeof(f));
	f.events_seen = __atomic_load_n(&p->status->events_total, __ATOMIC_ACQUIRE);
	dropped = rc_invalidate_stale(cache, release);
	if (ioctl(p->fd, REGCACHE_IOC_FLUSH, &f))
		rc_log("FLUSH: %s", strerror(errno));
	return dropped;
}

/* One record; the module's may be longer than ours (a later ABI). */
static int kmod_event_locked(struct regcache *cache, const struct regcache_event *ev,
			     struct rc_list *release)
{
	struct kmod_priv *p = kp(cache);
	struct regcache_entry *e;

	if (ev->slot >= p->max_watches)
		return 0;
	e = p->slot_entry[ev->slot];
	if (!e || e->cookie != ev->cookie)
		return 0;	/* already unwatched */
	if (e->in_tree) {
		int n;

		/* the same pages still mapped there (a zap, a COW or THP
		 * split, a migration): a held exact entry is not revoked */
		cache->inval_soft = ev->reason != REGCACHE_REASON_UNMAP &&
				    ev->reason != REGCACHE_REASON_RELEASE;
		n = rc_invalidate_entry(cache, e, release);
		cache->inval_soft = false;
		return n;
	}
	atomic_store(&e->stale, 1);	/* pending */
	return 0;
}

/* Write lock held.  Returns how many entries were dropped. */
static int kmod_drain_locked(struct regcache *cache, struct rc_list *release)
{
	struct kmod_priv *p = kp(cache);
	uint64_t buf[64 * sizeof(struct regcache_event) / sizeof(uint64_t)];
	const struct regcache_event *ev;
	size_t off, step = p->event_size;
	ssize_t n;
	int dropped = 0;

	if (__atomic_load_n(&p->status->flags, __ATOMIC_ACQUIRE) &
	    REGCACHE_STATUS_OVERFLOW)
		return kmod_resync_locked(cache, release);
	if (step > sizeof(buf))
		return kmod_resync_locked(cache, release);
	for (;;) {
		n = read(p->fd, buf, sizeof(buf) - sizeof(buf) % step);
		if (n <= 0)
			break;
		for (off = 0; off + step <= (size_t)n; off += step) {
			ev = (const struct regcache_event *)((const char *)buf + off);
			dropped += kmod_event_locked(cache, ev, release);
		}
		if ((size_t)n + step <= sizeof(buf) - sizeof(buf) % step)
			break;
	}
	if (__atomic_load_n(&p->status->flags, __ATOMIC_ACQUIRE) &
	    REGCACHE_STATUS_OVERFLOW)
		dropped += kmod_resync_locked(cache, release);
	return dropped;
}

static bool kmod_events_pending(const struct kmod_priv *p)
{
	return __atomic_load_n(&p->status->events_pending, __ATOMIC_RELAXED) ||
	       (__atomic_load_n(&p->status->flags, __ATOMIC_RELAXED) &
		REGCACHE_STATUS_OVERFLOW);
}

/* Before a lookup: drain if someone left events, but never wait for it. */
static void kmod_sync(struct regcache *cache)
{
	struct kmod_priv *p = kp(cache);
	struct rc_list release;
	int n;

	if (!kmod_events_pending(p))
		return;
	if (!rc_brlock_write_trylock(&cache->lock))
		return;
	rc_list_init(&release);
	n = kmod_drain_locked(cache, &release);
	rc_brlock_write_unlock(&cache->lock);
	rc_release_list(cache, &release);
	atomic_fetch_add(&p->dropped, n);
}

static int kmod_fd(struct regcache *cache)
{
	return kp(cache)->fd;
}

static int kmod_process(struct regcache *cache)
{
	struct kmod_priv *p = kp(cache);
	struct rc_list release;
	int n;

	rc_list_init(&release);
	rc_brlock_write_lock(&cache->lock);
	n = kmod_drain_locked(cache, &release);
	rc_brlock_write_unlock(&cache->lock);
	rc_release_list(cache, &release);
	return n + (int)atomic_exchange(&p->dropped, 0);
}

const struct rc_monitor_ops rc_monitor_kmod_ops = {
	.name = "kmod",
	.type = REGCACHE_MONITOR_KMOD,
	.start = kmod_start,
	.stop = kmod_stop,
	.subscribe = kmod_subscribe,
	.unsubscribe = kmod_unsubscribe,
	.valid = kmod_valid,
	.sync = kmod_sync,
	.fd = kmod_fd,
	.process = kmod_process,
};
