/*
 * passes/fold.c - constant folding that never increases stored weight bytes.
 *
 * A node whose inputs are all constants is computed at compile time only if
 * the bytes it adds are no more than the bytes that die with it: inputs whose
 * only reader is this node, not shared (through a view) with a live weight.
 * Views (Identity, Reshape, Flatten, Squeeze, Unsqueeze) and Constant nodes
 * cost nothing: the result points at the same bytes. A weight that is also
 * read elsewhere keeps one copy and the transformed use stays a node (or is
 * served by the kernel, see fuse.c). With --weights-dtype fp32, a Cast of a
 * float16/bfloat16 weight to float32 is folded even though it doubles the
 * bytes: the user asked for float32 storage, and the float16 copy dies.
 *
 * Evaluated: the views, Constant, Transpose, Cast between float types,
 * Add/Sub/Mul/Div and Neg on float32 (in float32, as the generated code
 * computes them), and Slice. Slices are folded as a group: a weight read
 * only by Slices whose outputs together are no larger than it (PyTorch's
 * packed attention projection, in_proj_weight cut into Q and K/V at run
 * time) becomes their outputs, each a weight the products then pack at
 * compile time; the weight itself dies. Needs shapes (skipped without them).
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kiln/kernels.h"
#include "rewrite.h"

/* A folded node's inputs that died: their pages in the model's mapping
 * (read-only, so the kernel may drop and re-read them) leave memory now, so
 * folding holds the new constant, not both. */
