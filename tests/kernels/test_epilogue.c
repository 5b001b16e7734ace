/*
 * test_epilogue.c - kiln_f32_gemm_ep, kiln_f32_conv2d_ep and kiln_f32_act
 * (the fused epilogues of the optimizer's fuse pass) against a
 * double-precision reference: the product or convolution computed in
 * double, then the bias and each activation in double.
 *
 * Shapes: M not a multiple of the kernel's 16-row blocks, transposed B (the
 * tied-embedding case), with and without bias, every activation, and a NULL
 * epilogue; B not transposed also runs kiln_f32_gemm_pb on B packed b32,
 * at batch 1 too (the one-row product). Inputs span negative and positive values so both sides of each
 * activation are taken. Tolerance: |err| <= 1e-5 * (sum of |terms| + |bias|),
 * the GEMM test's bound, which the activations (all 1-Lipschitz or scaled by
 * their parameter, here <= 1.06) keep up to that factor.
 */
#include "kiln/kernels.h"
#include "runtime/kernels/f32-gemm/pack.h"

#include "harness.h"

static double act_ref(int act, double a, double b, double x)
{
	switch (act) {
	case KILN_ACT_RELU: return x > 0 ? x : 0;
	case KILN_ACT_SIGMOID: return 1 / (1 + exp(-x));
	case KILN_ACT_TANH: return tanh(x);
	case KILN_ACT_SELU: return x > 0 ? b * x : b * a * (exp(x) - 1);
	case KILN_ACT_ELU: return x >= 0 ? x : a * (exp(x) - 1);
	case KILN_ACT_LEAKY_RELU: return x >= 0 ? x : a * x;
	case KILN_ACT_HARD_SIGMOID: return fmax(0, fmin(1, a * x + b));
	case KILN_ACT_CLIP: return x < a ? a : x > b ? b : x;
	case KILN_ACT_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
	default: return x;
	}
}

static const float params[][2] = {
	[KILN_ACT_NONE] = {0, 0}, [KILN_ACT_RELU] = {0, 0}, [KILN_ACT_SIGMOID] = {0, 0},
	[KILN_ACT_TANH] = {0, 0}, [KILN_ACT_SELU] = {1.6732632f, 1.0507010f},
	[KILN_ACT_ELU] = {0.7f, 0}, [KILN_ACT_LEAKY_RELU] = {0.01f, 0},
	[KILN_ACT_HARD_SIGMOID] = {0.2f, 0.5f}, [KILN_ACT_CLIP] = {-0.5f, 0.75f},
	[KILN_ACT_GELU] = {0, 0},
};

static void check_gemm(int64_t M, int64_t N, int64_t K, int trans_b, int with_bias, int act,
                       const float *A, const float *B, const float *bias, const float *C,
                       const char *what);

static void test_gemm(int64_t M, int64_t N, int64_t K, int trans_b, int with_bias, int act)
{
	float *A = malloc(sizeof(float) * (size_t)(M * K + 1));
	float *B = malloc(sizeof(float) * (size_t)(K * N + 1));
	float *C = malloc(sizeof(float) * (size_t)(M * N + 1));
	float *bias = malloc(sizeof(float) * (size_t)(N + 1));
	fill_uniform(A, M * K, -1, 1);
	fill_uniform(B, K * N, -1, 1);
	fill_uniform(bias, N, -1, 1);
	kiln_epilogue ep = {with_bias ? bias : NULL, act, params[act][0], params[act][1], NULL};
	/* B is [K, N] row-major, or [N, K] read transposed. */
	kiln_f32_gemm_ep(M, N, K, 1.0f, A, K, 1, B, trans_b ? 1 : N, trans_b ? K : 1, 0.0f, C, N,
	                 act || with_bias ? &ep : NULL);
	check_gemm(M, N, K, trans_b, with_bias, act, A, B, bias, C, "kiln_f32_gemm_ep");
	if (!trans_b) {  /* and on B packed as the compiler packs a weight */
		float *Bp = malloc(sizeof(float) * (size_t)(K * N + 1));
		kiln_pack_b32(B, N, 1, K, N, Bp);
		kiln_f32_gemm_pb(M, N, K, 1.0f, A, K, Bp, 0.0f, C, N, act || with_bias ? &ep : NULL);
		check_gemm(M, N, K, trans_b, with_bias, act, A, B, bias, C, "kiln_f32_gemm_pb");
		free(Bp);
	}
	free(A), free(B), free(C), free(bias);
}

