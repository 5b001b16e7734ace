/*
 * f32-conv/direct.c - the packed convolution (kiln_f32_conv2d_packed): the
 * weights packed at compile time in the conv32 layout of direct.h, the input
 * copied once per image into its padded phase planes in planned work memory,
 * and tiles of 8 output channels by a run of wide pixels summed over all of K
 * in registers, with the bias, residual and activation applied as each tile
 * is stored. No im2col matrix, panel or gather: a tile's loads are
 * contiguous runs at one offset per column of W. The one dispatch point of
 * the tiles (ref, avx2, avx512).
 *
 * Loop order: a chunk of images is copied (as many as fit CHUNK_BYTES, so a
 * large weight streams from memory once per chunk, not per image), then for
 * each block of output-channel groups whose weights fit L2, every tile of
 * every image of the chunk: the block stays in L2 while the pixels pass.
 * The result depends only on the inputs and the variant.
 */
#include <string.h>

#include "../isa.h"
#include "direct.h"

enum {
	CONV_MAX_STRIDE = 4,
	CONV_MAX_TAPS = 1024,
	CHUNK_BYTES = 1 << 20,
	A_BLOCK_BYTES = 1 << 20,
	SLACK = 64,
};

typedef struct Geo {
	int64_t K, Hq, Wq, plane, cplane, image, chunk, nwide, slack;
	int used_y[CONV_MAX_STRIDE], used_x[CONV_MAX_STRIDE];   /* compact phase index, or -1 */
	int nph_y, nph_x;
} Geo;

static void phases(int64_t k, int64_t d, int64_t s, int *used, int *n)
{
	for (int64_t p = 0; p < s; p++)
		used[p] = -1;
	for (int64_t i = 0; i < k; i++)
		used[(i * d) % s] = 0;
	*n = 0;
	for (int64_t p = 0; p < s; p++)
		if (used[p] == 0)
			used[p] = (*n)++;
}

/* The geometry, or 0 when the packed path does not take p. */
static int geo(const kiln_conv2d_params *p, Geo *g)
{
	if (p->group != 1 || p->stride_h < 1 || p->stride_w < 1 || p->stride_h > CONV_MAX_STRIDE ||
	    p->stride_w > CONV_MAX_STRIDE || p->kernel_h < 1 || p->kernel_w < 1 ||
	    p->kernel_h * p->kernel_w > CONV_MAX_TAPS || p->dilation_h < 1 || p->dilation_w < 1 ||
	    p->out_h < 1 || p->out_w < 1 || p->in_channels < 1 || p->out_channels < 1)
		return 0;
	g->K = p->in_channels * p->kernel_h * p->kernel_w;
	g->Hq = p->out_h + (p->kernel_h - 1) * p->dilation_h / p->stride_h;
	g->Wq = p->out_w + (p->kernel_w - 1) * p->dilation_w / p->stride_w;
	g->plane = g->Hq * g->Wq;
	phases(p->kernel_h, p->dilation_h, p->stride_h, g->used_y, &g->nph_y);
	phases(p->kernel_w, p->dilation_w, p->stride_w, g->used_x, &g->nph_x);
	g->cplane = g->nph_y * g->nph_x * g->plane;
	g->image = p->in_channels * g->cplane;
	g->nwide = p->out_h * g->Wq;
	/* a tile reads up to 48 lanes past a wide pixel, up to Wq past the planes */
	g->slack = g->Wq + SLACK;
	g->chunk = CHUNK_BYTES / (int64_t)sizeof(float) / g->image;
	if (g->chunk > p->batch)
		g->chunk = p->batch;
	if (g->chunk < 1)
		g->chunk = 1;
	return 1;
}

int64_t kiln_f32_conv2d_packed_work(const kiln_conv2d_params *p)
{
	Geo g;
	if (!geo(p, &g) || p->batch < 1)
		return 0;
	/* the offsets (int64, two floats each), then the chunk's planes */
	return 2 * g.K + g.chunk * g.image + g.slack;
}

