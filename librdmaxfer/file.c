// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * file.c - files as transfer endpoints: a file range read into or written
 * from local memory through io_uring (liburing).
 *
 * A range is cut into chunks of chunk_size bytes and up to queue_depth of
 * them are in flight at once.  Everything that can be known before the
 * first I/O is checked first (a closed fd, a directory, a read-only fd as
 * destination, an offset past EOF, a file shorter than the range, O_DIRECT
 * alignment), so bad input fails with -errno and a message without any
 * I/O.  A short read or write is resubmitted for the rest of its chunk;
 * a read that reaches EOF (the file shrank under us) fails with -ENODATA;
 * a write is only reported done when every byte of the range was written.
 * Where io_uring is unavailable (kernel.io_uring_disabled, seccomp, an old
 * kernel) the engine falls back to pread/pwrite and says so in its
 * message, unless RDMAXFER_FILE_REQUIRE_URING asks it to fail instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

struct rdmaxfer_file {
	struct io_uring ring;
	bool uring;
	uint32_t chunk;
	uint32_t qdepth;
	/* the staging pool of the remote legs: qdepth chunks, registered
	 * once through the agent's cache and with io_uring */
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_mem *pool_mem;
	char *pool;
	bool pool_fixed;
	char msg[RDMAXFER_FILE_MSG_MAX];
};

/* One chunk in flight: where it goes and how much of it is done. */
struct file_io {
	uint64_t off;
	char *buf;
	uint32_t len;
	uint32_t done;
};

static int __attribute__((format(printf, 3, 4)))
file_fail(struct rdmaxfer_file *file, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(file->msg, sizeof(file->msg), fmt, ap);
	va_end(ap);
	return err;
}

RX_EXPORT
int rdmaxfer_file_create(const struct rdmaxfer_file_attr *attr,
			 struct rdmaxfer_file **filep)
{
	struct rdmaxfer_file *file;
	uint32_t flags = attr ? attr->flags : 0;
	int ret;

	if (!filep)
		return -EINVAL;
	*filep = NULL;
	if (flags & ~(RDMAXFER_FILE_REQUIRE_URING | RDMAXFER_FILE_NO_URING))
		return -EINVAL;
	if ((flags & RDMAXFER_FILE_REQUIRE_URING) &&
	    (flags & RDMAXFER_FILE_NO_URING))
		return -EINVAL;
	if (attr && attr->queue_depth > RDMAXFER_FILE_MAX_QDEPTH)
		return -EINVAL;
	file = calloc(1, sizeof(*file));
	if (!file)
		return -ENOMEM;
	file->chunk = attr && attr->chunk_size ? attr->chunk_size :
		      RDMAXFER_FILE_DEF_CHUNK;
	file->qdepth = attr && attr->queue_depth ? attr->queue_depth :
		       RDMAXFER_FILE_DEF_QDEPTH;
	if (flags & RDMAXFER_FILE_NO_URING) {
		snprintf(file->msg, sizeof(file->msg),
			 "pread/pwrite: io_uring not used (asked for)");
		*filep = file;
		return 0;
	}
	ret = io_uring_queue_init(file->qdepth, &file->ring, 0);
	if (ret < 0) {
		if (flags & RDMAXFER_FILE_REQUIRE_URING) {
			free(file);
			return ret;
		}
		snprintf(file->msg, sizeof(file->msg),
			 "pread/pwrite fallback: io_uring_queue_init: %s%s",
			 strerror(-ret), ret == -EPERM ?
			 " (kernel.io_uring_disabled?)" : "");
	} else {
		file->uring = true;
	}
	*filep = file;
	return 0;
}

RX_EXPORT
void rdmaxfer_file_destroy(struct rdmaxfer_file *file)
{
	if (!file)
		return;
	if (file->uring)
		io_uring_queue_exit(&file->ring);	/* unregisters the pool */
	if (file->pool_mem)
		rdmaxfer_mem_deregister(file->pool_mem);
	free(file->pool);
	free(file);
}

