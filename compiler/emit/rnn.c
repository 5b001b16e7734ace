/*
 * emit/rnn.c - the op emitter for RNN, GRU and LSTM: one kiln_f32_rnn call
 * per direction, with the parameters ops/rnn.c derived (strides for the
 * layout, activations, clip) written out as a static const struct.
 *
 * The kernel needs a work buffer for its state and gate pre-activations.
 * The plan has no per-node workspace yet, so the node function holds it on
 * the stack, sized by literals: batch rows are processed in chunks of as
 * many rows as fit in RNN_STACK_FLOATS (at least one row), which bounds the
 * stack a call uses whatever the batch size. A single row that needs more
 * than RNN_MAX_ROW_FLOATS is refused with a clear error.
 */
#include <inttypes.h>

#include "emit_c.h"

enum {
	RNN_STACK_FLOATS = 16384,     /* 64 KiB: a chunk of rows */
	RNN_MAX_ROW_FLOATS = 262144,  /* 1 MiB: one row, the most a node may take */
};

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

static const char *optional_out(Emit *E, int i, const char *var)
{
	if (i >= E->n->nout || E->n->out[i] == NONE)
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
	if (p->has_sequence_lens)
		emitf(E, "\t\t.has_sequence_lens = 1,\n");
	emitf(E, "\t\t.act = {");
	for (int k = 0; k < nact; k++)
		emitf(E, "%s{%s, %s, %s}", k ? ", " : "", act_names[p->act[k].kind],
		    flit(E, (double)p->act[k].alpha, DT_FLOAT), flit(E, (double)p->act[k].beta, DT_FLOAT));
	emitf(E, "},\n\t\t.chunk_rows = %" PRId64 ",\n\t};\n", p->chunk_rows);
}

void emit_rnn(Emit *E)
{
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	RnnNode r;
	rnn_node(&inf, &r);
	int nact = (int)(r.gates == 4 ? 3 : r.gates == 3 ? 2 : 1);

	/* Rows per chunk: as many as fit the stack budget. */
	kiln_rnn_params one = r.dir[0];
	one.chunk_rows = 1;
	int64_t row_floats = kiln_f32_rnn_work_floats(&one);
	for (int d = 1; d < r.ndirs; d++) {
		one = r.dir[d];
		one.chunk_rows = 1;
		int64_t f = kiln_f32_rnn_work_floats(&one);
		row_floats = f > row_floats ? f : row_floats;
	}
	if (row_floats > RNN_MAX_ROW_FLOATS)
		emit_fail(E, "one batch row needs %" PRId64 " floats of work memory; kiln holds it on the "
		          "stack and allows at most %d", row_floats, RNN_MAX_ROW_FLOATS);
	int64_t chunk = RNN_STACK_FLOATS / (row_floats ? row_floats : 1);
	int64_t N = r.dir[0].batch;
	if (chunk > N)
		chunk = N;
	if (chunk < 1)
		chunk = 1;
	for (int d = 0; d < r.ndirs; d++)
		r.dir[d].chunk_rows = chunk;

	Operand X = in_op(E, 0), W = in_op(E, 1), R = in_op(E, 2);
	decl(E, "X", &X, false);
	decl(E, "W", &W, false);
	decl(E, "R", &R, false);
	const char *B = optional_in(E, 3, "B");
	const char *L = optional_in(E, 4, "L");
	const char *H0 = optional_in(E, 5, "H0");
	const char *C0 = r.gates == 4 ? optional_in(E, 6, "C0") : "NULL";
	const char *P = r.gates == 4 ? optional_in(E, 7, "P") : "NULL";
	const char *Y = optional_out(E, 0, "Y");
	const char *Yh = optional_out(E, 1, "Y_h");
	const char *Yc = r.gates == 4 ? optional_out(E, 2, "Y_c") : "NULL";

	int64_t chunk_floats = chunk * row_floats;
	emitf(E, "\tfloat work[%" PRId64 "]; /* state and gates of %" PRId64 " row%s at a time */\n",
	    chunk_floats ? chunk_floats : 1, chunk, chunk > 1 ? "s" : "");
	emitf(E, "\tint st;\n");
	int64_t H = r.dir[0].hidden_size, I = r.dir[0].input_size, GH = r.gates * H;
	for (int d = 0; d < r.ndirs; d++) {
		char pname[4] = {'p', (char)('0' + d), 0};
		emitf(E, "\t/* direction %d: %s */\n", d, r.dir[d].reverse ? "reverse" : "forward");
		emit_params(E, pname, &r.dir[d], nact);
		emitf(E, "\tst = kiln_f32_rnn(&%s, X, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, work);\n",
		    pname, offset(E, "W", d * GH * I), offset(E, "R", d * GH * H),
		    offset(E, B, d * 2 * GH), offset(E, P, d * 3 * H), L,
		    offset(E, H0, d * r.state_dir_offset), offset(E, C0, d * r.state_dir_offset),
		    offset(E, Y, d * r.y_dir_offset), offset(E, Yh, d * r.state_dir_offset),
		    offset(E, Yc, d * r.state_dir_offset));
		emitf(E, "\tif (st != 0)\n\t\treturn st;\n");
	}
	emitf(E, "\treturn 0;\n");
}
