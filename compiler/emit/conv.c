/*
 * emit/conv.c - op emitters for convolution and pooling (ops/conv.c): Conv,
 * ConvTranspose, DeformConv, MaxPool, AveragePool, LpPool and the global
 * pools.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c.h"

/* ---- convolution and pooling ------------------------------------------ */

static void geometry(Emit *E, const Shape *x, const Shape *y, const Shape *w, WindowGeo *g)
{
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	if (!window_geometry(&inf, x, y, w, g))
		emit_fail(E, "%d-D windows are not supported by the code generator yet", x->rank - 2);
}

/* The 3-D params struct, shared by Conv and the pools. */
static void emit_window3d(Emit *E, const WindowGeo *g, int64_t n, int64_t c, int64_t m,
                          int64_t group)
{
	emitf(E, "\tstatic const kiln_window3d_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .channels = %" PRId64 ", .out_channels = %" PRId64
	       ", .group = %" PRId64 ",\n", n, c, m, group);
	const char *names[] = {"in", "kernel", "stride", "dilation", "pad_begin", "pad_end", "out"};
	const int64_t *vals[] = {g->in, g->k, g->s, g->d, g->pb, g->pe, g->outsz};
	for (int i = 0; i < 7; i++)
		emitf(E, "\t\t.%s = {%" PRId64 ", %" PRId64 ", %" PRId64 "},\n", names[i], vals[i][0],
		    vals[i][1], vals[i][2]);
	emitf(E, "\t};\n");
}

/* The Conv's weight packed at compile time (kiln_f32_conv2d_pack), or NULL:
 * only when every reader of the weight is a Conv reading it as W, so the
 * packed copy replaces it and it is still stored once. */
static const char *packed_conv_weight(Emit *E, const kiln_conv2d_params *p, SymLayout layout)
{
	int id = E->n->in[1];
	const Value *v = &E->g->values[id];
	int64_t nw = p->out_channels * p->in_channels * p->kernel_h * p->kernel_w;
	if (v->kind != VAL_WEIGHT || E->sig->dtypes[id] != DT_FLOAT || v->dtype != DT_FLOAT ||
	    E->sig->folded[id] || E->plan->root[id] != id || E->in_index[id] != NONE ||
	    v->weight->nbytes != (uint64_t)nw * sizeof(float))
		return NULL;
	int uses = 0;
	for (int i = 0; i < E->g->nnodes; i++) {
		const Node *n = &E->g->nodes[i];
		for (int j = 0; j < n->nin; j++)
			if (n->in[j] == id) {
				if (j != 1 || n->op != OP_Conv)
					return NULL;
				uses++;
			}
	}
	if (uses != v->nuse)
		return NULL;  /* also read by a subgraph */
	int64_t pack[4] = {p->in_channels, p->out_channels, p->kernel_h, p->kernel_w};
	int s = symbol_in_layout(E, DT_FLOAT, v->weight->bytes, v->weight->nbytes, v->name, layout,
	                         pack);
	return symbol_expr(E, s, "float");
}

/* A 1x1, stride-1, unpadded, ungrouped Conv of at most 32 output pixels,
 * with ReLU or no activation and no residual: DeepJet's 1x1 Conv1d stacks,
 * whose planes are too small for the GEMM core's panels
 * (kiln_f32_conv2d_small, runtime/kernels/f32-pointwise). */
static bool small_pointwise(Emit *E, const WindowGeo *g, const char *residual)
{
	FusedAct act = E->n->fused.act;
	if (residual || g->group != 1 || g->outsz[1] * g->outsz[2] > 32)
		return false;
	if (act != FACT_NONE && act != FACT_RELU)
		return false;
	for (int j = 1; j < 3; j++)
		if (g->k[j] != 1 || g->s[j] != 1 || g->d[j] != 1 || g->pb[j] != 0 || g->pe[j] != 0 ||
		    g->outsz[j] != g->in[j])
			return false;
	return true;
}

