/*
 * padproof.c - prove that zero-padding a symbolic inner dim (the particles
 * of a jet, the tokens of a sequence) cannot change the outputs at the real
 * positions, so that a model compiled at a few sizes of that dim (buckets)
 * may run every sample at the smallest bucket that holds it.
 *
 * The property proved, for a sample of length L >= 1 (positions 0..L-1 real,
 * the rest padding: features 0, mask inputs 0) and the minimum M the proof
 * finds (TopK's k over the dim, else 1):
 *
 *   the outputs at real positions, and the outputs without that dim, are
 *   the same for every bucket size B >= max(L, M).
 *
 * For L >= M that is the model evaluated at exactly L. It holds when every
 * value is *stable*: its entries whose coordinates on the padded axes are
 * all real do not depend on B. The pass infers shapes at batch 1 and two
 * probe sizes of the dim, finds the padded axes of every value from them
 * (extent P * inner at both probes; inner > 1 where a reshape merged a
 * neighbour dim after it), and walks the graph in node order. Besides its
 * axes, each value carries, per padded axis a, what its padded slices hold
 * (the entries with coordinate a >= L and every other padded coordinate
 * real):
 *
 *   PK_CONST c  every such entry is c (features 0, a mask 0, a shift 1e9,
 *               an additive mask -inf);
 *   PK_UNIF     the slices are equal to one another and do not depend on B
 *               (a 1x1 conv of zeros is its bias; points shifted away);
 *   PK_NEG      a masked logit: c <= -1e4 added to values of moderate size,
 *               or -inf (exp of it underflows to 0 next to a real entry);
 *   PK_ANY      unknown.
 *
 * and, for the masks' arithmetic, the value at every real entry when it is
 * one constant (a mask is 1 there, mask == 0 is 0). A value without padded
 * axes is stable or *size dependent* (Shape of a padded tensor and
 * arithmetic on it), which may only feed shape inputs unless its contents
 * come out the same at both probes (n * P at batch 1 is 0 * P).
 *
 * Rules (the op records' BatchKind chooses them): elementwise ops combine
 * the kinds (x * mask is 0 where the mask is; Where on the mask picks a
 * side); ops that work per position (1x1 Conv, MatMul and Gemm on the
 * feature axis, BatchNormalization, LayerNormalization and Softmax over
 * other axes, reductions over other axes, Transpose, reshapes that keep
 * the axis, Concat/Slice/Tile along other axes) keep stability; a sum (and
 * a MatMul, Gemm or Einsum contracting the dim) is stable when the padded
 * entries are 0, a max when they are masked logits, a Softmax over the dim
 * when they are masked logits (it then gives 0 there), a "same" Conv along
 * the dim when they are 0 (what an exact-length evaluation pads with); a
 * TopK over the dim of values whose padded entries are all equal and below
 * every real entry (kNN distances to points shifted away by the mask: a
 * masked logit whose slices are equal) gives stable values and indices for
 * B >= k: a jet of L >= k never picks a padded point, a shorter one picks
 * positions L, L+1, ... (ties go to the lower index) whatever B is; and a
 * Gather along the dim at such indices of data whose padded entries are
 * all equal is stable. Everything else on the dim (ReduceMean, an unmasked Softmax or
 * sum, LayerNormalization over it, Slice/Pad/Concat along it, positions
 * used as data, ops without a rule) is refused, naming the node.
 *
 * Assumption: the model computes finite values at padded positions. A
 * padded value that is inf or NaN can only reach the real outputs as NaN
 * or inf (x * 0, an additive mask), never as a plausible number.
 *
 * The verdict names the first node where padding may leak; the pass never
 * fails on a model it cannot prove.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "control.h"
#include "ops/ops.h"
#include "padproof.h"
#include "opdef.h"

enum { PK_ANY, PK_CONST, PK_UNIF, PK_NEG };   /* zeroed: unknown */
typedef struct Kind {
	int k;
	double c;      /* PK_CONST: the value; PK_NEG: 1 if the padded slices are also
	                  all equal (points shifted away: kNN distances), else 0 */
} Kind;

typedef struct PV {
	unsigned axes;                   /* bit a: axis a carries the padded dim */
	int64_t inner[KILN_MAX_RANK];    /* the extent is P * inner there */
	Kind pad[KILN_MAX_RANK];
	bool has_real;                   /* every real entry is `real` (without padded */
	double real;                     /* axes: every entry) */
	bool dep;                        /* no padded axis, but depends on the bucket size */
	bool pidx;                       /* indices into the padded axis: from a TopK over it,
	                                    values < max(L, k) at real positions */
	bool nonlinear;                  /* a dim that is not P * inner + off at both probes */
	int64_t off[KILN_MAX_RANK];      /* positions besides the P * inner (a Concat along
	                                    the dim of a padded and an unpadded tensor) */
	uint32_t lay;                    /* which positions are where on axes with off > 0:
	                                    the Concats that made them (0: none) */
	const char *bad;                 /* not stable: why (naming the node), NULL if stable */
} PV;

typedef struct PP {
	Model *m;
	Graph *g;
	Sig *p[2];
	int64_t pv[2];                   /* the probe sizes of the dim */
	PV *v;
	Node *n;
	const char *symbol;
	const char *why;                 /* the verdict: the first unstable value used */
	const char *nwhy;                /* the node's outputs are unstable: why */
	int64_t minimum;
	Arena *a;
} PP;

static const Kind K_ANY = {PK_ANY, 0}, K_UNIF = {PK_UNIF, 0}, K_ZERO = {PK_CONST, 0};

