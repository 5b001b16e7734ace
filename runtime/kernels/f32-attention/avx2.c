/*
 * f32-attention/avx2.c - the AVX2 + FMA variant of the attention products:
 * body.h over 8 float lanes; scores in tiles of 4 rows x 16 columns, the
 * product with V in tiles of 4 rows x 16 columns (8 ymm accumulators each).
 */
#include <immintrin.h>

#include "attention.h"

typedef __m256 V;
enum { W = 8, SC_ROWS = 4, PV_ROWS = 4, PV_VECS = 2 };
static inline V vzero(void) { return _mm256_setzero_ps(); }
static inline V vset(float a) { return _mm256_set1_ps(a); }
static inline V vload(const float *p) { return _mm256_loadu_ps(p); }
static inline void vstore(float *p, V a) { _mm256_storeu_ps(p, a); }
static inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
static inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
static inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }

#define SUFFIX(name) name##_avx2
#define ATTN_OPS kiln_attn_avx2
#include "body.h"
