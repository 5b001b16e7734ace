/*
 * ops/control.c - shape inference for If, Loop and Scan: each subgraph is
 * inferred with concrete shapes in a signature of its own (subgraph.c), and
 * what the plan and the emitter need is recorded in a Control (control.h).
 *
 * kiln compiles ahead of time with static shapes, so:
 *   - a Loop's trip count and first condition must be known at compile time
 *     (constants, or computed from shapes and inputs frozen for the compile:
 *     peval.c folds the arithmetic exporters compute trip counts with);
 *   - every iteration must see the same shapes: a carried value whose shape
 *     changes in the body is an error naming the node and the value;
 *   - a condition the body computes at run time is allowed only when no
 *     scan output depends on the number of iterations;
 *   - an If whose condition is known runs one branch, chosen at compile
 *     time; otherwise both branches are compiled and must agree in shapes.
 * Sequence and optional values are not compiled: those nodes are rejected
 * with a reason that says so.
 */
#include <math.h>
#include <setjmp.h>
#include <string.h>

#include "control.h"
#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

/* ---- known scalars ---------------------------------------------------- */

typedef struct Scalar {
	bool is_float;
	double f;            /* float32, float64 */
	int64_t i;           /* integers and bool */
} Scalar;

static bool is_float_dt(int dt)
{
	return dt == DT_FLOAT || dt == DT_DOUBLE;
}

static bool read_scalar(int dt, const void *data, Scalar *v)
{
	*v = (Scalar){.is_float = is_float_dt(dt)};
	switch (dt) {
	case DT_FLOAT: { float t; memcpy(&t, data, 4); v->f = (double)t; return true; }
	case DT_DOUBLE: memcpy(&v->f, data, 8); return true;
	case DT_INT64: memcpy(&v->i, data, 8); return true;
	case DT_UINT64: { uint64_t t; memcpy(&t, data, 8); v->i = (int64_t)t; return true; }
	case DT_INT32: { int32_t t; memcpy(&t, data, 4); v->i = t; return true; }
	case DT_UINT32: { uint32_t t; memcpy(&t, data, 4); v->i = t; return true; }
	case DT_INT16: { int16_t t; memcpy(&t, data, 2); v->i = t; return true; }
	case DT_UINT16: { uint16_t t; memcpy(&t, data, 2); v->i = t; return true; }
	case DT_INT8: { int8_t t; memcpy(&t, data, 1); v->i = t; return true; }
	case DT_UINT8: case DT_BOOL: { uint8_t t; memcpy(&t, data, 1); v->i = t; return true; }
	}
	return false;
}

/* v converted to element type dt, as a Cast (or the op's own arithmetic) would. */
static bool convert(Scalar *v, int dt)
{
	if (is_float_dt(dt)) {
		double f = v->is_float ? v->f : (double)v->i;
		v->f = dt == DT_FLOAT ? (double)(float)f : f;
		v->is_float = true;
		return true;
	}
	int64_t i;
	if (v->is_float) {
		if (dt == DT_BOOL) {
			i = v->f != 0;
		} else {
			if (!(v->f > -9.2e18 && v->f < 9.2e18))
				return false;   /* out of range: leave it unknown */
			i = (int64_t)v->f;
		}
	} else {
		i = v->i;
	}
	switch (dt) {
	case DT_INT64: case DT_UINT64: break;
	case DT_INT32: i = (int32_t)(uint32_t)(uint64_t)i; break;
	case DT_UINT32: i = (uint32_t)(uint64_t)i; break;
	case DT_INT16: i = (int16_t)(uint16_t)(uint64_t)i; break;
	case DT_UINT16: i = (uint16_t)(uint64_t)i; break;
	case DT_INT8: i = (int8_t)(uint8_t)(uint64_t)i; break;
	case DT_UINT8: i = (uint8_t)(uint64_t)i; break;
	case DT_BOOL: i = i != 0; break;
	default: return false;
	}
	*v = (Scalar){.i = i};
	return true;
}

static bool truth(const Scalar *v)
{
	return v->is_float ? v->f != 0 : v->i != 0;
}

/* The value of a one-element tensor known at compile time: a weight or a
 * folded value (shape.c and peval.c evaluate every node whose inputs are
 * known, so scalar arithmetic on known values is folded already). */
