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
 * The op emitters live in compiler/emit/, one file per family; emit_c.h is
 * what they share with this file.
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

#include "emit_c.h"
#include "opdef.h"
#include "runtime/kernels/f32-gemm/pack.h"
#include "kiln_version.h"


/* ---- small helpers ---------------------------------------------------- */

void emitf(Emit *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void emitf(Emit *E, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(E->c, fmt, ap);
	va_end(ap);
}

_Noreturn void emit_fail(Emit *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
_Noreturn void emit_fail(Emit *E, const char *fmt, ...)
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

/*
 * Every string from the model (names, domains, doc text) and every file name
 * that reaches the generated C goes through one of these two functions: the
 * model is untrusted, and a name must never become code or a warning.
 *
 * In a comment, the text keeps printable ASCII and writes every other byte as
 * \xNN: controls and newlines (which would end a // comment or split a line),
 * bytes >= 0x80 (not necessarily UTF-8; no bidirectional overrides either), a
 * backslash (\x5c, so no backslash-newline splice can follow), the '/' of a
 * "*" "/" pair, the '*' of a "/" "*" pair, and the second '?' of a "??" pair
 * (no trigraph). The result holds neither comment delimiter, so a comment
 * stays one comment whatever the name.
 */
char *c_comment_escape(Arena *a, const char *s)
{
	size_t n = strlen(s);
	char *out = arena_alloc(a, 4 * n + 1), *o = out;
	char prev = 0;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		bool plain = ch >= 0x20 && ch < 0x7f && ch != '\\' && !(prev == '*' && ch == '/') &&
		             !(prev == '/' && ch == '*') && !(prev == '?' && ch == '?');
		if (plain) {
			*o++ = (char)ch;
			prev = (char)ch;
		} else {
			o += sprintf(o, "\\x%02x", ch);
			prev = 'x';
		}
	}
	*o = 0;
	return out;
}

/* The contents of a C string literal: printable ASCII as is, except '"',
 * '\\' and the '?' of a "??" pair; every other byte as a three-digit octal
 * escape (which no following digit can extend). */
char *c_string_escape(Arena *a, const char *s)
{
	size_t n = strlen(s);
	char *out = arena_alloc(a, 4 * n + 1), *o = out;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			o += sprintf(o, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f || (ch == '?' && s[1] == '?'))
			o += sprintf(o, "\\%03o", ch);
		else
			*o++ = (char)ch;
	}
	*o = 0;
	return out;
}

void comment_text(Emit *E, const char *s)
{
	fputs(c_comment_escape(E->a, s), E->c);
}

const char *ctype(int dt)
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
	case DT_FLOAT8E4M3FN: case DT_FLOAT8E4M3FNUZ: case DT_FLOAT8E5M2: case DT_FLOAT8E5M2FNUZ:
		return "uint8_t";  /* bit patterns, converted by kiln_f8_to_f32 / kiln_f32_to_f8 */
	case DT_UINT4: case DT_INT4:
		return "uint8_t";  /* packed pairs, read by kiln_u4_get / kiln_i4_get (kiln/int4.h) */
	}
	return NULL;
}

/* A float literal that round-trips, in the type of dt. */
const char *flit(Emit *E, double v, int dt)
{
	if (isnan(v))
		return dt == DT_FLOAT ? "NAN" : "(double)NAN";
	if (isinf(v))
		return v > 0 ? (dt == DT_FLOAT ? "INFINITY" : "(double)INFINITY")
		             : (dt == DT_FLOAT ? "-INFINITY" : "-(double)INFINITY");
	return arena_printf(E->a, "%a%s", v, dt == DT_FLOAT ? "f" : "");
}

