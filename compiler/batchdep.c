/*
 * batchdep.c - prove that no op mixes rows along the batch axis, so that
 * the runtime may stitch a batch of n from compiled chunks and pad the last.
 *
 * The pass infers shapes at two probe batch sizes of its own (2 and 3, so
 * the verdict does not depend on which sizes are compiled) and walks the top
 * graph in node order, giving every value one state:
 *
 *   BD_NONE      the same contents whatever the batch (weights, constants,
 *                shape arithmetic that does not involve the batch);
 *   k >= 0       rows: axis k has extent batch * d, and sample b's contents
 *                depend only on sample b of the inputs;
 *   BD_GLOBAL    depends on the batch size but has no rows (Shape or Size of
 *                a batched tensor, and arithmetic on those).
 *
 * Each op that sees rows has a rule saying where its outputs' batch axis
 * goes, or that it mixes rows (a reduction, softmax or normalization over
 * the batch axis, a concat or gather along it, a MatMul contracting it,
 * BatchNormalization in training mode, ...). A GLOBAL value may only feed
 * the shape inputs of an op (Reshape's shape, Slice's ends, ...); as data
 * it makes results depend on the batch size. Every rule's claim is checked
 * against the probe shapes: a rows output must keep every other dim and
 * scale exactly on its axis. An op without a rule is reported as "may mix
 * rows", never assumed independent: ops are added faster than rules.
 *
 * Flat indices. ParticleNet's neighbour gather (and DGCNN's, and many
 * graph networks') reads every sample's rows out of the whole batch
 * flattened to [N*P, C], at idx + n*P: Gather along the batch axis, which
 * mixes rows unless the index stays within the sample's own block. Integer
 * values carry one more fact for that (IdxFact):
 *
 *   IX_BOUND   every element is in [0, bound): TopK's indices over an axis
 *              of bound elements, and what Slice, Gather, Transpose and the
 *              reshaping ops make of them (they only move or drop elements);
 *   IX_BASE    a batch-size dependent value (BD_GLOBAL) whose element at
 *              position n of its axis (axis) is n * scale and that is one
 *              element per sample there: Range(0, N) over the batch,
 *              reshaped and times a constant, recognized from its contents
 *              at both probes (where shape arithmetic folds it), so any
 *              spelling of it counts;
 *   IX_FLAT    rows on axis k whose sample n holds n * scale + v with v an
 *              IX_BOUND element: the sum of the two above, the batch axes
 *              aligned by broadcasting.
 *
 * An IX_FLAT value depends on the sample's position in the batch, so it may
 * only be reshaped or expanded (Reshape, Flatten, Squeeze, Unsqueeze,
 * Identity, Expand: it stays IX_FLAT), be a column of index tuples (below)
 * or be the indices of a Gather (GatherElements, ScatterElements) along the
 * data's batch axis, and then only when bound <= scale and the data's block
 * per sample on that axis is exactly scale elements: every index of sample n
 * is then in [n*scale, (n+1)*scale), sample n's own block, and the output is
 * rows on the axis the indices bring. Anything else (an offset n*(P-1) or n*(P+1), indices from a
 * TopK over a longer axis, a flat index used as data or output) is refused as
 * before. The probes check every claim's shapes as for other rules.
 *
 * The batch merged with other factors. A rows value also has an outer
 * factor O (outer, 1 unless a reshape says otherwise): its batch axis has
 * extent O * batch * I, position (o, n, i) belonging to sample n, as a
 * sequence-first attention's [P, N*H, C/H] -> [P*N, C] makes (O = P). The
 * reshaping ops work it out (rule_layout); every other rule treats the
 * batch axis position by position, so holds for any O, as long as a node's
 * rows inputs share one O (rows_outer). Flat indices, index tuples and the
 * graph outputs need O = 1.
 *
 * Index tuples. ScatterND and GatherND address data with tuples along the
 * indices' last axis; PyTorch's index_put (ParT's pair embedding, y[:, :,
 * i, j] = el) concatenates Range(N), the other ranges and i, j expanded to
 * one shape. A base or flat index keeps its fact through Expand and the
 * reshaping ops (from the shapes when its contents are too large to fold),
 * and a Concat along the last axis of one such column with rows columns
 * makes IX_TUPLE: rows, one tuple per sample, component c = n*scale +
 * [0, bound). ScatterND/GatherND at such tuples keep rows when c is the
 * data's batch axis, bound <= scale and the data's block per sample there
 * is scale (tuple_nd). Any other sum of a base is IX_POS: a batch-size
 * dependent value that may only feed shapes (index_put adds its index
 * tensors to take the broadcast shape), refused with the reason as data.
 *
 * Control flow. An If whose condition is known at compile time, the same
 * branch at both probes, is analysed through its branch (the values it
 * captures keep their states); other control flow that sees rows or batch
 * size dependent values, as inputs or through its subgraphs, may mix rows.
 *
 * The first failure is the verdict's reason, naming the node. The pass
 * never fails the compile: a model that mixes rows still compiles, and only
 * its compiled batch sizes run.
 */
#include <stdarg.h>
#include <string.h>

#include "control.h"
#include "ops/ops.h"
#include "stitch.h"
#include "opdef.h"

/* What is known of an integer value's contents (see the header). */
enum { IX_NONE, IX_BOUND, IX_BASE, IX_FLAT, IX_POS, IX_TUPLE };
typedef struct IdxFact {
	int kind;
	int axis;           /* IX_BASE: the axis holding n; IX_TUPLE: the component */
	int64_t scale;      /* IX_BASE, IX_FLAT, IX_POS, IX_TUPLE: the offset per sample */
	int64_t bound;      /* IX_BOUND, IX_FLAT, IX_TUPLE: elements (beyond the offset) in [0, bound) */
} IdxFact;

typedef struct BD {
	Graph *g;
	IdxFact *ix;        /* per value id */
	Sig *p[2];          /* probe signatures at batch 2 and 3 */
	int *ax;            /* per value id: BD_NONE, BD_GLOBAL or the batch axis */
	int64_t *outer;     /* per value id with rows: blocks before the batch on its axis */
	int64_t o;          /* the node's rows inputs' outer factor */
	Arena *a;
	const char *why;    /* the first reason rows mix */
	Node *n;
	Diag *d;
} BD;

static const int64_t probe_batch[2] = {2, 3};

