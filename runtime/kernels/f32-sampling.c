/*
 * f32-sampling.c - the reference kernels that read an input at computed,
 * usually fractional, positions: GridSample and RoiAlign (float32), and
 * MaxUnpool, which writes at positions given by an index tensor (any type).
 *
 * Positions are computed in double. Every tap goes through one bounds test
 * made on the double coordinate before it becomes an index, so coordinates
 * that are huge, infinite or NaN (they come from run-time data) never reach
 * an integer conversion: they read as outside the input. The data-dependent
 * indices (RoiAlign's batch indices, MaxUnpool's I) are all checked before
 * anything is written.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "kiln/kernels.h"

/* ---- GridSample ------------------------------------------------------- */

/* A grid value in [-1, 1] to a pixel coordinate of an axis of `size`. */
static double unnormalize(double g, int64_t size, int align_corners)
{
	return align_corners ? (g + 1.0) / 2.0 * (double)(size - 1)
	                     : ((g + 1.0) * (double)size - 1.0) / 2.0;
}

static double clamp_to(double c, int64_t size)
{
	double hi = (double)(size - 1);
	return c < 0.0 ? 0.0 : c > hi ? hi : c;
}

/* Reflect c about the borders twice_low / 2 and twice_high / 2 until it
 * lies between them (PyTorch's reflect_coordinates). */
static double reflect(double c, double twice_low, double twice_high)
{
	if (twice_low == twice_high)
		return 0.0;
	double low = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
	c = fabs(c - low);
	double extra = fmod(c, span);
	double flips = floor(c / span);
	return fmod(flips, 2.0) == 0.0 ? extra + low : span - extra + low;
}

/* The padding mode applied to a coordinate of an axis of `size`. zeros
 * leaves it alone (taps outside read 0). */
static double pad_coord(double c, int64_t size, int padding_mode, int align_corners)
{
	if (padding_mode == KILN_GRIDSAMPLE_BORDER)
		return clamp_to(c, size);
	if (padding_mode == KILN_GRIDSAMPLE_REFLECTION) {
		c = align_corners ? reflect(c, 0.0, 2.0 * (double)(size - 1))
		                  : reflect(c, -1.0, 2.0 * (double)size - 1.0);
		return clamp_to(c, size);
	}
	return c;
}

/* weight * the pixel at integer-valued coordinates (y, x), or 0 outside
 * (whatever the weight, as PyTorch skips such taps). The test runs on
 * doubles, so NaN and huge coordinates fail it and read as outside. */
static double tap(const float *plane, int64_t h, int64_t w, double y, double x, double weight)
{
	if (!(y >= 0.0 && y <= (double)(h - 1) && x >= 0.0 && x <= (double)(w - 1)))
		return 0.0;
	return weight * (double)plane[(int64_t)y * w + (int64_t)x];
}

/* The 1-D cubic convolution weights of taps -1, 0, 1, 2 at fraction t, with
 * A = -0.75 (PyTorch's and ONNX's bicubic). */
static void cubic_weights(double t, double wt[4])
{
	const double A = -0.75;
	double x1 = t + 1.0, x2 = 1.0 - t, x3 = 2.0 - t;
	wt[0] = ((A * x1 - 5.0 * A) * x1 + 8.0 * A) * x1 - 4.0 * A;
	wt[1] = ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0;
	wt[2] = ((A + 2.0) * x2 - (A + 3.0)) * x2 * x2 + 1.0;
	wt[3] = ((A * x3 - 5.0 * A) * x3 + 8.0 * A) * x3 - 4.0 * A;
}

