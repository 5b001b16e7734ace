/*
 * emit/edgeconv.c - the fused kNN EdgeConv node (passes/edgeconv.c,
 * ops/edgeconv.c) as one kiln_f32_edgeconv call: every layer's weight
 * packed at compile time into the b32 layout the GEMM core streams
 * (layer 0's [2 C1, C] as its transpose, C x 2 C1; layer l's Conv weight
 * [Cl, C(l-1), 1, 1] as W_l^T), the work memory in the node's planned arena
 * scratch.
 */
#include <inttypes.h>

#include "emit_c.h"

/* Input i, a float32 weight [N, K] read only here, packed as B = its
 * transpose (K x N), as a C expression. */
static const char *packed_t(Emit *E, int i, int64_t N, int64_t K)
{
	int id = E->n->in[i];
	const Value *v = &E->g->values[id];
	if (v->kind != VAL_WEIGHT || v->dtype != DT_FLOAT || E->sig->dtypes[id] != DT_FLOAT ||
	    E->sig->folded[id] || E->plan->root[id] != id || E->in_index[id] != NONE ||
	    v->nuse != 1 || v->weight->nbytes != (uint64_t)(N * K) * sizeof(float))
		emit_fail(E, "fused EdgeConv: weight %d is not a float32 weight of its own", i);
	int64_t pack[4] = {K, N, 1, K};
	int s = symbol_in_layout(E, DT_FLOAT, v->weight->bytes, v->weight->nbytes, v->name,
	                         SYM_PACK_B32, pack);
	return symbol_expr(E, s, "float");
}

/* The node's planned scratch; the fused members as a comment. */
static const PlanBuf *scratch_and_comment(Emit *E)
{
	int node = (int)(E->n - E->g->nodes);
	int buf = E->plan->scratch_of[node];
	KILN_ASSERT(buf != NONE);
	const PlanBuf *scratch = &E->plan->bufs[buf];
	emit_fused_comment(E);
	return scratch;
}

void emit_edgeconv(Emit *E)
{
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	kiln_edgeconv_params p;
	edgeconv_params(&inf, &p);
	Operand X = in_op(E, 0), I = in_op(E, 1), Y = out_op(E, 0);
	const PlanBuf *scratch = scratch_and_comment(E);
	emitf(E, "\tconst kiln_edgeconv_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .channels = %" PRId64 ", .points = %" PRId64
	       ", .k = %" PRId64 ",\n\t\t.nlayers = %d, .aggregate = %s,\n",
	    p.batch, p.channels, p.points, p.k, p.nlayers,
	    p.aggregate == KILN_EDGECONV_MAX ? "KILN_EDGECONV_MAX" : "KILN_EDGECONV_MEAN");
	int64_t cin = p.channels;
	for (int l = 0; l < p.nlayers; l++) {
		int64_t n = l == 0 ? 2 * p.width[0] : p.width[l];
		const char *w = packed_t(E, 2 + 2 * l, n, cin);
		int bi = 3 + 2 * l;
		const char *bias = E->n->in[bi] != NONE ? in_op(E, bi).expr : "NULL";
		emitf(E, "\t\t.width[%d] = %" PRId64 ", .w[%d] = %s, .bias[%d] = %s,\n"
		       "\t\t.act[%d] = {.act = %s},\n",
		    l, p.width[l], l, w, l, bias, l, p.act[l].act == KILN_ACT_RELU ? "KILN_ACT_RELU" : "KILN_ACT_NONE");
		cin = p.width[l];
	}
	emitf(E, "\t};\n");
	emitf(E, "\t/* arena scratch @%" PRId64 "+%" PRId64 ": a sample's points projected and "
	       "two tiles of edge features */\n", scratch->off, scratch->bytes);
	emitf(E, "\treturn kiln_f32_edgeconv(&p, %s, %s, %s, (float *)(a + %" PRId64 "));\n", X.expr,
	    I.expr, Y.expr, scratch->off);
}

/* The fused kNN (KilnKnn): one kiln_f32_knn call. */
void emit_knn(Emit *E)
{
	Operand X = in_op(E, 0), I = out_op(E, 1);
	const PlanBuf *scratch = scratch_and_comment(E);
	emitf(E, "\t/* arena scratch @%" PRId64 "+%" PRId64 ": a sample's dot products */\n",
	    scratch->off, scratch->bytes);
	emitf(E, "\tkiln_f32_knn(%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
	       ", %s, %s, (float *)(a + %" PRId64 "));\n\treturn 0;\n",
	    X.shape->dims[0].size, X.shape->dims[1].size, X.shape->dims[2].size,
	    I.shape->dims[2].size, X.expr, I.expr, scratch->off);
}
