/*
 * ops/reduce.c - shape inference for the Reduce* family, ArgMax and ArgMin.
 *
 * The reduced axes come from the `axes` attribute (ReduceMean before opset
 * 18, ReduceSum before 13) or from the optional second input, which must then
 * be known at compile time. No axes means all axes, unless
 * noop_with_empty_axes is set (the input then passes through).
 */
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

void reduce_params(Infer *x, ReduceParams *p)
{
	const Shape *in = infer_shape(x, 0);
	int op = x->n->op;
	memset(p, 0, sizeof *p);
	p->keepdims = attr_int(x, "keepdims", 1) != 0;
	if (op == OP_ArgMax || op == OP_ArgMin) {
		p->axis = infer_axis(x, attr_int(x, "axis", 0), in->rank, "axis");
		p->select_last_index = attr_int(x, "select_last_index", 0) != 0;
		return;
	}
	if (op == OP_TopK) {
		p->axis = infer_axis(x, attr_int(x, "axis", -1), in->rank, "axis");
		p->largest = attr_int(x, "largest", 1) != 0;
		return;
	}
	if (op == OP_CumSum) {   /* the axis is input 1 */
		p->exclusive = attr_int(x, "exclusive", 0) != 0;
		p->reverse = attr_int(x, "reverse", 0) != 0;
		return;
	}
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
	if (naxes <= 0) {
		p->noop = attr_int(x, "noop_with_empty_axes", 0) != 0;
		for (int k = 0; k < in->rank && !p->noop; k++)
			p->reduce[k] = true;
	}
	for (int64_t i = 0; i < naxes; i++) {
		int a = infer_axis(x, axes[i], in->rank, "axis");
		if (p->reduce[a])
			infer_fail(x, KILN_INVALID_MODEL, "axis %d is listed twice", a);
		p->reduce[a] = true;
	}
}

/* ArgMax/ArgMin: one axis, its index as int64. */
static void infer_argext(Infer *x, const ReduceParams *p)
{
	const Shape *in = infer_shape(x, 0);
	Shape y = {.rank = 0};
	for (int k = 0; k < in->rank; k++) {
		if (k != p->axis)
			y.dims[y.rank++] = in->dims[k];
		else if (p->keepdims)
			y.dims[y.rank++].size = 1;
	}
	infer_set_output(x, 0, DT_INT64, &y);
}

/* TopK: K known; values and int64 indices with the axis cut to K. */
static void infer_topk(Infer *x, const ReduceParams *p)
{
	const Shape *in = infer_shape(x, 0);
	int axis = p->axis;
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
	ReduceParams p;
	reduce_params(x, &p);
	if (x->n->op == OP_ArgMax || x->n->op == OP_ArgMin) {
		infer_argext(x, &p);
		return;
	}
	if (x->n->op == OP_TopK) {
		infer_topk(x, &p);
		return;
	}
	const Shape *in = infer_shape(x, 0);
	if (x->n->op == OP_CumSum || p.noop) {   /* the input's shape */
		infer_set_output(x, 0, infer_dtype(x, 0), in);
		return;
	}
	Shape y = {.rank = 0};
	for (int k = 0; k < in->rank; k++) {
		if (!p.reduce[k])
			y.dims[y.rank++] = in->dims[k];
		else if (p.keepdims)
			y.dims[y.rank++].size = 1;
	}
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

/* ---- the records (opdef.h) ---------------------------------------------- */

/* TopK's axis (the batch analysis, OpDef.axis). */
static int topk_axis(Infer *x)
{
	ReduceParams p;
	reduce_params(x, &p);
	return p.axis;
}

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
	 .along = "sorts", .axis = topk_axis,
	 .index = IF_TOPK_INDICES,
	 .shape_inputs = 1u << 1,
	 .types = OT_F32 | OT_F64 | OT_INTS,
	 .pad = PD_TOPK,
	 .note = "K must be known at compile time"},
	{.op = NONE},
};
