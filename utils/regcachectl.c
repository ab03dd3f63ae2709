// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * regcachectl.c - show and tune regcache.ko (see regcachectl(8)).
 *
 * Parameters and global counters come from sysfs (the module parameters
 * under /sys/module/regcache/parameters/, the counters on the misc device,
 * /sys/class/misc/regcache/, one value per file; all counters but
 * abi_version are readable by root only, and a user is told so).  Contexts come from
 * /proc/PID/fdinfo/FD of every fd that is a regcache context: the kernel
 * shows those only to whoever may inspect the holder (the owner, root),
 * so a user lists their own contexts and root lists all.  No ioctl is
 * needed, so the tool never opens /dev/regcache and never creates a
 * context of its own.  REGCACHECTL_SYSFS replaces "/sys" and
 * REGCACHECTL_PROC replaces "/proc" (tests).
 *
 * Exit status: 0 success, 1 the kernel refused an operation, 2 usage
 * error, 3 the module is not loaded.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXIT_REFUSED	1
#define EXIT_USAGE	2
#define EXIT_NOMODULE	3

static const char *sysfs = "/sys";
static const char *procfs = "/proc";
static bool json;

static const char *const params[] = {
	"max_watches", "ring_entries", "max_pinned_bytes", "strict",
	"max_user_contexts", "max_user_watches", "max_user_bytes",
};
static const char *const counters[] = {
	"abi_version", "nr_contexts", "watches", "pinned_bytes", "events_total",
	"overflows", "foreign_mm",
};
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void err(const char *what, int neg)
{
	fprintf(stderr, "regcachectl: %s: %d (%s)\n", what, neg, strerror(-neg));
}

/* Read one sysfs value (first line, newline stripped) into buf. */
static int read_value(const char *dir, const char *name, char *buf, size_t len)
{
	char path[512];
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/%s/%s", sysfs, dir, name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		ret = ferror(f) ? -EIO : -ENODATA;
	fclose(f);
	if (!ret)
		buf[strcspn(buf, "\n")] = '\0';
	return ret;
}

static bool module_loaded(void)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/module/regcache", sysfs);
	return access(path, F_OK) == 0;
}

/* Booleans read back as Y/N; show them as 1/0 so JSON stays numeric. */
static const char *normalise(char *v)
{
	if (!strcmp(v, "Y"))
		return "1";
	if (!strcmp(v, "N"))
		return "0";
	return v;
}

static int show_params(bool nested)
{
	char v[128];
	size_t i;
	int ret;

	if (json)
		printf("%s", nested ? ", \"parameters\": {" : "{");
	else
		printf("parameters:\n");
	for (i = 0; i < ARRAY_SIZE(params); i++) {
		ret = read_value("module/regcache/parameters", params[i], v, sizeof(v));
		if (ret) {
			err(params[i], ret);
			return EXIT_REFUSED;
		}
		if (json)
			printf("%s\"%s\": %s", i ? ", " : "", params[i], normalise(v));
		else
			printf("  %-18s %s\n", params[i], normalise(v));
	}
	printf(json ? (nested ? "}" : "}\n") : "");
	return 0;
}

/*
 * The activity counters are root-only (0400: they count every user's
 * contexts); abi_version is for everyone.  A user gets what is readable
 * and a note that the rest needs root, not an error: their own contexts
 * follow from fdinfo.
 */
static int show_counters(void)
{
	bool need_root = false;
	char v[128];
	size_t i, shown = 0;
	int ret;

	if (json)
		printf(", \"counters\": {");
	else
		printf("counters:\n");
	for (i = 0; i < ARRAY_SIZE(counters); i++) {
		ret = read_value("class/misc/regcache", counters[i], v, sizeof(v));
		if (ret == -EACCES && i) {
			need_root = true;
			continue;
		}
		if (ret) {
			err(counters[i], ret);
			return EXIT_REFUSED;
		}
		if (json)
			printf("%s\"%s\": %s", shown ? ", " : "", counters[i], v);
		else
			printf("  %-18s %s\n", counters[i], v);
		shown++;
	}
	if (json)
		printf(need_root ? "}, \"counters_need_root\": true" : "}");
	else if (need_root)
		printf("  (the global counters are readable by root only; run as root to see them)\n");
	return 0;
}

