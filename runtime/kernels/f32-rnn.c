/*
 * f32-rnn.c - one direction of ONNX RNN, GRU or LSTM in float32: the whole
 * sequence, every batch row, with the optional bias, peepholes, initial
 * state and per-row sequence lengths.
 *
 * Rows are independent, so they are processed in chunks of p->chunk_rows; a
 * chunk keeps its state (h, and c for LSTM) and its gate pre-activations in
 * the caller's work buffer, whose size kiln_f32_rnn_work_floats gives. Each
 * time step of a chunk is two or three calls of kiln_f32_gemm:
 *   gates  = X_t W^T          (all gates; W read through strides, no copy)
 *   gates += H_{t-1} R^T      (all gates; GRU: z and r only)
 * followed by one pass over the gates that adds the biases and applies the
 * clip, the activations and the cell's update. GRU's candidate gate needs r
 * first: without linear_before_reset it is (r . H_{t-1}) R_h^T, a third GEMM
 * after z and r are known; with it, H_{t-1} R_h^T goes to its own buffer and
 * is scaled by r element by element.
 *
 * Sequence lengths: row b runs for len(b) steps (forward: t = 0 .. len-1;
 * reverse: t = len-1 .. 0). Rows past their length keep their state; Y is 0
 * at t >= len(b); Y_h and Y_c hold the state after the row's last step, or 0
 * when len(b) == 0 (as ONNX Runtime does). In reverse with lengths, the rows
 * of a chunk read different time steps, so X's rows are gathered first.
 */
#include <math.h>
#include <string.h>

#include "kiln/kernels.h"

static int64_t gate_count(int cell)
{
	return cell == KILN_RNN_LSTM ? 4 : cell == KILN_RNN_GRU ? 3 : 1;
}

/* Does this direction read X's rows at different steps for different rows? */
static int gathers_x(const kiln_rnn_params *p)
{
	return p->reverse && p->has_sequence_lens;
}

KILN_API int64_t kiln_f32_rnn_work_floats(const kiln_rnn_params *p)
{
	int64_t H = p->hidden_size;
	int64_t per_row = gate_count(p->cell) * H + H;  /* gates, h */
	if (p->cell == KILN_RNN_LSTM)
		per_row += H;                            /* c */
	if (p->cell == KILN_RNN_GRU)
		per_row += H;                            /* r . h, or h R_h^T */
	if (gathers_x(p))
		per_row += p->input_size;                /* the gathered rows of X */
	return (p->chunk_rows > 0 ? p->chunk_rows : 1) * per_row;
}

static float activate(const kiln_rnn_activation *a, float x)
{
	switch (a->kind) {
	case KILN_RNN_RELU: return x > 0.0f ? x : 0.0f;
	case KILN_RNN_TANH: return tanhf(x);
	case KILN_RNN_SIGMOID: return 1.0f / (1.0f + expf(-x));
	case KILN_RNN_AFFINE: return a->alpha * x + a->beta;
	case KILN_RNN_LEAKY_RELU: return x >= 0.0f ? x : a->alpha * x;
	case KILN_RNN_THRESHOLDED_RELU: return x >= a->alpha ? x : 0.0f;
	case KILN_RNN_SCALED_TANH: return a->alpha * tanhf(a->beta * x);
	case KILN_RNN_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, a->alpha * x + a->beta));
	case KILN_RNN_ELU: return x >= 0.0f ? x : a->alpha * (expf(x) - 1.0f);
	case KILN_RNN_SOFTSIGN: return x / (1.0f + fabsf(x));
	case KILN_RNN_SOFTPLUS: /* log(1 + e^x) without overflow for large x */
		return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
	}
	return x;
}

/* The clip bounds every activation's input, as ONNX says. */
static float act(const kiln_rnn_params *p, int k, float x)
{
	if (p->has_clip)
		x = fminf(p->clip, fmaxf(-p->clip, x));
	return activate(&p->act[k], x);
}

/* Wb + Rb of gate unit u (u in [0, G*H)), 0 without B. */
static float bias_of(const float *B, int64_t GH, int64_t u)
{
	return B ? B[u] + B[GH + u] : 0.0f;
}

static int64_t row_length(const kiln_rnn_params *p, const int32_t *lens, int64_t b)
{
	return lens ? lens[b] : p->seq_length;
}

/* The cell update of one active row: gates (pre-activations without bias)
 * and the state in, the new state out (h, and c for LSTM). GRU's z and r
 * are computed by gru_gates before the candidate's GEMM. */
