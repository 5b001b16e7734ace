/*
 * peval.c - partial evaluation: a node whose inputs are all known at compile
 * time is computed at compile time.
 *
 * Known values are weights, Constant outputs, Shape outputs, frozen inputs
 * (--freeze) and everything computed from them; each signature has its own
 * (shape.c's Sig.folded), so values that depend on the batch size are
 * evaluated per signature. Exporters compute shapes from shapes through any
 * op (PyTorch's expand is Equal -> Where on a shape, tril_indices is
 * ConstantOfShape -> Trilu -> NonZero, TensorFlow's Tensordot goes through
 * Cast(int32) -> Gather -> ReduceProd, a Slice end through Cast(float) -> Min),
 * so this is one evaluator for the ops' semantics over every integer, bool
 * and float type, not a list of patterns.
 *
 * It runs after the op's inference hook (shape.c), which has checked the node
 * and set the outputs' shapes and types: the evaluator only fills in values.
 * Hooks that fold themselves (Shape, Concat of int64, NonZero, ...) go first;
 * ops not listed here, or results too large, are left to run time, unless a
 * hook needs the value (peval_demand: NonZero of a [P, P] Trilu mask at
 * P > 64 is larger than routine folding keeps).
 * Arithmetic follows the generated code: integers wrap in two's complement,
 * integer division truncates, float32 results are rounded to float32. A
 * division by zero or an index out of range is not folded, so the run-time
 * op reports it as it would anyway.
 *
 * A folded value that only decides shapes never reaches the weights object:
 * emit_c.c stores a folded value only when a node computed at run time reads
 * its contents.
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "kiln/kernels.h"
#include "opdef.h"

/* Results are shape arithmetic, indices and masks: small. Larger float
 * results are left to fold.c, which weighs the weight bytes. */
enum { MAX_ELEMS = 4096, MAX_INT_ELEMS = 1 << 16, MAX_IN_ELEMS = 1 << 20 };
/* On demand (peval_demand): results up to DEMAND_ELEMS elements, through at
 * most DEMAND_NODES producers DEMAND_DEPTH deep. */
enum { DEMAND_ELEMS = 1 << 18, DEMAND_NODES = 64, DEMAND_DEPTH = 16 };

typedef struct Arg {
	int dt;
	const Shape *s;
	int64_t n;
	const unsigned char *p;
} Arg;

static bool is_float(int dt)
{
	return dt == DT_FLOAT || dt == DT_DOUBLE || dt == DT_FLOAT16 || dt == DT_BFLOAT16;
}

static bool is_unsigned(int dt)
{
	return dt == DT_UINT8 || dt == DT_UINT16 || dt == DT_UINT32 || dt == DT_UINT64 ||
	       dt == DT_BOOL;
}

/* Element k as an integer (exact for every integer type; floats truncate). */
static int64_t get_i(const Arg *a, int64_t k)
{
	const unsigned char *p = a->p + (size_t)k * dtype_size(a->dt);
	union { int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32; uint32_t u32;
	        int64_t i64; } v;
	switch (a->dt) {
	case DT_INT8: memcpy(&v.i8, p, 1); return v.i8;
	case DT_UINT8: case DT_BOOL: memcpy(&v.u8, p, 1); return v.u8;
	case DT_INT16: memcpy(&v.i16, p, 2); return v.i16;
	case DT_UINT16: memcpy(&v.u16, p, 2); return v.u16;
	case DT_INT32: memcpy(&v.i32, p, 4); return v.i32;
	case DT_UINT32: memcpy(&v.u32, p, 4); return v.u32;
	case DT_INT64: case DT_UINT64: memcpy(&v.i64, p, 8); return v.i64;
	default: {
		double f = folded_elem(a->dt, a->p, k);
		return isnan(f) ? INT64_MIN : f >= 0x1p63 ? INT64_MAX : f < -0x1p63 ? INT64_MIN
		                                                                     : (int64_t)f;
	}
	}
}

static double get_f(const Arg *a, int64_t k)
{
	return folded_elem(a->dt, a->p, k);
}

