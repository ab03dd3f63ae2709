/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * odp.h - the agent's on-demand-paging state (odp.c, odp_selftest.c),
 * private.
 */
#ifndef RX_ODP_H
#define RX_ODP_H

#include <stdint.h>

#include "core/core.h"

/* ODP's state on an agent (rx_ext_odp, odp.c) */
struct rx_odp {
	struct rdmaxfer_odp_caps caps;
	/* explicit ODP MRs by range (REGCACHE_ATTR_NO_PIN); NULL when the
	 * agent never uses ODP (policy off, device without explicit ODP) */
	struct regcache *cache;
	/* the implicit ODP MR (local access only), where the device has one */
	struct ibv_mr *implicit_mr;
};

extern const struct rx_ext rx_ext_odp;

static inline struct rx_odp *rx_odp_of(const struct rdmaxfer_agent *agent)
{
	return rx_agent_ext(agent, &rx_ext_odp);
}

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
 * rx_odp_of(agent)->caps (bad_ops, selftest, selftest_msg, prefetch) */
void rx_odp_selftest(struct rdmaxfer_agent *agent);

#endif /* RX_ODP_H */
