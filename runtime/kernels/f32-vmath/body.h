/*
 * f32-vmath/body.h - the vector math algorithms, written once over a vector
 * type V of W float lanes; included by ref.c (W = 1, plain C), avx2.c
 * (W = 8) and avx512.c (W = 16) after each defines V, VM (a lane mask) and:
 *   vset vload vstore vload_n vstore_n   (the _n forms move the first n < W lanes)
 *   vadd vsub vmul vdiv vfma(a, b, c) = a * b + c
 *   vmin(a, b) = a < b ? a : b,  vmax(a, b) = a > b ? a : b   (a NaN gives b)
 *   vabs vcopysign(m, s) (m >= 0 gets the sign of s)  vlt vgt vge -> VM
 *   vsel(m, a, b) = m ? a : b,  vall(m) = every lane of m set,
 *   vexp2i(n) = 2^n for integral n in [-126, 127],
 *   or instead VMATH_SCALEF(p, n) = p * 2^n rounded once (AVX-512's vscalefps),
 *   which exp then takes for its two vexp2i factors (the same result)
 *   vkeep_n(a, n): lanes >= n set to 0
 *   Dacc, the 16 double lanes of the summation order below: dacc_zero,
 *   dacc_add(acc, a, i) (+= a, the W floats of elements i .. i+W-1, i a
 *   multiple of W), dacc_add_at(acc, p, i) (+= the W floats at p),
 *   dacc_total (the lanes summed in the fixed tree below),
 *   and optionally LN_ROWS (LayerNorm rows at a time; 2 if not defined) with
 *   dinv_sqrt(v, k): v[i] = 1 / sqrt(v[i]) in double for i < k <= LN_ROWS
 *
 * The approximations (maximum errors measured over every float in the
 * ranges named, tests/kernels/test_vmath.c, all variants; docs/kernels.md):
 *   exp    x clamped to [-104, 89] (outside, exp rounds to 0 or overflows
 *          to inf anyway); n = round(x / ln 2), r = x - n ln 2 in two parts
 *          (Cody-Waite), exp(r) by a degree-7 polynomial (Cephes's expf
 *          coefficients), scaled by 2^n as two factors 2^n1 * 2^n2 so that
 *          subnormal results are rounded once.  <= 1 ulp (normal results).
 *   tanh   |x| < 0.625: odd polynomial (Cephes's tanhf); else
 *          sign(x) (1 - 2 / (exp(2|x|) + 1)).  <= 2 ulp.
 *   erf    |x| < 0.921875: x P(x^2), degree 5 in x^2; else
 *          sign(x) (1 - exp(Q(|x| - 2) - x^2)) with Q of degree 8 fitting
 *          log(erfc(x)) + x^2 on [0.921875, 3.925]; +-1 beyond 3.925.
 *          <= 3 ulp.
 *   sigmoid  e = exp(-|x|), (x < 0 ? e : 1) / (1 + e): no cancellation on
 *          either side.  <= 2 ulp.
 *   gelu   x Phi(x), u = x / sqrt 2, a = |u|: for -1.2 < u < 1.5,
 *          Phi = 1/2 + x P(x^2), P of degree 8 (a vector whose lanes are
 *          all there computes only that); else Phi = erfc(a) / 2 (x < 0) or
 *          1 - erfc(a) / 2, erfc(a) = exp(Q(a - 1) - a^2) with Q of degree 11
 *          fitted to log(erfc a) + a^2 on [0, 3.925] (no cancellation); 0
 *          below x = -3.925 sqrt 2 (|gelu| < 1e-7 there, where 1 + erff(u)
 *          is 0 too). <= 7 ulp for x >= -1.3.
 * The LSTM cell (vmath_lstm_cell) takes shorter forms (lstm_sigmoid,
 * lstm_tanh): 1 / (1 + e^-x) and 2 / (1 + e^-2x) - 1, e^-kx by one reduction
 * and a degree-6 polynomial, then a true division (lstm_recip); sigmoid within 4 ulp
 * (x >= -60; below, within 1e-38 absolute: x is clamped at -88), tanh within
 * 2^-21 absolute; tests/kernels/test_rnn.c checks the cell, and these bounds,
 * under every variant.
 * Special values: NaN gives NaN; exp(-inf) = 0, exp(inf) = inf, tanh and
 * erf of +-inf are +-1, sigmoid of -inf/inf is 0/1; odd functions keep -0.
 * Every result depends only on the input value, never on its position.
 *
 * The summation order of Softmax's and LayerNorm's sums (issue 30: the same
 * in every variant, whatever W, so the same bits; docs/reproducibility.md):
 * element i of a line is widened to double and added into lane i % 16 of 16
 * double lanes, in increasing i; the total is t_j = lane j + lane j + 8
 * (j < 8), then ((t0 + t1) + (t2 + t3)) + ((t4 + t5) + (t6 + t7)). W = 16
 * keeps the lanes as two vectors, W = 8 as four (elements i with i % 16 = 8
 * go to the second pair), W = 1 as an array. LayerNorm's variance first sums
 * d^2 in 32 float chains (element i of a step of 32 in chain i % 32, by FMA),
 * LN_FBLOCK steps at a time, then adds chain j into lane j % 16 (chains 0-15,
 * then 16-31); the elements after the last whole step of 32 go into the
 * lanes one by one (d * d rounded, then added).
 */

/* ---- the elementary functions ---- */

#include "../f32-gemm/gemm.h" /* kiln_gemm_kc: the LSTM products' K blocks */
#include "exp.h"

/* c[0] z^(n-1) + ... + c[n-1] by Horner's rule with FMA */
static VMATH_INLINE V vpoly(V z, const float *c, int n)
{
	V p = vset(c[0]);
#pragma GCC unroll 16
	for (int i = 1; i < n; i++)
		p = vfma(p, z, vset(c[i]));
	return p;
}

static inline V v_tanh(V x)
{
	V a = vabs(x), z = vmul(x, x);
	V p = vset(-5.70498872745e-3f);
	p = vfma(p, z, vset(2.06390887954e-2f));
	p = vfma(p, z, vset(-5.37397155531e-2f));
	p = vfma(p, z, vset(1.33314422036e-1f));
	p = vfma(p, z, vset(-3.33332819422e-1f));
	V small = vfma(vmul(p, z), a, a);  /* of |x|, so that tanh(-0) is -0 */
	V big = vsub(vset(1.0f), vdiv(vset(2.0f), vadd(v_exp(vadd(a, a)), vset(1.0f))));
	return vcopysign(vsel(vlt(a, vset(0.625f)), small, big), x);
}

/* erf(x) / x on |x| < 0.921875, as a polynomial in z = x^2 */
static inline V v_erf_small(V z)
{
	static const float c[] = {-5.991138169e-04f, 4.993247334e-03f, -2.676667459e-02f,
	                          1.128181815e-01f, -3.761249483e-01f, 1.128379107e+00f};
	return vpoly(z, c, 6);
}

/* erfc(a) for a in [0.921875, 3.925] (a larger argument is clamped to 3.925) */
static inline V v_erfc_tail(V a)
{
	a = vmin(vset(3.925f), a);
	V t = vsub(a, vset(2.0f));
	static const float c[] = {1.630663405e-06f, -1.980322668e-05f, 1.352340914e-04f,
	                          -7.333899266e-04f, 3.571070964e-03f, -1.646471582e-02f,
	                          7.624904811e-02f, -4.181608558e-01f, -1.364941239e+00f};
	V q = vpoly(t, c, 9);
	return v_exp(vfma(vsub(vset(0.0f), a), a, q));
}

static inline V v_erf(V x)
{
	V a = vabs(x);
	V small = vmul(x, v_erf_small(vmul(x, x)));
	V big = vsel(vge(a, vset(3.925f)), vset(1.0f), vsub(vset(1.0f), v_erfc_tail(a)));
	return vsel(vlt(a, vset(0.921875f)), small, vcopysign(big, x));
}

static inline V v_sigmoid(V x)
{
	V e = v_exp(vsub(vset(0.0f), vabs(x)));
	return vdiv(vsel(vlt(x, vset(0.0f)), e, vset(1.0f)), vadd(vset(1.0f), e));
}

/* exp(g) for g in [-17.5, 0] (gelu's erfc): exp's algorithm without its
 * clamps, 2^n (n in [-26, 0]) a single normal factor */
static inline V exp_neg(V g)
{
	V n, p = v_exp_parts(g, &n);
#ifdef VMATH_SCALEF
	return VMATH_SCALEF(p, n);
#else
	return vmul(p, vexp2i(n));
#endif
}

/* (Phi(x) - 1/2) / x on -1.7 < x < 2.13, as a polynomial in w = x^2
 * (gelu's common case): erf(u) / u (u = x / sqrt 2) as a polynomial in u^2
 * of degree 8, its coefficients c_k (of u^2k) written as c_k / 2^k / (2
 * sqrt 2) */
static inline V v_phi_wide(V w)
{
	static const float c[] = {8.486615855e-10f, -3.113814984e-08f, 6.236329000e-07f,
	                          -9.336682524e-06f, 1.152690966e-04f, -1.187183312e-03f,
	                          9.973492473e-03f, -6.649036705e-02f, 3.989422917e-01f};
	return vpoly(w, c, 9);
}