RX_EXPORT
int rdmaxfer_file_backend(const struct rdmaxfer_file *file)
{
	if (!file)
		return -EINVAL;
	return file->uring ? RDMAXFER_FILE_IO_URING : RDMAXFER_FILE_PREAD;
}

RX_EXPORT
const char *rdmaxfer_file_msg(const struct rdmaxfer_file *file)
{
	return file ? file->msg : "";
}

/*
 * O_DIRECT alignment of fd: statx(STATX_DIOALIGN) where the kernel and
 * filesystem report it (6.1+), else the common 512 bytes for memory and
 * file offsets.
 */
static void file_dio_align(int fd, uint32_t *mem_align, uint32_t *off_align)
{
	struct statx stx;

	*mem_align = 512;
	*off_align = 512;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align) {
		*mem_align = stx.stx_dio_mem_align;
		*off_align = stx.stx_dio_offset_align;
	}
}

/* Everything about a range that can fail before any I/O. */
static int file_check(struct rdmaxfer_file *file,
		      const struct rdmaxfer_file_desc *d, const void *buf,
		      bool write)
{
	const char *what = write ? "destination" : "source";
	uint32_t mem_align, off_align;
	struct stat st;
	int fl;

	if (!d || !buf || !d->len)
		return file_fail(file, -EINVAL, "%s: NULL or empty range",
				 what);
	if (d->offset > (uint64_t)INT64_MAX - d->len)
		return file_fail(file, -EOVERFLOW,
				 "%s: offset %llu + len %llu overflows", what,
				 (unsigned long long)d->offset,
				 (unsigned long long)d->len);
	fl = fcntl(d->fd, F_GETFL);
	if (fl < 0 || fstat(d->fd, &st) < 0)
		return file_fail(file, -errno, "%s: fd %d: %s", what, d->fd,
				 strerror(errno));
	if (S_ISDIR(st.st_mode))
		return file_fail(file, -EISDIR, "%s: fd %d is a directory",
				 what, d->fd);
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return file_fail(file, -ESPIPE,
				 "%s: fd %d is not a regular file or block device",
				 what, d->fd);
	if (write && (fl & O_ACCMODE) == O_RDONLY)
		return file_fail(file, -EBADF, "%s: fd %d is open read-only",
				 what, d->fd);
	if (!write && (fl & O_ACCMODE) == O_WRONLY)
		return file_fail(file, -EBADF, "%s: fd %d is open write-only",
				 what, d->fd);
	if (write && (fl & O_APPEND))
		return file_fail(file, -EINVAL,
				 "%s: fd %d has O_APPEND, offsets would be ignored",
				 what, d->fd);
	if (!write && S_ISREG(st.st_mode)) {
		if (d->offset > (uint64_t)st.st_size)
			return file_fail(file, -ENXIO,
					 "%s: offset %llu is past EOF (size %llu)",
					 what, (unsigned long long)d->offset,
					 (unsigned long long)st.st_size);
		if (d->offset + d->len > (uint64_t)st.st_size)
			return file_fail(file, -ENODATA,
					 "%s: file size %llu is short of the range end %llu",
					 what, (unsigned long long)st.st_size,
					 (unsigned long long)(d->offset + d->len));
	}
	if (fl & O_DIRECT) {
		file_dio_align(d->fd, &mem_align, &off_align);
		if ((uintptr_t)buf % mem_align || d->offset % off_align ||
		    d->len % off_align || file->chunk % off_align)
			return file_fail(file, -EINVAL,
					 "%s: O_DIRECT needs buffer aligned to %u and offset, len and chunk size to %u bytes",
					 what, mem_align, off_align);
	}
	return 0;
}

