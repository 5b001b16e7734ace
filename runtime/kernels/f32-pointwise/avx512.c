/*
 * f32-pointwise/avx512.c - pointwise.h's small 1x1 convolution with AVX-512.
 *
 * A plane of P <= 32 pixels is one or two vectors (masked: the loads never
 * read past a row, the stores never write past one). Eight output channels
 * at a time: for each input channel its row of X is loaded once and each of
 * the eight weights broadcast, into 8 (P <= 16) or 16 sums that start at 0
 * and stay in registers until the bias, the ReLU and the store; a last group
 * of fewer than eight channels one channel at a time. Each sum is one float
 * FMA chain over c from 0 (C <= GEMM_KBLOCK: one K block, pointwise.c), then
 * + the bias: the GEMM's order, so the same bits as the other variants'
 * implicit GEMM (issue 30, docs/reproducibility.md). Until then planes of 1,
 * 2, 4 or 8 pixels with many input channels took dot products over c (16
 * partial sums a vector, then a tree), faster there (64 -> 32 channels over
 * 4 pixels 0.54 -> 0.24 us) but in another order.
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
			acc[i][v] = _mm512_setzero_ps();
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
			__m512 y = _mm512_add_ps(acc[i][v], _mm512_set1_ps(bias ? bias[o0 + i] : 0.0f));
			y = relu ? _mm512_max_ps(y, _mm512_setzero_ps()) : y;
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

void kiln_pointwise_avx512(int64_t C, int64_t M, int64_t P, const float *X, const float *W,
                           const float *bias, float *Y, int relu)
{
	if (P <= 16)
		plane(1, C, M, P, X, W, bias, Y, relu);
	else
		plane(2, C, M, P, X, W, bias, Y, relu);
}
