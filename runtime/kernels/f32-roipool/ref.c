/*
 * f32-roipool/ref.c - ONNX MaxRoiPool in float32, as ONNX Runtime computes it
 * (Fast R-CNN's ROI pooling).
 *
 * Each ROI (batch_index, x1, y1, x2, y2) is scaled by spatial_scale and
 * rounded to whole pixels (half away from zero), forced to at least 1x1,
 * and cut into pooled_h x pooled_w bins of (roi size / pooled size) pixels
 * each: bin i covers [floor(i * size), ceil((i + 1) * size)) from the ROI's
 * start, clipped to the image. The bin sizes and edges are computed in float,
 * as ONNX Runtime does, so the same pixels fall into each bin. A bin that
 * the clipping leaves empty (an ROI partly or wholly outside the image)
 * gives 0; any other bin gives its largest pixel (NaN pixels lose to
 * numbers).
 *
 * Batch indices arrive at run time: each is truncated toward zero, as
 * ONNX Runtime does, and all are checked before anything is written. ROI
 * coordinates are clamped to +-2^30 pixels before they are converted to
 * integers (ONNX Runtime converts to int unchecked), and a NaN coordinate
 * reads as 0.
 */
#include <math.h>

#include "kiln/kernels.h"

/* A scaled ROI coordinate as a whole pixel. */
static int64_t roi_pixel(float coord, float scale)
{
	float v = roundf(coord * scale);
	if (isnan(v))
		return 0;
	const float lim = 1073741824.0f;   /* 2^30 */
	return (int64_t)(v < -lim ? -lim : v > lim ? lim : v);
}

static int64_t clip(int64_t v, int64_t hi)
{
	return v < 0 ? 0 : v > hi ? hi : v;
}

KILN_API enum kiln_status kiln_f32_maxroipool(const kiln_roipool_params *p, const float *X,
                                              const float *rois, float *Y)
{
	for (int64_t r = 0; r < p->num_rois; r++) {
		double b = (double)rois[r * 5];
		if (!(b > -1.0 && b < (double)p->batch))
			return KILN_SHAPE_ERROR;
	}
	const int64_t plane = p->in_h * p->in_w;
	for (int64_t r = 0; r < p->num_rois; r++) {
		const float *roi = rois + r * 5;
		const float *image = X + (int64_t)roi[0] * p->channels * plane;
		int64_t x1 = roi_pixel(roi[1], p->spatial_scale), y1 = roi_pixel(roi[2], p->spatial_scale);
		int64_t x2 = roi_pixel(roi[3], p->spatial_scale), y2 = roi_pixel(roi[4], p->spatial_scale);
		int64_t roi_h = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1;
		int64_t roi_w = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
		const float bin_h = (float)roi_h / (float)p->pooled_h;
		const float bin_w = (float)roi_w / (float)p->pooled_w;
		for (int64_t c = 0; c < p->channels; c++) {
			const float *in = image + c * plane;
			float *out = Y + (r * p->channels + c) * p->pooled_h * p->pooled_w;
			for (int64_t ph = 0; ph < p->pooled_h; ph++) {
				int64_t h0 = clip((int64_t)floorf((float)ph * bin_h) + y1, p->in_h);
				int64_t h1 = clip((int64_t)ceilf((float)(ph + 1) * bin_h) + y1, p->in_h);
				for (int64_t pw = 0; pw < p->pooled_w; pw++) {
					int64_t w0 = clip((int64_t)floorf((float)pw * bin_w) + x1, p->in_w);
					int64_t w1 = clip((int64_t)ceilf((float)(pw + 1) * bin_w) + x1, p->in_w);
					float m = h1 > h0 && w1 > w0 ? -INFINITY : 0.0f;
					for (int64_t h = h0; h < h1; h++)
						for (int64_t w = w0; w < w1; w++)
							if (in[h * p->in_w + w] > m)
								m = in[h * p->in_w + w];
					out[ph * p->pooled_w + pw] = m;
				}
			}
		}
	}
	return KILN_OK;
}
