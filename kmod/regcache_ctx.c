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

#include <linux/ctype.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#include <linux/proc_fs.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include "regcache_internal.h"

static atomic64_t regcache_next_id;

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

/* A status area not (yet) installed in a context. */
struct regcache_status_area {
	struct regcache_status *status;
	struct page **pages;
	unsigned int npages;
};

/*
 * The status area: zeroed pages charged to the caller's memory cgroup
 * (anyone may open /dev/regcache, so its up to 8 MiB per context must
 * count against the user, as io_uring's rings do; the caller charges
 * them to the user's byte budget too), mapped contiguously into the
 * kernel with vmap and into the process with vm_insert_pages.
 */
static int regcache_status_alloc(struct regcache_status_area *a, size_t size)
{
	unsigned int i, n = size >> PAGE_SHIFT;

	a->pages = kvcalloc(n, sizeof(*a->pages), GFP_KERNEL_ACCOUNT);
	if (!a->pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		a->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!a->pages[i])
			goto free_pages;
		cond_resched();	/* up to 2049 pages */
	}
	a->status = vmap(a->pages, n, VM_MAP, PAGE_KERNEL);
	if (!a->status)
		goto free_pages;
	a->npages = n;
	return 0;

free_pages:
	while (i--)
		__free_page(a->pages[i]);
	kvfree(a->pages);
	return -ENOMEM;
}

/* Pages still mapped by a process keep their own reference. */
static void regcache_status_free(struct regcache_status_area *a)
{
	unsigned int i;

	if (!a->status)
		return;
	vunmap(a->status);
	for (i = 0; i < a->npages; i++)
		__free_page(a->pages[i]);
	kvfree(a->pages);
}

/* What an area holds, as the user's budget is charged (regcache_kv_bytes). */
static u64 regcache_status_bytes(const struct regcache_status_area *a)
{
	return ((u64)a->npages << PAGE_SHIFT) +
	       regcache_kv_bytes(a->pages, a->npages * sizeof(*a->pages));
}

/*
 * Charge the context's user for bytes more of kernel memory, -EDQUOT past
 * max_user_bytes.  The caller holds ctx->mutex or has the context to
 * itself (open, release); fdinfo reads ctx->charged without a lock.
 */
int regcache_ctx_charge(struct regcache_ctx *ctx, u64 bytes)
{
	int ret = regcache_user_charge_bytes(ctx->user, bytes);

	if (!ret)
		WRITE_ONCE(ctx->charged, ctx->charged + bytes);
	return ret;
}

void regcache_ctx_uncharge(struct regcache_ctx *ctx, u64 bytes)
{
	regcache_user_uncharge_bytes(ctx->user, bytes);
	WRITE_ONCE(ctx->charged, ctx->charged - bytes);
}

/* The context's area as it is now. */
static void regcache_status_get(const struct regcache_ctx *ctx, struct regcache_status_area *a)
{
	a->status = ctx->status;
	a->pages = ctx->status_pages;
	a->npages = ctx->status_npages;
}

/*
 * Install a as the context's area, with max_watches slots.  Caller holds
 * ctx->lock, or has the context to itself (open).
 */
static void regcache_status_set(struct regcache_ctx *ctx, const struct regcache_status_area *a,
				u32 max_watches)
{
	ctx->status = a->status;
	ctx->slots = (u64 *)(a->status + 1);
	ctx->status_pages = a->pages;
	ctx->status_npages = a->npages;
	ctx->status_size = (size_t)a->npages << PAGE_SHIFT;
	ctx->max_watches = max_watches;
	ctx->status->abi_version = REGCACHE_ABI_VERSION;
	ctx->status->max_watches = max_watches;
	regcache_status_sync(ctx);
}

/*
 * Everything a context holds is charged to its user's byte budget before
 * the context is usable: the context itself, its ring and its status
 * area.  Past max_user_bytes, open() fails with -EDQUOT.
 */
