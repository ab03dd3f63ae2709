// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * dmabuf.c - the dma-buf memory kind: a device MR over a dma-buf where
 * the device takes one, else the dma-buf's CPU mapping registered like
 * host memory, and the probe that tells the two apart.
 *
 * Paths, in the order tried (policy: attr->policy, else $RDMAXFER_DMABUF,
 * else auto; "on" stops after the first, "off" skips it):
 * 1. device: ibv_reg_dmabuf_mr(offset, len, iova, fd).  The exporter
 *    owns the pages and moves them when it likes (the kernel's dma-buf
 *    move_notify re-maps the MR), so nothing is pinned by us and the MR
 *    does not go through the registration cache: one MR per handle, at
 *    the address iova (descriptors name it).  Whether the device takes
 *    dma-buf MRs at all is probed once per agent with fd -1: a device
 *    without the verb answers EOPNOTSUPP before looking at the fd, one
 *    with it EBADF.  rxe on 6.1 and 7.3 answers EOPNOTSUPP.
 * 2. map: mmap the dma-buf (MAP_SHARED) and register the mapping through
 *    the pinned cache.  Works where the exporter's mapping has struct
 *    pages GUP can pin; a VM_PFNMAP mapping (7.3's udmabuf, DRM shmem
 *    helpers such as vgem) makes the pin fail with EFAULT.
 * 3. backing: when the caller names the file whose pages back the
 *    dma-buf (a udmabuf's memfd, RDMAXFER_DMABUF_BACKING), mmap that
 *    file instead and register its mapping: the same pages, reachable by
 *    GUP.  The caller vouches that the file really backs the dma-buf;
 *    only sizes are checked.
 * 4. staged (RDMAXFER_DMABUF_STAGE, when 2 and 3 fail or 3 is not
 *    offered): a pinned anonymous copy of the region is registered, and
 *    rdmaxfer_dmabuf_sync() is the coherence point: a begin with READ
 *    copies the copy into the dma-buf (what peers wrote becomes visible
 *    to the CPU), an end with WRITE copies the dma-buf into the copy
 *    (what the CPU wrote becomes visible to peers).  Not zero-copy; the
 *    one way to reach an exporter like vgem, whose mapping is VM_PFNMAP
 *    and whose pages have no file userspace can map.
 * The handle keeps a dup of the dma-buf fd (for DMA_BUF_IOCTL_SYNC, and
 * so the caller may close its own fd at once) and the mapping; both go at
 * rdmaxfer_mem_deregister(), after the MR.
 *
 * Security property (as mem.c's): an rkey of a dma-buf region reaches
 * exactly [offset, offset + len) of that dma-buf with exactly the rights
 * granted.  On the device path the MR is the handle's own.  On the
 * mapping paths (and the staged one) the registration is an exact cache
 * entry of the mapping (the copy) that is never kept after the last put,
 * even with RDMAXFER_AGENT_CACHE_RKEYS: the mapping is unmapped at
 * deregister, so a kept rkey would outlive the memory it names.  So the
 * rkey dies at rdmaxfer_mem_deregister() on every path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include "core/core.h"

#ifndef DMA_BUF_MAGIC
#define DMA_BUF_MAGIC		0x444d4142	/* "DMAB" */
#endif

#define DMABUF_SYNC_FLAGS	(RDMAXFER_DMABUF_SYNC_READ | \
				 RDMAXFER_DMABUF_SYNC_WRITE | \
				 RDMAXFER_DMABUF_SYNC_END)

_Static_assert(RDMAXFER_DMABUF_SYNC_READ == DMA_BUF_SYNC_READ &&
	       RDMAXFER_DMABUF_SYNC_WRITE == DMA_BUF_SYNC_WRITE &&
	       RDMAXFER_DMABUF_SYNC_END == DMA_BUF_SYNC_END,
	       "rdmaxfer_dmabuf_sync() passes its flags through");

struct rx_dmabuf {
	int fd;				/* our dup of the dma-buf */
	struct ibv_mr *mr;		/* device path */
	void *map;			/* mapping paths: what we mmap'ed */
	size_t map_len;
	uint8_t *view;			/* staged: the region in map */
	uint8_t *stage;			/* staged: the registered copy */
	size_t stage_len;
	struct rdmaxfer_dmabuf_info info;
};

/* $RDMAXFER_DMABUF; DEFAULT (auto) when unset, -EINVAL when unknown. */
static int env_policy(const struct rdmaxfer_agent *agent)
{
	const char *s = NULL;

	if (!(agent->attr.flags & RDMAXFER_AGENT_NO_ENV))
		s = getenv("RDMAXFER_DMABUF");
	if (!s || !*s || !strcmp(s, "auto"))
		return RDMAXFER_DMABUF_AUTO;
	if (!strcmp(s, "on"))
		return RDMAXFER_DMABUF_ON;
	if (!strcmp(s, "off"))
		return RDMAXFER_DMABUF_OFF;
	return -EINVAL;
}

static bool refusal(int err)
{
	return err == -EOPNOTSUPP || err == -ENOSYS ||
	       err == -EPROTONOSUPPORT;
}

/* dma-buf's state on an agent */
struct rx_dmabuf_agent {
	/* does the device take dma-buf MRs?  0 not probed yet, 1 yes, else
	 * the probe's -errno (guarded by lock) */
	int dev;
};

static const struct rx_mem_ops dmabuf_mem_ops;

static const struct rx_ext rx_ext_dmabuf = {
	.name = "dmabuf",
	.state_size = sizeof(struct rx_dmabuf_agent),
	.mem = &dmabuf_mem_ops,
};
RX_EXT_REGISTER(rx_ext_dmabuf);

/* Whether the device takes dma-buf MRs: 1, or the -errno it refused with.
 * fd -1 never registers anything.  (An agent without the state, the host
 * test's, probes every time.) */
static int probe_device(struct rdmaxfer_agent *agent)
{
	struct rx_dmabuf_agent *d = rx_agent_ext(agent, &rx_ext_dmabuf);
	struct ibv_mr *mr;
	int ret;

	pthread_mutex_lock(&agent->lock);
	ret = d ? d->dev : 0;
	pthread_mutex_unlock(&agent->lock);
	if (ret)
		return ret;
	errno = 0;
	mr = ibv_reg_dmabuf_mr(agent->pd, 0, 4096, 0, -1,
			       IBV_ACCESS_LOCAL_WRITE);
	if (mr) {
		ibv_dereg_mr(mr);	/* cannot happen: fd -1 */
		ret = 1;
	} else {
		ret = errno ? -errno : -EOPNOTSUPP;
		/* past the capability check, stopped at the fd (EBADF, or
		 * EINVAL from the fd lookup: as rdmaxfer-info reads it) */
		if (ret == -EBADF || ret == -EINVAL)
			ret = 1;
	}
	pthread_mutex_lock(&agent->lock);
	if (d)
		d->dev = ret;
	pthread_mutex_unlock(&agent->lock);
	return ret;
}

RX_EXPORT
int rdmaxfer_agent_dmabuf_caps(struct rdmaxfer_agent *agent,
			       struct rdmaxfer_dmabuf_caps *caps)
{
	int dev, pol;

	if (!agent || !caps)
		return -EINVAL;
	memset(caps, 0, sizeof(*caps));
	dev = probe_device(agent);
	pol = env_policy(agent);
	caps->policy = pol < 0 ? 0 : (uint32_t)pol;
	caps->device = dev == 1;
	caps->device_err = dev == 1 ? 0 : dev;
	if (dev == 1)
		snprintf(caps->msg, sizeof(caps->msg),
			 "%s takes dma-buf MRs (ibv_reg_dmabuf_mr)",
			 agent->info.device);
	else
		snprintf(caps->msg, sizeof(caps->msg),
			 "%s refuses dma-buf MRs (ibv_reg_dmabuf_mr: %s): "
			 "auto and off register the CPU mapping",
			 agent->info.device, strerror(-dev));
	return 0;
}

/* The checks that need no device: -EINVAL, -EBADF, -ERANGE; the policy
 * in effect in *policyp. */
static int check_attr(const struct rdmaxfer_agent *agent,
		      const struct rdmaxfer_dmabuf_attr *a, int *policyp)
{
	struct statfs sfs;
	struct stat st;
	off_t size;
	int pol = (int)a->policy;

	if ((a->access & ~RDMAXFER_ACCESS_REMOTE) || !a->len ||
	    (a->flags & ~(RDMAXFER_DMABUF_BACKING | RDMAXFER_DMABUF_STAGE)) ||
	    a->policy > RDMAXFER_DMABUF_OFF || a->reserved32 ||
	    a->reserved[0] || a->reserved[1] ||
	    (!(a->flags & RDMAXFER_DMABUF_BACKING) && a->backing_offset))
		return -EINVAL;
	if (pol == RDMAXFER_DMABUF_DEFAULT) {
		pol = env_policy(agent);
		if (pol < 0)
			return pol;
	}
	*policyp = pol;
	if (a->fd < 0 || fstat(a->fd, &st))
		return -EBADF;
	/* dma-bufs live on their own pseudo filesystem */
	if (fstatfs(a->fd, &sfs) || sfs.f_type != DMA_BUF_MAGIC)
		return -EINVAL;
	size = lseek(a->fd, 0, SEEK_END);
	if (size < 0)
		return -errno;
	if (a->offset > (uint64_t)size || a->len > (uint64_t)size - a->offset)
		return -ERANGE;
	if (!(a->flags & RDMAXFER_DMABUF_BACKING))
		return 0;
	if (a->backing_fd < 0 || fstat(a->backing_fd, &st))
		return -EBADF;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (a->backing_offset > UINT64_MAX - a->offset - a->len ||
	    a->backing_offset + a->offset + a->len > (uint64_t)st.st_size)
		return -ERANGE;
	return 0;
}

/* Path 1: the handle's own dma-buf MR. */
static int reg_device(struct rdmaxfer_agent *agent,
		      const struct rdmaxfer_dmabuf_attr *a,
		      struct rx_dmabuf *d, struct rdmaxfer_mem *mem)
{
	uint64_t iova = a->iova ? a->iova : a->offset;

	errno = 0;
	d->mr = ibv_reg_dmabuf_mr(agent->pd, a->offset, a->len, iova, a->fd,
				  (int)rx_ibv_access(a->access));
	if (!d->mr)
		return errno ? -errno : -EOPNOTSUPP;
	mem->addr = (uint8_t *)(uintptr_t)iova;
	mem->rkey = a->access ? d->mr->rkey : 0;
	d->info.path = RDMAXFER_DMABUF_PATH_DEVICE;
	d->info.addr = iova;
	return 0;
}

/*
 * Map the pages holding [off, off + len) of fd, shared, read-write; the
 * byte at off is at the result + *inp, and *mlenp bytes are mapped.  A
 * dma-buf is always mapped from its start, because some exporters ignore
 * the mapping's offset (the DRM GEM shmem helpers of Linux 6.1, vgem's,
 * fault page (address - vm_start) in, so a mapping at offset 4096 shows
 * page 0); any other file from off's page.  NULL and errno on failure.
 */
static uint8_t *map_window(int fd, uint64_t off, uint64_t len, bool dmabuf,
			   size_t *inp, size_t *mlenp)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t moff = dmabuf ? 0 : off & ~(uint64_t)(psz - 1);
	size_t in = (size_t)(off - moff);
	size_t mlen = (in + len + psz - 1) & ~(psz - 1);
	void *p;

	p = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)moff);
	if (p == MAP_FAILED)
		return NULL;
	*inp = in;
	*mlenp = mlen;
	return p;
}

