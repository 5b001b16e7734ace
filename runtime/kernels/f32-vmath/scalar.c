/*
 * f32-vmath/scalar.c - kiln's own float log, log1p, pow, sin, cos, tan,
 * asin, acos, atan, sinh, cosh, asinh, acosh and atanh, and double exp, log,
 * log1p and tanh, for the generated C, the kernels and the compiler's folds
 * (kiln_logf, ..., kiln_exp, ...; kernels.h), so that no result depends on
 * the libm of the machine that runs it (issue 30; docs/reproducibility.md).
 *
 * Each is computed in double by one fixed sequence of IEEE operations (no
 * libm call, no fma: the file is built with -ffp-contract=off like all of
 * kiln) and rounded once to float, so x86-64 and aarch64 give the same bits.
 * The double result is within a few units of 2^-52 of the exact value, so
 * the float is the correctly rounded one except where the exact value lies
 * that close to a midpoint of two floats (rare, and the same everywhere).
 *
 *   log     x = 2^e m, m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact),
 *           s = f / (2 + f), log m = 2 atanh s = 2 s (1 + s^2/3 + ... s^18/19)
 *           (|s| <= 0.1716: the next term is below 2^-56), plus e ln 2.
 *   log1p   u = 1 + x in double; log u scaled by x / (u - 1), which undoes
 *           the rounding of 1 + x; x itself where u == 1.
 *   pow     exp(y log |x|) in double: y log |x| is within 2^-45 of exact for
 *           every float result; exp by k = round(t / ln 2), r = t - k ln 2
 *           (ln 2 in two parts, k ln2_hi exact), a degree-13 Taylor series
 *           on |r| <= 0.35 and 2^k from bits. Special cases as C99 Annex F;
 *           y = 2 as x x and y = 1/2 as sqrt, both correctly rounded.
 *   sin/cos/tan  |x| < pi/4 as is; else x 2/pi reduced exactly (Payne-Hanek):
 *           x = M 2^E with M < 2^24, and the 128 bits of 2/pi that matter
 *           for x 2/pi mod 4 multiplied by M in 32-bit limbs; the quadrant
 *           is the top 2 bits, the rest the fraction, turned into
 *           r in [-pi/4, pi/4]; Taylor series of degree 17 (sin) and 18 (cos).
 *   the inverse and hyperbolic functions: below, at each (atan's series
 *           after two argument halvings; the others by atan, exp, expm1's
 *           series and log1p). The double functions are the same kernels
 *           rounded no further: within 1 (exp), 2 (log, log1p) and 3 (tanh)
 *           units of 2^-52 of libm's on the samples of test_mathf.
 */
#include <stdint.h>
#include <string.h>

#include "kiln/kernels.h"

static double from_bits(uint64_t u) { double d; memcpy(&d, &u, sizeof d); return d; }
static uint64_t bits_of(double d) { uint64_t u; memcpy(&u, &d, sizeof u); return u; }
static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }

static const double LN2 = 0.6931471805599453094;
/* ln 2 = LN2_HI + LN2_LO, LN2_HI with 32 significant bits, so k LN2_HI is
 * exact for |k| < 2^21 */
static const double LN2_HI = 6.93147180369123816490e-01;   /* 0x3FE62E42FEE00000 */
static const double LN2_LO = 1.90821492927058770002e-10;   /* 0x3DEA39EF35793C76 */
static const double PIO2 = 1.57079632679489661923;

/* log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]: s = f / (2 + f),
 * log(1 + f) = 2 atanh s = 2 s (1 + s^2/3 + ... s^18/19) (|s| <= 0.1716:
 * the next term is below 2^-56) */
static double k_log_near1(double f)
{
	double s = f / (2.0 + f);
	double z = s * s;
	double p = 1.0 / 19;
	static const double inv_odd[] = {1.0 / 17, 1.0 / 15, 1.0 / 13, 1.0 / 11, 1.0 / 9,
	                                 1.0 / 7, 1.0 / 5, 1.0 / 3};
	for (int i = 0; i < 8; i++)
		p = p * z + inv_odd[i];
	/* 2s + 2s z p: 2s carries only the one rounding of s */
	return 2.0 * s + 2.0 * s * (z * p);
}

