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
 * More regions follow the buffer in the blob, and a command prefixed
 * "@N " acts on region N ("INFO N" says how it was registered): 1 is an
 * RDMAXFER_MEM_ODP region of never-touched memory (policy auto: on-demand
 * paging where the device's caps allow every operation, else pinned); 2
 * the same with remote atomic access only (auto uses ODP for fewer
 * operations than all on some devices: 7.3's rxe); 3 a RDMAXFER_MEM_DMABUF
 * region of a real dma-buf (udmabuf, else vgem), read and written by the
 * server through its own mapping of the dma-buf inside
 * rdmaxfer_dmabuf_sync(); without an exporter the blob has no fourth
 * descriptor and "INFO 3" answers "OK skip: ...".
 *
 * Without --server (guest B) this is the CUnit/TAP client: it connects to
 * $RC_PEER_ADDR:$RC_PEER_PORT and runs the cases; the last moves a file
 * of guest B into guest A's buffer and back into another file.  Skips (77) without
 * those variables or an RDMA device.
 *
 * The grain ring between the two hosts (issue 14) is a block of its own
 * at the end of this file: "--ring-server ADDR PORT" (guest A) is a ring
 * target, "--ring" (guest B) its initiator (see ring_main()).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
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
#include "rdmaxfer_dmabuf_test.h"
#include "rdmaxfer_ring_test.h"

#define ODP_LEN		(4 * MiB)	/* the ODP region */
#define DB_LEN		(2 * MiB)	/* the dma-buf */
#define DB_OFF		4096		/* the region inside it */
#define DB_REG		(MiB + 2 * 65536)
#define ODP_ATOMIC_LEN	65536		/* the atomic-only ODP region */
#define NREGIONS	4

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

/*
 * The peers the server accepted.  A notification names only a peer the
 * application accepted, and the client reconnects after its error
 * checks (a new connection here): a command from a peer not accepted
 * yet is answered through the newest live accepted peer of its agent id,
 * after the accept queue is taken.
 */
#define SRV_PEERS	32

struct srv_peers {
	struct rdmaxfer_peer *p[SRV_PEERS];
	unsigned int n;
};

static struct rdmaxfer_peer *reply_peer(struct rdmaxfer_agent *agent,
					struct srv_peers *sp,
					const struct rdmaxfer_notif *n)
{
	double deadline = now_s() + 5;
	struct rdmaxfer_peer *np;
	unsigned int i;

	if (n->peer)
		return n->peer;
	while (sp->n < SRV_PEERS && !rdmaxfer_accept(agent, 0, &np))
		sp->p[sp->n++] = np;
	/*
	 * A message can come before its peer may be accepted: it arrived on
	 * one QP while another QP's RTU is still on its way (a reconnect
	 * after a remote error, on a loaded guest).  Wait for the peer then,
	 * as an application answering a new peer would.
	 */
	for (;;) {
		for (i = sp->n; i-- > 0;)
			if (rdmaxfer_peer_id(sp->p[i]) == n->peer_id &&
			    rdmaxfer_peer_state(sp->p[i]) ==
			    RDMAXFER_PEER_CONNECTED)
				return sp->p[i];
		if (sp->n >= SRV_PEERS || now_s() > deadline ||
		    rdmaxfer_accept(agent, 1000, &np))
			return NULL;
		sp->p[sp->n++] = np;
	}
}

/* What a command acts on: the CPU's view of one registered region. */
struct region {
	uint8_t *p;
	size_t len;
	struct rdmaxfer_mem *mem;
	bool dmabuf;		/* CPU access inside rdmaxfer_dmabuf_sync() */
	char info[200];		/* "INFO n": how it was registered */
};

static struct region regions[NREGIONS];
static size_t nregions;
static uint32_t seq[SEQ_MAX];
static size_t nseq;

static int in_buf(const struct region *r, unsigned long long off,
		  unsigned long long len)
{
	return off <= r->len && len <= r->len - off;
}

/* Run one data command on region r; the reply text goes to out. */
static void data_command(struct region *r, const char *cmd, char *out,
			 size_t cap)
{
	unsigned long long off, len, v;
	unsigned int seed;
	uint8_t *p = r->p;
	long bad;

	if (sscanf(cmd, "FILL %llu %llu %u", &off, &len, &seed) == 3 &&
	    in_buf(r, off, len)) {
		fill(p + off, len, seed);
		snprintf(out, cap, "OK");
	} else if (sscanf(cmd, "ZERO %llu %llu", &off, &len) == 2 &&
		   in_buf(r, off, len)) {
		memset(p + off, 0, len);
		snprintf(out, cap, "OK");
	} else if (sscanf(cmd, "CHECK %llu %llu %u", &off, &len, &seed) == 3 &&
		   in_buf(r, off, len)) {
		bad = mismatch(p + off, len, seed);
		if (bad >= 0)
			snprintf(out, cap, "BAD byte %ld of %llu: %#x, want %#x",
				 bad, len, p[off + bad],
				 pat((size_t)bad, seed));
		else if (off > 0 && p[off - 1])
			snprintf(out, cap, "BAD guard byte before: %#x",
				 p[off - 1]);
		else if (off + len < r->len && p[off + len])
			snprintf(out, cap, "BAD guard byte after: %#x",
				 p[off + len]);
		else
			snprintf(out, cap, "OK");
	} else if (sscanf(cmd, "WORD %llu", &off) == 1 && in_buf(r, off, 8) &&
		   !(off % 8)) {
		memcpy(&v, p + off, 8);
		snprintf(out, cap, "OK %llu", v);
	} else {
		snprintf(out, cap, "BAD command '%.64s'", cmd);
	}
}

/*
 * Run one command; the reply text goes to out.  "@N " picks region N
 * (default 0); a dma-buf region is accessed between a begin and an end
 * of CPU access (READ and WRITE: on the staged path the begin copies the
 * host copy into the dma-buf, the end copies it back).
 */
static void command(const char *cmd, char *out, size_t cap)
{
	const uint32_t rw = RDMAXFER_DMABUF_SYNC_READ |
			    RDMAXFER_DMABUF_SYNC_WRITE;
	unsigned int first, n, ri = 0;
	struct region *r;
	int skip = 0, ret;
	size_t i;

	if (sscanf(cmd, "@%u %n", &ri, &skip) == 1 && skip > 0)
		cmd += skip;
	if (ri >= NREGIONS) {
		snprintf(out, cap, "BAD region %u", ri);
	} else if (sscanf(cmd, "INFO %u", &ri) == 1 && ri < NREGIONS) {
		snprintf(out, cap, "%s", regions[ri].info);
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
	} else if (!regions[ri].p) {
		snprintf(out, cap, "BAD region %u: %s", ri, regions[ri].info);
	} else if (!regions[ri].dmabuf) {
		data_command(&regions[ri], cmd, out, cap);
	} else {
		r = &regions[ri];
		ret = rdmaxfer_dmabuf_sync(r->mem, rw);
		if (!ret) {
			data_command(r, cmd, out, cap);
			ret = rdmaxfer_dmabuf_sync(r->mem, rw |
						   RDMAXFER_DMABUF_SYNC_END);
		}
		if (ret)
			snprintf(out, cap, "BAD dma-buf sync: %s",
				 rdmaxfer_strerror(ret));
	}
}

/* Regions 1 and 2: RDMAXFER_MEM_ODP on never-touched memory. */
static int odp_region(struct rdmaxfer_agent *agent, struct region *r,
		      size_t len, uint32_t access)
{
	struct rdmaxfer_odp_caps caps;
	int ret;

	r->len = len;
	r->p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->p == MAP_FAILED) {
		r->p = NULL;
		return -errno;
	}
	ret = rdmaxfer_mem_register_access(agent, r->p, len, RDMAXFER_MEM_ODP,
					   access, &r->mem);
	if (!ret)
		ret = rdmaxfer_agent_odp_caps(agent, &caps);
	if (ret)
		return ret;
	ret = rdmaxfer_mem_is_odp(r->mem);
	snprintf(r->info, sizeof(r->info),
		 "OK %s (policy %u, device ops %#x, auto ops %#x, self-test %d)%s%.120s",
		 ret == 1 ? "on-demand paging" : "pinned fallback", caps.policy,
		 caps.device_ops, caps.auto_ops, caps.selftest,
		 ret != 1 && caps.reason[0] ? ": " : "",
		 ret != 1 ? caps.reason : "");
	return ret < 0 ? ret : 0;
}

/*
 * Region 3: a dma-buf from udmabuf (registered with its memfd as backing)
 * or vgem (the staged copy), the default policy (auto: the device path
 * where the device takes it).  r->p is the server's own mapping of the
 * dma-buf.  No exporter: no region, and why in r->info.
 */
static int dmabuf_region(struct rdmaxfer_agent *agent, struct region *r,
			 int *fds)
{
	struct rdmaxfer_dmabuf_attr a = { .offset = DB_OFF, .len = DB_REG,
					  .access = RDMAXFER_ACCESS_REMOTE };
	struct rdmaxfer_dmabuf_info info;
	const char *exporter = NULL;
	uint8_t *cpu;
	int ret;

	if (test_pick_exporter(DB_LEN, &fds[0], &exporter)) {
		snprintf(r->info, sizeof(r->info),
			 "OK skip: no dma-buf exporter (neither /dev/udmabuf nor a vgem card in /dev/dri)");
		return 0;
	}
	ret = test_new_dmabuf(fds[0], DB_LEN, &fds[1], &fds[2]);
	if (ret)
		return ret;
	a.fd = fds[1];
	if (fds[2] >= 0) {
		a.flags = RDMAXFER_DMABUF_BACKING;
		a.backing_fd = fds[2];
	} else {
		a.flags = RDMAXFER_DMABUF_STAGE;
	}
	cpu = mmap(NULL, DB_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
	if (cpu == MAP_FAILED)
		return -errno;
	ret = rdmaxfer_mem_register_dmabuf(agent, &a, &r->mem);
	if (!ret)
		ret = rdmaxfer_mem_dmabuf_query(r->mem, &info);
	if (ret) {
		if (r->mem)
			rdmaxfer_mem_deregister(r->mem);
		r->mem = NULL;
		munmap(cpu, DB_LEN);
		return ret;
	}
	r->p = cpu + DB_OFF;
	r->len = DB_REG;
	r->dmabuf = true;
	snprintf(r->info, sizeof(r->info), "OK %s, path %u: %.150s", exporter,
		 info.path, info.msg);
	return 0;
}

static int serve(const char *host, uint16_t port)
{
	static struct rdmaxfer_notif n[16];
	struct srv_peers sp = { { NULL }, 0 };
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_peer *peer;
	struct region *r0 = &regions[0];
	struct rdmaxfer_desc d[NREGIONS];
	uint8_t blob[1024];
	char reply[256];
	size_t len;
	double t0 = now_s();
	int ret, i, k, bye = 0;
	int fds[3] = { -1, -1, -1 };	/* vgem card, dma-buf, memfd */

	r0->len = SRV_LEN;
	r0->p = aligned_alloc(4096, SRV_LEN);
	if (!r0->p)
		return 1;
	memset(r0->p, 0, SRV_LEN);
	snprintf(r0->info, sizeof(r0->info), "OK host memory");
	ret = new_agent(RDMAXFER_PROGRESS_THREAD, 1, &agent);
	if (ret) {
		fprintf(stderr, "server: agent: %s\n", rdmaxfer_strerror(ret));
		return 1;
	}
	ret = rdmaxfer_listen(agent, host, port);
	if (!ret)
		ret = rdmaxfer_mem_register(agent, r0->p, SRV_LEN,
					    RDMAXFER_MEM_HOST, &r0->mem);
	if (!ret)
		ret = odp_region(agent, &regions[1], ODP_LEN,
				 RDMAXFER_ACCESS_REMOTE);
	if (!ret)
		ret = odp_region(agent, &regions[2], ODP_ATOMIC_LEN,
				 RDMAXFER_ACCESS_REMOTE_ATOMIC);
	/* a dma-buf that fails is the client's test failing, not all */
	if (!ret && (k = dmabuf_region(agent, &regions[3], fds)))
		snprintf(regions[3].info, sizeof(regions[3].info),
			 "BAD dma-buf region: %s", rdmaxfer_strerror(k));
	for (nregions = 0; !ret && nregions < NREGIONS &&
	     regions[nregions].mem; nregions++) {
		ret = rdmaxfer_mem_desc(regions[nregions].mem, 0, 0,
					&d[nregions]);
		printf("server: region %zu: %s\n", nregions,
		       regions[nregions].info);
	}
	if (!ret)
		ret = rdmaxfer_md_pack(agent, d, nregions, blob, sizeof(blob),
				       &len);
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
	sp.p[sp.n++] = peer;
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
			ret = send_msg(reply_peer(agent, &sp, &n[i]), CMD,
				       reply);
			if (ret)
				fprintf(stderr, "server: reply: %s\n",
					rdmaxfer_strerror(ret));
		}
	}
	ret = bye ? 0 : -ETIMEDOUT;
	printf("server: %s after %.1f s\n", bye ? "bye" : "timed out",
	       now_s() - t0);
out:
	for (i = 1; i < NREGIONS; i++)
		if (regions[i].mem && rdmaxfer_mem_deregister(regions[i].mem))
			ret = -EIO;
	rdmaxfer_agent_destroy(agent);
	free(r0->p);
	for (i = 1; i < 3; i++)
		if (regions[i].p)
			munmap(regions[i].p, regions[i].len);
	if (regions[3].p)
		munmap(regions[3].p - DB_OFF, DB_LEN);
	for (i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ret ? 1 : 0;
}

/* ------------------------------------------------------------- client */

static const char *peer_addr;
static uint16_t peer_port;
static struct rdmaxfer_agent *cli;
static struct rdmaxfer_peer *peer;
static struct rdmaxfer_md *smd;		/* the server's metadata */
static struct rdmaxfer_desc rbuf;	/* the server's buffer */
static struct rdmaxfer_desc odp_desc;	/* its ODP region */
static struct rdmaxfer_desc odpa_desc;	/* its atomic-only ODP region */
static struct rdmaxfer_desc db_desc;	/* its dma-buf region (len 0: none) */
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
	if (ret || smd->ndescs < 3 || smd->ndescs > NREGIONS) {
		fprintf(stderr, "server metadata: %s\n", rdmaxfer_strerror(ret));
		return 1;
	}
	rbuf = smd->descs[0];
	odp_desc = smd->descs[1];
	odpa_desc = smd->descs[2];
	if (smd->ndescs > 3)
		db_desc = smd->descs[3];
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

/*
 * Region r of the server (descriptor rd): for sizes of one packet and
 * many, each at its own odd offset, a WRITE into never-touched bytes
 * checked there (guard bytes too), then a READ of what the server wrote
 * there, checked here.
 */
static void write_read_region(unsigned int r, const struct rdmaxfer_desc *rd)
{
	static const size_t lens[] = { 1, 4099, MiB + 3 };
	static const size_t offs[] = { 5, 8192 + 7, 65536 + 1 };
	struct rdmaxfer_iov iov;
	struct rdmaxfer_desc d;
	uint32_t seed;
	size_t i;

	for (i = 0; i < 3; i++) {
		seed = 700 + 10 * r + (uint32_t)i;
		iov.addr = cli_buf + 1;
		iov.len = lens[i];
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_desc_sub(rd, offs[i], lens[i],
							&d), 0);
		fill(iov.addr, lens[i], seed);
		CU_ASSERT_EQUAL(xfer_sync(peer, RDMAXFER_OP_WRITE, &iov, &d, 1,
					  NULL), 0);
		CU_ASSERT_EQUAL(ask("@%u CHECK %zu %zu %u", r, offs[i], lens[i],
				    seed), 0);

		CU_ASSERT_EQUAL(ask("@%u FILL %zu %zu %u", r, offs[i], lens[i],
				    seed + 100), 0);
		memset(cli_buf, 0, lens[i] + 2);
		CU_ASSERT_EQUAL(xfer_sync(peer, RDMAXFER_OP_READ, &iov, &d, 1,
					  NULL), 0);
		CU_ASSERT_EQUAL(mismatch(iov.addr, lens[i], seed + 100), -1);
		CU_ASSERT_EQUAL(cli_buf[0], 0);
		CU_ASSERT_EQUAL(cli_buf[1 + lens[i]], 0);
	}
}

