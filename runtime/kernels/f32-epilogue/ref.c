/*
 * f32-epilogue/ref.c - GEMM and 2-D convolution with a fused epilogue: a
 * per-column bias (GEMM) and an activation applied to the results while they
 * are still in cache, so a Gemm/Conv + BatchNorm + activation layer is one
 * kernel call. The activations are kiln_f32_act (f32-vmath/: one vector
 * loop per activation, chosen once per call).
 */
#include <math.h>
#include <stddef.h>

#include "epilogue.h"
#include "../f32-gemm/gemm.h"

/* The reference for f32-gemm/driver.c's kiln_f32_gemm_ep (the ref variant). */
void kiln_f32_gemm_ep_ref(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                          int64_t a_row_stride, int64_t a_col_stride, const float *B,
                          int64_t b_row_stride, int64_t b_col_stride, float beta, float *C,
                          int64_t c_row_stride, const kiln_epilogue *ep)
{
	/* Blocks of rows: the epilogue reads what the GEMM just wrote. */
	enum { ROWS = 16 };
	for (int64_t m0 = 0; m0 < M; m0 += ROWS) {
		int64_t mb = M - m0 < ROWS ? M - m0 : ROWS;
		kiln_f32_gemm_ref(mb, N, K, alpha, A + m0 * a_row_stride, a_row_stride, a_col_stride, B,
		              b_row_stride, b_col_stride, beta, C + m0 * c_row_stride, c_row_stride);
		if (!ep)
			continue;
		for (int64_t m = m0; m < m0 + mb; m++) {
			float *row = C + m * c_row_stride;
			if (ep->bias)
				for (int64_t n = 0; n < N; n++)
					row[n] += ep->bias[n];
			kiln_f32_act(row, N, ep);
		}
	}
}

void kiln_f32_conv_epilogue(const kiln_conv2d_params *p, float *Y, const kiln_epilogue *ep)
{
	if (!ep)
		return;
	/* One output plane at a time (the bias is the convolution's own): the
	 * residual, then the activation, while the plane is still in cache. */
	int64_t plane = p->out_h * p->out_w;
	for (int64_t i = 0; i < p->batch * p->out_channels; i++) {
		float *y = Y + i * plane;
		if (ep->residual) {
			const float *r = ep->residual + i * plane;
			for (int64_t k = 0; k < plane; k++)
				y[k] += r[k];
		}
		kiln_f32_act(y, plane, ep);
	}
}

/* ---- float16 B, widened while loading --------------------------------- */

/* Widen n float16 values (stride apart) to float. F16C when the CPU has it. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
__attribute__((target("f16c"))) static void widen_f16c(const uint16_t *src, float *dst, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
	for (; i < n; i++)
		dst[i] = kiln_f16_to_f32(src[i]);
}
/* F16C, AVX and the OS saving YMM registers (CPUID 1 ECX bits 29, 28, 27;
 * XCR0 bits 1-2). */
static int have_f16c(void)
{
	static int known = -1;  /* a benign race: every thread computes the same value */
	if (known < 0) {
		unsigned a, b, c, d;
		int ok = 0;
		if (__get_cpuid(1, &a, &b, &c, &d) && (c >> 27 & 7u) == 7u) {
			unsigned lo, hi;
			__asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
			ok = (lo & 6u) == 6u;
		}
		known = ok;
	}
	return known;
}
#else
static void widen_f16c(const uint16_t *src, float *dst, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		dst[i] = kiln_f16_to_f32(src[i]);
}
static int have_f16c(void)
{
	return 0;
}
#endif

void kiln_f16_widen(const uint16_t *src, int64_t stride, float *dst, int64_t n)
{
	if (stride == 1 && have_f16c()) {
		widen_f16c(src, dst, n);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		dst[i] = kiln_f16_to_f32(src[i * stride]);
}

/* The reference for f32-gemm/driver.c's kiln_f32_gemm_f16b (the ref
 * variant, and a strided A). */
void kiln_f32_gemm_f16b_ref(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                            int64_t a_row_stride, int64_t a_col_stride, const uint16_t *B,
                            int64_t b_row_stride, int64_t b_col_stride, float beta, float *C,
                            int64_t c_row_stride, const kiln_epilogue *ep)
{
	/* Blocks of B widened into a stack panel (64 KiB: no allocation), each
	 * multiplied by the stock kernel; later K blocks accumulate (beta 1). */
	enum { KB = 64, NB = 256 };
	float panel[KB * NB];
	if (K == 0) {
		kiln_f32_gemm(M, N, 0, alpha, A, a_row_stride, a_col_stride, NULL, 0, 0, beta, C,
		              c_row_stride);
	}
	for (int64_t n0 = 0; n0 < N; n0 += NB) {
		int64_t nb = N - n0 < NB ? N - n0 : NB;
		for (int64_t k0 = 0; k0 < K; k0 += KB) {
			int64_t kb = K - k0 < KB ? K - k0 : KB;
			for (int64_t k = 0; k < kb; k++) {
				const uint16_t *row = B + (k0 + k) * b_row_stride + n0 * b_col_stride;
				if (b_col_stride == 1) {
					kiln_f16_widen(row, 1, panel + k * nb, nb);
				} else {
					for (int64_t n = 0; n < nb; n++)
						panel[k * nb + n] = kiln_f16_to_f32(row[n * b_col_stride]);
				}
			}
			kiln_f32_gemm(M, nb, kb, alpha, A + k0 * a_col_stride, a_row_stride, a_col_stride,
			              panel, nb, 1, k0 == 0 ? beta : 1.0f, C + n0, c_row_stride);
		}
	}
	if (!ep)
		return;
	for (int64_t m = 0; m < M; m++) {
		float *row = C + m * c_row_stride;
		if (ep->bias)
			for (int64_t n = 0; n < N; n++)
				row[n] += ep->bias[n];
		kiln_f32_act(row, N, ep);
	}
}
