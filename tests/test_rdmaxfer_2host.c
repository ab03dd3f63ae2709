// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_2host.c - librdmaxfer between two hosts: two QEMU guests
 * joined by a UDP socket link, each with rxe on its own NIC
 * (tests/vm/run-2host.sh).
 *
 * "test_rdmaxfer_2host --server ADDR PORT" (guest A) listens on ADDR:PORT
 * with a progress-thread agent, registers a 24 MiB buffer, sends the first
 * client its metadata blob (agent, listen address, buffer descriptor) as a
 * notification message, then serves commands that arrive as messages with
 * value 0: fill a range with a pattern, check a range against a pattern
 * (and the zero guard bytes around it), read or zero a word, check the
 * sequence of the other notifications received, bye.  Each command gets
 * an "OK ..." or "BAD ..." message back.  So the data of every one-sided
 * transfer is checked on the host that holds the memory, never read back
 * by its writer.  Exit 0 after "BYE", 1 on error or timeout.
 *
 * Without --server (guest B) this is the CUnit/TAP client: it connects to
 * $RC_PEER_ADDR:$RC_PEER_PORT and runs the cases.  Skips (77) without
 * those variables or an RDMA device.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS		30000
#define CMD		0	/* notification value of commands and replies */
#define SEQ_MAX		4096
#define WORD_OFF	(SRV_LEN - 4096)	/* fetch-and-add word */
#define WORD2_OFF	(SRV_LEN - 2048)	/* compare-and-swap word */

#include "rdmaxfer_test_util.h"

/* Index of the first byte that differs from the pattern, or -1. */
static long mismatch(const uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pat(i, seed))
			return (long)i;
	return -1;
}

/* notif_send, retried while the send slots are exhausted (bounded). */
static int send_msg(struct rdmaxfer_peer *peer, uint32_t value,
		    const char *msg)
{
	double t0 = now_s();
	int ret;

	for (;;) {
		ret = rdmaxfer_notif_send(peer, value, msg, strlen(msg) + 1);
		if (ret != -EAGAIN || now_s() - t0 > 10)
			return ret;
		usleep(1000);
	}
}

/* ------------------------------------------------------------- server */

static uint8_t *srv_buf;
static uint32_t seq[SEQ_MAX];
static size_t nseq;

static int in_buf(unsigned long long off, unsigned long long len)
{
	return off <= SRV_LEN && len <= SRV_LEN - off;
}

/* Run one command; the reply text goes to out. */
static void command(const char *cmd, char *out, size_t cap)
{
	unsigned long long off, len, v;
	unsigned int seed, first, n;
	long bad;
	size_t i;

	if (sscanf(cmd, "FILL %llu %llu %u", &off, &len, &seed) == 3 &&
	    in_buf(off, len)) {
		fill(srv_buf + off, len, seed);
		snprintf(out, cap, "OK");
	} else if (sscanf(cmd, "ZERO %llu %llu", &off, &len) == 2 &&
		   in_buf(off, len)) {
		memset(srv_buf + off, 0, len);
		snprintf(out, cap, "OK");
	} else if (sscanf(cmd, "CHECK %llu %llu %u", &off, &len, &seed) == 3 &&
		   in_buf(off, len)) {
		bad = mismatch(srv_buf + off, len, seed);
		if (bad >= 0)
			snprintf(out, cap, "BAD byte %ld of %llu: %#x, want %#x",
				 bad, len, srv_buf[off + bad],
				 pat((size_t)bad, seed));
		else if (off > 0 && srv_buf[off - 1])
			snprintf(out, cap, "BAD guard byte before: %#x",
				 srv_buf[off - 1]);
		else if (off + len < SRV_LEN && srv_buf[off + len])
			snprintf(out, cap, "BAD guard byte after: %#x",
				 srv_buf[off + len]);
		else
			snprintf(out, cap, "OK");
	} else if (sscanf(cmd, "WORD %llu", &off) == 1 && in_buf(off, 8) &&
		   !(off % 8)) {
		memcpy(&v, srv_buf + off, 8);
		snprintf(out, cap, "OK %llu", v);
	} else if (sscanf(cmd, "SEQ %u %u", &first, &n) == 2) {
		for (i = 0; i < nseq && i < n; i++)
			if (seq[i] != first + i)
				break;
		if (nseq != n || i != n)
			snprintf(out, cap, "BAD %zu notifications, #%zu is %u",
				 nseq, i, i < nseq ? seq[i] : 0);
		else
			snprintf(out, cap, "OK");
		nseq = 0;
	} else if (!strcmp(cmd, "BYE")) {
		snprintf(out, cap, "OK bye");
	} else {
		snprintf(out, cap, "BAD command '%.64s'", cmd);
	}
}