void kiln_f32_conv2d_pack(const kiln_conv2d_params *p, const float *W, float *dst)
{
	int64_t M = p->out_channels, K = p->in_channels / p->group * p->kernel_h * p->kernel_w;
	for (int64_t m0 = 0; m0 < M; m0 += CONV_BLOCK) {
		int64_t bw = M - m0 < CONV_BLOCK ? M - m0 : CONV_BLOCK;
		float *d = dst + m0 * K;
		/* memcpy: at compile time W is where the model file has it, maybe misaligned */
		for (int64_t k = 0; k < K; k++)
			for (int64_t i = 0; i < bw; i++)
				memcpy(&d[k * bw + i], &W[(m0 + i) * K + k], sizeof *d);
	}
}

/* The portable stride-2 row. */
static void row2_ref(float *d, const float *s, int64_t n)
{
	for (int64_t u = 0; u < n; u++)
		d[u] = s[2 * u];
}

/* n zeros at d: a row's padding, mostly a float or two (1-D convolutions
 * copy one row per channel: two calls of memset per row cost as much as
 * the copy) */
static inline void zero_edge(float *d, int64_t n)
{
	if (n > 4) {
		memset(d, 0, (size_t)n * sizeof *d);
		return;
	}
	switch (n) {
	case 4: d[3] = 0.0f; /* fall through */
	case 3: d[2] = 0.0f; /* fall through */
	case 2: d[1] = 0.0f; /* fall through */
	case 1: d[0] = 0.0f; /* fall through */
	default: break;
	}
}

/* Image x (C planes of H x W) into its phase planes at dst. */
static void copy_image(const kiln_conv2d_params *p, const Geo *g, const float *x, float *dst,
                       conv_row2_fn row2)
{
	const int64_t H = p->in_h, W = p->in_w, sH = p->stride_h, sW = p->stride_w;
	for (int64_t c = 0; c < p->in_channels; c++) {
		for (int64_t py = 0; py < sH; py++)
			for (int64_t px = 0; px < sW; px++) {
				if (g->used_y[py] < 0 || g->used_x[px] < 0)
					continue;
				float *d = dst + c * g->cplane + (g->used_y[py] * g->nph_x + g->used_x[px]) * g->plane;
				/* columns x' with 0 <= x' sW + px - pl < W: [lo, hi) */
				int64_t base = px - p->pad_left;
				int64_t lo = base >= 0 ? 0 : (-base + sW - 1) / sW;
				int64_t hi = W - base <= 0 ? 0 : (W - base + sW - 1) / sW;
				if (hi > g->Wq)
					hi = g->Wq;
				if (lo > hi)
					lo = hi;
				for (int64_t y = 0; y < g->Hq; y++, d += g->Wq) {
					int64_t iy = y * sH + py - p->pad_top;
					if (iy < 0 || iy >= H || lo == hi) {
						memset(d, 0, (size_t)g->Wq * sizeof *d);
						continue;
					}
					const float *s = x + (c * H + iy) * W + base;
					zero_edge(d, lo);
					if (sW == 1)
						memcpy(d + lo, s + lo, (size_t)(hi - lo) * sizeof *d);
					else if (sW == 2)
						row2(d + lo, s + 2 * lo, hi - lo);
					else
						for (int64_t u = lo; u < hi; u++)
							d[u] = s[u * sW];
					zero_edge(d + hi, g->Wq - hi);
				}
			}
	}
}

#ifdef KILN_HAVE_X86_VARIANTS
/* Row tiles wherever the output channels come in blocks of 32 and K is
 * long enough to pay for their transposing store (ResNet-18: every layer
 * but the 1x1 of K 64): no lane is wasted on the Wq - OW columns past a row
 * (the 14x14 and 7x7 maps: 2 of every 9 wide pixels), and 28 accumulators to
 * the wide tile's 24. */
static int use_rows(const kiln_conv2d_params *p, const Geo *g)
{
	return p->out_channels % CONV_ROW_M == 0 && g->K >= 128;
}

