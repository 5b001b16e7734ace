/*
 * f32-vmath/avx512.c - the AVX-512 variant of the vector math kernels:
 * body.h over 16 float lanes (__m512) with mask registers; the last n % 16
 * elements through masked loads and stores.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vmath.h"

typedef __m512 V;
typedef __mmask16 VM;
enum { W = 16 };
#define VMATH_INLINE inline __attribute__((always_inline))

static inline V vset(float a) { return _mm512_set1_ps(a); }
static inline V vload(const float *p) { return _mm512_loadu_ps(p); }
static inline void vstore(float *p, V a) { _mm512_storeu_ps(p, a); }
static inline __mmask16 lanes_below(int64_t n) { return (__mmask16)((1u << n) - 1); }
static inline V vload_n(const float *p, int64_t n) { return _mm512_maskz_loadu_ps(lanes_below(n), p); }
static inline void vstore_n(float *p, V a, int64_t n) { _mm512_mask_storeu_ps(p, lanes_below(n), a); }
static inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
static inline V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
static inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
static inline V vdiv(V a, V b) { return _mm512_div_ps(a, b); }
static inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
/* vminps/vmaxps return the second operand when either is NaN: a < b ? a : b */
static inline V vmin(V a, V b) { return _mm512_min_ps(a, b); }
static inline V vmax(V a, V b) { return _mm512_max_ps(a, b); }
static inline VM vlt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline VM vgt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
static inline VM vge(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
static inline int vall(VM m) { return m == 0xffff; }
static inline V vsel(VM m, V a, V b) { return _mm512_mask_blend_ps(m, b, a); }
static inline V vabs(V a) { return _mm512_abs_ps(a); }
static inline V vcopysign(V m, V s)
{
	return _mm512_or_ps(m, _mm512_and_ps(s, _mm512_set1_ps(-0.0f)));
}
/* exp's p * 2^n (body.h): vscalefps, so no vexp2i here */
#define VMATH_SCALEF(p, n) _mm512_scalef_ps(p, n)
/* lanes e of vcols: columns first + e of the 32 in a then b (0 <= first < 16;
 * body.h's fused narrow LSTM block) */
#define VMATH_COLS(a, b, first)                                                                \
	_mm512_permutex2var_ps((a),                                                               \
	                       _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, \
	                                                         5, 4, 3, 2, 1, 0),                 \
	                                        _mm512_set1_epi32((int)(first))),                   \
	                       (b))
/* LayerNorm rows 8 at a time (body.h: ln_rows) */
#define LN_ROWS 8
/* v[i] = 1 / sqrt(v[i]) for i < k <= 8: the eight rows' at once */
static inline void dinv_sqrt(double *v, int k)
{
	__mmask8 m = (__mmask8)((1u << k) - 1);
	__m512d a = _mm512_mask_loadu_pd(_mm512_set1_pd(1.0), m, v);
	_mm512_mask_storeu_pd(v, m, _mm512_div_pd(_mm512_set1_pd(1.0), _mm512_sqrt_pd(a)));
}

static inline V vkeep_n(V a, int64_t n) { return _mm512_maskz_mov_ps(lanes_below(n), a); }
/* body.h's 16 double lanes: the low and high eight floats widened (element
 * i, a multiple of 16, needs no position) */
typedef struct { __m512d lo, hi; } Dacc;
static inline void dacc_zero(Dacc *acc) { acc->lo = acc->hi = _mm512_setzero_pd(); }
/* acc += the 16 floats at p, widened as they are loaded (no shuffle) */
static inline void dacc_add_at(Dacc *acc, const float *p, int64_t i)
{
	(void)i;
	acc->lo = _mm512_add_pd(acc->lo, _mm512_cvtps_pd(_mm256_loadu_ps(p)));
	acc->hi = _mm512_add_pd(acc->hi, _mm512_cvtps_pd(_mm256_loadu_ps(p + 8)));
}
static inline void dacc_add(Dacc *acc, V a, int64_t i)
{
	(void)i;
	acc->lo = _mm512_add_pd(acc->lo, _mm512_cvtps_pd(_mm512_castps512_ps256(a)));
	acc->hi = _mm512_add_pd(acc->hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1))));
}
/* lanes j and j + 8 added, then the eight in body.h's tree */
static inline double dacc_total(const Dacc *acc)
{
	double t[8];
	_mm512_storeu_pd(t, _mm512_add_pd(acc->lo, acc->hi));
	return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

#include "body.h"

const VmathOps kiln_vmath_avx512 = {
	vmath_unary, vmath_act, vmath_softmax_line, vmath_layernorm_rows, vmath_batchnorm_plane,
	vmath_lstm_cell, vmath_lstm_block, vmath_lstm_cells, vmath_lstm_rows, vmath_lstm_row,
};
