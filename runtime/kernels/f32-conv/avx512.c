/*
 * f32-conv/avx512.c - the convolution's im2col panel packer (im2col.h) with
 * AVX-512 masked moves: a run of up to 32 pixels is two masked loads and two
 * masked stores, zeros included, with no loop.
 */
#include <immintrin.h>

#include "im2col.h"

static inline __attribute__((always_inline)) void copy_run(float *o, const float *src, int64_t lo,
                                                           int64_t hi, int64_t len)
{
	/* lanes [lo, hi) come from src - lo (masked: the lanes below lo are never read) */
	for (int h = 0; h < 2; h++) {
		int64_t b = 16 * h;
		if (b >= len)
			break;
		int64_t e = len - b < 16 ? len - b : 16;
		__mmask16 store = (__mmask16)((1u << e) - 1);
		int64_t l = lo - b < 0 ? 0 : lo - b, r = hi - b < 0 ? 0 : hi - b > 16 ? 16 : hi - b;
		__mmask16 load = l < r ? (__mmask16)(((1u << r) - 1) & ~((1u << l) - 1)) : 0;
		__m512 v = _mm512_maskz_loadu_ps(load, src + (b - lo));
		_mm512_mask_storeu_ps(o + b, store, v);
	}
}
/* Lanes whose input column lies in [0, W) are gathered, the rest are 0. */
static inline __attribute__((always_inline)) void gather_run(float *o, const float *row,
                                                             int64_t iw, int64_t step, int64_t W,
                                                             int64_t len)
{
	const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	for (int64_t b = 0; b < len; b += 16) {
		int64_t e = len - b < 16 ? len - b : 16;
		__m512i col = _mm512_add_epi32(_mm512_set1_epi32((int)(iw + b * step)),
		                               _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)step)));
		__mmask16 in = _mm512_cmpge_epi32_mask(col, _mm512_setzero_si512()) &
		               _mm512_cmplt_epi32_mask(col, _mm512_set1_epi32((int)W)) &
		               (__mmask16)((1u << e) - 1);
		__m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), in, col, row, 4);
		_mm512_mask_storeu_ps(o + b, (__mmask16)((1u << e) - 1), v);
	}
}
#define IM2COL_NAME kiln_im2col_avx512
#define IM2COL_COPY_RUN copy_run
#define IM2COL_GATHER_RUN gather_run
#include "im2col.h"

/* The packed convolution's tile (direct.h): up to 8 output channels by 48
 * wide pixels in 24 zmm accumulators; per column k of W, three loads of the
 * input at xb + koff[k] and eight broadcasts of the weights, which stream in
 * the order they are stored (bw floats apart). Lanes past np are read (the
 * work memory has room past its end, direct.c) and dropped. */
#include "direct.h"



/* Row i of the tile's sums (nv vectors) to Y's real pixels: + bias,
 * + residual, the activation (Relu, LeakyRelu and Clip here, others after);
 * each vector's real lanes compressed together and stored as one run, the
 * residual expanded to them. */