static void lstm_row(const kiln_rnn_params *p, const float *B, const float *P, const float *g,
                     float *h, float *c)
{
	int64_t H = p->hidden_size, GH = 4 * H;
	for (int64_t j = 0; j < H; j++) {
		/* gate order i, o, f, c; peepholes i, o, f */
		float pi = g[j] + bias_of(B, GH, j), po = g[H + j] + bias_of(B, GH, H + j);
		float pf = g[2 * H + j] + bias_of(B, GH, 2 * H + j);
		float pc = g[3 * H + j] + bias_of(B, GH, 3 * H + j);
		if (P) {
			pi += P[j] * c[j];
			pf += P[2 * H + j] * c[j];
		}
		float i = act(p, 0, pi);
		float f = p->input_forget ? 1.0f - i : act(p, 0, pf);
		float cell = f * c[j] + i * act(p, 1, pc);
		if (P)
			po += P[H + j] * cell;
		c[j] = cell;
		h[j] = act(p, 0, po) * act(p, 2, cell);
	}
}

/* GRU: z and r of one row, stored over their pre-activations. */
static void gru_gates(const kiln_rnn_params *p, const float *B, float *g)
{
	int64_t H = p->hidden_size, GH = 3 * H;
	for (int64_t u = 0; u < 2 * H; u++)
		g[u] = act(p, 0, g[u] + bias_of(B, GH, u));
}

/* GRU: the new h of one row from z, r (gru_gates) and the candidate's
 * pre-activation g[2H..3H) (linear_before_reset = 0), or X_t W_h^T there and
 * hr = H_{t-1} R_h^T (linear_before_reset != 0). */
static void gru_row(const kiln_rnn_params *p, const float *B, const float *g, const float *hr,
                    float *h)
{
	int64_t H = p->hidden_size, GH = 3 * H;
	for (int64_t j = 0; j < H; j++) {
		float z = g[j], r = g[H + j], pre;
		if (p->linear_before_reset)
			pre = g[2 * H + j] + (B ? B[2 * H + j] : 0.0f) +
			      r * (hr[j] + (B ? B[GH + 2 * H + j] : 0.0f));
		else
			pre = g[2 * H + j] + bias_of(B, GH, 2 * H + j);
		float cand = act(p, 1, pre);
		h[j] = (1.0f - z) * cand + z * h[j];
	}
}

