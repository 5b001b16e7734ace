/*
 * f32-gemv/avx2.c - gemv.h's product with AVX2 + FMA: a 32-column panel is
 * four ymm per row of K; two panels at a time into eight accumulators, each
 * column one chain over k (the GEMM tiles' order). A narrower last panel
 * goes through masked loads.
 */
#include <immintrin.h>

#include "../f32-gemm/pack.h"
#include "gemv.h"

static __m256i lanes(int64_t n)
{
	n = n < 0 ? 0 : n > 8 ? 8 : n;
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Panels n0 and n0 + 32 (w0 and w1 columns, w1 0 if there is none): each
 * column's sum one FMA chain over k from 0, as the GEMM tiles sum it
 * (docs/reproducibility.md), the latency hidden by the two panels' eight
 * independent chains instead of by splitting k. */
static void panel_pair(int64_t K, const float *x, const float *b0, const float *b1, int64_t w0,
                       int64_t w1, const float *bias, float *y)
{
	/* named accumulators: an array would live on the stack */
	__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
	       a7 = a0;
	__m256i m[8];
	for (int q = 0; q < 4; q++) {
		m[q] = lanes(w0 - 8 * q);
		m[4 + q] = lanes(w1 - 8 * q);
	}
	if (w0 == KILN_PACK_NR && w1 == KILN_PACK_NR)
		for (int64_t k = 0; k < K; k++) {
			const float *r0 = b0 + k * KILN_PACK_NR, *r1 = b1 + k * KILN_PACK_NR;
			__m256 xv = _mm256_set1_ps(x[k]);
			a0 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r0), a0);
			a1 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r0 + 8), a1);
			a2 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r0 + 16), a2);
			a3 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r0 + 24), a3);
			a4 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r1), a4);
			a5 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r1 + 8), a5);
			a6 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r1 + 16), a6);
			a7 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r1 + 24), a7);
		}
	else
		for (int64_t k = 0; k < K; k++) {
			const float *r0 = b0 + k * w0, *r1 = b1 + k * w1;
			__m256 xv = _mm256_set1_ps(x[k]);
			a0 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r0, m[0]), a0);
			a1 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r0 + 8, m[1]), a1);
			a2 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r0 + 16, m[2]), a2);
			a3 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r0 + 24, m[3]), a3);
			if (w1 > 0) {
				a4 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r1, m[4]), a4);
				a5 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r1 + 8, m[5]), a5);
				a6 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r1 + 16, m[6]), a6);
				a7 = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r1 + 24, m[7]), a7);
			}
		}
	__m256 sum[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
	for (int q = 0; q < 8; q++) {
		if (bias)
			sum[q] = _mm256_add_ps(sum[q], _mm256_maskload_ps(bias + 8 * q, m[q]));
		_mm256_maskstore_ps(y + 8 * q, m[q], sum[q]);
	}
}

void kiln_gemv_avx2(int64_t N, int64_t K, const float *x, const float *Bp, const float *bias,
                        float *y)
{
	for (int64_t n0 = 0; n0 < N; n0 += 2 * KILN_PACK_NR) {
		int64_t n1 = n0 + KILN_PACK_NR;
		int64_t w0 = kiln_pack_b32_width(N, n0), w1 = n1 < N ? kiln_pack_b32_width(N, n1) : 0;
		panel_pair(K, x, Bp + n0 * K, Bp + n1 * K, w0, w1, bias ? bias + n0 : NULL, y + n0);
	}
}
