/*
 * emit/ml.c - the ai.onnx.ml emitters (inference and parsing in ops/ml.c).
 *
 * A tree ensemble becomes a static kiln_tree_ensemble descriptor whose node
 * arrays (features, children, modes, thresholds, leaf weights, base values,
 * labels) are symbols of the weights object, stored once and shared by
 * every batch size; the body is one call of kiln_tree_ensemble_run
 * (runtime/kernels/f32-tree/ref.c). A small ensemble (--trees=auto: at most
 * TREE_CODE_MAX_NODES nodes) becomes straight-line C instead: per row, each
 * tree as nested if/else on literal thresholds finds its leaf, and
 * kiln_tree_ensemble_leaves adds up the leaves' weights from the weights
 * object as the array form does. The linear models and the small
 * per-row companions are short loops with their coefficients in the
 * weights object too.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "emit_c.h"

/* Scores per row live on the stack of the node function. */
enum { ML_MAX_TARGETS = 4096 };

/* A weights-object symbol holding n elements of dt, as `(const T *)sym`. */
static const char *ml_sym(Emit *E, int dt, const void *data, int64_t n, const char *what)
{
	static const unsigned char zero[8];
	const char *hint = arena_printf(E->a, "%s_%s", E->n->name[0] ? E->n->name : E->n->op_type,
	                                what);
	int s = n ? symbol_for(E, dt, data, (uint64_t)n * dtype_size(dt), hint)
	          : symbol_for(E, dt, zero, dtype_size(dt), hint);
	return arena_printf(E->a, "(const %s *)%s", ctype(dt), E->syms[s].name);
}

static float *to_floats(Emit *E, const double *v, int64_t n)
{
	float *f = arena_alloc(E->a, ((size_t)n + 1) * sizeof *f);
	for (int64_t i = 0; i < n; i++)
		f[i] = (float)v[i];
	return f;
}

static int ml_xtype(Emit *E, int dt)
{
	switch (dt) {
	case DT_FLOAT: return KILN_ML_X_F32;
	case DT_DOUBLE: return KILN_ML_X_F64;
	case DT_INT32: return KILN_ML_X_I32;
	case DT_INT64: return KILN_ML_X_I64;
	}
	emit_fail(E, "input of type %s is not supported", dtype_name(dt));
}

static const char *const agg_names[] = {"KILN_TREE_SUM", "KILN_TREE_AVERAGE", "KILN_TREE_MIN",
                                        "KILN_TREE_MAX"};
static const char *const post_names[] = {"KILN_ML_NONE", "KILN_ML_SOFTMAX", "KILN_ML_LOGISTIC",
                                         "KILN_ML_SOFTMAX_ZERO", "KILN_ML_PROBIT"};
static const char *const xtype_names[] = {"KILN_ML_X_F32", "KILN_ML_X_F64", "KILN_ML_X_I32",
                                          "KILN_ML_X_I64"};

/* Declare X and the outputs a model wants: a classifier's label Y (output
 * 0) and scores Z (output 1), a regressor's Z (output 0). */
static void ml_decl(Emit *E, bool classifier, bool *has_y, bool *has_z)
{
	Operand X = in_op(E, 0);
	int zi = classifier ? 1 : 0;
	*has_y = classifier && E->n->out[0] != NONE;
	*has_z = zi < E->n->nout && E->n->out[zi] != NONE;
	decl(E, "X", &X, false);
	if (*has_y) {
		Operand Y = out_op(E, 0);
		decl(E, "Y", &Y, true);
	}
	if (*has_z) {
		Operand Z = out_op(E, zi);
		decl(E, "Z", &Z, true);
	}
}

/* Straight-line C for ensembles of at most this many nodes (--trees=auto),
 * and trees at most this deep (clang nests blocks 256 deep at most). */
enum { TREE_CODE_MAX_NODES = 4096, TREE_CODE_MAX_DEPTH = 64 };

/* The deepest tree's depth (nodes are laid out parents first), or
 * TREE_CODE_MAX_DEPTH + 1 if it is deeper. */