static bool eval(const Sig *s, int id, Scalar *out)
{
	const Value *v = &s->g->values[id];
	if (shape_nelem(&s->shapes[id]) != 1)
		return false;
	if (s->folded[id])
		return s->folded[id]->nelem == 1 && read_scalar(s->folded[id]->dtype, s->folded[id]->data, out);
	if (v->kind == VAL_WEIGHT)
		return v->weight->nelem == 1 && read_scalar(v->dtype, v->weight->bytes, out);
	return false;
}

static bool known_input(Infer *x, int i, Scalar *v)
{
	return infer_has_input(x, i) && eval(x->sig, x->n->in[i], v);
}

/* Input i as a known scalar, or the "must be known at compile time" error
 * naming the graph input it comes from (which `kiln verify` then freezes). */
static Scalar require_known(Infer *x, int i, const char *what)
{
	if (shape_nelem(infer_shape(x, i)) != 1)
		infer_fail(x, KILN_INVALID_MODEL, "input %d \"%s\" (%s) must hold one value, not %lld", i,
		           infer_input_name(x, i), what, (long long)shape_nelem(infer_shape(x, i)));
	Scalar v;
	if (!known_input(x, i, &v))
		infer_fail_unknown(x, i, arena_printf(x->a, " (%s)", what));
	return v;
}

/* ---- checks shared by the three ops ----------------------------------- */

static const char *kind_word(TypeKind t)
{
	switch (t) {
	case TK_SEQUENCE: return "sequence";
	case TK_OPTIONAL: return "optional";
	case TK_MAP: return "map";
	case TK_SPARSE: return "sparse tensor";
	default: return NULL;
	}
}

static void require_tensor(Infer *x, const Graph *g, int id, const char *where)
{
	const char *k = id == NONE ? NULL : kind_word(g->values[id].type);
	if (k)
		infer_fail(x, KILN_UNSUPPORTED,
		           "%s \"%s\" is a%s %s value; kiln compiles tensors only (sequence and optional "
		           "types are not supported)",
		           where, g->values[id].name, k[0] == 'o' ? "n" : "", k);
}

/* Every value the node and its subgraph exchange must be a tensor. */
static void require_tensors(Infer *x, const Graph *sub)
{
	for (int i = 0; i < x->n->nin; i++)
		require_tensor(x, x->g, x->n->in[i], "input");
	for (int i = 0; i < x->n->nout; i++)
		require_tensor(x, x->g, x->n->out[i], "output");
	const char *w = arena_printf(x->a, "%s input", sub->parent_attr);
	for (int i = 0; i < sub->ninputs; i++)
		require_tensor(x, sub, sub->inputs[i], w);
	w = arena_printf(x->a, "%s output", sub->parent_attr);
	for (int i = 0; i < sub->noutputs; i++)
		require_tensor(x, sub, sub->outputs[i], w);
}

static Graph *graph_attr(Infer *x, const char *name)
{
	const Attr *a = node_attr(x->n, name);
	if (!a || a->type != AT_GRAPH || a->n != 1)
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"%s\" (a graph) is required", name);
	return a->graphs[0];
}

static Control *control_new(Infer *x, int nsubs)
{
	Control *c = arena_alloc(x->a, sizeof *c);
	c->op = x->n->op;
	c->nsubs = nsubs;
	c->subs = arena_array(x->a, (size_t)nsubs, sizeof *c->subs);
	c->tags = arena_array(x->a, (size_t)nsubs, sizeof *c->tags);
	c->branch = NONE;
	c->batch = 1;
	return c;
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

static const char *shape_str(Infer *x, const Shape *s)
{
	char buf[200];
	size_t len = (size_t)snprintf(buf, sizeof buf, "[");
	for (int k = 0; k < s->rank && len < sizeof buf; k++)
		len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%lld", k ? "," : "",
		                        (long long)s->dims[k].size);
	if (len < sizeof buf)
		snprintf(buf + len, sizeof buf - len, "]");
	return arena_strdup(x->a, buf);
}

/* A carried value must keep its dtype and shape: the body's output k of
 * signature s against the value it started from. */
