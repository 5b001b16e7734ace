/*
 * passes/fuse_bn.c - the fuse pass's BatchNormalization folding: after Conv
 * or Gemm it folds into the weights and bias (also through an Unsqueeze or
 * Reshape that appends axes of size 1 to the Gemm's [N, C]: Gemm,
 * Unsqueeze, BN, Squeeze), when the weight dies with it (its only reader is
 * that node; otherwise folding would store a second copy, and the
 * BatchNormalization stays); so does one before an unpadded, ungrouped Conv
 * that is its only reader (BN over the features, then a 1x1 Conv1d:
 * DeepJet's branches).
 */
#include <math.h>
#include <string.h>

#include "fuse.h"

static bool dies_with(PassCtx *c, int id, int node)
{
	return id == NONE || (rw_is_const(c, id) && rw_sole_user(c, id) == node);
}

/* An inference-mode BatchNormalization with only its output Y. */
static bool plain_bn(const Node *bn)
{
	if (bn->op != OP_BatchNormalization || bn->nin != 5 || bn->since < 7 || bn->nout < 1 ||
	    bn->out[0] == NONE)
		return false;
	for (int k = 1; k < bn->nout; k++)
		if (bn->out[k] != NONE)
			return false;
	return rw_attr_int(bn, "training_mode", 0) == 0 && rw_attr_int(bn, "spatial", 1) == 1;
}

/* The BatchNorm's channel count: the length its four parameters share, or
 * -1 if they are not all constants of one length. Nothing is copied, so a
 * fold checks every shape before it converts or copies a weight. */
static int64_t bn_channels(PassCtx *c, const Node *bn)
{
	int64_t nc = -1;
	for (int k = 1; k < 5; k++) {
		if (!rw_is_const(c, bn->in[k]))
			return -1;
		int64_t n = c->g->values[bn->in[k]].weight->nelem;
		if (nc >= 0 && n != nc)
			return -1;
		nc = n;
	}
	return nc;
}

/* The BatchNorm as y = s x + t per channel, in double: its *nc channels'
 * s and t. false if its parameters are not constants of one length. */
static bool bn_affine(PassCtx *c, const Node *bn, int64_t *nc, double **s, double **t)
{
	int64_t tmp;
	if (bn_channels(c, bn) < 0)
		return false;
	double *sc = rw_const_f64(c, bn->in[1], nc, INT32_MAX), *bb = rw_const_f64(c, bn->in[2], &tmp, INT32_MAX);
	double *mean = rw_const_f64(c, bn->in[3], &tmp, INT32_MAX), *var = rw_const_f64(c, bn->in[4], &tmp, INT32_MAX);
	if (!sc || !bb || !mean || !var)
		return false;
	for (int k = 1; k < 5; k++)
		if (c->g->values[bn->in[k]].weight->nelem != *nc)
			return false;
	double eps = (double)rw_attr_float(bn, "epsilon", 1e-5f);
	*s = arena_array(c->a, (size_t)*nc, sizeof **s);
	*t = arena_array(c->a, (size_t)*nc, sizeof **t);
	for (int64_t k = 0; k < *nc; k++) {
		(*s)[k] = sc[k] / sqrt(var[k] + eps);
		(*t)[k] = bb[k] - mean[k] * (*s)[k];
	}
	return true;
}

/* Node p (a Conv or Gemm reading weight w and bias b, or NONE) now reads
 * in0, the new weight nw (shape ws) and the new bias nb (nm floats); its
 * inputs after the bias stay. */
static void set_weights(PassCtx *c, int p, int in0, const Shape *ws, float *nw, int64_t nm,
                        float *nb)
{
	Graph *g = c->g;
	const char *name = g->nodes[p].name[0] ? g->nodes[p].name : g->nodes[p].op_type;
	int nwid = rw_new_const(c, arena_printf(c->a, "%s.W", name), DT_FLOAT, ws, nw);
	Shape bs = {.rank = 1};
	bs.dims[0].size = nm;
	int nbid = rw_new_const(c, arena_printf(c->a, "%s.B", name), DT_FLOAT, &bs, nb);
	Node *pn = &g->nodes[p];
	int nin = pn->nin > 3 ? pn->nin : 3;
	int *in = arena_array(c->a, (size_t)nin, sizeof *in);
	for (int k = 0; k < pn->nin; k++) {
		in[k] = pn->in[k];
		if (k < 3 && pn->in[k] != NONE)
			g->values[pn->in[k]].nuse--;
	}
	in[0] = in0;
	in[1] = nwid;
	in[2] = nbid;
	for (int k = 0; k < 3; k++)
		g->values[in[k]].nuse++;
	pn->in = in;
	pn->nin = nin;
}