static void mix(BD *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mix(BD *b, const char *fmt, ...)
{
	if (b->why)
		return;
	char where[512], what[512];
	diag_node_path(where, sizeof where, b->g, b->n);
	if (b->n->synthetic)  /* name the model's node, not the optimizer's */
		snprintf(where, sizeof where, "node \"%s\" (the %s the optimizer made of it)",
		         b->n->name, b->n->op_type);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	b->why = arena_printf(b->a, "%s: %s", where, what);
}

/* ---- probe shapes ------------------------------------------------------- */

static const Shape *pshape(BD *b, int p, int id)
{
	return &b->p[p]->shapes[id];
}

static int rank_of(BD *b, int id)
{
	return pshape(b, 0, id)->rank;
}

static int64_t dim_of(BD *b, int p, int id, int k)
{
	return pshape(b, p, id)->dims[k].size;
}

/* Do the probes agree on every dim but k, with dim k = batch * d (d > 0)? */
static bool scales_on(BD *b, int id, int k)
{
	const Shape *s0 = pshape(b, 0, id), *s1 = pshape(b, 1, id);
	if (s0->rank != s1->rank || k < 0 || k >= s0->rank)
		return false;
	for (int j = 0; j < s0->rank; j++) {
		int64_t d0 = s0->dims[j].size, d1 = s1->dims[j].size;
		if (j != k && d0 != d1)
			return false;
		if (j == k && (d0 <= 0 || d0 % probe_batch[0] ||
		               d0 / probe_batch[0] * probe_batch[1] != d1))
			return false;
	}
	return true;
}

/* The one axis on which the value scales with the batch; BD_NONE if the
 * probes give the same shape, -3 if it changes some other way. */
static int find_axis(BD *b, int id)
{
	const Shape *s0 = pshape(b, 0, id), *s1 = pshape(b, 1, id);
	if (s0->rank != s1->rank)
		return -3;
	int k = BD_NONE;
	for (int j = 0; j < s0->rank; j++)
		if (s0->dims[j].size != s1->dims[j].size) {
			if (k != BD_NONE)
				return -3;
			k = j;
		}
	return k == BD_NONE || scales_on(b, id, k) ? k : -3;
}

static bool same_shape(BD *b, int id)
{
	const Shape *s0 = pshape(b, 0, id), *s1 = pshape(b, 1, id);
	if (s0->rank != s1->rank)
		return false;
	for (int j = 0; j < s0->rank; j++)
		if (s0->dims[j].size != s1->dims[j].size)
			return false;
	return true;
}

/* Known at compile time, and equal at both probes. */
static bool same_contents(BD *b, int id)
{
	const Folded *f0 = b->p[0]->folded[id], *f1 = b->p[1]->folded[id];
	return same_shape(b, id) && f0 && f1 && f0->dtype == f1->dtype && f0->nelem == f1->nelem &&
	       memcmp(f0->data, f1->data, dtype_bytes(f0->dtype, f0->nelem)) == 0;
}

static int64_t prod_before(BD *b, int p, int id, int k)
{
	int64_t n = 1;
	for (int j = 0; j < k; j++)
		n *= dim_of(b, p, id, j);
	return n;
}

/* Element i of folded integer contents. */
static bool int_elem(const Folded *f, int64_t i, int64_t *v)
{
	if (f->dtype == DT_INT64) {
		memcpy(v, (const char *)f->data + 8 * i, 8);
		return true;
	}
	if (f->dtype == DT_INT32) {
		int32_t x;
		memcpy(&x, (const char *)f->data + 4 * i, 4);
		*v = x;
		return true;
	}
	return false;
}

/* Element i of a folded integer input of the node at probe p; false if unknown. */
static bool folded_int(BD *b, int p, int input, int64_t i, int64_t *v)
{
	if (input >= b->n->nin || b->n->in[input] == NONE)
		return false;
	int id = b->n->in[input];
	const Folded *f = b->p[p]->folded[id];
	const Value *val = &b->g->values[id];
	Folded w;
	if (!f && val->kind == VAL_WEIGHT) {
		w = (Folded){val->dtype, val->weight->nelem, val->weight->bytes};
		f = &w;
	}
	return f && i < f->nelem && int_elem(f, i, v);
}

static int64_t folded_len(BD *b, int input)
{
	if (input >= b->n->nin || b->n->in[input] == NONE)
		return -1;
	int id = b->n->in[input];
	const Folded *f = b->p[0]->folded[id];
	if (f)
		return f->nelem;
	const Value *val = &b->g->values[id];
	return val->kind == VAL_WEIGHT ? val->weight->nelem : -1;
}

/* ---- op knowledge --------------------------------------------------------- */

/* The node as its family's resolvers see it (tensor_params, reduce_params,
 * ...), at the first probe: its inference resolved and checked the
 * attributes there already, so a resolver cannot fail here. */
static Infer node_infer(BD *b)
{
	return (Infer){.sig = b->p[0], .g = b->g, .n = b->n, .d = b->d, .a = b->a};
}

static TensorParams tensor_of(BD *b)
{
	Infer x = node_infer(b);
	TensorParams p;
	tensor_params(&x, &p);
	return p;
}

static ReduceParams reduce_of(BD *b)
{
	Infer x = node_infer(b);
	ReduceParams p;
	reduce_params(&x, &p);
	return p;
}

static NormParams norm_of(BD *b)
{
	Infer x = node_infer(b);
	NormParams p;
	norm_params(&x, &p);
	return p;
}

static int norm(int64_t axis, int rank)
{
	return (int)(axis < 0 ? axis + rank : axis);
}

/* The node's record; an empty one (BK_NONE) if kiln has none. */
static const OpDef *rec(const Node *n)
{
	static const OpDef none = {.op = NONE};
	const OpDef *d = op_def(n->op);
	return d ? d : &none;
}

/* Inputs read for their values as shapes, sizes, axes or counts, never as
 * rows: a batch-size-dependent value may go there (the output shapes are
 * checked against the probes anyway). */
static bool shape_slot(int op, int i)
{
	const OpDef *d = op_def(op);
	return d && i < 32 && (d->shape_inputs >> i & 1u);
}

/* Inputs that hold rows of the same samples as input 0 (OpDef.row_inputs). */
static bool row_slot(int op, int i)
{
	const OpDef *d = op_def(op);
	return d && i < 32 && (d->row_inputs >> i & 1u);
}

/* ---- rules ---------------------------------------------------------------- */

/* Combine: out axis for one rows input; the first sets it, others must agree. */
static bool agree(BD *b, int *target, int axis)
{
	if (*target == BD_NONE)
		*target = axis;
	else if (*target != axis) {
		mix(b, "combines rows of different samples (its inputs carry the batch on different "
		       "axes of the output)");
		return false;
	}
	return true;
}

static void set_outputs(BD *b, int axis)
{
	for (int k = 0; k < b->n->nout; k++)
		if (b->n->out[k] != NONE) {
			b->ax[b->n->out[k]] = axis;
			b->outer[b->n->out[k]] = axis >= 0 ? b->o : 1;
		}
}

static int in_axis(BD *b, int i)
{
	return i < b->n->nin && b->n->in[i] != NONE ? b->ax[b->n->in[i]] : BD_NONE;
}

static void rule_elementwise(BD *b)
{
	Node *n = b->n;
	int R = rank_of(b, n->out[0]), target = BD_NONE;
	for (int i = 0; i < n->nin; i++) {
		int k = in_axis(b, i);
		if (k >= 0 && !shape_slot(n->op, i) &&
		    !agree(b, &target, k + R - rank_of(b, n->in[i])))
			return;
	}
	set_outputs(b, target);
}

/* Reshape and friends. A value with rows on axis k of extent O * batch * I
 * (outer factor O, see the header) is, flattened, [A, batch, B] with A the
 * elements before the batch (the dims before k times O). Reshaping keeps
 * the flat order, so the output holds the same [A, batch, B] when its
 * batch axis j has O' = A / (dims before j) whole blocks before the batch
 * and the rest after: a sequence-first attention's [P, N, C] ->
 * [P, N*H, C/H] (O' = 1, the heads inner) and [P, N*H, C/H] -> [P*N, C]
 * (O' = P) and back. Anything else interleaves samples' elements. */
static void rule_layout(BD *b, int k)
{
	int in = b->n->in[0], out = b->n->out[0];
	int j = find_axis(b, out);
	if (j < 0) {
		mix(b, "reshapes the batch axis %d into other axes", k);
		return;
	}
	int64_t o = 1;
	for (int p = 0; p < 2; p++) {
		int64_t a = prod_before(b, p, in, k) * b->outer[in], before = prod_before(b, p, out, j);
		int64_t per = dim_of(b, p, out, j) / probe_batch[p];
		bool fits = a > 0 && before > 0 ? a % before == 0 && per % (a / before) == 0 &&
		                                  (p == 0 || a / before == o)
		                                : a == before;
		if (!fits) {
			mix(b, "reshapes across the batch axis %d: samples' elements would interleave", k);
			return;
		}
		o = a > 0 && before > 0 ? a / before : 1;
	}
	set_outputs(b, j);
	b->outer[out] = o;
}

/* The dim at axis k must be untouched (Pad, Tile, Slice, Resize on it). */
static bool keeps_dim(BD *b, int in, int k, int out, int ko)
{
	for (int p = 0; p < 2; p++)
		if (dim_of(b, p, in, k) != dim_of(b, p, out, ko))
			return false;
	return true;
}

static void rule_slice(BD *b, int k)
{
	Node *n = b->n;
	int in = n->in[0], out = n->out[0];
	if (keeps_dim(b, in, k, out, k)) {
		/* A full-length slice along the batch must not run backwards. */
		int64_t na = n->since >= 10 ? folded_len(b, 3) : -1;
		int64_t nstarts = n->since >= 10 ? folded_len(b, 1) : -1;
		if (n->since >= 10 && nstarts < 0) {
			mix(b, "slices axes that are not known at compile time");
			return;
		}
		for (int64_t i = 0; n->since >= 10 && i < nstarts; i++) {
			int64_t axis = i, step = 1;
			if (na >= 0 && !folded_int(b, 0, 3, i, &axis)) {
				mix(b, "slices axes that are not known at compile time");
				return;
			}
			if (norm(axis, rank_of(b, in)) != k)
				continue;
			if (folded_len(b, 4) >= 0 && !folded_int(b, 0, 4, i, &step)) {
				mix(b, "slices with steps that are not known at compile time");
				return;
			}
			if (step != 1) {
				mix(b, "reverses or strides the batch axis %d", k);
				return;
			}
		}
		set_outputs(b, k);
		return;
	}
	mix(b, "slices the batch axis %d", k);
}

static void rule_gather(BD *b)
{
	Node *n = b->n;
	int kd = in_axis(b, 0), ki = in_axis(b, 1);
	int axis = tensor_of(b).axis;
	if (kd >= 0 && ki >= 0) {
		mix(b, "gathers from batched data with batched indices");
	} else if (kd >= 0) {
		if (kd == axis)
			mix(b, "gathers along the batch axis %d", kd);
		else
			set_outputs(b, kd < axis ? kd : kd + rank_of(b, n->in[1]) - 1);
	} else {
		set_outputs(b, axis + ki);   /* a lookup per row, such as an embedding */
	}
}

/* GatherElements, ScatterElements, Scatter: every operand rows on one axis. */
static void rule_elements(BD *b)
{
	Node *n = b->n;
	int k = in_axis(b, 0), axis = tensor_of(b).axis;
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] != NONE && in_axis(b, i) != k) {
			mix(b, "indexes batched and unbatched operands together");
			return;
		}
	if (k == axis)
		mix(b, "indexes along the batch axis %d", k);
	else
		set_outputs(b, k);
}

