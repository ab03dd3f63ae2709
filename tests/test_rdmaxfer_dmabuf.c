// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_dmabuf.c - the RDMAXFER_MEM_DMABUF kind through
 * librdmaxfer, client and server agents over loopback RoCE ($RXE_ADDR).
 *
 * The dma-buf is a real one: udmabuf (/dev/udmabuf, from a sealed memfd)
 * where the kernel has it, else a vgem dumb buffer exported with PRIME
 * ($RDMAXFER_TEST_EXPORTER=udmabuf or vgem picks one); the program skips
 * (77) when there is none.  The device path is probed and, on a device
 * that refuses dma-buf MRs (rxe), policy on must fail with -EOPNOTSUPP
 * while auto and off fall back: to the dma-buf's CPU mapping, to the
 * udmabuf's memfd where that mapping cannot be pinned (VM_PFNMAP), or to
 * the staged copy (vgem, or when asked for).  Every transfer is checked
 * byte by byte through a mapping of the dma-buf itself, the exporter's
 * view, inside rdmaxfer_dmabuf_sync() (DMA_BUF_IOCTL_SYNC):
 * a peer's RDMA WRITE into it, a peer's RDMA READ out of it, and the
 * region as the local buffer of this side's own WRITE.  The rkey reaches
 * exactly the region (one byte past it is refused) and dies at
 * deregister.  Bad input gets its -errno and leaks no fd and no mapping.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/udmabuf.h>

#define WAIT_MS 20000
#include "rdmaxfer_test_util.h"
#include "rdmaxfer_dmabuf_test.h"

#define BUF_LEN		(256 * 1024)	/* the dma-buf */
#define OFF		4096		/* the region inside it */
#define REG_LEN		(128 * 1024 + 100)

static const char *addr;
static const char *exporter;		/* "udmabuf" or "vgem" */
static int drm_fd = -1;
static struct rdmaxfer_agent *cli, *srv;
static struct rdmaxfer_peer *cp, *sp;
static struct rdmaxfer_dmabuf_caps caps;	/* the server's */
static uint8_t *lbuf;			/* client's local buffer */

/* A new dma-buf of BUF_LEN; *memfdp its udmabuf memfd (or -1). */
static int new_dmabuf(int *fdp, int *memfdp)
{
	return test_new_dmabuf(drm_fd, BUF_LEN, fdp, memfdp);
}

static int suite_init(void)
{
	struct rdmaxfer_agent_attr attr;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_THREAD;
	attr.flags = RDMAXFER_AGENT_NO_ENV;
	if (new_agent_pair(&attr, addr, &srv, &cli, &cp, &sp))
		return 1;
	if (rdmaxfer_agent_dmabuf_caps(srv, &caps))
		return 1;
	rc_diag("exporter %s; %s", exporter, caps.msg);
	lbuf = aligned_alloc(4096, BUF_LEN);
	return lbuf ? 0 : 1;
}

static int suite_clean(void)
{
	rdmaxfer_agent_destroy(cli);
	rdmaxfer_agent_destroy(srv);
	free(lbuf);
	return 0;
}

/*
 * Bytes of shared mappings (the library's mappings of dma-bufs and memfds
 * are shared): a count of bytes, unlike one of lines, is blind to VMAs
 * merging and splitting, and private memory is left out because glibc
 * maps a 64 MiB arena for the first allocation of each new thread (the
 * cache monitor's, at its first event).  Private copies (the staged path)
 * are checked by unmapped().
 */
static long count_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long a, b;
	char line[512], perm[8];
	long n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perm) == 3 &&
		    perm[3] == 's')
			n += (long)(b - a);
	fclose(f);
	return n;
}

/* No page of [p, p + len) is mapped any more. */
static bool unmapped(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	unsigned char vec[64];

	len = ((uintptr_t)p + len - a + 4095) / 4096;
	for (; len; len--, a += 4096)
		if (mincore((void *)a, 4096, vec) == 0 || errno != ENOMEM)
			return false;
	return true;
}

