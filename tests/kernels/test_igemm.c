/*
 * test_igemm.c - the integer kernels (kiln_i8_gemm, kiln_q8_gemm,
 * kiln_i8_conv, kiln_q8_conv) against exact references written here.
 *
 * Integer results must match exactly: the reference sums in int64 and wraps
 * to 32 bits the way ONNX allows. Every combination of int8/uint8 operands is
 * run with no zero point, one zero point, and one per row / column / output
 * channel, with padded row strides and guard bytes around every output. The
 * requantized outputs are checked against the float32 formula of the spec
 * (round half to even, saturate), plus hand-picked ties and saturations.
 */
#include <stdbool.h>

#include "kiln/kernels.h"

#include "harness.h"

/* Random bytes of the given signedness, as the kernels store them. */
static void fill_q8(unsigned char *p, int64_t n, int is_signed)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = (unsigned char)(is_signed ? (uint8_t)(int8_t)rng_int(-128, 127)
		                                 : (uint8_t)rng_int(0, 255));
}

static int32_t val(const unsigned char *p, int is_signed, int64_t i)
{
	return is_signed ? (int32_t)(int8_t)p[i] : (int32_t)p[i];
}

static int32_t wrap(int64_t s)
{
	uint32_t u = (uint32_t)(uint64_t)s;
	return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 2147483648u) - INT32_MAX - 1;
}

/* The spec's requantization, in float32. */
static int32_t requant(int32_t sum, float mult, int32_t zy, int is_signed)
{
	float v = rintf((float)sum * mult) + (float)zy;
	float lo = is_signed ? -128.0f : 0.0f, hi = is_signed ? 127.0f : 255.0f;
	return (int32_t)(v < lo ? lo : v > hi ? hi : v);
}

/* zmode: 0 none, 1 one value, 2 one per row (A) / column (B) */
static void gemm_case(int64_t M, int64_t N, int64_t K, int as, int bs, int zmode_a, int zmode_b,
                      int quant, int ys)
{
	int64_t lda = K + 3, ldb = N + 2, ldc = N + 1;
	unsigned char *A = xmalloc((size_t)(M * lda)), *B = xmalloc((size_t)(K * ldb));
	unsigned char *za = xmalloc((size_t)(M + 1)), *zb = xmalloc((size_t)(N + 1)), zy;
	float *sa = xmalloc((size_t)(M + 1) * sizeof(float)), *sb = xmalloc((size_t)(N + 1) * sizeof(float));
	fill_q8(A, M * lda, as);
	fill_q8(B, K * ldb, bs);
	fill_q8(za, M + 1, as);
	fill_q8(zb, N + 1, bs);
	fill_q8(&zy, 1, ys);
	for (int64_t i = 0; i <= M; i++)
		sa[i] = rng_float(0.001f, 0.05f);
	for (int64_t i = 0; i <= N; i++)
		sb[i] = rng_float(0.001f, 0.05f);
	float sy = rng_float(0.05f, 2.0f);
	kiln_q8_operand qa = {A, as, zmode_a ? za : NULL, zmode_a == 2, sa, zmode_a == 2, 0};
	kiln_q8_operand qb = {B, bs, zmode_b ? zb : NULL, zmode_b == 2, sb, zmode_b == 2, 0};
	size_t cbytes = (size_t)(M > 0 ? (M - 1) * ldc + N : 0) * (quant ? 1 : 4);
	Guarded g;
	/* int32 output stays 4-byte aligned; bytes may sit anywhere */
	unsigned char *C = guarded_alloc(&g, cbytes, quant ? 1 : 4);
	memset(C, 0x5a, cbytes);
	kiln_q8_output qy = {C, ys, &zy, &sy, 0, 0, NULL, NULL, 0, 0};
	Guarded gw;
	void *work = guarded_alloc(&gw, (size_t)kiln_i8_work_bytes(M, K, 0), 1);
	if (quant)
		kiln_q8_gemm(M, N, K, &qa, lda, &qb, ldb, &qy, ldc, work);
	else
		kiln_i8_gemm(M, N, K, &qa, lda, &qb, ldb, (int32_t *)(void *)C, ldc, work);
	int64_t bad = 0;
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			int32_t zam = zmode_a ? val(za, as, zmode_a == 2 ? m : 0) : 0;
			int32_t zbn = zmode_b ? val(zb, bs, zmode_b == 2 ? n : 0) : 0;
			int64_t s = 0;
			for (int64_t k = 0; k < K; k++)
				s += (int64_t)(val(A, as, m * lda + k) - zam) * (val(B, bs, k * ldb + n) - zbn);
			int32_t want = wrap(s), got;
			if (quant) {
				float mult = sa[zmode_a == 2 ? m : 0] * sb[zmode_b == 2 ? n : 0] / sy;
				want = requant(want, mult, val(&zy, ys, 0), ys);
				got = val(C, ys, m * ldc + n);
			} else {
				memcpy(&got, C + 4 * (m * ldc + n), 4);
			}
			bad += got != want;
		}
	/* the gaps between C's rows are untouched */
	for (int64_t m = 0; m + 1 < M; m++)
		for (int64_t n = N; n < ldc; n++)
			for (int b = 0; b < (quant ? 1 : 4); b++)
				bad += C[(m * ldc + n) * (quant ? 1 : 4) + b] != 0x5a;
	char what[200];
	snprintf(what, sizeof what, "%s M=%lld N=%lld K=%lld a%s b%s za=%d zb=%d y%s",
	         quant ? "q8_gemm" : "i8_gemm", (long long)M, (long long)N, (long long)K,
	         as ? "s8" : "u8", bs ? "s8" : "u8", zmode_a, zmode_b, ys ? "s8" : "u8");
	CHECK(bad == 0 && guarded_intact(&g) && guarded_intact(&gw), what);
	guarded_free(&g);
	guarded_free(&gw);
	free(A), free(B), free(za), free(zb), free(sa), free(sb);
}

