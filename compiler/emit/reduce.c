/*
 * emit/reduce.c - op emitters for the Reduce family, ArgMax/ArgMin, CumSum and TopK.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c.h"

/* ---- reductions ------------------------------------------------------- */

/* Loops over the kept axes (outer) and, inside, the reduced ones: any set of
 * axes, any element type. `init`, `step` and `fini` are statements over
 * `acc` (the accumulator, of type acc_t) and `x` (the element); `fini`
 * assigns `r`. n is the number of reduced elements. */
static void emit_reduce_loops(Emit *E, const Operand *X, const Operand *Y, const bool *red,
                              const char *acc_t, const char *init, const char *step,
                              const char *fini)
{
	int rank = X->shape->rank;
	int64_t st[KILN_MAX_RANK], n = 1, stride = 1;
	for (int k = rank - 1; k >= 0; k--) {
		st[k] = stride;
		stride *= X->shape->dims[k].size;
		if (red[k])
			n *= X->shape->dims[k].size;
	}
	decl(E, "X", X, false);
	decl(E, "Y", Y, true);
	if (Y->nelem == 0)
		return;
	emitf(E, "\tint64_t at = 0;\n");
	char ind[2 * KILN_MAX_RANK + 3] = "\t";
	int depth = 0;
	for (int k = 0; k < rank; k++)
		if (!red[k]) {
			emitf(E, "%sfor (int64_t o%d = 0; o%d < %" PRId64 "; o%d++) {\n", ind, k, k,
			    X->shape->dims[k].size, k);
			ind[++depth] = '\t';
			ind[depth + 1] = 0;
		}
	if (depth == 0) {
		emitf(E, "\t{\n");
		ind[++depth] = '\t';
		ind[depth + 1] = 0;
	}
	int outer_depth = depth;
	emitf(E, "%s%s acc;\n%sconst int64_t n = %" PRId64 ";\n%s(void)n;\n%s%s\n", ind, acc_t, ind, n,
	    ind, ind, init);
	for (int k = 0; k < rank; k++)
		if (red[k]) {
			emitf(E, "%sfor (int64_t o%d = 0; o%d < %" PRId64 "; o%d++) {\n", ind, k, k,
			    X->shape->dims[k].size, k);
			ind[++depth] = '\t';
			ind[depth + 1] = 0;
		}
	emitf(E, "%s%s x = X[0", ind, ctype(X->dtype));
	for (int k = 0; k < rank; k++)
		if (X->shape->dims[k].size > 1)
			emitf(E, " + o%d * %" PRId64, k, st[k]);
	emitf(E, "];\n%s%s\n", ind, step);
	while (depth > outer_depth) {
		ind[depth--] = 0;
		emitf(E, "%s}\n", ind);
	}
	emitf(E, "%s%s r;\n%s%s\n%sY[at++] = r;\n", ind, ctype(Y->dtype), ind, fini, ind);
	while (depth > 0) {
		ind[depth--] = 0;
		emitf(E, "%s}\n", ind);
	}
}

/* The reduced axes of a Reduce* node, read as shape.c read them; false if
 * the node passes its input through (noop_with_empty_axes, for the
 * reductions whose one-element result is the element). */
static bool reduced_axes(Emit *E, bool *red)
{
	Infer inf = emit_infer(E);
	ReduceParams p;
	reduce_params(&inf, &p);
	memcpy(red, p.reduce, KILN_MAX_RANK * sizeof *red);
	if (p.noop) {
		/* Each element reduced alone: the identity, except where the
		 * reduction transforms (|x|, x*x, log), as ONNX Runtime does. */
		int op = E->n->op;
		return op == OP_ReduceL1 || op == OP_ReduceL2 || op == OP_ReduceSumSquare ||
		       op == OP_ReduceLogSum || op == OP_ReduceLogSumExp;
	}
	return true;
}

