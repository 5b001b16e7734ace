/*
 * f32-gemv/avx512.c - gemv.h's product with AVX-512. Two 32-column panels
 * at a time (two streams of B: at batch 1 the step is bound by reading B
 * from L2, and four streams read it slower: ff12_128 b1 1.23 x f3a135a's
 * time with four panels at a time, 1.03 with two), or four where the whole
 * packed weight fits QUAD_BYTES (a weight called over and over, a recurrent
 * step's or a small MLP's, stays in L1, and there two panels' four chains
 * wait on the FMA latency: 128 x 64 from L1 121 -> 76 ns). Each column one
 * FMA chain over the k of each K block in the GEMM tiles' order (so batch
 * 1 gives the same bits as every batch size and variant, however many
 * panels run together), the panels' chains side by side to hide the FMA
 * latency, and a narrow layer's K blocks' chains too. A narrower last
 * panel goes through masked loads in the last group.
 */
#include <immintrin.h>

#include "../f32-gemm/gemm.h"
#include "gemv.h"

static __mmask16 lanes(int64_t n)
{
	return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

/* y[0..w) = (lo, hi) (+ bias), the first w lanes. Always inlined: called
 * as a function taking __m512 by value, it returns with the upper halves of
 * the vector registers dirty, GCC takes the call to leave them clean and so
 * puts no vzeroupper before kiln_gemv_avx512 returns, and the caller's SSE
 * code after it paid for the dirty state (one_panel's calls cost ~150 ns
 * each: 194 ns for 32 columns and K = 50 against 62 ns for 64 columns
 * through two_panels, whose store was inlined). */
static inline __attribute__((always_inline)) void store(float *y, const float *bias, int64_t w, __m512 lo, __m512 hi)
{
	__mmask16 m0 = lanes(w), m1 = lanes(w - 16);
	if (bias) {
		lo = _mm512_add_ps(lo, _mm512_maskz_loadu_ps(m0, bias));
		hi = _mm512_add_ps(hi, _mm512_maskz_loadu_ps(m1, bias + 16));
	}
	if (w >= 32) {  /* plain stores: a later load of them can be forwarded */
		_mm512_storeu_ps(y, lo);
		_mm512_storeu_ps(y + 16, hi);
		return;
	}
	_mm512_mask_storeu_ps(y, m0, lo);
	_mm512_mask_storeu_ps(y + 16, m1, hi);
}

/* Row i of G K blocks side by side (block g's row at k + g kc) of P panels
 * from b (panel p at b + ps p; the last one w columns wide, rows w apart, H
 * = 1 or 2 vectors of it read through masks, or H = 3: it is full, w = 32,
 * its two vectors read as the other panels' are): block g's chains acc[g]
 * (V = 2 (P - 1) + (1 or 2) vectors). GA: the blocks that take part (the
 * first GA). */
static inline __attribute__((always_inline)) void group_row(int64_t k, int64_t kc, int64_t w,
                                                            const float *x, const float *b,
                                                            int64_t ps, __m512 acc[4][8],
                                                            const int P, const int H,
                                                            const int GA)
{
	const float *last = b + (P - 1) * ps;
	__mmask16 m0 = lanes(w), m1 = lanes(w - 16);
#pragma GCC unroll 4
	for (int g = 0; g < GA; g++) {
		int64_t kg = k + g * kc;
		__m512 xv = _mm512_set1_ps(x[kg]);
#pragma GCC unroll 4
		for (int p = 0; p + 1 < P; p++) {
			const float *r = b + p * ps + kg * KILN_PACK_NR;
			acc[g][2 * p] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r), acc[g][2 * p]);
			acc[g][2 * p + 1] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r + 16), acc[g][2 * p + 1]);
		}
		const float *r = last + kg * w;
		if (H == 3) {  /* plain loads: no mask to set up, rows 32 apart */
			r = last + kg * KILN_PACK_NR;
			acc[g][2 * P - 2] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r), acc[g][2 * P - 2]);
			acc[g][2 * P - 1] =
				_mm512_fmadd_ps(xv, _mm512_loadu_ps(r + 16), acc[g][2 * P - 1]);
			continue;
		}
		acc[g][2 * P - 2] = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m0, r), acc[g][2 * P - 2]);
		if (H == 2)
			acc[g][2 * P - 1] =
				_mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m1, r + 16), acc[g][2 * P - 1]);
	}
}

