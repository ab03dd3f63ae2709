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
#include "rdmaxfer_file_test.h"

#define CHUNK	65536
#define QD	4
#define RLEN	((size_t)CHUNK * QD * 3)	/* three pools' worth */
/* librdmaxfer's RX_FLUSH_TIMEOUT_MS (a cancel's bound is twice it) */
#define RX_FLUSH_BOUND_S	2.0

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

/* ------------------------------------------- requests (LIBRDMAXFER_1.8) */

/* A file of len bytes of pattern seed at path, open read-write. */
static int pattern_fd(size_t len, uint32_t seed, int oflags)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | oflags, 0600);

	CU_ASSERT_FATAL(fd >= 0);
	fill((uint8_t *)lbuf, len, seed);
	CU_ASSERT_FATAL(pwrite(fd, lbuf, len, 0) == (ssize_t)len);
	return fd;
}

/* The client's peer, reconnected if an earlier case failed it. */
static void connected(void)
{
	if (rdmaxfer_peer_state(cp) != RDMAXFER_PEER_CONNECTED)
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_peer_reconnect(cp, WAIT_MS), 0);
}

enum drive { BY_WAIT, BY_TEST, BY_PROGRESS };

/* Post req and drive it to its end the way asked; its result. */
static int drive(struct rdmaxfer_agent *a, struct rdmaxfer_req *req,
		 enum drive how)
{
	double end = now_s() + WAIT_MS / 1000.0;
	int ret = rdmaxfer_req_post(req);

	if (ret)
		return ret;
	if (how == BY_WAIT)
		return rdmaxfer_req_wait(req, WAIT_MS);
	for (;;) {
		if (how == BY_PROGRESS) {
			/* progress alone moves it; test only reads */
			CU_ASSERT(rdmaxfer_progress(a) >= 0);
		}
		ret = rdmaxfer_req_test(req);
		if (ret != -EINPROGRESS || now_s() > end)
			return ret;
	}
}

/*
 * A file <-> remote round trip as requests on agent a's peer p, driven by
 * wait, test or progress; results, bytes, and reposting the same request.
 */
static void req_round_trip(struct rdmaxfer_agent *a, struct rdmaxfer_peer *p,
			   uint32_t flags, enum drive how)
{
	struct rdmaxfer_file *f = engine(flags);
	struct rdmaxfer_req *to = NULL, *from = NULL;
	struct rdmaxfer_file_result res;
	size_t len = RLEN - 4095;
	struct rdmaxfer_file_desc d;
	int fd, ret;

	CU_ASSERT_FATAL(f != NULL);
	fd = pattern_fd(len, 21, 0);
	d = (struct rdmaxfer_file_desc){ fd, 0, len };
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_prepare(f, p, RDMAXFER_OP_WRITE,
						    &d, &rdesc, &to), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_prepare(f, p, RDMAXFER_OP_READ,
						    &d, &rdesc, &from), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_test(to), -EALREADY);
	CU_ASSERT_EQUAL(rdmaxfer_req_cancel(to), -EALREADY);
	CU_ASSERT_EQUAL(rdmaxfer_req_bytes(to), len);
	/* twice by wait: a request is posted again once it has ended */
	for (int round = 0; round < (how == BY_WAIT ? 2 : 1); round++) {
		memset(rbuf, 0, RLEN);
		ret = drive(a, to, how);
		CU_ASSERT_EQUAL(ret, 0);
		if (ret)
			rc_diag("to_peer (drive %d): %d %s", how, ret,
				rdmaxfer_req_strerror(to));
		CU_ASSERT(!memcmp(rbuf, lbuf, len));
		CU_ASSERT_EQUAL(rbuf[len], 0);
		CU_ASSERT_EQUAL(rdmaxfer_file_req_result(to, &res), 0);
		CU_ASSERT(res.err == 0 && res.done == len && res.prefix == len);
		fill((uint8_t *)rbuf, len, 22 + round);
		ret = drive(a, from, how);
		CU_ASSERT_EQUAL(ret, 0);
		CU_ASSERT(pread(fd, lbuf, len, 0) == (ssize_t)len);
		CU_ASSERT(!memcmp(rbuf, lbuf, len));
	}
	/* one request of an engine at a time; freed only when not active */
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post(to), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(from), -EBUSY);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(to), -EBUSY);
	ret = rdmaxfer_req_free(to);
	CU_ASSERT(ret == -EBUSY || ret == 0);
	if (ret) {
		CU_ASSERT_EQUAL(rdmaxfer_req_wait(to, WAIT_MS), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_free(to), 0);
	}
	CU_ASSERT_EQUAL(rdmaxfer_req_free(from), 0);
	close(fd);
	rdmaxfer_file_destroy(f);
}

