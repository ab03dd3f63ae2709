// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * hello.c - the connection handshake carried in rdma_cm private data.
 *
 * The connecting side puts a hello in the REQ (struct rx_hello: magic,
 * version, which of the peer's QPs this is, how many there are, its agent
 * id and the token naming this peer connection); the accepting side
 * answers with a welcome in the REP, or in the REJ when it refuses
 * (struct rx_welcome: magic, version, its agent id).  Both arrive from the
 * network before anything is known about the sender, so every field is
 * checked here, in one place with no verbs dependency: the host tests and
 * the fuzzer (tests/fuzz_hello.c) build this file on its own.
 *
 * Wire format: little-endian, packed, at the start of the private data.
 * rdma_cm hands the receiver the whole private data area of the CM
 * message (56 bytes of a REQ over RoCE, for example), so what follows the
 * structure is padding and is ignored; what is shorter is refused.
 *
 *   hello   (RX_HELLO_LEN = 32)       welcome (RX_WELCOME_LEN = 16)
 *   0  u32 magic "RDXH"               0  u32 magic "RDXH"
 *   4  u16 version (1)                4  u16 version (1)
 *   6  u16 qp_index (< nqps)          6  u16 reserved (0)
 *   8  u16 nqps (1..RX_MAX_QPS)       8  u64 agent_id
 *   10 u16 reserved (0)
 *   12 u64 agent_id
 *   20 u64 token
 *   28 u32 reserved2 (0)
 *
 * Only magic and version are read from a message of another version: its
 * layout past them may differ, and the caller needs no more than "this is
 * our protocol, another version" to answer -EPROTO.
 *
 * Connection authentication (auth.h, conn.c) gives the hello's reserved
 * u16 at 10 and the welcome's at 6 a meaning, as flags, in the same
 * version: an agent without a key sends zero there and the bytes above,
 * exactly, and one of before refuses a flag as a reserved field set.
 *
 *   hello flags                       welcome flags (in a REJ only)
 *   RX_HELLO_AUTH  1: 32 u8[16] nonce RX_WELCOME_CHALLENGE 1:
 *   RX_HELLO_PROOF 2: 32 u8[16] proof   16 u8[16] nonce, 32 u8[32] proof
 *   (48 bytes; never both)            RX_WELCOME_AUTH_REFUSED 2 (16 bytes)
 */
#include <errno.h>
#include <string.h>

#include "auth.h"
#include "internal.h"

_Static_assert(sizeof(struct rx_hello) == RX_HELLO_LEN, "hello layout");
_Static_assert(sizeof(struct rx_welcome) == RX_WELCOME_LEN, "welcome layout");

/* The common header: -EBADMSG if it is not ours, -EPROTO if it is ours
 * but of another version. */
static int check_header(const uint8_t *p, size_t len)
{
	if (len < 6 || get32(p) != RX_HELLO_MAGIC)
		return -EBADMSG;
	if (get16(p + 4) != RX_PROTO_VERSION)
		return -EPROTO;
	return 0;
}

int rx_hello_encode(const struct rx_hello *h, void *buf, size_t cap)
{
	uint8_t *p = buf;

	if (!h || !p || cap < RX_HELLO_LEN || !h->nqps ||
	    h->nqps > RX_MAX_QPS || h->qp_index >= h->nqps)
		return -EINVAL;
	memset(p, 0, RX_HELLO_LEN);
	put32(p, RX_HELLO_MAGIC);
	put16(p + 4, RX_PROTO_VERSION);
	put16(p + 6, h->qp_index);
	put16(p + 8, h->nqps);
	put64(p + 12, h->agent_id);
	put64(p + 20, h->token);
	return 0;
}

int rx_hello_decode(const void *buf, size_t len, struct rx_hello *h)
{
	const uint8_t *p = buf;
	int ret;

	if (!p || !h)
		return -EBADMSG;
	ret = check_header(p, len);
	if (ret)
		return ret;
	if (len < RX_HELLO_LEN)
		return -EBADMSG;
	memset(h, 0, sizeof(*h));
	h->magic = RX_HELLO_MAGIC;
	h->version = RX_PROTO_VERSION;
	h->qp_index = get16(p + 6);
	h->nqps = get16(p + 8);
	h->agent_id = get64(p + 12);
	h->token = get64(p + 20);
	/* reserved fields must be zero, so a later version can give them a
	 * meaning without being misread by this one */
	if (get16(p + 10) || get32(p + 28))
		return -EBADMSG;
	if (!h->nqps || h->nqps > RX_MAX_QPS || h->qp_index >= h->nqps)
		return -EBADMSG;
	return 0;
}

int rx_welcome_encode(uint64_t agent_id, void *buf, size_t cap)
{
	uint8_t *p = buf;

	if (!p || cap < RX_WELCOME_LEN)
		return -EINVAL;
	memset(p, 0, RX_WELCOME_LEN);
	put32(p, RX_HELLO_MAGIC);
	put16(p + 4, RX_PROTO_VERSION);
	put64(p + 8, agent_id);
	return 0;
}

int rx_welcome_decode(const void *buf, size_t len, struct rx_welcome *w)
{
	const uint8_t *p = buf;
	int ret;

	if (!p || !w)
		return -EBADMSG;
	ret = check_header(p, len);
	if (ret)
		return ret;
	if (len < RX_WELCOME_LEN || get16(p + 6))
		return -EBADMSG;
	memset(w, 0, sizeof(*w));
	w->magic = RX_HELLO_MAGIC;
	w->version = RX_PROTO_VERSION;
	w->agent_id = get64(p + 8);
	return 0;
}

