/*
 * f32-gemv/avx2.c - gemv.h's product with AVX2 + FMA: a 32-column panel is
 * four ymm per row of K; two rows at a time into eight accumulators. A
 * narrower last panel goes through masked loads, one row at a time.
 */
#include <immintrin.h>

#include "../f32-gemm/pack.h"
#include "gemv.h"

static __m256i lanes(int64_t n)
{
	n = n < 0 ? 0 : n > 8 ? 8 : n;
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

void kiln_gemv_avx2(int64_t N, int64_t K, const float *x, const float *Bp, const float *bias,
                        float *y)
{
	for (int64_t n0 = 0; n0 < N; n0 += KILN_PACK_NR) {
		int64_t w = kiln_pack_b32_width(N, n0);
		const float *b = Bp + n0 * K;
		/* named accumulators: an array would live on the stack */
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
		       a7 = a0;
		int64_t k = 0;
		if (w == KILN_PACK_NR)
			for (; k + 2 <= K; k += 2) {
				const float *r = b + k * KILN_PACK_NR;
				__m256 x0 = _mm256_set1_ps(x[k]), x1 = _mm256_set1_ps(x[k + 1]);
				a0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r), a0);
				a1 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r + 8), a1);
				a2 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r + 16), a2);
				a3 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r + 24), a3);
				a4 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(r + 32), a4);
				a5 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(r + 40), a5);
				a6 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(r + 48), a6);
				a7 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(r + 56), a7);
			}
		__m256i m[4];
		for (int q = 0; q < 4; q++)
			m[q] = lanes(w - 8 * q);
		for (; k < K; k++) {
			__m256 xv = _mm256_set1_ps(x[k]);
			const float *r = b + k * w;
			a0 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r, m[0]), a0);
			a1 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r + 8, m[1]), a1);
			a2 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r + 16, m[2]), a2);
			a3 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r + 24, m[3]), a3);
		}
		__m256 sum[4] = {_mm256_add_ps(a0, a4), _mm256_add_ps(a1, a5), _mm256_add_ps(a2, a6),
		                 _mm256_add_ps(a3, a7)};
		for (int q = 0; q < 4; q++) {
			if (bias)
				sum[q] = _mm256_add_ps(sum[q], _mm256_maskload_ps(bias + n0 + 8 * q, m[q]));
			_mm256_maskstore_ps(y + n0 + 8 * q, m[q], sum[q]);
		}
	}
}