/* How the server registered ODP region r: the descriptor says what the
 * memory really is. */
static void odp_info(unsigned int r, const struct rdmaxfer_desc *rd)
{
	bool odp;

	CU_ASSERT_EQUAL_FATAL(ask("INFO %u", r), 0);
	rc_diag("server region %u: %s", r, answer + 3);
	odp = !strncmp(answer, "OK on-demand paging", 19);
	CU_ASSERT_EQUAL(rd->kind, odp ? RDMAXFER_MEM_ODP : RDMAXFER_MEM_HOST);
}

/* An RDMAXFER_MEM_ODP region: on-demand paging or its pinned fallback. */
static void test_odp_region(void)
{
	odp_info(1, &odp_desc);
	CU_ASSERT_EQUAL(odp_desc.len, ODP_LEN);
	write_read_region(1, &odp_desc);
}

/* Fetch-and-add on two never-touched pages of the atomic-only ODP
 * region; the words checked on the server. */
static void test_odp_atomic(void)
{
	uint64_t *res = aligned_alloc(64, 64);
	struct rdmaxfer_req *req;
	uint64_t off, i;

	CU_ASSERT_FATAL(res != NULL);
	odp_info(2, &odpa_desc);
	CU_ASSERT_EQUAL(odpa_desc.len, ODP_ATOMIC_LEN);
	for (off = 8; off < ODP_ATOMIC_LEN; off += ODP_ATOMIC_LEN / 2) {
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_atomic_prepare(peer,
				RDMAXFER_OP_FADD, &odpa_desc, off, 7, 0, res,
				&req), 0);
		for (i = 0; i < 5; i++) {
			*res = 1;
			CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
			CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
			CU_ASSERT_EQUAL(*res, 7 * i);
		}
		rdmaxfer_req_free(req);
		CU_ASSERT_EQUAL(ask("@2 WORD %llu", (unsigned long long)off), 0);
		CU_ASSERT(!strcmp(answer, "OK 35"));
	}
	free(res);
}