/* MatMul (B is input ib = 1), and QLinearMatMul and KilnQLinearMatMul
 * (ib = 3) whose scales, zero points and (KilnQLinearMatMul) bias must not
 * carry the batch axis. */
static void rule_matmul_at(BD *b, int ib)
{
	Node *n = b->n;
	for (int k = 1; k < n->nin; k++)
		if (k != ib && n->in[k] != NONE && in_axis(b, k) >= 0) {
			mix(b, "reads a quantization parameter along the batch axis");
			return;
		}
	int ra = rank_of(b, n->in[0]), rb = rank_of(b, n->in[ib]), R = rank_of(b, n->out[0]);
	int ka = in_axis(b, 0), kb = in_axis(b, ib), target = BD_NONE;
	if (ka >= 0) {
		if (ka == ra - 1) {
			mix(b, "contracts over the batch axis (of its first input)");
			return;
		}
		int out = ka == ra - 2 ? (rb == 1 ? R - 1 : R - 2) : ka + (rb == 1 ? 0 : R - ra);
		if (!agree(b, &target, out))
			return;
	}
	if (kb >= 0) {
		if (rb == 1 || kb == rb - 2) {
			mix(b, "contracts over the batch axis (of its second input)");
			return;
		}
		int out = kb == rb - 1 ? R - 1 : kb + (ra == 1 ? 0 : R - rb);
		if (!agree(b, &target, out))
			return;
	}
	set_outputs(b, target);
}

static void rule_matmul(BD *b)
{
	rule_matmul_at(b, 1);
}

static void rule_gemm(BD *b)
{
	Node *n = b->n;
	int target = BD_NONE, ka = in_axis(b, 0), kb = in_axis(b, 1), kc = in_axis(b, 2);
	Infer x = node_infer(b);
	GemmParams gp;
	gemm_params(&x, &gp);
	if (ka >= 0) {
		if (ka != (gp.trans_a ? 1 : 0)) {
			mix(b, "contracts over the batch axis (of A)");
			return;
		}
		agree(b, &target, 0);
	}
	if (kb >= 0) {
		if (kb != (gp.trans_b ? 0 : 1)) {
			mix(b, "contracts over the batch axis (of B)");
			return;
		}
		if (!agree(b, &target, 1))
			return;
	}
	if (kc >= 0 && !agree(b, &target, kc + 2 - rank_of(b, n->in[2])))
		return;
	set_outputs(b, target);
}

static void rule_einsum(BD *b)
{
	Node *n = b->n;
	Infer x = node_infer(b);
	Einsum e;   /* the equation, parsed (an implicit output: the letters used once) */
	einsum_parse(&x, &e);
	if (e.ellipsis) {
		mix(b, "einsum with an ellipsis is not analysed for batch independence yet");
		return;
	}
	int nt = e.noperands;
	const char *out = e.out;
	int target = BD_NONE;
	for (int i = 0; i < n->nin && i < nt; i++) {
		int k = in_axis(b, i);
		if (k < 0)
			continue;
		const char *term = e.term[i];
		if (k >= (int)strlen(term)) {
			mix(b, "has an equation that does not fit its inputs");
			return;
		}
		char letter = term[k];
		const char *at = strchr(out, letter);
		if (!at || strchr(term, letter) != term + k || strrchr(term, letter) != term + k) {
			mix(b, "sums or takes a diagonal over the batch axis (letter '%c')", letter);
			return;
		}
		if (!agree(b, &target, (int)(at - out)))
			return;
	}
	set_outputs(b, target);
}

static void rule_reduce(BD *b, int k)
{
	Node *n = b->n;
	int r = rank_of(b, n->in[0]);
	/* the axes as ops/reduce.c resolves them: input 1 (known at inference)
	 * where the schema admits one, else the attribute of the older versions */
	ReduceParams rp = reduce_of(b);
	if (rp.noop) {
		set_outputs(b, k);
		return;
	}
	if (rp.reduce[k]) {
		mix(b, "reduces over the batch axis %d", k);
		return;
	}
	int out = k;
	if (!rp.keepdims)
		for (int j = 0; j < k && j < r; j++)
			out -= rp.reduce[j];
	set_outputs(b, out);
}

