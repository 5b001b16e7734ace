/*
 * f32-winograd1d/avx512.c - the 1-D Winograd's transforms (transform.h's
 * kiln_wino1d_in and kiln_wino1d_out) in AVX-512 vectors of 16 tiles: the
 * same float operations in the same order as the portable variant's, one
 * tile per lane (lanes never mix; no FMA), so the same bits. The
 * permutations only move values: the four phases of 64 signal values into
 * d0..d5, and the four outputs of 16 tiles back into 64 consecutive ones.
 */
#include <immintrin.h>

#include "transform.h"

/* Phase r (0..3) of the 64 floats at s (s[4 j + r] in lane j). */
static inline __m512 phase(const float *s, int r)
{
	const __m512i idx = _mm512_add_epi32(
	    _mm512_set_epi32(28, 24, 20, 16, 12, 8, 4, 0, 28, 24, 20, 16, 12, 8, 4, 0),
	    _mm512_set1_epi32(r));
	__m512 lo = _mm512_permutex2var_ps(_mm512_loadu_ps(s), idx, _mm512_loadu_ps(s + 16));
	__m512 hi = _mm512_permutex2var_ps(_mm512_loadu_ps(s + 32), idx, _mm512_loadu_ps(s + 48));
	return _mm512_shuffle_f32x4(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
}

void kiln_wino1d_in_avx512(const float *row, int64_t T16, float *v, int64_t vs)
{
	const __m512 two = _mm512_set1_ps(2.0f), four = _mm512_set1_ps(4.0f);
	for (int64_t t0 = 0; t0 < T16; t0 += WINO_LANES) {
		const float *s = row + 4 * t0;
		__m512 d0 = phase(s, 0), d1 = phase(s, 1), d2 = phase(s, 2), d3 = phase(s, 3);
		__m512 d4 = phase(s + 4, 0), d5 = phase(s + 4, 1);
		__m512 s31 = _mm512_sub_ps(d3, d1), s42 = _mm512_sub_ps(d4, d2);
		__m512 r0 = _mm512_add_ps(
		    _mm512_sub_ps(_mm512_mul_ps(four, _mm512_sub_ps(d0, d2)), d2), d4);
		__m512 r1 = _mm512_sub_ps(_mm512_add_ps(d4, d3),
		                          _mm512_mul_ps(four, _mm512_add_ps(d1, d2)));
		__m512 r2 = _mm512_add_ps(_mm512_sub_ps(d4, d3),
		                          _mm512_mul_ps(four, _mm512_sub_ps(d1, d2)));
		__m512 r3 = _mm512_add_ps(s42, _mm512_mul_ps(two, s31));
		__m512 r4 = _mm512_sub_ps(s42, _mm512_mul_ps(two, s31));
		__m512 r5 = _mm512_add_ps(
		    _mm512_sub_ps(_mm512_mul_ps(four, _mm512_sub_ps(d1, d3)), d3), d5);
		float *o = v + t0;
		_mm512_storeu_ps(o, r0);
		_mm512_storeu_ps(o + vs, r1);
		_mm512_storeu_ps(o + 2 * vs, r2);
		_mm512_storeu_ps(o + 3 * vs, r3);
		_mm512_storeu_ps(o + 4 * vs, r4);
		_mm512_storeu_ps(o + 5 * vs, r5);
	}
}

void kiln_wino1d_out_avx512(const float *m, int64_t ms, int64_t T16, float b, const float *res,
                            int relu, float *y, int64_t n)
{
	const __m512 two = _mm512_set1_ps(2.0f), four = _mm512_set1_ps(4.0f),
	             eight = _mm512_set1_ps(8.0f), bv = _mm512_set1_ps(b),
	             zero = _mm512_setzero_ps();
	for (int64_t t0 = 0; t0 < T16 && 4 * t0 < n; t0 += WINO_LANES) {
		const float *x = m + t0;
		__m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + ms),
		       x2 = _mm512_loadu_ps(x + 2 * ms), x3 = _mm512_loadu_ps(x + 3 * ms),
		       x4 = _mm512_loadu_ps(x + 4 * ms), x5 = _mm512_loadu_ps(x + 5 * ms);
		__m512 a = _mm512_add_ps(x1, x2), s = _mm512_sub_ps(x1, x2);
		__m512 c = _mm512_add_ps(x3, x4), d = _mm512_sub_ps(x3, x4);
		__m512 r0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x0, a), c), bv);
		__m512 r1 = _mm512_add_ps(_mm512_add_ps(s, _mm512_mul_ps(two, d)), bv);
		__m512 r2 = _mm512_add_ps(_mm512_add_ps(a, _mm512_mul_ps(four, c)), bv);
		__m512 r3 = _mm512_add_ps(
		    _mm512_add_ps(_mm512_add_ps(s, _mm512_mul_ps(eight, d)), x5), bv);
		/* the 4 x 16 outputs to tile order: 128-bit lane i of u_k holds tile
		 * 4 i + k's four outputs, then a 4 x 4 transpose of 128-bit lanes */
		__m512 t01l = _mm512_unpacklo_ps(r0, r1), t01h = _mm512_unpackhi_ps(r0, r1);
		__m512 t23l = _mm512_unpacklo_ps(r2, r3), t23h = _mm512_unpackhi_ps(r2, r3);
		__m512 u0 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t01l), _mm512_castps_pd(t23l)));
		__m512 u1 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t01l), _mm512_castps_pd(t23l)));
		__m512 u2 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t01h), _mm512_castps_pd(t23h)));
		__m512 u3 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t01h), _mm512_castps_pd(t23h)));
		__m512 w01l = _mm512_shuffle_f32x4(u0, u1, _MM_SHUFFLE(1, 0, 1, 0));
		__m512 w23l = _mm512_shuffle_f32x4(u2, u3, _MM_SHUFFLE(1, 0, 1, 0));
		__m512 w01h = _mm512_shuffle_f32x4(u0, u1, _MM_SHUFFLE(3, 2, 3, 2));
		__m512 w23h = _mm512_shuffle_f32x4(u2, u3, _MM_SHUFFLE(3, 2, 3, 2));
		__m512 o[4] = {_mm512_shuffle_f32x4(w01l, w23l, _MM_SHUFFLE(2, 0, 2, 0)),
		               _mm512_shuffle_f32x4(w01l, w23l, _MM_SHUFFLE(3, 1, 3, 1)),
		               _mm512_shuffle_f32x4(w01h, w23h, _MM_SHUFFLE(2, 0, 2, 0)),
		               _mm512_shuffle_f32x4(w01h, w23h, _MM_SHUFFLE(3, 1, 3, 1))};
		for (int k = 0; k < 4; k++) {
			int64_t i = 4 * t0 + 16 * k;
			if (i >= n)
				break;
			__mmask16 mk = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
			__m512 val = o[k];
			if (res)
				val = _mm512_add_ps(val, _mm512_maskz_loadu_ps(mk, res + i));
			if (relu)
				val = _mm512_max_ps(val, zero);
			_mm512_mask_storeu_ps(y + i, mk, val);
		}
	}
}
