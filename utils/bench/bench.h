/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench.h - what rdmaxfer-bench's files share: the options (o), the
 * control messages between the two ends, the output and agent helpers
 * (bench_common.c), and each test family's entry point.  The families
 * with a configuration of their own (bench_compare, bench_devmem,
 * bench_file, bench_reg's reg_access, bench_ring) take it from the main
 * file's glue and do not read o.
 */
#ifndef RDMAXFER_BENCH_H
#define RDMAXFER_BENCH_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <infiniband/verbs.h>

#include <rdmaxfer.h>
#include <rdmaxfer_directory.h>
#include <regcache.h>

#include "bench_compare.h"

#define BENCH_MAGIC		0x48434e42U	/* "BNCH" */

#define DEF_PORT		18520

#define MAX_SIZE		(1ULL << 30)	/* largest -s we accept */

#define MAX_WINDOW		4096

#define A_MIN_SIZE		2

#define A_MAX_SIZE		(1ULL << 23)	/* -a: 2 B .. 8 MiB, like perftest */

#define REG_A_MIN		4096

#define REG_A_MAX		(64ULL << 20)

#define HIT_BATCHES		15		/* reg: cache hits, median batch */

#define HIT_BATCH		100

#define PROGRESS_NS		2000000000LL	/* a progress line after 2 s */

#define CTL_TIMEOUT_MS		30000

#define MiB			1048576.0

enum test {
	T_WRITE_BW, T_READ_BW, T_WRITE_LAT, T_READ_LAT, T_FADD_LAT,
	T_CSWAP_LAT, T_REG, T_NIXL, T_REG_ACCESS,
	T_FILE,			/* bench_file.c */
	T_RING,			/* bench_ring.c */
	T_DM_ATOMIC,		/* bench_devmem.c */
	T_COUNT
};

/* control messages (notification values) */
enum ctl {
	CTL_PARAMS = 1,		/* client -> server: struct ctl_params */
	CTL_READY = 2,		/* server -> client: struct ctl_ready */
	CTL_DONE = 3,		/* client -> server: struct ctl_done */
	CTL_RESULT = 4,		/* server -> client: struct ctl_result */
	CTL_RING_POINT = 5,	/* ring --remote: bench_ring.c's messages */
	CTL_RING_INFO = 6,
	CTL_RING_END = 7,
	CTL_NIXL_DESCS = 8,	/* nixl --rereg: bench_rereg.c's messages */
	CTL_NIXL_NEXT = 9,
	CTL_NIXL_REG = 10,
};

/* --wait: how write_lat's ends learn that the other's WRITE landed */
enum bench_wait {
	WAIT_POLL = 0,		/* the last byte, polled in memory (default) */
	WAIT_NOTIF = 1,		/* a WRITE with immediate, busy-polled */
	WAIT_FD = 2,		/* the same, asleep in epoll on the agent's fd */
};

/* write_lat --wait notif|fd: the immediate of size k of the plan */
#define WAIT_IMM(k)		(0x57540000U + (uint32_t)(k))

#define BENCH_F_REREG		(1U << 0)	/* nixl: the target re-registers */

enum cache_mode { CACHE_OFF = 1, CACHE_ON = 2, CACHE_BOTH = 3 };

struct ctl_params {
	uint32_t magic;
	uint32_t test;
	uint64_t buf_len;		/* server buffer */
	uint32_t iters;
	uint32_t nsizes;
	uint64_t sizes[32];		/* write_lat ping-pong plan */
	struct rdmaxfer_desc client;	/* write_lat: the client's buffer */
	uint32_t wait;			/* write_lat: enum bench_wait */
	uint32_t flags;			/* BENCH_F_* */
	uint32_t chunks;		/* nixl --rereg: the target's exports */
};

struct ctl_ready {
	uint32_t magic;
	int32_t status;
	struct rdmaxfer_desc server;
	uint32_t rkey_mode;		/* the server's enum rdmaxfer_rkey_mode */
};

struct ctl_done {
	uint32_t magic;
	uint32_t check;			/* 1: check the pattern */
	uint64_t check_len;
	uint64_t expect_word;		/* atomics: final value of word 0 */
};

struct ctl_result {
	uint32_t magic;
	int32_t status;
	uint64_t mismatches;
};

struct opts {
	enum test test;
	const char *server;
	const char *device;
	int ib_port;
	int gid_index;
	uint16_t port;
	uint64_t size;
	bool all;
	long iters;
	unsigned int window;
	unsigned int qps;
	unsigned int post_list;
	unsigned int batch;
	int cpu;
	bool json;
	bool csv;
	bool validate;
	double duration;
	int timeout_ms;
	uint64_t total;
	unsigned int chunks;
	enum cache_mode cache;
	unsigned int inline_size;
	unsigned int signal_interval;
	bool warmup;
	bool compare;
	int reps;
	const char *plot;
	int ring_role;			/* ring: enum bench_ring_role */
	bool ring_floor;		/* ring: --floor */
	bool batch_set;
	/* --thread-mode: one thread drives each caller-mode agent, so
	 * single (no lock on post and test), as ucx_perftest's default
	 * UCS_THREAD_MODE_SINGLE; multi measures the locked agent */
	bool single;
	/* the etcd directory: --directory URL, the server --publish NAME,
	 * the client --name NAME in place of SERVER */
	const char *directory;
	const char *publish;
	const char *name;
	enum bench_wait wait;		/* --wait (write_lat) */
	uint32_t rkey_mode;		/* --rkey-mode: enum rdmaxfer_rkey_mode */
	bool rereg;			/* --rereg (nixl) */
};

static inline bool is_lat(enum test t)
{
	return t == T_WRITE_LAT || t == T_READ_LAT || t == T_FADD_LAT ||
	       t == T_CSWAP_LAT;
}

static inline bool is_atomic(enum test t)
{
	return t == T_FADD_LAT || t == T_CSWAP_LAT;
}

/* A progress line on stderr once a run passes 2 s, then every 2 s. */
struct progress {
	int64_t start;
	int64_t next;
	const char *what;
};

struct client {
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_peer *peer;
	struct rdmaxfer_agent_info info;
	uint8_t *buf;
	uint64_t buf_len;
	struct rdmaxfer_mem *mem;
	struct rdmaxfer_desc remote;	/* the server's buffer */
	struct rdmaxfer_desc local;	/* ours */
};

struct raw_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	bool odp;
	char odp_why[160];
};

