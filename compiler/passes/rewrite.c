/*
 * passes/rewrite.c - the helpers every pass uses to read and edit the top
 * graph: use counts, shapes across signatures, constants, and the edits
 * (bypass, kill, new values, constants and nodes, commit).
 *
 * Edits keep value ids stable (see passes.h). Value.nuse is kept exact:
 * every edit that adds or drops a node input adjusts it, because DCE and the
 * "inputs die with it" rule of folding read it. Node ids change only in
 * rw_commit, which every pass calls at its end through the pipeline.
 */
#include <math.h>
#include <string.h>

#include "kiln/kernels.h"
#include "rewrite.h"

/* ---- queries ---------------------------------------------------------- */

int rw_local_uses(PassCtx *c, int id)
{
	int n = 0;
	for (int i = 0; i < c->g->nnodes; i++) {
		if (c->dead[i])
			continue;
		const Node *nd = &c->g->nodes[i];
		for (int k = 0; k < nd->nin; k++)
			n += nd->in[k] == id;
	}
	for (int i = 0; i < c->npending; i++)
		for (int k = 0; k < c->pending[i].node.nin; k++)
			n += c->pending[i].node.in[k] == id;
	return n;
}

/* Values read by subgraphs never change while the passes run (bodies are not
 * rewritten), so they are found once. */
static void mark_nested(Graph *g, void *user)
{
	PassCtx *c = user;
	if (g->parent != c->g)
		return;
	for (int i = 0; i < g->nvalues; i++)
		if (g->values[i].kind == VAL_OUTER && g->values[i].outer_id < c->nnested)
			c->nested[g->values[i].outer_id] = true;
}

static void index_users(PassCtx *c)
{
	Graph *g = c->g;
	c->nhint = g->nvalues;
	c->user_hint = arena_array(c->a, (size_t)(c->nhint ? c->nhint : 1), sizeof *c->user_hint);
	for (int i = 0; i < c->nhint; i++)
		c->user_hint[i] = NONE;
	for (int i = g->nnodes - 1; i >= 0; i--)
		for (int k = 0; k < g->nodes[i].nin; k++)
			if (g->nodes[i].in[k] != NONE)
				c->user_hint[g->nodes[i].in[k]] = i;
}

void rw_init(PassCtx *c)
{
	Graph *g = c->g;
	c->nnested = g->nvalues;
	c->nested = arena_array(c->a, (size_t)(c->nnested ? c->nnested : 1), sizeof *c->nested);
	graph_walk(g, mark_nested, c);
	c->dead = arena_array(c->a, (size_t)(g->nnodes ? g->nnodes : 1), sizeof *c->dead);
	index_users(c);
}

bool rw_pinned(PassCtx *c, int id)
{
	if (id < 0)  /* an absent input ("" in the model): nothing to rewrite */
		return true;
	const Value *v = &c->g->values[id];
	return v->is_output || (id < c->nnested && c->nested[id]);
}

static bool reads(const Node *n, int id)
{
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] == id)
			return true;
	return false;
}

Node *rw_made_by(PassCtx *c, int id, int op)
{
	if (id == NONE)
		return NULL;
	const Value *v = &c->g->values[id];
	if (v->kind != VAL_TEMP || v->producer == NONE || c->dead[v->producer])
		return NULL;
	Node *n = &c->g->nodes[v->producer];
	return n->op == op ? n : NULL;
}

int rw_sole_user(PassCtx *c, int id)
{
	if (id < 0 || rw_pinned(c, id) || c->g->values[id].nuse < 1)
		return NONE;
	/* nuse is exact: one use, by the node the index remembers, is the only one. */
	int hint = id < c->nhint ? c->user_hint[id] : NONE;
	if (c->g->values[id].nuse == 1 && hint != NONE && hint < c->g->nnodes && !c->dead[hint] &&
	    reads(&c->g->nodes[hint], id))
		return hint;
	int user = NONE;
	for (int i = 0; i < c->g->nnodes; i++) {
		if (c->dead[i])
			continue;
		const Node *nd = &c->g->nodes[i];
		for (int k = 0; k < nd->nin; k++)
			if (nd->in[k] == id) {
				if (user != NONE && user != i)
					return NONE;
				user = i;
			}
	}
	for (int i = 0; i < c->npending; i++)
		for (int k = 0; k < c->pending[i].node.nin; k++)
			if (c->pending[i].node.in[k] == id)
				return NONE;
	return user;
}

