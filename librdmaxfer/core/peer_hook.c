// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * peer_hook.c - the core's door for extensions (peer_hook.h): a peer
 * failed, or its exports list replaced, only if it still is the peer the
 * extension means.  Its own file so that exports.c stays free of the
 * connection code (the host test builds exports.c alone).
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"
#include "peer_hook.h"

/* peer_hook.h: the list is built before the lock, the peer checked and
 * changed under it. */
int rx_peer_hook_update(struct rdmaxfer_agent *agent,
			struct rdmaxfer_peer *peer, uint64_t remote_id,
			int err, bool set_exports,
			const struct rdmaxfer_desc *descs, size_t n)
{
	struct rx_exports x = { 0 };
	struct rx_list *l;
	int ret = -ENOENT;

	if (!agent || !peer || (n && !descs) || n > RDMAXFER_MD_MAX_DESCS)
		return -EINVAL;
	if (set_exports) {
		ret = rx_exports_build(descs, n, &x);
		if (ret)
			return ret;
		ret = -ENOENT;
	}
	pthread_mutex_lock(&agent->lock);
	for (l = agent->peers.next; l != &agent->peers; l = l->next) {
		struct rx_exports old;

		if (rx_container_of(l, struct rdmaxfer_peer, node) != peer)
			continue;
		if (!peer->initiator || peer->remote_id != remote_id)
			break;
		if (set_exports) {
			old = peer->exports;
			peer->exports = x;
			x = old;
		}
		ret = 0;
		/* the data path of a single-thread agent runs without this
		 * lock: failing the peer here would race with it (prepares
		 * read the exports list under the lock, so that part is
		 * safe) */
		if (err < 0 && (agent->attr.flags & RDMAXFER_AGENT_SINGLE_THREAD))
			ret = -EOPNOTSUPP;
		else if (err < 0 && peer->state == RDMAXFER_PEER_CONNECTED)
			rx_peer_fail(peer, err);
		break;
	}
	pthread_mutex_unlock(&agent->lock);
	free(x.descs);
	free(x.maxend);
	return ret;
}
