/*
 * emit/misc.c - op emitters for Det, MeanVarianceNormalization, LpNormalization
 * and ReverseSequence (inference in ops/misc.c). LpNormalization is one call
 * of its float32 kernel.
 *
 * Det and MeanVarianceNormalization compute in double whatever the element
 * type: elements are widened on load and rounded once on store, so float16
 * and bfloat16 work like float32. ReverseSequence only moves elements, so it
 * copies bytes of any type.
 */
#include <inttypes.h>

#include "emit_c.h"

/* An element (a C expression of the operand's type) as a double. */
static const char *load_double(Emit *E, int dt, const char *elem)
{
	switch (dt) {
	case DT_FLOAT16: return arena_printf(E->a, "(double)kiln_f16_to_f32(%s)", elem);
	case DT_BFLOAT16: return arena_printf(E->a, "(double)kiln_bf16_to_f32(%s)", elem);
	case DT_FLOAT: return arena_printf(E->a, "(double)%s", elem);
	case DT_DOUBLE: return elem;
	}
	emit_fail(E, "%s on %s is not supported by the code generator yet", E->n->op_type,
	          dtype_name(dt));
}

/* A double value stored as an element of dt. The 16-bit types round
 * through float32: exact except for ties created by that first rounding. */
static const char *store_double(Emit *E, int dt, const char *v)
{
	switch (dt) {
	case DT_FLOAT16: return arena_printf(E->a, "kiln_f32_to_f16((float)(%s))", v);
	case DT_BFLOAT16: return arena_printf(E->a, "kiln_f32_to_bf16((float)(%s))", v);
	case DT_FLOAT: return arena_printf(E->a, "(float)(%s)", v);
	case DT_DOUBLE: return v;
	}
	emit_fail(E, "%s on %s is not supported by the code generator yet", E->n->op_type,
	          dtype_name(dt));
}

/* Matrices up to this size are factored in a local array on the stack
 * (64 x 64 doubles: 32 KiB). */
enum { DET_MAX_N = 64 };

void emit_det(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int rank = X.shape->rank;
	int64_t n = X.shape->dims[rank - 1].size, batch = Y.nelem;
	if (n > DET_MAX_N)
		emit_fail(E, "Det of %" PRId64 "x%" PRId64 " matrices is not supported yet (at most "
		          "%dx%d)", n, n, DET_MAX_N, DET_MAX_N);
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	/* A zero-size matrix has determinant 1 and no elements to read. */
	emitf(E, "\tfor (int64_t b = 0; b < %" PRId64 "; b++) {\n", batch);
	emitf(E, "\t\tdouble m[%" PRId64 "];\n", n ? n * n : 1);
	if (n)
		emitf(E, "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\t\tm[i] = %s;\n", n * n,
		    load_double(E, X.dtype, arena_printf(E->a, "X[b * %" PRId64 " + i]", n * n)));
	emitf(E, "\t\tY[b] = %s;\n\t}\n",
	    store_double(E, Y.dtype, arena_printf(E->a, "kiln_f64_det(m, %" PRId64 ")", n)));
}

/* Open loops over the axes of s in mask (index variables <p>0, <p>1, ...
 * named by axis); returns the body's indent. */
static const char *open_axes(Emit *E, const Shape *s, unsigned mask, char p, const char *indent)
{
	char *ind = arena_printf(E->a, "%s", indent);
	for (int k = 0; k < s->rank; k++) {
		if (!(mask & (1u << k)))
			continue;
		emitf(E, "%sfor (int64_t %c%d = 0; %c%d < %" PRId64 "; %c%d++)\n", ind, p, k, p, k,
		    s->dims[k].size, p, k);
		ind = arena_printf(E->a, "%s\t", ind);
	}
	return ind;
}

/* "o0 * s0 + r1 * s1 + ...": axes in mask use r, the others o. */
static const char *mvn_index(Emit *E, const Shape *s, unsigned mask)
{
	char *e = arena_strdup(E->a, "0");
	int64_t st = 1;
	for (int k = s->rank - 1; k >= 0; k--) {
		if (s->dims[k].size != 1)
			e = arena_printf(E->a, "%s + %c%d * %" PRId64, e, mask & (1u << k) ? 'r' : 'o', k, st);
		st *= s->dims[k].size;
	}
	return e;
}

/* MeanVarianceNormalization: Y = (X - mean) / (std + 1e-9) over the axes,
 * std the population standard deviation, as ONNX's function body. The
 * variance is the mean squared deviation (two passes), equal to the body's
 * E[X^2] - E[X]^2 but never negative. */
