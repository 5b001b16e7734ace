/*
 * f32-gemm/driver.c - the GEMM core's one dispatch point and its blocking,
 * portable C around the micro-kernels of avx512.c, avx2.c and ref.c.
 *
 * kiln_gemm_run walks C in tiles of the variant's MR rows by one panel of 32
 * columns. B comes packed already (the compiler packs weights into the b32
 * layout of pack.h, so the kernels read them as one stream per panel with no
 * copy at run time), or its rows are read in place, or it is packed on the
 * fly, a panel and at most KC rows at a time, into a 32 KiB buffer on the
 * stack (any strides: Gemm transB, the convolution's implicit im2col). K is
 * cut into blocks of at most 256 rows; the first one applies beta and the
 * last one the epilogue. B in place: a tile's rows of A (one K block) stay in
 * L1 while B's panels (a block of B that fits L2) stream past them; B packed
 * on the fly: each panel's K block stays in L1 while the tiles pass over it.
 * Rows spread evenly over the tiles. AVX-512 on packed B of 64 rows or more
 * runs tiles of 6 rows by two panels in another order (run_wide), with the
 * same bits. Nothing is allocated; the result depends
 * only on the inputs and the variant (a fixed summation order).
 */
#include <stddef.h>
#include <string.h>

#include "../isa.h"
#include "../f32-epilogue/epilogue.h"
#include "../f32-gemv/gemv.h"
#include "gemm.h"

enum {
	KC = GEMM_PACK_KC,      /* rows of a panel packed on the fly: 32 KiB */
	B_BLOCK_BYTES = 512 << 10,  /* B's block that stays in L2 (2 MiB) */
	WIDE_MR = 6,            /* rows of kiln_gemm_tile64_avx512 */
	WIDE_A_BYTES = 512 << 10,  /* run_wide's block of A's rows that stays in L2 */
	WIDE_MIN_M = 64,        /* fewer rows: kiln_gemm_run's 12 x 32 order (see run_wide) */
	WIDE_PF_LINES = 8,      /* lines of each panel of the next block of B a tile prefetches */
};

static int inline_act(int act)
{
	return act == KILN_ACT_NONE || act == KILN_ACT_RELU || act == KILN_ACT_LEAKY_RELU ||
	       act == KILN_ACT_CLIP;
}

/* The first row of tile ti of nt over M rows: the rows spread evenly (64 =
 * 6 x ~11, not 5 x 12 + 4: a short tile has too few accumulators). */
static int64_t tile_row(int64_t ti, int64_t nt, int64_t M)
{
	return ti * M / nt;
}

static void tile_a(gemm_tile_fn tile, GemmTile *t, const GemmEpi *e, int late_act, int64_t m,
                   float *C, int64_t ldc, int64_t n0, int64_t N);

/* The tile whose A (t->A, t->lda: in place or a copy) starts at row m of
 * A (lda apart): C, the epilogue's operands, and the prefetch of A's
 * floats [pf, pf_end) (offsets from A; none past e->a_end, none at all
 * without it). */
static void run_tile_a(gemm_tile_fn tile, GemmTile *t, const GemmEpi *e, int late_act, int64_t m,
                       const float *A, float *C, int64_t ldc, int64_t n0, int64_t N,
                       int64_t pf, int64_t pf_end)
{
	t->pf = NULL;
	int64_t a_n = e->a_end ? e->a_end - A : 0;
	if (pf_end > a_n)
		pf_end = a_n;
	if (pf < pf_end) {
		t->pf = A + pf;
		t->pf_n = pf_end - pf;
	}
	tile_a(tile, t, e, late_act, m, C, ldc, n0, N);
}

/* run_tile_a once t->pf is set: C and the epilogue's operands of the tile
 * at row m, column n0, the tile, and the late activation */
