/* SPDX-License-Identifier: (GPL-2.0-only WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * regcache_uapi.h - the ABI between regcache.ko and userspace.
 *
 * This is the one header shared by the kernel module (kmod/) and the
 * userspace cache (libregcache/).  A process opens /dev/regcache, asks the
 * module to WATCH the virtual ranges it has registered with an RDMA device,
 * and maps the fd's read-only status area.  The module hooks every watched
 * range with an MMU interval notifier; when the pages under a range change
 * (munmap, mremap, MADV_DONTNEED, COW break, migration, ...) the notifier
 * bumps the range's slot word in the status area *before it returns* and
 * queues an event for read()/poll().  A cache validates an entry by
 * comparing one 64-bit slot word with the value WATCH returned: one load,
 * no syscall.
 *
 * Rules: members are __u32/__u64 only, pointers travel as __u64, every
 * flags and reserved field must be zero (-EINVAL otherwise), enumerations
 * reserve 0 so an uninitialised field is caught.  The ABI is extended by
 * adding commands, or by giving a reserved field (which had to be zero) a
 * meaning whose zero keeps the old behaviour; never by reinterpreting a
 * field in use.  The header is plain
 * C89 and C++ (tests/test_kmod_uapi.sh compiles it both ways): no
 * flexible array member, no 'long long' literals, no trailing commas in
 * enumerations; the sizes below are checked with BUILD_BUG_ON in the
 * module (regcache_main.c).  See regcache(4).
 */
#ifndef _UAPI_REGCACHE_H
#define _UAPI_REGCACHE_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define REGCACHE_DEVICE_NAME	"regcache"
#define REGCACHE_DEVICE_PATH	"/dev/regcache"
/*
 * 2: events carry size, flags and seq; FLUSH takes the events seen;
 * CONFIGURE chooses strict mode; slots are no longer a member of
 * struct regcache_status.
 */
#define REGCACHE_ABI_VERSION	2

/*
 * Slot words.  Bit 63 says the slot holds a live watch; bits 0..62 are a
 * generation that only ever grows (on invalidation and on unwatch), so a
 * word once returned by WATCH never matches again after the range changed
 * or the slot was reused.
 */
#define REGCACHE_SLOT_ACTIVE		((__u64)1 << 63)
#define REGCACHE_SLOT_GEN_MASK		(REGCACHE_SLOT_ACTIVE - 1)

/* Status header flags.  OVERFLOW: events were dropped since the last FLUSH. */
#define REGCACHE_STATUS_OVERFLOW	(1U << 0)

/*
 * The status area: mmap(NULL, info.status_size, PROT_READ, MAP_SHARED, fd, 0).
 * The header fields are written by the kernel only; read them with
 * single loads.  info.max_watches slot words (__u64) follow the header:
 * slot i is at byte offset REGCACHE_STATUS_SLOT_OFFSET(i) of the mapping.
 * events_total is written after the slot words of the events it counts,
 * so a reader that loads it (acquire) and then the slot words sees every
 * invalidation up to that count.
 */
struct regcache_status {
	__u32 abi_version;	/* REGCACHE_ABI_VERSION */
	__u32 flags;		/* REGCACHE_STATUS_* */
	__u32 max_watches;	/* entries in slots[] */
	__u32 ring_entries;	/* capacity of the event ring */
	__u64 events_total;	/* invalidation events generated */
	__u64 events_pending;	/* events queued for read() */
	__u64 overflows;	/* events dropped because the ring was full */
	__u64 reserved[3];
};

#define REGCACHE_STATUS_SLOT_OFFSET(i) \
	(sizeof(struct regcache_status) + (i) * sizeof(__u64))

/*
 * REGCACHE_IOC_GET_INFO: the ABI-version query; valid before anything
 * else.  max_watches and status_size describe the status area as it is
 * (a later CONFIGURE can still change them, until the area is mapped or
 * a watch made).
 */
struct regcache_info {
	__u32 abi_version;	/* out: REGCACHE_ABI_VERSION */
	__u32 flags;		/* in: must be 0 */
	__u32 max_watches;	/* out: slots in the status area */
	__u32 ring_entries;	/* out: event ring capacity */
	__u64 status_size;	/* out: exact length to mmap */
	__u64 max_pinned_bytes;	/* out: this context's pin cap, 0 = none */
	__u32 strict;		/* out: 1 if every notifier event invalidates */
	__u32 event_size;	/* out: bytes per read() record */
	__u64 features;		/* out: REGCACHE_FEATURE_* (was reserved: 0 from older modules) */
	__u64 reserved[3];
};

