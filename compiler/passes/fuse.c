/*
 * passes/fuse.c - fusions that remove work without adding weight bytes:
 *
 *   - a Transpose [1,0] feeding a Gemm operand flips transA/transB, and one
 *     feeding a MatMul's B makes the MatMul a Gemm with transB: the kernel
 *     reads the weight transposed, so a weight also used untransformed (a
 *     tied embedding: Gather + lm_head) is stored once;
 *   - MatMul + Add(bias) becomes Gemm with C (a Reshape to 2-D and back
 *     around it when A has more than two axes; those are views), unless
 *     the batch axis is not A's leading axis (seq-first layouts): the
 *     Reshapes would merge it with the axes before it;
 *   - Gemm without C + Add(residual or bias) becomes Gemm with C;
 *   - Conv (1-D/2-D) + Add(residual of the output's shape) becomes a Conv
 *     with the residual as a kiln-internal fourth input, marked by
 *     Node.fused.residual: the kernel adds it after the bias and before
 *     the activation (ResNet blocks: Conv, BN, Add, Relu is one call);
 *   - BatchNormalization after Conv or Gemm folds into the weights and bias
 *     (also through an Unsqueeze or Reshape that appends axes of size 1 to
 *     the Gemm's [N, C]: Gemm, Unsqueeze, BN, Squeeze), when the weight dies
 *     with it (its only reader is that node; otherwise
 *     folding would store a second copy, and the BatchNormalization stays);
 *     so does one before an unpadded, ungrouped Conv that is its only reader
 *     (BN over the features, then a 1x1 Conv1d: DeepJet's branches);
 *   - Relu, Sigmoid, Tanh, Selu, Elu, LeakyRelu, HardSigmoid, Clip and GELU
 *     as exporters write it (x * 0.5 * (1 + erf(x / sqrt 2)), five nodes)
 *     after Conv (1-D/2-D) or Gemm, or after a Gemm and up to three views
 *     (Reshape, Unsqueeze, Squeeze, Flatten), become
 *     the kernel's epilogue: the activation's kind and parameters are
 *     resolved once into the node's Fused record (fused.act, .alpha,
 *     .beta; compiler/ir.h), which the emitters turn into one
 *     kiln_f32_gemm_ep / kiln_f32_conv2d_ep call.
 *
 *   - LayerNorm as exporters write it (ReduceMean, Sub, Pow, ReduceMean,
 *     Add eps, Sqrt, Div, Mul gamma, Add beta over the last axis) becomes
 *     one LayerNormalization.
 *
 *   - a float16 weight widened by a Cast is read as float16 by the GEMM
 *     (kiln_f32_gemm_f16b) or a 1-D/2-D Conv (kiln_f32_conv2d_f16w), or
 *     gathered before the Cast (only the gathered rows are widened): no
 *     float32 copy of the table anywhere.
 *
 * Every fused node records its members in fused.members, for the generated
 * C's comments. Needs shapes for MatMul rewrites (skipped without them).
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "rewrite.h"

static bool is_f32(PassCtx *c, int id)
{
	return rw_dtype(c, id) == DT_FLOAT;
}

/* Record that node `into` absorbed node `from`. */
static void note_fused(PassCtx *c, Node *into, const Node *from)
{
	rw_add_member(c, into, from);
	c->stat->fused++;
}

/* Node p now writes y (the output of the node fused into it); its old
 * output becomes an orphan. */
static void take_output(PassCtx *c, int p, int y)
{
	Graph *g = c->g;
	int old = g->nodes[p].out[0];
	g->nodes[p].out[0] = y;
	g->values[y].producer = p;
	g->values[old].producer = NONE;
}

/* Transpose of a 2-D value with perm [1,0] (or the default): its input. */
static int transposed_2d(PassCtx *c, int id)
{
	const Value *v = &c->g->values[id];
	if (v->kind != VAL_TEMP || v->producer == NONE || c->dead[v->producer])
		return NONE;
	const Node *t = &c->g->nodes[v->producer];
	if (t->op != OP_Transpose || t->nin != 1)
		return NONE;
	const Shape *s = rw_static_shape(c, t->in[0]);
	if (!s || s->rank != 2)
		return NONE;
	const Attr *p = rw_attr(t, "perm");
	if (p && (p->n != 2 || p->ints[0] != 1 || p->ints[1] != 0))
		return NONE;
	return t->in[0];
}

