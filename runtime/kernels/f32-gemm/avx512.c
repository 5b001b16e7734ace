/*
 * f32-gemm/avx512.c - the AVX-512 micro-kernel: a tile of up to 12 rows by 32
 * columns (one b32 panel) of C held in 24 zmm accumulators, B rows loaded as
 * two zmm (masked only when the panel is narrower than 32), A broadcast one
 * element at a time, k unrolled by four. The row count is a compile-time
 * constant in each copy of the body (always_inline + a switch), so no loop
 * over rows is left at run time. The epilogue's parameters are read once per
 * tile into registers (stores to C could alias them otherwise). One
 * row alone is the same tile of one row: one FMA chain per column, as every
 * row of every variant sums (issue 30; its four partial sums over k mod 4
 * gave a one-row product other bits).
 * kiln_gemm_tile64_avx512: up to 6 rows by two packed panels side by side
 * (64 columns, the same 24 accumulators, half the broadcasts of A per FMA).
 * Compiled with -mavx512f -mavx512vl -mavx512bw -mavx512dq (meson.build).
 */
#include <immintrin.h>

#include "gemm.h"

#define INLINE static inline __attribute__((always_inline))

/* The tile's epilogue parameters, read once into locals (C's stores could
 * alias the GemmTile's floats otherwise, and every row would reload them). */
typedef struct Epi {
	__m512 alpha, cbeta, lo, hi, cb0, cb1;
	int scale, with_c, final, act;
	const float *row_bias, *res;
	int64_t ldres;
} Epi;

INLINE Epi epi_of(const GemmTile *t, __mmask16 m0, __mmask16 m1)
{
	Epi e = {.alpha = _mm512_set1_ps(t->alpha), .cbeta = _mm512_set1_ps(t->cbeta),
	         .lo = _mm512_set1_ps(t->act_alpha), .hi = _mm512_set1_ps(t->act_beta),
	         .cb0 = _mm512_setzero_ps(), .cb1 = _mm512_setzero_ps(),
	         .scale = t->alpha != 1.0f, .with_c = t->cbeta != 0.0f, .final = t->final,
	         .act = t->act, .row_bias = t->row_bias, .res = t->res, .ldres = t->ldres};
	if (t->final && t->col_bias) {
		e.cb0 = _mm512_maskz_loadu_ps(m0, t->col_bias);
		e.cb1 = _mm512_maskz_loadu_ps(m1, t->col_bias + 16);
	}
	return e;
}

INLINE __m512 epi(__m512 v, const Epi *e, int i, int half, __mmask16 m, __m512 cold)
{
	if (e->scale)
		v = _mm512_mul_ps(v, e->alpha);
	if (e->with_c)  /* beta C rounded, then added, as kiln_gemm_tile_ref adds it */
		v = _mm512_add_ps(v, _mm512_mul_ps(cold, e->cbeta));
	if (!e->final)
		return v;
	v = _mm512_add_ps(v, half ? e->cb1 : e->cb0);
	if (e->row_bias)
		v = _mm512_add_ps(v, _mm512_set1_ps(e->row_bias[i]));
	if (e->res)
		v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, e->res + i * e->ldres + 16 * half));
	switch (e->act) {
	case KILN_ACT_RELU:
		/* x > 0 ? x : 0, NaN -> 0 as the scalar code does */
		v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), v);
		break;
	case KILN_ACT_LEAKY_RELU: {
		__mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
		v = _mm512_mask_mul_ps(v, neg, v, e->lo);
		break;
	}
	case KILN_ACT_CLIP:
		/* x < lo ? lo : x > hi ? hi : x; NaN stays NaN */
		v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, e->lo, _CMP_LT_OQ), e->lo);
		v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, e->hi, _CMP_GT_OQ), e->hi);
		break;
	default:
		break;
	}
	return v;
}

INLINE void store_rows(const GemmTile *t, int mr, int two, __mmask16 m0, __mmask16 m1,
                       __m512 *acc0, __m512 *acc1)
{
	Epi e = epi_of(t, m0, m1);
	float *c = t->C;
	int64_t ldc = t->ldc;
	#pragma GCC unroll 16
	for (int i = 0; i < mr; i++, c += ldc) {
		__m512 c0 = _mm512_setzero_ps(), c1 = _mm512_setzero_ps();
		if (e.with_c) {
			c0 = _mm512_maskz_loadu_ps(m0, c);
			if (two)
				c1 = _mm512_maskz_loadu_ps(m1, c + 16);
		}
		_mm512_mask_storeu_ps(c, m0, epi(acc0[i], &e, i, 0, m0, c0));
		if (two)
			_mm512_mask_storeu_ps(c + 16, m1, epi(acc1[i], &e, i, 1, m1, c1));
	}
}

/* One k of the tile: B's row k (two halves) times A's column k. */
INLINE void tile_step(const float *a, int64_t lda, const float *b, const int mr, const int two,
                      __mmask16 m0, __mmask16 m1, __m512 *acc0, __m512 *acc1)
{
	__m512 b0 = two ? _mm512_loadu_ps(b) : _mm512_maskz_loadu_ps(m0, b);
	/* two == 2: a full panel, no mask */
	__m512 b1 = two == 2 ? _mm512_loadu_ps(b + 16) : two ? _mm512_maskz_loadu_ps(m1, b + 16) : b0;
	#pragma GCC unroll 16
	for (int i = 0; i < mr; i++) {
		__m512 av = _mm512_set1_ps(a[i * lda]);
		acc0[i] = _mm512_fmadd_ps(av, b0, acc0[i]);
		if (two)
			acc1[i] = _mm512_fmadd_ps(av, b1, acc1[i]);
	}
}

/* Four k of the tile (B's rows ldb apart) */
INLINE void tile_step4(const float *a, int64_t lda, const float *b, int64_t ldb, const int mr,
                       const int two, __mmask16 m0, __mmask16 m1, __m512 *acc0, __m512 *acc1)
{
	tile_step(a, lda, b, mr, two, m0, m1, acc0, acc1);
	tile_step(a + 1, lda, b + ldb, mr, two, m0, m1, acc0, acc1);
	tile_step(a + 2, lda, b + 2 * ldb, mr, two, m0, m1, acc0, acc1);
	tile_step(a + 3, lda, b + 3 * ldb, mr, two, m0, m1, acc0, acc1);
}

/* k unrolled by four, so the loop costs no FMA slots. */
INLINE void tile_rows(const GemmTile *t, const int mr, const int two)
{
	__m512 acc0[12], acc1[12];
	#pragma GCC unroll 16
	for (int i = 0; i < mr; i++)
		acc0[i] = acc1[i] = _mm512_setzero_ps();
	int w = t->w;
	__mmask16 m0 = w >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << w) - 1);
	__mmask16 m1 = w >= 32 ? (__mmask16)0xffff : w > 16 ? (__mmask16)((1u << (w - 16)) - 1) : 0;
	const float *a = t->A, *b = t->B;
	int64_t lda = t->lda, ldb = t->ldb, K = t->K, k = 0;
	if (t->pf) {
		/* the next tile's A, spread over this one's k steps */
		const char *pf = (const char *)t->pf, *pf_end = (const char *)(t->pf + t->pf_n);
		int64_t per = (t->pf_n * 4 / 64 + K / 4) / (K / 4 > 0 ? K / 4 : 1) + 1;
		for (; k + 4 <= K; k += 4, b += 4 * ldb) {
			for (int64_t q = 0; q < per && pf < pf_end; q++, pf += 64)
				_mm_prefetch(pf, _MM_HINT_T0);
			tile_step4(a + k, lda, b, ldb, mr, two, m0, m1, acc0, acc1);
		}
	}
	for (; k + 4 <= K; k += 4, b += 4 * ldb) {
		tile_step4(a + k, lda, b, ldb, mr, two, m0, m1, acc0, acc1);
	}
	for (; k < K; k++, b += ldb)
		tile_step(a + k, lda, b, mr, two, m0, m1, acc0, acc1);
	store_rows(t, mr, two, m0, m1, acc0, acc1);
}

