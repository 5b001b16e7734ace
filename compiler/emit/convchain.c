/*
 * emit/convchain.c - the fused chain of 1x1 convolutions (passes/convchain.c,
 * ops/convchain.c) as one kiln_f32_convchain call: the weights and biases
 * as the Convs read them, each layer's activation (convchain_acts: kiln.acts,
 * kiln.alphas and kiln.betas), the block buffers in the node's planned arena
 * scratch.
 */
#include <inttypes.h>

#include "emit_c.h"

void emit_convchain(Emit *E)
{
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	kiln_convchain_params p;
	convchain_params(&inf, &p);
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	ConvChainActs acts;
	convchain_acts(&inf, p.nlayers, &acts);
	int node = (int)(E->n - E->g->nodes);
	int buf = E->plan->scratch_of[node];
	KILN_ASSERT(buf != NONE);
	const PlanBuf *scratch = &E->plan->bufs[buf];
	emit_fused_comment(E);
	emitf(E, "\tconst kiln_convchain_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .channels = %" PRId64 ", .points = %" PRId64
	       ", .nlayers = %d,\n", p.batch, p.channels, p.points, p.nlayers);
	for (int l = 0; l < p.nlayers; l++) {
		Operand W = in_op(E, 1 + 2 * l);
		require_f32(E, &W);
		const char *bias = E->n->in[2 + 2 * l] != NONE ? in_op(E, 2 + 2 * l).expr : "NULL";
		emitf(E, "\t\t.width[%d] = %" PRId64 ", .w[%d] = %s, .bias[%d] = %s,\n"
		       "\t\t.act[%d] = {NULL, %s, %s, %s, NULL},\n",
		    l, p.width[l], l, W.expr, l, bias, l, emit_act_name(acts.act[l]), flit(E, (double)acts.alpha[l], DT_FLOAT),
		    flit(E, (double)acts.beta[l], DT_FLOAT));
	}
	emitf(E, "\t};\n");
	emitf(E, "\t/* arena scratch @%" PRId64 "+%" PRId64 ": two blocks of %" PRId64
	       " points of the inner layers */\n", scratch->off, scratch->bytes,
	    kiln_f32_convchain_block(&p));
	emitf(E, "\tkiln_f32_convchain(&p, %s, %s, (float *)(a + %" PRId64 "));\n", X.expr, Y.expr,
	    scratch->off);
}