static int new_reshape(PassCtx *c, int before, int x, const int64_t *dims, int n,
                       const char *name)
{
	int y = rw_new_value(c, name, DT_FLOAT);
	int s = rw_new_i64(c, "shape", dims, n);
	int in[2] = {x, s};
	rw_add_node(c, before, "Reshape", in, 2, &y, 1, NULL, 0, name);
	return y;
}

/* Replace MatMul node i by Gemm(A, B [transposed], C) writing y, with
 * Reshapes to 2-D and back if A has more axes. New nodes go before node
 * `place`. The caller kills any other node it fused. */
static bool matmul_to_gemm(PassCtx *c, int i, int b, bool trans_b, int cv, int y, int place)
{
	Graph *g = c->g;
	Node *mm = &g->nodes[i];
	int a = mm->in[0];
	const Shape *sb = rw_static_shape(c, b);
	bool b_ok = is_f32(c, b) || (rw_is_const(c, b) && c->g->values[b].dtype == DT_FLOAT16);
	if (!sb || sb->rank != 2 || !is_f32(c, a) || !b_ok || c->nsigs == 0 ||
	    mm->opset < 7 || (cv == NONE && mm->opset < 11))
		return false;
	int64_t K = sb->dims[trans_b ? 1 : 0].size, N = sb->dims[trans_b ? 0 : 1].size;
	int rank = -1;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *sa = rw_shape_in(c, a, k);
		if (!sa || sa->rank < 2 || (rank >= 0 && sa->rank != rank) ||
		    sa->dims[sa->rank - 1].size != K)
			return false;
		rank = sa->rank;
	}
	int64_t out_dims[KILN_MAX_RANK];
	if (rank > 2) {
		/* Unflatten target: A's leading dims, N; one may vary (-1). */
		int varying = 0;
		for (int d = 0; d < rank - 1; d++) {
			int64_t first = rw_shape_in(c, a, 0)->dims[d].size;
			bool differs = false;
			for (int k = 1; k < c->nsigs; k++)
				differs |= rw_shape_in(c, a, k)->dims[d].size != first;
			out_dims[d] = differs ? -1 : first;
			varying += differs;
			if (first == 0)
				return false;
		}
		out_dims[rank - 1] = N;
		if (varying > 1)
			return false;
		/* One signature: the first axis is written -1 (what an exporter
		 * writes), so the graph still follows the batch size and the
		 * independence proof (batchdep.c, at probe sizes of its own) holds. */
		if (c->nsigs == 1 && !varying) {
			out_dims[0] = -1;
			varying = 1;
		}
		/* A batch axis after a leading axis longer than 1 (seq-first
		 * [seq, batch, features]) would be flattened with it, and batch
		 * independence could no longer be proven: MatMul stays. */
		for (int d = 0; d < rank - 1 && varying; d++) {
			if (out_dims[d] < 0)
				break;
			if (out_dims[d] != 1)
				return false;
		}
		if (cv != NONE) { /* C must broadcast over rows: [N], [1,N] or a scalar */
			const Shape *sc = rw_static_shape(c, cv);
			int64_t ne = sc ? shape_nelem(sc) : -1;
			if (!sc || sc->rank > 2 || (ne != N && ne != 1) ||
			    (sc->rank >= 1 && sc->dims[sc->rank - 1].size != ne))
				return false;
		}
	}
	const char *name = mm->name[0] ? mm->name : "matmul";
	int a2 = a;
	if (rank > 2) {
		int64_t flat[2] = {-1, K};
		a2 = new_reshape(c, place, a, flat, 2, name);
	}
	int gy = rank > 2 ? rw_new_value(c, name, DT_FLOAT) : y;
	Attr at[2];
	int nat = 0;
	if (trans_b)
		at[nat++] = rw_int_attr(c, "transB", 1);
	int in[3] = {a2, b, cv};
	mm = &g->nodes[i];
	int nname = rw_add_node(c, place, "Gemm", in, cv == NONE ? 2 : 3, &gy, 1, at, nat, name);
	if (rank > 2) {
		/* The unflattening Reshape writes y itself; its fresh output value
		 * stays an orphan. */
		new_reshape(c, place, gy, out_dims, rank, name);
		c->pending[c->npending - 1].node.out[0] = y;
	}
	(void)nname;
	rw_kill(c, i);
	return true;
}

