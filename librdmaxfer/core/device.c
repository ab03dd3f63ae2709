// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * device.c - the device port an agent binds: the device, its RoCE v2
 * IPv4 GID, and the CQ's size.
 *
 * The CQ is sized (and grown) for every QP's send queue plus the SRQ, so
 * it cannot overflow: an overflowed CQ loses completions for good, and
 * nothing may hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>

#include "internal.h"

/* what a CQ grows by at least, so adding peers one by one does not
 * resize it every time */
#define CQ_GROW_MIN		256

static bool gid_is_ipv4(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0,
					    0, 0, 0xff, 0xff };

	return !memcmp(gid->raw, prefix, sizeof(prefix));
}

/*
 * The RoCE v2 IPv4 entry is what rdma_cm uses for an IPv4 address; fall
 * back to any RoCE v2 entry, then to index 0 (InfiniBand).
 */
int rx_pick_gid(struct rdmaxfer_agent *agent)
{
	int best_v2 = -1, i;

	for (i = 0; i < agent->port_attr.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(agent->ctx, agent->info.port, i, &e, 0))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (gid_is_ipv4((union ibv_gid *)&e.gid))
			return i;
		if (best_v2 < 0)
			best_v2 = i;
	}
	return best_v2 >= 0 ? best_v2 : 0;
}

int rx_open_device(struct rdmaxfer_agent *agent, const char *want)
{
	struct ibv_context **list;
	int n, i, ret = -ENODEV;

	list = rdma_get_devices(&n);
	if (!list)
		return -ENODEV;
	for (i = 0; i < n; i++) {
		struct ibv_context *ctx = list[i];
		struct ibv_device_attr da;
		uint8_t p, first, last;

		if (want && strcmp(ibv_get_device_name(ctx->device), want))
			continue;
		if (ibv_query_device(ctx, &da))
			continue;
		first = agent->attr.port ? agent->attr.port : 1;
		last = agent->attr.port ? agent->attr.port : da.phys_port_cnt;
		for (p = first; p <= last && p <= da.phys_port_cnt; p++) {
			struct ibv_port_attr pa;

			if (ibv_query_port(ctx, p, &pa) ||
			    pa.state != IBV_PORT_ACTIVE)
				continue;
			agent->ctx = ctx;
			agent->dev_attr = da;
			agent->port_attr = pa;
			agent->info.port = p;
			snprintf(agent->info.device, sizeof(agent->info.device),
				 "%s", ibv_get_device_name(ctx->device));
			ret = 0;
			goto out;
		}
	}
out:
	rdma_free_devices(list);
	return ret;
}

int rx_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/*
 * Lock held.  Reserve CQ entries for a new QP's send queue, growing the CQ
 * when it would not hold them all.  -ENOSPC only when the device's
 * max_cqe cannot hold every QP's send queue plus the SRQ.
 */
int rx_cq_reserve(struct rdmaxfer_agent *agent, uint32_t entries)
{
	uint64_t need = (uint64_t)agent->cq_need + agent->cq_stale + entries;
	uint64_t max = (uint64_t)agent->dev_attr.max_cqe, size;
	int ret;

	if (need > agent->cq_size) {
		if (need > max)
			return -ENOSPC;
		size = (uint64_t)agent->cq_size * 2;
		if (size < need + CQ_GROW_MIN)
			size = need + CQ_GROW_MIN;
		if (size > max)
			size = max;
		ret = ibv_resize_cq(agent->cq, (int)size);
		if (ret && size != need)
			ret = ibv_resize_cq(agent->cq, (int)need);
		if (ret)
			return ret > 0 ? -ret : -ENOSPC;
		agent->cq_size = (uint32_t)agent->cq->cqe;
		if (agent->cq_size < need)
			return -ENOSPC;
		agent->info.cq_entries = agent->cq_size;
		/* re-arm on the next sleep: a resize may drop the arming */
		agent->cq_armed = false;
	}
	agent->cq_need += entries;
	return 0;
}

/* Lock held.  A QP's send queue is gone; its completions may still sit in
 * the CQ until it is next seen empty (rx_poll_cq_locked()). */
void rx_cq_release(struct rdmaxfer_agent *agent, uint32_t entries)
{
	agent->cq_need -= entries <= agent->cq_need ? entries : agent->cq_need;
	agent->cq_stale += entries;
}