/* Nothing mapped or opened since the counts were taken. */
static void check_nothing_left(int fds, long maps)
{
	char line[512];
	FILE *f;

	CU_ASSERT_EQUAL(count_fds(), fds);
	if (count_maps() == maps) {
		CU_PASS("mappings");
		return;
	}
	CU_FAIL("mappings left behind");
	rc_diag("mapped %ld bytes, was %ld:", count_maps(), maps);
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f))
		rc_diag("%s", line);
	if (f)
		fclose(f);
}

/* A dma-buf with its CPU view: the test's own mapping of the dma-buf. */
struct dbuf {
	int fd, memfd;
	uint8_t *cpu;
};

static void dbuf_new(struct dbuf *b)
{
	CU_ASSERT_EQUAL_FATAL(new_dmabuf(&b->fd, &b->memfd), 0);
	b->cpu = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_SHARED,
		      b->fd, 0);
	CU_ASSERT_FATAL(b->cpu != MAP_FAILED);
}

static void dbuf_free(struct dbuf *b)
{
	munmap(b->cpu, BUF_LEN);
	if (b->fd >= 0)
		close(b->fd);
	if (b->memfd >= 0)
		close(b->memfd);
}

/* CPU access through any mapping of the region's dma-buf. */
static void cpu_sync(struct rdmaxfer_mem *m, uint32_t flags)
{
	CU_ASSERT_EQUAL(rdmaxfer_dmabuf_sync(m, flags), 0);
}

/*
 * What to register: the backing memfd where there is one (udmabuf) and
 * stage is not asked for, else the staged copy (vgem: a VM_PFNMAP
 * mapping and no file userspace can map).
 */
static void attr_of(const struct dbuf *b, uint32_t policy, bool stage,
		    struct rdmaxfer_dmabuf_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->fd = b->fd;
	a->offset = OFF;
	a->len = REG_LEN;
	a->access = RDMAXFER_ACCESS_REMOTE;
	a->policy = policy;
	if (b->memfd >= 0 && !stage) {
		a->flags = RDMAXFER_DMABUF_BACKING;
		a->backing_fd = b->memfd;
	} else {
		a->flags = RDMAXFER_DMABUF_STAGE;
	}
}

static struct rdmaxfer_mem *reg(const struct dbuf *b, uint32_t policy,
				bool stage, struct rdmaxfer_dmabuf_info *info)
{
	struct rdmaxfer_dmabuf_attr a;
	struct rdmaxfer_mem *m = NULL;
	int ret;

	attr_of(b, policy, stage, &a);
	ret = rdmaxfer_mem_register_dmabuf(srv, &a, &m);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_dmabuf_query(m, info), 0);
	rc_diag("policy %u: path %u device_err %d map_err %d: %s", policy,
		info->path, info->device_err, info->map_err, info->msg);
	return m;
}

/* On rxe the probe says no, with EOPNOTSUPP, and says so in words. */
static void test_caps(void)
{
	char dev[RDMAXFER_DEVNAME_MAX];
	struct rdmaxfer_agent_info ai;

	CU_ASSERT_EQUAL(rdmaxfer_agent_query(srv, &ai), 0);
	memcpy(dev, ai.device, sizeof(dev));
	CU_ASSERT_EQUAL(caps.policy, RDMAXFER_DMABUF_AUTO);
	CU_ASSERT(strstr(caps.msg, dev) != NULL);
	if (!strncmp(dev, "rxe", 3)) {
		CU_ASSERT_EQUAL(caps.device, 0);
		CU_ASSERT_EQUAL(caps.device_err, -EOPNOTSUPP);
	}
	CU_ASSERT_EQUAL(rdmaxfer_agent_dmabuf_caps(NULL, &caps), -EINVAL);
}

