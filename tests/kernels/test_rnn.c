/*
 * test_rnn.c - kiln_f32_rnn (RNN, GRU and LSTM, one direction) against a
 * double-precision reference that follows ONNX's equations literally: one
 * row and one step at a time, dot products written out, no strides tricks.
 *
 * Cases sweep the three cells, both directions, bias and initial state
 * present or absent, peepholes, input_forget, both GRU variants
 * (linear_before_reset), clip, every activation with its alpha and beta,
 * per-row sequence lengths (0, short and full), chunk sizes that do and do
 * not divide the batch, layout-1 style strides and padded strides, and every
 * subset of the outputs. Memory between the rows of Y, Y_h and Y_c is
 * guarded and must stay untouched; an LSTM with the default activations
 * also runs with W and R packed in gate blocks (kernels.h). X's padding
 * holds NaN so a wrong read shows. A sequence length outside [0, T] must give KILN_SHAPE_ERROR and
 * leave the outputs as they were.
 * Tolerance: |err| <= 2e-5 * (1 + |want|). The state passes through T
 * steps of float GEMMs and float activations, so rounding compounds a little
 * per step; data and weights are small so the dynamics stay contractive.
 */
#include "kiln/kernels.h"
#include "runtime/kernels/f32-gemm/pack.h"

#include "harness.h"

static const double RNN_TOL = 2e-5;

static double act_ref(const kiln_rnn_activation *a, double x)
{
	double al = (double)a->alpha, be = (double)a->beta;
	switch (a->kind) {
	case KILN_RNN_RELU: return x > 0 ? x : 0;
	case KILN_RNN_TANH: return tanh(x);
	case KILN_RNN_SIGMOID: return 1 / (1 + exp(-x));
	case KILN_RNN_AFFINE: return al * x + be;
	case KILN_RNN_LEAKY_RELU: return x >= 0 ? x : al * x;
	case KILN_RNN_THRESHOLDED_RELU: return x >= al ? x : 0;
	case KILN_RNN_SCALED_TANH: return al * tanh(be * x);
	case KILN_RNN_HARD_SIGMOID: return fmax(0, fmin(1, al * x + be));
	case KILN_RNN_ELU: return x >= 0 ? x : al * (exp(x) - 1);
	case KILN_RNN_SOFTSIGN: return x / (1 + fabs(x));
	case KILN_RNN_SOFTPLUS: return log(1 + exp(x));
	}
	return x;
}

static double f_ref(const kiln_rnn_params *p, int k, double x)
{
	if (p->has_clip)
		x = fmin((double)p->clip, fmax(-(double)p->clip, x));
	return act_ref(&p->act[k], x);
}

typedef struct Case {
	int cell, reverse;
	int64_t T, N, I, H;
	int layout1;       /* X and Y with ONNX layout-1 strides (batch first) */
	int pad;           /* extra elements between rows */
	int has_b, has_p, has_h0, has_c0, has_lens;
	int want_y, want_yh, want_yc;
	int clip, lbr, input_forget;
	kiln_rnn_activation act[3];
	int64_t chunk;
} Case;

static int64_t gates_of(int cell)
{
	return cell == KILN_RNN_LSTM ? 4 : cell == KILN_RNN_GRU ? 3 : 1;
}

/* The reference: fills want_y [T][N][H] (0 where not computed), want_h and
 * want_c [N][H]. Inputs are read through p's strides. */
