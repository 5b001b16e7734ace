/*
 * passes/mlpconv.c - a per-row MLP applied to a transposed tensor runs on
 * the untransposed one as 1x1 convolutions, and the transposes go away.
 *
 * Interaction networks (JEDI-net style) and other graph networks written in
 * PyTorch apply nn.Linear layers to the edges or objects of a [N, C, R]
 * tensor by transposing it first: `f(x.transpose(1, 2).reshape(-1, C))`,
 * often transposed back after (`.view(-1, R, D).transpose(1, 2)`). Each
 * layer is then a GEMM of N*R rows by a few (8-32) output columns, between
 * two full copies of the tensor. A Linear on the rows of x^T is a 1x1
 * convolution on x: y[n, :, r] = W x[n, :, r] + b, the GEMM of D rows by R
 * columns per sample (the wide side where the kernel wants it), with bias,
 * activation and residual in its epilogue, and no transpose at all.
 *
 * The pattern, every shape checked in every compiled signature:
 *   Transpose(X, perm [0, 2, 1])          X [N, C, R] float32
 *   -> Reshape to [N*R, C]
 *   -> one or more  Gemm(., W, b)  (transA 0, transB 1, alpha 1, beta 1, W a
 *      constant [D, C'], b none or a constant of D elements, [D] or [1, D]),
 *      each optionally followed by a unary activation (Relu, LeakyRelu,
 *      Sigmoid, Tanh, Elu, Selu), each value read only by the next node;
 *   -> either Reshape to [N, R, D] -> Transpose(perm [0, 2, 1]) (read as
 *      [N, D, R]): the whole chain becomes Conv (W viewed as [D, C', 1]) and
 *      activation nodes on X, whose last output replaces the Transpose's;
 *   -> or anything else, when D < C (the transpose moves to the smaller
 *      tensor): the chain's output [N*R, D] becomes Transpose(perm [0, 2, 1])
 *      and Reshape [-1, D] of the last Conv's [N, D, R].
 * The weights are views of the same bytes (no copy); the Gemms were their
 * only readers or not, the weights object holds one copy either way. fuse
 * then takes the activations into the Convs' epilogue. Each sample reads
 * only its own rows before and after, so batch independence holds.
 */
#include <string.h>

#include "rewrite.h"

enum { MAX_LAYERS = 16 };

typedef struct Layer {
	int gemm, act;   /* node ids; act NONE if none */
	int64_t d;       /* output channels */
} Layer;

static bool perm_021(const Node *n)
{
	const Attr *p = rw_attr(n, "perm");
	return n->op == OP_Transpose && n->nin == 1 && n->nout == 1 && p && p->type == AT_INTS &&
	       p->n == 3 && p->ints[0] == 0 && p->ints[1] == 2 && p->ints[2] == 1;
}

/* Does id have the shape {a, b} (rank 2) or {a, b, c} (rank 3, c >= 0) in
 * signature k? */
static bool shape_is(PassCtx *c, int id, int k, int rank, int64_t a, int64_t b, int64_t d)
{
	const Shape *s = rw_shape_in(c, id, k);
	if (!s || s->rank != rank || s->dims[0].size != a || s->dims[1].size != b)
		return false;
	return rank == 2 || s->dims[2].size == d;
}

static bool is_act(const Node *n)
{
	switch (n->op) {
	case OP_Relu: case OP_LeakyRelu: case OP_Sigmoid: case OP_Tanh: case OP_Elu: case OP_Selu:
		return n->nin == 1 && n->nout == 1;
	default:
		return false;
	}
}

