// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * regcachectl.c - show and tune regcache.ko (see regcachectl(8)).
 *
 * Everything comes from sysfs: the module parameters under
 * /sys/module/regcache/parameters/ and the counters and per-context list
 * the module publishes on its misc device, /sys/class/misc/regcache/.
 * No ioctl is needed, so the tool never opens /dev/regcache and never
 * creates a context of its own.  REGCACHECTL_SYSFS replaces "/sys" (tests).
 *
 * Exit status: 0 success, 1 the kernel refused an operation, 2 usage
 * error, 3 the module is not loaded.
 */
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
static bool json;

static const char *const params[] = {
	"max_watches", "ring_entries", "max_pinned_bytes", "strict",
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

static int show_counters(void)
{
	char v[128];
	size_t i;
	int ret;

	if (json)
		printf(", \"counters\": {");
	else
		printf("counters:\n");
	for (i = 0; i < ARRAY_SIZE(counters); i++) {
		ret = read_value("class/misc/regcache", counters[i], v, sizeof(v));
		if (ret) {
			err(counters[i], ret);
			return EXIT_REFUSED;
		}
		if (json)
			printf("%s\"%s\": %s", i ? ", " : "", counters[i], v);
		else
			printf("  %-18s %s\n", counters[i], v);
	}
	if (json)
		printf("}");
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

static int show_contexts(bool nested)
{
	char path[512], line[512], comm[64];
	long long pid, w, pin, ev, ov;
	bool first = true;
	FILE *f;

	snprintf(path, sizeof(path), "%s/class/misc/regcache/contexts", sysfs);
	f = fopen(path, "r");
	if (!f) {
		int ret = -errno;

		err("contexts (root only)", ret);
		return EXIT_REFUSED;
	}
	if (json)
		printf("%s\"contexts\": [", nested ? ", " : "{");
	else
		printf("%8s %8s %14s %10s %9s  %s\n", "pid", "watches", "pinned_bytes",
		       "events", "overflows", "comm");
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#') {
			if (!json)
				printf("%s", line);
			continue;
		}
		if (sscanf(line, "%lld %lld %lld %lld %lld %63s", &pid, &w, &pin, &ev, &ov,
			   comm) != 6)
			continue;
		if (json) {
			printf("%s{\"pid\": %lld, \"watches\": %lld, \"pinned_bytes\": %lld, "
			       "\"events\": %lld, \"overflows\": %lld, \"comm\": ",
			       first ? "" : ", ", pid, w, pin, ev, ov);
			json_string(comm);
			printf("}");
		} else {
			printf("%8lld %8lld %14lld %10lld %9lld  %s\n", pid, w, pin, ev, ov, comm);
		}
		first = false;
	}
	fclose(f);
	if (json)
		printf(nested ? "]" : "]}\n");
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
	if (!ret && geteuid() == 0)
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
			"ring_entries, max_pinned_bytes, strict)\n", name);
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
