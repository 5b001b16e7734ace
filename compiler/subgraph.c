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
 * The arena regions subgraphs run in are planned by plan.c (subgraph_plan),
 * which plans each body with plan_build: the recursion stays in one file.
 */
#include <string.h>

#include "control.h"
#include "infer.h"

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
	s->bucket = x->sig->bucket;
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
	KILN_ASSERT(x->infer_nodes);
	x->infer_nodes(s, x->d);
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
