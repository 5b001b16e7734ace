/*
 * f32-gemv/avx2.c - gemv.h's product with AVX2 + FMA: a 32-column panel is
 * four ymm per row of K; two panels at a time into eight accumulators, each
 * column one chain over k in each K block of kc rows (kiln_gemm_kc's, or a
 * narrow layer's: the GEMM tiles' order). A narrower last panel goes
 * through masked loads. A narrow layer (at most 64 columns, several K
 * blocks) runs its K blocks' chains side by side in registers, as the
 * AVX-512 variant does (narrow_panels), where its few columns' chains alone
 * would wait on the FMA latency.
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

/* Row k of GA K blocks side by side (block g's row at k + g kc): F (0 or 1)
 * full panels from b (rows 32 apart), then the last panel from bl (wl
 * columns, rows wl apart) as VL vectors, the last one read through mask ml:
 * block g's chains acc[g] (4 F + VL vectors). */
static inline __attribute__((always_inline)) void narrow_row(int64_t k, int64_t kc,
                                                             const float *x, const float *b,
                                                             const float *bl, int64_t wl,
                                                             __m256i ml, __m256 acc[8][8],
                                                             const int F, const int VL,
                                                             const int GA)
{
#pragma GCC unroll 8
	for (int g = 0; g < GA; g++) {
		int64_t kg = k + g * kc;
		__m256 xv = _mm256_broadcast_ss(x + kg);
		if (F) {
			const float *r = b + kg * KILN_PACK_NR;
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++)
				acc[g][q] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r + 8 * q), acc[g][q]);
		}
		const float *r = bl + kg * wl;
#pragma GCC unroll 4
		for (int q = 0; q + 1 < VL; q++)
			acc[g][4 * F + q] =
				_mm256_fmadd_ps(xv, _mm256_loadu_ps(r + 8 * q), acc[g][4 * F + q]);
		acc[g][4 * F + VL - 1] = _mm256_fmadd_ps(
			xv, _mm256_maskload_ps(r + 8 * (VL - 1), ml), acc[g][4 * F + VL - 1]);
	}
}

/* K blocks b0 .. b0 + G - 1 (kc rows each, the last block of K shorter)
 * side by side: each column one FMA chain per block from 0, the G blocks'
 * chains independent, then added to tot in block order (tot = acc + tot;
 * block 0 sets it): the GEMM tiles' order. */
static inline __attribute__((always_inline)) void narrow_blocks(int64_t K, int64_t kc, int64_t b0,
                                                                const float *x, const float *b,
                                                                const float *bl, int64_t wl,
                                                                __m256i ml, __m256 *tot,
                                                                const int F, const int VL,
                                                                const int G)
{
	const int V = 4 * F + VL;
	const int64_t k0 = b0 * kc, n = kiln_gemv_last_rows(K, kc, b0 + G - 1);
	__m256 acc[8][8];
#pragma GCC unroll 64
	for (int i = 0; i < G * V; i++)
		acc[i / V][i % V] = _mm256_setzero_ps();
	for (int64_t i = 0; i < kc; i++)
		if (i < n)
			narrow_row(k0 + i, kc, x, b, bl, wl, ml, acc, F, VL, G);
		else  /* the blocks before a shorter last one */
			narrow_row(k0 + i, kc, x, b, bl, wl, ml, acc, F, VL, G - 1);
#pragma GCC unroll 8
	for (int g = 0; g < G; g++)
#pragma GCC unroll 8
		for (int v = 0; v < V; v++)
			tot[v] = b0 + g == 0 ? acc[g][v] : _mm256_add_ps(acc[g][v], tot[v]);
}

/* A narrow layer's product, N = 32 F + wl <= 64 columns (F full panels
 * before a last one of wl, VL = ceil(wl / 8) vectors), in K blocks of kc
 * rows, G blocks at a time (about eight chains in flight: G VL + 4 F G),
 * then + bias: panel_pair's sums, the blocks' chains side by side. */
