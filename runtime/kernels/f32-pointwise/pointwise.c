/*
 * f32-pointwise/pointwise.c - kiln_f32_conv2d_small: the dispatch point of
 * the small 1x1 convolution (pointwise.h). The AVX-512 variant takes a 1x1,
 * stride-1, unpadded, ungrouped convolution of at most 32 output pixels
 * with ReLU or no activation and no residual, of at most GEMM_KBLOCK input
 * channels (one K block of the GEMM's order, which it follows: the same
 * bits); anything else, and every other variant, goes to
 * kiln_f32_conv2d_ep, so the result is the same convolution either way.
 */
#include "../f32-gemm/gemm.h"
#include "../isa.h"
#include "kiln/kernels.h"
#include "pointwise.h"

static int small_pointwise(const kiln_conv2d_params *p, const kiln_epilogue *ep)
{
	return p->kernel_h == 1 && p->kernel_w == 1 && p->stride_h == 1 && p->stride_w == 1 &&
	       p->dilation_h == 1 && p->dilation_w == 1 && p->pad_top == 0 && p->pad_left == 0 &&
	       p->pad_bottom == 0 && p->pad_right == 0 && p->group == 1 && p->in_channels <= GEMM_KBLOCK && p->out_h == p->in_h &&
	       p->out_w == p->in_w && p->out_h * p->out_w <= KILN_POINTWISE_MAX_PLANE &&
	       (!ep || (!ep->residual && (ep->act == KILN_ACT_NONE || ep->act == KILN_ACT_RELU)));
}

void kiln_f32_conv2d_small(const kiln_conv2d_params *p, const float *X, const float *W,
                           const float *bias, float *Y, const kiln_epilogue *ep)
{
#ifdef KILN_HAVE_X86_VARIANTS
	if (kiln_isa() == KILN_ISA_AVX512 && small_pointwise(p, ep)) {
		int64_t C = p->in_channels, M = p->out_channels, P = p->out_h * p->out_w;
		int relu = ep && ep->act == KILN_ACT_RELU;
		for (int64_t n = 0; n < p->batch; n++)
			kiln_pointwise_avx512(C, M, P, X + n * C * P, W, bias, Y + n * M * P, relu);
		return;
	}
#endif
	kiln_f32_conv2d_ep(p, X, W, bias, Y, ep);
}