static int serve(const char *host, uint16_t port)
{
	static struct rdmaxfer_notif n[16];
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_peer *peer;
	struct rdmaxfer_mem *mem;
	struct rdmaxfer_desc d;
	uint8_t blob[1024];
	char reply[256];
	size_t len;
	double t0 = now_s();
	int ret, i, k, bye = 0;

	srv_buf = aligned_alloc(4096, SRV_LEN);
	if (!srv_buf)
		return 1;
	memset(srv_buf, 0, SRV_LEN);
	ret = new_agent(RDMAXFER_PROGRESS_THREAD, 1, &agent);
	if (ret) {
		fprintf(stderr, "server: agent: %s\n", rdmaxfer_strerror(ret));
		return 1;
	}
	ret = rdmaxfer_listen(agent, host, port);
	if (!ret)
		ret = rdmaxfer_mem_register(agent, srv_buf, SRV_LEN,
					    RDMAXFER_MEM_HOST, &mem);
	if (!ret)
		ret = rdmaxfer_mem_desc(mem, 0, 0, &d);
	if (!ret)
		ret = rdmaxfer_md_pack(agent, &d, 1, blob, sizeof(blob), &len);
	if (ret) {
		fprintf(stderr, "server: setup: %s\n", rdmaxfer_strerror(ret));
		goto out;
	}
	printf("server: listening on %s:%u\n", host, port);
	fflush(stdout);
	/* the client guest may boot a little later */
	ret = rdmaxfer_accept(agent, 180000, &peer);
	if (ret) {
		fprintf(stderr, "server: accept: %s\n", rdmaxfer_strerror(ret));
		goto out;
	}
	ret = rdmaxfer_notif_send(peer, CMD, blob, len);
	if (ret) {
		fprintf(stderr, "server: send metadata: %s\n",
			rdmaxfer_strerror(ret));
		goto out;
	}
	while (!bye && now_s() - t0 < 900) {
		k = rdmaxfer_wait_notifs(agent, n, 16, 1000);
		if (k == -ETIMEDOUT)
			continue;
		if (k < 0) {
			ret = k;
			fprintf(stderr, "server: notifications: %s\n",
				rdmaxfer_strerror(ret));
			goto out;
		}
		for (i = 0; i < k; i++) {
			if (n[i].type != RDMAXFER_NOTIF_MSG || n[i].value != CMD) {
				if (nseq < SEQ_MAX)
					seq[nseq] = n[i].value;
				nseq++;
				continue;
			}
			n[i].data[RDMAXFER_NOTIF_MSG_MAX - 1] = 0;
			command((char *)n[i].data, reply, sizeof(reply));
			if (strncmp(reply, "OK", 2))
				printf("server: %s -> %s\n", n[i].data, reply);
			bye |= !strcmp(reply, "OK bye");
			ret = send_msg(n[i].peer, CMD, reply);
			if (ret)
				fprintf(stderr, "server: reply: %s\n",
					rdmaxfer_strerror(ret));
		}
	}
	ret = bye ? 0 : -ETIMEDOUT;
	printf("server: %s after %.1f s\n", bye ? "bye" : "timed out",
	       now_s() - t0);
out:
	rdmaxfer_agent_destroy(agent);
	free(srv_buf);
	return ret ? 1 : 0;
}

/* ------------------------------------------------------------- client */

static const char *peer_addr;
static uint16_t peer_port;
static struct rdmaxfer_agent *cli;
static struct rdmaxfer_peer *peer;
static struct rdmaxfer_md *smd;		/* the server's metadata */
static struct rdmaxfer_desc rbuf;	/* the server's buffer */
static uint8_t blob[RDMAXFER_NOTIF_MSG_MAX];
static size_t blob_len;
static uint8_t *cli_buf;
static char answer[RDMAXFER_NOTIF_MSG_MAX];