static void rule_recurrent(BD *b, int k)
{
	Node *n = b->n;
	Infer x = node_infer(b);
	RnnNode rn;
	rnn_node(&x, &rn);
	bool layout = rn.layout != 0;
	if (k != (layout ? 0 : 1)) {
		mix(b, "runs its recurrence over the batch axis %d", k);
		return;
	}
	for (int i = 1; i < n->nin; i++) {
		int ki = in_axis(b, i);
		int want = i == 4 ? 0 : (i == 5 || i == 6) ? (layout ? 0 : 1) : BD_NONE;
		if (ki != BD_NONE && ki != want) {
			mix(b, "input %d carries the batch on axis %d", i, ki);
			return;
		}
	}
	for (int o = 0; o < n->nout; o++)
		if (n->out[o] != NONE)
			b->ax[n->out[o]] = layout ? 0 : (o == 0 ? 2 : 1);
}

static void rule_n_first(BD *b, int k)
{
	Node *n = b->n;
	if (k != 0) {
		mix(b, "works across axis %d, which carries the batch", k);
		return;
	}
	for (int i = 1; i < n->nin; i++) {
		int ki = in_axis(b, i);
		/* the record's row inputs are read sample by sample like the data */
		if (ki != BD_NONE && !(row_slot(n->op, i) && ki == 0)) {
			mix(b, "input %d carries the batch", i);
			return;
		}
	}
	unsigned flags = rec(n)->batch_flags;
	if ((flags & BF_TRAINING_STATS) &&
	    (norm_of(b).training || (n->nout > 1 && n->out[1] != NONE))) {
		mix(b, "%s in training mode takes statistics over the batch", n->op_type);
		return;
	}
	if ((flags & BF_FLAT_INDICES) && n->nout > 1 && n->out[1] != NONE) {
		mix(b, "%s's indices count elements across the whole batch", n->op_type);
		return;
	}
	if ((flags & BF_KEEPS_BATCH) && !keeps_dim(b, n->in[0], 0, n->out[0], 0)) {
		mix(b, "resizes the batch axis");
		return;
	}
	set_outputs(b, 0);
}

/* The fused attention (ops/attention.c): every batch and head is computed
 * on its own, and every query row; a batch axis in K's or V's rows would
 * mix samples. Inputs read through kiln.perm_*: logical axis L of input i is
 * its axis perm[L]. In the 3-D form (Q 3-D) each input is read with a
 * leading unit axis, and a 3-D mask [B, q, kv] as [B, 1, q, kv]; the output
 * drops the leading unit axis. A batch axis with heads merged into it (an
 * outer factor, rows_outer) is read position by position, as the kernel
 * reads the merged axis. */
static void rule_attention(BD *b)
{
	Node *n = b->n;
	int64_t perm[4][4];   /* kiln.perm_q, _k, _v, _y: checked at inference */
	if (attention_perms(n, perm)) {
		mix(b, "has no layout kiln can read");
		return;
	}
	bool three = rank_of(b, n->in[0]) == 3;
	int target = BD_NONE;
	for (int i = 0; i < n->nin; i++) {
		int k = in_axis(b, i), L = -1;
		if (k < 0)
			continue;
		if (i < 3) {
			for (int d = 0; d < 4; d++)
				if (perm[i][d] == k + three)
					L = d;
		} else if (three && rank_of(b, n->in[i]) == 3) {
			L = k == 0 ? 0 : k + 1;
		} else {
			L = k + 4 - rank_of(b, n->in[i]);
		}
		if (L < 0 || L > 2 || (L == 2 && (i == 1 || i == 2))) {
			mix(b, "attends over the batch axis %d (of its input %d)", k, i);
			return;
		}
		if (!agree(b, &target, L))
			return;
	}
	int out = BD_NONE;
	for (int d = 0; target != BD_NONE && d < 4; d++)
		if (perm[3][d] == target)
			out = d - three;
	set_outputs(b, out);
}

static void rule_softmax(BD *b, int k)
{
	Node *n = b->n;
	bool coerced = n->since < 13;   /* older versions flatten to 2-D at axis */
	int axis = norm_of(b).axis;
	if (coerced ? k >= axis : k == axis)
		mix(b, "normalizes over the batch axis %d", k);
	else
		set_outputs(b, k);
}

static void rule_loss(BD *b, int k)
{
	bool none = norm_of(b).reduction == LOSS_NONE;
	if (!none || k != 0 || in_axis(b, 1) != 0 || in_axis(b, 2) != BD_NONE) {
		mix(b, "reduces the loss over the batch");
		return;
	}
	set_outputs(b, 0);
}

