/*
 * f32-attention/ref.c - the portable variant of the attention block: body.h
 * over one float lane in plain C11, with fmaf wherever the SIMD variants
 * fuse, so that it computes the same steps in the same order as they do
 * and gives the same bits (issue 30, docs/reproducibility.md): the query
 * scaled by scale log2 e, each score one FMA chain over d, the mask added
 * in units of log2 e, 2^x by f32-vmath's v_exp2_nonpos (AVX2's form: 2^n
 * as two factors), the sum over j in order, 1 / the sum, each output one
 * FMA chain over j, times it. Every lane of the SIMD variants is one query
 * row on its own, so one lane here is the same arithmetic. The reference
 * the SIMD variants are tested against, and what runs on targets without
 * them.
 */
#include "../f32-vmath/lane1.h"
#include "attention.h"

/* one lane; scores 4 keys at a time; P V one row by 16 columns */
enum { W = 1, NB = 1, SC_KEYS = 4, PV_ROWS = 1, PV_VECS = 16 };
static inline V vzero(void) { return 0.0f; }
/* a 1 x 1 block is its own transpose */
static inline void transpose_w(V r[1])
{
	(void)r;
}

#define SUFFIX(name) name##_ref
#define ATTN_OPS kiln_attn_ref
#include "body.h"
