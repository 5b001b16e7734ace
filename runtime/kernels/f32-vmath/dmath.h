/*
 * f32-vmath/dmath.h - kiln_logf and kiln_atanf over DW double lanes at once
 * (kiln_f32_unary's KILN_UNARY_LOG and KILN_UNARY_ATAN in the SIMD
 * variants; the ref variant calls the scalar functions themselves).
 *
 * Each lane computes exactly the IEEE double operations of scalar.c's
 * kiln_log / k_log and kiln_atanf / k_atan, in the same order, on the same
 * constants (dconst.h), without fma: the branches become lane selections
 * (both sides computed, one kept), the special inputs (NaN, negative, 0,
 * +inf) are selected last as the scalar code returns them. So every element
 * gets the scalar function's bits, under every ISA (tests/kernels/
 * test_dmath.c checks it bit for bit on every 127th float and the edges).
 *
 * The including variant defines, for DW double lanes:
 *   D (double vector), DM (its lane mask), DF (DW floats)
 *   df_load, df_load_n, df_store, df_store_n (n < DW: the first n lanes)
 *   d_widen (DF -> D, exact), d_narrow (D -> DF, rounded to nearest)
 *   df_keep_nan(r, x): x in the lanes where x is NaN, else r
 *   d_set, d_add, d_sub, d_mul, d_div, d_sqrt (correctly rounded)
 *   d_gt, d_lt, d_eq (ordered), d_sel(m, a, b)
 *   d_abs, d_neg_if(v, s) (v negated where s has its sign bit set)
 *   d_mant1(x): x's mantissa with 1.0's exponent, in [1, 2)
 *   d_bexp(x): x's biased exponent field, as a double (x >= 0)
 */
#ifndef KILN_F32_VMATH_DMATH_H
#define KILN_F32_VMATH_DMATH_H

#include "dconst.h"

/* k_log on positive finite normal lanes (every float is a normal double) */
static inline D dm_k_log(D x)
{
	D e = d_sub(d_bexp(x), d_set(1023.0));
	D m = d_mant1(x);
	DM big = d_gt(m, d_set(LOG_M_SPLIT));
	m = d_sel(big, d_mul(m, d_set(0.5)), m);
	e = d_sel(big, d_add(e, d_set(1.0)), e);
	/* k_log_near1(m - 1) */
	D f = d_sub(m, d_set(1.0));
	D s = d_div(f, d_add(d_set(2.0), f));
	D z = d_mul(s, s);
	D p = d_set(LOG_P0);
	for (int i = 0; i < 8; i++)
		p = d_add(d_mul(p, z), d_set(LOG_INV_ODD[i]));
	D s2 = d_mul(d_set(2.0), s);
	D lm = d_add(s2, d_mul(s2, d_mul(z, p)));
	return d_add(d_mul(e, d_set(LN2_HI)), d_add(lm, d_mul(e, d_set(LN2_LO))));
}

/* kiln_log's special cases around k_log, then rounded to float; a NaN x
 * itself (the compiler folds kiln_logf's (float)(double)x of a NaN to x, so
 * a signalling NaN is not quieted there either) */
static inline DF dm_logf(DF xf)
{
	D x = d_widen(xf);
	D r = dm_k_log(x);
	r = d_sel(d_eq(x, d_set(__builtin_inf())), x, r);
	r = d_sel(d_eq(x, d_set(0.0)), d_set(-__builtin_inf()), r);
	r = d_sel(d_lt(x, d_set(0.0)), d_set(__builtin_nan("")), r);
	return df_keep_nan(d_narrow(r), xf);
}

/* k_atan(|x|), the sign of x, rounded to float; a NaN x itself */
static inline DF dm_atanf(DF xf)
{
	D x = d_widen(xf);
	D a = d_abs(x);
	DM inv = d_gt(a, d_set(1.0));
	a = d_sel(inv, d_div(d_set(1.0), a), a);
	for (int i = 0; i < 2; i++)
		a = d_div(a, d_add(d_set(1.0), d_sqrt(d_add(d_set(1.0), d_mul(a, a)))));
	D z = d_mul(a, a);
	D p = d_set(ATAN_P0);
	for (int i = 0; i < 12; i++)
		p = d_add(d_mul(p, z), d_set(ATAN_INV_ODD[i]));
	D r = d_mul(d_set(4.0), d_add(a, d_mul(a, d_mul(z, p))));
	r = d_sel(inv, d_sub(d_set(PIO2), r), r);
	return df_keep_nan(d_narrow(d_neg_if(r, x)), xf);
}

/* y[i] = f(x[i]), i < n; y may be x */
#define DMATH_LINE(name, f)                                                 \
	static void name(const float *x, float *y, int64_t n)               \
	{                                                                   \
		int64_t i = 0;                                              \
		for (; i + DW <= n; i += DW)                                \
			df_store(y + i, f(df_load(x + i)));                 \
		if (i < n)                                                  \
			df_store_n(y + i, f(df_load_n(x + i, n - i)), n - i); \
	}
DMATH_LINE(vmath_dlog, dm_logf)
DMATH_LINE(vmath_datan, dm_atanf)
#undef DMATH_LINE

#endif
