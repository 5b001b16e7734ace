/*
 * transpose/avx2.c - a tile of 4-byte elements transposed 8 x 8 at a time in
 * ymm registers (unpack, shuffle, then swap 128-bit halves); the edges that
 * are not a whole 8 x 8 block element by element.
 */
#include <immintrin.h>
#include <string.h>

#include "transpose.h"

void kiln_transpose32_tile_avx2(void *y, const void *x, int64_t rows, int64_t cols,
                                int64_t y_row, int64_t x_col)
{
	float *yf = y;
	const float *xf = x;
	int64_t i = 0;
	for (; i + 8 <= rows; i += 8) {
		int64_t j = 0;
		for (; j + 8 <= cols; j += 8) {
			/* r[k][m] = X[i + m, column j + k] = Y[i + m][j + k] */
			const float *s = xf + j * x_col + i;
			__m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + x_col);
			__m256 r2 = _mm256_loadu_ps(s + 2 * x_col), r3 = _mm256_loadu_ps(s + 3 * x_col);
			__m256 r4 = _mm256_loadu_ps(s + 4 * x_col), r5 = _mm256_loadu_ps(s + 5 * x_col);
			__m256 r6 = _mm256_loadu_ps(s + 6 * x_col), r7 = _mm256_loadu_ps(s + 7 * x_col);
			__m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
			__m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
			__m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
			__m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
			__m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
			__m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
			__m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
			__m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
			float *d = yf + i * y_row + j;
			_mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
			_mm256_storeu_ps(d + y_row, _mm256_permute2f128_ps(u1, u5, 0x20));
			_mm256_storeu_ps(d + 2 * y_row, _mm256_permute2f128_ps(u2, u6, 0x20));
			_mm256_storeu_ps(d + 3 * y_row, _mm256_permute2f128_ps(u3, u7, 0x20));
			_mm256_storeu_ps(d + 4 * y_row, _mm256_permute2f128_ps(u0, u4, 0x31));
			_mm256_storeu_ps(d + 5 * y_row, _mm256_permute2f128_ps(u1, u5, 0x31));
			_mm256_storeu_ps(d + 6 * y_row, _mm256_permute2f128_ps(u2, u6, 0x31));
			_mm256_storeu_ps(d + 7 * y_row, _mm256_permute2f128_ps(u3, u7, 0x31));
		}
		for (; j < cols; j++)
			for (int64_t m = 0; m < 8; m++)
				memcpy(yf + (i + m) * y_row + j, xf + j * x_col + i + m, 4);
	}
	for (; i < rows; i++)
		for (int64_t j = 0; j < cols; j++)
			memcpy(yf + i * y_row + j, xf + j * x_col + i, 4);
}
