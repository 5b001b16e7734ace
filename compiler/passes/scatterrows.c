/*
 * passes/scatterrows.c - ScatterND at index tuples that PyTorch's index_put
 * builds from broadcast pieces becomes one KilnScatterRows node that reads
 * the pieces themselves (ops/scatterrows.c): the int64 tuples are never
 * built.
 *
 * `y[:, :, i, j] = el` (a Particle Transformer's pair embedding, written
 * twice: [i, j] and [j, i]) exports as ScatterND(data, Concat(axis -1) of
 * Unsqueeze(Expand(a_k, S), -1) for k < q, updates): a_0 = Range(N) as [N,
 * 1, ..., 1], a_1 = Range(H) as [H, 1], a_2 = i, a_3 = j, S the update
 * positions [N, H, pairs]. At batch 16 that is 197120 tuples of 4 int64
 * (6.3 MB) per ScatterND, written by the Concat from four expanded pieces
 * (1.6 MB each) and read back by the scatter.
 *
 * The pattern, every shape checked in every compiled signature: a float32
 * ScatterND (no reduction) whose indices are a Concat along the last axis
 * of q inputs, each Unsqueeze(x, last axis) of x = Expand(a, S) or of x = a
 * itself (x of shape S); every a broadcasts to S (right-aligned, numpy);
 * a_0's contents are 0 .. N-1 along S's axis 0 (shape [N, 1, ...], folded in
 * every signature: the batch index) and the other pieces have 1 or nothing
 * on that axis. Then sample n's tuples address sample n of the data with
 * components a_1 .. a_(q-1), the same for every sample: KilnScatterRows(data,
 * updates, a_1, ..., a_(q-1)) scatters each sample's updates into its own
 * block, in ScatterND's order (the same result, duplicates included), each
 * component checked against its axis (KILN_SHAPE_ERROR as ScatterND).
 * Batch independence is evident (BK_N_FIRST: data and updates are rows).
 */
#include <string.h>

#include "rewrite.h"

enum { MAX_PIECES = KILN_MAX_RANK };

/* Unsqueeze u inserts exactly the last axis of its rank-r output. */
static bool unsqueeze_last(PassCtx *c, const Node *u, int r)
{
	const Attr *at = rw_attr(u, "axes");
	int64_t ax[1], n = 0;
	if (at) {
		if (at->type != AT_INTS || at->n != 1)
			return false;
		ax[0] = at->ints[0];
	} else if (u->nin < 2 || u->in[1] == NONE || !rw_const_ints(c, u->in[1], ax, 1, &n) ||
	           n != 1) {
		return false;
	}
	return ax[0] == -1 || ax[0] == r - 1;
}

/* Does a (in signature k) broadcast to S (rank rs), with 1 or nothing on
 * axis 0? */
static bool broadcasts(const Shape *a, const Shape *S, bool batch_free)
{
	if (!a || a->rank > S->rank)
		return false;
	for (int d = 0; d < a->rank; d++) {
		int64_t ad = a->dims[d].size, sd = S->dims[S->rank - a->rank + d].size;
		if (ad != 1 && ad != sd)
			return false;
		if (batch_free && S->rank - a->rank + d == 0 && ad != 1)
			return false;
	}
	return true;
}

/* Is a, in signature k, the folded batch index: [N, 1, ...] of rank rs
 * holding 0 .. N-1? */
static bool batch_index(PassCtx *c, int a, int k, const Shape *S)
{
	const Shape *s = rw_shape_in(c, a, k);
	const Folded *f = c->sigs[k].folded ? c->sigs[k].folded[a] : NULL;
	if (!s || s->rank != S->rank || s->dims[0].size != S->dims[0].size || !f ||
	    c->sigs[k].dtypes[a] != DT_INT64 || f->nelem != S->dims[0].size)
		return false;
	for (int d = 1; d < s->rank; d++)
		if (s->dims[d].size != 1)
			return false;
	for (int64_t i = 0; i < f->nelem; i++) {
		int64_t v;
		memcpy(&v, (const char *)f->data + i * 8, 8);
		if (v != i)
			return false;
	}
	return true;
}