static inline __attribute__((always_inline)) void narrow_panels(int64_t K, int64_t kc,
                                                                const float *x,
                                                                const float *Bp, int64_t wl,
                                                                const float *bias, float *y,
                                                                const int F, const int VL,
                                                                const int G)
{
	const int V = 4 * F + VL;
	const int64_t nb = (K + kc - 1) / kc;
	const float *bl = Bp + F * KILN_PACK_NR * K;
	__m256i ml = lanes(wl - 8 * (VL - 1));
	__m256 tot[8];
#pragma GCC unroll 8
	for (int v = 0; v < V; v++)
		tot[v] = _mm256_setzero_ps();  /* (K >= 1: the first block sets them) */
	for (int64_t b0 = 0, g; b0 < nb; b0 += g) {
		g = nb - b0 < G ? nb - b0 : G;
		switch (g) {
		case 8: narrow_blocks(K, kc, b0, x, Bp, bl, wl, ml, tot, F, VL, G >= 8 ? 8 : 1); break;
		case 7: narrow_blocks(K, kc, b0, x, Bp, bl, wl, ml, tot, F, VL, G >= 7 ? 7 : 1); break;
		case 6: narrow_blocks(K, kc, b0, x, Bp, bl, wl, ml, tot, F, VL, G >= 6 ? 6 : 1); break;
		case 5: narrow_blocks(K, kc, b0, x, Bp, bl, wl, ml, tot, F, VL, G >= 5 ? 5 : 1); break;
		case 4: narrow_blocks(K, kc, b0, x, Bp, bl, wl, ml, tot, F, VL, G >= 4 ? 4 : 1); break;
		case 3: narrow_blocks(K, kc, b0, x, Bp, bl, wl, ml, tot, F, VL, G >= 3 ? 3 : 1); break;
		case 2: narrow_blocks(K, kc, b0, x, Bp, bl, wl, ml, tot, F, VL, G >= 2 ? 2 : 1); break;
		default: narrow_blocks(K, kc, b0, x, Bp, bl, wl, ml, tot, F, VL, 1); break;
		}
	}
#pragma GCC unroll 8
	for (int v = 0; v < V; v++) {
		__m256i m = v + 1 < V ? _mm256_set1_epi32(-1) : ml;
		if (bias)
			tot[v] = _mm256_add_ps(tot[v], _mm256_maskload_ps(bias + 8 * v, m));
		_mm256_maskstore_ps(y + 8 * v, m, tot[v]);
	}
}

/* A narrow layer in several K blocks (N <= 64, kc < K): the blocks side by
 * side, G of them for V vectors of columns (V 1: 8, 2 and 3: 4, 4 to 6: 2,
 * 7 and 8: 1). Returns 0 for any other product. */
static int narrow(int64_t N, int64_t K, int64_t kc, const float *x, const float *Bp,
                  const float *bias, float *y)
{
	if (kc >= K || N > 2 * KILN_PACK_NR)
		return 0;
	int64_t wl = N > KILN_PACK_NR ? N - KILN_PACK_NR : N;
	int f = N > KILN_PACK_NR, vl = (int)((wl + 7) / 8);
	switch (f * 4 + vl) {
	case 1: narrow_panels(K, kc, x, Bp, wl, bias, y, 0, 1, 8); break;
	case 2: narrow_panels(K, kc, x, Bp, wl, bias, y, 0, 2, 4); break;
	case 3: narrow_panels(K, kc, x, Bp, wl, bias, y, 0, 3, 4); break;
	case 4: narrow_panels(K, kc, x, Bp, wl, bias, y, 0, 4, 2); break;
	case 5: narrow_panels(K, kc, x, Bp, wl, bias, y, 1, 1, 2); break;
	case 6: narrow_panels(K, kc, x, Bp, wl, bias, y, 1, 2, 2); break;
	case 7: narrow_panels(K, kc, x, Bp, wl, bias, y, 1, 3, 1); break;
	default: narrow_panels(K, kc, x, Bp, wl, bias, y, 1, 4, 1); break;
	}
	return 1;
}

void kiln_gemv_kc_avx2(int64_t N, int64_t K, int64_t kc, const float *x, const float *Bp,
                       const float *bias, float *y)
{
	if (narrow(N, K, kc, x, Bp, bias, y))
		return;
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
