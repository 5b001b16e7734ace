/*
 * passes/f16.c - `--weights-dtype fp16`: float32 weights are stored as
 * float16 and widened where they are read.
 *
 * Each large float32 weight (more than 4096 elements: smaller ones are
 * folded for shape arithmetic and not worth a node) read as a data operand
 * (MatMul, Gemm, Conv, Gather, elementwise arithmetic) is replaced by a
 * float16 copy and a Cast to float32 placed just before its first reader, so
 * the float32 values exist only in the arena while they are needed. The
 * float32 copy dies: the weights object holds half the bytes. Runs once,
 * after the fixed point, so folding never undoes it. Rounding is to nearest
 * even; outputs then match within float16 precision, not float32.
 */
#include <string.h>

#include "rewrite.h"

/* May input k of n read a widened copy (computed at run time)? */
static bool data_operand(const Node *n, int k)
{
	switch (n->op) {
	case OP_MatMul: case OP_Gemm: case OP_Conv: case OP_ConvTranspose:
	case OP_Add: case OP_Sub: case OP_Mul: case OP_Div:
		return true;
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
					ok = data_operand(&g->nodes[i], k);
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
