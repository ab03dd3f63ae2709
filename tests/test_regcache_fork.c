// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_regcache_fork.c - libregcache across fork, raw clone and thread
 * exit, and the brlock when membarrier starts failing.
 *
 * Suite "clone" uses the library (uffd on the host, the monitor named by
 * RC_TEST_MONITOR in the VM, where kmod is the one whose status page a
 * child does not inherit).  Suite "brlock" links a private copy of
 * brlock.c, so it can hold a read section across a fork or a thread exit
 * and look at the lock's records.  Every child runs under alarm(): a
 * child that hangs or crashes is reported by its wait status.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "regcache.h"
#include "rc_test.h"
#include "test_regcache_backend.h"
#include "../libregcache/brlock.h"

#define CHILD_TIMEOUT	20	/* seconds before a child counts as hung */

static size_t psz;
static enum regcache_monitor_type mon_type = REGCACHE_MONITOR_UFFD;
static struct tb_backend be;

/* brlock.c logs through rc_log; count what it says. */
static _Atomic int log_membarrier;

void rc_log(const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (strstr(buf, "membarrier"))
		atomic_fetch_add(&log_membarrier, 1);
}

static char *map_pages(size_t n)
{
	char *p = mmap(NULL, n * psz, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 1, n * psz);
	return p;
}

static int make_cache(struct regcache **c)
{
	struct regcache_attr a = {
		.reg = tb_reg, .dereg = tb_dereg, .user = &be,
		.monitor = mon_type, .flags = REGCACHE_ATTR_NO_ENV,
	};

	return regcache_create(&a, c);
}

/* fork(2) without the pthread_atfork handlers: the raw system call. */
static pid_t raw_clone(void)
{
	return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
}

/* Wait for a child; 0 if it exited 0, else a bit mask / signal number. */
static int reap(pid_t pid, const char *what)
{
	int status;

	if (waitpid(pid, &status, 0) != pid) {
		rc_diag("%s: waitpid: %s", what, strerror(errno));
		return -1;
	}
	if (WIFSIGNALED(status)) {
		rc_diag("%s: child killed by signal %d (%s)", what,
			WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 1000 + WTERMSIG(status);
	}
	if (WEXITSTATUS(status))
		rc_diag("%s: child exit status %#x", what, WEXITSTATUS(status));
	return WEXITSTATUS(status);
}

/* ----------------------------------------------------------- clone suite */

/*
 * The child of a raw clone: every call on the parent's cache must say
 * -ESTALE or false without touching the monitor (the kmod status page is
 * not mapped here: a read is SIGSEGV) or the parent's registrations; a new
 * cache of its own must work.
 */
static int clone_child(struct regcache *cache, struct regcache_entry *e,
		       char *buf)
{
	struct regcache_entry *x;
	struct regcache *mine;
	long deregs = atomic_load(&be.deregs);
	int bad = 0;

	alarm(CHILD_TIMEOUT);
	if (regcache_get(cache, buf, psz, 1, &x) != -ESTALE)
		bad |= 0x01;
	if (regcache_entry_valid(cache, e))
		bad |= 0x02;
	if (regcache_put(cache, e) != -ESTALE)
		bad |= 0x04;
	if (regcache_flush(cache) != -ESTALE)
		bad |= 0x08;
	regcache_destroy(cache);
	if (atomic_load(&be.deregs) != deregs || be.bad_deregs)
		bad |= 0x10;
	if (make_cache(&mine)) {
		bad |= 0x20;
	} else {
		if (regcache_get(mine, buf + psz, psz, 1, &x))
			bad |= 0x40;
		else if (!regcache_entry_cached(x) ||
			 !regcache_entry_valid(mine, x) ||
			 regcache_put(mine, x))
			bad |= 0x80;
		regcache_destroy(mine);
	}
	return bad;
}

static void clone_stale(bool raw)
{
	struct regcache_entry *e, *h;
	struct regcache *cache;
	char *buf = map_pages(4);
	pid_t pid;

	CU_ASSERT_FATAL(buf != NULL);
	memset(&be, 0, sizeof(be));
	CU_ASSERT_FATAL(make_cache(&cache) == 0);
	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, buf, psz, 1, &e), 0);
	CU_ASSERT_FATAL(regcache_entry_cached(e));
	CU_ASSERT_FATAL(regcache_entry_valid(cache, e));
	pid = raw ? raw_clone() : fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0)
		_exit(clone_child(cache, e, buf));
	CU_ASSERT_EQUAL(reap(pid, raw ? "raw clone" : "fork"), 0);
	/* The parent's cache is untouched and still hits. */
	CU_ASSERT(regcache_entry_valid(cache, e));
	CU_ASSERT_EQUAL(regcache_get(cache, buf, psz, 1, &h), 0);
	CU_ASSERT_EQUAL(h, e);
	CU_ASSERT_EQUAL(be.regs, 1);
	CU_ASSERT_EQUAL(be.deregs, 0);
	regcache_put(cache, h);
	regcache_put(cache, e);
	regcache_destroy(cache);
	CU_ASSERT_EQUAL(be.live, 0);
	munmap(buf, 4 * psz);
}

