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
#include <stdlib.h>
#include <string.h>

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

/* ---------------------------------------------------------- block index */

static void fidx_drop(struct rc_itree *t)
{
	size_t i;

	while (t->spare) {
		struct rc_fblock *b = t->spare;

		t->spare = b->spare;
		free(b);
	}
	for (i = 0; i < t->nblk; i++)
		free(t->blk[i]);
	free(t->blk);
	free(t->first);
	t->blk = NULL;
	t->first = NULL;
	t->nblk = t->cap = 0;
}

/* Out of memory: the floor lookup walks the AVL tree from now on. */
static void fidx_break(struct rc_itree *t)
{
	fidx_drop(t);
	t->broken = 1;
}

static int fidx_room(struct rc_itree *t)
{
	size_t cap = t->cap ? 2 * t->cap : 16;
	uintptr_t *first;
	struct rc_fblock **blk;

	if (t->nblk < t->cap)
		return 0;
	first = realloc(t->first, cap * sizeof(*first));
	if (!first)
		return -1;
	t->first = first;
	blk = realloc(t->blk, cap * sizeof(*blk));
	if (!blk)
		return -1;
	t->blk = blk;
	t->cap = cap;
	return 0;
}

/* A block for an insertion: a spare one, else a new one. */
static struct rc_fblock *fblock_new(struct rc_itree *t)
{
	struct rc_fblock *b = t->spare;

	if (b)
		t->spare = b->spare;
	else
		b = malloc(sizeof(*b));
	if (b)
		b->n = 0;
	return b;
}

/* Removal's side: never free() here (see itree.h). */
static void fblock_retire(struct rc_itree *t, struct rc_fblock *b)
{
	b->spare = t->spare;
	t->spare = b;
}

/* The block that holds n or would: the last whose first pair is not after n. */
static size_t fidx_block(const struct rc_itree *t,
			 const struct rc_itree_node *n)
{
	size_t lo = 0, hi = t->nblk;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->first[mid] < n->start ||
		    (t->first[mid] == n->start &&
		     !before(n, t->blk[mid]->node[0])))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

