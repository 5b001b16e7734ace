/*
 * int4.h - the 4-bit element types of ONNX opset 21 (INT4, UINT4) in
 * generated code. Such a tensor of n elements is n / 2 bytes rounded up,
 * two elements a byte, the first in the low nibble (as ONNX's raw_data and
 * ONNX Runtime); weights stay packed in the weights object.
 */
#ifndef KILN_INT4_H
#define KILN_INT4_H

#include <math.h>
#include <stdint.h>

/* Element i of a packed uint4 tensor: 0..15. */
static inline int kiln_u4_get(const uint8_t *p, int64_t i)
{
	return (p[i >> 1] >> (4 * (int)(i & 1))) & 15;
}

/* Element i of a packed int4 tensor: -8..7. */
static inline int kiln_i4_get(const uint8_t *p, int64_t i)
{
	int v = kiln_u4_get(p, i);
	return v >= 8 ? v - 16 : v;
}

/* Store element i (its low 4 bits). Writers go in increasing i: an even i
 * starts its byte (the high nibble 0), an odd i fills the high nibble, so a
 * tensor of odd length ends in a zero nibble. */
static inline void kiln_4_put(uint8_t *p, int64_t i, int v)
{
	if (i & 1)
		p[i >> 1] = (uint8_t)(p[i >> 1] | ((v & 15) << 4));
	else
		p[i >> 1] = (uint8_t)(v & 15);
}

/* An integer as int4 / uint4 by Cast-21, as ONNX Runtime: its low four
 * bits (it wraps; the ONNX reference clamps instead). */
static inline int kiln_int_to_4bit(int64_t v, int is_signed)
{
	int u = (int)(v & 15);
	return is_signed && u >= 8 ? u - 16 : u;
}

/* A float as int4 / uint4 by Cast-21, as ONNX Runtime: rounded half away
 * from zero, then the low four bits (NaN and values beyond int64 give 0). */
static inline int kiln_to_4bit(double v, int is_signed)
{
	if (!(v > -9.2e18 && v < 9.2e18))
		return 0;
	double r = v < 0 ? -floor(-v + 0.5) : floor(v + 0.5);
	return kiln_int_to_4bit((int64_t)r, is_signed);
}

#endif
