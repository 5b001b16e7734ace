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
 * stack array, so that every load walks a contiguous run of X.
 */
#include <math.h>

#include "kiln/kernels.h"

enum { REDUCE_COLS = 64 };

/* Y[o, j] = sum over r of X[o, r, j], multiplied by `factor` in double. */
static void reduce_sum_scaled(const float *X, float *Y, int64_t outer, int64_t reduce_len,
                              int64_t inner, double factor)
{
	for (int64_t o = 0; o < outer; o++) {
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