static void reference(const kiln_rnn_params *p, const float *X, const float *W, const float *R,
                      const float *B, const float *P, const int32_t *lens, const float *h0,
                      const float *c0, double *want_y, double *want_h, double *want_c)
{
	int64_t T = p->seq_length, N = p->batch, I = p->input_size, H = p->hidden_size;
	int64_t G = gates_of(p->cell), GH = G * H;
	double *h = xmalloc((size_t)H * sizeof *h), *c = xmalloc((size_t)H * sizeof *c);
	double *hn = xmalloc((size_t)H * sizeof *hn), *g = xmalloc((size_t)GH * sizeof *g);
	double *rh = xmalloc((size_t)GH * sizeof *rh);
	for (int64_t i = 0; i < T * N * H; i++)
		want_y[i] = 0;
	for (int64_t b = 0; b < N; b++) {
		int64_t len = lens ? lens[b] : T;
		for (int64_t j = 0; j < H; j++) {
			h[j] = h0 ? (double)h0[b * p->state_row_stride + j] : 0;
			c[j] = c0 ? (double)c0[b * p->state_row_stride + j] : 0;
		}
		for (int64_t s = 0; s < len; s++) {
			int64_t t = p->reverse ? len - 1 - s : s;
			const float *x = X + t * p->x_step_stride + b * p->x_row_stride;
			/* g = x W^T + Wb, rh = h R^T + Rb, per gate unit */
			for (int64_t u = 0; u < GH; u++) {
				double sx = B ? (double)B[u] : 0, sh = B ? (double)B[GH + u] : 0;
				for (int64_t i = 0; i < I; i++)
					sx += (double)x[i] * (double)W[u * I + i];
				for (int64_t k = 0; k < H; k++)
					sh += h[k] * (double)R[u * H + k];
				g[u] = sx;
				rh[u] = sh;
			}
			for (int64_t j = 0; j < H; j++) {
				if (p->cell == KILN_RNN_SIMPLE) {
					hn[j] = f_ref(p, 0, g[j] + rh[j]);
				} else if (p->cell == KILN_RNN_LSTM) {
					double pi = g[j] + rh[j] + (P ? (double)P[j] * c[j] : 0);
					double pf = g[2 * H + j] + rh[2 * H + j] + (P ? (double)P[2 * H + j] * c[j] : 0);
					double i = f_ref(p, 0, pi);
					double f = p->input_forget ? 1 - i : f_ref(p, 0, pf);
					double cc = f_ref(p, 1, g[3 * H + j] + rh[3 * H + j]);
					double cn = f * c[j] + i * cc;
					double po = g[H + j] + rh[H + j] + (P ? (double)P[H + j] * cn : 0);
					c[j] = cn;  /* only c[j] is read for unit j */
					hn[j] = f_ref(p, 0, po) * f_ref(p, 2, cn);
				} else {
					double z = f_ref(p, 0, g[j] + rh[j]);
					double r = f_ref(p, 0, g[H + j] + rh[H + j]);
					double pre;
					if (p->linear_before_reset) {
						pre = g[2 * H + j] + r * rh[2 * H + j];
					} else {
						/* (r . h) R_h^T + Rbh: needs r of every unit */
						double sum = B ? (double)B[GH + 2 * H + j] : 0;
						for (int64_t k = 0; k < H; k++) {
							double rk = f_ref(p, 0, g[H + k] + rh[H + k]);
							sum += rk * h[k] * (double)R[(2 * H + j) * H + k];
						}
						pre = g[2 * H + j] + sum;
					}
					hn[j] = (1 - z) * f_ref(p, 1, pre) + z * h[j];
				}
			}
			for (int64_t j = 0; j < H; j++) {
				h[j] = hn[j];
				want_y[(t * N + b) * H + j] = h[j];
			}
		}
		for (int64_t j = 0; j < H; j++) {
			want_h[b * H + j] = len ? h[j] : 0;
			want_c[b * H + j] = len ? c[j] : 0;
		}
	}
	free(h), free(c), free(hn), free(g), free(rh);
}

static float *random_floats(int64_t n, float lo, float hi)
{
	float *x = xmalloc((size_t)n * sizeof *x);
	fill_uniform(x, n, lo, hi);
	return x;
}

/* An LSTM's W or R ([4H, K], rows i, o, f, c) with its rows in gate blocks
 * (kernels.h), written out from the definition: with w = min(16, H - 16 b)
 * units in block b, row 64 b + w q + e is gate q of unit 16 b + e. */
static float *in_gate_blocks(const float *M, int64_t H, int64_t K)
{
	float *out = xmalloc((size_t)(4 * H * K + 1) * sizeof *out);
	for (int64_t b = 0; 16 * b < H; b++) {
		int64_t w = H - 16 * b < 16 ? H - 16 * b : 16;
		for (int64_t q = 0; q < 4; q++)
			for (int64_t e = 0; e < w; e++)
				for (int64_t i = 0; i < K; i++)
					out[(64 * b + w * q + e) * K + i] = M[(q * H + 16 * b + e) * K + i];
	}
	return out;
}

