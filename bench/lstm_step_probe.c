/*
 * lstm_step_probe.c - the batch-1 LSTM recurrence of f32-vmath/avx512.c
 * (vmath_lstm_row, block by block) alone, without kiln_f32_rnn's set-up and
 * input projection, against a stream of the same R^T with the FMAs only,
 * to find what a step costs above the stream. Includes the AVX-512 variant
 * of f32-vmath itself, so it times the kernel's own code.
 *
 * Modes (TSC ticks a call of T = 25 steps, 10th percentile and median
 * over the calls of the last of 7 runs, and CPU time a call, median of the
 * 7 runs):
 *   row      vmath_lstm_row (whole blocks, by_blocks), as kiln_f32_rnn calls
 *            it at batch 1 (I does not matter: xw is given);
 *   stream   the whole blocks, forward and backward in turn, the same loop
 *            of FMAs, no cell: the sums go to a buffer no step reads. With
 *            -DDUMMY_END=N a chain of N dependent FMAs at each block's end,
 *            with -DDUMMY_SPREAD=N the same chain one FMA a row pair of
 *            the block's loop.
 * huge puts R^T in 2 MiB-aligned memory marked MADV_HUGEPAGE.
 * docs/kernels-log.md ("Batch 1, the cell in two halves") has what it measured.
 *
 * build: cc -std=c11 -O2 -mavx512f -mavx512vl -mavx512bw -mavx512dq -mfma -Iinclude
 *        -Iruntime/kernels/f32-vmath bench/lstm_step_probe.c -lm -o lstm_step_probe
 * usage: taskset -c 1 ./lstm_step_probe MODE [H [CALLS [malloc|huge]]]
 */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* another copy of the variant (an experiment) with -DVMATH_SRC='"path"' */
#ifndef VMATH_SRC
#define VMATH_SRC "../runtime/kernels/f32-vmath/avx512.c"
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"  /* the variant's other kernels */
#include VMATH_SRC
#pragma GCC diagnostic pop
#include "pages.h"
#include "timing.h"

enum { T = 25, RUNS = 7, WARM = 2000 };

static float *floats(int64_t n, float scale, int huge)
{
	size_t bytes = (size_t)((n * 4 + 63) / 64 * 64);
	float *p;
	if (huge) {
		p = aligned_pages(bytes, MADV_HUGEPAGE);
	} else {
		p = aligned_alloc(64, bytes);
	}
	if (!p)
		exit(1);
	for (int64_t i = 0; i < n; i++)
		p[i] = scale * ((float)rand() / (float)RAND_MAX - 0.5f);
	return p;
}

static float sink[80];

/* One block's product only (lstm_block_nv's loop as it was before issue 30's
 * one chain per column: rows k in chain k mod 2), the sums
 * added to sink. */
static inline __attribute__((always_inline)) void stream_block(int64_t K, const float *x,
                                                               const float *R)
{
	const float *R1 = R + K * 32;
	V a[2][4];
	for (int u = 0; u < 2; u++)
		for (int v = 0; v < 4; v++)
			a[u][v] = vset(0.0f);
#ifdef DUMMY_SPREAD
	V d = vset(sink[0]);
#endif
	for (int64_t k = 0; k + 2 <= K; k += 2) {
#ifdef DUMMY_SPREAD
		if (k < 2 * DUMMY_SPREAD)
			d = vfma(d, d, vset(0.5f));
#endif
#pragma GCC unroll 2
		for (int u = 0; u < 2; u++) {
			V xv = vset(x[k + u]);
			a[u][0] = vfma(xv, vload(R + (k + u) * 32), a[u][0]);
			a[u][1] = vfma(xv, vload(R + (k + u) * 32 + 16), a[u][1]);
			a[u][2] = vfma(xv, vload(R1 + (k + u) * 32), a[u][2]);
			a[u][3] = vfma(xv, vload(R1 + (k + u) * 32 + 16), a[u][3]);
		}
	}
#ifdef DUMMY_END
	{
		V d = vadd(a[0][0], a[1][0]);
		for (int j = 0; j < DUMMY_END; j++)
			d = vfma(d, d, vset(0.5f));
		vstore(sink, d);
	}
#endif
#ifdef DUMMY_SPREAD
	vstore(sink + 64, d);
#endif
	for (int v = 0; v < 4; v++)
		vstore(sink + 16 * v, vadd(a[0][v], a[1][v]));
}

static void stream_row(const VmathLstmRow *a)
{
	int64_t H = a->H, nb = H / 16;
	for (int64_t s = 0; s < a->len; s++)
		for (int64_t i = 0; i < nb; i++) {
			int64_t n = s % 2 ? nb - 1 - i : i;
			stream_block(H, a->x, a->R + 64 * n * H);
		}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "row";
	int64_t H = argc > 2 ? atoll(argv[2]) : 144, calls = argc > 3 ? atoll(argv[3]) : 4000;
	int huge = argc > 4 && !strcmp(argv[4], "huge");
	float *R = floats(4 * H * H, 0.1f, huge), *xw = floats(T * 4 * H, 1.0f, 0);
	float *c = floats(H, 0.0f, 0), *h = floats(H, 0.0f, 0), *x = floats(H, 0.0f, 0);
	float *g = floats(4 * H, 0.0f, 0);
	VmathLstmRow a = {.H = H, .len = T, .by_blocks = 1, .xw = xw, .xw_t = 4 * H, .R = R,
	                  .c = c, .h = h, .x = x, .g = g, .clip = 0.0f};
	void (*fn)(const VmathLstmRow *) = !strcmp(mode, "stream") ? stream_row : vmath_lstm_row;
	for (int i = 0; i < WARM; i++)
		fn(&a);
	double us[RUNS];
	double *one = malloc((size_t)calls * sizeof *one);
	for (int r = 0; r < RUNS; r++) {
		double t0 = cpu_ns();
		for (int64_t i = 0; i < calls; i++) {
			uint64_t c0 = __rdtsc();
			fn(&a);
			one[i] = (double)(__rdtsc() - c0);
		}
		us[r] = (cpu_ns() - t0) / (double)calls / 1e3;
	}
	qsort(us, RUNS, sizeof us[0], cmp_double);
	qsort(one, (size_t)calls, sizeof *one, cmp_double);
	print_huge_pages("");
	printf("tsc a call (last run): p10 %.0f median %.0f\n", one[calls / 10], one[calls / 2]);
	double sum = 0;
	for (int64_t j = 0; j < H; j++)
		sum += (double)h[j];
	printf("%s H %lld %s: %.2f us a call (median of %d), min %.2f, max %.2f; sum %.9g %g\n", mode,
	       (long long)H, huge ? "huge" : "malloc", us[RUNS / 2], RUNS, us[0], us[RUNS - 1], sum,
	       (double)sink[0]);
	return 0;
}
