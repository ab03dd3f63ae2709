/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * odp.h - the agent's on-demand-paging state (odp.c, odp_selftest.c),
 * private.
 */
#ifndef RX_ODP_H
#define RX_ODP_H

#include <stdint.h>

#include "rdmaxfer.h"

struct rdmaxfer_agent;
struct regcache;
struct ibv_mr;

struct rx_odp {
	struct rdmaxfer_odp_caps caps;
	/* explicit ODP MRs by range (REGCACHE_ATTR_NO_PIN); NULL when the
	 * agent never uses ODP (policy off, device without explicit ODP) */
	struct regcache *cache;
	/* the implicit ODP MR (local access only), where the device has one */
	struct ibv_mr *implicit_mr;
};

/* After the PD and the pinned cache exist: policy, caps, self-test, the
 * ODP cache, the implicit MR.  -EOPNOTSUPP under policy on without ODP. */
int rx_odp_init(struct rdmaxfer_agent *agent);
void rx_odp_fini(struct rdmaxfer_agent *agent);

/*
 * The cache an RDMAXFER_MEM_ODP registration with 'access'
 * (RDMAXFER_ACCESS_*) goes through: the ODP cache, or the pinned one when
 * the policy or the device rules ODP out for an operation it needs
 * (auto, off); -EOPNOTSUPP under policy on.
 */
int rx_odp_pick_cache(struct rdmaxfer_agent *agent, uint32_t access,
		      struct regcache **cachep);

/* odp.c and odp_selftest.c: the verbs RC capability each operation needs */
#define RX_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define RX_ODP_NOPS		4
struct rx_odp_op_cap {
	uint32_t op;
	uint32_t cap;
	const char *cap_name;
};
extern const struct rx_odp_op_cap rx_odp_op_caps[RX_ODP_NOPS];

/* odp_selftest.c: run the self-test on the agent's device; fills
 * agent->odp.caps (bad_ops, selftest, selftest_msg, prefetch) */
void rx_odp_selftest(struct rdmaxfer_agent *agent);

#endif /* RX_ODP_H */
