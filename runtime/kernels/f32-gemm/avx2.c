/*
 * f32-gemm/avx2.c - the AVX2 + FMA micro-kernel: the 32-column panel is done
 * as two halves of 16, each a tile of up to 6 rows held in 12 ymm
 * accumulators (two per row), A broadcast one element at a time. A half of
 * fewer than 16 columns loads and stores through masks. The row count is a
 * compile-time constant in each copy of the body (always_inline + a switch).
 * One row alone (row1) runs all 32 columns at once, one FMA chain per
 * column, as every row of every variant sums (issue 30; its partial sums
 * over k mod 2 gave a one-row product other bits). Compiled with -mavx2 -mfma -mf16c (meson.build).
 */
#include <immintrin.h>
#include <string.h>

#include "../f32-epilogue/epilogue.h"
#include "gemm.h"

#define INLINE static inline __attribute__((always_inline))

/* Lanes j < n of 8 set (n may be <= 0 or >= 8). */
INLINE __m256i lanes(int n)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

INLINE __m256 epi(__m256 v, const GemmTile *t, int i, int j0, __m256i m, __m256 cold)
{
	v = _mm256_mul_ps(v, _mm256_set1_ps(t->alpha));
	if (t->cbeta != 0.0f)  /* beta C rounded, then added, as kiln_gemm_tile_ref adds it */
		v = _mm256_add_ps(v, _mm256_mul_ps(cold, _mm256_set1_ps(t->cbeta)));
	if (!t->final)
		return v;
	if (t->col_bias)
		v = _mm256_add_ps(v, _mm256_maskload_ps(t->col_bias + j0, m));
	if (t->row_bias)
		v = _mm256_add_ps(v, _mm256_set1_ps(t->row_bias[i]));
	if (t->res)
		v = _mm256_add_ps(v, _mm256_maskload_ps(t->res + i * t->ldres + j0, m));
	switch (t->act) {
	case KILN_ACT_RELU:
		v = _mm256_and_ps(v, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ));
		break;
	case KILN_ACT_LEAKY_RELU: {
		__m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
		v = _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(t->act_alpha)), neg);
		break;
	}
	case KILN_ACT_CLIP: {
		__m256 lo = _mm256_set1_ps(t->act_alpha), hi = _mm256_set1_ps(t->act_beta);
		v = _mm256_blendv_ps(v, lo, _mm256_cmp_ps(v, lo, _CMP_LT_OQ));
		v = _mm256_blendv_ps(v, hi, _mm256_cmp_ps(v, hi, _CMP_GT_OQ));
		break;
	}
	default:
		break;
	}
	return v;
}

/* Columns [j0, j0 + 16) of the tile, w16 of them valid (1..16). */
INLINE void half_rows(const GemmTile *t, const int mr, int j0, int w16)
{
	__m256 acc0[6], acc1[6];
	#pragma GCC unroll 16
	for (int i = 0; i < mr; i++)
		acc0[i] = acc1[i] = _mm256_setzero_ps();
	__m256i m0 = lanes(w16), m1 = lanes(w16 - 8);
	const float *a = t->A, *b = t->B + j0;
	int64_t lda = t->lda, ldb = t->ldb;
	if (w16 == 16) {
		for (int64_t k = 0; k < t->K; k++, b += ldb) {
			__m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
			#pragma GCC unroll 16
			for (int i = 0; i < mr; i++) {
				__m256 av = _mm256_broadcast_ss(a + i * lda + k);
				acc0[i] = _mm256_fmadd_ps(av, b0, acc0[i]);
				acc1[i] = _mm256_fmadd_ps(av, b1, acc1[i]);
			}
		}
	} else {
		for (int64_t k = 0; k < t->K; k++, b += ldb) {
			__m256 b0 = _mm256_maskload_ps(b, m0), b1 = _mm256_maskload_ps(b + 8, m1);
			#pragma GCC unroll 16
			for (int i = 0; i < mr; i++) {
				__m256 av = _mm256_broadcast_ss(a + i * lda + k);
				acc0[i] = _mm256_fmadd_ps(av, b0, acc0[i]);
				acc1[i] = _mm256_fmadd_ps(av, b1, acc1[i]);
			}
		}
	}
	#pragma GCC unroll 16
	for (int i = 0; i < mr; i++) {
		float *c = t->C + i * t->ldc + j0;
		__m256 c0 = _mm256_setzero_ps(), c1 = _mm256_setzero_ps();
		if (t->cbeta != 0.0f) {
			c0 = _mm256_maskload_ps(c, m0);
			c1 = _mm256_maskload_ps(c + 8, m1);
		}
		_mm256_maskstore_ps(c, m0, epi(acc0[i], t, i, j0, m0, c0));
		_mm256_maskstore_ps(c + 8, m1, epi(acc1[i], t, i, j0 + 8, m1, c1));
	}
}

/* One row, all w columns at once: one FMA chain per column over k (the
 * order of every tile), the four chains of 8 columns side by side. */