/* ---- transposed operands ---------------------------------------------- */

static bool fuse_transpose(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *n = &g->nodes[i];
	if (n->op == OP_Gemm && n->since >= 7) {
		for (int k = 0; k < 2; k++) {
			int w = transposed_2d(c, n->in[k]);
			if (w == NONE)
				continue;
			const char *flag = k ? "transB" : "transA";
			int64_t t = rw_attr_int(n, flag, 0);
			g->values[n->in[k]].nuse--;
			g->values[w].nuse++;
			n->in[k] = w;
			rw_set_attr(c, n, rw_int_attr(c, flag, !t));
			c->stat->fused++;
			return true;
		}
		return false;
	}
	if (n->op == OP_MatMul && n->nin == 2 && n->nout == 1) {
		int w = transposed_2d(c, n->in[1]);
		if (w == NONE)
			return false;
		bool ok = matmul_to_gemm(c, i, w, true, NONE, n->out[0], i);
		if (ok)
			c->stat->fused++;
		return ok;
	}
	return false;
}

/* ---- float16 weights read by the GEMM kernel --------------------------- */

/* A Cast to float32 of a float16 constant (of rank `rank`, or any if -1):
 * the constant, else NONE. */
static int widened_f16(PassCtx *c, int id, int rank)
{
	const Value *v = &c->g->values[id];
	if (v->kind != VAL_TEMP || v->producer == NONE || c->dead[v->producer])
		return NONE;
	const Node *t = &c->g->nodes[v->producer];
	if (t->op != OP_Cast || t->nin != 1 || rw_attr_int(t, "to", 0) != DT_FLOAT)
		return NONE;
	int w = t->in[0];
	if (!rw_is_const(c, w) || c->g->values[w].dtype != DT_FLOAT16 ||
	    (rank >= 0 && c->g->values[w].shape.rank != rank))
		return NONE;
	return w;
}

/* Gather(Cast(W16), ids) -> Cast(Gather(W16, ids)): only the gathered rows
 * are widened, never the table. */
static bool sink_cast_gather(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *n = &g->nodes[i];
	if (n->op != OP_Gather || n->nin != 2 || n->nout != 1)
		return false;
	int w = widened_f16(c, n->in[0], -1);
	if (w == NONE)
		return false;
	const char *name = n->name[0] ? n->name : "gather";
	int rows = rw_new_value(c, name, DT_FLOAT16);
	n = &g->nodes[i];
	int in[2] = {w, n->in[1]}, y = n->out[0];
	const Attr *axis = rw_attr(n, "axis");
	rw_add_node(c, i, "Gather", in, 2, &rows, 1, axis, axis ? 1 : 0, name);
	Attr to = rw_int_attr(c, "to", DT_FLOAT);
	rw_add_node(c, i, "Cast", &rows, 1, &y, 1, &to, 1, name);
	rw_kill(c, i);
	c->stat->fused++;
	return true;
}

/* A 1-D/2-D Conv reading a widened float16 weight reads the float16 bytes
 * (kiln_f32_conv2d_f16w widens a block of output channels at a time). */
static bool fuse_f16_conv(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *n = &g->nodes[i];
	if (n->nin < 2 || n->nout != 1 || !is_f32(c, n->in[0]))
		return false;
	int w = widened_f16(c, n->in[1], -1);
	if (w == NONE || g->values[w].shape.rank < 3 || g->values[w].shape.rank > 4)
		return false;
	const Node *cast = &g->nodes[g->values[n->in[1]].producer];
	g->values[n->in[1]].nuse--;
	g->values[w].nuse++;
	n->in[1] = w;
	note_fused(c, n, cast);
	return true;
}

/* Gemm/MatMul reading a widened float16 weight as B reads the float16 bytes
 * (kiln_f32_gemm_f16b widens while loading): the float32 copy the Cast made
 * in the arena disappears with the Cast. */
