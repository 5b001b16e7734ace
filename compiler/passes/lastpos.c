/*
 * passes/lastpos.c - a pick of one position along an axis (a Gather with one
 * constant index, or a Slice one position long) moves up through the ops
 * that compute each position of that axis from the same position of their
 * inputs, so that they compute one position instead of all of them.
 *
 * Decoder-only language models read the logits of the last position only
 * (`LayerNorm(x)[:, -1, :] @ E^T`), yet their export runs every position
 * through the last block's MLP, projection and attention output. Here the
 * pick ends up on the last block's inputs (the residual stream, the query
 * rows of the attention, the mask rows), and everything after them runs
 * on one row per sample.
 *
 * The root: Gather(Y, i, axis = a) with i a constant int32/int64 scalar or
 * one-element vector, -L <= i < L; or Slice(Y, starts, ends[, axes[,
 * steps]]) with constant one-element starts/ends/axes, step 1, whose range
 * clamped to L is exactly one position. L, Y's extent on axis a, must be
 * the same in every signature and > 1. The region: walking the nodes
 * backwards from the root, a node joins when its output is wanted at one
 * axis by every reader it has (all readers are region nodes, or the root;
 * not a graph output, not read by a subgraph), the output's extent on that
 * axis is L in every signature, and its op has a rule below. Each input
 * the rule picks is then wanted at the rule's axis; an input wanted at two
 * different axes, or also read whole, stays whole and gets a pick (a Slice)
 * of its own. Rules, for an output axis a of rank r (every shape checked in
 * every signature; "as broadcast" = input k of rank rk is picked at
 * a - (r - rk) if that axis exists with extent L, left whole if it is
 * missing or 1, and the node stops the region otherwise):
 *   - elementwise ops (unary, binary, variadic, Where, Clip, PRelu, Cast):
 *     every input as broadcast: out[.., p, ..] reads only inputs at p (or
 *     an operand constant along a);
 *   - Softmax, LogSoftmax, Hardmax: opset >= 13, a != axis; before 13,
 *     a < axis (the 2-D coercion normalizes over [axis, r));
 *   - LayerNormalization: a < axis (it normalizes over [axis, r)); every
 *     input as broadcast; the mean/inv-std outputs unread;
 *   - ReduceMean/Sum/Max/Min/Prod/SumSquare/L1/L2 with constant, non-empty
 *     axes not containing the input axis b that a comes from (b = a with
 *     keepdims, else the a-th kept axis);
 *   - MatMul, both operands of rank >= 2: a = r - 2 (the rows) picks A's
 *     rows (rank(A) - 2) and leaves B whole (C[i, j] reads row i of A);
 *     a < r - 2 (a batch axis) picks both as broadcast; a = r - 1 stops;
 *   - Gemm: a = 0 picks A's rows (axis 1 if transA), B whole, C as
 *     broadcast;
 *   - Transpose: the input axis perm[a];
 *   - Reshape (allowzero 0): only where axis a is axis a of the input with
 *     the same extent L and the same product of the dims before it, in
 *     every signature; then out[.., p, ..] is in[.., p, ..] in row-major
 *     order. The target shape gets 1 at a: a constant shape is copied with
 *     1 there (a 0 or -1 elsewhere means the same as before: the other dims
 *     and the ratio of element counts are unchanged); a shape made by
 *     Concat of one-element pieces (Shape -> Gather -> Unsqueeze, as
 *     PyTorch exports dynamic shapes) gets a new Concat with the piece at
 *     a replaced by the constant 1. Anything else stops the region.
 * Everything else stops it: attention and Softmax over the axis, Conv,
 * reductions over it, Concat, Gather, Split, shape ops, any node carrying
 * kiln.* attributes (already fused) or outside ai.onnx.
 *
 * The rewrite: each region node is replaced by a copy reading one position
 * (the picked inputs: the copy of their producer, or a new Slice of the
 * whole input with the root's starts/ends on the input's axis); the root
 * then reads the one-position value at index 0 (Gather) or [0, 1) (Slice).
 * Every value keeps its meaning at that one position, so the graph output
 * is unchanged bit for bit: each copy computes the same elements in the
 * same order as the original did for that position. Only non-batch work
 * moves: the picked axis has the same extent in every signature, the new
 * Slices use the root's own (batch-free) starts and ends, and the Reshape
 * targets keep their batch pieces, so batchdep.c proves the rewritten
 * graph at its own probe sizes as it proved the original. The walk is in
 * node order: deterministic. Weights are never touched.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rewrite.h"

enum { AX_UNSET = -1, AX_CONFLICT = -2, AX_WHOLE = -1 };

typedef struct Move {
	PassCtx *c;
	int root;
	int64_t len;           /* extent of the picked axis, every signature */
	int64_t start, end;    /* the position, as Slice starts/ends on len */
	int *ax;               /* per value: AX_UNSET, AX_CONFLICT or the wanted axis */
	int *picks;            /* per value: region inputs reading it picked */
	int **slot;            /* per node in the region: per input, axis or AX_WHOLE */
	int *newv;             /* per value made by the region: its one-position copy */
	int *cut;              /* per value * KILN_MAX_RANK: its boundary Slice, or NONE */
	int vstart, vend;      /* the boundary Slices' starts and ends */
	int vaxis[KILN_MAX_RANK];
} Move;

