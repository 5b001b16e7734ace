/*
 * ops/sampling.c - shape inference for the ops that read or write an input at
 * computed positions: GridSample (opset 16), RoiAlign (opsets 10 and 16),
 * MaxRoiPool (opset 1) and MaxUnpool (opsets 9 and 11).
 *
 * Every attribute value ONNX does not define is an error naming the node.
 *
 * MaxUnpool's output is, per spatial axis, (in - 1) * stride + kernel -
 * pad_begin - pad_end, unless the optional output_shape input gives it; that
 * input decides a shape, so it must be known at compile time. All three read
 * the node into their kernel's params struct (sampling_*_params), which the
 * emitter reads again, so inference and code generation cannot disagree.
 */
#include <math.h>
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

/* The index of attribute `attr`'s string among names; fails naming both. */
static int pick(Infer *x, const char *attr, const char *dflt, const char *const *names, int n)
{
	const char *v = attr_string(x, attr, dflt);
	for (int i = 0; i < n; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	infer_fail(x, KILN_INVALID_MODEL, "%s \"%s\" is not one of the values ONNX defines", attr,
	           v);
}

static bool is_float_dtype(int dt)
{
	return dt == DT_FLOAT || dt == DT_DOUBLE || dt == DT_FLOAT16 || dt == DT_BFLOAT16;
}

static void require_rank(Infer *x, int i, const Shape *s, int rank, const char *what)
{
	if (s->rank != rank)
		infer_fail(x, KILN_SHAPE_ERROR, "input %d \"%s\" must be %s, got rank %d", i,
		           infer_input_name(x, i), what, s->rank);
}

/* ---- GridSample ------------------------------------------------------- */

void sampling_gridsample_params(Infer *x, kiln_gridsample_params *p)
{
	const Shape *in = infer_shape(x, 0), *grid = infer_shape(x, 1);
	require_rank(x, 0, in, 4, "4-D (N, C, H, W)");
	require_rank(x, 1, grid, 4, "4-D (N, H_out, W_out, 2)");
	if (grid->dims[0].size != in->dims[0].size || grid->dims[3].size != 2)
		infer_fail(x, KILN_SHAPE_ERROR, "grid must be [%lld, H_out, W_out, 2], got [%lld, %lld, "
		           "%lld, %lld]", (long long)in->dims[0].size, (long long)grid->dims[0].size,
		           (long long)grid->dims[1].size, (long long)grid->dims[2].size,
		           (long long)grid->dims[3].size);
	/* GridSample-20 says linear and cubic for bilinear and bicubic. */
	static const char *const modes[] = {"bilinear", "nearest", "bicubic", "linear", "cubic"};
	static const char *const paddings[] = {"zeros", "border", "reflection"};
	memset(p, 0, sizeof *p);
	p->batch = in->dims[0].size;
	p->channels = in->dims[1].size;
	p->in_h = in->dims[2].size;
	p->in_w = in->dims[3].size;
	p->out_h = grid->dims[1].size;
	p->out_w = grid->dims[2].size;
	p->mode = pick(x, "mode", "bilinear", modes, x->n->since >= 20 ? 5 : 3);
	if (p->mode >= 3)
		p->mode = p->mode == 3 ? 0 : 2;
	p->padding_mode = pick(x, "padding_mode", "zeros", paddings, 3);
	int64_t align = attr_int(x, "align_corners", 0);
	if (align != 0 && align != 1)
		infer_fail(x, KILN_INVALID_MODEL, "align_corners must be 0 or 1, got %lld",
		           (long long)align);
	p->align_corners = (int)align;
}

static void infer_gridsample(Infer *x)
{
	kiln_gridsample_params p;
	sampling_gridsample_params(x, &p);
	if (!is_float_dtype(infer_dtype(x, 1)))
		infer_fail(x, KILN_INVALID_MODEL, "grid must be a float tensor, got %s",
		           dtype_name(infer_dtype(x, 1)));
	const Shape *in = infer_shape(x, 0), *grid = infer_shape(x, 1);
	Shape y = *in;
	y.dims[2] = grid->dims[1];
	y.dims[3] = grid->dims[2];
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

/* ---- RoiAlign --------------------------------------------------------- */

void sampling_roialign_params(Infer *x, kiln_roialign_params *p)
{
	const Shape *in = infer_shape(x, 0), *rois = infer_shape(x, 1), *idx = infer_shape(x, 2);
	require_rank(x, 0, in, 4, "4-D (N, C, H, W)");
	require_rank(x, 1, rois, 2, "[num_rois, 4]");
	require_rank(x, 2, idx, 1, "[num_rois]");
	int64_t nrois = rois->dims[0].size;
	if (rois->dims[1].size != 4 || idx->dims[0].size != nrois)
		infer_fail(x, KILN_SHAPE_ERROR, "rois must be [num_rois, 4] and batch_indices "
		           "[num_rois], got [%lld, %lld] and [%lld]", (long long)nrois,
		           (long long)rois->dims[1].size, (long long)idx->dims[0].size);
	static const char *const modes[] = {"avg", "max"};
	static const char *const coords[] = {"output_half_pixel", "half_pixel"};
	memset(p, 0, sizeof *p);
	p->batch = in->dims[0].size;
	p->channels = in->dims[1].size;
	p->in_h = in->dims[2].size;
	p->in_w = in->dims[3].size;
	p->num_rois = nrois;
	p->out_h = attr_int(x, "output_height", 1);
	p->out_w = attr_int(x, "output_width", 1);
	if (p->out_h < 1 || p->out_w < 1)
		infer_fail(x, KILN_INVALID_MODEL, "output_height and output_width must be >= 1, got "
		           "%lld and %lld", (long long)p->out_h, (long long)p->out_w);
	p->sampling_ratio = attr_int(x, "sampling_ratio", 0);
	if (p->sampling_ratio < 0)
		infer_fail(x, KILN_INVALID_MODEL, "sampling_ratio must be >= 0, got %lld",
		           (long long)p->sampling_ratio);
	p->spatial_scale = (double)attr_float(x, "spatial_scale", 1.0f);
	p->is_max = pick(x, "mode", "avg", modes, 2);
	/* RoiAlign-10 has no coordinate_transformation_mode and does not shift. */
	p->half_pixel = x->n->since >= 16 ? pick(x, "coordinate_transformation_mode", "half_pixel",
	                                          coords, 2)
	                                  : 0;
}

static void infer_roialign(Infer *x)
{
	kiln_roialign_params p;
	sampling_roialign_params(x, &p);
	int dt = infer_dtype(x, 0);
	if (!is_float_dtype(dt) || infer_dtype(x, 1) != dt)
		infer_fail(x, KILN_INVALID_MODEL, "X and rois must be the same float type, got %s and %s",
		           dtype_name(dt), dtype_name(infer_dtype(x, 1)));
	if (infer_dtype(x, 2) != DT_INT64)
		infer_fail(x, KILN_INVALID_MODEL, "batch_indices must be int64, got %s",
		           dtype_name(infer_dtype(x, 2)));
	Shape y = *infer_shape(x, 0);
	y.dims[0] = infer_shape(x, 1)->dims[0];
	y.dims[2] = (Dim){.size = p.out_h};
	y.dims[3] = (Dim){.size = p.out_w};
	infer_set_output(x, 0, dt, &y);
}

/* ---- MaxRoiPool ------------------------------------------------------- */

void sampling_maxroipool_params(Infer *x, kiln_roipool_params *p)
{
	const Shape *in = infer_shape(x, 0), *rois = infer_shape(x, 1);
	require_rank(x, 0, in, 4, "4-D (N, C, H, W)");
	require_rank(x, 1, rois, 2, "[num_rois, 5]");
	if (rois->dims[1].size != 5)
		infer_fail(x, KILN_SHAPE_ERROR, "rois must be [num_rois, 5] (batch index, x1, y1, x2, "
		           "y2), got [%lld, %lld]", (long long)rois->dims[0].size,
		           (long long)rois->dims[1].size);
	int64_t pooled[KILN_MAX_RANK];
	int n = attr_ints(x, "pooled_shape", pooled, KILN_MAX_RANK);
	if (n < 0)
		infer_fail(x, KILN_INVALID_MODEL, "the attribute pooled_shape is required");
	if (n != 2)
		infer_fail(x, KILN_INVALID_MODEL, "pooled_shape must be (height, width), got %d values",
		           n);
	if (pooled[0] < 1 || pooled[1] < 1)
		infer_fail(x, KILN_INVALID_MODEL, "pooled_shape must be >= 1, got (%lld, %lld)",
		           (long long)pooled[0], (long long)pooled[1]);
	float scale = attr_float(x, "spatial_scale", 1.0f);
	if (!(scale > 0) || isinf(scale))
		infer_fail(x, KILN_INVALID_MODEL, "spatial_scale must be a finite number > 0, got %g",
		           (double)scale);
	memset(p, 0, sizeof *p);
	p->batch = in->dims[0].size;
	p->channels = in->dims[1].size;
	p->in_h = in->dims[2].size;
	p->in_w = in->dims[3].size;
	p->num_rois = rois->dims[0].size;
	p->pooled_h = pooled[0];
	p->pooled_w = pooled[1];
	p->spatial_scale = scale;
}

static void infer_maxroipool(Infer *x)
{
	kiln_roipool_params p;
	sampling_maxroipool_params(x, &p);
	int dt = infer_dtype(x, 0);
	if (!is_float_dtype(dt) || infer_dtype(x, 1) != dt)
		infer_fail(x, KILN_INVALID_MODEL, "X and rois must be the same float type, got %s and %s",
		           dtype_name(dt), dtype_name(infer_dtype(x, 1)));
	Shape y = *infer_shape(x, 0);
	y.dims[0] = infer_shape(x, 1)->dims[0];
	y.dims[2] = (Dim){.size = p.pooled_h};
	y.dims[3] = (Dim){.size = p.pooled_w};
	infer_set_output(x, 0, dt, &y);
}

/* ---- MaxUnpool -------------------------------------------------------- */

void sampling_maxunpool_params(Infer *x, kiln_maxunpool_params *p)
{
	const Shape *in = infer_shape(x, 0), *idx = infer_shape(x, 1);
	if (in->rank < 3)
		infer_fail(x, KILN_SHAPE_ERROR, "X must be (N, C, spatial...), got rank %d", in->rank);
	if (idx->rank != in->rank || infer_dtype(x, 1) != DT_INT64)
		infer_fail(x, KILN_SHAPE_ERROR, "I must be int64 with X's shape");
	for (int k = 0; k < in->rank; k++)
		if (idx->dims[k].size != in->dims[k].size)
			infer_fail(x, KILN_SHAPE_ERROR, "I must have X's shape; axis %d is %lld, not %lld", k,
			           (long long)idx->dims[k].size, (long long)in->dims[k].size);
	int ns = in->rank - 2;
	int64_t kernel[KILN_MAX_RANK], strides[KILN_MAX_RANK], pads[2 * KILN_MAX_RANK];
	if (attr_ints(x, "kernel_shape", kernel, KILN_MAX_RANK) != ns)
		infer_fail(x, KILN_INVALID_MODEL, "kernel_shape must have %d values", ns);
	int n = attr_ints(x, "strides", strides, KILN_MAX_RANK);
	if (n >= 0 && n != ns)
		infer_fail(x, KILN_INVALID_MODEL, "strides has %d values for %d spatial axes", n, ns);
	for (int i = n < 0 ? 0 : n; i < ns; i++)
		strides[i] = 1;
	n = attr_ints(x, "pads", pads, 2 * KILN_MAX_RANK);
	if (n >= 0 && n != 2 * ns)
		infer_fail(x, KILN_INVALID_MODEL, "pads has %d values for %d spatial axes", n, ns);
	for (int i = n < 0 ? 0 : n; i < 2 * ns; i++)
		pads[i] = 0;
	memset(p, 0, sizeof *p);
	p->rank = in->rank;
	p->elem_bytes = dtype_size(infer_dtype(x, 0));
	p->nx = 1;
	for (int k = 0; k < in->rank; k++) {
		p->nx *= in->dims[k].size;
		p->inferred[k] = in->dims[k].size;
	}
	for (int i = 0; i < ns; i++) {
		if (kernel[i] < 1 || strides[i] < 1 || pads[i] < 0 || pads[ns + i] < 0)
			infer_fail(x, KILN_INVALID_MODEL, "kernel_shape and strides must be >= 1 and pads "
			           ">= 0");
		p->inferred[2 + i] = (in->dims[2 + i].size - 1) * strides[i] + kernel[i] - pads[i] -
		                     pads[ns + i];
		if (p->inferred[2 + i] < 0)
			infer_fail(x, KILN_SHAPE_ERROR, "spatial axis %d gives no output", i);
	}
	memcpy(p->out, p->inferred, sizeof p->out);
	if (!infer_has_input(x, 2))
		return;
	/* output_shape: the unpooled tensor, padded with zeros at the end of
	 * each axis (the ONNX reference's reading; the indices stay flat over
	 * the inferred shape). */
	int64_t nshape;
	const int64_t *shape = infer_require_ints(x, 2, &nshape);
	if (nshape != in->rank)
		infer_fail(x, KILN_SHAPE_ERROR, "output_shape has %lld values for rank %d",
		           (long long)nshape, in->rank);
	for (int k = 0; k < in->rank; k++) {
		if (shape[k] < p->inferred[k])
			infer_fail(x, KILN_SHAPE_ERROR, "output_shape[%d] = %lld is smaller than the "
			           "unpooled size %lld", k, (long long)shape[k],
			           (long long)p->inferred[k]);
		p->out[k] = shape[k];
	}
}

static void infer_maxunpool(Infer *x)
{
	kiln_maxunpool_params p;
	sampling_maxunpool_params(x, &p);
	Shape y = *infer_shape(x, 0);
	for (int k = 0; k < y.rank; k++)
		if (k >= 2 || p.out[k] != y.dims[k].size)
			y.dims[k] = (Dim){.size = p.out[k]};
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

/* Col2Im (opset 18): image_shape (input 1) and block_shape (input 2) must be
 * known at compile time; X [N, C * prod(block_shape), L] with L the number of
 * block positions the image, pads, dilations and strides give. */
void sampling_col2im_params(Infer *x, kiln_col2im_params *p)
{
	memset(p, 0, sizeof *p);
	const Shape *in = infer_shape(x, 0);
	require_rank(x, 0, in, 3, "[N, C * prod(block_shape), L]");
	int64_t ni, nb;
	const int64_t *image = infer_require_ints(x, 1, &ni), *block = infer_require_ints(x, 2, &nb);
	if (ni < 1 || ni > KILN_COL2IM_MAX_AXES || nb != ni)
		infer_fail(x, KILN_SHAPE_ERROR, "image_shape and block_shape must have the same number "
		           "of values, 1 to %d (got %lld and %lld)", KILN_COL2IM_MAX_AXES, (long long)ni,
		           (long long)nb);
	int na = p->axes = (int)ni;
	int64_t v[2 * KILN_COL2IM_MAX_AXES];
	const char *names[] = {"strides", "dilations", "pads"};
	int64_t *dst[] = {p->stride, p->dilation, p->pad_begin};
	int64_t pad_end[KILN_COL2IM_MAX_AXES];
	for (int a = 0; a < na; a++)
		p->stride[a] = p->dilation[a] = 1, p->pad_begin[a] = pad_end[a] = 0;
	for (int k = 0; k < 3; k++) {
		int n = attr_ints(x, names[k], v, 2 * KILN_COL2IM_MAX_AXES);
		int want = k == 2 ? 2 * na : na;
		if (n >= 0 && n != want)
			infer_fail(x, KILN_INVALID_MODEL, "%s has %d values for %d spatial axes", names[k], n,
			           na);
		for (int a = 0; a < n && a < na; a++)
			dst[k][a] = v[a];
		if (k == 2)
			for (int a = 0; a < n / 2; a++)
				pad_end[a] = v[na + a];
	}
	int64_t taps = 1, positions = 1;
	for (int a = 0; a < na; a++) {
		p->image[a] = image[a];
		p->block[a] = block[a];
		if (image[a] < 1 || block[a] < 1 || p->stride[a] < 1 || p->dilation[a] < 1 ||
		    p->pad_begin[a] < 0 || pad_end[a] < 0)
			infer_fail(x, KILN_INVALID_MODEL, "axis %d: image and block sizes, strides and "
			           "dilations must be >= 1 and pads >= 0", a);
		int64_t span = infer_add(x, infer_mul(x, block[a] - 1, p->dilation[a]), 1);
		int64_t room = infer_sub(x, infer_add(x, infer_add(x, image[a], p->pad_begin[a]),
		                                      pad_end[a]), span);
		if (room < 0)
			infer_fail(x, KILN_SHAPE_ERROR, "axis %d: the block (%lld) is larger than the padded "
			           "image (%lld)", a, (long long)span, (long long)(room + span));
		p->blocks[a] = room / p->stride[a] + 1;
		taps = infer_mul(x, taps, block[a]);
		positions = infer_mul(x, positions, p->blocks[a]);
	}
	if (in->dims[1].size % taps || in->dims[2].size != positions)
		infer_fail(x, KILN_SHAPE_ERROR, "input is [%lld, %lld, %lld]; it must be [N, C * %lld, "
		           "%lld] for these image and block shapes", (long long)in->dims[0].size,
		           (long long)in->dims[1].size, (long long)in->dims[2].size, (long long)taps,
		           (long long)positions);
	p->batch = in->dims[0].size;
	p->channels = in->dims[1].size / taps;
}

/* AffineGrid (opset 20): theta [N, 2, 3] with size (N, C, H, W), or
 * [N, 3, 4] with (N, C, D, H, W); size must be known at compile time. */
void sampling_affinegrid_params(Infer *x, kiln_affinegrid_params *p)
{
	memset(p, 0, sizeof *p);
	const Shape *t = infer_shape(x, 0);
	int64_t n;
	const int64_t *size = infer_require_ints(x, 1, &n);
	if (n != 4 && n != 5)
		infer_fail(x, KILN_SHAPE_ERROR, "size has %lld values; it must be (N, C, H, W) or "
		           "(N, C, D, H, W)", (long long)n);
	int na = p->axes = (int)n - 2;
	require_rank(x, 0, t, 3, na == 2 ? "[N, 2, 3]" : "[N, 3, 4]");
	if (t->dims[1].size != na || t->dims[2].size != na + 1 || t->dims[0].size != size[0])
		infer_fail(x, KILN_SHAPE_ERROR, "theta is [%lld, %lld, %lld]; size (%lld, ...) needs "
		           "[%lld, %d, %d]", (long long)t->dims[0].size, (long long)t->dims[1].size,
		           (long long)t->dims[2].size, (long long)size[0], (long long)size[0], na, na + 1);
	for (int a = 0; a < na; a++) {
		p->size[a] = size[2 + a];
		if (p->size[a] < 0)
			infer_fail(x, KILN_SHAPE_ERROR, "size[%d] is negative", 2 + a);
	}
	int64_t ac = attr_int(x, "align_corners", 0);
	if (ac != 0 && ac != 1)
		infer_fail(x, KILN_INVALID_MODEL, "align_corners must be 0 or 1, got %lld", (long long)ac);
	p->align_corners = (int)ac;
	p->batch = size[0];
}

static void infer_affinegrid(Infer *x)
{
	kiln_affinegrid_params p;
	sampling_affinegrid_params(x, &p);
	Shape y = {.rank = 2 + p.axes};
	y.dims[0] = infer_shape(x, 0)->dims[0];
	for (int a = 0; a < p.axes; a++)
		y.dims[1 + a].size = p.size[a];
	y.dims[1 + p.axes].size = p.axes;
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

static void infer_col2im(Infer *x)
{
	kiln_col2im_params p;
	sampling_col2im_params(x, &p);
	Shape y = {.rank = 2 + p.axes};
	y.dims[0] = infer_shape(x, 0)->dims[0];
	y.dims[1].size = p.channels;
	for (int a = 0; a < p.axes; a++)
		y.dims[2 + a].size = p.image[a];
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

void ops_sampling_infer(Infer *x)
{
	switch (x->n->op) {
	case OP_Col2Im: infer_col2im(x); return;
	case OP_AffineGrid: infer_affinegrid(x); return;
	case OP_GridSample: infer_gridsample(x); return;
	case OP_RoiAlign: infer_roialign(x); return;
	case OP_MaxRoiPool: infer_maxroipool(x); return;
	default: infer_maxunpool(x); return;
	}
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_sampling_defs[] = {
	{.op = OP_GridSample, .infer = ops_sampling_infer, .emit = emit_gridsample,
	 .batch = BK_N_FIRST, .row_inputs = 1u << 1, .types = OT_F32,
	 .note = "bilinear, nearest, bicubic; zeros, border, reflection; align_corners"},
	{.op = OP_RoiAlign, .infer = ops_sampling_infer, .emit = emit_roialign, .types = OT_F32,
	 .note = "avg and max (as ONNX Runtime), both coordinate modes, adaptive sampling"},
	{.op = OP_MaxRoiPool, .infer = ops_sampling_infer, .emit = emit_maxroipool,
	 .batch = BK_ROI_POOL, .types = OT_F32,
	 .note = "bins as ONNX Runtime cuts them; a bin outside the image gives 0; batch indices "
	         "checked at run time"},
	{.op = OP_MaxUnpool, .infer = ops_sampling_infer, .emit = emit_maxunpool,
	 .note = "output_shape must be known at compile time"},
	{.op = OP_Col2Im, .infer = ops_sampling_infer, .emit = emit_col2im, .batch = BK_N_FIRST,
	 .shape_inputs = 1u << 1 | 1u << 2, .types = OT_F32,
	 .note = "1 to 6 spatial axes; image_shape and block_shape must be known at compile time"},
	{.op = OP_AffineGrid, .infer = ops_sampling_infer, .emit = emit_affinegrid,
	 .batch = BK_N_FIRST, .shape_inputs = 1u << 1, .types = OT_F32,
	 .note = "2-D and 3-D; size must be known at compile time"},
	{.op = NONE},
};