/* C[M, N] of test_gemm against the reference in double. */
static void check_gemm(int64_t M, int64_t N, int64_t K, int trans_b, int with_bias, int act,
                       const float *A, const float *B, const float *bias, const float *C,
                       const char *what)
{
	int ok = 1;
	for (int64_t m = 0; m < M && ok; m++)
		for (int64_t n = 0; n < N && ok; n++) {
			double sum = 0, mag = 0;
			for (int64_t k = 0; k < K; k++) {
				double b = (double)(trans_b ? B[n * K + k] : B[k * N + n]);
				sum += (double)A[m * K + k] * b;
				mag += fabs((double)A[m * K + k] * b);
			}
			if (with_bias) {
				sum += (double)bias[n];
				mag += fabs((double)bias[n]);
			}
			double want = act_ref(act, (double)params[act][0], (double)params[act][1], sum);
			ok = close_enough(C[m * N + n], want, mag + 1e-30, 2e-5);
			if (!ok)
				fprintf(stderr, "%s M=%lld N=%lld K=%lld transB=%d bias=%d act=%d: "
				        "[%lld,%lld] got %g want %g\n", what, (long long)M, (long long)N,
				        (long long)K, trans_b, with_bias, act, (long long)m, (long long)n,
				        (double)C[m * N + n], want);
		}
	CHECK(ok, what);
}

/* B as float16 bit patterns: the reference widens them exactly too. Sizes
 * cross the kernels' 32-column panels and 256-row K blocks, B in both
 * layouts, batch 1 too. */
static void test_gemm_f16b(int64_t M, int64_t N, int64_t K, int trans_b, int act)
{
	float *A = malloc(sizeof(float) * (size_t)(M * K + 1));
	uint16_t *B = malloc(sizeof(uint16_t) * (size_t)(K * N + 1));
	float *C = malloc(sizeof(float) * (size_t)(M * N + 1));
	float *bias = malloc(sizeof(float) * (size_t)(N + 1));
	fill_uniform(A, M * K, -1, 1);
	fill_uniform(bias, N, -1, 1);
	for (int64_t i = 0; i < K * N; i++)
		B[i] = kiln_f32_to_f16(rng_float(-1, 1));
	kiln_epilogue ep = {bias, act, params[act][0], params[act][1], NULL};
	kiln_f32_gemm_f16b(M, N, K, 1.0f, A, K, 1, B, trans_b ? 1 : N, trans_b ? K : 1, 0.0f, C, N,
	                   &ep);
	int ok = 1;
	for (int64_t m = 0; m < M && ok; m++)
		for (int64_t n = 0; n < N && ok; n++) {
			double sum = (double)bias[n], mag = fabs((double)bias[n]);
			for (int64_t k = 0; k < K; k++) {
				double b = (double)kiln_f16_to_f32(trans_b ? B[n * K + k] : B[k * N + n]);
				sum += (double)A[m * K + k] * b;
				mag += fabs((double)A[m * K + k] * b);
			}
			double want = act_ref(act, (double)params[act][0], (double)params[act][1], sum);
			ok = close_enough(C[m * N + n], want, mag + 1e-30, 2e-5);
		}
	CHECK(ok, "kiln_f32_gemm_f16b");

	/* the same product with B widened to float32 first, through the float32
	 * kernel of the same variant: the same values, so close to rounding */
	float *Bf = malloc(sizeof(float) * (size_t)(K * N + 1));
	float *Cf = malloc(sizeof(float) * (size_t)(M * N + 1));
	for (int64_t i = 0; i < K * N; i++)
		Bf[i] = kiln_f16_to_f32(B[i]);
	kiln_f32_gemm_ep(M, N, K, 1.0f, A, K, 1, Bf, trans_b ? 1 : N, trans_b ? K : 1, 0.0f, Cf, N,
	                 &ep);
	ok = 1;
	for (int64_t m = 0; m < M && ok; m++)
		for (int64_t n = 0; n < N && ok; n++) {
			double mag = fabs((double)bias[n]);
			for (int64_t k = 0; k < K; k++)
				mag += fabs((double)A[m * K + k] * (double)Bf[trans_b ? n * K + k : k * N + n]);
			ok = close_enough(C[m * N + n], (double)Cf[m * N + n], mag + 1e-30, 2e-5);
		}
	CHECK(ok, "kiln_f32_gemm_f16b against kiln_f32_gemm_ep on B widened");
	free(Bf), free(Cf);
	free(A), free(B), free(C), free(bias);
}