/* ---- shapes in every signature --------------------------------------- */

static int rank_all(PassCtx *c, int id)
{
	int r = -1;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *s = rw_shape_in(c, id, k);
		if (!s || (k > 0 && s->rank != r))
			return -1;
		r = s->rank;
	}
	return r;
}

/* The extent of axis ax of id if it is the same in every signature, else -1. */
static int64_t dim_all(PassCtx *c, int id, int ax)
{
	int64_t d = -1;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *s = rw_shape_in(c, id, k);
		if (!s || ax < 0 || ax >= s->rank || (k > 0 && s->dims[ax].size != d))
			return -1;
		d = s->dims[ax].size;
	}
	return d;
}

static int norm_axis(int64_t ax, int r)
{
	if (ax < 0)
		ax += r;
	return ax >= 0 && ax < r ? (int)ax : NONE;
}

/* One constant integer element (int32/int64, rank 0 or [1]). */
static bool const_one(PassCtx *c, int id, int64_t *v, int *rank)
{
	if (!rw_is_const(c, id))
		return false;
	const Value *val = &c->g->values[id];
	if (val->weight->nelem != 1 || val->shape.rank > 1)
		return false;
	if (val->dtype == DT_INT64)
		memcpy(v, val->weight->bytes, 8);
	else if (val->dtype == DT_INT32) {
		int32_t x;
		memcpy(&x, val->weight->bytes, 4);
		*v = x;
	} else
		return false;
	if (rank)
		*rank = val->shape.rank;
	return true;
}

/* ---- the rules --------------------------------------------------------- */

/* Input k of a node with output rank r and output axis a, as broadcast. */
static bool as_broadcast(Move *m, const Node *n, int k, int a, int r, int *slot)
{
	slot[k] = AX_WHOLE;
	if (n->in[k] == NONE)
		return true;
	int rk = rank_all(m->c, n->in[k]);
	if (rk < 0 || rk > r)
		return false;
	int ak = a - (r - rk);
	if (ak < 0)
		return true;
	int64_t d = dim_all(m->c, n->in[k], ak);
	if (d == 1)
		return true;
	if (d != m->len)
		return false;
	slot[k] = ak;
	return true;
}

static bool elementwise(int op)
{
	switch (op) {
	case OP_Add: case OP_Sub: case OP_Mul: case OP_Div: case OP_Pow: case OP_Max: case OP_Min:
	case OP_Sum: case OP_Mean: case OP_Where: case OP_PRelu: case OP_Mod: case OP_Equal:
	case OP_Less: case OP_Greater: case OP_LessOrEqual: case OP_GreaterOrEqual: case OP_And:
	case OP_Or: case OP_Xor: case OP_Not: case OP_Abs: case OP_Neg: case OP_Relu:
	case OP_LeakyRelu: case OP_Elu: case OP_Selu: case OP_Celu: case OP_Sigmoid:
	case OP_HardSigmoid: case OP_HardSwish: case OP_Tanh: case OP_Erf: case OP_Exp: case OP_Log:
	case OP_Sqrt: case OP_Reciprocal: case OP_Softplus: case OP_Softsign: case OP_Gelu:
	case OP_Mish: case OP_ThresholdedRelu: case OP_Clip: case OP_Cast: case OP_Identity:
	case OP_Floor: case OP_Ceil: case OP_Round: case OP_Sign: case OP_Sin: case OP_Cos:
	case OP_IsNaN: case OP_IsInf: case OP_Shrink:
		return true;
	default:
		return false;
	}
}

