/*
 * ops/rnn.c - shape inference for the recurrent layers RNN, GRU and LSTM
 * (every version ONNX defines: 1, 3 for GRU, 7 and 14), and the kernel
 * parameters of each direction, which the emitter (emit/rnn.c) takes from
 * here so that what is checked and what is compiled cannot disagree.
 *
 * Inputs: X [T, N, I] (layout 1: [N, T, I]), W [D, G*H, I], R [D, G*H, H],
 * then the optional B [D, 2*G*H], sequence_lens [N] (int32, read at run
 * time), initial_h [D, N, H] (layout 1: [N, D, H]), and for LSTM initial_c
 * and the peepholes P [D, 3*H]. G is the number of gates (1, 3, 4) and D
 * the number of directions (2 if bidirectional). Outputs, each optional:
 * Y [T, D, N, H] (layout 1: [N, T, D, H]), Y_h and Y_c like initial_h.
 *
 * The batch axis is axis 1 of X (axis 0 with layout 1), and batch rows are
 * independent of one another: the outputs' batch axes are the same rows
 * (for batch-independence tracking, when it lands).
 *
 * Only float32 is compiled. Opset 1's output_sequence needs nothing: Y is
 * computed whenever the node names it.
 */
#include <math.h>
#include <strings.h>
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

static const struct {
	const char *name;
	int kind;
	bool has_alpha, has_beta;
	float alpha, beta;      /* defaults: those of the ONNX operator of the same name */
} activations[] = {
	{"Relu", KILN_RNN_RELU, false, false, 0, 0},
	{"Tanh", KILN_RNN_TANH, false, false, 0, 0},
	{"Sigmoid", KILN_RNN_SIGMOID, false, false, 0, 0},
	{"Affine", KILN_RNN_AFFINE, true, true, 1.0f, 0.0f},
	{"LeakyRelu", KILN_RNN_LEAKY_RELU, true, false, 0.01f, 0},
	{"ThresholdedRelu", KILN_RNN_THRESHOLDED_RELU, true, false, 1.0f, 0},
	{"ScaledTanh", KILN_RNN_SCALED_TANH, true, true, 1.0f, 1.0f},
	{"HardSigmoid", KILN_RNN_HARD_SIGMOID, true, true, 0.2f, 0.5f},
	{"Elu", KILN_RNN_ELU, true, false, 1.0f, 0},
	{"Softsign", KILN_RNN_SOFTSIGN, false, false, 0, 0},
	{"Softplus", KILN_RNN_SOFTPLUS, false, false, 0, 0},
};

static const char *cell_name(int op)
{
	return op == OP_LSTM ? "LSTM" : op == OP_GRU ? "GRU" : "RNN";
}

/* The activations attribute: nact per direction (f; f, g; f, g, h), given
 * once for all directions or once per direction. activation_alpha and
 * activation_beta are consumed in list order by the functions that take
 * them; a function finding the list used up gets its default. */
static void parse_activations(Infer *x, int nact, int ndirs, RnnNode *r)
{
	static const int defaults[3] = {KILN_RNN_SIGMOID, KILN_RNN_TANH, KILN_RNN_TANH};
	const Attr *names = node_attr(x->n, "activations");
	const Attr *alphas = node_attr(x->n, "activation_alpha");
	const Attr *betas = node_attr(x->n, "activation_beta");
	if (names && names->type != AT_STRINGS)
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"activations\" must be a list of strings");
	if ((alphas && alphas->type != AT_FLOATS) || (betas && betas->type != AT_FLOATS))
		infer_fail(x, KILN_INVALID_MODEL,
		           "attributes \"activation_alpha\" and \"activation_beta\" must be lists of floats");
	if (!names || names->n == 0) {
		for (int d = 0; d < ndirs; d++)
			for (int k = 0; k < nact; k++)
				r->dir[d].act[k] = (kiln_rnn_activation){
					x->n->op == OP_RNN ? KILN_RNN_TANH : defaults[k], 0.0f, 0.0f};
		return;
	}
	if (names->n != nact && names->n != nact * ndirs)
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"activations\" has %d names; %s takes %d "
		           "per direction, listed once or once for each of its %d direction%s",
		           names->n, cell_name(x->n->op), nact, ndirs, ndirs > 1 ? "s" : "");
	int na = 0, nb = 0;
	for (int k = 0; k < names->n; k++) {
		const WeightString *s = &names->strings[k];
		int found = -1;
		for (int a = 0; a < (int)(sizeof activations / sizeof activations[0]); a++)
			if (strlen(activations[a].name) == s->len &&
			    strncasecmp(activations[a].name, s->data, s->len) == 0)
				found = a;
		if (found < 0)
			infer_fail(x, KILN_UNSUPPORTED, "activation \"%.*s\" is not one of Relu, Tanh, "
			           "Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, "
			           "Elu, Softsign, Softplus", (int)(s->len > 40 ? 40 : s->len), s->data);
		kiln_rnn_activation act = {activations[found].kind, activations[found].alpha,
		                           activations[found].beta};
		if (activations[found].has_alpha && alphas && na < alphas->n)
			act.alpha = alphas->floats[na++];
		if (activations[found].has_beta && betas && nb < betas->n)
			act.beta = betas->floats[nb++];
		for (int d = 0; d < ndirs; d++)
			if (names->n == nact || k / nact == d)
				r->dir[d].act[k % nact] = act;
	}
}