void shape_text(Emit *E, const Shape *s)
{
	emitf(E, "[");
	for (int k = 0; k < s->rank; k++)
		emitf(E, "%s%" PRId64, k ? "," : "", s->dims[k].size);
	emitf(E, "]");
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
int symbol_for(Emit *E, int dtype, const void *bytes, uint64_t nbytes, const char *hint)
{
	return symbol_in_layout(E, dtype, bytes, nbytes, hint, SYM_RAW, NULL);
}

/* symbol_for, stored in another layout (pack: its parameters). Identical
 * bytes in the same layout share one symbol. */
int symbol_in_layout(Emit *E, int dtype, const void *bytes, uint64_t nbytes, const char *hint,
                     SymLayout layout, const int64_t pack[4])
{
	uint64_t h = bytes_hash(bytes, nbytes) ^ (uint64_t)dtype ^ ((uint64_t)layout << 56);
	for (int i = 0; i < E->nsyms; i++) {
		EmitSymbol *s = &E->syms[i];
		if (s->hash == h && s->dtype == dtype && s->nbytes == nbytes && s->layout == layout &&
		    (layout == SYM_RAW || memcmp(s->pack, pack, sizeof s->pack) == 0) &&
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
	s->layout = layout;
	if (pack)
		memcpy(s->pack, pack, sizeof s->pack);
	return E->nsyms++;
}

void emit_symbol_fill(const void *arg, void *dst)
{
	const EmitSymbol *s = arg;
	switch (s->layout) {
	case SYM_PACK_B32:
		/* Weight bytes in the model file may sit at any offset (tests/fuzz
		 * found it): pack.h reads its source through memcpy, so the weight is
		 * packed where it is, without a copy. */
		kiln_pack_b32(s->bytes, s->pack[2], s->pack[3], s->pack[0], s->pack[1], dst);
		break;
	case SYM_PACK_CONV32: {
		kiln_conv2d_params p = {.in_channels = s->pack[0], .out_channels = s->pack[1],
		                        .group = 1, .kernel_h = s->pack[2], .kernel_w = s->pack[3]};
		kiln_f32_conv2d_pack(&p, s->bytes, dst);
		break;
	}
	default:
		memcpy(dst, s->bytes, s->nbytes);
		break;
	}
}

/* ---- operands --------------------------------------------------------- */


/* Where a templated node's operand k lives (see "shared node functions"). */
enum { SLOT_ARENA, SLOT_IN, SLOT_OUT, SLOT_CONST };
typedef struct EmitSlot {
	int kind;            /* SLOT_* */
	int64_t off;         /* arena offset, or input/output index */
	const char *sym;     /* SLOT_CONST: the weights symbol */
} EmitSlot;

/* The operand expression: concrete, or slot[k] while templating. */
static const char *placed(Emit *E, const char *concrete, int kind, int64_t off, const char *sym,
                          const char *t, bool is_const)
{
	if (!E->templating)
		return concrete;
	E->slots = arena_grow(E->a, E->slots, E->nslots, &E->capslots, sizeof *E->slots);
	E->slots[E->nslots] = (EmitSlot){kind, off, sym};
	return arena_printf(E->a, "((%s%s *)slot[%d])", is_const ? "const " : "", t, E->nslots++);
}

const char *symbol_expr(Emit *E, int sym, const char *t)
{
	return placed(E, arena_printf(E->a, "(const %s *)%s", t, E->syms[sym].name), SLOT_CONST, 0,
	              E->syms[sym].name, t, true);
}

/* Where value id lives, as a C pointer expression. */
Operand operand(Emit *E, int id, bool writable)
{
	const Value *v = &E->g->values[id];
	Operand op = {.dtype = E->sig->dtypes[id], .shape = &E->sig->shapes[id]};
	op.nelem = shape_nelem(op.shape);
	const char *t = ctype(op.dtype);
	if (!t)
		emit_fail(E, "element type %s of \"%s\" is not supported by the code generator yet",
		          dtype_name(op.dtype), v->name);
	if (E->out_index[id] != NONE) {
		op.expr = placed(E, arena_printf(E->a, "(%s *)out[%d]", t, E->out_index[id]), SLOT_OUT,
		                 E->out_index[id], NULL, t, false);
		return op;
	}
	KILN_ASSERT(!writable);
	(void)writable;
	if (v->kind == VAL_OUTER) {
		/* A subgraph reads an enclosing graph's value where that graph keeps
		 * it: an outer weight is the same symbol inside and outside. */
		op.expr = emit_outer_expr(E, id);
		return op;
	}
	/* Folded values are constants, except the caller's frozen inputs (a
	 * subgraph's known formal inputs are constants too). */
	if (E->sig->folded[id] && (v->kind != VAL_INPUT || E->g->parent)) {
		const Folded *f = E->sig->folded[id];
		uint64_t nbytes = dtype_bytes(f->dtype, f->nelem);
		int s = symbol_for(E, f->dtype, f->data, nbytes, v->name);
		op.expr = symbol_expr(E, s, t);
		return op;
	}
	int root = E->plan->root[id];
	const Value *rv = &E->g->values[root];
	if (rv->kind == VAL_OUTER) {
		op.expr = emit_outer_expr(E, root);  /* a view of an enclosing graph's value */
	} else if (E->in_index[root] != NONE) {
		op.expr = placed(E, arena_printf(E->a, "(const %s *)in[%d]", t, E->in_index[root]),
		                 SLOT_IN, E->in_index[root], NULL, t, true);
	} else if (rv->kind == VAL_WEIGHT) {
		int s = E->sym_of_weight[root];
		if (s == NONE) {
			s = symbol_for(E, rv->dtype, rv->weight->bytes, rv->weight->nbytes, rv->name);
			E->sym_of_weight[root] = s;
		}
		op.expr = symbol_expr(E, s, t);
	} else if (E->plan->buf_of[id] != NONE) {
		int64_t off = E->plan->bufs[E->plan->buf_of[id]].off;
		op.expr = placed(E, arena_printf(E->a, "(%s *)(a + %" PRId64 ")", t, off), SLOT_ARENA,
		                 off, NULL, t, false);
	} else {
		emit_fail(E, "value \"%s\" has no storage (kind %d)", v->name, (int)v->kind);
	}
	return op;
}

/* The output buffer of a node output (arena or caller). */
Operand result(Emit *E, int id)
{
	Operand op = {.dtype = E->sig->dtypes[id], .shape = &E->sig->shapes[id]};
	op.nelem = shape_nelem(op.shape);
	const char *t = ctype(op.dtype);
	if (!t)
		emit_fail(E, "element type %s is not supported by the code generator yet",
		          dtype_name(op.dtype));
	if (E->out_index[id] != NONE) {
		op.expr = placed(E, arena_printf(E->a, "(%s *)out[%d]", t, E->out_index[id]), SLOT_OUT,
		                 E->out_index[id], NULL, t, false);
	} else if (E->plan->buf_of[id] != NONE) {
		int64_t off = E->plan->bufs[E->plan->buf_of[id]].off;
		op.expr = placed(E, arena_printf(E->a, "(%s *)(a + %" PRId64 ")", t, off), SLOT_ARENA,
		                 off, NULL, t, false);
	} else {
		emit_fail(E, "output \"%s\" has no buffer", E->g->values[id].name);
	}
	return op;
}

Operand in_op(Emit *E, int i)
{
	if (i >= E->n->nin || E->n->in[i] == NONE)
		emit_fail(E, "input %d is missing", i);
	return operand(E, E->n->in[i], false);
}

Operand out_op(Emit *E, int i)
{
	return result(E, E->n->out[i]);
}

/* Declare a local pointer for an operand: `const float *X = ...;`. */
void decl(Emit *E, const char *var, const Operand *op, bool writable)
{
	emitf(E, "\t%s%s *%s = %s;\n", writable ? "" : "const ", ctype(op->dtype), var, op->expr);
}

/* Float attributes are float32 in ONNX; returned widened for printing. */
double node_attr_float(const Node *n, const char *name, float dflt)
{
	const Attr *a = node_attr(n, name);
	return (double)(a && a->type == AT_FLOAT ? a->f : dflt);
}

int64_t node_attr_int(const Node *n, const char *name, int64_t dflt)
{
	const Attr *a = node_attr(n, name);
	return a && a->type == AT_INT ? a->i : dflt;
}

/* A scalar of a folded input (Clip bounds), as double; false if absent. */
bool folded_scalar(Emit *E, int i, double *v)
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
void bcast_strides(const Shape *in, const Shape *outs, int64_t *st)
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

/* Nested loops over y's shape; operand j is read as x<j> through its own
 * broadcast strides, then `expr` computes the element, or, if `stmts` is
 * given, those statements assign it to r. Adjacent dims that are contiguous
 * for every operand are merged first, so same-shape operands get one loop. */
static void map_loops(Emit *E, const Operand *y, const Operand *xs, int nx, const char *expr,
                      const char *stmts, bool widen);

void emit_map_body(Emit *E, const Operand *y, const Operand *xs, int nx, const char *expr,
                          const char *stmts)
{
	map_loops(E, y, xs, nx, expr, stmts, false);
}

/* The same, but float16 and bfloat16 operands are loaded as float and a
 * 16-bit result is rounded (to nearest even) on store, so expr and stmts
 * compute in float; r is then a float. */
void emit_map_widened(Emit *E, const Operand *y, const Operand *xs, int nx, const char *expr,
                      const char *stmts)
{
	map_loops(E, y, xs, nx, expr, stmts, true);
}

static const char *half_fn(int dt, bool to_half)
{
	if (dt == DT_FLOAT16)
		return to_half ? "kiln_f32_to_f16" : "kiln_f16_to_f32";
	if (dt == DT_BFLOAT16)
		return to_half ? "kiln_f32_to_bf16" : "kiln_bf16_to_f32";
	return NULL;
}

int map_dims(const Operand *y, const Operand *xs, int nx, int64_t *md,
             int64_t ms[][KILN_MAX_RANK])
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
	return r;
}

static void map_loops(Emit *E, const Operand *y, const Operand *xs, int nx, const char *expr,
                      const char *stmts, bool widen)
{
	int64_t md[KILN_MAX_RANK], ms[MAX_MAP_OPERANDS + 1][KILN_MAX_RANK];
	int r = map_dims(y, xs, nx, md, ms);
	decl(E, "Y", y, true);
	for (int j = 0; j < nx; j++) {
		char var[16];
		snprintf(var, sizeof var, "X%d", j);
		decl(E, var, &xs[j], false);
	}
	if (y->nelem == 0)
		return;
	char indent[KILN_MAX_RANK + 2] = "\t";
	for (int k = 0; k < r; k++) {
		emitf(E, "%sfor (int64_t i%d = 0; i%d < %" PRId64 "; i%d++) {\n", indent, k, k, md[k], k);
		indent[k + 1] = '\t';
		indent[k + 2] = 0;
	}
	if (r == 0)
		emitf(E, "\t{\n"), strcpy(indent, "\t\t");
	for (int j = 0; j < nx; j++) {
		const char *load = widen ? half_fn(xs[j].dtype, false) : NULL;
		emitf(E, "%s%s x%d = %s%sX%d[0", indent, load ? "float" : ctype(xs[j].dtype), j,
		    load ? load : "", load ? "(" : "", j);
		for (int k = 0; k < r; k++)
			if (ms[j + 1][k])
				emitf(E, " + i%d * %" PRId64, k, ms[j + 1][k]);
		emitf(E, "]%s;\n", load ? ")" : "");
	}
	const char *store = widen ? half_fn(y->dtype, true) : NULL;
	if (stmts)
		emitf(E, "%s%s r;\n%s%s\n", indent, store ? "float" : ctype(y->dtype), indent, stmts);
	emitf(E, "%sY[0", indent);
	for (int k = 0; k < r; k++)
		emitf(E, " + i%d * %" PRId64, k, ms[0][k]);
	emitf(E, "] = %s%s%s%s;\n", store ? store : "", store ? "(" : "", stmts ? "r" : expr,
	    store ? ")" : "");
	for (int k = (r ? r : 1) - 1; k >= 0; k--)
		emitf(E, "%.*s}\n", k + 1, "\t\t\t\t\t\t\t\t\t");
}

void emit_map(Emit *E, const Operand *y, const Operand *xs, int nx, const char *expr)
{
	emit_map_body(E, y, xs, nx, expr, NULL);
}

bool is_float(int dt)
{
	return dt == DT_FLOAT || dt == DT_DOUBLE;
}

bool is_unsigned(int dt)
{
	return dt == DT_UINT8 || dt == DT_UINT16 || dt == DT_UINT32 || dt == DT_UINT64 || dt == DT_BOOL;
}

/* libm name for a float function in the operand's precision. */
const char *mathfn(Emit *E, const char *name, int dt)
{
	return arena_printf(E->a, "%s%s", name, dt == DT_FLOAT ? "f" : "");
}

/* ---- linear algebra --------------------------------------------------- */

Infer emit_infer(Emit *E)
{
	return (Infer){.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
}

void require_f32(Emit *E, const Operand *x)
{
	if (x->dtype != DT_FLOAT)
		emit_fail(E, "%s on %s is not supported by the code generator yet (float32 only)",
		          E->n->op_type, dtype_name(x->dtype));
}

/* For emitters that compute on elements but not yet on 16-bit floats, which
 * travel as uint16_t and would silently be treated as integers. */
void require_not_half(Emit *E, const Operand *x)
{
	if (x->dtype == DT_FLOAT16 || x->dtype == DT_BFLOAT16)
		emit_fail(E, "%s not supported by %s yet", dtype_name(x->dtype), E->n->op_type);
}

int norm_axis(int64_t axis, int rank)
{
	return (int)(axis < 0 ? axis + rank : axis);
}

/* outer = product of the dims before axis, inner = product after it. */
void around_axis(const Shape *s, int axis, int64_t *outer, int64_t *inner)
{
	*outer = *inner = 1;
	for (int k = 0; k < s->rank; k++) {
		if (k < axis)
			*outer *= s->dims[k].size;
		else if (k > axis)
			*inner *= s->dims[k].size;
	}
}

/* Open one loop per axis of s (index variables o0, o1, ...); returns the
 * indent for the body. close_loops ends them. */
const char *open_loops(Emit *E, const Shape *s)
{
	char *ind = arena_alloc(E->a, KILN_MAX_RANK + 3);
	ind[0] = '\t';
	for (int k = 0; k < s->rank; k++) {
		emitf(E, "%sfor (int64_t o%d = 0; o%d < %" PRId64 "; o%d++) {\n", ind, k, k,
		    s->dims[k].size, k);
		ind[k + 1] = '\t';
	}
	if (s->rank == 0) {
		emitf(E, "\t{\n");
		ind[1] = '\t';
	}
	return ind;
}

void close_loops(Emit *E, const Shape *s)
{
	for (int k = (s->rank ? s->rank : 1) - 1; k >= 0; k--)
		emitf(E, "%.*s}\n", k + 1, "\t\t\t\t\t\t\t\t\t");
}

/* "o0 * s0 + o1 * s1 + ..." over the axes of s (row-major strides), with
 * axis `swap` replaced by the expression `with` (or nothing, if NULL). */
const char *linear_index(Emit *E, const Shape *s, int swap, const char *with)
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

/* ---- nodes ------------------------------------------------------------ */

static void emit_body(Emit *E)
{
	if (emit_ewchain(E)) {
		emitf(E, "\treturn 0;\n");
		return;
	}
	/* Every op with a record has an emitter (tests/unit/test_opdef.c). */
	const OpDef *d = op_def(E->n->op);
	KILN_ASSERT(d && d->emit);
	d->emit(E);
	if (d->emit_returns)
		return;
	emitf(E, "\treturn 0;\n");
}

static void describe(Emit *E, const char *role, int id)
{
	const Value *v = &E->g->values[id];
	emitf(E, " *   %s \"", role);
	comment_text(E, v->name);
	emitf(E, "\" %s ", dtype_name(E->sig->dtypes[id]));
	shape_text(E, &E->sig->shapes[id]);
	if (E->in_index[id] != NONE)
		emitf(E, " input %d", E->in_index[id]);
	else if (E->out_index[id] != NONE)
		emitf(E, " output %d", E->out_index[id]);
	else if (E->sig->folded[id] || v->kind == VAL_WEIGHT)
		emitf(E, " constant");
	else if (v->kind == VAL_OUTER)
		emitf(E, " from the enclosing graph");
	else if (E->plan->buf_of[id] != NONE)
		emitf(E, " arena @%" PRId64, E->plan->bufs[E->plan->buf_of[id]].off);
	else if (E->plan->root[id] != id)
		emitf(E, " view of \"%s\"", c_comment_escape(E->a, E->g->values[E->plan->root[id]].name));
	emitf(E, "\n");
}

/* Does the node produce anything at run time? Folded outputs are constants
 * and views need no code, unless the caller's output buffer must be filled;
 * dead nodes (sigdce.c) none at all.
 * (An in-place output shares its input's buffer but is still computed.) */
static bool node_has_code(Emit *E, const Node *n)
{
	if (sig_node_dead(E->sig, n))
		return false;
	if (n->nout >= 1 && n->out[0] != NONE && sig_inline(E->sig, n->out[0]))
		return false;  /* the last node of its elementwise chain computes it */
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
	/* Subgraph functions carry their node path: b1_n004_body_n002_add. */
	const char *prefix = E->fn_prefix ? E->fn_prefix
	                                  : arena_printf(E->a, "b%" PRId64, E->sig->batch);
	return arena_printf(E->a, "%s_n%03d_%s", prefix, n->id,
	                    sanitize(E->a, n->name[0] ? n->name : n->op_type));
}

/* The statements of node n's function, ending with its return. */
static void node_code(Emit *E, Node *n)
{
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
			int s = symbol_for(E, f->dtype, f->data, dtype_bytes(f->dtype, f->nelem),
			                   E->g->values[id].name);
			emitf(E, "\tmemcpy(out[%d], %s, %" PRIu64 ");\n", E->out_index[id], E->syms[s].name,
			    E->syms[s].nbytes);
		}
		emitf(E, "\treturn 0;\n");
		return;
	}
	bool empty = true;
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] != NONE && shape_nelem(&E->sig->shapes[n->out[k]]) != 0)
			empty = false;
	if (empty) {
		emitf(E, "\treturn 0; /* every output is empty: nothing to compute */\n");
		return;
	}
	emit_body(E);
}

