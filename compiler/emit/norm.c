/*
 * emit/norm.c - op emitters for the normalizations and their kin (ops/norm.c):
 * Softmax, LogSoftmax, Hardmax, BatchNormalization, LayerNormalization,
 * InstanceNormalization, GroupNormalization, LRN, ImageScaler, Dropout and
 * the losses.
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
	Infer inf = emit_infer(E);
	NormParams np;
	norm_params(&inf, &np);
	int64_t axis = np.axis;
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
	Infer inf = emit_infer(E);
	NormParams np;
	norm_params(&inf, &np);
	if (np.training) {
		/* Training: normalize with the batch's mean and population variance
		 * per channel (double, two passes); the optional outputs 1 and 2 are
		 * the running statistics, input * momentum + batch * (1 - momentum). */
		const char *eps = flit(E, (double)np.epsilon, DT_DOUBLE);
		double momentum = (double)np.momentum;
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
	    flit(E, (double)np.epsilon, DT_FLOAT));
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
	Infer inf = emit_infer(E);
	NormParams np;
	norm_params(&inf, &np);
	const float *b = np.channel_bias;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tstatic const %s bias[%" PRId64 "] = {", ctype(dt), c > 0 ? c : 1);
	for (int64_t k = 0; k < c; k++)
		emitf(E, "%s%s", k ? ", " : "", flit(E, b ? (double)b[k] : 0.0, dt));
	emitf(E, "%s};\n", c > 0 ? "" : "0");
	emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n"
	       "\t\tfor (int64_t c = 0; c < %" PRId64 "; c++)\n"
	       "\t\t\tfor (int64_t s = 0; s < %" PRId64 "; s++) {\n"
	       "\t\t\t\tconst int64_t at = (i * %" PRId64 " + c) * %" PRId64 " + s;\n"
	       "\t\t\t\tY[at] = X[at] * %s + bias[c];\n\t\t\t}\n",
	    n, c, spatial, c, spatial, flit(E, (double)np.scale, dt));
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
	Infer inf = emit_infer(E);
	NormParams np;
	norm_params(&inf, &np);
	int64_t axis = np.axis;
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
	const char *eps = flit(E, (double)np.epsilon, DT_FLOAT);
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
	if (E->n->fused.residual && E->n->nin > 3 && E->n->in[3] != NONE) {
		/* passes/addnorm.c: the residual Add in the kernel, row by row (the
		 * sum stored in Y's row, still in L1 when it is normalized) */
		if (want_mean || want_inv)
			emit_fail(E, "a fused residual with statistics outputs is not supported");
		Operand R = in_op(E, 3);
		require_f32(E, &R);
		emitf(E, "\tkiln_f32_add_layernorm(X, %s, %s, %s, Y, %" PRId64 ", %" PRId64 ", %s);\n",
		      R.expr, S.expr, bias, outer, norm, eps);
		return;
	}
	emitf(E, "\tkiln_f32_layernorm(X, %s, %s, Y, %" PRId64 ", %" PRId64 ", %s);\n", S.expr, bias,
	    outer, norm, eps);
}

/* The outer/axis/inner view of axis for Hardmax (opset >= 13) or the 2-D
 * coercion before it; and CumSum's. */
void emit_hardmax(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	int rank = X.shape->rank;
	Infer inf = emit_infer(E);
	NormParams np;
	norm_params(&inf, &np);
	int axis = np.axis;
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
	Infer inf = emit_infer(E);
	NormParams np;
	norm_params(&inf, &np);
	bool none = np.reduction == LOSS_NONE;
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
		       "\t\t\t\tz += kiln_exp(X[(n * %" PRId64 " + k) * %" PRId64 " + s] - m);\n"
		       "\t\t\tconst double lse = m + kiln_log(z);\n",
		    C, C, S, C, C, S);
		if (want_lp)
			emitf(E, "\t\t\tfor (int64_t k = 0; k < %" PRId64 "; k++)\n"
			       "\t\t\t\tP[(n * %" PRId64 " + k) * %" PRId64 " + s] = (%s)(X[(n * %" PRId64
			       " + k) * %" PRId64 " + s] - lse);\n", C, C, S, t, C, S);
	}
	if (np.has_ignore_index) { /* an ignored position: no loss, no weight */
		emitf(E, "\t\t\tif (c == %" PRId64 ") {\n", np.ignore_index);
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
		emitf(E, "\tY[0] = (%s)(%s);\n", t, np.reduction == LOSS_SUM ? "total" : "total / wsum");
}

/* Normalize each of `blocks` contiguous blocks of X: (x - mean) /
 * sqrt(var + eps) * S[k] + B[k], k a C expression of the block p and the
 * element i in it; statistics in double. */
static void emit_block_norm(Emit *E, int64_t blocks, const char *k)
{
	Infer inf = emit_infer(E);
	NormParams np;
	norm_params(&inf, &np);
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
	    blocks, n, n, n, n, n, n, flit(E, (double)np.epsilon, DT_DOUBLE), n,
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
	Infer inf = emit_infer(E);
	NormParams np;
	norm_params(&inf, &np);
	int64_t C = x->dims[1].size, G = np.groups;
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
	Infer inf = emit_infer(E);
	NormParams np;
	norm_params(&inf, &np);
	int64_t size = np.size, C = X.shape->dims[1].size;
	int64_t N = X.shape->dims[0].size, NC = N * C, sp = NC ? X.nelem / NC : 0;
	double alpha = (double)np.alpha, beta = (double)np.beta, bias = (double)np.bias;
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
	       "\t\tconst double d = %s + %s / %" PRId64 " * sq;\n",
	    N, C, sp, (size - 1) / 2, size - 1 - (size - 1) / 2, C, C, sp, C, sp,
	    flit(E, bias, DT_DOUBLE), flit(E, alpha, DT_DOUBLE), size);
	/* d^0.75 (the default beta, AlexNet's and GoogLeNet's) as sqrt(d)
	 * sqrt(sqrt(d)): correctly rounded square roots, the same bits on every
	 * machine, within 2 ulp of double, at a fraction of kiln_pow's time */
	if (beta == 0.75)
		emitf(E, "\t\tconst double r = sqrt(d);\n\t\tY[at] = (float)(X[at] / (r * sqrt(r)));\n\t}\n");
	else /* x d^-beta = x exp(-beta ln d) for d > 0 (kiln_exp and kiln_log
	      * at 2.5 to 4 times kiln_pow's speed; on 24 million (d, x) pairs the
	      * float results equal libm pow's, docs/reproducibility.md), kiln_pow
	      * for the rest (d <= 0 or NaN: its special cases) */
		emitf(E,
		      "\t\tY[at] = d > 0 ? (float)((double)X[at] * kiln_exp(%s * kiln_log(d)))\n"
		      "\t\t\t\t   : (float)((double)X[at] / kiln_pow(d, %s));\n\t}\n",
		      flit(E, -beta, DT_DOUBLE), flit(E, beta, DT_DOUBLE));
}
