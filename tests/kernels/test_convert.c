/*
 * test_convert.c - float16/bfloat16 conversions against references computed
 * here: every one of the 65536 bit patterns is widened and checked against
 * its value computed from sign, exponent and mantissa in double; narrowing
 * is checked to give the nearest representable value (ties to even) for
 * random floats, the midpoints between neighbours, subnormals, overflow,
 * infinities and NaN. Exact: no tolerance.
 */
#include "harness.h"
#include "kiln/kernels.h"

/* The value of a 16-bit pattern with `ebits` exponent bits (5: float16, 8: bfloat16). */
static double value16(uint16_t h, int ebits)
{
	int mbits = 15 - ebits, bias = (1 << (ebits - 1)) - 1;
	int e = (h >> mbits) & ((1 << ebits) - 1), m = h & ((1 << mbits) - 1);
	double sign = (h & 0x8000) ? -1.0 : 1.0;
	if (e == (1 << ebits) - 1)
		return m ? (double)NAN : sign * (double)INFINITY;
	if (e == 0)
		return sign * ldexp(m, 1 - bias - mbits);
	return sign * ldexp(m + (1 << mbits), e - bias - mbits);
}

/* Nearest pattern to x, ties to even, by search over the finite patterns of
 * the same sign (monotonic in magnitude), with overflow to infinity. */
static uint16_t nearest16(double x, int ebits)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	double ax = fabs(x);
	int mbits = 15 - ebits;
	uint16_t inf = (uint16_t)(((1 << ebits) - 1) << mbits);
	uint16_t lo = 0, hi = (uint16_t)(inf - 1); /* largest finite */
	double maxf = value16(hi, ebits);
	double next_up = ldexp(1, (1 << (ebits - 1))); /* 2^(emax+1): what rounding past max reaches */
	if (ax >= (maxf + next_up) / 2)
		return sign | inf;
	while (lo < hi) { /* the last pattern with value <= ax */
		uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
		if (value16(mid, ebits) <= ax)
			lo = mid;
		else
			hi = (uint16_t)(mid - 1);
	}
	if (lo + 1 < inf) {
		double a = value16(lo, ebits), b = value16((uint16_t)(lo + 1), ebits);
		if (ax - a > b - ax || (ax - a == b - ax && (lo & 1)))
			lo++;
	}
	return sign | lo;
}

static void check_narrow(float f)
{
	char what[160];
	uint16_t got = kiln_f32_to_f16(f), want = nearest16((double)f, 5);
	snprintf(what, sizeof what, "f32_to_f16(%a) = %#x, want %#x", (double)f, got, want);
	CHECK(got == want, what);
	got = kiln_f32_to_bf16(f), want = nearest16((double)f, 8);
	snprintf(what, sizeof what, "f32_to_bf16(%a) = %#x, want %#x", (double)f, got, want);
	CHECK(got == want, what);
}

int main(void)
{
	char what[160];
	for (uint32_t h = 0; h < 65536; h++) {
		double w16 = value16((uint16_t)h, 5), wb = value16((uint16_t)h, 8);
		float g16 = kiln_f16_to_f32((uint16_t)h), gb = kiln_bf16_to_f32((uint16_t)h);
		snprintf(what, sizeof what, "widen %#x", h);
		CHECK(isnan(w16) ? isnan(g16) : (double)g16 == w16 && !signbit(g16) == !signbit(w16), what);
		CHECK(isnan(wb) ? isnan(gb) : (double)gb == wb && !signbit(gb) == !signbit(wb), what);
		/* Round trips of every non-NaN pattern are exact. */
		if (!isnan(w16))
			CHECK(kiln_f32_to_f16(g16) == h, what);
		if (!isnan(wb))
			CHECK(kiln_f32_to_bf16(gb) == h, what);
		else
			CHECK(isnan(kiln_bf16_to_f32(kiln_f32_to_bf16(gb))), what);
		/* Midpoints between neighbours (ties) and just off them. */
		if (h < 0x7bff) {
			double mid = (w16 + value16((uint16_t)(h + 1), 5)) / 2;
			check_narrow((float)mid);
			check_narrow(nextafterf((float)mid, 0));
			check_narrow(nextafterf((float)mid, INFINITY));
		}
	}
	for (int i = 0; i < 200000; i++) {
		uint32_t u = (uint32_t)rng_next();
		float f;
		memcpy(&f, &u, 4);
		if (!isnan(f))
			check_narrow(f);
	}
	const float edge[] = {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 1e-8f, 3e-8f, 5.9604645e-8f,
	                      INFINITY, -INFINITY, 3.4e38f, -3.4e38f, 1.0f, -2.5f};
	for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
		check_narrow(edge[i]);
	CHECK(isnan(kiln_f16_to_f32(kiln_f32_to_f16(NAN))), "f16 NaN stays NaN");
	CHECK(isnan(kiln_bf16_to_f32(kiln_f32_to_bf16(NAN))), "bf16 NaN stays NaN");
	return harness_report();
}
