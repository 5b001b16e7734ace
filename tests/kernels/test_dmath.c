/*
 * test_dmath.c - kiln_f32_unary's KILN_UNARY_LOG and KILN_UNARY_ATAN give
 * exactly the bits of the scalar kiln_logf and kiln_atanf (f32-vmath/
 * dmath.h computes their double operations lane by lane), for the variant
 * kiln_isa() picks: meson runs this binary once per KILN_ISA value (ref,
 * avx2, avx512), so every variant is compared with the scalar definition.
 *
 * Inputs: every float whose bit pattern is a multiple of STRIDE (both
 * signs, every exponent), every float within 2^16 patterns of 0 (the
 * subnormals), 1, 2, sqrt(2) (log's mantissa split), FLT_MAX, and the
 * atan split at 1, a million random bit patterns, and the special values
 * (+-0, +-inf, quiet and signalling NaNs with payloads and both signs).
 * Each batch goes through kiln_f32_unary at an odd offset in lengths 1 to
 * 37 (the masked tails) and once in place; every result must equal the
 * scalar function's bit pattern, and nothing outside the output written.
 */
#include "kiln/kernels.h"

#include "harness.h"

enum { STRIDE = 251, CHUNK = 8192 };

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
static float from_fbits(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }

typedef struct {
	int op;
	const char *name;
	float (*scalar)(float);
	int64_t values, differ;
	uint32_t first_x, first_got, first_want;
} Run;

static float *inbuf, *outbuf, *want;
static int64_t nbuf;
static Guarded gout;

/* the nbuf values of inbuf through the kernel in pieces of 1 .. 37 and whole
 * in place, against the scalar function */
static void flush(Run *r)
{
	if (!nbuf)
		return;
	for (int64_t i = 0; i < nbuf; i++)
		want[i] = r->scalar(inbuf[i]);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0) {
			int64_t len = 1;
			for (int64_t i = 0; i < nbuf; i += len, len = len % 37 + 1) {
				int64_t m = nbuf - i < len ? nbuf - i : len;
				kiln_f32_unary(r->op, inbuf + i, outbuf + i, m);
			}
		} else {
			memcpy(outbuf, inbuf, (size_t)nbuf * sizeof *outbuf);
			kiln_f32_unary(r->op, outbuf, outbuf, nbuf);
		}
		for (int64_t i = 0; i < nbuf; i++)
			if (fbits(outbuf[i]) != fbits(want[i])) {
				if (!r->differ++) {
					r->first_x = fbits(inbuf[i]);
					r->first_got = fbits(outbuf[i]);
					r->first_want = fbits(want[i]);
				}
			}
	}
	r->values += nbuf;
	nbuf = 0;
}

static void add(Run *r, uint32_t u)
{
	inbuf[nbuf++] = from_fbits(u);
	if (nbuf == CHUNK)
		flush(r);
}

/* every pattern within w of u, both signs */
static void around(Run *r, float c, uint32_t w)
{
	uint32_t u = fbits(c);
	for (uint32_t d = 0; d <= 2 * w; d++) {
		uint32_t v = u - w + d;
		if (u < w && d < w - u)
			continue;
		add(r, v);
		add(r, v | 0x80000000u);
	}
}

int main(void)
{
	Run runs[] = {{KILN_UNARY_LOG, "log", kiln_logf, 0, 0, 0, 0, 0},
	              {KILN_UNARY_ATAN, "atan", kiln_atanf, 0, 0, 0, 0, 0}};
	inbuf = xmalloc(CHUNK * sizeof *inbuf);
	want = xmalloc(CHUNK * sizeof *want);
	outbuf = guarded_alloc(&gout, CHUNK * sizeof *outbuf, 4);
	printf("ISA %s\n", kiln_isa_name());
	static const uint32_t special[] = {
		0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u,
		0x7fc12345u, 0xffc54321u, 0x7f800001u, 0xff800001u, 0x7fa00000u, 0x7fbfffffu,
		0x00000001u, 0x80000001u, 0x007fffffu, 0x00800000u, 0x7f7fffffu, 0xff7fffffu,
		0x3f800000u, 0xbf800000u, 0x3f3504f3u, 0x3fb504f3u, 0x3fb504f4u, 0x4b000000u};
	for (int k = 0; k < 2; k++) {
		Run *r = &runs[k];
		for (size_t i = 0; i < sizeof special / sizeof *special; i++)
			add(r, special[i]);
		for (uint64_t u = 0; u <= 0xffffffffu; u += STRIDE)
			add(r, (uint32_t)u);
		around(r, 0.0f, 1u << 16);
		around(r, 1.0f, 1u << 16);
		around(r, 2.0f, 1u << 12);
		around(r, 0.5f, 1u << 12);
		around(r, 1.41421356f, 1u << 12);
		around(r, 0.707106781f, 1u << 12);
		around(r, 2.82842712f, 1u << 10);
		around(r, 3.4e38f, 1u << 10);
		around(r, 1e-30f, 1u << 10);
		rng_state = 12345;
		for (int i = 0; i < 1000000; i++)
			add(r, (uint32_t)rng_next());
		flush(r);
		char what[256];
		snprintf(what, sizeof what,
		         "%s: %lld of %lld values differ from the scalar function (first x 0x%08x: "
		         "got 0x%08x, want 0x%08x)",
		         r->name, (long long)r->differ, (long long)r->values, r->first_x, r->first_got,
		         r->first_want);
		CHECK(r->differ == 0, what);
		printf("%s: %lld values (each twice), %lld differ\n", r->name, (long long)r->values,
		       (long long)r->differ);
	}
	CHECK(guarded_intact(&gout), "nothing written outside the output");
	guarded_free(&gout);
	free(inbuf);
	free(want);
	return harness_report();
}