/* Conv [2,3,7,6] * [4,3,3,3] (pad 1), with the residual (a tensor shaped
 * like Y, added before the activation) or without, and with the weights as
 * float32, as float16 (f16 = 1: kiln_f32_conv2d_f16w, the reference then
 * reads the widened float16 values) or packed (f16 = 2:
 * kiln_f32_conv2d_packed). */
static void test_conv(int act, int with_residual, int f16)
{
	kiln_conv2d_params p = {.batch = 2, .in_channels = 3, .in_h = 7, .in_w = 6,
	                        .out_channels = 4, .group = 1, .kernel_h = 3, .kernel_w = 3,
	                        .stride_h = 1, .stride_w = 1, .dilation_h = 1, .dilation_w = 1,
	                        .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
	                        .out_h = 7, .out_w = 6};
	float X[2 * 3 * 7 * 6], W[4 * 3 * 3 * 3], bias[4], Y[2 * 4 * 7 * 6], R[2 * 4 * 7 * 6];
	uint16_t W16[4 * 3 * 3 * 3];
	fill_uniform(X, 2 * 3 * 7 * 6, -1, 1);
	fill_uniform(W, 4 * 3 * 3 * 3, -1, 1);
	fill_uniform(bias, 4, -1, 1);
	fill_uniform(R, 2 * 4 * 7 * 6, -2, 2);
	for (int i = 0; i < 4 * 3 * 3 * 3; i++) {
		W16[i] = kiln_f32_to_f16(W[i]);
		if (f16 == 1)
			W[i] = kiln_f16_to_f32(W16[i]); /* what the kernel sees */
	}
	kiln_epilogue ep = {NULL, act, params[act][0], params[act][1], with_residual ? R : NULL};
	if (f16 == 2) {
		float Wp[4 * 3 * 3 * 3];
		int64_t nwork = kiln_f32_conv2d_packed_work(&p);
		float *work = malloc(sizeof(float) * (size_t)(nwork > 0 ? nwork : 1));
		kiln_f32_conv2d_pack(&p, W, Wp);
		kiln_f32_conv2d_packed(&p, X, Wp, bias, Y, &ep, work);
		free(work);
	} else if (f16) {
		kiln_f32_conv2d_f16w(&p, X, W16, bias, Y, &ep);
	} else {
		kiln_f32_conv2d_ep(&p, X, W, bias, Y, &ep);
	}
	int ok = 1;
	for (int n = 0; n < 2 && ok; n++)
		for (int m = 0; m < 4 && ok; m++)
			for (int y = 0; y < 7 && ok; y++)
				for (int x = 0; x < 6 && ok; x++) {
					int at = ((n * 4 + m) * 7 + y) * 6 + x;
					double sum = (double)bias[m], mag = fabs((double)bias[m]);
					if (with_residual) {
						sum += (double)R[at];
						mag += fabs((double)R[at]);
					}
					for (int c = 0; c < 3; c++)
						for (int i = 0; i < 3; i++)
							for (int j = 0; j < 3; j++) {
								int yy = y - 1 + i, xx = x - 1 + j;
								if (yy < 0 || yy >= 7 || xx < 0 || xx >= 6)
									continue;
								double t = (double)X[((n * 3 + c) * 7 + yy) * 6 + xx] *
								           (double)W[((m * 3 + c) * 3 + i) * 3 + j];
								sum += t;
								mag += fabs(t);
							}
					double want = act_ref(act, (double)params[act][0], (double)params[act][1], sum);
					ok = close_enough(Y[at], want, mag, 2e-5);
				}
	CHECK(ok, f16 == 2 ? "kiln_f32_conv2d_packed" : f16 ? "kiln_f32_conv2d_f16w"
	                                                     : "kiln_f32_conv2d_ep");
}

