// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ext.c - the registry of the core's extensions (mem/, ring/, file/):
 * each puts its struct rx_ext in the section rx_ext (RX_EXT_REGISTER,
 * core.h), and the core walks the section here, so that it names no
 * extension and a new one touches no file of the core.  An agent gets
 * each extension's state at create and runs its hooks.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

/* Made by the linker around the section; weak so that a host test that
 * links core files without any extension still links (no entries). */
extern const struct rx_ext *const __start_rx_ext[]
	__attribute__((weak, visibility("hidden")));
extern const struct rx_ext *const __stop_rx_ext[]
	__attribute__((weak, visibility("hidden")));

int rx_exts_init(struct rdmaxfer_agent *agent)
{
	const struct rx_ext *const *e;
	unsigned int i;
	int ret;

	for (e = __start_rx_ext; e < __stop_rx_ext; e++) {
		void *state;

		/* RX_EXT_MAX is the build's: more is a build error, said */
		if (agent->n_ext == RX_EXT_MAX) {
			ret = -E2BIG;
			goto fail;
		}
		state = calloc(1, (*e)->state_size ? (*e)->state_size : 1);
		if (!state) {
			ret = -ENOMEM;
			goto fail;
		}
		agent->ext[agent->n_ext].ext = *e;
		agent->ext[agent->n_ext++].state = state;
	}
	for (i = 0; i < agent->n_ext; i++) {
		const struct rx_ext *x = agent->ext[i].ext;

		ret = x->init ? x->init(agent, agent->ext[i].state) : 0;
		if (ret)
			goto fail;
		agent->n_ext_init = i + 1;
	}
	return 0;

fail:
	rx_exts_fini(agent);
	return ret;
}

void rx_exts_fini(struct rdmaxfer_agent *agent)
{
	unsigned int i;

	while (agent->n_ext_init) {
		i = --agent->n_ext_init;
		if (agent->ext[i].ext->fini)
			agent->ext[i].ext->fini(agent, agent->ext[i].state);
	}
	for (i = 0; i < agent->n_ext; i++) {
		free(agent->ext[i].state);
		agent->ext[i].state = NULL;
	}
	agent->n_ext = 0;
}

const struct rx_mem_ops *rx_mem_kind(const struct rdmaxfer_agent *agent,
				     enum rdmaxfer_mem_kind kind,
				     void **statep)
{
	unsigned int i;

	for (i = 0; i < agent->n_ext; i++) {
		const struct rx_mem_ops *ops = agent->ext[i].ext->mem;

		if (ops && ops->kind == kind) {
			*statep = agent->ext[i].state;
			return ops;
		}
	}
	return NULL;
}

void rx_ext_busy(struct rdmaxfer_agent *agent, const struct rx_ext *ext,
		 bool busy)
{
	unsigned int i;

	for (i = 0; i < agent->n_ext; i++) {
		if (agent->ext[i].ext != ext)
			continue;
		if (busy)
			agent->ext_busy |= 1U << i;
		else
			agent->ext_busy &= ~(1U << i);
		return;
	}
}

void rx_exts_progress(struct rdmaxfer_agent *agent, uint32_t busy)
{
	unsigned int i;

	for (i = 0; i < agent->n_ext; i++)
		if ((busy & (1U << i)) && agent->ext[i].ext->progress)
			agent->ext[i].ext->progress(agent,
						    agent->ext[i].state);
}

bool rx_exts_notif(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		   const struct rdmaxfer_notif *n)
{
	unsigned int i;

	for (i = 0; i < agent->n_ext; i++)
		if (agent->ext[i].ext->notif &&
		    agent->ext[i].ext->notif(agent, agent->ext[i].state, peer,
					     n))
			return true;
	return false;
}

unsigned int rx_exts_caches(const struct rdmaxfer_agent *agent,
			    struct regcache **caches, unsigned int max)
{
	unsigned int i, n = 0;

	for (i = 0; i < agent->n_ext && n < max; i++) {
		struct regcache *c;

		if (!agent->ext[i].ext->cache)
			continue;
		c = agent->ext[i].ext->cache(agent->ext[i].state);
		if (c)
			caches[n++] = c;
	}
	return n;
}

bool rx_exts_pending(struct rdmaxfer_agent *agent)
{
	unsigned int i;

	for (i = 0; i < agent->n_ext; i++)
		if (agent->ext[i].ext->pending &&
		    agent->ext[i].ext->pending(agent, agent->ext[i].state))
			return true;
	return false;
}

void rx_exts_deliver(struct rdmaxfer_agent *agent)
{
	unsigned int i;

	for (i = 0; i < agent->n_ext; i++)
		if (agent->ext[i].ext->deliver)
			agent->ext[i].ext->deliver(agent, agent->ext[i].state);
}
