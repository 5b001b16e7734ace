/*
 * harness.h - what the kernel tests share: a fixed-seed random generator,
 * guarded buffers, and checks that compare a kernel's float32 output with a
 * double-precision reference computed in the test.
 *
 * Float results are judged against an error bound, not against the size of
 * the result: a check passes when |got - want| <= tol * bound, where the test
 * passes bound = the sum of the magnitudes of the terms that make up the
 * result (e.g. sum_k |a_mk| |b_kn| for a product). That is the quantity
 * floating-point rounding error is proportional to, so the check stays
 * meaningful when terms cancel and the result is near zero. Infinities must
 * match exactly and a NaN is expected only where the reference has one.
 *
 * Every check counts one pass or one failure (a whole output array is one
 * check). A failure prints what was being tested and the first bad element.
 * harness_report prints the closing line "N passed, N failed".
 */
#ifndef KILN_TEST_KERNELS_HARNESS_H
#define KILN_TEST_KERNELS_HARNESS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int harness_passed, harness_failed;

/* Count one check; on failure print `what` (a description of the case). */
static inline int harness_check(int ok, const char *file, int line, const char *what)
{
	if (ok) {
		harness_passed++;
	} else {
		harness_failed++;
		fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what);
	}
	return ok;
}
#define CHECK(cond, what) harness_check((cond) != 0, __FILE__, __LINE__, (what))

static inline int harness_report(void)
{
	printf("%d passed, %d failed\n", harness_passed, harness_failed);
	return harness_failed != 0;
}

/* ---- deterministic random numbers (splitmix64) ---- */

static uint64_t rng_state = 0x6b696c6e2d6b726eu; /* fixed: every run sees the same data */

static inline uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* uniform in [lo, hi) */
static inline double rng_double(double lo, double hi)
{
	return lo + (hi - lo) * ((double)(rng_next() >> 11) * 0x1p-53);
}

static inline float rng_float(float lo, float hi)
{
	return (float)rng_double((double)lo, (double)hi);
}

/* uniform integer in [lo, hi] */
static inline int64_t rng_int(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rng_next() % (uint64_t)(hi - lo + 1));
}

static inline void fill_uniform(float *x, int64_t n, float lo, float hi)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = rng_float(lo, hi);
}

/* ---- guarded buffers ---- */

/* A buffer with GUARD_BYTES of a known pattern before and after it, to catch
 * writes just outside an output even without AddressSanitizer (which catches
 * the rest). `misalign` shifts the data by that many bytes off the malloc
 * alignment, to prove the kernels make no alignment assumptions. */
enum { GUARD_BYTES = 64, GUARD_BYTE = 0xA5 };

typedef struct {
	unsigned char *base; /* from malloc */
	size_t bytes;        /* the usable size */
	size_t misalign;
} Guarded;

static inline void *guarded_alloc(Guarded *g, size_t bytes, size_t misalign)
{
	g->bytes = bytes;
	g->misalign = misalign;
	g->base = malloc(2 * GUARD_BYTES + bytes + misalign);
	if (!g->base) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	memset(g->base, GUARD_BYTE, 2 * GUARD_BYTES + bytes + misalign);
	return g->base + GUARD_BYTES + misalign;
}

static inline void *guarded_data(const Guarded *g)
{
	return g->base + GUARD_BYTES + g->misalign;
}

/* Are the bytes around the buffer as guarded_alloc left them? */
static inline int guarded_intact(const Guarded *g)
{
	const unsigned char *p = g->base;
	size_t total = 2 * GUARD_BYTES + g->bytes + g->misalign;
	for (size_t i = 0; i < GUARD_BYTES + g->misalign; i++)
		if (p[i] != GUARD_BYTE)
			return 0;
	for (size_t i = GUARD_BYTES + g->misalign + g->bytes; i < total; i++)
		if (p[i] != GUARD_BYTE)
			return 0;
	return 1;
}

static inline void guarded_free(Guarded *g)
{
	free(g->base);
	g->base = NULL;
}

/* ---- comparing floats with a reference ---- */

static inline int close_enough(float got, double want, double bound, double tol)
{
	if (isnan(want))
		return isnan(got);
	if (isinf(want))
		return (double)got == want;
	if (!isfinite(got))
		return 0;
	return fabs((double)got - want) <= tol * bound;
}

/* One check over n elements: got[i] against want[i] within tol * bound[i]. */
static inline int check_close_at(const char *file, int line, const char *what, const float *got,
                          const double *want, const double *bound, int64_t n, double tol)
{
	int64_t bad = 0, first = -1;
	for (int64_t i = 0; i < n; i++)
		if (!close_enough(got[i], want[i], bound[i], tol)) {
			if (first < 0)
				first = i;
			bad++;
		}
	if (bad) {
		char msg[512];
		snprintf(msg, sizeof msg,
		         "%s: %lld of %lld elements off; first [%lld] got %.9g want %.9g "
		         "(|err| %.3g > %.3g = %.3g * bound %.3g)",
		         what, (long long)bad, (long long)n, (long long)first, (double)got[first],
		         want[first], fabs((double)got[first] - want[first]),
		         tol * bound[first], tol, bound[first]);
		return harness_check(0, file, line, msg);
	}
	return harness_check(1, file, line, what);
}
#define CHECK_CLOSE(what, got, want, bound, n, tol) \
	check_close_at(__FILE__, __LINE__, (what), (got), (want), (bound), (n), (tol))

/* The largest |got - want| / bound over n elements, or *worst if larger: the
 * measured error a test prints beside its tolerance. */
static inline void track_worst(const float *got, const double *want, const double *bound,
                               int64_t n, double *worst)
{
	for (int64_t i = 0; i < n; i++) {
		double e = fabs((double)got[i] - want[i]) / bound[i];
		if (e > *worst)
			*worst = e;
	}
}

/* malloc that never returns NULL, for the reference arrays */
static inline void *xmalloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

#endif
