// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * rdmaxfer-info - what librdmaxfer would run on here.
 *
 * Lists the RDMA devices, their ports (state, MTU, link layer, max message
 * size) and GIDs (type, and which one is the RoCE v2 IPv4 GID the library
 * picks by default), and the capabilities the memory kinds depend on: ODP
 * (explicit and implicit, per transport), device memory (max_dm_size),
 * dma-buf registration (probed: ibv_reg_dmabuf_mr with an invalid fd tells
 * "the driver has no dma-buf path" from "it looked at the fd"), atomics,
 * and the largest inline data an RC QP accepts (probed by creating one).
 * Then the registration-cache monitor libregcache would choose, and a
 * fixed table of which paths this project validated on which device, so a
 * user can tell "the device offers it" from "it was tested".
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>

#include <regcache.h>
#include <rdmaxfer.h>
#include <rdmaxfer_directory.h>

static const char *prog = "rdmaxfer-info";
static bool json;
static bool jfirst;		/* first member of the current JSON level */

/* ---------------------------------------------------------- JSON bits */

static void jkey(const char *key)
{
	if (!jfirst)
		printf(",");
	jfirst = false;
	if (key)
		printf("\"%s\":", key);
}

static void jstr(const char *key, const char *val)
{
	const char *p;

	jkey(key);
	putchar('"');
	for (p = val ? val : ""; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if ((unsigned char)*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void jnum(const char *key, long long v)
{
	jkey(key);
	printf("%lld", v);
}

static void jbool(const char *key, bool v)
{
	jkey(key);
	printf("%s", v ? "true" : "false");
}

static void jopen(const char *key, char c)
{
	jkey(key);
	putchar(c);
	jfirst = true;
}

static void jclose(char c)
{
	putchar(c);
	jfirst = false;
}

/* ------------------------------------------------------------- names */

static const char *port_state(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN: return "DOWN";
	case IBV_PORT_INIT: return "INIT";
	case IBV_PORT_ARMED: return "ARMED";
	case IBV_PORT_ACTIVE: return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
	default: return "NOP";
	}
}

static int mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0;
}

static const char *link_layer(uint8_t l)
{
	switch (l) {
	case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
	default: return "unspecified";
	}
}

static const char *atomic_name(enum ibv_atomic_cap a)
{
	switch (a) {
	case IBV_ATOMIC_HCA: return "HCA";
	case IBV_ATOMIC_GLOB: return "GLOB";
	default: return "NONE";
	}
}

static const char *gid_type(unsigned int t)
{
	switch (t) {
	case IBV_GID_TYPE_IB: return "IB";
	case IBV_GID_TYPE_ROCE_V1: return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
	default: return "unknown";
	}
}

/* ODP transport capability bits as words */
static void odp_words(uint32_t caps, char *buf, size_t len)
{
	static const struct { uint32_t bit; const char *name; } names[] = {
		{ IBV_ODP_SUPPORT_SEND, "send" },
		{ IBV_ODP_SUPPORT_RECV, "recv" },
		{ IBV_ODP_SUPPORT_WRITE, "write" },
		{ IBV_ODP_SUPPORT_READ, "read" },
		{ IBV_ODP_SUPPORT_ATOMIC, "atomic" },
		{ IBV_ODP_SUPPORT_SRQ_RECV, "srq_recv" },
	};
	size_t i, off = 0;

	buf[0] = 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (caps & names[i].bit)
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
						off ? "," : "", names[i].name);
	if (!off)
		snprintf(buf, len, "none");
}

/* ------------------------------------------------------------- probes */

/*
 * dma-buf: register an invalid fd.  A driver without a dma-buf path fails
 * before looking at the fd (EOPNOTSUPP); one with it fails on the fd
 * (EBADF, or EINVAL from the fd lookup).
 */
static const char *probe_dmabuf(struct ibv_pd *pd, int *errp)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
	if (mr) {
		ibv_dereg_mr(mr);
		*errp = 0;
		return "unknown";
	}
	*errp = errno ? -errno : 0;
	switch (errno) {
	case EOPNOTSUPP:
	case ENOSYS:
	case EPROTONOSUPPORT:
		return "no";
	case EBADF:
	case EINVAL:
		return "yes";
	default:
		return "unknown";
	}
}

