/*
 * passes/ewchain.c - chains of float32 elementwise nodes computed in one
 * loop: each inner value of a chain is marked is_inline, computed inside
 * the loop of its one reader and never stored in the arena.
 *
 * The graph itself is not rewritten: every ONNX node stays a node, so shape
 * inference, the batch-independence proof and the other passes see the
 * graph as it was. The mark is a fact about a value, read per signature
 * through sig_inline (sigdce.c): the plan gives an inline value no buffer
 * and counts what its producer reads as read where the chain's last node
 * runs (sig_runs_at), and the emitter writes one function for the whole
 * chain at its last node (emit_ewchain, emit/elementwise.c), naming every
 * node in it. The decision needs static shapes (element counts) in every
 * signature being compiled, which a pass has (PassCtx.sigs); it runs after
 * fuse, addnorm and edgeconv, so epilogue and kernel fusion keep priority,
 * and after dce. The marks are recomputed from scratch in every iteration,
 * so after the last one they describe the final graph.
 *
 * A value v = f(...) is inlined into its reader r when f and r are both
 * fusible (ewchain_fusible: elementwise ops on float32 whose code is one
 * expression or libkiln's vector kernel); v has exactly one reader, r
 * (which may read it twice: Mul(d, d), a variance's square), and is not a
 * graph output nor read by a subgraph; v has
 * r's output's element count in every signature, so it is indexed as the
 * output is and nothing is computed twice; and v is folded in none. A chain
 * stays within EW_MAX_NODES nodes and EWCHAIN_MAX_OPERANDS operands from
 * outside it; those may broadcast, and one may be read by several of its
 * nodes (x * Sigmoid(x)).
 */
#include "ops/ops.h"
#include "rewrite.h"

enum { EW_MAX_NODES = 16 };

/* Can node n be part of a chain (as its last node or inside it)? */
static bool fusible(PassCtx *c, const Node *n)
{
	if (!ewchain_op(n) || n->nout < 1 || n->out[0] == NONE || rw_dtype(c, n->out[0]) != DT_FLOAT)
		return false;
	for (int k = 1; k < n->nout; k++)
		if (n->out[k] != NONE)
			return false;
	int ndata = ewchain_data_inputs(n);
	for (int k = 0; k < n->nin; k++) {
		int id = n->in[k];
		if (k < ndata ? id == NONE || rw_dtype(c, id) != DT_FLOAT : id != NONE && !rw_is_const(c, id))
			return false;  /* Clip's bounds: literals in the loop */
	}
	return true;
}

/* Does v have the element count of w, and is it computed, in every signature? */
static bool same_count(PassCtx *c, int v, int w)
{
	if (c->nsigs == 0 || v >= c->nvalues_shaped || w >= c->nvalues_shaped)
		return false;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *sv = rw_shape_in(c, v, k), *sw = rw_shape_in(c, w, k);
		if (!sv || !sw || shape_nelem(sv) != shape_nelem(sw) || shape_nelem(sv) < 0 ||
		    c->sigs[k].folded[v] || c->sigs[k].folded[w])
			return false;
	}
	return true;
}

int pass_ewchain(PassCtx *c)
{
	Graph *g = c->g;
	bool *was = arena_array(c->a, (size_t)(g->nvalues ? g->nvalues : 1), sizeof *was);
	for (int i = 0; i < g->nvalues; i++) {
		was[i] = g->values[i].is_inline;
		g->values[i].is_inline = false;
	}
	/* Backwards, so a node's reader has its chain already: last[i] is the
	 * chain's last node, with nodes[] and operands[] (an upper bound:
	 * every input slot not inside the chain) counted there. */
	int nn = g->nnodes;
	int *last = arena_array(c->a, (size_t)(nn ? nn : 1), sizeof *last);
	int *nodes = arena_array(c->a, (size_t)(nn ? nn : 1), sizeof *nodes);
	int *operands = arena_array(c->a, (size_t)(nn ? nn : 1), sizeof *operands);
	for (int i = nn - 1; i >= 0; i--) {
		const Node *n = &g->nodes[i];
		last[i] = i;
		nodes[i] = 1;
		operands[i] = ewchain_data_inputs(n);
		if (c->dead[i] || !fusible(c, n))
			continue;
		int v = n->out[0], r = rw_sole_user(c, v);
		if (r == NONE || r <= i || !fusible(c, &g->nodes[r]) ||
		    !same_count(c, v, g->nodes[r].out[0]))
			continue;
		int root = last[r];
		if (nodes[root] + 1 > EW_MAX_NODES ||
		    operands[root] - 1 + operands[i] > EWCHAIN_MAX_OPERANDS)
			continue;
		last[i] = root;
		nodes[root]++;
		operands[root] += operands[i] - 1;
		g->values[v].is_inline = true;
	}
	int changes = 0;
	for (int i = 0; i < g->nvalues; i++) {
		if (g->values[i].is_inline == was[i])
			continue;
		changes++;
		if (g->values[i].is_inline)
			c->stat->fused++;
	}
	return changes;
}