/* gelu = x Phi(x), u = x / sqrt 2, a = |u|. For -1.2 < u < 1.5: Phi = 1/2 +
 * x P(x^2), P the polynomial of v_phi_wide (below -1.2, the sum would
 * cancel too much); a vector whose lanes all are there takes only that (the
 * same result: the other formula's lanes would be discarded). Else Phi = erfc(a) / 2 (x < 0) or 1 - erfc(a) / 2 (no
 * cancellation on either side), erfc(a) = exp(Q(a - 1) - a^2) with Q of
 * degree 11 fitted to log(erfc a) + a^2 on [0, 3.925] (a clamped to 3.925;
 * below x = -3.925 sqrt 2 the result is 0, as 0.5 x (1 + erff(u)) is in
 * float). */
static inline V v_gelu(V x)
{
	V small = vmul(x, vfma(x, v_phi_wide(vmul(x, x)), vset(0.5f)));
	/* -1.2 < u < 1.5: |x - 0.15 sqrt 2| < 1.35 sqrt 2 */
	VM is_small = vlt(vabs(vsub(x, vset(0.21213203f))), vset(1.9091883f));
	if (vall(is_small))
		return small;
	V a = vmin(vset(3.925f), vabs(vmul(x, vset(0.70710678118654752f))));
	static const float c[] = {8.384848371e-08f, -1.255493657e-06f, 8.019677807e-06f,
	                          -2.689465509e-05f, 2.905317342e-05f, 2.349601418e-04f,
	                          -1.979414606e-03f, 1.003582682e-02f, -4.156085104e-02f,
	                          1.568922400e-01f, -6.389675140e-01f, -8.496055007e-01f};
	V q = vpoly(vsub(a, vset(1.0f)), c, 12);
	V e = exp_neg(vfma(vsub(vset(0.0f), a), a, q));  /* erfc(a) */
	V phi = vsel(vlt(x, vset(0.0f)), vmul(e, vset(0.5f)), vfma(e, vset(-0.5f), vset(1.0f)));
	V big = vsel(vlt(x, vset(-5.5508f)), vset(0.0f), vmul(x, phi));
	return vsel(is_small, small, big);
}

/* ---- loops: one per function, the function chosen once per call ---- */

/* The activations and unary ops share one shape: V f(V x, V alpha, V beta). */
typedef V (*VmathFn)(V x, V alpha, V beta);

static VMATH_INLINE void vmath_map(const float *x, float *y, int64_t n, VmathFn f, V alpha,
                                   V beta)
{
	int64_t i = 0;
	for (; i + 2 * W <= n; i += 2 * W) {  /* two independent chains in flight */
		V a = f(vload(x + i), alpha, beta), b = f(vload(x + i + W), alpha, beta);
		vstore(y + i, a);
		vstore(y + i + W, b);
	}
	for (; i + W <= n; i += W)
		vstore(y + i, f(vload(x + i), alpha, beta));
	if (i < n)  /* the same lanes computed the same way: results do not depend on n */
		vstore_n(y + i, f(vload_n(x + i, n - i), alpha, beta), n - i);
}

static inline V f_exp(V x, V a, V b) { (void)a, (void)b; return v_exp(x); }
static inline V f_tanh(V x, V a, V b) { (void)a, (void)b; return v_tanh(x); }
static inline V f_erf(V x, V a, V b) { (void)a, (void)b; return v_erf(x); }
static inline V f_sigmoid(V x, V a, V b) { (void)a, (void)b; return v_sigmoid(x); }
static inline V f_gelu(V x, V a, V b) { (void)a, (void)b; return v_gelu(x); }
/* x > 0 ? x : 0 (NaN gives 0, as the scalar epilogue always did) */
static inline V f_relu(V x, V a, V b) { (void)a, (void)b; return vmax(x, vset(0.0f)); }
static inline V f_selu(V x, V a, V b)
{
	return vmul(b, vsel(vgt(x, vset(0.0f)), x, vsub(vmul(a, v_exp(x)), a)));
}
static inline V f_elu(V x, V a, V b)
{
	(void)b;
	return vsel(vge(x, vset(0.0f)), x, vmul(a, vsub(v_exp(x), vset(1.0f))));
}
static inline V f_leaky_relu(V x, V a, V b)
{
	(void)b;
	return vsel(vge(x, vset(0.0f)), x, vmul(a, x));
}
/* fmaxf(0, fminf(1, a x + b)): a NaN becomes 1, as fminf(1, NaN) is 1 */
static inline V f_hard_sigmoid(V x, V a, V b)
{
	return vmax(vmin(vfma(a, x, b), vset(1.0f)), vset(0.0f));
}
static inline V f_clip(V x, V a, V b)
{
	return vsel(vlt(x, a), a, vsel(vgt(x, b), b, x));
}

static void vmath_unary(int op, const float *x, float *y, int64_t n)
{
	V z = vset(0.0f);
	switch (op) {
	case KILN_UNARY_EXP: vmath_map(x, y, n, f_exp, z, z); break;
	case KILN_UNARY_TANH: vmath_map(x, y, n, f_tanh, z, z); break;
	case KILN_UNARY_ERF: vmath_map(x, y, n, f_erf, z, z); break;
	case KILN_UNARY_SIGMOID: vmath_map(x, y, n, f_sigmoid, z, z); break;
	case KILN_UNARY_GELU: vmath_map(x, y, n, f_gelu, z, z); break;
	case KILN_UNARY_LOG: vmath_dlog(x, y, n); break;     /* the variant's, in double */
	case KILN_UNARY_ATAN: vmath_datan(x, y, n); break;
	default: break;
	}
}

static void vmath_act(float *y, int64_t n, const kiln_epilogue *ep)
{
	V a = vset(ep->alpha), b = vset(ep->beta);
	switch (ep->act) {
	case KILN_ACT_RELU: vmath_map(y, y, n, f_relu, a, b); break;
	case KILN_ACT_SIGMOID: vmath_map(y, y, n, f_sigmoid, a, b); break;
	case KILN_ACT_TANH: vmath_map(y, y, n, f_tanh, a, b); break;
	case KILN_ACT_SELU: vmath_map(y, y, n, f_selu, a, b); break;
	case KILN_ACT_ELU: vmath_map(y, y, n, f_elu, a, b); break;
	case KILN_ACT_LEAKY_RELU: vmath_map(y, y, n, f_leaky_relu, a, b); break;
	case KILN_ACT_HARD_SIGMOID: vmath_map(y, y, n, f_hard_sigmoid, a, b); break;
	case KILN_ACT_CLIP: vmath_map(y, y, n, f_clip, a, b); break;
	case KILN_ACT_GELU: vmath_map(y, y, n, f_gelu, a, b); break;
	default: break;
	}
}

/* ---- Softmax, LayerNorm, BatchNorm rows ---- */

/* The largest of x[0..n), n >= 1 (a NaN may or may not win, as before). */
static float vmath_max(const float *x, int64_t n)
{
	int64_t i = 0;
	float m = x[0];
	if (n >= W) {
		V v = vload(x);
		for (i = W; i + W <= n; i += W)
			v = vmax(vload(x + i), v);
		float lanes[W];
		vstore(lanes, v);
		for (int k = 0; k < W; k++)
			m = lanes[k] > m ? lanes[k] : m;
	}
	for (; i < n; i++)
		m = x[i] > m ? x[i] : m;
	return m;
}

static void vmath_map_sub2(const float *x, float *y, int64_t n, V a, V b);

/* One contiguous line of a Softmax (is_log 0) or LogSoftmax: the maximum
 * subtracted, the exponentials summed in the 16 double lanes (the order
 * above, the same in every variant), then one more pass to scale or shift. */
static void vmath_softmax_line(const float *x, float *y, int64_t len, int is_log)
{
	V max = vset(vmath_max(x, len));
	Dacc acc;
	dacc_zero(&acc);
	int64_t i = 0;
	for (; i + W <= len; i += W) {
		V e = v_exp(vsub(vload(x + i), max));
		if (!is_log)
			vstore(y + i, e);
		dacc_add(&acc, e, i);
	}
	if (i < len) {  /* the missing lanes add +0 (no lane is -0) */
		V e = vkeep_n(v_exp(vsub(vload_n(x + i, len - i), max)), len - i);
		if (!is_log)
			vstore_n(y + i, e, len - i);
		dacc_add(&acc, e, i);
	}
	double sum = dacc_total(&acc);
	if (is_log) {
		/* (x - max) - log(sum), never log(softmax) */
		V log_sum = vset((float)kiln_log(sum));
		vmath_map_sub2(x, y, len, max, log_sum);
	} else {
		V inv = vset((float)(1.0 / sum));
		for (i = 0; i + W <= len; i += W)
			vstore(y + i, vmul(vload(y + i), inv));
		if (i < len)
			vstore_n(y + i, vmul(vload_n(y + i, len - i), inv), len - i);
	}
}

/* y = (x - a) - b over n elements */
static void vmath_map_sub2(const float *x, float *y, int64_t n, V a, V b)
{
	int64_t i = 0;
	for (; i + W <= n; i += W)
		vstore(y + i, vsub(vsub(vload(x + i), a), b));
	if (i < n)
		vstore_n(y + i, vsub(vsub(vload_n(x + i, n - i), a), b), n - i);
}

static VMATH_INLINE V vload_k(const float *p, int64_t k) { return k == W ? vload(p) : vload_n(p, k); }
static VMATH_INLINE void vstore_k(float *p, V a, int64_t k)
{
	if (k == W)
		vstore(p, a);
	else
		vstore_n(p, a, k);
}

