/*
 * f32-tree/ref.c - tree ensembles (ai.onnx.ml TreeEnsembleClassifier and
 * TreeEnsembleRegressor) over node arrays the compiler laid out, and the
 * post-transforms the ai.onnx.ml operators share.
 *
 * Per row: walk every tree from its root to a leaf (or take the leaves the
 * generated code found: kiln_tree_ensemble_leaves), aggregate the leaf's
 * weights per target (SUM, AVERAGE, MIN or MAX; a classifier sums), add the
 * base values, pick a classifier's label, then apply the post-transform.
 * Scores are kept in double whatever the attributes' precision and rounded
 * to float once, at the end.
 *
 * Classifiers follow ONNX Runtime's conventions where the ONNX spec is
 * silent: with two classes and weights on one class only (a "binary case",
 * as XGBoost, LightGBM and scikit-learn's boosting export it) the single
 * score is the positive class's, and the second column is made from it
 * (1 - p for all-positive weights, -s or the other logistic otherwise).
 * Where ONNX Runtime departs from the spec (PROBIT is an approximation
 * there; a single-target regressor ignores LOGISTIC and SOFTMAX), the spec
 * is followed. docs/ops.md gives the details.
 */
#include <math.h>
#include <stdbool.h>

#include "kiln/kernels.h"

/* Acklam's rational approximation of the inverse normal CDF (relative error
 * 1.2e-9), then one Halley step on erfc (kiln_erfc: no libm): full double
 * precision. */
KILN_API double kiln_ml_probit(double p)
{
	static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
	                           -2.759285104469687e+02, 1.383577518672690e+02,
	                           -3.066479806614716e+01, 2.506628277459239e+00};
	static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
	                           -1.556989798598866e+02, 6.680131188771972e+01,
	                           -1.328068155288572e+01};
	static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
	                           -2.400758277161838e+00, -2.549732539343734e+00,
	                           4.374664141464968e+00, 2.938163982698783e+00};
	static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
	                           2.445134137142996e+00, 3.754408661907416e+00};
	if (isnan(p) || p < 0 || p > 1)
		return (double)NAN;
	if (p == 0)
		return -(double)INFINITY;
	if (p == 1)
		return (double)INFINITY;
	double x;
	if (p < 0.02425) {
		double q = sqrt(-2 * kiln_log(p));
		x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	} else if (p <= 1 - 0.02425) {
		double q = p - 0.5, r = q * q;
		x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
		    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
	} else {
		double q = sqrt(-2 * kiln_log1p(-p));
		x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	double e = 0.5 * kiln_erfc(-x / sqrt(2.0)) - p;
	double u = e * sqrt(2 * 3.14159265358979323846) * kiln_exp(x * x / 2);
	return x - u / (1 + x * u / 2);
}

static double logistic(double v)
{
	return 1 / (1 + kiln_exp(-v));
}

KILN_API void kiln_ml_post_transform(int post, double *s, int64_t n)
{
	double m = -(double)INFINITY, sum = 0;
	switch (post) {
	case KILN_ML_LOGISTIC:
		for (int64_t i = 0; i < n; i++)
			s[i] = logistic(s[i]);
		return;
	case KILN_ML_PROBIT:
		for (int64_t i = 0; i < n; i++)
			s[i] = kiln_ml_probit(s[i]);
		return;
	case KILN_ML_SOFTMAX:
		for (int64_t i = 0; i < n; i++)
			m = s[i] > m ? s[i] : m;
		for (int64_t i = 0; i < n; i++)
			sum += s[i] = kiln_exp(s[i] - m);
		for (int64_t i = 0; i < n; i++)
			s[i] /= sum;
		return;
	case KILN_ML_SOFTMAX_ZERO:
		/* A softmax in which scores of exactly zero stay zero. */
		for (int64_t i = 0; i < n; i++)
			m = s[i] > m ? s[i] : m;
		for (int64_t i = 0; i < n; i++) {
			s[i] = s[i] > 1e-7 || s[i] < -1e-7 ? kiln_exp(s[i] - m) : 0;
			sum += s[i];
		}
		for (int64_t i = 0; i < n; i++)
			s[i] = sum > 0 ? s[i] / sum : 0;
		return;
	}
}

static double feature(const void *X, int xtype, int64_t i)
{
	switch (xtype) {
	case KILN_ML_X_F32: return (double)((const float *)X)[i];
	case KILN_ML_X_F64: return ((const double *)X)[i];
	case KILN_ML_X_I32: return (double)(float)((const int32_t *)X)[i];
	default: return (double)(float)((const int64_t *)X)[i];
	}
}

/* The leaf a row reaches from node i. */
static int32_t walk(const kiln_tree_ensemble *t, const void *x, int xtype, int32_t i)
{
	for (;;) {
		int m = t->mode[i];
		if (m == KILN_TREE_LEAF)
			return i;
		double v = feature(x, xtype, t->feat[i]);
		double th = t->thr_d ? t->thr_d[i] : (double)t->thr_f[i];
		int go;
		switch (m & 7) {
		case KILN_TREE_LEQ: go = v <= th; break;
		case KILN_TREE_LT: go = v < th; break;
		case KILN_TREE_GTE: go = v >= th; break;
		case KILN_TREE_GT: go = v > th; break;
		case KILN_TREE_EQ: go = v == th; break;
		default: go = v != th; break;
		}
		if ((m & KILN_TREE_MISSING_TRUE) && isnan(v))
			go = 1;
		i = go ? t->tru[i] : t->fls[i];
	}
}

