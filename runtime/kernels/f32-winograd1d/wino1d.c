/*
 * f32-winograd1d/wino1d.c - the 1-D convolution of 3 taps (stride 1, no
 * dilation, no groups) by Winograd's minimal filtering F(4, 3)
 * (kiln_f32_conv1d_wino): each run of 4 outputs (a tile) of each output
 * channel from a window of 6 inputs of each input channel in 6
 * multiplications instead of 12:
 *   y = A^T [ sum_c (G g) . (B^T d) ]
 * with g the 3 taps, d the 6 inputs, . elementwise, on the points 0, 1, -1,
 * 2, -2 and infinity:
 *   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0;
 *          0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
 *   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6;
 *          1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
 *   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
 * The sum over c is 6 matrix products, one per point e:
 *   M[e] (M x tiles) = U[e] (M x C) V[e] (C x tiles).
 *
 * One result on every CPU (issue 30, docs/reproducibility.md): the compiler
 * chooses this path from the Conv's shape alone (ops/conv_algo.c); the
 * filters are transformed at compile time (kiln_f32_conv1d_wino_pack, in
 * double, rounded once); the input and output transforms are the
 * portable C of transform.h for ref and AVX2 (plain float operations in a
 * fixed order, multiplications only by 2, 4 and 8) and the same operations
 * in AVX-512 intrinsics (avx512.c); and each product M[e] is one FMA chain
 * over c from 0, + 0.0f, in every variant: ref and AVX2 run the packed
 * direct convolution's tile (f32-conv/direct.h) over K = C, AVX-512 its own
 * kernel with output channels in lanes (M a multiple of 32; else the direct
 * tile too). Lanes are always independent tiles or channels. A tile never
 * straddles two images: each image's tiles are its own columns, so an
 * image's outputs do not depend on the batch it runs in or on the chunk its
 * columns share.
 */
#include <string.h>

#include "../f32-conv/direct.h"
#include "../isa.h"
#define WINO_TRANSFORM_SUFFIX ref
#include "transform.h"

enum {
	WINO_A = 6,                  /* points (products per tile) */
	WINO_M = 4,                  /* outputs per tile */
	WINO_MIN_CHANNELS = 16,
	WINO_MIN_OUT = 8,
	WINO_MAX_PAD = 2,
	CHUNK_BYTES = 512 * 1024,    /* V and M of the images transformed together */
	SLACK = 64,                  /* floats a tile may read past V's end */
};

int kiln_f32_conv1d_wino_takes(const kiln_conv2d_params *p)
{
	return p->group == 1 && p->kernel_h == 1 && p->in_h == 1 && p->out_h == 1 &&
	       p->pad_top == 0 && p->pad_bottom == 0 && p->stride_h == 1 && p->kernel_w == 3 &&
	       p->stride_w == 1 && p->dilation_w == 1 && p->pad_left >= 0 &&
	       p->pad_left <= WINO_MAX_PAD && p->pad_right >= 0 && p->pad_right <= WINO_MAX_PAD &&
	       p->out_w == p->in_w + p->pad_left + p->pad_right - 2 && p->out_w >= WINO_MIN_OUT &&
	       p->in_channels >= WINO_MIN_CHANNELS && p->out_channels >= WINO_MIN_CHANNELS;
}

typedef struct Geo {
	int64_t T, T16;           /* tiles per image, rounded up to whole blocks of 16 */
	int64_t chunk, ncap, ld;  /* images per chunk, their columns, the row stride of V and M */
} Geo;

static void geo(const kiln_conv2d_params *p, Geo *g)
{
	g->T = (p->out_w + WINO_M - 1) / WINO_M;
	int64_t per = WINO_A * (p->in_channels + p->out_channels) * g->T * (int64_t)sizeof(float);
	g->chunk = CHUNK_BYTES / per;
	if (g->chunk > p->batch)
		g->chunk = p->batch;
	if (g->chunk < 1)
		g->chunk = 1;
	g->ncap = g->chunk * g->T;
	g->T16 = (g->T + WINO_LANES - 1) / WINO_LANES * WINO_LANES;
	g->ld = g->ncap + WINO_LANES;
}

