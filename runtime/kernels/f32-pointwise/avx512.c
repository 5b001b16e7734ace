/*
 * f32-pointwise/avx512.c - pointwise.h's small 1x1 convolution with AVX-512.
 *
 * A plane of P <= 32 pixels is one or two vectors (masked: the loads never
 * read past a row, the stores never write past one). Eight output channels
 * at a time: for each input channel its row of X is loaded once and each of
 * the eight weights broadcast, into 8 (P <= 16) or 16 sums that start at the
 * bias and stay in registers until the ReLU and the store; a last group of
 * fewer than eight channels one channel at a time. Each sum runs over c in
 * order (one float FMA chain), so a result depends only on its inputs.
 * Planes of 1, 2, 4 or 8 pixels with many input channels take dot products
 * over c instead (dot_plane, below), also in one fixed order.
 */
#include <immintrin.h>

#include "pointwise.h"

static __mmask16 lanes(int64_t n)
{
	return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

/* Output channels o0 .. o0+OB-1 over NV vectors of the plane (OB and NV
 * constants once inlined). */
static inline __attribute__((always_inline)) void channels(const int OB, const int NV, int64_t C,
                                                           int64_t P, int64_t o0, const float *X,
                                                           const float *W, const float *bias,
                                                           float *Y, int relu)
{
	__mmask16 m[2] = {lanes(P), lanes(P - 16)};
	__m512 acc[8][2];
#pragma GCC unroll 8
	for (int i = 0; i < OB; i++)
#pragma GCC unroll 2
		for (int v = 0; v < 2; v++)  /* both: no vector read before it is set */
			acc[i][v] = _mm512_set1_ps(bias ? bias[o0 + i] : 0.0f);
	for (int64_t c = 0; c < C; c++) {
		__m512 x[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
#pragma GCC unroll 2
		for (int v = 0; v < NV; v++)
			x[v] = _mm512_maskz_loadu_ps(m[v], X + c * P + 16 * v);
#pragma GCC unroll 8
		for (int i = 0; i < OB; i++) {
			__m512 w = _mm512_set1_ps(W[(o0 + i) * C + c]);
#pragma GCC unroll 2
			for (int v = 0; v < NV; v++)
				acc[i][v] = _mm512_fmadd_ps(w, x[v], acc[i][v]);
		}
	}
#pragma GCC unroll 8
	for (int i = 0; i < OB; i++)
#pragma GCC unroll 2
		for (int v = 0; v < NV; v++) {
			__m512 y = relu ? _mm512_max_ps(acc[i][v], _mm512_setzero_ps()) : acc[i][v];
			_mm512_mask_storeu_ps(Y + (o0 + i) * P + 16 * v, m[v], y);
		}
}

static void plane(const int NV, int64_t C, int64_t M, int64_t P, const float *X, const float *W,
                  const float *bias, float *Y, int relu)
{
	int64_t o = 0;
	for (; o + 8 <= M; o += 8)
		channels(8, NV, C, P, o, X, W, bias, Y, relu);
	for (; o < M; o++)
		channels(1, NV, C, P, o, X, W, bias, Y, relu);
}

/* The 16 sums acc[j] of outputs j = 0..15, each 16 partial sums, reduced to
 * one vector whose lane j is output j: four levels of a shuffle and an add
 * (the sums taken in the order slot s = 4 (j % 4) + j / 4, which the levels
 * leave in lane j), so each output's partials are added in one fixed order. */
#define SLOT(s) acc[4 * ((s) % 4) + (s) / 4]
static inline __attribute__((always_inline)) __m512 reduce16(const __m512 acc[16])
{
	__m512 s[8], u[4], v[2];
#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)  /* halves: slot 2k's 8 partials, slot 2k+1's */
		s[k] = _mm512_add_ps(_mm512_shuffle_f32x4(SLOT(2 * k), SLOT(2 * k + 1), 0x44),
		                     _mm512_shuffle_f32x4(SLOT(2 * k), SLOT(2 * k + 1), 0xEE));
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++)  /* quarter q: slot 4k + q's 4 partials */
		u[k] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * k], s[2 * k + 1], 0x88),
		                     _mm512_shuffle_f32x4(s[2 * k], s[2 * k + 1], 0xDD));
#pragma GCC unroll 2
	for (int k = 0; k < 2; k++)
		v[k] = _mm512_add_ps(_mm512_unpacklo_ps(u[2 * k], u[2 * k + 1]),
		                     _mm512_unpackhi_ps(u[2 * k], u[2 * k + 1]));
	/* lane 4q + k: slot 4k + q, which is output 4q + k */
	return _mm512_add_ps(_mm512_shuffle_ps(v[0], v[1], 0x44), _mm512_shuffle_ps(v[0], v[1], 0xEE));
}
#undef SLOT

