/*
 * emit/nn.c - op emitters for network layers: Softmax, the normalizations, Conv, ConvTranspose, pools, losses, LRN, Resize, quantization.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c.h"

/* ---- normalization ---------------------------------------------------- */

void emit_softmax(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	const Shape *s = X.shape;
	int rank = s->rank;
	int64_t axis = node_attr_int(E->n, "axis", E->n->since < 13 ? 1 : -1);
	if (axis < 0)
		axis += rank;
	int64_t outer = 1, len = 1, inner = 1;
	for (int k = 0; k < rank; k++) {
		int64_t d = s->dims[k].size;
		if (k < axis)
			outer *= d;
		else if (k == axis || E->n->since < 13)
			len *= d;
		else
			inner *= d;
	}
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tkiln_f32_softmax(X, Y, %" PRId64 ", %" PRId64 ", %" PRId64 ", %d);\n", outer, len,
	    inner, E->n->op == OP_LogSoftmax);
}

void emit_batchnorm(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	Operand p[4];
	for (int i = 0; i < 4; i++) {
		p[i] = in_op(E, i + 1);
		require_f32(E, &p[i]);
	}
	int64_t n = X.shape->dims[0].size, c = X.shape->dims[1].size, spatial = 1;
	for (int k = 2; k < X.shape->rank; k++)
		spatial *= X.shape->dims[k].size;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	if (E->n->since >= 14 && node_attr_int(E->n, "training_mode", 0)) {
		/* Training: normalize with the batch's mean and population variance
		 * per channel (double, two passes); the optional outputs 1 and 2 are
		 * the running statistics, input * momentum + batch * (1 - momentum). */
		const char *eps = flit(E, node_attr_float(E->n, "epsilon", 1e-5f), DT_DOUBLE);
		double momentum = node_attr_float(E->n, "momentum", 0.9f);
		int64_t count = n * spatial;
		emitf(E, "\tfor (int64_t c = 0; c < %" PRId64 "; c++) {\n"
		       "\t\tdouble sum = 0, sq = 0;\n"
		       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n"
		       "\t\t\tfor (int64_t s = 0; s < %" PRId64 "; s++)\n"
		       "\t\t\t\tsum += X[(i * %" PRId64 " + c) * %" PRId64 " + s];\n"
		       "\t\tconst double mean = sum / %" PRId64 ";\n"
		       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n"
		       "\t\t\tfor (int64_t s = 0; s < %" PRId64 "; s++) {\n"
		       "\t\t\t\tconst double d = X[(i * %" PRId64 " + c) * %" PRId64 " + s] - mean;\n"
		       "\t\t\t\tsq += d * d;\n\t\t\t}\n"
		       "\t\tconst double var = sq / %" PRId64 ";\n"
		       "\t\tconst double scale = (%s)[c] / sqrt(var + %s), shift = (%s)[c] - mean * scale;\n"
		       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n"
		       "\t\t\tfor (int64_t s = 0; s < %" PRId64 "; s++) {\n"
		       "\t\t\t\tconst int64_t at = (i * %" PRId64 " + c) * %" PRId64 " + s;\n"
		       "\t\t\t\tY[at] = (float)(X[at] * scale + shift);\n\t\t\t}\n",
		    c, n, spatial, c, spatial, count, n, spatial, c, spatial, count, p[0].expr, eps,
		    p[1].expr, n, spatial, c, spatial);
		const char *stat[2] = {"mean", "var"};
		for (int k = 0; k < 2; k++)
			if (E->n->nout > k + 1 && E->n->out[k + 1] != NONE)
				emitf(E, "\t\t(%s)[c] = (float)((%s)[c] * %s + %s * %s);\n", out_op(E, k + 1).expr,
				    p[k + 2].expr, flit(E, momentum, DT_DOUBLE), stat[k],
				    flit(E, 1 - momentum, DT_DOUBLE));
		emitf(E, "\t}\n");
		return;
	}
	emitf(E, "\tkiln_f32_batchnorm(X, %s, %s, %s, %s, Y, %" PRId64 ", %" PRId64 ", %" PRId64
	       ", %s);\n", p[0].expr, p[1].expr, p[2].expr, p[3].expr, n, c, spatial,
	    flit(E, node_attr_float(E->n, "epsilon", 1e-5f), DT_FLOAT));
}

