/*
 * passes/edgeconv.c - the kNN EdgeConv block of ParticleNet / DGCNN, as
 * PyTorch exports it, becomes one node that never builds the [N, 2C, P, k]
 * edge tensor (runtime/kernels/f32-edgeconv).
 *
 * The pattern, read backwards from the aggregation, by what it computes
 * rather than one export's node order (tests/realmodels/particlenet.py:
 * the bench's export, weaver-core's ParticleNet at opsets 11/13/17, a
 * GatherND one):
 *
 *     ReduceMean|ReduceMax over the last axis (k) of
 *       Conv 1x1 (+ Relu epilogue) ... Conv 1x1 (+ Relu)   each read once
 *         Concat(axis 1) [E, Sub(T, E)]                   [x_i ; x_j - x_i]
 *           E [N,C,P,k]: x through Unsqueeze or Reshape to [N,C,P,1], then
 *             Expand / Tile steps keeping the first three dims (x_i k times)
 *           T [N,C,P,k], the neighbours, one of
 *             Transpose[0,3,1,2](Reshape [N,P,k,C](Gather(axis 0,
 *               Reshape [N*P, C](Transpose[0,2,1](x)), Reshape [N*P*k](Add(idx, base)))))
 *             Transpose[1,0,2,3](Reshape [C,N,P,k](Gather(axis 1,
 *               Reshape [C, N*P](Transpose[1,0,2](x)), Reshape [N*P*k](Add(idx, base)))))
 *             Transpose[0,3,1,2](Reshape [N,P,k,C](GatherND(batch_dims 1,
 *               Transpose[0,2,1](x), Reshape [N, P*k, 1](idx))))
 *     idx [N,P,k] int64 from TopK's indices (through a Slice), over an axis
 *     of P elements, so 0 <= idx < P; base holds n*P in every compiled
 *     signature (folded shape arithmetic: Range(0, N) * P).
 *
 * The Gather then reads neighbours of the same sample only, so the fused
 * node takes idx itself: the flat index arithmetic dies and the node is
 * batch-independent. The result is a KilnEdgeConv node (kiln's own op,
 * ops/edgeconv.c) with inputs (x, idx, W0', b0, W1, b1, ...) for its L
 * layers, kiln.edge_relu (per
 * layer), kiln.edge_max (0: mean) and kiln.edge_keepdims; W0' [2 C1, C] =
 * [Wa - Wb; Wb] replaces W0 = [Wa Wb] (the same bytes count: W0 must have no
 * other reader). Layers must be float32 1x1 Convs (group 1, no padding,
 * strides and dilations 1) with constant weights read only there, their
 * activation none or Relu fused by fuse.c (so this runs after fuse), each
 * output read once. Anything else leaves the graph as it is.
 *
 * Needs shapes (skipped without them); guarantees nothing else; fuse.c
 * matches Conv only, so it leaves a KilnEdgeConv node alone.
 */
#include <string.h>

#include "kiln/kernels.h"
#include "rewrite.h"

enum { MAX_LAYERS = KILN_EDGECONV_MAX_LAYERS };

static bool once(PassCtx *c, int id);


static bool perm_is(const Node *t, const int64_t *p, int n)
{
	const Attr *a = rw_attr(t, "perm");
	if (!a || a->type != AT_INTS || a->n != n)
		return false;
	for (int i = 0; i < n; i++)
		if (a->ints[i] != p[i])
			return false;
	return true;
}

/* Shape of id in signature k is exactly these dims. */
static bool dims_are(PassCtx *c, int id, int k, const int64_t *d, int rank)
{
	const Shape *s = rw_shape_in(c, id, k);
	if (!s || s->rank != rank)
		return false;
	for (int i = 0; i < rank; i++)
		if (s->dims[i].size != d[i])
			return false;
	return true;
}

/* A 1x1 float32 Conv with a constant weight [M, Cin, 1, 1] read only here,
 * an optional constant bias, no residual, and activation none or Relu. */