/* The row tiles' loops: as kiln_f32_conv2d_packed's, with units of 32
 * output channels and pairs of runs (CONV_RUN pixels of one output row). */
static void conv_rows(const kiln_conv2d_params *p, const Geo *g, const float *X, const float *Wp,
                      const float *bias, float *Y, const kiln_epilogue *ep, const int64_t *koff,
                      float *planes, conv_row2_fn row2)
{
	const int64_t K = g->K, M = p->out_channels, OW = p->out_w;
	const int64_t segs = (OW + CONV_RUN - 1) / CONV_RUN, nruns = p->out_h * segs;
	const int64_t units = M / CONV_ROW_M;
	int64_t blk = A_BLOCK_BYTES / (int64_t)sizeof(float) / (CONV_ROW_M * K);
	if (blk < 1)
		blk = 1;
	const int64_t in_image = p->in_channels * p->in_h * p->in_w, out_image = M * p->out_h * OW;
	for (int64_t n0 = 0; n0 < p->batch; n0 += g->chunk) {
		int64_t nn = p->batch - n0 < g->chunk ? p->batch - n0 : g->chunk;
		for (int64_t n = 0; n < nn; n++)
			copy_image(p, g, X + (n0 + n) * in_image, planes + n * g->image, row2);
		memset(planes + nn * g->image, 0, (size_t)g->slack * sizeof *planes);
		for (int64_t u0 = 0; u0 < units; u0 += blk) {
			int64_t u1 = units - u0 < blk ? units : u0 + blk;
			for (int64_t n = 0; n < nn; n++) {
				ConvRowTile t = {.K = K, .koff = koff, .xb = planes + n * g->image,
				                 .ohw = p->out_h * OW, .Y = Y + (n0 + n) * out_image,
				                 .res = ep && ep->residual ? ep->residual + (n0 + n) * out_image
				                                           : NULL,
				                 .bias = bias, .ep = ep};
				for (int64_t r = 0; r < nruns; r += 2) {
					for (int h = 0; h < 2; h++) {
						int64_t oh = (r + h) / segs, ow = (r + h) % segs * CONV_RUN;
						int live = r + h < nruns;
						t.q[h] = live ? oh * g->Wq + ow : 0;
						t.yoff[h] = live ? oh * OW + ow : 0;
						t.len[h] = live ? (int)(OW - ow < CONV_RUN ? OW - ow : CONV_RUN) : 0;
					}
					for (int64_t u = u0; u < u1; u++) {
						t.m0 = u * CONV_ROW_M;
						t.w = Wp + t.m0 * K;
						kiln_conv_rowtile_avx512(&t);
					}
				}
			}
		}
	}
}
#endif

