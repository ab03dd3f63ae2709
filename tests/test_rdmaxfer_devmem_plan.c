// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_devmem_plan.c - NIC device memory without a device (host
 * test), built from the library's own devmem_plan.c and devmem_prm.c.
 *
 * - The CREATE_MKEY (KSM) input, checked byte by byte against offsets
 *   written out here from the PRM layout (not from the encoder's own
 *   constants): opcode, the mkc access bits and access mode, qpn, the
 *   key's tag, pd, start_addr, len, translations_octword_size and _actual
 *   size, log_entity_size, and each KSM entry (key, va), big-endian; the
 *   output decoder; the refused inputs.
 * - The path choice for every combination of capabilities (device memory
 *   or not, DEVX, dma-buf export, each path's start-up check not run /
 *   passed / failed) under each policy, and lengths over max_dm_size.
 * - A region's build and teardown through fake verbs (real mmap for the
 *   reservation): the reservation is PROT_NONE while the region lives and
 *   gone after; every step is made to fail in turn on every path, and
 *   nothing is left (DM, MR, key, reservation); teardown undoes users
 *   before what they use.
 * - Descriptors: zero-based ones carry RDMAXFER_DESC_ZERO_BASED and start
 *   at 0; KSM ones at the reserved address; sub-ranges and -ERANGE; the
 *   kind bits a peer accepts.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "devmem.h"
#include "devmem_prm.h"
#include "rc_test.h"

/* ---------------------------------------------------- PRM encoding */

static uint32_t be32_at(const uint8_t *p, size_t byte)
{
	return (uint32_t)p[byte] << 24 | (uint32_t)p[byte + 1] << 16 |
	       (uint32_t)p[byte + 2] << 8 | p[byte + 3];
}

static uint64_t be64_at(const uint8_t *p, size_t byte)
{
	return (uint64_t)be32_at(p, byte) << 32 | be32_at(p, byte + 4);
}

static void test_prm_fields(void)
{
	struct rx_ksm_entry e[3] = {
		{ 0x0, 0x11223344, 4096 },
		{ 0x1000, 0x11223344, 4096 },
		{ 0x2000, 0x11223344, 4096 },
	};
	struct rx_ksm_mkey m = {
		.pdn = 0xabcdef, .access = RX_PRM_ACCESS_ALL, .tag = 0x6d,
		.log_entity = 12, .start = 0x7f1234560000ULL,
		.len = 3 * 4096 - 8,
		.entries = e, .n = 3,
	};
	uint8_t in[0x110 + 3 * 16 + 16];
	/* memory_key_mkey_entry @ bit 0x80 */
	const uint8_t *mkc = in + 0x10;
	size_t i;

	CU_ASSERT_EQUAL(rx_prm_ksm_in_len(3), 0x110 + 3 * 16);
	memset(in, 0xee, sizeof(in));
	CU_ASSERT_EQUAL_FATAL(rx_prm_ksm_mkey_in(&m, in, sizeof(in)), 0);
	/* opcode[0x10] @0: CREATE_MKEY 0x200, uid 0 */
	CU_ASSERT_EQUAL(be32_at(in, 0), 0x02000000);
	CU_ASSERT_EQUAL(be32_at(in, 4), 0);		/* op_mod */
	CU_ASSERT_EQUAL(be32_at(in, 12), 0);	/* pg_access, umem */
	/* mkc dword 0: free 0, access_mode_4_2 0 (bits 3..5), umr_en 0
	 * (bit 16), a rw rr lw lr (bits 17..21), access_mode_1_0 = 3
	 * (bits 22..23): 0x00007f00 */
	CU_ASSERT_EQUAL(be32_at(mkc, 0), 0x00007f00);
	/* qpn[0x18] @0x20 = 0xffffff, mkey_7_0[8] @0x38 = the tag */
	CU_ASSERT_EQUAL(be32_at(mkc, 4), 0xffffff6d);
	CU_ASSERT_EQUAL(be32_at(mkc, 8), 0);
	/* length64 0 @0x60, pd[0x18] @0x68 */
	CU_ASSERT_EQUAL(be32_at(mkc, 12), 0x00abcdef);
	/* start_addr[0x40] @0x80, len[0x40] @0xc0 */
	CU_ASSERT_EQUAL(be64_at(mkc, 16), 0x7f1234560000ULL);
	CU_ASSERT_EQUAL(be64_at(mkc, 24), 3 * 4096 - 8);
	CU_ASSERT_EQUAL(be32_at(mkc, 32), 0);	/* bsf_octword_size */
	/* translations_octword_size[0x20] @0x1a0: one octword per entry */
	CU_ASSERT_EQUAL(be32_at(mkc, 52), 3);
	/* log_page_size[5] @0x1db: the low 5 bits of dword 0x1c0 */
	CU_ASSERT_EQUAL(be32_at(mkc, 56), 12);
	CU_ASSERT_EQUAL(be32_at(mkc, 60), 0);
	/* everything between the mkc and the actual size is zero */
	for (i = 0x50; i < 0x60; i++)
		CU_ASSERT_EQUAL(in[i], 0);
	/* translations_octword_actual_size[0x20] @0x300 */
	CU_ASSERT_EQUAL(be32_at(in, 0x60), 3);
	for (i = 0x64; i < 0x110; i++)
		if (in[i]) {
			CU_FAIL("a reserved byte before the entries is set");
			break;
		}
	/* entries @0x880 bits = byte 0x110: reserved, mkey, va */
	for (i = 0; i < 3; i++) {
		const uint8_t *k = in + 0x110 + i * 16;

		CU_ASSERT_EQUAL(be32_at(k, 0), 0);
		CU_ASSERT_EQUAL(be32_at(k, 4), 0x11223344);
		CU_ASSERT_EQUAL(be64_at(k, 8), i * 0x1000);
	}
	/* nothing written past the command */
	CU_ASSERT_EQUAL(in[0x110 + 48], 0xee);
	CU_ASSERT_EQUAL(in[sizeof(in) - 1], 0xee);
	/* access bits one by one: a(17) rw(18) rr(19) lw(20) lr(21) */
	m.access = RX_PRM_ACCESS_A;
	CU_ASSERT_EQUAL_FATAL(rx_prm_ksm_mkey_in(&m, in, sizeof(in)), 0);
	CU_ASSERT_EQUAL(be32_at(mkc, 0), 0x00004300);
	m.access = RX_PRM_ACCESS_LR;
	CU_ASSERT_EQUAL_FATAL(rx_prm_ksm_mkey_in(&m, in, sizeof(in)), 0);
	CU_ASSERT_EQUAL(be32_at(mkc, 0), 0x00000700);
}