void emit_conv(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	int node = (int)(E->n - E->g->nodes);
	int buf = E->plan->scratch_of[node];
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	kiln_conv2d_params pp;
	const char *packed = NULL;
	/* the algorithm conv_scratch_bytes planned for (ops/conv_algo.c) */
	bool wino1d = false, wino2d = false;
	if (buf != NONE && conv2d_params(&inf, X.shape, Y.shape, &E->sig->shapes[E->n->in[1]], &pp)) {
		wino1d = wino1d_wins(&pp);
		wino2d = !wino1d && winograd_wins(E->g, &pp);
		int64_t need = wino1d   ? kiln_f32_conv1d_wino_work(&pp)
		               : wino2d ? kiln_f32_conv2d_winograd_work(&pp)
		                        : kiln_f32_conv2d_packed_work(&pp);
		if (need > 0 && need * (int64_t)sizeof(float) <= E->plan->bufs[buf].bytes)
			packed = packed_conv_weight(E, &pp, wino1d   ? SYM_WINO1D
			                                    : wino2d ? SYM_WINO2D
			                                             : SYM_PACK_CONV32);
	}
	Operand W = packed ? (Operand){0} : in_op(E, 1);
	if (packed)
		W.shape = &E->sig->shapes[E->n->in[1]], W.dtype = DT_FLOAT, W.expr = packed;
	WindowGeo g;
	geometry(E, X.shape, Y.shape, W.shape, &g);
	column_as_row(&g);
	const char *bias = "NULL";
	if (E->n->nin > 2 && E->n->in[2] != NONE)
		bias = in_op(E, 2).expr;
	if (g.ns == 3) {
		if ((E->n->nin > 3 && E->n->in[3] != NONE) || W.dtype != DT_FLOAT)
			emit_fail(E, "3-D Conv has no fused residual or float16 weights");
		emit_window3d(E, &g, X.shape->dims[0].size, X.shape->dims[1].size, Y.shape->dims[1].size,
		              g.group);
		emitf(E, "\tkiln_f32_conv3d(&p, %s, %s, %s, %s);\n", X.expr, W.expr, bias, Y.expr);
		return;
	}
	emitf(E, "\tstatic const kiln_conv2d_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .in_channels = %" PRId64 ", .in_h = %" PRId64 ", .in_w = %" PRId64 ",\n"
	       "\t\t.out_channels = %" PRId64 ", .group = %" PRId64 ", .kernel_h = %" PRId64 ", .kernel_w = %" PRId64 ",\n"
	       "\t\t.stride_h = %" PRId64 ", .stride_w = %" PRId64 ", .dilation_h = %" PRId64 ", .dilation_w = %" PRId64 ",\n"
	       "\t\t.pad_top = %" PRId64 ", .pad_left = %" PRId64 ", .pad_bottom = %" PRId64 ", .pad_right = %" PRId64 ",\n"
	       "\t\t.out_h = %" PRId64 ", .out_w = %" PRId64 ",\n\t};\n",
	    X.shape->dims[0].size, X.shape->dims[1].size, g.in[1], g.in[2], Y.shape->dims[1].size,
	    g.group, g.k[1], g.k[2], g.s[1], g.s[2], g.d[1], g.d[2], g.pb[1],
	    g.pb[2], g.pe[1], g.pe[2], g.outsz[1], g.outsz[2]);
	/* The residual Add and activation fused by the optimizer: the residual
	 * is a kiln-internal fourth input (passes/fuse.c, emit/epilogue.c). */
	const char *residual = NULL;
	if (E->n->nin > 3 && E->n->in[3] != NONE) {
		Operand R = in_op(E, 3);
		require_f32(E, &R);
		if (R.nelem != Y.nelem)
			emit_fail(E, "the fused residual has %" PRId64 " elements, the output %" PRId64,
			          R.nelem, Y.nelem);
		residual = R.expr;
	}
	const char *ep = emit_has_act(E->n) || residual ? emit_epilogue(E, NULL, residual) : NULL;
	if (packed && wino1d) {
		const PlanBuf *sb = &E->plan->bufs[buf];
		emitf(E, "\t/* 1-D Winograd F(4, 3), chosen by the shape (3 taps, stride 1, %" PRId64
		      " -> %" PRId64 " channels, %" PRId64 " outputs): W transformed at compile time; "
		      "arena scratch @%" PRId64 "+%" PRId64 ": the input tiles, their products */\n",
		      pp.in_channels, pp.out_channels, pp.out_w, sb->off, sb->bytes);
		emitf(E, "\tkiln_f32_conv1d_wino(&p, %s, %s, %s, %s, %s, (float *)(a + %" PRId64 "));\n",
		      X.expr, W.expr, bias, Y.expr, ep ? ep : "NULL", sb->off);
	} else if (packed && wino2d) {
		const PlanBuf *sb = &E->plan->bufs[buf];
		emitf(E, "\t/* Winograd F(2x2, 3x3), chosen by the shape (3x3, stride 1, %" PRId64
		      " -> %" PRId64 " channels, %" PRId64 " x %" PRId64 " outputs%s): W transformed at "
		      "compile time; arena scratch @%" PRId64 "+%" PRId64 ": a block of input tiles, "
		      "their products */\n",
		      pp.in_channels, pp.out_channels, pp.out_h, pp.out_w,
		      winograd_by_shape(&pp) ? "" : "; --winograd: by the batch's tiles",
		      sb->off, sb->bytes);
		emitf(E, "\tkiln_f32_conv2d_winograd(&p, %s, %s, %s, %s, %s, (float *)(a + %" PRId64 "));\n",
		      X.expr, W.expr, bias, Y.expr, ep ? ep : "NULL", sb->off);
	} else if (packed) {
		const PlanBuf *sb = &E->plan->bufs[buf];
		emitf(E, "\t/* W packed at compile time (8 output channels a group); arena scratch @%"
		      PRId64 "+%" PRId64 ": the offsets and each image's padded planes */\n", sb->off,
		      sb->bytes);
		emitf(E, "\tkiln_f32_conv2d_packed(&p, %s, %s, %s, %s, %s, (float *)(a + %" PRId64 "));\n",
		      X.expr, W.expr, bias, Y.expr, ep ? ep : "NULL", sb->off);
	} else if (W.dtype == DT_FLOAT16) /* weights stored as float16 (passes/f16.c, fuse.c) */
		emitf(E, "\tkiln_f32_conv2d_f16w(&p, %s, %s, %s, %s, %s);\n", X.expr, W.expr, bias, Y.expr,
		    ep ? ep : "NULL");
	else if (W.dtype == DT_FLOAT && small_pointwise(E, &g, residual))
		emitf(E, "\tkiln_f32_conv2d_small(&p, %s, %s, %s, %s, %s);\n", X.expr, W.expr, bias,
		      Y.expr, ep ? ep : "NULL");
	else if (ep)
		emitf(E, "\tkiln_f32_conv2d_ep(&p, %s, %s, %s, %s, %s);\n", X.expr, W.expr, bias, Y.expr, ep);
	else
		emitf(E, "\tkiln_f32_conv2d(&p, %s, %s, %s, %s);\n", X.expr, W.expr, bias, Y.expr);
}

