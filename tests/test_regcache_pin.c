// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_regcache_pin.c - what libregcache pins, with real ibv_reg_mr (rxe
 * in the VM).
 *
 * growth: buffers registered chunk by chunk next to a PROT_NONE guard, a
 * read-only anonymous mapping (registered for local read only, which
 * the kernel would pin) and a memfd MAP_SHARED mapping: no ibv_reg_mr
 * call ever names a byte outside the buffer, and the kernel's count of
 * pinned pages (VmPin in /proc/self/status) is exactly the pages of the
 * live registrations, so no page outside the buffer is pinned.
 *
 * memlock: under a small RLIMIT_MEMLOCK without CAP_IPC_LOCK (the VM
 * suite runs it through setpriv), a workload that cycles through four
 * times the limit keeps working: with a byte limit far above
 * RLIMIT_MEMLOCK only the evict-and-retry saves it; with the default
 * byte limit the cache stays below RLIMIT_MEMLOCK by itself.  Skips
 * (saying why) when ibv_reg_mr is not actually bound by the limit.
 *
 * Needs an RDMA device ($RXE_DEV, else the first one) and a caching
 * monitor (RC_TEST_MONITOR, default auto).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>
#include <infiniband/verbs.h>

#include "regcache.h"
#include "rc_test.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static size_t psz;
static enum regcache_monitor_type mon_type = REGCACHE_MONITOR_AUTO;
static struct regcache *cache;

/* ------------------------------------------------------------ backend */

static uintptr_t v_lo, v_hi;		/* every call must stay inside */
static long v_calls, v_outside, v_live;
static size_t v_live_bytes;

static int v_reg(void *user, void *addr, size_t len, uint32_t access, void **h)
{
	uintptr_t a = (uintptr_t)addr;
	struct ibv_mr *mr;

	v_calls++;
	if (v_hi && (a < v_lo || a + len > v_hi)) {
		v_outside++;
		printf("# ibv_reg_mr [%p, +%zu) outside [%#lx, %#lx)\n", addr,
		       len, (unsigned long)v_lo, (unsigned long)v_hi);
	}
	mr = ibv_reg_mr(pd, addr, len, (int)access);
	if (!mr)
		return errno ? -errno : -EIO;
	v_live++;
	v_live_bytes += len;
	*h = mr;
	return 0;
}

static int v_dereg(void *user, void *h)
{
	struct ibv_mr *mr = h;

	v_live--;
	v_live_bytes -= mr->length;
	return -ibv_dereg_mr(mr);
}

static int make_cache(size_t max_bytes)
{
	struct regcache_attr a = {
		.reg = v_reg, .dereg = v_dereg, .monitor = mon_type,
		.max_bytes = max_bytes, .flags = REGCACHE_ATTR_NO_ENV,
	};

	v_calls = v_outside = 0;
	return regcache_create(&a, &cache);
}

static void drop_cache(void)
{
	regcache_destroy(cache);
	cache = NULL;
	CU_ASSERT_EQUAL(v_live, 0);
}