/* The rule of a node with at least one rows input. */
static void rows_rule(BD *b, int k)
{
	Node *n = b->n;
	int op = n->op;
	const OpDef *d = op_def(op);
	switch (d ? d->batch : BK_NONE) {
	case BK_DROPOUT:   /* inference refuses a random mask: rows as they are */
	case BK_ELEMENTWISE: rule_elementwise(b); return;
	case BK_N_FIRST: rule_n_first(b, k); return;
	case BK_LAYOUT:
		rule_layout(b, k);
		return;
	case BK_TRANSPOSE: {
		int r = rank_of(b, n->in[0]);
		TensorParams tp = tensor_of(b);   /* perm: the attribute, or the axes reversed */
		for (int j = 0; j < r; j++)
			if (tp.perm[j] == k) {
				set_outputs(b, j);
				return;
			}
		mix(b, "has a permutation without the batch axis");
		return;
	}
	case BK_CONCAT: {
		int axis = tensor_of(b).axis;
		for (int i = 0; i < n->nin; i++)
			if (n->in[i] != NONE && in_axis(b, i) != k) {
				mix(b, in_axis(b, i) >= 0 ? "concatenates tensors batched on different axes"
				                          : "concatenates batched and unbatched tensors");
				return;
			}
		if (axis == k)
			mix(b, "concatenates along the batch axis %d", k);
		else
			set_outputs(b, k);
		return;
	}
	case BK_SPLIT:
		if (tensor_of(b).axis == k)
			mix(b, "splits along the batch axis %d", k);
		else
			set_outputs(b, k);
		return;
	case BK_SLICE: rule_slice(b, k); return;
	case BK_GATHER: rule_gather(b); return;
	case BK_ELEMENTS: rule_elements(b); return;
	case BK_GATHER_ND:
		/* batch_dims >= 1 with both operands rows on axis 0: sample n's
		 * indices address sample n's data only (TF's gather(batch_dims=1)) */
		if (tensor_of(b).batch_dims >= 1 && in_axis(b, 0) == 0 && in_axis(b, 1) == 0)
			set_outputs(b, 0);
		else
			mix(b, "gathers across samples (GatherND keeps rows only with batch_dims >= 1 "
			       "and data and indices batched on axis 0)");
		return;
	case BK_MATMUL: rule_matmul(b); return;
	case BK_QLINEAR_MATMUL: rule_matmul_at(b, 3); return;
	case BK_GEMM: rule_gemm(b); return;
	case BK_EINSUM: rule_einsum(b); return;
	case BK_SOFTMAX: rule_softmax(b, k); return;
	case BK_ATTENTION: rule_attention(b); return;
	case BK_LAYER_NORM: {
		int axis = norm_of(b).axis;
		if (k >= axis || in_axis(b, 1) != BD_NONE || in_axis(b, 2) != BD_NONE ||
		    (n->nin > 3 && in_axis(b, 3) != k))  /* a fused residual: rows like X */
			mix(b, "normalizes over the batch axis %d", k);
		else
			set_outputs(b, k);
		return;
	}
	case BK_ROI_POOL:
		mix(b, "each ROI reads the image its batch index (column 0 of rois) names");
		return;
	case BK_AXIS_ATTR: {
		Infer x = node_infer(b);
		LpNorm lp;
		misc_lpnorm_params(&x, &lp);
		if (lp.axis == k)
			mix(b, "normalizes over the batch axis %d", k);
		else
			set_outputs(b, k);
		return;
	}
	case BK_REDUCE:
		rule_reduce(b, k);
		return;
	case BK_ARG_EXTREMUM: {
		ReduceParams rp = reduce_of(b);
		int axis = rp.axis;
		if (axis == k)
			mix(b, "reduces over the batch axis %d", k);
		else
			set_outputs(b, rp.keepdims || k < axis ? k : k - 1);
		return;
	}
	case BK_ALONG_AXIS: {
		KILN_ASSERT(d->along);
		bool input = d->batch_flags & BF_AXIS_INPUT;
		int64_t axis = 0;
		if (input ? !folded_int(b, 0, 1, 0, &axis) : !d->axis) {
			mix(b, "%s along an axis that is not known at compile time", d->along);
			return;
		}
		if (!input) {
			Infer x = node_infer(b);
			axis = d->axis(&x);
		}
		if (norm(axis, rank_of(b, n->in[0])) == k)
			mix(b, "%s along the batch axis %d", d->along, k);
		else
			set_outputs(b, k);
		return;
	}
	case BK_DET:
		if (k >= rank_of(b, n->in[0]) - 2)
			mix(b, "takes the determinant of matrices that contain the batch axis %d", k);
		else
			set_outputs(b, k);
		return;
	case BK_MVN: {
		Infer x = node_infer(b);   /* the axes, a mask; by default [0, 2, 3] */
		if (misc_mvn_axes(&x, rank_of(b, n->in[0])) >> k & 1u)
			mix(b, "normalizes over the batch axis %d", k);
		else
			set_outputs(b, k);
		return;
	}
	case BK_DFT: {
		/* axis: the attribute before opset 20, then input 2 (default -2),
		 * known at inference */
		Infer x = node_infer(b);
		if (signal_dft_axis(&x, rank_of(b, n->in[0])) == k)
			mix(b, "transforms along the batch axis %d", k);
		else
			set_outputs(b, k);
		return;
	}
	case BK_TRILU:
		if (k >= rank_of(b, n->in[0]) - 2)
			mix(b, "works on a matrix that contains the batch axis %d", k);
		else
			set_outputs(b, k);
		return;
	case BK_ONE_HOT: {
		int axis = tensor_of(b).axis;   /* an axis of the output */
		if (in_axis(b, 0) != k || in_axis(b, 2) != BD_NONE)
			mix(b, "takes batched depth or values");
		else
			set_outputs(b, k < axis ? k : k + 1);
		return;
	}
	case BK_REPEAT: {
		int out = n->out[0], ko = k + rank_of(b, out) - rank_of(b, n->in[0]);
		bool pad = d->batch_flags & BF_PAD_VALUE;
		if (in_axis(b, 0) != k || (pad && in_axis(b, 2) != BD_NONE))
			mix(b, "takes a batched pad value or shape");
		else if (!keeps_dim(b, n->in[0], k, out, ko))
			mix(b, "%s the batch axis %d", pad ? "pads" : "repeats", k);
		else
			set_outputs(b, ko);
		return;
	}
	case BK_RECURRENT: rule_recurrent(b, k); return;
	case BK_LOSS: rule_loss(b, k); return;
	case BK_ROWS_AS_IS:  /* --zipmap=tensor: the probabilities as they are */
		set_outputs(b, k);
		return;
	case BK_ROWS_2D:
		/* Each row of [N, F] on its own. */
		if (k != 0 || rank_of(b, n->in[0]) != 2)
			mix(b, "works across the features of axis %d, which carries the batch", k);
		else
			set_outputs(b, 0);
		return;
	case BK_FEATURE_SELECT:
		if (k == rank_of(b, n->in[0]) - 1 || rank_of(b, n->in[0]) < 2 ||
		    in_axis(b, 1) != BD_NONE)
			mix(b, "selects along the batch axis %d", k);
		else
			set_outputs(b, k);
		return;
	case BK_POSITION:
		mix(b, "writes values that depend on each row's position in the batch");
		return;
	case BK_CONTROL:
		mix(b, "control flow is not analysed for batch independence yet: it may mix rows");
		return;
	case BK_NONE:
		break;
	}
	mix(b, "kiln's batch analysis does not know %s, so it may mix rows", n->op_type);
}

/* Does the node fill rows with one constant: BF_CONSTANT_ROWS and no input
 * but shape inputs carries the batch (ConstantOfShape; Expand of unbatched
 * values)? */
static bool constant_rows(BD *b)
{
	Node *n = b->n;
	if (!(rec(n)->batch_flags & BF_CONSTANT_ROWS))
		return false;
	for (int i = 0; i < n->nin; i++)
		if (!shape_slot(n->op, i) && in_axis(b, i) != BD_NONE)
			return false;
	return true;
}

/* Shape and Size of rows, and arithmetic on batch-dependent values: no rows. */
static void metadata_rule(BD *b)
{
	Node *n = b->n;
	for (int o = 0; o < n->nout; o++) {
		int id = n->out[o];
		if (id == NONE)
			continue;
		if (same_contents(b, id)) {
			b->ax[id] = BD_NONE;
		} else if (constant_rows(b) && find_axis(b, id) >= 0) {
			b->ax[id] = find_axis(b, id);  /* rows of one constant: nothing to mix */
			b->outer[id] = 1;
		} else {
			b->ax[id] = BD_GLOBAL;
		}
	}
}

/* ---- flat indices (see the header) ---------------------------------------- */

static const IdxFact *fact(BD *b, int input)
{
	static const IdxFact nothing = {IX_NONE, 0, 0, 0};
	return input < b->n->nin && b->n->in[input] != NONE ? &b->ix[b->n->in[input]] : &nothing;
}

/* Is batch-size dependent value id, at both probes, one element per sample
 * on one axis with element n = n * scale (scale > 0, the same at both)? */
static bool is_base(BD *b, int id, IdxFact *out)
{
	int j = find_axis(b, id);
	if (j < 0)
		return false;
	int64_t scale = 0;
	for (int p = 0; p < 2; p++) {
		const Folded *f = b->p[p]->folded[id];
		const Shape *s = pshape(b, p, id);
		if (!f || dim_of(b, p, id, j) != probe_batch[p])
			return false;
		int64_t inner = 1;
		for (int d = j + 1; d < s->rank; d++)
			inner *= s->dims[d].size;
		if (p == 0 && (f->nelem < 2 * inner || !int_elem(f, inner, &scale) || scale <= 0))
			return false;   /* sample 1's element: the scale */
		for (int64_t i = 0; i < f->nelem; i++) {
			int64_t v, n = i / inner % probe_batch[p];
			if (!int_elem(f, i, &v) || v != n * scale)
				return false;
		}
	}
	*out = (IdxFact){IX_BASE, j, scale, 0};
	return true;
}

/* The largest per-sample extent on axis k of value id at both probes (the
 * same at both: the axis does not carry the batch), or -1. */
static int64_t fixed_dim(BD *b, int id, int k)
{
	if (k < 0 || k >= rank_of(b, id) || dim_of(b, 0, id, k) != dim_of(b, 1, id, k))
		return -1;
	return dim_of(b, 0, id, k);
}

/* The record's use of a position-dependent index (opdef.h). */
static PositionUse position_use(const Node *n)
{
	return rec(n)->position;
}

/* Add(bounded, base) in either order: a flat index, rows on the base's axis.
 * Any other sum with a base is a position-dependent value of unknown range
 * (IX_POS): a batch-size dependent value as far as the rules go, so only its
 * shape may be used (PyTorch's index_put adds its index tensors only to take
 * the broadcast shape); as data it is refused with the reason. */
