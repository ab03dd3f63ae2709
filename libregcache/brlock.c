// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * brlock.c - reader registration and the writer side of the brlock.
 *
 * Writers are rare (misses, evictions, invalidations) and already pay for
 * a registration or a system call, so a membarrier and a walk over the
 * process's reader records are cheap next to them.
 *
 * Reader records.  A record belongs to one thread from its first read
 * section to its exit and names the brlock it read-holds, if any.  Three
 * events leave records behind that no running thread owns:
 *
 * - fork: the child has only the thread that called fork, but a copy of
 *   every record.  A parent thread that was inside a read section at the
 *   fork leaves its record naming that lock, so a writer in the child
 *   would wait for it forever.  rc_brlock_atfork_child() clears every
 *   record but the caller's and frees them for reuse.  Plain stores are
 *   enough there: the child is single threaded while fork handlers run.
 *   A child made by a raw clone runs no fork handler; libregcache notices
 *   it before the child's first cache exists (regcache.c) and calls
 *   rc_brlock_forget_parent(), which clears the lock words (no brlock of
 *   the child exists yet, and the parent's caches are never write-locked
 *   in a child, so no live read section can be lost) but leaves the
 *   records in use, since the thread that cloned may be another than the
 *   caller and still points at its own.
 *
 * - thread exit: the key destructor frees the record and clears
 *   rc_my_reader.  POSIX leaves the order of key destructors unspecified,
 *   so an application destructor may call regcache_get/put after ours ran;
 *   it then finds rc_my_reader NULL and registers again, which arms the
 *   key once more, so glibc runs our destructor in its next round (up to
 *   PTHREAD_DESTRUCTOR_ITERATIONS).  Before, rc_my_reader kept pointing at
 *   the freed record: a new thread could claim it and the two threads
 *   would share one lock word, so the one leaving its section first would
 *   hide the other's from a writer (a lost reader).  A registration after
 *   the last destructor round keeps its record for good: one 64-byte
 *   record, its lock word NULL, never a wrong one.  Records are never
 *   freed, so nothing is used after free.
 *
 * - membarrier failing at run time: see rc_brlock_fallback().
 */
#include "config.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "brlock.h"

/*
 * How long the switch away from membarrier waits for read sections begun
 * under the asymmetric protocol; see rc_brlock_fallback().
 */
#define RC_BRLOCK_DRAIN_NS	(10 * 1000 * 1000L)

#ifndef MEMBARRIER_CMD_GLOBAL
#define MEMBARRIER_CMD_GLOBAL	MEMBARRIER_CMD_SHARED	/* before 4.16 */
#endif

_Atomic int rc_brlock_mode;
__thread struct rc_reader *rc_my_reader __attribute__((tls_model("initial-exec")));

/*
 * A full (seq_cst) fence.  TSan does not model fences (gcc -Wtsan): there
 * a locked read-modify-write of a private word is the same full barrier
 * on every architecture TSan runs on.  The happens-before edges TSan needs
 * come from the reader records' release stores, not from here.
 */
#ifdef __SANITIZE_THREAD__
static _Atomic unsigned long rc_fence_word;
#define rc_full_fence()	((void)atomic_fetch_add(&rc_fence_word, 0))
#else
#define rc_full_fence()	atomic_thread_fence(memory_order_seq_cst)
#endif

static struct rc_reader *_Atomic rc_readers;	/* push-only list */
static pthread_once_t rc_brlock_once = PTHREAD_ONCE_INIT;
static pthread_key_t rc_reader_key;
static pthread_mutex_t rc_brlock_switch_lock = PTHREAD_MUTEX_INITIALIZER;

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

static void rc_reader_exit(void *p)
{
	struct rc_reader *r = p;

	atomic_store(&r->lock, NULL);
	/*
	 * A later destructor of this thread must not use the record we give
	 * away (see "thread exit" above): make it register again.
	 */
	if (rc_my_reader == r)
		rc_my_reader = NULL;
	atomic_store(&r->in_use, false);
}

