/*
 * f32-vmath/scalar.c - kiln's own float log, log1p, pow, sin, cos, tan,
 * asin, acos, atan, sinh, cosh, asinh, acosh and atanh, and double exp, log,
 * log1p, tanh, pow, sin, cos, tan, erf, erfc and asin .. atanh (the last
 * section: double-double where the result must be within 1 ulp), for the
 * generated C, the kernels and the compiler's folds
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

#include "dconst.h"

static double from_bits(uint64_t u) { double d; memcpy(&d, &u, sizeof d); return d; }
static uint64_t bits_of(double d) { uint64_t u; memcpy(&u, &d, sizeof u); return u; }
static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }


/* log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]: s = f / (2 + f),
 * log(1 + f) = 2 atanh s = 2 s (1 + s^2/3 + ... s^18/19) (|s| <= 0.1716:
 * the next term is below 2^-56) */
static double k_log_near1(double f)
{
	double s = f / (2.0 + f);
	double z = s * s;
	double p = LOG_P0;
	for (int i = 0; i < 8; i++)
		p = p * z + LOG_INV_ODD[i];
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
	if (m > LOG_M_SPLIT) {
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
 * log1pf have them; a float is a normal double. A NaN comes back as it came,
 * payload and all, as in kiln_atanf: through the double, a signalling NaN
 * came back quieted or not depending on the C compiler (clang quiets it, gcc
 * folds the round trip away), and the vector kernels return it unchanged. */
float kiln_logf(float x)
{
	if (x != x)
		return x;
	return (float)kiln_log((double)x);
}

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
 * window of every float exponent (the last bit used is the 231st) and of
 * every double one (kiln_sin below: the last bit used is the 1161st). */
static const uint32_t two_over_pi[] = {
	0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0, 0xDB629599,
	0x3C439041, 0xFE5163AB, 0xDEBBC561, 0xB7246E3A, 0x424DD2E0,
	0x06492EEA, 0x09D1921C, 0xFE1DEB1C, 0xB129A73E, 0xE88235F5,
	0x2EBB4484, 0xE99C7026, 0xB45F7E41, 0x3991D639, 0x835339F4,
	0x9C845F8B, 0xBDF9283B, 0x1FF897FF, 0xDE05980F, 0xEF2F118B,
	0x5A0A6D1F, 0x6D367ECF, 0x27CB09B7, 0x4F463F66, 0x9E5FEA2D,
	0x7527BAC7, 0xEBE5F17B, 0x3D0739F7, 0x8A5292EA, 0x6BFB5FB1,
	0x1F8D5D08, 0x56033046, 0xFC7B6BAB, 0xF0CFBC20, 0x9AF4361D,
};

/* 32 bits of 2/pi starting at bit index i (bit 1 is worth 1/2); zeros
 * before the first bit and after the table */
static uint32_t window32(int i)
{
	const int words = (int)(sizeof two_over_pi / sizeof two_over_pi[0]);
	if (i <= -31 || i > 32 * words)
		return 0;
	if (i < 1)
		return two_over_pi[0] >> (1 - i);
	int w = (i - 1) / 32, sh = (i - 1) % 32;
	uint32_t v = two_over_pi[w] << sh;
	if (sh && w + 1 < words)
		v |= two_over_pi[w + 1] >> (32 - sh);
	return v;
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
	double z = a * a, p = ATAN_P0;
	for (int i = 0; i < 12; i++)
		p = p * z + ATAN_INV_ODD[i];
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

/* ---- double pow, sin, cos, tan, erf, erfc, inverse and hyperbolic ------- */

/* Exact products and sums without fma (Dekker, Knuth): a b = p + e and
 * a + b = s + e exactly. two_prod needs |a|, |b| below 2^995. */
static void two_prod(double a, double b, double *p, double *e)
{
	double c = a * 134217729.0;   /* 2^27 + 1 */
	double ah = c - (c - a), al = a - ah;
	c = b * 134217729.0;
	double bh = c - (c - b), bl = b - bh;
	*p = a * b;
	*e = ((ah * bh - *p) + ah * bl + al * bh) + al * bl;
}

static void two_sum(double a, double b, double *s, double *e)
{
	*s = a + b;
	double bb = *s - a;
	*e = (a - (*s - bb)) + (b - bb);
}

/* |a| >= |b| (or a == 0) */
static void fast_two_sum(double a, double b, double *s, double *e)
{
	*s = a + b;
	*e = b - (*s - a);
}

/* log(j / 128) for j = 91 .. 181, each as hi + lo (the exact value to
 * about 2^-106 of it) */
static const double log_c[91][2] = {
	{-0.34117075740276714, 1.9366790062602867e-17},
	{-0.33024168687057687, 1.0828321637483858e-17},
	{-0.3194307707663612, -1.354256857264811e-18},
	{-0.3087354816496133, 1.6199186085148102e-17},
	{-0.29815337231907635, 1.720695867445866e-17},
	{-0.2876820724517809, -2.607160616442564e-17},
	{-0.27731928541623435, 7.44528405583513e-18},
	{-0.26706278524904525, 7.32891532732017e-18},
	{-0.2569104137850272, -2.502843296152504e-17},
	{-0.24686007793152578, -1.361743371748368e-17},
	{-0.2369097470783577, -1.9682402978398164e-18},
	{-0.22705745063534608, -9.551415762738488e-18},
	{-0.2173012756899814, -1.6168452453763015e-18},
	{-0.2076393647782445, -1.2053243216686129e-17},
	{-0.1980699137620938, -3.742843482461439e-18},
	{-0.18859116980755003, 7.432164219196925e-18},
	{-0.179201429457711, 1.0785017454858423e-17},
	{-0.16989903679539747, 4.868008764439071e-19},
	{-0.16068238169047347, 3.650183553047837e-18},
	{-0.15154989812720093, -5.1669593684615594e-18},
	{-0.14250006260728304, 9.926388234225749e-18},
	{-0.13353139262452263, 3.664457663660085e-18},
	{-0.1246424452072766, 5.808912678940971e-18},
	{-0.1158318155251217, -4.338484369808096e-18},
	{-0.1070981355563671, 1.73705104015906e-18},
	{-0.09844007281325252, 4.439009633675136e-18},
	{-0.08985632912186105, 6.273760163689594e-19},
	{-0.0813456394539524, -5.07707635593117e-18},
	{-0.07290677080808779, 6.306860257532778e-18},
	{-0.06453852113757118, 6.470486661692933e-18},
	{-0.05623971832287608, 3.2835149805605613e-18},
	{-0.048009219186360606, -1.4390903347292205e-18},
	{-0.039845908547199674, 3.129547680315208e-18},
	{-0.0317486983145803, -3.0382263084680858e-18},
	{-0.023716526617316044, 1.5774243488668215e-18},
	{-0.015748356968139168, -1.0021578630528974e-18},
	{-0.007843177461025893, -2.764708154124904e-19},
	{0.0, 0.0},
	{0.007782140442054949, -1.2819179123343845e-20},
	{0.015504186535965254, -3.278321022892429e-19},
	{0.02316705928153438, -1.1769544932063305e-18},
	{0.030771658666753687, 1.0431732029005968e-18},
	{0.0383188643021366, -2.357996157351286e-18},
	{0.0458095360312942, 1.902959866474257e-18},
	{0.053244514518812285, -1.665575816973663e-18},
	{0.06062462181643484, 2.6424025938726934e-18},
	{0.06795066190850775, -1.2802141240611733e-18},
	{0.07522342123758753, -5.930604196293241e-18},
	{0.08244366921107459, 5.700437773813987e-18},
	{0.08961215868968714, -5.4268129336647135e-18},
	{0.09672962645855111, -5.597397486289965e-19},
	{0.10379679368164356, 5.47772415726659e-18},
	{0.11081436634029011, 1.183748342825649e-18},
	{0.11778303565638346, -1.1971685747593677e-18},
	{0.12470347850095724, -4.6522609636496624e-18},
	{0.13157635778871926, 1.1123000879729588e-17},
	{0.13840232285911913, 4.447777301357527e-18},
	{0.1451820098444979, 8.242418783022475e-18},
	{0.15191604202584197, 6.4838631244022194e-18},
	{0.15860503017663857, 1.1257003872182592e-17},
	{0.16524957289530717, -1.0094935622322628e-17},
	{0.17185025692665923, -6.0224538210113705e-18},
	{0.1784076574728183, -1.2432553788701131e-17},
	{0.184922338494012, 3.0236614153574064e-18},
	{0.19139485299962947, -1.2129496905792884e-17},
	{0.19782574332991987, 1.2821194372980142e-17},
	{0.2042155414286909, 2.7338281018722773e-18},
	{0.21056476910734964, -4.249405314729895e-18},
	{0.21687393830061436, 4.551026193234283e-18},
	{0.22314355131420976, -9.091270597324799e-18},
	{0.22937410106484582, 9.927671823978025e-18},
	{0.2355660713127669, -2.3943371495187355e-18},
	{0.24171993688714516, 8.900990022166643e-18},
	{0.24783616390458127, -1.2432209578702523e-17},
	{0.25391520998096345, -8.048097394424201e-18},
	{0.25995752443692605, 2.069806938978935e-17},
	{0.26596354849713794, 5.3393802761314314e-18},
	{0.27193371548364176, 7.83319637697442e-19},
	{0.2778684510034563, -9.16018294909263e-19},
	{0.2837681731306446, -2.032665581126656e-17},
	{0.28963329258304266, 2.0535953219858174e-17},
	{0.2954642128938359, -2.16461086040599e-17},
	{0.3012613305781618, -9.048511144048564e-18},
	{0.3070250352949119, -1.2319916200101964e-17},
	{0.3127557100038969, -1.451808353098951e-17},
	{0.3184537311185346, 2.7114779367326236e-17},
	{0.324119468654212, -7.958214381893813e-18},
	{0.329753286372468, 2.122020616196946e-18},
	{0.3353555419211378, 1.834564437059473e-17},
	{0.3409265869705932, 1.7467136443544747e-17},
	{0.34646676734620857, 1.028583585496265e-17},
};
/* ln 2 - LN2_HI as hi + lo */
static const double LN2_LO_HI = 1.9082149292705877e-10;
static const double LN2_LO_LO = 1.1612227229362532e-26;

/* log x for a positive finite double as hi + lo, within about 2^-68 of it
 * (relative): x = 2^e m, m in [sqrt(1/2), sqrt(2)], c = j/128 the nearest
 * 128th (f = m - c exact), log m = log c + 2 atanh(s), s = f / (2c + f)
 * (|s| < 2^-8) in hi + lo, its series to s^11 (the next term is below
 * 2^-90 s); the sum in double-double. Near x = 1, e = 0 and c = 1: the
 * result keeps its relative accuracy however small it is. */
static void log_dd(double x, double *hi, double *lo)
{
	int e = -1023;
	if (x < 0x1p-1022) {
		x *= 0x1p54;
		e -= 54;
	}
	uint64_t u = bits_of(x);
	e += (int)((u >> 52) & 0x7ff);
	double m = from_bits((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
	if (m > LOG_M_SPLIT) {
		m *= 0.5;
		e++;
	}
	int j = (int)(m * 128.0 + 0.5);   /* 91 .. 181 */
	double c = (double)j * 0x1p-7;
	double f = m - c;   /* exact: c / 2 <= m <= 2c */
	double dh, dl, p, pe;
	fast_two_sum(2.0 * c, f, &dh, &dl);
	double sh = f / dh;
	two_prod(sh, dh, &p, &pe);
	double sl = (((f - p) - pe) - sh * dl) / dh;   /* f - p is exact */
	double z = sh * sh;
	double tail = 2.0 * sh * z * (1.0 / 3 + z * (1.0 / 5 + z * (1.0 / 7 + z * (1.0 / 9 + z / 11))));
	double de = (double)e, b, be, s1, e1, s2, e2, s3, e3;
	two_prod(de, LN2_LO_HI, &b, &be);
	two_sum(de * LN2_HI, log_c[j - 91][0], &s1, &e1);   /* de LN2_HI is exact */
	two_sum(s1, b, &s2, &e2);
	two_sum(s2, 2.0 * sh, &s3, &e3);
	double rest = ((e1 + e2) + (e3 + be)) +
	              ((de * LN2_LO_LO + log_c[j - 91][1]) + (2.0 * sl + tail));
	fast_two_sum(s3, rest, hi, lo);
}

/* 2^(j/32), j = 0 .. 31, as hi + lo */
static const double exp2_j32[32][2] = {
	{1.0, 0.0},
	{1.0218971486541166, 5.109225028973444e-17},
	{1.0442737824274138, 8.551889705537965e-17},
	{1.0671404006768237, -7.899853966841582e-17},
	{1.0905077326652577, -3.046782079812471e-17},
	{1.1143867425958924, 1.0410278456845571e-16},
	{1.1387886347566916, 8.912812676025408e-17},
	{1.1637248587775775, 3.8292048369240935e-17},
	{1.189207115002721, 3.982015231465646e-17},
	{1.215247359980469, -7.712630692681488e-17},
	{1.241857812073484, 4.658027591836937e-17},
	{1.2690509571917332, 2.667932131342186e-18},
	{1.2968395546510096, 2.5382502794888315e-17},
	{1.3252366431597413, -2.8587312100388614e-17},
	{1.3542555469368927, 7.70094837980299e-17},
	{1.383909881963832, -6.770511658794786e-17},
	{1.4142135623730951, -9.667293313452913e-17},
	{1.4451808069770467, -3.0237581349939873e-17},
	{1.4768261459394993, -3.483994556892796e-17},
	{1.5091644275934228, -1.016455327754295e-16},
	{1.5422108254079407, 7.949834809697621e-17},
	{1.5759808451078865, -1.0136916471278304e-17},
	{1.6104903319492543, 2.4707192569797888e-17},
	{1.645755478153965, -1.0125679913674773e-16},
	{1.681792830507429, 8.199010020581497e-17},
	{1.718619298122478, -1.851380418263111e-17},
	{1.7562521603732995, 2.960140695448873e-17},
	{1.7947090750031072, 1.8227458427912087e-17},
	{1.8340080864093424, 3.283107224245627e-17},
	{1.8741676341103, -6.122763413004143e-17},
	{1.9152065613971474, -1.0619946056195963e-16},
	{1.9571441241754002, 8.960767791036668e-17},
};

/* exp(th + tl) for th in [-746, 710], |tl| <= 2^-52 |th|: kd = round(th 32 /
 * ln 2) = 32 k + j, r = th + tl - kd ln2/32 in double-double (|r| <=
 * ln2/64; kd ln2_hi/32 exact), exp r - 1 = E = r + r^2/2 + r^3 (1/3! + ...
 * + r^4/7!) (the next term is below 2^-67) with r^2/2 exact, then 2^(j/32)
 * (1 + E) in double-double, rounded once, times 2^k (two factors near the
 * ends of the range: a subnormal result is rounded twice). */
static double exp_dd(double th, double tl)
{
	double kd = th * (32.0 / LN2);
	kd = kd < 0 ? (double)(int64_t)(kd - 0.5) : (double)(int64_t)(kd + 0.5);
	double rh = th - kd * (LN2_HI / 32);   /* exact */
	double p, pe, r, re, rl;
	two_prod(kd, LN2_LO_HI / 32, &p, &pe);
	two_sum(rh, -p, &r, &re);
	rl = ((re - pe) - kd * (LN2_LO_LO / 32)) + tl;
	fast_two_sum(r, rl, &r, &rl);
	double q = ((r * (1.0 / 5040) + 1.0 / 720) * r + 1.0 / 120) * (r * r) +
	           ((1.0 / 24) * r + 1.0 / 6);
	double h2, e2, eh, el, s, se;
	two_prod(r, r, &h2, &e2);
	h2 *= 0.5;
	e2 *= 0.5;
	fast_two_sum(r, h2, &eh, &el);   /* |h2| <= |r| / 128 */
	el += e2 + (r * h2 * 2.0 * q + rl * (1.0 + r));
	int64_t ki = (int64_t)kd;
	int j = (int)(ki & 31);
	int k = (int)((ki - j) / 32);
	double th_ = exp2_j32[j][0], tl_ = exp2_j32[j][1];
	two_prod(th_, eh, &p, &pe);
	fast_two_sum(th_, p, &s, &se);
	double v = s + ((se + pe) + (th_ * el + tl_ * (1.0 + eh)));
	if (k >= -1021 && k <= 1023)
		return v * from_bits((uint64_t)(k + 1023) << 52);
	int k1 = k > 0 ? 1000 : -1000;
	return v * from_bits((uint64_t)(k - k1 + 1023) << 52) * from_bits((uint64_t)(k1 + 1023) << 52);
}

/* 0: y is not an integer, 1: an odd integer, 2: an even integer */
static int int_kind_d(double y)
{
	double a = y < 0 ? -y : y;
	if (a >= 0x1p53)   /* every double from 2^53 on is an even integer */
		return 2;
	int64_t i = (int64_t)a;
	if ((double)i != a)
		return 0;
	return (i & 1) ? 1 : 2;
}

/* pow as exp(y log |x|), log in double-double and y log |x| as an exact
 * product plus y lo, so exp's argument is within about 2^-60 of exact even
 * near the ends of the range; special cases as C99 Annex F; y = 1, 2 and
 * 1/2 as x, x x and sqrt x (correctly rounded). A result that is a double
 * comes out exactly (an integer power of an integer below 2^53, say). */
double kiln_pow(double x, double y)
{
	const double inf = __builtin_inf();
	if (y == 0 || x == 1.0)
		return 1.0;
	if (x != x || y != y)
		return x + y;
	double ax = x < 0 ? -x : x;
	if (y == inf || y == -inf) {
		if (ax == 1.0)
			return 1.0;
		return (ax < 1.0) == (y > 0) ? 0.0 : inf;
	}
	int kind = int_kind_d(y);
	int neg = (bits_of(x) >> 63) && kind == 1;
	double r;
	if (ax == 0 || ax == inf) {
		r = (ax == 0) == (y > 0) ? 0.0 : inf;
		return neg ? -r : r;
	}
	if (x < 0 && kind == 0)
		return __builtin_nan("");
	if (y == 1.0)
		return x;
	if (y == 2.0)
		return x * x;
	if (y == 0.5)
		return __builtin_sqrt(x);
	double lh, ll;
	log_dd(ax, &lh, &ll);
	double th = y * lh;
	if (th > 710.0)
		r = inf;
	else if (th < -746.0)
		r = 0.0;
	else {
		double te;
		two_prod(y, lh, &th, &te);
		fast_two_sum(th, te + y * ll, &th, &te);
		r = exp_dd(th, te);
	}
	return neg ? -r : r;
}

/* 64 bits of 2/pi from bit index i (1-based; zeros before the first) */
static uint64_t window64(int i)
{
	return (uint64_t)window32(i) << 32 | window32(i + 32);
}

/* |x| = (hi + lo) + q pi/2, hi + lo in [-pi/4, pi/4] to about 2^-100 of
 * it (x finite, |x| >= pi/4), by an exact reduction (Payne-Hanek): x = m 2^e
 * with m < 2^53; the 192 bits of 2/pi from bit e - 1 on (the earlier ones
 * give multiples of 4) times m modulo 2^192: the quadrant in the top two
 * bits, the fraction in 190 (a double is at most 2^-62 from a multiple of
 * pi/2, so at least 128 of them are significant) */
static void reduce_d(double ax, int *q, double *hi, double *lo)
{
	uint64_t u = bits_of(ax);
	uint64_t m = (u & 0x000fffffffffffffull) | 0x0010000000000000ull;
	int e = (int)(u >> 52) - 1075;
	uint64_t w[3], n[3], mh = m >> 32, ml = m & 0xffffffffu;
	for (int j = 0; j < 3; j++)
		w[j] = window64(e - 1 + 64 * j);
	/* n = m W mod 2^192, limbs of 64 bits, most significant first: m W =
	 * ml W + mh W 2^32, each product of 32 x 64 bits in two halves */
	uint32_t acc[6] = {0};
	for (int pass = 0; pass < 2; pass++) {
		uint64_t mult = pass ? mh : ml, carry = 0;
		uint32_t part[7];
		for (int j = 5; j >= 0; j--) {
			uint32_t wj = (uint32_t)(w[j / 2] >> ((j & 1) ? 0 : 32));
			uint64_t t = mult * wj + carry;
			part[j + 1] = (uint32_t)t;
			carry = t >> 32;
		}
		part[0] = (uint32_t)carry;
		/* acc[j] is worth 2^(32 (5 - j)): ml W's part[j + 1], and mh W 2^32's
		 * part[j + 2] (its two top limbs are multiples of 2^192) */
		uint64_t c = 0;
		for (int j = 5; j >= 0; j--) {
			int i = pass ? j + 2 : j + 1;
			uint64_t t = (uint64_t)acc[j] + (i <= 6 ? part[i] : 0) + c;
			acc[j] = (uint32_t)t;
			c = t >> 32;
		}
	}
	for (int j = 0; j < 3; j++)
		n[j] = (uint64_t)acc[2 * j] << 32 | acc[2 * j + 1];
	*q = (int)(n[0] >> 62);
	n[0] &= 0x3fffffffffffffffull;
	int negf = 0;
	if (n[0] >> 61) {   /* fraction >= 1/2: 1 - it, next quadrant */
		negf = 1;
		*q = (*q + 1) & 3;
		n[2] = ~n[2] + 1;
		n[1] = ~n[1] + (n[2] == 0);
		n[0] = (~n[0] + (n[1] == 0 && n[2] == 0)) & 0x3fffffffffffffffull;
	}
	/* normalize: the fraction is (n0 2^128 + n1 2^64 + n2) 2^-190 */
	int shift = 0;
	while (n[0] == 0 && shift < 128) {
		n[0] = n[1], n[1] = n[2], n[2] = 0;
		shift += 64;
	}
	if (n[0] == 0) {
		*hi = *lo = 0;
		return;
	}
	int s = __builtin_clzll(n[0]);
	if (s) {
		n[0] = n[0] << s | n[1] >> (64 - s);
		n[1] = n[1] << s | n[2] >> (64 - s);
	}
	shift += s;
	/* fraction = (n0 + n1 2^-64) 2^(-62 - shift) */
	double scale = from_bits((uint64_t)(1023 - 62 - shift) << 52);
	double fh = (double)(n[0] >> 11) * 0x1p11 * scale;
	double fl = ((double)(n[0] & 0x7ff) + (double)n[1] * 0x1p-64) * scale;
	double p, pe;
	two_prod(fh, PIO2, &p, &pe);
	double rl = pe + (fh * 6.123233995736766e-17 + fl * PIO2);   /* pi/2 = PIO2 + 6.12e-17 */
	fast_two_sum(p, rl, hi, lo);
	if (negf) {
		*hi = -*hi;
		*lo = -*lo;
	}
}

/* sin(h + l) = sin h + l cos h and cos(h + l) = cos h - l sin h for
 * |h| <= pi/4, |l| <= 2^-52 |h|, as hi + lo (for tan's quotient): the
 * Taylor series of degree 17 and 18 in z = h^2, 1 - z/2 for cos summed
 * with its rounding error (z exact) */
static void k_sin_dd(double h, double l, double *hi, double *lo)
{
	double z = h * h, p = 1.0 / 355687428096000.0;
	static const double c[] = {-1.0 / 1307674368000.0, 1.0 / 6227020800.0,
	                           -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0,
	                           1.0 / 120.0, -1.0 / 6.0};
	for (int i = 0; i < 7; i++)
		p = p * z + c[i];
	fast_two_sum(h, h * (z * p) + l * (1.0 - 0.5 * z), hi, lo);
}

static void k_cos_dd(double h, double l, double *hi, double *lo)
{
	double z, ze, p = -1.0 / 6402373705728000.0;
	two_prod(h, h, &z, &ze);
	static const double c[] = {1.0 / 20922789888000.0, -1.0 / 87178291200.0,
	                           1.0 / 479001600.0, -1.0 / 3628800.0, 1.0 / 40320.0,
	                           -1.0 / 720.0, 1.0 / 24.0};
	for (int i = 0; i < 7; i++)
		p = p * z + c[i];
	double hz = 0.5 * z, t = 1.0 - hz;
	fast_two_sum(t, ((1.0 - t) - hz) + (z * z * p - (0.5 * ze + h * l)), hi, lo);
}

/* which: 0 sin, 1 cos, 2 tan */
static double trig_d(double x, int which)
{
	if (x != x)
		return x;
	double ax = x < 0 ? -x : x;
	if (ax == __builtin_inf())
		return __builtin_nan("");
	int q = 0;
	double h = ax, l = 0.0, v;
	if (ax >= 0.78539816339744828 && ax < 0x1p20) {
		/* Cody-Waite: k = round(x 2/pi) < 2^20, pi/2 in four parts (33,
		 * 33, 53 bits and the rest), so k P1 and k P2 are exact and x - k P1
		 * too (Sterbenz); the rest in double-double. Where x is within
		 * 2^-30 of a multiple of pi/2 the exact reduction takes over. */
		double kd = (double)(int64_t)(ax * 0.63661977236758134 + 0.5);
		double a = ax - kd * 1.5707963267341256, h1, e1, c, ce, h2, e2;
		two_sum(a, -(kd * 6.077100506303966e-11), &h1, &e1);
		two_prod(kd, 2.0222662487959506e-21, &c, &ce);
		two_sum(h1, -c, &h2, &e2);
		fast_two_sum(h2, (e1 + e2) - (ce + kd * 1.0085854035872483e-37), &h, &l);
		q = (int)((int64_t)kd & 3);
		if (h < 0x1p-30 && h > -0x1p-30)
			reduce_d(ax, &q, &h, &l);
	} else if (ax >= 0x1p20) {
		reduce_d(ax, &q, &h, &l);
	}
	double sh = 0, sl = 0, ch = 0, cl = 0;
	int qq = (q + (which == 1)) & 3;   /* cos x = sin(x + pi/2) */
	if (which == 2 || !(qq & 1))
		k_sin_dd(h, l, &sh, &sl);
	if (which == 2 || (qq & 1))
		k_cos_dd(h, l, &ch, &cl);
	if (which == 2) {
		/* (nh + nl) / (dh + dl): the quotient and its remainder (exact
		 * product) in double-double, rounded once */
		double nh = (q & 1) ? -ch : sh, nl = (q & 1) ? -cl : sl;
		double dh = (q & 1) ? sh : ch, dl = (q & 1) ? sl : cl;
		double t = nh / dh, p, pe;
		two_prod(t, dh, &p, &pe);
		v = t + ((((nh - p) - pe) + nl) - t * dl) / dh;
	} else {
		v = (qq & 1) ? ch + cl : sh + sl;
		if (qq & 2)
			v = -v;
	}
	if ((bits_of(x) >> 63) && which != 1)
		v = -v;
	return v;
}

double kiln_sin(double x) { return trig_d(x, 0); }
double kiln_cos(double x) { return trig_d(x, 1); }
double kiln_tan(double x) { return trig_d(x, 2); }

/* exp(-z^2) for z >= 0, z^2 split exactly (Dekker: z = zh + zl, 26 bits
 * each) so that its rounding does not grow with z: exp(-hi) (1 - lo) */
static double exp_neg_sq(double z)
{
	double c = z * 134217729.0;   /* 2^27 + 1 */
	double zh = c - (c - z), zl = z - zh;
	double hi = z * z;
	double lo = ((zh * zh - hi) + 2.0 * zh * zl) + zl * zl;
	return kiln_exp(-hi) * (1.0 - lo);
}

/* erfc(z) in double without libm (also PROBIT's, f32-tree/ref.c): below 1 as 1 - erf z, erf z = 2/sqrt(pi)
 * exp(-z^2) sum z (2z^2)^n / (1 3 ... (2n+1)) (all terms positive, 30 of
 * them); from 1 on Laplace's continued fraction exp(-z^2)/sqrt(pi) /
 * (z + (1/2) / (z + 1 / (z + (3/2) / ...))), 200 levels from the bottom
 * (converged to the last bit from z = 1 on); 2 - erfc(-z) below 0. */
double kiln_erfc(double z)
{
	static const double inv_sqrt_pi = 0.56418958354775628695;
	if (z != z)
		return z;
	if (z < 0)
		return 2.0 - kiln_erfc(-z);
	if (z > 27.3)   /* below the least double */
		return 0.0;
	if (z < 1.0) {
		double t = z, sum = z, z2 = 2.0 * z * z;
		for (int n = 1; n <= 30; n++) {
			t *= z2 / (double)(2 * n + 1);
			sum += t;
		}
		return 1.0 - 2.0 * inv_sqrt_pi * exp_neg_sq(z) * sum;
	}
	double t = 0.0;
	for (int k = 200; k >= 1; k--)
		t = (0.5 * k) / (z + t);
	return inv_sqrt_pi * exp_neg_sq(z) / (z + t);
}

/* erf x: below 1 by the all-positive series of kiln_erfc (no cancellation:
 * erf x ~ 2x/sqrt(pi) near 0), from 1 on 1 - erfc x; odd */
double kiln_erf(double x)
{
	static const double two_over_sqrt_pi = 1.1283791670955125739;
	double a = __builtin_fabs(x);
	if (x != x)
		return x;
	double v;
	if (a < 1.0) {
		double t = a, sum = a, z2 = 2.0 * a * a;
		for (int n = 1; n <= 30; n++) {
			t *= z2 / (double)(2 * n + 1);
			sum += t;
		}
		v = two_over_sqrt_pi * exp_neg_sq(a) * sum;
	} else {
		v = 1.0 - kiln_erfc(a);
	}
	return (bits_of(x) >> 63) ? -v : v;
}

/* The inverse and hyperbolic functions in double, by the float ones'
 * formulas (atan's halvings and series, exp, expm1's series, log1p), with
 * the factors that are exact for a float but not for a double written so
 * that they stay exact where it matters: 1 - x^2 as (1 - x)(1 + x), large
 * arguments of asinh and acosh as log 2x, sinh and cosh near the end of
 * the range as exp(x/2)^2 / 2. */
static double sign_of(double x, double v) { return (bits_of(x) >> 63) ? -v : v; }

double kiln_atan(double x)
{
	double a = __builtin_fabs(x);
	if (x != x || a < 0x1p-27)   /* x - x^3/3 rounds to x */
		return x;
	return sign_of(x, k_atan(a));
}

double kiln_asin(double x)
{
	double a = __builtin_fabs(x);
	if (x != x)
		return x;
	if (a > 1.0)
		return __builtin_nan("");
	if (a < 0x1p-27)   /* x + x^3/6 rounds to x */
		return x;
	return sign_of(x, k_atan(a / __builtin_sqrt((1.0 - a) * (1.0 + a))));
}

double kiln_acos(double x)
{
	if (x != x)
		return x;
	if (x > 1.0 || x < -1.0)
		return __builtin_nan("");
	return 2.0 * k_atan(__builtin_sqrt((1.0 - x) / (1.0 + x)));
}

/* exp(a) / 2 for a up to 710.5 (exp(a) itself overflows from 709.8) */
static double half_exp(double a)
{
	if (a < 709.0)
		return 0.5 * kiln_exp(a);
	double e = kiln_exp(0.5 * a);
	return (0.5 * e) * e;
}

double kiln_sinh(double x)
{
	double a = __builtin_fabs(x);
	if (x != x)
		return x;
	double v;
	if (a < 0x1p-27)   /* x + x^3/6 rounds to x */
		return x;
	if (a >= 22.0) {
		v = half_exp(a);
	} else {
		double e = k_expm1(a);
		v = 0.5 * (e + e / (e + 1.0));
	}
	return sign_of(x, v);
}

double kiln_cosh(double x)
{
	double a = __builtin_fabs(x);
	if (x != x)
		return a;
	if (a >= 22.0)
		return half_exp(a);
	double e = kiln_exp(a);
	return 0.5 * (e + 1.0 / e);
}

double kiln_asinh(double x)
{
	double a = __builtin_fabs(x);
	if (x != x || a == __builtin_inf() || a < 0x1p-27)   /* x - x^3/6 rounds to x */
		return x;
	if (a > 0x1p28)   /* a^2 + 1 is a^2: log(2a) */
		return sign_of(x, k_log(a) + LN2);
	double a2 = a * a;
	return sign_of(x, k_log1p(a + a2 / (1.0 + __builtin_sqrt(1.0 + a2))));
}

double kiln_acosh(double x)
{
	if (x != x || x == __builtin_inf())
		return x;
	if (x < 1.0)
		return __builtin_nan("");
	if (x > 0x1p28)
		return k_log(x) + LN2;
	return k_log1p((x - 1.0) + __builtin_sqrt((x - 1.0) * (x + 1.0)));
}

double kiln_atanh(double x)
{
	double a = __builtin_fabs(x);
	if (x != x)
		return x;
	if (a > 1.0)
		return __builtin_nan("");
	if (a == 1.0)
		return sign_of(x, __builtin_inf());
	if (a < 0x1p-27)   /* x + x^3/3 rounds to x */
		return x;
	return sign_of(x, 0.5 * k_log1p(2.0 * a / (1.0 - a)));
}
