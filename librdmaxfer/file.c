// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * file.c - files as transfer endpoints: a file range read into or written
 * from local memory through io_uring (liburing), and moved to or from a
 * remote peer as a request (struct rdmaxfer_req) through a staging pool.
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
 * A file request is a state machine stepped by the caller's test, wait and
 * progress calls (never by the agent's progress thread): each step reaps
 * io_uring completions and the RDMA legs' requests, starts chunks in idle
 * slots and submits.  The engine's io_uring signals the agent's wake
 * eventfd, so a wait sleeps on the completion channel and the disk alike.
 * Locks: the engine's own (file->lock) before the agent's.
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
#include <liburing.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* consecutive submits that consumed nothing before the request fails */
#define FILE_SUBMIT_STALLS	1000

enum file_inject_point {
	INJ_NONE, INJ_REGISTER, INJ_REGBUF, INJ_SUBMIT, INJ_CQE, INJ_SHORT,
	INJ_EOF,
};

static const char *const inject_names[] = {
	[INJ_REGISTER] = "register", [INJ_REGBUF] = "regbuf",
	[INJ_SUBMIT] = "submit", [INJ_CQE] = "cqe", [INJ_SHORT] = "short",
	[INJ_EOF] = "eof",
};

/* One chunk in flight: where it goes and how much of it is done. */
struct file_io {
	uint64_t off;
	char *buf;
	uint32_t len;
	uint32_t done;
	bool busy;		/* queued or in flight */
};

enum slot_state { SLOT_IDLE, SLOT_FILE, SLOT_NET };

/* A chunk of the staging pool and what its chunk is doing. */
struct file_slot {
	enum slot_state state;
	struct file_io io;
	struct rdmaxfer_req *req;	/* the RDMA leg (SLOT_NET) */
	uint64_t pos;			/* offset of the chunk in the range */
};

struct rdmaxfer_file {
	pthread_mutex_t lock;
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
	struct file_slot *slots;	/* qdepth, of the active request */
	struct rx_list reqs;		/* struct rx_file_req prepared */
	struct rx_file_req *active;	/* the request in progress */
	struct rx_list active_node;	/* agent->file_active (its lock) */
	uint64_t round;			/* rx_file_progress() pass */
	unsigned int stalls;		/* submits in a row consuming none */
	struct {
		enum file_inject_point point;
		unsigned int nth, seen;
		int err;
	} inj;
	struct rdmaxfer_file_info info;	/* counters and the last result */
	char msg[RDMAXFER_FILE_MSG_MAX];
};

struct rx_file_req {
	struct rdmaxfer_req *req;	/* the public handle */
	struct rdmaxfer_file *file;
	struct rx_list node;		/* file->reqs */
	bool to_peer;
	struct rdmaxfer_file_desc d;
	struct rdmaxfer_desc remote;
	enum rx_req_state state;
	/* one post */
	int fd;				/* d.fd, or own_fd */
	int own_fd;			/* the buffered fd of a misaligned
					 * O_DIRECT range, else -1 */
	uint64_t next;			/* first byte not started */
	uint64_t fail_pos;		/* first byte a failed chunk left */
	unsigned int inflight;		/* slots not idle */
	bool submit_dead;		/* a submit failed: drain, reset */
	bool cancel;
	bool peer_failed;		/* the cancel escalated */
	int64_t cancel_deadline;
	struct rdmaxfer_file_result res;
	char msg[RDMAXFER_FILE_MSG_MAX];
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

/* The request's first error wins; its message goes to both places. */
static void __attribute__((format(printf, 4, 5)))
fr_fail(struct rx_file_req *fr, int err, enum rdmaxfer_file_stage stage,
	const char *fmt, ...)
{
	va_list ap;

	if (fr->res.err)
		return;
	fr->res.err = err;
	fr->res.stage = stage;
	va_start(ap, fmt);
	vsnprintf(fr->msg, sizeof(fr->msg), fmt, ap);
	va_end(ap);
	memcpy(fr->file->msg, fr->msg, sizeof(fr->msg));
}

static bool file_inject(struct rdmaxfer_file *file,
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
	if (!file_inject(file, INJ_REGBUF))
		file->pool_fixed = !io_uring_register_buffers(&file->ring, iov,
							     file->qdepth);
	free(iov);
	return 0;
}

/* Only with nothing in the kernel's hands: unsubmitted SQEs are dropped. */
static void file_ring_reset(struct rdmaxfer_file *file)
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
	struct rx_file_req *fr;

	if (!file)
		return;
	/* the engine's requests go with it, the one in progress cancelled
	 * and waited for (bounded, as rdmaxfer_req_cancel() says) */
	pthread_mutex_lock(&file->lock);
	while (!rx_list_empty(&file->reqs)) {
		fr = rx_container_of(file->reqs.next, struct rx_file_req, node);
		pthread_mutex_unlock(&file->lock);
		if (rdmaxfer_req_cancel(fr->req) == 0)
			rdmaxfer_req_wait(fr->req, -1);
		rdmaxfer_req_free(fr->req);
		pthread_mutex_lock(&file->lock);
	}
	pthread_mutex_unlock(&file->lock);
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
static void file_account(struct rdmaxfer_file *file,
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
		return file_fail(file, -EINVAL,
				 "fd %d: %s for O_DIRECT, and no buffered fd of the file: %s",
				 fd, why, strerror(errno));
	if (fstat(fd, &a) || fstat(nfd, &b) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		close(nfd);
		return file_fail(file, -EINVAL,
				 "fd %d: %s for O_DIRECT, and %s is another file",
				 fd, why, p);
	}
	file_fail(file, 0, "fd %d: %s for O_DIRECT: buffered I/O instead",
		  fd, why);
	*ownp = nfd;
	return 0;
}

/*
 * Everything about a range that can fail before any I/O.  *fdp gets the
 * fd to do the I/O on (d->fd, or a buffered one in *ownp, -1 if none) and
 * *flagsp the RDMAXFER_FILE_RES_* of the choice.
 */
static int file_check(struct rdmaxfer_file *file,
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
static int file_res(struct rdmaxfer_file *file, bool write, int res,
		    uint32_t want)
{
	if (res > 1 && (uint32_t)res == want && file_inject(file, INJ_SHORT))
		res /= 2;
	else if (file_inject(file, INJ_CQE))
		res = -file->inj.err;
	else if (!write && res > 0 && file_inject(file, INJ_EOF))
		res = 0;
	if (res > 0 && (uint32_t)res < want)
		file->info.short_ios++;
	return res;
}

/* An I/O result that ends its chunk badly: its -errno, else 0. */
static int file_res_err(bool write, int res)
{
	if (res < 0)
		return res;
	return res ? 0 : write ? -EIO : -ENODATA;
}

static int file_pio(struct rdmaxfer_file *file, int fd,
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
		ret = file_res(file, write, n < 0 ? -errno : (int)n,
			       (uint32_t)len);
		if (file_res_err(write, ret)) {
			*donep = done;
			ret = file_res_err(write, ret);
			return file_fail(file, ret, "%s at offset %llu: %s",
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
	io->busy = true;
}

/*
 * Submit what is queued.  A submit that consumed only some SQEs (or none:
 * -EAGAIN, -EBUSY, -EINTR) leaves the rest queued for the next call; only
 * FILE_SUBMIT_STALLS of those in a row, or another error, fail.
 */
static int file_submit(struct rdmaxfer_file *file)
{
	unsigned int queued = io_uring_sq_ready(&file->ring);
	int ret;

	if (!queued)
		return 0;
	if (file_inject(file, INJ_SUBMIT))
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

/* The range's first byte a chunk that ended at pos + done left undone. */
static void fail_at(uint64_t *fail_pos, uint64_t pos)
{
	if (pos < *fail_pos)
		*fail_pos = pos;
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
		return file_fail(file, -ENOMEM, "out of memory");
	for (i = 0; i < file->qdepth && next < d->len; i++) {
		io = &ios[i];
		io->off = d->offset + next;
		io->buf = buf + next;
		io->len = d->len - next < file->chunk ? d->len - next :
			  file->chunk;
		next += io->len;
		file_queue(file, fd, io, write);
		inflight++;
	}
	while (inflight) {
		if (!dead) {
			ret = file_submit(file);
			if (ret < 0) {
				err = file_fail(file, ret, "io_uring_submit: %s",
						strerror(-ret));
				res->stage = RDMAXFER_FILE_STAGE_SUBMIT;
				dead = true;
			}
		}
		if (io_uring_sq_ready(&file->ring) >= inflight) {
			if (!dead)
				continue;	/* nothing in the kernel yet */
			/* only the unsubmitted are left: drop them */
			file_ring_reset(file);
			for (i = 0; i < file->qdepth; i++)
				if (ios[i].busy)
					fail_at(&fail_pos, ios[i].off -
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
			err = file_fail(file, ret, "io_uring: %s",
					strerror(-ret));
			res->stage = RDMAXFER_FILE_STAGE_SUBMIT;
			file_ring_reset(file);
			fail_at(&fail_pos, 0);
			break;
		}
		io = io_uring_cqe_get_data(cqe);
		ret = file_res(file, write, cqe->res, io->len - io->done);
		io_uring_cqe_seen(&file->ring, cqe);
		inflight--;
		io->busy = false;
		if (file_res_err(write, ret) && !err) {
			err = file_fail(file, file_res_err(write, ret),
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
				fail_at(&fail_pos, io->off - d->offset +
					io->done);
			res->done += io->done == io->len ? io->len : 0;
			continue;
		}
		if (io->done < io->len) {	/* short: the rest again */
			file_queue(file, fd, io, write);
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
			file_queue(file, fd, io, write);
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
		ret = file_fail(file, -EBUSY,
				"a request of this engine is in progress");
		goto out;
	}
	ret = file_check(file, d, buf, write, &fd, &own, &res.flags);
	if (ret)
		goto out;
	res.len = d->len;
	if (file->uring) {
		ret = file_uring_io(file, fd, d, buf, write, &res);
	} else {
		ret = file_pio(file, fd, d, buf, write, &res.done);
		res.prefix = res.done;
		if (ret)
			res.stage = RDMAXFER_FILE_STAGE_IO;
	}
	if (own >= 0)
		close(own);
	res.err = ret;
	file_account(file, &res);
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

/* ------------------------------------------------------ the remote legs */

/*
 * The staging pool, made on the first remote transfer of an agent: one
 * registration through its cache (local access only: the RDMA WRITE or
 * READ is this side's) and the same chunks as io_uring fixed buffers.
 */
static int file_pool(struct rdmaxfer_file *file, struct rdmaxfer_agent *agent)
{
	size_t len = (size_t)file->qdepth * file->chunk;
	int ret;

	if (file->agent == agent)
		return 0;
	if (file->agent)
		return file_fail(file, -EINVAL,
				 "the staging pool belongs to another agent");
	if (posix_memalign((void **)&file->pool, 4096, len))
		return file_fail(file, -ENOMEM, "staging pool: out of memory");
	if (file_inject(file, INJ_REGISTER))
		ret = -file->inj.err;
	else
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
	/* again, with the pool and the agent's eventfd this time */
	if (file->uring)
		file_ring_reset(file);
	return 0;
}

RX_EXPORT
int rdmaxfer_file_prepare(struct rdmaxfer_file *file,
			  struct rdmaxfer_peer *peer, enum rdmaxfer_op op,
			  const struct rdmaxfer_file_desc *range,
			  const struct rdmaxfer_desc *remote,
			  struct rdmaxfer_req **reqp)
{
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_req *req;
	struct rx_file_req *fr;
	int ret;

	if (!file)
		return -EINVAL;
	pthread_mutex_lock(&file->lock);
	file->msg[0] = '\0';
	if (!peer || !remote || !range || !reqp) {
		ret = file_fail(file, -EINVAL,
				"NULL peer, range, remote descriptor or request");
		goto out;
	}
	*reqp = NULL;
	if (op != RDMAXFER_OP_READ && op != RDMAXFER_OP_WRITE) {
		ret = file_fail(file, -EINVAL,
				"op %d: RDMAXFER_OP_WRITE (file to remote) or RDMAXFER_OP_READ only",
				(int)op);
		goto out;
	}
	if (!range->len) {
		ret = file_fail(file, -EINVAL, "empty range");
		goto out;
	}
	if (remote->len < range->len) {
		ret = file_fail(file, -ERANGE,
				"remote descriptor of %llu bytes is smaller than the file range of %llu",
				(unsigned long long)remote->len,
				(unsigned long long)range->len);
		goto out;
	}
	agent = peer->agent;
	if (file->agent && file->agent != agent) {
		ret = file_fail(file, -EINVAL,
				"the staging pool belongs to another agent");
		goto out;
	}
	pthread_mutex_lock(&agent->lock);
	ret = rx_check_remote(peer, remote->addr, range->len, remote->rkey);
	pthread_mutex_unlock(&agent->lock);
	if (ret) {
		file_fail(file, ret, "remote range outside the peer's exports");
		goto out;
	}
	req = calloc(1, sizeof(*req));
	fr = calloc(1, sizeof(*fr));
	if (!req || !fr) {
		free(req);
		free(fr);
		ret = file_fail(file, -ENOMEM, "out of memory");
		goto out;
	}
	req->peer = peer;
	req->op = op;
	req->state = RX_REQ_IDLE;
	req->wc_status = -1;
	req->bytes = range->len;
	req->file = fr;
	fr->req = req;
	fr->file = file;
	fr->to_peer = op == RDMAXFER_OP_WRITE;
	fr->d = *range;
	fr->remote = *remote;
	fr->state = RX_REQ_IDLE;
	fr->own_fd = -1;
	rx_list_add_tail(&file->reqs, &fr->node);
	pthread_mutex_lock(&agent->lock);
	peer->nreqs++;
	rx_list_add_tail(&agent->reqs, &req->node);
	pthread_mutex_unlock(&agent->lock);
	*reqp = req;
out:
	pthread_mutex_unlock(&file->lock);
	return ret;
}

static uint64_t fr_prefix(const struct rx_file_req *fr)
{
	const struct rdmaxfer_file *file = fr->file;
	uint64_t p = fr->next < fr->fail_pos ? fr->next : fr->fail_pos;
	uint32_t i;

	for (i = 0; i < file->qdepth; i++)
		if (file->slots[i].state != SLOT_IDLE &&
		    file->slots[i].pos < p)
			p = file->slots[i].pos;
	return p;
}

/* A slot's chunk ended (ok: all of it reached the destination). */
static void slot_end(struct rx_file_req *fr, struct file_slot *sl, bool ok)
{
	if (ok)
		fr->res.done += sl->io.len;
	else
		fail_at(&fr->fail_pos, sl->pos + (fr->to_peer ? 0 :
						  sl->io.done));
	sl->state = SLOT_IDLE;
	sl->io.busy = false;
	fr->inflight--;
}

static void slot_file_io(struct rx_file_req *fr, struct file_slot *sl)
{
	struct rdmaxfer_file *file = fr->file;
	struct file_io *io = &sl->io;
	bool write = !fr->to_peer;
	struct io_uring_sqe *sqe;

	sl->state = SLOT_FILE;
	if (!file->pool_fixed) {
		file_queue(file, fr->fd, io, write);
		return;
	}
	sqe = io_uring_get_sqe(&file->ring);
	if (write)
		io_uring_prep_write_fixed(sqe, fr->fd, io->buf + io->done,
					  io->len - io->done,
					  io->off + io->done,
					  (int)(sl - file->slots));
	else
		io_uring_prep_read_fixed(sqe, fr->fd, io->buf + io->done,
					 io->len - io->done,
					 io->off + io->done,
					 (int)(sl - file->slots));
	io_uring_sqe_set_data(sqe, io);
	io->busy = true;
}

/* Start the network leg of a slot whose chunk is in (or due to) the pool. */
static void slot_net(struct rx_file_req *fr, struct file_slot *sl)
{
	enum rdmaxfer_op op = fr->to_peer ? RDMAXFER_OP_WRITE :
					    RDMAXFER_OP_READ;
	struct rdmaxfer_iov iov = { sl->io.buf, sl->io.len };
	struct rdmaxfer_peer *peer = fr->req->peer;
	struct rdmaxfer_desc rd;
	int ret;

	ret = rdmaxfer_desc_sub(&fr->remote, sl->pos, sl->io.len, &rd);
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
	if (ret) {
		fr_fail(fr, ret, RDMAXFER_FILE_STAGE_NET,
			"RDMA %s at offset %llu: %s",
			fr->to_peer ? "WRITE" : "READ",
			(unsigned long long)sl->pos, strerror(-ret));
		slot_end(fr, sl, false);
		return;
	}
	sl->state = SLOT_NET;
}

/* The file part of a slot is done, or failed. */
static void slot_file_done(struct rx_file_req *fr, struct file_slot *sl)
{
	if (fr->to_peer && !fr->res.err)
		slot_net(fr, sl);
	else
		slot_end(fr, sl, !fr->to_peer && sl->io.done == sl->io.len);
}

/* Synchronous file I/O of one slot for the pread/pwrite backend. */
static void slot_pio(struct rx_file_req *fr, struct file_slot *sl)
{
	struct rdmaxfer_file_desc d = { fr->fd, sl->io.off, sl->io.len };
	uint64_t done = 0;
	int ret;

	sl->state = SLOT_FILE;
	ret = file_pio(fr->file, fr->fd, &d, sl->io.buf, !fr->to_peer, &done);
	sl->io.done = (uint32_t)done;
	if (ret)
		fr_fail(fr, ret, RDMAXFER_FILE_STAGE_IO, "%s", fr->file->msg);
	slot_file_done(fr, sl);
}

/* Reap one io_uring completion into its slot. */
static void slot_reap(struct rx_file_req *fr, struct io_uring_cqe *cqe)
{
	struct rdmaxfer_file *file = fr->file;
	struct file_io *io = io_uring_cqe_get_data(cqe);
	struct file_slot *sl = rx_container_of(io, struct file_slot, io);
	bool write = !fr->to_peer;
	int res;

	res = file_res(file, write, cqe->res, io->len - io->done);
	io_uring_cqe_seen(&file->ring, cqe);
	io->busy = false;
	if (sl->state != SLOT_FILE)
		return;		/* not ours: a request that was torn down */
	if (file_res_err(write, res)) {
		res = file_res_err(write, res);
		fr_fail(fr, res, RDMAXFER_FILE_STAGE_IO,
			"%s at offset %llu: %s", write ? "write" : "read",
			(unsigned long long)(io->off + io->done),
			res == -ENODATA ? "EOF" : res == -EIO && !cqe->res ?
			"wrote nothing" : strerror(-res));
		slot_end(fr, sl, false);
		return;
	}
	io->done += res;
	if (io->done < io->len && !fr->res.err) {
		slot_file_io(fr, sl);	/* short: the rest again */
		return;
	}
	slot_file_done(fr, sl);
}

/* Start the chunks of idle slots (not after an error or a cancel). */
static bool fr_start(struct rx_file_req *fr)
{
	struct rdmaxfer_file *file = fr->file;
	struct file_slot *sl;
	bool busy = false;
	uint32_t i;

	for (i = 0; i < file->qdepth && fr->next < fr->d.len; i++) {
		sl = &file->slots[i];
		if (fr->res.err)
			break;
		if (sl->state != SLOT_IDLE)
			continue;
		sl->pos = fr->next;
		sl->io = (struct file_io){
			.off = fr->d.offset + fr->next,
			.buf = file->pool + (size_t)i * file->chunk,
			.len = fr->d.len - fr->next < file->chunk ?
			       fr->d.len - fr->next : file->chunk,
		};
		sl->req = NULL;
		fr->next += sl->io.len;
		fr->inflight++;
		busy = true;
		if (!fr->to_peer)
			slot_net(fr, sl);
		else if (!file->uring)
			slot_pio(fr, sl);
		else
			slot_file_io(fr, sl);
	}
	return busy;
}

/* Lock held: the RDMA legs of the request and whether one has ended. */
static bool fr_net_ended_locked(const struct rx_file_req *fr, bool *any)
{
	const struct rdmaxfer_file *file = fr->file;
	uint32_t i;

	*any = false;
	for (i = 0; i < file->qdepth; i++) {
		if (file->slots[i].state != SLOT_NET)
			continue;
		*any = true;
		if (file->slots[i].req->state != RX_REQ_ACTIVE)
			return true;
	}
	return false;
}

static void fr_finish(struct rx_file_req *fr)
{
	struct rdmaxfer_file *file = fr->file;
	struct rdmaxfer_agent *agent = fr->req->peer->agent;

	if (fr->own_fd >= 0)
		close(fr->own_fd);
	fr->own_fd = -1;
	fr->res.prefix = fr_prefix(fr);
	fr->state = fr->res.err ? RX_REQ_FAILED : RX_REQ_DONE;
	file->active = NULL;
	pthread_mutex_lock(&agent->lock);
	rx_list_del(&file->active_node);
	pthread_mutex_unlock(&agent->lock);
	file_account(file, &fr->res);
}

/*
 * One non-blocking turn of an active request (engine lock held): reap the
 * disk and the network, start chunks, submit, end when nothing is left in
 * flight.  Returns whether anything moved.
 */
static bool fr_step(struct rx_file_req *fr)
{
	struct rdmaxfer_file *file = fr->file;
	struct rdmaxfer_agent *agent = fr->req->peer->agent;
	struct io_uring_cqe *cqe;
	struct file_slot *sl;
	bool busy = false, any;
	uint32_t i;
	int ret;

	while (file->uring && io_uring_peek_cqe(&file->ring, &cqe) == 0) {
		busy = true;
		slot_reap(fr, cqe);
	}
	for (i = 0; i < file->qdepth; i++) {
		sl = &file->slots[i];
		if (sl->state != SLOT_NET)
			continue;
		ret = rdmaxfer_req_test(sl->req);
		if (ret == -EINPROGRESS)
			continue;
		busy = true;
		rdmaxfer_req_free(sl->req);
		sl->req = NULL;
		if (ret) {
			fr_fail(fr, ret, RDMAXFER_FILE_STAGE_NET,
				"RDMA %s at offset %llu: %s",
				fr->to_peer ? "WRITE" : "READ",
				(unsigned long long)sl->pos, strerror(-ret));
			slot_end(fr, sl, false);
		} else if (fr->to_peer || fr->res.err) {
			slot_end(fr, sl, fr->to_peer);
		} else if (!file->uring) {
			slot_pio(fr, sl);
		} else {
			slot_file_io(fr, sl);
		}
	}
	/* a cancelled request whose legs do not come back in time: the
	 * peer is not answering; failing it flushes them */
	if (fr->cancel && !fr->peer_failed &&
	    rx_now_ns() >= fr->cancel_deadline) {
		pthread_mutex_lock(&agent->lock);
		fr_net_ended_locked(fr, &any);
		if (any) {
			rx_peer_fail(fr->req->peer, -ECANCELED);
			fr->peer_failed = true;
		}
		pthread_mutex_unlock(&agent->lock);
	}
	if (!fr->submit_dead && !fr->cancel)
		busy |= fr_start(fr);
	if (file->uring && !fr->submit_dead) {
		ret = file_submit(file);
		if (ret < 0) {
			fr_fail(fr, ret, RDMAXFER_FILE_STAGE_SUBMIT,
				"io_uring_submit: %s", strerror(-ret));
			fr->submit_dead = true;
			busy = true;
		}
	}
	if (fr->submit_dead) {
		unsigned int nfile = 0;

		for (i = 0; i < file->qdepth; i++)
			nfile += file->slots[i].state == SLOT_FILE;
		/* only the unsubmitted are left on the disk side */
		if (nfile && io_uring_sq_ready(&file->ring) >= nfile) {
			file_ring_reset(file);
			for (i = 0; i < file->qdepth; i++)
				if (file->slots[i].state == SLOT_FILE)
					slot_end(fr, &file->slots[i], false);
			fr->submit_dead = false;
			busy = true;
		}
	}
	if (!fr->inflight && (fr->res.err || fr->next >= fr->d.len))
		fr_finish(fr);
	return busy;
}

int rx_file_req_post(struct rdmaxfer_req *req)
{
	struct rx_file_req *fr = req->file;
	struct rdmaxfer_file *file = fr->file;
	struct rdmaxfer_peer *peer = req->peer;
	struct rdmaxfer_agent *agent = peer->agent;
	uint32_t flags;
	int ret, fd, own;

	pthread_mutex_lock(&file->lock);
	file->msg[0] = '\0';
	if (fr->state == RX_REQ_ACTIVE || file->active) {
		ret = file_fail(file, -EBUSY, "%s",
				fr->state == RX_REQ_ACTIVE ?
				"the request is in progress" :
				"another request of this engine is in progress");
		goto out;
	}
	pthread_mutex_lock(&agent->lock);
	ret = peer->state == RDMAXFER_PEER_CONNECTED ? 0 : -ENOTCONN;
	pthread_mutex_unlock(&agent->lock);
	if (ret) {
		file_fail(file, ret, "the peer is not connected");
		goto out;
	}
	/* the buffers are pool chunks: page-aligned, chunk_size apart */
	ret = file_check(file, &fr->d, (const void *)(uintptr_t)4096,
			 !fr->to_peer, &fd, &own, &flags);
	if (!ret)
		ret = file_pool(file, agent);
	if (ret) {
		if (own >= 0)
			close(own);
		goto out;
	}
	fr->fd = fd;
	fr->own_fd = own;
	fr->next = 0;
	fr->fail_pos = UINT64_MAX;
	fr->inflight = 0;
	fr->submit_dead = false;
	fr->cancel = false;
	fr->peer_failed = false;
	fr->msg[0] = '\0';
	fr->res = (struct rdmaxfer_file_result){
		.len = fr->d.len, .flags = flags,
	};
	fr->state = RX_REQ_ACTIVE;
	file->active = fr;
	pthread_mutex_lock(&agent->lock);
	rx_list_add_tail(&agent->file_active, &file->active_node);
	pthread_mutex_unlock(&agent->lock);
	fr_step(fr);
out:
	pthread_mutex_unlock(&file->lock);
	return ret;
}

static int fr_result(const struct rx_file_req *fr)
{
	switch (fr->state) {
	case RX_REQ_IDLE:
		return -EALREADY;
	case RX_REQ_ACTIVE:
		return -EINPROGRESS;
	case RX_REQ_DONE:
		return 0;
	default:
		return fr->res.err ? fr->res.err : -EIO;
	}
}

int rx_file_req_test(struct rdmaxfer_req *req)
{
	struct rx_file_req *fr = req->file;
	int ret;

	pthread_mutex_lock(&fr->file->lock);
	if (fr->state == RX_REQ_ACTIVE)
		fr_step(fr);
	ret = fr_result(fr);
	pthread_mutex_unlock(&fr->file->lock);
	return ret;
}

/*
 * Step until the request ends; between steps sleep on the agent (its
 * completion channel, and its wake eventfd that the engine's io_uring
 * signals) unless something is ready already.
 */
int rx_file_req_wait(struct rdmaxfer_req *req, int timeout_ms)
{
	struct rx_file_req *fr = req->file;
	struct rdmaxfer_file *file = fr->file;
	struct rdmaxfer_agent *agent = req->peer->agent;
	int64_t deadline = rx_deadline(timeout_ms), until;
	bool ready, any;
	int ret;

	for (;;) {
		pthread_mutex_lock(&file->lock);
		if (fr->state != RX_REQ_ACTIVE) {
			ret = fr_result(fr);
			pthread_mutex_unlock(&file->lock);
			return ret;
		}
		if (fr_step(fr)) {
			ret = fr->state == RX_REQ_ACTIVE &&
			      rx_now_ns() >= deadline;
			pthread_mutex_unlock(&file->lock);
			if (ret)
				return -ETIMEDOUT;
			continue;
		}
		pthread_mutex_lock(&agent->lock);
		if (!agent->thread_running)
			rx_progress_locked(agent);
		ready = fr_net_ended_locked(fr, &any) ||
			(file->uring && (io_uring_cq_ready(&file->ring) ||
					 (!fr->submit_dead &&
					  io_uring_sq_ready(&file->ring))));
		until = deadline;
		if (fr->cancel && !fr->peer_failed && any &&
		    fr->cancel_deadline < until)
			until = fr->cancel_deadline;
		pthread_mutex_unlock(&file->lock);
		ret = 0;
		if (!ready) {
			ret = rx_block(agent, until);
			if (ret == -ETIMEDOUT && until != deadline)
				ret = 0;	/* the cancel's escalation */
		}
		pthread_mutex_unlock(&agent->lock);
		if (ret)
			return ret;
	}
}

int rx_file_req_free(struct rdmaxfer_req *req)
{
	struct rx_file_req *fr = req->file;
	struct rdmaxfer_file *file = fr->file;
	struct rdmaxfer_agent *agent = req->peer->agent;

	pthread_mutex_lock(&file->lock);
	if (fr->state == RX_REQ_ACTIVE) {
		pthread_mutex_unlock(&file->lock);
		return -EBUSY;
	}
	rx_list_del(&fr->node);
	pthread_mutex_unlock(&file->lock);
	pthread_mutex_lock(&agent->lock);
	req->peer->nreqs--;
	rx_list_del(&req->node);
	pthread_mutex_unlock(&agent->lock);
	free(fr);
	free(req);
	return 0;
}

/*
 * The agent is being destroyed with the request alive (rx_req_release()):
 * its RDMA legs are freed by the agent too, so the engine forgets them;
 * what is on its ring is dropped with the ring.
 */
void rx_file_req_release(struct rdmaxfer_req *req)
{
	struct rx_file_req *fr = req->file;
	struct rdmaxfer_file *file = fr->file;
	uint32_t i;

	pthread_mutex_lock(&file->lock);
	if (file->active == fr) {
		for (i = 0; i < file->qdepth; i++) {
			file->slots[i].state = SLOT_IDLE;
			file->slots[i].req = NULL;
		}
		if (file->uring)
			file_ring_reset(file);
		if (fr->own_fd >= 0)
			close(fr->own_fd);
		file->active = NULL;
		rx_list_del(&file->active_node);
	}
	rx_list_del(&fr->node);
	pthread_mutex_unlock(&file->lock);
	free(fr);
	req->file = NULL;
}

const char *rx_file_req_strerror(const struct rdmaxfer_req *req)
{
	const struct rx_file_req *fr = req->file;

	if (fr->state == RX_REQ_FAILED && fr->msg[0])
		return fr->msg;
	return rdmaxfer_strerror(fr_result(fr));
}

RX_EXPORT
int rdmaxfer_file_req_result(struct rdmaxfer_req *req,
			     struct rdmaxfer_file_result *res)
{
	struct rx_file_req *fr;

	if (!req || !res || !req->file)
		return -EINVAL;
	fr = req->file;
	pthread_mutex_lock(&fr->file->lock);
	*res = fr->res;
	res->err = fr_result(fr);
	if (fr->state == RX_REQ_ACTIVE)
		res->prefix = fr_prefix(fr);
	pthread_mutex_unlock(&fr->file->lock);
	return 0;
}

RX_EXPORT
int rdmaxfer_req_cancel(struct rdmaxfer_req *req)
{
	struct rx_file_req *fr;

	if (!req)
		return -EINVAL;
	if (!req->file)
		return -EOPNOTSUPP;
	fr = req->file;
	pthread_mutex_lock(&fr->file->lock);
	if (fr->state != RX_REQ_ACTIVE) {
		pthread_mutex_unlock(&fr->file->lock);
		return -EALREADY;
	}
	if (!fr->cancel) {
		fr->cancel = true;
		fr->cancel_deadline = rx_deadline(RX_FLUSH_TIMEOUT_MS);
		fr_fail(fr, -ECANCELED, RDMAXFER_FILE_STAGE_CANCEL,
			"cancelled");
	}
	fr_step(fr);
	pthread_mutex_unlock(&fr->file->lock);
	return 0;
}

/*
 * rdmaxfer_progress(): one step of each engine with a request in
 * progress on the agent.  An engine another thread is stepping is skipped
 * (trylock: the agent lock is held while looking, and the order is the
 * engine's lock first); one whose lock is taken cannot leave the list.
 */
void rx_file_progress(struct rdmaxfer_agent *agent)
{
	struct rdmaxfer_file *file;
	struct rx_list *l;
	uint64_t round;

	pthread_mutex_lock(&agent->lock);
	round = ++agent->file_round;
	for (;;) {
		file = NULL;
		for (l = agent->file_active.next; l != &agent->file_active;
		     l = l->next) {
			struct rdmaxfer_file *f =
				rx_container_of(l, struct rdmaxfer_file,
						active_node);

			if (f->round == round)
				continue;
			f->round = round;
			if (!pthread_mutex_trylock(&f->lock)) {
				file = f;
				break;
			}
		}
		pthread_mutex_unlock(&agent->lock);
		if (!file)
			return;
		if (file->active)
			fr_step(file->active);
		pthread_mutex_unlock(&file->lock);
		pthread_mutex_lock(&agent->lock);
	}
}

/* ---------------------------------- the blocking calls (LIBRDMAXFER_1.5) */

/*
 * A request, waited for up to timeout_ms; on a timeout it is cancelled
 * and waited for (bounded by the cancel: see rdmaxfer_req_cancel()), so
 * nothing is left in flight and nothing leaks.
 */
static int file_remote(struct rdmaxfer_file *file, struct rdmaxfer_peer *peer,
		       enum rdmaxfer_op op, const struct rdmaxfer_file_desc *d,
		       const struct rdmaxfer_desc *remote, int timeout_ms)
{
	struct rdmaxfer_file_result res;
	struct rdmaxfer_req *req;
	int ret;

	ret = rdmaxfer_file_prepare(file, peer, op, d, remote, &req);
	if (ret)
		return ret;
	ret = rdmaxfer_req_post(req);
	if (!ret) {
		ret = rdmaxfer_req_wait(req, timeout_ms);
		if (ret == -ETIMEDOUT &&
		    rdmaxfer_req_test(req) == -EINPROGRESS) {
			rdmaxfer_req_cancel(req);
			rdmaxfer_req_wait(req, -1);
			rdmaxfer_file_req_result(req, &res);
			file_fail(file, -ETIMEDOUT,
				  "timed out after %d ms with %llu of %llu bytes done",
				  timeout_ms, (unsigned long long)res.done,
				  (unsigned long long)res.len);
		}
	}
	rdmaxfer_req_free(req);
	return ret;
}

RX_EXPORT
int rdmaxfer_file_to_peer(struct rdmaxfer_file *file,
			  struct rdmaxfer_peer *peer,
			  const struct rdmaxfer_file_desc *src,
			  const struct rdmaxfer_desc *remote, int timeout_ms)
{
	return file_remote(file, peer, RDMAXFER_OP_WRITE, src, remote,
			   timeout_ms);
}

RX_EXPORT
int rdmaxfer_file_from_peer(struct rdmaxfer_file *file,
			    struct rdmaxfer_peer *peer,
			    const struct rdmaxfer_desc *remote,
			    const struct rdmaxfer_file_desc *dst, int timeout_ms)
{
	return file_remote(file, peer, RDMAXFER_OP_READ, dst, remote,
			   timeout_ms);
}