static void rc_brlock_atfork_child(void)
{
	struct rc_reader *r;

	/* Only the calling thread exists: plain stores, no ordering needed. */
	for (r = atomic_load(&rc_readers); r; r = r->next) {
		if (r == rc_my_reader)
			continue;
		atomic_store_explicit(&r->lock, NULL, memory_order_relaxed);
		atomic_store_explicit(&r->in_use, false, memory_order_relaxed);
	}
	/* It may have been copied locked by a thread that is not here. */
	pthread_mutex_init(&rc_brlock_switch_lock, NULL);
}

void rc_brlock_forget_parent(void)
{
	struct rc_reader *r;

	for (r = atomic_load(&rc_readers); r; r = r->next)
		atomic_store(&r->lock, NULL);
}

static void rc_brlock_setup(void)
{
	pthread_key_create(&rc_reader_key, rc_reader_exit);
	pthread_atfork(NULL, NULL, rc_brlock_atfork_child);
	/* The registration is per mm and is inherited by fork. */
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
		atomic_store(&rc_brlock_mode, RC_BRLOCK_ASYM);
}

struct rc_reader *rc_reader_register(void)
{
	struct rc_reader *r;

	pthread_once(&rc_brlock_once, rc_brlock_setup);
	/* Reuse the record of a thread that exited. */
	for (r = atomic_load(&rc_readers); r; r = r->next) {
		bool f = false;

		if (!atomic_load(&r->in_use) &&
		    atomic_compare_exchange_strong(&r->in_use, &f, true))
			goto found;
	}
	r = aligned_alloc(RC_CACHELINE, sizeof(*r));
	if (!r)
		abort();	/* a few bytes once per thread */
	atomic_init(&r->lock, NULL);
	atomic_init(&r->in_use, true);
	r->next = atomic_load(&rc_readers);
	while (!atomic_compare_exchange_weak(&rc_readers, &r->next, r))
		;
	/* see rc_sole_reader(): a writer that did not see r on the list
	 * is seen by r's first read section */
	rc_full_fence();
found:
	/* Also re-arms the destructor when called from a late destructor. */
	pthread_setspecific(rc_reader_key, r);
	rc_my_reader = r;
	return r;
}

int rc_brlock_init(struct rc_brlock *l)
{
	pthread_once(&rc_brlock_once, rc_brlock_setup);
	atomic_init(&l->writer, 0);
	return -pthread_mutex_init(&l->wmutex, NULL);
}

void rc_brlock_destroy(struct rc_brlock *l)
{
	pthread_mutex_destroy(&l->wmutex);
}

static void rc_sleep_ns(long ns)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ns };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * membarrier failed although it worked when the process registered (a
 * seccomp filter installed later, an mm whose registration is gone).
 * Skipping it would be wrong: a reader under the asymmetric protocol has
 * only a compiler barrier between storing its record and loading the
 * writer flag, so the CPU may perform the load first and both sides would
 * go ahead (store->load reordering, the one x86 allows too).  Retrying
 * forever would hang.  So the process switches for good to the symmetric
 * protocol, in which readers use a sequentially consistent exchange:
 *
 * 1. mode := SWITCHING, then a full fence.  Readers that load the mode
 *    after that use the exchange; writers that see SWITCHING come here
 *    and wait on the switch lock until step 3, so no writer relies on the
 *    fence alone before the drain is over.
 * 2. If MEMBARRIER_CMD_GLOBAL still works (the private command failed
 *    for want of a registration, not by a filter), it proves what step 3
 *    needs: every running thread passed a full barrier after step 1.
 *    Otherwise wait RC_BRLOCK_DRAIN_NS.  A reader that began its section
 *    under the asymmetric protocol (it loaded ASYM before step 1 became
 *    visible) stored its record before loading the writer flag; that
 *    store leaves the CPU's store buffer within a bounded time while the
 *    thread runs (microseconds; nothing lets a store wait behind later
 *    loads for milliseconds), and a thread switched out in the meantime
 *    passes the full barrier of the scheduler's context switch.  After
 *    the drain the record therefore shows such a reader, and the scan
 *    below waits for it as usual.  This is the one step that rests on
 *    the hardware and not on the C11 model; it runs once per process,
 *    and only a membarrier would prove more.
 * 3. mode := SYM.  From here on writer and reader each have a full
 *    barrier between their store and their load (seq_cst fence / seq_cst
 *    exchange): the store-buffering pattern under seq_cst, in which at
 *    least one side sees the other's store.
 *
 * The failure is logged once (never silent) and the caller still makes
 * its own full fence afterwards.
 */