INLINE void row1(const GemmTile *t)
{
	__m256 s[4];
	__m256i m[4];
	#pragma GCC unroll 16
	for (int q = 0; q < 4; q++) {
		s[q] = _mm256_setzero_ps();
		m[q] = lanes(t->w - 8 * q);
	}
	const float *a = t->A, *b = t->B;
	int64_t ldb = t->ldb, K = t->K;
	int nq = (t->w + 7) / 8;
	for (int64_t k = 0; k < K; k++, b += ldb) {
		__m256 av = _mm256_broadcast_ss(a + k);
		#pragma GCC unroll 16
		for (int q = 0; q < 4; q++)
			if (q < nq)
				s[q] = _mm256_fmadd_ps(av, _mm256_maskload_ps(b + 8 * q, m[q]), s[q]);
	}
	#pragma GCC unroll 16
	for (int q = 0; q < nq; q++) {
		float *c = t->C + 8 * q;
		__m256 cold = t->cbeta != 0.0f ? _mm256_maskload_ps(c, m[q]) : _mm256_setzero_ps();
		_mm256_maskstore_ps(c, m[q], epi(s[q], t, 0, 8 * q, m[q], cold));
	}
}

static void halves(const GemmTile *t, int mr, int j0, int w16)
{
	switch (mr) {
	case 1: half_rows(t, 1, j0, w16); break;
	case 2: half_rows(t, 2, j0, w16); break;
	case 3: half_rows(t, 3, j0, w16); break;
	case 4: half_rows(t, 4, j0, w16); break;
	case 5: half_rows(t, 5, j0, w16); break;
	default: half_rows(t, 6, j0, w16); break;
	}
}

void kiln_gemm_tile_avx2(const GemmTile *t)
{
	if (t->mr == 1) {
		row1(t);
		return;
	}
	halves(t, t->mr, 0, t->w < 16 ? t->w : 16);
	if (t->w > 16)
		halves(t, t->mr, 16, t->w - 16);
}

/* GemmDot (gemm.h) in the GEMM core's order, as avx512.c's: each C[m, n] one
 * FMA chain over the k of each K block (d->kc, else GEMM_PACK_KC) from 0, in k order, the
 * blocks combined as the core's tiles combine them (the same bits as every
 * variant's core on a transposed B packed on the fly). Four k of 8 rows of
 * Bt (a 128-bit load each, two rows to a register) transposed within
 * 128-bit lanes, so that lane j of the vector for k holds Bt[n0 + j][k] and
 * each k is one FMA per row of A; G groups of 8 rows side by side hide the
 * FMA latency. Each row of Bt is read once for all rows of A. */

/* the first n of four floats at p (n 4: a plain load, which folds into
 * the insert) */
INLINE __m128 load4(const float *p, int n)
{
	if (n == 4)
		return _mm_loadu_ps(p);
	return _mm_maskload_ps(p, _mm_cmpgt_epi32(_mm_set1_epi32(n), _mm_setr_epi32(0, 1, 2, 3)));
}

/* o[e] lane 4q + c = b[(4q + c) ld + k + e] for e < n <= 4 (q < 2, c < 4;
 * n < 4 on a block's last step; a row past last reads row last) */
INLINE void dot_load8(const float *b, int64_t ld, int last, int64_t k, int n, __m256 o[4])
{
	__m256 r[4];
#pragma GCC unroll 4
	for (int c = 0; c < 4; c++) {
		const float *p = b + (c <= last ? c : last) * ld + k;
		const float *p4 = b + (4 + c <= last ? 4 + c : last) * ld + k;
		r[c] = _mm256_insertf128_ps(_mm256_castps128_ps256(load4(p, n)), load4(p4, n), 1);
	}
	__m256d t0 = _mm256_castps_pd(_mm256_unpacklo_ps(r[0], r[1]));
	__m256d t1 = _mm256_castps_pd(_mm256_unpackhi_ps(r[0], r[1]));
	__m256d t2 = _mm256_castps_pd(_mm256_unpacklo_ps(r[2], r[3]));
	__m256d t3 = _mm256_castps_pd(_mm256_unpackhi_ps(r[2], r[3]));
	o[0] = _mm256_castpd_ps(_mm256_unpacklo_pd(t0, t2));
	o[1] = _mm256_castpd_ps(_mm256_unpackhi_pd(t0, t2));
	o[2] = _mm256_castpd_ps(_mm256_unpacklo_pd(t1, t3));
	o[3] = _mm256_castpd_ps(_mm256_unpackhi_pd(t1, t3));
}

/* acc[4 g + i] = row i of A (a) times the G groups of 8 rows of Bt (b, 8 ld
 * apart; last as dot_load8, 7 unless G is 1) over k < kb, from 0: one chain
 * per lane */