static int file_pio(struct rdmaxfer_file *file,
		    const struct rdmaxfer_file_desc *d, char *buf, bool write)
{
	uint64_t done = 0;
	ssize_t n;

	while (done < d->len) {
		size_t len = d->len - done;

		if (len > file->chunk)
			len = file->chunk;
		if (write)
			n = pwrite(d->fd, buf + done, len, d->offset + done);
		else
			n = pread(d->fd, buf + done, len, d->offset + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return file_fail(file, -errno, "%s at offset %llu: %s",
					 write ? "pwrite" : "pread",
					 (unsigned long long)(d->offset + done),
					 strerror(errno));
		if (n == 0)
			return file_fail(file, write ? -EIO : -ENODATA,
					 "%s at offset %llu: %s",
					 write ? "pwrite" : "pread",
					 (unsigned long long)(d->offset + done),
					 write ? "wrote nothing" : "EOF");
		done += n;
	}
	return 0;
}

static void file_queue(struct rdmaxfer_file *file, int fd, struct file_io *io,
		       bool write)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&file->ring);

	/* never NULL: at most qdepth I/Os are in flight on a qdepth ring */
	if (write)
		io_uring_prep_write(sqe, fd, io->buf + io->done,
				    io->len - io->done, io->off + io->done);
	else
		io_uring_prep_read(sqe, fd, io->buf + io->done,
				   io->len - io->done, io->off + io->done);
	io_uring_sqe_set_data(sqe, io);
}

static void file_ring_reset(struct rdmaxfer_file *file)
{
	io_uring_queue_exit(&file->ring);
	file->pool_fixed = false;
	if (io_uring_queue_init(file->qdepth, &file->ring, 0) < 0)
		file->uring = false;	/* pread/pwrite from now on */
}

/*
 * Keep up to qdepth chunks in flight.  On the first error no new chunk is
 * queued, the ones in flight are reaped (their buffers are the caller's),
 * and that first error is returned.
 */
static int file_uring_io(struct rdmaxfer_file *file,
			 const struct rdmaxfer_file_desc *d, char *buf,
			 bool write)
{
	const char *op = write ? "write" : "read";
	struct file_io *ios, *io;
	uint64_t next = 0;
	unsigned int inflight = 0, i;
	struct io_uring_cqe *cqe;
	int err = 0, ret;

	ios = calloc(file->qdepth, sizeof(*ios));
	if (!ios)
		return file_fail(file, -ENOMEM, "out of memory");
	for (i = 0; i < file->qdepth && next < d->len; i++) {
		io = &ios[i];
		io->off = d->offset + next;
		io->buf = buf + next;
		io->len = d->len - next < file->chunk ? d->len - next :
			  file->chunk;
		next += io->len;
		file_queue(file, d->fd, io, write);
		inflight++;
	}
	while (inflight) {
		ret = io_uring_submit_and_wait(&file->ring, 1);
		if (ret == -EINTR)
			continue;
		if (ret >= 0)
			ret = io_uring_wait_cqe(&file->ring, &cqe);
		if (ret == -EINTR)
			continue;
		if (ret < 0) {
			/*
			 * The ring cannot be trusted to drain: tearing it
			 * down cancels and waits for what is in flight, so
			 * the caller's buffer is free when we return.
			 */
			err = file_fail(file, ret, "io_uring: %s",
					strerror(-ret));
			file_ring_reset(file);
			break;
		}
		io = io_uring_cqe_get_data(cqe);
		ret = cqe->res;
		io_uring_cqe_seen(&file->ring, cqe);
		inflight--;
		if (ret < 0 && !err)
			err = file_fail(file, ret, "%s at offset %llu: %s", op,
					(unsigned long long)(io->off + io->done),
					strerror(-ret));
		else if (ret == 0 && !err)
			err = file_fail(file, write ? -EIO : -ENODATA,
					"%s at offset %llu: %s", op,
					(unsigned long long)(io->off + io->done),
					write ? "wrote nothing" : "EOF");
		if (err)
			continue;
		io->done += ret;
		if (io->done < io->len) {	/* short: the rest again */
			file_queue(file, d->fd, io, write);
			inflight++;
			continue;
		}
		if (next < d->len) {
			io->off = d->offset + next;
			io->buf = buf + next;
			io->done = 0;
			io->len = d->len - next < file->chunk ? d->len - next :
				  file->chunk;
			next += io->len;
			file_queue(file, d->fd, io, write);
			inflight++;
		}
	}
	free(ios);
	return err;
}

