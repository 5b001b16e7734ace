/*
 * plan.c - the static buffer plan of one signature: where every
 * intermediate tensor lives in the per-thread arena.
 *
 * The schedule is the node order (the IR is topologically sorted). Graph
 * inputs and outputs are the caller's buffers, weights and folded values are
 * constants, so only the other temporaries need arena space. Before placing
 * them, values are merged into buffers:
 *   - zero-cost aliases: Reshape, Flatten, Squeeze, Unsqueeze and Identity
 *     outputs share their input's buffer (same bytes, new shape), even when
 *     that is a graph input or a weight (a read-only view, no arena);
 *   - in-place reuse: an elementwise op may write its output over an input
 *     that dies at that node, when both have the same shape and element size,
 *     and a Scatter* op over its data (input 0) the same way;
 *   - none at all for the inner values of an elementwise chain (sig_inline):
 *     what the chain's nodes read is read where its last node runs.
 * Each buffer lives from its first definition to its last use. Buffers are
 * placed greedily by size, largest first, each at the lowest 64-byte aligned
 * offset that overlaps no buffer with an intersecting lifetime. The lower
 * bound is the most bytes live at any one step; no placement can beat it.
 */
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "opdef.h"
#include "ops/ops.h"

enum { PLAN_ALIGN = 64 };

static int64_t align_up(int64_t n)
{
	return (n + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
}

/* Shapes are within Limits.max_elements (shape.c), so a buffer is at most
 * 2^40 bytes and sums of a few million of them fit; the arena itself must
 * stay within Limits.max_arena_bytes. Named after its largest buffer. */
static void check_arena(const Plan *p, const Sig *s, Arena *a, int64_t bytes)
{
	const Graph *g = s->g;
	const Limits *l = &g->model->limits;
	if (bytes <= l->max_arena_bytes)
		return;
	int big = 0;
	for (int b = 1; b < p->nbufs; b++)
		if (p->bufs[b].bytes > p->bufs[big].bytes)
			big = b;
	const PlanBuf *b = &p->bufs[big];
	int node = b->root == NONE ? b->first : g->values[b->root].producer;
	const char *what = b->root == NONE ? "its subgraphs" : g->values[b->root].name;
	diag_fail_node(a->diag, g, &g->nodes[node < 0 ? 0 : node], KILN_LIMIT,
	               "the arena at batch %lld needs %lld bytes, more than the limit of %lld MiB "
	               "(raise it with --max-arena); the largest buffer is \"%s\" here, %lld bytes",
	               (long long)s->batch, (long long)bytes, (long long)(l->max_arena_bytes >> 20),
	               what, (long long)b->bytes);
}

bool plan_is_view_op(int op)
{
	const OpDef *d = op_def(op);
	return d && d->view;
}

/* Ops computing each output element from the same element of each input
 * (after broadcasting): they may write over an input that dies. */
static bool is_elementwise_op(int op)
{
	const OpDef *d = op_def(op);
	return d && d->in_place;
}

/* Ops whose output is input 0 with some elements written over. */
static bool is_scatter_op(int op)
{
	const OpDef *d = op_def(op);
	return d && d->overwrites;
}

static bool same_shape(const Shape *a, const Shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int k = 0; k < a->rank; k++)
		if (a->dims[k].size != b->dims[k].size)
			return false;
	return true;
}

/* Does the value need arena space of its own (before merging)? In a
 * subgraph (an If branch, a Loop or Scan body) the formal inputs and the
 * outputs are not the caller's: the node running it copies them in and out
 * of the arena (emit/control.c). A formal input known at compile time (a
 * Loop's condition in its body, an unrolled iteration's number) is a
 * constant instead. */
static bool needs_arena(const Sig *s, int id)
{
	const Value *v = &s->g->values[id];
	if (v->producer != NONE && sig_node_dead(s, &s->g->nodes[v->producer]))
		return false;
	if (sig_inline(s, id))
		return false;  /* computed inside its reader's loop */
	if (s->g->parent && v->kind == VAL_INPUT)
		return (v->nuse > 0 || v->is_output) && !s->folded[id];
	return v->kind == VAL_TEMP && (!v->is_output || s->g->parent) && !s->folded[id];
}

