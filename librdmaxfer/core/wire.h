/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wire.h - what the wire formats share (no verbs): little-endian stores
 * and loads, and the check of a descriptor's kind field.  The core's
 * formats (hello.c, blob.c) and an extension's own (ring_info.c's target
 * info and attach message) encode with these, so a field is written and
 * read the same way everywhere; the host tests and fuzzers build those
 * files with this header alone.
 */
#ifndef RDMAXFER_WIRE_H
#define RDMAXFER_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "rdmaxfer.h"

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) | (uint32_t)get16(p + 2) << 16;
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* Whether a descriptor's kind field is one we serve: a kind, and the
 * zero-based bit only with DEVICE. */
static inline bool rx_desc_kind_valid(uint32_t kind)
{
	uint32_t k = kind & RDMAXFER_DESC_KIND_MASK;

	if (kind & ~(RDMAXFER_DESC_KIND_MASK | RDMAXFER_DESC_ZERO_BASED))
		return false;
	if ((kind & RDMAXFER_DESC_ZERO_BASED) && k != RDMAXFER_MEM_DEVICE)
		return false;
	return k >= RDMAXFER_MEM_HOST && k <= RDMAXFER_MEM_DMABUF;
}

#endif /* RDMAXFER_WIRE_H */
