// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_auth_wire.c - connection authentication on the host,
 * without a device: the library's own auth.c and hello.c.
 *
 *  - the key file: refused when group or others may read or write it, when
 *    it is not a regular file, too short or too long, or missing;
 *  - the proof: what rx_auth_mac() computes is HMAC-SHA256 over the
 *    documented encoding (recomputed here with libcrypto from the layout),
 *    and rx_auth_check() refuses it after a change of any field it
 *    covers, of the side it is from (a reflected proof), of the key, or
 *    of any byte of a truncated proof; two nonces differ;
 *  - the passive side's challenges: each answered at most once (a replay
 *    finds none), none after its deadline, at most RX_AUTH_SLOTS kept
 *    (the oldest goes), one per QP;
 *  - the authenticated hello and welcome: the plain forms are exactly the
 *    unauthenticated bytes, the flags and what follows them round-trip,
 *    and an unknown flag, both hello flags, or a message too short for
 *    its flags is refused with -EBADMSG.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth.h"
#include "internal.h"
#include "rc_test.h"

static char dir[] = "/tmp/rx-auth-XXXXXX";

static int write_key(const char *name, size_t len, mode_t mode, char *path)
{
	uint8_t buf[RX_AUTH_KEY_MAX + 8];
	size_t i;
	int fd;

	snprintf(path, 256, "%s/%s", dir, name);
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != (ssize_t)len || fchmod(fd, mode)) {
		close(fd);
		return -EIO;
	}
	close(fd);
	return 0;
}

static void test_key_file(void)
{
	static const mode_t bad[] = { 0640, 0604, 0620, 0602, 0644, 0660 };
	struct rx_auth *a = NULL;
	char path[256];
	unsigned int i;

	CU_ASSERT_EQUAL_FATAL(write_key("good", 32, 0600, path), 0);
	CU_ASSERT_EQUAL(rx_auth_load(path, &a), 0);
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(a->key_len, 32);
	CU_ASSERT_EQUAL(a->key[31], (uint8_t)(31 * 7 + 1));
	rx_auth_free(a);
	CU_ASSERT_EQUAL_FATAL(write_key("ro", 16, 0400, path), 0);
	a = NULL;
	CU_ASSERT_EQUAL(rx_auth_load(path, &a), 0);
	rx_auth_free(a);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL_FATAL(write_key("open", 32, bad[i], path), 0);
		a = NULL;
		CU_ASSERT_EQUAL(rx_auth_load(path, &a), -EACCES);
		CU_ASSERT_PTR_NULL(a);
	}
	CU_ASSERT_EQUAL_FATAL(write_key("short", 15, 0600, path), 0);
	CU_ASSERT_EQUAL(rx_auth_load(path, &a), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(write_key("max", RX_AUTH_KEY_MAX, 0600, path), 0);
	a = NULL;
	CU_ASSERT_EQUAL(rx_auth_load(path, &a), 0);
	if (a)
		CU_ASSERT_EQUAL(a->key_len, RX_AUTH_KEY_MAX);
	rx_auth_free(a);
	CU_ASSERT_EQUAL_FATAL(write_key("long", RX_AUTH_KEY_MAX + 1, 0600,
					path), 0);
	CU_ASSERT_EQUAL(rx_auth_load(path, &a), -EINVAL);
	/* a directory with owner-only rights is still no key file */
	snprintf(path, sizeof(path), "%s/d", dir);
	CU_ASSERT_EQUAL_FATAL(mkdir(path, 0700), 0);
	CU_ASSERT_EQUAL(rx_auth_load(path, &a), -EACCES);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/none", dir);
	CU_ASSERT_EQUAL(rx_auth_load(path, &a), -ENOENT);
	CU_ASSERT_EQUAL(rx_auth_load(NULL, &a), -EINVAL);
	CU_ASSERT_EQUAL(rx_auth_load("", &a), -EINVAL);
}

static struct rx_auth *key(uint8_t seed)
{
	struct rx_auth *a = calloc(1, sizeof(*a));
	unsigned int i;

	if (!a)
		abort();
	a->key_len = 32;
	for (i = 0; i < a->key_len; i++)
		a->key[i] = (uint8_t)(seed + i);
	return a;
}

static void sample_ctx(struct rx_auth_ctx *c)
{
	unsigned int i;

	for (i = 0; i < RX_AUTH_NONCE_LEN; i++) {
		c->nonce_a[i] = (uint8_t)(0x10 + i);
		c->nonce_p[i] = (uint8_t)(0x80 + i);
	}
	c->id_a = 0x1111222233334444ULL;
	c->id_p = 0x5555666677778888ULL;
	c->token = 0x99990000aaaabbbbULL;
	c->qp_index = 3;
	c->nqps = 4;
}

