/*
 * shape.c - shape inference for one batch signature.
 *
 * A signature binds every graph input to a static shape: the batch axis
 * (axis 0 of an input whose first dim is symbolic, or --batch-dim) to the
 * batch size, and any other dim from --shape. Inference then walks the nodes
 * in order and asks each op's hook (in compiler/ops/) for its outputs' dtypes and
 * shapes. Hooks also evaluate shape arithmetic at compile time: small integer
 * values whose contents are known (weights, Constant, Shape, and what is
 * computed from them) are "folded", so Shape -> Gather -> Concat -> Reshape
 * chains end in static shapes. After inference every value of the graph has
 * a static shape, or the signature fails naming the tensor, node and dim.
 *
 * The IR keeps the declared (symbolic) shapes; each signature has its own
 * arrays indexed by value id.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "opdef.h"

/* ---- binding ---------------------------------------------------------- */

static const ShapeOverride *find_override(const BindOptions *o, const char *name)
{
	for (int i = 0; i < o->nshapes; i++)
		if (strcmp(o->shapes[i].input, name) == 0)
			return &o->shapes[i];
	return NULL;
}

static int find_batch_dim(const BindOptions *o, const char *name)
{
	for (int i = 0; i < o->nbatch_dims; i++)
		if (strcmp(o->batch_dims[i].input, name) == 0)
			return o->batch_dims[i].axis;
	return NONE;
}

/* Every option must name a real runtime input: a typo is an error, not a no-op. */
static void check_option_names(Graph *g, const BindOptions *o, Diag *d)
{
	for (int k = 0; k < o->nshapes + o->nbatch_dims + o->nfreezes; k++) {
		const char *name = k < o->nshapes ? o->shapes[k].input
		                   : k < o->nshapes + o->nbatch_dims
		                       ? o->batch_dims[k - o->nshapes].input
		                       : o->freezes[k - o->nshapes - o->nbatch_dims].input;
		bool found = false;
		for (int i = 0; i < g->ninputs && !found; i++)
			found = g->values[g->inputs[i]].kind == VAL_INPUT &&
			        strcmp(g->values[g->inputs[i]].name, name) == 0;
		if (!found)
			diag_fail(d, KILN_USAGE, "%s names \"%s\", which is not a graph input",
			          k < o->nshapes ? "--shape"
			          : k < o->nshapes + o->nbatch_dims ? "--batch-dim" : "--freeze", name);
	}
}

/* The --shape flag that fixes v: N on the batch axis (without one, the
 * first symbolic dim), its static dims, and its other symbols as <name>
 * placeholders for the user to fill in (kiln check prints it too). */
const char *shape_flag(Arena *a, const Value *v, int batch_axis)
{
	for (int k = 0; k < v->shape.rank && batch_axis < 0; k++)
		if (v->shape.dims[k].size < 0)
			batch_axis = k;
	const char *flag = arena_printf(a, "%s=", v->name);
	for (int k = 0; k < v->shape.rank; k++) {
		const Dim *dm = &v->shape.dims[k];
		const char *dim = k == batch_axis ? "N"
		                  : dm->size >= 0 ? arena_printf(a, "%lld", (long long)dm->size)
		                  : arena_printf(a, "<%s>", dm->param ? dm->param : "size");
		flag = arena_printf(a, "%s%s%s", flag, k ? "," : "", dim);
	}
	return flag;
}

/* --dim SYMBOL=V: the value of a symbolic dim, or -1. */
static int64_t find_dim(const BindOptions *o, const char *param)
{
	for (int i = 0; param && i < o->ndims; i++)
		if (strcmp(o->dims[i].symbol, param) == 0)
			return o->dims[i].value;
	return -1;
}

/* Every --dim must name a symbol of some input. */
static void check_dims(Graph *g, const BindOptions *o, Diag *d)
{
	for (int k = 0; k < o->ndims; k++) {
		bool found = false;
		for (int i = 0; i < g->ninputs && !found; i++) {
			const Value *v = &g->values[g->inputs[i]];
			for (int j = 0; v->kind == VAL_INPUT && j < v->shape.rank && !found; j++)
				found = v->shape.dims[j].param &&
				        strcmp(v->shape.dims[j].param, o->dims[k].symbol) == 0;
		}
		if (!found)
			diag_fail(d, KILN_USAGE, "--dim names \"%s\", which is not a symbolic dim of any "
			          "graph input", o->dims[k].symbol);
	}
}

