/*
 * f32-gemm/pack.h - the packed layout of a GEMM's B operand ("b32"), shared by
 * the compiler (which packs weights at compile time, compiler/emit/linalg.c)
 * and the kernels (which read it), so the two cannot disagree.
 *
 * B is logically [K, N]. Its columns are cut into panels of KILN_PACK_NR = 32
 * (the last one narrower: w = N - n0 columns). Panel p starts at element
 * n0 * K (n0 = 32 p) and holds its K rows one after the other, each w floats:
 *
 *     packed[n0 * K + k * w + j] = B[k, n0 + j]      (0 <= j < w)
 *
 * So the layout holds exactly K * N floats (no padding: a weight packed this
 * way takes the bytes of the original), every panel is one contiguous stream
 * that the micro-kernels read row after row, and a transposed weight
 * (ONNX Gemm transB = 1, what PyTorch Linear exports) packs like any other.
 * Header-only so that both sides compile the same code.
 */
#ifndef KILN_F32_GEMM_PACK_H
#define KILN_F32_GEMM_PACK_H

#include <stdint.h>
#include <string.h>

enum { KILN_PACK_NR = 32 };

/* Columns in the panel that starts at column n0. */
static inline int64_t kiln_pack_b32_width(int64_t N, int64_t n0)
{
	return N - n0 < KILN_PACK_NR ? N - n0 : KILN_PACK_NR;
}

/* Rows [k0, k0 + kc) of the panel at column n0 of B, where element (k, n) of B
 * is src[k * rs + n * cs], into dst as kc rows of w floats. src may be
 * misaligned (a weight in a model file's mapping). */
static inline void kiln_pack_b32_panel(const float *src, int64_t rs, int64_t cs, int64_t N,
                                       int64_t n0, int64_t k0, int64_t kc, float *dst)
{
	int64_t w = kiln_pack_b32_width(N, n0);
	for (int64_t k = 0; k < kc; k++) {
		const float *s = src + (k0 + k) * rs + n0 * cs;
		float *d = dst + k * w;
		/* memcpy: at compile time src is a weight where the model file has it,
		 * which need not be 4-byte aligned (compilers make these plain loads) */
		if (cs == 1)
			memcpy(d, s, (size_t)w * sizeof *d);
		else
			for (int64_t j = 0; j < w; j++)
				memcpy(&d[j], &s[j * cs], sizeof *d);
	}
}

/* All of B (K x N, element (k, n) at src[k * rs + n * cs]) into dst (K * N
 * floats) in the b32 layout. */
static inline void kiln_pack_b32(const float *src, int64_t rs, int64_t cs, int64_t K, int64_t N,
                                 float *dst)
{
	for (int64_t n0 = 0; n0 < N; n0 += KILN_PACK_NR)
		kiln_pack_b32_panel(src, rs, cs, N, n0, 0, K, dst + n0 * K);
}

#endif
