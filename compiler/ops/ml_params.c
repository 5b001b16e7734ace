/*
 * ops/ml_params.c - the ai.onnx.ml operators' attributes, read and checked
 * once: a tree ensemble parsed into compact node arrays (TreeEnsemble), the
 * linear models' coefficients (MlLinear), the vector companions' parameters
 * (MlVector) and ZipMap's keys. Both the shape hooks (ops/ml.c) and the
 * emitters (emit/ml.c) read them from here, so neither calls the other.
 *
 * The tree parse checks what a hostile model could break: every child id
 * names a node of the same tree, every tree is a tree (a node reached twice,
 * so a cycle, is refused), feature ids are inside the input row, class and
 * target ids inside the outputs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

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
