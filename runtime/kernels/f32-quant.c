/*
 * f32-quant.c - QuantizeLinear and DequantizeLinear with one scale and zero
 * point (kernels.h: kiln_f32_quantize, kiln_f32_dequantize), written so
 * that the compiler vectorizes them for any target: blocks of QBLOCK
 * elements (a trip count it knows), restrict pointers, and rint done with
 * additions: for |q| < 2^23, (|q| + 2^23) - 2^23 is |q| rounded to an
 * integer, half to even, in the default rounding mode (2^23 is even, and
 * the sum's spacing is 1); larger |q| are integers already. No libm call,
 * the same values as rintf, so the same bytes on every target.
 *
 * Quantize: r = rint(x / scale), then r + zero saturated. r + zero is exact
 * in float32 while |r| < 2^24 - 2^16, and any larger |r| saturates either
 * way. Dequantize: x - zero is an integer of at most 17 bits, exact in
 * float32, and the product is rounded once, the same value as the
 * product taken in double and then rounded to float32.
 */
#include <math.h>

#include "kiln/kernels.h"

/* gcc if-converts the selects below (and so vectorizes the loops) only
 * when it may assume that no floating-point operation traps; the values
 * are the same IEEE ones either way (nothing is reassociated). clang does
 * without. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

enum { QBLOCK = 64 };

/* rint(q) for float q (NaN stays NaN). */
static inline float rint_add(float q)
{
	float a = fabsf(q);
	return a < 8388608.0f ? copysignf((a + 8388608.0f) - 8388608.0f, q) : q;
}

/* The saturated r + zero as a float (an integer in [lo, hi]). */
static inline float sat(float r, float zf, float lo, float hi)
{
	float v = r + zf;
	v = v >= lo ? v : lo;  /* NaN to lo */
	return v <= hi ? v : hi;
}

#define QUANT_LOOP(T)                                                                  \
	do {                                                                               \
		T *restrict o = y;                                                             \
		int64_t i = 0;                                                                 \
		for (; i + QBLOCK <= n; i += QBLOCK)                                           \
			for (int j = 0; j < QBLOCK; j++)                                           \
				o[i + j] = (T)(int32_t)sat(rint_add(x[i + j] / scale), zf, lo, hi);    \
		for (; i < n; i++)                                                             \
			o[i] = (T)(int32_t)sat(rint_add(x[i] / scale), zf, lo, hi);                \
	} while (0)

void kiln_f32_quantize(const float *restrict x, int64_t n, float scale, int32_t zero, int qtype,
                       void *restrict y)
{
	static const float los[] = {0.0f, -128.0f, 0.0f, -32768.0f};
	static const float his[] = {255.0f, 127.0f, 65535.0f, 32767.0f};
	float lo = los[qtype], hi = his[qtype], zf = (float)zero;
	switch (qtype) {
	case KILN_QT_UINT8: QUANT_LOOP(uint8_t); break;
	case KILN_QT_INT8: QUANT_LOOP(int8_t); break;
	case KILN_QT_UINT16: QUANT_LOOP(uint16_t); break;
	default: QUANT_LOOP(int16_t); break;
	}
}

#define DEQUANT_LOOP(T)                                                                \
	do {                                                                               \
		const T *restrict in = x;                                                      \
		int64_t i = 0;                                                                 \
		for (; i + QBLOCK <= n; i += QBLOCK)                                           \
			for (int j = 0; j < QBLOCK; j++)                                           \
				y[i + j] = (float)((int32_t)in[i + j] - zero) * scale;                 \
		for (; i < n; i++)                                                             \
			y[i] = (float)((int32_t)in[i] - zero) * scale;                             \
	} while (0)

void kiln_f32_dequantize(const void *restrict x, int64_t n, float scale, int32_t zero, int qtype,
                         float *restrict y)
{
	switch (qtype) {
	case KILN_QT_UINT8: DEQUANT_LOOP(uint8_t); break;
	case KILN_QT_INT8: DEQUANT_LOOP(int8_t); break;
	case KILN_QT_UINT16: DEQUANT_LOOP(uint16_t); break;
	default: DEQUANT_LOOP(int16_t); break;
	}
}
