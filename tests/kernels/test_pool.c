/*
 * test_pool.c - kiln_f32_maxpool2d, kiln_f32_avgpool2d (count_include_pad
 * both ways), kiln_f32_global_avgpool and kiln_f32_global_maxpool against a
 * reference that visits every tap of every window.
 *
 * Output sizes are computed here as the caller would, in floor or ceil mode,
 * and ceil mode is taken literally: windows may start in, or run beyond, the
 * bottom/right padding. Cases: plain, padded, asymmetric pads, dilation,
 * stride > kernel, windows wholly in padding (max gives -inf; average gives 0
 * when padding counts, NaN when it does not), windows reaching beyond the
 * padding (those taps are never counted), ResNet's 3x3/2 stem, rows wider than
 * kiln_f32_maxpool2d's row buffer, windows of more than 8 rows, NaN taps (never
 * win), and random shapes.
 * Tolerances: max pooling is exact; window averages |err| <= 1e-5 * sum|x| /
 * count; global averages (accumulated in double) |err| <= 1e-6 * sum|x| / n.
 */
#include "kiln/kernels.h"

#include "harness.h"

static const double AVG_TOL = 1e-5, GLOBAL_AVG_TOL = 1e-6;

/* N, C, H, W, kH, kW, sH, sW, dH, dW, pads top, left, bottom, right, ceil_mode */
typedef struct {
	int64_t n, c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
	int ceil_mode;
} PoolCase;

static int64_t out_len(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad_sum, int ceil_mode)
{
	int64_t span = in + pad_sum - d * (k - 1) - 1;
	if (span < 0)
		return 0;
	return (ceil_mode ? (span + s - 1) / s : span / s) + 1;
}

