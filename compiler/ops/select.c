/*
 * ops/select.c - the data-dependent ops: NonZero, Unique, Compress and
 * NonMaxSuppression, whose output sizes depend on input values.
 *
 * kiln's policy (docs/compile.md, "freezing"): the values that decide the
 * size must be known at compile time, as constants or frozen graph inputs
 * (--freeze; kiln verify freezes them from the test data). NonZero, Unique
 * and NonMaxSuppression then depend on nothing else, so they are evaluated
 * here and their outputs become constants. Compress needs only its
 * condition: the data may arrive at run time, and emit/select.c writes the
 * copy loop. A frozen graph input is checked on every run (KILN_FROZEN_INPUT),
 * so these constants are never wrong for the values a run receives.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"
#include "kiln/kernels.h"

/* Folded results are small by construction (infer_foldable bounds inputs). */
enum { MAX_FOLD = 1 << 16 };

/* Element k of a folded tensor as double (exact for every type but large
 * 64-bit integers, which callers that need exactness compare as bytes). */
static double elem(const Folded *f, int64_t k)
{
	return folded_elem(f->dtype, f->data, k);
}

/* Order of two elements of type dt (NaN after everything, as numpy sorts). */
static int cmp_elem(int dt, const void *a, const void *b)
{
	union { int64_t i; uint64_t u; } x = {0}, y = {0};
	switch (dt) {
	case DT_INT64:
		memcpy(&x.i, a, 8), memcpy(&y.i, b, 8);
		return (x.i > y.i) - (x.i < y.i);
	case DT_UINT64:
		memcpy(&x.u, a, 8), memcpy(&y.u, b, 8);
		return (x.u > y.u) - (x.u < y.u);
	default: {
		Folded fa = {dt, 1, a}, fb = {dt, 1, b};
		double p = elem(&fa, 0), q = elem(&fb, 0);
		if (isnan(p) || isnan(q))
			return isnan(p) - isnan(q);
		return (p > q) - (p < q);
	}
	}
}

static const Folded *require_folded(Infer *x, int i)
{
	const Folded *f = infer_required(x, i);
	if (!f)
		infer_fail_unknown(x, i, ": its values decide the output size");
	return f;
}

static void *fold_alloc(Infer *x, int64_t n, size_t esz)
{
	if (n > MAX_FOLD)
		infer_fail(x, KILN_LIMIT, "the result has %lld elements; kiln folds at most %d",
		           (long long)n, MAX_FOLD);
	return arena_alloc(x->a, (size_t)(n ? n : 1) * esz);
}

/* ---- NonZero ---------------------------------------------------------- */

static void infer_nonzero(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	const Folded *f = require_folded(x, 0);
	int rank = in->rank;
	int64_t n = shape_nelem(in), nnz = 0;
	for (int64_t k = 0; k < n; k++)
		nnz += elem(f, k) != 0 || isnan(elem(f, k));
	int64_t *out = fold_alloc(x, (rank ? rank : 1) * nnz, sizeof *out);
	/* Column j is the multi-index of the j-th nonzero element, row-major. */
	for (int64_t k = 0, j = 0; k < n; k++) {
		double v = elem(f, k);
		if (v == 0 && !isnan(v))
			continue;
		int64_t rest = k;
		for (int a = rank - 1; a >= 0; a--) {
			out[a * nnz + j] = rest % in->dims[a].size;
			rest /= in->dims[a].size;
		}
		j++;
	}
	Shape y = {.rank = 2};
	y.dims[0] = (Dim){rank, NULL};
	y.dims[1] = (Dim){nnz, NULL};
	infer_set_output(x, 0, DT_INT64, &y);
	infer_set_folded(x, 0, DT_INT64, rank * nnz, out);
}

/* ---- Unique ----------------------------------------------------------- */

typedef struct Slices {
	const unsigned char *base;
	int dt;
	int64_t outer, len, inner;   /* X as [outer, len, inner]: slices along the middle */
} Slices;

static int cmp_slices(const Slices *s, int64_t p, int64_t q)
{
	size_t esz = dtype_size(s->dt);
	for (int64_t o = 0; o < s->outer; o++)
		for (int64_t i = 0; i < s->inner; i++) {
			int64_t a = (o * s->len + p) * s->inner + i, b = (o * s->len + q) * s->inner + i;
			int c = cmp_elem(s->dt, s->base + (size_t)a * esz, s->base + (size_t)b * esz);
			if (c)
				return c;
		}
	return 0;
}