static bool plain_1x1(PassCtx *c, const Node *n, int64_t cin, int64_t *cout, bool *relu)
{
	if (n->op != OP_Conv || n->nout != 1 || n->nin < 2 || n->nin > 3 ||
	    n->fused.residual ||
	    rw_attr_int(n, "group", 1) != 1)
		return false;
	static const char *const ones[] = {"strides", "dilations"};
	for (int i = 0; i < 2; i++) {
		const Attr *a = rw_attr(n, ones[i]);
		for (int j = 0; a && j < a->n; j++)
			if (a->type != AT_INTS || a->ints[j] != 1)
				return false;
	}
	if (!rw_conv_unpadded(n))
		return false;
	int w = n->in[1];
	const Value *wv = &c->g->values[w];
	if (!rw_is_const(c, w) || wv->dtype != DT_FLOAT || wv->nuse != 1 || wv->shape.rank != 4 ||
	    wv->shape.dims[1].size != cin || wv->shape.dims[2].size != 1 ||
	    wv->shape.dims[3].size != 1)
		return false;
	*cout = wv->shape.dims[0].size;
	if (n->nin == 3 && n->in[2] != NONE) {
		const Value *bv = &c->g->values[n->in[2]];
		if (!rw_is_const(c, n->in[2]) || bv->dtype != DT_FLOAT || bv->shape.rank != 1 ||
		    bv->shape.dims[0].size != *cout)
			return false;
	}
	*relu = n->fused.act != FACT_NONE;
	return n->fused.act == FACT_NONE || n->fused.act == FACT_RELU;
}

/* The reduction over the last axis of a rank-4 value: its kind, or -1. */
static int last_axis_reduce(PassCtx *c, const Node *r, bool *keepdims)
{
	if ((r->op != OP_ReduceMean && r->op != OP_ReduceMax) || r->nout != 1)
		return -1;
	int64_t n = 0;
	const int64_t *axes = NULL;
	double *from_input = NULL;
	const Attr *a = rw_attr(r, "axes");
	if (r->nin >= 2 && r->in[1] != NONE) {
		from_input = rw_const_f64(c, r->in[1], &n, KILN_MAX_RANK);
		if (!from_input)
			return -1;
	} else if (a && a->type == AT_INTS) {
		axes = a->ints, n = a->n;
	}
	if (n != 1)
		return -1;
	int64_t ax = from_input ? (int64_t)from_input[0] : axes[0];
	if (ax != -1 && ax != 3)
		return -1;
	*keepdims = rw_attr_int(r, "keepdims", 1) != 0;
	return r->op == OP_ReduceMax;
}

/* The points P of x [N, C, P] in signature k: with buckets on the particle
 * axis (compile --dim P=16,32,...) it differs between signatures. */
static int64_t points_in(PassCtx *c, int x, int k)
{
	const Shape *s = rw_shape_in(c, x, k);
	return s && s->rank == 3 ? s->dims[2].size : -1;
}

/* base holds n*P at row n, shaped [N, 1, 1], in every signature (P of x's). */
static bool is_sample_base(PassCtx *c, int base, int x)
{
	for (int k = 0; k < c->nsigs; k++) {
		int64_t P = points_in(c, x, k);
		const Folded *f = c->sigs[k].folded[base];
		const Shape *s = rw_shape_in(c, base, k);
		int64_t N = c->sigs[k].batch;
		if (!f || !s || f->dtype != DT_INT64 || f->nelem != N || s->rank != 3 ||
		    s->dims[1].size != 1 || s->dims[2].size != 1)
			return false;
		for (int64_t n = 0; n < N; n++) {
			int64_t v;
			memcpy(&v, (const char *)f->data + 8 * n, 8);
			if (v != n * P)
				return false;
		}
	}
	return true;
}

/* idx [N, P, k] int64 comes from TopK's indices over an axis of P elements
 * (directly or through a Slice of them): every value is in [0, P). */
static bool local_indices(PassCtx *c, int idx, int x)
{
	const Node *s = rw_made_by(c, idx, OP_Slice);
	int from = s ? s->in[0] : idx;
	const Node *t = rw_made_by(c, from, OP_TopK), *knn = rw_made_by(c, from, OP_KilnKnn);
	if (knn)
		t = knn;
	if (!t || t->nout < 2 || t->out[1] != from)
		return false;
	for (int k = 0; k < c->nsigs; k++) {
		int64_t P = points_in(c, x, k);
		const Shape *in = rw_shape_in(c, t->in[0], k);
		if (!in || in->rank < 1)
			return false;
		if (knn) {   /* fuse_knn's: over pts' P points */
			if (in->rank != 3 || in->dims[2].size != P)
				return false;
			continue;
		}
		int64_t ax = rw_attr_int(t, "axis", -1);
		if (ax < 0)
			ax += in->rank;
		if (ax < 0 || ax >= in->rank || in->dims[ax].size != P)
			return false;
	}
	return true;
}