static void test_policy_on(void)
{
	struct rdmaxfer_dmabuf_attr a;
	struct rdmaxfer_mem *m = NULL;
	struct dbuf b;
	int fds;
	long maps;

	if (caps.device) {
		rc_skip("the device takes dma-buf MRs: nothing to refuse");
		return;
	}
	dbuf_new(&b);
	fds = count_fds();
	maps = count_maps();
	attr_of(&b, RDMAXFER_DMABUF_ON, false, &a);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_dmabuf(srv, &a, &m), -EOPNOTSUPP);
	CU_ASSERT_PTR_NULL(m);
	check_nothing_left(fds, maps);
	dbuf_free(&b);
}

/*
 * A peer's WRITE lands in the dma-buf, a peer's READ returns what the CPU
 * wrote into it; one packet and many, at an offset inside the region.
 */
static void xfer_check(uint32_t policy, bool stage)
{
	struct rdmaxfer_dmabuf_info info;
	struct rdmaxfer_desc d, sub;
	struct rdmaxfer_iov iov;
	struct rdmaxfer_mem *m;
	const size_t lens[] = { 100, REG_LEN - 3 };
	struct dbuf b;
	size_t i, bad;

	dbuf_new(&b);
	m = reg(&b, policy, stage, &info);
	if (!caps.device) {
		CU_ASSERT_NOT_EQUAL(info.path, RDMAXFER_DMABUF_PATH_DEVICE);
		CU_ASSERT_EQUAL(info.device_err, policy == RDMAXFER_DMABUF_OFF ?
				0 : -EOPNOTSUPP);
		CU_ASSERT(strstr(info.msg, policy == RDMAXFER_DMABUF_OFF ?
				 "policy off" : "refused") != NULL);
		CU_ASSERT_PTR_NOT_NULL(info.cpu);
		/* the dma-buf's own mapping when it can be pinned */
		if (info.path == RDMAXFER_DMABUF_PATH_STAGED)
			CU_ASSERT_NOT_EQUAL(info.map_err, 0);
		CU_ASSERT(info.path != RDMAXFER_DMABUF_PATH_STAGED || stage ||
			  b.memfd < 0);
	}
	CU_ASSERT_EQUAL(info.len, REG_LEN);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m, 0, 0, &d), 0);
	CU_ASSERT_EQUAL(d.kind, RDMAXFER_MEM_DMABUF);
	CU_ASSERT_EQUAL(d.len, REG_LEN);
	CU_ASSERT_EQUAL(d.addr, info.addr);

	for (i = 0; i < 2; i++) {
		uint32_t seed = (uint32_t)(policy * 10 + i);

		/* WRITE into the dma-buf at region offset 3 */
		fill(lbuf, lens[i], seed);
		CU_ASSERT_EQUAL(rdmaxfer_desc_sub(&d, 3, lens[i], &sub), 0);
		iov.addr = lbuf;
		iov.len = lens[i];
		CU_ASSERT_EQUAL(xfer_sync(cp, RDMAXFER_OP_WRITE, &iov, &sub, 1,
					  NULL), 0);
		cpu_sync(m, RDMAXFER_DMABUF_SYNC_READ);
		bad = first_bad(b.cpu + OFF + 3, lens[i], seed);
		cpu_sync(m, RDMAXFER_DMABUF_SYNC_READ | RDMAXFER_DMABUF_SYNC_END);
		if (bad != lens[i])
			rc_diag("WRITE %zu: first bad byte %zu", lens[i], bad);
		CU_ASSERT_EQUAL(bad, lens[i]);

		/* READ out of it what the CPU wrote */
		cpu_sync(m, RDMAXFER_DMABUF_SYNC_WRITE);
		fill(b.cpu + OFF + 3, lens[i], seed + 100);
		cpu_sync(m, RDMAXFER_DMABUF_SYNC_WRITE |
			 RDMAXFER_DMABUF_SYNC_END);
		memset(lbuf, 0, lens[i]);
		CU_ASSERT_EQUAL(xfer_sync(cp, RDMAXFER_OP_READ, &iov, &sub, 1,
					  NULL), 0);
		bad = first_bad(lbuf, lens[i], seed + 100);
		if (bad != lens[i])
			rc_diag("READ %zu: first bad byte %zu", lens[i], bad);
		CU_ASSERT_EQUAL(bad, lens[i]);
	}
	CU_ASSERT_EQUAL(rdmaxfer_dmabuf_sync(m, RDMAXFER_DMABUF_SYNC_END),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_dmabuf_sync(m, 1U << 7), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	if (info.cpu)
		CU_ASSERT(unmapped(info.cpu, REG_LEN));
	dbuf_free(&b);
}