/* Send a command, wait for its answer (in answer[]); 0 when "OK". */
static int ask(const char *fmt, ...)
{
	static struct rdmaxfer_notif n;
	char cmd[256];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	answer[0] = 0;
	ret = send_msg(peer, CMD, cmd);
	if (ret) {
		rc_diag("%s: send: %s", cmd, rdmaxfer_strerror(ret));
		return ret;
	}
	ret = rdmaxfer_wait_notifs(cli, &n, 1, WAIT_MS);
	if (ret != 1) {
		rc_diag("%s: no answer: %s", cmd, rdmaxfer_strerror(ret));
		return ret < 0 ? ret : -EPROTO;
	}
	snprintf(answer, sizeof(answer), "%.*s", (int)n.len, (char *)n.data);
	if (strncmp(answer, "OK", 2)) {
		rc_diag("%s: %s", cmd, answer);
		return -EIO;
	}
	return 0;
}

static int remote(uint64_t off, uint64_t len, struct rdmaxfer_desc *d)
{
	return rdmaxfer_desc_sub(&rbuf, off, len, d);
}

static int suite_init(void)
{
	static struct rdmaxfer_notif n;
	double t0 = now_s();
	int ret;

	cli_buf = aligned_alloc(4096, CLI_LEN);
	if (!cli_buf || new_agent(RDMAXFER_PROGRESS_CALLER, 2, &cli))
		return 1;
	/* the server guest may still be booting: retry for a while */
	do {
		ret = rdmaxfer_connect(cli, peer_addr, peer_port, 5000, &peer);
		if (ret)
			sleep(1);
	} while (ret && now_s() - t0 < 120);
	if (ret) {
		fprintf(stderr, "connect %s:%u: %s\n", peer_addr, peer_port,
			rdmaxfer_strerror(ret));
		return 1;
	}
	rc_diag("connected to %s:%u after %.1f s", peer_addr, peer_port,
		now_s() - t0);
	ret = rdmaxfer_wait_notifs(cli, &n, 1, WAIT_MS);
	if (ret != 1 || n.type != RDMAXFER_NOTIF_MSG) {
		fprintf(stderr, "no metadata from the server: %s\n",
			rdmaxfer_strerror(ret));
		return 1;
	}
	blob_len = n.len;
	memcpy(blob, n.data, blob_len);
	ret = rdmaxfer_md_parse(blob, blob_len, &smd);
	if (ret || smd->ndescs != 1) {
		fprintf(stderr, "server metadata: %s\n", rdmaxfer_strerror(ret));
		return 1;
	}
	rbuf = smd->descs[0];
	return 0;
}

static int suite_cleanup(void)
{
	if (peer && ask("BYE"))
		fprintf(stderr, "the server did not take BYE: %s\n", answer);
	rdmaxfer_agent_destroy(cli);
	rdmaxfer_md_free(smd);
	free(cli_buf);
	return 0;
}

/* The blob came over the wire from the other host: it names that host,
 * and a second agent connects from it alone (out-of-band path). */
static void test_metadata_from_peer(void)
{
	struct rdmaxfer_iov iov = { cli_buf + 3, 5003 };
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *p;
	struct rdmaxfer_desc d;

	CU_ASSERT(smd->listening);
	CU_ASSERT(!strcmp(smd->host, peer_addr));
	CU_ASSERT_EQUAL(smd->listen_port, peer_port);
	CU_ASSERT_EQUAL(rbuf.len, SRV_LEN);
	CU_ASSERT_EQUAL(rbuf.kind, RDMAXFER_MEM_HOST);
	CU_ASSERT_EQUAL(rdmaxfer_peer_id(peer), smd->agent_id);
	CU_ASSERT_EQUAL(rdmaxfer_peer_state(peer), RDMAXFER_PEER_CONNECTED);

	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &a), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_connect_md(a, blob, blob_len, 10000, &p), 0);
	CU_ASSERT_EQUAL(rdmaxfer_peer_id(p), smd->agent_id);
	CU_ASSERT_EQUAL(ask("ZERO 0 8192"), 0);
	fill(iov.addr, iov.len, 7);
	CU_ASSERT_EQUAL_FATAL(remote(1, iov.len, &d), 0);
	CU_ASSERT_EQUAL(xfer_sync(p, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL), 0);
	CU_ASSERT_EQUAL(ask("CHECK 1 %zu 7", iov.len), 0);
	rdmaxfer_agent_destroy(a);
}

