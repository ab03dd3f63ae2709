/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fuzz_xfer.h - what the fuzzer fuzz_xfer.c checks on one input, shared
 * with test_rdmaxfer_xfer.c, which replays its corpus (tests/corpus/xfer/)
 * in make check with the same checks.
 *
 * One input is a transfer prepared against the descriptors of a peer's
 * metadata blob, as an application does after rdmaxfer_connect_md():
 *   byte 0      QPs of the peer: 1 + byte % 16
 *   byte 1      the port's max message size: 0 unknown, else
 *               2^(byte % 32)
 *   byte 2      stripe threshold: 2^(byte % 40)
 *   byte 3      bit 0: WRITE (else READ); bit 1: with a notification;
 *               bit 2: the blob's descriptors are the peer's exports
 *   byte 4      the QP of an unstriped request (modulo the QPs)
 *   bytes 5-7   ignored
 *   bytes 8-    the metadata blob (rdmaxfer_md_parse())
 * Pair i moves descriptor i's length between one local address and the
 * descriptor.  What prepare does with it is xfer_plan.c's (checks,
 * counts, work requests) and exports.c's (the exports list), which both
 * programs build; the work requests are built into arrays of exactly the
 * size the plan asked for, so a sanitizer sees a count that is too small.
 *
 * fx_check_xfer() returns 0 when the code kept its contract, -1 when it
 * broke it (the fuzzer aborts, the replay fails), and in *plan_ret what
 * the plan said (1: the blob did not parse).
 */
#ifndef FUZZ_XFER_H
#define FUZZ_XFER_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define FX_HDR		8
/* requests built in full (larger ones are only counted: the arrays of
 * RDMAXFER_XFER_MAX_WRS work requests take about 160 MB) */
#define FX_BUILD_MAX	65536

/* The peer of the exports check (exports.c takes its agent's lock). */
static struct rdmaxfer_agent fx_agent;
static struct rdmaxfer_peer fx_peer;

static inline void fx_init(void)
{
	static int done;

	if (done)
		return;
	pthread_mutex_init(&fx_agent.lock, NULL);
	fx_peer.agent = &fx_agent;
	done = 1;
}

/*
 * The work requests of a built plan against what was asked for: every
 * piece of every pair exactly once (piece k of pair i is bytes [k *
 * piece, ...) of both sides, a full piece but for the last), on the QP
 * the plan counted it on, with the right opcode and key.
 */
static inline int fx_check_built(const struct rx_xfer_plan *p,
				 enum rdmaxfer_op op,
				 const struct rdmaxfer_iov *local,
				 const struct rdmaxfer_desc *remote, size_t n,
				 bool notif, const struct rx_xfer_arrays *a)
{
	uint64_t bytes = 0, *first, pieces = 0;
	unsigned int q, notif_wrs = 0;
	uint32_t w, lo = UINT32_MAX, hi = 0;
	uint8_t *seen;
	size_t i;
	int bad = 0;

	first = calloc(n + 1, sizeof(*first));
	if (!first)
		abort();
	for (i = 0; i < n; i++) {
		first[i] = pieces;
		pieces += (local[i].len + p->piece - 1) / p->piece;
	}
	first[n] = pieces;
	seen = calloc(pieces ? pieces : 1, 1);
	if (!seen)
		abort();
	for (q = 0; q < p->nqps; q++) {
		if (p->fill[q] != p->off[q] + p->count[q])
			bad = 1;
		if (p->count[q] && p->off[q] < lo)
			lo = p->off[q];
		if (p->count[q] && p->off[q] + p->count[q] > hi)
			hi = p->off[q] + p->count[q];
		/* round robin from QP 0: none has more, none one less */
		if (p->striped && (p->count[q] > p->count[0] ||
				   p->count[q] + 1 < p->count[0]))
			bad = 1;
	}
	if (p->nwr && (lo != 0 || hi != p->nwr))
		bad = 1;
	for (w = 0; w < p->nwr && !bad; w++) {
		const struct ibv_send_wr *wr = &a->wrs[w];
		uint64_t off, k, len;

		i = a->wr_local[w];
		if (i == UINT32_MAX) {
			/* the notification after a list of READs */
			bad = !notif || p->merged || wr->num_sge ||
			      wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM;
			notif_wrs++;
			continue;
		}
		if (i >= n || wr->num_sge != 1 || wr->sg_list != &a->sges[w]) {
			bad = 1;
			break;
		}
		off = a->sges[w].addr - (uintptr_t)local[i].addr;
		k = off / p->piece;
		len = local[i].len - off < p->piece ? local[i].len - off :
						      p->piece;
		if (off % p->piece || off >= local[i].len ||
		    a->sges[w].length != len || seen[first[i] + k]++ ||
		    wr->wr.rdma.remote_addr != remote[i].addr + off ||
		    wr->wr.rdma.rkey != remote[i].rkey) {
			bad = 1;
			break;
		}
		/* striped: piece j of the request on QP j % nqps */
		for (q = 0; q < p->nqps; q++)
			if (w >= p->off[q] && w < p->off[q] + p->count[q])
				break;
		if (q != (p->striped ? (first[i] + k) % p->nqps : p->fixed_qp))
			bad = 1;
		if (op == RDMAXFER_OP_WRITE ?
		    wr->opcode != IBV_WR_RDMA_WRITE &&
		    wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM :
		    wr->opcode != IBV_WR_RDMA_READ)
			bad = 1;
		bytes += a->sges[w].length;
	}
	if (!bad && bytes != p->total)
		bad = 1;
	if (notif_wrs != (notif && p->chained && !p->merged))
		bad = 1;
	free(seen);
	free(first);
	return bad ? -1 : 0;
}