static int tree_max_depth(Emit *E, const TreeEnsemble *t)
{
	int *depth = arena_array(E->a, (size_t)t->nnodes, sizeof *depth);
	int most = 0;
	for (int64_t i = 0; i < t->nnodes; i++) {
		if (depth[i] > most)
			most = depth[i];
		if (depth[i] > TREE_CODE_MAX_DEPTH)
			return TREE_CODE_MAX_DEPTH + 1;
		if (t->mode[i] != KILN_TREE_LEAF)
			depth[t->tru[i]] = depth[t->fls[i]] = depth[i] + 1;
	}
	return most;
}

/* Which form node E->n gets: true for straight-line C. */
static bool tree_as_code(Emit *E, const TreeEnsemble *t)
{
	int trees = E->o ? E->o->trees : TREES_AUTO;
	if (trees == TREES_ARRAYS)
		return false;
	bool deep = tree_max_depth(E, t) > TREE_CODE_MAX_DEPTH;
	if (trees == TREES_CODE && deep)
		emit_fail(E, "a tree is more than %d levels deep: too deep for straight-line C "
		          "(use --trees=arrays or auto)", TREE_CODE_MAX_DEPTH);
	return !deep && (trees == TREES_CODE || t->nnodes <= TREE_CODE_MAX_NODES);
}

/* A threshold as an exact C literal: a hex float (float when the
 * comparison is in float), or the macros of <math.h>. */
static const char *tree_thr(Emit *E, double v, bool in_float)
{
	if (isnan(v))
		return in_float ? "NAN" : "(double)NAN";
	if (isinf(v))
		return in_float ? (v > 0 ? "INFINITY" : "-INFINITY")
		                : (v > 0 ? "(double)INFINITY" : "-(double)INFINITY");
	return arena_printf(E->a, "%a%s", in_float ? (double)(float)v : v, in_float ? "f" : "");
}

/* Indentation: at most 2 + TREE_CODE_MAX_DEPTH + 1 tabs. */
static const char tree_tabs[] = "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t"
                                "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t"
                                "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
_Static_assert(sizeof tree_tabs - 1 >= 2 + TREE_CODE_MAX_DEPTH + 1, "tree_tabs");

/* Tree node i and everything under it, at the given depth of indentation,
 * setting leaf[tree]. Exactly the comparisons of the runtime's walk (f32-tree/ref.c):
 * the feature as a double (integers through float) against the threshold, or
 * both as floats when both are floats (the same result); a NaN feature fails
 * every comparison but NEQ, unless the node sends missing values to true. */
static void tree_code(Emit *E, const TreeEnsemble *t, int xdt, int64_t tree, int32_t i, int ind)
{
	static const char *const ops[] = {"", "<=", "<", ">=", ">", "==", "!="};
	if (t->mode[i] == KILN_TREE_LEAF) {
		emitf(E, "%.*sleaf[%" PRId64 "] = %d;\n", ind, tree_tabs, tree, (int)i);
		return;
	}
	bool in_float = xdt == DT_FLOAT && !t->is_double;
	const char *v = arena_printf(E->a, xdt == DT_FLOAT ? (in_float ? "x[%d]" : "(double)x[%d]")
	                                   : xdt == DT_DOUBLE ? "x[%d]" : "(double)(float)x[%d]",
	                             (int)t->feat[i]);
	const char *cmp = arena_printf(E->a, "%s %s %s", v, ops[t->mode[i] & 7],
	                               tree_thr(E, t->thr[i], in_float));
	if (t->mode[i] & KILN_TREE_MISSING_TRUE)
		cmp = arena_printf(E->a, "%s || isnan(%s)", cmp, v);
	const char *tabs = tree_tabs;
	emitf(E, "%.*sif (%s) {\n", ind, tabs, cmp);
	tree_code(E, t, xdt, tree, t->tru[i], ind + 1);
	emitf(E, "%.*s} else {\n", ind, tabs);
	tree_code(E, t, xdt, tree, t->fls[i], ind + 1);
	emitf(E, "%.*s}\n", ind, tabs);
}