/* K blocks b0 .. b0 + G - 1 (kc rows each, the last block of K shorter) of
 * P panels from b, side by side: each column one FMA chain per block from
 * 0, the G blocks' chains independent (the FMA latency hidden by them where
 * the columns are few), then added to tot in block order (tot = acc + tot;
 * block 0 sets it): the GEMM tiles' order. */
static inline __attribute__((always_inline)) void blocks(int64_t K, int64_t kc, int64_t b0,
                                                         int64_t w, const float *x,
                                                         const float *b, __m512 *tot,
                                                         const int P, const int H, const int G)
{
	const int V = 2 * (P - 1) + (H == 3 ? 2 : H);
	const int64_t ps = KILN_PACK_NR * K, k0 = b0 * kc, n = kiln_gemv_last_rows(K, kc, b0 + G - 1);
	__m512 acc[4][8];
#pragma GCC unroll 8
	for (int g = 0; g < G; g++)
#pragma GCC unroll 8
		for (int v = 0; v < V; v++)
			acc[g][v] = _mm512_setzero_ps();
	for (int64_t i = 0; i < n; i++)
		group_row(k0 + i, kc, w, x, b, ps, acc, P, H, G);
	for (int64_t i = n; i < kc; i++)  /* the blocks before a shorter last one */
		group_row(k0 + i, kc, w, x, b, ps, acc, P, H, G - 1);
#pragma GCC unroll 8
	for (int g = 0; g < G; g++)
#pragma GCC unroll 8
		for (int v = 0; v < V; v++)
			tot[v] = b0 + g == 0 ? acc[g][v] : _mm512_add_ps(acc[g][v], tot[v]);
}

/* P (1 to 4) panels side by side from b, panel p at b + 32 K p, the last w
 * <= 32 columns wide (rows w apart; the others full; H: 1 when w <= 16,
 * 2 when w < 32, 3 when the last panel is full too), to y[0..32 (P - 1) +
 * w): each column one FMA chain over the k of each K block of kc rows from
 * 0 (the blocks added in order), then + bias:
 * the GEMM tiles' order, so the same bits as every variant's tiled product.
 * The chains side by side (the FMA latency hidden by them): the panels' 2
 * (P - 1) + H, times up to G K blocks at a time (a narrow layer's: G 4 for
 * one or two vectors of columns, 3 for three, 2 for four). */
static inline __attribute__((always_inline)) void panels(int64_t K, int64_t kc, int64_t w,
                                                         const float *x, const float *b,
                                                         const float *bias, float *y,
                                                         const int P, const int H, const int G)
{
	const int64_t nb = (K + kc - 1) / kc;
	__m512 tot[8];
#pragma GCC unroll 8
	for (int v = 0; v < 8; v++)
		tot[v] = _mm512_setzero_ps();  /* (K >= 1: the first block sets them) */
	for (int64_t b0 = 0; b0 < nb;) {
		int64_t g = nb - b0 < G ? nb - b0 : G;
		switch (g) {
		case 4: blocks(K, kc, b0, w, x, b, tot, P, H, G >= 4 ? 4 : 1); break;
		case 3: blocks(K, kc, b0, w, x, b, tot, P, H, G >= 3 ? 3 : 1); break;
		case 2: blocks(K, kc, b0, w, x, b, tot, P, H, G >= 2 ? 2 : 1); break;
		default: blocks(K, kc, b0, w, x, b, tot, P, H, 1); break;
		}
		b0 += g;
	}
	const int V = 2 * (P - 1) + (H == 3 ? 2 : H);
#pragma GCC unroll 4
	for (int p = 0; p + 1 < P; p++)
		store(y + p * KILN_PACK_NR, bias ? bias + p * KILN_PACK_NR : NULL, KILN_PACK_NR,
		      tot[2 * p], tot[2 * p + 1]);
	store(y + (P - 1) * KILN_PACK_NR, bias ? bias + (P - 1) * KILN_PACK_NR : NULL, w,
	      tot[2 * P - 2], H >= 2 ? tot[V - 1] : _mm512_setzero_ps());
}

