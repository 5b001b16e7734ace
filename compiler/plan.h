/*
 * plan.h - a signature's static buffer plan (plan.c), its dead nodes
 * and elementwise chains (sigdce.c), control flow's part (subgraph.c), and
 * its picture (plan_svg.c).
 */
#ifndef KILN_PLAN_H
#define KILN_PLAN_H

#include "sig.h"

/* ---- plan.c: the static buffer plan ----------------------------------- */

typedef struct PlanBuf {
	int root;            /* value id the buffer is named after; NONE for the region
	                        an If/Loop/Scan node's subgraphs run in, or a node's
	                        scratch (first == last) */
	int first, last;     /* lifetime: schedule steps (node ids), inclusive */
	int64_t bytes;       /* 64-byte aligned size */
	int64_t off;         /* offset in the arena, 64-byte aligned */
} PlanBuf;

typedef struct Plan {
	int *root;           /* per value id: the value whose bytes it shares (itself if none);
	                        a root outside the arena (input, weight) makes a read-only view */
	int *buf_of;         /* per value id: index in bufs, NONE if not in the arena */
	PlanBuf *bufs;
	int nbufs, capbufs;
	int *scratch_of;     /* per node: index in bufs of the work memory its kernel has
	                        to itself while it runs (node_scratch_bytes), NONE if none */
	int64_t arena_bytes;        /* the arena size this signature needs */
	int64_t lower_bound_bytes;  /* the most bytes live at one step */
} Plan;

/* Ops whose output is a view of input 0 (same bytes, another shape). */
bool plan_is_view_op(int op);
/* Bytes of arena scratch node (an index in s->g) needs while it runs, 0 for
 * none: the work memory of kernels such as RNN's. */
int64_t node_scratch_bytes(const Sig *s, int node, Arena *a);
/* Plan the arena of a signature whose shapes are inferred (and dead nodes
 * marked, sig_dce). */
void plan_build(Plan *p, const Sig *s, Arena *a);
/* After sig_dce: whether s's elementwise chains run node by node
 * (s->no_chains), because in one loop they would make its arena larger. */
void plan_choose_chains(Sig *s);

/* ---- sigdce.c: dead nodes of one signature ------------------------------ */

/* Mark the nodes of s (shapes inferred) that compute something no running
 * node and no graph output reads, in s->dead: they get no arena and no code. */
void sig_dce(Sig *s);
/* Whether sig_dce marked node n (a node of s->g) dead. */
bool sig_node_dead(const Sig *s, const Node *n);
/* Whether node n computes anything at s (not every output folded, not dead). */
bool sig_computes(const Sig *s, const Node *n);
/* Whether value id of s->g is computed inside its reader's loop at s (an
 * elementwise chain, passes/ewchain.c): it gets no storage, its producer no
 * code of its own, and what its producer reads is read at that reader. */
bool sig_inline(const Sig *s, int id);
/* Per node id of s->g, the node whose code computes it at s: itself, or
 * the last node of the elementwise chain it belongs to. */
int *sig_runs_at(const Sig *s, Arena *a);
/* plan_svg.c: an SVG picture of n signatures' plans (kiln info --plan --svg). */
void plan_svg(const Graph *g, const Sig *sigs, const Plan *plans, int n, FILE *f);

/* ---- subgraph.c: control flow in the plan ------------------------------ */

/* Values that node's subgraphs read from g are used at that node: raise
 * last_use (per value id of g) to it. */
void subgraph_extend_uses(const Graph *g, int node, int *last_use);
/* Plan the subgraphs of a control-flow node; returns the bytes of the arena
 * region they need while the node runs (0 for any other node). */
int64_t subgraph_plan(const Sig *s, int node, Arena *a);
/* The region was placed at off: move the subgraphs' buffers there. */
void subgraph_place(const Sig *s, int node, int64_t off);

#endif