static int default_acts(const Case *k)
{
	return k->cell == KILN_RNN_LSTM && k->act[0].kind == KILN_RNN_SIGMOID &&
	       k->act[1].kind == KILN_RNN_TANH && k->act[2].kind == KILN_RNN_TANH;
}

static void run_case(const Case *k, const char *what)
{
	int64_t T = k->T, N = k->N, I = k->I, H = k->H, GH = gates_of(k->cell) * H;
	int lstm = k->cell == KILN_RNN_LSTM;
	kiln_rnn_params p = {
		.cell = k->cell, .reverse = k->reverse, .seq_length = T, .batch = N,
		.input_size = I, .hidden_size = H, .has_clip = k->clip, .clip = 0.9f,
		.linear_before_reset = k->lbr, .input_forget = k->input_forget,
		.has_sequence_lens = k->has_lens, .chunk_rows = k->chunk,
	};
	for (int a = 0; a < 3; a++)
		p.act[a] = k->act[a];
	/* X: layout 0 is [T][N][I+pad], layout 1 [N][T][I+pad]; Y likewise with H. */
	int64_t xrow = I + k->pad, yrow = H + k->pad;
	p.x_step_stride = k->layout1 ? xrow : N * xrow;
	p.x_row_stride = k->layout1 ? T * xrow : xrow;
	p.y_step_stride = k->layout1 ? yrow : N * yrow;
	p.y_row_stride = k->layout1 ? T * yrow : yrow;
	p.state_row_stride = yrow;

	float *X = xmalloc((size_t)(T * N * xrow + 1) * sizeof *X);
	for (int64_t i = 0; i < T * N * xrow; i++)
		X[i] = (i % xrow) < I ? rng_float(-1.0f, 1.0f) : NAN;
	/* R's range shrinks as 1 / sqrt(H) past 48 units, so that H R^T stays
	 * as large as at H = 48 and the dynamics as contractive */
	float r = H > 48 ? 0.5f * sqrtf(48.0f / (float)H) : 0.5f;
	float *W = random_floats(GH * I, -0.5f, 0.5f), *R = random_floats(GH * H, -r, r);
	float *B = k->has_b ? random_floats(2 * GH, -0.5f, 0.5f) : NULL;
	float *P = k->has_p ? random_floats(3 * H, -0.5f, 0.5f) : NULL;
	float *h0 = k->has_h0 ? random_floats(N * yrow, -1.0f, 1.0f) : NULL;
	float *c0 = k->has_c0 ? random_floats(N * yrow, -1.0f, 1.0f) : NULL;
	int32_t *lens = NULL;
	if (k->has_lens) {
		lens = xmalloc((size_t)(N + 1) * sizeof *lens);
		for (int64_t b = 0; b < N; b++)
			lens[b] = (int32_t)(b % 3 == 0 ? T : b % 3 == 1 ? 0 : rng_int(0, T));
	}
	Guarded gy = {0}, gh = {0}, gc = {0};
	size_t ybytes = (size_t)(T * N * yrow) * sizeof(float), sbytes = (size_t)(N * yrow) * sizeof(float);
	float *Y = k->want_y ? guarded_alloc(&gy, ybytes, 4) : NULL;
	float *Yh = k->want_yh ? guarded_alloc(&gh, sbytes, 0) : NULL;
	float *Yc = k->want_yc ? guarded_alloc(&gc, sbytes, 8) : NULL;
	int64_t nwork = kiln_f32_rnn_work_floats(&p);
	Guarded gw;
	float *work = guarded_alloc(&gw, (size_t)nwork * sizeof(float), 0);
	/* Padding of the outputs must keep this value. */
	const float sentinel = 4242.0f;

	/* The weights as ONNX has them, then packed b32 as the compiler stores
	 * them (W^T; R^T, for GRU as z, r and h apart). */
	kiln_rnn_io io = {.X = X, .W = W, .R = R, .B = B, .P = P, .sequence_lens = lens,
	                  .initial_h = h0, .initial_c = c0, .Y = Y, .Y_h = Yh, .Y_c = Yc};
	int64_t GR = k->cell == KILN_RNN_GRU ? 2 * H : GH;
	float *Wp = xmalloc((size_t)(GH * I + 1) * sizeof *Wp);
	float *Rp = xmalloc((size_t)(GR * H + 1) * sizeof *Rp);
	float *Rhp = xmalloc((size_t)(H * H + 1) * sizeof *Rhp);
	kiln_pack_b32(W, 1, I, I, GH, Wp);
	kiln_pack_b32(R, 1, H, H, GR, Rp);
	if (k->cell == KILN_RNN_GRU)
		kiln_pack_b32(R + 2 * H * H, 1, H, H, H, Rhp);
	/* and, for an LSTM with the default activations, packed in gate blocks */
	int forms = default_acts(k) ? 3 : 2;
	float *Wg = NULL, *Rg = NULL;
	if (forms == 3) {
		float *Wrows = in_gate_blocks(W, H, I), *Rrows = in_gate_blocks(R, H, H);
		Wg = xmalloc((size_t)(GH * I + 1) * sizeof *Wg);
		Rg = xmalloc((size_t)(GH * H + 1) * sizeof *Rg);
		kiln_pack_b32(Wrows, 1, I, I, GH, Wg);
		kiln_pack_b32(Rrows, 1, H, H, GH, Rg);
		free(Wrows), free(Rrows);
	}
	enum kiln_status st;
	char msg[300];
	double *want_y = xmalloc((size_t)(T * N * H + 1) * sizeof *want_y);
	double *want_h = xmalloc((size_t)(N * H + 1) * sizeof *want_h);
	double *want_c = xmalloc((size_t)(N * H + 1) * sizeof *want_c);
	reference(&p, X, W, R, B, lstm ? P : NULL, lens, h0, lstm ? c0 : NULL, want_y, want_h, want_c);
	int64_t ny = T * N * H, ns = N * H;
	float *got = xmalloc((size_t)(ny + 1) * sizeof *got);
	double *bound = xmalloc((size_t)(ny + 1) * sizeof *bound);
	for (int packed = 0; packed < forms; packed++) {
		if (packed) {
			io.W = io.R = NULL;
			io.Wp = Wp, io.Rp = Rp, io.Rhp = Rhp;
		}
		if (packed == 2) {
			io.Wp = Wg, io.Rp = Rg;
			p.gate_blocks = 1;
		}
		const char *form = packed == 2 ? "gate blocks" : packed ? "packed" : "ONNX layout";
		for (int64_t i = 0; Y && i < T * N * yrow; i++)
			Y[i] = sentinel;
		for (int64_t i = 0; i < N * yrow; i++) {
			if (Yh)
				Yh[i] = sentinel;
			if (Yc)
				Yc[i] = sentinel;
		}
		st = kiln_f32_rnn(&p, &io, work);
		snprintf(msg, sizeof msg, "%s, %s: status", what, form);
		CHECK(st == KILN_OK, msg);

		/* Compare through the strides; padding must hold the sentinel. */
		if (Y) {
			int pad_ok = 1;
			for (int64_t t = 0; t < T; t++)
				for (int64_t b = 0; b < N; b++) {
					const float *y = Y + t * p.y_step_stride + b * p.y_row_stride;
					for (int64_t j = 0; j < H; j++) {
						got[(t * N + b) * H + j] = y[j];
						bound[(t * N + b) * H + j] = 1 + fabs(want_y[(t * N + b) * H + j]);
					}
					for (int64_t j = H; j < yrow; j++)
						pad_ok &= y[j] == sentinel;
				}
			snprintf(msg, sizeof msg, "%s, %s: Y", what, form);
			CHECK_CLOSE(msg, got, want_y, bound, ny, RNN_TOL);
			snprintf(msg, sizeof msg, "%s, %s: Y padding and guards", what, form);
			CHECK(pad_ok && guarded_intact(&gy), msg);
		}
		for (int which = 0; which < 2; which++) {
			float *S = which ? Yc : Yh;
			if (!S)
				continue;
			const double *want = which ? want_c : want_h;
			int pad_ok = 1;
			for (int64_t b = 0; b < N; b++) {
				for (int64_t j = 0; j < H; j++) {
					got[b * H + j] = S[b * yrow + j];
					bound[b * H + j] = 1 + fabs(want[b * H + j]);
				}
				for (int64_t j = H; j < yrow; j++)
					pad_ok &= S[b * yrow + j] == sentinel;
			}
			snprintf(msg, sizeof msg, "%s, %s: %s", what, form, which ? "Y_c" : "Y_h");
			CHECK_CLOSE(msg, got, want, bound, ns, RNN_TOL);
			snprintf(msg, sizeof msg, "%s, %s: %s padding and guards", what, form,
			         which ? "Y_c" : "Y_h");
			CHECK(pad_ok && guarded_intact(which ? &gc : &gh), msg);
		}
		snprintf(msg, sizeof msg, "%s, %s: work stays in bounds", what, form);
		CHECK(guarded_intact(&gw), msg);
	}

	/* A length out of range: an error, and nothing written. */
	if (lens && N > 0 && (Y || Yh)) {
		int32_t keep = lens[N - 1];
		lens[N - 1] = (int32_t)(T + 1);
		float *probe = Y ? Y : Yh;
		int64_t nprobe = Y ? T * N * yrow : N * yrow;
		for (int64_t i = 0; i < nprobe; i++)
			probe[i] = sentinel;
		st = kiln_f32_rnn(&p, &io, work);
		int untouched = 1;
		for (int64_t i = 0; i < nprobe; i++)
			untouched &= probe[i] == sentinel;
		snprintf(msg, sizeof msg, "%s: length %lld > T is an error, nothing written", what,
		         (long long)(T + 1));
		CHECK(st == KILN_SHAPE_ERROR && untouched, msg);
		lens[N - 1] = keep;
	}

	free(X), free(W), free(R), free(B), free(P), free(h0), free(c0), free(lens);
	free(Wp), free(Rp), free(Rhp), free(Wg), free(Rg);
	free(want_y), free(want_h), free(want_c), free(got), free(bound);
	if (Y)
		guarded_free(&gy);
	if (Yh)
		guarded_free(&gh);
	if (Yc)
		guarded_free(&gc);
	guarded_free(&gw);
}

