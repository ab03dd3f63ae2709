// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * regcache.c - the libregcache API: lookup, miss handling with coalescing,
 * CLOCK eviction, reference counting, flush, fork detection.
 *
 * Locking.  The index (interval tree + CLOCK list + counters) is protected
 * by a brlock.  A hit takes only its read side, bumps the entry's atomic
 * reference count and returns; a per-thread hint remembers the last entry
 * hit so a repeated lookup skips the tree walk (the hint is trusted only
 * while the tree's change counter is unchanged).  Registration callbacks
 * always run with no lock held, as in libfabric's cache: an entry being
 * registered waits on the 'pending' list, where invalidations can mark it
 * stale, and is only indexed if it is still valid afterwards.
 *
 * Entry slots and their release are entry.c's; the index's inserts,
 * removals, CLOCK eviction and invalidations evict.c's; the counters
 * stats.c's.
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

#define RC_GET_RETRIES	8

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
		g = ++rc_proc_last_gen;
		atomic_store_explicit(&rc_proc->gen, g, memory_order_release);
	}
	pthread_mutex_unlock(&rc_proc->lock);
	return g;
}

/* The last entry this thread hit, valid while tree_seq is unchanged. */
struct rc_hint {
	uint64_t cache_id;
	uint64_t seq;
	struct regcache_entry *e;
};
static __thread struct rc_hint rc_hint __attribute__((tls_model("initial-exec")));
/* The last exact entry this thread hit, valid while xtree_seq is unchanged. */
static __thread struct rc_hint rc_xhint __attribute__((tls_model("initial-exec")));

static size_t rc_page_size;

/* ---------------------------------------------------------------- lookup */

struct rc_find {
	const struct regcache *cache;
	uintptr_t start, end;
	uint32_t access;
	struct regcache_entry *found;
	bool saw_stale;
};

static inline bool rc_entry_serves(const struct regcache *cache,
				   const struct regcache_entry *e,
				   uintptr_t start, uintptr_t end, uint32_t access)
{
	return e->node.start <= start && e->node.end >= end &&
	       (e->access & access) == access;
}

static int rc_find_fn(struct rc_itree_node *n, void *arg)
{
	struct rc_find *f = arg;
	struct regcache_entry *e = rc_node_entry(n);

	if (!rc_entry_serves(f->cache, e, f->start, f->end, f->access))
		return 0;
	if (!rc_mon_valid(f->cache, e)) {
		f->saw_stale = true;
		return 0;
	}
	f->found = e;
	return 1;
}

/*
 * The index walk of a lookup whose hint did not serve; records the entry
 * found as this thread's hint.  Read or write lock held.
 */
static struct regcache_entry *
rc_lookup_walk(struct regcache *cache, uintptr_t start, uintptr_t end,
	       uint32_t access, uint64_t seq, bool *saw_stale)
{
	struct rc_find f = {
		.cache = cache, .start = start, .end = end, .access = access,
	};
	struct rc_hint *h = &rc_hint;
	struct rc_itree_node *n;

	n = rc_itree_floor(&cache->tree, start);
	if (n && rc_entry_serves(cache, rc_node_entry(n), start, end, access) &&
	    rc_mon_valid(cache, rc_node_entry(n))) {
		f.found = rc_node_entry(n);
	} else {
		/* Overlapping entries: any one starting before may cover it. */
		rc_itree_visit(&cache->tree, start, start + 1, rc_find_fn, &f);
	}
	if (f.found) {
		h->cache_id = cache->id;
		h->seq = seq;
		h->e = f.found;
	}
	if (saw_stale)
		*saw_stale = f.saw_stale;
	return f.found;
}

/*
 * Read or write lock held.  The hint is trusted only while tree_seq is
 * the one it was taken at: every insertion into and removal from the
 * index bumps tree_seq under the write lock, and the read side excludes
 * the writer, so an unchanged tree_seq means the hinted entry is still
 * indexed and holds the index's reference.
 */
static inline struct regcache_entry *rc_lookup(struct regcache *cache,
					       uintptr_t start, uintptr_t end,
					       uint32_t access, bool *saw_stale)
{
	const struct rc_hint *h = &rc_hint;
	uint64_t seq = atomic_load_explicit(&cache->tree_seq,
					    memory_order_acquire);

	if (__builtin_expect(h->cache_id == cache->id && h->seq == seq, 1) &&
	    rc_entry_serves(cache, h->e, start, end, access) &&
	    rc_mon_valid(cache, h->e)) {
		if (saw_stale)
			*saw_stale = false;
		return h->e;
	}
	return rc_lookup_walk(cache, start, end, access, seq, saw_stale);
}

/* The hinted entry, if it serves the request; lock held as for rc_lookup. */
static inline struct regcache_entry *rc_hint_get(struct regcache *cache,
						 uintptr_t start, uintptr_t end,
						 uint32_t access)
{
	const struct rc_hint *h = &rc_hint;

	if (h->cache_id == cache->id &&
	    h->seq == atomic_load_explicit(&cache->tree_seq,
					   memory_order_acquire) &&
	    rc_entry_serves(cache, h->e, start, end, access) &&
	    rc_mon_valid_nocall(cache, h->e))
		return h->e;
	return NULL;
}

static inline void rc_hit(struct regcache_entry *e)
{
	atomic_fetch_add(&e->refs, RC_REF_USER);
	/*
	 * Not a locked add: the hit counter may lose increments when threads
	 * hit one entry at the same instant, which a statistic can afford
	 * and the hit path's latency cannot.
	 */
	atomic_store_explicit(&e->hits, atomic_load_explicit(&e->hits,
			      memory_order_relaxed) + 1, memory_order_relaxed);
	if (!atomic_load_explicit(&e->accessed, memory_order_relaxed))
		atomic_store_explicit(&e->accessed, 1, memory_order_relaxed);
}

/* ----------------------------------------------------------------- miss */

/*
 * The covered entries are kept in an array, not linked through ->link:
 * while this thread registers unlocked, another may collect the same
 * entries for its own merge or an invalidation.
 */
struct rc_merge {
	const struct regcache *cache;
	uintptr_t start, end;		/* the union */
	uint32_t access;
	uintptr_t gstart, gend;		/* the union grown geometrically */
	uintptr_t rstart, rend;		/* the request */
	uint32_t raccess;
	struct regcache_entry **covered;
	size_t ncovered, cap;
	bool grew, nomem;
};