static bool fuse_f16_operand(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *n = &g->nodes[i];
	if (n->op == OP_Conv)
		return fuse_f16_conv(c, i);
	if ((n->op != OP_Gemm && n->op != OP_MatMul) || n->nin < 2 || n->nout != 1 ||
	    !is_f32(c, n->in[0]))
		return false;
	int w = widened_f16(c, n->in[1], 2);
	if (w == NONE)
		return false;
	const Node *cast = &g->nodes[g->values[n->in[1]].producer];
	if (n->op == OP_MatMul) {
		if (!matmul_to_gemm(c, i, w, false, NONE, n->out[0], i))
			return false;
		for (int k = c->npending - 1; k >= 0; k--)
			if (c->pending[k].node.op == OP_Gemm) {
				note_fused(c, &c->pending[k].node, cast);
				break;
			}
		return true;
	}
	if (n->since < 7)
		return false;
	g->values[n->in[1]].nuse--;
	g->values[w].nuse++;
	n->in[1] = w;
	note_fused(c, n, cast);
	return true;
}

/* ---- bias and residual Add -------------------------------------------- */

/* Add node j with input x made by `producer`: the other input, or NONE. */
static int other_input(const Node *add, int x)
{
	if (add->op != OP_Add || add->nin != 2)
		return NONE;
	if (add->in[0] == x && add->in[1] != x)
		return add->in[1];
	if (add->in[1] == x && add->in[0] != x)
		return add->in[0];
	return NONE;
}

/* Conv + Add(r) where r has the Conv output's shape in every signature (no
 * broadcasting: the kernel adds it plane by plane) -> Conv with r as a
 * fourth input and fused.residual set. Only before an activation is fused (the
 * activation comes after the sum). r must exist before the Conv runs; the
 * planner keeps it alive until then, as any input, and never places the
 * Conv's output over it (Conv is not elementwise), which the kernel needs:
 * it writes Y before it reads the residual. */
static bool fuse_conv_residual(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *n = &g->nodes[i];
	if (n->nin < 2 || n->nin > 3 || n->nout != 1 || n->fused.act != FACT_NONE ||
	    n->fused.residual || !is_f32(c, n->in[0]))
		return false;
	const Shape *ws = rw_static_shape(c, n->in[1]);
	if (!ws || ws->rank < 3 || ws->rank > 4)
		return false; /* 3-D convolutions have no epilogue yet */
	int x = n->out[0];
	if (g->values[x].kind != VAL_TEMP || rw_pinned(c, x))
		return false;
	int j = rw_sole_user(c, x);
	if (j == NONE)
		return false;
	Node *add = &g->nodes[j];
	int r = other_input(add, x);
	if (r == NONE || !is_f32(c, r) || !is_f32(c, x))
		return false;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *sx = rw_shape_in(c, x, k);
		if (!sx || !rw_same_shape(sx, rw_shape_in(c, r, k)) ||
		    !rw_same_shape(sx, rw_shape_in(c, add->out[0], k)))
			return false;
	}
	const Value *rv = &g->values[r];
	if (rv->kind == VAL_TEMP && (rv->producer == NONE || rv->producer >= i))
		return false;
	int *in = arena_array(c->a, 4, sizeof *in);
	in[0] = n->in[0];
	in[1] = n->in[1];
	in[2] = n->nin > 2 ? n->in[2] : NONE;
	in[3] = r;
	n->in = in;
	n->nin = 4;
	g->values[r].nuse++;
	n->fused.residual = true;
	int y = add->out[0];
	note_fused(c, n, add);
	rw_kill(c, j);
	take_output(c, i, y);
	return true;
}

