// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_auth.c - connection authentication between agents over
 * rxe (VM suite "hostile"; rdmaxfer(7) SECURITY):
 *
 *  - two agents with the same key file (two QPs a peer) connect and move
 *    data both ways, nothing counted; the key may come from
 *    $RDMAXFER_AUTH_KEY_FILE; a key file others can read is refused at
 *    creation (-EACCES);
 *  - different keys, and a key against none either way, are refused on
 *    both sides with -EKEYREJECTED and counted on both
 *    (peers_auth_refused), no peer reaching the application;
 *  - a raw verbs peer that copies the hello layout (hostile_raw.c) is
 *    refused and counted whether it sends a plain hello, or asks for the
 *    challenge and answers it with a guess; it never has a connected QP
 *    and the exported memory is unchanged;
 *  - a raw peer that holds the key completes the handshake byte by byte
 *    (so the layout is the one documented), and then its captured proof,
 *    replayed alone or after a replayed first hello, is refused: every
 *    challenge is fresh and answered once;
 *  - an agent with a key connecting to a raw listener that accepts
 *    anything fails, and its challenge request never brings a QP of its
 *    own to RTS (the listener gets no RTU).
 *
 * Skips (77) without $RXE_ADDR or a device.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <arpa/inet.h>

#define WAIT_MS		20000

#include "rdmaxfer_test_util.h"
#include "hostile.h"
#include "auth.h"

static const char *addr;
static char dir[] = "/tmp/rx-authvm-XXXXXX";
static char key_a[256], key_b[256], key_open[256];

static int write_key(char *path, const char *name, uint8_t seed, mode_t mode)
{
	uint8_t k[32];
	unsigned int i;
	int fd;

	snprintf(path, 256, "%s/%s", dir, name);
	for (i = 0; i < sizeof(k); i++)
		k[i] = (uint8_t)(seed * 31 + i);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, k, sizeof(k)) != sizeof(k) || fchmod(fd, mode)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int agent(const char *key, enum rdmaxfer_progress_mode mode,
		 uint32_t qps, struct rdmaxfer_agent **ap)
{
	struct rdmaxfer_agent_attr attr;

	rdmaxfer_agent_attr_init(&attr);
	attr.progress = mode;
	attr.qps_per_peer = qps;
	attr.auth_key_file = key;
	return rdmaxfer_agent_create(&attr, ap);
}

static uint64_t refused(struct rdmaxfer_agent *a)
{
	struct rdmaxfer_agent_stats s;

	if (rdmaxfer_agent_stats(a, &s, sizeof(s)))
		return ~0ULL;
	return s.peers_auth_refused;
}

static uint16_t listen_on(struct rdmaxfer_agent *srv)
{
	uint16_t port = 0;

	CU_ASSERT_EQUAL(rdmaxfer_listen(srv, addr, 0), 0);
	CU_ASSERT_EQUAL(rdmaxfer_listen_port(srv, &port), 0);
	return port;
}

/* A connect of cli to srv: its result, and the seconds it took. */
static int try_connect(struct rdmaxfer_agent *cli, uint16_t port,
		       struct rdmaxfer_peer **pp, double *secs)
{
	double t0 = now_s();
	int ret = rdmaxfer_connect(cli, addr, port, WAIT_MS, pp);

	if (secs)
		*secs = now_s() - t0;
	return ret;
}

/* WRITE from cli to srv's exported buffer, then READ it back. */
static void move_data(struct rdmaxfer_agent *srv, struct rdmaxfer_peer *cp)
{
	static uint8_t target[64 * 1024], src[16 * 1024], back[16 * 1024];
	struct rdmaxfer_iov iov = { src, sizeof(src) };
	struct rdmaxfer_iov biov = { back, sizeof(back) };
	struct rdmaxfer_mem *mem;
	struct rdmaxfer_desc d;

	memset(target, 0, sizeof(target));
	fill(src, sizeof(src), 35);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_register(srv, target,
						    sizeof(target),
						    RDMAXFER_MEM_HOST, &mem), 0);
	CU_ASSERT_EQUAL(rdmaxfer_mem_desc(mem, 4096, sizeof(src), &d), 0);
	CU_ASSERT_EQUAL(xfer_sync(cp, RDMAXFER_OP_WRITE, &iov, &d, 1, NULL),
			0);
	CU_ASSERT_EQUAL(first_bad(target + 4096, sizeof(src), 35),
			sizeof(src));
	memset(back, 0, sizeof(back));
	CU_ASSERT_EQUAL(xfer_sync(cp, RDMAXFER_OP_READ, &biov, &d, 1, NULL),
			0);
	CU_ASSERT_EQUAL(first_bad(back, sizeof(back), 35), sizeof(back));
	rdmaxfer_mem_deregister(mem);
}

