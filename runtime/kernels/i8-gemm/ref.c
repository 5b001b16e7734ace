/*
 * i8-gemm/ref.c - reference integer products of int8/uint8 operands: the GEMM of
 * MatMulInteger and QLinearMatMul, and the direct convolution of ConvInteger
 * and QLinearConv.
 *
 * Every operand may be int8 or uint8, independently, and carries its own zero
 * point (one, or one per row / column / output channel). The two element
 * types are handled by small inline functions that take the signedness as a
 * constant argument, so each of the four combinations compiles to its own
 * branch-free inner loop.
 *
 * Sums are accumulated in uint32_t: ONNX lets the accumulation overflow "if
 * and only if in 32 bits", and unsigned arithmetic wraps without undefined
 * behaviour. Each product is exact in int32 (|x - zx| <= 255, |w - zw| <= 255).
 *
 * Requantization (the QLinear ops) computes the multiplier s_a * s_b / s_y
 * and the scaled sum in float32, rounds half to even with rintf and
 * saturates, as ONNX Runtime does.
 *
 * The optimizer's QDQ chains (passes/qdq.c) set `exact` on the output: 16-bit
 * operands may occur (|x - zx| <= 65535, so the sums are kept in 64 bits
 * throughout; the low 32 bits are what the 32-bit ops wrap to) and the
 * requantization is the chain's float64 arithmetic (kiln_q8_output).
 *
 * This file is also the one dispatch point: with work memory, 8-bit
 * operands and K <= KILN_I8_MAX_K, the AVX2 and AVX-512 variants compute
 * the same sums blocked (i8gemm.h, core.h) and hand them back a row at a
 * time to kiln_i8_store_row here, which requantizes them with the same
 * functions as the loops below: the results are identical bit for bit.
 */
#include <math.h>
#include <string.h>

#include "../isa.h"
#include "i8gemm.h"

/* Columns of C computed at once: the accumulators live on the stack. */
enum { BLOCK_N = 256 };

/* A 64-bit two's complement sum as int64_t, without an
 * implementation-defined conversion. */
static inline int64_t wrap64(uint64_t u)
{
	return u <= INT64_MAX ? (int64_t)u : (int64_t)(u - 9223372036854775808u) - INT64_MAX - 1;
}

/* Exact mode: saturate(round_half_even((sum * sa * sb + bias * sbias) / sy)
 * + zy) in double into element i of Y (int8 to uint16). sa * sb is exact in
 * double (two 24-bit significands); so is an int32 bias times its scale. */
static void store_exact(const kiln_q8_output *Y, int64_t i, int64_t sum, float sa, float sb,
                        int64_t channel)
{
	double v = (double)sum * ((double)sa * (double)sb);
	if (Y->bias)
		v += (double)Y->bias[channel] * (double)Y->bias_scale[channel * Y->bias_scale_stride];
	double zy = (double)(Y->zero ? q_at(Y->zero, Y->is_signed, Y->wide, 0) : 0);
	v = rint(v / (double)Y->scale[0]) + zy;
	double lo = Y->is_signed ? (Y->wide ? -32768.0 : -128.0) : 0.0;
	double hi = Y->is_signed ? (Y->wide ? 32767.0 : 127.0) : (Y->wide ? 65535.0 : 255.0);
	if (Y->relu && zy > lo)
		lo = zy < hi ? zy : hi;
	if (!(v >= lo))
		v = lo;
	if (v > hi)
		v = hi;
	if (Y->wide && Y->is_signed)
		((int16_t *)Y->data)[i] = (int16_t)v;
	else if (Y->wide)
		((uint16_t *)Y->data)[i] = (uint16_t)v;
	else if (Y->is_signed)
		((int8_t *)Y->data)[i] = (int8_t)v;
	else
		((uint8_t *)Y->data)[i] = (uint8_t)v;
}

/* saturate(round_half_even(sum * mult) + zy) into element i of Y. A NaN
 * (a NaN scale) saturates to the low end. */
static inline void store_q8(const kiln_q8_output *Y, int64_t i, int32_t sum, float mult,
                            int32_t zy)
{
	float lo = Y->is_signed ? -128.0f : 0.0f, hi = Y->is_signed ? 127.0f : 255.0f;
	float v = rintf((float)sum * mult) + (float)zy;
	if (!(v >= lo))
		v = lo;
	if (v > hi)
		v = hi;
	if (Y->is_signed)
		((int8_t *)Y->data)[i] = (int8_t)v;
	else
		((uint8_t *)Y->data)[i] = (uint8_t)v;
}