static double sample(const kiln_gridsample_params *p, const float *plane, double gx, double gy)
{
	const int64_t h = p->in_h, w = p->in_w;
	double x = unnormalize(gx, w, p->align_corners), y = unnormalize(gy, h, p->align_corners);
	if (p->mode == KILN_GRIDSAMPLE_BICUBIC) {
		double x0 = floor(x), y0 = floor(y), wx[4], wy[4], sum = 0.0;
		cubic_weights(x - x0, wx);
		cubic_weights(y - y0, wy);
		for (int i = 0; i < 4; i++) {
			double ty = pad_coord(y0 - 1.0 + i, h, p->padding_mode, p->align_corners);
			for (int j = 0; j < 4; j++) {
				double tx = pad_coord(x0 - 1.0 + j, w, p->padding_mode, p->align_corners);
				sum += tap(plane, h, w, ty, tx, wy[i] * wx[j]);
			}
		}
		return sum;
	}
	x = pad_coord(x, w, p->padding_mode, p->align_corners);
	y = pad_coord(y, h, p->padding_mode, p->align_corners);
	if (p->mode == KILN_GRIDSAMPLE_NEAREST)
		return tap(plane, h, w, nearbyint(y), nearbyint(x), 1.0);
	double x0 = floor(x), y0 = floor(y), fx = x - x0, fy = y - y0;
	return tap(plane, h, w, y0, x0, (1.0 - fy) * (1.0 - fx)) +
	       tap(plane, h, w, y0, x0 + 1.0, (1.0 - fy) * fx) +
	       tap(plane, h, w, y0 + 1.0, x0, fy * (1.0 - fx)) +
	       tap(plane, h, w, y0 + 1.0, x0 + 1.0, fy * fx);
}

KILN_API void kiln_f32_gridsample(const kiln_gridsample_params *p, const float *X,
                                  const float *grid, float *Y)
{
	const int64_t in_plane = p->in_h * p->in_w, out_plane = p->out_h * p->out_w;
	for (int64_t n = 0; n < p->batch; n++) {
		const float *g = grid + n * out_plane * 2;
		for (int64_t c = 0; c < p->channels; c++) {
			const float *x = X + (n * p->channels + c) * in_plane;
			float *y = Y + (n * p->channels + c) * out_plane;
			for (int64_t o = 0; o < out_plane; o++)
				y[o] = (float)sample(p, x, (double)g[2 * o], (double)g[2 * o + 1]);
		}
	}
}

/* ---- RoiAlign --------------------------------------------------------- */

/* The bilinear read of one sample point, as ONNX Runtime's RoiAlign does it:
 * the four corners and their weights (all 0 beyond one pixel outside). */
typedef struct Corners {
	int64_t pos[4];
	double wt[4];
} Corners;

static Corners corners_at(double y, double x, int64_t h, int64_t w)
{
	Corners k = {{0, 0, 0, 0}, {0.0, 0.0, 0.0, 0.0}};
	if (h <= 0 || w <= 0 || !(y >= -1.0 && y <= (double)h && x >= -1.0 && x <= (double)w))
		return k;
	if (y < 0.0)
		y = 0.0;
	if (x < 0.0)
		x = 0.0;
	int64_t y_lo = (int64_t)y, x_lo = (int64_t)x, y_hi, x_hi;
	if (y_lo >= h - 1) {
		y_lo = y_hi = h - 1;
		y = (double)y_lo;
	} else {
		y_hi = y_lo + 1;
	}
	if (x_lo >= w - 1) {
		x_lo = x_hi = w - 1;
		x = (double)x_lo;
	} else {
		x_hi = x_lo + 1;
	}
	double ly = y - (double)y_lo, lx = x - (double)x_lo, hy = 1.0 - ly, hx = 1.0 - lx;
	k.pos[0] = y_lo * w + x_lo, k.wt[0] = hy * hx;
	k.pos[1] = y_lo * w + x_hi, k.wt[1] = hy * lx;
	k.pos[2] = y_hi * w + x_lo, k.wt[2] = ly * hx;
	k.pos[3] = y_hi * w + x_hi, k.wt[3] = ly * lx;
	return k;
}

/* Samples per bin along an axis: sampling_ratio, or ceil(extent / bins).
 * NaN extents give 0; absurd ones are capped so the count fits. */
static int64_t grid_count(const kiln_roialign_params *p, double extent, int64_t bins)
{
	if (p->sampling_ratio > 0)
		return p->sampling_ratio;
	double n = ceil(extent / (double)bins);
	if (!(n > 0.0))
		return 0;
	return n < 2147483647.0 ? (int64_t)n : 2147483647;
}

