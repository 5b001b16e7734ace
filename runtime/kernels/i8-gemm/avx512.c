/*
 * i8-gemm/avx512.c - the blocked integer products (core.h) with AVX-512BW:
 * tiles of 8 rows by 32 columns, two zmm of int32 sums per row; each k pair
 * is one broadcast of a row's two int16 of A' and two vpmaddwd with the
 * panel (products and pair sums exact, i8gemm.h).
 */
#include <immintrin.h>
#include <string.h>

#include "i8gemm.h"

#define I8_MR 8

static inline __attribute__((always_inline)) void tile_n(const int mr, const int16_t *a,
                                                         int64_t lda, const int16_t *panel,
                                                         int64_t kp, int32_t *c, int acc)
{
	__m512i s[I8_MR][2];
	for (int r = 0; r < mr; r++) {
		s[r][0] = acc ? _mm512_loadu_si512(c + r * I8_NR) : _mm512_setzero_si512();
		s[r][1] = acc ? _mm512_loadu_si512(c + r * I8_NR + 16) : _mm512_setzero_si512();
	}
	for (int64_t q = 0; q < kp; q++) {
		__m512i b0 = _mm512_load_si512(panel + q * 2 * I8_NR);
		__m512i b1 = _mm512_load_si512(panel + q * 2 * I8_NR + 32);
		for (int r = 0; r < mr; r++) {
			int32_t pair;
			memcpy(&pair, a + r * lda + 2 * q, sizeof pair);
			__m512i v = _mm512_set1_epi32(pair);
			s[r][0] = _mm512_add_epi32(s[r][0], _mm512_madd_epi16(v, b0));
			s[r][1] = _mm512_add_epi32(s[r][1], _mm512_madd_epi16(v, b1));
		}
	}
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

#define I8_GEMM_NAME kiln_i8b_gemm_avx512
#define I8_CONV_NAME kiln_i8b_conv_avx512
#include "core.h"
