// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_compare.c - rdmaxfer-bench --compare and --plot.
 *
 * --compare runs our test and perftest's matching test on the same device,
 * server and client on this machine (loopback through the device, as
 * perftest's own loopback runs do), the two tools interleaved repetition
 * by repetition with the order alternating, and prints both medians with
 * the median of the per-repetition ratios.  The two sides are configured
 * alike: the same sizes and iteration count, the same messages in flight
 * (our window, perftest's tx depth) and the same doorbell batching and
 * signalling.  Our --batch B reposts B requests per doorbell and signals
 * the last, which is perftest's "-l B" (perftest then sets its CQ
 * moderation to B); --batch 1 signals every request, which is perftest's
 * "-Q 1".  perftest's default (one WR per doorbell, one CQE per 100 WRs)
 * has no exact counterpart in librdmaxfer, which ends every doorbell with
 * a signalled WR.
 *
 * Both tools are separate processes: ours is this program run again
 * without --compare (with --csv), perftest is found in $PATH.  Nothing is
 * re-implemented from perftest; only its result rows are read.
 *
 * --plot draws bandwidth or latency against message size with gnuplot
 * (Debian: gnuplot-nox), which is looked up before anything runs so a
 * missing gnuplot costs no benchmark time.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "bench_compare.h"

#define CMP_MAX_ARGS		48
#define CMP_RUN_TIMEOUT_S	600	/* one side of one repetition */
#define CMP_LISTEN_TIMEOUT_S	30
#define CMP_MAX_REPS		100
#define CMP_BAND		0.10	/* within +-10 %: parity */
#define A_MIN			2
#define A_MAX			(1ULL << 23)

static const struct {
	const char *test;
	const char *peer;
} peers[] = {
	{ "write_bw", "ib_write_bw" },
	{ "read_bw", "ib_read_bw" },
	{ "write_lat", "ib_write_lat" },
	{ "read_lat", "ib_read_lat" },
};

const char *bench_compare_peer(const char *test)
{
	size_t i;

	for (i = 0; i < sizeof(peers) / sizeof(peers[0]); i++)
		if (!strcmp(test, peers[i].test))
			return peers[i].peer;
	return NULL;
}

int bench_find_program(const char *program, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	const char *p, *end;

	if (!path)
		path = "/usr/bin:/bin";
	for (p = path; *p; p = *end ? end + 1 : end) {
		int n;

		end = strchrnul(p, ':');
		n = snprintf(buf, len, "%.*s/%s", (int)(end - p), p, program);
		if (n > 0 && (size_t)n < len && end != p &&
		    access(buf, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

/* ------------------------------------------------------------- plot */

int bench_plot_check(const char *prog, const char *file)
{
	char gp[PATH_MAX], dir[PATH_MAX];
	size_t n = strlen(file);
	char *slash;

	if (n < 5 || strcasecmp(file + n - 4, ".png")) {
		fprintf(stderr, "%s: --plot FILE.png: '%s' does not end in .png: %s (%d)\n",
			prog, file, strerror(EINVAL), -EINVAL);
		return -EINVAL;
	}
	snprintf(dir, sizeof(dir), "%s", file);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = 0;
	else
		*slash = 0;
	if (access(dir, W_OK)) {
		int err = -errno;

		fprintf(stderr, "%s: --plot: cannot write into '%s': %s (%d)\n",
			prog, dir, strerror(-err), err);
		return err;
	}
	if (bench_find_program("gnuplot", gp, sizeof(gp))) {
		fprintf(stderr, "%s: --plot needs gnuplot, which is not installed (apt-get install gnuplot-nox): %s (%d)\n",
			prog, strerror(ENOENT), -ENOENT);
		return -ENOENT;
	}
	return 0;
}

/* gnuplot strings are in double quotes: keep the label printable */
static void put_label(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		fputc(*s == '"' || *s == '\\' ? '\'' : *s, f);
	fputc('"', f);
}

static int run_wait(char *const argv[], const char *out_path, int timeout_s,
		    int *status);

int bench_plot(const char *prog, const char *file, const char *title,
	       bool lat, const struct bench_series *s, size_t ns)
{
	char dir[] = "/tmp/rdmaxfer-plot.XXXXXX";
	char path[PATH_MAX], script[PATH_MAX], log[PATH_MAX], gp[PATH_MAX];
	char *argv[3];
	size_t i, k, points = 0;
	FILE *f;
	int ret, status;

	if (bench_find_program("gnuplot", gp, sizeof(gp))) {
		fprintf(stderr, "%s: --plot needs gnuplot, which is not installed (apt-get install gnuplot-nox): %s (%d)\n",
			prog, strerror(ENOENT), -ENOENT);
		return -ENOENT;
	}
	if (!mkdtemp(dir)) {
		ret = -errno;
		fprintf(stderr, "%s: --plot: temporary folder: %s (%d)\n",
			prog, strerror(-ret), ret);
		return ret;
	}
	for (i = 0; i < ns; i++) {
		snprintf(path, sizeof(path), "%s/s%zu.dat", dir, i);
		f = fopen(path, "w");
		if (!f)
			goto io_err;
		for (k = 0; k < s[i].n; k++) {
			/* a log scale has no room for a failed (0) point */
			if (s[i].value[k] <= 0)
				continue;
			fprintf(f, "%" PRIu64 " %.6g\n", s[i].bytes[k],
				s[i].value[k]);
			points++;
		}
		if (fclose(f))
			goto io_err;
	}
	if (!points) {
		fprintf(stderr, "%s: --plot: no result to draw: %s (%d)\n",
			prog, strerror(ENODATA), -ENODATA);
		ret = -ENODATA;
		goto out;
	}
	snprintf(script, sizeof(script), "%s/plot.gp", dir);
	f = fopen(script, "w");
	if (!f)
		goto io_err;
	fprintf(f,
		"if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
		"  set terminal pngcairo size 900,600 noenhanced\n"
		"} else {\n"
		"  set terminal png size 900,600 noenhanced\n"
		"}\n"
		"set output ");
	put_label(f, file);
	fprintf(f, "\nset title ");
	put_label(f, title);
	fprintf(f,
		"\nset xlabel \"message size [bytes]\"\n"
		"set ylabel \"%s\"\n"
		"set logscale x 2\nset logscale y\nset grid\n"
		"set key top left\n"
		/* sizes in binary units, a tic every factor of 8 */
		"set xtics (\"2 B\" 2, \"16 B\" 16, \"128 B\" 128, "
		"\"1 KiB\" 1024, \"8 KiB\" 8192, \"64 KiB\" 65536, "
		"\"512 KiB\" 524288, \"4 MiB\" 4194304)\n"
		"plot ",
		lat ? "latency, t_typical [usec]" :
		      "bandwidth, average [MiB/s]");
	for (i = 0; i < ns; i++) {
		fprintf(f, "%s\"%s/s%zu.dat\" using 1:2 with linespoints title ",
			i ? ", " : "", dir, i);
		put_label(f, s[i].label);
	}
	fprintf(f, "\n");
	if (fclose(f))
		goto io_err;

	snprintf(log, sizeof(log), "%s/gnuplot.log", dir);
	argv[0] = gp;
	argv[1] = script;
	argv[2] = NULL;
	ret = run_wait(argv, log, 60, &status);
	if (!ret && (!WIFEXITED(status) || WEXITSTATUS(status))) {
		char line[256];

		fprintf(stderr, "%s: --plot: gnuplot failed:\n", prog);
		f = fopen(log, "r");
		while (f && fgets(line, sizeof(line), f))
			fprintf(stderr, "  %s", line);
		if (f)
			fclose(f);
		ret = -EIO;
	} else if (ret) {
		fprintf(stderr, "%s: --plot: cannot run gnuplot: %s (%d)\n",
			prog, strerror(-ret), ret);
	} else {
		printf("# plot: %s\n", file);
	}
	goto out;
io_err:
	ret = -errno;
	fprintf(stderr, "%s: --plot: writing in %s: %s (%d)\n", prog, dir,
		strerror(-ret), ret);
out:
	for (i = 0; i < ns; i++) {
		snprintf(path, sizeof(path), "%s/s%zu.dat", dir, i);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/plot.gp", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/gnuplot.log", dir);
	unlink(path);
	rmdir(dir);
	return ret;
}

/* ------------------------------------------------------- processes */

static pid_t spawn(char *const argv[], const char *out_path)
{
	pid_t pid = fork();
	int fd;

	if (pid)
		return pid;
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		_exit(126);
	execv(argv[0], argv);
	fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* wait for pid at most timeout_s, then kill it; 0 or -ETIMEDOUT/-errno */
static int wait_bounded(pid_t pid, int timeout_s, int *status)
{
	double deadline = mono_s() + timeout_s;
	pid_t r;

	for (;;) {
		r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0)
			return -errno;
		if (mono_s() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			return -ETIMEDOUT;
		}
		usleep(20000);
	}
}

static int run_wait(char *const argv[], const char *out_path, int timeout_s,
		    int *status)
{
	pid_t pid = spawn(argv, out_path);

	if (pid < 0)
		return -errno;
	return wait_bounded(pid, timeout_s, status);
}

/* is a TCP socket listening on port (IPv4 or IPv6)?  perftest's server
 * takes one connection on it, so it is looked at, never connected to */
static bool tcp_listening(uint16_t port)
{
	static const char *const files[] = { "/proc/net/tcp",
					     "/proc/net/tcp6" };
	char line[512];
	size_t i;

	for (i = 0; i < 2; i++) {
		FILE *f = fopen(files[i], "r");

		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char *colon, *st;
			unsigned int p, state;

			/* "sl local_address:PORT rem_address:PORT st ..." */
			colon = strchr(line, ':');
			if (!colon)
				continue;
			colon = strchr(colon + 1, ':');
			if (!colon || sscanf(colon + 1, "%x", &p) != 1)
				continue;
			st = strchr(colon + 1, ' ');
			if (!st)
				continue;
			st = strchr(st + 1, ' ');
			if (!st || sscanf(st + 1, "%x", &state) != 1)
				continue;
			if (p == port && state == 0x0a) {	/* LISTEN */
				fclose(f);
				return true;
			}
		}
		fclose(f);
	}
	return false;
}

/* ------------------------------------------------------- one side */

struct argbuf {
	char *argv[CMP_MAX_ARGS];
	char store[CMP_MAX_ARGS][64];
	int n;
};

static void arg(struct argbuf *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void arg(struct argbuf *a, const char *fmt, ...)
{
	va_list ap;

	if (a->n >= CMP_MAX_ARGS - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(a->store[a->n], sizeof(a->store[0]), fmt, ap);
	va_end(ap);
	a->argv[a->n] = a->store[a->n];
	a->argv[++a->n] = NULL;
}

/* the long strings (paths, device) are not copied: they outlive argv */
static void arg_str(struct argbuf *a, const char *s)
{
	if (a->n >= CMP_MAX_ARGS - 1)
		return;
	a->argv[a->n] = (char *)s;
	a->argv[++a->n] = NULL;
}

static void print_cmd(const char *who, const struct argbuf *a)
{
	int i;

	printf("# %-9s", who);
	for (i = 0; i < a->n; i++)
		printf(" %s", a->argv[i]);
	printf("\n");
}

static long iters_of(const struct bench_compare_cfg *c)
{
	long n = c->iters > 0 ? c->iters : c->lat ? 1000 : 5000;

	/* perftest -l B wants a multiple of B */
	if (!c->lat && c->batch > 1 && n % c->batch)
		n += c->batch - n % c->batch;
	return n;
}

/*
 * What both sides' command lines start with: the program, the device,
 * port and GID, the size (or all sizes) and the iteration count, spelt
 * the same by rdmaxfer-bench and perftest.
 */
static void build_common(const struct bench_compare_cfg *c, const char *prog,
			 struct argbuf *a)
{
	a->n = 0;
	arg_str(a, prog);
	if (c->device) {
		arg(a, "-d");
		arg_str(a, c->device);
	}
	if (c->ib_port)
		arg(a, "-i%d", c->ib_port);
	if (c->gid_index >= 0)
		arg(a, "-x%d", c->gid_index);
	if (c->all)
		arg(a, "-a");
	else
		arg(a, "-s%" PRIu64, c->size);
	arg(a, "-n%ld", iters_of(c));
}

static void build_ours(const struct bench_compare_cfg *c, bool client,
		       uint16_t port, struct argbuf *a)
{
	build_common(c, c->self, a);
	if (!c->lat) {
		arg(a, "-w%u", c->window);
		arg(a, "--batch=%u", c->batch);
		arg(a, "-q%u", c->qps);
	}
	arg(a, "--thread-mode=%s", c->single ? "single" : "multi");
	arg(a, "-p%u", port);
	arg(a, "--timeout=%d", c->timeout_ms);
	arg(a, "--csv");
	arg_str(a, c->test);
	if (client)
		arg_str(a, c->addr);
}

static void build_peer(const struct bench_compare_cfg *c, const char *path,
		       bool client, uint16_t port, struct argbuf *a)
{
	build_common(c, path, a);
	if (!c->lat) {
		arg(a, "-t%u", c->window);
		/* the same doorbells and CQEs as ours (see the top) */
		if (c->batch > 1)
			arg(a, "-l%u", c->batch);
		else
			arg(a, "-Q1");
		if (c->qps > 1)
			arg(a, "-q%u", c->qps);
	}
	arg(a, "-F");
	arg(a, "-p%u", port);
	if (client)
		arg_str(a, c->addr);
}

/*
 * Read one side's result rows from its output: ours is CSV (bytes,
 * iterations, ..., bw_avg_mbs 4th / t_typical_usec 5th), perftest's a
 * table whose result rows start with the size (BW average 4th column,
 * t_typical 5th).  Both report MB as 2^20 bytes.
 */
static int parse_rows(const char *path, bool csv, bool lat,
		      const uint64_t *sizes, size_t ns, double *val)
{
	char line[1024];
	size_t found = 0, k;
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *tok[12], *save = NULL, *p;
		unsigned long long bytes;
		int nt = 0;

		if (!isdigit((unsigned char)line[strspn(line, " \t")]))
			continue;
		for (p = strtok_r(line, csv ? ",\n" : " \t\n", &save);
		     p && nt < 12; p = strtok_r(NULL, csv ? ",\n" : " \t\n",
						&save))
			tok[nt++] = p;
		if (nt < 5)
			continue;
		bytes = strtoull(tok[0], NULL, 10);
		for (k = 0; k < ns; k++) {
			if (sizes[k] != bytes || val[k] > 0)
				continue;
			val[k] = strtod(tok[lat ? 4 : 3], NULL);
			if (val[k] > 0)
				found++;
		}
	}
	fclose(f);
	return found == ns ? 0 : -ENODATA;
}

/*
 * One side, one repetition: server in the background, client in the
 * foreground, both bounded.  Fills val[] (zeros where a size failed).
 */
static int run_side(const char *prog, const struct bench_compare_cfg *c,
		    bool peer, const char *peer_path, uint16_t port,
		    const uint64_t *sizes, size_t ns, double *val,
		    const char *tmp)
{
	struct argbuf sa, ca;
	char sout[PATH_MAX], cout[PATH_MAX];
	pid_t spid;
	int st, sst = 0, ret, sret;
	double deadline;

	memset(val, 0, ns * sizeof(*val));
	snprintf(sout, sizeof(sout), "%s/%s.srv", tmp, peer ? "pt" : "ours");
	snprintf(cout, sizeof(cout), "%s/%s.cli", tmp, peer ? "pt" : "ours");
	if (peer) {
		build_peer(c, peer_path, false, port, &sa);
		build_peer(c, peer_path, true, port, &ca);
	} else {
		build_ours(c, false, port, &sa);
		build_ours(c, true, port, &ca);
	}
	spid = spawn(sa.argv, sout);
	if (spid < 0)
		return -errno;
	/* ours retries a refused connect itself; perftest's client does
	 * not, so wait until its server listens */
	deadline = mono_s() + CMP_LISTEN_TIMEOUT_S;
	while (peer && !tcp_listening(port) && mono_s() < deadline &&
	       waitpid(spid, &sst, WNOHANG) == 0)
		usleep(50000);
	ret = run_wait(ca.argv, cout, CMP_RUN_TIMEOUT_S, &st);
	if (!ret && (!WIFEXITED(st) || WEXITSTATUS(st)))
		ret = -EIO;
	sret = wait_bounded(spid, ret ? 2 : 30, &sst);
	if (!ret)
		ret = parse_rows(cout, !peer, c->lat, sizes, ns, val);
	if (ret) {
		char line[256];
		FILE *f = fopen(cout, "r");

		fprintf(stderr, "%s: --compare: %s failed (%s); its output:\n",
			prog, peer ? peer_path : "rdmaxfer-bench",
			ret == -ETIMEDOUT ? "timed out" : strerror(-ret));
		while (f && fgets(line, sizeof(line), f))
			fprintf(stderr, "  %s", line);
		if (f)
			fclose(f);
	}
	(void)sret;
	return ret;
}

/* ------------------------------------------------------- statistics */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* linear-interpolated quantile of sorted v[n] */
static double quant(const double *v, int n, double q)
{
	double pos = q * (n - 1);
	int i = (int)pos;

	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (pos - i) * (v[i + 1] - v[i]);
}

static const char *verdict(double *r, int n)
{
	double m, lo, hi;

	if (!n)
		return "n/a";
	qsort(r, n, sizeof(*r), cmp_d);
	m = quant(r, n, 0.5);
	lo = quant(r, n, 0.25);
	hi = quant(r, n, 0.75);
	if (fabs(m - 1.0) <= CMP_BAND)
		return "parity";
	/* fewer than 3 runs have no quartiles worth the name */
	if (n < 3)
		return "unresolved";
	if (m > 1.0 + CMP_BAND && lo > 1.0)
		return "ahead";
	if (m < 1.0 - CMP_BAND && hi < 1.0)
		return "behind";
	return "unresolved";
}

/* ------------------------------------------------------- compare */

/* The repetitions, each tool once per repetition in alternating order;
 * ours and pt: c->reps rows of ns results.  Returns the runs that
 * failed. */
static int compare_reps(const char *prog, const struct bench_compare_cfg *c,
			const char *peer_path, const uint64_t *sizes,
			size_t ns, double *ours, double *pt, const char *tmp)
{
	int rep, fails = 0;

	for (rep = 0; rep < c->reps; rep++) {
		/* ports move on each repetition: no TIME_WAIT in the way */
		uint16_t port = (uint16_t)(c->port + 2 * rep);
		int side;

		for (side = 0; side < 2; side++) {
			/* the order alternates: neither tool always first */
			bool is_peer = (side + rep) & 1;
			double *dst = (is_peer ? pt : ours) + (size_t)rep * ns;

			if (run_side(prog, c, is_peer, peer_path,
				     is_peer ? port + 1 : port, sizes, ns, dst,
				     tmp))
				fails++;
		}
		fprintf(stderr, "%s: --compare: repetition %d of %d done\n",
			prog, rep + 1, c->reps);
	}
	return fails;
}

/* The table: per size, the medians and the median of the paired
 * ratios with its verdict; row[0], row[1]: the medians, for the plot. */
static void compare_table(const struct bench_compare_cfg *c,
			  const uint64_t *sizes, size_t ns,
			  const double *ours, const double *pt,
			  double row[2][BENCH_MAX_POINTS])
{
	double v[CMP_MAX_REPS];
	size_t k;

	printf("---------------------------------------------------------------------------------------\n");
	printf(" #bytes     ours%-12s perftest%-8s ratio    verdict     (ratio: median of %d paired; > 1: ours %s)\n",
	       c->lat ? "[usec]" : "[MB/sec]", c->lat ? "[usec]" : "[MB/sec]",
	       c->reps, c->lat ? "faster" : "more bandwidth");
	for (k = 0; k < ns; k++) {
		double mo, mp, r[CMP_MAX_REPS], tr[CMP_MAX_REPS];
		int no = 0, np = 0, nr = 0, i;
		const char *vd;

		for (i = 0; i < c->reps; i++) {
			double x = ours[(size_t)i * ns + k];
			double y = pt[(size_t)i * ns + k];

			if (x > 0)
				v[no++] = x;
			if (y > 0)
				tr[np++] = y;
			if (x > 0 && y > 0)
				r[nr++] = c->lat ? y / x : x / y;
		}
		qsort(v, no, sizeof(*v), cmp_d);
		qsort(tr, np, sizeof(*tr), cmp_d);
		mo = no ? quant(v, no, 0.5) : 0;
		mp = np ? quant(tr, np, 0.5) : 0;
		row[0][k] = mo;
		row[1][k] = mp;
		vd = verdict(r, nr);
		if (nr)
			printf(" %-10" PRIu64 " %-16.2f %-16.2f %-8.3f %s\n",
			       sizes[k], mo, mp, quant(r, nr, 0.5), vd);
		else
			printf(" %-10" PRIu64 " %-16.2f %-16.2f %-8s %s\n",
			       sizes[k], mo, mp, "-", "FAILED");
	}
	printf("# verdict: parity = ratio within +-10 %% of 1.0; ahead/behind only when the quartiles of the ratios agree\n");
}

/* The runs' output files and their folder. */
static void compare_cleanup(const char *tmp)
{
	static const char *const names[] = { "ours.srv", "ours.cli",
					     "pt.srv", "pt.cli" };
	char path[PATH_MAX + 16];
	size_t k;

	for (k = 0; k < 4; k++) {
		snprintf(path, sizeof(path), "%s/%s", tmp, names[k]);
		unlink(path);
	}
	rmdir(tmp);
}

int bench_compare(const char *prog, const struct bench_compare_cfg *c)
{
	const char *peer = bench_compare_peer(c->test);
	char peer_path[PATH_MAX], tmp[] = "/tmp/rdmaxfer-compare.XXXXXX";
	uint64_t sizes[BENCH_MAX_POINTS];
	double *ours = NULL, *pt = NULL, row[2][BENCH_MAX_POINTS];
	struct bench_series s[2];
	struct argbuf a;
	size_t ns = 0, k;
	int ret = 0, fails;

	if (!peer)
		return -EINVAL;
	if (bench_find_program(peer, peer_path, sizeof(peer_path))) {
		fprintf(stderr, "%s: --compare needs perftest's %s (apt-get install perftest): %s (%d)\n",
			prog, peer, strerror(ENOENT), -ENOENT);
		return -ENOENT;
	}
	if (c->all) {
		uint64_t sz;

		for (sz = A_MIN; sz <= A_MAX && ns < BENCH_MAX_POINTS; sz <<= 1)
			sizes[ns++] = sz;
	} else {
		sizes[ns++] = c->size;
	}
	if (!mkdtemp(tmp)) {
		ret = -errno;
		fprintf(stderr, "%s: --compare: temporary folder: %s (%d)\n",
			prog, strerror(-ret), ret);
		return ret;
	}
	ours = calloc((size_t)c->reps * ns, sizeof(*ours));
	pt = calloc((size_t)c->reps * ns, sizeof(*pt));
	if (!ours || !pt) {
		ret = -ENOMEM;
		goto out;
	}

	printf("# compare %s: rdmaxfer-bench vs perftest, same device, %d repetition(s), interleaved\n",
	       c->test, c->reps);
	build_ours(c, true, c->port, &a);
	print_cmd("ours:", &a);
	build_peer(c, peer_path, true, c->port + 1, &a);
	print_cmd("perftest:", &a);
	if (!c->lat)
		printf("# matched: %u in flight, %s\n", c->window,
		       c->batch > 1 ? "one doorbell and one CQE per batch (perftest -l = --batch)" :
				      "one doorbell and one CQE per message (perftest -Q 1 = --batch 1)");
	fflush(stdout);

	fails = compare_reps(prog, c, peer_path, sizes, ns, ours, pt, tmp);
	compare_table(c, sizes, ns, ours, pt, row);
	if (fails) {
		fprintf(stderr, "%s: --compare: %d run(s) failed\n", prog,
			fails);
		ret = -EIO;
	}
	if (c->plot) {
		char title[128];
		int pr;

		snprintf(title, sizeof(title), "%s on %s: rdmaxfer-bench vs perftest",
			 c->test, c->device ? c->device : "the first device");
		for (k = 0; k < 2; k++) {
			s[k].label = k ? peer : "rdmaxfer-bench";
			s[k].n = ns;
			memcpy(s[k].bytes, sizes, ns * sizeof(sizes[0]));
			memcpy(s[k].value, row[k], ns * sizeof(row[k][0]));
		}
		pr = bench_plot(prog, c->plot, title, c->lat, s, 2);
		if (!ret)
			ret = pr;
	}
out:
	free(ours);
	free(pt);
	compare_cleanup(tmp);
	return ret;
}
