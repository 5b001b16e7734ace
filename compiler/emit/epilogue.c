/*
 * emit/epilogue.c - the fused epilogue of a Gemm or Conv node (bias, a
 * Conv's residual and the activation, from the node's Fused record that
 * passes/fuse_act.c fills: fused.act, .alpha, .beta, .members), as a
 * kiln_epilogue the *_ep kernels take.
 */
#include "emit_c.h"

/* The runtime's name of each FusedAct (include/kiln/kernels.h). */
static const char *const acts[] = {
	[FACT_NONE] = "KILN_ACT_NONE", [FACT_RELU] = "KILN_ACT_RELU",
	[FACT_SIGMOID] = "KILN_ACT_SIGMOID", [FACT_TANH] = "KILN_ACT_TANH",
	[FACT_SELU] = "KILN_ACT_SELU", [FACT_ELU] = "KILN_ACT_ELU",
	[FACT_LEAKY_RELU] = "KILN_ACT_LEAKY_RELU", [FACT_HARD_SIGMOID] = "KILN_ACT_HARD_SIGMOID",
	[FACT_CLIP] = "KILN_ACT_CLIP", [FACT_GELU] = "KILN_ACT_GELU",
};

const char *emit_act_name(FusedAct act)
{
	KILN_ASSERT(act >= FACT_NONE && act <= FACT_GELU);
	return acts[act];
}

bool emit_has_act(const Node *n)
{
	return n->fused.act != FACT_NONE;
}

/* The nodes the optimizer fused into this one, as a comment (not in a
 * template's body: the names are one node's). */
void emit_fused_comment(Emit *E)
{
	if (E->n->fused.members && !E->templating) {
		emitf(E, "\t/* fused: ");
		comment_text(E, E->n->fused.members);
		emitf(E, " */\n");
	}
}

const char *emit_epilogue(Emit *E, const char *bias, const char *residual)
{
	FusedAct act = E->n->fused.act;
	if (act == FACT_NONE && !bias && !residual)
		return NULL;
	emit_fused_comment(E);
	KILN_ASSERT(act >= FACT_NONE && act <= FACT_GELU);
	double alpha = (double)E->n->fused.alpha, beta = (double)E->n->fused.beta;
	emitf(E, "\tconst kiln_epilogue ep = {%s, %s, %s, %s, %s};\n", bias ? bias : "NULL", acts[act],
	    flit(E, alpha, DT_FLOAT), flit(E, beta, DT_FLOAT), residual ? residual : "NULL");
	return "&ep";
}
