/*
 * f32-rnn/avx512.c - gemv.h's product with AVX-512: a 32-column panel is two
 * zmm per row of K; four rows at a time into eight accumulators. A narrower
 * last panel goes through masked loads, one row at a time.
 */
#include <immintrin.h>

#include "../f32-gemm/pack.h"
#include "gemv.h"

static __mmask16 lanes(int64_t n)
{
	return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

void kiln_rnn_gemv_avx512(int64_t N, int64_t K, const float *x, const float *Bp,
                          const float *bias, float *y)
{
	for (int64_t n0 = 0; n0 < N; n0 += KILN_PACK_NR) {
		int64_t w = kiln_pack_b32_width(N, n0);
		const float *b = Bp + n0 * K;
		/* named accumulators: an array would live on the stack */
		__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
		       a7 = a0;
		int64_t k = 0;
		if (w == KILN_PACK_NR)
			for (; k + 4 <= K; k += 4) {
				const float *r = b + k * KILN_PACK_NR;
				__m512 x0 = _mm512_set1_ps(x[k]), x1 = _mm512_set1_ps(x[k + 1]);
				__m512 x2 = _mm512_set1_ps(x[k + 2]), x3 = _mm512_set1_ps(x[k + 3]);
				a0 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(r), a0);
				a1 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(r + 16), a1);
				a2 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(r + 32), a2);
				a3 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(r + 48), a3);
				a4 = _mm512_fmadd_ps(x2, _mm512_loadu_ps(r + 64), a4);
				a5 = _mm512_fmadd_ps(x2, _mm512_loadu_ps(r + 80), a5);
				a6 = _mm512_fmadd_ps(x3, _mm512_loadu_ps(r + 96), a6);
				a7 = _mm512_fmadd_ps(x3, _mm512_loadu_ps(r + 112), a7);
			}
		__mmask16 m0 = lanes(w), m1 = lanes(w - 16);
		for (; k < K; k++) {
			__m512 xv = _mm512_set1_ps(x[k]);
			const float *r = b + k * w;
			a0 = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m0, r), a0);
			a1 = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m1, r + 16), a1);
		}
		__m512 lo = _mm512_add_ps(_mm512_add_ps(a0, a2), _mm512_add_ps(a4, a6));
		__m512 hi = _mm512_add_ps(_mm512_add_ps(a1, a3), _mm512_add_ps(a5, a7));
		if (bias) {
			lo = _mm512_add_ps(lo, _mm512_maskz_loadu_ps(m0, bias + n0));
			hi = _mm512_add_ps(hi, _mm512_maskz_loadu_ps(m1, bias + n0 + 16));
		}
		_mm512_mask_storeu_ps(y + n0, m0, lo);
		_mm512_mask_storeu_ps(y + n0 + 16, m1, hi);
	}
}
