/*
 * test_norm.c - kiln_f32_layernorm and kiln_f32_batchnorm against
 * double-precision references, out of place and in place.
 *
 * Besides well-conditioned data, both are fed data whose mean is large next
 * to its spread (values 1000 +- 0.01), where float arithmetic of x - mean
 * would lose most digits; the kernels compute in double and must keep them.
 * LayerNorm runs with and without bias, with norm_size 1 (output = bias), and
 * with rows of equal values (variance 0, so epsilon alone sets the scale);
 * kiln_f32_add_layernorm (a residual R added first) against the reference of
 * the float sum X + R, out of place, in X and in R.
 * Tolerance: |err| <= 1e-6 * (|(x - mean) * inv_std * scale| + |bias|), the
 * size of the two terms (tighter than the float kernels' 1e-5, since these
 * compute in double). LayerNorm is also held to the bound its kernel states
 * (f32-vmath/body.h, ln_rows: the mean in double, the variance's sum in float
 * chains of at most LN_FBLOCK vectors added into double lanes): 7.5 u = 4.5e-7
 * of the same size.
 */
#include "kiln/kernels.h"

#include "harness.h"

static const double NORM_TOL = 1e-6;
static const double LN_BOUND = 4.5e-7;  /* 7.5 u, u = 2^-24 */

enum { DATA_KINDS = 3 };
static const char *const data_names[DATA_KINDS] = {"[-1,1]", "1000+-0.01", "constant"};

static void fill(float *x, int64_t n, int kind)
{
	if (kind == 0)
		fill_uniform(x, n, -1.0f, 1.0f);
	else if (kind == 1)
		fill_uniform(x, n, 999.99f, 1000.01f);
	else
		for (int64_t i = 0; i < n; i++)
			x[i] = 2.5f;
}

/* residual: 0 none; 1 R added, out of place; 2 in X's memory; 3 in R's */
static void layernorm_case(int64_t outer, int64_t size, int kind, int with_bias, float eps,
                           int in_place, int residual)
{
	int64_t n = outer * size;
	float *X = xmalloc((size_t)n * sizeof *X), *scale = xmalloc((size_t)size * sizeof *scale);
	float *bias = with_bias ? xmalloc((size_t)size * sizeof *bias) : NULL;
	double *want = xmalloc((size_t)n * sizeof *want), *bound = xmalloc((size_t)n * sizeof *bound);
	float *R = xmalloc((size_t)(n + 1) * sizeof *R), *X0 = xmalloc((size_t)(n + 1) * sizeof *X0);
	fill(X, n, kind);
	fill_uniform(R, n, -0.5f, 0.5f);
	memcpy(X0, X, (size_t)n * sizeof *X);
	if (residual)  /* the reference normalizes the float sum */
		for (int64_t i = 0; i < n; i++)
			X[i] = X0[i] + R[i];
	fill_uniform(scale, size, -2.0f, 2.0f);
	if (bias)
		fill_uniform(bias, size, -1.0f, 1.0f);
	for (int64_t o = 0; o < outer; o++) {
		const float *x = X + o * size;
		double mean = 0.0, var = 0.0;
		for (int64_t i = 0; i < size; i++)
			mean += (double)x[i];
		mean /= (double)size;
		for (int64_t i = 0; i < size; i++)
			var += ((double)x[i] - mean) * ((double)x[i] - mean);
		var /= (double)size;
		for (int64_t i = 0; i < size; i++) {
			double t = ((double)x[i] - mean) / sqrt(var + (double)eps) * (double)scale[i];
			double b = bias ? (double)bias[i] : 0.0;
			want[o * size + i] = t + b;
			bound[o * size + i] = fabs(t) + fabs(b);
		}
	}
	Guarded gy;
	float *Y = guarded_alloc(&gy, (size_t)n * sizeof *Y, 0);
	if (residual) {
		float *x = X0, *r = R;
		if (residual == 2)
			memcpy(Y, X0, (size_t)n * sizeof *Y), x = Y;
		else if (residual == 3)
			memcpy(Y, R, (size_t)n * sizeof *Y), r = Y;
		kiln_f32_add_layernorm(x, r, scale, bias, Y, outer, size, eps);
	} else if (in_place) {
		memcpy(Y, X, (size_t)n * sizeof *Y);
		kiln_f32_layernorm(Y, scale, bias, Y, outer, size, eps);
	} else {
		for (int64_t i = 0; i < n; i++)
			Y[i] = NAN;
		kiln_f32_layernorm(X, scale, bias, Y, outer, size, eps);
	}
	char what[256];
	static const char *const res_names[] = {"", " + residual", " + residual in X",
	                                        " + residual in R"};
	snprintf(what, sizeof what, "layernorm outer=%lld size=%lld data %s%s bias=%d eps=%g%s",
	         (long long)outer, (long long)size, data_names[kind], res_names[residual], with_bias,
	         (double)eps, in_place ? " in place" : "");
	CHECK_CLOSE(what, Y, want, bound, n, NORM_TOL);
	CHECK_CLOSE(what, Y, want, bound, n, LN_BOUND);
	CHECK(guarded_intact(&gy), what);
	guarded_free(&gy);
	free(X), free(scale), free(bias), free(want), free(bound), free(R), free(X0);
}