bool rw_same_shape(const Shape *a, const Shape *b)
{
	if (!a || !b || a->rank != b->rank || a->rank < 0)
		return false;
	for (int k = 0; k < a->rank; k++)
		if (a->dims[k].size < 0 || a->dims[k].size != b->dims[k].size)
			return false;
	return true;
}

const Shape *rw_shape_in(PassCtx *c, int id, int k)
{
	if (id == NONE || id >= c->nvalues_shaped || k >= c->nsigs)
		return NULL;
	const Shape *s = &c->sigs[k].shapes[id];
	return s->rank < 0 ? NULL : s;
}

const Shape *rw_static_shape(PassCtx *c, int id)
{
	const Value *v = id == NONE ? NULL : &c->g->values[id];
	if (v && v->kind == VAL_WEIGHT)
		return &v->shape;
	if (c->nsigs == 0)
		return NULL;
	const Shape *s0 = rw_shape_in(c, id, 0);
	for (int k = 1; k < c->nsigs && s0; k++)
		if (!rw_same_shape(s0, rw_shape_in(c, id, k)))
			return NULL;
	return s0;
}

int rw_dtype(PassCtx *c, int id)
{
	if (id == NONE)
		return DT_UNDEFINED;
	const Value *v = &c->g->values[id];
	if (v->kind == VAL_WEIGHT || v->kind == VAL_INPUT)
		return v->dtype;
	if (c->nsigs == 0 || id >= c->nvalues_shaped)
		return DT_UNDEFINED;
	int dt = c->sigs[0].dtypes[id];
	for (int k = 1; k < c->nsigs; k++)
		if (c->sigs[k].dtypes[id] != dt)
			return DT_UNDEFINED;
	return dt;
}

bool rw_is_const(PassCtx *c, int id)
{
	if (id == NONE)
		return false;
	const Value *v = &c->g->values[id];
	return v->kind == VAL_WEIGHT && !v->is_overridable && v->type == TK_TENSOR &&
	       v->dtype != DT_STRING && v->weight;
}

static bool ints_of(int dtype, const void *data, int64_t ne, int64_t *v, int64_t max)
{
	if (ne < 0 || ne > max || (dtype != DT_INT64 && dtype != DT_INT32))
		return false;
	for (int64_t i = 0; i < ne; i++) {
		if (dtype == DT_INT64) {
			memcpy(&v[i], (const char *)data + 8 * i, 8);
		} else {
			int32_t t;
			memcpy(&t, (const char *)data + 4 * i, 4);
			v[i] = t;
		}
	}
	return true;
}

bool rw_const_ints(PassCtx *c, int id, int64_t *v, int64_t max, int64_t *n)
{
	if (id == NONE)
		return false;
	if (rw_is_const(c, id)) {
		const Value *x = &c->g->values[id];
		*n = x->weight->nelem;
		return x->shape.rank <= 1 && ints_of(x->dtype, x->weight->bytes, *n, v, max);
	}
	if (c->nsigs == 0 || id >= c->nvalues_shaped || !rw_static_shape(c, id) ||
	    rw_static_shape(c, id)->rank > 1)
		return false;
	for (int k = 0; k < c->nsigs; k++) {
		const Folded *f = c->sigs[k].folded ? c->sigs[k].folded[id] : NULL;
		int64_t w[KILN_MAX_RANK];
		if (!f || max > KILN_MAX_RANK || !ints_of(f->dtype, f->data, f->nelem, k ? w : v, max) ||
		    (k && (f->nelem != *n || memcmp(w, v, (size_t)*n * sizeof *v) != 0)))
			return false;
		*n = f->nelem;
	}
	return true;
}

/* Element i of a constant's bytes as a double; false for other dtypes. */
static bool elem_f64(int dtype, const unsigned char *p, int64_t i, double *out)
{
	switch (dtype) {
	case DT_FLOAT: { float x; memcpy(&x, p + 4 * i, 4); *out = (double)x; return true; }
	case DT_DOUBLE: memcpy(out, p + 8 * i, 8); return true;
	case DT_FLOAT16: { uint16_t h; memcpy(&h, p + 2 * i, 2); *out = (double)kiln_f16_to_f32(h); return true; }
	case DT_INT64: { int64_t x; memcpy(&x, p + 8 * i, 8); *out = (double)x; return true; }
	case DT_INT32: { int32_t x; memcpy(&x, p + 4 * i, 4); *out = x; return true; }
	case DT_INT8: *out = (int8_t)p[i]; return true;
	case DT_UINT8: case DT_BOOL: *out = p[i]; return true;
	default: return false;
	}
}