/* A dma-buf region (through its fallback on rxe), bytes checked by the
 * server through its mapping of the dma-buf. */
static void test_dmabuf_region(void)
{
	CU_ASSERT_EQUAL_FATAL(ask("INFO 3"), 0);
	rc_diag("server region 3: %s", answer + 3);
	if (!db_desc.len) {
		if (!strncmp(answer, "OK skip: ", 9)) {
			rc_skip("%s", answer + 9);
			return;
		}
		CU_FAIL("the server sent no dma-buf region");
		return;
	}
	CU_ASSERT_EQUAL(db_desc.kind, RDMAXFER_MEM_DMABUF);
	CU_ASSERT_EQUAL(db_desc.len, DB_REG);
	CU_ASSERT_EQUAL_FATAL(ask("@3 ZERO 0 %lu", DB_REG), 0);
	write_read_region(3, &db_desc);
}

/* ------------------------------------------------ files (issue 15) ---- */

#define FILE_LEN	(3 * MiB + 5)	/* three staging pools and a bit */
#define FILE_ROFF	7		/* where it lands in the server's buffer */
#define FILE_SEED	901

/* A file of this guest of len bytes, pattern seed (seed 0: empty). */
static int file_2host_open(const char *name, size_t len, uint32_t seed)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/rdmaxfer-2host-%s.%d", name,
		 (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (seed) {
		fill(cli_buf, len, seed);
		if (pwrite(fd, cli_buf, len, 0) != (ssize_t)len) {
			close(fd);
			return -EIO;
		}
	}
	return fd;
}

