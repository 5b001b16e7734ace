/*
 * passes/fuse.c - the fuse pass: fusions that remove work without adding
 * weight bytes, one file each, tried on every node in this order
 * (pass_fuse, one rewrite per node per iteration):
 *
 *   - fuse_f16.c: a float16 weight widened by a Cast read as float16 by the
 *     GEMM or a 1-D/2-D Conv, or gathered before the Cast;
 *   - fuse_transpose.c: a Transpose [1,0] into Gemm's transA/transB, or into
 *     a MatMul's B as a Gemm with transB;
 *   - fuse_bn.c: BatchNormalization folded into the Conv or Gemm before it
 *     (or the Conv after it);
 *   - fuse_act.c: an activation, or GELU as exporters write it, after Conv
 *     or Gemm as the kernel's epilogue (Node.fused.act);
 *   - fuse_layernorm.c: LayerNorm as exporters write it into one
 *     LayerNormalization;
 *   - fuse_add.c: MatMul or Gemm + Add(bias or residual) into Gemm with C,
 *     Conv + Add(residual) into a Conv with a residual (Node.fused.residual).
 *
 * What they share is in fuse_shared.c (fuse.h). Every fused node records its
 * members in fused.members, for the generated C's comments. Needs shapes
 * for MatMul rewrites (skipped without them).
 */
#include "fuse.h"

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
