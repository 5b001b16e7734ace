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
 * computes them). Needs shapes (skipped without them).
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
	const void *bytes = g->values[id].weight->bytes;
	for (int i = 0; i < g->nvalues; i++)
		if (i != id && g->values[i].kind == VAL_WEIGHT && g->values[i].nuse > 0 &&
		    g->values[i].weight->bytes == bytes && g->values[i].weight->nbytes)
			return false;
	return true;
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

/* esz 0: packed 4-bit elements (int4/uint4), written in output order. */
static void transpose(const unsigned char *x, unsigned char *y, const Shape *in,
                      const int64_t *perm, size_t esz)
{
	int r = in->rank;
	int64_t st[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0}, n = shape_nelem(in);
	int64_t s = 1;
	for (int k = r - 1; k >= 0; k--) {
		st[k] = s;
		s *= in->dims[k].size;
	}
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
		for (int k = r - 1; k >= 0; k--) {
			if (++idx[k] < in->dims[perm[k]].size)
				break;
			idx[k] = 0;
		}
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
