// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * odp.c - the on-demand-paging memory kind: policy, capabilities, the
 * agent's self-test, the ODP registration cache, implicit ODP, prefetch.
 *
 * An explicit ODP MR pins nothing: the device faults pages in through the
 * kernel's own MMU notifier, and after munmap + mmap at the same address
 * it reaches the new pages.  So an RDMAXFER_MEM_ODP region needs no watch
 * for correctness.  It still goes through a cache (a second libregcache
 * instance, REGCACHE_ATTR_NO_PIN, not charged to RLIMIT_MEMLOCK) so that
 * registering the same range again is a hit.  libregcache has no "cache
 * but never watch" monitor, so that cache watches like the pinned one: an
 * unmap then only costs a re-registration at the next register, never
 * correctness.
 *
 * Whether ODP is used (RDMAXFER_ODP / attr.odp):
 * - off: never; an ODP region is pinned like HOST memory.
 * - auto (default): only for the operations (RDMAXFER_ODP_OP_*) that the
 *   device's RC ODP caps cover AND that the agent's self-test found
 *   correct; a region needing anything else is pinned, and
 *   rdmaxfer_agent_odp_caps() says why.
 * - on: ODP or an error naming the device and the missing capability.
 *
 * The self-test exists because of a measured fact: the Debian 7.3 kernel's
 * rxe (drivers/infiniband/sw/rxe/rxe_odp.c, __rxe_odp_mr_copy()) copies
 * each packet to or from the START of the page instead of at the in-page
 * offset, and does not advance the source across pages.  Any RDMA WRITE
 * or READ packet that does not begin on a page boundary (every packet
 * after the first at MTU 1024), and the requester's copy out of an ODP
 * lkey, move the wrong bytes while the completion says success.  Atomics
 * use the offset correctly.  A runtime must never corrupt silently, so the
 * agent checks each operation once, with a loopback RC QP pair at MTU
 * 1024 and transfers that start mid-page and cross a page boundary, and
 * auto leaves out what failed.  It costs two QPs, two small MRs and four
 * operations (about 10 ms under TCG), only when explicit ODP is offered
 * and the policy is not off.
 *
 * Security property: an explicit ODP MR is registered like a pinned one,
 * exactly the range and rights of the region (mem.c), and its rkey dies
 * with the region's last handle, also under RDMAXFER_AGENT_CACHE_RKEYS
 * (mem.c).  Unlike a pinned MR it follows the address: memory unmapped
 * and mapped again at the same address is reachable through a live rkey,
 * so a region must be deregistered before its addresses are reused for
 * anything a peer must not see (as for any remote-access registration
 * here); a kept one would stay reachable until the next call into the ODP
 * cache applied the unmap.  The implicit ODP MR covers the whole
 * address space: it is registered with local access only, so its key is
 * never an rkey and no peer can reach through it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/core.h"
#include "odp.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

RX_EXPORT
const char *rdmaxfer_odp_op_name(uint32_t op)
{
	switch (op) {
	case RDMAXFER_ODP_OP_LOCAL:
		return "local buffer";
	case RDMAXFER_ODP_OP_REMOTE_WRITE:
		return "remote write";
	case RDMAXFER_ODP_OP_REMOTE_READ:
		return "remote read";
	case RDMAXFER_ODP_OP_REMOTE_ATOMIC:
		return "remote atomic";
	default:
		return "?";
	}
}

/* The verbs RC capability each operation needs. */
const struct rx_odp_op_cap rx_odp_op_caps[RX_ODP_NOPS] = {
	{ RDMAXFER_ODP_OP_LOCAL, IBV_ODP_SUPPORT_SEND, "IBV_ODP_SUPPORT_SEND" },
	{ RDMAXFER_ODP_OP_REMOTE_WRITE, IBV_ODP_SUPPORT_WRITE,
	  "IBV_ODP_SUPPORT_WRITE" },
	{ RDMAXFER_ODP_OP_REMOTE_READ, IBV_ODP_SUPPORT_READ,
	  "IBV_ODP_SUPPORT_READ" },
	{ RDMAXFER_ODP_OP_REMOTE_ATOMIC, IBV_ODP_SUPPORT_ATOMIC,
	  "IBV_ODP_SUPPORT_ATOMIC" },
};

/* RDMAXFER_ACCESS_* of a region -> the operations it must serve. */
static uint32_t needed_ops(uint32_t access)
{
	uint32_t ops = 0;

	if (!access)
		return RDMAXFER_ODP_OP_LOCAL;
	if (access & RDMAXFER_ACCESS_REMOTE_WRITE)
		ops |= RDMAXFER_ODP_OP_REMOTE_WRITE;
	if (access & RDMAXFER_ACCESS_REMOTE_READ)
		ops |= RDMAXFER_ODP_OP_REMOTE_READ;
	if (access & RDMAXFER_ACCESS_REMOTE_ATOMIC)
		ops |= RDMAXFER_ODP_OP_REMOTE_ATOMIC;
	return ops;
}