/* Limits.max_c_bytes, checked after each node's code (docs/limits.md). */
static void check_c_size(Emit *E, const Node *n)
{
	long at = ftell(E->c);
	if (at > E->m->limits.max_c_bytes)
		diag_fail_node(E->d, E->g, n, KILN_LIMIT, "the generated C passes %lld MiB here (raise the "
		               "limit with --max-c-size)", (long long)(E->m->limits.max_c_bytes >> 20));
}

static void emit_node(Emit *E, Node *n)
{
	E->n = n;
	/* C has no nested functions: a subgraph's node functions come first. */
	emit_control_functions(E, n);
	emitf(E, "/* node %d \"", n->id);
	comment_text(E, n->name);
	emitf(E, "\" (%s)\n", c_comment_escape(E->a, n->op_type));
	EwChain ch;
	if (ewchain_collect(E, n, &ch) > 1) {
		/* One loop computes the chain; its inner values are never stored. */
		emitf(E, " * elementwise chain, computed in one loop with ");
		ewchain_names(E, &ch, "");
		emitf(E, "\n");
		for (int e = 0; e < ch.next; e++)
			describe(E, "in ", ch.ext[e]);
	} else {
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] != NONE)
				describe(E, "in ", n->in[k]);
	}
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] != NONE)
			describe(E, "out", n->out[k]);
	emitf(E, " */\n");
	emitf(E, "static int %s(unsigned char *a, const void *const *in, void *const *out)\n{\n",
	    fn_name(E, n));
	emitf(E, "\t(void)a, (void)in, (void)out;\n");
	node_code(E, n);
	emitf(E, "}\n\n");
	check_c_size(E, n);
}

