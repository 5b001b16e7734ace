/*
 * f32-conv/igemm.c - 2-D convolution (NCHW) through the GEMM core, and the
 * convolutions' one dispatch point.
 *
 * Per image and group, Y[n, g] (Mg x OH*OW) = W[g] (Mg x Cg*kH*kW, row-major
 * as ONNX stores it, so the weights need no repacking) times the im2col
 * matrix of X[n, g] (Cg*kH*kW x OH*OW). That matrix is never built: the GEMM
 * driver asks for one panel of 32 output pixels and at most 256 of its rows at
 * a time (f32-gemm/driver.c), and pack_im2col gathers exactly those from X
 * into the driver's stack buffer, zeros where a tap lands in the padding
 * (implicit GEMM). A 1x1, stride-1, unpadded convolution reads X's rows as B
 * directly. The bias (per output channel: a row of this GEMM), the residual
 * and the activation are the GEMM tile's epilogue, applied before the tile
 * is stored. Depthwise convolutions (one input channel per output channel)
 * and the ref variant keep the direct loops of ref.c.
 */
#include "../f32-epilogue/epilogue.h"
#include "../f32-gemm/gemm.h"
#include "../isa.h"

/* The input image-group that pack_im2col reads. */
typedef struct Im2col {
	const kiln_conv2d_params *p;
	const float *x;          /* X[n, g]: Cg planes of H x W */
} Im2col;

/* Rows [k0, k0 + kc) of the im2col panel of output pixels [n0, n0 + w):
 * row k = (c, i, j) holds X[c, oh*sH - pt + i*dH, ow*sW - pl + j*dW] for each
 * pixel (oh, ow), 0 outside the image. The pixels are walked as runs along one
 * output row, so the inner loop is a copy (stride 1) or a strided gather. */
static void pack_im2col(const GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst)
{
	const Im2col *ic = s->ctx;
	const kiln_conv2d_params *p = ic->p;
	const int64_t OW = p->out_w, H = p->in_h, W = p->in_w, kH = p->kernel_h, kW = p->kernel_w;
	const int64_t sH = p->stride_h, sW = p->stride_w;
	int64_t w = kiln_pack_b32_width(s->N, n0);
	/* The panel's pixels as runs along output rows: found once, used by every row k. */
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
				for (int64_t u = 0; u < len; u++)
					o[u] = 0.0f;
				continue;
			}
			const float *row = plane + ih * W;
			if (sW == 1) {
				/* [lo, hi) of the run lands inside the row; plain loops, since
				 * runs are at most 32 floats, too short for memcpy calls */
				int64_t lo = iw < 0 ? -iw : 0, hi = W - iw < len ? W - iw : len;
				if (lo > len)
					lo = len;
				if (hi < lo)
					hi = lo;
				for (int64_t u = 0; u < lo; u++)
					o[u] = 0.0f;
				for (int64_t u = lo; u < hi; u++)
					o[u] = row[iw + u];
				for (int64_t u = hi; u < len; u++)
					o[u] = 0.0f;
			} else {
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

static void pack_rows(const GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst)
{
	kiln_pack_b32_panel(s->src, s->rs, 1, s->N, n0, k0, kc, dst);
}

static int is_pointwise(const kiln_conv2d_params *p)
{
	return p->kernel_h == 1 && p->kernel_w == 1 && p->stride_h == 1 && p->stride_w == 1 &&
	       p->pad_top == 0 && p->pad_left == 0 && p->out_h == p->in_h && p->out_w == p->in_w;
}

/* The GEMM path, with the epilogue (ep may be NULL; its bias is not used:
 * Conv has its own). */
static void conv_igemm(const kiln_conv2d_params *p, const float *X, const float *W,
                       const float *bias, float *Y, const kiln_epilogue *ep)
{
	const int64_t cg = p->in_channels / p->group, mg = p->out_channels / p->group;
	const int64_t K = cg * p->kernel_h * p->kernel_w, N = p->out_h * p->out_w;
	const int64_t in_plane = p->in_h * p->in_w;
	int pointwise = is_pointwise(p);
	for (int64_t n = 0; n < p->batch; n++)
		for (int64_t g = 0; g < p->group; g++) {
			Im2col ic = {p, X + (n * p->in_channels + g * cg) * in_plane};
			GemmBSrc b = {.pack = pointwise ? pack_rows : pack_im2col, .src = ic.x,
			              .rs = in_plane, .cs = 1, .N = N, .ctx = &ic};
			int64_t y_off = (n * p->out_channels + g * mg) * N;
			GemmEpi e = {.alpha = 1.0f, .beta = 0.0f,
			             .row_bias = bias ? bias + g * mg : NULL,
			             .res = ep && ep->residual ? ep->residual + y_off : NULL, .ldres = N,
			             .ep = ep};
			kiln_gemm_run(mg, N, K, W + g * mg * K, K, &b, Y + y_off, N, &e);
		}
}

/* The direct loops pay off only where a GEMM row would be one weight. */
static int use_igemm(const kiln_conv2d_params *p)
{
	return kiln_isa() != KILN_ISA_REF && p->out_channels / p->group > 1;
}

void kiln_f32_conv2d(const kiln_conv2d_params *p, const float *X, const float *W,
                     const float *bias, float *Y)
{
	if (use_igemm(p))
		conv_igemm(p, X, W, bias, Y, NULL);
	else
		kiln_f32_conv2d_ref(p, X, W, bias, Y);
}

void kiln_f32_conv2d_ep(const kiln_conv2d_params *p, const float *X, const float *W,
                        const float *bias, float *Y, const kiln_epilogue *ep)
{
	if (use_igemm(p)) {
		conv_igemm(p, X, W, bias, Y, ep);
	} else {
		kiln_f32_conv2d_ref(p, X, W, bias, Y);
		kiln_f32_conv_epilogue(p, Y, ep);
	}
}