/* Store v in element k of out, converting as Cast does (wrapping). */
static void put_i(int dt, void *out, int64_t k, int64_t v)
{
	unsigned char *p = (unsigned char *)out + (size_t)k * dtype_size(dt);
	union { float f; double d; int8_t i8; int16_t i16; int32_t i32; uint16_t u16; } u;
	switch (dt) {
	case DT_BOOL: *p = v != 0; break;
	case DT_INT8: case DT_UINT8: u.i8 = (int8_t)(uint8_t)v; memcpy(p, &u.i8, 1); break;
	case DT_INT16: case DT_UINT16: u.i16 = (int16_t)(uint16_t)v; memcpy(p, &u.i16, 2); break;
	case DT_INT32: case DT_UINT32: u.i32 = (int32_t)(uint32_t)v; memcpy(p, &u.i32, 4); break;
	case DT_INT64: case DT_UINT64: memcpy(p, &v, 8); break;
	case DT_FLOAT: u.f = (float)v; memcpy(p, &u.f, 4); break;
	case DT_DOUBLE: u.d = (double)v; memcpy(p, &u.d, 8); break;
	case DT_FLOAT16: u.u16 = kiln_f32_to_f16((float)v); memcpy(p, &u.u16, 2); break;
	case DT_BFLOAT16: u.u16 = kiln_f32_to_bf16((float)v); memcpy(p, &u.u16, 2); break;
	default: break;
	}
}

static void put_f(int dt, void *out, int64_t k, double v)
{
	unsigned char *p = (unsigned char *)out + (size_t)k * dtype_size(dt);
	union { float f; double d; uint16_t u16; } u;
	switch (dt) {
	case DT_FLOAT: u.f = (float)v; memcpy(p, &u.f, 4); break;
	case DT_DOUBLE: u.d = v; memcpy(p, &u.d, 8); break;
	case DT_FLOAT16: u.u16 = kiln_f32_to_f16((float)v); memcpy(p, &u.u16, 2); break;
	case DT_BFLOAT16: u.u16 = kiln_f32_to_bf16((float)v); memcpy(p, &u.u16, 2); break;
	case DT_BOOL: *p = v != 0; break;
	default:
		/* Float to integer truncates toward zero; out of range saturates. */
		put_i(dt, out, k, isnan(v) ? 0 : v >= 0x1p63 ? INT64_MAX : v < -0x1p63 ? INT64_MIN
		                                                                        : (int64_t)v);
		break;
	}
}

/* Round a float result to its storage type, as the generated code computes it. */
static double round_to(int dt, double v)
{
	return dt == DT_FLOAT || dt == DT_FLOAT16 || dt == DT_BFLOAT16 ? (double)(float)v : v;
}

/* ---- indexing --------------------------------------------------------- */

static void strides(const Shape *s, int64_t *st)
{
	int64_t acc = 1;
	for (int k = s->rank - 1; k >= 0; k--) {
		st[k] = acc;
		acc *= s->dims[k].size;
	}
}

static void coords(const Shape *s, int64_t linear, int64_t *c)
{
	for (int k = s->rank - 1; k >= 0; k--) {
		c[k] = s->dims[k].size ? linear % s->dims[k].size : 0;
		linear = s->dims[k].size ? linear / s->dims[k].size : 0;
	}
}

/* ---- elementwise ------------------------------------------------------ */

static bool eval_cast(const Arg *in, int ydt, int64_t ny, void *y)
{
	bool fl = is_float(in[0].dt), uns = is_unsigned(in[0].dt);
	for (int64_t k = 0; k < ny; k++)
		if (fl)
			put_f(ydt, y, k, get_f(&in[0], k));
		else if (uns && in[0].dt == DT_UINT64 && is_float(ydt))
			put_f(ydt, y, k, (double)(uint64_t)get_i(&in[0], k));
		else
			put_i(ydt, y, k, get_i(&in[0], k));
	return true;
}