/* x (+ res, stored in y when res is not NULL) of the vector at i, r lanes */
static VMATH_INLINE V ln_in(const float *x, const float *res, float *y, int64_t i, int64_t r)
{
	V v = r == W ? vload(x + i) : vload_n(x + i, r);
	if (!res)
		return v;
	v = vadd(v, r == W ? vload(res + i) : vload_n(res + i, r));
	vstore_k(y + i, v, r);
	return v;
}

/* Steps of 32 elements a float chain of the variance sums before it is
 * added into double lanes (ln_rows), and the vectors of a step */
#define LN_FBLOCK 4
enum { LN_STEP = 32, LN_NV = LN_STEP / W };

/* K (1 .. LN_ROWS) LayerNorm rows, n apart. The mean is summed in double lanes
 * and split into two floats hi + lo, so d = (x - hi) - lo keeps the digits
 * float would lose when the mean is large next to the spread (x - hi is exact
 * near the mean). The variance is the sum of d^2 in a second pass (never
 * E[x^2] - E[x]^2): d^2 added by FMA into 32 float chains (the order at the
 * top), each added into double lanes after at most LN_FBLOCK steps; the K
 * rows' 1 / sqrt(var + epsilon) together (dinv_sqrt), in
 * double; y = d * (inv_std * scale) + bias in float. The bound: d is within
 * 2 u of x - mean (u = 2^-24), d^2 within 4 u, a chain adds at most
 * LN_FBLOCK roundings (u each, every term >= 0), the double lanes nothing
 * that shows: the variance within (4 + LN_FBLOCK) u = 8 u, inv_std within
 * 4.5 u, inv_std * scale 5 u, y within 7.5 u (4.5e-7) of
 * |(x - mean) * inv_std * scale| + |bias| (tests/kernels/test_norm.c holds
 * every variant to that). Without a residual the mean's sum widens the row
 * as it loads it (dacc_add_at); with one, the sum x + res as it is stored in
 * y (a load of y's halves would wait for the store). A row's arithmetic is the same whether it
 * is taken alone or with others (K only interleaves their independent chains:
 * the sums', the square root's and the division's latencies overlap; LN_ROWS
 * is 8 where the ISA has the registers for it, AVX-512, else 2). */
#ifndef LN_ROWS
#define LN_ROWS 2
/* v[i] = 1 / sqrt(v[i]) for i < k (the variant has no vector form) */
static inline void dinv_sqrt(double *v, int k)
{
	for (int i = 0; i < k; i++)
		v[i] = 1.0 / sqrt(v[i]);
}
#endif
static VMATH_INLINE void ln_rows(int K, const float *x, const float *res, const float *scale,
                                 const float *bias, float *y, int64_t n, float epsilon)
{
	Dacc acc[LN_ROWS];
	V hi[LN_ROWS], lo[LN_ROWS], inv_std[LN_ROWS], s[LN_ROWS][LN_NV];
	double var[LN_ROWS], inv_n = 1.0 / (double)n;
	const float *xr[LN_ROWS];
#pragma GCC unroll 8
	for (int k = 0; k < K; k++) {
		dacc_zero(&acc[k]);
		xr[k] = res ? y + k * n : x + k * n;
	}
	int64_t i = 0;
	for (; i + W <= n; i += W)
#pragma GCC unroll 8
		for (int k = 0; k < K; k++) {
			if (res)
				dacc_add(&acc[k], ln_in(x + k * n, res + k * n, y + k * n, i, W), i);
			else
				dacc_add_at(&acc[k], xr[k] + i, i);
		}
#pragma GCC unroll 8
	for (int k = 0; k < K; k++) {
		if (i < n)  /* the missing lanes load as 0 and add +0 (no lane is -0) */
			dacc_add(&acc[k], ln_in(x + k * n, res ? res + k * n : NULL, y + k * n, i, n - i),
			         i);
		double mean = dacc_total(&acc[k]) * inv_n;
		float mean_hi = (float)mean;
		hi[k] = vset(mean_hi), lo[k] = vset((float)(mean - (double)mean_hi));
		dacc_zero(&acc[k]);
	}
	for (i = 0; i + LN_STEP <= n;) {
		int64_t i0 = i;
#pragma GCC unroll 8
		for (int k = 0; k < K; k++)
#pragma GCC unroll 32
			for (int v = 0; v < LN_NV; v++)
				s[k][v] = vset(0.0f);
		for (int b = 0; b < LN_FBLOCK && i + LN_STEP <= n; b++, i += LN_STEP)
#pragma GCC unroll 8
			for (int k = 0; k < K; k++)
#pragma GCC unroll 32
				for (int v = 0; v < LN_NV; v++) {
					V d = vsub(vsub(vload(xr[k] + i + v * W), hi[k]), lo[k]);
					s[k][v] = vfma(d, d, s[k][v]);
				}
#pragma GCC unroll 8
		for (int k = 0; k < K; k++)
#pragma GCC unroll 32
			for (int v = 0; v < LN_NV; v++)
				dacc_add(&acc[k], s[k][v], i0 + v * W);
	}
#pragma GCC unroll 8
	for (int k = 0; k < K; k++) {
		int64_t j = i;
		for (; j + W <= n; j += W) {
			V d = vsub(vsub(vload(xr[k] + j), hi[k]), lo[k]);
			dacc_add(&acc[k], vmul(d, d), j);
		}
		if (j < n) {
			V d = vkeep_n(vsub(vsub(vload_n(xr[k] + j, n - j), hi[k]), lo[k]), n - j);
			dacc_add(&acc[k], vmul(d, d), j);
		}
		var[k] = dacc_total(&acc[k]) * inv_n + (double)epsilon;
	}
	dinv_sqrt(var, K);  /* the K rows' 1 / sqrt(var + epsilon) at once */
#pragma GCC unroll 8
	for (int k = 0; k < K; k++)
		inv_std[k] = vset((float)var[k]);
#pragma GCC unroll 8
	for (int k = 0; k < K; k++) {
		float *yk = y + k * n;
		if (bias)
			for (i = 0; i + W <= n; i += W) {
				V d = vsub(vsub(vload(xr[k] + i), hi[k]), lo[k]);
				vstore(yk + i, vfma(d, vmul(inv_std[k], vload(scale + i)), vload(bias + i)));
			}
		else
			for (i = 0; i + W <= n; i += W) {
				V d = vsub(vsub(vload(xr[k] + i), hi[k]), lo[k]);
				vstore(yk + i, vmul(d, vmul(inv_std[k], vload(scale + i))));
			}
		if (i < n) {
			int64_t r = n - i;
			V d = vsub(vsub(vload_n(xr[k] + i, r), hi[k]), lo[k]);
			V g = vmul(inv_std[k], vload_n(scale + i, r));
			vstore_n(yk + i, bias ? vfma(d, g, vload_n(bias + i, r)) : vmul(d, g), r);
		}
	}
}

/* rows LayerNorm rows of n, n apart (kiln_f32_layernorm's layout), LN_ROWS at a time */
static void vmath_layernorm_rows(const float *x, const float *res, const float *scale,
                                 const float *bias, float *y, int64_t rows, int64_t n,
                                 float epsilon)
{
	int64_t o = 0;
	for (; o + LN_ROWS <= rows; o += LN_ROWS)
		ln_rows(LN_ROWS, x + o * n, res ? res + o * n : NULL, scale, bias, y + o * n, n, epsilon);
	for (; o < rows; o++)
		ln_rows(1, x + o * n, res ? res + o * n : NULL, scale, bias, y + o * n, n, epsilon);
}

/* y = (x - mean) * gain + bias over one BatchNorm plane: x - mean is exact
 * when they are close (both are floats), so nothing cancels. */
static void vmath_batchnorm_plane(const float *x, float *y, int64_t n, float mean, float gain,
                                  float bias)
{
	V m = vset(mean), g = vset(gain), b = vset(bias);
	int64_t i = 0;
	for (; i + W <= n; i += W)
		vstore(y + i, vfma(vsub(vload(x + i), m), g, b));
	if (i < n)
		vstore_n(y + i, vfma(vsub(vload_n(x + i, n - i), m), g, b), n - i);
}

/* ---- the LSTM cell ---- */

/* e^(-k x) for k = 1 or 2 (the LSTM cell's sigmoid and tanh), x clamped to
 * [-88 / k, 88 / k] (e^88 is finite; beyond, sigmoid and tanh are 0, 1 or
 * -1 in float anyway): n = round(-k x / ln 2) by one FMA with the rounding
 * constant, y = k (x + n ln 2 / k) (|y| <= ln 2 / 2, the reduction in two
 * exact-product FMAs), e^(-y) by a degree-6 polynomial in x + n ln 2 / k
 * (Horner; fitted for relative error on [-ln 2 / 2, ln 2 / 2]: 1.9e-9,
 * 0.84 ulp measured in float), times 2^n. 13 vector operations, where
 * v_exp and the sign handling of v_sigmoid and v_tanh (with a reciprocal) took
 * 25 and 35: at batch 1 the cells share the core with the stream of R^T,
 * and each operation of a cell was measured to cost about a cycle of it.
 * Here in place, x[i] = e^(-k x[i]) for i < N (at most 16), k = 1 for
 * i < NS and 2 after, stage by stage across the N vectors (lstm_cells_n);
 * lstm_exp_neg is one vector's. */