typedef struct Match {
	int x, idx;                  /* [N, C, P] features; [N, P, k] int64 neighbours */
	int nlayers;
	Node *conv[MAX_LAYERS];
	bool relu[MAX_LAYERS];
	int64_t width[MAX_LAYERS];
	int64_t C, P, k;
} Match;

/* E [N, C, P, k] holds x_i k times: x [N, C, P] through a Reshape or
 * Unsqueeze to [N, C, P, 1], then Expand and Tile steps that keep the first
 * three dims (so they only repeat along the last: weaver's
 * x.view(N, C, P, 1).repeat(1, 1, 1, k) exports as Reshape, Expand, Tile;
 * x.unsqueeze(-1).expand(...) as Unsqueeze, Expand). Each step but E is read
 * once. x, or NONE. */
static int repeated_centre(PassCtx *c, int e)
{
	int at = e;
	for (int steps = 0; steps < 4; steps++) {
		const Node *n = rw_made_by(c, at, OP_Expand);
		if (!n)
			n = rw_made_by(c, at, OP_Tile);
		if (n) {
			if (at != e && !once(c, at))
				return NONE;
			for (int k = 0; k < c->nsigs; k++) {
				const Shape *si = rw_shape_in(c, n->in[0], k), *so = rw_shape_in(c, at, k);
				if (!si || !so || si->rank != 4 || so->rank != 4)
					return NONE;
				for (int d = 0; d < 3; d++)
					if (si->dims[d].size != so->dims[d].size)
						return NONE;
			}
			at = n->in[0];
			continue;
		}
		n = rw_made_by(c, at, OP_Unsqueeze);
		if (!n)
			n = rw_made_by(c, at, OP_Reshape);
		if (!n || at == e || !once(c, at))
			return NONE;
		int x = n->in[0];
		for (int k = 0; k < c->nsigs; k++) {
			const Shape *sx = rw_shape_in(c, x, k);
			if (!sx || sx->rank != 3)
				return NONE;
			int64_t du[4] = {sx->dims[0].size, sx->dims[1].size, sx->dims[2].size, 1};
			if (!dims_are(c, at, k, du, 4))
				return NONE;
		}
		return x;
	}
	return NONE;
}

/* The batch_dims form (TensorFlow's gather(batch_dims=1)): GatherND with
 * batch_dims 1 of Transpose[0,2,1](x) [N, P, C] at Reshape[N, P*k, 1](idx),
 * then rs: Reshape [N, P, k, C]. No flat index: idx [N, P, k] indexes each
 * sample's own points. */
static bool batched_neighbours(PassCtx *c, const Node *nd, const Node *rs, int *x, int *idx)
{
	static const int64_t p021[3] = {0, 2, 1};
	const Node *xt = rw_made_by(c, nd->in[0], OP_Transpose);
	const Node *ir = rw_made_by(c, nd->in[1], OP_Reshape);
	if (rw_attr_int(nd, "batch_dims", 0) != 1 || !xt || !perm_is(xt, p021, 3) || !ir ||
	    !once(c, nd->in[1]))
		return false;
	*x = xt->in[0];
	*idx = ir->in[0];
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *sx = rw_shape_in(c, *x, k), *sr = rw_shape_in(c, rs->out[0], k);
		if (!sx || sx->rank != 3 || !sr || sr->rank != 4)
			return false;
		int64_t N = c->sigs[k].batch, C = sx->dims[1].size, P = sx->dims[2].size;
		int64_t K = sr->dims[2].size;
		int64_t dd[3] = {N, P, C}, di[3] = {N, P * K, 1}, dg[3] = {N, P * K, C};
		int64_t dr[4] = {N, P, K, C};
		if (!dims_are(c, nd->in[0], k, dd, 3) || !dims_are(c, nd->in[1], k, di, 3) ||
		    !dims_are(c, nd->out[0], k, dg, 3) || !dims_are(c, rs->out[0], k, dr, 4))
			return false;
	}
	return true;
}