/* Node u, an Unsqueeze or Reshape that only appends axes of size 1 to a
 * [N, C] Gemm output read by nothing else but Shape (PyTorch's BatchNorm1d on a
 * Linear's output, as some exports write it: Gemm, Unsqueeze, BN, Squeeze):
 * the Gemm's node id, else NONE. A BatchNorm after u is per column of the
 * Gemm, so it folds into the Gemm and u produces its output instead. */
int unit_axes_view(PassCtx *c, int u)
{
	const Node *un = &c->g->nodes[u];
	if ((un->op != OP_Unsqueeze && un->op != OP_Reshape) || un->nout != 1 || un->nin < 1)
		return NONE;
	int a = un->in[0];
	const Value *av = &c->g->values[a];
	if (av->kind != VAL_TEMP || av->producer == NONE ||
	    c->g->nodes[av->producer].op != OP_Gemm || c->nsigs == 0)
		return NONE;
	/* Besides u, only Shape may read it (x.view(x.size(0), -1, 1)): the
	 * fold changes its values, not its shape. */
	if (!fuse_only_shape_besides(c, a, u))
		return NONE;
	for (int s = 0; s < c->nsigs; s++) {
		const Shape *si = rw_shape_in(c, a, s), *so = rw_shape_in(c, un->out[0], s);
		if (!si || !so || si->rank != 2 || so->rank <= 2)
			return NONE;
		for (int k = 0; k < so->rank; k++)
			if (so->dims[k].size != (k < 2 ? si->dims[k].size : 1))
				return NONE;
	}
	return av->producer;
}

bool fuse_bn(PassCtx *c, int j)
{
	Graph *g = c->g;
	Node *bn = &g->nodes[j];
	if (!plain_bn(bn))
		return false;
	int x = bn->in[0];
	const Value *xv = &g->values[x];
	if (xv->kind != VAL_TEMP || xv->producer == NONE || rw_sole_user(c, x) != j)
		return false;
	int p = xv->producer, via = unit_axes_view(c, p);
	if (via != NONE) {
		p = via;
		via = xv->producer;
	}
	Node *pn = &g->nodes[p];
	/* Not after a fused residual: BatchNorm would then apply to the sum. */
	if ((pn->op != OP_Conv && pn->op != OP_Gemm) || pn->nout != 1 || pn->fused.act != FACT_NONE ||
	    pn->fused.residual)
		return false;
	int w = pn->in[1], b = pn->nin > 2 ? pn->in[2] : NONE;
	if (!rw_is_const(c, w) || g->values[w].dtype != DT_FLOAT || !dies_with(c, w, p) ||
	    !dies_with(c, b, p) || (b != NONE && g->values[b].dtype != DT_FLOAT) || !fuse_is_f32(c, x))
		return false;
	int64_t nc = bn_channels(c, bn);
	const Value *wv = &g->values[w];
	Shape ws = wv->shape;
	int64_t wn = wv->weight->nelem;
	int64_t nbias = b == NONE ? 0 : g->values[b].weight->nelem;
	bool tb = rw_attr_int(pn, "transB", 0) != 0;
	/* Every shape is checked before anything is copied. */
	if (nc <= 0 || (b != NONE && !rw_is_const(c, b)))
		return false;
	if (pn->op == OP_Conv) {
		if (ws.rank < 3 || ws.dims[0].size != nc || (b != NONE && nbias != nc))
			return false;
	} else {
		/* Gemm: channels are the columns N; C must broadcast per column. */
		if (ws.rank != 2 || ws.dims[tb ? 0 : 1].size != nc || pn->since < 7)
			return false;
		if (b != NONE) {
			const Shape *sb = &g->values[b].shape;
			bool per_col = nbias == 1 || (nbias == nc && sb->dims[sb->rank - 1].size == nc);
			if (!per_col || sb->rank > 2)
				return false;
		}
	}
	double *s, *t;
	if (!bn_affine(c, bn, &nc, &s, &t))
		return false;
	double *bias = b == NONE ? NULL : rw_const_f64(c, b, &nbias, INT32_MAX);
	if (b != NONE && !bias)
		return false;
	float *nw = arena_array(c->a, (size_t)(wn ? wn : 1), sizeof *nw);
	memcpy(nw, wv->weight->bytes, (size_t)wn * 4);
	float *nb = arena_array(c->a, (size_t)nc, sizeof *nb);
	if (pn->op == OP_Conv) {
		int64_t per = wn / nc;
		for (int64_t m = 0; m < nc; m++)
			for (int64_t e = 0; e < per; e++)
				nw[m * per + e] = (float)((double)nw[m * per + e] * s[m]);
		for (int64_t m = 0; m < nc; m++)
			nb[m] = (float)((bias ? bias[m] : 0) * s[m] + t[m]);
	} else {
		double beta = (double)rw_attr_float(pn, "beta", 1.0f);
		int64_t rows = ws.dims[0].size, cols = ws.dims[1].size;
		for (int64_t r = 0; r < rows; r++)
			for (int64_t q = 0; q < cols; q++)
				nw[r * cols + q] = (float)((double)nw[r * cols + q] * s[tb ? r : q]);
		for (int64_t m = 0; m < nc; m++)
			nb[m] = (float)((bias ? beta * bias[nbias == 1 ? 0 : m] : 0) * s[m] + t[m]);
		rw_set_attr(c, pn, rw_float_attr(c, "beta", 1.0f));
	}
	set_weights(c, p, pn->in[0], &ws, nw, nc, nb);
	pn = &g->nodes[p];
	bn = &g->nodes[j];
	int y = bn->out[0];
	fuse_note(c, pn, bn);
	rw_kill(c, j);
	fuse_take_output(c, via != NONE ? via : p, y);
	return true;
}