/* The largest packed weight (32 K np floats) read four panels at a time:
 * 32 KiB, the L1 data cache of most AVX-512 cores (48 KiB on the EPYC
 * measured). A probe timing the kernel alone (one core, the builds
 * alternating, each call's x waiting on the last one's y, median ns, N x
 * K), two panels at a time -> four, the weight called over and over (from
 * L1) / sixteen weights in turn (from L2): 128 x 32 61 -> 42 / 103 -> 118,
 * 128 x 64 121 -> 76 / 168 -> 237, 192 x 42 112 -> 90 / 197 -> 237, 256 x
 * 32 106 -> 79 / 234 -> 207; over the line 192 x 64 181 -> 152 / 259 ->
 * 342, 128 x 128 314 -> 254 / 456 -> 471. The rule reads only the shape
 * (the sums are the same either way), so a small weight streamed from L2
 * pays for the L1 case. */
enum { QUAD_BYTES = 32768 };

/* The panels of the group at p0 of np: four at a time where the packed
 * weight fits QUAD_BYTES, two otherwise; three where three are left (or
 * five: three, then two), so that no full panel runs alone (its two
 * chains would wait on the FMA latency). */
static int64_t group_of(int64_t np, int64_t p0, int64_t K)
{
	int64_t left = np - p0;
	if (np * KILN_PACK_NR * K * (int64_t)sizeof(float) <= QUAD_BYTES)
		return left == 5 ? 3 : left < 4 ? left : 4;
	return left == 3 ? 3 : left < 2 ? left : 2;
}

void kiln_gemv_kc_avx512(int64_t N, int64_t K, int64_t kc, const float *x, const float *Bp,
                         const float *bias, float *y)
{
	int64_t np = (N + KILN_PACK_NR - 1) / KILN_PACK_NR;
	int several = kc < K;
	for (int64_t p0 = 0; p0 < np;) {
		int64_t n0 = p0 * KILN_PACK_NR, g = group_of(np, p0, K);
		int64_t w = kiln_pack_b32_width(N, n0 + (g - 1) * KILN_PACK_NR);
		const float *b = Bp + n0 * K, *bn = bias ? bias + n0 : NULL;
		float *yn = y + n0;
		switch (g) {
		case 4:
			w == KILN_PACK_NR ? panels(K, kc, w, x, b, bn, yn, 4, 3, 1)
			                  : panels(K, kc, w, x, b, bn, yn, 4, 2, 1);
			break;
		/* a full last panel read without masks (a probe timing the kernel
		 * alone, best of 300: 64 x 16 18.8 -> 16.3 ns, 32 x 64 32.0 ->
		 * 29.4, 128 x 64 77 -> 75, 128 x 128 from L2 within the noise) */
		case 3:
			w == KILN_PACK_NR ? panels(K, kc, w, x, b, bn, yn, 3, 3, 1)
			                  : panels(K, kc, w, x, b, bn, yn, 3, 2, 1);
			break;
		case 2:
			if (w == KILN_PACK_NR)
				several ? panels(K, kc, w, x, b, bn, yn, 2, 3, 2)
				        : panels(K, kc, w, x, b, bn, yn, 2, 3, 1);
			else if (w <= 16)
				several ? panels(K, kc, w, x, b, bn, yn, 2, 1, 3)
				        : panels(K, kc, w, x, b, bn, yn, 2, 1, 1);
			else
				several ? panels(K, kc, w, x, b, bn, yn, 2, 2, 2)
				        : panels(K, kc, w, x, b, bn, yn, 2, 2, 1);
			break;
		default:
			if (w == KILN_PACK_NR)
				several ? panels(K, kc, w, x, b, bn, yn, 1, 3, 4)
				        : panels(K, kc, w, x, b, bn, yn, 1, 3, 1);
			else if (w <= 16)
				several ? panels(K, kc, w, x, b, bn, yn, 1, 1, 4)
				        : panels(K, kc, w, x, b, bn, yn, 1, 1, 1);
			else
				several ? panels(K, kc, w, x, b, bn, yn, 1, 2, 4)
				        : panels(K, kc, w, x, b, bn, yn, 1, 2, 1);
			break;
		}
		p0 += g;
	}
}