static bool flat_add(BD *b)
{
	Node *n = b->n;
	if (position_use(n) != PX_ADD || n->nin != 2 || n->out[0] == NONE)
		return false;
	int bi = fact(b, 0)->kind == IX_BASE ? 0 : fact(b, 1)->kind == IX_BASE ? 1 : -1;
	if (bi < 0)
		return false;
	const IdxFact *base = fact(b, bi), *v = fact(b, 1 - bi);
	int R = rank_of(b, n->out[0]), at = base->axis + R - rank_of(b, n->in[bi]);
	int kv = in_axis(b, 1 - bi);
	if (v->kind != IX_BOUND || kv == BD_GLOBAL ||
	    (kv >= 0 && (kv + R - rank_of(b, n->in[1 - bi]) != at || b->o != 1))) {
		b->ax[n->out[0]] = BD_GLOBAL;
		b->ix[n->out[0]] = (IdxFact){IX_POS, 0, base->scale, 0};
		return true;
	}
	set_outputs(b, at);
	if (!scales_on(b, n->out[0], at) || dim_of(b, 0, n->out[0], at) != probe_batch[0]) {
		mix(b, "output 0 \"%s\" does not keep the batch on axis %d", b->g->values[n->out[0]].name, at);
		return true;
	}
	b->ix[n->out[0]] = (IdxFact){IX_FLAT, 0, base->scale, v->bound};
	return true;
}

/* Gather along the batch axis of data at a flat index that stays in each
 * sample's block. */
/* Does an index n*scale + [0, bound) along axis k of data stay in sample
 * n's block there (the data rows on k, block == scale >= bound)? Else the
 * reason, with verb ("gathers along"). */
static bool in_block(BD *b, const char *verb, int data, int k, const IdxFact *f)
{
	int64_t block = dim_of(b, 0, data, k) / probe_batch[0];
	if (f->bound <= f->scale && block == f->scale && b->outer[data] == 1)
		return true;
	mix(b, "%s the batch axis %d at n*%lld + [0, %lld), which may leave each sample's block of "
	       "%lld (an offset n*%lld with indices in [0, %lld) would stay within it)", verb, k,
	    (long long)f->scale, (long long)f->bound, (long long)block, (long long)block,
	    (long long)block);
	return false;
}

static void flat_gather(BD *b)
{
	Node *n = b->n;
	const IdxFact *f = fact(b, 1);
	int data = n->in[0], kd = in_axis(b, 0), ki = in_axis(b, 1);
	int axis = tensor_of(b).axis;
	if (kd != axis || ki < 0) {
		mix(b, "uses an index that depends on the sample's position in the batch (n*%lld + ...) "
		       "other than along the data's batch axis", (long long)f->scale);
		return;
	}
	if (in_block(b, "gathers along", data, axis, f))
		set_outputs(b, axis + ki);
}

/* GatherElements (data, indices) or ScatterElements (data, indices,
 * updates) along the data's batch axis at a flat index batched on that
 * axis too: the element at sample n's positions reads (writes) position
 * n*S + [0, B) of that axis, inside sample n's block when B <= S and the
 * block is S; its other coordinates are its own position's. */
static void flat_elements(BD *b)
{
	Node *n = b->n;
	const IdxFact *f = fact(b, 1);
	int data = n->in[0], kd = in_axis(b, 0), ki = in_axis(b, 1);
	int axis = tensor_of(b).axis;
	bool scatter = position_use(n) == PX_SCATTER_ELEMENTS;
	if (kd != axis || ki != axis ||
	    (scatter && (in_axis(b, 2) != ki || b->outer[n->in[2]] != 1))) {
		mix(b, "indexes along axis %d at an index n*%lld + ... while the data%s do not carry the "
		       "batch on that axis", axis, (long long)f->scale, scatter ? ", indices or updates"
		                                                                 : " or indices");
		return;
	}
	b->o = 1;
	if (in_block(b, scatter ? "scatters along" : "gathers along", data, axis, f))
		set_outputs(b, axis);
}

/* Concat along the last axis of index columns, one of them the sample's
 * position (a base n*S, or a flat n*S + [0, B)), the others rows on the
 * same axis, one tuple per sample there: ScatterND's or GatherND's indices
 * as PyTorch's index_put and advanced indexing write them (Range over the
 * batch, expanded, unsqueezed and concatenated with the other columns).
 * False if no input is a position. */
static bool tuple_concat(BD *b)
{
	Node *n = b->n;
	if (position_use(n) != PX_TUPLE_CONCAT || n->nout < 1 || n->out[0] == NONE)
		return false;
	int out = n->out[0], R = rank_of(b, out), pos = -1, at = BD_NONE;
	if (tensor_of(b).axis != R - 1)
		return false;
	int64_t col = 0, c = 0;
	for (int i = 0; i < n->nin; i++) {
		const IdxFact *f = fact(b, i);
		if (n->in[i] == NONE)
			continue;
		if (f->kind == IX_BASE || f->kind == IX_FLAT) {
			if (pos >= 0) {
				mix(b, "concatenates two indices that depend on the sample's position in the batch");
				return true;
			}
			pos = i;
			c = col;
			at = f->kind == IX_BASE ? f->axis : in_axis(b, i);
			if (dim_of(b, 0, n->in[i], R - 1) != 1)
				at = -3;
		}
		col += dim_of(b, 0, n->in[i], R - 1);
	}
	if (pos < 0)
		return false;
	for (int i = 0; i < n->nin; i++) {
		int k = in_axis(b, i);
		if (n->in[i] == NONE || i == pos)
			continue;
		if (at < 0 || k != at || b->outer[n->in[i]] != 1 || fact(b, i)->kind > IX_BOUND) {
			mix(b, "concatenates an index n*%lld + ... with columns that are not one tuple per "
			       "sample on the same batch axis (input %d \"%s\")",
			    (long long)fact(b, pos)->scale, i, b->g->values[n->in[i]].name);
			return true;
		}
	}
	b->o = 1;
	set_outputs(b, at);
	if (!scales_on(b, out, at) || dim_of(b, 0, out, at) != probe_batch[0]) {
		mix(b, "output 0 \"%s\" is not one index tuple per sample on axis %d",
		    b->g->values[out].name, at);
		return true;
	}
	const IdxFact *f = fact(b, pos);
	b->ix[out] = (IdxFact){IX_TUPLE, (int)c, f->scale, f->kind == IX_BASE ? 1 : f->bound};
	return true;
}

/* ScatterND (data, indices, updates) or GatherND (data, indices) whose
 * index tuples hold the sample's position in the component of the data's
 * batch axis: sample n's tuples address n*S + [0, B) there, which stays in
 * its own block when B <= S and the data's block is S, and its other
 * components address the sample's other axes. ScatterND writes sample n's
 * updates (the updates carry the batch where the indices do) into sample
 * n's block; GatherND reads them from it. */
