/*
 * passes/fuse_act.c - the fuse pass's activation epilogues: Relu, Sigmoid,
 * Tanh, Selu, Elu, LeakyRelu, HardSigmoid, Clip and GELU as exporters write
 * it (x * 0.5 * (1 + erf(x / sqrt 2)), five nodes) after Conv (1-D/2-D) or
 * Gemm, or after a Gemm and up to three views (Reshape, Unsqueeze, Squeeze,
 * Flatten), become the kernel's epilogue: the activation's kind and
 * parameters are resolved once into the node's Fused record (fused.act,
 * .alpha, .beta; compiler/ir.h), which the emitters turn into one
 * kiln_f32_gemm_ep / kiln_f32_conv2d_ep call.
 */
#include <math.h>

#include "fuse.h"

static bool act_params(PassCtx *c, const Node *n, FusedAct *act, float *alpha, float *beta)
{
	*alpha = *beta = 0;
	switch (n->op) {
	case OP_Relu: *act = FACT_RELU; return true;
	case OP_Sigmoid: *act = FACT_SIGMOID; return true;
	case OP_Tanh: *act = FACT_TANH; return true;
	case OP_Selu:
		*act = FACT_SELU;
		*alpha = rw_attr_float(n, "alpha", 1.67326319217681884765625f);
		*beta = rw_attr_float(n, "gamma", 1.05070102214813232421875f);
		return true;
	case OP_Elu: *act = FACT_ELU; *alpha = rw_attr_float(n, "alpha", 1.0f); return true;
	case OP_LeakyRelu:
		*act = FACT_LEAKY_RELU;
		*alpha = rw_attr_float(n, "alpha", 0.01f);
		return true;
	case OP_HardSigmoid:
		*act = FACT_HARD_SIGMOID;
		*alpha = rw_attr_float(n, "alpha", 0.2f);
		*beta = rw_attr_float(n, "beta", 0.5f);
		return true;
	case OP_Clip: {
		*act = FACT_CLIP;
		*alpha = -INFINITY;
		*beta = INFINITY;
		if (n->since < 11) {
			*alpha = rw_attr_float(n, "min", -INFINITY);
			*beta = rw_attr_float(n, "max", INFINITY);
			return true;
		}
		for (int k = 1; k < 3; k++) {
			if (k >= n->nin || n->in[k] == NONE)
				continue;
			int64_t ne;
			double *v = rw_const_f64(c, n->in[k], &ne, 1);
			if (!v || ne != 1)
				return false;
			*(k == 1 ? alpha : beta) = (float)v[0];
		}
		return true;
	}
	default:
		return false;
	}
}

/* The node whose epilogue can apply an elementwise function to x: x's
 * producer if it is a Gemm or a 1-D/2-D Conv without one, or such a Gemm
 * seen through a Reshape (an elementwise function commutes with it). x must
 * be read by `readers` nodes only (the function's own). *last is the node
 * that writes x (the host or the Reshape). NONE if there is none. */
static int epilogue_host(PassCtx *c, int x, int *last)
{
	Graph *g = c->g;
	const Value *xv = &g->values[x];
	if (xv->kind != VAL_TEMP || xv->producer == NONE || rw_pinned(c, x) || !fuse_is_f32(c, x))
		return NONE;
	int p = xv->producer;
	*last = p;
	/* Views between a Gemm and the activation (Reshape; Unsqueeze and
	 * Squeeze left by a BatchNorm folded through them): it is elementwise. */
	for (int hops = 0; fuse_is_view(g->nodes[p].op) && g->nodes[p].nout == 1; hops++) {
		int in = g->nodes[p].in[0];
		const Value *iv = &g->values[in];
		if (hops == 3 || iv->kind != VAL_TEMP || iv->producer == NONE || !fuse_only_shape_besides(c, in, p))
			return NONE;
		p = iv->producer;
		if (!fuse_is_view(g->nodes[p].op) && g->nodes[p].op != OP_Gemm)
			return NONE;
	}
	Node *pn = &g->nodes[p];
	if ((pn->op != OP_Conv && pn->op != OP_Gemm) || pn->nout != 1 || pn->fused.act != FACT_NONE)
		return NONE;
	if (pn->op == OP_Conv) {
		const Shape *ws = rw_static_shape(c, pn->in[1]);
		if (!ws || ws->rank > 4)
			return NONE;  /* 3-D convolutions have no epilogue yet */
	}
	return p;
}

/* The activation the node's epilogue applies, resolved once (its kind and
 * parameters) into the node's Fused record, which the emitters read. */
static void set_act(Node *pn, FusedAct act, float alpha, float beta)
{
	pn->fused.act = act;
	pn->fused.alpha = alpha;
	pn->fused.beta = beta;
}

