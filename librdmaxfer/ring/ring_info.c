// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ring_info.c - the grain ring's target info: binary blob and one-line
 * JSON, encoders and bounds-checked parsers.
 *
 * The target info crosses machines and trust boundaries like the agent
 * metadata blob, so the binary form is that blob (blob.c, which checks
 * every length) behind a small fixed header of its own:
 *     0 magic u32 "RDXR"   4 version u16   6 flavour u16
 *     8 total length u32  12 slot count u32
 *    16 slot size u64     24 agent metadata blob, exactly two
 *                            descriptors: the slots, the credit word
 * Version 2 (1.7: a sample ring, or a ring with flags) has 8 more header
 * bytes before the blob: 24 channels u16, 26 flags u16, 28 zero u32.
 * A plain discrete ring is still written as version 1, which 1.4
 * readers parse; they refuse version 2 with -EPROTO, as they should.
 * The text form is one flat JSON object on one line, for a file, a command
 * line or a control plane; 64-bit numbers travel as "0x..." strings so
 * that a JavaScript control plane does not round them.  Both parsers
 * refuse anything they do not fully understand (unknown or repeated keys,
 * escapes, another version) and check the ring's geometry.  No verbs:
 * the host tests build this file alone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define RING_HDR_LEN	24
#define RING_HDR2_LEN	32
#define CREDIT_LEN	8

/* The geometry and the fields every form must carry. */
int rx_ring_info_check(const struct rdmaxfer_ring_info *info)
{
	uint64_t planes;

	if (!info)
		return -EINVAL;
	if (info->version != RDMAXFER_RING_VERSION &&
	    info->version != RDMAXFER_RING_VERSION_EXT)
		return -EPROTO;
	/* version 1 has no room for a sample ring's channels */
	if (info->version == RDMAXFER_RING_VERSION &&
	    info->flavour == RDMAXFER_RING_CONTINUOUS)
		return -EOPNOTSUPP;
	if (info->version == RDMAXFER_RING_VERSION &&
	    (info->channels || info->flags))
		return -EINVAL;
	if (info->flavour != RDMAXFER_RING_DISCRETE &&
	    info->flavour != RDMAXFER_RING_CONTINUOUS)
		return -EINVAL;
	if (info->flags & ~(uint16_t)RDMAXFER_RING_OVERRUN)
		return -EINVAL;
	if (info->flavour == RDMAXFER_RING_DISCRETE && info->channels)
		return -EINVAL;
	if (info->flavour == RDMAXFER_RING_CONTINUOUS) {
		if (!info->channels ||
		    info->channels > RDMAXFER_RING_MAX_CHANNELS)
			return -EINVAL;
		if (info->flags & RDMAXFER_RING_OVERRUN)
			return -EOPNOTSUPP;
	}
	if (!info->n_slots || info->n_slots > RDMAXFER_RING_MAX_SLOTS ||
	    !info->slot_size)
		return -EINVAL;
	planes = info->channels ? info->channels : 1;
	if (info->slot_size > UINT64_MAX / info->n_slots / planes ||
	    info->slot_size * info->n_slots * planes > info->slots.len)
		return -ERANGE;
	if (info->slots.addr + info->slots.len < info->slots.addr ||
	    info->credit.len < CREDIT_LEN ||
	    info->credit.addr + info->credit.len < info->credit.addr)
		return -ERANGE;
	if (info->slots.kind != RDMAXFER_MEM_HOST ||
	    info->credit.kind != RDMAXFER_MEM_HOST)
		return -EOPNOTSUPP;
	if (!memchr(info->host, 0, sizeof(info->host)) || !info->host[0] ||
	    !info->port ||
	    !memchr(info->device, 0, sizeof(info->device)))
		return -EINVAL;
	return 0;
}

/*
 * Where the samples [head - count, head) of a ring of n samples per
 * channel lie in each plane: from sample offset start, first samples to
 * the plane's end, then the rest from the plane's start (MXL's slice
 * arithmetic).  count must be 1..n.
 */
