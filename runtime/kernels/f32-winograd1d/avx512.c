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

/* Phases r and r + 1 (r 0 or 2) of the 64 floats q0..q3 (q[4 j + r] in
 * lane j of *lo, q[4 j + r + 1] of *hi): a permutation of each half of the
 * 64 into both phases of its 8 tiles, then the 256-bit halves put together. */
static inline void phases(__m512 q0, __m512 q1, __m512 q2, __m512 q3, int r, __m512 *lo,
                          __m512 *hi)
{
	const __m512i idx = _mm512_add_epi32(
	    _mm512_set_epi32(29, 25, 21, 17, 13, 9, 5, 1, 28, 24, 20, 16, 12, 8, 4, 0),
	    _mm512_set1_epi32(r));
	__m512 a = _mm512_permutex2var_ps(q0, idx, q1);
	__m512 b = _mm512_permutex2var_ps(q2, idx, q3);
	*lo = _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0));
	*hi = _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2));
}

/* B^T d of 16 tiles from their 66 signal values (q0..q3 the first 64, then
 * s64, s65) to o[e * vs + j]. */
static inline void in_block(__m512 q0, __m512 q1, __m512 q2, __m512 q3, float s64, float s65,
                            float *o, int64_t vs)
{
	const __m512 two = _mm512_set1_ps(2.0f), four = _mm512_set1_ps(4.0f);
	__m512 d0, d1, d2, d3;
	phases(q0, q1, q2, q3, 0, &d0, &d1);
	phases(q0, q1, q2, q3, 2, &d2, &d3);
	/* d4 and d5 are d0 and d1 one tile on: shifted down a lane, with
	 * s64 and s65 into the last (one shuffle each, not three) */
	__m512 d4 = _mm512_castsi512_ps(_mm512_alignr_epi32(
	    _mm512_castps_si512(_mm512_set1_ps(s64)), _mm512_castps_si512(d0), 1));
	__m512 d5 = _mm512_castsi512_ps(_mm512_alignr_epi32(
	    _mm512_castps_si512(_mm512_set1_ps(s65)), _mm512_castps_si512(d1), 1));
	__m512 s31 = _mm512_sub_ps(d3, d1), s42 = _mm512_sub_ps(d4, d2);
	__m512 r0 = _mm512_add_ps(_mm512_sub_ps(_mm512_mul_ps(four, _mm512_sub_ps(d0, d2)), d2), d4);
	__m512 r1 = _mm512_sub_ps(_mm512_add_ps(d4, d3), _mm512_mul_ps(four, _mm512_add_ps(d1, d2)));
	__m512 r2 = _mm512_add_ps(_mm512_sub_ps(d4, d3), _mm512_mul_ps(four, _mm512_sub_ps(d1, d2)));
	__m512 r3 = _mm512_add_ps(s42, _mm512_mul_ps(two, s31));
	__m512 r4 = _mm512_sub_ps(s42, _mm512_mul_ps(two, s31));
	__m512 r5 = _mm512_add_ps(_mm512_sub_ps(_mm512_mul_ps(four, _mm512_sub_ps(d1, d3)), d3), d5);
	_mm512_storeu_ps(o, r0);
	_mm512_storeu_ps(o + vs, r1);
	_mm512_storeu_ps(o + 2 * vs, r2);
	_mm512_storeu_ps(o + 3 * vs, r3);
	_mm512_storeu_ps(o + 4 * vs, r4);
	_mm512_storeu_ps(o + 5 * vs, r5);
}

void kiln_wino1d_in_avx512(const float *row, int64_t T16, float *v, int64_t vs)
{
	for (int64_t t0 = 0; t0 < T16; t0 += WINO_LANES) {
		const float *s = row + 4 * t0;
		in_block(_mm512_loadu_ps(s), _mm512_loadu_ps(s + 16), _mm512_loadu_ps(s + 32),
		         _mm512_loadu_ps(s + 48), s[64], s[65], v + t0, vs);
	}
}

