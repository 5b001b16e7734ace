/*
 * ir.c - the graph IR: element types, values and their names, the stable
 * text dump, and walking nested graphs.
 *
 * Values live in one growable array per graph and are referred to by index.
 * While a graph is loaded, a hash table maps names to value ids; lookups of
 * names a subgraph does not define climb to the enclosing graphs and leave a
 * VAL_OUTER value in each graph crossed, so every graph can be read alone.
 */
#include <stdarg.h>
#include <string.h>

#include "ir.h"

/* ---- limits and errors naming a node ------------------------------------ */

/* Far above real models (the largest public ONNX models have ~10^4 nodes
 * and tensors of ~10^9 elements); docs/limits.md. */
const Limits kiln_default_limits = {
	.max_nodes = 200000,
	.max_elements = (int64_t)1 << 36,
	.max_arena_bytes = (int64_t)16 << 30,
	.max_c_bytes = (int64_t)256 << 20,
	.max_depth = 20,
};

size_t diag_node_path(char *buf, size_t size, const Graph *g, const Node *n)
{
	size_t len = 0;
	/* Outer graphs first, so the message reads from the top of the model. */
	if (g->parent) {
		len = diag_node_path(buf, size, g->parent, &g->parent->nodes[g->parent_node]);
		len += (size_t)snprintf(buf + len, len < size ? size - len : 0, " %s: ",
		                        g->parent_attr ? g->parent_attr : "subgraph");
	}
	if (len >= size)
		return len;
	len += (size_t)snprintf(buf + len, size - len, "node %d \"%s\" (%s", n->id,
	                        n->name ? n->name : "", n->op_type ? n->op_type : "?");
	if (len < size)
		len += (size_t)snprintf(buf + len, size - len, ", %s opset %d)",
		                        domain_name(n->domain_id) ? domain_name(n->domain_id)
		                                                 : n->domain,
		                        n->opset);
	return len;
}

_Noreturn void diag_fail_node(Diag *d, const Graph *g, const Node *n, enum kiln_status st,
                              const char *fmt, ...)
{
	char buf[sizeof d->msg];
	size_t len = diag_node_path(buf, sizeof buf, g, n);
	if (len + 2 < sizeof buf) {
		memcpy(buf + len, ": ", 3);
		len += 2;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(buf + len, sizeof buf - len, fmt, ap);
		va_end(ap);
	}
	diag_fail(d, st, "%s", buf);
}

/* ---- element types ---------------------------------------------------- */

static const struct {
	const char *name;
	size_t bytes;
} dtypes[DT_COUNT] = {
	[DT_UNDEFINED] = {"undefined", 0}, [DT_FLOAT] = {"float32", 4},  [DT_UINT8] = {"uint8", 1},
	[DT_INT8] = {"int8", 1},           [DT_UINT16] = {"uint16", 2},  [DT_INT16] = {"int16", 2},
	[DT_INT32] = {"int32", 4},         [DT_INT64] = {"int64", 8},    [DT_STRING] = {"string", 0},
	[DT_BOOL] = {"bool", 1},           [DT_FLOAT16] = {"float16", 2}, [DT_DOUBLE] = {"float64", 8},
	[DT_UINT32] = {"uint32", 4},       [DT_UINT64] = {"uint64", 8},
	[DT_COMPLEX64] = {"complex64", 8}, [DT_COMPLEX128] = {"complex128", 16},
	[DT_BFLOAT16] = {"bfloat16", 2},
	[DT_FLOAT8E4M3FN] = {"float8e4m3fn", 1}, [DT_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 1},
	[DT_FLOAT8E5M2] = {"float8e5m2", 1},     [DT_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 1},
	[DT_UINT4] = {"uint4", 1},               [DT_INT4] = {"int4", 1},
};

bool dtype_valid(int dt)
{
	return dt > DT_UNDEFINED && dt < DT_COUNT;
}

const char *dtype_name(int dt)
{
	return dt >= 0 && dt < DT_COUNT ? dtypes[dt].name : "?";
}

size_t dtype_size(int dt)
{
	return dt >= 0 && dt < DT_COUNT ? dtypes[dt].bytes : 0;
}

uint64_t dtype_bytes(int dt, int64_t nelem)
{
	if (nelem <= 0)
		return 0;
	if (DT_IS_4BIT(dt))
		return ((uint64_t)nelem + 1) / 2;
	return (uint64_t)nelem * dtype_size(dt);
}

/* ---- names ------------------------------------------------------------ */

typedef struct NameMap {
	const char **keys;
	int *ids;
	size_t cap, count;   /* cap is a power of two */
} NameMap;

uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325u;  /* FNV-1a: names are short */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3u;
	return h;
}

static void map_grow(Graph *g)
{
	Arena *a = g->model->arena;
	NameMap *old = g->names, *nm = arena_alloc(a, sizeof *nm);
	nm->cap = old ? old->cap * 2 : 64;
	nm->keys = arena_array(a, nm->cap, sizeof *nm->keys);
	nm->ids = arena_array(a, nm->cap, sizeof *nm->ids);
	g->names = nm;
	if (old)
		for (size_t i = 0; i < old->cap; i++)
			if (old->keys[i])
				graph_bind(g, old->keys[i], old->ids[i]);
}