void emit_reduce(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int rank = X.shape->rank, op = E->n->op, dt = X.dtype;
	bool red[KILN_MAX_RANK];
	if (!reduced_axes(E, red)) {
		emit_copy(E);
		return;
	}
	/* float32 sums and means over one block of axes: the runtime kernel. */
	int first = -1, last = -1;
	bool adjacent = true;
	for (int k = 0; k < rank; k++)
		if (red[k] && X.shape->dims[k].size != 1) {
			if (first < 0)
				first = k;
			last = k;
		}
	for (int k = first; k >= 0 && k <= last; k++)
		adjacent = adjacent && (red[k] || X.shape->dims[k].size == 1);
	if (dt == DT_FLOAT && adjacent && (op == OP_ReduceMean || op == OP_ReduceSum)) {
		int64_t outer = 1, len = 1, inner = 1;
		for (int k = 0; k < rank; k++) {
			int64_t d = X.shape->dims[k].size;
			if (first < 0 || k < first)
				outer *= d;
			else if (k <= last)
				len *= d;
			else
				inner *= d;
		}
		emitf(E, "\tkiln_f32_reduce_%s(%s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ");\n",
		    op == OP_ReduceMean ? "mean" : "sum", X.expr, Y.expr, outer, len, inner);
		return;
	}
	bool extremum = op == OP_ReduceMax || op == OP_ReduceMin;   /* bool too (opset 20) */
	if (dt == DT_FLOAT16 || dt == DT_BFLOAT16 || dt == DT_STRING || (dt == DT_BOOL && !extremum))
		emit_fail(E, "%s on %s is not supported by the code generator yet", E->n->op_type,
		          dtype_name(dt));
	/* Floats accumulate in double, integers in their own type widened. */
	bool fl = is_float(dt);
	const char *acc_t = fl ? "double" : is_unsigned(dt) ? "uint64_t" : "int64_t";
	const char *t = ctype(Y.dtype);
	const char *init = "acc = 0;", *step = "acc += x;";
	const char *fini = arena_printf(E->a, "r = (%s)acc;", t);
	switch (op) {
	case OP_ReduceSum: break;
	case OP_ReduceMean: fini = arena_printf(E->a, "r = (%s)(acc / n);", t); break;
	case OP_ReduceProd: init = "acc = 1;"; step = "acc *= x;"; break;
	case OP_ReduceSumSquare: step = "acc += (double)x * x;"; break;
	case OP_ReduceL1:
		step = fl ? "acc += fabs((double)x);" : is_unsigned(dt) ? "acc += x;" : "acc += x < 0 ? -x : x;";
		break;
	case OP_ReduceL2:
		step = "acc += (double)x * x;";
		fini = arena_printf(E->a, "r = (%s)sqrt((double)acc);", t);
		break;
	case OP_ReduceLogSum: fini = arena_printf(E->a, "r = (%s)kiln_log((double)acc);", t); break;
	case OP_ReduceLogSumExp:
		/* As the ONNX definition: log(sum(exp(x))), in double. */
		acc_t = "double";
		step = "acc += kiln_exp((double)x);";
		fini = arena_printf(E->a, "r = (%s)kiln_log(acc);", t);
		break;
	case OP_ReduceMax: case OP_ReduceMin: {
		if (dt == DT_BOOL) {
			/* any and all; an empty reduction gives false and true, the
			 * type's least and greatest values, as ONNX says */
			acc_t = "int";
			init = op == OP_ReduceMax ? "acc = 0;" : "acc = 1;";
			step = op == OP_ReduceMax ? "acc = acc || x;" : "acc = acc && x;";
			break;
		}
		const char *cmp = op == OP_ReduceMax ? ">" : "<";
		acc_t = fl ? "double" : ctype(dt);
		init = fl ? (op == OP_ReduceMax ? "acc = -(double)INFINITY;" : "acc = (double)INFINITY;")
		          : "acc = 0; int first = 1;";
		if (fl)
			step = arena_printf(E->a, "if (x != x || x %s acc) acc = x;", cmp);
		else
			step = arena_printf(E->a, "acc = first || x %s acc ? x : acc; first = 0;", cmp);
		break;
	}
	default:
		emit_fail(E, "no code generator for this op yet");
	}
	emit_reduce_loops(E, &X, &Y, red, acc_t, init, step, fini);
}

/* ArgMax/ArgMin along one axis: the first (or, with select_last_index, the
 * last) position of the extreme value, as int64. */
void emit_argext(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	if (X.dtype == DT_FLOAT16 || X.dtype == DT_BFLOAT16)
		emit_fail(E, "%s on %s is not supported by the code generator yet", E->n->op_type,
		          dtype_name(X.dtype));
	Infer inf = emit_infer(E);
	ReduceParams rp;
	reduce_params(&inf, &rp);
	bool red[KILN_MAX_RANK] = {0};
	red[rp.axis] = true;
	bool last = rp.select_last_index;
	const char *cmp = E->n->op == OP_ArgMax ? (last ? ">=" : ">") : (last ? "<=" : "<");
	const char *step = arena_printf(E->a, "if (i == 0 || x %s best) { best = x; acc = i; } i++;",
	                                cmp);
	const char *init = arena_printf(E->a, "acc = 0; int64_t i = 0; %s best = 0;", ctype(X.dtype));
	emit_reduce_loops(E, &X, &Y, red, "int64_t", init, step, "r = acc;");
}


