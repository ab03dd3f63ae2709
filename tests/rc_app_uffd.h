/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rc_app_uffd.h - an application's own userfaultfd, for the tests of
 * memory it watches (test_regcache_uffd.c on the host, the verbs test in
 * the VM): a descriptor with a thread that serves its faults as a lazy
 * loader or a write tracker would, a missing fault with a page of
 * pattern bytes (UFFDIO_COPY), a write-protect fault by lifting the
 * protection, each counted when it took.
 */
#ifndef RC_APP_UFFD_H
#define RC_APP_UFFD_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

struct app_uffd {
	int fd, stop;
	size_t psz;
	pthread_t thread;
	char *page;			/* what a missing fault gets */
	_Atomic long missing, wp;	/* faults served */
};

static void *app_uffd_thread(void *arg)
{
	struct app_uffd *u = arg;

	for (;;) {
		struct pollfd p[2] = { { u->fd, POLLIN, 0 },
				       { u->stop, POLLIN, 0 } };
		struct uffdio_range r;
		struct uffd_msg m;
		uintptr_t pg;

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			break;
		if (read(u->fd, &m, sizeof(m)) != sizeof(m) ||
		    m.event != UFFD_EVENT_PAGEFAULT)
			continue;
		pg = m.arg.pagefault.address & ~(uintptr_t)(u->psz - 1);
		r.start = pg;
		r.len = u->psz;
		if (m.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
			struct uffdio_writeprotect w = {
				.range = { pg, u->psz },
				.mode = UFFDIO_WRITEPROTECT_MODE_DONTWAKE,
			};

			if (!ioctl(u->fd, UFFDIO_WRITEPROTECT, &w))
				u->wp++;
		} else {
			struct uffdio_copy c = {
				.dst = pg, .src = (uintptr_t)u->page,
				.len = u->psz, .mode = UFFDIO_COPY_MODE_DONTWAKE,
			};

			/* a fault raised twice is served once (EEXIST) */
			if (!ioctl(u->fd, UFFDIO_COPY, &c))
				u->missing++;
		}
		/*
		 * Both are served without waking (DONTWAKE): the count goes
		 * up before the faulting thread wakes, so that a test reading
		 * it once its access returned sees every fault served.
		 */
		(void)ioctl(u->fd, UFFDIO_WAKE, &r);
	}
	return NULL;
}

/* 0, or -errno when userfaultfd cannot be had (the caller skips). */
static inline int app_uffd_open(struct app_uffd *u, char pattern)
{
	struct uffdio_api api = {
		.api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP,
	};

	memset(u, 0, sizeof(*u));
	u->psz = (size_t)sysconf(_SC_PAGESIZE);
	u->fd = (int)syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (u->fd < 0)
		return -errno;
	if (ioctl(u->fd, UFFDIO_API, &api)) {
		api.features = 0;
		if (ioctl(u->fd, UFFDIO_API, &api)) {
			close(u->fd);
			return -errno;
		}
	}
	u->page = aligned_alloc(u->psz, u->psz);
	u->stop = eventfd(0, EFD_CLOEXEC);
	if (u->page)
		memset(u->page, pattern, u->psz);
	if (!u->page || u->stop < 0 ||
	    pthread_create(&u->thread, NULL, app_uffd_thread, u)) {
		if (u->stop >= 0)
			close(u->stop);
		close(u->fd);
		free(u->page);
		return -ENOMEM;
	}
	return 0;
}

/* Watch [p, p + len) in mode (UFFDIO_REGISTER_MODE_*): 0 or -errno. */
static inline int app_uffd_watch(struct app_uffd *u, void *p, size_t len,
				 uint64_t mode)
{
	struct uffdio_register r = {
		.range = { (uintptr_t)p, len }, .mode = mode,
	};

	return ioctl(u->fd, UFFDIO_REGISTER, &r) ? -errno : 0;
}

/* Write-protect [p, p + len) (registered in write-protect mode). */
static inline int app_uffd_protect(struct app_uffd *u, void *p, size_t len)
{
	struct uffdio_writeprotect w = {
		.range = { (uintptr_t)p, len },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};

	return ioctl(u->fd, UFFDIO_WRITEPROTECT, &w) ? -errno : 0;
}

static inline void app_uffd_close(struct app_uffd *u)
{
	uint64_t one = 1;

	if (write(u->stop, &one, sizeof(one)) == sizeof(one))
		pthread_join(u->thread, NULL);
	close(u->stop);
	close(u->fd);		/* unregisters every range */
	free(u->page);
}

#endif /* RC_APP_UFFD_H */
