/*
 * f32-conv/avx512.c - the convolution's im2col panel packer (im2col.h) with
 * AVX-512 masked moves: a run of up to 32 pixels is two masked loads and two
 * masked stores, zeros included, with no loop.
 */
#include <immintrin.h>

#include "im2col.h"

static inline __attribute__((always_inline)) void copy_run(float *o, const float *src, int64_t lo,
                                                           int64_t hi, int64_t len)
{
	/* lanes [lo, hi) come from src - lo (masked: the lanes below lo are never read) */
	for (int h = 0; h < 2; h++) {
		int64_t b = 16 * h;
		if (b >= len)
			break;
		int64_t e = len - b < 16 ? len - b : 16;
		__mmask16 store = (__mmask16)((1u << e) - 1);
		int64_t l = lo - b < 0 ? 0 : lo - b, r = hi - b < 0 ? 0 : hi - b > 16 ? 16 : hi - b;
		__mmask16 load = l < r ? (__mmask16)(((1u << r) - 1) & ~((1u << l) - 1)) : 0;
		__m512 v = _mm512_maskz_loadu_ps(load, src + (b - lo));
		_mm512_mask_storeu_ps(o + b, store, v);
	}
}
#define IM2COL_NAME kiln_im2col_avx512
#define IM2COL_COPY_RUN copy_run
#include "im2col.h"