/* The user's --shape flags against the dims the model declares: a static
 * dim given another size (the batch axis aside) is named as that, not found
 * later by a node downstream. A --shape of another rank replaces the
 * declared shape (some exports declare a wrong one). */
static void check_declared(const Graph *g, const BindOptions *o, Diag *d)
{
	for (int k = 0; k < o->nshapes; k++) {
		const ShapeOverride *ov = &o->shapes[k];
		for (int i = 0; i < g->ninputs; i++) {
			const Value *v = &g->values[g->inputs[i]];
			if (v->kind != VAL_INPUT || strcmp(v->name, ov->input) != 0 ||
			    v->shape.rank != ov->rank)
				continue;
			int batch_axis = find_batch_dim(o, v->name);
			for (int j = 0; j < ov->rank; j++)
				if (j != batch_axis && v->shape.dims[j].size >= 0 &&
				    v->shape.dims[j].size != ov->dims[j])
					diag_fail(d, KILN_SHAPE_ERROR, "--shape %s: dim %d is %lld; the model declares %lld",
					          ov->input, j, (long long)ov->dims[j],
					          (long long)v->shape.dims[j].size);
		}
	}
}

static void bind_inputs(Sig *s, const BindOptions *o, Diag *d)
{
	Graph *g = s->g;
	check_option_names(g, o, d);
	check_dims(g, o, d);
	if (o->check_declared)
		check_declared(g, o, d);
	/* Symbols of batch axes: the same name elsewhere is the batch too. */
	const char *batch_syms[64];
	int nsyms = 0;
	for (int i = 0; i < g->ninputs; i++) {
		const Value *v = &g->values[g->inputs[i]];
		if (v->kind != VAL_INPUT || v->shape.rank < 1)
			continue;
		int axis = find_batch_dim(o, v->name);
		if (axis == NONE && !find_override(o, v->name) && v->shape.dims[0].size < 0)
			axis = 0;
		if (axis != NONE && axis < v->shape.rank && v->shape.dims[axis].param && nsyms < 64)
			batch_syms[nsyms++] = v->shape.dims[axis].param;
	}
	for (int i = 0; i < g->ninputs; i++) {
		int id = g->inputs[i];
		const Value *v = &g->values[id];
		if (v->kind != VAL_INPUT)
			continue;
		if (v->type != TK_TENSOR)
			diag_fail(d, KILN_UNSUPPORTED, "graph input \"%s\" is a %s, not a tensor", v->name,
			          v->type == TK_SEQUENCE ? "sequence" : "non-tensor value");
		if (!dtype_valid(v->dtype))
			diag_fail(d, KILN_INVALID_MODEL, "graph input \"%s\" has no element type", v->name);
		Shape sh = v->shape;
		const ShapeOverride *ov = find_override(o, v->name);
		int axis = find_batch_dim(o, v->name);
		if (ov) {
			sh.rank = ov->rank;
			for (int k = 0; k < ov->rank; k++)
				sh.dims[k] = (Dim){ov->dims[k], NULL};
		}
		if (sh.rank < 0)
			diag_fail(d, KILN_SHAPE_ERROR,
			          "graph input \"%s\" has no declared shape: give it with --shape %s=d0,d1,...",
			          v->name, v->name);
		if (axis != NONE && axis >= sh.rank)
			diag_fail(d, KILN_USAGE, "--batch-dim %s=%d: the input has rank %d", v->name, axis,
			          sh.rank);
		if (axis == NONE && !ov && sh.rank > 0 && sh.dims[0].size < 0 &&
		    find_dim(o, sh.dims[0].param) < 0)
			axis = 0;
		for (int k = 0; k < sh.rank; k++) {
			int64_t fixed = k == axis ? -1 : find_dim(o, sh.dims[k].param);
			if (fixed >= 0)
				sh.dims[k] = (Dim){fixed, NULL};
			bool is_batch = k == axis;
			for (int j = 0; j < nsyms && !is_batch && sh.dims[k].param; j++)
				is_batch = strcmp(sh.dims[k].param, batch_syms[j]) == 0;
			if (is_batch && !ov)
				sh.dims[k] = (Dim){s->batch, NULL};
			else if (is_batch && k == axis)
				sh.dims[k] = (Dim){s->batch, NULL};
			if (sh.dims[k].size < 0 && k > 0 && axis == NONE)
				diag_fail(d, KILN_SHAPE_ERROR,
				          "graph input \"%s\" dim %d (%s) is not static: if it is the batch axis, "
				          "say so with --batch-dim %s=%d; else fix it with --shape %s=...",
				          v->name, k, sh.dims[k].param ? sh.dims[k].param : "unknown", v->name, k,
				          v->name);
			if (sh.dims[k].size < 0)
				diag_fail(d, KILN_SHAPE_ERROR,
				          "graph input \"%s\" dim %d (%s) is not static: fix it with --shape %s",
				          v->name, k, sh.dims[k].param ? sh.dims[k].param : "unknown",
				          shape_flag(s->a, v, axis));
		}
		char why[200];
		if (shape_size_problem(&sh, &g->model->limits, why, sizeof why))
			diag_fail(d, KILN_LIMIT, "graph input \"%s\": %s", v->name, why);
		s->shapes[id] = sh;
		s->dtypes[id] = v->dtype;
		for (int k = 0; k < o->nfreezes; k++) {
			const Tensor *t = o->freezes[k].value;
			if (strcmp(o->freezes[k].input, v->name) != 0)
				continue;
			if (!t)
				t = freeze_values(v->name, v->dtype, o->freezes[k].text, s->a, d);
			if (t->dtype != v->dtype || t->w.nelem != shape_nelem(&sh) || t->dtype == DT_STRING)
				diag_fail(d, KILN_USAGE, "frozen value of input \"%s\" has %lld elements; its "
				          "shape holds %lld", v->name, (long long)t->w.nelem,
				          (long long)shape_nelem(&sh));
			Folded *f = arena_alloc(s->a, sizeof *f);
			*f = (Folded){t->dtype, t->w.nelem, t->w.bytes};
			s->folded[id] = f;
		}
	}
}