/* 32-bit wrap-around: 40000 products of 255 * 255 exceed INT32_MAX. */
static void gemm_overflow(void)
{
	enum { K = 40000 };
	static unsigned char A[K], B[K];
	memset(A, 255, K);
	memset(B, 255, K);
	kiln_q8_operand qa = {A, 0, NULL, 0, NULL, 0, 0}, qb = {B, 0, NULL, 0, NULL, 0, 0};
	int32_t c = 0;
	static unsigned char work[4 * K];
	kiln_i8_gemm(1, 1, K, &qa, K, &qb, 1, &c, 1, work);
	CHECK(c == wrap((int64_t)K * 255 * 255), "i8_gemm wraps in 32 bits");
}

/* Ties round to even, and the output saturates. */
static void requant_ties(void)
{
	/* A [1, 1] times B [1, 6] with scales 0.5 * 1 / 1: sum * 0.5 */
	uint8_t A[1] = {1};
	int8_t B[6] = {3, 5, -3, -5, 127, -128};
	float s_half = 0.5f, s_one = 1.0f;
	kiln_q8_operand qa = {A, 0, NULL, 0, &s_half, 0, 0}, qb = {B, 1, NULL, 0, &s_one, 0, 0};
	int8_t y8[6];
	int8_t zy = 0;
	kiln_q8_output qy = {y8, 1, &zy, &s_one, 0, 0, NULL, NULL, 0, 0};
	kiln_q8_gemm(1, 6, 1, &qa, 1, &qb, 6, &qy, 6, NULL);
	int8_t want[6] = {2, 2, -2, -2, 64, -64};
	CHECK(memcmp(y8, want, 6) == 0, "q8_gemm rounds half to even (int8 out)");
	uint8_t u8[6], zu = 100;
	float s_big = 4.0f;
	kiln_q8_operand qa2 = {A, 0, NULL, 0, &s_big, 0, 0};
	kiln_q8_output qu = {u8, 0, &zu, &s_one, 0, 0, NULL, NULL, 0, 0};
	kiln_q8_gemm(1, 6, 1, &qa2, 1, &qb, 6, &qu, 6, NULL);
	uint8_t wantu[6] = {112, 120, 88, 80, 255, 0};
	CHECK(memcmp(u8, wantu, 6) == 0, "q8_gemm saturates (uint8 out)");
}

/* ---- convolution ---- */

/* big: channels and sizes that take several panels, K blocks and tiles of
 * the blocked kernels (i8-gemm/core.h) */