static void tuple_nd(BD *b)
{
	Node *n = b->n;
	const IdxFact *f = fact(b, 1);
	int data = n->in[0], idx = n->in[1], kd = in_axis(b, 0), ki = in_axis(b, 1);
	int q = (int)dim_of(b, 0, idx, rank_of(b, idx) - 1);
	bool scatter = position_use(n) == PX_SCATTER_ND;
	if (kd < 0 || ki < 0 || kd != f->axis || kd >= q || b->outer[data] != 1 ||
	    (!scatter && tensor_of(b).batch_dims != 0)) {
		mix(b, "indexes with tuples whose component %d is the sample's position (n*%lld + ...), "
		       "which is not the data's batch axis %d", f->axis, (long long)f->scale, kd);
		return;
	}
	if (scatter && (in_axis(b, 2) != ki || b->outer[n->in[2]] != 1)) {
		mix(b, "scatters updates whose batch axis is not that of its indices (%d)", ki);
		return;
	}
	b->o = 1;
	if (in_block(b, scatter ? "scatters along" : "gathers along", data, kd, f))
		set_outputs(b, scatter ? kd : ki);
}

/* Rules of nodes that see position-dependent indices or make them; true if
 * handled. */
static bool index_rule(BD *b)
{
	Node *n = b->n;
	int flat = -1;
	for (int i = 0; i < n->nin; i++)
		if (fact(b, i)->kind == IX_FLAT || fact(b, i)->kind == IX_TUPLE) {
			if (flat >= 0)
				mix(b, "takes two indices that depend on the sample's position in the batch");
			flat = i;
		}
	if (b->why || tuple_concat(b))
		return true;
	if (flat < 0)
		return flat_add(b);
	int kind = fact(b, flat)->kind;
	const OpDef *d = rec(n);
	PositionUse use = d->position;
	if (use == PX_GATHER && flat == 1 && kind == IX_FLAT) {
		flat_gather(b);
		return true;
	}
	if ((use == PX_SCATTER_ND || use == PX_GATHER_ND) && flat == 1 && kind == IX_TUPLE) {
		tuple_nd(b);
		return true;
	}
	if ((use == PX_GATHER_ELEMENTS || use == PX_SCATTER_ELEMENTS) && flat == 1 &&
	    kind == IX_FLAT) {
		flat_elements(b);
		return true;
	}
	bool moves = (d->index == IF_VIEW || d->index == IF_BROADCAST) && flat == 0 &&
	             kind == IX_FLAT;
	if (!moves && !d->shape_only) {
		mix(b, "input %d \"%s\" is an index that depends on the sample's position in the batch "
		       "(n*%lld + ...): only %s may use it", flat, b->g->values[n->in[flat]].name,
		    (long long)fact(b, flat)->scale,
		    kind == IX_FLAT ? "a Gather, GatherElements or ScatterElements along the batch axis "
		                      "or a ScatterND's or GatherND's tuple"
		                    : "a ScatterND or GatherND");
		return true;
	}
	return false;   /* the ordinary rule; the fact follows in index_facts */
}

/* A base moved by an op whose output's contents are not folded (too large
 * to keep): the reshaping ops keep it when the elements before n are as
 * many before as after, Expand when it broadcasts other axes only. */
static void base_moves(BD *b)
{
	Node *n = b->n;
	const IdxFact *f = fact(b, 0);
	int in = n->in[0], out = n->out[0], j = find_axis(b, out);
	const OpDef *d = rec(n);
	bool moves = d->index == IF_VIEW, expand = d->index == IF_BROADCAST;
	if (f->kind != IX_BASE || j < 0 || (!moves && !expand))
		return;
	if (expand && j != f->axis + rank_of(b, out) - rank_of(b, in))
		return;
	for (int p = 0; p < 2; p++)
		if (dim_of(b, p, out, j) != probe_batch[p] ||
		    (moves && prod_before(b, p, in, f->axis) != prod_before(b, p, out, j)))
			return;
	b->ix[out] = (IdxFact){IX_BASE, j, f->scale, 0};
}

/* Facts of the outputs of a node the ordinary rules passed. */
static void index_facts(BD *b)
{
	Node *n = b->n;
	const OpDef *d = op_def(n->op);
	IndexFlow flow = d ? d->index : IF_NONE;
	if (flow == IF_TOPK_INDICES && n->nout > 1 && n->out[1] != NONE && d->axis) {
		Infer x = node_infer(b);
		int64_t len = fixed_dim(b, n->in[0], d->axis(&x));
		if (len > 0)
			b->ix[n->out[1]] = (IdxFact){IX_BOUND, 0, 0, len};
	}
	int out = n->nout > 0 ? n->out[0] : NONE;
	if (out == NONE)
		return;
	const IdxFact *f = fact(b, 0);
	switch (flow) {
	case IF_VIEW: case IF_BROADCAST:
		if (f->kind == IX_FLAT && b->ax[out] >= 0)
			b->ix[out] = *f;
		/* fall through */
	case IF_BOUND:
		if (f->kind == IX_BOUND)
			b->ix[out] = *f;
		break;
	case IF_GATHER:
		if (f->kind == IX_BOUND && fact(b, 1)->kind != IX_FLAT)
			b->ix[out] = *f;
		break;
	case IF_NONE: case IF_TOPK_INDICES:
		break;
	}
	if (b->ax[out] == BD_GLOBAL && !is_base(b, out, &b->ix[out]))
		base_moves(b);
}

/* The outer factor the node's rows inputs share (1 if none); two rows
 * inputs laid out differently would pair different samples' elements. */
static bool rows_outer(BD *b)
{
	Node *n = b->n;
	b->o = 0;
	for (int i = 0; i < n->nin; i++) {
		if (in_axis(b, i) < 0)
			continue;
		int64_t o = b->outer[n->in[i]];
		if (b->o && o != b->o) {
			mix(b, "combines rows laid out differently (%lld and %lld blocks before the batch "
			       "on its axis)", (long long)b->o, (long long)o);
			return false;
		}
		b->o = o;
	}
	if (!b->o)
		b->o = 1;
	return true;
}

static bool rule_control(BD *b);

static void analyse_rules(BD *b)
{
	Node *n = b->n;
	if (!rows_outer(b) || rule_control(b) || index_rule(b))
		return;
	int k = BD_NONE;
	bool global = false;
	for (int i = 0; i < n->nin; i++) {
		int a = in_axis(b, i);
		if (a >= 0 && k == BD_NONE)
			k = a;
		global |= a == BD_GLOBAL;
	}
	if (k == BD_NONE && !global) {
		set_outputs(b, BD_NONE);
		return;
	}
	if (k == BD_NONE || rec(n)->shape_only) {
		metadata_rule(b);
		return;
	}
	for (int i = 0; i < n->nin; i++)
		if (in_axis(b, i) == BD_GLOBAL && !shape_slot(n->op, i)) {
			if (fact(b, i)->kind == IX_POS)
				mix(b, "input %d \"%s\" adds a per-sample offset n*%lld to values not known to "
				       "stay below it (a flat index into the batch needs indices in [0, %lld) on "
				       "the same batch axis)", i, b->g->values[n->in[i]].name,
				    (long long)fact(b, i)->scale, (long long)fact(b, i)->scale);
			else
				mix(b, "input %d \"%s\" depends on the batch size", i,
				    b->g->values[n->in[i]].name);
			return;
		}
	rows_rule(b, k);
	if (b->why)
		return;
	for (int o = 0; o < n->nout; o++) {
		int id = n->out[o];
		if (id == NONE)
			continue;
		if (b->ax[id] >= 0 && !scales_on(b, id, b->ax[id]))
			mix(b, "output %d \"%s\" does not keep the batch on axis %d", o, b->g->values[id].name,
			    b->ax[id]);
		else if (b->ax[id] == BD_NONE && !same_shape(b, id))
			mix(b, "output %d \"%s\" changes shape with the batch", o, b->g->values[id].name);
	}
}

static void analyse_node(BD *b)
{
	analyse_rules(b);
	if (!b->why)
		index_facts(b);
}

