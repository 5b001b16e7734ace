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
 * one dispatch point, KILN_ISA picks it); the gather and the reduction
 * over k go through edgeconv_ops() (ref here, avx2.c, avx512.c). Work
 * memory is the caller's (kiln_f32_edgeconv_work floats).
 */
#include <string.h>

#include "../f32-gemm/gemm.h"
#include "../isa.h"
#include "edgeconv.h"
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

static void gather_add_ref(float *e, const float *u, const float *v_base, int64_t ld,
                           const int64_t *ix, int64_t k, int64_t w)
{
	for (int64_t j = 0; j < k; j++) {
		const float *v = v_base + ix[j] * ld;
		for (int64_t c = 0; c < w; c++)
			e[j * w + c] = u[c] + v[c];
	}
}

static void reduce_rows_ref(const float *h, int64_t k, int64_t w, int max, float *acc)
{
	for (int64_t c = 0; c < w; c++) {
		float s = h[c];
		for (int64_t j = 1; j < k; j++) {
			float r = h[j * w + c];
			s = max ? (r > s || r != r ? r : s) : s + r;
		}
		acc[c] = s;
	}
}

void kiln_edge_top_k_ref(const float *v, int64_t P, int64_t K, int64_t *ix, float *best)
{
	int64_t kept = 0;
	for (int64_t j = 0; j < P; j++) {
		float x = v[j];
		if (kept == K && !(x > best[K - 1]))
			continue;
		int64_t p = kept < K ? kept++ : K - 1;
		for (; p > 0 && x > best[p - 1]; p--) {
			best[p] = best[p - 1];
			ix[p] = ix[p - 1];
		}
		best[p] = x;
		ix[p] = j;
	}
}

const EdgeOps kiln_edge_ref = {gather_add_ref, reduce_rows_ref, kiln_edge_top_k_ref};

const EdgeOps *edgeconv_ops(void)
{
	switch (kiln_isa()) {
#ifdef KILN_HAVE_X86_VARIANTS
	case KILN_ISA_AVX512: return &kiln_edge_avx512;
	case KILN_ISA_AVX2: return &kiln_edge_avx2;
#endif
	default: return &kiln_edge_ref;
	}
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
	const EdgeOps *ops = edgeconv_ops();
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
			for (int64_t t = 0; t < tp; t++)
				ops->gather_add(e + t * k * W0, uv + (p0 + t) * 2 * W0, uv + W0, 2 * W0,
				                ix + (p0 + t) * k, k, W0);
			if (p->act[0].act != KILN_ACT_NONE)
				kiln_f32_act(e, rows * W0, &p->act[0]);
			int cur = 0;
			for (int l = 1; l < L; l++) {
				gemm_packed(rows, p->width[l], p->width[l - 1], h[cur], p->w[l], h[!cur],
				            p->bias[l], &p->act[l]);
				cur = !cur;
			}
			/* the other tile buffer is free: its first row holds the sums */
			float *acc = h[!cur], scale = p->aggregate == KILN_EDGECONV_MAX ? 1.0f
			                                                                : 1.0f / (float)k;
			for (int64_t t = 0; t < tp; t++) {
				ops->reduce_rows(h[cur] + t * k * WL, k, WL, p->aggregate == KILN_EDGECONV_MAX,
				                 acc);
				float *y = Y + n * WL * P + p0 + t;
				for (int64_t c = 0; c < WL; c++)
					y[c * P] = acc[c] * scale;
			}
		}
	}
	return KILN_OK;
}