/* ---- the blocked path (i8gemm.h) ---- */

int64_t kiln_i8_work_bytes(int64_t M, int64_t K, int wide)
{
	/* A' (two parts of a 16-bit operand), the sums (four parts), alignment
	 * (the VNNI path fits in it too: core.h, i8v_fits) */
	int64_t parts = wide ? 2 : 1;
	return 128 + parts * M * (K + (K & 1)) * 2 + parts * parts * M * I8_NR * 4;
}

void kiln_i8_store_row(const I8Out *o, int64_t m, int64_t n0, int64_t w, const int32_t *sums,
                       int64_t at)
{
	if (o->y32) {
		memcpy(o->y32 + at, sums, (size_t)w * sizeof *sums);
		return;
	}
	const kiln_q8_output *Y = o->y8;
	if (o->conv) {
		/* as conv(): X (cb) per tensor, W (ra) per output channel m */
		if (Y->exact) {
			for (int64_t j = 0; j < w; j++)
				store_exact(Y, at + j, sums[j], scale_at(o->cb, 0), scale_at(o->ra, m), m);
			return;
		}
		float mult = scale_at(o->cb, 0) * scale_at(o->ra, m) / Y->scale[0];
		int32_t zy = Y->zero && !Y->wide ? q8_at(Y->zero, Y->is_signed, 0) : 0;
		for (int64_t j = 0; j < w; j++) {
			uint64_t s = (uint64_t)(int64_t)sums[j];
			if (o->bias)
				s += (uint32_t)o->bias[m];
			store_q8(Y, at + j, i8_wrap32((uint32_t)s), mult, zy);
		}
		return;
	}
	/* as kiln_q8_gemm: A (ra) per row m, B (cb) per column */
	float sa = scale_at(o->ra, m);
	if (Y->exact) {
		for (int64_t j = 0; j < w; j++)
			store_exact(Y, at + j, sums[j], sa, scale_at(o->cb, n0 + j), n0 + j);
		return;
	}
	int32_t zy = Y->zero ? q8_at(Y->zero, Y->is_signed, 0) : 0;
	float sy = Y->scale[0];
	for (int64_t j = 0; j < w; j++) {
		float mult = sa * scale_at(o->cb, n0 + j) / sy;
		store_q8(Y, at + j, sums[j], mult, zy);
	}
}

/* 1 for the AVX-512 variant, 2 for AVX2, 0 for the loops below: the
 * blocked sums fit int32 only for K <= KILN_I8_MAX_K; 16-bit operands
 * (split in two parts, core.h) only in exact mode, with work for them. */
static int blocked(const kiln_q8_operand *a, const kiln_q8_operand *b, int64_t K, void *work,
                   const I8Out *o)
{
	if (!work || K > KILN_I8_MAX_K)
		return 0;
	if ((a->wide || b->wide) && !(o->y8 && o->y8->exact))
		return 0;
#ifdef KILN_HAVE_X86_VARIANTS
	if (kiln_isa() == KILN_ISA_AVX512)
		return 1;
	if (kiln_isa() == KILN_ISA_AVX2)
		return 2;
#endif
	return 0;
}

/* The variants of one kernel: pairs (vpmaddwd) and VNNI, AVX-512 and
 * AVX2; index [vnni][avx2]. */
#ifdef KILN_HAVE_X86_VARIANTS
#ifdef KILN_HAVE_VNNI
#define I8_VNNI_VARIANT(avx512, avx2) {avx512, avx2}
#else
#define I8_VNNI_VARIANT(avx512, avx2) {NULL, NULL}
#endif
static void (*const gemm_variants[2][2])(const I8Gemm *, void *) = {
	{kiln_i8b_gemm_avx512, kiln_i8b_gemm_avx2},
	I8_VNNI_VARIANT(kiln_i8v_gemm_avx512, kiln_i8v_gemm_avx2)};
static void (*const conv_variants[2][2])(const I8Conv *, void *) = {
	{kiln_i8b_conv_avx512, kiln_i8b_conv_avx2},
	I8_VNNI_VARIANT(kiln_i8v_conv_avx512, kiln_i8v_conv_avx2)};