/* JSON string with the few escapes a comm can need. */
static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* One context as its fdinfo shows it (regcache(4) FILES). */
struct ctx_info {
	long long id, pid, watches, declared, mm_pinned, events, overflows;
	long long kbytes;	/* kernel memory charged for it */
	long long user, user_bytes, user_max;	/* its user's budget; -1 unknown */
	long long vmpin;	/* VmPin of the owner, bytes; -1 unknown */
	long holder, fd;	/* where it was found */
	char comm[64];
};

static bool ctx_key(const char *line, const char *key, long long *v)
{
	size_t n = strlen(key);

	return !strncmp(line, "regcache-", 9) && !strncmp(line + 9, key, n) &&
	       line[9 + n] == ':' && sscanf(line + 10 + n, "%lld", v) == 1;
}

/* Parse one fdinfo file: 1 if it is a regcache context, 0 if not. */
static int ctx_parse(const char *path, struct ctx_info *ci)
{
	char line[256];
	int found = 0;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return 0;	/* gone, or not ours to see */
	memset(ci, 0, sizeof(*ci));
	ci->vmpin = -1;
	ci->user = ci->user_bytes = ci->user_max = -1;
	strcpy(ci->comm, "?");
	while (fgets(line, sizeof(line), f)) {
		if (ctx_key(line, "id", &ci->id))
			found = 1;
		else if (!strncmp(line, "regcache-comm:", 14))
			sscanf(line + 14, "%63s", ci->comm);
		else if (!ctx_key(line, "pid", &ci->pid) &&
			 !ctx_key(line, "watches", &ci->watches) &&
			 !ctx_key(line, "declared-pinned-bytes", &ci->declared) &&
			 !ctx_key(line, "mm-pinned-bytes", &ci->mm_pinned) &&
			 !ctx_key(line, "events", &ci->events) &&
			 !ctx_key(line, "overflows", &ci->overflows) &&
			 !ctx_key(line, "bytes", &ci->kbytes) &&
			 !ctx_key(line, "user", &ci->user) &&
			 !ctx_key(line, "user-bytes", &ci->user_bytes))
			ctx_key(line, "user-max-bytes", &ci->user_max);
	}
	fclose(f);
	return found;
}

