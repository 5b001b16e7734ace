/*
 * test_sampling.c - kiln_f32_gridsample, kiln_f32_roialign, kiln_maxunpool
 * and the kiln_*_maxpool_nd family against references written here from the
 * ONNX definitions, in double precision, one output element at a time.
 *
 * GridSample: every mode x padding x align_corners, on grids reaching past
 * [-1, 1] so the padding modes matter; the reference reflects a coordinate
 * by folding it step by step, and weighs every tap explicitly (bicubic with
 * the cubic convolution kernel of A = -0.75 as a function of distance).
 * Tolerance 1e-6 * sum |weight * x|.
 * RoiAlign: avg and max, half_pixel and output_half_pixel, fixed and adaptive
 * sampling, a spatial scale, ROIs partly outside the map, several images;
 * a batch index out of range must return KILN_SHAPE_ERROR and write nothing.
 * Tolerance 1e-6 * sum |weight * x|.
 * MaxUnpool: scattered indices into the inferred shape and into a larger
 * output_shape, exact; an index out of range is an error.
 * MaxPool N-D: 1-D, 2-D and 3-D windows with pads, strides, dilations and
 * empty windows, for float32, float64, float16, int8 and uint8, both storage
 * orders; values and indices exact.
 */
#include "kiln/kernels.h"

#include "harness.h"

static const double TOL = 1e-6;

/* ---- GridSample ---- */

static double ref_unnormalize(double g, int64_t size, int align)
{
	if (align)
		return (g + 1) * (double)(size - 1) / 2;
	return ((g + 1) * (double)size - 1) / 2;
}

/* Fold c into [lo, hi] by mirroring at whichever border it crossed. */
static double ref_fold(double c, double lo, double hi)
{
	if (lo == hi)
		return lo;
	while (c < lo || c > hi)
		c = c < lo ? 2 * lo - c : 2 * hi - c;
	return c;
}

static double ref_pad(double c, int64_t size, int padding, int align)
{
	double hi = (double)(size - 1);
	if (padding == KILN_GRIDSAMPLE_REFLECTION)
		c = align ? ref_fold(c, 0, hi) : ref_fold(c, -0.5, (double)size - 0.5);
	if (padding != KILN_GRIDSAMPLE_ZEROS)
		c = c < 0 ? 0 : c > hi ? hi : c;
	return c;
}

/* x[iy, ix], or 0 outside; *mag accumulates |weight * value|. */
static double ref_tap(const float *x, int64_t h, int64_t w, int64_t iy, int64_t ix, double wt,
                      double *mag)
{
	if (iy < 0 || iy >= h || ix < 0 || ix >= w)
		return 0;
	double v = wt * (double)x[iy * w + ix];
	*mag += fabs(v);
	return v;
}

static double cubic_kernel(double d)
{
	const double A = -0.75;
	d = fabs(d);
	if (d <= 1)
		return (A + 2) * d * d * d - (A + 3) * d * d + 1;
	if (d < 2)
		return A * d * d * d - 5 * A * d * d + 8 * A * d - 4 * A;
	return 0;
}

static double ref_gridsample(const kiln_gridsample_params *p, const float *x, double gx, double gy,
                             double *mag)
{
	int64_t h = p->in_h, w = p->in_w;
	double cx = ref_unnormalize(gx, w, p->align_corners);
	double cy = ref_unnormalize(gy, h, p->align_corners);
	*mag = 0;
	if (p->mode == KILN_GRIDSAMPLE_BICUBIC) {
		double fx = floor(cx), fy = floor(cy), sum = 0;
		for (int i = -1; i <= 2; i++)
			for (int j = -1; j <= 2; j++) {
				double ty = ref_pad(fy + i, h, p->padding_mode, p->align_corners);
				double tx = ref_pad(fx + j, w, p->padding_mode, p->align_corners);
				double wt = cubic_kernel(cy - (fy + i)) * cubic_kernel(cx - (fx + j));
				sum += ref_tap(x, h, w, (int64_t)ty, (int64_t)tx, wt, mag);
			}
		return sum;
	}
	cx = ref_pad(cx, w, p->padding_mode, p->align_corners);
	cy = ref_pad(cy, h, p->padding_mode, p->align_corners);
	if (p->mode == KILN_GRIDSAMPLE_NEAREST)
		return ref_tap(x, h, w, (int64_t)rint(cy), (int64_t)rint(cx), 1.0, mag);
	double sum = 0;
	for (int i = 0; i <= 1; i++)
		for (int j = 0; j <= 1; j++) {
			double ty = floor(cy) + i, tx = floor(cx) + j;
			double wt = (1 - fabs(cy - ty)) * (1 - fabs(cx - tx));
			sum += ref_tap(x, h, w, (int64_t)ty, (int64_t)tx, wt, mag);
		}
	return sum;
}

