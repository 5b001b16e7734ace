/*
 * f32-attention/avx512.c - the AVX-512 variant of the attention block:
 * body.h over 16 float lanes; scores in tiles of 8 keys x 32 query rows (16
 * zmm accumulators, each key's element a broadcast from K's row), the
 * product with V in tiles of 16 query rows x 16 columns (16 accumulators).
 */
#include <immintrin.h>
#include <math.h>

#include "attention.h"

typedef __m512 V;
enum { W = 16, NB = 2, SC_KEYS = 8, PV_ROWS = 16, PV_VECS = 1 };
static inline V vzero(void) { return _mm512_setzero_ps(); }
static inline V vset(float a) { return _mm512_set1_ps(a); }
static inline V vload(const float *p) { return _mm512_loadu_ps(p); }
static inline void vstore(float *p, V a) { _mm512_storeu_ps(p, a); }
static inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
static inline V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
static inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
static inline V vdiv(V a, V b) { return _mm512_div_ps(a, b); }
static inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
static inline V vmin(V a, V b) { return _mm512_min_ps(a, b); }
static inline V vmax(V a, V b) { return _mm512_max_ps(a, b); }
#define VMATH_SCALEF(p, n) _mm512_scalef_ps(p, n)
/* no VMATH_FRAC: exp2 is v_exp2_nonpos, AVX2's algorithm, so that the two
 * give the same bits (docs/reproducibility.md) */
#define VMATH_ROUND(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* r[i] = row i of a 16 x 16 block in, column i out. After the 32- and
 * 64-bit unpacks, u[4 s + k] holds rows 4 s .. 4 s + 3 of columns k, k + 4,
 * k + 8, k + 12 in its four 128-bit lanes; two rounds of 128-bit shuffles
 * gather each column's four row groups. */
static inline __attribute__((always_inline)) void transpose_w(V r[16])
{
	V t[16], u[16];
	#pragma GCC unroll 16
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
	}
	#pragma GCC unroll 16
	for (int s = 0; s < 16; s += 4)
		#pragma GCC unroll 16
		for (int h = 0; h < 2; h++) {
			__m512d lo = _mm512_castps_pd(t[s + h]), hi = _mm512_castps_pd(t[s + h + 2]);
			u[s + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, hi));
			u[s + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, hi));
		}
	#pragma GCC unroll 16
	for (int k = 0; k < 4; k++) {
		V v0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88);
		V v1 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xdd);
		V w0 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88);
		V w1 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xdd);
		r[k] = _mm512_shuffle_f32x4(v0, w0, 0x88);
		r[k + 8] = _mm512_shuffle_f32x4(v0, w0, 0xdd);
		r[k + 4] = _mm512_shuffle_f32x4(v1, w1, 0x88);
		r[k + 12] = _mm512_shuffle_f32x4(v1, w1, 0xdd);
	}
}

#define SUFFIX(name) name##_avx512
#define ATTN_OPS kiln_attn_avx512
#include "body.h"