void kiln_f32_conv2d_packed(const kiln_conv2d_params *p, const float *X, const float *Wp,
                            const float *bias, float *Y, const kiln_epilogue *ep, float *work)
{
	Geo g;
	if (p->batch < 1 || !geo(p, &g))
		return;
	conv_tile_fn tile = kiln_conv_tile_ref;
	conv_row2_fn row2 = row2_ref;
	int np_max = CONV_NP_REF;
#ifdef KILN_HAVE_X86_VARIANTS
	if (kiln_isa() == KILN_ISA_AVX512)
		tile = kiln_conv_tile_avx512, row2 = kiln_conv_row2_avx512, np_max = CONV_NP_AVX512;
	else if (kiln_isa() == KILN_ISA_AVX2)
		tile = kiln_conv_tile_avx2, np_max = CONV_NP_AVX2;
#endif
	const int64_t C = p->in_channels, M = p->out_channels, K = g.K;
	const int64_t kH = p->kernel_h, kW = p->kernel_w, sH = p->stride_h, sW = p->stride_w;
	int64_t *koff = (int64_t *)(void *)work;
	float *planes = work + 2 * K;
	/* each tap's offset once (its divisions), then per channel a sum: at
	 * batch 1 the divisions per column of W cost as much as a small layer's
	 * tiles */
	int64_t tap[CONV_MAX_TAPS];
	for (int64_t i = 0, t = 0; i < kH; i++)
		for (int64_t j = 0; j < kW; j++, t++) {
			int64_t dy = i * p->dilation_h, dx = j * p->dilation_w;
			tap[t] = (g.used_y[dy % sH] * g.nph_x + g.used_x[dx % sW]) * g.plane +
			         dy / sH * g.Wq + dx / sW;
		}
	for (int64_t c = 0, k = 0; c < C; c++)
		for (int64_t t = 0; t < kH * kW; t++, k++)
			koff[k] = c * g.cplane + tap[t];
	int64_t ngroups = (M + CONV_MR - 1) / CONV_MR;
	int64_t blk = A_BLOCK_BYTES / (int64_t)sizeof(float) / (CONV_MR * K);
	if (blk < 1)
		blk = 1;
	/* pixels per tile: the row of wide pixels in even tiles (63 = 32 + 31,
	 * not 48 + 15: a narrow tile has too few accumulators), whole vectors */
	int64_t ntiles = (g.nwide + np_max - 1) / np_max;
	int64_t step = ((g.nwide + ntiles - 1) / ntiles + 15) / 16 * 16;
	if (step > np_max)
		step = np_max;
	const int64_t in_image = C * p->in_h * p->in_w, out_image = M * p->out_h * p->out_w;
#ifdef KILN_HAVE_X86_VARIANTS
	if (tile == kiln_conv_tile_avx512 && use_rows(p, &g)) {
		conv_rows(p, &g, X, Wp, bias, Y, ep, koff, planes, row2);
		return;
	}
#endif
	for (int64_t n0 = 0; n0 < p->batch; n0 += g.chunk) {
		int64_t nn = p->batch - n0 < g.chunk ? p->batch - n0 : g.chunk;
		for (int64_t n = 0; n < nn; n++)
			copy_image(p, &g, X + (n0 + n) * in_image, planes + n * g.image, row2);
		memset(planes + nn * g.image, 0, (size_t)g.slack * sizeof *planes);
		for (int64_t b0 = 0; b0 < ngroups; b0 += blk) {
			int64_t b1 = ngroups - b0 < blk ? ngroups : b0 + blk;
			for (int64_t n = 0; n < nn; n++) {
				float *y = Y + (n0 + n) * out_image;
				const float *res = ep && ep->residual ? ep->residual + (n0 + n) * out_image : NULL;
				for (int64_t q0 = 0; q0 < g.nwide; q0 += step) {
					int np = (int)(g.nwide - q0 < step ? g.nwide - q0 : step);
					int64_t oh = q0 / g.Wq, ow = q0 % g.Wq;
					int64_t y0 = oh * p->out_w + (ow < p->out_w ? ow : p->out_w);
					uint64_t real = 0;
					for (int j = 0; j < np; j++, ow = ow + 1 == g.Wq ? 0 : ow + 1)
						if (ow < p->out_w)
							real |= (uint64_t)1 << j;
					for (int64_t gi = b0; gi < b1; gi++) {
						int64_t m0 = gi * CONV_MR, mb = m0 / CONV_BLOCK * CONV_BLOCK;
						int rows = (int)(M - m0 < CONV_MR ? M - m0 : CONV_MR);
						int64_t bw = M - mb < CONV_BLOCK ? M - mb : CONV_BLOCK;
						ConvTile t = {.K = K, .w = Wp + mb * K + (m0 - mb), .ws = bw,
						              .rows = rows, .np = np,
						              .koff = koff, .xb = planes + n * g.image + q0,
						              .q0 = q0, .Wq = g.Wq, .OW = p->out_w,
						              .ohw = p->out_h * p->out_w, .m0 = m0, .Y = y,
						              .res = res, .bias = bias, .ep = ep, .real = real,
						              .y0 = y0};
						tile(&t);
					}
				}
			}
		}
	}
}
