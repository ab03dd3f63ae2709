/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * plan.h - what a miss registers (plan.c), for the miss path (miss.c):
 * the entries its range covers, the union and its geometric growth, and
 * the attempts from the widest to the exact request.  Private to
 * libregcache.
 */
#ifndef RC_PLAN_H
#define RC_PLAN_H

#include "regcache_int.h"

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

/* write lock held: the entries [m->rstart, m->rend) overlaps or touches,
 * pinned, and their union in m (false: none to merge with) */
bool rc_merge_plan(struct regcache *cache, struct rc_merge *m);
void rc_merge_reset(struct rc_merge *m);
/* write lock held: the union's geometric extension, m->gstart/m->gend */
void rc_grow_plan(struct regcache *cache, struct rc_merge *m);
/* the backend refused the grown range: halve the extension (false:
 * none left) */
bool rc_grow_shrink(struct rc_merge *m);
/* point e at what attempt level registers */
void rc_try_apply(struct regcache_entry *e, const struct rc_merge *m,
		  enum rc_try level);
/* write lock held: drop the covered entries' references */
void rc_merge_unref(struct rc_merge *m, struct rc_list *release);
/* write lock held: the next, narrower attempt */
void rc_try_next(struct rc_merge *m, enum rc_try *level,
		 struct rc_list *release);

#endif /* RC_PLAN_H */
