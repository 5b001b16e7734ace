/*
 * f32-winograd/winograd.c - the 3x3, stride-1, ungrouped convolution by
 * Winograd's minimal filtering F(2x2, 3x3) (kiln_f32_conv2d_winograd): each
 * 2x2 block of outputs (a tile) of each output channel from a 4x4 window of
 * each input channel in 16 multiplications instead of 36:
 *   Y = A^T [ sum_c (G g G^T) . (B^T d B) ] A
 * with g the 3x3 filter, d the 4x4 input window, . elementwise, and
 *   G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
 *   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
 *   A^T = [1 1 1 0; 0 1 -1 -1]
 * whose coefficients (0, +-1, +-1/2) add no rounding of their own beyond
 * the sums. The sum over c is 16 matrix products, one per element e of the
 * 4x4 tile: M[e] = U[e] (output channels x C) V[e] (C x tiles).
 *
 * One result on every CPU and at every batch size (issue 30,
 * docs/reproducibility.md): the compiler chooses this path from the Conv's
 * shape alone (compiler/ops/conv_algo.c, winograd_wins); the filters are
 * transformed at compile time (kiln_f32_conv2d_winograd_pack: G g G^T in
 * double, rounded once) into the weights object; the input and output
 * transforms are fixed sequences of float additions and subtractions (ref
 * and AVX2 run the portable loops below, AVX-512 the same operations in its
 * vectors, lanes being tiles); and each product M[e][o][t] is one FMA chain
 * over c from 0 in every variant (ref: fmaf, AVX2 and AVX-512: their FMA
 * instructions on lanes of tiles). A tile never straddles two images and its
 * sums do not depend on the block it shares with other tiles, so an image's
 * outputs are the same bits whatever the batch it runs in.
 *
 * Loop order: a block of ts tiles (of every image) is transformed (V), then
 * for every 64 output channels the 16 products (M, the variant's
 * register-blocked kernel) and the output transform with the bias,
 * residual and activation, stored to Y.
 */
#include <math.h>
#include <string.h>

#include "../f32-epilogue/epilogue.h"
#include "../isa.h"
#include "winograd.h"

enum {
	V_FLOATS = 128 * 1024,    /* a block of input tiles: 512 KiB */
	MS_MAX = 64,              /* output channels per block of products */
	MIN_CHANNELS = 16,
	LINE = 16,                /* floats of a cache line */
};

static int64_t up(int64_t x, int64_t m)
{
	return (x + m - 1) / m * m;
}

static int takes(const kiln_conv2d_params *p)
{
	return p->group == 1 && p->kernel_h == 3 && p->kernel_w == 3 && p->stride_h == 1 &&
	       p->stride_w == 1 && p->dilation_h == 1 && p->dilation_w == 1 &&
	       p->in_channels >= MIN_CHANNELS && p->out_channels >= MIN_CHANNELS &&
	       p->in_channels <= (1 << 20) && p->out_channels <= (1 << 20) && p->out_h >= 1 &&
	       p->out_w >= 1 && p->in_h >= 1 && p->in_w >= 1 && p->pad_top >= 0 &&
	       p->pad_left >= 0 && p->pad_bottom >= 0 && p->pad_right >= 0 &&
	       p->out_h == p->in_h + p->pad_top + p->pad_bottom - 2 &&
	       p->out_w == p->in_w + p->pad_left + p->pad_right - 2;
}

