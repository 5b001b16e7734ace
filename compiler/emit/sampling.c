/*
 * emit/sampling.c - op emitters for GridSample, RoiAlign, MaxRoiPool and
 * MaxUnpool: one kernel call each, with a params struct of literal sizes read
 * from the node by the same functions shape inference used (ops/sampling.c).
 *
 * RoiAlign, MaxRoiPool and MaxUnpool read indices that arrive at run time;
 * their kernels check them, and the node function passes a bad index on to
 * the caller as KILN_SHAPE_ERROR.
 */
#include <inttypes.h>

#include "emit_c.h"

/* Designated initializers `.name = {v0, v1, ...},` of n int64 arrays of len values. */
static void int_fields(Emit *E, const char *const *names, const int64_t *const *vals, int n,
                       int len)
{
	for (int i = 0; i < n; i++) {
		emitf(E, "\t\t.%s = {", names[i]);
		for (int k = 0; k < len; k++)
			emitf(E, "%s%" PRId64, k ? ", " : "", vals[i][k]);
		emitf(E, "},\n");
	}
}

void emit_gridsample(Emit *E)
{
	Operand X = in_op(E, 0), G = in_op(E, 1), Y = out_op(E, 0);
	require_f32(E, &X);
	require_f32(E, &G);
	Infer inf = emit_infer(E);
	kiln_gridsample_params p;
	sampling_gridsample_params(&inf, &p);
	static const char *const modes[] = {"KILN_GRIDSAMPLE_BILINEAR", "KILN_GRIDSAMPLE_NEAREST",
	                                    "KILN_GRIDSAMPLE_BICUBIC"};
	static const char *const paddings[] = {"KILN_GRIDSAMPLE_ZEROS", "KILN_GRIDSAMPLE_BORDER",
	                                       "KILN_GRIDSAMPLE_REFLECTION"};
	emitf(E, "\tstatic const kiln_gridsample_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .channels = %" PRId64 ", .in_h = %" PRId64 ", .in_w = %" PRId64
	       ", .out_h = %" PRId64 ", .out_w = %" PRId64 ",\n"
	       "\t\t.mode = %s, .padding_mode = %s, .align_corners = %d,\n\t};\n",
	    p.batch, p.channels, p.in_h, p.in_w, p.out_h, p.out_w, modes[p.mode],
	    paddings[p.padding_mode], p.align_corners);
	emitf(E, "\tkiln_f32_gridsample(&p, %s, %s, %s);\n", X.expr, G.expr, Y.expr);
}

void emit_roialign(Emit *E)
{
	Operand X = in_op(E, 0), R = in_op(E, 1), B = in_op(E, 2), Y = out_op(E, 0);
	require_f32(E, &X);
	require_f32(E, &R);
	Infer inf = emit_infer(E);
	kiln_roialign_params p;
	sampling_roialign_params(&inf, &p);
	emitf(E, "\tstatic const kiln_roialign_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .channels = %" PRId64 ", .in_h = %" PRId64 ", .in_w = %" PRId64
	       ",\n\t\t.num_rois = %" PRId64 ", .out_h = %" PRId64 ", .out_w = %" PRId64
	       ", .sampling_ratio = %" PRId64 ",\n"
	       "\t\t.spatial_scale = %s, .half_pixel = %d, .is_max = %d,\n\t};\n",
	    p.batch, p.channels, p.in_h, p.in_w, p.num_rois, p.out_h, p.out_w, p.sampling_ratio,
	    flit(E, p.spatial_scale, DT_DOUBLE), p.half_pixel, p.is_max);
	emitf(E, "\tint status = kiln_f32_roialign(&p, %s, %s, %s, %s);\n"
	       "\tif (status != KILN_OK)\n\t\treturn status; /* a batch index out of range */\n",
	    X.expr, R.expr, B.expr, Y.expr);
}

void emit_maxroipool(Emit *E)
{
	Operand X = in_op(E, 0), R = in_op(E, 1), Y = out_op(E, 0);
	require_f32(E, &X);
	require_f32(E, &R);
	Infer inf = emit_infer(E);
	kiln_roipool_params p;
	sampling_maxroipool_params(&inf, &p);
	emitf(E, "\tstatic const kiln_roipool_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .channels = %" PRId64 ", .in_h = %" PRId64 ", .in_w = %" PRId64
	       ",\n\t\t.num_rois = %" PRId64 ", .pooled_h = %" PRId64 ", .pooled_w = %" PRId64
	       ", .spatial_scale = %s,\n\t};\n",
	    p.batch, p.channels, p.in_h, p.in_w, p.num_rois, p.pooled_h, p.pooled_w,
	    flit(E, (double)p.spatial_scale, DT_FLOAT));
	emitf(E, "\tint status = kiln_f32_maxroipool(&p, %s, %s, %s);\n"
	       "\tif (status != KILN_OK)\n\t\treturn status; /* a batch index out of range */\n",
	    X.expr, R.expr, Y.expr);
}

/* Col2Im: the block columns summed back into the image. */
void emit_col2im(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	Infer inf = emit_infer(E);
	kiln_col2im_params p;
	sampling_col2im_params(&inf, &p);
	emitf(E, "\tstatic const kiln_col2im_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .channels = %" PRId64 ", .axes = %d,\n", p.batch, p.channels,
	    p.axes);
	const char *const names[] = {"image", "block", "stride", "dilation", "pad_begin", "blocks"};
	const int64_t *const vals[] = {p.image, p.block, p.stride, p.dilation, p.pad_begin, p.blocks};
	int_fields(E, names, vals, 6, p.axes);
	emitf(E, "\t};\n\tkiln_f32_col2im(&p, %s, %s);\n", X.expr, Y.expr);
}

void emit_affinegrid(Emit *E)
{
	Operand T = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &T);
	Infer inf = emit_infer(E);
	kiln_affinegrid_params p;
	sampling_affinegrid_params(&inf, &p);
	emitf(E, "\tstatic const kiln_affinegrid_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .axes = %d, .size = {%" PRId64 ", %" PRId64 ", %" PRId64
	       "}, .align_corners = %d,\n\t};\n\tkiln_f32_affinegrid(&p, %s, %s);\n", p.batch,
	    p.axes, p.size[0], p.size[1], p.size[2], p.align_corners, T.expr, Y.expr);
}

/* Y = 0, then Y[I[k]] = X[k], the indices flat over the unpooled shape,
 * which output_shape may pad at the end of each axis. */
void emit_maxunpool(Emit *E)
{
	Operand X = in_op(E, 0), I = in_op(E, 1), Y = out_op(E, 0);
	Infer inf = emit_infer(E);
	kiln_maxunpool_params p;
	sampling_maxunpool_params(&inf, &p);
	emitf(E, "\tstatic const kiln_maxunpool_params p = {\n"
	       "\t\t.rank = %d, .nx = %" PRId64 ", .elem_bytes = %zu,\n", p.rank, p.nx, p.elem_bytes);
	const char *const names[] = {"inferred", "out"};
	const int64_t *const dims[] = {p.inferred, p.out};
	int_fields(E, names, dims, 2, p.rank);
	emitf(E, "\t};\n\tint status = kiln_maxunpool(&p, %s, %s, %s);\n"
	       "\tif (status != KILN_OK)\n\t\treturn status; /* an index out of range */\n",
	    X.expr, I.expr, Y.expr);
}
