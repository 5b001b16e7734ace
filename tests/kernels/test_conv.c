/*
 * test_conv.c - kiln_f32_conv2d against a double-precision reference that
 * follows the ONNX definition literally (every tap, bounds-checked).
 *
 * Cases: plain 3x3 with padding, 1x1 (the GEMM path, with and without groups)
 * and 1x1 variants that must not take it (stride 2, padding), groups > 1,
 * depthwise and depthwise with a channel multiplier, dilation > 1,
 * asymmetric pads, stride > kernel, a kernel larger than the input, pads
 * larger than the kernel (outputs that see only padding), Conv1D as H = 1,
 * non-square everything, no bias, random shapes, and the packed path's
 * tiles (wide rows, row tiles of 32 output channels on short rows). The
 * output is guarded.
 * Tolerance: |err| <= 1e-5 * (sum |x| |w| + |bias|).
 */
#include "kiln/kernels.h"

#include "harness.h"

static const double CONV_TOL = 1e-5;

/* N, C, H, W, M, group, kH, kW, sH, sW, dH, dW, pads top, left, bottom, right */
typedef struct {
	int64_t n, c, h, w, m, group, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
} ConvCase;

static int64_t out_len(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad_sum)
{
	int64_t span = in + pad_sum - d * (k - 1) - 1;
	return span < 0 ? 0 : span / s + 1;
}

/* Output (n, m, oh, ow) by the ONNX definition, tap by tap, with the sum of
 * the magnitudes of its terms. */
static void reference_output(const ConvCase *t, const float *X, const float *W, const float *bias,
                             int64_t n, int64_t m, int64_t oh, int64_t ow, double *want,
                             double *bound)
{
	int64_t cg = t->c / t->group, g = m / (t->m / t->group);
	double sum = bias ? (double)bias[m] : 0.0, mag = fabs(sum);
	for (int64_t c = 0; c < cg; c++)
		for (int64_t i = 0; i < t->kh; i++)
			for (int64_t j = 0; j < t->kw; j++) {
				int64_t ih = oh * t->sh - t->pt + i * t->dh;
				int64_t iw = ow * t->sw - t->pl + j * t->dw;
				if (ih < 0 || ih >= t->h || iw < 0 || iw >= t->w)
					continue;
				double x = (double)X[((n * t->c + g * cg + c) * t->h + ih) * t->w + iw];
				double w = (double)W[((m * cg + c) * t->kh + i) * t->kw + j];
				sum += x * w;
				mag += fabs(x * w);
			}
	*want = sum;
	*bound = mag;
}

