/*
 * f32-edgeconv/avx512.c - EdgeConv's per-point loops (edgeconv.h) over 16
 * float lanes, the last w % 16 through masked loads and stores.
 */
#include <immintrin.h>

#include "edgeconv.h"

static inline __mmask16 lanes(int64_t n)
{
	return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
}

static void gather_add(float *e, const float *u, const float *v_base, int64_t ld,
                       const int64_t *ix, int64_t k, int64_t w)
{
	for (int64_t j = 0; j < k; j++) {
		const float *v = v_base + ix[j] * ld;
		float *r = e + j * w;
		for (int64_t c = 0; c < w; c += 16) {
			__mmask16 m = lanes(w - c);
			__m512 a = _mm512_maskz_loadu_ps(m, u + c), b = _mm512_maskz_loadu_ps(m, v + c);
			_mm512_mask_storeu_ps(r + c, m, _mm512_add_ps(a, b));
		}
	}
}

static void reduce_rows(const float *h, int64_t k, int64_t w, int max, float *acc)
{
	for (int64_t c = 0; c < w; c += 16) {
		__mmask16 m = lanes(w - c);
		__m512 s = _mm512_maskz_loadu_ps(m, h + c);
		for (int64_t j = 1; j < k; j++) {
			__m512 r = _mm512_maskz_loadu_ps(m, h + j * w + c);
			if (max) {
				/* r > s or r is NaN: r (NaN wins, as in ref.c) */
				__mmask16 take = _mm512_cmp_ps_mask(r, s, _CMP_NLE_UQ);
				s = _mm512_mask_blend_ps(take, s, r);
			} else {
				s = _mm512_add_ps(s, r);
			}
		}
		_mm512_mask_storeu_ps(acc + c, m, s);
	}
}

/* The rank of gm[q], lane q of the 32 maxima (g0, g1): how many are greater,
 * and how many equal ones stand before it. */
static inline int64_t rank32(__m512 g0, __m512 g1, float v, int q)
{
	__m512 x = _mm512_set1_ps(v);
	__mmask16 b0 = q >= 16 ? (__mmask16)0xFFFF : lanes(q), b1 = q > 16 ? lanes(q - 16) : 0;
	return __builtin_popcount(_mm512_cmp_ps_mask(g0, x, _CMP_GT_OQ)) +
	       __builtin_popcount(_mm512_cmp_ps_mask(g1, x, _CMP_GT_OQ)) +
	       __builtin_popcount(_mm512_mask_cmp_ps_mask(b0, g0, x, _CMP_EQ_OQ)) +
	       __builtin_popcount(_mm512_mask_cmp_ps_mask(b1, g1, x, _CMP_EQ_OQ));
}

/* A lower bound t of the K-th best (K <= 32): the K-th best of the maxima of
 * 32 interleaved groups (K elements are >= t). The elements >= t, compressed
 * with their indices (as floats: P < 2^24), hold the K best, and each one's
 * rank among them (those greater, or equal at a lower index) is its rank in
 * the row. */
static void top_k(const float *v, int64_t P, int64_t K, int64_t *ix, float *best)
{
	if (K > 32 || P >= (1 << 24)) {
		kiln_edge_top_k_ref(v, P, K, ix, best);
		return;
	}
	const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
	__m512 g0 = ninf, g1 = ninf;
	__mmask16 nan = 0;
	for (int64_t j0 = 0; j0 < P; j0 += 16) {
		__m512 a = _mm512_mask_loadu_ps(ninf, lanes(P - j0), v + j0);
		nan |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
		if (j0 & 16)
			g1 = _mm512_max_ps(g1, a);
		else
			g0 = _mm512_max_ps(g0, a);
	}
	if (nan) {
		kiln_edge_top_k_ref(v, P, K, ix, best);
		return;
	}
	/* the K-th best of the 32 maxima: K of them, so K elements, are >= it.
	 * With P <= 32 the maxima are the row itself (lane q holds element q),
	 * so the rank computed here is each element's rank in the row: those of
	 * rank < K are the answer, and the second pass is not needed. */
	float gm[32], tk = -__builtin_inff();
	_mm512_storeu_ps(gm, g0);
	_mm512_storeu_ps(gm + 16, g1);
	if (P <= 32) {   /* the whole row: its ranks are the answer */
		for (int q = 0; q < (int)P; q++) {
			int64_t better = rank32(g0, g1, gm[q], q);
			if (better < K)
				ix[better] = q;
		}
		return;
	}
	/* a loop of a fixed 32 (unrolled; a bound known only at run time made
	 * ParticleNet's P = 100 rows 14 % slower) */
	for (int q = 0; q < 32; q++)
		if (rank32(g0, g1, gm[q], q) == K - 1)
			tk = gm[q];
	__m512 t = _mm512_set1_ps(tk);
	float *cv = best, *ci = best + P;
	int64_t nc = 0;
	const __m512 lane = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	for (int64_t j0 = 0; j0 < P; j0 += 16) {
		__mmask16 in = lanes(P - j0);
		__m512 a = _mm512_maskz_loadu_ps(in, v + j0);
		__mmask16 keep = _mm512_mask_cmp_ps_mask(in, a, t, _CMP_GE_OQ);
		_mm512_mask_compressstoreu_ps(cv + nc, keep, a);
		_mm512_mask_compressstoreu_ps(ci + nc, keep,
		                              _mm512_add_ps(lane, _mm512_set1_ps((float)j0)));
		nc += __builtin_popcount(keep);
	}
	for (int64_t q = 0; q < nc; q++) {
		__m512 x = _mm512_set1_ps(cv[q]);
		int64_t better = 0;
		for (int64_t m0 = 0; m0 < nc; m0 += 16) {
			__mmask16 in = lanes(nc - m0);
			__mmask16 before = q > m0 ? lanes(q - m0) : 0;
			__m512 a = _mm512_maskz_loadu_ps(in, cv + m0);
			better += __builtin_popcount(_mm512_mask_cmp_ps_mask(in, a, x, _CMP_GT_OQ));
			better += __builtin_popcount(_mm512_mask_cmp_ps_mask(before, a, x, _CMP_EQ_OQ));
		}
		if (better < K)
			ix[better] = (int64_t)ci[q];
	}
}

const EdgeOps kiln_edge_avx512 = {gather_add, reduce_rows, top_k};
