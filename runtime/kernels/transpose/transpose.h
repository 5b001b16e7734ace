/*
 * transpose/transpose.h - the 4-byte tile of kiln_transpose (transpose.c)
 * in vector registers: avx2.c, picked by kiln_isa().
 */
#ifndef KILN_TRANSPOSE_H
#define KILN_TRANSPOSE_H

#include <stdint.h>

/* Y[i * y_row + j] = X[i + j * x_col] for i < rows, j < cols, 4-byte
 * elements (any type: the bits are moved, not converted). */
typedef void (*Transpose32Tile)(void *y, const void *x, int64_t rows, int64_t cols,
                                int64_t y_row, int64_t x_col);

void kiln_transpose32_tile_avx2(void *y, const void *x, int64_t rows, int64_t cols,
                                int64_t y_row, int64_t x_col);

#endif
