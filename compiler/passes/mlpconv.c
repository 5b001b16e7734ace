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

/* ---- a 1x1 convolution of selections, before the selections ---- */

enum { MAX_PARTS = 4 };

/* Is node ci a 1x1 convolution on [N, C, L] (rank 3) with a constant float32
 * weight [D, C, 1], no bias or a constant one of D, no padding, stride,
 * dilation or group, and nothing fused but a Relu? */
static bool plain_conv1x1(PassCtx *c, const Node *n)
{
	if (n->op != OP_Conv || n->domain_id != DOMAIN_ONNX || n->nin < 2 || n->nin > 3 ||
	    n->nout != 1 || n->fused.residual ||
	    (n->fused.act != FACT_NONE && n->fused.act != FACT_RELU) ||
	    rw_attr_int(n, "group", 1) != 1 || !rw_conv_unpadded(n))
		return false;
	static const char *const ones[] = {"strides", "dilations", "kernel_shape"};
	for (int a = 0; a < 3; a++) {
		const Attr *at = rw_attr(n, ones[a]);
		for (int k = 0; at && k < at->n; k++)
			if (at->type != AT_INTS || at->ints[k] != 1)
				return false;
	}
	int w = n->in[1], b = n->nin > 2 ? n->in[2] : NONE;
	if (!rw_is_const(c, w) || rw_dtype(c, w) != DT_FLOAT || !c->g->values[w].weight ||
	    !c->g->values[w].weight->bytes)
		return false;
	const Shape *ws = &c->g->values[w].shape;
	if (ws->rank != 3 || ws->dims[2].size != 1 || ws->dims[0].size < 1 || ws->dims[1].size < 1)
		return false;
	if (b != NONE) {
		const Shape *bs = &c->g->values[b].shape;
		if (!rw_is_const(c, b) || rw_dtype(c, b) != DT_FLOAT || !c->g->values[b].weight ||
		    !c->g->values[b].weight->bytes || bs->rank != 1 || bs->dims[0].size != ws->dims[0].size)
			return false;
	}
	return true;
}

/* The node producing id, if it is live and id is its only output read */
static const Node *producer(PassCtx *c, int id)
{
	int p = c->g->values[id].producer;
	return p == NONE || c->dead[p] ? NULL : &c->g->nodes[p];
}

/* Conv(Concat(S_1, .., S_k), W, b) along the channels, each S_t a column
 * selection (KilnSelect, the onehot pass's) of the same x [N, C, L], read
 * as [N, C, M] (through Reshapes that keep the last axis), M > L: the
 * convolution is linear in each part, so it is
 *   y[n, :, j] = W_1 x[n, :, src_1[j]] + ... + W_k x[n, :, src_k[j]] + b,
 * the convolution P = [W_1; ..; W_k] x ([N, k D, L], b on the last part's
 * rows) selected and added (KilnSelectSum, with the Relu if one follows):
 * k D C L multiply-adds per sample where there were D k C M, and no copy of
 * the selections. Interaction networks send the objects' features to the
 * edges this way (receiver and sender matrices) before the edge MLP. The
 * sums are rounded in another order: other bits than the unrewritten
 * graph (the same in every variant and at every batch size), and an
 * infinity or NaN in x reaches only the columns that select it (the
 * MatMul by the selection matrix spread it over the row). */