int64_t kiln_f32_conv1d_wino_work(const kiln_conv2d_params *p)
{
	if (!kiln_f32_conv1d_wino_takes(p) || p->batch < 1)
		return 0;
	Geo g;
	geo(p, &g);
	/* the offsets (int64, two floats each), a padded row, V, slack, M, 16
	 * output rows (AVX-512's output transform) */
	return 2 * p->in_channels + 4 * g.T16 + WINO_LANES +
	       WINO_A * p->in_channels * g.ld + SLACK + WINO_A * p->out_channels * g.ld +
	       16 * ((g.T + 3) / 4 * 16);
}

int64_t kiln_f32_conv1d_wino_packed_floats(int64_t in_channels, int64_t out_channels)
{
	return WINO_A * in_channels * out_channels;
}

/* U[e] = G g for every filter, in the conv32 layout of f32-conv/direct.h
 * with K = C, one matrix after the other: dst[e * M * C + m0 * C + c * bw +
 * i] = U[e][m0 + i][c]. Computed in double and rounded once. */
void kiln_f32_conv1d_wino_pack(const kiln_conv2d_params *p, const float *W, float *dst)
{
	const int64_t M = p->out_channels, C = p->in_channels;
	for (int64_t m = 0; m < M; m++) {
		int64_t m0 = m / CONV_BLOCK * CONV_BLOCK;
		int64_t bw = M - m0 < CONV_BLOCK ? M - m0 : CONV_BLOCK;
		for (int64_t c = 0; c < C; c++) {
			float t[3];
			/* memcpy: at compile time W is where the model file has it, maybe misaligned */
			memcpy(t, &W[(m * C + c) * 3], sizeof t);
			double g0 = (double)t[0], g1 = (double)t[1], g2 = (double)t[2];
			double u[WINO_A] = {g0 / 4, -(g0 + g1 + g2) / 6, -(g0 - g1 + g2) / 6,
			                    g0 / 24 + g1 / 12 + g2 / 6, g0 / 24 - g1 / 12 + g2 / 6, g2};
			for (int e = 0; e < WINO_A; e++) {
				float v = (float)u[e];
				memcpy(&dst[e * M * C + m0 * C + c * bw + (m - m0)], &v, sizeof v);
			}
		}
	}
}

