/*
 * emit/tensor.c - op emitters for data movement and generators: copies, Transpose, Concat, Split, Gather*, Slice, Tile, Pad, Scatter*, Range, ....
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c.h"

/* ---- data movement ---------------------------------------------------- */

void emit_copy(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tmemcpy(Y, X, %" PRIu64 ");\n", dtype_bytes(Y.dtype, Y.nelem));
}

/* Dropout in inference: a copy (none when the plan made the output a view
 * of the input) and a mask of ones. */
void emit_dropout(Emit *E)
{
	int y = E->n->out[0];
	if (E->plan->root[y] == y) /* the output is the caller's: copy */
		emit_copy(E);
	if (E->n->nout > 1 && E->n->out[1] != NONE) {
		Operand M = out_op(E, 1);
		emitf(E, "\tmemset(%s, 1, %" PRId64 "); /* inference: every element kept */\n", M.expr,
		    M.nelem);
	}
}

/* Ops whose inference always folds their outputs (Shape, Size, Constant, and
 * NonZero, Unique, NonMaxSuppression of known inputs): no code runs. */
void emit_folded_only(Emit *E)
{
	emit_fail(E, "its outputs must be known at compile time");
}

/* Expand: input 0 broadcast to the output's shape. */
void emit_expand(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	emit_map(E, &Y, &X, 1, "x0");
}

void emit_transpose(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int rank = X.shape->rank;
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	const int64_t *perm = tp.perm;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	/* A small float32 transpose that is one swap of two axes once the
	 * axes of size 1 are dropped (DeepJet's [1, 25, 16] -> [1, 16, 25] and
	 * [1, 8, 25] -> [25, 1, 8]): an inline loop over Y[a, b] = X[b, a],
	 * without the kernel's setup (kiln_transpose took ~0.25 us for 400
	 * floats, most of it outside the copy). */
	int64_t sd[2] = {0, 0}, ss[2] = {0, 0}, st[KILN_MAX_RANK];
	int ns = 0;
	bool small = X.dtype == DT_FLOAT && X.nelem > 0 && X.nelem <= 4096;
	for (int k = rank - 1; small && k >= 0; k--)
		st[k] = k == rank - 1 ? 1 : st[k + 1] * X.shape->dims[k + 1].size;
	for (int k = 0; small && k < rank; k++) {
		int64_t d = X.shape->dims[perm[k]].size;
		if (d == 1)
			continue;
		if (ns == 2) {
			small = false;
			break;
		}
		sd[ns] = d;
		ss[ns++] = st[perm[k]];
	}
	if (small && ns == 2 && ss[0] == 1 && ss[1] == sd[0]) {
		emitf(E, "\t/* Y [%" PRId64 ", %" PRId64 "] = X [%" PRId64 ", %" PRId64 "] transposed */\n"
		         "\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n"
		         "\t\tfor (int64_t j = 0; j < %" PRId64 "; j++)\n"
		         "\t\t\tY[i * %" PRId64 " + j] = X[j * %" PRId64 " + i];\n",
		      sd[0], sd[1], sd[1], sd[0], sd[0], sd[1], sd[1], sd[0]);
		return;
	}
	emitf(E, "\tstatic const int64_t dims[] = {");
	for (int k = 0; k < rank; k++)
		emitf(E, "%s%" PRId64, k ? ", " : "", X.shape->dims[k].size);
	emitf(E, "%s};\n\tstatic const int perm[] = {", rank ? "" : "0");
	for (int k = 0; k < rank; k++)
		emitf(E, "%s%" PRId64, k ? ", " : "", perm[k]);
	emitf(E, "%s};\n", rank ? "" : "0");
	if (!DT_IS_4BIT(X.dtype)) {
		emitf(E, "\tkiln_transpose(X, Y, %zu, %d, dims, perm);\n", dtype_size(X.dtype), rank);
		return;
	}
	/* int4/uint4 (opset 21): output elements in order, each read from its
	 * nibble of the input; st[] the input strides. */
	emitf(E, "\tint64_t st[%d];\n\tst[%d] = 1;\n", rank ? rank : 1, rank ? rank - 1 : 0);
	emitf(E, "\tfor (int k = %d; k >= 0; k--)\n\t\tst[k] = st[k + 1] * dims[k + 1];\n",
	      rank - 2);
	emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++) {\n"
	       "\t\tint64_t r = o, at = 0;\n"
	       "\t\tfor (int k = %d; k >= 0; k--) {\n"
	       "\t\t\tat += r %% dims[perm[k]] * st[perm[k]];\n"
	       "\t\t\tr /= dims[perm[k]];\n\t\t}\n"
	       "\t\tkiln_4_put(Y, o, kiln_u4_get(X, at));\n\t}\n", Y.nelem, rank - 1);
}