static void test_same_key(void)
{
	struct rdmaxfer_agent *srv, *cli, *srv0, *cli0;
	struct rdmaxfer_peer *cp, *sp;
	double t_auth = 0, t_warm = 0, t_plain = 0;
	uint16_t port;

	CU_ASSERT_EQUAL_FATAL(agent(key_a, RDMAXFER_PROGRESS_THREAD, 1, &srv),
			      0);
	CU_ASSERT_EQUAL_FATAL(agent(key_a, RDMAXFER_PROGRESS_CALLER, 2, &cli),
			      0);
	port = listen_on(srv);
	CU_ASSERT_EQUAL_FATAL(try_connect(cli, port, &cp, &t_auth), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_accept(srv, WAIT_MS, &sp), 0);
	move_data(srv, cp);
	rdmaxfer_peer_destroy(cp);
	rdmaxfer_peer_destroy(sp);
	/* again, libcrypto warm: the cost of the handshake itself */
	CU_ASSERT_EQUAL_FATAL(try_connect(cli, port, &cp, &t_warm), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_accept(srv, WAIT_MS, &sp), 0);
	CU_ASSERT_EQUAL(refused(srv), 0);
	CU_ASSERT_EQUAL(refused(cli), 0);
	rdmaxfer_peer_destroy(cp);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(cli);
	rdmaxfer_agent_destroy(srv);

	/* the same without keys: today's handshake, for the cost */
	CU_ASSERT_EQUAL_FATAL(agent(NULL, RDMAXFER_PROGRESS_THREAD, 1, &srv0),
			      0);
	CU_ASSERT_EQUAL_FATAL(agent(NULL, RDMAXFER_PROGRESS_CALLER, 2, &cli0),
			      0);
	port = listen_on(srv0);
	CU_ASSERT_EQUAL_FATAL(try_connect(cli0, port, &cp, &t_plain), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_accept(srv0, WAIT_MS, &sp), 0);
	rc_diag("connect of 2 QPs: %.1f ms with a key (first of the process), %.1f ms (second), %.1f ms without",
		t_auth * 1e3, t_warm * 1e3, t_plain * 1e3);
	rdmaxfer_peer_destroy(cp);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(cli0);
	rdmaxfer_agent_destroy(srv0);
}

static void test_env_and_mode(void)
{
	struct rdmaxfer_agent *srv, *cli, *a = NULL;
	struct rdmaxfer_peer *cp, *sp;
	uint16_t port;

	CU_ASSERT_EQUAL(agent(key_open, RDMAXFER_PROGRESS_CALLER, 1, &a),
			-EACCES);
	CU_ASSERT_PTR_NULL(a);
	/* the environment names the key of both; attributes win over it */
	setenv("RDMAXFER_AUTH_KEY_FILE", key_a, 1);
	CU_ASSERT_EQUAL_FATAL(agent(NULL, RDMAXFER_PROGRESS_THREAD, 1, &srv),
			      0);
	CU_ASSERT_EQUAL_FATAL(agent(NULL, RDMAXFER_PROGRESS_CALLER, 1, &cli),
			      0);
	port = listen_on(srv);
	CU_ASSERT_EQUAL(try_connect(cli, port, &cp, NULL), 0);
	CU_ASSERT_EQUAL(rdmaxfer_accept(srv, WAIT_MS, &sp), 0);
	rdmaxfer_peer_destroy(cp);
	rdmaxfer_peer_destroy(sp);
	rdmaxfer_agent_destroy(cli);
	CU_ASSERT_EQUAL_FATAL(agent(key_b, RDMAXFER_PROGRESS_CALLER, 1, &cli),
			      0);
	CU_ASSERT_EQUAL(try_connect(cli, port, &cp, NULL), -EKEYREJECTED);
	unsetenv("RDMAXFER_AUTH_KEY_FILE");
	rdmaxfer_agent_destroy(cli);
	rdmaxfer_agent_destroy(srv);
}