static const size_t sizes[] = { 1, 3, 64, 100, 4095, 4099, 65537,
				 MiB + 3, 8 * MiB };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Pair i: local cli_buf + loff[i], remote buffer + roff[i]; both odd
 * offsets with gaps (guard bytes) between the ranges. */
static void layout(size_t *loff, size_t *roff)
{
	size_t i, l = 1, r = 5;

	for (i = 0; i < NSIZES; i++) {
		loff[i] = l;
		roff[i] = r;
		l += sizes[i] + 3 + i;
		r += sizes[i] + 11 + 2 * i;
	}
}

static void test_write_list(void)
{
	struct rdmaxfer_iov iov[NSIZES];
	struct rdmaxfer_desc d[NSIZES];
	size_t loff[NSIZES], roff[NSIZES], i;

	layout(loff, roff);
	CU_ASSERT_EQUAL_FATAL(ask("ZERO 0 %lu", SRV_LEN), 0);
	for (i = 0; i < NSIZES; i++) {
		iov[i].addr = cli_buf + loff[i];
		iov[i].len = sizes[i];
		fill(iov[i].addr, sizes[i], 100 + i);
		CU_ASSERT_EQUAL_FATAL(remote(roff[i], sizes[i], &d[i]), 0);
	}
	CU_ASSERT_EQUAL_FATAL(xfer_sync(peer, RDMAXFER_OP_WRITE, iov, d, NSIZES,
					NULL), 0);
	for (i = 0; i < NSIZES; i++)
		CU_ASSERT_EQUAL(ask("CHECK %zu %zu %zu", roff[i], sizes[i],
				    100 + i), 0);
}

static void test_read_list(void)
{
	struct rdmaxfer_iov iov[NSIZES];
	struct rdmaxfer_desc d[NSIZES];
	size_t loff[NSIZES], roff[NSIZES], i;
	uint8_t *l;

	layout(loff, roff);
	CU_ASSERT_EQUAL_FATAL(ask("ZERO 0 %lu", SRV_LEN), 0);
	memset(cli_buf, 0, CLI_LEN);
	for (i = 0; i < NSIZES; i++) {
		CU_ASSERT_EQUAL(ask("FILL %zu %zu %zu", roff[i], sizes[i],
				    200 + i), 0);
		iov[i].addr = cli_buf + loff[i];
		iov[i].len = sizes[i];
		CU_ASSERT_EQUAL_FATAL(remote(roff[i], sizes[i], &d[i]), 0);
	}
	CU_ASSERT_EQUAL_FATAL(xfer_sync(peer, RDMAXFER_OP_READ, iov, d, NSIZES,
					NULL), 0);
	for (i = 0; i < NSIZES; i++) {
		l = cli_buf + loff[i];
		CU_ASSERT_EQUAL(mismatch(l, sizes[i], 200 + i), -1);
		CU_ASSERT_EQUAL(l[-1], 0);
		CU_ASSERT_EQUAL(l[sizes[i]], 0);
	}
}

static void test_repost(void)
{
	struct rdmaxfer_iov iov = { cli_buf + 5, 3 * 65536 + 17 };
	struct rdmaxfer_desc d;
	struct rdmaxfer_req *req;
	int i;

	CU_ASSERT_EQUAL_FATAL(ask("ZERO 0 %lu", 4 * MiB), 0);
	CU_ASSERT_EQUAL_FATAL(remote(7, iov.len, &d), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_xfer_prepare(peer, RDMAXFER_OP_WRITE,
						    &iov, 1, &d, 1, NULL, &req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_test(req), -EALREADY);
	for (i = 0; i < 6; i++) {
		fill(iov.addr, iov.len, 300 + i);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_post(req), 0);
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
		CU_ASSERT_EQUAL(rdmaxfer_req_test(req), 0);
		CU_ASSERT_EQUAL(ask("CHECK 7 %zu %d", iov.len, 300 + i), 0);
	}
	CU_ASSERT_EQUAL(rdmaxfer_req_bytes(req), iov.len);
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
}

/* Immediate-only notifications of WRITEs and message notifications, mixed:
 * the server must see all of them, in the order they were sent. */
