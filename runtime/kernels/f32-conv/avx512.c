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
 * the order they are stored. Lanes past np are read (the work memory has
 * room past its end, direct.c) and dropped. */
#include "direct.h"

/* The tile's sums (out) to Y's real pixels, 16 lanes at a time: + bias,
 * + residual, the activation (Relu, LeakyRelu and Clip here, others after). */
static void conv_store(const ConvTile *t, float out[CONV8_MR][CONV_NP_AVX512])
{
	int lane[CONV_MAX_RUNS], len[CONV_MAX_RUNS];
	int64_t yoff[CONV_MAX_RUNS];
	int nruns = conv_runs(t, lane, yoff, len);
	const kiln_epilogue *ep = t->ep;
	int act = ep ? ep->act : KILN_ACT_NONE;
	__m512 lo = _mm512_set1_ps(ep ? ep->alpha : 0.0f), hi = _mm512_set1_ps(ep ? ep->beta : 0.0f);
	for (int i = 0; i < t->rows; i++) {
		int64_t m = t->m0 + i;
		__m512 b = _mm512_set1_ps(t->bias ? t->bias[m] : 0.0f);
		for (int r = 0; r < nruns; r++) {
			int64_t at = m * t->ohw + yoff[r];
			float *y = t->Y + at;
			for (int u = 0; u < len[r]; u += 16) {
				__mmask16 k = len[r] - u >= 16 ? (__mmask16)0xffff
				                                : (__mmask16)((1u << (len[r] - u)) - 1);
				__m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, &out[i][lane[r] + u]), b);
				if (t->res)
					v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, t->res + at + u));
				switch (act) {
				case KILN_ACT_NONE:
					break;
				case KILN_ACT_RELU:
					/* x > 0 ? x : 0, NaN -> 0 as the scalar code does */
					v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), v);
					break;
				case KILN_ACT_LEAKY_RELU:
					v = _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ),
					                       v, lo);
					break;
				case KILN_ACT_CLIP:
					v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ), lo);
					v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ), hi);
					break;
				default:
					break;
				}
				_mm512_mask_storeu_ps(y + u, k, v);
			}
			if (act != KILN_ACT_NONE && act != KILN_ACT_RELU && act != KILN_ACT_LEAKY_RELU &&
			    act != KILN_ACT_CLIP)
				kiln_f32_act(y, len[r], ep);
		}
	}
}

static inline __attribute__((always_inline)) void conv_tile(const ConvTile *t, const int rows,
                                                            const int nv)
{
	__m512 acc[CONV8_MR][3];
	#pragma GCC unroll 8
	for (int i = 0; i < rows; i++)
		#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			acc[i][v] = _mm512_setzero_ps();
	const float *w = t->w, *xb = t->xb;
	const int64_t *koff = t->koff;
	for (int64_t k = 0, K = t->K; k < K; k++, w += rows) {
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
	float out[CONV8_MR][CONV_NP_AVX512];
	#pragma GCC unroll 8
	for (int i = 0; i < rows; i++)
		#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			_mm512_storeu_ps(&out[i][16 * v], acc[i][v]);
	conv_store(t, out);
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
