// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * brlock.c - reader registration and the writer side of the brlock.
 *
 * Writers are rare (misses, evictions, invalidations) and already pay for
 * a registration or a system call, so a membarrier and a walk over the
 * process's reader records are cheap next to them.
 */
#include "config.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "brlock.h"

bool rc_brlock_asym;
__thread struct rc_reader *rc_my_reader __attribute__((tls_model("initial-exec")));

static struct rc_reader *_Atomic rc_readers;	/* push-only list */
static pthread_once_t rc_brlock_once = PTHREAD_ONCE_INIT;
static pthread_key_t rc_reader_key;

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

static void rc_reader_exit(void *p)
{
	struct rc_reader *r = p;

	atomic_store(&r->lock, NULL);
	atomic_store(&r->in_use, false);
}

static void rc_brlock_setup(void)
{
	pthread_key_create(&rc_reader_key, rc_reader_exit);
	rc_brlock_asym =
		membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

struct rc_reader *rc_reader_register(void)
{
	struct rc_reader *r;
	bool f = false;

	pthread_once(&rc_brlock_once, rc_brlock_setup);
	/* Reuse the record of a thread that exited. */
	for (r = atomic_load(&rc_readers); r; r = r->next)
		if (!atomic_load(&r->in_use) &&
		    atomic_compare_exchange_strong(&r->in_use, &f, true))
			goto found;
	r = aligned_alloc(RC_CACHELINE, sizeof(*r));
	if (!r)
		abort();	/* a few bytes once per thread */
	atomic_init(&r->lock, NULL);
	atomic_init(&r->in_use, true);
	r->next = atomic_load(&rc_readers);
	while (!atomic_compare_exchange_weak(&rc_readers, &r->next, r))
		;
found:
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

static void wait_readers(struct rc_brlock *l)
{
	struct rc_reader *r;
	unsigned int spins;

	if (!rc_brlock_asym || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
#ifdef __SANITIZE_THREAD__
		/* TSan does not model fences (gcc -Wtsan); a locked RMW is
		 * the same full barrier.  The happens-before edges TSan needs
		 * come from the records' release stores, not from here. */
		(void)atomic_fetch_add(&l->writer, 0);
#else
		atomic_thread_fence(memory_order_seq_cst);
#endif
	}
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
