/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * hostile.h - what the parts of test_rdmaxfer_hostile share: librdmaxfer's
 * wire written out by hand (the hostile peer builds its hellos, welcomes
 * and ring attaches byte by byte from the layouts in librdmaxfer/core/hello.c
 * and ring_info.c, as a foreign client would), the target's bounds, the
 * commands the test sends its target process over a socketpair
 * (hostile_target.c) and the raw verbs peer (hostile_raw.c).
 */
#ifndef HOSTILE_H
#define HOSTILE_H

#include <endian.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rdmaxfer.h"

/*
 * The target's bounds, small so that a flood reaches them quickly: its
 * queue (MAX_NOTIFS notifications of about 1 KiB), one peer's share of
 * it, the passive peers it keeps before accepting them, how long one may
 * take over its handshake, its receive buffers.
 */
#define MAX_NOTIFS	512
#define MAX_PEER	128
#define MAX_HALF_OPEN	8
#define CM_TIMEOUT_MS	3000
#define SRQ_DEPTH	64
#define EXPORT_LEN	(1024 * 1024)
#define GUARD_LEN	(64 * 1024)
#define RING_SLOTS	16
#define RING_SLOT	4096

/* *flag, read under lock: the stop flags of the test's threads */
static inline bool flag_get(pthread_mutex_t *lock, const bool *flag)
{
	bool v;

	pthread_mutex_lock(lock);
	v = *flag;
	pthread_mutex_unlock(lock);
	return v;
}

/* ------------------------------------------------------ the wire, by hand */

#define HELLO_MAGIC	0x48584452U	/* "RDXH" */
#define ATTACH_VALUE	0x41584452U	/* "RDXA": a ring attach message */
#define RING_MAGIC	0x52584452U	/* "RDXR" */

static inline void put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static inline void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

/* The connect hello (rdma_cm private data of a REQ), 32 bytes:
 * magic, version, QP index, QP count, flags u16 (0: no authentication;
 * test_rdmaxfer_auth writes the others), agent id, token, reserved u32. */
static inline void hello(uint8_t *h, uint16_t version, uint16_t qp_index,
			 uint16_t nqps, uint64_t token)
{
	memset(h, 0, 32);
	put32(h, HELLO_MAGIC);
	put16(h + 4, version);
	put16(h + 6, qp_index);
	put16(h + 8, nqps);
	put64(h + 12, 0x4057113ULL);
	put64(h + 20, token);
}

/* The welcome (private data of a REP or REJ), 16 bytes: magic, version,
 * reserved u16, agent id. */
static inline void welcome(uint8_t *w, uint32_t magic, uint16_t version,
			   uint16_t reserved, uint64_t id)
{
	memset(w, 0, 16);
	put32(w, magic);
	put16(w + 4, version);
	put16(w + 6, reserved);
	put64(w + 8, id);
}

/* A ring attach, 24 bytes: magic, version, reserved u16, the slots'
 * address, their rkey, reserved u32. */
static inline void attach_msg(uint8_t *m, uint64_t slots_addr, uint32_t rkey)
{
	memset(m, 0, 24);
	put32(m, RING_MAGIC);
	put16(m + 4, 1);
	put64(m + 8, slots_addr);
	put32(m + 16, rkey);
}

/* ----------------------------------------------- the target process */

enum tgt_op {
	T_INFO = 1,	/* port, agent id, export desc, ring info blob */
	T_STATS,	/* counters, peers, RSS, what the application saw */
	T_PAUSE,	/* the application stops taking notifications */
	T_RESUME,
	T_ACCEPT,	/* accept the next peer (the good one) */
	T_CONNECT,	/* rdmaxfer_connect(addr, a): its result */
	T_CONNECT_MD,	/* rdmaxfer_connect_md(data) and prepares over it */
	T_EXIT,
};

struct tgt_cmd {
	uint32_t op;
	int32_t arg;
	uint64_t a;
	uint32_t len;
	uint8_t data[2048];
};

struct tgt_reply {
	int32_t ret;
	uint32_t nret;			/* T_CONNECT_MD: prepares tried */
	int32_t rets[64];		/* ... their results */
	struct rdmaxfer_agent_stats stats;
	uint32_t npeers, half_open;
	uint64_t rss_kb, rss_peak_kb;
	uint64_t app_msgs, app_imms;	/* notifications the app took */
	uint64_t app_named_bad;		/* ... naming a peer it does not own */
	uint64_t grains, grain_errors;	/* what its ring thread took */
	uint64_t guard_bad;		/* guard bytes changed */
	uint16_t port;
	uint64_t agent_id;
	struct rdmaxfer_desc export;
	uint32_t len;
	uint8_t data[1024];
};

/* The child: a target agent on addr, serving fd until T_EXIT; its exit
 * status. */
int hostile_target_main(int fd, const char *addr);

/* ------------------------------------------------- a raw hostile peer */

#define RAW_BUF		(64 * 1024)
#define RAW_SQ		256

struct raw {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;			/* RAW_BUF bytes, registered */
	unsigned int outstanding;
	uint8_t rej[64];		/* a REJ's private data */
	uint8_t rej_len;
	bool disconnected;
};

int raw_event(struct raw *r, int ms);
int raw_open(struct raw *r, const char *addr, uint16_t port, const void *pd,
	     uint8_t len);
void raw_close(struct raw *r);
int raw_post(struct raw *r, enum ibv_wr_opcode op, uint32_t imm, uint32_t len,
	     uint64_t raddr, uint32_t rkey);
int raw_reap(struct raw *r, unsigned int keep, int ms);
bool raw_wait_disconnect(struct raw *r, int ms);

#endif /* HOSTILE_H */