/* Row [vnni] of the table, vnni 1 when the CPU has it and the variant is
 * compiled. */
static int use_vnni(void)
{
#ifdef KILN_HAVE_VNNI
	return kiln_isa_vnni();
#else
	return 0;
#endif
}
#endif

static int gemm_blocked(const I8Gemm *g, void *work)
{
	int v = blocked(g->A, g->B, g->K, work, g->out);
#ifdef KILN_HAVE_X86_VARIANTS
	if (v)
		gemm_variants[use_vnni()][v - 1](g, work);
#endif
	return v;
}

static int conv_blocked(const I8Conv *c, void *work)
{
	const kiln_window3d_params *p = c->p;
	int64_t K = p->channels / p->group * p->kernel[0] * p->kernel[1] * p->kernel[2];
	int v = blocked(c->W, c->X, K, work, c->out);
#ifdef KILN_HAVE_X86_VARIANTS
	if (v)
		conv_variants[use_vnni()][v - 1](c, work);
#endif
	return v;
}

/* ---- GEMM ---- */

/* acc[j] += a * (B[k, n0 + j] - zb[j]) for j < nb: the inner loop, with
 * B's signedness a constant after inlining. */
static inline void axpy_row(uint64_t *acc, int32_t a, const void *brow, int b_signed,
                            const int32_t *zb, int64_t nb)
{
	if (b_signed) {
		const int8_t *b = brow;
		for (int64_t j = 0; j < nb; j++)
			acc[j] += (uint64_t)(int64_t)(a * ((int32_t)b[j] - zb[j]));
	} else {
		const uint8_t *b = brow;
		for (int64_t j = 0; j < nb; j++)
			acc[j] += (uint64_t)(int64_t)(a * ((int32_t)b[j] - zb[j]));
	}
}

/* The same for 16-bit operands (either one): products need 64 bits. */
static void axpy_row_wide(uint64_t *acc, int32_t a, const kiln_q8_operand *B, int64_t at,
                          const int32_t *zb, int64_t nb)
{
	for (int64_t j = 0; j < nb; j++)
		acc[j] += (uint64_t)((int64_t)a * (q_at(B->data, B->is_signed, B->wide, at + j) - zb[j]));
}

/* The sums of row m, columns [n0, n0 + nb), into acc. */
static void row_block(int64_t m, int64_t n0, int64_t nb, int64_t K, const kiln_q8_operand *A,
                      int64_t lda, const kiln_q8_operand *B, int64_t ldb, uint64_t *acc)
{
	int32_t zb[BLOCK_N];
	for (int64_t j = 0; j < nb; j++)
		zb[j] = zero_at(B, n0 + j);
	memset(acc, 0, (size_t)nb * sizeof *acc);
	int32_t za = zero_at(A, m);
	for (int64_t k = 0; k < K; k++) {
		int32_t a = q_at(A->data, A->is_signed, A->wide, m * lda + k) - za;
		if (a == 0)
			continue;
		if (A->wide || B->wide) {
			axpy_row_wide(acc, a, B, k * ldb + n0, zb, nb);
			continue;
		}
		const void *brow = (const unsigned char *)B->data + k * ldb + n0; /* 1-byte elements */
		if (B->is_signed)
			axpy_row(acc, a, brow, 1, zb, nb);
		else
			axpy_row(acc, a, brow, 0, zb, nb);
	}
}

void kiln_i8_gemm(int64_t M, int64_t N, int64_t K, const kiln_q8_operand *A, int64_t a_row_stride,
                  const kiln_q8_operand *B, int64_t b_row_stride, int32_t *C,
                  int64_t c_row_stride, void *work)
{
	I8Out o = {.y32 = C, .ra = A, .cb = B};
	I8Gemm g = {M, N, K, A, B, a_row_stride, b_row_stride, c_row_stride, &o};
	if (gemm_blocked(&g, work))
		return;
	uint64_t acc[BLOCK_N];
	for (int64_t m = 0; m < M; m++)
		for (int64_t n0 = 0; n0 < N; n0 += BLOCK_N) {
			int64_t nb = N - n0 < BLOCK_N ? N - n0 : BLOCK_N;
			row_block(m, n0, nb, K, A, a_row_stride, B, b_row_stride, acc);
			for (int64_t j = 0; j < nb; j++)
				C[m * c_row_stride + n0 + j] = i8_wrap32((uint32_t)acc[j]);
		}
}