static bool eval_where(const Arg *in, int ydt, const Shape *ys, void *y)
{
	for (int64_t k = 0; k < shape_nelem(ys); k++) {
		bool c = get_i(&in[0], bcast_index(ys, in[0].s, k)) != 0;
		const Arg *src = c ? &in[1] : &in[2];
		size_t esz = dtype_size(ydt);
		memcpy((unsigned char *)y + (size_t)k * esz,
		       src->p + (size_t)bcast_index(ys, src->s, k) * esz, esz);
	}
	return true;
}

static bool eval_is_nan_inf(Infer *x, bool nan, const Arg *in, int ydt, int64_t ny, void *y)
{
	ElementwiseParams p;
	elementwise_params(x, &p);
	for (int64_t k = 0; k < ny; k++) {
		double v = get_f(&in[0], k);
		put_i(ydt, y, k, nan ? isnan(v)
		                 : isinf(v) && ((v > 0 && p.detect_positive) ||
		                                (v < 0 && p.detect_negative)));
	}
	return true;
}

static bool eval_clip(Infer *x, const Arg *in, int nin, int ydt, int64_t ny, void *y)
{
	/* Bounds: inputs 1 and 2 from opset 11, attributes before. */
	bool fl = is_float(in[0].dt);
	bool has_lo = nin > 1 && in[1].p, has_hi = nin > 2 && in[2].p;
	ElementwiseParams p;
	elementwise_params(x, &p);
	double lo_a = p.has_min ? (double)p.min : -(double)INFINITY;
	double hi_a = p.has_max ? (double)p.max : (double)INFINITY;
	for (int64_t k = 0; k < ny; k++) {
		if (fl) {
			double v = get_f(&in[0], k);
			double lo = has_lo ? get_f(&in[1], 0) : lo_a, hi = has_hi ? get_f(&in[2], 0) : hi_a;
			v = v < lo ? lo : v;
			put_f(ydt, y, k, v > hi ? hi : v);
		} else {
			int64_t v = get_i(&in[0], k);
			if (has_lo && v < get_i(&in[1], 0))
				v = get_i(&in[1], 0);
			if (has_hi && v > get_i(&in[2], 0))
				v = get_i(&in[2], 0);
			put_i(ydt, y, k, v);
		}
	}
	return true;
}

/* Unary and binary ops by the record's scalar functions; the variadic
 * Min/Max/Sum/Mean folded left to right (Mean: the sum, then divided). */
static bool eval_map(Infer *x, const OpDef *d, const Arg *in, int nin, int ydt, const Shape *ys,
                     void *y)
{
	const Node *n = x->n;
	int64_t ny = shape_nelem(ys);
	int cdt = in[0].dt;  /* the type the op computes in */
	bool fl = is_float(cdt), uns = is_unsigned(cdt), mean = d->peval == PE_MEAN;
	if (ny == 0)
		return true;
	if (fl && cdt != DT_DOUBLE && (nin == 1 ? d->eval_f32_1 != NULL : nin == 2 && d->eval_f32_2 != NULL)) {
		/* float32 (and the 16-bit floats, computed in float) by kiln's
		 * float functions, as the runtime computes them */
		for (int64_t k = 0; k < ny; k++) {
			float a = (float)get_f(&in[0], bcast_index(ys, in[0].s, k));
			float v = nin == 1 ? d->eval_f32_1(a)
			          : d->eval_f32_2(a, (float)get_f(&in[1], bcast_index(ys, in[1].s, k)));
			put_f(ydt, y, k, (double)v);
		}
		return true;
	}
	if (nin == 1) {
		if (fl ? !d->eval_f1 : !d->eval_i1)
			return false;
		for (int64_t k = 0; k < ny; k++)
			if (fl)
				put_f(ydt, y, k, d->eval_f1(get_f(&in[0], k)));
			else
				put_i(ydt, y, k, d->eval_i1(get_i(&in[0], k)));
		return true;
	}
	if (fl ? !d->eval_f2 : !d->eval_i2 || mean)
		return false;
	for (int64_t k = 0; k < ny; k++) {
		if (fl) {
			double acc = get_f(&in[0], bcast_index(ys, in[0].s, k));
			for (int i = 1; i < nin; i++) {
				double b = get_f(&in[i], bcast_index(ys, in[i].s, k));
				acc = round_to(cdt, d->eval_f2(acc, b, n));
			}
			put_f(ydt, y, k, mean ? acc / nin : acc);
		} else {
			int64_t acc = get_i(&in[0], bcast_index(ys, in[0].s, k));
			for (int i = 1; i < nin; i++) {
				int64_t b = get_i(&in[i], bcast_index(ys, in[i].s, k));
				if (!d->eval_i2(acc, b, &acc, uns, n))
					return false;
			}
			put_i(ydt, y, k, acc);
		}
	}
	return true;
}