/* kiln_f32_conv2d_f16w on the shapes that take its other paths: groups
 * (panel blocks per group), a 1x1 convolution (the GEMM path), 1-D, and
 * weights per output channel beyond the panel (widened per tap), each
 * against a double reference over the widened weights, with a residual. */
static void test_conv_f16_shape(int64_t N, int64_t C, int64_t H, int64_t Wd, int64_t M,
                                int64_t group, int64_t kH, int64_t kW, int64_t stride, int64_t pad)
{
	int64_t OH = (H + 2 * (kH > 1 ? pad : 0) - kH) / (kH > 1 ? stride : 1) + 1;
	int64_t OW = (Wd + 2 * pad - kW) / stride + 1;
	int64_t ph = kH > 1 ? pad : 0, sh = kH > 1 ? stride : 1;
	kiln_conv2d_params p = {.batch = N, .in_channels = C, .in_h = H, .in_w = Wd,
	                        .out_channels = M, .group = group, .kernel_h = kH, .kernel_w = kW,
	                        .stride_h = sh, .stride_w = stride, .dilation_h = 1, .dilation_w = 1,
	                        .pad_top = ph, .pad_left = pad, .pad_bottom = ph, .pad_right = pad,
	                        .out_h = OH, .out_w = OW};
	int64_t cg = C / group, mg = M / group, nw = M * cg * kH * kW, ny = N * M * OH * OW;
	float *X = malloc(sizeof(float) * (size_t)(N * C * H * Wd));
	uint16_t *W = malloc(sizeof(uint16_t) * (size_t)nw);
	float *bias = malloc(sizeof(float) * (size_t)M), *Y = malloc(sizeof(float) * (size_t)ny);
	float *R = malloc(sizeof(float) * (size_t)ny);
	fill_uniform(X, N * C * H * Wd, -1, 1);
	fill_uniform(bias, M, -1, 1);
	fill_uniform(R, ny, -1, 1);
	for (int64_t i = 0; i < nw; i++)
		W[i] = kiln_f32_to_f16(rng_float(-1, 1));
	kiln_epilogue ep = {NULL, KILN_ACT_RELU, 0, 0, R};
	kiln_f32_conv2d_f16w(&p, X, W, bias, Y, &ep);
	int ok = 1;
	for (int64_t n = 0; n < N && ok; n++)
		for (int64_t m = 0; m < M && ok; m++)
			for (int64_t y = 0; y < OH && ok; y++)
				for (int64_t x = 0; x < OW && ok; x++) {
					int64_t at = ((n * M + m) * OH + y) * OW + x, g = m / mg;
					double sum = (double)bias[m] + (double)R[at];
					double mag = fabs((double)bias[m]) + fabs((double)R[at]);
					for (int64_t c = 0; c < cg; c++)
						for (int64_t i = 0; i < kH; i++)
							for (int64_t j = 0; j < kW; j++) {
								int64_t yy = y * sh - ph + i, xx = x * stride - pad + j;
								if (yy < 0 || yy >= H || xx < 0 || xx >= Wd)
									continue;
								double t = (double)X[((n * C + g * cg + c) * H + yy) * Wd + xx] *
								           (double)kiln_f16_to_f32(W[((m * cg + c) * kH + i) * kW + j]);
								sum += t;
								mag += fabs(t);
							}
					ok = close_enough(Y[at], sum > 0 ? sum : 0, mag, 2e-5);
				}
	CHECK(ok, "kiln_f32_conv2d_f16w (groups, 1x1, 1-D, per tap)");
	free(X), free(W), free(bias), free(Y), free(R);
}

/* kiln_f32_conv2d_packed with the residual and the activation on the
 * shapes that take its other tiles and stores (direct.h): row tiles (32
 * output channels, runs of 7 pixels of one row: 7x7 and 14x14 maps, a row
 * of 10 = 7 + 3, rows of 30 whose pairs of runs straddle two rows, a 7x7
 * stride-2 stem, stride 2, dilation 2, odd channel counts) and wide tiles
 * whose rows end inside a vector, against a double reference. */