static bool fuse_add(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *n = &g->nodes[i];
	if (n->op == OP_Conv && c->nsigs > 0)
		return fuse_conv_residual(c, i);
	if ((n->op != OP_MatMul && n->op != OP_Gemm) || n->nout != 1 || c->nsigs == 0)
		return false;
	int x = n->out[0];
	int j = rw_sole_user(c, x);
	if (j == NONE)
		return false;
	Node *add = &g->nodes[j];
	int r = other_input(add, x);
	if (r == NONE || !is_f32(c, r) || !is_f32(c, x))
		return false;
	/* The sum has the product's shape: the addend only broadcasts into it. */
	for (int k = 0; k < c->nsigs; k++)
		if (!rw_same_shape(rw_shape_in(c, x, k), rw_shape_in(c, add->out[0], k)))
			return false;
	/* The addend must exist where the fused node runs. */
	const Value *rv = &g->values[r];
	int at = n->op == OP_MatMul ? j : i;
	if (rv->kind == VAL_TEMP && rv->producer >= at)
		return false;
	int y = add->out[0];
	if (n->op == OP_MatMul) {
		if (!matmul_to_gemm(c, i, n->in[1], false, r, y, j))
			return false;
		note_fused(c, &c->pending[c->npending - 1].node, add);
		rw_kill(c, j);
		return true;
	}
	/* Gemm without C, no epilogue yet: the addend becomes C with beta 1. */
	if ((n->nin > 2 && n->in[2] != NONE) || n->since < 7 || n->fused.act != FACT_NONE)
		return false;
	const Shape *sr = rw_static_shape(c, r);
	if (!sr || sr->rank > 2)
		return false;
	int *in = arena_array(c->a, 3, sizeof *in);
	in[0] = n->in[0];
	in[1] = n->in[1];
	in[2] = r;
	n->in = in;
	n->nin = 3;
	g->values[r].nuse++;
	rw_set_attr(c, n, rw_float_attr(c, "beta", 1.0f));
	note_fused(c, n, add);
	rw_kill(c, j);
	take_output(c, i, y);
	return true;
}

/* ---- BatchNormalization ------------------------------------------------ */

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

static bool is_view(int op)
{
	return op == OP_Reshape || op == OP_Unsqueeze || op == OP_Squeeze || op == OP_Flatten;
}

/* Is value a (not pinned) read by node u and otherwise only by Shape? */
static bool only_shape_besides(PassCtx *c, int a, int u)
{
	if (rw_pinned(c, a))
		return false;
	bool by_u = false;
	for (int i = 0; i < c->g->nnodes; i++) {
		const Node *nd = &c->g->nodes[i];
		for (int k = 0; !c->dead[i] && k < nd->nin; k++)
			if (nd->in[k] == a) {
				if (i == u)
					by_u = true;
				else if (nd->op != OP_Shape)
					return false;
			}
	}
	return by_u;
}

/* Node u, an Unsqueeze or Reshape that only appends axes of size 1 to a
 * [N, C] Gemm output read by nothing else but Shape (PyTorch's BatchNorm1d on a
 * Linear's output, as some exports write it: Gemm, Unsqueeze, BN, Squeeze):
 * the Gemm's node id, else NONE. A BatchNorm after u is per column of the
 * Gemm, so it folds into the Gemm and u produces its output instead. */
static int unit_axes_view(PassCtx *c, int u)
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
	if (!only_shape_besides(c, a, u))
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

static bool fuse_bn(PassCtx *c, int j)
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
	    !dies_with(c, b, p) || (b != NONE && g->values[b].dtype != DT_FLOAT) || !is_f32(c, x))
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
	note_fused(c, pn, bn);
	rw_kill(c, j);
	take_output(c, via != NONE ? via : p, y);
	return true;
}

/* BatchNormalization (node j) whose only reader is an unpadded, ungrouped
 * Conv on a float32 weight that dies with it (DeepJet's branches: BN over
 * the features, then a 1x1 Conv1d): y = s x + t per input channel c, so
 * W'[m, c, taps] = W[m, c, taps] s[c] and b'[m] = b[m] + sum over c and
 * taps of W[m, c, taps] t[c] (in double, then rounded once), and the Conv
 * reads x. Padding would see zeros where BN gives t, so a padded Conv
 * keeps its BatchNorm. Returns the Conv's node id, or NONE. */
static int fuse_bn_into_conv(PassCtx *c, int j)
{
	Graph *g = c->g;
	Node *bn = &g->nodes[j];
	if (!plain_bn(bn))
		return NONE;
	int x = bn->in[0], y = bn->out[0];
	int q = rw_sole_user(c, y);
	if (q == NONE || c->dead[q] || !is_f32(c, x))
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
	note_fused(c, cv, bn);
	rw_kill(c, j);
	return q;
}

/* ---- activation epilogues ---------------------------------------------- */