static int wgeo(const kiln_conv2d_params *p, WGeo *g)
{
	if (!takes(p) || p->batch < 1)
		return 0;
	g->C = p->in_channels, g->M = p->out_channels;
	g->es = up(g->M, WINO_MR) * g->C;
	g->TH = (p->out_h + 1) / 2, g->TW = (p->out_w + 1) / 2;
	g->tiles = p->batch * g->TH * g->TW;
	g->ms = up(g->M, WINO_MR) < MS_MAX ? up(g->M, WINO_MR) : MS_MAX;
	/* blocks of at most 2 MiB of input tiles (ts), whatever the batch: the
	 * sums do not depend on the blocks */
	g->ts = V_FLOATS / (16 * g->C) / 16 * 16;
	if (g->ts < 16)
		g->ts = 16;
	if (g->ts > up(g->tiles, 16))
		g->ts = up(g->tiles, 16);
	/* V's and M's 16 elements a cache line more than C ts and ms ts floats
	 * apart: C ts is 32 KiB once a block is full, so the input transform's
	 * 16 stores of a tile and the output transform's 16 loads would all map
	 * to one L1 set (ResNet-18's 56x56 layer at batch 1, kernel alone:
	 * 0.65 -> 0.54 ms) */
	g->ve = g->C * g->ts + LINE, g->me = g->ms * g->ts + LINE;
	g->v = 0;
	g->m = g->v + 16 * g->ve;
	g->row = g->m + 16 * g->me;
	/* eight rows of the widest tile run (input rows, their even and odd
	 * columns, output rows) */
	g->floats = g->row + 8 * (2 * g->TW + 48);
	return 1;
}

int kiln_f32_conv2d_winograd_takes(const kiln_conv2d_params *p)
{
	return takes(p);
}

int64_t kiln_f32_conv2d_winograd_work(const kiln_conv2d_params *p)
{
	WGeo g;
	return wgeo(p, &g) ? g.floats : 0;
}

int64_t kiln_f32_conv2d_winograd_packed_floats(int64_t in_channels, int64_t out_channels)
{
	return 16 * up(out_channels, WINO_MR) * in_channels;
}

/* U[e][q][c][i] = (G g G^T)[e] of output channel 8 q + i's filter of input
 * channel c (zeros past M), with G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2;
 * 0 0 1]: computed in double and rounded once. */
void kiln_f32_conv2d_winograd_pack(const kiln_conv2d_params *p, const float *W, float *dst)
{
	const int64_t C = p->in_channels, M = p->out_channels, Mp = up(M, WINO_MR);
	for (int64_t o = 0; o < Mp; o++)
		for (int64_t c = 0; c < C; c++) {
			double f[9] = {0}, t[4][3], u[16];
			if (o < M) {
				float w[9];
				/* memcpy: at compile time W is where the model file has it */
				memcpy(w, &W[(o * C + c) * 9], sizeof w);
				for (int k = 0; k < 9; k++)
					f[k] = (double)w[k];
			}
			for (int j = 0; j < 3; j++) {   /* G f: the rows */
				t[0][j] = f[j];
				t[1][j] = 0.5 * (f[j] + f[3 + j] + f[6 + j]);
				t[2][j] = 0.5 * (f[j] - f[3 + j] + f[6 + j]);
				t[3][j] = f[6 + j];
			}
			for (int r = 0; r < 4; r++) {   /* (G f) G^T: the columns */
				u[4 * r] = t[r][0];
				u[4 * r + 1] = 0.5 * (t[r][0] + t[r][1] + t[r][2]);
				u[4 * r + 2] = 0.5 * (t[r][0] - t[r][1] + t[r][2]);
				u[4 * r + 3] = t[r][2];
			}
			for (int e = 0; e < 16; e++) {
				float v = (float)u[e];
				memcpy(&dst[e * Mp * C + (o / WINO_MR * C + c) * WINO_MR + o % WINO_MR], &v,
				       sizeof v);
			}
		}
}

void kiln_wino_gemm_ref(const float *U, const float *V, float *M, int64_t C, int64_t ts,
                        int64_t nv, int64_t groups)
{
	int64_t n = 16 * nv;
	for (int64_t i = 0; i < groups * WINO_MR; i++) {
		const float *u = U + i / WINO_MR * WINO_MR * C + i % WINO_MR;
		float *m = M + i * ts;
		for (int64_t t = 0; t < n; t++)
			m[t] = 0.0f;
		for (int64_t c = 0; c < C; c++) {
			float w = u[c * WINO_MR];
			const float *v = V + c * ts;
			for (int64_t t = 0; t < n; t++)
				m[t] = fmaf(w, v[t], m[t]);
		}
	}
}

/* A run of n tiles (image b, tile row ty, tile columns tx0 ..) into V's
 * tile positions pos ..: per channel four padded input rows, their
 * B^T combinations down the columns, then along the rows. */
