/*
 * ops/ml.c - the ai.onnx.ml operators: TreeEnsembleClassifier and
 * TreeEnsembleRegressor, and the small companions exporters put around them
 * (LinearClassifier, LinearRegressor, Normalizer, Scaler, Binarizer,
 * ArrayFeatureExtractor, Imputer; ZipMap with --zipmap=tensor only).
 *
 * A tree ensemble is parsed here into compact node arrays (tree_ensemble):
 * the nodes of every tree, renumbered so each tree is laid out from its root
 * (depth first), with global child indices. The parse checks what a hostile
 * model could break: every child id names a node of the same tree, every
 * tree is a tree (a node reached twice, so a cycle, is refused), feature ids
 * are inside the input row, class and target ids inside the outputs. The
 * emitter (emit/ml.c) stores the arrays in the weights object and writes the
 * traversal loop; the semantics it follows are in docs/ops.md.
 *
 * String class labels and string inputs are outside kiln's scope (numeric
 * tensors only) and are refused with that reason.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

enum { MAX_TREE_NODES = 1 << 28 };

/* ---- attributes ----------------------------------------------------------- */

static const int64_t *ml_ints(Infer *x, const char *name, int64_t *n)
{
	const Attr *a = node_attr(x->n, name);
	*n = 0;
	if (!a)
		return NULL;
	if (a->type != AT_INTS)
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"%s\" must be a list of ints", name);
	*n = a->n;
	return a->ints;
}

/* A list of reals given as floats (`name`) or, from opset 3, as a double
 * tensor (`name_as_tensor`); widened to double. *is_double says which. */
static double *ml_reals(Infer *x, const char *name, int64_t *n, bool *is_double)
{
	char tname[64];
	snprintf(tname, sizeof tname, "%s_as_tensor", name);
	const Attr *f = node_attr(x->n, name), *t = node_attr(x->n, tname);
	*n = 0;
	if (is_double)
		*is_double = false;
	if (f && t)
		infer_fail(x, KILN_INVALID_MODEL, "attributes \"%s\" and \"%s\" are both given", name,
		           tname);
	if (f) {
		if (f->type != AT_FLOATS)
			infer_fail(x, KILN_INVALID_MODEL, "attribute \"%s\" must be a list of floats", name);
		double *v = arena_alloc(x->a, ((size_t)f->n + 1) * sizeof *v);
		for (int i = 0; i < f->n; i++)
			v[i] = (double)f->floats[i];
		*n = f->n;
		return v;
	}
	if (!t)
		return NULL;
	if (t->type != AT_TENSOR ||
	    (t->tensors[0].dtype != DT_DOUBLE && t->tensors[0].dtype != DT_FLOAT))
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"%s\" must be a double tensor", tname);
	const Tensor *tt = &t->tensors[0];
	int64_t m = tt->w.nelem;
	double *v = arena_alloc(x->a, ((size_t)m + 1) * sizeof *v);
	const unsigned char *b = tt->w.bytes;
	for (int64_t i = 0; i < m; i++) {
		if (tt->dtype == DT_DOUBLE) {
			memcpy(&v[i], b + 8 * i, 8);
		} else {
			float f32;
			memcpy(&f32, b + 4 * i, 4);
			v[i] = (double)f32;
		}
	}
	*n = m;
	if (is_double)
		*is_double = tt->dtype == DT_DOUBLE;
	return v;
}

static bool str_is(const WeightString *s, const char *lit)
{
	return s->len == strlen(lit) && memcmp(s->data, lit, s->len) == 0;
}

