/*
 * f32-winograd/avx512.c - the Winograd products M[e] = U[e] V[e]
 * (winograd.h) in AVX-512: tiles of 8 output channels by 48 tiles in 24 zmm
 * accumulators; per input channel three loads of V and eight broadcasts of
 * U, which streams in the order it is stored.
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
                           int64_t nv)
{
	int64_t v = 0;
	for (; v + 3 <= nv; v += 3)
		tile(U, V + 16 * v, M + 16 * v, C, ts, 3);
	if (nv - v == 2)
		tile(U, V + 16 * v, M + 16 * v, C, ts, 2);
	else if (nv - v == 1)
		tile(U, V + 16 * v, M + 16 * v, C, ts, 1);
}
