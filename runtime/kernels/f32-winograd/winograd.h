/*
 * f32-winograd/winograd.h - the Winograd F(2x2, 3x3) convolution's parts
 * shared by its driver (winograd.c) and its variants (not part of libkiln's
 * API: that is kiln_f32_conv2d_winograd in kernels.h).
 *
 * Layouts in the work memory, per block of cb output channels (a multiple of
 * 8) and ts tiles (a multiple of 16), for each of the 16 elements e of a
 * transformed 4x4 tile:
 *   U[e][g][c][8]   the transformed filters, groups g of 8 output channels
 *   V[e][c][ts]     the transformed input tiles
 *   M[e][o][ts]     their products, o < cb
 */
#ifndef KILN_F32_WINOGRAD_H
#define KILN_F32_WINOGRAD_H

#include <stdint.h>

#include "kiln/kernels.h"

enum { WINO_MR = 8, WINO_NV = 16 };

/* M[i][t] = sum_c U[c][i] V[c][t] for i < 8, t < 16 nv (V and M rows ts
 * floats apart, nv a multiple of ... any count of 16-float vectors). */
typedef void (*wino_gemm_fn)(const float *U, const float *V, float *M, int64_t C, int64_t ts,
                             int64_t nv);

void kiln_wino_gemm_ref(const float *U, const float *V, float *M, int64_t C, int64_t ts,
                        int64_t nv);
#ifdef KILN_HAVE_X86_VARIANTS
void kiln_wino_gemm_avx512(const float *U, const float *V, float *M, int64_t C, int64_t ts,
                           int64_t nv);
#endif

#endif