static void conv_case(int ns, int64_t group, int xs, int ws, int zw_per_channel, int quant,
                      int ys, int with_bias, int big)
{
	kiln_window3d_params p = {.batch = rng_int(1, 2), .group = group};
	p.channels = group * (big ? rng_int(60, 80) : rng_int(1, 3));
	p.out_channels = group * (big ? rng_int(9, 20) : rng_int(1, 3));
	for (int a = 0; a < 3; a++) {
		bool used = a >= 3 - ns;
		p.in[a] = used ? (big ? rng_int(5, 40) : rng_int(1, 7)) : 1;
		p.kernel[a] = used ? rng_int(1, 3) : 1;
		p.stride[a] = used ? rng_int(1, 2) : 1;
		p.dilation[a] = used ? rng_int(1, 2) : 1;
		p.pad_begin[a] = used ? rng_int(0, 2) : 0;
		p.pad_end[a] = used ? rng_int(0, 2) : 0;
		int64_t span = (p.kernel[a] - 1) * p.dilation[a] + 1;
		int64_t room = p.in[a] + p.pad_begin[a] + p.pad_end[a] - span;
		if (room < 0) {
			p.pad_end[a] += -room;
			room = 0;
		}
		p.out[a] = room / p.stride[a] + 1;
	}
	int64_t cg = p.channels / group, mg = p.out_channels / group, M = p.out_channels;
	int64_t ivol = p.in[0] * p.in[1] * p.in[2], kvol = p.kernel[0] * p.kernel[1] * p.kernel[2];
	int64_t ovol = p.out[0] * p.out[1] * p.out[2];
	int64_t nx = p.batch * p.channels * ivol, nw = M * cg * kvol, ny = p.batch * M * ovol;
	unsigned char *X = xmalloc((size_t)nx), *W = xmalloc((size_t)nw), zx, *zw = xmalloc((size_t)M);
	unsigned char zy;
	fill_q8(X, nx, xs);
	fill_q8(W, nw, ws);
	fill_q8(&zx, 1, xs);
	fill_q8(zw, M, ws);
	fill_q8(&zy, 1, ys);
	int32_t *bias = xmalloc((size_t)M * sizeof *bias);
	float *swv = xmalloc((size_t)M * sizeof *swv);
	for (int64_t m = 0; m < M; m++) {
		bias[m] = (int32_t)rng_int(-5000, 5000);
		swv[m] = rng_float(0.001f, 0.02f);
	}
	float sx = rng_float(0.001f, 0.05f), sy = rng_float(0.01f, 1.0f);
	kiln_q8_operand qx = {X, xs, &zx, 0, &sx, 0, 0};
	kiln_q8_operand qw = {W, ws, zw, zw_per_channel, swv, zw_per_channel, 0};
	Guarded g;
	unsigned char *Y = guarded_alloc(&g, (size_t)ny * (quant ? 1 : 4), quant ? 3 : 4);
	kiln_q8_output qy = {Y, ys, &zy, &sy, 0, 0, NULL, NULL, 0, 0};
	Guarded gw;
	void *work = guarded_alloc(&gw, (size_t)kiln_i8_work_bytes(M, cg * kvol, 0), 1);
	if (quant)
		kiln_q8_conv(&p, &qx, &qw, with_bias ? bias : NULL, &qy, work);
	else
		kiln_i8_conv(&p, &qx, &qw, (int32_t *)(void *)Y, work);
	int64_t bad = 0;
	for (int64_t n = 0; n < p.batch; n++)
		for (int64_t m = 0; m < M; m++)
			for (int64_t o = 0; o < ovol; o++) {
				int64_t oc[3] = {o / (p.out[1] * p.out[2]), o / p.out[2] % p.out[1], o % p.out[2]};
				int32_t zwm = val(zw, ws, zw_per_channel ? m : 0), zxv = val(&zx, xs, 0);
				int64_t s = 0;
				for (int64_t c = 0; c < cg; c++)
					for (int64_t t = 0; t < kvol; t++) {
						int64_t tc[3] = {t / (p.kernel[1] * p.kernel[2]),
						                 t / p.kernel[2] % p.kernel[1], t % p.kernel[2]};
						int64_t at = 0;
						bool inside = true;
						for (int a = 0; a < 3; a++) {
							int64_t i = oc[a] * p.stride[a] - p.pad_begin[a] + tc[a] * p.dilation[a];
							inside = inside && i >= 0 && i < p.in[a];
							at = at * p.in[a] + i;
						}
						if (!inside)
							continue;
						int64_t xi = (n * p.channels + (m / mg) * cg + c) * ivol + at;
						s += (int64_t)(val(X, xs, xi) - zxv) *
						     (val(W, ws, (m * cg + c) * kvol + t) - zwm);
					}
				int64_t yi = (n * M + m) * ovol + o;
				int32_t got, want;
				if (quant) {
					if (with_bias)
						s += bias[m];
					float mult = sx * swv[zw_per_channel ? m : 0] / sy;
					want = requant(wrap(s), mult, val(&zy, ys, 0), ys);
					got = val(Y, ys, yi);
				} else {
					want = wrap(s);
					memcpy(&got, Y + 4 * yi, 4);
				}
				bad += got != want;
			}
	char what[200];
	snprintf(what, sizeof what, "%s %dD group=%lld x%s w%s zw_per_channel=%d y%s bias=%d",
	         quant ? "q8_conv" : "i8_conv", ns, (long long)group, xs ? "s8" : "u8",
	         ws ? "s8" : "u8", zw_per_channel, ys ? "s8" : "u8", with_bias);
	CHECK(bad == 0 && guarded_intact(&g) && guarded_intact(&gw), what);
	guarded_free(&g);
	guarded_free(&gw);
	free(X), free(W), free(zw), free(bias), free(swv);
}