static void test_auto(void)
{
	xfer_check(RDMAXFER_DMABUF_AUTO, false);
}

static void test_off(void)
{
	xfer_check(RDMAXFER_DMABUF_OFF, false);
}

/* The staged copy, asked for: taken wherever the dma-buf's own mapping
 * cannot be pinned (7.3's udmabuf, vgem). */
static void test_staged(void)
{
	xfer_check(RDMAXFER_DMABUF_AUTO, true);
}

/*
 * Without a backing file or staging, a dma-buf whose mapping cannot be
 * pinned is refused with -EOPNOTSUPP, and nothing is left behind.
 */
static void test_no_path(void)
{
	struct rdmaxfer_dmabuf_info info;
	struct rdmaxfer_dmabuf_attr a;
	struct rdmaxfer_mem *m = NULL;
	struct dbuf b;
	int fds, ret;
	long maps;

	dbuf_new(&b);
	attr_of(&b, RDMAXFER_DMABUF_AUTO, false, &a);
	a.flags = 0;
	a.backing_fd = 0;
	fds = count_fds();
	maps = count_maps();
	ret = rdmaxfer_mem_register_dmabuf(srv, &a, &m);
	if (!ret) {
		CU_ASSERT_EQUAL(rdmaxfer_mem_dmabuf_query(m, &info), 0);
		CU_ASSERT(info.path == RDMAXFER_DMABUF_PATH_MAP ||
			  info.path == RDMAXFER_DMABUF_PATH_DEVICE);
		rc_diag("%s: %s", exporter, info.msg);
		CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	} else {
		CU_ASSERT_EQUAL(ret, -EOPNOTSUPP);
		CU_ASSERT_PTR_NULL(m);
		rc_diag("%s: the dma-buf's mapping cannot be pinned: %d",
			exporter, ret);
	}
	check_nothing_left(fds, maps);
	dbuf_free(&b);
}

/* The default policy is $RDMAXFER_DMABUF's (agents without NO_ENV). */
static void test_env(void)
{
	struct rdmaxfer_dmabuf_caps c;
	struct rdmaxfer_dmabuf_attr a;
	struct rdmaxfer_agent *ag;
	struct rdmaxfer_mem *m = NULL;
	struct dbuf b;

	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &ag), 0);
	dbuf_new(&b);
	attr_of(&b, RDMAXFER_DMABUF_DEFAULT, false, &a);
	setenv("RDMAXFER_DMABUF", "bogus", 1);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_dmabuf(ag, &a, &m), -EINVAL);
	setenv("RDMAXFER_DMABUF", "on", 1);
	CU_ASSERT_EQUAL(rdmaxfer_agent_dmabuf_caps(ag, &c), 0);
	CU_ASSERT_EQUAL(c.policy, RDMAXFER_DMABUF_ON);
	if (!c.device)
		CU_ASSERT_EQUAL(rdmaxfer_mem_register_dmabuf(ag, &a, &m),
				-EOPNOTSUPP);
	unsetenv("RDMAXFER_DMABUF");
	CU_ASSERT_PTR_NULL(m);
	dbuf_free(&b);
	rdmaxfer_agent_destroy(ag);
}

