/*
 * f32-gemv/avx512.c - gemv.h's product with AVX-512. Up to four 32-column
 * panels at a time (four streams of B: at batch 1 the step is bound by
 * reading B from L2), each column one FMA chain over k in the GEMM tiles'
 * order (so batch 1 gives the same bits as every batch size and variant),
 * the panels' chains side by side to hide the FMA latency. A narrower last
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

/* P (1 to 4) panels side by side from b, panel p at b + 32 K p, the last w
 * <= 32 columns wide (rows w apart; the others full), to y[0..32 (P - 1) + w):
 * each column one FMA chain over the k of a K block from 0 (kiln_gemm_kc's
 * blocks, added to the blocks before), then + bias: the GEMM tiles' order,
 * so the same bits as every variant's tiled product. 2P accumulators, the
 * FMA latency hidden by the panels' chains side by side (P streams of B). */
static inline __attribute__((always_inline)) void panels(int64_t K, int64_t w, const float *x,
                                                         const float *b, const float *bias,
                                                         float *y, const int P)
{
	const int64_t kc = kiln_gemm_kc(K), ps = KILN_PACK_NR * K;
	const float *last = b + (P - 1) * ps;
	__mmask16 m0 = lanes(w), m1 = lanes(w - 16);
	__m512 tot[8], acc[8];
#pragma GCC unroll 8
	for (int v = 0; v < 2 * P; v++)
		tot[v] = _mm512_setzero_ps();  /* (K >= 1: the first block sets them) */
	for (int64_t k0 = 0; k0 < K; k0 += kc) {
		int64_t k1 = K - k0 < kc ? K : k0 + kc;
#pragma GCC unroll 8
		for (int v = 0; v < 2 * P; v++)
			acc[v] = _mm512_setzero_ps();
		for (int64_t k = k0; k < k1; k++) {
			__m512 xv = _mm512_set1_ps(x[k]);
#pragma GCC unroll 4
			for (int p = 0; p + 1 < P; p++) {
				const float *r = b + p * ps + k * KILN_PACK_NR;
				acc[2 * p] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r), acc[2 * p]);
				acc[2 * p + 1] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r + 16), acc[2 * p + 1]);
			}
			const float *r = last + k * w;
			acc[2 * P - 2] = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m0, r), acc[2 * P - 2]);
			acc[2 * P - 1] =
				_mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m1, r + 16), acc[2 * P - 1]);
		}
#pragma GCC unroll 8
		for (int v = 0; v < 2 * P; v++)
			tot[v] = k0 == 0 ? acc[v] : _mm512_add_ps(acc[v], tot[v]);
	}
#pragma GCC unroll 4
	for (int p = 0; p + 1 < P; p++)
		store(y + p * KILN_PACK_NR, bias ? bias + p * KILN_PACK_NR : NULL, KILN_PACK_NR,
		      tot[2 * p], tot[2 * p + 1]);
	store(y + (P - 1) * KILN_PACK_NR, bias ? bias + (P - 1) * KILN_PACK_NR : NULL, w,
	      tot[2 * P - 2], tot[2 * P - 1]);
}

/* Panels in groups of at most four (the last group the fewest, with the
 * narrow last panel if there is one). */
void kiln_gemv_avx512(int64_t N, int64_t K, const float *x, const float *Bp,
                          const float *bias, float *y)
{
	int64_t np = (N + KILN_PACK_NR - 1) / KILN_PACK_NR;
	for (int64_t p0 = 0; p0 < np;) {
		int64_t n0 = p0 * KILN_PACK_NR, g = np - p0 < 4 ? np - p0 : 4;
		int64_t w = kiln_pack_b32_width(N, n0 + (g - 1) * KILN_PACK_NR);
		const float *b = Bp + n0 * K, *bn = bias ? bias + n0 : NULL;
		switch (g) {
		case 4: panels(K, w, x, b, bn, y + n0, 4); break;
		case 3: panels(K, w, x, b, bn, y + n0, 3); break;
		case 2: panels(K, w, x, b, bn, y + n0, 2); break;
		default: panels(K, w, x, b, bn, y + n0, 1); break;
		}
		p0 += g;
	}
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
 * read; each column one FMA chain over the k of each GEMM_PACK_KC block from
 * 0, the blocks added in order, then + bias: the order the GEMM core sums a
 * B packed on the fly (ref and AVX2 at batch 1, every variant at larger
 * batches), the FMA latency hidden by q vectors of 16 columns side by side. */
static inline __attribute__((always_inline)) void f16n_cols(int q, int64_t K, int64_t w,
                                                            const float *x, const uint16_t *b,
                                                            int64_t ldb, const float *bias,
                                                            float *y)
{
	__m512 acc[16], tot[16];
	for (int j = 0; j < q; j++)
		tot[j] = _mm512_setzero_ps();  /* (K >= 1: the first block sets them) */
	for (int64_t k0 = 0; k0 < K; k0 += GEMM_PACK_KC) {
		int64_t k1 = K - k0 < GEMM_PACK_KC ? K : k0 + GEMM_PACK_KC;
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

static void f16n_block(int64_t K, int64_t w, const float *x, const uint16_t *b, int64_t ldb,
                       const float *bias, float *y)
{
	f16n_cols(8, K, w, x, b, ldb, bias, y);
}

static void f16n_block256(int64_t K, const float *x, const uint16_t *b, int64_t ldb,
                          const float *bias, float *y)
{
	f16n_cols(16, K, 256, x, b, ldb, bias, y);
}

void kiln_gemv_f16_avx512(int64_t N, int64_t K, const float *x, const uint16_t *B, int64_t ldb,
                          const float *bias, float *y)
{
	int64_t n0 = 0;
	for (; n0 + 256 <= N; n0 += 256)
		f16n_block256(K, x, B + n0, ldb, bias ? bias + n0 : NULL, y + n0);
	for (; n0 < N; n0 += 128)
		f16n_block(K, N - n0 < 128 ? N - n0 : 128, x, B + n0, ldb, bias ? bias + n0 : NULL,
		           y + n0);
}
