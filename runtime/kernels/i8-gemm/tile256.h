/*
 * i8-gemm/tile256.h - the micro-kernel and requantization of the blocked integer
 * products (core.h) with AVX2: tiles
 * of 3 rows by 32 columns, four ymm of int32 sums per row; each k pair is
 * one broadcast of a row's two int16 of A' and four vpmaddwd with the
 * panel (products and pair sums exact, i8gemm.h).
 * Included by avx2.c and by its VNNI twin vnni256.c.
 */
#ifndef KILN_I8_TILE256_H
#define KILN_I8_TILE256_H

#include <immintrin.h>
#include <string.h>

#include "i8gemm.h"

#define I8_MR 3

static inline __attribute__((always_inline)) void tile_n(const int mr, const int16_t *a,
                                                         int64_t lda, const int16_t *panel,
                                                         int64_t kp, int32_t *c, int acc)
{
	__m256i s[I8_MR][4];
#pragma GCC unroll 4
	for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
		for (int v = 0; v < 4; v++)
			s[r][v] = acc ? _mm256_loadu_si256((const __m256i *)(c + r * I8_NR + 8 * v))
			              : _mm256_setzero_si256();
	for (int64_t q = 0; q < kp; q++) {
		const int16_t *b = panel + q * 2 * I8_NR;
		__m256i b0 = _mm256_load_si256((const __m256i *)b);
		__m256i b1 = _mm256_load_si256((const __m256i *)(b + 16));
		__m256i b2 = _mm256_load_si256((const __m256i *)(b + 32));
		__m256i b3 = _mm256_load_si256((const __m256i *)(b + 48));
#pragma GCC unroll 4
		for (int r = 0; r < mr; r++) {
			int32_t pair;
			memcpy(&pair, a + r * lda + 2 * q, sizeof pair);
			__m256i v = _mm256_set1_epi32(pair);
			s[r][0] = _mm256_add_epi32(s[r][0], _mm256_madd_epi16(v, b0));
			s[r][1] = _mm256_add_epi32(s[r][1], _mm256_madd_epi16(v, b1));
			s[r][2] = _mm256_add_epi32(s[r][2], _mm256_madd_epi16(v, b2));
			s[r][3] = _mm256_add_epi32(s[r][3], _mm256_madd_epi16(v, b3));
		}
	}
#pragma GCC unroll 4
	for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
		for (int v = 0; v < 4; v++)
			_mm256_storeu_si256((__m256i *)(c + r * I8_NR + 8 * v), s[r][v]);
}

static void i8_tile(int mr, const int16_t *a, int64_t lda, const int16_t *panel, int64_t kp,
                    int32_t *c, int acc)
{
	switch (mr) {
	case 3: tile_n(3, a, lda, panel, kp, c, acc); break;
	case 2: tile_n(2, a, lda, panel, kp, c, acc); break;
	default: tile_n(1, a, lda, panel, kp, c, acc); break;
	}
}

/* Exact mode's requantization of 32 sums (I8Exact), 4 doubles at a time:
 * the same IEEE operations as store_exact in ref.c (sd: the sums of a
 * 16-bit operand's parts, exact doubles). vmaxpd returns its
 * second operand when the first is NaN, which is store_exact's
 * "!(v >= lo): lo"; rounding to nearest is rint in the default mode. */
static void i8_requant(const I8Exact *e, double sa, double sab, double bt, int percol,
                       const int32_t *sums, const double *sd, int32_t *r)
{
	const __m256d vsy = _mm256_set1_pd(e->sy), vzy = _mm256_set1_pd(e->zy);
	const __m256d vlo = _mm256_set1_pd(e->lo), vhi = _mm256_set1_pd(e->hi);
	for (int i = 0; i < I8_NR; i += 4) {
		__m256d s = sd ? _mm256_loadu_pd(sd + i) : _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *)(sums + i)));
		__m256d m = percol ? _mm256_mul_pd(_mm256_set1_pd(sa), _mm256_loadu_pd(e->sbv + i))
		                   : _mm256_set1_pd(sab);
		__m256d v = _mm256_mul_pd(s, m);
		if (e->has_bias)
			v = _mm256_add_pd(v, percol ? _mm256_loadu_pd(e->btv + i) : _mm256_set1_pd(bt));
		v = _mm256_round_pd(_mm256_div_pd(v, vsy), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		v = _mm256_min_pd(_mm256_max_pd(_mm256_add_pd(v, vzy), vlo), vhi);
		_mm_storeu_si128((__m128i *)(r + i), _mm256_cvtpd_epi32(v));
	}
}

#endif