/* cli with key kc connecting to srv with key ks is refused on both
 * sides, counted once on each, and nothing reaches srv's application. */
static void refused_pair(const char *ks, const char *kc, const char *what)
{
	struct rdmaxfer_agent *srv, *cli;
	struct rdmaxfer_peer *cp = NULL, *sp = NULL;
	uint16_t port;
	int ret;

	CU_ASSERT_EQUAL_FATAL(agent(ks, RDMAXFER_PROGRESS_THREAD, 1, &srv), 0);
	CU_ASSERT_EQUAL_FATAL(agent(kc, RDMAXFER_PROGRESS_CALLER, 2, &cli), 0);
	port = listen_on(srv);
	ret = try_connect(cli, port, &cp, NULL);
	rc_diag("%s: connect %s; refused: server %llu, client %llu", what,
		rdmaxfer_strerror(ret), (unsigned long long)refused(srv),
		(unsigned long long)refused(cli));
	CU_ASSERT_EQUAL(ret, -EKEYREJECTED);
	CU_ASSERT_PTR_NULL(cp);
	CU_ASSERT_EQUAL(rdmaxfer_accept(srv, 300, &sp), -ETIMEDOUT);
	CU_ASSERT_EQUAL(refused(srv), 1);
	CU_ASSERT_EQUAL(refused(cli), 1);
	rdmaxfer_agent_destroy(cli);
	rdmaxfer_agent_destroy(srv);
}

static void test_refused(void)
{
	refused_pair(key_a, key_b, "different keys");
	refused_pair(key_a, NULL, "key against none");
	refused_pair(NULL, key_a, "none against a key");
}

/* --------------------------------------------------- raw verbs peers */

struct rawsrv {
	struct rdmaxfer_agent *srv;
	struct rdmaxfer_mem *mem;
	uint8_t *target;
	uint16_t port;
	uint64_t hellos_bad0;
};

#define TARGET_LEN	(64 * 1024)

static void rawsrv_up(struct rawsrv *s)
{
	struct rdmaxfer_agent_stats st;

	memset(s, 0, sizeof(*s));
	s->target = aligned_alloc(4096, TARGET_LEN);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s->target);
	fill(s->target, TARGET_LEN, 77);
	CU_ASSERT_EQUAL_FATAL(agent(key_a, RDMAXFER_PROGRESS_THREAD, 1,
				    &s->srv), 0);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_mem_register(s->srv, s->target,
						    TARGET_LEN,
						    RDMAXFER_MEM_HOST,
						    &s->mem), 0);
	s->port = listen_on(s->srv);
	rdmaxfer_agent_stats(s->srv, &st, sizeof(st));
	s->hellos_bad0 = st.hellos_bad;
}

static void rawsrv_down(struct rawsrv *s)
{
	struct rdmaxfer_agent_stats st;
	struct rdmaxfer_peer *sp;

	/* nothing was handed out, nothing written, no hello was bad */
	CU_ASSERT_EQUAL(rdmaxfer_accept(s->srv, 200, &sp), -ETIMEDOUT);
	CU_ASSERT_EQUAL(first_bad(s->target, TARGET_LEN, 77), TARGET_LEN);
	rdmaxfer_agent_stats(s->srv, &st, sizeof(st));
	CU_ASSERT_EQUAL(st.hellos_bad, s->hellos_bad0);
	rdmaxfer_mem_deregister(s->mem);
	rdmaxfer_agent_destroy(s->srv);
	free(s->target);
}

static uint64_t fresh_token(void)
{
	uint64_t t = 0;

	if (getrandom(&t, sizeof(t), 0) != sizeof(t))
		t = (uint64_t)now_s();
	return t;
}