/* ---- hook helpers ----------------------------------------------------- */

_Noreturn void infer_fail(Infer *x, enum kiln_status st, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_fail_node(x->d, x->g, x->n, st, "%s (batch %lld)", msg, (long long)x->sig->batch);
}

bool infer_has_input(Infer *x, int i)
{
	return i < x->n->nin && x->n->in[i] != NONE;
}

static int input_id(Infer *x, int i)
{
	if (!infer_has_input(x, i))
		infer_fail(x, KILN_INVALID_MODEL, "input %d is required", i);
	return x->n->in[i];
}

const Shape *infer_shape(Infer *x, int i)
{
	return &x->sig->shapes[input_id(x, i)];
}

int infer_dtype(Infer *x, int i)
{
	return x->sig->dtypes[input_id(x, i)];
}

const char *infer_input_name(Infer *x, int i)
{
	return infer_has_input(x, i) ? x->g->values[x->n->in[i]].name : "";
}

static _Noreturn void overflow(Infer *x, const char *op, int64_t a, int64_t b)
{
	infer_fail(x, KILN_LIMIT, "shape arithmetic overflows int64 (%lld %s %lld)", (long long)a, op,
	           (long long)b);
}

int64_t infer_add(Infer *x, int64_t a, int64_t b)
{
	int64_t r;
	if (ck_add(a, b, &r))
		overflow(x, "+", a, b);
	return r;
}

int64_t infer_sub(Infer *x, int64_t a, int64_t b)
{
	int64_t r;
	if (ck_sub(a, b, &r))
		overflow(x, "-", a, b);
	return r;
}

int64_t infer_mul(Infer *x, int64_t a, int64_t b)
{
	int64_t r;
	if (ck_mul(a, b, &r))
		overflow(x, "*", a, b);
	return r;
}

/* The product of the dims, a zero dim counting as 1, is the tensor's size
 * for the limit: so every dim is bounded too, and the sums and products of
 * dims later passes make cannot overflow. */
const char *shape_size_problem(const Shape *s, const Limits *l, char *buf, size_t size)
{
	int64_t n = 1;
	for (int k = 0; k < s->rank; k++) {
		int64_t d = s->dims[k].size > 1 ? s->dims[k].size : 1;
		if (ck_mul(n, d, &n) || n > l->max_elements) {
			int len = snprintf(buf, size, "shape [");
			for (int j = 0; j < s->rank && len >= 0 && (size_t)len < size; j++)
				len += snprintf(buf + len, size - (size_t)len, "%s%lld", j ? "," : "",
				                (long long)s->dims[j].size);
			if (len >= 0 && (size_t)len < size)
				snprintf(buf + len, size - (size_t)len,
				         "] has more than %lld elements (raise the limit with --max-elements)",
				         (long long)l->max_elements);
			return buf;
		}
	}
	return NULL;
}

