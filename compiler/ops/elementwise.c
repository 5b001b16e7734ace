/*
 * ops/elementwise.c - shape inference for elementwise ops: the unary
 * activations and math functions, Cast, Clip, the broadcasting binary ops
 * and Where.
 *
 * Broadcasting is ONNX's multidirectional (numpy) rule: shapes are aligned
 * at the right, and each dim pair must be equal or contain a 1. Integer
 * results of small known tensors are folded, since exporters compute shapes
 * with Add/Sub/Mul/Div on Shape outputs.
 */
#include <string.h>

#include "kiln.h"

static void broadcast(Infer *x, Shape *out, const Shape *a, const Shape *b)
{
	int rank = a->rank > b->rank ? a->rank : b->rank;
	Shape r = {.rank = rank};
	for (int k = 0; k < rank; k++) {
		int ia = k - (rank - a->rank), ib = k - (rank - b->rank);
		int64_t da = ia >= 0 ? a->dims[ia].size : 1, db = ib >= 0 ? b->dims[ib].size : 1;
		if (da != db && da != 1 && db != 1)
			infer_fail(x, KILN_SHAPE_ERROR,
			           "shapes do not broadcast: dim %d is %lld in one input and %lld in another",
			           k, (long long)da, (long long)db);
		r.dims[k].size = da == 1 ? db : da;
	}
	*out = r;
}

/* Element (linear index in the broadcast output) of a folded input. */
int64_t bcast_index(const Shape *out, const Shape *in, int64_t linear)
{
	int64_t idx = 0, stride = 1;
	for (int k = out->rank - 1, ki = in->rank - 1; k >= 0; k--, ki--) {
		int64_t coord = linear % out->dims[k].size;
		linear /= out->dims[k].size;
		if (ki >= 0) {
			if (in->dims[ki].size != 1)
				idx += coord * stride;
			stride *= in->dims[ki].size;
		}
	}
	return idx;
}

Shape prelu_channel_shape(const Shape *x)
{
	Shape s = {.rank = x->rank - 1};
	s.dims[0] = x->dims[1];
	for (int k = 1; k < s.rank; k++)
		s.dims[k].size = 1;
	return s;
}

static void fold_binary(Infer *x, const Shape *out, int op)
{
	int64_t na, nb;
	const int64_t *a = infer_ints(x, 0, &na), *b = infer_ints(x, 1, &nb);
	if (!a || !b || !infer_foldable(out) || infer_dtype(x, 0) != DT_INT64)
		return;
	int64_t n = shape_nelem(out);
	int64_t *r = arena_array(x->a, (size_t)n, sizeof *r);
	for (int64_t i = 0; i < n; i++) {
		int64_t va = a[bcast_index(out, infer_shape(x, 0), i)];
		int64_t vb = b[bcast_index(out, infer_shape(x, 1), i)];
		switch (op) {
		case OP_Add: r[i] = (int64_t)((uint64_t)va + (uint64_t)vb); break;
		case OP_Sub: r[i] = (int64_t)((uint64_t)va - (uint64_t)vb); break;
		case OP_Mul: r[i] = (int64_t)((uint64_t)va * (uint64_t)vb); break;
		case OP_Div:
			if (vb == 0 || (va == INT64_MIN && vb == -1))
				return;  /* leave it to run time, which reports it */
			r[i] = va / vb;
			break;
		default: return;
		}
	}
	infer_set_folded(x, 0, DT_INT64, n, r);
}

static void infer_cast(Infer *x)
{
	/* CastLike takes the target type from its second input. */
	int to = x->n->op == OP_CastLike ? infer_dtype(x, 1) : (int)attr_int(x, "to", 0);
	if (!dtype_valid(to))
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"to\" is not an element type (%d)", to);
	const Shape *s = infer_shape(x, 0);
	infer_set_output(x, 0, to, s);
	/* Integer-to-integer casts of known shapes (int32 <-> int64) stay foldable,
	 * and so do small integers cast to float32, which Range and the window
	 * functions' expansions take as sizes. */
	int64_t n;
	const int64_t *v = infer_ints(x, 0, &n);
	if (v && to == DT_INT64)
		infer_set_folded(x, 0, DT_INT64, n, v);
	if (v && to == DT_FLOAT && n <= 4096) {
		float *f = arena_array(x->a, (size_t)n + 1, sizeof *f);
		for (int64_t k = 0; k < n; k++)
			f[k] = (float)v[k];
		infer_set_folded(x, 0, DT_FLOAT, n, f);
	}
}

