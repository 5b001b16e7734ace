/*
 * f32-softmax/ref.c - the reference float32 Softmax and LogSoftmax along the
 * middle axis of an [outer, axis_len, inner] view.
 *
 * Numerically stable the usual way: the maximum of each line is subtracted
 * before exponentiating, so every exponential is in (0, 1] and the sum is in
 * [1, axis_len]; nothing overflows whatever the magnitude of the input. The
 * sum is accumulated in double. LogSoftmax is computed as
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

enum { SOFTMAX_COLS = 64 };

/* One contiguous line of len >= 1 elements (inner == 1). */
static void softmax_line(const float *x, float *y, int64_t len, int is_log)
{
	float max = x[0];
	for (int64_t i = 1; i < len; i++)
		max = x[i] > max ? x[i] : max;
	double sum = 0.0;
	if (is_log) {
		for (int64_t i = 0; i < len; i++)
			sum += (double)expf(x[i] - max);
		float log_sum = (float)log(sum);
		for (int64_t i = 0; i < len; i++)
			y[i] = (x[i] - max) - log_sum;
	} else {
		for (int64_t i = 0; i < len; i++) {
			float e = expf(x[i] - max);
			y[i] = e;
			sum += (double)e;
		}
		float inv_sum = (float)(1.0 / sum);
		for (int64_t i = 0; i < len; i++)
			y[i] *= inv_sum;
	}
}

/* cols (<= SOFTMAX_COLS) neighbouring lines of len >= 1 elements, each strided
 * by `stride`: element a of line j is x[a * stride + j]. */
static void softmax_columns(const float *x, float *y, int64_t len, int64_t stride, int64_t cols,
                            int is_log)
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
	for (int64_t a = 0; a < len; a++)
		for (int64_t j = 0; j < cols; j++) {
			float e = expf(x[a * stride + j] - max[j]);
			if (!is_log)
				y[a * stride + j] = e;
			sum[j] += (double)e;
		}
	if (is_log) {
		float log_sum[SOFTMAX_COLS];
		for (int64_t j = 0; j < cols; j++)
			log_sum[j] = (float)log(sum[j]);
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
	for (int64_t o = 0; o < outer; o++) {
		const float *x = X + o * axis_len * inner;
		float *y = Y + o * axis_len * inner;
		if (inner == 1) {
			softmax_line(x, y, axis_len, is_log);
			continue;
		}
		for (int64_t j0 = 0; j0 < inner; j0 += SOFTMAX_COLS) {
			int64_t cols = inner - j0 < SOFTMAX_COLS ? inner - j0 : SOFTMAX_COLS;
			softmax_columns(x + j0, y + j0, axis_len, inner, cols, is_log);
		}
	}
}
