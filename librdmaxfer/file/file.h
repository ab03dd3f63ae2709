/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * file.h - files as transfer endpoints, private: the engine (file.c: its
 * io_uring, checks, local I/O, staging pool) and what its requests
 * (file_req.c: file <-> remote) use of it.
 */
#ifndef RX_FILE_H
#define RX_FILE_H

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

/* $RDMAXFER_FILE_INJECT's points (file.c, rdmaxfer_file(3)) */
enum file_inject_point {
	INJ_NONE, INJ_REGISTER, INJ_REGBUF, INJ_SUBMIT, INJ_CQE, INJ_SHORT,
	INJ_EOF,
};

/* One chunk in flight: where it goes and how much of it is done. */
struct file_io {
	uint64_t off;
	char *buf;
	uint32_t len;
	uint32_t done;
	bool busy;		/* queued or in flight */
};

enum slot_state { SLOT_IDLE, SLOT_FILE, SLOT_NET };

/* A chunk of the staging pool and what its chunk is doing. */
struct file_slot {
	enum slot_state state;
	struct file_io io;
	struct rdmaxfer_req *req;	/* the RDMA leg (SLOT_NET) */
	uint64_t pos;			/* its offset in the range */
};

/* The file room's state on an agent: the engines with a request in
 * progress, stepped by rdmaxfer_progress() (file_progress(), file_req.c),
 * under the agent lock. */
struct rx_file_agent {
	struct rx_list active;
	uint64_t round;
};

struct rdmaxfer_file {
	pthread_mutex_t lock;
	struct io_uring ring;
	bool uring;
	uint32_t chunk;
	uint32_t qdepth;
	/* the staging pool of the remote legs: qdepth chunks, registered
	 * once through the agent's cache and with io_uring */
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_mem *pool_mem;
	char *pool;
	bool pool_fixed;
	struct file_slot *slots;	/* qdepth, of the active request */
	struct rx_list reqs;		/* struct rx_file_req prepared */
	struct rx_file_req *active;	/* the request in progress */
	struct rx_list active_node;	/* rx_file_agent.active (agent lock) */
	struct rx_dep dep;		/* on agent, while bound to it */
	uint64_t round;			/* file_progress() pass */
	unsigned int stalls;		/* submits in a row taking none */
	struct {
		enum file_inject_point point;
		unsigned int nth, seen;
		int err;
	} inj;
	struct rdmaxfer_file_info info;	/* counters, the last result */
	char msg[RDMAXFER_FILE_MSG_MAX];
};

int __attribute__((format(printf, 3, 4)))
rx_file_fail(struct rdmaxfer_file *file, int err, const char *fmt, ...);
bool rx_file_inject(struct rdmaxfer_file *file, enum file_inject_point point);
/* Only with nothing in the kernel's hands: unsubmitted SQEs are dropped. */
void rx_file_ring_reset(struct rdmaxfer_file *file);
void rx_file_account(struct rdmaxfer_file *file,
		     const struct rdmaxfer_file_result *res);
int rx_file_check(struct rdmaxfer_file *file,
		  const struct rdmaxfer_file_desc *d, const void *buf,
		  bool write, int *fdp, int *ownp, uint32_t *flagsp);
int rx_file_res(struct rdmaxfer_file *file, bool write, int res,
		uint32_t want);
int rx_file_res_err(bool write, int res);
int rx_file_pio(struct rdmaxfer_file *file, int fd,
		const struct rdmaxfer_file_desc *d, char *buf, bool write,
		uint64_t *donep);
void rx_file_queue(struct rdmaxfer_file *file, int fd, struct file_io *io,
		   bool write);
int rx_file_submit(struct rdmaxfer_file *file);
int rx_file_pool(struct rdmaxfer_file *file, struct rdmaxfer_agent *agent);

/* The range's first byte a chunk that ended at pos + done left undone. */
static inline void rx_file_fail_at(uint64_t *fail_pos, uint64_t pos)
{
	if (pos < *fail_pos)
		*fail_pos = pos;
}

/* file_req.c: cancel, wait for and free the engine's requests */
void rx_file_reqs_free(struct rdmaxfer_file *file);

#endif /* RX_FILE_H */
