/*
 * test_winograd.c - kiln_f32_conv2d_winograd (runtime/kernels/f32-winograd)
 * against a double-precision direct convolution: 3x3, stride 1, on the
 * filters kiln_f32_conv2d_winograd_pack transformed (from a misaligned copy
 * of W); odd and even H and W (partial 2x2
 * tiles), pads 0, 1 and uneven ones, 16 to 70 input and output channels (not
 * only multiples of 8 or 16), 1 to 3 images (tile blocks that span images
 * and tile rows), with and without bias, residual, ReLU, LeakyRelu, Clip and
 * Tanh; X and Y off their alignment and guarded. Tolerance 2e-6 of
 * sum |w| |x| (+ |b| + |r|): Winograd's transforms sum up to 16 products of
 * each input and filter value with coefficients 0, +-1, +-1/2 (measured
 * worst: see the line this test prints, and docs/kernels.md). Every image
 * of a batch must equal, bit for bit, the same image convolved alone
 * (batch 1). The shapes this path does not take (_takes 0, _work 0) are
 * checked too.
 *
 * The same bits under every ISA variant (issue 30): without arguments the
 * binary runs itself once per variant (KILN_ISA set, argument "child") and
 * compares the FNV-1a hashes of every output byte the children print; a
 * variant the CPU lacks falls back (runtime/kernels/isa.h) and gives the
 * ref bits trivially.
 */
#define _POSIX_C_SOURCE 200809L  /* popen */

#include "harness.h"
#include "isa_runs.h"
#include "kiln/kernels.h"
#include "act_ref.h"
#include "wino_check.h"

static const double TOL = 2e-6;
static double worst;
static uint64_t hash = 1469598103934665603u;   /* FNV-1a of every output byte */

typedef struct Case {
	int64_t n, c, m, h, w, pt, pl, pb, pr;
	int bias, act, residual;
} Case;

static void run(const Case *k)
{
	int64_t oh = k->h + k->pt + k->pb - 2, ow = k->w + k->pl + k->pr - 2;
	kiln_conv2d_params p = {
		.batch = k->n, .in_channels = k->c, .in_h = k->h, .in_w = k->w, .out_channels = k->m,
		.group = 1, .kernel_h = 3, .kernel_w = 3, .stride_h = 1, .stride_w = 1,
		.dilation_h = 1, .dilation_w = 1, .pad_top = k->pt, .pad_left = k->pl,
		.pad_bottom = k->pb, .pad_right = k->pr, .out_h = oh, .out_w = ow};
	int64_t nw = k->m * k->c * 9;
	int64_t work = kiln_f32_conv2d_winograd_work(&p);
	char what[200];
	snprintf(what, sizeof what,
	         "N %lld C %lld M %lld %lldx%lld pads %lld %lld %lld %lld bias %d act %d residual %d",
	         (long long)k->n, (long long)k->c, (long long)k->m, (long long)k->h, (long long)k->w,
	         (long long)k->pt, (long long)k->pl, (long long)k->pb, (long long)k->pr, k->bias,
	         k->act, k->residual);
	CHECK(kiln_f32_conv2d_winograd_takes(&p) && work > 0, what);
	if (work <= 0)
		return;
	WinoBufs b;
	wino_alloc(&b, kiln_f32_conv2d_winograd_work, &p, nw);
	const float *X = b.X, *W = b.W, *B = b.B, *R = b.R;
	float *Wp = xmalloc((size_t)kiln_f32_conv2d_winograd_packed_floats(k->c, k->m) * sizeof(float));
	kiln_f32_conv2d_winograd_pack(&p, (const float *)(const void *)(b.Wmis + 1), Wp);
	for (int64_t n = 0; n < k->n; n++)
		for (int64_t o = 0; o < k->m; o++)
			for (int64_t y = 0; y < oh; y++)
				for (int64_t x = 0; x < ow; x++) {
					int64_t i = ((n * k->m + o) * oh + y) * ow + x;
					double s = k->bias ? (double)B[o] : 0.0, a = k->bias ? fabs((double)B[o]) : 0.0;
					for (int64_t c = 0; c < k->c; c++)
						for (int64_t ty = 0; ty < 3; ty++)
							for (int64_t tx = 0; tx < 3; tx++) {
								int64_t iy = y - k->pt + ty, ix = x - k->pl + tx;
								if (iy < 0 || iy >= k->h || ix < 0 || ix >= k->w)
									continue;
								double wv = (double)W[((o * k->c + c) * 3 + ty) * 3 + tx];
								double xv = (double)X[((n * k->c + c) * k->h + iy) * k->w + ix];
								s += wv * xv, a += fabs(wv * xv);
							}
					if (k->residual)
						s += (double)R[i], a += fabs((double)R[i]);
					b.want[i] = act_ref(k->act, s), b.bound[i] = a + 1e-30;
				}
	wino_check(kiln_f32_conv2d_winograd, &p, Wp, &b, k->bias, k->residual, k->act, TOL, what,
	           &worst, &hash);
	free(Wp);
}

