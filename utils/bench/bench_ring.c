// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_ring.c - rdmaxfer-bench "ring": the grain ring's cost against a
 * plain WRITE stream in the same run.
 *
 * Both sides live in this process (LOCAL), or the target in another
 * process, another host (TARGET there, REMOTE here): a target agent
 * (progress thread) with a ring whose callback releases each grain as
 * it arrives, and an initiator agent.  For each grain size and N in
 * {4, 16, 64} the initiator puts a number of grains (blocking on credits;
 * cfg->batch per doorbell) and, on the same connection, posts the same
 * number of plain WRITEs of the same size into the same slots, N in
 * flight and as many per doorbell, in ROUNDS alternating rounds each, so
 * that a slow phase of the machine hits both sides alike.  The ratio is
 * what the ring costs (the immediate, the target's completion and release
 * per grain, credits); absolute numbers under an emulator mean nothing,
 * the ratio does.
 *
 * Remote, the target process has a second agent for the control
 * messages (the rings' agent serves nothing but the rings): per
 * point the initiator names N and the size, the target answers with the
 * ring's one-line target info (JSON, the form a control plane carries),
 * and after the point it confirms that it released every grain.
 *
 * --floor (local only) adds a third phase to each round: as many WRITEs
 * with immediate, N in flight, into a second target agent that has no
 * ring and only counts them.  That is a ring without credits (which a
 * ring must never be): ring / imm is what the credits cost, imm / write
 * what the immediate and the target's completion per grain cost.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include "bench_ring.h"

#define RING_MAX_BYTES	(64ULL << 20)
#define WAIT_MS		30000
#define ROUNDS		4

static const uint32_t ring_slots[] = { 4, 16, 64 };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The target's side of one point: its ring, and the grains released. */
struct ring_target {
	struct rdmaxfer_ring *ring;
	uint64_t released;
};

/*
 * --floor (local mode): a second target agent without a ring, whose
 * callback only counts immediates, and the initiator's peer to it.
 * WRITEs with immediate into it, N in flight, are a ring without
 * credits: the immediate and the target's completion per grain, never a
 * wait for a release.  Safe because nothing reads those slots.
 */
struct ring_floor {
	struct rdmaxfer_agent *agent;
	struct rdmaxfer_peer *peer;
	uint64_t imms;
	struct rdmaxfer_ring_info info;	/* its slots, as a ring's */
};

/* Seconds of one point's three phases, summed over the rounds. */
struct ring_times {
	double ring, write, imm;
};

/* Control messages of the remote mode (cfg->ctl's types).  A point of
 * n_slots 0 ends the session. */
struct ring_point_msg {
	uint32_t magic;
	uint32_t n_slots;
	uint64_t size;
};

struct ring_info_msg {
	uint32_t magic;
	int32_t status;
	char json[RDMAXFER_RING_JSON_MAX];
};

/* initiator -> target: grains put; the answer: grains released */
struct ring_end_msg {
	uint32_t magic;
	int32_t status;
	uint64_t grains;
};

static void release_cb(void *user, const struct rdmaxfer_grain *g)
{
	struct ring_target *t = user;

	rdmaxfer_ring_release(t->ring, g->index);
	__atomic_add_fetch(&t->released, 1, __ATOMIC_RELAXED);
}

static void floor_cb(void *user, const struct rdmaxfer_notif *n)
{
	struct ring_floor *f = user;

	if (n->type == RDMAXFER_NOTIF_IMM)
		__atomic_add_fetch(&f->imms, 1, __ATOMIC_RELAXED);
}

/* Until a target's callback has counted want (0), or -EBADMSG when
 * another count stays (WAIT_MS). */
static int wait_count(const uint64_t *count, uint64_t want)
{
	double t0 = now_s();

	while (__atomic_load_n(count, __ATOMIC_RELAXED) < want &&
	       now_s() - t0 < WAIT_MS / 1e3)
		usleep(1000);
	return __atomic_load_n(count, __ATOMIC_RELAXED) == want ?
	       0 : -EBADMSG;
}

static void target_ring_destroy(struct ring_target *t)
{
	if (!t->ring)
		return;
	rdmaxfer_ring_set_cb(t->ring, NULL, NULL);
	rdmaxfer_ring_destroy(t->ring);
	t->ring = NULL;
}

/*
 * Until the target has released grains: the initiator's flush saw the
 * WRITEs acknowledged, but the last completions may still be on their
 * way through the target's progress thread, and a grain handed to the
 * agent after its ring is gone would go to the next point's ring.  0, or
 * -EBADMSG when another count stays.
 */
static int wait_released(struct ring_target *t, uint64_t grains)
{
	return wait_count(&t->released, grains);
}

/* A ring of n slots of size bytes on tgt whose callback releases every
 * grain as it lands, and its target info. */
static int target_ring_create(struct rdmaxfer_agent *tgt, uint32_t n,
			      uint64_t size, struct ring_target *t,
			      struct rdmaxfer_ring_info *info)
{
	int ret;

	t->released = 0;
	ret = rdmaxfer_ring_create(tgt, n, size, 0, &t->ring);
	if (ret) {
		t->ring = NULL;
		return ret;
	}
	ret = rdmaxfer_ring_set_cb(t->ring, release_cb, t);
	if (!ret)
		ret = rdmaxfer_ring_get_info(t->ring, info);
	if (ret)
		target_ring_destroy(t);
	return ret;
}

/* RDMAXFER_POST_MORE for all but every batch-th post of count and the
 * last. */
static unsigned int more_flag(uint32_t i, uint32_t count, uint32_t batch)
{
	return (i + 1) % batch && i + 1 < count ? RDMAXFER_POST_MORE : 0;
}

/* Plain WRITEs of a slot's size into the ring's slots, n_slots in
 * flight, batch per doorbell; each with an immediate if imm. */
static int plain_writes(struct rdmaxfer_peer *peer,
			const struct rdmaxfer_ring_info *info, void *src,
			uint32_t iters, uint32_t batch, bool imm, double *secs)
{
	struct rdmaxfer_xfer_notif notif = { .value = 0 };
	struct rdmaxfer_req **reqs;
	struct rdmaxfer_iov iov = { src, info->slot_size };
	uint32_t i, n = info->n_slots;
	double t0;
	int ret = 0;

	reqs = calloc(n, sizeof(*reqs));
	if (!reqs)
		return -ENOMEM;
	for (i = 0; i < n && !ret; i++) {
		struct rdmaxfer_desc d = info->slots;

		d.addr += (uint64_t)i * info->slot_size;
		d.len = info->slot_size;
		ret = rdmaxfer_xfer_prepare(peer, RDMAXFER_OP_WRITE, &iov, 1,
					    &d, 1, imm ? &notif : NULL,
					    &reqs[i]);
	}
	t0 = now_s();
	for (i = 0; i < iters && !ret; i++) {
		if (i >= n)
			ret = rdmaxfer_req_wait(reqs[i % n], WAIT_MS);
		if (!ret)
			ret = rdmaxfer_req_post_flags(reqs[i % n],
						      more_flag(i, iters,
								batch));
	}
	for (i = 0; i < n && i < iters; i++) {
		int r = rdmaxfer_req_wait(reqs[i], WAIT_MS);

		if (!ret && r)
			ret = r;
	}
	*secs = now_s() - t0;
	for (i = 0; i < n; i++)
		if (reqs[i])
			rdmaxfer_req_free(reqs[i]);
	free(reqs);
	return ret;
}

/* Grains per point: given, else by size (about 256 MiB, 64 to 4000),
 * rounded up to a multiple of ROUNDS; returned per round. */
static uint32_t round_grains(const struct bench_ring_cfg *cfg, uint64_t size)
{
	uint32_t iters = cfg->iters;

	if (!iters) {
		iters = (uint32_t)((256ULL << 20) / size);
		iters = iters < 64 ? 64 : iters > 4000 ? 4000 : iters;
	}
	return (iters + ROUNDS - 1) / ROUNDS;
}

/*
 * The initiator's side of one point, on a ring whose target info is
 * info: ROUNDS rounds, each chunk grains put (blocking on credits,
 * cfg->batch per doorbell) and then as many plain WRITEs on the writer's
 * own connection; the seconds of each side summed in *rsec and *psec.
 */
static int ring_rounds(const struct bench_ring_cfg *cfg,
		       struct rdmaxfer_agent *ini,
		       const struct rdmaxfer_ring_info *info, void *src,
		       uint32_t chunk, struct ring_floor *fl,
		       struct ring_times *tm)
{
	struct rdmaxfer_ring_writer *w = NULL;
	struct rdmaxfer_iov iov = { src, info->slot_size };
	uint32_t i, r, batch = cfg->batch > 1 ? cfg->batch : 1;
	uint64_t next = 0;
	double t0, sec = 0;
	int ret;

	memset(tm, 0, sizeof(*tm));
	/* the floor agent's progress thread counts it: atomic like there */
	if (fl)
		__atomic_store_n(&fl->imms, 0, __ATOMIC_RELAXED);
	ret = rdmaxfer_ring_attach(ini, info, WAIT_MS, &w);
	for (r = 0; r < ROUNDS && !ret; r++) {
		t0 = now_s();
		for (i = 0; i < chunk && !ret; i++)
			ret = rdmaxfer_ring_put(w, next++, &iov, 1,
						more_flag(i, chunk, batch),
						WAIT_MS);
		if (!ret)
			ret = rdmaxfer_ring_flush(w, WAIT_MS);
		tm->ring += now_s() - t0;
		/* the plain WRITEs on the writer's own connection: same
		 * path */
		if (!ret)
			ret = plain_writes(rdmaxfer_ring_writer_peer(w), info,
					   src, chunk, batch, false, &sec);
		tm->write += sec;
		if (ret || !fl)
			continue;
		/* the same with immediates into the ring-less target, and
		 * its completions all taken before the next round */
		ret = plain_writes(fl->peer, &fl->info, src, chunk, batch,
				   true, &sec);
		tm->imm += sec;
		if (!ret)
			ret = wait_count(&fl->imms, (uint64_t)(r + 1) * chunk);
	}
	if (w)
		rdmaxfer_ring_detach(w);
	return ret;
}

static void print_point(const struct bench_ring_cfg *cfg, uint32_t n,
			uint64_t size, uint32_t iters,
			const struct ring_times *tm)
{
	const char *fmt = cfg->csv ?
		"ring,%u,%llu,%u,%.1f,%.2f,%.1f,%.2f,%.3f" :
		"%4u %10llu %6u %12.1f %10.2f %12.1f %10.2f %8.3f";

	printf(fmt, n, (unsigned long long)size, iters, iters / tm->ring,
	       iters * (double)size / tm->ring / 1048576.0,
	       iters / tm->write,
	       iters * (double)size / tm->write / 1048576.0,
	       tm->ring / tm->write);
	if (cfg->floor)
		printf(cfg->csv ? ",%.1f,%.3f,%.3f" : " %12.1f %8.3f %8.3f",
		       iters / tm->imm, tm->imm / tm->write,
		       tm->ring / tm->imm);
	printf("\n");
	fflush(stdout);
}

/* One point with the target in this process (agent tgt). */
static int point_local(const struct bench_ring_cfg *cfg,
		       struct rdmaxfer_agent *tgt, struct rdmaxfer_agent *ini,
		       uint32_t n, uint64_t size, void *src, uint32_t chunk,
		       struct ring_floor *fl, struct ring_times *tm)
{
	struct rdmaxfer_mem *fmem = NULL;
	struct rdmaxfer_ring_info info;
	struct ring_target t;
	void *fbuf = NULL;
	size_t flen = (size_t)n * size;
	int ret;

	if (fl) {
		/* the floor's slots: as many, as large, remote write only */
		fbuf = mmap(NULL, flen, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (fbuf == MAP_FAILED)
			return -ENOMEM;
		ret = rdmaxfer_mem_register_access(fl->agent, fbuf, flen,
						   RDMAXFER_MEM_HOST,
						   RDMAXFER_ACCESS_REMOTE_WRITE,
						   &fmem);
		if (!ret)
			ret = rdmaxfer_mem_desc(fmem, 0, 0, &fl->info.slots);
		if (ret)
			goto out;
		fl->info.n_slots = n;
		fl->info.slot_size = size;
	}
	ret = target_ring_create(tgt, n, size, &t, &info);
	if (ret)
		goto out;
	ret = ring_rounds(cfg, ini, &info, src, chunk, fl, tm);
	if (!ret)
		ret = wait_released(&t, (uint64_t)chunk * ROUNDS);
	target_ring_destroy(&t);
out:
	if (fmem)
		rdmaxfer_mem_deregister(fmem);
	if (fbuf)
		munmap(fbuf, flen);
	return ret;
}

/* One point with a remote target (control peer ctl): ask it for a ring,
 * measure, and have it confirm that it released every grain. */
static int point_remote(const struct bench_ring_cfg *cfg,
			struct rdmaxfer_agent *ini, struct rdmaxfer_peer *ctl,
			uint32_t n, uint64_t size, void *src, uint32_t chunk,
			struct ring_times *tm)
{
	const struct bench_ring_ctl *c = &cfg->ctl;
	struct ring_point_msg pt = { c->magic, n, size };
	struct ring_end_msg end = { .magic = c->magic };
	struct rdmaxfer_ring_info info;
	static struct ring_info_msg im;
	int ret, r;

	ret = c->send(ini, ctl, c->type_point, &pt, sizeof(pt));
	if (!ret)
		ret = c->recv(ini, ctl, c->type_info, &im, sizeof(im),
			      WAIT_MS);
	if (!ret)
		ret = im.status;
	if (!ret) {
		im.json[sizeof(im.json) - 1] = 0;
		ret = rdmaxfer_ring_info_parse_json(im.json, &info);
	}
	if (ret)
		return ret;
	ret = ring_rounds(cfg, ini, &info, src, chunk, NULL, tm);
	end.status = ret;
	end.grains = (uint64_t)chunk * ROUNDS;
	r = c->send(ini, ctl, c->type_end, &end, sizeof(end));
	if (!r)
		r = c->recv(ini, ctl, c->type_end, &end, sizeof(end), WAIT_MS);
	if (!ret)
		ret = r ? r : end.status;
	return ret;
}

/* TARGET: the rings a remote initiator asks for, one at a time, until it
 * sends the point of no slots (or goes away). */
static int serve_points(const struct bench_ring_cfg *cfg,
			struct rdmaxfer_agent *cag, struct rdmaxfer_peer *peer,
			struct rdmaxfer_agent *tgt)
{
	const struct bench_ring_ctl *c = &cfg->ctl;
	static struct ring_info_msg im;
	struct rdmaxfer_ring_info info;
	struct ring_point_msg pt;
	struct ring_end_msg end;
	struct ring_target t = { NULL, 0 };
	int ret;

	for (;;) {
		ret = c->recv(cag, peer, c->type_point, &pt, sizeof(pt), -1);
		if (ret || !pt.n_slots)
			return ret;
		memset(&im, 0, sizeof(im));
		im.magic = c->magic;
		if (pt.n_slots > RDMAXFER_RING_MAX_SLOTS || !pt.size ||
		    pt.size > RING_MAX_BYTES / pt.n_slots)
			im.status = -EINVAL;
		else
			im.status = target_ring_create(tgt, pt.n_slots,
						       pt.size, &t, &info);
		if (!im.status) {
			im.status = rdmaxfer_ring_info_json(&info, im.json,
							    sizeof(im.json));
			im.status = im.status > 0 ? 0 : im.status;
		}
		ret = c->send(cag, peer, c->type_info, &im, sizeof(im));
		if (!ret && !im.status)
			ret = c->recv(cag, peer, c->type_end, &end,
				      sizeof(end), -1);
		if (!ret && !im.status) {
			if (!end.status)
				end.status = wait_released(&t, end.grains);
			end.grains = t.released;
			fprintf(stderr, "# ring N %u size %llu: %llu grains "
				"released (%s)\n", pt.n_slots,
				(unsigned long long)pt.size,
				(unsigned long long)end.grains,
				rdmaxfer_strerror(end.status));
			ret = c->send(cag, peer, c->type_end, &end,
				      sizeof(end));
		}
		target_ring_destroy(&t);
		if (ret)
			return ret;
	}
}

/* TARGET: a control agent on port, the rings' agent on port + 1, both
 * on cfg->host; one initiator is served. */
static int bench_ring_target(const struct bench_ring_cfg *cfg)
{
	struct rdmaxfer_agent *cag = NULL, *tgt = NULL;
	struct rdmaxfer_peer *peer = NULL;
	int ret;

	ret = cfg->make_agent(0, &cag);
	if (!ret)
		ret = cfg->make_target(&tgt);
	if (!ret)
		ret = rdmaxfer_listen(cag, cfg->host, cfg->ctl.port);
	if (!ret)
		ret = rdmaxfer_listen(tgt, cfg->host,
				      (uint16_t)(cfg->ctl.port + 1));
	if (!ret) {
		fprintf(stderr, "# ring target: waiting for an initiator on "
			"%s port %u\n", cfg->host, cfg->ctl.port);
		ret = rdmaxfer_accept(cag, cfg->ctl.accept_ms, &peer);
	}
	if (!ret)
		ret = serve_points(cfg, cag, peer, tgt);
	if (ret)
		fprintf(stderr, "ring target: %s\n", rdmaxfer_strerror(ret));
	if (peer)
		rdmaxfer_peer_destroy(peer);
	if (tgt)
		rdmaxfer_agent_destroy(tgt);
	if (cag)
		rdmaxfer_agent_destroy(cag);
	return ret;
}

int bench_ring(const struct bench_ring_cfg *cfg)
{
	struct rdmaxfer_agent *tgt = NULL, *ini = NULL;
	struct rdmaxfer_peer *ctl = NULL;
	bool remote = cfg->role == BENCH_RING_REMOTE;
	uint64_t maxsz = 0, size;
	struct ring_point_msg bye = { cfg->ctl.magic, 0, 0 };
	struct ring_floor fs = { 0 }, *fl = NULL;
	struct ring_times tm;
	uint16_t fport = 0;
	uint32_t chunk;
	void *src = NULL;
	size_t s, k;
	int ret;

	if (cfg->role == BENCH_RING_TARGET)
		return bench_ring_target(cfg);
	for (s = 0; s < cfg->nsizes; s++)
		if (cfg->sizes[s] > maxsz)
			maxsz = cfg->sizes[s];
	ret = cfg->make_agent(0, &ini);
	if (!ret && remote)
		ret = cfg->ctl.connect(ini, &ctl);
	if (!ret && !remote)
		ret = cfg->make_target(&tgt);
	if (!ret && !remote)
		ret = rdmaxfer_listen(tgt, cfg->host, 0);
	if (!ret && cfg->floor) {
		/* checked by the caller too: the floor is local only */
		if (remote)
			ret = -EINVAL;
		if (!ret)
			ret = cfg->make_target(&fs.agent);
		if (!ret)
			ret = rdmaxfer_listen(fs.agent, cfg->host, 0);
		if (!ret)
			ret = rdmaxfer_listen_port(fs.agent, &fport);
		if (!ret)
			ret = rdmaxfer_set_notif_cb(fs.agent, floor_cb,
						    &fs);
		if (!ret)
			ret = rdmaxfer_connect(ini, cfg->host, fport, WAIT_MS,
					       &fs.peer);
		if (!ret)
			fl = &fs;
	}
	if (!ret && !(src = malloc(maxsz)))
		ret = -ENOMEM;
	if (ret)
		goto out;
	memset(src, 0xa5, maxsz);
	if (cfg->csv)
		printf("test,n_slots,size,grains,ring_grains_s,ring_mib_s,"
		       "write_s,write_mib_s,ring_time_ratio%s\n",
		       fl ? ",imm_s,imm_time_ratio,ring_imm_ratio" : "");
	else
		printf("# ring: grains put (credits, one WRITE with immediate "
		       "each) vs plain WRITEs of the same size, N in flight, "
		       "same connection%s%s\n%4s %10s %6s %12s %10s %12s %10s "
		       "%8s%s\n", remote ? ", remote target" : "",
		       fl ? "; imm: WRITEs with immediate to a target without "
			    "a ring (no credits)" : "",
		       "N", "size", "grains", "ring/s", "ring MiB/s",
		       "write/s", "write MiB/s", "t ratio",
		       fl ? "        imm/s   imm/wr ring/imm" : "");
	for (s = 0; s < cfg->nsizes && !ret; s++)
		for (k = 0; k < sizeof(ring_slots) / sizeof(*ring_slots) &&
		     !ret; k++) {
			size = cfg->sizes[s];
			if (size * ring_slots[k] > RING_MAX_BYTES)
				continue;
			chunk = round_grains(cfg, size);
			if (remote)
				ret = point_remote(cfg, ini, ctl, ring_slots[k],
						   size, src, chunk, &tm);
			else
				ret = point_local(cfg, tgt, ini, ring_slots[k],
						  size, src, chunk, fl, &tm);
			if (!ret)
				print_point(cfg, ring_slots[k], size,
					    chunk * ROUNDS, &tm);
		}
out:
	if (ret)
		fprintf(stderr, "ring: %s\n", rdmaxfer_strerror(ret));
	/* a remote target ends with the point of no slots */
	if (ctl && cfg->ctl.send(ini, ctl, cfg->ctl.type_point, &bye,
				 sizeof(bye)) == 0)
		usleep(100000);
	free(src);
	if (fs.peer)
		rdmaxfer_peer_destroy(fs.peer);
	if (fs.agent) {
		rdmaxfer_set_notif_cb(fs.agent, NULL, NULL);
		rdmaxfer_agent_destroy(fs.agent);
	}
	if (ctl)
		rdmaxfer_peer_destroy(ctl);
	if (ini)
		rdmaxfer_agent_destroy(ini);
	if (tgt)
		rdmaxfer_agent_destroy(tgt);
	return ret;
}