static void test_gridsample(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow)
{
	for (int mode = 0; mode < 3; mode++)
		for (int pad = 0; pad < 3; pad++)
			for (int align = 0; align < 2; align++) {
				kiln_gridsample_params p = {n, c, h, w, oh, ow, mode, pad, align};
				int64_t nx = n * c * h * w, ng = n * oh * ow * 2, ny = n * c * oh * ow;
				float *X = xmalloc((size_t)nx * sizeof *X), *G = xmalloc((size_t)ng * sizeof *G);
				fill_uniform(X, nx, -4.0f, 4.0f);
				fill_uniform(G, ng, -1.6f, 1.6f);
				G[0] = -1.0f, G[1] = 1.0f; /* the corners exactly */
				Guarded gy;
				float *Y = guarded_alloc(&gy, (size_t)ny * sizeof *Y, 4);
				kiln_f32_gridsample(&p, X, G, Y);
				double *want = xmalloc((size_t)ny * sizeof *want);
				double *bound = xmalloc((size_t)ny * sizeof *bound);
				for (int64_t b = 0; b < n; b++)
					for (int64_t ch = 0; ch < c; ch++)
						for (int64_t o = 0; o < oh * ow; o++) {
							int64_t k = (b * c + ch) * oh * ow + o;
							const float *g = G + (b * oh * ow + o) * 2;
							want[k] = ref_gridsample(&p, X + (b * c + ch) * h * w, (double)g[0],
							                         (double)g[1], &bound[k]);
							bound[k] += 1e-30;
						}
				char what[160];
				snprintf(what, sizeof what, "gridsample %lldx%lldx%lldx%lld -> %lldx%lld mode %d "
				         "padding %d align %d", (long long)n, (long long)c, (long long)h,
				         (long long)w, (long long)oh, (long long)ow, mode, pad, align);
				CHECK_CLOSE(what, Y, want, bound, ny, TOL);
				CHECK(guarded_intact(&gy), "gridsample writes only its output");
				guarded_free(&gy);
				free(X), free(G), free(want), free(bound);
			}
}

/* Nearest rounds half to even: with W = 4 and align_corners 0, grid x =
 * -0.5 lands on pixel coordinate 0.5 exactly, and 0.5 on 2.5. */
static void test_gridsample_ties(void)
{
	kiln_gridsample_params p = {1, 1, 1, 4, 1, 2, KILN_GRIDSAMPLE_NEAREST, KILN_GRIDSAMPLE_ZEROS,
	                            0};
	const float X[4] = {10, 11, 12, 13}, G[4] = {-0.5f, 0.0f, 0.5f, 0.0f};
	float Y[2];
	kiln_f32_gridsample(&p, X, G, Y);
	CHECK(Y[0] == X[0] && Y[1] == X[2], "gridsample nearest rounds ties to even");
}

/* Grid values from run-time data may be NaN, infinite or huge: they must
 * not reach an integer conversion (UBSan checks that), and with zeros
 * padding a NaN position reads 0 in every mode. */
static void test_gridsample_nonfinite(void)
{
	const float X[6] = {1, 2, 3, 4, 5, 6};
	const float G[8] = {NAN, 0.0f, INFINITY, -INFINITY, 1e30f, -1e30f, 0.0f, NAN};
	for (int mode = 0; mode < 3; mode++)
		for (int pad = 0; pad < 3; pad++)
			for (int align = 0; align < 2; align++) {
				kiln_gridsample_params p = {1, 1, 2, 3, 1, 4, mode, pad, align};
				float Y[4];
				kiln_f32_gridsample(&p, X, G, Y);
				if (pad == KILN_GRIDSAMPLE_ZEROS)
					CHECK(Y[0] == 0.0f && Y[3] == 0.0f, "gridsample: NaN positions read 0");
			}
	CHECK(1, "gridsample: non-finite grid values are safe");
}

/* ---- RoiAlign ---- */