/* The neighbours' features T [N, C, P, k] gathered from x at the flat index
 * fi [N*P*k] (the sample's base plus its neighbour index), either way
 * PyTorch writes it (weaver-core's get_graph_feature v1 and v2):
 *   axis 0:  Transpose[0,3,1,2](Reshape[N,P,k,C](Gather(axis 0,
 *              Reshape[N*P, C](Transpose[0,2,1](x)), fi)))
 *   axis 1:  Transpose[1,0,2,3](Reshape[C,N,P,k](Gather(axis 1,
 *              Reshape[C, N*P](Transpose[1,0,2](x)), fi)))
 * Sets *x and *fi; false if T is neither. */
static bool gathered_neighbours(PassCtx *c, int t, int *x, int *fi, int *idx)
{
	static const int64_t p0312[4] = {0, 3, 1, 2}, p021[3] = {0, 2, 1};
	static const int64_t p1023[4] = {1, 0, 2, 3}, p102[3] = {1, 0, 2};
	const Node *tr = rw_made_by(c, t, OP_Transpose);
	if (!tr)
		return false;
	int axis = perm_is(tr, p0312, 4) ? 0 : perm_is(tr, p1023, 4) ? 1 : -1;
	const Node *rs = axis >= 0 ? rw_made_by(c, tr->in[0], OP_Reshape) : NULL;
	if (!rs || !once(c, tr->in[0]) || !once(c, rs->in[0]))
		return false;
	const Node *nd = axis == 0 ? rw_made_by(c, rs->in[0], OP_GatherND) : NULL;
	if (nd)
		return batched_neighbours(c, nd, rs, x, idx);
	*idx = NONE;
	const Node *ga = rw_made_by(c, rs->in[0], OP_Gather);
	if (!ga || rw_attr_int(ga, "axis", 0) != axis)
		return false;
	const Node *flat = rw_made_by(c, ga->in[0], OP_Reshape);
	const Node *xt = flat ? rw_made_by(c, flat->in[0], OP_Transpose) : NULL;
	if (!xt || !perm_is(xt, axis == 0 ? p021 : p102, 3))
		return false;
	*x = xt->in[0];
	*fi = ga->in[1];
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *sx = rw_shape_in(c, *x, k), *st = rw_shape_in(c, t, k);
		if (!sx || sx->rank != 3 || !st || st->rank != 4)
			return false;
		int64_t N = c->sigs[k].batch, C = sx->dims[1].size, P = sx->dims[2].size;
		int64_t K = st->dims[3].size;
		int64_t df0[2] = {N * P, C}, dg0[2] = {N * P * K, C}, dr0[4] = {N, P, K, C};
		int64_t df1[2] = {C, N * P}, dg1[2] = {C, N * P * K}, dr1[4] = {C, N, P, K};
		if (!dims_are(c, ga->in[0], k, axis ? df1 : df0, 2) ||
		    !dims_are(c, ga->out[0], k, axis ? dg1 : dg0, 2) ||
		    !dims_are(c, rs->out[0], k, axis ? dr1 : dr0, 4))
			return false;
	}
	return true;
}

/* The edge features [x_i ; x_j - x_i] that concat makes, or false. */
static bool edge_features(PassCtx *c, const Node *cat, Match *m)
{
	if (cat->op != OP_Concat || cat->nin != 2 || cat->nout != 1 ||
	    rw_attr_int(cat, "axis", 0) != 1)
		return false;
	int e = cat->in[0], fi = NONE;
	const Node *sub = rw_made_by(c, cat->in[1], OP_Sub);
	if (!sub || sub->in[1] != e || c->g->values[e].nuse != 2 ||
	    rw_sole_user(c, cat->in[1]) == NONE || rw_pinned(c, e))
		return false;
	int xc = repeated_centre(c, e);
	if (xc == NONE || !gathered_neighbours(c, sub->in[0], &m->x, &fi, &m->idx) || m->x != xc ||
	    rw_dtype(c, m->x) != DT_FLOAT)
		return false;
	const Shape *x0 = rw_shape_in(c, m->x, 0), *e0 = rw_shape_in(c, e, 0);
	if (!x0 || x0->rank != 3 || !e0 || e0->rank != 4)
		return false;
	m->C = x0->dims[1].size, m->P = x0->dims[2].size, m->k = e0->dims[3].size;
	const Node *add = NULL;
	if (m->idx == NONE) {
		/* the flat index: Reshape(idx + base), either way round */
		const Node *ir = rw_made_by(c, fi, OP_Reshape);
		add = ir ? rw_made_by(c, ir->in[0], OP_Add) : NULL;
		if (!add)
			return false;
		bool swapped = !is_sample_base(c, add->in[1], m->x);
		m->idx = add->in[swapped ? 1 : 0];
		if (swapped && !is_sample_base(c, add->in[0], m->x))
			return false;
	}
	if (rw_dtype(c, m->idx) != DT_INT64 || !local_indices(c, m->idx, m->x) || m->C < 1 ||
	    m->P < 1 || m->k < 1)
		return false;
	for (int k = 0; k < c->nsigs; k++) {
		int64_t N = c->sigs[k].batch, C = m->C, P = points_in(c, m->x, k), K = m->k;
		int64_t dx[3] = {N, C, P}, de[4] = {N, C, P, K};
		int64_t di[3] = {N, P, K}, dir[1] = {N * P * K};
		if (!dims_are(c, m->x, k, dx, 3) || !dims_are(c, e, k, de, 4) ||
		    !dims_are(c, m->idx, k, di, 3) || (add && !dims_are(c, add->out[0], k, di, 3)) ||
		    (add && !dims_are(c, fi, k, dir, 1)) || !dims_are(c, sub->out[0], k, de, 4) ||
		    !dims_are(c, sub->in[0], k, de, 4))
			return false;
	}
	return true;
}