static void tile_a(gemm_tile_fn tile, GemmTile *t, const GemmEpi *e, int late_act, int64_t m,
                   float *C, int64_t ldc, int64_t n0, int64_t N)
{
	t->C = C + m * ldc + n0;
	t->col_bias = e->col_bias ? e->col_bias + n0 : NULL;
	t->row_bias = e->row_bias ? e->row_bias + m : NULL;
	t->res = e->res ? e->res + m * e->ldres + n0 : NULL;
	tile(t);
	/* the exp-based activations: on the last panel, over the tile's rows
	 * whole (one call per row, not per panel) */
	if (t->final && late_act && n0 + t->w >= N)
		for (int i = 0; i < t->mr; i++)
			kiln_f32_act(C + (m + i) * ldc, N, e->ep);
}

/* Tile ti of nt over M rows, in C's columns [n0, n0 + t->w), K block at
 * column k0 of A (lda apart). pf: prefetch the next tile's A (as many rows
 * as this one's right after them; across calls: the next block of rows
 * too) while this one runs. */
static void run_tile(gemm_tile_fn tile, GemmTile *t, const GemmEpi *e, int late_act,
                     int64_t ti, int64_t nt, int64_t M, const float *A, int64_t lda, int64_t k0,
                     float *C, int64_t ldc, int64_t n0, int64_t N, int pf)
{
	int64_t m = tile_row(ti, nt, M);
	t->lda = lda;
	t->mr = (int)(tile_row(ti + 1, nt, M) - m);
	t->A = A + m * lda + k0;
	int64_t next = (m + t->mr) * lda;
	run_tile_a(tile, t, e, late_act, m, A, C, ldc, n0, N, pf ? next : 0,
	           pf ? next + t->mr * lda : 0);
}

/* Tiles [t0, t1) of nt over M rows against one panel. */
static void run_tiles(gemm_tile_fn tile, GemmTile *t, const GemmEpi *e, int late_act,
                      int64_t t0, int64_t t1, int64_t nt, int64_t M, const float *A,
                      int64_t lda, int64_t k0, float *C, int64_t ldc, int64_t n0, int64_t N)
{
	for (int64_t ti = t0; ti < t1; ti++)
		run_tile(tile, t, e, late_act, ti, nt, M, A, lda, k0, C, ldc, n0, N, 1);
}

#ifdef KILN_HAVE_X86_VARIANTS
/* Where run_wide's tiles over one block of B read (its K rows [k0, k0 + kb)
 * of the panel at n0, or of the pair from n0) and what they compute. */
typedef struct WideBlock {
	const float *A;
	int64_t lda, m0, rows;     /* the block of A's rows */
	const float *Bp;
	int64_t K, N, k0, kb, n0, ne;  /* ne: the end of B's block of columns */
	float *C;
	int64_t ldc;
	const char *next;          /* the next block of B to prefetch (or NULL): next_n bytes, */
	int64_t next_n, next_ld;   /* and as many next_ld bytes further when it is a pair */
} WideBlock;

/* Every tile of the block's rows against its block of B, each tile
 * prefetching the next tile's A and a share of the next block of B. */
static void wide_tiles(GemmTile *t, const GemmEpi *e, int late_act, const WideBlock *w)
{
	int64_t nt = (w->rows + WIDE_MR - 1) / WIDE_MR, pw = kiln_pack_b32_width(w->N, w->n0);
	gemm_tile_fn f = kiln_gemm_tile_avx512;
	t->B = w->Bp + w->n0 * w->K + w->k0 * pw;
	t->ldb = pw;
	t->w = (int)pw;
	if (w->n0 + 2 * KILN_PACK_NR <= w->ne) {
		/* this panel and the next, KILN_PACK_NR K floats on */
		f = kiln_gemm_tile64_avx512;
		t->ldp = KILN_PACK_NR * w->K;
		t->w = 2 * KILN_PACK_NR;
	}
	/* at most WIDE_PF_LINES a panel per tile: more at once (few tiles)
	 * stalled the tile behind them */
	int64_t share = (w->next_n / 64 + nt - 1) / nt, at = 0;
	share = (share < WIDE_PF_LINES ? share : WIDE_PF_LINES) * 64;
	for (int64_t ti = 0; ti < nt; ti++) {
		for (int64_t q = 0; w->next && q < share && at < w->next_n; q += 64, at += 64) {
			__builtin_prefetch(w->next + at, 0, 3);
			if (w->next_ld)
				__builtin_prefetch(w->next + w->next_ld + at, 0, 3);
		}
		int64_t m = w->m0 + tile_row(ti, nt, w->rows);
		t->mr = (int)(w->m0 + tile_row(ti + 1, nt, w->rows) - m);
		t->A = w->A + m * w->lda + w->k0;
		t->lda = w->lda;
		t->pf = ti + 1 < nt ? t->A + t->mr * w->lda : NULL;
		t->pf_n = t->mr * w->lda;
		tile_a(f, t, e, late_act, m, w->C, w->ldc, w->n0, w->N);
	}
}