/* Concat and Split: rows of [outer, axis*inner] copied piecewise. A Concat
 * of short rows (at most CONCAT_ONE_PASS bytes, e.g. index tuples built as
 * [..., k] from k components) copies every piece of a row before the next
 * row: the output is written in one pass instead of one per input, each of
 * which would read and write all of it again for a few bytes per row. */
enum { CONCAT_ONE_PASS = 1024 };

void emit_concat(Emit *E)
{
	Operand Y = out_op(E, 0);
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	int axis = tp.axis;
	int64_t outer, inner;
	around_axis(Y.shape, axis, &outer, &inner);
	size_t es = dtype_size(Y.dtype);
	int64_t row = Y.shape->dims[axis].size * inner * (int64_t)es, at = 0;
	bool one_pass = outer > 1 && row <= CONCAT_ONE_PASS;
	decl(E, "Y", &Y, true);
	emitf(E, "\tunsigned char *y = (unsigned char *)Y;\n");
	if (one_pass)
		emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++) {\n", outer);
	for (int i = 0; i < E->n->nin; i++) {
		Operand X = in_op(E, i);
		int64_t piece = X.shape->dims[axis].size * inner * (int64_t)es;
		if (piece == 0)
			continue;
		if (one_pass)
			emitf(E, "\t\tmemcpy(y + o * %" PRId64 " + %" PRId64 ", (const unsigned char *)%s"
			       " + o * %" PRId64 ", %" PRId64 ");\n", row, at, X.expr, piece, piece);
		else
			emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n\t\tmemcpy(y + o * %" PRId64
			       " + %" PRId64 ", (const unsigned char *)%s + o * %" PRId64 ", %" PRId64 ");\n",
			    outer, row, at, X.expr, piece, piece);
		at += piece;
	}
	if (one_pass)
		emitf(E, "\t}\n");
}

void emit_split(Emit *E)
{
	Operand X = in_op(E, 0);
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	int axis = tp.axis;
	int64_t outer, inner;
	around_axis(X.shape, axis, &outer, &inner);
	size_t es = dtype_size(X.dtype);
	int64_t row = X.shape->dims[axis].size * inner * (int64_t)es, at = 0;
	decl(E, "X", &X, false);
	emitf(E, "\tconst unsigned char *x = (const unsigned char *)X;\n");
	for (int i = 0; i < E->n->nout; i++) {
		if (E->n->out[i] == NONE)
			continue;
		Operand Y = out_op(E, i);
		int64_t piece = Y.shape->dims[axis].size * inner * (int64_t)es;
		if (piece)
			emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n\t\tmemcpy((unsigned char *)%s"
			       " + o * %" PRId64 ", x + o * %" PRId64 " + %" PRId64 ", %" PRId64 ");\n",
			    outer, Y.expr, piece, row, at, piece);
		at += piece;
	}
}

void emit_gather(Emit *E)
{
	Operand D = in_op(E, 0), I = in_op(E, 1), Y = out_op(E, 0);
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	int axis = tp.axis;
	int64_t outer, inner;
	around_axis(D.shape, axis, &outer, &inner);
	emitf(E, "\treturn kiln_gather%s(%s, %s, %s, %zu, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
	       ");\n", I.dtype == DT_INT32 ? "_i32" : "", D.expr, I.expr, Y.expr, dtype_size(D.dtype),
	    outer, D.shape->dims[axis].size, inner, I.nelem);
}