/* The copy is made only for constants of at most max elements: the passes
 * ask for scalars and per-channel vectors, and a model may hold thousands
 * of large constants (naming one mapped region, which costs nothing until
 * converted): converting each would fill the compiler's memory. */
double *rw_const_f64(PassCtx *c, int id, int64_t *n, int64_t max)
{
	if (!rw_is_const(c, id))
		return NULL;
	const Value *v = &c->g->values[id];
	const Weight *w = v->weight;
	double probe;
	if (w->nelem > max || !elem_f64(v->dtype, w->bytes, 0, &probe))
		return NULL;
	*n = w->nelem;
	double *out = arena_array(c->a, (size_t)(w->nelem ? w->nelem : 1), sizeof *out);
	for (int64_t i = 0; i < w->nelem; i++)
		elem_f64(v->dtype, w->bytes, i, &out[i]);
	return out;
}

bool rw_const_all(PassCtx *c, int id, double v)
{
	if (!rw_is_const(c, id))
		return false;
	const Value *cv = &c->g->values[id];
	const Weight *w = cv->weight;
	if (w->nelem == 0)
		return false;
	for (int64_t i = 0; i < w->nelem; i++) {
		double x;
		if (!elem_f64(cv->dtype, w->bytes, i, &x) || x != v)
			return false;
	}
	return true;
}

const Attr *rw_attr(const Node *n, const char *name)
{
	return node_attr(n, name);
}

bool rw_conv_unpadded(const Node *n)
{
	const Attr *pads = rw_attr(n, "pads");
	for (int k = 0; pads && k < pads->n; k++)
		if (pads->type != AT_INTS || pads->ints[k] != 0)
			return false;
	const Attr *ap = rw_attr(n, "auto_pad");
	return !ap || ap->type != AT_STRING ||
	       (ap->s.len == 6 && memcmp(ap->s.data, "NOTSET", 6) == 0) ||
	       (ap->s.len == 5 && memcmp(ap->s.data, "VALID", 5) == 0);
}

int64_t rw_attr_int(const Node *n, const char *name, int64_t dflt)
{
	const Attr *a = node_attr(n, name);
	return a && a->type == AT_INT ? a->i : dflt;
}

float rw_attr_float(const Node *n, const char *name, float dflt)
{
	const Attr *a = node_attr(n, name);
	return a && a->type == AT_FLOAT ? a->f : dflt;
}

/* ---- edits ------------------------------------------------------------ */

void rw_replace_uses(PassCtx *c, int from, int to)
{
	Graph *g = c->g;
	int moved = 0;
	for (int i = 0; i < g->nnodes; i++) {
		if (c->dead[i])
			continue;
		Node *nd = &g->nodes[i];
		for (int k = 0; k < nd->nin; k++)
			if (nd->in[k] == from) {
				nd->in[k] = to;
				moved++;
			}
	}
	for (int i = 0; i < c->npending; i++) {
		Node *nd = &c->pending[i].node;
		for (int k = 0; k < nd->nin; k++)
			if (nd->in[k] == from) {
				nd->in[k] = to;
				moved++;
			}
	}
	g->values[from].nuse -= moved;
	g->values[to].nuse += moved;
}

void rw_kill(PassCtx *c, int node)
{
	Graph *g = c->g;
	KILN_ASSERT(!c->dead[node]);
	c->dead[node] = true;
	Node *nd = &g->nodes[node];
	for (int k = 0; k < nd->nin; k++)
		if (nd->in[k] != NONE)
			g->values[nd->in[k]].nuse--;
	for (int k = 0; k < nd->nout; k++)
		if (nd->out[k] != NONE && g->values[nd->out[k]].producer == node)
			g->values[nd->out[k]].producer = NONE;
}