static int file_io(struct rdmaxfer_file *file,
		   const struct rdmaxfer_file_desc *d, char *buf, bool write)
{
	int ret;

	if (!file)
		return -EINVAL;
	file->msg[0] = '\0';
	ret = file_check(file, d, buf, write);
	if (ret)
		return ret;
	if (!file->uring)
		return file_pio(file, d, buf, write);
	return file_uring_io(file, d, buf, write);
}

RX_EXPORT
int rdmaxfer_file_read(struct rdmaxfer_file *file,
		       const struct rdmaxfer_file_desc *src, void *buf)
{
	return file_io(file, src, buf, false);
}

RX_EXPORT
int rdmaxfer_file_write(struct rdmaxfer_file *file, const void *buf,
			const struct rdmaxfer_file_desc *dst)
{
	return file_io(file, dst, (char *)buf, true);
}

/* ------------------------------------------------------ the remote legs */

/*
 * The staging pool, made on the first remote transfer of an agent: one
 * registration through its cache (local access only: the RDMA WRITE or
 * READ is this side's) and the same chunks as io_uring fixed buffers.
 */
static int file_pool(struct rdmaxfer_file *file, struct rdmaxfer_agent *agent)
{
	size_t len = (size_t)file->qdepth * file->chunk;
	struct iovec *iov;
	uint32_t i;
	int ret;

	if (file->agent == agent)
		return 0;
	if (file->agent)
		return file_fail(file, -EINVAL,
				 "the staging pool belongs to another agent");
	if (posix_memalign((void **)&file->pool, 4096, len))
		return file_fail(file, -ENOMEM, "staging pool: out of memory");
	ret = rdmaxfer_mem_register_access(agent, file->pool, len,
					   RDMAXFER_MEM_HOST, 0,
					   &file->pool_mem);
	if (ret) {
		free(file->pool);
		file->pool = NULL;
		return file_fail(file, ret, "staging pool registration: %s",
				 strerror(-ret));
	}
	file->agent = agent;
	if (!file->uring)
		return 0;
	iov = calloc(file->qdepth, sizeof(*iov));
	if (!iov)
		return 0;	/* plain reads and writes into the pool */
	for (i = 0; i < file->qdepth; i++) {
		iov[i].iov_base = file->pool + (size_t)i * file->chunk;
		iov[i].iov_len = file->chunk;
	}
	/* fails under a small RLIMIT_MEMLOCK on old kernels: then unfixed */
	file->pool_fixed = !io_uring_register_buffers(&file->ring, iov,
						     file->qdepth);
	free(iov);
	return 0;
}

enum slot_state { SLOT_IDLE, SLOT_FILE, SLOT_NET };

struct file_slot {
	enum slot_state state;
	struct file_io io;
	struct rdmaxfer_req *req;
	uint64_t pos;		/* offset of the chunk in the range */
};

static void slot_file_io(struct rdmaxfer_file *file, int fd,
			 struct file_slot *sl, int idx, bool write)
{
	struct file_io *io = &sl->io;
	struct io_uring_sqe *sqe;

	if (!file->uring || !file->pool_fixed) {
		file_queue(file, fd, io, write);
		return;
	}
	sqe = io_uring_get_sqe(&file->ring);
	if (write)
		io_uring_prep_write_fixed(sqe, fd, io->buf + io->done,
					  io->len - io->done,
					  io->off + io->done, idx);
	else
		io_uring_prep_read_fixed(sqe, fd, io->buf + io->done,
					 io->len - io->done,
					 io->off + io->done, idx);
	io_uring_sqe_set_data(sqe, io);
}

/* Start the network leg of a slot whose chunk is in (or due to) the pool. */
static int slot_net(struct rdmaxfer_file *file, struct rdmaxfer_peer *peer,
		    const struct rdmaxfer_desc *remote, struct file_slot *sl,
		    enum rdmaxfer_op op)
{
	struct rdmaxfer_iov iov = { sl->io.buf, sl->io.len };
	struct rdmaxfer_desc rd;
	int ret;

