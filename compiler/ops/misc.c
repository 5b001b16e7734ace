/*
 * ops/misc.c - shape inference for small ops that fit no other family: Det,
 * MeanVarianceNormalization, LpNormalization and ReverseSequence.
 *
 * All four keep their sizes static: Det drops the two matrix dims,
 * MeanVarianceNormalization and LpNormalization keep the input's shape, and
 * ReverseSequence keeps it too (its sequence_lens are read at run time, since
 * they only decide which elements move, never a shape).
 */
#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

static bool is_float_type(int dt)
{
	return dt == DT_FLOAT || dt == DT_DOUBLE || dt == DT_FLOAT16 || dt == DT_BFLOAT16;
}

/* Det: [*, M, M] -> [*]. */
static void infer_det(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	if (in->rank < 2)
		infer_fail(x, KILN_SHAPE_ERROR, "input must be [*, M, M] (square matrices), got rank %d",
		           in->rank);
	if (in->dims[in->rank - 1].size != in->dims[in->rank - 2].size)
		infer_fail(x, KILN_SHAPE_ERROR, "input must be [*, M, M] (square matrices), got "
		           "%lld x %lld matrices", (long long)in->dims[in->rank - 2].size,
		           (long long)in->dims[in->rank - 1].size);
	if (!is_float_type(infer_dtype(x, 0)))
		infer_fail(x, KILN_INVALID_MODEL, "input must be a float type, not %s",
		           dtype_name(infer_dtype(x, 0)));
	Shape y = {.rank = in->rank - 2};
	for (int k = 0; k < y.rank; k++)
		y.dims[k] = in->dims[k];
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

/* The reduced axes of MeanVarianceNormalization as a mask; default [0, 2, 3]. */
unsigned misc_mvn_axes(Infer *x, int rank)
{
	int64_t axes[KILN_MAX_RANK];
	int n = attr_ints(x, "axes", axes, KILN_MAX_RANK);
	if (n < 0) {
		if (rank < 4)
			infer_fail(x, KILN_SHAPE_ERROR, "the default axes [0, 2, 3] need rank 4 or more, "
			           "got rank %d", rank);
		return 1u | 4u | 8u;
	}
	unsigned mask = 0;
	for (int i = 0; i < n; i++) {
		int a = infer_axis(x, axes[i], rank, "axes");
		if (mask & (1u << a))
			infer_fail(x, KILN_INVALID_MODEL, "axis %d is listed twice in \"axes\"", a);
		mask |= 1u << a;
	}
	return mask;
}

static void infer_mvn(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	if (!is_float_type(infer_dtype(x, 0)))
		infer_fail(x, KILN_INVALID_MODEL, "input must be a float type, not %s",
		           dtype_name(infer_dtype(x, 0)));
	misc_mvn_axes(x, in->rank);
	infer_set_output(x, 0, infer_dtype(x, 0), in);
}

/* LpNormalization (opset 1): x / ||x||_p along axis (default -1), p 1 or 2
 * (default 2), both as ONNX Runtime takes them. Read here for inference and
 * again by the emitter, so the two cannot disagree. */
void misc_lpnorm_params(Infer *x, LpNorm *p)
{
	const Shape *in = infer_shape(x, 0);
	if (in->rank < 1)
		infer_fail(x, KILN_SHAPE_ERROR, "input must have rank 1 or more, got a scalar");
	int64_t pv = attr_int(x, "p", 2);
	if (pv != 1 && pv != 2)
		infer_fail(x, KILN_INVALID_MODEL, "p must be 1 or 2, got %lld", (long long)pv);
	int axis = infer_axis(x, attr_int(x, "axis", -1), in->rank, "axis");
	p->p = (int)pv;
	p->axis = axis;
	p->len = in->dims[axis].size;
	p->outer = p->inner = 1;
	for (int k = 0; k < in->rank; k++) {
		if (k < axis)
			p->outer *= in->dims[k].size;
		else if (k > axis)
			p->inner *= in->dims[k].size;
	}
}

static void infer_lpnorm(Infer *x)
{
	if (!is_float_type(infer_dtype(x, 0)))
		infer_fail(x, KILN_INVALID_MODEL, "input must be a float type, not %s",
		           dtype_name(infer_dtype(x, 0)));
	LpNorm p;
	misc_lpnorm_params(x, &p);
	infer_set_output(x, 0, infer_dtype(x, 0), infer_shape(x, 0));
}

/* ReverseSequence: x is [batch, time, ...] or [time, batch, ...] as the
 * axes say; sequence_lens is [batch] of int64. */
int misc_reverse_sequence_batch_axis(Infer *x)
{
	int64_t batch_axis = attr_int(x, "batch_axis", 1), time_axis = attr_int(x, "time_axis", 0);
	if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
		infer_fail(x, KILN_INVALID_MODEL, "batch_axis and time_axis must be 0 and 1 in some "
		           "order, got %lld and %lld", (long long)batch_axis, (long long)time_axis);
	return (int)batch_axis;
}

static void infer_reverse_sequence(Infer *x)
{
	const Shape *in = infer_shape(x, 0), *lens = infer_shape(x, 1);
	if (in->rank < 2)
		infer_fail(x, KILN_SHAPE_ERROR, "input must have rank 2 or more, got %d", in->rank);
	int batch_axis = misc_reverse_sequence_batch_axis(x);
	if (infer_dtype(x, 1) != DT_INT64)
		infer_fail(x, KILN_INVALID_MODEL, "sequence_lens must be int64, not %s",
		           dtype_name(infer_dtype(x, 1)));
	if (lens->rank != 1 || lens->dims[0].size != in->dims[batch_axis].size)
		infer_fail(x, KILN_SHAPE_ERROR, "sequence_lens must be [%lld] (the batch)",
		           (long long)in->dims[batch_axis].size);
	if (infer_dtype(x, 0) == DT_STRING)
		infer_fail(x, KILN_UNSUPPORTED, "string tensors are not supported");
	infer_set_output(x, 0, infer_dtype(x, 0), in);
}

void ops_misc_infer(Infer *x)
{
	switch (x->n->op) {
	case OP_Det: infer_det(x); return;
	case OP_MeanVarianceNormalization: infer_mvn(x); return;
	case OP_ReverseSequence: infer_reverse_sequence(x); return;
	case OP_LpNormalization: infer_lpnorm(x); return;
	default:
		infer_fail(x, KILN_INTERNAL, "ops_misc_infer called for %s", x->n->op_type);
	}
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_misc_defs[] = {
	{.op = OP_Det, .infer = ops_misc_infer, .emit = emit_det, .batch = BK_DET,
	 .note = "LU with partial pivoting in double; matrices up to 64x64"},
	{.op = OP_MeanVarianceNormalization, .infer = ops_misc_infer, .emit = emit_mvn,
	 .batch = BK_MVN,
	 .note = "any axes; computed in double"},
	{.op = OP_ReverseSequence, .infer = ops_misc_infer, .emit = emit_reverse_sequence,
	 .note = "sequence_lens read at run time (checked)"},
	{.op = OP_LpNormalization, .infer = ops_misc_infer, .emit = emit_lpnorm,
	 .batch = BK_AXIS_ATTR, .types = OT_F32 | OT_F64,
	 .note = "p 1 or 2; norms summed in double (a zero norm gives zeros, as ONNX Runtime); "
	         "float64 in generated loops"},
	{.op = NONE},
};
