/*
 * test_pointwise.c - kiln_f32_conv2d_small (runtime/kernels/f32-pointwise)
 * against a double reference: 1x1 convolutions of 1 to 32 output pixels
 * (one and two vectors, full and masked; 1, 2, 4 and 8 pixels also as dot
 * products over the input channels), 1 to 70 output channels (groups
 * of eight and the channels left over), with and without bias, ReLU or no
 * activation, 1 to 3 images, X and Y off their alignment and guarded, so a
 * masked load or store that strays past a row or a buffer fails; and the
 * convolutions this path does not take (a residual, another activation, 33
 * pixels, a 3x1 kernel, a stride, padding, groups), which must give the same
 * results through kiln_f32_conv2d_ep. Tolerance 1e-6 of sum |w| |x| (+ |b|),
 * the float sum of at most 64 terms.
 */
#include "harness.h"
#include "kiln/kernels.h"

static const double TOL = 1e-6;

typedef struct Case {
	int64_t n, c, m, h, w, kh, stride, pad, group;
	int bias, act;    /* act: a kiln_act */
	int residual;
} Case;

static void run(const Case *k)
{
	int64_t cg = k->c / k->group, mg = k->m / k->group;
	int64_t oh = (k->h + 2 * k->pad - k->kh) / k->stride + 1;
	int64_t ow = (k->w + 2 * k->pad - 1) / k->stride + 1;
	kiln_conv2d_params p = {
		.batch = k->n, .in_channels = k->c, .in_h = k->h, .in_w = k->w, .out_channels = k->m,
		.group = k->group, .kernel_h = k->kh, .kernel_w = 1, .stride_h = k->stride,
		.stride_w = k->stride, .dilation_h = 1, .dilation_w = 1, .pad_top = k->pad,
		.pad_left = k->pad, .pad_bottom = k->pad, .pad_right = k->pad, .out_h = oh, .out_w = ow};
	int64_t nx = k->n * k->c * k->h * k->w, ny = k->n * k->m * oh * ow, nw = k->m * cg * k->kh;
	Guarded gx, gy;
	float *X = guarded_alloc(&gx, (size_t)nx * sizeof(float), 4);
	float *Y = guarded_alloc(&gy, (size_t)ny * sizeof(float), 8);
	float *W = xmalloc((size_t)nw * sizeof(float)), *B = xmalloc((size_t)k->m * sizeof(float));
	float *R = xmalloc((size_t)ny * sizeof(float));
	fill_uniform(X, nx, -1.0f, 1.0f);
	fill_uniform(W, nw, -1.0f, 1.0f);
	fill_uniform(B, k->m, -1.0f, 1.0f);
	fill_uniform(R, ny, -1.0f, 1.0f);
	double *want = xmalloc((size_t)ny * sizeof(double)), *bound = xmalloc((size_t)ny * sizeof(double));
	for (int64_t n = 0; n < k->n; n++)
		for (int64_t o = 0; o < k->m; o++)
			for (int64_t y = 0; y < oh; y++)
				for (int64_t x = 0; x < ow; x++) {
					int64_t g = o / mg, i = ((n * k->m + o) * oh + y) * ow + x;
					double s = k->bias ? (double)B[o] : 0.0, b = k->bias ? fabs((double)B[o]) : 0.0;
					for (int64_t c = 0; c < cg; c++)
						for (int64_t t = 0; t < k->kh; t++) {
							int64_t iy = y * k->stride - k->pad + t, ix = x * k->stride - k->pad;
							if (iy < 0 || iy >= k->h || ix < 0 || ix >= k->w)
								continue;
							double wv = (double)W[(o * cg + c) * k->kh + t];
							double xv = (double)X[((n * k->c + g * cg + c) * k->h + iy) * k->w + ix];
							s += wv * xv, b += fabs(wv * xv);
						}
					if (k->residual)
						s += (double)R[i], b += fabs((double)R[i]);
					if (k->act == KILN_ACT_RELU)
						s = s > 0.0 ? s : 0.0;
					else if (k->act == KILN_ACT_TANH)
						s = tanh(s);
					want[i] = s, bound[i] = b + 1e-30;
				}
	kiln_epilogue ep = {NULL, k->act, 0.0f, 0.0f, k->residual ? R : NULL};
	int with_ep = k->act != KILN_ACT_NONE || k->residual;
	kiln_f32_conv2d_small(&p, X, W, k->bias ? B : NULL, Y, with_ep ? &ep : NULL);
	char what[200];
	snprintf(what, sizeof what,
	         "N %lld C %lld M %lld %lldx%lld kernel %lldx1 stride %lld pad %lld group %lld bias %d "
	         "act %d residual %d",
	         (long long)k->n, (long long)k->c, (long long)k->m, (long long)k->h, (long long)k->w,
	         (long long)k->kh, (long long)k->stride, (long long)k->pad, (long long)k->group,
	         k->bias, k->act, k->residual);
	CHECK_CLOSE(what, Y, want, bound, ny, k->act == KILN_ACT_TANH ? 1e-5 : TOL);
	CHECK(guarded_intact(&gx) && guarded_intact(&gy), what);
	guarded_free(&gx), guarded_free(&gy);
	free(W), free(B), free(R), free(want), free(bound);
}

