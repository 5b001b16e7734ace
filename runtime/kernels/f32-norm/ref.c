/*
 * f32-norm/ref.c - the reference float32 LayerNormalization and
 * (inference-mode) BatchNormalization.
 *
 * Both subtract a mean and divide by a standard deviation, which is where
 * float32 loses precision: when the mean is large next to the spread, x - mean
 * in float cancels most of its digits. So the statistics (LayerNorm's mean
 * and variance, computed in two passes rather than as E[x^2] - E[x]^2) and
 * every per-element expression are evaluated in double, and only the result
 * is rounded to float. These kernels are memory-bound, so the double
 * arithmetic costs little.
 * Every element of Y depends only on the element of X at the same index and
 * on per-row or per-channel values computed before Y is written, so Y may be X.
 */
#include <math.h>

#include "kiln/kernels.h"

KILN_API void kiln_f32_layernorm(const float *X, const float *scale, const float *bias,
                                 float *Y, int64_t outer, int64_t norm_size, float epsilon)
{
	if (norm_size <= 0)
		return;
	for (int64_t o = 0; o < outer; o++) {
		const float *x = X + o * norm_size;
		float *y = Y + o * norm_size;
		double sum = 0.0;
		for (int64_t i = 0; i < norm_size; i++)
			sum += (double)x[i];
		double mean = sum / (double)norm_size;
		double sq = 0.0;
		for (int64_t i = 0; i < norm_size; i++) {
			double d = (double)x[i] - mean;
			sq += d * d;
		}
		double inv_std = 1.0 / sqrt(sq / (double)norm_size + (double)epsilon);
		for (int64_t i = 0; i < norm_size; i++) {
			double v = ((double)x[i] - mean) * inv_std * (double)scale[i];
			y[i] = (float)(bias ? v + (double)bias[i] : v);
		}
	}
}

KILN_API void kiln_f32_batchnorm(const float *X, const float *scale, const float *bias,
                                 const float *mean, const float *var, float *Y, int64_t N,
                                 int64_t C, int64_t spatial, float epsilon)
{
	for (int64_t c = 0; c < C; c++) {
		/* y = (x - mean) * gain + bias, the division folded into gain once per channel */
		double gain = (double)scale[c] / sqrt((double)var[c] + (double)epsilon);
		double m = (double)mean[c], b = (double)bias[c];
		for (int64_t n = 0; n < N; n++) {
			const float *x = X + (n * C + c) * spatial;
			float *y = Y + (n * C + c) * spatial;
			for (int64_t i = 0; i < spatial; i++)
				y[i] = (float)(((double)x[i] - m) * gain + b);
		}
	}
}
