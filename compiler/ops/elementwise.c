/*
 * ops/elementwise.c - shape inference for elementwise ops: the unary
 * activations and math functions, Cast, Clip, the broadcasting binary ops
 * and Where.
 *
 * Broadcasting is ONNX's multidirectional (numpy) rule: shapes are aligned
 * at the right, and each dim pair must be equal or contain a 1. Integer
 * results of small known tensors are folded, since exporters compute shapes
 * with Add/Sub/Mul/Div on Shape outputs.
 */
#include <math.h>
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

static void broadcast(Infer *x, Shape *out, const Shape *a, const Shape *b)
{
	int rank = a->rank > b->rank ? a->rank : b->rank;
	Shape r = {.rank = rank};
	for (int k = 0; k < rank; k++) {
		int ia = k - (rank - a->rank), ib = k - (rank - b->rank);
		int64_t da = ia >= 0 ? a->dims[ia].size : 1, db = ib >= 0 ? b->dims[ib].size : 1;
		if (da != db && da != 1 && db != 1)
			infer_fail(x, KILN_SHAPE_ERROR,
			           "shapes do not broadcast: dim %d is %lld in one input and %lld in another",
			           k, (long long)da, (long long)db);
		r.dims[k].size = da == 1 ? db : da;
	}
	*out = r;
}

/* Element (linear index in the broadcast output) of a folded input. */
int64_t bcast_index(const Shape *out, const Shape *in, int64_t linear)
{
	int64_t idx = 0, stride = 1;
	for (int k = out->rank - 1, ki = in->rank - 1; k >= 0; k--, ki--) {
		int64_t coord = linear % out->dims[k].size;
		linear /= out->dims[k].size;
		if (ki >= 0) {
			if (in->dims[ki].size != 1)
				idx += coord * stride;
			stride *= in->dims[ki].size;
		}
	}
	return idx;
}

Shape prelu_channel_shape(const Shape *x)
{
	Shape s = {.rank = x->rank - 1};
	s.dims[0] = x->dims[1];
	for (int k = 1; k < s.rank; k++)
		s.dims[k].size = 1;
	return s;
}

static void fold_binary(Infer *x, const Shape *out, int op)
{
	int64_t na, nb;
	const int64_t *a = infer_ints(x, 0, &na), *b = infer_ints(x, 1, &nb);
	if (!a || !b || !infer_foldable(out) || infer_dtype(x, 0) != DT_INT64)
		return;
	int64_t n = shape_nelem(out);
	int64_t *r = arena_array(x->a, (size_t)n, sizeof *r);
	for (int64_t i = 0; i < n; i++) {
		int64_t va = a[bcast_index(out, infer_shape(x, 0), i)];
		int64_t vb = b[bcast_index(out, infer_shape(x, 1), i)];
		switch (op) {
		case OP_Add: r[i] = (int64_t)((uint64_t)va + (uint64_t)vb); break;
		case OP_Sub: r[i] = (int64_t)((uint64_t)va - (uint64_t)vb); break;
		case OP_Mul: r[i] = (int64_t)((uint64_t)va * (uint64_t)vb); break;
		case OP_Div:
			if (vb == 0 || (va == INT64_MIN && vb == -1))
				return;  /* leave it to run time, which reports it */
			r[i] = va / vb;
			break;
		default: return;
		}
	}
	infer_set_folded(x, 0, DT_INT64, n, r);
}

static void infer_cast(Infer *x)
{
	/* CastLike takes the target type from its second input. */
	int to = x->n->op == OP_CastLike ? infer_dtype(x, 1) : (int)attr_int(x, "to", 0);
	if (!dtype_valid(to))
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"to\" is not an element type (%d)", to);
	const Shape *s = infer_shape(x, 0);
	infer_set_output(x, 0, to, s);
	/* Integer-to-integer casts of known shapes (int32 <-> int64) stay foldable,
	 * and so do small integers cast to float32, which Range and the window
	 * functions' expansions take as sizes. */
	int64_t n;
	const int64_t *v = infer_ints(x, 0, &n);
	if (v && to == DT_INT64)
		infer_set_folded(x, 0, DT_INT64, n, v);
	if (v && to == DT_FLOAT && n <= 4096) {
		float *f = arena_array(x->a, (size_t)n + 1, sizeof *f);
		for (int64_t k = 0; k < n; k++)
			f[k] = (float)v[k];
		infer_set_folded(x, 0, DT_FLOAT, n, f);
	}
}

