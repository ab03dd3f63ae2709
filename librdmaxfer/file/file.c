// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * file.c - files as transfer endpoints: the engine (an io_uring of
 * liburing, or pread/pwrite), a file range read into or written from
 * local memory, and the staging pool of the remote legs (whose requests
 * are file_req.c's).
 *
 * A range is cut into chunks of chunk_size bytes and up to queue_depth of
 * them are in flight at once.  Everything that can be known before the
 * first I/O is checked first (a closed fd, a directory, a read-only fd as
 * destination, an offset past EOF, a file shorter than the range), so bad
 * input fails with -errno and a message without any I/O.  An fd opened
 * with O_DIRECT is used as such when the buffer, offset, length and chunk
 * size suit its alignment; otherwise the transfer goes through a second,
 * buffered fd of the same file and says so (RDMAXFER_FILE_RES_BUFFERED).
 * A short read or write is resubmitted for the rest of its chunk; a read
 * that reaches EOF (the file shrank under us) fails with -ENODATA; a
 * write is only reported done when every byte of the range was written,
 * and a failed one describes what it left (struct rdmaxfer_file_result).
 * Where io_uring is unavailable (kernel.io_uring_disabled, seccomp, an old
 * kernel) the engine falls back to pread/pwrite and says so in its
 * message, unless RDMAXFER_FILE_REQUIRE_URING asks it to fail instead.
 *
 * $RDMAXFER_FILE_INJECT (read at rdmaxfer_file_create()) injects one
 * failure for the tests: POINT[:N[:ERRNO]], the Nth time (default 1)
 * POINT is reached, with POINT one of register (the pool's registration),
 * regbuf (io_uring_register_buffers), submit (io_uring_submit fails;
 * ERRNO 11, EAGAIN, makes it a submit that consumed nothing), cqe (a
 * completion carries -ERRNO), short (a completion reports half its bytes)
 * and eof (a read completes with 0 bytes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

/* consecutive submits that consumed nothing before the request fails */
#define FILE_SUBMIT_STALLS	1000

static const char *const inject_names[] = {
	[INJ_REGISTER] = "register", [INJ_REGBUF] = "regbuf",
	[INJ_SUBMIT] = "submit", [INJ_CQE] = "cqe", [INJ_SHORT] = "short",
	[INJ_EOF] = "eof",
};

int rx_file_fail(struct rdmaxfer_file *file, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(file->msg, sizeof(file->msg), fmt, ap);
	va_end(ap);
	return err;
}

bool rx_file_inject(struct rdmaxfer_file *file,
			enum file_inject_point point)
{
	return file->inj.point == point && ++file->inj.seen == file->inj.nth;
}

static void file_inject_parse(struct rdmaxfer_file *file)
{
	const char *v = getenv("RDMAXFER_FILE_INJECT");
	char name[16];
	unsigned int i, nth = 1;
	int err = 0, n;

	if (!v || !*v)
		return;
	n = sscanf(v, "%15[a-z]:%u:%d", name, &nth, &err);
	if (n < 1 || !nth || err < 0)
		return;
	for (i = 1; i < sizeof(inject_names) / sizeof(inject_names[0]); i++)
		if (!strcmp(name, inject_names[i]))
			file->inj.point = i;
	file->inj.nth = nth;
	file->inj.err = err ? err : EIO;
	if (file->inj.point == INJ_REGISTER && !err)
		file->inj.err = ENOMEM;
}

/* Ring, fixed pool buffers and the agent's eventfd, as far as known. */
static int file_ring_setup(struct rdmaxfer_file *file)
{
	struct iovec *iov;
	uint32_t i;
	int ret;

	ret = io_uring_queue_init(file->qdepth, &file->ring, 0);
	if (ret < 0)
		return ret;
	file->uring = true;
	file->pool_fixed = false;
	if (!file->agent)
		return 0;
	/* a wait sleeping on the agent wakes for the disk too */
	io_uring_register_eventfd(&file->ring, file->agent->wake_fd);
	iov = calloc(file->qdepth, sizeof(*iov));
	if (!iov)
		return 0;	/* plain reads and writes into the pool */
	for (i = 0; i < file->qdepth; i++) {
		iov[i].iov_base = file->pool + (size_t)i * file->chunk;
		iov[i].iov_len = file->chunk;
	}
	/* fails under a small RLIMIT_MEMLOCK on old kernels: then unfixed */
	if (!rx_file_inject(file, INJ_REGBUF))
		file->pool_fixed = !io_uring_register_buffers(&file->ring, iov,
							     file->qdepth);
	free(iov);
	return 0;
}

/* Only with nothing in the kernel's hands: unsubmitted SQEs are dropped. */
void rx_file_ring_reset(struct rdmaxfer_file *file)
{
	io_uring_queue_exit(&file->ring);
	file->uring = false;
	if (file_ring_setup(file) < 0)
		file->uring = false;	/* pread/pwrite from now on */
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
	file->slots = calloc(file->qdepth, sizeof(*file->slots));
	if (!file->slots) {
		free(file);
		return -ENOMEM;
	}
	pthread_mutex_init(&file->lock, NULL);
	rx_list_init(&file->reqs);
	rx_list_init(&file->active_node);
	rx_list_init(&file->dep.node);
	file_inject_parse(file);
	if (flags & RDMAXFER_FILE_NO_URING) {
		snprintf(file->msg, sizeof(file->msg),
			 "pread/pwrite: io_uring not used (asked for)");
		*filep = file;
		return 0;
	}
	ret = file_ring_setup(file);
	if (ret < 0) {
		if (flags & RDMAXFER_FILE_REQUIRE_URING) {
			pthread_mutex_destroy(&file->lock);
			free(file->slots);
			free(file);
			return ret;
		}
		snprintf(file->msg, sizeof(file->msg),
			 "pread/pwrite fallback: io_uring_queue_init: %s%s",
			 strerror(-ret), ret == -EPERM ?
			 " (kernel.io_uring_disabled?)" : "");
	}
	*filep = file;
	return 0;
}

RX_EXPORT
void rdmaxfer_file_destroy(struct rdmaxfer_file *file)
{
	if (!file)
		return;
	rx_file_reqs_free(file);
	if (file->agent)
		rx_dep_del(file->agent, &file->dep);
	if (file->uring)
		io_uring_queue_exit(&file->ring);	/* unregisters the pool */
	if (file->pool_mem)
		rdmaxfer_mem_deregister(file->pool_mem);
	pthread_mutex_destroy(&file->lock);
	free(file->pool);
	free(file->slots);
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

RX_EXPORT
int rdmaxfer_file_query(struct rdmaxfer_file *file,
			struct rdmaxfer_file_info *info)
{
	if (!file || !info)
		return -EINVAL;
	pthread_mutex_lock(&file->lock);
	*info = file->info;
	info->backend = file->uring ? RDMAXFER_FILE_IO_URING :
				      RDMAXFER_FILE_PREAD;
	info->chunk_size = file->chunk;
	info->queue_depth = file->qdepth;
	info->fixed = file->pool_fixed;
	pthread_mutex_unlock(&file->lock);
	return 0;
}

/* Count a transfer that ended (lock held). */
void rx_file_account(struct rdmaxfer_file *file,
			 const struct rdmaxfer_file_result *res)
{
	struct rdmaxfer_file_info *in = &file->info;

	in->transfers++;
	in->failures += res->err != 0;
	in->cancels += res->stage == RDMAXFER_FILE_STAGE_CANCEL;
	in->bytes += res->done;
	in->direct += !!(res->flags & RDMAXFER_FILE_RES_DIRECT);
	in->dio_fallbacks += !!(res->flags & RDMAXFER_FILE_RES_BUFFERED);
	in->last = *res;
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

/*
 * A second fd of the file without O_DIRECT, for a range O_DIRECT cannot
 * take: reopened through /proc/self/fd (the caller's fd and its open file
 * description stay as they are), checked to be the same inode.
 */
static int file_reopen(struct rdmaxfer_file *file, int fd, int fl,
		       const char *why, int *ownp)
{
	struct stat a, b;
	char p[40];
	int nfd;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	nfd = open(p, (fl & (O_ACCMODE | O_SYNC | O_DSYNC)) | O_CLOEXEC);
	if (nfd < 0)
		return rx_file_fail(file, -EINVAL,
				 "fd %d: %s for O_DIRECT, and no buffered fd of the file: %s",
				 fd, why, strerror(errno));
	if (fstat(fd, &a) || fstat(nfd, &b) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		close(nfd);
		return rx_file_fail(file, -EINVAL,
				 "fd %d: %s for O_DIRECT, and %s is another file",
				 fd, why, p);
	}
	rx_file_fail(file, 0, "fd %d: %s for O_DIRECT: buffered I/O instead",
		  fd, why);
	*ownp = nfd;
	return 0;
}

/*
 * Everything about a range that can fail before any I/O.  *fdp gets the
 * fd to do the I/O on (d->fd, or a buffered one in *ownp, -1 if none) and
 * *flagsp the RDMAXFER_FILE_RES_* of the choice.
 */
int rx_file_check(struct rdmaxfer_file *file,
		      const struct rdmaxfer_file_desc *d, const void *buf,
		      bool write, int *fdp, int *ownp, uint32_t *flagsp)
{
	const char *what = write ? "destination" : "source";
	uint32_t mem_align, off_align;
	char why[96];
	struct stat st;
	int fl;

	*fdp = -1;
	*ownp = -1;
	*flagsp = 0;
	if (!d || !buf || !d->len)
		return rx_file_fail(file, -EINVAL, "%s: NULL or empty range",
				 what);
	if (d->offset > (uint64_t)INT64_MAX - d->len)
		return rx_file_fail(file, -EOVERFLOW,
				 "%s: offset %llu + len %llu overflows", what,
				 (unsigned long long)d->offset,
				 (unsigned long long)d->len);
	fl = fcntl(d->fd, F_GETFL);
	if (fl < 0 || fstat(d->fd, &st) < 0)
		return rx_file_fail(file, -errno, "%s: fd %d: %s", what, d->fd,
				 strerror(errno));
	if (S_ISDIR(st.st_mode))
		return rx_file_fail(file, -EISDIR, "%s: fd %d is a directory",
				 what, d->fd);
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return rx_file_fail(file, -ESPIPE,
				 "%s: fd %d is not a regular file or block device",
				 what, d->fd);
	if (write && (fl & O_ACCMODE) == O_RDONLY)
		return rx_file_fail(file, -EBADF, "%s: fd %d is open read-only",
				 what, d->fd);
	if (!write && (fl & O_ACCMODE) == O_WRONLY)
		return rx_file_fail(file, -EBADF, "%s: fd %d is open write-only",
				 what, d->fd);
	if (write && (fl & O_APPEND))
		return rx_file_fail(file, -EINVAL,
				 "%s: fd %d has O_APPEND, offsets would be ignored",
				 what, d->fd);
	if (!write && S_ISREG(st.st_mode)) {
		if (d->offset > (uint64_t)st.st_size)
			return rx_file_fail(file, -ENXIO,
					 "%s: offset %llu is past EOF (size %llu)",
					 what, (unsigned long long)d->offset,
					 (unsigned long long)st.st_size);
		if (d->offset + d->len > (uint64_t)st.st_size)
			return rx_file_fail(file, -ENODATA,
					 "%s: file size %llu is short of the range end %llu",
					 what, (unsigned long long)st.st_size,
					 (unsigned long long)(d->offset + d->len));
	}
	*fdp = d->fd;
	if (!(fl & O_DIRECT))
		return 0;
	file_dio_align(d->fd, &mem_align, &off_align);
	why[0] = '\0';
	if ((uintptr_t)buf % mem_align || file->chunk % mem_align)
		snprintf(why, sizeof(why), "buffer or chunk size not aligned to %u bytes",
			 mem_align);
	else if (d->offset % off_align || d->len % off_align ||
		 file->chunk % off_align)
		snprintf(why, sizeof(why),
			 "offset, length or chunk size not aligned to %u bytes",
			 off_align);
	if (!why[0]) {
		*flagsp = RDMAXFER_FILE_RES_DIRECT;
		return 0;
	}
	*flagsp = RDMAXFER_FILE_RES_BUFFERED;
	if (file_reopen(file, d->fd, fl, why, ownp))
		return -EINVAL;
	*fdp = *ownp;
	return 0;
}

/* What a completion (or pread/pwrite) reports, after any injection. */
int rx_file_res(struct rdmaxfer_file *file, bool write, int res,
		    uint32_t want)
{
	if (res > 1 && (uint32_t)res == want && rx_file_inject(file, INJ_SHORT))
		res /= 2;
	else if (rx_file_inject(file, INJ_CQE))
		res = -file->inj.err;
	else if (!write && res > 0 && rx_file_inject(file, INJ_EOF))
		res = 0;
	if (res > 0 && (uint32_t)res < want)
		file->info.short_ios++;
	return res;
}

/* An I/O result that ends its chunk badly: its -errno, else 0. */
int rx_file_res_err(bool write, int res)
{
	if (res < 0)
		return res;
	return res ? 0 : write ? -EIO : -ENODATA;
}

int rx_file_pio(struct rdmaxfer_file *file, int fd,
		    const struct rdmaxfer_file_desc *d, char *buf, bool write,
		    uint64_t *donep)
{
	uint64_t done = 0;
	ssize_t n;
	int ret;

	while (done < d->len) {
		size_t len = d->len - done;

		if (len > file->chunk)
			len = file->chunk;
		if (write)
			n = pwrite(fd, buf + done, len, d->offset + done);
		else
			n = pread(fd, buf + done, len, d->offset + done);
		if (n < 0 && errno == EINTR)
			continue;
		ret = rx_file_res(file, write, n < 0 ? -errno : (int)n,
			       (uint32_t)len);
		if (rx_file_res_err(write, ret)) {
			*donep = done;
			ret = rx_file_res_err(write, ret);
			return rx_file_fail(file, ret, "%s at offset %llu: %s",
					 write ? "pwrite" : "pread",
					 (unsigned long long)(d->offset + done),
					 ret == -ENODATA ? "EOF" :
					 ret == -EIO && !n ? "wrote nothing" :
					 strerror(-ret));
		}
		done += ret;
	}
	*donep = done;
	return 0;
}

void rx_file_queue(struct rdmaxfer_file *file, int fd, struct file_io *io,
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
	io->busy = true;
}

/*
 * Submit what is queued.  A submit that consumed only some SQEs (or none:
 * -EAGAIN, -EBUSY, -EINTR) leaves the rest queued for the next call; only
 * FILE_SUBMIT_STALLS of those in a row, or another error, fail.
 */
int rx_file_submit(struct rdmaxfer_file *file)
{
	unsigned int queued = io_uring_sq_ready(&file->ring);
	int ret;

	if (!queued)
		return 0;
	if (rx_file_inject(file, INJ_SUBMIT))
		ret = -file->inj.err;
	else
		ret = io_uring_submit(&file->ring);
	if (ret > 0) {
		file->stalls = 0;
		return 0;
	}
	if ((ret == 0 || ret == -EAGAIN || ret == -EBUSY || ret == -EINTR) &&
	    ++file->stalls < FILE_SUBMIT_STALLS)
		return 0;
	file->stalls = 0;
	return ret ? ret : -EAGAIN;
}

/*
 * Keep up to qdepth chunks in flight.  On the first error no new chunk is
 * queued, the ones in flight are reaped (their buffers are the caller's),
 * and that first error is returned.
 */
static int file_uring_io(struct rdmaxfer_file *file, int fd,
			 const struct rdmaxfer_file_desc *d, char *buf,
			 bool write, struct rdmaxfer_file_result *res)
{
	const char *op = write ? "write" : "read";
	struct file_io *ios, *io;
	uint64_t next = 0, fail_pos = UINT64_MAX;
	unsigned int inflight = 0, i;
	struct io_uring_cqe *cqe;
	bool dead = false;
	int err = 0, ret;

	ios = calloc(file->qdepth, sizeof(*ios));
	if (!ios)
		return rx_file_fail(file, -ENOMEM, "out of memory");
	for (i = 0; i < file->qdepth && next < d->len; i++) {
		io = &ios[i];
		io->off = d->offset + next;
		io->buf = buf + next;
		io->len = d->len - next < file->chunk ? d->len - next :
			  file->chunk;
		next += io->len;
		rx_file_queue(file, fd, io, write);
		inflight++;
	}
	while (inflight) {
		if (!dead) {
			ret = rx_file_submit(file);
			if (ret < 0) {
				err = rx_file_fail(file, ret, "io_uring_submit: %s",
						strerror(-ret));
				res->stage = RDMAXFER_FILE_STAGE_SUBMIT;
				dead = true;
			}
		}
		if (io_uring_sq_ready(&file->ring) >= inflight) {
			if (!dead)
				continue;	/* nothing in the kernel yet */
			/* only the unsubmitted are left: drop them */
			rx_file_ring_reset(file);
			for (i = 0; i < file->qdepth; i++)
				if (ios[i].busy)
					rx_file_fail_at(&fail_pos, ios[i].off -
						d->offset + ios[i].done);
			break;
		}
		ret = io_uring_wait_cqe(&file->ring, &cqe);
		if (ret == -EINTR)
			continue;
		if (ret < 0) {
			/*
			 * The ring cannot be trusted to drain: tearing it
			 * down cancels what is in flight.
			 */
			err = rx_file_fail(file, ret, "io_uring: %s",
					strerror(-ret));
			res->stage = RDMAXFER_FILE_STAGE_SUBMIT;
			rx_file_ring_reset(file);
			rx_file_fail_at(&fail_pos, 0);
			break;
		}
		io = io_uring_cqe_get_data(cqe);
		ret = rx_file_res(file, write, cqe->res, io->len - io->done);
		io_uring_cqe_seen(&file->ring, cqe);
		inflight--;
		io->busy = false;
		if (rx_file_res_err(write, ret) && !err) {
			err = rx_file_fail(file, rx_file_res_err(write, ret),
					"%s at offset %llu: %s", op,
					(unsigned long long)(io->off + io->done),
					ret == 0 ? (write ? "wrote nothing" :
						    "EOF") : strerror(-ret));
			res->stage = RDMAXFER_FILE_STAGE_IO;
		}
		if (ret > 0)
			io->done += ret;
		if (err) {
			if (io->done < io->len)
				rx_file_fail_at(&fail_pos, io->off - d->offset +
					io->done);
			res->done += io->done == io->len ? io->len : 0;
			continue;
		}
		if (io->done < io->len) {	/* short: the rest again */
			rx_file_queue(file, fd, io, write);
			inflight++;
			continue;
		}
		res->done += io->len;
		if (next < d->len) {
			io->off = d->offset + next;
			io->buf = buf + next;
			io->done = 0;
			io->len = d->len - next < file->chunk ? d->len - next :
				  file->chunk;
			next += io->len;
			rx_file_queue(file, fd, io, write);
			inflight++;
		}
	}
	free(ios);
	res->prefix = next < fail_pos ? next : fail_pos;
	return err;
}

static int file_io(struct rdmaxfer_file *file,
		   const struct rdmaxfer_file_desc *d, char *buf, bool write)
{
	struct rdmaxfer_file_result res = { 0 };
	int ret, fd, own;

	if (!file)
		return -EINVAL;
	pthread_mutex_lock(&file->lock);
	file->msg[0] = '\0';
	if (file->active) {
		ret = rx_file_fail(file, -EBUSY,
				"a request of this engine is in progress");
		goto out;
	}
	ret = rx_file_check(file, d, buf, write, &fd, &own, &res.flags);
	if (ret)
		goto out;
	res.len = d->len;
	if (file->uring) {
		ret = file_uring_io(file, fd, d, buf, write, &res);
	} else {
		ret = rx_file_pio(file, fd, d, buf, write, &res.done);
		res.prefix = res.done;
		if (ret)
			res.stage = RDMAXFER_FILE_STAGE_IO;
	}
	if (own >= 0)
		close(own);
	res.err = ret;
	rx_file_account(file, &res);
out:
	pthread_mutex_unlock(&file->lock);
	return ret;
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

/* ------------------------------------------------------ the staging pool */

/*
 * The agent is being destroyed with the engine bound to it: its peers,
 * the engine's requests and (next) the pool's handle go with it.  Nothing
 * can reach the pool any more, so it goes too, and the engine is as it
 * was before its first remote transfer: local I/O goes on, and a later
 * remote transfer binds it to another agent.
 */
static void file_agent_gone(struct rx_dep *dep)
{
	struct rdmaxfer_file *file = rx_container_of(dep, struct rdmaxfer_file,
						     dep);

	pthread_mutex_lock(&file->lock);
	file->pool_mem = NULL;
	file->agent = NULL;
	/* the fixed buffers and the agent's eventfd off the ring */
	if (file->uring)
		rx_file_ring_reset(file);
	free(file->pool);
	file->pool = NULL;
	pthread_mutex_unlock(&file->lock);
}

/*
 * The staging pool, made on the first remote transfer of an agent: one
 * registration through its cache (local access only: the RDMA WRITE or
 * READ is this side's) and the same chunks as io_uring fixed buffers.
 */
int rx_file_pool(struct rdmaxfer_file *file, struct rdmaxfer_agent *agent)
{
	size_t len = (size_t)file->qdepth * file->chunk;
	int ret;

	if (file->agent == agent)
		return 0;
	if (file->agent)
		return rx_file_fail(file, -EINVAL,
				 "the staging pool belongs to another agent");
	if (posix_memalign((void **)&file->pool, 4096, len))
		return rx_file_fail(file, -ENOMEM, "staging pool: out of memory");
	if (rx_file_inject(file, INJ_REGISTER))
		ret = -file->inj.err;
	else
		ret = rdmaxfer_mem_register_access(agent, file->pool, len,
						   RDMAXFER_MEM_HOST, 0,
						   &file->pool_mem);
	if (ret) {
		free(file->pool);
		file->pool = NULL;
		return rx_file_fail(file, ret, "staging pool registration: %s",
				 strerror(-ret));
	}
	file->agent = agent;
	rx_dep_add(agent, &file->dep, file_agent_gone);
	/* again, with the pool and the agent's eventfd this time */
	if (file->uring)
		rx_file_ring_reset(file);
	return 0;
}
