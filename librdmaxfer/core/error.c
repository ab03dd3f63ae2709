// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * error.c - work-completion status to errno, and error texts.
 *
 * Verbs report failures as enum ibv_wc_status; the library's API speaks
 * -errno.  The mapping keeps the distinctions a caller can act on: access
 * errors (fix the descriptor), transport timeouts (the peer is gone),
 * flushes (collateral of an earlier error) and local programming errors.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

int rx_wc_errno(enum ibv_wc_status status)
{
	switch (status) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_LOC_LEN_ERR:
		return -EMSGSIZE;
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_MW_BIND_ERR:
	case IBV_WC_LOC_EEC_OP_ERR:
	case IBV_WC_INV_EECN_ERR:
	case IBV_WC_INV_EEC_STATE_ERR:
		return -EINVAL;
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
		return -EFAULT;
	case IBV_WC_WR_FLUSH_ERR:
		return -ECANCELED;
	case IBV_WC_BAD_RESP_ERR:
		return -EPROTO;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_INV_RD_REQ_ERR:
		return -EREMOTEIO;
	case IBV_WC_REM_ACCESS_ERR:
		return -EACCES;
	case IBV_WC_REM_OP_ERR:
		return -EREMOTEIO;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RESP_TIMEOUT_ERR:
		return -ETIMEDOUT;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return -ENOBUFS;
	case IBV_WC_REM_ABORT_ERR:
		return -ECONNABORTED;
	case IBV_WC_FATAL_ERR:
	case IBV_WC_GENERAL_ERR:
	default:
		return -EIO;
	}
}

RX_EXPORT
int rdmaxfer_wc_status_errno(int ibv_wc_status)
{
	return rx_wc_errno((enum ibv_wc_status)ibv_wc_status);
}

RX_EXPORT
const char *rdmaxfer_strerror(int err)
{
	if (err > 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case -EINPROGRESS:
		return "request in progress";
	case -EALREADY:
		return "request never posted";
	case -EPROTO:
		return "protocol or metadata version mismatch";
	case -ENOTCONN:
		return "peer not connected";
	case -ECONNRESET:
		return "peer disconnected";
	case -EACCES:
		return "remote access error (bad rkey or out of bounds)";
	case -ECANCELED:
		return "work request flushed after an earlier error";
	default:
		return strerror(-err);
	}
}