static void expect_shape(Infer *x, int i, int rank, const int64_t *dims, const char *what)
{
	const Shape *s = infer_shape(x, i);
	bool ok = s->rank == rank;
	for (int k = 0; ok && k < rank; k++)
		ok = s->dims[k].size == dims[k];
	if (!ok) {
		char want[96], got[96];
		int at = 0;
		for (int k = 0; k < rank; k++)
			at += snprintf(want + at, sizeof want - (size_t)at, "%s%lld", k ? ", " : "",
			               (long long)dims[k]);
		at = 0;
		got[0] = 0;
		for (int k = 0; k < s->rank && k < KILN_MAX_RANK; k++)
			at += snprintf(got + at, sizeof got - (size_t)at, "%s%lld", k ? ", " : "",
			               (long long)s->dims[k].size);
		infer_fail(x, KILN_SHAPE_ERROR, "input %d \"%s\" is [%s]; it must be [%s] (%s)", i,
		           infer_input_name(x, i), got, want, what);
	}
	if (i != 4 && infer_dtype(x, i) != infer_dtype(x, 0))
		infer_fail(x, KILN_INVALID_MODEL, "input %d \"%s\" is %s; X is %s", i,
		           infer_input_name(x, i), dtype_name(infer_dtype(x, i)),
		           dtype_name(infer_dtype(x, 0)));
}

