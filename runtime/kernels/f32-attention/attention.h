/*
 * f32-attention/attention.h - the variants of the fused attention kernel
 * (not libkiln's API: the entry point is kiln_f32_attention in kernels.h,
 * dispatched once per call in attention.c).
 *
 * attention.c walks the heads, and each head's query rows in blocks of
 * R = KILN_ATTENTION_ROWS; a variant's `block` does one block whole:
 *   1. Q^T: the block's query rows times the scale and log2 e (the scores
 *      are kept in units of log2 e, the mask too, so that exp is 2^x),
 *      transposed into
 *      Qt[d * R + r] (lanes r >= rows zero), so that one vector holds one
 *      element of W query rows;
 *   2. the scores transposed, P[j * R + r] = Qt[., r] . K[j, .] (+ the mask),
 *      in tiles of keys by vectors of query rows, and their maximum over j
 *      per lane: Softmax runs down the columns of P, lane-wise, with no
 *      horizontal reduction;
 *   3. P = 2^(P - max) (f32-vmath/exp.h: v_exp2_nonpos, 0.95 ulp, in
 *      AVX2 and AVX-512 alike, so that the two give the same bits), the
 *      sums per lane in float in the order of j, linv = 1 / sum (on the
 *      stack);
 *   4. Y[r, c] = linv[r] * sum_j P[j * R + r] V[j, c] in tiles of query rows
 *      by vectors of V's row, stored straight into Y's strided rows.
 * A mask that varies along the query rows is added from P: attention.c
 * copies it there transposed, or, when its rows are contiguous, the variant
 * does (mask_rows: W x W blocks transposed in registers).
 * Only one block's scores exist at a time ([kv_len, R] floats). K and V are
 * read in place when their rows are contiguous (V's also a whole number of
 * 16 floats wide); attention.c packs them into the work memory otherwise.
 * ref.c is plain loops (the same steps, one query row at a time); avx2.c and
 * avx512.c include body.h over their vector type.
 */
#ifndef KILN_F32_ATTENTION_H
#define KILN_F32_ATTENTION_H

#include <stdint.h>

#include "kiln/kernels.h"

typedef struct AttnBlock {
	int rows;                       /* query rows in the block, 1 .. R */
	int64_t kv_len, head_dim, v_dim;
	const float *q;                 /* q[r * qrs + d * qds] */
	int64_t qrs, qds;
	float scale;
	const float *K;                 /* K[j * kld + d] */
	int64_t kld;
	const float *V;                 /* V[j * vld + c], readable up to c < v_dim rounded up to 16 */
	int64_t vld;
	const float *mask_row;          /* NULL, or mask_row[j * mask_js] added to every row's score j */
	int64_t mask_js;
	int mask_t;                     /* P holds the block's mask transposed on entry: added */
	const float *mask_rows;         /* NULL, or the block's mask rows (mask_rows[r * mask_rs + j]),
	                                 * which the variant transposes into P first (mask_t set) */
	int64_t mask_rs;
	float *Qt;                      /* [head_dim, R] work */
	float *P;                       /* [kv_len, R] work */
	float *y;                       /* y[r * yrs + c], r < rows, c < v_dim */
	int64_t yrs;
} AttnBlock;

typedef struct AttnOps {
	void (*block)(const AttnBlock *a);
} AttnOps;

extern const AttnOps kiln_attn_ref, kiln_attn_avx2, kiln_attn_avx512;

#endif