/*
 * What a miss tries to register, widest first.  Each step falls back to
 * the next when the monitor cannot watch the range or the register
 * callback refuses it.
 */
enum rc_try {
	RC_TRY_GROWN,		/* the union plus its geometric extension */
	RC_TRY_UNION,		/* the union with the covered entries */
	RC_TRY_EXACT,		/* the request alone */
};

static bool rc_merge_has(const struct rc_merge *m, const struct regcache_entry *e)
{
	size_t i;

	for (i = 0; i < m->ncovered; i++)
		if (m->covered[i] == e)
			return true;
	return false;
}

static int rc_merge_fn(struct rc_itree_node *n, void *arg)
{
	struct rc_merge *m = arg;
	struct regcache_entry *e = rc_node_entry(n);
	uintptr_t ns = e->node.start < m->start ? e->node.start : m->start;
	uintptr_t ne = e->node.end > m->end ? e->node.end : m->end;

	if (!rc_mon_valid(m->cache, e) || rc_merge_has(m, e))
		return 0;
	/*
	 * Leave out a neighbour the union cannot take in within merge_max
	 * (the union only grows, so it never fits later): a buffer registered
	 * chunk by chunk past merge_max then starts a new union beside the
	 * full one instead of registering every further chunk alone.
	 */
	if (ne - ns > m->cache->merge_max || ne - ns > m->cache->max_bytes)
		return 0;
	if (m->ncovered == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 8;
		struct regcache_entry **c = realloc(m->covered, cap * sizeof(*c));

		if (!c) {
			m->nomem = true;
			return 1;
		}
		m->covered = c;
		m->cap = cap;
	}
	m->covered[m->ncovered++] = e;
	if (e->node.start < m->start)
		m->start = e->node.start;
	if (e->node.end > m->end)
		m->end = e->node.end;
	m->access |= e->access;
	m->grew = true;
	return 0;
}

/*
 * The union of the request with the valid entries overlapping or adjacent
 * to it, transitively, taking in only those that keep it within merge_max.
 * Write lock held.
 */
static bool rc_merge_plan(struct regcache *cache, struct rc_merge *m)
{
	unsigned int rounds = 0;

	do {
		m->grew = false;
		rc_itree_visit(&cache->tree, m->start ? m->start - 1 : 0,
			       m->end + 1, rc_merge_fn, m);
		if (m->nomem || m->end - m->start > cache->merge_max ||
		    m->end - m->start > cache->max_bytes)
			return false;
	} while (m->grew && ++rounds < 64);
	return m->ncovered > 0;
}

static void rc_merge_reset(struct rc_merge *m)
{
	m->ncovered = 0;
}

struct rc_edge {
	uintptr_t lo, hi;	/* the free room around the union */
	bool down;
};

static int rc_edge_fn(struct rc_itree_node *n, void *arg)
{
	struct rc_edge *g = arg;

	if (g->down && n->end > g->lo)
		g->lo = n->end;
	if (!g->down && n->start < g->hi)
		g->hi = n->start;
	return 0;
}

/*
 * May an extension be carved out of this VMA?  Only private anonymous
 * memory ([heap], [stack], plain anonymous mmaps) that can be read.
 * Not a MAP_SHARED or file mapping, though the caller named part of it:
 * its pages belong to an object other processes may map, pinning the
 * part nobody named would read a file in from disk or allocate shmem and
 * disk blocks for it, the part past the end of the file cannot be pinned
 * at all (SIGBUS territory, a refused registration at every miss), a
 * writable long-term pin of a file that needs dirty tracking is refused
 * by recent kernels anyway, and the uffd monitor cannot see that memory
 * change through the file.  A buffer in such a mapping still merges
 * with its cached neighbours (ranges callers named), without extension.
 */
static bool rc_vma_growable(const struct rc_vma *vma)
{
	return rc_vma_private_anon(vma) && (vma->flags & RC_VMA_READ);
}

/*
 * Geometric growth.  Registering a big buffer chunk by chunk (NIXL does
 * this) makes every chunk a miss adjacent to the union of the previous
 * ones; re-registering just that union would cost n registrations and
 * O(n^2) bytes.  So a miss that grows the union on one side registers,
 * on that side, as much again as the union's length: n adjacent chunks
 * then cost O(log n) registrations and O(n) bytes.  The extension stops
 * at merge_max, at the next indexed entry, and is dropped if the cache
 * would need more than max_bytes for it.
 *
 * Security property.  The extension never leaves the VMA that holds the
 * union's edge on the side it grows (asked of the kernel: PROCMAP_QUERY,
 * else /proc/self/maps), and that VMA must be private anonymous memory
 * (rc_vma_growable).  So a PROT_NONE guard page, an unmapped hole, a
 * file or shared mapping, or anonymous memory with other protections next
 * to a buffer is never registered or pinned by growth: the kernel keeps
 * each of those in a VMA of its own.  What one VMA can still hold is two
 * mmap() calls: the kernel merges adjacent anonymous mappings with the
 * same protection and flags into one VMA, and userspace cannot tell them
 * apart.  Growth may therefore pin part of such a neighbour, for a key
 * that only this process can use: remote-access memory is registered
 * exactly as named (REGCACHE_GET_EXACT, which never merges or grows), so
 * a grown entry is a local key and a peer never reaches memory through
 * it.  The pin is undone when the entry goes: unmapping the neighbour
 * invalidates it like any change of its memory.
 *
 * When the kernel cannot be asked (no /proc), nothing grows.  The query
 * is a system call under the write lock, as a monitor's subscribe is;
 * only merged misses make it, which for a buffer registered chunk by
 * chunk is O(log n) of them.  Write lock held; fills m->gstart/m->gend.
 */
