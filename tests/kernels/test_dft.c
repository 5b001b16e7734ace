/*
 * test_dft.c - kiln_f32_dft, kiln_f32_stft and kiln_mel_bin against
 * references computed here in double precision (the defining sums, with
 * twiddles from cos/sin of the exact angle).
 *
 * Lengths cover the FFT path (powers of two up to 1024) and direct sums
 * (odd, prime, 10, and powers of two past the FFT's stack limit), real and
 * complex input, truncation and zero padding (x_len != n), onesided output
 * (y_len < n), inverse transforms and strided lines (inner > 1).
 * Tolerance: |err| <= 1e-6 * sum_j |x_j| (times 1 / n for the inverse):
 * the sum of the magnitudes of the terms, which is what rounding error is
 * proportional to, so outputs that cancel to near zero are still judged.
 * A float32 FFT would miss this for the larger n; sums in double meet it
 * with room to spare.
 */
#include "kiln/kernels.h"

#include "harness.h"

static const double DFT_TOL = 1e-6;
static const double PI2 = 6.283185307179586476925286766559;

/* Reference of one kiln_f32_dft call (window W, if any, of length x_len). */
static void reference(int64_t outer, int64_t inner, int64_t x_len, int x_comp, const float *X,
                      const float *W, int64_t n, int64_t y_len, int inverse, double *want,
                      double *bound)
{
	int64_t navail = x_len < n ? x_len : n;
	double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / (double)n : 1.0;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++)
			for (int64_t k = 0; k < y_len; k++) {
				double sr = 0, si = 0, mag = 0;
				for (int64_t j = 0; j < navail; j++) {
					const float *x = X + ((o * x_len + j) * inner + i) * x_comp;
					double f = W ? (double)W[j] : 1.0;
					double re = (double)x[0] * f, im = x_comp == 2 ? (double)x[1] * f : 0.0;
					double a = PI2 * (double)((j * k) % n) / (double)n;
					double c = cos(a), s = sign * sin(a);
					sr += re * c - im * s;
					si += re * s + im * c;
					mag += fabs(re) + fabs(im);
				}
				int64_t at = ((o * y_len + k) * inner + i) * 2;
				want[at] = sr * scale;
				want[at + 1] = si * scale;
				bound[at] = bound[at + 1] = mag * scale + 1e-30;
			}
}

static void check_dft(int64_t outer, int64_t inner, int64_t x_len, int x_comp, int64_t n,
                      int64_t y_len, int inverse)
{
	int64_t nx = outer * x_len * inner * x_comp, ny = outer * y_len * inner * 2;
	Guarded gx, gy;
	float *X = guarded_alloc(&gx, (size_t)nx * sizeof *X, 4);
	float *Y = guarded_alloc(&gy, (size_t)ny * sizeof *Y, 4);
	fill_uniform(X, nx, -1.0f, 1.0f);
	double *want = xmalloc((size_t)ny * sizeof *want), *bound = xmalloc((size_t)ny * sizeof *bound);
	reference(outer, inner, x_len, x_comp, X, NULL, n, y_len, inverse, want, bound);
	kiln_f32_dft(outer, inner, x_len, x_comp, X, n, y_len, inverse, Y);
	char what[200];
	snprintf(what, sizeof what, "dft outer %lld inner %lld x_len %lld %s n %lld y_len %lld%s",
	         (long long)outer, (long long)inner, (long long)x_len, x_comp == 2 ? "complex" : "real",
	         (long long)n, (long long)y_len, inverse ? " inverse" : "");
	CHECK_CLOSE(what, Y, want, bound, ny, DFT_TOL);
	CHECK(guarded_intact(&gy), "dft writes only its output");
	guarded_free(&gx);
	guarded_free(&gy);
	free(want);
	free(bound);
}