void emit_tree_ensemble(Emit *E)
{
	Infer x = emit_infer(E);
	TreeEnsemble t;
	tree_ensemble_params(&x, &t);
	if (t.ntargets > ML_MAX_TARGETS)
		emit_fail(E, "%" PRId64 " %s are beyond kiln's limit (%d)", t.ntargets,
		          t.is_classifier ? "classes" : "targets", ML_MAX_TARGETS);
	Operand X = in_op(E, 0);
	int64_t nfeat = X.shape->dims[X.shape->rank - 1].size;
	int64_t rows = X.shape->rank == 2 ? X.shape->dims[0].size : 1;
	bool code = tree_as_code(E, &t);
	bool has_y, has_z;
	ml_decl(E, t.is_classifier, &has_y, &has_z);
	emitf(E, "\t/* %" PRId64 " trees, %" PRId64 " nodes, %" PRId64 " leaf weights: %s */\n",
	      t.ntrees, t.nnodes, t.nleafw, code ? "straight-line C (--trees)" : "node arrays");
	emitf(E, "\tstatic const kiln_tree_ensemble te = {\n");
	emitf(E, "\t\t.ntrees = %" PRId64 ", .ntargets = %" PRId64 ", .nbase = %" PRId64 ",\n",
	      t.ntrees, t.ntargets, t.nbase);
	if (!code) {
		emitf(E, "\t\t.roots = %s,\n", ml_sym(E, DT_INT32, t.roots, t.ntrees, "roots"));
		emitf(E, "\t\t.feat = %s,\n", ml_sym(E, DT_INT32, t.feat, t.nnodes, "feat"));
	}
	emitf(E, "\t\t.tru = %s,\n", ml_sym(E, DT_INT32, t.tru, t.nnodes, "true"));
	emitf(E, "\t\t.fls = %s,\n", ml_sym(E, DT_INT32, t.fls, t.nnodes, "false"));
	/* With code, the branches need no modes, features or thresholds here. */
	if (!code && t.is_double)
		emitf(E, "\t\t.mode = %s,\n\t\t.thr_d = %s,\n",
		      ml_sym(E, DT_UINT8, t.mode, t.nnodes, "mode"),
		      ml_sym(E, DT_DOUBLE, t.thr, t.nnodes, "thresholds"));
	else if (!code)
		emitf(E, "\t\t.mode = %s,\n\t\t.thr_f = %s,\n",
		      ml_sym(E, DT_UINT8, t.mode, t.nnodes, "mode"),
		      ml_sym(E, DT_FLOAT, to_floats(E, t.thr, t.nnodes), t.nnodes, "thresholds"));
	emitf(E, "\t\t.leaf_target = %s,\n",
	      ml_sym(E, DT_INT32, t.leaf_target, t.nleafw, "leaf_targets"));
	if (t.is_double)
		emitf(E, "\t\t.w_d = %s,\n", ml_sym(E, DT_DOUBLE, t.leaf_w, t.nleafw, "weights"));
	else
		emitf(E, "\t\t.w_f = %s,\n",
		      ml_sym(E, DT_FLOAT, to_floats(E, t.leaf_w, t.nleafw), t.nleafw, "weights"));
	if (t.nbase)
		emitf(E, "\t\t.base = %s,\n", ml_sym(E, DT_DOUBLE, t.base, t.nbase, "base"));
	if (t.is_classifier)
		emitf(E, "\t\t.labels = %s,\n", ml_sym(E, DT_INT64, t.labels, t.ntargets, "labels"));
	emitf(E, "\t\t.aggregate = %s, .post_transform = %s,\n", agg_names[t.agg],
	      post_names[t.post]);
	emitf(E, "\t\t.binary_case = %d, .all_positive = %d,\n\t};\n", t.binary_case,
	      t.all_positive);
	emitf(E, "\tdouble work[%" PRId64 "];\n", 2 * t.ntargets);
	if (!has_z)
		emitf(E, "\tfloat z[%" PRId64 "];\n", t.ntargets);
	if (code) {
		/* Per row: each tree's branches as C, the leaves to the runtime. */
		emitf(E, "\tint32_t leaf[%" PRId64 "];\n", t.ntrees);
		emitf(E, "\tfor (int64_t r = 0; r < %" PRId64 "; r++) {\n", rows);
		emitf(E, "\t\tconst %s *x = (const %s *)X + r * %" PRId64 ";\n", ctype(X.dtype),
		      ctype(X.dtype), nfeat);
		for (int64_t tr = 0; tr < t.ntrees; tr++) {
			emitf(E, "\t\t/* tree %" PRId64 " */\n", tr);
			tree_code(E, &t, X.dtype, tr, t.roots[tr], 2);
		}
		emitf(E, "\t\tkiln_tree_ensemble_leaves(&te, leaf, %s, %s, work);\n\t}\n",
		      has_y ? "Y + r" : "NULL",
		      has_z ? arena_printf(E->a, "Z + r * %" PRId64, t.ntargets) : "z");
		return;
	}
	const char *xt = xtype_names[ml_xtype(E, X.dtype)];
	if (has_z) {
		emitf(E, "\tkiln_tree_ensemble_run(&te, X, %s, %" PRId64 ", %" PRId64 ", %s, Z, work);\n",
		      xt, rows, nfeat, has_y ? "Y" : "NULL");
		return;
	}
	/* No scores wanted: one row at a time into a local row. */
	emitf(E, "\tfor (int64_t r = 0; r < %" PRId64 "; r++)\n", rows);
	emitf(E, "\t\tkiln_tree_ensemble_run(&te, (const %s *)X + r * %" PRId64 ", %s, 1, %" PRId64
	         ", %s, z, work);\n", ctype(X.dtype), nfeat, xt, nfeat, has_y ? "Y + r" : "NULL");
}

