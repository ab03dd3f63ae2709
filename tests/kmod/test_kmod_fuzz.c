// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_fuzz.c - random ioctls, reads and mmaps on /dev/regcache.
 *
 * KMOD_FUZZ_ITERS ioctls (default 100000), mixed with reads, mmaps and
 * madvise churn, with random command numbers
 * (fully random, our magic with random nr/size/direction, and the real
 * commands), random argument pointers (NULL, unmapped, kernel addresses,
 * a buffer ending at a guard page, a valid buffer of random bytes or of
 * plausible structs) and random read sizes.  Pass: no oops (the harness
 * checks dmesg), every call returns, and once the fds are closed the
 * module-wide watch and pin counters are back to where they started.
 * Command types that generic VFS code handles before the driver
 * ('X' freeze/thaw, 'f' inode flags, 0x94 clone, 'T' FIO*) are never
 * generated: they would test the VFS, not us, and could freeze /dev.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kt_harness.h"
#include "test_kmod_util.h"

static long pg;
static unsigned int seed;

static uint64_t rnd64(void)
{
	return ((uint64_t)rand_r(&seed) << 33) ^ ((uint64_t)rand_r(&seed) << 11) ^
	       (uint64_t)rand_r(&seed);
}

static bool vfs_type(unsigned int cmd)
{
	unsigned int type = _IOC_TYPE(cmd);

	return type == 'X' || type == 'f' || type == 0x94 || type == 'T' || type == 0x12;
}

static const unsigned long real_cmds[] = {
	REGCACHE_IOC_GET_INFO, REGCACHE_IOC_CONFIGURE, REGCACHE_IOC_WATCH,
	REGCACHE_IOC_WATCH_BATCH, REGCACHE_IOC_UNWATCH, REGCACHE_IOC_UNWATCH_ALL,
	REGCACHE_IOC_FLUSH, REGCACHE_IOC_GET_STATS,
};