static void test_notif_order(void)
{
	const uint32_t first = 1000, n = 96;
	struct rdmaxfer_iov iov = { cli_buf, 256 };
	struct rdmaxfer_xfer_notif xn;
	struct rdmaxfer_desc d;
	char msg[32];
	uint32_t i;

	CU_ASSERT_EQUAL_FATAL(remote(0, 256, &d), 0);
	CU_ASSERT_EQUAL_FATAL(ask("SEQ 0 0"), 0);	/* start empty */
	for (i = 0; i < n; i++) {
		if (i % 3 == 0) {
			xn.value = first + i;
			CU_ASSERT_EQUAL(xfer_sync(peer, RDMAXFER_OP_WRITE,
						  &iov, &d, 1, &xn), 0);
		} else {
			snprintf(msg, sizeof(msg), "seq %u", first + i);
			CU_ASSERT_EQUAL(send_msg(peer, first + i, msg), 0);
		}
	}
	CU_ASSERT_EQUAL(ask("SEQ %u %u", first, n), 0);
}

struct fadd_arg {
	int m;
	int ret;
	uint64_t *olds;
};

static struct rdmaxfer_desc word_desc;

/* One agent and connection per thread: concurrent atomics from several
 * QPs of this host on one word of the other. */
static void *fadd_thread(void *p)
{
	struct fadd_arg *a = p;
	struct rdmaxfer_agent *ag;
	struct rdmaxfer_peer *pp;
	struct rdmaxfer_req *req;
	uint64_t *res = aligned_alloc(64, 64);

	a->ret = res ? new_agent(RDMAXFER_PROGRESS_CALLER, 1, &ag) : -ENOMEM;
	if (a->ret)
		goto out;
	a->ret = rdmaxfer_connect(ag, peer_addr, peer_port, 10000, &pp);
	if (!a->ret)
		a->ret = rdmaxfer_atomic_prepare(pp, RDMAXFER_OP_FADD,
						 &word_desc, 0, 1, 0, res, &req);
	if (a->ret)
		goto destroy;
	a->ret = fadd_run(req, res, a->olds, a->m);
destroy:
	rdmaxfer_agent_destroy(ag);
out:
	free(res);
	return NULL;
}

static void test_fadd_contention(void)
{
	enum { N = 3, M = 150 };
	struct fadd_arg args[N];
	pthread_t th[N];
	uint64_t *all = calloc(N * M, sizeof(*all));
	int i;

	CU_ASSERT_FATAL(all != NULL);
	CU_ASSERT_EQUAL_FATAL(remote(WORD_OFF, 8, &word_desc), 0);
	CU_ASSERT_EQUAL_FATAL(ask("ZERO %lu 8", WORD_OFF), 0);
	for (i = 0; i < N; i++) {
		args[i].m = M;
		args[i].ret = -1;
		args[i].olds = all + i * M;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, fadd_thread,
						     &args[i]), 0);
	}
	for (i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(args[i].ret, 0);
	}
	CU_ASSERT_EQUAL(ask("WORD %lu", WORD_OFF), 0);
	CU_ASSERT_EQUAL(strtoull(answer + 3, NULL, 10), (uint64_t)N * M);
	check_permutation(all, N * M);
	free(all);
}