/* The REJ of the last raw_open(): its welcome flags, or -1. */
static int rej_flags(const struct raw *r)
{
	if (r->rej_len < 16 || memcmp(r->rej, "RDXH", 4))
		return -1;
	return r->rej[6] | r->rej[7] << 8;
}

/* One connect of a raw peer with hello pd; 0 when established (then
 * *out keeps the connection, else it is closed), else the REJ's flags
 * in *flags (the REJ in rej when given). */
static int raw_try(struct rawsrv *s, const uint8_t *pd, uint8_t len,
		   int *flags, uint8_t *rej, struct raw *out)
{
	struct raw r;
	int ret = raw_open(&r, addr, s->port, pd, len);

	*flags = rej_flags(&r);
	if (rej)
		memcpy(rej, r.rej, sizeof(r.rej));
	if (!ret && out) {
		*out = r;
		return 0;
	}
	raw_close(&r);
	return ret;
}

static void test_raw_without_key(void)
{
	uint8_t pd[56], rej[64];
	struct rawsrv s;
	uint64_t r0;
	int flags;

	rawsrv_up(&s);
	r0 = refused(s.srv);
	/* the hello as a foreign client writes it, no flags */
	memset(pd, 0, sizeof(pd));
	hello(pd, 1, 0, 1, fresh_token());
	CU_ASSERT_EQUAL(raw_try(&s, pd, 32, &flags, NULL, NULL),
			-ECONNREFUSED);
	CU_ASSERT_EQUAL(flags, RX_WELCOME_AUTH_REFUSED);
	CU_ASSERT_EQUAL(refused(s.srv), r0 + 1);
	/* asks for the challenge, gets one, answers with a guess */
	put16(pd + 10, RX_HELLO_AUTH);
	CU_ASSERT_EQUAL(getrandom(pd + 32, 16, 0), 16);
	CU_ASSERT_EQUAL(raw_try(&s, pd, 48, &flags, rej, NULL),
			-ECONNREFUSED);
	CU_ASSERT_EQUAL(flags, RX_WELCOME_CHALLENGE);
	CU_ASSERT_EQUAL(refused(s.srv), r0 + 1);
	put16(pd + 10, RX_HELLO_PROOF);
	CU_ASSERT_EQUAL(getrandom(pd + 32, 16, 0), 16);
	CU_ASSERT_EQUAL(raw_try(&s, pd, 48, &flags, NULL, NULL),
			-ECONNREFUSED);
	CU_ASSERT_EQUAL(flags, RX_WELCOME_AUTH_REFUSED);
	CU_ASSERT_EQUAL(refused(s.srv), r0 + 2);
	/* a proof with no challenge asked for (another token) */
	put64(pd + 20, fresh_token());
	CU_ASSERT_EQUAL(raw_try(&s, pd, 48, &flags, NULL, NULL),
			-ECONNREFUSED);
	CU_ASSERT_EQUAL(refused(s.srv), r0 + 3);
	rawsrv_down(&s);
}

/* A raw peer that holds the key: the whole handshake by hand, then the
 * replays of what it sent. */
