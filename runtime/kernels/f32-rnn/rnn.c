/*
 * f32-rnn/rnn.c - one direction of ONNX RNN, GRU or LSTM in float32: the whole
 * sequence, every batch row, with the optional bias, peepholes, initial
 * state and per-row sequence lengths.
 *
 * Rows are independent, so they are processed in chunks of p->chunk_rows
 * (the compiler sizes the chunk so that its work buffer, planned arena
 * scratch, stays within a budget). For one chunk:
 *   xw    = X W^T + Wb + Rb     every time step at once: one GEMM on the
 *                               packed W^T (a GEMM per step only when the
 *                               chunk's rows are not evenly spaced in X)
 * then for each step
 *   gates = H_{t-1} R^T         one GEMM over the chunk's rows, R^T packed
 * and one pass over each row's gates: + xw of the row's time step, the
 * peepholes, the clip, the activations (vectorized, kiln_f32_act, where the
 * activation is one of the kernels'), the cell update. GRU's candidate gate
 * needs r first: without linear_before_reset it is (r . H_{t-1}) R_h^T, a
 * second GEMM once z and r are known; with it, H_{t-1} R_h^T (+ Rb_h) goes
 * to its own buffer and is scaled by r element by element (and Rb_h is then
 * not part of xw).
 *
 * Sequence lengths: row b runs for len(b) steps (forward: t = 0 .. len-1;
 * reverse: t = len-1 .. 0). Rows past their length keep their state; Y is 0
 * at t >= len(b); Y_h and Y_c hold the state after the row's last step, or 0
 * when len(b) == 0 (as ONNX Runtime does). Each row reads xw at its own time
 * step, so reverse with lengths needs no gathering.
 */
#include <math.h>
#include <string.h>

#include "../f32-gemm/gemm.h"
#include "../f32-gemv/gemv.h"
#include "../f32-vmath/vmath.h"
#include "../isa.h"
#include "kiln/kernels.h"

static int64_t gate_count(int cell)
{
	return cell == KILN_RNN_LSTM ? 4 : cell == KILN_RNN_GRU ? 3 : 1;
}

static int64_t chunk_of(const kiln_rnn_params *p)
{
	return p->chunk_rows > 0 ? p->chunk_rows : 1;
}

/* An LSTM with ONNX's default activations: its cell is vmath's lstm_cell. */
static int default_lstm(const kiln_rnn_params *p)
{
	return p->cell == KILN_RNN_LSTM && p->act[0].kind == KILN_RNN_SIGMOID &&
	       p->act[1].kind == KILN_RNN_TANH && p->act[2].kind == KILN_RNN_TANH;
}

/* Units per gate block (kernels.h), the columns of a whole block. */
enum { BLOCK_UNITS = 16, BLOCK_COLS = 4 * BLOCK_UNITS };

/* Units in the gate block of unit u0 (a multiple of BLOCK_UNITS): 16, or
 * what is left of H for the last block. */
static int64_t block_units(int64_t H, int64_t u0)
{
	return H - u0 < BLOCK_UNITS ? H - u0 : BLOCK_UNITS;
}

/* dst[0..4H) = the gates src (i, o, f, c of H units each; the first nq of
 * them, the rest 0) in gate blocks. */
static void to_blocks(int64_t H, const float *src, int64_t nq, float *dst)
{
	for (int64_t u0 = 0; u0 < H; u0 += BLOCK_UNITS) {
		int64_t w = block_units(H, u0);
		for (int64_t q = 0; q < 4; q++)
			for (int64_t e = 0; e < w; e++)
				dst[4 * u0 + w * q + e] = q < nq ? src[q * H + u0 + e] : 0.0f;
	}
}

KILN_API int64_t kiln_f32_rnn_work_floats(const kiln_rnn_params *p)
{
	int64_t H = p->hidden_size, GH = gate_count(p->cell) * H;
	int64_t per_row = p->seq_length * GH + GH + H;   /* xw, gates, h */
	int64_t fixed = GH + H;                          /* the bias and one row of h(c) */
	if (p->cell == KILN_RNN_LSTM)
		per_row += H, fixed += GH;                   /* c; the peepholes in gate blocks */
	if (p->cell == KILN_RNN_GRU)
		per_row += H;                                /* r . h, or h R_h^T */
	return fixed + chunk_of(p) * per_row;
}

