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
 * The weights are the packed convolution's (kiln_f32_conv2d_pack, stored
 * once): the filters are transformed at run time, a block of cb output
 * channels at a time, into the work memory, and the block serves every tile
 * of the call. Loop order: a block of ts tiles (of every image) is
 * transformed (V), then for each block of output channels its filters (U),
 * the 16 products (M, the variant's register-blocked kernel) and the output
 * transform with the bias, residual and activation, stored to Y.
 *
 * Only the AVX-512 variant has a kernel fast enough to win: under AVX2 the
 * call is the packed direct convolution (same work memory); ref runs the
 * Winograd path with portable loops (the reference the tests hold the
 * AVX-512 variant to). The result depends only on the inputs and the variant.
 */
#include <string.h>

#include "../f32-epilogue/epilogue.h"
#include "../isa.h"
#include "winograd.h"

enum {
	CONV_BLOCK = WINO_CONV_BLOCK,
	U_FLOATS = 512 * 1024,    /* a block of filters: 2 MiB */
	V_FLOATS = 512 * 1024,    /* a block of input tiles: 2 MiB */
	MS_MAX = 64,              /* output channels per block of products */
	TS_INNER = 96,            /* tiles per block, blocks of tiles inside */
	MIN_CHANNELS = 16,
};

static int64_t up(int64_t x, int64_t m)
{
	return (x + m - 1) / m * m;
}

static int wgeo(const kiln_conv2d_params *p, WGeo *g)
{
	if (p->group != 1 || p->kernel_h != 3 || p->kernel_w != 3 || p->stride_h != 1 ||
	    p->stride_w != 1 || p->dilation_h != 1 || p->dilation_w != 1 || p->batch < 1 ||
	    p->in_channels < MIN_CHANNELS || p->out_channels < MIN_CHANNELS || p->out_h < 1 ||
	    p->out_w < 1 || p->in_h < 1 || p->in_w < 1 || p->in_channels > (1 << 20))
		return 0;
	g->C = p->in_channels, g->M = p->out_channels;
	g->TH = (p->out_h + 1) / 2, g->TW = (p->out_w + 1) / 2;
	g->tiles = p->batch * g->TH * g->TW;
	/* blocks of at most 2 MiB of filters (cb output channels) and of input
	 * tiles (ts); the products ms output channels at a time */
	/* (whole packed blocks of 32, so a filter block starts at one) */
	g->cb = U_FLOATS / (16 * g->C) / WINO_CONV_BLOCK * WINO_CONV_BLOCK;
	if (g->cb < WINO_CONV_BLOCK)
		g->cb = WINO_CONV_BLOCK;
	if (g->cb > up(g->M, WINO_MR))
		g->cb = up(g->M, WINO_MR);
	g->ms = g->cb < MS_MAX ? g->cb : MS_MAX;
	g->ts = V_FLOATS / (16 * g->C) / 16 * 16;
	if (g->ts < 16)
		g->ts = 16;
	if (g->ts > up(g->tiles, 16))
		g->ts = up(g->tiles, 16);
	/* the loop order transforming fewer filters and tiles (in channel
	 * units): blocks of tiles outside (each block transforms every filter)
	 * or blocks of output channels outside (each transforms every tile) */
	int64_t tb = (g->tiles + g->ts - 1) / g->ts, ob = (g->M + g->cb - 1) / g->cb;
	g->co_outer = g->M + g->tiles * ob <= g->M * tb + g->tiles;
	/* with output channels outside, smaller blocks of tiles transform no
	 * more, and keep V and M in L2 */
	if (g->co_outer && g->ts > TS_INNER)
		g->ts = TS_INNER;
	g->u = 0;
	g->v = g->u + 16 * g->cb * g->C;
	g->m = g->v + 16 * g->C * g->ts;
	g->row = g->m + 16 * g->ms * g->ts;
	/* eight rows of the widest tile run (input rows, their even and odd
	 * columns, output rows) */
	g->floats = g->row + 8 * (2 * g->TW + 48);
	return 1;
}

int64_t kiln_f32_conv2d_winograd_work(const kiln_conv2d_params *p)
{
	WGeo g;
	if (!wgeo(p, &g))
		return 0;
	int64_t direct = kiln_f32_conv2d_packed_work(p);
	return direct > g.floats ? direct : g.floats;
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
				m[t] += w * v[t];
		}
	}
}

