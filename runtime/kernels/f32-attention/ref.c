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
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention.h"

typedef float V;
/* one lane; scores 4 keys at a time; P V one row by 16 columns */
enum { W = 1, NB = 1, SC_KEYS = 4, PV_ROWS = 1, PV_VECS = 16 };
static inline V vzero(void) { return 0.0f; }
static inline V vset(float a) { return a; }
static inline V vload(const float *p) { return *p; }
static inline void vstore(float *p, V a) { *p = a; }
static inline V vadd(V a, V b) { return a + b; }
static inline V vsub(V a, V b) { return a - b; }
static inline V vmul(V a, V b) { return a * b; }
static inline V vdiv(V a, V b) { return a / b; }
static inline V vfma(V a, V b, V c) { return fmaf(a, b, c); }
/* as minps/maxps: the second operand when either is NaN */
static inline V vmin(V a, V b) { return a < b ? a : b; }
static inline V vmax(V a, V b) { return a > b ? a : b; }
/* 2^n for integral n in [-126, 127] (exp.h) */
static inline V vexp2i(V n)
{
	int32_t k = n == n ? (int32_t)n : 0;  /* a NaN lane's result is NaN anyway */
	uint32_t u = (uint32_t)(k + 127) << 23;
	V a;
	memcpy(&a, &u, sizeof a);
	return a;
}
/* a 1 x 1 block is its own transpose */
static inline void transpose_w(V r[1])
{
	(void)r;
}

#define SUFFIX(name) name##_ref
#define ATTN_OPS kiln_attn_ref
#include "body.h"