static void run_case(const PoolCase *t)
{
	kiln_pool2d_params p = {
		.batch = t->n, .channels = t->c, .in_h = t->h, .in_w = t->w,
		.kernel_h = t->kh, .kernel_w = t->kw, .stride_h = t->sh, .stride_w = t->sw,
		.dilation_h = t->dh, .dilation_w = t->dw,
		.pad_top = t->pt, .pad_left = t->pl, .pad_bottom = t->pb, .pad_right = t->pr,
	};
	p.out_h = out_len(t->h, t->kh, t->sh, t->dh, t->pt + t->pb, t->ceil_mode);
	p.out_w = out_len(t->w, t->kw, t->sw, t->dw, t->pl + t->pr, t->ceil_mode);
	int64_t planes = t->n * t->c, nx = planes * t->h * t->w, ny = planes * p.out_h * p.out_w;

	float *X = xmalloc((size_t)nx * sizeof *X);
	fill_uniform(X, nx, -10.0f, 10.0f);
	double *want_max = xmalloc((size_t)ny * sizeof(double));
	size_t ny_bytes = (size_t)ny * sizeof(double);
	/* [0]: count_include_pad = 0, [1]: count_include_pad = 1 */
	double *want_avg[2] = {xmalloc(ny_bytes), xmalloc(ny_bytes)};
	double *bound[2] = {xmalloc(ny_bytes), xmalloc(ny_bytes)};
	double *zero = xmalloc((size_t)ny * sizeof(double));

	for (int64_t pl = 0; pl < planes; pl++)
		for (int64_t oh = 0; oh < p.out_h; oh++)
			for (int64_t ow = 0; ow < p.out_w; ow++) {
				double max = -(double)INFINITY, sum = 0.0, mag = 0.0;
				int64_t valid = 0, padded = 0;
				for (int64_t i = 0; i < t->kh; i++)
					for (int64_t j = 0; j < t->kw; j++) {
						int64_t ih = oh * t->sh - t->pt + i * t->dh;
						int64_t iw = ow * t->sw - t->pl + j * t->dw;
						if (ih >= -t->pt && ih < t->h + t->pb && iw >= -t->pl &&
						    iw < t->w + t->pr)
							padded++;
						if (ih < 0 || ih >= t->h || iw < 0 || iw >= t->w)
							continue;
						double x = (double)X[(pl * t->h + ih) * t->w + iw];
						valid++;
						max = x > max ? x : max;
						sum += x;
						mag += fabs(x);
					}
				int64_t at = (pl * p.out_h + oh) * p.out_w + ow;
				want_max[at] = max;
				zero[at] = 0.0;
				want_avg[0][at] = valid ? sum / (double)valid : (double)NAN;
				bound[0][at] = valid ? mag / (double)valid : 0.0;
				want_avg[1][at] = padded ? sum / (double)padded : (double)NAN;
				bound[1][at] = padded ? mag / (double)padded : 0.0;
			}

	char what[320];
	int len = snprintf(what, sizeof what,
	         "N=%lld C=%lld H=%lld W=%lld k=%lldx%lld s=%lldx%lld d=%lldx%lld "
	         "pads=%lld,%lld,%lld,%lld ceil=%d out=%lldx%lld",
	         (long long)t->n, (long long)t->c, (long long)t->h, (long long)t->w,
	         (long long)t->kh, (long long)t->kw, (long long)t->sh, (long long)t->sw,
	         (long long)t->dh, (long long)t->dw, (long long)t->pt, (long long)t->pl,
	         (long long)t->pb, (long long)t->pr, t->ceil_mode, (long long)p.out_h,
	         (long long)p.out_w);
	Guarded gy;
	float *Y = guarded_alloc(&gy, (size_t)ny * sizeof *Y, 0);

	for (int64_t i = 0; i < ny; i++)
		Y[i] = 12345.0f;
	kiln_f32_maxpool2d(&p, X, Y);
	snprintf(what + len, sizeof what - (size_t)len, " maxpool");
	CHECK_CLOSE(what, Y, want_max, zero, ny, 0.0);
	CHECK(guarded_intact(&gy), what);

	for (int include_pad = 0; include_pad < 2; include_pad++) {
		for (int64_t i = 0; i < ny; i++)
			Y[i] = 12345.0f;
		kiln_f32_avgpool2d(&p, include_pad, X, Y);
		snprintf(what + len, sizeof what - (size_t)len, " avgpool count_include_pad=%d",
		         include_pad);
		CHECK_CLOSE(what, Y, want_avg[include_pad], bound[include_pad], ny, AVG_TOL);
		CHECK(guarded_intact(&gy), what);
	}

	guarded_free(&gy);
	free(X), free(want_max), free(want_avg[0]), free(want_avg[1]), free(bound[0]),
		free(bound[1]), free(zero);
}