static void check_carried(Infer *x, const Sig *s, int in_id, int out_id, const char *iter)
{
	const Graph *b = s->g;
	if (s->dtypes[out_id] != s->dtypes[in_id])
		infer_fail(x, KILN_INVALID_MODEL,
		           "%s output \"%s\" is %s but the value it carries (\"%s\") is %s%s",
		           b->parent_attr, b->values[out_id].name, dtype_name(s->dtypes[out_id]),
		           b->values[in_id].name, dtype_name(s->dtypes[in_id]), iter);
	if (!same_shape(&s->shapes[out_id], &s->shapes[in_id]))
		infer_fail(x, KILN_SHAPE_ERROR,
		           "%s changes the shape of loop-carried value \"%s\" from %s to %s (output \"%s\")%s; "
		           "kiln needs the same shapes in every iteration",
		           b->parent_attr, b->values[in_id].name, shape_str(x, &s->shapes[in_id]),
		           shape_str(x, &s->shapes[out_id]), b->values[out_id].name, iter);
}

static Shape scalar_shape(void)
{
	return (Shape){.rank = 0};
}

static const Folded *fold_i64(Infer *x, int64_t v, int dt)
{
	Folded *f = arena_alloc(x->a, sizeof *f);
	int64_t *p = arena_alloc(x->a, 8);
	*p = v;  /* little-endian hosts: the low byte first also serves bool */
	*f = (Folded){dt, 1, p};
	return f;
}

/* ---- If ------------------------------------------------------------- */

static void infer_if(Infer *x)
{
	Node *n = x->n;
	Graph *br[2] = {graph_attr(x, "then_branch"), graph_attr(x, "else_branch")};
	for (int b = 0; b < 2; b++) {
		require_tensors(x, br[b]);
		if (br[b]->noutputs != n->nout)
			infer_fail(x, KILN_INVALID_MODEL, "%s has %d outputs; the node has %d",
			           br[b]->parent_attr, br[b]->noutputs, n->nout);
		if (br[b]->ninputs != 0)
			infer_fail(x, KILN_INVALID_MODEL, "%s has formal inputs; If branches take none",
			           br[b]->parent_attr);
	}
	if (shape_nelem(infer_shape(x, 0)) != 1)
		infer_fail(x, KILN_INVALID_MODEL, "the condition must hold one value, not %lld",
		           (long long)shape_nelem(infer_shape(x, 0)));
	Scalar cond;
	Control *c;
	if (known_input(x, 0, &cond)) {
		/* Known at compile time: only the branch taken is compiled. */
		int b = truth(&cond) ? 0 : 1;
		c = control_new(x, 1);
		c->branch = b;
		c->tags[0] = b ? "else" : "then";
		c->subs[0] = *subgraph_sig(x, br[b]);
		subgraph_infer(x, &c->subs[0]);
		for (int k = 0; k < n->nout; k++) {
			const Sig *s = &c->subs[0];
			int id = br[b]->outputs[k];
			infer_set_output(x, k, s->dtypes[id], &s->shapes[id]);
			const Folded *f = s->folded[id];
			if (f && infer_foldable(&s->shapes[id]))
				infer_set_folded(x, k, f->dtype, f->nelem, f->data);
		}
	} else {
		c = control_new(x, 2);
		for (int b = 0; b < 2; b++) {
			c->tags[b] = b ? "else" : "then";
			c->subs[b] = *subgraph_sig(x, br[b]);
			subgraph_infer(x, &c->subs[b]);
		}
		for (int k = 0; k < n->nout; k++) {
			const Sig *t = &c->subs[0], *e = &c->subs[1];
			int ti = br[0]->outputs[k], ei = br[1]->outputs[k];
			if (t->dtypes[ti] != e->dtypes[ei])
				infer_fail(x, KILN_INVALID_MODEL, "the branches give output %d different types (%s, %s)",
				           k, dtype_name(t->dtypes[ti]), dtype_name(e->dtypes[ei]));
			if (!same_shape(&t->shapes[ti], &e->shapes[ei]))
				infer_fail_unknown(x, 0, arena_printf(x->a,
				                   ": it decides the shape of output %d (%s in then_branch, %s in "
				                   "else_branch)",
				                   k, shape_str(x, &t->shapes[ti]), shape_str(x, &e->shapes[ei])));
			infer_set_output(x, k, t->dtypes[ti], &t->shapes[ti]);
		}
	}
	x->sig->control[n->id] = c;
}

/* ---- Loop ------------------------------------------------------------- */