	ret = rdmaxfer_desc_sub(remote, sl->pos, sl->io.len, &rd);
	if (!ret)
		ret = rdmaxfer_xfer_prepare(peer, op, &iov, 1, &rd, 1, NULL,
					    &sl->req);
	if (!ret) {
		ret = rdmaxfer_req_post(sl->req);
		if (ret) {
			rdmaxfer_req_free(sl->req);
			sl->req = NULL;
		}
	}
	if (ret)
		return file_fail(file, ret, "RDMA %s at offset %llu: %s",
				 op == RDMAXFER_OP_WRITE ? "WRITE" : "READ",
				 (unsigned long long)sl->pos, strerror(-ret));
	sl->state = SLOT_NET;
	return 0;
}

/* Reap one io_uring completion into its slot; 1 when the chunk is done. */
static int slot_reap(struct rdmaxfer_file *file, int fd,
		     struct file_slot *slots, struct io_uring_cqe *cqe,
		     bool write, struct file_slot **donep)
{
	struct file_io *io = io_uring_cqe_get_data(cqe);
	struct file_slot *sl = rx_container_of(io, struct file_slot, io);
	int res = cqe->res;

	io_uring_cqe_seen(&file->ring, cqe);
	*donep = sl;
	if (res < 0)
		return file_fail(file, res, "%s at offset %llu: %s",
				 write ? "write" : "read",
				 (unsigned long long)(io->off + io->done),
				 strerror(-res));
	if (res == 0)
		return file_fail(file, write ? -EIO : -ENODATA,
				 "%s at offset %llu: %s",
				 write ? "write" : "read",
				 (unsigned long long)(io->off + io->done),
				 write ? "wrote nothing" : "EOF");
	io->done += res;
	if (io->done < io->len) {
		slot_file_io(file, fd, sl, (int)(sl - slots), write);
		return 0;
	}
	return 1;
}

/* Synchronous file I/O of one slot for the pread/pwrite backend. */
static int slot_pio(struct rdmaxfer_file *file, int fd, struct file_slot *sl,
		    bool write)
{
	struct rdmaxfer_file_desc d = { fd, sl->io.off, sl->io.len };

	return file_pio(file, &d, sl->io.buf, write);
}

/*
 * The pipeline of both remote legs.  to_peer: file read into a slot, then
 * RDMA WRITE from it; from_peer: RDMA READ into a slot, then file write.
 * While one slot's chunk is on the network, others are on the disk.
 */
