/*
 * i8-gemm/vnni512.c - avx512.c's blocked integer products with AVX512-VNNI
 * for two 8-bit operands (core.h's VNNI path; 16-bit operands take the
 * pairs of tile512.h): tiles of 8 rows by 32 columns, two zmm of int32 sums
 * per row; each quad of k is one broadcast of a row's four bytes of A' and
 * two vpdpbusd with the panel (exact, core.h). Used only when the CPU has
 * AVX512-VNNI (isa.h, kiln_isa_vnni).
 */
#include "tile512.h"

#define I8V_MR 8

static inline __attribute__((always_inline)) void vtile_n(const int mr, const int row_u8,
                                                          const uint8_t *a, int64_t lda,
                                                          const uint8_t *panel, int64_t kq,
                                                          int32_t *c, int acc)
{
	__m512i s[I8V_MR][2];
	/* unrolled, so that the sums stay in registers */
#pragma GCC unroll 8
	for (int r = 0; r < mr; r++) {
		s[r][0] = acc ? _mm512_loadu_si512(c + r * I8_NR) : _mm512_setzero_si512();
		s[r][1] = acc ? _mm512_loadu_si512(c + r * I8_NR + 16) : _mm512_setzero_si512();
	}
	for (int64_t q = 0; q < kq; q++) {
		__m512i b0 = _mm512_load_si512(panel + q * 4 * I8_NR);
		__m512i b1 = _mm512_load_si512(panel + q * 4 * I8_NR + 64);
#pragma GCC unroll 8
		for (int r = 0; r < mr; r++) {
			int32_t quad;
			memcpy(&quad, a + r * lda + 4 * q, sizeof quad);
			__m512i v = _mm512_set1_epi32(quad);
			if (row_u8) {
				s[r][0] = _mm512_dpbusd_epi32(s[r][0], v, b0);
				s[r][1] = _mm512_dpbusd_epi32(s[r][1], v, b1);
			} else {
				s[r][0] = _mm512_dpbusd_epi32(s[r][0], b0, v);
				s[r][1] = _mm512_dpbusd_epi32(s[r][1], b1, v);
			}
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < mr; r++) {
		_mm512_storeu_si512(c + r * I8_NR, s[r][0]);
		_mm512_storeu_si512(c + r * I8_NR + 16, s[r][1]);
	}
}

#define I8V_TILE_CASE(n)                                           \
	case n:                                                        \
		if (row_u8)                                                \
			vtile_n(n, 1, a, lda, panel, kq, c, acc);              \
		else                                                       \
			vtile_n(n, 0, a, lda, panel, kq, c, acc);              \
		break

static void i8v_tile(int mr, int row_u8, const uint8_t *a, int64_t lda, const uint8_t *panel,
                     int64_t kq, int32_t *c, int acc)
{
	switch (mr) {
	I8V_TILE_CASE(8);
	I8V_TILE_CASE(7);
	I8V_TILE_CASE(6);
	I8V_TILE_CASE(5);
	I8V_TILE_CASE(4);
	I8V_TILE_CASE(3);
	I8V_TILE_CASE(2);
	default:
		I8V_TILE_CASE(1);
	}
}

/* cb[j] += the panel's column sums (kq quads; its bytes signed when the
 * rows are unsigned): vpdpbusd with a row of ones. */
static void i8v_colsums(const uint8_t *panel, int64_t kq, int row_u8, int32_t *cb)
{
	const __m512i one = _mm512_set1_epi8(1);
	__m512i s0 = _mm512_loadu_si512(cb), s1 = _mm512_loadu_si512(cb + 16);
	for (int64_t q = 0; q < kq; q++) {
		__m512i b0 = _mm512_load_si512(panel + q * 4 * I8_NR);
		__m512i b1 = _mm512_load_si512(panel + q * 4 * I8_NR + 64);
		s0 = row_u8 ? _mm512_dpbusd_epi32(s0, one, b0) : _mm512_dpbusd_epi32(s0, b0, one);
		s1 = row_u8 ? _mm512_dpbusd_epi32(s1, one, b1) : _mm512_dpbusd_epi32(s1, b1, one);
	}
	_mm512_storeu_si512(cb, s0);
	_mm512_storeu_si512(cb + 16, s1);
}

/* n <= 32 bytes from src to dst (masked: nothing past n is touched). */
static inline void i8v_copy(uint8_t *dst, const uint8_t *src, int64_t n)
{
	__mmask32 k = (__mmask32)(n >= 32 ? ~0u : (1u << n) - 1u);
	_mm256_mask_storeu_epi8(dst, k, _mm256_maskz_loadu_epi8(k, src));
}

#define I8_VNNI
#define I8_GEMM_NAME kiln_i8v_gemm_avx512
#define I8_CONV_NAME kiln_i8v_conv_avx512
#include "core.h"