/* The encoding rdmaxfer(7) and auth.c describe, built byte by byte. */
static void test_mac_layout(void)
{
	static const uint8_t tail[28] = {
		0x44, 0x44, 0x33, 0x33, 0x22, 0x22, 0x11, 0x11,
		0x88, 0x88, 0x77, 0x77, 0x66, 0x66, 0x55, 0x55,
		0xbb, 0xbb, 0xaa, 0xaa, 0x00, 0x00, 0x99, 0x99,
		3, 0, 4, 0,
	};
	uint8_t m[15 + 1 + 32 + 28], want[32], got[32];
	struct rx_auth *a = key(1);
	struct rx_auth_ctx c;
	unsigned int len = 0;

	sample_ctx(&c);
	memcpy(m, "rdmaxfer-auth-1", 15);
	m[15] = 'P';
	memcpy(m + 16, c.nonce_a, 16);
	memcpy(m + 32, c.nonce_p, 16);
	memcpy(m + 48, tail, sizeof(tail));
	CU_ASSERT_PTR_NOT_NULL_FATAL(HMAC(EVP_sha256(), a->key, 32, m,
					  sizeof(m), want, &len));
	CU_ASSERT_EQUAL(rx_auth_mac(a, RX_AUTH_PASSIVE, &c, got), 0);
	CU_ASSERT_EQUAL(memcmp(want, got, 32), 0);
	m[15] = 'A';
	HMAC(EVP_sha256(), a->key, 32, m, sizeof(m), want, &len);
	CU_ASSERT_EQUAL(rx_auth_mac(a, RX_AUTH_ACTIVE, &c, got), 0);
	CU_ASSERT_EQUAL(memcmp(want, got, 32), 0);
	free(a);
}

static void test_mac_covers(void)
{
	struct rx_auth *a = key(1), *b = key(2);
	struct rx_auth_ctx c, d;
	uint8_t mac[RX_AUTH_MAC_LEN], n1[16], n2[16];
	unsigned int i, f;

	sample_ctx(&c);
	CU_ASSERT_EQUAL_FATAL(rx_auth_mac(a, RX_AUTH_ACTIVE, &c, mac), 0);
	CU_ASSERT_EQUAL(rx_auth_check(a, RX_AUTH_ACTIVE, &c, mac, 32), 0);
	CU_ASSERT_EQUAL(rx_auth_check(a, RX_AUTH_ACTIVE, &c, mac,
				      RX_AUTH_PROOF_LEN), 0);
	/* reflected, another key */
	CU_ASSERT_EQUAL(rx_auth_check(a, RX_AUTH_PASSIVE, &c, mac, 32),
			-EACCES);
	CU_ASSERT_EQUAL(rx_auth_check(b, RX_AUTH_ACTIVE, &c, mac, 32),
			-EACCES);
	CU_ASSERT_EQUAL(rx_auth_check(a, RX_AUTH_ACTIVE, &c, mac, 0),
			-EACCES);
	CU_ASSERT_EQUAL(rx_auth_check(a, RX_AUTH_ACTIVE, &c, mac, 33),
			-EACCES);
	/* every field covered */
	for (f = 0; f < 7; f++) {
		d = c;
		switch (f) {
		case 0: d.nonce_a[15] ^= 1; break;
		case 1: d.nonce_p[0] ^= 0x80; break;
		case 2: d.id_a ^= 1ULL << 63; break;
		case 3: d.id_p ^= 1; break;
		case 4: d.token ^= 1ULL << 32; break;
		case 5: d.qp_index = 2; break;
		case 6: d.nqps = 5; break;
		}
		CU_ASSERT_EQUAL(rx_auth_check(a, RX_AUTH_ACTIVE, &d, mac, 32),
				-EACCES);
	}
	/* every byte of the truncated proof */
	for (i = 0; i < RX_AUTH_PROOF_LEN; i++) {
		mac[i] ^= 0x01;
		CU_ASSERT_EQUAL(rx_auth_check(a, RX_AUTH_ACTIVE, &c, mac,
					      RX_AUTH_PROOF_LEN), -EACCES);
		mac[i] ^= 0x01;
	}
	CU_ASSERT_EQUAL(rx_auth_nonce(n1), 0);
	CU_ASSERT_EQUAL(rx_auth_nonce(n2), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(n1, n2, 16), 0);
	free(a);
	free(b);
}