/* ---- shared node functions -------------------------------------------- */

/*
 * In a large graph, most nodes repeat a few bodies: the same op on the same
 * shapes, differing only in where their operands live. There, each node's
 * body is written once more in template mode, with its operands as
 * slot[k] (the arena offset, input, output or weights symbol recorded
 * aside); nodes whose bodies are then the same text share one function
 * (sNNN_op), and a table of steps per batch size gives, in schedule order,
 * each node's function and slots. The C compiler then sees a few functions
 * and some tables instead of one function per node and signature, so its
 * time grows with the number of distinct bodies, not of nodes. Anything a
 * body says about one node alone (a constant's name, a fused node's name)
 * keeps its text unique, so sharing is never wrong, only less frequent.
 * Control flow and nodes with more than SHARE_MAX_SLOTS operands keep
 * their own functions; small graphs keep one function per node.
 */
enum { SHARE_MIN_NODES = 64, SHARE_MAX_SLOTS = 32 };

static void emit_frozen_guards(Emit *E);

typedef struct EmitTemplate {
	uint64_t hash;
	const char *code;
	const char *name;
} EmitTemplate;

static uint64_t text_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211u;
	return h;
}

static bool share_signature(Emit *E)
{
	int n = 0;
	for (int k = 0; k < E->g->nnodes; k++)
		n += node_has_code(E, &E->g->nodes[k]);
	return n >= SHARE_MIN_NODES;
}

/* Node n's body in template mode: its shared function (written out when it
 * is new), with its slots in E->slots; NULL if n keeps its own function. */
static const char *shared_function(Emit *E, Node *n)
{
	if (n->op == OP_If || n->op == OP_Loop || n->op == OP_Scan)
		return NULL;
	/* The body goes to a temporary file the model tracks (closed on any
	 * error), then back into the arena to be compared. */
	if (!E->tfile) {
		E->tfile = tmpfile();
		if (!E->tfile)
			diag_fail(E->d, KILN_IO, "cannot open a temporary file");
		model_track_file(E->m, E->tfile);
	}
	rewind(E->tfile);
	FILE *saved = E->c;
	E->n = n;
	E->c = E->tfile;
	E->nslots = 0;
	E->templating = true;
	node_code(E, n);
	E->templating = false;
	E->c = saved;
	long len = ftell(E->tfile);
	if (len < 0 || E->nslots > SHARE_MAX_SLOTS)
		return NULL;
	char *buf = arena_alloc(E->a, (size_t)len + 1);
	rewind(E->tfile);
	if (fread(buf, 1, (size_t)len, E->tfile) != (size_t)len)
		diag_fail(E->d, KILN_IO, "reading back a temporary file");
	buf[len] = 0;
	uint64_t h = text_hash(buf, (size_t)len);
	for (int i = 0; i < E->ntmpls; i++)
		if (E->tmpls[i].hash == h && strcmp(E->tmpls[i].code, buf) == 0)
			return E->tmpls[i].name;
	E->tmpls = arena_grow(E->a, E->tmpls, E->ntmpls, &E->captmpls, sizeof *E->tmpls);
	EmitTemplate *t = &E->tmpls[E->ntmpls];
	t->hash = h;
	t->code = buf;
	t->name = arena_printf(E->a, "s%03d_%s", E->ntmpls++, sanitize(E->a, n->op_type));
	emitf(E, "/* shared: %s at batch %" PRId64 ", first for node %d \"",
	      c_comment_escape(E->a, n->op_type), E->sig->batch, n->id);
	comment_text(E, n->name);
	emitf(E, "\"; the steps tables list its nodes */\n");
	emitf(E, "static int %s(unsigned char *a, const void *const *in, void *const *out, "
	         "void *const *slot)\n{\n\t(void)a, (void)in, (void)out, (void)slot;\n%s}\n\n",
	      t->name, t->code);
	return t->name;
}

/* The types and the loop that run a table of steps (once per file). */
static void emit_step_runner(Emit *E)
{
	const char *N = E->o->name;
	emitf(E, "/* Shared node functions: a step is a function and where its operands live\n"
	         " * (slots: 0 arena offset, 1 input, 2 output, 3 constant). */\n");
	emitf(E, "typedef struct %s_slot {\n\tint kind;\n\tint64_t off;\n\tconst void *ptr;\n} "
	         "%s_slot;\n", N, N);
	emitf(E, "typedef struct %s_step {\n\tint (*fn)(unsigned char *, const void *const *, "
	         "void *const *, void *const *);\n\tint first, nslots;\n} %s_step;\n\n", N, N);
	emitf(E, "static int %s_steps(unsigned char *a, const void *const *in, void *const *out,\n"
	         "\tconst %s_step *step, int n, const %s_slot *slots)\n{\n", N, N, N);
	emitf(E, "\tfor (int i = 0; i < n; i++) {\n\t\tvoid *slot[%d];\n", SHARE_MAX_SLOTS);
	emitf(E, "\t\tconst %s_slot *s = slots + step[i].first;\n", N);
	emitf(E, "\t\tfor (int k = 0; k < step[i].nslots; k++)\n"
	         "\t\t\tslot[k] = s[k].kind == 0 ? (void *)(a + s[k].off)\n"
	         "\t\t\t        : s[k].kind == 1 ? (void *)in[s[k].off]\n"
	         "\t\t\t        : s[k].kind == 2 ? out[s[k].off] : (void *)s[k].ptr;\n");
	emitf(E, "\t\tint st = step[i].fn(a, in, out, slot);\n\t\tif (st != 0)\n\t\t\treturn st;\n"
	         "\t}\n\treturn 0;\n}\n\n");
}

/* One signature's node functions, steps tables and run function, sharing
 * functions between nodes. */