static bool act_params(PassCtx *c, const Node *n, FusedAct *act, float *alpha, float *beta)
{
	*alpha = *beta = 0;
	switch (n->op) {
	case OP_Relu: *act = FACT_RELU; return true;
	case OP_Sigmoid: *act = FACT_SIGMOID; return true;
	case OP_Tanh: *act = FACT_TANH; return true;
	case OP_Selu:
		*act = FACT_SELU;
		*alpha = rw_attr_float(n, "alpha", 1.67326319217681884765625f);
		*beta = rw_attr_float(n, "gamma", 1.05070102214813232421875f);
		return true;
	case OP_Elu: *act = FACT_ELU; *alpha = rw_attr_float(n, "alpha", 1.0f); return true;
	case OP_LeakyRelu:
		*act = FACT_LEAKY_RELU;
		*alpha = rw_attr_float(n, "alpha", 0.01f);
		return true;
	case OP_HardSigmoid:
		*act = FACT_HARD_SIGMOID;
		*alpha = rw_attr_float(n, "alpha", 0.2f);
		*beta = rw_attr_float(n, "beta", 0.5f);
		return true;
	case OP_Clip: {
		*act = FACT_CLIP;
		*alpha = -INFINITY;
		*beta = INFINITY;
		if (n->since < 11) {
			*alpha = rw_attr_float(n, "min", -INFINITY);
			*beta = rw_attr_float(n, "max", INFINITY);
			return true;
		}
		for (int k = 1; k < 3; k++) {
			if (k >= n->nin || n->in[k] == NONE)
				continue;
			int64_t ne;
			double *v = rw_const_f64(c, n->in[k], &ne, 1);
			if (!v || ne != 1)
				return false;
			*(k == 1 ? alpha : beta) = (float)v[0];
		}
		return true;
	}
	default:
		return false;
	}
}

/* The node whose epilogue can apply an elementwise function to x: x's
 * producer if it is a Gemm or a 1-D/2-D Conv without one, or such a Gemm
 * seen through a Reshape (an elementwise function commutes with it). x must
 * be read by `readers` nodes only (the function's own). *last is the node
 * that writes x (the host or the Reshape). NONE if there is none. */
static int epilogue_host(PassCtx *c, int x, int *last)
{
	Graph *g = c->g;
	const Value *xv = &g->values[x];
	if (xv->kind != VAL_TEMP || xv->producer == NONE || rw_pinned(c, x) || !is_f32(c, x))
		return NONE;
	int p = xv->producer;
	*last = p;
	/* Views between a Gemm and the activation (Reshape; Unsqueeze and
	 * Squeeze left by a BatchNorm folded through them): it is elementwise. */
	for (int hops = 0; is_view(g->nodes[p].op) && g->nodes[p].nout == 1; hops++) {
		int in = g->nodes[p].in[0];
		const Value *iv = &g->values[in];
		if (hops == 3 || iv->kind != VAL_TEMP || iv->producer == NONE || !only_shape_besides(c, in, p))
			return NONE;
		p = iv->producer;
		if (!is_view(g->nodes[p].op) && g->nodes[p].op != OP_Gemm)
			return NONE;
	}
	Node *pn = &g->nodes[p];
	if ((pn->op != OP_Conv && pn->op != OP_Gemm) || pn->nout != 1 || pn->fused.act != FACT_NONE)
		return NONE;
	if (pn->op == OP_Conv) {
		const Shape *ws = rw_static_shape(c, pn->in[1]);
		if (!ws || ws->rank > 4)
			return NONE;  /* 3-D convolutions have no epilogue yet */
	}
	return p;
}

/* The activation the node's epilogue applies, resolved once (its kind and
 * parameters) into the node's Fused record, which the emitters read. */
static void set_act(Node *pn, FusedAct act, float alpha, float beta)
{
	pn->fused.act = act;
	pn->fused.alpha = alpha;
	pn->fused.beta = beta;
}

static bool fuse_act(PassCtx *c, int j)
{
	Graph *g = c->g;
	Node *an = &g->nodes[j];
	FusedAct act;
	float alpha, beta;
	if (an->nin < 1 || an->nout != 1 || !act_params(c, an, &act, &alpha, &beta))
		return false;
	int x = an->in[0], last;
	if (rw_sole_user(c, x) != j)
		return false;
	int p = epilogue_host(c, x, &last);
	const Value *xv = &g->values[x];
	if (p == NONE && xv->kind == VAL_TEMP && xv->producer != NONE &&
	    g->nodes[xv->producer].op == OP_MatMul && g->nodes[xv->producer].nout == 1) {
		/* A MatMul becomes a Gemm (with Reshapes if A has more axes) that
		 * writes the activation's output itself. */
		int mm = xv->producer, y = an->out[0];
		if (!matmul_to_gemm(c, mm, g->nodes[mm].in[1], false, NONE, y, j))
			return false;
		for (int k = c->npending - 1; k >= 0; k--)
			if (c->pending[k].node.op == OP_Gemm) {
				Node *gn = &c->pending[k].node;
				set_act(gn, act, alpha, beta);
				note_fused(c, gn, &g->nodes[j]);
				break;
			}
		rw_kill(c, j);
		return true;
	}
	if (p == NONE)
		return false;
	Node *pn = &g->nodes[p];
	set_act(pn, act, alpha, beta);
	int y = an->out[0];
	note_fused(c, pn, an);
	rw_kill(c, j);
	take_output(c, last, y);
	return true;
}

