/*
 * test_reduce.c - kiln_f32_reduce_sum and kiln_f32_reduce_mean against a
 * double-precision reference, over [outer, reduce_len, inner] views with
 * inner == 1 and inner > 1 (column counts that are not multiples of the
 * kernel's 64-column chunks), reduce_len == 0 (sum 0, mean NaN) and empty
 * outputs.
 *
 * Where inner == 1 the kernel sums several rows side by side; each row's
 * result must still be the bits of one double chain over r from 0 (the
 * order docs/reproducibility.md states), checked exactly.
 *
 * One case sums 2^20 values in [0, 1): float accumulation is off by far more
 * than the tolerance there, so it proves the accumulation is in double.
 * Tolerance: |err| <= 1e-6 * (|want| + 1e-6 * sum |x|): within a few float
 * roundings of the exact result, with a small allowance for cancellation.
 */
#include "kiln/kernels.h"

#include "harness.h"

static const double REDUCE_TOL = 1e-6;

static void run_case(int64_t outer, int64_t len, int64_t inner, float lo, float hi)
{
	int64_t nx = outer * len * inner, ny = outer * inner;
	float *X = xmalloc((size_t)nx * sizeof *X);
	fill_uniform(X, nx, lo, hi);
	double *want_sum = xmalloc((size_t)ny * sizeof(double));
	double *want_mean = xmalloc((size_t)ny * sizeof(double));
	double *bound_sum = xmalloc((size_t)ny * sizeof(double));
	double *bound_mean = xmalloc((size_t)ny * sizeof(double));
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < inner; j++) {
			double sum = 0.0, mag = 0.0;
			for (int64_t r = 0; r < len; r++) {
				double x = (double)X[(o * len + r) * inner + j];
				sum += x, mag += fabs(x);
			}
			int64_t at = o * inner + j;
			want_sum[at] = sum;
			bound_sum[at] = fabs(sum) + 1e-6 * mag;
			want_mean[at] = len ? sum / (double)len : (double)NAN;
			bound_mean[at] = len ? bound_sum[at] / (double)len : 0.0;
		}

	char what[200];
	Guarded gy;
	float *Y = guarded_alloc(&gy, (size_t)ny * sizeof *Y, 0);
	for (int64_t i = 0; i < ny; i++)
		Y[i] = NAN;
	kiln_f32_reduce_sum(X, Y, outer, len, inner);
	snprintf(what, sizeof what, "reduce_sum outer=%lld len=%lld inner=%lld data [%g,%g)",
	         (long long)outer, (long long)len, (long long)inner, (double)lo, (double)hi);
	CHECK_CLOSE(what, Y, want_sum, bound_sum, ny, REDUCE_TOL);
	CHECK(guarded_intact(&gy), what);

	for (int64_t i = 0; i < ny; i++)
		Y[i] = 12345.0f;
	kiln_f32_reduce_mean(X, Y, outer, len, inner);
	snprintf(what, sizeof what, "reduce_mean outer=%lld len=%lld inner=%lld data [%g,%g)",
	         (long long)outer, (long long)len, (long long)inner, (double)lo, (double)hi);
	CHECK_CLOSE(what, Y, want_mean, bound_mean, ny, REDUCE_TOL);
	CHECK(guarded_intact(&gy), what);

	if (inner == 1 && len > 0)
		for (int64_t o = 0; o < outer; o++) {
			double sum = 0.0;
			for (int64_t r = 0; r < len; r++)
				sum += (double)X[o * len + r];
			float m = (float)(sum * (1.0 / (double)len));
			CHECK(memcmp(&Y[o], &m, sizeof m) == 0, what);
		}

	guarded_free(&gy);
	free(X), free(want_sum), free(want_mean), free(bound_sum), free(bound_mean);
}

int main(void)
{
	static const int64_t shapes[][3] = {
		{1, 1, 1}, {1, 100, 1}, {3, 7, 5}, {2, 1000, 1}, {2, 33, 70}, {4, 5, 130}, {1, 3, 64},
		{1, 0, 3}, {2, 0, 1}, {0, 5, 5}, {3, 5, 0}, {7, 1, 9}, {1, 4097, 2}, {13, 100, 1},
		{16, 3, 1}, {8, 0, 1},
	};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		run_case(shapes[s][0], shapes[s][1], shapes[s][2], -1.0f, 1.0f);
		run_case(shapes[s][0], shapes[s][1], shapes[s][2], 100.0f, 101.0f);
	}
	run_case(1, 1 << 20, 1, 0.0f, 1.0f);
	run_case(1, 1 << 16, 3, 0.0f, 1.0f);
	for (int i = 0; i < 20; i++) {
		/* one draw per statement: argument order would differ between compilers */
		int64_t outer = rng_int(1, 5), len = rng_int(1, 200), inner = rng_int(1, 150);
		run_case(outer, len, inner, -10.0f, 10.0f);
	}
	return harness_report();
}