/*
 * struct regcache_info.features: what a module does beyond the first
 * release of ABI 2.  An older module leaves the field 0 (it was reserved
 * and is not written), so a caller tests a bit before it relies on it.
 */
#define REGCACHE_FEATURE_UNWATCH_WORD	((__u64)1 << 0)	/* UNWATCH checks slot_word */
#define REGCACHE_FEATURE_WATCH_SAME	((__u64)1 << 1)	/* identical WATCH: the live watch */

/* struct regcache_config.strict */
#define REGCACHE_STRICT_DEFAULT	0	/* the module parameter 'strict' now */
#define REGCACHE_STRICT_ON	1	/* every notifier event invalidates */
#define REGCACHE_STRICT_OFF	2	/* protection and soft-dirty events do not */

/*
 * REGCACHE_IOC_CONFIGURE: per-context settings.  Only before the first
 * successful WATCH and before the status area is mapped (-EBUSY after);
 * may be repeated until then, the last call wins.  Zero takes the module
 * parameter's current value.  max_watches sizes the status area (slots);
 * the module parameter max_watches is also its cap (-EINVAL above it).
 * open() allocates the area at the module's max_watches; CONFIGURE
 * replaces it when the page count changes.  (max_watches was reserved0,
 * which ABI 2 required to be 0: old callers get the default, as before.)
 */
struct regcache_config {
	__u32 ring_entries;	/* in: event ring capacity */
	__u32 flags;		/* in: must be 0 */
	__u32 strict;		/* in: REGCACHE_STRICT_* */
	__u32 max_watches;	/* in: status slots, 0 = the module parameter */
	__u64 reserved[2];
};

/*
 * REGCACHE_IOC_WATCH: watch [addr, addr + len), rounded out to pages.
 * pinned_bytes is how much of the range the caller has pinned (a verbs
 * registration pins all of it, ODP none); it counts against the context's
 * pin cap until UNWATCH.  A WATCH identical in addr, len, cookie and
 * pinned_bytes to a live watch that has not been invalidated returns that
 * watch's slot and slot_word and makes no new one
 * (REGCACHE_FEATURE_WATCH_SAME): one UNWATCH releases it.
 */
struct regcache_watch {
	__u64 addr;		/* in */
	__u64 len;		/* in: > 0 */
	__u64 cookie;		/* in: returned in events, checked by UNWATCH */
	__u64 pinned_bytes;	/* in: <= len */
	__u32 flags;		/* in: must be 0 */
	__u32 slot;		/* out: index into status->slots[] */
	__u64 slot_word;	/* out: the word that means "unchanged" */
	__u64 reserved[2];
};

/*
 * REGCACHE_IOC_WATCH_BATCH: WATCH each element of an array in order.
 * Stops at the first failure: the ioctl then returns that error and
 * 'done' says how many elements were watched (their outputs are filled).
 */
struct regcache_watch_batch {
	__u64 watches;		/* in: pointer to struct regcache_watch[count] */
	__u32 count;		/* in: 1 .. REGCACHE_BATCH_MAX */
	__u32 done;		/* out */
	__u32 flags;		/* in: must be 0 */
	__u32 reserved0;
	__u64 reserved[2];
};

#define REGCACHE_BATCH_MAX	4096

/*
 * REGCACHE_IOC_UNWATCH: release a slot.  slot and cookie must both match a
 * watch of this context, and so must slot_word, the word WATCH returned,
 * unless it is 0 (-ENOENT otherwise): then a stale UNWATCH cannot release
 * a newer watch that reuses the slot with the same cookie
 * (REGCACHE_FEATURE_UNWATCH_WORD; slot_word was reserved, so an older
 * module fails a non-zero one with -EINVAL).  Unwatching an invalidated
 * slot is normal and succeeds.
 */
struct regcache_unwatch {
	__u32 slot;		/* in */
	__u32 flags;		/* in: must be 0 */
	__u64 cookie;		/* in */
	__u64 slot_word;	/* in: from WATCH, or 0 to match by slot and cookie only */
	__u64 reserved[1];
};

/*
 * REGCACHE_IOC_FLUSH: drop the queued events whose seq is <= events_seen
 * and clear REGCACHE_STATUS_OVERFLOW if no event after events_seen was
 * lost.  The order that loses nothing after an overflow: load
 * status->events_total (N), rescan every slot word, FLUSH with N.  Events
 * that arrive during the rescan have seq > N and stay queued (or keep
 * OVERFLOW set).  events_seen > events_total is -EINVAL.
 */
