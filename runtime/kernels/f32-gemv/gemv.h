/*
 * f32-gemv/gemv.h - the product of one row with packed weights (not
 * libkiln's API): y[0..N) = x[0..K) B (+ bias), B packed b32
 * (f32-gemm/pack.h).
 *
 * A Gemm or MatMul at batch 1, and every time step of a recurrent layer at
 * batch 1, is this vector-matrix product, and the GEMM core's tile of one
 * row keeps only two accumulator chains, so it waits on the FMA latency.
 * Both variants keep one FMA chain per column over the k of each K block
 * of kc rows (the last shorter: the caller's, kiln_gemm_kc or a narrow
 * layer's kiln_gemm_kc_n), the GEMM tiles' order (the same bits as the tiled
 * GEMM and the ref tile at every batch size: docs/reproducibility.md), the
 * FMA latency hidden by several panels' chains side by side (AVX2 two
 * panels, eight chains; AVX-512 two, four chains, and a narrow layer's K
 * blocks side by side too: two streams of B from L2, where four were
 * slower; four panels, eight chains, for a weight of at most 32 KiB, which
 * a call over and over finds in L1). f32-gemm/driver.c and
 * f32-rnn/rnn.c call them when kiln_isa() picks the variant; the ref variant
 * runs the GEMM core. kiln_gemv_f16_avx512 is the product on float16
 * weights in their natural layout (kiln_f32_gemm_f16b at batch 1).
 */
#ifndef KILN_F32_GEMV_H
#define KILN_F32_GEMV_H

#include <stdint.h>

#include "../isa.h"

/* The rows of K block bl (kc rows each, the last of K shorter): the
 * variants' blocks side by side run all of them for this many rows, then
 * the blocks before a shorter last one for the rest of kc. */
static inline int64_t kiln_gemv_last_rows(int64_t K, int64_t kc, int64_t bl)
{
	return K - bl * kc < kc ? K - bl * kc : kc;
}

void kiln_gemv_avx2(int64_t N, int64_t K, const float *x, const float *Bp, const float *bias,
                        float *y);
void kiln_gemv_avx512(int64_t N, int64_t K, const float *x, const float *Bp,
                          const float *bias, float *y);
/* The same with K blocks of kc rows (the last shorter) where the above take
 * kiln_gemm_kc(K): a narrow layer's (kiln_gemm_kc_n, f32-gemm/driver.c). */
void kiln_gemv_kc_avx2(int64_t N, int64_t K, int64_t kc, const float *x, const float *Bp,
                       const float *bias, float *y);
void kiln_gemv_kc_avx512(int64_t N, int64_t K, int64_t kc, const float *x, const float *Bp,
                         const float *bias, float *y);

/* y[n] = sum_k x[k] B[k ldb + n] (+ bias[n]): the product on float16
 * weights in their natural layout (a MatMul's weight kept as float16,
 * --weights-dtype=fp16), each row of B widened as it is read, up to 128
 * columns at a time, in the order the GEMM core sums a B packed on the fly
 * (kc rows a block: GEMM_PACK_KC, or a narrow layer's kiln_gemm_kc_n). AVX-512 only (the ref and AVX2 variants run the
 * GEMM core; a transposed float16 B runs f32-gemm's dot path). */
void kiln_gemv_f16_avx512(int64_t N, int64_t K, int64_t kc, const float *x, const uint16_t *B,
                          int64_t ldb, const float *bias, float *y);

typedef void (*kiln_gemv_f16_fn)(int64_t N, int64_t K, int64_t kc, const float *x,
                                 const uint16_t *B, int64_t ldb, const float *bias, float *y);

/* The float16 product of the variant kiln_isa() picks, or NULL (the caller
 * runs the GEMM core). */
static inline kiln_gemv_f16_fn kiln_gemv_f16_of(void)
{
#ifdef KILN_HAVE_X86_VARIANTS
	if (kiln_isa() == KILN_ISA_AVX512)
		return kiln_gemv_f16_avx512;
#endif
	return NULL;
}

typedef void (*kiln_gemv_fn)(int64_t N, int64_t K, const float *x, const float *Bp,
                                 const float *bias, float *y);

/* The product of the variant kiln_isa() picks, or NULL (ref: the caller
 * runs the GEMM core's one-row tile). */
static inline kiln_gemv_fn kiln_gemv_of(void)
{
	switch (kiln_isa()) {
#ifdef KILN_HAVE_X86_VARIANTS
	case KILN_ISA_AVX512: return kiln_gemv_avx512;
	case KILN_ISA_AVX2: return kiln_gemv_avx2;
#endif
	default: return NULL;
	}
}

typedef void (*kiln_gemv_kc_fn)(int64_t N, int64_t K, int64_t kc, const float *x,
                                const float *Bp, const float *bias, float *y);

/* kiln_gemv_of's product with the caller's K blocks, or NULL */
static inline kiln_gemv_kc_fn kiln_gemv_kc_of(void)
{
	switch (kiln_isa()) {
#ifdef KILN_HAVE_X86_VARIANTS
	case KILN_ISA_AVX512: return kiln_gemv_kc_avx512;
	case KILN_ISA_AVX2: return kiln_gemv_kc_avx2;
#endif
	default: return NULL;
	}
}

/* Y[M, N] (ldy) = X[M, K] (ldx) B + bias (bias may be NULL), B packed b32,
 * for a short K (a recurrent layer's input projection: K = its few input
 * features, M = its time steps): five rows by one panel at a time, every
 * sum in registers from 0 to the store, where the GEMM core's tiles spend
 * most of their time outside a k loop of a few steps. Each sum is one FMA
 * chain over k, then + bias, as in the GEMM core. AVX-512 only. */
void kiln_gemm_shortk_avx512(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
                             const float *Bp, const float *bias, float *Y, int64_t ldy);

typedef void (*kiln_gemm_shortk_fn)(int64_t M, int64_t N, int64_t K, const float *X,
                                    int64_t ldx, const float *Bp, const float *bias, float *Y,
                                    int64_t ldy);

/* The short-K product of the variant kiln_isa() picks, or NULL (the caller
 * runs the GEMM core). */
static inline kiln_gemm_shortk_fn kiln_gemm_shortk_of(void)
{
#ifdef KILN_HAVE_X86_VARIANTS
	if (kiln_isa() == KILN_ISA_AVX512)
		return kiln_gemm_shortk_avx512;
#endif
	return NULL;
}

#endif