enum { DOT_MAX_CHANNELS = 256 };

/* Few pixels and many input channels: a vector of 16 pixels would be mostly
 * idle lanes, so each output is instead a dot product over c, of W's row and
 * X's column (X transposed once, zero-padded to whole vectors). For P = 1,
 * 2, 4 or 8, 16 outputs in flat order (o P + p: 16 / P whole channels) at
 * a time, each its own sum in registers (the bias its first term, in lane
 * 0), summed over c a vector at a time and then reduced together to one
 * vector of Y. Taken where P (ceil(C / 16) + 2) < C, the dot products'
 * FMAs and a share of the reductions per output channel against the direct
 * form's C FMAs (measured: 64 -> 32 channels over 4 pixels 0.54 -> 0.24 us,
 * over 1 pixel 0.55 -> 0.11 us; 12 -> 64 over 4 about even, so not taken). */
static int dot_wins(int64_t C, int64_t P)
{
	return (P == 1 || P == 2 || P == 4 || P == 8) && C <= DOT_MAX_CHANNELS &&
	       P * ((C + 15) / 16 + 2) < C;
}

static inline __attribute__((always_inline)) void dot_plane(const int P, int64_t C, int64_t M,
                                                            const float *X, const float *W,
                                                            const float *bias, float *Y, int relu)
{
	const int R = 16 / P;  /* channels a group */
	float xt[8 * DOT_MAX_CHANNELS] __attribute__((aligned(64)));
	int64_t nv = (C + 15) / 16, cp = 16 * nv;
	const __m512i column = _mm512_mullo_epi32(
	    _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(P));
	__mmask16 tail = lanes(C - 16 * (nv - 1));
	for (int64_t v = 0; v < nv; v++) {
		__mmask16 m = v + 1 < nv ? (__mmask16)0xFFFF : tail;
		for (int p = 0; p < P; p++)  /* X[c, p] for 16 c, none past C */
			_mm512_store_ps(xt + p * cp + 16 * v,
			                _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, column,
			                                         X + 16 * v * P + p, 4));
	}
	for (int64_t o0 = 0; o0 < M; o0 += R) {
		const float *w[16];
		__m512 acc[16];
#pragma GCC unroll 16
		for (int r = 0; r < R; r++) {
			int64_t o = o0 + r < M ? o0 + r : M - 1;  /* past M: a repeat, never stored */
			w[r] = W + o * C;
			__m512 b = _mm512_maskz_mov_ps(1, _mm512_set1_ps(bias ? bias[o] : 0.0f));
#pragma GCC unroll 8
			for (int p = 0; p < P; p++)
				acc[r * P + p] = b;
		}
		for (int64_t v = 0; v < nv; v++) {
			__m512 x[8];
			__mmask16 m = v + 1 < nv ? (__mmask16)0xFFFF : tail;
#pragma GCC unroll 8
			for (int p = 0; p < P; p++)
				x[p] = _mm512_load_ps(xt + p * cp + 16 * v);
#pragma GCC unroll 16
			for (int r = 0; r < R; r++) {
				__m512 wv = _mm512_maskz_loadu_ps(m, w[r] + 16 * v);
#pragma GCC unroll 8
				for (int p = 0; p < P; p++)
					acc[r * P + p] = _mm512_fmadd_ps(wv, x[p], acc[r * P + p]);
			}
		}
		__m512 y = reduce16(acc);
		if (relu)
			y = _mm512_max_ps(y, _mm512_setzero_ps());
		_mm512_mask_storeu_ps(Y + o0 * P, lanes((M - o0) * P), y);
	}
}

static void dot_any(int64_t C, int64_t M, int64_t P, const float *X, const float *W,
                    const float *bias, float *Y, int relu)
{
	switch (P) {
	case 1: dot_plane(1, C, M, X, W, bias, Y, relu); break;
	case 2: dot_plane(2, C, M, X, W, bias, Y, relu); break;
	case 4: dot_plane(4, C, M, X, W, bias, Y, relu); break;
	default: dot_plane(8, C, M, X, W, bias, Y, relu); break;
	}
}

void kiln_pointwise_avx512(int64_t C, int64_t M, int64_t P, const float *X, const float *W,
                           const float *bias, float *Y, int relu)
{
	if (dot_wins(C, P))
		dot_any(C, M, P, X, W, bias, Y, relu);
	else if (P <= 16)
		plane(1, C, M, P, X, W, bias, Y, relu);
	else
		plane(2, C, M, P, X, W, bias, Y, relu);
}