void rx_ring_span(uint64_t head, uint32_t count, uint32_t n,
		  uint32_t *start, uint32_t *first)
{
	uint32_t s = (uint32_t)((head - count) % n);

	*start = s;
	*first = count <= n - s ? count : n - s;
}

/* A sample write's immediate: head's low 16 bits, count above. */
uint32_t rx_ring_samples_imm(uint64_t head, uint32_t count)
{
	return (count << 16) | (uint32_t)(head & 0xffff);
}

/*
 * The head of a sample write from its immediate, given next, the head
 * of the previous write (writes are contiguous): next + count, whose low
 * 16 bits the immediate must repeat.  0, or -EPROTO for a count of 0 or
 * over the ring, or a head that does not follow on.
 */
int rx_ring_samples_head(uint32_t imm, uint64_t next, uint32_t n,
			 uint64_t *head, uint32_t *count)
{
	uint32_t c = imm >> 16;

	if (!c || c > n || ((next + c) & 0xffff) != (imm & 0xffff))
		return -EPROTO;
	*head = next + c;
	*count = c;
	return 0;
}

/*
 * A writer's attach: the first message it sends the target after it
 * connected (rdmaxfer_ring_attach()), naming the ring by its slots, so
 * that a target ring takes immediates only from the peers attached to
 * it.  RX_RING_ATTACH_LEN bytes, little-endian, as a notification
 * message of value RX_RING_ATTACH_VALUE:
 *     0 magic u32 "RDXR"   4 version u16 (1)   6 reserved u16 (0)
 *     8 slots address u64  16 slots rkey u32  20 reserved u32 (0)
 */
int rx_ring_attach_encode(uint64_t addr, uint32_t rkey, void *buf, size_t cap)
{
	uint8_t *p = buf;

	if (!p || cap < RX_RING_ATTACH_LEN)
		return -EINVAL;
	memset(p, 0, RX_RING_ATTACH_LEN);
	put32(p, RDMAXFER_RING_MAGIC);
	put16(p + 4, RX_RING_ATTACH_VERSION);
	put64(p + 8, addr);
	put32(p + 16, rkey);
	return 0;
}

/* 0, or -EBADMSG for anything but an attach of this version. */
int rx_ring_attach_decode(const void *buf, size_t len, uint64_t *addr,
			  uint32_t *rkey)
{
	const uint8_t *p = buf;

	if (!p || len != RX_RING_ATTACH_LEN ||
	    get32(p) != RDMAXFER_RING_MAGIC ||
	    get16(p + 4) != RX_RING_ATTACH_VERSION || get16(p + 6) ||
	    get32(p + 20))
		return -EBADMSG;
	*addr = get64(p + 8);
	*rkey = (uint32_t)get32(p + 16);
	return 0;
}

RX_EXPORT
int rdmaxfer_ring_info_pack(const struct rdmaxfer_ring_info *info, void *buf,
			    size_t cap, size_t *lenp)
{
	struct rdmaxfer_desc descs[2];
	struct rdmaxfer_md md;
	uint8_t *p = buf;
	size_t mdlen, len, hdr;
	int ret;

	if (!lenp)
		return -EINVAL;
	ret = rx_ring_info_check(info);
	if (ret)
		return ret;
	memset(&md, 0, sizeof(md));
	md.agent_id = info->agent_id;
	snprintf(md.name, sizeof(md.name), "ring");
	memcpy(md.device, info->device, sizeof(md.device));
	md.listening = true;
	memcpy(md.host, info->host, sizeof(md.host));
	md.listen_port = info->port;
	descs[0] = info->slots;
	descs[1] = info->credit;
	md.ndescs = 2;
	md.descs = descs;
	hdr = info->version == RDMAXFER_RING_VERSION ? RING_HDR_LEN :
						       RING_HDR2_LEN;
	len = hdr + rx_md_size(2);
	*lenp = len;
	if (!buf || cap < len)
		return -ENOSPC;
	ret = rx_md_encode(&md, p + hdr, cap - hdr, &mdlen);
	if (ret)
		return ret;
	put32(p, RDMAXFER_RING_MAGIC);
	put16(p + 4, info->version);
	put16(p + 6, info->flavour);
	put32(p + 8, len);
	put32(p + 12, info->n_slots);
	put64(p + 16, info->slot_size);
	if (hdr == RING_HDR2_LEN) {
		put16(p + 24, info->channels);
		put16(p + 26, info->flags);
		put32(p + 28, 0);
	}
	return 0;
}

