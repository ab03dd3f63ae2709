/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rc_verbs.h - raw-verbs helpers shared by the tests that drive the device
 * without librdmaxfer (test_regcache_verbs, test_regcache_uffd_verbs,
 * test_rdmaxfer_odp_verbs).
 */
#ifndef RC_VERBS_H
#define RC_VERBS_H

#include <stdint.h>

#include <infiniband/verbs.h>

/*
 * Take RC QP q from RESET to RTS, connected to QP dest_qpn at gid (RoCE:
 * global routing through sgid gid_index) on port, path MTU 1024, one
 * outstanding READ/atomic each way, PSNs 0, remote rights access.
 * Returns 0 or -errno of the transition that failed.
 */
int rc_qp_connect(struct ibv_qp *q, uint8_t port, uint32_t dest_qpn,
		  const union ibv_gid *gid, int gid_index, int access);

#endif /* RC_VERBS_H */
