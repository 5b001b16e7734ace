/*
 * ops/edgeconv.c - the fused kNN EdgeConv and kNN nodes that
 * passes/edgeconv.c makes (kiln's own ops KilnEdgeConv and KilnKnn,
 * ops_kiln.def): their shape inference, kernel parameters, arena scratch and
 * records.
 *
 * Inputs: x [N, C, P] float32, idx [N, P, k] int64, then per layer l its
 * weight and optional bias: layer 0's as [2 C1, C] ([Wa - Wb; Wb]), the
 * others' as Conv weights [Cl, C(l-1), 1, 1], so L = (inputs - 2) / 2.
 * Output [N, CL, P] (with a trailing 1 under kiln.edge_keepdims).
 */
#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

/* The kernel's parameters but the weights (the emitter's): shapes, the
 * aggregation and each layer's activation, resolved from the node's kiln.*
 * attributes. */
static void params(Infer *x, kiln_edgeconv_params *p)
{
	const Node *n = x->n;
	int L = (n->nin - 2) / 2;
	if (L < 1 || L > KILN_EDGECONV_MAX_LAYERS || n->nin != 2 + 2 * L || n->nout != 1)
		infer_fail(x, KILN_INVALID_MODEL, "malformed fused EdgeConv node");
	const Shape *xs = infer_shape(x, 0), *is = infer_shape(x, 1);
	if (xs->rank != 3 || is->rank != 3 || infer_dtype(x, 0) != DT_FLOAT ||
	    infer_dtype(x, 1) != DT_INT64 || is->dims[0].size != xs->dims[0].size ||
	    is->dims[1].size != xs->dims[2].size)
		infer_fail(x, KILN_INVALID_MODEL, "fused EdgeConv: x [N, C, P] and idx [N, P, k] "
		           "do not fit");
	*p = (kiln_edgeconv_params){.batch = xs->dims[0].size, .channels = xs->dims[1].size,
	                            .points = xs->dims[2].size, .k = is->dims[2].size,
	                            .nlayers = L,
	                            .aggregate = attr_int(x, "kiln.edge_max", 0)
	                                                 ? KILN_EDGECONV_MAX : KILN_EDGECONV_MEAN};
	int64_t cin = p->channels;
	for (int l = 0; l < L; l++) {
		const Shape *w = infer_shape(x, 2 + 2 * l);
		bool ok = l == 0 ? w->rank == 2 && w->dims[1].size == cin && w->dims[0].size % 2 == 0
		                 : w->rank == 4 && w->dims[1].size == cin;
		p->width[l] = l == 0 ? w->dims[0].size / 2 : w->dims[0].size;
		if (!ok || p->width[l] < 1)
			infer_fail(x, KILN_INVALID_MODEL, "fused EdgeConv: layer %d's weight does not fit", l);
		cin = p->width[l];
	}
	/* kiln.edge_relu: per layer, 1 when a Relu follows it (passes/edgeconv.c) */
	const Attr *relu = node_attr(n, "kiln.edge_relu");
	if (relu && (relu->type != AT_INTS || relu->n > L))
		infer_fail(x, KILN_INVALID_MODEL, "fused EdgeConv: kiln.edge_relu must be at most %d ints",
		           L);
	for (int l = 0; l < L; l++)
		p->act[l].act = relu && l < relu->n && relu->ints[l] ? KILN_ACT_RELU : KILN_ACT_NONE;
}

void edgeconv_params(Infer *x, kiln_edgeconv_params *p)
{
	params(x, p);
}

static void edgeconv_infer(Infer *x)
{
	kiln_edgeconv_params p;
	params(x, &p);
	bool keep = attr_int(x, "kiln.edge_keepdims", 0) != 0;
	Shape y = {.rank = keep ? 4 : 3};
	y.dims[0].size = p.batch;
	y.dims[1].size = p.width[p.nlayers - 1];
	y.dims[2].size = p.points;
	if (keep)
		y.dims[3].size = 1;
	infer_set_output(x, 0, DT_FLOAT, &y);
}

