/*
 * f32-gemm/ref.c - the reference float32 GEMM, C = alpha A B + beta C, with
 * every operand addressed through strides so that Gemm's transA/transB and
 * MatMul all land here without a copy.
 *
 * The loop order follows the strides, so that the innermost loop always walks
 * contiguous memory when it can:
 *   - Rows of B contiguous (b_col_stride == 1; MatMul, Gemm with transB = 0):
 *     loop m, k, n. The innermost loop streams a row of B into a row of C.
 *     It updates four rows of C from four rows of B at once, so each load of
 *     B feeds four rows and each element of C is loaded and stored once per
 *     four values of k. The n and k loops are blocked (GEMM_NC, GEMM_KC) so
 *     that the block of B stays in cache while all of A passes over it.
 *   - Rows of A and columns of B contiguous (Gemm with transB = 1, i.e. the
 *     usual fully connected layer): every element of C is a dot product of
 *     two contiguous vectors; four columns at a time share the loads of A.
 *   - Anything else: m, k, n with strided loads. Correct, not fast.
 * Everything accumulates in float. This is what the ref variant runs
 * (kiln_isa(), isa.h) and what the packed micro-kernels of avx2.c and
 * avx512.c are tested against; driver.c is the dispatch point.
 *
 * kiln_gemm_tile_ref, at the end, is the portable micro-kernel: the ref
 * variant's tile for weights packed at compile time (pack.h).
 */
#include <math.h>

#include "gemm.h"

enum {
	GEMM_NC = 256, /* columns of C and B per block: a 4-row strip of C is 4 KiB */
	GEMM_KC = 128, /* rows of B per block: a block of B is GEMM_KC * GEMM_NC floats = 128 KiB */
	GEMM_DOT_NB = 64, /* columns of B per block on the dot-product path */
};

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* C = beta * C, except that beta == 0 writes zeros without reading C, which
 * may hold garbage (ONNX Gemm without its C input). */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t c_row_stride)
{
	if (beta == 1.0f)
		return;
	for (int64_t m = 0; m < M; m++) {
		float *c = C + m * c_row_stride;
		if (beta == 0.0f)
			for (int64_t n = 0; n < N; n++)
				c[n] = 0.0f;
		else
			for (int64_t n = 0; n < N; n++)
				c[n] *= beta;
	}
}

/* Four rows of C += a (4 x 4, already scaled by alpha) times four rows of B. */
static void update_4x4(int64_t nc, const float a[4][4], const float *restrict b0,
                       const float *restrict b1, const float *restrict b2,
                       const float *restrict b3, float *restrict c0, float *restrict c1,
                       float *restrict c2, float *restrict c3)
{
	for (int64_t n = 0; n < nc; n++) {
		float v0 = b0[n], v1 = b1[n], v2 = b2[n], v3 = b3[n];
		c0[n] += a[0][0] * v0 + a[0][1] * v1 + a[0][2] * v2 + a[0][3] * v3;
		c1[n] += a[1][0] * v0 + a[1][1] * v1 + a[1][2] * v2 + a[1][3] * v3;
		c2[n] += a[2][0] * v0 + a[2][1] * v1 + a[2][2] * v2 + a[2][3] * v3;
		c3[n] += a[3][0] * v0 + a[3][1] * v1 + a[3][2] * v2 + a[3][3] * v3;
	}
}

/* Four rows of C += a (4 x 1) times one row of B: the k remainder. */
static void update_4x1(int64_t nc, const float a[4], const float *restrict b,
                       float *restrict c0, float *restrict c1, float *restrict c2,
                       float *restrict c3)
{
	for (int64_t n = 0; n < nc; n++) {
		float v = b[n];
		c0[n] += a[0] * v;
		c1[n] += a[1] * v;
		c2[n] += a[2] * v;
		c3[n] += a[3] * v;
	}
}

/* One row of C += a (1 x 4) times four rows of B: the m remainder. */
static void update_1x4(int64_t nc, const float a[4], const float *restrict b0,
                       const float *restrict b1, const float *restrict b2,
                       const float *restrict b3, float *restrict c)
{
	for (int64_t n = 0; n < nc; n++)
		c[n] += a[0] * b0[n] + a[1] * b1[n] + a[2] * b2[n] + a[3] * b3[n];
}

static void update_1x1(int64_t nc, float a, const float *restrict b, float *restrict c)
{
	for (int64_t n = 0; n < nc; n++)
		c[n] += a * b[n];
}

/* One block of the b_col_stride == 1 path: C (M x nc) += alpha A (M x kc)
 * B (kc x nc), with A, B and C pointing at the block's first element. */
