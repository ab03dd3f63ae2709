// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdmaxfer_file.c - files as transfer endpoints on the host (no RDMA
 * device needed): file -> memory and memory -> file through io_uring and
 * through the pread/pwrite fallback, sizes from 1 byte to many chunks with
 * small chunks and a shallow queue so the pipeline wraps, contents
 * compared; and every bad input of the issue (a closed fd, a directory, a
 * read-only destination, an offset past EOF, a short file, misaligned
 * O_DIRECT) failing with its -errno before any byte is written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmaxfer.h"
#include "rc_test.h"

/* the directory under test: $RDMAXFER_FILE_DIR (the VM suite points it
 * at tmpfs and at ext4 on a loop device), else /tmp */
static const char *base;
static char dir[256];
static char path[300];

static int suite_init(void)
{
	base = getenv("RDMAXFER_FILE_DIR");
	if (!base || !*base)
		base = "/tmp";
	snprintf(dir, sizeof(dir), "%s/rdmaxfer-file-XXXXXX", base);
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/data", dir);
	rc_diag("files in %s", dir);
	return 0;
}

static int suite_clean(void)
{
	unlink(path);
	return rmdir(dir);
}

static struct rdmaxfer_file *engine(uint32_t flags, uint32_t chunk,
				    uint32_t qd)
{
	struct rdmaxfer_file_attr attr = {
		.chunk_size = chunk, .queue_depth = qd, .flags = flags,
	};
	struct rdmaxfer_file *f = NULL;

	CU_ASSERT_EQUAL(rdmaxfer_file_create(&attr, &f), 0);
	return f;
}

static void fill(char *buf, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(i * 131 + seed + (i >> 12));
}

/* write len bytes at off through f, read them back through f, compare */
static void round_trip(struct rdmaxfer_file *f, size_t len, uint64_t off)
{
	char *src = malloc(len), *dst = malloc(len), *raw = malloc(len);
	struct rdmaxfer_file_desc d;
	int fd;

	CU_ASSERT_FATAL(src && dst && raw);
	fill(src, len, (unsigned int)len);
	memset(dst, 0, len);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	d = (struct rdmaxfer_file_desc){ fd, off, len };
	CU_ASSERT_EQUAL(rdmaxfer_file_write(f, src, &d), 0);
	/* the file holds what was written, checked without the library */
	CU_ASSERT_EQUAL(pread(fd, raw, len, off), (ssize_t)len);
	CU_ASSERT(!memcmp(raw, src, len));
	CU_ASSERT_EQUAL(rdmaxfer_file_read(f, &d, dst), 0);
	CU_ASSERT(!memcmp(dst, src, len));
	if (memcmp(dst, src, len))
		rc_diag("len %zu off %llu: %s", len, (unsigned long long)off,
			rdmaxfer_file_msg(f));
	close(fd);
	free(src);
	free(dst);
	free(raw);
}

static void sizes(uint32_t flags)
{
	static const size_t lens[] = { 1, 7, 4096, 4097, 65536, 1 << 20,
				       (3 << 20) + 123 };
	/* 4 KiB chunks, 3 in flight: 1 MiB is 256 chunks through 3 slots */
	struct rdmaxfer_file *f = engine(flags, 4096, 3);
	struct rdmaxfer_file *def = engine(flags, 0, 0);

	CU_ASSERT_FATAL(f && def);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		round_trip(f, lens[i], 0);
		round_trip(f, lens[i], 12345);
		round_trip(def, lens[i], 1);
	}
	rdmaxfer_file_destroy(f);
	rdmaxfer_file_destroy(def);
}

static void test_uring(void)
{
	const char *e = getenv("RDMAXFER_FILE_EXPECT_NO_URING");
	struct rdmaxfer_file_attr attr = {
		.flags = RDMAXFER_FILE_REQUIRE_URING,
	};
	struct rdmaxfer_file *f = NULL;
	int ret;

	if (e && !strcmp(e, "1")) {
		rc_skip("io_uring disabled on purpose for this run");
		return;
	}
	ret = rdmaxfer_file_create(&attr, &f);
	if (ret == -ENOSYS || ret == -EPERM) {
		rc_skip("io_uring unavailable here: %s", strerror(-ret));
		return;
	}
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL(rdmaxfer_file_backend(f), RDMAXFER_FILE_IO_URING);
	rdmaxfer_file_destroy(f);
	sizes(0);
}

static void test_pread(void)
{
	struct rdmaxfer_file *f = engine(RDMAXFER_FILE_NO_URING, 0, 0);

	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_EQUAL(rdmaxfer_file_backend(f), RDMAXFER_FILE_PREAD);
	CU_ASSERT(strstr(rdmaxfer_file_msg(f), "pread") != NULL);
	rdmaxfer_file_destroy(f);
	sizes(RDMAXFER_FILE_NO_URING);
}