/* ---- GELU as exporters write it ---------------------------------------- */

/* Is value id a constant scalar equal to v (within float rounding)? */
static bool is_scalar(PassCtx *c, int id, double v)
{
	int64_t n;
	double *x = rw_const_f64(c, id, &n, 1);
	return x && n == 1 && fabs(x[0] - v) <= 1e-6 * fabs(v);
}

/* The node reading id alone, if it is op; NONE otherwise. */
static int only_reader(PassCtx *c, int id, int op)
{
	int u = rw_sole_user(c, id);
	return u != NONE && c->g->nodes[u].op == op && c->g->nodes[u].nout == 1 ? u : NONE;
}

/* x * 0.5 * (1 + erf(x / sqrt 2)), from Div(x, sqrt 2) or Mul(x, 1/sqrt 2):
 * Erf -> Add 1 -> Mul x -> Mul 0.5 (or Mul 0.5 first). */
static bool fuse_gelu(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *d = &g->nodes[i];
	if ((d->op != OP_Div && d->op != OP_Mul) || d->nin != 2 || d->nout != 1)
		return false;
	int x = d->in[0];
	if (!(d->op == OP_Div ? is_scalar(c, d->in[1], 1.4142135623730951)
	                      : is_scalar(c, d->in[1], 0.7071067811865476)))
		return false;
	int e = only_reader(c, d->out[0], OP_Erf);
	if (e == NONE)
		return false;
	int a = only_reader(c, g->nodes[e].out[0], OP_Add);
	if (a == NONE || !(is_scalar(c, g->nodes[a].in[0], 1) || is_scalar(c, g->nodes[a].in[1], 1)))
		return false;
	int m1 = only_reader(c, g->nodes[a].out[0], OP_Mul);
	if (m1 == NONE)
		return false;
	const Node *mn = &g->nodes[m1];
	int other = mn->in[0] == g->nodes[a].out[0] ? mn->in[1] : mn->in[0];
	int last_mul, xhalf = NONE;
	if (other == x) { /* Mul(x, 1 + erf) then Mul(., 0.5) */
		last_mul = only_reader(c, mn->out[0], OP_Mul);
		if (last_mul == NONE)
			return false;
		const Node *h = &g->nodes[last_mul];
		if (!is_scalar(c, h->in[h->in[0] == mn->out[0] ? 1 : 0], 0.5))
			return false;
	} else { /* Mul(x, 0.5) then Mul(that, 1 + erf) */
		const Value *ov = &g->values[other];
		if (ov->kind != VAL_TEMP || ov->producer == NONE || rw_sole_user(c, other) != m1)
			return false;
		const Node *h = &g->nodes[ov->producer];
		if (h->op != OP_Mul || h->nin != 2 || c->dead[ov->producer] ||
		    !((h->in[0] == x && is_scalar(c, h->in[1], 0.5)) ||
		      (h->in[1] == x && is_scalar(c, h->in[0], 0.5))))
			return false;
		xhalf = ov->producer;
		last_mul = m1;
	}
	/* x is read by exactly the pattern: Div and the Mul by x (or by 0.5). */
	if (g->values[x].nuse != 2)
		return false;
	int last;
	int p = epilogue_host(c, x, &last);
	if (p == NONE)
		return false;
	Node *pn = &g->nodes[p];
	set_act(pn, FACT_GELU, 0, 0);
	int y = g->nodes[last_mul].out[0];
	/* The five nodes: Div, Erf, Add, Mul, and the other Mul (by 0.5). */
	int members[5] = {i, e, a, m1, xhalf != NONE ? xhalf : last_mul};
	for (int k = 0; k < 5; k++) {
		note_fused(c, pn, &g->nodes[members[k]]);
		rw_kill(c, members[k]);
	}
	take_output(c, last, y);
	return true;
}