void kiln_gemv_avx512(int64_t N, int64_t K, const float *x, const float *Bp, const float *bias,
                      float *y)
{
	kiln_gemv_kc_avx512(N, K, kiln_gemm_kc(K), x, Bp, bias, y);
}

/* R rows of Y = X B + bias over P (1 or 2) panels side by side, the last
 * w <= 32 columns wide (rows w apart; a full panel before it): 2PR
 * accumulators, each a plain FMA chain over k from 0, then + bias (the GEMM
 * core's order). */
static inline __attribute__((always_inline)) void shortk_tile(int64_t K, int64_t w,
                                                              const float *X, int64_t ldx,
                                                              const float *b, const float *bias,
                                                              float *Y, int64_t ldy, const int R,
                                                              const int P)
{
	__m512 acc[5][4];
	const float *c = b + K * KILN_PACK_NR;     /* the second panel */
	const float *last = P == 2 ? c : b;
	__mmask16 m0 = lanes(w), m1 = lanes(w - 16);
#pragma GCC unroll 5
	for (int r = 0; r < R; r++)
#pragma GCC unroll 4
		for (int v = 0; v < 2 * P; v++)
			acc[r][v] = _mm512_setzero_ps();
#pragma GCC unroll 16
	for (int64_t k = 0; k < K; k++) {
		__m512 bv[4];
		if (P == 2) {
			bv[0] = _mm512_loadu_ps(b + k * KILN_PACK_NR);
			bv[1] = _mm512_loadu_ps(b + k * KILN_PACK_NR + 16);
		}
		bv[2 * P - 2] = _mm512_maskz_loadu_ps(m0, last + k * w);
		bv[2 * P - 1] = _mm512_maskz_loadu_ps(m1, last + k * w + 16);
#pragma GCC unroll 5
		for (int r = 0; r < R; r++) {
			__m512 xr = _mm512_set1_ps(X[r * ldx + k]);
#pragma GCC unroll 4
			for (int v = 0; v < 2 * P; v++)
				acc[r][v] = _mm512_fmadd_ps(xr, bv[v], acc[r][v]);
		}
	}
#pragma GCC unroll 5
	for (int r = 0; r < R; r++) {
		if (P == 2)
			store(Y + r * ldy, bias, KILN_PACK_NR, acc[r][0], acc[r][1]);
		store(Y + r * ldy + (P - 1) * KILN_PACK_NR, bias ? bias + (P - 1) * KILN_PACK_NR : NULL,
		      w, acc[r][2 * P - 2], acc[r][2 * P - 1]);
	}
}

/* Rows m .. M-1 in tiles of five rows (the last of one to four), over P
 * panels at n0. */
static inline __attribute__((always_inline)) void shortk_rows(int64_t M, int64_t N, int64_t K,
                                                              const float *X, int64_t ldx,
                                                              const float *Bp,
                                                              const float *bias, float *Y,
                                                              int64_t ldy, int64_t n0,
                                                              const int P)
{
	int64_t w = kiln_pack_b32_width(N, n0 + (P - 1) * KILN_PACK_NR);
	const float *b = Bp + n0 * K, *bn = bias ? bias + n0 : NULL;
	int64_t m = 0;
	for (; m + 5 <= M; m += 5)
		shortk_tile(K, w, X + m * ldx, ldx, b, bn, Y + m * ldy + n0, ldy, 5, P);
	const float *x = X + m * ldx;
	float *y = Y + m * ldy + n0;
	switch (M - m) {
	case 4: shortk_tile(K, w, x, ldx, b, bn, y, ldy, 4, P); break;
	case 3: shortk_tile(K, w, x, ldx, b, bn, y, ldy, 3, P); break;
	case 2: shortk_tile(K, w, x, ldx, b, bn, y, ldy, 2, P); break;
	case 1: shortk_tile(K, w, x, ldx, b, bn, y, ldy, 1, P); break;
	default: break;
	}
}

