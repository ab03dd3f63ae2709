// SPDX-License-Identifier: GPL-2.0-only
/*
 * regcache_user.c - per-user limits: contexts, watches, kernel memory,
 * declared pinned bytes.
 *
 * /dev/regcache is open to everyone, and each context and each watch
 * holds unswappable kernel memory (the status area, the ring, an interval
 * notifier per watch).  The module counts per user and refuses past its
 * parameters: open() beyond max_user_contexts gets -EMFILE (as inotify
 * does with max_user_instances), WATCH beyond max_user_watches -ENOSPC,
 * and any allocation that would take the user's charged bytes past
 * max_user_bytes -EDQUOT (as add_key(2) does past a user's key quota).
 * Every context is capped by its parameters too (max_watches,
 * ring_entries), so the worst case of one user is max_user_bytes
 * whatever the other limits say (regcache(4) LIMITS).
 *
 * Who the user is.  A kuid alone would not do: a user with a subordinate
 * uid range (/etc/subuid, newuidmap) runs processes under 65536 other
 * kuids in a user namespace of their own and would get 65536 budgets.
 * The kernel's answer, ucounts, charges a count to every level of the
 * user-namespace chain up to the namespace's creator, but its set of
 * counters is an enum a module cannot extend.  So the module charges the
 * one owner that every namespace below the initial one answers to: a
 * task in the initial user namespace is charged to its effective uid; a
 * task in any other namespace to the owner (creator) of the outermost
 * namespace above it, which is a kuid of the initial namespace.  However
 * many namespaces and mapped uids a user creates, they share that user's
 * budget.  The price: every namespace created by one user (root's
 * container runtimes included) shares that user's limits; the
 * administrator raises the parameters for such a user's load.
 *
 * A context keeps a reference to its user's entry for its whole life, so
 * a later setuid() of the process does not move its charges, and every
 * charge is given back to the same entry on UNWATCH, UNWATCH_ALL and
 * release() (which is also what runs when the process exits).  Entries
 * live in a module-private hash table keyed by that kuid; an entry is
 * freed when its last context is released.
 *
 * Locking: regcache_users_lock (a spinlock, innermost: nothing is taken
 * under it and nothing sleeps) guards the table and the context counts.
 * Watches, bytes and pinned bytes are atomics updated with
 * compare-and-swap loops, so WATCH never takes the global lock; the entry
 * cannot go away under them because the caller's context holds a
 * reference.
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
#include <linux/user_namespace.h>
#include "regcache_internal.h"

struct regcache_user {
	struct hlist_node node;
	kuid_t uid;		/* whom it is charged to: see regcache_user_key() */
	unsigned int contexts;	/* under regcache_users_lock */
	atomic_t watches;
	atomic64_t bytes;	/* kernel memory held for the user's contexts */
	atomic64_t pinned;	/* pinned_bytes declared by their watches, <= S64_MAX */
};

static DEFINE_HASHTABLE(regcache_users, 6);
static DEFINE_SPINLOCK(regcache_users_lock);

/*
 * The initial namespace's kuid the caller is charged to: its euid there,
 * or the owner of the outermost user namespace it lives under.  The
 * chain is stable: the caller's credentials pin its namespace, and every
 * namespace pins its parent.
 */
static kuid_t regcache_user_key(void)
{
	const struct user_namespace *ns = current_user_ns();

	if (ns == &init_user_ns)
		return current_euid();
	while (ns->parent != &init_user_ns)
		ns = ns->parent;
	return ns->owner;
}

static struct regcache_user *regcache_user_find(kuid_t uid)
{
	struct regcache_user *u;

	hash_for_each_possible(regcache_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/* open(): charge one context to the caller's user; ERR_PTR(-EMFILE) past the limit. */
struct regcache_user *regcache_user_get(void)
{
	kuid_t uid = regcache_user_key();
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
		/* Every charge is given back before its context goes. */
		WARN_ON_ONCE(atomic_read(&u->watches));
		WARN_ON_ONCE(atomic64_read(&u->bytes));
		WARN_ON_ONCE(atomic64_read(&u->pinned));
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

/* bytes more of kernel memory for this user, -EDQUOT past max_user_bytes. */
int regcache_user_charge_bytes(struct regcache_user *u, u64 bytes)
{
	u64 limit = READ_ONCE(regcache_max_user_bytes);
	s64 old = atomic64_read(&u->bytes);

	do {
		/* old <= limit <= S64_MAX and bytes is one allocation: no wrap */
		if ((u64)old + bytes > limit)
			return -EDQUOT;
	} while (!atomic64_try_cmpxchg(&u->bytes, &old, old + (s64)bytes));
	return 0;
}

void regcache_user_uncharge_bytes(struct regcache_user *u, u64 bytes)
{
	WARN_ON_ONCE(atomic64_sub_return((s64)bytes, &u->bytes) < 0);
}

/*
 * Declared pinned bytes: the counters must not wrap, whatever a caller
 * declares (WATCH takes pinned_bytes up to the range's length, unchecked
 * against any real pin).  No process can pin 2^63 bytes, so a user whose
 * declarations would pass S64_MAX is lying and gets -EOVERFLOW; every
 * per-context sum is below its user's, and the global figure in sysfs is
 * a sum over users that saturates (regcache_users_pinned_bytes).
 */
int regcache_user_charge_pinned(struct regcache_user *u, u64 bytes)
{
	s64 old = atomic64_read(&u->pinned);

	do {
		if (bytes > (u64)(S64_MAX - old))
			return -EOVERFLOW;
	} while (!atomic64_try_cmpxchg(&u->pinned, &old, old + (s64)bytes));
	return 0;
}

void regcache_user_uncharge_pinned(struct regcache_user *u, u64 bytes)
{
	WARN_ON_ONCE(atomic64_sub_return((s64)bytes, &u->pinned) < 0);
}

/* For fdinfo: the user as the reader's namespace names it, and the usage. */
void regcache_user_show(struct seq_file *m, struct regcache_user *u)
{
	seq_printf(m, "regcache-user:\t%u\n", from_kuid_munged(seq_user_ns(m), u->uid));
	seq_printf(m, "regcache-user-bytes:\t%lld\n", (long long)atomic64_read(&u->bytes));
	seq_printf(m, "regcache-user-max-bytes:\t%llu\n", READ_ONCE(regcache_max_user_bytes));
}

/* sysfs pinned_bytes: every user's declared pinned bytes, saturating at U64_MAX. */
u64 regcache_users_pinned_bytes(void)
{
	struct regcache_user *u;
	u64 sum = 0, v;
	int bkt;

	spin_lock(&regcache_users_lock);
	hash_for_each(regcache_users, bkt, u, node) {
		v = (u64)atomic64_read(&u->pinned);
		sum = sum + v < sum ? U64_MAX : sum + v;
	}
	spin_unlock(&regcache_users_lock);
	return sum;
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
