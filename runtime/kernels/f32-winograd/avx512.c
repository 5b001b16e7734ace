/*
 * f32-winograd/avx512.c - the Winograd products M[e] = U[e] V[e]
 * (winograd.h) in AVX-512: tiles of 8 output channels by 48 tiles in 24 zmm
 * accumulators; per input channel three loads of V and eight broadcasts of
 * U, which streams in the order it is stored. Each sum is one FMA chain over
 * c from 0, as the ref variant's fmaf: the same bits. The input and output
 * transforms are the ref variant's operations in the same order, 16 tiles a
 * vector (lanes never mix): the same bits too.
 */
#include <immintrin.h>

#include "winograd.h"

static inline __attribute__((always_inline)) void tile(const float *U, const float *V, float *M,
                                                       int64_t C, int64_t ts, const int nv)
{
	__m512 acc[WINO_MR][3];
	#pragma GCC unroll 8
	for (int i = 0; i < WINO_MR; i++)
		#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			acc[i][v] = _mm512_setzero_ps();
	for (int64_t c = 0; c < C; c++, U += WINO_MR, V += ts) {
		__m512 b[3];
		#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			b[v] = _mm512_loadu_ps(V + 16 * v);
		#pragma GCC unroll 8
		for (int i = 0; i < WINO_MR; i++) {
			__m512 a = _mm512_set1_ps(U[i]);
			#pragma GCC unroll 3
			for (int v = 0; v < nv; v++)
				acc[i][v] = _mm512_fmadd_ps(a, b[v], acc[i][v]);
		}
	}
	#pragma GCC unroll 8
	for (int i = 0; i < WINO_MR; i++)
		#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			_mm512_storeu_ps(M + i * ts + 16 * v, acc[i][v]);
}

void kiln_wino_gemm_avx512(const float *U, const float *V, float *M, int64_t C, int64_t ts,
                           int64_t nv, int64_t groups)
{
	/* a chunk of V's columns stays in L1 while every group passes */
	int64_t v = 0;
	for (; v + 3 <= nv; v += 3)
		for (int64_t q = 0; q < groups; q++)
			tile(U + q * WINO_MR * C, V + 16 * v, M + q * WINO_MR * ts + 16 * v, C, ts, 3);
	for (int64_t q = 0; q < groups; q++) {
		if (nv - v == 2)
			tile(U + q * WINO_MR * C, V + 16 * v, M + q * WINO_MR * ts + 16 * v, C, ts, 2);
		else if (nv - v == 1)
			tile(U + q * WINO_MR * C, V + 16 * v, M + q * WINO_MR * ts + 16 * v, C, ts, 1);
	}
}

