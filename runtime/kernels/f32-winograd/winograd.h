/*
 * f32-winograd/winograd.h - the Winograd F(2x2, 3x3) convolution's parts
 * shared by its driver (winograd.c) and its variants (not part of libkiln's
 * API: that is kiln_f32_conv2d_winograd in kernels.h).
 *
 * Layouts, for each of the 16 elements e of a transformed 4x4 tile:
 *   U[e][g][c][8]   the transformed filters (compile time, the weights
 *                   object: kiln_f32_conv2d_winograd_pack), groups g of 8
 *                   output channels (zeros past M)
 *   V[e][c][ts]     the transformed input tiles, ts (a multiple of 16) at a
 *                   time, in the work memory; e ve floats apart (C ts and,
 *                   room given, a cache line more, WGeo)
 *   M[e][o][ts]     their products, ms output channels at a time (o < ms);
 *                   e me floats apart (ms ts, and a cache line more likewise)
 */
#ifndef KILN_F32_WINOGRAD_H
#define KILN_F32_WINOGRAD_H

#include <stdint.h>

#include "kiln/kernels.h"

enum { WINO_MR = 8, WINO_CONV_BLOCK = 32 /* the packed weight's (f32-conv/direct.h) */ };

/* The call's geometry: tiles of TH x TW per image, blocks of ts tiles, ms
 * output channels a block of products, U's stride between elements (es:
 * Mp C floats, Mp = M rounded up to 8), the work memory's parts (offsets in
 * floats). */
typedef struct WGeo {
	int64_t TH, TW, tiles, ms, ts, C, M, es, ve, me;
	int64_t v, m, row, floats;
} WGeo;

/* A run of n tiles: image b, tile row ty, tile columns tx0 .., at tile
 * position pos of the block. */
typedef struct WRun {
	int64_t b, ty, tx0, n, pos;
} WRun;

/* The run's input tiles into V (row: scratch of 8 (2 TW + 16) floats). */
typedef void (*wino_inputs_fn)(const kiln_conv2d_params *p, const WGeo *g, const float *X,
                               const WRun *r, float *V, float *row);
/* The run's outputs of channels [o0, o0 + on) from M: + bias, + residual,
 * the activation, to Y. */
typedef void (*wino_outputs_fn)(const kiln_conv2d_params *p, const WGeo *g, const float *Mb,
                                int64_t o0, int64_t on, const WRun *r, const float *bias,
                                float *Y, const kiln_epilogue *ep, float *row);

#ifdef KILN_HAVE_X86_VARIANTS
void kiln_wino_inputs_avx512(const kiln_conv2d_params *p, const WGeo *g, const float *X,
                             const WRun *r, float *V, float *row);
void kiln_wino_outputs_avx512(const kiln_conv2d_params *p, const WGeo *g, const float *Mb,
                              int64_t o0, int64_t on, const WRun *r, const float *bias, float *Y,
                              const kiln_epilogue *ep, float *row);
#endif

/* For each group q of 8 output channels (U + 8 C q), i < 8, t < 16 nv:
 * M[8 q + i][t] = sum_c U[q][c][i] V[c][t] (V and M rows ts floats apart),
 * in every variant one FMA chain over c from 0 (from 0.0f: fmaf(u, v, acc)
 * for c = 0, 1, .., C - 1), so the same bits (issue 30). */
typedef void (*wino_gemm_fn)(const float *U, const float *V, float *M, int64_t C, int64_t ts,
                             int64_t nv, int64_t groups);

void kiln_wino_gemm_ref(const float *U, const float *V, float *M, int64_t C, int64_t ts,
                        int64_t nv, int64_t groups);
#ifdef KILN_HAVE_X86_VARIANTS
void kiln_wino_gemm_avx2(const float *U, const float *V, float *M, int64_t C, int64_t ts,
                         int64_t nv, int64_t groups);
void kiln_wino_gemm_avx512(const float *U, const float *V, float *M, int64_t C, int64_t ts,
                           int64_t nv, int64_t groups);
#endif

#endif