static inline __attribute__((always_inline)) void conv_store_row(const ConvTile *t, int i,
                                                                 const __m512 *acc, int nv)
{
	const kiln_epilogue *ep = t->ep;
	int act = ep ? ep->act : KILN_ACT_NONE;
	__m512 lo = _mm512_set1_ps(ep ? ep->alpha : 0.0f), hi = _mm512_set1_ps(ep ? ep->beta : 0.0f);
	int64_t m = t->m0 + i, at = m * t->ohw + t->y0, start = at;
	__m512 b = _mm512_set1_ps(t->bias ? t->bias[m] : 0.0f);
	for (int v = 0; v < nv; v++) {
		__mmask16 real = (__mmask16)(t->real >> (16 * v));
		int n = __builtin_popcount(real);
		if (n == 0)
			continue;
		__mmask16 run = (__mmask16)((1u << n) - 1);
		__m512 x = _mm512_add_ps(acc[v], b);
		if (t->res)
			x = _mm512_add_ps(x, _mm512_maskz_expand_ps(real, _mm512_maskz_loadu_ps(run, t->res + at)));
		switch (act) {
		case KILN_ACT_NONE:
			break;
		case KILN_ACT_RELU:
			/* x > 0 ? x : 0, NaN -> 0 as the scalar code does */
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
		_mm512_mask_storeu_ps(t->Y + at, run, _mm512_maskz_compress_ps(real, x));
		at += n;
	}
	if (act != KILN_ACT_NONE && act != KILN_ACT_RELU && act != KILN_ACT_LEAKY_RELU &&
	    act != KILN_ACT_CLIP)
		kiln_f32_act(t->Y + start, at - start, ep);
}

static inline __attribute__((always_inline)) void conv_tile(const ConvTile *t, const int rows,
                                                            const int nv)
{
	__m512 acc[CONV_MR][3];
	#pragma GCC unroll 8
	for (int i = 0; i < rows; i++)
		#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			acc[i][v] = _mm512_setzero_ps();
	/* the next tile's outputs (and residual), which are likely in memory:
	 * fetched while this one sums */
	int64_t next = t->y0 + __builtin_popcountll(t->real);
	#pragma GCC unroll 8
	for (int i = 0; i < rows; i++) {
		const float *y = t->Y + (t->m0 + i) * t->ohw + next;
		#pragma GCC unroll 3
		for (int v = 0; v < nv; v++) {
			_mm_prefetch((const char *)(y + 16 * v), _MM_HINT_T0);
			if (t->res)
				_mm_prefetch((const char *)(t->res + (y - t->Y) + 16 * v), _MM_HINT_T0);
		}
	}
	const float *w = t->w, *xb = t->xb;
	const int64_t *koff = t->koff;
	for (int64_t k = 0, K = t->K, ws = t->ws; k < K; k++, w += ws) {
		const float *b = xb + koff[k];
		__m512 bv[3];
		#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			bv[v] = _mm512_loadu_ps(b + 16 * v);
		#pragma GCC unroll 8
		for (int i = 0; i < rows; i++) {
			__m512 a = _mm512_set1_ps(w[i]);
			#pragma GCC unroll 3
			for (int v = 0; v < nv; v++)
				acc[i][v] = _mm512_fmadd_ps(a, bv[v], acc[i][v]);
		}
	}
	#pragma GCC unroll 8
	for (int i = 0; i < rows; i++)
		conv_store_row(t, i, acc[i], nv);
}

#define CONV_ROWS(r) \
	case r: \
		if (nv == 3) \
			conv_tile(t, r, 3); \
		else if (nv == 2) \
			conv_tile(t, r, 2); \
		else \
			conv_tile(t, r, 1); \
		break;

void kiln_conv_tile_avx512(const ConvTile *t)
{
	int nv = (t->np + 15) / 16;
	switch (t->rows) {
	CONV_ROWS(1) CONV_ROWS(2) CONV_ROWS(3) CONV_ROWS(4)
	CONV_ROWS(5) CONV_ROWS(6) CONV_ROWS(7) CONV_ROWS(8)
	default:
		break;
	}
}

/* direct.h: 16 floats of the row from 32 of s, two loads and one permute;
 * the loads masked to s[0 .. 2 n - 2]. */
void kiln_conv_row2_avx512(float *d, const float *s, int64_t n)
{
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	for (int64_t u = 0; u < n; u += 16) {
		int64_t m = 2 * (n - u) - 1;   /* floats of s this block may read */
		__mmask16 l0 = m >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << m) - 1);
		__mmask16 l1 = m >= 32 ? (__mmask16)0xffff : m > 16 ? (__mmask16)((1u << (m - 16)) - 1) : 0;
		__mmask16 st = n - u >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - u)) - 1);
		__m512 a = _mm512_maskz_loadu_ps(l0, s + 2 * u), b = _mm512_maskz_loadu_ps(l1, s + 2 * u + 16);
		_mm512_mask_storeu_ps(d + u, st, _mm512_permutex2var_ps(a, even, b));
	}
}

