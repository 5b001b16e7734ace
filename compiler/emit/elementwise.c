/*
 * emit/elementwise.c - op emitters for elementwise ops: math, activations, comparisons, logic, broadcasting binary ops, Cast.
 *
 * float16 and bfloat16 travel as uint16_t bit patterns. Arithmetic on them
 * is written for float: each operand is widened exactly on load and the
 * result rounded to nearest even on store (emit_map_widened), which is what
 * numpy does for these types. Pure selections (Identity, Where) copy the
 * bits instead, so NaN payloads survive.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c.h"

static bool is_half(int dt)
{
	return dt == DT_FLOAT16 || dt == DT_BFLOAT16;
}

/* float32 Exp, Tanh, Erf, Sigmoid, Log and Atan: one call to libkiln's
 * vector kernel (f32-vmath: SIMD polynomials chosen at run time, errors in
 * docs/kernels.md; Log and Atan kiln_logf's and kiln_atanf's double
 * operations in double lanes, the same bits) instead of a loop calling a
 * scalar function, which the user's compiler cannot vectorize. The kernel's
 * results do not depend on where a run of elements starts or ends, so a
 * chain (emit_ewchain) calls it on blocks and gets the same bits. NULL if
 * op has no kernel. */
static const char *unary_kernel(int op)
{
	switch (op) {
	case OP_Exp: return "KILN_UNARY_EXP";
	case OP_Tanh: return "KILN_UNARY_TANH";
	case OP_Erf: return "KILN_UNARY_ERF";
	case OP_Sigmoid: return "KILN_UNARY_SIGMOID";
	case OP_Log: return "KILN_UNARY_LOG";
	case OP_Atan: return "KILN_UNARY_ATAN";
	default: return NULL;
	}
}

/* The tensors are dense, so x and y are one contiguous run of n elements. */
static bool emit_unary_kernel(Emit *E, const Operand *x, const Operand *y)
{
	const char *fn = unary_kernel(E->n->op);
	if (!fn || x->dtype != DT_FLOAT || y->dtype != DT_FLOAT || x->nelem != y->nelem)
		return false;
	emitf(E, "\tkiln_f32_unary(%s, %s, %s, %" PRId64 ");\n", fn, x->expr, y->expr, y->nelem);
	return true;
}

/* The expression of unary node E->n on x0 (of element type xdt), computing
 * in dt: xdt, or float for 16-bit floats. The node's parameters are read
 * here only, for the node's own loop and for a chain's (emit_ewchain). */