/* The error of got against the exact want, in ulp of want as a float
 * (normal results only: the callers keep to them). */
static double ulp_of(float got, double want)
{
	int e;
	frexp(want, &e);
	return fabs((double)got - want) / ldexp(1, e - 24);
}

/* The LSTM cell's own sigmoid and tanh (Sigmoid, Tanh, Tanh: lstm_sigmoid
 * and lstm_tanh of f32-vmath/body.h, shorter than kiln_f32_unary's) within
 * the bounds docs/kernels.md states: sigmoid 4 ulp (x >= -60; below,
 * the result is under 1e-26 and x is clamped at -88, so only an absolute
 * 1e-38 is claimed), tanh 2^-21 absolute. One step from c0, W = R = 0, so
 * the gates are the biases and Y_c = sigmoid(b_f) c0 + sigmoid(b_i) tanh(b_c):
 * with c0 = 1 and b_i = -200 (i under 1e-38) Y_c is sigmoid(b_f); with
 * c0 = 0 and b_i = 30 it is i tanh(b_c), i within 4 ulp of 1 (so 2^-21 +
 * 4 2^-24 in all). Batch 1 (H = 150: DeepJet's blocks, the narrow one read
 * inside a whole one on AVX-512; H = 50) and two rows; the weights as ONNX
 * has them and in gate blocks. */