/* A non-default activation, one value: kiln's own exp and tanh (kernels.h),
 * never the machine's libm (docs/reproducibility.md; Softplus's log1p still
 * is libm's). */
static float activate(const kiln_rnn_activation *a, float x)
{
	switch (a->kind) {
	case KILN_RNN_RELU: return x > 0.0f ? x : 0.0f;
	case KILN_RNN_TANH: return kiln_tanhf(x);
	case KILN_RNN_SIGMOID: return 1.0f / (1.0f + kiln_expf(-x));
	case KILN_RNN_AFFINE: return a->alpha * x + a->beta;
	case KILN_RNN_LEAKY_RELU: return x >= 0.0f ? x : a->alpha * x;
	case KILN_RNN_THRESHOLDED_RELU: return x >= a->alpha ? x : 0.0f;
	case KILN_RNN_SCALED_TANH: return a->alpha * kiln_tanhf(a->beta * x);
	case KILN_RNN_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, a->alpha * x + a->beta));
	case KILN_RNN_ELU: return x >= 0.0f ? x : a->alpha * (kiln_expf(x) - 1.0f);
	case KILN_RNN_SOFTSIGN: return x / (1.0f + fabsf(x));
	case KILN_RNN_SOFTPLUS: /* log(1 + e^x) without overflow for large x */
		return x > 0.0f ? x + kiln_log1pf(kiln_expf(-x)) : kiln_log1pf(kiln_expf(x));
	}
	return x;
}

/* x[0..n) = a(x) in place: the vector kernels (kiln_f32_act, one loop per
 * activation, the variant kiln_isa() picks) for the activations they have,
 * else one scalar loop for this activation. */
static void activate_row(const kiln_rnn_activation *a, float *x, int64_t n)
{
	kiln_epilogue ep = {.alpha = a->alpha, .beta = a->beta};
	switch (a->kind) {
	case KILN_RNN_RELU: ep.act = KILN_ACT_RELU; break;
	case KILN_RNN_TANH: ep.act = KILN_ACT_TANH; break;
	case KILN_RNN_SIGMOID: ep.act = KILN_ACT_SIGMOID; break;
	case KILN_RNN_LEAKY_RELU: ep.act = KILN_ACT_LEAKY_RELU; break;
	case KILN_RNN_HARD_SIGMOID: ep.act = KILN_ACT_HARD_SIGMOID; break;
	case KILN_RNN_ELU: ep.act = KILN_ACT_ELU; break;
	case KILN_RNN_AFFINE:
		for (int64_t j = 0; j < n; j++)
			x[j] = a->alpha * x[j] + a->beta;
		return;
	case KILN_RNN_SCALED_TANH:
		for (int64_t j = 0; j < n; j++)
			x[j] *= a->beta;
		ep.act = KILN_ACT_TANH;
		kiln_f32_act(x, n, &ep);
		for (int64_t j = 0; j < n; j++)
			x[j] *= a->alpha;
		return;
	default:
		for (int64_t j = 0; j < n; j++)
			x[j] = activate(a, x[j]);
		return;
	}
	kiln_f32_act(x, n, &ep);
}

/* The clip bounds every activation's input, as ONNX says. */
static void clip_row(const kiln_rnn_params *p, float *x, int64_t n)
{
	if (!p->has_clip)
		return;
	float hi = p->clip, lo = -p->clip;
	for (int64_t j = 0; j < n; j++)
		x[j] = fminf(hi, fmaxf(lo, x[j]));
}

/* x[0..n) += y[0..n) (restrict: the loops here vectorize without alias checks) */
static void add_row(float *restrict x, const float *restrict y, int64_t n)
{
	for (int64_t j = 0; j < n; j++)
		x[j] += y[j];
}

static int64_t row_length(const kiln_rnn_params *p, const int32_t *lens, int64_t b)
{
	return lens ? lens[b] : p->seq_length;
}

/* A GEMM B operand: K x N, packed b32, or read from a weight stored as ONNX
 * has it ([N, K] rows of K: element (k, n) at src[n * K + k]) and packed a
 * panel at a time by the GEMM driver. */
static void pack_rows(const GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst)
{
	kiln_pack_b32_panel(s->src, s->rs, s->cs, s->N, n0, k0, kc, dst);
}

