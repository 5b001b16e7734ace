/*
 * passes/dce.c - dead-code elimination: nodes none of whose outputs is read
 * or listed as a graph output, and optional outputs nobody reads (Dropout's
 * mask, LayerNormalization's statistics).
 *
 * Walks backwards so a dead chain goes in one pass. Unused initializers need
 * no removal: the weights object holds only constants that generated code
 * reads, so dropping their last reader drops their bytes. Nodes that own
 * subgraphs stay (their bodies' links to this graph count as uses).
 */
#include "rewrite.h"

static bool is_unread(const Graph *g, int id)
{
	return id == NONE || (g->values[id].nuse == 0 && !g->values[id].is_output);
}

int pass_dce(PassCtx *c)
{
	Graph *g = c->g;
	int changes = 0;
	for (int i = g->nnodes - 1; i >= 0; i--) {
		if (c->dead[i])
			continue;
		Node *n = &g->nodes[i];
		if (node_has_subgraph(n))
			continue;
		bool dead = true;
		for (int k = 0; k < n->nout && dead; k++)
			dead = is_unread(g, n->out[k]);
		if (dead) {
			rw_kill(c, i);
			c->stat->removed++;
			changes++;
			continue;
		}
		/* (BatchNormalization's extra outputs mean training mode: not optional.) */
		if (n->op == OP_Dropout || n->op == OP_LayerNormalization)
			for (int k = 1; k < n->nout; k++)
				if (n->out[k] != NONE && is_unread(g, n->out[k])) {
					g->values[n->out[k]].producer = NONE;
					n->out[k] = NONE;
					changes++;
				}
	}
	return changes;
}