static bool same_slice(const Slices *s, int64_t p, int64_t q)
{
	size_t esz = dtype_size(s->dt);
	for (int64_t o = 0; o < s->outer; o++) {
		size_t a = (size_t)((o * s->len + p) * s->inner) * esz;
		size_t b = (size_t)((o * s->len + q) * s->inner) * esz;
		if (s->dt == DT_FLOAT || s->dt == DT_DOUBLE || s->dt == DT_FLOAT16 || s->dt == DT_BFLOAT16) {
			/* -0 equals 0 for floats; compare values, not bytes */
			for (int64_t i = 0; i < s->inner; i++)
				if (cmp_elem(s->dt, s->base + a + (size_t)i * esz, s->base + b + (size_t)i * esz))
					return false;
		} else if (memcmp(s->base + a, s->base + b, (size_t)s->inner * esz) != 0) {
			return false;
		}
	}
	return true;
}

static void infer_unique(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	const Folded *f = require_folded(x, 0);
	int dt = infer_dtype(x, 0);
	if (dt == DT_STRING || !dtype_size(dt))
		infer_fail(x, KILN_UNSUPPORTED, "Unique of %s is not supported", dtype_name(dt));
	bool sorted = attr_int(x, "sorted", 1) != 0;
	const Attr *axis_attr = node_attr(x->n, "axis");
	Slices s = {f->data, dt, 1, shape_nelem(in), 1};
	int axis = -1;
	if (axis_attr) {
		axis = infer_axis(x, attr_int(x, "axis", 0), in->rank, "axis");
		s.len = in->dims[axis].size;
		for (int k = 0; k < axis; k++)
			s.outer *= in->dims[k].size;
		for (int k = axis + 1; k < in->rank; k++)
			s.inner *= in->dims[k].size;
	}
	/* first[u]: the first index of unique slice u, in order of appearance. */
	int64_t *first = fold_alloc(x, s.len, sizeof *first);
	int64_t *inverse = fold_alloc(x, s.len, sizeof *inverse);
	int64_t *counts = fold_alloc(x, s.len, sizeof *counts);
	int64_t nu = 0;
	for (int64_t p = 0; p < s.len; p++) {
		int64_t u = 0;
		while (u < nu && !same_slice(&s, first[u], p))
			u++;
		if (u == nu) {
			first[nu] = p;
			counts[nu++] = 0;
		}
		counts[u]++;
		inverse[p] = u;
	}
	/* Sorted: order the unique slices ascending (insertion sort: results are small). */
	int64_t *order = fold_alloc(x, nu, sizeof *order);   /* order[r] = unique id at rank r */
	for (int64_t u = 0; u < nu; u++) {
		int64_t r = u;
		while (sorted && r > 0 && cmp_slices(&s, first[order[r - 1]], first[u]) > 0) {
			order[r] = order[r - 1];
			r--;
		}
		order[r] = u;
	}
	int64_t *rank_of = fold_alloc(x, nu, sizeof *rank_of);
	for (int64_t r = 0; r < nu; r++)
		rank_of[order[r]] = r;

	size_t esz = dtype_size(dt);
	unsigned char *y = fold_alloc(x, s.outer * nu * s.inner, esz);
	for (int64_t o = 0; o < s.outer; o++)
		for (int64_t r = 0; r < nu; r++)
			memcpy(y + (size_t)((o * nu + r) * s.inner) * esz,
			       (const unsigned char *)f->data +
			           (size_t)((o * s.len + first[order[r]]) * s.inner) * esz,
			       (size_t)s.inner * esz);
	int64_t *indices = fold_alloc(x, nu, sizeof *indices);
	int64_t *cnt = fold_alloc(x, nu, sizeof *cnt);
	for (int64_t r = 0; r < nu; r++) {
		indices[r] = first[order[r]];
		cnt[r] = counts[order[r]];
	}
	for (int64_t p = 0; p < s.len; p++)
		inverse[p] = rank_of[inverse[p]];

	Shape ys = {.rank = 1};
	ys.dims[0] = (Dim){nu, NULL};
	if (axis >= 0) {
		ys = *in;
		ys.dims[axis] = (Dim){nu, NULL};
	}
	infer_set_output(x, 0, dt, &ys);
	infer_set_folded(x, 0, dt, s.outer * nu * s.inner, y);
	Shape v = {.rank = 1};
	v.dims[0] = (Dim){nu, NULL};
	infer_set_output(x, 1, DT_INT64, &v);
	infer_set_folded(x, 1, DT_INT64, nu, indices);
	Shape inv = {.rank = 1};
	inv.dims[0] = (Dim){s.len, NULL};
	infer_set_output(x, 2, DT_INT64, &inv);
	infer_set_folded(x, 2, DT_INT64, s.len, inverse);
	infer_set_output(x, 3, DT_INT64, &v);
	infer_set_folded(x, 3, DT_INT64, nu, cnt);
}