/* An element of X (of type dt) as a double expression. */
static const char *as_double(Emit *E, const char *elem)
{
	return arena_printf(E->a, "(double)%s", elem);
}

void emit_ml_linear(Emit *E)
{
	Infer x = emit_infer(E);
	MlLinear l;
	ml_linear_params(&x, &l);
	bool classifier = E->n->op == OP_ML_LinearClassifier;
	if (l.ntargets > ML_MAX_TARGETS)
		emit_fail(E, "%" PRId64 " targets are beyond kiln's limit (%d)", l.ntargets,
		          ML_MAX_TARGETS);
	Operand X = in_op(E, 0);
	int64_t nf = l.nfeatures, nt = l.ntargets;
	int64_t rows = X.shape->rank == 2 ? X.shape->dims[0].size : 1;
	bool has_y, has_z;
	ml_decl(E, classifier, &has_y, &has_z);
	emitf(E, "\tconst float *coef = %s;\n",
	      ml_sym(E, DT_FLOAT, to_floats(E, l.coef, nt * nf), nt * nf, "coefficients"));
	if (l.nintercepts)
		emitf(E, "\tconst float *icpt = %s;\n",
		      ml_sym(E, DT_FLOAT, to_floats(E, l.intercepts, nt), nt, "intercepts"));
	if (classifier)
		emitf(E, "\tconst int64_t *labels = %s;\n",
		      ml_sym(E, DT_INT64, l.labels, l.nlabels, "labels"));
	int64_t nz = classifier && nt == 1 && l.nlabels == 2 ? 2 : nt;
	emitf(E, "\tfor (int64_t r = 0; r < %" PRId64 "; r++) {\n", rows);
	emitf(E, "\t\tdouble s[%" PRId64 "];\n", nz);
	emitf(E, "\t\tfor (int64_t t = 0; t < %" PRId64 "; t++) {\n", nt);
	emitf(E, "\t\t\tdouble acc = %s;\n", l.nintercepts ? "(double)icpt[t]" : "0");
	emitf(E, "\t\t\tfor (int64_t f = 0; f < %" PRId64 "; f++)\n", nf);
	emitf(E, "\t\t\t\tacc += %s * (double)coef[t * %" PRId64 " + f];\n",
	      as_double(E, arena_printf(E->a, "X[r * %" PRId64 " + f]", nf)), nf);
	emitf(E, "\t\t\ts[t] = acc;\n\t\t}\n");
	if (classifier && nt == 1) {
		/* One score for two classes: the second class's, transformed, and
		 * its complement (ONNX Runtime's convention). */
		if (has_y)
			emitf(E, "\t\tY[r] = labels[s[0] > 0 ? %d : 0];\n", l.nlabels == 2 ? 1 : 0);
		if (l.post != KILN_ML_NONE)
			emitf(E, "\t\tkiln_ml_post_transform(%s, s, 1);\n", post_names[l.post]);
		emitf(E, "\t\ts[1] = s[0];\n\t\ts[0] = 1 - s[0];\n");
	} else {
		if (has_y) {
			emitf(E, "\t\tint64_t best = 0;\n");
			emitf(E, "\t\tfor (int64_t t = 1; t < %" PRId64 "; t++)\n", nt);
			emitf(E, "\t\t\tif (s[t] > s[best])\n\t\t\t\tbest = t;\n");
			emitf(E, "\t\tY[r] = labels[best];\n");
		}
		if (l.post != KILN_ML_NONE)
			emitf(E, "\t\tkiln_ml_post_transform(%s, s, %" PRId64 ");\n", post_names[l.post],
			      nt);
	}
	if (has_z) {
		emitf(E, "\t\tfor (int64_t t = 0; t < %" PRId64 "; t++)\n", nz);
		emitf(E, "\t\t\tZ[r * %" PRId64 " + t] = (float)s[t];\n", nz);
	}
	emitf(E, "\t}\n");
}

