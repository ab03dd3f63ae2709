// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_file.c - rdmaxfer-bench "file": file -> remote peer throughput.
 *
 * One process, two agents over loopback on the device.  For each chunk
 * size, in the same run: the raw disk read (pread of the whole file),
 * the plain network write (blocking RDMA WRITE of each chunk from
 * registered memory), the naive loop (pread a chunk, then a blocking
 * RDMA WRITE of it) and rdmaxfer_file_to_peer(), which overlaps the two.
 * The goal is the slower of disk and network, not the sum of their times.
 * The page cache is dropped for the file (POSIX_FADV_DONTNEED) before
 * every disk pass; on tmpfs that does nothing and "disk" is memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_file.h"

#define BF_WAIT_MS	60000
#define BF_QDEPTH	4

static double bf_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* one blocking RDMA WRITE of len bytes of buf to remote + off */
static int bf_write(struct rdmaxfer_peer *peer, void *buf, size_t len,
		    const struct rdmaxfer_desc *remote, uint64_t off)
{
	struct rdmaxfer_iov iov = { buf, len };
	struct rdmaxfer_req *req;
	struct rdmaxfer_desc rd;
	int ret;

	ret = rdmaxfer_desc_sub(remote, off, len, &rd);
	if (!ret)
		ret = rdmaxfer_xfer_prepare(peer, RDMAXFER_OP_WRITE, &iov, 1,
					    &rd, 1, NULL, &req);
	if (ret)
		return ret;
	ret = rdmaxfer_req_post(req);
	if (!ret)
		ret = rdmaxfer_req_wait(req, BF_WAIT_MS);
	if (ret != -ETIMEDOUT)
		rdmaxfer_req_free(req);
	return ret;
}