/* Slice as a strided gather: nested loops over the output. */
void emit_slice(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int rank = X.shape->rank;
	/* Recover begin and step per axis from the inferred output (shape.c
	 * already validated them); re-derive with the same rules. */
	int64_t begin[KILN_MAX_RANK] = {0}, step[KILN_MAX_RANK];
	for (int k = 0; k < rank; k++)
		step[k] = 1;
	int64_t starts[KILN_MAX_RANK], ends[KILN_MAX_RANK], axes[KILN_MAX_RANK], steps[KILN_MAX_RANK];
	int64_t n = 0, na = -1, ns = -1;
	Infer x = emit_infer(E);
	if (E->n->since < 10) {
		TensorParams tp;
		tensor_params(&x, &tp);
		n = tp.nstarts, na = tp.naxes;
		memcpy(starts, tp.starts, sizeof starts);
		memcpy(ends, tp.ends, sizeof ends);
		memcpy(axes, tp.axes, sizeof axes);
	} else {
		int64_t cnt;
		const int64_t *v = infer_require_ints(&x, 1, &n);
		memcpy(starts, v, (size_t)n * 8);
		v = infer_require_ints(&x, 2, &cnt);
		memcpy(ends, v, (size_t)cnt * 8);
		if (infer_has_input(&x, 3)) {
			v = infer_require_ints(&x, 3, &na);
			memcpy(axes, v, (size_t)na * 8);
		}
		if (infer_has_input(&x, 4)) {
			v = infer_require_ints(&x, 4, &ns);
			memcpy(steps, v, (size_t)ns * 8);
		}
	}
	for (int i = 0; i < n; i++) {
		int a = norm_axis(na >= 0 ? axes[i] : i, rank);
		int64_t dim = X.shape->dims[a].size, st = ns >= 0 ? steps[i] : 1, s = starts[i];
		if (s < 0)
			s = s < -dim ? 0 : s + dim;
		s = st > 0 ? (s > dim ? dim : s) : (s > dim - 1 ? dim - 1 : s);
		begin[a] = s;
		/* One element taken: the step does not matter, and may be INT64_MIN. */
		step[a] = Y.shape->dims[a].size > 1 ? st : 1;
	}
	int64_t xs[KILN_MAX_RANK], acc = 1;
	for (int k = rank - 1; k >= 0; k--) {
		xs[k] = acc;
		acc *= X.shape->dims[k].size;
	}
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	if (Y.nelem == 0)
		return;
	int64_t base = 0;
	for (int k = 0; k < rank; k++)
		base += begin[k] * xs[k];
	emitf(E, "\tint64_t at = 0;\n");
	char indent[16] = "\t";
	for (int k = 0; k < rank; k++) {
		emitf(E, "%sfor (int64_t i%d = 0; i%d < %" PRId64 "; i%d++)\n", indent, k, k,
		    Y.shape->dims[k].size, k);
		size_t len = strlen(indent);
		indent[len] = '\t';
		indent[len + 1] = 0;
	}
	emitf(E, "%sY[at++] = X[%" PRId64, indent, base);
	for (int k = 0; k < rank; k++)
		emitf(E, " + i%d * %" PRId64, k, step[k] * xs[k]);
	emitf(E, "];\n");
}


/* ---- generators ------------------------------------------------------- */

/* ConstantOfShape too large to fold: fill with the value. */
void emit_constant_of_shape(Emit *E)
{
	Operand Y = out_op(E, 0);
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	const Tensor *v = tp.value;
	decl(E, "Y", &Y, true);
	if (!v) {
		emitf(E, "\tmemset(Y, 0, %" PRId64 ");\n", Y.nelem * (int64_t)dtype_size(Y.dtype));
		return;
	}
	int s = symbol_for(E, v->dtype, v->w.bytes, dtype_size(Y.dtype),
	                   "constant_of_shape_value");
	emitf(E, "\tconst %s value = ((const %s *)%s)[0];\n", ctype(Y.dtype), ctype(Y.dtype),
	    E->syms[s].name);
	emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\tY[i] = value;\n", Y.nelem);
}

