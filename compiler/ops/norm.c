/*
 * ops/norm.c - shape inference for the normalizations: BatchNormalization
 * (inference, and training mode from opset 14), LayerNormalization, Softmax,
 * LogSoftmax and ImageScaler. Each output has the input's shape; what is checked is that
 * parameters fit.
 */
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

void norm_params(Infer *x, NormParams *p)
{
	const Node *n = x->n;
	memset(p, 0, sizeof *p);
	int rank = infer_shape(x, 0)->rank;
	switch (n->op) {
	case OP_Softmax: case OP_LogSoftmax: case OP_Hardmax:  /* opset < 13: default 1, else -1 */
		if (rank > 0)
			p->axis = infer_axis(x, attr_int(x, "axis", n->since < 13 ? 1 : -1), rank, "axis");
		return;
	case OP_LayerNormalization:
		p->axis = infer_axis(x, attr_int(x, "axis", -1), rank, "axis");
		p->epsilon = attr_float(x, "epsilon", 1e-5f);
		p->stash_type = (int)attr_int(x, "stash_type", 1);
		return;
	case OP_BatchNormalization:
		p->training = n->since >= 14 && attr_int(x, "training_mode", 0) != 0;
		p->epsilon = attr_float(x, "epsilon", 1e-5f);
		p->momentum = attr_float(x, "momentum", 0.9f);
		return;
	case OP_InstanceNormalization:
		p->epsilon = attr_float(x, "epsilon", 1e-5f);
		return;
	case OP_GroupNormalization:
		p->epsilon = attr_float(x, "epsilon", 1e-5f);
		p->groups = attr_int(x, "num_groups", 0);
		return;
	case OP_LRN:
		p->size = attr_int(x, "size", 1);
		p->alpha = attr_float(x, "alpha", 1e-4f);
		p->beta = attr_float(x, "beta", 0.75f);
		p->bias = attr_float(x, "bias", 1.0f);
		return;
	case OP_ImageScaler: {
		p->scale = attr_float(x, "scale", 1.0f);
		const Attr *b = node_attr(n, "bias");
		if (b && b->type != AT_FLOATS)
			infer_fail(x, KILN_INVALID_MODEL, "attribute \"bias\" must be a list of floats");
		if (b) {
			p->channel_bias = b->floats;
			p->nchannel_bias = b->n;
		}
		return;
	}
	case OP_NegativeLogLikelihoodLoss: case OP_SoftmaxCrossEntropyLoss: {
		const char *r = attr_string(x, "reduction", "mean");
		p->reduction = strcmp(r, "none") == 0 ? LOSS_NONE
		               : strcmp(r, "sum") == 0 ? LOSS_SUM
		               : strcmp(r, "mean") == 0 ? LOSS_MEAN : -1;
		if (p->reduction < 0)
			infer_fail(x, KILN_INVALID_MODEL, "reduction \"%s\" is not none, sum or mean", r);
		p->has_ignore_index = node_attr(n, "ignore_index") != NULL;
		p->ignore_index = attr_int(x, "ignore_index", 0);
		return;
	}
	}
}

static void infer_batchnorm(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	if (in->rank < 2)
		infer_fail(x, KILN_SHAPE_ERROR, "input must be (N, C, ...), got rank %d", in->rank);
	/* Training mode (opset 14 on): statistics of the batch, and optionally
	 * the running mean and variance updated with momentum. Before opset 14
	 * the training outputs (saved mean, saved variance) are refused. */
	NormParams np;
	norm_params(x, &np);
	bool training = np.training;
	if (!training && x->n->nout > 1)
		infer_fail(x, KILN_UNSUPPORTED, "the training outputs of BatchNormalization-%d "
		           "(running and saved mean/var) are not supported; opset 14 and later "
		           "with training_mode=1 are", x->n->since);
	for (int i = 1; i <= 4; i++) {
		const Shape *p = infer_shape(x, i);
		if (p->rank != 1 || p->dims[0].size != in->dims[1].size)
			infer_fail(x, KILN_SHAPE_ERROR, "input %d \"%s\" must be [%lld] (the channels)", i,
			           infer_input_name(x, i), (long long)in->dims[1].size);
	}
	infer_set_output(x, 0, infer_dtype(x, 0), in);
	if (training) {
		infer_set_output(x, 1, infer_dtype(x, 3), infer_shape(x, 3));
		infer_set_output(x, 2, infer_dtype(x, 4), infer_shape(x, 4));
	}
}