/* ---- reductions ------------------------------------------------------- */

static bool eval_reduce(Infer *x, ReduceKind rk, const Arg *in, int ydt, int64_t ny, void *y)
{
	const Shape *s = in[0].s;
	/* the reduced axes, from the axes attribute or input 1 (known here) */
	ReduceParams rp;
	reduce_params(x, &rp);
	unsigned mask = 0;
	bool noop = rp.noop;
	for (int k = 0; k < s->rank; k++)
		mask |= rp.reduce[k] ? 1u << k : 0;
	int64_t ost[KILN_MAX_RANK], c[KILN_MAX_RANK];
	/* Strides of the kept axes in the output (keepdims or not, same order). */
	int64_t acc = 1;
	for (int k = s->rank - 1; k >= 0; k--) {
		ost[k] = mask & (1u << k) ? 0 : acc;
		acc *= mask & (1u << k) ? 1 : s->dims[k].size;
	}
	if (acc != ny)
		return false;
	bool fl = is_float(in[0].dt) || rk == RD_MEAN || rk == RD_L2 ||
	          rk == RD_LOG_SUM_EXP || rk == RD_LOG_SUM;
	double *accf = arena_array(x->a, (size_t)ny + 1, sizeof *accf);
	int64_t *acci = arena_array(x->a, (size_t)ny + 1, sizeof *acci);
	int64_t *cnt = arena_array(x->a, (size_t)ny + 1, sizeof *cnt);
	for (int64_t k = 0; k < in[0].n; k++) {
		coords(s, k, c);
		int64_t o = 0;
		for (int a = 0; a < s->rank; a++)
			o += c[a] * ost[a];
		if (noop)
			o = k;
		double v = get_f(&in[0], k);
		int64_t vi = get_i(&in[0], k);
		bool first = cnt[o]++ == 0;
		switch (rk) {
		case RD_SUM: case RD_MEAN:
			accf[o] += v;
			acci[o] = (int64_t)((uint64_t)acci[o] + (uint64_t)vi);
			break;
		case RD_PROD:
			accf[o] = first ? v : accf[o] * v;
			acci[o] = first ? vi : (int64_t)((uint64_t)acci[o] * (uint64_t)vi);
			break;
		case RD_MIN:
			accf[o] = first || v < accf[o] || isnan(v) ? v : accf[o];
			acci[o] = first || vi < acci[o] ? vi : acci[o];
			break;
		case RD_MAX:
			accf[o] = first || v > accf[o] || isnan(v) ? v : accf[o];
			acci[o] = first || vi > acci[o] ? vi : acci[o];
			break;
		case RD_L1:
			accf[o] += fabs(v);
			acci[o] = (int64_t)((uint64_t)acci[o] + (vi < 0 ? 0 - (uint64_t)vi : (uint64_t)vi));
			break;
		case RD_L2: case RD_SUM_SQUARE:
			accf[o] += v * v;
			acci[o] = (int64_t)((uint64_t)acci[o] + (uint64_t)vi * (uint64_t)vi);
			break;
		case RD_LOG_SUM: accf[o] += v; break;
		case RD_LOG_SUM_EXP: accf[o] += kiln_exp(v); break;
		default: return false;
		}
	}
	for (int64_t o = 0; o < ny; o++) {
		if (cnt[o] == 0 && (rk == RD_MIN || rk == RD_MAX))
			return false;  /* an empty reduction: leave it to run time */
		double f = accf[o];
		if (rk == RD_MEAN)
			f = cnt[o] ? f / (double)cnt[o] : (double)NAN;
		else if (rk == RD_L2)
			f = sqrt(f);
		else if (rk == RD_LOG_SUM || rk == RD_LOG_SUM_EXP)
			f = kiln_log(f);   /* as the generated C: kiln's, not the host's libm */
		if (fl)
			put_f(ydt, y, o, f);
		else
			put_i(ydt, y, o, acci[o]);
	}
	return true;
}

