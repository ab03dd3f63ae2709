/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmaxfer_dmabuf_test.h - what the dma-buf tests share: counting the
 * open fds, so a call that fails (or a region deregistered) is seen to
 * leave none behind; and making real dma-bufs: udmabuf (/dev/udmabuf, from
 * a sealed memfd) or a vgem dumb buffer exported with PRIME.
 */
#ifndef RDMAXFER_DMABUF_TEST_H
#define RDMAXFER_DMABUF_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/udmabuf.h>

/* Entries of /proc/self/fd (the directory's own fd included), or -1. */
static inline int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* DRM uapi (drm.h, drm_mode.h): not installed without libdrm-dev */
struct drm_mode_create_dumb {
	uint32_t height, width, bpp, flags, handle, pitch;
	uint64_t size;
};
struct drm_prime_handle {
	uint32_t handle, flags;
	int32_t fd;
};
#define DRM_IOCTL_MODE_CREATE_DUMB _IOWR('d', 0xB2, struct drm_mode_create_dumb)
#define DRM_IOCTL_PRIME_HANDLE_TO_FD _IOWR('d', 0x2d, struct drm_prime_handle)
#define DRM_RDWR	O_RDWR

/*
 * A new dma-buf of len bytes (a multiple of 4096): a vgem dumb buffer when
 * drm_fd >= 0, else a udmabuf whose memfd goes to *memfdp (-1 for vgem).
 */
static inline int test_new_dmabuf(int drm_fd, size_t len, int *fdp,
				  int *memfdp)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC,
				    .size = len };
	struct drm_mode_create_dumb dumb = { .height = len / 4096,
					     .width = 1024, .bpp = 32 };
	struct drm_prime_handle h = { .flags = O_CLOEXEC | DRM_RDWR };
	int dev, memfd, fd;

	*memfdp = -1;
	if (drm_fd >= 0) {
		if (ioctl(drm_fd, DRM_IOCTL_MODE_CREATE_DUMB, &dumb))
			return -errno;
		h.handle = dumb.handle;
		if (ioctl(drm_fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &h))
			return -errno;
		*fdp = h.fd;
		return 0;
	}
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	memfd = memfd_create("rdmaxfer-dmabuf", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, len) ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		fd = -errno;
		if (memfd >= 0)
			close(memfd);
		close(dev);
		return fd;
	}
	c.memfd = (uint32_t)memfd;
	fd = ioctl(dev, UDMABUF_CREATE, &c);
	close(dev);
	if (fd < 0) {
		fd = -errno;
		close(memfd);
		return fd;
	}
	*fdp = fd;
	*memfdp = memfd;
	return 0;
}

/* vgem is a DRM device without display: the card whose dumb buffer can be
 * exported.  Its fd, or -ENODEV. */
static inline int test_open_vgem(size_t len)
{
	char path[64];
	int i, fd, tmp, memfd;

	for (i = 0; i < 8; i++) {
		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!test_new_dmabuf(fd, len, &tmp, &memfd)) {
			close(tmp);
			return fd;
		}
		close(fd);
	}
	return -ENODEV;
}

/*
 * udmabuf, else vgem; $RDMAXFER_TEST_EXPORTER names one of them.  *namep
 * gets "udmabuf" or "vgem", *drm_fdp the vgem card (or -1); -ENODEV when
 * there is neither.
 */
static inline int test_pick_exporter(size_t len, int *drm_fdp,
				     const char **namep)
{
	const char *want = getenv("RDMAXFER_TEST_EXPORTER");
	int fd, memfd;

	*drm_fdp = -1;
	if (want && !strcmp(want, "vgem")) {
		*drm_fdp = test_open_vgem(len);
		if (*drm_fdp < 0)
			return -ENODEV;
		*namep = "vgem";
		return 0;
	}
	if (!test_new_dmabuf(-1, len, &fd, &memfd)) {
		close(fd);
		close(memfd);
		*namep = "udmabuf";
		return 0;
	}
	if (!want) {
		*drm_fdp = test_open_vgem(len);
		if (*drm_fdp >= 0) {
			*namep = "vgem";
			return 0;
		}
	}
	*drm_fdp = -1;
	return -ENODEV;
}

#endif /* RDMAXFER_DMABUF_TEST_H */
