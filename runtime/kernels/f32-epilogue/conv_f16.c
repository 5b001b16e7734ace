/*
 * f32-epilogue/conv_f16.c - 2-D convolution (and so 1-D) reading float16
 * weights: `--weights-dtype fp16` stores Conv weights at half the bytes,
 * and no float32 copy of them exists at run time either.
 *
 * The weights of a block of output channels (within one group) are widened
 * into a stack panel, then the float32 kernel convolves that block as a
 * convolution of its own (one image, one group, the block's channels), so
 * the 1x1 GEMM path and the direct loops are shared with kiln_f32_conv2d and
 * the sums are the same. A single output channel whose weights exceed the
 * panel (C/group * kH * kW > 16384) takes a direct loop that widens one tap
 * at a time. The epilogue (residual, activation) follows, as in
 * kiln_f32_conv2d_ep.
 */
#include "epilogue.h"

enum { PANEL = 16384 }; /* floats: 64 KiB on the stack, no allocation */

/* Output channel m of image n, direct loops with bounds tests, each tap's
 * weight widened when it is used. */
static void conv_channel_by_tap(const kiln_conv2d_params *p, const float *X, const uint16_t *W,
                                const float *bias, float *Y, int64_t n, int64_t m)
{
	const int64_t cg = p->in_channels / p->group, mg = p->out_channels / p->group;
	const int64_t kH = p->kernel_h, kW = p->kernel_w, g = m / mg;
	const int64_t in_plane = p->in_h * p->in_w, out_plane = p->out_h * p->out_w;
	float *y = Y + (n * p->out_channels + m) * out_plane;
	for (int64_t i = 0; i < out_plane; i++)
		y[i] = bias ? bias[m] : 0.0f;
	for (int64_t c = 0; c < cg; c++) {
		const float *x = X + (n * p->in_channels + g * cg + c) * in_plane;
		for (int64_t kh = 0; kh < kH; kh++)
			for (int64_t kw = 0; kw < kW; kw++) {
				float w = kiln_f16_to_f32(W[((m * cg + c) * kH + kh) * kW + kw]);
				for (int64_t oh = 0; oh < p->out_h; oh++) {
					int64_t ih = oh * p->stride_h - p->pad_top + kh * p->dilation_h;
					if (ih < 0 || ih >= p->in_h)
						continue;
					for (int64_t ow = 0; ow < p->out_w; ow++) {
						int64_t iw = ow * p->stride_w - p->pad_left + kw * p->dilation_w;
						if (iw >= 0 && iw < p->in_w)
							y[oh * p->out_w + ow] += w * x[ih * p->in_w + iw];
					}
				}
			}
	}
}

void kiln_f32_conv2d_f16w(const kiln_conv2d_params *p, const float *X, const uint16_t *W,
                          const float *bias, float *Y, const kiln_epilogue *ep)
{
	const int64_t cg = p->in_channels / p->group, mg = p->out_channels / p->group;
	const int64_t per = cg * p->kernel_h * p->kernel_w; /* weights per output channel */
	const int64_t in_plane = p->in_h * p->in_w, out_plane = p->out_h * p->out_w;
	if (per > PANEL || per == 0) {
		for (int64_t n = 0; n < p->batch; n++)
			for (int64_t m = 0; m < p->out_channels; m++)
				conv_channel_by_tap(p, X, W, bias, Y, n, m);
		kiln_f32_conv_epilogue(p, Y, ep);
		return;
	}
	float panel[PANEL];
	const int64_t block = PANEL / per; /* output channels per panel, >= 1 */
	for (int64_t g = 0; g < p->group; g++)
		for (int64_t m0 = 0; m0 < mg; m0 += block) {
			int64_t mb = mg - m0 < block ? mg - m0 : block;
			int64_t first = g * mg + m0; /* the block's first output channel */
			kiln_f16_widen(W + first * per, 1, panel, mb * per);
			kiln_conv2d_params q = *p;
			q.batch = 1;
			q.in_channels = cg;
			q.out_channels = mb;
			q.group = 1;
			for (int64_t n = 0; n < p->batch; n++)
				kiln_f32_conv2d(&q, X + (n * p->in_channels + g * cg) * in_plane, panel,
				                bias ? bias + first : NULL,
				                Y + (n * p->out_channels + first) * out_plane);
		}
	kiln_f32_conv_epilogue(p, Y, ep);
}