static bool rewrite_select_conv(PassCtx *c, int ci)
{
	Graph *g = c->g;
	const Node *cv = &g->nodes[ci];
	if (!plain_conv1x1(c, cv) || rw_dtype(c, cv->in[0]) != DT_FLOAT)
		return false;
	const Node *cat = producer(c, cv->in[0]);
	if (!cat || cat->op != OP_Concat || cat->domain_id != DOMAIN_ONNX || cat->nout != 1 ||
	    cat->nin < 1 || cat->nin > MAX_PARTS || rw_sole_user(c, cat->out[0]) != ci ||
	    rw_pinned(c, cat->out[0]))
		return false;
	int64_t axis = rw_attr_int(cat, "axis", 0);
	if (axis != 1 && axis != -2)
		return false;
	const int k = cat->nin;
	int sel[MAX_PARTS], rsh[MAX_PARTS], xin = NONE;
	for (int t = 0; t < k; t++) {
		int v = cat->in[t];
		if (v == NONE || rw_sole_user(c, v) != cat->id || rw_pinned(c, v))
			return false;
		for (int u = 0; u < t; u++)
			if (cat->in[u] == v)  /* one selection read twice: left as it is */
				return false;
		const Node *p = producer(c, v);
		rsh[t] = NONE;
		if (p && p->op == OP_Reshape && p->nout == 1 && p->in[0] != NONE) {
			rsh[t] = p->id;
			if (rw_sole_user(c, p->in[0]) != p->id || rw_pinned(c, p->in[0]))
				return false;
			p = producer(c, p->in[0]);
		}
		if (!p || p->op != OP_KilnSelect || p->nin != 2 || p->nout != 1 || !rw_is_const(c, p->in[1]))
			return false;
		sel[t] = p->id;
		if (t == 0)
			xin = p->in[0];
		else if (p->in[0] != xin)
			return false;
	}
	/* x [N, C, L]: the selections' input, or what a Reshape of it read */
	int x = xin;
	const Shape *xs0 = rw_shape_in(c, x, 0);
	if (xs0 && xs0->rank != 3) {
		const Node *p = producer(c, x);
		if (!p || p->op != OP_Reshape || p->in[0] == NONE)
			return false;
		x = p->in[0];
	}
	const Shape *ws = &g->values[cv->in[1]].shape, *ss = &g->values[g->nodes[sel[0]].in[1]].shape;
	const int64_t D = ws->dims[0].size;
	xs0 = rw_shape_in(c, x, 0);
	if (!xs0 || xs0->rank != 3 || ss->rank != 1)
		return false;
	const int64_t C = xs0->dims[1].size, L = xs0->dims[2].size, M = ss->dims[0].size;
	if (C < 1 || L < 1 || M <= L || ws->dims[1].size != k * C || rw_dtype(c, x) != DT_FLOAT)
		return false;
	for (int t = 0; t < k; t++) {
		const Shape *st = &g->values[g->nodes[sel[t]].in[1]].shape;
		if (st->rank != 1 || st->dims[0].size != M)
			return false;
	}
	for (int s = 0; s < c->nsigs; s++) {
		const Shape *xs = rw_shape_in(c, x, s), *is = rw_shape_in(c, xin, s);
		if (!xs || xs->rank != 3 || xs->dims[0].size < 0 || xs->dims[1].size != C ||
		    xs->dims[2].size != L || !is || is->rank < 1 || is->dims[is->rank - 1].size != L)
			return false;
		for (int t = 0; t < k; t++)
			if (!shape_is(c, cat->in[t], s, 3, xs->dims[0].size, C, M))
				return false;
	}
	int64_t *idx = arena_array(c->a, (size_t)(k * M), sizeof *idx);
	for (int t = 0; t < k; t++) {
		int64_t n = 0;
		if (!rw_const_ints(c, g->nodes[sel[t]].in[1], idx + t * M, M, &n) || n != M)
			return false;
		for (int64_t j = 0; j < M; j++)
			if (idx[t * M + j] < 0 || idx[t * M + j] >= L)
				return false;
	}
	/* a Relu node right after (before fuse took it in) */
	int y = cv->out[0], relu = NONE;
	bool fused_relu = cv->fused.act == FACT_RELU;
	int u = rw_sole_user(c, y);
	if (!fused_relu && u != NONE && g->nodes[u].op == OP_Relu && g->nodes[u].nin == 1 &&
	    g->nodes[u].nout == 1 && g->nodes[u].domain_id == DOMAIN_ONNX && !rw_pinned(c, y)) {
		relu = u;
		y = g->nodes[u].out[0];
	}
	/* W' [k D, C, 1]: part t's rows are W[:, t C .. (t + 1) C); the bias on
	 * the last part's rows, zeros before */
	const float *w = (const float *)g->values[cv->in[1]].weight->bytes;
	float *wp = arena_array(c->a, (size_t)(k * D * C), sizeof *wp);
	for (int t = 0; t < k; t++)
		for (int64_t o = 0; o < D; o++)
			memcpy(wp + (t * D + o) * C, w + o * k * C + t * C, (size_t)C * sizeof *wp);
	Shape wsh = {.rank = 3};
	wsh.dims[0].size = k * D, wsh.dims[1].size = C, wsh.dims[2].size = 1;
	int cin[3] = {x, rw_new_const(c, g->values[cv->in[1]].name, DT_FLOAT, &wsh, wp), NONE};
	if (cv->nin > 2 && cv->in[2] != NONE) {
		float *bp = arena_array(c->a, (size_t)(k * D), sizeof *bp);
		memset(bp, 0, (size_t)(k * D) * sizeof *bp);
		memcpy(bp + (k - 1) * D, g->values[cv->in[2]].weight->bytes, (size_t)D * sizeof *bp);
		Shape bsh = {.rank = 1};
		bsh.dims[0].size = k * D;
		cin[2] = rw_new_const(c, g->values[cv->in[2]].name, DT_FLOAT, &bsh, bp);
	}
	int64_t one = 1;
	Attr ks = rw_ints_attr(c, "kernel_shape", &one, 1);
	int pv = rw_new_value(c, "selconv", DT_FLOAT);
	rw_add_node(c, ci, "Conv", cin, cin[2] != NONE ? 3 : 2, &pv, 1, &ks, 1, cv->name);
	Shape ishape = {.rank = 2};
	ishape.dims[0].size = k, ishape.dims[1].size = M;
	int sin[2] = {pv, rw_new_const(c, "selconv_index", DT_INT64, &ishape, idx)};
	Attr ra = rw_int_attr(c, "kiln.relu", 1);
	bool has_relu = fused_relu || relu != NONE;
	rw_add_fused(c, ci, OP_KilnSelectSum, sin, 2, &y, 1, has_relu ? &ra : NULL, has_relu ? 1 : 0,
	             cv->name);
	rw_kill(c, ci);
	rw_kill(c, cat->id);
	for (int t = 0; t < k; t++) {
		rw_kill(c, sel[t]);
		if (rsh[t] != NONE)
			rw_kill(c, rsh[t]);
	}
	if (relu != NONE)
		rw_kill(c, relu);
	c->stat->removed += 1 + k + (relu != NONE);
	for (int t = 0; t < k; t++)
		c->stat->removed += rsh[t] != NONE;
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
	/* the Convs made above are pending: the next iteration sees them */
	for (int i = 0; i < nnodes; i++)
		if (!c->dead[i] && c->g->nodes[i].op == OP_Conv && rewrite_select_conv(c, i))
			changes++;
	return changes;
}
