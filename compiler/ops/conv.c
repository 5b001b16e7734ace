/*
 * ops/conv.c - shape inference for Conv and the pools.
 *
 * Input layout is ONNX's NCHW (N, C, spatial...). For every spatial axis the
 * output size follows the spec: with explicit pads
 *   out = floor((in + pad_begin + pad_end - ((k - 1) * dilation + 1)) / stride) + 1
 * (ceil instead of floor for pools with ceil_mode); with auto_pad SAME_* the
 * output is ceil(in / stride) and the pads are derived from it; with VALID
 * there is no padding.
 */
#include <stdint.h>
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

#define MAX_SPATIAL (KILN_MAX_RANK - 2)

typedef struct Window {
	int nspatial;
	int64_t kernel[MAX_SPATIAL], stride[MAX_SPATIAL], dilation[MAX_SPATIAL];
	int64_t pad_begin[MAX_SPATIAL], pad_end[MAX_SPATIAL];
	int64_t out[MAX_SPATIAL];
} Window;

/* Read strides, dilations, pads and auto_pad, and compute output sizes. */
static void window(Infer *x, const Shape *in, Window *w, bool ceil_mode, bool has_dilation)
{
	int ns = w->nspatial;
	int64_t v[2 * MAX_SPATIAL];
	for (int i = 0; i < ns; i++)
		w->stride[i] = w->dilation[i] = 1;
	int n = attr_ints(x, "strides", v, 2 * MAX_SPATIAL);
	if (n >= 0 && n != ns)
		infer_fail(x, KILN_INVALID_MODEL, "strides has %d values for %d spatial axes", n, ns);
	for (int i = 0; i < n; i++)
		w->stride[i] = v[i];
	if (has_dilation) {
		n = attr_ints(x, "dilations", v, 2 * MAX_SPATIAL);
		if (n >= 0 && n != ns)
			infer_fail(x, KILN_INVALID_MODEL, "dilations has %d values for %d spatial axes", n,
			           ns);
		for (int i = 0; i < n; i++)
			w->dilation[i] = v[i];
	}
	for (int i = 0; i < ns; i++)
		if (w->stride[i] < 1 || w->dilation[i] < 1 || w->kernel[i] < 1)
			infer_fail(x, KILN_INVALID_MODEL, "kernel, strides and dilations must be >= 1");
	const char *auto_pad = attr_string(x, "auto_pad", "NOTSET");
	n = attr_ints(x, "pads", v, 2 * MAX_SPATIAL);
	if (n >= 0 && n != 2 * ns)
		infer_fail(x, KILN_INVALID_MODEL, "pads has %d values for %d spatial axes", n, ns);
	for (int i = 0; i < ns; i++) {
		int64_t size = in->dims[2 + i].size;
		int64_t span = infer_add(x, infer_mul(x, w->kernel[i] - 1, w->dilation[i]), 1);
		if (strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0) {
			int64_t out = infer_add(x, size, w->stride[i] - 1) / w->stride[i];
			int64_t total = infer_sub(x, infer_add(x, infer_mul(x, out - 1, w->stride[i]), span), size);
			if (total < 0)
				total = 0;
			bool upper = auto_pad[5] == 'U';
			w->pad_begin[i] = upper ? total / 2 : total - total / 2;
			w->pad_end[i] = total - w->pad_begin[i];
			w->out[i] = out;
			continue;
		}
		if (strcmp(auto_pad, "VALID") == 0) {
			w->pad_begin[i] = w->pad_end[i] = 0;
		} else if (strcmp(auto_pad, "NOTSET") == 0) {
			w->pad_begin[i] = n > 0 ? v[i] : 0;
			w->pad_end[i] = n > 0 ? v[ns + i] : 0;
			if (w->pad_begin[i] < 0 || w->pad_end[i] < 0)
				infer_fail(x, KILN_INVALID_MODEL, "pads must not be negative");
		} else {
			infer_fail(x, KILN_INVALID_MODEL, "auto_pad \"%s\" is not NOTSET, SAME_UPPER, "
			           "SAME_LOWER or VALID", auto_pad);
		}
		int64_t padded = infer_add(x, infer_add(x, size, w->pad_begin[i]), w->pad_end[i]);
		int64_t room = padded - span;
		if (room < 0)
			infer_fail(x, KILN_SHAPE_ERROR,
			           "spatial axis %d: the window (%lld) is larger than the padded input (%lld)",
			           i, (long long)span, (long long)padded);
		w->out[i] = (ceil_mode ? infer_add(x, room, w->stride[i] - 1) / w->stride[i]
		                       : room / w->stride[i]) + 1;
	}
}

