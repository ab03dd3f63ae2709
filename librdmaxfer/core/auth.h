/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * auth.h - connection authentication (auth.c): the shared key of an
 * agent, the HMAC-SHA256 proofs its handshake carries, and the passive
 * side's bounded table of challenges waiting for their proof.  No verbs:
 * the host test (tests/test_rdmaxfer_auth.c) builds auth.c with hello.c
 * alone.  The handshake itself is conn.c's; rdmaxfer(7) SECURITY says
 * what it proves.
 */
#ifndef RDMAXFER_AUTH_H
#define RDMAXFER_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define RX_AUTH_NONCE_LEN	16
#define RX_AUTH_MAC_LEN		32	/* HMAC-SHA256 */
#define RX_AUTH_PROOF_LEN	16	/* the active side's, truncated to fit
					 * the REQ (56 bytes over RoCE) */
#define RX_AUTH_KEY_MIN		16
#define RX_AUTH_KEY_MAX		1024
/* challenges the passive side keeps; beyond it the oldest is dropped */
#define RX_AUTH_SLOTS		64

/* which side a proof is from: a proof of one cannot pass as the other's */
enum rx_auth_dir { RX_AUTH_PASSIVE = 'P', RX_AUTH_ACTIVE = 'A' };

/* What both proofs cover: both nonces, both agents, the peer connection
 * (token) and which of its QPs this is. */
struct rx_auth_ctx {
	uint8_t nonce_a[RX_AUTH_NONCE_LEN];	/* the connecting side's */
	uint8_t nonce_p[RX_AUTH_NONCE_LEN];	/* the accepting side's */
	uint64_t id_a, id_p;			/* agent ids */
	uint64_t token;
	uint16_t qp_index, nqps;
};

struct rx_auth_slot {
	struct rx_auth_ctx ctx;
	int64_t deadline_ns;		/* 0: free */
};

struct rx_auth {
	uint8_t key[RX_AUTH_KEY_MAX];
	size_t key_len;
	struct rx_auth_slot slots[RX_AUTH_SLOTS];
};

/* Read the key file: 0 and *authp, or -errno with a line on stderr
 * (-EACCES: readable by group or others, or not a regular file;
 * -EINVAL: shorter than RX_AUTH_KEY_MIN or longer than RX_AUTH_KEY_MAX). */
int rx_auth_load(const char *path, struct rx_auth **authp);
void rx_auth_free(struct rx_auth *auth);

/* RX_AUTH_NONCE_LEN random bytes: 0 or -EIO. */
int rx_auth_nonce(uint8_t *nonce);

/* The proof of side dir over c (RX_AUTH_MAC_LEN bytes): 0 or -EIO. */
int rx_auth_mac(const struct rx_auth *auth, enum rx_auth_dir dir,
		const struct rx_auth_ctx *c, uint8_t *mac);

/* Whether mac (its first len bytes) is side dir's proof over c, compared
 * in constant time: 0, or -EACCES. */
int rx_auth_check(const struct rx_auth *auth, enum rx_auth_dir dir,
		  const struct rx_auth_ctx *c, const uint8_t *mac, size_t len);

/* The passive side's challenges: put one (a free or expired slot, else
 * the oldest is overwritten); take the one of (id_a, token, qp_index)
 * that has not expired, which frees it: each is answered at most once. */
void rx_auth_put(struct rx_auth *auth, const struct rx_auth_ctx *c,
		 int64_t deadline_ns, int64_t now_ns);
int rx_auth_take(struct rx_auth *auth, uint64_t id_a, uint64_t token,
		 uint16_t qp_index, int64_t now_ns, struct rx_auth_ctx *c);

/*
 * The handshake's authentication fields (hello.c; layout at the top of
 * hello.c).  A hello's u16 at offset 10 (reserved, zero, before) holds
 * the flags, a welcome's u16 at offset 6 likewise.
 */
#define RX_HELLO_AUTH		0x0001	/* bytes 32..47: the sender's nonce */
#define RX_HELLO_PROOF		0x0002	/* bytes 32..47: the sender's proof */
#define RX_HELLO_AUTH_LEN	48
#define RX_WELCOME_CHALLENGE	0x0001	/* a REJ: nonce at 16, proof at 32 */
#define RX_WELCOME_AUTH_REFUSED	0x0002	/* a REJ: refused by authentication */
#define RX_WELCOME_AUTH_LEN	64

struct rx_hello;
struct rx_welcome;

struct rx_hello_auth {
	uint16_t flags;				/* RX_HELLO_* */
	uint8_t data[RX_AUTH_NONCE_LEN];	/* a nonce or a proof */
};

struct rx_welcome_auth {
	uint16_t flags;				/* RX_WELCOME_* */
	uint8_t nonce[RX_AUTH_NONCE_LEN];	/* with CHALLENGE */
	uint8_t mac[RX_AUTH_MAC_LEN];		/* with CHALLENGE */
};

/* Encoders return the bytes written (RX_HELLO_LEN or RX_HELLO_AUTH_LEN,
 * RX_WELCOME_LEN or RX_WELCOME_AUTH_LEN) or -EINVAL; decoders 0,
 * -EBADMSG or -EPROTO as rx_hello_decode() and rx_welcome_decode(), an
 * unknown flag, two of a hello's or a message too short for its flags
 * being -EBADMSG.  A zero a->flags is exactly the unauthenticated
 * format. */
int rx_hello_encode_auth(const struct rx_hello *h,
			 const struct rx_hello_auth *a, void *buf, size_t cap);
int rx_hello_decode_auth(const void *buf, size_t len, struct rx_hello *h,
			 struct rx_hello_auth *a);
int rx_welcome_encode_auth(uint64_t agent_id, const struct rx_welcome_auth *a,
			   void *buf, size_t cap);
int rx_welcome_decode_auth(const void *buf, size_t len, struct rx_welcome *w,
			   struct rx_welcome_auth *a);

#endif /* RDMAXFER_AUTH_H */
