/*
 * f32-pointwise/pointwise.h - a 1x1 convolution of small planes (not
 * libkiln's API): per image, Y[M, P] = W[M, C] X[C, P] + bias, then ReLU or
 * nothing, for P <= KILN_POINTWISE_MAX_PLANE output pixels, such as the 1x1
 * Conv1d stacks of DeepJet over 25 constituents at batch 1.
 */
#ifndef KILN_F32_POINTWISE_H
#define KILN_F32_POINTWISE_H

#include <stdint.h>

enum { KILN_POINTWISE_MAX_PLANE = 32 };

void kiln_pointwise_avx512(int64_t C, int64_t M, int64_t P, const float *X, const float *W,
                           const float *bias, float *Y, int relu);

#endif