static void test_prm_bits(void)
{
	uint8_t b[16];

	memset(b, 0, sizeof(b));
	rx_prm_set(b, 0x16, 2, 3);
	CU_ASSERT_EQUAL(be32_at(b, 0), 0x300);
	rx_prm_set(b, 0x38, 8, 0xff);
	CU_ASSERT_EQUAL(be32_at(b, 4), 0xff);
	rx_prm_set(b, 0x20, 24, 0x123456);
	CU_ASSERT_EQUAL(be32_at(b, 4), 0x123456ff);	/* neighbour kept */
	CU_ASSERT_EQUAL(rx_prm_get(b, 0x20, 24), 0x123456);
	rx_prm_set(b, 0x20, 24, 0x1000000 | 0x7);	/* too wide: masked */
	CU_ASSERT_EQUAL(be32_at(b, 4), 0x000007ff);
	rx_prm_set64(b, 0x40, 0x0102030405060708ULL);
	CU_ASSERT_EQUAL(b[8], 1);
	CU_ASSERT_EQUAL(b[15], 8);
	CU_ASSERT_EQUAL(rx_prm_get64(b, 0x40), 0x0102030405060708ULL);
	rx_prm_set(b, 0, 32, 0xdeadbeef);
	CU_ASSERT_EQUAL(rx_prm_get(b, 0, 32), 0xdeadbeef);
}

