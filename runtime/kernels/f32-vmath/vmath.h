/*
 * f32-vmath/vmath.h - the variants of the vector math kernels (not part of
 * libkiln's API; the entry points are kiln_f32_unary and kiln_f32_act in
 * kernels.h, dispatched once per call in vmath.c).
 *
 * Each variant file (ref.c, avx2.c, avx512.c) defines a vector type V of W
 * float lanes and the handful of operations on it that body.h needs, then
 * includes body.h, which defines the functions below with the variant's
 * suffix. The algorithm is therefore the same in every variant: ref computes
 * it one lane at a time without FMA, so its results differ from the SIMD
 * variants' by at most about one ulp, and every variant's results depend only
 * on the input value (never on its position or on n), so a run is
 * deterministic for a given ISA.
 */
#ifndef KILN_F32_VMATH_H
#define KILN_F32_VMATH_H

#include "kiln/kernels.h"

/* One entry per variant: y[i] = f(x[i]) for the kiln_unary op. */
void kiln_f32_unary_ref(int op, const float *x, float *y, int64_t n);
void kiln_f32_unary_avx2(int op, const float *x, float *y, int64_t n);
void kiln_f32_unary_avx512(int op, const float *x, float *y, int64_t n);

/* In place: y[i] = act(y[i]) for ep->act (not NONE), one loop per activation. */
void kiln_f32_act_ref(float *y, int64_t n, const kiln_epilogue *ep);
void kiln_f32_act_avx2(float *y, int64_t n, const kiln_epilogue *ep);
void kiln_f32_act_avx512(float *y, int64_t n, const kiln_epilogue *ep);

#endif
