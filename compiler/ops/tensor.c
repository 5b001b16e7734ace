/*
 * ops/tensor.c - shape inference for the ops that move or reinterpret
 * data without arithmetic: Reshape, Flatten, Transpose, Concat, Split, Slice,
 * Gather, Squeeze, Unsqueeze, Shape, Constant and Identity.
 *
 * These are also the ops exporters use to compute shapes at run time
 * (Shape -> Gather -> Unsqueeze -> Concat -> Reshape), so each one folds its
 * output when its inputs are known and small: the data of a reshape-like op
 * is the input's data, Shape's output is the (static) input shape, and
 * Gather/Concat/Slice are evaluated.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

/* Axes for Squeeze/Unsqueeze/Split-like ops: the attribute before `since`,
 * the (compile-time) input at index `input` from then on. -1 if absent. */
static int axes_list(Infer *x, int input, int since, int64_t *out, int max)
{
	if (x->n->since < since)
		return attr_ints(x, "axes", out, max);
	if (!infer_has_input(x, input))
		return -1;
	int64_t n;
	const int64_t *v = infer_require_ints(x, input, &n);
	if (n > max)
		infer_fail(x, KILN_SHAPE_ERROR, "%lld axes is too many", (long long)n);
	memcpy(out, v, (size_t)n * sizeof *v);
	return (int)n;
}

/* Same data, new shape: the output folds to the input's contents. */
static void pass_folded(Infer *x)
{
	const Folded *f = infer_folded(x, 0);
	if (f)
		infer_set_folded(x, 0, f->dtype, f->nelem, f->data);
}

static void set_reshaped(Infer *x, const Shape *y)
{
	if (shape_nelem(y) != shape_nelem(infer_shape(x, 0)))
		infer_fail(x, KILN_SHAPE_ERROR, "cannot reshape %lld elements into %lld",
		           (long long)shape_nelem(infer_shape(x, 0)), (long long)shape_nelem(y));
	infer_set_output(x, 0, infer_dtype(x, 0), y);
	pass_folded(x);
}

static void infer_reshape(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	int64_t n;
	const int64_t *want;
	int64_t attr[KILN_MAX_RANK + 1];
	if (x->n->since < 5) {
		int k = attr_ints(x, "shape", attr, KILN_MAX_RANK + 1);
		if (k < 0)
			infer_fail(x, KILN_INVALID_MODEL, "attribute \"shape\" is required");
		want = attr, n = k;
	} else {
		want = infer_require_ints(x, 1, &n);
	}
	if (n > KILN_MAX_RANK)
		infer_fail(x, KILN_LIMIT, "target rank %lld exceeds %d", (long long)n, KILN_MAX_RANK);
	bool allowzero = attr_int(x, "allowzero", 0) != 0;
	Shape y = {.rank = (int)n};
	int infer_at = -1;
	int64_t known = 1;
	for (int k = 0; k < n; k++) {
		int64_t d = want[k];
		if (d == 0 && !allowzero) {
			if (k >= in->rank)
				infer_fail(x, KILN_SHAPE_ERROR, "shape[%d] = 0 copies a dim the input lacks", k);
			d = in->dims[k].size;
		}
		if (d == -1) {
			if (infer_at >= 0)
				infer_fail(x, KILN_SHAPE_ERROR, "shape has more than one -1");
			infer_at = k;
			continue;
		}
		if (d < 0)
			infer_fail(x, KILN_SHAPE_ERROR, "shape[%d] = %lld is negative", k, (long long)d);
		y.dims[k].size = d;
		known = infer_mul(x, known, d);
	}
	if (infer_at >= 0) {
		int64_t total = shape_nelem(in);
		if (known == 0 || total % known)
			infer_fail(x, KILN_SHAPE_ERROR, "cannot infer the -1 dim: %lld elements into %lld",
			           (long long)total, (long long)known);
		y.dims[infer_at].size = total / known;
	}
	set_reshaped(x, &y);
}

static void infer_flatten(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	int64_t axis = attr_int(x, "axis", 1);
	if (axis < -in->rank || axis > in->rank)
		infer_fail(x, KILN_SHAPE_ERROR, "axis %lld is out of range for rank %d", (long long)axis,
		           in->rank);
	if (axis < 0)
		axis += in->rank;
	Shape y = {.rank = 2};
	y.dims[0].size = y.dims[1].size = 1;
	for (int k = 0; k < in->rank; k++)
		y.dims[k < axis ? 0 : 1].size *= in->dims[k].size;
	set_reshaped(x, &y);
}