void emit_ml_vector(Emit *E)
{
	Infer x = emit_infer(E);
	MlVector v;
	ml_vector_params(&x, &v);
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	if (E->n->op == OP_ML_ArrayFeatureExtractor) {
		int64_t n;
		const int64_t *idx = infer_require_ints(&x, 1, &n);
		int64_t last = X.shape->dims[X.shape->rank - 1].size;
		int64_t outer = last ? X.nelem / last : 0;
		emitf(E, "\tconst int64_t *idx = %s;\n", ml_sym(E, DT_INT64, idx, n, "indices"));
		emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n", outer);
		emitf(E, "\t\tfor (int64_t j = 0; j < %" PRId64 "; j++)\n", n);
		emitf(E, "\t\t\tY[o * %" PRId64 " + j] = X[o * %" PRId64 " + idx[j]];\n", n, last);
		return;
	}
	int64_t cols = X.shape->dims[X.shape->rank - 1].size;
	int64_t rows = cols ? X.nelem / cols : 0;
	const char *xv = as_double(E, "X[r * C + c]");
	emitf(E, "\tenum { C = %" PRId64 " };\n", cols);
	switch (E->n->op) {
	case OP_ML_Scaler:
		emitf(E, "\tconst float *off = %s;\n",
		      ml_sym(E, DT_FLOAT, to_floats(E, v.offset, v.noffset), v.noffset, "offset"));
		emitf(E, "\tconst float *scale = %s;\n",
		      ml_sym(E, DT_FLOAT, to_floats(E, v.scale, v.nscale), v.nscale, "scale"));
		emitf(E, "\tfor (int64_t r = 0; r < %" PRId64 "; r++)\n", rows);
		emitf(E, "\t\tfor (int64_t c = 0; c < C; c++)\n");
		emitf(E, "\t\t\tY[r * C + c] = (float)((%s - (double)off[%s]) * (double)scale[%s]);\n",
		      xv, v.noffset == 1 ? "0" : "c", v.nscale == 1 ? "0" : "c");
		return;
	case OP_ML_Binarizer:
		emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n", X.nelem);
		emitf(E, "\t\tY[i] = (double)X[i] > %s ? 1 : 0;\n", flit(E, v.threshold, DT_DOUBLE));
		return;
	case OP_ML_Imputer:
		emitf(E, "\tconst float *imputed = %s;\n",
		      ml_sym(E, DT_FLOAT, to_floats(E, v.scale, v.nscale), v.nscale, "imputed"));
		emitf(E, "\tfor (int64_t r = 0; r < %" PRId64 "; r++)\n", rows);
		emitf(E, "\t\tfor (int64_t c = 0; c < C; c++) {\n");
		emitf(E, "\t\t\tfloat x = X[r * C + c];\n");
		emitf(E, "\t\t\tY[r * C + c] = %s ? imputed[%s] : x;\n",
		      isnan(v.replaced) ? "isnan(x)"
		                        : arena_printf(E->a, "x == %s", flit(E, v.replaced, DT_FLOAT)),
		      v.nscale == 1 ? "0" : "c");
		emitf(E, "\t\t}\n");
		return;
	case OP_ML_Normalizer:
		emitf(E, "\tfor (int64_t r = 0; r < %" PRId64 "; r++) {\n", rows);
		if (v.norm == 0) {
			emitf(E, "\t\tdouble m = -(double)INFINITY;\n\t\tfor (int64_t c = 0; c < C; c++)\n"
			         "\t\t\tm = %s > m ? %s : m;\n", xv, xv);
		} else {
			emitf(E, "\t\tdouble m = 0;\n\t\tfor (int64_t c = 0; c < C; c++)\n");
			emitf(E, v.norm == 1 ? "\t\t\tm += fabs(%s);\n" : "\t\t\tm += %s * %s;\n", xv, xv);
			if (v.norm == 2)
				emitf(E, "\t\tm = sqrt(m);\n");
		}
		emitf(E, "\t\tfor (int64_t c = 0; c < C; c++)\n");
		emitf(E, "\t\t\tY[r * C + c] = (float)(m != 0 ? %s / m : %s);\n\t}\n", xv, xv);
		return;
	}
	emit_fail(E, "no emitter");
}