static void rc_grow_plan(struct regcache *cache, struct rc_merge *m)
{
	uintptr_t cs = UINTPTR_MAX, ce = 0;
	size_t ulen = m->end - m->start, want, covered_bytes = 0, i;
	struct rc_vma vma;
	struct rc_edge g;

	m->gstart = m->start;
	m->gend = m->end;
	for (i = 0; i < m->ncovered; i++) {
		const struct regcache_entry *c = m->covered[i];

		if (c->node.start < cs)
			cs = c->node.start;
		if (c->node.end > ce)
			ce = c->node.end;
		if (c->in_tree)
			covered_bytes += c->node.end - c->node.start;
	}
	if (!m->ncovered || ulen >= cache->merge_max)
		return;
	want = ulen;
	if (want > cache->merge_max - ulen)
		want = (cache->merge_max - ulen) & ~(rc_page_size - 1);
	if (!want)
		return;
	/* The cache after the union replaced the covered entries. */
	if (cache->bytes - covered_bytes + ulen + want > cache->max_bytes)
		return;
	memset(&g, 0, sizeof(g));
	if (m->rend > ce) {
		/*
		 * Growing up: stay below the next entry and the end of the
		 * VMA holding the union's last page (the request's).
		 */
		if (rc_vma_query(m->end - 1, &vma) || !rc_vma_growable(&vma) ||
		    vma.end <= m->end)
			return;
		if (want > vma.end - m->end)
			want = vma.end - m->end;
		g.hi = m->end + want;
		rc_itree_visit(&cache->tree, m->end, g.hi, rc_edge_fn, &g);
		if (g.hi > m->end)
			m->gend = g.hi;
	} else if (m->rstart < cs) {
		/* Growing down: stay above the previous entry and the VMA. */
		if (rc_vma_query(m->start, &vma) || !rc_vma_growable(&vma) ||
		    vma.start >= m->start)
			return;
		if (want > m->start - vma.start)
			want = m->start - vma.start;
		g.down = true;
		g.lo = m->start - want;
		rc_itree_visit(&cache->tree, g.lo, m->start, rc_edge_fn, &g);
		if (g.lo < m->start)
			m->gstart = g.lo;
	}
}

/*
 * The callback refused the grown range.  It lies in one private
 * anonymous VMA, so what refuses it is the backend's own limit rather
 * than the memory: RLIMIT_MEMLOCK with nothing left to evict, a device's
 * largest region.  Halve the extension rather than fall back to the bare
 * union at once, which would bring back one registration of the whole
 * union per chunk.  At most log2(extension / page size) refused calls;
 * false when nothing is left.
 */
static bool rc_grow_shrink(struct rc_merge *m)
{
	size_t ext = (m->gend - m->end) + (m->start - m->gstart);

	ext = (ext / 2) & ~(rc_page_size - 1);
	if (!ext)
		return false;
	if (m->gend > m->end)
		m->gend = m->end + ext;
	else
		m->gstart = m->start - ext;
	return true;
}

/* Point e at what attempt 'level' registers. */
static void rc_try_apply(struct regcache_entry *e, const struct rc_merge *m,
			 enum rc_try level)
{
	switch (level) {
	case RC_TRY_GROWN:
		e->node.start = m->gstart;
		e->node.end = m->gend;
		e->access = m->access;
		break;
	case RC_TRY_UNION:
		e->node.start = m->start;
		e->node.end = m->end;
		e->access = m->access;
		break;
	case RC_TRY_EXACT:
		e->node.start = m->rstart;
		e->node.end = m->rend;
		e->access = m->raccess;
		break;
	}
}

/* Drop the references taken on the covered entries.  Write lock held. */
static void rc_merge_unref(struct rc_merge *m, struct rc_list *release)
{
	size_t i;

	for (i = 0; i < m->ncovered; i++)
		rc_entry_unref(m->covered[i], RC_REF_USER, release);
	m->ncovered = 0;
}

/* Subscribe e, evicting on -ENOSPC.  Write lock held. */
static int rc_subscribe_locked(struct regcache *cache, struct regcache_entry *e,
			       struct rc_list *release)
{
	int ret;

	for (;;) {
		ret = cache->mon->subscribe(cache, e);
		if (ret != -ENOSPC)
			break;
		if (!rc_evict_one(cache, release))
			break;
	}
	e->subscribed = !ret;
	return ret;
}

/* Move to the next, narrower attempt.  Write lock held. */
static void rc_try_next(struct rc_merge *m, enum rc_try *level,
			struct rc_list *release)
{
	if (*level == RC_TRY_UNION)
		rc_merge_unref(m, release);	/* the exact request covers none */
	if (*level != RC_TRY_EXACT)
		(*level)++;
}

/*
 * Subscribe e for the widest attempt the monitor accepts, from *level on.
 * The extension may reach memory the monitor cannot watch (kmod: unmapped;
 * uffd: not anon/shmem/hugetlb, or another userfaultfd's), or push the
 * module's pinned cap: then it is dropped, never paid for by an eviction.
 * Only the exact request may end unsubscribed (then it is not cached).
 * Write lock held.
 */
static int rc_subscribe_try(struct regcache *cache, struct regcache_entry *e,
			    struct rc_merge *m, enum rc_try *level,
			    struct rc_list *release)
{
	int ret;

	for (;;) {
		rc_try_apply(e, m, *level);
		if (*level == RC_TRY_GROWN) {
			ret = cache->mon->subscribe(cache, e);
			e->subscribed = !ret;
		} else {
			ret = rc_subscribe_locked(cache, e, release);
		}
		if (!ret || *level == RC_TRY_EXACT)
			return ret;
		rc_try_next(m, level, release);
	}
}

static int rc_register_once(struct regcache *cache, struct regcache_entry *e)
{
	uint64_t t0 = rc_now_ns();
	int ret;

	ret = cache->reg(cache->user, regcache_entry_addr(e),
			 regcache_entry_len(e), e->access, &e->handle);
	atomic_fetch_add_explicit(&cache->reg_ns, rc_now_ns() - t0,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&cache->registrations, 1, memory_order_relaxed);
	if (ret > 0)
		ret = -ret;	/* be lenient with callbacks returning errno */
	return ret;
}

/* The callback's way of saying that no more memory can be pinned. */
static inline bool rc_reg_nomem(int ret)
{
	return ret == -ENOMEM || ret == -EAGAIN;
}