static int regcache_open(struct inode *inode, struct file *file)
{
	struct regcache_status_area area;
	struct regcache_ctx *ctx;
	u32 watches;
	int ret;

	if (!current->mm)
		return -EINVAL;
	/* Records, not bytes: no file position, pread/lseek get -ESPIPE. */
	ret = stream_open(inode, file);
	if (ret)
		return ret;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return -ENOMEM;
	ctx->user = regcache_user_get();
	if (IS_ERR(ctx->user)) {
		ret = PTR_ERR(ctx->user);
		goto free_ctx;
	}
	mutex_init(&ctx->mutex);
	mutex_init(&ctx->read_mutex);
	spin_lock_init(&ctx->lock);
	init_waitqueue_head(&ctx->wait);
	xa_init_flags(&ctx->ranges, XA_FLAGS_ALLOC);
	ctx->strict = READ_ONCE(regcache_strict);

	ret = regcache_ctx_charge(ctx, kmalloc_size_roundup(sizeof(*ctx)));
	if (ret)
		goto put_user;
	ret = regcache_ring_alloc(&ctx->ring, READ_ONCE(regcache_ring_entries));
	if (ret)
		goto uncharge;
	ret = regcache_ctx_charge(ctx, regcache_ring_bytes(&ctx->ring));
	if (ret)
		goto free_ring;
	/*
	 * The status area exists from open() to release(), at the size of
	 * the max_watches parameter until CONFIGURE chooses another: mmap,
	 * which runs under mmap_lock held for writing, never allocates.
	 */
	watches = READ_ONCE(regcache_max_watches);
	ret = regcache_status_alloc(&area, regcache_status_size(watches));
	if (ret)
		goto free_ring;
	ret = regcache_ctx_charge(ctx, regcache_status_bytes(&area));
	if (ret)
		goto free_area;
	regcache_status_set(ctx, &area, watches);

	ctx->id = atomic64_inc_return(&regcache_next_id);
	ctx->pid = get_pid(task_tgid(current));
	ctx->tgid = task_tgid_nr(current);
	get_task_comm(ctx->comm, current);
	mmgrab(current->mm);
	ctx->mm = current->mm;
	file->private_data = ctx;

	atomic_inc(&regcache_stats.contexts);
	return 0;

free_area:
	regcache_status_free(&area);
free_ring:
	regcache_ring_free(&ctx->ring);
uncharge:
	regcache_ctx_uncharge(ctx, ctx->charged);
put_user:
	regcache_user_put(ctx->user);
free_ctx:
	kfree(ctx);
	return ret;
}

static int regcache_release(struct inode *inode, struct file *file)
{
	struct regcache_ctx *ctx = file->private_data;
	struct regcache_status_area a;

	mutex_lock(&ctx->mutex);
	regcache_unwatch_all(ctx);
	mutex_unlock(&ctx->mutex);
	xa_destroy(&ctx->ranges);

	atomic_dec(&regcache_stats.contexts);
	regcache_ring_free(&ctx->ring);
	/* The last reference: no mapping is left (a vma holds the file). */
	regcache_status_get(ctx, &a);
	regcache_status_free(&a);
	/* the watches gave theirs back: this is the context, ring and area */
	regcache_ctx_uncharge(ctx, ctx->charged);
	regcache_user_put(ctx->user);
	put_pid(ctx->pid);
	mmdrop(ctx->mm);
	kfree(ctx);
	return 0;
}

