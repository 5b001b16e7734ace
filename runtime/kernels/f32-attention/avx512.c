/*
 * f32-attention/avx512.c - the AVX-512 variant of the attention products:
 * body.h over 16 float lanes; scores in tiles of 8 rows x 32 columns, the
 * product with V in tiles of 8 rows x 16 columns (16 and 8 zmm accumulators).
 */
#include <immintrin.h>

#include "attention.h"

typedef __m512 V;
enum { W = 16, SC_ROWS = 8, PV_ROWS = 8, PV_VECS = 1 };
static inline V vzero(void) { return _mm512_setzero_ps(); }
static inline V vset(float a) { return _mm512_set1_ps(a); }
static inline V vload(const float *p) { return _mm512_loadu_ps(p); }
static inline void vstore(float *p, V a) { _mm512_storeu_ps(p, a); }
static inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
static inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
static inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }

#define SUFFIX(name) name##_avx512
#define ATTN_OPS kiln_attn_avx512
#include "body.h"
