/*
 * i8-gemm/vnni256.c - avx2.c's blocked integer products with AVX-VNNI for
 * two 8-bit operands (core.h's VNNI path; 16-bit operands take the pairs
 * of tile256.h): tiles of 3 rows by 32 columns, four ymm of int32 sums per
 * row; each quad of k is one broadcast of a row's four bytes of A' and four
 * vpdpbusd with the panel (exact, core.h). Used only when the CPU has
 * AVX-VNNI (isa.h, kiln_isa_vnni).
 */
#include "tile256.h"

#define I8V_MR 3

static inline __attribute__((always_inline)) void vtile_n(const int mr, const int row_u8,
                                                          const uint8_t *a, int64_t lda,
                                                          const uint8_t *panel, int64_t kq,
                                                          int32_t *c, int acc)
{
	__m256i s[I8V_MR][4];
	/* unrolled, so that the sums stay in registers */
#pragma GCC unroll 4
	for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
		for (int v = 0; v < 4; v++)
			s[r][v] = acc ? _mm256_loadu_si256((const __m256i *)(c + r * I8_NR + 8 * v))
			              : _mm256_setzero_si256();
	for (int64_t q = 0; q < kq; q++) {
		const uint8_t *b = panel + q * 4 * I8_NR;
		__m256i bv[4];
#pragma GCC unroll 4
		for (int v = 0; v < 4; v++)
			bv[v] = _mm256_load_si256((const __m256i *)(b + 32 * v));
#pragma GCC unroll 4
		for (int r = 0; r < mr; r++) {
			int32_t quad;
			memcpy(&quad, a + r * lda + 4 * q, sizeof quad);
			__m256i x = _mm256_set1_epi32(quad);
#pragma GCC unroll 4
			for (int v = 0; v < 4; v++)
				s[r][v] = row_u8 ? _mm256_dpbusd_avx_epi32(s[r][v], x, bv[v])
				                 : _mm256_dpbusd_avx_epi32(s[r][v], bv[v], x);
		}
	}
#pragma GCC unroll 4
	for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
		for (int v = 0; v < 4; v++)
			_mm256_storeu_si256((__m256i *)(c + r * I8_NR + 8 * v), s[r][v]);
}

static void i8v_tile(int mr, int row_u8, const uint8_t *a, int64_t lda, const uint8_t *panel,
                     int64_t kq, int32_t *c, int acc)
{
	if (mr == 3)
		row_u8 ? vtile_n(3, 1, a, lda, panel, kq, c, acc) : vtile_n(3, 0, a, lda, panel, kq, c, acc);
	else if (mr == 2)
		row_u8 ? vtile_n(2, 1, a, lda, panel, kq, c, acc) : vtile_n(2, 0, a, lda, panel, kq, c, acc);
	else
		row_u8 ? vtile_n(1, 1, a, lda, panel, kq, c, acc) : vtile_n(1, 0, a, lda, panel, kq, c, acc);
}

/* cb[j] += the panel's column sums (kq quads; its bytes signed when the
 * rows are unsigned): vpdpbusd with a row of ones. */
static void i8v_colsums(const uint8_t *panel, int64_t kq, int row_u8, int32_t *cb)
{
	const __m256i one = _mm256_set1_epi8(1);
	__m256i s[4];
	for (int v = 0; v < 4; v++)
		s[v] = _mm256_loadu_si256((const __m256i *)(cb + 8 * v));
	for (int64_t q = 0; q < kq; q++)
		for (int v = 0; v < 4; v++) {
			__m256i b = _mm256_load_si256((const __m256i *)(panel + q * 4 * I8_NR + 32 * v));
			s[v] = row_u8 ? _mm256_dpbusd_avx_epi32(s[v], one, b) : _mm256_dpbusd_avx_epi32(s[v], b, one);
		}
	for (int v = 0; v < 4; v++)
		_mm256_storeu_si256((__m256i *)(cb + 8 * v), s[v]);
}

/* n <= 32 bytes from src to dst. */
static inline void i8v_copy(uint8_t *dst, const uint8_t *src, int64_t n)
{
	memcpy(dst, src, (size_t)n);
}

#define I8_VNNI
#define I8_GEMM_NAME kiln_i8v_gemm_avx2
#define I8_CONV_NAME kiln_i8v_conv_avx2
#include "core.h"