static void test_challenges(void)
{
	struct rx_auth *a = key(1);
	struct rx_auth_ctx c, got;
	unsigned int i;

	sample_ctx(&c);
	rx_auth_put(a, &c, 1000, 10);
	CU_ASSERT_EQUAL(rx_auth_take(a, c.id_a, c.token, c.qp_index, 20,
				     &got), 0);
	CU_ASSERT_EQUAL(memcmp(&got, &c, sizeof(c)), 0);
	/* once */
	CU_ASSERT_EQUAL(rx_auth_take(a, c.id_a, c.token, c.qp_index, 20,
				     &got), -ENOENT);
	/* not after its deadline, nor for another QP, agent or token */
	rx_auth_put(a, &c, 1000, 10);
	CU_ASSERT_EQUAL(rx_auth_take(a, c.id_a, c.token, 2, 20, &got),
			-ENOENT);
	CU_ASSERT_EQUAL(rx_auth_take(a, c.id_a + 1, c.token, c.qp_index, 20,
				     &got), -ENOENT);
	CU_ASSERT_EQUAL(rx_auth_take(a, c.id_a, c.token + 1, c.qp_index, 20,
				     &got), -ENOENT);
	CU_ASSERT_EQUAL(rx_auth_take(a, c.id_a, c.token, c.qp_index, 1000,
				     &got), -ENOENT);
	/* a QP asking again replaces its challenge: one slot, the new one */
	rx_auth_put(a, &c, 1000, 10);
	c.nonce_p[0] ^= 0xff;
	rx_auth_put(a, &c, 2000, 20);
	CU_ASSERT_EQUAL(rx_auth_take(a, c.id_a, c.token, c.qp_index, 30,
				     &got), 0);
	CU_ASSERT_EQUAL(got.nonce_p[0], c.nonce_p[0]);
	CU_ASSERT_EQUAL(rx_auth_take(a, c.id_a, c.token, c.qp_index, 30,
				     &got), -ENOENT);
	/* bounded: one more than the slots drops the oldest only */
	for (i = 0; i <= RX_AUTH_SLOTS; i++) {
		c.token = 100 + i;
		rx_auth_put(a, &c, 10000 + i, 50 + i);
	}
	CU_ASSERT_EQUAL(rx_auth_take(a, c.id_a, 100, c.qp_index, 200, &got),
			-ENOENT);
	for (i = 1; i <= RX_AUTH_SLOTS; i++)
		CU_ASSERT_EQUAL(rx_auth_take(a, c.id_a, 100 + i, c.qp_index,
					     200, &got), 0);
	free(a);
}