static void test_prm_bad(void)
{
	struct rx_ksm_entry e[2] = { { 0, 1, 4096 }, { 4096, 1, 4096 } };
	struct rx_ksm_mkey m = { .pdn = 1, .access = RX_PRM_ACCESS_ALL,
				 .log_entity = 12, .start = 0x10000,
				 .len = 8192, .entries = e, .n = 2 };
	struct rx_ksm_mkey b;
	uint8_t in[0x110 + 32];

	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(&m, in, sizeof(in)), 0);
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(&m, in, sizeof(in) - 1), -ENOSPC);
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(NULL, in, sizeof(in)), -EINVAL);
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(&m, NULL, sizeof(in)), -EINVAL);
	b = m, b.n = 0;
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(&b, in, sizeof(in)), -EINVAL);
	b = m, b.pdn = 1U << 24;
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(&b, in, sizeof(in)), -EINVAL);
	b = m, b.access = 1U << 5;
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(&b, in, sizeof(in)), -EINVAL);
	b = m, b.log_entity = 11;
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(&b, in, sizeof(in)), -EINVAL);
	b = m, b.log_entity = 32;
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(&b, in, sizeof(in)), -EINVAL);
	b = m, b.len = 8193;		/* more than the entries cover */
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(&b, in, sizeof(in)), -EINVAL);
	b = m, b.len = 0;
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(&b, in, sizeof(in)), -EINVAL);
	b = m, b.start = UINT64_MAX - 100;	/* wraps */
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(&b, in, sizeof(in)), -EINVAL);
	e[1].len = 2048;		/* KSM entries are fixed-size */
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_in(&m, in, sizeof(in)), -EINVAL);
}

static void test_prm_out_layout(void)
{
	uint8_t out[16] = { 0 };
	struct rx_ksm_entry e[4];
	uint32_t key = 0, syn = 0;

	/* mkey_index[0x18] @0x48 */
	out[9] = 0x12, out[10] = 0x34, out[11] = 0x56;
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_out(out, 16, 0x6d, &key, &syn), 0);
	CU_ASSERT_EQUAL(key, 0x1234566d);
	/* status @0, syndrome @0x20 */
	out[0] = 0x03, out[4] = 0xca, out[7] = 0xfe;
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_out(out, 16, 0x6d, &key, &syn), -EIO);
	CU_ASSERT_EQUAL(syn, 0xca0000fe);
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_out(out, 15, 0, &key, &syn), -EINVAL);
	CU_ASSERT_EQUAL(rx_prm_ksm_mkey_out(NULL, 16, 0, &key, &syn), -EINVAL);

	/* layout: one page per entry, into the zero-based MR */
	CU_ASSERT_EQUAL(rx_prm_ksm_layout(0x10000, 3 * 4096 + 8, 12, 0x77, e,
					  4), 4);
	CU_ASSERT_EQUAL(e[3].va, 3 * 4096);
	CU_ASSERT_EQUAL(e[3].key, 0x77);
	CU_ASSERT_EQUAL(e[3].len, 4096);
	CU_ASSERT_EQUAL(rx_prm_ksm_layout(0x10000, 64, 12, 1, NULL, 0), 1);
	CU_ASSERT_EQUAL(rx_prm_ksm_layout(0x10800, 64, 12, 1, e, 4), -EINVAL);
	CU_ASSERT_EQUAL(rx_prm_ksm_layout(0x10000, 0, 12, 1, e, 4), -EINVAL);
	CU_ASSERT_EQUAL(rx_prm_ksm_layout(0x10000, 64, 40, 1, e, 4), -EINVAL);
}

/* ------------------------------------------------------ path choice */

/* What the rules say, spelled out on their own: the first of KSM (DEVX),
 * DMABUF (export), ZERO_BASED whose check did not fail, else host. */
static uint32_t expect_best(const struct rx_dm_hw *hw)
{
	if (!hw->max_dm_size)
		return RDMAXFER_DM_PATH_HOST;
	if (hw->devx && hw->check[RDMAXFER_DM_PATH_KSM] >= 0)
		return RDMAXFER_DM_PATH_KSM;
	if (hw->dmabuf_export && hw->check[RDMAXFER_DM_PATH_DMABUF] >= 0)
		return RDMAXFER_DM_PATH_DMABUF;
	if (hw->check[RDMAXFER_DM_PATH_ZERO_BASED] >= 0)
		return RDMAXFER_DM_PATH_ZERO_BASED;
	return RDMAXFER_DM_PATH_HOST;
}

