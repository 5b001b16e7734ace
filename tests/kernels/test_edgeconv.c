/*
 * test_edgeconv.c - kiln_f32_edgeconv against the EdgeConv block computed
 * the way exporters write it: for every edge (p, q = idx[p, j]) the feature
 * [x_p ; x_q - x_p] (2C values, the concat), then each 1x1 convolution with
 * its bias and activation, then the mean or max over the k edges of a point,
 * in double precision. The kernel instead projects layer 0 once per point
 * with (Wa - Wb) and Wb (built here from W0 exactly as the compiler's pass
 * does) and gathers, so this checks that identity as well.
 *
 * Cases: one to three layers, widths below, at and above a 32-column panel,
 * P not a multiple of the kernel's point tile, k = 1 and k = P, Relu, no
 * activation and LeakyRelu, mean and max. Tolerance: 1e-5 of the bound (the
 * sum of magnitudes of each output's terms, propagated through the layers;
 * float32 accumulation over at most 2C + widths terms). Invalid: a
 * neighbour index of P or -1 returns KILN_SHAPE_ERROR with Y untouched.
 * Guards catch writes outside Y and the work memory. kiln_f32_knn: see
 * run_knn.
 */
#include "kiln/kernels.h"
#include "runtime/kernels/f32-gemm/pack.h"

#include "harness.h"

typedef struct Case {
	int64_t N, C, P, k;
	int L;
	int64_t width[3];
	int act, agg;
} Case;

static double act_d(int act, double v)
{
	if (act == KILN_ACT_RELU)
		return v > 0 ? v : 0;
	if (act == KILN_ACT_LEAKY_RELU)
		return v >= 0 ? v : 0.1 * v;
	return v;
}

