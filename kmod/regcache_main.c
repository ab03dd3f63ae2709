// SPDX-License-Identifier: GPL-2.0-only
/*
 * regcache_main.c - module entry: parameters, the /dev/regcache misc
 * device and its sysfs attributes.
 *
 * Parameters are writable at runtime; each takes effect where that is
 * safe: max_watches, ring_entries and strict for contexts opened
 * afterwards and at the next CONFIGURE (the status area and the ring of a
 * live context never change size under a mapping; max_watches and
 * ring_entries are also the caps of CONFIGURE; strict is the default of
 * its per-context choice), max_pinned_bytes and max_user_watches at the
 * next WATCH, max_user_contexts at the next open(), max_user_bytes at the
 * next allocation.  Lowering a limit takes nothing away that is already
 * held.
 *
 * /sys/class/misc/regcache/ holds the global counters, one value per
 * file; all but abi_version are readable by root only, since they count
 * every user's activity.  The per-context view is each fd's
 * /proc/PID/fdinfo/FD (regcache_ctx.c), readable only by those who may
 * inspect the holder.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sizes.h>
#include "regcache_internal.h"

unsigned int regcache_max_watches = 65536;
unsigned int regcache_ring_entries = 1024;
unsigned long long regcache_max_pinned_bytes;
bool regcache_strict;
unsigned int regcache_max_user_contexts = 128;
unsigned int regcache_max_user_watches = 1048576;
unsigned long long regcache_max_user_bytes;	/* 0 until regcache_init() */
struct regcache_global_stats regcache_stats;

static int regcache_param_set_bounded(const char *val, const struct kernel_param *kp,
				      unsigned int limit)
{
	unsigned int v;
	int ret;

	ret = kstrtouint(val, 0, &v);
	if (ret)
		return ret;
	if (!v || v > limit)
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	return 0;
}

static int regcache_param_set_watches(const char *val, const struct kernel_param *kp)
{
	return regcache_param_set_bounded(val, kp, REGCACHE_WATCHES_LIMIT);
}

static int regcache_param_set_ring(const char *val, const struct kernel_param *kp)
{
	return regcache_param_set_bounded(val, kp, REGCACHE_RING_LIMIT);
}

static int regcache_param_set_user_contexts(const char *val, const struct kernel_param *kp)
{
	return regcache_param_set_bounded(val, kp, REGCACHE_USER_CONTEXTS_LIMIT);
}

static int regcache_param_set_user_watches(const char *val, const struct kernel_param *kp)
{
	return regcache_param_set_bounded(val, kp, REGCACHE_USER_WATCHES_LIMIT);
}

static const struct kernel_param_ops regcache_user_contexts_ops = {
	.set = regcache_param_set_user_contexts,
	.get = param_get_uint,
};

static const struct kernel_param_ops regcache_user_watches_ops = {
	.set = regcache_param_set_user_watches,
	.get = param_get_uint,
};

static const struct kernel_param_ops regcache_watches_ops = {
	.set = regcache_param_set_watches,
	.get = param_get_uint,
};

static const struct kernel_param_ops regcache_ring_ops = {
	.set = regcache_param_set_ring,
	.get = param_get_uint,
};

/* max_user_bytes: any byte count but 0, which would refuse every open(). */
static int regcache_param_set_user_bytes(const char *val, const struct kernel_param *kp)
{
	unsigned long long v;
	int ret;

	ret = kstrtoull(val, 0, &v);
	if (ret)
		return ret;
	if (!v)
		return -EINVAL;
	WRITE_ONCE(regcache_max_user_bytes, v);
	return 0;
}

static const struct kernel_param_ops regcache_user_bytes_ops = {
	.set = regcache_param_set_user_bytes,
	.get = param_get_ullong,
};

module_param_cb(max_watches, &regcache_watches_ops, &regcache_max_watches, 0644);
MODULE_PARM_DESC(max_watches, "Default and cap of CONFIGURE's watches (status slots) per context, 1..1048576 (default 65536)");
module_param_cb(ring_entries, &regcache_ring_ops, &regcache_ring_entries, 0644);
MODULE_PARM_DESC(ring_entries, "Default and cap of CONFIGURE's event ring capacity per context, 1..1048576 (default 1024)");
module_param_named(max_pinned_bytes, regcache_max_pinned_bytes, ullong, 0644);
MODULE_PARM_DESC(max_pinned_bytes, "Cap on pinned bytes per context, 0 = none (default 0)");
module_param_cb(max_user_contexts, &regcache_user_contexts_ops, &regcache_max_user_contexts, 0644);
MODULE_PARM_DESC(max_user_contexts, "Open contexts per user (euid), 1..1048576; open() beyond it fails with EMFILE (default 128)");
module_param_cb(max_user_watches, &regcache_user_watches_ops, &regcache_max_user_watches, 0644);
MODULE_PARM_DESC(max_user_watches, "Watches per user over all their contexts, 1..1073741824; WATCH beyond it fails with ENOSPC (default 1048576)");
module_param_cb(max_user_bytes, &regcache_user_bytes_ops, &regcache_max_user_bytes, 0644);
MODULE_PARM_DESC(max_user_bytes, "Kernel memory per user over all their contexts (status areas, rings, watches), bytes; an allocation beyond it fails with EDQUOT (default 1/32 of RAM)");
module_param_named(strict, regcache_strict, bool, 0644);
MODULE_PARM_DESC(strict, "Default of CONFIGURE's strict choice for new contexts: invalidate on every notifier event, including mprotect and fork write-protect (default 0)");

