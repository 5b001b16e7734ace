/*
 * f32-attention/attention.c - kiln_f32_attention (kernels.h): the head walk
 * and the one dispatch point of the variants (attention.h).
 *
 * Per batch and head: K is packed transposed and V packed row-major into the
 * caller's work memory (zero padded to the variants' widths), then each
 * block of KILN_ATTENTION_ROWS query rows gets its scores (scaled, plus the
 * mask), a Softmax per row in place (f32-vmath: the maximum subtracted
 * first, the sum in double) and its product with V, written straight into
 * Y's strided rows. Only one block's scores exist at a time.
 */
#include <stdbool.h>
#include <string.h>

#include "../isa.h"
#include "../f32-vmath/vmath.h"
#include "attention.h"

static const AttnOps *attn_ops(void)
{
#if defined(KILN_HAVE_X86_VARIANTS)
	switch (kiln_isa()) {
	case KILN_ISA_AVX512: return &kiln_attn_avx512;
	case KILN_ISA_AVX2: return &kiln_attn_avx2;
	default: break;
	}
#endif
	return &kiln_attn_ref;
}

KILN_API void kiln_f32_attention(const kiln_attention_params *p, const float *Q, const float *K,
                                 const float *V, const float *mask, float *Y, float *work)
{
	const int64_t Sq = p->q_len, Sk = p->kv_len, dh = p->head_dim, dv = p->v_dim;
	if (p->batch <= 0 || p->heads <= 0 || Sq <= 0 || dv <= 0)
		return;
	const AttnOps *ops = attn_ops();
	const VmathOps *vm = vmath_ops();
	const int64_t kp = (Sk + 31) / 32 * 32, vp = (dv + 15) / 16 * 16;
	float *Kt = work, *Vp = work + dh * kp, *S = Vp + kp * vp;
	const int64_t *qs = p->q_stride, *ks = p->k_stride, *vs = p->v_stride, *ys = p->y_stride,
	              *ms = p->mask_stride;
	/* the mask goes through the variant when its rows are contiguous */
	const bool mask_rows = mask && ms[3] == 1;
	for (int64_t b = 0; b < p->batch; b++)
		for (int64_t h = 0; h < p->heads; h++) {
			float *yh = Y + b * ys[0] + h * ys[1];
			if (Sk <= 0) {  /* an empty sum */
				for (int64_t i = 0; i < Sq; i++)
					memset(yh + i * ys[2], 0, (size_t)dv * sizeof *yh);
				continue;
			}
			const float *kh = K + b * ks[0] + h * ks[1], *vh = V + b * vs[0] + h * vs[1];
			memset(Kt, 0, (size_t)(dh * kp) * sizeof *Kt);
			for (int64_t j = 0; j < Sk; j++)
				for (int64_t d = 0; d < dh; d++)
					Kt[d * kp + j] = kh[j * ks[2] + d * ks[3]];
			for (int64_t j = 0; j < Sk; j++) {
				float *row = Vp + j * vp;
				for (int64_t c = 0; c < dv; c++)
					row[c] = vh[j * vs[2] + c * vs[3]];
				for (int64_t c = dv; c < vp; c++)
					row[c] = 0.0f;
			}
			const float *qh = Q + b * qs[0] + h * qs[1];
			const float *mh = mask ? mask + b * ms[0] + h * ms[1] : NULL;
			for (int64_t i0 = 0; i0 < Sq; i0 += KILN_ATTENTION_ROWS) {
				int rows = (int)(Sq - i0 < KILN_ATTENTION_ROWS ? Sq - i0 : KILN_ATTENTION_ROWS);
				ops->scores(qh + i0 * qs[2], qs[2], qs[3], rows, Kt, kp, dh, p->scale,
				            mask_rows ? mh + i0 * ms[2] : NULL, ms[2], Sk, S, kp);
				for (int r = 0; r < rows; r++) {
					float *s = S + r * kp;
					if (mask && !mask_rows)
						for (int64_t j = 0; j < Sk; j++)
							s[j] += mh[(i0 + r) * ms[2] + j * ms[3]];
					vm->softmax_line(s, s, Sk, 0);
				}
				ops->pv(S, kp, rows, Vp, vp, Sk, dv, yh + i0 * ys[2], ys[2]);
			}
		}
}