/* BatchNormalization (node j) whose only reader is an unpadded, ungrouped
 * Conv on a float32 weight that dies with it (DeepJet's branches: BN over
 * the features, then a 1x1 Conv1d): y = s x + t per input channel c, so
 * W'[m, c, taps] = W[m, c, taps] s[c] and b'[m] = b[m] + sum over c and
 * taps of W[m, c, taps] t[c] (in double, then rounded once), and the Conv
 * reads x. Padding would see zeros where BN gives t, so a padded Conv
 * keeps its BatchNorm. Returns the Conv's node id, or NONE. */
int fuse_bn_into_conv(PassCtx *c, int j)
{
	Graph *g = c->g;
	Node *bn = &g->nodes[j];
	if (!plain_bn(bn))
		return NONE;
	int x = bn->in[0], y = bn->out[0];
	int q = rw_sole_user(c, y);
	if (q == NONE || c->dead[q] || !fuse_is_f32(c, x))
		return NONE;
	Node *cv = &g->nodes[q];
	if (cv->op != OP_Conv || cv->nin < 2 || cv->in[0] != y || cv->nout != 1 ||
	    rw_attr_int(cv, "group", 1) != 1)
		return NONE;
	for (int k = 1; k < cv->nin; k++)
		if (cv->in[k] == y)
			return NONE;
	if (!rw_conv_unpadded(cv))
		return NONE;
	int w = cv->in[1], b = cv->nin > 2 ? cv->in[2] : NONE;
	if (!rw_is_const(c, w) || g->values[w].dtype != DT_FLOAT || !dies_with(c, w, q) ||
	    !dies_with(c, b, q) || (b != NONE && g->values[b].dtype != DT_FLOAT))
		return NONE;
	const Value *wv = &g->values[w];
	Shape ws = wv->shape;
	int64_t nc = bn_channels(c, bn);
	/* Every shape is checked before anything is converted or copied. */
	if (nc <= 0 || ws.rank < 3 || ws.dims[1].size != nc)
		return NONE;
	int64_t nm = ws.dims[0].size, wn = wv->weight->nelem;
	if ((b != NONE && (!rw_is_const(c, b) || g->values[b].weight->nelem != nm)) || nm <= 0 ||
	    wn % (nm * nc) != 0)
		return NONE;
	double *s, *t;
	int64_t nbias = 0;
	double *bias = b == NONE ? NULL : rw_const_f64(c, b, &nbias, INT32_MAX);
	if (!bn_affine(c, bn, &nc, &s, &t) || (b != NONE && !bias))
		return NONE;
	int64_t taps = wn / (nm * nc);
	/* The weight's bytes may sit at any offset of the file: copied, not cast. */
	float *nw = arena_array(c->a, (size_t)wn, sizeof *nw);
	memcpy(nw, wv->weight->bytes, (size_t)wn * 4);
	float *nb = arena_array(c->a, (size_t)nm, sizeof *nb);
	for (int64_t m = 0; m < nm; m++) {
		double acc = bias ? bias[m] : 0;
		for (int64_t k = 0; k < nc; k++)
			for (int64_t e = 0; e < taps; e++) {
				int64_t i = (m * nc + k) * taps + e;
				acc += (double)nw[i] * t[k];
				nw[i] = (float)((double)nw[i] * s[k]);
			}
		nb[m] = (float)acc;
	}
	set_weights(c, q, x, &ws, nw, nm, nb);  /* the Conv reads x where it read y */
	cv = &g->nodes[q];
	bn = &g->nodes[j];
	fuse_note(c, cv, bn);
	rw_kill(c, j);
	return q;
}