/* DeformConv, 2-D: one kernel call with the geometry shape inference read. */
void emit_deform_conv(Emit *E)
{
	Operand X = in_op(E, 0), W = in_op(E, 1), Off = in_op(E, 2), Y = out_op(E, 0);
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	kiln_deformconv_params p;
	conv_deform_params(&inf, &p);
	const char *bias = E->n->nin > 3 && E->n->in[3] != NONE ? in_op(E, 3).expr : "NULL";
	const char *mask = E->n->nin > 4 && E->n->in[4] != NONE ? in_op(E, 4).expr : "NULL";
	emitf(E, "\tstatic const kiln_deformconv_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .in_c = %" PRId64 ", .in_h = %" PRId64 ", .in_w = %" PRId64
	       ", .out_c = %" PRId64 ", .out_h = %" PRId64 ", .out_w = %" PRId64 ",\n"
	       "\t\t.group = %" PRId64 ", .offset_group = %" PRId64 ", .kernel_h = %" PRId64
	       ", .kernel_w = %" PRId64 ",\n\t\t.stride_h = %" PRId64 ", .stride_w = %" PRId64
	       ", .dilation_h = %" PRId64 ", .dilation_w = %" PRId64 ", .pad_top = %" PRId64
	       ", .pad_left = %" PRId64 ",\n\t};\n",
	    p.batch, p.in_c, p.in_h, p.in_w, p.out_c, p.out_h, p.out_w, p.group, p.offset_group,
	    p.kernel_h, p.kernel_w, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, p.pad_top,
	    p.pad_left);
	emitf(E, "\tkiln_f32_deformconv2d(&p, %s, %s, %s, %s, %s, %s);\n", X.expr, W.expr, Off.expr,
	    bias, mask, Y.expr);
}

/* MaxPool with the Indices output, or on float64, float16, int8 or uint8:
 * the N-D kernel of that element type (storage_order orders the indices). */