static void inputs(const kiln_conv2d_params *p, const WGeo *g, const float *X, const WRun *rn,
                   float *V, float *row)
{
	const int64_t b = rn->b, ty = rn->ty, tx0 = rn->tx0, n = rn->n, pos = rn->pos;
	const int64_t C = g->C, H = p->in_h, W = p->in_w, L = 2 * n + 2, ts = g->ts, ve = g->ve;
	const int64_t x0 = 2 * tx0 - p->pad_left;
	float *r[4] = {row, row + L, row + 2 * L, row + 3 * L};
	for (int64_t c = 0; c < C; c++) {
		const float *x = X + (b * C + c) * H * W;
		for (int k = 0; k < 4; k++) {
			int64_t iy = 2 * ty - p->pad_top + k;
			if (iy < 0 || iy >= H) {
				memset(r[k], 0, (size_t)L * sizeof(float));
				continue;
			}
			const float *s = x + iy * W;
			for (int64_t j = 0; j < L; j++)
				r[k][j] = x0 + j >= 0 && x0 + j < W ? s[x0 + j] : 0.0f;
		}
		for (int64_t j = 0; j < L; j++) {
			float a = r[0][j], bb = r[1][j], cc = r[2][j], d = r[3][j];
			r[0][j] = a - cc, r[1][j] = bb + cc, r[2][j] = cc - bb, r[3][j] = bb - d;
		}
		for (int k = 0; k < 4; k++) {
			float *v = V + 4 * k * ve + c * ts + pos;
			const float *s = r[k];
			for (int64_t u = 0; u < n; u++) {
				v[u] = s[2 * u] - s[2 * u + 2];
				v[ve + u] = s[2 * u + 1] + s[2 * u + 2];
				v[2 * ve + u] = s[2 * u + 2] - s[2 * u + 1];
				v[3 * ve + u] = s[2 * u + 1] - s[2 * u + 3];
			}
		}
	}
}

/* The run's outputs of channels [o0, o0 + on) from M: A^T m A, + bias,
 * + residual, the activation, to Y. */
static void outputs(const kiln_conv2d_params *p, const WGeo *g, const float *Mb, int64_t o0,
                    int64_t on, const WRun *rn, const float *bias, float *Y,
                    const kiln_epilogue *ep, float *row)
{
	const int64_t b = rn->b, ty = rn->ty, tx0 = rn->tx0, n = rn->n, pos = rn->pos;
	const int64_t OH = p->out_h, OW = p->out_w, ts = g->ts, es = g->me;
	const int64_t ox = 2 * tx0, w = OW - ox < 2 * n ? OW - ox : 2 * n;
	const int act = ep ? ep->act : KILN_ACT_NONE;
	const float lo = ep ? ep->alpha : 0.0f, hi = ep ? ep->beta : 0.0f;
	float *r0 = row, *r1 = row + 2 * n + 16;
	for (int64_t i = 0; i < on; i++) {
		const float *m = Mb + i * ts + pos;
		for (int64_t u = 0; u < n; u++) {
			float s[4], d[4];
			for (int j = 0; j < 4; j++) {
				float a = m[j * es + u], bb = m[(4 + j) * es + u];
				float cc = m[(8 + j) * es + u], dd = m[(12 + j) * es + u];
				s[j] = a + bb + cc, d[j] = bb - cc - dd;
			}
			r0[2 * u] = s[0] + s[1] + s[2], r0[2 * u + 1] = s[1] - s[2] - s[3];
			r1[2 * u] = d[0] + d[1] + d[2], r1[2 * u + 1] = d[1] - d[2] - d[3];
		}
		int64_t o = o0 + i;
		float bv = bias ? bias[o] : 0.0f;
		for (int k = 0; k < 2; k++) {
			int64_t oy = 2 * ty + k;
			if (oy >= OH)
				break;
			int64_t at = ((b * g->M + o) * OH + oy) * OW + ox;
			const float *s = k ? r1 : r0;
			const float *res = ep && ep->residual ? ep->residual + at : NULL;
			float *y = Y + at;
			for (int64_t j = 0; j < w; j++) {
				float v = s[j] + bv;
				if (res)
					v += res[j];
				switch (act) {
				case KILN_ACT_RELU:
					v = v > 0.0f ? v : 0.0f;
					break;
				case KILN_ACT_LEAKY_RELU:
					v = v < 0.0f ? v * lo : v;
					break;
				case KILN_ACT_CLIP:   /* AVX-512's order: lo, then hi */
					v = v < lo ? lo : v;
					v = v > hi ? hi : v;
					break;
				default:
					break;
				}
				y[j] = v;
			}
			if (act != KILN_ACT_NONE && act != KILN_ACT_RELU && act != KILN_ACT_LEAKY_RELU &&
			    act != KILN_ACT_CLIP)
				kiln_f32_act(y, w, ep);
		}
	}
}