INLINE void dot_block(const float *a, int64_t lda, const int mr, const int G, const float *b,
                      int64_t ld, int last, int64_t kb, __m256 *acc)
{
#pragma GCC unroll 16
	for (int q = 0; q < 4 * G; q++)
		acc[q] = _mm256_setzero_ps();
	int64_t k = 0;
	for (; k + 4 <= kb; k += 4)
#pragma GCC unroll 4
		for (int g = 0; g < G; g++) {
			__m256 o[4];
			dot_load8(b + 8 * g * ld, ld, last, k, 4, o);
#pragma GCC unroll 4
			for (int e = 0; e < 4; e++)
#pragma GCC unroll 4
				for (int i = 0; i < mr; i++)
					acc[4 * g + i] = _mm256_fmadd_ps(_mm256_set1_ps(a[i * lda + k + e]), o[e],
					                                 acc[4 * g + i]);
		}
	if (k < kb) {
		int n = (int)(kb - k);
		for (int g = 0; g < G; g++) {
			__m256 o[4];
			dot_load8(b + 8 * g * ld, ld, last, k, n, o);
			for (int e = 0; e < n; e++)
#pragma GCC unroll 4
				for (int i = 0; i < mr; i++)
					acc[4 * g + i] = _mm256_fmadd_ps(_mm256_set1_ps(a[i * lda + k + e]), o[e],
					                                 acc[4 * g + i]);
		}
	}
}

/* The K block at k0 of C's columns [n0, n0 + w) (w <= 8 G), from the G
 * groups of rows of Bt at b (ld apart, at column k0 already): C = alpha acc,
 * + beta C on the first block (beta C rounded, then added, as
 * kiln_gemm_tile_ref adds it), + C on the others */
INLINE void dot_cols(const GemmDot *d, const int mr, const int G, const float *b, int64_t ld,
                     int64_t k0, int64_t kb, int64_t n0, int64_t w)
{
	__m256 acc[16];
	dot_block(d->A + k0, d->lda, mr, G, b, ld, w < 8 * G ? (int)w - 1 : 7, kb, acc);
	__m256 alpha = _mm256_set1_ps(d->alpha), beta = _mm256_set1_ps(d->beta);
#pragma GCC unroll 4
	for (int g = 0; g < G; g++) {
		__m256i m = lanes((int)(w - 8 * g < 0 ? 0 : w - 8 * g > 8 ? 8 : w - 8 * g));
#pragma GCC unroll 4
		for (int i = 0; i < mr; i++) {
			float *c = d->C + i * d->ldc + n0 + 8 * g;
			__m256 v = _mm256_mul_ps(alpha, acc[4 * g + i]);
			if (k0 > 0)
				v = _mm256_add_ps(v, _mm256_maskload_ps(c, m));
			else if (d->beta != 0.0f)
				v = _mm256_add_ps(v, _mm256_mul_ps(beta, _mm256_maskload_ps(c, m)));
			_mm256_maskstore_ps(c, m, v);
		}
	}
}

/* Columns [n0, n0 + w) of C, w <= 16, each K block of their rows of a
 * float16 Bt widened first into a stack block (kb apart, rows past w
 * zero) */
INLINE void dot_staged(const GemmDot *d, const int mr, int64_t n0, int64_t w)
{
	float buf[16 * GEMM_PACK_KC];
	const int G = 2;
	const int64_t kc = d->kc > 0 ? d->kc : GEMM_PACK_KC;
	for (int64_t k0 = 0; k0 < d->K; k0 += kc) {
		int64_t kb = d->K - k0 < kc ? d->K - k0 : kc;
		for (int64_t j = 0; j < 8 * G; j++) {
			float *row = buf + j * kb;
			if (j >= w)
				memset(row, 0, (size_t)kb * sizeof *row);
			else
				kiln_f16_widen(d->Bth + (n0 + j) * d->ldbt + k0, 1, row, kb);
		}
		dot_cols(d, mr, G, buf, kb, k0, kb, n0, w);
	}
}

/* Columns [n0, n0 + w) of a float Bt, w <= 8 G, its K blocks in order */
INLINE void dot_inplace(const GemmDot *d, const int mr, const int G, int64_t n0, int64_t w)
{
	const int64_t kc = d->kc > 0 ? d->kc : GEMM_PACK_KC;
	for (int64_t k0 = 0; k0 < d->K; k0 += kc)
		dot_cols(d, mr, G, d->Bt + n0 * d->ldbt + k0, d->ldbt, k0,
		         d->K - k0 < kc ? d->K - k0 : kc, n0, w);
}

/* G groups of 8 columns at a time, then the last few (their loads clamped
 * to Bt's last row); a float16 Bt 16 columns at a time through the stack */
INLINE void dot_rows(const GemmDot *d, const int mr, const int G)
{
	int64_t n = 0;
	if (d->Bth) {
		for (; n < d->N; n += 16)
			dot_staged(d, mr, n, d->N - n < 16 ? d->N - n : 16);
		return;
	}
	for (; n + 8 * G <= d->N; n += 8 * G)
		dot_inplace(d, mr, G, n, 8 * G);
	for (; n < d->N; n += 8)
		dot_inplace(d, mr, 1, n, d->N - n < 8 ? d->N - n : 8);
}

void kiln_gemm_dot_avx2(const GemmDot *d)
{
	switch (d->M) {
	case 1: dot_rows(d, 1, 4); break;
	case 2: dot_rows(d, 2, 2); break;
	case 3: dot_rows(d, 3, 1); break;
	default: dot_rows(d, 4, 1); break;
	}
}