static void infer_transpose(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	TensorParams p;
	tensor_params(x, &p);   /* the perm, checked */
	Shape y = {.rank = in->rank};
	for (int k = 0; k < in->rank; k++)
		y.dims[k] = in->dims[p.perm[k]];
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

static void infer_concat(Infer *x)
{
	if (x->n->nin < 1)
		infer_fail(x, KILN_INVALID_MODEL, "Concat needs at least one input");
	const Shape *first = infer_shape(x, 0);
	const Attr *a = node_attr(x->n, "axis");
	if (!a)
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"axis\" is required");
	TensorParams p;
	tensor_params(x, &p);
	int axis = p.axis;
	Shape y = *first;
	y.dims[axis].size = 0;
	bool all_folded = infer_foldable(first) && first->rank == 1;
	for (int i = 0; i < x->n->nin; i++) {
		const Shape *s = infer_shape(x, i);
		if (s->rank != first->rank || infer_dtype(x, i) != infer_dtype(x, 0))
			infer_fail(x, KILN_SHAPE_ERROR, "input %d has rank %d or type %s unlike input 0", i,
			           s->rank, dtype_name(infer_dtype(x, i)));
		for (int k = 0; k < s->rank; k++)
			if (k != axis && s->dims[k].size != first->dims[k].size)
				infer_fail(x, KILN_SHAPE_ERROR, "input %d dim %d is %lld, input 0 has %lld", i, k,
				           (long long)s->dims[k].size, (long long)first->dims[k].size);
		y.dims[axis].size = infer_add(x, y.dims[axis].size, s->dims[axis].size);
		int64_t n;
		all_folded = all_folded && infer_ints(x, i, &n);
	}
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
	if (all_folded && infer_dtype(x, 0) == DT_INT64 && infer_foldable(&y)) {
		int64_t total = y.dims[0].size, at = 0;
		int64_t *out = arena_array(x->a, (size_t)total, sizeof *out);
		for (int i = 0; i < x->n->nin; i++) {
			int64_t n;
			const int64_t *v = infer_ints(x, i, &n);
			memcpy(out + at, v, (size_t)n * sizeof *v);
			at += n;
		}
		infer_set_folded(x, 0, DT_INT64, total, out);
	}
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void infer_split(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	TensorParams p;
	tensor_params(x, &p);
	int axis = p.axis;
	int nout = x->n->nout;
	int64_t parts[64];
	int64_t nparts = -1;
	if (nout > 64)
		infer_fail(x, KILN_LIMIT, "more than 64 outputs");
	if (x->n->since >= 13 && infer_has_input(x, 1)) {
		const int64_t *v = infer_require_ints(x, 1, &nparts);
		if (nparts > 64)
			infer_fail(x, KILN_LIMIT, "more than 64 parts");
		memcpy(parts, v, (size_t)nparts * sizeof *v);
	} else if (x->n->since < 13) {
		nparts = attr_ints(x, "split", parts, 64);
	}
	int64_t dim = in->dims[axis].size;
	int64_t num = x->n->since >= 18 ? attr_int(x, "num_outputs", 0) : 0;
	if (nparts < 0 && num != 0) {
		/* Split-18: ceil(dim / num_outputs) each, the last part smaller. */
		if (num != nout)
			infer_fail(x, KILN_INVALID_MODEL, "num_outputs is %lld; the node has %d outputs",
			           (long long)num, nout);
		int64_t chunk = (dim + num - 1) / num;
		nparts = nout;
		for (int i = 0; i < nout; i++)
			parts[i] = clamp(dim - i * chunk, 0, chunk);
	}
	if (nparts < 0) {
		if (dim % nout)
			infer_fail(x, KILN_SHAPE_ERROR, "axis %d (%lld) does not split evenly into %d", axis,
			           (long long)dim, nout);
		nparts = nout;
		for (int i = 0; i < nout; i++)
			parts[i] = dim / nout;
	}
	if (nparts != nout)
		infer_fail(x, KILN_SHAPE_ERROR, "split has %lld parts for %d outputs", (long long)nparts,
		           nout);
	int64_t sum = 0;
	for (int i = 0; i < nout; i++) {
		if (parts[i] < 0)
			infer_fail(x, KILN_SHAPE_ERROR, "split part %d is negative", i);
		sum = infer_add(x, sum, parts[i]);
		Shape y = *in;
		y.dims[axis].size = parts[i];
		infer_set_output(x, i, infer_dtype(x, 0), &y);
	}
	if (sum != dim)
		infer_fail(x, KILN_SHAPE_ERROR, "split parts sum to %lld, axis %d has %lld",
		           (long long)sum, axis, (long long)dim);
}

static void infer_slice(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	int64_t starts[KILN_MAX_RANK], ends[KILN_MAX_RANK], axes[KILN_MAX_RANK], steps[KILN_MAX_RANK];
	int64_t n, ne, na = -1, ns = -1;
	if (x->n->since < 10) {
		TensorParams p;
		tensor_params(x, &p);
		n = p.nstarts, ne = p.nends, na = p.naxes;
		memcpy(starts, p.starts, sizeof starts);
		memcpy(ends, p.ends, sizeof ends);
		memcpy(axes, p.axes, sizeof axes);
	} else {
		const int64_t *v;
		v = infer_require_ints(x, 1, &n);
		if (n > KILN_MAX_RANK)
			infer_fail(x, KILN_SHAPE_ERROR, "too many starts");
		memcpy(starts, v, (size_t)n * 8);
		v = infer_require_ints(x, 2, &ne);
		if (ne > KILN_MAX_RANK)
			infer_fail(x, KILN_SHAPE_ERROR, "too many ends");
		memcpy(ends, v, (size_t)ne * 8);
		if (infer_has_input(x, 3)) {
			v = infer_require_ints(x, 3, &na);
			if (na > KILN_MAX_RANK)
				infer_fail(x, KILN_SHAPE_ERROR, "too many axes");
			memcpy(axes, v, (size_t)na * 8);
		}
		if (infer_has_input(x, 4)) {
			v = infer_require_ints(x, 4, &ns);
			if (ns > KILN_MAX_RANK)
				infer_fail(x, KILN_SHAPE_ERROR, "too many steps");
			memcpy(steps, v, (size_t)ns * 8);
		}
	}
	if (n < 0 || n != ne || (na >= 0 && na != n) || (ns >= 0 && ns != n))
		infer_fail(x, KILN_SHAPE_ERROR, "starts, ends, axes and steps must have equal lengths");
	Shape y = *in;
	int64_t begin[KILN_MAX_RANK] = {0}, step_of[KILN_MAX_RANK];
	bool seen[KILN_MAX_RANK] = {0};
	for (int k = 0; k < in->rank; k++)
		step_of[k] = 1;
	for (int i = 0; i < n; i++) {
		int a = infer_axis(x, na >= 0 ? axes[i] : i, in->rank, "axis");
		if (seen[a])
			infer_fail(x, KILN_INVALID_MODEL, "axis %d is sliced twice", a);
		seen[a] = true;
		int64_t dim = in->dims[a].size, step = ns >= 0 ? steps[i] : 1;
		if (step == 0)
			infer_fail(x, KILN_INVALID_MODEL, "step must not be 0");
		int64_t s = starts[i], e = ends[i];
		if (s < 0)
			s = s < -dim ? 0 : s + dim;
		if (e < 0)
			e = e < -dim ? -1 : e + dim;
		if (step > 0) {
			s = clamp(s, 0, dim);
			e = clamp(e, 0, dim);
		} else {
			s = clamp(s, 0, dim - 1);
			e = clamp(e, -1, dim - 1);
		}
		/* s and e are within [-1, dim] now; a step may be anything, INT64_MIN too. */
		int64_t dist = step > 0 ? e - s : s - e;
		uint64_t ustep = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
		y.dims[a].size = dist > 0 ? (int64_t)(((uint64_t)dist - 1) / ustep + 1) : 0;
		begin[a] = s;
		step_of[a] = step;
	}
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
	int64_t cnt;
	const int64_t *v = infer_ints(x, 0, &cnt);
	if (v && in->rank == 1 && infer_dtype(x, 0) == DT_INT64) {
		int64_t len = y.dims[0].size;
		int64_t *out = arena_array(x->a, (size_t)len, sizeof *out);
		for (int64_t i = 0; i < len; i++)
			out[i] = v[begin[0] + i * step_of[0]];
		infer_set_folded(x, 0, DT_INT64, len, out);
	}
}

static void infer_gather(Infer *x)
{
	const Shape *data = infer_shape(x, 0), *idx = infer_shape(x, 1);
	if (data->rank < 1)
		infer_fail(x, KILN_SHAPE_ERROR, "data must have rank >= 1");
	TensorParams p;
	tensor_params(x, &p);
	int axis = p.axis;
	if (data->rank - 1 + idx->rank > KILN_MAX_RANK)
		infer_fail(x, KILN_LIMIT, "output rank exceeds %d", KILN_MAX_RANK);
	int it = infer_dtype(x, 1);
	if (it != DT_INT64 && it != DT_INT32)
		infer_fail(x, KILN_INVALID_MODEL, "indices must be int32 or int64, not %s",
		           dtype_name(it));
	Shape y = {.rank = 0};
	for (int k = 0; k < axis; k++)
		y.dims[y.rank++] = data->dims[k];
	for (int k = 0; k < idx->rank; k++)
		y.dims[y.rank++] = idx->dims[k];
	for (int k = axis + 1; k < data->rank; k++)
		y.dims[y.rank++] = data->dims[k];
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
	/* Fold the common Shape -> Gather(axis 0) of a 1-D integer tensor. */
	int64_t nd, ni;
	const int64_t *dv = infer_ints(x, 0, &nd), *iv = infer_ints(x, 1, &ni);
	if (dv && iv && data->rank == 1 && infer_dtype(x, 0) == DT_INT64 && infer_foldable(&y)) {
		int64_t *out = arena_array(x->a, (size_t)ni, sizeof *out);
		for (int64_t i = 0; i < ni; i++) {
			int64_t j = iv[i] < 0 ? iv[i] + nd : iv[i];
			if (j < 0 || j >= nd)
				infer_fail(x, KILN_SHAPE_ERROR, "index %lld is out of range for %lld elements",
				           (long long)iv[i], (long long)nd);
			out[i] = dv[j];
		}
		infer_set_folded(x, 0, DT_INT64, ni, out);
	}
}

static void infer_squeeze(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	int64_t axes[KILN_MAX_RANK];
	int n = axes_list(x, 1, 13, axes, KILN_MAX_RANK);
	bool drop[KILN_MAX_RANK] = {0};
	if (n < 0) {
		for (int k = 0; k < in->rank; k++)
			drop[k] = in->dims[k].size == 1;
	}
	for (int i = 0; i < n; i++) {
		int a = infer_axis(x, axes[i], in->rank, "axis");
		if (in->dims[a].size != 1)
			infer_fail(x, KILN_SHAPE_ERROR, "cannot squeeze axis %d of size %lld", a,
			           (long long)in->dims[a].size);
		drop[a] = true;
	}
	Shape y = {.rank = 0};
	for (int k = 0; k < in->rank; k++)
		if (!drop[k])
			y.dims[y.rank++] = in->dims[k];
	set_reshaped(x, &y);
}

static void infer_unsqueeze(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	int64_t axes[KILN_MAX_RANK];
	int n = axes_list(x, 1, 13, axes, KILN_MAX_RANK);
	if (n < 0)
		infer_fail(x, KILN_INVALID_MODEL, "axes are required");
	int rank = in->rank + n;
	if (rank > KILN_MAX_RANK)
		infer_fail(x, KILN_LIMIT, "output rank %d exceeds %d", rank, KILN_MAX_RANK);
	bool add[KILN_MAX_RANK] = {0};
	for (int i = 0; i < n; i++) {
		int a = infer_axis(x, axes[i], rank, "axis");
		if (add[a])
			infer_fail(x, KILN_INVALID_MODEL, "axis %d is listed twice", a);
		add[a] = true;
	}
	Shape y = {.rank = rank};
	for (int k = 0, j = 0; k < rank; k++)
		y.dims[k] = add[k] ? (Dim){1, NULL} : in->dims[j++];
	set_reshaped(x, &y);
}

static void infer_shape_op(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	int64_t start = attr_int(x, "start", 0), end = attr_int(x, "end", in->rank);
	if (start < 0)
		start += in->rank;
	if (end < 0)
		end += in->rank;
	start = clamp(start, 0, in->rank);
	end = clamp(end, start, in->rank);
	int64_t *dims = arena_array(x->a, (size_t)(end - start) + 1, sizeof *dims);
	for (int64_t k = start; k < end; k++)
		dims[k - start] = in->dims[k].size;
	Shape y = {.rank = 1};
	y.dims[0].size = end - start;
	infer_set_output(x, 0, DT_INT64, &y);
	infer_set_folded(x, 0, DT_INT64, end - start, dims);
}

static void infer_constant(Infer *x)
{
	if (x->n->nattrs != 1)
		infer_fail(x, KILN_INVALID_MODEL, "Constant needs exactly one value attribute, has %d",
		           x->n->nattrs);
	const Attr *a = &x->n->attrs[0];
	Shape y = {.rank = 0};
	const char *name = a->name;
	if (strcmp(name, "value") == 0 && a->type == AT_TENSOR) {
		const Tensor *t = &a->tensors[0];
		if (t->dtype == DT_STRING)
			infer_fail(x, KILN_UNSUPPORTED, "string constants are not supported");
		infer_set_output(x, 0, t->dtype, &t->shape);
		infer_set_folded(x, 0, t->dtype, t->w.nelem, t->w.bytes);
	} else if (strcmp(name, "value_float") == 0 && a->type == AT_FLOAT) {
		infer_set_output(x, 0, DT_FLOAT, &y);
		infer_set_folded(x, 0, DT_FLOAT, 1, &a->f);
	} else if (strcmp(name, "value_int") == 0 && a->type == AT_INT) {
		infer_set_output(x, 0, DT_INT64, &y);
		infer_set_folded(x, 0, DT_INT64, 1, &a->i);
	} else if (strcmp(name, "value_floats") == 0 && a->type == AT_FLOATS) {
		y.rank = 1;
		y.dims[0].size = a->n;
		infer_set_output(x, 0, DT_FLOAT, &y);
		infer_set_folded(x, 0, DT_FLOAT, a->n, a->floats);
	} else if (strcmp(name, "value_ints") == 0 && a->type == AT_INTS) {
		y.rank = 1;
		y.dims[0].size = a->n;
		infer_set_output(x, 0, DT_INT64, &y);
		infer_set_folded(x, 0, DT_INT64, a->n, a->ints);
	} else {
		infer_fail(x, KILN_UNSUPPORTED, "Constant attribute \"%s\" is not supported", name);
	}
}

static void infer_size(Infer *x)
{
	int64_t *n = arena_alloc(x->a, sizeof *n);
	*n = shape_nelem(infer_shape(x, 0));
	Shape y = {.rank = 0};
	infer_set_output(x, 0, DT_INT64, &y);
	infer_set_folded(x, 0, DT_INT64, 1, n);
}

/* ConstantOfShape: the value attribute (a one-element tensor, default float
 * 0) repeated over the shape given by input 0; folded when small. */
static void infer_constant_of_shape(Infer *x)
{
	int64_t n;
	const int64_t *dims = infer_require_ints(x, 0, &n);
	if (n > KILN_MAX_RANK)
		infer_fail(x, KILN_LIMIT, "rank %lld exceeds %d", (long long)n, KILN_MAX_RANK);
	Shape y = {.rank = (int)n};
	for (int k = 0; k < n; k++) {
		if (dims[k] < 0)
			infer_fail(x, KILN_SHAPE_ERROR, "dim %d is negative", k);
		y.dims[k].size = dims[k];
	}
	TensorParams p;
	tensor_params(x, &p);
	int dt = DT_FLOAT;
	const void *one = NULL;
	static const float zero;
	if (p.value) {
		dt = p.value->dtype;
		one = p.value->w.bytes;
	}
	infer_set_output(x, 0, dt, &y);
	if (infer_foldable(&y) && dtype_size(dt)) {
		size_t es = dtype_size(dt);
		int64_t count = shape_nelem(&y);
		unsigned char *data = arena_array(x->a, (size_t)count + 1, es);
		for (int64_t i = 0; i < count; i++)
			memcpy(data + (size_t)i * es, one ? one : &zero, es);
		infer_set_folded(x, 0, dt, count, data);
	}
}

/* Range(start, limit, delta): all three known scalars. */
static void infer_range(Infer *x)
{
	int dt = infer_dtype(x, 0);
	double v[3];
	for (int i = 0; i < 3; i++) {
		const Folded *f = infer_folded(x, i);
		if (!f || f->nelem != 1)
			infer_fail_unknown(x, i, "");
		switch (f->dtype) {
		case DT_FLOAT: { float t; memcpy(&t, f->data, 4); v[i] = (double)t; break; }
		case DT_DOUBLE: memcpy(&v[i], f->data, 8); break;
		case DT_INT64: { int64_t t; memcpy(&t, f->data, 8); v[i] = (double)t; break; }
		case DT_INT32: { int32_t t; memcpy(&t, f->data, 4); v[i] = t; break; }
		case DT_INT16: { int16_t t; memcpy(&t, f->data, 2); v[i] = t; break; }
		default: infer_fail(x, KILN_UNSUPPORTED, "Range on %s", dtype_name(f->dtype));
		}
	}
	if (v[2] == 0)
		infer_fail(x, KILN_SHAPE_ERROR, "delta is 0");
	double count = ceil((v[1] - v[0]) / v[2]);
	if (!(count < 1e9))
		infer_fail(x, KILN_LIMIT, "Range of %g elements", count);
	Shape y = {.rank = 1};
	y.dims[0].size = count > 0 ? (int64_t)count : 0;
	infer_set_output(x, 0, dt, &y);
	if (dt == DT_INT64 && infer_foldable(&y)) {
		int64_t *out = arena_array(x->a, (size_t)y.dims[0].size + 1, sizeof *out);
		/* Exactly, from the integers: start + i*delta lies between start and
		 * limit, so the unsigned (wrapping) sum is the value. */
		int64_t start, delta;
		memcpy(&start, infer_folded(x, 0)->data, 8);
		memcpy(&delta, infer_folded(x, 2)->data, 8);
		for (int64_t i = 0; i < y.dims[0].size; i++)
			out[i] = (int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)delta);
		infer_set_folded(x, 0, DT_INT64, y.dims[0].size, out);
	}
}

