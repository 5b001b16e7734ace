/*
 * f32-reduce/ref.c - the reference float32 ReduceSum and ReduceMean over one
 * contiguous block of axes, viewed as the middle axis of [outer, reduce_len,
 * inner].
 *
 * Accumulation is in double: the 29 extra bits of mantissa make the rounding
 * error of any realistic sum (even 10^8 terms) negligible next to the final
 * rounding to float, without the bookkeeping of Kahan or pairwise summation.
 * When inner > 1 the reduced axis is strided; the kernel then reduces
 * REDUCE_COLS neighbouring columns together with their accumulators in a
 * stack array, so that every load walks a contiguous run of X. When inner
 * == 1 (a mean over a row, e.g. over the particles of [N, C, P]) it sums
 * REDUCE_ROWS rows side by side: each row's sum is still one chain of double
 * additions from r = 0, the same bits as one row at a time, but the rows'
 * chains overlap instead of each waiting on its own additions' latency.
 */
#include <math.h>

#include "kiln/kernels.h"

enum { REDUCE_COLS = 64, REDUCE_ROWS = 8 };

/* Y[o, j] = sum over r of X[o, r, j], multiplied by `factor` in double. */
static void reduce_sum_scaled(const float *X, float *Y, int64_t outer, int64_t reduce_len,
                              int64_t inner, double factor)
{
	int64_t o0 = 0;
	if (inner == 1)
		for (; o0 + REDUCE_ROWS <= outer; o0 += REDUCE_ROWS) {
			/* eight named sums: an array would live on the stack, each
			 * addition waiting on the store of the one before */
			const float *x0 = X + o0 * reduce_len, *x1 = x0 + reduce_len,
			            *x2 = x1 + reduce_len, *x3 = x2 + reduce_len, *x4 = x3 + reduce_len,
			            *x5 = x4 + reduce_len, *x6 = x5 + reduce_len, *x7 = x6 + reduce_len;
			double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
			for (int64_t r = 0; r < reduce_len; r++) {
				s0 += (double)x0[r], s1 += (double)x1[r], s2 += (double)x2[r];
				s3 += (double)x3[r], s4 += (double)x4[r], s5 += (double)x5[r];
				s6 += (double)x6[r], s7 += (double)x7[r];
			}
			const double sum[REDUCE_ROWS] = {s0, s1, s2, s3, s4, s5, s6, s7};
			for (int i = 0; i < REDUCE_ROWS; i++)
				Y[o0 + i] = (float)(sum[i] * factor);
		}
	for (int64_t o = o0; o < outer; o++) {
		const float *x = X + o * reduce_len * inner;
		float *y = Y + o * inner;
		if (inner == 1) {
			double sum = 0.0;
			for (int64_t r = 0; r < reduce_len; r++)
				sum += (double)x[r];
			y[0] = (float)(sum * factor);
			continue;
		}
		for (int64_t j0 = 0; j0 < inner; j0 += REDUCE_COLS) {
			int64_t cols = inner - j0 < REDUCE_COLS ? inner - j0 : REDUCE_COLS;
			double sum[REDUCE_COLS] = {0};
			for (int64_t r = 0; r < reduce_len; r++) {
				const float *row = x + r * inner + j0;
				for (int64_t j = 0; j < cols; j++)
					sum[j] += (double)row[j];
			}
			for (int64_t j = 0; j < cols; j++)
				y[j0 + j] = (float)(sum[j] * factor);
		}
	}
}

KILN_API void kiln_f32_reduce_sum(const float *X, float *Y, int64_t outer, int64_t reduce_len,
                                  int64_t inner)
{
	reduce_sum_scaled(X, Y, outer, reduce_len, inner, 1.0);
}

KILN_API void kiln_f32_reduce_mean(const float *X, float *Y, int64_t outer, int64_t reduce_len,
                                   int64_t inner)
{
	if (reduce_len <= 0) {
		/* the mean of nothing is undefined: NaN, as numpy gives */
		for (int64_t i = 0; i < outer * inner; i++)
			Y[i] = NAN;
		return;
	}
	reduce_sum_scaled(X, Y, outer, reduce_len, inner, 1.0 / (double)reduce_len);
}
