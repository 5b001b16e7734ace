/*
 * f32-attention/ref.c - the reference variant of the attention block: one
 * query row at a time in plain loops, the same steps as body.h (the query
 * scaled first, the mask added, exp by f32-vmath's reference variant, the
 * sum in float in the order of j), sums of products in float in index order.
 */
#include <math.h>

#include "../f32-vmath/vmath.h"
#include "attention.h"

enum { R = KILN_ATTENTION_ROWS };

static void block_ref(const AttnBlock *a)
{
	const int64_t dh = a->head_dim, n = a->kv_len;
	float *qs = a->Qt;  /* the row's scaled query */
	for (int r = 0; r < a->rows; r++) {
		float *s = a->P + r;  /* its scores: column r of P, where its mask is */
		for (int64_t d = 0; d < dh; d++)
			qs[d] = a->q[r * a->qrs + d * a->qds] * a->scale;
		float m = -INFINITY;
		for (int64_t j = 0; j < n; j++) {
			float acc = 0.0f;
			for (int64_t d = 0; d < dh; d++)
				acc += qs[d] * a->K[j * a->kld + d];
			if (a->mask_t)
				acc += s[j * R];
			else if (a->mask_row)
				acc += a->mask_row[j * a->mask_js];
			s[j * R] = acc;
			m = acc > m || acc != acc ? acc : m;
		}
		float l = 0.0f;
		for (int64_t j0 = 0; j0 < n; j0 += 64) {
			float e[64];
			int64_t len = n - j0 < 64 ? n - j0 : 64;
			for (int64_t t = 0; t < len; t++)
				e[t] = s[(j0 + t) * R] - m;
			kiln_vmath_ref.unary(KILN_UNARY_EXP, e, e, len);
			for (int64_t t = 0; t < len; t++)
				l += e[t], s[(j0 + t) * R] = e[t];
		}
		const float inv = 1.0f / l;
		for (int64_t c = 0; c < a->v_dim; c++) {
			float acc = 0.0f;
			for (int64_t j = 0; j < n; j++)
				acc += s[j * R] * a->V[j * a->vld + c];
			a->y[r * a->yrs + c] = acc * inv;
		}
	}
}

const AttnOps kiln_attn_ref = {block_ref};