static void test_raw_clone_stale(void)
{
	if (rc_skip_fork_under_tsan())
		return;
	clone_stale(true);
}

static void test_fork_stale(void)
{
	if (rc_skip_fork_under_tsan())
		return;
	clone_stale(false);
}

/* The fd number of the parent's /dev/regcache, found in /proc. */
static int find_regcache_fd(void)
{
	char path[300], target[64];
	struct dirent *d;
	int fd = -1;
	DIR *dir;

	dir = opendir("/proc/self/fd");
	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (!strcmp(target, "/dev/regcache")) {
			fd = atoi(d->d_name);
			break;
		}
	}
	closedir(dir);
	return fd;
}

/*
 * The child makes its own cache before it destroys the parent's.  Its
 * status page may land where the parent's was (the parent's is not
 * inherited, so that address is free), and with kmod the child first
 * closes the inherited fd so that its own open reuses the number: the
 * parent cache's destroy must unmap and close neither.
 */
static int own_first_child(struct regcache *cache, char *buf)
{
	struct regcache_entry *x, *y;
	struct regcache *mine;
	int bad = 0, fd;

	alarm(CHILD_TIMEOUT);
	if (mon_type == REGCACHE_MONITOR_KMOD) {
		fd = find_regcache_fd();
		if (fd < 0)
			return 0x01;
		close(fd);
	}
	if (make_cache(&mine))
		return 0x02;
	if (regcache_get(mine, buf + psz, psz, 1, &x))
		return 0x04;
	regcache_destroy(cache);
	if (!regcache_entry_valid(mine, x))	/* reads the status page */
		bad |= 0x08;
	if (regcache_get(mine, buf + psz, psz, 1, &y) || y != x)
		bad |= 0x10;
	else
		regcache_put(mine, y);
	if (regcache_process_events(mine) < 0)
		bad |= 0x20;
	fd = regcache_fd(mine);
	if (fd >= 0 && fcntl(fd, F_GETFD) < 0)
		bad |= 0x40;	/* the parent cache's destroy closed it */
	regcache_put(mine, x);
	regcache_destroy(mine);
	return bad;
}

static void clone_own_first(bool raw)
{
	struct regcache *cache;
	struct regcache_entry *e;
	char *buf = map_pages(4);
	pid_t pid;

	CU_ASSERT_FATAL(buf != NULL);
	memset(&be, 0, sizeof(be));
	CU_ASSERT_FATAL(make_cache(&cache) == 0);
	CU_ASSERT_EQUAL_FATAL(regcache_get(cache, buf, psz, 1, &e), 0);
	pid = raw ? raw_clone() : fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0)
		_exit(own_first_child(cache, buf));
	CU_ASSERT_EQUAL(reap(pid, raw ? "raw clone, own cache first" :
					"fork, own cache first"), 0);
	CU_ASSERT(regcache_entry_valid(cache, e));
	regcache_put(cache, e);
	regcache_destroy(cache);
	CU_ASSERT_EQUAL(be.live, 0);
	munmap(buf, 4 * psz);
}