static enum rdmaxfer_odp_policy parse_policy(const char *s)
{
	if (!strcmp(s, "on"))
		return RDMAXFER_ODP_ON;
	if (!strcmp(s, "off"))
		return RDMAXFER_ODP_OFF;
	if (!strcmp(s, "auto"))
		return RDMAXFER_ODP_AUTO;
	return RDMAXFER_ODP_DEFAULT;
}

/* ---------------------------------------------------------- agent state */

static int odp_reg(void *user, void *addr, size_t len, uint32_t access,
		   void **handle)
{
	struct rdmaxfer_agent *agent = user;
	struct ibv_mr *mr;

	mr = ibv_reg_mr(agent->pd, addr, len,
			(int)(access | IBV_ACCESS_ON_DEMAND));
	if (!mr)
		return errno ? -errno : -ENOMEM;
	*handle = mr;
	return 0;
}

static int odp_dereg(void *user, void *handle)
{
	rx_mem_grace(user);	/* odp_lkey() may be reading it */
	return -ibv_dereg_mr(handle);
}

/* Why auto leaves op out: "" if it does not. */
static void op_reason(struct rdmaxfer_agent *agent, uint32_t ops, char *buf,
		      size_t len)
{
	struct rdmaxfer_odp_caps *c = &rx_odp_of(agent)->caps;
	size_t i;

	buf[0] = '\0';
	if (c->policy == RDMAXFER_ODP_OFF) {
		snprintf(buf, len, "ODP policy is off");
		return;
	}
	if (!(c->general & IBV_ODP_SUPPORT)) {
		snprintf(buf, len,
			 "device %s has no explicit ODP (IBV_ODP_SUPPORT not in general_caps)",
			 agent->info.device);
		return;
	}
	for (i = 0; i < RX_ARRAY_SIZE(rx_odp_op_caps); i++) {
		if (!(ops & rx_odp_op_caps[i].op))
			continue;
		if (!(c->rc & rx_odp_op_caps[i].cap)) {
			snprintf(buf, len, "device %s: no %s in rc_odp_caps (%s)",
				 agent->info.device, rx_odp_op_caps[i].cap_name,
				 rdmaxfer_odp_op_name(rx_odp_op_caps[i].op));
			return;
		}
		if (c->bad_ops & rx_odp_op_caps[i].op) {
			snprintf(buf, len,
				 "device %s: %s into ODP memory failed the self-test",
				 agent->info.device,
				 rdmaxfer_odp_op_name(rx_odp_op_caps[i].op));
			return;
		}
	}
}

/* After the PD and the pinned cache exist: policy, caps, self-test, the
 * ODP cache, the implicit MR.  -EOPNOTSUPP under policy on without ODP. */