static void test_hello_forms(void)
{
	struct rx_hello h = { .qp_index = 1, .nqps = 2, .agent_id = 7,
			      .token = 9 }, hd;
	struct rx_hello_auth ha = { 0 }, had;
	struct rx_welcome wd;
	struct rx_welcome_auth wa = { 0 }, wad;
	uint8_t plain[RX_HELLO_LEN], buf[64], big[64];
	unsigned int i;

	/* the plain form is today's hello, byte for byte */
	CU_ASSERT_EQUAL_FATAL(rx_hello_encode(&h, plain, sizeof(plain)), 0);
	memset(buf, 0xee, sizeof(buf));
	CU_ASSERT_EQUAL(rx_hello_encode_auth(&h, &ha, buf, sizeof(buf)),
			RX_HELLO_LEN);
	CU_ASSERT_EQUAL(memcmp(buf, plain, RX_HELLO_LEN), 0);
	CU_ASSERT_EQUAL(rx_hello_decode_auth(buf, RX_HELLO_LEN, &hd, &had), 0);
	CU_ASSERT_EQUAL(had.flags, 0);
	for (i = 0; i < RX_AUTH_NONCE_LEN; i++)
		ha.data[i] = (uint8_t)(0xc0 + i);
	ha.flags = RX_HELLO_AUTH;
	CU_ASSERT_EQUAL(rx_hello_encode_auth(&h, &ha, buf, sizeof(buf)),
			RX_HELLO_AUTH_LEN);
	CU_ASSERT_EQUAL(buf[10], RX_HELLO_AUTH);
	CU_ASSERT_EQUAL(buf[32], 0xc0);
	/* an agent without authentication refuses it as a bad hello */
	CU_ASSERT_EQUAL(rx_hello_decode(buf, sizeof(buf), &hd), -EBADMSG);
	CU_ASSERT_EQUAL(rx_hello_decode_auth(buf, RX_HELLO_AUTH_LEN, &hd,
					     &had), 0);
	CU_ASSERT_EQUAL(had.flags, RX_HELLO_AUTH);
	CU_ASSERT_EQUAL(memcmp(had.data, ha.data, 16), 0);
	CU_ASSERT_EQUAL(hd.token, 9);
	CU_ASSERT_EQUAL(hd.qp_index, 1);
	/* too short for its flag, an unknown flag, both flags, a bad field
	 * under a good flag */
	CU_ASSERT_EQUAL(rx_hello_decode_auth(buf, RX_HELLO_AUTH_LEN - 1, &hd,
					     &had), -EBADMSG);
	buf[11] = 0x80;
	CU_ASSERT_EQUAL(rx_hello_decode_auth(buf, sizeof(buf), &hd, &had),
			-EBADMSG);
	buf[11] = 0;
	buf[10] = RX_HELLO_AUTH | RX_HELLO_PROOF;
	CU_ASSERT_EQUAL(rx_hello_decode_auth(buf, sizeof(buf), &hd, &had),
			-EBADMSG);
	buf[10] = RX_HELLO_PROOF;
	CU_ASSERT_EQUAL(rx_hello_decode_auth(buf, sizeof(buf), &hd, &had), 0);
	buf[28] = 1;
	CU_ASSERT_EQUAL(rx_hello_decode_auth(buf, sizeof(buf), &hd, &had),
			-EBADMSG);
	ha.flags = RX_HELLO_AUTH | RX_HELLO_PROOF;
	CU_ASSERT_EQUAL(rx_hello_encode_auth(&h, &ha, buf, sizeof(buf)),
			-EINVAL);
	ha.flags = RX_HELLO_AUTH;
	CU_ASSERT_EQUAL(rx_hello_encode_auth(&h, &ha, buf, RX_HELLO_LEN),
			-EINVAL);

	/* welcomes: the plain one is today's, a challenge carries 48 bytes */
	CU_ASSERT_EQUAL(rx_welcome_encode_auth(5, &wa, buf, sizeof(buf)),
			RX_WELCOME_LEN);
	CU_ASSERT_EQUAL_FATAL(rx_welcome_encode(5, big, sizeof(big)), 0);
	CU_ASSERT_EQUAL(memcmp(buf, big, RX_WELCOME_LEN), 0);
	wa.flags = RX_WELCOME_CHALLENGE;
	for (i = 0; i < 16; i++)
		wa.nonce[i] = (uint8_t)i;
	for (i = 0; i < 32; i++)
		wa.mac[i] = (uint8_t)(0x40 + i);
	CU_ASSERT_EQUAL(rx_welcome_encode_auth(5, &wa, buf, sizeof(buf)),
			RX_WELCOME_AUTH_LEN);
	CU_ASSERT_EQUAL(rx_welcome_decode(buf, sizeof(buf), &wd), -EBADMSG);
	CU_ASSERT_EQUAL(rx_welcome_decode_auth(buf, sizeof(buf), &wd, &wad),
			0);
	CU_ASSERT_EQUAL(wd.agent_id, 5);
	CU_ASSERT_EQUAL(memcmp(&wa, &wad, sizeof(wa)), 0);
	CU_ASSERT_EQUAL(rx_welcome_decode_auth(buf, RX_WELCOME_AUTH_LEN - 1,
					       &wd, &wad), -EBADMSG);
	wa.flags = RX_WELCOME_AUTH_REFUSED;
	CU_ASSERT_EQUAL(rx_welcome_encode_auth(5, &wa, buf, sizeof(buf)),
			RX_WELCOME_LEN);
	CU_ASSERT_EQUAL(rx_welcome_decode_auth(buf, RX_WELCOME_LEN, &wd,
					       &wad), 0);
	CU_ASSERT_EQUAL(wad.flags, RX_WELCOME_AUTH_REFUSED);
	buf[6] = 3;
	CU_ASSERT_EQUAL(rx_welcome_decode_auth(buf, sizeof(buf), &wd, &wad),
			-EBADMSG);
	buf[6] = 4;
	CU_ASSERT_EQUAL(rx_welcome_decode_auth(buf, sizeof(buf), &wd, &wad),
			-EBADMSG);
	/* another version stays -EPROTO */
	buf[6] = 0;
	buf[4] = 2;
	CU_ASSERT_EQUAL(rx_welcome_decode_auth(buf, sizeof(buf), &wd, &wad),
			-EPROTO);
}

static int suite_init(void)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int suite_clean(void)
{
	static const char *const names[] = { "good", "ro", "open", "short",
					      "max", "long" };
	char path[256];
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
	return 0;
}

static const struct rc_test_case cases[] = {
	{ "key_file", test_key_file },
	{ "mac_layout", test_mac_layout },
	{ "mac_covers", test_mac_covers },
	{ "challenges", test_challenges },
	{ "hello_forms", test_hello_forms },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	rc_add_suite("auth", suite_init, suite_clean, cases);
	return rc_test_main(argc, argv);
}