static VMATH_INLINE void lstm_exp_neg_n(V *x, const int NS, const int N)
{
	static const float q[] = {1.3836843427e-03f, -8.3748158067e-03f, 4.1668225080e-02f,
	                          -1.6666419804e-01f, 4.9999991059e-01f, -1.0f, 1.0f};
	const V magic = vset(0x1.8p23f);
	V n[16], s[16], p[16];
#pragma GCC unroll 16
	for (int i = 0; i < N; i++) {
		const float scale = i < NS ? 1.0f : 2.0f, m = 88.0f / scale;
		x[i] = vmax(vset(-m), vmin(vset(m), x[i]));
		n[i] = vsub(vfma(x[i], vset(-scale * 1.44269504088896341f), magic), magic);
	}
#pragma GCC unroll 16
	for (int i = 0; i < N; i++) {
		const float scale = i < NS ? 1.0f : 2.0f;
		s[i] = vfma(n[i], vset(0.693359375f / scale), x[i]);  /* exact: 9 bits times |n| <= 128 */
		s[i] = vfma(n[i], vset(-2.12194440e-4f / scale), s[i]);
		p[i] = vset(q[0] * scale * scale * scale * scale * scale * scale);
	}
#pragma GCC unroll 16
	for (int i = 0; i < N; i++) {
		const float scale = i < NS ? 1.0f : 2.0f;
		p[i] = vfma(p[i], s[i], vset(q[1] * scale * scale * scale * scale * scale));
	}
#pragma GCC unroll 16
	for (int i = 0; i < N; i++) {
		const float scale = i < NS ? 1.0f : 2.0f;
		p[i] = vfma(p[i], s[i], vset(q[2] * scale * scale * scale * scale));
	}
#pragma GCC unroll 16
	for (int i = 0; i < N; i++) {
		const float scale = i < NS ? 1.0f : 2.0f;
		p[i] = vfma(p[i], s[i], vset(q[3] * scale * scale * scale));
	}
#pragma GCC unroll 16
	for (int i = 0; i < N; i++) {
		const float scale = i < NS ? 1.0f : 2.0f;
		p[i] = vfma(p[i], s[i], vset(q[4] * scale * scale));
	}
#pragma GCC unroll 16
	for (int i = 0; i < N; i++) {
		const float scale = i < NS ? 1.0f : 2.0f;
		p[i] = vfma(p[i], s[i], vset(q[5] * scale));
	}
#pragma GCC unroll 16
	for (int i = 0; i < N; i++)
		x[i] = v_exp_scale(vfma(p[i], s[i], vset(q[6])), n[i]);
}

static VMATH_INLINE V lstm_exp_neg(V x, const int k)
{
	lstm_exp_neg_n(&x, k == 1, 1);
	return x;
}

/* 1 / a, the division: correctly rounded, so the same bits in every variant
 * (issue 30). A reciprocal estimate and a Newton step, which the SIMD
 * variants took before, give bits that depend on the ISA (rcp14 against
 * rcp) and, for the estimate, on the CPU vendor. */
static VMATH_INLINE V lstm_recip(V a)
{
	return vdiv(vset(1.0f), a);
}

/* The LSTM cell's sigmoid: 1 / (1 + e^-x) through lstm_recip (an e^-x of inf or
 * 0 gives 0 or 1). Within 4 ulp of sigmoid(x) for x >= -60 (measured worst
 * over 10^6 points of [-60, 30]: 2.4 ulp ref, 3.0 AVX-512, 3.5 AVX2); below,
 * within 1e-38 absolute (x is clamped at -88). */
static VMATH_INLINE V lstm_sigmoid(V x)
{
	return lstm_recip(vadd(vset(1.0f), lstm_exp_neg(x, 1)));
}

/* The LSTM cell's tanh: 2 / (1 + e^-2x) - 1 (sigmoid's form): within
 * 2^-21 of tanh(x) (absolute: the relative error grows as |x| goes to 0,
 * where tanh(x) ~ x; measured worst over 10^6 points of [-10, 10]: 2.8e-7
 * AVX-512, 1.8e-7 ref, and on AVX2, whose reciprocal estimate is coarser,
 * 4.6e-7 with the input gate's own error in the measurement). */
static VMATH_INLINE V lstm_tanh(V x)
{
	return vfma(lstm_recip(vadd(vset(1.0f), lstm_exp_neg(x, 2))), vset(2.0f), vset(-1.0f));
}

/* x bounded to [lo, hi] when clipping: fminf(hi, fmaxf(lo, x)), so NaN gives lo */
static VMATH_INLINE V lstm_clip(V x, V lo, V hi, int clip)
{
	return clip ? vmin(vmax(x, lo), hi) : x;
}

/* The LSTM cell of k <= W units of one row in two halves: lstm_cell_new
 * (gate sums gi, go, gf, gz; the peepholes at P, P + n, P + 2 n or P NULL)
 * stores the new state in c[0..k) and returns the inputs of the second
 * half, o's sum and the new state, both clipped; lstm_cell_out stores
 * h[0..k) = sigmoid(o) tanh(c). Every form of the cell runs these
 * operations (the batch-1 step runs a block's second half at the end of
 * the next block, lstm_row_blocks). */
typedef struct LstmHalf {
	V o, c;
} LstmHalf;

static VMATH_INLINE LstmHalf lstm_cell_new(V gi, V go, V gf, V gz, const float *P, float *c,
                                           int64_t n, int64_t k, V lo, V hi, int clip,
                                           int input_forget)
{
	V c0 = vload_k(c, k);
	if (P) {
		gi = vfma(vload_k(P, k), c0, gi);
		gf = vfma(vload_k(P + 2 * n, k), c0, gf);
	}
	V i = lstm_sigmoid(lstm_clip(gi, lo, hi, clip));
	V z = lstm_tanh(lstm_clip(gz, lo, hi, clip));
	V c1 = input_forget ? vfma(i, z, vmul(vsub(vset(1.0f), i), c0))
	                    : vfma(i, z, vmul(lstm_sigmoid(lstm_clip(gf, lo, hi, clip)), c0));
	if (P)
		go = vfma(vload_k(P + n, k), c1, go);
	vstore_k(c, c1, k);
	return (LstmHalf){lstm_clip(go, lo, hi, clip), lstm_clip(c1, lo, hi, clip)};
}

static VMATH_INLINE void lstm_cell_out(LstmHalf a, float *h, int64_t k)
{
	vstore_k(h, vmul(lstm_sigmoid(a.o), lstm_tanh(a.c)), k);
}

/* The new cell state of units j .. j+k-1, stored in c, and the output gate
 * o (returned). */
static VMATH_INLINE V lstm_state(V gi, V go, V gf, V gz, const float *P, float *c, int64_t n,
                                 int64_t j, int64_t k, V lo, V hi, int clip, int input_forget)
{
	return lstm_sigmoid(lstm_cell_new(gi, go, gf, gz, P ? P + j : NULL, c + j, n, k, lo, hi, clip,
	                                  input_forget)
	                        .o);
}

/* Units j .. j+k-1 (k <= W) of an LSTM cell from its gate inputs gi, go,
 * gf, gz (H R^T + xw); the peepholes P (gates n apart) or NULL. */
static VMATH_INLINE void lstm_units(V gi, V go, V gf, V gz, const float *P, float *c, float *h,
                                    int64_t n, int64_t j, int64_t k, V lo, V hi, int clip,
                                    int input_forget)
{
	lstm_cell_out(lstm_cell_new(gi, go, gf, gz, P ? P + j : NULL, c + j, n, k, lo, hi, clip,
	                            input_forget),
	              h + j, k);
}

/* The four gate sums g + x (i, o, f, c; n apart) of units j .. j+k-1 */
static VMATH_INLINE void lstm_gate_sums(const float *g, const float *x, int64_t n, int64_t j,
                                        int64_t k, V s[4])
{
#pragma GCC unroll 4
	for (int q = 0; q < 4; q++)
		s[q] = vadd(vload_k(g + q * n + j, k), vload_k(x + q * n + j, k));
}

/* Units j .. j+k-1 (k <= W) of vmath_lstm_cell; the gates n apart. */
static VMATH_INLINE void lstm_lanes(const float *g, const float *x, const float *P, float *c,
                                    float *h, int64_t n, int64_t j, int64_t k, V lo, V hi,
                                    int clip, int input_forget)
{
	V s[4];
	lstm_gate_sums(g, x, n, j, k, s);
	lstm_units(s[0], s[1], s[2], s[3], P, c, h, n, j, k, lo, hi, clip, input_forget);
}

/* Units 0 .. m-1 of one row of an LSTM step with ONNX's default activations
 * (sigmoid, tanh, tanh), in one pass: g the gates i, o, f, c of H R^T (gate q
 * of unit j at g[q * ld + j]) and x the input projection in the same layout
 * (their sum is each gate's input); P the peepholes i, o, f (same layout) or
 * NULL; has_clip bounds every activation's input
 * to [-clip, clip]; input_forget takes f = 1 - i. c[0..m) is updated
 * in place and h[0..m) written; h may alias nothing else. */
static void vmath_lstm_cell(const float *g, const float *x, const float *P, float *c, float *h,
                            int64_t m, int64_t ld, int has_clip, float clip, int input_forget)
{
	V hi = vset(clip), lo = vset(-clip);
	int64_t j = 0;
	for (; j + W <= m; j += W)
		lstm_lanes(g, x, P, c, h, ld, j, W, lo, hi, has_clip, input_forget);
	if (j < m)
		lstm_lanes(g, x, P, c, h, ld, j, m - j, lo, hi, has_clip, input_forget);
}