/* the largest inline data an RC QP accepts (0 when none, -errno) */
static int probe_inline(struct ibv_context *ctx, struct ibv_pd *pd)
{
	static const uint32_t tries[] = { 4096, 1024, 512, 256, 220, 128, 64,
					  32, 0 };
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	int best = -ENOMEM;
	size_t i;

	if (!cq)
		return errno ? -errno : -ENOMEM;
	for (i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1,
				 .max_inline_data = tries[i] },
		};
		struct ibv_qp *qp = ibv_create_qp(pd, &qa);

		if (qp) {
			best = (int)qa.cap.max_inline_data;
			ibv_destroy_qp(qp);
			break;
		}
		best = errno ? -errno : -EINVAL;
	}
	ibv_destroy_cq(cq);
	return best;
}

static bool roce_v2_ipv4(const struct ibv_gid_entry *e)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					      0xff, 0xff };

	return e->gid_type == IBV_GID_TYPE_ROCE_V2 &&
	       !memcmp(e->gid.raw, v4mapped, sizeof(v4mapped));
}

static void show_port(struct ibv_context *ctx, uint8_t p)
{
	struct ibv_port_attr pa;
	int i, v2v4 = -1;
	bool gfirst = true;

	if (ibv_query_port(ctx, p, &pa)) {
		if (!json)
			printf("  port %u: query failed: %s\n", p,
			       strerror(errno));
		return;
	}
	/* the GID the library chooses by default: RoCE v2 IPv4 */
	for (i = 0; i < pa.gid_tbl_len && v2v4 < 0; i++) {
		struct ibv_gid_entry e;

		if (!ibv_query_gid_ex(ctx, p, (uint32_t)i, &e, 0) &&
		    roce_v2_ipv4(&e))
			v2v4 = i;
	}
	if (json) {
		jopen(NULL, '{');
		jnum("port", p);
		jstr("state", port_state(pa.state));
		jnum("active_mtu", mtu_bytes(pa.active_mtu));
		jnum("max_mtu", mtu_bytes(pa.max_mtu));
		jstr("link_layer", link_layer(pa.link_layer));
		jnum("max_msg_size", pa.max_msg_sz);
		jnum("roce_v2_ipv4_gid_index", v2v4);
		jopen("gids", '[');
	} else {
		printf("  port %u: %s, MTU %d (max %d), link layer %s, max message %u B\n",
		       p, port_state(pa.state), mtu_bytes(pa.active_mtu),
		       mtu_bytes(pa.max_mtu), link_layer(pa.link_layer),
		       pa.max_msg_sz);
	}
	for (i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		char text[INET6_ADDRSTRLEN] = "";

		if (ibv_query_gid_ex(ctx, p, (uint32_t)i, &e, 0))
			continue;	/* empty slot */
		if (roce_v2_ipv4(&e))
			inet_ntop(AF_INET, e.gid.raw + 12, text, sizeof(text));
		else
			inet_ntop(AF_INET6, e.gid.raw, text, sizeof(text));
		if (json) {
			jopen(NULL, '{');
			jnum("index", i);
			jstr("gid", text);
			jstr("type", gid_type(e.gid_type));
			jbool("roce_v2_ipv4", roce_v2_ipv4(&e));
			jclose('}');
		} else {
			if (gfirst)
				printf("    GIDs:\n");
			printf("      [%d] %-40s %s%s\n", i, text,
			       gid_type(e.gid_type),
			       i == v2v4 ? "  <- RoCE v2 IPv4 (default)" :
			       roce_v2_ipv4(&e) ? "  (RoCE v2 IPv4)" : "");
		}
		gfirst = false;
	}
	if (json) {
		jclose(']');
		jclose('}');
	} else if (gfirst) {
		printf("    GIDs: none\n");
	}
}

/*
 * What librdmaxfer's ODP policy (attr.odp default: $RDMAXFER_ODP, else
 * auto) picks on this device, per operation, with the agent's self-test:
 * an agent is created on the device for it (an ACTIVE port is needed).
 */
