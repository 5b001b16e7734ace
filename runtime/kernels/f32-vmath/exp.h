/*
 * f32-vmath/exp.h - v_exp, the vectorised exp of body.h (its header states
 * the algorithm and the error: <= 1 ulp for normal results), on its own so
 * that other kernels' variants (f32-attention) take the same approximation,
 * and v_exp2_nonpos, 2^x for x <= 0 (f32-attention's Softmax), with
 * v_exp2_nonpos_frac, the same in fewer operations where the ISA has them.
 * The including file defines the vector type V and vset, vadd, vsub, vmul,
 * vfma, vmin, vmax and either VMATH_SCALEF(p, n) or vexp2i(n) (body.h).
 */
#ifndef KILN_F32_VMATH_EXP_H
#define KILN_F32_VMATH_EXP_H

/* x = n ln 2 + r: returns r (|r| <= ln 2 / 2), n = round(x / ln 2) in *n */
static inline V v_exp_reduce(V x, V *n_out)
{
	const V magic = vset(0x1.8p23f);  /* x + magic - magic rounds x to an integer */
	V n = vsub(vadd(vmul(x, vset(1.44269504088896341f)), magic), magic);
	V r = vfma(n, vset(-0.693359375f), x);  /* exact: ln2_hi has 9 bits, |n| <= 150 */
	*n_out = n;
	return vfma(n, vset(2.12194440e-4f), r);  /* - n * ln2_lo */
}

/* exp(x) = p 2^n: returns p, n (round(x / ln 2)) in *n */
static inline V v_exp_parts(V x, V *n_out)
{
	V r = v_exp_reduce(x, n_out);
	V p = vset(1.9875691500e-4f);
	p = vfma(p, r, vset(1.3981999507e-3f));
	p = vfma(p, r, vset(8.3334519073e-3f));
	p = vfma(p, r, vset(4.1665795894e-2f));
	p = vfma(p, r, vset(1.6666665459e-1f));
	p = vfma(p, r, vset(5.0000001201e-1f));
	return vadd(vfma(p, vmul(r, r), r), vset(1.0f));
}

/* p 2^n for n integral in [-150, 128], rounded once */
static inline V v_exp_scale(V p, V n)
{
#ifdef VMATH_SCALEF
	return VMATH_SCALEF(p, n);  /* p * 2^n in one instruction */
#else
	/* 2^n = 2^n1 * 2^n2 with both factors normal: p * 2^n1 is exact, so the
	 * product is rounded once, subnormal or not. */
	const V magic = vset(0x1.8p23f);
	V n1 = vsub(vadd(vmul(n, vset(0.5f)), magic), magic);
	return vmul(vmul(p, vexp2i(n1)), vexp2i(vsub(n, n1)));
#endif
}

static inline V v_exp(V x)
{
	x = vmax(vset(-104.0f), vmin(vset(89.0f), x));
	V n, p = v_exp_parts(x, &n);
	return v_exp_scale(p, n);
}

/* 2^x for x <= 0 (f32-attention's Softmax, whose scores are in units of
 * log2 e; NaN stays NaN): x clamped to -150 below, n = round(x), f = x - n
 * (exact, |f| <= 1/2), 2^f = 1 + f P(f) with P of degree 5 (fitted for
 * relative error on [-1/2, 1/2]: 2.0e-9), times 2^n rounded once: 0.95 ulp
 * measured over every float in [-150, 0] (tests/kernels/test_exp2.c).
 * VMATH_ROUND(x), when the including file defines it, rounds to the nearest
 * integer in one instruction. */
static inline V v_exp2_nonpos(V x)
{
	x = vmax(vset(-150.0f), x);
#ifdef VMATH_ROUND
	V n = VMATH_ROUND(x);
#else
	const V magic = vset(0x1.8p23f);  /* x + magic - magic rounds x to an integer */
	V n = vsub(vadd(x, magic), magic);
#endif
	V f = vsub(x, n);
	V p = vset(1.5353587514e-04f);
	p = vfma(p, f, vset(1.3398885494e-03f));
	p = vfma(p, f, vset(9.6184369177e-03f));
	p = vfma(p, f, vset(5.5503323674e-02f));
	p = vfma(p, f, vset(2.4022647738e-01f));
	p = vfma(p, f, vset(6.9314718246e-01f));
	return v_exp_scale(vfma(p, f, vset(1.0f)), n);
}

/* 2^x for x <= 0 in eight operations where the ISA reduces and scales in
 * one instruction each (AVX-512's vreduceps and vscalefps; f32-attention's
 * Softmax): f = x - floor(x) in [0, 1] (VMATH_FRAC(x), rounded once: 1 for
 * a tiny negative x, 0 for -inf), 2^f = 1 + f P(f) with P of degree 5
 * (fitted for relative error on [0, 1] with P(1) = 1: 6.5e-10), times
 * 2^floor(x) by VMATH_SCALEF, which takes the floor of its exponent operand
 * itself, so that the two agree whatever f rounded to: -inf, or anything
 * below -150, gives 0 with no clamp, and NaN stays NaN. 1.53 ulp measured
 * (tests/kernels/test_exp2.c, over the points where floor(x) steps too). */
#if defined(VMATH_FRAC) && defined(VMATH_SCALEF)
static inline V v_exp2_nonpos_frac(V x)
{
	V f = VMATH_FRAC(x);
	V p = vset(0x1.cc9ed4p-13f);
	p = vfma(p, f, vset(0x1.444f06p-10f));
	p = vfma(p, f, vset(0x1.3d5b52p-7f));
	p = vfma(p, f, vset(0x1.c68100p-5f));
	p = vfma(p, f, vset(0x1.ebfd90p-3f));
	p = vfma(p, f, vset(0x1.62e42cp-1f));
	return VMATH_SCALEF(vfma(p, f, vset(1.0f)), x);
}
#endif

#endif