/*
 * The region as this side's local buffer (its CPU address), and the
 * caller's fd closed while the region lives: the handle holds its own.
 */
static void test_local_and_closed_fd(void)
{
	struct rdmaxfer_dmabuf_info info;
	struct rdmaxfer_mem *m, *cm;
	struct rdmaxfer_desc d;
	struct rdmaxfer_iov iov;
	struct dbuf b;
	int fds;
	long maps;
	size_t bad;

	fds = count_fds();
	maps = count_maps();
	dbuf_new(&b);
	m = reg(&b, RDMAXFER_DMABUF_AUTO, false, &info);
	if (!info.cpu) {
		rc_skip("device path: the region has no CPU address");
		rdmaxfer_mem_deregister(m);
		goto out;
	}
	close(b.fd);
	b.fd = -1;
	/* the CPU writes through the exporter's mapping */
	cpu_sync(m, RDMAXFER_DMABUF_SYNC_WRITE);
	fill(b.cpu + OFF, REG_LEN, 77);
	cpu_sync(m, RDMAXFER_DMABUF_SYNC_WRITE | RDMAXFER_DMABUF_SYNC_END);
	/* server WRITEs from the dma-buf into the client's memory */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_register(cli, lbuf, BUF_LEN,
						    RDMAXFER_MEM_HOST, &cm), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(cm, 0, REG_LEN, &d), 0);
	memset(lbuf, 0, REG_LEN);
	iov.addr = info.cpu;
	iov.len = REG_LEN;
	CU_ASSERT_EQUAL(xfer_sync(sp, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL), 0);
	bad = first_bad(lbuf, REG_LEN, 77);
	CU_ASSERT_EQUAL(bad, REG_LEN);
	/* the region's own bytes agree */
	CU_ASSERT_EQUAL(first_bad(info.cpu, REG_LEN, 77), REG_LEN);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(cm), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	CU_ASSERT(unmapped(info.cpu, REG_LEN));
out:
	dbuf_free(&b);
	check_nothing_left(fds, maps);
}

/* Post one WRITE of len bytes to d; the request's result. */
static int write_once(const struct rdmaxfer_desc *d)
{
	struct rdmaxfer_iov iov = { lbuf, d->len };

	return xfer_sync(cp, RDMAXFER_OP_WRITE, &iov, d, 1, NULL);
}

/* A refused operation moved the client's peer to ERROR: a new one. */
static void reconnect(void)
{
	struct rdmaxfer_peer *np;

	CU_ASSERT_NOT_EQUAL(rdmaxfer_peer_state(cp), RDMAXFER_PEER_CONNECTED);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_peer_reconnect(cp, 10000), 0);
	if (rdmaxfer_accept(srv, 10000, &np) == 0) {
		rdmaxfer_peer_destroy(sp);
		sp = np;
	}
}

/*
 * Security: the rkey reaches exactly the region (a WRITE one byte past it
 * is refused by the responder, the byte after the region untouched), and
 * it stops working at deregister.
 */
static void test_rkey_bounds(void)
{
	struct rdmaxfer_dmabuf_info info;
	struct rdmaxfer_mem *m;
	struct rdmaxfer_desc d, past;
	struct dbuf b;
	uint8_t guard;

	dbuf_new(&b);
	m = reg(&b, RDMAXFER_DMABUF_AUTO, false, &info);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m, REG_LEN - 8, 8, &d), 0);
	guard = b.cpu[OFF + REG_LEN];
	past = d;
	past.len = 9;			/* one byte beyond the region */
	fill(lbuf, 9, 5);
	CU_ASSERT_EQUAL(write_once(&past), -EACCES);
	CU_ASSERT_EQUAL(b.cpu[OFF + REG_LEN], guard);
	reconnect();
	CU_ASSERT_EQUAL(write_once(&d), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	CU_ASSERT_EQUAL(write_once(&d), -EACCES);
	reconnect();
	dbuf_free(&b);
}

