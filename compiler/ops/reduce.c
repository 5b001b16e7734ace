/*
 * ops/reduce.c - shape inference for the Reduce* family, ArgMax and ArgMin.
 *
 * The reduced axes come from the `axes` attribute (ReduceMean before opset
 * 18, ReduceSum before 13) or from the optional second input, which must then
 * be known at compile time. No axes means all axes, unless
 * noop_with_empty_axes is set (the input then passes through).
 */
#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

/* ArgMax/ArgMin: one axis, its index as int64. */
static void infer_argext(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	int axis = infer_axis(x, attr_int(x, "axis", 0), in->rank, "axis");
	bool keep = attr_int(x, "keepdims", 1) != 0;
	Shape y = {.rank = 0};
	for (int k = 0; k < in->rank; k++) {
		if (k != axis)
			y.dims[y.rank++] = in->dims[k];
		else if (keep)
			y.dims[y.rank++].size = 1;
	}
	infer_set_output(x, 0, DT_INT64, &y);
}

/* TopK: K known; values and int64 indices with the axis cut to K. */
static void infer_topk(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	int axis = infer_axis(x, attr_int(x, "axis", -1), in->rank, "axis");
	int64_t k;
	if (x->n->since < 10) {
		k = attr_int(x, "k", -1);
	} else {
		int64_t n;
		const int64_t *v = infer_require_ints(x, 1, &n);
		if (n != 1)
			infer_fail(x, KILN_SHAPE_ERROR, "K must have one element");
		k = v[0];
	}
	if (k < 0 || k > in->dims[axis].size)
		infer_fail(x, KILN_SHAPE_ERROR, "K = %lld is out of range for axis %d of size %lld",
		           (long long)k, axis, (long long)in->dims[axis].size);
	Shape y = *in;
	y.dims[axis].size = k;
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
	infer_set_output(x, 1, DT_INT64, &y);
}

