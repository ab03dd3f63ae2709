// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * probe.c - reading application memory that may not be there.
 *
 * The library reads application buffers in userspace in a few places: a
 * notification's message is copied into a send slot, a registration that
 * failed on never-touched memory is retried after reading each page once
 * (rx_cache_get()), and the provider copies inline WRITE data.  A pointer
 * to an unmapped or PROT_NONE range must give -EFAULT there, not SIGSEGV:
 * a library cannot install a signal handler behind its caller's back, so
 * it asks the kernel instead.  None of this is on the fast path: the
 * copy is one system call per notification message, and the mapping
 * check runs only after a registration has already failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include "internal.h"

/*
 * Whether every byte of [addr, addr + len) lies in mappings that allow
 * reading (and writing, if write), from /proc/self/maps, without touching
 * the range.  Without /proc it cannot tell and says yes (the caller then
 * behaves as it did before the check existed).  Another thread may change
 * the mappings right after: the answer is for the caller's own buffers.
 */
bool rx_range_accessible(const void *addr, size_t len, bool write)
{
	uintptr_t want = (uintptr_t)addr, end = want + len;
	char line[512];
	FILE *f;
	bool ok = false;

	if (!len)
		return true;
	if (end < want)
		return false;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return true;
	/* mappings are listed in address order: walk until covered */
	while (fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;
		char perms[8];

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &lo, &hi,
			   perms) != 3)
			continue;
		if (hi <= want)
			continue;
		if (lo > want || perms[0] != 'r' || (write && perms[1] != 'w'))
			break;		/* a hole or a mapping we may not use */
		want = hi;
		if (want >= end) {
			ok = true;
			break;
		}
	}
	fclose(f);
	return ok;
}

/*
 * memcpy() from application memory that may be bad: 0, or -EFAULT
 * without touching a range that is not mapped readable.
 * process_vm_readv() on ourselves copies through the kernel and fails
 * cleanly; where it cannot (seccomp, or a userfaultfd-watched page never
 * touched, which a kernel-side copy may not fault in), the mappings
 * decide whether a plain copy is safe.
 */
int rx_copy_from_user(void *dst, const void *src, size_t len)
{
	struct iovec local = { .iov_base = dst, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)src, .iov_len = len };
	ssize_t n;

	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (!rx_range_accessible(src, len, false))
		return -EFAULT;
	memcpy(dst, src, len);
	return 0;
}