static int odp_init(struct rdmaxfer_agent *agent, void *state)
{
	struct rx_odp *odp = state;
	struct rdmaxfer_odp_caps *c = &odp->caps;
	struct ibv_device_attr_ex ax;
	struct regcache_attr cattr = { 0 };
	uint32_t policy = agent->attr.odp;
	const char *s;
	size_t i;
	int ret;

	if (policy > RDMAXFER_ODP_OFF)
		return -EINVAL;
	s = getenv("RDMAXFER_ODP");
	if (policy == RDMAXFER_ODP_DEFAULT &&
	    !(agent->attr.flags & RDMAXFER_AGENT_NO_ENV) && s && *s) {
		policy = parse_policy(s);
		if (policy == RDMAXFER_ODP_DEFAULT) {
			fprintf(stderr,
				"librdmaxfer: RDMAXFER_ODP=%s: not auto, on or off\n",
				s);
			return -EINVAL;
		}
	}
	if (policy == RDMAXFER_ODP_DEFAULT)
		policy = RDMAXFER_ODP_AUTO;
	memset(c, 0, sizeof(*c));
	c->policy = policy;
	c->prefetch = RDMAXFER_PREFETCH_MADVISE;
	memset(&ax, 0, sizeof(ax));
	if (!ibv_query_device_ex(agent->ctx, NULL, &ax)) {
		c->general = ax.odp_caps.general_caps;
		c->rc = ax.odp_caps.per_transport_caps.rc_odp_caps;
		c->uc = ax.odp_caps.per_transport_caps.uc_odp_caps;
		c->ud = ax.odp_caps.per_transport_caps.ud_odp_caps;
	}
	if (c->general & IBV_ODP_SUPPORT)
		for (i = 0; i < RX_ARRAY_SIZE(rx_odp_op_caps); i++)
			if (c->rc & rx_odp_op_caps[i].cap)
				c->device_ops |= rx_odp_op_caps[i].op;
	if (policy == RDMAXFER_ODP_ON && !c->device_ops) {
		fprintf(stderr,
			"librdmaxfer: RDMAXFER_ODP=on: device %s has no explicit RC ODP (general_caps 0x%x: %s, rc_odp_caps 0x%x)\n",
			agent->info.device, c->general,
			c->general & IBV_ODP_SUPPORT ? "IBV_ODP_SUPPORT" :
			"no IBV_ODP_SUPPORT", c->rc);
		return -EOPNOTSUPP;
	}
	if (policy == RDMAXFER_ODP_OFF || !c->device_ops) {
		op_reason(agent, RDMAXFER_ODP_OPS, c->reason,
			  sizeof(c->reason));
		snprintf(c->selftest_msg, sizeof(c->selftest_msg),
			 "%s: ODP self-test not run (%s)", agent->info.device,
			 policy == RDMAXFER_ODP_OFF ? "policy off" :
			 "no explicit ODP");
		return 0;
	}
	rx_odp_selftest(agent);
	c->auto_ops = c->device_ops & ~c->bad_ops;
	if (c->auto_ops != RDMAXFER_ODP_OPS)
		op_reason(agent, RDMAXFER_ODP_OPS & ~c->auto_ops, c->reason,
			  sizeof(c->reason));
	if (!c->auto_ops)
		return 0;

	cattr.reg = odp_reg;
	cattr.dereg = odp_dereg;
	cattr.user = agent;
	cattr.monitor = agent->attr.cache_monitor;
	cattr.max_entries = agent->attr.cache_max_entries;
	cattr.max_bytes = agent->attr.cache_max_bytes;
	cattr.flags = REGCACHE_ATTR_NO_PIN;
	ret = regcache_create(&cattr, &odp->cache);
	if (ret)
		return ret;

	/* implicit ODP: local access only (see the security note above) */
	if ((c->general & IBV_ODP_SUPPORT_IMPLICIT) &&
	    (c->auto_ops & RDMAXFER_ODP_OP_LOCAL)) {
		odp->implicit_mr = ibv_reg_mr(agent->pd, NULL, SIZE_MAX,
						    IBV_ACCESS_LOCAL_WRITE |
						    IBV_ACCESS_ON_DEMAND);
		c->implicit = odp->implicit_mr != NULL;
	}
	return 0;
}

/* For rx_mem_sweep(): a held ODP key follows its address, so it must
 * die with its memory as soon as a pinned one does. */
static struct regcache *odp_cache(void *state)
{
	return ((struct rx_odp *)state)->cache;
}

static void odp_fini(struct rdmaxfer_agent *agent, void *state)
{
	struct rx_odp *odp = state;

	if (odp->implicit_mr)
		ibv_dereg_mr(odp->implicit_mr);
	odp->implicit_mr = NULL;
	if (odp->cache)
		regcache_destroy(odp->cache);
	odp->cache = NULL;
}

/*
 * The cache an RDMAXFER_MEM_ODP registration with 'access'
 * (RDMAXFER_ACCESS_*) goes through: the ODP cache, or the pinned one when
 * the policy or the device rules ODP out for an operation it needs
 * (auto, off); -EOPNOTSUPP under policy on.
 */
static int pick_cache(struct rdmaxfer_agent *agent, uint32_t access,
		      struct regcache **cachep)
{
	struct rdmaxfer_odp_caps *c = &rx_odp_of(agent)->caps;
	uint32_t need = needed_ops(access);
	char why[RDMAXFER_ODP_MSG_MAX];

	if (rx_odp_of(agent)->cache && (need & ~c->auto_ops) == 0) {
		*cachep = rx_odp_of(agent)->cache;
		return 0;
	}
	if (c->policy == RDMAXFER_ODP_ON) {
		op_reason(agent, need, why, sizeof(why));
		fprintf(stderr, "librdmaxfer: RDMAXFER_ODP=on: %s\n", why);
		return -EOPNOTSUPP;
	}
	*cachep = agent->cache;
	return 0;
}

/* rdmaxfer_mem_register_access() of RDMAXFER_MEM_ODP */
static int odp_mem_reg(struct rdmaxfer_agent *agent, void *state,
		       uint32_t access, struct rx_mem_reg *r)
{
	int ret;

	ret = pick_cache(agent, access, &r->cache);
	if (ret)
		return ret;
	/* the descriptor says what the memory really is */
	if (r->cache == agent->cache)
		r->kind = RDMAXFER_MEM_HOST;
	return 0;
}

