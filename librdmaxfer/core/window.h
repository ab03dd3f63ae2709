/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * window.h - the core's calls into window.c: remote keys as memory
 * windows (RDMAXFER_RKEY_WINDOW) and the agent's remote-key mode.
 */
#ifndef RDMAXFER_WINDOW_H
#define RDMAXFER_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

struct rdmaxfer_agent;
struct rdmaxfer_agent_attr;
struct rdmaxfer_agent_stats;
struct regcache_entry;
struct rx_win;

/* window mode in effect on this agent */
bool rx_win_enabled(struct rdmaxfer_agent *agent);
/* IBV_ACCESS_* of the MR under a window with RDMAXFER_ACCESS_* rights */
uint32_t rx_win_mr_access(uint32_t access);
/* a window over [addr, addr + len) of entry's MR with those rights, and
 * its key: 0, -ESTALE (the entry was revoked), or -errno */
int rx_win_bind(struct rdmaxfer_agent *agent, struct regcache_entry *entry,
		void *addr, size_t len, uint32_t access,
		struct rx_win **winp, uint32_t *rkeyp);
/* unbind (waited for) and free; NULL: nothing */
void rx_win_unbind(struct rdmaxfer_agent *agent, struct rx_win *win);
/* the agent cache's dereg callback: every window over handle goes first */
void rx_win_revoke_mr(struct rdmaxfer_agent *agent, void *handle);
/* rdmaxfer_agent_stats()'s window counters */
void rx_win_stats(struct rdmaxfer_agent *agent,
		  struct rdmaxfer_agent_stats *s);
/* agent creation: $RDMAXFER_RKEY_MODE, and the attributes' check */
uint32_t rx_rkey_env(struct rdmaxfer_agent *agent);
int rx_rkey_attr(struct rdmaxfer_agent_attr *a);

#endif
