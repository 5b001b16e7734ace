/*
 * passes/addnorm.c - a residual Add read only by a LayerNormalization
 * becomes the LayerNormalization's kiln-internal fourth input (marked by
 * Node.fused.residual): the generated code forms each row's sum in the output
 * row and normalizes it there, so the sum is never stored and read back.
 *
 * Post-LN transformer blocks write LayerNorm(x + f(x)); pre-LN blocks read
 * the sum again (x + f(x) is the next residual), so their Add has two
 * readers and stays. Both Add operands must have the Add's shape in every
 * signature (no broadcasting), the LayerNormalization no statistics
 * outputs, and the operands be float32.
 */
#include "rewrite.h"

static bool fuse_one(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *ln = &g->nodes[i];
	if (ln->nin < 2 || ln->nin > 3 || ln->fused.residual ||
	    rw_dtype(c, ln->in[0]) != DT_FLOAT)
		return false;
	for (int k = 1; k < ln->nout; k++)
		if (ln->out[k] != NONE)
			return false;
	int x = ln->in[0];
	const Value *xv = &g->values[x];
	if (xv->kind != VAL_TEMP || xv->producer == NONE || c->dead[xv->producer] ||
	    rw_sole_user(c, x) != i || xv->is_output)
		return false;
	int j = xv->producer;
	const Node *add = &g->nodes[j];
	if (add->op != OP_Add || add->nin != 2 || add->nout != 1 || add->in[0] == NONE ||
	    add->in[1] == NONE || rw_dtype(c, add->in[0]) != DT_FLOAT ||
	    rw_dtype(c, add->in[1]) != DT_FLOAT)
		return false;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *s = rw_shape_in(c, x, k);
		if (!s || !rw_same_shape(s, rw_shape_in(c, add->in[0], k)) ||
		    !rw_same_shape(s, rw_shape_in(c, add->in[1], k)))
			return false;
	}
	int *in = arena_array(c->a, 4, sizeof *in);
	in[0] = add->in[0];
	in[1] = ln->in[1];
	in[2] = ln->nin > 2 ? ln->in[2] : NONE;
	in[3] = add->in[1];
	g->values[in[0]].nuse++;
	g->values[in[3]].nuse++;
	g->values[x].nuse--;
	ln->in = in;
	ln->nin = 4;
	ln->fused.residual = true;
	rw_add_member(c, ln, add);
	rw_kill(c, j);
	c->stat->fused++;
	return true;
}

int pass_addnorm(PassCtx *c)
{
	int changes = 0;
	if (c->nsigs == 0)
		return 0;
	int nnodes = c->g->nnodes;
	for (int i = 0; i < nnodes; i++)
		if (!c->dead[i] && c->g->nodes[i].op == OP_LayerNormalization && fuse_one(c, i))
			changes++;
	return changes;
}