static void emit_maxpool_nd(Emit *E, const Operand *X, const Operand *Y, bool has_indices)
{
	const char *kind = NULL;
	switch (X->dtype) {
	case DT_FLOAT: kind = "f32"; break;
	case DT_DOUBLE: kind = "f64"; break;
	case DT_FLOAT16: kind = "f16"; break;
	case DT_INT8: kind = "i8"; break;
	case DT_UINT8: kind = "u8"; break;
	default:
		emit_fail(E, "MaxPool on %s is not supported (ONNX defines float16, float, double, "
		          "int8 and uint8)", dtype_name(X->dtype));
	}
	WindowGeo g;
	geometry(E, X->shape, Y->shape, NULL, &g);
	emit_window3d(E, &g, X->shape->dims[0].size, X->shape->dims[1].size, 0, 1);
	emitf(E, "\tkiln_%s_maxpool_nd(&p, %d /* storage_order */, %s, %s, %s);\n", kind,
	    g.storage_order, X->expr, Y->expr,
	    has_indices ? out_op(E, 1).expr : "NULL");
}

void emit_pool(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	bool has_indices = E->n->nout > 1 && E->n->out[1] != NONE;
	if (E->n->op == OP_MaxPool && (has_indices || X.dtype != DT_FLOAT)) {
		emit_maxpool_nd(E, &X, &Y, has_indices);
		return;
	}
	require_f32(E, &X);
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	if (E->n->op == OP_GlobalLpPool) {
		int64_t planes = X.shape->dims[0].size * X.shape->dims[1].size;
		emitf(E, "\tkiln_f32_global_lppool(%s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ");\n",
		    X.expr, Y.expr, planes, X.nelem / (planes ? planes : 1), pool_lp_norm(&inf));
		return;
	}
	if (E->n->op == OP_GlobalAveragePool || E->n->op == OP_GlobalMaxPool) {
		int64_t planes = X.shape->dims[0].size * X.shape->dims[1].size;
		emitf(E, "\tkiln_f32_global_%spool(%s, %s, %" PRId64 ", %" PRId64 ");\n",
		    E->n->op == OP_GlobalMaxPool ? "max" : "avg", X.expr, Y.expr, planes,
		    X.nelem / (planes ? planes : 1));
		return;
	}
	WindowGeo g;
	geometry(E, X.shape, Y.shape, NULL, &g);
	if (E->n->op == OP_AveragePool && E->n->since < 19)  /* dilations from opset 19 */
		g.d[0] = g.d[1] = g.d[2] = 1;
	if (E->n->op == OP_LpPool) {
		if (E->n->since < 18)  /* dilations from opset 18 */
			g.d[0] = g.d[1] = g.d[2] = 1;
		emit_window3d(E, &g, X.shape->dims[0].size, X.shape->dims[1].size, 0, 1);
		emitf(E, "\tkiln_f32_lppool_nd(&p, %" PRId64 " /* p */, %s, %s);\n", pool_lp_norm(&inf),
		    X.expr, Y.expr);
		return;
	}
	if (g.ns == 3) {
		emit_window3d(E, &g, X.shape->dims[0].size, X.shape->dims[1].size, 0, 1);
		if (E->n->op == OP_MaxPool)
			emitf(E, "\tkiln_f32_maxpool3d(&p, %s, %s);\n", X.expr, Y.expr);
		else
			emitf(E, "\tkiln_f32_avgpool3d(&p, %d, %s, %s);\n",
			    g.count_include_pad, X.expr, Y.expr);
		return;
	}
	emitf(E, "\tstatic const kiln_pool2d_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .channels = %" PRId64 ", .in_h = %" PRId64 ", .in_w = %" PRId64 ",\n"
	       "\t\t.kernel_h = %" PRId64 ", .kernel_w = %" PRId64 ", .stride_h = %" PRId64 ", .stride_w = %" PRId64 ",\n"
	       "\t\t.dilation_h = %" PRId64 ", .dilation_w = %" PRId64 ",\n"
	       "\t\t.pad_top = %" PRId64 ", .pad_left = %" PRId64 ", .pad_bottom = %" PRId64 ", .pad_right = %" PRId64 ",\n"
	       "\t\t.out_h = %" PRId64 ", .out_w = %" PRId64 ",\n\t};\n",
	    X.shape->dims[0].size, X.shape->dims[1].size, g.in[1], g.in[2], g.k[1], g.k[2], g.s[1],
	    g.s[2], g.d[1], g.d[2], g.pb[1], g.pb[2], g.pe[1], g.pe[2], g.outsz[1], g.outsz[2]);
	if (E->n->op == OP_MaxPool)
		emitf(E, "\tkiln_f32_maxpool2d(&p, %s, %s);\n", X.expr, Y.expr);
	else
		emitf(E, "\tkiln_f32_avgpool2d(&p, %d, %s, %s);\n",
		    g.count_include_pad, X.expr, Y.expr);
}