static bool eval_argminmax(Infer *x, const Arg *in, int ydt, const Shape *ys, void *y)
{
	const Shape *s = in[0].s;
	ReduceParams rp;
	reduce_params(x, &rp);
	int axis = rp.axis;
	bool last = rp.select_last_index;
	bool is_max = op_def(x->n->op)->reduce == RD_MAX;
	int64_t len = s->dims[axis].size, inner = 1;
	for (int k = axis + 1; k < s->rank; k++)
		inner *= s->dims[k].size;
	int64_t ny = shape_nelem(ys);
	if (len == 0)
		return false;
	for (int64_t o = 0; o < ny; o++) {
		int64_t outer = o / inner, i = o % inner, best = 0;
		int64_t base = outer * len * inner + i;
		for (int64_t j = 1; j < len; j++) {
			double v = get_f(&in[0], base + j * inner), b = get_f(&in[0], base + best * inner);
			bool better = is_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
			if (better)
				best = j;
		}
		put_i(ydt, y, o, best);
	}
	return true;
}

/* ---- data movement ---------------------------------------------------- */

static void copy_elem(void *y, int64_t k, const Arg *a, int64_t src)
{
	size_t esz = dtype_size(a->dt);
	memcpy((unsigned char *)y + (size_t)k * esz, a->p + (size_t)src * esz, esz);
}

static bool eval_gather(Infer *x, const Arg *in, const Shape *ys, void *y)
{
	const Shape *ds = in[0].s;
	TensorParams tp;
	tensor_params(x, &tp);
	int axis = tp.axis;
	int64_t len = ds->dims[axis].size, inner = 1;
	for (int k = axis + 1; k < ds->rank; k++)
		inner *= ds->dims[k].size;
	int64_t ni = in[1].n, ny = shape_nelem(ys);
	for (int64_t o = 0; o < ny; o++) {
		int64_t i = o % inner, rest = o / inner;
		int64_t j = rest % (ni ? ni : 1), outer = rest / (ni ? ni : 1);
		int64_t idx = get_i(&in[1], j);
		if (idx < -len || idx >= len)
			return false;
		if (idx < 0)
			idx += len;
		copy_elem(y, o, &in[0], (outer * len + idx) * inner + i);
	}
	return true;
}

static bool eval_slice(Infer *x, const Arg *in, int nin, const Shape *ys, void *y)
{
	const Shape *s = in[0].s;
	int rank = s->rank;
	int64_t start[KILN_MAX_RANK] = {0}, step[KILN_MAX_RANK];
	for (int k = 0; k < rank; k++)
		step[k] = 1;
	int64_t st[KILN_MAX_RANK];
	int64_t nax;
	const Arg *starts = nin > 1 && in[1].p ? &in[1] : NULL;
	const Arg *axes = nin > 3 && in[3].p ? &in[3] : NULL, *steps = nin > 4 && in[4].p ? &in[4]
	                                                                                   : NULL;
	TensorParams tp;   /* before opset 10: starts, ends and axes are attributes */
	tensor_params(x, &tp);
	nax = starts ? starts->n : x->n->since < 10 ? tp.nstarts : -1;
	if (nax < 0 || nax > rank)
		return false;
	for (int64_t j = 0; j < nax; j++) {
		int64_t a = axes ? get_i(axes, j) : tp.naxes >= 0 && !starts ? tp.axes[j] : j;
		if (a < -rank || a >= rank)
			return false;
		a = a < 0 ? a + rank : a;
		int64_t dim = s->dims[a].size, sp = steps ? get_i(steps, j) : 1;
		int64_t b = starts ? get_i(starts, j) : tp.starts[j];
		if (sp == 0)
			return false;
		if (b < 0)
			b += dim;
		if (sp > 0)
			b = b < 0 ? 0 : b > dim ? dim : b;
		else
			b = b < 0 ? 0 : b > dim - 1 ? dim - 1 : b;
		start[a] = b;
		step[a] = sp;
	}
	strides(s, st);
	int64_t c[KILN_MAX_RANK], ny = shape_nelem(ys);
	for (int64_t o = 0; o < ny; o++) {
		coords(ys, o, c);
		int64_t src = 0;
		for (int k = 0; k < rank; k++)
			src += (start[k] + c[k] * step[k]) * st[k];
		copy_elem(y, o, &in[0], src);
	}
	return true;
}

