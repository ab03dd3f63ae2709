// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * monitor_none.c - no monitor: nothing is cached, every get registers and
 * every put deregisters.  For debugging a suspected stale registration and
 * for on-demand-paging registrations, which the device keeps coherent by
 * itself.  regcache_get() never consults these hooks beyond the type.
 */
#include "config.h"

#include <errno.h>

#include "regcache_int.h"

static int none_start(struct regcache *cache, const char **why)
{
	*why = "";
	return 0;
}

static void none_stop(struct regcache *cache)
{
}

static int none_subscribe(struct regcache *cache, struct regcache_entry *e)
{
	return -EOPNOTSUPP;
}

static void none_unsubscribe(struct regcache *cache, struct regcache_entry *e)
{
}

static bool none_valid(const struct regcache *cache, const struct regcache_entry *e)
{
	return false;
}

const struct rc_monitor_ops rc_monitor_none_ops = {
	.name = "none",
	.type = REGCACHE_MONITOR_NONE,
	.start = none_start,
	.stop = none_stop,
	.subscribe = none_subscribe,
	.unsubscribe = none_unsubscribe,
	.valid = none_valid,
};
