/*
 * gather/gather.h - kiln_gather (gather.c) of 4-byte elements along a last
 * axis of at most 32 in vector registers (avx512.c), or along any last
 * axis with AVX2 gathers (avx2.c), picked by kiln_isa().
 */
#ifndef KILN_GATHER_H
#define KILN_GATHER_H

#include <stdint.h>

/* out[o * n + i] = data[o * axis_len + idx[i]] (idx[i] + axis_len if it is
 * negative) for o < outer, i < n, 4-byte elements (the bits are moved, not
 * converted); 1 <= axis_len <= 32, every index already checked in range.
 * plus_zero: the elements are floats and each gets + 0.0f (-0 becomes +0,
 * as in a GEMM's sum from +0; kiln_f32_select, select.c). */
void kiln_gather32_row_avx512(const void *data, const int64_t *idx, void *out, int64_t outer,
                              int64_t axis_len, int64_t n, int plus_zero);
/* The same for any axis_len (hardware gathers; gather/avx2.c). */
void kiln_gather32_row_avx2(const void *data, const int64_t *idx, void *out, int64_t outer,
                            int64_t axis_len, int64_t n, int plus_zero);

/* kiln_f32_select_sum (select.c) for k <= 32 and parts <= 4, every index
 * already checked: the parts' rows in registers, permuted 16 columns at a
 * time, added in part order and stored (the same bits as the C loop). */
void kiln_select_sum32_avx512(const float *P, const int64_t *src, float *y, int64_t batch,
                              int64_t co, int64_t k, int64_t m, int parts, int relu);

#endif
