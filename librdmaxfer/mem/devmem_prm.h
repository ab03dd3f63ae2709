/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * devmem_prm.h - the mlx5 firmware command that places device memory at
 * a virtual address: CREATE_MKEY with access mode KSM, built as bytes
 * (devmem_prm.c), private.
 *
 * Debian 12's rdma-core ships mlx5dv.h's DEVX_SET() macros but not the
 * mlx5_ifc_*_bits layouts they take, so the fields are placed here by
 * their bit offsets in the PRM ("Programmer's Reference Manual") layout,
 * named as the PRM and Linux's include/linux/mlx5/mlx5_ifc.h name them.
 * A layout is a run of big-endian 32-bit words; a field is (bit offset
 * from the start, width), bit 0 being the most significant bit of the
 * first word.  Pure functions, no verbs: the host tests check every field.
 */
#ifndef RX_DEVMEM_PRM_H
#define RX_DEVMEM_PRM_H

#include <stddef.h>
#include <stdint.h>

#define RX_PRM_CMD_CREATE_MKEY		0x200	/* opcode */
#define RX_PRM_MKC_ACCESS_MODE_KSM	0x3	/* fixed-size entries */
/* create_mkey_in up to klm_pas_mtt (bit 0x880), and one KSM entry (an
 * octword: reserved[0x20], mkey[0x20], va[0x40]) */
#define RX_PRM_CREATE_MKEY_IN_LEN	0x110
#define RX_PRM_KSM_ENTRY_LEN		16
#define RX_PRM_CREATE_MKEY_OUT_LEN	16
/* qpn of an mkey usable on any QP of its PD */
#define RX_PRM_QPN_ANY			0xffffffU
/* KSM entity size: a page at least, 2 GiB at most (an SGE's reach) */
#define RX_PRM_KSM_LOG_ENTITY_MIN	12
#define RX_PRM_KSM_LOG_ENTITY_MAX	31
/* entries of one command: a mailbox's worth, far above max_dm_size */
#define RX_PRM_KSM_MAX_ENTRIES		4096

/* mkc access bits (struct rx_ksm_mkey.access) */
#define RX_PRM_ACCESS_LR	(1U << 0)	/* local read */
#define RX_PRM_ACCESS_LW	(1U << 1)	/* local write */
#define RX_PRM_ACCESS_RR	(1U << 2)	/* remote read */
#define RX_PRM_ACCESS_RW	(1U << 3)	/* remote write */
#define RX_PRM_ACCESS_A		(1U << 4)	/* remote atomic */
#define RX_PRM_ACCESS_ALL	0x1fU

/* One KSM entry: entity i of the key is [va, va + len) of the mkey key
 * (len must be the entity size: KSM entries are fixed-size). */
struct rx_ksm_entry {
	uint64_t va;
	uint32_t key;
	uint64_t len;
};

/* An indirect key of access mode KSM over [start, start + len). */
struct rx_ksm_mkey {
	uint32_t pdn;			/* 24 bits */
	uint32_t access;		/* RX_PRM_ACCESS_* */
	uint8_t tag;			/* mkey_7_0: the key's low byte */
	uint8_t log_entity;		/* log2 of each entry's length */
	uint64_t start;
	uint64_t len;
	const struct rx_ksm_entry *entries;
	uint32_t n;
};

/* Field access in a PRM layout (width 1..32; 64-bit fields are 0x40 wide
 * and 64-bit aligned). */
void rx_prm_set(void *buf, unsigned int bit, unsigned int width,
		uint32_t v);
uint32_t rx_prm_get(const void *buf, unsigned int bit, unsigned int width);
void rx_prm_set64(void *buf, unsigned int bit, uint64_t v);
uint64_t rx_prm_get64(const void *buf, unsigned int bit);

/* Bytes of a CREATE_MKEY input with n KSM entries. */
size_t rx_prm_ksm_in_len(uint32_t n);

/*
 * Build the CREATE_MKEY input for m into in (cap bytes, zeroed first).
 * -EINVAL: no entries or too many, pdn over 24 bits, unknown access bits,
 * log_entity out of range, an entry whose len is not the entity size, a
 * key length 0, wrapping, or longer than the entries cover; -ENOSPC: cap
 * below rx_prm_ksm_in_len(n).
 */
int rx_prm_ksm_mkey_in(const struct rx_ksm_mkey *m, void *in, size_t cap);

/*
 * Read a CREATE_MKEY output: 0 and the new key ((mkey_index << 8) | tag)
 * when status is 0, else -EIO with *syndromep set; -EINVAL on a short or
 * NULL buffer.
 */
int rx_prm_ksm_mkey_out(const void *out, size_t len, uint8_t tag,
			uint32_t *keyp, uint32_t *syndromep);

/*
 * The KSM layout of device memory of len bytes placed at start: entries
 * of one page (1 << log_entity, log_entity >= RX_PRM_KSM_LOG_ENTITY_MIN)
 * into the zero-based MR key, entry i at offset i << log_entity; fills at
 * most max entries.  Returns the count needed, or -EINVAL (len 0, start
 * not entity-aligned, more than RX_PRM_KSM_MAX_ENTRIES).
 */
int rx_prm_ksm_layout(uint64_t start, uint64_t len, unsigned int log_entity,
		      uint32_t key, struct rx_ksm_entry *e, uint32_t max);

#endif /* RX_DEVMEM_PRM_H */
