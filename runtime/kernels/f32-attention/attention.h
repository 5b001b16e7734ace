/*
 * f32-attention/attention.h - the variants of the fused attention kernel
 * (not libkiln's API: the entry point is kiln_f32_attention in kernels.h,
 * dispatched once per call in attention.c).
 *
 * attention.c walks the heads: it packs one head's K transposed ([head_dim,
 * kp], kp = kv_len rounded up to 32, zero padded) and V ([kv_len, vp], vp =
 * v_dim rounded up to 16, zero padded) into the work memory, then for each
 * block of at most KILN_ATTENTION_ROWS query rows calls the variant's
 * `scores`, Softmax on each row (f32-vmath's softmax_line) and the variant's
 * `pv`. ref.c is plain loops; avx2.c and avx512.c include body.h over their
 * vector type (register tiles of query rows by packed columns).
 */
#ifndef KILN_F32_ATTENTION_H
#define KILN_F32_ATTENTION_H

#include <stdint.h>

#include "kiln/kernels.h"

typedef struct AttnOps {
	/* S[r*lds + j] = scale * sum_d q[r*qrs + d*qds] * Kt[d*kp + j] (+ mask[r*mrs + j]
	 * if mask is not NULL, j < kv_len) for r < rows, j < kp */
	void (*scores)(const float *q, int64_t qrs, int64_t qds, int rows, const float *Kt,
	               int64_t kp, int64_t head_dim, float scale, const float *mask, int64_t mrs,
	               int64_t kv_len, float *S, int64_t lds);
	/* y[r*yrs + c] = sum_{j < kv_len} P[r*ldp + j] * Vp[j*vp + c] for r < rows, c < v_dim */
	void (*pv)(const float *P, int64_t ldp, int rows, const float *Vp, int64_t vp,
	           int64_t kv_len, int64_t v_dim, float *y, int64_t yrs);
} AttnOps;

extern const AttnOps kiln_attn_ref, kiln_attn_avx2, kiln_attn_avx512;

#endif
