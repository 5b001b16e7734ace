/*
 * f32-window3d/ref.c - reference float32 Conv, MaxPool and AveragePool over
 * three spatial axes (NCDHW), the 3-D counterparts of f32-conv and f32-pool.
 *
 * Direct loops: for every output position, the taps of each axis that land
 * inside the input form one range (window_range), so padding costs nothing.
 * Sums accumulate in double: a 3-D window holds many taps. AveragePool's
 * count_include_pad divisor counts the taps inside the padded extent, as the
 * 2-D kernel does.
 */
#include <math.h>

#include "kiln/kernels.h"

/* Taps t in [0, k) with 0 <= start + t * dilation < len, as [*lo, *hi). */
static void window_range(int64_t start, int64_t dilation, int64_t k, int64_t len, int64_t *lo,
                         int64_t *hi)
{
	int64_t first = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
	int64_t last = len - 1 - start < 0 ? 0 : (len - 1 - start) / dilation + 1;
	*lo = first;
	*hi = last < k ? last : k;
}

typedef struct Box {
	int64_t start[3], lo[3], hi[3];
} Box;

static Box box_at(const kiln_window3d_params *p, const int64_t o[3])
{
	Box b;
	for (int a = 0; a < 3; a++) {
		b.start[a] = o[a] * p->stride[a] - p->pad_begin[a];
		window_range(b.start[a], p->dilation[a], p->kernel[a], p->in[a], &b.lo[a], &b.hi[a]);
	}
	return b;
}

static int64_t volume(const int64_t d[3])
{
	return d[0] * d[1] * d[2];
}

KILN_API void kiln_f32_conv3d(const kiln_window3d_params *p, const float *X, const float *W,
                              const float *bias, float *Y)
{
	const int64_t in_vol = volume(p->in), out_vol = volume(p->out), k_vol = volume(p->kernel);
	const int64_t cg = p->channels / p->group, mg = p->out_channels / p->group;
	for (int64_t n = 0; n < p->batch; n++)
		for (int64_t m = 0; m < p->out_channels; m++) {
			const int64_t g = m / mg;
			float *y = Y + (n * p->out_channels + m) * out_vol;
			int64_t o[3];
			for (o[0] = 0; o[0] < p->out[0]; o[0]++)
				for (o[1] = 0; o[1] < p->out[1]; o[1]++)
					for (o[2] = 0; o[2] < p->out[2]; o[2]++) {
						Box b = box_at(p, o);
						double acc = bias ? (double)bias[m] : 0.0;
						for (int64_t c = 0; c < cg; c++) {
							const float *x = X + (n * p->channels + g * cg + c) * in_vol;
							const float *w = W + (m * cg + c) * k_vol;
							for (int64_t i = b.lo[0]; i < b.hi[0]; i++)
								for (int64_t j = b.lo[1]; j < b.hi[1]; j++)
									for (int64_t k = b.lo[2]; k < b.hi[2]; k++) {
										int64_t z = b.start[0] + i * p->dilation[0];
										int64_t r = b.start[1] + j * p->dilation[1];
										int64_t s = b.start[2] + k * p->dilation[2];
										acc += (double)x[(z * p->in[1] + r) * p->in[2] + s] *
										       (double)w[(i * p->kernel[1] + j) * p->kernel[2] + k];
									}
						}
						y[(o[0] * p->out[1] + o[1]) * p->out[2] + o[2]] = (float)acc;
					}
		}
}

static void pool3d(const kiln_window3d_params *p, int is_max, int count_include_pad,
                   const float *X, float *Y)
{
	const int64_t in_vol = volume(p->in), out_vol = volume(p->out);
	for (int64_t plane = 0; plane < p->batch * p->channels; plane++) {
		const float *x = X + plane * in_vol;
		float *y = Y + plane * out_vol;
		int64_t o[3];
		for (o[0] = 0; o[0] < p->out[0]; o[0]++)
			for (o[1] = 0; o[1] < p->out[1]; o[1]++)
				for (o[2] = 0; o[2] < p->out[2]; o[2]++) {
					Box b = box_at(p, o);
					double acc = is_max ? -(double)INFINITY : 0.0;
					int64_t taps = 0;
					for (int64_t i = b.lo[0]; i < b.hi[0]; i++)
						for (int64_t j = b.lo[1]; j < b.hi[1]; j++)
							for (int64_t k = b.lo[2]; k < b.hi[2]; k++) {
								int64_t z = b.start[0] + i * p->dilation[0];
								int64_t r = b.start[1] + j * p->dilation[1];
								int64_t s = b.start[2] + k * p->dilation[2];
								double v = (double)x[(z * p->in[1] + r) * p->in[2] + s];
								acc = is_max ? (v > acc ? v : acc) : acc + v;
								taps++;
							}
					if (!is_max && count_include_pad) {
						/* Taps inside the padded extent [-pad_begin, in + pad_end). */
						taps = 1;
						for (int a = 0; a < 3; a++) {
							int64_t lo, hi;
							window_range(b.start[a] + p->pad_begin[a], p->dilation[a],
							             p->kernel[a], p->in[a] + p->pad_begin[a] + p->pad_end[a],
							             &lo, &hi);
							taps *= hi > lo ? hi - lo : 0;
						}
					}
					y[(o[0] * p->out[1] + o[1]) * p->out[2] + o[2]] =
						(float)(is_max ? acc : acc / (double)taps);
				}
	}
}

KILN_API void kiln_f32_maxpool3d(const kiln_window3d_params *p, const float *X, float *Y)
{
	pool3d(p, 1, 0, X, Y);
}

KILN_API void kiln_f32_avgpool3d(const kiln_window3d_params *p, int count_include_pad,
                                 const float *X, float *Y)
{
	pool3d(p, 0, count_include_pad, X, Y);
}
