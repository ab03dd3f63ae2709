// SPDX-License-Identifier: GPL-2.0-only
/*
 * regcache_user.c - per-user limits on contexts and watches.
 *
 * /dev/regcache is open to everyone, and each context and each watch
 * holds unswappable kernel memory (the status area, the ring, an interval
 * notifier per watch).  As inotify does with max_user_instances and
 * max_user_watches, the module counts both per user and refuses past the
 * limits (module parameters max_user_contexts and max_user_watches):
 * open() gets -EMFILE, WATCH and WATCH_BATCH get -ENOSPC.
 *
 * The user is the effective uid at open().  A context keeps a reference
 * to its user's entry for its whole life, so a later setuid() of the
 * process does not move its charges, and every watch is given back to the
 * same entry on UNWATCH, UNWATCH_ALL and release() (which is also what
 * runs when the process exits).  An out-of-tree module cannot add a
 * ucounts type, so the entries live in a small module-private hash table
 * keyed by kuid; an entry is freed when its last context is released.
 *
 * Locking: regcache_users_lock (a spinlock, innermost: nothing is taken
 * under it and nothing sleeps) guards the table and the context counts.
 * The watch count of an entry is an atomic updated with a compare-and-swap
 * loop, so WATCH never takes the global lock; the entry cannot go away
 * under it because the caller's context holds a reference.
 *
 * No exemption for root or CAP_SYS_RESOURCE, as with inotify: the limits
 * are writable at runtime by root, who raises them instead.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/err.h>
#include <linux/hashtable.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uidgid.h>
#include "regcache_internal.h"

struct regcache_user {
	struct hlist_node node;
	kuid_t uid;
	unsigned int contexts;	/* under regcache_users_lock */
	atomic_t watches;
};

static DEFINE_HASHTABLE(regcache_users, 6);
static DEFINE_SPINLOCK(regcache_users_lock);

static struct regcache_user *regcache_user_find(kuid_t uid)
{
	struct regcache_user *u;

	hash_for_each_possible(regcache_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/* open(): charge one context to the caller's euid; ERR_PTR(-EMFILE) past the limit. */
struct regcache_user *regcache_user_get(void)
{
	kuid_t uid = current_euid();
	struct regcache_user *u, *fresh;
	int ret = 0;

	/* Not __GFP_ACCOUNT: the entry is shared by all the user's contexts. */
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return ERR_PTR(-ENOMEM);

	spin_lock(&regcache_users_lock);
	u = regcache_user_find(uid);
	if (!u) {
		u = fresh;
		fresh = NULL;
		u->uid = uid;
		hash_add(regcache_users, &u->node, __kuid_val(uid));
	}
	/* The limit is at least 1, so a fresh entry always gets its first context. */
	if (u->contexts >= READ_ONCE(regcache_max_user_contexts))
		ret = -EMFILE;
	else
		u->contexts++;
	spin_unlock(&regcache_users_lock);

	kfree(fresh);
	return ret ? ERR_PTR(ret) : u;
}

/* release(): give the context back; the last one frees the entry. */
void regcache_user_put(struct regcache_user *u)
{
	bool last;

	spin_lock(&regcache_users_lock);
	last = !--u->contexts;
	if (last)
		hash_del(&u->node);
	spin_unlock(&regcache_users_lock);
	if (last) {
		/* Every watch is released before its context. */
		WARN_ON_ONCE(atomic_read(&u->watches));
		kfree(u);
	}
}

/* WATCH: one more watch for this user, -ENOSPC past the limit. */
int regcache_user_charge_watch(struct regcache_user *u)
{
	int limit = (int)READ_ONCE(regcache_max_user_watches);
	int old = atomic_read(&u->watches);

	do {
		if (old >= limit)
			return -ENOSPC;
	} while (!atomic_try_cmpxchg(&u->watches, &old, old + 1));
	return 0;
}

void regcache_user_uncharge_watch(struct regcache_user *u)
{
	WARN_ON_ONCE(atomic_dec_return(&u->watches) < 0);
}

/*
 * Module exit.  Every open fd holds a module reference, so the table is
 * empty here; anything left is a bug, reported and freed, not leaked.
 */
void regcache_users_exit(void)
{
	struct hlist_node *tmp;
	struct regcache_user *u;
	int bkt;

	spin_lock(&regcache_users_lock);
	hash_for_each_safe(regcache_users, bkt, tmp, u, node) {
		WARN(1, "uid %u: %u contexts left at exit\n",
		     from_kuid(&init_user_ns, u->uid), u->contexts);
		hash_del(&u->node);
		kfree(u);
	}
	spin_unlock(&regcache_users_lock);
}
