/*
 * passes/fuse_layernorm.c - the fuse pass's LayerNorm as exporters write it
 * (ReduceMean, Sub, Pow, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta
 * over the last axis) becomes one LayerNormalization.
 */
#include "fuse.h"

/* ReduceMean over the last axis only, keeping it. */
static bool mean_last(PassCtx *c, const Node *n, int x)
{
	if (n->op != OP_ReduceMean || rw_attr_int(n, "keepdims", 1) != 1)
		return false;
	const Shape *s = rw_shape_in(c, x, 0);
	if (!s)
		return false;
	int64_t axis;
	const Attr *at = rw_attr(n, "axes");
	if (at && at->type == AT_INTS && at->n == 1 && n->nin == 1) {
		axis = at->ints[0];
	} else if (!at && n->nin == 2) {
		int64_t cnt;
		double *v = rw_const_f64(c, n->in[1], &cnt, 1);
		if (!v || cnt != 1)
			return false;
		axis = (int64_t)v[0];
	} else {
		return false;
	}
	return axis == -1 || axis == s->rank - 1;
}

/* mean = ReduceMean(x); d = Sub(x, mean); var = ReduceMean(Pow(d, 2));
 * y = Div(d, Sqrt(Add(var, eps))) * gamma + beta
 * -> LayerNormalization(x, gamma, beta, axis = -1, epsilon = eps). */
bool fuse_layernorm(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *rm = &g->nodes[i];
	if (rm->op != OP_ReduceMean || rm->nout != 1 || rm->nin < 1 || c->nsigs == 0)
		return false;
	int x = rm->in[0];
	if (!fuse_is_f32(c, x) || !mean_last(c, rm, x))
		return false;
	int sub = fuse_only_reader(c, rm->out[0], OP_Sub);
	if (sub == NONE || g->nodes[sub].in[0] != x || g->nodes[sub].in[1] != rm->out[0])
		return false;
	int d = g->nodes[sub].out[0];
	if (g->values[d].nuse != 2 || rw_pinned(c, d))
		return false;
	/* d's two readers: Pow(d, 2) and Div(d, .). */
	int pw = NONE, dv = NONE;
	for (int k = 0; k < g->nnodes; k++) {
		if (c->dead[k])
			continue;
		const Node *n = &g->nodes[k];
		if (n->op == OP_Pow && n->nin == 2 && n->in[0] == d && fuse_is_scalar(c, n->in[1], 2))
			pw = k;
		else if (n->op == OP_Div && n->nin == 2 && n->in[0] == d)
			dv = k;
	}
	if (pw == NONE || dv == NONE)
		return false;
	int rv = fuse_only_reader(c, g->nodes[pw].out[0], OP_ReduceMean);
	if (rv == NONE || !mean_last(c, &g->nodes[rv], g->nodes[pw].out[0]))
		return false;
	int ad = fuse_only_reader(c, g->nodes[rv].out[0], OP_Add);
	if (ad == NONE)
		return false;
	const Node *an = &g->nodes[ad];
	int eps_id = an->in[0] == g->nodes[rv].out[0] ? an->in[1] : an->in[0];
	int64_t ne;
	double *eps = rw_const_f64(c, eps_id, &ne, 1);
	if (!eps || ne != 1)
		return false;
	int sq = fuse_only_reader(c, an->out[0], OP_Sqrt);
	if (sq == NONE || fuse_only_reader(c, g->nodes[sq].out[0], OP_Div) != dv ||
	    g->nodes[dv].in[1] != g->nodes[sq].out[0])
		return false;
	int mu = fuse_only_reader(c, g->nodes[dv].out[0], OP_Mul);
	if (mu == NONE)
		return false;
	const Node *mn = &g->nodes[mu];
	int gamma = mn->in[0] == g->nodes[dv].out[0] ? mn->in[1] : mn->in[0];
	int ab = fuse_only_reader(c, mn->out[0], OP_Add);
	if (ab == NONE)
		return false;
	const Node *bn = &g->nodes[ab];
	int beta = bn->in[0] == mn->out[0] ? bn->in[1] : bn->in[0];
	const Shape *sx = rw_static_shape(c, x);
	int64_t last = NONE;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *s = rw_shape_in(c, x, k);
		if (!s || s->rank < 1 || (last != NONE && s->dims[s->rank - 1].size != last))
			return false;
		last = s->dims[s->rank - 1].size;
	}
	(void)sx;
	for (int k = 0; k < 2; k++) {
		int v = k ? beta : gamma;
		if (!rw_is_const(c, v) || g->values[v].dtype != DT_FLOAT ||
		    g->values[v].shape.rank != 1 || g->values[v].shape.dims[0].size != last)
			return false;
	}
	int y = bn->out[0];
	Attr at[2] = {rw_int_attr(c, "axis", -1), rw_float_attr(c, "epsilon", (float)eps[0])};
	int in[3] = {x, gamma, beta};
	const char *name = rm->name[0] ? rm->name : "layernorm";
	int members[9] = {i, sub, pw, rv, ad, sq, dv, mu, ab};
	for (int k = 0; k < 9; k++)
		rw_kill(c, members[k]);
	int pi = rw_add_node(c, ab, "LayerNormalization", in, 3, &y, 1, at, 2, name);
	Node *ln = &c->pending[pi].node;
	/* LayerNormalization is opset 17; older models get the op regardless,
	 * as kiln's own fused node (the schema is the same). */
	if (ln->since == 0)
		ln->since = 17;
	ln->fused.members = "ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add";
	c->stat->fused += 8;
	return true;
}
