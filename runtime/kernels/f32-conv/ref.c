/*
 * f32-conv/ref.c - the reference float32 2-D convolution (ONNX Conv, NCHW,
 * groups, dilations, asymmetric pads).
 *
 * Direct loops, arranged so the innermost loop is a contiguous (or, with a
 * horizontal stride, evenly strided) run along one output row: for every
 * output plane, start from the bias, then for every input channel and kernel
 * tap add weight * input over the rectangle of outputs whose tap lands inside
 * the input. Computing that rectangle once per tap (tap_range) removes all
 * bounds tests from the inner loop and is what makes padding free: outputs
 * whose tap falls in the padding are simply not visited.
 * A 1x1 convolution with unit strides and no padding is a matrix product per
 * image and group, so it goes through the reference GEMM instead. The fast
 * path is igemm.c, the dispatch point of kiln_f32_conv2d.
 * Sums accumulate in float, in the order channel, kh, kw.
 */
#include "../f32-gemm/gemm.h"

/* The outputs o in [0, out_len) whose input position o * stride + offset lies
 * in [0, in_len) form one interval; return it as [*lo, *hi) (empty if
 * *lo >= *hi). stride >= 1. */
static void tap_range(int64_t offset, int64_t stride, int64_t in_len, int64_t out_len,
                      int64_t *lo, int64_t *hi)
{
	/* smallest o with o * stride + offset >= 0 */
	int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
	/* one past the largest o with o * stride + offset <= in_len - 1 */
	int64_t last = in_len - 1 - offset < 0 ? 0 : (in_len - 1 - offset) / stride + 1;
	*lo = first;
	*hi = last < out_len ? last : out_len;
}

/* Pointwise convolution: Y[n, g] (Mg x HW) = W[g] (Mg x Cg) X[n, g] (Cg x HW) + bias. */
static void conv_1x1(const kiln_conv2d_params *p, const float *X, const float *W,
                     const float *bias, float *Y)
{
	int64_t hw = p->in_h * p->in_w;
	int64_t cg = p->in_channels / p->group, mg = p->out_channels / p->group;
	for (int64_t n = 0; n < p->batch; n++)
		for (int64_t g = 0; g < p->group; g++) {
			float *y = Y + (n * p->out_channels + g * mg) * hw;
			for (int64_t m = 0; m < mg; m++)
				for (int64_t i = 0; i < hw; i++)
					y[m * hw + i] = bias ? bias[g * mg + m] : 0.0f;
			kiln_f32_gemm_ref(mg, hw, cg, 1.0f, W + g * mg * cg, cg, 1,
			              X + (n * p->in_channels + g * cg) * hw, hw, 1, 1.0f, y, hw);
		}
}

/* One output plane y (OH x OW) += w * one input plane x (H x W), for the kernel
 * tap at row offset off_h and column offset off_w (tap position minus pad). */
static void accumulate_tap(const kiln_conv2d_params *p, float w, const float *x, int64_t off_h,
                           int64_t off_w, float *y)
{
	const int64_t sH = p->stride_h, sW = p->stride_w, OW = p->out_w;
	int64_t oh_lo, oh_hi, ow_lo, ow_hi;
	tap_range(off_h, sH, p->in_h, p->out_h, &oh_lo, &oh_hi);
	tap_range(off_w, sW, p->in_w, OW, &ow_lo, &ow_hi);
	for (int64_t oh = oh_lo; oh < oh_hi; oh++) {
		/* the input row; tap_range keeps every index below inside it */
		const float *xr = x + (oh * sH + off_h) * p->in_w;
		float *yr = y + oh * OW;
		if (sW == 1)
			for (int64_t ow = ow_lo; ow < ow_hi; ow++)
				yr[ow] += w * xr[ow + off_w];
		else
			for (int64_t ow = ow_lo; ow < ow_hi; ow++)
				yr[ow] += w * xr[ow * sW + off_w];
	}
}

/* What depthwise convolutions run in every variant (igemm.c dispatches),
 * and what the GEMM path is tested against. */
void kiln_f32_conv2d_ref(const kiln_conv2d_params *p, const float *X, const float *W,
                         const float *bias, float *Y)
{
	const int64_t kH = p->kernel_h, kW = p->kernel_w;
	const int64_t in_plane = p->in_h * p->in_w, out_plane = p->out_h * p->out_w;
	const int64_t cg = p->in_channels / p->group, mg = p->out_channels / p->group;

	if (kH == 1 && kW == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
	    p->pad_left == 0 && p->out_h == p->in_h && p->out_w == p->in_w) {
		conv_1x1(p, X, W, bias, Y);
		return;
	}
	for (int64_t n = 0; n < p->batch; n++)
		for (int64_t m = 0; m < p->out_channels; m++) {
			int64_t g = m / mg;
			float *y = Y + (n * p->out_channels + m) * out_plane;
			float start = bias ? bias[m] : 0.0f;
			for (int64_t i = 0; i < out_plane; i++)
				y[i] = start;
			for (int64_t c = 0; c < cg; c++) {
				const float *x = X + (n * p->in_channels + g * cg + c) * in_plane;
				const float *w = W + (m * cg + c) * kH * kW;
				for (int64_t kh = 0; kh < kH; kh++)
					for (int64_t kw = 0; kw < kW; kw++)
						accumulate_tap(p, w[kh * kW + kw], x,
						               kh * p->dilation_h - p->pad_top,
						               kw * p->dilation_w - p->pad_left, y);
			}
		}
}

/* The packed convolution's portable tile (direct.h). */
#define CONV_TILE_NAME kiln_conv_tile_ref
#define CONV_TILE_NP CONV_NP_REF
#include "direct.h"