static void test_raw_replay(void)
{
	uint8_t req1[56], req2[56], rej[64], rej2[64], mac[RX_AUTH_MAC_LEN];
	struct rx_auth *auth = NULL;
	struct rx_auth_ctx c = { 0 };
	struct rdmaxfer_peer *sp;
	struct rawsrv s;
	struct raw ok;
	uint64_t token = fresh_token(), r0;
	int flags;

	CU_ASSERT_EQUAL_FATAL(rx_auth_load(key_a, &auth), 0);
	rawsrv_up(&s);
	r0 = refused(s.srv);
	memset(req1, 0, sizeof(req1));
	hello(req1, 1, 0, 1, token);
	put16(req1 + 10, RX_HELLO_AUTH);
	CU_ASSERT_EQUAL(getrandom(req1 + 32, 16, 0), 16);
	CU_ASSERT_EQUAL(raw_try(&s, req1, 48, &flags, rej, NULL),
			-ECONNREFUSED);
	CU_ASSERT_EQUAL_FATAL(flags, RX_WELCOME_CHALLENGE);
	/* the accepting side's proof checks out with the documented fields */
	memcpy(c.nonce_a, req1 + 32, 16);
	memcpy(c.nonce_p, rej + 16, 16);
	c.id_a = 0x4057113ULL;		/* hello()'s agent id */
	memcpy(&c.id_p, rej + 8, 8);
	c.id_p = le64toh(c.id_p);
	c.token = token;
	c.qp_index = 0;
	c.nqps = 1;
	CU_ASSERT_EQUAL(rx_auth_check(auth, RX_AUTH_PASSIVE, &c, rej + 32,
				      RX_AUTH_MAC_LEN), 0);
	CU_ASSERT_EQUAL(rx_auth_mac(auth, RX_AUTH_ACTIVE, &c, mac), 0);
	memcpy(req2, req1, sizeof(req2));
	put16(req2 + 10, RX_HELLO_PROOF);
	memcpy(req2 + 32, mac, 16);
	CU_ASSERT_EQUAL_FATAL(raw_try(&s, req2, 48, &flags, NULL, &ok), 0);
	CU_ASSERT_EQUAL(rdmaxfer_accept(s.srv, WAIT_MS, &sp), 0);
	CU_ASSERT_EQUAL(refused(s.srv), r0);
	rdmaxfer_peer_destroy(sp);
	raw_close(&ok);

	/* the captured proof again: its challenge was answered */
	CU_ASSERT_EQUAL(raw_try(&s, req2, 48, &flags, NULL, NULL),
			-ECONNREFUSED);
	CU_ASSERT_EQUAL(flags, RX_WELCOME_AUTH_REFUSED);
	CU_ASSERT_EQUAL(refused(s.srv), r0 + 1);
	/* the captured first hello again gets a fresh challenge, which the
	 * captured proof does not answer */
	CU_ASSERT_EQUAL(raw_try(&s, req1, 48, &flags, rej2, NULL),
			-ECONNREFUSED);
	CU_ASSERT_EQUAL(flags, RX_WELCOME_CHALLENGE);
	CU_ASSERT_NOT_EQUAL(memcmp(rej + 16, rej2 + 16, 16), 0);
	CU_ASSERT_EQUAL(raw_try(&s, req2, 48, &flags, NULL, NULL),
			-ECONNREFUSED);
	CU_ASSERT_EQUAL(flags, RX_WELCOME_AUTH_REFUSED);
	CU_ASSERT_EQUAL(refused(s.srv), r0 + 2);
	/* the peer accepted above wrote nothing: exports untouched */
	rawsrv_down(&s);
	rx_auth_free(auth);
}

/* --------------------------------------- a listener that accepts all */

struct rogue {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id, *conns[8];
	struct ibv_cq *cq;
	unsigned int nconns, requests, established, refused;
	uint16_t port;
};

struct connector {
	struct rdmaxfer_agent *cli;
	uint16_t port;
	int ret;
};

static void *connect_thread(void *arg)
{
	struct connector *c = arg;
	struct rdmaxfer_peer *p = NULL;

	c->ret = rdmaxfer_connect(c->cli, addr, c->port, 3000, &p);
	if (!c->ret)
		rdmaxfer_peer_destroy(p);
	return NULL;
}

/* Accept every request with a plain welcome, a QP of its own behind it;
 * count what the connecting side does next. */
static void rogue_event(struct rogue *r, struct rdma_cm_event *ev)
{
	struct rdma_conn_param cp = { 0 };
	struct ibv_qp_init_attr qa = { 0 };
	uint8_t w[16];

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		r->requests++;
		if (r->nconns == 8 || (!r->cq && !(r->cq = ibv_create_cq(
				ev->id->verbs, 16, NULL, NULL, 0)))) {
			rdma_reject(ev->id, NULL, 0);
			break;
		}
		r->conns[r->nconns++] = ev->id;
		welcome(w, HELLO_MAGIC, 1, 0, 0xbad);
		qa.send_cq = r->cq;
		qa.recv_cq = r->cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = 1;
		qa.cap.max_recv_wr = 1;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		cp.private_data = w;
		cp.private_data_len = sizeof(w);
		cp.responder_resources = 1;
		cp.initiator_depth = 1;
		if (rdma_create_qp(ev->id, NULL, &qa) || rdma_accept(ev->id, &cp))
			rdma_reject(ev->id, NULL, 0);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		r->established++;
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_DISCONNECTED:
		r->refused++;
		break;
	default:
		break;
	}
}