static void test_bad_attr(void)
{
	struct rdmaxfer_file_attr attr = { 0 };
	struct rdmaxfer_file *f = (void *)1;

	CU_ASSERT_EQUAL(rdmaxfer_file_create(&attr, NULL), -EINVAL);
	attr.flags = RDMAXFER_FILE_NO_URING | RDMAXFER_FILE_REQUIRE_URING;
	CU_ASSERT_EQUAL(rdmaxfer_file_create(&attr, &f), -EINVAL);
	CU_ASSERT(f == NULL);
	attr.flags = 1U << 31;
	CU_ASSERT_EQUAL(rdmaxfer_file_create(&attr, &f), -EINVAL);
	attr.flags = 0;
	attr.queue_depth = RDMAXFER_FILE_MAX_QDEPTH + 1;
	CU_ASSERT_EQUAL(rdmaxfer_file_create(&attr, &f), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_file_backend(NULL), -EINVAL);
	CU_ASSERT_EQUAL(rdmaxfer_file_read(NULL, NULL, NULL), -EINVAL);
	rdmaxfer_file_destroy(NULL);
}

/* fd holds 8192 bytes of a known pattern; a failed call must leave it */
static int pattern_file(void)
{
	char buf[8192];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	fill(buf, sizeof(buf), 9);
	if (fd >= 0 && pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void pattern_intact(void)
{
	char want[8192], got[8192];
	struct stat st;
	int fd = open(path, O_RDONLY);

	CU_ASSERT_FATAL(fd >= 0);
	fill(want, sizeof(want), 9);
	CU_ASSERT_EQUAL(fstat(fd, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 8192);
	CU_ASSERT_EQUAL(pread(fd, got, sizeof(got), 0), 8192);
	CU_ASSERT(!memcmp(got, want, sizeof(got)));
	close(fd);
}

static void expect(struct rdmaxfer_file *f, int got, int want,
		   const char *what)
{
	CU_ASSERT_EQUAL(got, want);
	if (got != want)
		rc_diag("%s: got %d want %d", what, got, want);
	/* every failure says why */
	CU_ASSERT(rdmaxfer_file_msg(f)[0] != '\0');
}

static void bad_input(uint32_t flags)
{
	struct rdmaxfer_file *f = engine(flags, 4096, 4);
	struct rdmaxfer_file_desc d;
	static char buf[16384];
	int fd, rd, dfd, wr;

	CU_ASSERT_FATAL(f != NULL);
	fd = pattern_file();
	CU_ASSERT_FATAL(fd >= 0);
	rd = open(path, O_RDONLY);
	wr = open(path, O_WRONLY | O_APPEND);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CU_ASSERT_FATAL(rd >= 0 && dfd >= 0 && wr >= 0);

	d = (struct rdmaxfer_file_desc){ rd, 0, 4096 };
	expect(f, rdmaxfer_file_write(f, buf, &d), -EBADF, "read-only dst");
	d = (struct rdmaxfer_file_desc){ dfd, 0, 4096 };
	expect(f, rdmaxfer_file_read(f, &d, buf), -EISDIR, "dir src");
	expect(f, rdmaxfer_file_write(f, buf, &d), -EISDIR, "dir dst");
	d = (struct rdmaxfer_file_desc){ wr, 0, 4096 };
	expect(f, rdmaxfer_file_write(f, buf, &d), -EINVAL, "append dst");
	expect(f, rdmaxfer_file_read(f, &d, buf), -EBADF, "write-only src");
	d = (struct rdmaxfer_file_desc){ fd, 8193, 1 };
	expect(f, rdmaxfer_file_read(f, &d, buf), -ENXIO, "past EOF");
	d = (struct rdmaxfer_file_desc){ fd, 8192, 1 };
	expect(f, rdmaxfer_file_read(f, &d, buf), -ENODATA, "at EOF");
	d = (struct rdmaxfer_file_desc){ fd, 4096, 8192 };
	expect(f, rdmaxfer_file_read(f, &d, buf), -ENODATA, "short file");
	d = (struct rdmaxfer_file_desc){ fd, 0, 0 };
	expect(f, rdmaxfer_file_read(f, &d, buf), -EINVAL, "len 0");
	d = (struct rdmaxfer_file_desc){ fd, 0, 1 };
	expect(f, rdmaxfer_file_read(f, &d, NULL), -EINVAL, "NULL buf");
	expect(f, rdmaxfer_file_read(f, NULL, buf), -EINVAL, "NULL desc");
	d = (struct rdmaxfer_file_desc){ fd, UINT64_MAX - 1, 4 };
	expect(f, rdmaxfer_file_write(f, buf, &d), -EOVERFLOW, "overflow");
	close(wr);
	d = (struct rdmaxfer_file_desc){ wr, 0, 4096 };
	expect(f, rdmaxfer_file_write(f, buf, &d), -EBADF, "closed dst");
	expect(f, rdmaxfer_file_read(f, &d, buf), -EBADF, "closed src");
	/* a good read after all that still works */
	d = (struct rdmaxfer_file_desc){ fd, 4096, 4096 };
	CU_ASSERT_EQUAL(rdmaxfer_file_read(f, &d, buf), 0);
	close(fd);
	close(rd);
	close(dfd);
	pattern_intact();
	rdmaxfer_file_destroy(f);
}

static void test_bad_input(void)
{
	bad_input(0);
	bad_input(RDMAXFER_FILE_NO_URING);
}

/* O_DIRECT where the filesystem under test takes it (tmpfs: 6.6+) */
static void test_direct(void)
{
	struct rdmaxfer_file *f = engine(0, 8192, 4);
	struct rdmaxfer_file_desc d;
	char dpath[300], *buf = NULL;
	int fd;

	CU_ASSERT_FATAL(f != NULL);
	snprintf(dpath, sizeof(dpath), "%s/dio", dir);
	fd = open(dpath, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	if (fd < 0) {
		rc_skip("%s takes no O_DIRECT: %s", base, strerror(errno));
		/* tmpfs before 6.6 creates the file, then fails the open */
		unlink(dpath);
		rdmaxfer_file_destroy(f);
		return;
	}
	CU_ASSERT_FATAL(posix_memalign((void **)&buf, 4096, 65536 + 4096) == 0);
	fill(buf, 65536 + 4096, 3);
	d = (struct rdmaxfer_file_desc){ fd, 0, 65536 };
	CU_ASSERT_EQUAL(rdmaxfer_file_write(f, buf, &d), 0);
	/* misaligned buffer, offset, length: -EINVAL, no I/O */
	expect(f, rdmaxfer_file_write(f, buf + 1, &d), -EINVAL, "dio buf");
	CU_ASSERT(strstr(rdmaxfer_file_msg(f), "O_DIRECT") != NULL);
	d = (struct rdmaxfer_file_desc){ fd, 1, 4096 };
	expect(f, rdmaxfer_file_read(f, &d, buf + 65536), -EINVAL, "dio off");
	d = (struct rdmaxfer_file_desc){ fd, 0, 100 };
	expect(f, rdmaxfer_file_read(f, &d, buf + 65536), -EINVAL, "dio len");
	/* aligned read back of a middle block */
	memset(buf + 65536, 0, 4096);
	d = (struct rdmaxfer_file_desc){ fd, 8192, 4096 };
	CU_ASSERT_EQUAL(rdmaxfer_file_read(f, &d, buf + 65536), 0);
	CU_ASSERT(!memcmp(buf + 65536, buf + 8192, 4096));
	close(fd);
	unlink(dpath);
	free(buf);
	rdmaxfer_file_destroy(f);
}

/*
 * With RDMAXFER_FILE_EXPECT_NO_URING=1 (the VM suite sets it after
 * kernel.io_uring_disabled=2): REQUIRE_URING fails with the errno of
 * io_uring_setup, the default falls back to pread/pwrite and says so.
 */
static void test_unavailable(void)
{
	struct rdmaxfer_file_attr attr = {
		.flags = RDMAXFER_FILE_REQUIRE_URING,
	};
	const char *e = getenv("RDMAXFER_FILE_EXPECT_NO_URING");
	struct rdmaxfer_file *f = NULL;
	int ret;

	if (!e || strcmp(e, "1")) {
		rc_skip("io_uring is not disabled here (the VM suite disables it)");
		return;
	}
	ret = rdmaxfer_file_create(&attr, &f);
	CU_ASSERT(ret == -EPERM || ret == -ENOSYS);
	CU_ASSERT(f == NULL);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_create(NULL, &f), 0);
	CU_ASSERT_EQUAL(rdmaxfer_file_backend(f), RDMAXFER_FILE_PREAD);
	CU_ASSERT(strstr(rdmaxfer_file_msg(f), "fallback") != NULL);
	rc_diag("%s", rdmaxfer_file_msg(f));
	round_trip(f, (1 << 20) + 5, 3);
	rdmaxfer_file_destroy(f);
}

static const struct rc_test_case cases[] = {
	{ "bad_attr", test_bad_attr },
	{ "io_uring_sizes", test_uring },
	{ "pread_fallback_sizes", test_pread },
	{ "bad_input", test_bad_input },
	{ "o_direct", test_direct },
	{ "io_uring_unavailable", test_unavailable },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	rc_add_suite("rdmaxfer_file", suite_init, suite_clean, cases);
	return rc_test_main(argc, argv);
}