static void test_requests(void)
{
	int fds = open_fds();

	connected();
	req_round_trip(cli, cp, 0, BY_WAIT);
	req_round_trip(cli, cp, 0, BY_TEST);
	req_round_trip(cli, cp, 0, BY_PROGRESS);
	req_round_trip(cli, cp, RDMAXFER_FILE_NO_URING, BY_WAIT);
	CU_ASSERT_EQUAL(open_fds(), fds);
}

/* The same with a client agent in caller progress mode (no thread). */
static void test_requests_caller_mode(void)
{
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p, *sp2;
	uint16_t port;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_CALLER;
	attr.flags = RDMAXFER_AGENT_NO_ENV;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_agent_create(&attr, &a), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_listen_port(srv, &port), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_connect(a, addr, port, WAIT_MS, &p), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_accept(srv, WAIT_MS, &sp2), 0);
	req_round_trip(a, p, 0, BY_WAIT);
	req_round_trip(a, p, 0, BY_PROGRESS);
	req_round_trip(a, p, RDMAXFER_FILE_NO_URING, BY_TEST);
	CU_ASSERT_EQUAL(rdmaxfer_peer_destroy(p), 0);
	rdmaxfer_agent_destroy(a);
	rdmaxfer_peer_destroy(sp2);
}

/*
 * Cancel and timeout: a request cancelled while in flight ends with
 * -ECANCELED within the bound, says what of the destination is complete
 * (and those bytes are right), and the engine and the peer work again; a
 * blocking call that times out returns -ETIMEDOUT promptly with nothing
 * left in flight.  Also: requests of an engine destroyed with them.
 */
static void test_cancel_timeout(void)
{
	struct rdmaxfer_file *f = engine(0);
	struct rdmaxfer_file_result res;
	struct rdmaxfer_file_info in;
	struct rdmaxfer_req *req, *xreq;
	struct rdmaxfer_file_desc d;
	struct rdmaxfer_desc sub;
	struct rdmaxfer_iov iov;
	int fd, fds = open_fds(), ret;
	double t;

	CU_ASSERT_FATAL(f != NULL);
	connected();
	/* remote -> file, cancelled at once */
	fd = pattern_fd(RLEN, 31, 0);
	fill((uint8_t *)rbuf, RLEN, 32);
	d = (struct rdmaxfer_file_desc){ fd, 0, RLEN };
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_prepare(f, cp, RDMAXFER_OP_READ,
						    &d, &rdesc, &req), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post(req), 0);
	/* once the first chunk is in the file: chunks are in flight */
	t = now_s() + WAIT_MS / 1000.0;
	do {
		ret = rdmaxfer_req_test(req);
		CU_ASSERT_EQUAL(rdmaxfer_file_req_result(req, &res), 0);
	} while (ret == -EINPROGRESS && !res.done && now_s() < t);
	CU_ASSERT_EQUAL(ret, -EINPROGRESS);
	CU_ASSERT_EQUAL(rdmaxfer_req_cancel(req), 0);
	t = now_s();
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), -ECANCELED);
	t = now_s() - t;
	CU_ASSERT_EQUAL(rdmaxfer_file_req_result(req, &res), 0);
	rc_diag("cancel: %.3f s to end, done %llu prefix %llu of %zu: %s", t,
		(unsigned long long)res.done, (unsigned long long)res.prefix,
		RLEN, rdmaxfer_req_strerror(req));
	CU_ASSERT_EQUAL(res.err, -ECANCELED);
	CU_ASSERT_EQUAL(res.stage, RDMAXFER_FILE_STAGE_CANCEL);
	CU_ASSERT(res.prefix <= res.done && res.done < RLEN);
	CU_ASSERT(res.done >= CHUNK);
	CU_ASSERT(pread(fd, lbuf, RLEN, 0) == (ssize_t)RLEN);
	CU_ASSERT(!memcmp(lbuf, rbuf, res.prefix));
	CU_ASSERT_EQUAL(rdmaxfer_req_cancel(req), -EALREADY);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(cp), RDMAXFER_PEER_CONNECTED);
	/* the engine and the peer are fine */
	both_ways(f, RLEN - 4095, 0);
	/* a blocking call given 1 ms for 3 pools' worth: -ETIMEDOUT, ends */
	fd = pattern_fd(RLEN, 33, 0);
	d = (struct rdmaxfer_file_desc){ fd, 0, RLEN };
	t = now_s();
	ret = rdmaxfer_file_to_peer(f, cp, &d, &rdesc, 1);
	t = now_s() - t;
	rc_diag("1 ms blocking call: %d after %.3f s: %s", ret, t,
		rdmaxfer_file_msg(f));
	CU_ASSERT(ret == -ETIMEDOUT || ret == 0);
	CU_ASSERT(t < 2.0 * RX_FLUSH_BOUND_S);
	CU_ASSERT_EQUAL(rdmaxfer_file_query(f, &in), 0);
	if (ret)
		CU_ASSERT_EQUAL(in.last.err, -ECANCELED);
	both_ways(f, 4097, 0);
	close(fd);
	/* RDMA requests cannot be cancelled */
	iov = (struct rdmaxfer_iov){ lbuf, 4096 };
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_desc_sub(&rdesc, 0, 4096, &sub), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(cp, RDMAXFER_OP_WRITE, &iov,
						    1, &sub, 1, NULL, &xreq),
			      0);
	CU_ASSERT_EQUAL(rdmaxfer_req_cancel(xreq), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(rdmaxfer_file_req_result(xreq, &res), -EINVAL);
	rdmaxfer_req_free(xreq);
	/* destroy with a request in flight and one idle: both go */
	fd = pattern_fd(RLEN, 34, 0);
	d = (struct rdmaxfer_file_desc){ fd, 0, RLEN };
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_prepare(f, cp, RDMAXFER_OP_WRITE,
						    &d, &rdesc, &req), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_prepare(f, cp, RDMAXFER_OP_READ,
						    &d, &rdesc, &xreq), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	rdmaxfer_file_destroy(f);
	close(fd);
	CU_ASSERT_EQUAL(open_fds(), fds);
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(cp), RDMAXFER_PEER_CONNECTED);
}