static void contiguous_b_block(int64_t M, int64_t nc, int64_t kc, float alpha, const float *A,
                               int64_t a_rs, int64_t a_cs, const float *B, int64_t b_rs,
                               float *C, int64_t c_rs)
{
	int64_t m = 0;
	for (; m + 4 <= M; m += 4) {
		float *c0 = C + (m + 0) * c_rs, *c1 = C + (m + 1) * c_rs;
		float *c2 = C + (m + 2) * c_rs, *c3 = C + (m + 3) * c_rs;
		int64_t k = 0;
		for (; k + 4 <= kc; k += 4) {
			float a[4][4];
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++)
					a[i][j] = alpha * A[(m + i) * a_rs + (k + j) * a_cs];
			const float *b = B + k * b_rs;
			update_4x4(nc, a, b, b + b_rs, b + 2 * b_rs, b + 3 * b_rs, c0, c1, c2, c3);
		}
		for (; k < kc; k++) {
			float a[4];
			for (int i = 0; i < 4; i++)
				a[i] = alpha * A[(m + i) * a_rs + k * a_cs];
			update_4x1(nc, a, B + k * b_rs, c0, c1, c2, c3);
		}
	}
	for (; m < M; m++) {
		float *c = C + m * c_rs;
		int64_t k = 0;
		for (; k + 4 <= kc; k += 4) {
			float a[4];
			for (int j = 0; j < 4; j++)
				a[j] = alpha * A[m * a_rs + (k + j) * a_cs];
			const float *b = B + k * b_rs;
			update_1x4(nc, a, b, b + b_rs, b + 2 * b_rs, b + 3 * b_rs, c);
		}
		for (; k < kc; k++)
			update_1x1(nc, alpha * A[m * a_rs + k * a_cs], B + k * b_rs, c);
	}
}

/* The b_col_stride == 1 path; C already holds beta * C. Blocks of B
 * (GEMM_KC x GEMM_NC) stay in cache while all rows of A pass over them. */
static void gemm_contiguous_b(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                              int64_t a_rs, int64_t a_cs, const float *B, int64_t b_rs,
                              float *C, int64_t c_rs)
{
	for (int64_t n0 = 0; n0 < N; n0 += GEMM_NC)
		for (int64_t k0 = 0; k0 < K; k0 += GEMM_KC)
			contiguous_b_block(M, min64(GEMM_NC, N - n0), min64(GEMM_KC, K - k0), alpha,
			                   A + k0 * a_cs, a_rs, a_cs, B + k0 * b_rs + n0, b_rs,
			                   C + n0, c_rs);
}

/* Four dot products of length K sharing the vector a. Each keeps DOT_LANES
 * partial sums (k mod DOT_LANES) that are added at the end: the lanes are
 * independent, so a compiler may keep them in one vector register without
 * reassociating anything, and the shorter chains also round less. */
enum { DOT_LANES = 8 };

static void dot_1x4(int64_t K, const float *restrict a, const float *restrict b0,
                    const float *restrict b1, const float *restrict b2,
                    const float *restrict b3, float out[4])
{
	float s0[DOT_LANES] = {0}, s1[DOT_LANES] = {0}, s2[DOT_LANES] = {0}, s3[DOT_LANES] = {0};
	int64_t k = 0;
	for (; k + DOT_LANES <= K; k += DOT_LANES)
		for (int l = 0; l < DOT_LANES; l++) {
			float v = a[k + l];
			s0[l] += v * b0[k + l];
			s1[l] += v * b1[k + l];
			s2[l] += v * b2[k + l];
			s3[l] += v * b3[k + l];
		}
	for (int l = 0; k < K; k++, l++) {
		float v = a[k];
		s0[l] += v * b0[k];
		s1[l] += v * b1[k];
		s2[l] += v * b2[k];
		s3[l] += v * b3[k];
	}
	out[0] = out[1] = out[2] = out[3] = 0.0f;
	for (int l = 0; l < DOT_LANES; l++) {
		out[0] += s0[l];
		out[1] += s1[l];
		out[2] += s2[l];
		out[3] += s3[l];
	}
}

static float dot_1x1(int64_t K, const float *restrict a, const float *restrict b)
{
	float s[DOT_LANES] = {0}, sum = 0.0f;
	int64_t k = 0;
	for (; k + DOT_LANES <= K; k += DOT_LANES)
		for (int l = 0; l < DOT_LANES; l++)
			s[l] += a[k + l] * b[k + l];
	for (int l = 0; k < K; k++, l++)
		s[l] += a[k] * b[k];
	for (int l = 0; l < DOT_LANES; l++)
		sum += s[l];
	return sum;
}