/* AVX-512, B packed: tiles of up to 6 rows by two panels side by side
 * (kiln_gemm_tile64_avx512: per k half the broadcasts of A of the 12 x 32
 * tile for the same 24 FMAs), an odd last panel in 32-wide tiles of the
 * same rows. The order differs from kiln_gemm_run's: each K block of a pair
 * of panels (kc x 64 floats, at most 64 KiB) stays in L1 or L2 while every
 * tile of a block of rows (their A at most WIDE_A_BYTES, in L2) passes over
 * it, and the tiles fetch the next such block of B meanwhile (a weight is
 * usually read from beyond L2); B in blocks of K groups (kg) by nc columns
 * as there. The same sums in the same order per element as the 12 x 32
 * tiles, so the same bits. */
static void run_wide(GemmTile *t, const GemmEpi *e, int late_act, int64_t M, int64_t N,
                     int64_t K, const float *A, int64_t lda, const float *Bp, float *C,
                     int64_t ldc, int64_t kc, int64_t kg, int64_t nc)
{
	int64_t mb = WIDE_A_BYTES / 4 / kc / WIDE_MR * WIDE_MR;
	if (mb < WIDE_MR)
		mb = WIDE_MR;
	WideBlock w = {.A = A, .lda = lda, .Bp = Bp, .K = K, .N = N, .C = C, .ldc = ldc};
	for (int64_t g0 = 0; g0 < K; g0 += kg) {
		int64_t g1 = g0 + kg < K ? g0 + kg : K;
		for (int64_t nb = 0; nb < N; nb += nc) {
			w.ne = nb + nc < N ? nb + nc : N;
			for (w.m0 = 0; w.m0 < M; w.m0 += mb) {
				w.rows = M - w.m0 < mb ? M - w.m0 : mb;
				for (w.k0 = g0; w.k0 < g1; w.k0 += kc) {
					w.kb = g1 - w.k0 < kc ? g1 - w.k0 : kc;
					t->K = w.kb, t->alpha = e->alpha, t->cbeta = w.k0 == 0 ? e->beta : 1.0f;
					t->final = w.k0 + w.kb >= K;
					for (w.n0 = nb; w.n0 < w.ne; w.n0 += t->w) {
						/* the next block: the next pair's, or the first
						 * pair's of the next K block */
						int64_t n1 = w.n0 + 2 * KILN_PACK_NR, k1 = w.k0, kb1 = w.kb;
						if (n1 >= w.ne)
							n1 = nb, k1 = w.k0 + w.kb, kb1 = g1 - k1 < kc ? g1 - k1 : kc;
						int64_t w1 = kiln_pack_b32_width(N, n1);
						w.next = k1 < g1 ? (const char *)(Bp + n1 * K + k1 * w1) : NULL;
						w.next_n = kb1 * w1 * 4;
						w.next_ld = n1 + 2 * KILN_PACK_NR <= w.ne ? 4 * KILN_PACK_NR * K : 0;
						wide_tiles(t, e, late_act, &w);
					}
				}
			}
		}
	}
}
#endif