/* One sample point, as the ONNX definition (ONNX Runtime) reads it: the
 * four weighted corner terms. */
static void ref_corners(const float *x, int64_t h, int64_t w, double y, double xx, double t[4])
{
	t[0] = t[1] = t[2] = t[3] = 0;
	if (y < -1 || y > (double)h || xx < -1 || xx > (double)w)
		return;
	y = y < 0 ? 0 : y;
	xx = xx < 0 ? 0 : xx;
	int64_t y0 = (int64_t)y, x0 = (int64_t)xx;
	int64_t y1 = y0 + 1 < h ? y0 + 1 : h - 1, x1 = x0 + 1 < w ? x0 + 1 : w - 1;
	if (y0 >= h - 1)
		y0 = h - 1, y = (double)y0;
	if (x0 >= w - 1)
		x0 = w - 1, xx = (double)x0;
	double ly = y - (double)y0, lx = xx - (double)x0;
	t[0] = (1 - ly) * (1 - lx) * (double)x[y0 * w + x0];
	t[1] = (1 - ly) * lx * (double)x[y0 * w + x1];
	t[2] = ly * (1 - lx) * (double)x[y1 * w + x0];
	t[3] = ly * lx * (double)x[y1 * w + x1];
}

static void test_roialign(const kiln_roialign_params *p)
{
	int64_t nx = p->batch * p->channels * p->in_h * p->in_w;
	int64_t ny = p->num_rois * p->channels * p->out_h * p->out_w;
	float *X = xmalloc((size_t)nx * sizeof *X), *R = xmalloc((size_t)p->num_rois * 4 * sizeof *R);
	int64_t *B = xmalloc((size_t)p->num_rois * sizeof *B);
	fill_uniform(X, nx, -2.0f, 2.0f);
	for (int64_t r = 0; r < p->num_rois; r++) {
		/* corners anywhere from a bit outside the map to its far side */
		float xa = rng_float(-3.0f, (float)p->in_w * 1.5f), ya = rng_float(-3.0f, (float)p->in_h * 1.5f);
		R[4 * r + 0] = xa;
		R[4 * r + 1] = ya;
		R[4 * r + 2] = xa + rng_float(0.0f, (float)p->in_w);
		R[4 * r + 3] = ya + rng_float(0.0f, (float)p->in_h);
		B[r] = rng_int(0, p->batch - 1);
	}
	Guarded gy;
	float *Y = guarded_alloc(&gy, (size_t)ny * sizeof *Y, 8);
	enum kiln_status st = kiln_f32_roialign(p, X, R, B, Y);
	double *want = xmalloc((size_t)ny * sizeof *want), *bound = xmalloc((size_t)ny * sizeof *bound);
	double shift = p->half_pixel ? 0.5 : 0.0, s = p->spatial_scale;
	for (int64_t r = 0; r < p->num_rois; r++) {
		double x1 = (double)R[4 * r] * s - shift, y1 = (double)R[4 * r + 1] * s - shift;
		double rw = (double)R[4 * r + 2] * s - shift - x1;
		double rh = (double)R[4 * r + 3] * s - shift - y1;
		if (!p->half_pixel)
			rw = fmax(rw, 1.0), rh = fmax(rh, 1.0);
		int64_t gh = p->sampling_ratio ? p->sampling_ratio : (int64_t)ceil(rh / (double)p->out_h);
		int64_t gw = p->sampling_ratio ? p->sampling_ratio : (int64_t)ceil(rw / (double)p->out_w);
		for (int64_t c = 0; c < p->channels; c++)
			for (int64_t ph = 0; ph < p->out_h; ph++)
				for (int64_t pw = 0; pw < p->out_w; pw++) {
					int64_t k = ((r * p->channels + c) * p->out_h + ph) * p->out_w + pw;
					const float *x = X + (B[r] * p->channels + c) * p->in_h * p->in_w;
					double sum = 0, mag = 0, best = 0;
					for (int64_t iy = 0; iy < gh; iy++)
						for (int64_t ix = 0; ix < gw; ix++) {
							double sy = y1 + (ph + (iy + 0.5) / (double)gh) * rh / (double)p->out_h;
							double sx = x1 + (pw + (ix + 0.5) / (double)gw) * rw / (double)p->out_w;
							double t[4];
							ref_corners(x, p->in_h, p->in_w, sy, sx, t);
							double m = fmax(fmax(t[0], t[1]), fmax(t[2], t[3]));
							best = iy == 0 && ix == 0 ? m : fmax(best, m);
							for (int q = 0; q < 4; q++)
								sum += t[q], mag += fabs(t[q]);
						}
					double count = gh * gw > 0 ? (double)(gh * gw) : 1.0;
					want[k] = p->is_max ? best : sum / count;
					bound[k] = (p->is_max ? mag : mag / count) + 1e-30;
				}
	}
	char what[160];
	snprintf(what, sizeof what, "roialign %s %s ratio %lld scale %g, %lld rois",
	         p->is_max ? "max" : "avg", p->half_pixel ? "half_pixel" : "output_half_pixel",
	         (long long)p->sampling_ratio, p->spatial_scale, (long long)p->num_rois);
	CHECK(st == KILN_OK, what);
	CHECK_CLOSE(what, Y, want, bound, ny, TOL);
	CHECK(guarded_intact(&gy), "roialign writes only its output");

	/* A bad batch index: an error, and Y untouched. */
	memset(Y, 0x5a, (size_t)ny * sizeof *Y);
	B[p->num_rois - 1] = p->batch;
	st = kiln_f32_roialign(p, X, R, B, Y);
	int untouched = 1;
	for (int64_t i = 0; i < ny * (int64_t)sizeof *Y; i++)
		untouched &= ((unsigned char *)Y)[i] == 0x5a;
	CHECK(st == KILN_SHAPE_ERROR && untouched, "roialign rejects a batch index out of range");
	guarded_free(&gy);
	free(X), free(R), free(B), free(want), free(bound);
}

