// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * devmem.c - NIC device memory (MEMIC) as a memory kind: the device's
 * offer probed once per agent, the start-up check of each device path,
 * the verbs behind devmem_plan.c's operations, the host fallback, and the
 * copy helpers.
 *
 * Device memory is a few hundred KiB of SRAM on the NIC (max_dm_size;
 * 256 KiB on ConnectX-5 and later).  A remote atomic on it completes
 * without a PCIe round trip to host memory, which is what makes it worth
 * having for hot words (counters, locks, flags).  The CPU cannot load or
 * store it: ibv_memcpy_to_dm()/_from_dm() copy (rdmaxfer_devmem_write()
 * and _read()).
 *
 * The paths and their order are devmem_plan.c's.  What this file adds:
 * - the probe (first use, under the agent's lock): max_dm_size from
 *   ibv_query_device_ex(); on mlx5 (mlx5dv_is_supported()) a second
 *   context of the same device opened with MLX5DV_CONTEXT_FLAGS_DEVX,
 *   which DEVX commands need (librdmacm's context has no DEVX uid), and
 *   the agent PD's number (mlx5dv_init_obj()).  The KSM key is created
 *   in that context over the agent's PD and the agent's DM MR: both have
 *   uid 0, which firmware lets any uid reference.  NOT VALIDATED: no mlx5
 *   device was at hand; the start-up check exists so that a device that
 *   refuses any of this is never offered the path.
 * - the start-up check of each device path, best first, until one
 *   passes (as UCX enables MEMIC only after an atomic on a DM key
 *   worked): a 64-byte region of that path, a pair of loopback RC QPs
 *   (loopback.c's, as the ODP self-test uses), a fetch-and-add through the
 *   region's key at its descriptor address, and both the fetched value
 *   and the word read back must be right.
 * - the host fallback: page-rounded anonymous memory registered through
 *   the agent's cache as an exact, never-kept entry (remote read, write
 *   and atomic), unmapped at deregister after the entry is put; its
 *   descriptors say RDMAXFER_MEM_HOST, and rdmaxfer_mem_devmem_query()
 *   hands out its address so the owner reaches the words directly.
 *
 * Security property: a device region's rkey (the KSM key, the dma-buf MR
 * or the zero-based MR) reaches exactly its len bytes, with remote read,
 * write and atomic, and dies at rdmaxfer_mem_deregister(); the reserved
 * range is PROT_NONE and stays mapped until the key over it is gone, so
 * no other mapping of the process can take those addresses while a peer
 * may still aim at them.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/core.h"
#include "devmem.h"
#include "devmem_prm.h"

#ifdef HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif

#define DM_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)
#define CHECK_LEN	64
#define ZERO_CHUNK	4096

struct rx_devmem_agent {
	struct rx_dm_hw hw;
	struct rdmaxfer_devmem_caps caps;
	int policy;			/* $RDMAXFER_DM, or -EINVAL */
	const char *env;		/* its text, for the message */
	struct ibv_context *devx;	/* mlx5: a DEVX context, or NULL */
	uint32_t pdn;
	int devx_err;			/* why devx is NULL (0: untried) */
};

/* device memory's state on an agent: probed on first use (guarded by
 * lock), freed by devmem_fini() */
struct rx_devmem_state {
	struct rx_devmem_agent *da;
};

static const struct rx_ext rx_ext_devmem;
static const struct rx_mem_ops devmem_mem_ops;

/* the handle's device memory, NULL for a handle of another kind */
static struct rx_devmem *devmem_of(const struct rdmaxfer_mem *mem)
{
	return mem->ops == &devmem_mem_ops ? mem->priv : NULL;
}

static inline struct rx_devmem_state *dm_state(struct rdmaxfer_agent *agent)
{
	return rx_agent_ext(agent, &rx_ext_devmem);
}

struct rx_devmem {
	struct rx_dm_region r;		/* device paths */
	uint8_t *host;			/* PATH_HOST: the words */
	size_t host_len;
	struct rdmaxfer_devmem_info info;
};

static int errno_or(int dflt)
{
	return errno ? -errno : dflt;
}

/* ------------------------------------------------ operations (verbs) */

static int op_alloc_dm(void *ctx, size_t len, void **dm)
{
	struct rdmaxfer_agent *agent = ctx;
	struct ibv_alloc_dm_attr a = { .length = len, .log_align_req = 3 };

	errno = 0;
	*dm = ibv_alloc_dm(agent->ctx, &a);
	return *dm ? 0 : errno_or(-ENOMEM);
}

static int op_free_dm(void *ctx, void *dm)
{
	(void)ctx;
	return -ibv_free_dm(dm);
}

static int op_reg_dm_mr(void *ctx, void *dm, size_t len, void **mrp,
			uint32_t *lkey, uint32_t *rkey)
{
	struct rdmaxfer_agent *agent = ctx;
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_dm_mr(agent->pd, dm, 0, len,
			   DM_ACCESS | IBV_ACCESS_ZERO_BASED);
	if (!mr)
		return errno_or(-ENOMEM);
	*mrp = mr;
	*lkey = mr->lkey;
	*rkey = mr->rkey;
	return 0;
}

static int op_dereg_mr(void *ctx, void *mr)
{
	(void)ctx;
	return -ibv_dereg_mr(mr);
}

static int op_reserve(void *ctx, size_t len, void **va)
{
	void *p = mmap(NULL, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	(void)ctx;
	if (p == MAP_FAILED)
		return -errno;
	*va = p;
	return 0;
}

static int op_unreserve(void *ctx, void *va, size_t len)
{
	(void)ctx;
	return munmap(va, len) ? -errno : 0;
}

static int op_create_ksm(void *ctx, const void *in, size_t inlen, void **obj,
			 uint32_t *key)
{
#ifdef HAVE_MLX5DV
	struct rdmaxfer_agent *agent = ctx;
	uint8_t out[RX_PRM_CREATE_MKEY_OUT_LEN] = { 0 };
	struct mlx5dv_devx_obj *o;
	uint32_t syndrome = 0;
	int ret;

	if (!dm_state(agent)->da->devx)
		return -EOPNOTSUPP;
	errno = 0;
	o = mlx5dv_devx_obj_create(dm_state(agent)->da->devx, in, inlen, out,
				   sizeof(out));
	if (!o) {
		ret = errno_or(-EIO);
		rx_prm_ksm_mkey_out(out, sizeof(out), RX_DM_KSM_TAG, key,
				    &syndrome);
		fprintf(stderr,
			"librdmaxfer: %s: CREATE_MKEY (KSM) failed: %s, syndrome 0x%x\n",
			agent->info.device, strerror(-ret), syndrome);
		return ret;
	}
	ret = rx_prm_ksm_mkey_out(out, sizeof(out), RX_DM_KSM_TAG, key,
				  &syndrome);
	if (ret) {
		mlx5dv_devx_obj_destroy(o);
		return ret;
	}
	*obj = o;
	return 0;
#else
	(void)ctx, (void)in, (void)inlen, (void)obj, (void)key;
	return -EOPNOTSUPP;
#endif
}

static int op_destroy_ksm(void *ctx, void *obj)
{
	(void)ctx;
#ifdef HAVE_MLX5DV
	return -mlx5dv_devx_obj_destroy(obj);
#else
	(void)obj;
	return -EOPNOTSUPP;
#endif
}

static int op_reg_dmabuf(void *ctx, void *dm, size_t len, uint64_t iova,
			 void **mrp, uint32_t *rkey)
{
#if HAVE_DECL_IBV_DM_EXPORT_DMABUF_FD
	struct rdmaxfer_agent *agent = ctx;
	struct ibv_mr *mr;
	int fd;

	fd = ibv_dm_export_dmabuf_fd(dm);
	if (fd < 0)
		return errno_or(-EOPNOTSUPP);
	errno = 0;
	/* the MR holds the dma-buf: our fd can go at once */
	mr = ibv_reg_dmabuf_mr(agent->pd, 0, len, iova, fd, DM_ACCESS);
	close(fd);
	if (!mr)
		return errno_or(-EOPNOTSUPP);
	*mrp = mr;
	*rkey = mr->rkey;
	return 0;
#else
	(void)ctx, (void)dm, (void)len, (void)iova, (void)mrp, (void)rkey;
	return -EOPNOTSUPP;
#endif
}

static void agent_ops(struct rdmaxfer_agent *agent, struct rx_dm_ops *ops)
{
	ops->ctx = agent;
	ops->alloc_dm = op_alloc_dm;
	ops->free_dm = op_free_dm;
	ops->reg_dm_mr = op_reg_dm_mr;
	ops->dereg_mr = op_dereg_mr;
	ops->reserve = op_reserve;
	ops->unreserve = op_unreserve;
	ops->create_ksm = op_create_ksm;
	ops->destroy_ksm = op_destroy_ksm;
	ops->reg_dmabuf = op_reg_dmabuf;
}

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* ------------------------------------------------------------- probe */

#ifdef HAVE_MLX5DV
static void open_devx(struct rdmaxfer_agent *agent, struct rx_devmem_agent *da)
{
	struct mlx5dv_context_attr a = { .flags = MLX5DV_CONTEXT_FLAGS_DEVX };
	struct mlx5dv_pd dvpd = { 0 };
	struct mlx5dv_obj obj;
	int ret;

	errno = 0;
	da->devx = mlx5dv_open_device(agent->ctx->device, &a);
	if (!da->devx) {
		da->devx_err = errno_or(-EOPNOTSUPP);
		return;
	}
	memset(&obj, 0, sizeof(obj));
	obj.pd.in = agent->pd;
	obj.pd.out = &dvpd;
	ret = mlx5dv_init_obj(&obj, MLX5DV_OBJ_PD);
	if (ret) {
		da->devx_err = ret > 0 ? -ret : -EOPNOTSUPP;
		ibv_close_device(da->devx);
		da->devx = NULL;
		return;
	}
	da->pdn = dvpd.pdn;
	da->hw.devx = true;
}
#endif

/* A fetch-and-add through a fresh region of path, between two loopback
 * QPs of the agent's PD: 1 when the old value came back and the word was
 * updated, else -errno. */
static int dm_check(struct rdmaxfer_agent *agent, uint32_t path)
{
	struct rx_devmem_agent *da = dm_state(agent)->da;
	uint64_t init[2] = { 0, 5 }, got = 0, *res = NULL;
	struct ibv_qp_init_attr qa;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct rx_dm_region r;
	struct rx_dm_ops ops;
	struct ibv_mr *res_mr = NULL;
	struct ibv_qp *qp[2] = { NULL, NULL };
	struct ibv_cq *cq = NULL;
	size_t psz = page_size();
	int ret;

	agent_ops(agent, &ops);
	ret = rx_dm_build(&ops, path, CHECK_LEN, da->pdn, psz, &r);
	if (ret)
		return ret;
	ret = -ibv_memcpy_to_dm(r.dm, 0, init, sizeof(init));
	if (ret)
		goto out;
	res = mmap(NULL, psz, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		res = NULL;
		ret = -errno;
		goto out;
	}
	errno = 0;
	res_mr = ibv_reg_mr(agent->pd, res, psz, IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(agent->ctx, 2, NULL, NULL, 0);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (cq) {
		qp[0] = ibv_create_qp(agent->pd, &qa);
		qp[1] = ibv_create_qp(agent->pd, &qa);
	}
	if (!res_mr || !cq || !qp[0] || !qp[1]) {
		ret = errno_or(-ENOMEM);
		goto out;
	}
	/* a pair, as the ODP self-test uses (proven on rxe) */
	ret = rx_loopback_connect(agent, qp[0], qp[1]->qp_num);
	if (!ret)
		ret = rx_loopback_connect(agent, qp[1], qp[0]->qp_num);
	if (ret)
		goto out;
	sge.addr = (uintptr_t)res;
	sge.length = 8;
	sge.lkey = res_mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = r.addr + 8;
	wr.wr.atomic.rkey = r.rkey;
	wr.wr.atomic.compare_add = 7;
	ret = rx_loopback_post(qp[0], cq, &wr);
	if (!ret)
		ret = -ibv_memcpy_from_dm(&got, r.dm, 8, sizeof(got));
	if (!ret && (*res != 5 || got != 12))
		ret = -EIO;		/* completed, but not an atomic */
out:
	if (qp[1])
		ibv_destroy_qp(qp[1]);
	if (qp[0])
		ibv_destroy_qp(qp[0]);
	if (cq)
		ibv_destroy_cq(cq);
	if (res_mr)
		ibv_dereg_mr(res_mr);
	if (res)
		munmap(res, psz);
	rx_dm_teardown(&ops, &r);
	return ret ? ret : 1;
}

static void caps_msg(struct rdmaxfer_agent *agent)
{
	struct rx_devmem_agent *da = dm_state(agent)->da;
	struct rdmaxfer_devmem_caps *c = &da->caps;
	char why[RDMAXFER_DM_MSG_MAX];
	uint32_t best = rx_dm_best_path(&da->hw, why, sizeof(why));
	const char *dev = agent->info.device;
	int pol = da->policy < 0 ? RDMAXFER_DM_AUTO : da->policy;

	c->policy = (uint32_t)pol;
	c->max_dm_size = da->hw.max_dm_size;
	c->mlx5 = da->hw.mlx5;
	c->devx = da->hw.devx;
	c->dmabuf_export = da->hw.dmabuf_export;
	c->path = pol == RDMAXFER_DM_OFF ? RDMAXFER_DM_PATH_HOST : best;
	c->check = best == RDMAXFER_DM_PATH_HOST ? 0 : da->hw.check[best];
	if (c->path != RDMAXFER_DM_PATH_HOST)
		snprintf(c->msg, sizeof(c->msg),
			 "%.32s: device memory (max_dm_size %llu B) through %s; start-up atomic check passed%s%.120s",
			 dev, (unsigned long long)c->max_dm_size,
			 rdmaxfer_dm_path_name(c->path), why[0] ? "; " : "",
			 why);
	else
		snprintf(c->msg, sizeof(c->msg),
			 "%.32s: host memory (%.160s)%s", dev,
			 pol == RDMAXFER_DM_OFF ? "policy off" : why,
			 pol == RDMAXFER_DM_ON ?
			 "; policy on: allocations fail" : "");
}

/* The agent's device-memory state, probed on the first call. */
static int probe(struct rdmaxfer_agent *agent, struct rx_devmem_agent **dap)
{
	struct ibv_device_attr_ex ax;
	struct rx_devmem_agent *da;
	uint32_t p;

	pthread_mutex_lock(&agent->lock);
	if (dm_state(agent)->da)
		goto done;
	da = calloc(1, sizeof(*da));
	if (!da) {
		pthread_mutex_unlock(&agent->lock);
		return -ENOMEM;
	}
	if (!(agent->attr.flags & RDMAXFER_AGENT_NO_ENV))
		da->env = getenv("RDMAXFER_DM");
	da->policy = rx_dm_policy_parse(da->env);
	memset(&ax, 0, sizeof(ax));
	if (!ibv_query_device_ex(agent->ctx, NULL, &ax))
		da->hw.max_dm_size = ax.max_dm_size;
#if HAVE_DECL_IBV_DM_EXPORT_DMABUF_FD
	da->hw.dmabuf_export = true;
#endif
	dm_state(agent)->da = da;
#ifdef HAVE_MLX5DV
	da->hw.mlx5 = mlx5dv_is_supported(agent->ctx->device);
	if (da->hw.max_dm_size && da->hw.mlx5)
		open_devx(agent, da);
#endif
	/* check the best path; if it fails, the next best, and so on */
	while (da->hw.max_dm_size) {
		char why[RDMAXFER_DM_MSG_MAX];

		p = rx_dm_best_path(&da->hw, why, sizeof(why));
		if (p == RDMAXFER_DM_PATH_HOST || da->hw.check[p])
			break;
		da->hw.check[p] = dm_check(agent, p);
	}
	caps_msg(agent);
done:
	*dap = dm_state(agent)->da;
	pthread_mutex_unlock(&agent->lock);
	return 0;
}

/* the agent's DEVX context and probe, at agent destroy */
static void devmem_fini(struct rdmaxfer_agent *agent, void *state)
{
	struct rx_devmem_state *st = state;
	struct rx_devmem_agent *da = st->da;

	if (!da)
		return;
	if (da->devx)
		ibv_close_device(da->devx);
	free(da);
	st->da = NULL;
}

static const struct rx_ext rx_ext_devmem = {
	.name = "devmem",
	.state_size = sizeof(struct rx_devmem_state),
	.mem = &devmem_mem_ops,
	.fini = devmem_fini,
};
RX_EXT_REGISTER(rx_ext_devmem);

RX_EXPORT
int rdmaxfer_agent_devmem_caps(struct rdmaxfer_agent *agent,
			       struct rdmaxfer_devmem_caps *caps)
{
	struct rx_devmem_agent *da;
	int ret;

	if (!agent || !caps)
		return -EINVAL;
	ret = probe(agent, &da);
	if (ret)
		return ret;
	*caps = da->caps;
	return 0;
}

/* ------------------------------------------------------- allocation */

/* PATH_HOST: page-rounded anonymous memory through the cache. */
static int alloc_host(struct rdmaxfer_agent *agent, size_t len,
		      struct rx_devmem *d, struct rdmaxfer_mem **memp)
{
	size_t psz = page_size();
	size_t mlen = (len + psz - 1) / psz * psz;
	uint8_t *p;
	int ret;

	p = mmap(NULL, mlen, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	/* exact and never kept: the mapping goes at deregister */
	ret = rx_mem_register(agent, agent->cache, p, len, RDMAXFER_MEM_HOST,
			      RDMAXFER_ACCESS_REMOTE,
			      REGCACHE_GET_EXACT | REGCACHE_GET_NOKEEP, memp);
	if (ret) {
		munmap(p, mlen);
		return ret;
	}
	d->host = p;
	d->host_len = mlen;
	d->info.addr = (uintptr_t)p;
	d->info.cpu = p;
	return 0;
}

/* A device region along path, zeroed, as a handle. */
static int alloc_dev(struct rdmaxfer_agent *agent, uint32_t path, size_t len,
		     struct rx_devmem *d, struct rdmaxfer_mem **memp)
{
	static const uint8_t zero[ZERO_CHUNK];
	struct rdmaxfer_mem *mem;
	struct rx_dm_ops ops;
	size_t off;
	int ret;

	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return -ENOMEM;
	agent_ops(agent, &ops);
	ret = rx_dm_build(&ops, path, len, dm_state(agent)->da->pdn, page_size(),
			  &d->r);
	for (off = 0; !ret && off < len; off += ZERO_CHUNK)
		ret = -ibv_memcpy_to_dm(d->r.dm, off, zero,
					len - off < ZERO_CHUNK ? len - off :
					ZERO_CHUNK);
	if (ret) {
		if (d->r.dm)
			rx_dm_teardown(&ops, &d->r);
		free(mem);
		return ret;
	}
	mem->agent = agent;
	mem->addr = (uint8_t *)(uintptr_t)d->r.addr;
	mem->len = len;
	mem->kind = RDMAXFER_MEM_DEVICE;
	mem->rkey = d->r.rkey;
	mem->access = RDMAXFER_ACCESS_REMOTE;
	d->info.addr = d->r.addr;
	*memp = mem;
	return 0;
}

RX_EXPORT
int rdmaxfer_mem_alloc_device(struct rdmaxfer_agent *agent, size_t len,
			      uint32_t flags, struct rdmaxfer_mem **memp)
{
	char why[RDMAXFER_DM_MSG_MAX];
	struct rx_devmem_agent *da;
	struct rdmaxfer_mem *mem = NULL;
	struct rx_devmem *d;
	uint32_t path;
	int policy, ret;

	if (!agent || !memp)
		return -EINVAL;
	ret = probe(agent, &da);
	if (ret)
		return ret;
	if (da->policy < 0) {
		fprintf(stderr,
			"librdmaxfer: RDMAXFER_DM=%s: not auto, on or off\n",
			da->env);
		return -EINVAL;
	}
	policy = rx_dm_call_policy(da->policy, flags);
	if (policy < 0)
		return policy;
	ret = rx_dm_pick(&da->hw, policy, len, &path, why, sizeof(why));
	if (ret) {
		fprintf(stderr,
			"librdmaxfer: device memory of %zu B on %s%s: %s\n",
			len, agent->info.device,
			policy == RDMAXFER_DM_ON ? " (policy on)" : "", why);
		return ret;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->info.len = len;
	if (path != RDMAXFER_DM_PATH_HOST) {
		ret = alloc_dev(agent, path, len, d, &mem);
		if (ret && policy == RDMAXFER_DM_ON) {
			fprintf(stderr,
				"librdmaxfer: device memory of %zu B on %s (policy on): %s: %s\n",
				len, agent->info.device,
				rdmaxfer_dm_path_name(path), strerror(-ret));
			free(d);
			return ret;
		}
		if (ret) {
			snprintf(why, sizeof(why), "%s path failed: %s",
				 rdmaxfer_dm_path_name(path), strerror(-ret));
			path = RDMAXFER_DM_PATH_HOST;
		}
	}
	if (path == RDMAXFER_DM_PATH_HOST) {
		ret = alloc_host(agent, len, d, &mem);
		if (ret) {
			free(d);
			return ret;
		}
	}
	d->info.path = path;
	if (path == RDMAXFER_DM_PATH_HOST)
		snprintf(d->info.msg, sizeof(d->info.msg),
			 "%.32s: host memory registered through the cache (%.160s)",
			 agent->info.device, why);
	else
		snprintf(d->info.msg, sizeof(d->info.msg),
			 "%s: device memory through %s%s",
			 agent->info.device, rdmaxfer_dm_path_name(path),
			 path == RDMAXFER_DM_PATH_ZERO_BASED ?
			 " (descriptors are zero-based)" : "");
	mem->ops = &devmem_mem_ops;
	mem->priv = d;
	rx_mem_add(mem);
	*memp = mem;
	return 0;
}

/* A device-memory region's own state, after its cache entry. */
static void devmem_dereg(struct rdmaxfer_mem *mem)
{
	struct rx_devmem *d = mem->priv;
	struct rx_dm_ops ops;

	if (d->host) {
		munmap(d->host, d->host_len);
	} else {
		agent_ops(mem->agent, &ops);
		rx_dm_teardown(&ops, &d->r);
	}
	free(d);
	mem->priv = NULL;
}

/* rdmaxfer_mem_desc(): zero-based descriptors, or the host form */
static int devmem_describe(const struct rdmaxfer_mem *mem, size_t offset,
			   size_t len, struct rdmaxfer_desc *desc)
{
	const struct rx_devmem *d = mem->priv;
	struct rx_dm_region host;
	int ret;

	if (!d->host)
		return rx_dm_desc(&d->r, offset, len, desc);
	memset(&host, 0, sizeof(host));
	host.len = mem->len;
	host.addr = (uintptr_t)mem->addr;
	host.rkey = mem->rkey;
	ret = rx_dm_desc(&host, offset, len, desc);
	if (!ret)
		desc->kind = RDMAXFER_MEM_HOST;
	return ret;
}

/* rdmaxfer_mem_register() refuses RDMAXFER_MEM_DEVICE: it is allocated
 * (rdmaxfer_mem_alloc_device()) */
static int devmem_mem_reg(struct rdmaxfer_agent *agent, void *state,
			  uint32_t access, struct rx_mem_reg *r)
{
	return -EOPNOTSUPP;
}

static const struct rx_mem_ops devmem_mem_ops = {
	.kind = RDMAXFER_MEM_DEVICE,
	.reg = devmem_mem_reg,
	.dereg = devmem_dereg,
	.describe = devmem_describe,
};

RX_EXPORT
int rdmaxfer_mem_devmem_query(const struct rdmaxfer_mem *mem,
			      struct rdmaxfer_devmem_info *info)
{
	if (!mem || !info || !devmem_of(mem))
		return -EINVAL;
	*info = devmem_of(mem)->info;
	return 0;
}

/* ------------------------------------------------------ copy helpers */

/* Device memory moves in 4-byte words (mlx5: a hardware rule). */
static int copy_check(const struct rdmaxfer_mem *mem, size_t offset,
		      const void *buf, size_t len)
{
	if (!mem || !devmem_of(mem) || !buf || !len ||
	    ((offset | len | (uintptr_t)buf) & 3))
		return -EINVAL;
	if (offset > mem->len || len > mem->len - offset)
		return -ERANGE;
	return 0;
}

RX_EXPORT
int rdmaxfer_devmem_write(struct rdmaxfer_mem *mem, size_t offset,
			  const void *buf, size_t len)
{
	int ret = copy_check(mem, offset, buf, len);

	if (ret)
		return ret;
	if (devmem_of(mem)->host) {
		memcpy(devmem_of(mem)->host + offset, buf, len);
		return 0;
	}
	return -ibv_memcpy_to_dm(devmem_of(mem)->r.dm, offset, buf, len);
}

RX_EXPORT
int rdmaxfer_devmem_read(const struct rdmaxfer_mem *mem, size_t offset,
			 void *buf, size_t len)
{
	int ret = copy_check(mem, offset, buf, len);

	if (ret)
		return ret;
	if (devmem_of(mem)->host) {
		memcpy(buf, devmem_of(mem)->host + offset, len);
		return 0;
	}
	return -ibv_memcpy_from_dm(buf, devmem_of(mem)->r.dm, offset, len);
}