void kiln_gemm_run(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                  const GemmBSrc *b, float *C, int64_t ldc, const GemmEpi *e)
{
	gemm_tile_fn tile;
	int64_t MR;
	switch (kiln_isa()) {
#ifdef KILN_HAVE_X86_VARIANTS
	case KILN_ISA_AVX512: tile = kiln_gemm_tile_avx512; MR = 12; break;
	case KILN_ISA_AVX2: tile = kiln_gemm_tile_avx2; MR = 6; break;
#endif
	default: tile = kiln_gemm_tile_ref; MR = 4; break;
	}
	if (M <= 0 || N <= 0)
		return;
	const kiln_epilogue *ep = e->ep;
	int act = ep ? ep->act : KILN_ACT_NONE;
	int late_act = !inline_act(act);
	float panel[KC * KILN_PACK_NR];
	GemmTile t = {.ldc = ldc, .ldres = e->ldres, .act = late_act ? KILN_ACT_NONE : act,
	              .act_alpha = ep ? ep->alpha : 0.0f, .act_beta = ep ? ep->beta : 0.0f};
	int64_t nt = (M + MR - 1) / MR;
	/* K in blocks of at most GEMM_KBLOCK rows (a narrow layer's blocks,
	 * e->kc, or kiln_gemm_kc's spread evenly); the first applies beta, the
	 * last the epilogue, C accumulates in between. */
	int64_t kc = e->kc > 0 ? e->kc : kiln_gemm_kc(K);
	if (!b->packed && !b->direct) {
		/* B packed here: each (K block, panel) is packed once and every tile
		 * of A passes over it; A's block (M x kc, often a convolution's
		 * weights, too big for L2 whole) is read in place. */
		int64_t k0 = 0, pkc = e->kc > 0 ? e->kc : KC;
		do {
			int64_t kb = K - k0 < pkc ? K - k0 : pkc;
			t.K = kb, t.alpha = e->alpha, t.cbeta = k0 == 0 ? e->beta : 1.0f;
			t.final = k0 + kb >= K;
			for (int64_t n0 = 0; n0 < N; n0 += KILN_PACK_NR) {
				t.w = (int)kiln_pack_b32_width(N, n0);
				b->pack(b, n0, k0, kb, panel);
				t.B = panel, t.ldb = t.w;
				run_tiles(tile, &t, e, late_act, 0, nt, nt, M, A, lda, k0, C, ldc, n0, N);
			}
			k0 += kb;
		} while (k0 < K);
		return;
	}
	/* AVX-512, a narrow layer's several K blocks of at most GEMM_KBLOCK
	 * rows in all: tiles of 6 rows (12 for 16 columns or fewer; from 64
	 * rows and 64 columns run_wide's 6 x 64) over all of K, the blocks'
	 * totals in registers (on the stack for 6 x 64; t.kb: the same bits as
	 * a call per block), where a 12-row tile call per block paid for C's
	 * masked stores and loads between blocks (M = 16, 5 x 32 in blocks of
	 * 8: 545 ns against 175 in one block) */
	int narrow_kb = 0;
	if (MR == 12 && kc < K && K <= GEMM_KBLOCK && e->kc > 0 && N <= GEMM_NARROW_N) {
		narrow_kb = 1;
		t.kb = kc;
		kc = K;
		MR = N <= 16 ? 12 : 6;  /* 12 rows of one vector of columns, else 6 of two */
		nt = (M + MR - 1) / MR;
	}
	/* B in place (packed weights, or rows read where they are): the
	 * broadcast operand, a tile's rows of A (at most 12 KiB per K block), stays
	 * in L1 while B's panels stream past it from L2, one contiguous stream
	 * each. B is cut into blocks that fit L2 (B_BLOCK_BYTES): groups of K
	 * blocks (all of K unless it is very long) by NC columns. Within a block,
	 * each tile runs over all its K blocks and panels, so its C rows (at
	 * most 12 x NC floats) stay in L1 or L2 between K blocks. */
	int64_t kc1 = kc > 0 ? kc : 1;
	int64_t kg = B_BLOCK_BYTES / 4 / (KILN_PACK_NR * kc1) * kc1;
	if (kg < kc1)
		kg = kc1;
	/* AVX-512 on packed B of two panels or more, A's rows not 4 KiB apart:
	 * the 6 x 64 tiles (run_wide) */
	int wide = 0;
#ifdef KILN_HAVE_X86_VARIANTS
	wide = (MR == 12 || narrow_kb) && b->packed && N >= 2 * KILN_PACK_NR && M >= WIDE_MIN_M && K > 0 &&
	       gemm_b_direct(lda);
#endif
	int64_t pstep = wide ? 2 * KILN_PACK_NR : KILN_PACK_NR;
	int64_t nc = B_BLOCK_BYTES / 4 / (kg < K ? kg : kc1) / pstep * pstep;
	if (nc < pstep)
		nc = pstep;
	if (wide) {
		run_wide(&t, e, late_act, M, N, K, A, lda, b->packed, C, ldc, kc1, kg, nc);
		return;
	}
	/* AVX-512 (copy_a): the next tile's A prefetched a line per four k of
	 * every panel; and where A's rows are a multiple of 4 KiB apart (K =
	 * 1024: they would all fall into the same few L1 sets), each tile's K
	 * block of A is copied once (it serves every panel) into rows
	 * GEMM_KBLOCK floats apart (copy_a 2) */
	_Alignas(64) float abuf[12 * GEMM_KBLOCK];
	int copy_a = MR == 12 && K > 0 ? (gemm_b_direct(lda) ? 1 : 2) : 0;
	int64_t g0 = 0;
	do {
		int64_t g1 = g0 + kg < K ? g0 + kg : K;
		for (int64_t nb = 0; nb < N; nb += nc) {
			int64_t ne = nb + nc < N ? nb + nc : N;
			for (int64_t ti = 0; ti < nt; ti++) {
				int64_t m = tile_row(ti, nt, M), mr = tile_row(ti + 1, nt, M) - m;
				/* the next tile's A, a line per four k of every panel
				 * (tile_12x32_asm) */
				int64_t pf = (m + mr) * lda, pf_end = (m + 2 * mr) * lda;
				for (int64_t k0 = g0; k0 < g1 || k0 == 0; k0 += kc1) {
					int64_t kb = g1 - k0 < kc ? g1 - k0 : kc;
					t.K = kb, t.alpha = e->alpha, t.cbeta = k0 == 0 ? e->beta : 1.0f;
					t.final = k0 + kb >= K;
					if (copy_a == 2) {
						/* the tile's block of A, rows GEMM_KBLOCK apart */
						for (int64_t i = 0; i < mr; i++)
							memcpy(abuf + i * GEMM_KBLOCK, A + (m + i) * lda + k0,
							       (size_t)kb * sizeof *abuf);
					}
					for (int64_t n0 = nb; n0 < ne; n0 += KILN_PACK_NR) {
						int64_t w = kiln_pack_b32_width(N, n0);
						t.w = (int)w;
						if (b->packed) {
							t.B = b->packed + n0 * K + k0 * w;
							t.ldb = w;
						} else {
							t.B = b->direct + k0 * b->ld + n0;
							t.ldb = b->ld;
						}
						if (copy_a) {
							t.mr = (int)mr;
							t.A = copy_a == 2 ? abuf : A + m * lda + k0;
							t.lda = copy_a == 2 ? GEMM_KBLOCK : lda;
							run_tile_a(tile, &t, e, late_act, m, A, C, ldc, n0, N, pf, pf_end);
							pf += kb / 4 * (64 / sizeof *A);
							continue;
						}
						/* the next tile's A: while the last panel runs */
						run_tile(tile, &t, e, late_act, ti, nt, M, A, lda, k0, C, ldc, n0, N,
						         k0 + kb >= g1 && n0 + KILN_PACK_NR >= ne);
					}
				}
			}
		}
		g0 = g1;
	} while (g0 < K);
}