/* ImageScaler: y = scale * x + bias[c] in float32 (the type ONNX Runtime
 * runs it in), one multiply and one add as ONNX Runtime computes it. */
void emit_image_scaler(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	int dt = DT_FLOAT;
	int64_t n = X.shape->dims[0].size, c = X.shape->dims[1].size, spatial = 1;
	for (int k = 2; k < X.shape->rank; k++)
		spatial *= X.shape->dims[k].size;
	const Attr *b = node_attr(E->n, "bias");
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tstatic const %s bias[%" PRId64 "] = {", ctype(dt), c > 0 ? c : 1);
	for (int64_t k = 0; k < c; k++)
		emitf(E, "%s%s", k ? ", " : "", flit(E, b ? (double)b->floats[k] : 0.0, dt));
	emitf(E, "%s};\n", c > 0 ? "" : "0");
	emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n"
	       "\t\tfor (int64_t c = 0; c < %" PRId64 "; c++)\n"
	       "\t\t\tfor (int64_t s = 0; s < %" PRId64 "; s++) {\n"
	       "\t\t\t\tconst int64_t at = (i * %" PRId64 " + c) * %" PRId64 " + s;\n"
	       "\t\t\t\tY[at] = X[at] * %s + bias[c];\n\t\t\t}\n",
	    n, c, spatial, c, spatial, flit(E, node_attr_float(E->n, "scale", 1.0f), dt));
}

void emit_layernorm(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0), S = in_op(E, 1);
	require_f32(E, &X);
	bool want_mean = E->n->nout > 1 && E->n->out[1] != NONE;
	bool want_inv = E->n->nout > 2 && E->n->out[2] != NONE;
	if ((want_mean && out_op(E, 1).dtype != DT_FLOAT) || (want_inv && out_op(E, 2).dtype != DT_FLOAT))
		emit_fail(E, "a stash_type other than float32 is not supported yet");
	int rank = X.shape->rank;
	int64_t axis = node_attr_int(E->n, "axis", -1);
	if (axis < 0)
		axis += rank;
	int64_t outer = 1, norm = 1;
	for (int k = 0; k < rank; k++)
		*(k < axis ? &outer : &norm) *= X.shape->dims[k].size;
	if (S.nelem != norm)
		emit_fail(E, "a Scale that broadcasts is not supported yet");
	const char *bias = "NULL";
	if (E->n->nin > 2 && E->n->in[2] != NONE) {
		Operand Bi = in_op(E, 2);
		if (Bi.nelem != norm)
			emit_fail(E, "a bias that broadcasts is not supported yet");
		bias = Bi.expr;
	}
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	const char *eps = flit(E, node_attr_float(E->n, "epsilon", 1e-5f), DT_FLOAT);
	if (want_mean || want_inv) {
		/* The optional statistics, per normalized row, before Y may overwrite X. */
		emitf(E, "\tfor (int64_t r = 0; r < %" PRId64 "; r++) {\n"
		       "\t\tconst float *x = X + r * %" PRId64 ";\n"
		       "\t\tdouble sum = 0, sq = 0;\n"
		       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\t\tsum += x[i];\n"
		       "\t\tdouble mean = sum / %" PRId64 ";\n"
		       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n"
		       "\t\t\tsq += (x[i] - mean) * (x[i] - mean);\n",
		    outer, norm, norm, norm, norm);
		if (want_mean)
			emitf(E, "\t\t(%s)[r] = (float)mean;\n", out_op(E, 1).expr);
		if (want_inv)
			emitf(E, "\t\t(%s)[r] = (float)(1.0 / sqrt(sq / %" PRId64 " + %s));\n",
			    out_op(E, 2).expr, norm, eps);
		emitf(E, "\t}\n");
	}
	if (node_attr(E->n, "kiln.residual") && E->n->nin > 3 && E->n->in[3] != NONE) {
		/* passes/addnorm.c: the residual Add in the kernel, row by row (the
		 * sum stored in Y's row, still in L1 when it is normalized) */
		if (want_mean || want_inv)
			emit_fail(E, "kiln.residual with statistics outputs is not supported");
		Operand R = in_op(E, 3);
		require_f32(E, &R);
		emitf(E, "\tkiln_f32_add_layernorm(X, %s, %s, %s, Y, %" PRId64 ", %" PRId64 ", %s);\n",
		      R.expr, S.expr, bias, outer, norm, eps);
		return;
	}
	emitf(E, "\tkiln_f32_layernorm(X, %s, %s, Y, %" PRId64 ", %" PRId64 ", %s);\n", S.expr, bias,
	    outer, norm, eps);
}


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
static const char *packed_conv_weight(Emit *E, const kiln_conv2d_params *p)
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
	int s = symbol_in_layout(E, DT_FLOAT, v->weight->bytes, v->weight->nbytes, v->name,
	                         SYM_PACK_CONV32, pack);
	return symbol_expr(E, s, "float");
}

