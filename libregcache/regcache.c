// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * regcache.c - a cache's life: create (its monitor, its limits),
 * destroy, the monitor's fd and events, and fork detection.
 *
 * Locking.  The index (interval tree + CLOCK list + counters) is protected
 * by a brlock: a hit takes only its read side (lookup.c), a miss plans and
 * admits under the write side and registers with no lock held (miss.c,
 * plan.c).  Entry slots and their release are entry.c's; the index's
 * inserts, removals, CLOCK eviction and invalidations evict.c's; the
 * counters stats.c's.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "regcache_int.h"
#include "vma.h"

static _Atomic uint64_t rc_next_cache_id = 1;
static pthread_once_t rc_atfork_once = PTHREAD_ONCE_INIT;

/*
 * Fork detection.  The reader of the status page (kmod), the monitor
 * thread (uffd) and the registrations all belong to the process that made
 * the cache; a child gets -ESTALE from every call on such a cache.  A
 * pthread_atfork handler alone misses children made by a raw clone
 * syscall (no handler runs there): such a child reading the status page,
 * which the module maps VM_DONTCOPY, would take SIGSEGV.  So the process
 * generation lives on a private anonymous page marked MADV_WIPEONFORK,
 * which the kernel gives every child as a zero page however it was
 * created (only CLONE_VM children share it, and they share the caches'
 * memory too).  getpid() would also see a raw clone, but since glibc 2.25
 * it is a system call on every hit, and a pid cached in memory is copied
 * with the rest.  Where MADV_WIPEONFORK is missing (before Linux 4.14) the
 * word lives in ordinary memory, the atfork handler clears it, and raw
 * clones go unnoticed (logged once).  The generation is set under
 * rc_proc->lock (on the same page, so a child never inherits it locked)
 * by the first regcache_create of each process; rc_proc_last_gen is in
 * ordinary memory, so a child's generation always differs from its
 * parent's.
 */
struct rc_proc {
	_Atomic uint64_t gen;
	pthread_mutex_t lock;
};
static struct rc_proc *rc_proc;
static struct rc_proc rc_proc_fallback = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};
static uint64_t rc_proc_last_gen;

static void rc_atfork_child(void)
{
	/* Needed only for the fallback; on the wiped page it is 0 already. */
	atomic_store(&rc_proc->gen, 0);
	pthread_mutex_init(&rc_proc->lock, NULL);
}

static void rc_atfork_setup(void)
{
	long psz = sysconf(_SC_PAGESIZE);
	void *p;

	p = mmap(NULL, (size_t)psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED && madvise(p, (size_t)psz, MADV_WIPEONFORK)) {
		rc_log("MADV_WIPEONFORK: %s; a child made by a raw clone is not detected",
		       strerror(errno));
		munmap(p, (size_t)psz);
		p = MAP_FAILED;
	}
	if (p != MAP_FAILED) {
		rc_proc = p;
		pthread_mutex_init(&rc_proc->lock, NULL);
	} else {
		rc_proc = &rc_proc_fallback;
	}
	pthread_atfork(NULL, NULL, rc_atfork_child);
}

/* This process's generation; the first call in a process sets it. */
static uint64_t rc_proc_enter(void)
{
	uint64_t g = atomic_load_explicit(&rc_proc->gen, memory_order_acquire);

	if (g)
		return g;
	pthread_mutex_lock(&rc_proc->lock);
	g = atomic_load(&rc_proc->gen);
	if (!g) {
		/*
		 * New process, no cache of it exists yet: reader records
		 * copied from the parent name only the parent's locks.
		 */
		rc_brlock_forget_parent();
		rc_vma_forget_parent();
		g = ++rc_proc_last_gen;
		atomic_store_explicit(&rc_proc->gen, g, memory_order_release);
	}
	pthread_mutex_unlock(&rc_proc->lock);
	return g;
}

size_t rc_page_size;

/* ------------------------------------------------------------------ API */

int regcache_fd(struct regcache *cache)
{
	if (!cache)
		return -EINVAL;
	if (rc_forked(cache))
		return -ESTALE;
	if (!cache->mon->fd)
		return -ENOTSUP;
	return cache->mon->fd(cache);
}

int regcache_process_events(struct regcache *cache)
{
	int n = 0;

	if (!cache)
		return -EINVAL;
	if (rc_forked(cache))
		return -ESTALE;
	if (cache->mon->process)
		n = cache->mon->process(cache);
	rc_run_deferred(cache);
	/* and what another thread drained before: its deregs returned */
	rc_inval_wait(cache);
	return n;
}

const char *regcache_monitor_name(const struct regcache *cache)
{
	return cache ? cache->mon->name : NULL;
}

/* -------------------------------------------------------- create/destroy */

static const struct rc_monitor_ops *rc_monitors[] = {
	[REGCACHE_MONITOR_KMOD] = &rc_monitor_kmod_ops,
	[REGCACHE_MONITOR_UFFD] = &rc_monitor_uffd_ops,
	[REGCACHE_MONITOR_NONE] = &rc_monitor_none_ops,
};

static int rc_start_monitor(struct regcache *cache,
			    enum regcache_monitor_type type, bool from_env)
{
	const char *why = "", *why_kmod = "";
	int ret;