static void lstm_cell_activations(void)
{
	static const int64_t Hs[] = {150, 50};
	double worst_sig = 0, worst_tanh = 0, worst_tiny = 0;
	int ok = 1;
	for (size_t hs = 0; hs < sizeof Hs / sizeof Hs[0]; hs++)
		for (int64_t N = 1; N <= 2; N++)
			for (int form = 0; form < 2; form++)
				for (int which = 0; which < 2; which++)
					for (int round = 0; round < 40; round++) {
		int64_t H = Hs[hs];
		kiln_rnn_params p = {
			.cell = KILN_RNN_LSTM, .seq_length = 1, .batch = N, .input_size = 1,
			.hidden_size = H, .x_step_stride = N, .x_row_stride = 1, .y_step_stride = N * H,
			.y_row_stride = H, .state_row_stride = H, .chunk_rows = N, .gate_blocks = form,
			.act = {{KILN_RNN_SIGMOID, 0, 0}, {KILN_RNN_TANH, 0, 0}, {KILN_RNN_TANH, 0, 0}},
		};
		float X[2] = {0.5f, -0.5f}, *B = xmalloc((size_t)(8 * H) * sizeof *B);
		float *Z = xmalloc((size_t)(4 * H * H + 1) * sizeof *Z);
		float *c0 = xmalloc((size_t)(N * H) * sizeof *c0), *Yc = xmalloc((size_t)(N * H) * sizeof *Yc);
		memset(Z, 0, (size_t)(4 * H * H + 1) * sizeof *Z);
		memset(B, 0, (size_t)(8 * H) * sizeof *B);
		double *xs = xmalloc((size_t)H * sizeof *xs);
		for (int64_t j = 0; j < H; j++) {
			/* sigmoid: [-60, 30] in 40 rounds, a few far below; tanh: [-12, 12] */
			double x = which == 0 ? -60 + 90 * (round * H + j) / (40.0 * H)
			                      : -12 + 24 * (round * H + j) / (40.0 * H);
			if (round == 0 && j < 6)
				x = which == 0 ? -87.0 - 20 * j : (double)(j - 3) * 1e-7;
			xs[j] = (double)(float)x;
			/* B: Wb then Rb, gates i, o, f, c */
			B[0 * H + j] = which == 0 ? -200.0f : 30.0f;
			B[(which == 0 ? 2 : 3) * H + j] = (float)x;
			for (int64_t b = 0; b < N; b++)
				c0[b * H + j] = which == 0 ? 1.0f : 0.0f;
		}
		kiln_rnn_io io = {.X = X, .B = B, .initial_c = c0, .Y_c = Yc};
		if (form)
			io.Wp = Z, io.Rp = Z;
		else
			io.W = Z, io.R = Z;
		float *work = xmalloc((size_t)(kiln_f32_rnn_work_floats(&p) + 1) * sizeof *work);
		ok &= kiln_f32_rnn(&p, &io, work) == KILN_OK;
		for (int64_t b = 0; b < N; b++)
			for (int64_t j = 0; j < H; j++) {
				double x = xs[j], got = (double)Yc[b * H + j];
				if (which == 1) {
					double err = fabs(got - tanh(x));
					if (isnan(err) || err > worst_tanh)
						worst_tanh = isnan(err) ? (double)INFINITY : err;
				} else if (x >= -60) {
					double err = ulp_of(Yc[b * H + j], 1 / (1 + exp(-x)));
					if (isnan(err) || err > worst_sig)
						worst_sig = isnan(err) ? (double)INFINITY : err;
				} else {
					double err = fabs(got - 1 / (1 + exp(-x)));
					if (isnan(err) || err > worst_tiny)
						worst_tiny = isnan(err) ? (double)INFINITY : err;
				}
			}
		free(B), free(Z), free(c0), free(Yc), free(xs), free(work);
	}
	printf("LSTM cell activations: sigmoid %.3g ulp (x >= -60), %.3g below; tanh 2^%.2f\n",
	       worst_sig, worst_tiny, log2(worst_tanh));
	char msg[200];
	snprintf(msg, sizeof msg, "LSTM cell sigmoid within 4 ulp for x >= -60 (worst %.3g ulp)", worst_sig);
	CHECK(ok && worst_sig <= 4, msg);
	snprintf(msg, sizeof msg, "LSTM cell sigmoid within 1e-38 below x = -60 (worst %.3g)", worst_tiny);
	CHECK(worst_tiny <= 1e-38, msg);
	snprintf(msg, sizeof msg, "LSTM cell tanh within 2^-21 (+ the gate's 4 ulp of 1) absolute (worst %.3g = 2^%.2f)",
	         worst_tanh, log2(worst_tanh));
	CHECK(worst_tanh <= 0x1p-21 + 4 * 0x1p-24, msg);
}