/* The first position in b whose pair is not before n. */
static unsigned int fblock_pos(const struct rc_fblock *b,
			       const struct rc_itree_node *n)
{
	unsigned int lo = 0, hi = b->n;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (b->key[mid] < n->start ||
		    (b->key[mid] == n->start && before(b->node[mid], n)))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void fidx_insert(struct rc_itree *t, struct rc_itree_node *n)
{
	struct rc_fblock *b, *nb;
	unsigned int pos, half = RC_FBLOCK_KEYS / 2;
	size_t i = 0;

	if (t->broken)
		return;
	if (!t->nblk) {
		b = fblock_new(t);
		if (!b || fidx_room(t)) {
			free(b);
			goto broken;
		}
		t->blk[0] = b;
		t->nblk = 1;
	} else {
		i = fidx_block(t, n);
	}
	b = t->blk[i];
	if (b->n == RC_FBLOCK_KEYS) {
		/* split in halves; the second goes in after the first */
		nb = fblock_new(t);
		if (!nb || fidx_room(t)) {
			free(nb);
			goto broken;
		}
		nb->n = b->n - half;
		memcpy(nb->key, b->key + half, nb->n * sizeof(b->key[0]));
		memcpy(nb->node, b->node + half, nb->n * sizeof(b->node[0]));
		b->n = half;
		memmove(t->blk + i + 2, t->blk + i + 1,
			(t->nblk - i - 1) * sizeof(*t->blk));
		memmove(t->first + i + 2, t->first + i + 1,
			(t->nblk - i - 1) * sizeof(*t->first));
		t->blk[i + 1] = nb;
		t->first[i + 1] = nb->key[0];
		t->nblk++;
		if (!before(n, nb->node[0])) {
			i++;
			b = nb;
		}
	}
	pos = fblock_pos(b, n);
	memmove(b->key + pos + 1, b->key + pos,
		(b->n - pos) * sizeof(b->key[0]));
	memmove(b->node + pos + 1, b->node + pos,
		(b->n - pos) * sizeof(b->node[0]));
	b->key[pos] = n->start;
	b->node[pos] = n;
	b->n++;
	t->first[i] = b->key[0];
	return;
broken:
	fidx_break(t);
}

/* Fold block i + 1 into block i. */
static void fidx_merge(struct rc_itree *t, size_t i)
{
	struct rc_fblock *b = t->blk[i], *nb = t->blk[i + 1];

	memcpy(b->key + b->n, nb->key, nb->n * sizeof(b->key[0]));
	memcpy(b->node + b->n, nb->node, nb->n * sizeof(b->node[0]));
	b->n += nb->n;
	fblock_retire(t, nb);
	memmove(t->blk + i + 1, t->blk + i + 2,
		(t->nblk - i - 2) * sizeof(*t->blk));
	memmove(t->first + i + 1, t->first + i + 2,
		(t->nblk - i - 2) * sizeof(*t->first));
	t->nblk--;
}

static void fidx_remove(struct rc_itree *t, struct rc_itree_node *n)
{
	struct rc_fblock *b;
	unsigned int pos;
	size_t i;

	if (t->broken || !t->nblk)
		return;
	i = fidx_block(t, n);
	b = t->blk[i];
	pos = fblock_pos(b, n);
	if (pos >= b->n || b->node[pos] != n)
		return;		/* not indexed */
	memmove(b->key + pos, b->key + pos + 1,
		(b->n - pos - 1) * sizeof(b->key[0]));
	memmove(b->node + pos, b->node + pos + 1,
		(b->n - pos - 1) * sizeof(b->node[0]));
	b->n--;
	if (!b->n) {
		fblock_retire(t, b);
		memmove(t->blk + i, t->blk + i + 1,
			(t->nblk - i - 1) * sizeof(*t->blk));
		memmove(t->first + i, t->first + i + 1,
			(t->nblk - i - 1) * sizeof(*t->first));
		t->nblk--;
		return;
	}
	t->first[i] = b->key[0];
	/* keep blocks at least a quarter full on average: fold neighbours */
	if (i + 1 < t->nblk &&
	    b->n + t->blk[i + 1]->n <= RC_FBLOCK_KEYS / 2)
		fidx_merge(t, i);
	else if (i > 0 && b->n + t->blk[i - 1]->n <= RC_FBLOCK_KEYS / 2)
		fidx_merge(t, i - 1);
}

void rc_itree_destroy(struct rc_itree *tree)
{
	fidx_drop(tree);
	tree->broken = 0;
}

/* ------------------------------------------------------------ AVL tree */

void rc_itree_insert(struct rc_itree *tree, struct rc_itree_node *node)
{
	fidx_insert(tree, node);
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
	if (found) {
		tree->count--;
		fidx_remove(tree, node);
	}
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

struct fidx_cursor {
	const struct rc_itree *t;
	size_t blk;
	unsigned int pos;
	bool bad;
};

/* The AVL tree in order must be the block index in order. */
static int fidx_check_fn(struct rc_itree_node *n, void *arg)
{
	struct fidx_cursor *c = arg;
	const struct rc_fblock *b;

	if (c->blk >= c->t->nblk) {
		c->bad = true;
		return 1;
	}
	b = c->t->blk[c->blk];
	if (!b->n || c->t->first[c->blk] != b->key[0] ||
	    b->node[c->pos] != n || b->key[c->pos] != n->start) {
		c->bad = true;
		return 1;
	}
	if (++c->pos == b->n) {
		c->blk++;
		c->pos = 0;
	}
	return 0;
}

long rc_itree_check(const struct rc_itree *tree)
{
	struct fidx_cursor cur = { .t = tree };
	int h;
	long c = check(tree->root, &h);

	if (c != (long)tree->count)
		return -1;
	if (tree->broken)
		return c;
	rc_itree_visit_all(tree, fidx_check_fn, &cur);
	if (cur.bad || cur.blk != tree->nblk || cur.pos)
		return -1;
	return c;
}
