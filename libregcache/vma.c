// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * vma.c - the VMA under an address: PROCMAP_QUERY, else /proc/self/maps.
 *
 * PROCMAP_QUERY (Linux 6.11) answers "which VMA covers this address" with
 * one ioctl on an open /proc/self/maps, under the mm's read lock, without
 * formatting the whole table.  Debian 12's headers predate it, so the
 * structure is declared here when <linux/fs.h> lacks it: it is the uapi
 * layout, versioned by its leading size field, and a kernel without the
 * ioctl answers ENOTTY, after which the text scan is used for good.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/fs.h>

#include "vma.h"

#ifndef PROCMAP_QUERY
#define PROCMAP_QUERY_VMA_READABLE	0x01
#define PROCMAP_QUERY_VMA_WRITABLE	0x02
#define PROCMAP_QUERY_VMA_EXECUTABLE	0x04
#define PROCMAP_QUERY_VMA_SHARED	0x08

struct procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};

#define PROCMAP_QUERY	_IOWR('f', 17, struct procmap_query)	/* PROCFS_IOCTL_MAGIC */
#endif

/* 0: try PROCMAP_QUERY; -1: the kernel said ENOTTY, scan the text. */
static _Atomic int rc_procmap_ioctl;

/*
 * The /proc/self/maps that PROCMAP_QUERY asks, opened once: an open and a
 * close were two of a uffd miss's five system calls.  The ioctl carries
 * its whole query and leaves the file's offset alone, so threads share
 * the fd.  It names the mm of the process that opened it, so a child
 * must not use its copy: rc_vma_forget_parent() closes it, called where
 * libregcache sees a new process (its first regcache_create(), before
 * any cache of the child can ask).  An application that closed it
 * behind our back (EBADF), or whose fd number now names another file
 * (ENOTTY), gets a fresh one once before the answer counts.
 */
static _Atomic int rc_maps_fd = -1;

static int rc_maps_get(void)
{
	int fd = atomic_load_explicit(&rc_maps_fd, memory_order_acquire);
	int want = -1;

	if (fd >= 0)
		return fd;
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (atomic_compare_exchange_strong(&rc_maps_fd, &want, fd))
		return fd;
	close(fd);		/* another thread's is there */
	return want;
}

/* fd went bad: drop it (if it is still the shared one) for a new one */
static int rc_maps_renew(int fd)
{
	if (atomic_compare_exchange_strong(&rc_maps_fd, &fd, -1))
		close(fd);
	return rc_maps_get();
}

void rc_vma_forget_parent(void)
{
	int fd = atomic_exchange(&rc_maps_fd, -1);

	if (fd >= 0)
		close(fd);
}

static bool rc_name_special(const char *name)
{
	/* [heap] and [stack] are ordinary private anonymous memory */
	return name[0] == '[' && strncmp(name, "[heap]", 6) &&
	       strncmp(name, "[stack", 6) && strncmp(name, "[anon", 5);
}

static int rc_vma_ioctl(int fd, uintptr_t addr, struct rc_vma *vma)
{
	struct procmap_query q;
	char name[32];

	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_addr = addr;
	q.query_flags = 0;		/* the VMA covering addr, exactly */
	q.vma_name_addr = (uintptr_t)name;
	q.vma_name_size = sizeof(name);
	if (ioctl(fd, PROCMAP_QUERY, &q) < 0) {
		/* a name longer than the buffer: ask again without it */
		if (errno == ENAMETOOLONG) {
			q.vma_name_addr = 0;
			q.vma_name_size = 0;
			name[0] = 0;
			if (!ioctl(fd, PROCMAP_QUERY, &q))
				goto got;
		}
		return -errno;
	}
	if (!q.vma_name_size)
		name[0] = 0;
got:
	vma->start = q.vma_start;
	vma->end = q.vma_end;
	vma->flags = 0;
	if (q.vma_flags & PROCMAP_QUERY_VMA_READABLE)
		vma->flags |= RC_VMA_READ;
	if (q.vma_flags & PROCMAP_QUERY_VMA_WRITABLE)
		vma->flags |= RC_VMA_WRITE;
	if (q.vma_flags & PROCMAP_QUERY_VMA_EXECUTABLE)
		vma->flags |= RC_VMA_EXEC;
	if (q.vma_flags & PROCMAP_QUERY_VMA_SHARED)
		vma->flags |= RC_VMA_SHARED;
	if (q.inode)
		vma->flags |= RC_VMA_FILE;
	else if (name[0] && rc_name_special(name))
		vma->flags |= RC_VMA_SPECIAL;
	vma->inode = q.inode;
	vma->dev_major = q.dev_major;
	vma->dev_minor = q.dev_minor;
	vma->pgoff = q.vma_offset;
	return 0;
}

