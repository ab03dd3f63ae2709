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
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "rdmaxfer.h"
#include "rc_test.h"
#include "rdmaxfer_file_test.h"

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

/*
 * Pages of path in the page cache (mincore on a mapping of the file), or
 * -1 where the directory is tmpfs (its pages are the file: always there).
 */
static long cached_pages(const char *p, size_t len)
{
	long psz = sysconf(_SC_PAGESIZE), n = 0;
	unsigned char vec[64];
	struct statfs sfs;
	void *m;
	int fd = open(p, O_RDONLY);

	if (fd < 0 || fstatfs(fd, &sfs) || sfs.f_type == TMPFS_MAGIC ||
	    len > sizeof(vec) * (size_t)psz) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED || mincore(m, len, vec))
		return -1;
	for (size_t i = 0; i < (len + psz - 1) / psz; i++)
		n += vec[i] & 1;
	munmap(m, len);
	return n;
}

/* The last transfer of f went the way flag says, and the data is right. */
static void expect_way(struct rdmaxfer_file *f, uint32_t flag,
		       const char *what)
{
	struct rdmaxfer_file_info in;

	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_query(f, &in), 0);
	CU_ASSERT_EQUAL(in.last.err, 0);
	CU_ASSERT_EQUAL(in.last.flags, flag);
	CU_ASSERT_EQUAL(in.last.done, in.last.len);
	CU_ASSERT_EQUAL(in.last.prefix, in.last.len);
	if (in.last.flags != flag)
		rc_diag("%s: flags %#x want %#x (%s)", what, in.last.flags,
			flag, rdmaxfer_file_msg(f));
	if (flag == RDMAXFER_FILE_RES_BUFFERED)
		CU_ASSERT(strstr(rdmaxfer_file_msg(f), "O_DIRECT") != NULL);
}

/*
 * O_DIRECT where the filesystem under test takes it (tmpfs: 6.6+):
 * aligned ranges go direct (on a real filesystem nothing of the file
 * lands in the page cache), misaligned ones (buffer, offset, length)
 * fall back to buffered I/O through a second fd, report it, and move
 * the right bytes.
 */