static void test_raw_clone_own_first(void)
{
	if (rc_skip_fork_under_tsan())
		return;
	clone_own_first(true);
}

static void test_fork_own_first(void)
{
	if (rc_skip_fork_under_tsan())
		return;
	clone_own_first(false);
}

/*
 * A parent thread that hits the cache in a loop is inside a read section
 * much of the time; children made while it is leave its record naming the
 * cache.  The child destroys the parent's cache, makes a new one and
 * misses in it, which takes the write lock: it must not wait for the
 * thread it does not have, nor (raw clone) take the parent's cache for
 * its own (a flush there would wait for that thread too).  The hang needs
 * the new cache at the old address, which glibc's posix_memalign rarely
 * gives; the brlock suite below holds the section deterministically.
 */
static struct regcache *hot_cache;
static char *hot_buf;
static _Atomic bool hot_stop;
static _Atomic long hot_hits;

static void *hot_reader(void *arg)
{
	struct regcache_entry *x;

	while (!atomic_load(&hot_stop)) {
		if (regcache_get(hot_cache, hot_buf, psz, 1, &x) == 0) {
			regcache_put(hot_cache, x);
			atomic_fetch_add(&hot_hits, 1);
		}
	}
	return NULL;
}

static int hot_child(void)
{
	struct regcache_entry *x;
	struct regcache *mine;
	void *old = hot_cache;
	int bad = 0;

	alarm(CHILD_TIMEOUT);
	regcache_destroy(hot_cache);
	if (make_cache(&mine))
		return 0x01;
	if (regcache_get(mine, hot_buf + psz, psz, 1, &x))
		bad |= 0x02;
	else
		regcache_put(mine, x);
	if (regcache_flush(mine))
		bad |= 0x04;
	regcache_destroy(mine);
	/* Tell the parent whether the address was reused (exit bit 0x80). */
	return bad | ((void *)mine == old ? 0x80 : 0);
}

static void clone_mid_section(bool raw)
{
	struct regcache_entry *e;
	int i, reused = 0, failed = 0;
	pthread_t t;

	hot_buf = map_pages(4);
	CU_ASSERT_FATAL(hot_buf != NULL);
	memset(&be, 0, sizeof(be));
	CU_ASSERT_FATAL(make_cache(&hot_cache) == 0);
	CU_ASSERT_EQUAL_FATAL(regcache_get(hot_cache, hot_buf, psz, 1, &e), 0);
	atomic_store(&hot_stop, false);
	atomic_store(&hot_hits, 0);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, hot_reader, NULL) == 0);
	while (atomic_load(&hot_hits) < 1000)
		sched_yield();
	for (i = 0; i < 20; i++) {
		pid_t pid = raw ? raw_clone() : fork();
		int st;

		if (pid == 0)
			_exit(hot_child());
		if (pid < 0) {
			failed++;
			break;
		}
		st = reap(pid, raw ? "raw clone, reader mid-section" :
				     "fork, reader mid-section");
		if (st >= 0 && st < 1000 && (st & 0x80))
			reused++;
		if (st < 0 || (st & ~0x80))
			failed++;
		usleep(1000);
	}
	atomic_store(&hot_stop, true);
	pthread_join(t, NULL);
	rc_diag("%s: 20 children, cache address reused in %d", raw ? "raw clone" : "fork",
		reused);
	CU_ASSERT_EQUAL(failed, 0);
	regcache_put(hot_cache, e);
	regcache_destroy(hot_cache);
	CU_ASSERT_EQUAL(be.live, 0);
	munmap(hot_buf, 4 * psz);
}

static void test_raw_clone_mid_section(void)
{
	if (rc_skip_fork_under_tsan())
		return;
	clone_mid_section(true);
}

static void test_fork_mid_section(void)
{
	if (rc_skip_fork_under_tsan())
		return;
	clone_mid_section(false);
}

/*
 * An application key destructor that runs after libregcache's own (keys
 * are destroyed in creation order by glibc) and still uses the cache.
 */
static pthread_key_t app_key_late;
static struct regcache *dtor_cache;
static char *dtor_buf;
static _Atomic int dtor_ret = 1;

