// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_dmabuf_args.c - what rdmaxfer_mem_register_dmabuf() and
 * its companions refuse before any device is asked, on the host.
 *
 * Built with the library's own dmabuf.c against an agent with no device
 * (no PD): every case here must be refused by the argument checks, so
 * the registration helpers of mem.c are replaced by versions that count
 * calls and fail: a call reaching one is a test failure (the check let
 * something through).  Cases: NULL arguments, len 0, unknown access,
 * flags and policy, reserved fields, backing_offset without its flag, a
 * closed fd, a memfd and a regular file (not dma-bufs), an unknown
 * $RDMAXFER_DMABUF (and that NO_ENV ignores it), the query and sync
 * calls on a NULL or non-dma-buf region; and no fd is left open.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "rc_test.h"
#include "rdmaxfer_dmabuf_test.h"

static struct rdmaxfer_agent agent;
static int reached;		/* calls that got past the checks */

/* mem.c, as far as dmabuf.c needs it: never reached from these cases */
int rx_mem_register(struct rdmaxfer_agent *a, struct regcache *cache,
		    void *addr, size_t len, enum rdmaxfer_mem_kind kind,
		    uint32_t access, unsigned int flags,
		    struct rdmaxfer_mem **memp)
{
	(void)a, (void)cache, (void)addr, (void)len, (void)kind;
	(void)access, (void)flags, (void)memp;
	reached++;
	return -ENOSYS;
}

void rx_mem_add(struct rdmaxfer_mem *mem)
{
	(void)mem;
	reached++;
}

uint32_t rx_ibv_access(uint32_t access)
{
	(void)access;
	reached++;
	return 0;
}

static int suite_init(void)
{
	pthread_mutex_init(&agent.lock, NULL);
	snprintf(agent.info.device, sizeof(agent.info.device), "nodev0");
	agent.attr.flags = RDMAXFER_AGENT_NO_ENV;
	return 0;
}

static int suite_clean(void)
{
	pthread_mutex_destroy(&agent.lock);
	return 0;
}

static int reg(const struct rdmaxfer_dmabuf_attr *a)
{
	struct rdmaxfer_mem *m = NULL;
	int ret = rdmaxfer_mem_register_dmabuf(&agent, a, &m);

	CU_ASSERT_PTR_NULL(m);
	return ret;
}

static void test_args(void)
{
	struct rdmaxfer_dmabuf_attr a, ok;
	struct rdmaxfer_mem *m = NULL;
	int memfd, fds;

	memfd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
	CU_ASSERT_FATAL(memfd >= 0);
	CU_ASSERT_EQUAL(ftruncate(memfd, 1 << 20), 0);
	memset(&ok, 0, sizeof(ok));
	ok.fd = memfd;
	ok.len = 4096;
	ok.access = RDMAXFER_ACCESS_REMOTE;
	fds = count_fds();

	CU_ASSERT_EQUAL(rdmaxfer_mem_register_dmabuf(NULL, &ok, &m), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_dmabuf(&agent, NULL, &m),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_register_dmabuf(&agent, &ok, NULL),
			-EINVAL);
#define BAD(field, value, err) do {			\
	a = ok;						\
	a.field = value;				\
	CU_ASSERT_EQUAL(reg(&a), err);			\
} while (0)
	BAD(len, 0, -EINVAL);
	BAD(access, 1U << 3, -EINVAL);
	BAD(flags, 1U << 2, -EINVAL);
	BAD(policy, RDMAXFER_DMABUF_OFF + 1, -EINVAL);
	BAD(reserved32, 1, -EINVAL);
	BAD(reserved[0], 1, -EINVAL);
	BAD(backing_offset, 4096, -EINVAL);
	BAD(fd, -1, -EBADF);
	BAD(fd, 1000, -EBADF);		/* not open */
	BAD(fd, memfd, -EINVAL);	/* a memfd is not a dma-buf */
#undef BAD
	CU_ASSERT_EQUAL(reached, 0);
	CU_ASSERT_EQUAL(count_fds(), fds);
	close(memfd);
}

/* A regular file is not a dma-buf either. */
static void test_regular_file(void)
{
	char tmpl[] = "/tmp/rdmaxfer-dmabuf-args-XXXXXX";
	struct rdmaxfer_dmabuf_attr a;
	int fd = mkstemp(tmpl);

	CU_ASSERT_FATAL(fd >= 0);
	unlink(tmpl);
	CU_ASSERT_EQUAL(ftruncate(fd, 1 << 16), 0);
	memset(&a, 0, sizeof(a));
	a.fd = fd;
	a.len = 4096;
	CU_ASSERT_EQUAL(reg(&a), -EINVAL);
	a.policy = RDMAXFER_DMABUF_ON;
	CU_ASSERT_EQUAL(reg(&a), -EINVAL);
	CU_ASSERT_EQUAL(reached, 0);
	close(fd);
}

/* $RDMAXFER_DMABUF: an unknown value fails a default-policy
 * registration, unless the agent ignores the environment. */
static void test_env(void)
{
	struct rdmaxfer_dmabuf_attr a;
	int memfd = memfd_create("env", MFD_CLOEXEC);

	CU_ASSERT_FATAL(memfd >= 0);
	memset(&a, 0, sizeof(a));
	a.fd = memfd;
	a.len = 4096;
	setenv("RDMAXFER_DMABUF", "sometimes", 1);
	agent.attr.flags = 0;
	CU_ASSERT_EQUAL(reg(&a), -EINVAL);
	/* an explicit policy does not read the variable: the fd is next */
	a.policy = RDMAXFER_DMABUF_OFF;
	a.fd = -1;
	CU_ASSERT_EQUAL(reg(&a), -EBADF);
	a.policy = RDMAXFER_DMABUF_DEFAULT;
	agent.attr.flags = RDMAXFER_AGENT_NO_ENV;
	CU_ASSERT_EQUAL(reg(&a), -EBADF);
	unsetenv("RDMAXFER_DMABUF");
	CU_ASSERT_EQUAL(reached, 0);
	close(memfd);
}

static void test_query_sync(void)
{
	struct rdmaxfer_dmabuf_info info;
	struct rdmaxfer_dmabuf_caps caps;
	struct rdmaxfer_mem host;

	memset(&host, 0, sizeof(host));
	host.kind = RDMAXFER_MEM_HOST;
	CU_ASSERT_EQUAL(rdmaxfer_mem_dmabuf_query(NULL, &info), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_dmabuf_query(&host, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_mem_dmabuf_query(&host, &info), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_dmabuf_sync(NULL, RDMAXFER_DMABUF_SYNC_READ),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_dmabuf_sync(&host, RDMAXFER_DMABUF_SYNC_READ),
			-EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_agent_dmabuf_caps(NULL, &caps), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_agent_dmabuf_caps(&agent, NULL), -EINVAL);
}

int main(int argc, char **argv)
{
	static const struct rc_test_case cases[] = {
		{ "args", test_args },
		{ "regular_file", test_regular_file },
		{ "env", test_env },
		{ "query_sync", test_query_sync },
		{ NULL, NULL },
	};

	rc_add_suite("dmabuf_args", suite_init, suite_clean, cases);
	return rc_test_main(argc, argv);
}
