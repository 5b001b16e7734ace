/*
 * f32-gemm/gemm.h - the GEMM core's insides (not libkiln's API): one tile
 * call, the micro-kernel of each ISA variant, and the driver's entry points
 * that the convolution shares.
 *
 * A tile is up to MR rows (the variant's) by up to 32 columns (one b32 panel,
 * pack.h) of C:
 *
 *     C[i, j] = alpha * sum_k A[i*lda + k] * B[k*ldb + j] + cbeta * C[i, j]
 *
 * (cbeta == 0: C is not read), then, on the final K block only, the epilogue
 * in registers: + col_bias[j], + row_bias[i], + res[i*ldres + j], and the
 * simple activations (Relu, LeakyRelu, Clip). The others (exp-based) are
 * applied by the driver to each finished row of the tile while it is in L1.
 * A rows are read in place (row-major, lda); B rows are w contiguous floats
 * ldb apart (a packed panel, or a panel packed on the fly).
 */
#ifndef KILN_F32_GEMM_H
#define KILN_F32_GEMM_H

#include <stdint.h>

#include "kiln/kernels.h"
#include "pack.h"

typedef struct GemmTile {
	int64_t K;
	const float *A;
	int64_t lda;
	const float *B;
	int64_t ldb;
	int64_t ldp;               /* kiln_gemm_tile64_avx512: the second panel at B + ldp */
	float *C;
	int64_t ldc;
	int mr, w;                 /* rows (<= the variant's MR) and columns (<= 32; tile64: 64) */
	float alpha, cbeta;
	int final;                 /* apply the epilogue below */
	const float *col_bias;     /* [w], or NULL */
	const float *row_bias;     /* [mr], or NULL */
	const float *res;          /* mr rows of w, ldres apart, or NULL */
	int64_t ldres;
	int act;                   /* KILN_ACT_NONE, _RELU, _LEAKY_RELU or _CLIP (in registers) */
	float act_alpha, act_beta;
	const float *pf;           /* the next tile's A, pf_n floats from pf, to prefetch while */
	int64_t pf_n;              /* this tile runs (A streamed from memory), or NULL */
	int64_t kb;                /* 0: K is one K block; else K spans blocks of kb rows (a
	                            * narrow layer's; AVX-512, mr <= 6: the blocks' totals in
	                            * registers, the same sums as one call per block) */
} GemmTile;

/* The driver's K blocks over B in place: at most GEMM_KBLOCK rows, so a
 * tile's rows of A (12 KiB) stay in L1 while B's panels stream past. */
enum { GEMM_KBLOCK = 256 };

/* The rows of each K block: K cut into ceil(K / GEMM_KBLOCK) blocks spread
 * evenly (the last one shorter), each summed as one FMA chain from 0 and
 * added to the blocks before it (C = acc + C), the bias last. Every variant
 * and every M sums a packed B's product in these blocks (f32-gemv's batch-1
 * products too), so the bits do not depend on the ISA or the batch size
 * (docs/reproducibility.md). */
static inline int64_t kiln_gemm_kc(int64_t K)
{
	int64_t nkb = (K + GEMM_KBLOCK - 1) / GEMM_KBLOCK;
	return nkb > 1 ? (K + nkb - 1) / nkb : K;
}

/* A narrow layer's shorter K blocks (issue 30): a product on a weight of N
 * <= GEMM_NARROW_N columns (at most four vectors of 16) is cut into
 * ceil(GEMM_NARROW_CHAINS / ceil(N / 16)) blocks (N <= 16: 8, <= 32: 4, <=
 * 48: 3, <= 64: 2), none shorter than GEMM_NARROW_MIN rows (fewer blocks
 * then; K < 2 GEMM_NARROW_MIN: one) and none longer than GEMM_KBLOCK, so
 * that batch 1's product (f32-gemv) has about eight independent chains to
 * run side by side where one chain per column waited on the FMA latency
 * (two 512-bit FMAs a cycle, four cycles each, on the AMD EPYC measured). */
enum { GEMM_NARROW_N = 64, GEMM_NARROW_CHAINS = 8, GEMM_NARROW_MIN = 8 };

/* The number of K blocks of a narrow layer (N columns, K rows), or 0 for a
 * wide one (N > GEMM_NARROW_N) or one too short to split. */
