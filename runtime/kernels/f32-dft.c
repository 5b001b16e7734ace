/*
 * f32-dft.c - discrete Fourier transforms (ONNX DFT and STFT) and the
 * frequency bins of MelWeightMatrix.
 *
 * Every transform is one line at a time: the line's samples (strided, real
 * or complex, optionally multiplied by a window) are read as double, and
 * every sum and twiddle factor is in double; only the final result is
 * rounded to float. A float32 FFT would lose about eps * log2(n) * |x|_2
 * per output, which is more than atol 1e-5 for outputs near zero once n
 * reaches a few hundred; in double that error is far below float rounding.
 *
 * Kernels allocate nothing, so the twiddles and the FFT's working line live
 * on the stack: each call computes the n roots exp(sign 2 pi i m / n),
 * m < n, once (kiln_cos / kiln_sin of 2 pi m / n) when n <= DFT_TABLE_MAX
 * (32 KiB), and every line, ISA and batch row reads that one table.
 * Power-of-two lengths up to DFT_FFT_MAX take an iterative radix-2 FFT
 * (16 KiB more); every other length takes direct sums, O(n^2) per line,
 * exact up to double rounding, the twiddle w^(jk) read from the table at
 * jk mod n. Longer lines advance w^(jk) by complex multiplication and
 * recompute it from cos/sin every DFT_RESYNC steps, so the drift stays near
 * double epsilon.
 */
#include <math.h>

#include "kiln/kernels.h"

enum { DFT_FFT_MAX = 1024, DFT_TABLE_MAX = 2048, DFT_RESYNC = 32 };

static const double TWO_PI = 6.283185307179586476925286766559;

/* One line of the transform: sample j (j < navail; zeros after it) is
 * x[j * xs] (+ i * x[j * xs + 1] if complex), times w[j] if w. Frequency k
 * (k < y_len) goes to y[k * ys], y[k * ys + 1]. tw is the table of the n
 * roots (NULL if n > DFT_TABLE_MAX). */
static void dft_line(const float *x, int64_t xs, int x_comp, const float *w, int64_t navail,
                     int64_t n, int64_t y_len, int inverse, const double *tw, float *y, int64_t ys)
{
	double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / (double)n : 1.0;
	if (tw && n <= DFT_FFT_MAX && (n & (n - 1)) == 0) {
		double buf[2 * DFT_FFT_MAX];
		int bits = 0;
		while ((INT64_C(1) << bits) < n)
			bits++;
		/* Load in bit-reversed order. */
		for (int64_t j = 0; j < n; j++) {
			int64_t r = 0;
			for (int b = 0; b < bits; b++)
				r |= ((j >> b) & 1) << (bits - 1 - b);
			double re = 0, im = 0;
			if (j < navail) {
				double f = w ? (double)w[j] : 1.0;
				re = (double)x[j * xs] * f;
				im = x_comp == 2 ? (double)x[j * xs + 1] * f : 0.0;
			}
			buf[2 * r] = re;
			buf[2 * r + 1] = im;
		}
		for (int64_t len = 2; len <= n; len *= 2) {
			int64_t half = len / 2, step = n / len;
			for (int64_t s = 0; s < n; s += len)
				for (int64_t k = 0; k < half; k++) {
					double wr = tw[2 * k * step], wi = tw[2 * k * step + 1];
					double *a = &buf[2 * (s + k)], *b = &buf[2 * (s + k + half)];
					double tr = b[0] * wr - b[1] * wi, ti = b[0] * wi + b[1] * wr;
					b[0] = a[0] - tr;
					b[1] = a[1] - ti;
					a[0] += tr;
					a[1] += ti;
				}
		}
		for (int64_t k = 0; k < y_len; k++) {
			y[k * ys] = (float)(buf[2 * k] * scale);
			y[k * ys + 1] = (float)(buf[2 * k + 1] * scale);
		}
		return;
	}
	if (tw) {
		for (int64_t k = 0; k < y_len; k++) {
			double sr = 0, si = 0;
			int64_t m = 0, kn = k % n; /* m = j k mod n */
			for (int64_t j = 0; j < navail; j++) {
				double f = w ? (double)w[j] : 1.0;
				double re = (double)x[j * xs] * f;
				double im = x_comp == 2 ? (double)x[j * xs + 1] * f : 0.0;
				double tr = tw[2 * m], ti = tw[2 * m + 1];
				sr += re * tr - im * ti;
				si += re * ti + im * tr;
				m += kn;
				if (m >= n)
					m -= n;
			}
			y[k * ys] = (float)(sr * scale);
			y[k * ys + 1] = (float)(si * scale);
		}
		return;
	}
	for (int64_t k = 0; k < y_len; k++) {
		/* w_k = exp(sign * 2 pi i k / n); t = w_k^j, resynchronised. */
		double ang = TWO_PI * (double)k / (double)n;
		double wr = kiln_cos(ang), wi = sign * kiln_sin(ang);
		double tr = 1, ti = 0, sr = 0, si = 0;
		for (int64_t j = 0; j < navail; j++) {
			if (j % DFT_RESYNC == 0 && j > 0) {
				double a = TWO_PI * (double)((j * k) % n) / (double)n;
				tr = kiln_cos(a);
				ti = sign * kiln_sin(a);
			}
			double f = w ? (double)w[j] : 1.0;
			double re = (double)x[j * xs] * f;
			double im = x_comp == 2 ? (double)x[j * xs + 1] * f : 0.0;
			sr += re * tr - im * ti;
			si += re * ti + im * tr;
			double nr = tr * wr - ti * wi;
			ti = tr * wi + ti * wr;
			tr = nr;
		}
		y[k * ys] = (float)(sr * scale);
		y[k * ys + 1] = (float)(si * scale);
	}
}

