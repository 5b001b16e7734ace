/*
 * convert.c - float16, bfloat16 and the float8 formats to and from float32,
 * bit-exact.
 *
 * Generated code stores both 16-bit types as uint16_t bit patterns and calls
 * these for Cast. float32 -> float16 rounds to nearest, ties to even, with
 * overflow to infinity, gradual underflow to subnormals, and NaN kept quiet;
 * float32 -> bfloat16 rounds the same way (NaN stays NaN). Widening is exact.
 */
#include <math.h>
#include <string.h>

#include "kiln/float8.h"
#include "kiln/kernels.h"

static uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float float_of(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

KILN_API float kiln_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	if (exp == 0x1f)  /* inf or NaN */
		return float_of(sign | 0x7f800000u | (man << 13));
	if (exp == 0) {
		if (man == 0)
			return float_of(sign);
		/* Subnormal: normalize into a float32 normal. */
		int e = -1;
		do {
			man <<= 1;
			e++;
		} while (!(man & 0x400));
		return float_of(sign | (uint32_t)(112 - e) << 23 | (man & 0x3ff) << 13);
	}
	return float_of(sign | (exp + 112) << 23 | man << 13);
}

KILN_API uint16_t kiln_f32_to_f16(float f)
{
	uint32_t u = bits_of(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t exp = (u >> 23) & 0xff, man = u & 0x7fffff;
	if (exp == 0xff)  /* inf, or NaN made quiet */
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
	int e = (int)exp - 127 + 15;
	if (e >= 0x1f)
		return (uint16_t)(sign | 0x7c00);  /* overflow */
	if (e <= 0) {
		if (e < -10)
			return sign;  /* below half the smallest subnormal */
		man |= 0x800000;  /* the implicit bit, then shift into subnormal place */
		int shift = 14 - e;
		uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
		if (rest > mid || (rest == mid && (half & 1)))
			half++;
		return (uint16_t)(sign | half);
	}
	uint32_t half = (uint32_t)e << 10 | man >> 13, rest = man & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
		half++;  /* may carry into the exponent, up to infinity: still right */
	return (uint16_t)(sign | half);
}

KILN_API float kiln_bf16_to_f32(uint16_t h)
{
	return float_of((uint32_t)h << 16);
}

KILN_API uint16_t kiln_f32_to_bf16(float f)
{
	uint32_t u = bits_of(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);  /* NaN, kept quiet */
	u += 0x7fff + ((u >> 16) & 1);          /* round to nearest, ties to even */
	return (uint16_t)(u >> 16);
}

/* ---- float8 (ONNX opset 19) ------------------------------------------ */

/* The four formats: exponent bias, mantissa bits, the largest finite value's
 * code, and whether they are "fnuz" (NaN is 0x80, no negative zero) or, for
 * E5M2, have infinities. */
typedef struct F8Format {
	int bias, mbits, max_code;
	int fnuz, has_inf;
} F8Format;

static const F8Format f8_formats[4] = {
	[KILN_F8_E4M3FN] = {7, 3, 0x7e, 0, 0},
	[KILN_F8_E4M3FNUZ] = {8, 3, 0x7f, 1, 0},
	[KILN_F8_E5M2] = {15, 2, 0x7b, 0, 1},
	[KILN_F8_E5M2FNUZ] = {16, 2, 0x7f, 1, 0},
};

KILN_API float kiln_f8_to_f32(uint8_t v, int format)
{
	const F8Format *f = &f8_formats[format & 3];
	int ebits = 7 - f->mbits, sign = v >> 7;
	int exp = (v >> f->mbits) & ((1 << ebits) - 1), man = v & ((1 << f->mbits) - 1);
	if (f->fnuz ? v == 0x80 : (v & 0x7f) > f->max_code && (!f->has_inf || man != 0))
		return float_of(0x7fc00000u | (uint32_t)sign << 31);
	if (f->has_inf && exp == (1 << ebits) - 1)
		return sign ? -INFINITY : INFINITY;
	double x = exp ? ldexp(1.0 + ldexp(man, -f->mbits), exp - f->bias)
	               : ldexp(man, 1 - f->bias - f->mbits);
	return (float)(sign ? -x : x);
}

KILN_API uint8_t kiln_f32_to_f8(float x, int format, int saturate)
{
	const F8Format *f = &f8_formats[format & 3];
	const uint8_t nan = f->fnuz ? 0x80 : 0x7f;
	uint8_t sign = (uint8_t)(bits_of(x) >> 31 << 7);
	if (x != x)
		return f->fnuz ? nan : (uint8_t)(nan | sign);
	double a = fabs((double)x), max = (double)kiln_f8_to_f32((uint8_t)f->max_code, format);
	if (isinf(a)) {
		if (saturate)
			return (uint8_t)(f->max_code | sign);
		return f->has_inf ? (uint8_t)(0x7c | sign) : f->fnuz ? nan : (uint8_t)(nan | sign);
	}
	/* Round to nearest, ties to even, on the grid of the input's binade (or
	 * of the subnormals below the smallest normal). */
	int emin = 1 - f->bias, e;
	frexp(a, &e);
	e = e - 1 < emin ? emin : e - 1;
	double q = ldexp(1.0, e - f->mbits), r = rint(a / q) * q;
	/* E4M3FN: ONNX's reference truncates first, so [480, 496) (whose
	 * truncation is the NaN pattern 0x7f) becomes 448 rather than NaN. */
	if (!f->fnuz && !f->has_inf && a >= max + ldexp(1.0, 5) && a < max + 3 * ldexp(1.0, 4))
		return (uint8_t)(f->max_code | sign);
	if (r > max) {
		if (saturate)
			return (uint8_t)(f->max_code | sign);
		/* E5M2 keeps infinity for inputs beyond its range; rounding up from
		 * its largest value gives NaN, as ONNX's reference does. */
		if (f->has_inf && a >= 2 * ldexp(1.0, (1 << (7 - f->mbits)) - 2 - f->bias))
			return (uint8_t)(0x7c | sign);
		return f->fnuz ? nan : (uint8_t)(nan | sign);
	}
	if (r == 0)
		return f->fnuz ? 0 : sign;
	int code;
	if (r < ldexp(1.0, emin)) {
		code = (int)(r / ldexp(1.0, emin - f->mbits));
	} else {
		frexp(r, &e);
		e -= 1;
		code = ((e + f->bias) << f->mbits) | (int)(r / ldexp(1.0, e - f->mbits) - (1 << f->mbits));
	}
	return (uint8_t)(code | sign);
}