static void test_pick_all(void)
{
	static const int checks[] = { 0, 1, -EIO };
	static const int policies[] = { RDMAXFER_DM_AUTO, RDMAXFER_DM_ON,
					RDMAXFER_DM_OFF };
	unsigned int combo, n = 0;

	/* dm x devx x export x 3 checks ^ 3 paths */
	for (combo = 0; combo < 2 * 2 * 2 * 27; combo++) {
		struct rx_dm_hw hw;
		unsigned int c = combo;
		size_t p;

		memset(&hw, 0, sizeof(hw));
		hw.max_dm_size = (c & 1) ? 262144 : 0;
		hw.devx = hw.mlx5 = c & 2;
		hw.dmabuf_export = c & 4;
		c >>= 3;
		hw.check[RDMAXFER_DM_PATH_KSM] = checks[c % 3];
		hw.check[RDMAXFER_DM_PATH_DMABUF] = checks[c / 3 % 3];
		hw.check[RDMAXFER_DM_PATH_ZERO_BASED] = checks[c / 9 % 3];
		for (p = 0; p < 3; p++) {
			uint32_t want = expect_best(&hw), path = 0;
			char why[256];
			int ret;

			ret = rx_dm_pick(&hw, policies[p], 4096, &path, why,
					 sizeof(why));
			n++;
			if (policies[p] == RDMAXFER_DM_OFF) {
				CU_ASSERT_EQUAL(ret, 0);
				CU_ASSERT_EQUAL(path, RDMAXFER_DM_PATH_HOST);
				CU_ASSERT_STRING_EQUAL(why, "policy off");
			} else if (want == RDMAXFER_DM_PATH_HOST &&
				   policies[p] == RDMAXFER_DM_ON) {
				CU_ASSERT_EQUAL(ret, -EOPNOTSUPP);
				CU_ASSERT(why[0] != '\0');
			} else {
				CU_ASSERT_EQUAL(ret, 0);
				CU_ASSERT_EQUAL(path, want);
				/* a fallback always says why */
				CU_ASSERT(want != RDMAXFER_DM_PATH_HOST ||
					  why[0] != '\0');
				CU_ASSERT(want == RDMAXFER_DM_PATH_HOST ||
					  why[0] == '\0');
			}
			if (!hw.max_dm_size && ret == 0 &&
			    policies[p] == RDMAXFER_DM_AUTO)
				CU_ASSERT_PTR_NOT_NULL(strstr(why,
						"no device memory"));
		}
	}
	CU_ASSERT_EQUAL(n, 2 * 2 * 2 * 27 * 3);
}