/* bench_common.c */
extern struct opts o;
extern const char *prog;
extern struct bench_series plot_series;
void err_msg(const char *what, int err);
uint8_t pattern(uint64_t i);
void fill_pattern(uint8_t *p, uint64_t len);
uint64_t check_pattern(const uint8_t *p, uint64_t len);
void *alloc_buf(uint64_t len);
int parse_size(const char *s, uint64_t *out);
int parse_long(const char *s, long min, long max, long *out);
int cmp_double(const void *a, const void *b);
double pct(const double *v, size_t n, double p);
void print_header(void);
void json_sep(void);
void out_bw(uint64_t bytes, long iters, double peak, double avg,
	    double mpps);
void out_lat(uint64_t bytes, long iters, double *v, size_t n);
void json_open(const struct rdmaxfer_agent_info *info);
void json_close(int validate_status);
void json_tail_add(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
const char *rkey_mode_name(uint32_t mode);
extern uint32_t bench_target_rkey_mode;	/* client: the server's, or 0 */
void progress_start(struct progress *p, const char *what);
void agent_err(int err);
extern enum rdmaxfer_progress_mode make_agent_progress;
int make_agent(enum regcache_monitor_type mon,
	       struct rdmaxfer_agent **agentp);
int make_agent_with(uint32_t flags, struct rdmaxfer_agent **agentp);
int send_ctl(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
	     enum ctl type, const void *msg, size_t len);
int recv_ctl(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
	     enum ctl type, void *msg, size_t len, int timeout_ms);
extern struct rdmaxfer_directory *bench_dir;	/* --directory */
void dir_done(void);
int connect_retry(struct rdmaxfer_agent *agent,
		  struct rdmaxfer_peer **peerp);
size_t plan_sizes(uint64_t *sizes, size_t max);
long iters_for(void);

/* bench_server.c, bench_client.c */
int run_server(void);
int run_client(void);

/* bench_bw.c, bench_lat.c, bench_nixl.c */
int bw_one(struct client *c, uint64_t size, long iters);
int lat_one(struct client *c, uint64_t size, long iters,
	    uint64_t *fetched, uint64_t *word_expect, long *bad);
int write_lat(struct client *c, const uint64_t *sizes, size_t n,
	      long iters);
int nixl_mode(struct client *c, struct raw_dev *r, bool cached,
	      long iters);
/* one iteration's registration and transfer times (target_ms: the
 * target's part of reg_ms, nixl --rereg) */
struct nixl_row {
	double reg_ms;
	double xfer_ms;
	double target_ms;
};
void nixl_out(const char *mode, const char *phase, long iters,
	      const struct nixl_row *row);
void nixl_rows_out(const char *mode, struct nixl_row *rows, long iters);
int nixl_xfer(struct client *c, const struct rdmaxfer_iov *iov,
	      const struct rdmaxfer_desc *rd);

/* bench_wait.c: write_lat --wait notif|fd, both ends */
extern const char *const wait_names[3];
int write_lat_ev(struct client *c, uint64_t sz, uint32_t value, long iters,
		 double *v, long *sleeps);
int echo_ev(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
	    enum bench_wait mode, uint64_t sz, const struct rdmaxfer_desc *rd,
	    uint8_t *buf, uint32_t value, long iters);

/* bench_rereg.c: nixl --rereg, both ends */
int nixl_rereg(struct client *c, long iters);
int serve_rereg(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		const struct ctl_params *par, uint8_t *buf);

/* bench_reg.c: reg, reg_access, and the raw-verbs baseline */
int raw_open(const char *name, struct raw_dev *r);
void raw_close(struct raw_dev *r);
int run_reg_access(void);
int run_reg(void);

/* bench_opts.c: -1 (go on) or main's exit status */
void usage(FILE *f);
int check_compare_plot(bool reps_set);
int parse_opts(int argc, char **argv, bool *size_set, bool *reps_set);
int check_opts(int argc, char **argv, bool size_set, bool reps_set);

/* rdmaxfer-bench.c */
extern const char *const test_names[T_COUNT];

/* inline: the timed loops call them */
static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void progress_tick(struct progress *p, int64_t now,
				 long done, long total)
{
	if (now < p->next)
		return;
	p->next = now + PROGRESS_NS;
	fprintf(stderr, "# %s %s: %ld/%ld iterations, %.1f s\n",
		test_names[o.test], p->what, done, total,
		(double)(now - p->start) / 1e9);
}

/* Test a posted request until it is no longer in progress. */
static inline int spin(struct rdmaxfer_req *req)
{
	int ret;

	while ((ret = rdmaxfer_req_test(req)) == -EINPROGRESS)
		;
	return ret;
}

#endif /* RDMAXFER_BENCH_H */