static void dtor_use_cache(void *arg)
{
	struct regcache_entry *x;
	int ret;

	ret = regcache_get(dtor_cache, dtor_buf, psz, 1, &x);
	if (!ret)
		ret = regcache_put(dtor_cache, x);
	atomic_store(&dtor_ret, ret);
}

static void *dtor_thread(void *arg)
{
	struct regcache_entry *x;

	if (regcache_get(dtor_cache, dtor_buf, psz, 1, &x) == 0)
		regcache_put(dtor_cache, x);
	pthread_setspecific(app_key_late, (void *)1);
	return NULL;
}

static void test_thread_exit_put(void)
{
	pthread_t t;
	int i;

	dtor_buf = map_pages(2);
	CU_ASSERT_FATAL(dtor_buf != NULL);
	memset(&be, 0, sizeof(be));
	CU_ASSERT_FATAL(make_cache(&dtor_cache) == 0);
	/* The library's key exists now (the cache made it): ours runs later. */
	CU_ASSERT_FATAL(pthread_key_create(&app_key_late, dtor_use_cache) == 0);
	for (i = 0; i < 50; i++) {
		atomic_store(&dtor_ret, 1);
		CU_ASSERT_FATAL(pthread_create(&t, NULL, dtor_thread, NULL) == 0);
		pthread_join(t, NULL);
		CU_ASSERT_EQUAL(atomic_load(&dtor_ret), 0);
	}
	/* A miss takes the write lock: no record may still be held. */
	CU_ASSERT_EQUAL(regcache_flush(dtor_cache), 0);
	pthread_key_delete(app_key_late);
	regcache_destroy(dtor_cache);
	CU_ASSERT_EQUAL(be.live, 0);
	munmap(dtor_buf, 2 * psz);
}

/* ---------------------------------------------------------- brlock suite */

static struct rc_brlock bl;
static pthread_key_t key_early;		/* made before brlock.c's key */
static pthread_key_t key_late;		/* made after it */

/* A thread that holds the read side until told to let go. */
static sem_t held, release;

static void *hold_reader(void *arg)
{
	struct rc_reader *r = rc_brlock_read_lock(&bl);

	sem_post(&held);
	while (sem_wait(&release) && errno == EINTR)
		;
	rc_brlock_read_unlock(&bl, r);
	return NULL;
}

static _Atomic int writer_in;

static void *writer_thread(void *arg)
{
	rc_brlock_write_lock(&bl);
	atomic_store(&writer_in, 1);
	rc_brlock_write_unlock(&bl);
	return NULL;
}

static _Atomic int child_done;

static void *child_reader(void *arg)
{
	struct rc_reader *r = rc_brlock_read_lock(&bl);

	sem_post(&held);
	usleep(100000);
	atomic_store(&child_done, 1);
	rc_brlock_read_unlock(&bl, r);
	return NULL;
}

/*
 * Fork while another thread is inside a read section.  In the child that
 * thread does not exist: the writer must get the lock, and must still wait
 * for a reader the child starts (which may reuse the dead thread's record).
 */
static void brlock_fork(bool raw)
{
	pthread_t t, w;
	pid_t pid;

	sem_init(&held, 0, 0);
	sem_init(&release, 0, 0);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, hold_reader, NULL) == 0);
	sem_wait(&held);
	pid = raw ? raw_clone() : fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		pthread_t u;
		int bad = 0;

		alarm(CHILD_TIMEOUT);
		/* What regcache_create does first in a child it did not see. */
		if (raw)
			rc_brlock_forget_parent();
		sem_init(&held, 0, 0);
		rc_brlock_write_lock(&bl);
		rc_brlock_write_unlock(&bl);
		if (pthread_create(&u, NULL, child_reader, NULL))
			_exit(0x40);
		sem_wait(&held);
		rc_brlock_write_lock(&bl);
		if (!atomic_load(&child_done))
			bad |= 0x01;	/* missed the child's reader */
		rc_brlock_write_unlock(&bl);
		pthread_join(u, NULL);
		_exit(bad);
	}
	CU_ASSERT_EQUAL(reap(pid, raw ? "raw clone" : "fork"), 0);
	/* The parent's reader is still there and still counted. */
	atomic_store(&writer_in, 0);
	CU_ASSERT_FATAL(pthread_create(&w, NULL, writer_thread, NULL) == 0);
	usleep(100000);
	CU_ASSERT_EQUAL(atomic_load(&writer_in), 0);
	sem_post(&release);
	pthread_join(t, NULL);
	pthread_join(w, NULL);
	CU_ASSERT_EQUAL(atomic_load(&writer_in), 1);
}

