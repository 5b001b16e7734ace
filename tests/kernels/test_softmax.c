/*
 * test_softmax.c - kiln_f32_softmax (Softmax and LogSoftmax) against a
 * double-precision reference, over [outer, axis_len, inner] views with
 * inner == 1 (contiguous lines) and inner > 1 (strided lines, including
 * counts that are not multiples of the kernel's 64-column chunks), out of
 * place and in place.
 *
 * Data ranges go from [-1, 1] to [-1e30, 1e30]; anything past about 88 would
 * overflow a naive exp, so these check that the maximum is subtracted and
 * that no inf or NaN appears. Lines with -inf elements (masked attention
 * logits) must give exactly 0 (LogSoftmax: -inf) there, and lines of equal
 * huge values must give 1 / axis_len.
 * Tolerances: Softmax |err| <= 1e-5 * (want + 1e-30) (relative, with a floor
 * far below anything but float underflow); LogSoftmax
 * |err| <= 1e-5 * (|x - max| + |log sum|), the size of the terms it adds.
 */
#include "kiln/kernels.h"

#include "harness.h"

static const double SOFTMAX_TOL = 1e-5;

enum { DATA_KINDS = 6 };
static const char *const data_names[DATA_KINDS] = {
	"[-1,1]", "[-100,100]", "[-1e4,1e4]", "[-1e30,1e30]", "[-5,5] with -inf", "all 3e38",
};

static void fill(float *x, int64_t outer, int64_t len, int64_t inner, int kind)
{
	static const float range[] = {1.0f, 100.0f, 1e4f, 1e30f, 5.0f};
	int64_t n = outer * len * inner;
	if (kind == 5) {
		for (int64_t i = 0; i < n; i++)
			x[i] = 3e38f;
		return;
	}
	fill_uniform(x, n, -range[kind], range[kind]);
	if (kind != 4)
		return;
	for (int64_t i = 0; i < n; i++)
		if (rng_int(0, 4) == 0)
			x[i] = -INFINITY;
	/* keep one finite element per line: a line of only -inf has no softmax */
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < inner; j++)
			if (len > 0)
				x[o * len * inner + rng_int(0, len - 1) * inner + j] = 1.0f;
}

static void run_case(int64_t outer, int64_t len, int64_t inner, int kind, int is_log, int in_place)
{
	int64_t n = outer * len * inner;
	float *X = xmalloc((size_t)n * sizeof *X);
	double *want = xmalloc((size_t)n * sizeof *want), *bound = xmalloc((size_t)n * sizeof *bound);
	fill(X, outer, len, inner, kind);

	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < inner; j++) {
			const float *x = X + o * len * inner + j;
			double max = -(double)INFINITY, sum = 0.0;
			for (int64_t a = 0; a < len; a++)
				max = (double)x[a * inner] > max ? (double)x[a * inner] : max;
			for (int64_t a = 0; a < len; a++)
				sum += exp((double)x[a * inner] - max);
			for (int64_t a = 0; a < len; a++) {
				int64_t at = o * len * inner + a * inner + j;
				double d = (double)x[a * inner] - max;
				if (is_log) {
					want[at] = d - log(sum);
					bound[at] = fabs(d) + fabs(log(sum));
				} else {
					want[at] = exp(d) / sum;
					bound[at] = want[at] + 1e-30;
				}
			}
		}

	Guarded gy;
	float *Y = guarded_alloc(&gy, (size_t)n * sizeof *Y, 0);
	if (in_place) {
		memcpy(Y, X, (size_t)n * sizeof *Y);
		kiln_f32_softmax(Y, Y, outer, len, inner, is_log);
	} else {
		for (int64_t i = 0; i < n; i++)
			Y[i] = NAN;
		kiln_f32_softmax(X, Y, outer, len, inner, is_log);
	}

	char what[256];
	snprintf(what, sizeof what, "%s outer=%lld axis_len=%lld inner=%lld data %s%s",
	         is_log ? "log_softmax" : "softmax", (long long)outer, (long long)len,
	         (long long)inner, data_names[kind], in_place ? " in place" : "");
	CHECK_CLOSE(what, Y, want, bound, n, SOFTMAX_TOL);
	CHECK(guarded_intact(&gy), what);
	guarded_free(&gy);
	free(X), free(want), free(bound);
}

/* Exact expectations that need no reference. */
static void by_hand(void)
{
	float x[4] = {1000.0f, 1000.0f, -INFINITY, 1000.0f}, y[4];
	kiln_f32_softmax(x, y, 1, 4, 1, 0);
	CHECK(fabsf(y[0] - 1.0f / 3) < 1e-7f && y[0] == y[1] && y[1] == y[3] && y[2] == 0.0f,
	      "softmax of {1000, 1000, -inf, 1000}");
	kiln_f32_softmax(x, y, 1, 4, 1, 1);
	CHECK(fabsf(y[0] + logf(3.0f)) < 1e-6f && y[2] == -INFINITY,
	      "log_softmax of {1000, 1000, -inf, 1000}");
	float one = -3e38f;
	kiln_f32_softmax(&one, y, 1, 1, 1, 0);
	CHECK(y[0] == 1.0f, "softmax of one element is 1");
	kiln_f32_softmax(&one, y, 1, 1, 1, 1);
	CHECK(y[0] == 0.0f, "log_softmax of one element is 0");
}

int main(void)
{
	static const int64_t shapes[][3] = {
		{1, 1, 1}, {1, 2, 1}, {3, 7, 1}, {2, 1000, 1}, {2, 5, 3}, {3, 17, 70}, {1, 3, 64},
		{4, 2, 129}, {1, 1, 5}, {2, 300, 65}, {5, 10, 1}, {0, 3, 3}, {3, 0, 3}, {2, 3, 0},
	};
	by_hand();
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int kind = 0; kind < DATA_KINDS; kind++)
			for (int is_log = 0; is_log < 2; is_log++)
				for (int in_place = 0; in_place < 2; in_place++)
					run_case(shapes[s][0], shapes[s][1], shapes[s][2], kind, is_log, in_place);
	for (int i = 0; i < 20; i++) {
		/* one draw per statement: argument order would differ between compilers */
		int64_t outer = rng_int(1, 4), len = rng_int(1, 50), inner = rng_int(1, 100);
		int kind = (int)rng_int(0, DATA_KINDS - 1);
		run_case(outer, len, inner, kind, i % 2, (i / 2) % 2);
	}
	return harness_report();
}
