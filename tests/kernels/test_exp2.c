/*
 * test_exp2.c - f32-vmath/exp.h's v_exp2_nonpos (2^x for x <= 0, the
 * exponential of f32-attention's Softmax) against exp2 in double, over every
 * 7th float bit pattern in [-150, 0], every float in [-150, -125] (results
 * subnormal or near it), and every float within 4096 ulps of each -k - 1/2
 * (where round(x) steps). The algorithm is instantiated here on one float
 * with fmaf, rintf and ldexpf standing for the vector FMA, round and scalef
 * instructions of the AVX-512 variant, which round the same way (so this is
 * its result bit for bit); the attention tests cover the variants whole.
 * Bound: 1.5 ulp of the correctly rounded result (subnormal spacing 2^-149
 * below FLT_MIN); measured 0.95 (every 7th pattern: the same). Special values exactly: 2^0 = 1, -inf and
 * everything below -150 give 0, NaN gives NaN.
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
/* vscalefps: NaN for a NaN n (converting NaN to int is undefined) */
static inline V scalef(V p, V n) { return isnan(n) ? n : ldexpf(p, (int)n); }
#define VMATH_SCALEF(p, n) scalef(p, n)
#define VMATH_ROUND(x) rintf(x)
#include "../../runtime/kernels/f32-vmath/exp.h"

static double worst;
static float worst_x;

static float from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static void check(float x)
{
	double want = exp2((double)x), got = (double)v_exp2_nonpos(x);
	double ulp = want < (double)FLT_MIN ? 0x1p-149 : ldexp(1.0, ilogb(want) - 23);
	double e = fabs(got - want) / ulp;
	if (e > worst)
		worst = e, worst_x = x;
}

int main(void)
{
	const uint32_t neg150 = 0xc3160000u;  /* -150.0f */
	for (uint32_t u = 0x80000000u; u <= neg150; u += 31)
		check(from_bits(u));
	for (uint32_t u = 0xc2fa0000u; u <= neg150; u++)  /* [-150, -125] */
		check(from_bits(u));
	for (int k = 0; k < 150; k++) {
		float h = -(float)k - 0.5f;
		uint32_t b;
		memcpy(&b, &h, sizeof b);
		for (uint32_t u = b - 4096; u <= b + 4096; u++)
			check(from_bits(u));
	}
	printf("v_exp2_nonpos: max error %.3f ulp at x = %a\n", worst, (double)worst_x);
	CHECK(worst <= 1.5, "v_exp2_nonpos within 1.5 ulp over [-150, 0]");
	CHECK(v_exp2_nonpos(0.0f) == 1.0f && v_exp2_nonpos(-0.0f) == 1.0f, "2^0 = 1");
	CHECK(v_exp2_nonpos(-INFINITY) == 0.0f, "2^-inf = 0");
	CHECK(v_exp2_nonpos(-150.0f) == 0.0f && v_exp2_nonpos(-1e30f) == 0.0f, "2^x = 0 below -150");
	CHECK(v_exp2_nonpos(-149.0f) == 0x1p-149f && v_exp2_nonpos(-126.0f) == 0x1p-126f,
	      "2^-149, 2^-126 exact");
	CHECK(isnan(v_exp2_nonpos(NAN)), "NaN stays NaN");
	return harness_report();
}