/*
 * The authenticated forms (auth.h; conn.c's handshake): the same header
 * with flags in the reserved u16, and what they announce after it.  The
 * reserved field of the message is cleared in a copy and the plain
 * decoder does the rest, so both forms are checked by one set of rules.
 */
/* A message's flags: none, or one of the two in mask. */
static bool flags_ok(uint16_t flags, uint16_t mask)
{
	return !(flags & ~mask) && flags != mask;
}

/* The common checks of an authenticated form: the header, the plain
 * length, the flags at off (*flags) and the length they need. */
static int auth_header(const uint8_t *p, size_t len, size_t plain,
		       size_t off, uint16_t mask, uint16_t needs_more,
		       size_t more, uint16_t *flags)
{
	int ret = check_header(p, len);

	if (ret)
		return ret;
	if (len < plain)
		return -EBADMSG;
	*flags = get16(p + off);
	if (!flags_ok(*flags, mask) || ((*flags & needs_more) && len < more))
		return -EBADMSG;
	return 0;
}

int rx_hello_encode_auth(const struct rx_hello *h,
			 const struct rx_hello_auth *a, void *buf, size_t cap)
{
	uint8_t *p = buf;
	int ret;

	if (!a || !flags_ok(a->flags, RX_HELLO_AUTH | RX_HELLO_PROOF))
		return -EINVAL;
	if (a->flags && cap < RX_HELLO_AUTH_LEN)
		return -EINVAL;
	ret = rx_hello_encode(h, buf, cap);
	if (ret)
		return ret;
	if (!a->flags)
		return RX_HELLO_LEN;
	put16(p + 10, a->flags);
	memcpy(p + RX_HELLO_LEN, a->data, RX_AUTH_NONCE_LEN);
	return RX_HELLO_AUTH_LEN;
}

int rx_hello_decode_auth(const void *buf, size_t len, struct rx_hello *h,
			 struct rx_hello_auth *a)
{
	const uint8_t *p = buf;
	uint8_t tmp[RX_HELLO_LEN];
	uint16_t flags;
	int ret;

	if (!p || !h || !a)
		return -EBADMSG;
	ret = auth_header(p, len, RX_HELLO_LEN, 10,
			  RX_HELLO_AUTH | RX_HELLO_PROOF,
			  RX_HELLO_AUTH | RX_HELLO_PROOF, RX_HELLO_AUTH_LEN,
			  &flags);
	if (ret)
		return ret;
	memcpy(tmp, p, sizeof(tmp));
	put16(tmp + 10, 0);
	ret = rx_hello_decode(tmp, sizeof(tmp), h);
	if (ret)
		return ret;
	memset(a, 0, sizeof(*a));
	a->flags = flags;
	if (flags)
		memcpy(a->data, p + RX_HELLO_LEN, RX_AUTH_NONCE_LEN);
	return 0;
}

int rx_welcome_encode_auth(uint64_t agent_id, const struct rx_welcome_auth *a,
			   void *buf, size_t cap)
{
	uint8_t *p = buf;
	int ret;

	if (!a || !flags_ok(a->flags,
			    RX_WELCOME_CHALLENGE | RX_WELCOME_AUTH_REFUSED))
		return -EINVAL;
	if ((a->flags & RX_WELCOME_CHALLENGE) && cap < RX_WELCOME_AUTH_LEN)
		return -EINVAL;
	ret = rx_welcome_encode(agent_id, buf, cap);
	if (ret)
		return ret;
	put16(p + 6, a->flags);
	if (!(a->flags & RX_WELCOME_CHALLENGE))
		return RX_WELCOME_LEN;
	memcpy(p + RX_WELCOME_LEN, a->nonce, RX_AUTH_NONCE_LEN);
	memcpy(p + RX_WELCOME_LEN + RX_AUTH_NONCE_LEN, a->mac, RX_AUTH_MAC_LEN);
	return RX_WELCOME_AUTH_LEN;
}

int rx_welcome_decode_auth(const void *buf, size_t len, struct rx_welcome *w,
			   struct rx_welcome_auth *a)
{
	const uint8_t *p = buf;
	uint8_t tmp[RX_WELCOME_LEN];
	uint16_t flags;
	int ret;

	if (!p || !w || !a)
		return -EBADMSG;
	ret = auth_header(p, len, RX_WELCOME_LEN, 6,
			  RX_WELCOME_CHALLENGE | RX_WELCOME_AUTH_REFUSED,
			  RX_WELCOME_CHALLENGE, RX_WELCOME_AUTH_LEN, &flags);
	if (ret)
		return ret;
	memcpy(tmp, p, sizeof(tmp));
	put16(tmp + 6, 0);
	ret = rx_welcome_decode(tmp, sizeof(tmp), w);
	if (ret)
		return ret;
	memset(a, 0, sizeof(*a));
	a->flags = flags;
	if (flags & RX_WELCOME_CHALLENGE) {
		memcpy(a->nonce, p + RX_WELCOME_LEN, RX_AUTH_NONCE_LEN);
		memcpy(a->mac, p + RX_WELCOME_LEN + RX_AUTH_NONCE_LEN,
		       RX_AUTH_MAC_LEN);
	}
	return 0;
}