/* Range not folded (floats, or large): y[i] = start + i * delta, as ONNX. */
void emit_range(Emit *E)
{
	Operand S = in_op(E, 0), D = in_op(E, 2), Y = out_op(E, 0);
	decl(E, "Y", &Y, true);
	emitf(E, "\tconst %s start = (%s)[0], delta = (%s)[0];\n", ctype(Y.dtype), S.expr, D.expr);
	emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\tY[i] = (%s)(start + (%s)i * delta);\n",
	    Y.nelem, ctype(Y.dtype), ctype(Y.dtype));
}


void emit_gather_elements(Emit *E)
{
	Operand D = in_op(E, 0), I = in_op(E, 1), Y = out_op(E, 0);
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	int axis = tp.axis;
	int64_t len = D.shape->dims[axis].size;
	decl(E, "D", &D, false);
	decl(E, "I", &I, false);
	decl(E, "Y", &Y, true);
	/* Check every index first: nothing is written if one is out of range. */
	emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n"
	       "\t\tif (I[i] < -%" PRId64 " || I[i] >= %" PRId64 ")\n\t\t\treturn KILN_SHAPE_ERROR;\n",
	    I.nelem, len, len);
	const char *ind = open_loops(E, I.shape);
	emitf(E, "%sint64_t j = I[%s];\n%sif (j < 0)\n%s\tj += %" PRId64 ";\n", ind,
	    linear_index(E, I.shape, -1, NULL), ind, ind, len);
	emitf(E, "%sY[%s] = D[%s];\n", ind, linear_index(E, I.shape, -1, NULL), linear_index(E, D.shape, axis, "j"));
	close_loops(E, I.shape);
}

void emit_tile(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	if (Y.nelem == 0)
		return;
	const char *ind = open_loops(E, Y.shape);
	char *src = arena_strdup(E->a, "0");
	int64_t st = 1;
	for (int k = X.shape->rank - 1; k >= 0; k--) {
		if (X.shape->dims[k].size != 1)
			src = arena_printf(E->a, "%s + (o%d %% %" PRId64 ") * %" PRId64, src, k,
			                   X.shape->dims[k].size, st);
		st *= X.shape->dims[k].size;
	}
	emitf(E, "%sY[%s] = X[%s];\n", ind, linear_index(E, Y.shape, -1, NULL), src);
	close_loops(E, Y.shape);
}

void emit_pad(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int rank = X.shape->rank;
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	int64_t pads[2 * KILN_MAX_RANK];
	pad_amounts(&inf, rank, pads);
	const char *mode = tp.pad_mode;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	if (strcmp(mode, "constant") == 0) {
		if (E->n->since < 11)
			emitf(E, "\tconst %s value = (%s)%s;\n", ctype(Y.dtype), ctype(Y.dtype),
			    flit(E, (double)tp.pad_value, DT_DOUBLE));
		else if (E->n->nin > 2 && E->n->in[2] != NONE)
			emitf(E, "\tconst %s value = (%s)[0];\n", ctype(Y.dtype), in_op(E, 2).expr);
		else
			emitf(E, "\tconst %s value = 0;\n", ctype(Y.dtype));
	}
	if (Y.nelem == 0)
		return;
	const char *ind = open_loops(E, Y.shape);
	emitf(E, "%sint64_t at = 0;\n%sint ok = 1;\n%s(void)ok;\n", ind, ind, ind);
	int64_t st = 1, xs[KILN_MAX_RANK];
	for (int k = rank - 1; k >= 0; k--) {
		xs[k] = st;
		st *= X.shape->dims[k].size;
	}
	for (int k = 0; k < rank; k++) {
		int64_t len = X.shape->dims[k].size;
		emitf(E, "%s{\n%s\tint64_t c = o%d - %" PRId64 ";\n", ind, ind, k, pads[k]);
		if (strcmp(mode, "constant") == 0)
			emitf(E, "%s\tif (c < 0 || c >= %" PRId64 ") ok = 0;\n", ind, len);
		else if (strcmp(mode, "edge") == 0)
			emitf(E, "%s\tc = c < 0 ? 0 : c >= %" PRId64 " ? %" PRId64 " : c;\n", ind, len, len - 1);
		else if (strcmp(mode, "wrap") == 0) /* Pad-19: the other end's elements */
			emitf(E, "%s\tc = ((c %% %" PRId64 ") + %" PRId64 ") %% %" PRId64 ";\n", ind, len, len,
			      len);
		else /* reflect, without repeating the edge */
			emitf(E, "%s\twhile (c < 0 || c >= %" PRId64 ")\n%s\t\tc = c < 0 ? -c : 2 * %" PRId64
			       " - c;\n", ind, len, ind, len - 1);
		emitf(E, "%s\tat += c * %" PRId64 ";\n%s}\n", ind, xs[k], ind);
	}
	emitf(E, "%sY[%s] = %s;\n", ind, linear_index(E, Y.shape, -1, NULL),
	    strcmp(mode, "constant") == 0 ? "ok ? X[at] : value" : "X[at]");
	close_loops(E, Y.shape);
}