RX_EXPORT
int rdmaxfer_ring_info_parse(const void *blob, size_t len,
			     struct rdmaxfer_ring_info *info)
{
	const uint8_t *p = blob;
	struct rdmaxfer_ring_info out;
	struct rdmaxfer_md *md;
	uint32_t version;
	size_t hdr;
	int ret;

	if (!blob || !info || len < RING_HDR_LEN)
		return -EINVAL;
	if (get32(p) != RDMAXFER_RING_MAGIC)
		return -EINVAL;
	version = (uint32_t)get16(p + 4);
	if (version != RDMAXFER_RING_VERSION &&
	    version != RDMAXFER_RING_VERSION_EXT)
		return -EPROTO;
	hdr = version == RDMAXFER_RING_VERSION ? RING_HDR_LEN : RING_HDR2_LEN;
	if (len < hdr || get32(p + 8) != len)
		return -EINVAL;
	if (hdr == RING_HDR2_LEN && get32(p + 28))
		return -EINVAL;
	ret = rdmaxfer_md_parse(p + hdr, len - hdr, &md);
	if (ret)
		return ret;
	if (md->ndescs != 2 || !md->listening) {
		rdmaxfer_md_free(md);
		return -EINVAL;
	}
	memset(&out, 0, sizeof(out));
	out.version = version;
	out.flavour = (uint32_t)get16(p + 6);
	out.n_slots = (uint32_t)get32(p + 12);
	out.slot_size = get64(p + 16);
	if (hdr == RING_HDR2_LEN) {
		out.channels = (uint16_t)get16(p + 24);
		out.flags = (uint16_t)get16(p + 26);
	}
	out.agent_id = md->agent_id;
	memcpy(out.device, md->device, sizeof(out.device));
	memcpy(out.host, md->host, sizeof(out.host));
	out.port = md->listen_port;
	out.slots = md->descs[0];
	out.credit = md->descs[1];
	rdmaxfer_md_free(md);
	ret = rx_ring_info_check(&out);
	if (!ret)
		*info = out;
	return ret;
}

RX_EXPORT
int rdmaxfer_ring_info_json(const struct rdmaxfer_ring_info *info, char *buf,
			    size_t cap)
{
	char ext[48];
	int ret, n;

	ret = rx_ring_info_check(info);
	if (ret)
		return ret;
	/* host and device were checked for no quote or backslash below */
	if (strpbrk(info->host, "\"\\") || strpbrk(info->device, "\"\\"))
		return -EINVAL;
	if (info->version == RDMAXFER_RING_VERSION_EXT)
		snprintf(ext, sizeof(ext), "\"channels\":%u,\"flags\":%u,",
			 info->channels, info->flags);
	else
		ext[0] = 0;
	n = snprintf(buf, buf ? cap : 0,
		     "{\"rdmaxfer_ring\":%u,\"flavour\":\"%s\",%s"
		     "\"n_slots\":%u,\"slot_size\":%" PRIu64 ","
		     "\"agent_id\":\"0x%" PRIx64 "\",\"device\":\"%s\","
		     "\"host\":\"%s\",\"port\":%u,"
		     "\"addr\":\"0x%" PRIx64 "\",\"len\":%" PRIu64 ","
		     "\"rkey\":%u,\"credit_addr\":\"0x%" PRIx64 "\","
		     "\"credit_len\":%" PRIu64 ",\"credit_rkey\":%u}",
		     info->version,
		     info->flavour == RDMAXFER_RING_CONTINUOUS ? "continuous" :
		     "discrete", ext, info->n_slots, info->slot_size,
		     info->agent_id, info->device, info->host, info->port,
		     info->slots.addr, info->slots.len, info->slots.rkey,
		     info->credit.addr, info->credit.len, info->credit.rkey);
	if (n < 0)
		return -EINVAL;
	if (!buf || (size_t)n >= cap)
		return -ENOSPC;
	return n;
}