/* 16 floats of x from i (0 outside 0 .. L - 1) */
static inline __m512 load_padded(const float *x, int64_t L, int64_t i)
{
	int64_t lo = i < 0 ? -i : 0, hi = L - i < 16 ? L - i : 16;
	if (lo == 0 && hi == 16)
		return _mm512_loadu_ps(x + i);
	if (hi <= lo)
		return _mm512_setzero_ps();
	__mmask16 mk = (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
	/* the lanes outside x are masked off (never read); the address is
	 * formed as an integer so that no pointer leaves x */
	return _mm512_maskz_loadu_ps(mk, (const void *)((uintptr_t)x + (uintptr_t)(i * 4)));
}

void kiln_wino1d_in_x_avx512(const float *x, int64_t L, int64_t pad, int64_t T16, float *v,
                             int64_t vs)
{
	for (int64_t t0 = 0; t0 < T16; t0 += WINO_LANES) {
		int64_t i = 4 * t0 - pad;
		float s64 = i + 64 >= 0 && i + 64 < L ? x[i + 64] : 0.0f;
		float s65 = i + 65 >= 0 && i + 65 < L ? x[i + 65] : 0.0f;
		in_block(load_padded(x, L, i), load_padded(x, L, i + 16), load_padded(x, L, i + 32),
		         load_padded(x, L, i + 48), s64, s65, v + t0, vs);
	}
}

/* A^T m + b for 16 lanes (tiles or output channels): r[0..3], the portable
 * variant's operations in its order. */
static inline void out_lanes(__m512 x0, __m512 x1, __m512 x2, __m512 x3, __m512 x4, __m512 x5,
                             __m512 bv, __m512 *r)
{
	const __m512 two = _mm512_set1_ps(2.0f), four = _mm512_set1_ps(4.0f),
	             eight = _mm512_set1_ps(8.0f);
	__m512 a = _mm512_add_ps(x1, x2), s = _mm512_sub_ps(x1, x2);
	__m512 c = _mm512_add_ps(x3, x4), d = _mm512_sub_ps(x3, x4);
	r[0] = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x0, a), c), bv);
	r[1] = _mm512_add_ps(_mm512_add_ps(s, _mm512_mul_ps(two, d)), bv);
	r[2] = _mm512_add_ps(_mm512_add_ps(a, _mm512_mul_ps(four, c)), bv);
	r[3] = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s, _mm512_mul_ps(eight, d)), x5), bv);
}

