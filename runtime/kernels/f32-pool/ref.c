/*
 * f32-pool/ref.c - the reference float32 pooling kernels: MaxPool and
 * AveragePool in 2-D (NCHW, dilations, asymmetric pads, windows that run off
 * the padded input because of ceil_mode), GlobalAveragePool and
 * GlobalMaxPool; and MaxPool over 1 to 3 axes for five element types with
 * the Indices output (kiln_*_maxpool_nd, at the end).
 *
 * For each output, window_taps turns the window's start and dilation into the
 * range of taps that land inside the input, per axis. Only those taps are
 * read, so padding costs nothing and no tap is ever tested twice. The same
 * function, applied to the padded extent, gives AveragePool's divisor when
 * count_include_pad is set. Window sums accumulate in float (a window holds
 * few taps); the global average, over a whole plane, accumulates in double.
 * kiln_f32_maxpool2d runs separably instead (down the columns, then across),
 * its row loops in pool.h's variants.
 */
#include <math.h>
#include <string.h>

#include "../isa.h"
#include "kiln/kernels.h"
#include "pool.h"

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

/* MaxPool one window at a time (windows wider than a row buffer). */
static void maxpool2d_windows(const kiln_pool2d_params *p, const float *X, float *Y)
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

static void vmax_ref(const float *const *rows, int64_t n, float *dst, int64_t len)
{
	for (int64_t c = 0; c < len; c++) {
		float best = -INFINITY;
		for (int64_t r = 0; r < n; r++)
			best = rows[r][c] > best ? rows[r][c] : best;
		dst[c] = best;
	}
}

void kiln_pool_hmax3s2_ref(const float *t, float *y, int64_t n)
{
	for (int64_t k = 0; k < n; k++) {
		float best = t[2 * k];
		best = t[2 * k + 1] > best ? t[2 * k + 1] : best;
		best = t[2 * k + 2] > best ? t[2 * k + 2] : best;
		y[k] = best;
	}
}

static void prefetch_ref(const float *row, int64_t len)
{
	(void)row, (void)len;
}

const PoolRowOps kiln_pool_ref = {vmax_ref, kiln_pool_hmax3s2_ref, prefetch_ref};

static const PoolRowOps *pool_row_ops(void)
{
	switch (kiln_isa()) {
#ifdef KILN_HAVE_X86_VARIANTS
	case KILN_ISA_AVX512: return &kiln_pool_avx512;
	case KILN_ISA_AVX2: return &kiln_pool_avx2;
#endif
	default: return &kiln_pool_ref;
	}
}

/* The row buffer of kiln_f32_maxpool2d: padded columns of one chunk of
 * outputs, and the slack hmax3s2 may read. Rows up to POOL_ROW columns are
 * prefetched PREFETCH_AHEAD output rows ahead (for a 3x3/2 pooling from a
 * large map, 10 % less time on this machine: the hardware prefetcher alone
 * falls behind at each short row). */
enum { POOL_ROW = 1024, POOL_SLACK = 64, PREFETCH_AHEAD = 2 };

/* The outputs [ow0, ow0 + n) of one output row: t, POOL_ROW + POOL_SLACK
 * floats, receives the vertical maxima of the padded columns they cover,
 * -INFINITY in the padding; then each output folds its taps of t. */
static void maxpool_row_chunk(const kiln_pool2d_params *p, const PoolRowOps *ops,
                              const float *const *rows, int64_t nrows, int64_t ow0, int64_t n,
                              float *t, float *y)
{
	const int64_t sw = p->stride_w, dw = p->dilation_w;
	const int64_t c0 = ow0 * sw - p->pad_left; /* input column of t[0] */
	const int64_t span = (n - 1) * sw + (p->kernel_w - 1) * dw + 1;
	/* t[lo, hi): the columns inside the input; lo <= hi <= span */
	int64_t lo = c0 < 0 ? -c0 : 0, hi = p->in_w - c0;
	lo = lo < span ? lo : span;
	hi = hi < span ? hi : span;
	if (hi < lo)
		hi = lo;
	for (int64_t i = 0; i < lo; i++)
		t[i] = -INFINITY;
	/* rows in groups of 8: the first group sets t[lo, hi), later ones fold into it */
	for (int64_t r = 0; hi > lo && (r < nrows || r == 0); r += 8) {
		const float *at[9];
		int64_t m = nrows - r < 8 ? nrows - r : 8;
		for (int64_t k = 0; k < m; k++)
			at[k] = rows[r + k] + c0 + lo;
		if (r > 0)
			at[m++] = t + lo;
		ops->vmax(at, m, t + lo, hi - lo);
	}
	for (int64_t i = hi; i < span + POOL_SLACK / 2; i++)
		t[i] = -INFINITY;
	if (p->kernel_w == 3 && sw == 2 && dw == 1) {
		ops->hmax3s2(t, y, n);
		return;
	}
	for (int64_t k = 0; k < n; k++) {
		const float *w = t + k * sw;
		float best = w[0];
		for (int64_t j = 1; j < p->kernel_w; j++)
			best = w[j * dw] > best ? w[j * dw] : best;
		y[k] = best;
	}
}