/* An agent on dev for the policy reports (no cache monitor needed). */
static int info_agent(const char *dev, struct rdmaxfer_agent **ap)
{
	struct rdmaxfer_agent_attr attr;

	rdmaxfer_agent_attr_init(&attr);
	attr.device = dev;
	attr.cache_monitor = REGCACHE_MONITOR_NONE;
	return rdmaxfer_agent_create(&attr, ap);
}

/* A report whose agent could not be made: JSON key, text label. */
static void agent_failed(const char *key, const char *label, int ret)
{
	if (json) {
		jopen(key, '{');
		jnum("agent_error", ret);
		jclose('}');
	} else {
		printf("    %-14s cannot create an agent: %s (%d)\n", label,
		       strerror(-ret), ret);
	}
}

static void show_odp_policy(const char *dev)
{
	static const uint32_t ops[] = {
		RDMAXFER_ODP_OP_LOCAL, RDMAXFER_ODP_OP_REMOTE_WRITE,
		RDMAXFER_ODP_OP_REMOTE_READ, RDMAXFER_ODP_OP_REMOTE_ATOMIC,
	};
	static const char *const pol[] = { "default", "auto", "on", "off" };
	struct rdmaxfer_odp_caps c;
	struct rdmaxfer_agent *a;
	size_t i;
	int ret;

	ret = info_agent(dev, &a);
	if (ret) {
		agent_failed("odp_policy", "ODP policy:", ret);
		return;
	}
	rdmaxfer_agent_odp_caps(a, &c);
	if (json) {
		jopen("odp_policy", '{');
		jstr("policy", c.policy < 4 ? pol[c.policy] : "?");
		jstr("selftest", c.selftest_msg);
		jstr("prefetch", c.prefetch == RDMAXFER_PREFETCH_ADVISE_MR ?
				 "ibv_advise_mr" : "madvise");
		jbool("implicit_mr", c.implicit);
		for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			jstr(rdmaxfer_odp_op_name(ops[i]),
			     (c.auto_ops & ops[i]) ? "odp" : "pinned");
		jstr("reason", c.reason);
		jclose('}');
	} else {
		printf("    ODP policy:    %s; %s\n",
		       c.policy < 4 ? pol[c.policy] : "?", c.selftest_msg);
		for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
			uint32_t op = ops[i];

			printf("      %-14s %s\n", rdmaxfer_odp_op_name(op),
			       (c.auto_ops & op) ? "ODP" :
			       c.policy == RDMAXFER_ODP_OFF ? "pinned (policy off)" :
			       !(c.device_ops & op) ? "pinned (not in the device's RC ODP caps)" :
			       "pinned (failed the ODP self-test)");
		}
		printf("      prefetch       %s; implicit ODP MR: %s\n",
		       c.prefetch == RDMAXFER_PREFETCH_ADVISE_MR ?
		       "ibv_advise_mr" : "madvise(MADV_POPULATE_*)",
		       c.implicit ? "registered" : "none");
	}
	rdmaxfer_agent_destroy(a);
}

/*
 * How an agent made here makes remote keys (rdmaxfer_agent_query()'s
 * rkey_mode, rkey_flags, flags and env_flags): exact registrations dying
 * with their last handle and with their memory, memory windows over kept
 * registrations, or cached (RDMAXFER_AGENT_CACHE_RKEYS); whether the
 * device has windows and whether they refused an access one byte past
 * their end; and whether the environment (RDMAXFER_CACHE_RKEYS=1,
 * RDMAXFER_RKEY_MODE) chose the mode.
 */