void infer_set_output(Infer *x, int i, int dtype, const Shape *s)
{
	if (i >= x->n->nout || x->n->out[i] == NONE)
		return;
	for (int k = 0; k < s->rank; k++)
		if (s->dims[k].size < 0)
			infer_fail(x, KILN_SHAPE_ERROR, "output %d \"%s\" dim %d is not static", i,
			           x->g->values[x->n->out[i]].name, k);
	char why[200];
	if (shape_size_problem(s, &x->g->model->limits, why, sizeof why))
		infer_fail(x, KILN_LIMIT, "output %d \"%s\": %s", i, x->g->values[x->n->out[i]].name, why);
	x->sig->shapes[x->n->out[i]] = *s;
	x->sig->dtypes[x->n->out[i]] = dtype;
}

/* Contents of a weight as a Folded view (any dtype; integers are what shape
 * arithmetic needs, but Constant floats are folded too). */
static const Folded *fold_weight(Infer *x, int id)
{
	Value *v = &x->g->values[id];
	if (v->kind == VAL_OUTER) {
		/* Weights of enclosing graphs are reachable through the link. */
		return NULL;
	}
	if (v->kind != VAL_WEIGHT || v->type != TK_TENSOR || v->dtype == DT_STRING ||
	    DT_IS_4BIT(v->dtype))
		return NULL;
	Folded *f = arena_alloc(x->a, sizeof *f);
	f->dtype = v->dtype;
	f->nelem = v->weight->nelem;
	f->data = v->weight->bytes;
	x->sig->folded[id] = f;
	return f;
}

const Folded *infer_folded(Infer *x, int i)
{
	if (!infer_has_input(x, i))
		return NULL;
	int id = x->n->in[i];
	return x->sig->folded[id] ? x->sig->folded[id] : fold_weight(x, id);
}

const Folded *infer_required(Infer *x, int i)
{
	const Folded *f = infer_folded(x, i);
	if (f || !infer_has_input(x, i))
		return f;
	return peval_demand(x, x->n->in[i]);
}

/* Integer contents of input i, converted to int64; NULL if not known. */
const int64_t *infer_ints(Infer *x, int i, int64_t *n)
{
	const Folded *f = infer_folded(x, i);
	if (!f || (f->dtype != DT_INT64 && f->dtype != DT_INT32))
		return NULL;
	*n = f->nelem;
	static const int64_t none[1];
	if (f->nelem == 0)
		return none;  /* known, and empty */
	if (f->dtype == DT_INT64 && ((uintptr_t)f->data & 7) == 0)
		return f->data;
	int64_t *out = arena_array(x->a, (size_t)f->nelem, sizeof *out);
	for (int64_t k = 0; k < f->nelem; k++) {
		if (f->dtype == DT_INT64) {
			memcpy(&out[k], (const char *)f->data + 8 * k, 8);
		} else {
			int32_t v;
			memcpy(&v, (const char *)f->data + 4 * k, 4);
			out[k] = v;
		}
	}
	return out;
}

/* The smallest graph input whose unknown contents input i is computed from
 * (walking producers back, stopping at known values), or NONE. */
static int unknown_source(Infer *x, int i)
{
	const Graph *g = x->g;
	bool *seen = arena_array(x->a, (size_t)g->nvalues, sizeof *seen);
	int *stack = arena_array(x->a, (size_t)g->nvalues, sizeof *stack);
	int nstack = 0, best = NONE;
	stack[nstack++] = x->n->in[i];
	seen[x->n->in[i]] = true;
	while (nstack > 0) {
		int id = stack[--nstack];
		const Value *v = &g->values[id];
		if (x->sig->folded[id] || v->kind == VAL_WEIGHT)
			continue;
		if (v->kind == VAL_INPUT) {
			if (best == NONE ||
			    shape_nelem(&x->sig->shapes[id]) < shape_nelem(&x->sig->shapes[best]))
				best = id;
			continue;
		}
		if (v->kind != VAL_TEMP || v->producer == NONE)
			continue;
		const Node *p = &g->nodes[v->producer];
		for (int k = 0; k < p->nin; k++)
			if (p->in[k] != NONE && !seen[p->in[k]]) {
				seen[p->in[k]] = true;
				stack[nstack++] = p->in[k];
			}
	}
	return best;
}

