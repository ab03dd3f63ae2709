// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * devmem_prm.c - CREATE_MKEY with access mode KSM as bytes: the indirect
 * key that places NIC device memory at a reserved virtual range (devmem.c
 * hands the bytes to mlx5dv_devx_obj_create()).
 *
 * Offsets are the PRM's, in bits, each named after its PRM field; see
 * devmem_prm.h for the conventions.  The layouts used:
 *
 * create_mkey_in: opcode[0x10]@0x0, uid[0x10]@0x10, op_mod[0x10]@0x30,
 *   pg_access[1]@0x60, mkey_umem_valid[1]@0x61,
 *   memory_key_mkey_entry (mkc, 0x200 bits)@0x80,
 *   translations_octword_actual_size[0x20]@0x300,
 *   klm_pas_mtt (the entries)@0x880.
 * mkc: free[1]@0x1, access_mode_4_2[3]@0x3, umr_en[1]@0x10, a[1]@0x11,
 *   rw[1]@0x12, rr[1]@0x13, lw[1]@0x14, lr[1]@0x15,
 *   access_mode_1_0[2]@0x16, qpn[0x18]@0x20, mkey_7_0[8]@0x38,
 *   length64[1]@0x60, pd[0x18]@0x68, start_addr[0x40]@0x80,
 *   len[0x40]@0xc0, bsf_octword_size[0x20]@0x100,
 *   translations_octword_size[0x20]@0x1a0, log_page_size[5]@0x1db (for
 *   KSM: log_entity_size).
 * KSM entry (one octword): reserved[0x20]@0x0, mkey[0x20]@0x20,
 *   va[0x40]@0x40.
 * create_mkey_out: status[8]@0x0, syndrome[0x20]@0x20,
 *   mkey_index[0x18]@0x48.
 */
#include <errno.h>
#include <string.h>

#include "devmem_prm.h"

/* create_mkey_in */
#define IN_OPCODE		0x0
#define IN_OP_MOD		0x30
#define IN_MKC			0x80
#define IN_XLT_ACTUAL_SIZE	0x300
#define IN_KLM_PAS_MTT		0x880
/* mkc, relative to IN_MKC */
#define MKC_FREE		0x1
#define MKC_ACCESS_MODE_4_2	0x3
#define MKC_UMR_EN		0x10
#define MKC_A			0x11
#define MKC_RW			0x12
#define MKC_RR			0x13
#define MKC_LW			0x14
#define MKC_LR			0x15
#define MKC_ACCESS_MODE_1_0	0x16
#define MKC_QPN			0x20
#define MKC_MKEY_7_0		0x38
#define MKC_LENGTH64		0x60
#define MKC_PD			0x68
#define MKC_START_ADDR		0x80
#define MKC_LEN			0xc0
#define MKC_XLT_OCTWORD_SIZE	0x1a0
#define MKC_LOG_PAGE_SIZE	0x1db
/* KSM entry */
#define KSM_MKEY		0x20
#define KSM_VA			0x40
/* create_mkey_out */
#define OUT_STATUS		0x0
#define OUT_SYNDROME		0x20
#define OUT_MKEY_INDEX		0x48

static uint32_t load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* A field lies inside one 32-bit word: bit % 32 + width <= 32. */
static uint32_t field_mask(unsigned int width)
{
	return width >= 32 ? 0xffffffffU : (1U << width) - 1;
}

void rx_prm_set(void *buf, unsigned int bit, unsigned int width, uint32_t v)
{
	uint8_t *w = (uint8_t *)buf + bit / 32 * 4;
	unsigned int shift = 32 - bit % 32 - width;
	uint32_t mask = field_mask(width) << shift;

	store_be32(w, (load_be32(w) & ~mask) | ((v << shift) & mask));
}

uint32_t rx_prm_get(const void *buf, unsigned int bit, unsigned int width)
{
	const uint8_t *w = (const uint8_t *)buf + bit / 32 * 4;
	unsigned int shift = 32 - bit % 32 - width;

	return (load_be32(w) >> shift) & field_mask(width);
}

void rx_prm_set64(void *buf, unsigned int bit, uint64_t v)
{
	rx_prm_set(buf, bit, 32, (uint32_t)(v >> 32));
	rx_prm_set(buf, bit + 32, 32, (uint32_t)v);
}

uint64_t rx_prm_get64(const void *buf, unsigned int bit)
{
	return (uint64_t)rx_prm_get(buf, bit, 32) << 32 |
	       rx_prm_get(buf, bit + 32, 32);
}

size_t rx_prm_ksm_in_len(uint32_t n)
{
	return RX_PRM_CREATE_MKEY_IN_LEN + (size_t)n * RX_PRM_KSM_ENTRY_LEN;
}