/* The filters of output channels [o0, o0 + cb) (zeros past M) into U. */
static void filters(const WGeo *g, const float *Wp, int64_t o0, float *U)
{
	const int64_t C = g->C, K = 9 * C, cb = g->cb;
	for (int64_t i = 0; i < cb; i++) {
		int64_t o = o0 + i;
		float *u0 = U + i / WINO_MR * WINO_MR * C + i % WINO_MR;
		if (o >= g->M) {
			for (int64_t c = 0; c < C; c++)
				for (int e = 0; e < 16; e++)
					u0[e * cb * C + c * WINO_MR] = 0.0f;
			continue;
		}
		int64_t mb = o / CONV_BLOCK * CONV_BLOCK;
		int64_t bw = g->M - mb < CONV_BLOCK ? g->M - mb : CONV_BLOCK;
		const float *w = Wp + mb * K + (o - mb);
		for (int64_t c = 0; c < C; c++) {
			float f[9], t[4][3];
			for (int k = 0; k < 9; k++)
				f[k] = w[(c * 9 + k) * bw];
			for (int j = 0; j < 3; j++) {   /* G f: the rows */
				t[0][j] = f[j];
				t[1][j] = 0.5f * (f[j] + f[3 + j] + f[6 + j]);
				t[2][j] = 0.5f * (f[j] - f[3 + j] + f[6 + j]);
				t[3][j] = f[6 + j];
			}
			for (int r = 0; r < 4; r++) {   /* (G f) G^T: the columns */
				float *u = u0 + 4 * r * cb * C + c * WINO_MR;
				u[0] = t[r][0];
				u[cb * C] = 0.5f * (t[r][0] + t[r][1] + t[r][2]);
				u[2 * cb * C] = 0.5f * (t[r][0] - t[r][1] + t[r][2]);
				u[3 * cb * C] = t[r][2];
			}
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
	const int64_t C = g->C, H = p->in_h, W = p->in_w, L = 2 * n + 2, ts = g->ts;
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
			float *v = V + (4 * k * C + c) * ts + pos;
			const float *s = r[k];
			for (int64_t u = 0; u < n; u++) {
				v[u] = s[2 * u] - s[2 * u + 2];
				v[C * ts + u] = s[2 * u + 1] + s[2 * u + 2];
				v[2 * C * ts + u] = s[2 * u + 2] - s[2 * u + 1];
				v[3 * C * ts + u] = s[2 * u + 1] - s[2 * u + 3];
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
	const int64_t OH = p->out_h, OW = p->out_w, ts = g->ts, es = g->ms * ts;
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
				case KILN_ACT_CLIP:
					v = v < lo ? lo : v > hi ? hi : v;
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
		for (int64_t e = 0; e < 16 * g->C; e++)
			memset(V + e * g->ts + nt, 0, (size_t)(16 * nv - nt) * sizeof(float));
}

/* Output channels [o0, o0 + on) (their filters in U) of the tiles
 * [t0, t0 + nt) (in V): ms channels at a time, the 16 products into M, then
 * the output transform. */
static void block_products(const kiln_conv2d_params *p, const WGeo *g, int64_t o0, int64_t on,
                           int64_t t0, int64_t nt, const float *U, const float *V, float *Mb,
                           wino_gemm_fn gemm, wino_outputs_fn out, const float *bias, float *Y,
                           const kiln_epilogue *ep, float *row)
{
	const int64_t C = g->C, ts = g->ts, per = g->TH * g->TW, nv = (nt + 15) / 16;
	for (int64_t s0 = 0; s0 < on; s0 += g->ms) {
		int64_t sn = on - s0 < g->ms ? on - s0 : g->ms, groups = (sn + WINO_MR - 1) / WINO_MR;
		for (int e = 0; e < 16; e++)
			gemm(U + (e * g->cb + s0) * C, V + e * C * ts, Mb + e * g->ms * ts, C, ts, nv, groups);
		for (int64_t t = t0; t < t0 + nt;) {
			int64_t tx = t % g->TW, n = g->TW - tx < t0 + nt - t ? g->TW - tx : t0 + nt - t;
			WRun r = {t / per, t % per / g->TW, tx, n, t - t0};
			out(p, g, Mb, o0 + s0, sn, &r, bias, Y, ep, row);
			t += n;
		}
	}
}

void kiln_f32_conv2d_winograd(const kiln_conv2d_params *p, const float *X, const float *Wp,
                              const float *bias, float *Y, const kiln_epilogue *ep, float *work)
{
	WGeo g;
	if (!wgeo(p, &g))
		return;
	wino_gemm_fn gemm = kiln_wino_gemm_ref;
	wino_filters_fn filt = filters;
	wino_inputs_fn in = inputs;
	wino_outputs_fn out = outputs;
#ifdef KILN_HAVE_X86_VARIANTS
	if (kiln_isa() == KILN_ISA_AVX512)
		gemm = kiln_wino_gemm_avx512, filt = kiln_wino_filters_avx512,
		in = kiln_wino_inputs_avx512, out = kiln_wino_outputs_avx512;
	else if (kiln_isa() == KILN_ISA_AVX2) {
		kiln_f32_conv2d_packed(p, X, Wp, bias, Y, ep, work);
		return;
	}
#endif
	float *U = work + g.u, *V = work + g.v, *Mb = work + g.m, *row = work + g.row;
	if (g.co_outer)
		for (int64_t o0 = 0; o0 < g.M; o0 += g.cb) {
			int64_t on = g.M - o0 < g.cb ? g.M - o0 : g.cb;
			filt(&g, Wp, o0, U);
			for (int64_t t0 = 0; t0 < g.tiles; t0 += g.ts) {
				int64_t nt = g.tiles - t0 < g.ts ? g.tiles - t0 : g.ts;
				block_inputs(p, &g, X, t0, nt, in, V, row);
				block_products(p, &g, o0, on, t0, nt, U, V, Mb, gemm, out, bias, Y, ep, row);
			}
		}
	else
		for (int64_t t0 = 0; t0 < g.tiles; t0 += g.ts) {
			int64_t nt = g.tiles - t0 < g.ts ? g.tiles - t0 : g.ts;
			block_inputs(p, &g, X, t0, nt, in, V, row);
			for (int64_t o0 = 0; o0 < g.M; o0 += g.cb) {
				int64_t on = g.M - o0 < g.cb ? g.M - o0 : g.cb;
				filt(&g, Wp, o0, U);
				block_products(p, &g, o0, on, t0, nt, U, V, Mb, gemm, out, bias, Y, ep, row);
			}
		}
}
