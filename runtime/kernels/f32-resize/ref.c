/*
 * f32-resize/ref.c - ONNX Resize (and Upsample) for float32, any rank up
 * to 8: nearest, linear and cubic interpolation with every coordinate
 * transformation mode of opsets 11-19, and opset 18's antialiasing.
 *
 * Interpolation is separable: per output element, each axis contributes up
 * to four taps (source index, weight), and the result is the weighted sum
 * over all tap combinations. Taps outside the input are clamped to the edge
 * (or, with exclude_outside, dropped and the weights renormalized), as the
 * ONNX reference does. Weights are computed in double.
 */
#include <math.h>

#include "kiln/kernels.h"

enum { MAX_TAPS = KILN_RESIZE_MAX_TAPS };

/* An axis's taps for one output coordinate: n (index, weight) pairs, or,
 * for an antialiasing filter wider than MAX_TAPS (a strong shrink), the
 * contiguous input range [lo, lo + n) whose weights tap_at computes. */
typedef struct Taps {
	int64_t n;
	int64_t index[MAX_TAPS];
	double weight[MAX_TAPS];
	int outside;       /* tf_crop_and_resize: the coordinate is off the input */
	int wide;          /* weights computed per tap: lo, x, s, inv_sum */
	int64_t lo;
	double x, s, inv_sum;
} Taps;

static double source_coord(const kiln_resize_params *p, int a, int64_t o)
{
	double in = (double)p->in[a], out = (double)p->out[a], s = p->scale[a], x = (double)o;
	switch (p->coord_mode) {
	case KILN_RESIZE_HALF_PIXEL: return (x + 0.5) / s - 0.5;
	case KILN_RESIZE_PYTORCH_HALF_PIXEL: return out > 1 ? (x + 0.5) / s - 0.5 : 0.0;
	case KILN_RESIZE_ALIGN_CORNERS: return out > 1 ? x * (in - 1) / (s * in - 1) : 0.0;
	case KILN_RESIZE_ASYMMETRIC: return x / s;
	case KILN_RESIZE_HALF_PIXEL_SYMMETRIC: {
		/* half_pixel about the input's centre, where floor(in * s) < in * s */
		double offset = in / 2 * (1 - out / (s * in));
		return offset + (x + 0.5) / s - 0.5;
	}
	case KILN_RESIZE_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / s;
	case KILN_RESIZE_TF_CROP_AND_RESIZE:
		return out > 1 ? p->roi_start[a] * (in - 1) +
		                     x * (p->roi_end[a] - p->roi_start[a]) * (in - 1) / (out - 1)
		               : 0.5 * (p->roi_start[a] + p->roi_end[a]) * (in - 1);
	}
	return x / s;
}

static int64_t clamp_index(int64_t i, int64_t n)
{
	return i < 0 ? 0 : i >= n ? n - 1 : i;
}

