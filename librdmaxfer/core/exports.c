// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * exports.c - the memory a peer exported, as the application knows it.
 *
 * A WRITE or READ whose remote range the peer's HCA refuses fails at the
 * responder with a remote access error, which moves the QP to the error
 * state: every other request on that QP is flushed and the peer must be
 * reconnected.  One bad descriptor should not cost that.  When the
 * application tells the library which descriptors the peer exported (the
 * metadata blob of rdmaxfer_connect_md(), or rdmaxfer_peer_set_exports()),
 * every remote range of a prepare must lie inside one of them, under the
 * same rkey, or the prepare fails with -ERANGE before anything is posted.
 *
 * This is a local sanity check of the application's own descriptors, not
 * an access control: the peer's HCA enforces what the rkey allows, and a
 * list the application never gave leaves only the bounds check (which is
 * also what lets tests forge out-of-range descriptors on purpose).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int desc_cmp(const void *a, const void *b)
{
	const struct rdmaxfer_desc *x = a, *y = b;

	if (x->rkey != y->rkey)
		return x->rkey < y->rkey ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return 0;
}

/* Lock held: 0 when [addr, addr + len) lies in one exported descriptor of
 * that rkey, or when there is no list; -ERANGE otherwise. */
int rx_check_remote(const struct rdmaxfer_peer *peer, uint64_t addr,
		    uint64_t len, uint32_t rkey)
{
	const struct rx_exports *x = &peer->exports;
	size_t lo = 0, hi = x->n;

	if (!x->n)
		return 0;
	if (addr + len < addr)
		return -ERANGE;
	/* the last entry at or before (rkey, addr) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rdmaxfer_desc *d = &x->descs[mid];

		if (d->rkey < rkey || (d->rkey == rkey && d->addr <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || x->descs[lo - 1].rkey != rkey)
		return -ERANGE;
	/*
	 * maxend covers every entry of this rkey up to lo - 1, all of which
	 * start at or before addr: one of them reaches addr + len exactly
	 * when the largest end does.
	 */
	if (x->maxend[lo - 1] < addr + len)
		return -ERANGE;
	return 0;
}

/* The sorted list of descs[0..n-1] and its running maxima, validated as
 * prepare validates remote ones (n 0: the empty list). */
int rx_exports_build(const struct rdmaxfer_desc *descs, size_t n,
			 struct rx_exports *x)
{
	struct rdmaxfer_desc *d = NULL;
	uint64_t *maxend = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		if (descs[i].kind && !rx_desc_kind_valid(descs[i].kind))
			return -EINVAL;
		if (!descs[i].len || descs[i].len > RDMAXFER_DESC_MAX_LEN ||
		    descs[i].addr + descs[i].len < descs[i].addr)
			return -ERANGE;
	}
	if (n) {
		d = malloc(n * sizeof(*d));
		maxend = malloc(n * sizeof(*maxend));
		if (!d || !maxend) {
			free(d);
			free(maxend);
			return -ENOMEM;
		}
		memcpy(d, descs, n * sizeof(*d));
		qsort(d, n, sizeof(*d), desc_cmp);
		for (i = 0; i < n; i++) {
			uint64_t end = d[i].addr + d[i].len;

			if (i && d[i - 1].rkey == d[i].rkey &&
			    maxend[i - 1] > end)
				end = maxend[i - 1];
			maxend[i] = end;
		}
	}
	x->descs = d;
	x->maxend = maxend;
	x->n = n;
	return 0;
}

/* Replace the list (n 0: clear it); takes the lock to swap it in. */
int rx_set_exports(struct rdmaxfer_peer *peer,
		   const struct rdmaxfer_desc *descs, size_t n)
{
	struct rx_exports x, old;
	int ret;

	ret = rx_exports_build(descs, n, &x);
	if (ret)
		return ret;
	pthread_mutex_lock(&peer->agent->lock);
	old = peer->exports;
	peer->exports = x;
	pthread_mutex_unlock(&peer->agent->lock);
	free(old.descs);
	free(old.maxend);
	return 0;
}

/* Lock held, or the peer is going away. */
void rx_exports_free(struct rdmaxfer_peer *peer)
{
	free(peer->exports.descs);
	free(peer->exports.maxend);
	peer->exports.descs = NULL;
	peer->exports.maxend = NULL;
	peer->exports.n = 0;
}

RX_EXPORT
int rdmaxfer_peer_set_exports(struct rdmaxfer_peer *peer,
			      const struct rdmaxfer_desc *descs, size_t n)
{
	if (!peer || (n && !descs) || n > RDMAXFER_MD_MAX_DESCS)
		return -EINVAL;
	return rx_set_exports(peer, descs, n);
}