/* One file request of op over d, which must go the way flag says. */
static void one_way(struct rdmaxfer_file *f, enum rdmaxfer_op op,
		    const struct rdmaxfer_file_desc *d, uint32_t flag)
{
	struct rdmaxfer_file_result res;
	struct rdmaxfer_req *req;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_prepare(f, cp, op, d, &rdesc, &req),
			      0);
	CU_ASSERT_EQUAL(drive(cli, req, BY_WAIT), 0);
	CU_ASSERT_EQUAL(rdmaxfer_file_req_result(req, &res), 0);
	CU_ASSERT_EQUAL(res.flags, flag);
	if (res.flags != flag)
		rc_diag("op %d off %llu len %llu: flags %#x: %s", (int)op,
			(unsigned long long)d->offset,
			(unsigned long long)d->len, res.flags,
			rdmaxfer_file_msg(f));
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
}

/*
 * O_DIRECT on the remote legs: an aligned range goes direct, a misaligned
 * one (offset, length) falls back to buffered I/O and says so; both move
 * the right bytes both ways.
 */
static void test_direct_fallback(void)
{
	struct rdmaxfer_file *f = engine(0);
	struct rdmaxfer_file_desc d;
	static const struct { uint64_t off, len; uint32_t flag; } cases[] = {
		{ 0, RLEN - 4096, RDMAXFER_FILE_RES_DIRECT },
		{ 4096, 8192, RDMAXFER_FILE_RES_DIRECT },
		{ 1, 8192, RDMAXFER_FILE_RES_BUFFERED },
		{ 0, 4097, RDMAXFER_FILE_RES_BUFFERED },
		{ 513, RLEN - 8192 + 1, RDMAXFER_FILE_RES_BUFFERED },
	};
	int fd;

	CU_ASSERT_FATAL(f != NULL);
	connected();
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	if (fd < 0) {
		rc_skip("no O_DIRECT here: %s", strerror(errno));
		rdmaxfer_file_destroy(f);
		return;
	}
	close(fd);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t off = cases[i].off, len = cases[i].len;

		fd = pattern_fd(RLEN, 40 + i, O_DIRECT);
		memset(rbuf, 0, RLEN);
		d = (struct rdmaxfer_file_desc){ fd, off, len };
		one_way(f, RDMAXFER_OP_WRITE, &d, cases[i].flag);
		CU_ASSERT(!memcmp(rbuf, lbuf + off, len));
		fill((uint8_t *)rbuf, len, 50 + i);
		one_way(f, RDMAXFER_OP_READ, &d, cases[i].flag);
		CU_ASSERT(pread(fd, lbuf, RLEN, 0) == (ssize_t)RLEN);
		CU_ASSERT(!memcmp(rbuf, lbuf + off, len));
		close(fd);
	}
	rdmaxfer_file_destroy(f);
}

