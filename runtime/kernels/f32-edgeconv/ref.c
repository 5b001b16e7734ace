/*
 * f32-edgeconv/ref.c - the kNN EdgeConv block (include/kiln/kernels.h,
 * kiln_f32_edgeconv) with its edge features never stored whole.
 *
 * For one sample at a time:
 *   1. its points transposed, X[n]^T [P, C], and projected once per point by
 *      one GEMM on the packed layer-0 weights: [U | V] = X^T [(Wa-Wb)^T | Wb^T]
 *      ([P, 2 width0]; U gets the bias). Layer 0 of an edge (p, q) is then
 *      U[p] + V[q]: the neighbour rows are gathered, not multiplied;
 *   2. the points in tiles of about 256 edges: layer 0 gathered into a tile
 *      [edges, width0] and activated, each further layer one GEMM over the
 *      tile (rows = edges, the packed W_l^T as B, bias and activation in the
 *      GEMM's epilogue), ping-ponging between two tile buffers;
 *   3. each point's k rows of the last layer reduced (mean or max) into
 *      Y[n, :, p].
 * All GEMMs go through the f32-gemm core (kiln_gemm_run: its variant is the
 * one dispatch point, KILN_ISA picks it), so this file is plain C. Work
 * memory is the caller's (kiln_f32_edgeconv_work floats).
 */
#include <string.h>

#include "../f32-gemm/gemm.h"
#include "kiln/kernels.h"

enum { TILE_EDGES = 256 };

static int64_t tile_points(const kiln_edgeconv_params *p)
{
	int64_t t = p->k > 0 ? TILE_EDGES / p->k : 1;
	if (t < 1)
		t = 1;
	return t > p->points ? p->points : t;
}

static int64_t widest(const kiln_edgeconv_params *p)
{
	int64_t w = 1;
	for (int l = 0; l < p->nlayers; l++)
		if (p->width[l] > w)
			w = p->width[l];
	return w;
}

int64_t kiln_f32_edgeconv_work(const kiln_edgeconv_params *p)
{
	int64_t P = p->points, rows = tile_points(p) * p->k;
	return P * p->channels + P * 2 * p->width[0] + 2 * rows * widest(p);
}

/* One GEMM C[M, N] = A[M, K] B + bias, activation, with B packed (b32). */
static void gemm_packed(int64_t M, int64_t N, int64_t K, const float *A, const float *Bp,
                        float *C, const float *bias, const kiln_epilogue *act)
{
	GemmBSrc b = {.packed = Bp, .N = N};
	GemmEpi e = {.alpha = 1.0f, .beta = 0.0f, .col_bias = bias,
	             .ep = act && act->act != KILN_ACT_NONE ? act : NULL};
	kiln_gemm_run(M, N, K, A, K, &b, C, N, &e);
}

/* Reduce rows [0, k) of h (width w, consecutive) into Y[c * P] for c < w. */
static void aggregate(const float *h, int64_t k, int64_t w, int how, float *y, int64_t P,
                      float *acc)
{
	memcpy(acc, h, (size_t)w * sizeof *acc);
	for (int64_t j = 1; j < k; j++) {
		const float *r = h + j * w;
		if (how == KILN_EDGECONV_MAX) {
			for (int64_t c = 0; c < w; c++)
				acc[c] = r[c] > acc[c] || r[c] != r[c] ? r[c] : acc[c];
		} else {
			for (int64_t c = 0; c < w; c++)
				acc[c] += r[c];
		}
	}
	float scale = how == KILN_EDGECONV_MAX ? 1.0f : 1.0f / (float)k;
	for (int64_t c = 0; c < w; c++)
		y[c * P] = acc[c] * scale;
}

enum kiln_status kiln_f32_edgeconv(const kiln_edgeconv_params *p, const float *X,
                                   const int64_t *idx, float *Y, float *work)
{
	const int64_t N = p->batch, C = p->channels, P = p->points, k = p->k;
	const int L = p->nlayers;
	if (L < 1 || L > KILN_EDGECONV_MAX_LAYERS || k < 1)
		return KILN_SHAPE_ERROR;
	for (int64_t i = 0; i < N * P * k; i++)
		if (idx[i] < 0 || idx[i] >= P)
			return KILN_SHAPE_ERROR;
	const int64_t W0 = p->width[0], WL = p->width[L - 1], T = tile_points(p);
	const int64_t wmax = widest(p);
	float *xt = work, *uv = xt + P * C, *h[2] = {uv + P * 2 * W0, NULL};
	h[1] = h[0] + T * k * wmax;
	for (int64_t n = 0; n < N; n++) {
		const float *x = X + n * C * P;
		const int64_t *ix = idx + n * P * k;
		for (int64_t c = 0; c < C; c++)
			for (int64_t q = 0; q < P; q++)
				xt[q * C + c] = x[c * P + q];
		gemm_packed(P, 2 * W0, C, xt, p->w[0], uv, NULL, NULL);
		if (p->bias[0])
			for (int64_t q = 0; q < P; q++)
				for (int64_t c = 0; c < W0; c++)
					uv[q * 2 * W0 + c] += p->bias[0][c];
		for (int64_t p0 = 0; p0 < P; p0 += T) {
			int64_t tp = P - p0 < T ? P - p0 : T, rows = tp * k;
			float *e = h[0];
			for (int64_t t = 0; t < tp; t++) {
				const float *u = uv + (p0 + t) * 2 * W0;
				for (int64_t j = 0; j < k; j++) {
					const float *v = uv + ix[(p0 + t) * k + j] * 2 * W0 + W0;
					float *r = e + (t * k + j) * W0;
					for (int64_t c = 0; c < W0; c++)
						r[c] = u[c] + v[c];
				}
			}
			if (p->act[0].act != KILN_ACT_NONE)
				kiln_f32_act(e, rows * W0, &p->act[0]);
			int cur = 0;
			for (int l = 1; l < L; l++) {
				gemm_packed(rows, p->width[l], p->width[l - 1], h[cur], p->w[l], h[!cur],
				            p->bias[l], &p->act[l]);
				cur = !cur;
			}
			/* the other tile buffer is free: its first row holds the sums */
			for (int64_t t = 0; t < tp; t++)
				aggregate(h[cur] + t * k * WL, k, WL, p->aggregate, Y + n * WL * P + p0 + t, P,
				          h[!cur]);
		}
	}
	return KILN_OK;
}