/* Windows that see nothing or that run past the padding, checked by hand. */
static void by_hand(void)
{
	/* H = 1, W = 4, 1x2 windows with stride 2 and 2 columns of right padding:
	 * windows [0,1], [2,3], [4,5] - the last one is all padding. */
	const float X[4] = {1, -2, 3, 5};
	kiln_pool2d_params p = {
		.batch = 1, .channels = 1, .in_h = 1, .in_w = 4, .kernel_h = 1, .kernel_w = 2,
		.stride_h = 1, .stride_w = 2, .dilation_h = 1, .dilation_w = 1, .pad_right = 2,
		.out_h = 1, .out_w = 3,
	};
	float Y[3];
	kiln_f32_maxpool2d(&p, X, Y);
	CHECK(Y[0] == 1 && Y[1] == 5 && Y[2] == -INFINITY, "maxpool window wholly in padding");
	kiln_f32_avgpool2d(&p, 1, X, Y);
	CHECK(Y[0] == -0.5f && Y[1] == 4 && Y[2] == 0, "avgpool include pad, window in padding");
	kiln_f32_avgpool2d(&p, 0, X, Y);
	CHECK(Y[0] == -0.5f && Y[1] == 4 && isnan(Y[2]), "avgpool exclude pad, window in padding");

	/* W = 5, 1x2 windows, stride 2, no padding, ceil mode: 3 outputs; the last
	 * window holds x[4] and a tap beyond the input that is not padding. */
	const float X5[5] = {1, 2, 3, 4, 6};
	p.in_w = 5, p.pad_right = 0;
	kiln_f32_avgpool2d(&p, 1, X5, Y);
	CHECK(Y[0] == 1.5f && Y[1] == 3.5f && Y[2] == 6,
	      "avgpool ceil mode counts no tap beyond the padding");
	kiln_f32_maxpool2d(&p, X5, Y);
	CHECK(Y[2] == 6, "maxpool ceil mode window beyond the input");

	/* A NaN tap never wins; a window of NaNs gives -inf. 3x3 windows, stride
	 * 2, pads 1: 20 outputs a row, so the vector loops see the NaNs too. */
	enum { NW = 40 };
	float Xn[2 * NW], Yn[20];
	for (int i = 0; i < 2 * NW; i++)
		Xn[i] = (float)(i % 7) - 3.0f;
	Xn[0] = Xn[1] = Xn[NW] = Xn[NW + 1] = NAN; /* output 0's window */
	Xn[10] = NAN;
	p = (kiln_pool2d_params){
		.batch = 1, .channels = 1, .in_h = 2, .in_w = NW, .kernel_h = 3, .kernel_w = 3,
		.stride_h = 2, .stride_w = 2, .dilation_h = 1, .dilation_w = 1, .pad_top = 1,
		.pad_left = 1, .pad_bottom = 1, .pad_right = 1, .out_h = 1, .out_w = 20,
	};
	kiln_f32_maxpool2d(&p, Xn, Yn);
	int nan_ok = Yn[0] == -INFINITY;
	for (int k = 1; k < 20; k++) {
		float best = -INFINITY;
		for (int j = 2 * k - 1; j <= 2 * k + 1 && j < NW; j++)
			for (int r = 0; r < 2; r++)
				best = Xn[r * NW + j] > best ? Xn[r * NW + j] : best;
		nan_ok &= Yn[k] == best;
	}
	CHECK(nan_ok, "maxpool ignores NaN taps");
}

static void global_pools(void)
{
	static const int64_t shapes[][2] = {
		{1, 1}, {3, 1}, {1, 49}, {6, 7}, {2, 3136}, {5, 0}, {0, 4}, {1, 100000},
	};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int64_t planes = shapes[s][0], size = shapes[s][1];
		float *X = xmalloc((size_t)(planes * size) * sizeof *X);
		/* an offset makes float accumulation visibly worse than double */
		fill_uniform(X, planes * size, 90.0f, 110.0f);
		double *want_avg = xmalloc((size_t)planes * sizeof(double));
		double *want_max = xmalloc((size_t)planes * sizeof(double));
		double *bound = xmalloc((size_t)planes * sizeof(double));
		double *zero = xmalloc((size_t)planes * sizeof(double));
		for (int64_t pl = 0; pl < planes; pl++) {
			double sum = 0.0, mag = 0.0, max = -(double)INFINITY;
			for (int64_t i = 0; i < size; i++) {
				double x = (double)X[pl * size + i];
				sum += x, mag += fabs(x);
				max = x > max ? x : max;
			}
			want_avg[pl] = size ? sum / (double)size : (double)NAN;
			bound[pl] = size ? mag / (double)size : 0.0;
			want_max[pl] = max;
			zero[pl] = 0.0;
		}
		char what[128];
		Guarded gy;
		float *Y = guarded_alloc(&gy, (size_t)planes * sizeof *Y, 0);
		kiln_f32_global_avgpool(X, Y, planes, size);
		snprintf(what, sizeof what, "global_avgpool planes=%lld size=%lld", (long long)planes,
		         (long long)size);
		CHECK_CLOSE(what, Y, want_avg, bound, planes, GLOBAL_AVG_TOL);
		CHECK(guarded_intact(&gy), what);
		kiln_f32_global_maxpool(X, Y, planes, size);
		snprintf(what, sizeof what, "global_maxpool planes=%lld size=%lld", (long long)planes,
		         (long long)size);
		CHECK_CLOSE(what, Y, want_max, zero, planes, 0.0);
		CHECK(guarded_intact(&gy), what);
		guarded_free(&gy);
		free(X), free(want_avg), free(want_max), free(bound), free(zero);
	}
}