static void test_conv_packed_shape(int act, int64_t N, int64_t C, int64_t H, int64_t Wd, int64_t M,
                                   int64_t k, int64_t stride, int64_t pad, int64_t dil)
{
	int64_t OH = (H + 2 * pad - dil * (k - 1) - 1) / stride + 1;
	int64_t OW = (Wd + 2 * pad - dil * (k - 1) - 1) / stride + 1;
	kiln_conv2d_params p = {.batch = N, .in_channels = C, .in_h = H, .in_w = Wd,
	                        .out_channels = M, .group = 1, .kernel_h = k, .kernel_w = k,
	                        .stride_h = stride, .stride_w = stride, .dilation_h = dil,
	                        .dilation_w = dil, .pad_top = pad, .pad_left = pad,
	                        .pad_bottom = pad, .pad_right = pad, .out_h = OH, .out_w = OW};
	int64_t nw = M * C * k * k, ny = N * M * OH * OW;
	float *X = malloc(sizeof(float) * (size_t)(N * C * H * Wd));
	float *W = malloc(sizeof(float) * (size_t)nw), *Wp = malloc(sizeof(float) * (size_t)nw);
	float *bias = malloc(sizeof(float) * (size_t)M), *Y = malloc(sizeof(float) * (size_t)ny);
	float *R = malloc(sizeof(float) * (size_t)ny);
	int64_t nwork = kiln_f32_conv2d_packed_work(&p);
	float *work = malloc(sizeof(float) * (size_t)(nwork > 0 ? nwork : 1));
	fill_uniform(X, N * C * H * Wd, -1, 1);
	fill_uniform(W, nw, -1, 1);
	fill_uniform(bias, M, -1, 1);
	fill_uniform(R, ny, -2, 2);
	for (int64_t i = 0; i < ny; i++)
		Y[i] = NAN; /* every output must be written */
	kiln_epilogue ep = {NULL, act, params[act][0], params[act][1], R};
	kiln_f32_conv2d_pack(&p, W, Wp);
	kiln_f32_conv2d_packed(&p, X, Wp, bias, Y, &ep, work);
	int ok = nwork > 0;
	for (int64_t n = 0; n < N && ok; n++)
		for (int64_t m = 0; m < M && ok; m++)
			for (int64_t y = 0; y < OH && ok; y++)
				for (int64_t x = 0; x < OW && ok; x++) {
					int64_t at = ((n * M + m) * OH + y) * OW + x;
					double sum = (double)bias[m] + (double)R[at];
					double mag = fabs((double)bias[m]) + fabs((double)R[at]);
					for (int64_t c = 0; c < C; c++)
						for (int64_t i = 0; i < k; i++)
							for (int64_t j = 0; j < k; j++) {
								int64_t yy = y * stride - pad + i * dil;
								int64_t xx = x * stride - pad + j * dil;
								if (yy < 0 || yy >= H || xx < 0 || xx >= Wd)
									continue;
								double t = (double)X[((n * C + c) * H + yy) * Wd + xx] *
								           (double)W[((m * C + c) * k + i) * k + j];
								sum += t;
								mag += fabs(t);
							}
					double want = act_ref(act, (double)params[act][0], (double)params[act][1], sum);
					ok = close_enough(Y[at], want, mag, 2e-5);
				}
	char what[160];
	snprintf(what, sizeof what, "kiln_f32_conv2d_packed act %d, %lldx%lld map, M %lld, K %lld", act,
	         (long long)OH, (long long)OW, (long long)M, (long long)(C * k * k));
	CHECK(ok, what);
	free(X), free(W), free(Wp), free(bias), free(Y), free(R), free(work);
}