/* VmPin of /proc/self/status, in bytes; -1 if absent. */
static long vm_pin(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

static char *map_at(void *where, size_t len, int prot, int flags, int fd)
{
	char *p = mmap(where, len, prot, flags | MAP_FIXED_NOREPLACE, fd, 0);

	if (p == MAP_FAILED || p != where) {
		if (p != MAP_FAILED)
			munmap(p, len);
		return NULL;
	}
	return p;
}

/* Free room of 'pages' between two PROT_NONE guard pages. */
static char *reserve(size_t pages)
{
	char *r = mmap(NULL, (pages + 2) * psz, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (r == MAP_FAILED || munmap(r + psz, pages * psz))
		return NULL;
	return r + psz;
}

static void unreserve(char *p, size_t pages)
{
	munmap(p - psz, (pages + 2) * psz);
}

/* ------------------------------------------------------------ growth */

#define N	256
#define NB	16		/* pages of the neighbour */

enum nb_kind { NB_GUARD, NB_READONLY, NB_MEMFD };

/*
 * buf (N pages, read-write) with a neighbour of NB pages right above it
 * and a guard page below; chunk by chunk upward, then every chunk again
 * (hits).  While the cache holds its entries, VmPin grew by exactly the
 * live registrations' bytes, all inside buf.
 */
static void chunked_next_to(enum nb_kind kind, uint32_t access)
{
	static const char *const names[] = { "PROT_NONE guard",
		"read-only anonymous", "memfd MAP_SHARED" };
	char *r = reserve(N + NB), *buf, *nb = NULL;
	long pin0, pin1;
	size_t i;
	int fd = -1;

	CU_ASSERT_FATAL(r != NULL);
	buf = map_at(r, N * psz, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1);
	CU_ASSERT_FATAL(buf != NULL);
	switch (kind) {
	case NB_GUARD:
		nb = map_at(r + N * psz, NB * psz, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1);
		break;
	case NB_READONLY:
		nb = map_at(r + N * psz, NB * psz, PROT_READ,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1);
		break;
	case NB_MEMFD:
		fd = memfd_create("rc-pin", MFD_CLOEXEC);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_FATAL(!ftruncate(fd, NB * psz));
		nb = map_at(r + N * psz, NB * psz, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fd);
		if (nb)
			memset(nb, 5, NB * psz);
		break;
	}
	CU_ASSERT_FATAL(nb != NULL);
	memset(buf, 1, N * psz);
	v_lo = (uintptr_t)buf;
	v_hi = v_lo + N * psz;
	pin0 = vm_pin();
	CU_ASSERT_FATAL(make_cache(0) == 0);
	for (i = 0; i < N; i++) {
		struct regcache_entry *e;

		CU_ASSERT_EQUAL_FATAL(regcache_get(cache, buf + i * psz, psz,
						   access, &e), 0);
		regcache_put(cache, e);
	}
	pin1 = vm_pin();
	rc_diag("next to %s: %ld ibv_reg_mr calls, %ld live MRs of %zu pages, VmPin +%ld pages",
		names[kind], v_calls, v_live, v_live_bytes / psz,
		(pin1 - pin0) / (long)psz);
	CU_ASSERT_EQUAL(v_outside, 0);
	CU_ASSERT(v_calls <= 2 * 8 + 4);	/* O(log n), n = 256 */
	if (pin0 < 0 || pin1 < 0)
		rc_diag("no VmPin in /proc/self/status: pin count not checked");
	else
		CU_ASSERT_EQUAL(pin1 - pin0, (long)v_live_bytes);
	CU_ASSERT(v_live_bytes <= N * psz);
	drop_cache();
	v_lo = v_hi = 0;
	unreserve(r, N + NB);
	if (fd >= 0)
		close(fd);
}

static void test_guard(void)
{
	chunked_next_to(NB_GUARD, IBV_ACCESS_LOCAL_WRITE);
}

static void test_readonly(void)
{
	/* local read only: the kernel would pin read-only pages for it */
	chunked_next_to(NB_READONLY, 0);
}

static void test_memfd(void)
{
	chunked_next_to(NB_MEMFD, IBV_ACCESS_LOCAL_WRITE);
}

/* ----------------------------------------------------------- memlock */

static bool cap_ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_IPC_LOCK / 32].effective & (1U << (CAP_IPC_LOCK % 32));
}

#define BUFS	16

static size_t ml_limit;		/* RLIMIT_MEMLOCK soft, bytes */
static const char *ml_skip;

/* Is ibv_reg_mr bound by RLIMIT_MEMLOCK here?  Sets ml_skip if not. */
static void memlock_probe(void)
{
	struct rlimit rl;
	struct ibv_mr *mr;
	size_t len;
	char *p;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY) {
		ml_skip = "RLIMIT_MEMLOCK is unlimited (run under ulimit -l)";
		return;
	}
	if (cap_ipc_lock()) {
		ml_skip = "CAP_IPC_LOCK bypasses RLIMIT_MEMLOCK (drop it: setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock)";
		return;
	}
	ml_limit = rl.rlim_cur;
	if (ml_limit < 16 * psz || ml_limit > (64UL << 20)) {
		ml_skip = "RLIMIT_MEMLOCK not between 16 pages and 64 MiB";
		return;
	}
	len = ml_limit + 16 * psz;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		ml_skip = "mmap failed";
		return;
	}
	memset(p, 1, len);
	mr = ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE);
	if (mr) {
		ibv_dereg_mr(mr);
		ml_skip = "ibv_reg_mr of more than RLIMIT_MEMLOCK succeeded: the limit does not bind";
	} else {
		rc_diag("ibv_reg_mr of %zu KiB under RLIMIT_MEMLOCK %zu KiB: %s (as expected)",
			len >> 10, ml_limit >> 10, strerror(errno));
	}
	munmap(p, len);
}

/*
 * 16 buffers of a quarter of the limit, separated by guard pages,
 * cycled through 4 times holding up to 2: 4x the limit in all.
 */