/* ---- the fused LSTM step of one gate block ---- */

/* The order of every LSTM step's product (issue 30): gate column n of a row
 * is sum over k of h[k] R[k][n], one FMA chain over the k of each K block
 * of kiln_gemm_kc(K) from 0, the blocks added in order (the later block's
 * sum + the total so far), then + xw: the GEMM's order (f32-gemm/gemm.h),
 * which f32-gemv's batch-1 product and the GEMM's tiles keep too. Every form
 * below (one row block by block, one row all columns at once, a tile of
 * rows, the narrow block read flat) follows it, so an LSTM gives the same
 * bits under every variant, at batch 1 and in every tile of a batch
 * (docs/reproducibility.md). */

/* A whole gate block (kernels.h) is 16 units: 64 columns of R^T, the first
 * 32 (gates i and o) in one b32 panel, the last 32 (f and c) in the next;
 * BLOCK_V vectors of a row of K span them. */
enum { BLOCK_UNITS = 16, BLOCK_V = 4 * BLOCK_UNITS / W };

/* acc[v] += x[k] R[k][v W ..] for k in [k0, k1): one whole block's row of
 * sums (R its two panels of 32 columns, K rows each; R1 the second). */
static VMATH_INLINE void block_sums(int64_t k0, int64_t k1, const float *x, const float *R,
                                    const float *R1, V *acc)
{
	enum { PANEL = 32 };
	for (int64_t k = k0; k < k1; k++) {
		V xv = vset(x[k]);
#pragma GCC unroll 64
		for (int v = 0; v < BLOCK_V; v++) {
			int col = v * W;
			acc[v] = vfma(xv, vload((col < PANEL ? R : R1) + k * PANEL + col % PANEL), acc[v]);
		}
	}
}

/* The narrow last gate block of a row, w = 1 to 8 units (4w <= 32 columns
 * of R^T: one b32 panel whose rows are 4w floats, K of them), when its
 * product runs inside a whole block's k loop (lstm_block_nv): xw, P, c and
 * h at that block's place. */
typedef struct LstmNarrow {
	const float *R, *xw, *P;
	float *c, *h;
	int64_t w;
} LstmNarrow;

/* The vectors a narrow block's row of 4w floats spans */
#define NARROW_NV(w) ((int)((4 * (w) + W - 1) / W))
#ifdef VMATH_COLS
/* nb's row k (4w floats, NV vectors, the last one masked) times x[k] into
 * acc: column e in lane e % W of acc[e / W], one chain per column. */
static VMATH_INLINE void narrow_row(const LstmNarrow *nb, const float *x, int64_t k, V *acc,
                                    const int NV)
{
	int64_t nw = 4 * nb->w;
	V xv = vset(x[k]);
	const float *r = nb->R + k * nw;
#pragma GCC unroll 2
	for (int p = 0; p < NV; p++)
		acc[p] = vfma(xv, vload_k(r + p * W, nw - p * W < W ? nw - p * W : W), acc[p]);
}

/* narrow_row for k in [k0, k1) */
static VMATH_INLINE void narrow_sums(const LstmNarrow *nb, const float *x, int64_t k0, int64_t k1,
                                     V *acc, const int NV)
{
	for (int64_t k = k0; k < k1; k++)
		narrow_row(nb, x, k, acc, NV);
}

/* nb's gate sums g[0..4) from its NV vectors of column sums: gate q of unit
 * e is column q w + e, + xw. */
static VMATH_INLINE void narrow_gates(const LstmNarrow *nb, const V *acc, V g[4], const int NV)
{
	int64_t w = nb->w;
	V z = vset(0.0f), f[3] = {z, z, z};
#pragma GCC unroll 2
	for (int p = 0; p < NV; p++)
		f[p] = acc[p];
#pragma GCC unroll 4
	for (int q = 0; q < 4; q++) {
		int64_t a = q * w, va = a / W;
		g[q] = vadd(VMATH_COLS(f[va], f[va + 1], a - va * W), vload_n(nb->xw + a, w));
	}
}

/* nb's cell from its NV vectors of column sums (narrow_gates); with
 * second, only its new c, the rest in *second (lstm_cell_new). */
static VMATH_INLINE void narrow_cell(const LstmNarrow *nb, const V *acc, V lo, V hi, int has_clip,
                                     int input_forget, const int NV, LstmHalf *second)
{
	int64_t w = nb->w;
	V g[4];
	narrow_gates(nb, acc, g, NV);
	if (second)
		*second = lstm_cell_new(g[0], g[1], g[2], g[3], nb->P, nb->c, w, w, lo, hi, has_clip,
		                        input_forget);
	else
		lstm_units(g[0], g[1], g[2], g[3], nb->P, nb->c, nb->h, w, 0, w, lo, hi, has_clip,
		           input_forget);
}

/* One step of the narrow block alone (one product over the whole blocks'
 * columns before it, vmath_lstm_row): its product row by row in registers
 * (the order above, per K block), then its cell, where f32-gemv's narrow
 * panel went through a buffer just stored and the cell read its gates back
 * through masked loads, neither of which the store buffer forwards. */
static VMATH_INLINE void lstm_narrow(int64_t K, const float *x, const LstmNarrow *nb, V lo, V hi,
                                     int has_clip, int input_forget, const int NV)
{
	const int64_t kc = kiln_gemm_kc(K);
	V acc[2], part[2];
#pragma GCC unroll 2
	for (int p = 0; p < NV; p++)
		acc[p] = vset(0.0f);
	narrow_sums(nb, x, 0, kc, acc, NV);
	for (int64_t k0 = kc; k0 < K; k0 += kc) {
#pragma GCC unroll 2
		for (int p = 0; p < NV; p++)
			part[p] = vset(0.0f);
		narrow_sums(nb, x, k0, K - k0 < kc ? K : k0 + kc, part, NV);
#pragma GCC unroll 2
		for (int p = 0; p < NV; p++)
			acc[p] = vadd(part[p], acc[p]);
	}
	narrow_cell(nb, acc, lo, hi, has_clip, input_forget, NV, NULL);
}
#endif

/* One K block [k0, k1) of lstm_block_nv's sums, each chain from 0: the
 * whole block's into acc, the narrow block's (NV > 0) into nacc. */
static VMATH_INLINE void block_nv_sums(int64_t k0, int64_t k1, const float *x, const float *R,
                                       const float *R1, const LstmNarrow *nb, V *acc, V *nacc,
                                       const int NV)
{
#pragma GCC unroll 64
	for (int v = 0; v < BLOCK_V; v++)
		acc[v] = vset(0.0f);
#pragma GCC unroll 2
	for (int p = 0; p < NV; p++)
		nacc[p] = vset(0.0f);
	if (NV == 0) {
		block_sums(k0, k1, x, R, R1, acc);
		return;
	}
#ifdef VMATH_COLS
	for (int64_t k = k0; k < k1; k++) {
		block_sums(k, k + 1, x, R, R1, acc);
		narrow_row(nb, x, k, nacc, NV);
	}
#else
	(void)nb;
#endif
}

/* One batch row's step of the 16 units of a whole gate block, the product
 * and the cell in one pass, the gate sums never leaving registers (W > 1):
 * gate q of unit e = sum over k of x[k] R[k][16 q + e] (R the block's two
 * panels: K rows of 32, then K rows of 32) in the order above, + xw[16 q +
 * e]; then the cell of vmath_lstm_cell with P the block's peepholes (16
 * apart) or NULL. h may alias nothing else (x neither).
 *
 * With NV > 0 (VMATH_COLS variants: NV = NARROW_NV(w) vectors, the narrow
 * block nb), the same loop also reads nb's row k (narrow_row) and runs nb's
 * cell after this block's. Its rows are read where this block's L2-bound
 * stream leaves the FMA units idle, instead of as a product and a cell of
 * their own.
 *
 * With last (W = 16: one vector a gate), the cells are split where their
 * chains of dependent operations are longest: this block's (and nb's)
 * first half (lstm_cell_new) runs here and its second half is left in
 * *last (*last_n) with h in *last_h (nb's pending if *has_n), after the
 * second halves left by the block before, if any (*last_h not NULL). Each
 * half is ~20 dependent operations, where the whole cell (~40, ~160
 * cycles) at the end of a block held up the next block's stream of R^T. */