void kiln_q8_gemm(int64_t M, int64_t N, int64_t K, const kiln_q8_operand *A, int64_t a_row_stride,
                  const kiln_q8_operand *B, int64_t b_row_stride, const kiln_q8_output *Y,
                  int64_t y_row_stride, void *work)
{
	I8Out o = {.y8 = Y, .ra = A, .cb = B};
	I8Gemm g = {M, N, K, A, B, a_row_stride, b_row_stride, y_row_stride, &o};
	if (gemm_blocked(&g, work))
		return;
	uint64_t acc[BLOCK_N];
	int32_t zy = Y->zero ? q8_at(Y->zero, Y->is_signed, 0) : 0;
	float sy = Y->scale[0];
	for (int64_t m = 0; m < M; m++) {
		float sa = scale_at(A, m);
		for (int64_t n0 = 0; n0 < N; n0 += BLOCK_N) {
			int64_t nb = N - n0 < BLOCK_N ? N - n0 : BLOCK_N;
			row_block(m, n0, nb, K, A, a_row_stride, B, b_row_stride, acc);
			for (int64_t j = 0; j < nb; j++) {
				if (Y->exact) {
					store_exact(Y, m * y_row_stride + n0 + j, wrap64(acc[j]), sa,
					            scale_at(B, n0 + j), n0 + j);
					continue;
				}
				float mult = sa * scale_at(B, n0 + j) / sy;
				store_q8(Y, m * y_row_stride + n0 + j, i8_wrap32((uint32_t)acc[j]), mult, zy);
			}
		}
	}
}

/* ---- convolution ---- */

/* Taps t in [0, k) with 0 <= start + t * dilation < len, as [*lo, *hi). */
static void tap_range(int64_t start, int64_t dilation, int64_t k, int64_t len, int64_t *lo,
                      int64_t *hi)
{
	int64_t first = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
	int64_t last = len - 1 - start < 0 ? 0 : (len - 1 - start) / dilation + 1;
	*lo = first;
	*hi = last < k ? last : k;
}

/* acc[o - b0] += w * (X[at + o * stride] - zx) for o in [lo, hi): one tap
 * along a row of outputs, X's type a constant after inlining. */
static inline void tap_row(uint64_t *acc, int64_t w, const void *X, int x_signed, int x_wide,
                           int32_t zx, int64_t at, int64_t stride, int64_t lo, int64_t hi,
                           int64_t b0)
{
	for (int64_t o = lo; o < hi; o++)
		acc[o - b0] += (uint64_t)(w * (q_at(X, x_signed, x_wide, at + o * stride) - zx));
}

/* The sums of outputs [b0, b0 + nb) of the row (n, m, o0, o1): every input
 * channel of m's group, every tap; along the row, each tap adds to the
 * outputs whose input position is inside X (padding reads as zx). */
static void conv_row(const kiln_window3d_params *p, const kiln_q8_operand *X,
                     const kiln_q8_operand *W, int32_t zx, int32_t zw, int64_t n, int64_t m,
                     int64_t c0, int64_t cg, const int64_t start[2], const int64_t lo[2],
                     const int64_t hi[2], int64_t b0, int64_t nb, uint64_t *acc)
{
	const int64_t *in = p->in, *k = p->kernel, *d = p->dilation;
	int64_t plane = in[0] * in[1] * in[2], st = p->stride[2];
	memset(acc, 0, (size_t)nb * sizeof *acc);
	for (int64_t c = 0; c < cg; c++)
		for (int64_t t0 = lo[0]; t0 < hi[0]; t0++)
			for (int64_t t1 = lo[1]; t1 < hi[1]; t1++) {
				int64_t xrow = (n * p->channels + c0 + c) * plane +
				               ((start[0] + t0 * d[0]) * in[1] + start[1] + t1 * d[1]) * in[2];
				int64_t wrow = ((m * cg + c) * k[0] * k[1] + t0 * k[1] + t1) * k[2];
				for (int64_t t2 = 0; t2 < k[2]; t2++) {
					int64_t w = q_at(W->data, W->is_signed, W->wide, wrow + t2) - zw;
					int64_t off = t2 * d[2] - p->pad_begin[2];
					/* outputs o with 0 <= o * st + off < in[2] */
					int64_t olo = off >= 0 ? 0 : (-off + st - 1) / st;
					int64_t ohi = in[2] - 1 - off < 0 ? 0 : (in[2] - 1 - off) / st + 1;
					olo = olo > b0 ? olo : b0;
					ohi = ohi < b0 + nb ? ohi : b0 + nb;
					if (w == 0 || olo >= ohi)
						continue;
					int64_t at = xrow + off;
					if (X->wide)
						tap_row(acc, w, X->data, X->is_signed, 1, zx, at, st, olo, ohi, b0);
					else if (X->is_signed)
						tap_row(acc, w, X->data, 1, 0, zx, at, st, olo, ohi, b0);
					else
						tap_row(acc, w, X->data, 0, 0, zx, at, st, olo, ohi, b0);
				}
			}
}