static int check_mkey(const struct rx_ksm_mkey *m)
{
	uint64_t ent, i;

	if (!m->entries || !m->n || m->n > RX_PRM_KSM_MAX_ENTRIES ||
	    m->pdn > 0xffffffU || (m->access & ~RX_PRM_ACCESS_ALL) ||
	    m->log_entity < RX_PRM_KSM_LOG_ENTITY_MIN ||
	    m->log_entity > RX_PRM_KSM_LOG_ENTITY_MAX)
		return -EINVAL;
	ent = 1ULL << m->log_entity;
	if (!m->len || m->start + m->len < m->start ||
	    m->len > (uint64_t)m->n * ent)
		return -EINVAL;
	for (i = 0; i < m->n; i++)
		if (m->entries[i].len != ent)
			return -EINVAL;
	return 0;
}

int rx_prm_ksm_mkey_in(const struct rx_ksm_mkey *m, void *in, size_t cap)
{
	uint8_t *mkc = (uint8_t *)in + IN_MKC / 8;
	uint8_t *e;
	uint32_t i;
	int ret;

	if (!m || !in)
		return -EINVAL;
	ret = check_mkey(m);
	if (ret)
		return ret;
	if (cap < rx_prm_ksm_in_len(m->n))
		return -ENOSPC;
	memset(in, 0, rx_prm_ksm_in_len(m->n));
	rx_prm_set(in, IN_OPCODE, 16, RX_PRM_CMD_CREATE_MKEY);
	rx_prm_set(in, IN_OP_MOD, 16, 0);
	rx_prm_set(mkc, MKC_FREE, 1, 0);
	rx_prm_set(mkc, MKC_ACCESS_MODE_4_2, 3,
		   RX_PRM_MKC_ACCESS_MODE_KSM >> 2);
	rx_prm_set(mkc, MKC_ACCESS_MODE_1_0, 2,
		   RX_PRM_MKC_ACCESS_MODE_KSM & 3);
	rx_prm_set(mkc, MKC_UMR_EN, 1, 0);
	rx_prm_set(mkc, MKC_A, 1, !!(m->access & RX_PRM_ACCESS_A));
	rx_prm_set(mkc, MKC_RW, 1, !!(m->access & RX_PRM_ACCESS_RW));
	rx_prm_set(mkc, MKC_RR, 1, !!(m->access & RX_PRM_ACCESS_RR));
	rx_prm_set(mkc, MKC_LW, 1, !!(m->access & RX_PRM_ACCESS_LW));
	rx_prm_set(mkc, MKC_LR, 1, !!(m->access & RX_PRM_ACCESS_LR));
	rx_prm_set(mkc, MKC_QPN, 24, RX_PRM_QPN_ANY);
	rx_prm_set(mkc, MKC_MKEY_7_0, 8, m->tag);
	rx_prm_set(mkc, MKC_LENGTH64, 1, 0);
	rx_prm_set(mkc, MKC_PD, 24, m->pdn);
	rx_prm_set64(mkc, MKC_START_ADDR, m->start);
	rx_prm_set64(mkc, MKC_LEN, m->len);
	/* one KSM entry is one octword */
	rx_prm_set(mkc, MKC_XLT_OCTWORD_SIZE, 32, m->n);
	rx_prm_set(mkc, MKC_LOG_PAGE_SIZE, 5, m->log_entity);
	rx_prm_set(in, IN_XLT_ACTUAL_SIZE, 32, m->n);
	e = (uint8_t *)in + IN_KLM_PAS_MTT / 8;
	for (i = 0; i < m->n; i++, e += RX_PRM_KSM_ENTRY_LEN) {
		rx_prm_set(e, KSM_MKEY, 32, m->entries[i].key);
		rx_prm_set64(e, KSM_VA, m->entries[i].va);
	}
	return 0;
}

int rx_prm_ksm_mkey_out(const void *out, size_t len, uint8_t tag,
			uint32_t *keyp, uint32_t *syndromep)
{
	if (!out || len < RX_PRM_CREATE_MKEY_OUT_LEN || !keyp || !syndromep)
		return -EINVAL;
	*syndromep = rx_prm_get(out, OUT_SYNDROME, 32);
	if (rx_prm_get(out, OUT_STATUS, 8))
		return -EIO;
	*keyp = rx_prm_get(out, OUT_MKEY_INDEX, 24) << 8 | tag;
	return 0;
}

int rx_prm_ksm_layout(uint64_t start, uint64_t len, unsigned int log_entity,
		      uint32_t key, struct rx_ksm_entry *e, uint32_t max)
{
	uint64_t ent, n, i;

	if (!len || log_entity < RX_PRM_KSM_LOG_ENTITY_MIN ||
	    log_entity > RX_PRM_KSM_LOG_ENTITY_MAX)
		return -EINVAL;
	ent = 1ULL << log_entity;
	n = (len + ent - 1) >> log_entity;
	if ((start & (ent - 1)) || n > RX_PRM_KSM_MAX_ENTRIES)
		return -EINVAL;
	for (i = 0; i < n && i < max; i++) {
		e[i].va = i << log_entity;	/* into the zero-based MR */
		e[i].key = key;
		e[i].len = ent;
	}
	return (int)n;
}
