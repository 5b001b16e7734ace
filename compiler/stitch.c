/*
 * stitch.c - what libkiln's batch stitching (kiln_run) needs from the
 * compiler: the cost estimate of each compiled size, the batch axis of each
 * interface tensor, and the exact bytes of one context.
 *
 * The cost model. One call at a compiled size costs
 *
 *     ns = CALL_NS + NODE_NS * nodes + flops * NS_PER_FLOP + bytes * NS_PER_BYTE
 *
 * where flops counts multiply-adds as 2 (Gemm, MatMul, Conv, ConvTranspose,
 * the recurrent ops) and one operation per output element elsewhere, and
 * bytes are what every node reads and writes. The constants are rough
 * figures for the portable reference kernels on one core; they only need to
 * rank chunk sequences, and kiln_context_calibrate replaces the estimates
 * with measured times on the running machine (docs/batching.md).
 */
#include <string.h>

#include "stitch.h"
#include "opdef.h"
#include "kiln/run.h"

enum { CALL_NS = 60, NODE_NS = 8 };
static const double NS_PER_FLOP = 0.4, NS_PER_BYTE = 0.05;

static int64_t nelem_of(const Sig *s, int id)
{
	int64_t n = id == NONE ? 0 : shape_nelem(&s->shapes[id]);
	return n < 0 ? 0 : n;
}

static int64_t dim_or1(const Sig *s, int id, int k)
{
	const Shape *sh = &s->shapes[id];
	if (k < 0)
		k += sh->rank;
	return k >= 0 && k < sh->rank ? sh->dims[k].size : 1;
}

/* Multiply-adds (x2) of the ops that dominate, one op per output element
 * elsewhere. In double: products of two tensors' sizes may pass 2^64. */
static double node_flops(const Sig *s, const Node *n)
{
	double out = 0;
	for (int k = 0; k < n->nout; k++)
		out += (double)nelem_of(s, n->out[k]);
	int in0 = n->nin > 0 ? n->in[0] : NONE, in1 = n->nin > 1 ? n->in[1] : NONE;
	const OpDef *d = op_def(n->op);
	if (d && d->flops)
		return d->flops(s, n);
	switch (d ? d->cost : CK_ELEMENTS) {
	case CK_MATMUL:
		return 2 * out * (double)dim_or1(s, in0, -1);
	case CK_RECURRENT: {
		/* every step and row: W x and R h */
		int64_t in_size = dim_or1(s, in0, -1) ? dim_or1(s, in0, -1) : 1;
		int64_t rows = nelem_of(s, in0) / in_size;
		int64_t r = n->nin > 2 ? nelem_of(s, n->in[2]) : 0;
		return 2 * (double)rows * ((double)nelem_of(s, in1) + (double)r);
	}
	case CK_CONV: case CK_CONV_TRANSPOSE: {
		/* W is [Cout, Cin/group, k...] (Conv) or [Cin, Cout/group, k...]:
		 * per output (Conv) or input (ConvTranspose) element, nelem(W)/W[0] */
		int64_t w0 = in1 == NONE ? 1 : dim_or1(s, in1, 0);
		int64_t per = in1 == NONE ? 1 : nelem_of(s, in1) / (w0 ? w0 : 1);
		return 2 * (d->cost == CK_CONV_TRANSPOSE ? (double)nelem_of(s, in0) : out) * (double)per;
	}
	case CK_ELEMENTS:
		break;
	}
	double in = (double)nelem_of(s, in0);
	return in > out ? in : out;
}

void sig_cost(const Sig *s, SigCost *out)
{
	memset(out, 0, sizeof *out);
	Graph *g = s->g;
	int nodes = 0;
	double flops = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		if (!sig_computes(s, n))
			continue;
		/* An elementwise chain is one call, and its inner values are never
		 * in memory. */
		nodes += !(n->nout >= 1 && n->out[0] != NONE && sig_inline(s, n->out[0]));
		flops += node_flops(s, n);
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] != NONE && !sig_inline(s, n->in[k]))
				out->bytes += (uint64_t)nelem_of(s, n->in[k]) * dtype_size(s->dtypes[n->in[k]]);
		for (int k = 0; k < n->nout; k++)
			if (n->out[k] != NONE && !sig_inline(s, n->out[k]))
				out->bytes += (uint64_t)nelem_of(s, n->out[k]) * dtype_size(s->dtypes[n->out[k]]);
	}
	out->flops = flops < 0x1p63 ? (uint64_t)flops : (uint64_t)1 << 63;   /* saturated */
	out->ns = CALL_NS + NODE_NS * (double)nodes + flops * NS_PER_FLOP +
	          (double)out->bytes * NS_PER_BYTE;
}