static bool rewrite_one(PassCtx *c, int si)
{
	Graph *g = c->g;
	const Node *s = &g->nodes[si];
	const Attr *red = rw_attr(s, "reduction");
	if (s->domain_id != DOMAIN_ONNX || s->nin != 3 || s->nout != 1 || s->out[0] == NONE ||
	    (red && !(red->type == AT_STRING && red->s.len == 4 &&
	              memcmp(red->s.data, "none", 4) == 0)) ||
	    rw_dtype(c, s->in[0]) != DT_FLOAT || rw_dtype(c, s->in[2]) != DT_FLOAT)
		return false;
	const Node *cat = rw_made_by(c, s->in[1], OP_Concat);
	if (!cat || cat->nin < 2 || cat->nin > MAX_PIECES || cat->nout != 1)
		return false;
	const Shape *I0 = rw_shape_in(c, s->in[1], 0);
	if (!I0 || I0->rank < 2)
		return false;
	int64_t ax = rw_attr_int(cat, "axis", 0);
	if (ax != -1 && ax != I0->rank - 1)
		return false;
	int q = cat->nin, a[MAX_PIECES];
	for (int p = 0; p < q; p++) {
		const Node *u = rw_made_by(c, cat->in[p], OP_Unsqueeze);
		if (!u || !unsqueeze_last(c, u, I0->rank))
			return false;
		const Node *e = rw_made_by(c, u->in[0], OP_Expand);
		a[p] = e ? e->in[0] : u->in[0];
		if (a[p] == NONE || rw_dtype(c, a[p]) != DT_INT64)
			return false;
	}
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *I = rw_shape_in(c, s->in[1], k), *D = rw_shape_in(c, s->in[0], k),
		            *U = rw_shape_in(c, s->in[2], k);
		if (!I || !D || !U || I->rank < 2 || I->dims[I->rank - 1].size != q || D->rank < q)
			return false;
		Shape S = {.rank = I->rank - 1};
		for (int d = 0; d < S.rank; d++)
			S.dims[d] = I->dims[d];
		if (S.dims[0].size != c->sigs[k].batch || D->dims[0].size != S.dims[0].size ||
		    U->rank != S.rank + D->rank - q || !batch_index(c, a[0], k, &S))
			return false;
		for (int d = 0; d < U->rank; d++)
			if (U->dims[d].size != (d < S.rank ? S.dims[d].size : D->dims[q + d - S.rank].size))
				return false;
		for (int p = 1; p < q; p++)
			if (!broadcasts(rw_shape_in(c, a[p], k), &S, true))
				return false;
	}
	int in[2 + MAX_PIECES];
	in[0] = s->in[0];
	in[1] = s->in[2];
	for (int p = 1; p < q; p++)
		in[1 + p] = a[p];
	Attr at = rw_int_attr(c, "kiln.index_rank", I0->rank - 1);
	const char *name = s->name[0] ? s->name : "scatterrows";
	int y = s->out[0];
	rw_kill(c, si);
	int p = rw_add_fused(c, si, OP_KilnScatterRows, in, 1 + q, &y, 1, &at, 1, name);
	c->pending[p].node.fused.members = arena_printf(c->a, "ScatterND \"%s\" at Concat \"%s\" "
	                                                "of %d broadcast index pieces", s->name,
	                                                cat->name, q);
	c->stat->fused++;
	return true;
}

int pass_scatterrows(PassCtx *c)
{
	int changes = 0;
	if (c->nsigs == 0)
		return 0;
	int nnodes = c->g->nnodes;
	for (int i = 0; i < nnodes; i++)
		if (!c->dead[i] && c->g->nodes[i].op == OP_ScatterND && rewrite_one(c, i))
			changes++;
	return changes;
}