void emit_mvn(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	const Shape *s = X.shape;
	Infer inf = emit_infer(E);
	unsigned red = misc_mvn_axes(&inf, s->rank);
	unsigned kept = ((1u << s->rank) - 1) & ~red;
	int64_t count = 1;
	for (int k = 0; k < s->rank; k++)
		if (red & (1u << k))
			count *= s->dims[k].size;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	const char *at = mvn_index(E, s, red);
	const char *x = load_double(E, X.dtype, arena_printf(E->a, "X[%s]", at));
	const char *ind = open_axes(E, s, kept, 'o', "\t");
	emitf(E, "%s{\n", ind);
	const char *body = arena_printf(E->a, "%s\t", ind);
	emitf(E, "%sdouble sum = 0, sq = 0;\n", body);
	const char *in = open_axes(E, s, red, 'r', body);
	emitf(E, "%ssum += %s;\n", in, x);
	emitf(E, "%sconst double mean = sum / %" PRId64 ";\n", body, count);
	in = open_axes(E, s, red, 'r', body);
	emitf(E, "%s{\n%s\tconst double d = %s - mean;\n%s\tsq += d * d;\n%s}\n", in, in, x, in, in);
	emitf(E, "%sconst double den = sqrt(sq / %" PRId64 ") + %s;\n", body, count,
	    flit(E, (double)1e-9f, DT_DOUBLE));
	in = open_axes(E, s, red, 'r', body);
	emitf(E, "%sY[%s] = %s;\n", in, at, store_double(E, Y.dtype, arena_printf(E->a, "(%s - mean) / den", x)));
	emitf(E, "%s}\n", ind);
}

/* LpNormalization: one call of the float32 kernel (f32-lpnorm/ref.c). */
void emit_lpnorm(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	if (X.dtype != DT_DOUBLE)
		require_f32(E, &X);
	Infer inf = emit_infer(E);
	LpNorm p;
	misc_lpnorm_params(&inf, &p);
	if (X.dtype == DT_DOUBLE) {
		/* As the float32 kernel: the norm of each line, then each element
		 * divided by it (a zero norm gives zeros). */
		decl(E, "X", &X, false);
		decl(E, "Y", &Y, true);
		emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n"
		       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++) {\n"
		       "\t\t\tconst int64_t at = o * %" PRId64 " + i;\n\t\t\tdouble norm = 0;\n"
		       "\t\t\tfor (int64_t j = 0; j < %" PRId64 "; j++)\n\t\t\t\tnorm += %s;\n",
		    p.outer, p.inner, p.len * p.inner, p.len,
		    p.p == 1 ? arena_printf(E->a, "fabs(X[at + j * %" PRId64 "])", p.inner)
		             : arena_printf(E->a, "X[at + j * %" PRId64 "] * X[at + j * %" PRId64 "]",
		                            p.inner, p.inner));
		emitf(E, "%s\t\t\tfor (int64_t j = 0; j < %" PRId64 "; j++)\n"
		       "\t\t\t\tY[at + j * %" PRId64 "] = norm == 0 ? 0 : X[at + j * %" PRId64 "] / norm;\n"
		       "\t\t}\n", p.p == 1 ? "" : "\t\t\tnorm = sqrt(norm);\n", p.len, p.inner, p.inner);
		return;
	}
	emitf(E, "\tkiln_f32_lpnorm(%s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %d);\n", X.expr,
	    Y.expr, p.outer, p.len, p.inner, p.p);
}

/* Row (b, t) of ReverseSequence's [B, T, inner] or [T, B, inner] view. */
static const char *seq_row(Emit *E, int batch_axis, int64_t nb, int64_t nt, const char *t)
{
	return batch_axis == 0 ? arena_printf(E->a, "(b * %" PRId64 " + %s)", nt, t)
	                       : arena_printf(E->a, "(%s * %" PRId64 " + b)", t, nb);
}

/* ReverseSequence: per batch entry b, the first sequence_lens[b] steps along
 * the time axis are reversed and the rest copied. A length outside
 * [0, time] is refused at run time with KILN_SHAPE_ERROR, before writing. */
void emit_reverse_sequence(Emit *E)
{
	Operand X = in_op(E, 0), L = in_op(E, 1), Y = out_op(E, 0);
	const Shape *s = X.shape;
	Infer inf = emit_infer(E);
	int batch_axis = misc_reverse_sequence_batch_axis(&inf);
	int64_t nb = s->dims[batch_axis].size, nt = s->dims[1 - batch_axis].size, inner = 1;
	for (int k = 2; k < s->rank; k++)
		inner *= s->dims[k].size;
	decl(E, "X", &X, false);
	decl(E, "L", &L, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tfor (int64_t b = 0; b < %" PRId64 "; b++)\n"
	       "\t\tif (L[b] < 0 || L[b] > %" PRId64 ")\n\t\t\treturn KILN_SHAPE_ERROR;\n", nb, nt);
	emitf(E, "\tfor (int64_t b = 0; b < %" PRId64 "; b++)\n"
	       "\t\tfor (int64_t t = 0; t < %" PRId64 "; t++) {\n"
	       "\t\t\tconst int64_t from = t < L[b] ? L[b] - 1 - t : t;\n", nb, nt);
	emitf(E, "\t\t\tmemcpy(Y + %s * %" PRId64 ", X + %s * %" PRId64 ", %" PRId64
	       " * sizeof *Y);\n\t\t}\n", seq_row(E, batch_axis, nb, nt, "t"), inner,
	    seq_row(E, batch_axis, nb, nt, "from"), inner, inner);
}