KILN_API enum kiln_status kiln_f32_roialign(const kiln_roialign_params *p, const float *X,
                                            const float *rois, const int64_t *batch_indices,
                                            float *Y)
{
	for (int64_t r = 0; r < p->num_rois; r++)
		if (batch_indices[r] < 0 || batch_indices[r] >= p->batch)
			return KILN_SHAPE_ERROR;
	const int64_t plane = p->in_h * p->in_w, out_plane = p->out_h * p->out_w;
	const double shift = p->half_pixel ? 0.5 : 0.0;
	for (int64_t r = 0; r < p->num_rois; r++) {
		const float *roi = rois + 4 * r;
		double x1 = (double)roi[0] * p->spatial_scale - shift;
		double y1 = (double)roi[1] * p->spatial_scale - shift;
		double rw = (double)roi[2] * p->spatial_scale - shift - x1;
		double rh = (double)roi[3] * p->spatial_scale - shift - y1;
		if (!p->half_pixel) {
			rw = rw > 1.0 ? rw : 1.0;
			rh = rh > 1.0 ? rh : 1.0;
		}
		double bin_h = rh / (double)p->out_h, bin_w = rw / (double)p->out_w;
		int64_t gh = grid_count(p, rh, p->out_h), gw = grid_count(p, rw, p->out_w);
		double count = gh * gw > 0 ? (double)(gh * gw) : 1.0;
		for (int64_t c = 0; c < p->channels; c++) {
			const float *x = X + (batch_indices[r] * p->channels + c) * plane;
			float *y = Y + (r * p->channels + c) * out_plane;
			for (int64_t ph = 0; ph < p->out_h; ph++)
				for (int64_t pw = 0; pw < p->out_w; pw++) {
					double acc = 0.0;
					int seen = 0;
					for (int64_t iy = 0; iy < gh; iy++) {
						double sy = y1 + (double)ph * bin_h +
						            ((double)iy + 0.5) * bin_h / (double)gh;
						for (int64_t ix = 0; ix < gw; ix++) {
							double sx = x1 + (double)pw * bin_w +
							            ((double)ix + 0.5) * bin_w / (double)gw;
							Corners k = corners_at(sy, sx, p->in_h, p->in_w);
							if (!p->is_max) {
								for (int q = 0; q < 4; q++)
									acc += k.wt[q] * (double)x[k.pos[q]];
								continue;
							}
							double best = k.wt[0] * (double)x[k.pos[0]];
							for (int q = 1; q < 4; q++) {
								double v = k.wt[q] * (double)x[k.pos[q]];
								best = v > best ? v : best;
							}
							acc = !seen || best > acc ? best : acc;
							seen = 1;
						}
					}
					y[ph * p->out_w + pw] = (float)(p->is_max ? acc : acc / count);
				}
		}
	}
	return KILN_OK;
}

/* ---- MaxUnpool -------------------------------------------------------- */

/* The flat index i over `inferred` moved to the same position in `out`. */
static int64_t reindex(const kiln_maxunpool_params *p, int64_t i)
{
	int64_t at = 0, stride = 1;
	for (int a = p->rank - 1; a >= 0; a--) {
		at += i % p->inferred[a] * stride;
		i /= p->inferred[a];
		stride *= p->out[a];
	}
	return at;
}

KILN_API enum kiln_status kiln_maxunpool(const kiln_maxunpool_params *p, const void *X,
                                         const int64_t *I, void *Y)
{
	int64_t n_inferred = 1, n_out = 1;
	bool same = true;
	for (int a = 0; a < p->rank; a++) {
		n_inferred *= p->inferred[a];
		n_out *= p->out[a];
		same = same && p->inferred[a] == p->out[a];
	}
	for (int64_t k = 0; k < p->nx; k++)
		if (I[k] < 0 || I[k] >= n_inferred)
			return KILN_SHAPE_ERROR;
	const size_t eb = p->elem_bytes;
	const unsigned char *x = X;
	unsigned char *y = Y;
	if (n_out > 0)
		memset(y, 0, (size_t)n_out * eb);
	for (int64_t k = 0; k < p->nx; k++) {
		int64_t at = same ? I[k] : reindex(p, I[k]);
		memcpy(y + (size_t)at * eb, x + (size_t)k * eb, eb);
	}
	return KILN_OK;
}
