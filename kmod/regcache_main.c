// SPDX-License-Identifier: GPL-2.0-only
/*
 * regcache_main.c - module entry: registers the /dev/regcache misc device.
 * (Minimal module for the foundation; the watch machinery comes with the
 * module issue.)
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/module.h>
#include "regcache_internal.h"

static int regcache_open(struct inode *inode, struct file *file)
{
	return 0;
}

static long regcache_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct regcache_info info = {
		.abi_version = REGCACHE_ABI_VERSION,
	};

	if (cmd != REGCACHE_IOC_GET_INFO)
		return -ENOTTY;
	if (copy_to_user((void __user *)arg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static const struct file_operations regcache_fops = {
	.owner		= THIS_MODULE,
	.open		= regcache_open,
	.unlocked_ioctl	= regcache_ioctl,
};

static struct miscdevice regcache_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= REGCACHE_DEVICE_NAME,
	.fops	= &regcache_fops,
	.mode	= 0666,
};

static int __init regcache_init(void)
{
	int ret = misc_register(&regcache_misc);

	if (ret)
		pr_err("misc_register failed: %d\n", ret);
	return ret;
}

static void __exit regcache_exit(void)
{
	misc_deregister(&regcache_misc);
}

module_init(regcache_init);
module_exit(regcache_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Registration cache invalidation for RDMA");
