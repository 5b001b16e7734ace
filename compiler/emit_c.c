/*
 * emit_c.c - write NAME.h and NAME.c for a model and its signatures, and
 * collect the constants the weights object must hold.
 *
 * The generated C is meant to be read: per batch size B, one static function
 * per node (`b8_n003_relu1`) with a comment naming the ONNX node, its op and
 * every operand's dtype, shape and place (caller buffer, weight symbol or
 * arena offset); its body is one runtime kernel call with literal sizes or a
 * short loop. NAME_run_bB calls them in schedule order. Nothing is allocated:
 * temporaries live at planned offsets of the caller's arena.
 *
 * Constants (initializers, and values folded at compile time that a kernel
 * reads) become symbols of the weights object. Identical bytes of the same
 * element type are stored once, whatever their names or shapes.
 *
 * Output is deterministic: everything is emitted in node order, floats are
 * printed in hexadecimal (%a), and no time or absolute path is written.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "kiln.h"
#include "kiln_version.h"

typedef struct Emit {
	Model *m;
	Graph *g;
	Diag *d;
	Arena *a;
	const EmitOptions *o;
	FILE *c;
	const Sig *sig;
	const Plan *plan;
	int *in_index, *out_index;   /* value id -> position in the run arrays, or NONE */
	EmitSymbol *syms;
	int nsyms, capsyms;
	int *sym_of_weight;          /* value id -> symbol, for initializers (all signatures) */
	Node *n;                     /* the node being emitted, for errors */
} Emit;

/* ---- small helpers ---------------------------------------------------- */

static void out(Emit *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(Emit *E, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(E->c, fmt, ap);
	va_end(ap);
}

static _Noreturn void emit_fail(Emit *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void emit_fail(Emit *E, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_fail_node(E->d, E->g, E->n, KILN_UNSUPPORTED, "%s", msg);
}

/* A C identifier fragment from any ONNX name: [A-Za-z0-9_], at most 40 chars. */
static char *sanitize(Arena *a, const char *name)
{
	size_t n = strlen(name);
	if (n > 40)
		n = 40;
	char *s = arena_alloc(a, n + 2);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
		s[k++] = ok ? ch : '_';
	}
	if (k == 0)
		s[k++] = 'x';
	s[k] = 0;
	return s;
}

/* Comments hold model names: keep them from closing the comment or the line. */
static void comment_text(Emit *E, const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f || (s[0] == '*' && s[1] == '/'))
			fputc('?', E->c);
		else
			fputc(*s, E->c);
	}
}

static const char *ctype(int dt)
{
	switch (dt) {
	case DT_FLOAT: return "float";
	case DT_DOUBLE: return "double";
	case DT_INT8: return "int8_t";
	case DT_UINT8: return "uint8_t";
	case DT_INT16: return "int16_t";
	case DT_UINT16: return "uint16_t";
	case DT_INT32: return "int32_t";
	case DT_UINT32: return "uint32_t";
	case DT_INT64: return "int64_t";
	case DT_UINT64: return "uint64_t";
	case DT_BOOL: return "uint8_t";
	case DT_FLOAT16: case DT_BFLOAT16: return "uint16_t";
	}
	return NULL;
}

/* A float literal that round-trips, in the type of dt. */
static const char *flit(Emit *E, double v, int dt)
{
	if (isnan(v))
		return dt == DT_FLOAT ? "NAN" : "(double)NAN";
	if (isinf(v))
		return v > 0 ? (dt == DT_FLOAT ? "INFINITY" : "(double)INFINITY")
		             : (dt == DT_FLOAT ? "-INFINITY" : "-(double)INFINITY");
	return arena_printf(E->a, "%a%s", v, dt == DT_FLOAT ? "f" : "");
}

static void shape_text(Emit *E, const Shape *s)
{
	out(E, "[");
	for (int k = 0; k < s->rank; k++)
		out(E, "%s%" PRId64, k ? "," : "", s->dims[k].size);
	out(E, "]");
}

/* ---- constants -------------------------------------------------------- */

static uint64_t bytes_hash(const void *p, uint64_t n)
{
	Weight w = {.bytes = p, .nbytes = n};
	Shape s = {.rank = 0};
	return weight_hash(DT_UINT8, &s, &w);
}

/* The symbol holding these bytes, made on first use. Identical bytes of the
 * same dtype share one symbol. */
static int symbol_for(Emit *E, int dtype, const void *bytes, uint64_t nbytes, const char *hint)
{
	uint64_t h = bytes_hash(bytes, nbytes) ^ (uint64_t)dtype;
	for (int i = 0; i < E->nsyms; i++) {
		EmitSymbol *s = &E->syms[i];
		if (s->hash == h && s->dtype == dtype && s->nbytes == nbytes &&
		    (nbytes == 0 || memcmp(s->bytes, bytes, nbytes) == 0))
			return i;
	}
	E->syms = arena_grow(E->a, E->syms, E->nsyms, &E->capsyms, sizeof *E->syms);
	EmitSymbol *s = &E->syms[E->nsyms];
	s->name = arena_printf(E->a, "%s_w%d_%s", E->o->name, E->nsyms, sanitize(E->a, hint));
	s->bytes = bytes;
	s->nbytes = nbytes;
	s->dtype = dtype;
	s->hash = h;
	s->source = arena_strdup(E->a, hint);
	return E->nsyms++;
}

/* ---- operands --------------------------------------------------------- */

typedef struct Operand {
	const char *expr;    /* a C expression of type `T *` or `const T *` */
	int dtype;
	const Shape *shape;
	int64_t nelem;
} Operand;

/* Where value id lives, as a C pointer expression. */
static Operand operand(Emit *E, int id, bool writable)
{
	const Value *v = &E->g->values[id];
	Operand op = {.dtype = E->sig->dtypes[id], .shape = &E->sig->shapes[id]};
	op.nelem = shape_nelem(op.shape);
	const char *t = ctype(op.dtype);
	if (!t)
		emit_fail(E, "element type %s of \"%s\" is not supported by the code generator yet",
		          dtype_name(op.dtype), v->name);
	if (E->out_index[id] != NONE) {
		op.expr = arena_printf(E->a, "(%s *)out[%d]", t, E->out_index[id]);
		return op;
	}
	KILN_ASSERT(!writable);
	(void)writable;
	if (E->sig->folded[id] && v->kind != VAL_INPUT) {
		const Folded *f = E->sig->folded[id];
		uint64_t nbytes = (uint64_t)f->nelem * dtype_size(f->dtype);
		int s = symbol_for(E, f->dtype, f->data, nbytes, v->name);
		op.expr = arena_printf(E->a, "(const %s *)%s", t, E->syms[s].name);
		return op;
	}
	int root = E->plan->root[id];
	const Value *rv = &E->g->values[root];
	if (E->in_index[root] != NONE) {
		op.expr = arena_printf(E->a, "(const %s *)in[%d]", t, E->in_index[root]);
	} else if (rv->kind == VAL_WEIGHT) {
		int s = E->sym_of_weight[root];
		if (s == NONE) {
			s = symbol_for(E, rv->dtype, rv->weight->bytes, rv->weight->nbytes, rv->name);
			E->sym_of_weight[root] = s;
		}
		op.expr = arena_printf(E->a, "(const %s *)%s", t, E->syms[s].name);
	} else if (E->plan->buf_of[id] != NONE) {
		op.expr = arena_printf(E->a, "(%s *)(a + %" PRId64 ")", t,
		                       E->plan->bufs[E->plan->buf_of[id]].off);
	} else {
		emit_fail(E, "value \"%s\" has no storage (kind %d)", v->name, (int)v->kind);
	}
	return op;
}

/* The output buffer of a node output (arena or caller). */
static Operand result(Emit *E, int id)
{
	Operand op = {.dtype = E->sig->dtypes[id], .shape = &E->sig->shapes[id]};
	op.nelem = shape_nelem(op.shape);
	const char *t = ctype(op.dtype);
	if (!t)
		emit_fail(E, "element type %s is not supported by the code generator yet",
		          dtype_name(op.dtype));
	if (E->out_index[id] != NONE)
		op.expr = arena_printf(E->a, "(%s *)out[%d]", t, E->out_index[id]);
	else if (E->plan->buf_of[id] != NONE)
		op.expr = arena_printf(E->a, "(%s *)(a + %" PRId64 ")", t,
		                       E->plan->bufs[E->plan->buf_of[id]].off);
	else
		emit_fail(E, "output \"%s\" has no buffer", E->g->values[id].name);
	return op;
}

static Operand in_op(Emit *E, int i)
{
	if (i >= E->n->nin || E->n->in[i] == NONE)
		emit_fail(E, "input %d is missing", i);
	return operand(E, E->n->in[i], false);
}

static Operand out_op(Emit *E, int i)
{
	return result(E, E->n->out[i]);
}

/* Declare a local pointer for an operand: `const float *X = ...;`. */
static void decl(Emit *E, const char *var, const Operand *op, bool writable)
{
	out(E, "\t%s%s *%s = %s;\n", writable ? "" : "const ", ctype(op->dtype), var, op->expr);
}

/* Float attributes are float32 in ONNX; returned widened for printing. */
static double node_attr_float(const Node *n, const char *name, float dflt)
{
	const Attr *a = node_attr(n, name);
	return (double)(a && a->type == AT_FLOAT ? a->f : dflt);
}

static int64_t node_attr_int(const Node *n, const char *name, int64_t dflt)
{
	const Attr *a = node_attr(n, name);
	return a && a->type == AT_INT ? a->i : dflt;
}

/* A scalar of a folded input (Clip bounds), as double; false if absent. */
static bool folded_scalar(Emit *E, int i, double *v)
{
	if (i >= E->n->nin || E->n->in[i] == NONE)
		return false;
	const Folded *f = E->sig->folded[E->n->in[i]];
	int id = E->n->in[i];
	const void *data = f ? f->data : NULL;
	int dt = f ? f->dtype : E->sig->dtypes[id];
	if (!f && E->g->values[id].kind == VAL_WEIGHT)
		data = E->g->values[id].weight->bytes;
	if (!data)
		emit_fail(E, "input %d must be a constant", i);
	if (dt == DT_FLOAT) {
		float x;
		memcpy(&x, data, 4);
		*v = (double)x;
	} else if (dt == DT_DOUBLE) {
		memcpy(v, data, 8);
	} else if (dt == DT_INT64) {
		int64_t x;
		memcpy(&x, data, 8);
		*v = (double)x;
	} else if (dt == DT_INT32) {
		int32_t x;
		memcpy(&x, data, 4);
		*v = x;
	} else {
		emit_fail(E, "input %d has element type %s", i, dtype_name(dt));
	}
	return true;
}

/* ---- elementwise ------------------------------------------------------ */

/* Strides (elements) of an input broadcast to out's shape; 0 where it repeats. */
static void bcast_strides(const Shape *in, const Shape *outs, int64_t *st)
{
	int64_t s = 1;
	for (int k = outs->rank - 1, ki = in->rank - 1; k >= 0; k--, ki--) {
		if (ki >= 0 && in->dims[ki].size != 1) {
			st[k] = s;
			s *= in->dims[ki].size;
		} else {
			st[k] = 0;
			if (ki >= 0)
				s *= 1;
		}
	}
}

enum { MAX_MAP_OPERANDS = 8 };

/* Nested loops over y's shape; operand j is read as x<j> through its own
 * broadcast strides, then `expr` computes the element, or, if `stmts` is
 * given, those statements assign it to r. Adjacent dims that are contiguous
 * for every operand are merged first, so same-shape operands get one loop. */
static void emit_map_body(Emit *E, const Operand *y, const Operand *xs, int nx, const char *expr,
                          const char *stmts)
{
	KILN_ASSERT(nx <= MAX_MAP_OPERANDS);
	int rank = y->shape->rank;
	int64_t dims[KILN_MAX_RANK], st[MAX_MAP_OPERANDS][KILN_MAX_RANK], yst[KILN_MAX_RANK];
	for (int k = 0; k < rank; k++)
		dims[k] = y->shape->dims[k].size;
	int64_t s = 1;
	for (int k = rank - 1; k >= 0; k--) {
		yst[k] = s;
		s *= dims[k];
	}
	for (int j = 0; j < nx; j++)
		bcast_strides(xs[j].shape, y->shape, st[j]);
	/* Merge dim k into the previous one when every operand steps contiguously. */
	int r = 0;
	int64_t md[KILN_MAX_RANK], ms[MAX_MAP_OPERANDS + 1][KILN_MAX_RANK];
	for (int k = 0; k < rank; k++) {
		if (dims[k] == 1)
			continue;
		bool merge = r > 0 && ms[0][r - 1] == yst[k] * dims[k];
		for (int j = 0; j < nx && merge; j++)
			merge = ms[j + 1][r - 1] == st[j][k] * dims[k];
		int at = merge ? r - 1 : r++;
		md[at] = merge ? md[at] * dims[k] : dims[k];
		ms[0][at] = yst[k];
		for (int j = 0; j < nx; j++)
			ms[j + 1][at] = st[j][k];
	}
	decl(E, "Y", y, true);
	for (int j = 0; j < nx; j++) {
		char var[8];
		snprintf(var, sizeof var, "X%d", j);
		decl(E, var, &xs[j], false);
	}
	if (y->nelem == 0)
		return;
	char indent[KILN_MAX_RANK + 2] = "\t";
	for (int k = 0; k < r; k++) {
		out(E, "%sfor (int64_t i%d = 0; i%d < %" PRId64 "; i%d++) {\n", indent, k, k, md[k], k);
		indent[k + 1] = '\t';
		indent[k + 2] = 0;
	}
	if (r == 0)
		out(E, "\t{\n"), strcpy(indent, "\t\t");
	for (int j = 0; j < nx; j++) {
		out(E, "%s%s x%d = X%d[0", indent, ctype(xs[j].dtype), j, j);
		for (int k = 0; k < r; k++)
			if (ms[j + 1][k])
				out(E, " + i%d * %" PRId64, k, ms[j + 1][k]);
		out(E, "];\n");
	}
	if (stmts)
		out(E, "%s%s r;\n%s%s\n", indent, ctype(y->dtype), indent, stmts);
	out(E, "%sY[0", indent);
	for (int k = 0; k < r; k++)
		out(E, " + i%d * %" PRId64, k, ms[0][k]);
	out(E, "] = %s;\n", stmts ? "r" : expr);
	for (int k = (r ? r : 1) - 1; k >= 0; k--)
		out(E, "%.*s}\n", k + 1, "\t\t\t\t\t\t\t\t\t");
}

static void emit_map(Emit *E, const Operand *y, const Operand *xs, int nx, const char *expr)
{
	emit_map_body(E, y, xs, nx, expr, NULL);
}

static bool is_float(int dt)
{
	return dt == DT_FLOAT || dt == DT_DOUBLE;
}

static bool is_unsigned(int dt)
{
	return dt == DT_UINT8 || dt == DT_UINT16 || dt == DT_UINT32 || dt == DT_UINT64 || dt == DT_BOOL;
}

/* libm name for a float function in the operand's precision. */
static const char *fn(Emit *E, const char *name, int dt)
{
	return arena_printf(E->a, "%s%s", name, dt == DT_FLOAT ? "f" : "");
}

