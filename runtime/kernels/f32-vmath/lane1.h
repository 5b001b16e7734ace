/*
 * f32-vmath/lane1.h - one float lane as the vector type V of the portable
 * variants (f32-vmath/ref.c, f32-attention/ref.c): the operations their
 * body.h files and exp.h need, in plain C11, vfma by fmaf (rounded once,
 * as the SIMD variants' FMA), vmin/vmax as minps/maxps (the second operand
 * when either is NaN), so that one lane computes the SIMD variants' bits.
 * The including file defines W and what else its body.h needs.
 */
#ifndef KILN_F32_VMATH_LANE1_H
#define KILN_F32_VMATH_LANE1_H

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef float V;

static inline V vset(float a) { return a; }
static inline V vload(const float *p) { return *p; }
static inline void vstore(float *p, V a) { *p = a; }
static inline V vadd(V a, V b) { return a + b; }
static inline V vsub(V a, V b) { return a - b; }
static inline V vmul(V a, V b) { return a * b; }
static inline V vdiv(V a, V b) { return a / b; }
static inline V vfma(V a, V b, V c) { return fmaf(a, b, c); }
static inline V vmin(V a, V b) { return a < b ? a : b; }
static inline V vmax(V a, V b) { return a > b ? a : b; }
static inline uint32_t bits(V a) { uint32_t u; memcpy(&u, &a, sizeof u); return u; }
static inline V from_bits(uint32_t u) { V a; memcpy(&a, &u, sizeof a); return a; }
/* 2^n for integral n in [-126, 127] (exp.h) */
static inline V vexp2i(V n)
{
	int32_t k = n == n ? (int32_t)n : 0;  /* a NaN lane's result is NaN anyway */
	return from_bits((uint32_t)(k + 127) << 23);
}

#endif