/* The panel at column n0, rows [k0, k0 + kc), of a B whose columns are
 * contiguous (element (k, n) at src[n * cs + k]): transposed in registers
 * where the variant can. */
static void pack_t(const float *src, int64_t cs, int64_t N, int64_t n0, int64_t k0, int64_t kc,
                   float *dst)
{
#ifdef KILN_HAVE_X86_VARIANTS
	if (kiln_isa() == KILN_ISA_AVX512) {
		kiln_pack_b32_t_avx512(src, cs, N, n0, k0, kc, dst);
		return;
	}
#endif
	kiln_pack_b32_panel(src, 1, cs, N, n0, k0, kc, dst);
}

static void pack_strided(const GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst)
{
	if (s->rs == 1)
		pack_t(s->src, s->cs, s->N, n0, k0, kc, dst);
	else
		kiln_pack_b32_panel(s->src, s->rs, s->cs, s->N, n0, k0, kc, dst);
}

/* pack_strided for a float16 B (ctx; strides rs, cs): widened as it is
 * packed, rows of the panel with F16C where they are contiguous; a
 * transposed B (rs == 1) is widened column by column into a stack block and
 * transposed from there. */
static void pack_f16(const GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst)
{
	const uint16_t *src = s->ctx;
	int64_t w = kiln_pack_b32_width(s->N, n0);
	if (s->rs == 1 && s->cs != 1) {
		float cols[KILN_PACK_NR * KC];
		for (int64_t j = 0; j < w; j++)
			kiln_f16_widen(src + (n0 + j) * s->cs + k0, 1, cols + j * kc, kc);
		pack_t(cols, kc, w, 0, 0, kc, dst);
		return;
	}
	for (int64_t k = 0; k < kc; k++)
		kiln_f16_widen(src + (k0 + k) * s->rs + n0 * s->cs, s->cs, dst + k * w, w);
}

