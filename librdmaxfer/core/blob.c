// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * blob.c - the agent metadata blob: encoder and bounds-checked parser.
 *
 * A blob crosses machines (and trust boundaries: it may come from a socket
 * or a key-value store), so the format is fixed-width little-endian with no
 * padding and no pointers, and the parser checks every length against the
 * buffer before it reads a byte.  It has no verbs dependency so the host
 * tests and the libFuzzer harness build it alone.
 *
 * Layout (offsets in bytes):
 *     0 magic u32 "RDXM"    4 version u16        6 header length u16 (176)
 *     8 total length u32   12 flags u32 (bit 0: listening)
 *    16 agent id u64       24 name[32]          56 device[64]
 *   120 port u8           121 GID index u8     122 address family u8 (0/4/6)
 *   123 reserved u8       124 listen port u16  126 reserved u16
 *   128 GID[16]           144 listen address[16]
 *   160 max message size u32                   164 QPs per peer u32
 *   168 descriptor count u32                   172 reserved u32
 *   176 descriptors, 24 bytes each: addr u64, len u64, rkey u32, kind u32
 * Reserved fields must be zero so that a later version can give them a
 * meaning; a different version is refused with -EPROTO before anything
 * else is interpreted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "internal.h"

#define MD_FLAG_LISTENING	(1U << 0)

size_t rx_md_size(size_t ndescs)
{
	return RX_MD_HDR_LEN + ndescs * RX_MD_DESC_LEN;
}

static bool kind_valid(uint32_t kind)
{
	return rx_desc_kind_valid(kind);	/* wire.h */
}

int rx_md_encode(const struct rdmaxfer_md *md, void *buf, size_t cap,
		 size_t *lenp)
{
	uint8_t *p = buf;
	size_t len, i;
	int family = 0;
	uint8_t addr[16] = { 0 };

	if (!md || !lenp || md->ndescs > RDMAXFER_MD_MAX_DESCS ||
	    (md->ndescs && !md->descs))
		return -EINVAL;
	len = rx_md_size(md->ndescs);
	*lenp = len;
	if (!buf || cap < len)
		return -ENOSPC;
	if (md->listening) {
		if (inet_pton(AF_INET, md->host, addr) == 1)
			family = 4;
		else if (inet_pton(AF_INET6, md->host, addr) == 1)
			family = 6;
		else
			return -EINVAL;
	}
	memset(p, 0, RX_MD_HDR_LEN);
	put32(p + 0, RDMAXFER_MD_MAGIC);
	put16(p + 4, RDMAXFER_MD_VERSION);
	put16(p + 6, RX_MD_HDR_LEN);
	put32(p + 8, (uint32_t)len);
	put32(p + 12, md->listening ? MD_FLAG_LISTENING : 0);
	put64(p + 16, md->agent_id);
	/* the fields stay NUL-terminated: the parser insists on it */
	memcpy(p + 24, md->name, strnlen(md->name, RDMAXFER_NAME_MAX - 1));
	memcpy(p + 56, md->device,
	       strnlen(md->device, RDMAXFER_DEVNAME_MAX - 1));
	p[120] = md->port;
	p[121] = md->gid_index;
	p[122] = family;
	put16(p + 124, md->listening ? md->listen_port : 0);
	memcpy(p + 128, md->gid, 16);
	memcpy(p + 144, addr, 16);
	put32(p + 160, md->max_msg_size);
	put32(p + 164, md->qps_per_peer);
	put32(p + 168, (uint32_t)md->ndescs);
	for (i = 0; i < md->ndescs; i++) {
		uint8_t *d = p + RX_MD_HDR_LEN + i * RX_MD_DESC_LEN;

		if (!kind_valid(md->descs[i].kind) || !md->descs[i].len ||
		    md->descs[i].len > RDMAXFER_DESC_MAX_LEN ||
		    md->descs[i].addr + md->descs[i].len < md->descs[i].addr)
			return -EINVAL;
		put64(d, md->descs[i].addr);
		put64(d + 8, md->descs[i].len);
		put32(d + 16, md->descs[i].rkey);
		put32(d + 20, md->descs[i].kind);
	}
	return 0;
}