static bool eval_concat(Infer *x, const Arg *in, int nin, const Shape *ys, void *y)
{
	TensorParams tp;
	tensor_params(x, &tp);
	int axis = tp.axis;
	int64_t inner = 1, outer = 1, o = 0;
	for (int k = axis + 1; k < ys->rank; k++)
		inner *= ys->dims[k].size;
	for (int k = 0; k < axis; k++)
		outer *= ys->dims[k].size;
	for (int64_t b = 0; b < outer; b++)
		for (int i = 0; i < nin; i++) {
			if (!in[i].p)
				continue;
			int64_t chunk = in[i].s->dims[axis].size * inner;
			for (int64_t k = 0; k < chunk; k++)
				copy_elem(y, o++, &in[i], b * chunk + k);
		}
	return o == shape_nelem(ys);
}

static bool eval_transpose(Infer *x, const Arg *in, const Shape *ys, void *y)
{
	const Shape *s = in[0].s;
	int64_t st[KILN_MAX_RANK], c[KILN_MAX_RANK];
	TensorParams tp;   /* perm: the attribute, or the axes reversed */
	tensor_params(x, &tp);
	const int64_t *perm = tp.perm;
	strides(s, st);
	for (int64_t o = 0; o < shape_nelem(ys); o++) {
		coords(ys, o, c);
		int64_t src = 0;
		for (int k = 0; k < ys->rank; k++)
			src += c[k] * st[perm[k]];
		copy_elem(y, o, &in[0], src);
	}
	return true;
}

static bool eval_tile(const Arg *in, const Shape *ys, void *y)
{
	const Shape *s = in[0].s;
	int64_t st[KILN_MAX_RANK], c[KILN_MAX_RANK];
	strides(s, st);
	for (int64_t o = 0; o < shape_nelem(ys); o++) {
		coords(ys, o, c);
		int64_t src = 0;
		for (int k = 0; k < s->rank; k++)
			src += (c[k] % s->dims[k].size) * st[k];
		copy_elem(y, o, &in[0], src);
	}
	return true;
}

static bool eval_trilu(Infer *x, const Arg *in, int nin, const Shape *ys, void *y)
{
	int64_t kk = nin > 1 && in[1].p ? get_i(&in[1], 0) : 0;
	TensorParams tp;
	tensor_params(x, &tp);
	bool upper = tp.upper;
	int r = ys->rank;
	if (r < 2)
		return false;
	int64_t rows = ys->dims[r - 2].size, cols = ys->dims[r - 1].size;
	for (int64_t o = 0; o < shape_nelem(ys); o++) {
		int64_t j = o % cols, i = (o / cols) % rows;
		bool keep = upper ? j - i >= kk : j - i <= kk;
		if (keep)
			copy_elem(y, o, &in[0], o);
		else
			memset((unsigned char *)y + (size_t)o * dtype_size(in[0].dt), 0, dtype_size(in[0].dt));
	}
	return true;
}

/* ConstantOfShape: its hook folds small results; larger ones on demand. */
static bool eval_constant_of_shape(Infer *x, int ydt, int64_t ny, void *y)
{
	TensorParams tp;   /* value: one element, checked */
	tensor_params(x, &tp);
	static const float zero;
	const void *one = &zero;
	if (tp.value) {
		if (tp.value->dtype != ydt)
			return false;
		one = tp.value->w.bytes;
	} else if (ydt != DT_FLOAT) {
		return false;
	}
	size_t es = dtype_size(ydt);
	for (int64_t k = 0; k < ny; k++)
		memcpy((unsigned char *)y + (size_t)k * es, one, es);
	return true;
}