int main(void)
{
	for (int act = KILN_ACT_NONE; act <= KILN_ACT_GELU; act++) {
		test_gemm(1, 1, 1, 0, 1, act);
		test_gemm(37, 19, 23, 0, 1, act);
		test_gemm(17, 40, 9, 1, 0, act);
		test_gemm(33, 5, 64, 1, 1, act);
		/* full 12 x 32 tiles: bias and ReLU in the AVX-512 kernel's own
		 * stores, after two K blocks; A's rows 4 KiB apart (copied) */
		test_gemm(26, 70, 300, 0, 1, act);
		test_gemm(24, 64, 1024, 0, 0, act);
		/* AVX-512's 6 x 64 tiles (two panels side by side, 64 rows or
		 * more) with their own bias and ReLU: rows 6 and 5 a tile, K blocks
		 * with k left over, an odd last panel, B cut into blocks of columns
		 * (the exp-based activations only once each row is whole), and A
		 * into blocks of rows (the last one 8 rows: two tiles of 4) */
		test_gemm(71, 128, 262, 0, 1, act);
		test_gemm(64, 96, 9, 0, 1, act);
		test_gemm(65, 600, 256, 0, 1, act);
		test_gemm(520, 64, 256, 0, 1, act);
		/* batch 1 on packed B: the one-row product, whole and narrow panels */
		test_gemm(1, 100, 265, 0, 1, act);
		test_gemm(1, 70, 37, 0, 0, act);
		test_gemm(16, 700, 96, 1, 1, act);  /* few rows, long transposed B: C^T */
		test_gemm(5, 300, 33, 1, 0, act);
		test_conv(act, 0, 0);
		test_conv(act, 1, 0);
		test_conv(act, 1, 1);
		test_conv(act, 0, 2);
		test_conv(act, 1, 2);
		test_gemm_f16b(3, 300, 130, 0, act);
		test_gemm_f16b(17, 37, 70, 1, act);
		test_gemm_f16b(1, 70, 513, 1, act);  /* batch 1, K blocks, transposed */
		test_gemm_f16b(1, 10, 64, 1, act);   /* batch 1: f32-gemv's float16 rows, */
		test_gemm_f16b(1, 5, 13, 1, act);    /* K short of one vector, */
		test_gemm_f16b(1, 9, 48, 1, act);    /* K = 32 + 16, */
		test_gemm_f16b(1, 150, 37, 0, act);  /* natural layout: 64-column blocks, */
		test_gemm_f16b(1, 104, 64, 0, act);  /* a last one of 40, */
		test_gemm_f16b(1, 20, 1, 0, act);    /* one row of K */
		test_gemm_f16b(26, 33, 300, 0, act);
		test_conv_packed_shape(act, 2, 40, 7, 7, 64, 3, 1, 1, 1);   /* rows: 7x7 */
		test_conv_packed_shape(act, 1, 29, 28, 27, 32, 3, 2, 1, 1); /* rows: 14x14, stride 2 */
		test_conv_packed_shape(act, 1, 31, 12, 14, 96, 3, 1, 2, 2); /* rows: 10 = 7 + 3, dilation */
		test_conv_packed_shape(act, 2, 9, 11, 20, 24, 3, 1, 1, 1);  /* wide: rows end in a vector */
		test_conv_packed_shape(act, 1, 30, 6, 30, 64, 3, 1, 1, 1);  /* rows: 30 = 4 x 7 + 2 */
		test_conv_packed_shape(act, 1, 3, 29, 30, 64, 7, 2, 3, 1);  /* rows: a 7x7 stem, K 147 */
	}
	test_conv_f16_shape(2, 6, 5, 7, 4, 2, 3, 3, 2, 1);   /* groups, stride 2 */
	test_conv_f16_shape(1, 64, 4, 4, 600, 1, 1, 1, 1, 0); /* 1x1 GEMM, three panels */
	test_conv_f16_shape(2, 5, 1, 19, 6, 1, 1, 5, 1, 2);   /* 1-D */
	test_conv_f16_shape(1, 2000, 3, 3, 2, 1, 3, 3, 1, 1); /* 18000 weights per channel: per tap */
	/* The activation alone, and NaN through Clip (it must stay NaN). */
	float v[3] = {NAN, -2.0f, 2.0f};
	kiln_epilogue clip = {NULL, KILN_ACT_CLIP, -1.0f, 1.0f, NULL};
	kiln_f32_act(v, 3, &clip);
	CHECK(isnan(v[0]) && v[1] == -1.0f && v[2] == 1.0f, "kiln_f32_act Clip keeps NaN");
	return harness_report();
}