/* NUL-terminated, and zero after the NUL: one encoding per value */
static bool field_is_string(const uint8_t *p, size_t size)
{
	const uint8_t *nul = memchr(p, 0, size);

	if (!nul)
		return false;
	while (++nul < p + size)
		if (*nul)
			return false;
	return true;
}

static bool all_zero(const uint8_t *p, size_t size)
{
	while (size--)
		if (*p++)
			return false;
	return true;
}

RX_EXPORT
int rdmaxfer_md_parse(const void *blob, size_t len, struct rdmaxfer_md **mdp)
{
	const uint8_t *p = blob;
	struct rdmaxfer_md *md;
	uint32_t total, flags, ndescs, i;
	int family;

	if (!blob || !mdp)
		return -EINVAL;
	/* magic and version first: a newer blob must say -EPROTO */
	if (len < 6 || get32(p) != RDMAXFER_MD_MAGIC)
		return -EINVAL;
	if (get16(p + 4) != RDMAXFER_MD_VERSION)
		return -EPROTO;
	if (len < RX_MD_HDR_LEN || get16(p + 6) != RX_MD_HDR_LEN)
		return -EINVAL;
	total = get32(p + 8);
	flags = get32(p + 12);
	ndescs = get32(p + 168);
	if (total != len || ndescs > RDMAXFER_MD_MAX_DESCS ||
	    rx_md_size(ndescs) != len)
		return -EINVAL;
	if (flags & ~MD_FLAG_LISTENING)
		return -EINVAL;
	if (!field_is_string(p + 24, RDMAXFER_NAME_MAX) ||
	    !field_is_string(p + 56, RDMAXFER_DEVNAME_MAX))
		return -EINVAL;
	if (p[123] || get16(p + 126) || get32(p + 172))
		return -EINVAL;
	family = p[122];
	if (flags & MD_FLAG_LISTENING) {
		if (family != 4 && family != 6)
			return -EINVAL;
		if (family == 4 && !all_zero(p + 148, 12))
			return -EINVAL;
	} else if (family || get16(p + 124) || !all_zero(p + 144, 16)) {
		return -EINVAL;
	}
	for (i = 0; i < ndescs; i++) {
		const uint8_t *d = p + RX_MD_HDR_LEN + (size_t)i * RX_MD_DESC_LEN;
		uint64_t a = get64(d), l = get64(d + 8);

		/* a peer's claim of what it exported: no registration is
		 * empty or longer than RDMAXFER_DESC_MAX_LEN, and what is
		 * computed from it later (xfer_plan.c) relies on that */
		if (!kind_valid(get32(d + 20)) || !l ||
		    l > RDMAXFER_DESC_MAX_LEN || a + l < a)
			return -EINVAL;
	}

	md = calloc(1, sizeof(*md) + (size_t)ndescs * sizeof(md->descs[0]));
	if (!md)
		return -ENOMEM;
	md->version = get16(p + 4);
	md->agent_id = get64(p + 16);
	memcpy(md->name, p + 24, RDMAXFER_NAME_MAX);
	memcpy(md->device, p + 56, RDMAXFER_DEVNAME_MAX);
	md->port = p[120];
	md->gid_index = p[121];
	memcpy(md->gid, p + 128, 16);
	md->max_msg_size = get32(p + 160);
	md->qps_per_peer = get32(p + 164);
	md->listening = flags & MD_FLAG_LISTENING;
	if (md->listening) {
		md->listen_port = get16(p + 124);
		inet_ntop(family == 4 ? AF_INET : AF_INET6, p + 144, md->host,
			  sizeof(md->host));
	}
	md->ndescs = ndescs;
	md->descs = ndescs ? (struct rdmaxfer_desc *)(md + 1) : NULL;
	for (i = 0; i < ndescs; i++) {
		const uint8_t *d = p + RX_MD_HDR_LEN + (size_t)i * RX_MD_DESC_LEN;

		md->descs[i].addr = get64(d);
		md->descs[i].len = get64(d + 8);
		md->descs[i].rkey = get32(d + 16);
		md->descs[i].kind = get32(d + 20);
	}
	*mdp = md;
	return 0;
}

RX_EXPORT
void rdmaxfer_md_free(struct rdmaxfer_md *md)
{
	free(md);
}
