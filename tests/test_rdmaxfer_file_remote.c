// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_file_remote.c - the remote legs of files as endpoints on
 * rxe (VM suite "file"): file -> remote peer and remote peer -> file
 * through the staging pool, io_uring and pread/pwrite backends, sizes
 * from 1 byte to beyond the pool, O_DIRECT where the directory takes it,
 * contents compared; a remote descriptor too small, a read-only
 * destination, a short file, and an RDMA-stage error (a bad rkey) last.
 * Needs RXE_ADDR (exit 77 without it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmaxfer.h"
#include "rc_test.h"

#define WAIT_MS 20000	/* every blocking call of the test */
#include "rdmaxfer_test_util.h"

#define CHUNK	65536
#define QD	4
#define RLEN	((size_t)CHUNK * QD * 3)	/* three pools' worth */

static const char *addr;
static struct rdmaxfer_agent *srv, *cli;
static struct rdmaxfer_peer *cp, *sp;
static struct rdmaxfer_mem *rmem;
static struct rdmaxfer_desc rdesc;
static char *rbuf, *lbuf;
static char path[300];

static int suite_init(void)
{
	struct rdmaxfer_agent_attr attr;
	const char *dir = getenv("RDMAXFER_FILE_DIR");

	snprintf(path, sizeof(path), "%s/rdmaxfer-file-remote.%d",
		 dir && *dir ? dir : "/tmp", (int)getpid());
	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_THREAD;
	attr.flags = RDMAXFER_AGENT_NO_ENV;
	if (new_agent_pair(&attr, addr, &srv, &cli, &cp, &sp))
		return 1;
	if (posix_memalign((void **)&rbuf, 4096, RLEN) ||
	    posix_memalign((void **)&lbuf, 4096, RLEN))
		return 1;
	if (rdmaxfer_mem_register(srv, rbuf, RLEN, RDMAXFER_MEM_HOST, &rmem) ||
	    rdmaxfer_mem_desc(rmem, 0, 0, &rdesc))
		return 1;
	return 0;
}

static int suite_clean(void)
{
	unlink(path);
	rdmaxfer_mem_deregister(rmem);
	rdmaxfer_agent_destroy(cli);
	rdmaxfer_agent_destroy(srv);
	free(rbuf);
	free(lbuf);
	return 0;
}

static struct rdmaxfer_file *engine(uint32_t flags)
{
	struct rdmaxfer_file_attr attr = {
		.chunk_size = CHUNK, .queue_depth = QD, .flags = flags,
	};
	struct rdmaxfer_file *f = NULL;

	CU_ASSERT_EQUAL(rdmaxfer_file_create(&attr, &f), 0);
	return f;
}

/* file -> remote, then remote (changed) -> file, len bytes */
static void both_ways(struct rdmaxfer_file *f, size_t len, int oflags)
{
	struct rdmaxfer_file_desc d;
	int fd, ret;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | oflags, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	fill((uint8_t *)lbuf, len, (uint32_t)len);
	CU_ASSERT_FATAL(pwrite(fd, lbuf, len, 0) == (ssize_t)len);
	memset(rbuf, 0, RLEN);
	d = (struct rdmaxfer_file_desc){ fd, 0, len };
	ret = rdmaxfer_file_to_peer(f, cp, &d, &rdesc, WAIT_MS);
	CU_ASSERT_EQUAL(ret, 0);
	if (ret)
		rc_diag("to_peer %zu: %s", len, rdmaxfer_file_msg(f));
	CU_ASSERT(!memcmp(rbuf, lbuf, len));
	CU_ASSERT_EQUAL(rbuf[len], 0);	/* nothing past the range */

	fill((uint8_t *)rbuf, len, (uint32_t)len + 1);
	ret = rdmaxfer_file_from_peer(f, cp, &rdesc, &d, WAIT_MS);
	CU_ASSERT_EQUAL(ret, 0);
	if (ret)
		rc_diag("from_peer %zu: %s", len, rdmaxfer_file_msg(f));
	CU_ASSERT(pread(fd, lbuf, len, 0) == (ssize_t)len);
	CU_ASSERT(!memcmp(rbuf, lbuf, len));
	close(fd);
}

static void sizes(uint32_t flags)
{
	static const size_t lens[] = { 1, 4097, CHUNK, (size_t)CHUNK * QD,
				       RLEN - 4095 };
	struct rdmaxfer_file *f = engine(flags);

	CU_ASSERT_FATAL(f != NULL);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		both_ways(f, lens[i], 0);
	rdmaxfer_file_destroy(f);
}

static void test_uring(void)
{
	sizes(RDMAXFER_FILE_REQUIRE_URING);
}

static void test_pread(void)
{
	sizes(RDMAXFER_FILE_NO_URING);
}

static void test_direct(void)
{
	struct rdmaxfer_file *f = engine(0);
	int fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0600);

	CU_ASSERT_FATAL(f != NULL);
	if (fd < 0) {
		rc_skip("no O_DIRECT here: %s", strerror(errno));
		rdmaxfer_file_destroy(f);
		return;
	}
	close(fd);
	both_ways(f, RLEN - 4096, O_DIRECT);
	both_ways(f, 4096, O_DIRECT);
	rdmaxfer_file_destroy(f);
}