/*
 * One failure injected at each stage of a remote transfer: a clean
 * -errno at post (registration) or as the request's result, the stage
 * named, the complete prefix of the destination right, no descriptor
 * leaked, nothing hung; the engine works again afterwards (or, after a
 * failed registration, a new one does).
 */
static void inject_remote(const char *spec, bool to_peer, int want,
			  uint32_t stage)
{
	struct rdmaxfer_file_result res = { 0 };
	struct rdmaxfer_file_info in;
	struct rdmaxfer_file *f;
	struct rdmaxfer_file_desc d;
	struct rdmaxfer_req *req;
	int fd, fds = open_fds(), ret;

	setenv("RDMAXFER_FILE_INJECT", spec, 1);
	f = engine(0);
	unsetenv("RDMAXFER_FILE_INJECT");
	CU_ASSERT_FATAL(f != NULL);
	fd = pattern_fd(RLEN, 60, 0);
	if (to_peer)
		memset(rbuf, 0, RLEN);
	else
		fill((uint8_t *)rbuf, RLEN, 61);
	d = (struct rdmaxfer_file_desc){ fd, 0, RLEN };
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_prepare(f, cp, to_peer ?
						    RDMAXFER_OP_WRITE :
						    RDMAXFER_OP_READ,
						    &d, &rdesc, &req), 0);
	ret = drive(cli, req, BY_WAIT);
	rdmaxfer_file_req_result(req, &res);
	rc_diag("%s %s: %d, stage %u, done %llu prefix %llu: %s", spec,
		to_peer ? "to_peer" : "from_peer", ret, res.stage,
		(unsigned long long)res.done, (unsigned long long)res.prefix,
		rdmaxfer_file_msg(f));
	CU_ASSERT_EQUAL(ret, want);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	if (stage == RDMAXFER_FILE_STAGE_REGISTER) {
		/* refused at post: nothing started */
		CU_ASSERT(strstr(rdmaxfer_file_msg(f), "registration") != NULL);
		rdmaxfer_file_destroy(f);
		f = engine(0);
		CU_ASSERT_FATAL(f != NULL);
	} else {
		CU_ASSERT_EQUAL(res.err, want);
		CU_ASSERT_EQUAL(res.stage, stage);
		CU_ASSERT(res.prefix <= res.done && res.done <= RLEN);
		if (want)
			CU_ASSERT(res.prefix < RLEN);
		if (to_peer) {
			CU_ASSERT(!memcmp(rbuf, lbuf, res.prefix));
		} else {
			CU_ASSERT(pread(fd, lbuf, RLEN, 0) == (ssize_t)RLEN);
			CU_ASSERT(!memcmp(lbuf, rbuf, res.prefix));
		}
		CU_ASSERT_EQUAL(rdmaxfer_file_query(f, &in), 0);
		if (!strncmp(spec, "regbuf", 6))
			CU_ASSERT_EQUAL(in.fixed, 0);
	}
	close(fd);
	both_ways(f, (size_t)CHUNK * QD + 1, 0);
	rdmaxfer_file_destroy(f);
	CU_ASSERT_EQUAL(open_fds(), fds);
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(cp), RDMAXFER_PEER_CONNECTED);
}

static void test_inject(void)
{
	const uint32_t io = RDMAXFER_FILE_STAGE_IO;

	connected();
	inject_remote("register", true, -ENOMEM,
		      RDMAXFER_FILE_STAGE_REGISTER);
	inject_remote("register:1:12", false, -ENOMEM,
		      RDMAXFER_FILE_STAGE_REGISTER);
	inject_remote("regbuf", true, 0, 0);
	inject_remote("short:3", true, 0, 0);
	inject_remote("short:2", false, 0, 0);
	inject_remote("submit:4:11", false, 0, 0);
	inject_remote("cqe:5:5", true, -EIO, io);
	inject_remote("cqe:3:28", false, -ENOSPC, io);
	inject_remote("eof:6", true, -ENODATA, io);
	inject_remote("submit:2:5", true, -EIO, RDMAXFER_FILE_STAGE_SUBMIT);
	inject_remote("submit:3:12", false, -ENOMEM,
		      RDMAXFER_FILE_STAGE_SUBMIT);
}

static const struct rc_test_case cases[] = {
	{ "io_uring_both_ways", test_uring },
	{ "pread_both_ways", test_pread },
	{ "o_direct_both_ways", test_direct },
	{ "bad_input_and_rdma_error", test_bad },
	{ "requests", test_requests },
	{ "requests_caller_mode", test_requests_caller_mode },
	{ "cancel_and_timeout", test_cancel_timeout },
	{ "o_direct_fallback", test_direct_fallback },
	{ "injected_failures", test_inject },
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