/* Input i decides a shape but its contents are not known. When it is
 * computed from a graph input, the message names that input last before
 * the phrase, since it is the one to freeze or make constant. */
_Noreturn void infer_fail_unknown(Infer *x, int i, const char *hint)
{
	int src = infer_has_input(x, i) ? unknown_source(x, i) : NONE;
	if (src != NONE && src != x->n->in[i])
		infer_fail(x, KILN_UNSUPPORTED,
		           "input %d \"%s\" is computed from graph input \"%s\", which must be known "
		           "at compile time%s (--freeze %s=V0,V1,...)",
		           i, infer_input_name(x, i), x->g->values[src].name, hint,
		           x->g->values[src].name);
	if (infer_has_input(x, i) && x->g->values[x->n->in[i]].kind == VAL_INPUT)
		infer_fail(x, KILN_UNSUPPORTED,
		           "input %d \"%s\" must be known at compile time%s (--freeze %s=V0,V1,...)", i,
		           infer_input_name(x, i), hint, infer_input_name(x, i));
	infer_fail(x, KILN_UNSUPPORTED, "input %d \"%s\" must be known at compile time%s", i,
	           infer_input_name(x, i), hint);
}

const int64_t *infer_require_ints(Infer *x, int i, int64_t *n)
{
	infer_required(x, i);
	const int64_t *v = infer_ints(x, i, n);
	if (!v)
		infer_fail_unknown(x, i, " (a constant, or computed from shapes)");
	return v;
}

void infer_set_folded(Infer *x, int i, int dtype, int64_t nelem, const void *data)
{
	if (i >= x->n->nout || x->n->out[i] == NONE)
		return;
	Folded *f = arena_alloc(x->a, sizeof *f);
	f->dtype = dtype;
	f->nelem = nelem;
	f->data = data;
	x->sig->folded[x->n->out[i]] = f;
}

/* Folding is for shape arithmetic: keep it to small tensors. */
bool infer_foldable(const Shape *s)
{
	int64_t n = shape_nelem(s);
	return n >= 0 && n <= 4096;
}

const Attr *node_attr(const Node *n, const char *name)
{
	for (int i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0)
			return &n->attrs[i];
	return NULL;
}

int64_t attr_int(Infer *x, const char *name, int64_t dflt)
{
	const Attr *a = node_attr(x->n, name);
	if (!a)
		return dflt;
	if (a->type != AT_INT)
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"%s\" must be an int", name);
	return a->i;
}

float attr_float(Infer *x, const char *name, float dflt)
{
	const Attr *a = node_attr(x->n, name);
	if (!a)
		return dflt;
	if (a->type != AT_FLOAT)
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"%s\" must be a float", name);
	return a->f;
}

/* Copies an INTS attribute into out (up to max); returns the count or -1 if absent. */
int attr_ints(Infer *x, const char *name, int64_t *out, int max)
{
	const Attr *a = node_attr(x->n, name);
	if (!a)
		return -1;
	if (a->type != AT_INTS)
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"%s\" must be a list of ints", name);
	if (a->n > max)
		infer_fail(x, KILN_LIMIT, "attribute \"%s\" has %d values; at most %d fit", name, a->n,
		           max);
	for (int i = 0; i < a->n; i++)
		out[i] = a->ints[i];
	return a->n;
}

const char *attr_string(Infer *x, const char *name, const char *dflt)
{
	const Attr *a = node_attr(x->n, name);
	if (!a)
		return dflt;
	if (a->type != AT_STRING)
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"%s\" must be a string", name);
	char *s = arena_alloc(x->a, a->s.len + 1);
	if (a->s.len)   /* an empty string may have no data (found by tests/fuzz) */
		memcpy(s, a->s.data, a->s.len);
	return s;
}

/* Normalizes a possibly negative axis against rank; fails if out of range. */
int infer_axis(Infer *x, int64_t axis, int rank, const char *what)
{
	if (axis < -rank || axis >= rank)
		infer_fail(x, KILN_SHAPE_ERROR, "%s %lld is out of range for rank %d", what,
		           (long long)axis, rank);
	return (int)(axis < 0 ? axis + rank : axis);
}

/* ---- the walk --------------------------------------------------------- */

