// SPDX-License-Identifier: GPL-2.0-only
/*
 * regcache_ctx.c - the file operations of /dev/regcache.
 *
 * Every open() makes a context bound to the opener's mm.  The mm is only
 * used as an identity (mmgrab keeps the struct, not the address space):
 * any ioctl, mmap or read issued from another mm - a forked child, or a
 * process that received the fd over SCM_RIGHTS - gets -EIO and touches
 * nothing, because the watches describe the owner's address space.
 *
 * Lifetime: the interval notifiers hold their own mm_count, and an mm that
 * exits first calls every callback with MMU_NOTIFY_RELEASE, so release()
 * can remove the notifiers whether or not the address space still exists.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include "regcache_internal.h"

LIST_HEAD(regcache_ctx_list);
DEFINE_MUTEX(regcache_ctx_list_lock);

static bool regcache_ctx_is_owner(struct regcache_ctx *ctx, const struct mm_struct *mm)
{
	if (likely(mm == ctx->mm))
		return true;
	atomic64_inc(&regcache_stats.foreign_mm);
	/* One line per context at most (a forked child may retry in a loop). */
	if (!READ_ONCE(ctx->warned_foreign)) {
		WRITE_ONCE(ctx->warned_foreign, true);
		pr_info_ratelimited("pid %d: fd of pid %d used from another address space: -EIO\n",
				    task_tgid_nr(current), ctx->tgid);
	}
	return false;
}

static size_t regcache_status_size(u32 max_watches)
{
	return PAGE_ALIGN(sizeof(struct regcache_status) + (size_t)max_watches * sizeof(__u64));
}

/*
 * The status area: zeroed pages charged to the opener's memory cgroup
 * (anyone may open /dev/regcache, so its half-megabyte per descriptor
 * must count against the opener, as io_uring's rings do), mapped
 * contiguously into the kernel with vmap and into the process with
 * vm_insert_pages.
 */
static int regcache_status_alloc(struct regcache_ctx *ctx)
{
	unsigned int i, n = ctx->status_size >> PAGE_SHIFT;

	ctx->status_pages = kvcalloc(n, sizeof(*ctx->status_pages), GFP_KERNEL_ACCOUNT);
	if (!ctx->status_pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		ctx->status_pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!ctx->status_pages[i])
			goto free_pages;
	}
	ctx->status = vmap(ctx->status_pages, n, VM_MAP, PAGE_KERNEL);
	if (!ctx->status)
		goto free_pages;
	ctx->status_npages = n;
	return 0;

free_pages:
	while (i--)
		__free_page(ctx->status_pages[i]);
	kvfree(ctx->status_pages);
	return -ENOMEM;
}

/* Pages still mapped by a process keep their own reference. */
static void regcache_status_free(struct regcache_ctx *ctx)
{
	unsigned int i;

	vunmap(ctx->status);
	for (i = 0; i < ctx->status_npages; i++)
		__free_page(ctx->status_pages[i]);
	kvfree(ctx->status_pages);
}

static int regcache_open(struct inode *inode, struct file *file)
{
	struct regcache_ctx *ctx;
	int ret;

	if (!current->mm)
		return -EINVAL;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return -ENOMEM;
	mutex_init(&ctx->mutex);
	mutex_init(&ctx->read_mutex);
	spin_lock_init(&ctx->lock);
	init_waitqueue_head(&ctx->wait);
	xa_init_flags(&ctx->ranges, XA_FLAGS_ALLOC);
	ctx->tgid = task_tgid_nr(current);
	get_task_comm(ctx->comm, current);

	ctx->max_watches = READ_ONCE(regcache_max_watches);
	ctx->status_size = regcache_status_size(ctx->max_watches);
	ret = regcache_status_alloc(ctx);
	if (ret)
		goto free_ctx;
	ret = regcache_ring_alloc(&ctx->ring, READ_ONCE(regcache_ring_entries));
	if (ret)
		goto free_status;
	ctx->status->abi_version = REGCACHE_ABI_VERSION;
	ctx->status->max_watches = ctx->max_watches;
	regcache_status_sync(ctx);

	mmgrab(current->mm);
	ctx->mm = current->mm;
	file->private_data = ctx;

	mutex_lock(&regcache_ctx_list_lock);
	list_add_tail(&ctx->node, &regcache_ctx_list);
	mutex_unlock(&regcache_ctx_list_lock);
	atomic_inc(&regcache_stats.contexts);
	return 0;

free_status:
	regcache_status_free(ctx);
free_ctx:
	kfree(ctx);
	return ret;
}