	if (type != REGCACHE_MONITOR_AUTO) {
		cache->mon = rc_monitors[type];
		ret = cache->mon->start(cache, &why);
		if (ret)
			return ret;
		rc_log("monitor %s (%s%s%s)", cache->mon->name,
		       from_env ? "forced by REGCACHE_MONITOR" : "requested",
		       *why ? ", " : "", why);
		return 0;
	}
	cache->mon = &rc_monitor_kmod_ops;
	ret = cache->mon->start(cache, &why_kmod);
	if (!ret) {
		rc_log("monitor kmod (%s)", why_kmod);
		return 0;
	}
	cache->mon = &rc_monitor_uffd_ops;
	ret = cache->mon->start(cache, &why);
	if (!ret) {
		rc_log("monitor uffd (kmod unavailable: %s%s%s)", why_kmod,
		       *why ? "; " : "", why);
		return 0;
	}
	cache->mon = &rc_monitor_none_ops;
	rc_log("monitor none, registrations are not cached (kmod: %s; uffd: %s)",
	       why_kmod, why);
	return cache->mon->start(cache, &why);
}

int regcache_create(const struct regcache_attr *attr, struct regcache **cachep)
{
	enum regcache_monitor_type type;
	struct regcache *cache;
	struct rc_env env;
	int ret;

	if (!attr || !cachep || !attr->reg || !attr->dereg ||
	    (unsigned int)attr->monitor > REGCACHE_MONITOR_NONE ||
	    (attr->flags & ~(REGCACHE_ATTR_NO_PIN | REGCACHE_ATTR_NO_ENV)))
		return -EINVAL;
	if (attr->flags & REGCACHE_ATTR_NO_ENV)
		memset(&env, 0, sizeof(env));
	else if (rc_env_read(&env))
		return -EINVAL;
	pthread_once(&rc_atfork_once, rc_atfork_setup);
	if (!rc_page_size)
		rc_page_size = (size_t)sysconf(_SC_PAGESIZE);

	if (posix_memalign((void **)&cache, RC_CACHELINE, sizeof(*cache)))
		return -ENOMEM;
	memset(cache, 0, sizeof(*cache));
	ret = rc_brlock_init(&cache->lock);
	if (ret)
		goto free_cache;
	pthread_mutex_init(&cache->alloc_lock, NULL);
	pthread_mutex_init(&cache->defer_lock, NULL);
	pthread_mutex_init(&cache->inval_lock, NULL);
	pthread_cond_init(&cache->inval_cond, NULL);
	rc_list_init(&cache->lru);
	rc_list_init(&cache->pending);
	rc_list_init(&cache->free_list);
	rc_list_init(&cache->deferred);
	cache->id = atomic_fetch_add(&rc_next_cache_id, 1);
	atomic_init(&cache->inval_seq, 1);	/* 0 means "cannot tell" */
	cache->reg = attr->reg;
	cache->dereg = attr->dereg;
	cache->user = attr->user;
	cache->flags = attr->flags;
	cache->proc_gen = &rc_proc->gen;
	cache->fork_gen = rc_proc_enter();
	cache->max_entries = env.max_entries_set ? env.max_entries :
			     attr->max_entries ? attr->max_entries :
			     RC_DEFAULT_MAX_ENTRIES;
	cache->max_bytes = env.max_bytes_set ? env.max_bytes :
			   attr->max_bytes ? attr->max_bytes :
			   rc_default_max_bytes(!(attr->flags &
						  REGCACHE_ATTR_NO_PIN));
	cache->merge_max = env.merge_set ? env.merge_max :
			   attr->merge_max ? attr->merge_max :
			   RC_DEFAULT_MERGE_MAX;
	cache->print_stats = env.stats;

	type = env.monitor_set ? env.monitor : attr->monitor;
	ret = rc_start_monitor(cache, type, env.monitor_set);
	if (ret)
		goto destroy_locks;
	/*
	 * The first entry chunk and this thread's reader record now rather
	 * than in the first get: allocating and faulting in 1024 entries
	 * (192 KiB) was part of the first registration's cost.  A failure
	 * here is not one: the first miss tries again.
	 */
	rc_chunk_add(cache);
	rc_reader_get();
	if (cache->mon->type != REGCACHE_MONITOR_NONE && cache->max_entries)
		cache->fast_max = cache->max_bytes;
	*cachep = cache;
	return 0;

destroy_locks:
	pthread_cond_destroy(&cache->inval_cond);
	pthread_mutex_destroy(&cache->inval_lock);
	pthread_mutex_destroy(&cache->defer_lock);
	pthread_mutex_destroy(&cache->alloc_lock);
	rc_brlock_destroy(&cache->lock);
free_cache:
	free(cache);
	return ret;
}

void regcache_destroy(struct regcache *cache)
{
	size_t i;

	if (!cache)
		return;
	if (cache->print_stats)
		rc_print_stats(cache);
	if (!rc_forked(cache)) {
		regcache_flush(cache);
		cache->mon->stop(cache);
		rc_run_deferred(cache);
	} else {
		/* The parent owns the registrations; only free memory. */
		cache->mon->stop(cache);
	}
	for (i = 0; i < cache->nchunks; i++)
		rc_chunk_free(&cache->chunks[i]);
	free(cache->chunks);
	rc_itree_destroy(&cache->tree);
	rc_itree_destroy(&cache->xtree);
	pthread_cond_destroy(&cache->inval_cond);
	pthread_mutex_destroy(&cache->inval_lock);
	pthread_mutex_destroy(&cache->defer_lock);
	pthread_mutex_destroy(&cache->alloc_lock);
	rc_brlock_destroy(&cache->lock);
	free(cache);
}
