/*
 * i8-gemm/avx512.c - the blocked integer products (core.h) with AVX-512BW:
 * tiles of 8 rows by 32 columns, two zmm of int32 sums per row; each k pair
 * is one broadcast of a row's two int16 of A' and two vpmaddwd with the
 * panel (products and pair sums exact, i8gemm.h).
 */
#include "tile512.h"

#define I8_GEMM_NAME kiln_i8b_gemm_avx512
#define I8_CONV_NAME kiln_i8b_conv_avx512
#include "core.h"