static int regcache_release(struct inode *inode, struct file *file)
{
	struct regcache_ctx *ctx = file->private_data;

	mutex_lock(&regcache_ctx_list_lock);
	list_del(&ctx->node);
	mutex_unlock(&regcache_ctx_list_lock);

	mutex_lock(&ctx->mutex);
	regcache_unwatch_all(ctx);
	mutex_unlock(&ctx->mutex);
	xa_destroy(&ctx->ranges);

	atomic_dec(&regcache_stats.contexts);
	regcache_ring_free(&ctx->ring);
	regcache_status_free(ctx);
	mmdrop(ctx->mm);
	kfree(ctx);
	return 0;
}

static int regcache_ioc_get_info(struct regcache_ctx *ctx, void __user *uarg)
{
	struct regcache_info info;

	if (copy_from_user(&info, uarg, sizeof(info)))
		return -EFAULT;
	if (info.flags || info.reserved0 || memchr_inv(info.reserved, 0, sizeof(info.reserved)))
		return -EINVAL;
	info.abi_version = REGCACHE_ABI_VERSION;
	info.max_watches = ctx->max_watches;
	spin_lock(&ctx->lock);
	info.ring_entries = ctx->ring.entries;
	spin_unlock(&ctx->lock);
	info.status_size = ctx->status_size;
	info.max_pinned_bytes = READ_ONCE(regcache_max_pinned_bytes);
	info.strict = READ_ONCE(regcache_strict);
	if (copy_to_user(uarg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static int regcache_ioc_configure(struct regcache_ctx *ctx, void __user *uarg)
{
	struct regcache_config cfg;
	struct regcache_ring ring, old;
	u32 entries;
	int ret;

	if (copy_from_user(&cfg, uarg, sizeof(cfg)))
		return -EFAULT;
	if (cfg.flags || memchr_inv(cfg.reserved, 0, sizeof(cfg.reserved)))
		return -EINVAL;
	entries = cfg.ring_entries ? cfg.ring_entries : READ_ONCE(regcache_ring_entries);
	if (entries > REGCACHE_RING_LIMIT)
		return -EINVAL;

	mutex_lock(&ctx->mutex);
	if (READ_ONCE(ctx->frozen)) {
		ret = -EBUSY;
		goto unlock;
	}
	ret = regcache_ring_alloc(&ring, entries);
	if (ret)
		goto unlock;
	/* mmap does not take ctx->mutex, so re-check under the spinlock. */
	spin_lock(&ctx->lock);
	if (ctx->frozen) {
		spin_unlock(&ctx->lock);
		regcache_ring_free(&ring);
		ret = -EBUSY;
		goto unlock;
	}
	old = ctx->ring;
	ctx->ring = ring;
	regcache_status_sync(ctx);
	spin_unlock(&ctx->lock);
	regcache_ring_free(&old);
unlock:
	mutex_unlock(&ctx->mutex);
	return ret;
}

static int regcache_ioc_watch(struct regcache_ctx *ctx, void __user *uarg)
{
	struct regcache_watch w;
	int ret;

	if (copy_from_user(&w, uarg, sizeof(w)))
		return -EFAULT;
	mutex_lock(&ctx->mutex);
	ret = regcache_watch(ctx, &w);
	if (!ret && copy_to_user(uarg, &w, sizeof(w))) {
		regcache_unwatch(ctx, w.slot, w.cookie);
		ret = -EFAULT;
	}
	mutex_unlock(&ctx->mutex);
	return ret;
}

static int regcache_ioc_watch_batch(struct regcache_ctx *ctx, void __user *uarg)
{
	struct regcache_watch_batch b;
	struct regcache_watch __user *uw;
	struct regcache_watch w;
	int ret = 0;
	u32 i;

	if (copy_from_user(&b, uarg, sizeof(b)))
		return -EFAULT;
	if (b.flags || b.reserved0 || memchr_inv(b.reserved, 0, sizeof(b.reserved)))
		return -EINVAL;
	if (!b.count || b.count > REGCACHE_BATCH_MAX)
		return -EINVAL;
	uw = u64_to_user_ptr(b.watches);

	mutex_lock(&ctx->mutex);
	for (i = 0; i < b.count; i++) {
		if (copy_from_user(&w, &uw[i], sizeof(w))) {
			ret = -EFAULT;
			break;
		}
		ret = regcache_watch(ctx, &w);
		if (ret)
			break;
		if (copy_to_user(&uw[i], &w, sizeof(w))) {
			/* The caller could never learn the slot: undo it. */
			regcache_unwatch(ctx, w.slot, w.cookie);
			ret = -EFAULT;
			break;
		}
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			i++;
			break;
		}
	}
	mutex_unlock(&ctx->mutex);

	b.done = i;
	if (copy_to_user(uarg, &b, sizeof(b)))
		return -EFAULT;
	return ret;
}

static int regcache_ioc_unwatch(struct regcache_ctx *ctx, void __user *uarg)
{
	struct regcache_unwatch u;
	int ret;

	if (copy_from_user(&u, uarg, sizeof(u)))
		return -EFAULT;
	if (u.flags || memchr_inv(u.reserved, 0, sizeof(u.reserved)))
		return -EINVAL;
	mutex_lock(&ctx->mutex);
	ret = regcache_unwatch(ctx, u.slot, u.cookie);
	mutex_unlock(&ctx->mutex);
	return ret;
}

static int regcache_ioc_get_stats(struct regcache_ctx *ctx, void __user *uarg)
{
	struct regcache_ctx_stats s;

	if (copy_from_user(&s, uarg, sizeof(s)))
		return -EFAULT;
	if (s.flags || memchr_inv(s.reserved, 0, sizeof(s.reserved)))
		return -EINVAL;
	spin_lock(&ctx->lock);
	s.watches = ctx->nr_watches;
	s.pinned_bytes = ctx->pinned_bytes;
	s.events_total = ctx->events_total;
	s.events_pending = ctx->ring.count;
	s.overflows = ctx->overflows;
	s.watch_calls = ctx->watch_calls;
	s.unwatch_calls = ctx->unwatch_calls;
	spin_unlock(&ctx->lock);
	if (copy_to_user(uarg, &s, sizeof(s)))
		return -EFAULT;
	return 0;
}

static long regcache_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct regcache_ctx *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;

	if (!regcache_ctx_is_owner(ctx, current->mm))
		return -EIO;

	switch (cmd) {
	case REGCACHE_IOC_GET_INFO:
		return regcache_ioc_get_info(ctx, uarg);
	case REGCACHE_IOC_CONFIGURE:
		return regcache_ioc_configure(ctx, uarg);
	case REGCACHE_IOC_WATCH:
		return regcache_ioc_watch(ctx, uarg);
	case REGCACHE_IOC_WATCH_BATCH:
		return regcache_ioc_watch_batch(ctx, uarg);
	case REGCACHE_IOC_UNWATCH:
		return regcache_ioc_unwatch(ctx, uarg);
	case REGCACHE_IOC_UNWATCH_ALL:
		mutex_lock(&ctx->mutex);
		regcache_unwatch_all(ctx);
		mutex_unlock(&ctx->mutex);
		return 0;
	case REGCACHE_IOC_FLUSH:
		mutex_lock(&ctx->read_mutex);
		regcache_ctx_flush_events(ctx);
		mutex_unlock(&ctx->read_mutex);
		return 0;
	case REGCACHE_IOC_GET_STATS:
		return regcache_ioc_get_stats(ctx, uarg);
	default:
		return -ENOTTY;
	}
}

static bool regcache_ctx_readable(struct regcache_ctx *ctx)
{
	bool readable;

	spin_lock(&ctx->lock);
	readable = ctx->ring.count || (ctx->status_flags & REGCACHE_STATUS_OVERFLOW);
	spin_unlock(&ctx->lock);
	return readable;
}

/*
 * Copy out whole records.  Readers are serialised by read_mutex, so a
 * record is peeked, copied and only then popped: a fault in copy_to_user
 * loses nothing.
 */
static ssize_t regcache_read_records(struct regcache_ctx *ctx, char __user *buf, size_t count)
{
	struct regcache_event ev;
	ssize_t done = 0;
	bool have;

	while (count - done >= sizeof(ev)) {
		spin_lock(&ctx->lock);
		have = regcache_ring_peek(&ctx->ring, &ev);
		spin_unlock(&ctx->lock);
		if (!have)
			break;
		if (copy_to_user(buf + done, &ev, sizeof(ev)))
			return done ? done : -EFAULT;
		spin_lock(&ctx->lock);
		regcache_ring_pop(&ctx->ring);
		regcache_status_sync(ctx);
		spin_unlock(&ctx->lock);
		done += sizeof(ev);
	}
	return done;
}

static ssize_t regcache_read(struct file *file, char __user *buf, size_t count, loff_t *ppos)
{
	struct regcache_ctx *ctx = file->private_data;
	bool overflow;
	ssize_t ret;

	if (!regcache_ctx_is_owner(ctx, current->mm))
		return -EIO;
	if (count < sizeof(struct regcache_event))
		return -EINVAL;

	for (;;) {
		if (mutex_lock_interruptible(&ctx->read_mutex))
			return -ERESTARTSYS;
		ret = regcache_read_records(ctx, buf, count);
		if (ret) {
			mutex_unlock(&ctx->read_mutex);
			return ret;
		}
		spin_lock(&ctx->lock);
		overflow = ctx->status_flags & REGCACHE_STATUS_OVERFLOW;
		spin_unlock(&ctx->lock);
		mutex_unlock(&ctx->read_mutex);
		/* Empty and events were lost: the caller must rescan, then FLUSH. */
		if (overflow)
			return -ENOSPC;
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		if (wait_event_interruptible(ctx->wait, regcache_ctx_readable(ctx)))
			return -ERESTARTSYS;
	}
}

static __poll_t regcache_poll(struct file *file, struct poll_table_struct *wait)
{
	struct regcache_ctx *ctx = file->private_data;

	if (current->mm != ctx->mm)
		return EPOLLERR;
	poll_wait(file, &ctx->wait, wait);
	return regcache_ctx_readable(ctx) ? EPOLLIN | EPOLLRDNORM : 0;
}

/*
 * Map the status area read-only.  Runs under mmap_lock, so it must not
 * take ctx->mutex (WATCH takes mmap_lock under it).
 */
static int regcache_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct regcache_ctx *ctx = file->private_data;
	unsigned long num = ctx->status_npages;
	int ret;

	if (!regcache_ctx_is_owner(ctx, vma->vm_mm))
		return -EIO;
	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	if (vma->vm_pgoff || vma->vm_end - vma->vm_start != ctx->status_size)
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	/* Never writable, never inherited by fork, never grown by mremap. */
#ifdef HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, VM_MAYWRITE);
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags &= ~VM_MAYWRITE;
	vma->vm_flags |= VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP;
#endif
	ret = vm_insert_pages(vma, vma->vm_start, ctx->status_pages, &num);
	if (ret)
		return ret;
	if (num)
		return -EFAULT;

	spin_lock(&ctx->lock);
	ctx->frozen = true;
	spin_unlock(&ctx->lock);
	return 0;
}

const struct file_operations regcache_fops = {
	.owner		= THIS_MODULE,
	.open		= regcache_open,
	.release	= regcache_release,
	.unlocked_ioctl	= regcache_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= regcache_mmap,
	.read		= regcache_read,
	.poll		= regcache_poll,
	.llseek		= noop_llseek,
};
