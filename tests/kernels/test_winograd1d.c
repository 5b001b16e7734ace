/*
 * test_winograd1d.c - kiln_f32_conv1d_wino (runtime/kernels/f32-winograd1d)
 * against a double-precision direct convolution: 3 taps, stride 1, on the
 * filters kiln_f32_conv1d_wino_pack transformed (from a misaligned copy of
 * W); lengths with whole and partial last tiles of 4, pads 0, 1, 2 and
 * uneven ones, 16 to 130 input and output channels (not only multiples of
 * 8 or 32), 1 to 40 images (chunks of images and a last partial chunk), with
 * and without bias, residual, ReLU, LeakyRelu, Clip and Tanh; X and Y off
 * their alignment and guarded. Tolerance 4e-6 of sum |w| |x| (+ |b| + |r|):
 * F(4, 3)'s transforms on the points 0, +-1, +-2 scale inputs by up to 5
 * and outputs by up to 8 (measured worst: the line this test prints, and
 * docs/kernels.md). Every image of a batch must equal, bit for bit, the
 * same image convolved alone (batch 1). The shapes this path does not take
 * (_takes 0, _work 0) are checked too.
 */
#include "harness.h"
#include "kiln/kernels.h"
#include "act_ref.h"
#include "wino_check.h"

static const double TOL = 4e-6;
static double worst;
static uint64_t hash = 1469598103934665603u;   /* FNV-1a of every output byte */

typedef struct Case {
	int64_t n, c, m, w, pl, pr;
	int bias, act, residual;
} Case;

static void run(const Case *k)
{
	int64_t ow = k->w + k->pl + k->pr - 2;
	kiln_conv2d_params p = {
		.batch = k->n, .in_channels = k->c, .in_h = 1, .in_w = k->w, .out_channels = k->m,
		.group = 1, .kernel_h = 1, .kernel_w = 3, .stride_h = 1, .stride_w = 1,
		.dilation_h = 1, .dilation_w = 1, .pad_left = k->pl, .pad_right = k->pr,
		.out_h = 1, .out_w = ow};
	int64_t nw = k->m * k->c * 3;
	int64_t work = kiln_f32_conv1d_wino_work(&p);
	char what[200];
	snprintf(what, sizeof what, "N %lld C %lld M %lld W %lld pads %lld %lld bias %d act %d "
	         "residual %d", (long long)k->n, (long long)k->c, (long long)k->m, (long long)k->w,
	         (long long)k->pl, (long long)k->pr, k->bias, k->act, k->residual);
	CHECK(kiln_f32_conv1d_wino_takes(&p) && work > 0, what);
	if (work <= 0)
		return;
	WinoBufs b;
	wino_alloc(&b, kiln_f32_conv1d_wino_work, &p, nw);
	const float *X = b.X, *W = b.W, *B = b.B, *R = b.R;
	float *U = xmalloc((size_t)kiln_f32_conv1d_wino_packed_floats(k->c, k->m) * sizeof(float));
	kiln_f32_conv1d_wino_pack(&p, (const float *)(const void *)(b.Wmis + 1), U);
	for (int64_t n = 0; n < k->n; n++)
		for (int64_t o = 0; o < k->m; o++)
			for (int64_t x = 0; x < ow; x++) {
				int64_t i = (n * k->m + o) * ow + x;
				double s = k->bias ? (double)B[o] : 0.0, a = k->bias ? fabs((double)B[o]) : 0.0;
				for (int64_t c = 0; c < k->c; c++)
					for (int64_t t = 0; t < 3; t++) {
						int64_t ix = x - k->pl + t;
						if (ix < 0 || ix >= k->w)
							continue;
						double wv = (double)W[(o * k->c + c) * 3 + t];
						double xv = (double)X[(n * k->c + c) * k->w + ix];
						s += wv * xv, a += fabs(wv * xv);
					}
				if (k->residual)
					s += (double)R[i], a += fabs((double)R[i]);
				b.want[i] = act_ref(k->act, s), b.bound[i] = a + 1e-30;
			}
	wino_check(kiln_f32_conv1d_wino, &p, U, &b, k->bias, k->residual, k->act, TOL, what,
	           &worst, &hash);
	free(U);
}

