/*
 * i8-gemm/avx2.c - the blocked integer products (core.h) with AVX2: tiles
 * of 3 rows by 32 columns, four ymm of int32 sums per row; each k pair is
 * one broadcast of a row's two int16 of A' and four vpmaddwd with the
 * panel (products and pair sums exact, i8gemm.h).
 */
#include <immintrin.h>
#include <string.h>

#include "i8gemm.h"

#define I8_MR 3

static inline __attribute__((always_inline)) void tile_n(const int mr, const int16_t *a,
                                                         int64_t lda, const int16_t *panel,
                                                         int64_t kp, int32_t *c, int acc)
{
	__m256i s[I8_MR][4];
	for (int r = 0; r < mr; r++)
		for (int v = 0; v < 4; v++)
			s[r][v] = acc ? _mm256_loadu_si256((const __m256i *)(c + r * I8_NR + 8 * v))
			              : _mm256_setzero_si256();
	for (int64_t q = 0; q < kp; q++) {
		const int16_t *b = panel + q * 2 * I8_NR;
		__m256i b0 = _mm256_load_si256((const __m256i *)b);
		__m256i b1 = _mm256_load_si256((const __m256i *)(b + 16));
		__m256i b2 = _mm256_load_si256((const __m256i *)(b + 32));
		__m256i b3 = _mm256_load_si256((const __m256i *)(b + 48));
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
	for (int r = 0; r < mr; r++)
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

#define I8_GEMM_NAME kiln_i8b_gemm_avx2
#define I8_CONV_NAME kiln_i8b_conv_avx2
#include "core.h"