/*
 * Register e's range; no lock held.  A callback failing with -ENOMEM or
 * -EAGAIN has usually hit RLIMIT_MEMLOCK (ib_umem_get's ENOMEM) or the
 * device's table size, to which the idle registrations this cache keeps
 * count: as libfabric's cache does, evict idle entries worth at least
 * the range (what the kernel must pin for it) and retry once, counted in
 * reg_retries.  Nothing evicted: no retry, the error goes back.  'evict'
 * false: fail at once (a speculative extension is not worth the idle
 * entries it would cost; the caller drops it instead).
 */
static int rc_register_evict(struct regcache *cache, struct regcache_entry *e,
			     bool evict)
{
	int ret = rc_register_once(cache, e);

	if (evict && rc_reg_nomem(ret) &&
	    rc_evict_bytes(cache, e->node.end - e->node.start)) {
		atomic_fetch_add_explicit(&cache->reg_retries, 1,
					  memory_order_relaxed);
		ret = rc_register_once(cache, e);
	}
	return ret;
}

/*
 * -EFAULT from the callback for the range a caller named.  On Linux 6.1
 * a long-term pin cannot wait for a userfault: a page not present in a
 * range another userfaultfd watches in missing mode (the application's
 * own), or write-protected by it, fails the pin, where 7.3 waits for
 * that userfaultfd's handler.  madvise() waits for it on every kernel:
 * fault the range in as the pin would, read first, then write where the
 * mapping is writable, and register again after each.  Only the named
 * range: never a union or an extension, whose pages nobody asked for.
 * Memory that is not there (a hole, PROT_NONE) fails the populate and
 * keeps its -EFAULT.  Not for NO_PIN caches: their registrations fault
 * nothing in.
 */
static int rc_register_faulted(struct regcache *cache, struct regcache_entry *e)
{
	uintptr_t s = e->node.start, t = e->node.end;
	int ret = -EFAULT;

	if (cache->flags & REGCACHE_ATTR_NO_PIN)
		return ret;
	if (!rc_vma_populate(s, t, false))
		ret = rc_register_once(cache, e);
	if (ret == -EFAULT && !rc_vma_populate(s, t, true))
		ret = rc_register_once(cache, e);
	return ret;
}

/* Register the range a caller named (not a union or an extension). */
static int rc_register(struct regcache *cache, struct regcache_entry *e)
{
	int ret = rc_register_evict(cache, e, true);

	return ret == -EFAULT ? rc_register_faulted(cache, e) : ret;
}

/* Register what attempt 'level' of a miss asks for (rc_get_slow()). */
static int rc_register_level(struct regcache *cache, struct regcache_entry *e,
			     enum rc_try level)
{
	if (level == RC_TRY_EXACT)
		return rc_register(cache, e);
	return rc_register_evict(cache, e, level != RC_TRY_GROWN);
}

static void rc_deregister_now(struct regcache *cache, struct regcache_entry *e)
{
	uint64_t t0 = rc_now_ns();

	cache->dereg(cache->user, e->handle);
	atomic_fetch_add_explicit(&cache->dereg_ns, rc_now_ns() - t0,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&cache->deregistrations, 1, memory_order_relaxed);
}

/* A registration the cache does not keep: released at its put. */
static int __attribute__((noinline))
rc_get_uncached(struct regcache *cache, uintptr_t start, uintptr_t end,
			   uint32_t access, struct regcache_entry **entryp)
{
	struct regcache_entry *e;
	int ret;

	e = rc_entry_alloc(cache, false);
	if (!e)
		return -ENOMEM;
	e->node.start = start;
	e->node.end = end;
	e->access = access;
	ret = rc_register(cache, e);
	if (ret) {
		rc_entry_free(cache, e);
		return ret;
	}
	atomic_fetch_add_explicit(&cache->uncached, 1, memory_order_relaxed);
	*entryp = e;
	return 0;
}

/*
 * Put a freshly registered, subscribed entry into the index, evicting
 * idle entries to stay within the limits; if they cannot make room it is
 * served uncached (released at its put).  Write lock held.
 */
static void rc_admit_locked(struct regcache *cache, struct regcache_entry *e,
			    struct rc_list *release)
{
	size_t len = e->node.end - e->node.start;

	while (cache->entries + 1 > cache->max_entries ||
	       cache->bytes + len > cache->max_bytes)
		if (!rc_evict_one(cache, release))
			break;
	if (cache->entries + 1 > cache->max_entries ||
	    cache->bytes + len > cache->max_bytes) {
		rc_unsubscribe_locked(cache, e);
		e->cached = false;
		return;
	}
	rc_insert_locked(cache, e);
}

/*
 * A get served uncached because the monitor refused to watch the request:
 * -EBUSY, another userfaultfd owns it; -EMEDIUMTYPE, a shared or file
 * mapping whose changes the monitor cannot see (see monitor_uffd.c).
 */
static void rc_count_unwatched(struct regcache *cache, int err)
{
	if (err == -EBUSY)
		atomic_fetch_add_explicit(&cache->uffd_foreign, 1,
					  memory_order_relaxed);
	else if (err == -EMEDIUMTYPE)
		atomic_fetch_add_explicit(&cache->uffd_shared, 1,
					  memory_order_relaxed);
}