/*
 * A file of this guest into the other guest's memory (a file request,
 * RDMA WRITE through the staging pool; the bytes and the guard bytes
 * around them checked by the server), then back from there into a second
 * file (the blocking call, RDMA READ), which must equal the first byte
 * for byte.  Chunks of 256 KiB, 4 in flight: the file is three pools.
 */
static void test_file_round_trip(void)
{
	struct rdmaxfer_file_attr attr = { .chunk_size = 256 * 1024,
					   .queue_depth = 4 };
	struct rdmaxfer_file_result res;
	struct rdmaxfer_file_desc src, dst;
	struct rdmaxfer_file *f;
	struct rdmaxfer_req *req;
	struct rdmaxfer_desc d;
	uint8_t *back;
	int sfd, dfd;
	double t;

	back = malloc(FILE_LEN);
	CU_ASSERT_FATAL(back != NULL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_create(&attr, &f), 0);
	rc_diag("file engine: %s backend",
		rdmaxfer_file_backend(f) == RDMAXFER_FILE_IO_URING ?
		"io_uring" : "pread/pwrite");
	sfd = file_2host_open("src", FILE_LEN, FILE_SEED);
	dfd = file_2host_open("dst", 0, 0);
	CU_ASSERT_FATAL(sfd >= 0 && dfd >= 0);
	CU_ASSERT_EQUAL_FATAL(ask("ZERO 0 %lu", FILE_LEN + 64), 0);
	CU_ASSERT_EQUAL_FATAL(remote(FILE_ROFF, FILE_LEN, &d), 0);

	src = (struct rdmaxfer_file_desc){ sfd, 0, FILE_LEN };
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_prepare(f, peer, RDMAXFER_OP_WRITE,
						    &src, &d, &req), 0);
	t = now_s();
	CU_ASSERT_EQUAL(rdmaxfer_req_post(req), 0);
	CU_ASSERT_EQUAL(rdmaxfer_req_wait(req, WAIT_MS), 0);
	t = now_s() - t;
	CU_ASSERT_EQUAL(rdmaxfer_file_req_result(req, &res), 0);
	CU_ASSERT(res.err == 0 && res.done == FILE_LEN &&
		  res.prefix == FILE_LEN);
	rc_diag("file -> peer memory: %lu bytes in %.3f s (%s)", FILE_LEN, t,
		rdmaxfer_req_strerror(req));
	CU_ASSERT_EQUAL(rdmaxfer_req_free(req), 0);
	CU_ASSERT_EQUAL(ask("CHECK %d %lu %u", FILE_ROFF, FILE_LEN,
			    FILE_SEED), 0);

	dst = (struct rdmaxfer_file_desc){ dfd, 0, FILE_LEN };
	t = now_s();
	CU_ASSERT_EQUAL(rdmaxfer_file_from_peer(f, peer, &d, &dst, WAIT_MS),
			0);
	t = now_s() - t;
	rc_diag("peer memory -> file: %lu bytes in %.3f s %s", FILE_LEN, t,
		rdmaxfer_file_msg(f));
	CU_ASSERT_EQUAL(pread(dfd, back, FILE_LEN, 0), FILE_LEN);
	CU_ASSERT_EQUAL(pread(sfd, cli_buf, FILE_LEN, 0), FILE_LEN);
	CU_ASSERT(!memcmp(back, cli_buf, FILE_LEN));
	CU_ASSERT_EQUAL(mismatch(back, FILE_LEN, FILE_SEED), -1);
	close(sfd);
	close(dfd);
	rdmaxfer_file_destroy(f);
	free(back);
}