/* ODP handles are plain cache handles: no dereg, the host descriptor */
static const struct rx_mem_ops odp_mem_ops = {
	.kind = RDMAXFER_MEM_ODP,
	.reg = odp_mem_reg,
};

const struct rx_ext rx_ext_odp = {
	.name = "odp",
	.state_size = sizeof(struct rx_odp),
	.mem = &odp_mem_ops,
	.init = odp_init,
	.fini = odp_fini,
	.cache = odp_cache,
};
RX_EXT_REGISTER(rx_ext_odp);

RX_EXPORT
int rdmaxfer_agent_odp_caps(struct rdmaxfer_agent *agent,
			    struct rdmaxfer_odp_caps *caps)
{
	if (!agent || !caps)
		return -EINVAL;
	*caps = rx_odp_of(agent)->caps;
	return 0;
}

RX_EXPORT
int rdmaxfer_mem_is_odp(const struct rdmaxfer_mem *mem)
{
	if (!mem)
		return -EINVAL;
	return mem->cache && mem->cache == rx_odp_of(mem->agent)->cache;
}

/* ------------------------------------------------------------- prefetch */

/* The lkey of an ODP MR covering [a, a + len) of this agent, or false. */
static bool odp_lkey(struct rdmaxfer_agent *agent, uintptr_t a, size_t len,
		     uint32_t *lkey)
{
	struct rx_list *n;
	bool found = false;

	rx_spin_lock(&agent->mem_lock);
	for (n = agent->mems.next; n != &agent->mems; n = n->next) {
		struct rdmaxfer_mem *m = rx_container_of(n, struct rdmaxfer_mem,
							 node);
		struct ibv_mr *mr;

		if (!rdmaxfer_mem_is_odp(m))
			continue;
		mr = regcache_entry_handle(m->entry);
		if (!mr)
			continue;	/* revoked: its memory went */
		if (a >= (uintptr_t)mr->addr &&
		    a + len <= (uintptr_t)mr->addr + mr->length) {
			*lkey = mr->lkey;
			found = true;
			break;
		}
	}
	rx_spin_unlock(&agent->mem_lock);
	if (!found && rx_odp_of(agent)->implicit_mr) {
		*lkey = rx_odp_of(agent)->implicit_mr->lkey;
		found = true;
	}
	return found;
}

static int advise(struct rdmaxfer_agent *agent, uintptr_t a, size_t len,
		  uint32_t lkey, uint32_t flags)
{
	enum ibv_advise_mr_advice adv =
		(flags & RDMAXFER_PREFETCH_NO_FAULT) ?
			IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT :
		(flags & RDMAXFER_PREFETCH_WRITE) ?
			IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE :
			IBV_ADVISE_MR_ADVICE_PREFETCH;

	/* an SGE carries 32 bits of length */
	while (len) {
		uint32_t chunk = len > (1U << 30) ? 1U << 30 : (uint32_t)len;
		struct ibv_sge sge = { a, chunk, lkey };
		int ret = ibv_advise_mr(agent->pd, adv,
					IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);

		if (ret)
			return -ret;
		a += chunk;
		len -= chunk;
	}
	return 0;
}

static int populate(uintptr_t a, size_t len, uint32_t flags)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = a & ~(psz - 1);
	uintptr_t end = (a + len + psz - 1) & ~(psz - 1);

	if (flags & RDMAXFER_PREFETCH_NO_FAULT)
		return 0;
	if (madvise((void *)start, end - start,
		    (flags & RDMAXFER_PREFETCH_WRITE) ? MADV_POPULATE_WRITE :
							MADV_POPULATE_READ))
		return errno == ENOMEM ? -EFAULT : -errno;
	return 0;
}

RX_EXPORT
int rdmaxfer_prefetch(struct rdmaxfer_agent *agent,
		      const struct rdmaxfer_iov *iov, size_t n, uint32_t flags)
{
	size_t i;
	int ret;

	if (!agent || (!iov && n) ||
	    (flags & ~(RDMAXFER_PREFETCH_WRITE | RDMAXFER_PREFETCH_NO_FAULT)))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)iov[i].addr;

		if (!iov[i].addr || !iov[i].len || a + iov[i].len < a)
			return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)iov[i].addr;
		size_t len = iov[i].len;
		uint32_t lkey;

		if (rx_odp_of(agent)->caps.prefetch == RDMAXFER_PREFETCH_ADVISE_MR &&
		    odp_lkey(agent, a, len, &lkey)) {
			ret = advise(agent, a, len, lkey, flags);
			if (ret != -EOPNOTSUPP && ret != -ENOSYS)
				goto done;
		}
		ret = populate(a, len, flags);
done:
		if (ret)
			return ret;
	}
	return 0;
}