/* ---- Compress --------------------------------------------------------- */

void compress_selection(Infer *x, CompressSel *c)
{
	const Shape *in = infer_shape(x, 0);
	const Shape *cs = infer_shape(x, 1);
	if (cs->rank != 1)
		infer_fail(x, KILN_SHAPE_ERROR, "condition must be 1-D, got rank %d", cs->rank);
	const Folded *f = require_folded(x, 1);
	const Attr *axis_attr = node_attr(x->n, "axis");
	c->axis = axis_attr ? infer_axis(x, attr_int(x, "axis", 0), in->rank, "axis") : -1;
	c->len = c->axis >= 0 ? in->dims[c->axis].size : shape_nelem(in);
	c->outer = c->inner = 1;
	for (int k = 0; c->axis >= 0 && k < in->rank; k++) {
		if (k < c->axis)
			c->outer *= in->dims[k].size;
		else if (k > c->axis)
			c->inner *= in->dims[k].size;
	}
	if (f->nelem > c->len)
		infer_fail(x, KILN_SHAPE_ERROR, "condition has %lld entries; the %s has %lld",
		           (long long)f->nelem, c->axis >= 0 ? "axis" : "flattened input",
		           (long long)c->len);
	/* Entries past the condition's end count as false, as the spec says. */
	c->sel = fold_alloc(x, f->nelem, sizeof *c->sel);
	c->nsel = 0;
	for (int64_t k = 0; k < f->nelem; k++)
		if (elem(f, k) != 0)
			c->sel[c->nsel++] = k;
}

static void infer_compress(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	int dt = infer_dtype(x, 0);
	CompressSel c;
	compress_selection(x, &c);
	Shape y = {.rank = 1};
	y.dims[0] = (Dim){c.nsel, NULL};
	if (c.axis >= 0) {
		y = *in;
		y.dims[c.axis] = (Dim){c.nsel, NULL};
	}
	infer_set_output(x, 0, dt, &y);
	/* Known data folds too (shape arithmetic through Compress). */
	const Folded *data = infer_folded(x, 0);
	if (data && infer_foldable(&y) && dtype_size(dt)) {
		size_t esz = dtype_size(dt);
		unsigned char *out = fold_alloc(x, shape_nelem(&y), esz);
		int64_t at = 0;
		for (int64_t o = 0; o < c.outer; o++)
			for (int64_t j = 0; j < c.nsel; j++, at += c.inner)
				memcpy(out + (size_t)at * esz,
				       (const unsigned char *)data->data +
				           (size_t)((o * c.len + c.sel[j]) * c.inner) * esz,
				       (size_t)c.inner * esz);
		infer_set_folded(x, 0, dt, shape_nelem(&y), out);
	}
}

/* ---- NonMaxSuppression ------------------------------------------------ */

typedef struct Box {
	double y1, x1, y2, x2;
} Box;

static Box box_at(const Folded *boxes, int64_t k, bool center)
{
	double a = elem(boxes, 4 * k), b = elem(boxes, 4 * k + 1);
	double c = elem(boxes, 4 * k + 2), d = elem(boxes, 4 * k + 3);
	if (center)   /* [x_center, y_center, width, height] */
		return (Box){b - d / 2, a - c / 2, b + d / 2, a + c / 2};
	/* [y1, x1, y2, x2], either corner first */
	return (Box){fmin(a, c), fmin(b, d), fmax(a, c), fmax(b, d)};
}

static double iou(Box p, Box q)
{
	double w = fmin(p.x2, q.x2) - fmax(p.x1, q.x1), h = fmin(p.y2, q.y2) - fmax(p.y1, q.y1);
	if (w <= 0 || h <= 0)
		return 0;
	double inter = w * h;
	double uni = (p.x2 - p.x1) * (p.y2 - p.y1) + (q.x2 - q.x1) * (q.y2 - q.y1) - inter;
	return uni > 0 ? inter / uni : 0;
}

