/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fuzz_wire.h - what the fuzzers fuzz_hello.c and fuzz_notif.c check on
 * one input, shared with test_rdmaxfer_wire.c, which replays their corpora
 * (tests/corpus/hello/, tests/corpus/notif/) in make check with the same
 * checks.
 *
 * hello corpus: one file is the rdma_cm private data of a CM message, fed
 * to both rx_hello_decode() and rx_welcome_decode(), and to their
 * authenticated forms (auth.h), which must agree with them on a message
 * without flags and encode what they accept to the same bytes.
 *
 * notif corpus: one file is a receive completion and its buffer:
 *   byte 0      opcode: 0 IBV_WC_RECV, 1 IBV_WC_RECV_RDMA_WITH_IMM, else
 *               another opcode
 *   byte 1      bit 0: IBV_WC_WITH_IMM
 *   bytes 2-5   imm_data as on the wire (network byte order)
 *   bytes 6-9   byte_len, little-endian
 *   bytes 10-   the receive buffer (its length is the buffer's size)
 *
 * Each function returns 0 when the decoders kept their contract, -1 when
 * they broke it (the fuzzer aborts, the replay fails), and the decoders'
 * own results through its pointers.
 */
#ifndef FUZZ_WIRE_H
#define FUZZ_WIRE_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "auth.h"
#include "internal.h"

#define FW_NOTIF_HDR	10

/* The authenticated decoders against the plain ones' results. */
static inline int fw_check_auth(const uint8_t *data, size_t size,
				int hello_ret, int welcome_ret)
{
	uint8_t again[RX_WELCOME_AUTH_LEN];
	struct rx_hello_auth ha;
	struct rx_welcome_auth wa;
	struct rx_hello h, hp;
	struct rx_welcome w, wp;
	int ret, len;

	ret = rx_hello_decode_auth(data, size, &h, &ha);
	/* the same verdict where the plain decoder accepts or says
	 * -EPROTO; a flag is the one thing only this one takes */
	if ((hello_ret != -EBADMSG && ret != hello_ret) ||
	    (ret == 0 && !ha.flags && hello_ret != 0))
		return -1;
	if (ret == 0) {
		if (!ha.flags && (rx_hello_decode(data, size, &hp) ||
				  memcmp(&hp, &h, sizeof(h))))
			return -1;
		len = rx_hello_encode_auth(&h, &ha, again, sizeof(again));
		if (len < 0 || (size_t)len > size || memcmp(again, data, len))
			return -1;
	} else if (ret != -EBADMSG && ret != -EPROTO) {
		return -1;
	}
	ret = rx_welcome_decode_auth(data, size, &w, &wa);
	if ((welcome_ret != -EBADMSG && ret != welcome_ret) ||
	    (ret == 0 && !wa.flags && welcome_ret != 0))
		return -1;
	if (ret == 0) {
		if (!wa.flags && (rx_welcome_decode(data, size, &wp) ||
				  wp.agent_id != w.agent_id))
			return -1;
		len = rx_welcome_encode_auth(w.agent_id, &wa, again,
					     sizeof(again));
		if (len < 0 || (size_t)len > size || memcmp(again, data, len))
			return -1;
	} else if (ret != -EBADMSG && ret != -EPROTO) {
		return -1;
	}
	return 0;
}

static inline int fw_check_hello(const uint8_t *data, size_t size,
				 int *hello_ret, int *welcome_ret)
{
	struct rx_hello h;
	struct rx_welcome w;
	uint8_t again[RX_HELLO_LEN];
	int ret;

	ret = rx_hello_decode(data, size, &h);
	*hello_ret = ret;
	if (ret == 0) {
		/* a decoded hello is in range and encodes to the same bytes */
		if (size < RX_HELLO_LEN || !h.nqps || h.nqps > RX_MAX_QPS ||
		    h.qp_index >= h.nqps)
			return -1;
		if (rx_hello_encode(&h, again, sizeof(again)) ||
		    memcmp(again, data, RX_HELLO_LEN))
			return -1;
	} else if (ret == -EPROTO) {
		/* only our magic with another version is -EPROTO */
		if (size < 6 || memcmp(data, "RDXH", 4) ||
		    (data[4] == RX_PROTO_VERSION && !data[5]))
			return -1;
	} else if (ret != -EBADMSG) {
		return -1;
	}

	ret = rx_welcome_decode(data, size, &w);
	*welcome_ret = ret;
	if (ret == 0) {
		if (size < RX_WELCOME_LEN ||
		    rx_welcome_encode(w.agent_id, again, sizeof(again)) ||
		    memcmp(again, data, RX_WELCOME_LEN))
			return -1;
	} else if (ret == -EPROTO) {
		if (size < 6 || memcmp(data, "RDXH", 4) ||
		    (data[4] == RX_PROTO_VERSION && !data[5]))
			return -1;
	} else if (ret != -EBADMSG) {
		return -1;
	}
	return fw_check_auth(data, size, *hello_ret, *welcome_ret);
}

/* *notif_ret is -ENODATA for an input shorter than the frame header. */
static inline int fw_check_notif(const uint8_t *data, size_t size,
				 int *notif_ret)
{
	struct rx_notif_wc wc;
	struct rdmaxfer_notif *n;
	uint8_t *buf;
	size_t buf_len;
	int ret, bad = 0;

	*notif_ret = -ENODATA;
	if (size < FW_NOTIF_HDR)
		return 0;
	wc.opcode = data[0] == 0 ? RX_NOTIF_WC_RECV :
		    data[0] == 1 ? RX_NOTIF_WC_WRITE_IMM : RX_NOTIF_WC_OTHER;
	wc.has_imm = data[1] & 1;
	memcpy(&wc.imm_be, data + 2, 4);
	wc.byte_len = (uint32_t)data[6] | (uint32_t)data[7] << 8 |
		      (uint32_t)data[8] << 16 | (uint32_t)data[9] << 24;
	/* a buffer of exactly its size, so a sanitizer sees an over-read */
	buf_len = size - FW_NOTIF_HDR;
	buf = malloc(buf_len ? buf_len : 1);
	n = malloc(sizeof(*n));
	if (!buf || !n)
		abort();
	memcpy(buf, data + FW_NOTIF_HDR, buf_len);

	ret = rx_notif_decode(&wc, buf, buf_len, n);
	*notif_ret = ret;
	if (ret == 0) {
		if (!wc.has_imm || n->value != ntohl(wc.imm_be))
			bad = 1;
		else if (wc.opcode == RX_NOTIF_WC_WRITE_IMM)
			bad = n->type != RDMAXFER_NOTIF_IMM || n->len;
		else if (wc.opcode == RX_NOTIF_WC_RECV)
			bad = n->type != RDMAXFER_NOTIF_MSG ||
			      n->len != wc.byte_len || n->len > buf_len ||
			      n->len > RDMAXFER_NOTIF_MSG_MAX ||
			      memcmp(n->data, buf, n->len);
		else
			bad = 1;
	} else if (ret == -EMSGSIZE) {
		bad = wc.opcode != RX_NOTIF_WC_RECV ||
		      (wc.byte_len <= buf_len &&
		       wc.byte_len <= RDMAXFER_NOTIF_MSG_MAX);
	} else if (ret == -EPROTO) {
		bad = wc.has_imm && wc.opcode != RX_NOTIF_WC_OTHER;
	} else {
		bad = 1;
	}
	free(n);
	free(buf);
	return bad ? -1 : 0;
}

#endif /* FUZZ_WIRE_H */