void emit_cumsum(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_not_half(E, &X);
	int rank = X.shape->rank;
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	int64_t n;
	const int64_t *ax = infer_require_ints(&inf, 1, &n);
	if (n != 1)
		emit_fail(E, "axis must be a single value");
	int axis = norm_axis(ax[0], rank);
	ReduceParams rp;
	reduce_params(&inf, &rp);
	bool excl = rp.exclusive, rev = rp.reverse;
	int64_t outer, inner;
	around_axis(X.shape, axis, &outer, &inner);
	int64_t len = X.shape->dims[axis].size;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n\t\tfor (int64_t i = 0; i < %" PRId64
	       "; i++) {\n\t\t\t%s acc = 0;\n"
	       "\t\t\tfor (int64_t s = 0; s < %" PRId64 "; s++) {\n"
	       "\t\t\t\tint64_t a = %s, at = (o * %" PRId64 " + a) * %" PRId64 " + i;\n"
	       "\t\t\t\t%s x = X[at];\n%s"
	       "\t\t\t}\n\t\t}\n",
	    outer, inner, is_float(X.dtype) ? "double" : ctype(X.dtype), len,
	    rev ? arena_printf(E->a, "%" PRId64 " - s", len - 1) : "s", len, inner, ctype(X.dtype),
	    excl ? arena_printf(E->a, "\t\t\t\tY[at] = (%s)acc;\n\t\t\t\tacc += x;\n", ctype(X.dtype))
	         : arena_printf(E->a, "\t\t\t\tacc += x;\n\t\t\t\tY[at] = (%s)acc;\n", ctype(X.dtype)));
}


/* TopK by selection: for each line, K passes each taking the best remaining
 * element; ties go to the lower index, as ONNX specifies. */
void emit_topk(Emit *E)
{
	Operand X = in_op(E, 0), V = out_op(E, 0), I = out_op(E, 1);
	require_not_half(E, &X);
	Infer inf = emit_infer(E);
	ReduceParams rp;
	reduce_params(&inf, &rp);
	int axis = rp.axis;
	bool largest = rp.largest;
	int64_t outer, inner, len = X.shape->dims[axis].size, k = V.shape->dims[axis].size;
	around_axis(X.shape, axis, &outer, &inner);
	decl(E, "X", &X, false);
	decl(E, "V", &V, true);
	emitf(E, "\tint64_t *I = %s;\n", I.expr);
	if (k == 0)
		return;
	/* One pass over each line keeping the k best so far in V and I, in order:
	 * an element no better than the worst kept costs one compare (k is
	 * usually much smaller than the axis: the kNN of ParticleNet), a better
	 * one is inserted, the worst dropping out. Equal values keep the smaller
	 * index first (it came earlier and a newcomer only passes strictly worse
	 * ones), as ONNX's sorted TopK asks; a NaN is never better than anything. */
	const char *better = largest ? ">" : "<";
	emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n\t\tfor (int64_t i = 0; i < %" PRId64
	       "; i++) {\n", outer, inner);
	emitf(E, "\t\t\tconst %s *x = X + o * %" PRId64 " + i;\n", ctype(X.dtype), len * inner);
	emitf(E, "\t\t\t%s *v = V + o * %" PRId64 " + i;\n\t\t\tint64_t *ix = I + o * %" PRId64
	       " + i, kept = 0;\n", ctype(X.dtype), k * inner, k * inner);
	emitf(E, "\t\t\tfor (int64_t a = 0; a < %" PRId64 "; a++) {\n", len);
	emitf(E, "\t\t\t\tconst %s xa = x[a * %" PRId64 "];\n", ctype(X.dtype), inner);
	emitf(E, "\t\t\t\tif (kept == %" PRId64 " && !(xa %s v[%" PRId64 "]))\n\t\t\t\t\tcontinue;\n",
	    k, better, (k - 1) * inner);
	emitf(E, "\t\t\t\tint64_t p = kept < %" PRId64 " ? kept++ : %" PRId64 ";\n", k, k - 1);
	emitf(E, "\t\t\t\tfor (; p > 0 && xa %s v[(p - 1) * %" PRId64 "]; p--) {\n"
	       "\t\t\t\t\tv[p * %" PRId64 "] = v[(p - 1) * %" PRId64 "];\n"
	       "\t\t\t\t\tix[p * %" PRId64 "] = ix[(p - 1) * %" PRId64 "];\n\t\t\t\t}\n",
	    better, inner, inner, inner, inner, inner);
	emitf(E, "\t\t\t\tv[p * %" PRId64 "] = xa;\n\t\t\t\tix[p * %" PRId64 "] = a;\n\t\t\t}\n"
	       "\t\t}\n", inner, inner);
}