static void test_pick_cases(void)
{
	struct rx_dm_hw hw;
	uint32_t path;
	char why[256];

	/* rxe: nothing; auto falls back, on fails and says why */
	memset(&hw, 0, sizeof(hw));
	CU_ASSERT_EQUAL(rx_dm_pick(&hw, RDMAXFER_DM_AUTO, 64, &path, why,
				   sizeof(why)), 0);
	CU_ASSERT_EQUAL(path, RDMAXFER_DM_PATH_HOST);
	CU_ASSERT_STRING_EQUAL(why, "no device memory (max_dm_size 0)");
	CU_ASSERT_EQUAL(rx_dm_pick(&hw, RDMAXFER_DM_ON, 64, &path, why,
				   sizeof(why)), -EOPNOTSUPP);
	CU_ASSERT_STRING_EQUAL(why, "no device memory (max_dm_size 0)");
	/* mlx5 without DEVX: zero-based */
	hw.max_dm_size = 131072;
	hw.mlx5 = true;
	CU_ASSERT_EQUAL(rx_dm_pick(&hw, RDMAXFER_DM_AUTO, 64, &path, why,
				   sizeof(why)), 0);
	CU_ASSERT_EQUAL(path, RDMAXFER_DM_PATH_ZERO_BASED);
	/* KSM's check failed: zero-based, and a fallback names it */
	hw.devx = true;
	hw.check[RDMAXFER_DM_PATH_KSM] = -EPERM;
	CU_ASSERT_EQUAL(rx_dm_best_path(&hw, why, sizeof(why)),
			RDMAXFER_DM_PATH_ZERO_BASED);
	CU_ASSERT_PTR_NOT_NULL(strstr(why,
				      "ksm: start-up atomic check failed"));
	hw.check[RDMAXFER_DM_PATH_KSM] = 1;
	CU_ASSERT_EQUAL(rx_dm_pick(&hw, RDMAXFER_DM_ON, 131072, &path, why,
				   sizeof(why)), 0);
	CU_ASSERT_EQUAL(path, RDMAXFER_DM_PATH_KSM);
	/* over max_dm_size: on -ENOSPC, auto host with the reason */
	CU_ASSERT_EQUAL(rx_dm_pick(&hw, RDMAXFER_DM_ON, 131080, &path, why,
				   sizeof(why)), -ENOSPC);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "over max_dm_size 131072"));
	CU_ASSERT_EQUAL(rx_dm_pick(&hw, RDMAXFER_DM_AUTO, 131080, &path, why,
				   sizeof(why)), 0);
	CU_ASSERT_EQUAL(path, RDMAXFER_DM_PATH_HOST);
	/* zero, unaligned: refused under every policy */
	CU_ASSERT_EQUAL(rx_dm_pick(&hw, RDMAXFER_DM_AUTO, 0, &path, why,
				   sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(rx_dm_pick(&hw, RDMAXFER_DM_OFF, 12, &path, why,
				   sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "multiple of 8"));
}

static void test_policy(void)
{
	CU_ASSERT_EQUAL(rx_dm_policy_parse(NULL), RDMAXFER_DM_AUTO);
	CU_ASSERT_EQUAL(rx_dm_policy_parse(""), RDMAXFER_DM_AUTO);
	CU_ASSERT_EQUAL(rx_dm_policy_parse("auto"), RDMAXFER_DM_AUTO);
	CU_ASSERT_EQUAL(rx_dm_policy_parse("on"), RDMAXFER_DM_ON);
	CU_ASSERT_EQUAL(rx_dm_policy_parse("off"), RDMAXFER_DM_OFF);
	CU_ASSERT_EQUAL(rx_dm_policy_parse("ON"), -EINVAL);
	CU_ASSERT_EQUAL(rx_dm_policy_parse("yes"), -EINVAL);
	CU_ASSERT_EQUAL(rx_dm_call_policy(RDMAXFER_DM_OFF, RDMAXFER_DM_REQUIRE),
			RDMAXFER_DM_ON);
	CU_ASSERT_EQUAL(rx_dm_call_policy(RDMAXFER_DM_ON, RDMAXFER_DM_HOST),
			RDMAXFER_DM_OFF);
	CU_ASSERT_EQUAL(rx_dm_call_policy(RDMAXFER_DM_ON, 0), RDMAXFER_DM_ON);
	CU_ASSERT_EQUAL(rx_dm_call_policy(RDMAXFER_DM_AUTO,
					  RDMAXFER_DM_REQUIRE |
					  RDMAXFER_DM_HOST), -EINVAL);
	CU_ASSERT_EQUAL(rx_dm_call_policy(RDMAXFER_DM_AUTO, 4), -EINVAL);
	CU_ASSERT_STRING_EQUAL(rdmaxfer_dm_path_name(RDMAXFER_DM_PATH_KSM),
			       "ksm");
	CU_ASSERT_STRING_EQUAL(rdmaxfer_dm_path_name(RDMAXFER_DM_PATH_HOST),
			       "host");
	CU_ASSERT_STRING_EQUAL(rdmaxfer_dm_path_name(0), "?");
}

/* ------------------------------------------- build, teardown, leaks */

enum step { S_ALLOC, S_REG, S_RESERVE, S_KSM, S_DMABUF, S_NSTEPS };

struct fake {
	int fail_at;			/* enum step to fail, -1: none */
	int live[S_NSTEPS];		/* objects alive per step */
	char log[256];			/* teardown order */
	void *rsv;
	size_t rsv_len;
	int ksm_n;			/* entries the KSM input carried */
	uint64_t ksm_start, ksm_len;
	int ksm_bad_entries;
	uint64_t dbuf_iova;
};

static int token[S_NSTEPS];		/* distinct non-NULL handles */

static int f_make(struct fake *f, enum step s, void **obj)
{
	if (f->fail_at == (int)s)
		return -EIO;
	f->live[s]++;
	*obj = &token[s];
	return 0;
}

static void f_log(struct fake *f, const char *what)
{
	strncat(f->log, what, sizeof(f->log) - strlen(f->log) - 1);
}

/* Undo what f_make() made for step s, in the teardown log as what. */
static int f_drop(struct fake *f, enum step s, void *obj, const char *what)
{
	CU_ASSERT_PTR_EQUAL(obj, &token[s]);
	f->live[s]--;
	f_log(f, what);
	return 0;
}

static int f_alloc_dm(void *ctx, size_t len, void **dm)
{
	(void)len;
	return f_make(ctx, S_ALLOC, dm);
}

static int f_free_dm(void *ctx, void *dm)
{
	return f_drop(ctx, S_ALLOC, dm, "free_dm ");
}

static int f_reg_dm_mr(void *ctx, void *dm, size_t len, void **mr,
		       uint32_t *lkey, uint32_t *rkey)
{
	(void)dm, (void)len;
	*lkey = 0xaa01;
	*rkey = 0xbb02;
	return f_make(ctx, S_REG, mr);
}

static int f_dereg_mr(void *ctx, void *mr)
{
	if (mr == &token[S_DMABUF])
		return f_drop(ctx, S_DMABUF, mr, "dereg_dmabuf ");
	return f_drop(ctx, S_REG, mr, "dereg_mr ");
}

static int f_reserve(void *ctx, size_t len, void **va)
{
	struct fake *f = ctx;
	void *p;

	if (f->fail_at == S_RESERVE)
		return -ENOMEM;
	p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	f->live[S_RESERVE]++;
	f->rsv = p;
	f->rsv_len = len;
	*va = p;
	return 0;
}

static int f_unreserve(void *ctx, void *va, size_t len)
{
	struct fake *f = ctx;

	CU_ASSERT_PTR_EQUAL(va, f->rsv);
	CU_ASSERT_EQUAL(len, f->rsv_len);
	f->live[S_RESERVE]--;
	f_log(f, "unreserve ");
	return munmap(va, len) ? -errno : 0;
}

static int f_create_ksm(void *ctx, const void *in, size_t inlen, void **obj,
			uint32_t *key)
{
	struct fake *f = ctx;
	const uint8_t *b = in;
	int i;

	/* read the command back as the firmware would */
	f->ksm_n = (int)be32_at(b, 0x60);
	f->ksm_start = be64_at(b, 0x10 + 16);
	f->ksm_len = be64_at(b, 0x10 + 24);
	CU_ASSERT_EQUAL(inlen, 0x110 + (size_t)f->ksm_n * 16);
	for (i = 0; i < f->ksm_n; i++)
		if (be32_at(b, 0x110 + i * 16 + 4) != 0xaa01 ||
		    be64_at(b, 0x110 + i * 16 + 8) != (uint64_t)i * 4096)
			f->ksm_bad_entries++;
	*key = 0x4242;
	return f_make(f, S_KSM, obj);
}

static int f_destroy_ksm(void *ctx, void *obj)
{
	return f_drop(ctx, S_KSM, obj, "destroy_ksm ");
}

static int f_reg_dmabuf(void *ctx, void *dm, size_t len, uint64_t iova,
			void **mr, uint32_t *rkey)
{
	struct fake *f = ctx;

	(void)dm, (void)len;
	f->dbuf_iova = iova;
	*rkey = 0xdb;
	return f_make(f, S_DMABUF, mr);
}

static void fake_ops(struct fake *f, struct rx_dm_ops *ops)
{
	memset(f, 0, sizeof(*f));
	f->fail_at = -1;
	ops->ctx = f;
	ops->alloc_dm = f_alloc_dm;
	ops->free_dm = f_free_dm;
	ops->reg_dm_mr = f_reg_dm_mr;
	ops->dereg_mr = f_dereg_mr;
	ops->reserve = f_reserve;
	ops->unreserve = f_unreserve;
	ops->create_ksm = f_create_ksm;
	ops->destroy_ksm = f_destroy_ksm;
	ops->reg_dmabuf = f_reg_dmabuf;
}

/* The permissions /proc/self/maps shows for the mapping holding va ("---p"
 * for a reservation), or "" when nothing is mapped there. */
static void maps_perms(const void *va, char perms[5])
{
	FILE *fp = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char p[5];

	perms[0] = '\0';
	if (!fp)
		return;
	while (fscanf(fp, "%lx-%lx %4s%*[^\n]", &lo, &hi, p) == 3)
		if ((uintptr_t)va >= lo && (uintptr_t)va < hi) {
			memcpy(perms, p, 5);
			break;
		}
	fclose(fp);
}

static int live_total(const struct fake *f)
{
	int i, n = 0;

	for (i = 0; i < S_NSTEPS; i++)
		n += f->live[i];
	return n;
}

static void test_build_ksm(void)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	struct rx_dm_region r;
	struct rdmaxfer_desc d;
	struct rx_dm_ops ops;
	struct fake f;
	char perms[5];
	void *rsv;

	fake_ops(&f, &ops);
	CU_ASSERT_EQUAL_FATAL(rx_dm_build(&ops, RDMAXFER_DM_PATH_KSM,
					  3 * psz + 64, 0x55, psz, &r), 0);
	/* reserved, page-rounded, inaccessible; the key spans the region */
	CU_ASSERT_EQUAL(r.rsv_len, 4 * psz);
	maps_perms(r.rsv, perms);
	CU_ASSERT_STRING_EQUAL(perms, "---p");
	maps_perms((char *)r.rsv + r.rsv_len - 1, perms);
	CU_ASSERT_STRING_EQUAL(perms, "---p");
	CU_ASSERT_EQUAL(f.ksm_n, 4);
	CU_ASSERT_EQUAL(f.ksm_start, (uintptr_t)r.rsv);
	CU_ASSERT_EQUAL(f.ksm_len, 3 * psz + 64);
	CU_ASSERT_EQUAL(f.ksm_bad_entries, 0);
	CU_ASSERT_EQUAL(r.rkey, 0x4242);
	CU_ASSERT_EQUAL(r.addr, (uintptr_t)r.rsv);
	CU_ASSERT_FALSE(r.zero_based);
	CU_ASSERT_EQUAL(live_total(&f), 4);
	/* descriptors: ordinary addresses in the reservation */
	CU_ASSERT_EQUAL(rx_dm_desc(&r, 128, 8, &d), 0);
	CU_ASSERT_EQUAL(d.addr, (uintptr_t)r.rsv + 128);
	CU_ASSERT_EQUAL(d.len, 8);
	CU_ASSERT_EQUAL(d.rkey, 0x4242);
	CU_ASSERT_EQUAL(d.kind, RDMAXFER_MEM_DEVICE);
	CU_ASSERT(rx_desc_kind_valid(d.kind));
	CU_ASSERT_EQUAL(rx_dm_desc(&r, 0, 0, &d), 0);
	CU_ASSERT_EQUAL(d.len, 3 * psz + 64);
	CU_ASSERT_EQUAL(rx_dm_desc(&r, 3 * psz + 64, 0, &d), -ERANGE);
	CU_ASSERT_EQUAL(rx_dm_desc(&r, 8, 3 * psz + 64, &d), -ERANGE);
	/* released: the key before the range, the MR before the DM */
	rsv = r.rsv;
	rx_dm_teardown(&ops, &r);
	CU_ASSERT_STRING_EQUAL(f.log,
			       "destroy_ksm unreserve dereg_mr free_dm ");
	CU_ASSERT_EQUAL(live_total(&f), 0);
	maps_perms(rsv, perms);
	CU_ASSERT_STRING_EQUAL(perms, "");
	CU_ASSERT_PTR_NULL(r.dm);
}

