/*
 * emit/rnn.c - the op emitter for RNN, GRU and LSTM: one kiln_f32_rnn call
 * per direction, with the parameters ops/rnn.c derived (strides for the
 * layout, activations, clip, rows per chunk) written out as a static const
 * struct.
 *
 * W and R are packed at compile time into the b32 layout of the GEMM core
 * (runtime/kernels/f32-gemm/pack.h), one symbol per direction: W^T, R^T
 * (GRU: the z and r columns, and the h columns apart, which the candidate
 * gate multiplies by another left operand). The packed symbols replace the
 * weight in the weights object, so it is still stored once; only when every
 * reader of the weight is a node of the same op reading it at the same
 * input, and the weight is a plain constant. Otherwise the kernel reads the
 * ONNX layout and packs panels as it goes.
 *
 * The kernel's work memory is the node's planned arena scratch (plan.c,
 * rnn_chunk in ops/rnn.c).
 */
#include <inttypes.h>
#include <string.h>

#include "emit_c.h"

static const char *const cell_names[] = {"KILN_RNN_SIMPLE", "KILN_RNN_GRU", "KILN_RNN_LSTM"};
static const char *const act_names[] = {
	"KILN_RNN_RELU", "KILN_RNN_TANH", "KILN_RNN_SIGMOID", "KILN_RNN_AFFINE",
	"KILN_RNN_LEAKY_RELU", "KILN_RNN_THRESHOLDED_RELU", "KILN_RNN_SCALED_TANH",
	"KILN_RNN_HARD_SIGMOID", "KILN_RNN_ELU", "KILN_RNN_SOFTSIGN", "KILN_RNN_SOFTPLUS"};

/* An optional input as a pointer variable, or NULL. */
static const char *optional_in(Emit *E, int i, const char *var)
{
	if (i >= E->n->nin || E->n->in[i] == NONE)
		return "NULL";
	Operand op = in_op(E, i);
	decl(E, var, &op, false);
	return var;
}

/* An optional output as a pointer variable, or NULL: also when nothing
 * reads it (not a graph output, no use), so the kernel does not write it
 * (Y at every step, when only Y_h is used). */
static const char *optional_out(Emit *E, int i, const char *var)
{
	if (i >= E->n->nout || E->n->out[i] == NONE)
		return "NULL";
	const Value *v = &E->g->values[E->n->out[i]];
	if (v->nuse == 0 && !v->is_output)
		return "NULL";
	Operand op = out_op(E, i);
	decl(E, var, &op, true);
	return var;
}

/* ptr + off, or ptr when there is nothing to add. */
static const char *offset(Emit *E, const char *ptr, int64_t off)
{
	if (off == 0 || ptr[0] == 'N')  /* "NULL" */
		return ptr;
	return arena_printf(E->a, "%s + %" PRId64, ptr, off);
}

static void emit_params(Emit *E, const char *name, const kiln_rnn_params *p, int nact)
{
	emitf(E, "\tstatic const kiln_rnn_params %s = {\n", name);
	emitf(E, "\t\t.cell = %s, .reverse = %d,\n", cell_names[p->cell], p->reverse);
	emitf(E, "\t\t.seq_length = %" PRId64 ", .batch = %" PRId64 ", .input_size = %" PRId64
	       ", .hidden_size = %" PRId64 ",\n", p->seq_length, p->batch, p->input_size,
	    p->hidden_size);
	emitf(E, "\t\t.x_step_stride = %" PRId64 ", .x_row_stride = %" PRId64 ",\n", p->x_step_stride,
	    p->x_row_stride);
	emitf(E, "\t\t.y_step_stride = %" PRId64 ", .y_row_stride = %" PRId64 ",\n", p->y_step_stride,
	    p->y_row_stride);
	emitf(E, "\t\t.state_row_stride = %" PRId64 ",\n", p->state_row_stride);
	if (p->has_clip)
		emitf(E, "\t\t.has_clip = 1, .clip = %s,\n", flit(E, (double)p->clip, DT_FLOAT));
	if (p->linear_before_reset)
		emitf(E, "\t\t.linear_before_reset = 1,\n");
	if (p->input_forget)
		emitf(E, "\t\t.input_forget = 1,\n");
	if (p->gate_blocks)
		emitf(E, "\t\t.gate_blocks = 1,\n");
	if (p->has_sequence_lens)
		emitf(E, "\t\t.has_sequence_lens = 1,\n");
	emitf(E, "\t\t.act = {");
	for (int k = 0; k < nact; k++)
		emitf(E, "%s{%s, %s, %s}", k ? ", " : "", act_names[p->act[k].kind],
		    flit(E, (double)p->act[k].alpha, DT_FLOAT), flit(E, (double)p->act[k].beta, DT_FLOAT));
	emitf(E, "},\n\t\t.chunk_rows = %" PRId64 ",\n\t};\n", p->chunk_rows);
}