void kiln_f32_conv1d_wino(const kiln_conv2d_params *p, const float *X, const float *U,
                          const float *bias, float *Y, const kiln_epilogue *ep, float *work)
{
	if (p->batch < 1 || !kiln_f32_conv1d_wino_takes(p))
		return;
	conv_tile_fn tile = kiln_conv_tile_ref;
	int np_max = CONV_NP_REF;
	wino1d_in_fn in = kiln_wino1d_in_ref;
	wino1d_out_fn out = kiln_wino1d_out_ref;
#ifdef KILN_HAVE_X86_VARIANTS
	if (kiln_isa() == KILN_ISA_AVX512)
		tile = kiln_conv_tile_avx512, np_max = CONV_NP_AVX512, in = kiln_wino1d_in_avx512,
		out = kiln_wino1d_out_avx512;
	else if (kiln_isa() == KILN_ISA_AVX2)
		tile = kiln_conv_tile_avx2, np_max = CONV_NP_AVX2, in = kiln_wino1d_in_avx2,
		out = kiln_wino1d_out_avx2;
#endif
	Geo g;
	geo(p, &g);
	const int64_t C = p->in_channels, M = p->out_channels, L = p->in_w, OW = p->out_w;
	const int64_t T = g.T, T16 = g.T16, ld = g.ld;
	int64_t *koff = (int64_t *)(void *)work;
	float *row = work + 2 * C;                       /* 4 T16 + 16 floats */
	float *V = row + 4 * T16 + WINO_LANES;           /* 6 C ld, then SLACK */
	float *Mp = V + WINO_A * C * ld + SLACK;         /* 6 M ld */
	float *orows = Mp + WINO_A * M * ld;              /* 16 (T + 3) / 4 * 16 */
	for (int64_t c = 0; c < C; c++)
		koff[c] = c * ld;
	memset(row, 0, (size_t)(4 * T16 + WINO_LANES) * sizeof *row);
	memset(V + WINO_A * C * ld, 0, SLACK * sizeof *V);
	const int64_t ngroups = (M + CONV_MR - 1) / CONV_MR;
	for (int64_t n0 = 0; n0 < p->batch; n0 += g.chunk) {
		int64_t nn = p->batch - n0 < g.chunk ? p->batch - n0 : g.chunk;
		int64_t ncols = nn * T;
		/* V[e][c][n * T + t]: each image's tiles, image by image (a block of
		 * 16 tiles past an image's last is overwritten by the next image's) */
#ifdef KILN_HAVE_X86_VARIANTS
		if (in == kiln_wino1d_in_avx512)
			for (int64_t n = 0; n < nn; n++)
				for (int64_t c = 0; c < C; c++)
					kiln_wino1d_in_x_avx512(X + ((n0 + n) * C + c) * L, L, p->pad_left, T16,
					                        V + c * ld + n * T, C * ld);
		else
#endif
		for (int64_t n = 0; n < nn; n++)
			for (int64_t c = 0; c < C; c++) {
				memcpy(row + p->pad_left, X + ((n0 + n) * C + c) * L, (size_t)L * sizeof *row);
				in(row, T16, V + c * ld + n * T, C * ld);
			}
#ifdef KILN_HAVE_X86_VARIANTS
		if (tile == kiln_conv_tile_avx512 && M % 32 == 0) {
			/* M[e] laid out [t][m] (channels in lanes), rows ncols.. zeroed: the
			 * output transform reads up to 3 tiles past an image's last */
			for (int e = 0; e < WINO_A; e++) {
				kiln_wino1d_products_avx512(U + e * M * C, V + e * C * ld, C, M, ld, ncols,
				                            Mp + e * M * ld);
				memset(Mp + e * M * ld + ncols * M, 0, (size_t)(4 * M) * sizeof *Mp);
			}
			int relu = ep && ep->act == KILN_ACT_RELU;
			for (int64_t n = 0; n < nn; n++) {
				int64_t at = (n0 + n) * M * OW;
				kiln_wino1d_out_tm_avx512(Mp + n * T * M, M * ld, T, M, bias,
				                          ep && ep->residual ? ep->residual + at : NULL, relu,
				                          Y + at, OW, orows);
				if (ep && ep->act != KILN_ACT_NONE && !relu)
					kiln_f32_act(Y + at, M * OW, ep);
			}
			continue;
		}
#endif
		/* M[e] = U[e] V[e], columns in tiles of the variant's width; the
		 * 16 columns past the last image's tiles zeroed (the output
		 * transform reads them) */
		for (int64_t r = 0; r < WINO_A * M; r++)
			memset(Mp + r * ld + ncols, 0, WINO_LANES * sizeof *Mp);
		int64_t ntiles = (ncols + np_max - 1) / np_max;
		int64_t step = ((ncols + ntiles - 1) / ntiles + 15) / 16 * 16;
		if (step > np_max)
			step = np_max;
		for (int e = 0; e < WINO_A; e++)
			for (int64_t gi = 0; gi < ngroups; gi++) {
				int64_t m0 = gi * CONV_MR, mb = m0 / CONV_BLOCK * CONV_BLOCK;
				int rows = (int)(M - m0 < CONV_MR ? M - m0 : CONV_MR);
				int64_t bw = M - mb < CONV_BLOCK ? M - mb : CONV_BLOCK;
				for (int64_t q0 = 0; q0 < ncols; q0 += step) {
					int np = (int)(ncols - q0 < step ? ncols - q0 : step);
					ConvTile t = {.K = C, .w = U + e * M * C + mb * C + (m0 - mb), .ws = bw,
					              .rows = rows, .np = np, .koff = koff,
					              .xb = V + e * C * ld + q0, .q0 = q0, .Wq = ld, .OW = ld,
					              .ohw = ld, .m0 = m0, .Y = Mp + e * M * ld,
					              .real = ((uint64_t)1 << np) - 1, .y0 = q0};
					tile(&t);
				}
			}
		/* Y = A^T M + bias, the residual, the activation */
		int act = ep ? ep->act : KILN_ACT_NONE;
		for (int64_t n = 0; n < nn; n++)
			for (int64_t m = 0; m < M; m++) {
				int64_t at = ((n0 + n) * M + m) * OW;
				out(Mp + m * ld + n * T, M * ld, T16, bias ? bias[m] : 0.0f,
				    ep && ep->residual ? ep->residual + at : NULL, act == KILN_ACT_RELU, Y + at,
				    OW);
				if (act != KILN_ACT_NONE && act != KILN_ACT_RELU)
					kiln_f32_act(Y + at, OW, ep);
			}
	}
}
