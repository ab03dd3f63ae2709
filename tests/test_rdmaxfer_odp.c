// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_odp.c - the RDMAXFER_MEM_ODP memory kind through
 * librdmaxfer, client and server agents over loopback RoCE ($RXE_ADDR).
 *
 * Where the server's device offers ODP for an operation and its self-test
 * passed, the region really is ODP (rdmaxfer_mem_is_odp()); elsewhere
 * (6.1: no ODP; 7.3: WRITE/READ fail rxe's self-test) auto falls back to
 * pinned and says why.  Either way every transfer is checked byte by byte:
 * WRITE and READ into never-touched memory, 1 packet and many; atomics;
 * a held region over memory munmapped and mapped again at the same
 * address (its key dies with the old memory, as every key does, and a
 * new ODP registration reaches the new memory);
 * prefetch (pages resident afterwards, by mincore) then a transfer; and
 * the policy: on refuses what ODP cannot serve with -EOPNOTSUPP, a bad
 * policy is -EINVAL.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define WAIT_MS 20000
#include "rdmaxfer_test_util.h"

static const char *addr;
static struct rdmaxfer_agent *cli, *srv;
static struct rdmaxfer_peer *cp, *sp;
static struct rdmaxfer_odp_caps caps;	/* the server's */
static uint8_t *lbuf;			/* client's local buffer, 1 MiB */
static uint64_t *res;
static size_t psz;

#define LBUF_LEN	MiB

static int suite_init(void)
{
	struct rdmaxfer_agent_attr attr;

	psz = (size_t)sysconf(_SC_PAGESIZE);
	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_THREAD;
	attr.flags = RDMAXFER_AGENT_NO_ENV;
	attr.odp = RDMAXFER_ODP_AUTO;
	if (new_agent_pair(&attr, addr, &srv, &cli, &cp, &sp))
		return 1;
	rdmaxfer_agent_odp_caps(srv, &caps);
	lbuf = aligned_alloc(psz, LBUF_LEN);
	res = aligned_alloc(64, 64);
	return lbuf && res ? 0 : 1;
}

static int suite_clean(void)
{
	rdmaxfer_agent_destroy(cli);
	rdmaxfer_agent_destroy(srv);
	free(lbuf);
	free(res);
	return 0;
}

static uint8_t *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CU_ASSERT_FATAL(p != MAP_FAILED);
	return p;
}

/* Whether the server's auto policy serves access with ODP. */
static bool expect_odp(uint32_t access)
{
	uint32_t need = 0;

	if (access & RDMAXFER_ACCESS_REMOTE_WRITE)
		need |= RDMAXFER_ODP_OP_REMOTE_WRITE;
	if (access & RDMAXFER_ACCESS_REMOTE_READ)
		need |= RDMAXFER_ODP_OP_REMOTE_READ;
	if (access & RDMAXFER_ACCESS_REMOTE_ATOMIC)
		need |= RDMAXFER_ODP_OP_REMOTE_ATOMIC;
	return (need & ~caps.auto_ops) == 0;
}

/* Register an ODP-kind region on the server; check the kind it got. */
static struct rdmaxfer_mem *reg_odp(void *p, size_t len, uint32_t access,
				    struct rdmaxfer_desc *d)
{
	struct rdmaxfer_mem *m;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_register_access(srv, p, len,
							   RDMAXFER_MEM_ODP,
							   access, &m), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_is_odp(m), expect_odp(access));
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_desc(m, 0, 0, d), 0);
	CU_ASSERT_EQUAL(d->kind, expect_odp(access) ? RDMAXFER_MEM_ODP :
						      RDMAXFER_MEM_HOST);
	return m;
}