void kiln_wino1d_out_avx512(const float *m, int64_t ms, int64_t T16, float b, const float *res,
                            int relu, float *y, int64_t n)
{
	const __m512 bv = _mm512_set1_ps(b), zero = _mm512_setzero_ps();
	for (int64_t t0 = 0; t0 < T16 && 4 * t0 < n; t0 += WINO_LANES) {
		const float *x = m + t0;
		__m512 q[4];
		out_lanes(_mm512_loadu_ps(x), _mm512_loadu_ps(x + ms), _mm512_loadu_ps(x + 2 * ms),
		          _mm512_loadu_ps(x + 3 * ms), _mm512_loadu_ps(x + 4 * ms),
		          _mm512_loadu_ps(x + 5 * ms), bv, q);
		__m512 r0 = q[0], r1 = q[1], r2 = q[2], r3 = q[3];
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

/* ---- the products with channels in lanes -------------------------------- */

/* P[t * M + m] = sum over c of U[m][c] V[c][t] for t < ncols, m < M (M a
 * multiple of 32): NV vectors of 16 output channels from m0 by NT tiles from
 * t0 in NV * NT accumulators; per c, NV loads of U's column c (the conv32
 * layout of direct.h: blocks of 32 channels, 32 floats a column) and NT
 * broadcasts of V's row c. Each sum is one FMA chain over c from 0, then
 * + 0.0f, as the conv tile's (kiln_conv_tile_ref: the same bits). */
static inline __attribute__((always_inline)) void products_block(
    const float *U, const float *V, int64_t C, int64_t M, int64_t ld, int64_t m0, int64_t t0,
    int nt, float *P, const int NV, const int NT)
{
	__m512 acc[12][4];   /* fixed bounds: a VLA would not live in registers */
	#pragma GCC unroll 12
	for (int j = 0; j < NT; j++)
		#pragma GCC unroll 4
		for (int v = 0; v < NV; v++)
			acc[j][v] = _mm512_setzero_ps();
	const float *u = U + m0 * C, *x = V + t0;
	for (int64_t c = 0; c < C; c++, x += ld, u += 32) {
		__m512 w[4];
		#pragma GCC unroll 4
		for (int v = 0; v < NV; v++)
			w[v] = _mm512_loadu_ps(u + (v / 2) * 32 * C + (v % 2) * 16);
		#pragma GCC unroll 12
		for (int j = 0; j < NT; j++) {
			__m512 b = _mm512_set1_ps(x[j]);
			#pragma GCC unroll 4
			for (int v = 0; v < NV; v++)
				acc[j][v] = _mm512_fmadd_ps(w[v], b, acc[j][v]);
		}
	}
	const __m512 zero = _mm512_setzero_ps();
	float *p = P + t0 * M + m0;
	#pragma GCC unroll 12
	for (int j = 0; j < NT; j++)
		if (j < nt)
			#pragma GCC unroll 4
			for (int v = 0; v < NV; v++)
				_mm512_storeu_ps(p + j * M + 16 * v, _mm512_add_ps(acc[j][v], zero));
}

/* One block of nt tiles (1 <= nt <= 12) with nt a constant of the code, so
 * that no accumulator is computed for a tile past the last. */
#define PRODUCTS_CASE(NV, NT) \
	case NT: \
		products_block(U, V, C, M, ld, m0, t0, NT, P, NV, NT); \
		break;
static void products_nt(const float *U, const float *V, int64_t C, int64_t M, int64_t ld,
                        int64_t m0, int64_t t0, int nt, float *P, int nv)
{
	if (nv == 4)
		switch (nt) {
			PRODUCTS_CASE(4, 1) PRODUCTS_CASE(4, 2) PRODUCTS_CASE(4, 3)
			PRODUCTS_CASE(4, 4) PRODUCTS_CASE(4, 5) PRODUCTS_CASE(4, 6)
		}
	else
		switch (nt) {
			PRODUCTS_CASE(2, 1) PRODUCTS_CASE(2, 2) PRODUCTS_CASE(2, 3)
			PRODUCTS_CASE(2, 4) PRODUCTS_CASE(2, 5) PRODUCTS_CASE(2, 6)
			PRODUCTS_CASE(2, 7) PRODUCTS_CASE(2, 8) PRODUCTS_CASE(2, 9)
			PRODUCTS_CASE(2, 10) PRODUCTS_CASE(2, 11) PRODUCTS_CASE(2, 12)
		}
}
#undef PRODUCTS_CASE

/* The columns in blocks of at most ntmax tiles, spread evenly (25 tiles by
 * 12: 9, 8, 8), so that no block is a short one left over: which block a
 * tile lands in does not change its sums. */
static void products_cols(const float *U, const float *V, int64_t C, int64_t M, int64_t ld,
                          int64_t m0, int64_t ncols, float *P, int nv, int ntmax)
{
	int64_t nb = (ncols + ntmax - 1) / ntmax;
	for (int64_t b = 0, t0 = 0; b < nb; b++) {
		int nt = (int)((ncols - t0 + (nb - b) - 1) / (nb - b));
		products_nt(U, V, C, M, ld, m0, t0, nt, P, nv);
		t0 += nt;
	}
}

void kiln_wino1d_products_avx512(const float *U, const float *V, int64_t C, int64_t M,
                                 int64_t ld, int64_t ncols, float *P)
{
	int64_t m0 = 0;
	for (; m0 + 64 <= M; m0 += 64)
		products_cols(U, V, C, M, ld, m0, ncols, P, 4, 6);
	if (m0 < M)
		products_cols(U, V, C, M, ld, m0, ncols, P, 2, 12);
}

/* 16 x 16 transpose: z[i] lane j = r[j] lane i. */
static inline void transpose16(__m512 r[16])
{
	__m512 a[16], b[16];
	for (int i = 0; i < 16; i += 2) {
		a[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
		a[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
	}
	for (int i = 0; i < 16; i += 4) {
		b[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a[i]), _mm512_castps_pd(a[i + 2])));
		b[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a[i]), _mm512_castps_pd(a[i + 2])));
		b[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a[i + 1]), _mm512_castps_pd(a[i + 3])));
		b[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a[i + 1]), _mm512_castps_pd(a[i + 3])));
	}
	/* b[4 q + k], 128-bit lane l: rows 4 l .. 4 l + 3 of group q's column k */
	for (int k = 0; k < 4; k++) {
		__m512 lo01 = _mm512_shuffle_f32x4(b[k], b[4 + k], _MM_SHUFFLE(1, 0, 1, 0));
		__m512 lo23 = _mm512_shuffle_f32x4(b[8 + k], b[12 + k], _MM_SHUFFLE(1, 0, 1, 0));
		__m512 hi01 = _mm512_shuffle_f32x4(b[k], b[4 + k], _MM_SHUFFLE(3, 2, 3, 2));
		__m512 hi23 = _mm512_shuffle_f32x4(b[8 + k], b[12 + k], _MM_SHUFFLE(3, 2, 3, 2));
		r[k] = _mm512_shuffle_f32x4(lo01, lo23, _MM_SHUFFLE(2, 0, 2, 0));
		r[4 + k] = _mm512_shuffle_f32x4(lo01, lo23, _MM_SHUFFLE(3, 1, 3, 1));
		r[8 + k] = _mm512_shuffle_f32x4(hi01, hi23, _MM_SHUFFLE(2, 0, 2, 0));
		r[12 + k] = _mm512_shuffle_f32x4(hi01, hi23, _MM_SHUFFLE(3, 1, 3, 1));
	}
}