static GemmBSrc weight_src(const float *packed, const float *onnx, int64_t K, int64_t N)
{
	if (packed)
		return (GemmBSrc){.packed = packed, .N = N};
	return (GemmBSrc){.pack = pack_rows, .src = onnx, .rs = 1, .cs = K, .N = N};
}

typedef kiln_gemv_fn GemvFn;

/* C[M, N] (ldc) = A[M, K] (lda) B (+ bias[N]): the GEMM core, or for one
 * row of a packed B the vector-matrix product of f32-gemv. */
static void gemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const GemmBSrc *b,
                 const float *bias, float *C, int64_t ldc)
{
	GemmEpi e = {.alpha = 1.0f, .beta = 0.0f, .col_bias = bias};
	GemvFn gemv = M == 1 && K > 0 && b->packed ? kiln_gemv_of() : NULL;
	if (gemv) {  /* batch 1's step */
		gemv(N, K, A, b->packed, bias, C);
		return;
	}
	if (K > 0) {
		kiln_gemm_run(M, N, K, A, lda, b, C, ldc, &e);
		return;
	}
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++)
			C[i * ldc + j] = bias ? bias[j] : 0.0f;
}

/* The chunk's memory, carved from the work buffer. */
typedef struct Chunk {
	const float *bias;         /* [G*H]: Wb + Rb (GRU with linear_before_reset: h gate Wb only) */
	float *xw;                 /* row r, time t at xw + t * xw_t + r * xw_r: [G*H] */
	int64_t xw_t, xw_r;
	float *gates, *h, *c, *aux, *tmp;
	GemmBSrc w, r, rh;         /* W^T, R^T (GRU: z and r), GRU's R_h^T */
	const VmathOps *cell;      /* LSTM with the default activations: its fused cell */
	const float *P;            /* gate blocks: the peepholes in that layout, or NULL */
} Chunk;

/* Input features up to which one row's projection (batch 1, or a chunk of
 * one row) goes through the short-K product (gemv.h) instead of the GEMM
 * core, where the packed W^T's panels are K rows of a k loop that short. */
enum { SHORT_K = 16 };

/* Whether rows b0 .. b0+nb-1 (nb > 1) are not evenly spaced in X, so that
 * their xw is one GEMM per step (layout 0 with a chunk smaller than the
 * batch). */
static int xw_by_step(const kiln_rnn_params *p, int64_t nb)
{
	int64_t xs = p->x_step_stride, xr = p->x_row_stride;
	return xs != nb * xr && xr != p->seq_length * xs;
}

/* xw for rows b0 .. b0+nb-1 at every time step: one GEMM when those rows
 * are evenly spaced in X (one row; the whole batch in layout 0; any chunk in
 * layout 1), else one per step; one row with a short K and a packed W^T
 * through the short-K product. */
static void project_inputs(const kiln_rnn_params *p, const float *X, int64_t b0, int64_t nb,
                           Chunk *k)
{
	int64_t T = p->seq_length, I = p->input_size, GH = gate_count(p->cell) * p->hidden_size;
	int64_t xs = p->x_step_stride, xr = p->x_row_stride;
	const float *x0 = X + b0 * xr;
	kiln_gemm_shortk_fn shortk = nb == 1 && I <= SHORT_K && k->w.packed ? kiln_gemm_shortk_of()
	                                                                     : NULL;
	if (shortk) {                            /* one row: its T steps, xs apart */
		k->xw_t = GH, k->xw_r = GH;
		shortk(T, GH, I, x0, xs, k->w.packed, k->bias, k->xw, GH);
	} else if (nb == 1 || xs == nb * xr) {   /* rows (t, r) in order, xs / nb apart */
		k->xw_t = nb * GH, k->xw_r = GH;
		gemm(T * nb, GH, I, x0, nb == 1 ? xs : xr, &k->w, k->bias, k->xw, GH);
	} else if (!xw_by_step(p, nb)) {         /* rows (r, t) in order, xs apart */
		k->xw_t = GH, k->xw_r = T * GH;
		gemm(nb * T, GH, I, x0, xs, &k->w, k->bias, k->xw, GH);
	} else {
		k->xw_t = nb * GH, k->xw_r = GH;
		for (int64_t t = 0; t < T; t++)
			gemm(nb, GH, I, x0 + t * xs, xr, &k->w, k->bias, k->xw + t * nb * GH, GH);
	}
}