/* VmPin of a process in bytes, or -1. */
static long long vm_pin(long long pid)
{
	char path[512], line[256];
	long long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%lld/status", procfs, pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

static bool numeric(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/*
 * Every context once: an fd inherited by fork or passed over a socket is
 * the same context (same id) in several places; it is listed under its
 * owner when the owner holds it, else under the first holder found.
 */
static int collect_contexts(struct ctx_info **out, size_t *count)
{
	struct ctx_info *v = NULL, ci;
	size_t n = 0, cap = 0, k;
	struct dirent *pd, *fd;
	char path[1024];
	DIR *proc, *fds;

	proc = opendir(procfs);
	if (!proc)
		return -errno;
	while ((pd = readdir(proc))) {
		if (!numeric(pd->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/fdinfo", procfs, pd->d_name);
		fds = opendir(path);
		if (!fds)
			continue;
		while ((fd = readdir(fds))) {
			if (!numeric(fd->d_name))
				continue;
			if (snprintf(path, sizeof(path), "%s/%s/fdinfo/%s", procfs, pd->d_name,
				     fd->d_name) >= (int)sizeof(path))
				continue;
			if (!ctx_parse(path, &ci))
				continue;
			ci.holder = strtol(pd->d_name, NULL, 10);
			ci.fd = strtol(fd->d_name, NULL, 10);
			for (k = 0; k < n && v[k].id != ci.id; k++)
				;
			if (k < n) {
				if (ci.holder == ci.pid && v[k].holder != v[k].pid) {
					ci.vmpin = v[k].vmpin;
					v[k] = ci;
				}
				continue;
			}
			if (n == cap) {
				struct ctx_info *nv;

				cap = cap ? 2 * cap : 16;
				nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					closedir(fds);
					closedir(proc);
					free(v);
					return -ENOMEM;
				}
				v = nv;
			}
			ci.vmpin = vm_pin(ci.pid);
			v[n++] = ci;
		}
		closedir(fds);
	}
	closedir(proc);
	*out = v;
	*count = n;
	return 0;
}

static int ctx_cmp(const void *a, const void *b)
{
	const struct ctx_info *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * The users the listed contexts are charged to, once each, with their
 * budget as the newest fdinfo read showed it (regcache(4) LIMITS: a user
 * in a user namespace is charged to the namespace's owner).
 */
static void show_users(const struct ctx_info *v, size_t n)
{
	size_t i, j, shown = 0;
	long long count;

	if (json)
		printf(", \"users\": [");
	else
		printf("users:\n%10s %14s %14s %8s\n", "uid", "kernel_bytes", "max_bytes",
		       "contexts");
	for (i = 0; i < n; i++) {
		if (v[i].user < 0)
			continue;
		for (j = 0; j < i && v[j].user != v[i].user; j++)
			;
		if (j < i)
			continue;
		for (count = 0, j = i; j < n; j++)
			count += v[j].user == v[i].user;
		if (json)
			printf("%s{\"uid\": %lld, \"kernel_bytes\": %lld, \"max_kernel_bytes\": %lld, "
			       "\"contexts\": %lld}", shown ? ", " : "", v[i].user, v[i].user_bytes,
			       v[i].user_max, count);
		else
			printf("%10lld %14lld %14lld %8lld\n", v[i].user, v[i].user_bytes,
			       v[i].user_max, count);
		shown++;
	}
	if (json)
		printf("]");
}

static int show_contexts(bool nested)
{
	struct ctx_info *v = NULL;
	size_t n = 0, i;
	int ret;

	ret = collect_contexts(&v, &n);
	if (ret) {
		err("contexts: /proc", ret);
		return EXIT_REFUSED;
	}
	qsort(v, n, sizeof(*v), ctx_cmp);
	if (json)
		printf("%s\"contexts\": [", nested ? ", " : "{");
	else
		printf("%8s %8s %6s %8s %14s %14s %14s %10s %9s %12s  %s\n", "pid", "holder", "fd",
		       "watches", "declared_pin", "mm_pinned", "vm_pin", "events",
		       "overflows", "kernel_bytes", "comm");
	for (i = 0; i < n; i++) {
		if (json) {
			printf("%s{\"pid\": %lld, \"holder\": %ld, \"fd\": %ld, \"watches\": %lld, "
			       "\"declared_pinned_bytes\": %lld, \"mm_pinned_bytes\": %lld, "
			       "\"vm_pin_bytes\": %lld, \"events\": %lld, \"overflows\": %lld, "
			       "\"kernel_bytes\": %lld, \"comm\": ", i ? ", " : "", v[i].pid,
			       v[i].holder, v[i].fd, v[i].watches, v[i].declared, v[i].mm_pinned,
			       v[i].vmpin, v[i].events, v[i].overflows, v[i].kbytes);
			json_string(v[i].comm);
			printf("}");
		} else {
			printf("%8lld %8ld %6ld %8lld %14lld %14lld %14lld %10lld %9lld %12lld  %s\n",
			       v[i].pid, v[i].holder, v[i].fd, v[i].watches, v[i].declared,
			       v[i].mm_pinned, v[i].vmpin, v[i].events, v[i].overflows,
			       v[i].kbytes, v[i].comm);
		}
	}
	if (json)
		printf("]");
	show_users(v, n);
	free(v);
	if (json)
		printf(nested ? "" : "}\n");
	return 0;
}

static int cmd_status(void)
{
	int ret;

	if (!module_loaded()) {
		if (json)
			printf("{\"loaded\": false}\n");
		else
			fprintf(stderr, "regcachectl: regcache.ko is not loaded\n");
		return EXIT_NOMODULE;
	}
	if (json)
		printf("{\"loaded\": true");
	else
		printf("regcache.ko loaded\n");
	ret = show_params(true);
	if (!ret)
		ret = show_counters();
	if (!ret)
		ret = show_contexts(true);
	if (json)
		printf("}\n");
	return ret;
}

static int set_param(const char *assignment)
{
	const char *eq = strchr(assignment, '=');
	char name[64], path[512];
	bool known = false;
	size_t i, n;
	FILE *f;
	int ret = 0;

	if (!eq || eq == assignment || !eq[1]) {
		fprintf(stderr, "regcachectl: set: expected NAME=VALUE, got '%s'\n", assignment);
		return EXIT_USAGE;
	}
	n = (size_t)(eq - assignment);
	if (n >= sizeof(name)) {
		fprintf(stderr, "regcachectl: set: unknown parameter\n");
		return EXIT_USAGE;
	}
	memcpy(name, assignment, n);
	name[n] = '\0';
	for (i = 0; i < ARRAY_SIZE(params); i++)
		known |= !strcmp(name, params[i]);
	if (!known) {
		fprintf(stderr, "regcachectl: set: unknown parameter '%s' (known: max_watches, "
			"ring_entries, max_pinned_bytes, strict, max_user_contexts, "
			"max_user_watches, max_user_bytes)\n", name);
		return EXIT_USAGE;
	}
	snprintf(path, sizeof(path), "%s/module/regcache/parameters/%s", sysfs, name);
	f = fopen(path, "w");
	if (!f) {
		ret = -errno;
		goto fail;
	}
	/* sysfs reports the module's verdict on write/close, not on open */
	if (fputs(eq + 1, f) < 0 || fflush(f))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret) {
		if (!json)
			printf("%s=%s\n", name, eq + 1);
		return 0;
	}
fail:
	fprintf(stderr, "regcachectl: set %s: %d (%s)\n", assignment, ret, strerror(-ret));
	return EXIT_REFUSED;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: regcachectl [--json] [status]\n"
		"       regcachectl [--json] params\n"
		"       regcachectl [--json] contexts\n"
		"       regcachectl set NAME=VALUE...\n"
		"Shows and tunes regcache.ko; see regcachectl(8).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	int c, i, ret;

	if (getenv("REGCACHECTL_SYSFS"))
		sysfs = getenv("REGCACHECTL_SYSFS");
	if (getenv("REGCACHECTL_PROC"))
		procfs = getenv("REGCACHECTL_PROC");
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	cmd = optind < argc ? argv[optind++] : "status";
	if (!strcmp(cmd, "status")) {
		if (optind != argc)
			goto bad_usage;
		return cmd_status();
	}
	if (strcmp(cmd, "params") && strcmp(cmd, "contexts") && strcmp(cmd, "set"))
		goto bad_usage;
	if (!module_loaded()) {
		fprintf(stderr, "regcachectl: regcache.ko is not loaded\n");
		return EXIT_NOMODULE;
	}
	if (!strcmp(cmd, "params")) {
		if (optind != argc)
			goto bad_usage;
		return show_params(false);
	}
	if (!strcmp(cmd, "contexts")) {
		if (optind != argc)
			goto bad_usage;
		return show_contexts(false);
	}
	if (optind == argc)
		goto bad_usage;
	for (i = optind; i < argc; i++) {
		ret = set_param(argv[i]);
		if (ret)
			return ret;
	}
	return 0;

bad_usage:
	usage(stderr);
	return EXIT_USAGE;
}