/* tile_rows over t->K rows in K blocks of t->kb (a narrow layer's,
 * kiln_gemm_kc_n; mr <= 6, or 12 for a panel of at most 16 columns): each block's sums one FMA chain from 0 in acc,
 * then added to the blocks' total in registers (tot = alpha acc + tot; the
 * first block alpha acc + cbeta C, as epi() takes it), the epilogue and the
 * store once at the end: what one tile call per block computes through C
 * (C = alpha acc + C), bit for bit, without C's loads and stores between
 * blocks (12-row tiles of a narrow layer at M = 16, one call per block of 8
 * rows, took three times as long: the masked stores of C do not forward to
 * the next block's loads). */
INLINE void tile_rows_kb(const GemmTile *t, const int mr, const int two)
{
	__m512 acc0[12], acc1[12], tot0[12], tot1[12];
	int w = t->w;
	__mmask16 m0 = w >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << w) - 1);
	__mmask16 m1 = w >= 32 ? (__mmask16)0xffff : w > 16 ? (__mmask16)((1u << (w - 16)) - 1) : 0;
	__m512 alpha = _mm512_set1_ps(t->alpha), cbeta = _mm512_set1_ps(t->cbeta);
	int scale = t->alpha != 1.0f, with_c = t->cbeta != 0.0f;
	const float *a = t->A, *b = t->B;
	int64_t lda = t->lda, ldb = t->ldb, K = t->K, kb = t->kb;
#pragma GCC unroll 12
	for (int i = 0; i < mr; i++)
		tot0[i] = tot1[i] = _mm512_setzero_ps();  /* (K > kb: the first block sets them) */
	for (int64_t k0 = 0; k0 < K; k0 += kb) {
		int64_t k1 = K - k0 < kb ? K : k0 + kb, k = k0;
#pragma GCC unroll 12
		for (int i = 0; i < mr; i++)
			acc0[i] = acc1[i] = _mm512_setzero_ps();
		for (; k + 4 <= k1; k += 4, b += 4 * ldb) {
			tile_step4(a + k, lda, b, ldb, mr, two, m0, m1, acc0, acc1);
		}
		for (; k < k1; k++, b += ldb)
			tile_step(a + k, lda, b, mr, two, m0, m1, acc0, acc1);
#pragma GCC unroll 12
		for (int i = 0; i < mr; i++) {
			__m512 v0 = scale ? _mm512_mul_ps(acc0[i], alpha) : acc0[i];
			__m512 v1 = scale ? _mm512_mul_ps(acc1[i], alpha) : acc1[i];
			if (k0 > 0) {
				tot0[i] = _mm512_add_ps(v0, tot0[i]);
				tot1[i] = _mm512_add_ps(v1, tot1[i]);
			} else if (with_c) {
				const float *c = t->C + i * t->ldc;
				tot0[i] = _mm512_add_ps(v0, _mm512_mul_ps(_mm512_maskz_loadu_ps(m0, c), cbeta));
				tot1[i] = two ? _mm512_add_ps(v1, _mm512_mul_ps(_mm512_maskz_loadu_ps(m1, c + 16),
				                                                cbeta))
				              : v1;
			} else {
				tot0[i] = v0;
				tot1[i] = v1;
			}
		}
	}
	GemmTile e = *t;  /* C and alpha taken: the epilogue (if final) and the store */
	e.alpha = 1.0f, e.cbeta = 0.0f;
	store_rows(&e, mr, two, m0, m1, tot0, tot1);
}

#if defined(__GNUC__) && defined(__x86_64__)
/* The full tile (12 rows of A, lda apart, by a whole panel of 32: B's rows
 * 32 floats back to back) in GNU C assembly, so that the 24 accumulators
 * stay in zmm0-23 and the k loop advances five pointers per four k whatever
 * code surrounds it (gcc moved accumulators between registers or spilled
 * them once that code changed). A's rows are read from four bases (rows i,
 * i + 4 and i + 8 from base i, lda scaled by 4 and 8). Each four k also
 * prefetch one line of the next tile's A (t->pf; this tile's A when there is
 * none). The tile's end is in the same block where it can be (flags,
 * tile_asm_flags): + C (cbeta 1), + the column bias and ReLU on the final K
 * block, then the stores; the same FMAs in the same order as tile_rows and
 * the same epilogue as epi(), so every row gets the same bits either way. */
#define KA_ROW(i, lo, hi, tmp, s) \
	"vbroadcastss " #s "*4" KA_A_##i ", %%zmm" #tmp "\n\t" \
	"vfmadd231ps %%zmm24, %%zmm" #tmp ", %%zmm" #lo "\n\t" \
	"vfmadd231ps %%zmm25, %%zmm" #tmp ", %%zmm" #hi "\n\t"
/* row i of A at a_{i % 4} + (i / 4) * 4 * lda (bytes, %[l]) */
#define KA_A_0 "(%[a0])"
#define KA_A_1 "(%[a1])"
#define KA_A_2 "(%[a2])"
#define KA_A_3 "(%[a3])"
#define KA_A_4 "(%[a0],%[l],4)"
#define KA_A_5 "(%[a1],%[l],4)"
#define KA_A_6 "(%[a2],%[l],4)"
#define KA_A_7 "(%[a3],%[l],4)"
#define KA_A_8 "(%[a0],%[l],8)"
#define KA_A_9 "(%[a1],%[l],8)"
#define KA_A_10 "(%[a2],%[l],8)"
#define KA_A_11 "(%[a3],%[l],8)"
#define KA_STEP11(s) \
	"vmovups (" #s "*128)(%[b]), %%zmm24\n\t" \
	"vmovups (" #s "*128+64)(%[b]), %%zmm25\n\t" \
	KA_ROW(0, 0, 12, 26, s) KA_ROW(1, 1, 13, 27, s) KA_ROW(2, 2, 14, 28, s) \
	KA_ROW(3, 3, 15, 29, s) KA_ROW(4, 4, 16, 30, s) KA_ROW(5, 5, 17, 31, s) \
	KA_ROW(6, 6, 18, 26, s) KA_ROW(7, 7, 19, 27, s) KA_ROW(8, 8, 20, 28, s) \
	KA_ROW(9, 9, 21, 29, s) KA_ROW(10, 10, 22, 30, s)