/* LSTM: one row's gates (i, o, f, c: H R^T + xw) to its new c and h. */
static void lstm_row(const kiln_rnn_params *p, const float *P, float *g, float *restrict h,
                     float *restrict c, float *restrict tmp)
{
	int64_t H = p->hidden_size;
	float *restrict gi = g, *restrict go = g + H, *restrict gf = g + 2 * H;
	float *restrict gc = g + 3 * H;
	if (P) {
		for (int64_t j = 0; j < H; j++) {
			gi[j] += P[j] * c[j];
			gf[j] += P[2 * H + j] * c[j];
		}
		clip_row(p, gi, H);
		activate_row(&p->act[0], gi, H);
		if (!p->input_forget) {
			clip_row(p, gf, H);
			activate_row(&p->act[0], gf, H);
		}
	} else {
		/* i, o, f: one run of the same activation (f unused with input_forget) */
		int64_t n = p->input_forget ? 2 * H : 3 * H;
		clip_row(p, g, n);
		activate_row(&p->act[0], g, n);
	}
	clip_row(p, gc, H);
	activate_row(&p->act[1], gc, H);
	if (p->input_forget)
		for (int64_t j = 0; j < H; j++)
			c[j] = (1.0f - gi[j]) * c[j] + gi[j] * gc[j];
	else
		for (int64_t j = 0; j < H; j++)
			c[j] = gf[j] * c[j] + gi[j] * gc[j];
	if (P) {
		for (int64_t j = 0; j < H; j++)
			go[j] += P[H + j] * c[j];
		clip_row(p, go, H);
		activate_row(&p->act[0], go, H);
	}
	memcpy(tmp, c, (size_t)H * sizeof *tmp);
	clip_row(p, tmp, H);
	activate_row(&p->act[2], tmp, H);
	for (int64_t j = 0; j < H; j++)
		h[j] = go[j] * tmp[j];
}

/* The time step row r of the chunk reads at recurrence step s. */
static int64_t step_time(const kiln_rnn_params *p, int64_t len, int64_t s)
{
	return p->reverse ? len - 1 - s : s;
}

/* Whether one row's step goes block by block (lstm_row_gemv): where R^T
 * streams from L2 each step, the cells then overlap the stream. With 32 to
 * 52 units (R^T 16 to 43 KiB, read from L1) the step is bound by the chain
 * of dependent operations instead, and one product over all 4H columns, then
 * the cells in one call, whose chains overlap, was measured faster at T = 25:
 * AVX-512 4 to 16 % for H = 32 to 52 (H = 16 to 24 and 56 up: slower or the
 * same); AVX2 16 and 5 % for H = 32 and 40, the same at 48, 3 to 6 % slower
 * at 50 and 52. */
static int row_by_blocks(int64_t H)
{
	int64_t most = kiln_isa() == KILN_ISA_AVX512 ? 52 : 40;
	return H < 32 || H > most;
}

/* Whether an LSTM step in gate blocks over nb rows goes through
 * lstm_rows_step (a whole block at least). Kernel alone (bench/lstm_probe.c,
 * I = 8, T = 25, B = 16, CPU time, against one GEMM then lstm_cells):
 * AVX-512 H = 150 660 -> 620 us, 50 140 -> 126 us, 48 118 -> 96 us, 20
 * 53.3 -> 46.5 us, 16 31 -> 21.5 us; AVX2 (one row a tile) H = 20 to 64
 * 3 to 9 % faster, 96 the same, 150 2 % slower (1.35 -> 1.38 ms). Over 96
 * units with 64 rows or more (where the GEMM runs its 6 x 64 tiles in
 * assembly) the GEMM form stays: deepjet_like b256 (its 150-unit LSTM in
 * chunks of 65 rows) 15.04 / 15.04 ms with lstm_rows, 14.52 / 14.46 ms
 * without, alternately. */
static int rows_fused(int64_t H, int64_t nb)
{
	if (H > 96 && nb >= 64)
		return 0;
	return H >= BLOCK_UNITS && (kiln_isa() != KILN_ISA_AVX2 || H <= 96);
}

/* The narrow block's cells of several rows in one lstm_cell call. */
enum { NARROW_GROUP = 16 };

