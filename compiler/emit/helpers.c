/*
 * emit/helpers.c - what every op emitter uses (compiler/emit_c.h): printing
 * (emitf, escapes, C types and float literals), the constants the weights
 * object holds (symbols, packed layouts), operands (where a value lives, as
 * a C expression), elementwise loops over broadcast operands, and axis
 * helpers.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c.h"

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
const char *sig_tag(Arena *a, const Sig *s)
{
	if (s->bucket > 0)
		return arena_printf(a, "d%" PRId64 "_b%" PRId64, s->bucket, s->batch);
	return arena_printf(a, "b%" PRId64, s->batch);
}

char *c_identifier(Arena *a, const char *name)
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
		if (s->hash == h && s->dtype == dtype && s->src_nbytes == nbytes && s->layout == layout &&
		    (layout == SYM_RAW || memcmp(s->pack, pack, sizeof s->pack) == 0) &&
		    (nbytes == 0 || memcmp(s->bytes, bytes, nbytes) == 0))
			return i;
	}
	E->syms = arena_grow(E->a, E->syms, E->nsyms, &E->capsyms, sizeof *E->syms);
	EmitSymbol *s = &E->syms[E->nsyms];
	s->name = arena_printf(E->a, "%s_w%d_%s", E->o->name, E->nsyms, c_identifier(E->a, hint));
	s->bytes = bytes;
	s->src_nbytes = nbytes;
	/* the F(4, 3) filters: 6 floats for every 3; the F(2x2, 3x3) ones: 16
	 * for every 9 (M rounded up to 8) */
	s->nbytes = layout == SYM_WINO1D ? nbytes * 2
	            : layout == SYM_WINO2D
	                ? (uint64_t)kiln_f32_conv2d_winograd_packed_floats(pack[0], pack[1]) * sizeof(float)
	                : nbytes;
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
		 * found it): the packer reads its source through memcpy, so the weight is
		 * packed where it is, without a copy. */
		kiln_f32_gemm_pack_b32(s->bytes, s->pack[2], s->pack[3], s->pack[0], s->pack[1], dst);
		break;
	case SYM_PACK_CONV32: {
		kiln_conv2d_params p = {.in_channels = s->pack[0], .out_channels = s->pack[1],
		                        .group = 1, .kernel_h = s->pack[2], .kernel_w = s->pack[3]};
		kiln_f32_conv2d_pack(&p, s->bytes, dst);
		break;
	}
	case SYM_WINO1D: {
		kiln_conv2d_params p = {.in_channels = s->pack[0], .out_channels = s->pack[1],
		                        .group = 1, .kernel_h = s->pack[2], .kernel_w = s->pack[3]};
		kiln_f32_conv1d_wino_pack(&p, s->bytes, dst);
		break;
	}
	case SYM_WINO2D: {
		kiln_conv2d_params p = {.in_channels = s->pack[0], .out_channels = s->pack[1],
		                        .group = 1, .kernel_h = s->pack[2], .kernel_w = s->pack[3]};
		kiln_f32_conv2d_winograd_pack(&p, s->bytes, dst);
		break;
	}
	case SYM_TRANSPOSE16: {
		/* through memcpy: the source may sit at any offset */
		const unsigned char *src = s->bytes;
		unsigned char *out = dst;
		int64_t R = s->pack[0], C = s->pack[1];
		for (int64_t r = 0; r < R; r++)
			for (int64_t c = 0; c < C; c++)
				memcpy(out + 2 * (c * R + r), src + 2 * (r * C + c), 2);
		break;
	}
	default:
		memcpy(dst, s->bytes, s->nbytes);
		break;
	}
}

/* ---- operands --------------------------------------------------------- */



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

void emit_adopt_symbols(Emit *E, const Emit *C)
{
	E->syms = C->syms;
	E->nsyms = C->nsyms;
	E->capsyms = C->capsyms;
}

/* A VAL_OUTER value of a subgraph (emit/control.c) where its enclosing
 * graph keeps it: the parent's operand, with the symbol table handed up and
 * back. */
static const char *outer_expr(Emit *E, int id)
{
	KILN_ASSERT(E->parent && E->g->values[id].kind == VAL_OUTER);
	Emit P = *E->parent;
	emit_adopt_symbols(&P, E);
	Operand op = operand(&P, E->g->values[id].outer_id, false);
	emit_adopt_symbols(E, &P);
	return op.expr;
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
		op.expr = outer_expr(E, id);
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
		op.expr = outer_expr(E, root);  /* a view of an enclosing graph's value */
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

/* The C function for a float function in the operand's precision: kiln's
 * own (kernels.h: the same bits on every machine and under every ISA) for
 * every float function but the exact ones (sqrt, fabs, floor, ...), and for
 * double exp, log, log1p and tanh; else libm's (docs/reproducibility.md
 * says which results therefore still depend on the machine's libm). */
const char *mathfn(Emit *E, const char *name, int dt)
{
	static const char *const own[] = {"exp", "tanh", "erf", "log", "log1p", "pow", "sin",
	                                  "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
	                                  "asinh", "acosh", "atanh"};
	static const char *const own_double[] = {"exp", "log", "log1p", "tanh", "pow", "sin",
	                                         "cos", "tan", "erf", "asin", "acos", "atan",
	                                         "sinh", "cosh", "asinh", "acosh", "atanh"};
	if (dt == DT_FLOAT)
		for (size_t k = 0; k < sizeof own / sizeof own[0]; k++)
			if (strcmp(name, own[k]) == 0)
				return arena_printf(E->a, "kiln_%sf", name);
	if (dt == DT_DOUBLE)
		for (size_t k = 0; k < sizeof own_double / sizeof own_double[0]; k++)
			if (strcmp(name, own_double[k]) == 0)
				return arena_printf(E->a, "kiln_%s", name);
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