static void test_brlock_fork_mid_section(void)
{
	if (rc_skip_fork_under_tsan())
		return;
	brlock_fork(false);
}

static void test_brlock_raw_clone_mid_section(void)
{
	if (rc_skip_fork_under_tsan())
		return;
	brlock_fork(true);
}

/*
 * A key destructor that read-locks after brlock.c's destructor released
 * the thread's record.  While it holds the section, a new thread reads
 * too (and may claim a free record), and a writer must wait for the
 * destructor's section.
 */
static struct rc_reader *dtor_rec, *new_rec;
static sem_t in_dtor, go_on;

static void dtor_hold_section(void *arg)
{
	struct rc_reader *r = rc_brlock_read_lock(&bl);

	dtor_rec = r;
	sem_post(&in_dtor);
	while (sem_wait(&go_on) && errno == EINTR)
		;
	rc_brlock_read_unlock(&bl, r);
}

static void *dtor_reader(void *arg)
{
	struct rc_reader *r = rc_brlock_read_lock(&bl);

	rc_brlock_read_unlock(&bl, r);
	pthread_setspecific(*(pthread_key_t *)arg, (void *)1);
	return NULL;
}

static void *plain_reader(void *arg)
{
	struct rc_reader *r = rc_brlock_read_lock(&bl);

	new_rec = r;
	rc_brlock_read_unlock(&bl, r);
	return NULL;
}

static void brlock_late_dtor(pthread_key_t *key)
{
	pthread_t a, b, w;

	sem_init(&in_dtor, 0, 0);
	sem_init(&go_on, 0, 0);
	dtor_rec = new_rec = NULL;
	atomic_store(&writer_in, 0);
	CU_ASSERT_FATAL(pthread_create(&a, NULL, dtor_reader, key) == 0);
	sem_wait(&in_dtor);
	CU_ASSERT_FATAL(pthread_create(&b, NULL, plain_reader, NULL) == 0);
	pthread_join(b, NULL);
	CU_ASSERT(new_rec != dtor_rec);		/* no shared record */
	CU_ASSERT_FATAL(pthread_create(&w, NULL, writer_thread, NULL) == 0);
	usleep(100000);
	CU_ASSERT_EQUAL(atomic_load(&writer_in), 0);	/* waits for a */
	sem_post(&go_on);
	pthread_join(a, NULL);
	pthread_join(w, NULL);
	CU_ASSERT_EQUAL(atomic_load(&writer_in), 1);
	/* The record a re-registered in its destructor was given back. */
	CU_ASSERT_FALSE(atomic_load(&dtor_rec->in_use));
	CU_ASSERT_PTR_NULL(atomic_load(&dtor_rec->lock));
}

static void test_brlock_dtor_after_ours(void)
{
	brlock_late_dtor(&key_late);
}

static void test_brlock_dtor_before_ours(void)
{
	brlock_late_dtor(&key_early);
}

/*
 * membarrier refused by seccomp after the process registered for it.  The
 * filter is installed on the writing thread only (prctl filters the
 * caller), in a child so the test process keeps working.
 */
static _Atomic int readers_inside, writer_inside, violations;
static _Atomic bool stop_readers;

static void *race_reader(void *arg)
{
	while (!atomic_load_explicit(&stop_readers, memory_order_relaxed)) {
		struct rc_reader *r = rc_brlock_read_lock(&bl);

		atomic_fetch_add_explicit(&readers_inside, 1, memory_order_relaxed);
		if (atomic_load_explicit(&writer_inside, memory_order_relaxed))
			atomic_fetch_add(&violations, 1);
		atomic_fetch_sub_explicit(&readers_inside, 1, memory_order_relaxed);
		rc_brlock_read_unlock(&bl, r);
	}
	return NULL;
}