/* Without a proof of batch independence the descriptor still names batch
 * axes for information: the one axis whose size is the batch times a
 * constant in every signature while the others stay put; with one
 * signature, axis 0 if it equals the batch. -1 if there is none. */
static int guess_batch_axis(const Sig *sigs, int nsigs, int id)
{
	const Shape *s0 = &sigs[0].shapes[id];
	for (int a = 0; a < s0->rank; a++) {
		int64_t d0 = s0->dims[a].size, b0 = sigs[0].batch;
		if (d0 % b0 || (nsigs == 1 && d0 != b0))
			continue;
		bool scales = true;
		for (int i = 1; i < nsigs && scales; i++) {
			const Shape *si = &sigs[i].shapes[id];
			for (int k = 0; k < s0->rank && scales; k++)
				scales = k == a ? si->dims[k].size == d0 / b0 * sigs[i].batch
				                : si->dims[k].size == s0->dims[k].size;
		}
		if (scales)
			return a;
	}
	return -1;
}

/* Bytes of an interface tensor at batch b, as libkiln computes them from
 * the descriptor (per-sample dims times b on the batch axis; 4-bit packed). */
static uint64_t tensor_bytes_at(const Sig *s0, int id, int axis, int64_t b)
{
	const Shape *sh = &s0->shapes[id];
	uint64_t n = 1;
	for (int k = 0; k < sh->rank; k++)
		n *= (uint64_t)(k == axis ? sh->dims[k].size / s0->batch * b : sh->dims[k].size);
	int dt = s0->dtypes[id];
	return DT_IS_4BIT(dt) ? dtype_bytes(dt, (int64_t)n) : n * (dtype_size(dt) ? dtype_size(dt) : 1);
}

void stitch_build(Model *m, const Sig *sigs, const Plan *plans, int nsigs, const BindOptions *o,
                  Stitch *out)
{
	memset(out, 0, sizeof *out);
	Graph *g = m->graph;
	batchdep_analyse(m, o, &out->dep);
	out->axis = arena_array(m->arena, (size_t)g->nvalues, sizeof *out->axis);
	for (int i = 0; i < g->nvalues; i++)
		out->axis[i] = -1;
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			int a = out->dep.independent ? out->dep.axis[id] : guess_batch_axis(sigs, nsigs, id);
			/* The descriptor's per-sample dims divide by the batch: a
			 * batch-independent axis always divides; a guess is checked. */
			if (a >= 0 && sigs[0].shapes[id].dims[a].size % sigs[0].batch)
				a = -1;
			out->axis[id] = a >= 0 ? a : -1;
		}
	}
	out->cost = arena_array(m->arena, (size_t)nsigs, sizeof *out->cost);
	for (int i = 0; i < nsigs; i++)
		sig_cost(&sigs[i], &out->cost[i]);
	int64_t maxb = 0;
	for (int i = 0; i < nsigs; i++)
		maxb = sigs[i].batch > maxb ? sigs[i].batch : maxb;
	out->maxb = maxb;
	out->plan_bound = KILN_PLAN_BOUND(maxb);
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			out->staging_bytes += KILN_ALIGN64(tensor_bytes_at(&sigs[0], id, out->axis[id], maxb));
		}
	}
	stitch_arenas(m, plans, nsigs, out);
}

void stitch_arenas(Model *m, const Plan *plans, int nsigs, Stitch *out)
{
	out->max_arena_bytes = 0;
	for (int i = 0; i < nsigs; i++)
		if (plans[i].arena_bytes > out->max_arena_bytes)
			out->max_arena_bytes = plans[i].arena_bytes;
	out->context_bytes = KILN_CONTEXT_BYTES(nsigs, out->plan_bound, out->staging_bytes,
	                                        out->max_arena_bytes);
	/* Every term is bounded (shape.c, plan.c): the sum cannot wrap. */
	if (out->context_bytes > (uint64_t)m->limits.max_arena_bytes)
		diag_fail(m->diag, KILN_LIMIT, "one kiln_run context needs %llu bytes (arena %lld, staging "
		          "%llu for batch %lld), more than the limit of %lld MiB (raise it with --max-arena)",
		          (unsigned long long)out->context_bytes, (long long)out->max_arena_bytes,
		          (unsigned long long)out->staging_bytes, (long long)out->maxb,
		          (long long)(m->limits.max_arena_bytes >> 20));
}
