/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * vma.h - what the kernel says about the mapping under an address.
 *
 * The cache asks this on its slow paths only (a miss that may grow a
 * registration, a uffd monitor deciding whether it can see a range
 * change): PROCMAP_QUERY on /proc/self/maps where the kernel has it
 * (Linux >= 6.11), else a scan of /proc/self/maps.
 */
#ifndef RC_VMA_H
#define RC_VMA_H

#include <stdbool.h>
#include <stdint.h>

/* struct rc_vma.flags */
#define RC_VMA_READ	(1U << 0)
#define RC_VMA_WRITE	(1U << 1)
#define RC_VMA_EXEC	(1U << 2)
#define RC_VMA_SHARED	(1U << 3)	/* MAP_SHARED (incl. shared anonymous) */
#define RC_VMA_FILE	(1U << 4)	/* backed by a file (memfd, tmpfs, ...) */
#define RC_VMA_SPECIAL	(1U << 5)	/* [vdso], [vvar], [vsyscall], ... */

struct rc_vma {
	uintptr_t start, end;		/* [start, end), page aligned */
	uint32_t flags;			/* RC_VMA_* */
	uint64_t inode;			/* 0 for anonymous memory */
	uint32_t dev_major, dev_minor;
	uint64_t pgoff;			/* file offset of start, in bytes */
};

/*
 * The VMA containing addr.  0 and *vma filled; -ENOENT when addr is not
 * mapped; another -errno when the kernel could not be asked (no /proc).
 * One ioctl where the kernel has PROCMAP_QUERY, else a read of
 * /proc/self/maps up to addr: never call it on a hit path.
 */
int rc_vma_query(uintptr_t addr, struct rc_vma *vma);

/* A new process (a child's first regcache_create()): the parent's
 * /proc/self/maps fd names the parent's mm; close it. */
void rc_vma_forget_parent(void);

/*
 * The same through PROCMAP_QUERY only: -ENOTTY where the kernel lacks it
 * (before Linux 6.11), so that a caller with a cheaper way than the text
 * scan can take it.
 */
int rc_vma_query_ioctl(uintptr_t addr, struct rc_vma *vma);

/* Private anonymous memory ([heap], [stack] and plain anonymous mmaps). */
static inline bool rc_vma_private_anon(const struct rc_vma *vma)
{
	return !(vma->flags & (RC_VMA_SHARED | RC_VMA_FILE | RC_VMA_SPECIAL));
}

/* The same, through PROCMAP_QUERY when text is false and the kernel has
 * it, else through the text of /proc/self/maps (for the unit tests). */
int rc_vma_query_how(uintptr_t addr, struct rc_vma *vma, bool text);

/*
 * Fault [s, t) in through madvise(MADV_POPULATE_READ, or _WRITE where
 * write and the mapping is writable; before Linux 5.14 a read of each
 * page), as a pin would, but the way a userfaultfd handler can serve:
 * a long-term pin on Linux 6.1 fails a userfault with EFAULT, madvise()
 * waits for the handler.  0, or the first -errno (a hole, a mapping that
 * cannot be read).  Nothing changes contents (a read, or a write fault
 * that maps what the kernel would).
 */
int rc_vma_populate(uintptr_t s, uintptr_t t, bool write);

/* Parse one /proc/PID/maps line into *vma (exposed for the unit tests). */
int rc_vma_parse_line(const char *line, struct rc_vma *vma);

#endif /* RC_VMA_H */
