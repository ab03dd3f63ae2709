// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_kmod_util.c - helpers shared by the regcache.ko test programs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* setresuid, setresgid */
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt_harness.h"
#include "test_kmod_util.h"

void kt_require_device(void)
{
	if (geteuid() != 0)
		kt_skip_all("needs root");
	if (access(REGCACHE_DEVICE_PATH, F_OK) != 0)
		kt_skip_all("%s absent (regcache.ko not loaded)", REGCACHE_DEVICE_PATH);
}

int kt_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

int kt_open(struct kt_ctx *c, uint32_t ring_entries, bool map)
{
	struct regcache_config cfg = { .ring_entries = ring_entries };
	void *p;
	int ret;

	memset(c, 0, sizeof(*c));
	c->fd = open(REGCACHE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -errno;
	if (ring_entries) {
		ret = kt_ioctl(c->fd, REGCACHE_IOC_CONFIGURE, &cfg);
		if (ret)
			goto close_fd;
	}
	ret = kt_ioctl(c->fd, REGCACHE_IOC_GET_INFO, &c->info);
	if (ret)
		goto close_fd;
	if (map) {
		p = mmap(NULL, c->info.status_size, PROT_READ, MAP_SHARED, c->fd, 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			goto close_fd;
		}
		c->st = p;
	}
	return 0;

close_fd:
	close(c->fd);
	c->fd = -1;
	return ret;
}

void kt_close(struct kt_ctx *c)
{
	if (c->st)
		munmap((void *)c->st, c->info.status_size);
	if (c->fd >= 0)
		close(c->fd);
	c->st = NULL;
	c->fd = -1;
}

int kt_watch(struct kt_ctx *c, const void *addr, size_t len, uint64_t cookie,
	     uint64_t pinned, uint32_t *slot, uint64_t *word)
{
	struct regcache_watch w = {
		.addr = (uintptr_t)addr,
		.len = len,
		.cookie = cookie,
		.pinned_bytes = pinned,
	};
	int ret;

	ret = kt_ioctl(c->fd, REGCACHE_IOC_WATCH, &w);
	if (ret)
		return ret;
	if (slot)
		*slot = w.slot;
	if (word)
		*word = w.slot_word;
	return 0;
}

int kt_unwatch(struct kt_ctx *c, uint32_t slot, uint64_t cookie)
{
	return kt_unwatch_word(c, slot, cookie, 0);
}

int kt_unwatch_word(struct kt_ctx *c, uint32_t slot, uint64_t cookie, uint64_t word)
{
	struct regcache_unwatch u = { .slot = slot, .cookie = cookie, .slot_word = word };

	return kt_ioctl(c->fd, REGCACHE_IOC_UNWATCH, &u);
}

int kt_stats(struct kt_ctx *c, struct regcache_ctx_stats *s)
{
	memset(s, 0, sizeof(*s));
	return kt_ioctl(c->fd, REGCACHE_IOC_GET_STATS, s);
}

uint64_t kt_slot(const struct kt_ctx *c, uint32_t slot)
{
	const volatile uint64_t *slots = (const volatile uint64_t *)
		((const volatile char *)c->st + REGCACHE_STATUS_SLOT_OFFSET(0));

	return __atomic_load_n(&slots[slot], __ATOMIC_ACQUIRE);
}

int kt_fdinfo(int fd, const char *key, long long *val)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	return kt_fdinfo_path(path, key, val);
}

int kt_fdinfo_path(const char *path, const char *key, long long *val)
{
	char line[256], want[80];
	size_t n;
	FILE *f;
	int ret = -ENOENT;

	snprintf(want, sizeof(want), "regcache-%s:", key);
	n = strlen(want);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, want, n) && sscanf(line + n, "%lld", val) == 1) {
			ret = 0;
			break;
		}
	fclose(f);
	return ret;
}

int kt_flush_upto(struct kt_ctx *c, uint64_t seen)
{
	struct regcache_flush f = { .events_seen = seen };

	return kt_ioctl(c->fd, REGCACHE_IOC_FLUSH, &f);
}

int kt_flush(struct kt_ctx *c)
{
	struct regcache_ctx_stats s;
	int ret = kt_stats(c, &s);

	return ret ? ret : kt_flush_upto(c, s.events_total);
}

int kt_read_events(struct kt_ctx *c, struct regcache_event *ev, int max)
{
	int fl = fcntl(c->fd, F_GETFL);
	ssize_t n;

	fcntl(c->fd, F_SETFL, fl | O_NONBLOCK);
	n = read(c->fd, ev, (size_t)max * sizeof(*ev));
	if (n < 0)
		n = -errno;
	fcntl(c->fd, F_SETFL, fl);
	if (n < 0)
		return (int)n;
	return (int)(n / (ssize_t)sizeof(*ev));
}

