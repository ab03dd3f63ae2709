/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * itree.h - an interval index of half-open address ranges.
 *
 * An AVL tree ordered by (start, node address), each node augmented with
 * the largest end in its subtree, so "which ranges overlap [s, e)" costs
 * O(log n + k) and an insert or removal O(log n) with no allocation (the
 * node lives inside the cache entry).  Ranges may overlap each other.
 * No locking: the cache's lock protects it.
 *
 * The floor lookup of the hit path does not walk the AVL tree: with many
 * entries every level is a cache miss in another entry.  A second index,
 * a sorted array of blocks of (start, node) pairs, answers it with a
 * binary search over the blocks' first keys (a small array that stays
 * cached) and one over a block's keys (a few adjacent lines).  Its blocks
 * are allocated by insertions; where an allocation fails the block index
 * is dropped for good and the floor lookup walks the AVL tree again.
 * Removal never frees (emptied blocks wait on a spare list until
 * rc_itree_destroy): the uffd monitor's thread removes entries, and a
 * free() there could unmap heap memory it watches and wait on itself.
 */
#ifndef RC_ITREE_H
#define RC_ITREE_H

#include <stddef.h>
#include <stdint.h>

struct rc_itree_node {
	/* [start, end); first: see struct regcache_entry */
	uintptr_t start, end;
	struct rc_itree_node *left, *right;
	uintptr_t max_end;		/* largest end in this subtree */
	int height;
};

#define RC_FBLOCK_KEYS	64

struct rc_fblock {
	struct rc_fblock *spare;		/* on tree->spare: unused */
	unsigned int n;
	uintptr_t key[RC_FBLOCK_KEYS];		/* node[i]->start */
	struct rc_itree_node *node[RC_FBLOCK_KEYS];
};

struct rc_itree {
	struct rc_itree_node *root;
	size_t count;
	/* the block index: blk[i]'s first key is first[i]; sorted */
	uintptr_t *first;
	struct rc_fblock **blk;
	size_t nblk, cap;
	int broken;				/* an allocation failed */
	struct rc_fblock *spare;		/* emptied blocks, for reuse */
};

/* Visitor: return non-zero to stop the walk (that value is returned). */
typedef int (*rc_itree_visit_fn)(struct rc_itree_node *node, void *arg);

void rc_itree_insert(struct rc_itree *tree, struct rc_itree_node *node);
void rc_itree_remove(struct rc_itree *tree, struct rc_itree_node *node);

/* Visit every node overlapping [start, end), in ascending start order. */
int rc_itree_visit(const struct rc_itree *tree, uintptr_t start, uintptr_t end,
		   rc_itree_visit_fn fn, void *arg);

/*
 * Ask for every line of a block at once: with many entries the block is
 * rarely cached, and the binary search over its keys then the node
 * pointer would otherwise wait for three or four misses one after the
 * other instead of one round of parallel ones.
 */
static inline void rc_fblock_prefetch(const struct rc_fblock *b)
{
	const char *p = (const char *)b;
	size_t off;

	for (off = 0; off < sizeof(*b); off += 64)
		__builtin_prefetch(p + off);
}

/*
 * The node with the greatest start <= addr, or NULL: when ranges rarely
 * overlap it is the only one that can cover addr, so the hit path tries
 * it before a full overlap walk.
 */
static inline struct rc_itree_node *rc_itree_floor(const struct rc_itree *tree,
						   uintptr_t addr)
{
	struct rc_itree_node *n = tree->root, *best = NULL;

	if (!tree->broken) {
		const struct rc_fblock *b;
		size_t lo = 0, hi = tree->nblk;
		unsigned int l, h;

		/* the last block whose first key is <= addr */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (tree->first[mid] <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!lo)
			return NULL;
		b = tree->blk[lo - 1];
		rc_fblock_prefetch(b);
		l = 1;
		h = b->n;
		while (l < h) {
			unsigned int mid = (l + h) / 2;

			if (b->key[mid] <= addr)
				l = mid + 1;
			else
				h = mid;
		}
		return b->node[l - 1];
	}
	while (n) {
		if (n->start <= addr) {
			best = n;
			n = n->right;
		} else {
			n = n->left;
		}
	}
	return best;
}

/* Visit every node, in ascending start order. */
int rc_itree_visit_all(const struct rc_itree *tree, rc_itree_visit_fn fn,
		       void *arg);

/*
 * Check the AVL and max_end invariants, and that the block index holds
 * the same nodes in the same order; returns the node count or -1.
 */
long rc_itree_check(const struct rc_itree *tree);

/* Free the block index (the nodes belong to the caller). */
void rc_itree_destroy(struct rc_itree *tree);

/*
 * A zeroed tree that never builds the block index (its floor lookups walk
 * the AVL tree): for indexes off the hit path whose changes must not
 * allocate, such as the uffd monitor's watches, which its thread edits.
 */
static inline void rc_itree_init_plain(struct rc_itree *tree)
{
	tree->broken = 1;
}

#endif /* RC_ITREE_H */