static int __attribute__((noinline))
rc_get_slow(struct regcache *cache, uintptr_t start, uintptr_t end,
		       uint32_t access, struct regcache_entry **entryp)
{
	struct rc_merge m;
	struct rc_list release;
	struct regcache_entry *e;
	bool merged, stale, grow = true, merge = true, lost = false;
	enum rc_try level;
	unsigned int tries;
	size_t i;
	int ret = 0;
	int unwatched = 0;	/* why the monitor refused the request */

	memset(&m, 0, sizeof(m));
	rc_list_init(&release);
	for (tries = 0; tries < RC_GET_RETRIES; tries++) {
		lost = false;
		rc_brlock_write_lock(&cache->lock);
		/* Drop the stale entries the lookup ran into. */
		e = rc_lookup(cache, start, end, access, &stale);
		if (stale) {
			struct rc_collect c = { .cache = cache, .only_stale = true };

			rc_list_init(&c.list);
			rc_itree_visit(&cache->tree, start, end, rc_collect_fn, &c);
			rc_drop_collected(cache, &c, &release);
		}
		if (e) {
			rc_hit(e);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			free(m.covered);
			*entryp = e;
			return 0;
		}
		if (tries == 0)
			atomic_fetch_add_explicit(&cache->misses, 1,
						  memory_order_relaxed);

		e = rc_entry_alloc(cache, true);
		if (!e) {
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			ret = -ENOMEM;
			break;
		}
		m.cache = cache;
		m.start = m.rstart = start;
		m.end = m.rend = end;
		m.access = m.raccess = access;
		m.ncovered = 0;
		m.grew = m.nomem = false;
		merged = merge && cache->merge_max >= rc_page_size &&
			 rc_merge_plan(cache, &m);
		if (!merged) {
			rc_merge_reset(&m);
			m.start = start;
			m.end = end;
			m.access = access;
		}
		level = RC_TRY_EXACT;
		if (merged) {
			m.gstart = m.start;
			m.gend = m.end;
			if (grow)
				rc_grow_plan(cache, &m);
			level = m.gstart != m.start || m.gend != m.end ?
				RC_TRY_GROWN : RC_TRY_UNION;
		}
		e->cached = true;
		/* Pin the covered entries: they may not vanish while unlocked. */
		for (i = 0; i < m.ncovered; i++)
			atomic_fetch_add(&m.covered[i]->refs, RC_REF_USER);
		ret = rc_subscribe_try(cache, e, &m, &level, &release);
		unwatched = ret;
		if (ret)
			e->cached = false;	/* cannot watch it: do not keep it */
		rc_list_add_tail(&cache->pending, &e->link);
		rc_brlock_write_unlock(&cache->lock);
		rc_release_list(cache, &release);

		ret = rc_register_level(cache, e, level);
		while (ret && level != RC_TRY_EXACT) {
			/*
			 * An extension the backend refuses, or a union with
			 * unmapped holes: try the next narrower range.  An
			 * extension refused for lack of pinnable memory is
			 * dropped at once rather than halved.
			 */
			rc_brlock_write_lock(&cache->lock);
			rc_unsubscribe_locked(cache, e);
			if (level != RC_TRY_GROWN || rc_reg_nomem(ret) ||
			    !rc_grow_shrink(&m))
				rc_try_next(&m, &level, &release);
			atomic_store(&e->stale, 0);
			unwatched = rc_subscribe_try(cache, e, &m, &level,
						     &release);
			e->cached = !unwatched;
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			ret = rc_register_level(cache, e, level);
		}
		merged = level != RC_TRY_EXACT;
		/*
		 * Let the monitor apply what it learnt while we registered
		 * (the uffd thread may have read an unmap of this range and
		 * not yet marked e stale) before judging e below.
		 */
		if (!ret && cache->mon->sync)
			cache->mon->sync(cache);

		rc_brlock_write_lock(&cache->lock);
		rc_list_del(&e->link);	/* off the pending list */
		if (ret) {
			/* The cache is left as it was. */
			rc_unsubscribe_locked(cache, e);
			rc_merge_unref(&m, &release);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			rc_entry_free(cache, e);
			free(m.covered);
			return ret;
		}
		if (atomic_load(&e->stale) ||
		    (e->subscribed && !rc_mon_valid(cache, e))) {
			/*
			 * The memory changed while we registered it: again,
			 * one step narrower.  What changed may be a busy
			 * neighbour the request has nothing to do with: the
			 * extension reaches into it, or a covered entry of
			 * the union is its memory, and a thread that keeps
			 * unmapping and remapping it would make us lose every
			 * time.  So without the extension first, then without
			 * the union: the exact request, which only a change
			 * of the requested memory itself can spoil.
			 */
			if (level == RC_TRY_GROWN)
				grow = false;
			else if (level == RC_TRY_UNION)
				merge = false;
			lost = true;
			rc_unsubscribe_locked(cache, e);
			rc_merge_unref(&m, &release);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			rc_deregister_now(cache, e);
			rc_entry_free(cache, e);
			ret = -EAGAIN;
			continue;
		}
		if (e->cached) {
			/* Retire what the union replaces. */
			for (i = 0; i < m.ncovered; i++) {
				struct regcache_entry *c = m.covered[i];

				if (c->in_tree) {
					rc_itree_remove(&cache->tree, &c->node);
					rc_list_del(&c->lru);
					cache->entries--;
					cache->bytes -= c->node.end - c->node.start;
					RC_WRITE_ONCE(c->in_tree, false);
					rc_unsubscribe_locked(cache, c);
					atomic_fetch_sub(&c->refs, RC_REF_TREE);
					atomic_fetch_add_explicit(&cache->tree_seq, 1,
								  memory_order_release);
				}
			}
			if (merged)
				atomic_fetch_add_explicit(&cache->merges, 1,
							  memory_order_relaxed);
			rc_admit_locked(cache, e, &release);
		}
		rc_merge_unref(&m, &release);
		rc_brlock_write_unlock(&cache->lock);
		rc_release_list(cache, &release);
		if (!e->cached) {
			atomic_fetch_add_explicit(&cache->uncached, 1,
						  memory_order_relaxed);
			rc_count_unwatched(cache, unwatched);
		}
		free(m.covered);
		*entryp = e;
		return 0;
	}
	free(m.covered);
	if (!lost)
		return ret;
	/*
	 * Even the exact request changed under every registration: another
	 * thread keeps unmapping and remapping the very memory it asked for.
	 * Register it once more and do not keep it, rather than fail with
	 * -EAGAIN.  This is safe: the cache's danger is serving a stale
	 * registration to a later get, and this one is never indexed, so it
	 * serves only this caller and is released at its put.  What it
	 * covers is what a plain ibv_reg_mr() racing with the same munmap()
	 * and mmap() would: the pages mapped when the kernel pinned them
	 * (or -EFAULT if none were), a race that is the caller's own.
	 */
	return rc_get_uncached(cache, start, end, access, entryp);
}

/* ---------------------------------------------------------------- exact */