static void run_case(const Case *cs)
{
	int64_t N = cs->N, C = cs->C, P = cs->P, k = cs->k;
	int L = cs->L;
	float *X = xmalloc((size_t)(N * C * P) * sizeof *X);
	int64_t *idx = xmalloc((size_t)(N * P * k) * sizeof *idx);
	fill_uniform(X, N * C * P, -1, 1);
	for (int64_t i = 0; i < N * P * k; i++)
		idx[i] = rng_int(0, P - 1);
	float *W[3], *B[3], *Wp[3];
	kiln_edgeconv_params p = {.batch = N, .channels = C, .points = P, .k = k, .nlayers = L,
	                          .aggregate = cs->agg};
	int64_t cin = 2 * C;
	for (int l = 0; l < L; l++) {
		int64_t w = cs->width[l];
		W[l] = xmalloc((size_t)(w * cin) * sizeof *W[l]);
		B[l] = xmalloc((size_t)w * sizeof *B[l]);
		fill_uniform(W[l], w * cin, -0.5f, 0.5f);
		fill_uniform(B[l], w, -0.5f, 0.5f);
		p.width[l] = w;
		p.bias[l] = l == 1 ? NULL : B[l];  /* layer 1 without a bias */
		p.act[l] = (kiln_epilogue){.act = cs->act, .alpha = 0.1f};
		if (l == 0) {
			/* [(Wa - Wb); Wb] as [2w, C], packed as B = its transpose */
			float *d = xmalloc((size_t)(2 * w * C) * sizeof *d);
			for (int64_t o = 0; o < w; o++)
				for (int64_t c = 0; c < C; c++) {
					d[o * C + c] = W[0][o * 2 * C + c] - W[0][o * 2 * C + C + c];
					d[(w + o) * C + c] = W[0][o * 2 * C + C + c];
				}
			Wp[0] = xmalloc((size_t)(2 * w * C) * sizeof *Wp[0]);
			kiln_pack_b32(d, 1, C, C, 2 * w, Wp[0]);
			free(d);
		} else {
			Wp[l] = xmalloc((size_t)(w * cin) * sizeof *Wp[l]);
			kiln_pack_b32(W[l], 1, cin, cin, w, Wp[l]);
		}
		p.w[l] = Wp[l];
		cin = w;
	}
	int64_t WL = cs->width[L - 1], nout = N * WL * P;
	double *want = xmalloc((size_t)nout * sizeof *want), *bound = xmalloc((size_t)nout * sizeof *bound);
	int64_t wmax = 2 * C;
	for (int l = 0; l < L; l++)
		wmax = cs->width[l] > wmax ? cs->width[l] : wmax;
	double *h = xmalloc((size_t)(2 * wmax) * sizeof *h), *hb = xmalloc((size_t)(2 * wmax) * sizeof *hb);
	double *o = xmalloc((size_t)wmax * sizeof *o), *ob = xmalloc((size_t)wmax * sizeof *ob);
	for (int64_t n = 0; n < N; n++)
		for (int64_t pt = 0; pt < P; pt++) {
			double *acc = want + n * WL * P + pt, *accb = bound + n * WL * P + pt;
			for (int64_t j = 0; j < k; j++) {
				int64_t q = idx[(n * P + pt) * k + j];
				for (int64_t c = 0; c < C; c++) {
					double xp = (double)X[(n * C + c) * P + pt], xq = (double)X[(n * C + c) * P + q];
					h[c] = xp, h[C + c] = xq - xp;
					hb[c] = fabs(xp), hb[C + c] = fabs(xq) + fabs(xp);
				}
				int64_t ci = 2 * C;
				for (int l = 0; l < L; l++) {
					for (int64_t m = 0; m < cs->width[l]; m++) {
						double s = p.bias[l] ? (double)B[l][m] : 0, sb = fabs(s);
						for (int64_t c = 0; c < ci; c++) {
							s += (double)W[l][m * ci + c] * h[c];
							sb += fabs((double)W[l][m * ci + c]) * hb[c];
						}
						o[m] = act_d(cs->act, s), ob[m] = sb;
					}
					ci = cs->width[l];
					memcpy(h, o, (size_t)ci * sizeof *h);
					memcpy(hb, ob, (size_t)ci * sizeof *hb);
				}
				for (int64_t m = 0; m < WL; m++) {
					double *a = acc + m * P, *ab = accb + m * P;
					if (j == 0 || (cs->agg == KILN_EDGECONV_MAX && h[m] > *a))
						*a = j == 0 || cs->agg == KILN_EDGECONV_MAX ? h[m] : *a + h[m];
					else if (cs->agg != KILN_EDGECONV_MAX)
						*a += h[m];
					*ab = j == 0 ? hb[m] : (cs->agg == KILN_EDGECONV_MAX ? fmax(*ab, hb[m]) : *ab + hb[m]);
				}
			}
			if (cs->agg == KILN_EDGECONV_MEAN)
				for (int64_t m = 0; m < WL; m++)
					acc[m * P] /= (double)k, accb[m * P] /= (double)k;
		}
	int64_t nwork = kiln_f32_edgeconv_work(&p);
	Guarded gy, gw;
	float *Y = guarded_alloc(&gy, (size_t)nout * sizeof *Y, 4);
	float *work = guarded_alloc(&gw, (size_t)nwork * sizeof *work, 0);
	char what[256];
	snprintf(what, sizeof what, "edgeconv N=%lld C=%lld P=%lld k=%lld L=%d w0=%lld act=%d agg=%d (%s)",
	         (long long)N, (long long)C, (long long)P, (long long)k, L, (long long)cs->width[0],
	         cs->act, cs->agg, kiln_isa_name());
	CHECK(kiln_f32_edgeconv(&p, X, idx, Y, work) == KILN_OK, what);
	CHECK_CLOSE(what, Y, want, bound, nout, 1e-5);
	CHECK(guarded_intact(&gy) && guarded_intact(&gw), "edgeconv: guards intact");
	/* a neighbour outside the sample: refused before anything is written */
	memset(Y, 0x5A, (size_t)nout * sizeof *Y);
	int64_t at = rng_int(0, N * P * k - 1), keep = idx[at];
	for (int bad = 0; bad < 2; bad++) {
		idx[at] = bad ? -1 : P;
		int untouched = kiln_f32_edgeconv(&p, X, idx, Y, work) == KILN_SHAPE_ERROR;
		for (int64_t i = 0; i < nout; i++)
			untouched &= ((unsigned char *)Y)[i * 4] == 0x5A;
		CHECK(untouched, "edgeconv: a neighbour index outside [0, P) is refused");
	}
	idx[at] = keep;
	guarded_free(&gy);
	guarded_free(&gw);
	for (int l = 0; l < L; l++)
		free(W[l]), free(B[l]), free(Wp[l]);
	free(X), free(idx), free(want), free(bound), free(h), free(hb), free(o), free(ob);
}