/* A few rows of A (5 to 32) against a long B stored transposed (rows of Bt
 * contiguous: a tied embedding's output projection at batch 16): C^T = Bt A^T,
 * with Bt as the streamed operand, read in place in its natural layout, and
 * A^T (K x M) packed once on the stack as the one panel. Each block of C^T's
 * rows is computed on the stack (in L1) and transposed into C there, so only
 * the M x K floats of A and the M x N results are moved, instead of a 16 x 16
 * register transpose per 256 floats of B when B's panels are packed on the
 * fly. AVX-512 only (the variant it was measured on), with the bits of the
 * path every other variant takes for the same call (kiln_gemm_run on B
 * packed on the fly, issue 30): each element the same products in the same
 * FMA chains, in the same K blocks (GEMM_PACK_KC rows from 0, not
 * kiln_gemm_kc's even ones), alpha per block, beta C on the first block
 * (C^T's block starts as C's transpose where beta != 0), the bias (per row
 * of Bt) and the activation on the last; the exp-based activations are
 * elementwise, so C^T's rows give C's bits. */
enum { SWAP_AT = 8192, SWAP_CT = 4096, SWAP_MIN_N = 64 };

static int gemm_swapped(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                        int64_t lda, const float *Bt, int64_t b_row_stride, int64_t ldbt,
                        float beta, float *C, int64_t ldc, const kiln_epilogue *ep)
{
#ifdef KILN_HAVE_X86_VARIANTS
	if (kiln_isa() != KILN_ISA_AVX512 || b_row_stride != 1 || ldbt < K || M <= 4 ||
	    M > KILN_PACK_NR || K <= 0 || M * K > SWAP_AT || N < SWAP_MIN_N)
		return 0;
	float at[SWAP_AT], ct[SWAP_CT];
	for (int64_t m = 0; m < M; m++)
		for (int64_t k = 0; k < K; k++)
			at[k * M + m] = A[m * lda + k];
	GemmBSrc src = {.direct = at, .ld = M, .N = M};
	int64_t R = SWAP_CT / M;
	for (int64_t n0 = 0; n0 < N; n0 += R) {
		int64_t nr = N - n0 < R ? N - n0 : R;
		if (beta != 0.0f)
			for (int64_t n = 0; n < nr; n++)
				for (int64_t m = 0; m < M; m++)
					ct[n * M + m] = C[m * ldc + n0 + n];
		GemmEpi e = {.alpha = alpha, .beta = beta,
		             .row_bias = ep && ep->bias ? ep->bias + n0 : NULL, .ep = ep,
		             .kc = GEMM_PACK_KC, .a_end = ldbt == K ? Bt + N * ldbt : NULL};
		kiln_gemm_run(nr, M, K, Bt + n0 * ldbt, ldbt, &src, ct, M, &e);
		kiln_gemm_ct_avx512(ct, nr, M, C + n0, ldc);
	}
	return 1;
#else
	(void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)Bt, (void)b_row_stride;
	(void)ldbt, (void)beta, (void)C, (void)ldc, (void)ep;
	return 0;
#endif
}