typedef struct LoopInfo {
	Infer *x;
	Graph *body;
	int N, K;            /* carried values, scan outputs */
	int64_t M;           /* trip count, -1 if none */
	bool cond0;          /* the first condition */
	Control *c;
} LoopInfo;

/* The body's condition output in signature s: 1 true, 0 false, -1 at run time. */
static int body_cond(LoopInfo *L, const Sig *s)
{
	int id = L->body->outputs[0];
	if (s->dtypes[id] != DT_BOOL || shape_nelem(&s->shapes[id]) != 1)
		infer_fail(L->x, KILN_INVALID_MODEL, "body output 0 (the condition) must be one bool");
	Scalar v;
	return eval(s, id, &v) ? truth(&v) : -1;
}

/* The iteration number and condition are scalars, or [1] where the body
 * declares them so (some exporters do; ONNX Runtime follows the declaration). */
static Shape fixed_shape(const LoopInfo *L, int i)
{
	const Shape *decl = &L->body->values[L->body->inputs[i]].shape;
	Shape s = scalar_shape();
	if (decl->rank == 1 && decl->dims[0].size == 1)
		s = (Shape){.rank = 1, .dims = {{1, NULL}}};
	return s;
}

static void bind_fixed(LoopInfo *L, Sig *s, const Folded *iter)
{
	Shape si = fixed_shape(L, 0), sc = fixed_shape(L, 1);
	subgraph_bind(L->x, s, 0, DT_INT64, &si, iter);
	/* The body only runs while the condition holds: in it, the condition is true. */
	subgraph_bind(L->x, s, 1, DT_BOOL, &sc, fold_i64(L->x, 1, DT_BOOL));
}

static void check_body(LoopInfo *L, const Sig *s, const char *iter)
{
	for (int k = 0; k < L->N; k++)
		check_carried(L->x, s, L->body->inputs[2 + k], L->body->outputs[1 + k], iter);
}

static void need_static_count(LoopInfo *L)
{
	if (L->K > 0)
		infer_fail(L->x, KILN_UNSUPPORTED,
		           "the body computes its condition at run time, so the number of iterations, "
		           "which decides the shape of the scan outputs, is not known at compile time");
}

/* One body for every iteration, the iteration number read at run time. */
static void loop_rolled(LoopInfo *L)
{
	Infer *x = L->x;
	Control *c = control_new(x, 1);
	c->tags[0] = "body";
	Sig *s = subgraph_sig(x, L->body);
	bind_fixed(L, s, NULL);
	for (int k = 0; k < L->N; k++)
		subgraph_bind(x, s, 2 + k, infer_dtype(x, 2 + k), infer_shape(x, 2 + k), NULL);
	subgraph_infer(x, s);
	check_body(L, s, "");
	c->subs[0] = *s;
	int cond = body_cond(L, s);
	if (!L->cond0)
		c->trips = 0;
	else if (cond == 1)
		c->trips = L->M;
	else if (cond == 0)
		c->trips = L->M == 0 ? 0 : 1;
	else
		c->trips = L->M, need_static_count(L);
	if (c->trips < 0 && cond == 1)
		infer_fail(x, KILN_UNSUPPORTED, "the loop has no trip count and its condition stays true: "
		                                "it never ends");
	L->c = c;
}

/* One body per iteration, each inferred with its iteration number (and
 * carried values, when known) folded. */
static void loop_unrolled(LoopInfo *L)
{
	Infer *x = L->x;
	int64_t bound = L->cond0 ? L->M : 0;
	Control *c = control_new(x, bound > 0 ? (int)bound : 1);
	c->unrolled = true;
	c->trips = bound;
	const Folded **carried = arena_array(x->a, (size_t)L->N + 1, sizeof *carried);
	for (int k = 0; k < L->N; k++)
		carried[k] = infer_folded(x, 2 + k);
	for (int i = 0; i < c->nsubs; i++) {
		const char *iter = arena_printf(x->a, " in iteration %d", i);
		Sig *s = subgraph_sig(x, L->body);
		bind_fixed(L, s, fold_i64(x, i, DT_INT64));
		for (int k = 0; k < L->N; k++)
			subgraph_bind(x, s, 2 + k, infer_dtype(x, 2 + k), infer_shape(x, 2 + k), carried[k]);
		subgraph_infer(x, s);
		check_body(L, s, iter);
		for (int j = 0; j < L->K; j++) {
			int id = L->body->outputs[1 + L->N + j];
			if (i > 0 && !same_shape(&s->shapes[id], &c->subs[0].shapes[id]))
				infer_fail(x, KILN_SHAPE_ERROR,
				           "body scan output \"%s\" is %s in iteration 0 but %s%s; kiln needs the "
				           "same shapes in every iteration",
				           L->body->values[id].name, shape_str(x, &c->subs[0].shapes[id]),
				           shape_str(x, &s->shapes[id]), iter);
		}
		for (int k = 0; k < L->N; k++)
			carried[k] = s->folded[L->body->outputs[1 + k]];
		c->subs[i] = *s;
		c->tags[i] = arena_printf(x->a, "iter%d", i);
		int cond = body_cond(L, s);
		if (cond == 0 && bound > 0) {
			c->trips = c->nsubs = i + 1;
			break;
		}
		if (cond < 0)
			need_static_count(L);
	}
	L->c = c;
}

