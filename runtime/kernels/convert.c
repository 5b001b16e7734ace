/*
 * convert.c - float16 and bfloat16 to and from float32, bit-exact.
 *
 * Generated code stores both 16-bit types as uint16_t bit patterns and calls
 * these for Cast. float32 -> float16 rounds to nearest, ties to even, with
 * overflow to infinity, gradual underflow to subnormals, and NaN kept quiet;
 * float32 -> bfloat16 rounds the same way (NaN stays NaN). Widening is exact.
 */
#include <string.h>

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