static void emit_shared_signature(Emit *E)
{
	const char *N = E->o->name;
	Graph *g = E->g;
	const char **fn = arena_array(E->a, (size_t)g->nnodes, sizeof *fn);
	int *first = arena_array(E->a, (size_t)g->nnodes, sizeof *first);
	int *count = arena_array(E->a, (size_t)g->nnodes, sizeof *count);
	EmitSlot *slots = NULL;
	int nslots = 0, capslots = 0;
	for (int k = 0; k < g->nnodes; k++) {
		Node *n = &g->nodes[k];
		if (!node_has_code(E, n))
			continue;
		fn[k] = shared_function(E, n);
		if (!fn[k]) {
			emit_node(E, n);
			continue;
		}
		first[k] = nslots;
		count[k] = E->nslots;
		for (int i = 0; i < E->nslots; i++) {
			slots = arena_grow(E->a, slots, nslots, &capslots, sizeof *slots);
			slots[nslots++] = E->slots[i];
		}
		check_c_size(E, n);
	}
	int64_t b = E->sig->batch;
	emitf(E, "static const %s_slot b%" PRId64 "_slots[] = {\n", N, b);
	for (int i = 0; i < nslots; i++)
		emitf(E, "\t{%d, %" PRId64 ", %s},\n", slots[i].kind, slots[i].off,
		      slots[i].sym ? slots[i].sym : "NULL");
	emitf(E, "%s};\n", nslots ? "" : "\t{0, 0, NULL},\n");
	emitf(E, "static const %s_step b%" PRId64 "_steps[] = {\n", N, b);
	int nsteps = 0;
	int *step_of = arena_array(E->a, (size_t)g->nnodes, sizeof *step_of);
	for (int k = 0; k < g->nnodes; k++) {
		Node *n = &g->nodes[k];
		if (!node_has_code(E, n) || !fn[k])
			continue;
		step_of[k] = nsteps++;
		emitf(E, "\t{%s, %d, %d}, /* node %d \"", fn[k], first[k], count[k], n->id);
		comment_text(E, n->name);
		emitf(E, "\" (%s)", c_comment_escape(E->a, n->op_type));
		EwChain ch;
		if (ewchain_collect(E, n, &ch) > 1)
			ewchain_names(E, &ch, " with ");
		emitf(E, " */\n");
		check_c_size(E, n);
	}
	emitf(E, "%s};\n\n", nsteps ? "" : "\t{NULL, 0, 0},\n");
	emitf(E, "static int %s_run_generic_b%" PRId64 "(void *arena, const void *const *in, "
	         "void *const *out)\n{\n\tunsigned char *a = arena;\n\tint st;\n", N, b);
	emit_frozen_guards(E);
	for (int k = 0; k < g->nnodes;) {
		Node *n = &g->nodes[k];
		if (!node_has_code(E, n)) {
			k++;
			continue;
		}
		if (!fn[k]) {
			emitf(E, "\tif ((st = %s(a, in, out)) != 0) /* %s */\n\t\treturn st;\n",
			      fn_name(E, n), c_comment_escape(E->a, n->op_type));
			k++;
			continue;
		}
		int from = step_of[k], upto = k;
		while (upto < g->nnodes && (!node_has_code(E, &g->nodes[upto]) || fn[upto]))
			upto++;
		int to = from;
		for (int j = k; j < upto; j++)
			if (node_has_code(E, &g->nodes[j]))
				to = step_of[j] + 1;
		emitf(E, "\tif ((st = %s_steps(a, in, out, b%" PRId64 "_steps + %d, %d, b%" PRId64
		         "_slots)) != 0)\n\t\treturn st;\n", N, b, from, to - from, b);
		k = upto;
	}
	emitf(E, "\treturn 0;\n}\n\n");
}

/* E->sig's node functions and its run function. */
static void emit_signature(Emit *E)
{
	Graph *g = E->g;
	if (share_signature(E)) {
		emit_shared_signature(E);
		return;
	}
	for (int k = 0; k < g->nnodes; k++)
		if (node_has_code(E, &g->nodes[k]))
			emit_node(E, &g->nodes[k]);
	emitf(E, "static int %s_run_generic_b%" PRId64 "(void *arena, const void *const *in, "
	      "void *const *out)\n{\n\tunsigned char *a = arena;\n\tint st;\n", E->o->name,
	      E->sig->batch);
	emit_frozen_guards(E);
	for (int k = 0; k < g->nnodes; k++) {
		Node *n = &g->nodes[k];
		if (!node_has_code(E, n))
			continue;
		emitf(E, "\tif ((st = %s(a, in, out)) != 0) /* %s */\n\t\treturn st;\n",
		      fn_name(E, n), c_comment_escape(E->a, n->op_type));
	}
	emitf(E, "\treturn 0;\n}\n\n");
}

/* E->sig's run function as tiles of t's samples (batchtile.c): every batched
 * input and output has its batch on axis 0, so a tile is a block of rows at
 * its offset in the caller's buffers; the others are passed whole. */
static void emit_tiled_run(Emit *E, const Sig *t)
{
	Graph *g = E->g;
	const Stitch *st = E->o->stitch;
	int64_t B = E->sig->batch;
	emitf(E, "/* Batch %" PRId64 " as %" PRId64 " tiles of %" PRId64 " samples, one after the "
	      "other through\n * every node, so that a tile's activations stay in cache. */\n",
	      B, B / t->batch, t->batch);
	emitf(E, "static int %s_run_generic_b%" PRId64 "(void *arena, const void *const *in, "
	      "void *const *out)\n{\n", E->o->name, B);
	int nin = 0, nout = g->noutputs;
	for (int k = 0; k < g->ninputs; k++)
		nin += g->values[g->inputs[k]].kind == VAL_INPUT;
	emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++) {\n", B / t->batch);
	emitf(E, "\t\tconst void *tin[%d] = {", nin ? nin : 1);
	for (int k = 0, j = 0; k < g->ninputs; k++) {
		int id = g->inputs[k];
		if (g->values[id].kind != VAL_INPUT)
			continue;
		uint64_t tb = (uint64_t)shape_nelem(&t->shapes[id]) * dtype_size(t->dtypes[id]);
		if (st->axis[id] == 0)
			emitf(E, "%s(const unsigned char *)in[%d] + i * %" PRIu64, j ? ", " : "", j, tb);
		else
			emitf(E, "%sin[%d]", j ? ", " : "", j);
		j++;
	}
	emitf(E, "%s};\n\t\tvoid *tout[%d] = {", nin ? "" : "0", nout ? nout : 1);
	for (int k = 0; k < nout; k++) {
		int id = g->outputs[k];
		uint64_t tb = (uint64_t)shape_nelem(&t->shapes[id]) * dtype_size(t->dtypes[id]);
		emitf(E, "%s(unsigned char *)out[%d] + i * %" PRIu64, k ? ", " : "", k, tb);
	}
	emitf(E, "%s};\n\t\tint st = %s_run_generic_b%" PRId64 "(arena, tin, tout);\n"
	      "\t\tif (st != 0)\n\t\t\treturn st;\n\t}\n\treturn 0;\n}\n\n",
	      nout ? "" : "0", E->o->name, t->batch);
}

/* The node functions of a subgraph (emit/control.c sets up E). */
void emit_graph_functions(Emit *E)
{
	for (int k = 0; k < E->g->nnodes; k++)
		if (node_has_code(E, &E->g->nodes[k]))
			emit_node(E, &E->g->nodes[k]);
}

void emit_graph_calls(Emit *E, const char *indent)
{
	for (int k = 0; k < E->g->nnodes; k++) {
		Node *n = &E->g->nodes[k];
		if (node_has_code(E, n))
			emitf(E, "%sif ((st = %s(a, in, out)) != 0) /* %s */\n%s\treturn st;\n", indent,
			    fn_name(E, n), c_comment_escape(E->a, n->op_type), indent);
	}
}

/* ---- files ------------------------------------------------------------ */

/* An input frozen at compile time (--freeze, or by kiln verify) decided
 * shapes or folded values: the code is only right for exactly those values,
 * so the run refuses any other instead of computing something wrong. */
static void emit_frozen_guards(Emit *E)
{
	const Graph *g = E->g;
	for (int k = 0; k < g->ninputs; k++) {
		int id = g->inputs[k];
		const Folded *f = E->sig->folded[id];
		if (g->values[id].kind != VAL_INPUT || !f || E->in_index[id] == NONE)
			continue;
		uint64_t nbytes = dtype_bytes(f->dtype, f->nelem);
		int s = symbol_for(E, f->dtype, f->data, nbytes, g->values[id].name);
		emitf(E, "	if (memcmp(in[%d], %s, %" PRIu64 ") != 0) /* \"", E->in_index[id],
		      E->syms[s].name, nbytes);
		comment_text(E, g->values[id].name);
		emitf(E, "\" was frozen at compile time */\n\t\treturn KILN_FROZEN_INPUT;\n");
	}
}

/* The parameter names of the graph's inputs and outputs: in_/out_ and the
 * sanitized name, made unique in interface order by a suffix _2, _3, ...
 * ("a-b" and "a.b", or two names alike in their first 40 characters, would
 * otherwise be one C identifier). */
