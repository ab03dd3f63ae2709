/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench_ring.h - rdmaxfer-bench's grain ring test ("ring", bench_ring.c).
 */
#ifndef RDMAXFER_BENCH_RING_H
#define RDMAXFER_BENCH_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmaxfer.h>

/* where the target runs: here beside the initiator, or in another
 * process (another host) that serves one remote initiator */
enum bench_ring_role {
	BENCH_RING_LOCAL,	/* both agents in this process */
	BENCH_RING_TARGET,	/* only the target; the initiator is remote */
	BENCH_RING_REMOTE,	/* only the initiator, against a TARGET */
};

/* The control messages between a remote initiator and its target
 * (rdmaxfer-bench's own, first word its magic). */
struct bench_ring_ctl {
	/* send msg of len bytes as message type (0 or -errno) */
	int (*send)(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		    uint32_t type, const void *msg, size_t len);
	/* wait for a message of type and exactly len bytes (timeout_ms < 0:
	 * while the peer lives) */
	int (*recv)(struct rdmaxfer_agent *agent, struct rdmaxfer_peer *peer,
		    uint32_t type, void *msg, size_t len, int timeout_ms);
	/* REMOTE: connect to the target's control port, retrying while it
	 * starts */
	int (*connect)(struct rdmaxfer_agent *agent,
		       struct rdmaxfer_peer **peerp);
	uint32_t magic;
	uint32_t type_point;		/* initiator -> target: a ring */
	uint32_t type_info;		/* target -> initiator: its info */
	uint32_t type_end;		/* initiator -> target: point done */
	uint16_t port;			/* TARGET: control port; ring: +1 */
	int accept_ms;			/* TARGET: wait for the initiator */
};

struct bench_ring_cfg {
	enum bench_ring_role role;
	struct bench_ring_ctl ctl;	/* TARGET and REMOTE */
	const uint64_t *sizes;
	size_t nsizes;
	uint32_t iters;			/* grains per point (0: by size) */
	const char *host;		/* the target's listen address (REMOTE:
					 * the target's control address) */
	uint32_t batch;			/* grains per doorbell (0, 1: one) */
	/* LOCAL: also WRITEs with immediate into a ring-less target (the
	 * ring's cost without credits) */
	bool floor;
	bool csv;
	int (*make_agent)(uint32_t flags, struct rdmaxfer_agent **agentp);
	/* the target: an agent with a progress thread */
	int (*make_target)(struct rdmaxfer_agent **agentp);
};

/* Grains per second and bandwidth of the ring for each size and N in
 * {4, 16, 64} between two agents (of this process, or the initiator here
 * and the target in a process run with BENCH_RING_TARGET), against plain
 * WRITEs of the same size and depth on the same connection.  TARGET
 * serves one initiator's points until it says it is done.  0 or
 * -errno. */
int bench_ring(const struct bench_ring_cfg *cfg);

#endif /* RDMAXFER_BENCH_RING_H */