static void test_fuzz(void)
{
	long iters = kt_env_long("KMOD_FUZZ_ITERS", 100000, 1, 1000000000);
	long long base_w = kt_sysfs("watches"), base_p = kt_sysfs("pinned_bytes");
	long long base_c = kt_sysfs("nr_contexts");
	unsigned long cmd;
	struct kt_ctx c[2];
	char *area, *guard_end, *buf, *mem;
	struct regcache_watch *ws;
	long ok = 0, calls = 0, ioctls = 0;
	void *arg;
	int k, fd;

	seed = (unsigned int)kt_env_long("KMOD_FUZZ_SEED", 12345, 0, UINT_MAX);
	kt_diag("seed %u, %ld iterations", seed, iters);
	/* area: 16 pages of random bytes, then a PROT_NONE guard page */
	area = mmap(NULL, 17 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	KT_ASSERT(area != MAP_FAILED);
	KT_ASSERT(mprotect(area + 16 * pg, pg, PROT_NONE) == 0);
	guard_end = area + 16 * pg;
	mem = kt_map_pages(64);		/* memory worth watching */
	KT_ASSERT(mem != NULL);
	ws = (struct regcache_watch *)(area + 8 * pg);
	for (k = 0; k < 2; k++)
		KT_ASSERT(kt_open(&c[k], 0, k == 0) == 0);

	while (ioctls < iters) {
		int which = rand_r(&seed) % 16;

		fd = c[rand_r(&seed) % 2].fd;
		for (k = 0; k < 64; k++)
			((uint64_t *)area)[k] = rnd64();

		/* the command */
		switch (rand_r(&seed) % 4) {
		case 0:
			do
				cmd = (unsigned int)rnd64();
			while (vfs_type(cmd));
			break;
		case 1:
			cmd = _IOC(rand_r(&seed) % 4, REGCACHE_IOC_MAGIC, rand_r(&seed) % 16,
				   rand_r(&seed) % 256);
			break;
		default:
			cmd = real_cmds[rand_r(&seed) % 8];
			break;
		}

		/* the argument */
		switch (which) {
		case 0:
			arg = NULL;
			break;
		case 1:
			arg = (void *)(uintptr_t)0xffff888000000000ULL + (rnd64() & 0xffff000);
			break;
		case 2:
			arg = (void *)(uintptr_t)(rnd64() & 0x7fffffffffffULL);	/* likely unmapped */
			break;
		case 3:
			arg = guard_end - (rand_r(&seed) % 64);	/* runs into the guard page */
			break;
		case 4:
		case 5: {
			/* a plausible WATCH: real memory, sometimes broken */
			struct regcache_watch *w = (struct regcache_watch *)area;

			memset(w, 0, sizeof(*w));
			w->addr = (uintptr_t)mem + (rand_r(&seed) % (64 * pg));
			w->len = 1 + rand_r(&seed) % (8 * pg);
			w->cookie = rnd64();
			w->pinned_bytes = rand_r(&seed) % 2 ? w->len : 0;
			if (rand_r(&seed) % 8 == 0)
				w->flags = rnd64();
			if (rand_r(&seed) % 8 == 0)
				w->len = rnd64();
			arg = area;
			break;
		}
		case 6: {
			/* a plausible batch pointing at plausible or random watches */
			struct regcache_watch_batch *b = (struct regcache_watch_batch *)area;
			int n = 1 + rand_r(&seed) % 32;

			for (k = 0; k < n; k++) {
				memset(&ws[k], 0, sizeof(ws[k]));
				ws[k].addr = (uintptr_t)mem + (rand_r(&seed) % (64 * pg));
				ws[k].len = 1 + rand_r(&seed) % (4 * pg);
				ws[k].cookie = k;
				if (rand_r(&seed) % 16 == 0)
					ws[k].reserved[0] = 1;
			}
			memset(b, 0, sizeof(*b));
			b->watches = rand_r(&seed) % 8 ? (uintptr_t)ws : rnd64();
			b->count = rand_r(&seed) % 8 ? (uint32_t)n : (uint32_t)rnd64();
			arg = area;
			break;
		}
		case 7: {
			struct regcache_unwatch *u = (struct regcache_unwatch *)area;

			memset(u, 0, sizeof(*u));
			u->slot = rand_r(&seed) % 128;
			u->cookie = rand_r(&seed) % 64;
			arg = area;
			break;
		}
		case 8:
			/* a read of a random size into a random place */
			buf = rand_r(&seed) % 2 ? area : guard_end - (rand_r(&seed) % 200);
			fcntl(fd, F_SETFL, O_NONBLOCK);
			(void)read(fd, buf, rand_r(&seed) % 300);
			calls++;
			continue;
		case 9: {
			/* an mmap with random size, offset and protection */
			size_t len = (1 + rand_r(&seed) % 200) * pg;
			int prot = rand_r(&seed) % 2 ? PROT_READ : PROT_READ | PROT_WRITE;
			void *m = mmap(NULL, len, prot, rand_r(&seed) % 4 ? MAP_SHARED : MAP_PRIVATE,
				       fd, (off_t)(rand_r(&seed) % 3) * pg);

			if (m != MAP_FAILED)
				munmap(m, len);
			calls++;
			continue;
		}
		case 10:
			/* churn watched memory so invalidations run too */
			madvise(mem + (rand_r(&seed) % 64) * pg, pg, MADV_DONTNEED);
			continue;
		default:
			arg = area;	/* random bytes */
			break;
		}
		if (ioctl(fd, cmd, arg) == 0)
			ok++;
		ioctls++;
	}
	kt_diag("%ld ioctls (%ld succeeded), %ld reads and mmaps", ioctls, ok, calls);
	KT_EXPECT(ioctls == iters);

	/* still healthy */
	{
		struct regcache_ctx_stats s;

		KT_EXPECT(kt_stats(&c[0], &s) == 0);
		KT_EXPECT(kt_ioctl(c[0].fd, REGCACHE_IOC_UNWATCH_ALL, NULL) == 0);
		KT_EXPECT(kt_stats(&c[0], &s) == 0);
		KT_EXPECT(s.watches == 0 && s.pinned_bytes == 0);
	}
	for (k = 0; k < 2; k++)
		kt_close(&c[k]);
	KT_EXPECT(kt_sysfs("watches") == base_w);
	KT_EXPECT(kt_sysfs("pinned_bytes") == base_p);
	KT_EXPECT(kt_sysfs("nr_contexts") == base_c);
	munmap(area, 17 * pg);
	munmap(mem, 64 * pg);
}

int main(int argc, char **argv)
{
	static const struct kt_case cases[] = {
		{ "random_ioctls", test_fuzz },
		{ NULL, NULL },
	};

	pg = sysconf(_SC_PAGESIZE);
	kt_require_device();
	kt_add_suite("kmod_fuzz", NULL, NULL, cases);
	return kt_main(argc, argv);
}
