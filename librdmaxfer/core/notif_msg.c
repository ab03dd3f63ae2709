// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * notif_msg.c - turn a received notification into a struct rdmaxfer_notif.
 *
 * A notification consumes one receive buffer of the agent's shared
 * receive queue (see notif.c).  What the completion says comes from the
 * peer: the opcode (an RDMA WRITE with immediate carries a value only, a
 * SEND with immediate a value and a payload), whether an immediate is
 * present, and how many bytes landed in the buffer.  This file checks it
 * all with no verbs dependency, so the host tests and the fuzzer
 * (tests/fuzz_notif.c) build it on its own; rx_recv_completion() only
 * translates the work completion into struct rx_notif_wc.
 *
 * Refused, and dropped by the caller: an opcode other than the two, a
 * notification without an immediate (every sender of this protocol sets
 * one: rdmaxfer_notif_send() and the notification of a transfer), and a
 * SEND whose byte count is larger than the receive buffer or than
 * RDMAXFER_NOTIF_MSG_MAX (a conforming device fails such a receive with
 * a length error instead, but the copy must not trust that).
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#include "internal.h"

int rx_notif_decode(const struct rx_notif_wc *wc, const void *buf,
		    size_t buf_len, struct rdmaxfer_notif *n)
{
	if (!wc || !n)
		return -EINVAL;
	if (wc->opcode != RX_NOTIF_WC_RECV &&
	    wc->opcode != RX_NOTIF_WC_WRITE_IMM)
		return -EPROTO;
	if (!wc->has_imm)
		return -EPROTO;
	/* the payload is copied, the rest of data[] is not cleared */
	memset(n, 0, offsetof(struct rdmaxfer_notif, data));
	n->value = ntohl(wc->imm_be);
	if (wc->opcode == RX_NOTIF_WC_WRITE_IMM) {
		/* byte_len counts the RDMA WRITE's data, which went to the
		 * target memory, not to the receive buffer */
		n->type = RDMAXFER_NOTIF_IMM;
		return 0;
	}
	if (wc->byte_len > buf_len || wc->byte_len > RDMAXFER_NOTIF_MSG_MAX)
		return -EMSGSIZE;
	if (wc->byte_len && !buf)
		return -EINVAL;
	n->type = RDMAXFER_NOTIF_MSG;
	n->len = wc->byte_len;
	if (n->len)
		memcpy(n->data, buf, n->len);
	return 0;
}