static int root_of(const Plan *p, int id)
{
	while (p->root[id] != id)
		id = p->root[id];
	return id;
}

typedef struct Order {
	int buf;
	int64_t bytes;
} Order;

static int by_size_desc(const void *a, const void *b)
{
	const Order *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->buf - y->buf;  /* deterministic */
}

int64_t node_scratch_bytes(const Sig *s, int node, Arena *a)
{
	const Node *n = &s->g->nodes[node];
	if (!sig_computes(s, n))  /* every output folded, or dead: it does not run */
		return 0;
	const OpDef *d = op_def(n->op);
	return d && d->scratch ? d->scratch(s, node, a) : 0;
}

void plan_build(Plan *p, const Sig *s, Arena *a)
{
	Graph *g = s->g;
	int nv = g->nvalues;
	memset(p, 0, sizeof *p);
	p->root = arena_array(a, (size_t)nv, sizeof *p->root);
	p->buf_of = arena_array(a, (size_t)nv, sizeof *p->buf_of);
	int *last_use = arena_array(a, (size_t)nv, sizeof *last_use);
	int *root_last = arena_array(a, (size_t)nv, sizeof *root_last);
	for (int i = 0; i < nv; i++) {
		p->root[i] = i;
		p->buf_of[i] = NONE;
		last_use[i] = g->values[i].producer;
	}
	/* A node of an elementwise chain reads its inputs where the chain's last
	 * node runs. */
	int *at = sig_runs_at(s, a);
	for (int i = 0; i < g->nnodes; i++) {
		if (sig_node_dead(s, &g->nodes[i]))
			continue;  /* it reads nothing */
		for (int k = 0; k < g->nodes[i].nin; k++) {
			int in = g->nodes[i].in[k];
			if (in != NONE && last_use[in] < at[i])
				last_use[in] = at[i];
		}
		subgraph_extend_uses(g, i, last_use);
	}
	/* A subgraph's outputs are read after its last node, by the node running it. */
	if (g->parent)
		for (int i = 0; i < g->noutputs; i++)
			last_use[g->outputs[i]] = g->nnodes;
	for (int i = 0; i < nv; i++)
		root_last[i] = last_use[i];

	/* Merge in schedule order; a root's lifetime is the union of its members'. */
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		if (n->nout < 1 || n->out[0] == NONE || !needs_arena(s, n->out[0]))
			continue;
		int out = n->out[0];
		int src = NONE;
		if (plan_is_view_op(n->op) && n->in[0] != NONE) {
			/* A view: of an arena buffer, or of an input or weight (no arena). */
			src = n->in[0];
		} else if (is_elementwise_op(n->op)) {
			for (int k = 0; k < n->nin && src == NONE; k++) {
				int in = n->in[k];
				/* Never write over the caller's inputs or the weights. */
				if (in == NONE || !needs_arena(s, root_of(p, in)))
					continue;
				int r = root_of(p, in);
				if (root_last[r] == i && same_shape(&s->shapes[in], &s->shapes[out]) &&
				    dtype_size(s->dtypes[in]) == dtype_size(s->dtypes[out]) &&
				    !DT_IS_4BIT(s->dtypes[in]) && !DT_IS_4BIT(s->dtypes[out]))
					src = in;
			}
		} else if (is_scatter_op(n->op) && n->nin == 3) {
			/* Scatter* writes its updates over a copy of its data (input 0):
			 * over the data itself when the data dies here and shares no
			 * buffer with the indices or the updates (the emitter copies
			 * only when Y is not D). */
			int in = n->in[0];
			if (in != NONE && needs_arena(s, root_of(p, in))) {
				int r = root_of(p, in);
				bool apart = true;
				for (int k = 1; k < 3; k++)
					if (n->in[k] != NONE && root_of(p, n->in[k]) == r)
						apart = false;
				if (apart && root_last[r] == i && same_shape(&s->shapes[in], &s->shapes[out]) &&
				    dtype_size(s->dtypes[in]) == dtype_size(s->dtypes[out]) &&
				    !DT_IS_4BIT(s->dtypes[in]))
					src = in;
			}
		}
		if (src == NONE)
			continue;
		int r = root_of(p, src);
		p->root[out] = r;
		if (root_last[out] > root_last[r])
			root_last[r] = root_last[out];
	}

	/* One buffer per root that needs arena space. */
	for (int i = 0; i < nv; i++) {
		int r = root_of(p, i);
		if (!needs_arena(s, i) || !needs_arena(s, r))
			continue;
		int64_t bytes = align_up((int64_t)dtype_bytes(s->dtypes[i], shape_nelem(&s->shapes[i])));
		if (p->buf_of[r] == NONE) {
			p->bufs = arena_grow(a, p->bufs, p->nbufs, &p->capbufs, sizeof *p->bufs);
			PlanBuf *b = &p->bufs[p->nbufs];
			b->root = r;
			b->first = g->values[r].producer;
			b->last = root_last[r];
			b->bytes = 0;
			b->off = -1;
			p->buf_of[r] = p->nbufs++;
		}
		PlanBuf *b = &p->bufs[p->buf_of[r]];
		if (bytes > b->bytes)
			b->bytes = bytes;
		p->buf_of[i] = p->buf_of[r];
	}

	/* An If/Loop/Scan node's subgraphs run inside it: their buffers form one
	 * region, live only at that node (subgraph.c plans it, and moves it to
	 * where it is placed below). */
	for (int i = 0; i < g->nnodes; i++) {
		int64_t bytes = subgraph_plan(s, i, a);
		if (bytes == 0)
			continue;
		p->bufs = arena_grow(a, p->bufs, p->nbufs, &p->capbufs, sizeof *p->bufs);
		p->bufs[p->nbufs++] = (PlanBuf){.root = NONE, .first = i, .last = i,
		                                .bytes = align_up(bytes), .off = -1};
	}

	/* A node's kernel scratch: one region, live only at that node. */
	p->scratch_of = arena_array(a, (size_t)(g->nnodes ? g->nnodes : 1), sizeof *p->scratch_of);
	for (int i = 0; i < g->nnodes; i++) {
		int64_t bytes = node_scratch_bytes(s, i, a);
		p->scratch_of[i] = NONE;
		if (bytes <= 0)
			continue;
		p->bufs = arena_grow(a, p->bufs, p->nbufs, &p->capbufs, sizeof *p->bufs);
		p->scratch_of[i] = p->nbufs;
		p->bufs[p->nbufs++] = (PlanBuf){.root = NONE, .first = i, .last = i,
		                                .bytes = align_up(bytes), .off = -1};
	}

	/* Lower bound: the most bytes live at one step of 0..nnodes-1, from the
	 * changes of the live total (a buffer adds its bytes at first, removes
	 * them after last; lifetimes run from -1, a subgraph's formal inputs, to
	 * nnodes, its outputs). Each buffer is at most 2^40 bytes (shape.c), so
	 * sums of a few million fit. */
	int64_t *delta = arena_array(a, (size_t)g->nnodes + 3, sizeof *delta);
	for (int b = 0; b < p->nbufs; b++) {
		const PlanBuf *pb = &p->bufs[b];
		if (pb->last < pb->first)
			continue;
		delta[pb->first + 1] += pb->bytes;
		delta[pb->last + 2] -= pb->bytes;
	}
	int64_t live = 0;
	for (int t = -1; t < g->nnodes; t++) {
		live += delta[t + 1];
		if (t >= 0 && live > p->lower_bound_bytes)
			p->lower_bound_bytes = live;
	}

	/* Greedy by size: lowest offset clear of every placed, overlapping buffer. */
	Order *order = arena_array(a, (size_t)p->nbufs, sizeof *order);
	for (int b = 0; b < p->nbufs; b++)
		order[b] = (Order){b, p->bufs[b].bytes};
	if (p->nbufs)
		qsort(order, (size_t)p->nbufs, sizeof *order, by_size_desc);
	int *placed = arena_array(a, (size_t)p->nbufs, sizeof *placed);
	Order *busy = arena_array(a, (size_t)p->nbufs, sizeof *busy);  /* (index, offset) */
	int nplaced = 0;
	for (int k = 0; k < p->nbufs; k++) {
		PlanBuf *b = &p->bufs[order[k].buf];
		if (b->bytes == 0) {
			/* A value the passes removed (its producer is gone): it takes no
			 * space, and placing it among the others made large graphs
			 * quadratic (all of them live at the same step, -1). */
			b->off = 0;
			continue;
		}
		/* Placed buffers alive at the same time, by offset; take the first gap. */
		int nbusy = 0;
		for (int j = 0; j < nplaced; j++) {
			const PlanBuf *o = &p->bufs[placed[j]];
			if (o->first <= b->last && b->first <= o->last)
				busy[nbusy++] = (Order){placed[j], -o->off};
		}
		if (nbusy)
			qsort(busy, (size_t)nbusy, sizeof *busy, by_size_desc);  /* -off desc = off asc */
		int64_t off = 0;
		for (int j = 0; j < nbusy; j++) {
			const PlanBuf *o = &p->bufs[busy[j].buf];
			if (o->off >= off + b->bytes)
				break;  /* the gap before o fits */
			if (o->off + o->bytes > off)
				off = o->off + o->bytes;
		}
		b->off = off;
		placed[nplaced++] = order[k].buf;
		if (off + b->bytes > p->arena_bytes)
			p->arena_bytes = off + b->bytes;
		check_arena(p, s, a, p->arena_bytes);
	}
	for (int b = 0; b < p->nbufs; b++)
		if (p->bufs[b].root == NONE && p->scratch_of[p->bufs[b].first] != b)
			subgraph_place(s, p->bufs[b].first, p->bufs[b].off);
	/* The plan's invariant, checked every time: buffers alive together
	 * never share bytes, and all are aligned. A failure is a bug. Pairs are
	 * visited in order of first step, each buffer against those that start
	 * before it ends, so the check costs the pairs alive together. */
	Order *by_first = arena_array(a, (size_t)p->nbufs, sizeof *by_first);
	for (int b = 0; b < p->nbufs; b++)
		by_first[b] = (Order){b, -(int64_t)p->bufs[b].first};
	if (p->nbufs)
		qsort(by_first, (size_t)p->nbufs, sizeof *by_first, by_size_desc);
	for (int x = 0; x < p->nbufs; x++) {
		const PlanBuf *b = &p->bufs[by_first[x].buf];
		KILN_ASSERT(b->off >= 0 && b->off % PLAN_ALIGN == 0 && b->off + b->bytes <= p->arena_bytes);
		for (int y = x + 1; y < p->nbufs && p->bufs[by_first[y].buf].first <= b->last; y++) {
			const PlanBuf *o = &p->bufs[by_first[y].buf];
			KILN_ASSERT(!(o->off < b->off + b->bytes && b->off < o->off + o->bytes));
		}
	}
	KILN_ASSERT(p->arena_bytes >= p->lower_bound_bytes);
}