/* How far ahead the row tile fetches its weight stream (floats, 16
 * columns): one stream of 128 bytes a column, which the hardware prefetcher
 * alone follows too late when it comes from memory (ResNet's 512-channel
 * layers: 9 MiB of weights); and its input (columns: each a line of another
 * row or plane, a stride no prefetcher follows; 56x56 maps 124 -> 130
 * GFLOP/s); and its outputs, CONV_YPF floats past the next pair (the
 * stem's 7x7 / 2 at batch 16, 3 -> 64 channels of 112 x 112: 22.9 -> 21.0
 * ms). */
enum { CONV_WPF = 16 * CONV_ROW_M, CONV_XPF = 8, CONV_YPF = 4 * CONV_RUN };

/* A 16 x 16 transpose in registers: v[i] lane j <- v[j] lane i. */
static inline __attribute__((always_inline)) void transpose16(__m512 v[16])
{
	__m512 t[16];
	#pragma GCC unroll 8
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
		t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
	}
	/* per 128-bit block b, v[4 g + j] = rows 4 g .. 4 g + 3 of column 4 b + j */
	#pragma GCC unroll 4
	for (int g = 0; g < 16; g += 4) {
		__m512d a = _mm512_castps_pd(t[g]), b = _mm512_castps_pd(t[g + 1]);
		__m512d c = _mm512_castps_pd(t[g + 2]), d = _mm512_castps_pd(t[g + 3]);
		v[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
		v[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
		v[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
		v[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
	}
	/* then blocks (0, 2) and (1, 3) of row groups g and g + 4, twice */
	#pragma GCC unroll 4
	for (int j = 0; j < 4; j++) {
		t[j] = _mm512_shuffle_f32x4(v[j], v[4 + j], 0x88);
		t[4 + j] = _mm512_shuffle_f32x4(v[j], v[4 + j], 0xdd);
		t[8 + j] = _mm512_shuffle_f32x4(v[8 + j], v[12 + j], 0x88);
		t[12 + j] = _mm512_shuffle_f32x4(v[8 + j], v[12 + j], 0xdd);
	}
	#pragma GCC unroll 8
	for (int j = 0; j < 8; j++) {
		v[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
		v[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
	}
}

/* Output channel m0 + c of a row tile: x holds its sums of run 0 in lanes
 * 0..6 and of run 1 in lanes 7..13; + bias, + residual, the activation (as
 * the wide tile does it, in the same order), stored as the two runs. */
static inline __attribute__((always_inline)) void rowtile_store(const ConvRowTile *t, int c,
                                                                __m512 x)
{
	const kiln_epilogue *ep = t->ep;
	int act = ep ? ep->act : KILN_ACT_NONE;
	int64_t m = t->m0 + c, at0 = m * t->ohw + t->yoff[0], at1 = m * t->ohw + t->yoff[1];
	__mmask16 k0 = (__mmask16)((1u << t->len[0]) - 1), k1 = (__mmask16)((1u << t->len[1]) - 1);
	x = _mm512_add_ps(x, _mm512_set1_ps(t->bias ? t->bias[m] : 0.0f));
	if (t->res) {
		__m512 r0 = _mm512_maskz_loadu_ps(k0, t->res + at0);
		__m512i r1 = _mm512_castps_si512(_mm512_maskz_loadu_ps(k1, t->res + at1));
		/* run 1's residual to lanes 7.. */
		__m512 r = _mm512_mask_mov_ps(r0, (__mmask16)(k1 << CONV_RUN),
		                              _mm512_castsi512_ps(_mm512_alignr_epi32(r1, r1, 16 - CONV_RUN)));
		x = _mm512_add_ps(x, r);
	}
	if (act == KILN_ACT_RELU)
		x = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ), x);
	__m512i xi = _mm512_castps_si512(x);
	_mm512_mask_storeu_ps(t->Y + at0, k0, x);
	_mm512_mask_storeu_ps(t->Y + at1, k1, _mm512_castsi512_ps(_mm512_alignr_epi32(xi, xi, CONV_RUN)));
	if (act != KILN_ACT_NONE && act != KILN_ACT_RELU) {
		kiln_f32_act(t->Y + at0, t->len[0], ep);
		if (t->len[1])
			kiln_f32_act(t->Y + at1, t->len[1], ep);
	}
}

/* The row tile (direct.h): 28 zmm accumulators, [pixel][16 channels]; per
 * column k of W two weight vectors (the block's column of 32) and 14
 * broadcasts of the input (7 for a lone run). The sums are transposed in
 * registers, 16 channels at a time, and stored to Y's rows with the epilogue,
 * a vector per channel. */
static inline __attribute__((always_inline)) void conv_rowtile(const ConvRowTile *t, const int nrun)
{
	__m512 acc[2 * CONV_RUN][2];
	#pragma GCC unroll 14
	for (int p = 0; p < nrun * CONV_RUN; p++)
		acc[p][0] = acc[p][1] = _mm512_setzero_ps();
	/* the outputs (and residual) two pairs past the next, which are likely
	 * in memory: fetched while this one sums (the next pair's only: too
	 * late for the stem's 64 planes of 112 x 112 at batch 16) */
	int64_t next = t->yoff[nrun - 1] + t->len[nrun - 1] + CONV_YPF;
	#pragma GCC unroll 4
	for (int c = 0; c < CONV_ROW_M; c++) {
		int64_t at = (t->m0 + c) * t->ohw + next;
		_mm_prefetch((const char *)(t->Y + at), _MM_HINT_T0);
		_mm_prefetch((const char *)(t->Y + at + 2 * CONV_RUN - 1), _MM_HINT_T0);
		if (t->res) {
			_mm_prefetch((const char *)(t->res + at), _MM_HINT_T0);
			_mm_prefetch((const char *)(t->res + at + 2 * CONV_RUN - 1), _MM_HINT_T0);
		}
	}
	const int64_t K = t->K;
	const float *w = t->w;
	const float *b0 = t->xb + t->q[0], *b1 = t->xb + (t->len[1] ? t->q[1] : t->q[0]);
	const int64_t *koff = t->koff;
	for (int64_t k = 0; k < K; k++, w += CONV_ROW_M) {
		__m512 wa = _mm512_loadu_ps(w), wb = _mm512_loadu_ps(w + 16);
		_mm_prefetch((const char *)(w + CONV_WPF), _MM_HINT_T0);
		_mm_prefetch((const char *)(w + CONV_WPF + 16), _MM_HINT_T0);
		const float *x0 = b0 + koff[k], *x1 = b1 + koff[k];
		int64_t ka = k + CONV_XPF < K ? koff[k + CONV_XPF] : 0;
		_mm_prefetch((const char *)(b0 + ka), _MM_HINT_T0);
		_mm_prefetch((const char *)(b1 + ka + CONV_RUN - 1), _MM_HINT_T0);
		#pragma GCC unroll 7
		for (int p = 0; p < CONV_RUN; p++) {
			__m512 x = _mm512_set1_ps(x0[p]);
			acc[p][0] = _mm512_fmadd_ps(wa, x, acc[p][0]);
			acc[p][1] = _mm512_fmadd_ps(wb, x, acc[p][1]);
		}
		#pragma GCC unroll 7
		for (int p = 0; p < (nrun - 1) * CONV_RUN; p++) {
			__m512 x = _mm512_set1_ps(x1[p]);
			acc[CONV_RUN + p][0] = _mm512_fmadd_ps(wa, x, acc[CONV_RUN + p][0]);
			acc[CONV_RUN + p][1] = _mm512_fmadd_ps(wb, x, acc[CONV_RUN + p][1]);
		}
	}
	#pragma GCC unroll 2
	for (int h = 0; h < 2; h++) {
		__m512 v[16];
		#pragma GCC unroll 16
		for (int p = 0; p < 16; p++)
			v[p] = p < nrun * CONV_RUN ? acc[p][h] : _mm512_setzero_ps();
		transpose16(v);
		#pragma GCC unroll 16
		for (int c = 0; c < 16; c++)
			rowtile_store(t, 16 * h + c, v[c]);
	}
}

void kiln_conv_rowtile_avx512(const ConvRowTile *t)
{
	/* a lone run (an odd count of them) sums only its own pixels */
	if (t->len[1])
		conv_rowtile(t, 2);
	else
		conv_rowtile(t, 1);
}
