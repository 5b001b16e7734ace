/*
 * timing.h - what the bench programs share: a monotonic clock and the
 * process's CPU time in nanoseconds, and the comparison for sorting samples
 * to take a median.
 */
#ifndef KILN_BENCH_TIMING_H
#define KILN_BENCH_TIMING_H

#include <time.h>

static inline double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* CPU time of the process: unlike now_ns(), it does not advance while the
 * process waits for a core that another process holds. */
static inline double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

#endif