static void test_direct(void)
{
	struct rdmaxfer_file *f = engine(0, 8192, 4);
	struct rdmaxfer_file_desc d;
	struct rdmaxfer_file_info in;
	char dpath[300], bpath[300], *buf = NULL;
	long direct_pages, buffered_pages;
	int fd, bfd;

	CU_ASSERT_FATAL(f != NULL);
	snprintf(dpath, sizeof(dpath), "%s/dio", dir);
	snprintf(bpath, sizeof(bpath), "%s/dio-buffered", dir);
	fd = open(dpath, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	if (fd < 0) {
		rc_skip("%s takes no O_DIRECT: %s", base, strerror(errno));
		/* tmpfs before 6.6 creates the file, then fails the open */
		unlink(dpath);
		rdmaxfer_file_destroy(f);
		return;
	}
	bfd = open(bpath, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	CU_ASSERT_FATAL(bfd >= 0);
	CU_ASSERT_FATAL(posix_memalign((void **)&buf, 4096, 3 * 65536) == 0);
	fill(buf, 65536 + 4096, 3);
	/* aligned: direct */
	d = (struct rdmaxfer_file_desc){ fd, 0, 65536 };
	CU_ASSERT_EQUAL(rdmaxfer_file_write(f, buf, &d), 0);
	expect_way(f, RDMAXFER_FILE_RES_DIRECT, "aligned write");
	direct_pages = cached_pages(dpath, 65536);
	/* misaligned buffer: buffered, into another fresh file */
	d = (struct rdmaxfer_file_desc){ bfd, 0, 65536 };
	CU_ASSERT_EQUAL(rdmaxfer_file_write(f, buf + 1, &d), 0);
	expect_way(f, RDMAXFER_FILE_RES_BUFFERED, "dio buf");
	buffered_pages = cached_pages(bpath, 65536);
	rc_diag("page cache after the writes: direct %ld, buffered %ld pages",
		direct_pages, buffered_pages);
	if (direct_pages >= 0) {
		CU_ASSERT_EQUAL(direct_pages, 0);
		CU_ASSERT(buffered_pages > 0);
	}
	CU_ASSERT_EQUAL(pread(bfd, buf + 2 * 65536, 65536, 0), 65536);
	CU_ASSERT(!memcmp(buf + 2 * 65536, buf + 1, 65536));
	fill(buf, 65536 + 4096, 3);
	/* misaligned offset and length reads: buffered, right bytes */
	memset(buf + 65536, 0, 8192);
	d = (struct rdmaxfer_file_desc){ fd, 1, 4096 };
	CU_ASSERT_EQUAL(rdmaxfer_file_read(f, &d, buf + 65536), 0);
	expect_way(f, RDMAXFER_FILE_RES_BUFFERED, "dio off");
	CU_ASSERT(!memcmp(buf + 65536, buf + 1, 4096));
	d = (struct rdmaxfer_file_desc){ fd, 0, 100 };
	CU_ASSERT_EQUAL(rdmaxfer_file_read(f, &d, buf + 2 * 65536), 0);
	expect_way(f, RDMAXFER_FILE_RES_BUFFERED, "dio len");
	CU_ASSERT(!memcmp(buf + 2 * 65536, buf, 100));
	/* aligned read back of a middle block: direct */
	memset(buf + 65536, 0, 4096);
	d = (struct rdmaxfer_file_desc){ fd, 8192, 4096 };
	CU_ASSERT_EQUAL(rdmaxfer_file_read(f, &d, buf + 65536), 0);
	expect_way(f, RDMAXFER_FILE_RES_DIRECT, "aligned read");
	CU_ASSERT(!memcmp(buf + 65536, buf + 8192, 4096));
	CU_ASSERT_EQUAL(rdmaxfer_file_query(f, &in), 0);
	CU_ASSERT_EQUAL(in.direct, 2);
	CU_ASSERT_EQUAL(in.dio_fallbacks, 3);
	CU_ASSERT_EQUAL(in.failures, 0);
	close(fd);
	close(bfd);
	unlink(dpath);
	unlink(bpath);
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

/*
 * One injected failure ($RDMAXFER_FILE_INJECT, read at engine creation)
 * in a 64 KiB write (write) or read of 4 KiB chunks, 3 in flight: the
 * call returns want (0: it copes) and says at which stage; what it
 * reports as the destination's complete prefix is right; nothing hangs
 * or leaks a descriptor; the engine works again afterwards.
 */
static void inject_one(uint32_t flags, const char *spec, bool write, int want,
		       uint32_t stage)
{
	enum { LEN = 65536 };
	char *src = malloc(LEN), *dst = malloc(LEN);
	struct rdmaxfer_file_desc d;
	struct rdmaxfer_file_info in;
	struct rdmaxfer_file *f;
	int fd, fds, ret;

	CU_ASSERT_FATAL(src && dst);
	fds = open_fds();
	setenv("RDMAXFER_FILE_INJECT", spec, 1);
	f = engine(flags, 4096, 3);
	unsetenv("RDMAXFER_FILE_INJECT");
	CU_ASSERT_FATAL(f != NULL);
	fill(src, LEN, 77);
	memset(dst, 0, LEN);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	d = (struct rdmaxfer_file_desc){ fd, 0, LEN };
	if (!write)
		CU_ASSERT_FATAL(pwrite(fd, src, LEN, 0) == LEN);
	ret = write ? rdmaxfer_file_write(f, src, &d) :
		      rdmaxfer_file_read(f, &d, dst);
	CU_ASSERT_EQUAL(ret, want);
	CU_ASSERT_EQUAL_FATAL(rdmaxfer_file_query(f, &in), 0);
	rc_diag("%s %s: %d, stage %u, done %llu prefix %llu, short %llu: %s",
		spec, write ? "write" : "read", ret, in.last.stage,
		(unsigned long long)in.last.done,
		(unsigned long long)in.last.prefix,
		(unsigned long long)in.short_ios, rdmaxfer_file_msg(f));
	CU_ASSERT_EQUAL(in.last.err, want);
	CU_ASSERT_EQUAL(in.last.stage, stage);
	CU_ASSERT(in.last.prefix <= in.last.done);
	CU_ASSERT(in.last.done <= LEN);
	if (!want) {
		CU_ASSERT_EQUAL(in.last.prefix, LEN);
	} else {
		CU_ASSERT(in.last.prefix < LEN);
		CU_ASSERT(rdmaxfer_file_msg(f)[0] != '\0');
	}
	/* the prefix said complete is: in the file, or in the buffer */
	if (write)
		CU_ASSERT(pread(fd, dst, LEN, 0) >= (ssize_t)in.last.prefix);
	CU_ASSERT(!memcmp(dst, src, in.last.prefix));
	/* the engine is usable again */
	memset(dst, 0, LEN);
	CU_ASSERT_EQUAL(rdmaxfer_file_write(f, src, &d), 0);
	CU_ASSERT_EQUAL(rdmaxfer_file_read(f, &d, dst), 0);
	CU_ASSERT(!memcmp(dst, src, LEN));
	close(fd);
	rdmaxfer_file_destroy(f);
	CU_ASSERT_EQUAL(open_fds(), fds);
	free(src);
	free(dst);
}

static void test_inject(void)
{
	const uint32_t io = RDMAXFER_FILE_STAGE_IO;
	const uint32_t sub = RDMAXFER_FILE_STAGE_SUBMIT;
	struct rdmaxfer_file *f = NULL;
	struct rdmaxfer_file_attr attr = {
		.flags = RDMAXFER_FILE_REQUIRE_URING,
	};

	if (rdmaxfer_file_create(&attr, &f)) {
		rc_skip("no io_uring here: the pread/pwrite cases only");
	} else {
		rdmaxfer_file_destroy(f);
		/* a short completion is resubmitted: the call copes */
		inject_one(0, "short:2", true, 0, 0);
		inject_one(0, "short:5", false, 0, 0);
		/* a submit that consumed nothing (EAGAIN) is retried */
		inject_one(0, "submit:1:11", true, 0, 0);
		/* an error completion, EOF, a failed submit: each fails */
		inject_one(0, "cqe:4:5", true, -EIO, io);
		inject_one(0, "cqe:1:28", false, -ENOSPC, io);
		inject_one(0, "eof:3", false, -ENODATA, io);
		inject_one(0, "submit:1:5", true, -EIO, sub);
		/* ...with chunks already in flight: drained, then reset */
		inject_one(0, "submit:3:12", false, -ENOMEM, sub);
	}
	inject_one(RDMAXFER_FILE_NO_URING, "short:3", true, 0, 0);
	inject_one(RDMAXFER_FILE_NO_URING, "cqe:6:5", true, -EIO, io);
	inject_one(RDMAXFER_FILE_NO_URING, "eof:2", false, -ENODATA, io);
}

static const struct rc_test_case cases[] = {
	{ "bad_attr", test_bad_attr },
	{ "io_uring_sizes", test_uring },
	{ "pread_fallback_sizes", test_pread },
	{ "bad_input", test_bad_input },
	{ "o_direct", test_direct },
	{ "io_uring_unavailable", test_unavailable },
	{ "injected_failures", test_inject },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	rc_add_suite("rdmaxfer_file", suite_init, suite_clean, cases);
	return rc_test_main(argc, argv);
}
