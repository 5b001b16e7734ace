/*
 * select.c - kiln_f32_select: x @ S for a selection matrix S (0 or 1, one 1
 * per column; passes/onehot.c), with the bits of the GEMM's product.
 *
 * Column j of S has its 1 in row src[j], so y[o, j] = sum_k x[o, k] S[k, j]
 * holds x[o, src[j]] * 1 and products by zero. The GEMM (f32-gemm/gemm.h)
 * sums them in its K blocks (a packed weight's of m columns: kiln_gemm_kc_n,
 * else kiln_gemm_kc), one fmaf chain from +0 each,
 * the blocks added in order. On a row of finite values every product by
 * zero is +-0 and leaves the chain as it was, so y is x[o, src[j]] + 0.0f
 * (a -0 becomes +0, everything else is unchanged): gathered (gather/
 * avx512.c, gather/avx2.c) and added to +0. A row holding an infinity or a
 * NaN gives NaN through inf * 0 wherever it is not the selected element:
 * such rows are recomputed as the GEMM sums them (select_row), so the
 * result is the MatMul's on every input.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "f32-gemm/gemm.h"
#include "gather/gather.h"
#include "isa.h"
#include "kiln/kernels.h"

/* Does x[0..k) hold an infinity or a NaN (exponent bits all set)? */
static int nonfinite(const float *x, int64_t k)
{
	uint32_t any = 0;
	for (int64_t i = 0; i < k; i++) {
		uint32_t b;
		memcpy(&b, x + i, sizeof b);
		any |= (b & 0x7f800000u) == 0x7f800000u;
	}
	return any != 0;
}

/* One row as the GEMM core sums it: per K block one chain from +0 of
 * fmaf(x[i], S[i, j], acc), each block's sum added to the ones before. */
static void select_row(const float *x, const int64_t *src, float *y, int64_t k, int64_t m)
{
	const int64_t kc = kiln_gemm_kc_n(k, m) > 0 ? kiln_gemm_kc_n(k, m) : kiln_gemm_kc(k);
	for (int64_t j = 0; j < m; j++) {
		float c = 0.0f;
		for (int64_t k0 = 0; k0 < k; k0 += kc) {
			int64_t k1 = k - k0 < kc ? k : k0 + kc;
			float acc = 0.0f;
			for (int64_t i = k0; i < k1; i++)
				acc = fmaf(x[i], i == src[j] ? 1.0f : 0.0f, acc);
			c = k0 == 0 ? acc : acc + c;
		}
		y[j] = c;
	}
}

KILN_API enum kiln_status kiln_f32_select(const float *x, const int64_t *src, float *y,
                                          int64_t outer, int64_t k, int64_t m)
{
	for (int64_t j = 0; j < m; j++)
		if (src[j] < 0 || src[j] >= k)
			return KILN_SHAPE_ERROR;
	if (outer <= 0 || m <= 0)
		return KILN_OK;
#ifdef KILN_HAVE_X86_VARIANTS
	if (k <= 32 && kiln_isa() >= KILN_ISA_AVX512)
		kiln_gather32_row_avx512(x, src, y, outer, k, m, 1);
	else if (kiln_isa() >= KILN_ISA_AVX2)
		kiln_gather32_row_avx2(x, src, y, outer, k, m, 1);
	else
#endif
		for (int64_t o = 0; o < outer; o++)
			for (int64_t j = 0; j < m; j++)
				y[o * m + j] = x[o * k + src[j]] + 0.0f;
	for (int64_t o = 0; o < outer; o++)
		if (nonfinite(x + o * k, k))
			select_row(x + o * k, src, y + o * m, k, m);
	return KILN_OK;
}

/* The C loop of kiln_f32_select_sum: the parts added in order, then Relu as
 * the AVX-512 variant's max(s, +0) (NaN and -0 give +0). */
static void select_sum_ref(const float *P, const int64_t *src, float *y, int64_t batch,
                           int64_t co, int64_t k, int64_t m, int parts, int relu)
{
	for (int64_t n = 0; n < batch; n++)
		for (int64_t o = 0; o < co; o++) {
			float *yr = y + (n * co + o) * m;
			for (int64_t j = 0; j < m; j++) {
				float s = P[(n * parts * co + o) * k + src[j]];
				for (int t = 1; t < parts; t++)
					s += P[((n * parts + t) * co + o) * k + src[t * m + j]];
				yr[j] = relu ? (s > 0.0f ? s : 0.0f) : s;
			}
		}
}

KILN_API enum kiln_status kiln_f32_select_sum(const float *P, const int64_t *src, float *y,
                                              int64_t batch, int64_t co, int64_t k, int64_t m,
                                              int parts, int relu)
{
	if (parts < 1)
		return KILN_SHAPE_ERROR;
	for (int64_t j = 0; j < parts * m; j++)
		if (src[j] < 0 || src[j] >= k)
			return KILN_SHAPE_ERROR;
	if (batch <= 0 || co <= 0 || m <= 0)
		return KILN_OK;
#ifdef KILN_HAVE_X86_VARIANTS
	if (k <= 32 && parts <= 4 && kiln_isa() >= KILN_ISA_AVX512) {
		kiln_select_sum32_avx512(P, src, y, batch, co, k, m, parts, relu);
		return KILN_OK;
	}
#endif
	select_sum_ref(P, src, y, batch, co, k, m, parts, relu);
	return KILN_OK;
}