/* W0 [C1, 2C, 1, 1] -> [2 C1, C] = [Wa - Wb; Wb]. */
static int split_first_weight(PassCtx *c, int w, int64_t C1, int64_t C, const char *name)
{
	int64_t n = 2 * C1 * C;
	float *src = arena_array(c->a, (size_t)n, sizeof *src);
	float *d = arena_array(c->a, (size_t)n, sizeof *d);
	memcpy(src, c->g->values[w].weight->bytes, (size_t)n * sizeof *src);
	for (int64_t o = 0; o < C1; o++)
		for (int64_t i = 0; i < C; i++) {
			float a = src[o * 2 * C + i], b = src[o * 2 * C + C + i];
			d[o * C + i] = a - b;
			d[(C1 + o) * C + i] = b;
		}
	Shape s = {.rank = 2};
	s.dims[0].size = 2 * C1;
	s.dims[1].size = C;
	return rw_new_const(c, arena_printf(c->a, "%s.split", name), DT_FLOAT, &s, d);
}

static bool fuse_edgeconv(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *red = &g->nodes[i];
	bool keepdims;
	int how = last_axis_reduce(c, red, &keepdims);
	if (how < 0 || rw_dtype(c, red->in[0]) != DT_FLOAT)
		return false;
	/* the Conv chain, last layer first */
	Match m = {0};
	Node *chain[MAX_LAYERS + 1];
	int n = 0, at = red->in[0];
	const Node *cat = NULL;
	for (;;) {
		Node *cv = rw_made_by(c, at, OP_Conv);
		if (!cv || n == MAX_LAYERS || rw_sole_user(c, at) == NONE)
			return false;
		chain[n++] = cv;
		const Node *prev = rw_made_by(c, cv->in[0], OP_Concat);
		if (prev && rw_sole_user(c, cv->in[0]) != NONE && edge_features(c, prev, &m)) {
			cat = prev;
			break;
		}
		at = cv->in[0];
	}
	(void)cat;
	m.nlayers = n;
	int64_t cin = 2 * m.C;
	for (int l = 0; l < n; l++) {
		m.conv[l] = chain[n - 1 - l];
		if (!plain_1x1(c, m.conv[l], cin, &m.width[l], &m.relu[l]))
			return false;
		cin = m.width[l];
	}
	const Node *last = m.conv[n - 1];
	for (int k = 0; k < c->nsigs; k++) {
		int64_t dl[4] = {c->sigs[k].batch, m.width[n - 1], points_in(c, m.x, k), m.k};
		if (!dims_are(c, last->out[0], k, dl, 4))
			return false;
	}
	const char *name = red->name[0] ? red->name : "edgeconv";
	int in[2 + 2 * MAX_LAYERS];
	in[0] = m.x, in[1] = m.idx;
	for (int l = 0; l < n; l++) {
		const Node *cv = m.conv[l];
		in[2 + 2 * l] = l == 0 ? split_first_weight(c, cv->in[1], m.width[0], m.C, name)
		                       : cv->in[1];
		in[3 + 2 * l] = cv->nin == 3 ? cv->in[2] : NONE;
	}
	int64_t relu[MAX_LAYERS];
	for (int l = 0; l < n; l++)
		relu[l] = m.relu[l];
	Attr at3[3] = {
		rw_ints_attr(c, "kiln.edge_relu", relu, n),
		rw_int_attr(c, "kiln.edge_max", how), rw_int_attr(c, "kiln.edge_keepdims", keepdims),
	};
	const char *members = arena_printf(c->a, "kNN EdgeConv: Gather, Sub, Concat, %d Conv, %s \"%s\"",
	                                   n, red->op_type, red->name);
	int y = red->out[0];
	/* the reduction's output moves to the new node */
	rw_kill(c, i);
	int p = rw_add_fused(c, i, OP_KilnEdgeConv, in, 2 + 2 * n, &y, 1, at3, 3, name);
	c->pending[p].node.fused.members = members;
	for (int l = 0; l < n; l++)
		rw_kill(c, (int)(m.conv[l] - g->nodes));
	c->stat->fused += n + 1;
	return true;
}

