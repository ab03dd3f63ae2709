/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmaxfer_ring_test.h - what the sample ring tests share
 * (test_rdmaxfer_ring.c in one guest, test_rdmaxfer_2host.c between
 * two): the ring's shape, the write sizes, the sample pattern, filling
 * a write and checking a delivered one.
 */
#ifndef RDMAXFER_RING_TEST_H
#define RDMAXFER_RING_TEST_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <rdmaxfer.h>

#define RING_S_CHANNELS	2
#define RING_S_LEN	1000	/* samples per channel, 4 bytes each */

/* Samples of write k: 1..999, so that writes cross the ring's end at
 * varying points over the laps. */
static inline uint32_t ring_s_count(int k)
{
	static const uint32_t counts[] = { 300, 450, 700, 1, 999, 250, 480 };

	return counts[k % (int)(sizeof(counts) / sizeof(counts[0]))];
}

/* Sample idx of channel c: a value of its own, so that a sample in the
 * wrong plane, position or lap is seen. */
static inline uint32_t ring_s_val(uint32_t c, uint64_t idx)
{
	return (uint32_t)(idx * 2654435761U) ^ (c << 28) ^ 0x5a5a5a5aU;
}

/* Samples [head, head + n) of every channel into buf[c], and ch[c] the
 * write's local buffers. */
static inline void ring_s_fill(uint32_t **buf, struct rdmaxfer_iov *ch,
			       uint64_t head, uint32_t n)
{
	uint32_t c, j;

	for (c = 0; c < RING_S_CHANNELS; c++) {
		for (j = 0; j < n; j++)
			buf[c][j] = ring_s_val(c, head + j);
		ch[c].addr = buf[c];
		ch[c].len = (size_t)n * 4;
	}
}

/*
 * Check one delivered write: its shape, then every sample of every
 * channel where the two fragments say.  0, or -EBADMSG with *idx and
 * *chan naming the first wrong sample (*idx UINT64_MAX: the shape).
 */
static inline int ring_s_check(const struct rdmaxfer_samples *s,
			       uint64_t *idx, uint32_t *chan)
{
	uint32_t c, j, v;

	*idx = UINT64_MAX;
	*chan = 0;
	if (s->channels != RING_S_CHANNELS || s->stride != RING_S_LEN * 4 ||
	    s->frag_len[0] + s->frag_len[1] != (uint64_t)s->count * 4 ||
	    (s->frag_len[1] && s->frag[1] == NULL))
		return -EBADMSG;
	for (c = 0; c < RING_S_CHANNELS; c++) {
		for (j = 0; j < s->count; j++) {
			const uint8_t *f0 = s->frag[0], *f1 = s->frag[1];
			uint64_t b = (uint64_t)j * 4;
			const uint8_t *p = b < s->frag_len[0] ? f0 + b :
				f1 + b - s->frag_len[0];

			memcpy(&v, p + (size_t)c * s->stride, 4);
			if (v != ring_s_val(c, s->head - s->count + j)) {
				*idx = s->head - s->count + j;
				*chan = c;
				return -EBADMSG;
			}
		}
	}
	return 0;
}

#endif /* RDMAXFER_RING_TEST_H */