/* Trilu: keep the upper (j - i >= k) or lower (j - i <= k) triangle of the
 * last two axes; zero the rest. */
void emit_trilu(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int r = X.shape->rank;
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	bool upper = tp.upper;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	if (E->n->nin > 1 && E->n->in[1] != NONE)
		emitf(E, "\tconst int64_t k = (%s)[0];\n", in_op(E, 1).expr);
	else
		emitf(E, "\tconst int64_t k = 0;\n");
	if (Y.nelem == 0)
		return;
	const char *ind = open_loops(E, Y.shape);
	const char *at = linear_index(E, Y.shape, -1, NULL);
	emitf(E, "%sY[%s] = o%d - o%d %s k ? X[%s] : 0;\n", ind, at, r - 1, r - 2, upper ? ">=" : "<=", at);
	close_loops(E, Y.shape);
}


/* DepthToSpace (DCR or CRD) and SpaceToDepth: pure index maps over NCHW. */
void emit_depth_space(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	int64_t b = tp.blocksize;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	bool to_space = E->n->op == OP_DepthToSpace;
	bool crd = tp.crd;
	/* Loop over the space-side tensor (Y for DepthToSpace, X for SpaceToDepth). */
	const Shape *sp = to_space ? Y.shape : X.shape, *dp = to_space ? X.shape : Y.shape;
	int64_t C = sp->dims[1].size, H = sp->dims[2].size, W = sp->dims[3].size;
	int64_t dC = dp->dims[1].size, dH = dp->dims[2].size, dW = dp->dims[3].size;
	emitf(E, "\tfor (int64_t n = 0; n < %" PRId64 "; n++)\n\tfor (int64_t c = 0; c < %" PRId64
	       "; c++)\n\tfor (int64_t h = 0; h < %" PRId64 "; h++)\n\tfor (int64_t w = 0; w < %" PRId64
	       "; w++) {\n", sp->dims[0].size, C, H, W);
	emitf(E, "\t\tconst int64_t i = h %% %" PRId64 ", j = w %% %" PRId64 ";\n", b, b);
	emitf(E, "\t\tconst int64_t dc = %s;\n",
	    crd ? arena_printf(E->a, "(c * %" PRId64 " + i) * %" PRId64 " + j", b, b)
	        : arena_printf(E->a, "(i * %" PRId64 " + j) * %" PRId64 " + c", b, C));
	const char *space = arena_printf(E->a, "((n * %" PRId64 " + c) * %" PRId64 " + h) * %" PRId64 " + w", C, H, W);
	const char *depth = arena_printf(E->a, "((n * %" PRId64 " + dc) * %" PRId64 " + h / %" PRId64
	                                 ") * %" PRId64 " + w / %" PRId64, dC, dH, b, dW, b);
	emitf(E, "\t\t%s;\n\t}\n", to_space ? arena_printf(E->a, "Y[%s] = X[%s]", space, depth)
	                                     : arena_printf(E->a, "Y[%s] = X[%s]", depth, space));
}