static bool c_style_mod(const Node *n);
static bool shift_left(const Node *n);

void elementwise_params(Infer *x, ElementwiseParams *p)
{
	const Node *n = x->n;
	memset(p, 0, sizeof *p);
	switch (n->op) {
	case OP_Selu:
		p->alpha = attr_float(x, "alpha", 1.67326319217681884765625f);
		p->beta = attr_float(x, "gamma", 1.05070102214813232421875f);
		return;
	case OP_Elu: case OP_ThresholdedRelu: case OP_Celu:
		p->alpha = attr_float(x, "alpha", 1.0f);
		return;
	case OP_LeakyRelu:
		p->alpha = attr_float(x, "alpha", 0.01f);
		return;
	case OP_HardSigmoid:
		p->alpha = attr_float(x, "alpha", 0.2f);
		p->beta = attr_float(x, "beta", 0.5f);
		return;
	case OP_Shrink:
		p->alpha = attr_float(x, "lambd", 0.5f);
		p->beta = attr_float(x, "bias", 0.0f);
		return;
	case OP_Gelu:
		attr_string(x, "approximate", "none");   /* its type */
		p->gelu_tanh = node_attr_is(n, "approximate", "tanh");
		if (node_attr(n, "approximate") && !p->gelu_tanh && !node_attr_is(n, "approximate", "none"))
			infer_fail(x, KILN_INVALID_MODEL, "approximate must be \"none\" or \"tanh\"");
		return;
	case OP_IsInf:
		p->detect_negative = attr_int(x, "detect_negative", 1) != 0;
		p->detect_positive = attr_int(x, "detect_positive", 1) != 0;
		return;
	case OP_Clip:   /* the bounds are attributes before opset 11, then inputs */
		if (n->since < 11) {
			p->has_min = node_attr(n, "min") != NULL;
			p->has_max = node_attr(n, "max") != NULL;
			p->min = attr_float(x, "min", 0.0f);
			p->max = attr_float(x, "max", 0.0f);
		}
		return;
	case OP_BitShift:
		attr_string(x, "direction", "RIGHT");   /* its type */
		if (node_attr(n, "direction") && !node_attr_is(n, "direction", "LEFT") &&
		    !node_attr_is(n, "direction", "RIGHT"))
			infer_fail(x, KILN_INVALID_MODEL, "direction must be \"LEFT\" or \"RIGHT\"");
		p->shift_left = shift_left(n);
		return;
	case OP_Mod:
		attr_int(x, "fmod", 0);   /* its type */
		p->fmod = c_style_mod(n);
		return;
	case OP_Cast: case OP_CastLike:
		p->saturate = n->since >= 19 && attr_int(x, "saturate", 1) != 0;
		return;
	}
}

