/*
 * passes/f16.c - `--weights-dtype fp16`: float32 weights are stored as
 * float16 and widened where they are read.
 *
 * Each large float32 weight (more than 4096 elements: smaller ones are
 * folded for shape arithmetic and not worth a node) read only as MatMul/Gemm
 * B, 1-D/2-D Conv weights or Gather data is replaced by a float16 copy and a
 * Cast to float32 just before its first reader; fuse.c then lets the GEMM
 * and convolution kernels read the float16 bytes (widening while loading)
 * and moves the Cast after the Gather. The
 * float32 copy dies: the weights object holds half the bytes, and no float32
 * copy exists at run time either. Runs last in each iteration of the fixed
 * point (it narrows a weight once; folding never widens it back). Rounding
 * is to nearest even; outputs then match within float16 precision.
 */
#include <string.h>

#include "kiln/kernels.h"
#include "rewrite.h"

/* Is input k of n read where the float16 bytes can be served without a
 * float32 copy of the whole weight (fuse.c: the GEMM widens B while
 * loading, a 1-D/2-D Conv a block of output channels at a time; Gather
 * gathers float16 rows, then widens them)? Other readers (3-D Conv,
 * elementwise) would need the whole weight widened in the arena on every
 * run, so their weights stay float32. A Conv followed by a BatchNorm waits:
 * fuse.c folds the BatchNorm into the float32 weight first, and the folded
 * weight is narrowed in a later iteration. */
static bool data_operand(PassCtx *c, const Node *n, int k)
{
	switch (n->op) {
	case OP_MatMul: case OP_Gemm:
		return k == 1;
	case OP_Conv: {
		int rank = c->g->values[n->in[1]].shape.rank;
		if (k != 1 || rank < 3 || rank > 4 || n->nout != 1)
			return false;
		int user = rw_sole_user(c, n->out[0]);
		return user == NONE || c->g->nodes[user].op != OP_BatchNormalization;
	}
	case OP_Gather:
		return k == 0;
	default:
		return false;
	}
}

int pass_f16(PassCtx *c)
{
	Graph *g = c->g;
	int changes = 0;
	int nvalues = g->nvalues;
	for (int id = 0; id < nvalues; id++) {
		if (!rw_is_const(c, id) || g->values[id].dtype != DT_FLOAT || g->values[id].nuse == 0 ||
		    g->values[id].weight->nelem <= 4096 || rw_pinned(c, id))
			continue;
		int first = NONE;
		bool ok = true;
		for (int i = 0; i < g->nnodes && ok; i++)
			for (int k = 0; k < g->nodes[i].nin; k++)
				if (g->nodes[i].in[k] == id) {
					ok = data_operand(c, &g->nodes[i], k);
					if (first == NONE)
						first = i;
				}
		if (!ok || first == NONE)
			continue;
		const Weight *w = g->values[id].weight;
		uint16_t *half = arena_array(c->a, (size_t)w->nelem, sizeof *half);
		for (int64_t e = 0; e < w->nelem; e++) {
			float f;
			memcpy(&f, (const char *)w->bytes + 4 * e, 4);
			half[e] = kiln_f32_to_f16(f);
		}
		Shape s = g->values[id].shape;
		const char *name = g->values[id].name;
		int h = rw_new_const(c, arena_printf(c->a, "%s.f16", name), DT_FLOAT16, &s, half);
		int wide = rw_new_value(c, name, DT_FLOAT);
		rw_replace_uses(c, id, wide);
		Attr to = rw_int_attr(c, "to", DT_FLOAT);
		rw_add_node(c, first, "Cast", &h, 1, &wide, 1, &to, 1,
		            arena_printf(c->a, "%s.widen", name));
		changes++;
	}
	return changes;
}