static void test_caps(void)
{
	rc_diag("server: policy %u general 0x%x rc 0x%x device_ops 0x%x bad 0x%x auto 0x%x prefetch %u",
		caps.policy, caps.general, caps.rc, caps.device_ops,
		caps.bad_ops, caps.auto_ops, caps.prefetch);
	rc_diag("%s", caps.selftest_msg);
	rc_diag("auto: %s", caps.reason[0] ? caps.reason : "ODP for all");
	CU_ASSERT_EQUAL(caps.policy, RDMAXFER_ODP_AUTO);
	CU_ASSERT_EQUAL(caps.auto_ops, caps.device_ops & ~caps.bad_ops);
	/* a fallback always says why */
	CU_ASSERT(caps.auto_ops == RDMAXFER_ODP_OPS || caps.reason[0]);
	/* rxe never offers implicit ODP (7.3: EOPNOTSUPP, 6.1: EINVAL) */
	if (!(caps.general & IBV_ODP_SUPPORT_IMPLICIT))
		CU_ASSERT_EQUAL(caps.implicit, 0);
}

/* WRITE then READ back through an ODP-kind region of never-touched
 * memory, len bytes (1 packet and many). */
static void write_read(size_t len, uint32_t seed)
{
	uint32_t acc = RDMAXFER_ACCESS_REMOTE_WRITE | RDMAXFER_ACCESS_REMOTE_READ;
	size_t rlen = (len + psz - 1) & ~(psz - 1);
	uint8_t *r = map(rlen);
	struct rdmaxfer_iov iov = { lbuf, len };
	struct rdmaxfer_desc d;
	struct rdmaxfer_mem *m = reg_odp(r, rlen, acc, &d);
	size_t bad;

	d.len = len;
	fill(lbuf, len, seed);
	CU_ASSERT_EQUAL(xfer_sync(cp, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL), 0);
	bad = first_bad(r, len, seed);
	if (bad != len)
		rc_diag("WRITE %zu B: first wrong byte %zu", len, bad);
	CU_ASSERT_EQUAL(bad, len);
	memset(lbuf, 0, len);
	fill(r, len, seed + 1);
	CU_ASSERT_EQUAL(xfer_sync(cp, RDMAXFER_OP_READ, &iov, &d, 1, NULL), 0);
	bad = first_bad(lbuf, len, seed + 1);
	if (bad != len)
		rc_diag("READ %zu B: first wrong byte %zu", len, bad);
	CU_ASSERT_EQUAL(bad, len);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	munmap(r, rlen);
}

static void test_write_read_1pkt(void)
{
	write_read(512, 1);
}

static void test_write_read_many(void)
{
	write_read(256 * 1024 + 100, 2);
}

static uint64_t odp_fadd(const struct rdmaxfer_desc *d, uint64_t off, uint64_t v)
{
	struct rdmaxfer_req *req;
	int ret;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_atomic_prepare(cp, RDMAXFER_OP_FADD, d,
						      off, v, 0, res, &req), 0);
	ret = rdmaxfer_req_post(req);
	if (!ret)
		ret = rdmaxfer_req_wait(req, WAIT_MS);
	CU_ASSERT_EQUAL(ret, 0);
	rdmaxfer_req_free(req);
	return *res;
}

/* Atomics on never-touched ODP memory, at several page offsets. */
static void test_atomic(void)
{
	uint8_t *r = map(2 * psz);
	struct rdmaxfer_desc d;
	struct rdmaxfer_mem *m = reg_odp(r, 2 * psz,
					 RDMAXFER_ACCESS_REMOTE_ATOMIC, &d);
	uint64_t *w1 = (uint64_t *)(r + 8), *w2 = (uint64_t *)(r + psz + 2048);

	CU_ASSERT_EQUAL(odp_fadd(&d, 8, 5), 0);	/* never touched: zero */
	CU_ASSERT_EQUAL(*w1, 5);
	*w2 = 100;
	CU_ASSERT_EQUAL(odp_fadd(&d, psz + 2048, 11), 100);
	CU_ASSERT_EQUAL(*w2, 111);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	munmap(r, 2 * psz);
}