static void infer_layernorm(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	NormParams np;
	norm_params(x, &np);
	int axis = np.axis;
	int64_t norm = 1;
	for (int k = axis; k < in->rank; k++)
		norm *= in->dims[k].size;
	for (int i = 1; i <= 2; i++) {
		if (!infer_has_input(x, i))
			continue;
		int64_t n = shape_nelem(infer_shape(x, i));
		if (n != norm && n != 1)
			infer_fail(x, KILN_SHAPE_ERROR, "input %d \"%s\" has %lld elements; the normalized "
			           "dims hold %lld", i, infer_input_name(x, i), (long long)n, (long long)norm);
	}
	if (x->n->fused.residual) {
		/* passes/addnorm.c: the residual Add's second operand, same shape */
		bool stats = (x->n->nout > 1 && x->n->out[1] != NONE) ||
		             (x->n->nout > 2 && x->n->out[2] != NONE);
		if (x->n->nin != 4 || !infer_has_input(x, 3) || stats ||
		    infer_dtype(x, 3) != DT_FLOAT || infer_dtype(x, 0) != DT_FLOAT)
			infer_fail(x, KILN_INVALID_MODEL, "the fused residual needs a float32 fourth input "
			           "and no statistics outputs");
		const Shape *r = infer_shape(x, 3);
		bool same = r->rank == in->rank;
		for (int k = 0; same && k < in->rank; k++)
			same = r->dims[k].size == in->dims[k].size;
		if (!same)
			infer_fail(x, KILN_SHAPE_ERROR, "the residual \"%s\" must have the input's shape",
			           infer_input_name(x, 3));
	}
	infer_set_output(x, 0, infer_dtype(x, 0), in);
	/* Optional Mean and InvStdDev: the normalized dims become 1. */
	Shape stat = *in;
	for (int k = axis; k < in->rank; k++)
		stat.dims[k].size = 1;
	infer_set_output(x, 1, np.stash_type, &stat);
	infer_set_output(x, 2, np.stash_type, &stat);
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: scores [N, C, d...],
 * targets [N, d...]; the loss has the targets' shape with reduction "none",
 * else it is a scalar. SCE's optional second output is the log-probabilities. */
static void infer_loss(Infer *x)
{
	const Shape *in = infer_shape(x, 0), *t = infer_shape(x, 1);
	if (in->rank < 2 || t->rank != in->rank - 1 || t->dims[0].size != in->dims[0].size)
		infer_fail(x, KILN_SHAPE_ERROR, "scores must be [N, C, ...] and targets [N, ...]");
	for (int k = 1; k < t->rank; k++)
		if (t->dims[k].size != in->dims[k + 1].size)
			infer_fail(x, KILN_SHAPE_ERROR, "targets dim %d does not match the scores", k);
	int it = infer_dtype(x, 1);
	if (it != DT_INT64 && it != DT_INT32)
		infer_fail(x, KILN_INVALID_MODEL, "targets must be int32 or int64");
	NormParams np;
	norm_params(x, &np);
	bool none = np.reduction == LOSS_NONE;
	Shape scalar = {.rank = 0};
	infer_set_output(x, 0, infer_dtype(x, 0), none ? t : &scalar);
	infer_set_output(x, 1, infer_dtype(x, 0), in);
}

/* GroupNormalization: X [N, C, ...] in num_groups groups of channels;
 * scale and bias per group (opset 18) or per channel (opset 21). */
static void infer_groupnorm(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	NormParams np;
	norm_params(x, &np);
	int64_t groups = np.groups;
	if (in->rank < 2 || groups < 1 || in->dims[1].size % groups)
		infer_fail(x, KILN_SHAPE_ERROR, "X must be [N, C, ...] with C a multiple of num_groups "
		           "(%lld)", (long long)groups);
	int64_t want = x->n->since >= 21 ? in->dims[1].size : groups;
	for (int i = 1; i < 3; i++)
		if (shape_nelem(infer_shape(x, i)) != want)
			infer_fail(x, KILN_SHAPE_ERROR, "%s has %lld values; it needs %lld (one per %s)",
			           i == 1 ? "scale" : "bias", (long long)shape_nelem(infer_shape(x, i)),
			           (long long)want, x->n->since >= 21 ? "channel" : "group");
	if (infer_dtype(x, 0) != DT_FLOAT)
		infer_fail(x, KILN_UNSUPPORTED, "%s is not supported yet (float32 only)",
		           dtype_name(infer_dtype(x, 0)));
	infer_set_output(x, 0, infer_dtype(x, 0), in);
}

/* ImageScaler (an experimental op ONNX removed at opset 10; classic image
 * models carry it): y = scale * x + bias[c] on [N, C, ...]. */
static void infer_image_scaler(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	if (in->rank < 2)
		infer_fail(x, KILN_SHAPE_ERROR, "input must be (N, C, ...), got rank %d", in->rank);
	NormParams np;
	norm_params(x, &np);
	if (np.channel_bias && np.nchannel_bias != in->dims[1].size)
		infer_fail(x, KILN_SHAPE_ERROR, "bias has %d values; the input has %lld channels",
		           np.nchannel_bias, (long long)in->dims[1].size);
	infer_set_output(x, 0, infer_dtype(x, 0), in);
}

void ops_norm_infer(Infer *x)
{
	if (x->n->op == OP_NegativeLogLikelihoodLoss || x->n->op == OP_SoftmaxCrossEntropyLoss) {
		infer_loss(x);
		return;
	}
	switch (x->n->op) {
	case OP_BatchNormalization:
		infer_batchnorm(x);
		return;
	case OP_LayerNormalization:
		infer_layernorm(x);
		return;
	case OP_GroupNormalization:
		infer_groupnorm(x);
		return;
	default: { /* Softmax, LogSoftmax, Hardmax, InstanceNormalization, LRN */
		NormParams np;
		norm_params(x, &np);
		infer_set_output(x, 0, infer_dtype(x, 0), infer_shape(x, 0));
	}
	}
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_norm_defs[] = {
	{.op = OP_GroupNormalization, .infer = ops_norm_infer, .emit = emit_group_norm,
	 .batch = BK_N_FIRST, .types = OT_F32,
	 .note = "scale and bias per group (opset 18) or per channel (21); statistics in double"},
	{.op = OP_BatchNormalization, .infer = ops_norm_infer, .emit = emit_batchnorm,
	 .batch = BK_N_FIRST, .types = OT_F32,
	 .batch_flags = BF_TRAINING_STATS,
	 .pad = PD_PER_CHANNEL,
	 .note = "inference; training mode from opset 14 (batch statistics, running mean/var with "
	         "momentum)"},
	{.op = OP_LayerNormalization, .infer = ops_norm_infer, .emit = emit_layernorm,
	 .batch = BK_LAYER_NORM, .types = OT_F32},
	{.op = OP_Softmax, .infer = ops_norm_infer, .emit = emit_softmax, .batch = BK_SOFTMAX,
	 .types = OT_F32,
	 .pad = PD_SOFTMAX},
	{.op = OP_LogSoftmax, .infer = ops_norm_infer, .emit = emit_softmax, .batch = BK_SOFTMAX,
	 .types = OT_F32,
	 .pad = PD_LOG_SOFTMAX},
	{.op = OP_ImageScaler, .infer = infer_image_scaler, .emit = emit_image_scaler,
	 .batch = BK_N_FIRST, .types = OT_F32,
	 .note = "experimental, opsets 1-9 (ONNX removed it at 10); bias per channel"},
	{.op = OP_NegativeLogLikelihoodLoss, .infer = ops_norm_infer, .emit = emit_loss,
	 .batch = BK_LOSS, .types = OT_F32 | OT_F64},
	{.op = OP_SoftmaxCrossEntropyLoss, .infer = ops_norm_infer, .emit = emit_loss,
	 .batch = BK_LOSS, .types = OT_F32 | OT_F64},
	{.op = OP_Hardmax, .infer = ops_norm_infer, .emit = emit_hardmax, .batch = BK_SOFTMAX,
	 .types = OT_F32},
	{.op = OP_InstanceNormalization, .infer = ops_norm_infer, .emit = emit_instance_norm,
	 .batch = BK_N_FIRST, .types = OT_F32,
	 .pad = PD_STATS},
	{.op = OP_LRN, .infer = ops_norm_infer, .emit = emit_lrn, .batch = BK_N_FIRST,
	 .types = OT_F32},
	{.op = NONE},
};
