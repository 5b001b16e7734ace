/*
 * f32-pool/avx2.c - MaxPool's row loops (pool.h) over 8 float lanes, the
 * last len % 8 columns in plain C, hmax3s2's last n % 8 outputs in ref.c's.
 */
#include <immintrin.h>
#include <math.h>

#include "pool.h"

/* _mm256_max_ps(v, best) is v > best ? v : best */
static void vmax(const float *const *rows, int64_t n, float *dst, int64_t len)
{
	const __m256 lowest = _mm256_set1_ps(-INFINITY);
	int64_t c = 0;
	for (; c + 8 <= len; c += 8) {
		__m256 best = lowest;
		for (int64_t r = 0; r < n; r++)
			best = _mm256_max_ps(_mm256_loadu_ps(rows[r] + c), best);
		_mm256_storeu_ps(dst + c, best);
	}
	for (; c < len; c++) {
		float best = -INFINITY;
		for (int64_t r = 0; r < n; r++)
			best = rows[r][c] > best ? rows[r][c] : best;
		dst[c] = best;
	}
}

/* the even (odd) lanes of the 16 floats at w, in order */
static inline __m256 even_of(const float *w)
{
	__m256 a = _mm256_loadu_ps(w), b = _mm256_loadu_ps(w + 8);
	__m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
	return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
}

static inline __m256 odd_of(const float *w)
{
	__m256 a = _mm256_loadu_ps(w), b = _mm256_loadu_ps(w + 8);
	__m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
	return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

static void hmax3s2(const float *t, float *y, int64_t n)
{
	int64_t k = 0;
	for (; k + 8 <= n; k += 8) {
		const float *w = t + 2 * k;
		__m256 best = even_of(w);
		best = _mm256_max_ps(odd_of(w), best);
		best = _mm256_max_ps(even_of(w + 2), best);
		_mm256_storeu_ps(y + k, best);
	}
	kiln_pool_hmax3s2_ref(t + 2 * k, y + k, n - k);
}

static void prefetch(const float *row, int64_t len)
{
	for (int64_t c = 0; c < len; c += 16)
		_mm_prefetch((const char *)(row + c), _MM_HINT_T0);
}

const PoolRowOps kiln_pool_avx2 = {vmax, hmax3s2, prefetch};