static void infer_nms(Infer *x)
{
	const Shape *bs = infer_shape(x, 0), *ss = infer_shape(x, 1);
	if (bs->rank != 3 || bs->dims[2].size != 4 || ss->rank != 3 ||
	    ss->dims[0].size != bs->dims[0].size || ss->dims[2].size != bs->dims[1].size)
		infer_fail(x, KILN_SHAPE_ERROR, "boxes must be [B, N, 4] and scores [B, C, N]");
	const Folded *boxes = require_folded(x, 0), *scores = require_folded(x, 1);
	int64_t max_out = 0;
	double iou_th = 0, score_th = -(double)INFINITY;
	if (infer_has_input(x, 2)) {
		const Folded *f = require_folded(x, 2);
		max_out = f->nelem ? (int64_t)elem(f, 0) : 0;
	}
	if (infer_has_input(x, 3)) {
		const Folded *f = require_folded(x, 3);
		iou_th = f->nelem ? elem(f, 0) : 0;
	}
	if (infer_has_input(x, 4)) {
		const Folded *f = require_folded(x, 4);
		if (f->nelem)
			score_th = elem(f, 0);
	}
	int64_t center = attr_int(x, "center_point_box", 0);
	if (center != 0 && center != 1)
		infer_fail(x, KILN_INVALID_MODEL, "center_point_box must be 0 or 1, got %lld",
		           (long long)center);
	int64_t nb = bs->dims[0].size, nc = ss->dims[1].size, n = bs->dims[1].size;
	int64_t cap = nb * nc * (max_out < n ? max_out : n);
	int64_t *out = fold_alloc(x, 3 * (cap > 0 ? cap : 0), sizeof *out);
	int64_t *cand = fold_alloc(x, n, sizeof *cand), *kept = fold_alloc(x, n, sizeof *kept);
	int64_t nsel = 0;
	for (int64_t b = 0; b < nb && max_out > 0; b++)
		for (int64_t c = 0; c < nc; c++) {
			const int64_t srow = (b * nc + c) * n;
			int64_t ncand = 0;
			for (int64_t i = 0; i < n; i++)
				if (elem(scores, srow + i) > score_th)
					cand[ncand++] = i;
			/* By score, descending; equal scores keep box order (stable). */
			for (int64_t i = 1; i < ncand; i++) {
				int64_t v = cand[i], j = i;
				while (j > 0 && elem(scores, srow + cand[j - 1]) < elem(scores, srow + v)) {
					cand[j] = cand[j - 1];
					j--;
				}
				cand[j] = v;
			}
			int64_t nkept = 0;
			for (int64_t i = 0; i < ncand && nkept < max_out; i++) {
				Box p = box_at(boxes, b * n + cand[i], center);
				bool suppressed = false;
				for (int64_t j = 0; j < nkept && !suppressed; j++)
					suppressed = iou(p, box_at(boxes, b * n + kept[j], center)) > iou_th;
				if (suppressed)
					continue;
				kept[nkept++] = cand[i];
				out[3 * nsel] = b;
				out[3 * nsel + 1] = c;
				out[3 * nsel + 2] = cand[i];
				nsel++;
			}
		}
	Shape y = {.rank = 2};
	y.dims[0] = (Dim){nsel, NULL};
	y.dims[1] = (Dim){3, NULL};
	infer_set_output(x, 0, DT_INT64, &y);
	infer_set_folded(x, 0, DT_INT64, 3 * nsel, out);
}

void ops_select_infer(Infer *x)
{
	switch (x->n->op) {
	case OP_NonZero: infer_nonzero(x); break;
	case OP_Unique: infer_unique(x); break;
	case OP_Compress: infer_compress(x); break;
	case OP_NonMaxSuppression: infer_nms(x); break;
	default: KILN_ASSERT(!"ops_select_infer: not a data-dependent op");
	}
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_select_defs[] = {
	{.op = OP_NonZero, .infer = ops_select_infer, .emit = emit_folded_only,
	 .note = "the input must be known at compile time (--freeze): the output is a constant"},
	{.op = OP_Unique, .infer = ops_select_infer, .emit = emit_folded_only,
	 .note = "the input must be known at compile time (--freeze): the outputs are constants"},
	{.op = OP_Compress, .infer = ops_select_infer, .emit = emit_compress,
	 .note = "the condition must be known at compile time (--freeze); the data is read at run "
	         "time"},
	{.op = OP_NonMaxSuppression, .infer = ops_select_infer, .emit = emit_folded_only,
	 .note = "every input must be known at compile time (--freeze): the output is a constant"},
	{.op = NONE},
};
