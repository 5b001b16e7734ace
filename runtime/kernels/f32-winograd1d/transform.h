/*
 * f32-winograd1d/transform.h - the input and output transforms of the 1-D
 * Winograd F(4, 3) (wino1d.c), written once: wino1d.c includes this file for
 * the portable variant and avx2.c / avx512.c include it compiled with their
 * flags. Each function is plain C over blocks of WINO_LANES independent
 * tiles (fixed trip counts the compiler vectorizes at -O2); every value is
 * the same sequence of float additions, subtractions and multiplications by
 * 2, 4 and 8 (exact) in every variant, and the lanes never mix, so the
 * results are the same bits whatever the vector width (issue 30,
 * docs/reproducibility.md). Define WINO_TRANSFORM_SUFFIX before including.
 */
#include <stdint.h>
#include <string.h>

#ifndef KILN_F32_WINO1D_TRANSFORM_TYPES
#define KILN_F32_WINO1D_TRANSFORM_TYPES
enum { WINO_LANES = 16 };
/* B^T d of T16 tiles (a multiple of WINO_LANES) of one channel's padded
 * signal row (4 T16 + 2 floats readable; tile t is row[4 t .. 4 t + 5]):
 * v[e * vs + t] for the six points e. */
typedef void (*wino1d_in_fn)(const float *row, int64_t T16, float *v, int64_t vs);
/* A^T m + b of T16 tiles of one output channel (m[e * ms + t] the products
 * of point e), + res[i] if res, then ReLU if relu: y[4 t + j] (output j of
 * tile t) for 4 t + j < n (n <= 4 T16). */
typedef void (*wino1d_out_fn)(const float *m, int64_t ms, int64_t T16, float b,
                              const float *res, int relu, float *y, int64_t n);
void kiln_wino1d_in_ref(const float *row, int64_t T16, float *v, int64_t vs);
void kiln_wino1d_out_ref(const float *m, int64_t ms, int64_t T16, float b, const float *res,
                         int relu, float *y, int64_t n);
void kiln_wino1d_in_avx2(const float *row, int64_t T16, float *v, int64_t vs);
void kiln_wino1d_out_avx2(const float *m, int64_t ms, int64_t T16, float b, const float *res,
                          int relu, float *y, int64_t n);
void kiln_wino1d_in_avx512(const float *row, int64_t T16, float *v, int64_t vs);
/* The same from the unpadded signal x (L floats, pad zeros before it and
 * zeros after): no padded row copied first. */
void kiln_wino1d_in_x_avx512(const float *x, int64_t L, int64_t pad, int64_t T16, float *v,
                             int64_t vs);
void kiln_wino1d_out_avx512(const float *m, int64_t ms, int64_t T16, float b, const float *res,
                            int relu, float *y, int64_t n);
/* AVX-512's products with output channels in lanes, P[t * M + m] (avx512.c),
 * and the output transform of that layout. */
void kiln_wino1d_products_avx512(const float *U, const float *V, int64_t C, int64_t M,
                                 int64_t ld, int64_t ncols, float *P);
void kiln_wino1d_out_tm_avx512(const float *P, int64_t es, int64_t T, int64_t M,
                               const float *bias, const float *res, int relu, float *y,
                               int64_t n, float *tmp);
#endif

#ifdef WINO_TRANSFORM_SUFFIX
#define WINO_CAT2(a, b) a##b
#define WINO_CAT(a, b) WINO_CAT2(a, b)

/* The transforms on local blocks (copied in and out with memcpy), so that
 * the compiler sees no aliasing. The values: B^T d as
 *   v0 = (4 (d0 - d2) - d2) + d4           (4 d0 - 5 d2 + d4)
 *   v1 = (d4 + d3) - 4 (d1 + d2)
 *   v2 = (d4 - d3) + 4 (d1 - d2)
 *   v3 = (d4 - d2) + 2 (d3 - d1)
 *   v4 = (d4 - d2) - 2 (d3 - d1)
 *   v5 = (4 (d1 - d3) - d3) + d5           (4 d1 - 5 d3 + d5)
 * and A^T m + b with a = m1 + m2, s = m1 - m2, c = m3 + m4, d = m3 - m4 as
 *   y0 = ((m0 + a) + c) + b, y1 = (s + 2 d) + b, y2 = (a + 4 c) + b,
 *   y3 = ((s + 8 d) + m5) + b,
 * each operation rounded (the multiplications are exact). avx512.c computes
 * exactly these in its own vectors. */
void WINO_CAT(kiln_wino1d_in_, WINO_TRANSFORM_SUFFIX)(const float *row, int64_t T16, float *v,
                                                      int64_t vs)
{
	for (int64_t t0 = 0; t0 < T16; t0 += WINO_LANES) {
		float s[4 * WINO_LANES + 2], d[6][WINO_LANES], r[6][WINO_LANES];
		memcpy(s, row + 4 * t0, sizeof s);
		for (int k = 0; k < 6; k++)
			for (int j = 0; j < WINO_LANES; j++)
				d[k][j] = s[4 * j + k];
		for (int j = 0; j < WINO_LANES; j++) {
			float d0 = d[0][j], d1 = d[1][j], d2 = d[2][j], d3 = d[3][j], d4 = d[4][j],
			      d5 = d[5][j];
			float s31 = d3 - d1, s42 = d4 - d2;
			r[0][j] = (4.0f * (d0 - d2) - d2) + d4;
			r[1][j] = (d4 + d3) - 4.0f * (d1 + d2);
			r[2][j] = (d4 - d3) + 4.0f * (d1 - d2);
			r[3][j] = s42 + 2.0f * s31;
			r[4][j] = s42 - 2.0f * s31;
			r[5][j] = (4.0f * (d1 - d3) - d3) + d5;
		}
		for (int e = 0; e < 6; e++)
			memcpy(v + e * vs + t0, r[e], sizeof r[e]);
	}
}

void WINO_CAT(kiln_wino1d_out_, WINO_TRANSFORM_SUFFIX)(const float *m, int64_t ms, int64_t T16,
                                                       float b, const float *res, int relu,
                                                       float *y, int64_t n)
{
	for (int64_t t0 = 0; t0 < T16 && 4 * t0 < n; t0 += WINO_LANES) {
		float x[6][WINO_LANES], r[4][WINO_LANES], o[4 * WINO_LANES];
		for (int e = 0; e < 6; e++)
			memcpy(x[e], m + e * ms + t0, sizeof x[e]);
		for (int j = 0; j < WINO_LANES; j++) {
			float a = x[1][j] + x[2][j], s = x[1][j] - x[2][j];
			float c = x[3][j] + x[4][j], d = x[3][j] - x[4][j];
			r[0][j] = ((x[0][j] + a) + c) + b;
			r[1][j] = (s + 2.0f * d) + b;
			r[2][j] = (a + 4.0f * c) + b;
			r[3][j] = ((s + 8.0f * d) + x[5][j]) + b;
		}
		for (int j = 0; j < WINO_LANES; j++)
			for (int k = 0; k < 4; k++)
				o[4 * j + k] = r[k][j];
		int64_t i0 = 4 * t0, cnt = n - i0 < 4 * WINO_LANES ? n - i0 : 4 * WINO_LANES;
		if (res)
			for (int64_t i = 0; i < cnt; i++)
				o[i] = o[i] + res[i0 + i];
		if (relu)
			for (int i = 0; i < 4 * WINO_LANES; i++)
				o[i] = o[i] > 0.0f ? o[i] : 0.0f;
		memcpy(y + i0, o, (size_t)cnt * sizeof *o);
	}
}

#undef WINO_CAT
#undef WINO_CAT2
#endif