/* Rows b0 .. b0+nb-1 of one direction. */
static void run_chunk(const kiln_rnn_params *p, int64_t b0, int64_t nb, const float *X,
                      const float *W, const float *R, const float *B, const float *P,
                      const int32_t *lens, const float *initial_h, const float *initial_c,
                      float *Y, float *Y_h, float *Y_c, float *work)
{
	int64_t T = p->seq_length, I = p->input_size, H = p->hidden_size;
	int64_t G = gate_count(p->cell), GH = G * H;
	float *gates = work, *h = gates + nb * GH, *next = h + nb * H;
	float *c = NULL, *aux = NULL, *xg = NULL;
	if (p->cell == KILN_RNN_LSTM)
		c = next, next += nb * H;
	if (p->cell == KILN_RNN_GRU)
		aux = next, next += nb * H;
	if (gathers_x(p))
		xg = next;

	int64_t max_len = 0;
	for (int64_t r = 0; r < nb; r++) {
		int64_t len = row_length(p, lens, b0 + r);
		if (len > max_len)
			max_len = len;
		const float *h0 = initial_h ? initial_h + (b0 + r) * p->state_row_stride : NULL;
		const float *c0 = initial_c ? initial_c + (b0 + r) * p->state_row_stride : NULL;
		for (int64_t j = 0; j < H; j++) {
			h[r * H + j] = h0 ? h0[j] : 0.0f;
			if (c)
				c[r * H + j] = c0 ? c0[j] : 0.0f;
		}
		/* Steps past the row's length are 0 in Y. */
		if (Y)
			for (int64_t t = len; t < T; t++)
				memset(Y + t * p->y_step_stride + (b0 + r) * p->y_row_stride, 0,
				       (size_t)H * sizeof *Y);
	}

	for (int64_t s = 0; s < max_len; s++) {
		/* This step's rows of X: a strided view, or gathered when rows differ. */
		const float *xa;
		int64_t xa_stride = p->x_row_stride;
		if (xg) {
			for (int64_t r = 0; r < nb; r++) {
				int64_t len = row_length(p, lens, b0 + r);
				if (s < len)
					memcpy(xg + r * I, X + (len - 1 - s) * p->x_step_stride +
					                       (b0 + r) * p->x_row_stride,
					       (size_t)I * sizeof *xg);
				else
					memset(xg + r * I, 0, (size_t)I * sizeof *xg);
			}
			xa = xg;
			xa_stride = I;
		} else {
			xa = X + (p->reverse ? T - 1 - s : s) * p->x_step_stride + b0 * p->x_row_stride;
		}
		/* W and R are [G*H, I] and [G*H, H]: B(k, n) = W[n * I + k]. */
		kiln_f32_gemm(nb, GH, I, 1.0f, xa, xa_stride, 1, W, 1, I, 0.0f, gates, GH);
		int64_t rec = p->cell == KILN_RNN_GRU ? 2 * H : GH;
		kiln_f32_gemm(nb, rec, H, 1.0f, h, H, 1, R, 1, H, 1.0f, gates, GH);

		if (p->cell == KILN_RNN_GRU) {
			if (p->linear_before_reset)
				kiln_f32_gemm(nb, H, H, 1.0f, h, H, 1, R + 2 * H * H, 1, H, 0.0f, aux, H);
			for (int64_t r = 0; r < nb; r++) {
				gru_gates(p, B, gates + r * GH);
				if (!p->linear_before_reset)
					for (int64_t j = 0; j < H; j++)
						aux[r * H + j] = gates[r * GH + H + j] * h[r * H + j];
			}
			if (!p->linear_before_reset)
				kiln_f32_gemm(nb, H, H, 1.0f, aux, H, 1, R + 2 * H * H, 1, H, 1.0f,
				              gates + 2 * H, GH);
		}

		for (int64_t r = 0; r < nb; r++) {
			int64_t len = row_length(p, lens, b0 + r);
			if (s >= len)
				continue;  /* finished: the state stays as it was */
			const float *g = gates + r * GH;
			float *hr = h + r * H;
			if (p->cell == KILN_RNN_LSTM)
				lstm_row(p, B, P, g, hr, c + r * H);
			else if (p->cell == KILN_RNN_GRU)
				gru_row(p, B, g, aux + r * H, hr);
			else
				for (int64_t j = 0; j < H; j++)
					hr[j] = act(p, 0, g[j] + bias_of(B, H, j));
			if (Y) {
				int64_t t = p->reverse ? len - 1 - s : s;
				memcpy(Y + t * p->y_step_stride + (b0 + r) * p->y_row_stride, hr,
				       (size_t)H * sizeof *Y);
			}
		}
	}

	for (int64_t r = 0; r < nb; r++) {
		int ran = row_length(p, lens, b0 + r) > 0;
		float *yh = Y_h ? Y_h + (b0 + r) * p->state_row_stride : NULL;
		float *yc = Y_c ? Y_c + (b0 + r) * p->state_row_stride : NULL;
		for (int64_t j = 0; j < H; j++) {
			if (yh)
				yh[j] = ran ? h[r * H + j] : 0.0f;
			if (yc)
				yc[j] = ran ? c[r * H + j] : 0.0f;
		}
	}
}

KILN_API enum kiln_status kiln_f32_rnn(const kiln_rnn_params *p, const float *X, const float *W,
                                       const float *R, const float *B, const float *P,
                                       const int32_t *sequence_lens, const float *initial_h,
                                       const float *initial_c, float *Y, float *Y_h, float *Y_c,
                                       float *work)
{
	const int32_t *lens = p->has_sequence_lens ? sequence_lens : NULL;
	if (lens)
		for (int64_t b = 0; b < p->batch; b++)
			if (lens[b] < 0 || lens[b] > p->seq_length)
				return KILN_SHAPE_ERROR;
	if (p->cell != KILN_RNN_LSTM)
		Y_c = NULL, initial_c = NULL, P = NULL;
	int64_t chunk = p->chunk_rows > 0 ? p->chunk_rows : 1;
	for (int64_t b0 = 0; b0 < p->batch; b0 += chunk) {
		int64_t nb = p->batch - b0 < chunk ? p->batch - b0 : chunk;
		run_chunk(p, b0, nb, X, W, R, B, P, lens, initial_h, initial_c, Y, Y_h, Y_c, work);
	}
	return KILN_OK;
}
