// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mem.c - memory registration through the cache, remote descriptors.
 *
 * A memory handle is a held cache entry: registering the same buffer again,
 * or a transfer touching it, is a cache hit.  Descriptors are plain data
 * (address, length, rkey, kind) so they can be sent to peers as they are.
 * RDMAXFER_MEM_ODP goes through the agent's ODP cache where its policy and
 * device allow (odp.c decides), else through the pinned cache as HOST;
 * DMABUF regions come from rdmaxfer_mem_register_dmabuf() (dmabuf.c);
 * DEVICE memory is allocated, not registered: rdmaxfer_mem_alloc_device()
 * (devmem.c).
 *
 * Access: exactly what the memory is used for.  Local write is what
 * lets the device write into a buffer (a READ's target, an atomic's
 * result word) and what verbs require beside remote write and atomic;
 * anything else is registered without it, so a WRITE's source or a
 * READ-only export may be PROT_READ memory or a read-only file mapping
 * (where the kernel pins those for a read-only MR: Linux 6.1 refuses a
 * read-only shared file mapping to every MR, and both 6.1 and 7.3 break
 * a private mapping's copy-on-write for any long-term pin, measured with
 * plain ibv_reg_mr()).  The cache serves a get only from an
 * entry with every bit asked for (libregcache's access match), so a READ
 * target never gets the key of a read-only registration.
 *
 * Security property: who can touch which memory through which key.
 * - An lkey (request buffers, atomic result words, local-only handles)
 *   carries local access only.  The cache may merge and grow
 *   these registrations over neighbouring memory and keep them after the
 *   last put: only this process posts with an lkey, and only for buffers
 *   it names itself, so the extra coverage grants nobody anything.
 * - An rkey is only ever the key of an exact cache entry
 *   (REGCACHE_GET_EXACT): one registration of exactly [addr, addr + len)
 *   with exactly the remote rights granted (+ LOCAL_WRITE, which verbs
 *   require for remote write and atomic).  It is never merged, grown, or
 *   handed to a registration of another range or access, so a peer holding
 *   it reaches those bytes with those rights and nothing else.  The same
 *   range registered twice with the same rights shares one rkey.
 * - Default: the entry is REGCACHE_GET_NOKEEP, so the MR is deregistered
 *   at the last rdmaxfer_mem_deregister() of that range and the rkey stops
 *   working at once (memory freed and reused is not writable by a peer).
 * - RDMAXFER_AGENT_CACHE_RKEYS (or RDMAXFER_CACHE_RKEYS=1): the entry is
 *   kept, so the rkey stays valid after the last deregister until the
 *   cache evicts it or the monitor invalidates it (munmap, remap): an
 *   application that opts in promises not to reuse exported memory for
 *   anything a former peer must not see.  Still only the exact bytes.
 * - RDMAXFER_RKEY_WINDOW (window.c): the exact entry is registered with
 *   IBV_ACCESS_MW_BIND and no remote rights (its own rkey reaches
 *   nothing) and kept; the rkey is a memory window bound to exactly the
 *   handle's range and rights, one per handle, unbound at its deregister
 *   before that returns.  Registering the range again is a hit and a
 *   bind, with a new key.
 * - In every mode a key dies with its memory: when the monitor sees the
 *   range unmapped or remapped, libregcache deregisters the exact entry
 *   even while handles hold it (its holders keep an entry whose handle
 *   is NULL; the windows over it are unbound first, rx_win_revoke_mr()).
 *   rx_mem_sweep() applies the monitor's events at least once
 *   per progress-thread round and at the agent's calls that may touch a
 *   key (progress, post, describe, register), which bounds how long a
 *   key outlives its memory; a held handle then describes nothing
 *   (-ESTALE).
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"
#include "window.h"

/*
 * The cache get behind handles and transfers.  Never-touched memory needs
 * nothing special here: libregcache's uffd monitor watches in
 * write-protect mode (or populates before a missing-mode watch), so the
 * pin inside ibv_reg_mr succeeds as it does without a cache.  Nothing in
 * this process reads the buffer: a bad pointer comes back as the
 * registration's -EFAULT, never as a fault here.
 */
int rx_cache_get(struct regcache *cache, void *addr, size_t len,
		 uint32_t access, unsigned int flags,
		 struct regcache_entry **entryp)
{
	/* regcache_get() directly when there are no flags: through
	 * regcache_get_flags() it would be a second call through the PLT */
	if (!flags)
		return regcache_get(cache, addr, len, access, entryp);
	return regcache_get_flags(cache, addr, len, access, flags, entryp);
}

#define RX_SWEEP_CACHES	4

/* The sum of the caches' generations (they only grow), 0 if one of them
 * cannot tell. */
static uint64_t sweep_gen(struct regcache **c, unsigned int n)
{
	uint64_t g, sum = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		g = regcache_generation(c[i]);
		if (!g)
			return 0;
		sum += g;
	}
	return sum;
}