/* The tiles [t0, t0 + nt) into V, run by run (a run: one tile row of one
 * image); the last vector's lanes past the tiles zeros. */
static void block_inputs(const kiln_conv2d_params *p, const WGeo *g, const float *X, int64_t t0,
                         int64_t nt, wino_inputs_fn in, float *V, float *row)
{
	const int64_t per = g->TH * g->TW, nv = (nt + 15) / 16;
	for (int64_t t = t0; t < t0 + nt;) {
		int64_t tx = t % g->TW, n = g->TW - tx < t0 + nt - t ? g->TW - tx : t0 + nt - t;
		WRun r = {t / per, t % per / g->TW, tx, n, t - t0};
		in(p, g, X, &r, V, row);
		t += n;
	}
	if (nt < 16 * nv)
		for (int64_t e = 0; e < 16; e++)
			for (int64_t c = 0; c < g->C; c++)
				memset(V + e * g->ve + c * g->ts + nt, 0,
				       (size_t)(16 * nv - nt) * sizeof(float));
}

/* Every output channel of the tiles [t0, t0 + nt) (in V): ms channels at a
 * time, the 16 products into M, then the output transform. */
static void block_products(const kiln_conv2d_params *p, const WGeo *g, int64_t t0, int64_t nt,
                           const float *U, const float *V, float *Mb, wino_gemm_fn gemm,
                           wino_outputs_fn out, const float *bias, float *Y,
                           const kiln_epilogue *ep, float *row)
{
	const int64_t C = g->C, ts = g->ts, per = g->TH * g->TW, nv = (nt + 15) / 16;
	for (int64_t s0 = 0; s0 < g->M; s0 += g->ms) {
		int64_t sn = g->M - s0 < g->ms ? g->M - s0 : g->ms, groups = (sn + WINO_MR - 1) / WINO_MR;
		for (int e = 0; e < 16; e++)
			gemm(U + e * g->es + s0 * C, V + e * g->ve, Mb + e * g->me, C, ts, nv, groups);
		for (int64_t t = t0; t < t0 + nt;) {
			int64_t tx = t % g->TW, n = g->TW - tx < t0 + nt - t ? g->TW - tx : t0 + nt - t;
			WRun r = {t / per, t % per / g->TW, tx, n, t - t0};
			out(p, g, Mb, s0, sn, &r, bias, Y, ep, row);
			t += n;
		}
	}
}

void kiln_f32_conv2d_winograd(const kiln_conv2d_params *p, const float *X, const float *U,
                              const float *bias, float *Y, const kiln_epilogue *ep, float *work)
{
	WGeo g;
	if (!wgeo(p, &g))
		return;
	wino_gemm_fn gemm = kiln_wino_gemm_ref;
	wino_inputs_fn in = inputs;
	wino_outputs_fn out = outputs;
#ifdef KILN_HAVE_X86_VARIANTS
	if (kiln_isa() == KILN_ISA_AVX512)
		gemm = kiln_wino_gemm_avx512, in = kiln_wino_inputs_avx512, out = kiln_wino_outputs_avx512;
	else if (kiln_isa() == KILN_ISA_AVX2)
		gemm = kiln_wino_gemm_avx2;
#endif
	float *V = work + g.v, *Mb = work + g.m, *row = work + g.row;
	for (int64_t t0 = 0; t0 < g.tiles; t0 += g.ts) {
		int64_t nt = g.tiles - t0 < g.ts ? g.tiles - t0 : g.ts;
		block_inputs(p, &g, X, t0, nt, in, V, row);
		block_products(p, &g, t0, nt, U, V, Mb, gemm, out, bias, Y, ep, row);
	}
}
