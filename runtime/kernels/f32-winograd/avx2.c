/*
 * f32-winograd/avx2.c - the Winograd products M[e] = U[e] V[e]
 * (winograd.h) in AVX2: 4 output channels by 24 tiles (3 ymm of 8 tiles)
 * in 12 accumulators; per input channel three loads of V and four
 * broadcasts of U. Each sum is one FMA chain over c from 0, as the ref
 * variant's fmaf and AVX-512's: the same bits. The AVX2 variant runs the
 * portable input and output transforms (winograd.c).
 */
#include <immintrin.h>

#include "winograd.h"

static inline __attribute__((always_inline)) void tile(const float *U, const float *V, float *M,
                                                       int64_t C, int64_t ts, const int nv)
{
	__m256 acc[4][3];
	#pragma GCC unroll 4
	for (int i = 0; i < 4; i++)
		#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			acc[i][v] = _mm256_setzero_ps();
	for (int64_t c = 0; c < C; c++, U += WINO_MR, V += ts) {
		__m256 b[3];
		#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			b[v] = _mm256_loadu_ps(V + 8 * v);
		#pragma GCC unroll 4
		for (int i = 0; i < 4; i++) {
			__m256 a = _mm256_broadcast_ss(U + i);
			#pragma GCC unroll 3
			for (int v = 0; v < nv; v++)
				acc[i][v] = _mm256_fmadd_ps(a, b[v], acc[i][v]);
		}
	}
	#pragma GCC unroll 4
	for (int i = 0; i < 4; i++)
		#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			_mm256_storeu_ps(M + i * ts + 8 * v, acc[i][v]);
}

void kiln_wino_gemm_avx2(const float *U, const float *V, float *M, int64_t C, int64_t ts,
                         int64_t nv, int64_t groups)
{
	/* in ymm of 8 tiles: 2 nv of them; a chunk of V's columns stays in L1
	 * while every half group passes */
	int64_t n8 = 2 * nv, v = 0;
	for (; v + 3 <= n8; v += 3)
		for (int64_t h = 0; h < 2 * groups; h++)
			tile(U + h / 2 * WINO_MR * C + h % 2 * 4, V + 8 * v, M + 4 * h * ts + 8 * v, C, ts, 3);
	for (int64_t h = 0; h < 2 * groups; h++) {
		const float *u = U + h / 2 * WINO_MR * C + h % 2 * 4;
		if (n8 - v == 2)
			tile(u, V + 8 * v, M + 4 * h * ts + 8 * v, C, ts, 2);
		else if (n8 - v == 1)
			tile(u, V + 8 * v, M + 4 * h * ts + 8 * v, C, ts, 1);
	}
}