/* A^T m + bias of one image's T tiles from products laid out [t][m]
 * (P[e * es + t * M + m]), + res, ReLU, to y[m * n + 4 t + j] for 4 t + j <
 * n: four tiles by 16 channels at a time, the same operations as
 * kiln_wino1d_out's, then transposed so that each channel's 16 outputs are
 * one store. */
void kiln_wino1d_out_tm_avx512(const float *P, int64_t es, int64_t T, int64_t M,
                               const float *bias, const float *res, int relu, float *y,
                               int64_t n, float *tmp)
{
	const __m512 zero = _mm512_setzero_ps();
	(void)tmp;   /* no longer used: the rows go straight to y */
	for (int64_t m0 = 0; m0 < M; m0 += 16) {
		int live = M - m0 < 16 ? (int)(M - m0) : 16;
		__mmask16 mk = (__mmask16)((1u << live) - 1);
		__m512 bv = bias ? _mm512_maskz_loadu_ps(mk, bias + m0) : zero;
		for (int64_t t0 = 0; t0 < T; t0 += 4) {
			__m512 r[16];
			for (int k = 0; k < 4; k++) {
				const float *x = P + (t0 + k) * M + m0;
				out_lanes(_mm512_maskz_loadu_ps(mk, x), _mm512_maskz_loadu_ps(mk, x + es),
				          _mm512_maskz_loadu_ps(mk, x + 2 * es),
				          _mm512_maskz_loadu_ps(mk, x + 3 * es),
				          _mm512_maskz_loadu_ps(mk, x + 4 * es),
				          _mm512_maskz_loadu_ps(mk, x + 5 * es), bv, r + 4 * k);
			}
			transpose16(r);
			/* r[i]: channel m0 + i's outputs 4 t0 .. 4 t0 + 15, + res, ReLU,
			 * straight to y (plain loads and stores for whole vectors, masked
			 * ones at the row's end) */
			int64_t j = 4 * t0;
			if (j + 16 <= n) {
				for (int i = 0; i < live; i++) {
					__m512 v = r[i];
					if (res)
						v = _mm512_add_ps(v, _mm512_loadu_ps(res + (m0 + i) * n + j));
					if (relu)
						v = _mm512_max_ps(v, zero);
					_mm512_storeu_ps(y + (m0 + i) * n + j, v);
				}
			} else if (j < n) {
				__mmask16 ok = (__mmask16)((1u << (n - j)) - 1);
				for (int i = 0; i < live; i++) {
					__m512 v = r[i];
					if (res)
						v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(ok, res + (m0 + i) * n + j));
					if (relu)
						v = _mm512_max_ps(v, zero);
					_mm512_mask_storeu_ps(y + (m0 + i) * n + j, ok, v);
				}
			}
		}
	}
}