int kt_find_event(const struct regcache_event *ev, int n, uint64_t cookie)
{
	int i;

	for (i = 0; i < n; i++)
		if (ev[i].cookie == cookie)
			return i;
	return -1;
}

void *kt_map_pages(size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *p;
	size_t i;

	p = mmap(NULL, n * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* no THP: khugepaged collapsing a range would be a (legal) extra event */
	madvise(p, n * pg, MADV_NOHUGEPAGE);
	for (i = 0; i < n; i++)
		p[i * pg] = 1;
	return p;
}

static long long kt_read_ll(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1) {
		/* bool parameters read back as Y/N */
		char ch = 0;

		rewind(f);
		if (fscanf(f, " %c", &ch) == 1)
			v = ch == 'Y' ? 1 : ch == 'N' ? 0 : -1;
	}
	fclose(f);
	return v;
}

long long kt_param(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/module/regcache/parameters/%s", name);
	return kt_read_ll(path);
}

long long kt_sysfs(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/misc/regcache/%s", name);
	return kt_read_ll(path);
}

int kt_spawn_as(unsigned int uid, unsigned int timeout_s, int (*fn)(int *), int *arg)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	alarm(timeout_s);
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		_exit(100);
	_exit(fn(arg));
}

int kt_reap(int pid)
{
	int st;

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFSIGNALED(st))
		return 200 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

int kt_wait_byte(int fd, unsigned int timeout_s)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char ch;

	if (poll(&p, 1, (int)timeout_s * 1000) != 1)
		return -1;
	return read(fd, &ch, 1) == 1 ? 0 : -1;
}

int kt_send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr mh = { 0 };
	struct cmsghdr *cm;
	struct iovec iov = { .iov_base = "f", .iov_len = 1 };

	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	return sendmsg(sock, &mh, 0) == 1 ? 0 : -1;
}

int kt_recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr mh = { 0 };
	struct cmsghdr *cm;
	char ch;
	struct iovec iov = { .iov_base = &ch, .iov_len = 1 };
	int fd;

	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	if (recvmsg(sock, &mh, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	return fd;
}

static int kt_uring_setup(unsigned int entries, struct io_uring_params *p)
{
	long fd;

	memset(p, 0, sizeof(*p));
	fd = syscall(__NR_io_uring_setup, entries, p);
	return fd < 0 ? -errno : (int)fd;
}

int kt_pin(void *addr, size_t len)
{
	struct iovec iov = { .iov_base = addr, .iov_len = len };
	struct io_uring_params p;
	int fd, ret;

	fd = kt_uring_setup(1, &p);
	if (fd < 0)
		return fd;
	if (syscall(__NR_io_uring_register, fd, IORING_REGISTER_BUFFERS, &iov, 1) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

/* Unregistering unpins now; closing the ring alone would do it later, from a worker. */
void kt_unpin(int handle)
{
	syscall(__NR_io_uring_register, handle, IORING_UNREGISTER_BUFFERS, NULL, 0);
	close(handle);
}

int kt_uring_madvise(void *addr, size_t len, int advice, int *res)
{
	struct io_uring_params p;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	size_t sq_len, cq_len;
	char *sq, *cq;
	unsigned int *tail, *head;
	int fd, ret = 0;

	fd = kt_uring_setup(1, &p);
	if (fd < 0)
		return fd;
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
		  IORING_OFF_SQ_RING);
	cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
		  IORING_OFF_CQ_RING);
	sqe = mmap(NULL, sizeof(*sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
		   IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqe == MAP_FAILED) {
		ret = -ENOMEM;
		goto out;
	}
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_MADVISE;
	sqe->addr = (uintptr_t)addr;
	sqe->len = (uint32_t)len;
	sqe->fadvise_advice = (uint32_t)advice;
	((unsigned int *)(sq + p.sq_off.array))[0] = 0;
	tail = (unsigned int *)(sq + p.sq_off.tail);
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) != 1) {
		ret = -errno;
		goto out;
	}
	head = (unsigned int *)(cq + p.cq_off.head);
	cqe = (struct io_uring_cqe *)(cq + p.cq_off.cqes) +
	      (*head & *(unsigned int *)(cq + p.cq_off.ring_mask));
	*res = cqe->res;
	__atomic_store_n(head, *head + 1, __ATOMIC_RELEASE);
out:
	if (sqe != MAP_FAILED)
		munmap(sqe, sizeof(*sqe));
	if (cq != MAP_FAILED)
		munmap(cq, cq_len);
	if (sq != MAP_FAILED)
		munmap(sq, sq_len);
	close(fd);
	return ret;
}