static void emit_unary(Emit *E)
{
	Operand x = in_op(E, 0), y = out_op(E, 0);
	int dt = x.dtype, op = E->n->op;
	const char *e = NULL;
	bool needs_float = true;
	switch (op) {
	case OP_Relu:
		e = is_float(dt) ? arena_printf(E->a, "x0 < 0 ? %s : x0", flit(E, 0, dt)) : "x0 < 0 ? 0 : x0";
		needs_float = false;
		break;
	case OP_Identity:
		e = "x0";
		needs_float = false;
		break;
	case OP_Sigmoid:
		e = arena_printf(E->a, "%s / (%s + %s(-x0))", flit(E, 1, dt), flit(E, 1, dt), fn(E, "exp", dt));
		break;
	case OP_Tanh: e = arena_printf(E->a, "%s(x0)", fn(E, "tanh", dt)); break;
	case OP_Erf: e = arena_printf(E->a, "%s(x0)", fn(E, "erf", dt)); break;
	case OP_Sqrt: e = arena_printf(E->a, "%s(x0)", fn(E, "sqrt", dt)); break;
	case OP_Exp: e = arena_printf(E->a, "%s(x0)", fn(E, "exp", dt)); break;
	case OP_Log: e = arena_printf(E->a, "%s(x0)", fn(E, "log", dt)); break;
	case OP_Selu: {
		double alpha = node_attr_float(E->n, "alpha", 1.67326319217681884765625f);
		double gamma = node_attr_float(E->n, "gamma", 1.05070102214813232421875f);
		e = arena_printf(E->a, "x0 > 0 ? %s * x0 : %s * (%s * %s(x0) - %s)", flit(E, gamma, dt),
		                 flit(E, gamma, dt), flit(E, alpha, dt), fn(E, "exp", dt), flit(E, alpha, dt));
		break;
	}
	case OP_Elu: {
		double alpha = node_attr_float(E->n, "alpha", 1.0f);
		e = arena_printf(E->a, "x0 < 0 ? %s * (%s(x0) - %s) : x0", flit(E, alpha, dt),
		                 fn(E, "exp", dt), flit(E, 1, dt));
		break;
	}
	case OP_LeakyRelu: {
		double alpha = node_attr_float(E->n, "alpha", 0.01f);
		e = arena_printf(E->a, "x0 < 0 ? %s * x0 : x0", flit(E, alpha, dt));
		break;
	}
	case OP_Neg:
		e = is_unsigned(dt) ? "(uint8_t)0" : arena_printf(E->a, "(%s)-x0", ctype(dt));
		needs_float = false;
		break;
	case OP_Abs:
		e = is_float(dt) ? arena_printf(E->a, "%s(x0)", fn(E, "fabs", dt))
		    : is_unsigned(dt) ? "x0" : arena_printf(E->a, "(%s)(x0 < 0 ? -x0 : x0)", ctype(dt));
		needs_float = false;
		break;
	case OP_Sign:
		e = is_unsigned(dt) ? arena_printf(E->a, "(%s)(x0 > 0)", ctype(dt))
		                    : arena_printf(E->a, "x0 > 0 ? (%s)1 : x0 < 0 ? (%s)-1 : x0", ctype(dt),
		                                   ctype(dt));
		needs_float = false;
		break;
	case OP_Floor: e = arena_printf(E->a, "%s(x0)", fn(E, "floor", dt)); break;
	case OP_Ceil: e = arena_printf(E->a, "%s(x0)", fn(E, "ceil", dt)); break;
	case OP_Round: e = arena_printf(E->a, "%s(x0)", fn(E, "rint", dt)); break; /* ties to even */
	case OP_Reciprocal: e = arena_printf(E->a, "%s / x0", flit(E, 1, dt)); break;
	case OP_Sin: case OP_Cos: case OP_Tan: case OP_Asin: case OP_Acos: case OP_Atan:
	case OP_Sinh: case OP_Cosh: case OP_Asinh: case OP_Acosh: case OP_Atanh: {
		char lower[8];
		size_t k = 0;
		for (const char *p = E->n->op_type; *p && k < sizeof lower - 1; p++)
			lower[k++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
		lower[k] = 0;
		e = arena_printf(E->a, "%s(x0)", fn(E, lower, dt));
		break;
	}
	case OP_Softplus: /* log(1 + exp(x)) without overflow */
		e = arena_printf(E->a, "x0 > 0 ? x0 + %s(%s(-x0)) : %s(%s(x0))", fn(E, "log1p", dt),
		                 fn(E, "exp", dt), fn(E, "log1p", dt), fn(E, "exp", dt));
		break;
	case OP_Softsign: e = arena_printf(E->a, "x0 / (%s + %s(x0))", flit(E, 1, dt), fn(E, "fabs", dt)); break;
	case OP_HardSigmoid: case OP_HardSwish: {
		double alpha = E->n->op == OP_HardSwish ? 1.0 / 6 : node_attr_float(E->n, "alpha", 0.2f);
		double beta = E->n->op == OP_HardSwish ? 0.5 : node_attr_float(E->n, "beta", 0.5f);
		const char *hs = arena_printf(E->a, "%s(%s, %s(%s, %s * x0 + %s))", fn(E, "fmax", dt),
		                              flit(E, 0, dt), fn(E, "fmin", dt), flit(E, 1, dt),
		                              flit(E, alpha, dt), flit(E, beta, dt));
		e = E->n->op == OP_HardSwish ? arena_printf(E->a, "x0 * %s", hs) : hs;
		break;
	}
	case OP_ThresholdedRelu: {
		double alpha = node_attr_float(E->n, "alpha", 1.0f);
		e = arena_printf(E->a, "x0 > %s ? x0 : %s", flit(E, alpha, dt), flit(E, 0, dt));
		break;
	}
	case OP_Celu: {
		double alpha = node_attr_float(E->n, "alpha", 1.0f);
		e = arena_printf(E->a, "%s(%s, x0) + %s(%s, %s * (%s(x0 / %s) - %s))", fn(E, "fmax", dt),
		                 flit(E, 0, dt), fn(E, "fmin", dt), flit(E, 0, dt), flit(E, alpha, dt),
		                 fn(E, "exp", dt), flit(E, alpha, dt), flit(E, 1, dt));
		break;
	}
	case OP_Shrink: {
		double l = node_attr_float(E->n, "lambd", 0.5f), b = node_attr_float(E->n, "bias", 0.0f);
		e = is_float(dt) ? arena_printf(E->a, "x0 < -%s ? x0 + %s : x0 > %s ? x0 - %s : %s",
		                                flit(E, l, dt), flit(E, b, dt), flit(E, l, dt),
		                                flit(E, b, dt), flit(E, 0, dt))
		                 : arena_printf(E->a, "(%s)(x0 < -%.17g ? x0 + %.17g : x0 > %.17g ? x0 - %.17g : 0)",
		                                ctype(dt), l, b, l, b);
		needs_float = false;
		break;
	}
	case OP_Not:
		e = "(uint8_t)!x0";
		needs_float = false;
		break;
	case OP_IsNaN:
		e = "(uint8_t)(x0 != x0)";
		break;
	case OP_IsInf: {
		bool neg = node_attr_int(E->n, "detect_negative", 1) != 0;
		bool pos = node_attr_int(E->n, "detect_positive", 1) != 0;
		e = arena_printf(E->a, "(uint8_t)(isinf(x0) && ((x0 > 0 && %d) || (x0 < 0 && %d)))", pos,
		                 neg);
		break;
	}
	case OP_Clip: {
		/* Bounds come from attributes before opset 11, then from optional
		 * inputs. One known at compile time becomes a literal (left out when
		 * an integer type cannot exceed it, so the C compiler sees no
		 * always-false comparison); one fed at run time is read once. */
		const char *bound[2] = {NULL, NULL};
		for (int i = 0; i < 2; i++) {
			double v;
			if (E->n->since < 11) {
				const Attr *at = node_attr(E->n, i ? "max" : "min");
				if (!at)
					continue;
				v = (double)at->f;
			} else {
				int k = i + 1;
				if (k >= E->n->nin || E->n->in[k] == NONE)
					continue;
				int id = E->n->in[k];
				if (!E->sig->folded[id] && E->g->values[E->plan->root[id]].kind != VAL_WEIGHT) {
					out(E, "\tconst %s %s = (%s)[0];\n", ctype(dt), i ? "hi" : "lo",
					    in_op(E, k).expr);
					bound[i] = i ? "hi" : "lo";
					continue;
				}
				folded_scalar(E, k, &v);
			}
			if (is_float(dt)) {
				bound[i] = flit(E, v, dt);
				continue;
			}
			size_t bits = 8 * dtype_size(dt);
			bool is_signed = dt == DT_INT8 || dt == DT_INT16 || dt == DT_INT32 || dt == DT_INT64;
			double tmax = is_signed ? ldexp(1, (int)bits - 1) - 1 : ldexp(1, (int)bits) - 1;
			double tmin = is_signed ? -ldexp(1, (int)bits - 1) : 0;
			if (i ? v < tmax : v > tmin)
				bound[i] = arena_printf(E->a, "(%s)%.0f", ctype(dt), v);
		}
		e = arena_printf(E->a, "%s%s%s%s%s%sx0", bound[0] ? "x0 < " : "",
		                 bound[0] ? bound[0] : "", bound[0] ? arena_printf(E->a, " ? %s : ", bound[0]) : "",
		                 bound[1] ? "x0 > " : "", bound[1] ? bound[1] : "",
		                 bound[1] ? arena_printf(E->a, " ? %s : ", bound[1]) : "");
		needs_float = false;
		break;
	}
	default:
		emit_fail(E, "no code generator for this op yet");
	}
	if (needs_float && !is_float(dt))
		emit_fail(E, "%s on %s is not supported by the code generator yet", E->n->op_type,
		          dtype_name(dt));
	emit_map(E, &y, &x, 1, e);
}

/* Elementwise ops of two or more inputs, broadcast. */
static void emit_binary(Emit *E)
{
	Operand xs[MAX_MAP_OPERANDS], y = out_op(E, 0);
	int nx = E->n->nin, op = E->n->op;
	if (nx > MAX_MAP_OPERANDS)
		emit_fail(E, "more than %d inputs is not supported by the code generator yet",
		          MAX_MAP_OPERANDS);
	for (int i = 0; i < nx; i++)
		xs[i] = in_op(E, i);
	Shape slope;
	if (op == OP_PRelu && E->n->since < 7 && xs[1].shape->rank == 1 && xs[0].shape->rank > 2 &&
	    xs[1].shape->dims[0].size == xs[0].shape->dims[1].size) {
		slope = prelu_channel_shape(xs[0].shape);
		xs[1].shape = &slope;
	}
	int dt = xs[0].dtype;  /* comparisons output bool; compute in the inputs' type */
	const char *t = ctype(dt), *e = NULL, *stmts = NULL;
	if (dt == DT_FLOAT16 || dt == DT_BFLOAT16 || dt == DT_STRING)
		emit_fail(E, "%s on %s is not supported by the code generator yet", E->n->op_type,
		          dtype_name(dt));
	switch (op) {
	case OP_Add: e = "x0 + x1"; break;
	case OP_Sub: e = "x0 - x1"; break;
	case OP_Mul: e = "x0 * x1"; break;
	case OP_Div: e = is_float(dt) ? "x0 / x1" : "x1 == 0 ? 0 : x0 / x1"; break;
	case OP_Pow:
		/* Integer powers go through double, exact for every result that fits. */
		e = is_float(dt) ? arena_printf(E->a, "%s(x0, (%s)x1)", fn(E, "pow", dt), t)
		                 : arena_printf(E->a, "(%s)pow((double)x0, (double)x1)", ctype(y.dtype));
		break;
	case OP_Where: e = "x0 ? x1 : x2"; break;
	case OP_And: e = "(uint8_t)(x0 && x1)"; break;
	case OP_Or: e = "(uint8_t)(x0 || x1)"; break;
	case OP_Xor: e = "(uint8_t)(!x0 != !x1)"; break;
	case OP_Equal: e = "(uint8_t)(x0 == x1)"; break;
	case OP_Less: e = "(uint8_t)(x0 < x1)"; break;
	case OP_Greater: e = "(uint8_t)(x0 > x1)"; break;
	case OP_LessOrEqual: e = "(uint8_t)(x0 <= x1)"; break;
	case OP_GreaterOrEqual: e = "(uint8_t)(x0 >= x1)"; break;
	case OP_PRelu: e = "x0 < 0 ? x1 * x0 : x0"; break;
	case OP_BitShift: {
		bool left = false;
		const Attr *dir = node_attr(E->n, "direction");
		if (dir && dir->type == AT_STRING && dir->s.len == 4 && memcmp(dir->s.data, "LEFT", 4) == 0)
			left = true;
		e = arena_printf(E->a, "x1 >= %zu ? 0 : (%s)(x0 %s x1)", 8 * dtype_size(dt), t,
		                 left ? "<<" : ">>");
		break;
	}
	case OP_Mod:
		if (node_attr_int(E->n, "fmod", 0) || is_float(dt))
			e = is_float(dt) ? arena_printf(E->a, "%s(x0, x1)", fn(E, "fmod", dt))
			                 : "x1 == 0 ? 0 : x0 % x1";
		else if (is_unsigned(dt))
			e = "x1 == 0 ? 0 : x0 % x1";
		else /* the sign of the divisor, as Python's % */
			stmts = arena_printf(E->a, "r = x1 == 0 ? 0 : (%s)(x0 %% x1); "
			                           "if (r != 0 && (r < 0) != (x1 < 0)) r = (%s)(r + x1);", t, t);
		break;
	case OP_Sum: case OP_Mean: case OP_Min: case OP_Max: {
		char *b = arena_printf(E->a, "r = x0;");
		for (int i = 1; i < nx; i++) {
			const char *step;
			if (op == OP_Sum || op == OP_Mean)
				step = arena_printf(E->a, " r = (%s)(r + x%d);", t, i);
			else if (is_float(dt)) /* NaN wins, as in numpy */
				step = arena_printf(E->a, " r = (r != r || r %s x%d) ? r : x%d;",
				                    op == OP_Max ? ">" : "<", i, i);
			else
				step = arena_printf(E->a, " r = r %s x%d ? r : x%d;", op == OP_Max ? ">" : "<", i, i);
			b = arena_printf(E->a, "%s%s", b, step);
		}
		if (op == OP_Mean)
			b = arena_printf(E->a, "%s r = (%s)(r / %d);", b, t, nx);
		stmts = b;
		break;
	}
	default:
		emit_fail(E, "no code generator for this op yet");
	}
	emit_map_body(E, &y, xs, nx, e, stmts);
}

static void emit_cast(Emit *E)
{
	Operand x = in_op(E, 0), y = out_op(E, 0);
	/* 16-bit floats travel as bit patterns and go through float32. */
	const char *src = x.dtype == DT_FLOAT16    ? "kiln_f16_to_f32(x0)"
	                  : x.dtype == DT_BFLOAT16 ? "kiln_bf16_to_f32(x0)"
	                                           : "x0";
	const char *e;
	if (y.dtype == DT_FLOAT16 || y.dtype == DT_BFLOAT16)
		e = arena_printf(E->a, "%s((float)%s)",
		                 y.dtype == DT_FLOAT16 ? "kiln_f32_to_f16" : "kiln_f32_to_bf16", src);
	else if (y.dtype == DT_BOOL)
		e = arena_printf(E->a, "(uint8_t)(%s != 0)", src);
	else
		e = arena_printf(E->a, "(%s)%s", ctype(y.dtype), src);
	emit_map(E, &y, &x, 1, e);
}

/* ---- linear algebra --------------------------------------------------- */

static void require_f32(Emit *E, const Operand *x)
{
	if (x->dtype != DT_FLOAT)
		emit_fail(E, "%s on %s is not supported by the code generator yet (float32 only)",
		          E->n->op_type, dtype_name(x->dtype));
}

static void emit_gemm(Emit *E)
{
	Operand A = in_op(E, 0), B = in_op(E, 1), Y = out_op(E, 0);
	require_f32(E, &A);
	bool ta = node_attr_int(E->n, "transA", 0) != 0, tb = node_attr_int(E->n, "transB", 0) != 0;
	double alpha = node_attr_float(E->n, "alpha", 1.0f), beta = node_attr_float(E->n, "beta", 1.0f);
	int64_t M = Y.shape->dims[0].size, N = Y.shape->dims[1].size;
	int64_t K = A.shape->dims[ta ? 0 : 1].size;
	bool has_c = E->n->nin > 2 && E->n->in[2] != NONE && beta != 0.0;
	decl(E, "A", &A, false);
	decl(E, "B", &B, false);
	if (has_c) {
		Operand C = in_op(E, 2);
		/* Y = C broadcast to [M, N]; the product is then accumulated with beta. */
		Operand cy = Y;
		emit_map(E, &cy, &C, 1, "x0");
		out(E, "\tkiln_f32_gemm(%" PRId64 ", %" PRId64 ", %" PRId64 ", %s, A, %" PRId64 ", %" PRId64
		       ", B, %" PRId64 ", %" PRId64 ", %s, Y, %" PRId64 ");\n",
		    M, N, K, flit(E, alpha, DT_FLOAT), ta ? (int64_t)1 : K, ta ? M : (int64_t)1,
		    tb ? (int64_t)1 : N, tb ? K : (int64_t)1, flit(E, beta, DT_FLOAT), N);
	} else {
		decl(E, "Y", &Y, true);
		out(E, "\tkiln_f32_gemm(%" PRId64 ", %" PRId64 ", %" PRId64 ", %s, A, %" PRId64 ", %" PRId64
		       ", B, %" PRId64 ", %" PRId64 ", 0.0f, Y, %" PRId64 ");\n",
		    M, N, K, flit(E, alpha, DT_FLOAT), ta ? (int64_t)1 : K, ta ? M : (int64_t)1,
		    tb ? (int64_t)1 : N, tb ? K : (int64_t)1, N);
	}
}

static void emit_matmul(Emit *E)
{
	Operand A = in_op(E, 0), B = in_op(E, 1), Y = out_op(E, 0);
	require_f32(E, &A);
	Shape a = *A.shape, b = *B.shape;
	if (a.rank == 1) {
		a.dims[1] = a.dims[0];
		a.dims[0].size = 1;
		a.rank = 2;
	}
	if (b.rank == 1) {
		b.dims[1].size = 1;
		b.rank = 2;
	}
	int64_t M = a.dims[a.rank - 2].size, K = a.dims[a.rank - 1].size, N = b.dims[b.rank - 1].size;
	/* Batch dims broadcast like elementwise ops; loop over the output's. */
	int br = (a.rank > b.rank ? a.rank : b.rank) - 2;
	Shape ob = {.rank = br}, ab = {.rank = a.rank - 2}, bb = {.rank = b.rank - 2};
	for (int k = 0; k < ab.rank; k++)
		ab.dims[k] = a.dims[k];
	for (int k = 0; k < bb.rank; k++)
		bb.dims[k] = b.dims[k];
	int64_t as[KILN_MAX_RANK], bs[KILN_MAX_RANK], nb = 1;
	for (int k = 0; k < br; k++) {
		int ia = k - (br - ab.rank), ib = k - (br - bb.rank);
		int64_t da = ia >= 0 ? ab.dims[ia].size : 1, db = ib >= 0 ? bb.dims[ib].size : 1;
		ob.dims[k].size = da > db ? da : db;
		nb *= ob.dims[k].size;
	}
	bcast_strides(&ab, &ob, as);
	bcast_strides(&bb, &ob, bs);
	decl(E, "A", &A, false);
	decl(E, "B", &B, false);
	decl(E, "Y", &Y, true);
	if (nb == 1) {
		out(E, "\tkiln_f32_gemm(%" PRId64 ", %" PRId64 ", %" PRId64 ", 1.0f, A, %" PRId64
		       ", 1, B, %" PRId64 ", 1, 0.0f, Y, %" PRId64 ");\n", M, N, K, K, N, N);
		return;
	}
	out(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++) {\n", nb);
	out(E, "\t\tint64_t r = i, ao = 0, bo = 0;\n");
	for (int k = br - 1; k >= 0; k--) {
		out(E, "\t\t{ int64_t c = r %% %" PRId64 "; r /= %" PRId64 ";", ob.dims[k].size,
		    ob.dims[k].size);
		if (as[k])
			out(E, " ao += c * %" PRId64 ";", as[k]);
		if (bs[k])
			out(E, " bo += c * %" PRId64 ";", bs[k]);
		out(E, " (void)c; }\n");
	}
	out(E, "\t\tkiln_f32_gemm(%" PRId64 ", %" PRId64 ", %" PRId64 ", 1.0f, A + ao * %" PRId64
	       ", %" PRId64 ", 1, B + bo * %" PRId64 ", %" PRId64 ", 1, 0.0f, Y + i * %" PRId64
	       ", %" PRId64 ");\n\t}\n",
	    M, N, K, M * K, K, K * N, N, M * N, N);
}

/* ---- normalization ---------------------------------------------------- */

static void emit_softmax(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	const Shape *s = X.shape;
	int rank = s->rank;
	int64_t axis = node_attr_int(E->n, "axis", E->n->since < 13 ? 1 : -1);
	if (axis < 0)
		axis += rank;
	int64_t outer = 1, len = 1, inner = 1;
	for (int k = 0; k < rank; k++) {
		int64_t d = s->dims[k].size;
		if (k < axis)
			outer *= d;
		else if (k == axis || E->n->since < 13)
			len *= d;
		else
			inner *= d;
	}
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	out(E, "\tkiln_f32_softmax(X, Y, %" PRId64 ", %" PRId64 ", %" PRId64 ", %d);\n", outer, len,
	    inner, E->n->op == OP_LogSoftmax);
}

static void emit_batchnorm(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	Operand p[4];
	for (int i = 0; i < 4; i++) {
		p[i] = in_op(E, i + 1);
		require_f32(E, &p[i]);
	}
	int64_t n = X.shape->dims[0].size, c = X.shape->dims[1].size, spatial = 1;
	for (int k = 2; k < X.shape->rank; k++)
		spatial *= X.shape->dims[k].size;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	out(E, "\tkiln_f32_batchnorm(X, %s, %s, %s, %s, Y, %" PRId64 ", %" PRId64 ", %" PRId64
	       ", %s);\n", p[0].expr, p[1].expr, p[2].expr, p[3].expr, n, c, spatial,
	    flit(E, node_attr_float(E->n, "epsilon", 1e-5f), DT_FLOAT));
}

static void emit_layernorm(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0), S = in_op(E, 1);
	require_f32(E, &X);
	bool want_mean = E->n->nout > 1 && E->n->out[1] != NONE;
	bool want_inv = E->n->nout > 2 && E->n->out[2] != NONE;
	if ((want_mean && out_op(E, 1).dtype != DT_FLOAT) || (want_inv && out_op(E, 2).dtype != DT_FLOAT))
		emit_fail(E, "a stash_type other than float32 is not supported yet");
	int rank = X.shape->rank;
	int64_t axis = node_attr_int(E->n, "axis", -1);
	if (axis < 0)
		axis += rank;
	int64_t outer = 1, norm = 1;
	for (int k = 0; k < rank; k++)
		*(k < axis ? &outer : &norm) *= X.shape->dims[k].size;
	if (S.nelem != norm)
		emit_fail(E, "a Scale that broadcasts is not supported yet");
	const char *bias = "NULL";
	if (E->n->nin > 2 && E->n->in[2] != NONE) {
		Operand Bi = in_op(E, 2);
		if (Bi.nelem != norm)
			emit_fail(E, "a bias that broadcasts is not supported yet");
		bias = Bi.expr;
	}
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	const char *eps = flit(E, node_attr_float(E->n, "epsilon", 1e-5f), DT_FLOAT);
	if (want_mean || want_inv) {
		/* The optional statistics, per normalized row, before Y may overwrite X. */
		out(E, "\tfor (int64_t r = 0; r < %" PRId64 "; r++) {\n"
		       "\t\tconst float *x = X + r * %" PRId64 ";\n"
		       "\t\tdouble sum = 0, sq = 0;\n"
		       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\t\tsum += x[i];\n"
		       "\t\tdouble mean = sum / %" PRId64 ";\n"
		       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n"
		       "\t\t\tsq += (x[i] - mean) * (x[i] - mean);\n",
		    outer, norm, norm, norm, norm);
		if (want_mean)
			out(E, "\t\t(%s)[r] = (float)mean;\n", out_op(E, 1).expr);
		if (want_inv)
			out(E, "\t\t(%s)[r] = (float)(1.0 / sqrt(sq / %" PRId64 " + %s));\n",
			    out_op(E, 2).expr, norm, eps);
		out(E, "\t}\n");
	}
	out(E, "\tkiln_f32_layernorm(X, %s, %s, Y, %" PRId64 ", %" PRId64 ", %s);\n", S.expr, bias,
	    outer, norm, eps);
}

/* ---- data movement ---------------------------------------------------- */

static void emit_copy(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	out(E, "\tmemcpy(Y, X, %" PRId64 ");\n", Y.nelem * (int64_t)dtype_size(Y.dtype));
}

static void emit_transpose(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int rank = X.shape->rank;
	int64_t perm[KILN_MAX_RANK];
	const Attr *pa = node_attr(E->n, "perm");
	for (int k = 0; k < rank; k++)
		perm[k] = pa ? pa->ints[k] : rank - 1 - k;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	out(E, "\tstatic const int64_t dims[] = {");
	for (int k = 0; k < rank; k++)
		out(E, "%s%" PRId64, k ? ", " : "", X.shape->dims[k].size);
	out(E, "%s};\n\tstatic const int perm[] = {", rank ? "" : "0");
	for (int k = 0; k < rank; k++)
		out(E, "%s%" PRId64, k ? ", " : "", perm[k]);
	out(E, "%s};\n", rank ? "" : "0");
	out(E, "\tkiln_transpose(X, Y, %zu, %d, dims, perm);\n", dtype_size(X.dtype), rank);
}

static int norm_axis(int64_t axis, int rank)
{
	return (int)(axis < 0 ? axis + rank : axis);
}

/* outer = product of the dims before axis, inner = product after it. */
static void around_axis(const Shape *s, int axis, int64_t *outer, int64_t *inner)
{
	*outer = *inner = 1;
	for (int k = 0; k < s->rank; k++) {
		if (k < axis)
			*outer *= s->dims[k].size;
		else if (k > axis)
			*inner *= s->dims[k].size;
	}
}

/* Concat and Split: rows of [outer, axis*inner] copied piecewise. */
static void emit_concat(Emit *E)
{
	Operand Y = out_op(E, 0);
	int rank = Y.shape->rank;
	int axis = norm_axis(node_attr_int(E->n, "axis", 0), rank);
	int64_t outer, inner;
	around_axis(Y.shape, axis, &outer, &inner);
	size_t es = dtype_size(Y.dtype);
	int64_t row = Y.shape->dims[axis].size * inner * (int64_t)es, at = 0;
	decl(E, "Y", &Y, true);
	out(E, "\tunsigned char *y = (unsigned char *)Y;\n");
	for (int i = 0; i < E->n->nin; i++) {
		Operand X = in_op(E, i);
		int64_t piece = X.shape->dims[axis].size * inner * (int64_t)es;
		if (piece == 0)
			continue;
		out(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n\t\tmemcpy(y + o * %" PRId64
		       " + %" PRId64 ", (const unsigned char *)%s + o * %" PRId64 ", %" PRId64 ");\n",
		    outer, row, at, X.expr, piece, piece);
		at += piece;
	}
}

static void emit_split(Emit *E)
{
	Operand X = in_op(E, 0);
	int rank = X.shape->rank;
	int axis = norm_axis(node_attr_int(E->n, "axis", 0), rank);
	int64_t outer, inner;
	around_axis(X.shape, axis, &outer, &inner);
	size_t es = dtype_size(X.dtype);
	int64_t row = X.shape->dims[axis].size * inner * (int64_t)es, at = 0;
	decl(E, "X", &X, false);
	out(E, "\tconst unsigned char *x = (const unsigned char *)X;\n");
	for (int i = 0; i < E->n->nout; i++) {
		if (E->n->out[i] == NONE)
			continue;
		Operand Y = out_op(E, i);
		int64_t piece = Y.shape->dims[axis].size * inner * (int64_t)es;
		if (piece)
			out(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n\t\tmemcpy((unsigned char *)%s"
			       " + o * %" PRId64 ", x + o * %" PRId64 " + %" PRId64 ", %" PRId64 ");\n",
			    outer, Y.expr, piece, row, at, piece);
		at += piece;
	}
}

static void emit_gather(Emit *E)
{
	Operand D = in_op(E, 0), I = in_op(E, 1), Y = out_op(E, 0);
	int rank = D.shape->rank;
	int axis = norm_axis(node_attr_int(E->n, "axis", 0), rank);
	int64_t outer, inner;
	around_axis(D.shape, axis, &outer, &inner);
	out(E, "\treturn kiln_gather%s(%s, %s, %s, %zu, %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
	       ");\n", I.dtype == DT_INT32 ? "_i32" : "", D.expr, I.expr, Y.expr, dtype_size(D.dtype),
	    outer, D.shape->dims[axis].size, inner, I.nelem);
}

/* Slice as a strided gather: nested loops over the output. */
static void emit_slice(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int rank = X.shape->rank;
	/* Recover begin and step per axis from the inferred output (shape.c
	 * already validated them); re-derive with the same rules. */
	int64_t begin[KILN_MAX_RANK] = {0}, step[KILN_MAX_RANK];
	for (int k = 0; k < rank; k++)
		step[k] = 1;
	int64_t starts[KILN_MAX_RANK], ends[KILN_MAX_RANK], axes[KILN_MAX_RANK], steps[KILN_MAX_RANK];
	int64_t n = 0, na = -1, ns = -1;
	Infer x = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	if (E->n->since < 10) {
		n = attr_ints(&x, "starts", starts, KILN_MAX_RANK);
		attr_ints(&x, "ends", ends, KILN_MAX_RANK);
		na = attr_ints(&x, "axes", axes, KILN_MAX_RANK);
	} else {
		int64_t cnt;
		const int64_t *v = infer_require_ints(&x, 1, &n);
		memcpy(starts, v, (size_t)n * 8);
		v = infer_require_ints(&x, 2, &cnt);
		memcpy(ends, v, (size_t)cnt * 8);
		if (infer_has_input(&x, 3)) {
			v = infer_require_ints(&x, 3, &na);
			memcpy(axes, v, (size_t)na * 8);
		}
		if (infer_has_input(&x, 4)) {
			v = infer_require_ints(&x, 4, &ns);
			memcpy(steps, v, (size_t)ns * 8);
		}
	}
	for (int i = 0; i < n; i++) {
		int a = norm_axis(na >= 0 ? axes[i] : i, rank);
		int64_t dim = X.shape->dims[a].size, st = ns >= 0 ? steps[i] : 1, s = starts[i];
		if (s < 0)
			s = s < -dim ? 0 : s + dim;
		s = st > 0 ? (s > dim ? dim : s) : (s > dim - 1 ? dim - 1 : s);
		begin[a] = s;
		step[a] = st;
	}
	int64_t xs[KILN_MAX_RANK], acc = 1;
	for (int k = rank - 1; k >= 0; k--) {
		xs[k] = acc;
		acc *= X.shape->dims[k].size;
	}
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	if (Y.nelem == 0)
		return;
	int64_t base = 0;
	for (int k = 0; k < rank; k++)
		base += begin[k] * xs[k];
	out(E, "\tint64_t at = 0;\n");
	char indent[16] = "\t";
	for (int k = 0; k < rank; k++) {
		out(E, "%sfor (int64_t i%d = 0; i%d < %" PRId64 "; i%d++)\n", indent, k, k,
		    Y.shape->dims[k].size, k);
		size_t len = strlen(indent);
		indent[len] = '\t';
		indent[len + 1] = 0;
	}
	out(E, "%sY[at++] = X[%" PRId64, indent, base);
	for (int k = 0; k < rank; k++)
		out(E, " + i%d * %" PRId64, k, step[k] * xs[k]);
	out(E, "];\n");
}

/* ---- convolution and pooling ------------------------------------------ */

/* Window geometry in three slots (D, H, W); an op with fewer spatial axes
 * uses the last ones (1-D is W, 2-D is H and W) and size 1 elsewhere. */
typedef struct Geo {
	int ns;
	int64_t k[3], s[3], d[3], pb[3], pe[3], in[3], outsz[3];
} Geo;

/* The spatial geometry of a window op, as shape.c derived it. */
static void geometry(Emit *E, const Shape *x, const Shape *y, const Shape *w, Geo *g)
{
	int ns = x->rank - 2;
	if (ns < 1 || ns > 3)
		emit_fail(E, "%d-D windows are not supported by the code generator yet", ns);
	g->ns = ns;
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	int64_t v[6];
	for (int i = 0; i < 3; i++) {
		g->k[i] = g->s[i] = g->d[i] = 1;
		g->pb[i] = g->pe[i] = 0;
		g->in[i] = g->outsz[i] = 1;
	}
	int off = 3 - ns;
	for (int i = 0; i < ns; i++) {
		g->in[off + i] = x->dims[2 + i].size;
		g->outsz[off + i] = y->dims[2 + i].size;
		g->k[off + i] = w ? w->dims[2 + i].size : 1;
	}
	if (!w) {
		int nk = attr_ints(&inf, "kernel_shape", v, 6);
		for (int i = 0; i < nk && i < ns; i++)
			g->k[off + i] = v[i];
	}
	int n = attr_ints(&inf, "strides", v, 6);
	for (int i = 0; i < n && i < ns; i++)
		g->s[off + i] = v[i];
	n = attr_ints(&inf, "dilations", v, 6);
	for (int i = 0; i < n && i < ns; i++)
		g->d[off + i] = v[i];
	const char *ap = attr_string(&inf, "auto_pad", "NOTSET");
	n = attr_ints(&inf, "pads", v, 6);
	for (int i = 0; i < ns; i++) {
		int j = off + i;
		if (strncmp(ap, "SAME", 4) == 0) {
			int64_t span = (g->k[j] - 1) * g->d[j] + 1;
			int64_t total = (g->outsz[j] - 1) * g->s[j] + span - g->in[j];
			if (total < 0)
				total = 0;
			g->pb[j] = ap[5] == 'U' ? total / 2 : total - total / 2;
			g->pe[j] = total - g->pb[j];
		} else if (strcmp(ap, "NOTSET") == 0 && n == 2 * ns) {
			g->pb[j] = v[i];
			g->pe[j] = v[ns + i];
		}
	}
}

/* The 3-D params struct, shared by Conv and the pools. */
static void emit_window3d(Emit *E, const Geo *g, int64_t n, int64_t c, int64_t m, int64_t group)
{
	out(E, "\tstatic const kiln_window3d_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .channels = %" PRId64 ", .out_channels = %" PRId64
	       ", .group = %" PRId64 ",\n", n, c, m, group);
	const char *names[] = {"in", "kernel", "stride", "dilation", "pad_begin", "pad_end", "out"};
	const int64_t *vals[] = {g->in, g->k, g->s, g->d, g->pb, g->pe, g->outsz};
	for (int i = 0; i < 7; i++)
		out(E, "\t\t.%s = {%" PRId64 ", %" PRId64 ", %" PRId64 "},\n", names[i], vals[i][0],
		    vals[i][1], vals[i][2]);
	out(E, "\t};\n");
}

static void emit_conv(Emit *E)
{
	Operand X = in_op(E, 0), W = in_op(E, 1), Y = out_op(E, 0);
	require_f32(E, &X);
	Geo g;
	geometry(E, X.shape, Y.shape, W.shape, &g);
	const char *bias = "NULL";
	if (E->n->nin > 2 && E->n->in[2] != NONE)
		bias = in_op(E, 2).expr;
	if (g.ns == 3) {
		emit_window3d(E, &g, X.shape->dims[0].size, X.shape->dims[1].size, Y.shape->dims[1].size,
		              node_attr_int(E->n, "group", 1));
		out(E, "\tkiln_f32_conv3d(&p, %s, %s, %s, %s);\n", X.expr, W.expr, bias, Y.expr);
		return;
	}
	out(E, "\tstatic const kiln_conv2d_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .in_channels = %" PRId64 ", .in_h = %" PRId64 ", .in_w = %" PRId64 ",\n"
	       "\t\t.out_channels = %" PRId64 ", .group = %" PRId64 ", .kernel_h = %" PRId64 ", .kernel_w = %" PRId64 ",\n"
	       "\t\t.stride_h = %" PRId64 ", .stride_w = %" PRId64 ", .dilation_h = %" PRId64 ", .dilation_w = %" PRId64 ",\n"
	       "\t\t.pad_top = %" PRId64 ", .pad_left = %" PRId64 ", .pad_bottom = %" PRId64 ", .pad_right = %" PRId64 ",\n"
	       "\t\t.out_h = %" PRId64 ", .out_w = %" PRId64 ",\n\t};\n",
	    X.shape->dims[0].size, X.shape->dims[1].size, g.in[1], g.in[2], Y.shape->dims[1].size,
	    node_attr_int(E->n, "group", 1), g.k[1], g.k[2], g.s[1], g.s[2], g.d[1], g.d[2], g.pb[1],
	    g.pb[2], g.pe[1], g.pe[2], g.outsz[1], g.outsz[2]);
	out(E, "\tkiln_f32_conv2d(&p, %s, %s, %s, %s);\n", X.expr, W.expr, bias, Y.expr);
}

static void emit_pool(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	if (E->n->op == OP_GlobalAveragePool || E->n->op == OP_GlobalMaxPool) {
		int64_t planes = X.shape->dims[0].size * X.shape->dims[1].size;
		out(E, "\tkiln_f32_global_%spool(%s, %s, %" PRId64 ", %" PRId64 ");\n",
		    E->n->op == OP_GlobalMaxPool ? "max" : "avg", X.expr, Y.expr, planes,
		    X.nelem / (planes ? planes : 1));
		return;
	}
	if (E->n->nout > 1 && E->n->out[1] != NONE)
		emit_fail(E, "the Indices output is not supported yet");
	Geo g;
	geometry(E, X.shape, Y.shape, NULL, &g);
	if (E->n->op == OP_AveragePool)
		g.d[0] = g.d[1] = g.d[2] = 1;
	if (g.ns == 3) {
		emit_window3d(E, &g, X.shape->dims[0].size, X.shape->dims[1].size, 0, 1);
		if (E->n->op == OP_MaxPool)
			out(E, "\tkiln_f32_maxpool3d(&p, %s, %s);\n", X.expr, Y.expr);
		else
			out(E, "\tkiln_f32_avgpool3d(&p, %d, %s, %s);\n",
			    (int)node_attr_int(E->n, "count_include_pad", 0), X.expr, Y.expr);
		return;
	}
	out(E, "\tstatic const kiln_pool2d_params p = {\n"
	       "\t\t.batch = %" PRId64 ", .channels = %" PRId64 ", .in_h = %" PRId64 ", .in_w = %" PRId64 ",\n"
	       "\t\t.kernel_h = %" PRId64 ", .kernel_w = %" PRId64 ", .stride_h = %" PRId64 ", .stride_w = %" PRId64 ",\n"
	       "\t\t.dilation_h = %" PRId64 ", .dilation_w = %" PRId64 ",\n"
	       "\t\t.pad_top = %" PRId64 ", .pad_left = %" PRId64 ", .pad_bottom = %" PRId64 ", .pad_right = %" PRId64 ",\n"
	       "\t\t.out_h = %" PRId64 ", .out_w = %" PRId64 ",\n\t};\n",
	    X.shape->dims[0].size, X.shape->dims[1].size, g.in[1], g.in[2], g.k[1], g.k[2], g.s[1],
	    g.s[2], g.d[1], g.d[2], g.pb[1], g.pb[2], g.pe[1], g.pe[2], g.outsz[1], g.outsz[2]);
	if (E->n->op == OP_MaxPool)
		out(E, "\tkiln_f32_maxpool2d(&p, %s, %s);\n", X.expr, Y.expr);
	else
		out(E, "\tkiln_f32_avgpool2d(&p, %d, %s, %s);\n",
		    (int)node_attr_int(E->n, "count_include_pad", 0), X.expr, Y.expr);
}

/* ---- reductions ------------------------------------------------------- */

/* Loops over the kept axes (outer) and, inside, the reduced ones: any set of
 * axes, any element type. `init`, `step` and `fini` are statements over
 * `acc` (the accumulator, of type acc_t) and `x` (the element); `fini`
 * assigns `r`. n is the number of reduced elements. */
static void emit_reduce_loops(Emit *E, const Operand *X, const Operand *Y, const bool *red,
                              const char *acc_t, const char *init, const char *step,
                              const char *fini)
{
	int rank = X->shape->rank;
	int64_t st[KILN_MAX_RANK], n = 1, stride = 1;
	for (int k = rank - 1; k >= 0; k--) {
		st[k] = stride;
		stride *= X->shape->dims[k].size;
		if (red[k])
			n *= X->shape->dims[k].size;
	}
	decl(E, "X", X, false);
	decl(E, "Y", Y, true);
	if (Y->nelem == 0)
		return;
	out(E, "\tint64_t at = 0;\n");
	char ind[2 * KILN_MAX_RANK + 3] = "\t";
	int depth = 0;
	for (int k = 0; k < rank; k++)
		if (!red[k]) {
			out(E, "%sfor (int64_t o%d = 0; o%d < %" PRId64 "; o%d++) {\n", ind, k, k,
			    X->shape->dims[k].size, k);
			ind[++depth] = '\t';
			ind[depth + 1] = 0;
		}
	if (depth == 0) {
		out(E, "\t{\n");
		ind[++depth] = '\t';
		ind[depth + 1] = 0;
	}
	int outer_depth = depth;
	out(E, "%s%s acc;\n%sconst int64_t n = %" PRId64 ";\n%s(void)n;\n%s%s\n", ind, acc_t, ind, n,
	    ind, ind, init);
	for (int k = 0; k < rank; k++)
		if (red[k]) {
			out(E, "%sfor (int64_t o%d = 0; o%d < %" PRId64 "; o%d++) {\n", ind, k, k,
			    X->shape->dims[k].size, k);
			ind[++depth] = '\t';
			ind[depth + 1] = 0;
		}
	out(E, "%s%s x = X[0", ind, ctype(X->dtype));
	for (int k = 0; k < rank; k++)
		if (X->shape->dims[k].size > 1)
			out(E, " + o%d * %" PRId64, k, st[k]);
	out(E, "];\n%s%s\n", ind, step);
	while (depth > outer_depth) {
		ind[depth--] = 0;
		out(E, "%s}\n", ind);
	}
	out(E, "%s%s r;\n%s%s\n%sY[at++] = r;\n", ind, ctype(Y->dtype), ind, fini, ind);
	while (depth > 0) {
		ind[depth--] = 0;
		out(E, "%s}\n", ind);
	}
}

/* The reduced axes of a Reduce* node, read as shape.c read them; false if
 * the node passes its input through (noop_with_empty_axes). */
static bool reduced_axes(Emit *E, int rank, bool *red)
{
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	int64_t axes[KILN_MAX_RANK * 2];
	int64_t na = -1;
	if (infer_has_input(&inf, 1)) {
		const int64_t *v = infer_require_ints(&inf, 1, &na);
		memcpy(axes, v, (size_t)na * 8);
	} else {
		na = attr_ints(&inf, "axes", axes, KILN_MAX_RANK * 2);
	}
	memset(red, 0, KILN_MAX_RANK * sizeof *red);
	if (na <= 0) {
		if (node_attr_int(E->n, "noop_with_empty_axes", 0))
			return false;
		for (int k = 0; k < rank; k++)
			red[k] = true;
	}
	for (int i = 0; i < na; i++)
		red[norm_axis(axes[i], rank)] = true;
	return true;
}

static void emit_reduce(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int rank = X.shape->rank, op = E->n->op, dt = X.dtype;
	bool red[KILN_MAX_RANK];
	if (!reduced_axes(E, rank, red)) {
		emit_copy(E);
		return;
	}
	/* float32 sums and means over one block of axes: the runtime kernel. */
	int first = -1, last = -1;
	bool adjacent = true;
	for (int k = 0; k < rank; k++)
		if (red[k] && X.shape->dims[k].size != 1) {
			if (first < 0)
				first = k;
			last = k;
		}
	for (int k = first; k >= 0 && k <= last; k++)
		adjacent = adjacent && (red[k] || X.shape->dims[k].size == 1);
	if (dt == DT_FLOAT && adjacent && (op == OP_ReduceMean || op == OP_ReduceSum)) {
		int64_t outer = 1, len = 1, inner = 1;
		for (int k = 0; k < rank; k++) {
			int64_t d = X.shape->dims[k].size;
			if (first < 0 || k < first)
				outer *= d;
			else if (k <= last)
				len *= d;
			else
				inner *= d;
		}
		out(E, "\tkiln_f32_reduce_%s(%s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ");\n",
		    op == OP_ReduceMean ? "mean" : "sum", X.expr, Y.expr, outer, len, inner);
		return;
	}
	if (dt == DT_FLOAT16 || dt == DT_BFLOAT16 || dt == DT_STRING || dt == DT_BOOL)
		emit_fail(E, "%s on %s is not supported by the code generator yet", E->n->op_type,
		          dtype_name(dt));
	/* Floats accumulate in double, integers in their own type widened. */
	bool fl = is_float(dt);
	const char *acc_t = fl ? "double" : is_unsigned(dt) ? "uint64_t" : "int64_t";
	const char *t = ctype(Y.dtype);
	const char *init = "acc = 0;", *step = "acc += x;";
	const char *fini = arena_printf(E->a, "r = (%s)acc;", t);
	switch (op) {
	case OP_ReduceSum: break;
	case OP_ReduceMean: fini = arena_printf(E->a, "r = (%s)(acc / n);", t); break;
	case OP_ReduceProd: init = "acc = 1;"; step = "acc *= x;"; break;
	case OP_ReduceSumSquare: step = "acc += (double)x * x;"; break;
	case OP_ReduceL1: step = fl ? "acc += fabs((double)x);" : "acc += x < 0 ? -x : x;"; break;
	case OP_ReduceL2:
		step = "acc += (double)x * x;";
		fini = arena_printf(E->a, "r = (%s)sqrt((double)acc);", t);
		break;
	case OP_ReduceLogSum: fini = arena_printf(E->a, "r = (%s)log((double)acc);", t); break;
	case OP_ReduceLogSumExp:
		/* As the ONNX definition: log(sum(exp(x))), in double. */
		acc_t = "double";
		step = "acc += exp((double)x);";
		fini = arena_printf(E->a, "r = (%s)log(acc);", t);
		break;
	case OP_ReduceMax: case OP_ReduceMin: {
		const char *cmp = op == OP_ReduceMax ? ">" : "<";
		acc_t = fl ? "double" : ctype(dt);
		init = fl ? (op == OP_ReduceMax ? "acc = -(double)INFINITY;" : "acc = (double)INFINITY;")
		          : "acc = 0; int first = 1;";
		if (fl)
			step = arena_printf(E->a, "if (x != x || x %s acc) acc = x;", cmp);
		else
			step = arena_printf(E->a, "if (first || x %s acc) acc = x; first = 0;", cmp);
		break;
	}
	default:
		emit_fail(E, "no code generator for this op yet");
	}
	emit_reduce_loops(E, &X, &Y, red, acc_t, init, step, fini);
}

/* ArgMax/ArgMin along one axis: the first (or, with select_last_index, the
 * last) position of the extreme value, as int64. */
static void emit_argext(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int rank = X.shape->rank;
	if (X.dtype == DT_FLOAT16 || X.dtype == DT_BFLOAT16)
		emit_fail(E, "%s on %s is not supported by the code generator yet", E->n->op_type,
		          dtype_name(X.dtype));
	bool red[KILN_MAX_RANK] = {0};
	int axis = norm_axis(node_attr_int(E->n, "axis", 0), rank);
	red[axis] = true;
	bool last = node_attr_int(E->n, "select_last_index", 0) != 0;
	const char *cmp = E->n->op == OP_ArgMax ? (last ? ">=" : ">") : (last ? "<=" : "<");
	const char *step = arena_printf(E->a, "if (i == 0 || x %s best) { best = x; acc = i; } i++;",
	                                cmp);
	const char *init = arena_printf(E->a, "acc = 0; int64_t i = 0; %s best = 0;", ctype(X.dtype));
	emit_reduce_loops(E, &X, &Y, red, "int64_t", init, step, "r = acc;");
}

/* ---- generators ------------------------------------------------------- */

/* ConstantOfShape too large to fold: fill with the value. */
static void emit_constant_of_shape(Emit *E)
{
	Operand Y = out_op(E, 0);
	const Attr *v = node_attr(E->n, "value");
	decl(E, "Y", &Y, true);
	if (!v) {
		out(E, "\tmemset(Y, 0, %" PRId64 ");\n", Y.nelem * (int64_t)dtype_size(Y.dtype));
		return;
	}
	int s = symbol_for(E, v->tensors[0].dtype, v->tensors[0].w.bytes, dtype_size(Y.dtype),
	                   "constant_of_shape_value");
	out(E, "\tconst %s value = ((const %s *)%s)[0];\n", ctype(Y.dtype), ctype(Y.dtype),
	    E->syms[s].name);
	out(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\tY[i] = value;\n", Y.nelem);
}

/* Range not folded (floats, or large): y[i] = start + i * delta, as ONNX. */
static void emit_range(Emit *E)
{
	Operand S = in_op(E, 0), D = in_op(E, 2), Y = out_op(E, 0);
	decl(E, "Y", &Y, true);
	out(E, "\tconst %s start = (%s)[0], delta = (%s)[0];\n", ctype(Y.dtype), S.expr, D.expr);
	out(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\tY[i] = (%s)(start + (%s)i * delta);\n",
	    Y.nelem, ctype(Y.dtype), ctype(Y.dtype));
}

static void emit_dropout(Emit *E)
{
	int y = E->n->out[0];
	if (E->plan->root[y] == y) /* the output is the caller's: copy */
		emit_copy(E);
	if (E->n->nout > 1 && E->n->out[1] != NONE) {
		Operand M = out_op(E, 1);
		out(E, "\tmemset(%s, 1, %" PRId64 "); /* inference: every element kept */\n", M.expr,
		    M.nelem);
	}
}

/* Open one loop per axis of s (index variables o0, o1, ...); returns the
 * indent for the body. close_loops ends them. */
static const char *open_loops(Emit *E, const Shape *s)
{
	char *ind = arena_alloc(E->a, KILN_MAX_RANK + 3);
	ind[0] = '\t';
	for (int k = 0; k < s->rank; k++) {
		out(E, "%sfor (int64_t o%d = 0; o%d < %" PRId64 "; o%d++) {\n", ind, k, k,
		    s->dims[k].size, k);
		ind[k + 1] = '\t';
	}
	if (s->rank == 0) {
		out(E, "\t{\n");
		ind[1] = '\t';
	}
	return ind;
}

static void close_loops(Emit *E, const Shape *s)
{
	for (int k = (s->rank ? s->rank : 1) - 1; k >= 0; k--)
		out(E, "%.*s}\n", k + 1, "\t\t\t\t\t\t\t\t\t");
}

/* "o0 * s0 + o1 * s1 + ..." over the axes of s (row-major strides), with
 * axis `swap` replaced by the expression `with` (or nothing, if NULL). */
static const char *linear(Emit *E, const Shape *s, int swap, const char *with)
{
	char *e = arena_strdup(E->a, "0");
	int64_t st = 1;
	for (int k = s->rank - 1; k >= 0; k--) {
		const char *v = k == swap ? with : arena_printf(E->a, "o%d", k);
		if (v && s->dims[k].size != 1)
			e = arena_printf(E->a, "%s + (%s) * %" PRId64, e, v, st);
		st *= s->dims[k].size;
	}
	return e;
}

static void emit_gather_elements(Emit *E)
{
	Operand D = in_op(E, 0), I = in_op(E, 1), Y = out_op(E, 0);
	int axis = norm_axis(node_attr_int(E->n, "axis", 0), D.shape->rank);
	int64_t len = D.shape->dims[axis].size;
	decl(E, "D", &D, false);
	decl(E, "I", &I, false);
	decl(E, "Y", &Y, true);
	/* Check every index first: nothing is written if one is out of range. */
	out(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n"
	       "\t\tif (I[i] < -%" PRId64 " || I[i] >= %" PRId64 ")\n\t\t\treturn KILN_SHAPE_ERROR;\n",
	    I.nelem, len, len);
	const char *ind = open_loops(E, I.shape);
	out(E, "%sint64_t j = I[%s];\n%sif (j < 0)\n%s\tj += %" PRId64 ";\n", ind,
	    linear(E, I.shape, -1, NULL), ind, ind, len);
	out(E, "%sY[%s] = D[%s];\n", ind, linear(E, I.shape, -1, NULL), linear(E, D.shape, axis, "j"));
	close_loops(E, I.shape);
}

static void emit_tile(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	if (Y.nelem == 0)
		return;
	const char *ind = open_loops(E, Y.shape);
	char *src = arena_strdup(E->a, "0");
	int64_t st = 1;
	for (int k = X.shape->rank - 1; k >= 0; k--) {
		if (X.shape->dims[k].size != 1)
			src = arena_printf(E->a, "%s + (o%d %% %" PRId64 ") * %" PRId64, src, k,
			                   X.shape->dims[k].size, st);
		st *= X.shape->dims[k].size;
	}
	out(E, "%sY[%s] = X[%s];\n", ind, linear(E, Y.shape, -1, NULL), src);
	close_loops(E, Y.shape);
}

static void emit_pad(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int rank = X.shape->rank;
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	int64_t pads[2 * KILN_MAX_RANK], n;
	if (E->n->since < 11) {
		attr_ints(&inf, "pads", pads, 2 * KILN_MAX_RANK);
	} else {
		const int64_t *v = infer_require_ints(&inf, 1, &n);
		memcpy(pads, v, (size_t)n * 8);
	}
	Infer *xp = &inf;
	const char *mode = attr_string(xp, "mode", "constant");
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	if (strcmp(mode, "constant") == 0) {
		if (E->n->since < 11)
			out(E, "\tconst %s value = (%s)%s;\n", ctype(Y.dtype), ctype(Y.dtype),
			    flit(E, node_attr_float(E->n, "value", 0.0f), DT_DOUBLE));
		else if (E->n->nin > 2 && E->n->in[2] != NONE)
			out(E, "\tconst %s value = (%s)[0];\n", ctype(Y.dtype), in_op(E, 2).expr);
		else
			out(E, "\tconst %s value = 0;\n", ctype(Y.dtype));
	} else if (strcmp(mode, "reflect") && strcmp(mode, "edge")) {
		emit_fail(E, "Pad mode \"%s\" is not supported", mode);
	}
	if (Y.nelem == 0)
		return;
	const char *ind = open_loops(E, Y.shape);
	out(E, "%sint64_t at = 0;\n%sint ok = 1;\n%s(void)ok;\n", ind, ind, ind);
	int64_t st = 1, xs[KILN_MAX_RANK];
	for (int k = rank - 1; k >= 0; k--) {
		xs[k] = st;
		st *= X.shape->dims[k].size;
	}
	for (int k = 0; k < rank; k++) {
		int64_t len = X.shape->dims[k].size;
		out(E, "%s{\n%s\tint64_t c = o%d - %" PRId64 ";\n", ind, ind, k, pads[k]);
		if (strcmp(mode, "constant") == 0)
			out(E, "%s\tif (c < 0 || c >= %" PRId64 ") ok = 0;\n", ind, len);
		else if (strcmp(mode, "edge") == 0)
			out(E, "%s\tc = c < 0 ? 0 : c >= %" PRId64 " ? %" PRId64 " : c;\n", ind, len, len - 1);
		else /* reflect, without repeating the edge */
			out(E, "%s\twhile (c < 0 || c >= %" PRId64 ")\n%s\t\tc = c < 0 ? -c : 2 * %" PRId64
			       " - c;\n", ind, len, ind, len - 1);
		out(E, "%s\tat += c * %" PRId64 ";\n%s}\n", ind, xs[k], ind);
	}
	out(E, "%sY[%s] = %s;\n", ind, linear(E, Y.shape, -1, NULL),
	    strcmp(mode, "constant") == 0 ? "ok ? X[at] : value" : "X[at]");
	close_loops(E, Y.shape);
}

/* Trilu: keep the upper (j - i >= k) or lower (j - i <= k) triangle of the
 * last two axes; zero the rest. */
static void emit_trilu(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int r = X.shape->rank;
	bool upper = node_attr_int(E->n, "upper", 1) != 0;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	if (E->n->nin > 1 && E->n->in[1] != NONE)
		out(E, "\tconst int64_t k = (%s)[0];\n", in_op(E, 1).expr);
	else
		out(E, "\tconst int64_t k = 0;\n");
	if (Y.nelem == 0)
		return;
	const char *ind = open_loops(E, Y.shape);
	const char *at = linear(E, Y.shape, -1, NULL);
	out(E, "%sY[%s] = o%d - o%d %s k ? X[%s] : 0;\n", ind, at, r - 1, r - 2, upper ? ">=" : "<=", at);
	close_loops(E, Y.shape);
}

/* The outer/axis/inner view of axis for Hardmax (opset >= 13) or the 2-D
 * coercion before it; and CumSum's. */
static void emit_hardmax(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	int rank = X.shape->rank;
	int axis = norm_axis(node_attr_int(E->n, "axis", E->n->since < 13 ? 1 : -1), rank);
	int64_t outer = 1, len = 1, inner = 1;
	for (int k = 0; k < rank; k++) {
		int64_t d = X.shape->dims[k].size;
		if (k < axis)
			outer *= d;
		else if (k == axis || E->n->since < 13)
			len *= d;
		else
			inner *= d;
	}
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	out(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n\t\tfor (int64_t i = 0; i < %" PRId64
	       "; i++) {\n\t\t\tint64_t best = 0;\n"
	       "\t\t\tfor (int64_t a = 1; a < %" PRId64 "; a++)\n"
	       "\t\t\t\tif (X[(o * %" PRId64 " + a) * %" PRId64 " + i] > X[(o * %" PRId64
	       " + best) * %" PRId64 " + i])\n\t\t\t\t\tbest = a;\n"
	       "\t\t\tfor (int64_t a = 0; a < %" PRId64 "; a++)\n"
	       "\t\t\t\tY[(o * %" PRId64 " + a) * %" PRId64 " + i] = a == best ? 1.0f : 0.0f;\n\t\t}\n",
	    outer, inner, len, len, inner, len, inner, len, len, inner);
}

static void emit_cumsum(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int rank = X.shape->rank;
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	int64_t n;
	const int64_t *ax = infer_require_ints(&inf, 1, &n);
	if (n != 1)
		emit_fail(E, "axis must be a single value");
	int axis = norm_axis(ax[0], rank);
	bool excl = node_attr_int(E->n, "exclusive", 0) != 0, rev = node_attr_int(E->n, "reverse", 0) != 0;
	int64_t outer, inner;
	around_axis(X.shape, axis, &outer, &inner);
	int64_t len = X.shape->dims[axis].size;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	out(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n\t\tfor (int64_t i = 0; i < %" PRId64
	       "; i++) {\n\t\t\t%s acc = 0;\n"
	       "\t\t\tfor (int64_t s = 0; s < %" PRId64 "; s++) {\n"
	       "\t\t\t\tint64_t a = %s, at = (o * %" PRId64 " + a) * %" PRId64 " + i;\n"
	       "\t\t\t\t%s x = X[at];\n%s"
	       "\t\t\t}\n\t\t}\n",
	    outer, inner, is_float(X.dtype) ? "double" : ctype(X.dtype), len,
	    rev ? arena_printf(E->a, "%" PRId64 " - s", len - 1) : "s", len, inner, ctype(X.dtype),
	    excl ? arena_printf(E->a, "\t\t\t\tY[at] = (%s)acc;\n\t\t\t\tacc += x;\n", ctype(X.dtype))
	         : arena_printf(E->a, "\t\t\t\tacc += x;\n\t\t\t\tY[at] = (%s)acc;\n", ctype(X.dtype)));
}

/* NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss (log-softmax over
 * the classes computed per position on the fly, so no scratch is needed). */
static void emit_loss(Emit *E)
{
	bool sce = E->n->op == OP_SoftmaxCrossEntropyLoss;
	Operand X = in_op(E, 0), T = in_op(E, 1), Y = out_op(E, 0);
	if (!is_float(X.dtype))
		emit_fail(E, "%s on %s is not supported", E->n->op_type, dtype_name(X.dtype));
	const char *red = "mean";
	const Attr *ra = node_attr(E->n, "reduction");
	if (ra && ra->type == AT_STRING)
		red = arena_printf(E->a, "%.*s", (int)ra->s.len, ra->s.data);
	if (strcmp(red, "none") && strcmp(red, "sum") && strcmp(red, "mean"))
		emit_fail(E, "reduction \"%s\" is not none, sum or mean", red);
	bool none = strcmp(red, "none") == 0;
	const Attr *ig = node_attr(E->n, "ignore_index");
	int64_t N = X.shape->dims[0].size, C = X.shape->dims[1].size, NC = N * C;
	int64_t S = NC ? X.nelem / NC : 0;
	const char *t = ctype(X.dtype);
	decl(E, "X", &X, false);
	decl(E, "T", &T, false);
	decl(E, "Y", &Y, true);
	if (E->n->nin > 2 && E->n->in[2] != NONE)
		out(E, "\tconst %s *W = %s;\n", t, in_op(E, 2).expr);
	else
		out(E, "\tconst %s *W = NULL;\n", t);
	bool want_lp = sce && E->n->nout > 1 && E->n->out[1] != NONE;
	if (want_lp)
		out(E, "\t%s *P = %s;\n", t, out_op(E, 1).expr);
	out(E, "\tdouble total = 0, wsum = 0;\n\t(void)total, (void)wsum;\n");
	out(E, "\tfor (int64_t n = 0; n < %" PRId64 "; n++)\n\t\tfor (int64_t s = 0; s < %" PRId64
	       "; s++) {\n\t\t\tint64_t c = T[n * %" PRId64 " + s];\n", N, S, S);
	if (sce) {
		/* log_prob[k] = x[k] - max - log(sum(exp(x - max))) */
		out(E, "\t\t\tdouble m = -(double)INFINITY, z = 0;\n"
		       "\t\t\tfor (int64_t k = 0; k < %" PRId64 "; k++) {\n"
		       "\t\t\t\tdouble v = X[(n * %" PRId64 " + k) * %" PRId64 " + s];\n"
		       "\t\t\t\tm = v > m ? v : m;\n\t\t\t}\n"
		       "\t\t\tfor (int64_t k = 0; k < %" PRId64 "; k++)\n"
		       "\t\t\t\tz += exp(X[(n * %" PRId64 " + k) * %" PRId64 " + s] - m);\n"
		       "\t\t\tconst double lse = m + log(z);\n",
		    C, C, S, C, C, S);
		if (want_lp)
			out(E, "\t\t\tfor (int64_t k = 0; k < %" PRId64 "; k++)\n"
			       "\t\t\t\tP[(n * %" PRId64 " + k) * %" PRId64 " + s] = (%s)(X[(n * %" PRId64
			       " + k) * %" PRId64 " + s] - lse);\n", C, C, S, t, C, S);
	}
	if (ig) { /* an ignored position: no loss, no weight */
		out(E, "\t\t\tif (c == %" PRId64 ") {\n", ig->i);
		if (none)
			out(E, "\t\t\t\tY[n * %" PRId64 " + s] = 0;\n", S);
		out(E, "\t\t\t\tcontinue;\n\t\t\t}\n");
	}
	out(E, "\t\t\tif (c < 0 || c >= %" PRId64 ")\n\t\t\t\treturn KILN_SHAPE_ERROR;\n", C);
	out(E, "\t\t\tconst double w = W ? (double)W[c] : 1.0;\n"
	       "\t\t\tconst double l = -(%s) * w;\n",
	    sce ? arena_printf(E->a, "((double)X[(n * %" PRId64 " + c) * %" PRId64 " + s] - lse)", C, S)
	        : arena_printf(E->a, "(double)X[(n * %" PRId64 " + c) * %" PRId64 " + s]", C, S));
	if (none)
		out(E, "\t\t\tY[n * %" PRId64 " + s] = (%s)l;\n", S, t);
	else
		out(E, "\t\t\ttotal += l;\n\t\t\twsum += w;\n");
	out(E, "\t\t}\n");
	if (!none)
		out(E, "\tY[0] = (%s)(%s);\n", t, strcmp(red, "sum") == 0 ? "total" : "total / wsum");
}

/* ConvTranspose: each input element scattered through the kernel into the
 * output, which starts as the bias. Spatial axes padded to three. */
static void emit_conv_transpose(Emit *E)
{
	Operand X = in_op(E, 0), W = in_op(E, 1), Y = out_op(E, 0);
	require_f32(E, &X);
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	ConvTGeometry g;
	conv_transpose_geometry(&inf, X.shape, W.shape, &g);
	int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
	int64_t pb[3] = {0, 0, 0}, o[3] = {1, 1, 1};
	int off = 3 - g.ns;
	for (int i = 0; i < g.ns; i++) {
		in[off + i] = X.shape->dims[2 + i].size;
		k[off + i] = g.kernel[i];
		s[off + i] = g.stride[i];
		d[off + i] = g.dilation[i];
		pb[off + i] = g.pad_begin[i];
		o[off + i] = g.out[i];
	}
	int64_t N = X.shape->dims[0].size, C = X.shape->dims[1].size, M = g.out_channels;
	int64_t cg = C / g.group, mg = M / g.group;
	decl(E, "X", &X, false);
	decl(E, "W", &W, false);
	decl(E, "Y", &Y, true);
	const char *bias = E->n->nin > 2 && E->n->in[2] != NONE ? in_op(E, 2).expr : NULL;
	int64_t ovol = o[0] * o[1] * o[2], ivol = in[0] * in[1] * in[2], kvol = k[0] * k[1] * k[2];
	out(E, "\tfor (int64_t nm = 0; nm < %" PRId64 "; nm++)\n"
	       "\t\tfor (int64_t v = 0; v < %" PRId64 "; v++)\n\t\t\tY[nm * %" PRId64 " + v] = %s;\n",
	    N * M, ovol, ovol, bias ? arena_printf(E->a, "(%s)[nm %% %" PRId64 "]", bias, M) : "0.0f");
	out(E, "\tfor (int64_t n = 0; n < %" PRId64 "; n++)\n"
	       "\tfor (int64_t c = 0; c < %" PRId64 "; c++)\n"
	       "\tfor (int64_t i0 = 0; i0 < %" PRId64 "; i0++)\n"
	       "\tfor (int64_t i1 = 0; i1 < %" PRId64 "; i1++)\n"
	       "\tfor (int64_t i2 = 0; i2 < %" PRId64 "; i2++) {\n"
	       "\t\tconst float x = X[(n * %" PRId64 " + c) * %" PRId64 " + (i0 * %" PRId64 " + i1) * %" PRId64 " + i2];\n"
	       "\t\tconst int64_t g = c / %" PRId64 ";\n"
	       "\t\tfor (int64_t mm = 0; mm < %" PRId64 "; mm++)\n"
	       "\t\tfor (int64_t k0 = 0; k0 < %" PRId64 "; k0++)\n"
	       "\t\tfor (int64_t k1 = 0; k1 < %" PRId64 "; k1++)\n"
	       "\t\tfor (int64_t k2 = 0; k2 < %" PRId64 "; k2++) {\n"
	       "\t\t\tconst int64_t o0 = i0 * %" PRId64 " - %" PRId64 " + k0 * %" PRId64 ";\n"
	       "\t\t\tconst int64_t o1 = i1 * %" PRId64 " - %" PRId64 " + k1 * %" PRId64 ";\n"
	       "\t\t\tconst int64_t o2 = i2 * %" PRId64 " - %" PRId64 " + k2 * %" PRId64 ";\n"
	       "\t\t\tif (o0 < 0 || o0 >= %" PRId64 " || o1 < 0 || o1 >= %" PRId64 " || o2 < 0 || o2 >= %" PRId64 ")\n"
	       "\t\t\t\tcontinue;\n"
	       "\t\t\tY[(n * %" PRId64 " + g * %" PRId64 " + mm) * %" PRId64 " + (o0 * %" PRId64 " + o1) * %" PRId64 " + o2] +=\n"
	       "\t\t\t\tx * W[(c * %" PRId64 " + mm) * %" PRId64 " + (k0 * %" PRId64 " + k1) * %" PRId64 " + k2];\n"
	       "\t\t}\n\t}\n",
	    N, C, in[0], in[1], in[2], C, ivol, in[1], in[2], cg, mg, k[0], k[1], k[2], s[0], pb[0],
	    d[0], s[1], pb[1], d[1], s[2], pb[2], d[2], o[0], o[1], o[2], M, mg, ovol, o[1], o[2], mg,
	    kvol, k[1], k[2]);
}

/* DepthToSpace (DCR or CRD) and SpaceToDepth: pure index maps over NCHW. */
static void emit_depth_space(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	int64_t b = node_attr_int(E->n, "blocksize", 1);
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	bool to_space = E->n->op == OP_DepthToSpace;
	const Attr *ma = node_attr(E->n, "mode");
	bool crd = ma && ma->type == AT_STRING && ma->s.len == 3 && memcmp(ma->s.data, "CRD", 3) == 0;
	/* Loop over the space-side tensor (Y for DepthToSpace, X for SpaceToDepth). */
	const Shape *sp = to_space ? Y.shape : X.shape, *dp = to_space ? X.shape : Y.shape;
	int64_t C = sp->dims[1].size, H = sp->dims[2].size, W = sp->dims[3].size;
	int64_t dC = dp->dims[1].size, dH = dp->dims[2].size, dW = dp->dims[3].size;
	out(E, "\tfor (int64_t n = 0; n < %" PRId64 "; n++)\n\tfor (int64_t c = 0; c < %" PRId64
	       "; c++)\n\tfor (int64_t h = 0; h < %" PRId64 "; h++)\n\tfor (int64_t w = 0; w < %" PRId64
	       "; w++) {\n", sp->dims[0].size, C, H, W);
	out(E, "\t\tconst int64_t i = h %% %" PRId64 ", j = w %% %" PRId64 ";\n", b, b);
	out(E, "\t\tconst int64_t dc = %s;\n",
	    crd ? arena_printf(E->a, "(c * %" PRId64 " + i) * %" PRId64 " + j", b, b)
	        : arena_printf(E->a, "(i * %" PRId64 " + j) * %" PRId64 " + c", b, C));
	const char *space = arena_printf(E->a, "((n * %" PRId64 " + c) * %" PRId64 " + h) * %" PRId64 " + w", C, H, W);
	const char *depth = arena_printf(E->a, "((n * %" PRId64 " + dc) * %" PRId64 " + h / %" PRId64
	                                 ") * %" PRId64 " + w / %" PRId64, dC, dH, b, dW, b);
	out(E, "\t\t%s;\n\t}\n", to_space ? arena_printf(E->a, "Y[%s] = X[%s]", space, depth)
	                                     : arena_printf(E->a, "Y[%s] = X[%s]", depth, space));
}

static void emit_one_hot(Emit *E)
{
	Operand I = in_op(E, 0), V = in_op(E, 2), Y = out_op(E, 0);
	int axis = norm_axis(node_attr_int(E->n, "axis", -1), Y.shape->rank);
	int64_t depth = Y.shape->dims[axis].size;
	decl(E, "I", &I, false);
	decl(E, "V", &V, false);
	decl(E, "Y", &Y, true);
	const char *ind = open_loops(E, Y.shape);
	/* the index position: the output's coordinates without the depth axis */
	char *at = arena_strdup(E->a, "0");
	int64_t st = 1;
	for (int k = Y.shape->rank - 1; k >= 0; k--)
		if (k != axis) {
			at = arena_printf(E->a, "%s + o%d * %" PRId64, at, k, st);
			st *= Y.shape->dims[k].size;
		}
	out(E, "%sint64_t v = (int64_t)I[%s];\n%sif (v < 0)\n%s\tv += %" PRId64 ";\n", ind, at, ind,
	    ind, depth);
	out(E, "%sY[%s] = v == o%d ? V[1] : V[0];\n", ind, linear(E, Y.shape, -1, NULL), axis);
	close_loops(E, Y.shape);
}

/* The index tuple I[o, 0..k-1] of GatherND/ScatterND, each wrapped and
 * checked against data axis first + j, added to `at` with the data strides. */
static void emit_index_tuple(Emit *E, const Shape *data, int64_t k, int first, const int64_t *st)
{
	for (int64_t j = 0; j < k; j++) {
		int64_t len = data->dims[first + j].size;
		out(E, "\t\t{\n\t\t\tint64_t v = (int64_t)I[o * %" PRId64 " + %" PRId64 "];\n"
		       "\t\t\tif (v < 0)\n\t\t\t\tv += %" PRId64 ";\n"
		       "\t\t\tif (v < 0 || v >= %" PRId64 ")\n\t\t\t\treturn KILN_SHAPE_ERROR;\n"
		       "\t\t\tat += v * %" PRId64 ";\n\t\t}\n",
		    k, j, len, len, st[first + j]);
	}
}

static void emit_gather_nd(Emit *E)
{
	Operand D = in_op(E, 0), I = in_op(E, 1), Y = out_op(E, 0);
	int64_t b = node_attr_int(E->n, "batch_dims", 0);
	int qr = I.shape->rank, r = D.shape->rank;
	int64_t k = I.shape->dims[qr - 1].size, slice = 1, outer = 1, batch = 1;
	for (int i = (int)(b + k); i < r; i++)
		slice *= D.shape->dims[i].size;
	for (int i = 0; i < qr - 1; i++)
		outer *= I.shape->dims[i].size;
	for (int i = 0; i < b; i++)
		batch *= I.shape->dims[i].size;
	int64_t per_batch = outer / (batch ? batch : 1), dstride[KILN_MAX_RANK], acc = 1;
	for (int i = r - 1; i >= 0; i--) {
		dstride[i] = acc;
		acc *= D.shape->dims[i].size;
	}
	size_t es = dtype_size(D.dtype);
	decl(E, "D", &D, false);
	decl(E, "I", &I, false);
	decl(E, "Y", &Y, true);
	if (Y.nelem == 0)
		return;
	out(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++) {\n", outer);
	/* The leading batch_dims axes are shared by data and indices: the batch
	 * index times the stride of the last of them. */
	out(E, "\t\tint64_t at = (o / %" PRId64 ") * %" PRId64 ";\n", per_batch,
	    b ? dstride[b - 1] : (int64_t)0);
	emit_index_tuple(E, D.shape, k, (int)b, dstride);
	out(E, "\t\tmemcpy(Y + o * %" PRId64 ", D + at, %zu);\n\t}\n", slice, (size_t)slice * es);
}

/* ScatterElements and ScatterND: the output starts as the data, then the
 * updates are written (or added/multiplied, with reduction) at the indices. */
static void emit_scatter(Emit *E)
{
	Operand D = in_op(E, 0), I = in_op(E, 1), U = in_op(E, 2), Y = out_op(E, 0);
	const Attr *ra = node_attr(E->n, "reduction");
	const char *op = "=";
	if (ra && ra->type == AT_STRING && ra->s.len == 3 && memcmp(ra->s.data, "add", 3) == 0)
		op = "+=";
	else if (ra && ra->type == AT_STRING && ra->s.len == 3 && memcmp(ra->s.data, "mul", 3) == 0)
		op = "*=";
	else if (ra && ra->type == AT_STRING && !(ra->s.len == 4 && memcmp(ra->s.data, "none", 4) == 0))
		emit_fail(E, "reduction \"%.*s\" is not supported", (int)ra->s.len, ra->s.data);
	decl(E, "D", &D, false);
	decl(E, "I", &I, false);
	decl(E, "U", &U, false);
	decl(E, "Y", &Y, true);
	out(E, "\tif ((const void *)Y != (const void *)D)\n\t\tmemcpy(Y, D, %zu);\n",
	    (size_t)Y.nelem * dtype_size(Y.dtype));
	if (E->n->op != OP_ScatterND) {
		int axis = norm_axis(node_attr_int(E->n, "axis", 0), D.shape->rank);
		int64_t len = D.shape->dims[axis].size;
		const char *ind = open_loops(E, I.shape);
		out(E, "%sint64_t j = (int64_t)I[%s];\n%sif (j < 0)\n%s\tj += %" PRId64 ";\n"
		       "%sif (j < 0 || j >= %" PRId64 ")\n%s\treturn KILN_SHAPE_ERROR;\n",
		    ind, linear(E, I.shape, -1, NULL), ind, ind, len, ind, len, ind);
		out(E, "%sY[%s] %s U[%s];\n", ind, linear(E, D.shape, axis, "j"), op,
		    linear(E, I.shape, -1, NULL));
		close_loops(E, I.shape);
		return;
	}
	int qr = I.shape->rank, r = D.shape->rank;
	int64_t k = I.shape->dims[qr - 1].size, slice = 1, outer = 1, st[KILN_MAX_RANK], acc = 1;
	for (int i = (int)k; i < r; i++)
		slice *= D.shape->dims[i].size;
	for (int i = 0; i < qr - 1; i++)
		outer *= I.shape->dims[i].size;
	for (int i = r - 1; i >= 0; i--) {
		st[i] = acc;
		acc *= D.shape->dims[i].size;
	}
	out(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++) {\n\t\tint64_t at = 0;\n", outer);
	emit_index_tuple(E, D.shape, k, 0, st);
	out(E, "\t\tfor (int64_t s = 0; s < %" PRId64 "; s++)\n\t\t\tY[at + s] %s U[o * %" PRId64
	       " + s];\n\t}\n", slice, op, slice);
}

/* InstanceNormalization: per (n, c) plane, (x - mean) / sqrt(var + eps) * s + b. */
static void emit_instance_norm(Emit *E)
{
	Operand X = in_op(E, 0), S = in_op(E, 1), B = in_op(E, 2), Y = out_op(E, 0);
	require_f32(E, &X);
	int64_t C = X.shape->dims[1].size, planes = X.shape->dims[0].size * C;
	int64_t n = planes ? X.nelem / planes : 0;
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	out(E, "\tconst float *S = %s, *B = %s;\n", S.expr, B.expr);
	out(E, "\tfor (int64_t p = 0; p < %" PRId64 "; p++) {\n"
	       "\t\tconst float *x = X + p * %" PRId64 ";\n\t\tfloat *y = Y + p * %" PRId64 ";\n"
	       "\t\tdouble sum = 0, sq = 0;\n"
	       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\t\tsum += x[i];\n"
	       "\t\tconst double mean = sum / %" PRId64 ";\n"
	       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\t\tsq += (x[i] - mean) * (x[i] - mean);\n"
	       "\t\tconst double inv = 1.0 / sqrt(sq / %" PRId64 " + %s);\n"
	       "\t\tconst int64_t c = p %% %" PRId64 ";\n"
	       "\t\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n"
	       "\t\t\ty[i] = (float)((x[i] - mean) * inv * S[c] + B[c]);\n\t}\n",
	    planes, n, n, n, n, n, n, flit(E, node_attr_float(E->n, "epsilon", 1e-5f), DT_DOUBLE), C, n);
}

/* LRN across channels: x / (bias + alpha / size * sum of squares in the window)^beta. */
static void emit_lrn(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	int64_t size = node_attr_int(E->n, "size", 1), C = X.shape->dims[1].size;
	int64_t N = X.shape->dims[0].size, NC = N * C, sp = NC ? X.nelem / NC : 0;
	double alpha = node_attr_float(E->n, "alpha", 1e-4f), beta = node_attr_float(E->n, "beta", 0.75f);
	double bias = node_attr_float(E->n, "bias", 1.0f);
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	out(E, "\tfor (int64_t n = 0; n < %" PRId64 "; n++)\n\tfor (int64_t c = 0; c < %" PRId64
	       "; c++)\n\tfor (int64_t s = 0; s < %" PRId64 "; s++) {\n"
	       "\t\tdouble sq = 0;\n"
	       "\t\tfor (int64_t k = c - %" PRId64 "; k <= c + %" PRId64 "; k++)\n"
	       "\t\t\tif (k >= 0 && k < %" PRId64 ") {\n"
	       "\t\t\t\tdouble v = X[(n * %" PRId64 " + k) * %" PRId64 " + s];\n"
	       "\t\t\t\tsq += v * v;\n\t\t\t}\n"
	       "\t\tconst int64_t at = (n * %" PRId64 " + c) * %" PRId64 " + s;\n"
	       "\t\tY[at] = (float)(X[at] / pow(%s + %s / %" PRId64 " * sq, %s));\n\t}\n",
	    N, C, sp, (size - 1) / 2, size - 1 - (size - 1) / 2, C, C, sp, C, sp,
	    flit(E, bias, DT_DOUBLE), flit(E, alpha, DT_DOUBLE), size, flit(E, beta, DT_DOUBLE));
}

static void emit_eye_like(Emit *E)
{
	Operand Y = out_op(E, 0);
	int64_t k = node_attr_int(E->n, "k", 0);
	decl(E, "Y", &Y, true);
	out(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++)\n\t\tfor (int64_t j = 0; j < %" PRId64
	       "; j++)\n\t\t\tY[i * %" PRId64 " + j] = (%s)(j - i == %" PRId64 ");\n",
	    Y.shape->dims[0].size, Y.shape->dims[1].size, Y.shape->dims[1].size, ctype(Y.dtype), k);
}

/* TopK by selection: for each line, K passes each taking the best remaining
 * element; ties go to the lower index, as ONNX specifies. */
static void emit_topk(Emit *E)
{
	Operand X = in_op(E, 0), V = out_op(E, 0), I = out_op(E, 1);
	int rank = X.shape->rank;
	int axis = norm_axis(node_attr_int(E->n, "axis", -1), rank);
	bool largest = node_attr_int(E->n, "largest", 1) != 0;
	int64_t outer, inner, len = X.shape->dims[axis].size, k = V.shape->dims[axis].size;
	around_axis(X.shape, axis, &outer, &inner);
	decl(E, "X", &X, false);
	decl(E, "V", &V, true);
	out(E, "\tint64_t *I = %s;\n", I.expr);
	if (k == 0)
		return;
	/* The previous pick bounds the next: (value, index) pairs strictly after it. */
	const char *better = largest ? ">" : "<";
	out(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n\t\tfor (int64_t i = 0; i < %" PRId64
	       "; i++) {\n", outer, inner);
	out(E, "\t\t\tconst %s *x = X + o * %" PRId64 " + i;\n", ctype(X.dtype), len * inner);
	out(E, "\t\t\tint64_t prev = -1;\n");
	out(E, "\t\t\tfor (int64_t r = 0; r < %" PRId64 "; r++) {\n\t\t\t\tint64_t best = -1;\n", k);
	out(E, "\t\t\t\tfor (int64_t a = 0; a < %" PRId64 "; a++) {\n", len);
	out(E, "\t\t\t\t\tif (prev >= 0 && !(x[prev * %" PRId64 "] %s x[a * %" PRId64
	       "] || (x[prev * %" PRId64 "] == x[a * %" PRId64 "] && a > prev)))\n\t\t\t\t\t\tcontinue;\n",
	    inner, better, inner, inner, inner);
	out(E, "\t\t\t\t\tif (best < 0 || x[a * %" PRId64 "] %s x[best * %" PRId64 "])\n"
	       "\t\t\t\t\t\tbest = a;\n\t\t\t\t}\n", inner, better, inner);
	out(E, "\t\t\t\tV[(o * %" PRId64 " + r) * %" PRId64 " + i] = x[best * %" PRId64 "];\n"
	       "\t\t\t\tI[(o * %" PRId64 " + r) * %" PRId64 " + i] = best;\n\t\t\t\tprev = best;\n"
	       "\t\t\t}\n\t\t}\n", k, inner, inner, k, inner);
}

/* QuantizeLinear: saturate(round_half_even(x / scale) + zero_point);
 * DequantizeLinear: (x - zero_point) * scale. Scale and zero point are one
 * value, or one per element of `axis` (default 1). */
static void emit_quant(Emit *E)
{
	Operand X = in_op(E, 0), S = in_op(E, 1), Y = out_op(E, 0);
	bool deq = E->n->op == OP_DequantizeLinear;
	int rank = X.shape->rank;
	int64_t outer = 1, inner = 1, len = 1;
	if (S.nelem > 1) {
		int axis = norm_axis(node_attr_int(E->n, "axis", 1), rank);
		around_axis(X.shape, axis, &outer, &inner);
		len = X.shape->dims[axis].size;
	} else {
		outer = X.nelem;
	}
	bool has_zp = E->n->nin > 2 && E->n->in[2] != NONE;
	int qt = deq ? X.dtype : Y.dtype;
	if (qt != DT_UINT8 && qt != DT_INT8 && qt != DT_INT32)
		emit_fail(E, "%s with %s is not supported", E->n->op_type, dtype_name(qt));
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	out(E, "\tconst float *S = %s;\n", S.expr);
	out(E, "\tconst %s *Z = %s;\n", ctype(qt), has_zp ? in_op(E, 2).expr : "NULL");
	out(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n\tfor (int64_t a = 0; a < %" PRId64
	       "; a++)\n\tfor (int64_t i = 0; i < %" PRId64 "; i++) {\n"
	       "\t\tconst int64_t at = (o * %" PRId64 " + a) * %" PRId64 " + i;\n"
	       "\t\tconst int64_t q = %s;\n\t\tconst double zp = Z ? (double)Z[q] : 0.0;\n",
	    outer, len, inner, len, inner, S.nelem > 1 ? "a" : "0");
	if (deq) {
		out(E, "\t\tY[at] = (float)(((double)X[at] - zp) * (double)S[q]);\n\t}\n");
	} else {
		double lo = qt == DT_UINT8 ? 0 : qt == DT_INT8 ? -128 : -2147483648.0;
		double hi = qt == DT_UINT8 ? 255 : qt == DT_INT8 ? 127 : 2147483647.0;
		/* In float, as the ONNX reference and ONNX Runtime: a float32
		 * quotient exactly at .5 must round to even from there. */
		out(E, "\t\tdouble v = (double)rintf(X[at] / S[q]) + zp;\n"
		       "\t\tv = v < %.1f ? %.1f : v > %.1f ? %.1f : v;\n"
		       "\t\tY[at] = (%s)v;\n\t}\n", lo, lo, hi, hi, ctype(qt));
	}
}

static void emit_resize(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	kiln_resize_params p;
	resize_params(&inf, X.shape, &p);
	out(E, "\tstatic const kiln_resize_params p = {\n\t\t.rank = %d, .mode = %d, .coord_mode = %d, "
	       ".nearest_mode = %d, .exclude_outside = %d,\n\t\t.cubic_coeff_a = %s, "
	       ".extrapolation_value = %s,\n",
	    p.rank, p.mode, p.coord_mode, p.nearest_mode, p.exclude_outside,
	    flit(E, p.cubic_coeff_a, DT_DOUBLE), flit(E, p.extrapolation_value, DT_DOUBLE));
	const char *names[] = {"in", "out"};
	const int64_t *ints[] = {p.in, p.out};
	for (int i = 0; i < 2; i++) {
		out(E, "\t\t.%s = {", names[i]);
		for (int k = 0; k < p.rank; k++)
			out(E, "%s%" PRId64, k ? ", " : "", ints[i][k]);
		out(E, "},\n");
	}
	const char *fnames[] = {"scale", "roi_start", "roi_end"};
	const double *fl[] = {p.scale, p.roi_start, p.roi_end};
	for (int i = 0; i < 3; i++) {
		out(E, "\t\t.%s = {", fnames[i]);
		for (int k = 0; k < p.rank; k++)
			out(E, "%s%s", k ? ", " : "", flit(E, fl[i][k], DT_DOUBLE));
		out(E, "},\n");
	}
	out(E, "\t};\n\tkiln_f32_resize(&p, %s, %s);\n", X.expr, Y.expr);
}

/* Einsum as loops: one per output letter, then one per summed letter, and
 * the product of the operands' elements accumulated (in double for floats). */
static void emit_einsum(Emit *E)
{
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	Einsum e;
	einsum_parse(&inf, &e);
	Operand Y = out_op(E, 0);
	decl(E, "Y", &Y, true);
	Operand xs[EINSUM_MAX_OPERANDS];
	for (int k = 0; k < e.noperands; k++) {
		xs[k] = in_op(E, k);
		char var[8];
		snprintf(var, sizeof var, "X%d", k);
		decl(E, var, &xs[k], false);
	}
	if (Y.nelem == 0)
		return;
	char letters[64];
	int nl = 0;
	for (const char *q = e.out; *q; q++)
		letters[nl++] = *q;
	int nout = nl;
	for (int k = 0; k < e.noperands; k++)
		for (const char *q = e.term[k]; *q; q++)
			if (!memchr(letters, *q, (size_t)nl))
				letters[nl++] = *q;
	const char *acc_t = is_float(Y.dtype) ? "double" : ctype(Y.dtype);
	out(E, "\tint64_t at = 0;\n");
	char ind[80] = "\t";
	int depth = 0;
	for (int i = 0; i <= nl; i++) {
		if (i == nout)  /* every output element: a fresh sum over the other letters */
			out(E, "%s%s acc = 0;\n", ind, acc_t);
		if (i == nl)
			break;
		out(E, "%sfor (int64_t l%d = 0; l%d < %" PRId64 "; l%d++) {\n", ind, i, i,
		    e.size[(unsigned char)letters[i]], i);
		ind[++depth] = '\t';
	}
	out(E, "%sacc += (%s)1", ind, acc_t);
	for (int k = 0; k < e.noperands; k++) {
		out(E, " * (%s)X%d[0", acc_t, k);
		int64_t st = 1;
		for (int a = xs[k].shape->rank - 1; a >= 0; a--) {
			int li = (int)((const char *)memchr(letters, e.term[k][a], (size_t)nl) - letters);
			if (xs[k].shape->dims[a].size != 1)
				out(E, " + l%d * %" PRId64, li, st);
			st *= xs[k].shape->dims[a].size;
		}
		out(E, "]");
	}
	out(E, ";\n");
	if (nl == nout) /* nothing summed: each element is one product */
		out(E, "%sY[at++] = (%s)acc;\n", ind, ctype(Y.dtype));
	while (depth > 0) {
		ind[depth--] = 0;
		out(E, "%s}\n", ind);
		if (depth == nout && nl > nout)
			out(E, "%sY[at++] = (%s)acc;\n", ind, ctype(Y.dtype));
	}
}

/* ---- nodes ------------------------------------------------------------ */

static void emit_body(Emit *E)
{
	switch (E->n->op) {
	case OP_Add: case OP_Sub: case OP_Mul: case OP_Div: case OP_Pow: case OP_Where:
	case OP_And: case OP_Or: case OP_Xor: case OP_Equal: case OP_Less: case OP_Greater:
	case OP_LessOrEqual: case OP_GreaterOrEqual: case OP_Mod: case OP_BitShift: case OP_PRelu:
	case OP_Min: case OP_Max: case OP_Sum: case OP_Mean:
		emit_binary(E);
		break;
	case OP_Cast: case OP_CastLike: emit_cast(E); break;
	case OP_Expand: {
		Operand X = in_op(E, 0), Y = out_op(E, 0);
		emit_map(E, &Y, &X, 1, "x0");
		break;
	}
	case OP_ConstantOfShape: emit_constant_of_shape(E); break;
	case OP_Range: emit_range(E); break;
	case OP_Dropout: emit_dropout(E); break;
	case OP_GatherElements: emit_gather_elements(E); break;
	case OP_Tile: emit_tile(E); break;
	case OP_Pad: emit_pad(E); break;
	case OP_Trilu: emit_trilu(E); break;
	case OP_Hardmax: emit_hardmax(E); break;
	case OP_CumSum: emit_cumsum(E); break;
	case OP_DepthToSpace: case OP_SpaceToDepth: emit_depth_space(E); break;
	case OP_OneHot: emit_one_hot(E); break;
	case OP_GatherND: emit_gather_nd(E); break;
	case OP_ScatterElements: case OP_ScatterND: case OP_Scatter: emit_scatter(E); break;
	case OP_NegativeLogLikelihoodLoss: case OP_SoftmaxCrossEntropyLoss: emit_loss(E); break;
	case OP_Gemm: emit_gemm(E); break;
	case OP_MatMul: emit_matmul(E); break;
	case OP_Softmax: case OP_LogSoftmax: emit_softmax(E); break;
	case OP_BatchNormalization: emit_batchnorm(E); break;
	case OP_LayerNormalization: emit_layernorm(E); break;
	case OP_Reshape: case OP_Flatten: case OP_Squeeze: case OP_Unsqueeze: emit_copy(E); break;
	case OP_Transpose: emit_transpose(E); break;
	case OP_Concat: emit_concat(E); break;
	case OP_Split: emit_split(E); break;
	case OP_Gather: emit_gather(E); return;
	case OP_Slice: emit_slice(E); break;
	case OP_Conv: emit_conv(E); break;
	case OP_ConvTranspose: emit_conv_transpose(E); break;
	case OP_MaxPool: case OP_AveragePool: case OP_GlobalAveragePool: case OP_GlobalMaxPool:
		emit_pool(E);
		break;
	case OP_InstanceNormalization: emit_instance_norm(E); break;
	case OP_LRN: emit_lrn(E); break;
	case OP_EyeLike: emit_eye_like(E); break;
	case OP_TopK: emit_topk(E); break;
	case OP_Einsum: emit_einsum(E); break;
	case OP_Resize: case OP_Upsample: emit_resize(E); break;
	case OP_QuantizeLinear: case OP_DequantizeLinear: emit_quant(E); break;
	case OP_ReduceMean: case OP_ReduceSum: case OP_ReduceMax: case OP_ReduceMin:
	case OP_ReduceProd: case OP_ReduceSumSquare: case OP_ReduceL1: case OP_ReduceL2:
	case OP_ReduceLogSum: case OP_ReduceLogSumExp:
		emit_reduce(E);
		break;
	case OP_ArgMax: case OP_ArgMin: emit_argext(E); break;
	default: emit_unary(E); break;
	}
	out(E, "\treturn 0;\n");
}

static void describe(Emit *E, const char *role, int id)
{
	const Value *v = &E->g->values[id];
	out(E, " *   %s \"", role);
	comment_text(E, v->name);
	out(E, "\" %s ", dtype_name(E->sig->dtypes[id]));
	shape_text(E, &E->sig->shapes[id]);
	if (E->in_index[id] != NONE)
		out(E, " input %d", E->in_index[id]);
	else if (E->out_index[id] != NONE)
		out(E, " output %d", E->out_index[id]);
	else if (E->sig->folded[id] || v->kind == VAL_WEIGHT)
		out(E, " constant");
	else if (E->plan->buf_of[id] != NONE)
		out(E, " arena @%" PRId64, E->plan->bufs[E->plan->buf_of[id]].off);
	else if (E->plan->root[id] != id)
		out(E, " view of \"%s\"", E->g->values[E->plan->root[id]].name);
	out(E, "\n");
}

/* Does the node produce anything at run time? Folded outputs are constants
 * and views need no code, unless the caller's output buffer must be filled.
 * (An in-place output shares its input's buffer but is still computed.) */
static bool node_has_code(Emit *E, const Node *n)
{
	for (int k = 0; k < n->nout; k++) {
		int id = n->out[k];
		if (id == NONE)
			continue;
		if (E->out_index[id] != NONE)
			return true;
		if (!E->sig->folded[id] && (E->plan->root[id] == id || !plan_is_view_op(n->op)))
			return true;
	}
	return false;
}

static const char *fn_name(Emit *E, const Node *n)
{
	return arena_printf(E->a, "b%" PRId64 "_n%03d_%s", E->sig->batch, n->id,
	                    sanitize(E->a, n->name[0] ? n->name : n->op_type));
}

static void emit_node(Emit *E, Node *n)
{
	E->n = n;
	out(E, "/* node %d \"", n->id);
	comment_text(E, n->name);
	out(E, "\" (%s)\n", n->op_type);
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] != NONE)
			describe(E, "in ", n->in[k]);
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] != NONE)
			describe(E, "out", n->out[k]);
	out(E, " */\n");
	out(E, "static int %s(unsigned char *a, const void *const *in, void *const *out)\n{\n",
	    fn_name(E, n));
	out(E, "\t(void)a, (void)in, (void)out;\n");
	/* A folded output the caller wants is copied from its constant. */
	bool all_folded = true;
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] != NONE && !E->sig->folded[n->out[k]])
			all_folded = false;
	if (all_folded) {
		for (int k = 0; k < n->nout; k++) {
			int id = n->out[k];
			if (id == NONE || E->out_index[id] == NONE)
				continue;
			const Folded *f = E->sig->folded[id];
			int s = symbol_for(E, f->dtype, f->data, (uint64_t)f->nelem * dtype_size(f->dtype),
			                   E->g->values[id].name);
			out(E, "\tmemcpy(out[%d], %s, %" PRIu64 ");\n", E->out_index[id], E->syms[s].name,
			    E->syms[s].nbytes);
		}
		out(E, "\treturn 0;\n}\n\n");
		return;
	}
	bool empty = true;
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] != NONE && shape_nelem(&E->sig->shapes[n->out[k]]) != 0)
			empty = false;
	if (empty) {
		out(E, "\treturn 0; /* every output is empty: nothing to compute */\n}\n\n");
		return;
	}
	emit_body(E);
	out(E, "}\n\n");
}

/* ---- files ------------------------------------------------------------ */

static void index_interface(Emit *E)
{
	Graph *g = E->g;
	E->in_index = arena_array(E->a, (size_t)g->nvalues, sizeof *E->in_index);
	E->out_index = arena_array(E->a, (size_t)g->nvalues, sizeof *E->out_index);
	for (int i = 0; i < g->nvalues; i++)
		E->in_index[i] = E->out_index[i] = NONE;
	int k = 0;
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[g->inputs[i]].kind == VAL_INPUT)
			E->in_index[g->inputs[i]] = k++;
	for (int i = 0; i < g->noutputs; i++) {
		int id = g->outputs[i];
		if (E->out_index[id] != NONE || E->in_index[id] != NONE ||
		    g->values[id].kind != VAL_TEMP)
			diag_fail(E->d, KILN_UNSUPPORTED,
			          "graph output \"%s\" is %s; kiln needs outputs computed by nodes",
			          g->values[id].name,
			          E->out_index[id] != NONE ? "listed twice" : "an input or a weight");
		E->out_index[id] = i;
	}
}

