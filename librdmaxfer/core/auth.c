// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * auth.c - connection authentication: the agent's shared key read from
 * its key file, the HMAC-SHA256 proofs of the handshake, and the passive
 * side's challenges waiting for their proof.
 *
 * The crypto is OpenSSL's libcrypto (HMAC(), CRYPTO_memcmp(),
 * RAND_bytes()); nothing here is a cipher of our own.  What is proved,
 * and in which message, is conn.c's handshake (see the top of conn.c and
 * rdmaxfer(7) SECURITY).  A proof covers a fixed encoding of struct
 * rx_auth_ctx behind a label and the side it is from, so a proof can be
 * neither reflected back to its sender nor moved to another connection,
 * QP or nonce pair.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "auth.h"
#include "wire.h"

#define LABEL		"rdmaxfer-auth-1"
#define LABEL_LEN	(sizeof(LABEL) - 1)
#define MSG_LEN		(LABEL_LEN + 1 + 2 * RX_AUTH_NONCE_LEN + 3 * 8 + 2 * 2)

int rx_auth_load(const char *path, struct rx_auth **authp)
{
	struct rx_auth *auth;
	struct stat st;
	ssize_t n;
	size_t len = 0;
	int fd, ret;

	if (!path || !*path || !authp)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		fprintf(stderr, "librdmaxfer: key file %s: %s\n", path,
			strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		goto close;
	}
	/* as ssh does with a private key: a secret others can read is no
	 * secret, and one they can write is not ours */
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		fprintf(stderr, "librdmaxfer: key file %s: %s (mode %04o): refused; make it a regular file only its owner can read (chmod 600)\n",
			path, S_ISREG(st.st_mode) ? "group or others have access" :
			"not a regular file", (unsigned int)(st.st_mode & 07777));
		ret = -EACCES;
		goto close;
	}
	auth = calloc(1, sizeof(*auth));
	if (!auth) {
		ret = -ENOMEM;
		goto close;
	}
	/* one byte more than the most we take tells a longer file */
	for (;;) {
		uint8_t extra;
		void *to = len < RX_AUTH_KEY_MAX ? auth->key + len : &extra;

		n = read(fd, to, len < RX_AUTH_KEY_MAX ?
			 RX_AUTH_KEY_MAX - len : 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len > RX_AUTH_KEY_MAX)
			break;
	}
	if (n < 0) {
		ret = -errno;
		fprintf(stderr, "librdmaxfer: key file %s: %s\n", path,
			strerror(-ret));
		goto free;
	}
	if (len < RX_AUTH_KEY_MIN || len > RX_AUTH_KEY_MAX) {
		fprintf(stderr, "librdmaxfer: key file %s: %s than %u bytes: refused\n",
			path, len < RX_AUTH_KEY_MIN ? "shorter" : "longer",
			len < RX_AUTH_KEY_MIN ? RX_AUTH_KEY_MIN : RX_AUTH_KEY_MAX);
		ret = -EINVAL;
		goto free;
	}
	auth->key_len = len;
	close(fd);
	*authp = auth;
	return 0;

free:
	rx_auth_free(auth);
close:
	close(fd);
	return ret;
}

void rx_auth_free(struct rx_auth *auth)
{
	if (!auth)
		return;
	OPENSSL_cleanse(auth, sizeof(*auth));
	free(auth);
}

int rx_auth_nonce(uint8_t *nonce)
{
	return RAND_bytes(nonce, RX_AUTH_NONCE_LEN) == 1 ? 0 : -EIO;
}

static void encode(enum rx_auth_dir dir, const struct rx_auth_ctx *c,
		   uint8_t *m)
{
	memcpy(m, LABEL, LABEL_LEN);
	m += LABEL_LEN;
	*m++ = (uint8_t)dir;
	memcpy(m, c->nonce_a, RX_AUTH_NONCE_LEN);
	m += RX_AUTH_NONCE_LEN;
	memcpy(m, c->nonce_p, RX_AUTH_NONCE_LEN);
	m += RX_AUTH_NONCE_LEN;
	put64(m, c->id_a);
	put64(m + 8, c->id_p);
	put64(m + 16, c->token);
	put16(m + 24, c->qp_index);
	put16(m + 26, c->nqps);
}

int rx_auth_mac(const struct rx_auth *auth, enum rx_auth_dir dir,
		const struct rx_auth_ctx *c, uint8_t *mac)
{
	uint8_t m[MSG_LEN];
	unsigned int len = 0;

	encode(dir, c, m);
	if (!HMAC(EVP_sha256(), auth->key, (int)auth->key_len, m, sizeof(m),
		  mac, &len) || len != RX_AUTH_MAC_LEN)
		return -EIO;
	return 0;
}

int rx_auth_check(const struct rx_auth *auth, enum rx_auth_dir dir,
		  const struct rx_auth_ctx *c, const uint8_t *mac, size_t len)
{
	uint8_t want[RX_AUTH_MAC_LEN];
	int ret;

	if (!len || len > RX_AUTH_MAC_LEN)
		return -EACCES;
	ret = rx_auth_mac(auth, dir, c, want);
	if (!ret && CRYPTO_memcmp(want, mac, len))
		ret = -EACCES;
	OPENSSL_cleanse(want, sizeof(want));
	return ret ? -EACCES : 0;
}

void rx_auth_put(struct rx_auth *auth, const struct rx_auth_ctx *c,
		 int64_t deadline_ns, int64_t now_ns)
{
	struct rx_auth_slot *s, *pick = &auth->slots[0];
	unsigned int i;

	for (i = 0; i < RX_AUTH_SLOTS; i++) {
		s = &auth->slots[i];
		/* the same QP asked again: its old challenge is dead */
		if (s->deadline_ns && s->ctx.id_a == c->id_a &&
		    s->ctx.token == c->token &&
		    s->ctx.qp_index == c->qp_index) {
			pick = s;
			break;
		}
		if (!s->deadline_ns || s->deadline_ns <= now_ns) {
			pick = s;
			continue;
		}
		if (pick->deadline_ns && pick->deadline_ns > now_ns &&
		    s->deadline_ns < pick->deadline_ns)
			pick = s;
	}
	pick->ctx = *c;
	pick->deadline_ns = deadline_ns;
}

int rx_auth_take(struct rx_auth *auth, uint64_t id_a, uint64_t token,
		 uint16_t qp_index, int64_t now_ns, struct rx_auth_ctx *c)
{
	unsigned int i;

	for (i = 0; i < RX_AUTH_SLOTS; i++) {
		struct rx_auth_slot *s = &auth->slots[i];

		if (!s->deadline_ns || s->ctx.id_a != id_a ||
		    s->ctx.token != token || s->ctx.qp_index != qp_index)
			continue;
		s->deadline_ns = s->deadline_ns > now_ns ? s->deadline_ns : 0;
		if (!s->deadline_ns)
			return -ENOENT;
		*c = s->ctx;
		memset(s, 0, sizeof(*s));
		return 0;
	}
	return -ENOENT;
}