int main(void)
{
	static const int64_t pixels[][2] = {{1, 1}, {1, 2}, {1, 4}, {1, 8}, {2, 4}, {1, 15},
	                                    {1, 16}, {1, 17}, {1, 25}, {1, 31}, {1, 32}, {5, 5},
	                                    {4, 8}};
	/* with 1, 2, 4 or 8 pixels, 64 -> 32, 40 -> 5, 17 -> 33 and 64 -> 9 take
	 * the dot products (whole groups and a last part group of channels, a
	 * last part vector of c) */
	static const int64_t chans[][2] = {{1, 1}, {16, 64}, {64, 32}, {32, 8}, {6, 7}, {3, 70},
	                                   {12, 9}, {40, 5}, {17, 33}, {64, 9}};
	int acts[] = {KILN_ACT_NONE, KILN_ACT_RELU};
	for (size_t i = 0; i < sizeof pixels / sizeof pixels[0]; i++)
		for (size_t j = 0; j < sizeof chans / sizeof chans[0]; j++)
			for (int a = 0; a < 2; a++)
				for (int bias = 0; bias < 2; bias++) {
					Case k = {.n = 1 + (int64_t)(i + j) % 3, .c = chans[j][0], .m = chans[j][1],
					          .h = pixels[i][0], .w = pixels[i][1], .kh = 1, .stride = 1,
					          .group = 1, .bias = bias, .act = acts[a]};
					run(&k);
				}
	/* not this path's: the same convolution through kiln_f32_conv2d_ep */
	static const Case other[] = {
		{.n = 2, .c = 16, .m = 24, .h = 1, .w = 25, .kh = 1, .stride = 1, .group = 1, .bias = 1,
		 .act = KILN_ACT_RELU, .residual = 1},
		{.n = 1, .c = 16, .m = 24, .h = 1, .w = 25, .kh = 1, .stride = 1, .group = 1, .bias = 1,
		 .act = KILN_ACT_TANH},
		{.n = 1, .c = 8, .m = 16, .h = 1, .w = 33, .kh = 1, .stride = 1, .group = 1, .bias = 1,
		 .act = KILN_ACT_RELU},
		{.n = 1, .c = 8, .m = 16, .h = 5, .w = 5, .kh = 3, .stride = 1, .group = 1, .bias = 1},
		{.n = 1, .c = 8, .m = 16, .h = 1, .w = 25, .kh = 1, .stride = 2, .group = 1, .bias = 1},
		{.n = 1, .c = 8, .m = 16, .h = 1, .w = 25, .kh = 1, .stride = 1, .pad = 1, .group = 1},
		{.n = 1, .c = 8, .m = 16, .h = 1, .w = 25, .kh = 1, .stride = 1, .group = 2, .bias = 1},
	};
	for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
		run(&other[i]);
	return harness_report();
}
