/*
 * f32-lpnorm/ref.c - float32 LpNormalization (p = 1 or 2) along one axis.
 *
 * X is viewed as [outer, len, inner] with the normalized axis in the middle.
 * The kernel walks each outer slice in chunks of up to LPNORM_CHUNK inner
 * positions: one pass over the len rows sums |x| or x^2 per position in
 * double, a second writes x / norm. Reading the rows in order keeps the
 * accesses contiguous whatever the axis (inner = 1 is a plain row), and a
 * chunk's norms are all known before any of its outputs is written, so Y
 * may be X.
 *
 * Sums in double cannot overflow or underflow for finite float inputs, so
 * every finite row with a nonzero element normalizes correctly (ONNX Runtime
 * 1.30 sums in float: its x^2 underflows to a zero norm below about 1e-19 and
 * overflows to an infinite one above about 1e19, giving zeros there). As in
 * ONNX Runtime, a zero norm gives zeros, and infinities and NaN follow IEEE
 * division by the norm (an infinite norm gives NaN for the infinite elements
 * and zeros for the rest; a NaN gives NaN).
 */
#include <math.h>

#include "kiln/kernels.h"

enum { LPNORM_CHUNK = 64 };

KILN_API void kiln_f32_lpnorm(const float *X, float *Y, int64_t outer, int64_t len,
                              int64_t inner, int p)
{
	double norm[LPNORM_CHUNK];
	for (int64_t o = 0; o < outer; o++) {
		const float *x = X + o * len * inner;
		float *y = Y + o * len * inner;
		for (int64_t i0 = 0; i0 < inner; i0 += LPNORM_CHUNK) {
			int w = inner - i0 < LPNORM_CHUNK ? (int)(inner - i0) : LPNORM_CHUNK;
			for (int t = 0; t < w; t++)
				norm[t] = 0;
			for (int64_t j = 0; j < len; j++) {
				const float *row = x + j * inner + i0;
				if (p == 1) {
					for (int t = 0; t < w; t++)
						norm[t] += fabs((double)row[t]);
				} else {
					for (int t = 0; t < w; t++)
						norm[t] += (double)row[t] * (double)row[t];
				}
			}
			if (p != 1)
				for (int t = 0; t < w; t++)
					norm[t] = sqrt(norm[t]);
			for (int64_t j = 0; j < len; j++) {
				const float *row = x + j * inner + i0;
				float *out = y + j * inner + i0;
				for (int t = 0; t < w; t++)
					out[t] = norm[t] == 0 ? 0.0f : (float)((double)row[t] / norm[t]);
			}
		}
	}
}