bool rw_bypass(PassCtx *c, int node, int x, int y)
{
	Graph *g = c->g;
	if (x == y || x == NONE || y == NONE)
		return false;
	if (!rw_pinned(c, y)) {
		rw_replace_uses(c, y, x);
		rw_kill(c, node);
		return true;
	}
	/* y is a graph output (or read by a subgraph): it must stay computed.
	 * If x is a plain temporary, its producer can write y directly. */
	const Value *vx = &g->values[x];
	if ((y < c->nnested && c->nested[y]) || vx->kind != VAL_TEMP || vx->producer == NONE ||
	    rw_pinned(c, x) || c->dead[vx->producer])
		return false;
	int p = vx->producer;
	rw_kill(c, node);
	rw_replace_uses(c, x, y);
	Node *pn = &g->nodes[p];
	for (int k = 0; k < pn->nout; k++)
		if (pn->out[k] == x)
			pn->out[k] = y;
	g->values[y].producer = p;
	g->values[x].producer = NONE;
	return true;
}

int rw_new_value(PassCtx *c, const char *hint, int dtype)
{
	Graph *g = c->g;
	const char *name;
	do
		name = arena_printf(c->a, "%s.kiln%d", hint && *hint ? hint : "v", c->uniq++);
	while (graph_lookup_local(g, name) != NONE);
	int id = graph_add_value(g, name);
	Value *v = &g->values[id];
	v->type = TK_TENSOR;
	v->dtype = dtype;
	v->kind = VAL_TEMP;
	return id;
}

void rw_make_const(PassCtx *c, int id, int dtype, const Shape *s, const void *bytes)
{
	Value *v = &c->g->values[id];
	Weight *w = arena_alloc(c->a, sizeof *w);
	w->nelem = shape_nelem(s);
	KILN_ASSERT(w->nelem >= 0);
	w->nbytes = dtype_bytes(dtype, w->nelem);
	w->bytes = bytes;
	w->hash = weight_hash(dtype, s, w);
	v->kind = VAL_WEIGHT;
	v->type = TK_TENSOR;
	v->weight = w;
	v->dtype = dtype;
	v->shape = *s;
	v->producer = NONE;
}

int rw_new_const(PassCtx *c, const char *hint, int dtype, const Shape *s, const void *bytes)
{
	int id = rw_new_value(c, hint, dtype);
	rw_make_const(c, id, dtype, s, bytes);
	return id;
}

int rw_new_i64(PassCtx *c, const char *hint, const int64_t *v, int n)
{
	int64_t *data = arena_array(c->a, (size_t)(n ? n : 1), sizeof *data);
	memcpy(data, v, (size_t)n * sizeof *data);
	Shape s = {.rank = 1};
	s.dims[0].size = n;
	return rw_new_const(c, hint, DT_INT64, &s, data);
}

static int onnx_opset(const Model *m)
{
	for (int i = 0; i < m->nopsets; i++)
		if (m->opsets[i].domain_id == DOMAIN_ONNX)
			return (int)m->opsets[i].version;
	return 1;
}

/* A new node of op (domain_id, opset) queued before node `before`. */
static int add_node(PassCtx *c, int before, int op, int domain_id, int opset, const int *in,
                    int nin, const int *out, int nout, const Attr *attrs, int nattrs,
                    const char *name)
{
	KILN_ASSERT(op != NONE);
	c->pending = arena_grow(c->a, c->pending, c->npending, &c->cappending, sizeof *c->pending);
	PendingNode *p = &c->pending[c->npending];
	memset(p, 0, sizeof *p);
	p->before = before;
	Node *n = &p->node;
	n->name = arena_strdup(c->a, name ? name : "");
	n->synthetic = true;
	n->op_type = op_info(op)->op_type;
	n->domain = domain_id == DOMAIN_KILN ? "kiln" : "";
	n->domain_id = domain_id;
	n->op = op;
	n->opset = opset;
	n->since = op_resolve(n->op, n->opset);
	n->nin = nin;
	n->in = arena_array(c->a, (size_t)(nin ? nin : 1), sizeof *n->in);
	memcpy(n->in, in, (size_t)nin * sizeof *in);
	n->nout = nout;
	n->out = arena_array(c->a, (size_t)(nout ? nout : 1), sizeof *n->out);
	memcpy(n->out, out, (size_t)nout * sizeof *out);
	n->nattrs = nattrs;
	n->attrs = arena_array(c->a, (size_t)(nattrs ? nattrs : 1), sizeof *n->attrs);
	if (nattrs)
		memcpy(n->attrs, attrs, (size_t)nattrs * sizeof *attrs);
	for (int k = 0; k < nin; k++)
		if (in[k] != NONE)
			c->g->values[in[k]].nuse++;
	c->stat->added++;
	return c->npending++;
}

