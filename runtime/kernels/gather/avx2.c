/*
 * gather/avx2.c - a gather of 4-byte elements along the last axis, four
 * outputs per vgatherqps (int64 indices); the tail element by element.
 * Elements are moved, never computed (but for plus_zero's + 0.0f), so the
 * bits are those of gather.c (select.c).
 */
#include <immintrin.h>
#include <string.h>

#include "gather.h"

void kiln_gather32_row_avx2(const void *data, const int64_t *idx, void *out, int64_t outer,
                            int64_t axis_len, int64_t n, int plus_zero)
{
	const float *x = data;
	float *y = out;
	const __m256i len = _mm256_set1_epi64x(axis_len), zero = _mm256_setzero_si256();
	const __m128 fzero = _mm_setzero_ps();
	for (int64_t i = 0; i + 4 <= n; i += 4) {
		__m256i k = _mm256_loadu_si256((const __m256i *)(const void *)(idx + i));
		k = _mm256_add_epi64(k, _mm256_and_si256(_mm256_cmpgt_epi64(zero, k), len));
		for (int64_t o = 0; o < outer; o++) {
			__m128 v = _mm256_i64gather_ps(x + o * axis_len, k, 4);
			_mm_storeu_ps(y + o * n + i, plus_zero ? _mm_add_ps(v, fzero) : v);
		}
	}
	for (int64_t i = n - n % 4; i < n; i++) {
		int64_t k = idx[i] < 0 ? idx[i] + axis_len : idx[i];
		for (int64_t o = 0; o < outer; o++) {
			if (plus_zero)
				y[o * n + i] = x[o * axis_len + k] + 0.0f;
			else
				memcpy(y + o * n + i, x + o * axis_len + k, 4);
		}
	}
}