/*
 * A region held across munmap + mmap of the same address: an ODP MR
 * follows its address, so its held key must die with the old memory
 * (rdmaxfer_mem_register(3), Security) rather than reach the new; the
 * server's progress thread applies the unmap as soon as the cache's fd
 * says so (it used to within its 100 ms period, which this test raced).
 * A new registration of the same address then reaches the new memory.
 * Runs only where the region really is ODP.
 */
static void test_remap(void)
{
	uint8_t *r = map(psz), *r2;
	struct rdmaxfer_desc d, d2;
	struct rdmaxfer_mem *m = reg_odp(r, psz, RDMAXFER_ACCESS_REMOTE_ATOMIC,
					 &d);
	int i;

	if (!rdmaxfer_mem_is_odp(m)) {
		rdmaxfer_mem_deregister(m);
		munmap(r, psz);
		rc_skip("atomics not served by ODP here (%s)", caps.reason);
		return;
	}
	*(uint64_t *)r = 40;
	CU_ASSERT_EQUAL(odp_fadd(&d, 0, 2), 40);
	CU_ASSERT_EQUAL(munmap(r, psz), 0);
	r2 = mmap(r, psz, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CU_ASSERT_FATAL(r2 == r);
	*(uint64_t *)r2 = 7000;
	/* the held key died (no remote access tries it: that would fail
	 * the peer); 2 s is far past the sweep */
	for (i = 0; i < 200 && rdmaxfer_mem_desc(m, 0, 8, &d2) != -ESTALE;
	     i++)
		usleep(10000);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(m, 0, 8, &d2), -ESTALE);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	m = reg_odp(r2, psz, RDMAXFER_ACCESS_REMOTE_ATOMIC, &d2);
	CU_ASSERT_EQUAL(odp_fadd(&d2, 0, 3), 7000);
	CU_ASSERT_EQUAL(*(uint64_t *)r2, 7003);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	munmap(r2, psz);
}

static size_t resident_pages(void *p, size_t len)
{
	unsigned char vec[64];
	size_t i, n = len / psz, r = 0;

	CU_ASSERT_FATAL(n <= sizeof(vec));
	CU_ASSERT_FATAL(mincore(p, len, vec) == 0);
	for (i = 0; i < n; i++)
		r += vec[i] & 1;
	return r;
}

/* Prefetch a never-touched region (pages resident afterwards; checked
 * before registering, since a pinned fallback would fault them in
 * itself), then register it and WRITE into it. */
static void test_prefetch(void)
{
	size_t len = 16 * psz;
	uint8_t *r = map(len);
	struct rdmaxfer_iov piov = { r, len }, iov = { lbuf, len };
	struct rdmaxfer_desc d;
	struct rdmaxfer_mem *m;

	CU_ASSERT_EQUAL(resident_pages(r, len), 0);
	CU_ASSERT_EQUAL(rdmaxfer_prefetch(srv, &piov, 1,
					  RDMAXFER_PREFETCH_WRITE), 0);
	CU_ASSERT_EQUAL(resident_pages(r, len), 16);
	m = reg_odp(r, len, RDMAXFER_ACCESS_REMOTE_WRITE, &d);
	CU_ASSERT_EQUAL(rdmaxfer_prefetch(srv, &piov, 1,
					  RDMAXFER_PREFETCH_NO_FAULT), 0);
	fill(lbuf, len, 9);
	CU_ASSERT_EQUAL(xfer_sync(cp, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL), 0);
	CU_ASSERT_EQUAL(first_bad(r, len, 9), len);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m), 0);
	munmap(r, len);
}