void ops_reduce_infer(Infer *x)
{
	if (x->n->op == OP_ArgMax || x->n->op == OP_ArgMin) {
		infer_argext(x);
		return;
	}
	if (x->n->op == OP_TopK) {
		infer_topk(x);
		return;
	}
	if (x->n->op == OP_CumSum) {   /* the input's shape */
		infer_set_output(x, 0, infer_dtype(x, 0), infer_shape(x, 0));
		return;
	}
	const Shape *in = infer_shape(x, 0);
	int64_t axes[KILN_MAX_RANK * 2];
	int64_t naxes = -1;
	if (infer_has_input(x, 1)) {
		const int64_t *v = infer_require_ints(x, 1, &naxes);
		if (naxes > KILN_MAX_RANK)
			infer_fail(x, KILN_SHAPE_ERROR, "%lld axes for rank %d", (long long)naxes, in->rank);
		for (int64_t i = 0; i < naxes; i++)
			axes[i] = v[i];
	} else {
		naxes = attr_ints(x, "axes", axes, KILN_MAX_RANK * 2);
	}
	bool keep = attr_int(x, "keepdims", 1) != 0;
	bool reduce[KILN_MAX_RANK] = {0};
	if (naxes <= 0) {
		if (attr_int(x, "noop_with_empty_axes", 0) != 0) {
			infer_set_output(x, 0, infer_dtype(x, 0), in);
			return;
		}
		for (int k = 0; k < in->rank; k++)
			reduce[k] = true;
	}
	for (int64_t i = 0; i < naxes; i++) {
		int a = infer_axis(x, axes[i], in->rank, "axis");
		if (reduce[a])
			infer_fail(x, KILN_INVALID_MODEL, "axis %d is listed twice", a);
		reduce[a] = true;
	}
	Shape y = {.rank = 0};
	for (int k = 0; k < in->rank; k++) {
		if (!reduce[k])
			y.dims[y.rank++] = in->dims[k];
		else if (keep)
			y.dims[y.rank++].size = 1;
	}
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_reduce_defs[] = {
	{.op = OP_ReduceMean, .infer = ops_reduce_infer, .emit = emit_reduce, .peval = PE_REDUCE,
	 .reduce = RD_MEAN, .batch = BK_REDUCE, .shape_inputs = 1u << 1,
	 .types = OT_F32 | OT_F64 | OT_INTS},
	{.op = OP_ReduceSum, .infer = ops_reduce_infer, .emit = emit_reduce, .peval = PE_REDUCE,
	 .reduce = RD_SUM, .batch = BK_REDUCE, .shape_inputs = 1u << 1,
	 .types = OT_F32 | OT_F64 | OT_INTS},
	{.op = OP_ReduceMax, .infer = ops_reduce_infer, .emit = emit_reduce, .peval = PE_REDUCE,
	 .reduce = RD_MAX, .batch = BK_REDUCE, .shape_inputs = 1u << 1,
	 .types = OT_F32 | OT_F64 | OT_INTS, .note = "bool too (opset 20)"},
	{.op = OP_ReduceMin, .infer = ops_reduce_infer, .emit = emit_reduce, .peval = PE_REDUCE,
	 .reduce = RD_MIN, .batch = BK_REDUCE, .shape_inputs = 1u << 1,
	 .types = OT_F32 | OT_F64 | OT_INTS, .note = "bool too (opset 20)"},
	{.op = OP_ReduceProd, .infer = ops_reduce_infer, .emit = emit_reduce, .peval = PE_REDUCE,
	 .reduce = RD_PROD, .batch = BK_REDUCE, .shape_inputs = 1u << 1,
	 .types = OT_F32 | OT_F64 | OT_INTS},
	{.op = OP_ReduceSumSquare, .infer = ops_reduce_infer, .emit = emit_reduce,
	 .peval = PE_REDUCE, .reduce = RD_SUM_SQUARE, .batch = BK_REDUCE, .shape_inputs = 1u << 1,
	 .types = OT_F32 | OT_F64 | OT_INTS},
	{.op = OP_ReduceL1, .infer = ops_reduce_infer, .emit = emit_reduce, .peval = PE_REDUCE,
	 .reduce = RD_L1, .batch = BK_REDUCE, .shape_inputs = 1u << 1,
	 .types = OT_F32 | OT_F64 | OT_INTS},
	{.op = OP_ReduceL2, .infer = ops_reduce_infer, .emit = emit_reduce, .peval = PE_REDUCE,
	 .reduce = RD_L2, .batch = BK_REDUCE, .shape_inputs = 1u << 1,
	 .types = OT_F32 | OT_F64 | OT_INTS},
	{.op = OP_ReduceLogSum, .infer = ops_reduce_infer, .emit = emit_reduce, .peval = PE_REDUCE,
	 .reduce = RD_LOG_SUM, .batch = BK_REDUCE, .shape_inputs = 1u << 1,
	 .types = OT_F32 | OT_F64 | OT_INTS},
	{.op = OP_ReduceLogSumExp, .infer = ops_reduce_infer, .emit = emit_reduce,
	 .peval = PE_REDUCE, .reduce = RD_LOG_SUM_EXP, .batch = BK_REDUCE, .shape_inputs = 1u << 1,
	 .types = OT_F32 | OT_F64 | OT_INTS},
	{.op = OP_ArgMax, .infer = ops_reduce_infer, .emit = emit_argext, .peval = PE_ARG_EXTREMUM,
	 .reduce = RD_MAX,
	 .batch = BK_ARG_EXTREMUM, .types = OT_F32 | OT_F64 | OT_INTS},
	{.op = OP_ArgMin, .infer = ops_reduce_infer, .emit = emit_argext, .peval = PE_ARG_EXTREMUM,
	 .reduce = RD_MIN,
	 .batch = BK_ARG_EXTREMUM, .types = OT_F32 | OT_F64 | OT_INTS},
	{.op = OP_CumSum, .infer = ops_reduce_infer, .emit = emit_cumsum, .peval = PE_CUMSUM,
	 .batch = BK_ALONG_AXIS, .shape_inputs = 1u << 1, .types = OT_F32 | OT_F64 | OT_INTS,
	 .batch_flags = BF_AXIS_INPUT, .along = "sums"},
	{.op = OP_TopK, .infer = ops_reduce_infer, .emit = emit_topk, .batch = BK_ALONG_AXIS,
	 .along = "sorts",
	 .index = IF_TOPK_INDICES,
	 .shape_inputs = 1u << 1,
	 .types = OT_F32 | OT_F64 | OT_INTS,
	 .pad = PD_TOPK,
	 .note = "K must be known at compile time"},
	{.op = NONE},
};