static int regcache_ioc_get_info(struct regcache_ctx *ctx, void __user *uarg)
{
	struct regcache_info info;

	if (copy_from_user(&info, uarg, sizeof(info)))
		return -EFAULT;
	/* Output fields are overwritten, so a filled struct may be reused. */
	if (info.flags || memchr_inv(info.reserved, 0, sizeof(info.reserved)))
		return -EINVAL;
	info.abi_version = REGCACHE_ABI_VERSION;
	/* ctx->lock: a CONFIGURE may be replacing the area */
	spin_lock(&ctx->lock);
	info.max_watches = ctx->max_watches;
	info.status_size = ctx->status_size;
	info.ring_entries = ctx->ring.entries;
	info.strict = ctx->strict;
	spin_unlock(&ctx->lock);
	info.max_pinned_bytes = READ_ONCE(regcache_max_pinned_bytes);
	info.event_size = sizeof(struct regcache_event);
	info.features = REGCACHE_FEATURES;
	if (copy_to_user(uarg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

/*
 * CONFIGURE.  ctx->mutex keeps WATCH (and so the freeze by a first WATCH)
 * out; mmap does not take it (it runs under mmap_lock, which WATCH takes
 * under ctx->mutex), so the freeze is checked again under ctx->lock, where
 * mmap sets it, right before anything is swapped.  A new status area is
 * allocated only when the page count changes: a mapping racing with a
 * CONFIGURE that keeps the size maps the same pages either way.
 */
static int regcache_ioc_configure(struct regcache_ctx *ctx, void __user *uarg)
{
	struct regcache_status_area area = { NULL }, cur;
	struct regcache_ring ring, old;
	struct regcache_config cfg;
	u64 new_bytes, old_bytes;
	u32 entries, watches;
	bool strict, resize;
	int ret;

	if (copy_from_user(&cfg, uarg, sizeof(cfg)))
		return -EFAULT;
	if (cfg.flags || memchr_inv(cfg.reserved, 0, sizeof(cfg.reserved)))
		return -EINVAL;
	/* The module parameters are both the defaults and the caps. */
	entries = READ_ONCE(regcache_ring_entries);
	if (cfg.ring_entries > entries)
		return -EINVAL;
	if (cfg.ring_entries)
		entries = cfg.ring_entries;
	watches = READ_ONCE(regcache_max_watches);
	if (cfg.max_watches > watches)
		return -EINVAL;
	if (cfg.max_watches)
		watches = cfg.max_watches;
	switch (cfg.strict) {
	case REGCACHE_STRICT_DEFAULT:
		strict = READ_ONCE(regcache_strict);
		break;
	case REGCACHE_STRICT_ON:
		strict = true;
		break;
	case REGCACHE_STRICT_OFF:
		strict = false;
		break;
	default:
		return -EINVAL;
	}

	if (mutex_lock_killable(&ctx->mutex))
		return -EINTR;
	if (READ_ONCE(ctx->frozen)) {
		ret = -EBUSY;
		goto unlock;
	}
	ret = regcache_ring_alloc(&ring, entries);
	if (ret)
		goto unlock;
	/* Not frozen: only this thread (ctx->mutex) changes the size. */
	resize = regcache_status_size(watches) != ctx->status_size;
	if (resize) {
		ret = regcache_status_alloc(&area, regcache_status_size(watches));
		if (ret)
			goto free_ring;
	}
	/*
	 * The budget is charged the difference: both rings (and areas) are
	 * held only until this call returns.
	 */
	regcache_status_get(ctx, &cur);
	new_bytes = regcache_ring_bytes(&ring) + (resize ? regcache_status_bytes(&area) : 0);
	old_bytes = regcache_ring_bytes(&ctx->ring) + (resize ? regcache_status_bytes(&cur) : 0);
	if (new_bytes > old_bytes) {
		ret = regcache_ctx_charge(ctx, new_bytes - old_bytes);
		if (ret)
			goto free_area;
	}
	spin_lock(&ctx->lock);
	if (ctx->frozen) {
		spin_unlock(&ctx->lock);
		if (new_bytes > old_bytes)
			regcache_ctx_uncharge(ctx, new_bytes - old_bytes);
		ret = -EBUSY;
		goto free_area;
	}
	old = ctx->ring;
	ctx->ring = ring;
	ctx->strict = strict;
	if (resize) {
		/* Not mapped, no watch lives: nothing refers to the old area. */
		regcache_status_set(ctx, &area, watches);
		area = cur;
	} else {
		ctx->max_watches = watches;
		ctx->status->max_watches = watches;
		regcache_status_sync(ctx);
	}
	spin_unlock(&ctx->lock);
	if (new_bytes < old_bytes)
		regcache_ctx_uncharge(ctx, old_bytes - new_bytes);
	ring = old;
free_area:
	regcache_status_free(&area);
free_ring:
	regcache_ring_free(&ring);
unlock:
	mutex_unlock(&ctx->mutex);
	return ret;
}

/*
 * ctx->mutex is taken killably by every ioctl: its holder may wait for
 * mmap_lock or for the mm's invalidations (WATCH, UNWATCH), and another
 * thread queued behind it must stay killable.
 */
static int regcache_ioc_watch(struct regcache_ctx *ctx, void __user *uarg)
{
	struct regcache_watch w;
	bool fresh;
	int ret;

	if (copy_from_user(&w, uarg, sizeof(w)))
		return -EFAULT;
	if (mutex_lock_killable(&ctx->mutex))
		return -EINTR;
	ret = regcache_watch(ctx, &w, &fresh);
	mutex_unlock(&ctx->mutex);
	if (ret)
		return ret;
	/*
	 * User memory is touched outside ctx->mutex: a fault here may wait on
	 * userfaultfd for as long as the handler likes, and must not hold up
	 * the context's other threads (nor the release of an exiting one).
	 */
	if (copy_to_user(uarg, &w, sizeof(w))) {
		/*
		 * The caller could never learn the slot: undo a new watch (an
		 * existing one it returned is the caller's already).
		 */
		if (fresh) {
			mutex_lock(&ctx->mutex);
			regcache_unwatch(ctx, w.slot, w.cookie, w.slot_word);
			mutex_unlock(&ctx->mutex);
		}
		return -EFAULT;
	}
	return 0;
}

/*
 * The array is copied in whole before ctx->mutex is taken and copied out
 * after it is dropped (see regcache_ioc_watch), at most
 * REGCACHE_BATCH_MAX * 64 bytes = 256 KiB, charged to the caller's memory
 * cgroup and held only during the call.
 */
static int regcache_ioc_watch_batch(struct regcache_ctx *ctx, void __user *uarg)
{
	struct regcache_watch_batch b;
	struct regcache_watch __user *uw;
	struct regcache_watch *w;
	unsigned long *fresh;
	bool is_new;
	int ret = 0;
	u32 i, j;

	if (copy_from_user(&b, uarg, sizeof(b)))
		return -EFAULT;
	if (b.flags || b.reserved0 || memchr_inv(b.reserved, 0, sizeof(b.reserved)))
		return -EINVAL;
	if (!b.count || b.count > REGCACHE_BATCH_MAX)
		return -EINVAL;
	uw = u64_to_user_ptr(b.watches);

	w = kvmalloc_array(b.count, sizeof(*w), GFP_KERNEL_ACCOUNT);
	/* which elements made a new watch: only those are undone */
	fresh = bitmap_zalloc(b.count, GFP_KERNEL_ACCOUNT);
	i = 0;
	if (!w || !fresh) {
		ret = -ENOMEM;
		goto out;
	}
	if (copy_from_user(w, uw, b.count * sizeof(*w))) {
		ret = -EFAULT;
		goto out;
	}

	if (mutex_lock_killable(&ctx->mutex)) {
		ret = -EINTR;
		goto out;
	}
	for (i = 0; i < b.count; i++) {
		ret = regcache_watch(ctx, &w[i], &is_new);
		if (ret)
			break;
		if (is_new)
			__set_bit(i, fresh);
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			i++;
			break;
		}
		cond_resched();
	}
	mutex_unlock(&ctx->mutex);

	if (i && copy_to_user(uw, w, i * sizeof(*w))) {
		/* The caller could never learn the slots: undo the new ones. */
		mutex_lock(&ctx->mutex);
		for (j = 0; j < i; j++) {
			if (test_bit(j, fresh))
				regcache_unwatch(ctx, w[j].slot, w[j].cookie, w[j].slot_word);
			cond_resched();
		}
		mutex_unlock(&ctx->mutex);
		ret = -EFAULT;
		i = 0;
	}
out:
	bitmap_free(fresh);
	kvfree(w);
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
	if (mutex_lock_killable(&ctx->mutex))
		return -EINTR;
	ret = regcache_unwatch(ctx, u.slot, u.cookie, u.slot_word);
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

static int regcache_ioc_flush(struct regcache_ctx *ctx, void __user *uarg)
{
	struct regcache_flush f;
	int ret;

	if (copy_from_user(&f, uarg, sizeof(f)))
		return -EFAULT;
	if (f.flags || f.reserved0 || memchr_inv(f.reserved, 0, sizeof(f.reserved)))
		return -EINVAL;
	/*
	 * read_mutex: a reader between peek and pop never loses its record.
	 * A reader holds it across copy_to_user(), which may wait on
	 * userfaultfd indefinitely: wait for it interruptibly.
	 */
	if (mutex_lock_interruptible(&ctx->read_mutex))
		return -ERESTARTSYS;
	ret = regcache_ctx_flush_events(ctx, f.events_seen);
	mutex_unlock(&ctx->read_mutex);
	return ret;
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
		if (mutex_lock_killable(&ctx->mutex))
			return -EINTR;
		regcache_unwatch_all(ctx);
		mutex_unlock(&ctx->mutex);
		return 0;
	case REGCACHE_IOC_FLUSH:
		return regcache_ioc_flush(ctx, uarg);
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
		/* a buffer for the whole ring is up to 1048576 records */
		if (fatal_signal_pending(current))
			break;
		cond_resched();
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
 * A page of the status area that is not mapped - zapped by
 * MADV_DONTNEED, or never inserted because vm_insert_pages() stopped
 * short - is mapped again on the next access instead of raising SIGBUS.
 * The vma holds the file, so the context outlives it, and the area it
 * maps was frozen by regcache_mmap(): the page is read under ctx->lock
 * all the same, where every change of the area is made, and inserted
 * outside it (inserting may allocate a page table).
 */
static vm_fault_t regcache_status_fault(struct vm_fault *vmf)
{
	struct regcache_ctx *ctx = vmf->vma->vm_private_data;
	struct page *page = NULL;

	spin_lock(&ctx->lock);
	if (ctx->frozen && vmf->pgoff < ctx->status_npages)
		page = ctx->status_pages[vmf->pgoff];
	spin_unlock(&ctx->lock);
	if (!page)
		return VM_FAULT_SIGBUS;
	return vmf_insert_page(vmf->vma, vmf->address, page);
}

static const struct vm_operations_struct regcache_status_vm_ops = {
	.fault = regcache_status_fault,
};

/*
 * Map the status area read-only.  Runs under mmap_lock held for writing,
 * so it must not take ctx->mutex (WATCH takes mmap_lock under it), and it
 * allocates nothing: the area exists since open().
 *
 * ->mmap is still the file operation on 7.3 (->mmap_prepare exists beside
 * it but cannot insert pages); both target kernels call this.
 *
 * Shared is VM_MAYSHARE, not VM_SHARED: do_mmap() clears VM_SHARED (and
 * VM_MAYWRITE) for MAP_SHARED of a file opened O_RDONLY, which may map
 * the area as well as an O_RDWR one.  MAP_PRIVATE has neither.
 *
 * Flags, and why:
 *   VM_MAYWRITE, VM_MAYEXEC cleared: never writable, never executable,
 *	not even by a later mprotect().
 *   VM_DONTCOPY: a child gets no copy (its address space is not the one
 *	the slots describe).  VM_IO makes madvise(MADV_DOFORK) fail with
 *	-EINVAL, so the process cannot undo VM_DONTCOPY, and keeps GUP
 *	(pin_user_pages, process_vm_readv, an RDMA registration) away from
 *	pages that belong to the module.
 *   VM_DONTEXPAND: mremap() cannot grow it past the area.
 *   VM_DONTDUMP: no core dump of kernel state.
 *   VM_MIXEDMAP is set by vm_insert_pages() and lets the fault handler
 *	use vmf_insert_page().
 */
static int regcache_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct regcache_ctx *ctx = file->private_data;
	struct page **pages;
	unsigned long num;

	if (!regcache_ctx_is_owner(ctx, vma->vm_mm))
		return -EIO;
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	if (vma->vm_pgoff || !(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	/*
	 * Freeze before the pages go in: from here CONFIGURE cannot swap the
	 * area out from under the mapping (it checks under the same lock).
	 * The pages and their count are taken under it too, so this mapping
	 * and the fault handler see the one frozen area.  A wrong length
	 * freezes nothing.
	 */
	spin_lock(&ctx->lock);
	if (vma->vm_end - vma->vm_start != ctx->status_size) {
		spin_unlock(&ctx->lock);
		return -EINVAL;
	}
	ctx->frozen = true;
	pages = ctx->status_pages;
	num = ctx->status_npages;
	spin_unlock(&ctx->lock);

#ifdef HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	vm_flags_set(vma, VM_DONTCOPY | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags &= ~(VM_MAYWRITE | VM_MAYEXEC);
	vma->vm_flags |= VM_DONTCOPY | VM_IO | VM_DONTEXPAND | VM_DONTDUMP;
#endif
	vma->vm_ops = &regcache_status_vm_ops;
	vma->vm_private_data = ctx;
	/*
	 * Populate now so the first loads do not fault.  A real error
	 * (-ENOMEM for a page table) fails the mmap; pages left over without
	 * one are mapped by regcache_status_fault() on first access.
	 */
	return vm_insert_pages(vma, vma->vm_start, pages, &num);
}

/*
 * /proc/PID/fdinfo/FD: the context behind the fd, one "key:\tvalue" per
 * line.  Visible to whoever may open the holder's /proc/PID/fd (the
 * owner and root), which is what keeps one user's activity from another;
 * regcachectl(8) lists contexts from here.
 *
 * regcache-pid is the opener as the reader's /proc names it: the pid
 * namespace of the procfs instance being read, as for a pidfd's fdinfo;
 * 0 when the opener is not in that namespace or has exited.
 *
 * regcache-mm-pinned-bytes is the owner mm's pinned_vm, not what WATCH
 * callers declared: what the long-term pinners that charge pinned_vm
 * hold - RDMA registrations (ib_umem, and hfi1, qib, usnic, siw), io_uring
 * fixed buffers, vhost-vdpa and VDUSE, perf buffers past the mlock limit.
 * VFIO type1 and mlock() charge locked_vm instead and are not in it.
 */
static void regcache_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct regcache_ctx *ctx = file->private_data;
	char comm[TASK_COMM_LEN];
	u64 pinned, events, overflows, mm_pinned;
	pid_t pid = 0;
	u32 watches, max_watches, pending, entries;
	size_t status_bytes;
	bool strict;
	int i;

	spin_lock(&ctx->lock);
	watches = ctx->nr_watches;
	max_watches = ctx->max_watches;
	status_bytes = (size_t)ctx->status_npages << PAGE_SHIFT;
	pinned = ctx->pinned_bytes;
	events = ctx->events_total;
	pending = ctx->ring.count;
	overflows = ctx->overflows;
	entries = ctx->ring.entries;
	strict = ctx->strict;
	spin_unlock(&ctx->lock);
	/* mmgrab keeps the mm_struct, so the counter is readable after exit. */
	mm_pinned = (u64)atomic64_read(&ctx->mm->pinned_vm) << PAGE_SHIFT;
	if (pid_has_task(ctx->pid, PIDTYPE_TGID))
		pid = pid_nr_ns(ctx->pid, proc_pid_ns(file_inode(m->file)->i_sb));

	memcpy(comm, ctx->comm, sizeof(comm));
	comm[sizeof(comm) - 1] = '\0';
	for (i = 0; comm[i]; i++)
		if (!isprint(comm[i]) || isspace(comm[i]))
			comm[i] = '?';

	seq_printf(m, "regcache-id:\t%llu\n", ctx->id);
	seq_printf(m, "regcache-pid:\t%d\n", pid);
	seq_printf(m, "regcache-comm:\t%s\n", comm);
	seq_printf(m, "regcache-watches:\t%u\n", watches);
	seq_printf(m, "regcache-max-watches:\t%u\n", max_watches);
	seq_printf(m, "regcache-status-bytes:\t%zu\n", status_bytes);
	seq_printf(m, "regcache-declared-pinned-bytes:\t%llu\n", pinned);
	seq_printf(m, "regcache-mm-pinned-bytes:\t%llu\n", mm_pinned);
	seq_printf(m, "regcache-events:\t%llu\n", events);
	seq_printf(m, "regcache-pending:\t%u\n", pending);
	seq_printf(m, "regcache-overflows:\t%llu\n", overflows);
	seq_printf(m, "regcache-ring-entries:\t%u\n", entries);
	seq_printf(m, "regcache-strict:\t%d\n", strict);
	/* kernel memory: this context's, then its user's over all contexts */
	seq_printf(m, "regcache-bytes:\t%llu\n", READ_ONCE(ctx->charged));
	regcache_user_show(m, ctx->user);
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
	.show_fdinfo	= regcache_show_fdinfo,
};
