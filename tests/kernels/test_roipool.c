/*
 * test_roipool.c - kiln_f32_maxroipool against a reference written here from
 * the definition (Fast R-CNN's ROI pooling, as ONNX Runtime computes it): ROI
 * corners scaled and rounded half away from zero, the ROI at least 1x1, bin i
 * of n over a side of s pixels covering [floor(i * s / n), ceil((i + 1) * s /
 * n)) from the ROI's start, in exact integer arithmetic, clipped to the
 * image; an empty bin gives 0, others their largest pixel. Exact.
 *
 * Cases: ROIs inside, partly outside and wholly outside the image, reversed
 * corners (forced to 1x1), more bins than pixels, fractional batch indices
 * (truncated), spatial scales; corners of +-1e30 and NaN (clamped, must not
 * crash); a batch index out of range (negative, = batch, NaN) must return
 * KILN_SHAPE_ERROR and write nothing. Y is guarded: nothing else is written.
 */
#include <math.h>
#include <string.h>

#include "kiln/kernels.h"

#include "harness.h"

static int64_t floor_div(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static int64_t clamp64(int64_t v, int64_t hi)
{
	return v < 0 ? 0 : v > hi ? hi : v;
}

/* The pixel of a scaled corner; huge or NaN corners as the kernel defines them. */
static int64_t ref_pixel(float c, float scale)
{
	double v = round((double)(c * scale));
	if (isnan(v))
		return 0;
	return (int64_t)fmax(-1073741824.0, fmin(1073741824.0, v));
}

static void reference(const kiln_roipool_params *p, const float *X, const float *R, double *want)
{
	int64_t plane = p->in_h * p->in_w;
	for (int64_t r = 0; r < p->num_rois; r++) {
		const float *roi = R + 5 * r;
		int64_t b = (int64_t)roi[0];
		int64_t x1 = ref_pixel(roi[1], p->spatial_scale), y1 = ref_pixel(roi[2], p->spatial_scale);
		int64_t x2 = ref_pixel(roi[3], p->spatial_scale), y2 = ref_pixel(roi[4], p->spatial_scale);
		int64_t rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1, rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
		for (int64_t c = 0; c < p->channels; c++)
			for (int64_t ph = 0; ph < p->pooled_h; ph++)
				for (int64_t pw = 0; pw < p->pooled_w; pw++) {
					int64_t h0 = clamp64(floor_div(ph * rh, p->pooled_h) + y1, p->in_h);
					int64_t h1 = clamp64(-floor_div(-(ph + 1) * rh, p->pooled_h) + y1, p->in_h);
					int64_t w0 = clamp64(floor_div(pw * rw, p->pooled_w) + x1, p->in_w);
					int64_t w1 = clamp64(-floor_div(-(pw + 1) * rw, p->pooled_w) + x1, p->in_w);
					double m = 0;
					for (int64_t h = h0; h < h1; h++)
						for (int64_t w = w0; w < w1; w++) {
							double v = (double)X[(b * p->channels + c) * plane + h * p->in_w + w];
							m = h == h0 && w == w0 ? v : fmax(m, v);
						}
					want[((r * p->channels + c) * p->pooled_h + ph) * p->pooled_w + pw] = m;
				}
	}
}

static void test_roipool(const kiln_roipool_params *p, const float *rois)
{
	int64_t nx = p->batch * p->channels * p->in_h * p->in_w;
	int64_t ny = p->num_rois * p->channels * p->pooled_h * p->pooled_w;
	float *X = xmalloc((size_t)nx * sizeof *X), *R = xmalloc((size_t)p->num_rois * 5 * sizeof *R);
	fill_uniform(X, nx, -2.0f, 1.0f);   /* mostly negative: a bin's max is not 0 */
	memcpy(R, rois, (size_t)p->num_rois * 5 * sizeof *R);
	Guarded gy;
	float *Y = guarded_alloc(&gy, (size_t)ny * sizeof *Y, 4);
	double *want = xmalloc((size_t)ny * sizeof *want), *bound = xmalloc((size_t)ny * sizeof *bound);
	for (int64_t i = 0; i < ny; i++)
		bound[i] = 1;
	char what[160];
	snprintf(what, sizeof what, "maxroipool %lldx%lld image, %lld rois, pooled %lldx%lld, scale %g",
	         (long long)p->in_h, (long long)p->in_w, (long long)p->num_rois,
	         (long long)p->pooled_h, (long long)p->pooled_w, (double)p->spatial_scale);
	CHECK(kiln_f32_maxroipool(p, X, R, Y) == KILN_OK, what);
	reference(p, X, R, want);
	CHECK_CLOSE(what, Y, want, bound, ny, 0);
	CHECK(guarded_intact(&gy), "maxroipool writes only its output");

	/* A bad batch index anywhere: an error, and Y untouched. */
	const float bad[] = {-1.0f, (float)p->batch, (float)p->batch + 0.5f, NAN, 1e30f};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memcpy(R, rois, (size_t)p->num_rois * 5 * sizeof *R);
		R[5 * (p->num_rois - 1)] = bad[i];
		memset(Y, 0x5a, (size_t)ny * sizeof *Y);
		enum kiln_status st = kiln_f32_maxroipool(p, X, R, Y);
		int untouched = 1;
		for (int64_t k = 0; k < ny * (int64_t)sizeof *Y; k++)
			untouched &= ((unsigned char *)Y)[k] == 0x5a;
		snprintf(what, sizeof what, "maxroipool rejects batch index %g", (double)bad[i]);
		CHECK(st == KILN_SHAPE_ERROR && untouched, what);
	}
	guarded_free(&gy);
	free(X), free(R), free(want), free(bound);
}

int main(void)
{
	/* batch, x1, y1, x2, y2 */
	static const float rois[] = {
		0, 0, 0, 11, 9,          /* the whole 10x12 image */
		1, 2.5f, 1.5f, 7, 6,     /* halves round away from zero */
		0.9f, -4, -3, 3, 2,      /* partly outside (top left); index truncates to 0 */
		1, 8, 6, 20, 15,         /* partly outside (bottom right) */
		0, 30, 30, 40, 40,       /* wholly outside: zeros */
		1, 5, 5, 2, 2,           /* reversed corners: 1x1 */
		1.99f, 3, 3, 4, 4,       /* 2x2 under up to 7x5 bins */
		-0.5f, 1e30f, -1e30f, NAN, 3, /* absurd corners: clamped, no crash */
	};
	kiln_roipool_params p = {.batch = 2, .channels = 3, .in_h = 10, .in_w = 12, .num_rois = 8,
	                         .pooled_h = 3, .pooled_w = 4, .spatial_scale = 1.0f};
	test_roipool(&p, rois);
	p.pooled_h = 7, p.pooled_w = 5;
	test_roipool(&p, rois);
	p.pooled_h = 1, p.pooled_w = 1;
	test_roipool(&p, rois);
	p.pooled_h = 2, p.pooled_w = 3, p.spatial_scale = 0.5f;
	test_roipool(&p, rois);
	p.spatial_scale = 0.0625f, p.in_h = 40, p.in_w = 37;
	static const float big[] = {0, 0, 0, 600, 640, 1, 100, 200, 300, 330, 1, 8, 8, 8, 8};
	p.num_rois = 3;
	test_roipool(&p, big);
	return harness_report();
}
