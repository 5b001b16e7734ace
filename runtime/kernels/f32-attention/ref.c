/*
 * f32-attention/ref.c - the reference variant of the fused attention
 * kernel's two products: plain loops, sums in float in index order.
 */
#include "attention.h"

static void scores_ref(const float *q, int64_t qrs, int64_t qds, int rows, const float *Kt,
                       int64_t kp, int64_t head_dim, float scale, const float *mask, int64_t mrs,
                       int64_t kv_len, float *S, int64_t lds)
{
	for (int r = 0; r < rows; r++)
		for (int64_t j = 0; j < kp; j++) {
			float acc = 0.0f;
			for (int64_t d = 0; d < head_dim; d++)
				acc += q[r * qrs + d * qds] * Kt[d * kp + j];
			S[r * lds + j] = acc * scale + (mask && j < kv_len ? mask[r * mrs + j] : 0.0f);
		}
}

static void pv_ref(const float *P, int64_t ldp, int rows, const float *Vp, int64_t vp,
                   int64_t kv_len, int64_t v_dim, float *y, int64_t yrs)
{
	for (int r = 0; r < rows; r++)
		for (int64_t c = 0; c < v_dim; c++) {
			float acc = 0.0f;
			for (int64_t j = 0; j < kv_len; j++)
				acc += P[r * ldp + j] * Vp[j * vp + c];
			y[r * yrs + c] = acc;
		}
}

const AttnOps kiln_attn_ref = {scores_ref, pv_ref};
