// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * plan.c - the plan of a miss, write lock held: merging with the cached
 * entries its range touches, growing the union geometrically inside one
 * private anonymous VMA, and narrowing the attempt when the monitor or the
 * backend refuses it.  Nothing here registers: miss.c does, unlocked.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "vma.h"

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
bool rc_merge_plan(struct regcache *cache, struct rc_merge *m)
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

void rc_merge_reset(struct rc_merge *m)
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
void rc_grow_plan(struct regcache *cache, struct rc_merge *m)
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
bool rc_grow_shrink(struct rc_merge *m)
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
void rc_try_apply(struct regcache_entry *e, const struct rc_merge *m,
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
void rc_merge_unref(struct rc_merge *m, struct rc_list *release)
{
	size_t i;

	for (i = 0; i < m->ncovered; i++)
		rc_entry_unref(m->covered[i], RC_REF_USER, release);
	m->ncovered = 0;
}

/* Move to the next, narrower attempt.  Write lock held. */
void rc_try_next(struct rc_merge *m, enum rc_try *level,
		 struct rc_list *release)
{
	if (*level == RC_TRY_UNION)
		rc_merge_unref(m, release);	/* the exact request covers none */
	if (*level != RC_TRY_EXACT)
		(*level)++;
}