int rc_vma_parse_line(const char *line, struct rc_vma *vma)
{
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	char perms[8];
	int n = 0;
	const char *name;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end,
		   perms, &off, &maj, &min, &ino, &n) < 7 || !n ||
	    strlen(perms) != 4 || start >= end)
		return -EINVAL;
	name = line + n;
	vma->start = start;
	vma->end = end;
	vma->flags = 0;
	if (perms[0] == 'r')
		vma->flags |= RC_VMA_READ;
	if (perms[1] == 'w')
		vma->flags |= RC_VMA_WRITE;
	if (perms[2] == 'x')
		vma->flags |= RC_VMA_EXEC;
	if (perms[3] == 's')
		vma->flags |= RC_VMA_SHARED;
	if (ino)
		vma->flags |= RC_VMA_FILE;
	else if (rc_name_special(name))
		vma->flags |= RC_VMA_SPECIAL;
	vma->inode = ino;
	vma->dev_major = maj;
	vma->dev_minor = min;
	vma->pgoff = off;
	return 0;
}

static int rc_vma_scan(int fd, uintptr_t addr, struct rc_vma *vma)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	int ret = -ENOENT;

	f = fdopen(fd, "r");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		struct rc_vma v;

		if (rc_vma_parse_line(line, &v))
			continue;
		if (v.start > addr)
			break;		/* sorted: addr lies in a hole */
		if (addr < v.end) {
			*vma = v;
			ret = 0;
			break;
		}
	}
	free(line);
	fclose(f);		/* closes fd */
	return ret;
}

int rc_vma_query_ioctl(uintptr_t addr, struct rc_vma *vma)
{
	int fd, ret;

	if (atomic_load_explicit(&rc_procmap_ioctl, memory_order_relaxed) < 0)
		return -ENOTTY;
	fd = rc_maps_get();
	if (fd < 0)
		return fd;
	ret = rc_vma_ioctl(fd, addr, vma);
	if (ret == -EBADF || ret == -ENOTTY) {
		fd = rc_maps_renew(fd);
		if (fd < 0)
			return fd;
		ret = rc_vma_ioctl(fd, addr, vma);
	}
	if (ret == -ENOTTY)	/* a kernel without PROCMAP_QUERY */
		atomic_store_explicit(&rc_procmap_ioctl, -1,
				      memory_order_relaxed);
	return ret;
}

int rc_vma_query_how(uintptr_t addr, struct rc_vma *vma, bool text)
{
	int fd, ret;

	if (!text) {
		ret = rc_vma_query_ioctl(addr, vma);
		if (ret != -ENOTTY)
			return ret;	/* 0, -ENOENT: nothing there, no /proc */
		/* a kernel without PROCMAP_QUERY: the text from now on */
	}
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return rc_vma_scan(fd, addr, vma);
}

int rc_vma_query(uintptr_t addr, struct rc_vma *vma)
{
	return rc_vma_query_how(addr, vma, false);
}

int rc_vma_populate(uintptr_t s, uintptr_t t, bool write)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	struct rc_vma v;
	uintptr_t a;
	int ret;

	while (s < t) {
		uintptr_t e;
		bool w;

		ret = rc_vma_query(s, &v);
		if (ret)
			return ret == -ENOENT ? -EFAULT : ret;
		e = v.end < t ? v.end : t;
		w = write && (v.flags & RC_VMA_WRITE);
		if (madvise((void *)s, e - s, w ? MADV_POPULATE_WRITE :
						  MADV_POPULATE_READ)) {
			if (errno != EINVAL || !(v.flags & RC_VMA_READ))
				return errno == ENOMEM ? -EFAULT : -errno;
			/*
			 * Before Linux 5.14: a read maps the zero page, and
			 * a pin's write fault then copies it without a
			 * userfault.  A read never changes the contents.
			 */
			for (a = s; a < e; a += psz)
				(void)*(volatile const char *)a;
		}
		s = e;
	}
	return 0;
}
