/*
 * f32-pool/ref.c - the reference float32 pooling kernels: MaxPool and
 * AveragePool in 2-D (NCHW, dilations, asymmetric pads, windows that run off
 * the padded input because of ceil_mode), GlobalAveragePool and
 * GlobalMaxPool.
 *
 * For each output, window_taps turns the window's start and dilation into the
 * range of taps that land inside the input, per axis. Only those taps are
 * read, so padding costs nothing and no tap is ever tested twice. The same
 * function, applied to the padded extent, gives AveragePool's divisor when
 * count_include_pad is set. Window sums accumulate in float (a window holds
 * few taps); the global average, over a whole plane, accumulates in double.
 */
#include <math.h>

#include "kiln/kernels.h"

/* The taps t in [0, k) with 0 <= start + t * dilation < len form one range:
 * return it as [*lo, *hi), empty if *hi <= *lo. dilation >= 1. */
static void window_taps(int64_t start, int64_t dilation, int64_t k, int64_t len, int64_t *lo,
                        int64_t *hi)
{
	int64_t first = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
	int64_t last = len - 1 - start < 0 ? 0 : (len - 1 - start) / dilation + 1;
	*lo = first;
	*hi = last < k ? last : k;
}

static int64_t count_of(int64_t lo, int64_t hi)
{
	return hi > lo ? hi - lo : 0;
}

/* The window of one output: it starts at input (h0, w0), and its taps i in
 * [i_lo, i_hi) and j in [j_lo, j_hi) are the ones inside the input. */
typedef struct {
	int64_t h0, i_lo, i_hi;
	int64_t w0, j_lo, j_hi;
} Window;

static Window window_at(const kiln_pool2d_params *p, int64_t oh, int64_t ow)
{
	Window win;
	win.h0 = oh * p->stride_h - p->pad_top;
	win.w0 = ow * p->stride_w - p->pad_left;
	window_taps(win.h0, p->dilation_h, p->kernel_h, p->in_h, &win.i_lo, &win.i_hi);
	window_taps(win.w0, p->dilation_w, p->kernel_w, p->in_w, &win.j_lo, &win.j_hi);
	return win;
}

KILN_API void kiln_f32_maxpool2d(const kiln_pool2d_params *p, const float *X, float *Y)
{
	const int64_t W = p->in_w, dh = p->dilation_h, dw = p->dilation_w;
	for (int64_t plane = 0; plane < p->batch * p->channels; plane++) {
		const float *x = X + plane * p->in_h * W;
		float *y = Y + plane * p->out_h * p->out_w;
		for (int64_t oh = 0; oh < p->out_h; oh++)
			for (int64_t ow = 0; ow < p->out_w; ow++) {
				Window win = window_at(p, oh, ow);
				float best = -INFINITY;
				for (int64_t i = win.i_lo; i < win.i_hi; i++) {
					const float *row = x + (win.h0 + i * dh) * W;
					for (int64_t j = win.j_lo; j < win.j_hi; j++) {
						float v = row[win.w0 + j * dw];
						best = v > best ? v : best;
					}
				}
				y[oh * p->out_w + ow] = best;
			}
	}
}

/* The divisor of a window without count_include_pad: its taps inside the input. */
static int64_t valid_count(const Window *win)
{
	return count_of(win->i_lo, win->i_hi) * count_of(win->j_lo, win->j_hi);
}

/* The divisor of a window with count_include_pad: its taps inside the padded
 * input [-pad_top, H + pad_bottom) x [-pad_left, W + pad_right). */
static int64_t padded_count(const kiln_pool2d_params *p, const Window *win)
{
	int64_t i_lo, i_hi, j_lo, j_hi;
	window_taps(win->h0 + p->pad_top, p->dilation_h, p->kernel_h,
	            p->pad_top + p->in_h + p->pad_bottom, &i_lo, &i_hi);
	window_taps(win->w0 + p->pad_left, p->dilation_w, p->kernel_w,
	            p->pad_left + p->in_w + p->pad_right, &j_lo, &j_hi);
	return count_of(i_lo, i_hi) * count_of(j_lo, j_hi);
}

KILN_API void kiln_f32_avgpool2d(const kiln_pool2d_params *p, int count_include_pad,
                                 const float *X, float *Y)
{
	const int64_t W = p->in_w, dh = p->dilation_h, dw = p->dilation_w;
	for (int64_t plane = 0; plane < p->batch * p->channels; plane++) {
		const float *x = X + plane * p->in_h * W;
		float *y = Y + plane * p->out_h * p->out_w;
		for (int64_t oh = 0; oh < p->out_h; oh++)
			for (int64_t ow = 0; ow < p->out_w; ow++) {
				Window win = window_at(p, oh, ow);
				float sum = 0.0f;
				for (int64_t i = win.i_lo; i < win.i_hi; i++) {
					const float *row = x + (win.h0 + i * dh) * W;
					for (int64_t j = win.j_lo; j < win.j_hi; j++)
						sum += row[win.w0 + j * dw];
				}
				int64_t count = count_include_pad ? padded_count(p, &win) : valid_count(&win);
				y[oh * p->out_w + ow] = count > 0 ? sum / (float)count : NAN;
			}
	}
}

KILN_API void kiln_f32_global_avgpool(const float *X, float *Y, int64_t planes,
                                      int64_t plane_size)
{
	for (int64_t plane = 0; plane < planes; plane++) {
		const float *x = X + plane * plane_size;
		double sum = 0.0;
		for (int64_t i = 0; i < plane_size; i++)
			sum += (double)x[i];
		Y[plane] = plane_size > 0 ? (float)(sum / (double)plane_size) : NAN;
	}
}

KILN_API void kiln_f32_global_maxpool(const float *X, float *Y, int64_t planes,
                                      int64_t plane_size)
{
	for (int64_t plane = 0; plane < planes; plane++) {
		const float *x = X + plane * plane_size;
		float best = -INFINITY;
		for (int64_t i = 0; i < plane_size; i++)
			best = x[i] > best ? x[i] : best;
		Y[plane] = best;
	}
}