/*
 * Paths 2 and 3: map [off, off + len) of fd and register the mapping as
 * an exact, never-kept cache entry (see the security note above).
 */
static int reg_mapping(struct rdmaxfer_agent *agent, int fd, uint64_t off,
		       const struct rdmaxfer_dmabuf_attr *a,
		       struct rx_dmabuf *d, struct rdmaxfer_mem **memp)
{
	unsigned int flags = REGCACHE_GET_EXACT | REGCACHE_GET_NOKEEP;
	size_t in, mlen;
	uint8_t *p;
	int ret;

	p = map_window(fd, off, a->len, fd == d->fd, &in, &mlen);
	if (!p)
		return -errno;
	ret = rx_mem_register(agent, agent->cache, p + in, a->len,
			      RDMAXFER_MEM_DMABUF, a->access, flags, memp);
	if (ret) {
		munmap(p, mlen);
		return ret;
	}
	d->map = p;
	d->map_len = mlen;
	d->info.addr = (uintptr_t)(p + in);
	d->info.cpu = p + in;
	return 0;
}

static int dmabuf_ioctl_sync(int fd, uint64_t flags)
{
	struct dma_buf_sync s = { .flags = flags };
	int ret;

	do {
		ret = ioctl(fd, DMA_BUF_IOCTL_SYNC, &s);
	} while (ret && (errno == EINTR || errno == EAGAIN));
	return ret ? -errno : 0;
}