static inline __mmask16 first(int64_t n)
{
	return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

/* Columns x0 + 2 j0 .. + 31 of the four input rows s[k] (zeros outside
 * [0, W), past column x0 + 2 ne - 1 and in rows outside the image) split
 * into even (e) and odd (o) columns and combined down the columns (B^T). */
static inline __attribute__((always_inline)) void chunk(const float *const s[4], const int ok[4],
                                                        int64_t x0, int64_t W, int64_t ne,
                                                        int64_t j0, __m512 e[4], __m512 o[4])
{
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
	int64_t base = x0 + 2 * j0, lo = -base > 0 ? -base : 0, hi = W - base;
	if (hi > 2 * (ne - j0))
		hi = 2 * (ne - j0);
	if (hi > 32)
		hi = 32;
	uint32_t m = 0;
	if (lo < hi)
		m = (uint32_t)(((uint64_t)1 << hi) - 1) & ~(uint32_t)(((uint64_t)1 << lo) - 1);
	__m512 re[4], ro[4];
	#pragma GCC unroll 4
	for (int k = 0; k < 4; k++) {
		uint32_t mk = ok[k] ? m : 0;
		__m512 a = _mm512_maskz_loadu_ps((__mmask16)mk, s[k] + base);
		__m512 b = _mm512_maskz_loadu_ps((__mmask16)(mk >> 16), s[k] + base + 16);
		re[k] = _mm512_permutex2var_ps(a, even, b);
		ro[k] = _mm512_permutex2var_ps(a, odd, b);
	}
	e[0] = _mm512_sub_ps(re[0], re[2]), o[0] = _mm512_sub_ps(ro[0], ro[2]);
	e[1] = _mm512_add_ps(re[1], re[2]), o[1] = _mm512_add_ps(ro[1], ro[2]);
	e[2] = _mm512_sub_ps(re[2], re[1]), o[2] = _mm512_sub_ps(ro[2], ro[1]);
	e[3] = _mm512_sub_ps(re[1], re[3]), o[3] = _mm512_sub_ps(ro[1], ro[3]);
}

static inline __m512 next1(__m512 next, __m512 cur)
{
	return _mm512_castsi512_ps(
	    _mm512_alignr_epi32(_mm512_castps_si512(next), _mm512_castps_si512(cur), 1));
}

/* B^T d B of a run of tiles, 16 tiles a vector, in registers: each of the
 * four input rows of a channel split into its even and odd columns (masked
 * loads and permutes), the rows combined, then the columns (the next
 * chunk's first column shifted in). */
void kiln_wino_inputs_avx512(const kiln_conv2d_params *p, const WGeo *g, const float *X,
                             const WRun *r, float *V, float *row)
{
	(void)row;
	const int64_t C = g->C, H = p->in_h, W = p->in_w, ts = g->ts, ve = g->ve, n = r->n, ne = n + 1;
	const int64_t x0 = 2 * r->tx0 - p->pad_left;
	int ok[4];
	int64_t iy[4];
	for (int k = 0; k < 4; k++) {
		iy[k] = 2 * r->ty - p->pad_top + k;
		ok[k] = iy[k] >= 0 && iy[k] < H;
	}
	for (int64_t c = 0; c < C; c++) {
		const float *x = X + (r->b * C + c) * H * W;
		const float *const s[4] = {ok[0] ? x + iy[0] * W : x, ok[1] ? x + iy[1] * W : x,
		                           ok[2] ? x + iy[2] * W : x, ok[3] ? x + iy[3] * W : x};
		/* the next run's two new rows, which are likely in memory (the
		 * row's last float too: a row need not start a cache line); after
		 * an image's last run, the next image's first rows */
		if (r->tx0 == 0) {
			const float *nxt = x;
			int64_t k0 = iy[3] + 1, k1 = iy[3] + 2;
			if (k0 >= H && r->b + 1 < p->batch)
				nxt = x + C * H * W, k0 = 0, k1 = 3 - p->pad_top;
			for (int64_t k = k0; k <= k1 && k < H; k++) {
				for (int64_t l = 0; l < W; l += 16)
					_mm_prefetch((const char *)(nxt + k * W + l), _MM_HINT_T0);
				_mm_prefetch((const char *)(nxt + k * W + W - 1), _MM_HINT_T0);
			}
		}
		__m512 ce[4], co[4], nx[4], no[4];
		chunk(s, ok, x0, W, ne, 0, ce, co);
		for (int64_t u0 = 0; u0 < n; u0 += 16) {
			__mmask16 st = first(n - u0);
			chunk(s, ok, x0, W, ne, u0 + 16, nx, no);
			float *v = V + c * ts + r->pos + u0;
			#pragma GCC unroll 4
			for (int k = 0; k < 4; k++) {
				__m512 e1 = next1(nx[k], ce[k]), o1 = next1(no[k], co[k]);
				float *vk = v + 4 * k * ve;
				_mm512_mask_storeu_ps(vk, st, _mm512_sub_ps(ce[k], e1));
				_mm512_mask_storeu_ps(vk + ve, st, _mm512_add_ps(co[k], e1));
				_mm512_mask_storeu_ps(vk + 2 * ve, st, _mm512_sub_ps(e1, co[k]));
				_mm512_mask_storeu_ps(vk + 3 * ve, st, _mm512_sub_ps(co[k], o1));
				ce[k] = nx[k], co[k] = no[k];
			}
		}
	}
}

/* Up to 16 outputs from v at y: + bias, + residual, the activation (Relu,
 * LeakyRelu and Clip here, the others by the caller afterwards). */
static inline __attribute__((always_inline)) void store16(float *y, const float *res, __m512 v,
                                                          __m512 b, __mmask16 m, int act,
                                                          __m512 lo, __m512 hi)
{
	__m512 x = _mm512_add_ps(v, b);
	if (res)
		x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, res));
	switch (act) {
	case KILN_ACT_RELU:
		x = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ), x);
		break;
	case KILN_ACT_LEAKY_RELU:
		x = _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), x, lo);
		break;
	case KILN_ACT_CLIP:
		x = _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), lo);
		x = _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), hi);
		break;
	default:
		break;
	}
	_mm512_mask_storeu_ps(y, m, x);
}

