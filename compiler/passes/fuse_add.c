/*
 * passes/fuse_add.c - the fuse pass's bias and residual Add: MatMul +
 * Add(bias) becomes Gemm with C (a Reshape to 2-D and back around it when A
 * has more than two axes; those are views), unless the batch axis is not A's
 * leading axis (seq-first layouts: the Reshapes would merge it with the axes
 * before it); Gemm without C + Add(residual or bias) becomes Gemm with C;
 * Conv (1-D/2-D) + Add(residual of the output's shape) becomes a Conv with
 * the residual as a kiln-internal fourth input, marked by
 * Node.fused.residual: the kernel adds it after the bias and before the
 * activation (ResNet blocks: Conv, BN, Add, Relu is one call).
 */
#include "fuse.h"

/* The float32 addend r of x's one user, an Add of two inputs (*j), where x
 * is float32 too; NONE otherwise. */
static int sole_add_addend(PassCtx *c, int x, int *j)
{
	*j = rw_sole_user(c, x);
	if (*j == NONE)
		return NONE;
	const Node *add = &c->g->nodes[*j];
	if (add->op != OP_Add || add->nin != 2)
		return NONE;
	int r = add->in[0] == x && add->in[1] != x   ? add->in[1]
	        : add->in[1] == x && add->in[0] != x ? add->in[0]
	                                             : NONE;
	return r != NONE && fuse_is_f32(c, r) && fuse_is_f32(c, x) ? r : NONE;
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
	    n->fused.residual || !fuse_is_f32(c, n->in[0]))
		return false;
	const Shape *ws = rw_static_shape(c, n->in[1]);
	if (!ws || ws->rank < 3 || ws->rank > 4)
		return false; /* 3-D convolutions have no epilogue yet */
	int x = n->out[0];
	if (g->values[x].kind != VAL_TEMP || rw_pinned(c, x))
		return false;
	int j, r = sole_add_addend(c, x, &j);
	if (r == NONE)
		return false;
	Node *add = &g->nodes[j];
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
	fuse_note(c, n, add);
	rw_kill(c, j);
	fuse_take_output(c, i, y);
	return true;
}

bool fuse_add(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *n = &g->nodes[i];
	if (n->op == OP_Conv && c->nsigs > 0)
		return fuse_conv_residual(c, i);
	if ((n->op != OP_MatMul && n->op != OP_Gemm) || n->nout != 1 || c->nsigs == 0)
		return false;
	int x = n->out[0];
	int j, r = sole_add_addend(c, x, &j);
	if (r == NONE)
		return false;
	Node *add = &g->nodes[j];
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
		if (!fuse_matmul_to_gemm(c, i, n->in[1], false, r, y, j))
			return false;
		fuse_note(c, &c->pending[c->npending - 1].node, add);
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
	fuse_note(c, n, add);
	rw_kill(c, j);
	fuse_take_output(c, i, y);
	return true;
}
