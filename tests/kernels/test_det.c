/*
 * test_det.c - kiln_f64_det against the Leibniz formula (a sum over every
 * permutation, no division, no pivoting), computed in long double for
 * matrices up to 7 x 7, and against exact determinants of structured
 * matrices (zero size, row swaps, singular, triangular products).
 *
 * Tolerance: |got - want| <= 1e-12 * sum over permutations of |product|,
 * the bound rounding error in any elimination is proportional to.
 */
#include "harness.h"

#include "kiln/kernels.h"

/* sum over permutations p of sign(p) prod A[i][p(i)], and of |prod|. */
static void leibniz(const double *A, int n, int depth, int *used, long double prod, int sign,
                    long double *sum, long double *mag)
{
	if (depth == n) {
		*sum += sign * prod;
		*mag += fabsl(prod);
		return;
	}
	/* The sign flips once per earlier unused column skipped (inversions). */
	int skipped = 0;
	for (int j = 0; j < n; j++) {
		if (used[j])
			continue;
		used[j] = 1;
		leibniz(A, n, depth + 1, used, prod * (long double)A[depth * n + j], skipped % 2 ? -sign : sign, sum,
		        mag);
		used[j] = 0;
		skipped++;
	}
}

static void check_random(int n)
{
	double A[49], work[49];
	for (int i = 0; i < n * n; i++)
		A[i] = rng_double(-2, 2);
	memcpy(work, A, sizeof A);
	int used[7] = {0};
	long double sum = 0, mag = 0;
	leibniz(A, n, 0, used, 1, 1, &sum, &mag);
	double got = kiln_f64_det(work, n);
	char what[128];
	snprintf(what, sizeof what, "random %dx%d: got %.17g want %.17Lg", n, n, got, sum);
	CHECK(fabsl((long double)got - sum) <= 1e-12L * (mag > 0 ? mag : 1), what);
}

int main(void)
{
	for (int n = 1; n <= 7; n++)
		for (int rep = 0; rep < 20; rep++)
			check_random(n);

	CHECK(kiln_f64_det(NULL, 0) == 1, "0x0 is 1");

	double swap[4] = {0, 1, 1, 0};
	CHECK(kiln_f64_det(swap, 2) == -1, "a row swap is -1");

	double singular[9] = {1, 2, 3, 2, 4, 6, 1, 0, 1};
	CHECK(kiln_f64_det(singular, 3) == 0, "two proportional rows give 0");

	double zero_col[9] = {0, 1, 2, 0, 3, 4, 0, 5, 6};
	CHECK(kiln_f64_det(zero_col, 3) == 0, "a zero column gives 0");

	/* L (unit lower) times U (upper, diagonal d): det = prod d, exactly
	 * representable; elimination must recover it to rounding. */
	enum { N = 24 };
	static double L[N * N], U[N * N], M[N * N];
	double want = 1;
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			L[i * N + j] = i == j ? 1 : i > j ? rng_double(-0.5, 0.5) : 0;
			double d = i % 3 == 0 ? 2 : i % 3 == 1 ? -0.5 : 1.5;
			U[i * N + j] = i == j ? d : j > i ? rng_double(-1, 1) : 0;
		}
	for (int i = 0; i < N; i++)
		want *= U[i * N + i];
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			double s = 0;
			for (int k = 0; k < N; k++)
				s += L[i * N + k] * U[k * N + j];
			M[i * N + j] = s;
		}
	double got = kiln_f64_det(M, N);
	char what[128];
	snprintf(what, sizeof what, "LU product %dx%d: got %.17g want %.17g", N, N, got, want);
	CHECK(fabs(got - want) <= 1e-9 * fabs(want), what);

	double nan[4] = {(double)NAN, 1, 1, 1};
	CHECK(isnan(kiln_f64_det(nan, 2)), "NaN propagates");
	return harness_report();
}