/* kiln_f32_knn: the K indices must be distinct, in [0, P), in order of the
 * double-precision values (2 x_i.x_j - |x_j|^2) - |x_i|^2 and no unchosen
 * point better than a chosen one, both within 1e-5 of the bound (the sum of
 * the magnitudes of the terms); duplicated points make exact ties. */
static void run_knn(int64_t N, int64_t C, int64_t P, int64_t K)
{
	float *X = xmalloc((size_t)(N * C * P) * sizeof *X);
	fill_uniform(X, N * C * P, -1, 1);
	for (int64_t n = 0; n < N; n++)   /* point 3 repeats point 1 */
		for (int64_t c = 0; c < C && P > 3; c++)
			X[(n * C + c) * P + 3] = X[(n * C + c) * P + 1];
	int64_t *idx = xmalloc((size_t)(N * P * K) * sizeof *idx);
	Guarded gw;
	float *work = guarded_alloc(&gw, (size_t)kiln_f32_knn_work(C, P, K) * sizeof *work, 0);
	kiln_f32_knn(N, C, P, K, X, idx, work);
	double *v = xmalloc((size_t)P * sizeof *v);
	int ok = 1;
	for (int64_t n = 0; n < N && ok; n++)
		for (int64_t i = 0; i < P && ok; i++) {
			double bound = 0;
			for (int64_t j = 0; j < P; j++) {
				double dot = 0, sj = 0, si = 0, b = 0;
				for (int64_t c = 0; c < C; c++) {
					double a = (double)X[(n * C + c) * P + i], q = (double)X[(n * C + c) * P + j];
					dot += a * q, sj += q * q, si += a * a, b += fabs(a * q);
				}
				v[j] = (2 * dot - sj) - si;
				bound = fmax(bound, 2 * b + sj + si);
			}
			const int64_t *ix = idx + (n * P + i) * K;
			char *chosen = calloc((size_t)P, 1);
			for (int64_t m = 0; m < K && ok; m++) {
				ok &= ix[m] >= 0 && ix[m] < P && !chosen[ix[m]];
				if (ok)
					chosen[ix[m]] = 1;
				if (ok && m > 0)
					ok &= v[ix[m]] <= v[ix[m - 1]] + 1e-5 * bound;
			}
			for (int64_t j = 0; j < P && ok; j++)
				ok &= chosen[j] || v[j] <= v[ix[K - 1]] + 1e-5 * bound;
			free(chosen);
		}
	char what[160];
	snprintf(what, sizeof what, "knn N=%lld C=%lld P=%lld K=%lld (%s)", (long long)N,
	         (long long)C, (long long)P, (long long)K, kiln_isa_name());
	CHECK(ok, what);
	CHECK(guarded_intact(&gw), "knn: guards intact");
	guarded_free(&gw);
	free(X), free(idx), free(v);
}

int main(void)
{
	run_knn(2, 2, 100, 17);
	run_knn(3, 32, 37, 16);
	run_knn(1, 5, 9, 9);
	run_knn(2, 3, 1, 1);
	run_knn(1, 7, 50, 1);
	run_knn(1, 4, 60, 40);   /* K > 32: avx512.c falls back to ref.c */
	run_knn(4, 3, 20, 4);    /* P <= 32: avx512.c ranks the row in one pass */
	run_knn(2, 6, 32, 16);
	run_knn(2, 2, 16, 16);
	run_knn(2, 2, 33, 4);    /* P = 33: the two passes again */

	static const Case cases[] = {
		{2, 16, 100, 16, 3, {32, 32, 32}, KILN_ACT_RELU, KILN_EDGECONV_MEAN},
		{1, 32, 37, 16, 3, {64, 64, 64}, KILN_ACT_RELU, KILN_EDGECONV_MEAN},
		{3, 5, 9, 9, 2, {7, 33}, KILN_ACT_NONE, KILN_EDGECONV_MAX},
		{2, 3, 20, 1, 1, {40}, KILN_ACT_LEAKY_RELU, KILN_EDGECONV_MEAN},
		{1, 8, 300, 4, 2, {16, 12}, KILN_ACT_RELU, KILN_EDGECONV_MAX},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run_case(&cases[i]);
	return harness_report();
}