static bool reduce_op(int op)
{
	switch (op) {
	case OP_ReduceMean: case OP_ReduceSum: case OP_ReduceMax: case OP_ReduceMin:
	case OP_ReduceProd: case OP_ReduceSumSquare: case OP_ReduceL1: case OP_ReduceL2:
		return true;
	default:
		return false;
	}
}

/* The reduced axes (normalized to rank rin) into red[]; false if unknown or empty. */
static bool reduced_axes(Move *m, const Node *n, int rin, bool red[KILN_MAX_RANK])
{
	memset(red, 0, KILN_MAX_RANK * sizeof *red);
	const Attr *at = rw_attr(n, "axes");
	int64_t buf[KILN_MAX_RANK];
	const int64_t *axes = NULL;
	int nax = 0;
	if (at) {
		if (at->type != AT_INTS || n->nin > 1)
			return false;
		axes = at->ints;
		nax = at->n;
	} else if (n->nin > 1 && n->in[1] != NONE) {
		int64_t cnt = 0;
		double *v = rw_const_f64(m->c, n->in[1], &cnt, KILN_MAX_RANK);
		if (!v || cnt < 1 || cnt > KILN_MAX_RANK)
			return false;
		for (int64_t k = 0; k < cnt; k++)
			buf[k] = (int64_t)v[k];
		axes = buf;
		nax = (int)cnt;
	}
	if (nax == 0)
		return false;  /* all axes, or none with noop_with_empty_axes */
	for (int k = 0; k < nax; k++) {
		int ax = norm_axis(axes[k], rin);
		if (ax == NONE)
			return false;
		red[ax] = true;
	}
	return true;
}

/* Reshape's rule: is axis a of the output axis a of the input, with the
 * same extent and the same number of elements before it? */
static bool reshape_keeps(Move *m, const Node *n, int a)
{
	PassCtx *c = m->c;
	if (rw_attr_int(n, "allowzero", 0) != 0)
		return false;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *in = rw_shape_in(c, n->in[0], k), *out = rw_shape_in(c, n->out[0], k);
		if (!in || !out || a >= in->rank || in->dims[a].size != out->dims[a].size)
			return false;
		int64_t pi = 1, po = 1;
		for (int d = 0; d < a; d++) {
			pi *= in->dims[d].size;
			po *= out->dims[d].size;
		}
		if (pi != po)
			return false;
	}
	return true;
}

/* Reshape's new target: the old one with 1 at position a. With make false
 * only says whether it can be built; with make true builds it (new nodes
 * before node `before`) and returns its value. */
