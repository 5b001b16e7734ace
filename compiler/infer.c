/*
 * infer.c - what an op's inference hook (compiler/ops/) reads and writes:
 * its inputs' shapes, types and known contents, its attributes, its
 * outputs, and failures that name the node and signature; and a signature's
 * per-value arrays (shape_sig_init).
 *
 * Below the hooks and above nothing but the IR: shape.c runs the hooks,
 * peval.c evaluates what they leave, and both read through these helpers,
 * so none of them calls back up.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "infer.h"
#include "kiln/kernels.h"

/* ---- signatures ------------------------------------------------------- */

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

/* ---- hook helpers ----------------------------------------------------- */

_Noreturn void infer_fail(Infer *x, enum kiln_status st, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (x->sig->bucket)   /* compile --dim SYMBOL=v1,v2,...: the bucket's value */
		diag_fail_node(x->d, x->g, x->n, st, "%s (batch %lld, bucket %lld)", msg,
		               (long long)x->sig->batch, (long long)x->sig->bucket);
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
	/* read as a C string: one holding a NUL would pass for its prefix */
	if (a->s.len && memchr(a->s.data, 0, a->s.len))
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"%s\" holds a NUL byte", name);
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

int infer_last_axis(Infer *x)
{
	return infer_axis(x, -1, infer_shape(x, 0)->rank, "axis");
}

/* Element k of little-endian data of type dt, as double. */
double folded_elem(int dt, const void *data, int64_t k)
{
	const unsigned char *p = (const unsigned char *)data + (size_t)k * dtype_size(dt);
	union { float f; double d; int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32;
	        uint32_t u32; int64_t i64; uint64_t u64; } v;
	memcpy(&v, p, dtype_size(dt));
	switch (dt) {
	case DT_FLOAT: return (double)v.f;
	case DT_DOUBLE: return v.d;
	case DT_FLOAT16: return (double)kiln_f16_to_f32(v.u16);
	case DT_BFLOAT16: return (double)kiln_bf16_to_f32(v.u16);
	case DT_INT8: return v.i8;
	case DT_UINT8: case DT_BOOL: return v.u8;
	case DT_INT16: return v.i16;
	case DT_UINT16: return v.u16;
	case DT_INT32: return v.i32;
	case DT_UINT32: return v.u32;
	case DT_INT64: return (double)v.i64;
	case DT_UINT64: return (double)v.u64;
	default: return 0;
	}
}

/* An input a hook cannot do without, evaluated on demand when it was left
 * unfolded: through the demand function the caller handed in (shape.c hands
 * peval_demand), so the hook helpers never call up into peval.c. */
const Folded *infer_required(Infer *x, int i)
{
	const Folded *f = infer_folded(x, i);
	if (f || !infer_has_input(x, i) || !x->demand)
		return f;
	return x->demand(x, x->n->in[i]);
}

const int64_t *infer_require_ints(Infer *x, int i, int64_t *n)
{
	infer_required(x, i);
	const int64_t *v = infer_ints(x, i, n);
	if (!v)
		infer_fail_unknown(x, i, " (a constant, or computed from shapes)");
	return v;
}