/* ---- exact mode (QDQ chains): blocked against the reference loops ---- */

/* Element i of 8- or 16-bit data. */
static int32_t elem(const void *p, int is_signed, int wide, int64_t i)
{
	if (!wide)
		return val(p, is_signed, i);
	return is_signed ? (int32_t)((const int16_t *)p)[i] : (int32_t)((const uint16_t *)p)[i];
}

/* n random elements of 8- or 16-bit data; a zero point (n = 1) at an
 * extreme of the range with ext (1: low, 2: high). */
static void *fill_q(int64_t n, int is_signed, int wide, int ext)
{
	void *p = xmalloc((size_t)n * (wide ? 2 : 1));
	int64_t lo = is_signed ? (wide ? -32768 : -128) : 0;
	int64_t hi = is_signed ? (wide ? 32767 : 127) : (wide ? 65535 : 255);
	for (int64_t i = 0; i < n; i++) {
		int64_t v = ext == 1 ? lo : ext == 2 ? hi : rng_int(lo, hi);
		if (wide)
			((uint16_t *)p)[i] = (uint16_t)(is_signed ? (uint16_t)(int16_t)v : (uint16_t)v);
		else
			((uint8_t *)p)[i] = (uint8_t)(is_signed ? (uint8_t)(int8_t)v : (uint8_t)v);
	}
	return p;
}

/* Y's bytes with `work` (the blocked kernels under KILN_ISA=avx2/avx512)
 * equal those of the reference loops (work NULL), bit for bit, for the
 * exact requantization in double: output types int8 to uint16, Relu,
 * bias per tensor / per channel, per-channel scales and zero points,
 * 8- and 16-bit operands (xw, ww), zero points at the extremes,
 * saturation, a NaN scale. conv: a 1-D convolution (kernel 3, pad 1 when
 * 3 divides K; stride 2 for odd M) with M output channels and K =
 * channels * kernel, batch 2;
 * else an M x N x K GEMM. */