void emit_one_hot(Emit *E)
{
	Operand I = in_op(E, 0), V = in_op(E, 2), Y = out_op(E, 0);
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	int axis = tp.axis;
	int64_t depth = Y.shape->dims[axis].size;
	decl(E, "I", &I, false);
	decl(E, "V", &V, false);
	decl(E, "Y", &Y, true);
	const char *ind = open_loops(E, Y.shape);
	/* the index position: the output's coordinates without the depth axis */
	char *at = arena_strdup(E->a, "0");
	int64_t st = 1;
	for (int k = Y.shape->rank - 1; k >= 0; k--)
		if (k != axis) {
			at = arena_printf(E->a, "%s + o%d * %" PRId64, at, k, st);
			st *= Y.shape->dims[k].size;
		}
	/* 16-bit float indices are bit patterns: widened to float first */
	const char *widen = I.dtype == DT_FLOAT16 ? "kiln_f16_to_f32" : I.dtype == DT_BFLOAT16 ? "kiln_bf16_to_f32" : "";
	const char *idx = *widen ? arena_printf(E->a, "%s(I[%s])", widen, at)
	                         : arena_printf(E->a, "I[%s]", at);
	emitf(E, "%sint64_t v = (int64_t)%s;\n%sif (v < 0)\n%s\tv += %" PRId64 ";\n", ind, idx, ind,
	    ind, depth);
	emitf(E, "%sY[%s] = v == o%d ? V[1] : V[0];\n", ind, linear_index(E, Y.shape, -1, NULL), axis);
	close_loops(E, Y.shape);
}

/* The index tuple I[o, 0..k-1] of GatherND/ScatterND, each wrapped and
 * checked against data axis first + j, added to `at` with the data strides. */
static void emit_index_tuple(Emit *E, const Shape *data, int64_t k, int first, const int64_t *st)
{
	for (int64_t j = 0; j < k; j++) {
		int64_t len = data->dims[first + j].size;
		emitf(E, "\t\t{\n\t\t\tint64_t v = (int64_t)I[o * %" PRId64 " + %" PRId64 "];\n"
		       "\t\t\tif (v < 0)\n\t\t\t\tv += %" PRId64 ";\n"
		       "\t\t\tif (v < 0 || v >= %" PRId64 ")\n\t\t\t\treturn KILN_SHAPE_ERROR;\n"
		       "\t\t\tat += v * %" PRId64 ";\n\t\t}\n",
		    k, j, len, len, st[first + j]);
	}
}

void emit_gather_nd(Emit *E)
{
	Operand D = in_op(E, 0), I = in_op(E, 1), Y = out_op(E, 0);
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	int64_t b = tp.batch_dims;
	int qr = I.shape->rank, r = D.shape->rank;
	int64_t k = I.shape->dims[qr - 1].size, slice = 1, outer = 1, batch = 1;
	for (int i = (int)(b + k); i < r; i++)
		slice *= D.shape->dims[i].size;
	for (int i = 0; i < qr - 1; i++)
		outer *= I.shape->dims[i].size;
	for (int i = 0; i < b; i++)
		batch *= I.shape->dims[i].size;
	int64_t per_batch = outer / (batch ? batch : 1), dstride[KILN_MAX_RANK], acc = 1;
	for (int i = r - 1; i >= 0; i--) {
		dstride[i] = acc;
		acc *= D.shape->dims[i].size;
	}
	size_t es = dtype_size(D.dtype);
	decl(E, "D", &D, false);
	decl(E, "I", &I, false);
	decl(E, "Y", &Y, true);
	if (Y.nelem == 0)
		return;
	emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++) {\n", outer);
	/* The leading batch_dims axes are shared by data and indices: the batch
	 * index times the stride of the last of them. */
	emitf(E, "\t\tint64_t at = (o / %" PRId64 ") * %" PRId64 ";\n", per_batch,
	    b ? dstride[b - 1] : (int64_t)0);
	emit_index_tuple(E, D.shape, k, (int)b, dstride);
	emitf(E, "\t\tmemcpy(Y + o * %" PRId64 ", D + at, %zu);\n\t}\n", slice, (size_t)slice * es);
}

/* Scatter's update of y by u: written, or reduced into y (opset 16's add
 * and mul, 18's max and min; a NaN in y stays, one in u is passed over, as
 * ONNX Runtime's std::max and std::min do). */
