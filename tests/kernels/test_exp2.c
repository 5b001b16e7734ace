/*
 * test_exp2.c - f32-vmath/exp.h's v_exp2_nonpos and v_exp2_nonpos_frac (2^x
 * for x <= 0, the exponential of f32-attention's Softmax) against exp2 in
 * double, over every 31st float bit pattern in [-150, 0], every float in
 * [-150, -125] (results subnormal or near it), and every float within 4096
 * ulps of each -k - 1/2 and each -k (where round(x) and floor(x) step). The
 * algorithms are instantiated here on one float with fmaf, rintf, x -
 * floorf(x) and ldexpf of floorf standing for the vector FMA, round, reduce
 * and scalef instructions of the AVX-512 variant, which round the same way
 * (so this is its result bit for bit); the attention tests cover the
 * variants whole. Bounds, in ulps of the correctly rounded result
 * (subnormal spacing 2^-149 below FLT_MIN): v_exp2_nonpos 1.5, measured
 * 0.95; v_exp2_nonpos_frac 3, measured 1.53. Special values exactly: 2^0,
 * 2^-tiny = 1, 2^-1, 2^-126 and 2^-149 exact, -inf and everything below
 * -150 give 0, NaN gives NaN.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

typedef float V;
static inline V vset(float a) { return a; }
static inline V vadd(V a, V b) { return a + b; }
static inline V vsub(V a, V b) { return a - b; }
static inline V vmul(V a, V b) { return a * b; }
static inline V vfma(V a, V b, V c) { return fmaf(a, b, c); }
static inline V vmin(V a, V b) { return a < b ? a : b; }
/* maxps: the second operand when either is NaN */
static inline V vmax(V a, V b) { return a > b ? a : b; }
/* vscalefps: p 2^floor(n), NaN for a NaN n (converting NaN to int is
 * undefined), n saturated (2^-300 scales any float to 0) */
static inline V scalef(V p, V n)
{
	return isnan(n) ? n : ldexpf(p, (int)fmaxf(-300.0f, fminf(300.0f, floorf(n))));
}
/* vreduceps rounding down: x - floor(x) rounded to float, 0 for +-inf */
static inline V frac(V x) { return isinf(x) ? 0.0f : x - floorf(x); }
#define VMATH_SCALEF(p, n) scalef(p, n)
#define VMATH_ROUND(x) rintf(x)
#define VMATH_FRAC(x) frac(x)
#include "../../runtime/kernels/f32-vmath/exp.h"

static float from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

typedef V (*exp2_fn)(V);
typedef struct Worst {
	double ulp;
	float x;
} Worst;

static void check(exp2_fn fn, Worst *w, float x)
{
	double want = exp2((double)x), got = (double)fn(x);
	double ulp = want < (double)FLT_MIN ? 0x1p-149 : ldexp(1.0, ilogb(want) - 23);
	double e = fabs(got - want) / ulp;
	if (e > w->ulp)
		w->ulp = e, w->x = x;
}

/* every 31st float in [-150, 0], every float in [-150, -125] and within
 * 4096 ulps of each -k - 1/2 and of each -k (where round(x) and floor(x)
 * step) */
static Worst sweep(exp2_fn fn)
{
	Worst w = {0.0, 0.0f};
	const uint32_t neg150 = 0xc3160000u;  /* -150.0f */
	for (uint32_t u = 0x80000000u; u <= neg150; u += 31)
		check(fn, &w, from_bits(u));
	for (uint32_t u = 0xc2fa0000u; u <= neg150; u++)  /* [-150, -125] */
		check(fn, &w, from_bits(u));
	for (int k = 0; k < 150; k++)
		for (int half = 0; half < 2; half++) {
			float h = -(float)k - 0.5f * (float)half;
			uint32_t b;
			memcpy(&b, &h, sizeof b);
			for (uint32_t u = k == 0 && !half ? 0x80000000u : b - 4096; u <= b + 4096; u++)
				check(fn, &w, from_bits(u));
		}
	return w;
}

static void specials(exp2_fn fn, const char *name)
{
	char what[96];
	snprintf(what, sizeof what, "%s: 2^0 = 1", name);
	CHECK(fn(0.0f) == 1.0f && fn(-0.0f) == 1.0f, what);
	snprintf(what, sizeof what, "%s: 2^-inf = 0", name);
	CHECK(fn(-INFINITY) == 0.0f, what);
	snprintf(what, sizeof what, "%s: 2^x = 0 below -150", name);
	CHECK(fn(-150.0f) == 0.0f && fn(-1e30f) == 0.0f && fn(-FLT_MAX) == 0.0f, what);
	snprintf(what, sizeof what, "%s: 2^-149, 2^-126, 2^-1 exact", name);
	CHECK(fn(-149.0f) == 0x1p-149f && fn(-126.0f) == 0x1p-126f && fn(-1.0f) == 0.5f, what);
	snprintf(what, sizeof what, "%s: 2^-tiny = 1", name);
	CHECK(fn(-0x1p-149f) == 1.0f && fn(-1e-9f) == 1.0f, what);
	snprintf(what, sizeof what, "%s: NaN stays NaN", name);
	CHECK(isnan(fn(NAN)), what);
}

static V exp2_round(V x) { return v_exp2_nonpos(x); }
static V exp2_frac(V x) { return v_exp2_nonpos_frac(x); }

int main(void)
{
	Worst w = sweep(exp2_round);
	printf("v_exp2_nonpos: max error %.3f ulp at x = %a\n", w.ulp, (double)w.x);
	CHECK(w.ulp <= 1.5, "v_exp2_nonpos within 1.5 ulp over [-150, 0]");
	specials(exp2_round, "v_exp2_nonpos");
	w = sweep(exp2_frac);
	printf("v_exp2_nonpos_frac: max error %.3f ulp at x = %a\n", w.ulp, (double)w.x);
	CHECK(w.ulp <= 3.0, "v_exp2_nonpos_frac within 3 ulp over [-150, 0]");
	specials(exp2_frac, "v_exp2_nonpos_frac");
	return harness_report();
}