static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

static void name_interface(Emit *E)
{
	Graph *g = E->g;
	E->iface = arena_array(E->a, (size_t)g->nvalues, sizeof *E->iface);
	/* An open-addressing set of the names taken: a model may have many. */
	size_t cap = 16;
	while (cap < 2 * ((size_t)g->ninputs + (size_t)g->noutputs))
		cap *= 2;
	const char **used = arena_array(E->a, cap, sizeof *used);
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			const char *base = arena_printf(E->a, "%s_%s", pass ? "out" : "in",
			                                sanitize(E->a, g->values[id].name));
			const char *name = base;
			for (int suffix = 2;; suffix++) {
				size_t i = str_hash(name) & (cap - 1);
				while (used[i] && strcmp(used[i], name) != 0)
					i = (i + 1) & (cap - 1);
				if (!used[i]) {
					used[i] = name;
					break;
				}
				name = arena_printf(E->a, "%s_%d", base, suffix);
			}
			E->iface[id] = name;
		}
	}
}

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
	name_interface(E);
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
	fprintf(f, "/*\n * Generated by kiln %s from %s", KILN_VERSION_STRING,
	        c_comment_escape(E->a, base));
	for (int i = 0; i < E->m->nopsets; i++)
		fprintf(f, "%s%s opset %" PRId64, i ? ", " : " (",
		        c_comment_escape(E->a, E->m->opsets[i].domain[0] ? E->m->opsets[i].domain
		                                                          : "ai.onnx"),
		        E->m->opsets[i].version);
	fprintf(f, "%s.\n * Batch sizes:", E->m->nopsets ? ")" : "");
	for (int i = 0; i < nsigs; i++)
		fprintf(f, " %" PRId64, sigs[i].batch);
	fprintf(f, ". Do not edit: regenerate with kiln compile.\n */\n");
}

/* NAME in capitals: the prefix of the generated macros. */
static const char *upper(Emit *E, const char *name)
{
	char *s = arena_strdup(E->a, name);
	for (char *p = s; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	return s;
}

/* Dim d of value id for one sample: the batch axis at 1 sample's extent. */
static int64_t sample_dim(const Emit *E, const Sig *s0, int id, int d)
{
	const Dim *dim = &s0->shapes[id].dims[d];
	return d == E->o->stitch->axis[id] ? dim->size / s0->batch : dim->size;
}

/* Per input and output, its per-sample element count and shape as
 * constants, so user code can check its arrays at compile time
 * (static_assert(sizeof feats / sizeof feats[0] == NAME_IN0_ELEMS, ...)). */
static void emit_io_constants(Emit *E, FILE *h, const char *guard, const Sig *sigs)
{
	Graph *g = E->g;
	const Sig *s0 = &sigs[0];
	FILE *saved = E->c;
	E->c = h;   /* for comment_text */
	int nin = 0;
	for (int k = 0; k < g->ninputs; k++)
		nin += g->values[g->inputs[k]].kind == VAL_INPUT;
	fprintf(h, "/* Inputs and outputs in the descriptor's order. Per sample (one row\n"
	           " * of the batch): element count, rank, batch axis (-1: none) and dims\n"
	           " * (the batch axis at 1). A buffer of n rows holds n * ELEMS elements. */\n");
	fprintf(h, "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n", guard, nin, guard,
	        g->noutputs);
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0, j = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			const char *io = arena_printf(E->a, "%s_%s%d", guard, pass ? "OUT" : "IN", j++);
			const Shape *sh = &s0->shapes[id];
			int64_t elems = 1;
			for (int d = 0; d < sh->rank; d++)
				elems *= sample_dim(E, s0, id, d);
			fprintf(h, "/* %s %d \"", pass ? "output" : "input", j - 1);
			comment_text(E, g->values[id].name);
			int dt = s0->dtypes[id];
			fprintf(h, "\": %s%s */\n", dtype_name(dt),
			        DT_IS_4BIT(dt) ? ", packed two a byte, the first in the low\n * nibble: "
			                         "n * ELEMS elements take (n * ELEMS + 1) / 2 bytes (kiln/int4.h)"
			        : DT_IS_FLOAT8(dt) ? ", one uint8_t bit pattern each (kiln/float8.h)" : "");
			fprintf(h, "#define %s_ELEMS %" PRId64 "\n#define %s_RANK %d\n#define %s_BATCH_AXIS %d\n",
			        io, elems, io, sh->rank, io, E->o->stitch->axis[id]);
			fprintf(h, "#define %s_SHAPE {", io);
			for (int d = 0; d < sh->rank; d++)
				fprintf(h, "%s%" PRId64, d ? ", " : "", sample_dim(E, s0, id, d));
			fprintf(h, "}\n");
			for (int d = 0; d < sh->rank; d++)
				fprintf(h, "#define %s_DIM%d %" PRId64 "\n", io, d, sample_dim(E, s0, id, d));
			if (pass)
				emit_zipmap_keys(E, h, io, id);
		}
	}
	fputc('\n', h);
	E->c = saved;
}