/* A two-class classifier's label and scores (ONNX Runtime's conventions). */
static int64_t binary_scores(const kiln_tree_ensemble *t, double *s, const double *has, float *z)
{
	int n = 2;
	if (t->nbase == 2) {
		if (has[1]) {
			/* Runtime's reading: base_values[0] is not used (assumed equal). */
			s[1] = t->base[1] + s[0];
			s[0] = -s[1];
		} else {
			s[0] += t->base[0];
			s[1] += t->base[1];
		}
	} else if (t->nbase == 1) {
		s[0] += t->base[0];
		if (!has[1])
			n = 1;
	} else if (!has[1]) {
		n = 1;
	}
	double pos = n == 2 && has[1] ? s[1] : has[0] ? s[0] : 0;
	int second = -1;
	int64_t label;
	if (t->binary_case) {
		bool positive = t->all_positive ? pos > 0.5 : pos > 0;
		second = t->all_positive ? 0 : 2;
		label = t->labels[positive ? 1 : 0];
	} else {
		label = pos > 0 ? 1 : 0;
	}
	if (n == 2) {
		kiln_ml_post_transform(t->post_transform, s, 2);
	} else if (t->post_transform == KILN_ML_PROBIT) {
		s[0] = kiln_ml_probit(s[0]);
		s[1] = 0;
	} else if (second == 0) {
		/* One probability: its complement is the other class's. */
		s[1] = s[0];
		s[0] = 1 - s[0];
	} else if (second == 2 && t->post_transform == KILN_ML_LOGISTIC) {
		s[1] = logistic(s[0]);
		s[0] = logistic(-s[0]);
	} else if (second == 2) {
		/* One margin, mirrored; no other transform (ONNX Runtime's). */
		s[1] = s[0];
		s[0] = -s[0];
	} else {
		s[1] = 0;
		kiln_ml_post_transform(t->post_transform, s, 1);
	}
	z[0] = (float)s[0];
	z[1] = (float)s[1];
	return label;
}

/* Adds the weights of one tree's leaf to the row's scores s (has[k]: target
 * k has a weight yet). */
static void add_leaf(const kiln_tree_ensemble *t, int32_t leaf, double *s, double *has)
{
	for (int32_t j = t->tru[leaf], end = j + t->fls[leaf]; j < end; j++) {
		int32_t k = t->leaf_target[j];
		double w = t->w_d ? t->w_d[j] : (double)t->w_f[j];
		if (t->aggregate == KILN_TREE_MIN)
			s[k] = !has[k] || w < s[k] ? w : s[k];
		else if (t->aggregate == KILN_TREE_MAX)
			s[k] = !has[k] || w > s[k] ? w : s[k];
		else
			s[k] += w;
		has[k] = 1;
	}
}

/* One row's label and scores from its aggregated leaf weights. */
static void finish_row(const kiln_tree_ensemble *t, double *s, double *has, int64_t *y, float *z)
{
	int64_t nt = t->ntargets;
	if (t->labels && nt == 2) {
		int64_t label = binary_scores(t, s, has, z);
		if (y)
			*y = label;
		return;
	}
	if (t->aggregate == KILN_TREE_AVERAGE)
		for (int64_t k = 0; k < nt; k++)
			s[k] /= (double)t->ntrees;
	for (int64_t k = 0; k < t->nbase; k++) {
		s[k] += t->base[k];
		has[k] = 1;
	}
	if (t->labels) {
		/* The first class with the highest score among those that have one. */
		int64_t best = -1;
		for (int64_t k = 0; k < nt; k++)
			if (has[k] && (best < 0 || s[k] > s[best]))
				best = k;
		if (y)
			*y = t->labels[best < 0 ? 0 : best];
	}
	kiln_ml_post_transform(t->post_transform, s, nt);
	for (int64_t k = 0; k < nt; k++)
		z[k] = (float)s[k];
}

KILN_API void kiln_tree_ensemble_run(const kiln_tree_ensemble *t, const void *X, int xtype,
                                     int64_t rows, int64_t nfeat, int64_t *Y, float *Z,
                                     double *work)
{
	int64_t nt = t->ntargets;
	double *s = work, *has = work + nt;
	int xsize = xtype == KILN_ML_X_F64 || xtype == KILN_ML_X_I64 ? 8 : 4;
	for (int64_t r = 0; r < rows; r++) {
		const void *x = (const unsigned char *)X + r * nfeat * xsize;
		for (int64_t k = 0; k < nt; k++)
			s[k] = has[k] = 0;
		for (int64_t tr = 0; tr < t->ntrees; tr++)
			add_leaf(t, walk(t, x, xtype, t->roots[tr]), s, has);
		finish_row(t, s, has, Y ? Y + r : NULL, Z + r * nt);
	}
}

KILN_API void kiln_tree_ensemble_leaves(const kiln_tree_ensemble *t, const int32_t *leaf,
                                        int64_t *y, float *z, double *work)
{
	int64_t nt = t->ntargets;
	double *s = work, *has = work + nt;
	for (int64_t k = 0; k < nt; k++)
		s[k] = has[k] = 0;
	for (int64_t tr = 0; tr < t->ntrees; tr++)
		add_leaf(t, leaf[tr], s, has);
	finish_row(t, s, has, y, z);
}
