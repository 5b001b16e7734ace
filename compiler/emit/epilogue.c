/*
 * emit/epilogue.c - the fused epilogue of a Gemm or Conv node (bias, a
 * Conv's residual and the activation, from what passes/fuse.c leaves: kiln.act,
 * kiln.act_alpha, kiln.act_beta, kiln.fused), as a kiln_epilogue the
 * *_ep kernels take.
 */
#include <string.h>

#include "emit_c.h"

static const struct {
	const char *op;
	const char *name;
} acts[] = {
	{"Relu", "KILN_ACT_RELU"}, {"Sigmoid", "KILN_ACT_SIGMOID"}, {"Tanh", "KILN_ACT_TANH"},
	{"Selu", "KILN_ACT_SELU"}, {"Elu", "KILN_ACT_ELU"}, {"LeakyRelu", "KILN_ACT_LEAKY_RELU"},
	{"HardSigmoid", "KILN_ACT_HARD_SIGMOID"}, {"Clip", "KILN_ACT_CLIP"}, {"Gelu", "KILN_ACT_GELU"},
};

bool emit_has_act(const Node *n)
{
	return node_attr(n, "kiln.act") != NULL;
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
	const Attr *act = node_attr(E->n, "kiln.act");
	if (!act && !bias && !residual)
		return NULL;
	emit_fused_comment(E);
	const char *kind = "KILN_ACT_NONE";
	if (act) {
		const char *want = arena_printf(E->a, "%.*s", (int)act->s.len, act->s.data);
		kind = NULL;
		for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
			if (strcmp(acts[i].op, want) == 0)
				kind = acts[i].name;
		if (!kind)
			emit_fail(E, "unknown fused activation \"%s\"", want);
	}
	double alpha = node_attr_float(E->n, "kiln.act_alpha", 0.0f);
	double beta = node_attr_float(E->n, "kiln.act_beta", 0.0f);
	emitf(E, "\tconst kiln_epilogue ep = {%s, %s, %s, %s, %s};\n", bias ? bias : "NULL", kind,
	    flit(E, alpha, DT_FLOAT), flit(E, beta, DT_FLOAT), residual ? residual : "NULL");
	return "&ep";
}
