/*
 * f32-conv/avx2.c - the convolution's im2col panel packer (im2col.h) with AVX2
 * masked moves, 8 floats at a time.
 */
#include <immintrin.h>

#include "im2col.h"

static inline __attribute__((always_inline)) void copy_run(float *o, const float *src, int64_t lo,
                                                           int64_t hi, int64_t len)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	for (int64_t b = 0; b < len; b += 8) {
		/* lanes b + u in [lo, hi) come from src[b + u - lo] */
		__m256i lane = _mm256_add_epi32(idx, _mm256_set1_epi32((int)b));
		__m256i in = _mm256_and_si256(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32((int)lo - 1)),
		                              _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), lane));
		__m256i st = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)len), lane);
		__m256 v = _mm256_maskload_ps(src + (b - lo), in);
		_mm256_maskstore_ps(o + b, st, v);
	}
}
static inline __attribute__((always_inline)) void gather_run(float *o, const float *row,
                                                             int64_t iw, int64_t step, int64_t W,
                                                             int64_t len)
{
	for (int64_t u = 0; u < len; u++, iw += step)
		o[u] = iw >= 0 && iw < W ? row[iw] : 0.0f;
}
#define IM2COL_NAME kiln_im2col_avx2
#define IM2COL_COPY_RUN copy_run
#define IM2COL_GATHER_RUN gather_run
#include "im2col.h"

/* The packed convolution's tile (direct.h), portable loops compiled for
 * AVX2 + FMA. */
#define CONV_TILE_NAME kiln_conv_tile_avx2
#define CONV_TILE_NP CONV_NP_AVX2
#include "direct.h"
