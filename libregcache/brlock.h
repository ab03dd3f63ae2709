/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * brlock.h - a reader-writer lock whose read side costs no atomic
 * read-modify-write and touches no shared cache line.
 *
 * The hit path of the cache takes the read side on every get and put, so
 * it must neither bounce a shared line between cores (as a pthread rwlock
 * does) nor pay for locked instructions, which cost 5-30 ns each.  Each
 * thread owns a reader record; to read-lock it stores the cache's address
 * there and then checks the cache's writer flag, with only a compiler
 * barrier in between.  The writer raises its flag and then runs
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which makes every running
 * thread of the process execute a full memory barrier: afterwards either
 * the writer sees the reader's record or the reader sees the flag (the
 * asymmetric-fence pattern of userspace RCU).  It then waits until no
 * record names its cache.  Readers that see the flag step back and queue
 * on the writer mutex, so writers cannot starve.
 *
 * Without membarrier (kernels before 4.14, seccomp filters), the reader
 * uses a sequentially consistent exchange, and the writer a full fence:
 * two locked instructions per read section, still no shared line.  A
 * membarrier that starts failing at run time switches the process to that
 * protocol for good (see rc_brlock_fallback() in brlock.c).
 *
 * fork, clone and thread exit: see "Reader records" in brlock.c.
 */
#ifndef RC_BRLOCK_H
#define RC_BRLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#define RC_CACHELINE	64

/* One per thread, on a global list, reused after the thread exits. */
struct rc_reader {
	_Atomic(const void *) lock;	/* the brlock read-held, or NULL */
	_Atomic bool in_use;
	struct rc_reader *next;
} __attribute__((aligned(RC_CACHELINE)));

struct rc_brlock {
	_Atomic int writer;
	pthread_mutex_t wmutex;		/* held by the writer for its whole section */
};

/*
 * The read-side protocol of the whole process.  SYM is 0 so that a reader
 * that runs before the setup is safe.  ASYM -> SWITCHING -> SYM happens at
 * most once, when membarrier fails after it had worked; readers treat
 * SWITCHING as SYM, writers wait for the switch to complete.
 */
enum {
	RC_BRLOCK_SYM = 0,
	RC_BRLOCK_ASYM = 1,
	RC_BRLOCK_SWITCHING = 2,
};
extern _Atomic int rc_brlock_mode;
extern __thread struct rc_reader *rc_my_reader __attribute__((tls_model("initial-exec")));

int rc_brlock_init(struct rc_brlock *l);
void rc_brlock_destroy(struct rc_brlock *l);
struct rc_reader *rc_reader_register(void);
/*
 * In a child created without fork handlers (raw clone), before its first
 * brlock exists: forget the read sections of threads that the child does
 * not have.  See brlock.c.
 */
void rc_brlock_forget_parent(void);

/* Provided by regcache.c (and by the tests that link brlock.c alone). */
void rc_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline struct rc_reader *rc_reader_get(void)
{
	struct rc_reader *r = rc_my_reader;

	if (__builtin_expect(!r, 0))
		r = rc_reader_register();
	return r;
}

static inline struct rc_reader *rc_brlock_read_lock(struct rc_brlock *l)
{
	struct rc_reader *r = rc_reader_get();

	for (;;) {
		if (__builtin_expect(atomic_load_explicit(&rc_brlock_mode,
							  memory_order_relaxed) ==
				     RC_BRLOCK_ASYM, 1)) {
			atomic_store_explicit(&r->lock, l, memory_order_relaxed);
			atomic_signal_fence(memory_order_seq_cst);
		} else {
			atomic_exchange(&r->lock, l);	/* full barrier */
		}
		/* an acquire load rather than a relaxed load and an acquire
		 * fence: the same code on x86, and ThreadSanitizer, which
		 * does not model fences, sees the writer's release */
		if (!atomic_load_explicit(&l->writer, memory_order_acquire))
			return r;
		atomic_store_explicit(&r->lock, NULL, memory_order_release);
		/* Wait for the writer without spinning. */
		pthread_mutex_lock(&l->wmutex);
		pthread_mutex_unlock(&l->wmutex);
	}
}

/*
 * The read side's fast path alone, for a caller that has a slower way
 * round: NULL where rc_brlock_read_lock() would register the thread, take
 * the symmetric protocol or wait for a writer.  The same store, compiler
 * barrier and acquire load as there, so the same argument holds.
 */
static inline struct rc_reader *rc_brlock_read_trylock(struct rc_brlock *l)
{
	struct rc_reader *r = rc_my_reader;

	if (__builtin_expect(!r, 0) ||
	    __builtin_expect(atomic_load_explicit(&rc_brlock_mode,
						  memory_order_relaxed) !=
			     RC_BRLOCK_ASYM, 0))
		return NULL;
	atomic_store_explicit(&r->lock, l, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	if (__builtin_expect(!atomic_load_explicit(&l->writer,
						   memory_order_acquire), 1))
		return r;
	atomic_store_explicit(&r->lock, NULL, memory_order_release);
	return NULL;
}

static inline void rc_brlock_read_unlock(struct rc_brlock *l, struct rc_reader *r)
{
	atomic_store_explicit(&r->lock, NULL, memory_order_release);
}

void rc_brlock_write_lock(struct rc_brlock *l);
bool rc_brlock_write_trylock(struct rc_brlock *l);
void rc_brlock_write_unlock(struct rc_brlock *l);

#endif /* RC_BRLOCK_H */