struct regcache_flush {
	__u64 events_seen;	/* in */
	__u32 flags;		/* in: must be 0 */
	__u32 reserved0;
	__u64 reserved[2];
};

/* REGCACHE_IOC_GET_STATS: this context's counters. */
struct regcache_ctx_stats {
	__u32 flags;		/* in: must be 0 */
	__u32 watches;		/* out: live slots (active or invalidated) */
	__u64 pinned_bytes;	/* out */
	__u64 events_total;	/* out */
	__u64 events_pending;	/* out */
	__u64 overflows;	/* out */
	__u64 watch_calls;	/* out */
	__u64 unwatch_calls;	/* out */
	__u64 reserved[4];
};

/* Why a range was invalidated (struct regcache_event.reason). */
enum regcache_reason {
	REGCACHE_REASON_NONE		= 0,	/* never sent */
	REGCACHE_REASON_UNMAP		= 1,	/* munmap, mremap move/shrink, MAP_FIXED over it */
	REGCACHE_REASON_CLEAR		= 2,	/* MADV_DONTNEED, COW break, zap */
	REGCACHE_REASON_MIGRATE		= 3,	/* page migration */
	REGCACHE_REASON_EXCLUSIVE	= 4,	/* device-exclusive access */
	REGCACHE_REASON_RELEASE		= 5,	/* the address space is going away */
	REGCACHE_REASON_PROTECTION	= 6,	/* mprotect; only with strict=1 */
	REGCACHE_REASON_SOFT_DIRTY	= 7,	/* soft-dirty clear; only with strict=1 */
	REGCACHE_REASON_OTHER		= 8	/* an event this ABI has no name for */
};

/*
 * read() returns whole records of info.event_size bytes; a buffer smaller
 * than one record gets -EINVAL.  Each record starts with its own size, so
 * a later ABI may append fields and a reader steps by 'size'.  seq is the
 * event's number (status->events_total when it was generated, from 1), the
 * value FLUSH compares with.  addr/len are the watched range,
 * inval_addr/inval_len the part of it the kernel touched.  A watch
 * produces at most one event: after it the slot is inactive until UNWATCH.
 */
struct regcache_event {
	__u32 size;		/* sizeof(struct regcache_event) of the module */
	__u32 flags;		/* none defined yet: 0 */
	__u64 seq;
	__u64 cookie;
	__u64 addr;
	__u64 len;
	__u64 inval_addr;
	__u64 inval_len;
	__u64 slot_word;	/* the slot's new word (inactive, new generation) */
	__u32 slot;
	__u32 reason;		/* enum regcache_reason */
};

/*
 * 0xE7, numbers 1-9: Linux's Documentation/userspace-api/ioctl/
 * ioctl-number.rst lists no user of 0xE7 (in 6.1 and in mainline; 0xE5
 * is FUSE, 0xEC the ChromeOS EC) and no 6.1 uapi header uses it.  An
 * upstream submission would register 0xE7 00-1F there.
 */
#define REGCACHE_IOC_MAGIC	0xE7

#define REGCACHE_IOC_GET_INFO	_IOWR(REGCACHE_IOC_MAGIC, 1, struct regcache_info)
#define REGCACHE_IOC_CONFIGURE	_IOW(REGCACHE_IOC_MAGIC, 2, struct regcache_config)
#define REGCACHE_IOC_WATCH	_IOWR(REGCACHE_IOC_MAGIC, 3, struct regcache_watch)
#define REGCACHE_IOC_WATCH_BATCH _IOWR(REGCACHE_IOC_MAGIC, 4, struct regcache_watch_batch)
#define REGCACHE_IOC_UNWATCH	_IOW(REGCACHE_IOC_MAGIC, 5, struct regcache_unwatch)
#define REGCACHE_IOC_UNWATCH_ALL _IO(REGCACHE_IOC_MAGIC, 6)
/* 7 was FLUSH without an argument (ABI 1): retired, -ENOTTY. */
#define REGCACHE_IOC_GET_STATS	_IOWR(REGCACHE_IOC_MAGIC, 8, struct regcache_ctx_stats)
#define REGCACHE_IOC_FLUSH	_IOW(REGCACHE_IOC_MAGIC, 9, struct regcache_flush)

#endif /* _UAPI_REGCACHE_H */
