/*
 * f32-vmath/avx2.c - the AVX2 + FMA variant of the vector math kernels:
 * body.h over 8 float lanes (__m256); the last n % 8 elements through masked
 * loads and stores.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vmath.h"

typedef __m256 V;
typedef __m256 VM;
enum { W = 8 };
#define VMATH_INLINE inline __attribute__((always_inline))

static inline V vset(float a) { return _mm256_set1_ps(a); }
static inline V vload(const float *p) { return _mm256_loadu_ps(p); }
static inline void vstore(float *p, V a) { _mm256_storeu_ps(p, a); }
static inline __m256i lanes_below(int64_t n)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline V vload_n(const float *p, int64_t n) { return _mm256_maskload_ps(p, lanes_below(n)); }
static inline void vstore_n(float *p, V a, int64_t n) { _mm256_maskstore_ps(p, lanes_below(n), a); }
static inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
static inline V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
static inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
static inline V vdiv(V a, V b) { return _mm256_div_ps(a, b); }
static inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
/* minps/maxps return the second operand when either is NaN: a < b ? a : b */
static inline V vmin(V a, V b) { return _mm256_min_ps(a, b); }
static inline V vmax(V a, V b) { return _mm256_max_ps(a, b); }
static inline VM vlt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline VM vgt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
static inline VM vge(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
static inline int vall(VM m) { return _mm256_movemask_ps(m) == 0xff; }
static inline V vsel(VM m, V a, V b) { return _mm256_blendv_ps(b, a, m); }
static inline V vabs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
static inline V vcopysign(V m, V s)
{
	return _mm256_or_ps(m, _mm256_and_ps(s, _mm256_set1_ps(-0.0f)));
}
static inline V vexp2i(V n)
{
	__m256i k = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
	return _mm256_castsi256_ps(_mm256_slli_epi32(k, 23));
}

static inline V vkeep_n(V a, int64_t n) { return _mm256_and_ps(a, _mm256_castsi256_ps(lanes_below(n))); }
/* body.h's 16 double lanes as four vectors: q[0] lanes 0-3, q[1] 4-7,
 * q[2] 8-11, q[3] 12-15; the 8 floats at element i (a multiple of 8) go to
 * q[0], q[1] or to q[2], q[3] as i % 16 is 0 or 8 */
typedef struct { __m256d q[4]; } Dacc;
static inline void dacc_zero(Dacc *acc) { acc->q[0] = acc->q[1] = acc->q[2] = acc->q[3] = _mm256_setzero_pd(); }
static inline void dacc_add2(Dacc *acc, __m128 lo, __m128 hi, int64_t i)
{
	int h = (i & 8) ? 2 : 0;
	acc->q[h] = _mm256_add_pd(acc->q[h], _mm256_cvtps_pd(lo));
	acc->q[h + 1] = _mm256_add_pd(acc->q[h + 1], _mm256_cvtps_pd(hi));
}
/* acc += the 8 floats at p (element i), widened as they are loaded (no shuffle) */
static inline void dacc_add_at(Dacc *acc, const float *p, int64_t i)
{
	dacc_add2(acc, _mm_loadu_ps(p), _mm_loadu_ps(p + 4), i);
}
static inline void dacc_add(Dacc *acc, V a, int64_t i)
{
	dacc_add2(acc, _mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1), i);
}
static inline double dacc_total(const Dacc *acc)
{
	double t[8];
	_mm256_storeu_pd(t, _mm256_add_pd(acc->q[0], acc->q[2]));
	_mm256_storeu_pd(t + 4, _mm256_add_pd(acc->q[1], acc->q[3]));
	return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

/* dmath.h's four double lanes (kiln_logf, kiln_atanf) */
typedef __m256d D;
typedef __m256d DM;
typedef __m128 DF;
enum { DW = 4 };
static inline __m128i dlanes_below(int64_t n)
{
	return _mm_cmpgt_epi32(_mm_set1_epi32((int)n), _mm_setr_epi32(0, 1, 2, 3));
}
static inline DF df_load(const float *p) { return _mm_loadu_ps(p); }
static inline DF df_load_n(const float *p, int64_t n) { return _mm_maskload_ps(p, dlanes_below(n)); }
static inline void df_store(float *p, DF a) { _mm_storeu_ps(p, a); }
static inline void df_store_n(float *p, DF a, int64_t n) { _mm_maskstore_ps(p, dlanes_below(n), a); }
static inline D d_widen(DF a) { return _mm256_cvtps_pd(a); }
static inline DF d_narrow(D a) { return _mm256_cvtpd_ps(a); }
static inline DF df_keep_nan(DF r, DF x) { return _mm_blendv_ps(r, x, _mm_cmp_ps(x, x, _CMP_UNORD_Q)); }
static inline D d_set(double a) { return _mm256_set1_pd(a); }
static inline D d_add(D a, D b) { return _mm256_add_pd(a, b); }
static inline D d_sub(D a, D b) { return _mm256_sub_pd(a, b); }
static inline D d_mul(D a, D b) { return _mm256_mul_pd(a, b); }
static inline D d_div(D a, D b) { return _mm256_div_pd(a, b); }
static inline D d_sqrt(D a) { return _mm256_sqrt_pd(a); }
static inline DM d_gt(D a, D b) { return _mm256_cmp_pd(a, b, _CMP_GT_OQ); }
static inline DM d_lt(D a, D b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
static inline DM d_eq(D a, D b) { return _mm256_cmp_pd(a, b, _CMP_EQ_OQ); }
static inline D d_sel(DM m, D a, D b) { return _mm256_blendv_pd(b, a, m); }
static inline D d_abs(D a) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), a); }
static inline D d_neg_if(D v, D s)
{
	return _mm256_xor_pd(v, _mm256_and_pd(s, _mm256_set1_pd(-0.0)));
}
static inline D d_mant1(D x)
{
	__m256i u = _mm256_castpd_si256(x);
	u = _mm256_and_si256(u, _mm256_set1_epi64x(0x000fffffffffffffll));
	return _mm256_castsi256_pd(_mm256_or_si256(u, _mm256_set1_epi64x(0x3ff0000000000000ll)));
}
/* 2^52 + the field, exactly, minus 2^52 */
static inline D d_bexp(D x)
{
	__m256i u = _mm256_srli_epi64(_mm256_castpd_si256(x), 52);
	u = _mm256_or_si256(u, _mm256_set1_epi64x(0x4330000000000000ll));
	return _mm256_sub_pd(_mm256_castsi256_pd(u), _mm256_set1_pd(0x1p52));
}
#include "dmath.h"

#include "body.h"

const VmathOps kiln_vmath_avx2 = {
	vmath_unary, vmath_act, vmath_softmax_line, vmath_layernorm_rows, vmath_batchnorm_plane,
	vmath_lstm_cell, vmath_lstm_block, vmath_lstm_cells, vmath_lstm_rows, vmath_lstm_row,
};