/* ZipMap with --zipmap=tensor: the probabilities, copied. */
void emit_zipmap(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	emit_map(E, &Y, &X, 1, "x0");
}

/* The keys of graph output id, if a ZipMap made it, as macros in the header
 * after the output's shape (io: its macro prefix). Key strings are the
 * model's: escaped for a string literal. */
void emit_zipmap_keys(Emit *E, FILE *h, const char *io, int id)
{
	const Node *n = NULL;
	for (int i = 0; i < E->g->nnodes && !n; i++)
		if (E->g->nodes[i].op == OP_ML_ZipMap && E->g->nodes[i].nout == 1 &&
		    E->g->nodes[i].out[0] == id)
			n = &E->g->nodes[i];
	if (!n)
		return;
	Infer inf = emit_infer(E);
	inf.n = (Node *)n;
	const int64_t *ints;
	const WeightString *strings;
	int nkeys = ml_zipmap_keys(&inf, &ints, &strings);
	fprintf(h, "/* A ZipMap's sequence of maps, given as its tensor (--zipmap=tensor):\n"
	           " * column k of a row is the probability of class KEYS[k]. */\n");
	fprintf(h, "#define %s_NKEYS %d\n#define %s_KEYS {", io, nkeys, io);
	for (int k = 0; k < nkeys; k++) {
		fputs(k ? ", " : "", h);
		if (strings) {
			char *s = arena_alloc(E->a, strings[k].len + 1);
			memcpy(s, strings[k].data, strings[k].len);
			fprintf(h, "\"%s\"", c_string_escape(E->a, s));
		} else if (ints[k] == INT64_MIN) {
			fputs("INT64_MIN", h);
		} else {
			fprintf(h, "INT64_C(%" PRId64 ")", ints[k]);
		}
	}
	fprintf(h, "}\n");
}