static int ninputs(const Graph *g)
{
	int n = 0;
	for (int i = 0; i < g->ninputs; i++)
		n += g->values[g->inputs[i]].kind == VAL_INPUT;
	return n;
}

static void banner(FILE *f, Emit *E, const Sig *sigs, int nsigs)
{
	const char *base = strrchr(E->m->path, '/');
	base = base ? base + 1 : E->m->path;
	fprintf(f, "/*\n * Generated by kiln %s from %s", KILN_VERSION_STRING, base);
	for (int i = 0; i < E->m->nopsets; i++)
		fprintf(f, "%s%s opset %" PRId64, i ? ", " : " (",
		        E->m->opsets[i].domain[0] ? E->m->opsets[i].domain : "ai.onnx",
		        E->m->opsets[i].version);
	fprintf(f, "%s.\n * Batch sizes:", E->m->nopsets ? ")" : "");
	for (int i = 0; i < nsigs; i++)
		fprintf(f, " %" PRId64, sigs[i].batch);
	fprintf(f, ". Do not edit: regenerate with kiln compile.\n */\n");
}

static void emit_header(Emit *E, FILE *h, const Sig *sigs, const Plan *plans, int nsigs)
{
	Graph *g = E->g;
	const char *N = E->o->name;
	banner(h, E, sigs, nsigs);
	char *guard = arena_strdup(E->a, N);
	for (char *p = guard; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	int64_t max_arena = 0;
	for (int i = 0; i < nsigs; i++)
		if (plans[i].arena_bytes > max_arena)
			max_arena = plans[i].arena_bytes;
	fprintf(h, "#ifndef %s_H\n#define %s_H\n\n#include <stdint.h>\n\n#include <kiln/model.h>\n\n",
	        guard, guard);
	fprintf(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	fprintf(h, "/* Bytes of arena one call needs at the largest compiled batch size;\n"
	           " * align it to 64 bytes. Each thread needs its own. */\n");
	fprintf(h, "#define %s_ARENA_BYTES %" PRId64 "\n\n", guard, max_arena);
	fprintf(h, "/* The model: interface, batch sizes, arena sizes and entry points. */\n");
	fprintf(h, "extern const kiln_model %s_model;\n\n", N);
	for (int i = 0; i < nsigs; i++) {
		fprintf(h, "/* Batch %" PRId64 ": arena %" PRId64 " bytes. Returns 0 or a kiln_status. */\n",
		        sigs[i].batch, plans[i].arena_bytes);
		fprintf(h, "int %s_run_b%" PRId64 "(void *arena", N, sigs[i].batch);
		for (int k = 0; k < g->ninputs; k++) {
			int id = g->inputs[k];
			if (g->values[id].kind == VAL_INPUT)
				fprintf(h, ", const %s *%s", ctype(sigs[i].dtypes[id]),
				        arena_printf(E->a, "in_%s", sanitize(E->a, g->values[id].name)));
		}
		for (int k = 0; k < g->noutputs; k++) {
			int id = g->outputs[k];
			fprintf(h, ", %s *%s", ctype(sigs[i].dtypes[id]),
			        arena_printf(E->a, "out_%s", sanitize(E->a, g->values[id].name)));
		}
		fprintf(h, ");\n");
	}
	fprintf(h, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
}

/* The batch axis of an interface value: the one axis whose size is the batch
 * times a constant in every signature while the others stay put; with one
 * signature, axis 0 if it equals the batch. -1 if there is none. */
static int batch_axis(const Sig *sigs, int nsigs, int id)
{
	const Shape *s0 = &sigs[0].shapes[id];
	for (int a = 0; a < s0->rank; a++) {
		int64_t d0 = s0->dims[a].size, b0 = sigs[0].batch;
		if (d0 % b0 || (nsigs == 1 && d0 != b0))
			continue;
		bool scales = true;
		for (int i = 1; i < nsigs && scales; i++) {
			const Shape *si = &sigs[i].shapes[id];
			for (int k = 0; k < s0->rank && scales; k++)
				scales = k == a ? si->dims[k].size == d0 / b0 * sigs[i].batch
				                : si->dims[k].size == s0->dims[k].size;
		}
		if (scales)
			return a;
	}
	return -1;
}

static void emit_descriptor(Emit *E, const Sig *sigs, const Plan *plans, int nsigs)
{
	Graph *g = E->g;
	const char *N = E->o->name;
	const Sig *s0 = &sigs[0];
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0, j = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			/* Per-sample shape: the batch axis at 1. */
			out(E, "static const int64_t %s_dims_%s%d[] = {", N, pass ? "out" : "in", j++);
			const Shape *sh = &s0->shapes[id];
			int ba = batch_axis(sigs, nsigs, id);
			for (int d = 0; d < sh->rank; d++)
				out(E, "%s%" PRId64, d ? ", " : "",
				    d == ba ? sh->dims[d].size / s0->batch : sh->dims[d].size);
			out(E, "%s};\n", sh->rank ? "" : "0");
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		out(E, "static const kiln_tensor_desc %s_%s[] = {\n", N, pass ? "outputs" : "inputs");
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0, j = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			out(E, "\t{\"");
			for (const char *p = g->values[id].name; *p; p++)
				out(E, (*p == '"' || *p == '\\') ? "\\%c" : ((unsigned char)*p < 0x20 ? "?" : "%c"),
				    *p);
			out(E, "\", %d, %d, %s_dims_%s%d, %d},\n", s0->dtypes[id], s0->shapes[id].rank, N,
			    pass ? "out" : "in", j, batch_axis(sigs, nsigs, id));
			j++;
		}
		out(E, "%s};\n", count ? "" : "\t{0}\n");
	}
	out(E, "static const int64_t %s_batches[] = {", N);
	for (int i = 0; i < nsigs; i++)
		out(E, "%s%" PRId64, i ? ", " : "", sigs[i].batch);
	out(E, "};\nstatic const uint64_t %s_arena_bytes[] = {", N);
	int64_t max_arena = 0;
	for (int i = 0; i < nsigs; i++) {
		out(E, "%s%" PRId64, i ? ", " : "", plans[i].arena_bytes);
		if (plans[i].arena_bytes > max_arena)
			max_arena = plans[i].arena_bytes;
	}
	out(E, "};\nstatic const kiln_run_fn %s_run[] = {", N);
	for (int i = 0; i < nsigs; i++)
		out(E, "%s%s_run_generic_b%" PRId64, i ? ", " : "", N, sigs[i].batch);
	out(E, "};\n\nconst kiln_model %s_model = {\n", N);
	out(E, "\t.struct_bytes = sizeof(kiln_model),\n\t.kiln_version = %d,\n\t.name = \"%s\",\n",
	    KILN_VERSION_NUM, N);
	out(E, "\t.ninputs = %d, .noutputs = %d,\n", ninputs(g), g->noutputs);
	out(E, "\t.inputs = %s_inputs, .outputs = %s_outputs,\n", N, N);
	out(E, "\t.nbatches = %d, .batches = %s_batches, .arena_bytes = %s_arena_bytes, "
	       ".run = %s_run,\n", nsigs, N, N, N);
	out(E, "\t.max_arena_bytes = %" PRId64 ",\n};\n", max_arena);
}

void emit_c(Model *m, const Sig *sigs, const Plan *plans, int nsigs, const EmitOptions *o,
            FILE *h, FILE *c, FILE *scratch, EmitResult *res)
{
	/* The code goes to scratch first: the weight symbols it names are only
	 * known once it is written, and their declarations come first in NAME.c. */
	Emit E0 = {.m = m, .g = m->graph, .d = m->diag, .a = m->arena, .o = o, .c = scratch};
	Emit *E = &E0;
	Graph *g = m->graph;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i].nattrs)
			for (int k = 0; k < g->nodes[i].nattrs; k++)
				if (g->nodes[i].attrs[k].type == AT_GRAPH || g->nodes[i].attrs[k].type == AT_GRAPHS)
					diag_fail_node(E->d, g, &g->nodes[i], KILN_UNSUPPORTED,
					               "control flow is not supported by the code generator yet");
	index_interface(E);
	E->sym_of_weight = arena_array(E->a, (size_t)g->nvalues, sizeof *E->sym_of_weight);
	for (int i = 0; i < g->nvalues; i++)
		E->sym_of_weight[i] = NONE;

	for (int i = 0; i < nsigs; i++) {
		E->sig = &sigs[i];
		E->plan = &plans[i];
		out(E, "/* ==== batch %" PRId64 ": arena %" PRId64 " bytes ==== */\n\n", sigs[i].batch,
		    plans[i].arena_bytes);
		for (int k = 0; k < g->nnodes; k++)
			if (node_has_code(E, &g->nodes[k]))
				emit_node(E, &g->nodes[k]);
		out(E, "static int %s_run_generic_b%" PRId64 "(void *arena, const void *const *in, "
		       "void *const *out)\n{\n\tunsigned char *a = arena;\n\tint st;\n",
		    o->name, sigs[i].batch);
		for (int k = 0; k < g->nnodes; k++) {
			Node *n = &g->nodes[k];
			if (!node_has_code(E, n))
				continue;
			out(E, "\tif ((st = %s(a, in, out)) != 0) /* %s */\n\t\treturn st;\n", fn_name(E, n),
			    n->op_type);
		}
		out(E, "\treturn 0;\n}\n\n");
		out(E, "int %s_run_b%" PRId64 "(void *arena", o->name, sigs[i].batch);
		int nin = 0, nout = 0;
		for (int k = 0; k < g->ninputs; k++) {
			int id = g->inputs[k];
			if (g->values[id].kind == VAL_INPUT) {
				out(E, ", const %s *in_%s", ctype(sigs[i].dtypes[id]),
				    sanitize(E->a, g->values[id].name));
				nin++;
			}
		}
		for (int k = 0; k < g->noutputs; k++) {
			out(E, ", %s *out_%s", ctype(sigs[i].dtypes[g->outputs[k]]),
			    sanitize(E->a, g->values[g->outputs[k]].name));
			nout++;
		}
		out(E, ")\n{\n\tconst void *in[%d] = {", nin ? nin : 1);
		for (int k = 0, j = 0; k < g->ninputs; k++)
			if (g->values[g->inputs[k]].kind == VAL_INPUT)
				out(E, "%sin_%s", j++ ? ", " : "", sanitize(E->a, g->values[g->inputs[k]].name));
		out(E, "%s};\n\tvoid *out[%d] = {", nin ? "" : "0", nout ? nout : 1);
		for (int k = 0; k < g->noutputs; k++)
			out(E, "%sout_%s", k ? ", " : "", sanitize(E->a, g->values[g->outputs[k]].name));
		out(E, "%s};\n\treturn %s_run_generic_b%" PRId64 "(arena, in, out);\n}\n\n",
		    nout ? "" : "0", o->name, sigs[i].batch);
	}
	emit_descriptor(E, sigs, plans, nsigs);
	emit_header(E, h, sigs, plans, nsigs);

	banner(c, E, sigs, nsigs);
	fprintf(c, "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n\n");
	fprintf(c, "#include <kiln/kernels.h>\n#include <kiln/model.h>\n\n");
	fprintf(c, "#include \"%s.h\"\n\n", o->name);
	fprintf(c, "#if !defined(KILN_VERSION_NUM) || KILN_VERSION_NUM != %d\n"
	           "#error \"generated by kiln %s: build it with that version's headers\"\n"
	           "#endif\n\n", KILN_VERSION_NUM, KILN_VERSION_STRING);
	fprintf(c, "/* Constants, in %s_weights.o: read-only, 64-byte aligned, each stored once. */\n",
	        o->name);
	for (int i = 0; i < E->nsyms; i++) {
		fprintf(c, "extern const unsigned char %s[]; /* %s, %" PRIu64 " bytes, from \"",
		        E->syms[i].name, dtype_name(E->syms[i].dtype), E->syms[i].nbytes);
		E->c = c;
		comment_text(E, E->syms[i].source);
		fprintf(c, "\" */\n");
	}
	fputc('\n', c);
	rewind(scratch);
	char buf[65536];
	size_t got;
	while ((got = fread(buf, 1, sizeof buf, scratch)) > 0)
		fwrite(buf, 1, got, c);
	res->syms = E->syms;
	res->nsyms = E->nsyms;
}