/* Gemm node u as one layer reading ch channels: its D, or -1. */
static int64_t gemm_layer(PassCtx *c, const Node *u, int v, int64_t ch)
{
	if (u->op != OP_Gemm || u->nin < 2 || u->nin > 3 || u->nout != 1 || u->in[0] != v ||
	    u->domain_id != DOMAIN_ONNX || rw_attr_int(u, "transA", 0) != 0 ||
	    rw_attr_int(u, "transB", 0) != 1 || rw_attr_float(u, "alpha", 1.0f) != 1.0f)
		return -1;
	int w = u->in[1], b = u->nin > 2 ? u->in[2] : NONE;
	if (!rw_is_const(c, w) || rw_dtype(c, w) != DT_FLOAT)
		return -1;
	const Shape *ws = &c->g->values[w].shape;
	if (ws->rank != 2 || ws->dims[1].size != ch || ws->dims[0].size < 1)
		return -1;
	int64_t d = ws->dims[0].size;
	if (b != NONE) {
		if (!rw_is_const(c, b) || rw_dtype(c, b) != DT_FLOAT ||
		    rw_attr_float(u, "beta", 1.0f) != 1.0f)
			return -1;
		const Shape *bs = &c->g->values[b].shape;
		bool ok = (bs->rank == 1 && bs->dims[0].size == d) ||
		          (bs->rank == 2 && bs->dims[0].size == 1 && bs->dims[1].size == d);
		if (!ok)
			return -1;
	}
	return d;
}