/* Walk every output row of the convolution; with Y8 set, requantize
 * into it (adding bias), else store the int32 sums in Y32. */
static void conv(const kiln_window3d_params *p, const kiln_q8_operand *X,
                 const kiln_q8_operand *W, const int32_t *bias, int32_t *Y32,
                 const kiln_q8_output *Y8)
{
	int64_t M = p->out_channels, cg = p->channels / p->group, mg = M / p->group;
	int64_t ovol = p->out[0] * p->out[1] * p->out[2];
	int32_t zx = zero_at(X, 0);
	int32_t zy = Y8 && Y8->zero && !Y8->wide ? q8_at(Y8->zero, Y8->is_signed, 0) : 0;
	uint64_t acc[BLOCK_N];
	for (int64_t n = 0; n < p->batch; n++)
		for (int64_t m = 0; m < M; m++) {
			int64_t c0 = (m / mg) * cg;
			int32_t zw = zero_at(W, m);
			float mult = Y8 ? scale_at(X, 0) * scale_at(W, m) / Y8->scale[0] : 0.0f;
			int64_t at = (n * M + m) * ovol;
			for (int64_t o0 = 0; o0 < p->out[0]; o0++)
				for (int64_t o1 = 0; o1 < p->out[1]; o1++) {
					int64_t o[2] = {o0, o1}, start[2], lo[2], hi[2];
					for (int a = 0; a < 2; a++) {
						start[a] = o[a] * p->stride[a] - p->pad_begin[a];
						tap_range(start[a], p->dilation[a], p->kernel[a], p->in[a], &lo[a], &hi[a]);
					}
					for (int64_t b0 = 0; b0 < p->out[2]; b0 += BLOCK_N) {
						int64_t nb = p->out[2] - b0 < BLOCK_N ? p->out[2] - b0 : BLOCK_N;
						conv_row(p, X, W, zx, zw, n, m, c0, cg, start, lo, hi, b0, nb, acc);
						for (int64_t j = 0; j < nb; j++, at++) {
							uint64_t s = acc[j];
							if (!Y8) {
								Y32[at] = i8_wrap32((uint32_t)s);
								continue;
							}
							if (Y8->exact) {
								store_exact(Y8, at, wrap64(s), scale_at(X, 0), scale_at(W, m), m);
								continue;
							}
							if (bias)
								s += (uint32_t)bias[m];
							store_q8(Y8, at, i8_wrap32((uint32_t)s), mult, zy);
						}
					}
				}
		}
}

void kiln_i8_conv(const kiln_window3d_params *p, const kiln_q8_operand *X,
                  const kiln_q8_operand *W, int32_t *Y, void *work)
{
	I8Out o = {.conv = 1, .y32 = Y, .ra = W, .cb = X};
	I8Conv c = {p, X, W, &o};
	if (conv_blocked(&c, work))
		return;
	conv(p, X, W, NULL, Y, NULL);
}

void kiln_q8_conv(const kiln_window3d_params *p, const kiln_q8_operand *X,
                  const kiln_q8_operand *W, const int32_t *bias, const kiln_q8_output *Y,
                  void *work)
{
	I8Out o = {.conv = 1, .y8 = Y, .ra = W, .cb = X, .bias = bias};
	I8Conv c = {p, X, W, &o};
	if (conv_blocked(&c, work))
		return;
	conv(p, X, W, bias, NULL, Y);
}