static void show_rkeys(const char *dev)
{
	static const char *const modes[] = { "unknown", "exact", "window",
					     "cached" };
	struct rdmaxfer_agent_info info;
	struct rdmaxfer_agent *a;
	const char *mode, *dev_mw;
	bool cached, from_env;
	int ret;

	ret = info_agent(dev, &a);
	if (!ret) {
		ret = rdmaxfer_agent_query(a, &info);
		rdmaxfer_agent_destroy(a);
	}
	if (ret) {
		agent_failed("remote_keys", "remote keys:", ret);
		return;
	}
	cached = info.flags & RDMAXFER_AGENT_CACHE_RKEYS;
	from_env = info.env_flags & RDMAXFER_AGENT_CACHE_RKEYS;
	mode = info.rkey_mode < 4 ? modes[info.rkey_mode] : modes[0];
	if (cached)
		mode = "cached";
	dev_mw = !(info.rkey_flags & RDMAXFER_RKEY_F_DEVICE_MW) ? "none" :
		 (info.rkey_flags & RDMAXFER_RKEY_F_MW_BOUNDS) ?
		 "bounds enforced" : "bounds not enforced";
	if (json) {
		jopen("remote_keys", '{');
		jstr("mode", mode);
		jbool("from_environment", from_env ||
		      (info.rkey_flags & RDMAXFER_RKEY_F_ENV));
		jstr("device_windows", dev_mw);
		jclose('}');
		return;
	}
	if (cached)
		printf("    remote keys:   cached%s: a key stays valid after its last deregister until eviction or unmap\n",
		       !from_env ? "" :
		       (info.rkey_flags & RDMAXFER_RKEY_F_ENV) ?
		       " (forced by RDMAXFER_RKEY_MODE=cached)" :
		       " (forced by RDMAXFER_CACHE_RKEYS=1)");
	else if (info.rkey_mode == RDMAXFER_RKEY_WINDOW)
		printf("    remote keys:   window%s: a window per handle over a registration without remote rights; dies with its handle, or with its memory\n",
		       (info.rkey_flags & RDMAXFER_RKEY_F_ENV) ?
		       " (RDMAXFER_RKEY_MODE=window)" : "");
	else
		printf("    remote keys:   exact%s: a key dies with its last handle, or with its memory\n",
		       (info.rkey_flags & RDMAXFER_RKEY_F_ENV) ?
		       " (RDMAXFER_RKEY_MODE=exact)" : "");
	printf("    memory windows: %s\n", dev_mw);
}

/*
 * Which path rdmaxfer_mem_alloc_device() takes on this device under the
 * policy in effect ($RDMAXFER_DM, else auto), and why: an agent is made
 * for it, which probes device memory and runs the start-up check.
 */
static void show_devmem(const char *dev)
{
	static const char *const pol[] = { "?", "auto", "on", "off" };
	struct rdmaxfer_devmem_caps c;
	struct rdmaxfer_agent *a;
	int ret;

	ret = info_agent(dev, &a);
	if (!ret) {
		ret = rdmaxfer_agent_devmem_caps(a, &c);
		rdmaxfer_agent_destroy(a);
	}
	if (json) {
		jopen("device_memory", '{');
		if (ret) {
			jnum("error", ret);
		} else {
			jstr("policy", c.policy < 4 ? pol[c.policy] : "?");
			jstr("path", rdmaxfer_dm_path_name(c.path));
			jbool("mlx5", c.mlx5);
			jbool("devx", c.devx);
			jbool("dmabuf_export", c.dmabuf_export);
			jnum("check", c.check);
			jstr("reason", c.msg);
		}
		jclose('}');
	} else if (ret) {
		printf("    device memory path: unknown (no agent: %s)\n",
		       strerror(-ret));
	} else {
		printf("    device memory path: %s (policy %s; %s)\n",
		       rdmaxfer_dm_path_name(c.path),
		       c.policy < 4 ? pol[c.policy] : "?", c.msg);
	}
}

/* The optional CUDA helper (configure --with-cuda): never run here. */
#ifdef HAVE_CUDA
#define CUDA_EXPORT "librdmaxfer-cuda built: compile-tested only, never run " \
	"(unvalidated: no GPU)"
#else
#define CUDA_EXPORT "not built (configure found no cuda.h/libcuda); " \
	"unvalidated: never run"
#endif