void rnn_node(Infer *x, RnnNode *r)
{
	memset(r, 0, sizeof *r);
	int op = x->n->op;
	int cell = op == OP_LSTM ? KILN_RNN_LSTM : op == OP_GRU ? KILN_RNN_GRU : KILN_RNN_SIMPLE;
	int64_t G = op == OP_LSTM ? 4 : op == OP_GRU ? 3 : 1;
	int nact = op == OP_LSTM ? 3 : op == OP_GRU ? 2 : 1;   /* f; f, g; f, g, h */
	if (infer_dtype(x, 0) != DT_FLOAT)
		infer_fail(x, KILN_UNSUPPORTED, "%s on %s is not supported yet (float32 only)",
		           cell_name(op), dtype_name(infer_dtype(x, 0)));

	const char *dir = attr_string(x, "direction", "forward");
	int ndirs = 1, reverse = 0;
	if (strcmp(dir, "bidirectional") == 0)
		ndirs = 2;
	else if (strcmp(dir, "reverse") == 0)
		reverse = 1;
	else if (strcmp(dir, "forward") != 0 && strcmp(dir, "foward") != 0)  /* opset 1's default */
		infer_fail(x, KILN_INVALID_MODEL, "direction \"%s\" is not forward, reverse or "
		           "bidirectional", dir);
	int64_t layout = x->n->since >= 14 ? attr_int(x, "layout", 0) : 0;
	if (layout != 0 && layout != 1)
		infer_fail(x, KILN_INVALID_MODEL, "layout %lld is not 0 or 1", (long long)layout);

	const Shape *xs = infer_shape(x, 0);
	if (xs->rank != 3)
		infer_fail(x, KILN_SHAPE_ERROR, "X \"%s\" must have rank 3, got %d",
		           infer_input_name(x, 0), xs->rank);
	int64_t T = xs->dims[layout ? 1 : 0].size, N = xs->dims[layout ? 0 : 1].size;
	int64_t I = xs->dims[2].size;
	const Shape *rs = infer_shape(x, 2);
	int64_t H = attr_int(x, "hidden_size", rs->rank == 3 ? rs->dims[2].size : -1);
	if (H < 0)
		infer_fail(x, KILN_SHAPE_ERROR, "hidden_size is missing and R does not give it");
	int64_t GH = G * H;
	expect_shape(x, 1, 3, (int64_t[]){ndirs, GH, I}, "directions, gates * hidden_size, input_size");
	expect_shape(x, 2, 3, (int64_t[]){ndirs, GH, H}, "directions, gates * hidden_size, hidden_size");
	if (infer_has_input(x, 3))
		expect_shape(x, 3, 2, (int64_t[]){ndirs, 2 * GH}, "directions, 2 * gates * hidden_size");
	if (infer_has_input(x, 4)) {
		expect_shape(x, 4, 1, (int64_t[]){N}, "batch");
		if (infer_dtype(x, 4) != DT_INT32)
			infer_fail(x, KILN_INVALID_MODEL, "sequence_lens \"%s\" is %s; it must be int32",
			           infer_input_name(x, 4), dtype_name(infer_dtype(x, 4)));
	}
	int64_t state[3] = {layout ? N : ndirs, layout ? ndirs : N, H};
	for (int i = 5; i <= (op == OP_LSTM ? 6 : 5); i++)
		if (infer_has_input(x, i))
			expect_shape(x, i, 3, state, layout ? "batch, directions, hidden_size"
			                                    : "directions, batch, hidden_size");
	if (op == OP_LSTM && infer_has_input(x, 7))
		expect_shape(x, 7, 2, (int64_t[]){ndirs, 3 * H}, "directions, 3 * hidden_size");

	const Attr *clip = node_attr(x->n, "clip");
	float clip_value = attr_float(x, "clip", 0.0f);
	if (clip && !(clip_value >= 0.0f))
		infer_fail(x, KILN_INVALID_MODEL, "clip %g must be >= 0", (double)clip_value);
	int64_t lbr = op == OP_GRU ? attr_int(x, "linear_before_reset", 0) : 0;
	int64_t input_forget = op == OP_LSTM ? attr_int(x, "input_forget", 0) : 0;

	r->ndirs = ndirs;
	r->layout = (int)layout;
	r->gates = G;
	/* Y [T, D, N, H] or [N, T, D, H]; states [D, N, H] or [N, D, H]. */
	r->y_dir_offset = layout ? H : N * H;
	r->state_dir_offset = layout ? H : N * H;
	for (int d = 0; d < ndirs; d++) {
		kiln_rnn_params *p = &r->dir[d];
		p->cell = cell;
		p->reverse = ndirs == 2 ? d : reverse;
		p->seq_length = T;
		p->batch = N;
		p->input_size = I;
		p->hidden_size = H;
		p->x_step_stride = layout ? I : N * I;
		p->x_row_stride = layout ? T * I : I;
		p->y_step_stride = layout ? ndirs * H : ndirs * N * H;
		p->y_row_stride = layout ? T * ndirs * H : H;
		p->state_row_stride = layout ? ndirs * H : H;
		p->has_clip = clip != NULL;
		p->clip = clip_value;
		p->linear_before_reset = lbr != 0;
		p->input_forget = input_forget != 0;
		p->has_sequence_lens = infer_has_input(x, 4);
		p->chunk_rows = N > 0 ? N : 1;
	}
	parse_activations(x, nact, ndirs, r);
}

/* The kernel's work memory is planned arena scratch (plan.c): a chunk of
 * rows takes as many rows as fit RNN_SCRATCH_BYTES (at least one, at most
 * the batch), so the input projection of every time step of a chunk (T * G
 * * H floats a row) stays bounded whatever the batch. A single row over
 * RNN_MAX_ROW_BYTES is refused by the emitter. */