static int file_remote(struct rdmaxfer_file *file, struct rdmaxfer_peer *peer,
		       const struct rdmaxfer_file_desc *d,
		       const struct rdmaxfer_desc *remote, int timeout_ms,
		       bool to_peer)
{
	enum rdmaxfer_op op = to_peer ? RDMAXFER_OP_WRITE : RDMAXFER_OP_READ;
	bool fwrite = !to_peer, busy;
	uint64_t next = 0, ndone = 0;
	struct file_slot *slots, *sl;
	struct io_uring_cqe *cqe;
	unsigned int inflight = 0, i;
	int64_t deadline;
	int err, ret;

	if (!file)
		return -EINVAL;
	file->msg[0] = '\0';
	if (!peer || !remote)
		return file_fail(file, -EINVAL, "NULL peer or remote descriptor");
	/* the buffers are pool chunks: page-aligned, chunk_size apart */
	err = file_check(file, d, (const void *)(uintptr_t)4096, fwrite);
	if (err)
		return err;
	if (remote->len < d->len)
		return file_fail(file, -ERANGE,
				 "remote descriptor of %llu bytes is smaller than the file range of %llu",
				 (unsigned long long)remote->len,
				 (unsigned long long)d->len);
	err = file_pool(file, peer->agent);
	if (err)
		return err;
	slots = calloc(file->qdepth, sizeof(*slots));
	if (!slots)
		return file_fail(file, -ENOMEM, "out of memory");
	deadline = rx_deadline(timeout_ms);
	while (ndone < d->len || inflight) {
		busy = false;
		/* start chunks in idle slots */
		for (i = 0; !err && i < file->qdepth && next < d->len; i++) {
			sl = &slots[i];
			if (sl->state != SLOT_IDLE)
				continue;
			sl->pos = next;
			sl->io = (struct file_io){
				.off = d->offset + next,
				.buf = file->pool + (size_t)i * file->chunk,
				.len = d->len - next < file->chunk ?
				       d->len - next : file->chunk,
			};
			next += sl->io.len;
			busy = true;
			if (!to_peer) {
				err = slot_net(file, peer, remote, sl, op);
				if (!err)
					inflight++;
				continue;
			}
			if (!file->uring) {
				err = slot_pio(file, d->fd, sl, false);
				if (!err)
					err = slot_net(file, peer, remote, sl,
						       op);
				if (!err)
					inflight++;
				continue;
			}
			slot_file_io(file, d->fd, sl, i, false);
			sl->state = SLOT_FILE;
			inflight++;
		}
		if (file->uring && io_uring_submit(&file->ring) < 0 && !err)
			err = file_fail(file, -EIO, "io_uring_submit failed");
		/* file completions */
		while (file->uring &&
		       io_uring_peek_cqe(&file->ring, &cqe) == 0) {
			busy = true;
			ret = slot_reap(file, d->fd, slots, cqe, fwrite, &sl);
			if (ret < 0 && !err)
				err = ret;
			if (ret == 0)	/* the rest of a short chunk is out */
				continue;
			if (ret != 1 || err || fwrite) {
				/* failed, or a chunk fully written */
				sl->state = SLOT_IDLE;
				inflight--;
				if (ret == 1)
					ndone += sl->io.len;
				continue;
			}
			ret = slot_net(file, peer, remote, sl, op);
			if (ret) {
				err = ret;
				sl->state = SLOT_IDLE;
				inflight--;
			}
		}
		/* network completions */
		for (i = 0; i < file->qdepth; i++) {
			sl = &slots[i];
			if (sl->state != SLOT_NET)
				continue;
			ret = rdmaxfer_req_test(sl->req);
			if (ret == -EINPROGRESS)
				continue;
			busy = true;
			rdmaxfer_req_free(sl->req);
			sl->req = NULL;
			sl->state = SLOT_IDLE;
			if (ret) {
				if (!err)
					err = file_fail(file, ret,
							"RDMA %s at offset %llu: %s",
							to_peer ? "WRITE" : "READ",
							(unsigned long long)sl->pos,
							strerror(-ret));
				inflight--;
				continue;
			}
			if (to_peer) {
				ndone += sl->io.len;
				inflight--;
				continue;
			}
			if (err) {
				inflight--;
				continue;
			}
			if (!file->uring) {
				err = slot_pio(file, d->fd, sl, true);
				if (!err)
					ndone += sl->io.len;
				inflight--;
				continue;
			}
			slot_file_io(file, d->fd, sl, i, true);
			sl->state = SLOT_FILE;
		}
		if (err && !inflight)
			break;
		if (err && next < d->len)
			next = d->len;	/* start nothing more */
		if (!busy) {
			/* INT64_MAX (a negative timeout) is never passed */
			if (rx_now_ns() > deadline) {
				if (!err)
					err = file_fail(file, -ETIMEDOUT,
							"timed out after %d ms",
							timeout_ms);
				/* what is still out cannot be abandoned */
				if (file->uring)
					file_ring_reset(file);
				for (i = 0; i < file->qdepth; i++)
					if (slots[i].req &&
					    rdmaxfer_req_wait(slots[i].req,
							      10000) !=
					    -ETIMEDOUT)
						rdmaxfer_req_free(slots[i].req);
				break;
			}
			sched_yield();
		}
	}
	free(slots);
	return err;
}

RX_EXPORT
int rdmaxfer_file_to_peer(struct rdmaxfer_file *file,
			  struct rdmaxfer_peer *peer,
			  const struct rdmaxfer_file_desc *src,
			  const struct rdmaxfer_desc *remote, int timeout_ms)
{
	return file_remote(file, peer, src, remote, timeout_ms, true);
}

RX_EXPORT
int rdmaxfer_file_from_peer(struct rdmaxfer_file *file,
			    struct rdmaxfer_peer *peer,
			    const struct rdmaxfer_desc *remote,
			    const struct rdmaxfer_file_desc *dst, int timeout_ms)
{
	return file_remote(file, peer, dst, remote, timeout_ms, false);
}