/* alpha * dot + beta * C, without reading C when beta == 0. */
static float combine(float alpha, float dot, float beta, const float *c)
{
	return beta == 0.0f ? alpha * dot : alpha * dot + beta * *c;
}

/* The a_col_stride == 1, b_row_stride == 1 path: C[m, n] is the dot product of
 * row m of A and column n of B. Blocks of columns of B stay in cache while
 * every row of A passes over them. */
static void gemm_dot(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t a_rs,
                     const float *B, int64_t b_cs, float beta, float *C, int64_t c_rs)
{
	for (int64_t n0 = 0; n0 < N; n0 += GEMM_DOT_NB) {
		int64_t n1 = min64(n0 + GEMM_DOT_NB, N);
		for (int64_t m = 0; m < M; m++) {
			const float *a = A + m * a_rs;
			float *c = C + m * c_rs;
			int64_t n = n0;
			for (; n + 4 <= n1; n += 4) {
				float dots[4];
				const float *b = B + n * b_cs;
				dot_1x4(K, a, b, b + b_cs, b + 2 * b_cs, b + 3 * b_cs, dots);
				for (int j = 0; j < 4; j++)
					c[n + j] = combine(alpha, dots[j], beta, &c[n + j]);
			}
			for (; n < n1; n++)
				c[n] = combine(alpha, dot_1x1(K, a, B + n * b_cs), beta, &c[n]);
		}
	}
}

/* Any strides; C already holds beta * C. */
static void gemm_strided(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                         int64_t a_rs, int64_t a_cs, const float *B, int64_t b_rs,
                         int64_t b_cs, float *C, int64_t c_rs)
{
	for (int64_t m = 0; m < M; m++) {
		float *c = C + m * c_rs;
		for (int64_t k = 0; k < K; k++) {
			float a = alpha * A[m * a_rs + k * a_cs];
			const float *b = B + k * b_rs;
			for (int64_t n = 0; n < N; n++)
				c[n] += a * b[n * b_cs];
		}
	}
}

void kiln_f32_gemm_ref(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                       int64_t a_row_stride, int64_t a_col_stride, const float *B,
                       int64_t b_row_stride, int64_t b_col_stride, float beta, float *C,
                       int64_t c_row_stride)
{
	if (M <= 0 || N <= 0)
		return;
	if (K > 0 && b_col_stride != 1 && a_col_stride == 1 && b_row_stride == 1) {
		gemm_dot(M, N, K, alpha, A, a_row_stride, B, b_col_stride, beta, C, c_row_stride);
		return;
	}
	scale_c(M, N, beta, C, c_row_stride);
	if (K <= 0)
		return;
	if (b_col_stride == 1)
		gemm_contiguous_b(M, N, K, alpha, A, a_row_stride, a_col_stride, B, b_row_stride, C,
		                  c_row_stride);
	else
		gemm_strided(M, N, K, alpha, A, a_row_stride, a_col_stride, B, b_row_stride,
		             b_col_stride, C, c_row_stride);
}

/* The portable micro-kernel (gemm.h): up to 4 rows by one panel. Each sum
 * one fused chain over k from 0 (fmaf: rounded once, as the SIMD tiles' FMA
 * and f32-vmath's LSTM rows, which the ref variant's batch-1 LSTM step meets
 * here). */
void kiln_gemm_tile_ref(const GemmTile *t)
{
	for (int i = 0; i < t->mr; i++) {
		float acc[KILN_PACK_NR] = {0};
		const float *a = t->A + i * t->lda;
		for (int64_t k = 0; k < t->K; k++) {
			const float *b = t->B + k * t->ldb;
			for (int j = 0; j < t->w; j++)
				acc[j] = fmaf(a[k], b[j], acc[j]);
		}
		float *c = t->C + i * t->ldc;
		for (int j = 0; j < t->w; j++) {
			float v = t->alpha * acc[j];
			if (t->cbeta != 0.0f)
				v += t->cbeta * c[j];
			if (t->final) {
				if (t->col_bias)
					v += t->col_bias[j];
				if (t->row_bias)
					v += t->row_bias[i];
				if (t->res)
					v += t->res[i * t->ldres + j];
				if (t->act == KILN_ACT_RELU)
					v = v > 0.0f ? v : 0.0f;
				else if (t->act == KILN_ACT_LEAKY_RELU)
					v = v >= 0.0f ? v : t->act_alpha * v;
				else if (t->act == KILN_ACT_CLIP)
					v = v < t->act_alpha ? t->act_alpha : v > t->act_beta ? t->act_beta : v;
			}
			c[j] = v;
		}
	}
}