void graph_bind(Graph *g, const char *name, int id)
{
	if (!g->names || (g->names->count + 1) * 2 > g->names->cap)
		map_grow(g);
	NameMap *nm = g->names;
	size_t i = (size_t)name_hash(name) & (nm->cap - 1);
	while (nm->keys[i] && strcmp(nm->keys[i], name) != 0)
		i = (i + 1) & (nm->cap - 1);
	if (!nm->keys[i])
		nm->count++;
	nm->keys[i] = name;
	nm->ids[i] = id;
}

int graph_lookup_local(Graph *g, const char *name)
{
	NameMap *nm = g->names;
	if (!nm)
		return NONE;
	size_t i = (size_t)name_hash(name) & (nm->cap - 1);
	while (nm->keys[i]) {
		if (strcmp(nm->keys[i], name) == 0)
			return nm->ids[i];
		i = (i + 1) & (nm->cap - 1);
	}
	return NONE;
}

int graph_lookup(Graph *g, const char *name)
{
	int id = graph_lookup_local(g, name);
	if (id != NONE || !g->parent)
		return id;
	int outer = graph_lookup(g->parent, name);
	if (outer == NONE)
		return NONE;
	const Value *ov = &g->parent->values[outer];
	g->parent->values[outer].nuse++;
	id = graph_add_value(g, name);
	Value *v = &g->values[id];
	v->kind = VAL_OUTER;
	v->outer_id = outer;
	v->type = ov->type;
	v->dtype = ov->dtype;
	v->shape = ov->shape;
	return id;
}

Value *graph_value(Graph *g, int id)
{
	KILN_ASSERT(id >= 0 && id < g->nvalues);
	return &g->values[id];
}

int graph_add_value(Graph *g, const char *name)
{
	Arena *a = g->model->arena;
	g->values = arena_grow(a, g->values, g->nvalues, &g->capvalues, sizeof *g->values);
	int id = g->nvalues++;
	Value *v = &g->values[id];
	memset(v, 0, sizeof *v);
	v->name = arena_strdup(a, name);
	v->shape.rank = -1;
	v->producer = NONE;
	v->outer_id = NONE;
	graph_bind(g, v->name, id);
	return id;
}

/* ---- shapes ----------------------------------------------------------- */

int64_t shape_nelem(const Shape *s)
{
	if (s->rank < 0)
		return -1;
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++) {
		int64_t d = s->dims[i].size;
		if (d < 0 || (d && n > INT64_MAX / d))
			return -1;
		n *= d;
	}
	return n;
}

void shape_print(const Shape *s, FILE *out)
{
	if (s->rank < 0) {
		fputs("[?]", out);
		return;
	}
	fputc('[', out);
	for (int i = 0; i < s->rank; i++) {
		if (i)
			fputc(',', out);
		if (s->dims[i].size >= 0)
			fprintf(out, "%lld", (long long)s->dims[i].size);
		else if (s->dims[i].param)
			fputs(s->dims[i].param, out);
		else
			fputc('?', out);
	}
	fputc(']', out);
}

/* ---- walking and printing --------------------------------------------- */

const Attr *node_attr(const Node *n, const char *name)
{
	for (int i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0)
			return &n->attrs[i];
	return NULL;
}

/* Float attributes are float32 in ONNX; returned widened for printing. */
double node_attr_float(const Node *n, const char *name, float dflt)
{
	const Attr *a = node_attr(n, name);
	return (double)(a && a->type == AT_FLOAT ? a->f : dflt);
}

bool node_attr_is(const Node *n, const char *name, const char *want)
{
	const Attr *a = node_attr(n, name);
	size_t len = strlen(want);
	return a && a->type == AT_STRING && a->s.len == len && memcmp(a->s.data, want, len) == 0;
}

int64_t node_attr_int(const Node *n, const char *name, int64_t dflt)
{
	const Attr *a = node_attr(n, name);
	return a && a->type == AT_INT ? a->i : dflt;
}

bool node_has_subgraph(const Node *n)
{
	for (int k = 0; k < n->nattrs; k++)
		if (n->attrs[k].type == AT_GRAPH || n->attrs[k].type == AT_GRAPHS)
			return true;
	return false;
}

void graph_walk(Graph *g, GraphVisit visit, void *user)
{
	visit(g, user);
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		for (int k = 0; k < n->nattrs; k++)
			if (n->attrs[k].type == AT_GRAPH || n->attrs[k].type == AT_GRAPHS)
				for (int j = 0; j < n->attrs[k].n; j++)
					graph_walk(n->attrs[k].graphs[j], visit, user);
	}
}

static const char *kind_name(const Value *v)
{
	switch (v->kind) {
	case VAL_TEMP: return "temp";
	case VAL_INPUT: return "input";
	case VAL_WEIGHT: return v->is_overridable ? "weight(overridable)" : "weight";
	case VAL_OUTER: return "outer";
	}
	return "?";
}