static void test_prefetch_bad(void)
{
	uint8_t *r = map(psz);
	struct rdmaxfer_iov iov = { r, psz };

	CU_ASSERT_EQUAL(rdmaxfer_prefetch(NULL, &iov, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_prefetch(srv, &iov, 1, 1U << 7), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_prefetch(srv, NULL, 1, 0), -EINVAL);
	iov.len = 0;
	CU_ASSERT_EQUAL(rdmaxfer_prefetch(srv, &iov, 1, 0), -EINVAL);
	iov.len = psz;
	munmap(r, psz);
	CU_ASSERT_EQUAL(rdmaxfer_prefetch(srv, &iov, 1, 0), -EFAULT);
}

/* Policy on: the agent is refused on a device without explicit ODP; a
 * region needing an operation auto leaves out is refused. */
static void test_policy_on(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_mem *m;
	uint8_t *r = map(psz);
	int ret;

	rdmaxfer_agent_attr_init(&attr);
	attr.flags = RDMAXFER_AGENT_NO_ENV;
	attr.odp = RDMAXFER_ODP_ON;
	ret = rdmaxfer_agent_create(&attr, &a);
	if (!caps.device_ops) {
		CU_ASSERT_EQUAL(ret, -EOPNOTSUPP);
		munmap(r, psz);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	ret = rdmaxfer_mem_register_access(a, r, psz, RDMAXFER_MEM_ODP,
					   RDMAXFER_ACCESS_REMOTE, &m);
	if (expect_odp(RDMAXFER_ACCESS_REMOTE)) {
		CU_ASSERT_EQUAL(ret, 0);
		if (!ret) {
			CU_ASSERT_EQUAL(rdmaxfer_mem_is_odp(m), 1);
			rdmaxfer_mem_deregister(m);
		}
	} else {
		CU_ASSERT_EQUAL(ret, -EOPNOTSUPP);
	}
	rdmaxfer_agent_destroy(a);
	munmap(r, psz);
}

/* Policy off and bad policies. */
static void test_policy_off_bad(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_odp_caps c;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_mem *m;
	uint8_t *r = map(psz);

	rdmaxfer_agent_attr_init(&attr);
	attr.flags = RDMAXFER_AGENT_NO_ENV;
	attr.odp = RDMAXFER_ODP_OFF;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, &a), 0);
	CU_ASSERT_EQUAL(rdmaxfer_agent_odp_caps(a, &c), 0);
	CU_ASSERT_EQUAL(c.auto_ops, 0);
	CU_ASSERT_EQUAL(c.selftest, RDMAXFER_ODP_SELFTEST_NONE);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_access(a, r, psz,
						     RDMAXFER_MEM_ODP,
						     RDMAXFER_ACCESS_REMOTE,
						     &m), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_is_odp(m), 0);
	rdmaxfer_mem_deregister(m);
	rdmaxfer_agent_destroy(a);
	munmap(r, psz);

	attr.odp = 17;
	CU_ASSERT_EQUAL(rdmaxfer_agent_create(&attr, &a), -EINVAL);
	attr.odp = RDMAXFER_ODP_DEFAULT;
	attr.flags = 0;
	setenv("RDMAXFER_ODP", "sometimes", 1);
	CU_ASSERT_EQUAL(rdmaxfer_agent_create(&attr, &a), -EINVAL);
	unsetenv("RDMAXFER_ODP");
	CU_ASSERT_EQUAL(rdmaxfer_agent_odp_caps(NULL, &c), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_is_odp(NULL), -EINVAL);
}

static const struct rc_test_case cases[] = {
	{ "caps", test_caps },
	{ "write_read_1pkt", test_write_read_1pkt },
	{ "write_read_many", test_write_read_many },
	{ "atomic", test_atomic },
	{ "remap", test_remap },
	{ "prefetch", test_prefetch },
	{ "prefetch_bad", test_prefetch_bad },
	{ "policy_on", test_policy_on },
	{ "policy_off_bad", test_policy_off_bad },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	addr = getenv("RXE_ADDR");
	if (!addr)
		rc_skip_all("RXE_ADDR not set (runs in the VM suite rdmaxfer)");
	rc_add_suite("odp", suite_init, suite_clean, cases);
	return rc_test_main(argc, argv);
}