/* ------------------------------------------- end of files (issue 15) ---- */

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
	{ "odp_region", test_odp_region },
	{ "odp_atomic", test_odp_atomic },
	{ "dmabuf_region", test_dmabuf_region },
	{ "file_round_trip", test_file_round_trip },	/* issue 15 */
	{ NULL, NULL },
};

static int ring_main(int argc, char **argv);

int main(int argc, char **argv)
{
	struct rdmaxfer_agent *probe;
	const char *port;
	int ret;

	signal(SIGPIPE, SIG_IGN);
	ret = ring_main(argc, argv);	/* the grain ring's modes, or -1 */
	if (ret >= 0)
		return ret;
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

/* ======================================= grain ring between two hosts ====
 *
 * "--ring-server ADDR PORT" (guest A): a ring target of RING_SLOTS slots
 * on an agent of its own listening on ADDR:PORT.  The first peer that
 * asks ("RING?" message) gets the target info as one line of JSON (the
 * control plane), then the target takes RING_GRAINS grains, checking for
 * each that its completion names the next index, that it sits in slot
 * index % N, and every byte of it (a pattern seeded by the index); it
 * releases every 8th grain late, so that the initiator runs out of credit
 * and waits; then it answers "OK n grains" or "BAD ..." and waits for
 * "BYE".  Exit 0 when every grain was right.
 *
 * "--ring" (guest B): the CUnit/TAP initiator: connects to
 * $RC_PEER_ADDR:$RC_PEER_PORT + 9, gets the info, attaches and puts the
 * grains from two local buffers each (scatter-gather), every fourth batch
 * behind one doorbell, and checks the target's verdict.
 *
 * Then the continuous flavour on the same agents: the initiator asks
 * "SAMPLES?", the target replaces its ring with a sample ring of
 * RING_S_CHANNELS planes of RING_S_LEN samples that it takes by callback
 * (checking and releasing every write from its progress thread), sends
 * that ring's info, and answers "OK ..." or "BAD ..." once the last
 * sample came; the initiator writes RS_WRITES writes of varying counts
 * over several laps (blocking on the credits the callback returns), many
 * of them across the ring's end.
 */
#define RING_SLOTS	4
#define RING_SLOT_SIZE	(64 * 1024)
#define RING_GRAINS	48
#define RING_PORT_OFF	9
#define RS_WRITES	30

/* Samples in all RS_WRITES writes: both sides compute the same. */
static uint64_t rs_total(void)
{
	uint64_t t = 0;
	int k;

	for (k = 0; k < RS_WRITES; k++)
		t += ring_s_count(k);
	return t;
}

struct rs_state {
	struct rdmaxfer_ring *ring;
	pthread_mutex_t lock;
	uint64_t taken;		/* head of the last write in */
	int calls, wraps;
	char bad[128];		/* the first fault, empty while none */
};

/* The target's callback, on its progress thread: each write in order,
 * every sample of both planes where the fragments say, then released. */
static void rs_on_samples(void *user, const struct rdmaxfer_samples *s)
{
	struct rs_state *st = user;
	uint64_t idx;
	uint32_t c;
	int ret;

	pthread_mutex_lock(&st->lock);
	/* the first fault is the one reported */
	ret = ring_s_check(s, &idx, &c);
	if (!st->bad[0] && (s->count == 0 || s->head - s->count != st->taken ||
			    (ret && idx == UINT64_MAX)))
		snprintf(st->bad, sizeof(st->bad),
			 "BAD write %d: head %llu count %u after %llu",
			 st->calls, (unsigned long long)s->head, s->count,
			 (unsigned long long)st->taken);
	else if (!st->bad[0] && ret)
		snprintf(st->bad, sizeof(st->bad),
			 "BAD sample %llu of channel %u",
			 (unsigned long long)idx, c);
	ret = rdmaxfer_ring_release(st->ring, s->head);
	if (ret && !st->bad[0])
		snprintf(st->bad, sizeof(st->bad), "BAD release %llu: %s",
			 (unsigned long long)s->head, rdmaxfer_strerror(ret));
	st->taken = s->head;
	st->wraps += s->frag_len[1] != 0;
	st->calls++;
	pthread_mutex_unlock(&st->lock);
}

/* The next message notification of agent (others are not expected). */
static int ring_msg(struct rdmaxfer_agent *agent, struct rdmaxfer_notif *n,
		    int timeout_ms)
{
	double t0 = now_s();
	int ret;

	do {
		ret = rdmaxfer_wait_notifs(agent, n, 1, 1000);
		if (ret == 1 && n->type == RDMAXFER_NOTIF_MSG && n->len) {
			n->data[n->len - 1] = 0;
			return 0;
		}
		if (ret < 0 && ret != -ETIMEDOUT)
			return ret;
	} while ((now_s() - t0) * 1000 < timeout_ms);
	return -ETIMEDOUT;
}

/* Send ring's target info to ini as one line of JSON (the control
 * plane); what names the ring in the log.  0 or the error, said. */
static int ring_info_send(struct rdmaxfer_ring *ring,
			  struct rdmaxfer_peer *ini, const char *what)
{
	struct rdmaxfer_ring_info info;
	char json[RDMAXFER_RING_JSON_MAX];
	int ret;

	ret = rdmaxfer_ring_get_info(ring, &info);
	if (!ret)
		ret = rdmaxfer_ring_info_json(&info, json, sizeof(json));
	if (ret > 0)
		ret = 0;
	if (!ret)
		ret = send_msg(ini, CMD, json);
	if (ret)
		fprintf(stderr, "ring server: %s info: %s\n", what,
			rdmaxfer_strerror(ret));
	else
		printf("ring server: %s info sent: %s\n", what, json);
	return ret;
}

/*
 * The target's samples phase: a sample ring taken by callback, its info
 * to ini, then (every sample in, or WAIT_MS without progress) the
 * verdict, and "BYE".  0 when every write was right.
 */
static int rs_serve(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *ini)
{
	static struct rdmaxfer_notif n;
	struct rdmaxfer_ring *ring = NULL;
	char reply[160];
	struct rs_state st;
	uint64_t total = rs_total(), last = 0, taken = 0;
	bool bad = false;
	double t0;
	int ret;

	memset(&st, 0, sizeof(st));
	pthread_mutex_init(&st.lock, NULL);
	ret = rdmaxfer_ring_create_samples(agent, RING_S_CHANNELS, RING_S_LEN,
					   4, 0, &ring);
	st.ring = ring;
	if (!ret)
		ret = rdmaxfer_ring_set_samples_cb(ring, rs_on_samples, &st);
	if (ret)
		fprintf(stderr, "ring server: sample ring: %s\n",
			rdmaxfer_strerror(ret));
	if (!ret)
		ret = ring_info_send(ring, ini, "sample ring");
	if (ret)
		goto out;
	/* the ring's callback takes its writes: wait on its count */
	t0 = now_s();
	while (now_s() - t0 < WAIT_MS / 1000.0) {
		pthread_mutex_lock(&st.lock);
		taken = st.taken;
		bad = st.bad[0] != 0;
		pthread_mutex_unlock(&st.lock);
		if (taken == total || bad)
			break;
		if (taken != last) {
			last = taken;
			t0 = now_s();
		}
		usleep(1000);
	}
	rdmaxfer_ring_set_samples_cb(ring, NULL, NULL);
	if (st.bad[0])
		snprintf(reply, sizeof(reply), "%s", st.bad);
	else if (taken != total)
		snprintf(reply, sizeof(reply),
			 "BAD %llu of %llu samples came",
			 (unsigned long long)taken, (unsigned long long)total);
	else
		snprintf(reply, sizeof(reply),
			 "OK %llu samples in %d writes, %d across the end",
			 (unsigned long long)total, st.calls, st.wraps);
	ret = strncmp(reply, "OK ", 3) ? -EBADMSG : 0;
	printf("ring server: %s\n", reply);
	if (send_msg(ini, CMD, reply) || ring_msg(agent, &n, 60000))
		fprintf(stderr, "ring server: no BYE after the samples\n");
out:
	if (ring)
		rdmaxfer_ring_destroy(ring);
	pthread_mutex_destroy(&st.lock);
	return ret;
}

static int ring_serve(const char *host, uint16_t port)
{
	static struct rdmaxfer_notif n;
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_peer *ini;
	struct rdmaxfer_ring *ring = NULL;
	struct rdmaxfer_grain g;
	char reply[128];
	uint64_t i;
	long bad = -1;
	int ret;

	ret = new_agent(RDMAXFER_PROGRESS_THREAD, 1, &agent);
	if (ret) {
		fprintf(stderr, "ring server: agent: %s\n",
			rdmaxfer_strerror(ret));
		return 1;
	}
	ret = rdmaxfer_listen(agent, host, port);
	if (!ret)
		ret = rdmaxfer_ring_create(agent, RING_SLOTS, RING_SLOT_SIZE, 0,
					   &ring);
	/* the initiator's control connection (a notification names only a
	 * peer the application accepted), then its question */
	if (!ret)
		ret = rdmaxfer_accept(agent, 300000, &ini);
	if (!ret)
		ret = ring_msg(agent, &n, 300000);
	if (!ret && strcmp((char *)n.data, "RING?"))
		ret = -EPROTO;
	if (ret) {
		fprintf(stderr, "ring server: setup: %s\n",
			rdmaxfer_strerror(ret));
		goto out;
	}
	ret = ring_info_send(ring, ini, "target");
	if (ret)
		goto out;
	snprintf(reply, sizeof(reply), "OK %d grains", RING_GRAINS);
	for (i = 0; i < RING_GRAINS; i++) {
		ret = rdmaxfer_ring_wait(ring, WAIT_MS, &g);
		if (ret) {
			snprintf(reply, sizeof(reply), "BAD grain %llu: %s",
				 (unsigned long long)i, rdmaxfer_strerror(ret));
			break;
		}
		if (g.index != i || g.slot != i % RING_SLOTS ||
		    (bad = mismatch(g.data, RING_SLOT_SIZE, (uint32_t)i)) >= 0) {
			snprintf(reply, sizeof(reply),
				 "BAD grain %llu: index %llu slot %u byte %ld",
				 (unsigned long long)i,
				 (unsigned long long)g.index, g.slot, bad);
			ret = -EBADMSG;
			break;
		}
		/* a slow consumer now and then: the initiator waits */
		if (i % 8 == 7)
			usleep(50 * 1000);
		ret = rdmaxfer_ring_release(ring, g.index);
		if (ret)
			break;
	}
	printf("ring server: %s\n", reply);
	if (send_msg(ini, CMD, reply) || ring_msg(agent, &n, 60000)) {
		fprintf(stderr, "ring server: no BYE\n");
		goto out;
	}
	if (!ret && !strcmp((char *)n.data, "SAMPLES?")) {
		rdmaxfer_ring_destroy(ring);
		ring = NULL;
		ret = rs_serve(agent, ini);
	}
out:
	if (ring)
		rdmaxfer_ring_destroy(ring);
	rdmaxfer_agent_destroy(agent);
	return ret ? 1 : 0;
}

/* The initiator's samples phase: "SAMPLES?" on ctl, then the writes. */
static void ring_samples(struct rdmaxfer_agent *a, struct rdmaxfer_peer *ctl)
{
	static struct rdmaxfer_notif n;
	struct rdmaxfer_ring_writer *w = NULL;
	struct rdmaxfer_ring_info info;
	struct rdmaxfer_iov ch[RING_S_CHANNELS];
	uint32_t *buf[RING_S_CHANNELS], c, cnt;
	uint64_t head = 0;
	double t0;
	int k;

	CU_ASSERT_EQUAL_FATAL(send_msg(ctl, CMD, "SAMPLES?"), 0);
	CU_ASSERT_EQUAL_FATAL(ring_msg(a, &n, WAIT_MS), 0);
	rc_diag("sample ring info: %s", (char *)n.data);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_info_parse_json((char *)n.data,
							    &info), 0);
	CU_ASSERT_EQUAL(info.flavour, RDMAXFER_RING_CONTINUOUS);
	CU_ASSERT_EQUAL(info.channels, RING_S_CHANNELS);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &info, WAIT_MS, &w), 0);
	for (c = 0; c < RING_S_CHANNELS; c++) {
		buf[c] = malloc(RING_S_LEN * 4);
		CU_ASSERT_FATAL(buf[c] != NULL);
	}
	t0 = now_s();
	for (k = 0; k < RS_WRITES; k++) {
		cnt = ring_s_count(k);
		ring_s_fill(buf, ch, head, cnt);
		/* blocking: the target's callback returns the credits */
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_put_samples(w, head + cnt,
								cnt, ch,
								RING_S_CHANNELS,
								0, WAIT_MS), 0);
		/* the buffers are refilled next */
		CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
		head += cnt;
	}
	CU_ASSERT_EQUAL(head, rs_total());
	rc_diag("%llu samples x %d channels in %d writes put in %.2f s",
		(unsigned long long)head, RING_S_CHANNELS, RS_WRITES,
		now_s() - t0);
	CU_ASSERT_EQUAL(ring_msg(a, &n, WAIT_MS), 0);
	rc_diag("target: %s", (char *)n.data);
	CU_ASSERT(!strncmp((char *)n.data, "OK ", 3));
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	for (c = 0; c < RING_S_CHANNELS; c++)
		free(buf[c]);
}

