/*
 * f32-image.c - image operators new in ONNX opsets 18-20: Col2Im (the
 * inverse of im2col: blocks summed back into an image) and AffineGrid (the
 * sampling grid of an affine transformation, for GridSample); and
 * DeformConv (a 2-D convolution whose taps move by per-output offsets).
 */
#include <math.h>
#include <string.h>

#include "kiln/kernels.h"

KILN_API void kiln_f32_col2im(const kiln_col2im_params *p, const float *X, float *Y)
{
	const int na = p->axes;
	int64_t taps = 1, positions = 1, image = 1;
	for (int a = 0; a < na; a++) {
		taps *= p->block[a];
		positions *= p->blocks[a];
		image *= p->image[a];
	}
	memset(Y, 0, (size_t)(p->batch * p->channels * image) * sizeof *Y);
	for (int64_t plane = 0; plane < p->batch * p->channels; plane++) {
		float *y = Y + plane * image;
		for (int64_t t = 0; t < taps; t++) {
			const float *x = X + (plane * taps + t) * positions;
			int64_t tap[KILN_COL2IM_MAX_AXES];
			for (int64_t a = na - 1, r = t; a >= 0; a--) {
				tap[a] = r % p->block[a];
				r /= p->block[a];
			}
			for (int64_t l = 0; l < positions; l++) {
				int64_t at = 0, r = l, scale = 1;
				int inside = 1;
				for (int a = na - 1; a >= 0; a--) {
					int64_t pos = r % p->blocks[a];
					r /= p->blocks[a];
					int64_t z = pos * p->stride[a] - p->pad_begin[a] + tap[a] * p->dilation[a];
					inside &= z >= 0 && z < p->image[a];
					at += z * scale;
					scale *= p->image[a];
				}
				if (inside)
					y[at] += x[l];
			}
		}
	}
}

/* The normalized coordinate of pixel i of n along one axis. */
static double affine_coord(int64_t i, int64_t n, int align_corners)
{
	if (align_corners)
		return n > 1 ? 2.0 * (double)i / (double)(n - 1) - 1.0 : 0.0;
	return (2.0 * (double)i + 1.0) / (double)n - 1.0;
}

KILN_API void kiln_f32_affinegrid(const kiln_affinegrid_params *p, const float *theta,
                                  float *grid)
{
	const int na = p->axes;
	const int64_t d_n = na == 3 ? p->size[0] : 1, h_n = p->size[na - 2], w_n = p->size[na - 1];
	for (int64_t b = 0; b < p->batch; b++) {
		const float *t = theta + b * na * (na + 1);
		for (int64_t d = 0; d < d_n; d++)
			for (int64_t h = 0; h < h_n; h++)
				for (int64_t w = 0; w < w_n; w++) {
					/* (x, y, z, 1) in the order theta's columns take them */
					double c[4] = {affine_coord(w, w_n, p->align_corners),
					               affine_coord(h, h_n, p->align_corners), 1.0, 1.0};
					if (na == 3)
						c[2] = affine_coord(d, d_n, p->align_corners);
					for (int r = 0; r < na; r++) {
						double s = 0.0;
						for (int k = 0; k <= na; k++)
							s += (double)t[r * (na + 1) + k] * c[k];
						*grid++ = (float)s;
					}
				}
	}
}

/* X (one plane of h x w) at (y, x), bilinear; 0 outside (-1, h) x (-1, w),
 * and each corner outside the plane reads 0. */
static float bilinear_at(const float *X, int64_t h, int64_t w, double y, double x)
{
	if (!(y > -1.0 && y < (double)h && x > -1.0 && x < (double)w))
		return 0.0f;  /* also NaN */
	double fy = floor(y), fx = floor(x);
	int64_t y0 = (int64_t)fy, x0 = (int64_t)fx;
	double ly = y - fy, lx = x - fx, v = 0.0;
	for (int dy = 0; dy < 2; dy++)
		for (int dx = 0; dx < 2; dx++) {
			int64_t yy = y0 + dy, xx = x0 + dx;
			if (yy >= 0 && yy < h && xx >= 0 && xx < w)
				v += (dy ? ly : 1.0 - ly) * (dx ? lx : 1.0 - lx) * (double)X[yy * w + xx];
		}
	return (float)v;
}

KILN_API void kiln_f32_deformconv2d(const kiln_deformconv_params *p, const float *X,
                                    const float *W, const float *offset, const float *bias,
                                    const float *mask, float *Y)
{
	const int64_t taps = p->kernel_h * p->kernel_w, plane = p->out_h * p->out_w;
	const int64_t cg = p->in_c / p->group, mg = p->out_c / p->group;
	const int64_t per_og = p->in_c / p->offset_group;
	for (int64_t n = 0; n < p->batch; n++) {
		float *y = Y + n * p->out_c * plane;
		for (int64_t m = 0; m < p->out_c; m++)
			for (int64_t o = 0; o < plane; o++)
				y[m * plane + o] = bias ? bias[m] : 0.0f;
		for (int64_t c = 0; c < p->in_c; c++) {
			const float *x = X + (n * p->in_c + c) * p->in_h * p->in_w;
			const int64_t og = c / per_og, g = c / cg;
			const float *off = offset + (n * p->offset_group + og) * 2 * taps * plane;
			const float *msk = mask ? mask + (n * p->offset_group + og) * taps * plane : NULL;
			for (int64_t t = 0; t < taps; t++) {
				const int64_t i = t / p->kernel_w, j = t % p->kernel_w;
				for (int64_t oh = 0; oh < p->out_h; oh++)
					for (int64_t ow = 0; ow < p->out_w; ow++) {
						const int64_t o = oh * p->out_w + ow;
						double sy = (double)(oh * p->stride_h - p->pad_top + i * p->dilation_h) +
						            (double)off[(2 * t) * plane + o];
						double sx = (double)(ow * p->stride_w - p->pad_left + j * p->dilation_w) +
						            (double)off[(2 * t + 1) * plane + o];
						float v = bilinear_at(x, p->in_h, p->in_w, sy, sx);
						if (msk)
							v *= msk[t * plane + o];
						for (int64_t m = g * mg; m < (g + 1) * mg; m++)
							y[m * plane + o] += W[(m * cg + c - g * cg) * taps + t] * v;
					}
			}
		}
	}
}