int main(void)
{
	static const int64_t lens[] = {8, 9, 10, 11, 13, 37, 50, 100, 203};
	static const int64_t chans[][2] = {{16, 16}, {17, 24}, {32, 70}, {64, 64}, {130, 33}};
	static const int acts[] = {KILN_ACT_NONE, KILN_ACT_RELU, KILN_ACT_LEAKY_RELU, KILN_ACT_CLIP,
	                           KILN_ACT_TANH};
	int v = 0;
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
		for (size_t j = 0; j < sizeof chans / sizeof chans[0]; j++, v++) {
			int64_t pad = v % 3 ? 1 : v % 2 ? 0 : 2;
			Case k = {.n = 1 + v % 4, .c = chans[j][0], .m = chans[j][1], .w = lens[i],
			          .pl = pad, .pr = pad, .bias = v % 2, .act = acts[v % 5],
			          .residual = v % 4 < 2};
			if (k.w + 2 * pad - 2 < 8)
				k.w += 4;
			run(&k);
		}
	/* uneven pads; batches of several chunks (the last one partial) */
	static const Case more[] = {
		{.n = 2, .c = 24, .m = 16, .w = 30, .pl = 2, .pr = 0, .bias = 1,
		 .act = KILN_ACT_RELU, .residual = 1},
		{.n = 3, .c = 20, .m = 40, .w = 31, .pl = 0, .pr = 1, .bias = 1},
		{.n = 40, .c = 64, .m = 64, .w = 100, .pl = 1, .pr = 1, .bias = 1,
		 .act = KILN_ACT_RELU, .residual = 1},
		{.n = 17, .c = 256, .m = 96, .w = 25, .pl = 1, .pr = 1, .bias = 1},
	};
	for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
		run(&more[i]);
	printf("worst |error| / (sum |w| |x| + |b| + |r|): %.3g\n", worst);
	/* the same under every KILN_ISA (tests/repro/bits.py checks it in CI) */
	printf("outputs' FNV-1a hash: %016llx\n", (unsigned long long)hash);
	/* not this path's: 2-D kernels, 5 taps, stride 2, dilation 2, groups, few
	 * channels, short outputs, pads over 2 */
	kiln_conv2d_params q = {.batch = 1, .in_channels = 32, .in_h = 1, .in_w = 20,
	                        .out_channels = 32, .group = 1, .kernel_h = 1, .kernel_w = 3,
	                        .stride_h = 1, .stride_w = 1, .dilation_h = 1, .dilation_w = 1,
	                        .pad_left = 1, .pad_right = 1, .out_h = 1, .out_w = 20};
	CHECK(kiln_f32_conv1d_wino_takes(&q) && kiln_f32_conv1d_wino_work(&q) > 0, "3 taps taken");
	kiln_conv2d_params r = q;
	r.in_h = 3, r.kernel_h = 3, r.pad_top = r.pad_bottom = 1, r.out_h = 3;
	CHECK(!kiln_f32_conv1d_wino_takes(&r) && kiln_f32_conv1d_wino_work(&r) == 0, "3x3 not taken");
	r = q, r.kernel_w = 5, r.out_w = 18;
	CHECK(!kiln_f32_conv1d_wino_takes(&r), "5 taps not taken");
	r = q, r.stride_w = 2, r.out_w = 10;
	CHECK(!kiln_f32_conv1d_wino_takes(&r), "stride 2 not taken");
	r = q, r.dilation_w = 2, r.out_w = 18;
	CHECK(!kiln_f32_conv1d_wino_takes(&r), "dilation 2 not taken");
	r = q, r.group = 2;
	CHECK(!kiln_f32_conv1d_wino_takes(&r), "groups not taken");
	r = q, r.in_channels = 8;
	CHECK(!kiln_f32_conv1d_wino_takes(&r), "8 input channels not taken");
	r = q, r.out_channels = 15;
	CHECK(!kiln_f32_conv1d_wino_takes(&r), "15 output channels not taken");
	r = q, r.in_w = 6, r.out_w = 6;
	CHECK(!kiln_f32_conv1d_wino_takes(&r), "6 outputs not taken");
	r = q, r.pad_left = r.pad_right = 3, r.out_w = 24;
	CHECK(!kiln_f32_conv1d_wino_takes(&r), "pads of 3 not taken");
	return harness_report();
}