/* Staged path: copy between the dma-buf and the copy, inside a sync. */
static int stage_copy(struct rx_dmabuf *d, bool to_dmabuf)
{
	uint64_t dir = to_dmabuf ? DMA_BUF_SYNC_WRITE : DMA_BUF_SYNC_READ;
	int ret;

	ret = dmabuf_ioctl_sync(d->fd, DMA_BUF_SYNC_START | dir);
	if (ret)
		return ret;
	if (to_dmabuf)
		memcpy(d->view, d->stage, d->info.len);
	else
		memcpy(d->stage, d->view, d->info.len);
	return dmabuf_ioctl_sync(d->fd, DMA_BUF_SYNC_END | dir);
}

/* Path 4: map the dma-buf for the CPU only; register a copy. */
static int reg_staged(struct rdmaxfer_agent *agent,
		      const struct rdmaxfer_dmabuf_attr *a,
		      struct rx_dmabuf *d, struct rdmaxfer_mem **memp)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	unsigned int flags = REGCACHE_GET_EXACT | REGCACHE_GET_NOKEEP;
	size_t slen = (a->len + psz - 1) & ~(psz - 1);
	size_t in, mlen;
	uint8_t *p, *s;
	int ret;

	p = map_window(d->fd, a->offset, a->len, true, &in, &mlen);
	if (!p)
		return -errno;
	s = mmap(NULL, slen, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED) {
		ret = -errno;
		goto unmap_p;
	}
	d->view = p + in;
	d->stage = s;
	ret = stage_copy(d, false);
	if (ret)
		goto unmap_s;
	ret = rx_mem_register(agent, agent->cache, s, a->len,
			      RDMAXFER_MEM_DMABUF, a->access, flags, memp);
	if (ret)
		goto unmap_s;
	d->map = p;
	d->map_len = mlen;
	d->stage_len = slen;
	d->info.addr = (uintptr_t)s;
	d->info.cpu = s;
	return 0;

