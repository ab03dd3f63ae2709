// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * itree.c - an augmented AVL tree of address ranges (see itree.h).
 *
 * AVL rather than red-black because the recursive insert and delete are
 * short and obviously correct, and the stricter balance (height at most
 * 1.44 log2 n) keeps the lookup of the hit path shallow.  The recursion
 * depth is the tree height: under 30 for any number of entries a process
 * can register.
 */
#include "config.h"

#include <stdbool.h>

#include "itree.h"

static int height(const struct rc_itree_node *n)
{
	return n ? n->height : 0;
}

static uintptr_t max_end(const struct rc_itree_node *n)
{
	return n ? n->max_end : 0;
}

static void update(struct rc_itree_node *n)
{
	int hl = height(n->left), hr = height(n->right);
	uintptr_t m = n->end;

	n->height = (hl > hr ? hl : hr) + 1;
	if (max_end(n->left) > m)
		m = max_end(n->left);
	if (max_end(n->right) > m)
		m = max_end(n->right);
	n->max_end = m;
}

static struct rc_itree_node *rotate_right(struct rc_itree_node *n)
{
	struct rc_itree_node *l = n->left;

	n->left = l->right;
	l->right = n;
	update(n);
	update(l);
	return l;
}

static struct rc_itree_node *rotate_left(struct rc_itree_node *n)
{
	struct rc_itree_node *r = n->right;

	n->right = r->left;
	r->left = n;
	update(n);
	update(r);
	return r;
}

static struct rc_itree_node *balance(struct rc_itree_node *n)
{
	int bf;

	update(n);
	bf = height(n->left) - height(n->right);
	if (bf > 1) {
		if (height(n->left->left) < height(n->left->right))
			n->left = rotate_left(n->left);
		return rotate_right(n);
	}
	if (bf < -1) {
		if (height(n->right->right) < height(n->right->left))
			n->right = rotate_right(n->right);
		return rotate_left(n);
	}
	return n;
}

/* Total order: by start, ties broken by node address (ranges may repeat). */
static bool before(const struct rc_itree_node *a, const struct rc_itree_node *b)
{
	if (a->start != b->start)
		return a->start < b->start;
	return (uintptr_t)a < (uintptr_t)b;
}

static struct rc_itree_node *insert(struct rc_itree_node *root,
				    struct rc_itree_node *n)
{
	if (!root)
		return n;
	if (before(n, root))
		root->left = insert(root->left, n);
	else
		root->right = insert(root->right, n);
	return balance(root);
}

void rc_itree_insert(struct rc_itree *tree, struct rc_itree_node *node)
{
	node->left = node->right = NULL;
	node->height = 1;
	node->max_end = node->end;
	tree->root = insert(tree->root, node);
	tree->count++;
}

/* Detach the leftmost node of a subtree into *minp. */
static struct rc_itree_node *remove_min(struct rc_itree_node *n,
					struct rc_itree_node **minp)
{
	if (!n->left) {
		*minp = n;
		return n->right;
	}
	n->left = remove_min(n->left, minp);
	return balance(n);
}

static struct rc_itree_node *remove(struct rc_itree_node *root,
				    struct rc_itree_node *n, bool *found)
{
	struct rc_itree_node *min;

	if (!root)
		return NULL;
	if (root == n) {
		*found = true;
		if (!root->right)
			return root->left;
		root->right = remove_min(root->right, &min);
		min->left = root->left;
		min->right = root->right;
		return balance(min);
	}
	if (before(n, root))
		root->left = remove(root->left, n, found);
	else
		root->right = remove(root->right, n, found);
	return balance(root);
}

void rc_itree_remove(struct rc_itree *tree, struct rc_itree_node *node)
{
	bool found = false;

	tree->root = remove(tree->root, node, &found);
	if (found)
		tree->count--;
	node->left = node->right = NULL;
}

static int visit(struct rc_itree_node *n, uintptr_t start, uintptr_t end,
		 rc_itree_visit_fn fn, void *arg)
{
	int ret;

	/* Nothing below ends after start: no overlap in this subtree. */
	while (n && n->max_end > start) {
		ret = visit(n->left, start, end, fn, arg);
		if (ret)
			return ret;
		/* Everything to the right starts at or after n->start. */
		if (n->start >= end)
			return 0;
		if (n->end > start) {
			ret = fn(n, arg);
			if (ret)
				return ret;
		}
		n = n->right;
	}
	return 0;
}

int rc_itree_visit(const struct rc_itree *tree, uintptr_t start, uintptr_t end,
		   rc_itree_visit_fn fn, void *arg)
{
	return visit(tree->root, start, end, fn, arg);
}

int rc_itree_visit_all(const struct rc_itree *tree, rc_itree_visit_fn fn,
		       void *arg)
{
	return visit(tree->root, 0, UINTPTR_MAX, fn, arg);
}

static long check(const struct rc_itree_node *n, int *h)
{
	int hl, hr;
	long cl, cr;
	uintptr_t m;

	if (!n) {
		*h = 0;
		return 0;
	}
	cl = check(n->left, &hl);
	cr = check(n->right, &hr);
	if (cl < 0 || cr < 0)
		return -1;
	if (hl - hr > 1 || hr - hl > 1 || n->height != (hl > hr ? hl : hr) + 1)
		return -1;
	if ((n->left && !before(n->left, n)) || (n->right && before(n->right, n)))
		return -1;
	m = n->end;
	if (max_end(n->left) > m)
		m = max_end(n->left);
	if (max_end(n->right) > m)
		m = max_end(n->right);
	if (m != n->max_end)
		return -1;
	*h = n->height;
	return cl + cr + 1;
}

long rc_itree_check(const struct rc_itree *tree)
{
	int h;
	long c = check(tree->root, &h);

	return c == (long)tree->count ? c : -1;
}