static int show_device(struct ibv_device *dev)
{
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_device_attr_ex ax;
	const struct ibv_odp_caps *odp = &ax.odp_caps;
	char rc[64], uc[64], ud[64], xrc[64];
	const char *dmabuf = "unknown";
	struct ibv_pd *pd = NULL;
	int inl = -ENODEV, derr = 0, ret;
	bool explicit_odp, implicit_odp;
	uint8_t p;

	if (!ctx) {
		fprintf(stderr, "%s: cannot open %s: %s (%d)\n", prog,
			ibv_get_device_name(dev), strerror(errno), -errno);
		return -ENODEV;
	}
	memset(&ax, 0, sizeof(ax));
	ret = ibv_query_device_ex(ctx, NULL, &ax);
	if (ret) {
		fprintf(stderr, "%s: ibv_query_device_ex(%s): %s (%d)\n", prog,
			ibv_get_device_name(dev), strerror(ret), -ret);
		ibv_close_device(ctx);
		return -ret;
	}
	pd = ibv_alloc_pd(ctx);
	if (pd) {
		dmabuf = probe_dmabuf(pd, &derr);
		inl = probe_inline(ctx, pd);
	}
	explicit_odp = odp->general_caps & IBV_ODP_SUPPORT;
	implicit_odp = odp->general_caps & IBV_ODP_SUPPORT_IMPLICIT;
	odp_words(odp->per_transport_caps.rc_odp_caps, rc, sizeof(rc));
	odp_words(odp->per_transport_caps.uc_odp_caps, uc, sizeof(uc));
	odp_words(odp->per_transport_caps.ud_odp_caps, ud, sizeof(ud));
	odp_words(ax.xrc_odp_caps, xrc, sizeof(xrc));

	if (json) {
		jopen(NULL, '{');
		jstr("name", ibv_get_device_name(dev));
		jstr("transport", ibv_node_type_str(ctx->device->node_type));
		jstr("fw_ver", ax.orig_attr.fw_ver);
		jopen("ports", '[');
		for (p = 1; p <= ax.orig_attr.phys_port_cnt; p++)
			show_port(ctx, p);
		jclose(']');
		jopen("caps", '{');
		jopen("odp", '{');
		jbool("explicit", explicit_odp);
		jbool("implicit", implicit_odp);
		jstr("rc", rc);
		jstr("uc", uc);
		jstr("ud", ud);
		jstr("xrc", xrc);
		show_odp_policy(ibv_get_device_name(dev));
		jclose('}');
		jnum("max_dm_size", (long long)ax.max_dm_size);
		show_devmem(ibv_get_device_name(dev));
		show_rkeys(ibv_get_device_name(dev));
		jstr("dmabuf", dmabuf);
		jstr("dmabuf_path", strcmp(dmabuf, "no") ? "device" :
		     "cpu-mapping fallback");
		jnum("dmabuf_probe_errno", derr);
		jstr("cuda_export", CUDA_EXPORT);
		jstr("atomics", atomic_name(ax.orig_attr.atomic_cap));
		jnum("max_inline", inl);
		jnum("max_mr_size", (long long)ax.orig_attr.max_mr_size);
		jnum("max_qp_wr", ax.orig_attr.max_qp_wr);
		jnum("max_sge", ax.orig_attr.max_sge);
		jclose('}');
		jclose('}');
	} else {
		printf("device %s (%s, fw %s)\n", ibv_get_device_name(dev),
		       ibv_node_type_str(ctx->device->node_type),
		       ax.orig_attr.fw_ver[0] ? ax.orig_attr.fw_ver : "-");
		for (p = 1; p <= ax.orig_attr.phys_port_cnt; p++)
			show_port(ctx, p);
		printf("  capabilities:\n");
		printf("    ODP explicit:  %s\n", explicit_odp ? "yes" : "no");
		printf("    ODP implicit:  %s\n", implicit_odp ? "yes" : "no");
		printf("    ODP per transport: RC %s; UC %s; UD %s; XRC %s\n",
		       rc, uc, ud, xrc);
		show_odp_policy(ibv_get_device_name(dev));
		printf("    device memory: max_dm_size %llu B%s\n",
		       (unsigned long long)ax.max_dm_size,
		       ax.max_dm_size ? "" : " (none)");
		show_devmem(ibv_get_device_name(dev));
		show_rkeys(ibv_get_device_name(dev));
		printf("    dma-buf:       %s (ibv_reg_dmabuf_mr probe with an invalid fd: %s)\n",
		       dmabuf, derr ? strerror(-derr) : "no error");
		/* what rdmaxfer_mem_register_dmabuf() does with that answer */
		printf("    dma-buf path:  %s\n", strcmp(dmabuf, "no") ?
		       "device MR (ibv_reg_dmabuf_mr) under policy auto and on" :
		       "device MR refused: policy on fails; auto and off use the "
		       "CPU-mapping fallback (the dma-buf's mapping, its backing "
		       "memfd's, or a staged copy)");
		printf("    CUDA export:   %s\n", CUDA_EXPORT);
		printf("    atomics:       %s\n",
		       atomic_name(ax.orig_attr.atomic_cap));
		if (inl >= 0)
			printf("    max inline:    %d B (RC QP)\n", inl);
		else
			printf("    max inline:    unknown (%s)\n",
			       strerror(-inl));
		printf("    max MR size:   %llu B, max QP WRs %d, max SGEs %d\n",
		       (unsigned long long)ax.orig_attr.max_mr_size,
		       ax.orig_attr.max_qp_wr, ax.orig_attr.max_sge);
	}
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

/* ----------------------------------------------------- regcache monitor */

static int dummy_reg(void *user, void *addr, size_t len, uint32_t access,
		     void **handle)
{
	(void)user;
	(void)len;
	(void)access;
	*handle = addr;
	return 0;
}

static int dummy_dereg(void *user, void *handle)
{
	(void)user;
	(void)handle;
	return 0;
}

static void show_monitor(void)
{
	struct regcache_attr attr = {
		.reg = dummy_reg, .dereg = dummy_dereg,
		.monitor = REGCACHE_MONITOR_AUTO,
	};
	struct regcache *cache = NULL;
	const char *name = "none";
	char uffd[16] = "absent";
	bool dev = access("/dev/regcache", F_OK) == 0;
	FILE *f;
	int ret;

	ret = regcache_create(&attr, &cache);
	if (!ret)
		name = regcache_monitor_name(cache);
	f = fopen("/proc/sys/vm/unprivileged_userfaultfd", "r");
	if (f) {
		if (fgets(uffd, sizeof(uffd), f))
			uffd[strcspn(uffd, "\n")] = 0;
		fclose(f);
	}
	if (json) {
		jopen("regcache", '{');
		jstr("monitor", ret ? "" : name);
		jnum("create_error", ret);
		jbool("dev_regcache", dev);
		jstr("unprivileged_userfaultfd", uffd);
		jclose('}');
	} else {
		printf("registration cache:\n");
		if (ret)
			printf("  monitor: cannot create a cache: %s (%d)\n",
			       strerror(-ret), ret);
		else
			printf("  monitor: %s (REGCACHE_MONITOR_AUTO: kmod, else uffd, else none)\n",
			       name);
		printf("  /dev/regcache: %s\n", dev ? "present" : "absent (regcache.ko not loaded)");
		printf("  vm.unprivileged_userfaultfd: %s\n", uffd);
	}
	if (cache)
		regcache_destroy(cache);
}

/* --------------------------------------------------- validation table */

/*
 * What the project's tests (tests/vm/suites/NAME.sh on the harness's Debian
 * guests) exercise for real, per path.  Keep it in sync with the suites:
 * a row says "validated" only if a suite runs the data path and checks it.
 */
static const struct {
	const char *path;
	const char *validated;
	const char *note;
} paths[] = {
	{ "pinned host memory (ibv_reg_mr)", "rxe, Debian 6.1 and 7.3 kernels",
	  "transfers with data validation in the rdmaxfer and bench suites" },
	{ "explicit ODP: registration", "rxe, Debian 7.3 kernel",
	  "ibv_reg_mr(IBV_ACCESS_ON_DEMAND) in rdmaxfer-bench reg; rxe on 6.1 refuses it" },
	{ "explicit ODP: atomics", "rxe, Debian 7.3 kernel",
	  "test_rdmaxfer_odp in the rdmaxfer suite; 6.1: pinned fallback" },
	{ "explicit ODP: WRITE/READ", "fallback only",
	  "7.3 rxe corrupts them (self-test); pinned, data checked" },
	{ "implicit ODP", "unvalidated",
	  "rxe refuses it on both kernels; registered only where offered" },
	{ "device memory (MEMIC) + KSM remap", "unvalidated: needs mlx5",
	  "rxe has no device memory; KSM encoding, path choice and teardown host-tested only" },
	{ "device memory: host fallback", "rxe, Debian 6.1 and 7.3 kernels",
	  "devmem suite: WRITE/READ, contended fetch-and-add and compare-and-swap, data checked" },
	{ "dma-buf: device MR (ibv_reg_dmabuf_mr)", "not validated",
	  "rxe refuses it (EOPNOTSUPP, 6.1 and 7.3); needs mlx5 (or efa, irdma, ...)" },
	{ "dma-buf: CUDA export helper", "unvalidated",
	  "rdmaxfer_mem_register_cuda (librdmaxfer-cuda, --with-cuda): compile-tested only, never run: no GPU" },
	{ "dma-buf: CPU-mapping fallback", "rxe, Debian 6.1 and 7.3 kernels",
	  "dmabuf suite, data checked: udmabuf via its memfd (7.3), staged copy (vgem 6.1 and 7.3, udmabuf 7.3); 2host: a peer guest's WRITE/READ" },
	{ "file <-> memory/remote (io_uring)", "rxe, Debian 6.1 and 7.3 kernels",
	  "file suite: tmpfs, ext4 on loop, O_DIRECT; 7.3 io_uring_disabled -> pread" },
	{ "grain ring (MXL), samples, overrun", "rxe, Debian 6.1 and 7.3 kernels",
	  "ring suite, every grain and sample checked at the target; 2host: grains with credits between two guests (samples and overrun mode: one guest only)" },
};

static void show_paths(void)
{
	size_t i, n = sizeof(paths) / sizeof(paths[0]);

	if (json) {
		jopen("validated_paths", '[');
		for (i = 0; i < n; i++) {
			jopen(NULL, '{');
			jstr("path", paths[i].path);
			jstr("validated_on", paths[i].validated);
			jstr("note", paths[i].note);
			jclose('}');
		}
		jclose(']');
		return;
	}
	printf("validated paths (by this project's test suites):\n");
	for (i = 0; i < n; i++)
		printf("  %-38s %-34s %s\n", paths[i].path,
		       paths[i].validated, paths[i].note);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [-d DEVICE] [--json]\n"
		"       %s --directory URL [--name NAME] [--json]\n"
		"  -d, --device NAME   only this device\n"
		"      --directory URL the agents an etcd directory lists, and\n"
		"                      their exports (rdmaxfer_directory(3))\n"
		"      --name NAME     only the agent published as NAME\n"
		"  -j, --json          JSON output\n"
		"  -h, --help\n", prog, prog);
}