static void leak(PP *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void leak(PP *p, const char *fmt, ...)
{
	if (p->nwhy)
		return;
	char where[512], what[512];
	diag_node_path(where, sizeof where, p->g, p->n);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	p->nwhy = arena_printf(p->a, "%s: padding on %s reaches the outputs: %s", where, p->symbol, what);
}

/* ---- probe shapes and contents --------------------------------------------- */

static int rank_of(PP *p, int id)
{
	return p->p[0]->shapes[id].rank;
}

static int64_t dim_of(PP *p, int probe, int id, int k)
{
	return p->p[probe]->shapes[id].dims[k].size;
}

/* The padded axes of a value from its shapes at the two probes. */
static void find_axes(PP *p, int id)
{
	PV *v = &p->v[id];
	v->axes = 0;
	v->nonlinear = false;
	const Shape *s0 = &p->p[0]->shapes[id], *s1 = &p->p[1]->shapes[id];
	if (s0->rank != s1->rank) {
		v->nonlinear = true;
		return;
	}
	for (int k = 0; k < s0->rank; k++) {
		int64_t d0 = s0->dims[k].size, d1 = s1->dims[k].size;
		if (d0 == d1)
			continue;
		int64_t inner = (d1 - d0) / (p->pv[1] - p->pv[0]);
		if (inner > 0 && (d1 - d0) % (p->pv[1] - p->pv[0]) == 0 && d0 - p->pv[0] * inner >= 0) {
			v->axes |= 1u << k;
			v->inner[k] = inner;
			v->off[k] = d0 - p->pv[0] * inner;
			v->pad[k] = K_ANY;
		} else {
			v->nonlinear = true;
		}
	}
}

static const Folded *folded(PP *p, int probe, int id, Folded *w)
{
	const Folded *f = p->p[probe]->folded[id];
	const Value *val = &p->g->values[id];
	if (!f && val->kind == VAL_WEIGHT && val->type == TK_TENSOR) {
		*w = (Folded){val->dtype, val->weight->nelem, val->weight->bytes};
		f = w;
	}
	return f;
}

static bool elem(const Folded *f, int64_t i, double *x)
{
	const unsigned char *b = (const unsigned char *)f->data;
	switch (f->dtype) {
	case DT_FLOAT: { float y; memcpy(&y, b + 4 * i, 4); *x = (double)y; return true; }
	case DT_DOUBLE: memcpy(x, b + 8 * i, 8); return true;
	case DT_INT64: { int64_t y; memcpy(&y, b + 8 * i, 8); *x = (double)y; return true; }
	case DT_INT32: { int32_t y; memcpy(&y, b + 4 * i, 4); *x = y; return true; }
	case DT_BOOL: case DT_UINT8: *x = b[i]; return true;
	case DT_INT8: *x = (int8_t)b[i]; return true;
	}
	return false;
}

/* Contents known and all equal (to *c). */
static bool all_equal(PP *p, int id, double *c)
{
	Folded w;
	const Folded *f = folded(p, 0, id, &w);
	if (!f || f->nelem < 1 || f->nelem > (1 << 22) || !elem(f, 0, c))
		return false;
	for (int64_t i = 1; i < f->nelem; i++) {
		double x;
		if (!elem(f, i, &x) || !(x == *c || (isnan(x) && isnan(*c))))
			return false;
	}
	return true;
}

/* Known at both probes, and the same there. */
static bool same_contents(PP *p, int id)
{
	Folded w0, w1;
	const Folded *f0 = folded(p, 0, id, &w0), *f1 = folded(p, 1, id, &w1);
	return f0 && f1 && f0->dtype == f1->dtype && f0->nelem == f1->nelem &&
	       memcmp(f0->data, f1->data, dtype_bytes(f0->dtype, f0->nelem)) == 0;
}

/* ---- node helpers ------------------------------------------------------------ */

/* The node as its family's resolvers see it (tensor_params, reduce_params,
 * ...), at the first probe: its inference resolved and checked the
 * attributes there already, so a resolver cannot fail here. */
static Infer node_infer(PP *p)
{
	return (Infer){.sig = p->p[0], .g = p->g, .n = p->n, .d = p->m->diag, .a = p->a};
}

static int norm(int64_t axis, int rank)
{
	return (int)(axis < 0 ? axis + rank : axis);
}

static PV *in(PP *p, int i)
{
	static PV none;
	return i < p->n->nin && p->n->in[i] != NONE ? &p->v[p->n->in[i]] : &none;
}

static PV *out(PP *p, int o)
{
	return &p->v[p->n->out[o]];
}

static bool padded(const PV *v)
{
	return v->axes != 0;
}

static int first_axis(unsigned axes)
{
	for (int k = 0; k < KILN_MAX_RANK; k++)
		if (axes >> k & 1u)
			return k;
	return -1;
}

/* Input i's integer contents (axes, steps, ...), element j. */
static bool int_at(PP *p, int i, int64_t j, int64_t *x)
{
	if (i >= p->n->nin || p->n->in[i] == NONE)
		return false;
	Folded w;
	const Folded *f = folded(p, 0, p->n->in[i], &w);
	double d;
	if (!f || j >= f->nelem || !elem(f, j, &d))
		return false;
	*x = (int64_t)d;
	return true;
}

static int64_t int_len(PP *p, int i)
{
	if (i >= p->n->nin || p->n->in[i] == NONE)
		return -1;
	Folded w;
	const Folded *f = folded(p, 0, p->n->in[i], &w);
	return f ? f->nelem : -1;
}

/* The axes a reduction works on (reduce_params: the axes attribute or input
 * 1, known at inference), as a bit set over rank r; its keepdims. */
static void reduced_axes(PP *p, int r, unsigned *set, bool *keepdims)
{
	Infer x = node_infer(p);
	ReduceParams rp;
	reduce_params(&x, &rp);
	*set = 0;
	for (int a = 0; a < r; a++)
		*set |= rp.reduce[a] ? 1u << a : 0;
	*keepdims = rp.keepdims;
}

/* The node's record; an empty one if kiln has none. */
static const OpDef *rec(const Node *n)
{
	static const OpDef none = {.op = NONE};
	const OpDef *d = op_def(n->op);
	return d ? d : &none;
}

static PadRule pad_rule(const Node *n)
{
	return rec(n)->pad;
}

/* Input i read as a shape, axes or count (OpDef.shape_inputs). */
static bool shape_input(const Node *n, int i)
{
	return i < 32 && (rec(n)->shape_inputs >> i & 1u);
}

/* Inputs that hold rows of the same samples as input 0 (OpDef.row_inputs). */
static bool row_slot(int op, int i)
{
	const OpDef *d = op_def(op);
	return d && i < 32 && (d->row_inputs >> i & 1u);
}

/* ---- kinds --------------------------------------------------------------------- */

static bool is_zero(Kind k)
{
	return k.k == PK_CONST && k.c == 0;
}

/* What v's padded slices on axis a hold; a broadcast axis is the same everywhere. */
static Kind kind_at(const PV *v, int a)
{
	return v->axes >> a & 1u ? v->pad[a] : K_UNIF;
}

static bool neg(Kind k)
{
	return k.k == PK_NEG || (k.k == PK_CONST && k.c <= -1e4);
}

/* The kind of input i of an elementwise node on output axis a (rank R). */
static Kind kind_on(PP *p, int i, int a, int R)
{
	PV *v = in(p, i);
	int ai = a - (R - rank_of(p, p->n->in[i]));
	if (ai >= 0 && (v->axes >> ai & 1u))
		return v->pad[ai];
	/* broadcast along a: the same entries at every position */
	return v->has_real && !padded(v) ? (Kind){PK_CONST, v->real} : K_UNIF;
}

static bool is_unsigned_type(int dt)
{
	return dt == DT_UINT8 || dt == DT_UINT16 || dt == DT_UINT32 || dt == DT_UINT64 ||
	       dt == DT_BOOL;
}

/* x as an integer, if it is one that int64 holds. */
static bool as_int(double x, int64_t *v)
{
	if (!(x >= -9.2e18 && x <= 9.2e18) || x != (double)(int64_t)x)
		return false;
	*v = (int64_t)x;
	return true;
}

/* Evaluate an elementwise op on constants through its record's scalar rule
 * (opdef.h); false if it has none. */
static bool eval(PP *p, const double *x, int nin, double *r)
{
	const Node *n = p->n;
	const OpDef *d = op_def(n->op);
	switch (d ? d->peval : PE_NONE) {
	case PE_WHERE: *r = x[0] != 0 ? x[1] : x[2]; return true;
	case PE_BROADCAST: *r = x[0]; return true;     /* Identity */
	case PE_CAST:                                   /* Cast, CastLike: to the output's type */
		*r = p->p[0]->dtypes[n->out[0]] == DT_BOOL ? x[0] != 0 : x[0];
		return true;
	case PE_MAP: break;
	default: return false;
	}
	int xdt = p->p[0]->dtypes[n->in[0]];
	if ((xdt == DT_FLOAT || xdt == DT_FLOAT16 || xdt == DT_BFLOAT16) &&
	    (nin == 1 ? d->eval_f32_1 != NULL : nin == 2 && d->eval_f32_2 != NULL)) {
		/* as peval.c: kiln's float functions, the runtime's */
		*r = nin == 1 ? (double)d->eval_f32_1((float)x[0])
		              : (double)d->eval_f32_2((float)x[0], (float)x[1]);
		return true;
	}
	if (nin == 1 && d->eval_f1) {
		*r = d->eval_f1(x[0]);
		return true;
	}
	if (nin >= 2 && d->eval_f2) {
		*r = x[0];
		for (int i = 1; i < nin; i++)
			*r = d->eval_f2(*r, x[i], n);
		return true;
	}
	/* integer-only rules (Not, And, Or, Xor, ...) on integer constants */
	int64_t a, b;
	bool uns = is_unsigned_type(p->p[0]->dtypes[n->in[0]]);
	if (nin == 1 && d->eval_i1 && as_int(x[0], &a)) {
		*r = (double)d->eval_i1(a);
		return true;
	}
	if (nin >= 2 && d->eval_i2 && as_int(x[0], &a)) {
		for (int i = 1; i < nin; i++)
			if (!as_int(x[i], &b) || !d->eval_i2(a, b, &a, uns, n))
				return false;
		*r = (double)a;
		return true;
	}
	return false;
}

/* Inputs of an elementwise node that are data: those before its first
 * shape, count or type input (OpDef.shape_inputs: CastLike's second). */
static int data_inputs(const Node *n)
{
	const OpDef *d = op_def(n->op);
	int k = 0;
	while (k < n->nin && !(d && k < 32 && (d->shape_inputs >> k & 1u)))
		k++;
	return k;
}

/* Padded slices all equal: a constant, PK_UNIF, or a masked logit that is. */
static bool same(Kind k)
{
	return k.k == PK_CONST || k.k == PK_UNIF || (k.k == PK_NEG && k.c == 1);
}

static Kind combine(PP *p, const Kind *k, int nin)
{
	PadRule op = pad_rule(p->n);
	bool all_const = true, all_unif = true, all_same = true;
	for (int i = 0; i < nin; i++)
		all_same &= same(k[i]);
	const Kind k_neg = {PK_NEG, all_same ? 1 : 0};
	double c[8];
	for (int i = 0; i < nin; i++) {
		all_const &= k[i].k == PK_CONST;
		all_unif &= k[i].k == PK_CONST || k[i].k == PK_UNIF;
		c[i < 8 ? i : 7] = k[i].c;
	}
	double r;
	if (all_const && nin <= 8 && eval(p, c, nin, &r))
		return (Kind){PK_CONST, r};
	if (op == PD_WHERE && k[0].k == PK_CONST)
		return k[0].c != 0 ? k[1] : k[2];
	if (op == PD_MUL && nin == 2) {
		for (int i = 0; i < 2; i++)
			if (k[i].k == PK_CONST && k[i].c == 0 && !neg(k[1 - i]))
				return K_ZERO;   /* x * mask, x finite */
			else if (neg(k[i]) && k[1 - i].k == PK_CONST && k[1 - i].c > 0)
				return k_neg;
	}
	if (op == PD_DIV && nin == 2 && k[1].k == PK_CONST && k[1].c != 0 && !isnan(k[1].c)) {
		if (k[0].k == PK_CONST && k[0].c == 0)
			return K_ZERO;
		if (neg(k[0]) && k[1].c > 0)
			return k_neg;
	}
	if (op == PD_NEG && nin == 1 && k[0].k == PK_CONST && k[0].c == 0)
		return K_ZERO;
	if (op == PD_ADD || op == PD_SUB || op == PD_SUM) {
		/* a masked logit: -inf or <= -1e4 added; the others not masked upwards */
		bool any_neg = false, up = false;
		for (int i = 0; i < nin; i++) {
			bool minus = op == PD_SUB && i == 1;
			bool lo = minus ? k[i].k == PK_CONST && k[i].c >= 1e4 : neg(k[i]);
			bool hi = minus ? neg(k[i]) : k[i].k == PK_CONST && k[i].c >= 1e4;
			any_neg |= lo;
			up |= hi;
		}
		if (any_neg && !up)
			return k_neg;
	}
	return all_unif ? K_UNIF : K_ANY;
}

/* Kinds carried through a node that works per position. */
static Kind per_position(Kind k)
{
	return k.k == PK_CONST || k.k == PK_UNIF ? K_UNIF : K_ANY;
}

/* ---- rules ----------------------------------------------------------------------- */

static void rule_elementwise(PP *p)
{
	Node *n = p->n;
	PV *o = out(p, 0);
	int R = rank_of(p, n->out[0]), nin = data_inputs(n);
	if (nin > 16) {
		leak(p, "has too many inputs to analyse");
		return;
	}
	for (int a = 0; a < R; a++) {
		if (!(o->axes >> a & 1u))
			continue;
		Kind k[16];
		for (int i = 0; i < nin; i++) {
			if (n->in[i] == NONE) {
				k[i] = K_UNIF;
				continue;
			}
			PV *v = in(p, i);
			int ai = a - (R - rank_of(p, n->in[i]));
			if (ai >= 0 && (v->axes >> ai & 1u) && v->inner[ai] != o->inner[a]) {
				leak(p, "combines positions laid out differently along axis %d", a);
				return;
			}
			k[i] = kind_on(p, i, a, R);
		}
		o->pad[a] = combine(p, k, nin);
	}
	/* the value at real entries */
	double x[16];
	bool known = true;
	for (int i = 0; i < nin && known; i++) {
		PV *v = in(p, i);
		known = n->in[i] != NONE && v->has_real;
		x[i] = v->real;
	}
	if (known && eval(p, x, nin, &o->real))
		o->has_real = true;
	else if (pad_rule(n) == PD_WHERE && in(p, 0)->has_real) {
		PV *pick = in(p, in(p, 0)->real != 0 ? 1 : 2);
		o->has_real = pick->has_real;
		o->real = pick->real;
	}
	if (pad_rule(n) == PD_ADD || pad_rule(n) == PD_SUB)
		o->pidx = (in(p, 0)->pidx && in(p, 1)->has_real && in(p, 1)->real == 0 && !padded(in(p, 1))) ||
		          (pad_rule(n) == PD_ADD && in(p, 1)->pidx && in(p, 0)->has_real && in(p, 0)->real == 0 &&
		           !padded(in(p, 0)));
	if (pad_rule(n) == PD_PASS_INDEX)
		o->pidx = in(p, 0)->pidx;
}

/* Per-position ops whose output axes are the input's (BatchNormalization,
 * Dropout, LayerNormalization/Softmax over other axes, ...). */
static void same_axes(PP *p, int from, bool keep_zero)
{
	PV *i = in(p, from);
	for (int o = 0; o < p->n->nout; o++) {
		if (p->n->out[o] == NONE)
			continue;
		PV *v = out(p, o);
		if (v->axes != i->axes && padded(v)) {
			leak(p, "output %d does not keep its input's padded axes", o);
			return;
		}
		for (int a = 0; a < KILN_MAX_RANK; a++)
			if (v->axes >> a & 1u)
				v->pad[a] = keep_zero && i->pad[a].k == PK_CONST && i->pad[a].c == 0
				                    ? K_ZERO : per_position(i->pad[a]);
	}
}

/* Reshape, Flatten, Squeeze, Unsqueeze: a padded axis of extent P * I with
 * A elements before it is, flattened, [A, P, I]; the output keeps it when
 * one of its axes has A elements before it and extent P * I': [A, P, S] in
 * both, position p's block of S elements whole. */
static void rule_layout(PP *p)
{
	int i = p->n->in[0], o = p->n->out[0];
	PV *vi = &p->v[i], *vo = &p->v[o];
	int used = 0;
	for (int k = 0; k < rank_of(p, i); k++) {
		if (!(vi->axes >> k & 1u))
			continue;
		int match = -1;
		for (int j = 0; j < rank_of(p, o) && match < 0; j++) {
			if (!(vo->axes >> j & 1u))
				continue;
			bool ok = vi->off[k] == 0 || (dim_of(p, 0, i, k) == dim_of(p, 0, o, j) &&
			                              dim_of(p, 1, i, k) == dim_of(p, 1, o, j));
			for (int q = 0; q < 2 && ok; q++) {
				int64_t ai = 1, ao = 1;
				for (int t = 0; t < k; t++)
					ai *= dim_of(p, q, i, t);
				for (int t = 0; t < j; t++)
					ao *= dim_of(p, q, o, t);
				ok = ai == ao;
			}
			if (ok)
				match = j;
		}
		if (match < 0) {
			leak(p, "reshapes the padded axis %d together with other dims", k);
			return;
		}
		vo->pad[match] = vi->pad[k];
		used++;
	}
	if (used != __builtin_popcount(vo->axes)) {
		leak(p, "reshapes the padded axes into a different number of axes");
		return;
	}
	vo->has_real = vi->has_real;
	vo->real = vi->real;
	vo->pidx = vi->pidx;
}

static void rule_transpose(PP *p)
{
	PV *vi = in(p, 0), *vo = out(p, 0);
	int r = rank_of(p, p->n->in[0]);
	Infer x = node_infer(p);
	TensorParams tp;   /* perm: the attribute, or the axes reversed */
	tensor_params(&x, &tp);
	for (int j = 0; j < r; j++) {
		int k = (int)tp.perm[j];
		if (k < 0 || k >= r || (vi->axes >> k & 1u) != (vo->axes >> j & 1u)) {
			leak(p, "moves the padded axes in a way kiln does not follow");
			return;
		}
		vo->pad[j] = vi->pad[k];
	}
	vo->has_real = vi->has_real;
	vo->real = vi->real;
	vo->pidx = vi->pidx;
}

/* An op along one axis (Softmax, LayerNorm from an axis on, TopK, CumSum):
 * the axes it works on as a bit set. */
static unsigned axes_from(PP *p, int axis, bool to_end)
{
	int r = rank_of(p, p->n->in[0]);
	int a = norm(axis, r);
	return to_end ? ((1u << r) - 1) & ~((1u << a) - 1) : 1u << a;
}

static void rule_softmax(PP *p)
{
	Node *n = p->n;
	PV *vi = in(p, 0);
	int r = rank_of(p, n->in[0]);
	bool coerced = n->since < 13;
	Infer x = node_infer(p);
	NormParams np;
	norm_params(&x, &np);
	unsigned over = axes_from(p, np.axis, coerced);
	unsigned hit = over & vi->axes;
	if (!hit) {
		same_axes(p, 0, false);
		return;
	}
	int a = first_axis(hit);
	if (hit != (1u << a) || vi->inner[a] != 1 || (coerced && a != r - 1) ||
	    (pad_rule(n) != PD_SOFTMAX && pad_rule(n) != PD_LOG_SOFTMAX)) {
		leak(p, "normalizes over the padded axis %d", a);
		return;
	}
	if (!neg(vi->pad[a])) {
		leak(p, "normalizes over the padded axis %d without a mask (its padded entries are not "
		        "masked logits: add -inf or -1e9 where the mask is 0, or Where on the mask)", a);
		return;
	}
	same_axes(p, 0, false);
	out(p, 0)->pad[a] = pad_rule(n) == PD_SOFTMAX ? K_ZERO : (Kind){PK_NEG, 0};
}

static void rule_layernorm(PP *p)
{
	Node *n = p->n;
	Infer x = node_infer(p);
	NormParams np;
	norm_params(&x, &np);
	unsigned over = axes_from(p, np.axis, true);
	if (over & in(p, 0)->axes) {
		leak(p, "normalizes over the padded axis %d (its statistics count the padded positions)",
		     first_axis(over & in(p, 0)->axes));
		return;
	}
	for (int i = 1; i < n->nin; i++)
		if (padded(in(p, i))) {
			leak(p, "reads a scale or bias along the padded axis");
			return;
		}
	same_axes(p, 0, false);
}

/* A reduction over unpadded axes (set) of padded entries of kind k: a
 * constant stays one (|x|^2 of a point shifted to (1e9, 1e9) is 2e18). */
static Kind reduce_const(PP *p, Kind k, unsigned set)
{
	if (k.k != PK_CONST)
		return per_position(k);
	double count = 1;
	for (int a = 0; a < rank_of(p, p->n->in[0]); a++)
		if (set >> a & 1u)
			count *= (double)dim_of(p, 0, p->n->in[0], a);
	const OpDef *d = op_def(p->n->op);
	switch (d ? d->reduce : RD_NONE) {
	case RD_SUM: return (Kind){PK_CONST, k.c * count};
	case RD_SUM_SQUARE: return (Kind){PK_CONST, k.c * k.c * count};
	case RD_MEAN: case RD_MAX: case RD_MIN: return k;
	case RD_L1: return (Kind){PK_CONST, fabs(k.c) * count};
	case RD_L2: return (Kind){PK_CONST, sqrt(k.c * k.c * count)};
	default: break;
	}
	return K_UNIF;
}

static void rule_reduce(PP *p)
{
	Node *n = p->n;
	PV *vi = in(p, 0);
	int r = rank_of(p, n->in[0]);
	unsigned set;
	bool keep;
	reduced_axes(p, r, &set, &keep);
	PV *vo = out(p, 0);
	unsigned hit = set & vi->axes;
	const OpDef *d = op_def(n->op);
	ReduceKind rk = d ? d->reduce : RD_NONE;
	bool sums = rk == RD_SUM || rk == RD_SUM_SQUARE || rk == RD_L1 || rk == RD_L2 ||
	            rk == RD_LOG_SUM;
	for (int a = 0; a < r; a++) {
		if (!(hit >> a & 1u))
			continue;
		Kind k = vi->pad[a];
		bool zero = k.k == PK_CONST && k.c == 0;
		if (rk == RD_MEAN)
			leak(p, "averages over the padded axis %d (a mean counts the padded positions: sum the "
			        "masked values and divide by the sum of the mask)", a);
		else if (sums && !zero)
			leak(p, "sums over the padded axis %d whose padded entries are not 0 (multiply by the "
			        "mask first)", a);
		else if ((rk == RD_MAX || rk == RD_LOG_SUM_EXP) && !neg(k))
			leak(p, "takes the %s over the padded axis %d whose padded entries are not masked to "
			        "-inf", rk == RD_MAX ? "max" : "log-sum-exp", a);
		else if (rk == RD_MIN && !(k.k == PK_CONST && k.c >= 1e4))
			leak(p, "takes the min over the padded axis %d whose padded entries are not masked to "
			        "+inf", a);
		else if (rk == RD_PROD && !(k.k == PK_CONST && k.c == 1))
			leak(p, "multiplies over the padded axis %d whose padded entries are not 1", a);
		else if (!sums && rk != RD_MAX && rk != RD_MIN && rk != RD_PROD && rk != RD_LOG_SUM_EXP)
			leak(p, "reduces over the padded axis %d", a);
		if (p->nwhy)
			return;
	}
	/* the padded axes that remain: their entries are reduced over other
	 * entries, some of them padded on both axes: unknown but for zeros summed */
	for (int a = 0, j = 0; a < r; a++) {
		if (set >> a & 1u) {
			j += keep;
			continue;
		}
		if ((vi->axes >> a & 1u) && (vo->axes >> j & 1u))
			vo->pad[j] = hit ? K_ANY : reduce_const(p, vi->pad[a], set);
		j++;
	}
}

/* MatMul: A [.., M, K] x B [.., K, N]; a padded K must be 0 on one side. */
static void rule_matmul(PP *p)
{
	Node *n = p->n;
	PV *va = in(p, 0), *vb = in(p, 1), *vo = out(p, 0);
	int ra = rank_of(p, n->in[0]), rb = rank_of(p, n->in[1]), R = rank_of(p, n->out[0]);
	int ka = ra - 1, kb = rb == 1 ? 0 : rb - 2;
	bool pa = va->axes >> ka & 1u, pb = vb->axes >> kb & 1u;
	if (pa || pb) {
		Kind a = pa ? va->pad[ka] : K_UNIF, b = pb ? vb->pad[kb] : K_UNIF;
		bool za = a.k == PK_CONST && a.c == 0, zb = b.k == PK_CONST && b.c == 0;
		if (!pa || !pb || !(za || zb)) {
			leak(p, "contracts over the padded axis without zeros at the padded positions (mask "
			        "one side, or a Softmax over masked logits)");
			return;
		}
	}
	for (int j = 0; j < R; j++) {
		if (!(vo->axes >> j & 1u))
			continue;
		Kind k;
		if (rb > 1 && j == R - 1)
			k = kind_at(vb, rb - 1);           /* a column of B */
		else if (ra > 1 && j == (rb > 1 ? R - 2 : R - 1))
			k = kind_at(va, ra - 2);           /* a row of A */
		else {                                /* a broadcast batch dim */
			int ia = j - (R - ra), ib = j - (R - rb);
			Kind x = ia >= 0 ? kind_at(va, ia) : K_UNIF, y = ib >= 0 ? kind_at(vb, ib) : K_UNIF;
			vo->pad[j] = is_zero(x) ? x : is_zero(y) ? y
			           : x.k == PK_ANY || y.k == PK_ANY ? K_ANY : K_UNIF;
			continue;
		}
		vo->pad[j] = is_zero(k) ? K_ZERO : per_position(k);
	}
}

static void rule_gemm(PP *p)
{
	Node *n = p->n;
	PV *va = in(p, 0), *vb = in(p, 1), *vc = in(p, 2), *vo = out(p, 0);
	Infer x = node_infer(p);
	GemmParams gp;
	gemm_params(&x, &gp);
	int ka = gp.trans_a ? 0 : 1, kb = gp.trans_b ? 1 : 0;
	bool pa = va->axes >> ka & 1u, pb = vb->axes >> kb & 1u;
	if (pa || pb) {
		bool za = pa && va->pad[ka].k == PK_CONST && va->pad[ka].c == 0;
		bool zb = pb && vb->pad[kb].k == PK_CONST && vb->pad[kb].c == 0;
		if (!pa || !pb || !(za || zb)) {
			leak(p, "contracts over the padded axis without zeros at the padded positions");
			return;
		}
	}
	for (int j = 0; j < 2; j++) {
		if (!(vo->axes >> j & 1u))
			continue;
		PV *src = j == 0 ? va : vb;
		int s = j == 0 ? 1 - ka : 1 - kb;
		Kind k = src->axes >> s & 1u ? src->pad[s] : K_UNIF;
		int ic = j - (2 - rank_of(p, n->in[2 < n->nin && n->in[2] != NONE ? 2 : 0]));
		if (n->nin > 2 && n->in[2] != NONE && ic >= 0 && (vc->axes >> ic & 1u) &&
		    vc->pad[ic].k == PK_ANY)
			k = K_ANY;
		vo->pad[j] = per_position(k);
	}
}

/* Conv (and ConvInteger-free BatchNormalization, InstanceNorm, pools):
 * [N, C, spatial...]; a padded spatial axis is per position for a kernel
 * of 1 with stride 1, and for a "same" convolution (stride 1, the output as
 * long as the input) of an input that is 0 at the padded positions. */
static void rule_n_first(PP *p)
{
	Node *n = p->n;
	PV *vi = in(p, 0), *vo = out(p, 0);
	for (int i = 1; i < n->nin; i++)
		if (padded(in(p, i)) && !row_slot(n->op, i)) {
			leak(p, "reads input %d along the padded axis", i);
			return;
		}
	if (vi->axes & 3u) {
		leak(p, "works across the padded axis %d (the batch or channel axis)", first_axis(vi->axes));
		return;
	}
	if (pad_rule(n) == PD_PER_CHANNEL) {
		same_axes(p, 0, false);
		return;
	}
	if (pad_rule(n) == PD_STATS) {
		leak(p, "normalizes over the padded axis %d (its statistics count the padded positions)",
		     first_axis(vi->axes));
		return;
	}
	if (pad_rule(n) != PD_WINDOW) {
		/* only a Conv's row input (its fused residual) is analysed */
		for (int i = 1; i < n->nin; i++)
			if (padded(in(p, i))) {
				leak(p, "reads input %d along the padded axis", i);
				return;
			}
		if (padded(vi))
			leak(p, "is not analysed for padding along axis %d", first_axis(vi->axes));
		return;
	}
	/* the window's kernel and strides (Conv's attributes and weights; a
	 * KilnConvChain's 1x1 layers, [Cout, Cin, 1]) */
	Infer x = node_infer(p);
	WindowGeo wg;
	const Shape *xs = &p->p[0]->shapes[n->in[0]];
	bool geo = window_geometry(&x, xs, &p->p[0]->shapes[n->out[0]], &p->p[0]->shapes[n->in[1]],
	                           &wg);
	for (int a = 2; a < rank_of(p, n->in[0]); a++) {
		if (!(vi->axes >> a & 1u))
			continue;
		if (!geo) {
			leak(p, "is not analysed for padding along axis %d", a);
			return;
		}
		int slot = 3 - wg.ns + (a - 2);   /* 1-D is W, 2-D H and W */
		int64_t kern = wg.k[slot], stride = wg.s[slot];
		bool same = (vo->axes >> a & 1u) && vo->inner[a] == vi->inner[a] &&
		            dim_of(p, 0, n->out[0], a) == dim_of(p, 0, n->in[0], a);
		Kind k = vi->pad[a];
		if (!same || stride != 1) {
			leak(p, "convolves along the padded axis %d with a stride or a change of length", a);
			return;
		}
		if (kern != 1 && (!is_zero(k) || vi->off[a])) {
			leak(p, "convolves across the padded axis %d (kernel %lld) over padded entries that "
			        "are not 0", a, (long long)kern);
			return;
		}
		vo->pad[a] = kern == 1 ? per_position(k) : K_ANY;
	}
}

static void rule_topk(PP *p)
{
	Node *n = p->n;
	PV *vi = in(p, 0);
	int r = rank_of(p, n->in[0]);
	Infer x = node_infer(p);
	ReduceParams rp;   /* TopK's axis, normalized, and largest */
	reduce_params(&x, &rp);
	int a = rp.axis;
	if (!(vi->axes >> a & 1u)) {
		for (int o = 0; o < n->nout; o++)
			if (n->out[o] != NONE) {
				PV *v = out(p, o);
				for (int j = 0; j < r; j++)
					if (v->axes >> j & 1u)
						v->pad[j] = per_position(vi->pad[j]);
			}
		return;
	}
	Kind k = vi->pad[a];
	int64_t K;
	bool largest = rp.largest;
	bool worse = largest ? neg(k) : k.k == PK_CONST && k.c >= 1e4;
	if (vi->inner[a] != 1 || vi->off[a] || !same(k) || !worse || !int_at(p, 1, 0, &K)) {
		leak(p, "selects over the padded axis %d whose padded entries are not all equal and %s "
		        "every real entry (shift the padded points away by the mask, as points * mask + "
		        "1e9 * (1 - mask), so that they are never a real point's neighbours)", a,
		     largest ? "below" : "above");
		return;
	}
	if (K > p->minimum)
		p->minimum = K;
	for (int o = 0; o < n->nout; o++) {
		if (n->out[o] == NONE)
			continue;
		PV *v = out(p, o);
		if (v->axes >> a & 1u) {
			leak(p, "keeps the padded axis %d", a);
			return;
		}
		for (int j = 0; j < r; j++)
			if (v->axes >> j & 1u)
				v->pad[j] = K_ANY;
		v->pidx = o == 1;
	}
}

/* Gather along the padded axis at indices from a TopK over it, of data
 * whose padded entries are all equal: a short sample's padded neighbours
 * read the same values at every bucket. */
static void rule_gather(PP *p)
{
	Node *n = p->n;
	PV *vd = in(p, 0), *vx = in(p, 1), *vo = out(p, 0);
	int ri = rank_of(p, n->in[1]);
	Infer x = node_infer(p);
	TensorParams tp;
	tensor_params(&x, &tp);
	int axis = tp.axis;
	if (vd->axes >> axis & 1u) {
		Kind k = vd->pad[axis];
		if (!vx->pidx || vd->inner[axis] != 1 || vd->off[axis] || (k.k != PK_CONST && k.k != PK_UNIF) ||
		    (vd->axes & ~(1u << axis))) {
			leak(p, "gathers along the padded axis %d %s", axis,
			     !vx->pidx ? "at indices that are not a TopK's over it"
			               : "from data whose padded entries are not all equal");
			return;
		}
	} else if (vx->pidx || vx->dep) {
		leak(p, "gathers at indices into the padded axis along another axis");
		return;
	}
	for (int j = 0; j < rank_of(p, n->out[0]); j++) {
		if (!(vo->axes >> j & 1u))
			continue;
		if (j < axis)
			vo->pad[j] = per_position(kind_at(vd, j));
		else if (j >= axis + ri)
			vo->pad[j] = per_position(kind_at(vd, j - ri + 1));
		else
			vo->pad[j] = padded(vd) ? K_ANY : per_position(kind_at(vx, j - axis));
	}
}

/* A Concat's axis (tensor_params), normalized. */
static int concat_axis(PP *p)
{
	Infer x = node_infer(p);
	TensorParams tp;
	tensor_params(&x, &tp);
	return tp.axis;
}

/* Concat along an axis that is not padded; Split and Slice that leave
 * padded axes whole; Tile and Expand that do not repeat them. */
static void rule_copy(PP *p)
{
	Node *n = p->n;
	bool concat = rec(n)->batch == BK_CONCAT;
	int axis = concat ? concat_axis(p) : 0;
	if (concat && (out(p, 0)->axes >> axis & 1u)) {
		/* padded positions come from the padded input; the others are real */
		PV *vo = out(p, 0);
		int npadded = 0;
		for (int i = 0; i < n->nin; i++)
			npadded += (in(p, i)->axes >> axis & 1u) != 0;
		if (npadded > 1) {
			leak(p, "concatenates %d padded tensors along the padded axis %d", npadded, axis);
			return;
		}
		for (int a = 0; a < rank_of(p, n->out[0]); a++) {
			if (!(vo->axes >> a & 1u))
				continue;
			bool zero = true, unif = true, neg_all = true;
			for (int i = 0; i < n->nin; i++) {
				PV *v = in(p, i);
				if (n->in[i] == NONE || !(v->axes >> a & 1u)) {
					if (a != axis) {
						leak(p, "makes the padded axis %d of data without it", a);
						return;
					}
					continue;
				}
				if (a == axis && v->inner[a] != vo->inner[a]) {
					leak(p, "concatenates positions of different sizes along the padded axis");
					return;
				}
				zero &= is_zero(v->pad[a]);
				unif &= v->pad[a].k == PK_CONST || v->pad[a].k == PK_UNIF;
				neg_all &= neg(v->pad[a]);
			}
			vo->pad[a] = zero ? K_ZERO : neg_all ? (Kind){PK_NEG, 0} : unif && a != axis ? K_UNIF : K_ANY;
		}
		return;
	}
	int ndata = concat ? n->nin : 1;
	for (int o = 0; o < n->nout; o++) {
		if (n->out[o] == NONE)
			continue;
		PV *vo = out(p, o);
		int R = rank_of(p, n->out[o]);
		for (int a = 0; a < R; a++) {
			if (!(vo->axes >> a & 1u))
				continue;
			Kind k[16];
			int m = 0;
			for (int i = 0; i < ndata && m < 16; i++) {
				if (n->in[i] == NONE)
					continue;
				PV *v = in(p, i);
				int ai = a - (R - rank_of(p, n->in[i]));
				bool has = ai >= 0 && (v->axes >> ai & 1u);
				if (has && (dim_of(p, 0, n->in[i], ai) != dim_of(p, 0, n->out[o], a) ||
				            dim_of(p, 1, n->in[i], ai) != dim_of(p, 1, n->out[o], a))) {
					leak(p, "slices, pads or repeats the padded axis %d", a);
					return;
				}
				if (!has && pad_rule(n) != PD_BROADCAST) {
					leak(p, "makes the padded axis %d of data without it", a);
					return;
				}
				k[m++] = has ? v->pad[ai] : K_UNIF;
			}
			bool zero = true, unif = true;
			for (int i = 0; i < m; i++) {
				zero &= k[i].k == PK_CONST && k[i].c == 0;
				unif &= k[i].k == PK_CONST || k[i].k == PK_UNIF;
			}
			vo->pad[a] = m == 1 ? k[0] : zero ? K_ZERO : unif ? K_UNIF : K_ANY;
		}
		if (ndata == 1) {
			vo->has_real = in(p, 0)->has_real;
			vo->real = in(p, 0)->real;
			vo->pidx = in(p, 0)->pidx;
		}
	}
	if (rec(n)->batch == BK_SLICE && n->since >= 10) {   /* a full slice must not run backwards */
		PV *v = in(p, 0);
		int64_t ns = int_len(p, 1), na = int_len(p, 3);
		for (int64_t i = 0; i < ns; i++) {
			int64_t ax = i, step = 1;
			if ((na >= 0 && !int_at(p, 3, i, &ax)) || (int_len(p, 4) >= 0 && !int_at(p, 4, i, &step))) {
				if (padded(v))
					leak(p, "slices axes or steps not known at compile time");
				return;
			}
			if ((v->axes >> norm(ax, rank_of(p, n->in[0])) & 1u) && step != 1) {
				leak(p, "reverses or strides the padded axis");
				return;
			}
		}
	}
}

/* Einsum: a padded letter in the output is per position; a padded letter
 * summed needs zeros at the padded positions of one operand. */
static void rule_einsum(PP *p)
{
	Node *n = p->n;
	Infer x = node_infer(p);
	Einsum e;
	einsum_parse(&x, &e);
	if (e.implicit || e.ellipsis) {
		leak(p, "is an einsum kiln does not analyse for padding (implicit output or ellipsis)");
		return;
	}
	const char *outs = e.out;
	int nt = e.noperands;
	Kind byletter[128];
	bool seen[128] = {false}, zero[128] = {false}, any[128] = {false};
	for (int i = 0; i < n->nin && i < nt; i++) {
		PV *v = in(p, i);
		for (int k = 0; e.term[i][k]; k++) {
			unsigned char c = (unsigned char)e.term[i][k] & 127;
			if (!(v->axes >> k & 1u))
				continue;
			seen[c] = true;
			zero[c] |= v->pad[k].k == PK_CONST && v->pad[k].c == 0;
			any[c] |= v->pad[k].k == PK_ANY;
		}
	}
	for (int c = 0; c < 128; c++) {
		if (!seen[c])
			continue;
		if (!strchr(outs, c) && !zero[c]) {
			leak(p, "sums over the padded axis (letter '%c') without zeros at the padded "
			        "positions", c);
			return;
		}
		byletter[c] = zero[c] ? K_ZERO : any[c] ? K_ANY : K_UNIF;
	}
	PV *vo = out(p, 0);
	for (int j = 0; outs[j]; j++)
		if (vo->axes >> j & 1u)
			vo->pad[j] = seen[outs[j] & 127] ? byletter[outs[j] & 127] : K_UNIF;
}

/* ConstantOfShape, Range, Trilu, EyeLike of size-dependent shapes: values
 * that depend on the positions only (stable), constant for ConstantOfShape. */
static void rule_make(PP *p)
{
	Node *n = p->n;
	PV *vo = out(p, 0);
	if (pad_rule(n) == PD_FILL) {
		Infer x = node_infer(p);
		TensorParams tp;   /* ConstantOfShape's value: one element, NULL: 0 */
		tensor_params(&x, &tp);
		double c = 0;
		if (tp.value) {
			Folded f = {tp.value->dtype, tp.value->w.nelem, tp.value->w.bytes};
			if (f.nelem < 1 || !elem(&f, 0, &c)) {
				leak(p, "fills a value kiln cannot read");
				return;
			}
		}
		for (int a = 0; a < KILN_MAX_RANK; a++)
			if (vo->axes >> a & 1u)
				vo->pad[a] = (Kind){PK_CONST, c};
		vo->has_real = true;
		vo->real = c;
		return;
	}
	/* Range(0, P), Trilu of ones [P, P], ...: position-dependent, stable */
	if (rec(n)->batch == BK_TRILU && padded(in(p, 0)) && !in(p, 0)->lay) {
		same_axes(p, 0, true);
		return;
	}
	leak(p, "makes values from the size of the padded axis");
}

static void analyse_node(PP *p)
{
	Node *n = p->n;
	const OpDef *d = op_def(n->op);
	bool any_in = false, dep_data = false;
	for (int i = 0; i < n->nin; i++) {
		PV *v = in(p, i);
		bool shape_slot = d && i < 32 && (d->shape_inputs >> i & 1u);
		any_in |= padded(v) || v->dep || v->pidx;
		dep_data |= v->dep && !shape_slot;
	}
	bool any_out = false;
	for (int o = 0; o < n->nout; o++) {
		if (n->out[o] == NONE)
			continue;
		int id = n->out[o];
		find_axes(p, id);
		PV *v = &p->v[id];
		if (v->nonlinear && (any_in || padded(v))) {
			leak(p, "makes output %d \"%s\" whose shape is not linear in %s", o,
			     p->g->values[id].name, p->symbol);
			return;
		}
		any_out |= padded(v);
		double c;
		if (!padded(v) && all_equal(p, id, &c)) {
			v->has_real = true;
			v->real = c;
		}
	}
	if (!any_in && !any_out)
		return;
	/* no padded output: a constant if the contents are the same at both
	 * probes; size arithmetic if it reads sizes only; else a rule decides */
	if (!any_out) {
		bool same = true, reads_padded = false;
		for (int o = 0; o < n->nout; o++)
			same &= n->out[o] == NONE || same_contents(p, n->out[o]);
		if (same)
			return;
		for (int i = 0; i < n->nin; i++)
			reads_padded |= padded(in(p, i)) || in(p, i)->pidx;
		if ((d && d->shape_only) || !reads_padded) {
			for (int o = 0; o < n->nout; o++)
				if (n->out[o] != NONE)
					p->v[n->out[o]].dep = true;
			return;
		}
	}
	if (dep_data && !(d && d->size_data)) {
		for (int i = 0; i < n->nin; i++)
			if (in(p, i)->dep && !(d && i < 32 && (d->shape_inputs >> i & 1u))) {
				leak(p, "input %d \"%s\" depends on the bucket size (the size of %s used as data)", i,
				     p->g->values[n->in[i]].name, p->symbol);
				return;
			}
	}
	if (node_has_subgraph(n)) {
		leak(p, "control flow is not analysed for padding");
		return;
	}
	switch (d ? d->batch : BK_NONE) {
	case BK_ELEMENTWISE: case BK_DROPOUT: case BK_ROWS_AS_IS:
		if (d->batch == BK_DROPOUT)
			same_axes(p, 0, true);
		else
			rule_elementwise(p);
		return;
	case BK_LAYOUT:
		rule_layout(p);
		return;
	case BK_TRANSPOSE:
		rule_transpose(p);
		return;
	case BK_SOFTMAX:
		rule_softmax(p);
		return;
	case BK_LAYER_NORM:
		rule_layernorm(p);
		return;
	case BK_REDUCE:
		rule_reduce(p);
		return;
	case BK_MATMUL:
		rule_matmul(p);
		return;
	case BK_GEMM:
		rule_gemm(p);
		return;
	case BK_N_FIRST:
		rule_n_first(p);
		return;
	case BK_EINSUM:
		rule_einsum(p);
		return;
	case BK_CONCAT: case BK_SPLIT: case BK_SLICE: case BK_REPEAT:
		rule_copy(p);
		return;
	case BK_GATHER:
		rule_gather(p);
		return;
	case BK_ALONG_AXIS:
		if (d->pad == PD_TOPK) {
			rule_topk(p);
			return;
		}
		break;
	case BK_POSITION: case BK_TRILU:
		rule_make(p);
		return;
	default:
		break;
	}
	if (d && (d->pad == PD_FILL || d->pad == PD_SIZES)) {
		rule_make(p);
		return;
	}
	leak(p, "is not analysed for padding (it may mix padded and real positions)");
}

static uint32_t mix32(uint32_t h, uint64_t x)
{
	for (int i = 0; i < 8; i++)
		h = (h ^ (uint32_t)(x >> 8 * i & 0xff)) * 16777619u;
	return h;
}

/* Which positions sit where along axes with an offset: a Concat along the
 * padded axis makes a layout from its inputs' (in order); every other op
 * passes its inputs' on, and two inputs laid out differently must not be
 * paired position by position. Other ops make such axes only with the same
 * entry at every position (ConstantOfShape, Expand: layout 0, any order);
 * a Pad, Slice or Tile that would make them is refused by its rule. */
static void layout(PP *p)
{
	Node *n = p->n;
	uint32_t lay = 0;
	bool offset = false;
	for (int o = 0; o < n->nout; o++)
		for (int a = 0; n->out[o] != NONE && a < KILN_MAX_RANK; a++)
			offset |= (out(p, o)->axes >> a & 1u) && out(p, o)->off[a] > 0;
	if (!offset)
		return;
	int axis = rec(n)->batch == BK_CONCAT ? concat_axis(p) : 0;
	if (rec(n)->batch == BK_CONCAT && (out(p, 0)->axes >> axis & 1u)) {
		lay = 2166136261u;
		for (int i = 0; i < n->nin; i++) {
			PV *v = in(p, i);
			bool has = v->axes >> axis & 1u;
			lay = mix32(lay, v->lay);
			lay = mix32(lay, has ? (uint64_t)v->inner[axis] : (uint64_t)-dim_of(p, 0, n->in[i], axis));
		}
		lay |= 1;
	} else {
		for (int i = 0; i < n->nin; i++) {
			uint32_t l = in(p, i)->lay;
			if (l && lay && l != lay && !(rec(n)->batch == BK_LAYOUT && shape_input(n, i))) {
				leak(p, "pairs positions of inputs laid out differently along the padded axis "
				        "(concatenated in different orders)");
				return;
			}
			lay = lay ? lay : l;
		}
		/* none: made by ConstantOfShape or Expand, the same at every position */
	}
	for (int o = 0; o < n->nout; o++)
		if (n->out[o] != NONE)
			out(p, o)->lay = lay;
}

/* A node: an unstable input used as data is the verdict; else the rule,
 * whose refusal makes the outputs unstable (used only for their shapes,
 * they are harmless). */
static void analyse(PP *p)
{
	Node *n = p->n;
	const OpDef *d = op_def(n->op);
	for (int i = 0; i < n->nin; i++) {
		PV *v = in(p, i);
		bool shape_only = (d && d->shape_only) || shape_input(n, i);
		if (v->bad && !shape_only) {
			p->why = v->bad;
			return;
		}
	}
	p->nwhy = NULL;
	analyse_node(p);
	if (!p->nwhy)
		layout(p);
	for (int o = 0; p->nwhy && o < n->nout; o++)
		if (n->out[o] != NONE)
			p->v[n->out[o]].bad = p->nwhy;
}

/* ---- the pass ------------------------------------------------------------------- */

bool pad_is_mask(const PadOptions *po, const char *name)
{
	if (po->nmasks) {
		for (int i = 0; i < po->nmasks; i++)
			if (strcmp(po->masks[i], name) == 0)
				return true;
		return false;
	}
	for (const char *s = name; *s; s++)
		if (strncasecmp(s, "mask", 4) == 0)
			return true;
	return false;
}

void pad_check(Model *m, const BindOptions *o, const PadOptions *po, PadCheck *out)
{
	memset(out, 0, sizeof *out);
	out->minimum = 1;
	out->masks = "";
	Graph *g = m->graph;
	PP p = {.m = m, .g = g, .a = m->arena, .symbol = po->symbol, .minimum = 1};
	int64_t hi = 0;   /* probes: the largest bucket and twice it (a bucket below a
	                     kNN's k fails only the minimum, with its own message) */
	for (int i = 0; i < po->nbuckets; i++)
		if (po->buckets[i] > hi)
			hi = po->buckets[i];
	if (hi < 1)
		diag_fail(m->diag, KILN_USAGE, "--pad-check %s: no bucket size", po->symbol);
	if (hi > (1 << 28))
		diag_fail(m->diag, KILN_LIMIT, "--pad-check %s: bucket %lld is larger than 2^28",
		          po->symbol, (long long)hi);
	p.pv[0] = hi;
	p.pv[1] = 2 * hi;
	/* every input carrying the symbol; the masks among them */
	bool found = false;
	for (int i = 0; i < g->ninputs; i++) {
		const Value *v = &g->values[g->inputs[i]];
		for (int k = 0; v->kind == VAL_INPUT && k < v->shape.rank; k++)
			found |= v->shape.dims[k].param && strcmp(v->shape.dims[k].param, po->symbol) == 0;
	}
	if (!found)
		diag_fail(m->diag, KILN_USAGE, "--pad-check %s: no input has a dim named \"%s\"",
		          po->symbol, po->symbol);
	for (int i = 0; i < po->nmasks; i++) {
		int id = graph_lookup_local(g, po->masks[i]);
		if (id == NONE || g->values[id].kind != VAL_INPUT)
			diag_fail(m->diag, KILN_USAGE, "--mask %s: the model has no input of that name",
			          po->masks[i]);
	}
	/* shapes at batch 1 and the two probe sizes */
	DimValue *dims = arena_array(m->arena, (size_t)o->ndims + 1, sizeof *dims);
	int nd = 0;
	for (int i = 0; i < o->ndims; i++)
		if (strcmp(o->dims[i].symbol, po->symbol) != 0)
			dims[nd++] = o->dims[i];
	for (int q = 0; q < 2; q++) {
		BindOptions b = *o;
		dims[nd] = (DimValue){po->symbol, p.pv[q]};
		b.dims = dims;
		b.ndims = nd + 1;
		p.p[q] = arena_alloc(m->arena, sizeof(Sig));
		p.p[q]->batch = 1;
		p.p[q]->g = g;
		shape_infer(p.p[q], &b, m->arena, m->diag);
	}
	p.v = arena_array(m->arena, (size_t)g->nvalues, sizeof *p.v);
	char *names = arena_alloc(m->arena, 1024);
	size_t nl = 0;
	names[0] = 0;
	for (int i = 0; i < g->ninputs; i++) {
		int id = g->inputs[i];
		const Value *v = &g->values[id];
		if (v->kind != VAL_INPUT)
			continue;
		find_axes(&p, id);
		PV *pv = &p.v[id];
		if (pv->nonlinear || !padded(pv))
			continue;
		for (int a = 0; a < KILN_MAX_RANK; a++)
			pv->pad[a] = K_ZERO;   /* features 0, masks 0 */
		if (pad_is_mask(po, v->name)) {
			pv->has_real = true;
			pv->real = 1;
			out->nmask_inputs++;
			if (nl + strlen(v->name) + 3 < 1024)
				nl += (size_t)snprintf(names + nl, 1024 - nl, "%s%s", nl ? ", " : "", v->name);
		}
	}
	out->masks = names;
	for (int i = 0; i < g->nnodes && !p.why; i++) {
		p.n = &g->nodes[i];
		analyse(&p);
	}
	for (int i = 0; i < g->noutputs && !p.why; i++) {
		int id = g->outputs[i];
		if (p.v[id].bad) {
			p.why = p.v[id].bad;
		} else if (p.v[id].dep && g->values[id].producer != NONE) {
			p.n = &g->nodes[g->values[id].producer];
			leak(&p, "graph output \"%s\" depends on the bucket size", g->values[id].name);
			p.why = p.nwhy;
		}
	}
	out->why = p.why;
	out->proven = !p.why;
	out->minimum = p.minimum;
}
