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

/* dmath.h's eight double lanes (kiln_logf, kiln_atanf) */
typedef __m512d D;
typedef __mmask8 DM;
typedef __m256 DF;
enum { DW = 8 };
static inline __mmask8 dlanes_below(int64_t n) { return (__mmask8)((1u << n) - 1); }
static inline DF df_load(const float *p) { return _mm256_loadu_ps(p); }
static inline DF df_load_n(const float *p, int64_t n) { return _mm256_maskz_loadu_ps(dlanes_below(n), p); }
static inline void df_store(float *p, DF a) { _mm256_storeu_ps(p, a); }
static inline void df_store_n(float *p, DF a, int64_t n) { _mm256_mask_storeu_ps(p, dlanes_below(n), a); }
static inline D d_widen(DF a) { return _mm512_cvtps_pd(a); }
static inline DF d_narrow(D a) { return _mm512_cvtpd_ps(a); }
static inline DF df_keep_nan(DF r, DF x)
{
	return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
static inline D d_set(double a) { return _mm512_set1_pd(a); }
static inline D d_add(D a, D b) { return _mm512_add_pd(a, b); }
static inline D d_sub(D a, D b) { return _mm512_sub_pd(a, b); }
static inline D d_mul(D a, D b) { return _mm512_mul_pd(a, b); }
static inline D d_div(D a, D b) { return _mm512_div_pd(a, b); }
static inline D d_sqrt(D a) { return _mm512_sqrt_pd(a); }
static inline DM d_gt(D a, D b) { return _mm512_cmp_pd_mask(a, b, _CMP_GT_OQ); }
static inline DM d_lt(D a, D b) { return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ); }
static inline DM d_eq(D a, D b) { return _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ); }
static inline D d_sel(DM m, D a, D b) { return _mm512_mask_blend_pd(m, b, a); }
static inline D d_abs(D a) { return _mm512_abs_pd(a); }
static inline D d_neg_if(D v, D s)
{
	return _mm512_xor_pd(v, _mm512_and_pd(s, _mm512_set1_pd(-0.0)));
}
static inline D d_mant1(D x)
{
	__m512i u = _mm512_castpd_si512(x);
	u = _mm512_and_si512(u, _mm512_set1_epi64(0x000fffffffffffffll));
	return _mm512_castsi512_pd(_mm512_or_si512(u, _mm512_set1_epi64(0x3ff0000000000000ll)));
}
/* 2^52 + the field, exactly, minus 2^52 */
static inline D d_bexp(D x)
{
	__m512i u = _mm512_srli_epi64(_mm512_castpd_si512(x), 52);
	u = _mm512_or_si512(u, _mm512_set1_epi64(0x4330000000000000ll));
	return _mm512_sub_pd(_mm512_castsi512_pd(u), _mm512_set1_pd(0x1p52));
}
#include "dmath.h"

#include "body.h"

const VmathOps kiln_vmath_avx512 = {
	vmath_unary, vmath_act, vmath_softmax_line, vmath_layernorm_rows, vmath_batchnorm_plane,
	vmath_lstm_cell, vmath_lstm_block, vmath_lstm_cells, vmath_lstm_rows, vmath_lstm_row,
};