void ops_elementwise_infer(Infer *x)
{
	int op = x->n->op;
	switch (op) {
	case OP_Cast: case OP_CastLike:
		infer_cast(x);
		return;
	case OP_Add: case OP_Sub: case OP_Mul: case OP_Div: case OP_Pow: {
		Shape out;
		broadcast(x, &out, infer_shape(x, 0), infer_shape(x, 1));
		if (op != OP_Pow && infer_dtype(x, 0) != infer_dtype(x, 1))
			infer_fail(x, KILN_INVALID_MODEL, "inputs have different element types (%s, %s)",
			           dtype_name(infer_dtype(x, 0)), dtype_name(infer_dtype(x, 1)));
		infer_set_output(x, 0, infer_dtype(x, 0), &out);
		fold_binary(x, &out, op);
		return;
	}
	case OP_Where: {
		Shape t, out;
		broadcast(x, &t, infer_shape(x, 1), infer_shape(x, 2));
		broadcast(x, &out, infer_shape(x, 0), &t);
		if (infer_dtype(x, 0) != DT_BOOL)
			infer_fail(x, KILN_INVALID_MODEL, "condition must be bool, not %s",
			           dtype_name(infer_dtype(x, 0)));
		infer_set_output(x, 0, infer_dtype(x, 1), &out);
		return;
	}
	case OP_And: case OP_Or: case OP_Xor: case OP_Equal: case OP_Less: case OP_Greater:
	case OP_LessOrEqual: case OP_GreaterOrEqual: case OP_Mod: case OP_BitShift: case OP_PRelu:
	case OP_Min: case OP_Max: case OP_Sum: case OP_Mean: case OP_BitwiseAnd: case OP_BitwiseOr:
	case OP_BitwiseXor: {
		/* Broadcasting over every input (Min/Max/Sum/Mean are variadic). */
		if (x->n->nin < 1)
			infer_fail(x, KILN_INVALID_MODEL, "needs at least one input");
		Shape out = *infer_shape(x, 0);
		for (int i = 1; i < x->n->nin; i++) {
			Shape t, in = *infer_shape(x, i);
			/* PRelu before opset 7: a 1-D slope of C values is per channel (axis 1). */
			if (op == OP_PRelu && x->n->since < 7 && in.rank == 1 && out.rank > 2 &&
			    in.dims[0].size == out.dims[1].size)
				in = prelu_channel_shape(&out);
			broadcast(x, &t, &out, &in);
			out = t;
			if (op != OP_PRelu && infer_dtype(x, i) != infer_dtype(x, 0))
				infer_fail(x, KILN_INVALID_MODEL, "inputs have different element types (%s, %s)",
				           dtype_name(infer_dtype(x, 0)), dtype_name(infer_dtype(x, i)));
		}
		bool to_bool = op == OP_Equal || op == OP_Less || op == OP_Greater ||
		               op == OP_LessOrEqual || op == OP_GreaterOrEqual;
		infer_set_output(x, 0, to_bool ? DT_BOOL : infer_dtype(x, 0), &out);
		return;
	}
	case OP_IsNaN: case OP_IsInf:
		infer_set_output(x, 0, DT_BOOL, infer_shape(x, 0));
		return;
	default: {
		/* Unary: the activations and math functions, Not, Clip. */
		infer_set_output(x, 0, infer_dtype(x, 0), infer_shape(x, 0));
		/* Shape arithmetic negates and takes absolute values of small integers. */
		int64_t n;
		const int64_t *v = infer_ints(x, 0, &n);
		if (v && (op == OP_Neg || op == OP_Abs) && infer_dtype(x, 0) == DT_INT64 && n <= 4096) {
			int64_t *r = arena_array(x->a, (size_t)n + 1, sizeof *r);
			for (int64_t i = 0; i < n; i++)
				r[i] = op == OP_Neg ? (int64_t)(0 - (uint64_t)v[i]) : v[i] < 0 ? (int64_t)(0 - (uint64_t)v[i]) : v[i];
			infer_set_folded(x, 0, DT_INT64, n, r);
		}
		return;
	}
	}
}

/* Ops an elementwise chain may hold (passes/ewchain.c, emit_ewchain): on
 * float32, each is one expression of its data inputs (emit/elementwise.c)
 * or libkiln's vector kernel, reading no attribute the emitter might
 * refuse at one signature only. */
bool ewchain_op(const Node *n)
{
	switch (n->op) {
	case OP_Relu: case OP_Sigmoid: case OP_Tanh: case OP_Erf: case OP_Sqrt: case OP_Exp:
	case OP_Log: case OP_Selu: case OP_Elu: case OP_LeakyRelu: case OP_Neg: case OP_Abs:
	case OP_Floor: case OP_Ceil: case OP_Round: case OP_Reciprocal: case OP_Softplus:
	case OP_Softsign: case OP_Mish: case OP_HardSigmoid: case OP_HardSwish:
	case OP_ThresholdedRelu: case OP_Celu: case OP_Sin: case OP_Cos: case OP_Clip:
	case OP_Add: case OP_Sub: case OP_Mul: case OP_Div: case OP_Pow:
		return true;
	case OP_Max: case OP_Min: case OP_Sum: case OP_Mean:
		return n->nin >= 1 && n->nin <= EWCHAIN_MAX_OPERANDS;
	case OP_PRelu:
		return n->since >= 7;  /* older slopes broadcast by channel (emit_binary) */
	default:
		return false;
	}
}

/* The inputs a chain reads elementwise: all but Clip's bounds. */
int ewchain_data_inputs(const Node *n)
{
	return n->op == OP_Clip ? 1 : n->nin;
}
