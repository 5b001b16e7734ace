/*
 * passes/fuse_transpose.c - the fuse pass's transposed operands: a
 * Transpose [1,0] feeding a Gemm operand flips transA/transB, and one
 * feeding a MatMul's B makes the MatMul a Gemm with transB. The kernel reads
 * the weight transposed, so a weight also used untransformed (a tied
 * embedding: Gather + lm_head) is stored once.
 */
#include "fuse.h"

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

bool fuse_transpose(PassCtx *c, int i)
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
		bool ok = fuse_matmul_to_gemm(c, i, w, true, NONE, n->out[0], i);
		if (ok)
			c->stat->fused++;
		return ok;
	}
	return false;
}
