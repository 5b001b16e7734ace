/*
 * sigdce.c - dead nodes of one signature, once its shapes are inferred.
 *
 * The optimizer's dce pass (passes/dce.c) removes the nodes nobody reads,
 * but it runs on the graph before shapes are static. At a signature a node
 * can still have no reader that runs: a Transpose read only by a Shape,
 * whose output is folded from the signature's static shape (PyTorch writes
 * this for an LSTM's initial state: Shape -> Gather -> ... ->
 * ConstantOfShape), so the Shape reads nothing at run time. Walking the
 * nodes backward from the graph outputs, sig_dce marks every node that
 * computes something (some output not folded) none of whose outputs is a
 * graph output or read by a node that runs; sig_computes is then false for
 * it, the plan gives its outputs no arena and does not let its reads keep
 * its inputs alive, and the emitter writes no code for it.
 *
 * Nodes owning subgraphs always run (what their bodies read counts, as in
 * the plan), and a value read other than through a node's inputs (a use
 * the IR counts in nuse but not in any top-level node's in[]) counts as
 * read.
 *
 * sig_inline and sig_runs_at answer the same kind of question for the
 * elementwise chains the ewchain pass marked (passes/ewchain.c): a marked
 * value is computed inside its reader's loop at a signature unless it is
 * folded there or its producer is dead, or the chains would make the arena
 * larger there (plan_choose_chains, plan.c); the plan and the emitter ask.
 *
 * sig_computes: whether a node runs at all at a signature.
 */
#include "plan.h"

void sig_dce(Sig *s)
{
	const Graph *g = s->g;
	int nv = g->nvalues, nn = g->nnodes;
	/* reader[id]: the last node that runs and reads id (nn: after the
	 * graph, for its outputs and other uses), -1 if none */
	int *reader = arena_array(s->a, (size_t)(nv ? nv : 1), sizeof *reader);
	int *refs = arena_array(s->a, (size_t)(nv ? nv : 1), sizeof *refs);
	bool *dead = arena_array(s->a, (size_t)(nn ? nn : 1), sizeof *dead);
	for (int i = 0; i < nn; i++)
		for (int k = 0; k < g->nodes[i].nin; k++)
			if (g->nodes[i].in[k] != NONE)
				refs[g->nodes[i].in[k]]++;
	for (int id = 0; id < nv; id++)
		reader[id] = g->values[id].is_output || g->values[id].nuse > refs[id] ? nn : -1;
	for (int i = 0; i < g->noutputs; i++)
		reader[g->outputs[i]] = nn;
	bool any = false;
	for (int i = nn - 1; i >= 0; i--) {
		const Node *n = &g->nodes[i];
		if (!sig_computes(s, n))
			continue;  /* every output folded: it reads nothing at run time */
		bool read = node_has_subgraph(n);
		for (int k = 0; k < n->nout && !read; k++)
			read = n->out[k] != NONE && reader[n->out[k]] >= 0;
		if (!read) {
			dead[i] = any = true;
			continue;
		}
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] != NONE && reader[n->in[k]] < i)
				reader[n->in[k]] = i;
		subgraph_extend_uses(g, i, reader);
	}
	s->dead = any ? dead : NULL;
}

bool sig_node_dead(const Sig *s, const Node *n)
{
	return s->dead && n >= s->g->nodes && n < s->g->nodes + s->g->nnodes &&
	       s->dead[n - s->g->nodes];
}

bool sig_inline(const Sig *s, int id)
{
	const Graph *g = s->g;
	const Value *v = &g->values[id];
	return !g->parent && !s->no_chains && v->is_inline && !s->folded[id] &&
	       v->producer != NONE && !sig_node_dead(s, &g->nodes[v->producer]);
}

int *sig_runs_at(const Sig *s, Arena *a)
{
	const Graph *g = s->g;
	int nn = g->nnodes;
	int *reader = arena_array(a, (size_t)(g->nvalues ? g->nvalues : 1), sizeof *reader);
	int *at = arena_array(a, (size_t)(nn ? nn : 1), sizeof *at);
	for (int i = 0; i < nn; i++)
		for (int k = 0; k < g->nodes[i].nin; k++)
			if (g->nodes[i].in[k] != NONE)
				reader[g->nodes[i].in[k]] = i;
	for (int i = nn - 1; i >= 0; i--) {
		const Node *n = &g->nodes[i];
		at[i] = i;
		if (n->nout >= 1 && n->out[0] != NONE && sig_inline(s, n->out[0]) &&
		    reader[n->out[0]] > i)
			at[i] = at[reader[n->out[0]]];
	}
	return at;
}

bool sig_computes(const Sig *s, const Node *n)
{
	if (sig_node_dead(s, n))
		return false;
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] != NONE && !s->folded[n->out[k]])
			return true;
	return false;
}