static inline int64_t kiln_gemm_narrow_nb(int64_t K, int64_t N)
{
	if (N <= 0 || N > GEMM_NARROW_N)
		return 0;
	int64_t v = (N + 15) / 16, nb = (GEMM_NARROW_CHAINS + v - 1) / v;
	if (nb > K / GEMM_NARROW_MIN)
		nb = K / GEMM_NARROW_MIN;
	if (nb < (K + GEMM_KBLOCK - 1) / GEMM_KBLOCK)
		nb = (K + GEMM_KBLOCK - 1) / GEMM_KBLOCK;
	return nb > 1 ? nb : 0;
}

/* The rows of each K block of a product on a weight of N columns, packed
 * (kiln_f32_gemm_pb: batch 1's f32-gemv and the tiles at every M) or float16
 * (kiln_f32_gemm_f16b: f32-gemv's float16 product, the dot path, B widened
 * on the fly): a narrow layer's blocks (kiln_gemm_narrow_nb, ceil(K / nb)
 * rows, the last shorter), else wide (0: the caller's usual blocks,
 * kiln_gemm_kc over a packed B, GEMM_PACK_KC over one packed on the fly, as
 * before issue 30's narrow blocks). They depend on the layer's K and N, never
 * on M, the ISA or the stitching; every path that sums a layer takes the
 * same (GemmEpi.kc, GemmDot.kc, f32-gemv's kc). Products on activations,
 * convolutions and recurrent layers keep the wide blocks (their N may be a
 * batch size or a split of the layer's columns). */
static inline int64_t kiln_gemm_kc_n(int64_t K, int64_t N)
{
	int64_t nb = kiln_gemm_narrow_nb(K, N);
	return nb > 1 ? (K + nb - 1) / nb : 0;
}

typedef void (*gemm_tile_fn)(const GemmTile *t);

/* Micro-kernels: avx512 MR = 12 (two zmm per row), avx2 MR = 6 (the panel as
 * two halves of 16), ref MR = 4. */
void kiln_gemm_tile_ref(const GemmTile *t);
void kiln_gemm_tile_avx2(const GemmTile *t);
void kiln_gemm_tile_avx512(const GemmTile *t);
/* AVX-512, up to 6 rows by 64 columns: two whole packed panels side by side,
 * the second at t->B + t->ldp (w is 64) */
void kiln_gemm_tile64_avx512(const GemmTile *t);

/* The K blocks of a B packed on the fly (driver.c: a strided or transposed
 * B, a float16 B, the convolution's im2col): GEMM_PACK_KC rows from 0, the
 * last one shorter, each one FMA chain per element from 0, added to the
 * blocks before it (C = alpha acc + C; the first block: alpha acc + beta C).
 * kiln_gemm_dot_* and f32-gemv's float16 products sum in these blocks too. */
enum { GEMM_PACK_KC = 256 };

/* C[m, n] = alpha * dot(row m of A, row n of Bt) + beta * C[m, n] (beta 0:
 * C not read) for m < M <= 4, where Bt is B transposed and stored with rows
 * contiguous (ONNX Gemm transB = 1 on an activation, or a weight that is
 * also read otherwise, like a tied embedding), float or float16 (Bth, then
 * Bt is NULL): each row of Bt streams once for all M rows of A, at memory
 * bandwidth when M is 1. Summed in the GEMM core's order on a B packed on
 * the fly (GEMM_PACK_KC, kiln_gemm_tile_ref's chains), so the same bits as
 * the ref variant and any other number of rows. */
typedef struct GemmDot {
	int64_t M, N, K;
	const float *A;
	int64_t lda;
	const float *Bt;
	int64_t ldbt;              /* row n of Bt (column n of B) at Bt + n * ldbt */
	float *C;
	int64_t ldc;
	float alpha, beta;
	const uint16_t *Bth;       /* float16 Bt (ldbt apart), or NULL */
	int64_t kc;                /* rows of each K block (kiln_gemm_kc_n), or 0: GEMM_PACK_KC */
} GemmDot;
void kiln_gemm_dot_avx2(const GemmDot *d);

/* pack.h's kiln_pack_b32_panel for a transposed B (rs == 1): element (k, n)
 * at src[n * cs + k], transposed in registers 16 x 16 at a time. */