/* ---- LayerNorm as exporters write it --------------------------------- */

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
static bool fuse_layernorm(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *rm = &g->nodes[i];
	if (rm->op != OP_ReduceMean || rm->nout != 1 || rm->nin < 1 || c->nsigs == 0)
		return false;
	int x = rm->in[0];
	if (!is_f32(c, x) || !mean_last(c, rm, x))
		return false;
	int sub = only_reader(c, rm->out[0], OP_Sub);
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
		if (n->op == OP_Pow && n->nin == 2 && n->in[0] == d && is_scalar(c, n->in[1], 2))
			pw = k;
		else if (n->op == OP_Div && n->nin == 2 && n->in[0] == d)
			dv = k;
	}
	if (pw == NONE || dv == NONE)
		return false;
	int rv = only_reader(c, g->nodes[pw].out[0], OP_ReduceMean);
	if (rv == NONE || !mean_last(c, &g->nodes[rv], g->nodes[pw].out[0]))
		return false;
	int ad = only_reader(c, g->nodes[rv].out[0], OP_Add);
	if (ad == NONE)
		return false;
	const Node *an = &g->nodes[ad];
	int eps_id = an->in[0] == g->nodes[rv].out[0] ? an->in[1] : an->in[0];
	int64_t ne;
	double *eps = rw_const_f64(c, eps_id, &ne, 1);
	if (!eps || ne != 1)
		return false;
	int sq = only_reader(c, an->out[0], OP_Sqrt);
	if (sq == NONE || only_reader(c, g->nodes[sq].out[0], OP_Div) != dv ||
	    g->nodes[dv].in[1] != g->nodes[sq].out[0])
		return false;
	int mu = only_reader(c, g->nodes[dv].out[0], OP_Mul);
	if (mu == NONE)
		return false;
	const Node *mn = &g->nodes[mu];
	int gamma = mn->in[0] == g->nodes[dv].out[0] ? mn->in[1] : mn->in[0];
	int ab = only_reader(c, mn->out[0], OP_Add);
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

int pass_fuse(PassCtx *c)
{
	Graph *g = c->g;
	int changes = 0;
	int nnodes = g->nnodes;
	/* One rewrite per node per iteration: fusions that touch the same nodes
	 * wait for the next iteration, which sees committed ids and fresh shapes. */
	bool *touched = arena_array(c->a, (size_t)(nnodes ? nnodes : 1), sizeof *touched);
	for (int i = 0; i < nnodes; i++) {
		if (c->dead[i] || touched[i])
			continue;
		int p = NONE;
		Node *n = &g->nodes[i];
		if (n->nin > 0 && n->in[0] != NONE && g->values[n->in[0]].kind == VAL_TEMP)
			p = g->values[n->in[0]].producer;
		if (p != NONE && touched[p])
			continue;
		/* BatchNorm through a view of a Gemm rewrites the Gemm too. */
		int q = n->op == OP_BatchNormalization && p != NONE ? unit_axes_view(c, p) : NONE;
		if (q != NONE && touched[q])
			continue;
		bool did = fuse_f16_operand(c, i) || sink_cast_gather(c, i) || fuse_transpose(c, i) || fuse_bn(c, i) || fuse_act(c, i) || fuse_gelu(c, i) ||
		           fuse_layernorm(c, i);
		if (!did && n->op == OP_BatchNormalization && n->nout >= 1 && n->out[0] != NONE) {
			int user = rw_sole_user(c, n->out[0]);
			if (user != NONE && !touched[user] && fuse_bn_into_conv(c, i) == user)
				did = touched[user] = true;
		}
		if (!did && !touched[i]) {
			int user = n->nout == 1 && n->out[0] != NONE ? rw_sole_user(c, n->out[0]) : NONE;
			if (user == NONE || !touched[user])
				did = fuse_add(c, i);
			if (did && user != NONE)
				touched[user] = true;
		}
		if (did) {
			touched[i] = true;
			if (p != NONE)
				touched[p] = true;
			if (q != NONE)
				touched[q] = true;
			changes++;
		}
	}
	return changes;
}