static void exact_case(int conv, int64_t M, int64_t N, int64_t K, int xs, int ws, int xw, int ww,
                       int ydt, int relu, int bias_mode, int ext)
{
	int y_signed = ydt & 1, y_wide = ydt >> 1, ysz = y_wide ? 2 : 1;
	kiln_window3d_params p = {.batch = 2, .group = 1};
	int64_t nx, nw, ny, nchan, kt = 1, st = 1, on = N;  /* conv: kernel, stride, outputs */
	if (conv) {
		kt = K % 3 == 0 ? 3 : 1;
		st = M % 2 + 1;
		on = (N + 2 * (kt / 2) - kt) / st + 1;
		p.channels = K / kt;
		p.out_channels = M;
		for (int a = 0; a < 3; a++) {
			p.in[a] = p.kernel[a] = p.stride[a] = p.dilation[a] = p.out[a] = 1;
			p.pad_begin[a] = p.pad_end[a] = 0;
		}
		p.in[2] = N;
		p.out[2] = on;
		p.stride[2] = st;
		p.kernel[2] = kt;
		p.pad_begin[2] = p.pad_end[2] = kt / 2;
		nx = p.batch * p.channels * N, nw = M * K, ny = p.batch * M * on, nchan = M;
	} else {
		nx = M * K, nw = K * N, ny = M * N, nchan = N;
	}
	void *X = fill_q(nx, xs, xw, 0), *W = fill_q(nw, ws, ww, 0), *zx = fill_q(1, xs, xw, ext);
	void *zw = xmalloc((size_t)nchan * 2);
	for (int64_t i = 0; i < nchan; i++) {
		void *z = fill_q(1, ws, ww, i % 3 == 0 ? ext : 0);
		memcpy((char *)zw + i * (ww ? 2 : 1), z, ww ? 2 : 1);
		free(z);
	}
	float *sw = xmalloc((size_t)nchan * sizeof *sw), *bs = xmalloc((size_t)nchan * sizeof *bs);
	int32_t *bias = xmalloc((size_t)nchan * sizeof *bias);
	float sx = rng_float(0.002f, 0.03f);
	for (int64_t i = 0; i < nchan; i++) {
		sw[i] = rng_float(0.002f, 0.03f);
		bs[i] = sx * sw[i];
		bias[i] = (int32_t)rng_int(-20000, 20000);
	}
	if (ext == 2 && nchan > 2)
		sw[1] = NAN;  /* a NaN scale saturates to the low end */
	kiln_q8_operand qx = {X, xs, zx, 0, &sx, 0, xw};
	kiln_q8_operand qw = {W, ws, zw, 1, sw, 1, ww};
	/* y's scale and zero point from the range of the values (the exact
	 * sums, in int64 here), so most outputs land inside Y's range */
	double vlo = 0.0, vhi = 0.0;
	int32_t zxv = elem(zx, xs, xw, 0);
	for (int64_t i = 0; i < ny; i++) {
		int64_t ch = conv ? i / on % M : i % N, sum = 0;
		int32_t zwv = elem(zw, ws, ww, ch);
		if (conv) {
			int64_t n = i / (on * M), o = i % on;
			for (int64_t c = 0; c < p.channels; c++)
				for (int64_t t = 0; t < kt; t++) {
					int64_t at = o * st + t - kt / 2;
					if (at >= 0 && at < N)
						sum += (int64_t)(elem(X, xs, xw, (n * p.channels + c) * N + at) - zxv) *
						       (elem(W, ws, ww, (ch * p.channels + c) * kt + t) - zwv);
				}
		} else {
			for (int64_t k = 0; k < K; k++)
				sum += (int64_t)(elem(X, xs, xw, i / N * K + k) - zxv) *
				       (elem(W, ws, ww, k * N + ch) - zwv);
		}
		double v = (double)sum * ((double)sx * (double)sw[ch]) +
		           (bias_mode ? bias[ch] * (double)bs[ch] : 0.0);
		vlo = v < vlo ? v : vlo;
		vhi = v > vhi ? v : vhi;
	}
	double qlo = y_signed ? (y_wide ? -32768.0 : -128.0) : 0.0;
	double qhi = y_signed ? (y_wide ? 32767.0 : 127.0) : (y_wide ? 65535.0 : 255.0);
	/* 0.8: the extremes saturate */
	float sy = (float)((vhi - vlo) / (qhi - qlo) * 0.8 + 1e-6);
	double zyd = rint((qlo + qhi) / 2 - (vlo + vhi) / 2 / (double)sy);
	zyd = zyd < qlo ? qlo : zyd > qhi ? qhi : zyd;
	uint16_t zy16 = 0;
	unsigned char zy8 = 0;
	if (y_wide)
		zy16 = (uint16_t)(y_signed ? (uint16_t)(int16_t)zyd : (uint16_t)zyd);
	else
		zy8 = (unsigned char)(y_signed ? (uint8_t)(int8_t)zyd : (uint8_t)zyd);
	unsigned char *Y[2];
	Guarded gy[2], gw;
	void *work = guarded_alloc(&gw, (size_t)kiln_i8_work_bytes(M, K, xw || ww), 3);
	for (int r = 0; r < 2; r++) {
		Y[r] = guarded_alloc(&gy[r], (size_t)ny * (size_t)ysz, (size_t)ysz);
		memset(Y[r], 0x5a, (size_t)ny * (size_t)ysz);
		kiln_q8_output qy = {Y[r], y_signed, y_wide ? (void *)&zy16 : (void *)&zy8, &sy, y_wide,
		                     1, bias_mode ? bias : NULL, bs, bias_mode == 2, relu};
		void *wk = r ? work : NULL;
		if (conv)
			kiln_q8_conv(&p, &qx, &qw, NULL, &qy, wk);
		else
			kiln_q8_gemm(M, N, K, &qx, K, &qw, N, &qy, N, wk);
	}
	/* enough outputs strictly inside the range for the test to mean something */
	int64_t inside = 0;
	for (int64_t i = 0; i < ny; i++) {
		int32_t v = elem(Y[0], y_signed, y_wide, i);
		inside += v > qlo && v < qhi;
	}
	char what[200];
	snprintf(what, sizeof what, "exact %s M=%lld N=%lld K=%lld x%s%d w%s%d y%s%d relu=%d "
	         "bias=%d ext=%d (%lld of %lld inside)", conv ? "conv" : "gemm", (long long)M,
	         (long long)N, (long long)K, xs ? "s" : "u", xw ? 16 : 8, ws ? "s" : "u",
	         ww ? 16 : 8, y_signed ? "s" : "u", y_wide ? 16 : 8, relu, bias_mode, ext,
	         (long long)inside, (long long)ny);
	CHECK(memcmp(Y[0], Y[1], (size_t)ny * (size_t)ysz) == 0 && (ny < 16 || inside * 4 > ny) &&
	      guarded_intact(&gy[0]) && guarded_intact(&gy[1]) && guarded_intact(&gw), what);
	for (int r = 0; r < 2; r++)
		guarded_free(&gy[r]);
	guarded_free(&gw);
	free(X), free(W), free(zx), free(zw), free(sw), free(bs), free(bias);
}

