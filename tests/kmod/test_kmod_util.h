/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * test_kmod_util.h - helpers shared by the regcache.ko test programs.
 *
 * Thin wrappers that turn the raw ioctls into 0/-errno calls, open a
 * context with its status area mapped, and drain events, so each test
 * reads as the scenario it checks.
 */
#ifndef TEST_KMOD_UTIL_H
#define TEST_KMOD_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "regcache_uapi.h"

struct kt_ctx {
	int fd;
	struct regcache_info info;
	volatile struct regcache_status *st;	/* NULL when not mapped */
};

/* Exit 77 unless we are root and /dev/regcache exists. */
void kt_require_device(void);

/* 0 or -errno of ioctl(fd, cmd, arg). */
int kt_ioctl(int fd, unsigned long cmd, void *arg);

/* Open a context; ring_entries != 0 CONFIGUREs the ring; map: mmap the status area. */
int kt_open(struct kt_ctx *c, uint32_t ring_entries, bool map);
void kt_close(struct kt_ctx *c);

int kt_watch(struct kt_ctx *c, const void *addr, size_t len, uint64_t cookie,
	     uint64_t pinned, uint32_t *slot, uint64_t *word);
int kt_unwatch(struct kt_ctx *c, uint32_t slot, uint64_t cookie);
/* UNWATCH of the watch whose word WATCH returned (0: by slot and cookie). */
int kt_unwatch_word(struct kt_ctx *c, uint32_t slot, uint64_t cookie, uint64_t word);
int kt_stats(struct kt_ctx *c, struct regcache_ctx_stats *s);

/* The slot word as userspace sees it: one load. */
uint64_t kt_slot(const struct kt_ctx *c, uint32_t slot);

/* FLUSH the events with seq <= seen; kt_flush: every event generated so far. */
int kt_flush_upto(struct kt_ctx *c, uint64_t seen);
int kt_flush(struct kt_ctx *c);

/* Non-blocking read of up to max events: count, or -errno (-EAGAIN when empty). */
int kt_read_events(struct kt_ctx *c, struct regcache_event *ev, int max);

/* Index of the first event with this cookie in ev[0..n), or -1. */
int kt_find_event(const struct regcache_event *ev, int n, uint64_t cookie);

/* Map n fresh anonymous pages, touched (so they are populated). */
void *kt_map_pages(size_t n);

/* Current value of a regcache module parameter, or -1. */
long long kt_param(const char *name);

/* A global counter from /sys/class/misc/regcache/NAME, or -1. */
long long kt_sysfs(const char *name);

/* The number after "regcache-KEY:" in /proc/self/fdinfo/FD: 0 or -errno. */
int kt_fdinfo(int fd, const char *key, long long *val);

/* The same from an fdinfo file by its path (another process's, another /proc). */
int kt_fdinfo_path(const char *path, const char *key, long long *val);

/*
 * A long-term pin (FOLL_LONGTERM, as an RDMA registration makes) of
 * [addr, addr + len), made by registering the range as an io_uring fixed
 * buffer with raw system calls, so that a test needs neither an RDMA
 * device nor a library: the handle for kt_unpin(), or -errno.
 */
int kt_pin(void *addr, size_t len);
void kt_unpin(int handle);

/*
 * madvise(addr, len, advice) as an io_uring request (IORING_OP_MADVISE):
 * 0 with the request's result in *res, or -errno if io_uring is not
 * there.
 */
int kt_uring_madvise(void *addr, size_t len, int advice, int *res);

/*
 * Fork a child that drops to uid (and gid uid, no supplementary groups),
 * arms alarm(timeout_s) and exits with fn(arg)'s result (0 = good; 100
 * if it could not become uid).  The child's pid, or -1.
 */
int kt_spawn_as(unsigned int uid, unsigned int timeout_s, int (*fn)(int *), int *arg);

/* A child's exit status, 200 + signal if it was killed, -1 if lost. */
int kt_reap(int pid);

/* Wait at most timeout_s for one byte on fd: 0, or -1. */
int kt_wait_byte(int fd, unsigned int timeout_s);

/* Pass an fd over a UNIX socket (SCM_RIGHTS): 0, or -1. */
int kt_send_fd(int sock, int fd);

/* Receive an fd sent by kt_send_fd(): the fd, or -1. */
int kt_recv_fd(int sock);

#endif /* TEST_KMOD_UTIL_H */
