/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_regcache_backend.h - a counting registration backend for the
 * libregcache tests.
 *
 * Each registration gets a unique id and a record (range, access, live),
 * so a test can tell one registration from another, catch a double or
 * foreign deregistration, and inject failures.  Like ibv_reg_mr it refuses
 * ranges with unmapped holes (-EFAULT) and it can optionally touch every
 * page (what pinning does to a range).
 */
#ifndef TEST_REGCACHE_BACKEND_H
#define TEST_REGCACHE_BACKEND_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define TB_MAGIC_LIVE	0x6c697665U
#define TB_MAGIC_DEAD	0x64656164U

struct tb_reg {
	uint32_t magic;
	uint64_t id;
	void *addr;
	size_t len;
	uint32_t access;
	struct tb_reg *dead_next;	/* tb_graveyard */
};

/*
 * Deregistered records are kept (never freed) so a second dereg of the
 * same handle is caught; they are linked here so that they stay
 * reachable and LeakSanitizer (--enable-sanitizers) does not report them.
 */
static struct tb_reg *tb_graveyard;
static pthread_mutex_t tb_graveyard_lock = PTHREAD_MUTEX_INITIALIZER;

struct tb_backend {
	_Atomic uint64_t next_id;
	_Atomic long regs, deregs, live, bad_deregs;
	_Atomic int fail_next;		/* -errno for the next reg, then 0 */
	size_t fail_above;		/* reg of more bytes fails with -ENOMEM */
	bool touch;			/* pre-fault like a pinning registration */
};

static inline int tb_reg(void *user, void *addr, size_t len, uint32_t access,
			 void **handle)
{
	struct tb_backend *b = user;
	struct tb_reg *r;
	int f = atomic_exchange(&b->fail_next, 0);

	if (f)
		return f;
	if (b->fail_above && len > b->fail_above)
		return -ENOMEM;
	/* msync fails with ENOMEM on any unmapped page, like pinning does. */
	if (msync(addr, len, MS_ASYNC))
		return -EFAULT;
	if (b->touch) {
		volatile char *p = addr;
		size_t i, psz = (size_t)sysconf(_SC_PAGESIZE);

		for (i = 0; i < len; i += psz)
			(void)p[i];
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->magic = TB_MAGIC_LIVE;
	r->id = atomic_fetch_add(&b->next_id, 1) + 1;
	r->addr = addr;
	r->len = len;
	r->access = access;
	atomic_fetch_add(&b->regs, 1);
	atomic_fetch_add(&b->live, 1);
	*handle = r;
	return 0;
}

static inline int tb_dereg(void *user, void *handle)
{
	struct tb_backend *b = user;
	struct tb_reg *r = handle;

	if (!r || r->magic != TB_MAGIC_LIVE) {
		atomic_fetch_add(&b->bad_deregs, 1);
		return -EINVAL;
	}
	/* Keep the record (never freed) so a second dereg is caught. */
	r->magic = TB_MAGIC_DEAD;
	pthread_mutex_lock(&tb_graveyard_lock);
	r->dead_next = tb_graveyard;
	tb_graveyard = r;
	pthread_mutex_unlock(&tb_graveyard_lock);
	atomic_fetch_add(&b->deregs, 1);
	atomic_fetch_sub(&b->live, 1);
	return 0;
}

static inline uint64_t tb_id(const struct regcache_entry *e)
{
	return ((const struct tb_reg *)regcache_entry_handle(e))->id;
}

static inline bool tb_live(const struct regcache_entry *e)
{
	return ((const struct tb_reg *)regcache_entry_handle(e))->magic ==
	       TB_MAGIC_LIVE;
}

#endif /* TEST_REGCACHE_BACKEND_H */