static VMATH_INLINE void lstm_block_nv(int64_t K, const float *x, const float *R,
                                       const float *xw, const float *P, float *c, float *h,
                                       int has_clip, float clip, int input_forget,
                                       const LstmNarrow *nb, const int NV, LstmHalf *last,
                                       float **last_h, LstmHalf *last_n, int *has_n)
{
	enum { PANEL = 32 };
	const float *R1 = R + K * PANEL;
	const int64_t kc = kiln_gemm_kc(K);
	V acc[BLOCK_V], nacc[2];
	block_nv_sums(0, kc, x, R, R1, nb, acc, nacc, NV);
	for (int64_t k0 = kc; k0 < K; k0 += kc) {
		V part[BLOCK_V], npart[2];
		block_nv_sums(k0, K - k0 < kc ? K : k0 + kc, x, R, R1, nb, part, npart, NV);
#pragma GCC unroll 64
		for (int v = 0; v < BLOCK_V; v++)
			acc[v] = vadd(part[v], acc[v]);
#pragma GCC unroll 2
		for (int p = 0; p < NV; p++)
			nacc[p] = vadd(npart[p], nacc[p]);
	}
	V hi = vset(clip), lo = vset(-clip);
	enum { GV = BLOCK_UNITS / W };  /* vectors per gate */
	if (GV == 1 && last) {
		if (*last_h)
			lstm_cell_out(*last, *last_h, W);
		if (*has_n)
			lstm_cell_out(*last_n, nb->h, nb->w);
		*has_n = NV > 0;
		*last = lstm_cell_new(vadd(acc[0], vload(xw)), vadd(acc[1], vload(xw + BLOCK_UNITS)),
		                      vadd(acc[2], vload(xw + 2 * BLOCK_UNITS)),
		                      vadd(acc[3], vload(xw + 3 * BLOCK_UNITS)), P, c, BLOCK_UNITS, W,
		                      lo, hi, has_clip, input_forget);
		*last_h = h;
	} else {
#pragma GCC unroll 16
		for (int j = 0; j < GV; j++) {
			const float *xj = xw + j * W;
			lstm_units(vadd(acc[j], vload(xj)), vadd(acc[GV + j], vload(xj + BLOCK_UNITS)),
			           vadd(acc[2 * GV + j], vload(xj + 2 * BLOCK_UNITS)),
			           vadd(acc[3 * GV + j], vload(xj + 3 * BLOCK_UNITS)), P, c, h,
			           BLOCK_UNITS, j * W, W, lo, hi, has_clip, input_forget);
		}
	}
#ifdef VMATH_COLS
	if (NV > 0)
		narrow_cell(nb, nacc, lo, hi, has_clip, input_forget, NV, last ? last_n : NULL);
#else
	(void)nb, (void)nacc;
#endif
}

static VMATH_INLINE void lstm_block_of(int64_t K, const float *x, const float *R,
                                       const float *xw, const float *P, float *c, float *h,
                                       int has_clip, float clip, int input_forget)
{
	lstm_block_nv(K, x, R, xw, P, c, h, has_clip, clip, input_forget, NULL, 0, NULL, NULL, NULL,
	              NULL);
}

static void vmath_lstm_block(int64_t K, const float *x, const float *R, const float *xw,
                             const float *P, float *c, float *h, int has_clip, float clip,
                             int input_forget)
{
	lstm_block_of(K, x, R, xw, P, c, h, has_clip, clip, input_forget);
}

/* Units of one gate group for lstm_cells_n: k <= W units at c, h, the
 * peepholes at P (gates n apart) or NULL. */
typedef struct LstmGroup {
	const float *P;
	float *c, *h;
	int64_t n, k;
} LstmGroup;

/* The cells of NG <= 4 groups from their gate sums g (i, o, f, c each),
 * lstm_units' operations on each (the same bits), but stage by stage across
 * the groups: i, f and c's activations of every group as one lstm_exp_neg_n,
 * then every new c, then o and tanh(c) of every group as another, so that
 * the groups' chains are in flight together (one group after the other was
 * slower: H = 50 8.5 against 7.3 us, lstm_row_small_of). */
static VMATH_INLINE void lstm_cells_n(V g[][4], const LstmGroup *gr, V lo, V hi, int clip,
                                      int input_forget, const int NG)
{
	V c0[4], c1[4], a[12], e[8];
#pragma GCC unroll 4
	for (int i = 0; i < NG; i++) {
		c0[i] = vload_k(gr[i].c, gr[i].k);
		if (gr[i].P) {
			g[i][0] = vfma(vload_k(gr[i].P, gr[i].k), c0[i], g[i][0]);
			g[i][2] = vfma(vload_k(gr[i].P + 2 * gr[i].n, gr[i].k), c0[i], g[i][2]);
		}
	}
#pragma GCC unroll 4
	for (int i = 0; i < NG; i++) {
		a[i] = lstm_clip(g[i][0], lo, hi, clip);           /* i: sigmoid */
		a[NG + i] = lstm_clip(g[i][2], lo, hi, clip);      /* f: sigmoid */
		a[2 * NG + i] = lstm_clip(g[i][3], lo, hi, clip);  /* c: tanh */
	}
	lstm_exp_neg_n(a, 2 * NG, 3 * NG);
#pragma GCC unroll 12
	for (int i = 0; i < 3 * NG; i++)
		a[i] = lstm_recip(vadd(vset(1.0f), a[i]));
#pragma GCC unroll 4
	for (int i = 0; i < NG; i++) {
		V ig = a[i], z = vfma(a[2 * NG + i], vset(2.0f), vset(-1.0f));
		c1[i] = input_forget ? vfma(ig, z, vmul(vsub(vset(1.0f), ig), c0[i]))
		                     : vfma(ig, z, vmul(a[NG + i], c0[i]));
		vstore_k(gr[i].c, c1[i], gr[i].k);
		V o = g[i][1];
		if (gr[i].P)
			o = vfma(vload_k(gr[i].P + gr[i].n, gr[i].k), c1[i], o);
		e[i] = lstm_clip(o, lo, hi, clip);                 /* o: sigmoid */
		e[NG + i] = lstm_clip(c1[i], lo, hi, clip);        /* tanh(c) */
	}
	lstm_exp_neg_n(e, NG, 2 * NG);
#pragma GCC unroll 8
	for (int i = 0; i < 2 * NG; i++)
		e[i] = lstm_recip(vadd(vset(1.0f), e[i]));
#pragma GCC unroll 4
	for (int i = 0; i < NG; i++)
		vstore_k(gr[i].h, vmul(e[i], vfma(e[NG + i], vset(2.0f), vset(-1.0f))), gr[i].k);
}

/* The first half of lstm_lanes for units j .. j+k-1 (k <= W) of a block
 * (gates n apart): c = the new state, and the output gate o stored in h
 * (h = o tanh(c) is lstm_cells_h's, after every block's first half). */
static VMATH_INLINE void lstm_lanes_c(const float *g, const float *x, const float *P, float *c,
                                      float *h, int64_t n, int64_t j, int64_t k, V lo, V hi,
                                      int clip, int input_forget)
{
	V s[4];
	lstm_gate_sums(g, x, n, j, k, s);
	vstore_k(h + j, lstm_state(s[0], s[1], s[2], s[3], P, c, n, j, k, lo, hi, clip, input_forget),
	         k);
}

/* The second half: h = o tanh(c) for units j .. j+k-1, o in h. */
static VMATH_INLINE void lstm_cells_h(const float *c, float *h, int64_t j, int64_t k, V lo, V hi,
                                      int clip)
{
	vstore_k(h + j, vmul(vload_k(h + j, k), lstm_tanh(lstm_clip(vload_k(c + j, k), lo, hi, clip))),
	         k);
}

/* Units j .. j+k-1 of a block: lstm_lanes, or with two_pass its first half
 * (lstm_lanes_c). */
static VMATH_INLINE void lstm_lanes_or_c(const float *g, const float *x, const float *P, float *c,
                                         float *h, int64_t n, int64_t j, int64_t k, V lo, V hi,
                                         int clip, int input_forget, int two_pass)
{
	if (two_pass)
		lstm_lanes_c(g, x, P, c, h, n, j, k, lo, hi, clip, input_forget);
	else
		lstm_lanes(g, x, P, c, h, n, j, k, lo, hi, clip, input_forget);
}

/* One row's cells of an LSTM step in gate blocks (kernels.h): units
 * 0 .. H-1, block by block (the last one w = H - 16 b units wide), each
 * as vmath_lstm_cell of its block (g, x and P at 64 b, ld w); with two_pass
 * every block's new c (and o, kept in h) first, then every h = o tanh(c). */
static VMATH_INLINE void lstm_cells_of(const float *g, const float *x, const float *P, float *c,
                                       float *h, int64_t H, int has_clip, float clip,
                                       int input_forget, int two_pass)
{
	V hi = vset(clip), lo = vset(-clip);
	for (int64_t u = 0; u < H; u += BLOCK_UNITS) {
		int64_t w = H - u < BLOCK_UNITS ? H - u : BLOCK_UNITS, b = 4 * u;
		const float *Pb = P ? P + b : NULL;
		if (w == BLOCK_UNITS) {
#pragma GCC unroll 16
			for (int64_t j = 0; j < BLOCK_UNITS; j += W)
				lstm_lanes_or_c(g + b, x + b, Pb, c + u, h + u, BLOCK_UNITS, j, W, lo, hi,
				                has_clip, input_forget, two_pass);
			continue;
		}
		int64_t j = 0;
		for (; j + W <= w; j += W)
			lstm_lanes_or_c(g + b, x + b, Pb, c + u, h + u, w, j, W, lo, hi, has_clip,
			                input_forget, two_pass);
		if (j < w)
			lstm_lanes_or_c(g + b, x + b, Pb, c + u, h + u, w, j, w - j, lo, hi, has_clip,
			                input_forget, two_pass);
	}
	if (!two_pass)
		return;
	int64_t j = 0;
	for (; j + W <= H; j += W)
		lstm_cells_h(c, h, j, W, lo, hi, has_clip);
	if (j < H)
		lstm_cells_h(c, h, j, H - j, lo, hi, has_clip);
}

/* vmath_lstm_cells: one pass per row, so the blocks' chains of dependent
 * operations overlap. */
static void vmath_lstm_cells(const float *g, const float *x, const float *P, float *c, float *h,
                             int64_t H, int has_clip, float clip, int input_forget)
{
	lstm_cells_of(g, x, P, c, h, H, has_clip, clip, input_forget, 0);
}

