// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * env.c - REGCACHE_* environment knobs, defaults and the stats report.
 *
 * The variables are an administrator's override, like libfabric's
 * FI_MR_CACHE_* and UCX's UCX_RCACHE_*: they win over the values an
 * application put in struct regcache_attr unless it set
 * REGCACHE_ATTR_NO_ENV.  A malformed value is an error at create time
 * rather than silently ignored.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include "regcache_int.h"

/* "123", "64k", "16M", "2g" (binary units). */
int rc_parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return -EINVAL;
	if (shift && v > (SIZE_MAX >> shift))
		return -ERANGE;
	*out = (size_t)(v << shift);
	return 0;
}

int rc_env_read(struct rc_env *env)
{
	const char *s;
	int ret;

	memset(env, 0, sizeof(*env));
	s = getenv("REGCACHE_MONITOR");
	if (s && *s) {
		env->monitor_set = true;
		if (!strcasecmp(s, "auto"))
			env->monitor = REGCACHE_MONITOR_AUTO;
		else if (!strcasecmp(s, "kmod"))
			env->monitor = REGCACHE_MONITOR_KMOD;
		else if (!strcasecmp(s, "uffd"))
			env->monitor = REGCACHE_MONITOR_UFFD;
		else if (!strcasecmp(s, "none"))
			env->monitor = REGCACHE_MONITOR_NONE;
		else
			return -EINVAL;
	}
	s = getenv("REGCACHE_MAX_ENTRIES");
	if (s && *s) {
		ret = rc_parse_size(s, &env->max_entries);
		if (ret)
			return ret;
		env->max_entries_set = true;
	}
	s = getenv("REGCACHE_MAX_BYTES");
	if (s && *s) {
		ret = rc_parse_size(s, &env->max_bytes);
		if (ret)
			return ret;
		env->max_bytes_set = true;
	}
	s = getenv("REGCACHE_MERGE");
	if (s && *s) {
		ret = rc_parse_size(s, &env->merge_max);
		if (ret)
			return ret;
		env->merge_set = true;
	}
	s = getenv("REGCACHE_STATS");
	env->stats = s && *s && strcmp(s, "0");
	return 0;
}

/* Does the process hold CAP_IPC_LOCK in its effective set? */
static bool rc_cap_ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_IPC_LOCK / 32].effective & (1U << (CAP_IPC_LOCK % 32));
}

/*
 * The default of max_bytes: half of physical memory, and, for
 * registrations that pin ('pin': no REGCACHE_ATTR_NO_PIN; on-demand-paging
 * registrations are not charged), at most half of the RLIMIT_MEMLOCK
 * soft limit when one applies.
 *
 * Pinned registrations count against RLIMIT_MEMLOCK (ib_umem_get charges
 * the mm's pinned_vm) unless the process has CAP_IPC_LOCK, which the
 * kernel lets pin without limit: then only the memory bound holds.  Half
 * of the limit, because the cache needs room beyond what it keeps: while
 * a merged union is being registered the entries it replaces stay pinned
 * until it is in (up to twice the union's bytes), uncached and
 * invalidated-but-held registrations count too, and so does whatever the
 * application pins itself.  A cache holding at most half can always
 * register a union as large as everything it keeps.  The limit is read
 * when the cache is created; a registration the kernel still refuses
 * makes the cache evict idle entries and retry (see rc_register()).
 */
size_t rc_default_max_bytes(bool pin)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	size_t max = (size_t)1 << 32;
	struct rlimit rl;

	if (pages > 0 && psz > 0)
		max = (size_t)pages / 2 * (size_t)psz;
	if (pin && !getrlimit(RLIMIT_MEMLOCK, &rl) &&
	    rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 2 < max && !rc_cap_ipc_lock())
		max = (size_t)(rl.rlim_cur / 2);
	return max;
}

uint64_t rc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void rc_log(const char *fmt, ...)
{
	static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
	static char last[256];
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* Programs create many caches; say the same thing once. */
	pthread_mutex_lock(&log_lock);
	if (strcmp(buf, last)) {
		strcpy(last, buf);
		fprintf(stderr, "libregcache: %s\n", buf);
	}
	pthread_mutex_unlock(&log_lock);
}