void ops_elementwise_infer(Infer *x)
{
	int op = x->n->op;
	ElementwiseParams params;
	elementwise_params(x, &params);   /* checked once here; the emitters read them */
	switch (op) {
	case OP_Cast: case OP_CastLike:
		infer_cast(x);
		return;
	case OP_Add: case OP_Sub: case OP_Mul: case OP_Div: case OP_Pow: {
		Shape out;
		broadcast(x, &out, infer_shape(x, 0), infer_shape(x, 1));
		if (op != OP_Pow && infer_dtype(x, 0) != infer_dtype(x, 1))
			infer_fail(x, KILN_INVALID_MODEL, "inputs have different element types (%s, %s)",
			           dtype_name(infer_dtype(x, 0)), dtype_name(infer_dtype(x, 1)));
		infer_set_output(x, 0, infer_dtype(x, 0), &out);
		fold_binary(x, &out, op);
		return;
	}
	case OP_Where: {
		Shape t, out;
		broadcast(x, &t, infer_shape(x, 1), infer_shape(x, 2));
		broadcast(x, &out, infer_shape(x, 0), &t);
		if (infer_dtype(x, 0) != DT_BOOL)
			infer_fail(x, KILN_INVALID_MODEL, "condition must be bool, not %s",
			           dtype_name(infer_dtype(x, 0)));
		infer_set_output(x, 0, infer_dtype(x, 1), &out);
		return;
	}
	case OP_And: case OP_Or: case OP_Xor: case OP_Equal: case OP_Less: case OP_Greater:
	case OP_LessOrEqual: case OP_GreaterOrEqual: case OP_Mod: case OP_BitShift: case OP_PRelu:
	case OP_Min: case OP_Max: case OP_Sum: case OP_Mean: case OP_BitwiseAnd: case OP_BitwiseOr:
	case OP_BitwiseXor: {
		/* Broadcasting over every input (Min/Max/Sum/Mean are variadic). */
		if (x->n->nin < 1)
			infer_fail(x, KILN_INVALID_MODEL, "needs at least one input");
		Shape out = *infer_shape(x, 0);
		for (int i = 1; i < x->n->nin; i++) {
			Shape t, in = *infer_shape(x, i);
			/* PRelu before opset 7: a 1-D slope of C values is per channel (axis 1). */
			if (op == OP_PRelu && x->n->since < 7 && in.rank == 1 && out.rank > 2 &&
			    in.dims[0].size == out.dims[1].size)
				in = prelu_channel_shape(&out);
			broadcast(x, &t, &out, &in);
			out = t;
			if (op != OP_PRelu && infer_dtype(x, i) != infer_dtype(x, 0))
				infer_fail(x, KILN_INVALID_MODEL, "inputs have different element types (%s, %s)",
				           dtype_name(infer_dtype(x, 0)), dtype_name(infer_dtype(x, i)));
		}
		bool to_bool = op == OP_Equal || op == OP_Less || op == OP_Greater ||
		               op == OP_LessOrEqual || op == OP_GreaterOrEqual;
		infer_set_output(x, 0, to_bool ? DT_BOOL : infer_dtype(x, 0), &out);
		return;
	}
	case OP_IsNaN: case OP_IsInf:
		infer_set_output(x, 0, DT_BOOL, infer_shape(x, 0));
		return;
	default: {
		/* Unary: the activations and math functions, Not, Clip. */
		infer_set_output(x, 0, infer_dtype(x, 0), infer_shape(x, 0));
		/* Shape arithmetic negates and takes absolute values of small integers. */
		int64_t n;
		const int64_t *v = infer_ints(x, 0, &n);
		if (v && (op == OP_Neg || op == OP_Abs) && infer_dtype(x, 0) == DT_INT64 && n <= 4096) {
			int64_t *r = arena_array(x->a, (size_t)n + 1, sizeof *r);
			for (int64_t i = 0; i < n; i++)
				r[i] = op == OP_Neg ? (int64_t)(0 - (uint64_t)v[i]) : v[i] < 0 ? (int64_t)(0 - (uint64_t)v[i]) : v[i];
			infer_set_folded(x, 0, DT_INT64, n, r);
		}
		return;
	}
	}
}

/* Ops an elementwise chain may hold (passes/ewchain.c, emit_ewchain): on
 * float32, each is one expression of its data inputs (emit/elementwise.c)
 * or libkiln's vector kernel, reading no attribute the emitter might
 * refuse at one signature only. */
bool ewchain_op(const Node *n)
{
	switch (n->op) {
	case OP_Relu: case OP_Sigmoid: case OP_Tanh: case OP_Erf: case OP_Sqrt: case OP_Exp:
	case OP_Log: case OP_Selu: case OP_Elu: case OP_LeakyRelu: case OP_Neg: case OP_Abs:
	case OP_Floor: case OP_Ceil: case OP_Round: case OP_Reciprocal: case OP_Softplus:
	case OP_Softsign: case OP_Mish: case OP_HardSigmoid: case OP_HardSwish:
	case OP_ThresholdedRelu: case OP_Celu: case OP_Sin: case OP_Cos: case OP_Clip:
	case OP_Add: case OP_Sub: case OP_Mul: case OP_Div: case OP_Pow:
		return true;
	case OP_Max: case OP_Min: case OP_Sum: case OP_Mean:
		return n->nin >= 1 && n->nin <= EWCHAIN_MAX_OPERANDS;
	case OP_PRelu:
		return n->since >= 7;  /* older slopes broadcast by channel (emit_binary) */
	default:
		return false;
	}
}

/* The inputs a chain reads elementwise: all but Clip's bounds. */
int ewchain_data_inputs(const Node *n)
{
	return n->op == OP_Clip ? 1 : n->nin;
}

/* ---- compile-time evaluation (peval.c's PE_MAP) ------------------------- */

/* One element in double (floats) or int64_t (integers and bool; unsigned
 * where the op says so), as the op computes it. Integer arithmetic wraps. */
