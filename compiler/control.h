/*
 * control.h - control flow (If, Loop, Scan): what shape inference records
 * about one control-flow node in one signature, for the plan and the
 * emitter. See docs/control-flow.md.
 *
 * Each subgraph that runs is inferred with concrete shapes, in a signature
 * of its own (Sig.g is the subgraph; values it reads from enclosing graphs
 * take their shapes and known contents from the enclosing signature):
 *   - If: the branch the condition selects, or both when the condition is
 *     only known at run time (their outputs must then agree in shape);
 *   - Loop: the body once, when one body serves every iteration ("rolled"),
 *     or once per iteration with the iteration number known ("unrolled"),
 *     when the body needs that number at compile time (a Slice bound);
 *   - Scan: the body once.
 * The subgraphs' buffers live in one region of the arena, live while the
 * node runs (subgraph.c). The values carried from one iteration to the
 * next live in the node's own outputs (or in slots after the region when an
 * output is omitted), so an iteration never reads what it overwrites.
 */
#ifndef KILN_CONTROL_H
#define KILN_CONTROL_H

#include "plan.h"

enum { CONTROL_MAX_UNROLL = 256 };   /* iterations a Loop body may be unrolled to */

typedef struct Control {
	int op;              /* OP_If, OP_Loop, OP_Scan */
	int nsubs;
	Sig *subs;           /* the subgraph signatures (see above for the order) */
	Plan *plans;         /* their plans; offsets are absolute once placed */
	const char **tags;   /* per sub, for function names: "then", "else", "body", "iter3" */
	int branch;          /* If: the branch taken (0 then, 1 else), NONE if decided at run time */
	bool unrolled;       /* Loop: subs[i] is iteration i */
	int64_t trips;       /* Loop, Scan: iterations (a bound when the condition is checked
	                        at run time); -1: a Loop with no bound, until its condition */
	int nstate;          /* Loop, Scan: values carried between iterations */
	int state_out;       /* the body output carrying value 0: 1 in a Loop (after the
	                        condition), 0 in a Scan */
	int64_t *state_off;  /* per carried value: arena offset of its slot when the node's
	                        output is omitted, else -1 */
	/* Scan only */
	int nscan_in, nscan_out;
	int64_t batch;       /* Scan-8's batch axis: the body runs per batch element (1 in
	                        If, Loop and other Scans) */
	int *in_axis, *out_axis;
	bool *in_reverse, *out_reverse;
	int64_t region_off, region_bytes;
} Control;

/* The Control of node `node` in signature s, or NULL. */
static inline Control *control_of(const Sig *s, int node)
{
	return s->control ? s->control[node] : NULL;
}

/* Does sub k run at all? (A Loop that runs no iteration keeps iteration 0's
 * signature for its output shapes, but emits no code for it.) */
bool control_sub_runs(const Control *c, int k);

/* subgraph.c: a signature for the subgraph `sub` of x's node, its enclosing
 * values bound from x's signature; the caller binds the formal inputs. */
Sig *subgraph_sig(Infer *x, Graph *sub);
/* Bind formal input i of a subgraph signature; f may be NULL (run time). */
void subgraph_bind(Infer *x, Sig *s, int i, int dtype, const Shape *shape, const Folded *f);
/* Infer the subgraph's nodes, then check every output has a shape. */
void subgraph_infer(Infer *x, Sig *s);

#endif