void kiln_pack_b32_t_avx512(const float *src, int64_t cs, int64_t N, int64_t n0, int64_t k0,
                            int64_t kc, float *dst);
void kiln_gemm_dot_avx512(const GemmDot *d);

/* C[j * ldc + i] = Ct[i * cols + j] for i < rows, j < cols <= 32: a block of
 * C^T, rows x cols, transposed into C (driver.c's few rows against a
 * transposed B). */
void kiln_gemm_ct_avx512(const float *Ct, int64_t rows, int64_t cols, float *C, int64_t ldc);

/* The driver's epilogue description (the tile's, before splitting). */
typedef struct GemmEpi {
	float alpha, beta;         /* C = alpha A B + beta C */
	const float *col_bias;     /* [N] or NULL */
	const float *row_bias;     /* [M] or NULL */
	const float *res;          /* [M, ldres] or NULL */
	int64_t ldres;
	const kiln_epilogue *ep;   /* the activation (and its parameters), or NULL */
	int64_t kc;                /* rows of each K block (kiln_gemm_kc_n), or 0: kiln_gemm_kc
	                            * over B in place, GEMM_PACK_KC over B packed on the fly */
	const float *a_end;        /* A's rows are contiguous (lda == K) and stream from memory
	                            * up to here: each tile prefetches rows ahead (avx512) */
} GemmEpi;

/* A source of B panels: either packed already (b32 over K x N), or rows
 * contiguous in place (a panel is then just a pointer: see gemm_b_direct), or
 * a strided matrix packed on the fly, or the convolution's implicit im2col. pack() writes
 * rows [k0, k0 + kc) of the panel at column n0 into dst (kc rows of w floats). */
typedef struct GemmBSrc {
	const float *packed;       /* b32 layout, or NULL */
	const float *direct;       /* else rows read in place: (k, n) at direct[k*ld + n] */
	int64_t ld;
	void (*pack)(const struct GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst);
	const float *src;          /* pack()'s data */
	int64_t rs, cs;            /* strided source: element (k, n) at src[k*rs + n*cs] */
	int64_t N;                 /* columns of B */
	const void *ctx;           /* the convolution's geometry, or a float16 B */
} GemmBSrc;

/* Whether rows of B ld floats apart can be read in place: not when they are
 * a multiple of 4 KiB apart, where a panel's rows would all fall in the same
 * few L1 sets and evict each other (packing them is cheaper then). */
static inline int gemm_b_direct(int64_t ld)
{
	return (ld * (int64_t)sizeof(float)) % 4096 != 0;
}

/* C[M, N] (ldc) = epilogue(alpha A[M, K] (lda, row-major) B + beta C), with
 * the variant kiln_isa() picks (ref included). */
void kiln_gemm_run(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                  const GemmBSrc *b, float *C, int64_t ldc, const GemmEpi *e);

/* The reference GEMM of ref.c (any strides), with the epilogue of
 * f32-epilogue/ref.c: what the ref variant runs, and what the others are
 * tested against. */
void kiln_f32_gemm_ep_ref(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                          int64_t a_row_stride, int64_t a_col_stride, const float *B,
                          int64_t b_row_stride, int64_t b_col_stride, float beta, float *C,
                          int64_t c_row_stride, const kiln_epilogue *ep);
void kiln_f32_gemm_ref(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                       int64_t a_row_stride, int64_t a_col_stride, const float *B,
                       int64_t b_row_stride, int64_t b_col_stride, float beta, float *C,
                       int64_t c_row_stride);

/* kiln_f32_gemm_f16b's reference (f32-epilogue/ref.c): B widened a block at a
 * time into a stack panel for kiln_f32_gemm. */
void kiln_f32_gemm_f16b_ref(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                            int64_t a_row_stride, int64_t a_col_stride, const uint16_t *B,
                            int64_t b_row_stride, int64_t b_col_stride, float beta, float *C,
                            int64_t c_row_stride, const kiln_epilogue *ep);

/* The reference direct-loop convolution of f32-conv/ref.c. */
void kiln_f32_conv2d_ref(const kiln_conv2d_params *p, const float *X, const float *W,
                         const float *bias, float *Y);

#endif