static inline int fx_check_xfer(const uint8_t *data, size_t size,
				int *plan_ret)
{
	struct rdmaxfer_xfer_notif xn = { .value = 0x5eed };
	struct rdmaxfer_iov *local = NULL;
	struct rx_xfer_arrays a = { 0 };
	struct rdmaxfer_md *md;
	struct rx_xfer_plan p;
	unsigned __int128 sum = 0, pieces = 0;
	enum rdmaxfer_op op;
	unsigned int nqps;
	uint64_t maxmsg, stripe, piece;
	bool notif, exports;
	size_t i, n;
	int ret, bad = 0;

	*plan_ret = 1;
	fx_init();
	if (size < FX_HDR)
		return 0;
	ret = rdmaxfer_md_parse(data + FX_HDR, size - FX_HDR, &md);
	if (ret)
		return ret == -EINVAL || ret == -EPROTO ? 0 : -1;
	nqps = 1 + data[0] % 16;
	maxmsg = data[1] ? 1ULL << (data[1] % 32) : 0;
	stripe = 1ULL << (data[2] % 40);
	op = data[3] & 1 ? RDMAXFER_OP_WRITE : RDMAXFER_OP_READ;
	notif = data[3] & 2;
	exports = data[3] & 4;
	n = md->ndescs;
	local = calloc(n ? n : 1, sizeof(*local));
	if (!local)
		abort();
	for (i = 0; i < n; i++) {
		/* a parsed descriptor is within the bounds: never empty,
		 * never over RDMAXFER_DESC_MAX_LEN, never wrapping */
		if (!md->descs[i].len ||
		    md->descs[i].len > RDMAXFER_DESC_MAX_LEN ||
		    md->descs[i].addr + md->descs[i].len < md->descs[i].addr)
			bad = 1;
		local[i].addr = (void *)(uintptr_t)0x10000;
		local[i].len = md->descs[i].len;
		sum += md->descs[i].len;
	}
	if (exports && n && !bad) {
		/* every descriptor lies in the list it is part of */
		if (rx_set_exports(&fx_peer, md->descs, n))
			bad = 1;
		pthread_mutex_lock(&fx_agent.lock);
		for (i = 0; i < n && !bad; i++)
			if (rx_check_remote(&fx_peer, md->descs[i].addr,
					    md->descs[i].len,
					    md->descs[i].rkey))
				bad = 1;
		pthread_mutex_unlock(&fx_agent.lock);
		rx_exports_free(&fx_peer);
	}
	ret = rx_xfer_plan_check(&p, op, local, n, md->descs, n, nqps, maxmsg,
				 stripe, notif);
	*plan_ret = ret;
	if (bad)
		goto out;
	if (!n) {
		bad = ret != -EINVAL;
		goto out;
	}
	if (sum > UINT64_MAX) {
		bad = ret != -EOVERFLOW;
		goto out;
	}
	if (ret) {
		/* descriptors that parsed, with a sum that fits, are fine;
		 * only their number can be too many */
		bad = ret != -E2BIG || n <= RDMAXFER_XFER_MAX_WRS;
		goto out;
	}
	piece = p.piece;
	if (!piece || piece > RX_MAX_PIECE || (maxmsg && piece > maxmsg))
		bad = 1;
	p.fixed_qp = data[4] % nqps;
	for (i = 0; i < n; i++)
		pieces += (md->descs[i].len + piece - 1) / piece;
	pieces += p.chained && !p.merged;
	ret = rx_xfer_plan_count(&p, local, n);
	*plan_ret = ret;
	if (bad)
		goto out;
	if (pieces > RDMAXFER_XFER_MAX_WRS) {
		bad = ret != -E2BIG;
		goto out;
	}
	if (ret || p.nwr != pieces) {
		bad = 1;
		goto out;
	}
	if (p.nwr > FX_BUILD_MAX)
		goto out;
	/* exactly the sizes asked for: an overrun is an ASan report */
	a.wrs = calloc(p.nwr ? p.nwr : 1, sizeof(*a.wrs));
	a.sges = calloc(p.nwr ? p.nwr : 1, sizeof(*a.sges));
	a.base_flags = calloc(p.nwr ? p.nwr : 1, sizeof(*a.base_flags));
	a.wr_local = calloc(p.nwr ? p.nwr : 1, sizeof(*a.wr_local));
	if (!a.wrs || !a.sges || !a.base_flags || !a.wr_local)
		abort();
	rx_xfer_plan_build(&p, op, local, md->descs, n, notif ? &xn : NULL,
			   &a);
	bad = fx_check_built(&p, op, local, md->descs, n, notif, &a);
out:
	free(a.wrs);
	free(a.sges);
	free(a.base_flags);
	free(a.wr_local);
	free(local);
	rdmaxfer_md_free(md);
	return bad ? -1 : 0;
}

#endif /* FUZZ_XFER_H */
