/*
 * i8-gemm/tile512.h - the micro-kernel and requantization of the blocked integer
 * products (core.h) with AVX-512BW:
 * tiles of 8 rows by 32 columns, two zmm of int32 sums per row; each k pair
 * is one broadcast of a row's two int16 of A' and two vpmaddwd with the
 * panel (products and pair sums exact, i8gemm.h).
 * Included by avx512.c and by its VNNI twin vnni512.c.
 */
#ifndef KILN_I8_TILE512_H
#define KILN_I8_TILE512_H

#include <immintrin.h>
#include <string.h>

#include "i8gemm.h"

#define I8_MR 8

static inline __attribute__((always_inline)) void tile_n(const int mr, const int16_t *a,
                                                         int64_t lda, const int16_t *panel,
                                                         int64_t kp, int32_t *c, int acc)
{
	__m512i s[I8_MR][2];
#pragma GCC unroll 8
	for (int r = 0; r < mr; r++) {
		s[r][0] = acc ? _mm512_loadu_si512(c + r * I8_NR) : _mm512_setzero_si512();
		s[r][1] = acc ? _mm512_loadu_si512(c + r * I8_NR + 16) : _mm512_setzero_si512();
	}
	for (int64_t q = 0; q < kp; q++) {
		__m512i b0 = _mm512_load_si512(panel + q * 2 * I8_NR);
		__m512i b1 = _mm512_load_si512(panel + q * 2 * I8_NR + 32);
#pragma GCC unroll 8
		for (int r = 0; r < mr; r++) {
			int32_t pair;
			memcpy(&pair, a + r * lda + 2 * q, sizeof pair);
			__m512i v = _mm512_set1_epi32(pair);
			s[r][0] = _mm512_add_epi32(s[r][0], _mm512_madd_epi16(v, b0));
			s[r][1] = _mm512_add_epi32(s[r][1], _mm512_madd_epi16(v, b1));
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < mr; r++) {
		_mm512_storeu_si512(c + r * I8_NR, s[r][0]);
		_mm512_storeu_si512(c + r * I8_NR + 16, s[r][1]);
	}
}

static void i8_tile(int mr, const int16_t *a, int64_t lda, const int16_t *panel, int64_t kp,
                    int32_t *c, int acc)
{
	switch (mr) {
	case 8: tile_n(8, a, lda, panel, kp, c, acc); break;
	case 7: tile_n(7, a, lda, panel, kp, c, acc); break;
	case 6: tile_n(6, a, lda, panel, kp, c, acc); break;
	case 5: tile_n(5, a, lda, panel, kp, c, acc); break;
	case 4: tile_n(4, a, lda, panel, kp, c, acc); break;
	case 3: tile_n(3, a, lda, panel, kp, c, acc); break;
	case 2: tile_n(2, a, lda, panel, kp, c, acc); break;
	default: tile_n(1, a, lda, panel, kp, c, acc); break;
	}
}

/* Exact mode's requantization of 32 sums (I8Exact), 8 doubles at a time:
 * the same IEEE operations as store_exact in ref.c (sd: the sums of a
 * 16-bit operand's parts, exact doubles). vmaxpd returns its
 * second operand when the first is NaN, which is store_exact's
 * "!(v >= lo): lo"; roundscale to nearest is rint in the default mode. */
static void i8_requant(const I8Exact *e, double sa, double sab, double bt, int percol,
                       const int32_t *sums, const double *sd, int32_t *r)
{
	const __m512d vsy = _mm512_set1_pd(e->sy), vzy = _mm512_set1_pd(e->zy);
	const __m512d vlo = _mm512_set1_pd(e->lo), vhi = _mm512_set1_pd(e->hi);
	for (int i = 0; i < I8_NR; i += 8) {
		__m512d s = sd ? _mm512_loadu_pd(sd + i) : _mm512_cvtepi32_pd(_mm256_loadu_si256((const __m256i *)(sums + i)));
		__m512d m = percol ? _mm512_mul_pd(_mm512_set1_pd(sa), _mm512_loadu_pd(e->sbv + i))
		                   : _mm512_set1_pd(sab);
		__m512d v = _mm512_mul_pd(s, m);
		if (e->has_bias)
			v = _mm512_add_pd(v, percol ? _mm512_loadu_pd(e->btv + i) : _mm512_set1_pd(bt));
		v = _mm512_roundscale_pd(_mm512_div_pd(v, vsy), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		v = _mm512_min_pd(_mm512_max_pd(_mm512_add_pd(v, vzy), vlo), vhi);
		_mm256_storeu_si256((__m256i *)(r + i), _mm512_cvtpd_epi32(v));
	}
}

#endif