static int child(void)
{
	static const int64_t maps[][2] = {{1, 1}, {2, 2}, {3, 5}, {7, 7}, {8, 8}, {14, 13}, {5, 40}};
	static const int64_t chans[][2] = {{16, 16}, {17, 24}, {32, 70}, {64, 64}, {40, 33}};
	static const int acts[] = {KILN_ACT_NONE, KILN_ACT_RELU, KILN_ACT_LEAKY_RELU, KILN_ACT_CLIP,
	                           KILN_ACT_TANH};
	int v = 0;
	for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
		for (size_t j = 0; j < sizeof chans / sizeof chans[0]; j++, v++) {
			int64_t pad = maps[i][0] < 3 || v % 3 ? 1 : 0;
			Case k = {.n = 1 + v % 3, .c = chans[j][0], .m = chans[j][1], .h = maps[i][0],
			          .w = maps[i][1], .pt = pad, .pl = pad, .pb = pad, .pr = pad,
			          .bias = v % 2, .act = acts[v % 5], .residual = v % 4 < 2};
			run(&k);
		}
	/* uneven pads; blocks of tiles ending inside a tile row; both loop orders */
	static const Case more[] = {
		{.n = 2, .c = 24, .m = 16, .h = 9, .w = 11, .pt = 0, .pl = 2, .pb = 1, .pr = 0, .bias = 1,
		 .act = KILN_ACT_RELU, .residual = 1},
		{.n = 3, .c = 512, .m = 40, .h = 9, .w = 9, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .bias = 1,
		 .act = KILN_ACT_RELU, .residual = 1},
		{.n = 5, .c = 16, .m = 136, .h = 28, .w = 28, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .bias = 1},
		/* two blocks of tiles: output-channel blocks outside, then tile blocks */
		{.n = 2, .c = 512, .m = 24, .h = 12, .w = 12, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .bias = 1,
		 .act = KILN_ACT_RELU, .residual = 1},
		{.n = 2, .c = 512, .m = 136, .h = 12, .w = 11, .pt = 1, .pl = 1, .pb = 1, .pr = 1,
		 .residual = 1},
		{.n = 3, .c = 64, .m = 64, .h = 28, .w = 28, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .bias = 1,
		 .act = KILN_ACT_RELU, .residual = 1},
	};
	for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
		run(&more[i]);
	printf("worst |error| / (sum |w| |x| + |b| + |r|): %.3g\n", worst);
	printf("hash %016llx\n", (unsigned long long)hash);
	/* not this path's: 1x1, 5x5, stride 2, dilation 2, groups, too few channels */
	kiln_conv2d_params q = {.batch = 1, .in_channels = 32, .in_h = 8, .in_w = 8,
	                        .out_channels = 32, .group = 1, .kernel_h = 3, .kernel_w = 3,
	                        .stride_h = 1, .stride_w = 1, .dilation_h = 1, .dilation_w = 1,
	                        .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
	                        .out_h = 8, .out_w = 8};
	CHECK(kiln_f32_conv2d_winograd_work(&q) > 0, "3x3 stride 1 taken");
	kiln_conv2d_params r = q;
	r.kernel_h = r.kernel_w = 1, r.pad_top = r.pad_left = r.pad_bottom = r.pad_right = 0;
	CHECK(kiln_f32_conv2d_winograd_work(&r) == 0, "1x1 not taken");
	r = q, r.kernel_h = 5;
	CHECK(kiln_f32_conv2d_winograd_work(&r) == 0, "5x3 not taken");
	r = q, r.stride_w = 2, r.out_w = 4;
	CHECK(kiln_f32_conv2d_winograd_work(&r) == 0, "stride 2 not taken");
	r = q, r.dilation_h = 2, r.out_h = 6;
	CHECK(kiln_f32_conv2d_winograd_work(&r) == 0, "dilation 2 not taken");
	r = q, r.group = 2;
	CHECK(kiln_f32_conv2d_winograd_work(&r) == 0, "groups not taken");
	r = q, r.in_channels = 8;
	CHECK(kiln_f32_conv2d_winograd_work(&r) == 0, "8 input channels not taken");
	CHECK(!kiln_f32_conv2d_winograd_takes(&r), "8 input channels: _takes 0");
	return harness_report();
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();
	return isa_runs_same(argv[0]);
}
