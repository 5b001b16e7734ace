/*
 * passes/noop.c - remove nodes whose output is exactly their data input:
 * Identity, inference-mode Dropout, Cast to the same type, Reshape / Flatten /
 * Squeeze / Unsqueeze / Expand to the same shape, the identity Transpose,
 * Pad by zero, the full Slice, Mul or Div by one, Add or Sub of zero.
 *
 * It runs first in every iteration: a weight seen through such a node is
 * then seen as what it is, so folding knows whether it is shared. Needs the
 * shapes of every signature for the shape-dependent cases (they are skipped
 * otherwise); guarantees nothing else; invalidates nothing but node ids.
 */
#include <string.h>

#include "rewrite.h"

/* Every element of the constant equals v (and there is at least one). */
static bool const_all(PassCtx *c, int id, double v)
{
	return rw_const_all(c, id, v);
}

/* Output shape and dtype equal the data input's in every signature. */
static bool same_as_input(PassCtx *c, const Node *n, int x)
{
	if (c->nsigs == 0 || n->out[0] == NONE)
		return false;
	for (int k = 0; k < c->nsigs; k++)
		if (!rw_same_shape(rw_shape_in(c, x, k), rw_shape_in(c, n->out[0], k)) ||
		    c->sigs[k].dtypes[x] != c->sigs[k].dtypes[n->out[0]])
			return false;
	return true;
}

static bool unused_output(PassCtx *c, const Node *n, int k)
{
	if (k >= n->nout || n->out[k] == NONE)
		return true;
	const Value *v = &c->g->values[n->out[k]];
	return v->nuse == 0 && !v->is_output;
}

/* The data input the node passes through unchanged, or NONE. */
static int passthrough(PassCtx *c, const Node *n)
{
	if (n->domain_id != DOMAIN_ONNX || n->nin < 1 || n->in[0] == NONE || n->nout < 1)
		return NONE;
	int x = n->in[0];
	for (int k = 1; k < n->nout; k++)
		if (!unused_output(c, n, k))
			return NONE;
	switch (n->op) {
	case OP_Identity:
		return x;
	case OP_Dropout:
		/* Inference mode: no training_mode input, or a constant false one;
		 * before opset 7, is_test must not say training. */
		if (n->since < 7 && rw_attr_int(n, "is_test", 1) == 0)
			return NONE;
		if (n->nin > 2 && n->in[2] != NONE && !const_all(c, n->in[2], 0))
			return NONE;
		return x;
	case OP_Cast: {
		int to = (int)rw_attr_int(n, "to", 0);
		int dt = rw_dtype(c, x);
		return dt != DT_UNDEFINED && dt == to ? x : NONE;
	}
	case OP_Reshape: case OP_Flatten: case OP_Squeeze: case OP_Unsqueeze: case OP_Expand:
		return same_as_input(c, n, x) ? x : NONE;
	case OP_Transpose: {
		const Attr *p = rw_attr(n, "perm");
		const Shape *s = rw_static_shape(c, x);
		if (!p) /* the default reverses the axes: a no-op only below rank 2 */
			return s && s->rank <= 1 ? x : NONE;
		for (int i = 0; i < p->n; i++)
			if (p->ints[i] != i)
				return NONE;
		return x;
	}
	case OP_Pad: {
		if (!same_as_input(c, n, x))
			return NONE;
		if (n->since < 11) {
			const Attr *p = rw_attr(n, "pads");
			for (int i = 0; p && i < p->n; i++)
				if (p->ints[i] != 0)
					return NONE;
			return x;
		}
		return n->nin > 1 && const_all(c, n->in[1], 0) ? x : NONE;
	}
	case OP_Slice: {
		/* Same shape and positive steps: every element, in order. */
		if (!same_as_input(c, n, x))
			return NONE;
		if (n->since < 10)
			return x;
		if (n->nin > 4 && n->in[4] != NONE) {
			int64_t ns;
			double *st = rw_const_f64(c, n->in[4], &ns, KILN_MAX_RANK);
			if (!st)
				return NONE;
			for (int64_t i = 0; i < ns; i++)
				if (st[i] <= 0)
					return NONE;
		}
		return x;
	}
	case OP_Mul: case OP_Add: case OP_Sub: case OP_Div: {
		if (n->nin != 2 || n->in[1] == NONE)
			return NONE;
		double unit = n->op == OP_Mul || n->op == OP_Div ? 1 : 0;
		/* The constant operand may be either side of a commutative op. */
		for (int side = 0; side < 2; side++) {
			int data = n->in[side], k = n->in[1 - side];
			if (side == 1 && (n->op == OP_Sub || n->op == OP_Div))
				break;
			if (data != NONE && const_all(c, k, unit) && same_as_input(c, n, data))
				return data;
		}
		return NONE;
	}
	default:
		return NONE;
	}
}

int pass_noop(PassCtx *c)
{
	Graph *g = c->g;
	int changes = 0;
	for (int i = 0; i < g->nnodes; i++) {
		if (c->dead[i])
			continue;
		Node *n = &g->nodes[i];
		int x = passthrough(c, n);
		if (x == NONE)
			continue;
		/* Optional outputs nobody reads become orphans with the node. */
		if (rw_bypass(c, i, x, n->out[0])) {
			c->stat->removed++;
			changes++;
		}
	}
	return changes;
}