/* log of a positive, finite double */
static double k_log(double x)
{
	int e = -1023;
	if (x < 0x1p-1022) {   /* subnormal (never a float): scaled exactly */
		x *= 0x1p54;
		e -= 54;
	}
	uint64_t u = bits_of(x);
	e += (int)((u >> 52) & 0x7ff);
	double m = from_bits((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);  /* [1, 2) */
	if (m > 1.4142135623730950488) {
		m *= 0.5;
		e++;
	}
	double lm = k_log_near1(m - 1.0);   /* m - 1 is exact */
	return (double)e * LN2_HI + (lm + (double)e * LN2_LO);
}

/* exp(t) for t in [-745.2, 709.8] (every double result; [-110, 100] covers
 * every float one) */
static double k_exp(double t)
{
	double kd = t * (1.0 / LN2);
	kd = kd < 0 ? (double)(int64_t)(kd - 0.5) : (double)(int64_t)(kd + 0.5);
	double r = (t - kd * LN2_HI) - kd * LN2_LO;
	double p = 1.0 / 6227020800.0;   /* 1/13! */
	static const double inv_fact[] = {
		1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
		1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0,
		1.0 / 2.0, 1.0, 1.0};
	for (int i = 0; i < 13; i++)
		p = p * r + inv_fact[i];
	int k = (int)kd;
	if (k >= -1021 && k <= 1023)   /* every float result: 2^k is a normal double */
		return p * from_bits((uint64_t)(k + 1023) << 52);
	/* double results near the ends of the range: 2^k in two normal factors */
	int k1 = k > 0 ? 1000 : -1000;
	return p * from_bits((uint64_t)(k - k1 + 1023) << 52) * from_bits((uint64_t)(k1 + 1023) << 52);
}

/* exp(t) - 1 for |t| <= 1: the Taylor series to t^20 (the next term is
 * below 2^-65 |t|), no cancellation; k_exp(t) - 1 beyond (t < 88.8) */
static double k_expm1(double t)
{
	if (t > 1.0 || t < -1.0)
		return k_exp(t) - 1.0;
	/* p = 1/2! + t/3! + ... + t^18/20!, Horner from 1/20! */
	static const double inv_fact[] = {
		1.0 / 121645100408832000.0, 1.0 / 6402373705728000.0, 1.0 / 355687428096000.0,
		1.0 / 20922789888000.0, 1.0 / 1307674368000.0, 1.0 / 87178291200.0,
		1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
		1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0,
		1.0 / 24.0, 1.0 / 6.0, 1.0 / 2.0};
	double p = 1.0 / 2432902008176640000.0;
	for (int i = 0; i < 18; i++)
		p = p * t + inv_fact[i];
	return t + t * (t * p);
}

/* log(1 + y) for y > -1: near 0 by the series of log directly; else
 * u = 1 + y rounded, log u scaled by y / (u - 1), which undoes the rounding
 * of 1 + y */
static double k_log1p(double y)
{
	if (y >= -0.29289321881345248 && y <= 0.41421356237309505)
		return k_log_near1(y);   /* no rounding of 1 + y at all */
	double u = 1.0 + y;
	if (u == 1.0)
		return y;
	return k_log(u) * (y / (u - 1.0));
}

/* the special cases of kiln_log and kiln_log1p (below) as C99's logf and
 * log1pf have them; a float is a normal double */
float kiln_logf(float x) { return (float)kiln_log((double)x); }

float kiln_log1pf(float x) { return (float)kiln_log1p((double)x); }

/* 0: y is not an integer, 1: an odd integer, 2: an even integer */
static int int_kind(float y)
{
	float a = y < 0 ? -y : y;
	if (a >= 16777216.0f)   /* 2^24 and up: every float is an even integer */
		return 2;
	int64_t i = (int64_t)a;
	if ((float)i != a)
		return 0;
	return (i & 1) ? 1 : 2;
}

float kiln_powf(float x, float y)
{
	const float inf = __builtin_inff();
	if (y == 0 || x == 1.0f)
		return 1.0f;
	if (x != x || y != y)
		return x + y;
	float ax = x < 0 ? -x : x;
	if (y == inf || y == -inf) {
		if (ax == 1.0f)
			return 1.0f;
		return (ax < 1.0f) == (y > 0) ? 0.0f : inf;
	}
	int kind = int_kind(y);
	int neg = (fbits(x) >> 31) && kind == 1;   /* x < 0 (or -0) and y odd: negative */
	float r;
	if (ax == 0 || ax == inf) {
		/* 0^y and inf^y: 0 or inf by the sign of y */
		r = (ax == 0) == (y > 0) ? 0.0f : inf;
		return neg ? -r : r;
	}
	if (x < 0 && kind == 0)
		return __builtin_nanf("");
	if (y == 2.0f)   /* x x is exact in double: the float is correctly rounded */
		return (float)((double)x * (double)x);
	if (y == 0.5f && x > 0)
		return (float)__builtin_sqrt((double)x);
	double t = (double)y * k_log((double)ax);
	if (t > 100.0)
		r = inf;
	else if (t < -110.0)
		r = 0.0f;
	else
		r = (float)k_exp(t);
	return neg ? -r : r;
}

/* ---- sin, cos, tan ------------------------------------------------------ */

/* The bits of 2/pi, 32 to a word, most significant first: enough for the
 * window of every float exponent (the last bit used is the 231st). */
static const uint32_t two_over_pi[] = {
	0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0, 0xDB629599,
	0x3C439041, 0xFE5163AB, 0xDEBBC561, 0xB7246E3A, 0x424DD2E0,
};

/* 32 bits of 2/pi starting at bit index i (bit 1 is worth 1/2); zeros before it */
static uint32_t window32(int i)
{
	uint32_t w = 0;
	for (int b = 0; b < 32; b++) {
		int k = i + b;   /* 1-based */
		uint32_t bit = 0;
		if (k >= 1 && k <= 32 * (int)(sizeof two_over_pi / sizeof two_over_pi[0]))
			bit = (two_over_pi[(k - 1) / 32] >> (31 - (k - 1) % 32)) & 1u;
		w = (w << 1) | bit;
	}
	return w;
}

/* |x| = r + q pi/2, r in [-pi/4, pi/4] (x finite, |x| >= pi/4) */
static double reduce(float ax, int *q)
{
	uint32_t u = fbits(ax);
	int be = (int)(u >> 23);
	uint32_t m = be ? (u & 0x7fffff) | 0x800000 : u & 0x7fffff;
	int e = (be ? be : 1) - 127 - 23;   /* ax = m 2^e */
	/* x 2/pi = m sum b_i 2^(e-i); terms with e - i >= 2 are multiples of 4.
	 * The 128-bit window holds bits e-1 .. e+126, worth 2^(2-128) .. 2 */
	uint32_t w[4], n[4];
	for (int j = 0; j < 4; j++)
		w[j] = window32(e - 1 + 32 * j);
	uint64_t carry = 0;
	for (int j = 3; j >= 0; j--) {
		uint64_t p = (uint64_t)m * w[j] + carry;
		n[j] = (uint32_t)p;
		carry = p >> 32;
	}
	/* n = m W mod 2^128, in units of 2^-126: quadrant in its top two bits */
	*q = (int)(n[0] >> 30);
	double f = (double)(((uint64_t)(n[0] & 0x3fffffffu) << 32) | n[1]) * 0x1p-62 +
	           ((double)n[2] * 0x1p-94 + (double)n[3] * 0x1p-126);
	if (f >= 0.5) {
		f -= 1.0;
		*q = (*q + 1) & 3;
	}
	return f * PIO2;
}

static double k_sin(double r)
{
	/* sin r = r + r z (-1/3! + z/5! - ... + z^7/17!), z = r^2 */
	double z = r * r, p = 1.0 / 355687428096000.0;
	static const double c[] = {-1.0 / 1307674368000.0, 1.0 / 6227020800.0,
	                           -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0,
	                           1.0 / 120.0, -1.0 / 6.0};
	for (int i = 0; i < 7; i++)
		p = p * z + c[i];
	return r + r * (z * p);
}

static double k_cos(double r)
{
	/* cos r = 1 + z (-1/2! + z/4! - ... - z^8/18!) */
	double z = r * r, p = -1.0 / 6402373705728000.0;
	static const double c[] = {1.0 / 20922789888000.0, -1.0 / 87178291200.0,
	                           1.0 / 479001600.0, -1.0 / 3628800.0, 1.0 / 40320.0,
	                           -1.0 / 720.0, 1.0 / 24.0, -1.0 / 2.0};
	for (int i = 0; i < 8; i++)
		p = p * z + c[i];
	return 1.0 + z * p;
}

/* which: 0 sin, 1 cos, 2 tan */
static float trig(float x, int which)
{
	if (x != x)
		return x;
	float ax = x < 0 ? -x : x;
	if (ax == __builtin_inff())
		return __builtin_nanf("");
	int q = 0;
	double r = ax < 0.78539816f ? (double)ax : reduce(ax, &q);
	double s = k_sin(r), c = k_cos(r), v;
	if (which == 2)
		v = (q & 1) ? -c / s : s / c;
	else {
		int qq = (q + (which == 1)) & 3;   /* cos x = sin(x + pi/2) */
		v = (qq & 1) ? c : s;
		if (qq & 2)
			v = -v;
	}
	if ((fbits(x) >> 31) && which != 1)   /* odd functions, -0 included */
		v = -v;
	return (float)v;
}

float kiln_sinf(float x) { return trig(x, 0); }
float kiln_cosf(float x) { return trig(x, 1); }
float kiln_tanf(float x) { return trig(x, 2); }

/* ---- inverse and hyperbolic functions ----------------------------------- */

/* atan of a double a >= 0 (+inf included): a > 1 as pi/2 - atan(1/a); then
 * twice t -> t / (1 + sqrt(1 + t^2)) (atan t = 2 atan of that), so
 * |t| <= tan(pi/16) = 0.199; the Taylor series to t^27 (the next term is
 * below 2^-62 t), times 4 */
static double k_atan(double a)
{
	int inv = a > 1.0;
	if (inv)
		a = 1.0 / a;   /* +inf gives 0 */
	for (int i = 0; i < 2; i++)
		a = a / (1.0 + __builtin_sqrt(1.0 + a * a));
	double z = a * a, p = -1.0 / 27;
	static const double inv_odd[] = {1.0 / 25, -1.0 / 23, 1.0 / 21, -1.0 / 19, 1.0 / 17,
	                                 -1.0 / 15, 1.0 / 13, -1.0 / 11, 1.0 / 9, -1.0 / 7,
	                                 1.0 / 5, -1.0 / 3};
	for (int i = 0; i < 12; i++)
		p = p * z + inv_odd[i];
	double r = 4.0 * (a + a * (z * p));
	return inv ? PIO2 - r : r;
}

static float with_sign(float x, double v)
{
	return (float)((fbits(x) >> 31) ? -v : v);
}

float kiln_atanf(float x)
{
	if (x != x)
		return x;
	return with_sign(x, k_atan(__builtin_fabs((double)x)));
}

/* asin x = atan(x / sqrt(1 - x^2)); 1 - x^2 is exact for a float x */
float kiln_asinf(float x)
{
	double a = __builtin_fabs((double)x);
	if (x != x)
		return x;
	if (a > 1.0)
		return __builtin_nanf("");
	return with_sign(x, k_atan(a / __builtin_sqrt(1.0 - a * a)));
}

/* acos x = 2 atan(sqrt((1 - x) / (1 + x))); 1 - x and 1 + x are exact */
float kiln_acosf(float x)
{
	double d = (double)x;
	if (x != x)
		return x;
	if (d > 1.0 || d < -1.0)
		return __builtin_nanf("");
	return (float)(2.0 * k_atan(__builtin_sqrt((1.0 - d) / (1.0 + d))));
}

/* sinh a = (E + E / (E + 1)) / 2 with E = exp(a) - 1 (no cancellation near
 * 0); exp(a) / 2 from 22 on, where exp(-a) no longer counts */
float kiln_sinhf(float x)
{
	double a = __builtin_fabs((double)x);
	if (x != x)
		return x;
	if (a > 100.0)
		return with_sign(x, (double)__builtin_inff());
	double v;
	if (a >= 22.0) {
		v = 0.5 * k_exp(a);
	} else {
		double e = k_expm1(a);
		v = 0.5 * (e + e / (e + 1.0));
	}
	return with_sign(x, v);
}

float kiln_coshf(float x)
{
	double a = __builtin_fabs((double)x);
	if (x != x)
		return x;
	if (a > 100.0)
		return __builtin_inff();
	double e = k_exp(a);
	return (float)(0.5 * (e + 1.0 / e));
}

/* asinh a = log1p(a + a^2 / (1 + sqrt(1 + a^2))) (a^2 exact for a float) */
float kiln_asinhf(float x)
{
	double a = __builtin_fabs((double)x);
	if (x != x || a == (double)__builtin_inff())
		return x;
	double a2 = a * a;
	return with_sign(x, k_log1p(a + a2 / (1.0 + __builtin_sqrt(1.0 + a2))));
}

/* acosh x = log1p((x - 1) + sqrt((x - 1)(x + 1))) (x - 1, x + 1 exact) */
float kiln_acoshf(float x)
{
	double d = (double)x;
	if (x != x || x == __builtin_inff())
		return x;
	if (d < 1.0)
		return __builtin_nanf("");
	return (float)k_log1p((d - 1.0) + __builtin_sqrt((d - 1.0) * (d + 1.0)));
}

/* atanh a = log1p(2a / (1 - a)) / 2 (1 - a exact) */
float kiln_atanhf(float x)
{
	double a = __builtin_fabs((double)x);
	if (x != x)
		return x;
	if (a > 1.0)
		return __builtin_nanf("");
	if (a == 1.0)
		return with_sign(x, (double)__builtin_inff());
	return with_sign(x, 0.5 * k_log1p(2.0 * a / (1.0 - a)));
}

/* ---- double precision --------------------------------------------------- */

double kiln_exp(double x)
{
	if (x != x)
		return x;
	if (x > 709.782712893384)
		return __builtin_inf();
	if (x < -745.1332191019412)
		return 0.0;
	return k_exp(x);
}

double kiln_log(double x)
{
	if (x != x)
		return x;
	if (x < 0)
		return __builtin_nan("");
	if (x == 0)
		return -__builtin_inf();
	if (x == __builtin_inf())
		return x;
	return k_log(x);
}

double kiln_log1p(double x)
{
	if (x != x)
		return x;
	if (x < -1.0)
		return __builtin_nan("");
	if (x == -1.0)
		return -__builtin_inf();
	if (x == __builtin_inf())
		return x;
	return k_log1p(x);
}

/* tanh a = E / (E + 2), E = exp(2a) - 1; 1 from 22 on */
double kiln_tanh(double x)
{
	double a = x < 0 ? -x : x;
	if (x != x)
		return x;
	double v;
	if (a >= 22.0) {
		v = 1.0;
	} else if (a < 0x1p-28) {   /* tanh x = x - x^3/3: x to the last bit */
		return x;
	} else {
		double e = k_expm1(2.0 * a);
		v = e / (e + 2.0);
	}
	return bits_of(x) >> 63 ? -v : v;
}