/* ---- MaxUnpool ---- */

/* inferred [2, 3, 4, 5] unpooled into out: the indices are flat over
 * inferred; the reference finds each one's coordinates by counting. */
static void test_maxunpool(const int64_t out[4])
{
	enum { NX = 37 };
	kiln_maxunpool_params p = {.rank = 4, .nx = NX, .elem_bytes = sizeof(double),
	                           .inferred = {2, 3, 4, 5}};
	memcpy(p.out, out, 4 * sizeof *out);
	const int64_t n_inf = 2 * 3 * 4 * 5, ny = out[0] * out[1] * out[2] * out[3];
	double X[NX];
	int64_t I[NX];
	for (int k = 0; k < NX; k++) {
		X[k] = rng_double(-5, 5);
		I[k] = rng_int(0, n_inf - 1);
	}
	I[3] = I[20]; /* a shared index: the later element wins */
	Guarded gy;
	double *Y = guarded_alloc(&gy, (size_t)ny * sizeof *Y, 8);
	enum kiln_status st = kiln_maxunpool(&p, X, I, Y);
	double *want = xmalloc((size_t)ny * sizeof *want);
	for (int64_t i = 0; i < ny; i++)
		want[i] = 0;
	for (int k = 0; k < NX; k++) {
		int64_t c[4], flat = 0, i = 0;
		for (c[0] = 0; c[0] < 2; c[0]++)
			for (c[1] = 0; c[1] < 3; c[1]++)
				for (c[2] = 0; c[2] < 4; c[2]++)
					for (c[3] = 0; c[3] < 5; c[3]++, i++)
						if (i == I[k])
							flat = ((c[0] * out[1] + c[1]) * out[2] + c[2]) * out[3] + c[3];
		want[flat] = X[k];
	}
	char what[120];
	snprintf(what, sizeof what, "maxunpool [2,3,4,5] into [%lld,%lld,%lld,%lld]",
	         (long long)out[0], (long long)out[1], (long long)out[2], (long long)out[3]);
	CHECK(st == KILN_OK && memcmp(Y, want, (size_t)ny * sizeof *Y) == 0, what);
	CHECK(guarded_intact(&gy), "maxunpool writes only its output");
	I[NX - 1] = n_inf;
	Y[0] = 7.0;
	st = kiln_maxunpool(&p, X, I, Y);
	CHECK(st == KILN_SHAPE_ERROR && Y[0] == 7.0, "maxunpool rejects an index out of range");
	I[NX - 1] = -1;
	st = kiln_maxunpool(&p, X, I, Y);
	CHECK(st == KILN_SHAPE_ERROR && Y[0] == 7.0, "maxunpool rejects a negative index");
	guarded_free(&gy);
	free(want);
}