/* ------------------------------------------------- --directory URL */

static void show_agent(const char *name, uint64_t rev,
		       const struct rdmaxfer_md *md)
{
	size_t i;

	if (json) {
		jopen(NULL, '{');
		jstr("name", name);
		jnum("revision", (long long)rev);
		jnum("agent_id", (long long)md->agent_id);
		jstr("agent_name", md->name);
		jstr("device", md->device);
		jnum("port", md->port);
		jbool("listening", md->listening);
		jstr("host", md->host);
		jnum("listen_port", md->listen_port);
		jnum("qps_per_peer", md->qps_per_peer);
		jopen("exports", '[');
		for (i = 0; i < md->ndescs; i++) {
			jopen(NULL, '{');
			jnum("addr", (long long)md->descs[i].addr);
			jnum("len", (long long)md->descs[i].len);
			jnum("rkey", md->descs[i].rkey);
			jnum("kind", md->descs[i].kind);
			jclose('}');
		}
		jclose(']');
		jclose('}');
		return;
	}
	printf("%-20s agent %016llx  %s port %u  %s:%u  %u QP(s)  %zu export(s)\n",
	       name, (unsigned long long)md->agent_id, md->device, md->port,
	       md->listening ? md->host : "-", md->listen_port,
	       md->qps_per_peer, md->ndescs);
	for (i = 0; i < md->ndescs; i++)
		printf("  export 0x%016llx len %llu rkey 0x%x kind %u\n",
		       (unsigned long long)md->descs[i].addr,
		       (unsigned long long)md->descs[i].len,
		       md->descs[i].rkey, md->descs[i].kind);
}