/* Activity counters: root only (0400), they tell of every user's contexts. */
#define REGCACHE_STAT_ATTR(name, expr)						\
static ssize_t name##_show(struct device *dev, struct device_attribute *attr,	\
			   char *buf)						\
{										\
	return sysfs_emit(buf, "%lld\n", (long long)(expr));			\
}										\
static DEVICE_ATTR_ADMIN_RO(name)

REGCACHE_STAT_ATTR(nr_contexts, atomic_read(&regcache_stats.contexts));
REGCACHE_STAT_ATTR(watches, atomic64_read(&regcache_stats.watches));
REGCACHE_STAT_ATTR(events_total, atomic64_read(&regcache_stats.events_total));
REGCACHE_STAT_ATTR(overflows, atomic64_read(&regcache_stats.overflows));
REGCACHE_STAT_ATTR(foreign_mm, atomic64_read(&regcache_stats.foreign_mm));

/* A sum over users that saturates at U64_MAX rather than wrap (regcache_user.c). */
static ssize_t pinned_bytes_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", regcache_users_pinned_bytes());
}
static DEVICE_ATTR_ADMIN_RO(pinned_bytes);

static ssize_t abi_version_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", REGCACHE_ABI_VERSION);
}
static DEVICE_ATTR_RO(abi_version);

static struct attribute *regcache_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_nr_contexts.attr,
	&dev_attr_watches.attr,
	&dev_attr_pinned_bytes.attr,
	&dev_attr_events_total.attr,
	&dev_attr_overflows.attr,
	&dev_attr_foreign_mm.attr,
	NULL,
};

static const struct attribute_group regcache_attr_group = {
	.attrs = regcache_attrs,
};

const struct attribute_group *regcache_attr_groups[] = {
	&regcache_attr_group,
	NULL,
};

static struct miscdevice regcache_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= REGCACHE_DEVICE_NAME,
	.fops	= &regcache_fops,
	.groups	= regcache_attr_groups,
	.mode	= 0666,
};

/* The uapi header is plain C89/C++ and cannot assert its own sizes. */
static void __init regcache_check_abi(void)
{
	BUILD_BUG_ON(sizeof(struct regcache_status) != 64);
	BUILD_BUG_ON(sizeof(struct regcache_info) != 72);
	BUILD_BUG_ON(sizeof(struct regcache_config) != 32);
	BUILD_BUG_ON(sizeof(struct regcache_watch) != 64);
	BUILD_BUG_ON(sizeof(struct regcache_watch_batch) != 40);
	BUILD_BUG_ON(sizeof(struct regcache_unwatch) != 32);
	BUILD_BUG_ON(sizeof(struct regcache_flush) != 32);
	BUILD_BUG_ON(sizeof(struct regcache_ctx_stats) != 88);
	BUILD_BUG_ON(sizeof(struct regcache_event) != 72);
	BUILD_BUG_ON(REGCACHE_STATUS_SLOT_OFFSET(0) % sizeof(__u64));
}

static int __init regcache_init(void)
{
	int ret;

	regcache_check_abi();
	/*
	 * A small share of RAM, as inotify and epoll size their per-user
	 * limits (1 % and 4 % of low memory): 1/32.  Unless set at load.
	 */
	if (!regcache_max_user_bytes)
		regcache_max_user_bytes = max_t(u64, (u64)totalram_pages() << PAGE_SHIFT >> 5,
						SZ_16M);

	ret = misc_register(&regcache_misc);
	if (ret) {
		pr_err("misc_register failed: %d\n", ret);
		return ret;
	}
	return 0;
}

static void __exit regcache_exit(void)
{
	/*
	 * No context can exist here: every open fd holds a module reference
	 * through regcache_fops.owner, and the interval notifiers die with
	 * their context in release().
	 */
	misc_deregister(&regcache_misc);
	regcache_users_exit();
}

module_init(regcache_init);
module_exit(regcache_exit);
MODULE_LICENSE("GPL");
MODULE_AUTHOR("The regcache authors");
MODULE_DESCRIPTION("Registration cache invalidation for RDMA");