/* Bad input: the errno, and no fd or mapping left behind. */
static void test_bad_input(void)
{
	struct rdmaxfer_dmabuf_attr a, ok;
	struct rdmaxfer_mem *m = NULL;
	struct dbuf b;
	char tmpl[] = "/tmp/rdmaxfer-dmabuf-XXXXXX";
	int fds, memfd, file, closed;
	long maps;

	dbuf_new(&b);
	attr_of(&b, RDMAXFER_DMABUF_AUTO, false, &ok);
	memfd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
	file = mkstemp(tmpl);
	CU_ASSERT_FATAL(memfd >= 0 && file >= 0);
	unlink(tmpl);
	CU_ASSERT_EQUAL(ftruncate(memfd, BUF_LEN), 0);
	CU_ASSERT_EQUAL(ftruncate(file, BUF_LEN), 0);
	closed = dup(b.fd);
	close(closed);
	fds = count_fds();
	maps = count_maps();

#define BAD(field, value, err) do {					\
	a = ok;								\
	a.field = value;						\
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_dmabuf(srv, &a, &m), err); \
} while (0)
	BAD(fd, closed, -EBADF);
	BAD(fd, -1, -EBADF);
	BAD(fd, memfd, -EINVAL);
	BAD(fd, file, -EINVAL);
	BAD(len, 0, -EINVAL);
	BAD(len, BUF_LEN - OFF + 1, -ERANGE);
	BAD(offset, BUF_LEN, -ERANGE);
	BAD(offset, UINT64_MAX - 10, -ERANGE);
	BAD(access, 1U << 5, -EINVAL);
	BAD(flags, 1U << 4, -EINVAL);
	BAD(flags, RDMAXFER_DMABUF_STAGE | (1U << 2), -EINVAL);
	BAD(policy, 9, -EINVAL);
	BAD(reserved32, 1, -EINVAL);
	BAD(reserved[1], 1, -EINVAL);
	if (ok.flags & RDMAXFER_DMABUF_BACKING) {
		BAD(backing_offset, BUF_LEN, -ERANGE);
		BAD(backing_fd, closed, -EBADF);
	} else {
		BAD(backing_offset, 4096, -EINVAL);
	}
#undef BAD
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_dmabuf(NULL, &ok, &m), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_dmabuf(srv, NULL, &m), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_dmabuf(srv, &ok, NULL), -EINVAL);
	/* the address call does not take the fd kind */
	CU_ASSERT_EQUAL(rdmaxfer_mem_register(srv, lbuf, 4096,
					      RDMAXFER_MEM_DMABUF, &m), -EINVAL);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_EQUAL(rdmaxfer_mem_dmabuf_query(NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_dmabuf_sync(NULL, RDMAXFER_DMABUF_SYNC_READ),
			-EINVAL);
	check_nothing_left(fds, maps);
	close(memfd);
	close(file);
	dbuf_free(&b);
}

int main(int argc, char **argv)
{
	static const struct rc_test_case cases[] = {
		{ "caps", test_caps },
		{ "policy_on", test_policy_on },
		{ "auto", test_auto },
		{ "off", test_off },
		{ "staged", test_staged },
		{ "no_path", test_no_path },
		{ "env", test_env },
		{ "local_and_closed_fd", test_local_and_closed_fd },
		{ "rkey_bounds", test_rkey_bounds },
		{ "bad_input", test_bad_input },
		{ NULL, NULL },
	};

	addr = getenv("RXE_ADDR");
	if (!addr)
		rc_skip_all("RXE_ADDR not set (run in the VM's dmabuf suite)");
	if (test_pick_exporter(BUF_LEN, &drm_fd, &exporter))
		rc_skip_all("no dma-buf exporter: neither /dev/udmabuf nor a "
			    "vgem card in /dev/dri");
	rc_add_suite("dmabuf", suite_init, suite_clean, cases);
	return rc_test_main(argc, argv);
}