/*
 * Apply the pending invalidations of the agent's cache and of the
 * extensions' own (the ODP cache), so that an exact registration whose
 * memory went is deregistered now (see the top).  always: the progress
 * thread's round, which also picks up the releases the uffd monitor's
 * thread deferred; otherwise only when the caches' generations moved
 * since the last sweep (a few loads on the common path).  Called without
 * the agent lock: the dereg callback may block.
 */
void rx_mem_sweep(struct rdmaxfer_agent *agent, bool always)
{
	struct regcache *c[RX_SWEEP_CACHES];
	unsigned int i, n = 0;
	uint64_t g;

	if (!agent->cache)
		return;
	c[n++] = agent->cache;
	n += rx_exts_caches(agent, c + n, RX_SWEEP_CACHES - n);
	g = sweep_gen(c, n);
	if (!always && g &&
	    g == __atomic_load_n(&agent->sweep_gen, __ATOMIC_RELAXED))
		return;
	for (i = 0; i < n; i++)
		(void)regcache_process_events(c[i]);
	/* the generation read before: one that moved while the events
	 * were applied (an unmap during this sweep) makes the next call
	 * apply them, where the one read after would make it skip them.
	 * regcache_process_events() returns only once the deregistrations
	 * of what it (or another thread) drained are done, so a key that
	 * a call here saw die is dead on the NIC too. */
	__atomic_store_n(&agent->sweep_gen, g, __ATOMIC_RELAXED);
}

/*
 * Called by the caches' dereg callbacks before an MR is freed.  A held
 * exact entry's MR can go under its handle (libregcache revokes it when
 * its memory goes), and two readers look at a held entry's MR: mem_fill()
 * and odp.c's prefetch, both under mem_lock.  libregcache makes the handle
 * read NULL before it calls dereg, so once mem_lock was free after that,
 * no reader still holds the old pointer: one lock round, the grace period.
 */
void rx_mem_grace(struct rdmaxfer_agent *agent)
{
	rx_spin_lock(&agent->mem_lock);
	rx_spin_unlock(&agent->mem_lock);
}

/* RDMAXFER_ACCESS_* -> IBV_ACCESS_*: remote write and atomic need local
 * write (verbs refuses them otherwise), remote read does not.  Local-only
 * memory (0) gets local write: it may be any transfer's buffer (see
 * mem_fill() for memory that cannot be written). */