/*
 * Exact entries (REGCACHE_GET_EXACT), for memory a remote peer may reach.
 *
 * Security property.  An ordinary entry may be a merged union or grown
 * geometrically into neighbouring memory, with the union of the access
 * bits of what it took in, and it stays registered after its last put:
 * its key reaches memory nobody named, for as long as the cache keeps it.
 * That is fine for a local key, which only this process can use, and not
 * for a key handed to a peer.  An exact entry is registered with the very
 * bytes and access its caller named and lives in an index of its own
 * (cache->xtree) that the hit path, merging and growth never consult: it
 * serves nothing but a later exact get of the identical range, access and
 * NOKEEP flag, so its key reaches exactly what every holder named.
 * Invalidation (the monitor's events, munmap) drops it as any other entry.
 * With REGCACHE_GET_NOKEEP it is deregistered when the last holder puts
 * it, so the key dies with the last handle; without, it is kept until
 * evicted or invalidated and the key outlives the handles (UCX/libfabric
 * behaviour, the caller's explicit choice).
 */

struct rc_xfind {
	const struct regcache *cache;
	uintptr_t addr;
	size_t len;
	uint32_t access;
	bool nokeep;
	struct regcache_entry *found;
	bool saw_stale;
};

/* Does exact entry e serve f: the identical range, access and NOKEEP? */
static inline bool rc_xmatch(const struct regcache_entry *e,
			     const struct rc_xfind *f)
{
	return e->xaddr == f->addr && e->xlen == f->len &&
	       e->access == f->access && e->nokeep == f->nokeep;
}

static int rc_xfind_fn(struct rc_itree_node *n, void *arg)
{
	struct rc_xfind *f = arg;
	struct regcache_entry *e = rc_node_entry(n);

	if (!rc_xmatch(e, f))
		return 0;
	if (!rc_mon_valid(f->cache, e)) {
		f->saw_stale = true;
		return 0;
	}
	f->found = e;
	return 1;
}

/* Read or write lock held.  A find becomes this thread's exact hint. */
static struct regcache_entry *rc_xlookup(struct regcache *cache,
					 struct rc_xfind *f)
{
	uintptr_t start = f->addr & ~(rc_page_size - 1);
	uint64_t seq = atomic_load_explicit(&cache->xtree_seq,
					    memory_order_acquire);

	f->found = NULL;
	f->saw_stale = false;
	/* identical ranges share their first page */
	rc_itree_visit(&cache->xtree, start, start + 1, rc_xfind_fn, f);
	if (f->found) {
		rc_xhint.cache_id = cache->id;
		rc_xhint.seq = seq;
		rc_xhint.e = f->found;
	}
	return f->found;
}

/*
 * The hinted exact entry, if it is the one asked for; lock held as for
 * rc_xlookup.  The argument is rc_lookup's: every insertion into and
 * removal from the exact index bumps xtree_seq under the write lock and
 * the read side excludes the writer, so an unchanged xtree_seq means the
 * hinted entry is still indexed (the index's reference keeps it), and it
 * serves only what rc_xfind_fn would serve (rc_xmatch).
 */
static inline struct regcache_entry *rc_xhint_get(struct regcache *cache,
						  const struct rc_xfind *f)
{
	const struct rc_hint *h = &rc_xhint;
	const struct regcache_entry *e = h->e;

	if (h->cache_id == cache->id &&
	    h->seq == atomic_load_explicit(&cache->xtree_seq,
					   memory_order_acquire) &&
	    rc_xmatch(e, f) && rc_mon_valid_nocall(cache, e))
		return h->e;
	return NULL;
}

static void rc_exact_init(struct regcache_entry *e, const struct rc_xfind *f)
{
	e->exact = true;
	e->nokeep = f->nokeep;
	e->xaddr = f->addr;
	e->xlen = f->len;
	e->access = f->access;
	e->node.start = f->addr & ~(rc_page_size - 1);
	e->node.end = (f->addr + f->len + rc_page_size - 1) &
		      ~(rc_page_size - 1);
}

/* An exact registration not kept: for this holder alone, gone at its put. */
static int rc_get_exact_uncached(struct regcache *cache,
				 const struct rc_xfind *f,
				 struct regcache_entry **entryp)
{
	struct regcache_entry *e;
	int ret;

	e = rc_entry_alloc(cache, false);
	if (!e)
		return -ENOMEM;
	rc_exact_init(e, f);
	ret = rc_register(cache, e);
	if (ret) {
		rc_entry_free(cache, e);
		return ret;
	}
	atomic_fetch_add_explicit(&cache->exact, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&cache->uncached, 1, memory_order_relaxed);
	*entryp = e;
	return 0;
}

static int rc_get_exact_slow(struct regcache *cache, struct rc_xfind *f,
			     struct regcache_entry **entryp)
{
	struct rc_list release;
	struct regcache_entry *e;
	unsigned int tries;
	int ret, unwatched = 0;

	rc_list_init(&release);
	for (tries = 0; tries < RC_GET_RETRIES; tries++) {
		rc_brlock_write_lock(&cache->lock);
		e = rc_xlookup(cache, f);
		if (f->saw_stale) {
			struct rc_collect c = { .cache = cache, .only_stale = true };
			uintptr_t s = f->addr & ~(rc_page_size - 1);

			rc_list_init(&c.list);
			rc_itree_visit(&cache->xtree, s, s + 1, rc_collect_fn, &c);
			rc_drop_collected(cache, &c, &release);
		}
		if (e) {
			rc_hit(e);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			*entryp = e;
			return 0;
		}
		if (tries == 0)
			atomic_fetch_add_explicit(&cache->misses, 1,
						  memory_order_relaxed);
		e = rc_entry_alloc(cache, true);
		if (!e) {
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			return -ENOMEM;
		}
		rc_exact_init(e, f);
		/* cannot watch it: register it all the same, uncached */
		unwatched = rc_subscribe_locked(cache, e, &release);
		e->cached = !unwatched;
		rc_list_add_tail(&cache->pending, &e->link);
		rc_brlock_write_unlock(&cache->lock);
		rc_release_list(cache, &release);

		ret = rc_register(cache, e);

		rc_brlock_write_lock(&cache->lock);
		rc_list_del(&e->link);
		if (!ret && (atomic_load(&e->stale) ||
			     (e->subscribed && !rc_mon_valid(cache, e)))) {
			/* the memory changed while we registered it: again */
			ret = -EAGAIN;
			rc_unsubscribe_locked(cache, e);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			rc_deregister_now(cache, e);
			rc_entry_free(cache, e);
			continue;
		}
		if (ret) {
			rc_unsubscribe_locked(cache, e);
			rc_brlock_write_unlock(&cache->lock);
			rc_release_list(cache, &release);
			rc_entry_free(cache, e);
			return ret;
		}
		atomic_fetch_add_explicit(&cache->exact, 1, memory_order_relaxed);
		if (e->cached)
			rc_admit_locked(cache, e, &release);
		rc_brlock_write_unlock(&cache->lock);
		rc_release_list(cache, &release);
		if (!e->cached) {
			atomic_fetch_add_explicit(&cache->uncached, 1,
						  memory_order_relaxed);
			rc_count_unwatched(cache, unwatched);
		}
		*entryp = e;
		return 0;
	}
	/*
	 * The memory kept changing under every try: register it uncached,
	 * as a plain registration racing the same munmap would be.  Never
	 * indexed, so no later get is handed it; gone at its put.
	 */
	return rc_get_exact_uncached(cache, f, entryp);
}