static void test_build_zero_based_dmabuf(void)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	struct rx_dm_region r;
	struct rdmaxfer_desc d;
	struct rx_dm_ops ops;
	struct fake f;
	char perms[5];

	fake_ops(&f, &ops);
	CU_ASSERT_EQUAL_FATAL(rx_dm_build(&ops, RDMAXFER_DM_PATH_ZERO_BASED,
					  256, 0, psz, &r), 0);
	CU_ASSERT_TRUE(r.zero_based);
	CU_ASSERT_PTR_NULL(r.rsv);	/* nothing reserved */
	CU_ASSERT_EQUAL(f.live[S_RESERVE], 0);
	CU_ASSERT_EQUAL(rx_dm_desc(&r, 64, 8, &d), 0);
	CU_ASSERT_EQUAL(d.addr, 64);		/* from 0 */
	CU_ASSERT_EQUAL(d.rkey, 0xbb02);	/* the MR's own */
	CU_ASSERT_EQUAL(d.kind, RDMAXFER_MEM_DEVICE | RDMAXFER_DESC_ZERO_BASED);
	CU_ASSERT(rx_desc_kind_valid(d.kind));
	rx_dm_teardown(&ops, &r);
	CU_ASSERT_STRING_EQUAL(f.log, "dereg_mr free_dm ");
	CU_ASSERT_EQUAL(live_total(&f), 0);

	fake_ops(&f, &ops);
	CU_ASSERT_EQUAL_FATAL(rx_dm_build(&ops, RDMAXFER_DM_PATH_DMABUF,
					  4096, 0, psz, &r), 0);
	CU_ASSERT_EQUAL(f.dbuf_iova, (uintptr_t)r.rsv);
	CU_ASSERT_EQUAL(r.addr, (uintptr_t)r.rsv);
	CU_ASSERT_EQUAL(r.rkey, 0xdb);
	maps_perms(r.rsv, perms);
	CU_ASSERT_STRING_EQUAL(perms, "---p");
	rx_dm_teardown(&ops, &r);
	CU_ASSERT_STRING_EQUAL(f.log,
			       "dereg_dmabuf unreserve dereg_mr free_dm ");
	CU_ASSERT_EQUAL(live_total(&f), 0);
	CU_ASSERT_EQUAL(rx_dm_build(&ops, RDMAXFER_DM_PATH_HOST, 64, 0, psz,
				    &r), -EINVAL);
	CU_ASSERT_EQUAL(rx_dm_build(&ops, RDMAXFER_DM_PATH_KSM, 0, 0, psz,
				    &r), -EINVAL);
	CU_ASSERT_EQUAL(rx_dm_build(&ops, RDMAXFER_DM_PATH_KSM, 64, 0, 3000,
				    &r), -EINVAL);	/* no power of 2 */
	CU_ASSERT_EQUAL(live_total(&f), 0);
}

