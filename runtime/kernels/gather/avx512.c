/*
 * gather/avx512.c - a gather of 4-byte elements along a last axis of at most
 * 32: the source row sits in two zmm registers and every 16 outputs are one
 * two-table permute (vpermt2ps) by their indices. Elements are moved, never
 * computed (but for plus_zero's + 0.0f), so the bits are those of gather.c
 * (select.c).
 */
#include <immintrin.h>

#include "gather.h"

void kiln_gather32_row_avx512(const void *data, const int64_t *idx, void *out, int64_t outer,
                              int64_t axis_len, int64_t n, int plus_zero)
{
	const float *x = data;
	float *y = out;
	const __mmask16 lo_m = (__mmask16)(axis_len >= 16 ? 0xffffu : (1u << axis_len) - 1u);
	const __mmask16 hi_m = (__mmask16)(axis_len <= 16 ? 0u
	                                   : axis_len >= 32 ? 0xffffu : (1u << (axis_len - 16)) - 1u);
	const __m512i len = _mm512_set1_epi32((int)axis_len);
	const __m512 zero = _mm512_setzero_ps();
	for (int64_t i = 0; i < n; i += 16) {
		int64_t w = n - i < 16 ? n - i : 16;
		__mmask16 m = (__mmask16)(w == 16 ? 0xffffu : (1u << w) - 1u);
		/* 16 indices as int32, negative ones counted from the end */
		__m256i a = _mm512_cvtepi64_epi32(_mm512_maskz_loadu_epi64((__mmask8)(m & 0xff), idx + i));
		__m256i b = _mm512_cvtepi64_epi32(_mm512_maskz_loadu_epi64((__mmask8)(m >> 8), idx + i + 8));
		__m512i k = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
		k = _mm512_mask_add_epi32(k, _mm512_cmplt_epi32_mask(k, _mm512_setzero_si512()), k, len);
		for (int64_t o = 0; o < outer; o++) {
			const float *r = x + o * axis_len;
			__m512 lo = _mm512_maskz_loadu_ps(lo_m, r);
			__m512 hi = _mm512_maskz_loadu_ps(hi_m, r + 16);
			__m512 v = _mm512_permutex2var_ps(lo, k, hi);
			_mm512_mask_storeu_ps(y + o * n + i, m, plus_zero ? _mm512_add_ps(v, zero) : v);
		}
	}
}

void kiln_select_sum32_avx512(const float *P, const int64_t *src, float *y, int64_t batch,
                              int64_t co, int64_t k, int64_t m, int parts, int relu)
{
	enum { MAXP = 4, CHUNK = 256 };
	const __mmask16 lo_m = (__mmask16)(k >= 16 ? 0xffffu : (1u << k) - 1u);
	const __mmask16 hi_m = (__mmask16)(k <= 16 ? 0u : k >= 32 ? 0xffffu : (1u << (k - 16)) - 1u);
	const __m512 zero = _mm512_setzero_ps();
	_Alignas(64) int32_t ix[MAXP][CHUNK];
	/* columns in chunks whose indices (as int32) stay in L1 across the rows */
	for (int64_t c0 = 0; c0 < m; c0 += CHUNK) {
		int64_t c1 = m - c0 < CHUNK ? m : c0 + CHUNK;
		for (int t = 0; t < parts; t++)
			for (int64_t i = c0; i < c1; i++)
				ix[t][i - c0] = (int32_t)src[t * m + i];
		for (int64_t n = 0; n < batch; n++)
			for (int64_t o = 0; o < co; o++) {
				__m512 lo[MAXP], hi[MAXP];
				for (int t = 0; t < parts; t++) {
					const float *r = P + ((n * parts + t) * co + o) * k;
					lo[t] = _mm512_maskz_loadu_ps(lo_m, r);
					hi[t] = _mm512_maskz_loadu_ps(hi_m, r + 16);
				}
				float *yr = y + (n * co + o) * m;
				for (int64_t i = c0; i < c1; i += 16) {
					int64_t w = c1 - i < 16 ? c1 - i : 16;
					__mmask16 mk = (__mmask16)(w == 16 ? 0xffffu : (1u << w) - 1u);
					__m512 s = _mm512_permutex2var_ps(
						lo[0], _mm512_maskz_loadu_epi32(mk, &ix[0][i - c0]), hi[0]);
					for (int t = 1; t < parts; t++)
						s = _mm512_add_ps(s, _mm512_permutex2var_ps(
							lo[t], _mm512_maskz_loadu_epi32(mk, &ix[t][i - c0]), hi[t]));
					if (relu)  /* max(s, +0): +0 where s is not > 0 (NaN, -0) */
						s = _mm512_max_ps(s, zero);
					_mm512_mask_storeu_ps(yr + i, mk, s);
				}
			}
	}
}