void shape_sig_init(Sig *s, Arena *a)
{
	Graph *g = s->g;
	s->shapes = arena_array(a, (size_t)g->nvalues, sizeof *s->shapes);
	s->dtypes = arena_array(a, (size_t)g->nvalues, sizeof *s->dtypes);
	s->folded = arena_array(a, (size_t)g->nvalues, sizeof *s->folded);
	s->control = arena_array(a, (size_t)g->nnodes + 1, sizeof *s->control);
	s->dead = NULL;
	s->a = a;
	for (int i = 0; i < g->nvalues; i++) {
		const Value *v = &g->values[i];
		s->shapes[i].rank = -1;
		if (v->kind == VAL_WEIGHT) {
			s->shapes[i] = v->shape;
			s->dtypes[i] = v->dtype;
		}
	}
}

/* float8 (opset 19) and int4/uint4 (opset 21) values are compiled through
 * Cast, CastLike, QuantizeLinear and DequantizeLinear, held by Constant,
 * and moved by the ops that only reshape (views of the same bytes, packed
 * or not) and Transpose (nibble by nibble for 4-bit values); any other op
 * would compute on bit patterns or packed nibbles, so it is refused. Inputs
 * are checked before the op's hook reads any of them, outputs after. */
static bool narrow_type_op(int op)
{
	const OpDef *d = op_def(op);
	return d && d->narrow_types;
}

static void narrow_type_guard(const Sig *s, const Node *n, bool outputs, Diag *d)
{
	if (narrow_type_op(n->op))
		return;
	/* If, Loop and Scan carry float8 values whole or sliced by whole bytes
	 * (their bodies are guarded node by node); 4-bit ones would be sliced
	 * mid-byte, and ONNX Runtime 1.30 carries none through control flow. */
	bool carries_f8 = n->op == OP_If || n->op == OP_Loop || n->op == OP_Scan;
	int from = outputs ? n->nin : 0, to = outputs ? n->nin + n->nout : n->nin;
	for (int k = from; k < to; k++) {
		int id = k < n->nin ? n->in[k] : n->out[k - n->nin];
		int dt = id != NONE ? s->dtypes[id] : DT_UNDEFINED;
		if ((DT_IS_FLOAT8(dt) && !carries_f8) || DT_IS_4BIT(dt))
			diag_fail_node(d, s->g, n, KILN_UNSUPPORTED, "%s %s is %s; %s values are only "
			               "converted (Cast, CastLike, QuantizeLinear, DequantizeLinear) or moved "
			               "(Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose%s)",
			               k < n->nin ? "input" : "output", s->g->values[id].name,
			               dtype_name(dt), DT_IS_FLOAT8(dt) ? "float8" : "4-bit",
			               DT_IS_FLOAT8(dt) ? ", If, Loop, Scan" : "");
	}
}

void shape_infer_nodes(Sig *s, Diag *d)
{
	Graph *g = s->g;
	char reason[512];
	for (int i = 0; i < g->nvalues; i++)
		if (g->values[i].kind == VAL_WEIGHT &&
		    shape_size_problem(&s->shapes[i], &g->model->limits, reason, sizeof reason))
			diag_fail(d, KILN_LIMIT, "weight \"%s\": %s", g->values[i].name, reason);
	for (int i = 0; i < g->nnodes; i++) {
		Node *n = &g->nodes[i];
		Infer x = {.sig = s, .g = g, .n = n, .d = d, .a = s->a};
		const char *why = op_unsupported_reason(g, n, reason, sizeof reason);
		if (why)
			diag_fail_node(d, g, n, KILN_UNSUPPORTED, "%s", why);
		attr_check_types(g, n, d);
		InferHook hook = op_infer_hook(n->op);
		if (!hook)
			diag_fail_node(d, g, n, KILN_UNSUPPORTED, "no shape inference for this op yet");
		narrow_type_guard(s, n, false, d);
		hook(&x);
		narrow_type_guard(s, n, true, d);
		peval_node(&x);
		for (int k = 0; k < n->nout; k++)
			if (n->out[k] != NONE && s->shapes[n->out[k]].rank < 0)
				diag_fail_node(d, g, n, KILN_INTERNAL, "output %d got no shape", k);
	}
}

void shape_infer(Sig *s, const BindOptions *o, Arena *a, Diag *d)
{
	Graph *g = s->g;
	shape_sig_init(s, a);
	bind_inputs(s, o, d);
	shape_infer_nodes(s, d);
	for (int i = 0; i < g->noutputs; i++)
		if (s->shapes[g->outputs[i]].rank < 0)
			diag_fail(d, KILN_SHAPE_ERROR, "graph output \"%s\" has no static shape",
			          g->values[g->outputs[i]].name);
}
