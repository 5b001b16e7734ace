/*
 * ops/convchain.c - the chain of 1x1 convolutions that passes/convchain.c
 * makes (kiln's own op KilnConvChain, ops_kiln.def): its shape inference,
 * kernel parameters, arena scratch and record.
 *
 * Inputs: x [N, C, P] float32, then per layer l its Conv weight [Cl, C(l-1),
 * 1] and optional bias [Cl], so L = (inputs - 1) / 2. Attributes kiln.acts
 * (per layer, a FusedAct), kiln.alphas and kiln.betas (its parameters).
 * Output [N, CL, P].
 */
#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

void convchain_params(Infer *x, kiln_convchain_params *p)
{
	const Node *n = x->n;
	int L = (n->nin - 1) / 2;
	if (L < 1 || L > KILN_CONVCHAIN_MAX_LAYERS || n->nin != 1 + 2 * L || n->nout != 1)
		infer_fail(x, KILN_INVALID_MODEL, "malformed fused 1x1 convolution chain");
	const Shape *xs = infer_shape(x, 0);
	if (xs->rank != 3 || infer_dtype(x, 0) != DT_FLOAT)
		infer_fail(x, KILN_INVALID_MODEL, "fused 1x1 convolution chain: x is not [N, C, P] "
		           "float32");
	*p = (kiln_convchain_params){.batch = xs->dims[0].size, .channels = xs->dims[1].size,
	                             .points = xs->dims[2].size, .nlayers = L};
	int64_t cin = p->channels;
	for (int l = 0; l < L; l++) {
		const Shape *w = infer_shape(x, 1 + 2 * l);
		if (w->rank != 3 || w->dims[1].size != cin || w->dims[2].size != 1 ||
		    w->dims[0].size < 1 || infer_dtype(x, 1 + 2 * l) != DT_FLOAT)
			infer_fail(x, KILN_INVALID_MODEL, "fused 1x1 convolution chain: layer %d's weight "
			           "does not fit", l);
		p->width[l] = w->dims[0].size;
		if (n->in[2 + 2 * l] != NONE) {
			const Shape *b = infer_shape(x, 2 + 2 * l);
			if (b->rank != 1 || b->dims[0].size != p->width[l] ||
			    infer_dtype(x, 2 + 2 * l) != DT_FLOAT)
				infer_fail(x, KILN_INVALID_MODEL, "fused 1x1 convolution chain: layer %d's "
				           "bias does not fit", l);
		}
		cin = p->width[l];
	}
}

void convchain_acts(Infer *x, int nlayers, ConvChainActs *a)
{
	const Node *n = x->n;
	const Attr *act = node_attr(n, "kiln.acts"), *al = node_attr(n, "kiln.alphas"),
	           *be = node_attr(n, "kiln.betas");
	if (!act || act->type != AT_INTS || act->n != nlayers || !al || al->type != AT_FLOATS ||
	    al->n != nlayers || !be || be->type != AT_FLOATS || be->n != nlayers)
		infer_fail(x, KILN_INVALID_MODEL, "fused 1x1 convolution chain: no activation per layer");
	for (int l = 0; l < nlayers; l++) {
		if (act->ints[l] < FACT_NONE || act->ints[l] > FACT_GELU)
			infer_fail(x, KILN_INVALID_MODEL, "fused 1x1 convolution chain: layer %d's "
			           "activation is unknown", l);
		a->act[l] = (FusedAct)act->ints[l];
		a->alpha[l] = al->floats[l];
		a->beta[l] = be->floats[l];
	}
}

static void convchain_infer(Infer *x)
{
	kiln_convchain_params p;
	convchain_params(x, &p);
	ConvChainActs acts;
	convchain_acts(x, p.nlayers, &acts);   /* checked here; the emitter reads them */
	Shape y = {.rank = 3};
	y.dims[0].size = p.batch;
	y.dims[1].size = p.width[p.nlayers - 1];
	y.dims[2].size = p.points;
	infer_set_output(x, 0, DT_FLOAT, &y);
}

static int64_t convchain_scratch_bytes(const Sig *s, int node, Arena *a)
{
	Node *n = &s->g->nodes[node];
	Infer inf = {.sig = (Sig *)s, .g = s->g, .n = n, .a = a};
	kiln_convchain_params p;
	convchain_params(&inf, &p);
	return kiln_f32_convchain_work(&p) * (int64_t)sizeof(float);
}

/* Multiply-adds of every layer at every point. */
static double convchain_flops(const Sig *s, const Node *n)
{
	const Shape *xs = &s->shapes[n->in[0]];
	if (xs->rank != 3)
		return 0;
	double points = (double)xs->dims[0].size * (double)xs->dims[2].size, flops = 0;
	for (int l = 0; 1 + 2 * l < n->nin; l++) {
		const Shape *w = &s->shapes[n->in[1 + 2 * l]];
		flops += 2 * points * (double)w->dims[0].size * (double)w->dims[1].size;
	}
	return flops;
}

const OpDef ops_convchain_defs[] = {
	{.op = OP_KilnConvChain, .infer = convchain_infer, .emit = emit_convchain,
	 .emit_returns = false, .batch = BK_N_FIRST, .scratch = convchain_scratch_bytes,
	 .flops = convchain_flops, .tile = TK_CONV, .pad = PD_WINDOW, .types = OT_F32,
	 .note = "a chain of 2 to 8 1x1 Conv layers over [N, C, P], each with its bias and "
	         "activation, run a block of points at a time (passes/convchain.c)"},
	{.op = NONE},
};