static int deny_membarrier(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(f) / sizeof(f[0]), .filter = f,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	return 0;
}

static int membarrier_child(void)
{
	enum { READERS = 2, ROUNDS = 20000 };
	pthread_t t[READERS];
	int i, bad = 0;

	alarm(CHILD_TIMEOUT);
	if (atomic_load(&rc_brlock_mode) != RC_BRLOCK_ASYM)
		return 77;
	for (i = 0; i < READERS; i++)
		if (pthread_create(&t[i], NULL, race_reader, NULL))
			return 0x40;
	if (deny_membarrier())
		return 78;
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != -1 ||
	    errno != EPERM)
		return 0x20;
	for (i = 0; i < ROUNDS; i++) {
		rc_brlock_write_lock(&bl);
		atomic_store(&writer_inside, 1);
		if (atomic_load(&readers_inside))
			atomic_fetch_add(&violations, 1);
		atomic_store(&writer_inside, 0);
		rc_brlock_write_unlock(&bl);
		if (i == 0 && atomic_load(&rc_brlock_mode) != RC_BRLOCK_SYM)
			bad |= 0x01;	/* still relying on the barrier */
	}
	atomic_store(&stop_readers, true);
	for (i = 0; i < READERS; i++)
		pthread_join(t[i], NULL);
	if (atomic_load(&violations))
		bad |= 0x02;
	if (atomic_load(&log_membarrier) != 1)
		bad |= 0x04;	/* silent, or said more than once */
	return bad;
}

static void test_brlock_membarrier_fails(void)
{
	pid_t pid = fork();
	int st;

	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0)
		_exit(membarrier_child());
	st = reap(pid, "seccomp membarrier");
	if (st == 77) {
		rc_skip("membarrier PRIVATE_EXPEDITED unavailable on this kernel");
		return;
	}
	if (st == 78) {
		rc_skip("cannot install a seccomp filter here");
		return;
	}
	CU_ASSERT_EQUAL(st, 0);
}

static const struct rc_test_case clone_cases[] = {
	{ "raw_clone_stale", test_raw_clone_stale },
	{ "fork_stale", test_fork_stale },
	{ "raw_clone_own_cache_first", test_raw_clone_own_first },
	{ "fork_own_cache_first", test_fork_own_first },
	{ "raw_clone_reader_mid_section", test_raw_clone_mid_section },
	{ "fork_reader_mid_section", test_fork_mid_section },
	{ "thread_exit_dtor_put", test_thread_exit_put },
	{ NULL, NULL }
};

static const struct rc_test_case brlock_cases[] = {
	{ "fork_mid_section", test_brlock_fork_mid_section },
	{ "raw_clone_mid_section", test_brlock_raw_clone_mid_section },
	{ "dtor_after_ours", test_brlock_dtor_after_ours },
	{ "dtor_before_ours", test_brlock_dtor_before_ours },
	{ "membarrier_fails", test_brlock_membarrier_fails },
	{ NULL, NULL }
};

int main(int argc, char **argv)
{
	const char *m = getenv("RC_TEST_MONITOR");
	struct regcache *probe;
	int ret;

	psz = (size_t)sysconf(_SC_PAGESIZE);
	if (m && !strcmp(m, "kmod"))
		mon_type = REGCACHE_MONITOR_KMOD;
	/* brlock.c's key comes between these two. */
	if (pthread_key_create(&key_early, dtor_hold_section) ||
	    rc_brlock_init(&bl) ||
	    pthread_key_create(&key_late, dtor_hold_section))
		return RC_EXIT_ERROR;
	ret = make_cache(&probe);
	if (ret)
		rc_skip_all("monitor %s unavailable: %s", m ? m : "uffd",
			    strerror(-ret));
	regcache_destroy(probe);
	rc_add_suite("clone", NULL, NULL, clone_cases);
	rc_add_suite("brlock", NULL, NULL, brlock_cases);
	return rc_test_main(argc, argv);
}