/* A 1x1, stride-1, unpadded, ungrouped Conv of at most 32 output pixels,
 * with ReLU or no activation and no residual: DeepJet's 1x1 Conv1d stacks,
 * whose planes are too small for the GEMM core's panels
 * (kiln_f32_conv2d_small, runtime/kernels/f32-pointwise). */
static bool small_pointwise(Emit *E, const WindowGeo *g, const char *residual)
{
	const Attr *act = node_attr(E->n, "kiln.act");
	if (residual || node_attr_int(E->n, "group", 1) != 1 || g->outsz[1] * g->outsz[2] > 32)
		return false;
	if (act && !(act->type == AT_STRING && act->s.len == 4 && memcmp(act->s.data, "Relu", 4) == 0))
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
	if (buf != NONE &&
	    conv2d_params(&inf, X.shape, Y.shape, &E->sig->shapes[E->n->in[1]], &pp) &&
	    kiln_f32_conv2d_packed_work(&pp) * (int64_t)sizeof(float) <= E->plan->bufs[buf].bytes)
		packed = packed_conv_weight(E, &pp);
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
		              node_attr_int(E->n, "group", 1));
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
	    node_attr_int(E->n, "group", 1), g.k[1], g.k[2], g.s[1], g.s[2], g.d[1], g.d[2], g.pb[1],
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
	int64_t wino = packed && winograd_wins(&pp) ? kiln_f32_conv2d_winograd_work(&pp) : 0;
	if (wino > 0 && wino * (int64_t)sizeof(float) <= E->plan->bufs[buf].bytes) {
		const PlanBuf *sb = &E->plan->bufs[buf];
		emitf(E, "\t/* W packed at compile time; Winograd F(2x2, 3x3), arena scratch @%" PRId64
		      "+%" PRId64 ": a block of transformed filters, of input tiles and their products */\n",
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
	    (int)node_attr_int(E->n, "storage_order", 0), X->expr, Y->expr,
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
			    (int)node_attr_int(E->n, "count_include_pad", 0), X.expr, Y.expr);
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
		    (int)node_attr_int(E->n, "count_include_pad", 0), X.expr, Y.expr);
}


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


/* The outer/axis/inner view of axis for Hardmax (opset >= 13) or the 2-D
 * coercion before it; and CumSum's. */
void emit_hardmax(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	int rank = X.shape->rank;
	int axis = norm_axis(node_attr_int(E->n, "axis", E->n->since < 13 ? 1 : -1), rank);
	int64_t outer = 1, len = 1, inner = 1;
	for (int k = 0; k < rank; k++) {
		int64_t d = X.shape->dims[k].size;
		if (k < axis)
			outer *= d;
		else if (k == axis || E->n->since < 13)
			len *= d;
		else
			inner *= d;
	}
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n\t\tfor (int64_t i = 0; i < %" PRId64
	       "; i++) {\n\t\t\tint64_t best = 0;\n"
	       "\t\t\tfor (int64_t a = 1; a < %" PRId64 "; a++)\n"
	       "\t\t\t\tif (X[(o * %" PRId64 " + a) * %" PRId64 " + i] > X[(o * %" PRId64
	       " + best) * %" PRId64 " + i])\n\t\t\t\t\tbest = a;\n"
	       "\t\t\tfor (int64_t a = 0; a < %" PRId64 "; a++)\n"
	       "\t\t\t\tY[(o * %" PRId64 " + a) * %" PRId64 " + i] = a == best ? 1.0f : 0.0f;\n\t\t}\n",
	    outer, inner, len, len, inner, len, inner, len, len, inner);
}


/* NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss (log-softmax over
 * the classes computed per position on the fly, so no scratch is needed). */
void emit_loss(Emit *E)
{
	bool sce = E->n->op == OP_SoftmaxCrossEntropyLoss;
	Operand X = in_op(E, 0), T = in_op(E, 1), Y = out_op(E, 0);
	if (!is_float(X.dtype))
		emit_fail(E, "%s on %s is not supported", E->n->op_type, dtype_name(X.dtype));
	const char *red = "mean";
	const Attr *ra = node_attr(E->n, "reduction");
	if (ra && ra->type == AT_STRING)
		red = arena_printf(E->a, "%.*s", (int)ra->s.len, ra->s.data);
	if (strcmp(red, "none") && strcmp(red, "sum") && strcmp(red, "mean"))
		emit_fail(E, "reduction \"%s\" is not none, sum or mean", red);
	bool none = strcmp(red, "none") == 0;
	const Attr *ig = node_attr(E->n, "ignore_index");
	int64_t N = X.shape->dims[0].size, C = X.shape->dims[1].size, NC = N * C;
	int64_t S = NC ? X.nelem / NC : 0;
	const char *t = ctype(X.dtype);
	decl(E, "X", &X, false);
	decl(E, "T", &T, false);
	decl(E, "Y", &Y, true);
	if (E->n->nin > 2 && E->n->in[2] != NONE)
		emitf(E, "\tconst %s *W = %s;\n", t, in_op(E, 2).expr);
	else
		emitf(E, "\tconst %s *W = NULL;\n", t);
	bool want_lp = sce && E->n->nout > 1 && E->n->out[1] != NONE;
	if (want_lp)
		emitf(E, "\t%s *P = %s;\n", t, out_op(E, 1).expr);
	emitf(E, "\tdouble total = 0, wsum = 0;\n\t(void)total, (void)wsum;\n");
	emitf(E, "\tfor (int64_t n = 0; n < %" PRId64 "; n++)\n\t\tfor (int64_t s = 0; s < %" PRId64
	       "; s++) {\n\t\t\tint64_t c = T[n * %" PRId64 " + s];\n", N, S, S);
	if (sce) {
		/* log_prob[k] = x[k] - max - log(sum(exp(x - max))) */
		emitf(E, "\t\t\tdouble m = -(double)INFINITY, z = 0;\n"
		       "\t\t\tfor (int64_t k = 0; k < %" PRId64 "; k++) {\n"
		       "\t\t\t\tdouble v = X[(n * %" PRId64 " + k) * %" PRId64 " + s];\n"
		       "\t\t\t\tm = v > m ? v : m;\n\t\t\t}\n"
		       "\t\t\tfor (int64_t k = 0; k < %" PRId64 "; k++)\n"
		       "\t\t\t\tz += exp(X[(n * %" PRId64 " + k) * %" PRId64 " + s] - m);\n"
		       "\t\t\tconst double lse = m + log(z);\n",
		    C, C, S, C, C, S);
		if (want_lp)
			emitf(E, "\t\t\tfor (int64_t k = 0; k < %" PRId64 "; k++)\n"
			       "\t\t\t\tP[(n * %" PRId64 " + k) * %" PRId64 " + s] = (%s)(X[(n * %" PRId64
			       " + k) * %" PRId64 " + s] - lse);\n", C, C, S, t, C, S);
	}
	if (ig) { /* an ignored position: no loss, no weight */
		emitf(E, "\t\t\tif (c == %" PRId64 ") {\n", ig->i);
		if (none)
			emitf(E, "\t\t\t\tY[n * %" PRId64 " + s] = 0;\n", S);
		emitf(E, "\t\t\t\tcontinue;\n\t\t\t}\n");
	}
	emitf(E, "\t\t\tif (c < 0 || c >= %" PRId64 ")\n\t\t\t\treturn KILN_SHAPE_ERROR;\n", C);
	emitf(E, "\t\t\tconst double w = W ? (double)W[c] : 1.0;\n"
	       "\t\t\tconst double l = -(%s) * w;\n",
	    sce ? arena_printf(E->a, "((double)X[(n * %" PRId64 " + c) * %" PRId64 " + s] - lse)", C, S)
	        : arena_printf(E->a, "(double)X[(n * %" PRId64 " + c) * %" PRId64 " + s]", C, S));
	if (none)
		emitf(E, "\t\t\tY[n * %" PRId64 " + s] = (%s)l;\n", S, t);
	else
		emitf(E, "\t\t\ttotal += l;\n\t\t\twsum += w;\n");
	emitf(E, "\t\t}\n");
	if (!none)
		emitf(E, "\tY[0] = (%s)(%s);\n", t, strcmp(red, "sum") == 0 ? "total" : "total / wsum");
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


/* Normalize each of `blocks` contiguous blocks of X: (x - mean) /
 * sqrt(var + eps) * S[k] + B[k], k a C expression of the block p and the
 * element i in it; statistics in double. */
static void emit_block_norm(Emit *E, int64_t blocks, const char *k)
{
	Operand X = in_op(E, 0), S = in_op(E, 1), B = in_op(E, 2), Y = out_op(E, 0);
	require_f32(E, &X);
	int64_t n = blocks ? X.nelem / blocks : 0;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tconst float *S = %s, *B = %s;\n", S.expr, B.expr);
	emitf(E, "\tfor (int64_t p = 0; p < %" PRId64 "; p++) {\n"
	       "\t\tconst float *x = X + p * %" PRId64 ";\n\t\tfloat *y = Y + p * %" PRId64 ";\n"
	       "\t\tdouble sum = 0, sq = 0;\n"
	       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\t\tsum += x[i];\n"
	       "\t\tconst double mean = sum / %" PRId64 ";\n"
	       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\t\tsq += (x[i] - mean) * (x[i] - mean);\n"
	       "\t\tconst double inv = 1.0 / sqrt(sq / %" PRId64 " + %s);\n"
	       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++) {\n"
	       "\t\t\tconst int64_t k = %s;\n"
	       "\t\t\ty[i] = (float)((x[i] - mean) * inv * S[k] + B[k]);\n\t\t}\n\t}\n",
	    blocks, n, n, n, n, n, n, flit(E, node_attr_float(E->n, "epsilon", 1e-5f), DT_DOUBLE), n,
	    k);
}

/* InstanceNormalization: per (n, c) plane, scale and bias per channel. */
void emit_instance_norm(Emit *E)
{
	const Shape *x = in_op(E, 0).shape;
	int64_t C = x->dims[1].size;
	emit_block_norm(E, x->dims[0].size * C, arena_printf(E->a, "p %% %" PRId64, C));
}

/* GroupNormalization: per (n, group) block of C/G channels; scale and bias
 * per group (opset 18) or per channel (opset 21). */
void emit_group_norm(Emit *E)
{
	const Shape *x = in_op(E, 0).shape;
	int64_t C = x->dims[1].size, G = node_attr_int(E->n, "num_groups", 1);
	int64_t nc = x->dims[0].size * C, per = G ? C / G : 0, sp = nc ? shape_nelem(x) / nc : 0;
	const char *k = E->n->since >= 21
	                    ? arena_printf(E->a, "p %% %" PRId64 " * %" PRId64 " + i / %" PRId64, G,
	                                   per, sp ? sp : 1)
	                    : arena_printf(E->a, "p %% %" PRId64, G);
	emit_block_norm(E, x->dims[0].size * G, k);
}

/* LRN across channels: x / (bias + alpha / size * sum of squares in the window)^beta. */
void emit_lrn(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	int64_t size = node_attr_int(E->n, "size", 1), C = X.shape->dims[1].size;
	int64_t N = X.shape->dims[0].size, NC = N * C, sp = NC ? X.nelem / NC : 0;
	double alpha = node_attr_float(E->n, "alpha", 1e-4f), beta = node_attr_float(E->n, "beta", 0.75f);
	double bias = node_attr_float(E->n, "bias", 1.0f);
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tfor (int64_t n = 0; n < %" PRId64 "; n++)\n\tfor (int64_t c = 0; c < %" PRId64
	       "; c++)\n\tfor (int64_t s = 0; s < %" PRId64 "; s++) {\n"
	       "\t\tdouble sq = 0;\n"
	       "\t\tfor (int64_t k = c - %" PRId64 "; k <= c + %" PRId64 "; k++)\n"
	       "\t\t\tif (k >= 0 && k < %" PRId64 ") {\n"
	       "\t\t\t\tdouble v = X[(n * %" PRId64 " + k) * %" PRId64 " + s];\n"
	       "\t\t\t\tsq += v * v;\n\t\t\t}\n"
	       "\t\tconst int64_t at = (n * %" PRId64 " + c) * %" PRId64 " + s;\n"
	       "\t\tY[at] = (float)(X[at] / pow(%s + %s / %" PRId64 " * sq, %s));\n\t}\n",
	    N, C, sp, (size - 1) / 2, size - 1 - (size - 1) / 2, C, C, sp, C, sp,
	    flit(E, bias, DT_DOUBLE), flit(E, alpha, DT_DOUBLE), size, flit(E, beta, DT_DOUBLE));
}


/* Element `at` of operand `var` of type dt, as a C expression of a number
 * (float8 and 16-bit floats through float32, 4-bit ones unpacked). */
static const char *load_elem(Emit *E, const char *var, int dt, const char *at)
{
	if (dt == DT_INT4 || dt == DT_UINT4)
		return arena_printf(E->a, "kiln_%c4_get(%s, %s)", dt == DT_INT4 ? 'i' : 'u', var, at);
	if (DT_IS_FLOAT8(dt))
		return arena_printf(E->a, "kiln_f8_to_f32(%s[%s], %d)", var, at, dt - DT_FLOAT8E4M3FN);
	if (dt == DT_FLOAT16 || dt == DT_BFLOAT16)
		return arena_printf(E->a, "kiln_%s_to_f32(%s[%s])", dt == DT_FLOAT16 ? "f16" : "bf16",
		                    var, at);
	return arena_printf(E->a, "%s[%s]", var, at);
}

/* QuantizeLinear: saturate(round_half_even(x / scale) + zero_point), or for
 * float8 x / scale converted with `saturate`; DequantizeLinear:
 * (x - zero_point) * scale. The scale and zero point are one value, one per
 * index of `axis`, or one per block of it (qdq_geometry). Elements go in
 * increasing order, as packed 4-bit outputs need. A float8 zero point is 0
 * (checked by qdq_geometry) and left out. */
void emit_quant(Emit *E)
{
	Operand X = in_op(E, 0), S = in_op(E, 1), Y = out_op(E, 0);
	bool deq = E->n->op == OP_DequantizeLinear;
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	QdqGeometry g;
	qdq_geometry(&inf, &g);
	int qt = g.qtype;
	bool has_zp = E->n->nin > 2 && E->n->in[2] != NONE && !DT_IS_FLOAT8(qt);
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	decl(E, "S", &S, false);
	if (has_zp) {
		Operand Z = in_op(E, 2);
		decl(E, "Z", &Z, false);
	}
	const char *q = g.kind == QDQ_TENSOR ? "0"
	                : g.kind == QDQ_AXIS ? "ax"
	                                     : arena_printf(E->a, "(o * %" PRId64 " + ax / %" PRId64
	                                                    ") * %" PRId64 " + i",
	                                                    g.nblocks, g.block, g.inner);
	emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n\tfor (int64_t ax = 0; ax < %" PRId64
	       "; ax++)\n\tfor (int64_t i = 0; i < %" PRId64 "; i++) {\n"
	       "\t\tconst int64_t at = (o * %" PRId64 " + ax) * %" PRId64 " + i;\n"
	       "\t\tconst int64_t q = %s;\n",
	    g.outer, g.len, g.inner, g.len, g.inner, q);
	const char *s = load_elem(E, "S", g.ftype, "q");
	const char *zp = has_zp ? arena_printf(E->a, "(double)%s", load_elem(E, "Z", qt, "q")) : "0.0";
	if (deq) {
		const char *v = arena_printf(E->a, "(float)((%s - %s) * (double)%s)",
		                             arena_printf(E->a, "(double)%s", load_elem(E, "X", qt, "at")),
		                             zp, s);
		if (Y.dtype == DT_FLOAT16 || Y.dtype == DT_BFLOAT16)
			v = arena_printf(E->a, "kiln_f32_to_%s(%s)", Y.dtype == DT_FLOAT16 ? "f16" : "bf16", v);
		emitf(E, "\t\tY[at] = %s;\n\t}\n", v);
		return;
	}
	/* In float, as the ONNX reference and ONNX Runtime: a float32
	 * quotient exactly at .5 must round to even from there (the ONNX test
	 * data needs it: test_dynamicquantizelinear_expanded). QDQ chains
	 * around a Conv, MatMul or Gemm are exact instead (passes/qdq.c). */
	const char *quot = arena_printf(E->a, "(float)%s / (float)%s", load_elem(E, "X", X.dtype, "at"), s);
	if (DT_IS_FLOAT8(qt)) {
		emitf(E, "\t\tY[at] = kiln_f32_to_f8(%s, %d, %d);\n\t}\n", quot, qt - DT_FLOAT8E4M3FN,
		      g.saturate);
		return;
	}
	double lo, hi;
	switch (qt) {
	case DT_UINT8: lo = 0, hi = 255; break;
	case DT_INT8: lo = -128, hi = 127; break;
	case DT_UINT16: lo = 0, hi = 65535; break;
	case DT_INT16: lo = -32768, hi = 32767; break;
	case DT_UINT4: lo = 0, hi = 15; break;
	case DT_INT4: lo = -8, hi = 7; break;
	default: lo = -2147483648.0, hi = 2147483647.0; break;
	}
	emitf(E, "\t\tdouble v = (double)rintf(%s) + %s;\n"
	       "\t\tv = v < %.1f ? %.1f : v > %.1f ? %.1f : v;\n", quot, zp, lo, lo, hi, hi);
	if (DT_IS_4BIT(qt))
		emitf(E, "\t\tkiln_4_put(Y, at, (int)v);\n\t}\n");
	else
		emitf(E, "\t\tY[at] = (%s)v;\n\t}\n", ctype(qt));
}

void emit_resize(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	kiln_resize_params p;
	resize_params(&inf, X.shape, &p);
	emitf(E, "\tstatic const kiln_resize_params p = {\n\t\t.rank = %d, .mode = %d, .coord_mode = %d, "
	       ".nearest_mode = %d, .exclude_outside = %d, .antialias = %d,\n\t\t.cubic_coeff_a = %s, "
	       ".extrapolation_value = %s,\n",
	    p.rank, p.mode, p.coord_mode, p.nearest_mode, p.exclude_outside, p.antialias,
	    flit(E, p.cubic_coeff_a, DT_DOUBLE), flit(E, p.extrapolation_value, DT_DOUBLE));
	const char *names[] = {"in", "out"};
	const int64_t *ints[] = {p.in, p.out};
	for (int i = 0; i < 2; i++) {
		emitf(E, "\t\t.%s = {", names[i]);
		for (int k = 0; k < p.rank; k++)
			emitf(E, "%s%" PRId64, k ? ", " : "", ints[i][k]);
		emitf(E, "},\n");
	}
	const char *fnames[] = {"scale", "roi_start", "roi_end"};
	const double *fl[] = {p.scale, p.roi_start, p.roi_end};
	for (int i = 0; i < 3; i++) {
		emitf(E, "\t\t.%s = {", fnames[i]);
		for (int k = 0; k < p.rank; k++)
			emitf(E, "%s%s", k ? ", " : "", flit(E, fl[i][k], DT_DOUBLE));
		emitf(E, "},\n");
	}
	emitf(E, "\t};\n\tkiln_f32_resize(&p, %s, %s);\n", X.expr, Y.expr);
}