static void test_bad(void)
{
	struct rdmaxfer_file *f = engine(0);
	struct rdmaxfer_desc small = rdesc, bad = rdesc;
	struct rdmaxfer_file_desc d;
	int fd, rd;

	CU_ASSERT_FATAL(f != NULL);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	rd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0 && rd >= 0);
	fill((uint8_t *)lbuf, 8192, 5);
	CU_ASSERT_FATAL(pwrite(fd, lbuf, 8192, 0) == 8192);
	small.len = 4096;
	d = (struct rdmaxfer_file_desc){ fd, 0, 8192 };
	CU_ASSERT_EQUAL(rdmaxfer_file_to_peer(f, cp, &d, &small, WAIT_MS),
			-ERANGE);
	CU_ASSERT_EQUAL(rdmaxfer_file_from_peer(f, cp, &small, &d, WAIT_MS),
			-ERANGE);
	d = (struct rdmaxfer_file_desc){ rd, 0, 4096 };
	CU_ASSERT_EQUAL(rdmaxfer_file_from_peer(f, cp, &rdesc, &d, WAIT_MS),
			-EBADF);
	d = (struct rdmaxfer_file_desc){ fd, 4096, 8192 };
	CU_ASSERT_EQUAL(rdmaxfer_file_to_peer(f, cp, &d, &rdesc, WAIT_MS),
			-ENODATA);
	CU_ASSERT_EQUAL(rdmaxfer_file_to_peer(f, NULL, &d, &rdesc, WAIT_MS),
			-EINVAL);
	/* the RDMA stage fails: a wrong rkey; the file is not touched */
	bad.rkey ^= 0x5a5a00;
	d = (struct rdmaxfer_file_desc){ fd, 0, 8192 };
	CU_ASSERT(rdmaxfer_file_from_peer(f, cp, &bad, &d, WAIT_MS) < 0);
	rc_diag("bad rkey: %s", rdmaxfer_file_msg(f));
	CU_ASSERT(strstr(rdmaxfer_file_msg(f), "RDMA READ") != NULL);
	fill((uint8_t *)rbuf, 8192, 5);
	CU_ASSERT(pread(fd, rbuf, 8192, 0) == 8192);
	CU_ASSERT(!memcmp(rbuf, lbuf, 8192));
	close(fd);
	close(rd);
	rdmaxfer_file_destroy(f);
}

static const struct rc_test_case cases[] = {
	{ "io_uring_both_ways", test_uring },
	{ "pread_both_ways", test_pread },
	{ "o_direct_both_ways", test_direct },
	{ "bad_input_and_rdma_error", test_bad },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	addr = getenv("RXE_ADDR");
	if (!addr)
		rc_skip_all("RXE_ADDR not set: needs an RDMA device (VM suite file)");
	rc_add_suite("rdmaxfer_file_remote", suite_init, suite_clean, cases);
	return rc_test_main(argc, argv);
}