static void print_graph(const Graph *g, FILE *out, int indent)
{
	fprintf(out, "%*sgraph \"%s\" (%d nodes, %d values)\n", indent, "", g->name, g->nnodes,
	        g->nvalues);
	for (int i = 0; i < g->nvalues; i++) {
		const Value *v = &g->values[i];
		fprintf(out, "%*s  %%v%d \"%s\" %s %s ", indent, "", i, v->name, kind_name(v),
		        dtype_name(v->dtype));
		shape_print(&v->shape, out);
		if (v->is_output)
			fputs(" output", out);
		if (v->is_inline)
			fputs(" inline", out);  /* in an elementwise chain (passes/ewchain.c) */
		if (v->kind == VAL_OUTER)
			fprintf(out, " -> parent %%v%d", v->outer_id);
		fprintf(out, " uses=%d\n", v->nuse);
	}
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		fprintf(out, "%*s  n%d \"%s\" %s%s%s v%d (", indent, "", i, n->name,
		        n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type, n->since);
		for (int k = 0; k < n->nin; k++)
			n->in[k] == NONE ? fprintf(out, "%s_", k ? ", " : "")
			                 : fprintf(out, "%s%%v%d", k ? ", " : "", n->in[k]);
		fputs(") -> (", out);
		for (int k = 0; k < n->nout; k++)
			n->out[k] == NONE ? fprintf(out, "%s_", k ? ", " : "")
			                  : fprintf(out, "%s%%v%d", k ? ", " : "", n->out[k]);
		fputs(")\n", out);
		for (int k = 0; k < n->nattrs; k++) {
			const Attr *at = &n->attrs[k];
			if (at->type == AT_GRAPH || at->type == AT_GRAPHS)
				for (int j = 0; j < at->n; j++) {
					fprintf(out, "%*s    %s:\n", indent, "", at->name);
					print_graph(at->graphs[j], out, indent + 6);
				}
		}
	}
}

void ir_print(const Graph *g, FILE *out)
{
	print_graph(g, out, 0);
}

/* ---- verification ----------------------------------------------------- */

/* The invariants the loader establishes and every pass must keep. A failure
 * is a bug in kiln, not in the model, so it aborts with the broken rule. */
static void verify_graph(Graph *g, void *user)
{
	(void)user;
	KILN_ASSERT(g->nvalues >= 0 && g->nvalues <= g->capvalues);
	for (int i = 0; i < g->nvalues; i++) {
		const Value *v = &g->values[i];
		KILN_ASSERT(v->name && v->name[0]);
		KILN_ASSERT(v->dtype == DT_UNDEFINED || dtype_valid(v->dtype));
		KILN_ASSERT(v->shape.rank >= -1 && v->shape.rank <= KILN_MAX_RANK);
		/* A temporary without a producer is an orphan a pass left behind:
		 * nothing may read it (passes/passes.h). */
		KILN_ASSERT((v->kind == VAL_TEMP) == (v->producer != NONE) ||
		            (v->kind == VAL_TEMP && v->nuse == 0 && !v->is_output));
		KILN_ASSERT(v->producer == NONE || (v->producer >= 0 && v->producer < g->nnodes));
		KILN_ASSERT((v->kind == VAL_WEIGHT) == (v->weight != NULL));
		if (v->kind == VAL_OUTER) {
			KILN_ASSERT(g->parent && v->outer_id >= 0 && v->outer_id < g->parent->nvalues);
			KILN_ASSERT(strcmp(g->parent->values[v->outer_id].name, v->name) == 0);
		}
	}
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		KILN_ASSERT(n->id == i);
		for (int k = 0; k < n->nin; k++) {
			int id = n->in[k];
			KILN_ASSERT(id == NONE || (id >= 0 && id < g->nvalues));
			/* Topological order: an input made by a node is made by an earlier one. */
			KILN_ASSERT(id == NONE || g->values[id].producer < i);
		}
		for (int k = 0; k < n->nout; k++) {
			int id = n->out[k];
			KILN_ASSERT(id == NONE || (id >= 0 && id < g->nvalues));
			KILN_ASSERT(id == NONE || g->values[id].producer == i);
		}
	}
	for (int i = 0; i < g->ninputs; i++)
		KILN_ASSERT(g->inputs[i] >= 0 && g->inputs[i] < g->nvalues);
	for (int i = 0; i < g->noutputs; i++)
		KILN_ASSERT(g->outputs[i] >= 0 && g->outputs[i] < g->nvalues &&
		            g->values[g->outputs[i]].is_output);
}

void ir_verify(Graph *g)
{
	graph_walk(g, verify_graph, NULL);
}

const char *type_kind_name(TypeKind t)
{
	switch (t) {
	case TK_TENSOR: return "tensor";
	case TK_SEQUENCE: return "sequence";
	case TK_MAP: return "map";
	case TK_OPTIONAL: return "optional";
	case TK_SPARSE: return "sparse_tensor";
	case TK_UNKNOWN: break;
	}
	return "unknown";
}