static int ml_post_transform(Infer *x)
{
	const char *p = attr_string(x, "post_transform", "NONE");
	static const char *const names[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
	for (int i = 0; i < 5; i++)
		if (strcmp(p, names[i]) == 0)
			return i;
	infer_fail(x, KILN_INVALID_MODEL, "post_transform must be NONE, SOFTMAX, LOGISTIC, "
	           "SOFTMAX_ZERO or PROBIT");
}

/* The int64 class labels of a classifier; string labels are refused. */
static const int64_t *ml_labels(Infer *x, int64_t *n)
{
	const Attr *s = node_attr(x->n, "classlabels_strings");
	if (s && s->n > 0)
		infer_fail(x, KILN_UNSUPPORTED, "string class labels (classlabels_strings) are not "
		           "supported: kiln compiles numeric tensors only; export int64 labels "
		           "(classlabels_int64s / classlabels_ints)");
	const int64_t *l = ml_ints(x, "classlabels_int64s", n);
	if (!l)
		l = ml_ints(x, "classlabels_ints", n);
	if (!l || *n == 0)
		infer_fail(x, KILN_INVALID_MODEL, "needs class labels (classlabels_int64s)");
	return l;
}

/* ---- tree ensembles ------------------------------------------------------- */

typedef struct NodeKey {
	int64_t tree, node;
	int64_t index;   /* position in the nodes_* attributes */
} NodeKey;

static int key_cmp(const void *pa, const void *pb)
{
	const NodeKey *a = pa, *b = pb;
	if (a->tree != b->tree)
		return a->tree < b->tree ? -1 : 1;
	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

static int int64_cmp(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
	return a < b ? -1 : a > b;
}

static int64_t key_find(const NodeKey *k, int64_t n, int64_t tree, int64_t node)
{
	int64_t lo = 0, hi = n;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		if (k[mid].tree < tree || (k[mid].tree == tree && k[mid].node < node))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && k[lo].tree == tree && k[lo].node == node ? k[lo].index : -1;
}

static int mode_of(Infer *x, const WeightString *s, int64_t i)
{
	static const char *const names[] = {"LEAF", "BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE",
	                                    "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"};
	for (int m = 0; m < 7; m++)
		if (str_is(s, names[m]))
			return m;
	infer_fail(x, KILN_INVALID_MODEL, "nodes_modes[%lld] is not LEAF or a BRANCH_ mode",
	           (long long)i);
}

void tree_ensemble_params(Infer *x, TreeEnsemble *t)
{
	memset(t, 0, sizeof *t);
	t->is_classifier = x->n->op == OP_ML_TreeEnsembleClassifier;
	const char *pre = t->is_classifier ? "class" : "target";
	char nm[64];
	int64_t nn, n2, n3, n4, n5, n6, nmiss;
	const int64_t *treeids = ml_ints(x, "nodes_treeids", &nn);
	const int64_t *nodeids = ml_ints(x, "nodes_nodeids", &n2);
	const int64_t *featids = ml_ints(x, "nodes_featureids", &n3);
	const int64_t *trueids = ml_ints(x, "nodes_truenodeids", &n4);
	const int64_t *falseids = ml_ints(x, "nodes_falsenodeids", &n5);
	const int64_t *miss = ml_ints(x, "nodes_missing_value_tracks_true", &nmiss);
	bool thr_double;
	double *values = ml_reals(x, "nodes_values", &n6, &thr_double);
	const Attr *modes = node_attr(x->n, "nodes_modes");
	if (!treeids || nn == 0)
		infer_fail(x, KILN_INVALID_MODEL, "has no nodes (nodes_treeids)");
	if (nn > MAX_TREE_NODES)
		infer_fail(x, KILN_LIMIT, "%lld nodes are beyond kiln's limit (%d)", (long long)nn,
		           MAX_TREE_NODES);
	if (!modes || modes->type != AT_STRINGS || modes->n != nn || n2 != nn || n3 != nn ||
	    n4 != nn || n5 != nn || (values && n6 != nn) || (miss && nmiss != nn))
		infer_fail(x, KILN_INVALID_MODEL, "the nodes_* attributes must all have %lld entries "
		           "(nodes_treeids)", (long long)nn);
	int64_t nw, nw2, nw3, nw4;
	snprintf(nm, sizeof nm, "%s_treeids", pre);
	const int64_t *wtree = ml_ints(x, nm, &nw);
	snprintf(nm, sizeof nm, "%s_nodeids", pre);
	const int64_t *wnode = ml_ints(x, nm, &nw2);
	snprintf(nm, sizeof nm, "%s_ids", pre);
	const int64_t *wid = ml_ints(x, nm, &nw3);
	snprintf(nm, sizeof nm, "%s_weights", pre);
	bool w_double;
	double *wval = ml_reals(x, nm, &nw4, &w_double);
	if (nw2 != nw || nw3 != nw || nw4 != nw)
		infer_fail(x, KILN_INVALID_MODEL, "the %s_* attributes must all have %lld entries",
		           pre, (long long)nw);
	t->is_double = thr_double || w_double;

	/* Outputs: classes (labels) or targets. */
	if (t->is_classifier) {
		t->labels = ml_labels(x, &t->ntargets);
		t->agg = KILN_TREE_SUM;
	} else {
		t->ntargets = attr_int(x, "n_targets", 1);
		const char *agg = attr_string(x, "aggregate_function", "SUM");
		static const char *const aggs[] = {"SUM", "AVERAGE", "MIN", "MAX"};
		t->agg = -1;
		for (int i = 0; i < 4; i++)
			if (strcmp(agg, aggs[i]) == 0)
				t->agg = i;
		if (t->agg < 0)
			infer_fail(x, KILN_INVALID_MODEL, "aggregate_function must be SUM, AVERAGE, MIN "
			           "or MAX");
	}
	if (t->ntargets < 1 || t->ntargets > (1 << 20))
		infer_fail(x, KILN_INVALID_MODEL, "%lld %s are out of range", (long long)t->ntargets,
		           t->is_classifier ? "classes" : "targets");
	t->post = ml_post_transform(x);
	bool base_double;
	t->base = ml_reals(x, "base_values", &t->nbase, &base_double);
	t->is_double |= base_double;
	if (t->nbase && t->nbase != t->ntargets && !(t->is_classifier && t->nbase == 1 &&
	                                             t->ntargets == 2))
		infer_fail(x, KILN_INVALID_MODEL, "base_values has %lld entries; %lld expected",
		           (long long)t->nbase, (long long)t->ntargets);

	/* (tree, node) -> attribute position. */
	NodeKey *keys = arena_alloc(x->a, (size_t)nn * sizeof *keys);
	for (int64_t i = 0; i < nn; i++)
		keys[i] = (NodeKey){treeids[i], nodeids[i], i};
	qsort(keys, (size_t)nn, sizeof *keys, key_cmp);
	for (int64_t i = 1; i < nn; i++)
		if (keys[i].tree == keys[i - 1].tree && keys[i].node == keys[i - 1].node)
			infer_fail(x, KILN_INVALID_MODEL, "node %lld of tree %lld is defined twice",
			           (long long)keys[i].node, (long long)keys[i].tree);

	/* Trees in order of first appearance; a tree's root is its first node
	 * (ONNX's reference and ONNX Runtime agree). */
	int64_t *roots_at = arena_alloc(x->a, (size_t)nn * sizeof *roots_at);
	for (int64_t i = 0; i < nn; i++) {
		int64_t j = i;
		while (j + 1 < nn && keys[j + 1].tree == keys[i].tree)
			j++;
		int64_t first = keys[i].index;
		for (int64_t k = i; k <= j; k++)
			if (keys[k].index < first)
				first = keys[k].index;
		roots_at[t->ntrees++] = first;
		i = j;
	}
	qsort(roots_at, (size_t)t->ntrees, sizeof *roots_at, int64_cmp);

	/* Leaf weights grouped per node, in attribute order. */
	int64_t *wcount = arena_alloc(x->a, (size_t)nn * sizeof *wcount);
	int64_t *wfirst = arena_alloc(x->a, ((size_t)nn + 1) * sizeof *wfirst);
	int64_t *worder = arena_alloc(x->a, ((size_t)nw + 1) * sizeof *worder);
	int64_t *wat = arena_alloc(x->a, ((size_t)nw + 1) * sizeof *wat);
	t->all_positive = true;
	int64_t *used = arena_alloc(x->a, (size_t)t->ntargets * sizeof *used);
	int64_t nused = 0;
	for (int64_t j = 0; j < nw; j++) {
		int64_t at = key_find(keys, nn, wtree[j], wnode[j]);
		if (at < 0)
			infer_fail(x, KILN_INVALID_MODEL, "%s weight %lld names node %lld of tree %lld, "
			           "which does not exist", pre, (long long)j, (long long)wnode[j],
			           (long long)wtree[j]);
		if (wid[j] < 0 || wid[j] >= t->ntargets)
			infer_fail(x, KILN_INVALID_MODEL, "%s_ids[%lld] = %lld is out of range (%lld %s)",
			           pre, (long long)j, (long long)wid[j], (long long)t->ntargets,
			           t->is_classifier ? "classes" : "targets");
		wat[j] = at;
		wcount[at]++;
		if (wval[j] < 0)
			t->all_positive = false;
		if (!used[wid[j]]++)
			nused++;
	}
	t->binary_case = t->is_classifier && t->ntargets == 2 && nused == 1;
	for (int64_t i = 0; i < nn; i++)
		wfirst[i + 1] = wfirst[i] + wcount[i];
	int64_t *fill = arena_alloc(x->a, (size_t)nn * sizeof *fill);
	for (int64_t j = 0; j < nw; j++)
		worder[wfirst[wat[j]] + fill[wat[j]]++] = j;

	/* Lay every tree out depth first from its root. */
	t->nnodes = nn;
	t->feat = arena_alloc(x->a, (size_t)nn * sizeof *t->feat);
	t->tru = arena_alloc(x->a, (size_t)nn * sizeof *t->tru);
	t->fls = arena_alloc(x->a, (size_t)nn * sizeof *t->fls);
	t->mode = arena_alloc(x->a, (size_t)nn);
	t->thr = arena_alloc(x->a, (size_t)nn * sizeof *t->thr);
	t->roots = arena_alloc(x->a, (size_t)t->ntrees * sizeof *t->roots);
	t->leaf_target = arena_alloc(x->a, ((size_t)nw + 1) * sizeof *t->leaf_target);
	t->leaf_w = arena_alloc(x->a, ((size_t)nw + 1) * sizeof *t->leaf_w);
	int64_t *newpos = arena_alloc(x->a, (size_t)nn * sizeof *newpos);
	for (int64_t i = 0; i < nn; i++)
		newpos[i] = -1;
	int64_t *stack = arena_alloc(x->a, (size_t)nn * sizeof *stack);
	int64_t out = 0, nleafw = 0;
	t->max_feature = -1;
	for (int64_t r = 0; r < t->ntrees; r++) {
		int64_t sp = 0;
		stack[sp++] = roots_at[r];
		newpos[roots_at[r]] = out++;
		t->roots[r] = (int32_t)newpos[roots_at[r]];
		while (sp) {
			int64_t i = stack[--sp], p = newpos[i];
			int m = mode_of(x, &modes->strings[i], i);
			t->mode[p] = (uint8_t)m;
			t->thr[p] = values ? values[i] : 0;
			if (m == KILN_TREE_LEAF) {
				t->feat[p] = 0;
				t->tru[p] = (int32_t)nleafw;
				t->fls[p] = (int32_t)wcount[i];
				for (int64_t k = wfirst[i]; k < wfirst[i + 1]; k++) {
					t->leaf_target[nleafw] = (int32_t)wid[worder[k]];
					t->leaf_w[nleafw++] = wval[worder[k]];
				}
				continue;
			}
			if (featids[i] < 0 || featids[i] > INT32_MAX)
				infer_fail(x, KILN_INVALID_MODEL, "nodes_featureids[%lld] = %lld is out of "
				           "range", (long long)i, (long long)featids[i]);
			t->feat[p] = (int32_t)featids[i];
			if (featids[i] > t->max_feature)
				t->max_feature = featids[i];
			if (miss && miss[i])
				t->mode[p] |= KILN_TREE_MISSING_TRUE;
			int64_t kids[2] = {falseids[i], trueids[i]};
			for (int c = 0; c < 2; c++) {
				int64_t at = key_find(keys, nn, treeids[i], kids[c]);
				if (at < 0)
					infer_fail(x, KILN_INVALID_MODEL, "node %lld of tree %lld branches to "
					           "node %lld, which is not in the tree", (long long)nodeids[i],
					           (long long)treeids[i], (long long)kids[c]);
				if (newpos[at] >= 0)
					infer_fail(x, KILN_INVALID_MODEL, "node %lld of tree %lld is reached "
					           "twice: the tree has a cycle or a shared node",
					           (long long)kids[c], (long long)treeids[i]);
				newpos[at] = out++;
				stack[sp++] = at;
				(c ? t->tru : t->fls)[p] = (int32_t)newpos[at];
			}
		}
	}
	t->nnodes = out;   /* nodes unreachable from their root are dropped */
	t->nleafw = nleafw;
}

static void ml_tree_infer(Infer *x)
{
	TreeEnsemble t;
	tree_ensemble_params(x, &t);
	const Shape *in = infer_shape(x, 0);
	int dt = infer_dtype(x, 0);
	if (dt != DT_FLOAT && dt != DT_DOUBLE && dt != DT_INT64 && dt != DT_INT32)
		infer_fail(x, KILN_UNSUPPORTED, "input of type %s: tree ensembles take float, double, "
		           "int64 or int32", dtype_name(dt));
	if (in->rank != 1 && in->rank != 2)
		infer_fail(x, KILN_SHAPE_ERROR, "input must be [N, F] or [F], got rank %d", in->rank);
	int64_t f = in->dims[in->rank - 1].size;
	if (t.max_feature >= f)
		infer_fail(x, KILN_SHAPE_ERROR, "a node reads feature %lld; the input has %lld",
		           (long long)t.max_feature, (long long)f);
	int64_t rows = in->rank == 2 ? in->dims[0].size : 1;
	Shape z = {.rank = 2, .dims = {{rows, NULL}, {t.ntargets, NULL}}};
	if (t.is_classifier) {
		Shape y = {.rank = 1, .dims = {{rows, NULL}}};
		infer_set_output(x, 0, DT_INT64, &y);
		infer_set_output(x, 1, DT_FLOAT, &z);
	} else {
		infer_set_output(x, 0, DT_FLOAT, &z);
	}
}

/* ---- the companions ------------------------------------------------------- */

/* The input as [rows, cols] (a 1-D input is one row). */
static void ml_rows(Infer *x, int64_t *rows, int64_t *cols)
{
	const Shape *in = infer_shape(x, 0);
	int dt = infer_dtype(x, 0);
	if (dt != DT_FLOAT && dt != DT_DOUBLE && dt != DT_INT64 && dt != DT_INT32)
		infer_fail(x, KILN_UNSUPPORTED, "input of type %s: %s takes float, double, int64 or "
		           "int32", dtype_name(dt), x->n->op_type);
	if (in->rank != 1 && in->rank != 2)
		infer_fail(x, KILN_SHAPE_ERROR, "input must be [N, C] or [C], got rank %d", in->rank);
	*rows = in->rank == 2 ? in->dims[0].size : 1;
	*cols = in->dims[in->rank - 1].size;
}

void ml_linear_params(Infer *x, MlLinear *l)
{
	memset(l, 0, sizeof *l);
	l->post = ml_post_transform(x);
	int64_t ncoef, nint;
	l->coef = ml_reals(x, "coefficients", &ncoef, NULL);
	l->intercepts = ml_reals(x, "intercepts", &nint, NULL);
	if (x->n->op == OP_ML_LinearClassifier) {
		l->labels = ml_labels(x, &l->nlabels);
		l->ntargets = nint ? nint : l->nlabels;
		l->multi_class = attr_int(x, "multi_class", 0);
	} else {
		l->ntargets = attr_int(x, "targets", 1);
	}
	if (!l->coef || l->ntargets < 1 || ncoef % l->ntargets)
		infer_fail(x, KILN_INVALID_MODEL, "coefficients (%lld) must hold %lld rows",
		           (long long)ncoef, (long long)l->ntargets);
	if (nint && nint != l->ntargets)
		infer_fail(x, KILN_INVALID_MODEL, "intercepts has %lld entries; %lld expected",
		           (long long)nint, (long long)l->ntargets);
	l->nintercepts = nint;
	l->nfeatures = ncoef / l->ntargets;
	if (x->n->op == OP_ML_LinearClassifier && l->ntargets != l->nlabels &&
	    !(l->ntargets == 1 && l->nlabels == 2))
		infer_fail(x, KILN_INVALID_MODEL, "%lld score rows for %lld class labels",
		           (long long)l->ntargets, (long long)l->nlabels);
}

static void ml_linear_infer(Infer *x)
{
	MlLinear l;
	ml_linear_params(x, &l);
	int64_t rows, cols;
	ml_rows(x, &rows, &cols);
	if (cols != l.nfeatures)
		infer_fail(x, KILN_SHAPE_ERROR, "input has %lld features; the coefficients %lld",
		           (long long)cols, (long long)l.nfeatures);
	int64_t nz = l.ntargets;
	if (x->n->op == OP_ML_LinearClassifier && l.ntargets == 1 && l.nlabels == 2)
		nz = 2;
	Shape z = {.rank = 2, .dims = {{rows, NULL}, {nz, NULL}}};
	if (x->n->op == OP_ML_LinearClassifier) {
		Shape y = {.rank = 1, .dims = {{rows, NULL}}};
		infer_set_output(x, 0, DT_INT64, &y);
		infer_set_output(x, 1, DT_FLOAT, &z);
	} else {
		infer_set_output(x, 0, DT_FLOAT, &z);
	}
}

void ml_vector_params(Infer *x, MlVector *v)
{
	memset(v, 0, sizeof *v);
	switch (x->n->op) {
	case OP_ML_Scaler:
		v->offset = ml_reals(x, "offset", &v->noffset, NULL);
		v->scale = ml_reals(x, "scale", &v->nscale, NULL);
		break;
	case OP_ML_Normalizer: {
		const char *norm = attr_string(x, "norm", "MAX");
		v->norm = strcmp(norm, "MAX") == 0 ? 0 : strcmp(norm, "L1") == 0 ? 1
		        : strcmp(norm, "L2") == 0 ? 2 : -1;
		if (v->norm < 0)
			infer_fail(x, KILN_INVALID_MODEL, "norm must be MAX, L1 or L2");
		break;
	}
	case OP_ML_Binarizer:
		v->threshold = (double)attr_float(x, "threshold", 0.0f);
		break;
	case OP_ML_Imputer: {
		v->scale = ml_reals(x, "imputed_value_floats", &v->nscale, NULL);
		v->replaced = (double)attr_float(x, "replaced_value_float", 0.0f);
		int64_t ni;
		const int64_t *iv = ml_ints(x, "imputed_value_int64s", &ni);
		if (ni || node_attr(x->n, "replaced_value_int64"))
			infer_fail(x, KILN_UNSUPPORTED, "integer imputation is not supported yet "
			           "(float inputs only)");
		(void)iv;
		if (!v->nscale)
			infer_fail(x, KILN_INVALID_MODEL, "needs imputed_value_floats");
		break;
	}
	case OP_ML_ArrayFeatureExtractor:
		break;
	default:
		KILN_ASSERT(0);
	}
}

static void ml_vector_infer(Infer *x)
{
	MlVector v;
	ml_vector_params(x, &v);
	const Shape *in = infer_shape(x, 0);
	int dt = infer_dtype(x, 0);
	int64_t rows, cols;
	if (x->n->op == OP_ML_ArrayFeatureExtractor) {
		int64_t n;
		const int64_t *idx = infer_require_ints(x, 1, &n);
		if (in->rank < 1)
			infer_fail(x, KILN_SHAPE_ERROR, "input must have rank 1 or more");
		int64_t last = in->dims[in->rank - 1].size;
		for (int64_t i = 0; i < n; i++)
			if (idx[i] < 0 || idx[i] >= last)
				infer_fail(x, KILN_SHAPE_ERROR, "index %lld is out of range [0, %lld)",
				           (long long)idx[i], (long long)last);
		Shape y = *in;
		if (in->rank == 1) {
			y.rank = 2;
			y.dims[0] = (Dim){1, NULL};
			y.dims[1] = (Dim){n, NULL};
		} else {
			y.dims[in->rank - 1] = (Dim){n, NULL};
		}
		if (n == 0)
			infer_fail(x, KILN_SHAPE_ERROR, "selects no elements");
		infer_set_output(x, 0, dt, &y);
		return;
	}
	ml_rows(x, &rows, &cols);
	if (x->n->op == OP_ML_Scaler &&
	    ((v.noffset != 1 && v.noffset != cols) || (v.nscale != 1 && v.nscale != cols)))
		infer_fail(x, KILN_SHAPE_ERROR, "offset (%lld) and scale (%lld) must have 1 or %lld "
		           "entries", (long long)v.noffset, (long long)v.nscale, (long long)cols);
	if (x->n->op == OP_ML_Imputer) {
		if (v.nscale != 1 && v.nscale != cols)
			infer_fail(x, KILN_SHAPE_ERROR, "imputed_value_floats has %lld entries; 1 or "
			           "%lld expected", (long long)v.nscale, (long long)cols);
		if (dt != DT_FLOAT)
			infer_fail(x, KILN_UNSUPPORTED, "Imputer of %s: float inputs only",
			           dtype_name(dt));
	}
	Shape y = {.rank = 2, .dims = {{rows, NULL}, {cols, NULL}}};
	if (x->n->op == OP_ML_Binarizer || x->n->op == OP_ML_Imputer)
		y = *in;   /* same shape and type as the input */
	infer_set_output(x, 0, x->n->op == OP_ML_Binarizer || x->n->op == OP_ML_Imputer
	                       ? dt : DT_FLOAT, &y);
}

/* ZipMap, with --zipmap=tensor (docs/models.md): the probabilities [N, C]
 * or [C] as they are, one column per key. The keys reach the header
 * (emit/ml.c), so each is checked here: one list, one key per column, no
 * string holding a NUL (a C string could not say it). */
int ml_zipmap_keys(Infer *x, const int64_t **ints, const WeightString **strings)
{
	const Attr *si = node_attr(x->n, "classlabels_int64s");
	const Attr *ss = node_attr(x->n, "classlabels_strings");
	if (!si == !ss)
		infer_fail(x, KILN_INVALID_MODEL, "needs exactly one of classlabels_int64s and "
		           "classlabels_strings");
	if ((si && si->type != AT_INTS) || (ss && ss->type != AT_STRINGS))
		infer_fail(x, KILN_INVALID_MODEL, "classlabels_%s must be a list of %s",
		           si ? "int64s" : "strings", si ? "ints" : "strings");
	*ints = si ? si->ints : NULL;
	*strings = ss ? ss->strings : NULL;
	for (int i = 0; ss && i < ss->n; i++)
		if (memchr(ss->strings[i].data, 0, ss->strings[i].len))
			infer_fail(x, KILN_UNSUPPORTED, "class label %d holds a NUL byte", i);
	return si ? si->n : ss->n;
}

static void ml_zipmap_infer(Infer *x)
{
	if (!x->g->model->zipmap_tensor)
		infer_fail(x, KILN_UNSUPPORTED, "%s", op_out_of_scope(DOMAIN_ML, "ZipMap"));
	const int64_t *ints;
	const WeightString *strings;
	int nkeys = ml_zipmap_keys(x, &ints, &strings);
	const Shape *in = infer_shape(x, 0);
	if (infer_dtype(x, 0) != DT_FLOAT)
		infer_fail(x, KILN_INVALID_MODEL, "input is %s; ZipMap takes float",
		           dtype_name(infer_dtype(x, 0)));
	if (in->rank != 1 && in->rank != 2)
		infer_fail(x, KILN_SHAPE_ERROR, "input has rank %d; ZipMap takes [N, C] or [C]",
		           in->rank);
	if (in->dims[in->rank - 1].size != nkeys)
		infer_fail(x, KILN_SHAPE_ERROR, "input has %lld columns but %d class labels",
		           (long long)in->dims[in->rank - 1].size, nkeys);
	infer_set_output(x, 0, DT_FLOAT, in);
}

void ops_ml_infer(Infer *x)
{
	switch (x->n->op) {
	case OP_ML_ZipMap:
		ml_zipmap_infer(x);
		return;
	case OP_ML_TreeEnsembleClassifier: case OP_ML_TreeEnsembleRegressor:
		ml_tree_infer(x);
		return;
	case OP_ML_LinearClassifier: case OP_ML_LinearRegressor:
		ml_linear_infer(x);
		return;
	default:
		ml_vector_infer(x);
		return;
	}
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_ml_defs[] = {
	{.op = OP_ML_TreeEnsembleClassifier, .infer = ops_ml_infer, .emit = emit_tree_ensemble,
	 .batch = BK_ROWS_2D,
	 .note = "int64 class labels (string labels refused); all node modes, missing-value "
	         "tracks, base values, post-transforms; double thresholds (*_as_tensor) compared "
	         "in double; node arrays in the weights object, runtime/kernels/f32-tree; see "
	         "[trees.md](trees.md)"},
	{.op = OP_ML_TreeEnsembleRegressor, .infer = ops_ml_infer, .emit = emit_tree_ensemble,
	 .batch = BK_ROWS_2D,
	 .note = "aggregate SUM, AVERAGE, MIN, MAX; post-transforms as the spec says where ONNX "
	         "Runtime departs from it (it ignores LOGISTIC and SOFTMAX on one target and "
	         "approximates PROBIT; kiln applies them, PROBIT exact); double thresholds "
	         "compared in double (ONNX Runtime rounds them to float); see [trees.md](trees.md)"},
	{.op = OP_ML_LinearClassifier, .infer = ops_ml_infer, .emit = emit_ml_linear,
	 .batch = BK_ROWS_2D,
	 .note = "int64 class labels; one score row for two classes gives [1 - p, p], p the "
	         "transformed score, as ONNX Runtime does"},
	{.op = OP_ML_LinearRegressor, .infer = ops_ml_infer, .emit = emit_ml_linear,
	 .batch = BK_ROWS_2D},
	{.op = OP_ML_Normalizer, .infer = ops_ml_infer, .emit = emit_ml_vector,
	 .batch = BK_ROWS_2D,
	 .note = "MAX, L1, L2; a row whose norm is 0 is copied"},
	{.op = OP_ML_Scaler, .infer = ops_ml_infer, .emit = emit_ml_vector, .batch = BK_ROWS_2D},
	{.op = OP_ML_Binarizer, .infer = ops_ml_infer, .emit = emit_ml_vector,
	 .batch = BK_ROWS_AS_IS},
	{.op = OP_ML_ArrayFeatureExtractor, .infer = ops_ml_infer, .emit = emit_ml_vector,
	 .batch = BK_FEATURE_SELECT,
	 .note = "the indices must be known at compile time"},
	{.op = OP_ML_Imputer, .infer = ops_ml_infer, .emit = emit_ml_vector, .batch = BK_ROWS_2D,
	 .types = OT_F32,
	 .note = "float imputed values (imputed_value_floats)"},
	{.op = OP_ML_ZipMap, .infer = ops_ml_infer, .emit = emit_zipmap, .batch = BK_ROWS_AS_IS,
	 .note = "with --zipmap=tensor only (C has no maps): the output is the [N, C] float "
	         "tensor, the map's keys in NAME.h (docs/models.md); refused without it"},
	{.op = NONE},
};