static void test_cswap(void)
{
	uint64_t *res = aligned_alloc(64, 64);
	struct rdmaxfer_req *req;
	struct rdmaxfer_desc d;

	CU_ASSERT_FATAL(res != NULL);
	CU_ASSERT_EQUAL_FATAL(remote(WORD2_OFF, 8, &d), 0);
	CU_ASSERT_EQUAL_FATAL(ask("ZERO %lu 8", WORD2_OFF), 0);
	*res = 77;
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_atomic_prepare(peer, RDMAXFER_OP_CSWAP,
						      &d, 0, 0, 5, res, &req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(*res, 0);
	CU_ASSERT_EQUAL(ask("WORD %lu", WORD2_OFF), 0);
	CU_ASSERT(!strcmp(answer, "OK 5"));
	CU_ASSERT_EQUAL(rdmaxfer_atomic_set(req, 5, 9), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(*res, 5);
	/* the same compare again no longer matches: the word stays 9 */
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	CU_ASSERT_EQUAL(*res, 9);
	CU_ASSERT_EQUAL(ask("WORD %lu", WORD2_OFF), 0);
	CU_ASSERT(!strcmp(answer, "OK 9"));
	rdmaxfer_req_free(req);
	free(res);
}

static void test_cache_register_once(void)
{
	struct rdmaxfer_agent_info info;
	uint8_t *buf = cache_check_buf(cli, &info);
	struct rdmaxfer_iov iov[2] = { { buf + 1, 5000 }, { buf + MiB, MiB } };
	struct rdmaxfer_desc d[2];

	if (!buf)
		return;
	CU_ASSERT_EQUAL_FATAL(ask("ZERO 0 %lu", 4 * MiB), 0);
	fill(iov[0].addr, iov[0].len, 41);
	fill(iov[1].addr, iov[1].len, 42);
	CU_ASSERT_EQUAL(remote(1, 5000, &d[0]), 0);
	CU_ASSERT_EQUAL(remote(2 * MiB, MiB, &d[1]), 0);
	check_cache_register_once(cli, peer, info.cache_monitor, iov, d);
	CU_ASSERT_EQUAL(ask("CHECK 1 5000 41"), 0);
	CU_ASSERT_EQUAL(ask("CHECK %lu %lu 42", 2 * MiB, MiB), 0);
	free(buf);
}

/* A WRITE the other host refuses: the request fails within the bound, the
 * peer is recovered and the same handle moves (checked) data again. */
static void expect_remote_error(const struct rdmaxfer_desc *bad)
{
	struct rdmaxfer_iov iov = { cli_buf, bad->len };
	struct rdmaxfer_desc good;
	struct rdmaxfer_req *req;
	int ret;

	ret = post_refused_write(peer, &iov, bad, &req);
	CU_ASSERT(ret == -EACCES || ret == -EREMOTEIO);
	check_refused_then_recover(peer, req);

	CU_ASSERT_EQUAL(ask("ZERO 0 8192"), 0);
	fill(cli_buf, 4096, 51);
	CU_ASSERT_EQUAL_FATAL(remote(0, 4096, &good), 0);
	iov.len = 4096;
	CU_ASSERT_EQUAL(xfer_sync(peer, RDMAXFER_OP_WRITE, &iov, &good, 1,
				  NULL), 0);
	CU_ASSERT_EQUAL(ask("CHECK 0 4096 51"), 0);
}

static void test_bad_rkey(void)
{
	struct rdmaxfer_desc d;

	CU_ASSERT_EQUAL_FATAL(remote(0, 4096, &d), 0);
	d.rkey ^= 0x5a5a00;
	expect_remote_error(&d);
}

static void test_out_of_bounds(void)
{
	struct rdmaxfer_desc d = rbuf;

	/* past the region (and past what the cache may have registered) */
	d.addr += SRV_LEN + 64 * MiB;
	d.len = 4096;
	expect_remote_error(&d);
}

static const struct rc_test_case cases[] = {
	{ "metadata_from_peer", test_metadata_from_peer },
	{ "write_list_mixed_sizes", test_write_list },
	{ "read_list_mixed_sizes", test_read_list },
	{ "repost_prepared", test_repost },
	{ "notif_count_order", test_notif_order },
	{ "fadd_contention", test_fadd_contention },
	{ "cswap_semantics", test_cswap },
	{ "cache_register_once", test_cache_register_once },
	{ "error_bad_rkey", test_bad_rkey },
	{ "error_out_of_bounds", test_out_of_bounds },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	struct rdmaxfer_agent *probe;
	const char *port;
	int ret;

	signal(SIGPIPE, SIG_IGN);
	if (argc == 4 && !strcmp(argv[1], "--server"))
		return serve(argv[2], (uint16_t)atoi(argv[3]));
	peer_addr = getenv("RC_PEER_ADDR");
	port = getenv("RC_PEER_PORT");
	if (!peer_addr || !*peer_addr || !port || !*port)
		rc_skip_all("RC_PEER_ADDR/RC_PEER_PORT not set: needs two guests (tests/vm/run-2host.sh)");
	peer_port = (uint16_t)atoi(port);
	ret = rdmaxfer_agent_create(NULL, &probe);
	if (ret)
		rc_skip_all("no usable RDMA device: %s", rdmaxfer_strerror(ret));
	rdmaxfer_agent_destroy(probe);
	rc_add_suite("rdmaxfer-2host", suite_init, suite_cleanup, cases);
	return rc_test_main(argc, argv);
}