static int show_directory(const char *url, const char *name)
{
	struct rdmaxfer_directory_attr a;
	struct rdmaxfer_directory_info info;
	struct rdmaxfer_directory *dir;
	struct rdmaxfer_dir_list *list = NULL;
	struct rdmaxfer_md *md = NULL;
	size_t i;
	int ret;

	rdmaxfer_directory_attr_init(&a);
	a.endpoints = url;
	a.retry_ms = 2000;
	a.timeout_ms = 5000;
	ret = rdmaxfer_directory_open(&a, &dir);
	if (ret) {
		if (ret == -EOPNOTSUPP)
			fprintf(stderr, "%s: this librdmaxfer was built without etcd support (configure --with-etcd, libcurl and json-c): %s (%d)\n",
				prog, strerror(-ret), ret);
		else
			fprintf(stderr, "%s: cannot reach the directory at %s: %s (%d)\n",
				prog, url, strerror(-ret), ret);
		return 1;
	}
	rdmaxfer_directory_query(dir, &info);
	ret = name ? rdmaxfer_directory_lookup(dir, name, 0, &md) :
		     rdmaxfer_directory_list(dir, &list);
	if (ret) {
		fprintf(stderr, "%s: %s%s in %s (namespace %s): %s (%d)\n", prog,
			name ? "no valid agent " : "cannot list the agents",
			name ? name : "", url, info.ns, strerror(-ret), ret);
		rdmaxfer_directory_close(dir);
		return 1;
	}
	if (json) {
		jfirst = true;
		putchar('{');
		jstr("directory", url);
		jstr("namespace", info.ns);
		if (list) {
			jnum("revision", (long long)list->revision);
			jnum("rejected", (long long)list->rejected);
		}
		jopen("agents", '[');
	} else if (list) {
		printf("directory %s, namespace %s: %zu agent(s) at revision %llu, %llu entr%s rejected\n",
		       url, info.ns, list->n,
		       (unsigned long long)list->revision,
		       (unsigned long long)list->rejected,
		       list->rejected == 1 ? "y" : "ies");
	}
	if (md)
		show_agent(name, 0, md);
	for (i = 0; list && i < list->n; i++)
		show_agent(list->agents[i].name, list->agents[i].revision,
			   list->agents[i].md);
	if (json) {
		jclose(']');
		printf("}\n");
	}
	rdmaxfer_md_free(md);
	rdmaxfer_directory_list_free(list);
	rdmaxfer_directory_close(dir);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "directory", required_argument, NULL, 'D' },
		{ "name", required_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ibv_device **list;
	const char *only = NULL, *directory = NULL, *name = NULL;
	int n = 0, i, ch, shown = 0;

	while ((ch = getopt_long(argc, argv, "d:jh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			only = optarg;
			break;
		case 'D':
			directory = optarg;
			break;
		case 'N':
			name = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog,
			argv[optind]);
		usage(stderr);
		return 2;
	}
	if (name && !directory) {
		fprintf(stderr, "%s: --name needs --directory URL\n", prog);
		return 2;
	}
	if (directory)
		return show_directory(directory, name);
	list = ibv_get_device_list(&n);
	if (!list)
		n = 0;
	if (only) {
		for (i = 0; i < n; i++)
			if (!strcmp(ibv_get_device_name(list[i]), only))
				break;
		if (i == n) {
			fprintf(stderr, "%s: no RDMA device named '%s': %s (%d)\n",
				prog, only, strerror(ENODEV), -ENODEV);
			if (list)
				ibv_free_device_list(list);
			return 1;
		}
	}
	if (json) {
		jfirst = true;
		putchar('{');
		jopen("devices", '[');
	}
	for (i = 0; i < n; i++) {
		if (only && strcmp(ibv_get_device_name(list[i]), only))
			continue;
		if (!show_device(list[i]))
			shown++;
	}
	if (json) {
		jclose(']');
		show_monitor();
		show_paths();
		printf("}\n");
	} else {
		if (!n)
			printf("no RDMA devices\n");
		show_monitor();
		show_paths();
	}
	if (list)
		ibv_free_device_list(list);
	(void)shown;
	return 0;
}