static void batchnorm_case(int64_t N, int64_t C, int64_t spatial, int kind, float eps, int in_place)
{
	int64_t n = N * C * spatial;
	float *X = xmalloc((size_t)n * sizeof *X);
	float *scale = xmalloc((size_t)C * sizeof(float)), *bias = xmalloc((size_t)C * sizeof(float));
	float *mean = xmalloc((size_t)C * sizeof(float)), *var = xmalloc((size_t)C * sizeof(float));
	double *want = xmalloc((size_t)n * sizeof *want), *bound = xmalloc((size_t)n * sizeof *bound);
	fill(X, n, kind);
	fill_uniform(scale, C, -2.0f, 2.0f);
	fill_uniform(bias, C, -1.0f, 1.0f);
	fill_uniform(var, C, 0.0f, 2.0f);
	if (C > 0)
		var[0] = 0.0f; /* epsilon alone */
	if (kind == 1)
		fill_uniform(mean, C, 999.99f, 1000.01f);
	else
		fill_uniform(mean, C, -1.0f, 1.0f);
	for (int64_t b = 0; b < N; b++)
		for (int64_t c = 0; c < C; c++)
			for (int64_t i = 0; i < spatial; i++) {
				int64_t at = (b * C + c) * spatial + i;
				double t = ((double)X[at] - (double)mean[c]) /
				           sqrt((double)var[c] + (double)eps) * (double)scale[c];
				want[at] = t + (double)bias[c];
				bound[at] = fabs(t) + fabs((double)bias[c]);
			}
	Guarded gy;
	float *Y = guarded_alloc(&gy, (size_t)n * sizeof *Y, 0);
	if (in_place) {
		memcpy(Y, X, (size_t)n * sizeof *Y);
		kiln_f32_batchnorm(Y, scale, bias, mean, var, Y, N, C, spatial, eps);
	} else {
		for (int64_t i = 0; i < n; i++)
			Y[i] = NAN;
		kiln_f32_batchnorm(X, scale, bias, mean, var, Y, N, C, spatial, eps);
	}
	char what[256];
	snprintf(what, sizeof what, "batchnorm N=%lld C=%lld spatial=%lld data %s eps=%g%s",
	         (long long)N, (long long)C, (long long)spatial, data_names[kind], (double)eps,
	         in_place ? " in place" : "");
	CHECK_CLOSE(what, Y, want, bound, n, NORM_TOL);
	CHECK(guarded_intact(&gy), what);
	guarded_free(&gy);
	free(X), free(scale), free(bias), free(mean), free(var), free(want), free(bound);
}

/* norm_size 1: every row is its own mean, so the output is the bias. */
static void by_hand(void)
{
	const float x[3] = {5, -7, 1e30f}, scale[1] = {3}, bias[1] = {0.25f};
	float y[3];
	kiln_f32_layernorm(x, scale, bias, y, 3, 1, 1e-5f);
	CHECK(y[0] == 0.25f && y[1] == 0.25f && y[2] == 0.25f, "layernorm of size 1 gives the bias");
	const float x2[2] = {1, 3}, s2[2] = {1, 1};
	kiln_f32_layernorm(x2, s2, NULL, y, 1, 2, 0.0f);
	CHECK(y[0] == -1.0f && y[1] == 1.0f, "layernorm of {1, 3} is {-1, 1}");
}

int main(void)
{
	static const int64_t ln_shapes[][2] = {
		{1, 1}, {3, 1}, {2, 5}, {4, 64}, {7, 1000}, {1, 4097}, {0, 5}, {3, 0}, {16, 33},
	};
	static const int64_t bn_shapes[][3] = {
		{1, 1, 1}, {2, 3, 5}, {1, 16, 49}, {3, 7, 1}, {0, 3, 4}, {2, 0, 3}, {2, 5, 0}, {2, 4, 1000},
	};
	by_hand();
	for (size_t s = 0; s < sizeof ln_shapes / sizeof ln_shapes[0]; s++)
		for (int kind = 0; kind < DATA_KINDS; kind++)
			for (int with_bias = 0; with_bias < 2; with_bias++)
				for (int in_place = 0; in_place < 2; in_place++) {
					float eps = (with_bias + in_place) % 2 ? 1e-5f : 1e-2f;
					layernorm_case(ln_shapes[s][0], ln_shapes[s][1], kind, with_bias, eps,
					               in_place, 0);
					layernorm_case(ln_shapes[s][0], ln_shapes[s][1], kind, with_bias, eps, 0,
					               in_place ? 2 + with_bias : 1);
				}
	for (size_t s = 0; s < sizeof bn_shapes / sizeof bn_shapes[0]; s++)
		for (int kind = 0; kind < DATA_KINDS; kind++)
			for (int in_place = 0; in_place < 2; in_place++)
				batchnorm_case(bn_shapes[s][0], bn_shapes[s][1], bn_shapes[s][2], kind,
				               in_place ? 1e-3f : 1e-5f, in_place);
	return harness_report();
}