/* Every step of every path fails once: nothing may be left behind. */
static void test_build_failures(void)
{
	static const uint32_t paths[] = { RDMAXFER_DM_PATH_KSM,
					   RDMAXFER_DM_PATH_DMABUF,
					   RDMAXFER_DM_PATH_ZERO_BASED };
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	size_t p;
	int s, failed = 0;

	for (p = 0; p < 3; p++)
		for (s = 0; s < S_NSTEPS; s++) {
			struct rx_dm_region r;
			struct rx_dm_ops ops;
			struct fake f;
			char perms[5];
			int ret;

			fake_ops(&f, &ops);
			f.fail_at = s;
			ret = rx_dm_build(&ops, paths[p], 2 * psz, 1, psz, &r);
			if (ret) {
				failed++;
				CU_ASSERT_EQUAL(ret, s == S_RESERVE ? -ENOMEM :
							-EIO);
				CU_ASSERT_EQUAL(live_total(&f), 0);
				CU_ASSERT_PTR_NULL(r.dm);
				if (f.rsv) {
					maps_perms(f.rsv, perms);
					CU_ASSERT_STRING_EQUAL(perms, "");
				}
				continue;
			}
			/* a step this path does not take */
			CU_ASSERT(!(paths[p] == RDMAXFER_DM_PATH_KSM &&
				    s == S_KSM));
			rx_dm_teardown(&ops, &r);
			CU_ASSERT_EQUAL(live_total(&f), 0);
		}
	/* KSM: alloc, reg, reserve, ksm; DMABUF: alloc, reg, reserve,
	 * dmabuf; ZERO_BASED: alloc, reg */
	CU_ASSERT_EQUAL(failed, 4 + 4 + 2);
}