static void run_case(const ConvCase *t, int with_bias)
{
	kiln_conv2d_params p = {
		.batch = t->n, .in_channels = t->c, .in_h = t->h, .in_w = t->w,
		.out_channels = t->m, .group = t->group, .kernel_h = t->kh, .kernel_w = t->kw,
		.stride_h = t->sh, .stride_w = t->sw, .dilation_h = t->dh, .dilation_w = t->dw,
		.pad_top = t->pt, .pad_left = t->pl, .pad_bottom = t->pb, .pad_right = t->pr,
	};
	p.out_h = out_len(t->h, t->kh, t->sh, t->dh, t->pt + t->pb);
	p.out_w = out_len(t->w, t->kw, t->sw, t->dw, t->pl + t->pr);
	int64_t cg = t->c / t->group;
	int64_t nx = t->n * t->c * t->h * t->w, nw = t->m * cg * t->kh * t->kw;
	int64_t ny = t->n * t->m * p.out_h * p.out_w;

	float *X = xmalloc((size_t)nx * sizeof *X), *Wt = xmalloc((size_t)nw * sizeof *Wt);
	float *bias = with_bias ? xmalloc((size_t)t->m * sizeof *bias) : NULL;
	double *want = xmalloc((size_t)ny * sizeof *want), *bound = xmalloc((size_t)ny * sizeof *bound);
	fill_uniform(X, nx, -1.0f, 1.0f);
	fill_uniform(Wt, nw, -1.0f, 1.0f);
	if (bias)
		fill_uniform(bias, t->m, -1.0f, 1.0f);
	Guarded gy;
	float *Y = guarded_alloc(&gy, (size_t)ny * sizeof *Y, 0);
	for (int64_t i = 0; i < ny; i++)
		Y[i] = NAN; /* the kernel must write every output */

	for (int64_t n = 0; n < t->n; n++)
		for (int64_t m = 0; m < t->m; m++)
			for (int64_t oh = 0; oh < p.out_h; oh++)
				for (int64_t ow = 0; ow < p.out_w; ow++) {
					int64_t at = ((n * t->m + m) * p.out_h + oh) * p.out_w + ow;
					reference_output(t, X, Wt, bias, n, m, oh, ow, &want[at], &bound[at]);
				}

	kiln_f32_conv2d(&p, X, Wt, bias, Y);

	char what[320];
	snprintf(what, sizeof what,
	         "conv N=%lld C=%lld H=%lld W=%lld M=%lld group=%lld k=%lldx%lld s=%lldx%lld "
	         "d=%lldx%lld pads=%lld,%lld,%lld,%lld out=%lldx%lld bias=%d",
	         (long long)t->n, (long long)t->c, (long long)t->h, (long long)t->w,
	         (long long)t->m, (long long)t->group, (long long)t->kh, (long long)t->kw,
	         (long long)t->sh, (long long)t->sw, (long long)t->dh, (long long)t->dw,
	         (long long)t->pt, (long long)t->pl, (long long)t->pb, (long long)t->pr,
	         (long long)p.out_h, (long long)p.out_w, with_bias);
	CHECK_CLOSE(what, Y, want, bound, ny, CONV_TOL);
	CHECK(guarded_intact(&gy), what);

	/* the packed path (weights packed as the compiler does, work memory as
	 * planned), where it takes the shape */
	int64_t nwork = kiln_f32_conv2d_packed_work(&p);
	if (nwork > 0) {
		float *Wp = xmalloc((size_t)nw * sizeof *Wp);
		kiln_f32_conv2d_pack(&p, Wt, Wp);
		Guarded gw;
		float *work = guarded_alloc(&gw, (size_t)nwork * sizeof *work, 8);
		for (int64_t i = 0; i < ny; i++)
			Y[i] = NAN;
		kiln_f32_conv2d_packed(&p, X, Wp, bias, Y, NULL, work);
		char pw[320];
		snprintf(pw, sizeof pw, "packed %.250s", what);
		CHECK_CLOSE(pw, Y, want, bound, ny, CONV_TOL);
		CHECK(guarded_intact(&gy) && guarded_intact(&gw), pw);
		guarded_free(&gw);
		free(Wp);
	}

	guarded_free(&gy);
	free(X), free(Wt), free(bias), free(want), free(bound);
}