static bool eval_range(const Arg *in, int ydt, const Shape *ys, void *y)
{
	for (int64_t k = 0; k < shape_nelem(ys); k++)
		if (is_float(ydt))
			put_f(ydt, y, k, round_to(ydt, get_f(&in[0], 0) + (double)k * get_f(&in[2], 0)));
		else
			put_i(ydt, y, k, (int64_t)((uint64_t)get_i(&in[0], 0) +
			                           (uint64_t)k * (uint64_t)get_i(&in[2], 0)));
	return true;
}

static bool eval_cumsum(Infer *x, const Arg *in, int ydt, const Shape *ys, void *y)
{
	int axis = infer_axis(x, get_i(&in[1], 0), ys->rank, "axis");
	ReduceParams rp;
	reduce_params(x, &rp);
	bool excl = rp.exclusive, rev = rp.reverse;
	int64_t len = ys->dims[axis].size, inner = 1, ny = shape_nelem(ys);
	for (int k = axis + 1; k < ys->rank; k++)
		inner *= ys->dims[k].size;
	bool fl = is_float(ydt);
	for (int64_t o = 0; o < ny; o++) {
		if (len == 0 || (o / inner) % len != 0)
			continue;  /* start each line at its first element */
		double af = 0;
		int64_t ai = 0;
		for (int64_t j = 0; j < len; j++) {
			int64_t e = o + (rev ? len - 1 - j : j) * inner;
			if (!excl) {
				af = round_to(ydt, af + get_f(&in[0], e));
				ai = (int64_t)((uint64_t)ai + (uint64_t)get_i(&in[0], e));
			}
			if (fl)
				put_f(ydt, y, e, af);
			else
				put_i(ydt, y, e, ai);
			if (excl) {
				af = round_to(ydt, af + get_f(&in[0], e));
				ai = (int64_t)((uint64_t)ai + (uint64_t)get_i(&in[0], e));
			}
		}
	}
	return true;
}

/* ---- the entry -------------------------------------------------------- */

static bool evaluable(int op)
{
	const OpDef *d = op_def(op);
	return d && d->peval != PE_NONE;
}

/* Evaluate x's node if its inputs are known and its result has at most
 * max_float (float types) or max_int elements; false if it was not. */