/* mode 0: raw pread, 1: network only, 2: pread + blocking WRITE */
static int bf_loop(int mode, int fd, char *buf, uint64_t total,
		   size_t chunk, struct rdmaxfer_peer *peer,
		   const struct rdmaxfer_desc *remote)
{
	uint64_t off;
	ssize_t n;
	int ret;

	for (off = 0; off < total; off += chunk) {
		size_t len = total - off < chunk ? total - off : chunk;

		if (mode != 1) {
			n = pread(fd, buf, len, off);
			if (n != (ssize_t)len)
				return n < 0 ? -errno : -ENODATA;
		}
		if (mode != 0) {
			ret = bf_write(peer, buf, len, remote, off);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static int bf_file(const struct bench_file_cfg *cfg, char *path, size_t plen)
{
	size_t blk = 1 << 20;
	char *buf = malloc(blk);
	uint64_t off;
	int fd;

	snprintf(path, plen, "%s/rdmaxfer-bench-file.%d",
		 cfg->dir ? cfg->dir : "/tmp", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || !buf) {
		free(buf);
		return fd < 0 ? -errno : -ENOMEM;
	}
	for (off = 0; off < cfg->total; off += blk) {
		size_t len = cfg->total - off < blk ? cfg->total - off : blk;

		memset(buf, (int)(off >> 20) + 1, len);
		if (pwrite(fd, buf, len, off) != (ssize_t)len) {
			free(buf);
			close(fd);
			unlink(path);
			return -EIO;
		}
	}
	free(buf);
	fsync(fd);
	return fd;
}

/* rdmaxfer_file_to_peer() of the whole file through one engine, after
 * one byte untimed (the pool registration); *t: when the timed transfer
 * started. */
static int bf_engine(const struct rdmaxfer_file_attr *fa, int fd,
		     uint64_t total, struct rdmaxfer_peer *cp,
		     const struct rdmaxfer_desc *rdesc, double *t)
{
	struct rdmaxfer_file_desc d = { fd, 0, total };
	struct rdmaxfer_file_desc one = { fd, 0, 1 };
	struct rdmaxfer_file *f;
	int ret;

	ret = rdmaxfer_file_create(fa, &f);
	if (ret)
		return ret;
	/* the pool registration is not timed */
	ret = rdmaxfer_file_to_peer(f, cp, &one, rdesc, BF_WAIT_MS);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	*t = bf_now();
	if (!ret)
		ret = rdmaxfer_file_to_peer(f, cp, &d, rdesc, BF_WAIT_MS);
	if (ret)
		fprintf(stderr, "file: %s\n", rdmaxfer_file_msg(f));
	rdmaxfer_file_destroy(f);
	return ret;
}

int bench_file(const struct bench_file_cfg *cfg)
{
	static const size_t chunks[] = { 64 << 10, 1 << 20, 8 << 20 };
	static const char *const names[] = { "disk read", "network write",
					     "pread+write loop" };
	struct rdmaxfer_agent *srv = NULL, *cli = NULL;
	struct rdmaxfer_peer *cp, *sp;
	struct rdmaxfer_mem *rmem = NULL, *lmem = NULL;
	struct rdmaxfer_agent_attr attr;
	struct rdmaxfer_desc rdesc;
	char path[300], *rbuf = NULL, *lbuf = NULL;
	uint16_t port;
	double t, mbs;
	int fd, ret, m;

	if (!cfg->addr) {
		fprintf(stderr, "file: needs the device's address (rdmaxfer-bench file ADDR)\n");
		return -EINVAL;
	}
	fd = bf_file(cfg, path, sizeof(path));
	if (fd < 0) {
		fprintf(stderr, "file: test file in %s: %s\n",
			cfg->dir ? cfg->dir : "/tmp", strerror(-fd));
		return fd;
	}
	/* two agents of one process: a progress thread each, so that the
	 * blocking connect and accept do not wait on each other */
	rdmaxfer_agent_attr_init(&attr);
	attr.progress = RDMAXFER_PROGRESS_THREAD;
	ret = rdmaxfer_agent_create(&attr, &srv);
	if (!ret)
		ret = rdmaxfer_agent_create(&attr, &cli);
	if (!ret)
		ret = rdmaxfer_listen(srv, cfg->addr, 0);
	if (!ret)
		ret = rdmaxfer_listen_port(srv, &port);
	if (!ret)
		ret = rdmaxfer_connect(cli, cfg->addr, port, 10000, &cp);
	if (!ret)
		ret = rdmaxfer_accept(srv, 10000, &sp);
	if (!ret && (posix_memalign((void **)&rbuf, 4096, cfg->total) ||
		     posix_memalign((void **)&lbuf, 4096, 8 << 20)))
		ret = -ENOMEM;
	if (!ret)
		ret = rdmaxfer_mem_register(srv, rbuf, cfg->total,
					    RDMAXFER_MEM_HOST, &rmem);
	if (!ret)
		ret = rdmaxfer_mem_desc(rmem, 0, 0, &rdesc);
	if (!ret)	/* the loops' buffer: registered once, cache hits */
		ret = rdmaxfer_mem_register_access(cli, lbuf, 8 << 20,
						   RDMAXFER_MEM_HOST, 0, &lmem);
	if (ret) {
		fprintf(stderr, "file: setup: %s\n", strerror(-ret));
		goto out;
	}
	if (cfg->csv)
		printf("test,chunk,mib_s\n");
	else
		printf("# file -> remote, %llu bytes, queue depth %d\n"
		       "%-20s %10s %10s\n", (unsigned long long)cfg->total,
		       BF_QDEPTH, "path", "chunk", "MiB/s");
	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		struct rdmaxfer_file_attr fa = {
			.chunk_size = (uint32_t)chunks[c],
			.queue_depth = BF_QDEPTH,
		};

		for (m = 0; m < 4; m++) {
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
			t = bf_now();
			if (m < 3) {
				ret = bf_loop(m, fd, lbuf, cfg->total,
					      chunks[c], cp, &rdesc);
			} else {
				ret = bf_engine(&fa, fd, cfg->total, cp,
						&rdesc, &t);
			}
			if (ret)
				break;
			mbs = cfg->total / 1048576.0 / (bf_now() - t);
			if (cfg->csv)
				printf("%s,%zu,%.2f\n",
				       m < 3 ? names[m] : "rdmaxfer_file",
				       chunks[c], mbs);
			else
				printf("%-20s %9zuK %10.2f\n",
				       m < 3 ? names[m] : "rdmaxfer_file",
				       chunks[c] >> 10, mbs);
		}
		if (ret) {
			fprintf(stderr, "file: chunk %zu: %s\n", chunks[c],
				strerror(-ret));
			break;
		}
	}
out:
	if (lmem)
		rdmaxfer_mem_deregister(lmem);
	if (rmem)
		rdmaxfer_mem_deregister(rmem);
	rdmaxfer_agent_destroy(cli);
	rdmaxfer_agent_destroy(srv);
	free(rbuf);
	free(lbuf);
	close(fd);
	unlink(path);
	return ret;
}
