/*
 * f32-conv/igemm.c - 2-D convolution (NCHW) through the GEMM core, and the
 * convolutions' one dispatch point.
 *
 * Per image and group, Y[n, g] (Mg x OH*OW) = W[g] (Mg x Cg*kH*kW, row-major
 * as ONNX stores it, so the weights need no repacking) times the im2col
 * matrix of X[n, g] (Cg*kH*kW x OH*OW). That matrix is never built: the GEMM
 * driver asks for one panel of 32 output pixels and at most 256 of its rows at
 * a time (f32-gemm/driver.c), and the variant's im2col packer (im2col.h)
 * gathers exactly those from X into the driver's stack buffer, zeros where a tap lands in the padding
 * (implicit GEMM). A 1x1, stride-1, unpadded convolution reads X's rows as B
 * in place (packed only when they are a multiple of 4 KiB apart). The bias (per output channel: a row of this GEMM), the residual
 * and the activation are the GEMM tile's epilogue, applied before the tile
 * is stored. Depthwise convolutions (one input channel per output channel)
 * keep the direct loops of ref.c (portable C, the same in every variant).
 */
#include "../f32-epilogue/epilogue.h"
#include "../isa.h"
#include "im2col.h"

/* The ref variant's panel copy: plain loops. */
static inline void copy_run_ref(float *o, const float *src, int64_t lo, int64_t hi, int64_t len)
{
	for (int64_t u = 0; u < lo; u++)
		o[u] = 0.0f;
	for (int64_t u = lo; u < hi; u++)
		o[u] = src[u - lo];
	for (int64_t u = hi; u < len; u++)
		o[u] = 0.0f;
}
static inline void gather_run_ref(float *o, const float *row, int64_t iw, int64_t step, int64_t W,
                                  int64_t len)
{
	for (int64_t u = 0; u < len; u++, iw += step)
		o[u] = iw >= 0 && iw < W ? row[iw] : 0.0f;
}
#define IM2COL_NAME kiln_im2col_ref
#define IM2COL_COPY_RUN copy_run_ref
#define IM2COL_GATHER_RUN gather_run_ref
#include "im2col.h"

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
	void (*im2col)(const GemmBSrc *, int64_t, int64_t, int64_t, float *) = kiln_im2col_ref;
#ifdef KILN_HAVE_X86_VARIANTS
	if (kiln_isa() == KILN_ISA_AVX512)
		im2col = kiln_im2col_avx512;
	else if (kiln_isa() == KILN_ISA_AVX2)
		im2col = kiln_im2col_avx2;
#endif
	for (int64_t n = 0; n < p->batch; n++)
		for (int64_t g = 0; g < p->group; g++) {
			Im2col ic = {p, X + (n * p->in_channels + g * cg) * in_plane};
			GemmBSrc b = {.pack = pointwise ? pack_rows : im2col, .src = ic.x,
			              .rs = in_plane, .cs = 1, .N = N, .ctx = &ic};
			if (pointwise && gemm_b_direct(in_plane))
				b.direct = ic.x, b.ld = in_plane;  /* X's rows are the panel */
			int64_t y_off = (n * p->out_channels + g * mg) * N;
			GemmEpi e = {.alpha = 1.0f, .beta = 0.0f,
			             .row_bias = bias ? bias + g * mg : NULL,
			             .res = ep && ep->residual ? ep->residual + y_off : NULL, .ldres = N,
			             .ep = ep};
			kiln_gemm_run(mg, N, K, W + g * mg * K, K, &b, Y + y_off, N, &e);
		}
}

/* The direct loops pay off only where a GEMM row would be one weight. The
 * ref variant takes the GEMM too: the same driver and K blocks, its tile
 * the same FMA chains, so the same bits as AVX2 and AVX-512 (issue 30; the
 * direct loops round a product and its sum apart and start from the bias). */
static int use_igemm(const kiln_conv2d_params *p)
{
	return p->out_channels / p->group > 1;
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
