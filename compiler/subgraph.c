/*
 * subgraph.c - the signatures and arena regions of subgraphs (If branches,
 * Loop and Scan bodies), for ops/control.c, plan.c and emit/control.c.
 *
 * A subgraph is inferred in a signature of its own, indexed by its own value
 * ids. Values it reads from enclosing graphs (VAL_OUTER) take their shapes,
 * types and known contents from the enclosing signature, and an enclosing
 * weight is known by its bytes, so shape arithmetic inside a body sees the
 * same constants as outside. The generated code reads such values where the
 * enclosing graph keeps them (the same weights symbol: emit/control.c).
 *
 * Each subgraph is planned on its own, from offset 0. A control-flow node's
 * region is the largest of its subgraphs' arenas (only one runs at a time),
 * then the slots of carried values whose outputs are omitted. The enclosing
 * plan places the region like a buffer live only at the node, which keeps
 * it clear of everything the node reads or writes; the subgraph plans are
 * then moved to it.
 */
#include <string.h>

#include "control.h"

enum { ALIGN = 64 };

static int64_t align_up(int64_t n)
{
	return (n + ALIGN - 1) / ALIGN * ALIGN;
}

bool control_sub_runs(const Control *c, int k)
{
	if (c->op == OP_If)
		return true;
	return c->trips != 0 && (!c->unrolled || k < c->trips);
}

/* ---- signatures ------------------------------------------------------- */

Sig *subgraph_sig(Infer *x, Graph *sub)
{
	KILN_ASSERT(sub->parent == x->g);
	Sig *s = arena_alloc(x->a, sizeof *s);
	s->batch = x->sig->batch;
	s->g = sub;
	shape_sig_init(s, x->a);
	for (int i = 0; i < sub->nvalues; i++) {
		const Value *v = &sub->values[i];
		if (v->kind != VAL_OUTER)
			continue;
		int o = v->outer_id;
		const Value *ov = &x->g->values[o];
		s->shapes[i] = x->sig->shapes[o];
		s->dtypes[i] = x->sig->dtypes[o];
		s->folded[i] = x->sig->folded[o];
		if (!s->folded[i] && ov->kind == VAL_WEIGHT && ov->type == TK_TENSOR &&
		    ov->dtype != DT_STRING) {
			Folded *f = arena_alloc(x->a, sizeof *f);
			*f = (Folded){ov->dtype, ov->weight->nelem, ov->weight->bytes};
			s->folded[i] = f;
		}
	}
	return s;
}

void subgraph_bind(Infer *x, Sig *s, int i, int dtype, const Shape *shape, const Folded *f)
{
	Graph *sub = s->g;
	int id = sub->inputs[i];
	const Value *v = &sub->values[id];
	if (v->kind != VAL_INPUT)
		infer_fail(x, KILN_UNSUPPORTED, "%s input %d \"%s\" is also an initializer",
		           sub->parent_attr, i, v->name);
	if (v->dtype != DT_UNDEFINED && v->dtype != dtype)
		infer_fail(x, KILN_INVALID_MODEL, "%s input %d \"%s\" is declared %s but gets %s",
		           sub->parent_attr, i, v->name, dtype_name(v->dtype), dtype_name(dtype));
	s->shapes[id] = *shape;
	s->dtypes[id] = dtype;
	s->folded[id] = (Folded *)f;
}

void subgraph_infer(Infer *x, Sig *s)
{
	shape_infer_nodes(s, x->d);
	Graph *sub = s->g;
	for (int i = 0; i < sub->noutputs; i++)
		if (s->shapes[sub->outputs[i]].rank < 0)
			infer_fail(x, KILN_SHAPE_ERROR, "%s output %d \"%s\" has no static shape",
			           sub->parent_attr, i, sub->values[sub->outputs[i]].name);
}

/* ---- the plan --------------------------------------------------------- */

void subgraph_extend_uses(const Graph *g, int node, int *last_use)
{
	const Node *n = &g->nodes[node];
	for (int k = 0; k < n->nattrs; k++) {
		const Attr *at = &n->attrs[k];
		if (at->type != AT_GRAPH && at->type != AT_GRAPHS)
			continue;
		/* Deeper references pass through a VAL_OUTER in every graph between. */
		for (int j = 0; j < at->n; j++) {
			const Graph *sub = at->graphs[j];
			for (int i = 0; i < sub->nvalues; i++)
				if (sub->values[i].kind == VAL_OUTER && last_use[sub->values[i].outer_id] < node)
					last_use[sub->values[i].outer_id] = node;
		}
	}
}

int64_t subgraph_plan(const Sig *s, int node, Arena *a)
{
	Control *c = control_of(s, node);
	if (!c)
		return 0;
	int64_t most = 0;
	c->plans = arena_array(a, (size_t)c->nsubs, sizeof *c->plans);
	for (int k = 0; k < c->nsubs; k++) {
		plan_build(&c->plans[k], &c->subs[k], a);
		if (c->plans[k].arena_bytes > most)
			most = c->plans[k].arena_bytes;
	}
	int64_t bytes = align_up(most);
	const Node *n = &s->g->nodes[node];
	for (int k = 0; k < c->nstate; k++) {
		if (n->out[k] != NONE)
			continue;
		/* The carried value has no output to live in: give it a slot. */
		const Sig *b = &c->subs[0];
		int id = b->g->outputs[c->op == OP_Loop ? k + 1 : k];
		c->state_off[k] = bytes;
		bytes += align_up((int64_t)dtype_bytes(b->dtypes[id], shape_nelem(&b->shapes[id])) *
		                  (c->op == OP_Scan ? c->batch : 1));
	}
	c->region_bytes = bytes;
	c->region_off = 0;
	return bytes;
}

static void shift(Control *c, int64_t delta)
{
	c->region_off += delta;
	for (int k = 0; k < c->nstate; k++)
		if (c->state_off[k] >= 0)
			c->state_off[k] += delta;
	for (int k = 0; k < c->nsubs; k++) {
		Plan *p = &c->plans[k];
		for (int b = 0; b < p->nbufs; b++)
			p->bufs[b].off += delta;
		/* Nested regions were placed inside this one: they move with it. */
		for (int i = 0; i < c->subs[k].g->nnodes; i++) {
			Control *inner = control_of(&c->subs[k], i);
			if (inner)
				shift(inner, delta);
		}
	}
}

void subgraph_place(const Sig *s, int node, int64_t off)
{
	Control *c = control_of(s, node);
	KILN_ASSERT(c);
	shift(c, off - c->region_off);
}
