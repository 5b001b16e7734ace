/*
 * f32-vmath/exp.h - v_exp, the vectorised exp of body.h (its header states
 * the algorithm and the error: <= 1 ulp for normal results), on its own so
 * that other kernels' variants (f32-attention) take the same approximation,
 * and v_exp_nonpos, a shorter one for x <= 0 (f32-attention's Softmax).
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

/* exp(x) for x <= 0 (Softmax's x - max; NaN stays NaN): x clamped to -104
 * below, exp(r) = 1 + r + r^2 P(r) with P of degree 3 (fitted for relative
 * error on [-ln 2 / 2, ln 2 / 2]: 1.05e-7) instead of 5: 2.26 ulp measured
 * over every float in [-104, 0] (f32-attention's Softmax) */
static inline V v_exp_nonpos(V x)
{
	V n, r = v_exp_reduce(vmax(vset(-104.0f), x), &n);
	V p = vset(8.3125382662e-03f);
	p = vfma(p, r, vset(4.1890133172e-02f));
	p = vfma(p, r, vset(1.6667114198e-01f));
	p = vfma(p, r, vset(4.9999231100e-01f));
	return v_exp_scale(vadd(vfma(p, vmul(r, r), r), vset(1.0f)), n);
}

#endif
