/*
 * ops/ml.c - the ai.onnx.ml operators: TreeEnsembleClassifier and
 * TreeEnsembleRegressor, and the small companions exporters put around them
 * (LinearClassifier, LinearRegressor, Normalizer, Scaler, Binarizer,
 * ArrayFeatureExtractor, Imputer; ZipMap with --zipmap=tensor only).
 *
 * Their shape hooks and records. The attributes are read and checked in
 * ops/ml_params.c (a tree ensemble as compact node arrays, each tree laid
 * out from its root, depth first, with global child indices); the emitter
 * (emit/ml.c) stores the arrays in the weights object and writes the
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
