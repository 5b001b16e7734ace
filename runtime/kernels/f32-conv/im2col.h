/*
 * f32-conv/im2col.h - the implicit im2col panel of the GEMM convolution
 * (igemm.c), written once and compiled into each ISA variant file with that
 * variant's copy of a run (IM2COL_COPY_RUN: ref loops, AVX2 or AVX-512 masked
 * moves), so the panel is built at the variant's vector width.
 */
#ifndef KILN_F32_IM2COL_H
#define KILN_F32_IM2COL_H

#include "../f32-gemm/gemm.h"

/* The input image-group that pack_im2col reads (GemmBSrc.ctx). */
typedef struct Im2col {
	const kiln_conv2d_params *p;
	const float *x;          /* X[n, g]: Cg planes of H x W */
} Im2col;

/* Each variant's panel packer (GemmBSrc.pack). */
void kiln_im2col_ref(const GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst);
void kiln_im2col_avx2(const GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst);
void kiln_im2col_avx512(const GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst);

#endif

#ifdef IM2COL_NAME
/* Included by a variant file that defines IM2COL_NAME (the function) and
 * IM2COL_COPY_RUN(o, src, lo, hi, len): o[0, lo) = 0, o[lo, hi) = src[0, hi - lo),
 * o[hi, len) = 0, for len <= 32 and src pointing at the first copied float.
 *
 * Rows [k0, k0 + kc) of the im2col panel of output pixels [n0, n0 + w):
 * row k = (c, i, j) holds X[c, oh*sH - pt + i*dH, ow*sW - pl + j*dW] for each
 * pixel (oh, ow), 0 outside the image. The pixels are walked as runs along one
 * output row (found once per panel), so each run is one masked copy (stride 1)
 * or a strided gather. */
void IM2COL_NAME(const GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst)
{
	const Im2col *ic = s->ctx;
	const kiln_conv2d_params *p = ic->p;
	const int64_t OW = p->out_w, H = p->in_h, W = p->in_w, kH = p->kernel_h, kW = p->kernel_w;
	const int64_t sH = p->stride_h, sW = p->stride_w;
	int64_t w = kiln_pack_b32_width(s->N, n0);
	int64_t run_oh[KILN_PACK_NR], run_ow[KILN_PACK_NR], run_t[KILN_PACK_NR], run_len[KILN_PACK_NR];
	int nruns = 0;
	for (int64_t t = 0, oh = n0 / OW, ow = n0 % OW; t < w; nruns++, oh++, ow = 0) {
		int64_t len = OW - ow < w - t ? OW - ow : w - t;
		run_oh[nruns] = oh, run_ow[nruns] = ow, run_t[nruns] = t, run_len[nruns] = len;
		t += len;
	}
	/* row k = (c, i, j), stepped without dividing */
	int64_t c = k0 / (kH * kW), i = k0 / kW % kH, j = k0 % kW;
	for (int64_t r = 0; r < kc; r++) {
		const float *plane = ic->x + c * H * W;
		int64_t dh = i * p->dilation_h - p->pad_top, dw = j * p->dilation_w - p->pad_left;
		float *d = dst + r * w;
		for (int q = 0; q < nruns; q++) {
			float *o = d + run_t[q];
			int64_t len = run_len[q], ih = run_oh[q] * sH + dh, iw = run_ow[q] * sW + dw;
			if (ih < 0 || ih >= H) {
				IM2COL_COPY_RUN(o, plane, len, len, len);
			} else if (sW == 1) {
				/* [lo, hi) of the run lands inside the row */
				int64_t lo = iw < 0 ? -iw : 0, hi = W - iw < len ? W - iw : len;
				if (lo > len)
					lo = len;
				if (hi < lo)
					hi = lo;
				const float *row = plane + ih * W;
				IM2COL_COPY_RUN(o, row + (iw + lo < W ? iw + lo : 0), lo, hi, len);
			} else {
				const float *row = plane + ih * W;
				for (int64_t u = 0; u < len; u++, iw += sW)
					o[u] = iw >= 0 && iw < W ? row[iw] : 0.0f;
			}
		}
		if (++j == kW) {
			j = 0;
			if (++i == kH)
				i = 0, c++;
		}
	}
}
#endif