/* Does a subgraph of the node read a value of the graph that is not
 * BD_NONE? (Deeper references pass through a VAL_OUTER in every graph
 * between.) */
static bool captures_batch(BD *b)
{
	const Node *n = b->n;
	for (int k = 0; k < n->nattrs; k++) {
		const Attr *at = &n->attrs[k];
		for (int j = 0; (at->type == AT_GRAPH || at->type == AT_GRAPHS) && j < at->n; j++)
			for (int i = 0; i < at->graphs[j]->nvalues; i++) {
				const Value *v = &at->graphs[j]->values[i];
				if (v->kind == VAL_OUTER && b->ax[v->outer_id] != BD_NONE)
					return true;
			}
	}
	return false;
}

/* If, Loop, Scan. An If whose condition is known at compile time, the same
 * branch at both probes (PyTorch's squeeze of a dim it cannot prove is 1
 * exports If(dim == 1, Squeeze, Identity)), is the branch: its nodes are
 * analysed as the graph's, reading the values it captures with their
 * states, and the If's outputs take the branch outputs' states. Any other
 * control flow that sees rows or batch-size dependent values (as inputs or
 * captured by its subgraphs) is not analysed: it may mix rows. True if
 * handled. */
static bool rule_control(BD *b)
{
	Node *n = b->n;
	if (!node_has_subgraph(n))
		return false;
	int id = (int)(n - b->g->nodes);
	const Control *c0 = control_of(b->p[0], id), *c1 = control_of(b->p[1], id);
	if ((rec(n)->batch_flags & BF_ONE_BRANCH) && c0 && c1 && c0->nsubs == 1 && c1->nsubs == 1 &&
	    c0->branch != NONE && c0->branch == c1->branch && in_axis(b, 0) == BD_NONE) {
		BD sub = {.g = c0->subs[0].g, .a = b->a, .p = {&c0->subs[0], &c1->subs[0]}, .d = b->d};
		int nv = sub.g->nvalues;
		sub.ax = arena_array(b->a, (size_t)nv, sizeof *sub.ax);
		sub.outer = arena_array(b->a, (size_t)nv, sizeof *sub.outer);
		sub.ix = arena_array(b->a, (size_t)nv, sizeof *sub.ix);
		for (int i = 0; i < nv; i++) {
			const Value *v = &sub.g->values[i];
			bool outer = v->kind == VAL_OUTER;
			sub.ax[i] = outer ? b->ax[v->outer_id] : BD_NONE;
			sub.outer[i] = outer ? b->outer[v->outer_id] : 1;
			if (outer)
				sub.ix[i] = b->ix[v->outer_id];
		}
		for (int i = 0; i < sub.g->nnodes && !sub.why; i++) {
			sub.n = &sub.g->nodes[i];
			analyse_node(&sub);
		}
		if (sub.why) {   /* names the branch's node by its path through the If */
			b->why = sub.why;
			return true;
		}
		for (int k = 0; k < n->nout && k < sub.g->noutputs; k++) {
			int o = n->out[k], so = sub.g->outputs[k];
			if (o == NONE)
				continue;
			b->ax[o] = sub.ax[so];
			b->outer[o] = sub.outer[so];
			b->ix[o] = sub.ix[so];
		}
		return true;
	}
	bool batched = captures_batch(b);
	for (int i = 0; i < n->nin; i++)
		batched |= in_axis(b, i) != BD_NONE;
	if (batched)
		mix(b, "control flow is not analysed for batch independence yet: it may mix rows");
	else
		set_outputs(b, BD_NONE);
	return true;
}

/* ---- the pass --------------------------------------------------------------- */

/* Shape inference at a probe batch; false (and the reason) if it fails. */
static bool probe(Model *m, Sig *s, int64_t batch, const BindOptions *o, const char **why)
{
	Diag *d = m->diag;
	Diag saved = *d;
	jmp_buf jb;
	d->protect = &jb;
	bool ok = false;
	if (setjmp(jb) == 0) {
		s->batch = batch;
		s->g = m->graph;
		shape_infer(s, o, m->arena, d);
		ok = true;
	} else {
		*why = arena_printf(m->arena, "at batch %lld: %s", (long long)batch, d->msg);
	}
	*d = saved;
	return ok;
}

void batchdep_analyse(Model *m, const BindOptions *o, BatchDep *out)
{
	static const BindOptions none = {0};
	memset(out, 0, sizeof *out);
	Graph *g = m->graph;
	BD b = {.g = g, .a = m->arena, .d = m->diag};
	b.p[0] = arena_alloc(m->arena, sizeof(Sig));
	b.p[1] = arena_alloc(m->arena, sizeof(Sig));
	const char *why = NULL;
	if (!probe(m, b.p[0], probe_batch[0], o ? o : &none, &why) ||
	    !probe(m, b.p[1], probe_batch[1], o ? o : &none, &why)) {
		out->why = arena_printf(m->arena, "shapes do not follow the batch size (%s)", why);
		return;
	}
	b.ax = arena_array(m->arena, (size_t)g->nvalues, sizeof *b.ax);
	b.ix = arena_array(m->arena, (size_t)g->nvalues, sizeof *b.ix);
	b.outer = arena_array(m->arena, (size_t)g->nvalues, sizeof *b.outer);
	for (int i = 0; i < g->nvalues; i++) {
		b.ax[i] = BD_NONE;
		b.outer[i] = 1;
	}
	for (int i = 0; i < g->ninputs; i++) {
		int id = g->inputs[i];
		if (g->values[id].kind != VAL_INPUT)
			continue;
		int k = find_axis(&b, id);
		if (k == -3) {
			out->why = arena_printf(m->arena, "graph input \"%s\" has the batch on more than one "
			                        "axis", g->values[id].name);
			return;
		}
		b.ax[id] = k;
		out->any_batched |= k >= 0;
	}
	if (!out->any_batched) {
		out->why = "no graph input has a batch axis (a symbolic first dim, or --batch-dim)";
		return;
	}
	for (int i = 0; i < g->nnodes && !b.why; i++) {
		b.n = &g->nodes[i];
		analyse_node(&b);
	}
	for (int i = 0; i < g->noutputs && !b.why; i++) {
		int id = g->outputs[i];
		if (b.ax[id] == BD_GLOBAL && g->values[id].producer != NONE) {
			b.n = &g->nodes[g->values[id].producer];
			mix(&b, "graph output \"%s\" depends on the batch size", g->values[id].name);
		} else if (b.ax[id] >= 0 && b.outer[id] != 1 && g->values[id].producer != NONE) {
			b.n = &g->nodes[g->values[id].producer];
			mix(&b, "graph output \"%s\" interleaves samples (%lld blocks before the batch on "
			    "axis %d)", g->values[id].name, (long long)b.outer[id], b.ax[id]);
		} else if ((b.ix[id].kind == IX_FLAT || b.ix[id].kind == IX_TUPLE) &&
		           g->values[id].producer != NONE) {
			b.n = &g->nodes[g->values[id].producer];
			mix(&b, "graph output \"%s\" depends on each sample's position in the batch",
			    g->values[id].name);
		}
	}
	out->why = b.why;
	out->independent = !b.why;
	out->axis = b.ax;
	out->per_sample = arena_array(m->arena, (size_t)g->nvalues, sizeof *out->per_sample);
	for (int i = 0; i < g->nvalues; i++)
		if (b.ax[i] >= 0 && b.ax[i] < b.p[0]->shapes[i].rank)
			out->per_sample[i] = b.p[0]->shapes[i].dims[b.ax[i]].size / probe_batch[0];
}