/* ---- MaxPool N-D ---- */

enum { T_F32, T_F64, T_F16, T_I8, T_U8 };
static const size_t elem_size[] = {4, 8, 2, 1, 1};
static const char *const type_name[] = {"float32", "float64", "float16", "int8", "uint8"};

/* Small integers, exact in every type; stored in the type's layout. */
static void put(int t, void *x, int64_t i, int v)
{
	switch (t) {
	case T_F32: ((float *)x)[i] = (float)v; break;
	case T_F64: ((double *)x)[i] = v; break;
	case T_F16: ((uint16_t *)x)[i] = kiln_f32_to_f16((float)v); break;
	case T_I8: ((int8_t *)x)[i] = (int8_t)v; break;
	default: ((uint8_t *)x)[i] = (uint8_t)v; break;
	}
}

static double get(int t, const void *x, int64_t i)
{
	switch (t) {
	case T_F32: return (double)((const float *)x)[i];
	case T_F64: return ((const double *)x)[i];
	case T_F16: return (double)kiln_f16_to_f32(((const uint16_t *)x)[i]);
	case T_I8: return ((const int8_t *)x)[i];
	default: return ((const uint8_t *)x)[i];
	}
}

static double lowest_of(int t)
{
	return t == T_I8 ? -128.0 : t == T_U8 ? 0.0 : -(double)INFINITY;
}

static void run_maxpool(int t, int order, const kiln_window3d_params *p)
{
	int64_t in_vol = p->in[0] * p->in[1] * p->in[2], out_vol = p->out[0] * p->out[1] * p->out[2];
	int64_t planes = p->batch * p->channels, nx = planes * in_vol, ny = planes * out_vol;
	void *X = xmalloc((size_t)nx * elem_size[t]);
	for (int64_t i = 0; i < nx; i++) /* few distinct values, so ties happen */
		put(t, X, i, t == T_U8 ? (int)rng_int(0, 9) : (int)rng_int(-9, 9));
	Guarded gy, gi;
	void *Y = guarded_alloc(&gy, (size_t)ny * elem_size[t], elem_size[t]);
	int64_t *I = guarded_alloc(&gi, (size_t)ny * sizeof *I, 8);
	switch (t) {
	case T_F32: kiln_f32_maxpool_nd(p, order, X, Y, I); break;
	case T_F64: kiln_f64_maxpool_nd(p, order, X, Y, I); break;
	case T_F16: kiln_f16_maxpool_nd(p, order, X, Y, I); break;
	case T_I8: kiln_i8_maxpool_nd(p, order, X, Y, I); break;
	default: kiln_u8_maxpool_nd(p, order, X, Y, I); break;
	}
	int64_t bad = 0;
	for (int64_t pl = 0; pl < planes; pl++)
		for (int64_t o = 0; o < out_vol; o++) {
			int64_t oz[3] = {o / (p->out[1] * p->out[2]), o / p->out[2] % p->out[1], o % p->out[2]};
			double best = lowest_of(t);
			int64_t best_i = -1;
			/* every tap of the window, in row-major order; the first maximum wins */
			for (int64_t a = 0; a < p->kernel[0]; a++)
				for (int64_t b = 0; b < p->kernel[1]; b++)
					for (int64_t c = 0; c < p->kernel[2]; c++) {
						int64_t z[3] = {oz[0] * p->stride[0] - p->pad_begin[0] + a * p->dilation[0],
						                oz[1] * p->stride[1] - p->pad_begin[1] + b * p->dilation[1],
						                oz[2] * p->stride[2] - p->pad_begin[2] + c * p->dilation[2]};
						int inside = 1;
						for (int k = 0; k < 3; k++)
							inside &= z[k] >= 0 && z[k] < p->in[k];
						if (!inside)
							continue;
						int64_t at = order == 0 ? (z[0] * p->in[1] + z[1]) * p->in[2] + z[2]
						                        : z[0] + z[1] * p->in[0] + z[2] * p->in[0] * p->in[1];
						double v = get(t, X, pl * in_vol + (z[0] * p->in[1] + z[1]) * p->in[2] + z[2]);
						if (best_i < 0 || v > best)
							best = v, best_i = pl * in_vol + at;
					}
			int64_t k = pl * out_vol + o;
			if (get(t, Y, k) != best || I[k] != best_i)
				bad++;
		}
	char what[200];
	snprintf(what, sizeof what, "maxpool_nd %s order %d in %lldx%lldx%lld k %lldx%lldx%lld",
	         type_name[t], order, (long long)p->in[0], (long long)p->in[1], (long long)p->in[2],
	         (long long)p->kernel[0], (long long)p->kernel[1], (long long)p->kernel[2]);
	CHECK(bad == 0, what);
	CHECK(guarded_intact(&gy) && guarded_intact(&gi), "maxpool_nd writes only its outputs");
	/* Without I: the same values. */
	void *Y2 = xmalloc((size_t)ny * elem_size[t]);
	switch (t) {
	case T_F32: kiln_f32_maxpool_nd(p, order, X, Y2, NULL); break;
	case T_F64: kiln_f64_maxpool_nd(p, order, X, Y2, NULL); break;
	case T_F16: kiln_f16_maxpool_nd(p, order, X, Y2, NULL); break;
	case T_I8: kiln_i8_maxpool_nd(p, order, X, Y2, NULL); break;
	default: kiln_u8_maxpool_nd(p, order, X, Y2, NULL); break;
	}
	CHECK(memcmp(Y, Y2, (size_t)ny * elem_size[t]) == 0, "maxpool_nd without indices");
	guarded_free(&gy), guarded_free(&gi);
	free(X), free(Y2);
}