/* Try the rolled body under a protect of its own: false if it failed (the
 * error is dropped; the caller unrolls instead, which reports its own). */
static bool try_rolled(LoopInfo *L)
{
	Diag *d = L->x->d;
	jmp_buf jb, *saved = d->protect;
	d->protect = &jb;
	if (setjmp(jb) != 0) {
		d->protect = saved;
		d->status = KILN_OK;
		return false;
	}
	loop_rolled(L);
	d->protect = saved;
	return true;
}

static void infer_loop(Infer *x)
{
	Node *n = x->n;
	LoopInfo L = {.x = x, .body = graph_attr(x, "body"), .M = -1, .cond0 = true};
	require_tensors(x, L.body);
	L.N = n->nin - 2;
	L.K = L.body->noutputs - 1 - L.N;
	if (L.body->ninputs != L.N + 2)
		infer_fail(x, KILN_INVALID_MODEL, "the body has %d inputs; with %d loop-carried values it "
		           "needs %d", L.body->ninputs, L.N, L.N + 2);
	if (L.K < 0 || n->nout != L.N + L.K)
		infer_fail(x, KILN_INVALID_MODEL, "the body has %d outputs and the node %d; with %d "
		           "loop-carried values they need 1 + %d + K and %d + K",
		           L.body->noutputs, n->nout, L.N, L.N, L.N);
	for (int k = 0; k < L.N; k++)
		if (!infer_has_input(x, 2 + k))
			infer_fail(x, KILN_INVALID_MODEL, "loop-carried input %d has no initial value", 2 + k);
	if (infer_has_input(x, 0)) {
		Scalar m = require_known(x, 0, "the trip count");
		if (!convert(&m, DT_INT64))
			infer_fail(x, KILN_INVALID_MODEL, "the trip count is not an integer");
		L.M = m.i < 0 ? 0 : m.i;
	}
	if (infer_has_input(x, 1)) {
		Scalar cond = require_known(x, 1, "the first condition");
		L.cond0 = truth(&cond);
	}
	if (L.K > 0 && L.cond0 && L.M > ((int64_t)1 << 31))
		infer_fail(x, KILN_LIMIT, "%lld iterations of scan outputs", (long long)L.M);

	/* Unrolling is the fallback for bodies that need the iteration number
	 * (or a carried value) at compile time, within a bound. */
	bool can_unroll = L.M >= 0 && L.M <= CONTROL_MAX_UNROLL &&
	                  L.body->values[L.body->inputs[0]].nuse > 0;
	for (int k = 0; k < L.N; k++)
		can_unroll |= L.M >= 0 && L.M <= CONTROL_MAX_UNROLL && infer_folded(x, 2 + k);
	if (!can_unroll || !try_rolled(&L))
		can_unroll ? loop_unrolled(&L) : loop_rolled(&L);
	Control *c = L.c;
	c->nstate = L.N;
	c->state_out = 1;
	c->state_off = arena_array(x->a, (size_t)L.N + 1, sizeof *c->state_off);
	for (int k = 0; k < L.N; k++) {
		c->state_off[k] = -1;
		infer_set_output(x, k, infer_dtype(x, 2 + k), infer_shape(x, 2 + k));
	}
	for (int j = 0; j < L.K; j++) {
		const Sig *s = &c->subs[0];
		int id = L.body->outputs[1 + L.N + j];
		const Shape *ps = &s->shapes[id];
		if (ps->rank + 1 > KILN_MAX_RANK)
			infer_fail(x, KILN_LIMIT, "scan output %d would have rank %d; at most %d", j,
			           ps->rank + 1, KILN_MAX_RANK);
		Shape y = {.rank = ps->rank + 1};
		y.dims[0].size = c->trips;
		for (int k = 0; k < ps->rank; k++)
			y.dims[k + 1] = ps->dims[k];
		infer_set_output(x, L.N + j, s->dtypes[id], &y);
	}
	x->sig->control[n->id] = c;
}