/* The narrow block's cells (w <= 4 units, no peepholes) of rows 0 .. nb-1,
 * 16 / w rows at a time as one lstm_cell of up to 16 units: each gate's w
 * units of every row of the group side by side (gn: row r's gates at
 * r * 4w; xw: row r's at r * xw_r + bn), c gathered, then c and h put
 * back. The cell is elementwise, the same operations on each unit: the
 * same bits as one call per row, with one chain of the cell's dependent
 * operations for the group instead of one per row (DeepJet's 50 units:
 * w = 2, eight rows a call). Kernel alone (bench/lstm_probe.c, T = 25,
 * AVX-512): H = 50 (I = 4) at 256 rows 2.04 -> 1.83 ms, at 16 rows 117 ->
 * 109 us; H = 20 743 -> 721 us and 43.4 -> 41.4 us. w = 6 (two rows a
 * call) was slower: H = 150 at 16 rows 596 -> 604 us, so it keeps a call
 * per row. */
static void narrow_cells(const kiln_rnn_params *p, const float *gn, const float *xw, int64_t bn,
                         int64_t nb, int64_t u, int64_t w, Chunk *k)
{
	int64_t H = p->hidden_size, per = NARROW_GROUP / w;
	float g[4 * NARROW_GROUP], xs[4 * NARROW_GROUP], c[NARROW_GROUP], h[NARROW_GROUP];
	for (int64_t r0 = 0; r0 < nb; r0 += per) {
		int64_t n = nb - r0 < per ? nb - r0 : per;
		for (int64_t i = 0; i < n; i++) {
			const float *gr = gn + (r0 + i) * 4 * w, *xr = xw + (r0 + i) * k->xw_r + bn;
			for (int q = 0; q < 4; q++)
				for (int64_t e = 0; e < w; e++) {
					g[q * NARROW_GROUP + i * w + e] = gr[q * w + e];
					xs[q * NARROW_GROUP + i * w + e] = xr[q * w + e];
				}
			memcpy(c + i * w, k->c + (r0 + i) * H + u, (size_t)w * sizeof *c);
		}
		k->cell->lstm_cell(g, xs, NULL, c, h, n * w, NARROW_GROUP, p->has_clip, p->clip,
		                   p->input_forget);
		for (int64_t i = 0; i < n; i++) {
			memcpy(k->c + (r0 + i) * H + u, c + i * w, (size_t)w * sizeof *c);
			memcpy(k->h + (r0 + i) * H + u, h + i * w, (size_t)w * sizeof *h);
		}
	}
}

/* Step s of an LSTM in gate blocks for rows b0 .. b0+nb-1 of the same
 * length T, R^T packed, the default activations: the whole blocks' product
 * and cells of every row through the variant's lstm_rows (each block's sums
 * stay in registers from the product to the cell), on a copy of h_{t-1}
 * (in the gates buffer, after the narrow block's gates); the narrow last
 * block, if any, one GEMM over its columns, then each row's cell. */
static void lstm_rows_step(const kiln_rnn_params *p, const kiln_rnn_io *io, int64_t b0,
                           int64_t nb, int64_t s, Chunk *k)
{
	int64_t H = p->hidden_size, T = p->seq_length, t = step_time(p, T, s);
	int64_t u = H / BLOCK_UNITS * BLOCK_UNITS, w = H - u, bn = 4 * u;
	float *gn = k->gates, *x = gn + nb * 4 * w;  /* nb x 4w narrow gates, nb x H of h_{t-1} */
	const float *xw = k->xw + t * k->xw_t;
	memcpy(x, k->h, (size_t)(nb * H) * sizeof *x);
	k->cell->lstm_rows(nb, H, x, k->r.packed, xw, k->xw_r, k->P, k->c, k->h, p->has_clip,
	                   p->clip, p->input_forget);
	if (w > 0) {
		GemmBSrc rn = {.packed = k->r.packed + bn * H, .N = 4 * w};
		gemm(nb, 4 * w, H, x, H, &rn, NULL, gn, 4 * w);
		if (!k->P && w <= NARROW_GROUP / 4) {
			narrow_cells(p, gn, xw, bn, nb, u, w, k);
		} else {
			for (int64_t r = 0; r < nb; r++)
				k->cell->lstm_cell(gn + r * 4 * w, xw + r * k->xw_r + bn,
				                   k->P ? k->P + bn : NULL, k->c + r * H + u, k->h + r * H + u,
				                   w, w, p->has_clip, p->clip, p->input_forget);
		}
	}
	if (io->Y)
		for (int64_t r = 0; r < nb; r++)
			memcpy(io->Y + t * p->y_step_stride + (b0 + r) * p->y_row_stride, k->h + r * H,
			       (size_t)H * sizeof *io->Y);
}