/* A 1-channel 3x3 image, 2x2 kernel, stride 1, pad 1 on the left only, by hand. */
static void by_hand(void)
{
	const float X[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	const float W[4] = {1, 10, 100, 1000};
	const float bias[1] = {0.5f};
	kiln_conv2d_params p = {
		.batch = 1, .in_channels = 1, .in_h = 3, .in_w = 3, .out_channels = 1, .group = 1,
		.kernel_h = 2, .kernel_w = 2, .stride_h = 1, .stride_w = 1, .dilation_h = 1,
		.dilation_w = 1, .pad_left = 1, .out_h = 2, .out_w = 3,
	};
	float Y[6];
	kiln_f32_conv2d(&p, X, W, bias, Y);
	/* output (0, 0) sees x(0,-1)=pad, x(0,0)=1, x(1,-1)=pad, x(1,0)=4 */
	CHECK(Y[0] == 0.5f + 10 * 1 + 1000 * 4, "conv by hand, padded corner");
	CHECK(Y[4] == 0.5f + 1 * 4 + 10 * 5 + 100 * 7 + 1000 * 8, "conv by hand, interior");
}

int main(void)
{
	static const ConvCase cases[] = {
		/* n  c   h   w   m grp kh kw sh sw dh dw pt pl pb pr */
		{2, 3, 8, 8, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* 3x3 same */
		{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* all ones */
		{2, 5, 6, 7, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* 1x1: the gemm path */
		{2, 6, 5, 3, 4, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},    /* 1x1 grouped, gemm path */
		{1, 4, 7, 7, 3, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},    /* 1x1 stride 2 */
		{1, 4, 5, 5, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 2},    /* 1x1 padded */
		{2, 6, 9, 9, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},    /* depthwise */
		{1, 3, 6, 5, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* depthwise x2 */
		{1, 4, 6, 6, 6, 2, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0},    /* 2 groups */
		{1, 6, 7, 8, 9, 3, 2, 3, 1, 2, 1, 1, 1, 0, 0, 1},    /* 3 groups */
		{1, 2, 10, 10, 3, 1, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},  /* dilation 2 */
		{1, 2, 11, 9, 2, 1, 3, 2, 2, 1, 3, 2, 0, 1, 2, 3},   /* dilation 3x2, odd pads */
		{2, 3, 7, 6, 2, 1, 3, 3, 1, 1, 1, 1, 0, 2, 3, 1},    /* asymmetric pads */
		{1, 2, 10, 11, 2, 1, 2, 2, 3, 3, 1, 1, 0, 0, 0, 0},  /* stride > kernel */
		{1, 2, 3, 3, 2, 1, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},    /* kernel > input */
		{1, 2, 4, 4, 3, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2},    /* pads > kernel */
		{1, 2, 4, 5, 3, 1, 2, 2, 3, 2, 1, 1, 3, 2, 3, 4},    /* windows wholly in padding */
		{3, 4, 1, 20, 5, 1, 1, 5, 1, 2, 1, 2, 0, 3, 0, 1},   /* Conv1D */
		{1, 3, 7, 11, 4, 1, 2, 4, 2, 1, 3, 1, 1, 0, 2, 3},   /* non-square */
		{1, 16, 5, 5, 32, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* more channels */
		{1, 40, 12, 12, 20, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, /* K = 360: im2col in K blocks */
		{2, 33, 9, 9, 14, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},  /* strided, M over a tile */
		{1, 8, 3, 40, 13, 1, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1},  /* rows longer than a panel */
		{1, 300, 2, 2, 5, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},  /* 1x1, K = 300 */
		{1, 2, 32, 1, 3, 1, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3},   /* 49 taps x 32 runs: no table */
		{1, 3, 30, 3, 4, 1, 7, 7, 1, 2, 1, 1, 3, 3, 3, 3},   /* the same, strided */
		{1, 3, 40, 41, 5, 1, 7, 7, 2, 3, 1, 1, 3, 2, 3, 4},  /* gathers over row ends */
		{0, 3, 5, 5, 2, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* empty batch */
		{3, 16, 15, 15, 24, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, /* packed: 3 groups, strided */
		{2, 3, 20, 21, 17, 1, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},  /* packed: a 7x7 stem, 17 rows */
		{2, 24, 9, 9, 40, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   /* packed: wide rows past 48 */
		{1, 9, 11, 13, 8, 1, 3, 2, 3, 4, 2, 3, 2, 1, 0, 3},   /* packed: all phases mixed */
		{2, 12, 8, 8, 16, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},   /* packed: 1x1 stride 2 */
		{2, 32, 7, 7, 64, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   /* packed rows: 7x7, 7 runs */
		{1, 37, 14, 14, 96, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, /* packed rows: 14 wide, odd C */
		{2, 30, 27, 28, 32, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}, /* packed rows: stride 2 */
		{1, 30, 11, 11, 32, 1, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2}, /* packed rows: dilation, 7 + 4 */
		{1, 64, 13, 12, 32, 1, 2, 3, 3, 2, 1, 2, 1, 0, 2, 3}, /* packed rows: phases mixed */
		{1, 128, 7, 7, 32, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},  /* packed rows: 1x1, K = 128 */
		{1, 300, 7, 7, 32, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},  /* packed rows: 1x1, K = 300 */
		{2, 32, 9, 30, 64, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* packed rows: 30 wide */
	};
	by_hand();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		run_case(&cases[i], 1);
		run_case(&cases[i], 0);
	}
	for (int i = 0; i < 60; i++) {
		ConvCase t;
		t.group = rng_int(1, 3);
		t.c = t.group * rng_int(1, 3);
		t.m = t.group * rng_int(1, 3);
		t.n = rng_int(1, 2);
		t.h = rng_int(1, 12), t.w = rng_int(1, 12);
		t.kh = rng_int(1, 4), t.kw = rng_int(1, 4);
		t.sh = rng_int(1, 3), t.sw = rng_int(1, 3);
		t.dh = rng_int(1, 3), t.dw = rng_int(1, 3);
		t.pt = rng_int(0, 3), t.pl = rng_int(0, 3), t.pb = rng_int(0, 3), t.pr = rng_int(0, 3);
		run_case(&t, (int)(i % 2));
	}
	return harness_report();
}