static void emit_header(Emit *E, FILE *h, const Sig *sigs, const Plan *plans, int nsigs)
{
	Graph *g = E->g;
	const char *N = E->o->name;
	const Stitch *st = E->o->stitch;
	banner(h, E, sigs, nsigs);
	const char *guard = upper(E, N);
	/* Not NAME_H: --name KILN_MODEL would be kiln/model.h's guard, and a
	 * user's net.h may use NET_H (compile.c is_reserved). */
	const char *once = arena_printf(E->a, "%s_KILN_H_%08" PRIx32, guard, (uint32_t)name_hash(N));
	fprintf(h, "#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n#include <kiln/model.h>\n"
	           "#include <kiln/run.h>\n\n", once, once);
	fprintf(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	if (E->o->export_api)
		fprintf(h, "/* The descriptor and entry points below are exported (kiln compile\n"
		           " * --export): a shared library linking this model exports them. */\n");
	else
		fprintf(h, "/* The descriptor and entry points below are hidden: a shared library\n"
		           " * linking this model exports none of kiln's symbols, so two libraries\n"
		           " * with models of the same name never take each other's. Export them\n"
		           " * with kiln compile --export (docs/integration.md). */\n");
	fprintf(h, "#ifndef %s_MODEL_API\n#if defined(__GNUC__) && !defined(_WIN32)\n"
	           "#define %s_MODEL_API __attribute__((visibility(\"%s\")))\n#else\n"
	           "#define %s_MODEL_API\n#endif\n#endif\n\n",
	        guard, guard, E->o->export_api ? "default" : "hidden", guard);
	emit_io_constants(E, h, guard, sigs);
	fprintf(h, "/* Bytes of arena one call needs at the largest compiled batch size;\n"
	           " * align it to 64 bytes. Each thread needs its own. */\n");
	fprintf(h, "#define %s_ARENA_BYTES %" PRId64 "\n", guard, st->max_arena_bytes);
	fprintf(h, "/* Bytes of one kiln_run context (any alignment): the arena above, a\n"
	           " * staging area of %" PRIu64 " bytes for the padded chunk, and the plans of\n"
	           " * every batch up to %" PRId64 ". Each thread needs its own. */\n",
	        st->staging_bytes, st->plan_bound);
	fprintf(h, "#define %s_CONTEXT_BYTES %" PRIu64 "\n\n", guard, st->context_bytes);
	fprintf(h, "/* The model: interface, batch sizes, arena sizes and entry points. */\n");
	fprintf(h, "extern %s_MODEL_API const kiln_model %s_model;\n\n", guard, N);
	if (st->dep.independent)
		fprintf(h, "/* Any batch n >= 0 through a context (kiln/run.h): compiled sizes run\n"
		           " * in place, others are stitched from them. Buffers hold n rows. */\n");
	else
		fprintf(h, "/* Through a context (kiln/run.h), at the compiled batch sizes only:\n"
		           " * the model is not batch independent (see %s_model.batch_mixing). */\n", N);
	fprintf(h, "%s_MODEL_API int %s_run(kiln_context *ctx, int64_t n", guard, N);
	for (int k = 0; k < g->ninputs; k++) {
		int id = g->inputs[k];
		if (g->values[id].kind == VAL_INPUT)
			fprintf(h, ", const %s *%s", ctype(sigs[0].dtypes[id]), E->iface[id]);
	}
	for (int k = 0; k < g->noutputs; k++)
		fprintf(h, ", %s *%s", ctype(sigs[0].dtypes[g->outputs[k]]),
		        E->iface[g->outputs[k]]);
	fprintf(h, ");\n\n");
	for (int i = 0; i < nsigs; i++) {
		fprintf(h, "/* Batch %" PRId64 ": arena %" PRId64 " bytes. Returns 0 or a kiln_status. */\n",
		        sigs[i].batch, plans[i].arena_bytes);
		fprintf(h, "%s_MODEL_API int %s_run_b%" PRId64 "(void *arena", guard, N, sigs[i].batch);
		for (int k = 0; k < g->ninputs; k++) {
			int id = g->inputs[k];
			if (g->values[id].kind == VAL_INPUT)
				fprintf(h, ", const %s *%s", ctype(sigs[i].dtypes[id]), E->iface[id]);
		}
		for (int k = 0; k < g->noutputs; k++) {
			int id = g->outputs[k];
			fprintf(h, ", %s *%s", ctype(sigs[i].dtypes[id]), E->iface[id]);
		}
		fprintf(h, ");\n");
	}
	fprintf(h, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
}

static void emit_cstring(Emit *E, const char *s)
{
	fputs(c_string_escape(E->a, s), E->c);
}

static void emit_descriptor(Emit *E, const Sig *sigs, const Plan *plans, int nsigs)
{
	Graph *g = E->g;
	const char *N = E->o->name;
	const Sig *s0 = &sigs[0];
	const Stitch *st = E->o->stitch;
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0, j = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			/* Per-sample shape: the batch axis at 1 sample's extent. */
			emitf(E, "static const int64_t %s_dims_%s%d[] = {", N, pass ? "out" : "in", j++);
			const Shape *sh = &s0->shapes[id];
			for (int d = 0; d < sh->rank; d++)
				emitf(E, "%s%" PRId64, d ? ", " : "", sample_dim(E, s0, id, d));
			emitf(E, "%s};\n", sh->rank ? "" : "0");
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		emitf(E, "static const kiln_tensor_desc %s_%s[] = {\n", N, pass ? "outputs" : "inputs");
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0, j = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			emitf(E, "\t{\"");
			emit_cstring(E, g->values[id].name);
			emitf(E, "\", %d, %d, %s_dims_%s%d, %d},\n", s0->dtypes[id], s0->shapes[id].rank, N,
			    pass ? "out" : "in", j, st->axis[id]);
			j++;
		}
		emitf(E, "%s};\n", count ? "" : "\t{0}\n");
	}
	emitf(E, "static const int64_t %s_batches[] = {", N);
	for (int i = 0; i < nsigs; i++)
		emitf(E, "%s%" PRId64, i ? ", " : "", sigs[i].batch);
	emitf(E, "};\nstatic const uint64_t %s_arena_bytes[] = {", N);
	for (int i = 0; i < nsigs; i++)
		emitf(E, "%s%" PRId64, i ? ", " : "", plans[i].arena_bytes);
	emitf(E, "};\nstatic const kiln_run_fn %s_run_fns[] = {", N);
	for (int i = 0; i < nsigs; i++)
		emitf(E, "%s%s_run_generic_b%" PRId64, i ? ", " : "", N, sigs[i].batch);
	/* The cost model's estimate per size (stitch.c); %a keeps it exact. */
	emitf(E, "};\nstatic const double %s_cost[] = {", N);
	for (int i = 0; i < nsigs; i++)
		emitf(E, "%s%a", i ? ", " : "", st->cost[i].ns);
	emitf(E, "};\nstatic const uint64_t %s_flops[] = {", N);
	for (int i = 0; i < nsigs; i++)
		emitf(E, "%s%" PRIu64, i ? ", " : "", st->cost[i].flops);
	emitf(E, "};\nstatic const uint64_t %s_traffic_bytes[] = {", N);
	for (int i = 0; i < nsigs; i++)
		emitf(E, "%s%" PRIu64, i ? ", " : "", st->cost[i].bytes);
	emitf(E, "};\n");
	if (E->o->nrules) {
		emitf(E, "static const char *const %s_rules[] = {", N);
		for (int i = 0; i < E->o->nrules; i++) {
			emitf(E, "%s\"", i ? ", " : "");
			emit_cstring(E, E->o->rules[i]);
			emitf(E, "\"");
		}
		emitf(E, "};\n");
	}
	emitf(E, "\n%s_MODEL_API const kiln_model %s_model = {\n", upper(E, N), N);
	emitf(E, "\t.struct_bytes = sizeof(kiln_model),\n\t.kiln_version = %d,\n\t.name = \"%s\",\n",
	    KILN_VERSION_NUM, N);
	emitf(E, "\t.ninputs = %d, .noutputs = %d,\n", ninputs(g), g->noutputs);
	emitf(E, "\t.inputs = %s_inputs, .outputs = %s_outputs,\n", N, N);
	emitf(E, "\t.nbatches = %d, .batches = %s_batches, .arena_bytes = %s_arena_bytes, "
	       ".run = %s_run_fns,\n", nsigs, N, N, N);
	emitf(E, "\t.max_arena_bytes = %" PRId64 ",\n", st->max_arena_bytes);
	emitf(E, "\t.cost = %s_cost, .flops = %s_flops, .traffic_bytes = %s_traffic_bytes,\n", N, N, N);
	emitf(E, "\t.batch_independent = %d,\n", st->dep.independent ? 1 : 0);
	if (!st->dep.independent) {
		emitf(E, "\t.batch_mixing = \"");
		emit_cstring(E, st->dep.why ? st->dep.why : "not analysed");
		emitf(E, "\",\n");
	}
	if (E->o->nrules)
		emitf(E, "\t.nrules = %d, .rules = %s_rules,\n", E->o->nrules, N);
	emitf(E, "\t.plan_bound = %" PRId64 ", .staging_bytes = %" PRIu64 ", .context_bytes = %" PRIu64
	       ",\n};\n\n", st->plan_bound, st->staging_bytes, st->context_bytes);
	/* The typed entry for any n: views over the caller's buffers, through
	 * a context made for this very descriptor. */
	emitf(E, "%s_MODEL_API int %s_run(kiln_context *ctx, int64_t n", upper(E, N), N);
	for (int k = 0; k < g->ninputs; k++) {
		int id = g->inputs[k];
		if (g->values[id].kind == VAL_INPUT)
			emitf(E, ", const %s *%s", ctype(s0->dtypes[id]), E->iface[id]);
	}
	for (int k = 0; k < g->noutputs; k++)
		emitf(E, ", %s *%s", ctype(s0->dtypes[g->outputs[k]]),
		    E->iface[g->outputs[k]]);
	emitf(E, ")\n{\n\tif (n < 0 || !ctx)\n\t\treturn KILN_USAGE;\n");
	emitf(E, "\tif (kiln_context_model(ctx) != &%s_model)\n\t\treturn KILN_WRONG_MODEL;\n", N);
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? g->noutputs : g->ninputs, j = 0;
		emitf(E, "\tconst kiln_%s %s[%d] = {\n", pass ? "output" : "input", pass ? "out" : "in",
		    count ? count : 1);
		for (int k = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			const Shape *sh = &s0->shapes[id];
			int64_t per = 1;
			for (int d = 0; d < sh->rank; d++)
				per *= d == st->axis[id] ? sh->dims[d].size / s0->batch : sh->dims[d].size;
			if (DT_IS_4BIT(s0->dtypes[id]))   /* packed: (elements + 1) / 2 bytes */
				emitf(E, "\t\t{%s, %d, ((uint64_t)%" PRId64 "%s + 1) / 2},\n", E->iface[id],
				    s0->dtypes[id], per, st->axis[id] >= 0 ? " * (uint64_t)n" : "");
			else
				emitf(E, "\t\t{%s, %d, (uint64_t)%" PRId64 " * sizeof(%s)%s},\n",
				    E->iface[id], s0->dtypes[id], per, ctype(s0->dtypes[id]),
				    st->axis[id] >= 0 ? " * (uint64_t)n" : "");
			j++;
		}
		if (!j)
			emitf(E, "\t\t{0},\n");
		emitf(E, "\t};\n");
	}
	emitf(E, "\treturn kiln_run(ctx, n, in, out);\n}\n\n");
	if (E->o->shared_entry) {
		/* kiln compile --shared: the one symbol every model's shared object
		 * exports under the same name, so a loader (the Python module) finds
		 * the descriptor without knowing NAME. */
		emitf(E, "/* The descriptor of this shared object (kiln compile --shared). */\n"
		      "__attribute__((visibility(\"default\"))) const kiln_model *kiln_shared_model(void);\n"
		      "const kiln_model *kiln_shared_model(void)\n{\n\treturn &%s_model;\n}\n\n", N);
	}
}