#define KA_STEP12(s) KA_STEP11(s) KA_ROW(11, 11, 23, 31, s)
/* zmm24 (the bias's low half) for accumulators 0-11, zmm25 for 12-23 */
#define KA_HALF(r) KA_HALF_##r
#define KA_HALF_0 "24"
#define KA_HALF_1 "24"
#define KA_HALF_2 "24"
#define KA_HALF_3 "24"
#define KA_HALF_4 "24"
#define KA_HALF_5 "24"
#define KA_HALF_6 "24"
#define KA_HALF_7 "24"
#define KA_HALF_8 "24"
#define KA_HALF_9 "24"
#define KA_HALF_10 "24"
#define KA_HALF_11 "24"
#define KA_HALF_12 "25"
#define KA_HALF_13 "25"
#define KA_HALF_14 "25"
#define KA_HALF_15 "25"
#define KA_HALF_16 "25"
#define KA_HALF_17 "25"
#define KA_HALF_18 "25"
#define KA_HALF_19 "25"
#define KA_HALF_20 "25"
#define KA_HALF_21 "25"
#define KA_HALF_22 "25"
#define KA_HALF_23 "25"
#define KA_ZERO(r) "vpxord %%zmm" #r ", %%zmm" #r ", %%zmm" #r "\n\t"
#define KA_4(f, a, b, c, d) f(a) f(b) f(c) f(d)
#define KA_24(f) \
	KA_4(f, 0, 1, 2, 3) KA_4(f, 4, 5, 6, 7) KA_4(f, 8, 9, 10, 11) \
	KA_4(f, 12, 13, 14, 15) KA_4(f, 16, 17, 18, 19) KA_4(f, 20, 21, 22, 23)

#define KA_ADD(i, hi) \
	"vaddps (%[t]), %%zmm" #i ", %%zmm" #i "\n\t" \
	"vaddps 64(%[t]), %%zmm" #hi ", %%zmm" #hi "\n\t" \
	"add %[ldc], %[t]\n\t"
#define KA_STORE(i, hi) \
	"vmovups %%zmm" #i ", (%[t])\n\t" \
	"vmovups %%zmm" #hi ", 64(%[t])\n\t" \
	"add %[ldc], %[t]\n\t"
#define KA_ROWS11(f) \
	f(0, 12) f(1, 13) f(2, 14) f(3, 15) f(4, 16) f(5, 17) \
	f(6, 18) f(7, 19) f(8, 20) f(9, 21) f(10, 22)
#define KA_ROWS12(f) KA_ROWS11(f) f(11, 23)
#define KA_BIAS(r) "vaddps %%zmm" KA_HALF(r) ", %%zmm" #r ", %%zmm" #r "\n\t"
#define KA_RELU(r) "vmaxps %%zmm26, %%zmm" #r ", %%zmm" #r "\n\t"

enum { KA_ADDC = 1, KA_FINAL = 2, KA_RELU_ON = 4 };

/* The epilogues it finishes itself (flags): + C (cbeta 1), then on the
 * final K block + the column bias and ReLU, as epi() computes them. */
static int tile_asm_flags(const GemmTile *t)
{
	if (t->alpha != 1.0f || (t->cbeta != 0.0f && t->cbeta != 1.0f))
		return -1;
	if (t->final && (t->row_bias || t->res || (t->act != KILN_ACT_NONE && t->act != KILN_ACT_RELU)))
		return -1;
	return (t->cbeta != 0.0f ? KA_ADDC : 0) | (t->final ? KA_FINAL : 0) |
	       (t->final && t->act == KILN_ACT_RELU ? KA_RELU_ON : 0);
}

static const float zero_bias[KILN_PACK_NR];

/* tile_asm(t, flags, n): the tile of n = 11 or 12 rows */
/* The k loop (STEP(s): k + s of four; ADV(da, db): the pointers of A and B
 * on by da and db bytes): accumulators zeroed, steps of four k with a
 * prefetch of t->pf, then the k left over (flags >> 8) one at a time. */
#define KA_LOOP(STEP, ADV) \
	KA_24(KA_ZERO) \
	"test %[n4], %[n4]\n\t" \
	"jz 2f\n" \
	"1:\n\t" \
	STEP(0) STEP(1) STEP(2) STEP(3) \
	"prefetcht0 (%[pf])\n\t" \
	"add $64, %[pf]\n\t" \
	ADV(16, 512) \
	"dec %[n4]\n\t" \
	"jnz 1b\n" \
	"2:\n\t" \
	"mov %[fl], %k[t]\n\t" \
	"shr $8, %k[t]\n\t" \
	"jz 4f\n" \
	"3:\n\t" \
	STEP(0) \
	ADV(4, 128) \
	"dec %k[t]\n\t" \
	"jnz 3b\n" \
	"4:\n\t"
/* The tile's end (ROWS(f): f for each row's accumulators; BIAS_LOAD: the
 * column bias into the registers KA_BIAS-like f add): + C (flags & 1), then
 * + the bias (flags & 2) and ReLU against a zeroed ZERO (flags & 4), the
 * stores. */
#define KA_END(ROWS, ADD, BIAS_LOAD, BIAS, ZERO, RELU, STORE) \
	"test $1, %[fl]\n\t" \
	"jz 5f\n\t" \
	"mov %[c], %[t]\n\t" \
	ROWS(ADD) \
	"5:\n\t" \
	KA_FINISH(ROWS, BIAS_LOAD, BIAS, ZERO, RELU, STORE)
/* KA_END's part after + C */
#define KA_FINISH(ROWS, BIAS_LOAD, BIAS, ZERO, RELU, STORE) \
	"test $2, %[fl]\n\t" \
	"jz 10f\n\t" \
	BIAS_LOAD \
	ROWS(BIAS) \
	"test $4, %[fl]\n\t" \
	"jz 10f\n\t" \
	"vpxord %%zmm" ZERO ", %%zmm" ZERO ", %%zmm" ZERO "\n\t" \
	ROWS(RELU) \
	"10:\n\t" \
	"mov %[c], %[t]\n\t" \
	ROWS(STORE)
#define KA_CLOBBERS \
	"zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", "zmm10", \
	"zmm11", "zmm12", "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "zmm18", "zmm19", "zmm20", \
	"zmm21", "zmm22", "zmm23", "zmm24", "zmm25", "zmm26", "zmm27", "zmm28", "zmm29", "zmm30", \
	"zmm31", "cc", "memory"
#define KA_ADV(da, db) \
	"add $" #da ", %[a0]\n\t" \
	"add $" #da ", %[a1]\n\t" \
	"add $" #da ", %[a2]\n\t" \
	"add $" #da ", %[a3]\n\t" \
	"add $" #db ", %[b]\n\t"
#define KA_BIAS2(i, hi) KA_BIAS(i) KA_BIAS(hi)
#define KA_RELU2(i, hi) KA_RELU(i) KA_RELU(hi)
#define KA_BIAS_LOAD \
	"vmovups (%[bias]), %%zmm24\n\t" \
	"vmovups 64(%[bias]), %%zmm25\n\t"

/* C's lines a tile writes (rows of `lines` cache lines), owned before its
 * stores (C is often a fresh block of a large arena, not in any cache) */
static inline void prefetch_c(const float *c, int64_t ldc, int rows, int lines)
{
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < lines; j++)
			__asm__ volatile("prefetchw (%0)" : : "r"((const char *)(c + i * ldc) + 64 * j));
}