uint32_t rx_ibv_access(uint32_t access)
{
	uint32_t a = 0;

	if (!access || (access & (RDMAXFER_ACCESS_REMOTE_WRITE |
				  RDMAXFER_ACCESS_REMOTE_ATOMIC)))
		a = IBV_ACCESS_LOCAL_WRITE;
	if (access & RDMAXFER_ACCESS_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	if (access & RDMAXFER_ACCESS_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE;
	if (access & RDMAXFER_ACCESS_REMOTE_ATOMIC)
		a |= IBV_ACCESS_REMOTE_ATOMIC;
	return a;
}

/* Under mem_lock: a handle joins or leaves the agent's list. */
static void mem_count(struct rdmaxfer_mem *mem, int d)
{
	struct rdmaxfer_agent *agent = mem->agent;

	if (mem->access)
		__atomic_store_n(&agent->remote_mems, agent->remote_mems + d,
				 __ATOMIC_RELAXED);
}

/* Put a new handle on the agent's list. */
void rx_mem_add(struct rdmaxfer_mem *mem)
{
	struct rdmaxfer_agent *agent = mem->agent;

	rx_spin_lock(&agent->mem_lock);
	rx_list_add_tail(&agent->mems, &mem->node);
	mem_count(mem, 1);
	rx_spin_unlock(&agent->mem_lock);
}

/*
 * A listed handle that is a copy of *init: a spare struct if the agent
 * keeps one (one lock round, no allocation: the hit path), else a new
 * one.  Filled under the lock, so the ODP prefetch's scan of the list
 * (odp.c) never sees a spare's stale fields.
 */
static struct rdmaxfer_mem *mem_new(const struct rdmaxfer_mem *init)
{
	struct rdmaxfer_agent *agent = init->agent;
	struct rdmaxfer_mem *mem = NULL;

	rx_spin_lock(&agent->mem_lock);
	if (!rx_list_empty(&agent->mem_spares)) {
		mem = rx_container_of(agent->mem_spares.next,
				      struct rdmaxfer_mem, node);
		rx_list_del(&mem->node);
		agent->nspares--;
		*mem = *init;
		rx_list_add_tail(&agent->mems, &mem->node);
		mem_count(mem, 1);
	}
	rx_spin_unlock(&agent->mem_lock);
	if (mem)
		return mem;
	mem = malloc(sizeof(*mem));
	if (!mem)
		return NULL;
	*mem = *init;
	rx_mem_add(mem);
	return mem;
}

/* Agent teardown: the spare structs. */
void rx_mem_free_spares(struct rdmaxfer_agent *agent)
{
	while (!rx_list_empty(&agent->mem_spares)) {
		struct rx_list *n = agent->mem_spares.next;

		rx_list_del(n);
		free(rx_container_of(n, struct rdmaxfer_mem, node));
	}
	agent->nspares = 0;
}

/* What a handle on a cache entry of [addr, addr + len) holds: the get,
 * and in window mode (win) the window its key is. */
static int mem_fill(struct rdmaxfer_agent *agent, struct regcache *cache,
		    void *addr, size_t len, enum rdmaxfer_mem_kind kind,
		    uint32_t access, unsigned int flags, bool win,
		    struct rdmaxfer_mem *m)
{
	int ret;

	*m = (struct rdmaxfer_mem){
		.agent = agent,
		.cache = cache,
		.addr = addr,
		.len = len,
		.kind = kind,
		.access = access,
	};
	ret = rx_cache_get(cache, addr, len,
			   win ? rx_win_mr_access(access) : rx_ibv_access(access),
			   flags, &m->entry);
	/* local-only memory the process may not write (PROT_READ, a
	 * read-only file mapping): it can still be a WRITE's source */
	if (ret == -EFAULT && !access)
		ret = rx_cache_get(cache, addr, len, 0, flags, &m->entry);
	if (ret)
		return ret;
	if (win) {
		ret = rx_win_bind(agent, m->entry, addr, len, access, &m->win,
				  &m->rkey);
		if (ret)
			regcache_put(cache, m->entry);
		return ret;
	}
	if (access) {
		struct ibv_mr *mr;

		/* under mem_lock: see rx_mem_grace() */
		rx_spin_lock(&agent->mem_lock);
		mr = regcache_entry_handle(m->entry);
		if (mr)
			m->rkey = mr->rkey;
		rx_spin_unlock(&agent->mem_lock);
		/* revoked between the get and here: the memory went */
		if (!mr) {
			regcache_put(cache, m->entry);
			return -ESTALE;
		}
	}
	return 0;
}

/* A handle on a cache entry of [addr, addr + len), not listed yet. */
int rx_mem_register(struct rdmaxfer_agent *agent, struct regcache *cache,
		    void *addr, size_t len, enum rdmaxfer_mem_kind kind,
		    uint32_t access, unsigned int flags,
		    struct rdmaxfer_mem **memp)
{
	struct rdmaxfer_mem init, *mem;
	int ret;

	ret = mem_fill(agent, cache, addr, len, kind, access, flags, false,
		       &init);
	if (ret)
		return ret;
	mem = malloc(sizeof(*mem));
	if (!mem) {
		regcache_put(cache, init.entry);
		return -ENOMEM;
	}
	*mem = init;
	*memp = mem;
	return 0;
}

RX_EXPORT
int rdmaxfer_mem_register_access(struct rdmaxfer_agent *agent, void *addr,
				 size_t len, enum rdmaxfer_mem_kind kind,
				 uint32_t access, struct rdmaxfer_mem **memp)
{
	struct regcache *cache = agent ? agent->cache : NULL;
	struct rdmaxfer_mem init;
	unsigned int flags = 0;
	bool win = false;
	int ret;

	if (!agent || !addr || !len || !memp ||
	    (access & ~RDMAXFER_ACCESS_REMOTE))
		return -EINVAL;
	/*
	 * A key can outlive its memory only while a handle with remote
	 * rights is held, or in the cached-rkeys mode, where exact entries
	 * stay after their last handle: otherwise there is nothing for the
	 * sweep to revoke, and a local-only register skips it (it cost a
	 * local hit 0.25 us in a 6.1 guest).  A count read stale is one
	 * whose change raced with this call: either order is a valid one.
	 */
	if (access || (agent->attr.flags & RDMAXFER_AGENT_CACHE_RKEYS) ||
	    __atomic_load_n(&agent->remote_mems, __ATOMIC_RELAXED))
		rx_mem_sweep(agent, false);
	if (kind != RDMAXFER_MEM_HOST) {
		/* another kind registers by address only through its table:
		 * it picks the cache, and the kind the descriptors say */
		struct rx_mem_reg r = { .cache = cache, .kind = kind };
		const struct rx_mem_ops *ops;
		void *state;

		ops = rx_mem_kind(agent, kind, &state);
		if (!ops || !ops->reg)
			return -EINVAL;
		ret = ops->reg(agent, state, access, &r);
		if (ret)
			return ret;
		cache = r.cache;
		kind = r.kind;
	}
	if (access) {
		flags = REGCACHE_GET_EXACT;
		/*
		 * An ODP MR follows the address: kept past its last handle
		 * (RDMAXFER_AGENT_CACHE_RKEYS), its rkey would reach whatever
		 * is mapped there next, until the next call into the ODP
		 * cache applied the unmap.  So it goes with its last handle
		 * in every mode, as a dma-buf MR does.
		 */
		/* window mode: the registration, without remote rights, is
		 * kept; the window is what dies (window.c) */
		win = cache == agent->cache && rx_win_enabled(agent);
		if (!win && (!(agent->attr.flags & RDMAXFER_AGENT_CACHE_RKEYS) ||
			     cache != agent->cache))
			flags |= REGCACHE_GET_NOKEEP;
	}
	ret = mem_fill(agent, cache, addr, len, kind, access, flags, win,
		       &init);
	if (ret)
		return ret;
	*memp = mem_new(&init);
	if (!*memp) {
		rx_win_unbind(agent, init.win);
		regcache_put(cache, init.entry);
		return -ENOMEM;
	}
	return 0;
}

RX_EXPORT
int rdmaxfer_mem_register(struct rdmaxfer_agent *agent, void *addr,
			  size_t len, enum rdmaxfer_mem_kind kind,
			  struct rdmaxfer_mem **memp)
{
	return rdmaxfer_mem_register_access(agent, addr, len, kind,
					    RDMAXFER_ACCESS_REMOTE, memp);
}

/* The cache entry (none on the dma-buf device path), then what a dma-buf
 * region holds beyond it: its MR is gone before its mapping is. */
static void mem_put_refs(struct rdmaxfer_mem *mem)
{
	/* the key first: when deregister returns, no peer gets through */
	rx_win_unbind(mem->agent, mem->win);
	mem->win = NULL;
	if (mem->entry)
		regcache_put(mem->cache, mem->entry);
	if (mem->ops)
		mem->ops->dereg(mem);
}

/* Agent teardown (one thread, nothing else running): unlist and free. */
void rx_mem_release(struct rdmaxfer_mem *mem)
{
	rx_list_del(&mem->node);
	mem_put_refs(mem);
	free(mem);
}

/*
 * One lock round on the hit path: what the handle holds is released
 * first, then the struct leaves the list for the spares (or is freed when
 * RX_MEM_SPARES are kept).  Only an ODP handle is looked at through the
 * list by another thread (odp.c's prefetch takes its lkey), so it leaves
 * the list before its entry is put; a host handle still listed while its
 * entry goes is seen by no one but agent teardown, which the caller does
 * not run concurrently with its own deregister.
 */
RX_EXPORT
int rdmaxfer_mem_deregister(struct rdmaxfer_mem *mem)
{
	struct rdmaxfer_agent *agent;
	bool unlisted = false;

	if (!mem)
		return -EINVAL;
	agent = mem->agent;
	if (mem->cache && mem->cache != agent->cache) {
		rx_spin_lock(&agent->mem_lock);
		rx_list_del(&mem->node);
		mem_count(mem, -1);
		rx_spin_unlock(&agent->mem_lock);
		unlisted = true;
	}
	mem_put_refs(mem);
	rx_spin_lock(&agent->mem_lock);
	if (!unlisted) {
		rx_list_del(&mem->node);
		mem_count(mem, -1);
	}
	if (agent->nspares < RX_MEM_SPARES) {
		rx_list_add_tail(&agent->mem_spares, &mem->node);
		agent->nspares++;
		mem = NULL;
	}
	rx_spin_unlock(&agent->mem_lock);
	free(mem);
	return 0;
}

static int sub_range(uint64_t base, uint64_t size, uint64_t offset,
		     uint64_t len, uint64_t *addr, uint64_t *lenp)
{
	if (offset >= size)
		return -ERANGE;
	if (!len)
		len = size - offset;
	if (len > size - offset)
		return -ERANGE;
	*addr = base + offset;
	*lenp = len;
	return 0;
}

RX_EXPORT
int rdmaxfer_mem_desc(const struct rdmaxfer_mem *mem, size_t offset,
		      size_t len, struct rdmaxfer_desc *desc)
{
	uint64_t a, l;
	int ret;

	if (!mem || !desc)
		return -EINVAL;
	if (mem->ops && mem->ops->describe)	/* device memory: maybe zero-based */
		return mem->ops->describe(mem, offset, len, desc);
	if (!mem->access)
		return -EACCES;		/* local only: nothing to export */
	/* its memory was unmapped or remapped: the key is gone (the sweep
	 * applies what the monitor saw).  An entry only invalidated (its
	 * pages still mapped: a zap, a COW or huge-page split) keeps its
	 * key until the last deregister, as before. */
	rx_mem_sweep(mem->agent, false);
	if (mem->entry && !regcache_entry_handle(mem->entry))
		return -ESTALE;
	ret = sub_range((uintptr_t)mem->addr, mem->len, offset, len, &a, &l);
	if (ret)
		return ret;
	desc->addr = a;
	desc->len = l;
	desc->rkey = mem->rkey;
	desc->kind = mem->kind;
	return 0;
}

RX_EXPORT
int rdmaxfer_desc_sub(const struct rdmaxfer_desc *desc, uint64_t offset,
		      uint64_t len, struct rdmaxfer_desc *out)
{
	uint64_t a, l;
	int ret;

	if (!desc || !out)
		return -EINVAL;
	ret = sub_range(desc->addr, desc->len, offset, len, &a, &l);
	if (ret)
		return ret;
	out->addr = a;
	out->len = l;
	out->rkey = desc->rkey;
	out->kind = desc->kind;
	return 0;
}