static void check_stft(int64_t batch, int64_t len, int x_comp, int64_t step, int64_t frame,
                       int windowed, int onesided)
{
	int64_t nframes = (len - frame) / step + 1, y_len = onesided ? frame / 2 + 1 : frame;
	int64_t nx = batch * len * x_comp, ny = batch * nframes * y_len * 2;
	Guarded gy;
	float *X = xmalloc((size_t)nx * sizeof *X), *W = xmalloc((size_t)frame * sizeof *W);
	float *Y = guarded_alloc(&gy, (size_t)ny * sizeof *Y, 0);
	fill_uniform(X, nx, -1.0f, 1.0f);
	fill_uniform(W, frame, 0.0f, 1.0f);
	double *want = xmalloc((size_t)ny * sizeof *want), *bound = xmalloc((size_t)ny * sizeof *bound);
	/* Frame f of row b is a DFT of one line that starts at sample f * step. */
	for (int64_t b = 0; b < batch; b++)
		for (int64_t f = 0; f < nframes; f++) {
			int64_t at = (b * nframes + f) * y_len * 2;
			reference(1, 1, frame, x_comp, X + (b * len + f * step) * x_comp, windowed ? W : NULL,
			          frame, y_len, 0, want + at, bound + at);
		}
	kiln_f32_stft(batch, len, x_comp, X, step, windowed ? W : NULL, frame, nframes, y_len, Y);
	char what[200];
	snprintf(what, sizeof what, "stft batch %lld len %lld %s step %lld frame %lld%s%s",
	         (long long)batch, (long long)len, x_comp == 2 ? "complex" : "real", (long long)step,
	         (long long)frame, windowed ? " windowed" : "", onesided ? " onesided" : "");
	CHECK_CLOSE(what, Y, want, bound, ny, DFT_TOL);
	CHECK(guarded_intact(&gy), "stft writes only its output");
	guarded_free(&gy);
	free(X);
	free(W);
	free(want);
	free(bound);
}

/* The mel points against the formula in double, and the failures. */
static void check_mel(void)
{
	int64_t M = 8, dft = 16, sr = 8192;
	double lo = 0, hi = 4096;
	int ok = 1;
	for (int64_t k = 0; k <= M + 1; k++) {
		int64_t bin = -1;
		ok &= kiln_mel_bin(k, M, dft, sr, lo, hi, &bin) == KILN_OK;
		double lm = 2595 * log10(1 + lo / 700), hm = 2595 * log10(1 + hi / 700);
		double hz = 700 * (pow(10, (k * (hm - lm) / (double)(M + 2) + lm) / 2595) - 1);
		ok &= bin == (int64_t)floor((double)(dft + 1) * hz / (double)sr);
		ok &= bin >= 0 && bin <= dft / 2;
	}
	CHECK(ok, "mel points follow the formula");
	int64_t bin = 123;
	CHECK(kiln_mel_bin(1, M, dft, 0, lo, hi, &bin) == KILN_SHAPE_ERROR && bin == 123,
	      "sample_rate 0 fails");
	CHECK(kiln_mel_bin(1, M, dft, sr, 10, 5, &bin) == KILN_SHAPE_ERROR, "upper < lower fails");
	CHECK(kiln_mel_bin(1, M, dft, sr, -1, 5, &bin) == KILN_SHAPE_ERROR, "negative lower fails");
	CHECK(kiln_mel_bin(1, M, dft, sr, (double)NAN, 5, &bin) == KILN_SHAPE_ERROR, "NaN edge fails");
}

int main(void)
{
	static const int64_t lengths[] = {1, 2, 3, 4, 5, 7, 8, 10, 16, 17, 31, 64, 100, 128, 1024, 2048, 2053};
	for (size_t t = 0; t < sizeof lengths / sizeof lengths[0]; t++) {
		int64_t n = lengths[t];
		int64_t outer = n >= 1024 ? 1 : 2, inner = n >= 1024 ? 1 : 3;
		for (int x_comp = 1; x_comp <= 2; x_comp++)
			for (int inverse = 0; inverse <= 1; inverse++)
				check_dft(outer, inner, n, x_comp, n, n, inverse);
		check_dft(outer, inner, n, 1, n, n / 2 + 1, 0);               /* onesided */
		check_dft(outer, 1, n + 3, 2, n, n, 0);                       /* truncated */
		check_dft(outer, 2, n / 2 + 1, 1, n, n / 2 + 1, 0);           /* zero-padded */
	}
	check_dft(0, 3, 8, 1, 8, 8, 0);  /* empty */
	check_dft(1, 1, 0, 2, 4, 4, 1);  /* all padding */
	check_stft(1, 128, 1, 8, 16, 0, 1);
	check_stft(1, 128, 1, 8, 16, 1, 1);
	check_stft(2, 100, 2, 7, 12, 1, 0);
	check_stft(3, 64, 1, 5, 10, 1, 1);
	check_stft(1, 2048, 1, 256, 512, 1, 1);
	check_mel();
	return harness_report();
}