/* ---- Scan ------------------------------------------------------------- */

/* An INTS attribute of exactly n values into out (default dflt). */
static void scan_ints(Infer *x, const char *name, int n, int *out, int dflt)
{
	for (int i = 0; i < n; i++)
		out[i] = dflt;
	const Attr *a = node_attr(x->n, name);
	if (!a)
		return;
	if (a->type != AT_INTS || a->n != n)
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"%s\" must list %d ints", name, n);
	for (int i = 0; i < n; i++) {
		if (a->ints[i] < -KILN_MAX_RANK || a->ints[i] > KILN_MAX_RANK)
			infer_fail(x, KILN_INVALID_MODEL, "attribute \"%s\" holds %lld", name,
			           (long long)a->ints[i]);
		out[i] = (int)a->ints[i];
	}
}

static Shape drop_axis(const Shape *s, int axis)
{
	Shape r = {.rank = s->rank - 1};
	for (int k = 0, j = 0; k < s->rank; k++)
		if (k != axis)
			r.dims[j++] = s->dims[k];
	return r;
}

static void infer_scan(Infer *x)
{
	Node *n = x->n;
	Graph *body = graph_attr(x, "body");
	require_tensors(x, body);
	bool v8 = n->since < 9;   /* Scan-8: a batch axis first, then the scan axis */
	int first = v8 ? 1 : 0;
	int64_t M = attr_int(x, "num_scan_inputs", -1);
	if (M < 1 || M > n->nin - first)
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"num_scan_inputs\" (%lld) must be 1 to %d",
		           (long long)M, n->nin - first);
	if (v8 && infer_has_input(x, 0))
		infer_fail(x, KILN_UNSUPPORTED, "input 0 (sequence_lens) is not supported: kiln scans "
		                                "whole sequences");
	int N = n->nin - first - (int)M, K = body->noutputs - N;
	if (body->ninputs != N + M)
		infer_fail(x, KILN_INVALID_MODEL, "the body has %d inputs; the node gives it %d",
		           body->ninputs, N + (int)M);
	if (K < 0 || n->nout != N + K)
		infer_fail(x, KILN_INVALID_MODEL, "the body has %d outputs and the node %d; with %d state "
		           "values they must agree", body->noutputs, n->nout, N);
	Control *c = control_new(x, 1);
	c->tags[0] = "body";
	c->nstate = N;
	c->nscan_in = (int)M;
	c->nscan_out = K;
	c->state_off = arena_array(x->a, (size_t)N + 1, sizeof *c->state_off);
	c->in_axis = arena_array(x->a, (size_t)M, sizeof *c->in_axis);
	c->in_reverse = arena_array(x->a, (size_t)M, sizeof *c->in_reverse);
	c->out_axis = arena_array(x->a, (size_t)K + 1, sizeof *c->out_axis);
	c->out_reverse = arena_array(x->a, (size_t)K + 1, sizeof *c->out_reverse);
	int *dirs = arena_array(x->a, (size_t)(M + K + 1), sizeof *dirs);
	scan_ints(x, v8 ? "directions" : "scan_input_directions", (int)M, dirs, 0);
	for (int j = 0; j < M; j++)
		c->in_reverse[j] = dirs[j] != 0;
	scan_ints(x, "scan_output_directions", K, dirs, 0);
	for (int j = 0; j < K; j++)
		c->out_reverse[j] = dirs[j] != 0;
	scan_ints(x, "scan_input_axes", (int)M, c->in_axis, v8 ? 1 : 0);
	scan_ints(x, "scan_output_axes", K, c->out_axis, v8 ? 1 : 0);
	if (v8 && (node_attr(n, "scan_input_axes") || node_attr(n, "scan_output_axes")))
		infer_fail(x, KILN_INVALID_MODEL, "Scan-8 has no scan axes attributes");

	/* The batch (Scan-8) and the sequence length, which every scan input shares. */
	c->batch = 1;
	c->trips = -1;
	for (int i = 0; i < N + M; i++) {
		const Shape *s = infer_shape(x, first + i);
		if (v8) {
			if (s->rank < (i < N ? 1 : 2))
				infer_fail(x, KILN_SHAPE_ERROR, "input %d has rank %d; Scan-8 needs a batch axis%s",
				           first + i, s->rank, i < N ? "" : " and a scan axis");
			if (i == 0)
				c->batch = s->dims[0].size;
			else if (s->dims[0].size != c->batch)
				infer_fail(x, KILN_SHAPE_ERROR, "input %d has batch %lld, input %d has %lld",
				           first + i, (long long)s->dims[0].size, first, (long long)c->batch);
		}
		if (i < N)
			continue;
		int j = i - N;
		if (!v8)
			c->in_axis[j] = infer_axis(x, c->in_axis[j], s->rank, "scan input axis");
		int64_t len = s->dims[c->in_axis[j]].size;
		if (c->trips >= 0 && len != c->trips)
			infer_fail(x, KILN_SHAPE_ERROR, "scan inputs have different lengths (%lld, %lld)",
			           (long long)c->trips, (long long)len);
		c->trips = len;
	}

	Sig *s = subgraph_sig(x, body);
	for (int i = 0; i < N + M; i++) {
		const Shape *full = infer_shape(x, first + i);
		Shape per;
		if (i < N) {
			per = v8 ? drop_axis(full, 0) : *full;
		} else if (v8) {
			Shape t = drop_axis(full, 0);
			per = drop_axis(&t, 0);
		} else {
			per = drop_axis(full, c->in_axis[i - N]);
		}
		subgraph_bind(x, s, i, infer_dtype(x, first + i), &per, NULL);
	}
	subgraph_infer(x, s);
	for (int k = 0; k < N; k++)
		check_carried(x, s, body->inputs[k], body->outputs[k], "");
	c->subs[0] = *s;
	for (int k = 0; k < N; k++) {
		c->state_off[k] = -1;
		infer_set_output(x, k, infer_dtype(x, first + k), infer_shape(x, first + k));
	}
	for (int j = 0; j < K; j++) {
		int id = body->outputs[N + j];
		const Shape *ps = &s->shapes[id];
		int extra = v8 ? 2 : 1;
		if (ps->rank + extra > KILN_MAX_RANK)
			infer_fail(x, KILN_LIMIT, "scan output %d would have rank %d; at most %d", j,
			           ps->rank + extra, KILN_MAX_RANK);
		int axis = v8 ? 1 : infer_axis(x, c->out_axis[j], ps->rank + 1, "scan output axis");
		c->out_axis[j] = axis;
		Shape y = {.rank = ps->rank + extra};
		int at = 0;
		if (v8)
			y.dims[at++].size = c->batch;
		for (int k = 0; k <= ps->rank; k++) {
			if (k == (v8 ? 0 : axis))
				y.dims[at++].size = c->trips;
			if (k < ps->rank)
				y.dims[at++] = ps->dims[k];
		}
		infer_set_output(x, N + j, s->dtypes[id], &y);
	}
	x->sig->control[n->id] = c;
}

void ops_control_infer(Infer *x)
{
	switch (x->n->op) {
	case OP_If: infer_if(x); return;
	case OP_Loop: infer_loop(x); return;
	default: infer_scan(x); return;
	}
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_control_defs[] = {
	{.op = OP_If, .infer = ops_control_infer, .emit = emit_control, .batch = BK_CONTROL,
	 .batch_flags = BF_ONE_BRANCH,
	 .note = "also float8 values (opset 19; not 4-bit: ONNX Runtime 1.30 neither)"},
	{.op = OP_Loop, .infer = ops_control_infer, .emit = emit_control, .batch = BK_CONTROL,
	 .note = "also float8 values carried and stacked (opset 19; not 4-bit: ONNX Runtime 1.30 "
	         "neither)"},
	{.op = OP_Scan, .infer = ops_control_infer, .emit = emit_control, .batch = BK_CONTROL,
	 .note = "also float8 values carried and scanned (opset 19; not 4-bit: ONNX Runtime 1.30 "
	         "neither)"},
	{.op = NONE},
};
