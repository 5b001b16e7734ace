/*
 * f32-convchain/ref.c - a chain of 1x1 convolutions (include/kiln/kernels.h,
 * kiln_f32_convchain) run a block of points at a time.
 *
 * Run one after the other, each layer of a 1x1 convolution stack over many
 * points (a Particle Transformer's pair embedding: 4 -> 64 -> 64 -> 8
 * channels over 1540 pairs per jet) writes its [N, width, P] output to
 * memory and the next layer reads it back: 6.3 MB a layer at batch 16. Here
 * each sample's points go through all the layers in blocks of B points
 * (kiln_f32_convchain_block: two blocks of the widest inner layer stay in
 * L2), ping-ponging between two block buffers; only X and Y are read and
 * written whole.
 *
 * Every layer is the product kiln_f32_conv2d_ep runs for a 1x1 convolution
 * (f32-conv/igemm.c): W_l (rows read in place) by the block's columns of
 * h_(l-1) (rows read in place, or packed on the fly where they are a
 * multiple of 4 KiB apart), the bias per row and the activation in the
 * GEMM's epilogue, one K block (at most GEMM_KBLOCK input channels, which
 * the compiler checks). An element's sum, bias and activation depend only
 * on its row and column, never on which columns share a call, so the
 * result is the chain's bits under every ISA (kiln_gemm_run's variant) and
 * batch size.
 */
#include "../f32-gemm/gemm.h"
#include "kiln/kernels.h"

enum { BLOCK_FLOATS = 16384 };   /* floats of one block buffer (64 KiB) */

static int64_t widest_inner(const kiln_convchain_params *p)
{
	int64_t w = 0;
	for (int l = 0; l + 1 < p->nlayers; l++)
		if (p->width[l] > w)
			w = p->width[l];
	return w;
}

int64_t kiln_f32_convchain_block(const kiln_convchain_params *p)
{
	int64_t w = widest_inner(p), b = w > 0 ? BLOCK_FLOATS / w / KILN_PACK_NR * KILN_PACK_NR : 0;
	if (b < KILN_PACK_NR)
		b = KILN_PACK_NR;
	return b < p->points ? b : p->points;
}

int64_t kiln_f32_convchain_work(const kiln_convchain_params *p)
{
	return 2 * kiln_f32_convchain_block(p) * widest_inner(p);
}

static void pack_rows(const GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst)
{
	kiln_pack_b32_panel(s->src, s->rs, 1, s->N, n0, k0, kc, dst);
}

/* C[M, N] (ldc) = act(W [M, K] B + bias), B's rows ldb apart. */
static void layer(int64_t M, int64_t N, int64_t K, const float *W, const float *B, int64_t ldb,
                  const float *bias, const kiln_epilogue *act, float *C, int64_t ldc)
{
	GemmBSrc b = {.pack = pack_rows, .src = B, .rs = ldb, .cs = 1, .N = N};
	if (gemm_b_direct(ldb))
		b.direct = B, b.ld = ldb;
	GemmEpi e = {.alpha = 1.0f, .beta = 0.0f, .row_bias = bias,
	             .ep = act->act != KILN_ACT_NONE ? act : NULL};
	kiln_gemm_run(M, N, K, W, K, &b, C, ldc, &e);
}

void kiln_f32_convchain(const kiln_convchain_params *p, const float *X, float *Y, float *work)
{
	const int64_t C = p->channels, P = p->points, L = p->nlayers;
	const int64_t WL = p->width[L - 1], B = kiln_f32_convchain_block(p);
	float *h[2] = {work, work + B * widest_inner(p)};
	for (int64_t n = 0; n < p->batch; n++) {
		const float *x = X + n * C * P;
		float *y = Y + n * WL * P;
		for (int64_t p0 = 0; p0 < P; p0 += B) {
			int64_t nb = P - p0 < B ? P - p0 : B;
			const float *src = x + p0;
			int64_t ld = P, cin = C;
			for (int l = 0; l < L; l++) {
				float *dst = l + 1 < L ? h[l & 1] : y + p0;
				int64_t ldd = l + 1 < L ? nb : P;
				layer(p->width[l], nb, cin, p->w[l], src, ld, p->bias[l], &p->act[l], dst, ldd);
				src = dst, ld = ldd, cin = p->width[l];
			}
		}
	}
}
