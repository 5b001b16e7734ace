/*
 * emit/signal.c - DFT and STFT as calls of kiln_f32_dft / kiln_f32_stft,
 * and the windows and MelWeightMatrix as generated loops.
 *
 * Window and mel values are computed in double and converted once to the
 * output type (16-bit floats through float32, integers by C's truncation,
 * as ONNX's Cast). The lengths that decide shapes were known at inference
 * (ops/signal.c), so they are literals here.
 */
#include <inttypes.h>

#include "emit_c.h"

/* A known scalar input, as int64 (inference made sure it is known). */
static int64_t known(Emit *E, int i)
{
	double v;
	if (!folded_scalar(E, i, &v))
		emit_fail(E, "input %d is not known at compile time", i);
	return (int64_t)v;
}

/* The statement storing double `v` in Y[idx] as Y's type. */
static const char *store(Emit *E, const Operand *y, const char *idx, const char *v)
{
	switch (y->dtype) {
	case DT_FLOAT16: return arena_printf(E->a, "Y[%s] = kiln_f32_to_f16((float)%s);", idx, v);
	case DT_BFLOAT16: return arena_printf(E->a, "Y[%s] = kiln_f32_to_bf16((float)%s);", idx, v);
	}
	if (y->dtype == DT_DOUBLE)
		return arena_printf(E->a, "Y[%s] = %s;", idx, v);
	return arena_printf(E->a, "Y[%s] = (%s)%s;", idx, ctype(y->dtype), v);
}

/* A runtime scalar input as a double expression. */
static const char *scalar(Emit *E, const Operand *x, const char *var)
{
	switch (x->dtype) {
	case DT_FLOAT16: return arena_printf(E->a, "(double)kiln_f16_to_f32(%s[0])", var);
	case DT_BFLOAT16: return arena_printf(E->a, "(double)kiln_bf16_to_f32(%s[0])", var);
	}
	return arena_printf(E->a, "(double)%s[0]", var);
}

void emit_dft(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	const Shape *s = X.shape;
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	int ax = signal_dft_axis(&inf, s->rank);
	int64_t outer = 1, inner = 1;
	for (int k = 0; k < s->rank - 1; k++) {
		if (k < ax)
			outer *= s->dims[k].size;
		else if (k > ax)
			inner *= s->dims[k].size;
	}
	int64_t x_len = s->dims[ax].size;
	int64_t n = E->n->nin > 1 && E->n->in[1] != NONE ? known(E, 1) : x_len;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	emitf(E,
	      "\tkiln_f32_dft(%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", X, %" PRId64
	      ", %" PRId64 ", %d, Y);\n",
	      outer, inner, x_len, s->dims[s->rank - 1].size, n, Y.shape->dims[ax].size,
	      (int)signal_dft_inverse(&inf));
}

void emit_stft(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	const Shape *s = X.shape;
	bool windowed = E->n->nin > 2 && E->n->in[2] != NONE;
	int64_t step = known(E, 1);
	int64_t frame = windowed ? in_op(E, 2).shape->dims[0].size : known(E, 3);
	decl(E, "X", &X, false);
	if (windowed) {
		Operand W = in_op(E, 2);
		decl(E, "W", &W, false);
	}
	decl(E, "Y", &Y, true);
	emitf(E,
	      "\tkiln_f32_stft(%" PRId64 ", %" PRId64 ", %" PRId64 ", X, %" PRId64 ", %s, %" PRId64
	      ", %" PRId64 ", %" PRId64 ", Y);\n",
	      s->dims[0].size, s->dims[1].size, s->dims[2].size, step, windowed ? "W" : "NULL", frame,
	      Y.shape->dims[1].size, Y.shape->dims[2].size);
}

/* w[i] = a0 - a1 cos(2 pi i / D) + a2 cos(4 pi i / D), D = size if
 * periodic, else size - 1 (ONNX's cosine-sum windows, with the exact pi). */
void emit_window(Emit *E)
{
	Operand Y = out_op(E, 0);
	double a0 = 0.5, a1 = 0.5, a2 = 0.0;
	if (E->n->op == OP_HammingWindow)
		a0 = 25.0 / 46.0, a1 = 21.0 / 46.0;
	else if (E->n->op == OP_BlackmanWindow)
		a0 = 0.42, a1 = 0.5, a2 = 0.08;
	int64_t size = Y.nelem;
	Infer inf = emit_infer(E);
	int64_t denom = signal_window_periodic(&inf) ? size : size - 1;
	decl(E, "Y", &Y, true);
	emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++) {\n", size);
	emitf(E, "\t\tconst double t = 6.283185307179586 * (double)i / %" PRId64 ".0;\n", denom);
	emitf(E, "\t\tconst double w = %s - %s * kiln_cos(t)", flit(E, a0, DT_DOUBLE),
	      flit(E, a1, DT_DOUBLE));
	if (a2 != 0)
		emitf(E, " + %s * kiln_cos(2.0 * t)", flit(E, a2, DT_DOUBLE));
	emitf(E, ";\n\t\t%s\n\t}\n", store(E, &Y, "i", "w"));
}

/* Column m is the triangle over the DFT bins b0 <= b1 <= b2 of mel points m,
 * m + 1, m + 2 (kiln_mel_bin): rising from b0 to 1 at b1, falling to b2,
 * as ONNX's reference writes it (the falling edge last). */
void emit_mel_weight_matrix(Emit *E)
{
	Operand SR = in_op(E, 2), L = in_op(E, 3), U = in_op(E, 4), Y = out_op(E, 0);
	int64_t nbins = Y.shape->dims[0].size, nmel = Y.shape->dims[1].size;
	int64_t dft = known(E, 1);
	decl(E, "SR", &SR, false);
	decl(E, "L", &L, false);
	decl(E, "U", &U, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tconst int64_t sample_rate = (int64_t)SR[0];\n");
	emitf(E, "\tconst double lower = %s, upper = %s;\n", scalar(E, &L, "L"), scalar(E, &U, "U"));
	emitf(E, "\tfor (int64_t m = 0; m < %" PRId64 "; m++) {\n", nmel);
	emitf(E, "\t\tint64_t b[3];\n");
	emitf(E, "\t\tfor (int k = 0; k < 3; k++)\n");
	emitf(E,
	      "\t\t\tif (kiln_mel_bin(m + k, %" PRId64 ", %" PRId64
	      ", sample_rate, lower, upper, &b[k]) != KILN_OK)\n",
	      nmel, dft);
	emitf(E, "\t\t\t\treturn KILN_SHAPE_ERROR;\n");
	emitf(E, "\t\tfor (int64_t j = 0; j < %" PRId64 "; j++) {\n", nbins);
	emitf(E, "\t\t\tdouble v = 0;\n");
	emitf(E, "\t\t\tif (j >= b[0] && j <= b[1])\n");
	emitf(E, "\t\t\t\tv = b[1] == b[0] ? 1.0 : (double)(j - b[0]) / (double)(b[1] - b[0]);\n");
	emitf(E, "\t\t\tif (j >= b[1] && j < b[2])\n");
	emitf(E, "\t\t\t\tv = (double)(b[2] - j) / (double)(b[2] - b[1]);\n");
	emitf(E, "\t\t\t%s\n\t\t}\n\t}\n",
	      store(E, &Y, arena_printf(E->a, "j * %" PRId64 " + m", nmel), "v"));
}