/* ------------------------------------------------------- JSON parsing */

enum jtype { J_NUM, J_STR };

struct jkey {
	const char *name;
	enum jtype type;
	uint64_t max;
};

enum {
	K_VERSION, K_FLAVOUR, K_NSLOTS, K_SLOTSZ, K_AGENT, K_DEVICE, K_HOST,
	K_PORT, K_ADDR, K_LEN, K_RKEY, K_CADDR, K_CLEN, K_CRKEY,
	K_CHANNELS, K_FLAGS,		/* version 2 only */
	K_COUNT
};

static const struct jkey jkeys[K_COUNT] = {
	[K_VERSION] = { "rdmaxfer_ring", J_NUM, UINT16_MAX },
	[K_FLAVOUR] = { "flavour", J_STR, 0 },
	[K_NSLOTS] = { "n_slots", J_NUM, UINT32_MAX },
	[K_SLOTSZ] = { "slot_size", J_NUM, UINT64_MAX },
	[K_AGENT] = { "agent_id", J_STR, 0 },
	[K_DEVICE] = { "device", J_STR, 0 },
	[K_HOST] = { "host", J_STR, 0 },
	[K_PORT] = { "port", J_NUM, UINT16_MAX },
	[K_ADDR] = { "addr", J_STR, 0 },
	[K_LEN] = { "len", J_NUM, UINT64_MAX },
	[K_RKEY] = { "rkey", J_NUM, UINT32_MAX },
	[K_CADDR] = { "credit_addr", J_STR, 0 },
	[K_CLEN] = { "credit_len", J_NUM, UINT64_MAX },
	[K_CRKEY] = { "credit_rkey", J_NUM, UINT32_MAX },
	[K_CHANNELS] = { "channels", J_NUM, UINT16_MAX },
	[K_FLAGS] = { "flags", J_NUM, UINT16_MAX },
};

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	return s;
}

/* A string without escapes or control characters into out[cap]. */
static const char *jstring(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	if (*s++ != '"')
		return NULL;
	while (*s != '"') {
		if (!*s || *s == '\\' || (unsigned char)*s < 0x20 ||
		    n + 1 >= cap)
			return NULL;
		out[n++] = *s++;
	}
	out[n] = 0;
	return s + 1;
}

static const char *jnumber(const char *s, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;

	if (*s < '0' || *s > '9' || (*s == '0' && s[1] >= '0' && s[1] <= '9'))
		return NULL;
	while (*s >= '0' && *s <= '9') {
		unsigned int d = (unsigned int)(*s++ - '0');

		if (x > (UINT64_MAX - d) / 10)
			return NULL;
		x = x * 10 + d;
	}
	if (x > max)
		return NULL;
	*v = x;
	return s;
}

static int hex64(const char *s, uint64_t *v)
{
	uint64_t x = 0;
	int n = 0;

	if (s[0] != '0' || s[1] != 'x')
		return -EINVAL;
	for (s += 2; *s; s++, n++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else
			return -EINVAL;
		if (n == 16)
			return -EINVAL;
		x = x << 4 | (uint64_t)d;
	}
	if (!n)
		return -EINVAL;
	*v = x;
	return 0;
}

struct jvals {
	uint64_t num[K_COUNT];
	char str[K_COUNT][RDMAXFER_DEVNAME_MAX];
	bool seen[K_COUNT];
};