static bool rewrite_one(PassCtx *c, int ti)
{
	Graph *g = c->g;
	const Node *t = &g->nodes[ti];
	int x = t->in[0];
	if (!perm_021(t) || t->domain_id != DOMAIN_ONNX || x == NONE || rw_dtype(c, x) != DT_FLOAT)
		return false;
	const Shape *x0 = rw_shape_in(c, x, 0);
	if (!x0 || x0->rank != 3 || x0->dims[1].size < 1 || x0->dims[2].size < 1)
		return false;
	const int64_t C = x0->dims[1].size, R = x0->dims[2].size;
	int64_t nb[64];
	if (c->nsigs > 64)
		return false;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *s = rw_shape_in(c, x, k);
		if (!s || s->rank != 3 || s->dims[0].size < 0 || s->dims[1].size != C ||
		    s->dims[2].size != R)
			return false;
		nb[k] = s->dims[0].size;
	}
	int r1 = rw_sole_user(c, t->out[0]);
	if (r1 == NONE || g->nodes[r1].op != OP_Reshape || g->nodes[r1].in[0] != t->out[0] ||
	    g->nodes[r1].nout != 1)
		return false;
	int v = g->nodes[r1].out[0];
	for (int k = 0; k < c->nsigs; k++)
		if (!shape_is(c, v, k, 2, nb[k] * R, C, 0))
			return false;
	Layer layer[MAX_LAYERS];
	int nl = 0;
	int64_t ch = C;
	for (;;) {
		int u = rw_sole_user(c, v);
		if (u == NONE || nl == MAX_LAYERS)
			break;
		int64_t d = gemm_layer(c, &g->nodes[u], v, ch);
		if (d < 0)
			break;
		layer[nl] = (Layer){.gemm = u, .act = NONE, .d = d};
		v = g->nodes[u].out[0];
		ch = d;
		int a = rw_sole_user(c, v);
		if (a != NONE && is_act(&g->nodes[a]) && g->nodes[a].domain_id == DOMAIN_ONNX &&
		    !g->nodes[a].fused.members) {
			layer[nl].act = a;
			v = g->nodes[a].out[0];
		}
		nl++;
	}
	if (nl == 0)
		return false;
	for (int k = 0; k < c->nsigs; k++)
		if (!shape_is(c, v, k, 2, nb[k] * R, ch, 0))
			return false;
	/* the closing Reshape [N, R, D] -> Transpose [0, 2, 1], or a moved transpose */
	int r2 = rw_sole_user(c, v), t2 = NONE, final = NONE;
	if (r2 != NONE && g->nodes[r2].op == OP_Reshape && g->nodes[r2].nout == 1) {
		bool ok = true;
		for (int k = 0; k < c->nsigs && ok; k++)
			ok = shape_is(c, g->nodes[r2].out[0], k, 3, nb[k], R, ch);
		t2 = ok ? rw_sole_user(c, g->nodes[r2].out[0]) : NONE;
		if (t2 != NONE && perm_021(&g->nodes[t2]) && !rw_pinned(c, g->nodes[t2].out[0]))
			final = g->nodes[t2].out[0];
		else
			t2 = NONE;
	}
	if (final == NONE && (ch >= C || rw_pinned(c, v)))
		return false;

	int cur = x;
	for (int l = 0; l < nl; l++) {
		const Node *gm = &g->nodes[layer[l].gemm];
		const Value *wv = &g->values[gm->in[1]];
		Shape ws = {.rank = 3};
		ws.dims[0].size = layer[l].d;
		ws.dims[1].size = wv->shape.dims[1].size;
		ws.dims[2].size = 1;
		int in[3] = {cur, rw_new_const(c, wv->name, DT_FLOAT, &ws, wv->weight->bytes), NONE};
		if (gm->nin > 2) {
			const Value *bv = &g->values[gm->in[2]];
			Shape bs = {.rank = 1};
			bs.dims[0].size = layer[l].d;
			in[2] = bv->shape.rank == 1 ? gm->in[2]
			                            : rw_new_const(c, bv->name, DT_FLOAT, &bs, bv->weight->bytes);
		}
		int64_t one = 1;
		Attr ks = rw_ints_attr(c, "kernel_shape", &one, 1);
		int y = rw_new_value(c, gm->name, DT_FLOAT);
		rw_add_node(c, ti, "Conv", in, gm->nin > 2 ? 3 : 2, &y, 1, &ks, 1, gm->name);
		cur = y;
		if (layer[l].act != NONE) {
			const Node *an = &g->nodes[layer[l].act];
			int ya = rw_new_value(c, an->name, DT_FLOAT);
			rw_add_node(c, ti, an->op_type, &cur, 1, &ya, 1, an->attrs, an->nattrs, an->name);
			cur = ya;
		}
	}
	if (final == NONE) {
		/* [N, D, R] -> [N, R, D] -> [N*R, D]: what the last layer wrote */
		int64_t perm[3] = {0, 2, 1}, shape[2] = {-1, ch};
		Attr pa = rw_ints_attr(c, "perm", perm, 3);
		int yt = rw_new_value(c, "mlpconv_t", DT_FLOAT);
		rw_add_node(c, ti, "Transpose", &cur, 1, &yt, 1, &pa, 1, g->nodes[ti].name);
		int rin[2] = {yt, rw_new_i64(c, "mlpconv_shape", shape, 2)};
		int yr = rw_new_value(c, "mlpconv_r", DT_FLOAT);
		rw_add_node(c, ti, "Reshape", rin, 2, &yr, 1, NULL, 0, g->nodes[r1].name);
		final = v;
		cur = yr;
	}
	rw_kill(c, ti);
	rw_kill(c, r1);
	for (int l = 0; l < nl; l++) {
		rw_kill(c, layer[l].gemm);
		if (layer[l].act != NONE)
			rw_kill(c, layer[l].act);
	}
	if (t2 != NONE) {
		rw_kill(c, r2);
		rw_kill(c, t2);
	}
	rw_replace_uses(c, final, cur);
	c->stat->removed += 2 + nl + (t2 != NONE ? 2 : 0);
	for (int l = 0; l < nl; l++)
		c->stat->removed += layer[l].act != NONE;
	return true;
}

int pass_mlpconv(PassCtx *c)
{
	int changes = 0;
	if (c->nsigs == 0)
		return 0;
	int nnodes = c->g->nnodes;
	for (int i = 0; i < nnodes; i++)
		if (!c->dead[i] && c->g->nodes[i].op == OP_Transpose && rewrite_one(c, i))
			changes++;
	return changes;
}