enum {
	RNN_SCRATCH_BYTES = 4 << 20,
	RNN_MAX_ROW_BYTES = 1 << 30,
};

int64_t rnn_chunk(RnnNode *r)
{
	int64_t N = r->dir[0].batch, row = 0, fixed = 0;
	/* T * G * H (a row's input projection) must not overflow below */
	int64_t T = r->dir[0].seq_length, GH = r->gates * r->dir[0].hidden_size;
	int64_t max_floats = RNN_MAX_ROW_BYTES / (int64_t)sizeof(float);
	if (GH > max_floats || (GH > 0 && T > max_floats / GH))
		return -1;
	for (int d = 0; d < r->ndirs; d++) {
		kiln_rnn_params one = r->dir[d];
		one.chunk_rows = 1;
		int64_t f1 = kiln_f32_rnn_work_floats(&one);
		one.chunk_rows = 2;
		int64_t f2 = kiln_f32_rnn_work_floats(&one);
		row = f2 - f1 > row ? f2 - f1 : row;
		fixed = 2 * f1 - f2 > fixed ? 2 * f1 - f2 : fixed;
	}
	if (row > max_floats)
		return -1;
	int64_t chunk = (RNN_SCRATCH_BYTES / (int64_t)sizeof(float) - fixed) / (row ? row : 1);
	if (chunk > N)
		chunk = N;
	if (chunk < 1)
		chunk = 1;
	for (int d = 0; d < r->ndirs; d++)
		r->dir[d].chunk_rows = chunk;
	return fixed + chunk * row;
}

int64_t rnn_scratch_bytes(const Sig *s, int node, Arena *a)
{
	Node *n = &s->g->nodes[node];
	Infer inf = {.sig = (Sig *)s, .g = s->g, .n = n, .a = a};
	if (s->dtypes[n->in[0]] != DT_FLOAT)
		return 0;
	RnnNode r;
	rnn_node(&inf, &r);
	int64_t floats = rnn_chunk(&r);
	return floats > 0 ? floats * (int64_t)sizeof(float) : 0;
}

void ops_rnn_infer(Infer *x)
{
	RnnNode r;
	rnn_node(x, &r);
	const kiln_rnn_params *p = &r.dir[0];
	int64_t T = p->seq_length, N = p->batch, H = p->hidden_size, D = r.ndirs;
	Shape y = {.rank = 4}, st = {.rank = 3};
	int64_t yd[4] = {T, D, N, H}, yd1[4] = {N, T, D, H};
	int64_t sd[3] = {D, N, H}, sd1[3] = {N, D, H};
	for (int k = 0; k < 4; k++)
		y.dims[k] = (Dim){r.layout ? yd1[k] : yd[k], NULL};
	for (int k = 0; k < 3; k++)
		st.dims[k] = (Dim){r.layout ? sd1[k] : sd[k], NULL};
	int dt = infer_dtype(x, 0);
	infer_set_output(x, 0, dt, &y);
	infer_set_output(x, 1, dt, &st);
	if (x->n->op == OP_LSTM)
		infer_set_output(x, 2, dt, &st);
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_rnn_defs[] = {
	{.op = OP_RNN, .infer = ops_rnn_infer, .emit = emit_rnn, .emit_returns = true,
	 .batch = BK_RECURRENT, .scratch = rnn_scratch_bytes, .cost = CK_RECURRENT,
	 .types = OT_F32,
	 .note = "forward, reverse, bidirectional; layout 0/1; every activation; clip; "
	         "sequence_lens read at run time (checked)"},
	{.op = OP_GRU, .infer = ops_rnn_infer, .emit = emit_rnn, .emit_returns = true,
	 .batch = BK_RECURRENT, .scratch = rnn_scratch_bytes, .cost = CK_RECURRENT,
	 .types = OT_F32,
	 .note = "as RNN; linear_before_reset 0 and 1"},
	{.op = OP_LSTM, .infer = ops_rnn_infer, .emit = emit_rnn, .emit_returns = true,
	 .batch = BK_RECURRENT, .scratch = rnn_scratch_bytes, .cost = CK_RECURRENT,
	 .types = OT_F32,
	 .note = "as RNN; peepholes, input_forget"},
	{.op = NONE},
};
