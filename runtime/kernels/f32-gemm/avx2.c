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
	if (t->cbeta != 0.0f)
		v = _mm256_fmadd_ps(cold, _mm256_set1_ps(t->cbeta), v);
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

/* GemmDot (gemm.h): M (<= 4) rows of A against 4 rows of Bt at a time, 8 k
 * per step; with M = 4 that is 16 accumulators' worth, so two halves of rows. */
INLINE float hsum8(__m256 v)
{
	__m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	r = _mm_add_ps(r, _mm_movehl_ps(r, r));
	r = _mm_add_ss(r, _mm_movehdup_ps(r));
	return _mm_cvtss_f32(r);
}

INLINE void dot_rows(const GemmDot *d, const int mr)
{
	int64_t K = d->K;
	for (int64_t n0 = 0; n0 < d->N; n0 += 4) {
		int nn = d->N - n0 < 4 ? (int)(d->N - n0) : 4;
		__m256 acc[2][4];
#pragma GCC unroll 2
		for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
			for (int j = 0; j < 4; j++)
				acc[i][j] = _mm256_setzero_ps();
		const float *b[4];
		for (int j = 0; j < 4; j++)
			b[j] = d->Bt + (n0 + (j < nn ? j : 0)) * d->ldbt;
		for (int64_t k = 0; k < K; k += 8) {
			__m256i m = lanes((int)(K - k < 8 ? K - k : 8));
			__m256 bv[4];
#pragma GCC unroll 4
			for (int j = 0; j < 4; j++)
				bv[j] = _mm256_maskload_ps(b[j] + k, m);
#pragma GCC unroll 2
			for (int i = 0; i < mr; i++) {
				__m256 av = _mm256_maskload_ps(d->A + i * d->lda + k, m);
#pragma GCC unroll 4
				for (int j = 0; j < 4; j++)
					acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
			}
		}
		for (int i = 0; i < mr; i++) {
			float *c = d->C + i * d->ldc + n0;
			for (int j = 0; j < nn; j++) {
				float v = hsum8(acc[i][j]);
				c[j] = d->beta != 0.0f ? d->alpha * v + d->beta * c[j] : d->alpha * v;
			}
		}
	}
}

void kiln_gemm_dot_avx2(const GemmDot *d)
{
	/* two rows of A at a time (8 accumulators) */
	for (int64_t m = 0; m < d->M; m += 2) {
		GemmDot h = *d;
		h.A = d->A + m * d->lda;
		h.C = d->C + m * d->ldc;
		h.M = d->M - m < 2 ? d->M - m : 2;
		if (h.M == 1)
			dot_rows(&h, 1);
		else
			dot_rows(&h, 2);
	}
}