/* Whether input i (W or R, [ndirs * G*H, K]) can be packed at compile time. */
static bool packable(Emit *E, int i, int ndirs, int64_t GH, int64_t K)
{
	int id = E->n->in[i];
	const Value *v = &E->g->values[id];
	if (v->kind != VAL_WEIGHT || E->sig->dtypes[id] != DT_FLOAT || v->dtype != DT_FLOAT ||
	    E->sig->folded[id] || E->plan->root[id] != id || E->in_index[id] != NONE || K <= 0 ||
	    GH <= 0 || v->weight->nbytes != (uint64_t)(ndirs * GH * K) * sizeof(float))
		return false;
	int uses = 0;
	for (int n = 0; n < E->g->nnodes; n++) {
		const Node *o = &E->g->nodes[n];
		for (int j = 0; j < o->nin; j++)
			if (o->in[j] == id) {
				if (j != i || o->op != E->n->op)
					return false;
				uses++;
			}
	}
	return uses == v->nuse;  /* else also read by a subgraph */
}

/* Input i packed: the per-direction matrices (K x N each, from rows
 * [row0, row0 + N) of every direction's [G*H, K] block) as b32 symbols in
 * sym[d], or false when the weight cannot be packed. */
static bool pack_weight(Emit *E, int i, int ndirs, int64_t GH, int64_t K, int64_t row0, int64_t N,
                        const char *sym[2])
{
	if (!packable(E, i, ndirs, GH, K) || N <= 0)
		return false;
	const Value *v = &E->g->values[E->n->in[i]];
	for (int d = 0; d < ndirs; d++) {
		int64_t pack[4] = {K, N, 1, K};
		const char *bytes = (const char *)v->weight->bytes + (d * GH + row0) * K * sizeof(float);
		int s = symbol_in_layout(E, DT_FLOAT, bytes, (uint64_t)(K * N) * sizeof(float), v->name,
		                         SYM_PACK_B32, pack);
		sym[d] = symbol_expr(E, s, "float");
	}
	return true;
}

/* An LSTM's input i (W or R, rows i, o, f, c of H units each) packed in gate
 * blocks (kernels.h): each direction's rows reordered, 64 b + w q + e from
 * row q H + 16 b + e (w: the block's units, 16 but for the last), then
 * packed b32. */
static void pack_gate_blocks(Emit *E, int i, int ndirs, int64_t H, int64_t K, const char *sym[2])
{
	const Value *v = &E->g->values[E->n->in[i]];
	int64_t N = 4 * H;
	for (int d = 0; d < ndirs; d++) {
		/* bytes, not floats: a weight may sit misaligned in the model file */
		const char *src = (const char *)v->weight->bytes + d * 4 * H * K * (int64_t)sizeof(float);
		float *rows = arena_array(E->a, (size_t)(N * K), sizeof *rows);
		for (int64_t n = 0; n < N; n++) {
			int64_t u0 = n / 64 * 16, w = H - u0 < 16 ? H - u0 : 16, q = n % 64 / w;
			memcpy(rows + n * K, src + (q * H + u0 + n % 64 % w) * K * (int64_t)sizeof(float),
			       (size_t)K * sizeof *rows);
		}
		int64_t pack[4] = {K, N, 1, K};
		int s = symbol_in_layout(E, DT_FLOAT, rows, (uint64_t)(K * N) * sizeof(float), v->name,
		                         SYM_PACK_B32, pack);
		sym[d] = symbol_expr(E, s, "float");
	}
}