/* ---- the kNN -------------------------------------------------------------- */

/* A constant scalar (any rank, one element) equal to v. */
static bool const_is(PassCtx *c, int id, double v)
{
	int64_t n;
	double *d = rw_const_f64(c, id, &n, 1);
	return d && n == 1 && d[0] == v;
}

/* id read once, by the node the pattern continues with. */
static bool once(PassCtx *c, int id)
{
	return rw_sole_user(c, id) != NONE;
}

/* pts if id is Transpose[0,2,1](pts), else NONE. */
static int transposed_3d(PassCtx *c, int id)
{
	static const int64_t p021[3] = {0, 2, 1};
	const Node *t = rw_made_by(c, id, OP_Transpose);
	return t && perm_is(t, p021, 3) && once(c, id) ? t->in[0] : NONE;
}

/* The pairwise-distance expression, read as a sum of terms with constant
 * coefficients: MM = pts^T pts (MatMul(Transpose[0,2,1](pts), pts)), SQ =
 * ReduceSum(pts * pts or Pow(pts, 2), axis 1, keepdims) [N, 1, P] (|x_j|^2)
 * and SQT = Transpose[0,2,1](SQ) [N, P, 1] (|x_i|^2), through Add, Sub, Neg
 * and Mul by a constant scalar, each intermediate read once. */
typedef struct Dist {
	double mm, sq, sqt;
	int pts, sqv;         /* NONE until seen */
	int terms;
} Dist;

static bool sq_term(PassCtx *c, int id, Dist *d)
{
	const Node *rs = rw_made_by(c, id, OP_ReduceSum);
	if (!rs || rw_attr_int(rs, "keepdims", 1) != 1 || !once(c, rs->in[0]) || rw_pinned(c, id))
		return false;
	const Attr *axes = rw_attr(rs, "axes");   /* an attribute before opset 13 */
	if (rs->nin == 2 ? !const_is(c, rs->in[1], 1)
	                 : !axes || axes->type != AT_INTS || axes->n != 1 || axes->ints[0] != 1)
		return false;
	const Node *sq = rw_made_by(c, rs->in[0], OP_Mul);
	int pts;
	if (sq && sq->in[0] == sq->in[1]) {
		pts = sq->in[0];
	} else if ((sq = rw_made_by(c, rs->in[0], OP_Pow)) && const_is(c, sq->in[1], 2.0)) {
		pts = sq->in[0];
	} else {
		return false;
	}
	if ((d->pts != NONE && d->pts != pts) || (d->sqv != NONE && d->sqv != id))
		return false;
	d->pts = pts, d->sqv = id;
	return true;
}

/* Read once by the expression; SQ is read twice (itself and transposed),
 * its uses counted at the end. */
static bool operand(PassCtx *c, int id)
{
	return once(c, id) || rw_made_by(c, id, OP_ReduceSum);
}