static void check_spatial_input(Infer *x, const Shape *in)
{
	if (in->rank < 3)
		infer_fail(x, KILN_SHAPE_ERROR, "input must be (N, C, spatial...), got rank %d",
		           in->rank);
}

static void infer_conv(Infer *x)
{
	const Shape *in = infer_shape(x, 0), *wt = infer_shape(x, 1);
	check_spatial_input(x, in);
	if (wt->rank != in->rank)
		infer_fail(x, KILN_SHAPE_ERROR, "weights have rank %d, input rank %d", wt->rank,
		           in->rank);
	Window w = {.nspatial = in->rank - 2};
	int64_t ks[MAX_SPATIAL];
	int nk = attr_ints(x, "kernel_shape", ks, MAX_SPATIAL);
	for (int i = 0; i < w.nspatial; i++) {
		w.kernel[i] = wt->dims[2 + i].size;
		if (nk >= 0 && (nk != w.nspatial || ks[i] != w.kernel[i]))
			infer_fail(x, KILN_SHAPE_ERROR, "kernel_shape does not match the weights");
	}
	int64_t group = attr_int(x, "group", 1);
	int64_t c = in->dims[1].size, m = wt->dims[0].size;
	if (group < 1 || c % group || m % group || infer_mul(x, wt->dims[1].size, group) != c)
		infer_fail(x, KILN_SHAPE_ERROR,
		           "channels do not fit: input has %lld, weights [%lld,%lld,...] with group %lld",
		           (long long)c, (long long)m, (long long)wt->dims[1].size, (long long)group);
	if (infer_has_input(x, 2)) {
		const Shape *b = infer_shape(x, 2);
		if (b->rank != 1 || b->dims[0].size != m)
			infer_fail(x, KILN_SHAPE_ERROR, "bias must be [%lld]", (long long)m);
	}
	window(x, in, &w, false, true);
	Shape y = {.rank = in->rank};
	y.dims[0] = in->dims[0];
	y.dims[1].size = m;
	for (int i = 0; i < w.nspatial; i++)
		y.dims[2 + i].size = w.out[i];
	/* The residual the optimizer fused (passes/fuse_add.c) has Y's shape. */
	if (x->n->nin > 3 && infer_has_input(x, 3)) {
		const Shape *r = infer_shape(x, 3);
		bool same = r->rank == y.rank;
		for (int i = 0; same && i < y.rank; i++)
			same = r->dims[i].size == y.dims[i].size;
		if (!same || infer_dtype(x, 3) != infer_dtype(x, 0))
			infer_fail(x, KILN_SHAPE_ERROR, "the fused residual must have the output's shape and type");
	}
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

/* DeformConv (opset 19), 2-D as ONNX Runtime computes it: X [N, C, H, W], W
 * [M, C/group, kH, kW], offset [N, offset_group * 2 * kH * kW, OH, OW], B
 * [M], mask [N, offset_group * kH * kW, OH, OW]; the output size as Conv's
 * with explicit pads. */
void conv_deform_params(Infer *x, kiln_deformconv_params *p)
{
	memset(p, 0, sizeof *p);
	const Shape *in = infer_shape(x, 0), *wt = infer_shape(x, 1), *off = infer_shape(x, 2);
	if (in->rank != 4)
		infer_fail(x, KILN_UNSUPPORTED, "only 2-D DeformConv (input [N, C, H, W]) is supported, "
		           "as in ONNX Runtime; the input has rank %d", in->rank);
	if (wt->rank != 4)
		infer_fail(x, KILN_SHAPE_ERROR, "weights must be [M, C/group, kH, kW], got rank %d",
		           wt->rank);
	Window w = {.nspatial = 2};
	int64_t ks[2];
	int nk = attr_ints(x, "kernel_shape", ks, 2);
	for (int i = 0; i < 2; i++) {
		w.kernel[i] = wt->dims[2 + i].size;
		if (nk >= 0 && (nk != 2 || ks[i] != w.kernel[i]))
			infer_fail(x, KILN_SHAPE_ERROR, "kernel_shape does not match the weights");
	}
	window(x, in, &w, false, true);
	p->batch = in->dims[0].size;
	p->in_c = in->dims[1].size, p->in_h = in->dims[2].size, p->in_w = in->dims[3].size;
	p->out_c = wt->dims[0].size, p->out_h = w.out[0], p->out_w = w.out[1];
	p->group = attr_int(x, "group", 1), p->offset_group = attr_int(x, "offset_group", 1);
	p->kernel_h = w.kernel[0], p->kernel_w = w.kernel[1];
	p->stride_h = w.stride[0], p->stride_w = w.stride[1];
	p->dilation_h = w.dilation[0], p->dilation_w = w.dilation[1];
	p->pad_top = w.pad_begin[0], p->pad_left = w.pad_begin[1];
	if (p->group < 1 || p->in_c % p->group || p->out_c % p->group ||
	    infer_mul(x, wt->dims[1].size, p->group) != p->in_c)
		infer_fail(x, KILN_SHAPE_ERROR, "channels do not fit: input has %lld, weights [%lld, "
		           "%lld, ...] with group %lld", (long long)p->in_c, (long long)p->out_c,
		           (long long)wt->dims[1].size, (long long)p->group);
	if (p->offset_group < 1 || p->in_c % p->offset_group)
		infer_fail(x, KILN_SHAPE_ERROR, "offset_group %lld does not divide the %lld channels",
		           (long long)p->offset_group, (long long)p->in_c);
	int64_t taps = infer_mul(x, p->kernel_h, p->kernel_w);
	int64_t want[4] = {p->batch, infer_mul(x, infer_mul(x, p->offset_group, 2), taps), p->out_h,
	                   p->out_w};
	for (int k = 0; k < 2; k++) {
		int i = k ? 4 : 2;
		if (!infer_has_input(x, i))
			continue;
		const Shape *s = k ? infer_shape(x, 4) : off;
		if (k)
			want[1] = infer_mul(x, p->offset_group, taps);
		bool ok = s->rank == 4;
		for (int d = 0; ok && d < 4; d++)
			ok = s->dims[d].size == want[d];
		if (!ok)
			infer_fail(x, KILN_SHAPE_ERROR, "%s must be [%lld, %lld, %lld, %lld]",
			           k ? "mask" : "offset", (long long)want[0], (long long)want[1],
			           (long long)want[2], (long long)want[3]);
	}
	if (infer_has_input(x, 3)) {
		const Shape *b = infer_shape(x, 3);
		if (b->rank != 1 || b->dims[0].size != p->out_c)
			infer_fail(x, KILN_SHAPE_ERROR, "bias must be [%lld]", (long long)p->out_c);
	}
	for (int i = 0; i < x->n->nin && i < 5; i++)
		if (infer_has_input(x, i) && infer_dtype(x, i) != DT_FLOAT)
			infer_fail(x, KILN_UNSUPPORTED, "input %d is %s; DeformConv is supported on float32 "
			           "only", i, dtype_name(infer_dtype(x, i)));
}

static void infer_deform_conv(Infer *x)
{
	kiln_deformconv_params p;
	conv_deform_params(x, &p);
	Shape y = {.rank = 4};
	y.dims[0] = infer_shape(x, 0)->dims[0];
	y.dims[1].size = p.out_c, y.dims[2].size = p.out_h, y.dims[3].size = p.out_w;
	infer_set_output(x, 0, DT_FLOAT, &y);
}

/* LpPool's and GlobalLpPool's p: an int from opset 2, a float before
 * (which must then be a whole number); >= 1. */
int64_t pool_lp_norm(Infer *x)
{
	double p = x->n->since >= 2 ? (double)attr_int(x, "p", 2) : (double)attr_float(x, "p", 2.0f);
	if (!(p >= 1 && p <= INT32_MAX) || p != (double)(int64_t)p)
		infer_fail(x, KILN_INVALID_MODEL, "p must be a whole number >= 1, got %g", p);
	return (int64_t)p;
}

static void infer_pool(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	check_spatial_input(x, in);
	Window w = {.nspatial = in->rank - 2};
	int nk = attr_ints(x, "kernel_shape", w.kernel, MAX_SPATIAL);
	if (nk != w.nspatial)
		infer_fail(x, KILN_INVALID_MODEL, "kernel_shape must have %d values", w.nspatial);
	bool ceil_mode = attr_int(x, "ceil_mode", 0) != 0;
	int64_t storage_order = attr_int(x, "storage_order", 0);
	if (storage_order != 0 && storage_order != 1)
		infer_fail(x, KILN_INVALID_MODEL, "storage_order must be 0 or 1, got %lld",
		           (long long)storage_order);
	/* Dilations: MaxPool, AveragePool from opset 19, LpPool from opset 18. */
	bool dilated = x->n->op == OP_MaxPool || (x->n->op == OP_AveragePool && x->n->since >= 19) ||
	               (x->n->op == OP_LpPool && x->n->since >= 18);
	if (x->n->op == OP_LpPool)
		pool_lp_norm(x);
	window(x, in, &w, ceil_mode, dilated);
	Shape y = *in;
	for (int i = 0; i < w.nspatial; i++)
		y.dims[2 + i].size = w.out[i];
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
	infer_set_output(x, 1, DT_INT64, &y);  /* MaxPool's optional Indices */
}

/* ConvTranspose: X [N, C, in...], W [C, M/group, k...]. Per axis,
 * out = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pads,
 * or the output_shape attribute (or in * stride with auto_pad SAME_*), from
 * which the pads are then derived, as the ONNX spec says. */
void conv_transpose_geometry(Infer *x, const Shape *in, const Shape *w, ConvTGeometry *g)
{
	int ns = in->rank - 2;
	if (ns < 1 || ns > 3 || w->rank != in->rank)
		infer_fail(x, KILN_SHAPE_ERROR, "input and weights must be (N, C, 1 to 3 spatial dims)");
	g->ns = ns;
	g->group = attr_int(x, "group", 1);
	if (g->group < 1 || in->dims[1].size != w->dims[0].size || in->dims[1].size % g->group)
		infer_fail(x, KILN_SHAPE_ERROR, "channels do not fit the weights and group");
	g->out_channels = infer_mul(x, w->dims[1].size, g->group);
	int64_t v[3], opad[3] = {0, 0, 0}, oshape[3];
	for (int i = 0; i < ns; i++) {
		g->kernel[i] = w->dims[2 + i].size;
		g->stride[i] = g->dilation[i] = 1;
		g->pad_begin[i] = g->pad_end[i] = 0;
	}
	int n = attr_ints(x, "strides", v, 3);
	for (int i = 0; i < n && i < ns; i++)
		g->stride[i] = v[i];
	n = attr_ints(x, "dilations", v, 3);
	for (int i = 0; i < n && i < ns; i++)
		g->dilation[i] = v[i];
	n = attr_ints(x, "output_padding", v, 3);
	for (int i = 0; i < n && i < ns; i++)
		opad[i] = v[i];
	int64_t pads[6];
	int np = attr_ints(x, "pads", pads, 6);
	int nos = attr_ints(x, "output_shape", oshape, 3);
	const char *ap = attr_string(x, "auto_pad", "NOTSET");
	bool same = strncmp(ap, "SAME", 4) == 0, upper = strcmp(ap, "SAME_UPPER") == 0;
	for (int i = 0; i < ns; i++) {
		if (g->stride[i] < 1 || g->dilation[i] < 1)
			infer_fail(x, KILN_SHAPE_ERROR, "spatial axis %d gives no output", i);
		int64_t full = infer_add(x, infer_add(x, infer_mul(x, g->stride[i], in->dims[2 + i].size - 1),
		                                      opad[i]),
		                         infer_add(x, infer_mul(x, g->kernel[i] - 1, g->dilation[i]), 1));
		if (nos == ns || same) {
			int64_t want = nos == ns ? oshape[i] : infer_mul(x, in->dims[2 + i].size, g->stride[i]);
			int64_t total = infer_sub(x, full, want);
			if (total < 0)
				total = 0;
			g->pad_begin[i] = upper ? total / 2 : total - total / 2;
			g->pad_end[i] = total - g->pad_begin[i];
			g->out[i] = want;
		} else {
			if (np == 2 * ns) {
				g->pad_begin[i] = pads[i];
				g->pad_end[i] = pads[ns + i];
			}
			g->out[i] = infer_sub(x, infer_sub(x, full, g->pad_begin[i]), g->pad_end[i]);
		}
		if (g->out[i] < 0 || g->stride[i] < 1 || g->dilation[i] < 1)
			infer_fail(x, KILN_SHAPE_ERROR, "spatial axis %d gives no output", i);
	}
}

static void infer_conv_transpose(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	ConvTGeometry g;
	conv_transpose_geometry(x, in, infer_shape(x, 1), &g);
	Shape y = *in;
	y.dims[1].size = g.out_channels;
	for (int i = 0; i < g.ns; i++)
		y.dims[2 + i].size = g.out[i];
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

void ops_conv_infer(Infer *x)
{
	switch (x->n->op) {
	case OP_Conv:
		infer_conv(x);
		return;
	case OP_ConvTranspose:
		infer_conv_transpose(x);
		return;
	case OP_DeformConv:
		infer_deform_conv(x);
		return;
	case OP_GlobalAveragePool: case OP_GlobalMaxPool: case OP_GlobalLpPool: {
		const Shape *in = infer_shape(x, 0);
		if (x->n->op == OP_GlobalLpPool)
			pool_lp_norm(x);
		check_spatial_input(x, in);
		Shape y = *in;
		for (int i = 2; i < y.rank; i++)
			y.dims[i].size = 1;
		infer_set_output(x, 0, infer_dtype(x, 0), &y);
		return;
	}
	default:
		infer_pool(x);
	}
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_conv_defs[] = {
	{.op = OP_Conv, .infer = ops_conv_infer, .emit = emit_conv, .batch = BK_N_FIRST,
	 .row_inputs = 1u << 3,   /* the residual passes/fuse_add.c adds, plane by plane */
	 .scratch = conv_scratch_bytes, .cost = CK_CONV, .tile = TK_CONV, .types = OT_F32,
	 .pad = PD_WINDOW,
	 .note = "1-D to 3-D; groups, dilations, auto_pad"},
	{.op = OP_MaxPool, .infer = ops_conv_infer, .emit = emit_pool, .batch = BK_N_FIRST,
	 .types = OT_F32 | OT_F64 | OT_F16 | OT_INTS,
	 .batch_flags = BF_FLAT_INDICES,
	 .note = "1-D to 3-D; the Indices output (storage_order 0 and 1)"},
	{.op = OP_ConvTranspose, .infer = ops_conv_infer, .emit = emit_conv_transpose,
	 .batch = BK_N_FIRST, .cost = CK_CONV_TRANSPOSE, .types = OT_F32,
	 .note = "1-D to 3-D; output_shape and output_padding"},
	{.op = OP_DeformConv, .infer = ops_conv_infer, .emit = emit_deform_conv,
	 .batch = BK_N_FIRST, .row_inputs = 1u << 2 | 1u << 4, .types = OT_F32,
	 .note = "2-D (as ONNX Runtime); group, offset_group, mask, bias"},
	{.op = OP_AveragePool, .infer = ops_conv_infer, .emit = emit_pool, .batch = BK_N_FIRST,
	 .types = OT_F32,
	 .note = "1-D to 3-D; count_include_pad, ceil_mode, dilations (opset 19)"},
	{.op = OP_GlobalAveragePool, .infer = ops_conv_infer, .emit = emit_pool,
	 .batch = BK_N_FIRST, .types = OT_F32},
	{.op = OP_LpPool, .infer = ops_conv_infer, .emit = emit_pool, .batch = BK_N_FIRST,
	 .types = OT_F32,
	 .note = "1-D to 3-D; any whole p >= 1; dilations and ceil_mode (opset 18)"},
	{.op = OP_GlobalLpPool, .infer = ops_conv_infer, .emit = emit_pool, .batch = BK_N_FIRST,
	 .types = OT_F32,
	 .note = "any whole p >= 1"},
	{.op = OP_GlobalMaxPool, .infer = ops_conv_infer, .emit = emit_pool, .batch = BK_N_FIRST,
	 .types = OT_F32},
	{.op = NONE},
};