static const char *unary_expr(Emit *E, int xdt, int dt)
{
	int op = E->n->op;
	bool half = is_half(xdt);
	const char *e = NULL;
	bool needs_float = true;
	Infer inf = emit_infer(E);
	ElementwiseParams ep;
	elementwise_params(&inf, &ep);
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
		e = arena_printf(E->a, "%s / (%s + %s(-x0))", flit(E, 1, dt), flit(E, 1, dt), mathfn(E, "exp", dt));
		break;
	case OP_Tanh: e = arena_printf(E->a, "%s(x0)", mathfn(E, "tanh", dt)); break;
	case OP_Erf: e = arena_printf(E->a, "%s(x0)", mathfn(E, "erf", dt)); break;
	case OP_Sqrt: e = arena_printf(E->a, "%s(x0)", mathfn(E, "sqrt", dt)); break;
	case OP_Exp: e = arena_printf(E->a, "%s(x0)", mathfn(E, "exp", dt)); break;
	case OP_Log: e = arena_printf(E->a, "%s(x0)", mathfn(E, "log", dt)); break;
	case OP_Selu: {
		double alpha = (double)ep.alpha, gamma = (double)ep.beta;
		e = arena_printf(E->a, "x0 > 0 ? %s * x0 : %s * (%s * %s(x0) - %s)", flit(E, gamma, dt),
		                 flit(E, gamma, dt), flit(E, alpha, dt), mathfn(E, "exp", dt), flit(E, alpha, dt));
		break;
	}
	case OP_Elu: {
		double alpha = (double)ep.alpha;
		e = arena_printf(E->a, "x0 < 0 ? %s * (%s(x0) - %s) : x0", flit(E, alpha, dt),
		                 mathfn(E, "exp", dt), flit(E, 1, dt));
		break;
	}
	case OP_LeakyRelu: {
		double alpha = (double)ep.alpha;
		e = arena_printf(E->a, "x0 < 0 ? %s * x0 : x0", flit(E, alpha, dt));
		break;
	}
	case OP_Neg:
		e = is_unsigned(dt) ? "(uint8_t)0" : arena_printf(E->a, "(%s)-x0", ctype(dt));
		needs_float = false;
		break;
	case OP_Abs:
		e = is_float(dt) ? arena_printf(E->a, "%s(x0)", mathfn(E, "fabs", dt))
		    : is_unsigned(dt) ? "x0" : arena_printf(E->a, "(%s)(x0 < 0 ? -x0 : x0)", ctype(dt));
		needs_float = false;
		break;
	case OP_Sign:
		e = is_unsigned(dt) ? arena_printf(E->a, "(%s)(x0 > 0)", ctype(dt))
		                    : arena_printf(E->a, "x0 > 0 ? (%s)1 : x0 < 0 ? (%s)-1 : x0", ctype(dt),
		                                   ctype(dt));
		needs_float = false;
		break;
	case OP_Floor: e = arena_printf(E->a, "%s(x0)", mathfn(E, "floor", dt)); break;
	case OP_Ceil: e = arena_printf(E->a, "%s(x0)", mathfn(E, "ceil", dt)); break;
	case OP_Round: e = arena_printf(E->a, "%s(x0)", mathfn(E, "rint", dt)); break; /* ties to even */
	case OP_Reciprocal: e = arena_printf(E->a, "%s / x0", flit(E, 1, dt)); break;
	case OP_Sin: case OP_Cos: case OP_Tan: case OP_Asin: case OP_Acos: case OP_Atan:
	case OP_Sinh: case OP_Cosh: case OP_Asinh: case OP_Acosh: case OP_Atanh: {
		char lower[8];
		size_t k = 0;
		for (const char *p = E->n->op_type; *p && k < sizeof lower - 1; p++)
			lower[k++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
		lower[k] = 0;
		e = arena_printf(E->a, "%s(x0)", mathfn(E, lower, dt));
		break;
	}
	case OP_Softplus: /* log(1 + exp(x)) without overflow */
		e = arena_printf(E->a, "x0 > 0 ? x0 + %s(%s(-x0)) : %s(%s(x0))", mathfn(E, "log1p", dt),
		                 mathfn(E, "exp", dt), mathfn(E, "log1p", dt), mathfn(E, "exp", dt));
		break;
	case OP_Mish: /* x * tanh(softplus(x)), softplus as above */
		e = arena_printf(E->a, "x0 * %s(x0 > 0 ? x0 + %s(%s(-x0)) : %s(%s(x0)))",
		                 mathfn(E, "tanh", dt), mathfn(E, "log1p", dt), mathfn(E, "exp", dt),
		                 mathfn(E, "log1p", dt), mathfn(E, "exp", dt));
		break;
	case OP_Gelu: { /* opset 20: exact (erf) or, with approximate="tanh", the tanh form */
		if (ep.gelu_tanh)
			e = arena_printf(E->a, "%s * x0 * (%s + %s(%s * (x0 + %s * x0 * x0 * x0)))",
			                 flit(E, 0.5, dt), flit(E, 1, dt), mathfn(E, "tanh", dt),
			                 flit(E, 0.7978845608028654, dt), flit(E, 0.044715, dt));
		else
			e = arena_printf(E->a, "%s * x0 * (%s + %s(x0 * %s))", flit(E, 0.5, dt), flit(E, 1, dt),
			                 mathfn(E, "erf", dt), flit(E, 0.7071067811865476, dt));
		break;
	}
	case OP_Softsign: e = arena_printf(E->a, "x0 / (%s + %s(x0))", flit(E, 1, dt), mathfn(E, "fabs", dt)); break;
	case OP_HardSigmoid: case OP_HardSwish: {
		double alpha = E->n->op == OP_HardSwish ? 1.0 / 6 : (double)ep.alpha;
		double beta = E->n->op == OP_HardSwish ? 0.5 : (double)ep.beta;
		const char *hs = arena_printf(E->a, "%s(%s, %s(%s, %s * x0 + %s))", mathfn(E, "fmax", dt),
		                              flit(E, 0, dt), mathfn(E, "fmin", dt), flit(E, 1, dt),
		                              flit(E, alpha, dt), flit(E, beta, dt));
		e = E->n->op == OP_HardSwish ? arena_printf(E->a, "x0 * %s", hs) : hs;
		break;
	}
	case OP_ThresholdedRelu: {
		double alpha = (double)ep.alpha;
		e = arena_printf(E->a, "x0 > %s ? x0 : %s", flit(E, alpha, dt), flit(E, 0, dt));
		break;
	}
	case OP_Celu: {
		double alpha = (double)ep.alpha;
		e = arena_printf(E->a, "%s(%s, x0) + %s(%s, %s * (%s(x0 / %s) - %s))", mathfn(E, "fmax", dt),
		                 flit(E, 0, dt), mathfn(E, "fmin", dt), flit(E, 0, dt), flit(E, alpha, dt),
		                 mathfn(E, "exp", dt), flit(E, alpha, dt), flit(E, 1, dt));
		break;
	}
	case OP_Shrink: {
		double l = (double)ep.alpha, b = (double)ep.beta;
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
	case OP_BitwiseNot:
		e = arena_printf(E->a, "(%s)~x0", ctype(dt));
		needs_float = false;
		break;
	case OP_IsNaN:
		e = "(uint8_t)(x0 != x0)";
		break;
	case OP_IsInf: {
		bool neg = ep.detect_negative, pos = ep.detect_positive;
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
				if (!(i ? ep.has_max : ep.has_min))
					continue;
				v = (double)(i ? ep.max : ep.min);
			} else {
				int k = i + 1;
				if (k >= E->n->nin || E->n->in[k] == NONE)
					continue;
				int id = E->n->in[k];
				if (half || (!E->sig->folded[id] &&
				             E->g->values[E->plan->root[id]].kind != VAL_WEIGHT)) {
					emitf(E, "\tconst %s %s = %s((%s)[0]);\n", ctype(dt), i ? "hi" : "lo",
					    xdt == DT_FLOAT16 ? "kiln_f16_to_f32"
					    : xdt == DT_BFLOAT16 ? "kiln_bf16_to_f32" : "",
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
	return e;
}

void emit_unary(Emit *E)
{
	Operand x = in_op(E, 0), y = out_op(E, 0);
	if (emit_unary_kernel(E, &x, &y))
		return;
	const char *e = unary_expr(E, x.dtype, is_half(x.dtype) ? DT_FLOAT : x.dtype);
	if (E->n->op == OP_Identity)
		emit_map(E, &y, &x, 1, e);
	else
		emit_map_widened(E, &y, &x, 1, e, NULL);
}

/* Is input i a compile-time constant of one element equal to v? */
static bool const_one_is(Emit *E, int i, double v)
{
	if (i >= E->n->nin || E->n->in[i] == NONE)
		return false;
	int id = E->n->in[i], dt = E->sig->dtypes[id];
	const Folded *f = E->sig->folded[id];
	if (f ? !f->data : E->g->values[id].kind != VAL_WEIGHT || !E->g->values[id].weight->bytes)
		return false;
	if (f)
		dt = f->dtype;
	if (shape_nelem(&E->sig->shapes[id]) != 1 ||
	    (dt != DT_FLOAT && dt != DT_DOUBLE && dt != DT_INT64 && dt != DT_INT32))
		return false;
	double x;
	return folded_scalar(E, i, &x) && x == v;
}

/* The expression of node E->n of nx inputs x0, x1, ... computing in dt, or
 * NULL and *stmts, statements assigning the result to r. Its parameters
 * are read here only (see unary_expr). */
static const char *binary_expr(Emit *E, int dt, int nx, const char **stmts)
{
	int op = E->n->op;
	const char *t = ctype(dt), *e = NULL;
	*stmts = NULL;
	if (dt == DT_STRING)
		emit_fail(E, "%s on %s is not supported by the code generator yet", E->n->op_type,
		          dtype_name(dt));
	Infer inf = emit_infer(E);
	ElementwiseParams ep;
	elementwise_params(&inf, &ep);
	switch (op) {
	case OP_Add: e = "x0 + x1"; break;
	case OP_Sub: e = "x0 - x1"; break;
	case OP_Mul: e = "x0 * x1"; break;
	case OP_Div: e = is_float(dt) ? "x0 / x1" : "x1 == 0 ? 0 : x0 / x1"; break;
	case OP_Pow:
		/* Integer powers go through kiln_pow in double, exact for every
		 * result below 2^53 (an exact result comes out exactly). */
		e = is_float(dt) ? arena_printf(E->a, "%s(x0, (%s)x1)", mathfn(E, "pow", dt), t)
		                 : arena_printf(E->a, "(%s)kiln_pow((double)x0, (double)x1)", ctype(dt));
		/* A float32 square: kiln_powf(x, 2) is x x rounded once (NaN, 0 and
		 * inf alike), so the same bits, and the loop vectorizes. */
		if (dt == DT_FLOAT && const_one_is(E, 1, 2.0))
			e = "((void)x1, x0 * x0)";
		break;
	case OP_Where: e = "x0 ? x1 : x2"; break;
	case OP_And: e = "(uint8_t)(x0 && x1)"; break;
	case OP_Or: e = "(uint8_t)(x0 || x1)"; break;
	case OP_Xor: e = "(uint8_t)(!x0 != !x1)"; break;
	case OP_BitwiseAnd: e = arena_printf(E->a, "(%s)(x0 & x1)", t); break;
	case OP_BitwiseOr: e = arena_printf(E->a, "(%s)(x0 | x1)", t); break;
	case OP_BitwiseXor: e = arena_printf(E->a, "(%s)(x0 ^ x1)", t); break;
	case OP_Equal: e = "(uint8_t)(x0 == x1)"; break;
	case OP_Less: e = "(uint8_t)(x0 < x1)"; break;
	case OP_Greater: e = "(uint8_t)(x0 > x1)"; break;
	case OP_LessOrEqual: e = "(uint8_t)(x0 <= x1)"; break;
	case OP_GreaterOrEqual: e = "(uint8_t)(x0 >= x1)"; break;
	case OP_PRelu: e = is_unsigned(dt) ? "((void)x1, x0)" : "x0 < 0 ? x1 * x0 : x0"; break;
	case OP_BitShift: {
		bool left = ep.shift_left;
		e = arena_printf(E->a, "x1 >= %zu ? 0 : (%s)(x0 %s x1)", 8 * dtype_size(dt), t,
		                 left ? "<<" : ">>");
		break;
	}
	case OP_Mod:
		if (ep.fmod || is_float(dt))
			e = is_float(dt) ? arena_printf(E->a, "%s(x0, x1)", mathfn(E, "fmod", dt))
			                 : "x1 == 0 ? 0 : x0 % x1";
		else if (is_unsigned(dt))
			e = "x1 == 0 ? 0 : x0 % x1";
		else /* the sign of the divisor, as Python's % */
			*stmts = arena_printf(E->a, "r = x1 == 0 ? 0 : (%s)(x0 %% x1); "
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
		*stmts = b;
		break;
	}
	default:
		emit_fail(E, "no code generator for this op yet");
	}
	return e;
}

/* Is op one of emit_binary's (else emit_unary's)? */
bool op_is_binary(int op)
{
	switch (op) {
	case OP_Add: case OP_Sub: case OP_Mul: case OP_Div: case OP_Pow: case OP_Where:
	case OP_And: case OP_Or: case OP_Xor: case OP_Equal: case OP_Less: case OP_Greater:
	case OP_LessOrEqual: case OP_GreaterOrEqual: case OP_Mod: case OP_BitShift: case OP_PRelu:
	case OP_Min: case OP_Max: case OP_Sum: case OP_Mean: case OP_BitwiseAnd: case OP_BitwiseOr:
	case OP_BitwiseXor:
		return true;
	default:
		return false;
	}
}

/* Elementwise ops of two or more inputs, broadcast. */
void emit_binary(Emit *E)
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
	/* Comparisons output bool; compute in the inputs' type, 16-bit floats in float. */
	int dt = is_half(xs[0].dtype) ? DT_FLOAT : xs[0].dtype;
	if (op == OP_Where)
		dt = is_half(xs[1].dtype) ? DT_FLOAT : xs[1].dtype;
	const char *stmts = NULL, *e = binary_expr(E, dt, nx, &stmts);
	if (op == OP_Where)  /* a selection: copy the bits */
		emit_map_body(E, &y, xs, nx, e, stmts);
	else
		emit_map_widened(E, &y, xs, nx, e, stmts);
}

void emit_cast(Emit *E)
{
	Operand x = in_op(E, 0), y = out_op(E, 0);
	/* 16-bit and 8-bit floats travel as bit patterns and go through float32;
	 * saturate (opset 19) decides what becomes of values beyond float8's range. */
	const char *src = x.dtype == DT_FLOAT16    ? "kiln_f16_to_f32(x0)"
	                  : x.dtype == DT_BFLOAT16 ? "kiln_bf16_to_f32(x0)"
	                  : DT_IS_FLOAT8(x.dtype)
	                      ? arena_printf(E->a, "kiln_f8_to_f32(x0, %d)", x.dtype - DT_FLOAT8E4M3FN)
	                      : "x0";
	Infer inf = emit_infer(E);
	ElementwiseParams ep;
	elementwise_params(&inf, &ep);
	const char *e;
	if (DT_IS_FLOAT8(y.dtype))
		e = arena_printf(E->a, "kiln_f32_to_f8((float)%s, %d, %d)", src,
		                 y.dtype - DT_FLOAT8E4M3FN, (int)ep.saturate);
	else if (y.dtype == DT_FLOAT16 || y.dtype == DT_BFLOAT16)
		e = arena_printf(E->a, "%s((float)%s)",
		                 y.dtype == DT_FLOAT16 ? "kiln_f32_to_f16" : "kiln_f32_to_bf16", src);
	else if (y.dtype == DT_BOOL)
		e = arena_printf(E->a, "(uint8_t)(%s != 0)", src);
	else
		e = arena_printf(E->a, "(%s)%s", ctype(y.dtype), src);
	if (!DT_IS_4BIT(x.dtype) && !DT_IS_4BIT(y.dtype)) {
		emit_map(E, &y, &x, 1, e);
		return;
	}
	/* int4/uint4 (opset 21): one flat loop in element order over packed
	 * nibbles; into them as ONNX Runtime casts (kiln/int4.h). */
	decl(E, "X", &x, false);
	decl(E, "Y", &y, true);
	emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++) {\n", y.nelem);
	if (DT_IS_4BIT(x.dtype))
		emitf(E, "\t\tconst int x0 = kiln_%c4_get(X, i);\n", x.dtype == DT_INT4 ? 'i' : 'u');
	else
		emitf(E, "\t\tconst %s x0 = X[i];\n", ctype(x.dtype));
	bool from_float = x.dtype == DT_FLOAT || x.dtype == DT_DOUBLE || x.dtype == DT_FLOAT16 ||
	                  x.dtype == DT_BFLOAT16 || DT_IS_FLOAT8(x.dtype);
	if (DT_IS_4BIT(y.dtype))
		emitf(E, "\t\tkiln_4_put(Y, i, kiln_%sto_4bit(%s%s, %d));\n\t}\n",
		      from_float ? "" : "int_", from_float ? "(double)" : "(int64_t)", src,
		      y.dtype == DT_INT4);
	else
		emitf(E, "\t\tY[i] = %s;\n\t}\n", e);
}


/* ---- elementwise chains (passes/ewchain.c) ---------------------------- */

/* expr with each operand x<k> (an identifier of its own, k < nnames, at
 * most EWCHAIN_MAX_OPERANDS) written as names[k]. */
static const char *with_operands(Emit *E, const char *expr, const char *const *names, int nnames)
{
	size_t len = 0;
	for (int pass = 0; pass < 2; pass++) {
		char *out = pass ? arena_alloc(E->a, len + 1) : NULL;
		size_t n = 0;
		for (const char *p = expr; *p;) {
			bool start = p == expr || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
			if (start && p[0] == 'x' && isdigit((unsigned char)p[1]) &&
			    !(isalnum((unsigned char)p[2]) || p[2] == '_')) {
				KILN_ASSERT(p[1] - '0' < nnames);
				const char *name = names[p[1] - '0'];
				if (out)
					memcpy(out + n, name, strlen(name));
				n += strlen(name);
				p += 2;
				continue;
			}
			if (out)
				out[n] = *p;
			n++;
			p++;
		}
		if (out) {
			out[n] = 0;
			return out;
		}
		len = n;
	}
	return NULL;
}

/* Does node n read a value computed inline (so n ends a chain)? */
static bool reads_inline(Emit *E, const Node *n)
{
	for (int k = 0; k < ewchain_data_inputs(n); k++)
		if (n->in[k] != NONE && sig_inline(E->sig, n->in[k]))
			return true;
	return false;
}

int ewchain_collect(Emit *E, const Node *last, EwChain *ch)
{
	const Graph *g = E->g;
	ch->nnodes = ch->next = 0;
	ch->nodes = NULL;
	if (!ewchain_op(last) || !reads_inline(E, last))
		return 1;
	/* Its nodes, back from the last one through the inline values, then in
	 * node order. Each inline value has one reader, but that reader may
	 * read it twice (Mul(d, d) with d = x - mean): each producer is taken
	 * once, else its second copy would compute a t<i> nobody reads. */
	int cap = 0;
	ch->nodes = arena_grow(E->a, NULL, 0, &cap, sizeof *ch->nodes);
	ch->nodes[ch->nnodes++] = last->id;
	for (int t = 0; t < ch->nnodes; t++) {
		const Node *n = &g->nodes[ch->nodes[t]];
		for (int k = 0; k < ewchain_data_inputs(n); k++) {
			int id = n->in[k], seen = 0;
			if (id == NONE || !sig_inline(E->sig, id))
				continue;
			while (seen < k && n->in[seen] != id)
				seen++;
			if (seen < k)
				continue;  /* this node's earlier input: its producer is in */
			ch->nodes = arena_grow(E->a, ch->nodes, ch->nnodes, &cap, sizeof *ch->nodes);
			ch->nodes[ch->nnodes++] = g->values[id].producer;
		}
	}
	for (int t = 1; t < ch->nnodes; t++)
		for (int u = t; u > 0 && ch->nodes[u - 1] > ch->nodes[u]; u--) {
			int x = ch->nodes[u];
			ch->nodes[u] = ch->nodes[u - 1];
			ch->nodes[u - 1] = x;
		}
	/* The values it reads from outside, each once, in node order. */
	for (int t = 0; t < ch->nnodes; t++) {
		const Node *n = &g->nodes[ch->nodes[t]];
		for (int k = 0; k < ewchain_data_inputs(n); k++) {
			int id = n->in[k], e = 0;
			if (id == NONE || sig_inline(E->sig, id))
				continue;
			while (e < ch->next && ch->ext[e] != id)
				e++;
			if (e == ch->next) {
				KILN_ASSERT(ch->next < EWCHAIN_MAX_OPERANDS);
				ch->ext[ch->next++] = id;
			}
		}
	}
	return ch->nnodes;
}

void ewchain_names(Emit *E, const EwChain *ch, const char *sep)
{
	for (int t = 0; t + 1 < ch->nnodes; t++) {
		const Node *n = &E->g->nodes[ch->nodes[t]];
		emitf(E, "%snode %d \"", t ? ", " : sep, n->id);
		comment_text(E, n->name);
		emitf(E, "\" (%s)", c_comment_escape(E->a, n->op_type));
	}
}

/* Elements of a chain computed per block: every inner value is a float
 * array of at most this many on the stack. */
enum { EW_BLOCK = 256 };

/* The index of element (q, j) of a block, in an operand with strides
 * sq (rows) and sj (0 or 1) from its offset o: "o + q * sq + j". */
static const char *block_index(Emit *E, const char *o, bool rows, int64_t sq, int64_t sj)
{
	return arena_printf(E->a, "%s%s%s", o, rows && sq ? arena_printf(E->a, " + q * %" PRId64, sq) : "",
	                    sj ? " + j" : "");
}

/*
 * The chain ending at node E->n as one loop nest over its output: the dims
 * are merged as for one node (map_dims), and the innermost one runs in
 * blocks of EW_BLOCK elements, or, when it is shorter than that, blocks
 * take several of its rows (q) at once, so kiln_f32_unary is never called
 * on a few elements at a time. In a block, each node in order computes its
 * value into a local float array t<i> (the last one into Y), by its own
 * expression (unary_expr, binary_expr) with its operands named t<i>[...]
 * or X<e>[o<e> + ...] (o<e> the operand's offset at the block, no + j
 * where it repeats along the innermost dim), or by kiln_f32_unary on the
 * block. Every intermediate is rounded to float, as the node-by-node code
 * stores it, so the results are the same bits. false if E->n ends no chain.
 */
bool emit_ewchain(Emit *E)
{
	EwChain ch;
	Node *last = E->n;
	if (last->nout < 1 || last->out[0] == NONE || ewchain_collect(E, last, &ch) < 2)
		return false;
	Operand y = out_op(E, 0), xs[EWCHAIN_MAX_OPERANDS];
	for (int e = 0; e < ch.next; e++)
		xs[e] = operand(E, ch.ext[e], false);
	int64_t md[KILN_MAX_RANK], ms[MAX_MAP_OPERANDS + 1][KILN_MAX_RANK];
	int r = map_dims(&y, xs, ch.next, md, ms);
	decl(E, "Y", &y, true);
	for (int e = 0; e < ch.next; e++)
		decl(E, arena_printf(E->a, "X%d", e), &xs[e], false);
	if (r == 0) {  /* one element */
		r = 1;
		md[0] = 1;
		for (int e = 0; e <= ch.next; e++)
			ms[e][0] = 1;
	}
	/* rows: a block is nq rows of the second-innermost dim, each whole;
	 * else a block is blk elements of the innermost dim. */
	int64_t len = md[r - 1];
	bool rows = r >= 2 && len < EW_BLOCK;
	int64_t nq = !rows ? 1 : EW_BLOCK / len < md[r - 2] ? EW_BLOCK / len : md[r - 2];
	int64_t blk = rows ? nq * len : len < EW_BLOCK ? len : EW_BLOCK;
	int64_t span = rows ? md[r - 2] : len, step = rows ? nq : blk;  /* what b walks */
	int nouter = rows ? r - 2 : r - 1;
	char indent[KILN_MAX_RANK + 3] = "\t";
	for (int k = 0; k < nouter; k++) {
		emitf(E, "%sfor (int64_t i%d = 0; i%d < %" PRId64 "; i%d++) {\n", indent, k, k, md[k], k);
		strcat(indent, "\t");
	}
	emitf(E, "%sfor (int64_t b = 0; b < %" PRId64 "; b += %" PRId64 ") {\n", indent, span, step);
	strcat(indent, "\t");
	/* m: elements (or rows) in this block, a literal when blocks divide the
	 * dim: loops the C compiler vectorizes at -O2. */
	const char *m = "m";
	if (span % step == 0)
		m = arena_printf(E->a, "%" PRId64, step);
	else
		emitf(E, "%sconst int64_t m = %" PRId64 " - b < %" PRId64 " ? %" PRId64 " - b : %" PRId64
		      ";\n", indent, span, step, span, step);
	const char *count = rows ? arena_printf(E->a, "%s * %" PRId64, m, len) : m;
	/* Offsets at the block: oy of the output, o<e> of operand e. */
	for (int e = 0; e <= ch.next; e++) {
		KILN_ASSERT(ms[e][r - 1] == 0 || ms[e][r - 1] == 1);
		emitf(E, "%sconst int64_t %s = 0", indent,
		      e == 0 ? "oy" : arena_printf(E->a, "o%d", e - 1));
		for (int k = 0; k < nouter; k++)
			if (ms[e][k])
				emitf(E, " + i%d * %" PRId64, k, ms[e][k]);
		int64_t sb = rows ? ms[e][r - 2] : ms[e][r - 1];
		if (sb)
			emitf(E, " + b * %" PRId64, sb);
		emitf(E, ";\n");
	}
	emitf(E, "%sfloat", indent);
	for (int t = 0; t + 1 < ch.nnodes; t++)
		emitf(E, "%s t%d[%" PRId64 "]", t ? "," : "", t, blk);
	emitf(E, ";\n");
	/* Element (q, j) of a block: of a t<i>, of the output. */
	const char *at = rows ? arena_printf(E->a, "q * %" PRId64 " + j", len) : "j";
	const char *loop =
		rows ? arena_printf(E->a, "for (int64_t q = 0; q < %s; q++)\n%s\tfor (int64_t j = 0; "
		                    "j < %" PRId64 "; j++)", m, indent, len)
		     : arena_printf(E->a, "for (int64_t j = 0; j < %s; j++)", m);
	const char *body = rows ? arena_printf(E->a, "%s\t", indent) : indent;
	for (int t = 0; t < ch.nnodes; t++) {
		E->n = &E->g->nodes[ch.nodes[t]];
		const char *names[EWCHAIN_MAX_OPERANDS], *ptr = NULL;
		int nx = ewchain_data_inputs(E->n);
		KILN_ASSERT(nx <= EWCHAIN_MAX_OPERANDS);
		for (int k = 0; k < nx; k++) {
			int id = E->n->in[k], e = 0, u = 0;
			if (sig_inline(E->sig, id)) {
				while (E->g->nodes[ch.nodes[u]].out[0] != id)
					u++;
				names[k] = arena_printf(E->a, "t%d[%s]", u, at);
				ptr = arena_printf(E->a, "t%d", u);
				continue;
			}
			while (ch.ext[e] != id)
				e++;
			const int64_t *st = ms[e + 1];
			names[k] = arena_printf(E->a, "X%d[%s]", e,
			                        block_index(E, arena_printf(E->a, "o%d", e), rows,
			                                    rows ? st[r - 2] : 0, st[r - 1]));
			/* The kernel reads the block where it is when it is dense there. */
			bool dense = st[r - 1] == 1 && (!rows || st[r - 2] == len);
			ptr = dense ? arena_printf(E->a, "X%d + o%d", e, e) : NULL;
		}
		bool is_last = t + 1 == ch.nnodes;
		const char *kernel = unary_kernel(E->n->op), *stmts = NULL, *expr;
		const char *dst = is_last ? "Y + oy" : arena_printf(E->a, "t%d", t);
		if (kernel && !ptr) {
			/* An input repeated along the block (a chain whose counts differ
			 * at this signature only): spread, then the kernel in place. */
			expr = "x0";
			ptr = dst;
		} else if (kernel) {
			emitf(E, "%skiln_f32_unary(%s, %s, %s, %s);\n", indent, kernel, ptr, dst, count);
			continue;
		} else {
			expr = op_is_binary(E->n->op) ? binary_expr(E, DT_FLOAT, nx, &stmts)
			                              : unary_expr(E, DT_FLOAT, DT_FLOAT);
		}
		const char *to = is_last ? arena_printf(E->a, "Y[oy + %s]", at)
		                         : arena_printf(E->a, "t%d[%s]", t, at);
		emitf(E, "%s%s", indent, loop);
		if (stmts)
			emitf(E, " {\n%s\tfloat r;\n%s\t%s\n%s\t%s = r;\n%s}\n", body, body,
			      with_operands(E, stmts, names, nx), body, to, body);
		else
			emitf(E, "\n%s\t%s = %s;\n", body, to, with_operands(E, expr, names, nx));
		if (kernel)
			emitf(E, "%skiln_f32_unary(%s, %s, %s, %s);\n", indent, kernel, ptr, dst, count);
	}
	E->n = last;
	for (int k = nouter + 1; k >= 1; k--)
		emitf(E, "%.*s}\n", k, "\t\t\t\t\t\t\t\t\t");
	return true;
}
