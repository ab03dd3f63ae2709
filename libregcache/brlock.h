/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * brlock.h - a reader-writer lock whose read side touches no shared line.
 *
 * The hit path of the cache must scale across threads.  A pthread rwlock
 * makes every reader write the same cache line, which then bounces between
 * cores on every lookup.  Here each thread increments a counter in its own
 * cache line (threads are spread over RC_BRLOCK_SLOTS padded counters) and
 * then checks a writer flag; a writer raises the flag and waits until every
 * counter is zero.  Readers that see the flag step back and queue on the
 * writer mutex, so writers cannot starve.  The read side is two atomic
 * operations on a line no other thread writes in the common case.
 */
#ifndef RC_BRLOCK_H
#define RC_BRLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define RC_BRLOCK_SLOTS	64
#define RC_CACHELINE	64

struct rc_brlock_slot {
	_Atomic long readers;
	char pad[RC_CACHELINE - sizeof(long)];
};

struct rc_brlock {
	struct rc_brlock_slot slot[RC_BRLOCK_SLOTS];
	_Atomic int writer;
	pthread_mutex_t wmutex;		/* held by the writer for its whole section */
};

int rc_brlock_init(struct rc_brlock *l);
void rc_brlock_destroy(struct rc_brlock *l);

/* The calling thread's slot index, fixed for its lifetime. */
unsigned int rc_brlock_my_slot(void);

static inline unsigned int rc_brlock_read_lock(struct rc_brlock *l)
{
	unsigned int s = rc_brlock_my_slot();

	for (;;) {
		/* seq_cst RMW then load: pairs with the writer's store then loads. */
		atomic_fetch_add(&l->slot[s].readers, 1);
		if (!atomic_load(&l->writer))
			return s;
		atomic_fetch_sub(&l->slot[s].readers, 1);
		/* Wait for the writer without spinning. */
		pthread_mutex_lock(&l->wmutex);
		pthread_mutex_unlock(&l->wmutex);
	}
}

static inline void rc_brlock_read_unlock(struct rc_brlock *l, unsigned int s)
{
	atomic_fetch_sub_explicit(&l->slot[s].readers, 1, memory_order_release);
}

void rc_brlock_write_lock(struct rc_brlock *l);
bool rc_brlock_write_trylock(struct rc_brlock *l);
void rc_brlock_write_unlock(struct rc_brlock *l);

#endif /* RC_BRLOCK_H */