int rw_add_node(PassCtx *c, int before, const char *op_type, const int *in, int nin,
                const int *out, int nout, const Attr *attrs, int nattrs, const char *name)
{
	return add_node(c, before, op_lookup(op_type, DOMAIN_ONNX), DOMAIN_ONNX, onnx_opset(c->m),
	                in, nin, out, nout, attrs, nattrs, name);
}

int rw_add_fused(PassCtx *c, int before, int op, const int *in, int nin, const int *out, int nout,
                 const Attr *attrs, int nattrs, const char *name)
{
	KILN_ASSERT(op >= 0 && op_info(op)->domain_id == DOMAIN_KILN);
	return add_node(c, before, op, DOMAIN_KILN, op_max_opset(DOMAIN_KILN), in, nin, out, nout,
	                attrs, nattrs, name);
}

Attr rw_int_attr(PassCtx *c, const char *name, int64_t v)
{
	return (Attr){.name = arena_strdup(c->a, name), .type = AT_INT, .i = v};
}

Attr rw_float_attr(PassCtx *c, const char *name, float v)
{
	return (Attr){.name = arena_strdup(c->a, name), .type = AT_FLOAT, .f = v};
}

Attr rw_ints_attr(PassCtx *c, const char *name, const int64_t *v, int n)
{
	int64_t *copy = arena_array(c->a, (size_t)(n ? n : 1), sizeof *copy);
	memcpy(copy, v, (size_t)n * sizeof *copy);
	return (Attr){.name = arena_strdup(c->a, name), .type = AT_INTS, .n = n, .ints = copy};
}

Attr rw_string_attr(PassCtx *c, const char *name, const char *s)
{
	char *copy = arena_strdup(c->a, s);
	return (Attr){.name = arena_strdup(c->a, name), .type = AT_STRING,
	              .s = {.data = copy, .len = strlen(copy)}};
}

void rw_add_member(PassCtx *c, Node *n, const Node *from)
{
	n->fused.members = arena_printf(c->a, "%s%s%s \"%s\"", n->fused.members ? n->fused.members : "",
	                                n->fused.members ? ", " : "", from->op_type, from->name);
}

void rw_set_attr(PassCtx *c, Node *n, Attr at)
{
	for (int k = 0; k < n->nattrs; k++)
		if (strcmp(n->attrs[k].name, at.name) == 0) {
			n->attrs[k] = at;
			return;
		}
	Attr *attrs = arena_array(c->a, (size_t)n->nattrs + 1, sizeof *attrs);
	if (n->nattrs)
		memcpy(attrs, n->attrs, (size_t)n->nattrs * sizeof *attrs);
	attrs[n->nattrs] = at;
	n->attrs = attrs;
	n->nattrs++;
}

void rw_commit(PassCtx *c)
{
	Graph *g = c->g;
	bool any_dead = false;
	for (int i = 0; i < g->nnodes && !any_dead; i++)
		any_dead = c->dead[i];
	if (!any_dead && c->npending == 0)
		return;
	int cap = g->nnodes + c->npending;
	Node *nodes = arena_array(c->a, (size_t)(cap ? cap : 1), sizeof *nodes);
	int n = 0;
	for (int i = 0; i <= g->nnodes; i++) {
		for (int j = 0; j < c->npending; j++)
			if (c->pending[j].before == i || (i == g->nnodes && c->pending[j].before > i))
				nodes[n++] = c->pending[j].node;
		if (i < g->nnodes && !c->dead[i])
			nodes[n++] = g->nodes[i];
	}
	for (int i = 0; i < n; i++) {
		Node *nd = &nodes[i];
		nd->id = i;
		for (int k = 0; k < nd->nout; k++)
			if (nd->out[k] != NONE) {
				g->values[nd->out[k]].producer = i;
				g->values[nd->out[k]].kind = VAL_TEMP;
			}
		for (int k = 0; k < nd->nattrs; k++)
			if (nd->attrs[k].type == AT_GRAPH || nd->attrs[k].type == AT_GRAPHS)
				for (int j = 0; j < nd->attrs[k].n; j++)
					nd->attrs[k].graphs[j]->parent_node = i;
	}
	g->nodes = nodes;
	g->nnodes = n;
	c->npending = 0;
	c->dead = arena_array(c->a, (size_t)(n ? n : 1), sizeof *c->dead);
	index_users(c);
}
