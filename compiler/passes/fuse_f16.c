/*
 * passes/fuse_f16.c - the fuse pass's float16 weights: a float16 weight
 * widened by a Cast (passes/f16.c, `--weights-dtype fp16`, or the model's
 * own) is read as float16 by the GEMM (kiln_f32_gemm_f16b) or a 1-D/2-D
 * Conv (kiln_f32_conv2d_f16w), or gathered before the Cast (only the
 * gathered rows are widened): no float32 copy of the table anywhere.
 */
#include "fuse.h"

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
bool sink_cast_gather(PassCtx *c, int i)
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
	if (n->nin < 2 || n->nout != 1 || !fuse_is_f32(c, n->in[0]))
		return false;
	int w = widened_f16(c, n->in[1], -1);
	if (w == NONE || g->values[w].shape.rank < 3 || g->values[w].shape.rank > 4)
		return false;
	const Node *cast = &g->nodes[g->values[n->in[1]].producer];
	g->values[n->in[1]].nuse--;
	g->values[w].nuse++;
	n->in[1] = w;
	fuse_note(c, n, cast);
	return true;
}

/* Gemm/MatMul reading a widened float16 weight as B reads the float16 bytes
 * (kiln_f32_gemm_f16b widens while loading): the float32 copy the Cast made
 * in the arena disappears with the Cast. */
bool fuse_f16_operand(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *n = &g->nodes[i];
	if (n->op == OP_Conv)
		return fuse_f16_conv(c, i);
	if ((n->op != OP_Gemm && n->op != OP_MatMul) || n->nin < 2 || n->nout != 1 ||
	    !fuse_is_f32(c, n->in[0]))
		return false;
	int w = widened_f16(c, n->in[1], 2);
	if (w == NONE)
		return false;
	const Node *cast = &g->nodes[g->values[n->in[1]].producer];
	if (n->op == OP_MatMul) {
		if (!fuse_matmul_to_gemm(c, i, w, false, NONE, n->out[0], i))
			return false;
		for (int k = c->npending - 1; k >= 0; k--)
			if (c->pending[k].node.op == OP_Gemm) {
				fuse_note(c, &c->pending[k].node, cast);
				break;
			}
		return true;
	}
	if (n->since < 7)
		return false;
	g->values[n->in[1]].nuse--;
	g->values[w].nuse++;
	n->in[1] = w;
	fuse_note(c, n, cast);
	return true;
}
