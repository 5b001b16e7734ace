/*
 * f32-pool/avx512.c - MaxPool's row loops (pool.h) over 16 float lanes:
 * the last len % 16 columns (n % 16 outputs) through masked stores (and
 * vmax's masked loads; hmax3s2 reads into the slack of t).
 */
#include <immintrin.h>
#include <math.h>

#include "pool.h"

static inline __mmask16 lanes(int64_t n)
{
	return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
}

/* _mm512_max_ps(v, best) is v > best ? v : best */
static void vmax(const float *const *rows, int64_t n, float *dst, int64_t len)
{
	const __m512 lowest = _mm512_set1_ps(-INFINITY);
	if (n == 3) {
		const float *r0 = rows[0], *r1 = rows[1], *r2 = rows[2];
		for (int64_t c = 0; c < len; c += 16) {
			__mmask16 m = lanes(len - c);
			__m512 best = _mm512_max_ps(_mm512_maskz_loadu_ps(m, r0 + c), lowest);
			best = _mm512_max_ps(_mm512_maskz_loadu_ps(m, r1 + c), best);
			best = _mm512_max_ps(_mm512_maskz_loadu_ps(m, r2 + c), best);
			_mm512_mask_storeu_ps(dst + c, m, best);
		}
		return;
	}
	for (int64_t c = 0; c < len; c += 16) {
		__mmask16 m = lanes(len - c);
		__m512 best = lowest;
		for (int64_t r = 0; r < n; r++)
			best = _mm512_max_ps(_mm512_maskz_loadu_ps(m, rows[r] + c), best);
		_mm512_mask_storeu_ps(dst + c, m, best);
	}
}

static void hmax3s2(const float *t, float *y, int64_t n)
{
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
	                                       28, 30);
	const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27,
	                                      29, 31);
	for (int64_t k = 0; k < n; k += 16) {
		const float *w = t + 2 * k;
		__m512 a = _mm512_loadu_ps(w), b = _mm512_loadu_ps(w + 16);
		__m512 c = _mm512_loadu_ps(w + 2), d = _mm512_loadu_ps(w + 18);
		__m512 best = _mm512_permutex2var_ps(a, even, b);
		best = _mm512_max_ps(_mm512_permutex2var_ps(a, odd, b), best);
		best = _mm512_max_ps(_mm512_permutex2var_ps(c, even, d), best);
		_mm512_mask_storeu_ps(y + k, lanes(n - k), best);
	}
}

static void prefetch(const float *row, int64_t len)
{
	for (int64_t c = 0; c < len; c += 16)
		_mm_prefetch((const char *)(row + c), _MM_HINT_T0);
}

const PoolRowOps kiln_pool_avx512 = {vmax, hmax3s2, prefetch};