static const char *const cell_name[] = {"RNN", "GRU", "LSTM"};

int main(void)
{
	static const int64_t shapes[][4] = {  /* T, N, I, H */
		{1, 1, 1, 1}, {3, 2, 4, 5}, {5, 7, 3, 4}, {4, 9, 17, 6}, {2, 3, 0, 3}, {6, 5, 2, 8},
		/* full 32-column panels of the packed weights and a narrower last one;
		 * K = 37 and 48 rows (the one-row product takes four at a time) */
		{4, 3, 5, 37}, {3, 2, 6, 48},
		/* LSTM gate blocks of 16 + 13 units at batch 1: the last block's 52
		 * columns are a whole panel and a narrower one */
		{3, 1, 5, 29},
		/* batch 1 with 33 and 50 units (2 + 1, 3 + 2 blocks): one product over
		 * every block, then the cells; with 150 (DeepJet's 9 + 6) whole blocks
		 * fused with their product; each the whole recurrence in one call of
		 * vmath's lstm_row (SIMD variants; so are the chunks of one row) */
		{3, 1, 4, 33}, {4, 1, 3, 50}, {4, 1, 3, 150},
		/* batch 1, whole blocks and a last one of 2, 4, 6 or 8 units, which
		 * AVX-512 reads inside a whole block's loop (18, 20, 22, 24: one whole
		 * block; 72: the third of four) */
		{3, 1, 3, 18}, {3, 1, 2, 20}, {2, 1, 3, 22}, {3, 1, 3, 24}, {2, 1, 3, 72},
		/* batch 1, three whole blocks and one of 13 units, whose product and
		 * cell run on their own between the whole blocks' (AVX-512 finishes
		 * each whole block's cell after the next block: across this one) */
		{3, 1, 3, 61},
		/* one product over the whole blocks, then such a last block on its
		 * own in registers (AVX-512): 2 + 4, 6, 8 units (50 above: 3 + 2) */
		{3, 1, 3, 36}, {2, 1, 2, 38}, {3, 1, 3, 40},
		/* the rest of the shapes whose whole recurrence is vmath's
		 * lstm_row_small on AVX-512 (2 or 3 whole blocks and none, 2 or 4
		 * units more) */
		{3, 1, 3, 32}, {2, 1, 3, 34}, {3, 1, 2, 48}, {2, 1, 3, 52},
	};
	/* Every activation appears, with its alpha and beta; the ones that can
	 * grow the state (Relu, Affine, Softplus...) sit where a sigmoid-like
	 * gate keeps it bounded, or in the simple RNN with small weights. */
	static const kiln_rnn_activation act_sets[][3] = {
		{{KILN_RNN_TANH, 0, 0}, {KILN_RNN_TANH, 0, 0}, {KILN_RNN_TANH, 0, 0}},
		{{KILN_RNN_SIGMOID, 0, 0}, {KILN_RNN_TANH, 0, 0}, {KILN_RNN_TANH, 0, 0}},
		{{KILN_RNN_HARD_SIGMOID, 0.3f, 0.4f}, {KILN_RNN_SOFTSIGN, 0, 0}, {KILN_RNN_SCALED_TANH, 0.8f, 1.3f}},
		{{KILN_RNN_SIGMOID, 0, 0}, {KILN_RNN_LEAKY_RELU, 0.1f, 0}, {KILN_RNN_ELU, 0.7f, 0}},
		{{KILN_RNN_SIGMOID, 0, 0}, {KILN_RNN_RELU, 0, 0}, {KILN_RNN_SOFTPLUS, 0, 0}},
		{{KILN_RNN_HARD_SIGMOID, 0.2f, 0.5f}, {KILN_RNN_AFFINE, 0.5f, 0.1f}, {KILN_RNN_THRESHOLDED_RELU, 0.2f, 0}},
	};
	int nsets = (int)(sizeof act_sets / sizeof act_sets[0]);
	for (int cell = 0; cell < 3; cell++)
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
			for (int variant = 0; variant < 8; variant++) {
				Case k = {
					.cell = cell, .T = shapes[s][0], .N = shapes[s][1], .I = shapes[s][2],
					.H = shapes[s][3],
					.reverse = variant & 1, .layout1 = (variant >> 1) & 1, .pad = variant % 3,
					.has_b = variant != 2, .has_p = variant % 2 == 0, .has_h0 = variant % 3 != 1,
					.has_c0 = variant % 4 != 3, .has_lens = variant >= 4,
					.want_y = variant != 5, .want_yh = variant != 6,
					.want_yc = cell == KILN_RNN_LSTM && variant % 2 == 1,
					.clip = variant == 3 || variant == 6, .lbr = variant % 2,
					.input_forget = variant == 7,
				};
				int set = (int)((s + (size_t)variant) % (size_t)nsets);
				for (int a = 0; a < 3; a++)
					k.act[a] = act_sets[set][a];
				/* chunks of all rows, of one row, and of two rows (not a divisor of 7 or 9) */
				k.chunk = variant % 3 == 0 ? k.N : variant % 3 == 1 ? 1 : 2;
				char what[200];
				snprintf(what, sizeof what, "%s T=%lld N=%lld I=%lld H=%lld variant %d acts %d",
				         cell_name[cell], (long long)k.T, (long long)k.N, (long long)k.I,
				         (long long)k.H, variant, set);
				run_case(&k, what);
			}
	/* LSTM steps over several rows in gate blocks (vmath's lstm_rows: each
	 * whole block's product and cells in tiles of rows, AVX-512 up to 5 rows:
	 * 2 to 5 rows in one tile, 6 = 3 + 3, 7, 11, 13 = 4 + 4 + 5, 16 = 4 x 4;
	 * the narrow block, if any, a GEMM and its cells): 1, 2, 3 and 9 whole
	 * blocks, with and without a narrow one; no lengths (rows of different
	 * lengths take the GEMM and lstm_cells); chunks of all rows and of 4. */
	static const int64_t rows_shapes[][4] = {  /* T, N, I, H */
		{3, 2, 3, 16}, {2, 5, 3, 16}, {3, 6, 2, 20}, {2, 7, 3, 50}, {2, 11, 3, 32},
		{2, 13, 2, 33}, {2, 16, 3, 150}, {2, 9, 4, 48},
	};
	for (size_t s = 0; s < sizeof rows_shapes / sizeof rows_shapes[0]; s++)
		for (int variant = 0; variant < 6; variant++) {
			Case k = {
				.cell = KILN_RNN_LSTM, .T = rows_shapes[s][0], .N = rows_shapes[s][1],
				.I = rows_shapes[s][2], .H = rows_shapes[s][3], .reverse = variant & 1,
				.layout1 = variant == 2 || variant == 5, .pad = variant % 3,
				.has_b = variant != 2, .has_p = variant % 2 == 0, .has_h0 = variant != 1,
				.has_c0 = variant != 3, .want_y = variant != 4, .want_yh = 1,
				.want_yc = variant % 2 == 1, .clip = variant == 3, .input_forget = variant == 5,
				.chunk = variant >= 3 ? 4 : rows_shapes[s][1],
			};
			k.act[0] = (kiln_rnn_activation){KILN_RNN_SIGMOID, 0, 0};
			k.act[1] = k.act[2] = (kiln_rnn_activation){KILN_RNN_TANH, 0, 0};
			char what[200];
			snprintf(what, sizeof what, "LSTM rows T=%lld N=%lld I=%lld H=%lld variant %d",
			         (long long)k.T, (long long)k.N, (long long)k.I, (long long)k.H, variant);
			run_case(&k, what);
		}
	/* The simple RNN with each activation alone (rarely-used ones as f). */
	for (int kind = KILN_RNN_RELU; kind <= KILN_RNN_SOFTPLUS; kind++) {
		Case k = {.cell = KILN_RNN_SIMPLE, .T = 4, .N = 3, .I = 3, .H = 4, .has_b = 1,
		          .has_h0 = 1, .want_y = 1, .want_yh = 1, .chunk = 2, .has_lens = 1,
		          .reverse = kind % 2, .clip = kind % 3 == 0};
		k.act[0] = (kiln_rnn_activation){kind, 0.6f, 0.3f};
		char what[120];
		snprintf(what, sizeof what, "RNN activation %d alone", kind);
		run_case(&k, what);
	}
	lstm_cell_activations();
	return harness_report();
}
