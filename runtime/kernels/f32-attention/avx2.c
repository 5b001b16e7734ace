/*
 * f32-attention/avx2.c - the AVX2 + FMA variant of the attention block:
 * body.h over 8 float lanes; scores in tiles of 4 keys x 16 query rows, the
 * product with V in tiles of 4 query rows x 16 columns (8 ymm accumulators
 * each).
 */
#include <immintrin.h>
#include <math.h>

#include "attention.h"

typedef __m256 V;
enum { W = 8, NB = 2, SC_KEYS = 4, PV_ROWS = 4, PV_VECS = 2 };
static inline V vzero(void) { return _mm256_setzero_ps(); }
static inline V vset(float a) { return _mm256_set1_ps(a); }
static inline V vload(const float *p) { return _mm256_loadu_ps(p); }
static inline void vstore(float *p, V a) { _mm256_storeu_ps(p, a); }
static inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
static inline V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
static inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
static inline V vdiv(V a, V b) { return _mm256_div_ps(a, b); }
static inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
static inline V vmin(V a, V b) { return _mm256_min_ps(a, b); }
static inline V vmax(V a, V b) { return _mm256_max_ps(a, b); }
#define VMATH_ROUND(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
/* 2^n for integral n in [-126, 127] (exp.h) */
static inline V vexp2i(V n)
{
	__m256i k = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
	return _mm256_castsi256_ps(_mm256_slli_epi32(k, 23));
}

/* r[i] = row i of an 8 x 8 block in, column i out: after the 32-bit unpacks
 * and the 64-bit shuffles, u[k] and u[4 + k] hold rows 0-3 and 4-7 of
 * columns k and k + 4 in their two 128-bit halves. */
static inline __attribute__((always_inline)) void transpose_w(V r[8])
{
	V t[8], u[8];
	#pragma GCC unroll 16
	for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
	}
	#pragma GCC unroll 16
	for (int s = 0; s < 8; s += 4) {
		u[s] = _mm256_shuffle_ps(t[s], t[s + 2], 0x44);
		u[s + 1] = _mm256_shuffle_ps(t[s], t[s + 2], 0xee);
		u[s + 2] = _mm256_shuffle_ps(t[s + 1], t[s + 3], 0x44);
		u[s + 3] = _mm256_shuffle_ps(t[s + 1], t[s + 3], 0xee);
	}
	#pragma GCC unroll 16
	for (int k = 0; k < 4; k++) {
		r[k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x20);
		r[k + 4] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x31);
	}
}

#define SUFFIX(name) name##_avx2
#define ATTN_OPS kiln_attn_avx2
#include "body.h"