/*
 * The last holder of a NOKEEP entry let go; drop it unless a get took it
 * again meanwhile (a hit needs the read side, so the write lock settles
 * the race: whoever puts last finds refs at the index's alone).
 */
static void __attribute__((noinline))
rc_put_nokeep(struct regcache *cache, struct regcache_entry *e)
{
	struct rc_list release;

	rc_list_init(&release);
	rc_brlock_write_lock(&cache->lock);
	if (__atomic_load_n(&e->magic, __ATOMIC_ACQUIRE) == RC_MAGIC_LIVE &&
	    e->nokeep && e->in_tree && atomic_load(&e->refs) == RC_REF_TREE)
		rc_remove_locked(cache, e, &release);
	rc_brlock_write_unlock(&cache->lock);
	rc_release_list(cache, &release);
}

/*
 * The gate of the hinted hits (regcache_get(), the exact get): the read
 * side's fast path, taken only when the monitor has nothing to apply and
 * no deferred release waits; NULL sends the caller the long way.
 */
static inline struct rc_reader *rc_fast_read_lock(struct regcache *cache)
{
	if (__builtin_expect(!rc_mon_idle(cache), 0) ||
	    atomic_load_explicit(&cache->ndeferred, memory_order_relaxed))
		return NULL;
	return rc_brlock_read_trylock(&cache->lock);
}

/* Exact get: everything the fast path of regcache_get() does not need. */
static int rc_get_exact(struct regcache *cache, uintptr_t a, size_t len,
			uint32_t access, unsigned int flags,
			struct regcache_entry **entryp)
{
	struct rc_xfind f = {
		.cache = cache, .addr = a, .len = len, .access = access,
		.nokeep = !!(flags & REGCACHE_GET_NOKEEP),
	};
	struct regcache_entry *e;
	struct rc_reader *s;
	size_t span;

	span = ((a + len + rc_page_size - 1) & ~(rc_page_size - 1)) -
	       (a & ~(rc_page_size - 1));
	if (cache->mon->type == REGCACHE_MONITOR_NONE ||
	    span > cache->max_bytes || !cache->max_entries) {
		return rc_get_exact_uncached(cache, &f, entryp);
	}
	/* the hinted hit: what regcache_get()'s fast path does */
	if ((s = rc_fast_read_lock(cache))) {
		e = rc_xhint_get(cache, &f);
		if (__builtin_expect(!!e, 1)) {
			rc_hit(e);
			rc_brlock_read_unlock(&cache->lock, s);
			*entryp = e;
			return 0;
		}
		rc_brlock_read_unlock(&cache->lock, s);
	}
	rc_mon_sync(cache);
	rc_run_deferred(cache);

	s = rc_brlock_read_lock(&cache->lock);
	e = rc_xlookup(cache, &f);
	if (e) {
		rc_hit(e);
		rc_brlock_read_unlock(&cache->lock, s);
		*entryp = e;
		return 0;
	}
	rc_brlock_read_unlock(&cache->lock, s);
	return rc_get_exact_slow(cache, &f, entryp);
}

/* ------------------------------------------------------------------ API */

/* regcache_get() past its fast path: everything but the hinted hit. */
static int __attribute__((noinline))
rc_get_lookup(struct regcache *cache, uintptr_t start, uintptr_t end,
	      uint32_t access, struct regcache_entry **entryp)
{
	struct regcache_entry *e;
	struct rc_reader *s;

	/* fast_max is 0 for the "none" monitor and a cache of no entries */
	if (end - start > cache->fast_max)
		return rc_get_uncached(cache, start, end, access, entryp);

	rc_mon_sync(cache);
	rc_run_deferred(cache);

	s = rc_brlock_read_lock(&cache->lock);
	e = rc_lookup(cache, start, end, access, NULL);
	if (__builtin_expect(!!e, 1)) {
		rc_hit(e);
		rc_brlock_read_unlock(&cache->lock, s);
		*entryp = e;
		return 0;
	}
	rc_brlock_read_unlock(&cache->lock, s);
	return rc_get_slow(cache, start, end, access, entryp);
}

/* regcache_get() when the hint did not serve: the index walk, read-locked. */
static int __attribute__((noinline))
rc_get_walk(struct regcache *cache, struct rc_reader *s, uintptr_t start,
	    uintptr_t end, uint32_t access, struct regcache_entry **entryp)
{
	uint64_t seq = atomic_load_explicit(&cache->tree_seq,
					    memory_order_acquire);
	struct regcache_entry *e;

	e = rc_lookup_walk(cache, start, end, access, seq, NULL);
	if (e) {
		rc_hit(e);
		rc_brlock_read_unlock(&cache->lock, s);
		*entryp = e;
		return 0;
	}
	rc_brlock_read_unlock(&cache->lock, s);
	return rc_get_slow(cache, start, end, access, entryp);
}

/*
 * The hit on this thread's hinted entry, with nothing to wait for, is
 * inlined here: no call, no register spills.  A range the hint does not
 * serve goes on to the index walk (rc_get_walk); a monitor that has work,
 * deferred releases or a writer to rc_get_lookup(), the long way.
 */
