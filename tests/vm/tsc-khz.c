// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * tsc-khz: print the host's TSC frequency in kHz, for the guest's
 * tsc_early_khz= kernel parameter.
 *
 * Under QEMU TCG the guest's TSC is the host's TSC.  A guest left to
 * calibrate it against the emulated PIT on a busy host gets it badly wrong
 * (145 MHz instead of 2 GHz was seen), and with tsc=reliable its clock
 * then runs many times too fast: timeouts fire early and every timing is
 * off.  Measuring here, where the clock is right, and passing the value on
 * avoids the calibration.  Each sample brackets the TSC reads between two
 * clock reads and keeps the tightest bracket; the median of the samples is
 * printed.  Exit 1 (nothing printed) when there is no usable TSC.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SAMPLES 5

#if defined(__x86_64__) || defined(__i386__)
static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One (ns, tsc) point: the read with the smallest clock bracket of 20. */
static void point(uint64_t *ns, uint64_t *tsc)
{
	uint64_t best = UINT64_MAX;
	int i;

	for (i = 0; i < 20; i++) {
		uint64_t a = now_ns();
		uint64_t c = rdtsc();
		uint64_t b = now_ns();

		if (b - a < best) {
			best = b - a;
			*ns = a + (b - a) / 2;
			*tsc = c;
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(void)
{
	struct timespec pause = { 0, 50 * 1000 * 1000 };
	uint64_t khz[SAMPLES];
	int i;

	for (i = 0; i < SAMPLES; i++) {
		uint64_t n0, c0, n1, c1;

		point(&n0, &c0);
		nanosleep(&pause, NULL);
		point(&n1, &c1);
		if (n1 <= n0 || c1 <= c0)
			return 1;
		khz[i] = (c1 - c0) * 1000000u / (n1 - n0);
	}
	qsort(khz, SAMPLES, sizeof(khz[0]), cmp_u64);
	if (khz[SAMPLES / 2] < 100000)	/* below 100 MHz: not a real TSC */
		return 1;
	printf("%llu\n", (unsigned long long)khz[SAMPLES / 2]);
	return 0;
}
#else
int main(void)
{
	return 1;
}
#endif
