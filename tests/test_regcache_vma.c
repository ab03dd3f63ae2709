// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_regcache_vma.c - the VMA query the cache's slow paths rely on.
 *
 * Growth of a registration must stop at the edge of the mapping the
 * caller named, and the uffd monitor must know shared and file mappings
 * apart from private anonymous memory.  Both ask rc_vma_query(); these
 * tests check its answers, through PROCMAP_QUERY (where the running
 * kernel has it) and through the text of /proc/self/maps, against
 * mappings whose layout the test made itself.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rc_test.h"
#include "../libregcache/vma.h"

static size_t psz;

/*
 * The kernel merges a VMA with a compatible neighbour it did not make
 * itself (another anonymous mapping placed right beside it), so an edge
 * that is not bounded by a different protection or a hole is checked
 * loosely: start 0 or end 0 means "somewhere beyond addr".
 */
static void check_both(uintptr_t addr, int want_ret, uintptr_t start,
		       uintptr_t end, uint32_t must, uint32_t mustnot)
{
	struct rc_vma v;
	int how, ret;

	for (how = 0; how < 2; how++) {
		memset(&v, 0xa5, sizeof(v));
		ret = rc_vma_query_how(addr, &v, how);
		CU_ASSERT_EQUAL(ret, want_ret);
		if (ret || want_ret)
			continue;
		if (start)
			CU_ASSERT_EQUAL(v.start, start);
		CU_ASSERT(v.start <= addr);
		if (end)
			CU_ASSERT_EQUAL(v.end, end);
		CU_ASSERT(v.end > addr);
		CU_ASSERT_EQUAL(v.flags & must, must);
		CU_ASSERT_EQUAL(v.flags & mustnot, 0);
	}
}

/* A buffer between a PROT_NONE guard and a read-only page: three VMAs. */
static void test_guard_edges(void)
{
	char *p = mmap(NULL, 8 * psz, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a = (uintptr_t)p;

	CU_ASSERT_FATAL(p != MAP_FAILED);
	CU_ASSERT_EQUAL_FATAL(mprotect(p, psz, PROT_NONE), 0);
	CU_ASSERT_EQUAL_FATAL(mprotect(p + 7 * psz, psz, PROT_READ), 0);
	check_both(a, 0, 0, a + psz, 0, RC_VMA_READ | RC_VMA_WRITE);
	check_both(a + 3 * psz + 5, 0, a + psz, a + 7 * psz,
		   RC_VMA_READ | RC_VMA_WRITE,
		   RC_VMA_SHARED | RC_VMA_FILE | RC_VMA_SPECIAL);
	check_both(a + 7 * psz, 0, a + 7 * psz, 0, RC_VMA_READ, RC_VMA_WRITE);
	munmap(p, 8 * psz);
}

/* An unmapped hole answers -ENOENT, with either method. */
static void test_hole(void)
{
	char *p = mmap(NULL, 3 * psz, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CU_ASSERT_FATAL(p != MAP_FAILED);
	CU_ASSERT_EQUAL_FATAL(munmap(p + psz, psz), 0);
	check_both((uintptr_t)p + psz, -ENOENT, 0, 0, 0, 0);
	check_both((uintptr_t)p + 2 * psz, 0, (uintptr_t)p + 2 * psz, 0,
		   RC_VMA_READ, 0);
	munmap(p, psz);
	munmap(p + 2 * psz, psz);
}

/* memfd MAP_SHARED and shared anonymous memory are not private anon. */
static void test_shared_kinds(void)
{
	struct rc_vma v;
	int fd = memfd_create("rc-vma-test", MFD_CLOEXEC);
	char *s, *z, *h;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(ftruncate(fd, 2 * psz), 0);
	s = mmap(NULL, 2 * psz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	z = mmap(NULL, psz, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	h = mmap(NULL, psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(s != MAP_FAILED && z != MAP_FAILED && h != MAP_FAILED);
	check_both((uintptr_t)s + psz, 0, (uintptr_t)s, (uintptr_t)s + 2 * psz,
		   RC_VMA_SHARED | RC_VMA_FILE, 0);
	check_both((uintptr_t)z, 0, (uintptr_t)z, (uintptr_t)z + psz,
		   RC_VMA_SHARED, 0);
	CU_ASSERT_EQUAL(rc_vma_query((uintptr_t)s, &v), 0);
	CU_ASSERT_FALSE(rc_vma_private_anon(&v));
	CU_ASSERT_EQUAL(rc_vma_query((uintptr_t)z, &v), 0);
	CU_ASSERT_FALSE(rc_vma_private_anon(&v));
	CU_ASSERT_EQUAL(rc_vma_query((uintptr_t)h, &v), 0);
	CU_ASSERT_TRUE(rc_vma_private_anon(&v));
	/* the stack and the heap are private anonymous memory */
	CU_ASSERT_EQUAL(rc_vma_query((uintptr_t)&v, &v), 0);
	CU_ASSERT_TRUE(rc_vma_private_anon(&v));
	munmap(s, 2 * psz);
	munmap(z, psz);
	munmap(h, psz);
	close(fd);
}

static void test_parse_line(void)
{
	struct rc_vma v;

	CU_ASSERT_EQUAL(rc_vma_parse_line(
		"7f0000001000-7f0000003000 rw-s 00002000 00:01 4242 "
		"/memfd:x (deleted)\n", &v), 0);
	CU_ASSERT_EQUAL(v.start, 0x7f0000001000ULL);
	CU_ASSERT_EQUAL(v.end, 0x7f0000003000ULL);
	CU_ASSERT_EQUAL(v.flags, RC_VMA_READ | RC_VMA_WRITE | RC_VMA_SHARED |
			RC_VMA_FILE);
	CU_ASSERT_EQUAL(v.pgoff, 0x2000);
	CU_ASSERT_EQUAL(v.inode, 4242);
	CU_ASSERT_EQUAL(rc_vma_parse_line(
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 "
		"[vsyscall]\n", &v), 0);
	CU_ASSERT_EQUAL(v.flags, RC_VMA_EXEC | RC_VMA_SPECIAL);
	CU_ASSERT_EQUAL(rc_vma_parse_line(
		"55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0 [heap]\n",
		&v), 0);
	CU_ASSERT_TRUE(rc_vma_private_anon(&v));
	CU_ASSERT_EQUAL(rc_vma_parse_line(
		"7f0000001000-7f0000003000 rw-p 00000000 00:00 0\n", &v), 0);
	CU_ASSERT_TRUE(rc_vma_private_anon(&v));
	/* malformed: truncated, reversed, bad permissions */
	CU_ASSERT_EQUAL(rc_vma_parse_line("7f0000001000-", &v), -EINVAL);
	CU_ASSERT_EQUAL(rc_vma_parse_line(
		"7f0000003000-7f0000001000 rw-p 00000000 00:00 0\n", &v),
		-EINVAL);
	CU_ASSERT_EQUAL(rc_vma_parse_line(
		"7f0000001000-7f0000003000 rw 00000000 00:00 0\n", &v),
		-EINVAL);
}

static const struct rc_test_case vma_tests[] = {
	{ "guard_edges", test_guard_edges },
	{ "hole", test_hole },
	{ "shared_kinds", test_shared_kinds },
	{ "parse_line", test_parse_line },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	psz = (size_t)sysconf(_SC_PAGESIZE);
	rc_add_suite("vma", NULL, NULL, vma_tests);
	return rc_test_main(argc, argv);
}
