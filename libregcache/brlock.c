// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * brlock.c - the writer side of the distributed reader-writer lock.
 *
 * Writers are rare (misses, evictions, invalidations) and already pay for
 * a registration or a system call, so scanning 64 counters is cheap next
 * to them.
 */
#include "config.h"

#include <sched.h>

#include "brlock.h"

static _Atomic unsigned int rc_brlock_next_slot;
static __thread unsigned int rc_brlock_slot_plus1;

unsigned int rc_brlock_my_slot(void)
{
	unsigned int s = rc_brlock_slot_plus1;

	if (__builtin_expect(!s, 0)) {
		s = atomic_fetch_add_explicit(&rc_brlock_next_slot, 1,
					      memory_order_relaxed) % RC_BRLOCK_SLOTS + 1;
		rc_brlock_slot_plus1 = s;
	}
	return s - 1;
}

int rc_brlock_init(struct rc_brlock *l)
{
	unsigned int i;

	for (i = 0; i < RC_BRLOCK_SLOTS; i++)
		atomic_init(&l->slot[i].readers, 0);
	atomic_init(&l->writer, 0);
	return -pthread_mutex_init(&l->wmutex, NULL);
}

void rc_brlock_destroy(struct rc_brlock *l)
{
	pthread_mutex_destroy(&l->wmutex);
}

static void wait_readers(struct rc_brlock *l)
{
	unsigned int i, spins;

	for (i = 0; i < RC_BRLOCK_SLOTS; i++)
		for (spins = 0; atomic_load(&l->slot[i].readers); spins++)
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