static bool dist_terms(PassCtx *c, int id, double coef, Dist *d, int depth)
{
	if (depth > 8 || ++d->terms > 12)
		return false;
	const Node *n = rw_made_by(c, id, OP_Add);
	if (!n)
		n = rw_made_by(c, id, OP_Sub);
	if (n && n->nin == 2 && n->in[0] != n->in[1]) {
		if (!operand(c, n->in[0]) || !operand(c, n->in[1]))
			return false;
		return dist_terms(c, n->in[0], coef, d, depth + 1) &&
		       dist_terms(c, n->in[1], n->op == OP_Sub ? -coef : coef, d, depth + 1);
	}
	if ((n = rw_made_by(c, id, OP_Neg)))
		return operand(c, n->in[0]) && dist_terms(c, n->in[0], -coef, d, depth + 1);
	if ((n = rw_made_by(c, id, OP_Mul)) && n->nin == 2) {
		for (int s = 0; s < 2; s++) {
			int64_t nk;
			double *k = rw_const_f64(c, n->in[s], &nk, 1);
			if (k && nk == 1)
				return operand(c, n->in[1 - s]) &&
				       dist_terms(c, n->in[1 - s], coef * k[0], d, depth + 1);
		}
	}
	if ((n = rw_made_by(c, id, OP_MatMul))) {
		int pts = n->in[1];
		if (transposed_3d(c, n->in[0]) != pts || (d->pts != NONE && d->pts != pts))
			return false;
		d->pts = pts, d->mm += coef;
		return true;
	}
	if (rw_made_by(c, id, OP_Transpose)) {   /* SQT: read once here, SQ twice in all */
		const Node *t = rw_made_by(c, id, OP_Transpose);
		static const int64_t p021[3] = {0, 2, 1};
		if (!perm_is(t, p021, 3) || !sq_term(c, t->in[0], d))
			return false;
		d->sqt += coef;
		return true;
	}
	if (!sq_term(c, id, d))
		return false;
	d->sq += coef;
	return true;
}

/* TopK(K, largest, sorted, last axis) of 2 pts^T pts - |x_j|^2 - |x_i|^2
 * written in any order (the bench's (2 mm - sq) - sq^T, weaver's
 * (-sq - (-2 mm)) - sq^T, with Mul or Pow squares): its indices from one
 * kiln_f32_knn (a KilnKnn node reading pts), the [N, P, P] matrix
 * and its Mul, Sub, Transpose never made. The values must be unused. */
static bool fuse_knn(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *t = &g->nodes[i];
	if (t->op != OP_TopK || t->since < 11 || t->nin != 2 || t->nout != 2 ||
	    rw_attr_int(t, "largest", 1) != 1 ||
	    rw_attr_int(t, "sorted", 1) != 1 || t->out[1] == NONE ||
	    (t->out[0] != NONE && (g->values[t->out[0]].nuse != 0 || rw_pinned(c, t->out[0]))))
		return false;
	int64_t axis = rw_attr_int(t, "axis", -1), nk;
	double *K = rw_const_f64(c, t->in[1], &nk, 1);
	if ((axis != -1 && axis != 2) || !K || nk != 1 || K[0] < 1 || !once(c, t->in[0]))
		return false;
	Dist d = {0, 0, 0, NONE, NONE, 0};
	if (!dist_terms(c, t->in[0], 1.0, &d, 0) || d.mm != 2.0 || d.sq != -1.0 || d.sqt != -1.0 ||
	    g->values[d.sqv].nuse != 2)
		return false;
	int pts = d.pts;
	if (rw_dtype(c, pts) != DT_FLOAT)
		return false;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *s = rw_shape_in(c, pts, k);
		if (!s || s->rank != 3 || s->dims[0].size != c->sigs[k].batch || K[0] > s->dims[2].size)
			return false;
	}
	int out[2] = {NONE, t->out[1]};
	int in[2] = {pts, t->in[1]};
	Attr axis_at = rw_int_attr(c, "axis", -1);
	const char *name = t->name[0] ? t->name : "knn";
	rw_kill(c, i);
	int p = rw_add_fused(c, i, OP_KilnKnn, in, 2, out, 2, &axis_at, 1, name);
	c->pending[p].node.fused.members = arena_printf(c->a, "kNN: MatMul, ReduceSum, Mul, Sub, "
	                                                "Sub, Transpose, TopK \"%s\"", t->name);
	c->stat->fused += 7;
	return true;
}

int pass_edgeconv(PassCtx *c)
{
	if (c->nsigs == 0)
		return 0;
	int changed = 0;
	for (int i = 0; i < c->g->nnodes; i++)
		if (!c->dead[i])
			changed += fuse_edgeconv(c, i) || fuse_knn(c, i);
	return changed;
}