/*
 * An agent with a key connecting to a listener that accepts anything
 * (no agent of ours): the connect fails, and the challenge request's
 * REP never makes a QP of the connecting side reach RTS, which the
 * listener sees as no RTU (no ESTABLISHED) but a REJ.  With a QP behind
 * that request librdmacm would have moved it to RTS and sent the RTU.
 */
static void test_rogue_listener(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct pollfd pfd;
	struct connector c = { 0 };
	struct rogue r = { 0 };
	struct rdma_cm_event *ev;
	pthread_t t;
	double end;
	unsigned int i;

	inet_pton(AF_INET, addr, &sin.sin_addr);
	r.ch = rdma_create_event_channel();
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.ch);
	CU_ASSERT_FATAL(!rdma_create_id(r.ch, &r.id, NULL, RDMA_PS_TCP));
	CU_ASSERT_FATAL(!rdma_bind_addr(r.id, (struct sockaddr *)&sin));
	CU_ASSERT_FATAL(!rdma_listen(r.id, 8));
	c.port = ntohs(rdma_get_src_port(r.id));
	CU_ASSERT_EQUAL_FATAL(agent(key_a, RDMAXFER_PROGRESS_CALLER, 1,
				    &c.cli), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, connect_thread, &c), 0);
	pfd.fd = r.ch->fd;
	pfd.events = POLLIN;
	/* the connect is over within its 3 s; then 1 s for late events */
	end = now_s() + 5;
	while (now_s() < end) {
		if (poll(&pfd, 1, 100) != 1 || rdma_get_cm_event(r.ch, &ev))
			continue;
		rogue_event(&r, ev);
		rdma_ack_cm_event(ev);
		if (r.requests && r.refused >= r.requests)
			break;
	}
	pthread_join(t, NULL);
	rc_diag("listener accepting all: connect %s; %u requests, %u RTUs, %u refused",
		rdmaxfer_strerror(c.ret), r.requests, r.established,
		r.refused);
	CU_ASSERT_NOT_EQUAL(c.ret, 0);
	CU_ASSERT_EQUAL(r.requests, 1);
	CU_ASSERT_EQUAL(r.established, 0);
	for (i = 0; i < r.nconns; i++) {
		if (r.conns[i]->qp)
			rdma_destroy_qp(r.conns[i]);
		rdma_destroy_id(r.conns[i]);
	}
	if (r.cq)
		ibv_destroy_cq(r.cq);
	rdma_destroy_id(r.id);
	rdma_destroy_event_channel(r.ch);
	rdmaxfer_agent_destroy(c.cli);
}

static int suite_init(void)
{
	if (!mkdtemp(dir) || write_key(key_a, "a", 1, 0600) ||
	    write_key(key_b, "b", 2, 0600) ||
	    write_key(key_open, "open", 1, 0644))
		return -1;
	unsetenv("RDMAXFER_AUTH_KEY_FILE");
	return 0;
}

static int suite_clean(void)
{
	unlink(key_a);
	unlink(key_b);
	unlink(key_open);
	rmdir(dir);
	return 0;
}

static const struct rc_test_case cases[] = {
	{ "same_key", test_same_key },
	{ "env_and_mode", test_env_and_mode },
	{ "refused", test_refused },
	{ "raw_without_key", test_raw_without_key },
	{ "raw_replay", test_raw_replay },
	{ "rogue_listener", test_rogue_listener },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	addr = rxe_addr_or_skip();
	signal(SIGPIPE, SIG_IGN);
	rc_add_suite("auth", suite_init, suite_clean, cases);
	return rc_test_main(argc, argv);
}
