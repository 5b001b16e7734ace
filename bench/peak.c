/*
 * peak.c - the machine's single-core fp32 peak, for the "% of peak" column
 * of bench/compare.sh.
 *
 * Times a loop of independent fused multiply-adds held in registers (12
 * accumulators, each updated with acc = acc * a + b) in the AVX-512 (16
 * floats) and AVX2+FMA (8 floats) forms the CPU supports. Every FMA counts
 * 2 flops per lane. Each form is run `runs` times for about 0.1 s and the
 * best and median GFLOP/s by CPU time (so that another process sharing the
 * core does not lower it) and the best by wall-clock time are printed as
 * one JSON object:
 *
 *   {"avx512": {"best": 151.2, "median": 148.0, "wall_best": 150.1},
 *    "avx2": {...}, "isa": "avx512"}
 *
 * ("isa" names the widest form measured: the peak the table divides by.)
 *
 * Built with -O2 -march=native by compare.sh; the per-function target
 * attributes let it build and run anywhere (forms the CPU lacks are skipped).
 *
 * usage: peak [RUNS]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include "timing.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

#define ITERS 4096L

static volatile float sink;

#ifdef HAVE_X86
/* 12 independent accumulators, written out so that they stay in registers
 * (16 ymm / 32 zmm): more than FMA latency (4) x FMA ports (2) needs. */
#define FMA12(FMA)                                                            \
	do {                                                                      \
		c0 = FMA(c0, a, b); c1 = FMA(c1, a, b); c2 = FMA(c2, a, b);           \
		c3 = FMA(c3, a, b); c4 = FMA(c4, a, b); c5 = FMA(c5, a, b);           \
		c6 = FMA(c6, a, b); c7 = FMA(c7, a, b); c8 = FMA(c8, a, b);           \
		c9 = FMA(c9, a, b); c10 = FMA(c10, a, b); c11 = FMA(c11, a, b);       \
	} while (0)
#define FMA_LOOP(T, SET1, FMA, ADD, STORE, LANES)                             \
	T c0 = SET1(1.0f), c1 = SET1(1.1f), c2 = SET1(1.2f), c3 = SET1(1.3f);     \
	T c4 = SET1(1.4f), c5 = SET1(1.5f), c6 = SET1(1.6f), c7 = SET1(1.7f);     \
	T c8 = SET1(1.8f), c9 = SET1(1.9f), c10 = SET1(2.0f), c11 = SET1(2.1f);   \
	T a = SET1(0.999999f), b = SET1(1e-7f);                                   \
	for (long it = 0; it < reps * ITERS; it++)                                \
		FMA12(FMA);                                                           \
	c0 = ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7)));   \
	c0 = ADD(c0, ADD(ADD(c8, c9), ADD(c10, c11)));                            \
	float out[LANES];                                                         \
	STORE(out, c0);                                                           \
	sink = out[0];                                                            \
	return 2.0 * LANES * 12 * ITERS * (double)reps;

__attribute__((target("avx512f"))) static double fma512(long reps)
{
	FMA_LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_storeu_ps, 16)
}

__attribute__((target("avx2,fma"))) static double fma256(long reps)
{
	FMA_LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_storeu_ps, 8)
}
#endif

/* Best and median GFLOP/s of `runs` runs of about 0.1 s of CPU time each,
 * by CPU time (the core's rate while this process holds it) and, for
 * reference, the best by wall-clock time. */
static void measure(const char *name, double (*f)(long), int runs)
{
	long reps = 1;
	for (;;) { /* calibrate the repetitions to ~0.1 s */
		double t0 = cpu_ns();
		f(reps);
		double dt = cpu_ns() - t0;
		if (dt > 2e7) {
			reps = (long)((double)reps * 1e8 / dt) + 1;
			break;
		}
		reps *= 4;
	}
	double *g = malloc(2 * (size_t)runs * sizeof *g), *w = g + runs;
	if (!g)
		exit(1);
	for (int r = 0; r < runs; r++) {
		double c0 = cpu_ns(), t0 = now_ns();
		double flops = f(reps);
		w[r] = flops / (now_ns() - t0);
		g[r] = flops / (cpu_ns() - c0);
	}
	qsort(g, (size_t)runs, sizeof *g, cmp_double);
	qsort(w, (size_t)runs, sizeof *w, cmp_double);
	printf("\"%s\": {\"best\": %.2f, \"median\": %.2f, \"wall_best\": %.2f}, ", name, g[runs - 1],
	       g[runs / 2], w[runs - 1]);
	free(g);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	if (runs < 1)
		runs = 1;
	const char *isa = "";
	printf("{");
#ifdef HAVE_X86
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f")) {
		measure("avx512", fma512, runs);
		isa = "avx512";
	}
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
		measure("avx2", fma256, runs);
		if (!*isa)
			isa = "avx2";
	}
#endif
	printf("\"isa\": \"%s\"}\n", isa);
	return 0;
}