static int reshape_target(Move *m, const Node *n, int a, bool make, int before)
{
	PassCtx *c = m->c;
	Graph *g = c->g;
	int t = n->in[1];
	const Value *tv = &g->values[t];
	if (rw_is_const(c, t)) {
		if (tv->dtype != DT_INT64 || tv->shape.rank != 1 || a >= tv->weight->nelem)
			return NONE;
		if (!make)
			return t;
		int64_t *v = arena_array(c->a, (size_t)tv->weight->nelem, sizeof *v);
		memcpy(v, tv->weight->bytes, (size_t)tv->weight->nelem * sizeof *v);
		v[a] = 1;
		return rw_new_i64(c, "lastpos_shape", v, (int)tv->weight->nelem);
	}
	if (tv->kind != VAL_TEMP || tv->producer == NONE || c->dead[tv->producer])
		return NONE;
	const Node *cat = &g->nodes[tv->producer];
	if (cat->op != OP_Concat || cat->nout != 1 || rw_attr_int(cat, "axis", 0) != 0 ||
	    rw_dtype(c, t) != DT_INT64)
		return NONE;
	int64_t at = 0;
	for (int k = 0; k < cat->nin; k++) {
		int piece = cat->in[k];
		if (piece == NONE || rank_all(c, piece) != 1)
			return NONE;
		int64_t len = dim_all(c, piece, 0);
		if (len < 0)
			return NONE;
		if (a < at || a >= at + len) {
			at += len;
			continue;
		}
		if (len != 1 && !rw_is_const(c, piece))
			return NONE;
		if (!make)
			return t;
		int64_t *v = arena_array(c->a, (size_t)len, sizeof *v);
		if (len == 1)
			v[0] = 1;
		else {
			memcpy(v, g->values[piece].weight->bytes, (size_t)len * sizeof *v);
			v[a - at] = 1;
		}
		int *in = arena_array(c->a, (size_t)cat->nin, sizeof *in);
		memcpy(in, cat->in, (size_t)cat->nin * sizeof *in);
		in[k] = rw_new_i64(c, "lastpos_one", v, (int)len);
		int out = rw_new_value(c, g->values[t].name, DT_INT64);
		int pi = rw_add_node(c, before, "Concat", in, cat->nin, &out, 1, cat->attrs, cat->nattrs,
		                     cat->name);
		c->pending[pi].node.opset = cat->opset;
		c->pending[pi].node.since = cat->since;
		return out;
	}
	return NONE;
}

/* Fill slot[] (per input: the axis it is picked at, or AX_WHOLE) for node n
 * whose output is wanted at axis a; false if n does not compute each
 * position of a from that position alone. */
static bool rule(Move *m, const Node *n, int a, int *slot)
{
	PassCtx *c = m->c;
	int r = rank_all(c, n->out[0]);
	if (r < 1 || a >= r)
		return false;
	for (int k = 0; k < n->nin; k++)
		slot[k] = AX_WHOLE;
	if (elementwise(n->op)) {
		for (int k = 0; k < n->nin; k++)
			if (!as_broadcast(m, n, k, a, r, slot))
				return false;
		return true;
	}
	switch (n->op) {
	case OP_Softmax: case OP_LogSoftmax: case OP_Hardmax: {
		int ax = norm_axis(rw_attr_int(n, "axis", n->since >= 13 ? -1 : 1), r);
		if (ax == NONE || (n->since >= 13 ? a == ax : a >= ax))
			return false;
		slot[0] = a;
		return true;
	}
	case OP_LayerNormalization: {
		int ax = norm_axis(rw_attr_int(n, "axis", -1), r);
		if (ax == NONE || a >= ax)
			return false;
		for (int k = 0; k < n->nin; k++)
			if (!as_broadcast(m, n, k, a, r, slot))
				return false;
		return true;
	}
	case OP_MatMul: {
		if (n->nin != 2 || rank_all(c, n->in[0]) < 2 || rank_all(c, n->in[1]) < 2)
			return false;
		if (a == r - 1)
			return false;
		if (a == r - 2) {
			slot[0] = rank_all(c, n->in[0]) - 2;
			return dim_all(c, n->in[0], slot[0]) == m->len;
		}
		return as_broadcast(m, n, 0, a, r, slot) && as_broadcast(m, n, 1, a, r, slot);
	}
	case OP_Gemm: {
		if (a != 0 || r != 2 || rank_all(c, n->in[0]) != 2)
			return false;
		slot[0] = rw_attr_int(n, "transA", 0) ? 1 : 0;
		return dim_all(c, n->in[0], slot[0]) == m->len &&
		       (n->nin < 3 || as_broadcast(m, n, 2, a, r, slot));
	}
	case OP_Transpose: {
		const Attr *p = rw_attr(n, "perm");
		if (p && (p->type != AT_INTS || p->n != r))
			return false;
		int64_t ax = p ? p->ints[a] : r - 1 - a;
		if (ax < 0 || ax >= r)
			return false;
		slot[0] = (int)ax;
		return true;
	}
	case OP_Reshape:
		if (n->nin != 2 || !reshape_keeps(m, n, a) || reshape_target(m, n, a, false, 0) == NONE)
			return false;
		slot[0] = a;
		return true;
	default:
		break;
	}
	if (reduce_op(n->op)) {
		int rin = rank_all(c, n->in[0]);
		bool red[KILN_MAX_RANK];
		if (rin < 1 || !reduced_axes(m, n, rin, red))
			return false;
		int b = a;
		if (!rw_attr_int(n, "keepdims", 1))
			for (b = 0; b < rin; b++)
				if (!red[b] && a-- == 0)
					break;
		if (b >= rin || red[b])
			return false;
		slot[0] = b;
		return true;
	}
	return false;
}

