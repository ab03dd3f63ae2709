/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * peer_hook.h - the core's one door for extensions beyond the public API:
 * acting on a peer after learning something about its remote agent out of
 * band.  The directory (directory/) uses it when a peer's entry leaves,
 * names another agent, or lists other exports.
 *
 * The extension holds peer pointers the application may destroy at any
 * time, so the core checks, under the agent lock, that the pointer is
 * still one of the agent's peers, that we connected it, and that it is
 * connected to the agent the extension means (a freed handle whose memory
 * went to a peer of another agent is left alone), and acts in the same
 * critical section.  Declared here rather than in internal.h so that an
 * extension sees nothing else of the core.
 */
#ifndef RDMAXFER_PEER_HOOK_H
#define RDMAXFER_PEER_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaxfer.h"

/*
 * If peer is still an initiator peer of agent connected to remote_id:
 * with set_exports, replace its exports list by descs[0..n-1] (as
 * rdmaxfer_peer_set_exports()); with err < 0, fail it with err when it is
 * CONNECTED (as a failed work completion would: RDMAXFER_PEER_ERROR,
 * rdmaxfer_peer_error() err).  Returns 0, -ENOENT (not such a peer any
 * more), -EOPNOTSUPP (err on an RDMAXFER_AGENT_SINGLE_THREAD agent, whose
 * data path takes no lock: not failed, the exports part done), or the
 * errors of rdmaxfer_peer_set_exports().
 */
int rx_peer_hook_update(struct rdmaxfer_agent *agent,
			struct rdmaxfer_peer *peer, uint64_t remote_id,
			int err, bool set_exports,
			const struct rdmaxfer_desc *descs, size_t n);

#endif /* RDMAXFER_PEER_HOOK_H */
