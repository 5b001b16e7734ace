/*
 * f32-pool/pool.h - the variants of MaxPool's row loops (not libkiln's API):
 * ref.c's plain C, avx2.c and avx512.c, picked by pool_row_ops() (kiln_isa()).
 * Each variant compares in the same order per element (x86's max(a, b) is
 * a > b ? a : b), so all give the same bits.
 */
#ifndef KILN_F32_POOL_H
#define KILN_F32_POOL_H

#include <stdint.h>

typedef struct PoolRowOps {
	/* dst[c] = the largest of rows[0][c] .. rows[n-1][c], for c < len: folded
	 * from -INFINITY by best = v > best ? v : best, so a NaN never wins and
	 * n = 0 gives -INFINITY */
	void (*vmax)(const float *const *rows, int64_t n, float *dst, int64_t len);
	/* y[k] = the largest of t[2k], t[2k+1], t[2k+2], for k < n (3 wide, stride 2:
	 * ResNet's stem), folded as above from t[2k]; t holds no NaN. t may be read up
	 * to t[2n + 32]. */
	void (*hmax3s2)(const float *t, float *y, int64_t n);
	/* a hint: row[0, len) is read soon (ref: nothing) */
	void (*prefetch)(const float *row, int64_t len);
} PoolRowOps;

/* ref.c's hmax3s2: the variants' last outputs */
void kiln_pool_hmax3s2_ref(const float *t, float *y, int64_t n);

extern const PoolRowOps kiln_pool_ref, kiln_pool_avx2, kiln_pool_avx512;

#endif
