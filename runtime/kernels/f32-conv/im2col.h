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
/* Included by a variant file that defines IM2COL_NAME (the function),
 * IM2COL_COPY_RUN(o, src, lo, hi, len): o[0, lo) = 0, o[lo, hi) = src[0, hi - lo),
 * o[hi, len) = 0, for len <= 32 and src pointing at the first copied float; and
 * IM2COL_GATHER_RUN(o, row, iw, step, W, len): o[u] = row[iw + u*step] where
 * that index lies in [0, W), else 0.
 *
 * Rows [k0, k0 + kc) of the im2col panel of output pixels [n0, n0 + w):
 * row k = (c, i, j) holds X[c, oh*sH - pt + i*dH, ow*sW - pl + j*dW] for each
 * pixel (oh, ow), 0 outside the image. The pixels form runs along output rows,
 * and where each run of each tap (i, j) reads its input does not depend on the
 * channel: that table is made once per panel, so a row costs one copy per run
 * (stride 1) or one gather per run. */
enum { IM2COL_MAX_PLACES = 512 };

typedef struct Im2colPlace {
	int64_t off;             /* the first input float read, from the plane's start */
	int32_t lo, hi;          /* lanes [lo, hi) of the run read it; hi < 0: a gather */
} Im2colPlace;

void IM2COL_NAME(const GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst)
{
	const Im2col *ic = s->ctx;
	const kiln_conv2d_params *p = ic->p;
	const int64_t OW = p->out_w, H = p->in_h, W = p->in_w, kH = p->kernel_h, kW = p->kernel_w;
	const int64_t sH = p->stride_h, sW = p->stride_w, taps = kH * kW;
	int64_t w = kiln_pack_b32_width(s->N, n0);
	int64_t run_oh[KILN_PACK_NR], run_ow[KILN_PACK_NR], run_t[KILN_PACK_NR], run_len[KILN_PACK_NR];
	int nruns = 0;
	for (int64_t t = 0, oh = n0 / OW, ow = n0 % OW; t < w; nruns++, oh++, ow = 0) {
		int64_t len = OW - ow < w - t ? OW - ow : w - t;
		run_oh[nruns] = oh, run_ow[nruns] = ow, run_t[nruns] = t, run_len[nruns] = len;
		t += len;
	}
	/* Where each run of each tap reads, when the table fits; else per row. */
	Im2colPlace places[IM2COL_MAX_PLACES];
	int tabled = taps * nruns <= IM2COL_MAX_PLACES;
	for (int64_t tap = 0; tabled && tap < taps; tap++) {
		int64_t dh = tap / kW * p->dilation_h - p->pad_top;
		int64_t dw = tap % kW * p->dilation_w - p->pad_left;
		for (int q = 0; q < nruns; q++) {
			Im2colPlace *pl = &places[tap * nruns + q];
			int64_t len = run_len[q], ih = run_oh[q] * sH + dh, iw = run_ow[q] * sW + dw;
			if (ih < 0 || ih >= H) {
				*pl = (Im2colPlace){0, (int32_t)len, (int32_t)len};
			} else if (sW == 1) {
				int64_t lo = iw < 0 ? -iw : 0, hi = W - iw < len ? W - iw : len;
				if (lo > len)
					lo = len;
				if (hi < lo)
					hi = lo;
				*pl = (Im2colPlace){ih * W + (iw + lo < W ? iw + lo : 0), (int32_t)lo, (int32_t)hi};
			} else {
				*pl = (Im2colPlace){ih * W, (int32_t)iw, -1};
			}
		}
	}
	int64_t c = k0 / taps, tap = k0 % taps;
	for (int64_t r = 0; r < kc; r++) {
		const float *plane = ic->x + c * H * W;
		float *d = dst + r * w;
		if (tabled) {
			const Im2colPlace *pl = &places[tap * nruns];
			for (int q = 0; q < nruns; q++) {
				float *o = d + run_t[q];
				if (pl[q].hi >= 0)
					IM2COL_COPY_RUN(o, plane + pl[q].off, pl[q].lo, pl[q].hi, run_len[q]);
				else
					IM2COL_GATHER_RUN(o, plane + pl[q].off, pl[q].lo, sW, W, run_len[q]);
			}
		} else {
			int64_t dh = tap / kW * p->dilation_h - p->pad_top;
			int64_t dw = tap % kW * p->dilation_w - p->pad_left;
			for (int q = 0; q < nruns; q++) {
				float *o = d + run_t[q];
				int64_t len = run_len[q], ih = run_oh[q] * sH + dh, iw = run_ow[q] * sW + dw;
				if (ih < 0 || ih >= H)
					IM2COL_COPY_RUN(o, plane, len, len, len);
				else
					IM2COL_GATHER_RUN(o, plane + ih * W, iw, sW, W, len);
			}
		}
		if (++tap == taps)
			tap = 0, c++;
	}
}
#endif