bool fuse_act(PassCtx *c, int j)
{
	Graph *g = c->g;
	Node *an = &g->nodes[j];
	FusedAct act;
	float alpha, beta;
	if (an->nin < 1 || an->nout != 1 || !act_params(c, an, &act, &alpha, &beta))
		return false;
	int x = an->in[0], last;
	if (rw_sole_user(c, x) != j)
		return false;
	int p = epilogue_host(c, x, &last);
	const Value *xv = &g->values[x];
	if (p == NONE && xv->kind == VAL_TEMP && xv->producer != NONE &&
	    g->nodes[xv->producer].op == OP_MatMul && g->nodes[xv->producer].nout == 1) {
		/* A MatMul becomes a Gemm (with Reshapes if A has more axes) that
		 * writes the activation's output itself. */
		int mm = xv->producer, y = an->out[0];
		if (!fuse_matmul_to_gemm(c, mm, g->nodes[mm].in[1], false, NONE, y, j))
			return false;
		for (int k = c->npending - 1; k >= 0; k--)
			if (c->pending[k].node.op == OP_Gemm) {
				Node *gn = &c->pending[k].node;
				set_act(gn, act, alpha, beta);
				fuse_note(c, gn, &g->nodes[j]);
				break;
			}
		rw_kill(c, j);
		return true;
	}
	if (p == NONE)
		return false;
	Node *pn = &g->nodes[p];
	set_act(pn, act, alpha, beta);
	int y = an->out[0];
	fuse_note(c, pn, an);
	rw_kill(c, j);
	fuse_take_output(c, last, y);
	return true;
}

/* ---- GELU as exporters write it ---------------------------------------- */

/* x * 0.5 * (1 + erf(x / sqrt 2)), from Div(x, sqrt 2) or Mul(x, 1/sqrt 2):
 * Erf -> Add 1 -> Mul x -> Mul 0.5 (or Mul 0.5 first). */
bool fuse_gelu(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *d = &g->nodes[i];
	if ((d->op != OP_Div && d->op != OP_Mul) || d->nin != 2 || d->nout != 1)
		return false;
	int x = d->in[0];
	if (!(d->op == OP_Div ? fuse_is_scalar(c, d->in[1], 1.4142135623730951)
	                      : fuse_is_scalar(c, d->in[1], 0.7071067811865476)))
		return false;
	int e = fuse_only_reader(c, d->out[0], OP_Erf);
	if (e == NONE)
		return false;
	int a = fuse_only_reader(c, g->nodes[e].out[0], OP_Add);
	if (a == NONE || !(fuse_is_scalar(c, g->nodes[a].in[0], 1) || fuse_is_scalar(c, g->nodes[a].in[1], 1)))
		return false;
	int m1 = fuse_only_reader(c, g->nodes[a].out[0], OP_Mul);
	if (m1 == NONE)
		return false;
	const Node *mn = &g->nodes[m1];
	int other = mn->in[0] == g->nodes[a].out[0] ? mn->in[1] : mn->in[0];
	int last_mul, xhalf = NONE;
	if (other == x) { /* Mul(x, 1 + erf) then Mul(., 0.5) */
		last_mul = fuse_only_reader(c, mn->out[0], OP_Mul);
		if (last_mul == NONE)
			return false;
		const Node *h = &g->nodes[last_mul];
		if (!fuse_is_scalar(c, h->in[h->in[0] == mn->out[0] ? 1 : 0], 0.5))
			return false;
	} else { /* Mul(x, 0.5) then Mul(that, 1 + erf) */
		const Value *ov = &g->values[other];
		if (ov->kind != VAL_TEMP || ov->producer == NONE || rw_sole_user(c, other) != m1)
			return false;
		const Node *h = &g->nodes[ov->producer];
		if (h->op != OP_Mul || h->nin != 2 || c->dead[ov->producer] ||
		    !((h->in[0] == x && fuse_is_scalar(c, h->in[1], 0.5)) ||
		      (h->in[1] == x && fuse_is_scalar(c, h->in[0], 0.5))))
			return false;
		xhalf = ov->producer;
		last_mul = m1;
	}
	/* x is read by exactly the pattern: Div and the Mul by x (or by 0.5). */
	if (g->values[x].nuse != 2)
		return false;
	int last;
	int p = epilogue_host(c, x, &last);
	if (p == NONE)
		return false;
	Node *pn = &g->nodes[p];
	set_act(pn, FACT_GELU, 0, 0);
	int y = g->nodes[last_mul].out[0];
	/* The five nodes: Div, Erf, Add, Mul, and the other Mul (by 0.5). */
	int members[5] = {i, e, a, m1, xhalf != NONE ? xhalf : last_mul};
	for (int k = 0; k < 5; k++) {
		fuse_note(c, pn, &g->nodes[members[k]]);
		rw_kill(c, members[k]);
	}
	fuse_take_output(c, last, y);
	return true;
}