static void memlock_cycle(size_t max_bytes, const char *what, bool retries)
{
	size_t len, stride;
	struct regcache_entry *held[2] = { NULL, NULL };
	struct regcache_stats st;
	int i, round, fails = 0, first_err = 0;
	char *r;

	if (ml_skip) {
		rc_skip("%s", ml_skip);
		return;
	}
	len = (ml_limit / 4) & ~(psz - 1);
	stride = len + psz;
	r = reserve(BUFS * stride / psz);
	CU_ASSERT_FATAL(r != NULL);
	for (i = 0; i < BUFS; i++) {
		CU_ASSERT_FATAL(map_at(r + i * stride, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1) != NULL);
		memset(r + i * stride, i, len);
	}
	CU_ASSERT_FATAL(make_cache(max_bytes) == 0);
	for (round = 0; round < 4; round++) {
		for (i = 0; i < BUFS; i++) {
			struct regcache_entry *e;
			int ret = regcache_get(cache, r + i * stride, len,
					       IBV_ACCESS_LOCAL_WRITE, &e);

			if (ret) {
				if (!fails++)
					first_err = ret;
				continue;
			}
			if (held[i % 2])
				regcache_put(cache, held[i % 2]);
			held[i % 2] = e;
		}
	}
	for (i = 0; i < 2; i++)
		if (held[i])
			regcache_put(cache, held[i]);
	CU_ASSERT_EQUAL(regcache_get_stats(cache, &st), 0);
	rc_diag("%s: %d x %zu KiB x 4 rounds under %zu KiB: %d failed gets%s%s, %" PRIu64 " registrations, %" PRIu64 " retries, %" PRIu64 " evictions",
		what, BUFS, len >> 10, ml_limit >> 10, fails,
		fails ? ", first " : "", fails ? strerror(-first_err) : "",
		st.registrations, st.reg_retries, st.evictions);
	CU_ASSERT_EQUAL(fails, 0);
	if (retries)
		CU_ASSERT(st.reg_retries > 0);
	drop_cache();
	unreserve(r, BUFS * stride / psz);
}

/* max_bytes far above RLIMIT_MEMLOCK: only evict-and-retry helps. */
static void test_memlock_retry(void)
{
	memlock_cycle((size_t)1 << 30, "max_bytes 1 GiB", true);
}

/* Default max_bytes: half of RLIMIT_MEMLOCK, the cache evicts first. */
static void test_memlock_default(void)
{
	memlock_cycle(0, "default max_bytes", false);
}

static const struct rc_test_case growth_cases[] = {
	{ "guard_neighbour", test_guard },
	{ "readonly_neighbour", test_readonly },
	{ "memfd_neighbour", test_memfd },
	{ NULL, NULL }
};

static const struct rc_test_case memlock_cases[] = {
	{ "cycle_4x_limit_retry", test_memlock_retry },
	{ "cycle_4x_limit_default", test_memlock_default },
	{ NULL, NULL }
};

static int setup(void)
{
	const char *want = getenv("RXE_DEV");
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list || !n)
		return -ENODEV;
	for (i = 0; i < n; i++)
		if (!want || !strcmp(ibv_get_device_name(list[i]), want))
			break;
	if (i == n) {
		ibv_free_device_list(list);
		return -ENODEV;
	}
	ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		return -ENODEV;
	pd = ibv_alloc_pd(ctx);
	return pd ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	const char *m = getenv("RC_TEST_MONITOR");
	int ret, rc;

	psz = (size_t)sysconf(_SC_PAGESIZE);
	ret = setup();
	if (ret)
		rc_skip_all("no usable RDMA device: %s", strerror(-ret));
	if (m && !strcmp(m, "uffd"))
		mon_type = REGCACHE_MONITOR_UFFD;
	else if (m && !strcmp(m, "kmod"))
		mon_type = REGCACHE_MONITOR_KMOD;
	ret = make_cache(0);
	if (ret)
		rc_skip_all("regcache_create: %s", strerror(-ret));
	if (!strcmp(regcache_monitor_name(cache), "none"))
		rc_skip_all("no caching monitor (kmod or uffd) available");
	rc_diag("monitor %s", regcache_monitor_name(cache));
	regcache_destroy(cache);
	cache = NULL;
	memlock_probe();
	rc_add_suite("pin", NULL, NULL, growth_cases);
	rc_add_suite("memlock", NULL, NULL, memlock_cases);
	rc = rc_test_main(argc, argv);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return rc;
}