/* Separable: per output row, the maxima down each column of its window rows,
 * then across each window of those (the same maximum; of equal taps, +0 and
 * -0, a different one may win). Outputs are done in chunks whose padded
 * columns fit POOL_ROW floats. */
KILN_API void kiln_f32_maxpool2d(const kiln_pool2d_params *p, const float *X, float *Y)
{
	const int64_t sw = p->stride_w, reach = (p->kernel_w - 1) * p->dilation_w + 1;
	if (reach > POOL_ROW || p->kernel_h > 64) {
		maxpool2d_windows(p, X, Y);
		return;
	}
	const int64_t chunk = (POOL_ROW - reach) / sw + 1;
	const PoolRowOps *ops = pool_row_ops();
	float t[POOL_ROW + POOL_SLACK];
	const float *rows[64];
	for (int64_t plane = 0; plane < p->batch * p->channels; plane++) {
		const float *x = X + plane * p->in_h * p->in_w;
		float *y = Y + plane * p->out_h * p->out_w;
		for (int64_t oh = 0; oh < p->out_h; oh++, y += p->out_w) {
			int64_t h0 = oh * p->stride_h - p->pad_top, i_lo, i_hi;
			window_taps(h0, p->dilation_h, p->kernel_h, p->in_h, &i_lo, &i_hi);
			int64_t nrows = 0;
			for (int64_t i = i_lo; i < i_hi; i++)
				rows[nrows++] = x + (h0 + i * p->dilation_h) * p->in_w;
			int64_t ahead = h0 + PREFETCH_AHEAD * p->stride_h;
			for (int64_t i = 0; p->in_w <= POOL_ROW && i < p->kernel_h; i++) {
				int64_t r = ahead + i * p->dilation_h;
				if (r >= 0 && r < p->in_h)
					ops->prefetch(x + r * p->in_w, p->in_w);
			}
			for (int64_t ow0 = 0; ow0 < p->out_w; ow0 += chunk) {
				int64_t n = p->out_w - ow0 < chunk ? p->out_w - ow0 : chunk;
				maxpool_row_chunk(p, ops, rows, nrows, ow0, n, t, y + ow0);
			}
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

/* ---- MaxPool over 1 to 3 axes, any of five element types, with indices ----
 *
 * One loop finds each window's winning tap; the element types differ only in
 * how a tap is read for comparison (widened to double, exact for all five)
 * and in the value of an empty window. The winner is copied bit for bit. */

typedef double (*LoadFn)(const void *x, int64_t i);

static double load_f32(const void *x, int64_t i) { return (double)((const float *)x)[i]; }
static double load_f64(const void *x, int64_t i) { return ((const double *)x)[i]; }
static double load_f16(const void *x, int64_t i)
{
	return (double)kiln_f16_to_f32(((const uint16_t *)x)[i]);
}
static double load_i8(const void *x, int64_t i) { return (double)((const int8_t *)x)[i]; }
static double load_u8(const void *x, int64_t i) { return (double)((const uint8_t *)x)[i]; }

static void maxpool_nd(const kiln_window3d_params *p, int storage_order, const void *X,
                       size_t elem_bytes, LoadFn load, const void *lowest, void *Y, int64_t *I)
{
	const int64_t *in = p->in, *out = p->out;
	const int64_t in_vol = in[0] * in[1] * in[2], out_vol = out[0] * out[1] * out[2];
	const unsigned char *x = X;
	unsigned char *y = Y;
	for (int64_t plane = 0; plane < p->batch * p->channels; plane++) {
		int64_t o[3], start[3], lo[3], hi[3], t[3];
		int64_t yi = plane * out_vol;
		for (o[0] = 0; o[0] < out[0]; o[0]++)
			for (o[1] = 0; o[1] < out[1]; o[1]++)
				for (o[2] = 0; o[2] < out[2]; o[2]++, yi++) {
					for (int a = 0; a < 3; a++) {
						start[a] = o[a] * p->stride[a] - p->pad_begin[a];
						window_taps(start[a], p->dilation[a], p->kernel[a], in[a], &lo[a],
						            &hi[a]);
					}
					int64_t best_at = -1, at[3] = {0, 0, 0};
					double best = 0.0;
					for (t[0] = lo[0]; t[0] < hi[0]; t[0]++)
						for (t[1] = lo[1]; t[1] < hi[1]; t[1]++)
							for (t[2] = lo[2]; t[2] < hi[2]; t[2]++) {
								int64_t z[3];
								for (int a = 0; a < 3; a++)
									z[a] = start[a] + t[a] * p->dilation[a];
								int64_t i = (z[0] * in[1] + z[1]) * in[2] + z[2];
								double v = load(x + plane * in_vol * elem_bytes, i);
								/* the first tap, a larger one, or any number after NaN */
								if (best_at < 0 || v > best || best != best) {
									best = v;
									best_at = i;
									at[0] = z[0], at[1] = z[1], at[2] = z[2];
								}
							}
					void *dst = y + yi * elem_bytes;
					if (best_at < 0)
						memcpy(dst, lowest, elem_bytes);
					else
						memcpy(dst, x + (plane * in_vol + best_at) * elem_bytes, elem_bytes);
					if (!I)
						continue;
					if (best_at < 0)
						I[yi] = -1;
					else if (storage_order == 0)
						I[yi] = plane * in_vol + best_at;
					else
						I[yi] = plane * in_vol + at[0] + at[1] * in[0] + at[2] * in[0] * in[1];
				}
	}
}

KILN_API void kiln_f32_maxpool_nd(const kiln_window3d_params *p, int storage_order,
                                  const float *X, float *Y, int64_t *I)
{
	const float lowest = -INFINITY;
	maxpool_nd(p, storage_order, X, sizeof *X, load_f32, &lowest, Y, I);
}

KILN_API void kiln_f64_maxpool_nd(const kiln_window3d_params *p, int storage_order,
                                  const double *X, double *Y, int64_t *I)
{
	const double lowest = -(double)INFINITY;
	maxpool_nd(p, storage_order, X, sizeof *X, load_f64, &lowest, Y, I);
}

KILN_API void kiln_f16_maxpool_nd(const kiln_window3d_params *p, int storage_order,
                                  const uint16_t *X, uint16_t *Y, int64_t *I)
{
	const uint16_t lowest = 0xfc00; /* -inf */
	maxpool_nd(p, storage_order, X, sizeof *X, load_f16, &lowest, Y, I);
}

KILN_API void kiln_i8_maxpool_nd(const kiln_window3d_params *p, int storage_order,
                                 const int8_t *X, int8_t *Y, int64_t *I)
{
	const int8_t lowest = INT8_MIN;
	maxpool_nd(p, storage_order, X, sizeof *X, load_i8, &lowest, Y, I);
}

KILN_API void kiln_u8_maxpool_nd(const kiln_window3d_params *p, int storage_order,
                                 const uint8_t *X, uint8_t *Y, int64_t *I)
{
	const uint8_t lowest = 0;
	maxpool_nd(p, storage_order, X, sizeof *X, load_u8, &lowest, Y, I);
}

/* ---- LpPool and GlobalLpPool ------------------------------------------- */

/* |v|^norm, exact for the common norms 1 and 2. */
static double lp_term(double v, int64_t norm)
{
	v = fabs(v);
	return norm == 1 ? v : norm == 2 ? v * v : kiln_pow(v, (double)norm);
}

static float lp_root(double sum, int64_t norm)
{
	return (float)(norm == 1 ? sum : norm == 2 ? sqrt(sum) : kiln_pow(sum, 1.0 / (double)norm));
}

KILN_API void kiln_f32_lppool_nd(const kiln_window3d_params *p, int64_t norm, const float *X,
                                 float *Y)
{
	const int64_t *in = p->in, *out = p->out;
	const int64_t in_vol = in[0] * in[1] * in[2];
	for (int64_t plane = 0; plane < p->batch * p->channels; plane++) {
		const float *x = X + plane * in_vol;
		int64_t o[3], start[3], lo[3], hi[3], t[3];
		for (o[0] = 0; o[0] < out[0]; o[0]++)
			for (o[1] = 0; o[1] < out[1]; o[1]++)
				for (o[2] = 0; o[2] < out[2]; o[2]++) {
					for (int a = 0; a < 3; a++) {
						start[a] = o[a] * p->stride[a] - p->pad_begin[a];
						window_taps(start[a], p->dilation[a], p->kernel[a], in[a], &lo[a],
						            &hi[a]);
					}
					double sum = 0.0;
					for (t[0] = lo[0]; t[0] < hi[0]; t[0]++)
						for (t[1] = lo[1]; t[1] < hi[1]; t[1]++)
							for (t[2] = lo[2]; t[2] < hi[2]; t[2]++) {
								int64_t z0 = start[0] + t[0] * p->dilation[0];
								int64_t z1 = start[1] + t[1] * p->dilation[1];
								int64_t z2 = start[2] + t[2] * p->dilation[2];
								sum += lp_term((double)x[(z0 * in[1] + z1) * in[2] + z2], norm);
							}
					*Y++ = lp_root(sum, norm);
				}
	}
}

KILN_API void kiln_f32_global_lppool(const float *X, float *Y, int64_t planes,
                                     int64_t plane_size, int64_t norm)
{
	for (int64_t plane = 0; plane < planes; plane++) {
		const float *x = X + plane * plane_size;
		double sum = 0.0;
		for (int64_t i = 0; i < plane_size; i++)
			sum += lp_term((double)x[i], norm);
		Y[plane] = lp_root(sum, norm);
	}
}
