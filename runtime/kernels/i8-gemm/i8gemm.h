/*
 * i8-gemm/i8gemm.h - the blocked integer products shared by ref.c (the
 * reference loops, the dispatch and the requantization) and the variants
 * avx2.c and avx512.c (core.h: packing, blocking and the micro-kernels).
 *
 * The blocked path computes C = A' B' with A' (M x K) and B' (K x N) the
 * operands minus their zero points as int16 (each in [-255, 255] for 8-bit
 * operands) and int32 sums: a product is at most 255^2 = 65025 in
 * magnitude, so a sum of K <= KILN_I8_MAX_K of them fits int32 and is the
 * exact sum, in any order (bit for bit the reference's 64-bit sum). 16-bit
 * operands are split in two 8-bit parts (core.h). Longer K, or no work
 * memory, take the reference loops.
 *
 * A' is converted once per call into the caller's work memory (M rows of
 * K rounded up to even, int16); B' is packed on the fly, 32 columns and at
 * most I8_KC rows at a time, into a stack panel of pairs: element (k, j) at
 * [(k / 2) * 64 + 2 j + k % 2], so one 32-bit lane holds rows k and k + 1 of
 * column j, the layout vpmaddwd multiplies by a broadcast pair of A'. The
 * int32 sums of a panel (M x 32, in work) go to the output a row at a time
 * through kiln_i8_store_row (ref.c, the reference's requantization).
 */
#ifndef KILN_I8GEMM_H
#define KILN_I8GEMM_H

#include <stdint.h>

#include "kiln/kernels.h"

enum {
	I8_NR = 32,      /* columns of a panel */
	I8_KC = 512,     /* rows of a panel packed at once (32 KiB of int16) */
};

/* K for which a sum of K products of [-256, 256] operands fits int32:
 * 32767 * 65536 < 2^31. */
#define KILN_I8_MAX_K 32767

/* Wrap an unsigned 32-bit sum to int32 without relying on an
 * implementation-defined conversion. */
static inline int32_t i8_wrap32(uint32_t u)
{
	return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 2147483648u) - INT32_MAX - 1;
}

static inline int32_t q8_at(const void *p, int is_signed, int64_t i)
{
	return is_signed ? (int32_t)((const int8_t *)p)[i] : (int32_t)((const uint8_t *)p)[i];
}

/* Element i of 8- or 16-bit data. */
static inline int32_t q_at(const void *p, int is_signed, int wide, int64_t i)
{
	if (!wide)
		return q8_at(p, is_signed, i);
	return is_signed ? (int32_t)((const int16_t *)p)[i] : (int32_t)((const uint16_t *)p)[i];
}

static inline int32_t zero_at(const kiln_q8_operand *q, int64_t i)
{
	return q->zero ? q_at(q->zero, q->is_signed, q->wide, i * q->zero_stride) : 0;
}

static inline float scale_at(const kiln_q8_operand *q, int64_t i)
{
	return q->scale[i * q->scale_stride];
}

/* Exact mode's requantization (ref.c store_exact) as the variants compute
 * it a row of sums at a time, with the same double operations in the same
 * order (so the same bits): per element
 *   v = (double)sum * ((double)sa * (double)sb)   [+ (double)bias * bias_scale]
 *   v = rint(v / sy) + zy, clamped to [lo, hi] (NaN to lo)
 * sb and the bias term per column (GEMM: sbv, btv, I8_NR each) or one per
 * row (convolution). */
typedef struct I8Exact {
	double sy, zy, lo, hi;
	int has_bias;
	double sbv[I8_NR], btv[I8_NR];  /* GEMM: per column of the panel */
} I8Exact;

/* Where a row of sums goes (kiln_i8_store_row). */
typedef struct I8Out {
	int conv;                        /* 1: convolution (A = W, B = X); 0: GEMM */
	int32_t *y32;                    /* the int32 output (i8 ops), else NULL */
	const kiln_q8_output *y8;        /* the requantized output (q8 ops) */
	const kiln_q8_operand *ra;       /* the row operand: GEMM's A, the convolution's W */
	const kiln_q8_operand *cb;       /* the column operand: GEMM's B, the convolution's X */
	const int32_t *bias;             /* QLinearConv's int32 bias (not exact mode) */
} I8Out;

/* sums[0, w) of row m, columns [n0, n0 + w) of the product, into the output
 * elements [at, at + w): stored, or requantized exactly as the reference
 * loops do (the per-row / per-column scales and zero points of m and n0 + j;
 * for a convolution m is the output channel). */
void kiln_i8_store_row(const I8Out *o, int64_t m, int64_t n0, int64_t w, const int32_t *sums,
                       int64_t at);

/* A GEMM as kiln_i8_gemm: A [M, K] rows lda apart, B [K, N] rows ldb apart,
 * out rows ldy apart. */
typedef struct I8Gemm {
	int64_t M, N, K;
	const kiln_q8_operand *A, *B;
	int64_t lda, ldb, ldy;
	const I8Out *out;
} I8Gemm;

/* A convolution as kiln_i8_conv. */
typedef struct I8Conv {
	const kiln_window3d_params *p;
	const kiln_q8_operand *X, *W;
	const I8Out *out;
} I8Conv;

#ifdef KILN_HAVE_X86_VARIANTS
void kiln_i8b_gemm_avx2(const I8Gemm *g, void *work);
void kiln_i8b_conv_avx2(const I8Conv *c, void *work);
void kiln_i8b_gemm_avx512(const I8Gemm *g, void *work);
void kiln_i8b_conv_avx512(const I8Conv *c, void *work);
#ifdef KILN_HAVE_VNNI
/* The same with VNNI for two 8-bit operands (vnni256.c, vnni512.c) */
void kiln_i8v_gemm_avx2(const I8Gemm *g, void *work);
void kiln_i8v_conv_avx2(const I8Conv *c, void *work);
void kiln_i8v_gemm_avx512(const I8Gemm *g, void *work);
void kiln_i8v_conv_avx512(const I8Conv *c, void *work);
#endif
#endif

#endif