/* ---- several rows' step of the whole gate blocks: product and cells ---- */

/* Rows of a tile of lstm_rows: as many as keep a whole block's sums in
 * registers with the row of R^T they multiply: AVX-512 5 rows x 4 zmm (6
 * rows spilled four sums in GCC's k loop, 6 + 5 + 5 rows 720 us against
 * 4 x 4 rows 620 us, H = 150, B = 16; 3 rows 790 us); the other variants
 * one row (AVX2: 8 ymm). */
enum { LSTM_TILE_MAX = 5, LSTM_TILE_ROWS = BLOCK_V <= 4 ? LSTM_TILE_MAX : 1 };

/* The sums of one K block [k0, k1) of lstm_rows_tile, each from 0: row i's
 * in acc[i] (R the block's two panels, K rows each). */
static VMATH_INLINE void rows_tile_sums(int64_t k0, int64_t k1, const float *x, int64_t ldx,
                                        const float *R, int64_t K, V acc[][BLOCK_V], const int NR)
{
	enum { PANEL = 32 };
	const float *R1 = R + K * PANEL;
#pragma GCC unroll 8
	for (int i = 0; i < NR; i++)
#pragma GCC unroll 64
		for (int v = 0; v < BLOCK_V; v++)
			acc[i][v] = vset(0.0f);
	for (int64_t k = k0; k < k1; k++) {
		V r[BLOCK_V];
#pragma GCC unroll 64
		for (int v = 0; v < BLOCK_V; v++) {
			int col = v * W;
			r[v] = vload((col < PANEL ? R : R1) + k * PANEL + col % PANEL);
		}
#pragma GCC unroll 8
		for (int i = 0; i < NR; i++) {
			V xv = vset(x[i * ldx + k]);
#pragma GCC unroll 64
			for (int v = 0; v < BLOCK_V; v++)
				acc[i][v] = vfma(xv, r[v], acc[i][v]);
		}
	}
}

/* Rows 0 .. NR-1 of one whole gate block (its two b32 panels R, K rows):
 * x[i * ldx + k] R, each sum in the order above (one FMA chain per K block,
 * as the GEMM core's tile sums it), + xw (row i at i * ldxw), then the cells (c and h, row i at
 * i * ldh; P the block's peepholes or NULL): on AVX-512 the rows' cells
 * stage by stage (lstm_cells_n), else each row's as lstm_units. */
static VMATH_INLINE void lstm_rows_tile(int64_t K, const float *x, int64_t ldx, const float *R,
                                        const float *xw, int64_t ldxw, const float *P, float *c,
                                        float *h, int64_t ldh, float bound, int clip,
                                        int input_forget, const int NR)
{
	enum { GV = BLOCK_UNITS / W };
	const int64_t kc = kiln_gemm_kc(K);
	V acc[LSTM_TILE_MAX][BLOCK_V];
	rows_tile_sums(0, kc, x, ldx, R, K, acc, NR);
	for (int64_t k0 = kc; k0 < K; k0 += kc) {  /* K > GEMM_KBLOCK: the later K blocks */
		V part[LSTM_TILE_MAX][BLOCK_V];
		rows_tile_sums(k0, K - k0 < kc ? K : k0 + kc, x, ldx, R, K, part, NR);
#pragma GCC unroll 8
		for (int i = 0; i < NR; i++)
#pragma GCC unroll 64
			for (int v = 0; v < BLOCK_V; v++)
				acc[i][v] = vadd(part[i][v], acc[i][v]);
	}
	V hi = vset(bound), lo = vset(-bound);  /* here: not held across the k loop */
	if (GV == 1) {
		V g[LSTM_TILE_MAX][4];
		LstmGroup gr[LSTM_TILE_MAX];
#pragma GCC unroll 8
		for (int i = 0; i < NR; i++) {
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++)
				g[i][q] = vadd(acc[i][q], vload(xw + i * ldxw + q * BLOCK_UNITS));
			gr[i] = (LstmGroup){.P = P, .c = c + i * ldh, .h = h + i * ldh, .n = BLOCK_UNITS,
			                    .k = W};
		}
		const int N0 = NR > 4 ? 3 : NR;  /* 4 (3 + 1 left one chain alone), 5 = 3 + 2 */
		lstm_cells_n(g, gr, lo, hi, clip, input_forget, N0);
		if (NR > N0)
			lstm_cells_n(g + N0, gr + N0, lo, hi, clip, input_forget, NR - N0);
		return;
	}
#pragma GCC unroll 8
	for (int i = 0; i < NR; i++)
#pragma GCC unroll 16
		for (int j = 0; j < GV; j++) {
			const float *xj = xw + i * ldxw + j * W;
			lstm_units(vadd(acc[i][j], vload(xj)), vadd(acc[i][GV + j], vload(xj + BLOCK_UNITS)),
			           vadd(acc[i][2 * GV + j], vload(xj + 2 * BLOCK_UNITS)),
			           vadd(acc[i][3 * GV + j], vload(xj + 3 * BLOCK_UNITS)), P, c + i * ldh,
			           h + i * ldh, BLOCK_UNITS, j * W, W, lo, hi, clip, input_forget);
		}
}

/* One step of the whole gate blocks of rows 0 .. rows-1 (vmath.h), block by
 * block, each block's rows in tiles of up to LSTM_TILE_ROWS spread evenly
 * (the block's R^T, 64 K floats, stays in L1 while its tiles pass over it). */
static void vmath_lstm_rows(int64_t rows, int64_t H, const float *x, const float *R,
                            const float *xw, int64_t ldxw, const float *P, float *c, float *h,
                            int has_clip, float clip, int input_forget)
{
	int64_t nt = (rows + LSTM_TILE_ROWS - 1) / LSTM_TILE_ROWS;
	for (int64_t u = 0; u + BLOCK_UNITS <= H; u += BLOCK_UNITS) {
		int64_t b = 4 * u;
		for (int64_t ti = 0; ti < nt; ti++) {
			int64_t m = ti * rows / nt, mr = (ti + 1) * rows / nt - m;
#define LSTM_TILE(nr)                                                                              \
	lstm_rows_tile(H, x + m * H, H, R + b * H, xw + m * ldxw + b, ldxw, P ? P + b : NULL,         \
	               c + m * H + u, h + m * H + u, H, clip, has_clip, input_forget, nr)
			if (LSTM_TILE_ROWS == 1) {
				LSTM_TILE(1);
				continue;
			}
			switch (mr) {
			case 5: LSTM_TILE(5); break;
			case 4: LSTM_TILE(4); break;
			case 3: LSTM_TILE(3); break;
			case 2: LSTM_TILE(2); break;
			default: LSTM_TILE(1); break;
			}
#undef LSTM_TILE
		}
	}
}

/* The same cells in two passes, batch 1's (vmath_lstm_row): split so that
 * no block's chain c -> tanh(c) -> h waits behind the next block's gates
 * (the same operations on every element as lstm_lanes): with one pass the
 * end of each block's chain was exposed (H = 50, T = 25, AVX-512, kernel
 * alone: 10.47 -> 10.22 us). Not for more rows: deepjet_test (LSTMs of 48,
 * 20 and 16 units) at b256 took 6.04 / 5.91 ms with it against 5.63 ms. */
static void lstm_cells_2pass(const float *g, const float *x, const float *P, float *c, float *h,
                             int64_t H, int has_clip, float clip, int input_forget)
{
	lstm_cells_of(g, x, P, c, h, H, has_clip, clip, input_forget, 1);
}

/* ---- the whole recurrence of one batch row ---- */

/* One step of rnn.c's lstm_row_gemv, block after block: each whole block's
 * product and cell in one pass (lstm_block_of, inlined here). The narrow
 * last block, if any, goes into the middle whole block's loop
 * (lstm_block_nv) where the variant has VMATH_COLS and there is a whole
 * block; else its product goes through a->gemv, then its cell, as the
 * first block. Forward on even steps, backward on odd ones, so the block a
 * step reads last is the one the next step reads first (whole blocks at
 * both ends: each of them fits in L1, a whole block and the narrow one did
 * not, so the even steps read both from L2). On AVX-512 each whole block's
 * cell (and the narrow one's) is finished after the next block's product
 * (lstm_block_nv's last), the last ones' at the end of the step. */