/* Step s of an LSTM in gate blocks for rows b0 .. b0+nb-1: one GEMM, then
 * each row's cells in one call (vmath's lstm_cells, so that the blocks'
 * cells overlap). */
static void lstm_block_step(const kiln_rnn_params *p, const kiln_rnn_io *io, const int32_t *lens,
                            int64_t b0, int64_t nb, int64_t s, Chunk *k)
{
	int64_t H = p->hidden_size, GW = 4 * H;
	if (!lens && k->cell && k->r.packed && rows_fused(H, nb)) {
		lstm_rows_step(p, io, b0, nb, s, k);
		return;
	}
	gemm(nb, GW, H, k->h, H, &k->r, NULL, k->gates, GW);
	for (int64_t r = 0; r < nb; r++) {
		int64_t len = row_length(p, lens, b0 + r);
		if (s >= len)
			continue;  /* finished: the state stays as it was */
		int64_t t = step_time(p, len, s);
		float *g = k->gates + r * GW, *h = k->h + r * H, *c = k->c + r * H;
		k->cell->lstm_cells(g, k->xw + t * k->xw_t + r * k->xw_r, k->P, c, h, H, p->has_clip,
		                    p->clip, p->input_forget);
		if (io->Y)
			memcpy(io->Y + t * p->y_step_stride + (b0 + r) * p->y_row_stride, h,
			       (size_t)H * sizeof *io->Y);
	}
}

/* One row (batch 1, or a chunk of one) of an LSTM in gate blocks with the
 * one-row product: its whole recurrence in one call of the variant's
 * lstm_row (f32-vmath/body.h), which calls the cells directly (no table
 * per block and step) and inlines the whole blocks' product and cell into
 * its time loop. Block after block (row_by_blocks), each block's four gates
 * (two panels of R^T) and then its cell, so that the cell's arithmetic
 * overlaps the stream of R^T from L2 instead of following it, the blocks in
 * turn forward and backward (the block a step reads last is still in L1
 * when the next step reads it first); else one product over all 4H
 * columns, then the cells in one call. */
static void lstm_one_row(const kiln_rnn_params *p, const kiln_rnn_io *io, int64_t b, int64_t len,
                         GemvFn gemv, Chunk *k)
{
	VmathLstmRow a = {
		.H = p->hidden_size, .len = len, .reverse = p->reverse,
		.by_blocks = row_by_blocks(p->hidden_size), .xw = k->xw, .xw_t = k->xw_t,
		.R = k->r.packed, .P = k->P, .c = k->c, .h = k->h, .x = k->tmp, .g = k->gates,
		.Y = io->Y ? io->Y + b * p->y_row_stride : NULL, .y_t = p->y_step_stride,
		.has_clip = p->has_clip, .input_forget = p->input_forget, .clip = p->clip,
		.gemv = gemv,
	};
	k->cell->lstm_row(&a);
}