int regcache_get(struct regcache *cache, void *addr, size_t len,
		 uint32_t access, struct regcache_entry **entryp)
{
	uintptr_t a = (uintptr_t)addr, start, end;
	struct regcache_entry *e;
	struct rc_reader *s;

	if (!cache || !entryp || !len || a + len < a ||
	    a + len > UINTPTR_MAX - rc_page_size)
		return -EINVAL;
	if (rc_forked(cache))
		return -ESTALE;
	start = a & ~(rc_page_size - 1);
	end = (a + len + rc_page_size - 1) & ~(rc_page_size - 1);

	if (__builtin_expect(end - start <= cache->fast_max, 1) &&
	    (s = rc_fast_read_lock(cache))) {
		e = rc_hint_get(cache, start, end, access);
		if (__builtin_expect(!!e, 1)) {
			rc_hit(e);
			rc_brlock_read_unlock(&cache->lock, s);
			*entryp = e;
			return 0;
		}
		return rc_get_walk(cache, s, start, end, access, entryp);
	}
	return rc_get_lookup(cache, start, end, access, entryp);
}

int regcache_get_flags(struct regcache *cache, void *addr, size_t len,
		       uint32_t access, unsigned int flags,
		       struct regcache_entry **entryp)
{
	uintptr_t a = (uintptr_t)addr;

	if (!flags)
		return regcache_get(cache, addr, len, access, entryp);
	if ((flags & ~(REGCACHE_GET_EXACT | REGCACHE_GET_NOKEEP)) ||
	    !(flags & REGCACHE_GET_EXACT))
		return -EINVAL;
	if (!cache || !entryp || !len || a + len < a ||
	    a + len > UINTPTR_MAX - rc_page_size)
		return -EINVAL;
	if (rc_forked(cache))
		return -ESTALE;
	return rc_get_exact(cache, a, len, access, flags, entryp);
}

/*
 * A put needs no lock.  Entries are type-stable: their slots live in
 * chunks that are only freed by regcache_destroy(), so once 'entry' is
 * known to be a slot of this cache, reading it cannot fault, and the
 * caller's reference keeps the slot from being freed and reused while we
 * read nokeep and drop that reference.  The magic (acquire, paired with
 * the release store of rc_entry_alloc/rc_entry_free) turns away freed
 * slots (a slot only ever serves the cache whose chunk holds it, so a
 * live one has entry->cache == cache); the CAS on refs
 * is the only step that must be atomic, and it serialises with the
 * writer's own RMWs on refs (rc_remove_locked's drop of the index's
 * reference), so exactly one side sees the count reach zero and releases.
 * Knowing the slot costs a binary search over the chunks under the read
 * side (the chunk array grows under the write lock), except for the
 * entry this thread's last lookup found in either index (its hints): that
 * pointer came out of this cache's index, and cache ids are never reused,
 * so it is a slot of this cache for the cache's whole life.
 */
int regcache_put(struct regcache *cache, struct regcache_entry *entry)
{
	const struct rc_hint *h = &rc_hint, *x = &rc_xhint;
	uint64_t v;
	bool nokeep;

	if (!cache || !entry)
		return -EINVAL;
	if (rc_forked(cache))
		return -ESTALE;
	/* a live slot of this cache's chunks has entry->cache == cache */
	if (__builtin_expect(entry != h->e || h->cache_id != cache->id, 0) &&
	    (entry != x->e || x->cache_id != cache->id) &&
	    !rc_entry_known_slow(cache, entry))
		return -EINVAL;
	if (__atomic_load_n(&entry->magic, __ATOMIC_ACQUIRE) != RC_MAGIC_LIVE)
		return -EINVAL;
	/* read while our reference keeps the slot ours */
	nokeep = entry->nokeep;
	v = atomic_load_explicit(&entry->refs, memory_order_relaxed);
	do {
		if (v < RC_REF_USER)
			return -EINVAL;	/* already put */
	} while (!atomic_compare_exchange_weak(&entry->refs, &v, v - RC_REF_USER));
	if (v == RC_REF_USER)
		rc_entry_release(cache, entry);
	else if (nokeep && v == RC_REF_USER + RC_REF_TREE)
		rc_put_nokeep(cache, entry);
	rc_run_deferred(cache);
	return 0;
}

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
	return n;
}

const char *regcache_monitor_name(const struct regcache *cache)
{
	return cache ? cache->mon->name : NULL;
}

bool regcache_entry_valid(struct regcache *cache,
			  const struct regcache_entry *entry)
{
	if (!cache || !entry || entry->cache != cache || !entry->cached ||
	    rc_forked(cache))
		return false;
	rc_mon_sync(cache);
	/* the same test a hit on this entry would pass */
	return RC_READ_ONCE(entry->in_tree) &&
	       !RC_READ_ONCE(entry->dead) &&
	       !atomic_load_explicit(&entry->stale, memory_order_relaxed) &&
	       rc_mon_valid(cache, entry);
}

/*
 * Why an unchanged generation proves the entries checked after the
 * earlier call still valid.  An entry stops being valid in two ways.
 * (1) It leaves the index (flush, an invalidation the library applies,
 * uffd's thread included): rc_remove_locked() clears in_tree, then bumps
 * inval_seq with release.  A generation whose acquire load saw that bump
 * makes the later check see in_tree clear, so the entry was not kept;
 * one that did not see it differs from any taken after the bump.  (2) The
 * module changes its slot word (kmod): the notifier writes the word and
 * then events_total (smp_wmb, regcache_status_sync) before the unmapping
 * call returns; the same pairing with our acquire load of events_total
 * applies.  uffd's window between the event's read and its application
 * is closed by rc_mon_sync(), as for regcache_entry_valid().  Both counts
 * only grow, so their sum is unchanged only if neither changed.
 */
uint64_t regcache_generation(struct regcache *cache)
{
	const volatile struct regcache_status *st;
	uint64_t g;

	if (!cache || rc_forked(cache) || !cache->fast_max)
		return 0;
	rc_mon_sync(cache);
	st = cache->mon_status;
	g = atomic_load_explicit(&cache->inval_seq, memory_order_acquire);
	if (st)
		g += __atomic_load_n(&st->events_total, __ATOMIC_ACQUIRE);
	else if (cache->mon->type != REGCACHE_MONITOR_UFFD)
		return 0;	/* a monitor whose changes we cannot count */
	return g;
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
	pthread_mutex_destroy(&cache->defer_lock);
	pthread_mutex_destroy(&cache->alloc_lock);
	rc_brlock_destroy(&cache->lock);
	free(cache);
}
