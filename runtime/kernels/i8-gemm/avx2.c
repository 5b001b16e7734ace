/*
 * i8-gemm/avx2.c - the blocked integer products (core.h) with AVX2: tiles
 * of 3 rows by 32 columns, four ymm of int32 sums per row; each k pair is
 * one broadcast of a row's two int16 of A' and four vpmaddwd with the
 * panel (products and pair sums exact, i8gemm.h).
 */
#include "tile256.h"

#define I8_GEMM_NAME kiln_i8b_gemm_avx2
#define I8_CONV_NAME kiln_i8b_conv_avx2
#include "core.h"