static VMATH_INLINE void lstm_row_blocks(const VmathLstmRow *a, const float *xw, int64_t s)
{
	int64_t H = a->H, nwhole = H / BLOCK_UNITS, w = H % BLOCK_UNITS;
	V hi = vset(a->clip), lo = vset(-a->clip);
#ifdef VMATH_COLS
	int fuse = (w == 2 || w == 4 || w == 6 || w == 8) && nwhole > 0;
#else
	int fuse = 0;
#endif
	int64_t nblk = nwhole + (w > 0 && !fuse);
	int64_t un = nwhole * BLOCK_UNITS, bn = 4 * un;  /* the narrow block's unit and column */
	LstmNarrow nb = {.R = a->R + bn * H, .xw = xw + bn, .P = a->P ? a->P + bn : NULL,
	                 .c = a->c + un, .h = a->h + un, .w = w};
	LstmHalf last = {lo, lo}, last_n = {lo, lo};  /* the second halves of the last whole */
	float *last_h = NULL;  /* block's cell and the narrow one's; where the first's h goes */
	int has_n = 0;         /* if pending; whether the second is */
	for (int64_t i = 0; i < nblk; i++) {
		int64_t n = s % 2 ? nblk - 1 - i : i;  /* the n-th of: [narrow,] 0, 1, ... */
		if (nblk > nwhole && n-- == 0) {
			float *g = a->g + bn;
			a->gemv(4 * w, H, a->x, nb.R, NULL, g);
			int64_t j = 0;
			for (; j + W <= w; j += W)
				lstm_lanes(g, nb.xw, nb.P, nb.c, nb.h, w, j, W, lo, hi, a->has_clip,
				           a->input_forget);
			if (j < w)
				lstm_lanes(g, nb.xw, nb.P, nb.c, nb.h, w, j, w - j, lo, hi, a->has_clip,
				           a->input_forget);
			continue;
		}
		int64_t u = n * BLOCK_UNITS, b = 4 * u;
		const float *R = a->R + b * H, *P = a->P ? a->P + b : NULL;
		float *c = a->c + u, *h = a->h + u;
		int NV = fuse && n == nwhole / 2 ? NARROW_NV(w) : 0;
#define LSTM_BLOCK(nv)                                                                             \
	lstm_block_nv(H, a->x, R, xw + b, P, c, h, a->has_clip, a->clip, a->input_forget, &nb, nv,     \
	              &last, &last_h, &last_n, &has_n)
		switch (NV) {
		case 0: LSTM_BLOCK(0); break;
		case 1: LSTM_BLOCK(1); break;
		default: LSTM_BLOCK(2); break;
		}
#undef LSTM_BLOCK
	}
	if (last_h)
		lstm_cell_out(last, last_h, W);
	if (has_n)
		lstm_cell_out(last_n, nb.h, w);
}

/* One step of one product over all 4H columns (not by_blocks) where the
 * narrow last block is one lstm_narrow takes (VMATH_COLS; w = 2, 4, 6, 8):
 * the product over the whole blocks' columns, then the narrow block's
 * product and cell (before any h is written: both products read h), then
 * the whole blocks' cells (H = 50, I = 4, T = 25, kernel alone: 8.65 ->
 * 8.4 us; H = 52 9.85 -> 9.15 us; the narrow block's sums before the
 * product, its cell after: 8.86 and 9.6-10.4 us). Returns 0 (nothing done)
 * otherwise. */
static VMATH_INLINE int lstm_row_split(const VmathLstmRow *a, const float *xw)
{
#ifdef VMATH_COLS
	int64_t H = a->H, w = H % BLOCK_UNITS, hw = H - w, b = 4 * hw;
	if (!(w == 2 || w == 4 || w == 6 || w == 8) || hw == 0)
		return 0;
	a->gemv(b, H, a->h, a->R, NULL, a->g);
	LstmNarrow nb = {.R = a->R + b * H, .xw = xw + b, .P = a->P ? a->P + b : NULL,
	                 .c = a->c + hw, .h = a->h + hw, .w = w};
	V hi = vset(a->clip), lo = vset(-a->clip);
	if (NARROW_NV(w) == 1)
		lstm_narrow(H, a->h, &nb, lo, hi, a->has_clip, a->input_forget, 1);
	else
		lstm_narrow(H, a->h, &nb, lo, hi, a->has_clip, a->input_forget, 2);
	lstm_cells_2pass(a->g, xw, a->P, a->c, a->h, hw, a->has_clip, a->clip, a->input_forget);
	return 1;
#else
	(void)a, (void)xw;
	return 0;
#endif
}

#ifdef VMATH_COLS
/* Row k of the product of lstm_row_small: each whole-block vector v
 * (panel v / 2, half v % 2) into acc[v], the narrow block's row into nacc
 * (narrow_row). */
static VMATH_INLINE void small_row(int64_t K, const float *x, const float *R, int64_t k, V *acc,
                                   const LstmNarrow *nb, V *nacc, const int NB, const int NV)
{
	enum { PANEL = 32 };
	V xv = vset(x[k]);
#pragma GCC unroll 12
	for (int v = 0; v < 4 * NB; v++)
		acc[v] = vfma(xv, vload(R + (v / 2) * K * PANEL + k * PANEL + (v % 2) * W), acc[v]);
	if (NV > 0)
		narrow_row(nb, x, k, nacc, NV);
}

/* Every step of one batch row where 4H is NB whole blocks (2 or 3) and a
 * narrow block of w = H - 16 NB <= 8 units (NV vectors a row; none if
 * w = 0): the product over all 4H columns with every sum in a register
 * from k = 0 to the cell, one FMA chain per column (H <= 52: one K block,
 * the order above; 4 NB + NV chains side by side hide the FMA latency),
 * then the cells straight from the registers, every group's together
 * (lstm_cells_n), without storing the gates and reading them back (H =
 * 50, I = 4, T = 25, kernel alone, with the former two chains a column:
 * 9.2-9.9 -> 7.3 us; with the cells one group after another 8.5 us). */
static VMATH_INLINE void lstm_row_small_of(const VmathLstmRow *a, const int NB, const int NV)
{
	int64_t H = a->H, K = H, hw = NB * BLOCK_UNITS, b = 4 * hw;
	V hi = vset(a->clip), lo = vset(-a->clip);
	LstmNarrow nb = {.R = a->R + b * K, .P = a->P ? a->P + b : NULL, .c = a->c + hw,
	                 .h = a->h + hw, .w = H - hw};
	float *h = a->h;
	for (int64_t s = 0; s < a->len; s++) {
		int64_t t = a->reverse ? a->len - 1 - s : s;
		const float *xw = a->xw + t * a->xw_t;
		V acc[12], nacc[2];
#pragma GCC unroll 12
		for (int v = 0; v < 4 * NB; v++)
			acc[v] = vset(0.0f);
#pragma GCC unroll 2
		for (int p = 0; p < NV; p++)
			nacc[p] = vset(0.0f);
		for (int64_t k = 0; k < K; k++)
			small_row(K, h, a->R, k, acc, &nb, nacc, NB, NV);
		V g[4][4];
		LstmGroup gr[4];
#pragma GCC unroll 3
		for (int blk = 0; blk < NB; blk++) {
			const float *xb = xw + 4 * BLOCK_UNITS * blk;
#pragma GCC unroll 4
			for (int q = 0; q < 4; q++)
				g[blk][q] = vadd(acc[4 * blk + q], vload(xb + q * BLOCK_UNITS));
			gr[blk] = (LstmGroup){.P = a->P ? a->P + 4 * BLOCK_UNITS * blk : NULL,
			                      .c = a->c + BLOCK_UNITS * blk, .h = h + BLOCK_UNITS * blk,
			                      .n = BLOCK_UNITS, .k = W};
		}
		if (NV > 0) {
			nb.xw = xw + b;
			narrow_gates(&nb, nacc, g[NB], NV);
			gr[NB] = (LstmGroup){.P = nb.P, .c = nb.c, .h = nb.h, .n = nb.w, .k = nb.w};
		}
		lstm_cells_n(g, gr, lo, hi, a->has_clip, a->input_forget, NB + (NV > 0));
		if (a->Y)
			memcpy(a->Y + t * a->y_t, h, (size_t)H * sizeof *a->Y);
	}
}

/* The whole recurrence through lstm_row_small_of where H is 32 to 52 units
 * with an even narrow block (w = 0, 2, 4, 6, 8; 2 or 3 whole blocks);
 * returns 0 (nothing done) otherwise. */
static int lstm_row_small(const VmathLstmRow *a)
{
	switch (a->H) {
	case 32: lstm_row_small_of(a, 2, 0); return 1;
	case 34: lstm_row_small_of(a, 2, 1); return 1;
	case 36: lstm_row_small_of(a, 2, 1); return 1;
	case 38: lstm_row_small_of(a, 2, 2); return 1;
	case 40: lstm_row_small_of(a, 2, 2); return 1;
	case 48: lstm_row_small_of(a, 3, 0); return 1;
	case 50: lstm_row_small_of(a, 3, 1); return 1;
	case 52: lstm_row_small_of(a, 3, 1); return 1;
	default: return 0;
	}
}
#else
static int lstm_row_small(const VmathLstmRow *a)
{
	(void)a;
	return 0;
}
#endif

/* Every step of one batch row of an LSTM in gate blocks (VmathLstmRow): the
 * same arithmetic as rnn.c's step at batch 1 (lstm_row_gemv, or one product
 * over all 4H columns and then the cells: lstm_row_small where it applies,
 * else the product and the cells in two passes), with the
 * cells called directly instead of through the variant table once per block
 * and step. */
static void vmath_lstm_row(const VmathLstmRow *a)
{
	int64_t H = a->H;
	if (!a->by_blocks && lstm_row_small(a))
		return;
	for (int64_t s = 0; s < a->len; s++) {
		int64_t t = a->reverse ? a->len - 1 - s : s;
		const float *xw = a->xw + t * a->xw_t;
		if (a->by_blocks) {
			memcpy(a->x, a->h, (size_t)H * sizeof *a->x);  /* h_{t-1}: the cells write h */
			lstm_row_blocks(a, xw, s);
		} else if (!lstm_row_split(a, xw)) {
			a->gemv(4 * H, H, a->h, a->R, NULL, a->g);
			lstm_cells_2pass(a->g, xw, a->P, a->c, a->h, H, a->has_clip, a->clip,
			                 a->input_forget);
		}
		if (a->Y)
			memcpy(a->Y + t * a->y_t, a->h, (size_t)H * sizeof *a->Y);
	}
}