static double eval_neg_f(double x) { return -x; }
static double eval_abs_f(double x) { return fabs(x); }
static double eval_sign_f(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }
static double eval_floor_f(double x) { return floor(x); }
static double eval_ceil_f(double x) { return ceil(x); }
static double eval_round_f(double x) { return nearbyint(x); }   /* half to even */
static double eval_sqrt_f(double x) { return sqrt(x); }
static double eval_reciprocal_f(double x) { return 1 / x; }
static double eval_relu_f(double x) { return x > 0 ? x : 0; }
/* The transcendental ones by kiln's own functions (kernels.h), as the
 * generated C computes them, never the compiling host's libm: double as
 * the generated code's expressions, float as kiln_f32_unary (Exp, Tanh,
 * Sigmoid, Log: kiln_logf's bits) or the generated expression (Pow)
 * computes them. */
static double eval_exp_f(double x) { return kiln_exp(x); }
static double eval_log_f(double x) { return kiln_log(x); }
static double eval_sigmoid_f(double x) { return 1 / (1 + kiln_exp(-x)); }
static double eval_tanh_f(double x) { return kiln_tanh(x); }
static float eval_sigmoid_f32(float x)
{
	/* f32-vmath/body.h's v_sigmoid: e = exp(-|x|), (x < 0 ? e : 1) / (1 + e) */
	float e = kiln_expf(-fabsf(x));
	return (x < 0 ? e : 1.0f) / (1.0f + e);
}