static void cubic_weights(double r, double A, double w[4])
{
	double t = r + 1, u = 1 - r, v = 2 - r;
	w[0] = ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
	w[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
	w[2] = ((A + 2) * u - (A + 3)) * u * u + 1;
	w[3] = ((A * v - 5 * A) * v + 8 * A) * v - 4 * A;
}

/* The cubic convolution kernel at distance d. */
static double cubic_at(double d, double A)
{
	d = fabs(d);
	if (d < 1)
		return ((A + 2) * d - (A + 3)) * d * d + 1;
	if (d < 2)
		return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
	return 0;
}

/* The antialiasing filter's weight at input index i, for coordinate x and
 * shrink s (unnormalized). */
static double antialias_weight(const kiln_resize_params *p, int64_t i, double x, double s)
{
	double d = ((double)i - x) * s;
	return p->mode == KILN_RESIZE_LINEAR ? fmax(0.0, 1.0 - fabs(d))
	                                     : cubic_at(d, p->cubic_coeff_a);
}

/* Antialiasing (Resize-18, linear and cubic): when shrinking by s < 1, the
 * filter is stretched by 1 / s, so every input pixel within support / s of
 * x contributes filter((i - x) * s); the weights are normalized to sum 1.
 * Taps outside the input are clamped to the edge, or with exclude_outside
 * dropped (as ONNX Runtime computes it). A filter of more than MAX_TAPS
 * taps (shrinking by more than ~1/31) is kept as its range, its weights
 * computed where they are used. */
static void antialias_taps(const kiln_resize_params *p, int a, double x, Taps *t)
{
	int64_t in = p->in[a];
	double s = p->scale[a] < 1 ? p->scale[a] : 1.0;
	double support = (p->mode == KILN_RESIZE_LINEAR ? 1.0 : 2.0) / s, c = x + 0.5, sum = 0;
	int64_t lo = (int64_t)floor(c - support + 0.5), hi = (int64_t)floor(c + support + 0.5);
	if (p->exclude_outside) {
		lo = lo < 0 ? 0 : lo;
		hi = hi > in ? in : hi;
	}
	t->n = hi > lo ? hi - lo : 0;
	t->wide = t->n > MAX_TAPS;
	for (int64_t i = lo; i < hi; i++) {
		double w = antialias_weight(p, i, x, s);
		if (!t->wide) {
			t->index[i - lo] = clamp_index(i, in);
			t->weight[i - lo] = w;
		}
		sum += w;
	}
	t->lo = lo, t->x = x, t->s = s, t->inv_sum = sum != 0 ? 1 / sum : 1;
	for (int64_t k = 0; !t->wide && sum != 0 && k < t->n; k++)
		t->weight[k] /= sum;
}

/* Tap k of axis a: its input index and weight. */
static int64_t tap_at(const kiln_resize_params *p, int a, const Taps *t, int64_t k, double *w)
{
	if (!t->wide) {
		*w = t->weight[k];
		return t->index[k];
	}
	*w = antialias_weight(p, t->lo + k, t->x, t->s) * t->inv_sum;
	return clamp_index(t->lo + k, p->in[a]);
}

static void taps_for(const kiln_resize_params *p, int a, int64_t o, Taps *t)
{
	int64_t in = p->in[a];
	double x = source_coord(p, a, o);
	t->outside = p->coord_mode == KILN_RESIZE_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(in - 1));
	t->wide = 0;
	if (p->antialias && p->mode != KILN_RESIZE_NEAREST) {
		antialias_taps(p, a, x, t);
		return;
	}
	if (p->mode == KILN_RESIZE_NEAREST) {
		double f = floor(x), i;
		switch (p->nearest_mode) {
		case KILN_NEAREST_ROUND_PREFER_CEIL: i = floor(x + 0.5); break;
		case KILN_NEAREST_FLOOR: i = f; break;
		case KILN_NEAREST_CEIL: i = ceil(x); break;
		default: i = x - f == 0.5 ? f : floor(x + 0.5); break; /* round_prefer_floor */
		}
		t->n = 1;
		t->index[0] = clamp_index((int64_t)i, in);
		t->weight[0] = 1;
		return;
	}
	double f = floor(x), r = x - f;
	int64_t base = (int64_t)f;
	if (p->mode == KILN_RESIZE_LINEAR) {
		t->n = 2;
		t->index[0] = base;
		t->index[1] = base + 1;
		t->weight[0] = 1 - r;
		t->weight[1] = r;
	} else {
		t->n = 4;
		cubic_weights(r, p->cubic_coeff_a, t->weight);
		for (int k = 0; k < 4; k++)
			t->index[k] = base - 1 + k;
	}
	double sum = 0;
	for (int k = 0; k < t->n; k++) {
		if (p->exclude_outside && (t->index[k] < 0 || t->index[k] >= in))
			t->weight[k] = 0;
		t->index[k] = clamp_index(t->index[k], in);
		sum += t->weight[k];
	}
	if (p->exclude_outside && sum != 0)
		for (int k = 0; k < t->n; k++)
			t->weight[k] /= sum;
}

KILN_API void kiln_f32_resize(const kiln_resize_params *p, const float *X, float *Y)
{
	int rank = p->rank;
	int64_t in_stride[KILN_RESIZE_MAX_RANK], total = 1, o[KILN_RESIZE_MAX_RANK];
	int64_t s = 1;
	for (int a = rank - 1; a >= 0; a--) {
		in_stride[a] = s;
		s *= p->in[a];
		total *= p->out[a];
		o[a] = 0;
	}
	for (int64_t at = 0; at < total; at++) {
		Taps t[KILN_RESIZE_MAX_RANK];
		int outside = 0;
		int64_t combos = 1;
		for (int a = 0; a < rank; a++) {
			taps_for(p, a, o[a], &t[a]);
			outside |= t[a].outside;
			combos *= t[a].n;
		}
		double acc = 0;
		if (outside) {
			acc = p->extrapolation_value;
		} else {
			for (int64_t c = 0; c < combos; c++) {
				int64_t rest = c, off = 0;
				double w = 1;
				for (int a = rank - 1; a >= 0; a--) {
					double wa;
					off += tap_at(p, a, &t[a], rest % t[a].n, &wa) * in_stride[a];
					rest /= t[a].n;
					w *= wa;
				}
				if (w != 0)
					acc += w * (double)X[off];
			}
		}
		Y[at] = (float)acc;
		for (int a = rank - 1; a >= 0; a--) { /* next output coordinate */
			if (++o[a] < p->out[a])
				break;
			o[a] = 0;
		}
	}
}