/* ---- the region -------------------------------------------------------- */

static bool fused(const Node *n)
{
	return n->domain_id == DOMAIN_KILN || n->fused.members || n->fused.act != FACT_NONE ||
	       n->fused.residual;
}

/* Does node i compute its output (wanted at axis ax[out]) position by
 * position, with every reader of the output in the region? */
static bool joins(Move *m, int i, int *slot)
{
	PassCtx *c = m->c;
	const Node *n = &c->g->nodes[i];
	int o = n->out[0];
	const Value *ov = &c->g->values[o];
	if (n->domain_id != DOMAIN_ONNX || fused(n) || ov->kind != VAL_TEMP || rw_pinned(c, o) ||
	    ov->nuse != m->picks[o] || dim_all(c, o, m->ax[o]) != m->len)
		return false;
	for (int k = 1; k < n->nout; k++)
		if (n->out[k] != NONE && (rw_pinned(c, n->out[k]) || c->g->values[n->out[k]].nuse > 0))
			return false;
	return rule(m, n, m->ax[o], slot);
}

static void want(Move *m, int id, int ax)
{
	if (m->ax[id] == AX_UNSET)
		m->ax[id] = ax;
	else if (m->ax[id] != ax)
		m->ax[id] = AX_CONFLICT;
	m->picks[id]++;
}

/* The root's position; false if it is not a pick of one position. */
static bool root_pick(Move *m, const Node *n, int *axis)
{
	PassCtx *c = m->c;
	if (n->domain_id != DOMAIN_ONNX || fused(n) || n->nin < 2 || n->nout != 1 || n->in[0] == NONE)
		return false;
	int y = n->in[0];
	int r = rank_all(c, y);
	if (r < 1)
		return false;
	int64_t v;
	if (n->op == OP_Gather) {
		int a = norm_axis(rw_attr_int(n, "axis", 0), r);
		if (a == NONE || !const_one(c, n->in[1], &v, NULL))
			return false;
		m->len = dim_all(c, y, a);
		if (m->len <= 1 || v < -m->len || v >= m->len)
			return false;
		m->start = v;
		m->end = v == -1 ? INT64_MAX : v + 1;
		*axis = a;
	} else if (n->op == OP_Slice && n->since >= 10 && n->nin >= 3) {
		int64_t s, e, ax = 0, step = 1;
		if (!const_one(c, n->in[1], &s, NULL) || !const_one(c, n->in[2], &e, NULL) ||
		    (n->nin > 3 && n->in[3] != NONE && !const_one(c, n->in[3], &ax, NULL)) ||
		    (n->nin > 4 && n->in[4] != NONE && !const_one(c, n->in[4], &step, NULL)) || step != 1)
			return false;
		int a = norm_axis(ax, r);
		if (a == NONE)
			return false;
		m->len = dim_all(c, y, a);
		if (m->len <= 1)
			return false;
		int64_t L = m->len, s0 = s < 0 ? s + L : s, e0 = e < 0 ? e + L : e;
		s0 = s0 < 0 ? 0 : s0 > L ? L : s0;
		e0 = e0 < 0 ? 0 : e0 > L ? L : e0;
		if (e0 - s0 != 1)
			return false;
		m->start = s;
		m->end = e;
		*axis = a;
	} else
		return false;
	return m->len > 1;
}

/* ---- the rewrite ------------------------------------------------------- */