void emit_rnn(Emit *E)
{
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	RnnNode r;
	rnn_node(&inf, &r);
	int nact = (int)(r.gates == 4 ? 3 : r.gates == 3 ? 2 : 1);
	int gru = r.gates == 3;
	if (rnn_chunk(&r) < 0)
		emit_fail(E, "one batch row needs more than 1 GiB of work memory (sequence length x "
		          "gates x hidden size); kiln refuses it");
	int node = (int)(E->n - E->g->nodes);
	int buf = E->plan->scratch_of[node];
	KILN_ASSERT(buf != NONE);
	const PlanBuf *scratch = &E->plan->bufs[buf];

	int64_t H = r.dir[0].hidden_size, I = r.dir[0].input_size, GH = r.gates * H;
	const char *Wp[2] = {0}, *Rp[2] = {0}, *Rhp[2] = {0};
	/* An LSTM with the default activations whose W and R both pack goes in
	 * gate blocks (each block's cell right after its gates) */
	const kiln_rnn_activation *act = r.dir[0].act;
	bool blocks = r.gates == 4 && act[0].kind == KILN_RNN_SIGMOID && act[1].kind == KILN_RNN_TANH &&
	              act[2].kind == KILN_RNN_TANH && packable(E, 1, r.ndirs, GH, I) &&
	              packable(E, 2, r.ndirs, GH, H);
	if (blocks) {
		pack_gate_blocks(E, 1, r.ndirs, H, I, Wp);
		pack_gate_blocks(E, 2, r.ndirs, H, H, Rp);
		for (int d = 0; d < r.ndirs; d++)
			r.dir[d].gate_blocks = 1;
	}
	bool w_packed = blocks || pack_weight(E, 1, r.ndirs, GH, I, 0, GH, Wp);
	bool r_packed = blocks || (pack_weight(E, 2, r.ndirs, GH, H, 0, gru ? 2 * H : GH, Rp) &&
	                           (!gru || pack_weight(E, 2, r.ndirs, GH, H, 2 * H, H, Rhp)));
	Operand X = in_op(E, 0);
	decl(E, "X", &X, false);
	const char *W = "NULL", *R = "NULL";
	if (!w_packed) {
		Operand Wo = in_op(E, 1);
		decl(E, "W", &Wo, false);
		W = "W";
	}
	if (!r_packed) {
		Operand Ro = in_op(E, 2);
		decl(E, "R", &Ro, false);
		R = "R";
	}
	const char *B = optional_in(E, 3, "B");
	const char *L = optional_in(E, 4, "L");
	const char *H0 = optional_in(E, 5, "H0");
	const char *C0 = r.gates == 4 ? optional_in(E, 6, "C0") : "NULL";
	const char *P = r.gates == 4 ? optional_in(E, 7, "P") : "NULL";
	const char *Y = optional_out(E, 0, "Y");
	const char *Yh = optional_out(E, 1, "Y_h");
	const char *Yc = r.gates == 4 ? optional_out(E, 2, "Y_c") : "NULL";

	emitf(E, "\t/* arena scratch @%" PRId64 "+%" PRId64 ": the input projection, state and "
	      "gates of %" PRId64 " row%s at a time */\n", scratch->off, scratch->bytes,
	      r.dir[0].chunk_rows, r.dir[0].chunk_rows > 1 ? "s" : "");
	emitf(E, "\tfloat *work = (float *)(a + %" PRId64 ");\n", scratch->off);
	emitf(E, "\tint st;\n");
	for (int d = 0; d < r.ndirs; d++) {
		char pname[4] = {'p', (char)('0' + d), 0};
		emitf(E, "\t/* direction %d: %s */\n", d, r.dir[d].reverse ? "reverse" : "forward");
		emit_params(E, pname, &r.dir[d], nact);
		emitf(E, "\tkiln_rnn_io io%d = {\n\t\t.X = X,\n", d);
		if (w_packed)
			emitf(E, "\t\t.Wp = %s,\n", Wp[d]);
		else
			emitf(E, "\t\t.W = %s,\n", offset(E, W, d * GH * I));
		if (r_packed && gru)
			emitf(E, "\t\t.Rp = %s, .Rhp = %s,\n", Rp[d], Rhp[d]);
		else if (r_packed)
			emitf(E, "\t\t.Rp = %s,\n", Rp[d]);
		else
			emitf(E, "\t\t.R = %s,\n", offset(E, R, d * GH * H));
		emitf(E, "\t\t.B = %s, .P = %s, .sequence_lens = %s,\n", offset(E, B, d * 2 * GH),
		    offset(E, P, d * 3 * H), L);
		emitf(E, "\t\t.initial_h = %s, .initial_c = %s,\n", offset(E, H0, d * r.state_dir_offset),
		    offset(E, C0, d * r.state_dir_offset));
		emitf(E, "\t\t.Y = %s, .Y_h = %s, .Y_c = %s,\n\t};\n", offset(E, Y, d * r.y_dir_offset),
		    offset(E, Yh, d * r.state_dir_offset), offset(E, Yc, d * r.state_dir_offset));
		emitf(E, "\tst = kiln_f32_rnn(&%s, &io%d, work);\n", pname, d);
		emitf(E, "\tif (st != 0)\n\t\treturn st;\n");
	}
	emitf(E, "\treturn 0;\n");
}
