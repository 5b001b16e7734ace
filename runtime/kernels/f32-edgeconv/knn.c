/*
 * f32-edgeconv/knn.c - the kNN of EdgeConv (kiln_f32_knn): per sample, the
 * points transposed, all dot products by one GEMM (kiln_f32_gemm, whose
 * variant is the dispatch point), then per point one pass over the row
 * keeping the K best so far in order (a candidate no better than the worst
 * kept costs one compare; K is much smaller than P in ParticleNet: 17 of
 * 100), in the same arithmetic order as the exported graph's
 * Mul/Sub/Sub so its values are the ones TopK would see. The selection is
 * edgeconv_ops()'s top_k (ref.c's insertion; avx512.c ranks the candidates
 * above a bound by vector compares).
 */
#include "edgeconv.h"
#include "kiln/kernels.h"

int64_t kiln_f32_knn_work(int64_t C, int64_t P, int64_t K)
{
	(void)K;
	return P * C + P * P + P + 2 * P;
}

void kiln_f32_knn(int64_t N, int64_t C, int64_t P, int64_t K, const float *X, int64_t *idx,
                  float *work)
{
	if (K < 1)
		return;
	float *xt = work, *dot = xt + P * C, *sq = dot + P * P, *best = sq + P;
	const EdgeOps *ops = edgeconv_ops();
	for (int64_t n = 0; n < N; n++) {
		const float *x = X + n * C * P;
		for (int64_t c = 0; c < C; c++)
			for (int64_t j = 0; j < P; j++)
				xt[j * C + c] = x[c * P + j];
		for (int64_t j = 0; j < P; j++) {
			float s = 0.0f;
			for (int64_t c = 0; c < C; c++)
				s += x[c * P + j] * x[c * P + j];
			sq[j] = s;
		}
		kiln_f32_gemm(P, P, C, 1.0f, xt, C, 1, x, P, 1, 0.0f, dot, P);
		for (int64_t i = 0; i < P; i++) {
			float *row = dot + i * P;
			for (int64_t j = 0; j < P; j++)
				row[j] = (2.0f * row[j] - sq[j]) - sq[i];
			ops->top_k(row, P, K, idx + (n * P + i) * K, best);
		}
	}
}