static void test_ring_grains(void)
{
	static struct rdmaxfer_notif n;
	struct rdmaxfer_ring_writer *w = NULL;
	struct rdmaxfer_ring_info info;
	struct rdmaxfer_agent *a;
	struct rdmaxfer_peer *ctl = NULL;
	struct rdmaxfer_iov iov[2];
	uint16_t port = (uint16_t)(peer_port + RING_PORT_OFF);
	uint8_t *src;
	uint64_t i;
	double t0 = now_s();
	int ret;

	src = malloc(RING_SLOTS * RING_SLOT_SIZE);
	CU_ASSERT_FATAL(src != NULL);
	CU_ASSERT_EQUAL_FATAL(new_agent(RDMAXFER_PROGRESS_CALLER, 1, &a), 0);
	/* guest A starts its target after its other servers: keep trying */
	do {
		ret = rdmaxfer_connect(a, peer_addr, port, 5000, &ctl);
		if (ret)
			sleep(1);
	} while (ret && now_s() - t0 < 240);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL_FATAL(send_msg(ctl, CMD, "RING?"), 0);
	CU_ASSERT_EQUAL_FATAL(ring_msg(a, &n, WAIT_MS), 0);
	rc_diag("target info: %s", (char *)n.data);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_info_parse_json((char *)n.data,
							    &info), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_attach(a, &info, WAIT_MS, &w), 0);
	t0 = now_s();
	for (i = 0; i < RING_GRAINS; i++) {
		uint8_t *p = src + (i % RING_SLOTS) * RING_SLOT_SIZE;
		bool more = i % 4 != 3;

		/* the buffer's previous grain must have left it */
		if (i % RING_SLOTS == 0)
			CU_ASSERT_EQUAL_FATAL(rdmaxfer_ring_flush(w, WAIT_MS),
					      0);
		fill(p, RING_SLOT_SIZE, (uint32_t)i);
		iov[0].addr = p;
		iov[0].len = 1000;
		iov[1].addr = p + 1000;
		iov[1].len = RING_SLOT_SIZE - 1000;
		ret = rdmaxfer_ring_put(w, i, iov, 2,
					more ? RDMAXFER_POST_MORE : 0, WAIT_MS);
		CU_ASSERT_EQUAL_FATAL(ret, 0);
	}
	CU_ASSERT_EQUAL(rdmaxfer_ring_flush(w, WAIT_MS), 0);
	rc_diag("%d grains of %d KiB put in %.2f s", RING_GRAINS,
		RING_SLOT_SIZE / 1024, now_s() - t0);
	/* the target's verdict on every grain */
	CU_ASSERT_EQUAL(ring_msg(a, &n, WAIT_MS), 0);
	rc_diag("target: %s", (char *)n.data);
	CU_ASSERT(!strncmp((char *)n.data, "OK ", 3));
	CU_ASSERT_EQUAL(rdmaxfer_ring_detach(w), 0);
	if (!strncmp((char *)n.data, "OK ", 3))
		ring_samples(a, ctl);
	send_msg(ctl, CMD, "BYE");
	/* the target leaves on BYE: wait for that before tearing down, so
	 * that the BYE is not flushed with the QP (7.3's rxe sends from a
	 * work queue, after rdmaxfer_notif_send() returned) */
	t0 = now_s();
	while (rdmaxfer_peer_state(ctl) == RDMAXFER_PEER_CONNECTED &&
	       now_s() - t0 < 20)
		rdmaxfer_wait_notifs(a, &n, 1, 100);
	rdmaxfer_peer_destroy(ctl);
	rdmaxfer_agent_destroy(a);
	free(src);
}

static const struct rc_test_case ring_cases[] = {
	{ "ring_grains_and_samples", test_ring_grains },
	{ NULL, NULL },
};

/* --ring-server ADDR PORT, or --ring (the client's cases); -1 for the
 * other modes. */
static int ring_main(int argc, char **argv)
{
	const char *port;

	if (argc == 4 && !strcmp(argv[1], "--ring-server"))
		return ring_serve(argv[2], (uint16_t)atoi(argv[3]));
	if (argc < 2 || strcmp(argv[1], "--ring"))
		return -1;
	peer_addr = getenv("RC_PEER_ADDR");
	port = getenv("RC_PEER_PORT");
	if (!peer_addr || !*peer_addr || !port || !*port)
		rc_skip_all("RC_PEER_ADDR/RC_PEER_PORT not set: needs two guests (tests/vm/run-2host.sh)");
	peer_port = (uint16_t)atoi(port);
	rc_add_suite("rdmaxfer-2host-ring", NULL, NULL, ring_cases);
	return rc_test_main(argc - 1, argv + 1);
}
/* ================================== end of grain ring between two hosts */