/* Rows b0 .. b0+nb-1 of one direction. */
static void run_chunk(const kiln_rnn_params *p, const kiln_rnn_io *io, const int32_t *lens,
                      int64_t b0, int64_t nb, Chunk *k)
{
	int64_t T = p->seq_length, H = p->hidden_size;
	int64_t GH = gate_count(p->cell) * H;
	int lstm = p->cell == KILN_RNN_LSTM, gru = p->cell == KILN_RNN_GRU;
	float *gates = k->gates, *h = k->h, *c = k->c, *aux = k->aux;

	int64_t max_len = 0;
	for (int64_t r = 0; r < nb; r++) {
		int64_t len = row_length(p, lens, b0 + r);
		if (len > max_len)
			max_len = len;
		const float *h0 = io->initial_h ? io->initial_h + (b0 + r) * p->state_row_stride : NULL;
		const float *c0 = io->initial_c ? io->initial_c + (b0 + r) * p->state_row_stride : NULL;
		for (int64_t j = 0; j < H; j++) {
			h[r * H + j] = h0 ? h0[j] : 0.0f;
			if (lstm)
				c[r * H + j] = c0 ? c0[j] : 0.0f;
		}
		/* Steps past the row's length are 0 in Y. */
		if (io->Y)
			for (int64_t t = len; t < T; t++)
				memset(io->Y + t * p->y_step_stride + (b0 + r) * p->y_row_stride, 0,
				       (size_t)H * sizeof *io->Y);
	}
	/* An LSTM in gate blocks over several rows of the same length whose xw
	 * is one GEMM per step anyway (xw_by_step): each step's just before the
	 * step, into one slot (xw_t = 0) that stays in L2, instead of every
	 * step's up front (T slots, a chunk's 3.9 MB at DeepJet's 150 units and
	 * 64 rows, read back from L3 a step at a time). The same GEMMs, the same
	 * bits. Evenly spaced rows keep their one GEMM over every step (at 16
	 * rows, 25 GEMMs of 16 rows instead of one of 400 took H = 150 from
	 * 600 to 640 us). */
	int step_xw = p->gate_blocks && k->cell && k->r.packed && !lens && nb > 1 &&
	              xw_by_step(p, nb);
	if (step_xw)
		k->xw_t = 0, k->xw_r = GH;
	else if (max_len > 0)
		project_inputs(p, io->X, b0, nb, k);

	const float *Rb_h = gru && io->B ? io->B + GH + 2 * H : NULL;
	GemvFn gemv = p->gate_blocks && nb == 1 && k->r.packed ? kiln_gemv_of() : NULL;
	if (gemv && k->cell) {  /* max_len: the row's length */
		lstm_one_row(p, io, b0, max_len, gemv, k);
		max_len = 0;
	}
	for (int64_t s = 0; s < max_len; s++) {
		if (p->gate_blocks) {
			if (step_xw)
				gemm(nb, GH, p->input_size,
				     io->X + b0 * p->x_row_stride + step_time(p, T, s) * p->x_step_stride,
				     p->x_row_stride, &k->w, k->bias, k->xw, GH);
			lstm_block_step(p, io, lens, b0, nb, s, k);
			continue;
		}
		gemm(nb, gru ? 2 * H : GH, H, h, H, &k->r, NULL, gates, GH);
		if (gru && p->linear_before_reset)
			gemm(nb, H, H, h, H, &k->rh, Rb_h, aux, H);
		/* gates += xw of each row's time step; GRU: z and r activated */
		for (int64_t r = 0; r < nb; r++) {
			int64_t len = row_length(p, lens, b0 + r);
			if (s >= len) {
				if (gru && !p->linear_before_reset)  /* read by the GEMM, result unused */
					memset(aux + r * H, 0, (size_t)H * sizeof *aux);
				continue;
			}
			if (k->cell)
				continue;  /* the fused cell adds xw itself */
			float *g = gates + r * GH;
			add_row(g, k->xw + step_time(p, len, s) * k->xw_t + r * k->xw_r,
			        gru ? 2 * H : GH);
			if (gru) {
				clip_row(p, g, 2 * H);
				activate_row(&p->act[0], g, 2 * H);
				if (!p->linear_before_reset)
					for (int64_t j = 0; j < H; j++)
						aux[r * H + j] = g[H + j] * h[r * H + j];
			}
		}
		if (gru && !p->linear_before_reset)
			gemm(nb, H, H, aux, H, &k->rh, NULL, gates + 2 * H, GH);

		for (int64_t r = 0; r < nb; r++) {
			int64_t len = row_length(p, lens, b0 + r);
			if (s >= len)
				continue;  /* finished: the state stays as it was */
			int64_t t = step_time(p, len, s);
			float *g = gates + r * GH, *hr = h + r * H;
			if (k->cell) {
				k->cell->lstm_cell(g, k->xw + t * k->xw_t + r * k->xw_r, io->P, c + r * H, hr, H,
				                   H, p->has_clip, p->clip, p->input_forget);
			} else if (lstm) {
				lstm_row(p, io->P, g, hr, c + r * H, k->tmp);
			} else if (gru) {
				float *gh = g + 2 * H;
				const float *xh = k->xw + t * k->xw_t + r * k->xw_r + 2 * H;
				if (p->linear_before_reset)
					for (int64_t j = 0; j < H; j++)
						gh[j] = xh[j] + g[H + j] * aux[r * H + j];
				else
					add_row(gh, xh, H);
				clip_row(p, gh, H);
				activate_row(&p->act[1], gh, H);
				for (int64_t j = 0; j < H; j++)
					hr[j] = (1.0f - g[j]) * gh[j] + g[j] * hr[j];
			} else {
				clip_row(p, g, H);
				activate_row(&p->act[0], g, H);
				memcpy(hr, g, (size_t)H * sizeof *hr);
			}
			if (io->Y)
				memcpy(io->Y + t * p->y_step_stride + (b0 + r) * p->y_row_stride, hr,
				       (size_t)H * sizeof *io->Y);
		}
	}

	for (int64_t r = 0; r < nb; r++) {
		int ran = row_length(p, lens, b0 + r) > 0;
		float *yh = io->Y_h ? io->Y_h + (b0 + r) * p->state_row_stride : NULL;
		float *yc = io->Y_c ? io->Y_c + (b0 + r) * p->state_row_stride : NULL;
		for (int64_t j = 0; j < H; j++) {
			if (yh)
				yh[j] = ran ? h[r * H + j] : 0.0f;
			if (yc)
				yc[j] = ran ? c[r * H + j] : 0.0f;
		}
	}
}