/* A^T m A of a run of tiles, 16 tiles a vector: the two output rows' even
 * and odd columns interleaved into runs of 32 outputs, stored with the
 * epilogue. */
void kiln_wino_outputs_avx512(const kiln_conv2d_params *p, const WGeo *g, const float *Mb,
                              int64_t o0, int64_t on, const WRun *r, const float *bias, float *Y,
                              const kiln_epilogue *ep, float *row)
{
	(void)row;
	const __m512i ilo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
	const __m512i ihi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
	const int64_t OH = p->out_h, OW = p->out_w, ts = g->ts, es = g->me, n = r->n;
	const int64_t ox = 2 * r->tx0, w = OW - ox < 2 * n ? OW - ox : 2 * n;
	const int act = ep ? ep->act : KILN_ACT_NONE;
	const __m512 lo = _mm512_set1_ps(ep ? ep->alpha : 0.0f), hi = _mm512_set1_ps(ep ? ep->beta : 0.0f);
	const int rows = 2 * r->ty + 1 < OH ? 2 : 1;
	const int later = act != KILN_ACT_NONE && act != KILN_ACT_RELU &&
	                  act != KILN_ACT_LEAKY_RELU && act != KILN_ACT_CLIP;
	for (int64_t i = 0; i < on; i++) {
		int64_t o = o0 + i;
		const float *m = Mb + i * ts + r->pos;
		__m512 b = _mm512_set1_ps(bias ? bias[o] : 0.0f);
		int64_t at = ((r->b * g->M + o) * OH + 2 * r->ty) * OW + ox;
		const float *res = ep && ep->residual ? ep->residual + at : NULL;
		/* the next tile row's residual and outputs of this channel, likely
		 * in memory: fetched while the other channels of this row pass */
		if (r->tx0 == 0 && 2 * r->ty + 2 < OH) {
			int64_t nr = 2 * r->ty + 4 <= OH ? 2 : 1;
			for (int64_t l = 0; l < nr * OW; l += 16) {
				if (res)
					_mm_prefetch((const char *)(res + 2 * OW + l), _MM_HINT_T0);
				__builtin_prefetch(Y + at + 2 * OW + l, 1, 3);
			}
		}
		for (int64_t u0 = 0; u0 < n; u0 += 16) {
			__mmask16 lm = first(n - u0);
			__m512 s[4], d[4];
			#pragma GCC unroll 4
			for (int j = 0; j < 4; j++) {
				__m512 a = _mm512_maskz_loadu_ps(lm, m + j * es + u0);
				__m512 bb = _mm512_maskz_loadu_ps(lm, m + (4 + j) * es + u0);
				__m512 cc = _mm512_maskz_loadu_ps(lm, m + (8 + j) * es + u0);
				__m512 dd = _mm512_maskz_loadu_ps(lm, m + (12 + j) * es + u0);
				s[j] = _mm512_add_ps(_mm512_add_ps(a, bb), cc);
				d[j] = _mm512_sub_ps(_mm512_sub_ps(bb, cc), dd);
			}
			__m512 y[2][2];
			y[0][0] = _mm512_add_ps(_mm512_add_ps(s[0], s[1]), s[2]);
			y[0][1] = _mm512_sub_ps(_mm512_sub_ps(s[1], s[2]), s[3]);
			y[1][0] = _mm512_add_ps(_mm512_add_ps(d[0], d[1]), d[2]);
			y[1][1] = _mm512_sub_ps(_mm512_sub_ps(d[1], d[2]), d[3]);
			int64_t c0 = 2 * u0;
			__mmask16 m0 = first(w - c0), m1 = first(w - c0 - 16);
			for (int k = 0; k < rows; k++) {
				float *yk = Y + at + k * OW + c0;
				const float *rk = res ? res + k * OW + c0 : NULL;
				__m512 l = _mm512_permutex2var_ps(y[k][0], ilo, y[k][1]);
				__m512 h = _mm512_permutex2var_ps(y[k][0], ihi, y[k][1]);
				store16(yk, rk, l, b, m0, act, lo, hi);
				if (m1)
					store16(yk + 16, rk ? rk + 16 : NULL, h, b, m1, act, lo, hi);
			}
		}
		if (later)
			for (int k = 0; k < rows; k++)
				kiln_f32_act(Y + at + k * OW, w, ep);
	}
}