static void rc_brlock_fallback(int err)
{
	pthread_mutex_lock(&rc_brlock_switch_lock);
	if (atomic_load(&rc_brlock_mode) != RC_BRLOCK_SYM) {
		atomic_store(&rc_brlock_mode, RC_BRLOCK_SWITCHING);
		rc_full_fence();
		rc_log("membarrier failed at run time (%s): brlock readers switch to a full barrier",
		       strerror(err));
		if (membarrier(MEMBARRIER_CMD_GLOBAL))
			rc_sleep_ns(RC_BRLOCK_DRAIN_NS);
		atomic_store(&rc_brlock_mode, RC_BRLOCK_SYM);
	}
	pthread_mutex_unlock(&rc_brlock_switch_lock);
}

/*
 * Does the reader list hold no record but the calling writer's own?
 * Then no other thread can be inside a read section, and the writer
 * needs neither the membarrier nor the scan: a single-threaded user of
 * the cache (the common case, and every miss's write sections) makes no
 * system call for its lock.
 *
 * The argument.  The writer stored its flag (seq_cst, in
 * rc_brlock_write_lock()) before this seq_cst load of the list head.
 * A thread t that is not on the list when the writer loads it, in the
 * total order S of seq_cst operations, pushes its record later: its
 * push (a seq_cst CAS on rc_readers) follows the writer's load in S,
 * and so does the seq_cst fence rc_reader_register() makes after the
 * push, which is sequenced before every read section of t.  By C11's
 * fence rule, t's load of the writer flag after that fence observes the
 * writer's store (the last seq_cst store to the flag before the fence
 * in S) or a later one: t sees the flag and steps back, or sees the
 * writer's unlock, when the section is over.  A record pushed before the
 * load is on the list, so the writer takes the membarrier path.  Records
 * are never removed (threads that exit leave theirs for reuse), so an
 * exited thread's record, a forked child's copies of its parent's and a
 * second thread's all keep the list longer than one: only a process in
 * which one thread ever read-locked a cache skips the barrier.  The
 * writer's own record names no lock here (it would deadlock on itself
 * otherwise), so there is nothing to scan for.  Only the asymmetric
 * protocol pays a system call; the others keep their fence.
 */
static bool rc_sole_reader(void)
{
	struct rc_reader *head = atomic_load(&rc_readers);

	return !head || (head == rc_my_reader && !head->next);
}

static void wait_readers(struct rc_brlock *l)
{
	int mode = atomic_load(&rc_brlock_mode);
	struct rc_reader *r;
	unsigned int spins;

	if (mode == RC_BRLOCK_ASYM) {
		if (rc_sole_reader())
			return;
		if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
			goto scan;
		/* -EPERM: not (or no longer) registered; register again once. */
		if (errno == EPERM &&
		    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
		    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
			goto scan;
		rc_brlock_fallback(errno);
	} else if (mode == RC_BRLOCK_SWITCHING) {
		rc_brlock_fallback(0);
	}
	rc_full_fence();
scan:
	for (r = atomic_load(&rc_readers); r; r = r->next)
		for (spins = 0; atomic_load(&r->lock) == l; spins++)
			if (spins > 64)
				sched_yield();
}

void rc_brlock_write_lock(struct rc_brlock *l)
{
	pthread_mutex_lock(&l->wmutex);
	atomic_store(&l->writer, 1);
	wait_readers(l);
}

bool rc_brlock_write_trylock(struct rc_brlock *l)
{
	if (pthread_mutex_trylock(&l->wmutex))
		return false;
	atomic_store(&l->writer, 1);
	wait_readers(l);
	return true;
}

void rc_brlock_write_unlock(struct rc_brlock *l)
{
	atomic_store(&l->writer, 0);
	pthread_mutex_unlock(&l->wmutex);
}