static void test_kind_bits(void)
{
	CU_ASSERT(rx_desc_kind_valid(RDMAXFER_MEM_HOST));
	CU_ASSERT(rx_desc_kind_valid(RDMAXFER_MEM_DEVICE));
	CU_ASSERT(rx_desc_kind_valid(RDMAXFER_MEM_DMABUF));
	CU_ASSERT(rx_desc_kind_valid(RDMAXFER_MEM_DEVICE |
				     RDMAXFER_DESC_ZERO_BASED));
	CU_ASSERT_FALSE(rx_desc_kind_valid(0));
	CU_ASSERT_FALSE(rx_desc_kind_valid(5));
	CU_ASSERT_FALSE(rx_desc_kind_valid(RDMAXFER_MEM_HOST |
					   RDMAXFER_DESC_ZERO_BASED));
	CU_ASSERT_FALSE(rx_desc_kind_valid(RDMAXFER_MEM_DEVICE | (1U << 17)));
	CU_ASSERT_FALSE(rx_desc_kind_valid(RDMAXFER_DESC_ZERO_BASED));
}

static const struct rc_test_case prm_cases[] = {
	{ "fields", test_prm_fields },
	{ "bits", test_prm_bits },
	{ "bad", test_prm_bad },
	{ "out_layout", test_prm_out_layout },
	{ NULL, NULL }
};

static const struct rc_test_case plan_cases[] = {
	{ "pick_all", test_pick_all },
	{ "pick_cases", test_pick_cases },
	{ "policy", test_policy },
	{ "build_ksm", test_build_ksm },
	{ "build_zero_based_dmabuf", test_build_zero_based_dmabuf },
	{ "build_failures", test_build_failures },
	{ "kind_bits", test_kind_bits },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	rc_add_suite("devmem_prm", NULL, NULL, prm_cases);
	rc_add_suite("devmem_plan", NULL, NULL, plan_cases);
	return rc_test_main(argc, argv);
}