static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pads, int ceil_mode)
{
	int64_t room = in + pads - (k - 1) * d - 1;
	return room < 0 ? 0 : (ceil_mode ? (room + s - 1) / s : room / s) + 1;
}

static void test_maxpool_nd(void)
{
	/* in, kernel, stride, dilation, pad_begin, pad_end (per axis), ceil_mode */
	static const struct {
		int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
		int ceil_mode;
	} cases[] = {
		{{1, 1, 9}, {1, 1, 3}, {1, 1, 2}, {1, 1, 1}, {0, 0, 1}, {0, 0, 1}, 0},   /* 1-D */
		{{1, 5, 5}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}, 0},   /* same size */
		{{1, 5, 5}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 0},   /* strides */
		{{1, 7, 6}, {1, 3, 2}, {1, 2, 3}, {1, 2, 1}, {0, 1, 0}, {0, 2, 1}, 1},   /* dilation, ceil */
		{{1, 4, 4}, {1, 2, 2}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 1},   /* empty windows */
		{{3, 4, 5}, {2, 2, 3}, {1, 2, 2}, {2, 1, 1}, {1, 0, 1}, {0, 1, 1}, 0},   /* 3-D */
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
		for (int t = 0; t < 5; t++)
			for (int order = 0; order < 2; order++) {
				kiln_window3d_params p = {.batch = 2, .channels = 3, .out_channels = 0, .group = 1};
				for (int a = 0; a < 3; a++) {
					p.in[a] = cases[c].in[a], p.kernel[a] = cases[c].k[a];
					p.stride[a] = cases[c].s[a], p.dilation[a] = cases[c].d[a];
					p.pad_begin[a] = cases[c].pb[a], p.pad_end[a] = cases[c].pe[a];
					p.out[a] = pool_out(p.in[a], p.kernel[a], p.stride[a], p.dilation[a],
					                    p.pad_begin[a] + p.pad_end[a], cases[c].ceil_mode);
				}
				run_maxpool(t, order, &p);
			}
}

int main(void)
{
	test_gridsample(1, 1, 4, 4, 6, 6);
	test_gridsample(2, 3, 5, 7, 4, 9);
	test_gridsample(1, 2, 1, 6, 3, 3); /* a single row */
	test_gridsample_ties();
	test_gridsample_nonfinite();
	for (int mode = 0; mode < 2; mode++)
		for (int half = 0; half < 2; half++) {
			kiln_roialign_params p = {.batch = 2, .channels = 3, .in_h = 10, .in_w = 12,
			                          .num_rois = 6, .out_h = 3, .out_w = 4, .sampling_ratio = 2,
			                          .spatial_scale = 1.0, .half_pixel = half, .is_max = mode};
			test_roialign(&p);
			p.sampling_ratio = 0; /* adaptive */
			p.spatial_scale = 0.5;
			test_roialign(&p);
		}
	test_maxunpool((const int64_t[4]){2, 3, 4, 5});
	test_maxunpool((const int64_t[4]){3, 3, 6, 5});
	test_maxpool_nd();
	return harness_report();
}