/* Value id at one position along axis ax, for a node placed before `before`. */
static int one_position(Move *m, int id, int ax, int before)
{
	PassCtx *c = m->c;
	Graph *g = c->g;
	if (m->newv[id] != NONE) {  /* made by the region (its producer is dead by now) */
		KILN_ASSERT(m->ax[id] == ax);
		return m->newv[id];
	}
	int *cut = &m->cut[(size_t)id * KILN_MAX_RANK + (size_t)ax];
	if (*cut != NONE)
		return *cut;
	if (m->vstart == NONE) {
		m->vstart = rw_new_i64(c, "lastpos_start", &m->start, 1);
		m->vend = rw_new_i64(c, "lastpos_end", &m->end, 1);
	}
	if (m->vaxis[ax] == NONE) {
		int64_t a = ax;
		m->vaxis[ax] = rw_new_i64(c, "lastpos_axis", &a, 1);
	}
	int in[4] = {id, m->vstart, m->vend, m->vaxis[ax]};
	*cut = rw_new_value(c, g->values[id].name, g->values[id].dtype);
	rw_add_node(c, before, "Slice", in, 4, cut, 1, NULL, 0, g->nodes[m->root].name);
	return *cut;
}

static void rewrite(Move *m, int axis)
{
	PassCtx *c = m->c;
	Graph *g = c->g;
	m->vstart = m->vend = NONE;
	for (int k = 0; k < KILN_MAX_RANK; k++)
		m->vaxis[k] = NONE;
	for (int i = 0; i < m->root; i++) {
		if (!m->slot[i])
			continue;
		Node *n = &g->nodes[i];
		int *in = arena_array(c->a, (size_t)(n->nin ? n->nin : 1), sizeof *in);
		for (int k = 0; k < n->nin; k++) {
			in[k] = n->in[k];
			if (n->op == OP_Reshape && k == 1)
				in[k] = reshape_target(m, n, m->ax[n->out[0]], true, i);
			else if (m->slot[i][k] != AX_WHOLE)
				in[k] = one_position(m, n->in[k], m->slot[i][k], i);
		}
		int o = n->out[0];
		m->newv[o] = rw_new_value(c, g->values[o].name, g->values[o].dtype);
		int pi = rw_add_node(c, i, n->op_type, in, n->nin, &m->newv[o], 1, n->attrs, n->nattrs,
		                     n->name);
		c->pending[pi].node.opset = n->opset;
		c->pending[pi].node.since = n->since;
		rw_kill(c, i);
		c->stat->removed++;
	}
	Node *root = &g->nodes[m->root];
	int y = root->in[0];
	int64_t zero = 0, one = 1, a = axis;
	int *in = arena_array(c->a, 4, sizeof *in);
	int nin;
	in[0] = m->newv[y];
	if (root->op == OP_Gather) {
		Shape s = g->values[root->in[1]].shape;
		int64_t *z = arena_array(c->a, 1, sizeof *z);
		in[1] = rw_new_const(c, "lastpos_index", DT_INT64, &s, z);
		nin = 2;
	} else {
		in[1] = rw_new_i64(c, "lastpos_start", &zero, 1);
		in[2] = rw_new_i64(c, "lastpos_end", &one, 1);
		in[3] = rw_new_i64(c, "lastpos_axis", &a, 1);
		nin = 4;
	}
	for (int k = 0; k < root->nin; k++)
		if (root->in[k] != NONE)
			g->values[root->in[k]].nuse--;
	for (int k = 0; k < nin; k++)
		g->values[in[k]].nuse++;
	root->in = in;
	root->nin = nin;
}

/* Could the root's input be computed at one position at all? (Cheap: most
 * Gathers with a constant index read a Shape.) */
static bool worth_a_walk(PassCtx *c, int y)
{
	const Value *v = &c->g->values[y];
	if (v->kind != VAL_TEMP || v->producer == NONE || c->dead[v->producer] || v->nuse != 1 ||
	    rw_pinned(c, y))
		return false;
	int op = c->g->nodes[v->producer].op;
	return elementwise(op) || reduce_op(op) || op == OP_Softmax || op == OP_LogSoftmax ||
	       op == OP_Hardmax || op == OP_LayerNormalization || op == OP_MatMul || op == OP_Gemm ||
	       op == OP_Transpose || op == OP_Reshape;
}

