/*
 * emit/attention.c - the fused attention node (ops/attention.c): one
 * kiln_f32_attention call with the strides of this signature, its work
 * memory in the node's planned arena scratch (plan.c).
 */
#include <inttypes.h>

#include "emit_c.h"

static void strides(Emit *E, const char *name, const int64_t *s, int n)
{
	emitf(E, ".%s = {", name);
	for (int k = 0; k < n; k++)
		emitf(E, "%s%" PRId64, k ? ", " : "", s[k]);
	emitf(E, "}");
}

void emit_attention(Emit *E)
{
	const Node *n = E->n;
	Operand Q = in_op(E, 0), K = in_op(E, 1), V = in_op(E, 2), Y = out_op(E, 0);
	bool masked = n->nin > 3 && n->in[3] != NONE;
	Operand M = masked ? in_op(E, 3) : Q;
	kiln_attention_params p;
	Shape y;
	const char *why = attention_layout(n, Q.shape, K.shape, V.shape, masked ? M.shape : NULL, &p,
	                                   &y);
	if (why)
		emit_fail(E, "KilnAttention: %s", why);
	int node = (int)(E->n - E->g->nodes);
	int buf = E->plan->scratch_of[node];
	KILN_ASSERT(buf != NONE);
	const PlanBuf *scratch = &E->plan->bufs[buf];
	emitf(E, "\t/* arena scratch @%" PRId64 "+%" PRId64 ": one head's K^T and V, %d rows of "
	      "scores */\n", scratch->off, scratch->bytes, (int)KILN_ATTENTION_ROWS);
	emitf(E, "\tconst kiln_attention_params p = {%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
	      ", %" PRId64 ", %" PRId64 ", %s,\n\t\t", p.batch, p.heads, p.q_len, p.kv_len,
	      p.head_dim, p.v_dim, flit(E, (double)p.scale, DT_FLOAT));
	strides(E, "q_stride", p.q_stride, 4);
	emitf(E, ", ");
	strides(E, "k_stride", p.k_stride, 4);
	emitf(E, ",\n\t\t");
	strides(E, "v_stride", p.v_stride, 4);
	emitf(E, ", ");
	strides(E, "y_stride", p.y_stride, 3);
	emitf(E, ", ");
	strides(E, "mask_stride", p.mask_stride, 4);
	emitf(E, "};\n");
	emitf(E, "\tkiln_f32_attention(&p, %s, %s, %s, %s, %s, (float *)(a + %" PRId64 "));\n",
	      Q.expr, K.expr, V.expr, masked ? M.expr : "NULL", Y.expr, scratch->off);
}