int main(void)
{
	const int64_t sizes[][3] = {{1, 1, 1}, {0, 3, 2}, {3, 0, 2}, {2, 3, 0}, {4, 2, 3},
	                            {5, 300, 7}, {3, 17, 260}, {9, 70, 1100}, {17, 33, 511}};
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
		for (int combo = 0; combo < 4; combo++)
			for (int za = 0; za < 3; za++)
				for (int zb = 0; zb < 3; zb++)
					for (int quant = 0; quant < 2; quant++)
						gemm_case(sizes[s][0], sizes[s][1], sizes[s][2], combo & 1, combo >> 1,
						          za, zb, quant, (za + zb) & 1);
	for (int r = 0; r < 20; r++)
		gemm_case(rng_int(1, 9), rng_int(1, 40), rng_int(1, 40), (int)rng_int(0, 1),
		          (int)rng_int(0, 1), (int)rng_int(0, 2), (int)rng_int(0, 2), r & 1,
		          (int)rng_int(0, 1));
	gemm_overflow();
	requant_ties();
	for (int ns = 1; ns <= 3; ns++)
		for (int combo = 0; combo < 4; combo++)
			for (int rep = 0; rep < 4; rep++) {
				int64_t group = rep == 3 ? 2 : 1;
				conv_case(ns, group, combo & 1, combo >> 1, rep & 1, 0, 0, 0, 0);
				conv_case(ns, group, combo & 1, combo >> 1, rep & 1, 1, rep >> 1 & 1, rep & 1, 0);
				if (ns < 3 && rep < 2)
					conv_case(ns, 1, combo & 1, combo >> 1, rep, rep, combo & 1, 1, 1);
			}
	const int64_t exact_sizes[][3] = {{1, 1, 1}, {7, 33, 5}, {9, 70, 1101}, {17, 31, 513},
	                                  {64, 40, 288}, {3, 65, 2}};
	/* v: conv, x and w signedness, x and w 16-bit (both: every other size) */
	for (size_t s = 0; s < sizeof exact_sizes / sizeof exact_sizes[0]; s++)
		for (int v = 0; v < 32; v++) {
			const int64_t *z = exact_sizes[s];
			int xw = v >> 3 & 1, ww = v >> 4 & 1;
			if (xw && ww && (s & 1))
				continue;
			exact_case(v & 1, z[0], z[1], z[2], v >> 1 & 1, v >> 2 & 1, xw, ww, (int)(s + v) % 4,
			           (int)(s + v) % 3 == 0, (int)(s + 2 * v) % 3, (int)(s + v) % 3);
		}
	return harness_report();
}