/* The epilogue ep (or NULL) over M finished rows of C of N floats, ldc
 * apart, for the paths whose kernels leave it out: ep's bias first unless
 * the kernel added it (with_bias 0), then the activation. */
static void rows_epilogue(int64_t M, int64_t N, float *C, int64_t ldc, const kiln_epilogue *ep,
                          int with_bias)
{
	for (int64_t m = 0; ep && m < M; m++) {
		float *row = C + m * ldc;
		if (with_bias && ep->bias)
			for (int64_t n = 0; n < N; n++)
				row[n] += ep->bias[n];
		if (ep->act != KILN_ACT_NONE)
			kiln_f32_act(row, N, ep);
	}
}

/* Whether a product of M rows against B (strides rs, cs) runs the dot path
 * (gemm.h's GemmDot): B transposed, at most 4 rows, an AVX variant (the ref
 * variant runs the core, whose bits it gives) */
static int dot_path(int64_t M, int64_t K, int64_t rs, int64_t cs)
{
	return kiln_isa() != KILN_ISA_REF && M <= 4 && rs == 1 && cs >= K && K > 0;
}

/* The dot path of the variant kiln_isa() picks, then the epilogue */
static void run_dot(const GemmDot *d, const kiln_epilogue *ep)
{
#ifdef KILN_HAVE_X86_VARIANTS
	if (kiln_isa() == KILN_ISA_AVX512)
		kiln_gemm_dot_avx512(d);
	else
		kiln_gemm_dot_avx2(d);
#endif
	rows_epilogue(d->M, d->N, d->C, d->ldc, ep, 1);
}

/* Worth the packed path: A's rows contiguous (transA = 0). Everything else
 * runs the reference code of ref.c, in every variant. */
void kiln_f32_gemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                   int64_t a_row_stride, int64_t a_col_stride, const float *B,
                   int64_t b_row_stride, int64_t b_col_stride, float beta, float *C,
                   int64_t c_row_stride)
{
	kiln_f32_gemm_ep(M, N, K, alpha, A, a_row_stride, a_col_stride, B, b_row_stride,
	                 b_col_stride, beta, C, c_row_stride, NULL);
}

void kiln_f32_gemm_ep(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                      int64_t a_row_stride, int64_t a_col_stride, const float *B,
                      int64_t b_row_stride, int64_t b_col_stride, float beta, float *C,
                      int64_t c_row_stride, const kiln_epilogue *ep)
{
	/* the ref variant runs the driver too (its tile's fmaf chains in the
	 * same K blocks: the same bits as AVX2 and AVX-512, issue 30), but not
	 * the AVX paths below, whose sums are their own */
	if (a_col_stride != 1) {
		kiln_f32_gemm_ep_ref(M, N, K, alpha, A, a_row_stride, a_col_stride, B, b_row_stride,
		                     b_col_stride, beta, C, c_row_stride, ep);
		return;
	}
	if (dot_path(M, K, b_row_stride, b_col_stride)) {
		/* B transposed, few rows of A: dot products stream B once */
		GemmDot d = {.M = M, .N = N, .K = K, .A = A, .lda = a_row_stride, .Bt = B,
		             .ldbt = b_col_stride, .C = C, .ldc = c_row_stride, .alpha = alpha,
		             .beta = beta};
		run_dot(&d, ep);
		return;
	}
	if (gemm_swapped(M, N, K, alpha, A, a_row_stride, B, b_row_stride, b_col_stride, beta, C,
	                 c_row_stride, ep))
		return;
	GemmBSrc src = {.pack = pack_strided, .src = B, .rs = b_row_stride, .cs = b_col_stride,
	                .N = N};
	if (b_col_stride == 1 && gemm_b_direct(b_row_stride))
		src.direct = B, src.ld = b_row_stride;
	GemmEpi e = {.alpha = alpha, .beta = beta, .col_bias = ep ? ep->bias : NULL, .ep = ep};
	kiln_gemm_run(M, N, K, A, a_row_stride, &src, C, c_row_stride, &e);
}

