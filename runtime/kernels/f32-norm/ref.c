/*
 * f32-norm/ref.c - float32 LayerNormalization and (inference-mode)
 * BatchNormalization, through the vector variant kiln_isa() picks (the rows
 * are f32-vmath/body.h's, chosen once per call).
 *
 * Both subtract a mean and divide by a standard deviation, which is where
 * float32 loses precision: when the mean is large next to the spread, x - mean
 * in float cancels most of its digits. LayerNorm sums the mean in double
 * lanes, takes the variance in a second pass (never E[x^2] - E[x]^2; short
 * float chains of d^2 added into double lanes, the bound in f32-vmath/body.h),
 * and subtracts the mean as two floats hi + lo, (x - hi) - lo, exact near the
 * mean; BatchNorm's
 * mean is a float input, so x - mean is exact near it. The rest is float with
 * FMA: a few roundings, relative to the size of the terms.
 * Every element of Y depends only on the element of X at the same index and
 * on per-row or per-channel values computed before Y is written, so Y may be X.
 */
#include <math.h>

#include "kiln/kernels.h"
#include "../f32-vmath/vmath.h"

KILN_API void kiln_f32_layernorm(const float *X, const float *scale, const float *bias,
                                 float *Y, int64_t outer, int64_t norm_size, float epsilon)
{
	if (norm_size <= 0)
		return;
	vmath_ops()->layernorm_rows(X, NULL, scale, bias, Y, outer, norm_size, epsilon);
}

KILN_API void kiln_f32_add_layernorm(const float *X, const float *R, const float *scale,
                                     const float *bias, float *Y, int64_t outer,
                                     int64_t norm_size, float epsilon)
{
	if (norm_size <= 0)
		return;
	vmath_ops()->layernorm_rows(X, R, scale, bias, Y, outer, norm_size, epsilon);
}

KILN_API void kiln_f32_batchnorm(const float *X, const float *scale, const float *bias,
                                 const float *mean, const float *var, float *Y, int64_t N,
                                 int64_t C, int64_t spatial, float epsilon)
{
	const VmathOps *ops = vmath_ops();
	for (int64_t c = 0; c < C; c++) {
		/* the division folded into the gain once per channel, in double */
		float gain = (float)((double)scale[c] / sqrt((double)var[c] + (double)epsilon));
		for (int64_t n = 0; n < N; n++) {
			int64_t at = (n * C + c) * spatial;
			ops->batchnorm_plane(X + at, Y + at, spatial, mean[c], gain, bias[c]);
		}
	}
}
