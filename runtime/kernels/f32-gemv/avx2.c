/*
 * f32-gemv/avx2.c - gemv.h's product with AVX2 + FMA: a 32-column panel is
 * four ymm per row of K; two panels at a time into eight accumulators, each
 * column one chain over k in each K block of kc rows (kiln_gemm_kc's, or a
 * narrow layer's: the GEMM tiles' order), the blocks one after the other. A
 * narrower last panel goes through masked loads.
 */
#include <immintrin.h>

#include "../f32-gemm/gemm.h"
#include "gemv.h"

static __m256i lanes(int64_t n)
{
	n = n < 0 ? 0 : n > 8 ? 8 : n;
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Panels n0 and n0 + 32 (w0 and w1 columns, w1 0 if there is none): each
 * column's sum one FMA chain over the k of a K block of kc rows from 0
 * (added to the blocks before), then + bias, as the GEMM tiles sum
 * it (docs/reproducibility.md), the latency hidden by the two panels' eight
 * independent chains instead of by splitting k. */
static void panel_pair(int64_t K, int64_t kc, const float *x, const float *b0, const float *b1, int64_t w0,
                       int64_t w1, const float *bias, float *y)
{
	__m256 acc[8], tot[8];
	__m256i m[8];
	for (int q = 0; q < 4; q++) {
		m[q] = lanes(w0 - 8 * q);
		m[4 + q] = lanes(w1 - 8 * q);
	}
#pragma GCC unroll 8
	for (int q = 0; q < 8; q++)
		tot[q] = _mm256_setzero_ps();  /* (K >= 1: the first block sets them) */
	for (int64_t k0 = 0; k0 < K; k0 += kc) {
		int64_t k1 = K - k0 < kc ? K : k0 + kc;
#pragma GCC unroll 8
		for (int q = 0; q < 8; q++)
			acc[q] = _mm256_setzero_ps();
		if (w0 == KILN_PACK_NR && w1 == KILN_PACK_NR)
			for (int64_t k = k0; k < k1; k++) {
				const float *r0 = b0 + k * KILN_PACK_NR, *r1 = b1 + k * KILN_PACK_NR;
				__m256 xv = _mm256_set1_ps(x[k]);
#pragma GCC unroll 4
				for (int q = 0; q < 4; q++) {
					acc[q] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r0 + 8 * q), acc[q]);
					acc[4 + q] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r1 + 8 * q), acc[4 + q]);
				}
			}
		else
			for (int64_t k = k0; k < k1; k++) {
				const float *r0 = b0 + k * w0, *r1 = b1 + k * w1;
				__m256 xv = _mm256_set1_ps(x[k]);
#pragma GCC unroll 4
				for (int q = 0; q < 4; q++)
					acc[q] = _mm256_fmadd_ps(xv, _mm256_maskload_ps(r0 + 8 * q, m[q]), acc[q]);
				if (w1 > 0)
#pragma GCC unroll 4
					for (int q = 0; q < 4; q++)
						acc[4 + q] = _mm256_fmadd_ps(
							xv, _mm256_maskload_ps(r1 + 8 * q, m[4 + q]), acc[4 + q]);
			}
#pragma GCC unroll 8
		for (int q = 0; q < 8; q++)
			tot[q] = k0 == 0 ? acc[q] : _mm256_add_ps(acc[q], tot[q]);
	}
	for (int q = 0; q < 8; q++) {
		if (bias)
			tot[q] = _mm256_add_ps(tot[q], _mm256_maskload_ps(bias + 8 * q, m[q]));
		_mm256_maskstore_ps(y + 8 * q, m[q], tot[q]);
	}
}

void kiln_gemv_kc_avx2(int64_t N, int64_t K, int64_t kc, const float *x, const float *Bp,
                       const float *bias, float *y)
{
	for (int64_t n0 = 0; n0 < N; n0 += 2 * KILN_PACK_NR) {
		int64_t n1 = n0 + KILN_PACK_NR;
		int64_t w0 = kiln_pack_b32_width(N, n0), w1 = n1 < N ? kiln_pack_b32_width(N, n1) : 0;
		panel_pair(K, kc, x, Bp + n0 * K, Bp + n1 * K, w0, w1, bias ? bias + n0 : NULL, y + n0);
	}
}

void kiln_gemv_avx2(int64_t N, int64_t K, const float *x, const float *Bp, const float *bias,
                    float *y)
{
	kiln_gemv_kc_avx2(N, K, kiln_gemm_kc(K), x, Bp, bias, y);
}
