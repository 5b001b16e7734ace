/*
 * f32-edgeconv/edgeconv.h - the variants of EdgeConv's per-point loops (not
 * libkiln's API): ref.c's plain C, avx2.c and avx512.c, picked by
 * edgeconv_ops() (kiln_isa(): the one dispatch point besides the GEMM's).
 * Every variant adds and compares in the same order per element, so the
 * results are the same bits in each (no FMA, no reassociation).
 */
#ifndef KILN_F32_EDGECONV_H
#define KILN_F32_EDGECONV_H

#include <stdint.h>

typedef struct EdgeOps {
	/* row j of e (w floats each) = u + v_base[ix[j] * ld], for j < k */
	void (*gather_add)(float *e, const float *u, const float *v_base, int64_t ld,
	                   const int64_t *ix, int64_t k, int64_t w);
	/* acc = the sum (or, with max, the largest, NaN winning) of the k rows of h */
	void (*reduce_rows)(const float *h, int64_t k, int64_t w, int max, float *acc);
	/* the indices of the K best of v[0, P) (1 <= K <= P), best first, ties to
	 * the lower index, a NaN never better than a number; best: 2 P floats */
	void (*top_k)(const float *v, int64_t P, int64_t K, int64_t *ix, float *best);
} EdgeOps;

/* ref.c's top_k (one pass keeping the K best in order): avx2.c's, and what
 * avx512.c's falls back to for a row holding a NaN or K > 32. That one ranks
 * the candidates instead: a place is the number of elements better (greater,
 * or equal at a lower index), a total order that gives the same list. */
void kiln_edge_top_k_ref(const float *v, int64_t P, int64_t K, int64_t *ix, float *best);

extern const EdgeOps kiln_edge_ref, kiln_edge_avx2, kiln_edge_avx512;
const EdgeOps *edgeconv_ops(void);

#endif