KILN_API enum kiln_status kiln_f32_rnn(const kiln_rnn_params *p, const kiln_rnn_io *io_in,
                                       float *work)
{
	const int32_t *lens = p->has_sequence_lens ? io_in->sequence_lens : NULL;
	if (lens)
		for (int64_t b = 0; b < p->batch; b++)
			if (lens[b] < 0 || lens[b] > p->seq_length)
				return KILN_SHAPE_ERROR;
	kiln_rnn_io io = *io_in;
	if (p->cell != KILN_RNN_LSTM)
		io.Y_c = NULL, io.initial_c = NULL, io.P = NULL;
	int64_t T = p->seq_length, I = p->input_size, H = p->hidden_size;
	int64_t GH = gate_count(p->cell) * H, chunk = chunk_of(p);
	int gru = p->cell == KILN_RNN_GRU;

	/* Wb + Rb, but Rb_h is applied inside r . (H R_h^T + Rb_h) with
	 * linear_before_reset. */
	float *bias = work;
	Chunk k = {.bias = bias, .tmp = work + GH};
	k.xw = k.tmp + H;
	k.gates = k.xw + chunk * T * GH;
	k.h = k.gates + chunk * GH;
	float *plain = p->gate_blocks ? k.gates : bias;  /* gates: free until the first step */
	for (int64_t u = 0; u < GH; u++)
		plain[u] = io.B ? io.B[u] + (gru && p->linear_before_reset && u >= 2 * H ? 0.0f
		                                                                        : io.B[GH + u])
		                : 0.0f;
	if (p->gate_blocks)
		to_blocks(H, plain, 4, bias);
	float *next = k.h + chunk * H;
	if (p->cell == KILN_RNN_LSTM)
		k.c = next, next += chunk * H;
	if (gru)
		k.aux = next;
	if (p->gate_blocks && io.P) {  /* the peepholes i, o, f in gate blocks */
		to_blocks(H, io.P, 3, next);
		k.P = next;
	}
	if (default_lstm(p))
		k.cell = vmath_ops();
	k.w = weight_src(io.Wp, io.W, I, GH);
	k.r = weight_src(io.Rp, io.R, H, gru ? 2 * H : GH);
	if (gru)
		k.rh = io.Rp ? weight_src(io.Rhp, NULL, H, H) : weight_src(NULL, io.R + 2 * H * H, H, H);

	/* As few chunks as chunk_rows allows, their rows spread evenly (256
	 * rows in chunks of at most 65: 4 x 64, not 3 x 65 + 61), so that no
	 * last chunk runs short of the GEMM's 6 x 64 tiles (or of lstm_rows'
	 * 5-row tiles). Rows are independent: the same results. */
	int64_t nchunks = (p->batch + chunk - 1) / chunk;
	for (int64_t ci = 0; ci < nchunks; ci++) {
		int64_t b0 = ci * p->batch / nchunks, nb = (ci + 1) * p->batch / nchunks - b0;
		run_chunk(p, &io, lens, b0, nb, &k);
	}
	return KILN_OK;
}