void kiln_f32_gemm_pack_b32(const float *B, int64_t rs, int64_t cs, int64_t K, int64_t N,
                            float *Bp)
{
	kiln_pack_b32(B, rs, cs, K, N, Bp);
}

void kiln_f32_gemm_pb(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                      const float *Bp, float beta, float *C, int64_t ldc, const kiln_epilogue *ep)
{
	/* the layer's K blocks: a narrow one's shorter blocks (gemm.h), the
	 * same at every M and in every variant */
	int64_t kc = kiln_gemm_kc_n(K, N);
	kiln_gemv_kc_fn gemv = M == 1 && K > 0 && alpha == 1.0f && beta == 0.0f
	                           ? kiln_gemv_kc_of() : NULL;
	if (gemv) {
		/* one row (batch 1): the vector-matrix product of f32-gemv/gemv.h,
		 * eight sums in flight where the one-row tile has two */
		gemv(N, K, kc > 0 ? kc : kiln_gemm_kc(K), A, Bp, ep ? ep->bias : NULL, C);
		rows_epilogue(1, N, C, ldc, ep, 0);
		return;
	}
	GemmBSrc src = {.packed = Bp, .N = N};
	GemmEpi e = {.alpha = alpha, .beta = beta, .col_bias = ep ? ep->bias : NULL, .ep = ep,
	             .kc = kc};
	kiln_gemm_run(M, N, K, A, lda, &src, C, ldc, &e);
}

void kiln_f32_gemm_f16b(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                        int64_t a_row_stride, int64_t a_col_stride, const uint16_t *B,
                        int64_t b_row_stride, int64_t b_col_stride, float beta, float *C,
                        int64_t c_row_stride, const kiln_epilogue *ep)
{
	/* the ref variant too runs the GEMM core on B widened panel by panel
	 * (the same bits as AVX2's, issue 30), where it ran the reference
	 * loops of ref.c (opt/fp16 differed) */
	if (a_col_stride != 1) {
		kiln_f32_gemm_f16b_ref(M, N, K, alpha, A, a_row_stride, a_col_stride, B, b_row_stride,
		                       b_col_stride, beta, C, c_row_stride, ep);
		return;
	}
	/* a float16 B is a weight: the layer's K blocks (a narrow one's shorter
	 * blocks, gemm.h) on every path below */
	int64_t kc = kiln_gemm_kc_n(K, N);
	if (b_col_stride != 1 && dot_path(M, K, b_row_stride, b_col_stride)) {
		/* B transposed, few rows of A: the dot path, B's rows widened a
		 * block at a time */
		GemmDot d = {.M = M, .N = N, .K = K, .A = A, .lda = a_row_stride, .Bth = B,
		             .ldbt = b_col_stride, .C = C, .ldc = c_row_stride, .alpha = alpha,
		             .beta = beta, .kc = kc};
		run_dot(&d, ep);
		return;
	}
	kiln_gemv_f16_fn gemv = M == 1 && K > 0 && b_col_stride == 1 && alpha == 1.0f &&
	                                beta == 0.0f ? kiln_gemv_f16_of() : NULL;
	if (gemv) {
		/* one row (batch 1): f32-gemv/gemv.h's product, which widens B's
		 * rows as it reads them */
		gemv(N, K, kc > 0 ? kc : GEMM_PACK_KC, A, B, b_row_stride, ep ? ep->bias : NULL, C);
		rows_epilogue(1, N, C, c_row_stride, ep, 0);
		return;
	}
	/* B widened panel by panel into the stack panel the kernels read, as a
	 * strided float B is packed (K blocks outermost, each widened once) */
	GemmBSrc src = {.pack = pack_f16, .ctx = B, .rs = b_row_stride, .cs = b_col_stride, .N = N};
	GemmEpi e = {.alpha = alpha, .beta = beta, .col_bias = ep ? ep->bias : NULL, .ep = ep,
	             .kc = kc};
	kiln_gemm_run(M, N, K, A, a_row_stride, &src, C, c_row_stride, &e);
}
