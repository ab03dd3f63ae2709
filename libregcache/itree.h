/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * itree.h - an interval index of half-open address ranges.
 *
 * An AVL tree ordered by (start, node address), each node augmented with
 * the largest end in its subtree, so "which ranges overlap [s, e)" costs
 * O(log n + k) and an insert or removal O(log n) with no allocation (the
 * node lives inside the cache entry).  Ranges may overlap each other.
 * No locking: the cache's lock protects it.
 */
#ifndef RC_ITREE_H
#define RC_ITREE_H

#include <stddef.h>
#include <stdint.h>

struct rc_itree_node {
	struct rc_itree_node *left, *right;
	uintptr_t start, end;		/* [start, end) */
	uintptr_t max_end;		/* largest end in this subtree */
	int height;
};

struct rc_itree {
	struct rc_itree_node *root;
	size_t count;
};

/* Visitor: return non-zero to stop the walk (that value is returned). */
typedef int (*rc_itree_visit_fn)(struct rc_itree_node *node, void *arg);

void rc_itree_insert(struct rc_itree *tree, struct rc_itree_node *node);
void rc_itree_remove(struct rc_itree *tree, struct rc_itree_node *node);

/* Visit every node overlapping [start, end), in ascending start order. */
int rc_itree_visit(const struct rc_itree *tree, uintptr_t start, uintptr_t end,
		   rc_itree_visit_fn fn, void *arg);

/*
 * The node with the greatest start <= addr, or NULL: when ranges rarely
 * overlap it is the only one that can cover addr, so the hit path tries
 * it before a full overlap walk.
 */
static inline struct rc_itree_node *rc_itree_floor(const struct rc_itree *tree,
						   uintptr_t addr)
{
	struct rc_itree_node *n = tree->root, *best = NULL;

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

/* Check the AVL and max_end invariants; returns the node count or -1. */
long rc_itree_check(const struct rc_itree *tree);

#endif /* RC_ITREE_H */