int main(void)
{
	static const PoolCase cases[] = {
		/* n  c  h   w  kh kw sh sw dh dw pt pl pb pr ceil */
		{2, 3, 8, 8, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0},    /* 2x2/2 */
		{1, 2, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0},    /* 3x3/1 same */
		{1, 2, 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},    /* 3x3/2 ceil */
		{1, 2, 6, 6, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1},    /* ceil, runs past the input */
		{1, 1, 5, 5, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1},    /* ceil, the hand case in 2-D */
		{1, 3, 6, 7, 3, 2, 1, 2, 1, 1, 0, 2, 1, 0, 0},    /* asymmetric pads */
		{1, 2, 9, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 0},    /* dilation 2 */
		{1, 2, 10, 9, 2, 3, 2, 1, 3, 2, 1, 0, 2, 1, 1},   /* dilation 3x2, ceil */
		{1, 2, 10, 11, 2, 2, 3, 3, 1, 1, 0, 0, 0, 0, 0},  /* stride > kernel */
		{1, 2, 10, 11, 2, 2, 3, 4, 1, 1, 0, 0, 0, 0, 1},  /* stride > kernel, ceil */
		{1, 1, 4, 4, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 0},    /* pads > kernel */
		{1, 1, 4, 4, 2, 2, 2, 2, 1, 1, 2, 2, 2, 2, 1},    /* windows wholly in padding */
		{1, 1, 3, 3, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 0},    /* kernel > input */
		{2, 3, 1, 17, 1, 4, 1, 3, 1, 1, 0, 1, 0, 2, 1},   /* 1-D */
		{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0},    /* all ones */
		{0, 2, 4, 4, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0},    /* empty batch */
		{2, 3, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0}, /* ResNet's stem */
		{1, 2, 9, 75, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},   /* 3x3/2, a ragged row */
		{1, 1, 5, 2500, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0}, /* rows in several chunks */
		{1, 1, 4, 2100, 2, 5, 1, 3, 1, 2, 0, 3, 0, 1, 1}, /* the same, any window */
		{1, 2, 23, 21, 11, 3, 1, 2, 2, 1, 5, 1, 5, 1, 0}, /* 11 rows a window */
		{1, 1, 3, 1300, 2, 2, 1, 1, 1, 1100, 0, 0, 0, 0, 0}, /* window wider than a chunk */
		{1, 1, 3, 5, 2, 2, 1, 1, 1, 1, 0, 2500, 0, 2500, 0}, /* chunks wholly in padding */
	};
	by_hand();
	global_pools();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run_case(&cases[i]);
	for (int i = 0; i < 80; i++) {
		PoolCase t;
		t.n = rng_int(1, 2), t.c = rng_int(1, 3);
		t.h = rng_int(1, 12), t.w = rng_int(1, 12);
		t.kh = rng_int(1, 4), t.kw = rng_int(1, 4);
		t.sh = rng_int(1, 4), t.sw = rng_int(1, 4);
		t.dh = rng_int(1, 3), t.dw = rng_int(1, 3);
		t.pt = rng_int(0, 3), t.pl = rng_int(0, 3), t.pb = rng_int(0, 3), t.pr = rng_int(0, 3);
		t.ceil_mode = (int)rng_int(0, 1);
		run_case(&t);
	}
	return harness_report();
}