static int64_t eval_neg_i(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
static int64_t eval_abs_i(int64_t x) { return x < 0 ? (int64_t)(0 - (uint64_t)x) : x; }
static int64_t eval_sign_i(int64_t x) { return (x > 0) - (x < 0); }
static int64_t eval_relu_i(int64_t x) { return x > 0 ? x : 0; }
static int64_t eval_not_i(int64_t x) { return !x; }
static int64_t eval_bitwise_not_i(int64_t x) { return ~x; }
static int64_t eval_same_i(int64_t x) { return x; }   /* Floor, Ceil, Round */

static double eval_add_f(double a, double b, const Node *n) { (void)n; return a + b; }
static double eval_sub_f(double a, double b, const Node *n) { (void)n; return a - b; }
static double eval_mul_f(double a, double b, const Node *n) { (void)n; return a * b; }
static double eval_div_f(double a, double b, const Node *n) { (void)n; return a / b; }
/* double: kiln_pow, as the generated C on doubles and integers */
static double eval_pow_f(double a, double b, const Node *n) { (void)n; return kiln_pow(a, b); }

static double eval_min_f(double a, double b, const Node *n)
{
	(void)n;
	return isnan(a) || isnan(b) ? (double)NAN : a < b ? a : b;
}

static double eval_max_f(double a, double b, const Node *n)
{
	(void)n;
	return isnan(a) || isnan(b) ? (double)NAN : a > b ? a : b;
}

/* Mod's fmod, read by elementwise_params and by partial evaluation. */
static bool c_style_mod(const Node *n)
{
	const Attr *a = node_attr(n, "fmod");
	return a && a->i;
}

static double eval_mod_f(double a, double b, const Node *n)
{
	double m = fmod(a, b);
	return c_style_mod(n) || m == 0 || (m < 0) == (b < 0) ? m : m + b;
}

static double eval_equal_f(double a, double b, const Node *n) { (void)n; return a == b; }
static double eval_less_f(double a, double b, const Node *n) { (void)n; return a < b; }
static double eval_greater_f(double a, double b, const Node *n) { (void)n; return a > b; }
static double eval_less_or_equal_f(double a, double b, const Node *n) { (void)n; return a <= b; }

static double eval_greater_or_equal_f(double a, double b, const Node *n)
{
	(void)n;
	return a >= b;
}

#define EVAL_I(name, expr)                                                                    \
	static bool eval_##name##_i(int64_t a, int64_t b, int64_t *r, bool uns, const Node *n)    \
	{                                                                                         \
		uint64_t ua = (uint64_t)a, ub = (uint64_t)b;                                          \
		(void)ua, (void)ub, (void)uns, (void)n;                                               \
		*r = (expr);                                                                          \
		return true;                                                                          \
	}
EVAL_I(add, (int64_t)(ua + ub))
EVAL_I(sub, (int64_t)(ua - ub))
EVAL_I(mul, (int64_t)(ua * ub))
EVAL_I(min, uns ? (int64_t)(ua < ub ? ua : ub) : a < b ? a : b)
EVAL_I(max, uns ? (int64_t)(ua > ub ? ua : ub) : a > b ? a : b)
EVAL_I(equal, a == b)
EVAL_I(less, uns ? ua < ub : a < b)
EVAL_I(greater, uns ? ua > ub : a > b)
EVAL_I(less_or_equal, uns ? ua <= ub : a <= b)
EVAL_I(greater_or_equal, uns ? ua >= ub : a >= b)
EVAL_I(bitwise_and, a & b)
EVAL_I(bitwise_or, a | b)
EVAL_I(bitwise_xor, a ^ b)
EVAL_I(and, a && b)
EVAL_I(or, a || b)
EVAL_I(xor, !a != !b)
#undef EVAL_I

static bool eval_div_i(int64_t a, int64_t b, int64_t *r, bool uns, const Node *n)
{
	(void)n;
	if (b == 0 || (a == INT64_MIN && b == -1))
		return false;
	*r = uns ? (int64_t)((uint64_t)a / (uint64_t)b) : a / b;
	return true;
}

static bool eval_mod_i(int64_t a, int64_t b, int64_t *r, bool uns, const Node *n)
{
	if (b == 0 || (a == INT64_MIN && b == -1))
		return false;
	if (uns) {
		*r = (int64_t)((uint64_t)a % (uint64_t)b);
	} else {
		int64_t m = a % b;
		*r = !c_style_mod(n) && m != 0 && ((m < 0) != (b < 0)) ? m + b : m;
	}
	return true;
}

static bool eval_pow_i(int64_t a, int64_t b, int64_t *r, bool uns, const Node *n)
{
	(void)uns, (void)n;
	if (b < 0)
		return false;
	uint64_t p = 1;
	for (int64_t k = 0; k < b && k < 64; k++)
		p *= (uint64_t)a;
	*r = (int64_t)p;
	return true;
}

/* BitShift's direction, read by elementwise_params and by partial evaluation. */
static bool shift_left(const Node *n)
{
	return node_attr_is(n, "direction", "LEFT");
}

static bool eval_bit_shift_i(int64_t a, int64_t b, int64_t *r, bool uns, const Node *n)
{
	(void)uns;
	uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
	bool left = shift_left(n);
	*r = ub >= 64 ? 0 : (int64_t)(left ? ua << ub : ua >> ub);
	return true;
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_elementwise_defs[] = {
	{.op = OP_Add, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_f2 = eval_add_f, .eval_i2 = eval_add_i, .batch = BK_ELEMENTWISE, .in_place = true,
	 .position = PX_ADD,
	 .pad = PD_ADD},
	{.op = OP_Sub, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_f2 = eval_sub_f, .eval_i2 = eval_sub_i, .batch = BK_ELEMENTWISE, .in_place = true,
	 .pad = PD_SUB},
	{.op = OP_Mul, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_f2 = eval_mul_f, .eval_i2 = eval_mul_i, .batch = BK_ELEMENTWISE, .in_place = true,
	 .pad = PD_MUL},
	{.op = OP_Div, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_f2 = eval_div_f, .eval_i2 = eval_div_i, .batch = BK_ELEMENTWISE, .in_place = true,
	 .pad = PD_DIV},
	{.op = OP_Pow, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_f2 = eval_pow_f, .eval_f32_2 = kiln_powf, .eval_i2 = eval_pow_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Where, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_WHERE,
	 .batch = BK_ELEMENTWISE, .in_place = true,
	 .pad = PD_WHERE},
	{.op = OP_Relu, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_relu_f, .eval_i1 = eval_relu_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Sigmoid, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_sigmoid_f, .eval_f32_1 = eval_sigmoid_f32, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Tanh, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_tanh_f, .eval_f32_1 = kiln_tanhf, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Selu, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Elu, .infer = ops_elementwise_infer, .emit = emit_unary, .batch = BK_ELEMENTWISE,
	 .in_place = true},
	{.op = OP_LeakyRelu, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Erf, .infer = ops_elementwise_infer, .emit = emit_unary, .batch = BK_ELEMENTWISE,
	 .in_place = true, .types = OT_FLOATS},
	{.op = OP_Sqrt, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_sqrt_f, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Exp, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_exp_f, .eval_f32_1 = kiln_expf, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Log, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_log_f, .eval_f32_1 = kiln_logf, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Clip, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_CLIP,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Cast, .infer = ops_elementwise_infer, .emit = emit_cast, .peval = PE_CAST,
	 .batch = BK_ELEMENTWISE, .in_place = true, .narrow_types = true,
	 .pad = PD_PASS_INDEX,
	 .note = "bfloat16 rounds to nearest even (see tests/conformance/known-differences.txt); "
	         "also the four float8 types (opset 19, saturate; bit-exact) and int4/uint4 (21; "
	         "into them as ONNX Runtime: rounded half away from zero, then the low four bits)"},
	{.op = OP_Neg, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_neg_f, .eval_i1 = eval_neg_i, .batch = BK_ELEMENTWISE, .in_place = true,
	 .pad = PD_NEG},
	{.op = OP_Abs, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_abs_f, .eval_i1 = eval_abs_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Floor, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_floor_f, .eval_i1 = eval_same_i, .batch = BK_ELEMENTWISE,
	 .in_place = true},
	{.op = OP_Ceil, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_ceil_f, .eval_i1 = eval_same_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Round, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_round_f, .eval_i1 = eval_same_i, .batch = BK_ELEMENTWISE,
	 .in_place = true},
	{.op = OP_Sign, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_sign_f, .eval_i1 = eval_sign_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Reciprocal, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_f1 = eval_reciprocal_f, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Sin, .infer = ops_elementwise_infer, .emit = emit_unary, .batch = BK_ELEMENTWISE,
	 .in_place = true},
	{.op = OP_Cos, .infer = ops_elementwise_infer, .emit = emit_unary, .batch = BK_ELEMENTWISE,
	 .in_place = true},
	{.op = OP_Tan, .infer = ops_elementwise_infer, .emit = emit_unary, .batch = BK_ELEMENTWISE,
	 .in_place = true},
	{.op = OP_Asin, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Acos, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Atan, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Sinh, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Cosh, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Asinh, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Acosh, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Atanh, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Softplus, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Softsign, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Mish, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Gelu, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_BitwiseAnd, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_i2 = eval_bitwise_and_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_BitwiseOr, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_i2 = eval_bitwise_or_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_BitwiseXor, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_i2 = eval_bitwise_xor_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_BitwiseNot, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_i1 = eval_bitwise_not_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_HardSigmoid, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_HardSwish, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_ThresholdedRelu, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Celu, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Not, .infer = ops_elementwise_infer, .emit = emit_unary, .peval = PE_MAP,
	 .eval_i1 = eval_not_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_IsNaN, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .peval = PE_IS_NAN, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_IsInf, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .peval = PE_IS_INF, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_And, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_i2 = eval_and_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Or, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_i2 = eval_or_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Xor, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_i2 = eval_xor_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Equal, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_f2 = eval_equal_f, .eval_i2 = eval_equal_i, .batch = BK_ELEMENTWISE,
	 .in_place = true},
	{.op = OP_Less, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_f2 = eval_less_f, .eval_i2 = eval_less_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Greater, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_f2 = eval_greater_f, .eval_i2 = eval_greater_i, .batch = BK_ELEMENTWISE,
	 .in_place = true},
	{.op = OP_LessOrEqual, .infer = ops_elementwise_infer, .emit = emit_binary,
	 .peval = PE_MAP, .eval_f2 = eval_less_or_equal_f, .eval_i2 = eval_less_or_equal_i,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_GreaterOrEqual, .infer = ops_elementwise_infer, .emit = emit_binary,
	 .peval = PE_MAP, .eval_f2 = eval_greater_or_equal_f, .eval_i2 = eval_greater_or_equal_i,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Mod, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_f2 = eval_mod_f, .eval_i2 = eval_mod_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_BitShift, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_i2 = eval_bit_shift_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_PRelu, .infer = ops_elementwise_infer, .emit = emit_binary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Min, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_f2 = eval_min_f, .eval_i2 = eval_min_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Max, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_f2 = eval_max_f, .eval_i2 = eval_max_i, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_Sum, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MAP,
	 .eval_f2 = eval_add_f, .eval_i2 = eval_add_i, .batch = BK_ELEMENTWISE, .in_place = true,
	 .pad = PD_SUM},
	{.op = OP_Mean, .infer = ops_elementwise_infer, .emit = emit_binary, .peval = PE_MEAN,
	 .eval_f2 = eval_add_f, .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = OP_CastLike, .infer = ops_elementwise_infer, .emit = emit_cast, .peval = PE_CAST,
	 .batch = BK_ELEMENTWISE, .shape_inputs = 1u << 1, .in_place = true, .narrow_types = true,
	 .note = "as Cast: float8 (opset 19) and int4/uint4 (21)"},
	{.op = OP_Shrink, .infer = ops_elementwise_infer, .emit = emit_unary,
	 .batch = BK_ELEMENTWISE, .in_place = true},
	{.op = NONE},
};
