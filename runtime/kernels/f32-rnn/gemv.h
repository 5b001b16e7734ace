/*
 * f32-rnn/gemv.h - the recurrent step of one batch row (not libkiln's API):
 * y[0..N) = x[0..K) B (+ bias), B packed b32 (f32-gemm/pack.h).
 *
 * At batch 1 every time step is this vector-matrix product, and the GEMM
 * core's tile of one row keeps only two accumulator chains, so it waits on
 * the FMA latency. These variants keep eight independent accumulators per
 * 32-column panel (four rows of K at a time), then add them in a fixed order,
 * so a result depends only on the inputs and the variant. rnn.c calls them
 * when kiln_isa() picks the variant; the ref variant runs the GEMM core.
 */
#ifndef KILN_F32_RNN_GEMV_H
#define KILN_F32_RNN_GEMV_H

#include <stdint.h>

void kiln_rnn_gemv_avx2(int64_t N, int64_t K, const float *x, const float *Bp, const float *bias,
                        float *y);
void kiln_rnn_gemv_avx512(int64_t N, int64_t K, const float *x, const float *Bp,
                          const float *bias, float *y);

#endif
