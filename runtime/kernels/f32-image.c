/*
 * f32-image.c - image operators new in ONNX opsets 18-20: Col2Im (the
 * inverse of im2col: blocks summed back into an image).
 */
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
