/*
 * test_quant.c - kiln_f32_quantize and kiln_f32_dequantize against the
 * scalar definitions the generated code used before them (and still uses
 * for per-axis and blocked scales, emit/quant.c): quantize
 *   v = (double)rintf(x / scale) + zero, clamped to the type (NaN: the low
 *   end, as ONNX Runtime),
 * dequantize
 *   (float)(((double)x - zero) * (double)scale),
 * bit for bit, for the four types, random values around the range, ties
 * (x / scale exactly k + 0.5, both parities), values past 2^23 and 2^24,
 * ±0, ±inf, NaN, extreme zero points, and lengths that leave tails.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kiln/kernels.h"

#include "harness.h"

static const double LO[] = {0, -128, 0, -32768}, HI[] = {255, 127, 65535, 32767};
static const int SIZE[] = {1, 1, 2, 2};

static int32_t get(const void *p, int qt, int64_t i)
{
	switch (qt) {
	case KILN_QT_UINT8: return ((const uint8_t *)p)[i];
	case KILN_QT_INT8: return ((const int8_t *)p)[i];
	case KILN_QT_UINT16: return ((const uint16_t *)p)[i];
	default: return ((const int16_t *)p)[i];
	}
}

static int32_t quant_ref(float x, float s, int32_t z, int qt)
{
	double v = (double)rintf(x / s) + (double)z;
	if (!(v >= LO[qt]))
		return (int32_t)LO[qt];
	return (int32_t)(v > HI[qt] ? HI[qt] : v);
}

static void quant_case(int qt, int64_t n, float s, int32_t z, const float *x)
{
	unsigned char y[2 * 300];
	memset(y, 0x5a, sizeof y);
	kiln_f32_quantize(x, n, s, z, qt, y);
	int64_t bad = 0;
	for (int64_t i = 0; i < n; i++)
		bad += get(y, qt, i) != quant_ref(x[i], s, z, qt);
	int tail = 1;
	for (size_t i = (size_t)n * (size_t)SIZE[qt]; i < sizeof y; i++)
		tail &= y[i] == 0x5a;
	char what[160];
	snprintf(what, sizeof what, "quantize qt=%d n=%lld s=%g z=%d: %lld of %lld differ", qt,
	         (long long)n, (double)s, (int)z, (long long)bad, (long long)n);
	CHECK(bad == 0 && tail, what);
}

static void dequant_case(int qt, int64_t n, float s, int32_t z)
{
	unsigned char x[2 * 300];
	float y[300];
	for (size_t i = 0; i < sizeof x; i++)
		x[i] = (unsigned char)rng_int(0, 255);
	kiln_f32_dequantize(x, n, s, z, qt, y);
	int64_t bad = 0;
	for (int64_t i = 0; i < n; i++) {
		float want = (float)(((double)get(x, qt, i) - (double)z) * (double)s);
		bad += memcmp(&want, &y[i], sizeof want) != 0;
	}
	char what[160];
	snprintf(what, sizeof what, "dequantize qt=%d n=%lld s=%g z=%d: %lld differ", qt,
	         (long long)n, (double)s, (int)z, (long long)bad);
	CHECK(bad == 0, what);
}

int main(void)
{
	static const int64_t lens[] = {1, 7, 64, 65, 200, 300};
	float x[300];
	for (int qt = 0; qt < 4; qt++)
		for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
			for (int rep = 0; rep < 6; rep++) {
				int64_t n = lens[l];
				float s = rep == 5 ? 1.0f : rng_float(0.001f, 0.1f);
				int32_t z = rep == 3 ? (int32_t)LO[qt] : rep == 4 ? (int32_t)HI[qt]
				          : (int32_t)rng_int((int64_t)LO[qt], (int64_t)HI[qt]);
				double span = (HI[qt] - LO[qt]) * 1.3 * (double)s;
				for (int64_t i = 0; i < n; i++) {
					switch ((i + rep) % 8) {
					case 0: x[i] = ((float)rng_int(-70000, 70000) + 0.5f) * s; break;  /* near ties */
					case 1: x[i] = (float)rng_int(-40, 40) + 0.5f; break;  /* exact ties at s = 1 */
					case 2: x[i] = rng_float(-3e7f, 3e7f); break;  /* past 2^23 and 2^24 */
					case 3: x[i] = i % 3 == 0 ? -0.0f : i % 3 == 1 ? INFINITY : -INFINITY; break;
					case 4: x[i] = i % 2 ? NAN : 1e30f; break;
					default: x[i] = rng_float((float)-span, (float)span); break;
					}
				}
				quant_case(qt, n, s, z, x);
				dequant_case(qt, n, rep == 5 ? 1.0f : s, z);
			}
	/* the ties of x / s themselves, at s = 1: 0.5, 1.5, ... -> even */
	for (int i = 0; i < 300; i++)
		x[i] = (float)(i - 150) + 0.5f;
	quant_case(KILN_QT_INT16, 300, 1.0f, 0, x);
	return harness_report();
}