static void release_dead_inputs(PassCtx *c, const Node *n)
{
	long page = sysconf(_SC_PAGESIZE);
	for (int k = 0; k < n->nin; k++) {
		int id = n->in[k];
		if (id == NONE || c->g->values[id].nuse != 0 || c->g->values[id].kind != VAL_WEIGHT)
			continue;
		const Weight *w = c->g->values[id].weight;
		if (!w->is_mapped || page <= 0)
			continue;
		bool shared = false;  /* a view (a folded Reshape) still reads these bytes */
		for (int v = 0; v < c->g->nvalues && !shared; v++)
			shared = c->g->values[v].kind == VAL_WEIGHT && c->g->values[v].nuse > 0 &&
			         c->g->values[v].weight->bytes == w->bytes;
		if (shared)
			continue;
		uintptr_t lo = ((uintptr_t)w->bytes + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
		uintptr_t hi = ((uintptr_t)w->bytes + w->nbytes) & ~(uintptr_t)(page - 1);
		if (hi > lo)
			madvise((void *)lo, hi - lo, MADV_DONTNEED);  /* advice: failure is harmless */
	}
}

/* Does another live weight (a view: a folded Reshape) read id's bytes? */
static bool shares_bytes(PassCtx *c, int id)
{
	Graph *g = c->g;
	const void *bytes = g->values[id].weight->bytes;
	for (int i = 0; i < g->nvalues; i++)
		if (i != id && g->values[i].kind == VAL_WEIGHT && g->values[i].nuse > 0 &&
		    g->values[i].weight->bytes == bytes && g->values[i].weight->nbytes)
			return true;
	return false;
}

/* Does input id die with node (read only by it, bytes shared with no live
 * weight)? */
static bool dies_with(PassCtx *c, int id, int node)
{
	Graph *g = c->g;
	if (rw_pinned(c, id))
		return false;
	for (int i = 0; i < g->nnodes; i++) {
		if (c->dead[i] || i == node)
			continue;
		for (int k = 0; k < g->nodes[i].nin; k++)
			if (g->nodes[i].in[k] == id)
				return false;
	}
	return !shares_bytes(c, id);
}

static uint64_t dying_bytes(PassCtx *c, const Node *n)
{
	uint64_t total = 0;
	for (int k = 0; k < n->nin; k++) {
		int id = n->in[k];
		bool seen = false;
		for (int j = 0; j < k; j++)
			seen |= n->in[j] == id;
		if (id != NONE && !seen && dies_with(c, id, n->id))
			total += c->g->values[id].weight->nbytes;
	}
	return total;
}

static void *alloc_bytes(PassCtx *c, uint64_t nbytes)
{
	return arena_alloc(c->a, nbytes ? nbytes : 1);
}

/* Row-major element strides of shape s. */
static void strides_of(const Shape *s, int64_t *st)
{
	int64_t acc = 1;
	for (int k = s->rank - 1; k >= 0; k--) {
		st[k] = acc;
		acc *= s->dims[k].size;
	}
}

/* The next index of an output walked in row-major order. */
static void next_index(int64_t *idx, int r, const int64_t *size)
{
	for (int k = r - 1; k >= 0; k--) {
		if (++idx[k] < size[k])
			break;
		idx[k] = 0;
	}
}

/* esz 0: packed 4-bit elements (int4/uint4), written in output order. */
static void transpose(const unsigned char *x, unsigned char *y, const Shape *in,
                      const int64_t *perm, size_t esz)
{
	int r = in->rank;
	int64_t st[KILN_MAX_RANK], size[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0};
	int64_t n = shape_nelem(in);
	strides_of(in, st);
	for (int k = 0; k < r; k++)
		size[k] = in->dims[perm[k]].size;
	/* Walk the output in order; its axis k is the input's axis perm[k]. */
	for (int64_t o = 0; o < n; o++) {
		int64_t src = 0;
		for (int k = 0; k < r; k++)
			src += idx[k] * st[perm[k]];
		if (esz) {
			memcpy(y + (size_t)o * esz, x + (size_t)src * esz, esz);
		} else {
			unsigned v = (x[src >> 1] >> (4 * (src & 1))) & 15;
			y[o >> 1] = (unsigned char)(o & 1 ? y[o >> 1] | v << 4 : v);
		}
		next_index(idx, r, size);
	}
}

static bool fold_binary(const Node *n, const float *a, const Shape *sa, const float *b,
                        const Shape *sb, float *y, const Shape *sy)
{
	int64_t as[KILN_MAX_RANK], bs[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0};
	int r = sy->rank;
	/* Broadcast strides: 0 along axes of size 1 (or missing). */
	for (int pass = 0; pass < 2; pass++) {
		const Shape *s = pass ? sb : sa;
		int64_t *st = pass ? bs : as, acc = 1;
		for (int k = r - 1, ki = s->rank - 1; k >= 0; k--, ki--) {
			if (ki >= 0 && s->dims[ki].size != 1) {
				st[k] = acc;
				acc *= s->dims[ki].size;
			} else {
				st[k] = 0;
			}
		}
	}
	int64_t total = shape_nelem(sy);
	for (int64_t o = 0; o < total; o++) {
		int64_t ia = 0, ib = 0;
		for (int k = 0; k < r; k++) {
			ia += idx[k] * as[k];
			ib += idx[k] * bs[k];
		}
		float x = a[ia], z = b[ib];
		switch (n->op) {
		case OP_Add: y[o] = x + z; break;
		case OP_Sub: y[o] = x - z; break;
		case OP_Mul: y[o] = x * z; break;
		case OP_Div: y[o] = x / z; break;
		default: return false;
		}
		for (int k = r - 1; k >= 0; k--) {
			if (++idx[k] < sy->dims[k].size)
				break;
			idx[k] = 0;
		}
	}
	return true;
}

static float load_float(int dt, const void *p, int64_t i)
{
	uint16_t h;
	float f;
	switch (dt) {
	case DT_FLOAT16: memcpy(&h, (const char *)p + 2 * i, 2); return kiln_f16_to_f32(h);
	case DT_BFLOAT16: memcpy(&h, (const char *)p + 2 * i, 2); return kiln_bf16_to_f32(h);
	default: memcpy(&f, (const char *)p + 4 * i, 4); return f;
	}
}

/* A Slice's parameters, resolved against the input's shape: begin and step
 * per axis (the output's shape is inference's). False if they are not
 * known at compile time, the same in every signature. */
static bool slice_params(PassCtx *c, const Node *n, const Shape *in, int64_t *begin,
                         int64_t *step)
{
	int64_t st[KILN_MAX_RANK], en[KILN_MAX_RANK], ax[KILN_MAX_RANK], sp[KILN_MAX_RANK];
	int64_t ns = 0, ne = 0, na = -1, nsp = -1;
	if (n->since < 10) {
		const Attr *a = rw_attr(n, "starts"), *e = rw_attr(n, "ends"), *x = rw_attr(n, "axes");
		if (!a || !e || a->type != AT_INTS || e->type != AT_INTS || a->n > KILN_MAX_RANK ||
		    e->n != a->n || (x && (x->type != AT_INTS || x->n != a->n)))
			return false;
		ns = ne = a->n;
		memcpy(st, a->ints, (size_t)ns * 8);
		memcpy(en, e->ints, (size_t)ns * 8);
		if (x) {
			na = x->n;
			memcpy(ax, x->ints, (size_t)na * 8);
		}
	} else {
		if (n->nin < 3 || !rw_const_ints(c, n->in[1], st, KILN_MAX_RANK, &ns) ||
		    !rw_const_ints(c, n->in[2], en, KILN_MAX_RANK, &ne) || ne != ns)
			return false;
		if (n->nin > 3 && n->in[3] != NONE &&
		    (!rw_const_ints(c, n->in[3], ax, KILN_MAX_RANK, &na) || na != ns))
			return false;
		if (n->nin > 4 && n->in[4] != NONE &&
		    (!rw_const_ints(c, n->in[4], sp, KILN_MAX_RANK, &nsp) || nsp != ns))
			return false;
	}
	for (int k = 0; k < in->rank; k++) {
		begin[k] = 0;
		step[k] = 1;
	}
	bool seen[KILN_MAX_RANK] = {false};
	for (int64_t i = 0; i < ns; i++) {
		int64_t a = na >= 0 ? ax[i] : i;
		if (a < 0)
			a += in->rank;
		if (a < 0 || a >= in->rank || seen[a])
			return false;
		seen[a] = true;
		int64_t dim = in->dims[a].size, s = st[i], stp = nsp >= 0 ? sp[i] : 1;
		if (stp == 0 || stp == INT64_MIN)
			return false;
		if (s < 0)
			s = s < -dim ? 0 : s + dim;
		s = stp > 0 ? (s > dim ? dim : s) : (s > dim - 1 ? dim - 1 : s);
		begin[a] = s;
		step[a] = stp;
	}
	return true;
}

/* Can Slice node n be folded alone: constant parameters, element bytes, an
 * output with a static shape that is not pinned? Sets its output bytes. */
static bool slice_foldable(PassCtx *c, const Node *n, uint64_t *ybytes)
{
	Graph *g = c->g;
	if (n->op != OP_Slice || n->domain_id != DOMAIN_ONNX || n->nout != 1 || n->out[0] == NONE ||
	    n->nin < 1 || !rw_is_const(c, n->in[0]))
		return false;
	int y = n->out[0];
	const Shape *sy = rw_static_shape(c, y);
	const Value *x = &g->values[n->in[0]];
	int64_t begin[KILN_MAX_RANK], step[KILN_MAX_RANK];
	if (g->values[y].is_output || rw_pinned(c, y) || !sy || rw_dtype(c, y) != x->dtype ||
	    dtype_size(x->dtype) == 0 || DT_IS_4BIT(x->dtype) || shape_nelem(sy) < 0 ||
	    sy->rank != x->shape.rank || !slice_params(c, n, &x->shape, begin, step))
		return false;
	*ybytes = dtype_bytes(x->dtype, shape_nelem(sy));
	return true;
}

/* Does Slice node i fold: alone within the bytes that die with it, or as
 * one of a group, every live reader of its input a foldable Slice whose
 * outputs together are no larger than the input, which then dies? */
static bool slice_may_fold(PassCtx *c, int i, uint64_t ybytes)
{
	Graph *g = c->g;
	const Node *n = &g->nodes[i];
	int x = n->in[0];
	if (dies_with(c, x, i) && g->values[x].weight->nbytes >= ybytes)
		return true;   /* alone (its parameters are no stored bytes to count) */
	if (rw_pinned(c, x) || g->values[x].is_output)
		return false;
	uint64_t total = 0;
	for (int j = 0; j < g->nnodes; j++) {
		if (c->dead[j])
			continue;
		const Node *r = &g->nodes[j];
		bool reads = false;
		for (int k = 0; k < r->nin; k++)
			if (r->in[k] == x && (k > 0 || r->op != OP_Slice))
				return false;   /* read otherwise than as a Slice's data */
			else
				reads |= r->in[k] == x;
		uint64_t b;
		if (reads && (!slice_foldable(c, r, &b) || (total += b) > g->values[x].weight->nbytes))
			return false;
	}
	return !shares_bytes(c, x);
}

static void slice_copy(const unsigned char *x, unsigned char *y, const Shape *in,
                       const Shape *out, const int64_t *begin, const int64_t *step, size_t esz)
{
	int r = in->rank;
	int64_t st[KILN_MAX_RANK], size[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0};
	int64_t n = shape_nelem(out);
	strides_of(in, st);
	for (int k = 0; k < r; k++)
		size[k] = out->dims[k].size;
	for (int64_t o = 0; o < n; o++) {
		int64_t src = 0;
		for (int k = 0; k < r; k++)
			src += (begin[k] + idx[k] * step[k]) * st[k];
		memcpy(y + (size_t)o * esz, x + (size_t)src * esz, esz);
		next_index(idx, r, size);
	}
}

static bool fold_slice(PassCtx *c, int i)
{
	const Node *n = &c->g->nodes[i];
	uint64_t nb;
	int64_t begin[KILN_MAX_RANK], step[KILN_MAX_RANK];
	if (!slice_foldable(c, n, &nb) || !slice_may_fold(c, i, nb))
		return false;
	const Value *x = &c->g->values[n->in[0]];
	int y = n->out[0];
	const Shape *sy = rw_static_shape(c, y);
	slice_params(c, n, &x->shape, begin, step);
	unsigned char *out = alloc_bytes(c, nb);
	slice_copy(x->weight->bytes, out, &x->shape, sy, begin, step, dtype_size(x->dtype));
	rw_kill(c, i);
	rw_make_const(c, y, x->dtype, sy, out);
	return true;
}

/* Fold node i if allowed; true if it was. */
static bool try_fold(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *n = &g->nodes[i];
	if (n->domain_id != DOMAIN_ONNX || n->nout != 1 || n->out[0] == NONE)
		return false;
	int y = n->out[0];
	if (g->values[y].is_output || rw_pinned(c, y))
		return false;
	if (n->op == OP_Constant) {
		const Attr *v = rw_attr(n, "value");
		if (!v || v->type != AT_TENSOR || n->nattrs != 1 || v->tensors[0].dtype == DT_STRING ||
		    !dtype_valid(v->tensors[0].dtype))
			return false;
		const Tensor *t = &v->tensors[0];
		rw_kill(c, i);
		rw_make_const(c, y, t->dtype, &t->shape, t->w.bytes);
		return true;
	}
	if (n->op == OP_Slice)   /* its parameters may be folded values (slice_params) */
		return fold_slice(c, i);
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] != NONE && !rw_is_const(c, n->in[k]))
			return false;
	if (n->nin < 1 || n->in[0] == NONE)
		return false;
	const Shape *sy = rw_static_shape(c, y);
	int dty = rw_dtype(c, y);
	if (!sy || dty == DT_UNDEFINED || shape_nelem(sy) < 0)
		return false;
	const Value *x = &g->values[n->in[0]];
	uint64_t ybytes = dtype_bytes(dty, shape_nelem(sy));
	switch (n->op) {
	case OP_Identity: case OP_Reshape: case OP_Flatten: case OP_Squeeze: case OP_Unsqueeze: {
		if (dty != x->dtype || ybytes != x->weight->nbytes)
			return false;
		const void *bytes = x->weight->bytes;
		rw_kill(c, i);
		rw_make_const(c, y, dty, sy, bytes);
		return true;
	}
	case OP_Transpose: {
		if (dty != x->dtype || dying_bytes(c, n) < ybytes || dtype_size(dty) == 0)
			return false;
		int64_t perm[KILN_MAX_RANK];
		const Attr *p = rw_attr(n, "perm");
		int r = x->shape.rank;
		for (int k = 0; k < r; k++)
			perm[k] = p ? (k < p->n ? p->ints[k] : k) : r - 1 - k;
		unsigned char *out = alloc_bytes(c, ybytes);
		transpose(x->weight->bytes, out, &x->shape, perm, DT_IS_4BIT(dty) ? 0 : dtype_size(dty));
		rw_kill(c, i);
		rw_make_const(c, y, dty, sy, out);
		return true;
	}
	case OP_Cast: {
		int from = x->dtype;
		bool floats = (from == DT_FLOAT || from == DT_FLOAT16 || from == DT_BFLOAT16) &&
		              (dty == DT_FLOAT || dty == DT_FLOAT16);
		bool asked = c->o->weights_dtype == WEIGHTS_FP32 && dty == DT_FLOAT &&
		             (from == DT_FLOAT16 || from == DT_BFLOAT16) && dies_with(c, n->in[0], i);
		if (!floats || (!asked && dying_bytes(c, n) < ybytes))
			return false;
		int64_t ne = shape_nelem(sy);
		void *out = alloc_bytes(c, ybytes);
		for (int64_t k = 0; k < ne; k++) {
			float f = load_float(from, x->weight->bytes, k);
			if (dty == DT_FLOAT) {
				memcpy((char *)out + 4 * k, &f, 4);
			} else {
				uint16_t h = kiln_f32_to_f16(f);
				memcpy((char *)out + 2 * k, &h, 2);
			}
		}
		rw_kill(c, i);
		rw_make_const(c, y, dty, sy, out);
		return true;
	}
	case OP_Neg:
		if (dty != DT_FLOAT || x->dtype != DT_FLOAT || dying_bytes(c, n) < ybytes) /* fallthrough */
			return false;
		{
			float *out = alloc_bytes(c, ybytes);
			for (int64_t k = 0; k < shape_nelem(sy); k++)
				out[k] = -load_float(DT_FLOAT, x->weight->bytes, k);
			rw_kill(c, i);
			rw_make_const(c, y, dty, sy, out);
			return true;
		}
	case OP_Add: case OP_Sub: case OP_Mul: case OP_Div: {
		if (n->nin != 2 || n->in[1] == NONE)
			return false;
		const Value *b = &g->values[n->in[1]];
		if (dty != DT_FLOAT || x->dtype != DT_FLOAT || b->dtype != DT_FLOAT ||
		    dying_bytes(c, n) < ybytes)
			return false;
		/* Weights may be unaligned in the mapping: work on aligned copies only
		 * when needed. */
		const float *a = x->weight->bytes, *bb = b->weight->bytes;
		if ((uintptr_t)a % 4) {
			float *t = alloc_bytes(c, x->weight->nbytes);
			memcpy(t, a, x->weight->nbytes);
			a = t;
		}
		if ((uintptr_t)bb % 4) {
			float *t = alloc_bytes(c, b->weight->nbytes);
			memcpy(t, bb, b->weight->nbytes);
			bb = t;
		}
		float *out = alloc_bytes(c, ybytes);
		if (!fold_binary(n, a, &x->shape, bb, &b->shape, out, sy))
			return false;
		rw_kill(c, i);
		rw_make_const(c, y, dty, sy, out);
		return true;
	}
	default:
		return false;
	}
}

int pass_fold(PassCtx *c)
{
	Graph *g = c->g;
	int changes = 0;
	for (int i = 0; i < g->nnodes; i++) {
		if (c->dead[i] || !try_fold(c, i))
			continue;
		release_dead_inputs(c, &g->nodes[i]);
		c->stat->removed++;
		changes++;
	}
	return changes;
}