unmap_s:
	munmap(s, slen);
	d->view = d->stage = NULL;
unmap_p:
	munmap(p, mlen);
	return ret;
}

RX_EXPORT
int rdmaxfer_mem_register_dmabuf(struct rdmaxfer_agent *agent,
				 const struct rdmaxfer_dmabuf_attr *attr,
				 struct rdmaxfer_mem **memp)
{
	struct rdmaxfer_mem *mem = NULL;
	struct rx_dmabuf *d;
	const char *dev;
	int policy, ret;

	if (!agent || !attr || !memp)
		return -EINVAL;
	ret = check_attr(agent, attr, &policy);
	if (ret)
		return ret;
	dev = agent->info.device;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->info.len = attr->len;
	d->fd = fcntl(attr->fd, F_DUPFD_CLOEXEC, 3);
	if (d->fd < 0) {
		ret = -errno;
		goto free_d;
	}

	if (policy != RDMAXFER_DMABUF_OFF) {
		ret = probe_device(agent);
		if (ret == 1) {
			mem = calloc(1, sizeof(*mem));
			if (!mem) {
				ret = -ENOMEM;
				goto close_fd;
			}
			ret = reg_device(agent, attr, d, mem);
			if (!ret)
				goto done;
			free(mem);
			mem = NULL;
		}
		d->info.device_err = ret;
		if (policy == RDMAXFER_DMABUF_ON || !refusal(ret)) {
			if (refusal(ret))
				ret = -EOPNOTSUPP;
			goto close_fd;
		}
	}

