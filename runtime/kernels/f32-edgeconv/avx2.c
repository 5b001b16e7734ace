/*
 * f32-edgeconv/avx2.c - EdgeConv's per-point loops (edgeconv.h) over 8 float
 * lanes, the last w % 8 one at a time.
 */
#include <immintrin.h>

#include "edgeconv.h"

static void gather_add(float *e, const float *u, const float *v_base, int64_t ld,
                       const int64_t *ix, int64_t k, int64_t w)
{
	for (int64_t j = 0; j < k; j++) {
		const float *v = v_base + ix[j] * ld;
		float *r = e + j * w;
		int64_t c = 0;
		for (; c + 8 <= w; c += 8)
			_mm256_storeu_ps(r + c, _mm256_add_ps(_mm256_loadu_ps(u + c), _mm256_loadu_ps(v + c)));
		for (; c < w; c++)
			r[c] = u[c] + v[c];
	}
}

static void reduce_rows(const float *h, int64_t k, int64_t w, int max, float *acc)
{
	int64_t c = 0;
	for (; c + 8 <= w; c += 8) {
		__m256 s = _mm256_loadu_ps(h + c);
		for (int64_t j = 1; j < k; j++) {
			__m256 r = _mm256_loadu_ps(h + j * w + c);
			s = max ? _mm256_blendv_ps(s, r, _mm256_cmp_ps(r, s, _CMP_NLE_UQ))
			        : _mm256_add_ps(s, r);
		}
		_mm256_storeu_ps(acc + c, s);
	}
	for (; c < w; c++) {
		float s = h[c];
		for (int64_t j = 1; j < k; j++) {
			float r = h[j * w + c];
			s = max ? (r > s || r != r ? r : s) : s + r;
		}
		acc[c] = s;
	}
}

/* top_k: ref.c's (without a compress instruction, ranking costs more) */
const EdgeOps kiln_edge_avx2 = {gather_add, reduce_rows, kiln_edge_top_k_ref};