/* ---- elementwise chains at a signature ----------------------------------- */

/* Chains run in one loop unless that makes this signature's arena larger:
 * an operand a chain reads early lives until the chain's last node runs,
 * which can cost more than the inner values' buffers save. Then they run
 * node by node here (the same bits either way). */
void plan_choose_chains(Sig *s)
{
	bool any = false;
	s->no_chains = false;
	for (int id = 0; id < s->g->nvalues && !any; id++)
		any = sig_inline(s, id);
	if (!any)
		return;
	Plan fused, apart;
	plan_build(&fused, s, s->a);
	s->no_chains = true;
	plan_build(&apart, s, s->a);
	s->no_chains = apart.arena_bytes < fused.arena_bytes;
}

/* ---- control flow: the regions subgraphs run in -------------------------
 *
 * Each subgraph is planned on its own, from offset 0. A control-flow node's
 * region is the largest of its subgraphs' arenas (only one runs at a time),
 * then the slots of carried values whose outputs are omitted. The enclosing
 * plan places the region like a buffer live only at the node, which keeps
 * it clear of everything the node reads or writes; the subgraph plans are
 * then moved to it (subgraph_place). */

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
		int id = b->g->outputs[c->state_out + k];
		c->state_off[k] = bytes;
		/* a Scan-8 body runs per batch element: a slot for each */
		bytes += align_up((int64_t)dtype_bytes(b->dtypes[id], shape_nelem(&b->shapes[id])) *
		                  c->batch);
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