	ret = reg_mapping(agent, d->fd, attr->offset, attr, d, &mem);
	if (!ret) {
		d->info.path = RDMAXFER_DMABUF_PATH_MAP;
		goto fallback;
	}
	d->info.map_err = ret;
	if (attr->flags & RDMAXFER_DMABUF_BACKING) {
		ret = reg_mapping(agent, attr->backing_fd,
				  attr->backing_offset + attr->offset, attr, d,
				  &mem);
		if (!ret) {
			d->info.path = RDMAXFER_DMABUF_PATH_BACKING;
			goto fallback;
		}
	}
	if (attr->flags & RDMAXFER_DMABUF_STAGE) {
		ret = reg_staged(agent, attr, d, &mem);
		if (!ret) {
			d->info.path = RDMAXFER_DMABUF_PATH_STAGED;
			goto fallback;
		}
	}
	/* a mapping GUP cannot pin (VM_PFNMAP) or none at all */
	if (ret == -EFAULT || ret == -EINVAL || ret == -ENODEV ||
	    refusal(ret))
		ret = -EOPNOTSUPP;
	goto close_fd;

fallback:
	snprintf(d->info.msg, sizeof(d->info.msg),
		 "%s: %s%s; registered %s as host memory", dev,
		 policy == RDMAXFER_DMABUF_OFF ? "policy off" :
		 "ibv_reg_dmabuf_mr refused: ",
		 policy == RDMAXFER_DMABUF_OFF ? "" :
		 strerror(-d->info.device_err),
		 d->info.path == RDMAXFER_DMABUF_PATH_MAP ?
		 "the dma-buf's CPU mapping" :
		 d->info.path == RDMAXFER_DMABUF_PATH_BACKING ?
		 "the backing file's CPU mapping" :
		 "a staged copy (the dma-buf's mapping cannot be pinned)");
done:
	mem->agent = agent;
	mem->len = attr->len;
	mem->kind = RDMAXFER_MEM_DMABUF;
	mem->access = attr->access;
	mem->ops = &dmabuf_mem_ops;
	mem->priv = d;
	rx_mem_add(mem);
	*memp = mem;
	return 0;

close_fd:
	close(d->fd);
free_d:
	free(d);
	return ret;
}

/* What a DMABUF region holds besides its cache entry: the device MR, the
 * CPU mapping, the dup of the fd. */
static void dmabuf_dereg(struct rdmaxfer_mem *mem)
{
	struct rx_dmabuf *d = mem->priv;

	if (d->mr)
		ibv_dereg_mr(d->mr);
	if (d->stage)
		munmap(d->stage, d->stage_len);
	if (d->map)
		munmap(d->map, d->map_len);
	close(d->fd);
	free(d);
	mem->priv = NULL;
}

/* registered by fd (rdmaxfer_mem_register_dmabuf()), never by address;
 * its descriptors are the host form */
static const struct rx_mem_ops dmabuf_mem_ops = {
	.kind = RDMAXFER_MEM_DMABUF,
	.dereg = dmabuf_dereg,
};

static struct rx_dmabuf *dmabuf_of(const struct rdmaxfer_mem *mem)
{
	return mem->ops == &dmabuf_mem_ops ? mem->priv : NULL;
}

RX_EXPORT
int rdmaxfer_mem_dmabuf_query(const struct rdmaxfer_mem *mem,
			      struct rdmaxfer_dmabuf_info *info)
{
	if (!mem || !info || !dmabuf_of(mem))
		return -EINVAL;
	*info = dmabuf_of(mem)->info;
	return 0;
}

RX_EXPORT
int rdmaxfer_dmabuf_sync(const struct rdmaxfer_mem *mem, uint32_t flags)
{
	struct rx_dmabuf *d;
	bool end = flags & RDMAXFER_DMABUF_SYNC_END;
	int ret;

	if (!mem || !dmabuf_of(mem) || (flags & ~DMABUF_SYNC_FLAGS) ||
	    !(flags & (RDMAXFER_DMABUF_SYNC_READ | RDMAXFER_DMABUF_SYNC_WRITE)))
		return -EINVAL;
	d = dmabuf_of(mem);
	if (d->stage && !end && (flags & RDMAXFER_DMABUF_SYNC_READ)) {
		ret = stage_copy(d, true);
		if (ret)
			return ret;
	}
	ret = dmabuf_ioctl_sync(d->fd, flags);
	if (!ret && d->stage && end && (flags & RDMAXFER_DMABUF_SYNC_WRITE))
		ret = stage_copy(d, false);
	return ret;
}