void kiln_gemm_shortk_avx512(int64_t M, int64_t N, int64_t K, const float *X, int64_t ldx,
                             const float *Bp, const float *bias, float *Y, int64_t ldy)
{
	int64_t n0 = 0;
	for (; n0 + KILN_PACK_NR < N; n0 += 2 * KILN_PACK_NR)  /* a full panel and one more */
		shortk_rows(M, N, K, X, ldx, Bp, bias, Y, ldy, n0, 2);
	if (n0 < N)
		shortk_rows(M, N, K, X, ldx, Bp, bias, Y, ldy, n0, 1);
}

/* a row's 16 float16 (m: the lanes read) widened to float */
static inline __attribute__((always_inline)) __m512 widen16(const uint16_t *p, __mmask16 m)
{
	return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

/* Float16 weights in their natural layout (gemv.h): w <= 16 q columns at a
 * time (q 8 or 16, a constant once inlined: 16 only with w = 256, each row's
 * 512 bytes read whole, in order through B when ldb is 256, where blocks of
 * 128 read every row twice, half at a time), each row of B widened as it is
 * read; each column one FMA chain over the k of each K block of kc rows
 * (GEMM_PACK_KC, or a narrow layer's) from 0, the blocks added in order, then + bias: the order the GEMM core sums a
 * B packed on the fly (ref and AVX2 at batch 1, every variant at larger
 * batches), the FMA latency hidden by q vectors of 16 columns side by side. */
static inline __attribute__((always_inline)) void f16n_cols(int q, int64_t K, int64_t kc,
                                                            int64_t w,
                                                            const float *x, const uint16_t *b,
                                                            int64_t ldb, const float *bias,
                                                            float *y)
{
	__m512 acc[16], tot[16];
	for (int j = 0; j < q; j++)
		tot[j] = _mm512_setzero_ps();  /* (K >= 1: the first block sets them) */
	for (int64_t k0 = 0; k0 < K; k0 += kc) {
		int64_t k1 = K - k0 < kc ? K : k0 + kc;
#pragma GCC unroll 16
		for (int j = 0; j < q; j++)
			acc[j] = _mm512_setzero_ps();
		for (int64_t k = k0; k < k1; k++) {
			const uint16_t *r = b + k * ldb;
			__m512 xv = _mm512_set1_ps(x[k]);
#pragma GCC unroll 16
			for (int j = 0; j < q; j++)
				acc[j] = _mm512_fmadd_ps(xv, q == 16 ? _mm512_cvtph_ps(_mm256_loadu_si256(
				                                           (const __m256i *)(r + 16 * j)))
				                                     : widen16(r + 16 * j, lanes(w - 16 * j)),
				                         acc[j]);
		}
#pragma GCC unroll 16
		for (int j = 0; j < q; j++)
			tot[j] = k0 == 0 ? acc[j] : _mm512_add_ps(acc[j], tot[j]);
	}
	for (int j = 0; j < q; j += 2)
		if (w > 16 * j)
			store(y + 16 * j, bias ? bias + 16 * j : NULL, w - 16 * j, tot[j], tot[j + 1]);
}

static void f16n_block(int64_t K, int64_t kc, int64_t w, const float *x, const uint16_t *b,
                       int64_t ldb, const float *bias, float *y)
{
	f16n_cols(8, K, kc, w, x, b, ldb, bias, y);
}

static void f16n_block256(int64_t K, int64_t kc, const float *x, const uint16_t *b, int64_t ldb,
                          const float *bias, float *y)
{
	f16n_cols(16, K, kc, 256, x, b, ldb, bias, y);
}

void kiln_gemv_f16_avx512(int64_t N, int64_t K, int64_t kc, const float *x, const uint16_t *B,
                          int64_t ldb, const float *bias, float *y)
{
	int64_t n0 = 0;
	for (; n0 + 256 <= N; n0 += 256)
		f16n_block256(K, kc, x, B + n0, ldb, bias ? bias + n0 : NULL, y + n0);
	for (; n0 < N; n0 += 128)
		f16n_block(K, kc, N - n0 < 128 ? N - n0 : 128, x, B + n0, ldb,
		           bias ? bias + n0 : NULL, y + n0);
}
