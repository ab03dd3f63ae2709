// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_uffd_agents.c - two librdmaxfer agents (one per NIC in a
 * real deployment; both on rxe0 here) in one process, each with its own
 * registration cache under the userfaultfd monitor: both must cache (the
 * second agent's cache used to get EBUSY from UFFDIO_REGISTER on every
 * range the first one watched and registered everything uncached), both
 * must see an munmap, and destroying one must leave the other caching.
 *
 * Needs an RDMA device ($RXE_DEV) and userfaultfd (VM suite regcache).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rdmaxfer.h"
#include "rc_test.h"

#define LEN	(256 * 1024)

static struct rdmaxfer_agent *agent[2];

static int new_agent(struct rdmaxfer_agent **ap)
{
	struct rdmaxfer_agent_attr attr;

	rdmaxfer_agent_attr_init(&attr);
	attr.device = getenv("RXE_DEV");
	attr.cache_monitor = REGCACHE_MONITOR_UFFD;
	return rdmaxfer_agent_create(&attr, ap);
}

static struct regcache_stats stats(struct rdmaxfer_agent *a)
{
	struct regcache_stats st;

	memset(&st, 0, sizeof(st));
	CU_ASSERT_EQUAL(rdmaxfer_agent_cache_stats(a, &st), 0);
	return st;
}

/*
 * Register the buffer twice in agent a (the second while the first is
 * held) and let both go.  Local-only memory (access 0): the cache keeps
 * it after the last deregister, which is what this test watches; memory
 * with remote rights is by default not kept past its last handle.
 */
static void register_twice(struct rdmaxfer_agent *a, char *buf)
{
	struct rdmaxfer_mem *m1, *m2;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_register_access(a, buf, LEN,
			      RDMAXFER_MEM_HOST, 0, &m1), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_register_access(a, buf, LEN,
			      RDMAXFER_MEM_HOST, 0, &m2), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m2), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_deregister(m1), 0);
}

static void t_two_agents(void)
{
	struct regcache_stats s0, s1;
	char *buf;
	void *p;
	int i;

	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(buf != MAP_FAILED);
	memset(buf, 1, LEN);
	for (i = 0; i < 2; i++)
		register_twice(agent[i], buf);
	s0 = stats(agent[0]);
	s1 = stats(agent[1]);
	rc_diag("agent 0: hits %llu uncached %llu; agent 1: hits %llu "
		"uncached %llu uffd_foreign %llu",
		(unsigned long long)s0.hits, (unsigned long long)s0.uncached,
		(unsigned long long)s1.hits, (unsigned long long)s1.uncached,
		(unsigned long long)s1.uffd_foreign);
	/* Both cache: the second registration in each is a hit. */
	CU_ASSERT(s0.hits >= 1 && s1.hits >= 1);
	CU_ASSERT_EQUAL(s0.uncached, 0);
	CU_ASSERT_EQUAL(s1.uncached, 0);
	CU_ASSERT_EQUAL(s0.uffd_foreign + s1.uffd_foreign, 0);
	CU_ASSERT(s0.entries >= 1 && s1.entries >= 1);

	/* One munmap reaches both caches. */
	CU_ASSERT_EQUAL_FATAL(munmap(buf, LEN), 0);
	p = mmap(buf, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		 MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != buf) {
		/*
		 * Another thread took the hole first (a sanitizer runtime's
		 * mmap from a monitor thread can): the address is not ours.
		 */
		CU_ASSERT_FATAL(p == MAP_FAILED && errno == EEXIST);
		rc_skip("%p was mapped by another thread before the test could map it again",
			(void *)buf);
		return;
	}
	memset(buf, 2, LEN);
	for (i = 0; i < 2; i++)
		register_twice(agent[i], buf);
	CU_ASSERT(stats(agent[0]).invalidations >= 1);
	CU_ASSERT(stats(agent[1]).invalidations >= 1);

	/* The first agent goes; the second keeps caching. */
	rdmaxfer_agent_destroy(agent[0]);
	agent[0] = NULL;
	s1 = stats(agent[1]);
	register_twice(agent[1], buf);
	CU_ASSERT(stats(agent[1]).hits >= s1.hits + 2);
	CU_ASSERT_EQUAL(stats(agent[1]).uncached, 0);
	munmap(buf, LEN);
}

static const struct rc_test_case cases[] = {
	{ "two_agents", t_two_agents },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	struct rdmaxfer_agent_info info;
	int ret, rc, i;

	for (i = 0; i < 2; i++) {
		ret = new_agent(&agent[i]);
		if (ret)
			rc_skip_all("rdmaxfer_agent_create: %s", strerror(-ret));
	}
	if (rdmaxfer_agent_query(agent[0], &info) ||
	    strcmp(info.cache_monitor, "uffd"))
		rc_skip_all("the agents' cache monitor is not uffd");
	rc_add_suite("uffd-agents", NULL, NULL, cases);
	rc = rc_test_main(argc, argv);
	for (i = 0; i < 2; i++)
		if (agent[i])
			rdmaxfer_agent_destroy(agent[i]);
	return rc;
}
