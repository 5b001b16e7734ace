/*
 * f32-softmax/ref.c - the reference float32 Softmax and LogSoftmax along the
 * middle axis of an [outer, axis_len, inner] view.
 *
 * Numerically stable the usual way: the maximum of each line is subtracted
 * before exponentiating, so every exponential is in (0, 1] and the sum is in
 * [1, axis_len]; nothing overflows whatever the magnitude of the input. The
 * exponentials are f32-vmath's (<= 1 ulp) and the sum is accumulated in
 * double. Contiguous lines are the vector variant's softmax_line (body.h),
 * chosen once per call (vmath_ops). LogSoftmax is computed as
 * (x - max) - log(sum), never as log(softmax), which would lose everything
 * below the smallest float.
 * When inner > 1 the axis is strided. Rather than walking one strided line at
 * a time, the kernel takes SOFTMAX_COLS neighbouring lines together, keeping
 * their maxima and sums in small arrays on the stack, so that every pass
 * reads whole contiguous runs of X.
 * Each pass reads X[i] before the next writes Y[i], so Y may be X.
 */
#include <math.h>

#include "kiln/kernels.h"
#include "../f32-vmath/vmath.h"

enum { SOFTMAX_COLS = 64 };

/* cols (<= SOFTMAX_COLS) neighbouring lines of len >= 1 elements, each strided
 * by `stride`: element a of line j is x[a * stride + j]. */
static void softmax_columns(const VmathOps *ops, const float *x, float *y, int64_t len,
                            int64_t stride, int64_t cols, int is_log)
{
	float max[SOFTMAX_COLS];
	double sum[SOFTMAX_COLS];
	for (int64_t j = 0; j < cols; j++) {
		max[j] = x[j];
		sum[j] = 0.0;
	}
	for (int64_t a = 1; a < len; a++)
		for (int64_t j = 0; j < cols; j++) {
			float v = x[a * stride + j];
			max[j] = v > max[j] ? v : max[j];
		}
	for (int64_t a = 0; a < len; a++) {
		float e[SOFTMAX_COLS];
		for (int64_t j = 0; j < cols; j++)
			e[j] = x[a * stride + j] - max[j];
		ops->unary(KILN_UNARY_EXP, e, e, cols);
		for (int64_t j = 0; j < cols; j++) {
			if (!is_log)
				y[a * stride + j] = e[j];
			sum[j] += (double)e[j];
		}
	}
	if (is_log) {
		float log_sum[SOFTMAX_COLS];
		for (int64_t j = 0; j < cols; j++)
			log_sum[j] = (float)kiln_log(sum[j]);
		for (int64_t a = 0; a < len; a++)
			for (int64_t j = 0; j < cols; j++)
				y[a * stride + j] = (x[a * stride + j] - max[j]) - log_sum[j];
	} else {
		float inv_sum[SOFTMAX_COLS];
		for (int64_t j = 0; j < cols; j++)
			inv_sum[j] = (float)(1.0 / sum[j]);
		for (int64_t a = 0; a < len; a++)
			for (int64_t j = 0; j < cols; j++)
				y[a * stride + j] *= inv_sum[j];
	}
}

KILN_API void kiln_f32_softmax(const float *X, float *Y, int64_t outer, int64_t axis_len,
                               int64_t inner, int is_log)
{
	if (axis_len <= 0 || inner <= 0)
		return;
	const VmathOps *ops = vmath_ops();
	for (int64_t o = 0; o < outer; o++) {
		const float *x = X + o * axis_len * inner;
		float *y = Y + o * axis_len * inner;
		if (inner == 1) {
			ops->softmax_line(x, y, axis_len, is_log);
			continue;
		}
		for (int64_t j0 = 0; j0 < inner; j0 += SOFTMAX_COLS) {
			int64_t cols = inner - j0 < SOFTMAX_COLS ? inner - j0 : SOFTMAX_COLS;
			softmax_columns(ops, x + j0, y + j0, axis_len, inner, cols, is_log);
		}
	}
}