/* The n roots exp(sign * 2 pi i m / n), m < n, into tw (2 n doubles);
 * returns tw, or NULL if n > DFT_TABLE_MAX. */
static const double *dft_twiddles(int64_t n, int inverse, double *tw)
{
	if (n < 1 || n > DFT_TABLE_MAX)
		return NULL;
	double sign = inverse ? 1.0 : -1.0;
	for (int64_t m = 0; m < n; m++) {
		double a = TWO_PI * (double)m / (double)n;
		tw[2 * m] = kiln_cos(a);
		tw[2 * m + 1] = sign * kiln_sin(a);
	}
	return tw;
}

void kiln_f32_dft(int64_t outer, int64_t inner, int64_t x_len, int x_comp, const float *X,
                  int64_t n, int64_t y_len, int inverse, float *Y)
{
	double tw_buf[2 * DFT_TABLE_MAX];
	const double *tw = dft_twiddles(n, inverse, tw_buf);
	int64_t navail = x_len < n ? x_len : n;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++)
			dft_line(X + (o * x_len * inner + i) * x_comp, inner * x_comp, x_comp, NULL, navail,
			         n, y_len, inverse, tw, Y + (o * y_len * inner + i) * 2, inner * 2);
}

void kiln_f32_stft(int64_t batch, int64_t len, int x_comp, const float *X, int64_t frame_step,
                   const float *W, int64_t frame_length, int64_t nframes, int64_t y_len, float *Y)
{
	double tw_buf[2 * DFT_TABLE_MAX];
	const double *tw = dft_twiddles(frame_length, 0, tw_buf);
	for (int64_t b = 0; b < batch; b++)
		for (int64_t f = 0; f < nframes; f++)
			dft_line(X + (b * len + f * frame_step) * x_comp, x_comp, x_comp, W, frame_length,
			         frame_length, y_len, 0, tw, Y + (b * nframes + f) * y_len * 2, 2);
}

enum kiln_status kiln_mel_bin(int64_t k, int64_t num_mel_bins, int64_t dft_length,
                              int64_t sample_rate, double lower_hz, double upper_hz, int64_t *bin)
{
	if (sample_rate <= 0 || !(lower_hz >= 0) || !(upper_hz >= lower_hz) ||
	    !(upper_hz < 1e15))
		return KILN_SHAPE_ERROR;
	/* log10 u = ln u / ln 10 and 10^v by kiln's own functions, not libm's */
	static const double ln10 = 2.302585092994045684;
	double low_mel = 2595.0 * (kiln_log(1.0 + lower_hz / 700.0) / ln10);
	double high_mel = 2595.0 * (kiln_log(1.0 + upper_hz / 700.0) / ln10);
	double mel = (double)k * ((high_mel - low_mel) / (double)(num_mel_bins + 2)) + low_mel;
	double hz = 700.0 * (kiln_pow(10.0, mel / 2595.0) - 1.0);
	*bin = (int64_t)floor((double)(dft_length + 1) * hz / (double)sample_rate);
	return KILN_OK;
}
