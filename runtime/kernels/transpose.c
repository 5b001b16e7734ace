/*
 * transpose.c - ONNX Transpose for any element size: Y = X with its axes
 * permuted.
 *
 * First the permutation is simplified: axes of size 1 are dropped, and output
 * axes that are also neighbours, in the same order, in X are merged into one
 * (e.g. perm (0, 2, 3, 1) on [N, C, H, W] becomes a 2-D transpose of
 * [N, C, H*W]'s last two axes). What remains is walked in output order: an
 * odometer over all but the last two output axes, and a tiled 2-D copy of the
 * last two, so that both the reads and the writes of a tile stay within a few
 * cache lines even when the last output axis is strided in X. A permutation
 * that reduces to one contiguous axis is a single memcpy.
 * Elements are copied with memcpy of a constant size in the fast paths, which
 * compilers turn into one load and store and which is safe for any alignment.
 * A tile of 4-byte elements whose output columns are contiguous in X (the
 * last two axes swapped: [N, A, B] -> [N, B, A] between MatMuls) is moved
 * 8 x 8 at a time in vector registers where the CPU has AVX2
 * (transpose/avx2.c): the same bits.
 */
#include <string.h>

#include "isa.h"
#include "kiln/kernels.h"
#include "transpose/transpose.h"

enum {
	TRANSPOSE_MAX_RANK = 8,
	TRANSPOSE_TILE = 16, /* a tile of 16 x 16 elements: 1 KiB of float */
};

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* A tile of rows x cols elements: Y[i, j] (row stride y_row, contiguous) =
 * X[i * x_row + j * x_col] (strides in elements). elem_bytes is a constant in
 * every call below but the default one, so the memcpy compiles to a move. */
static inline void copy_tile(char *y, const char *x, size_t elem_bytes, int64_t rows,
                             int64_t cols, int64_t y_row, int64_t x_row, int64_t x_col)
{
	for (int64_t i = 0; i < rows; i++) {
		char *yr = y + (size_t)(i * y_row) * elem_bytes;
		const char *xr = x + (size_t)(i * x_row) * elem_bytes;
		for (int64_t j = 0; j < cols; j++)
			memcpy(yr + (size_t)j * elem_bytes, xr + (size_t)(j * x_col) * elem_bytes,
			       elem_bytes);
	}
}

static void copy_tile_any(char *y, const char *x, size_t elem_bytes, int64_t rows, int64_t cols,
                          int64_t y_row, int64_t x_row, int64_t x_col)
{
	switch (elem_bytes) {
	case 1: copy_tile(y, x, 1, rows, cols, y_row, x_row, x_col); break;
	case 2: copy_tile(y, x, 2, rows, cols, y_row, x_row, x_col); break;
	case 4: copy_tile(y, x, 4, rows, cols, y_row, x_row, x_col); break;
	case 8: copy_tile(y, x, 8, rows, cols, y_row, x_row, x_col); break;
	case 16: copy_tile(y, x, 16, rows, cols, y_row, x_row, x_col); break;
	default: copy_tile(y, x, elem_bytes, rows, cols, y_row, x_row, x_col); break;
	}
}

KILN_API void kiln_transpose(const void *X, void *Y, size_t elem_bytes, int rank,
                             const int64_t *in_dims, const int *perm)
{
	int64_t in_strides[TRANSPOSE_MAX_RANK]; /* in elements */
	int64_t dims[TRANSPOSE_MAX_RANK];       /* the simplified output axes ... */
	int64_t strides[TRANSPOSE_MAX_RANK];    /* ... and their strides in X, in elements */
	int64_t total = 1;
	int n = 0;

	if (rank < 0 || rank > TRANSPOSE_MAX_RANK || elem_bytes == 0)
		return;
	for (int i = rank - 1; i >= 0; i--) {
		in_strides[i] = total;
		total *= in_dims[i];
	}
	if (total <= 0)
		return;
	for (int i = 0; i < rank; i++) {
		int64_t d = in_dims[perm[i]], s = in_strides[perm[i]];
		if (d == 1)
			continue;
		if (n > 0 && strides[n - 1] == s * d) {
			/* the previous output axis is this one's outer neighbour in X too */
			dims[n - 1] *= d;
			strides[n - 1] = s;
			continue;
		}
		dims[n] = d;
		strides[n] = s;
		n++;
	}

	const char *x = X;
	char *y = Y;
	Transpose32Tile tile32 = NULL;
#ifdef KILN_HAVE_X86_VARIANTS
	if (elem_bytes == 4 && kiln_isa() >= KILN_ISA_AVX2)
		tile32 = kiln_transpose32_tile_avx2;
#endif
	if (n <= 1) {
		/* at most one axis left: it has stride 1, so the order is unchanged */
		memcpy(y, x, (size_t)total * elem_bytes);
		return;
	}

	/* An odometer over the output axes 0 .. n-3; each step copies one plane
	 * of the last two axes (rows x cols) in tiles. */
	const int64_t rows = dims[n - 2], cols = dims[n - 1];
	const int64_t row_stride = strides[n - 2], col_stride = strides[n - 1];
	int64_t index[TRANSPOSE_MAX_RANK] = {0};
	int64_t x_off = 0; /* in elements: where the current plane starts in X */
	for (int64_t y_off = 0; y_off < total; y_off += rows * cols) {
		for (int64_t i0 = 0; i0 < rows; i0 += TRANSPOSE_TILE)
			for (int64_t j0 = 0; j0 < cols; j0 += TRANSPOSE_TILE) {
				int64_t from = x_off + i0 * row_stride + j0 * col_stride;
				int64_t to = y_off + i0 * cols + j0;
				int64_t tr = min64(TRANSPOSE_TILE, rows - i0), tc = min64(TRANSPOSE_TILE, cols - j0);
				if (tile32 && row_stride == 1)
					tile32(y + (size_t)to * 4, x + (size_t)from * 4, tr, tc, cols, col_stride);
				else
					copy_tile_any(y + (size_t)to * elem_bytes, x + (size_t)from * elem_bytes,
					              elem_bytes, tr, tc, cols, row_stride, col_stride);
			}
		for (int a = n - 3; a >= 0; a--) {
			x_off += strides[a];
			if (++index[a] < dims[a])
				break;
			x_off -= strides[a] * dims[a];
			index[a] = 0;
		}
	}
}