/* The walk from one root. m->ax, m->picks and m->slot come in reset and
 * are reset again on the way out (only what the walk touched), so that a
 * graph with many Gathers costs one pass over each one's region. */
static bool move_one(Move *m, int root, int *scratch)
{
	PassCtx *c = m->c;
	Graph *g = c->g;
	const Node *rn = &g->nodes[root];
	int axis;
	m->root = root;
	if (rn->opset < 13 || !worth_a_walk(c, rn->in[0]) || !root_pick(m, rn, &axis))
		return false;
	int y = rn->in[0];
	want(m, y, axis);
	int lowest = g->values[y].producer, nreg = 0;
	for (int i = root - 1; i >= 0 && i >= lowest; i--) {
		const Node *n = &g->nodes[i];
		if (c->dead[i] || n->nout < 1 || n->out[0] == NONE || m->ax[n->out[0]] < 0 ||
		    !joins(m, i, scratch))
			continue;
		m->slot[i] = arena_array(c->a, (size_t)(n->nin ? n->nin : 1), sizeof *m->slot[i]);
		memcpy(m->slot[i], scratch, (size_t)n->nin * sizeof *scratch);
		nreg++;
		for (int k = 0; k < n->nin; k++) {
			int v = n->in[k], p = v == NONE ? NONE : g->values[v].producer;
			if (scratch[k] == AX_WHOLE)
				continue;
			want(m, v, scratch[k]);
			if (p != NONE && p < lowest)
				lowest = p;
		}
	}
	/* Only the root's input is wanted at first: nothing joins without its producer. */
	bool moved = nreg > 0;
	if (moved) {
		size_t nv = (size_t)g->nvalues;
		m->newv = malloc(nv * sizeof *m->newv);
		m->cut = malloc(nv * KILN_MAX_RANK * sizeof *m->cut);
		KILN_ASSERT(m->newv && m->cut);
		for (size_t v = 0; v < nv; v++)
			m->newv[v] = NONE;
		for (size_t v = 0; v < nv * KILN_MAX_RANK; v++)
			m->cut[v] = NONE;
		rewrite(m, axis);
		free(m->newv);
		free(m->cut);
	}
	for (int i = root - 1; i >= 0 && i >= lowest; i--) {
		const Node *n = &g->nodes[i];
		m->slot[i] = NULL;
		for (int k = 0; k < n->nout; k++)
			if (n->out[k] != NONE)
				m->ax[n->out[k]] = AX_UNSET, m->picks[n->out[k]] = 0;
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] != NONE)
				m->ax[n->in[k]] = AX_UNSET, m->picks[n->in[k]] = 0;
	}
	m->ax[y] = AX_UNSET;
	m->picks[y] = 0;
	return moved;
}

int pass_lastpos(PassCtx *c)
{
	Graph *g = c->g;
	if (c->nsigs == 0)
		return 0;
	int most = 1;
	for (int i = 0; i < g->nnodes; i++)
		most = g->nodes[i].nin > most ? g->nodes[i].nin : most;
	Move m = {.c = c};
	int *scratch = malloc((size_t)most * sizeof *scratch);
	m.ax = malloc((size_t)g->nvalues * sizeof *m.ax);
	m.picks = calloc((size_t)g->nvalues, sizeof *m.picks);
	m.slot = calloc((size_t)g->nnodes, sizeof *m.slot);
	KILN_ASSERT(scratch && m.ax && m.picks && m.slot);
	for (int v = 0; v < g->nvalues; v++)
		m.ax[v] = AX_UNSET;
	/* One region per call: a second root's walk would see this one's
	 * pending nodes. The pipeline's next iteration takes the next root. */
	int moved = 0;
	for (int i = 0; i < g->nnodes && !moved; i++) {
		const Node *n = &g->nodes[i];
		if (!c->dead[i] && (n->op == OP_Gather || n->op == OP_Slice) && move_one(&m, i, scratch))
			moved = 1;
	}
	free(scratch);
	free(m.ax);
	free(m.picks);
	free(m.slot);
	return moved;
}