static const char *scatter_update(Emit *E, const char *op, const char *y, const char *u)
{
	if (op[0] == '>')
		return arena_printf(E->a, "if (%s < %s) %s = %s;", y, u, y, u);
	if (op[0] == '<')
		return arena_printf(E->a, "if (%s < %s) %s = %s;", u, y, y, u);
	return arena_printf(E->a, "%s %s %s;", y, op, u);
}

/* ScatterElements and ScatterND: the output starts as the data, then the
 * updates are written (or added/multiplied, with reduction) at the indices. */
void emit_scatter(Emit *E)
{
	Operand D = in_op(E, 0), I = in_op(E, 1), U = in_op(E, 2), Y = out_op(E, 0);
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	/* written, or reduced into Y: scatter_update's op for each SCATTER_* */
	static const char *const ops[] = {"=", "+=", "*=", ">", "<"};
	const char *op = ops[tp.reduction];
	if (op[0] != '=')  /* a reduction computes; plain scatter copies bits of any type */
		require_not_half(E, &D);
	decl(E, "D", &D, false);
	decl(E, "I", &I, false);
	decl(E, "U", &U, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tif ((const void *)Y != (const void *)D)\n\t\tmemcpy(Y, D, %zu);\n",
	    (size_t)Y.nelem * dtype_size(Y.dtype));
	if (E->n->op != OP_ScatterND) {
		int axis = tp.axis;
		int64_t len = D.shape->dims[axis].size;
		const char *ind = open_loops(E, I.shape);
		emitf(E, "%sint64_t j = (int64_t)I[%s];\n%sif (j < 0)\n%s\tj += %" PRId64 ";\n"
		       "%sif (j < 0 || j >= %" PRId64 ")\n%s\treturn KILN_SHAPE_ERROR;\n",
		    ind, linear_index(E, I.shape, -1, NULL), ind, ind, len, ind, len, ind);
		emitf(E, "%s%s\n", ind, scatter_update(E, op,
		    arena_printf(E->a, "Y[%s]", linear_index(E, D.shape, axis, "j")),
		    arena_printf(E->a, "U[%s]", linear_index(E, I.shape, -1, NULL))));
		close_loops(E, I.shape);
		return;
	}
	int qr = I.shape->rank, r = D.shape->rank;
	int64_t k = I.shape->dims[qr - 1].size, slice = 1, outer = 1, st[KILN_MAX_RANK], acc = 1;
	for (int i = (int)k; i < r; i++)
		slice *= D.shape->dims[i].size;
	for (int i = 0; i < qr - 1; i++)
		outer *= I.shape->dims[i].size;
	for (int i = r - 1; i >= 0; i--) {
		st[i] = acc;
		acc *= D.shape->dims[i].size;
	}
	emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++) {\n\t\tint64_t at = 0;\n", outer);
	emit_index_tuple(E, D.shape, k, 0, st);
	emitf(E, "\t\tfor (int64_t s = 0; s < %" PRId64 "; s++)\n\t\t\t%s\n\t}\n", slice,
	    scatter_update(E, op, "Y[at + s]", arena_printf(E->a, "U[o * %" PRId64 " + s]", slice)));
}


void emit_eye_like(Emit *E)
{
	Operand Y = out_op(E, 0);
	Infer inf = emit_infer(E);
	TensorParams tp;
	tensor_params(&inf, &tp);
	int64_t k = tp.k;
	decl(E, "Y", &Y, true);
	/* 16-bit floats are bit patterns: 1.0 is 0x3c00 (float16), 0x3f80 (bfloat16). */
	const char *one = Y.dtype == DT_FLOAT16    ? " ? 0x3c00 : 0"
	                  : Y.dtype == DT_BFLOAT16 ? " ? 0x3f80 : 0"
	                                           : "";
	emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\tfor (int64_t j = 0; j < %" PRId64
	       "; j++)\n\t\t\tY[i * %" PRId64 " + j] = (%s)(j - i == %" PRId64 "%s);\n",
	    Y.shape->dims[0].size, Y.shape->dims[1].size, Y.shape->dims[1].size, ctype(Y.dtype), k,
	    one);
}