void emit_c(Model *m, const Sig *sigs, const Plan *plans, int nsigs, const EmitOptions *o,
            FILE *h, FILE *c, FILE *scratch, EmitResult *res)
{
	/* The code goes to scratch first: the weight symbols it names are only
	 * known once it is written, and their declarations come first in NAME.c. */
	Emit E0 = {.m = m, .g = m->graph, .d = m->diag, .a = m->arena, .o = o, .c = scratch};
	Emit *E = &E0;
	Graph *g = m->graph;
	index_interface(E);
	E->sym_of_weight = arena_array(E->a, (size_t)g->nvalues, sizeof *E->sym_of_weight);
	for (int i = 0; i < g->nvalues; i++)
		E->sym_of_weight[i] = NONE;

	/* Large graphs share node functions (see "shared node functions"). */
	bool any_shared = false;
	for (int i = 0; i < nsigs; i++) {
		E->sig = &sigs[i];
		E->plan = &plans[i];
		any_shared |= share_signature(E);
		if (o->tile && o->tile[i]) {
			E->sig = o->tile[i];
			E->plan = o->tile_plan[i];
			any_shared |= share_signature(E);
		}
	}
	if (any_shared)
		emit_step_runner(E);
	for (int i = 0; i < nsigs; i++) {
		const Sig *t = o->tile ? o->tile[i] : NULL;
		bool internal = t && !(t >= sigs && t < sigs + nsigs);
		bool done = false;   /* an internal tile's code, emitted for a smaller size */
		for (int j = 0; j < i && internal; j++)
			done |= o->tile[j] == t;
		if (internal && !done) {
			E->sig = t;
			E->plan = o->tile_plan[i];
			emitf(E, "/* ==== batch %" PRId64 " (tiles of batch %" PRId64 " only): arena %" PRId64
			      " bytes ==== */\n\n", t->batch, sigs[i].batch, E->plan->arena_bytes);
			emit_signature(E);
		}
		E->sig = &sigs[i];
		E->plan = &plans[i];
		emitf(E, "/* ==== batch %" PRId64 ": arena %" PRId64 " bytes ==== */\n\n", sigs[i].batch,
		    plans[i].arena_bytes);
		if (t)
			emit_tiled_run(E, t);
		else
			emit_signature(E);
		emitf(E, "%s_MODEL_API int %s_run_b%" PRId64 "(void *arena", upper(E, o->name), o->name,
		    sigs[i].batch);
		int nin = 0, nout = 0;
		for (int k = 0; k < g->ninputs; k++) {
			int id = g->inputs[k];
			if (g->values[id].kind == VAL_INPUT) {
				emitf(E, ", const %s *%s", ctype(sigs[i].dtypes[id]), E->iface[id]);
				nin++;
			}
		}
		for (int k = 0; k < g->noutputs; k++) {
			emitf(E, ", %s *%s", ctype(sigs[i].dtypes[g->outputs[k]]), E->iface[g->outputs[k]]);
			nout++;
		}
		emitf(E, ")\n{\n\tconst void *in[%d] = {", nin ? nin : 1);
		for (int k = 0, j = 0; k < g->ninputs; k++)
			if (g->values[g->inputs[k]].kind == VAL_INPUT)
				emitf(E, "%s%s", j++ ? ", " : "", E->iface[g->inputs[k]]);
		emitf(E, "%s};\n\tvoid *out[%d] = {", nin ? "" : "0", nout ? nout : 1);
		for (int k = 0; k < g->noutputs; k++)
			emitf(E, "%s%s", k ? ", " : "", E->iface[g->outputs[k]]);
		emitf(E, "%s};\n\treturn %s_run_generic_b%" PRId64 "(arena, in, out);\n}\n\n",
		    nout ? "" : "0", o->name, sigs[i].batch);
	}
	if (E->tfile) {
		model_untrack_file(m, E->tfile);
		fclose(E->tfile);
		E->tfile = NULL;
	}
	emit_descriptor(E, sigs, plans, nsigs);
	emit_header(E, h, sigs, plans, nsigs);

	banner(c, E, sigs, nsigs);
	fprintf(c, "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n\n");
	fprintf(c, "#include <kiln/float8.h>\n#include <kiln/int4.h>\n#include <kiln/kernels.h>\n"
	           "#include <kiln/model.h>\n#include <kiln/run.h>\n\n");
	fprintf(c, "#include \"%s.h\"\n\n", o->name);
	fprintf(c, "#if !defined(KILN_VERSION_NUM) || KILN_VERSION_NUM != %d\n"
	           "#error \"generated by kiln %s: build it with that version's headers\"\n"
	           "#endif\n\n", KILN_VERSION_NUM, KILN_VERSION_STRING);
	fprintf(c, "/* Constants, in %s_weights.o: read-only, 64-byte aligned, each stored once. */\n",
	        o->name);
	/* Hidden as in the object: a direct reference, never exported. */
	fprintf(c, "#if defined(__GNUC__) && !defined(_WIN32)\n#define %s_WEIGHT "
	           "__attribute__((visibility(\"hidden\")))\n#else\n#define %s_WEIGHT\n#endif\n",
	        upper(E, o->name), upper(E, o->name));
	for (int i = 0; i < E->nsyms; i++) {
		fprintf(c, "extern const unsigned char %s[] %s_WEIGHT; /* %s, %" PRIu64 " bytes, ",
		        E->syms[i].name, upper(E, o->name), dtype_name(E->syms[i].dtype),
		        E->syms[i].nbytes);
		if (E->syms[i].layout == SYM_PACK_B32)
			fprintf(c, "GEMM B packed b32 (K %" PRId64 ", N %" PRId64 "), ", E->syms[i].pack[0],
			        E->syms[i].pack[1]);
		if (E->syms[i].layout == SYM_PACK_CONV32)
			fprintf(c, "Conv W packed conv32 (M %" PRId64 ", C %" PRId64 ", %" PRId64 "x%" PRId64
			        "), ", E->syms[i].pack[1], E->syms[i].pack[0], E->syms[i].pack[2],
			        E->syms[i].pack[3]);
		fprintf(c, "from \"");
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