/* ConvTranspose: each input element scattered through the kernel into the
 * output, which starts as the bias. Spatial axes padded to three. */
void emit_conv_transpose(Emit *E)
{
	Operand X = in_op(E, 0), W = in_op(E, 1), Y = out_op(E, 0);
	require_f32(E, &X);
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	ConvTGeometry g;
	conv_transpose_geometry(&inf, X.shape, W.shape, &g);
	int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
	int64_t pb[3] = {0, 0, 0}, o[3] = {1, 1, 1};
	int off = 3 - g.ns;
	for (int i = 0; i < g.ns; i++) {
		in[off + i] = X.shape->dims[2 + i].size;
		k[off + i] = g.kernel[i];
		s[off + i] = g.stride[i];
		d[off + i] = g.dilation[i];
		pb[off + i] = g.pad_begin[i];
		o[off + i] = g.out[i];
	}
	int64_t N = X.shape->dims[0].size, C = X.shape->dims[1].size, M = g.out_channels;
	int64_t cg = C / g.group, mg = M / g.group;
	decl(E, "X", &X, false);
	decl(E, "W", &W, false);
	decl(E, "Y", &Y, true);
	const char *bias = E->n->nin > 2 && E->n->in[2] != NONE ? in_op(E, 2).expr : NULL;
	int64_t ovol = o[0] * o[1] * o[2], ivol = in[0] * in[1] * in[2], kvol = k[0] * k[1] * k[2];
	emitf(E, "\tfor (int64_t nm = 0; nm < %" PRId64 "; nm++)\n"
	       "\t\tfor (int64_t v = 0; v < %" PRId64 "; v++)\n\t\t\tY[nm * %" PRId64 " + v] = %s;\n",
	    N * M, ovol, ovol, bias ? arena_printf(E->a, "(%s)[nm %% %" PRId64 "]", bias, M) : "0.0f");
	emitf(E, "\tfor (int64_t n = 0; n < %" PRId64 "; n++)\n"
	       "\tfor (int64_t c = 0; c < %" PRId64 "; c++)\n"
	       "\tfor (int64_t i0 = 0; i0 < %" PRId64 "; i0++)\n"
	       "\tfor (int64_t i1 = 0; i1 < %" PRId64 "; i1++)\n"
	       "\tfor (int64_t i2 = 0; i2 < %" PRId64 "; i2++) {\n"
	       "\t\tconst float x = X[(n * %" PRId64 " + c) * %" PRId64 " + (i0 * %" PRId64 " + i1) * %" PRId64 " + i2];\n"
	       "\t\tconst int64_t g = c / %" PRId64 ";\n"
	       "\t\tfor (int64_t mm = 0; mm < %" PRId64 "; mm++)\n"
	       "\t\tfor (int64_t k0 = 0; k0 < %" PRId64 "; k0++)\n"
	       "\t\tfor (int64_t k1 = 0; k1 < %" PRId64 "; k1++)\n"
	       "\t\tfor (int64_t k2 = 0; k2 < %" PRId64 "; k2++) {\n"
	       "\t\t\tconst int64_t o0 = i0 * %" PRId64 " - %" PRId64 " + k0 * %" PRId64 ";\n"
	       "\t\t\tconst int64_t o1 = i1 * %" PRId64 " - %" PRId64 " + k1 * %" PRId64 ";\n"
	       "\t\t\tconst int64_t o2 = i2 * %" PRId64 " - %" PRId64 " + k2 * %" PRId64 ";\n"
	       "\t\t\tif (o0 < 0 || o0 >= %" PRId64 " || o1 < 0 || o1 >= %" PRId64 " || o2 < 0 || o2 >= %" PRId64 ")\n"
	       "\t\t\t\tcontinue;\n"
	       "\t\t\tY[(n * %" PRId64 " + g * %" PRId64 " + mm) * %" PRId64 " + (o0 * %" PRId64 " + o1) * %" PRId64 " + o2] +=\n"
	       "\t\t\t\tx * W[(c * %" PRId64 " + mm) * %" PRId64 " + (k0 * %" PRId64 " + k1) * %" PRId64 " + k2];\n"
	       "\t\t}\n\t}\n",
	    N, C, in[0], in[1], in[2], C, ivol, in[1], in[2], cg, mg, k[0], k[1], k[2], s[0], pb[0],
	    d[0], s[1], pb[1], d[1], s[2], pb[2], d[2], o[0], o[1], o[2], M, mg, ovol, o[1], o[2], mg,
	    kvol, k[1], k[2]);
}