static bool evaluate(Infer *x, int64_t max_float, int64_t max_int)
{
	Node *n = x->n;
	Sig *s = x->sig;
	if (n->domain_id != DOMAIN_ONNX || n->nout != 1 || n->out[0] == NONE || n->nin < 1 ||
	    !evaluable(n->op) || s->folded[n->out[0]])
		return false;
	int yid = n->out[0], ydt = s->dtypes[yid];
	const Shape *ys = &s->shapes[yid];
	int64_t ny = shape_nelem(ys);
	if (ny < 0 || !dtype_size(ydt) || ydt == DT_STRING || DT_IS_FLOAT8(ydt) || DT_IS_4BIT(ydt) ||
	    ny > (is_float(ydt) ? max_float : max_int))
		return false;
	Arg in[16];
	int nin = n->nin;
	if (nin > 16)
		return false;
	for (int i = 0; i < nin; i++) {
		in[i] = (Arg){0};
		if (n->in[i] == NONE)
			continue;
		const Folded *f = infer_folded(x, i);
		if (!f || f->dtype == DT_STRING || !dtype_size(f->dtype) || DT_IS_FLOAT8(f->dtype) ||
		    DT_IS_4BIT(f->dtype) ||
		    f->nelem > MAX_IN_ELEMS ||
		    f->nelem != shape_nelem(infer_shape(x, i)))
			return false;
		in[i] = (Arg){f->dtype, infer_shape(x, i), f->nelem, f->data};
	}
	if (!in[0].p)
		return false;
	void *y = arena_alloc(x->a, (size_t)(ny ? ny : 1) * dtype_size(ydt));
	bool ok;
	const OpDef *d = op_def(n->op);
	switch (d->peval) {
	case PE_SAME_BYTES:
		ok = ny == in[0].n && ydt == in[0].dt;
		if (ok)
			memcpy(y, in[0].p, (size_t)ny * dtype_size(ydt));
		break;
	case PE_BROADCAST:
		ok = ydt == in[0].dt;
		for (int64_t k = 0; ok && k < ny; k++)
			copy_elem(y, k, &in[0], bcast_index(ys, in[0].s, k));
		break;
	case PE_MAP: case PE_MEAN: ok = eval_map(x, d, in, nin, ydt, ys, y); break;
	case PE_CAST: ok = eval_cast(in, ydt, ny, y); break;
	case PE_WHERE: ok = eval_where(in, ydt, ys, y); break;
	case PE_CLIP: ok = eval_clip(x, in, nin, ydt, ny, y); break;
	case PE_IS_NAN: case PE_IS_INF:
		ok = eval_is_nan_inf(x, d->peval == PE_IS_NAN, in, ydt, ny, y);
		break;
	case PE_REDUCE: ok = eval_reduce(x, d->reduce, in, ydt, ny, y); break;
	case PE_ARG_EXTREMUM: ok = eval_argminmax(x, in, ydt, ys, y); break;
	case PE_GATHER: ok = nin > 1 && in[1].p && eval_gather(x, in, ys, y); break;
	case PE_SLICE: ok = eval_slice(x, in, nin, ys, y); break;
	case PE_CONCAT: ok = eval_concat(x, in, nin, ys, y); break;
	case PE_TRANSPOSE: ok = eval_transpose(x, in, ys, y); break;
	case PE_TILE: ok = eval_tile(in, ys, y); break;
	case PE_TRILU: ok = eval_trilu(x, in, nin, ys, y); break;
	case PE_RANGE: ok = nin == 3 && in[2].p && eval_range(in, ydt, ys, y); break;
	case PE_CUMSUM: ok = nin > 1 && in[1].p && eval_cumsum(x, in, ydt, ys, y); break;
	case PE_CONSTANT_OF_SHAPE: ok = eval_constant_of_shape(x, ydt, ny, y); break;
	default: ok = false; break;
	}
	if (ok)
		infer_set_folded(x, 0, ydt, ny, y);
	return ok;
}

void peval_node(Infer *x)
{
	/* ConstantOfShape's hook has folded it if it is small. */
	const OpDef *d = op_def(x->n->op);
	if (!d || d->peval != PE_CONSTANT_OF_SHAPE)
		evaluate(x, MAX_ELEMS, MAX_INT_ELEMS);
}

/* On demand: a hook needs a value whose producer was not folded because its
 * result was too large to keep routinely (tril_indices builds a [P, P] mask
 * with ConstantOfShape, then Trilu, only for NonZero to read). The producers
 * are evaluated again, depth first, with a larger limit; a chain that
 * reaches an unknown value (a graph input, an op not evaluated here) gives
 * up after a bounded number of nodes. Results stay folded in the signature,
 * so nothing is evaluated twice. */
static const Folded *demand(Infer *x, int id, int depth, int *budget)
{
	Sig *s = x->sig;
	if (s->folded[id])
		return s->folded[id];
	const Value *v = &x->g->values[id];
	if (v->kind != VAL_TEMP || v->producer == NONE || depth > DEMAND_DEPTH || --*budget < 0)
		return NULL;
	Node *p = &x->g->nodes[v->producer];
	if (!evaluable(p->op) || p->nout != 1 || shape_nelem(&s->shapes[id]) > DEMAND_ELEMS)
		return NULL;
	Infer y = {.sig = s, .g = x->g, .n = p, .d = x->d, .a = x->a, .demand = x->demand};
	for (int k = 0; k < p->nin; k++)
		if (infer_has_input(&y, k) && !infer_folded(&y, k) &&
		    !demand(&y, p->in[k], depth + 1, budget))
			return NULL;
	return evaluate(&y, DEMAND_ELEMS, DEMAND_ELEMS) ? s->folded[id] : NULL;
}

const Folded *peval_demand(Infer *x, int id)
{
	int budget = DEMAND_NODES;
	return demand(x, id, 0, &budget);
}