static int jparse(const char *s, struct jvals *jv)
{
	char key[24];
	int k;

	s = skip_ws(s);
	if (*s++ != '{')
		return -EINVAL;
	for (;;) {
		s = jstring(skip_ws(s), key, sizeof(key));
		if (!s)
			return -EINVAL;
		for (k = 0; k < K_COUNT; k++)
			if (!strcmp(key, jkeys[k].name))
				break;
		if (k == K_COUNT || jv->seen[k])
			return -EINVAL;
		jv->seen[k] = true;
		s = skip_ws(s);
		if (*s++ != ':')
			return -EINVAL;
		s = skip_ws(s);
		if (jkeys[k].type == J_NUM)
			s = jnumber(s, jkeys[k].max, &jv->num[k]);
		else
			s = jstring(s, jv->str[k], sizeof(jv->str[k]));
		if (!s)
			return -EINVAL;
		s = skip_ws(s);
		if (*s == '}')
			break;
		if (*s++ != ',')
			return -EINVAL;
	}
	return *skip_ws(s + 1) ? -EINVAL : 0;
}

RX_EXPORT
int rdmaxfer_ring_info_parse_json(const char *text,
				  struct rdmaxfer_ring_info *info)
{
	struct rdmaxfer_ring_info out;
	struct jvals *jv;
	int ret, k;

	if (!text || !info || strnlen(text, RDMAXFER_RING_JSON_MAX) >= RDMAXFER_RING_JSON_MAX)
		return -EINVAL;
	jv = calloc(1, sizeof(*jv));
	if (!jv)
		return -ENOMEM;
	ret = jparse(text, jv);
	if (ret)
		goto out;
	memset(&out, 0, sizeof(out));
	out.version = (uint32_t)jv->num[K_VERSION];
	if (jv->seen[K_VERSION] && out.version != RDMAXFER_RING_VERSION &&
	    out.version != RDMAXFER_RING_VERSION_EXT) {
		ret = -EPROTO;
		goto out;
	}
	/* every key of the version, and no other */
	for (k = 0; k < K_COUNT; k++)
		if (jv->seen[k] != (k < K_CHANNELS || out.version ==
				    RDMAXFER_RING_VERSION_EXT))
			ret = -EINVAL;
	if (ret)
		goto out;
	out.channels = (uint16_t)jv->num[K_CHANNELS];
	out.flags = (uint16_t)jv->num[K_FLAGS];
	if (!strcmp(jv->str[K_FLAVOUR], "discrete"))
		out.flavour = RDMAXFER_RING_DISCRETE;
	else if (!strcmp(jv->str[K_FLAVOUR], "continuous"))
		out.flavour = RDMAXFER_RING_CONTINUOUS;
	out.n_slots = (uint32_t)jv->num[K_NSLOTS];
	out.slot_size = jv->num[K_SLOTSZ];
	memcpy(out.device, jv->str[K_DEVICE], sizeof(out.device));
	if (strlen(jv->str[K_HOST]) >= sizeof(out.host)) {
		ret = -EINVAL;
		goto out;
	}
	strcpy(out.host, jv->str[K_HOST]);
	out.port = (uint16_t)jv->num[K_PORT];
	out.slots.len = jv->num[K_LEN];
	out.slots.rkey = (uint32_t)jv->num[K_RKEY];
	out.slots.kind = RDMAXFER_MEM_HOST;
	out.credit.len = jv->num[K_CLEN];
	out.credit.rkey = (uint32_t)jv->num[K_CRKEY];
	out.credit.kind = RDMAXFER_MEM_HOST;
	ret = hex64(jv->str[K_AGENT], &out.agent_id);
	if (!ret)
		ret = hex64(jv->str[K_ADDR], &out.slots.addr);
	if (!ret)
		ret = hex64(jv->str[K_CADDR], &out.credit.addr);
	if (!ret)
		ret = rx_ring_info_check(&out);
	if (!ret)
		*info = out;
out:
	free(jv);
	return ret;
}