/* Expand: multidirectional broadcast of input 0 with the known shape input 1. */
static void infer_expand(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	int64_t n;
	const int64_t *want = infer_require_ints(x, 1, &n);
	int rank = (int)(n > in->rank ? n : in->rank);
	if (rank > KILN_MAX_RANK)
		infer_fail(x, KILN_LIMIT, "rank %d exceeds %d", rank, KILN_MAX_RANK);
	Shape y = {.rank = rank};
	for (int k = 0; k < rank; k++) {
		int ia = k - (rank - in->rank), ib = k - (rank - (int)n);
		int64_t a = ia >= 0 ? in->dims[ia].size : 1, b = ib >= 0 ? want[ib] : 1;
		if (a != b && a != 1 && b != 1)
			infer_fail(x, KILN_SHAPE_ERROR, "dim %d: %lld does not broadcast to %lld", k,
			           (long long)a, (long long)b);
		y.dims[k].size = a == 1 ? b : a;
	}
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

/* Is the scalar ratio of Dropout exactly zero (either sign)? */
static bool dropout_ratio_zero(Infer *x, const Folded *f)
{
	switch (f->dtype) {
	case DT_FLOAT: {
		float v;
		memcpy(&v, f->data, 4);
		return v == 0;
	}
	case DT_DOUBLE: {
		double v;
		memcpy(&v, f->data, 8);
		return v == 0;
	}
	case DT_FLOAT16: case DT_BFLOAT16: {
		uint16_t v;
		memcpy(&v, f->data, 2);
		return (v & 0x7fff) == 0;
	}
	}
	infer_fail(x, KILN_INVALID_MODEL, "ratio must be a float type, not %s", dtype_name(f->dtype));
}

/* Dropout in inference: the output is the input; the optional mask is all
 * true. So is training mode with ratio 0; training with a ratio above 0
 * draws random numbers, which kiln does not reproduce, and is refused. */
static void infer_dropout(Infer *x)
{
	if (attr_int(x, "is_test", 1) == 0 && x->n->since < 7)
		infer_fail(x, KILN_UNSUPPORTED, "training-mode Dropout is not supported");
	if (infer_has_input(x, 2)) {
		const Folded *f = infer_folded(x, 2);
		if (!f || f->nelem != 1)
			infer_fail(x, KILN_UNSUPPORTED, "input 2 \"%s\" (training_mode) must be known at "
			           "compile time", infer_input_name(x, 2));
		if (((const uint8_t *)f->data)[0]) {
			const Folded *r = infer_folded(x, 1);
			if (infer_has_input(x, 1) && (!r || r->nelem != 1))
				infer_fail(x, KILN_UNSUPPORTED, "input 1 \"%s\" (ratio) must be known at "
				           "compile time in training mode", infer_input_name(x, 1));
			if (!r || !dropout_ratio_zero(x, r))
				infer_fail(x, KILN_UNSUPPORTED, "training-mode Dropout with a ratio above 0 is "
				           "random; kiln does not reproduce numpy's generator");
		}
	}
	infer_set_output(x, 0, infer_dtype(x, 0), infer_shape(x, 0));
	infer_set_output(x, 1, DT_BOOL, infer_shape(x, 0));
	pass_folded(x);
}

static void infer_same_shape(Infer *x)
{
	infer_set_output(x, 0, infer_dtype(x, 0), infer_shape(x, 0));
}

/* ScatterElements (and the old Scatter): indices and updates of one shape,
 * of data's rank, within data's dims off the axis. ScatterND: indices
 * [..., k] with k <= rank(data), updates indices[:-1] + data[k:]. */
static void infer_scatter(Infer *x)
{
	const Shape *data = infer_shape(x, 0), *idx = infer_shape(x, 1), *upd = infer_shape(x, 2);
	TensorParams p;
	if (x->n->op == OP_ScatterND) {
		tensor_params(x, &p);   /* the reduction */
		if (idx->rank < 1)
			infer_fail(x, KILN_SHAPE_ERROR, "indices must have rank >= 1");
		int64_t k = idx->dims[idx->rank - 1].size;
		if (k < 1 || k > data->rank)
			infer_fail(x, KILN_SHAPE_ERROR, "indices' last dim %" PRId64 " is not in 1..%d (the rank of data)",
			    k, data->rank);
		bool ok = upd->rank == idx->rank - 1 + data->rank - (int)k;
		for (int i = 0; ok && i < upd->rank; i++)
			ok = upd->dims[i].size == (i < idx->rank - 1 ? idx->dims[i].size
			                                               : data->dims[k + i - (idx->rank - 1)].size);
		if (!ok)
			infer_fail(x, KILN_SHAPE_ERROR, "updates must have the shape indices[:-1] + data[k:]");
	} else {
		if (data->rank < 1 || idx->rank != data->rank || upd->rank != data->rank)
			infer_fail(x, KILN_SHAPE_ERROR, "data, indices and updates must have the same rank >= 1");
		tensor_params(x, &p);   /* the axis and reduction */
		int axis = p.axis;
		for (int i = 0; i < data->rank; i++) {
			if (upd->dims[i].size != idx->dims[i].size)
				infer_fail(x, KILN_SHAPE_ERROR, "updates and indices must have the same shape");
			if (i != axis && idx->dims[i].size > data->dims[i].size)
				infer_fail(x, KILN_SHAPE_ERROR, "indices dim %d exceeds data's", i);
		}
	}
	infer_set_output(x, 0, infer_dtype(x, 0), data);
}

static void infer_gather_elements(Infer *x)
{
	const Shape *data = infer_shape(x, 0), *idx = infer_shape(x, 1);
	if (data->rank != idx->rank || data->rank < 1)
		infer_fail(x, KILN_SHAPE_ERROR, "data and indices must have the same rank >= 1");
	TensorParams p;
	tensor_params(x, &p);   /* the axis, checked */
	infer_set_output(x, 0, infer_dtype(x, 0), idx);
}

static void infer_tile(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	int64_t n;
	const int64_t *rep = infer_require_ints(x, 1, &n);
	if (n != in->rank)
		infer_fail(x, KILN_SHAPE_ERROR, "repeats has %lld values for rank %d", (long long)n,
		           in->rank);
	Shape y = *in;
	for (int k = 0; k < in->rank; k++) {
		if (rep[k] < 0)
			infer_fail(x, KILN_SHAPE_ERROR, "repeats[%d] is negative", k);
		y.dims[k].size = infer_mul(x, in->dims[k].size, rep[k]);
	}
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

/* Pad: pads from the attribute (before opset 11) or the known input 1;
 * [begin_0, ..., begin_r-1, end_0, ...]; negative pads crop. */
/* The begin and end pads of every axis (2 * rank values): the attribute
 * before opset 11, input 1 after, and from opset 18 only for the axes listed
 * in input 3 (the others get none). */
/* CenterCropPad as pads: per listed axis (attribute axes, default all) the
 * window of the target size starts floor(|in - target| / 2) into the input
 * (crop, negative pads) or into the output (pad). */
static void center_crop_pads(Infer *x, int rank, int64_t *pads)
{
	const Shape *in = infer_shape(x, 0);
	int64_t n, axes[KILN_MAX_RANK];
	const int64_t *target = infer_require_ints(x, 1, &n);
	int na = attr_ints(x, "axes", axes, KILN_MAX_RANK);
	if (na < 0) {
		na = rank;
		for (int k = 0; k < rank; k++)
			axes[k] = k;
	}
	if (n != na)
		infer_fail(x, KILN_SHAPE_ERROR, "shape has %lld values for %d axes", (long long)n, na);
	memset(pads, 0, 2 * (size_t)rank * sizeof *pads);
	bool seen[KILN_MAX_RANK] = {false};
	for (int k = 0; k < na; k++) {
		int a = (int)infer_axis(x, axes[k], rank, "axis");
		if (seen[a])
			infer_fail(x, KILN_INVALID_MODEL, "axis %d is listed twice", a);
		seen[a] = true;
		int64_t len = in->dims[a].size, want = target[k];
		if (want < 0)
			infer_fail(x, KILN_SHAPE_ERROR, "shape[%d] is negative (%lld)", k, (long long)want);
		int64_t diff = want - len, begin = (diff >= 0 ? diff : -diff) / 2;
		pads[a] = diff >= 0 ? begin : -begin;
		pads[rank + a] = diff - pads[a];
	}
}

void pad_amounts(Infer *x, int rank, int64_t *pads)
{
	int64_t given[2 * KILN_MAX_RANK], n, axes[KILN_MAX_RANK], na = -1;
	if (x->n->op == OP_CenterCropPad) {
		center_crop_pads(x, rank, pads);
		return;
	}
	if (x->n->since < 11) {
		n = attr_ints(x, "pads", given, 2 * KILN_MAX_RANK);
	} else {
		const int64_t *v = infer_require_ints(x, 1, &n);
		if (n > 2 * KILN_MAX_RANK)
			infer_fail(x, KILN_SHAPE_ERROR, "too many pads");
		memcpy(given, v, (size_t)n * sizeof *v);
	}
	if (x->n->since >= 18 && infer_has_input(x, 3)) {
		const int64_t *v = infer_require_ints(x, 3, &na);
		if (na > rank)
			infer_fail(x, KILN_SHAPE_ERROR, "axes has %lld values for rank %d", (long long)na, rank);
		for (int64_t k = 0; k < na; k++)
			axes[k] = infer_axis(x, v[k], rank, "axis");
	}
	if (na < 0) {
		na = rank;
		for (int k = 0; k < rank; k++)
			axes[k] = k;
	}
	if (n != 2 * na)
		infer_fail(x, KILN_SHAPE_ERROR, "pads has %lld values for %lld axes", (long long)n,
		           (long long)na);
	memset(pads, 0, 2 * (size_t)rank * sizeof *pads);
	for (int64_t k = 0; k < na; k++) {
		pads[axes[k]] = given[k];
		pads[rank + axes[k]] = given[na + k];
	}
}

static void infer_pad(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	TensorParams p;
	tensor_params(x, &p);   /* the mode, checked */
	int64_t pads[2 * KILN_MAX_RANK];
	pad_amounts(x, in->rank, pads);
	Shape y = *in;
	for (int k = 0; k < in->rank; k++) {
		y.dims[k].size = infer_add(x, infer_add(x, in->dims[k].size, pads[k]), pads[in->rank + k]);
		if (y.dims[k].size < 0)
			infer_fail(x, KILN_SHAPE_ERROR, "axis %d: pads crop more than its size", k);
	}
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

static void infer_depth_space(Infer *x, bool to_space)
{
	const Shape *in = infer_shape(x, 0);
	TensorParams p;
	tensor_params(x, &p);
	int64_t b = p.blocksize;
	if (in->rank != 4 || b < 1)
		infer_fail(x, KILN_SHAPE_ERROR, "input must be 4-D and blocksize >= 1");
	Shape y = *in;
	int64_t bb = infer_mul(x, b, b);
	if (to_space) {
		if (in->dims[1].size % bb)
			infer_fail(x, KILN_SHAPE_ERROR, "channels are not a multiple of blocksize^2");
		y.dims[1].size /= bb;
		y.dims[2].size = infer_mul(x, y.dims[2].size, b);
		y.dims[3].size = infer_mul(x, y.dims[3].size, b);
	} else {
		if (in->dims[2].size % b || in->dims[3].size % b)
			infer_fail(x, KILN_SHAPE_ERROR, "height and width must be multiples of blocksize");
		y.dims[1].size = infer_mul(x, y.dims[1].size, bb);
		y.dims[2].size /= b;
		y.dims[3].size /= b;
	}
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

static void infer_one_hot(Infer *x)
{
	const Shape *idx = infer_shape(x, 0);
	const Folded *f = infer_folded(x, 1);
	if (!f)
		infer_fail_unknown(x, 1, "");
	if (f->nelem != 1)
		infer_fail(x, KILN_INVALID_MODEL, "input 1 \"%s\" (depth) has %lld values, not one",
		           infer_input_name(x, 1), (long long)f->nelem);
	double depth;
	switch (f->dtype) {
	case DT_FLOAT: { float t; memcpy(&t, f->data, 4); depth = (double)t; break; }
	case DT_DOUBLE: memcpy(&depth, f->data, 8); break;
	case DT_INT64: { int64_t t; memcpy(&t, f->data, 8); depth = (double)t; break; }
	case DT_INT32: { int32_t t; memcpy(&t, f->data, 4); depth = t; break; }
	default: infer_fail(x, KILN_UNSUPPORTED, "depth of type %s", dtype_name(f->dtype));
	}
	if (depth < 1 || idx->rank + 1 > KILN_MAX_RANK)
		infer_fail(x, KILN_SHAPE_ERROR, "depth must be >= 1 and the output rank <= %d",
		           KILN_MAX_RANK);
	TensorParams p;
	tensor_params(x, &p);
	int axis = p.axis;
	Shape y = {.rank = idx->rank + 1};
	for (int k = 0, j = 0; k < y.rank; k++)
		y.dims[k].size = k == axis ? (int64_t)depth : idx->dims[j++].size;
	infer_set_output(x, 0, infer_dtype(x, 2), &y);
}

static void infer_gather_nd(Infer *x)
{
	const Shape *data = infer_shape(x, 0), *idx = infer_shape(x, 1);
	TensorParams p;
	tensor_params(x, &p);
	int64_t b = p.batch_dims;
	if (idx->rank < 1)
		infer_fail(x, KILN_SHAPE_ERROR, "indices must have rank >= 1");
	int64_t k = idx->dims[idx->rank - 1].size;
	if (b < 0 || b + k > data->rank || b >= idx->rank)
		infer_fail(x, KILN_SHAPE_ERROR, "indices do not fit the data");
	Shape y = {.rank = 0};
	for (int i = 0; i < idx->rank - 1; i++)
		y.dims[y.rank++] = idx->dims[i];
	for (int64_t i = b + k; i < data->rank; i++) {
		if (y.rank == KILN_MAX_RANK)
			infer_fail(x, KILN_LIMIT, "output rank exceeds %d", KILN_MAX_RANK);
		y.dims[y.rank++] = data->dims[i];
	}
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

static void infer_eye_like(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	if (in->rank != 2)
		infer_fail(x, KILN_SHAPE_ERROR, "input must be 2-D");
	int dt = (int)attr_int(x, "dtype", infer_dtype(x, 0));
	if (!dtype_valid(dt))
		infer_fail(x, KILN_INVALID_MODEL, "dtype %d is not an element type", dt);
	infer_set_output(x, 0, dt, in);
}

/* ---- the attributes, resolved ------------------------------------------- */

void tensor_params(Infer *x, TensorParams *p)
{
	const Node *n = x->n;
	memset(p, 0, sizeof *p);
	switch (n->op) {
	case OP_Concat: case OP_Split: case OP_Gather: case OP_GatherElements:
	case OP_ScatterElements: case OP_Scatter:
		p->axis = infer_axis(x, attr_int(x, "axis", 0), infer_shape(x, 0)->rank, "axis");
		break;
	case OP_OneHot:   /* an axis of the output, one more than the indices' */
		p->axis = infer_axis(x, attr_int(x, "axis", -1), infer_shape(x, 0)->rank + 1, "axis");
		return;
	case OP_Transpose: {
		int rank = infer_shape(x, 0)->rank;
		int np = attr_ints(x, "perm", p->perm, KILN_MAX_RANK);
		if (np < 0)
			for (int k = 0; k < rank; k++)
				p->perm[k] = rank - 1 - k;
		else if (np != rank)
			infer_fail(x, KILN_SHAPE_ERROR, "perm has %d values for rank %d", np, rank);
		bool seen[KILN_MAX_RANK] = {0};
		for (int k = 0; k < rank; k++) {
			if (p->perm[k] < 0 || p->perm[k] >= rank || seen[p->perm[k]])
				infer_fail(x, KILN_INVALID_MODEL, "perm is not a permutation of 0..%d", rank - 1);
			seen[p->perm[k]] = true;
		}
		return;
	}
	case OP_Slice:   /* before opset 10 the attributes, then inputs */
		if (n->since < 10) {
			p->nstarts = attr_ints(x, "starts", p->starts, KILN_MAX_RANK);
			p->nends = attr_ints(x, "ends", p->ends, KILN_MAX_RANK);
			p->naxes = attr_ints(x, "axes", p->axes, KILN_MAX_RANK);
		}
		return;
	case OP_ConstantOfShape: {
		const Attr *v = node_attr(n, "value");
		if (v && (v->type != AT_TENSOR || v->tensors[0].w.nelem != 1))
			infer_fail(x, KILN_INVALID_MODEL, "value must be a one-element tensor");
		p->value = v ? &v->tensors[0] : NULL;
		return;
	}
	case OP_Trilu:
		p->upper = attr_int(x, "upper", 1) != 0;
		return;
	case OP_DepthToSpace: case OP_SpaceToDepth: {
		p->blocksize = attr_int(x, "blocksize", 0);
		attr_string(x, "mode", "DCR");   /* its type */
		bool to_space = n->op == OP_DepthToSpace;
		if (to_space && node_attr(n, "mode") && !node_attr_is(n, "mode", "DCR") &&
		    !node_attr_is(n, "mode", "CRD"))
			infer_fail(x, KILN_INVALID_MODEL, "mode must be \"DCR\" or \"CRD\"");
		p->crd = to_space && node_attr_is(n, "mode", "CRD");
		return;
	}
	case OP_GatherND:
		p->batch_dims = attr_int(x, "batch_dims", 0);
		return;
	case OP_EyeLike:
		p->k = attr_int(x, "k", 0);
		return;
	case OP_Pad: case OP_CenterCropPad: {
		p->pad_mode = attr_string(x, "mode", "constant");
		if (strcmp(p->pad_mode, "constant") && strcmp(p->pad_mode, "reflect") &&
		    strcmp(p->pad_mode, "edge") && strcmp(p->pad_mode, "wrap"))
			infer_fail(x, KILN_UNSUPPORTED, "Pad mode \"%s\" is not supported", p->pad_mode);
		if (n->since < 11)
			p->pad_value = attr_float(x, "value", 0.0f);
		return;
	}
	}
	if (n->op == OP_ScatterElements || n->op == OP_ScatterND || n->op == OP_Scatter) {
		static const char *const names[] = {"none", "add", "mul", "max", "min"};
		const Attr *r = node_attr(n, "reduction");
		attr_string(x, "reduction", "none");   /* its type */
		p->reduction = -1;
		for (int i = 0; i < 5; i++)
			if (!r || node_attr_is(n, "reduction", names[i])) {
				p->reduction = i;
				break;
			}
		if (p->reduction < 0)
			infer_fail(x, KILN_UNSUPPORTED, "reduction \"%.*s\" is not supported", (int)r->s.len,
			           r->s.data);
	}
}

void ops_tensor_infer(Infer *x)
{
	switch (x->n->op) {
	case OP_Reshape: infer_reshape(x); return;
	case OP_Flatten: infer_flatten(x); return;
	case OP_Transpose: infer_transpose(x); return;
	case OP_Concat: infer_concat(x); return;
	case OP_Split: infer_split(x); return;
	case OP_Slice: infer_slice(x); return;
	case OP_Gather: infer_gather(x); return;
	case OP_Squeeze: infer_squeeze(x); return;
	case OP_Unsqueeze: infer_unsqueeze(x); return;
	case OP_Shape: infer_shape_op(x); return;
	case OP_Constant: infer_constant(x); return;
	case OP_Size: infer_size(x); return;
	case OP_ConstantOfShape: infer_constant_of_shape(x); return;
	case OP_Range: infer_range(x); return;
	case OP_Expand: infer_expand(x); return;
	case OP_Dropout: infer_dropout(x); return;
	case OP_GatherElements: infer_gather_elements(x); return;
	case OP_Tile: infer_tile(x); return;
	case OP_Pad: case OP_CenterCropPad: infer_pad(x); return;
	case OP_Trilu: {
		TensorParams p;
		tensor_params(x, &p);
		infer_same_shape(x);
		return;
	}
	case OP_ScatterElements: case OP_ScatterND: case OP_Scatter: infer_scatter(x); return;
	case OP_DepthToSpace: infer_depth_space(x, true); return;
	case OP_EyeLike: {
		TensorParams p;
		tensor_params(x, &p);
		infer_eye_like(x);
		return;
	}
	case OP_SpaceToDepth: infer_depth_space(x, false); return;
	case OP_OneHot: infer_one_hot(x); return;
	case OP_GatherND: infer_gather_nd(x); return;
	default: /* Identity */
		infer_set_output(x, 0, infer_dtype(x, 0), infer_shape(x, 0));
		pass_folded(x);
		return;
	}
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_tensor_defs[] = {
	{.op = OP_Reshape, .infer = ops_tensor_infer, .emit = emit_copy, .peval = PE_SAME_BYTES,
	 .batch = BK_LAYOUT, .shape_inputs = 1u << 1, .view = true, .narrow_types = true,
	 .index = IF_VIEW,
	 .size_data = true,
	 .note = "the shape input must be known at compile time; float8 and int4/uint4 values too "
	         "(a view)"},
	{.op = OP_Flatten, .infer = ops_tensor_infer, .emit = emit_copy, .peval = PE_SAME_BYTES,
	 .batch = BK_LAYOUT, .index = IF_VIEW, .view = true, .narrow_types = true,
	 .note = "also float8 and int4/uint4 values (a view)"},
	{.op = OP_Transpose, .infer = ops_tensor_infer, .emit = emit_transpose,
	 .peval = PE_TRANSPOSE, .batch = BK_TRANSPOSE, .index = IF_BOUND, .narrow_types = true,
	 .note = "also float8 and int4/uint4 values (4-bit weights transposed at compile time "
	         "stay packed)"},
	{.op = OP_Concat, .infer = ops_tensor_infer, .emit = emit_concat, .peval = PE_CONCAT,
	 .batch = BK_CONCAT,
	 .position = PX_TUPLE_CONCAT},
	{.op = OP_Split, .infer = ops_tensor_infer, .emit = emit_split, .batch = BK_SPLIT,
	 .shape_inputs = 1u << 1,
	 .note = "split sizes (or opset 18's num_outputs) known at compile time"},
	{.op = OP_Slice, .infer = ops_tensor_infer, .emit = emit_slice, .peval = PE_SLICE,
	 .batch = BK_SLICE, .index = IF_BOUND, .shape_inputs = ~1u,
	 .note = "starts, ends, axes and steps must be known at compile time"},
	{.op = OP_Gather, .infer = ops_tensor_infer, .emit = emit_gather, .emit_returns = true,
	 .peval = PE_GATHER, .batch = BK_GATHER, .index = IF_GATHER, .tile = TK_TABLE,
	 .position = PX_GATHER},
	{.op = OP_Squeeze, .infer = ops_tensor_infer, .emit = emit_copy, .peval = PE_SAME_BYTES,
	 .batch = BK_LAYOUT, .shape_inputs = 1u << 1, .view = true, .narrow_types = true,
	 .index = IF_VIEW,
	 .note = "also float8 and int4/uint4 values (a view)"},
	{.op = OP_Unsqueeze, .infer = ops_tensor_infer, .emit = emit_copy, .peval = PE_SAME_BYTES,
	 .batch = BK_LAYOUT, .shape_inputs = 1u << 1, .view = true, .narrow_types = true,
	 .index = IF_VIEW,
	 .note = "also float8 and int4/uint4 values (a view)"},
	{.op = OP_Shape, .infer = ops_tensor_infer, .emit = emit_folded_only, .narrow_types = true,
	 .shape_only = true},
	{.op = OP_Constant, .infer = ops_tensor_infer, .emit = emit_folded_only, .narrow_types = true},
	{.op = OP_Identity, .infer = ops_tensor_infer, .emit = emit_unary, .peval = PE_BROADCAST,
	 .batch = BK_ELEMENTWISE, .index = IF_VIEW, .view = true, .narrow_types = true,
	 .pad = PD_PASS_INDEX,
	 .note = "also float8 and int4/uint4 values (a view of the same bytes)"},
	{.op = OP_Size, .infer = ops_tensor_infer, .emit = emit_folded_only, .narrow_types = true,
	 .shape_only = true},
	{.op = OP_ConstantOfShape, .infer = ops_tensor_infer, .emit = emit_constant_of_shape,
	 .peval = PE_CONSTANT_OF_SHAPE, .shape_inputs = 1u << 0,
	 .batch_flags = BF_CONSTANT_ROWS,
	 .pad = PD_FILL, .size_data = true,
	 .note = "the shape input must be known at compile time"},
	{.op = OP_Range, .infer = ops_tensor_infer, .emit = emit_range, .peval = PE_RANGE,
	 .pad = PD_SIZES, .size_data = true,
	 .note = "start, limit and delta must be known at compile time"},
	{.op = OP_Expand, .infer = ops_tensor_infer, .emit = emit_expand, .peval = PE_BROADCAST,
	 .batch = BK_REPEAT, .index = IF_BROADCAST, .shape_inputs = 1u << 1,
	 .batch_flags = BF_CONSTANT_ROWS,
	 .pad = PD_BROADCAST, .size_data = true,
	 .note = "the shape input must be known at compile time"},
	{.op = OP_Dropout, .infer = ops_tensor_infer, .emit = emit_dropout, .batch = BK_DROPOUT,
	 .view = true,
	 .note = "a copy in inference and in training mode with ratio 0 (training_mode and ratio "
	         "must be known at compile time); a ratio above 0 (random) is not supported"},
	{.op = OP_GatherElements, .infer = ops_tensor_infer, .emit = emit_gather_elements,
	 .batch = BK_ELEMENTS,
	 .position = PX_GATHER_ELEMENTS},
	{.op = OP_Tile, .infer = ops_tensor_infer, .emit = emit_tile, .peval = PE_TILE,
	 .batch = BK_REPEAT, .index = IF_BOUND, .shape_inputs = 1u << 1,
	 .size_data = true,
	 .note = "repeats must be known at compile time"},
	{.op = OP_Pad, .infer = ops_tensor_infer, .emit = emit_pad, .batch = BK_REPEAT,
	 .shape_inputs = 1u << 1 | 1u << 3,
	 .batch_flags = BF_PAD_VALUE,
	 .note = "pads (and opset 18's axes) must be known at compile time; constant, reflect, "
	         "edge and wrap modes"},
	{.op = OP_Trilu, .infer = ops_tensor_infer, .emit = emit_trilu, .peval = PE_TRILU,
	 .batch = BK_TRILU},
	{.op = OP_CenterCropPad, .infer = ops_tensor_infer, .emit = emit_pad, .batch = BK_REPEAT,
	 .shape_inputs = 1u << 1,
	 .note = "the shape input must be known at compile time"},
	{.op = OP_DepthToSpace, .infer = ops_tensor_infer, .emit = emit_depth_space,
	 .batch = BK_N_FIRST},
	{.op = OP_SpaceToDepth, .infer = ops_tensor_infer, .emit = emit_depth_space,
	 .batch = BK_N_FIRST},
	{.op = OP_OneHot, .infer = ops_tensor_infer, .emit = emit_one_hot, .batch = BK_ONE_HOT,
	 .shape_inputs = 1u << 1,
	 .note = "depth must be known at compile time"},
	{.op = OP_GatherND, .infer = ops_tensor_infer, .emit = emit_gather_nd,
	 .batch = BK_GATHER_ND,
	 .position = PX_GATHER_ND},
	{.op = OP_ScatterElements, .infer = ops_tensor_infer, .emit = emit_scatter,
	 .batch = BK_ELEMENTS, .overwrites = true,
	 .position = PX_SCATTER_ELEMENTS,
	 .note = "reduction add, mul, max and min (opset 18), not on float16/bfloat16 yet"},
	{.op = OP_ScatterND, .infer = ops_tensor_infer, .emit = emit_scatter,
	 .overwrites = true,
	 .position = PX_SCATTER_ND,
	 .note = "reduction add, mul, max and min (opset 18), not on float16/bfloat16 yet"},
	{.op = OP_Scatter, .infer = ops_tensor_infer, .emit = emit_scatter, .batch = BK_ELEMENTS,
	 .overwrites = true},
	{.op = OP_EyeLike, .infer = ops_tensor_infer, .emit = emit_eye_like, .batch = BK_POSITION},
	{.op = NONE},
};