/* tile_asm(t, flags, n): the tile of n = 11 or 12 rows */
#define KA_TILE(n) \
static void tile_asm##n(const GemmTile *t, int flags) \
{ \
	int64_t l = t->lda * (int64_t)sizeof(float); \
	const char *a0 = (const char *)t->A, *a1 = a0 + l, *a2 = a1 + l, *a3 = a2 + l; \
	const float *b = t->B; \
	const float *bias = t->final && t->col_bias ? t->col_bias : zero_bias; \
	const char *pf = t->pf ? (const char *)t->pf : a0; \
	int64_t n4 = t->K / 4, ldc = t->ldc * (int64_t)sizeof(float); \
	float *c = t->C; \
	intptr_t tmp; \
	prefetch_c(c, t->ldc, n, 2); \
	flags |= (int)(t->K % 4) << 8; \
	__asm__ volatile(KA_LOOP(KA_STEP##n, KA_ADV) \
	        KA_END(KA_ROWS##n, KA_ADD, KA_BIAS_LOAD, KA_BIAS2, "26", KA_RELU2, KA_STORE) \
	        : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [b] "+r"(b), \
	          [pf] "+r"(pf), [n4] "+r"(n4), [t] "=&r"(tmp) \
	        : [l] "r"(l), [c] "r"(c), [ldc] "r"(ldc), [bias] "r"(bias), [fl] "r"(flags) \
	        : KA_CLOBBERS); \
}
KA_TILE(11)
KA_TILE(12)

/* The wide tile: up to 6 rows by two whole panels side by side (64
 * columns: the panel at B and the next one, t->ldp floats further), so
 * that per k six broadcasts of A (not twelve) feed 24 FMAs. Accumulator
 * of row i, quarter q: zmm(6 q + i); B's row in zmm24-27; A's broadcasts
 * in zmm28-31. A's rows from two bases (rows 0-2 from a0, 3-5 from a3:
 * base, + lda, + 2 lda). The same loop, prefetches and epilogue as
 * KA_TILE, so every element gets the same bits as on the 32-wide tiles. */
#define KW_ROW(i, r0, r1, r2, r3, tmp, s) \
	"vbroadcastss " #s "*4" KW_A_##i ", %%zmm" #tmp "\n\t" \
	"vfmadd231ps %%zmm24, %%zmm" #tmp ", %%zmm" #r0 "\n\t" \
	"vfmadd231ps %%zmm25, %%zmm" #tmp ", %%zmm" #r1 "\n\t" \
	"vfmadd231ps %%zmm26, %%zmm" #tmp ", %%zmm" #r2 "\n\t" \
	"vfmadd231ps %%zmm27, %%zmm" #tmp ", %%zmm" #r3 "\n\t"
#define KW_A_0 "(%[a0])"
#define KW_A_1 "(%[a0],%[l],1)"
#define KW_A_2 "(%[a0],%[l],2)"
#define KW_A_3 "(%[a3])"
#define KW_A_4 "(%[a3],%[l],1)"
#define KW_A_5 "(%[a3],%[l],2)"
#define KW_STEP4(s) \
	"vmovups (" #s "*128)(%[b]), %%zmm24\n\t" \
	"vmovups (" #s "*128+64)(%[b]), %%zmm25\n\t" \
	"vmovups (" #s "*128)(%[b],%[ps]), %%zmm26\n\t" \
	"vmovups (" #s "*128+64)(%[b],%[ps]), %%zmm27\n\t" \
	KW_ROW(0, 0, 6, 12, 18, 28, s) KW_ROW(1, 1, 7, 13, 19, 29, s) \
	KW_ROW(2, 2, 8, 14, 20, 30, s) KW_ROW(3, 3, 9, 15, 21, 31, s)
#define KW_STEP5(s) KW_STEP4(s) KW_ROW(4, 4, 10, 16, 22, 28, s)
#define KW_STEP6(s) KW_STEP5(s) KW_ROW(5, 5, 11, 17, 23, 29, s)
#define KW_ADD(i, r1, r2, r3) \
	"vaddps (%[t]), %%zmm" #i ", %%zmm" #i "\n\t" \
	"vaddps 64(%[t]), %%zmm" #r1 ", %%zmm" #r1 "\n\t" \
	"vaddps 128(%[t]), %%zmm" #r2 ", %%zmm" #r2 "\n\t" \
	"vaddps 192(%[t]), %%zmm" #r3 ", %%zmm" #r3 "\n\t" \
	"add %[ldc], %[t]\n\t"
#define KW_STORE(i, r1, r2, r3) \
	"vmovups %%zmm" #i ", (%[t])\n\t" \
	"vmovups %%zmm" #r1 ", 64(%[t])\n\t" \
	"vmovups %%zmm" #r2 ", 128(%[t])\n\t" \
	"vmovups %%zmm" #r3 ", 192(%[t])\n\t" \
	"add %[ldc], %[t]\n\t"
#define KW_BIAS(i, r1, r2, r3) \
	"vaddps %%zmm24, %%zmm" #i ", %%zmm" #i "\n\t" \
	"vaddps %%zmm25, %%zmm" #r1 ", %%zmm" #r1 "\n\t" \
	"vaddps %%zmm26, %%zmm" #r2 ", %%zmm" #r2 "\n\t" \
	"vaddps %%zmm27, %%zmm" #r3 ", %%zmm" #r3 "\n\t"
#define KW_RELU(i, r1, r2, r3) \
	"vmaxps %%zmm28, %%zmm" #i ", %%zmm" #i "\n\t" \
	"vmaxps %%zmm28, %%zmm" #r1 ", %%zmm" #r1 "\n\t" \
	"vmaxps %%zmm28, %%zmm" #r2 ", %%zmm" #r2 "\n\t" \
	"vmaxps %%zmm28, %%zmm" #r3 ", %%zmm" #r3 "\n\t"
#define KW_ROWS4(f) f(0, 6, 12, 18) f(1, 7, 13, 19) f(2, 8, 14, 20) f(3, 9, 15, 21)
#define KW_ROWS5(f) KW_ROWS4(f) f(4, 10, 16, 22)
#define KW_ROWS6(f) KW_ROWS5(f) f(5, 11, 17, 23)

static const float zero_bias64[2 * KILN_PACK_NR];

#define KW_ADV(da, db) \
	"add $" #da ", %[a0]\n\t" \
	"add $" #da ", %[a3]\n\t" \
	"add $" #db ", %[b]\n\t"
#define KW_BIAS_LOAD \
	"vmovups (%[bias]), %%zmm24\n\t" \
	"vmovups 64(%[bias]), %%zmm25\n\t" \
	"vmovups 128(%[bias]), %%zmm26\n\t" \
	"vmovups 192(%[bias]), %%zmm27\n\t"

/* tile_wide(t, flags, n): the tile of n = 5 or 6 rows by 64 columns */
#define KW_TILE(n) \
static void tile_wide##n(const GemmTile *t, int flags) \
{ \
	int64_t l = t->lda * (int64_t)sizeof(float); \
	const char *a0 = (const char *)t->A, *a3 = a0 + 3 * l; \
	const float *b = t->B; \
	int64_t ps = t->ldp * (int64_t)sizeof(float); \
	const float *bias = t->final && t->col_bias ? t->col_bias : zero_bias64; \
	const char *pf = t->pf ? (const char *)t->pf : a0; \
	int64_t n4 = t->K / 4, ldc = t->ldc * (int64_t)sizeof(float); \
	float *c = t->C; \
	intptr_t tmp; \
	prefetch_c(c, t->ldc, n, 4); \
	flags |= (int)(t->K % 4) << 8; \
	__asm__ volatile(KA_LOOP(KW_STEP##n, KW_ADV) \
	        KA_END(KW_ROWS##n, KW_ADD, KW_BIAS_LOAD, KW_BIAS, "28", KW_RELU, KW_STORE) \
	        : [a0] "+r"(a0), [a3] "+r"(a3), [b] "+r"(b), [pf] "+r"(pf), [n4] "+r"(n4), \
	          [t] "=&r"(tmp) \
	        : [l] "r"(l), [ps] "r"(ps), [c] "r"(c), [ldc] "r"(ldc), [bias] "r"(bias), \
	          [fl] "r"(flags) \
	        : KA_CLOBBERS); \
}
KW_TILE(5)
KW_TILE(6)

/* The tiles over a narrow layer's K blocks (tile_rows_kb's shapes, in GNU
 * C assembly: gcc kept the intrinsics version's block totals partly on the
 * stack and moved accumulators between registers; jet_tagger's four layers
 * at M = 256 took 1.11-1.59 x the time of one block). Each block: the sums
 * zeroed (ZERO), one FMA chain per element over the block's k (fours, then
 * the k left over: STEP, ADV4, ADV1), then the first block's sums (+ C,
 * flags & KA_ADDC) become the totals (FIRST) and every later block's are
 * added to them (LATER); at the end + the column bias and ReLU and the
 * stores (KA_FINISH): what tile_rows_kb computes, bit for bit. The blocks'
 * k counts (kb_counts) are memory operands: the tiles use most general
 * registers. */
#define KB_BLOCKS(ZERO, STEP, ADV4, ADV1, FIRST, LATER) \
	"1:\n\t" \
	ZERO \
	"mov %[n4f], %[n4]\n\t" \
	"mov %[rf], %[t]\n\t" \
	"cmp $1, %[cnt]\n\t" \
	"jne 2f\n\t" \
	"mov %[n4l], %[n4]\n\t" \
	"mov %[rl], %[t]\n" \
	"2:\n\t" \
	"test %[n4], %[n4]\n\t" \
	"jz 4f\n" \
	"3:\n\t" \
	STEP(0) STEP(1) STEP(2) STEP(3) \
	ADV4 \
	"dec %[n4]\n\t" \
	"jnz 3b\n" \
	"4:\n\t" \
	"test %[t], %[t]\n\t" \
	"jz 6f\n" \
	"5:\n\t" \
	STEP(0) \
	ADV1 \
	"dec %[t]\n\t" \
	"jnz 5b\n" \
	"6:\n\t" \
	"cmp %[nbk], %[cnt]\n\t" \
	"jne 8f\n\t" \
	FIRST \
	"jmp 9f\n" \
	"8:\n\t" \
	LATER \
	"9:\n\t" \
	"dec %[cnt]\n\t" \
	"jnz 1b\n\t"
/* FIRST where the totals are registers: SET (the sums) or ADDC (+ C) */
#define KB_FIRST(ROWS, SET, ADDC) \
	"test $1, %[fl]\n\t" \
	"jnz 7f\n\t" \
	ROWS(SET) \
	"jmp 9f\n" \
	"7:\n\t" \
	"mov %[c], %[t]\n\t" \
	ROWS(ADDC)

/* The k counts of t's K blocks: n4f fours and rf single k in each but the
 * last, n4l and rl in the last, nbk blocks */
typedef struct KbCounts {
	int64_t n4f, rf, n4l, rl, nbk;
} KbCounts;

static inline KbCounts kb_counts(const GemmTile *t)
{
	int64_t kb = t->kb, nbk = (t->K + kb - 1) / kb, last = t->K - (nbk - 1) * kb;
	return (KbCounts){kb / 4, kb % 4, last / 4, last % 4, nbk};
}
#define KB_COUNTS(kc) \
	[n4f] "m"(kc.n4f), [rf] "m"(kc.rf), [n4l] "m"(kc.n4l), [rl] "m"(kc.rl), [nbk] "m"(kc.nbk)

/* The kb tiles' locals: A's rows (a0 + i l, a3 = a0 + 3 l), B, the bias
 * (or `zeros`), the block counts, C; C's n rows of `lines` lines owned */
#define KB_PROLOGUE(n, lines, zeros) \
	int64_t l = t->lda * (int64_t)sizeof(float); \
	const char *a0 = (const char *)t->A, *a3 = a0 + 3 * l; \
	const float *b = t->B; \
	const float *bias = t->final && t->col_bias ? t->col_bias : zeros; \
	KbCounts kc = kb_counts(t); \
	int64_t ldc = t->ldc * (int64_t)sizeof(float), cnt = kc.nbk, n4; \
	float *c = t->C; \
	intptr_t tmp; \
	prefetch_c(c, t->ldc, n, lines);

/* 5 or 6 rows by a whole panel of 32 (B's rows 32 floats back to back):
 * row i's block sums in zmm i and i + 6, its total in zmm i + 12 and
 * i + 18, B's row in zmm24-25, A's broadcasts in zmm26-31, A's rows as the
 * wide tile reads them */
#define KB_ROW(i, hi, tmp, s) \
	"vbroadcastss " #s "*4" KW_A_##i ", %%zmm" #tmp "\n\t" \
	"vfmadd231ps %%zmm24, %%zmm" #tmp ", %%zmm" #i "\n\t" \
	"vfmadd231ps %%zmm25, %%zmm" #tmp ", %%zmm" #hi "\n\t"
#define KB_STEP5(s) \
	"vmovups (" #s "*128)(%[b]), %%zmm24\n\t" \
	"vmovups (" #s "*128+64)(%[b]), %%zmm25\n\t" \
	KB_ROW(0, 6, 26, s) KB_ROW(1, 7, 27, s) KB_ROW(2, 8, 28, s) \
	KB_ROW(3, 9, 29, s) KB_ROW(4, 10, 30, s)
#define KB_STEP6(s) KB_STEP5(s) KB_ROW(5, 11, 31, s)
/* f(sums' low half, high half, totals' low half, high half) for each row */
#define KB_ROWS5(f) f(0, 6, 12, 18) f(1, 7, 13, 19) f(2, 8, 14, 20) f(3, 9, 15, 21) f(4, 10, 16, 22)
#define KB_ROWS6(f) KB_ROWS5(f) f(5, 11, 17, 23)
/* f(totals' low half, high half) for each row */
#define KB_TROWS5(f) f(12, 18) f(13, 19) f(14, 20) f(15, 21) f(16, 22)
#define KB_TROWS6(f) KB_TROWS5(f) f(17, 23)
#define KB_ZERO(i, hi, ti, thi) KA_ZERO(i) KA_ZERO(hi)
#define KB_SET(i, hi, ti, thi) \
	"vmovaps %%zmm" #i ", %%zmm" #ti "\n\t" \
	"vmovaps %%zmm" #hi ", %%zmm" #thi "\n\t"
#define KB_ADDC(i, hi, ti, thi) \
	"vaddps (%[t]), %%zmm" #i ", %%zmm" #ti "\n\t" \
	"vaddps 64(%[t]), %%zmm" #hi ", %%zmm" #thi "\n\t" \
	"add %[ldc], %[t]\n\t"
#define KB_TOT(i, hi, ti, thi) \
	"vaddps %%zmm" #ti ", %%zmm" #i ", %%zmm" #ti "\n\t" \
	"vaddps %%zmm" #thi ", %%zmm" #hi ", %%zmm" #thi "\n\t"
#define KB_BIAS(ti, thi) \
	"vaddps %%zmm24, %%zmm" #ti ", %%zmm" #ti "\n\t" \
	"vaddps %%zmm25, %%zmm" #thi ", %%zmm" #thi "\n\t"

/* tile_kb(t, flags, n): n rows over t->K in blocks of t->kb */
#define KB_TILE(n) \
static void tile_kb##n(const GemmTile *t, int flags) \
{ \
	KB_PROLOGUE(n, 2, zero_bias) \
	__asm__ volatile(KB_BLOCKS(KB_ROWS##n(KB_ZERO), KB_STEP##n, KW_ADV(16, 512), KW_ADV(4, 128), \
	                           KB_FIRST(KB_ROWS##n, KB_SET, KB_ADDC), KB_ROWS##n(KB_TOT)) \
	        KA_FINISH(KB_TROWS##n, KA_BIAS_LOAD, KB_BIAS, "26", KA_RELU2, KA_STORE) \
	        : [a0] "+r"(a0), [a3] "+r"(a3), [b] "+r"(b), [n4] "=&r"(n4), [cnt] "+r"(cnt), \
	          [t] "=&r"(tmp) \
	        : [l] "r"(l), [c] "r"(c), [ldc] "r"(ldc), [bias] "r"(bias), [fl] "r"(flags), \
	          KB_COUNTS(kc) \
	        : KA_CLOBBERS); \
}
KB_TILE(5)
KB_TILE(6)

/* The wide tile's shape (5 or 6 rows by two whole panels, N = 64): the
 * block sums in its 24 accumulators, the totals in a buffer on the stack
 * (all 32 registers are taken): the first block's sums (+ C) stored there,
 * each later one's added to them (and stored back but for the last's).
 * Half the broadcasts of A per FMA of the 32-wide tiles. */
#define KWB_SAVE(i, r1, r2, r3) \
	"vmovaps %%zmm" #i ", (" #i "*64)(%[s])\n\t" \
	"vmovaps %%zmm" #r1 ", (" #r1 "*64)(%[s])\n\t" \
	"vmovaps %%zmm" #r2 ", (" #r2 "*64)(%[s])\n\t" \
	"vmovaps %%zmm" #r3 ", (" #r3 "*64)(%[s])\n\t"
#define KWB_TOT(i, r1, r2, r3) \
	"vaddps (" #i "*64)(%[s]), %%zmm" #i ", %%zmm" #i "\n\t" \
	"vaddps (" #r1 "*64)(%[s]), %%zmm" #r1 ", %%zmm" #r1 "\n\t" \
	"vaddps (" #r2 "*64)(%[s]), %%zmm" #r2 ", %%zmm" #r2 "\n\t" \
	"vaddps (" #r3 "*64)(%[s]), %%zmm" #r3 ", %%zmm" #r3 "\n\t"
#define KWB_FIRST(ROWS) \
	"test $1, %[fl]\n\t" \
	"jz 7f\n\t" \
	"mov %[c], %[t]\n\t" \
	ROWS(KW_ADD) \
	"7:\n\t" \
	ROWS(KWB_SAVE)
#define KWB_LATER(ROWS) \
	ROWS(KWB_TOT) \
	"cmp $1, %[cnt]\n\t" \
	"je 9f\n\t" \
	ROWS(KWB_SAVE)
#define KWB_BIAS_LOAD \
	"mov %[bias], %[t]\n\t" \
	"vmovups (%[t]), %%zmm24\n\t" \
	"vmovups 64(%[t]), %%zmm25\n\t" \
	"vmovups 128(%[t]), %%zmm26\n\t" \
	"vmovups 192(%[t]), %%zmm27\n\t"
#define KWB_TILE(n) \
static void tile_wkb##n(const GemmTile *t, int flags) \
{ \
	_Alignas(64) float tot[24 * 16]; \
	KB_PROLOGUE(n, 4, zero_bias64) \
	int64_t ps = t->ldp * (int64_t)sizeof(float); \
	float *sp = tot; \
	__asm__ volatile(KB_BLOCKS(KA_24(KA_ZERO), KW_STEP##n, KW_ADV(16, 512), KW_ADV(4, 128), \
	                           KWB_FIRST(KW_ROWS##n), KWB_LATER(KW_ROWS##n)) \
	        KA_FINISH(KW_ROWS##n, KWB_BIAS_LOAD, KW_BIAS, "28", KW_RELU, KW_STORE) \
	        : [a0] "+r"(a0), [a3] "+r"(a3), [b] "+r"(b), [n4] "=&r"(n4), [cnt] "+r"(cnt), \
	          [t] "=&r"(tmp) \
	        : [l] "r"(l), [ps] "r"(ps), [c] "r"(c), [ldc] "r"(ldc), [s] "r"(sp), \
	          [fl] "r"(flags), [bias] "m"(bias), KB_COUNTS(kc) \
	        : KA_CLOBBERS); \
}
KWB_TILE(5)
KWB_TILE(6)

/* 10 to 12 rows of one vector of at most 16 columns (B's rows w floats back
 * to back, loaded under the columns' mask): row i's block sums in zmm i,
 * its total in zmm i + 12, B's row in zmm24, A's broadcasts in zmm25-31,
 * A's rows as the 12 x 32 tile reads them */
#define KN_ROW(i, tmp, s) \
	"vbroadcastss " #s "*4" KA_A_##i ", %%zmm" #tmp "\n\t" \
	"vfmadd231ps %%zmm24, %%zmm" #tmp ", %%zmm" #i "\n\t"
#define KN_STEP10(s) \
	"vmovups (%[b]), %%zmm24%{%[m]%}%{z%}\n\t" \
	"add %[lb], %[b]\n\t" \
	KN_ROW(0, 25, s) KN_ROW(1, 26, s) KN_ROW(2, 27, s) KN_ROW(3, 28, s) KN_ROW(4, 29, s) \
	KN_ROW(5, 30, s) KN_ROW(6, 31, s) KN_ROW(7, 25, s) KN_ROW(8, 26, s) KN_ROW(9, 27, s)
#define KN_STEP11(s) KN_STEP10(s) KN_ROW(10, 28, s)
#define KN_STEP12(s) KN_STEP11(s) KN_ROW(11, 29, s)
/* f(sum, total) for each row */
#define KN_ROWS10(f) \
	f(0, 12) f(1, 13) f(2, 14) f(3, 15) f(4, 16) f(5, 17) f(6, 18) f(7, 19) f(8, 20) f(9, 21)
#define KN_ROWS11(f) KN_ROWS10(f) f(10, 22)
#define KN_ROWS12(f) KN_ROWS11(f) f(11, 23)
#define KN_ZERO(i, ti) KA_ZERO(i)
#define KN_SET(i, ti) "vmovaps %%zmm" #i ", %%zmm" #ti "\n\t"
#define KN_TOT(i, ti) "vaddps %%zmm" #ti ", %%zmm" #i ", %%zmm" #ti "\n\t"
#define KN_ADDC(i, ti) \
	"vmovups (%[t]), %%zmm25%{%[m]%}%{z%}\n\t" \
	"vaddps %%zmm25, %%zmm" #i ", %%zmm" #ti "\n\t" \
	"add %[ldc], %[t]\n\t"
/* the end's f(total): through KN_ROWS's f(sum, total) */
#define KN_BIAS(i, ti) "vaddps %%zmm24, %%zmm" #ti ", %%zmm" #ti "\n\t"
#define KN_RELU(i, ti) "vmaxps %%zmm25, %%zmm" #ti ", %%zmm" #ti "\n\t"
#define KN_STORE(i, ti) \
	"vmovups %%zmm" #ti ", (%[t])%{%[m]%}\n\t" \
	"add %[ldc], %[t]\n\t"
#define KN_BIAS_LOAD \
	"mov %[bias], %[t]\n\t" \
	"vmovups (%[t]), %%zmm24%{%[m]%}%{z%}\n\t"
#define KN_ADV(da) \
	"add $" #da ", %[a0]\n\t" \
	"add $" #da ", %[a1]\n\t" \
	"add $" #da ", %[a2]\n\t" \
	"add $" #da ", %[a3]\n\t"
#define KN_TILE(n) \
static void tile_nkb##n(const GemmTile *t, int flags) \
{ \
	KB_PROLOGUE(n, 1, zero_bias) \
	const char *a1 = a0 + l, *a2 = a1 + l; \
	int64_t lb = t->ldb * (int64_t)sizeof(float); \
	__mmask16 m = (__mmask16)((1u << t->w) - 1); \
	__asm__ volatile(KB_BLOCKS(KN_ROWS##n(KN_ZERO), KN_STEP##n, KN_ADV(16), KN_ADV(4), \
	                           KB_FIRST(KN_ROWS##n, KN_SET, KN_ADDC), KN_ROWS##n(KN_TOT)) \
	        KA_FINISH(KN_ROWS##n, KN_BIAS_LOAD, KN_BIAS, "25", KN_RELU, KN_STORE) \
	        : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [b] "+r"(b), \
	          [n4] "=&r"(n4), [cnt] "+r"(cnt), [t] "=&r"(tmp) \
	        : [l] "r"(l), [lb] "r"(lb), [m] "Yk"(m), [fl] "r"(flags), [c] "m"(c), \
	          [ldc] "m"(ldc), [bias] "m"(bias), KB_COUNTS(kc) \
	        : KA_CLOBBERS); \
}
KN_TILE(10)
KN_TILE(11)
KN_TILE(12)
#define HAVE_TILE_ASM 1
#endif

#define ROWS(n) \
	case n: \
		two == 2 ? tile_rows(t, n, 2) : two ? tile_rows(t, n, 1) : tile_rows(t, n, 0); \
		break;

#define ROWS_KB(n) \
	case n: \
		two == 2 ? tile_rows_kb(t, n, 2) : two ? tile_rows_kb(t, n, 1) : tile_rows_kb(t, n, 0); \
		break;

/* 7 to 12 rows of one vector of columns: 24 registers */
#define ROWS_KB1(n) \
	case n: \
		tile_rows_kb(t, n, 0); \
		break;

#ifdef HAVE_TILE_ASM
typedef void (*asm_tile_fn)(const GemmTile *t, int flags);

/* The assembly tile of t's shape (two: kiln_gemm_tile_avx512's), or NULL:
 * 11 or 12 rows by a whole panel; over a narrow layer's K blocks, 5 or 6
 * rows by a whole panel or 10 to 12 of one vector */
static asm_tile_fn tile_asm_of(const GemmTile *t, int two)
{
	int blocks = t->kb > 0 && t->kb < t->K;
	if (two == 2 && t->ldb == KILN_PACK_NR) {
		if (blocks)
			return t->mr == 6 ? tile_kb6 : t->mr == 5 ? tile_kb5 : NULL;
		return t->mr == 12 ? tile_asm12 : t->mr == 11 ? tile_asm11 : NULL;
	}
	if (blocks && !two)
		return t->mr == 12 ? tile_nkb12 : t->mr == 11 ? tile_nkb11 : t->mr == 10 ? tile_nkb10 : NULL;
	return NULL;
}
#endif

void kiln_gemm_tile_avx512(const GemmTile *t)
{
	int two = t->w == 32 ? 2 : t->w > 16;
#ifdef HAVE_TILE_ASM
	asm_tile_fn f = tile_asm_of(t, two);
	int flags;
	if (f && (flags = tile_asm_flags(t)) >= 0) {
		f(t, flags);
		return;
	}
#endif
	if (t->kb > 0 && t->kb < t->K && (t->mr <= 6 || (t->mr <= 12 && !two))) {
		switch (t->mr) {
		ROWS_KB(1) ROWS_KB(2) ROWS_KB(3) ROWS_KB(4) ROWS_KB(5) ROWS_KB(6)
		ROWS_KB1(7) ROWS_KB1(8) ROWS_KB1(9) ROWS_KB1(10) ROWS_KB1(11) ROWS_KB1(12)
		default:
			break;
		}
		return;
	}
	switch (t->mr) {
	ROWS(1) ROWS(2) ROWS(3) ROWS(4) ROWS(5) ROWS(6) ROWS(7) ROWS(8) ROWS(9) ROWS(10) ROWS(11) ROWS(12)
	default:
		break;
	}
}

/* gemm.h: the two panels at t->B and t->B + t->ldp as one tile of 64
 * columns; where the wide tile cannot finish the epilogue, each panel as its
 * own tile (the same bits per element). */
void kiln_gemm_tile64_avx512(const GemmTile *t)
{
#ifdef HAVE_TILE_ASM
	int flags;
	if (t->mr >= 5 && t->ldb == KILN_PACK_NR && (flags = tile_asm_flags(t)) >= 0) {
		if (t->kb > 0 && t->kb < t->K) {
			if (t->mr == 6)
				tile_wkb6(t, flags);
			else
				tile_wkb5(t, flags);
		} else if (t->mr == 6)
			tile_wide6(t, flags);
		else
			tile_wide5(t, flags);
		return;
	}
#endif
	GemmTile h = *t;
	h.w = KILN_PACK_NR;
	kiln_gemm_tile_avx512(&h);
	h.B += t->ldp, h.C += KILN_PACK_NR;
	h.col_bias = t->col_bias ? t->col_bias + KILN_PACK_NR : NULL;
	h.res = t->res ? t->res + KILN_PACK_NR : NULL;
	kiln_gemm_tile_avx512(&h);
}

/* GemmDot (gemm.h) in the GEMM core's order: each C[m, n] one FMA chain over
 * the k of each K block (d->kc, else GEMM_PACK_KC) from 0, in k order, the blocks combined as
 * the core's tiles combine them (what every variant's core computes on a
 * transposed B packed on the fly, so the same bits). Columns of C in the
 * lanes: 16 k of 16 rows of Bt (one load a row, a float16 row widened)
 * transposed in registers (transpose16), so that lane j of the vector for k
 * holds Bt[n0 + j][k] and each k is one FMA per row of A; G groups of 16
 * rows side by side hide the FMA latency. Each row of Bt is read once for
 * all rows of A, a cache line at a time (rows a multiple of 4 KiB apart
 * share L1 sets and defeat the prefetchers: measured 4 times slower). */
INLINE void transpose16(__m512 r[16]);

/* acc[4 g + i] = row i of A (a) times the G groups of 16 rows of Bt (b, ld
 * elements apart, float16 if h; a row past last reads row last) over k <
 * kb, from 0: one chain per lane */
INLINE void dot_block(const float *a, int64_t lda, const int mr, const int G, const void *b,
                      int64_t ld, const int h, int last, int64_t kb, const int pf, __m512 *acc)
{
#pragma GCC unroll 16
	for (int q = 0; q < 4 * G; q++)
		acc[q] = _mm512_setzero_ps();
	for (int64_t k = 0; k < kb; k += 16) {
		int n = kb - k < 16 ? (int)(kb - k) : 16;
		__mmask16 m = (__mmask16)((1u << n) - 1);
#pragma GCC unroll 4
		for (int g = 0; g < G; g++) {
			__m512 r[16];
#pragma GCC unroll 16
			for (int j = 0; j < 16; j++) {
				int64_t off = (16 * g + j <= last ? 16 * g + j : last) * ld + k;
				/* B from memory (pf): the same line of the next columns'
				 * row, G groups on (the rows read side by side are too
				 * many streams for the hardware prefetchers: the tied
				 * head at batch 1 1.1-1.2 ms against 2.7 without) */
				if (pf)
					_mm_prefetch((const char *)b + (off + 16 * G * ld) * (h ? 2 : 4),
					             _MM_HINT_T1);
				r[j] = h ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)b + off))
				         : _mm512_maskz_loadu_ps(m, (const float *)b + off);
			}
			transpose16(r);
#pragma GCC unroll 16
			for (int e = 0; e < 16; e++)
#pragma GCC unroll 4
				for (int i = 0; i < mr; i++)
					if (n == 16 || e < n)
						acc[4 * g + i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i * lda + k + e]),
						                                 r[e], acc[4 * g + i]);
		}
	}
}

/* C's columns [n0, n0 + w) (w <= 16 G) from the G groups of rows of Bt
 * there: each K block, then C = alpha acc, + beta C on the first block (beta
 * C rounded, then added, as kiln_gemm_tile_ref adds it), + C on the others */
INLINE void dot_cols(const GemmDot *d, const int mr, const int G, const int h, int64_t n0,
                     int64_t w, const int pf)
{
	__m512 alpha = _mm512_set1_ps(d->alpha), beta = _mm512_set1_ps(d->beta);
	const char *b = h ? (const char *)(d->Bth + n0 * d->ldbt)
	                  : (const char *)(d->Bt + n0 * d->ldbt);
	int last = w < 16 * G ? (int)w - 1 : 16 * G - 1;
	const int64_t kc = d->kc > 0 ? d->kc : GEMM_PACK_KC;
	for (int64_t k0 = 0; k0 < d->K; k0 += kc) {
		__m512 acc[16];
		dot_block(d->A + k0, d->lda, mr, G, b + k0 * (h ? 2 : 4), d->ldbt, h, last,
		          d->K - k0 < kc ? d->K - k0 : kc, pf, acc);
#pragma GCC unroll 4
		for (int g = 0; g < G; g++) {
			int64_t left = w - 16 * g;
			__mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
#pragma GCC unroll 4
			for (int i = 0; i < mr; i++) {
				float *c = d->C + i * d->ldc + n0 + 16 * g;
				__m512 v = _mm512_mul_ps(alpha, acc[4 * g + i]);
				if (k0 > 0)
					v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, c));
				else if (d->beta != 0.0f)
					v = _mm512_add_ps(v, _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(m, c)));
				_mm512_mask_storeu_ps(c, m, v);
			}
		}
	}
}

/* G groups of 16 columns at a time, then the last few (their loads clamped
 * to Bt's last row) */
INLINE void dot_rows(const GemmDot *d, const int mr, const int G, const int h)
{
	/* B larger than L2 (1 MiB here) is read from memory: prefetch it, but
	 * not from L2, where the prefetches cost 10-20 % */
	int big = d->N * d->ldbt * (h ? 2 : 4) > (1 << 20);
	int64_t n = 0;
	for (; n + 16 * G <= d->N; n += 16 * G) {
		if (big && n + 32 * G <= d->N)
			dot_cols(d, mr, G, h, n, 16 * G, 1);
		else
			dot_cols(d, mr, G, h, n, 16 * G, 0);
	}
	for (; n < d->N; n += 16)
		dot_cols(d, mr, 1, h, n, d->N - n < 16 ? d->N - n : 16, 0);
}

void kiln_gemm_dot_avx512(const GemmDot *d)
{
	int h = d->Bth != NULL;
	switch (d->M) {
	case 1: h ? dot_rows(d, 1, 2, 1) : dot_rows(d, 1, 2, 0); break;
	case 2: h ? dot_rows(d, 2, 2, 1) : dot_rows(d, 2, 2, 0); break;
	case 3: h ? dot_rows(d, 3, 1, 1) : dot_rows(d, 3, 1, 0); break;
	default: h ? dot_rows(d, 4, 1, 1) : dot_rows(d, 4, 1, 0); break;
	}
}

/* r[i] = row i of a 16 x 16 block in, column i out: 32-bit, 64-bit, then
 * 128-bit lane shuffles. */
INLINE void transpose16(__m512 r[16])
{
	__m512 t[16];
#pragma GCC unroll 8
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
	}
#pragma GCC unroll 4
	for (int i = 0; i < 16; i += 4)
#pragma GCC unroll 2
		for (int q = 0; q < 2; q++) {
			__m512d a = _mm512_castps_pd(t[i + q]), b = _mm512_castps_pd(t[i + q + 2]);
			r[i + q] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
			r[i + q + 2] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
		}
#pragma GCC unroll 2
	for (int i = 0; i < 16; i += 8)
#pragma GCC unroll 4
		for (int q = 0; q < 4; q++) {
			t[i + q] = _mm512_shuffle_f32x4(r[i + q], r[i + q + 4], 0x88);
			t[i + q + 4] = _mm512_shuffle_f32x4(r[i + q], r[i + q + 4], 0xdd);
		}
	/* t[m] now holds column perm(m), perm swapping 1 and 2 in each group of 4 */
	static const int col_of[16] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
#pragma GCC unroll 8
	for (int q = 0; q < 8; q++) {
		r[col_of[q]] = _mm512_shuffle_f32x4(t[q], t[q + 8], 0x88);
		r[col_of[q + 8]] = _mm512_shuffle_f32x4(t[q], t[q + 8], 0xdd);
	}
}

/* pack.h's panel for a transposed B (element (k, n) at src[n * cs + k]):
 * 16 x 16 blocks transposed in registers, so the panel is written in full
 * rows of 16 instead of one float at a time. Rows and columns past the
 * block's edge are done one by one. */
void kiln_pack_b32_t_avx512(const float *src, int64_t cs, int64_t N, int64_t n0, int64_t k0,
                            int64_t kc, float *dst)
{
	int64_t w = kiln_pack_b32_width(N, n0);
	int64_t k = 0;
	for (; k + 16 <= kc; k += 16) {
		int64_t j = 0;
		for (; j + 16 <= w; j += 16) {
			__m512 r[16];
			/* the next panel's rows, one block ahead: B is usually a weight
			 * read from memory once per call (a tied embedding) */
			if (n0 + KILN_PACK_NR + j + 16 <= N)
				for (int i = 0; i < 16; i++)
					_mm_prefetch((const char *)(src + (n0 + KILN_PACK_NR + j + i) * cs + k0 + k),
					             _MM_HINT_T0);
			for (int i = 0; i < 16; i++)
				r[i] = _mm512_loadu_ps(src + (n0 + j + i) * cs + k0 + k);
			transpose16(r);
			for (int m = 0; m < 16; m++)
				_mm512_storeu_ps(dst + (k + m) * w + j, r[m]);
		}
		for (; j < w; j++)
			for (int i = 0; i < 16; i++)
				dst[(k + i) * w + j] = src[(n0 + j) * cs + k0 + k + i];
	}
	for (; k < kc; k++)
		for (int64_t j = 0; j < w; j++)
			dst[k * w + j] = src[(n0 + j) * cs + k0 + k];
}

/* gemm.h: 16 rows of Ct (cols of them at most 16 wide) at a time, transposed
 * in registers, then written as 16-float runs of C's rows. */
void kiln_gemm_ct_avx512(const float *Ct, int64_t rows, int64_t cols, float *C, int64_t ldc)
{
	for (int64_t j0 = 0; j0 < cols; j0 += 16) {
		int64_t cw = cols - j0 < 16 ? cols - j0 : 16;
		__mmask16 mc = (__mmask16)((1u << cw) - 1);
		for (int64_t i0 = 0; i0 < rows; i0 += 16) {
			int64_t rh = rows - i0 < 16 ? rows - i0 : 16;
			__mmask16 mr = (__mmask16)((1u << rh) - 1);
			__m512 r[16];
			for (int i = 0; i < 16; i++)
				r[i] = i < rh ? _mm512_maskz_loadu_ps(mc, Ct + (i0 + i) * cols + j0)
				              : _mm512_setzero_ps();
			transpose16(r);
			for (int j = 0; j < cw; j++)
				_mm512_mask_storeu_ps(C + (j0 + j) * ldc + i0, mr, r[j]);
		}
	}
}