static int64_t edgeconv_scratch_bytes(const Sig *s, int node, Arena *a)
{
	Node *n = &s->g->nodes[node];
	Infer inf = {.sig = (Sig *)s, .g = s->g, .n = n, .a = a};
	kiln_edgeconv_params p;
	params(&inf, &p);
	return kiln_f32_edgeconv_work(&p) * (int64_t)sizeof(float);
}

/* The stitching model's cost: layer 0 as two products per point (the
 * point's and its neighbours' halves, [Wa - Wb; Wb]), every later layer
 * once per point and neighbour, the aggregation once per edge. */
static double edgeconv_flops(const Sig *s, const Node *n)
{
	const Shape *xs = &s->shapes[n->in[0]], *is = &s->shapes[n->in[1]];
	if (xs->rank != 3 || is->rank != 3)
		return 0;
	double points = (double)xs->dims[0].size * (double)xs->dims[2].size;
	double k = (double)is->dims[2].size, flops = 0, cin = (double)xs->dims[1].size;
	for (int l = 0; 2 + 2 * l < n->nin; l++) {
		const Shape *w = &s->shapes[n->in[2 + 2 * l]];
		double width = (double)(l == 0 ? w->dims[0].size / 2 : w->dims[0].size);
		flops += l == 0 ? 2 * points * 2 * width * cin : 2 * points * k * width * cin;
		cin = width;
	}
	return flops + points * k * cin;
}

/* ---- the fused kNN: KilnKnn reading pts [N, C, P] and k ------------------ */

static void knn_infer(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	int64_t n;
	const int64_t *k = infer_require_ints(x, 1, &n);
	if (in->rank != 3 || infer_dtype(x, 0) != DT_FLOAT || n != 1 || k[0] < 1 ||
	    k[0] > in->dims[2].size || x->n->nout != 2)
		infer_fail(x, KILN_INVALID_MODEL, "malformed fused kNN node");
	Shape y = {.rank = 3};
	y.dims[0].size = in->dims[0].size;
	y.dims[1].size = in->dims[2].size;
	y.dims[2].size = k[0];
	infer_set_output(x, 1, DT_INT64, &y);
}

/* Pairwise distances (a product of the points with themselves) and the
 * selection of k per point. */
static double knn_flops(const Sig *s, const Node *n)
{
	const Shape *in = &s->shapes[n->in[0]];
	if (in->rank != 3)
		return 0;
	double N = (double)in->dims[0].size, C = (double)in->dims[1].size,
	       P = (double)in->dims[2].size;
	return 2 * N * P * P * C + N * P * P;
}

static int64_t knn_scratch_bytes(const Sig *s, int node, Arena *a)
{
	(void)a;
	const Node *n = &s->g->nodes[node];
	const Shape *in = &s->shapes[n->in[0]], *y = &s->shapes[n->out[1]];
	return kiln_f32_knn_work(in->dims[1].size, in->dims[2].size, y->dims[2].size) *
	       (int64_t)sizeof(float);
}

/* ---- the records (opdef.h) ----------------------------------------------- */

const OpDef ops_edgeconv_defs[] = {
	{.op = OP_KilnEdgeConv, .infer = edgeconv_infer, .emit = emit_edgeconv,
	 .emit_returns = true, .batch = BK_N_FIRST, .row_inputs = 1u << 1, .scratch = edgeconv_scratch_bytes,
	 .flops = edgeconv_flops,
	 .types = OT_F32,
	 .note = "ParticleNet's kNN EdgeConv block: neighbours' features [x_i, x_j - x_i], up to 8 "
	         "1x1 Conv layers with Relu or none, mean or max over the k neighbours "
	         "(passes/edgeconv.c)"},
	{.op = OP_KilnKnn, .infer = knn_infer, .emit = emit_knn, .emit_returns = true,
	 .flops = knn_flops, .batch = BK_ALONG_AXIS, .along = "ranks the nearest points",
	 .axis = infer_last_axis,
	 .index = IF_TOPK_INDICES, .shape_inputs = 1u << 1, .scratch = knn_scratch_bytes,
	 .types = OT_F32,
	 .note = "the indices of the k nearest points of each point of pts [N, C, P] (output 1; "
	         "output 0 unused), from TopK of the pairwise distance (passes/edgeconv.c)"},
	{.op = NONE},
};
