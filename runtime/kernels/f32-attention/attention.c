/*
 * f32-attention/attention.c - kiln_f32_attention (kernels.h): the head walk
 * and the one dispatch point of the variants (attention.h).
 *
 * Per batch and head: K and V are read where they are when their rows are
 * contiguous (and V's a whole number of 16 floats wide, what the variants'
 * tiles read); otherwise they are packed into the work memory first. Then
 * each block of KILN_ATTENTION_ROWS query rows goes to the variant's
 * `block`, which writes its rows of Y. A mask that varies along the query
 * rows is copied transposed into the block's scores first (by the variant,
 * in registers, when its rows are contiguous); one that is the same for
 * every row (a padding mask) is read by the variant as it is.
 */
#include <stdbool.h>
#include <string.h>

#include "../isa.h"
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
	enum { R = KILN_ATTENTION_ROWS };
	const int64_t Sq = p->q_len, Sk = p->kv_len, dh = p->head_dim, dv = p->v_dim;
	if (p->batch <= 0 || p->heads <= 0 || Sq <= 0 || dv <= 0)
		return;
	const AttnOps *ops = attn_ops();
	const int64_t vp = (dv + 15) / 16 * 16;
	float *Kp = work, *Vp = Kp + Sk * dh, *Qt = Vp + Sk * vp, *P = Qt + R * dh;
	const int64_t *qs = p->q_stride, *ks = p->k_stride, *vs = p->v_stride, *ys = p->y_stride,
	              *ms = p->mask_stride;
	const bool pack_k = ks[3] != 1, pack_v = vs[3] != 1 || dv % 16 != 0;
	for (int64_t b = 0; b < p->batch; b++)
		for (int64_t h = 0; h < p->heads; h++) {
			float *yh = Y + b * ys[0] + h * ys[1];
			if (Sk <= 0) {  /* an empty sum */
				for (int64_t i = 0; i < Sq; i++)
					memset(yh + i * ys[2], 0, (size_t)dv * sizeof *yh);
				continue;
			}
			const float *kh = K + b * ks[0] + h * ks[1], *vh = V + b * vs[0] + h * vs[1];
			AttnBlock a = {.kv_len = Sk, .head_dim = dh, .v_dim = dv, .qrs = qs[2],
			               .qds = qs[3], .scale = p->scale, .K = kh, .kld = ks[2], .V = vh,
			               .vld = vs[2], .Qt = Qt, .P = P, .yrs = ys[2]};
			if (pack_k) {
				for (int64_t j = 0; j < Sk; j++)
					for (int64_t d = 0; d < dh; d++)
						Kp[j * dh + d] = kh[j * ks[2] + d * ks[3]];
				a.K = Kp, a.kld = dh;
			}
			if (pack_v) {
				for (int64_t j = 0; j < Sk; j++)
					for (int64_t c = 0; c < vp; c++)
						Vp[j * vp + c] = c < dv ? vh[j * vs[2] + c * vs[3]] : 0.0f;
				a.V = Vp, a.vld = vp;
			}
			const float *mh = mask ? mask + b * ms[0] + h * ms[1] : NULL;
			if (mask && ms[2] == 0)
				a.mask_row = mh, a.mask_js = ms[3];
			const float *qh = Q + b * qs[0] + h * qs[1];
			for (int64_t i0 = 0; i0 < Sq; i0 += R) {
				a.rows = (int)(Sq - i0 < R ? Sq - i0 : R);
				a.q = qh + i0 * qs[2];
				a.y = yh + i0 * ys[2];
				if (mask && ms[2] != 0 && ms[3] == 1) {
					/* the variant transposes the rows (body.h: pack_mask) */
					a.mask_t = 1;
					a.mask_rows = mh + i0 * ms[2];
					a.mask_rs = ms[2];
				} else if (mask && ms[2] != 0) {
					a.mask_t = 1;
					for (int64_t j = 0; j < Sk; j++)
						for (int r = 0; r < R; r++)
							P[j * R + r] = r < a.rows ? mh[(i0 + r) * ms[2] + j * ms[3]] : 0.0f;
				}
				ops->block(&a);
			}
		}
}
